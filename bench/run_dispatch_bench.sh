#!/usr/bin/env bash
# Runs opd's and PyTorch's dispatcher benchmarks pinned to the same CPU, several rounds,
# and prints the CPU model, the load average before and after, the median ns/call of each
# and the ratio opd/PyTorch (of the medians, and the median of each round's own ratio).
#   bench/run_dispatch_bench.sh [BUILD_DIR] [ROUNDS]
set -euo pipefail
build=${1:-build-release}
rounds=${2:-5}
cpu=${OPD_BENCH_CPU:-1}
out=$(mktemp)
trap 'rm -f "$out"' EXIT
echo "cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //')"
echo "load before: $(cat /proc/loadavg)"
for _ in $(seq "$rounds"); do
  taskset -c "$cpu" "$build/bench/opd-bench-dispatch" >>"$out"
  if [ -x "$build/bench/opd-bench-dispatch-torch" ]; then
    taskset -c "$cpu" "$build/bench/opd-bench-dispatch-torch" >>"$out"
  fi
done
echo "load after:  $(cat /proc/loadavg)"
# ratio: of the two medians; paired: the median of each round's own ratio (the two programs of
# a round run back to back, so a change of the machine's speed between rounds cancels out)
python3 - "$out" <<'PY'
import statistics, sys
runs = {}
for line in open(sys.argv[1]):
    who, name, value = line.split()
    if value != "NA":
        runs.setdefault((who, name), []).append(float(value))
print("%-14s %10s %10s %8s %8s" % ("ns/call", "opd", "torch", "ratio", "paired"))
for name in ("lookup", "typed_call", "boxed_call", "typed_call_ret", "boxed_call_ret"):
    o = runs.get(("opd", name)); t = runs.get(("torch", name))
    om = statistics.median(o) if o else None
    tm = statistics.median(t) if t else None
    paired = statistics.median(a / b for a, b in zip(o, t)) if o and t else None
    print("%-14s %10s %10s %8s %8s" % (name, "%.1f" % om if om else "-", "%.1f" % tm if tm else "NA",
                                       "%.2f" % (om / tm) if om and tm else "-",
                                       "%.2f" % paired if paired else "-"))
PY

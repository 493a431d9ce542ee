#!/usr/bin/env bash
# The graph figures of docs/PERFORMANCE.md ("Graphs (issue 13)"): bench/graph_bench.py against
# an opd daemon pinned to one CPU (one worker) with the client (and PyTorch eager, one thread)
# pinned to another; ROUNDS rounds of every part, interleaved, medians of the rounds' medians,
# and the ratios to the issue's targets. /proc/loadavg is printed before and after: the machine
# may be shared.
# With OPD_GRAPH_BENCH_CC=1 the daemon runs the C tier of fused programs (--graph-cc-dir in
# the run's temporary directory; docs/GRAPHS.md) and each graph warms up for 3 s more, so that
# its groups are compiled and checked again before they are timed.
#   bench/run_graph_bench.sh [BUILD_DIR] [ROUNDS]
set -euo pipefail
build=${1:-build-release}
rounds=${2:-3}
server_cpu=${OPD_BENCH_SERVER_CPU:-0}
client_cpu=${OPD_BENCH_CLIENT_CPU:-1}
py=${OPD_PYTHON:-/usr/bin/python3}
here=$(cd "$(dirname "$0")" && pwd)
opd=$build/server/opd
[ -x "$opd" ] || { echo "run_graph_bench: $opd not found: build first (README.md)" >&2; exit 2; }
export PYTHONPATH=$build/python
"$py" -c 'import opd, torch' || { echo "run_graph_bench: needs opd (the build) and torch" >&2; exit 2; }

tmp=$(mktemp -d /tmp/opd-graph-bench.XXXXXX)
opd_pid=
cleanup() {
  [ -n "$opd_pid" ] && kill "$opd_pid" 2>/dev/null || true
  rm -rf "$tmp"
}
trap cleanup EXIT
url="unix://$tmp/opd.sock"
cc_args=()
if [ "${OPD_GRAPH_BENCH_CC:-0}" = 1 ]; then
  cc_args=(--graph-cc-dir "$tmp/cc")
  export OPD_GRAPH_WARMUP_S=3
fi
taskset -c "$server_cpu" "$opd" --listen "$url" --status "" --admin "" --workers 1 \
  "${cc_args[@]}" 2>"$tmp/opd.log" &
opd_pid=$!
for _ in $(seq 200); do
  grep -q ' ready' "$tmp/opd.log" 2>/dev/null && break
  sleep 0.05
done
grep -q ' ready' "$tmp/opd.log" || { echo "run_graph_bench: opd did not start: $(cat "$tmp/opd.log")" >&2; exit 1; }

echo "C tier: ${OPD_GRAPH_BENCH_CC:-0}"
echo "loadavg before: $(cat /proc/loadavg)"
client() { taskset -c "$client_cpu" "$py" "$here/graph_bench.py" "$@"; }
for r in $(seq "$rounds"); do
  client gpt2 "$url" 16 50 >>"$tmp/results"
  client gpt2 "$url" 64 50 >>"$tmp/results"
  client softmax "$url" 10 >>"$tmp/results"
  client gelu "$url" 5 >>"$tmp/results"
  client define "$url" 20 >>"$tmp/results"
done
echo "loadavg after: $(cat /proc/loadavg)"

"$py" - "$tmp/results" <<'PY'
import statistics, sys
runs = {}
for line in open(sys.argv[1]):
    name, value, unit = line.split()
    runs.setdefault(name, ([], unit))[0].append(float(value))
med = {k: statistics.median(v) for k, (v, _) in runs.items()}
for k, (v, unit) in runs.items():
    print(f"{k:18s} {med[k]:10.3f} {unit:3s} (rounds: {', '.join(f'{x:.3f}' for x in v)})")
def ratio(slow, fast, target=None):
    if slow in med and fast in med:
        t = f"  (target >= {target}x)" if target else ""
        print(f"{slow} / {fast}: {med[slow] / med[fast]:.2f}x{t}")
ratio("gpt2_16_calls", "gpt2_16_graph", 5)
ratio("gpt2_16_eager", "gpt2_16_graph")
ratio("gpt2_64_calls", "gpt2_64_graph")
ratio("gpt2_64_eager", "gpt2_64_graph")
ratio("softmax_calls", "softmax_graph", 2)
ratio("softmax_eager", "softmax_graph", 1.0)
ratio("gelu_calls", "gelu_graph", 3)
ratio("gelu_eager", "gelu_graph", 2)
ratio("define_cold", "define_hit")
PY

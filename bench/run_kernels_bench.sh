#!/usr/bin/env bash
# Runs opd-bench-kernels and bench/kernels_peers.py (numpy, and PyTorch when installed) with
# the same thread count, several rounds, and prints per workload the median seconds of each
# and opd's throughput relative to the faster peer (>= 1 means opd is at least as fast).
#   bench/run_kernels_bench.sh [BUILD_DIR] [ROUNDS]
set -euo pipefail
build=${1:-build-release}
rounds=${2:-3}
threads=${OPD_NUM_THREADS:-$(nproc)}
export OPD_NUM_THREADS=$threads OMP_NUM_THREADS=$threads OPENBLAS_NUM_THREADS=$threads
out=$(mktemp)
trap 'rm -f "$out"' EXIT
for _ in $(seq "$rounds"); do
  "$build/bench/opd-bench-kernels" >>"$out"
  /usr/bin/python3 "$(dirname "$0")/kernels_peers.py" >>"$out"
done
/usr/bin/python3 - "$out" "$threads" <<'PY'
import statistics, sys
runs = {}
for line in open(sys.argv[1]):
    who, name, value = line.split()
    runs.setdefault(name, {}).setdefault(who, []).append(float(value))
print("threads: %s; seconds per call (median); ratio = faster peer's time / opd's time" % sys.argv[2])
print("%-20s %10s %10s %10s %8s" % ("workload", "opd", "numpy", "torch", "ratio"))
for name, by in runs.items():
    m = {who: statistics.median(v) for who, v in by.items()}
    peers = [m[p] for p in ("numpy", "torch") if p in m]
    ratio = min(peers) / m["opd"] if peers and "opd" in m else float("nan")
    fmt = lambda who: "%.5f" % m[who] if who in m else "-"
    print("%-20s %10s %10s %10s %8.2f" % (name, fmt("opd"), fmt("numpy"), fmt("torch"), ratio))
PY

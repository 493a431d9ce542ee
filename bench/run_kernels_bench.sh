#!/usr/bin/env bash
# Runs opd-bench-kernels and bench/kernels_peers.py (numpy, and PyTorch when installed) with
# the same thread count, pinned to the same CPUs, several rounds, and prints: the machine (CPU
# model, vector extensions, what each implementation uses), the load average before and after,
# per workload the median seconds of each, opd's throughput relative to the faster peer (>= 1
# means opd is at least as fast), and for memory-bound workloads opd's bandwidth (the bytes the
# workload must move / its time) and that bandwidth as a fraction of the machine's copy
# bandwidth (the faster of memcpy and opd's copy_ over the same 64 MiB: the physical limit).
#   bench/run_kernels_bench.sh [BUILD_DIR] [ROUNDS]
# OPD_NUM_THREADS (default nproc) sets every implementation's threads; OPD_BENCH_CPUS (default
# 0-(threads-1)) the CPUs they are pinned to.
set -euo pipefail
build=${1:-build-release}
rounds=${2:-3}
threads=${OPD_NUM_THREADS:-$(nproc)}
cpus=${OPD_BENCH_CPUS:-0-$((threads - 1))}
export OPD_NUM_THREADS=$threads OMP_NUM_THREADS=$threads OPENBLAS_NUM_THREADS=$threads
out=$(mktemp)
trap 'rm -f "$out"' EXIT
echo "load before: $(cat /proc/loadavg)"
for _ in $(seq "$rounds"); do
  taskset -c "$cpus" "$build/bench/opd-bench-kernels" >>"$out"
  taskset -c "$cpus" /usr/bin/python3 "$(dirname "$0")/kernels_peers.py" >>"$out"
done
echo "load after:  $(cat /proc/loadavg)"
/usr/bin/python3 - "$out" "$threads" "$rounds" <<'PY'
import statistics, sys
runs, bytes_, notes = {}, {}, []
for line in open(sys.argv[1]):
    if line.startswith("#"):
        if line not in notes:
            notes.append(line)
        continue
    who, name, value = line.split()
    if who == "bytes":
        bytes_[name] = int(value)
    else:
        runs.setdefault(name, {}).setdefault(who, []).append(float(value))
sys.stdout.write("".join(notes))
print("threads: %s; rounds: %s; seconds per call (median of the rounds' medians);"
      " ratio = faster peer's time / opd's time;" % (sys.argv[2], sys.argv[3]))
print("GB/s = bytes moved / opd's time; of_copy = that / the copy bandwidth")
med = {name: {who: statistics.median(v) for who, v in by.items()} for name, by in runs.items()}
copy_bw = max((bytes_[n] / med[n]["opd"] for n in ("copy_memcpy_16M", "copy_16M")
               if n in bytes_ and "opd" in med.get(n, {})), default=None)
print("%-22s %10s %10s %10s %7s %7s %8s" % ("workload", "opd", "numpy", "torch", "ratio", "GB/s",
                                            "of_copy"))
for name, m in med.items():
    peers = [m[p] for p in ("numpy", "torch") if p in m]
    ratio = "%.2f" % (min(peers) / m["opd"]) if peers and "opd" in m else "-"
    fmt = lambda who: "%.5f" % m[who] if who in m else "-"
    bw = bytes_[name] / m["opd"] / 1e9 if name in bytes_ and "opd" in m else None
    frac = "%.2f" % (bw * 1e9 / copy_bw) if bw and copy_bw else "-"
    print("%-22s %10s %10s %10s %7s %7s %8s" % (name, fmt("opd"), fmt("numpy"), fmt("torch"),
                                                ratio, "%.1f" % bw if bw else "-", frac))
PY

#!/usr/bin/env bash
# Runs opd-bench-fair (bench/fair_bench.c) against an opd daemon of the default
# configuration (workers: one per CPU; only its addresses are given) and prints the medians
# and the verdicts on the targets of docs/PERFORMANCE.md ("Fair sharing (issue 17)"):
#   - a light session's tiny-op latency (aten::add.Tensor, one call per ms) alone, and while
#     N heavy sessions each keep 16 calls in flight: p99 under load at most 2 ms and at most
#     10x its p99 alone;
#   - the heavy sessions' total calls/s with the light session at least 0.9x without it;
#   - M heavy sessions at once: each session's calls/s within 2x of its fair share;
# for each heavy operator: mm 1024^3, add of 2^22 elements, softmax of 1024 x 4096.
#   bench/run_fair_bench.sh [BUILD_DIR] [ROUNDS] [SECONDS]
# The daemon and the load generator run pinned to the same CPUs (OPD_FAIR_CPUS, default:
# every online CPU): a machine's whole CPU is what the sessions share. Each round runs
# every operator once (its phases side by side in one opd-bench-fair run); the load average
# is recorded before and after each run, and the medians of ROUNDS rounds are reported.
# OPD_FAIR_DAEMON=PATH measures another opd binary (an older build) with the same client;
# OPD_FAIR_OPS="mm" runs some operators only; OPD_FAIR_HEAVY (2) and OPD_FAIR_SESSIONS (5)
# set N and M; OPD_FAIR_DAEMON_ARGS="--worker-nice 6" gives the daemon options beyond its
# addresses (the targets are the default configuration's).
set -euo pipefail
build=${1:-build-release}
rounds=${2:-3}
secs=${3:-3}
cpus=${OPD_FAIR_CPUS:-0-$(($(nproc) - 1))}
ops=${OPD_FAIR_OPS:-mm add softmax}
heavy=${OPD_FAIR_HEAVY:-2}
sessions=${OPD_FAIR_SESSIONS:-5}
opd=${OPD_FAIR_DAEMON:-$build/server/opd}
bench=$build/bench/opd-bench-fair
for exe in "$opd" "$bench"; do
  if [ ! -x "$exe" ]; then
    echo "run_fair_bench: $exe not found: build with -DCMAKE_BUILD_TYPE=Release first" >&2
    exit 2
  fi
done

tmp=$(mktemp -d /tmp/opd-fair-bench.XXXXXX)
pid=
cleanup() {
  if [ -n "$pid" ]; then kill "$pid" 2>/dev/null || true; fi
  wait 2>/dev/null || true
  rm -rf "$tmp"
}
trap cleanup EXIT

port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
# shellcheck disable=SC2086 # OPD_FAIR_DAEMON_ARGS: options, split at spaces
taskset -c "$cpus" "$opd" --listen "tcp://127.0.0.1:$port" --status "" --admin "" \
  --log-level warn ${OPD_FAIR_DAEMON_ARGS:-} >"$tmp/opd.log" 2>&1 &
pid=$!
for _ in $(seq 200); do
  if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then break; fi
  if ! kill -0 "$pid" 2>/dev/null; then
    echo "run_fair_bench: the daemon exited at start; its log:" >&2
    cat "$tmp/opd.log" >&2
    exit 1
  fi
  sleep 0.05
done

results=$tmp/results
: >"$results"
for r in $(seq "$rounds"); do
  for op in $ops; do
    echo "round $r of $rounds: $op" >&2
    before=$(cut -d' ' -f1 /proc/loadavg)
    if ! taskset -c "$cpus" "$bench" --url "tcp://127.0.0.1:$port" --heavy-op "$op" \
      --heavy "$heavy" --fair-sessions "$sessions" --duration "$secs" --warmup 1 >"$tmp/run"; then
      echo "run_fair_bench: opd-bench-fair failed:" >&2
      cat "$tmp/run" >&2
      exit 1
    fi
    after=$(cut -d' ' -f1 /proc/loadavg)
    { echo "load $op $before $after"; cat "$tmp/run"; } >>"$results"
  done
done

python3 - "$results" "$rounds" "$secs" "$cpus" "$heavy" "$sessions" "$opd" <<'PY'
import statistics, sys
path, rounds, secs, cpus, heavy, sessions, opd = sys.argv[1:]
runs, loads = {}, {}
for line in open(path):
    f = line.split()
    if f[0] == "load":
        loads.setdefault(f[1], []).append((float(f[2]), float(f[3])))
        continue
    kv = dict(x.split("=", 1) for x in f[1:])
    for k, v in kv.items():
        if k not in ("phase", "op"):
            runs.setdefault((kv["op"], kv["phase"], k), []).append(float(v))

def med(op, phase, key):
    v = runs.get((op, phase, key))
    return statistics.median(v) if v else None

print("opd-bench-fair against %s (default configuration) on CPUs %s: medians of %s rounds "
      "of %s s" % (opd, cpus, rounds, secs))
print("light: aten::add.Tensor of 1 element, one call per ms; heavy: %s sessions of 16 calls "
      "in flight; fair: %s heavy sessions" % (heavy, sessions))
print()
print("%-8s %9s %9s %9s %9s %7s %10s %10s %6s %6s %6s  %s" %
      ("op", "alone p50", "alone p99", "load p50", "load p99", "x alone", "heavy/s",
       "+light/s", "ratio", "min", "max", "load avg (before-after, each round)"))
verdicts = []
for op in [o for o in ("mm", "add", "softmax") if (o, "alone", "light_p99_us") in runs]:
    a50, a99 = med(op, "alone", "light_p50_us"), med(op, "alone", "light_p99_us")
    m50, m99 = med(op, "mixed", "light_p50_us"), med(op, "mixed", "light_p99_us")
    h0, h1 = med(op, "heavy", "heavy_calls_per_s"), med(op, "mixed", "heavy_calls_per_s")
    lo, hi = med(op, "fair", "min_share"), med(op, "fair", "max_share")
    times = m99 / a99 if a99 else float("inf")
    ratio = h1 / h0 if h0 else 0
    load = " ".join("%.1f-%.1f" % x for x in loads.get(op, []))
    print("%-8s %9.1f %9.1f %9.1f %9.1f %7.1f %10.2f %10.2f %6.2f %6.2f %6.2f  %s" %
          (op, a50, a99, m50, m99, times, h0, h1, ratio, lo, hi, load))
    verdicts.append("%s: light p99 under load %.0f us <= 2000 %s, <= 10x alone (%.1fx) %s; heavy "
                    "with the light session %.2fx >= 0.9 %s; shares %.2f..%.2f within 2x %s" %
                    (op, m99, "met" if m99 <= 2000 else "MISSED", times,
                     "met" if times <= 10 else "MISSED", ratio, "met" if ratio >= 0.9 else "MISSED",
                     lo, hi, "met" if lo >= 0.5 and hi <= 2 else "MISSED"))
print()
print("\n".join(verdicts))
PY

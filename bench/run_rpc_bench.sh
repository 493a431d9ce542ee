#!/usr/bin/env bash
# Runs opd-bench against the opd daemon side by side with its peers in one run, and prints
# the medians and the ratios to the targets of docs/PERFORMANCE.md ("Daemon (issue #4)"):
#   - the tiny operator (1-element aten::add.Tensor, handles in and out) and ping, against
#     redis-benchmark -t ping_mbulk, over 1 and 16 connections, unpipelined and pipelined
#     64 deep (the same -c and -P); both through the client library (the target) and over
#     opd-bench's raw sockets (--raw: the daemon's own share);
#   - upload and download of 64 MiB tensors over TCP and the Unix socket, against iperf3 on
#     loopback (upload: iperf3 client to server; download: iperf3 -R);
#   - the servers' own CPU time per call (opd's daemon, all its threads, against
#     redis-server), read from /proc/PID/stat over the middle of each run: what each server
#     spends whatever bounds the rate (redis-benchmark's client is often redis's bound).
# Servers (opd, redis-server, iperf3 -s) run pinned to one CPU and clients to another, the
# same for all (default: servers on CPU 0, clients on CPU 1); each measurement is repeated
# ROUNDS times, interleaving opd and its peer, and the median is reported.
#   bench/run_rpc_bench.sh [BUILD_DIR] [ROUNDS] [SECONDS]
# Installs nothing: a missing peer (redis-server, redis-benchmark, iperf3) is reported and
# its columns read NA. Every listener of the daemon (RPC over TCP and a Unix socket, status,
# admin) gets a free port or a temporary path, so a daemon already running does not collide;
# a server that cannot start is reported with its own log.
set -euo pipefail
build=${1:-build-release}
rounds=${2:-3}
secs=${3:-3}
server_cpu=${OPD_BENCH_SERVER_CPU:-0}
client_cpu=${OPD_BENCH_CLIENT_CPU:-1}
workers=${OPD_BENCH_WORKERS:-1} # the daemon has one CPU, like redis-server's main thread
size=$((64 << 20))

opd=$build/server/opd
bench=$build/bench/opd-bench
for exe in "$opd" "$bench"; do
  if [ ! -x "$exe" ]; then
    echo "run_rpc_bench: $exe not found: build with -DCMAKE_BUILD_TYPE=Release first" >&2
    exit 2
  fi
done
have_redis=1
have_iperf=1
for tool in redis-server redis-benchmark; do
  if ! command -v "$tool" >/dev/null; then
    echo "run_rpc_bench: MISSING PEER: $tool not found (Debian: redis-server, redis-tools);" \
      "the redis columns read NA" >&2
    have_redis=0
  fi
done
if ! command -v iperf3 >/dev/null; then
  echo "run_rpc_bench: MISSING PEER: iperf3 not found (Debian: iperf3); the iperf3 columns" \
    "read NA" >&2
  have_iperf=0
fi

tmp=$(mktemp -d /tmp/opd-rpc-bench.XXXXXX)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$tmp"
}
trap cleanup EXIT

free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# Waits for a TCP port on loopback to accept connections from the server that runs as PID and
# logs to LOG; when it exits first or never listens, shows its log.
wait_port() { # port pid log
  for _ in $(seq 200); do
    if (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; then return 0; fi
    if ! kill -0 "$2" 2>/dev/null; then
      echo "run_rpc_bench: the server for port $1 exited at start; its log ($3):" >&2
      cat "$3" >&2
      exit 1
    fi
    sleep 0.05
  done
  echo "run_rpc_bench: nothing listens on port $1 after 10 s; the server's log ($3):" >&2
  cat "$3" >&2
  exit 1
}

# (servers are started with taskset directly, so that $! is the server itself)
on_client() { taskset -c "$client_cpu" "$@"; }

results=$tmp/results
: >"$results"
load_before=$(cut -d' ' -f1-3 /proc/loadavg)

opd_port=$(free_port)
status_port=$(free_port)
sock=$tmp/opd.sock
taskset -c "$server_cpu" "$opd" --listen "tcp://127.0.0.1:$opd_port" --listen "unix://$sock" \
  --status "http://127.0.0.1:$status_port" --admin "unix://$tmp/admin.sock" \
  --workers "$workers" --log-level warn >"$tmp/opd.log" 2>&1 &
opd_pid=$!
pids+=($!)
wait_port "$opd_port" "$!" "$tmp/opd.log"

if [ "$have_redis" = 1 ]; then
  redis_port=$(free_port)
  taskset -c "$server_cpu" redis-server --port "$redis_port" --bind 127.0.0.1 --save '' --appendonly no \
    --protected-mode no --daemonize no --loglevel warning >"$tmp/redis.log" 2>&1 &
  redis_pid=$!
  pids+=($!)
  wait_port "$redis_port" "$!" "$tmp/redis.log"
fi

# The CPU a server (all its threads) used while a client ran, from FROM seconds after the
# call for SPAN seconds (the middle of the client's run): "ticks0 ticks1 time0 time1", turned
# into a share by cpu_share once the client is done (nothing heavier than awk runs beside
# the client).
ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
server_cpu_sample() { # server_pid from span
  local t0 w0 t1 w1
  sleep "$2"
  t0=$(ticks "$1") w0=$(date +%s.%N)
  sleep "$3"
  t1=$(ticks "$1") w1=$(date +%s.%N)
  echo "$t0 $t1 $w0 $w1"
}
span=$(python3 -c "print(max(0.2, $secs - 0.6))")
clk_tck=$(getconf CLK_TCK)

# A sample's share of one CPU. A client that ended inside the window (its output is written
# as it exits) ends it: the server idled after. Under 0.2 s of window says nothing: nan.
cpu_share() { # sample client_output
  awk -v hz="$clk_tck" -v end="$(stat -c %.9Y "$2")" '{
    w1 = $4 < end ? $4 : end
    if (w1 - $3 < 0.2) print "nan"; else print ($2 - $1) / hz / (w1 - $3)
  }' <<<"$1"
}

# opd-bench's line -> "opd WORKLOAD TRANSPORT C P calls_per_s p50_us p99_us mb_per_s cpu"
run_opd() { # workload url transport connections pipeline [extra...]
  local w=$1 url=$2 tr=$3 c=$4 p=$5
  shift 5
  local line sample cpu
  on_client "$bench" --url "$url" --workload "$w" --connections "$c" --pipeline "$p" \
    --duration "$secs" --warmup 1 "$@" >"$tmp/opd-bench.out" &
  local client=$!
  sample=$(server_cpu_sample "$opd_pid" 1.3 "$span") # past the warm-up second
  if ! wait "$client"; then
    echo "run_rpc_bench: opd-bench failed: $(cat "$tmp/opd-bench.out")" >&2
    exit 1
  fi
  line=$(cat "$tmp/opd-bench.out")
  cpu=$(cpu_share "$sample" "$tmp/opd-bench.out")
  python3 - "$w" "$tr" "$c" "$p" "$line" "$cpu" >>"$results" <<'PY'
import sys
w, tr, c, p, line, cpu = sys.argv[1:]
kv = dict(f.split("=", 1) for f in line.split()[1:])
if kv["client"] == "raw":
    w += "-raw"
print("opd", w, tr, c, p, kv["calls_per_s"], kv["p50_us"], kv["p99_us"], kv["mb_per_s"], cpu)
PY
}

# redis-benchmark -t ping_mbulk with -n sized to about $secs seconds (from a short probe)
declare -A redis_n
run_redis() { # connections pipeline
  local c=$1 p=$2 key="$1/$2" out
  if [ -z "${redis_n[$key]:-}" ]; then
    out=$(on_client redis-benchmark -h 127.0.0.1 -p "$redis_port" -t ping_mbulk -c "$c" \
      -P "$p" -n $((20000 * c * (p > 1 ? 8 : 1))) --csv | tail -n 1)
    redis_n[$key]=$(python3 -c "import sys; print(max(10000, int(float(sys.argv[1].split(',')[1].strip('\"')) * $secs)))" "$out")
  fi
  on_client redis-benchmark -h 127.0.0.1 -p "$redis_port" -t ping_mbulk -c "$c" -P "$p" \
    -n "${redis_n[$key]}" --csv >"$tmp/redis-benchmark.out" &
  local client=$! sample cpu
  sample=$(server_cpu_sample "$redis_pid" 0.3 "$span")
  wait "$client"
  out=$(tail -n 1 "$tmp/redis-benchmark.out")
  cpu=$(cpu_share "$sample" "$tmp/redis-benchmark.out")
  # "PING_MBULK","rps","avg","min","p50","p95","p99","max" (latencies in ms)
  python3 - "$c" "$p" "$out" "$cpu" >>"$results" <<'PY'
import sys
c, p, out, cpu = sys.argv[1:]
f = [x.strip('"') for x in out.split(",")]
print("redis ping tcp", c, p, f[1], float(f[4]) * 1000, float(f[6]) * 1000, 0, cpu)
PY
}

run_iperf() { # direction: up (client sends) or down (-R)
  local port
  port=$(free_port)
  taskset -c "$server_cpu" iperf3 -s -p "$port" -1 >"$tmp/iperf3-server.log" 2>&1 &
  local spid=$!
  # (not wait_port: a probe connection would be the one-off server's only client)
  for _ in $(seq 200); do
    if grep -q 'Server listening' "$tmp/iperf3-server.log"; then break; fi
    sleep 0.05
  done
  local reverse=()
  if [ "$1" = down ]; then reverse=(-R); fi
  on_client iperf3 -c 127.0.0.1 -p "$port" -t "$secs" -J "${reverse[@]}" >"$tmp/iperf3.json"
  wait "$spid" || true
  python3 - "$1" "$tmp/iperf3.json" >>"$results" <<'PY'
import json, sys
d = json.load(open(sys.argv[2]))
mbps = d["end"]["sum_received"]["bits_per_second"] / 8e6
print("iperf3", "upload" if sys.argv[1] == "up" else "download", "tcp 1 1 0 0 0", mbps)
PY
}

tcp=tcp://127.0.0.1:$opd_port
unix=unix://$sock
for r in $(seq "$rounds"); do
  echo "round $r of $rounds" >&2
  for cp in 1/1 1/64 16/1 16/64; do
    c=${cp%/*}
    p=${cp#*/}
    run_opd add "$tcp" tcp "$c" "$p"
    run_opd add "$tcp" tcp "$c" "$p" --raw
    run_opd ping "$tcp" tcp "$c" "$p"
    run_opd ping "$tcp" tcp "$c" "$p" --raw
    if [ "$have_redis" = 1 ]; then run_redis "$c" "$p"; fi
    if [ "$c" = 1 ]; then
      run_opd add "$unix" unix "$c" "$p"
      run_opd ping "$unix" unix "$c" "$p"
    fi
  done
  for w in upload download; do
    run_opd "$w" "$tcp" tcp 1 1 --size "$size"
    run_opd "$w" "$unix" unix 1 1 --size "$size"
    if [ "$have_iperf" = 1 ]; then run_iperf "$([ "$w" = upload ] && echo up || echo down)"; fi
  done
done

python3 - "$results" "$rounds" "$secs" "$load_before" "$(cut -d' ' -f1-3 /proc/loadavg)" <<'PY'
import statistics, sys
path, rounds, secs, load_before, load_after = sys.argv[1:]
runs = {}
for line in open(path):
    f = line.split()
    who, w, tr, c, p = f[:5]
    runs.setdefault((who, w, tr, c, p), []).append([float(x) for x in f[5:]])

def med(key, i):
    v = runs.get(key)
    return statistics.median(x[i] for x in v) if v else None

def fmt(x, spec):
    return "NA" if x is None else format(x, spec)

print("opd daemon vs redis-benchmark PING_MBULK and iperf3 on loopback: medians of %s rounds "
      "of %s s" % (rounds, secs))
print("load average (1, 5, 15 min) before: %s, after: %s" % (load_before, load_after))
print()
print("%-22s %5s %4s %10s %8s %8s %10s %8s %8s %6s  %s" %
      ("calls/s", "conns", "pipe", "opd", "p50 us", "p99 us", "redis", "p50 us", "p99 us",
       "ratio", "target"))
# through the client library and over raw sockets alike; the graph rows through the library only
both = {("add", "1", "1"): 0.8, ("add", "1", "64"): 0.5, ("ping", "1", "1"): 1.0,
        ("ping", "1", "64"): 1.0, ("ping", "16", "1"): 1.0, ("ping", "16", "64"): 1.0}
targets = {(w + raw, c, p): t for (w, c, p), t in both.items() for raw in ("", "-raw")}
targets[("add", "16", "64")] = 0.6
for w, tr in (("add", "tcp"), ("add-raw", "tcp"), ("ping", "tcp"), ("ping-raw", "tcp"),
              ("add", "unix"), ("ping", "unix")):
    for c, p in (("1", "1"), ("1", "64"), ("16", "1"), ("16", "64")):
        o = ("opd", w, tr, c, p)
        if o not in runs:
            continue
        rk = ("redis", "ping", "tcp", c, p)
        ro, rr = med(o, 0), med(rk, 0)
        ratio = ro / rr if ro and rr else None
        t = targets.get((w, c, p)) if tr == "tcp" else None
        verdict = "-" if t is None or ratio is None else (
            ">= %.1f %s" % (t, "met" if ratio >= t else "MISSED"))
        label = "%s %s" % ({"add": "tiny-op add", "add-raw": "tiny-op add, raw",
                                 "ping-raw": "ping, raw"}.get(w, w), tr)
        print("%-22s %5s %4s %10s %8s %8s %10s %8s %8s %6s  %s" %
              (label, c, p, fmt(ro, ".0f"), fmt(med(o, 1), ".1f"), fmt(med(o, 2), ".1f"),
               fmt(rr, ".0f"), fmt(med(rk, 1), ".1f"), fmt(med(rk, 2), ".1f"),
               fmt(ratio, ".2f"), verdict))
print()
print("server CPU us per call = its share of one CPU (all its threads, over the middle of a")
print("run) / the run's calls/s; ratio = redis-server's / opd's (higher: opd spends less)")
print("%-22s %5s %4s %8s %6s %8s %6s %6s" % ("", "conns", "pipe", "opd", "share", "redis",
                                               "share", "ratio"))
def us_per_call(key):
    v = runs.get(key)
    return statistics.median(x[4] * 1e6 / x[0] for x in v) if v and all(x[0] > 0 for x in v) else None

for w in ("add", "ping"):
    for c, p in (("1", "1"), ("1", "64"), ("16", "1"), ("16", "64")):
        o, rk = ("opd", w, "tcp", c, p), ("redis", "ping", "tcp", c, p)
        if o not in runs:
            continue
        ou, ru = us_per_call(o), us_per_call(rk)
        print("%-22s %5s %4s %8s %6s %8s %6s %6s" %
              ("%s tcp" % {"add": "tiny-op add"}.get(w, w), c, p, fmt(ou, ".3f"),
               fmt(med(o, 4), ".2f"), fmt(ru, ".3f"), fmt(med(rk, 4), ".2f"),
               fmt(ru / ou if ou and ru else None, ".2f")))
print()
print("%-22s %10s %10s %6s  %s" % ("64 MiB transfers MB/s", "opd", "iperf3", "ratio", "target"))
for w in ("upload", "download"):
    ip = med(("iperf3", w, "tcp", "1", "1"), 3)
    for tr in ("tcp", "unix"):
        o = med(("opd", w, tr, "1", "1"), 3)
        ratio = o / ip if o and ip else None
        verdict = "-" if ratio is None else ">= 0.7 %s" % ("met" if ratio >= 0.7 else "MISSED")
        if tr == "unix":
            t = med(("opd", w, "tcp", "1", "1"), 3)
            verdict += ", > TCP %s" % ("met" if o and t and o > t else "MISSED")
        print("%-22s %10s %10s %6s  %s" % ("%s %s" % (w, tr), fmt(o, ".0f"), fmt(ip, ".0f"),
                                           fmt(ratio, ".2f"), verdict))
PY

#!/usr/bin/env bash
# Runs the Python client's benchmarks (bench/python_bench.py) side by side in one run and
# prints the medians and the ratios of docs/PERFORMANCE.md ("Python client (issue 14)"):
#   - a tiny remote add (1-element float32 tensors held remotely, handles in, a handle or a
#     tensor out): opd's Python client (c.ops.aten.add.Tensor, unpipelined and 64 in flight)
#     against torch.distributed.rpc (rpc_sync / rpc_async of torch.add on two RRefs,
#     TensorPipe over TCP), the servers (opd --workers 1, the rpc peer) pinned to one CPU and
#     the clients to another, the same for both;
#   - the client CPU time of an OpdTensor op (sent, not waited for) and of the same local op;
#   - a GPT-2 style block: eager in process, opd.torch.remote op by op, opd.torch.compile.
# Each measurement is repeated ROUNDS times, interleaving opd and rpc; medians are reported.
#   bench/run_python_bench.sh [BUILD_DIR] [ROUNDS] [SECONDS]
set -euo pipefail
build=${1:-build-release}
rounds=${2:-3}
secs=${3:-3}
server_cpu=${OPD_BENCH_SERVER_CPU:-0}
client_cpu=${OPD_BENCH_CLIENT_CPU:-1}
py=${OPD_PYTHON:-/usr/bin/python3}
here=$(cd "$(dirname "$0")" && pwd)
opd=$build/server/opd
[ -x "$opd" ] || { echo "run_python_bench: $opd not found: build first (README.md)" >&2; exit 2; }
export PYTHONPATH=$build/python
"$py" -c 'import opd, torch' || { echo "run_python_bench: needs opd (the build) and torch" >&2; exit 2; }

tmp=$(mktemp -d /tmp/opd-python-bench.XXXXXX)
opd_pid=
cleanup() {
  [ -n "$opd_pid" ] && kill "$opd_pid" 2>/dev/null || true
  rm -rf "$tmp"
}
trap cleanup EXIT
taskset -c "$server_cpu" "$opd" --listen tcp://127.0.0.1:0 --status "" --admin "" --workers 1 \
  2>"$tmp/opd.log" &
opd_pid=$!
url=
for _ in $(seq 200); do
  url=$(sed -nE 's/.*listening on (tcp:\/\/[^ ]+).*/\1/p' "$tmp/opd.log" | head -n 1)
  [ -n "$url" ] && grep -q ' ready' "$tmp/opd.log" && break
  sleep 0.05
done
[ -n "$url" ] || { echo "run_python_bench: opd did not start: $(cat "$tmp/opd.log")" >&2; exit 1; }

client() { taskset -c "$client_cpu" "$py" "$here/python_bench.py" "$@"; }
port=$((29500 + RANDOM % 400))
for r in $(seq "$rounds"); do
  client opd "$url" "$secs" >>"$tmp/results"
  port=$((port + 1))
  taskset -c "$server_cpu" "$py" "$here/python_bench.py" rpc-server "$port" 2>/dev/null &
  rpc_pid=$!
  client rpc "$port" "$secs" 2>/dev/null | grep -E '^rpc_' >>"$tmp/results"
  wait "$rpc_pid" || true
  client overhead "$url" 20000 >>"$tmp/results"
  client gpt2 "$url" 50 >>"$tmp/results"
done

"$py" - "$tmp/results" <<'PY'
import statistics, sys
runs = {}
for line in open(sys.argv[1]):
    name, value, unit = line.split()
    runs.setdefault(name, ([], unit))[0].append(float(value))
med = {k: statistics.median(v) for k, (v, _) in runs.items()}
for k, (v, unit) in runs.items():
    print(f"{k:20s} {med[k]:12.1f} {unit:8s} (runs: {', '.join(f'{x:.1f}' for x in v)})")
def ratio(a, b, target=None):
    if a in med and b in med:
        t = f"  (target >= {target}x)" if target else ""
        print(f"{a} / {b}: {med[a] / med[b]:.1f}x{t}")
ratio("opd_sync", "rpc_sync", 10)
ratio("opd_pipelined", "rpc_sync", 50)
ratio("opd_pipelined", "rpc_pipelined")
ratio("opdtensor_op_cpu", "local_op_cpu")
ratio("gpt2_remote", "gpt2_eager")
ratio("gpt2_compile", "gpt2_eager")
PY

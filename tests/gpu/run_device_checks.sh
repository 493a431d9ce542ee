#!/usr/bin/env bash
# tests/gpu/run_device_checks.sh: the CUDA backend's checks on a machine with a GPU, built
# from the working tree alone (docs/GPU.md). Prints the benchmark table, then the table of
# checks last; every log and the table go under $OUT when it is set (else BUILD_DIR/device-checks).
#
#   tests/gpu/run_device_checks.sh [BUILD_DIR]       the checks (BUILD_DIR default build-gpu)
#
#   OPD_FIXTURES_DIR=DIR  the fixtures (oracle/, conformance/, graphs/); default tests/fixtures
#   OPD_REQUIRE_GPU=1     no usable GPU is a failure (else the GPU steps are skipped)
#   OPD_SKIP_GPU=1        the GPU steps are skipped even where a GPU is, and the daemon and the
#                         runners are run without one (CUDA_VISIBLE_DEVICES=""), where they must
#                         say "unavailable": the dry run that CI makes so the script cannot rot
#   OPD_DEVICE_CHECKS_BUDGET_S=450   the seconds the whole run may take: each step's timeout is
#                         cut to what is left, and steps with no time left are skipped
#
# Steps:
#   0. dependencies: cmake >= 3.25, a C compiler, pkg-config modules (jansson, check, libuv,
#      libprotobuf-c, liburcu-qsbr, openblas), http-parser, protoc-c, python3, nvcc; what is
#      missing is named (with the Debian packages) instead of failing in CMake
#   1. the GPU (nvidia-smi) and the fixtures
#   2. build: a new BUILD_DIR is configured Release, CUDA on, warnings not fatal (another host
#      compiler or toolkit may warn); an existing one is built with its own configuration
#   3. the conformance fixtures on CUDA tensors, in process (opd-conformance --device cuda):
#      tests/fixtures/conformance/public.json, tests/fixtures/graph_ops_conformance.json and
#      each operator family's tests/fixtures/ops_*.json (where the cases of operators without a
#      CUDA kernel are reported as not supported, by name in unsupported-FAMILY.txt)
#   4. the unit suites (the CUDA ones run on the device; without a GPU only the CUDA suites,
#      which must skip cleanly: the others are what `tools/dev.sh test` runs)
#   5. a daemon started here: the RPC checks on CUDA tensors (opd-bench-cuda --rpc-check), the
#      conformance fixture through it (--server URL --device cuda), NVRTC hot registration
#      through opctl (an elementwise and a rows kernel called over the protocol, a compile
#      error reported verbatim, deregistration), the graph fixture on CUDA
#      (opd-graph-conformance FIXTURE --device cuda, 77 without a GPU), and its drain
#   6. the benchmarks (opd-bench-cuda): add vs cudaMemcpy D2D, softmax vs exp/sum/div, mm vs
#      cublasSgemm, a tiny call over RPC
#
# Time, measured on the 2-core development machine (shared with other builds): the probe
# < 1 s; a fresh build of the five targets 40 s of wall time at -j2 (48 s of CPU; its
# longest file, elementwise.cu, 12 s of nvcc; 5 minutes when the machine was loaded 7x), so
# about 20 s on 16 cores; the unit suites 39 s (unit.rpc alone 16 s), 55 to 76 s loaded; the
# conformance fixture < 1 s in process and 1 s through a daemon on the CPU; the whole dry run
# (OPD_SKIP_GPU=1 on an existing build, the three CUDA suites) 13 s. The GPU steps could not
# be timed here (no device); each has a timeout, cut to what is left of the budget, so the
# whole run ends within 7.5 minutes even when a step hangs.
# Exit status: 0 when no check failed (SKIP is not a failure; benchmark targets are reported,
# not enforced); 1 otherwise.
set -u
cd "$(dirname "$0")/../.." || exit 1
root=$PWD

BUILD=${1:-build-gpu}
LOG=${OUT:+$OUT/device-checks}
LOG=${LOG:-$BUILD/device-checks}
mkdir -p "$LOG"
LOG=$(cd "$LOG" && pwd)
budget=${OPD_DEVICE_CHECKS_BUDGET_S:-450}
start=$(date +%s)
skip_gpu=${OPD_SKIP_GPU:-0}

declare -a names results times
step_start=$start
begin() { step_start=$(date +%s); }
record() { # record NAME RESULT
  names+=("$1")
  results+=("$2")
  times+=("$(($(date +%s) - step_start))s")
  echo "== $1: $2"
}
# the timeout of a step: at most $1 seconds, and never past the budget
left() { echo $((budget - ($(date +%s) - start))); }
limit() { # (at least 1: `timeout 0` would mean no limit)
  local l
  l=$(left)
  [ "$l" -lt 1 ] && l=1
  [ "$l" -lt "$1" ] && echo "$l" || echo "$1"
}
has_time() { [ "$(left)" -gt 0 ]; }
table() {
  {
    printf '%-86s %-6s %s\n' check result time
    for i in "${!names[@]}"; do printf '%-86s %-6s %s\n' "${names[$i]}" "${results[$i]}" "${times[$i]}"; done
    printf '%s\n' "total $(($(date +%s) - start))s; logs in $LOG"
  } >"$LOG/table.txt"
  echo
  cat "$LOG/table.txt"
}
finish() {
  table
  for r in "${results[@]}"; do [ "$r" = FAIL ] && exit 1; done
  exit 0
}
# Without a GPU (none here, or OPD_SKIP_GPU=1) the binaries run with no device visible.
nogpu() { if [ "$gpu" = yes ]; then "$@"; else CUDA_VISIBLE_DEVICES="" "$@"; fi; }

# 0. dependencies
begin
missing=()
need_cmd() { command -v "$1" >/dev/null 2>&1 || missing+=("$1 ($2)"); }
need_cmd cmake cmake
need_cmd cc build-essential
need_cmd pkg-config pkg-config
need_cmd protoc-c protobuf-c-compiler
need_cmd python3 python3
if command -v cmake >/dev/null 2>&1; then
  v=$(cmake --version | sed -n 's/^cmake version \([0-9]*\)\.\([0-9]*\).*/\1 \2/p')
  [ -n "$v" ] && [ "${v% *}" -eq 3 ] && [ "${v#* }" -lt 25 ] && missing+=("cmake >= 3.25 (this is $v)")
fi
if command -v pkg-config >/dev/null 2>&1; then
  for m in jansson:libjansson-dev check:check libuv:libuv1-dev libprotobuf-c:libprotobuf-c-dev \
    liburcu-qsbr:liburcu-dev openblas:libopenblas-dev; do
    pkg-config --exists "${m%%:*}" || missing+=("pkg-config module ${m%%:*} (${m#*:})")
  done
fi
if command -v cc >/dev/null 2>&1 &&
  ! printf '#include <http_parser.h>\nint main(void) { return 0; }\n' |
  cc -x c - -lhttp_parser -o /dev/null >/dev/null 2>&1; then
  missing+=("http_parser.h and -lhttp_parser (libhttp-parser-dev)")
fi
nvcc=$(command -v nvcc || { [ -x /usr/local/cuda/bin/nvcc ] && echo /usr/local/cuda/bin/nvcc; })
nvcc_version=${nvcc:+$("$nvcc" --version | sed -n 's/.*release \([0-9.]*\).*/\1/p')}
[ -n "$nvcc_version" ] && [ "${nvcc_version%%.*}" -lt 12 ] &&
  missing+=("nvcc 12.0 or later (the library API of NVRTC kernels; this is $nvcc_version)")
{
  echo "nvcc: ${nvcc:-none} ${nvcc_version}"
  echo "cc: $(cc --version 2>/dev/null | head -1)"
  printf 'missing: %s\n' "${missing[@]}"
} >"$LOG/deps.log"

# 1. the GPU and the fixtures
gpu=no
why_no_gpu=
if [ "$skip_gpu" = 1 ]; then
  why_no_gpu="OPD_SKIP_GPU=1"
elif ! command -v nvidia-smi >/dev/null 2>&1; then
  why_no_gpu="nvidia-smi not found: no NVIDIA driver"
elif ! gpus=$(nvidia-smi -L 2>&1) || ! grep -q '^GPU ' <<<"$gpus"; then
  why_no_gpu="nvidia-smi: $(head -1 <<<"$gpus")"
else
  gpu=yes
  echo "$gpus" | tee "$LOG/gpu.log"
  nvidia-smi --query-gpu=driver_version,compute_cap,memory.total --format=csv,noheader 2>&1 |
    head -1 | sed 's/^/driver, compute capability, memory: /' | tee -a "$LOG/gpu.log"
fi
[ "$gpu" = yes ] && [ -z "$nvcc" ] && missing+=("nvcc (the CUDA Toolkit, 12.0 or later)")
if [ ${#missing[@]} -gt 0 ]; then
  printf 'missing: %s\n' "${missing[@]}"
  record "dependencies (missing: ${#missing[@]}, see deps.log)" FAIL
  finish
fi
record "dependencies (nvcc ${nvcc_version:-none})" PASS

if [ "$gpu" = yes ]; then
  record "GPU ($(head -1 "$LOG/gpu.log" | sed 's/ (UUID.*//'))" PASS
elif [ "${OPD_REQUIRE_GPU:-0}" = 1 ]; then
  record "GPU (required: $why_no_gpu)" FAIL
else
  record "GPU (none: $why_no_gpu; the GPU steps are skipped)" SKIP
fi

FIXTURES=${OPD_FIXTURES_DIR:-tests/fixtures}
if [ -f "$FIXTURES/conformance/public.json" ] && [ -f "$FIXTURES/oracle/public.json" ]; then
  FIXTURES=$(cd "$FIXTURES" && pwd)
  export OPD_FIXTURES_DIR=$FIXTURES
  record "fixtures ($FIXTURES)" PASS
else
  record "fixtures: none in $FIXTURES" FAIL
  FIXTURES=
fi

# 2. build
begin
if [ -f "$BUILD/CMakeCache.txt" ]; then
  cmake -S . -B "$BUILD" >"$LOG/cmake.log" 2>&1
else
  cuda_opt=()
  [ -n "$nvcc" ] && cuda_opt=(-DOPD_CUDA=ON -DCMAKE_CUDA_COMPILER="$nvcc")
  cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DOPD_BENCH=ON -DOPD_WERROR=OFF \
    ${FIXTURES:+-DOPD_FIXTURES_DIR="$FIXTURES"} "${cuda_opt[@]}" >"$LOG/cmake.log" 2>&1
fi
configured=$?
cuda_build=$(sed -n 's/^OPD_CUDA:BOOL=//p' "$BUILD/CMakeCache.txt" 2>/dev/null)
targets=(opd opctl opd-conformance opd-graph-conformance opd_tests)
[ "$cuda_build" = ON ] && targets+=(opd-bench-cuda)
jobs=$(nproc 2>/dev/null || echo 4)
if [ $configured -eq 0 ] && timeout "$(limit 300)" cmake --build "$BUILD" -j"$jobs" --target "${targets[@]}" \
  >"$LOG/build.log" 2>&1; then
  record "build ($BUILD, CUDA ${cuda_build:-OFF}, -j$jobs)" PASS
else
  tail -30 "$LOG/cmake.log" "$LOG/build.log" 2>/dev/null
  record "build ($BUILD: see cmake.log, build.log)" FAIL
  finish
fi
if [ "$gpu" = yes ] && [ "$cuda_build" != ON ]; then
  record "the build has no CUDA backend (OPD_CUDA=${cuda_build:-?} in $BUILD)" FAIL
  gpu=no
fi
bin=$root/$BUILD
[ "${BUILD#/}" != "$BUILD" ] && bin=$BUILD

# Runs a runner that answers 77 without a GPU: PASS, SKIP (77 where no GPU is expected) or
# FAIL. run_gpu_step NAME LOG SECONDS COMMAND...
run_gpu_step() {
  local name=$1 log=$2 secs=$3
  shift 3
  begin
  if ! has_time; then record "$name (out of time)" SKIP && return; fi
  nogpu timeout "$(limit "$secs")" "$@" >"$log" 2>&1
  local rc=$?
  if [ $rc -eq 0 ]; then
    record "$name ($(tail -1 "$log"))" PASS
  elif [ $rc -eq 77 ] && [ "$gpu" = no ]; then
    record "$name ($(head -1 "$log" | sed 's/^[^:]*: skipped: //' | cut -c1-60))" SKIP
  else
    tail -20 "$log"
    record "$name (exit $rc, see $(basename "$log"))" FAIL
  fi
}

# A step that needs the GPU: SKIP without one. gpu_only_step NAME LOG SECONDS COMMAND...
gpu_only_step() {
  local name=$1 log=$2 secs=$3
  shift 3
  begin
  if [ "$gpu" = no ]; then
    record "$name (no GPU)" SKIP
  elif ! has_time; then
    record "$name (out of time)" SKIP
  elif timeout "$(limit "$secs")" "$@" >"$log" 2>&1; then
    record "$name" PASS
    return 0
  else
    tail -20 "$log"
    record "$name (see $(basename "$log"))" FAIL
  fi
  return 1
}

# 3. conformance on CUDA tensors, in process
if [ -n "$FIXTURES" ]; then
  run_gpu_step "conformance --device cuda" "$LOG/conformance.log" 120 \
    "$bin/tools/conformance/opd-conformance" "$FIXTURES/conformance/public.json" --device cuda
fi
# our own cases for the views of traced graphs (in the tree: no fixtures needed)
run_gpu_step "graph views conformance --device cuda" "$LOG/conformance-graph-ops.log" 60 \
  "$bin/tools/conformance/opd-conformance" tests/fixtures/graph_ops_conformance.json --device cuda
# Each operator family's fixture (tests/fixtures/ops_*.json). A case of an operator without a
# CUDA kernel yet fails with the dispatcher's "Could not run 'aten::X' with arguments from the
# 'CUDA' backend": such cases are counted as not supported, their operators listed in
# unsupported-FAMILY.txt, and do not fail the step; any other failure does.
# family_step FAMILY FIXTURE
family_step() {
  local fixture=$2 name="$1 conformance --device cuda" log="$LOG/conformance-$1.log"
  local unsupported="$LOG/unsupported-$1.txt"
  begin
  if ! has_time; then record "$name (out of time)" SKIP && return; fi
  nogpu timeout "$(limit 60)" "$bin/tools/conformance/opd-conformance" "$fixture" --device cuda \
    >"$log" 2>&1
  local rc=$?
  if [ $rc -eq 77 ] && [ "$gpu" = no ]; then
    record "$name ($(head -1 "$log" | sed 's/^[^:]*: skipped: //' | cut -c1-60))" SKIP
    return
  fi
  local pattern="^FAIL .*Could not run '[^']*' with arguments from the 'CUDA' backend"
  local failed not_supported
  failed=$(grep -c '^FAIL ' "$log")
  not_supported=$(grep -c "$pattern" "$log")
  grep "$pattern" "$log" | sed -n "s/.*Could not run '\([^']*\)'.*/\1/p" | sort -u >"$unsupported"
  if [ $rc -eq 0 ]; then
    record "$name ($(tail -1 "$log"))" PASS
  elif [ $rc -eq 1 ] && [ "$failed" -gt 0 ] && [ "$failed" -eq "$not_supported" ]; then
    record "$name ($(tail -1 "$log"): all $failed not supported, $(wc -l <"$unsupported") operators in $(basename "$unsupported"))" PASS
  else
    tail -20 "$log"
    record "$name (exit $rc, $failed failed, $not_supported of them not supported; see $(basename "$log"))" FAIL
  fi
}
for fixture in tests/fixtures/ops_*.json; do
  family_step "$(basename "$fixture" .json)" "$fixture"
done

# 4. unit suites: all of them on a GPU; without one, only the suites of the device (which
# must skip cleanly), since the others ran no differently under `tools/dev.sh test`
begin
suites='^unit\.'
[ "$gpu" = yes ] || suites='^unit\.(cuda|gpu_server|graph_cuda)$'
if ! has_time; then
  record "unit suites (out of time)" SKIP
else
  nogpu timeout "$(limit 240)" ctest --test-dir "$BUILD" -j"$jobs" -R "$suites" --output-on-failure \
    >"$LOG/ctest.log" 2>&1
  rc=$?
  if [ $rc -eq 0 ]; then
    record "unit suites ($(grep -o 'tests passed.*' "$LOG/ctest.log" | head -1))" PASS
  else
    grep -E 'Failed|\*\*\*' "$LOG/ctest.log" | head -20
    record "unit suites (exit $rc$([ $rc -eq 124 ] && echo ": timed out"), see ctest.log)" FAIL
  fi
fi

# 5. a daemon: RPC checks, conformance through it, NVRTC through opctl, graphs, drain
dir=$(mktemp -d /tmp/opd-gpu-XXXXXX)
nogpu "$bin/server/opd" --listen "unix://$dir/opd.sock" --status "" --admin "$dir/admin.sock" \
  --log-level info >"$LOG/opd.log" 2>&1 &
pid=$!
trap 'kill $pid 2>/dev/null; wait $pid 2>/dev/null; rm -rf "$dir"' EXIT
# up to 30 s: the daemon starts CUDA before it listens, which takes seconds on a GPU
# without persistence mode (the loop ends at once if the daemon exits)
for _ in $(seq 300); do
  [ -S "$dir/admin.sock" ] && [ -S "$dir/opd.sock" ] && break
  kill -0 $pid 2>/dev/null || break
  sleep 0.1
done
url="unix://$dir/opd.sock"
ctl() { "$bin/tools/opctl/opctl" --status "" --admin "$dir/admin.sock" "$@"; }
begin
if [ -S "$dir/opd.sock" ]; then
  record "daemon started ($(grep -o 'cuda:0: .*\|CUDA backend unavailable' "$LOG/opd.log" | head -1))" PASS
else
  tail -5 "$LOG/opd.log"
  record "daemon started (see opd.log)" FAIL
fi

gpu_only_step "RPC checks on CUDA tensors" "$LOG/rpc.log" 60 "$bin/bench/opd-bench-cuda" --rpc-check "$url"

if [ -n "$FIXTURES" ]; then
  run_gpu_step "conformance --server --device cuda" "$LOG/rconf.log" 180 \
    "$bin/tools/conformance/opd-conformance" "$FIXTURES/conformance/public.json" --server "$url" --device cuda
fi

cat >"$dir/twice.cu" <<'EOF'
extern "C" __global__ void twice(float *out, const float *x, long long n) {
  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i < n) out[i] = 2 * x[i];
}
EOF
cat >"$dir/rowmax.cu" <<'EOF'
// rows: one block of 256 threads per row; out = x / max(|x|) of the row
extern "C" __global__ void rowmax_div(float *out, const float *x, long long rows, long long cols) {
  __shared__ float m[256];
  const float *in = x + blockIdx.x * cols;
  float v = 0;
  for (long long c = threadIdx.x; c < cols; c += blockDim.x) v = fmaxf(v, fabsf(in[c]));
  m[threadIdx.x] = v;
  __syncthreads();
  for (int s = blockDim.x / 2; s > 0; s /= 2) {
    if (threadIdx.x < s) m[threadIdx.x] = fmaxf(m[threadIdx.x], m[threadIdx.x + s]);
    __syncthreads();
  }
  for (long long c = threadIdx.x; c < cols; c += blockDim.x) out[blockIdx.x * cols + c] = in[c] / m[0];
}
EOF
printf 'extern "C" __global__ void broken(float *o) { o[0] = undefined_name; }\n' >"$dir/broken.cu"
begin
ctl cuda-register --source "$dir/twice.cu" --entry twice --schema 'gputest::twice(Tensor x) -> Tensor' \
  --launch elementwise >"$LOG/nvrtc-register.log" 2>&1
rc=$?
if ! has_time; then
  record "NVRTC registration through opctl (out of time)" SKIP
elif [ "$gpu" = no ]; then # the admin path answers, without a device
  if [ $rc -eq 1 ] && grep -q "CUDA unavailable" "$LOG/nvrtc-register.log"; then
    record "NVRTC registration through opctl (no GPU: CUDA unavailable)" SKIP
  else
    cat "$LOG/nvrtc-register.log"
    record "NVRTC registration through opctl without a GPU (exit $rc)" FAIL
  fi
else
  nv=PASS
  [ $rc -eq 0 ] || { cat "$LOG/nvrtc-register.log"; nv=FAIL; }
  ctl cuda-register --source "$dir/rowmax.cu" --entry rowmax_div \
    --schema 'gputest::rowmax_div(Tensor x) -> Tensor' --launch rows >"$LOG/nvrtc-rows.log" 2>&1 ||
    { cat "$LOG/nvrtc-rows.log"; nv=FAIL; }
  ctl cuda-register --source "$dir/broken.cu" --entry broken --schema 'gputest::broken(Tensor x) -> Tensor' \
    --launch elementwise >"$LOG/nvrtc-broken.log" 2>&1
  if [ $? -ne 1 ] || ! grep -q "undefined_name" "$LOG/nvrtc-broken.log"; then cat "$LOG/nvrtc-broken.log"; nv=FAIL; fi
  ctl op gputest::broken >/dev/null 2>&1 && nv=FAIL # nothing stays of a failed registration
  if [ $nv = PASS ] && ! timeout "$(limit 60)" "$bin/bench/opd-bench-cuda" --rpc-check "$url" --nvrtc \
    >"$LOG/nvrtc.log" 2>&1; then
    cat "$LOG/nvrtc.log"
    nv=FAIL
  fi
  id=$(sed -n 's/^registered gputest::twice at CUDA: id //p' "$LOG/nvrtc-register.log")
  [ -n "$id" ] && ctl deregister "$id" >/dev/null || nv=FAIL
  record "NVRTC registration through opctl (elementwise, rows, compile error)" $nv
fi

if [ -n "$FIXTURES" ]; then
  graph_bin=$(find "$bin" -name opd-graph-conformance -type f -perm -u+x | head -1)
  run_gpu_step "graph fixture --device cuda" "$LOG/graphs.log" 120 \
    "$graph_bin" "$FIXTURES/graphs/public.json" --device cuda
fi

begin
ctl drain >/dev/null 2>&1
if timeout 30 tail --pid=$pid -f /dev/null && wait $pid; then
  record "daemon drained and exited 0" PASS
else
  tail -5 "$LOG/opd.log"
  record "daemon drained and exited 0 (see opd.log)" FAIL
fi

# 6. benchmarks
if gpu_only_step "benchmarks" "$LOG/bench.log" 240 "$bin/bench/opd-bench-cuda"; then
  echo
  sed -n '/(sm_[0-9]*)$/,$p' "$LOG/bench.log" # the device, then the benchmark table
fi
finish

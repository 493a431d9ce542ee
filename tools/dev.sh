#!/usr/bin/env bash
# dev.sh: set-up, build, test and run opd on a Debian machine (root, or a user with sudo).
#
#   tools/dev.sh run [ARGS]   install what is missing, build (Release) and run the daemon
#                             (build-release/server/opd ARGS; no ARGS: its default config,
#                             tcp://127.0.0.1:7470, status http://127.0.0.1:7471, the admin
#                             socket in $XDG_RUNTIME_DIR; one daemon at a time on these)
#   tools/dev.sh test         install, build (Release) and run the whole test suite
#   tools/dev.sh test asan    the same with AddressSanitizer + UndefinedBehaviorSanitizer
#   tools/dev.sh test tsan    the unit suites with ThreadSanitizer (CPU backend only)
#   tools/dev.sh fuzz [SECONDS [TARGET...]]
#                             build the libFuzzer drivers (clang, ASan+UBSan, build-fuzz) and
#                             run each for SECONDS (60) over its corpus (tests/fuzz/README.md)
#   tools/dev.sh deps         only install the Debian packages
#   tools/dev.sh format       check formatting with the committed .clang-format
set -euo pipefail
cd "$(dirname "$0")/.."

# clang and libclang-rt-14-dev (libFuzzer, the sanitizers' runtimes): the fuzz build only
# python3-yaml, yamllint, haproxy: deploy/validate.py (kubectl, not a Debian package, is
# used where the machine has it)
PACKAGES=(build-essential cmake pkg-config clang-format clang libclang-rt-14-dev python3
  libjansson-dev check libsubunit-dev libopenblas-dev libuv1-dev libprotobuf-c-dev
  protobuf-c-compiler liburcu-dev libhttp-parser-dev chromium jq liblapacke-dev
  python3-dev python3-numpy python3-pytest python3-torch python3-torchvision python3-setuptools
  python3-pip python3-venv libdnnl-dev python3-yaml yamllint haproxy)

as_root() {
  if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi
}

deps() {
  local missing=()
  for p in "${PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  if [ ${#missing[@]} -gt 0 ]; then
    echo "dev.sh: installing ${missing[*]}"
    as_root apt-get update -qq
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
  fi
}

build() { # build DIR [cmake args...]
  local dir=$1
  shift
  cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=Release -DOPD_WERROR=ON "$@" >/dev/null
  cmake --build "$dir" -j"$(nproc)"
}

# The fuzz build: only the drivers and what they link, all instrumented (tests/fuzz/README.md).
build_fuzz() {
  cmake -S . -B build-fuzz -DCMAKE_BUILD_TYPE=Release -DOPD_WERROR=ON -DCMAKE_C_COMPILER=clang -DOPD_FUZZ=ON \
    -DOPD_CUDA=OFF -DOPD_BENCH=OFF >/dev/null
  cmake --build build-fuzz -j"$(nproc)" --target fuzzers
}

format_check() {
  git ls-files '*.c' '*.h' '*.cu' '*.cuh' | xargs clang-format --dry-run -Werror
}

case "${1:-}" in
deps) deps ;;
format) format_check ;;
run)
  deps
  build build-release
  shift
  exec ./build-release/server/opd "$@"
  ;;
test)
  deps
  if [ "${2:-}" = asan ]; then
    build build-asan -DOPD_SANITIZE=ON -DOPD_BENCH=OFF
    # (python.models, whole torchvision models forward and backward, runs on the Release
    # build only: under ASan it alone would take longer than the rest of the suite, and the
    # kernels it runs are checked under ASan by the conformance fixtures and python.opinfo)
    ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
      ctest --test-dir build-asan --output-on-failure -j"$(nproc)" -E '^python[.]models$'
  elif [ "${2:-}" = tsan ]; then
    # (a report fails its suite: the test process exits with TSan's exit code)
    build build-tsan -DOPD_SANITIZE_THREAD=ON -DOPD_BENCH=OFF -DOPD_CUDA=OFF
    TSAN_OPTIONS=second_deadlock_stack=1 \
      ctest --test-dir build-tsan --output-on-failure -j"$(nproc)" -R '^unit[.]'
  else
    build build-release
    ctest --test-dir build-release --output-on-failure -j"$(nproc)"
  fi
  ;;
fuzz)
  deps
  build_fuzz
  shift
  seconds=${1:-60}
  [ $# -gt 0 ] && shift
  tests/fuzz/run_fuzzers.sh build-fuzz "$seconds" "$@"
  ;;
*)
  sed -n '2,15p' "$0"
  exit 2
  ;;
esac

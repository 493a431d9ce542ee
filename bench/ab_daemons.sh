#!/usr/bin/env bash
# Paired A/B of two daemon builds on the tiny call: opd-bench --workload add, 16 connections
# pipelined 64 deep over TCP (the row of bench/run_rpc_bench.sh that the tiny-call ratio is read
# on), daemon and client pinned as there. For a change of a few percent, not for targets.
#
# Why layouts: on the Zen 5 of docs/PERFORMANCE.md, the same daemon with 72 bytes of padding
# ahead of one file's code read 0.97x of itself, and any change moves the code after it. So
# each build's opd is relinked four times with 0, 16, 32 and 48 bytes ahead of all its code
# (CMake's own link command, BUILD/server/CMakeFiles/opd.dir/link.txt, with a padding object
# first), and pair k runs A and B with the same padding, k mod 4, the first of the two
# alternating. It prints each pair's calls/s and B/A, then the median and mean of B/A.
#   bench/ab_daemons.sh BUILD_A BUILD_B [PAIRS (8)] [SECONDS (2)]
# The client is BUILD_B's opd-bench for both. Needs the toolchain that built them (cc).
set -euo pipefail
build_a=${1:?usage: bench/ab_daemons.sh BUILD_A BUILD_B [PAIRS] [SECONDS]}
build_b=${2:?usage: bench/ab_daemons.sh BUILD_A BUILD_B [PAIRS] [SECONDS]}
pairs=${3:-8}
seconds=${4:-2}
server_cpu=${OPD_BENCH_SERVER_CPU:-0}
client_cpu=${OPD_BENCH_CLIENT_CPU:-1}
bench=$(cd "$build_b" && pwd)/bench/opd-bench
[ -x "$bench" ] || { echo "ab_daemons: $bench not found: build first (README.md)" >&2; exit 2; }

tmp=$(mktemp -d /tmp/opd-ab.XXXXXX)
pid=
cleanup() {
  if [ -n "$pid" ]; then kill "$pid" 2>/dev/null || true; fi
  rm -rf "$tmp"
}
trap cleanup EXIT

paddings=(0 16 32 48)
# relink NAME BUILD: $tmp/NAME-P for every padding P
relink() {
  local name=$1 dir
  dir=$(cd "$2/server" && pwd)
  [ -f "$dir/CMakeFiles/opd.dir/link.txt" ] ||
    { echo "ab_daemons: no link command in $dir (a CMake build of opd?)" >&2; exit 2; }
  local cmd
  cmd=$(cat "$dir/CMakeFiles/opd.dir/link.txt")
  [[ "$cmd" == *" -o opd "* ]] || { echo "ab_daemons: unexpected link command in $dir" >&2; exit 2; }
  for p in "${paddings[@]}"; do
    { printf '.section .note.GNU-stack,"",@progbits\n.text\n'
      [ "$p" -eq 0 ] || printf '.skip %d, 0xcc\n' "$p"; } >"$tmp/pad-$p.s"
    cc -c "$tmp/pad-$p.s" -o "$tmp/pad-$p.o"
    # the padding object right after the compiler's name: linked first, ahead of all code
    local out=${cmd/ -o opd / -o $tmp/$name-$p }
    (cd "$dir" && eval "${out%% *} $tmp/pad-$p.o ${out#* }") ||
      { echo "ab_daemons: relinking $dir/opd failed" >&2; exit 1; }
  done
}
relink a "$build_a"
relink b "$build_b"

# run BINARY: the add workload's calls/s against that daemon
run() {
  local log=$tmp/opd.log url
  taskset -c "$server_cpu" "$1" --listen tcp://127.0.0.1:0 --status "" --admin "" --workers 1 \
    2>"$log" &
  pid=$!
  for _ in $(seq 200); do
    grep -q ' ready' "$log" 2>/dev/null && break
    sleep 0.05
  done
  grep -q ' ready' "$log" || { echo "ab_daemons: $1 did not start: $(cat "$log")" >&2; exit 1; }
  url=$(sed -n 's/.*listening on \(tcp:[^ ]*\).*/\1/p' "$log") # port 0 resolved (docs/CONFIG.md)
  taskset -c "$client_cpu" "$bench" --url "$url" --workload add --connections 16 --pipeline 64 \
    --duration "$seconds" --warmup 0.5 | sed -n 's/.*calls_per_s=\([0-9]*\).*/\1/p'
  kill "$pid"
  wait "$pid" 2>/dev/null || true
  pid=
}

ratios=()
for k in $(seq 0 $((pairs - 1))); do
  p=${paddings[$((k % 4))]}
  if [ $((k % 2)) -eq 0 ]; then
    a=$(run "$tmp/a-$p")
    b=$(run "$tmp/b-$p")
  else
    b=$(run "$tmp/b-$p")
    a=$(run "$tmp/a-$p")
  fi
  r=$(awk -v a="$a" -v b="$b" 'BEGIN { printf "%.3f", b / a }')
  ratios+=("$r")
  echo "pair $((k + 1)) padding $p: A $a B $b calls/s  B/A $r"
done
printf '%s\n' "${ratios[@]}" | sort -n |
  awk '{ v[NR] = $1; s += $1 } END {
         m = NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
         printf "B/A over %d pairs: median %.3f, mean %.3f\n", NR, m, s / NR }'

#!/usr/bin/env bash
# run_fuzzers.sh BUILD_DIR SECONDS [TARGET...]: runs each libFuzzer driver of tests/fuzz (all of
# them by default) for SECONDS over its committed corpus (tests/fuzz/corpus/TARGET, regression
# inputs included) with its dictionary, two at a time, and prints a table. Any crash, leak,
# undefined behaviour, input that runs past 10 s or process past 2 GiB fails the run (exit 1);
# what failed is in BUILD_DIR/fuzz/TARGET.log with the input in BUILD_DIR/fuzz/TARGET-crash-*
# (or -leak-, -timeout-, -oom-). New inputs the fuzzers found go to BUILD_DIR/fuzz/TARGET/, to
# merge into the corpus (tests/fuzz/README.md). BUILD_DIR is a build with -DOPD_FUZZ=ON.
set -uo pipefail
if [ $# -lt 2 ]; then
  sed -n '2,8p' "$0"
  exit 2
fi
build=$1
seconds=$2
shift 2
src=$(cd "$(dirname "$0")" && pwd)
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(request upload session graph graph_sessions admin status schema config client)
out=$build/fuzz
mkdir -p "$out"

run_one() { # TARGET: its exit status in $out/TARGET.rc
  local t=$1 dict=()
  local exe=$build/tests/fuzz/fuzz_$t
  [ -f "$src/dict/$t.dict" ] && dict=(-dict="$src/dict/$t.dict")
  [ "$t" = request ] || [ "$t" = graph ] || [ "$t" = graph_sessions ] && dict=(-dict="$src/dict/session.dict")
  rm -f "$out/$t"-crash-* "$out/$t"-leak-* "$out/$t"-timeout-* "$out/$t"-oom-*
  mkdir -p "$out/$t"
  UBSAN_OPTIONS=print_stacktrace=1 "$exe" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
    -print_final_stats=1 -artifact_prefix="$out/$t-" "${dict[@]}" "$out/$t" "$src/corpus/$t" \
    >"$out/$t.log" 2>&1
  echo $? >"$out/$t.rc"
}

start=$(date +%s)
running=0
for t in "${targets[@]}"; do
  if [ ! -x "$build/tests/fuzz/fuzz_$t" ]; then
    echo "run_fuzzers.sh: no $build/tests/fuzz/fuzz_$t (build with -DOPD_FUZZ=ON --target fuzzers)"
    exit 2
  fi
  if [ $running -ge 2 ]; then
    wait -n
    running=$((running - 1))
  fi
  run_one "$t" &
  running=$((running + 1))
done
wait

failed=0
printf '%-14s %10s %9s %7s %7s %6s  %s\n' target runs exec/s cov corpus new result
for t in "${targets[@]}"; do
  log=$out/$t.log rc=$(cat "$out/$t.rc" 2>/dev/null || echo 1)
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  speed=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
  cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1 | cut -d' ' -f2)
  corpus=$(grep -o 'corp: [0-9]*' "$log" | tail -1 | cut -d' ' -f2)
  new=$(find "$out/$t" -type f | wc -l)
  result=ok
  if [ "$rc" != 0 ]; then
    failed=1
    artifact=$(ls "$out/$t"-* 2>/dev/null | head -1)
    result="FAILED (exit $rc): ${artifact:-see $log}"
  fi
  printf '%-14s %10s %9s %7s %7s %6s  %s\n' "$t" "${runs:--}" "${speed:--}" "${cov:--}" \
    "${corpus:--}" "$new" "$result"
done
echo "run_fuzzers.sh: ${#targets[@]} fuzzers, $seconds s each, $(($(date +%s) - start)) s in all"
if [ $failed != 0 ]; then
  for t in "${targets[@]}"; do
    [ "$(cat "$out/$t.rc" 2>/dev/null)" = 0 ] && continue
    echo "---- $t ($out/$t.log, last lines)"
    tail -40 "$out/$t.log"
  done
fi
exit $failed

#!/usr/bin/env bash
# graph_daemon.sh: the graph fixture replayed through a daemon. Starts the `opd` daemon on a
# Unix socket and an ephemeral TCP port (read back from its "listening on" log line) and
# replays the fixture against each listener (opd-graph-conformance --server URL: parameters
# uploaded once, each graph defined twice through the client's boxed builder, run, outputs
# downloaded and compared). Every graph of the fixture must pass: outputs within tolerance,
# the second define a cache hit, the softmax pattern count exact and the kernels at most
# max_kernels (the runner judges each; the report is read back here to check the counts
# once more against the fixture). --device cuda must pass or be skipped (status 77) when the
# daemon has no usable CUDA device. Then the daemon is stopped with SIGTERM and must exit 0.
#   tests/graph_daemon.sh OPD OPD_GRAPH_CONFORMANCE FIXTURE.json
set -euo pipefail
if [ $# -ne 3 ]; then
  echo "usage: $0 OPD OPD_GRAPH_CONFORMANCE FIXTURE.json" >&2
  exit 2
fi
opd=$1
runner=$2
fixture=$3

tmp=$(mktemp -d /tmp/opd-graph-daemon.XXXXXX)
pid=
cleanup() {
  if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then kill -KILL "$pid" 2>/dev/null || true; fi
  rm -rf "$tmp"
}
trap cleanup EXIT

fail() {
  echo "graph_daemon: FAIL: $*" >&2
  if [ -s "$tmp/opd.log" ]; then
    echo "--- daemon log ---" >&2
    tail -n 40 "$tmp/opd.log" >&2
  fi
  exit 1
}

total=$(jq '.graphs | length' "$fixture")
[ "$total" -gt 0 ] || fail "no graphs in $fixture"

sock="$tmp/opd.sock"
# no benefit check (graph_benefit_runs 0): the kernel counts checked here must not follow
# timings (docs/CONFIG.md)
"$opd" --listen "unix://$sock" --listen tcp://127.0.0.1:0 --workers 2 --log-level info \
  --graph-benefit-runs 0 \
  --status "" --admin "" 2>"$tmp/opd.log" &
pid=$!
tcp=
for _ in $(seq 200); do
  if grep -q ' ready' "$tmp/opd.log" 2>/dev/null; then
    tcp=$(sed -nE 's/.*listening on (tcp:\/\/[^ ]+).*/\1/p' "$tmp/opd.log" | head -n 1)
    break
  fi
  kill -0 "$pid" 2>/dev/null || fail "the daemon exited at start"
  sleep 0.05
done
[ -S "$sock" ] || fail "no socket $sock after 10 s"
[ -n "$tcp" ] || fail "no TCP listener in the daemon's log"

for url in "unix://$sock" "$tcp"; do
  status=0
  "$runner" "$fixture" --server "$url" --report "$tmp/report.json" >"$tmp/run.out" 2>&1 || status=$?
  last=$(tail -n 1 "$tmp/run.out")
  if [ "$status" -ne 0 ] || [ "$last" != "$total passed, 0 failed" ]; then
    grep -E '^FAIL' "$tmp/run.out" | head -n 20 >&2 || true
    fail "$url: '$last' (status $status), expected '$total passed, 0 failed'"
  fi
  # the report against the fixture: every graph, its pattern count exact, kernels bounded
  bad=$(jq -n --slurpfile r "$tmp/report.json" --slurpfile f "$fixture" '
    ($f[0].graphs | map({key: .id, value: .expect}) | from_entries) as $e
    | $r[0].graphs
    | map(select(.outputs_ok != true or .cache != "hit"
                 or .patterns.softmax != $e[.id].patterns.softmax
                 or .kernels > $e[.id].max_kernels) | .id)
    | if length == 0 and ($r[0].graphs | length) == ($f[0].graphs | length) then empty
      else . end')
  [ -z "$bad" ] || fail "$url: the report disagrees with the fixture for: $bad"
  echo "over $url: $last"
done

# CUDA through the daemon: passes where it has a GPU, skipped (77) where it has none
status=0
"$runner" "$fixture" --server "unix://$sock" --device cuda >"$tmp/cuda.out" 2>&1 || status=$?
case $status in
0) [ "$(tail -n 1 "$tmp/cuda.out")" = "$total passed, 0 failed" ] ||
  fail "--device cuda: $(tail -n 1 "$tmp/cuda.out")" ;;
77) grep -q 'SKIP (no usable CUDA device)' "$tmp/cuda.out" ||
  fail "--device cuda: status 77 without saying why: $(cat "$tmp/cuda.out")" ;;
*) fail "--device cuda: status $status: $(tail -n 5 "$tmp/cuda.out")" ;;
esac
echo "--device cuda: status $status"

kill -TERM "$pid"
status=0
wait "$pid" || status=$?
pid=
[ "$status" -eq 0 ] || fail "the daemon exited with status $status after SIGTERM"
echo "daemon drained and exited 0"

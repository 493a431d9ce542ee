#!/usr/bin/env bash
# client_examples.sh: the client's example programs (client/examples/) run against a daemon.
# Starts `opd` on a temporary Unix socket, runs each example with the socket's URL and
# requires exit status 0 and the line the example prints on success: hello_add's sum,
# graph_softmax's "3 runs: outputs match" after one softmax pattern was found; then stops
# the daemon with SIGTERM (exit status 0).
#   tests/client_examples.sh OPD HELLO_ADD GRAPH_SOFTMAX
set -euo pipefail
if [ $# -ne 3 ]; then
  echo "usage: $0 OPD HELLO_ADD GRAPH_SOFTMAX" >&2
  exit 2
fi
opd=$1
hello_add=$2
graph_softmax=$3

tmp=$(mktemp -d /tmp/opd-client-examples.XXXXXX)
pid=
cleanup() {
  if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then kill -KILL "$pid" 2>/dev/null || true; fi
  rm -rf "$tmp"
}
trap cleanup EXIT
fail() {
  echo "client_examples: FAIL: $*" >&2
  [ -s "$tmp/opd.log" ] && tail -n 20 "$tmp/opd.log" >&2
  exit 1
}

sock="$tmp/opd.sock"
"$opd" --listen "unix://$sock" --workers 2 --status "" --admin "" 2>"$tmp/opd.log" &
pid=$!
for _ in $(seq 200); do
  grep -q ' ready' "$tmp/opd.log" 2>/dev/null && break
  kill -0 "$pid" 2>/dev/null || fail "the daemon exited at start"
  sleep 0.05
done
[ -S "$sock" ] || fail "no socket $sock after 10 s"

# example expected-line
run() {
  local status=0
  "$1" "unix://$sock" >"$tmp/out" 2>&1 || status=$?
  [ "$status" -eq 0 ] || fail "$(basename "$1"): exit status $status: $(cat "$tmp/out")"
  grep -qF -- "$2" "$tmp/out" || fail "$(basename "$1"): no '$2' in: $(cat "$tmp/out")"
  echo "$(basename "$1"): ok"
}
run "$hello_add" "    11.0   22.0   33.0"
run "$graph_softmax" "1 softmax pattern(s)"
grep -qF "3 runs: outputs match" "$tmp/out" || fail "graph_softmax: $(cat "$tmp/out")"
# a second process defines the same graph: the daemon's cache has it
run "$graph_softmax" "(cached)"

kill -TERM "$pid"
status=0
wait "$pid" || status=$?
pid=
[ "$status" -eq 0 ] || fail "the daemon exited with status $status after SIGTERM"

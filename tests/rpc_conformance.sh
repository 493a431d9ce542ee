#!/usr/bin/env bash
# rpc_conformance.sh: the conformance fixture replayed over RPC. Runs opd-conformance in
# process, then starts the `opd` daemon on a Unix socket and an ephemeral TCP port (read back
# from its "listening on" log line), replays the fixture against each listener
# (opd-conformance --server URL: uploads, boxed calls through the client library,
# downloads), requires the same pass and fail counts as in process, then stops the daemon
# with SIGTERM and requires a graceful exit (status 0, the socket removed). On the way it
# checks the daemon's command line: an abbreviated flag, an address of the wrong scheme and
# a second daemon on the first one's port are refused with exit status 2 and the reason.
#   tests/rpc_conformance.sh OPD OPD_CONFORMANCE FIXTURE.json
set -euo pipefail
if [ $# -ne 3 ]; then
  echo "usage: $0 OPD OPD_CONFORMANCE FIXTURE.json" >&2
  exit 2
fi
opd=$1
conformance=$2
fixture=$3

tmp=$(mktemp -d /tmp/opd-rpc-conformance.XXXXXX)
pid=
cleanup() {
  if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then kill -KILL "$pid" 2>/dev/null || true; fi
  rm -rf "$tmp"
}
trap cleanup EXIT

fail() {
  echo "rpc_conformance: FAIL: $*" >&2
  if [ -s "$tmp/opd.log" ]; then
    echo "--- daemon log ---" >&2
    tail -n 40 "$tmp/opd.log" >&2
  fi
  exit 1
}

# "N passed, M failed" from a run's output (its last such line).
counts() {
  grep -E '^[0-9]+ passed, [0-9]+ failed' "$1" | tail -n 1 | sed -E 's/^([0-9]+) passed, ([0-9]+) failed.*/\1 \2/'
}

# in process: the reference (its exit status is 1 while some case fails; the counts matter)
"$conformance" "$fixture" >"$tmp/inproc.out" 2>&1 || true
ref=$(counts "$tmp/inproc.out")
[ -n "$ref" ] || fail "no result line from the in-process run: $(tail -n 3 "$tmp/inproc.out")"
echo "in process: ${ref% *} passed, ${ref#* } failed"

# refused: exit status 2 and the message on stderr (a daemon that starts instead is stopped)
refused() { # expected-message args...
  local want=$1 status=0
  shift
  timeout 10 "$opd" "$@" 2>"$tmp/err" >/dev/null || status=$?
  [ "$status" -eq 2 ] || fail "opd $*: exit status $status, not 2: $(cat "$tmp/err")"
  grep -qF -- "$want" "$tmp/err" || fail "opd $*: '$(cat "$tmp/err")' lacks '$want'"
}
refused "unknown option '--cuda-work' (did you mean --cuda-workers-per-device?)" --cuda-work 2 \
  --listen tcp://127.0.0.1:0 --status "" --admin ""
refused "unknown option '--work' (did you mean --workers or --worker-nice?)" --work 2 \
  --listen tcp://127.0.0.1:0 --status "" --admin ""
refused "'admin' must be unix:///PATH or a path; tcp:// addresses are for listen, admin_tcp" \
  --listen tcp://127.0.0.1:0 --admin tcp://127.0.0.1:1

sock="$tmp/opd.sock"
"$opd" --listen "unix://$sock" --listen tcp://127.0.0.1:0 --workers 2 --log-level info \
  --status "" --admin "" \
  2>"$tmp/opd.log" &
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
refused "cannot listen on $tcp: address already in use" --listen "$tcp" --status "" --admin ""

for url in "unix://$sock" "$tcp"; do
  status=0
  "$conformance" "$fixture" --server "$url" >"$tmp/rpc.out" 2>&1 || status=$?
  got=$(counts "$tmp/rpc.out")
  [ -n "$got" ] || fail "$url: no result line (status $status): $(tail -n 3 "$tmp/rpc.out")"
  grep -q '(connection lost)' "$tmp/rpc.out" && fail "$url: the connection was lost"
  echo "over $url: ${got% *} passed, ${got#* } failed"
  if [ "$got" != "$ref" ]; then
    grep -E '^FAIL' "$tmp/rpc.out" | head -n 20 >&2 || true
    fail "$url: '$got' (passed failed) differs from in process '$ref'"
  fi
done

kill -TERM "$pid"
status=0
wait "$pid" || status=$?
pid=
[ "$status" -eq 0 ] || fail "the daemon exited with status $status after SIGTERM"
[ ! -e "$sock" ] || fail "the socket $sock was not removed"
grep -q 'stopped' "$tmp/opd.log" || fail "the daemon did not log its drain"
echo "daemon drained and exited 0"

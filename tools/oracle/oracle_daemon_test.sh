#!/bin/sh
# oracle_daemon_test.sh OPD ORACLE PLUGIN FIXTURE: replays FIXTURE through a daemon started
# on temporary sockets and a free port (opd-oracle-dispatch --server/--admin/--status, with
# the marker plugin PLUGIN from --plugin-dir) and checks that it passes exactly the checks
# the in-process replay passes among those the daemon replay makes; the daemon must then
# stop on SIGTERM with exit status 0. The daemon is given URLs (--status http://...,
# --admin unix://...) and the replay the bare forms, and the daemon's log must name every
# listener with its URL.
set -u
OPD=$1 ORACLE=$2 PLUGIN=$3 FIXTURE=$4
dir=$(mktemp -d /tmp/oracle-daemon-XXXXXX)
pid=
trap '[ -n "$pid" ] && kill $pid 2>/dev/null; rm -rf "$dir"' EXIT
fail() { echo "FAIL: $*"; cat "$dir/log"; exit 1; }
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
"$OPD" --listen "unix://$dir/opd.sock" --status "http://127.0.0.1:$port" \
  --admin "unix://$dir/admin.sock" --plugin-dir "$(dirname "$PLUGIN")" >"$dir/log" 2>&1 &
pid=$!
i=0
while [ ! -S "$dir/admin.sock" ] || [ ! -S "$dir/opd.sock" ]; do
  i=$((i + 1))
  [ $i -gt 100 ] && fail "the daemon did not start"
  sleep 0.1
done
i=0
until grep -q ' ready' "$dir/log"; do
  i=$((i + 1))
  [ $i -gt 100 ] && fail "the daemon did not log that it is ready"
  sleep 0.1
done
for line in "listening on unix://$dir/opd.sock" "admin listener on unix://$dir/admin.sock" \
  "status endpoint on http://127.0.0.1:$port/"; do
  grep -qF "info: $line" "$dir/log" || fail "the log lacks '$line'"
done
# the admin requests the replay uses, refused when malformed (docs/ADMIN.md)
python3 - "$dir/admin.sock" <<'PY' || fail "admin refusals"
import json, socket, struct, sys
s = socket.socket(socket.AF_UNIX)
s.connect(sys.argv[1])
def ask(req):
    b = json.dumps(req).encode()
    s.sendall(struct.pack(">I", len(b)) + b)
    n = struct.unpack(">I", s.recv(4, socket.MSG_WAITALL))[0]
    return json.loads(s.recv(n, socket.MSG_WAITALL))
def refused(req, codes=("EINVAL",)):
    r = ask(req)
    assert not r["ok"] and r["code"] in codes, (req, r)
refused({"op": "def", "namespace": "oracle_t", "schema": "f(Tensor a -> Tensor"}, ["ESCHEMA"])
refused({"op": "def", "namespace": "oracle_t", "schema": "f(" + "Tensor a, " * 6000}, ["ESCHEMA"])
refused({"op": "def", "namespace": "bad ns", "schema": "f(Tensor a) -> Tensor"}, ["ESCHEMA", "EINVAL"])
refused({"op": "def", "namespace": "oracle_t"})
r = ask({"op": "def", "namespace": "oracle_t", "schema": "f(Tensor a) -> Tensor"})
assert r["ok"] and r["id"] > 0, r
refused({"op": "def", "namespace": "oracle_t", "schema": "f(Tensor a) -> Tensor"}, ["EEXIST"])
refused({"op": "register", "name": "oracle_t::f", "key": "CPU", "fallthrough": True, "data": "k1"})
refused({"op": "register", "name": "oracle_t::f", "key": "CPU", "kernel_of": 1, "data": 5})
refused({"op": "register_fallback", "key": "CPU"})
refused({"op": "register_fallback", "key": "NoSuchKey", "fallthrough": True})
assert ask({"op": "deregister", "id": r["id"]})["ok"]
PY
"$ORACLE" "$FIXTURE" >"$dir/local" || fail "in-process replay: $(tail -3 "$dir/local")"
# wrong schemes are refused before anything runs
"$ORACLE" "$FIXTURE" --server "unix://$dir/opd.sock" --admin "tcp://127.0.0.1:1" \
  --status "127.0.0.1:$port" >"$dir/err" 2>&1 && fail "--admin tcp:// was accepted"
grep -q "expected unix:///PATH or a path" "$dir/err" || fail "--admin tcp://: $(cat "$dir/err")"
"$ORACLE" "$FIXTURE" --server "unix://$dir/opd.sock" --admin "$dir/admin.sock" \
  --status "tcp://127.0.0.1:$port" >"$dir/err" 2>&1 && fail "--status tcp:// was accepted"
grep -q "expected http://HOST:PORT or HOST:PORT" "$dir/err" || fail "--status tcp://: $(cat "$dir/err")"
"$ORACLE" "$FIXTURE" --server "unix://$dir/opd.sock" --admin "$dir/admin.sock" \
  --status "127.0.0.1:$port" --plugin "$(basename "$PLUGIN")" >"$dir/daemon" 2>&1 ||
  { cat "$dir/daemon"; fail "daemon replay"; }
cat "$dir/daemon"
want=$(sed -n 's/^the daemon replay.s checks .*: \([0-9]*\) passed, \([0-9]*\) failed$/\1 \2/p' "$dir/local")
got=$(tail -1 "$dir/daemon" | sed -n 's/^\([0-9]*\) passed, \([0-9]*\) failed$/\1 \2/p')
echo "in process (the same checks): $want; through the daemon: $got"
[ -n "$want" ] && [ "$want" = "$got" ] || fail "pass counts differ"
kill -TERM $pid
wait $pid
rc=$?
pid=
[ $rc -eq 0 ] || fail "the daemon exited with status $rc"
echo PASS

#!/bin/sh
# status_page_test.sh OPD_BINARY: loads the status page (docs/STATUS.md) in headless
# Chromium against a running opd and checks the drawn dispatch grid of aten::add.Tensor
# (check_grid.py). Prints "SKIP: ..." and exits 0 when chromium is not installed.
set -eu
opd=${1:?usage: status_page_test.sh OPD_BINARY}
here=$(cd "$(dirname "$0")" && pwd)
chromium=$(command -v chromium || command -v chromium-browser || true)
if [ -z "$chromium" ]; then
  echo "SKIP: chromium is not installed (apt-get install chromium)"
  exit 0
fi
work=$(mktemp -d)
pid=
cleanup() {
  [ -n "$pid" ] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT INT TERM

"$opd" --listen tcp://127.0.0.1:0 --status 127.0.0.1:0 --admin "" --log-level info 2>"$work/opd.log" &
pid=$!
addr=
for _ in $(seq 100); do
  addr=$(sed -n 's|.*status endpoint on http://\([^/]*\)/.*|\1|p' "$work/opd.log" | head -n 1)
  [ -n "$addr" ] && break
  kill -0 "$pid" 2>/dev/null || { cat "$work/opd.log"; echo "FAIL: opd did not start"; exit 1; }
  sleep 0.1
done
[ -n "$addr" ] || { cat "$work/opd.log"; echo "FAIL: no status address in the log"; exit 1; }

timeout 60 "$chromium" --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
  --disable-background-networking --disable-component-update --disable-sync \
  --disable-dev-shm-usage --user-data-dir="$work/profile" --virtual-time-budget=10000 \
  --dump-dom "http://$addr/?op=aten%3A%3Aadd.Tensor" >"$work/dom.html" 2>"$work/chromium.log" || {
  tail -n 20 "$work/chromium.log"
  echo "FAIL: chromium failed"
  exit 1
}
python3 "$here/check_grid.py" "$work/dom.html" "http://$addr"

#!/bin/sh
# opctl_test.sh OPD OPCTL PLUGIN GRAPH_EXAMPLE: opctl against a running daemon (docs/ADMIN.md): status,
# ops, op tables, plugins, load / register / deregister / unload, refusals and their exit
# status, a built-in registration removed only with --force, the address forms (--admin
# unix:///PATH, tcp://HOST:PORT and a bare path; --status http://HOST:PORT and a bare
# HOST:PORT; other schemes refused), the errors for a missing daemon and a wrong token, graphs
# (a graph the client example defines listed by graphs, its passes' IR by graph ID; a pass
# disabled by graph-pass gives another compiled graph, enabling it brings the first back from
# the cache), set-priority's errors, and drain.
set -u
OPD=$1 OPCTL=$2 PLUGIN=$3 GRAPH_EXAMPLE=$4
dir=$(mktemp -d /tmp/opctl-test-XXXXXX)
trap 'kill $pid 2>/dev/null; rm -rf "$dir"' EXIT
mkdir "$dir/plugins"
cp "$PLUGIN" "$dir/plugins/scaled_add.so"
printf 'the-token\n' >"$dir/token"
printf 'wrong\n' >"$dir/wrong"
# the TCP admin and status ports are chosen here: others are tried when they are taken
for attempt in 1 2 3 4 5; do
  port=$((30000 + ($$ + attempt * 997) % 20000)) sport=$((port + 1))
  "$OPD" --listen tcp://127.0.0.1:0 --listen "unix://$dir/opd.sock" --status 127.0.0.1:$sport \
    --admin "$dir/admin.sock" \
    --admin-tcp 127.0.0.1:$port --admin-token-file "$dir/token" \
    --plugin-dir "$dir/plugins" >"$dir/log" 2>&1 &
  pid=$!
  for i in 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20; do
    [ -S "$dir/admin.sock" ] && break
    kill -0 $pid 2>/dev/null || break
    sleep 0.2
  done
  [ -S "$dir/admin.sock" ] && break
done
fail() { echo "FAIL: $*"; cat "$dir/log"; exit 1; }
ctl() { "$OPCTL" --status "" --admin "$dir/admin.sock" "$@"; }

ctl status | grep -q "opd " || fail "status"
ctl ops | grep -qx "aten::add.Tensor" || fail "ops"
ctl op aten::add.Tensor | grep -q "^  CPU  *CPU  *opd__cpu_add_tensor" || fail "op table"
ctl op aten::add.Tensor --json | grep -q '"table"' || fail "op --json"
ctl op no::such_op 2>"$dir/err"; [ $? -eq 1 ] && grep -q "unknown operator" "$dir/err" || fail "unknown op"
ctl load-plugin scaled_add.so | grep -q "^loaded; registrations \[" || fail "load-plugin"
ctl load-plugin ../token 2>/dev/null && fail "a path was loaded"
ctl plugins | grep -q "scaled_add.so" || fail "plugins"
cpu=$(ctl op myops::scaled_add | awk '$2 == "impl" && $3 == "CPU" {print $1}')
[ -n "$cpu" ] || fail "no CPU registration id"
id=$(ctl register myops::scaled_add Meta --kernel-of "$cpu" | sed -n 's/^registered: id //p')
[ -n "$id" ] || fail "register"
ctl op myops::scaled_add | grep -q "^  Meta  *Meta  *scaled_add_cpu \[$id\]" || fail "Meta slot"
ctl unload-plugin scaled_add.so 2>"$dir/err"; [ $? -eq 1 ] && grep -q "EBUSY" "$dir/err" || fail "busy"
ctl deregister "$id" | grep -q deregistered || fail "deregister"
ctl deregister "$id" 2>/dev/null && fail "deregistered twice"
# a built-in registration: refused without --force (the message says so), removed with it
mul=$(ctl op aten::mul.Tensor | awk '$2 == "impl" && $3 == "CPU" {print $1}')
[ -n "$mul" ] || fail "no CPU registration of aten::mul.Tensor"
ctl deregister "$mul" 2>"$dir/err"; [ $? -eq 1 ] && grep -q -- "--force" "$dir/err" || fail "built-in without --force"
ctl op aten::mul.Tensor | grep -q "^ *$mul  *impl  *CPU " || fail "built-in removed without --force"
ctl deregister --force "$mul" | grep -q deregistered || fail "deregister --force"
ctl op aten::mul.Tensor | grep -q "^ *$mul  *impl " && fail "built-in kept with --force"
ctl load-plugin scaled_add.so --force 2>/dev/null; [ $? -eq 2 ] || fail "--force outside deregister"
# the address forms
"$OPCTL" --status "" --admin "unix://$dir/admin.sock" plugins | grep -q scaled_add.so || fail "--admin unix://"
"$OPCTL" --status "" --admin "tcp://127.0.0.1:$port" --token-file "$dir/token" plugins |
  grep -q scaled_add.so || fail "--admin tcp://"
"$OPCTL" --status "" --admin "tcp://127.0.0.1:$port" plugins 2>/dev/null; [ $? -eq 2 ] || fail "tcp:// without a token"
"$OPCTL" --status "http://127.0.0.1:$sport" --admin "$dir/none.sock" status | grep -q "^opd .*, up " ||
  fail "--status http://"
"$OPCTL" --status "127.0.0.1:$sport/" --admin "$dir/none.sock" ops | grep -qx "aten::add.Tensor" ||
  fail "--status HOST:PORT"
for bad in "--admin http://127.0.0.1:$port" "--admin unix://" "--status tcp://127.0.0.1:$sport" \
  "--status https://127.0.0.1:$sport" "--status 127.0.0.1:0" "--admin-tcp 127.0.0.1"; do
  # shellcheck disable=SC2086 # the option and its value are two words
  "$OPCTL" $bad --token-file "$dir/token" status 2>"$dir/err"
  [ $? -eq 2 ] && grep -q "expected" "$dir/err" || fail "address refused: $bad"
done
"$OPCTL" --status "" --admin "$dir/none.sock" status 2>"$dir/err"
[ $? -eq 3 ] && grep -q "cannot connect to the daemon's admin socket" "$dir/err" || fail "no daemon"
"$OPCTL" --status "" --admin-tcp 127.0.0.1:$port --token-file "$dir/wrong" plugins 2>"$dir/err"
[ $? -eq 1 ] && grep -q "refused the admin token" "$dir/err" || fail "wrong token"
"$OPCTL" --status "" --admin-tcp 127.0.0.1:$port --token-file "$dir/token" plugins |
  grep -q scaled_add.so || fail "token"
printf 'extern "C" __global__ void twice(float *o, const float *x, long long n) {\n  long long i = blockIdx.x * 256LL + threadIdx.x;\n  if (i < n) o[i] = 2 * x[i];\n}\n' >"$dir/twice.cu"
ctl cuda-register --source "$dir/twice.cu" --entry twice --schema 'ctltest::twice(Tensor x) -> Tensor' \
  --launch elementwise >"$dir/out" 2>"$dir/err"
case $? in # without a device (CI): refused, saying why; with one: registered
0) grep -q "^registered ctltest::twice at CUDA: id " "$dir/out" || fail "cuda-register" ;;
1) grep -q "CUDA unavailable: " "$dir/err" || fail "cuda-register without a device" ;;
*) fail "cuda-register exit status" ;;
esac
ctl cuda-register --source "$dir/twice.cu" --entry twice 2>/dev/null; [ $? -eq 2 ] || fail "cuda-register usage"
# graphs: the example's graph (4 nodes, 2 after the passes, one softmax pattern)
sctl() { "$OPCTL" --status "127.0.0.1:$sport" --admin "$dir/admin.sock" "$@"; }
"$GRAPH_EXAMPLE" "unix://$dir/opd.sock" >"$dir/out" 2>&1 || fail "graph example: $(cat "$dir/out")"
sctl graphs | grep -Eq "^ +1 +[0-9a-f]{16} +4 +2 +2 +3 +0 " || fail "graphs: $(sctl graphs)"
sctl graphs | grep -q "1 misses.*disabled passes \[\]" || fail "graphs' counters"
sctl graph 1 | grep -q "^--- after softmax_pattern (version 1, 1 hits)" || fail "graph 1"
sctl graph 1 | grep -q "aten::_softmax" || fail "graph 1's IR"
sctl graph 1 --json | grep -q '"passes"' || fail "graph --json"
sctl graph 99 2>"$dir/err"; [ $? -eq 1 ] && grep -q "no graph 99" "$dir/err" || fail "graph 99"
sctl graph x 2>/dev/null; [ $? -eq 2 ] || fail "graph x"
ctl graph-pass softmax_pattern off | grep -qx disabled || fail "graph-pass off"
sctl graphs | grep -q 'disabled passes \["softmax_pattern"\]' || fail "disabled passes listed"
sctl graphs | grep -q "^C tier: off (graph_cc_dir)" || fail "the C tier listed as off"
"$GRAPH_EXAMPLE" "unix://$dir/opd.sock" >"$dir/out" 2>&1 || fail "graph example without the pass"
grep -q "0 softmax pattern(s)" "$dir/out" && ! grep -q "(cached)" "$dir/out" ||
  fail "a disabled pass gives another graph: $(cat "$dir/out")"
ctl graph-pass softmax_pattern on | grep -qx enabled || fail "graph-pass on"
"$GRAPH_EXAMPLE" "unix://$dir/opd.sock" >"$dir/out" 2>&1 || fail "graph example with the pass"
grep -q "1 softmax pattern(s).*(cached)" "$dir/out" || fail "the first graph is back: $(cat "$dir/out")"
ctl graph-pass no_such_pass off 2>"$dir/err"; [ $? -eq 1 ] && grep -q "no graph pass 'no_such_pass'" "$dir/err" ||
  fail "graph-pass of an unknown pass"
ctl graph-pass softmax_pattern maybe 2>/dev/null; [ $? -eq 2 ] || fail "graph-pass usage"
# set-priority: no session is open now (the examples have left); wrong ids and classes are usage
# errors (the daemon's side, with a session, is test_sched.c's test_priority_from_admin)
ctl set-priority 1 high 2>"$dir/err"; [ $? -eq 1 ] && grep -q "no open session 1" "$dir/err" ||
  fail "set-priority of no session: $(cat "$dir/err")"
ctl set-priority 1 urgent 2>/dev/null; [ $? -eq 2 ] || fail "set-priority of no class"
ctl set-priority x high 2>/dev/null; [ $? -eq 2 ] || fail "set-priority of no id"
ctl drain | grep -q draining || fail "drain"
wait $pid || fail "exit status"
echo PASS

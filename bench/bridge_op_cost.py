#!/usr/bin/env python3
"""The client CPU cost of an OpdTensor operation against the same local torch operation.

    bench/bridge_op_cost.py [--opd BUILD/server/opd] [--rounds 5] [--n 20000]
                            [--server-cpu 0] [--client-cpu 1] [--no-gpt2]

Starts its own daemon (one worker, pinned to --server-cpu) and pins itself to --client-cpu,
then for each operation (add, mul, relu and a small matmul on small float32 tensors) times, in
the same process and interleaved round by round:
  - local: the operation on local CPU tensors (process CPU time per op);
  - remote: the same operation on OpdTensors, sent without waiting (the client's process CPU
    time per op, which is what the bridge costs the program; the daemon runs on its own CPU);
  - chained: y = op(y) on an OpdTensor, each input the previous result still in flight, up to
    the result brought back: the client's CPU per op (chained) and the wall time per op
    (chained_wall), which is bound by one daemon round trip per op (a call cannot name a
    result the daemon has not answered yet: docs/PYTHON.md, the request engine).
Medians over the rounds are printed, with remote / local. With the GPT-2 block (on by default):
the block of client/python/tests/torch_models.py, eager against op by op through
opd.torch.remote (wall time per forward, result brought back with .cpu()), and the client's
CPU per forward. Run it on a machine at rest: the figures are times, not counts.
PYTHONPATH must hold the built package (BUILD/python)."""
import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def start_daemon(exe, cpu):
    log = tempfile.NamedTemporaryFile("w+", prefix="opd-bridge-bench-", suffix=".log")
    cmd = [exe, "--listen", "tcp://127.0.0.1:0", "--status", "", "--admin", "", "--workers", "1"]
    if cpu is not None:
        cmd = ["taskset", "-c", str(cpu)] + cmd
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=log)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        log.seek(0)
        text = log.read()
        m = re.search(r"listening on (tcp://\S+)", text)
        if m and " ready" in text:
            return proc, m.group(1), log
        if proc.poll() is not None:
            sys.exit(f"bridge_op_cost: opd exited: {text}")
        time.sleep(0.05)
    proc.kill()
    sys.exit("bridge_op_cost: opd did not start in 30 s")


def cpu_per_op(fn, n):
    """Process CPU seconds per call of fn over n calls, in microseconds."""
    t0 = time.process_time()
    for _ in range(n):
        fn()
    return (time.process_time() - t0) / n * 1e6


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--opd", default=os.path.join(HERE, "..", "build-release", "server", "opd"))
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--n", type=int, default=20000, help="operations per timing")
    ap.add_argument("--server-cpu", type=int, default=0)
    ap.add_argument("--client-cpu", type=int, default=1)
    ap.add_argument("--no-gpt2", action="store_true")
    args = ap.parse_args()

    import torch
    import opd
    import opd.torch

    torch.set_num_threads(1)
    if args.client_cpu is not None:
        os.sched_setaffinity(0, {args.client_cpu})
    proc, url, log = start_daemon(args.opd, args.server_cpu)
    results = {}

    def record(name, value):
        results.setdefault(name, []).append(value)

    try:
        with opd.connect(url) as c:
            torch.manual_seed(0)
            a, b = torch.randn(8, 8), torch.randn(8, 8)
            ra, rb = opd.torch.remote(a, c), opd.torch.remote(b, c)
            ops = {
                "add": (lambda x, y: x + y),
                "mul": (lambda x, y: x * y),
                "relu": (lambda x, y: torch.relu(x)),
                "matmul": (lambda x, y: x @ y),
            }
            for _ in range(200):  # warm the caches (schemas, literals, meta kernels)
                for fn in ops.values():
                    fn(ra, rb)
            c.wait_all()
            for _ in range(args.rounds):
                for name, fn in ops.items():
                    record(f"{name}_local", cpu_per_op(lambda: fn(a, b), args.n))
                    record(f"{name}_remote", cpu_per_op(lambda: fn(ra, rb), args.n))
                    c.wait_all()
                    m = args.n // 4
                    y = ra
                    t0, p0 = time.perf_counter(), time.process_time()
                    for _ in range(m):
                        y = fn(y, rb)
                    y.cpu()  # the chain is done: its wall time is the daemon's round trips
                    record(f"{name}_chained", (time.process_time() - p0) / m * 1e6)
                    record(f"{name}_chained_wall", (time.perf_counter() - t0) / m * 1e6)
                    del y
                    c.wait_all()
            if not args.no_gpt2:
                gpt2(c, args.rounds, record)
    finally:
        proc.terminate()
        proc.wait(10)
        log.close()

    med = {k: statistics.median(v) for k, v in results.items()}
    for k, v in results.items():
        unit = "ms" if k.startswith("gpt2") and not k.endswith("_cpu") else "us"
        print(f"{k:20s} {med[k]:10.2f} {unit}  (rounds: {', '.join(f'{x:.2f}' for x in v)})")
    for name in ("add", "mul", "relu", "matmul"):
        if f"{name}_local" in med:
            print(f"{name}: remote / local {med[f'{name}_remote'] / med[f'{name}_local']:.1f}x, "
                  f"chained / local {med[f'{name}_chained'] / med[f'{name}_local']:.1f}x "
                  f"(CPU), {med[f'{name}_chained_wall'] / med[f'{name}_local']:.1f}x (wall)")
    if "gpt2_eager" in med:
        print(f"gpt2: remote / eager {med['gpt2_remote'] / med['gpt2_eager']:.1f}x (wall), "
              f"client CPU / eager {med['gpt2_remote_cpu'] / 1e3 / med['gpt2_eager']:.1f}x")


def gpt2(c, rounds, record):
    import torch
    import opd.torch
    sys.path.insert(0, os.path.join(HERE, "..", "client", "python", "tests"))
    from torch_models import Block

    torch.manual_seed(0)
    x = torch.randn(1, 16, 32)
    eager = Block().eval()
    remote = opd.torch.remote(Block().eval(), c)
    remote.load_state_dict(eager.state_dict())
    rx = opd.torch.remote(x, c)
    n = 50
    with torch.no_grad():
        torch.testing.assert_close(remote(rx).cpu(), eager(x), rtol=1e-4, atol=1e-5)
        for _ in range(rounds):
            t0 = time.perf_counter()
            for _ in range(n):
                eager(x)
            record("gpt2_eager", (time.perf_counter() - t0) / n * 1e3)
            t0, p0 = time.perf_counter(), time.process_time()
            for _ in range(n):
                remote(rx).cpu()
            record("gpt2_remote", (time.perf_counter() - t0) / n * 1e3)
            record("gpt2_remote_cpu", (time.process_time() - p0) / n * 1e6)


if __name__ == "__main__":
    main()

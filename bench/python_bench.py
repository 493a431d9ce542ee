#!/usr/bin/env python3
"""The Python client's figures (docs/PERFORMANCE.md, "Python client"), measured
against an opd daemon and, for the tiny remote add, torch.distributed.rpc (TensorPipe over
TCP). bench/run_python_bench.sh runs every part pinned and side by side; by hand:

    python_bench.py opd URL SECONDS         tiny add: calls/s unpipelined, pipelined
    python_bench.py rpc-server PORT         the torch.distributed.rpc peer (worker "server")
    python_bench.py rpc PORT SECONDS        tiny add through rpc_sync / rpc_async on RRefs
    python_bench.py overhead URL N          client CPU time per OpdTensor op and per local op
    python_bench.py gpt2 URL N              a GPT-2 style block: eager, remote op by op, compile

Each prints one line "name value unit"."""
import os
import sys
import time

WINDOW = 64  # requests kept in flight by the pipelined forms


def opd_add(url, seconds):
    import numpy as np
    import opd
    with opd.connect(url) as c:
        a = c.upload(np.ones(1, np.float32))
        b = c.upload(np.ones(1, np.float32))
        add = c.ops.aten.add.Tensor
        for _ in range(1000):
            add(a, b)
        n, t0 = 0, time.perf_counter()
        while time.perf_counter() - t0 < seconds:
            for _ in range(100):
                add(a, b)
            n += 100
        print(f"opd_sync {n / (time.perf_counter() - t0):.0f} calls/s")
        future = add.future
        n, t0 = 0, time.perf_counter()
        while time.perf_counter() - t0 < seconds:
            window = [future(a, b) for _ in range(WINDOW)]
            window[-1].result()
            n += WINDOW
        print(f"opd_pipelined {n / (time.perf_counter() - t0):.0f} calls/s")


def _add_rrefs(a, b):
    import torch
    return torch.add(a.local_value(), b.local_value())


def _rpc_init(rank, port):
    import torch.distributed.rpc as rpc
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ["MASTER_PORT"] = str(port)
    opts = rpc.TensorPipeRpcBackendOptions(num_worker_threads=4, _transports=["uv"],
                                           _channels=["basic"])
    rpc.init_rpc("server" if rank == 0 else "client", rank=rank, world_size=2,
                 rpc_backend_options=opts)
    return rpc


def rpc_server(port):
    rpc = _rpc_init(0, port)
    rpc.shutdown()  # waits for the client's shutdown


def rpc_add(port, seconds):
    import torch
    rpc = _rpc_init(1, port)
    a = rpc.remote("server", torch.ones, args=((1,),))
    b = rpc.remote("server", torch.ones, args=((1,),))
    for _ in range(200):
        rpc.rpc_sync("server", _add_rrefs, args=(a, b))
    n, t0 = 0, time.perf_counter()
    while time.perf_counter() - t0 < seconds:
        rpc.rpc_sync("server", _add_rrefs, args=(a, b))
        n += 1
    print(f"rpc_sync {n / (time.perf_counter() - t0):.0f} calls/s")
    n, t0 = 0, time.perf_counter()
    while time.perf_counter() - t0 < seconds:
        window = [rpc.rpc_async("server", _add_rrefs, args=(a, b)) for _ in range(WINDOW)]
        torch.futures.wait_all(window)
        n += WINDOW
    print(f"rpc_pipelined {n / (time.perf_counter() - t0):.0f} calls/s")
    del a, b
    rpc.shutdown()


def overhead(url, n):
    import torch
    import opd
    import opd.torch
    with opd.connect(url) as c:
        x = opd.torch.remote(torch.ones(1), c)
        local = torch.ones(1)
        for _ in range(200):
            (x + 1).cpu()
        t0 = time.process_time()
        y = x
        for _ in range(n):
            y = x + 1  # sent without waiting: the client's own cost
        spent = time.process_time() - t0
        y.cpu()
        print(f"opdtensor_op_cpu {spent / n * 1e6:.1f} us/op")
        t0 = time.process_time()
        for _ in range(n):
            local + 1
        print(f"local_op_cpu {(time.process_time() - t0) / n * 1e6:.1f} us/op")


def gpt2(url, n):
    import torch
    import opd
    import opd.torch
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "client",
                                    "python", "tests"))
    from torch_models import Block
    torch.manual_seed(0)
    torch.set_num_threads(1)
    x = torch.randn(1, 16, 32)
    eager = Block().eval()
    with opd.connect(url) as c:
        compiled = opd.torch.compile(Block().eval(), c)
        remote = opd.torch.remote(Block().eval(), c)
        rx = opd.torch.remote(x, c)

        def timed(fn):
            fn()
            t0 = time.perf_counter()
            for _ in range(n):
                fn()
            return (time.perf_counter() - t0) / n * 1e3

        with torch.no_grad():
            print(f"gpt2_eager {timed(lambda: eager(x)):.3f} ms")
            print(f"gpt2_remote {timed(lambda: remote(rx).cpu()):.3f} ms")
            print(f"gpt2_compile {timed(lambda: compiled(rx).cpu()):.3f} ms")


def main(argv):
    mode = argv[1] if len(argv) > 1 else ""
    if mode == "opd":
        opd_add(argv[2], float(argv[3]))
    elif mode == "rpc-server":
        rpc_server(int(argv[2]))
    elif mode == "rpc":
        rpc_add(int(argv[2]), float(argv[3]))
    elif mode == "overhead":
        overhead(argv[2], int(argv[3]))
    elif mode == "gpt2":
        gpt2(argv[2], int(argv[3]))
    else:
        print(__doc__, file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

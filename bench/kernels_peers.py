#!/usr/bin/env python3
"""The peers of opd-bench-kernels: the same workloads in numpy and (when installed) PyTorch,
with the same thread count, printed as "<peer> <workload> <seconds>" (median of 7 after a
warm-up). numpy's softmax is the usual three passes: exp, sum, divide."""
import os
import statistics
import sys
import time

import numpy as np

REPS = 7


def median_time(fn):
    fn()
    runs = []
    for _ in range(REPS):
        t0 = time.perf_counter()
        fn()
        runs.append(time.perf_counter() - t0)
    return statistics.median(runs)


def report(peer, name, fn):
    print("%s %s %.6f" % (peer, name, median_time(fn)), flush=True)


def main():
    rng = np.random.default_rng(0)
    a = rng.uniform(-2, 2, 16 << 20).astype(np.float32)
    b = rng.uniform(-2, 2, 16 << 20).astype(np.float32)
    out = np.empty_like(a)
    r = rng.uniform(-2, 2, (4096, 1024)).astype(np.float32)
    mats = {n: (rng.uniform(-2, 2, (n, n)).astype(np.float32),
                rng.uniform(-2, 2, (n, n)).astype(np.float32)) for n in (1024, 2048)}

    def np_softmax():
        e = np.exp(r - r.max(axis=-1, keepdims=True))
        return e / e.sum(axis=-1, keepdims=True)

    report("numpy", "add_16M", lambda: a + b)
    report("numpy", "add_into_16M", lambda: np.add(a, b, out=out))
    report("numpy", "exp_16M", lambda: np.exp(a))
    report("numpy", "sum_4096x1024", lambda: r.sum(axis=-1))
    report("numpy", "softmax_4096x1024", np_softmax)
    for n, (x, y) in mats.items():
        report("numpy", "mm_%d" % n, lambda x=x, y=y: x @ y)

    try:
        import torch
    except ImportError:
        print("torch not installed: no PyTorch figures", file=sys.stderr)
        return
    torch.set_num_threads(int(os.environ.get("OPD_NUM_THREADS", os.cpu_count())))
    ta, tb, tout, tr = (torch.from_numpy(v) for v in (a, b, out, r))
    report("torch", "add_16M", lambda: torch.add(ta, tb))
    report("torch", "add_into_16M", lambda: torch.add(ta, tb, out=tout))
    report("torch", "exp_16M", lambda: torch.exp(ta))
    report("torch", "sum_4096x1024", lambda: tr.sum(dim=-1))
    report("torch", "softmax_4096x1024", lambda: torch.softmax(tr, dim=-1))
    for n, (x, y) in mats.items():
        tx, ty = torch.from_numpy(x), torch.from_numpy(y)
        report("torch", "mm_%d" % n, lambda tx=tx, ty=ty: torch.mm(tx, ty))


if __name__ == "__main__":
    main()

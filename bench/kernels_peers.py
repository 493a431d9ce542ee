#!/usr/bin/env python3
"""The peers of opd-bench-kernels: the same workloads in numpy and (when installed) PyTorch,
with the same thread count, printed as "<peer> <workload> <seconds>" (median of 7 after a
warm-up); lines starting with "#" say which vector extensions each peer uses. numpy's softmax
is the usual three passes (exp, sum, divide), its layer norm the textbook one (mean, variance,
normalise, scale and shift); numpy has no gelu, so gelu has no numpy figure."""
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


def numpy_simd():
    try:
        from numpy.core._multiarray_umath import __cpu_features__ as f
        return " ".join(k.lower() for k in ("AVX2", "FMA3", "AVX512F", "AVX512_SKX") if f.get(k))
    except ImportError:
        return "unknown"


def main():
    print("# numpy %s: %s" % (np.__version__, numpy_simd()))
    rng = np.random.default_rng(0)
    a = rng.uniform(-2, 2, 16 << 20).astype(np.float32)
    b = rng.uniform(-2, 2, 16 << 20).astype(np.float32)
    out = np.empty_like(a)
    r = rng.uniform(-2, 2, (4096, 1024)).astype(np.float32)
    w = rng.uniform(-2, 2, 1024).astype(np.float32)
    bias = rng.uniform(-2, 2, 1024).astype(np.float32)
    table = rng.uniform(-2, 2, (50257, 768)).astype(np.float32)
    idx = rng.integers(0, 50257, 4096).astype(np.int64)
    ba = rng.uniform(-2, 2, (64, 128, 128)).astype(np.float32)
    bb = rng.uniform(-2, 2, (64, 128, 128)).astype(np.float32)
    mats = {n: (rng.uniform(-2, 2, (n, n)).astype(np.float32),
                rng.uniform(-2, 2, (n, n)).astype(np.float32)) for n in (1024, 2048)}

    def np_softmax():
        e = np.exp(r - r.max(axis=-1, keepdims=True))
        return e / e.sum(axis=-1, keepdims=True)

    def np_layer_norm():
        m = r.mean(axis=-1, keepdims=True)
        v = r.var(axis=-1, keepdims=True)
        return (r - m) / np.sqrt(v + 1e-5) * w + bias

    report("numpy", "copy_16M", lambda: np.copyto(out, a))
    report("numpy", "add_16M", lambda: a + b)
    report("numpy", "add_into_16M", lambda: np.add(a, b, out=out))
    report("numpy", "exp_16M", lambda: np.exp(a))
    report("numpy", "sum_4096x1024", lambda: r.sum(axis=-1))
    report("numpy", "mean_4096x1024", lambda: r.mean(axis=-1))
    report("numpy", "amax_4096x1024", lambda: r.max(axis=-1))
    report("numpy", "softmax_4096x1024", np_softmax)
    report("numpy", "layer_norm_4096x1024", np_layer_norm)
    report("numpy", "embedding_4096", lambda: table[idx])
    report("numpy", "bmm_64x128x128", lambda: np.matmul(ba, bb))
    for n, (x, y) in mats.items():
        report("numpy", "mm_%d" % n, lambda x=x, y=y: x @ y)

    try:
        import torch
        import torch.nn.functional as F
    except ImportError:
        print("torch not installed: no PyTorch figures", file=sys.stderr)
        return
    caps = [l.strip() for l in torch.__config__.show().splitlines() if "CPU capability" in l]
    print("# torch %s: %s" % (torch.__version__, caps[0] if caps else "capability unknown"))
    torch.set_num_threads(int(os.environ.get("OPD_NUM_THREADS", os.cpu_count())))
    ta, tb, tout, tr, tw, tbias = (torch.from_numpy(v) for v in (a, b, out, r, w, bias))
    ttable, tidx, tba, tbb = (torch.from_numpy(v) for v in (table, idx, ba, bb))
    report("torch", "copy_16M", lambda: tout.copy_(ta))
    report("torch", "add_16M", lambda: torch.add(ta, tb))
    report("torch", "add_into_16M", lambda: torch.add(ta, tb, out=tout))
    report("torch", "exp_16M", lambda: torch.exp(ta))
    report("torch", "gelu_16M", lambda: F.gelu(ta))
    report("torch", "sum_4096x1024", lambda: tr.sum(dim=-1))
    report("torch", "mean_4096x1024", lambda: tr.mean(dim=-1))
    report("torch", "amax_4096x1024", lambda: torch.amax(tr, dim=-1))
    report("torch", "softmax_4096x1024", lambda: torch.softmax(tr, dim=-1))
    report("torch", "layer_norm_4096x1024", lambda: F.layer_norm(tr, (1024,), tw, tbias, 1e-5))
    report("torch", "embedding_4096", lambda: F.embedding(tidx, ttable))
    report("torch", "bmm_64x128x128", lambda: torch.bmm(tba, tbb))
    for n, (x, y) in mats.items():
        tx, ty = torch.from_numpy(x), torch.from_numpy(y)
        report("torch", "mm_%d" % n, lambda tx=tx, ty=ty: torch.mm(tx, ty))


if __name__ == "__main__":
    main()

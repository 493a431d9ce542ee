#!/usr/bin/env python3
"""Graphs through the daemon (docs/PERFORMANCE.md, "Graphs"), side by side with the
same operators as single calls through the daemon and with PyTorch eager in this process
(one thread, as the daemon has one worker). bench/run_graph_bench.sh runs every part pinned,
in rounds; by hand:

    graph_bench.py gpt2 URL SEQ N      a GPT-2 block (d 32, 4 heads) on (1, SEQ, 32): eager,
                                       single calls, graph
    graph_bench.py softmax URL N       exp/sum/div on (4096, 1024): graph (fused), single calls,
                                       torch.softmax
    graph_bench.py gelu URL N          the hand-written tanh-GELU (8 pointwise ops) on 16M floats:
                                       graph (fused), single calls, eager
    graph_bench.py define URL N        define latency: a new graph (compiled), the same again
                                       (the cache's)

A graph is timed after its first GRAPH_WARMUP runs (those that decide its fused groups). The
inputs and outputs stay in the daemon (the graph and single-call timings wait for the last
request, wait_all, without downloading); every timing is the median of N. Each line printed is
"name value unit"."""
import statistics
import sys
import time


# A graph's first runs compute each fused group both ways (numerics and benefit: docs/GRAPHS.md);
# its timings start after them. With the daemon's C tier on (run_graph_bench.sh's
# OPD_GRAPH_BENCH_CC), a group checks again when its compiled C replaces the interpreter, after
# a compile of some 50-150 ms off the request path: the warm-up then also lasts
# OPD_GRAPH_WARMUP_S seconds.
GRAPH_WARMUP = 6


def _median_ms(fn, n, warmup=1):
    import os
    until = time.perf_counter() + (float(os.environ.get("OPD_GRAPH_WARMUP_S", "0"))
                                   if warmup == GRAPH_WARMUP else 0)
    done = 0
    while done < warmup or time.perf_counter() < until:
        fn()
        done += 1
    times = []
    for _ in range(n):
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times)


def _setup(url):
    import torch
    import opd
    import opd.torch
    torch.set_num_threads(1)
    return torch, opd, opd.torch, opd.connect(url)


def _three_ways(name, fn, x, n, url, eager_fn=None):
    """fn traced into a graph, fn op by op on OpdTensors, and eager_fn (default fn) here."""
    torch, opd, otorch, c = _setup(url)
    with c, torch.no_grad():
        rx = otorch.remote(x, c)
        graph = otorch.compile(fn, c)
        assert graph.graph_for(rx).one_request, "the graph runs op by op"

        def run_graph():
            graph(rx)
            c.wait_all()

        def run_calls():
            fn(rx)
            c.wait_all()

        eager = eager_fn or fn
        print(f"{name}_graph {_median_ms(run_graph, n, GRAPH_WARMUP):.3f} ms")
        print(f"{name}_calls {_median_ms(run_calls, n):.3f} ms")
        print(f"{name}_eager {_median_ms(lambda: eager(x), n):.3f} ms")


def gpt2(url, seq, n):
    import os
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "client",
                                    "python", "tests"))
    import torch
    from torch_models import Block
    torch.manual_seed(0)
    block = Block(block=seq).eval()  # the causal mask covers seq tokens
    torch_, opd, otorch, c = _setup(url)
    with c, torch.no_grad():
        x = torch.randn(1, seq, 32)
        remote_block = otorch.remote(Block(block=seq).eval(), c)
        rx = otorch.remote(x, c)
        graph = otorch.compile(block, c)
        assert graph.graph_for(rx).one_request, "the graph runs op by op"

        def run_graph():
            graph(rx)
            c.wait_all()

        def run_calls():
            remote_block(rx)
            c.wait_all()

        print(f"gpt2_{seq}_graph {_median_ms(run_graph, n, GRAPH_WARMUP):.3f} ms")
        print(f"gpt2_{seq}_calls {_median_ms(run_calls, n):.3f} ms")
        print(f"gpt2_{seq}_eager {_median_ms(lambda: block(x), n):.3f} ms")


def softmax(url, n):
    import torch

    def seed_softmax(x):
        e = torch.exp(x)
        return e / e.sum(dim=-1, keepdim=True)

    torch.manual_seed(0)
    _three_ways("softmax", seed_softmax, torch.randn(4096, 1024), n, url,
                eager_fn=lambda x: torch.softmax(x, -1))


def gelu(url, n):
    import math
    import torch

    def tanh_gelu(x):  # 8 pointwise operators
        inner = x + 0.044715 * torch.pow(x, 3)
        return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * inner))

    torch.manual_seed(0)
    _three_ways("gelu", tanh_gelu, torch.randn(16 << 20), n, url)


def define(url, n):
    torch, opd, otorch, c = _setup(url)
    from torch.fx.experimental.proxy_tensor import make_fx

    def f(x):
        e = torch.exp(x * 2.0 + 1.0)
        return e / e.sum(dim=-1, keepdim=True)

    import os
    base = 16 + os.getpid() % 4096  # shapes this process is the first to define
    with c:
        cold, hit = [], []
        for i in range(n):
            gm = make_fx(f)(torch.zeros(1 + i, base))  # a shape not seen: compiled
            t0 = time.perf_counter()
            g = c._define_graph(gm.graph)
            cold.append((time.perf_counter() - t0) * 1e3)
            assert not g.info["cache_hit"]
            t0 = time.perf_counter()
            again = c._define_graph(gm.graph)
            hit.append((time.perf_counter() - t0) * 1e3)
            assert again.info["cache_hit"]
            c._release_graph(g)
            c._release_graph(again)
        print(f"define_cold {statistics.median(cold):.3f} ms")
        print(f"define_hit {statistics.median(hit):.3f} ms")


def main(argv):
    mode = argv[1] if len(argv) > 1 else ""
    if mode == "gpt2":
        gpt2(argv[2], int(argv[3]), int(argv[4]))
    elif mode in ("softmax", "gelu", "define"):
        globals()[mode](argv[2], int(argv[3]))
    else:
        print(__doc__, file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

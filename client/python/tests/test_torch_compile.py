"""opd.torch.compile: traced with make_fx, parameters uploaded once, re-traced per input
signature with a bounded cache, run in the daemon as one graph per call."""
import gc
import time
import warnings

import pytest

torch = pytest.importorskip("torch")

import opd  # noqa: E402
import opd.torch  # noqa: E402
from torch_models import MLP, Block, TinyGPT  # noqa: E402

RTOL, ATOL = 1e-4, 1e-5


@pytest.mark.parametrize("make,x", [
    pytest.param(lambda: torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(),
                                             torch.nn.Linear(64, 32)), torch.randn(4, 32),
                 id="mlp"),
    pytest.param(lambda: MLP(approximate="none"), torch.randn(2, 8, 32), id="gelu_mlp"),
    pytest.param(Block, torch.randn(2, 8, 32), id="gpt2_block"),
    pytest.param(TinyGPT, torch.randint(0, 50, (2, 8)), id="tiny_gpt"),
])
def test_compiled_modules_match_eager(client, make, x):
    torch.manual_seed(0)
    module = make().eval()
    with torch.no_grad():
        expected = module(x)
    f = opd.torch.compile(module, client)
    got = f(x)  # a local input, uploaded for the call
    assert isinstance(got, opd.torch.OpdTensor)
    torch.testing.assert_close(got.cpu(), expected, rtol=RTOL, atol=ATOL)
    again = f(opd.torch.remote(x, client))  # an OpdTensor input: the same graph
    torch.testing.assert_close(again.cpu(), expected, rtol=RTOL, atol=ATOL)
    assert f.traces == 1
    assert f.graph_for(x).one_request  # the daemon's graph, not op by op (arange too)


def test_functions_and_retracing_with_a_bounded_cache(client):
    def softmax_then_scale(x, k):
        e = torch.exp(x - x.amax(dim=-1, keepdim=True))
        return e / e.sum(dim=-1, keepdim=True) * k

    f = opd.torch.compile(softmax_then_scale, client, cache_size=2)
    shapes = [(2, 3), (4, 5), (2, 3), (6, 1)]
    for shape in shapes:
        x = torch.randn(*shape)
        torch.testing.assert_close(f(x, 2.0).cpu(), softmax_then_scale(x, 2.0), rtol=RTOL,
                                   atol=ATOL)
    assert f.traces == 3  # (2, 3) came back from the cache
    assert f.cached_signatures == 2  # (4, 5), the least recently used, made room for (6, 1)
    f(torch.randn(2, 3), 2.0)
    assert f.traces == 3
    f(torch.randn(4, 5), 2.0)
    assert f.traces == 4
    f(torch.randn(2, 3, dtype=torch.float64), 2.0)  # a new dtype is a new signature
    assert f.traces == 5


def test_parameters_are_uploaded_once(client):
    module = Block().eval()
    f = opd.torch.compile(module, client)
    params = f._params
    assert all(isinstance(p, opd.torch.OpdTensor) for p in params)
    assert all(not isinstance(p, opd.torch.OpdTensor) for p in module.parameters())  # untouched
    x = opd.torch.remote(torch.randn(1, 8, 32), client)
    f(x).cpu()
    assert f._params is params and [p._opd for p in f._params] == [p._opd for p in params]


def test_a_compiled_call_is_one_request(daemon):
    with opd.connect(daemon.unix) as client:
        f = opd.torch.compile(Block().eval(), client)
        x = opd.torch.remote(torch.randn(1, 8, 32), client)
        f(x)  # traced here
        client.wait_all()

        def calls():  # the calls the daemon has run for this session
            return max(daemon.sessions(), key=lambda s: s["id"])["calls"]

        before = calls()
        f(x)
        client.wait_all()
        assert calls() - before == 1


def test_seed_softmax_is_fused(client):
    def seed_softmax(x):
        e = torch.exp(x)
        return e / e.sum(dim=-1, keepdim=True)

    f = opd.torch.compile(seed_softmax, client)
    x = torch.randn(4, 16)
    torch.testing.assert_close(f(x).cpu(), torch.softmax(x, -1), rtol=RTOL, atol=ATOL)
    graph = f.graph_for(x)
    assert graph.one_request
    info = graph.graph.info
    assert info["softmax_patterns"] == 1
    assert info["nodes_before"] == 3 and info["kernels"] == 1


def test_graphs_are_released_with_their_signatures(daemon):
    """The daemon holds one graph per cached signature: an evicted signature's graph is
    released, and closing the client releases the rest."""
    def scaled_exp(x):
        return torch.exp(x) * 2.0

    def session_graphs():
        client.wait_all()
        return max(daemon.sessions(), key=lambda s: s["id"])["graphs"]

    with opd.connect(daemon.unix) as client:
        f = opd.torch.compile(scaled_exp, client, cache_size=2)
        for n in (2, 3, 4, 5):
            x = torch.randn(n, 4)
            torch.testing.assert_close(f(x).cpu(), scaled_exp(x), rtol=RTOL, atol=ATOL)
        assert f.cached_signatures == 2
        assert session_graphs() == 2
    deadline = time.monotonic() + 10  # the daemon ends the session once it sees the close
    while daemon.sessions() and time.monotonic() < deadline:
        time.sleep(0.01)
    assert not daemon.sessions()


def test_outputs_are_released_when_they_die(daemon):
    """A compiled call's outputs are released as soon as nothing refers to them, without the
    cyclic garbage collector (which once held every output, and its memory in the daemon,
    until it ran)."""
    def seed_softmax(x):
        e = torch.exp(x)
        return e / e.sum(dim=-1, keepdim=True), e

    def session_handles():
        client.wait_all()
        return max(daemon.sessions(), key=lambda s: s["id"])["handles"]

    with opd.connect(daemon.unix) as client:
        f = opd.torch.compile(seed_softmax, client)
        x = opd.torch.remote(torch.randn(8, 16), client)
        f(x)  # traced and defined here
        held = session_handles()
        enabled = gc.isenabled()
        gc.disable()
        try:
            for _ in range(20):
                f(x)
            assert session_handles() == held
        finally:
            if enabled:
                gc.enable()


def test_a_graph_run_op_by_op_says_why_once(client):
    def f(x):
        # hardshrink: no schema in the client (it runs through its decomposition)
        return torch.nn.functional.hardshrink(x, 0.5).relu()

    compiled = opd.torch.compile(f, client)
    x = torch.randn(3, 4)
    with pytest.warns(opd.torch.OpdFallbackWarning, match="op by op.*hardshrink"):
        got = compiled(x)
    torch.testing.assert_close(got.cpu(), f(x))
    assert "hardshrink" in compiled.fallback_reason
    assert not compiled.graph_for(x).one_request
    with warnings.catch_warnings():
        warnings.simplefilter("error", opd.torch.OpdFallbackWarning)
        compiled(torch.randn(5, 4))  # another signature, traced again: said once already
    ok = opd.torch.compile(lambda x: x.relu(), client)
    ok(x)
    assert ok.fallback_reason is None

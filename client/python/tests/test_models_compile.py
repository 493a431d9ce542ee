"""What opd.torch.compile does so that whole models are one graph ([Note: In-place nodes as
functional ones] in opd/torch/_fx_graph.py, [Note: Packed parameters] in _compile.py): in-place
nodes become functional ones where that is exact (and the graph runs op by op, saying why,
where it is not), written buffers are copied back into the daemon's tensors, and a module with
more parameters than a call has arguments is still one graph."""
import warnings

import pytest

torch = pytest.importorskip("torch")
nn = torch.nn

import opd  # noqa: E402
import opd.torch  # noqa: E402


def compiled(client, fn, *args):
    """fn compiled and run on args: (result, the compiled callable); a fallback is an error."""
    f = opd.torch.compile(fn, client)
    with warnings.catch_warnings():
        warnings.simplefilter("error", opd.torch.OpdFallbackWarning)
        return f(*args), f


def test_in_place_nodes_are_one_graph(client):
    def f(x):
        y = torch.mm(x, x)
        y.relu_()  # writes a fresh tensor: y's later uses read the new value
        z = y.t()
        z.mul_(2)  # a view written, read through its base after: op by op (below)
        return y + 1

    def g(x):
        y = torch.mm(x, x).relu_()
        y.add_(1).mul_(3)  # in-place results are y itself
        return y.transpose_(0, 1).sum(0) + y

    x = torch.randn(4, 4)
    got, fg = compiled(client, g, x)
    torch.testing.assert_close(got.cpu(), g(x.clone()))
    assert fg.fallback_reason is None
    fn = opd.torch.compile(f, client)
    with pytest.warns(opd.torch.OpdFallbackWarning, match="writes into a view"):
        got = fn(x)
    torch.testing.assert_close(got.cpu(), f(x.clone()))


def test_a_view_read_after_the_write_runs_op_by_op(client):
    def f(x):
        y = torch.mm(x, x)
        row = y[0]  # a view of y, read after y is written
        y.relu_()
        return row * 1

    x = torch.randn(3, 3)
    fn = opd.torch.compile(f, client)
    with pytest.warns(opd.torch.OpdFallbackWarning, match="is read after it"):
        got = fn(x)
    torch.testing.assert_close(got.cpu(), f(x.clone()))


def test_written_buffers_are_copied_back(client):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(2, 4, 3), nn.BatchNorm2d(4), nn.ReLU(inplace=True)).train()
    eager = nn.Sequential(*[m for m in model])  # the same modules
    x = torch.randn(2, 2, 6, 6)
    got, f = compiled(client, model, x)
    with torch.no_grad():
        expected = eager(x)  # updates the local buffers, which compile uploaded before
    torch.testing.assert_close(got.cpu(), expected, rtol=1e-4, atol=1e-5)
    held = dict(zip(f._names, f._params))
    for name, buffer in model.named_buffers():
        torch.testing.assert_close(held[name].cpu(), buffer, rtol=1e-4, atol=1e-5)
    f(x)
    assert held["1.num_batches_tracked"].cpu().item() == 2


def test_many_parameters_are_one_graph(client):
    torch.manual_seed(0)
    model = nn.Sequential(*[nn.Linear(4, 4) for _ in range(40)]).eval()  # 80 tensors
    x = torch.randn(2, 4)
    got, f = compiled(client, model, x)
    with torch.no_grad():
        torch.testing.assert_close(got.cpu(), model(x), rtol=1e-4, atol=1e-5)
    assert f.graph_for(x).one_request
    assert len({p._opd for p in f._params}) == len(f._params)  # views of one packed tensor

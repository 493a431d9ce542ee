"""Results whose shape depends on values, through opd.torch.remote: nonzero, masked_select and
indexing with a boolean mask match eager (their size comes from the daemon: [Note: Results
whose shape depends on values] in opd/torch/_tensor.py), and so does a model that takes its
loss over the positions a mask selects, gradients included. compile runs such a graph op by
op and says why."""
import copy
import warnings

import pytest

torch = pytest.importorskip("torch")
nn = torch.nn
F = nn.functional

import opd  # noqa: E402
import opd.torch  # noqa: E402


def remote(client, *ts):
    return [opd.torch.remote(t, client) for t in ts]


def check(got, expected):
    assert isinstance(got, opd.torch.OpdTensor)
    assert got.shape == expected.shape and got.dtype == expected.dtype
    torch.testing.assert_close(got.cpu(), expected)
    # the geometry here is the daemon's: the elements read through it are the result's
    via = torch.ops.aten.as_strided.default(got, got.shape, got.stride(), got.storage_offset())
    torch.testing.assert_close(via.cpu(), expected)


@pytest.mark.parametrize("x", [
    torch.tensor([[0.0, 1.5, 0.0], [2.0, 0.0, -1.0]]),
    torch.tensor([[[1, 0], [0, 0]], [[0, 3], [4, 0]]]),
    torch.zeros(3, 4),  # nothing selected
    torch.tensor(2.5),  # 0-d
    torch.tensor([True, False, True]),
], ids=["float-2d", "int-3d", "none", "0-d", "bool"])
def test_nonzero_matches_eager(client, x):
    (r,) = remote(client, x)
    check(torch.nonzero(r), torch.nonzero(x))
    check(torch.argwhere(r), torch.argwhere(x))
    for got, expected in zip(torch.where(r), torch.where(x)):  # nonzero's columns
        check(got, expected)


def test_repeated_calls_take_each_size_from_their_own_values(client):
    # the same operator on the same geometry, twice: a result's size is never reused from an
    # earlier call with other values ([Note: Cached dispatch plans] never hold these)
    for _ in range(3):
        for x in (torch.tensor([1.0, 0.0, 2.0, 0.0]), torch.tensor([0.0, 0.0, 3.0, 0.0]),
                  torch.ones(4)):
            (r,) = remote(client, x)
            check(torch.nonzero(r), torch.nonzero(x))
            check(torch.masked_select(r, r > 0.5), torch.masked_select(x, x > 0.5))
            check(r[r > 0.5], x[x > 0.5])


def test_masked_select_matches_eager(client):
    torch.manual_seed(0)
    x = torch.randn(3, 4)
    for mask in (x > 0, (x > 0)[0], torch.zeros(3, 4, dtype=torch.bool)):  # broadcast too
        r, m = remote(client, x, mask)
        check(torch.masked_select(r, m), torch.masked_select(x, mask))
        check(torch.masked_select(r, mask), torch.masked_select(x, mask))  # a local mask
    rx, rm = remote(client, torch.randn(2, 1), torch.ones(1, 3, dtype=torch.bool))
    check(torch.masked_select(rx, rm), torch.masked_select(rx.cpu(), rm.cpu()))
    with pytest.raises(RuntimeError):
        torch.masked_select(r, opd.torch.remote(torch.ones(5, dtype=torch.bool), client))


def test_boolean_mask_indexing_matches_eager(client):
    torch.manual_seed(0)
    x = torch.randn(4, 5, 3)
    rows = torch.tensor([True, False, True, True])
    cells = x[..., 0] > 0
    r, rrows, rcells = remote(client, x, rows, cells)
    check(r[rrows], x[rows])
    check(r[rcells], x[cells])  # a mask over two dimensions
    check(r[:, rcells[0]], x[:, cells[0]])  # after a slice
    check(r[rrows, 1:], x[rows, 1:])
    check(r[rrows, torch.tensor([0, 2, 4])], x[rows, torch.tensor([0, 2, 4])])  # with indices
    check(r[rows], x[rows])  # a local mask
    check(r[torch.zeros(4, dtype=torch.bool)], x[torch.zeros(4, dtype=torch.bool)])
    with pytest.raises(IndexError, match="does not match the shape of the indexed tensor"):
        r[opd.torch.remote(torch.ones(5, dtype=torch.bool), client)]


def test_boolean_mask_assignment_matches_eager(client):
    torch.manual_seed(0)
    x = torch.randn(4, 5)
    r, m = remote(client, x, x > 0.5)
    expected = x.clone()
    expected[x > 0.5] = 0.0
    r[m] = 0.0
    torch.testing.assert_close(r.cpu(), expected)


class MaskedTokenClassifier(nn.Module):
    """Per-token logits; the loss is taken over the tokens a mask keeps (padding dropped)."""

    def __init__(self, vocab=20, d=16, classes=5):
        super().__init__()
        self.embed = nn.Embedding(vocab, d)
        self.proj = nn.Linear(d, classes)

    def forward(self, tokens, mask, labels):
        logits = self.proj(torch.tanh(self.embed(tokens)))
        return F.cross_entropy(logits[mask], labels[mask])


def test_masked_loss_gradients_match_eager(client):
    torch.manual_seed(0)
    model = MaskedTokenClassifier()
    tokens = torch.randint(0, 20, (3, 6))
    mask = torch.rand(3, 6) > 0.3
    labels = torch.randint(0, 5, (3, 6))
    expected = copy.deepcopy(model)
    loss_e = expected(tokens, mask, labels)
    loss_e.backward()
    opd.torch.remote(model, client)
    with warnings.catch_warnings():
        warnings.simplefilter("error", opd.torch.OpdFallbackWarning)
        loss = model(*remote(client, tokens, mask, labels))
        loss.backward()
    torch.testing.assert_close(loss.detach().cpu(), loss_e.detach(), rtol=1e-4, atol=1e-5)
    for p, q in zip(model.parameters(), expected.parameters()):
        assert isinstance(p.grad, opd.torch.OpdTensor)
        torch.testing.assert_close(p.grad.cpu(), q.grad, rtol=1e-4, atol=1e-5)


def test_compile_runs_a_masked_graph_op_by_op(client):
    def positive_mean(x):
        return x[x > 0].mean()

    f = opd.torch.compile(positive_mean, client)
    x = torch.randn(4, 5)
    with pytest.warns(opd.torch.OpdFallbackWarning, match="depends on values"):
        got = f(x)
    torch.testing.assert_close(got.cpu(), positive_mean(x))
    assert "depends on values" in f.fallback_reason

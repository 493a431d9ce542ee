"""Training through opd.torch.remote: parameters stay leaves that require grad, gradients are
computed and held by the daemon (p.grad is an OpdTensor), torch.optim steps them in place
there, and three steps match eager. Everything runs in the daemon in the default mode: an
operator the daemon lacks is reached through PyTorch's decompositions, and nothing falls back
to the local CPU (a fallback would raise here)."""
import copy
import warnings

import pytest

torch = pytest.importorskip("torch")
nn = torch.nn
F = nn.functional

import opd  # noqa: E402
import opd.torch  # noqa: E402

RTOL, ATOL = 1e-4, 1e-5


def mlp():
    return nn.Sequential(nn.Linear(8, 16), nn.LayerNorm(16), nn.GELU(), nn.Linear(16, 4))


def encoder():
    return nn.Sequential(nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, batch_first=True),
                         nn.Flatten(), nn.Linear(24, 4))


def train(model, opt, x, y, steps=3):
    for _ in range(steps):
        opt.zero_grad(set_to_none=True)
        F.cross_entropy(model(x), y).backward()
        opt.step()


@pytest.mark.parametrize("make,x_shape,optimizer", [
    (mlp, (5, 8), lambda ps: torch.optim.SGD(ps, lr=0.1, momentum=0.9, weight_decay=0.01)),
    (mlp, (5, 8), lambda ps: torch.optim.Adam(ps, lr=0.01)),
    (encoder, (5, 3, 8), lambda ps: torch.optim.SGD(ps, lr=0.1, momentum=0.9,
                                                   weight_decay=0.01)),
], ids=["mlp-sgd", "mlp-adam", "encoder-sgd"])
def test_training_matches_eager(client, make, x_shape, optimizer):
    torch.manual_seed(0)
    model = make().train()
    expected = copy.deepcopy(model)
    x, y = torch.randn(*x_shape), torch.randint(0, 4, (x_shape[0],))
    train(expected, optimizer(expected.parameters()), x, y)

    opd.torch.remote(model, client)
    params = list(model.parameters())
    assert all(isinstance(p, opd.torch.OpdTensor) and p.is_leaf and p.requires_grad
               for p in params)
    opt = optimizer(params)
    with warnings.catch_warnings():
        warnings.simplefilter("error", opd.torch.OpdFallbackWarning)
        train(model, opt, opd.torch.remote(x, client), opd.torch.remote(y, client))
    for p, q in zip(params, expected.parameters()):
        assert isinstance(p, opd.torch.OpdTensor) and p.is_leaf
        assert isinstance(p.grad, opd.torch.OpdTensor)
        torch.testing.assert_close(p.cpu(), q.detach(), rtol=RTOL, atol=ATOL)
    opt.zero_grad(set_to_none=True)
    assert all(p.grad is None for p in params)


def test_mse_loss_gradients_match_eager(client):
    torch.manual_seed(0)
    model = mlp()
    expected = copy.deepcopy(model)
    x, y = torch.randn(5, 8), torch.randn(5, 4)
    F.mse_loss(expected(x), y).backward()
    opd.torch.remote(model, client)
    F.mse_loss(model(opd.torch.remote(x, client)), opd.torch.remote(y, client)).backward()
    for p, q in zip(model.parameters(), expected.parameters()):
        assert isinstance(p.grad, opd.torch.OpdTensor)
        torch.testing.assert_close(p.grad.cpu(), q.grad, rtol=RTOL, atol=ATOL)

"""opd.torch.remote: torch.nn code run in the daemon matches eager PyTorch."""
import warnings

import pytest

torch = pytest.importorskip("torch")

import opd  # noqa: E402
import opd.torch  # noqa: E402
from opd.torch import _tensor  # noqa: E402
from torch_models import building_blocks  # noqa: E402

RTOL, ATOL = 1e-4, 1e-5


@pytest.mark.parametrize("module,x", [pytest.param(m, x, id=n) for n, m, x in building_blocks()])
def test_blocks_match_eager(client, module, x):
    module.eval()
    with torch.no_grad():
        expected = module(x)
        _tensor.decomposed.clear()
        opd.torch.remote(module, client)
        got = module(opd.torch.remote(x, client))
    assert isinstance(got, opd.torch.OpdTensor)
    assert got.shape == expected.shape and got.dtype == expected.dtype
    torch.testing.assert_close(got.cpu(), expected, rtol=RTOL, atol=ATOL)
    assert not _tensor.decomposed, "operators the daemon should run itself"


def test_parameters_are_uploaded_once(client):
    from torch_models import TinyGPT
    model = TinyGPT().eval()
    opd.torch.remote(model, client)
    params = list(model.parameters())
    assert all(isinstance(p, opd.torch.OpdTensor) for p in params)
    assert model.lm_head.weight is model.wte.weight  # tied: one upload, one OpdTensor
    sent = client.requests
    with torch.no_grad():
        model(opd.torch.remote(torch.randint(0, 50, (1, 8)), client))
    # the forward sends calls and the input, never a parameter again
    assert client.requests - sent < 200


def test_results_are_pipelined(client):
    x = opd.torch.remote(torch.ones(4), client)
    y = x
    for _ in range(50):
        y = y + 1  # returns at once; the daemon runs the calls in order
    assert isinstance(y, opd.torch.OpdTensor) and not y._opd.ready
    torch.testing.assert_close(y.cpu(), torch.full((4,), 51.0))


def test_repr_and_values(client):
    x = opd.torch.remote(torch.arange(6.0).view(2, 3), client)
    text = repr(x)
    assert "OpdTensor" in text and client.url in text and "(2, 3)" in text
    assert x.sum().item() == 15.0
    assert x.tolist() == [[0, 1, 2], [3, 4, 5]]
    assert type(x.cpu()) is torch.Tensor and type(x.to("cpu")) is torch.Tensor
    assert (x.t().contiguous().cpu() == torch.arange(6.0).view(2, 3).t()).all()


def test_mixing_with_local_tensors(client):
    x = opd.torch.remote(torch.arange(4, dtype=torch.float32), client)
    local = torch.tensor([10.0, 20.0, 30.0, 40.0])
    torch.testing.assert_close((x + local).cpu(), torch.tensor([10.0, 21.0, 32.0, 43.0]))
    # 0-d CPU tensors and Python numbers pass by value, promoted as PyTorch does
    torch.testing.assert_close((x * torch.tensor(2.0)).cpu(), torch.arange(4.0) * 2)
    i = opd.torch.remote(torch.arange(4, dtype=torch.int32), client)
    assert (i * 0.5).dtype == torch.float32 and (i + 2).dtype == torch.int32
    torch.testing.assert_close((i * 0.5).cpu(), torch.arange(4, dtype=torch.int32) * 0.5)
    d = opd.torch.remote(torch.arange(4, dtype=torch.float64), client)
    torch.testing.assert_close((d * 0.1).cpu(), torch.arange(4, dtype=torch.float64) * 0.1)


def test_in_place_returns_the_same_tensor(client):
    x = opd.torch.remote(torch.zeros(2, 3), client)
    mask = opd.torch.remote(torch.tensor([[True, False, True], [False, True, False]]), client)
    y = x.masked_fill_(mask, 7.0)
    assert y is x
    torch.testing.assert_close(x.cpu(), torch.tensor([[7.0, 0, 7], [0, 7, 0]]))


def test_missing_operator_names_it(client):
    x = opd.torch.remote(torch.randn(8), client)
    with pytest.raises(NotImplementedError, match=r"opd has no kernel for aten::_fft_r2c"):
        torch.fft.rfft(x)


def test_cpu_fallback_warns_and_computes(client):
    local = torch.randn(8)
    x = opd.torch.remote(local, client)
    with opd.torch.cpu_fallback(), pytest.warns(opd.torch.OpdFallbackWarning, match="aten::mode"):
        values, indices = torch.mode(x * 2)
    assert isinstance(values, opd.torch.OpdTensor) and indices.dtype == torch.int64
    expected = torch.mode(local * 2)
    torch.testing.assert_close(values.cpu(), expected.values)
    torch.testing.assert_close((indices + 1).cpu(), expected.indices + 1)  # usable remotely
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        (x + 1).cpu()  # a supported operator warns nothing


def test_daemon_errors_surface_as_exceptions(client):
    x = opd.torch.remote(torch.randn(2, 3), client)
    with pytest.raises(RuntimeError):  # PyTorch's own check, on the meta tensors here
        x @ x
    with opd.torch.cpu_fallback(False):
        y = opd.torch.remote(torch.randn(3), client)
    with pytest.raises(IndexError):
        y.transpose(0, 4)


def test_intermediates_are_released(daemon):
    from torch_models import Block
    with opd.connect(daemon.unix) as c:
        model = opd.torch.remote(Block().eval(), c)
        x = opd.torch.remote(torch.randn(1, 8, 32), c)

        def handles():
            c.wait_all()  # sends the releases still batched
            return max(daemon.sessions(), key=lambda s: s["id"])["handles"]

        held = handles()  # the parameters, the buffer and x
        with torch.no_grad():
            y = model(x)
            y.cpu()
        assert handles() == held + 1  # only y: every intermediate was released
        del y
        assert handles() == held

"""Convolutional networks run through opd.torch.remote match eager PyTorch: every operator of
the convolution, pooling and padding family runs in the daemon (none decomposed in Python,
none falling back to the CPU here), and torchvision's resnet18 (random weights) matches too
where the daemon has batch norm."""
import warnings

import pytest

torch = pytest.importorskip("torch")
nn = torch.nn

import opd  # noqa: E402
import opd.torch  # noqa: E402
from opd.torch import _tensor  # noqa: E402

RTOL, ATOL = 1e-3, 1e-4


FAMILY = ("conv", "pool", "pad")  # the operators of this family have these in their names


def run_remote(client, model, x, strict=True):
    """model(x) in the daemon against eager. strict: nothing decomposed in Python and no CPU
    fallback; else only this family's operators must run in the daemon."""
    model.eval()
    with torch.no_grad():
        expected = model(x)
        _tensor.decomposed.clear()
        opd.torch.remote(model, client)
        with warnings.catch_warnings():
            if strict:
                warnings.simplefilter("error")  # a CPU fallback warns
            got = model(opd.torch.remote(x, client))
    assert isinstance(got, opd.torch.OpdTensor)
    assert got.shape == expected.shape and got.dtype == expected.dtype
    torch.testing.assert_close(got.cpu(), expected, rtol=RTOL, atol=ATOL)
    ours = [op for op in _tensor.decomposed if any(w in op for w in FAMILY)]
    assert not (_tensor.decomposed if strict else ours), "operators the daemon should run itself"


def test_conv_net_matches_eager(client):
    torch.manual_seed(0)
    model = nn.Sequential(
        nn.Conv2d(3, 8, 3, padding=1, padding_mode="reflect"), nn.ReLU(),
        nn.MaxPool2d(3, 2, 1),
        nn.Conv2d(8, 8, 3, padding=1, groups=8, bias=False), nn.ReLU(),  # depthwise
        nn.ConvTranspose2d(8, 4, 2, stride=2), nn.ReplicationPad2d(1),
        nn.AvgPool2d(2), nn.AdaptiveAvgPool2d((3, 3)), nn.Flatten(), nn.Linear(36, 5))
    run_remote(client, model, torch.randn(2, 3, 16, 16))


def test_conv_1d_3d_and_float64_match_eager(client):
    torch.manual_seed(1)
    net1d = nn.Sequential(nn.Conv1d(4, 6, 3, stride=2, dilation=2), nn.ReflectionPad1d(2),
                          nn.MaxPool1d(2), nn.AvgPool1d(2, ceil_mode=True),
                          nn.ConvTranspose1d(6, 2, 3, stride=2, output_padding=1))
    run_remote(client, net1d, torch.randn(2, 4, 33))
    net3d = nn.Sequential(nn.Conv3d(2, 4, 3, padding=(1, 0, 1), groups=2), nn.ReplicationPad3d(1),
                          nn.ConvTranspose3d(4, 2, 2, stride=(2, 1, 2))).double()
    run_remote(client, net3d, torch.randn(1, 2, 5, 6, 5, dtype=torch.float64))


def test_resnet18_matches_eager(client):
    torchvision = pytest.importorskip("torchvision")
    if client.schema("aten::native_batch_norm") is None:
        pytest.skip("batch norm (the normalization family's operators) is not in this build")
    torch.manual_seed(0)
    model = torchvision.models.resnet18()  # random weights
    run_remote(client, model, torch.randn(1, 3, 64, 64), strict=False)

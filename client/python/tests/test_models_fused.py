"""Modules whose eval-mode forward 1.13 runs through single fused or sampling operators run
through opd.torch.remote and match eager PyTorch: nn.TransformerEncoder and
nn.MultiheadAttention with batch_first (aten::_transformer_encoder_layer_fwd,
aten::_native_multi_head_attention), and a decoder of the segmentation kind (3-d pooling,
F.interpolate's upsampling, pixel_shuffle, nn.Unfold/Fold, grid_sample). Nothing is decomposed
in Python and nothing falls back to the CPU."""
import warnings

import pytest

torch = pytest.importorskip("torch")
nn = torch.nn
F = torch.nn.functional

import opd  # noqa: E402
import opd.torch  # noqa: E402
from opd.torch import _tensor  # noqa: E402

RTOL, ATOL = 1e-3, 1e-4


def run_remote(client, model, *xs):
    model.eval()
    with torch.no_grad():
        expected = model(*xs)
        _tensor.decomposed.clear()
        opd.torch.remote(model, client)
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # a CPU fallback warns
            got = model(*[opd.torch.remote(x, client) for x in xs])
    expected = expected if isinstance(expected, tuple) else (expected,)
    got = got if isinstance(got, tuple) else (got,)
    for g, e in zip(got, expected):
        assert isinstance(g, opd.torch.OpdTensor)
        assert g.shape == e.shape and g.dtype == e.dtype
        torch.testing.assert_close(g.cpu(), e, rtol=RTOL, atol=ATOL)
    assert not _tensor.decomposed, "operators the daemon should run itself"


@pytest.mark.parametrize("norm_first,activation", [(False, "relu"), (True, "gelu")])
def test_transformer_encoder_fast_path_matches_eager(client, norm_first, activation):
    torch.manual_seed(2)
    layer = nn.TransformerEncoderLayer(16, 4, 32, batch_first=True, norm_first=norm_first,
                                       activation=activation)
    run_remote(client, nn.TransformerEncoder(layer, 2, enable_nested_tensor=False),
               torch.randn(2, 5, 16))


class Attention(nn.Module):
    def __init__(self):
        super().__init__()
        self.mha = nn.MultiheadAttention(8, 2, batch_first=True)

    def forward(self, x, padding):
        return self.mha(x, x, x, key_padding_mask=padding)


def test_multi_head_attention_with_padding_mask_matches_eager(client):
    torch.manual_seed(3)
    padding = torch.zeros(2, 4, dtype=torch.bool)
    padding[0, 3] = padding[1, 1] = True
    run_remote(client, Attention(), torch.randn(2, 4, 8), padding)


class Decoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(4, 16, 3, padding=1)
        self.pool3d = nn.AdaptiveAvgPool3d((2, 3, 3))
        self.unfold = nn.Unfold(2, stride=2)
        self.fold = nn.Fold((8, 8), 2, stride=2)

    def forward(self, x):
        y = F.interpolate(self.conv(x), scale_factor=2, mode="bilinear", align_corners=False)
        y = F.pixel_shuffle(y, 2) + F.interpolate(y, scale_factor=2, mode="nearest")[:, :4]
        y = F.avg_pool3d(y.unsqueeze(1), 2).squeeze(1)
        y = self.fold(self.unfold(y)) + self.pool3d(y.unsqueeze(1)).sum()
        theta = torch.tensor([[[0.9, 0.1, 0.05], [-0.1, 0.8, 0.0]]]).expand(y.shape[0], 2, 3)
        grid = F.affine_grid(theta, list(y.shape), align_corners=False)
        return F.grid_sample(y, grid, align_corners=False)


def test_segmentation_decoder_matches_eager(client):
    torch.manual_seed(4)
    run_remote(client, Decoder(), torch.randn(2, 4, 4, 4))

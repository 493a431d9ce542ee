"""opd.torch with local tensors mixed in, written tensors, views and the CPU fallback: every
result matches eager or raises, naming what is not supported ([Note: Mixing local tensors and
OpdTensors] and [Note: What runs where] in opd/torch/_tensor.py)."""
import warnings

import pytest

torch = pytest.importorskip("torch")
F = torch.nn.functional

import opd  # noqa: E402
import opd.torch  # noqa: E402


def remote(x, c):
    return opd.torch.remote(x, c)


def test_a_written_local_tensor_gets_the_remote_values(client):
    out = torch.zeros(3)
    out.copy_(remote(torch.ones(3), client))
    assert type(out) is torch.Tensor and out.tolist() == [1, 1, 1]
    out.add_(remote(torch.full((3,), 2.0), client))
    assert out.tolist() == [3, 3, 3]
    out[1:].mul_(remote(torch.tensor(2.0), client))
    assert out.tolist() == [3, 6, 6]


def test_a_written_remote_tensor_gets_the_local_values(client):
    r = remote(torch.zeros(3), client)
    r.copy_(torch.ones(3))
    r.add_(torch.full((3,), 2.0))
    assert isinstance(r, opd.torch.OpdTensor) and r.tolist() == [3, 3, 3]


def test_circular_pad_and_lstm_match_eager(client):
    x = torch.randn(2, 3, 5)
    expected = F.pad(x, (1, 1), mode="circular")
    torch.testing.assert_close(F.pad(remote(x, client), (1, 1), mode="circular").cpu(),
                               expected)
    lstm = torch.nn.LSTM(4, 8, num_layers=2).eval()
    seq = torch.randn(5, 2, 4)
    with torch.no_grad():
        expected = lstm(seq)[0]
        remote(lstm, client)
        assert all(isinstance(w, opd.torch.OpdTensor) for w in lstm._flat_weights)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", opd.torch.OpdFallbackWarning)
            with opd.torch.cpu_fallback():
                got = lstm(remote(seq, client))[0]
    torch.testing.assert_close(got.cpu(), expected, rtol=1e-4, atol=1e-5)


def test_remote_module_keeps_parameters(client):
    lin = torch.nn.Linear(3, 2)
    frozen = torch.nn.Linear(3, 2).requires_grad_(False)
    remote(lin, client)
    remote(frozen, client)
    for p in lin.parameters():
        assert isinstance(p, opd.torch.OpdTensor) and isinstance(p, torch.nn.Parameter)
        assert p.requires_grad and p.is_leaf
    assert not any(p.requires_grad for p in frozen.parameters())


def test_fallback_writes_reach_views(client):
    base = torch.zeros(4, 4)
    r = remote(base.clone(), client)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", opd.torch.OpdFallbackWarning)
        with opd.torch.cpu_fallback():
            r[1:3, 1:3].hypot_(remote(torch.full((2, 2), 3.0), client))  # no kernel: the CPU
            r[0].i0_()
    base[1:3, 1:3].hypot_(torch.full((2, 2), 3.0))
    base[0].i0_()
    torch.testing.assert_close(r.cpu(), base)


def test_view_operators_the_daemon_lacks_are_views(client):
    base = torch.arange(16.0).view(4, 4)
    r = remote(base.clone(), client)
    r.diagonal().fill_(-1.0)  # diagonal: as_strided in the daemon
    base.diagonal().fill_(-1.0)
    torch.testing.assert_close(r.cpu(), base)


def test_unsupported_uses_raise(client):
    r = remote(torch.zeros(2, 3), client)
    with pytest.raises(NotImplementedError, match="aten::resize_"):
        r.resize_(3, 3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", opd.torch.OpdFallbackWarning)
        with opd.torch.cpu_fallback(), pytest.raises(NotImplementedError,
                                                     match="shape of an OpdTensor"):
            r.resize_(3, 3)
    assert r.shape == (2, 3) and r.cpu().shape == (2, 3)
    with pytest.raises(NotImplementedError, match="complex"):
        remote(torch.zeros(2, dtype=torch.complex64), client)
    with pytest.raises(NotImplementedError, match="opd has no kernel for aten::"):
        torch.special.zeta(r, r)


def test_in_place_views_change_an_opd_tensor(client):
    x = torch.arange(6.0).view(2, 3)
    r = remote(x.clone(), client)
    r.unsqueeze_(0).transpose_(1, 2)
    assert r.shape == (1, 3, 2) and r.stride() == x.unsqueeze(0).transpose(1, 2).stride()
    torch.testing.assert_close(r.cpu(), x.unsqueeze(0).transpose(1, 2))
    r.squeeze_(0).t_()
    torch.testing.assert_close(r.cpu(), x)
    v, m = torch.randn(3), torch.randn(3, 4)
    torch.testing.assert_close((remote(v, client) @ remote(m, client)).cpu(), v @ m)  # squeeze_
    torch.testing.assert_close(F.linear(remote(v, client), remote(m.t(), client)).cpu(),
                               F.linear(v, m.t()))


def test_to_with_copy(client):
    r = remote(torch.arange(3.0), client)
    assert r.to(torch.float64, copy=True).cpu().dtype == torch.float64
    assert r.to("cpu", copy=True).tolist() == [0, 1, 2]
    assert r.to(torch.float64, False, True).cpu().tolist() == [0, 1, 2]
    bn = remote(torch.nn.BatchNorm1d(3).eval(), client)
    x = torch.randn(4, 3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", opd.torch.OpdFallbackWarning)
        with torch.no_grad(), opd.torch.cpu_fallback():
            got = bn(remote(x, client)).cpu()
    torch.testing.assert_close(got, x / (1 + 1e-5) ** 0.5)


def test_softmax_with_dtype(client):
    x = torch.randn(3, 4)
    torch.testing.assert_close(torch.softmax(remote(x, client), 1, dtype=torch.float64).cpu(),
                               torch.softmax(x, 1, dtype=torch.float64))


def test_result_layout_is_the_daemons(client):
    # native_layer_norm's meta kernel keeps a permuted input's layout; the CPU kernel (and the
    # daemon) give a contiguous result: views of it must read what eager's views read
    x = torch.randn(1, 4, 3, 5)
    ln = torch.nn.LayerNorm(4)
    expected = ln(x.permute(0, 2, 3, 1)).detach()
    remote(ln, client)
    with torch.no_grad():
        got = ln(remote(x, client).permute(0, 2, 3, 1))
    assert got.stride() == expected.stride()
    torch.testing.assert_close(got.view(-1).cpu(), expected.view(-1))
    torch.testing.assert_close(got.diagonal(0, 1, 2).cpu(), expected.diagonal(0, 1, 2))

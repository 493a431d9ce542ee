"""Cached dispatch plans ([Note: Cached dispatch plans] in opd/torch/_plans.py): an operation
repeated on OpdTensors of the same geometry reuses its plan, and gives the same results as
the generic path and as eager in every case the key has to tell apart."""
import pytest

torch = pytest.importorskip("torch")
import opd  # noqa: E402
import opd.torch  # noqa: E402
from opd.torch import _plans  # noqa: E402


def remote(t, c):
    return opd.torch.remote(t, c)


def same(got, want):
    assert got.dtype == want.dtype and got.shape == want.shape and got.stride() == want.stride()
    torch.testing.assert_close(got.cpu(), want, rtol=0, atol=0, equal_nan=True)


def test_repeated_operations_reuse_their_plan(client):
    x = torch.randn(3, 4)
    rx = remote(x, client)
    y, ry = x, rx
    for _ in range(50):  # a chain: each input is the previous result
        y, ry = y * 1.5 + 1, ry * 1.5 + 1
    same(ry, y)
    plans = len(_plans._plans)
    for _ in range(50):
        ry = ry * 1.5 + 1
        y = y * 1.5 + 1
    assert len(_plans._plans) == plans  # the second round found every plan
    same(ry, y)
    same(torch.relu(rx) + rx, torch.relu(x) + x)  # the same tensor twice
    same(torch.cat([rx, ry, rx], 1), torch.cat([x, y, x], 1))  # a list of tensors


def test_numbers_are_told_apart_by_type_value_and_sign(client):
    i = torch.arange(6, dtype=torch.int64).reshape(2, 3)
    ri = remote(i, client)
    for _ in range(2):  # the second time by the plans
        same(ri + 1, i + 1)
        same(ri + 1.0, i + 1.0)
        same(ri + True, i + True)
        same(ri * 2, i * 2)
    z = torch.tensor([-0.0, 0.0, 1.0])
    rz = remote(z, client)
    for _ in range(2):
        for s in (0.0, -0.0):
            got, want = (rz * s).cpu(), z * s
            assert torch.equal(torch.signbit(got), torch.signbit(want))
    nan = float("nan")
    same(rz + nan, z + nan)
    same(rz + nan, z + nan)


def test_geometry_and_default_dtype_are_part_of_the_key(client):
    x = torch.randn(4, 3)
    rx = remote(x, client)
    for _ in range(2):
        same(rx + 1, x + 1)
        same(rx.t() + 1, x.t() + 1)  # other strides
        same(rx[1:] + 1, x[1:] + 1)  # another offset
    i = torch.arange(4, dtype=torch.int32)
    ri = remote(i, client)
    same(ri * 0.5, i * 0.5)
    before = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    try:
        same(ri * 0.5, i * 0.5)  # float64 now
    finally:
        torch.set_default_dtype(before)
    same(ri * 0.5, i * 0.5)


def test_zero_dim_local_tensors_by_value(client):
    x = torch.randn(5)
    rx = remote(x, client)
    for v in (2.0, 3.0, 2.0):
        s = torch.tensor(v, dtype=torch.float64)
        same(rx * s, x * s)
    s = torch.tensor(7, dtype=torch.int32)
    same(rx * s, x * s)


def test_tensors_of_two_connections_are_still_refused(daemon):
    with opd.connect(daemon.unix) as a, opd.connect(daemon.unix) as b:
        x = torch.randn(3)
        ra, rb = remote(x, a), remote(x, b)
        ya, yb = ra + 1, rb + 1  # results of equal geometry share their meta tensor
        same(ya + ya, (x + 1) + (x + 1))
        with pytest.raises(ValueError, match="two different opd connections"):
            ya + yb


def test_a_failed_call_makes_no_plan(client):
    rx = remote(torch.randn(2, 3), client)
    for _ in range(2):
        with pytest.raises(RuntimeError):
            rx @ rx  # PyTorch's checks on meta refuse it every time


def test_results_of_one_plan_are_not_aliases(client):
    # each result of a cached call has a meta tensor of its own: PyTorch's checks must not
    # take two results of the same plan for views of one tensor
    x = torch.randn(3)
    rx = remote(x, client)
    for _ in range(2):
        a, b = rx + 1, rx + 1
    assert a._meta is not b._meta
    torch.cat([a], out=b)  # refused when the output aliases an input
    same(b, x + 1)

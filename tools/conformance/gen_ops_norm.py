#!/usr/bin/python3
"""gen_ops_norm.py: conformance cases of the normalization, loss and activation family
(activations and their backward operators, softmax's backward operators, losses, norms,
embedding's backward), recorded from PyTorch 1.13 into tests/fixtures/ops_norm.json:

    /usr/bin/python3 tools/conformance/gen_ops_norm.py

See opgen.py for the format and the helpers. Every operator gets float32 and float64 cases,
strided views, 0-d and empty inputs where the operator accepts them, and PyTorch's errors.
"""
import numpy as np
import torch

import opgen
from opgen import S, ERR, TSpec

fam = opgen.Family("norm", seed=21)

# tolerances: transcendental formulas (erf, tanh, exp, log1p) in float32 differ from
# PyTorch's vectorized versions by a few ulps
LOOSE = (1e-5, 1e-5)


def unary_cases(extra=(), ints=False, kind="special"):
    """An activation's scenarios: float32 (with NaN and infinities), float64, strided, 0-d,
    empty; `extra` its Scalar arguments."""
    ex = list(extra)
    sc = [
        S("f32", lambda g: ([("self", g.T(g.shape(2), kind=kind))] + ex, ["float32"])),
        S("f64", lambda g: ([("self", g.T(g.shape(3), "float64", kind="wide"))] + ex, ["float64"])),
        S("strided", lambda g: ([("self", g.T(g.shape(3, 2), view="any"))] + ex, ["noncontig"])),
        S("zero_dim", lambda g: ([("self", g.T([]))] + ex, ["0d"])),
        S("empty", lambda g: ([("self", g.T([0, 3]))] + ex, ["empty"])),
    ]
    if ints:
        sc.append(S("int64", lambda g: ([("self", g.T(g.shape(2), "int64"))] + ex, ["integer"])))
    return sc


def backward_cases(extra=(), x_kind="special", ints=False, first=(), broadcast=True, mixed_layouts=True):
    """A backward operator's scenarios: grad_output then self (or the forward's result)."""
    ex, fi = list(extra), list(first)

    def args(g, grad, x):
        return fi + [("grad_output", grad)] + ex + [x]

    sc = [
        S("f32", lambda g: (args(g, g.T(sh := g.shape(2)), ("X", g.T(sh, kind=x_kind))), ["float32"])),
        S("f64", lambda g: (args(g, g.T(sh := g.shape(3), "float64"), ("X", g.T(sh, "float64", kind=x_kind))),
                            ["float64"])),
        S("strided", lambda g: (args(g, g.T(sh := g.shape(3, 2), view="any"), ("X", g.T(sh, kind=x_kind))),
                                ["noncontig"])),
        S("broadcast", lambda g: (args(g, g.T([3, 1]), ("X", g.T([2, 3, 4], kind=x_kind))), ["broadcast"])),
        S("promote", lambda g: (args(g, g.T([2, 3]), ("X", g.T([2, 3], "float64", kind=x_kind))), ["promotion"])),
        S("zero_dim", lambda g: (args(g, g.T([]), ("X", g.T([], kind=x_kind))), ["0d"])),
        S("empty", lambda g: (args(g, g.T([0, 2]), ("X", g.T([0, 2], kind=x_kind))), ["empty"])),
    ]
    if not broadcast:
        sc = [c for c in sc if c.scen_name != "broadcast"]
    if not mixed_layouts:
        sc = [c for c in sc if c.scen_name != "strided"] + [
            S("both_transposed", lambda g: (args(g, g.T([5, 4], view="transpose"),
                                                 ("X", g.T([5, 4], kind=x_kind, view="transpose"))), ["noncontig"])),
            S("both_sliced", lambda g: (args(g, g.T([5, 8], view="slice"),
                                             ("X", g.T([5, 8], kind=x_kind))), ["noncontig"]))]
    if ints:
        sc.append(S("int64", lambda g: (args(g, g.T(sh := g.shape(2), "int64"), ("X", g.T(sh, "int64"))),
                                        ["integer"])))
    return sc


def named(x_name, cases):
    """cases with their "X" argument renamed to the operator's."""
    out = []
    for c in cases:
        def fn(g, c=c):
            a, t = c(g)
            return [(x_name if n == "X" else n, v) for n, v in a], t
        out.append(S(c.scen_name, fn))
    return out


def not_impl(op_args):
    return [ERR("err_int", lambda g: (op_args(g), ["error"]), "RuntimeError", "not implemented for")]


# ---- activations ----
fam.op("hardtanh", unary_cases([("min_val", -1.5), ("max_val", 2)], ints=True) + [
    S("relu6_bounds", lambda g: ([("self", g.T([4, 5], kind="wide")), ("min_val", 0), ("max_val", 6)], ["float32"])),
    S("min_above_max", lambda g: ([("self", g.T([6])), ("min_val", 2.0), ("max_val", 1.0)], ["edge"])),
    S("int_float_bounds", lambda g: ([("self", g.T([7], "int64")), ("min_val", 0.5), ("max_val", 2.5)], ["integer"])),
], errors=[
    ERR("err_int32_bound", lambda g: ([("self", g.T([3], "int32")), ("min_val", -1), ("max_val", 2**40)],
                                      ["error"]), "RuntimeError", "without overflow"),
])
fam.op("threshold", unary_cases([("threshold", 0.5), ("value", -3.0)], ints=False) + [
    S("int64", lambda g: ([("self", g.T([9], "int64")), ("threshold", 2), ("value", 7)], ["integer"])),
])
fam.op("leaky_relu", unary_cases([("negative_slope", 0.2)]),
       errors=not_impl(lambda g: [("self", g.T([3], "int64")), ("negative_slope", 0.1)]))
fam.op("elu", unary_cases([("alpha", 1.3), ("scale", 1.05), ("input_scale", 0.7)]) + [
    S("defaults", lambda g: ([("self", g.T([5]))], ["float32"])),
], tol=LOOSE)
fam.op("mish", unary_cases(), tol=LOOSE)
fam.op("softplus", unary_cases([("beta", 2.0), ("threshold", 5.0)], kind="wide"), tol=LOOSE)
fam.op("hardswish", unary_cases() + [
    S("around_3", lambda g: ([("self", g.T([8], kind="halfint"))], ["edge"]))])
fam.op("hardsigmoid", unary_cases() + [
    S("around_3", lambda g: ([("self", g.T([8], kind="halfint"))], ["edge"]))])
fam.op("glu", [
    S("f32_last", lambda g: ([("self", g.T([3, 4])), ("dim", -1)], ["float32"])),
    S("f64_first", lambda g: ([("self", g.T([6, 2], "float64")), ("dim", 0)], ["float64"])),
    S("strided", lambda g: ([("self", g.T([4, 6, 2], view="any")), ("dim", 1)], ["noncontig"])),
    S("empty", lambda g: ([("self", g.T([0, 4])), ("dim", 1)], ["empty"])),
], errors=[
    ERR("err_odd", lambda g: ([("self", g.T([3, 5])), ("dim", 1)], ["error"]), "RuntimeError",
        "Halving dimension must be even"),
    ERR("err_dim", lambda g: ([("self", g.T([3, 4])), ("dim", 2)], ["error"]), "IndexError",
        "Dimension out of range"),
    ERR("err_0d", lambda g: ([("self", g.T([])), ("dim", 0)], ["error"]), "RuntimeError",
        "glu does not support 0-dimensional tensors"),
], tol=LOOSE)
fam.op("glu_backward", [
    S("f32_last", lambda g: ([("grad_output", g.T([3, 2])), ("self", g.T([3, 4])), ("dim", -1)], ["float32"])),
    S("f64_first", lambda g: ([("grad_output", g.T([3, 2], "float64")), ("self", g.T([6, 2], "float64")),
                               ("dim", 0)], ["float64"])),
    S("strided", lambda g: ([("grad_output", g.T([4, 3, 2], view="any")), ("self", g.T([4, 6, 2], view="any")),
                             ("dim", 1)], ["noncontig"])),
    S("broadcast_grad", lambda g: ([("grad_output", g.T([3])), ("self", g.T([4, 6])), ("dim", 1)], ["broadcast"])),
    S("empty", lambda g: ([("grad_output", g.T([0, 2])), ("self", g.T([0, 4])), ("dim", 1)], ["empty"])),
], errors=[
    ERR("err_odd", lambda g: ([("grad_output", g.T([3, 2])), ("self", g.T([3, 5])), ("dim", 1)], ["error"]),
        "RuntimeError", "Halving dimension must be even"),
    ERR("err_shape", lambda g: ([("grad_output", g.T([4, 4])), ("self", g.T([4, 6])), ("dim", 1)], ["error"]),
        "RuntimeError", "The size of tensor a (3) must match the size of tensor b (4) at non-singleton dimension 1"),
    ERR("err_dtype", lambda g: ([("grad_output", g.T([4, 3], "float64")), ("self", g.T([4, 6])), ("dim", 1)],
                                ["error"]), "RuntimeError", "Found dtype Double but expected Float"),
    ERR("err_0d", lambda g: ([("grad_output", g.T([])), ("self", g.T([])), ("dim", 0)], ["error"]),
        "RuntimeError", "glu does not support 0-dimensional tensors"),
], tol=LOOSE)
fam.op("prelu", [
    S("f32_channels", lambda g: ([("self", g.T([2, 3, 4])), ("weight", g.T([3], kind="pos"))], ["float32"])),
    S("f64_shared", lambda g: ([("self", g.T([4, 5], "float64")), ("weight", g.T([1], "float64"))], ["float64"])),
    S("one_d", lambda g: ([("self", g.T([6])), ("weight", g.T([1]))], ["1d"])),
    S("zero_dim", lambda g: ([("self", g.T([])), ("weight", g.T([]))], ["0d"])),
    S("strided", lambda g: ([("self", g.T([3, 4, 2], view="any")), ("weight", g.T([4], view="slice"))],
                            ["noncontig"])),
], errors=[
    ERR("err_channels", lambda g: ([("self", g.T([2, 3, 4])), ("weight", g.T([4]))], ["error"]), "RuntimeError",
        "Mismatch of parameter numbers and input channel size"),
    ERR("err_weight_2d", lambda g: ([("self", g.T([2, 3, 4])), ("weight", g.T([1, 3]))], ["error"]), "RuntimeError",
        "Expected `weight` to be a scalar or 1D tensor"),
    ERR("err_dtype", lambda g: ([("self", g.T([2, 3, 4])), ("weight", g.T([3], "float64"))], ["error"]),
        "RuntimeError", "Found dtype Double but expected Float"),
])
fam.op("prelu_backward", [
    S("f32_channels", lambda g: ([("grad_output", g.T([2, 3, 4])), ("self", g.T([2, 3, 4])),
                                  ("weight", g.T([3], kind="pos"))], ["float32"])),
    S("f64_shared", lambda g: ([("grad_output", g.T([4, 5], "float64")), ("self", g.T([4, 5], "float64")),
                                ("weight", g.T([1], "float64"))], ["float64"])),
    S("strided", lambda g: ([("grad_output", g.T([3, 4, 2], view="any")), ("self", g.T([3, 4, 2], view="any")),
                             ("weight", g.T([4]))], ["noncontig"])),
], tol=LOOSE)
fam.op("log_sigmoid_forward", unary_cases(kind="wide"), errors=not_impl(lambda g: [("self", g.T([3], "int64"))]),
       tol=LOOSE)
fam.op("log_sigmoid", unary_cases(kind="wide"), tol=LOOSE)

# ---- activations' backward operators ----
fam.op("threshold_backward", named("self", backward_cases([("threshold", 0.0)], ints=True)))
# PyTorch 1.13's gelu_backward (through oneDNN) fails on broadcast operands ("could not create
# a primitive descriptor for a reorder primitive") and returns wrong values when grad_output
# and self have different layouts: neither is a case here.
fam.op("gelu_backward", named("self", backward_cases(broadcast=False, mixed_layouts=False)) + [
    S("tanh_f32", lambda g: ([("grad_output", g.T(sh := g.shape(2))), ("self", g.T(sh)), ("approximate", "tanh")],
                             ["float32"])),
    S("tanh_f64", lambda g: ([("grad_output", g.T(sh := g.shape(2), "float64")),
                              ("self", g.T(sh, "float64", kind="special")), ("approximate", "tanh")], ["float64"])),
    S("tanh_strided", lambda g: ([("grad_output", g.T([3, 4], view="transpose")),
                                  ("self", g.T([3, 4], view="transpose")),
                                  ("approximate", "tanh")], ["noncontig"])),
], errors=[ERR("err_approximate", lambda g: ([("grad_output", g.T([2])), ("self", g.T([2])),
                                              ("approximate", "foo")], ["error"]),
               "RuntimeError", "approximate argument must be either none or tanh")], tol=LOOSE)
fam.op("silu_backward", named("self", backward_cases()), tol=LOOSE)
fam.op("sigmoid_backward", named("output", backward_cases(x_kind="unit")),
       errors=not_impl(lambda g: [("grad_output", g.T([3], "int64")), ("output", g.T([3], "int64"))]))
fam.op("tanh_backward", named("output", backward_cases(x_kind="unit")))
# At x = -3 and 3 PyTorch's vectorized and scalar hardswish_backward / hardsigmoid_backward
# disagree (which one an element takes depends on its position); the cases avoid them.
fam.op("hardswish_backward", named("self", backward_cases(x_kind="normal")))
fam.op("hardsigmoid_backward", named("self", backward_cases(x_kind="normal")))
fam.op("hardtanh_backward", named("self", backward_cases([("min_val", -1.0), ("max_val", 1.5)], x_kind="halfint")))
fam.op("leaky_relu_backward", named("self", backward_cases([("negative_slope", 0.1), ("self_is_result", False)]))
       + [S("result_positive_slope", lambda g: ([("grad_output", g.T([5])), ("self", g.T([5])),
                                                 ("negative_slope", 0.3), ("self_is_result", True)], ["float32"]))],
       errors=[ERR("err_inplace_negative", lambda g: ([("grad_output", g.T([3])), ("self", g.T([3])),
                                                        ("negative_slope", -0.1), ("self_is_result", True)],
                                                       ["error"]),
                   "RuntimeError", "In-place leakyReLu backward calculation is triggered with a negative slope")])
fam.op("elu_backward", named("self_or_result", backward_cases(
    [("alpha", 1.2), ("scale", 1.1), ("input_scale", 0.9), ("is_result", False)])) + [
    S("is_result", lambda g: ([("grad_output", g.T([6])), ("alpha", 1.0), ("scale", 1.0), ("input_scale", 1.0),
                               ("is_result", True), ("self_or_result", g.T([6], kind="unit"))], ["float32"])),
], errors=[ERR("err_inplace_negative", lambda g: ([("grad_output", g.T([3])), ("alpha", -1.0), ("scale", 1.0),
                                                   ("input_scale", 1.0), ("is_result", True),
                                                   ("self_or_result", g.T([3]))], ["error"]),
               "RuntimeError", "In-place elu backward calculation is triggered with a negative slope")], tol=LOOSE)
fam.op("softplus_backward", named("self", backward_cases([("beta", 1.5), ("threshold", 3.0)], x_kind="wide")),
       tol=LOOSE)
fam.op("mish_backward", named("self", backward_cases()), tol=LOOSE)


def log_sigmoid_backward(scen, dtype, shape, view=None):
    def fn(g):
        x = g.T(shape, dtype, kind="wide", view=view)
        _, buf = torch.ops.aten.log_sigmoid_forward(gc_decode(x))
        return [("grad_output", g.T(shape, dtype, view=view)), ("self", x),
                ("buffer", TSpec(dtype, list(shape), buf.contiguous().numpy().reshape(-1)))], [dtype]
    return S(scen, fn)


fam.op("log_sigmoid_backward", [log_sigmoid_backward("f32", "float32", [3, 4]),
                                log_sigmoid_backward("f64", "float64", [5]),
                                log_sigmoid_backward("strided", "float32", [4, 3], view="transpose"),
                                log_sigmoid_backward("zero_dim", "float32", [])], tol=LOOSE)


# ---- softmax's backward operators ----
def softmax_out(g, shape, dim, log, dtype="float32"):
    """The forward's output of a random input (what the backward operator is given)."""
    x = torch.from_numpy(g.data(int(np.prod(shape)), dtype).reshape(shape))
    y = torch.log_softmax(x, dim) if log else torch.softmax(x, dim)
    return TSpec(dtype, list(shape), y.numpy().reshape(-1))


# PyTorch 1.13's _softmax_backward_data gives wrong values for a transposed grad_output or
# output (autograd passes it contiguous ones): the strided cases are slices.
for op, log in (("_softmax_backward_data", False), ("_log_softmax_backward_data", True)):
    fam.op(op, [
        S("f32_last", lambda g, log=log: ([("grad_output", g.T([3, 5])), ("output", softmax_out(g, [3, 5], 1, log)),
                                           ("dim", -1), ("input_dtype", torch.float32)], ["float32"])),
        S("f64_mid", lambda g, log=log: ([("grad_output", g.T([2, 4, 3], "float64")),
                                          ("output", softmax_out(g, [2, 4, 3], 1, log, "float64")),
                                          ("dim", 1), ("input_dtype", torch.float64)], ["float64"])),
        S("f32_first", lambda g, log=log: ([("grad_output", g.T([6, 2])), ("output", softmax_out(g, [6, 2], 0, log)),
                                            ("dim", 0), ("input_dtype", torch.float32)], ["float32"])),
        S("strided", lambda g, log=log: ([("grad_output", g.T([4, 3], view="slice")),
                                          ("output", softmax_out(g, [4, 3], 1, log)),
                                          ("dim", 1), ("input_dtype", torch.float32)], ["noncontig"])),
        S("zero_dim", lambda g, log=log: ([("grad_output", g.T([])), ("output", softmax_out(g, [], 0, log)),
                                           ("dim", 0), ("input_dtype", torch.float32)], ["0d"])),
        S("empty", lambda g, log=log: ([("grad_output", g.T([0, 3])), ("output", g.T([0, 3])),
                                        ("dim", 1), ("input_dtype", torch.float32)], ["empty"])),
    ], errors=([] if log else [  # (PyTorch's log_softmax backward does not check the shapes)
        ERR("err_shape", lambda g: ([("grad_output", g.T([3, 4])), ("output", g.T([2, 4])), ("dim", 1),
                                     ("input_dtype", torch.float32)], ["error"]),
            "RuntimeError", "to have same size as tensor for argument #2 'output'")]) + [
        ERR("err_dim", lambda g: ([("grad_output", g.T([3, 4])), ("output", g.T([3, 4])), ("dim", 2),
                                   ("input_dtype", torch.float32)], ["error"]),
            "IndexError", "Dimension out of range"),
        ERR("err_dtype", lambda g: ([("grad_output", g.T([3, 4])), ("output", g.T([3, 4], "float64")), ("dim", 1),
                                     ("input_dtype", torch.float32)], ["error"]),
            "RuntimeError", "expected scalar type Float but found Double"),
    ], tol=LOOSE)

# ---- losses ----
REDUCTIONS = ((0, "none"), (1, "mean"), (2, "sum"))


def mse_cases():
    sc = []
    for r, rn in REDUCTIONS:
        sc += [
            S("f32_" + rn, lambda g, r=r: ([("self", g.T(sh := g.shape(2))), ("target", g.T(sh)), ("reduction", r)],
                                           ["float32"])),
            S("f64_" + rn, lambda g, r=r: ([("self", g.T(sh := g.shape(3), "float64")),
                                            ("target", g.T(sh, "float64")), ("reduction", r)], ["float64"])),
            S("strided_" + rn, lambda g, r=r: ([("self", g.T([4, 5], view="any")), ("target", g.T([4, 5], view="any")),
                                                ("reduction", r)], ["noncontig"])),
        ]
    sc += [
        S("broadcast", lambda g: ([("self", g.T([3, 4])), ("target", g.T([4])), ("reduction", 0)], ["broadcast"])),
        S("promote", lambda g: ([("self", g.T([3, 4])), ("target", g.T([3, 4], "float64")), ("reduction", 1)],
                                ["promotion"])),
        S("zero_dim", lambda g: ([("self", g.T([])), ("target", g.T([])), ("reduction", 1)], ["0d"])),
        S("empty_sum", lambda g: ([("self", g.T([0, 3])), ("target", g.T([0, 3])), ("reduction", 2)], ["empty"])),
        S("empty_mean", lambda g: ([("self", g.T([0, 3])), ("target", g.T([0, 3])), ("reduction", 1)], ["empty"])),
    ]
    return sc


fam.op("mse_loss", mse_cases(), errors=[
    ERR("err_shape", lambda g: ([("self", g.T([3, 4])), ("target", g.T([5])), ("reduction", 1)], ["error"]),
        "RuntimeError", "must match the size of tensor b"),
    ERR("err_int", lambda g: ([("self", g.T([3], "int64")), ("target", g.T([3], "int64")), ("reduction", 1)],
                              ["error"]), "RuntimeError", "not implemented for"),
], tol=LOOSE)

for op, k, kv in (("smooth_l1_loss", "beta", 0.7), ("huber_loss", "delta", 1.5)):
    fam.op(op, [S(c.scen_name, lambda g, c=c, k=k, kv=kv: (c(g)[0] + [(k, kv)], c(g)[1])) for c in mse_cases()] + [
        S("default_" + k, lambda g: ([("self", g.T([3, 4])), ("target", g.T([3, 4])), ("reduction", 1)], ["float32"])),
    ] + ([S("beta_zero", lambda g: ([("self", g.T([3, 4])), ("target", g.T([3, 4])), ("reduction", 2),
                                     ("beta", 0.0)], ["edge"]))] if op == "smooth_l1_loss" else []),
        errors=[ERR("err_" + k, lambda g, k=k: ([("self", g.T([3])), ("target", g.T([3])), ("reduction", 1),
                                                   (k, -1.0)], ["error"]), "RuntimeError",
                    "does not support n")], tol=LOOSE)


def robust_backward(op, scen, dtype, shape, r, k, kv, target_shape=None):
    def fn(g):
        return [("grad_output", g.T(shape if r == 0 else [], dtype)), ("self", g.T(shape, dtype, kind="halfint")),
                ("target", g.T(target_shape or shape, dtype, kind="halfint")), ("reduction", r), (k, kv)], [dtype]
    return S(scen, fn)


for op, k, kv in (("smooth_l1_loss_backward", "beta", 1.0), ("huber_loss_backward", "delta", 1.5)):
    fam.op(op, [robust_backward(op, "f32_" + rn, "float32", [3, 4], r, k, kv) for r, rn in REDUCTIONS] +
           [robust_backward(op, "f64_" + rn, "float64", [5], r, k, kv) for r, rn in REDUCTIONS] +
           [robust_backward(op, "broadcast_target", "float32", [3, 4], 0, k, kv, target_shape=[4])] +
           ([robust_backward(op, "beta_zero", "float32", [6], 2, k, 0.0)] if k == "beta" else []), tol=LOOSE)


def mse_backward(scen, dtype, shape, r, view=None, target_shape=None, grad_shape=None, tdtype=None):
    def fn(g):
        gs = grad_shape if grad_shape is not None else (shape if r == 0 else [])
        return [("grad_output", g.T(gs, dtype)), ("self", g.T(shape, dtype, view=view)),
                ("target", g.T(target_shape or shape, tdtype or dtype, view=view)), ("reduction", r)], [dtype]
    return S(scen, fn)


fam.op("mse_loss_backward", [
    mse_backward("f32_" + rn, "float32", [3, 4], r) for r, rn in REDUCTIONS] + [
    mse_backward("f64_" + rn, "float64", [2, 3, 2], r) for r, rn in REDUCTIONS] + [
    mse_backward("strided_mean", "float32", [4, 3], 1, view="any"),
    mse_backward("broadcast_target", "float32", [3, 4], 0, target_shape=[4]),
    mse_backward("grad_scalar_none", "float32", [3, 4], 0, grad_shape=[]),
    mse_backward("zero_dim", "float32", [], 1),
    mse_backward("empty", "float32", [0, 2], 1),
], errors=[
    ERR("err_promote", lambda g: ([("grad_output", g.T([])), ("self", g.T([3])), ("target", g.T([3], "float64")),
                                   ("reduction", 1)], ["error"]), "RuntimeError", "Found dtype Double but expected Float"),
], tol=LOOSE)


def probs(g, shape, dtype, view=None):
    """Values in (0, 1): a view of a base of probabilities."""
    n = int(np.prod(shape))
    data = (g.rng.random(n) * 0.98 + 0.01).astype(np.float32 if dtype == "float32" else np.float64)
    if view is None:
        return TSpec(dtype, list(shape), data)
    base = list(shape[::-1])
    return TSpec(dtype, base, data, [["transpose", 0, len(shape) - 1]])


def bce_case(scen, dtype, shape, r, weight=None, view=None, backward=False):
    def fn(g):
        a = [("self", probs(g, shape, dtype, view)), ("target", probs(g, shape, dtype)), ("reduction", r)]
        if weight is not None:
            a.append(("weight", g.T(weight, dtype, kind="pos")))
        if backward:
            a.append(("grad_output", g.T(shape if r == 0 else [], dtype)))
        return a, [dtype]
    return S(scen, fn)


for op, bw in (("binary_cross_entropy", False), ("binary_cross_entropy_backward", True)):
    fam.op(op, [bce_case("f32_" + rn, "float32", [3, 4], r, backward=bw) for r, rn in REDUCTIONS] +
           [bce_case("f64_" + rn, "float64", [5], r, backward=bw) for r, rn in REDUCTIONS] + [
        bce_case("weight", "float32", [3, 4], 1, weight=[4], backward=bw),
        bce_case("weight_none", "float64", [2, 3], 0, weight=[2, 3], backward=bw),
        bce_case("transposed", "float32", [4, 3], 2, view="transpose", backward=bw),
        bce_case("zero_dim", "float32", [], 1, backward=bw),
        bce_case("empty", "float32", [0], 2, backward=bw),
    ], errors=[] if bw else [
        ERR("err_shape", lambda g: ([("self", probs(g, [3], "float32")), ("target", probs(g, [4], "float32"))],
                                    ["error"]), "RuntimeError", "must match the size of tensor b"),
        ERR("err_range", lambda g: ([("self", TSpec("float32", [3], np.array([0.5, 1.5, 0.2], np.float32))),
                                     ("target", probs(g, [3], "float32"))], ["error"]),
            "RuntimeError", "all elements of input should be between 0 and 1"),
    ], tol=LOOSE)


def nll_args(g, dtype, batch, classes, r, weight=False, ignore=-100, with_ignored=False, view=None, grad=None):
    shape = [batch, classes] if batch is not None else [classes]
    x = g.T(shape, dtype, view=view)
    n = batch if batch is not None else 1
    t = g.rng.integers(0, classes, n)
    if with_ignored and n > 1:
        t[g.rng.integers(0, n)] = ignore
    target = TSpec("int64", [n] if batch is not None else [], t.astype(np.int64))
    w = g.T([classes], dtype, kind="pos") if weight else None
    a = [("self", x), ("target", target), ("weight", w), ("reduction", r), ("ignore_index", ignore)]
    if grad is not None:
        per_sample = r == 0 and batch is not None
        a.append(("grad_output", g.T([batch] if per_sample else [], dtype)))
        # total_weight as the forward computes it
        _, tw = torch.ops.aten.nll_loss_forward(gc_decode(x), gc_decode(target), gc_decode(w) if w else None, r,
                                                ignore)
        a.append(("total_weight", TSpec(dtype, [], tw.reshape(1).numpy())))
    return a


def gc_decode(spec):
    return opgen.gc.dec_tensor(spec.to_json())


def nll_cases(backward):
    gr = True if backward else None
    sc = []
    for r, rn in REDUCTIONS:
        sc += [
            S("f32_" + rn, lambda g, r=r: (nll_args(g, "float32", 4, 5, r, grad=gr), ["float32"])),
            S("f64_weight_" + rn, lambda g, r=r: (nll_args(g, "float64", 6, 3, r, weight=True, with_ignored=True,
                                                           grad=gr), ["float64"])),
            S("one_d_" + rn, lambda g, r=r: (nll_args(g, "float32", None, 4, r, grad=gr), ["1d"])),
        ]
    sc += [
        S("ignore_index", lambda g: (nll_args(g, "float32", 5, 3, 1, ignore=1, with_ignored=True, grad=gr),
                                     ["ignore_index"])),
        S("strided", lambda g: (nll_args(g, "float32", 3, 4, 1, weight=True, view="transpose", grad=gr),
                                ["noncontig"])),
        S("empty_sum", lambda g: (nll_args(g, "float32", 0, 3, 2, grad=gr), ["empty"])),
    ]
    return sc


fam.op("nll_loss_backward", nll_cases(True), errors=[
    ERR("err_grad_shape", lambda g: ([("grad_output", g.T([2])), ("self", g.T([3, 4])),
                                      ("target", TSpec("int64", [3], np.array([0, 1, 3], np.int64))),
                                      ("weight", None), ("reduction", 0), ("ignore_index", -100), ("total_weight", g.T([]))], ["error"]),
        "RuntimeError", "Expected a tensor of dimension 1 and tensor.size[0] == 3"),
    ERR("err_grad_numel", lambda g: ([("grad_output", g.T([3])), ("self", g.T([3, 4])),
                                      ("target", TSpec("int64", [3], np.array([0, 1, 3], np.int64))),
                                      ("weight", None), ("reduction", 1), ("ignore_index", -100), ("total_weight", g.T([]))], ["error"]),
        "RuntimeError", "Expected a single element grad_output tensor"),
    ERR("err_total_weight", lambda g: ([("grad_output", g.T([])), ("self", g.T([3, 4])),
                                        ("target", TSpec("int64", [3], np.array([0, 1, 3], np.int64))),
                                        ("weight", None), ("reduction", 1), ("ignore_index", -100), ("total_weight", g.T([2]))],
                                       ["error"]),
        "RuntimeError", "expected total_weight to be a  single element tensor"),
    ERR("err_target_dtype", lambda g: ([("grad_output", g.T([])), ("self", g.T([3, 4])),
                                        ("target", TSpec("int32", [3], np.array([0, 1, 3], np.int32))),
                                        ("weight", None), ("reduction", 1), ("ignore_index", -100), ("total_weight", g.T([]))],
                                       ["error"]),
        "RuntimeError", "expected scalar type Long but found Int"),
    ERR("err_size", lambda g: ([("grad_output", g.T([])), ("self", g.T([3, 4])),
                                ("target", TSpec("int64", [2], np.array([0, 1], np.int64))),
                                ("weight", None), ("reduction", 1), ("ignore_index", -100), ("total_weight", g.T([]))], ["error"]),
        "RuntimeError", "size mismatch (got input: [3, 4], target: [2])"),
    ERR("err_weight", lambda g: ([("grad_output", g.T([])), ("self", g.T([3, 4])),
                                  ("target", TSpec("int64", [3], np.array([0, 1, 3], np.int64))),
                                  ("weight", g.T([3])), ("reduction", 1), ("ignore_index", -100),
                                  ("total_weight", g.T([]))], ["error"]),
        "RuntimeError", "weight tensor should be defined either for all"),
    ERR("err_3d", lambda g: ([("grad_output", g.T([])), ("self", g.T([2, 3, 4])),
                              ("target", TSpec("int64", [2], np.array([0, 1], np.int64))),
                              ("weight", None), ("reduction", 1), ("ignore_index", -100), ("total_weight", g.T([]))], ["error"]),
        "RuntimeError", "input tensor should be 1D or 2D"),
    ERR("err_target_range", lambda g: ([("grad_output", g.T([])), ("self", g.T([3, 4])),
                                        ("target", TSpec("int64", [3], np.array([0, 5, 3], np.int64))),
                                        ("weight", None), ("reduction", 1), ("ignore_index", -100), ("total_weight", g.T([]))],
                                       ["error"]),
        "IndexError", "Target 5 is out of bounds."),
])

fam.op("nll_loss_forward", nll_cases(False), errors=[
    ERR("err_target_range", lambda g: ([("self", g.T([3, 4])), ("target", TSpec("int64", [3], np.array([0, 5, 3], np.int64))),
                                        ("weight", None), ("reduction", 1), ("ignore_index", -100)], ["error"]),
        "IndexError", "Target 5 is out of bounds."),
    ERR("err_negative_target", lambda g: ([("self", g.T([3, 4])),
                                           ("target", TSpec("int64", [3], np.array([0, -1, 3], np.int64))),
                                           ("weight", None), ("reduction", 1), ("ignore_index", -100)], ["error"]),
        "IndexError", "Target -1 is out of bounds."),
    ERR("err_size", lambda g: ([("self", g.T([3, 4])), ("target", TSpec("int64", [2], np.array([0, 1], np.int64))),
                                ("weight", None), ("reduction", 1), ("ignore_index", -100)], ["error"]),
        "RuntimeError", "size mismatch (got input: [3, 4], target: [2])"),
    ERR("err_weight_dtype", lambda g: ([("self", g.T([3, 4], "float64")),
                                        ("target", TSpec("int64", [3], np.array([0, 1, 3], np.int64))),
                                        ("weight", g.T([4])), ("reduction", 1), ("ignore_index", -100)], ["error"]),
        "RuntimeError", "expected scalar type Double but found Float"),
], tol=LOOSE)



def nll2d_args(g, dtype, shape, r, weight=False, ignore=-100, with_ignored=False, view=None, grad=False):
    n, c, h, w_ = shape
    x = g.T(shape, dtype, view=view)
    t = g.rng.integers(0, c, n * h * w_)
    if with_ignored and t.size > 1:
        t[g.rng.integers(0, t.size, 2)] = ignore
    target = TSpec("int64", [n, h, w_], t.astype(np.int64))
    wt = g.T([c], dtype, kind="pos") if weight else None
    a = [("self", x), ("target", target), ("weight", wt), ("reduction", r), ("ignore_index", ignore)]
    if grad:
        a.append(("grad_output", g.T([n, h, w_] if r == 0 else [], dtype)))
        # total_weight as the forward computes it
        _, tw = torch.ops.aten.nll_loss2d_forward(gc_decode(x), gc_decode(target), gc_decode(wt) if wt else None,
                                                  r, ignore)
        a.append(("total_weight", TSpec(dtype, [], tw.reshape(1).numpy())))
    return a


def nll2d_cases(backward):
    sc = []
    for r, rn in REDUCTIONS:
        sc += [
            S("f32_" + rn, lambda g, r=r: (nll2d_args(g, "float32", [2, 4, 3, 5], r, grad=backward), ["float32"])),
            S("f64_weight_ignored_" + rn,
              lambda g, r=r: (nll2d_args(g, "float64", [3, 3, 2, 4], r, weight=True, with_ignored=True,
                                         grad=backward), ["float64"])),
        ]
    sc += [
        S("ignore_index", lambda g: (nll2d_args(g, "float32", [2, 3, 4, 4], 1, ignore=1, with_ignored=True,
                                                grad=backward), ["ignore_index"])),
    ]
    if not backward:  # PyTorch's backward refuses a strided self (its gradient would be strided)
        sc.append(S("strided", lambda g: (nll2d_args(g, "float32", [2, 3, 4, 3], 1, weight=True, view="any"),
                                          ["noncontig"])))
    sc += [
        S("empty_sum", lambda g: (nll2d_args(g, "float32", [0, 3, 2, 2], 2, grad=backward), ["empty"])),
        S("all_ignored_mean", lambda g: ([("self", g.T([1, 2, 2, 2])),
                                          ("target", TSpec("int64", [1, 2, 2], np.full(4, -100, np.int64))),
                                          ("weight", None), ("reduction", 1), ("ignore_index", -100)]
                                         + ([("grad_output", g.T([])),
                                             ("total_weight", TSpec("float32", [], np.zeros(1, np.float32)))]
                                            if backward else []), ["ignore_index"])),
    ]
    return sc


def nll2d_err(name, self_shape, target_shape, msg, exc="RuntimeError", target=None, weight=None, dtype="float32",
              tdtype="int64", backward=False, grad_shape=(), tw_shape=(), reduction=1, wdtype=None):
    def fn(g):
        n = int(np.prod(target_shape))
        t = target if target is not None else np.zeros(n)
        a = [("self", g.T(self_shape, dtype)), ("target", TSpec(tdtype, target_shape, np.asarray(t).astype(tdtype))),
             ("weight", g.T([weight], wdtype or dtype) if weight else None), ("reduction", reduction),
             ("ignore_index", -100)]
        if backward:
            a += [("grad_output", g.T(list(grad_shape), dtype)), ("total_weight", g.T(list(tw_shape), dtype))]
        return a, ["error"]
    return ERR(name, fn, exc, msg)


def nll2d_errors(backward):
    b = dict(backward=backward)
    return [
        nll2d_err("err_target_dims", [2, 3, 4, 4], [2, 4], "only batches of spatial targets supported (3D tensors)", **b),
        nll2d_err("err_input_dims", [3, 4, 4], [2, 4, 4], "only batches of spatial inputs supported (4D tensors)", **b),
        nll2d_err("err_size", [2, 3, 4, 5], [2, 3, 5], "size mismatch (got input: [2, 3, 4, 5] , target: [2, 3, 5]", **b),
        nll2d_err("err_weight", [2, 3, 2, 2], [2, 2, 2], "weight tensor should be defined either for all or no classes",
                  weight=4, **b),
        nll2d_err("err_weight_dtype", [2, 3, 2, 2], [2, 2, 2], "expected scalar type Float but found Double",
                  weight=3, wdtype="float64", **b),
        nll2d_err("err_target_dtype", [2, 3, 2, 2], [2, 2, 2], "expected scalar type Long but found Int",
                  tdtype="int32", **b),
        nll2d_err("err_target_range", [1, 3, 2, 2], [1, 2, 2], "Target 5 is out of bounds.", "IndexError",
                  target=[0, 5, 1, 2], **b),
    ] + ([
        nll2d_err("err_dtype", [2, 3, 2, 2], [2, 2, 2], "\"nll_loss2d_forward_out_frame\" not implemented for 'Long'",
                  dtype="int64"),
    ] if not backward else [
        nll2d_err("err_grad_numel", [2, 3, 2, 2], [2, 2, 2], "Expected a single element grad_output tensor",
                  backward=True, grad_shape=[2]),
        nll2d_err("err_grad_shape", [2, 3, 2, 2], [2, 2, 2], "size mismatch (got grad_output: [2, 2, 3] target: [2, 2, 2]",
                  backward=True, grad_shape=[2, 2, 3], reduction=0),
        nll2d_err("err_total_weight", [2, 3, 2, 2], [2, 2, 2], "expected total_weight to be a single element tensor",
                  backward=True, tw_shape=[2]),
    ])


fam.op("nll_loss2d_forward", nll2d_cases(False), errors=nll2d_errors(False), tol=LOOSE)
fam.op("nll_loss2d_backward", nll2d_cases(True), errors=nll2d_errors(True), tol=LOOSE)
fam.op("nll_loss2d", [
    S("mean", lambda g: (nll2d_args(g, "float32", [2, 4, 3, 3], 1)[:5], [])),
    S("none_weight", lambda g: (nll2d_args(g, "float64", [1, 3, 2, 4], 0, weight=True, with_ignored=True), ["float64"])),
], tol=LOOSE)



# ---- the fused transformer operators (nn.MultiheadAttention and nn.TransformerEncoderLayer
# in eval mode with batch_first) ----
# a composite of linear, matmul and softmax: float32 sums in another order than PyTorch's
ATTN_TOL = (1e-4, 1e-5)


def mha_args(g, b, t_, d, h, dtype="float32", same_qkv=True, mask=None, mask_type=None, need_weights=False,
             average=True):
    q = g.T([b, t_, d], dtype)
    k, v = (q, q) if same_qkv else (g.T([b, t_, d], dtype), g.T([b, t_, d], dtype))
    return [("query", q), ("key", k), ("value", v), ("embed_dim", d), ("num_head", h),
            ("qkv_weight", g.T([3 * d, d], dtype)), ("qkv_bias", g.T([3 * d], dtype)),
            ("proj_weight", g.T([d, d], dtype)), ("proj_bias", g.T([d], dtype)), ("mask", mask),
            ("need_weights", need_weights), ("average_attn_weights", average), ("mask_type", mask_type)]


def padding_mask(b, t_, hidden):
    m = np.zeros((b, t_), bool)
    for i, j in hidden:
        m[i, j] = True
    return TSpec("bool", [b, t_], m.reshape(-1))


fam.op("_native_multi_head_attention", [
    S("self_attention", lambda g: (mha_args(g, 2, 5, 16, 2), [])),
    S("small_heads_weights", lambda g: (mha_args(g, 2, 4, 12, 3, need_weights=True), [])),
    S("per_head_weights", lambda g: (mha_args(g, 1, 3, 8, 2, need_weights=True, average=False), [])),
    S("distinct_qkv_f64", lambda g: (mha_args(g, 2, 3, 6, 2, "float64", same_qkv=False, need_weights=True),
                                     ["float64"])),
    S("padding_mask", lambda g: (mha_args(g, 2, 4, 8, 2, mask=padding_mask(2, 4, [(0, 3), (1, 1), (1, 2)]),
                                          mask_type=1, need_weights=True), ["mask"])),
    S("full_mask_f64", lambda g: (mha_args(g, 1, 3, 4, 2, "float64", mask=TSpec(
        "bool", [1, 2, 3, 3], np.triu(np.ones((1, 2, 3, 3), bool), 1).reshape(-1)), mask_type=2, need_weights=True,
        average=False), ["mask", "float64"])),
    S("empty_batch", lambda g: (mha_args(g, 0, 3, 8, 2), ["empty"])),
], errors=[
    ERR("err_query_dims", lambda g: (mha_args(g, 2, 4, 8, 2)[:0] + [("query", g.T([4, 8]))] + mha_args(g, 2, 4, 8, 2)[1:],
                                     ["error"]), "RuntimeError", "expected 3-D `query`, got 2-D tensor"),
    ERR("err_heads", lambda g: (mha_args(g, 2, 4, 9, 2), ["error"]), "RuntimeError",
        "`embed_dim` must divide evenly by `num_heads`"),
    ERR("err_mask_type", lambda g: (mha_args(g, 2, 4, 8, 2, mask=padding_mask(2, 4, [(0, 1)])), ["error"]),
        "RuntimeError", "Mask Type should be defined"),
    ERR("err_src_mask", lambda g: (mha_args(g, 2, 4, 8, 2, mask=padding_mask(2, 4, [(0, 1)]), mask_type=0),
                                   ["error"]), "RuntimeError", "src_mask not currently supported on CPU"),
    ERR("err_mask_batch", lambda g: (mha_args(g, 2, 4, 8, 2, mask=padding_mask(4, 4, [(0, 1)]), mask_type=1),
                                     ["error"]), "RuntimeError", "Expected attn_mask->sizes()[0] == batch_size"),
    ERR("err_embed_dim", lambda g: ([(n, 7 if n == "embed_dim" else v) for n, v in mha_args(g, 2, 4, 8, 2)],
                                    ["error"]), "RuntimeError", "passed-in embed_dim 7 didn't match last dim of query"),
], tol=ATTN_TOL)


def encoder_args(g, b, t_, d, h, ff, use_gelu, norm_first, dtype="float32", mask=None, mask_type=None):
    return [("src", g.T([b, t_, d], dtype)), ("embed_dim", d), ("num_heads", h),
            ("qkv_weight", g.T([3 * d, d], dtype)), ("qkv_bias", g.T([3 * d], dtype)),
            ("proj_weight", g.T([d, d], dtype)), ("proj_bias", g.T([d], dtype)), ("use_gelu", use_gelu),
            ("norm_first", norm_first), ("eps", 1e-5),
            ("norm_weight_1", g.T([d], dtype)), ("norm_bias_1", g.T([d], dtype)),
            ("norm_weight_2", g.T([d], dtype)), ("norm_bias_2", g.T([d], dtype)),
            ("ffn_weight_1", g.T([ff, d], dtype)), ("ffn_bias_1", g.T([ff], dtype)),
            ("ffn_weight_2", g.T([d, ff], dtype)), ("ffn_bias_2", g.T([d], dtype)),
            ("mask", mask), ("mask_type", mask_type)]


fam.op("_transformer_encoder_layer_fwd", [
    S("relu_post_norm", lambda g: (encoder_args(g, 2, 5, 16, 2, 32, False, False), [])),
    S("gelu_pre_norm", lambda g: (encoder_args(g, 2, 4, 12, 3, 24, True, True), [])),
    S("f64", lambda g: (encoder_args(g, 1, 3, 8, 2, 16, True, False, "float64"), ["float64"])),
    S("padding_mask", lambda g: (encoder_args(g, 2, 4, 8, 2, 16, False, False,
                                              mask=padding_mask(2, 4, [(0, 2), (1, 3)]), mask_type=1), ["mask"])),
    S("empty", lambda g: (encoder_args(g, 0, 4, 8, 2, 16, False, False), ["empty"])),
], tol=ATTN_TOL)


# ---- norms ----
def layer_norm_backward(scen, dtype, shape, nshape, weight=True, bias=True, mask=(True, True, True), view=None):
    def fn(g):
        x = g.T(shape, dtype, view=view)
        w = g.T(nshape, dtype) if weight else None
        b = g.T(nshape, dtype) if bias else None
        xt = gc_decode(x)
        _, mean, rstd = torch.ops.aten.native_layer_norm(xt, nshape, gc_decode(w) if w else None,
                                                         gc_decode(b) if b else None, 1e-5)
        return [("grad_out", g.T(shape, dtype, view=view)), ("input", x), ("normalized_shape", nshape),
                ("mean", TSpec(dtype, list(mean.shape), mean.numpy().reshape(-1))),
                ("rstd", TSpec(dtype, list(rstd.shape), rstd.numpy().reshape(-1))),
                ("weight", w), ("bias", b), ("output_mask", list(mask))], [dtype]
    return S(scen, fn)


fam.op("native_layer_norm_backward", [
    layer_norm_backward("f32", "float32", [4, 6], [6]),
    layer_norm_backward("f64_two_dims", "float64", [2, 3, 4], [3, 4]),
    layer_norm_backward("no_affine", "float32", [3, 5], [5], weight=False, bias=False, mask=(True, False, False)),
    layer_norm_backward("mask_input_only", "float32", [3, 5], [5], mask=(True, False, False)),
    layer_norm_backward("mask_params_only", "float64", [3, 5], [5], mask=(False, True, True)),
    layer_norm_backward("strided", "float32", [5, 4], [4], view="transpose"),
    layer_norm_backward("empty_rows", "float32", [0, 4], [4]),
], tol=(1e-4, 1e-5))


def batch_norm(scen, dtype, shape, training, weight=True, bias=True, running=True, view=None):
    def fn(g):
        c = shape[1]
        return [("input", g.T(shape, dtype, view=view)),
                ("weight", g.T([c], dtype) if weight else None), ("bias", g.T([c], dtype) if bias else None),
                ("running_mean", g.T([c], dtype) if running else None),
                ("running_var", g.T([c], dtype, kind="pos") if running else None),
                ("training", training), ("momentum", 0.1), ("eps", 1e-5)], [dtype]
    return S(scen, fn)


fam.op("native_batch_norm", [
    batch_norm("train_f32", "float32", [4, 3, 5], True),
    batch_norm("train_f64_4d", "float64", [2, 3, 2, 2], True),
    batch_norm("train_2d_no_running", "float32", [6, 4], True, running=False),
    batch_norm("train_no_affine", "float32", [3, 2, 4], True, weight=False, bias=False),
    batch_norm("eval_f32", "float32", [4, 3, 5], False),
    batch_norm("eval_f64_no_affine", "float64", [2, 3, 4], False, weight=False, bias=False),
    batch_norm("train_strided", "float32", [4, 3, 5], True, view="any"),
    batch_norm("eval_strided", "float32", [3, 4, 2], False, view="any"),
], errors=[
    ERR("err_1d", lambda g: ([("input", g.T([3])), ("weight", None), ("bias", None), ("running_mean", None),
                              ("running_var", None), ("training", True), ("momentum", 0.1), ("eps", 1e-5)], ["error"]),
        "IndexError", "Dimension out of range"),
    ERR("err_int", lambda g: ([("input", g.T([2, 3], "int64")), ("weight", None), ("bias", None),
                               ("running_mean", None), ("running_var", None), ("training", True), ("momentum", 0.1),
                               ("eps", 1e-5)], ["error"]), "RuntimeError", "not implemented for"),
], tol=(1e-4, 1e-5))


def batch_norm_backward(scen, dtype, shape, train, weight=True, mask=(True, True, True), view=None):
    def fn(g):
        c = shape[1]
        x = g.T(shape, dtype, view=view)
        w = g.T([c], dtype) if weight else None
        rm, rv = g.T([c], dtype), g.T([c], dtype, kind="pos")
        _, sm, si = torch.ops.aten.native_batch_norm(gc_decode(x), None, None, gc_decode(rm).clone(),
                                                     gc_decode(rv).clone(), True, 0.1, 1e-5)
        return [("grad_out", g.T(shape, dtype, view=view)), ("input", x), ("weight", w),
                ("running_mean", rm), ("running_var", rv),
                ("save_mean", TSpec(dtype, [c], sm.numpy()) if train else None),
                ("save_invstd", TSpec(dtype, [c], si.numpy()) if train else None),
                ("train", train), ("eps", 1e-5), ("output_mask", list(mask))], [dtype]
    return S(scen, fn)


fam.op("native_batch_norm_backward", [
    batch_norm_backward("train_f32", "float32", [4, 3, 5], True),
    batch_norm_backward("train_f64", "float64", [2, 3, 2, 2], True),
    batch_norm_backward("train_no_weight", "float32", [5, 2], True, weight=False),
    batch_norm_backward("train_mask_input", "float32", [3, 2, 4], True, mask=(True, False, False)),
    batch_norm_backward("eval_f32", "float32", [4, 3, 5], False),
    batch_norm_backward("eval_mask_params", "float64", [2, 3, 4], False, mask=(False, True, True)),
    batch_norm_backward("train_strided", "float32", [4, 3, 5], True, view="any"),
], tol=(1e-4, 1e-5))



def group_norm_args(g, dtype, shape, group, weight=True, bias=True):
    n, c = shape[0], shape[1]
    hxw = int(np.prod(shape[2:])) if len(shape) > 2 else 1
    return ([("input", g.T(shape, dtype)), ("weight", g.T([c], dtype) if weight else None),
             ("bias", g.T([c], dtype) if bias else None), ("N", n), ("C", c), ("HxW", hxw), ("group", group),
             ("eps", 1e-5)], [dtype])


# PyTorch's native_group_norm and its backward take contiguous inputs only (opd's accept any
# layout): no strided cases.
fam.op("native_group_norm", [
    S("f32", lambda g: group_norm_args(g, "float32", [2, 6, 5], 3)),
    S("f64_4d", lambda g: group_norm_args(g, "float64", [3, 4, 2, 3], 2)),
    S("no_affine", lambda g: group_norm_args(g, "float32", [2, 4], 4, weight=False, bias=False)),
    S("one_group", lambda g: group_norm_args(g, "float32", [2, 3, 4], 1, bias=False)),
    S("empty_batch", lambda g: group_norm_args(g, "float32", [0, 6, 5], 3)),
], errors=[
    ERR("err_groups", lambda g: (group_norm_args(g, "float32", [2, 6, 5], 4)[0], ["error"]), "RuntimeError",
        "Expected number of channels in input to be divisible by num_groups"),
    ERR("err_weight", lambda g: ([("input", g.T([2, 6, 5])), ("weight", g.T([5])), ("bias", None), ("N", 2), ("C", 6),
                                  ("HxW", 5), ("group", 3), ("eps", 1e-5)], ["error"]), "RuntimeError",
        "Expected weight to be a vector of size equal to the number of channels in input"),
    ERR("err_numel", lambda g: ([("input", g.T([2, 6, 5])), ("weight", None), ("bias", None), ("N", 2), ("C", 6),
                                 ("HxW", 4), ("group", 3), ("eps", 1e-5)], ["error"]), "RuntimeError",
        "Expected X.numel() == N * C * HxW to be true"),
    ERR("err_int", lambda g: ([("input", g.T([2, 6, 5], "int64")), ("weight", None), ("bias", None), ("N", 2),
                               ("C", 6), ("HxW", 5), ("group", 3), ("eps", 1e-5)], ["error"]), "RuntimeError",
        "not implemented for"),
], tol=(1e-4, 1e-5))


def group_norm_backward(scen, dtype, shape, group, weight=True, mask=(True, True, True)):
    def fn(g):
        a, _ = group_norm_args(g, dtype, shape, group, weight=weight, bias=False)
        d = dict(a)
        _, mean, rstd = torch.ops.aten.native_group_norm(gc_decode(d["input"]), None, None, d["N"], d["C"],
                                                         d["HxW"], group, 1e-5)
        return [("grad_out", g.T(shape, dtype)), ("input", d["input"]),
                ("mean", TSpec(dtype, list(mean.shape), mean.numpy().reshape(-1))),
                ("rstd", TSpec(dtype, list(rstd.shape), rstd.numpy().reshape(-1))), ("weight", d["weight"]),
                ("N", d["N"]), ("C", d["C"]), ("HxW", d["HxW"]), ("group", group),
                ("output_mask", list(mask))], [dtype]
    return S(scen, fn)


fam.op("native_group_norm_backward", [
    group_norm_backward("f32", "float32", [2, 6, 5], 3),
    group_norm_backward("f64_4d", "float64", [3, 4, 2, 3], 2),
    group_norm_backward("mask_input_bias", "float32", [2, 4, 3], 2, mask=(True, False, True)),
    group_norm_backward("group_per_channel", "float32", [2, 4, 3], 4),
], tol=(1e-4, 1e-5))

# ---- embedding's backward operators ----
def indices(g, shape, n, dtype="int64"):
    return TSpec(dtype, list(shape), g.rng.integers(0, n, int(np.prod(shape))).astype(
        np.int64 if dtype == "int64" else np.int32))


fam.op("embedding_dense_backward", [
    S("f32", lambda g: ([("grad_output", g.T([5, 3])), ("indices", indices(g, [5], 4)), ("num_weights", 4),
                         ("padding_idx", -1), ("scale_grad_by_freq", False)], ["float32"])),
    S("f64_2d_indices", lambda g: ([("grad_output", g.T([2, 3, 4], "float64")), ("indices", indices(g, [2, 3], 3)),
                                    ("num_weights", 5), ("padding_idx", -1), ("scale_grad_by_freq", False)],
                                   ["float64"])),
    S("padding_idx", lambda g: ([("grad_output", g.T([6, 2])), ("indices", TSpec("int64", [6], np.array(
        [0, 1, 1, 2, 1, 0], np.int64))), ("num_weights", 3), ("padding_idx", 1), ("scale_grad_by_freq", False)],
        ["padding"])),
    S("scale_grad_by_freq", lambda g: ([("grad_output", g.T([6, 2])), ("indices", TSpec("int32", [6], np.array(
        [0, 1, 1, 2, 1, 0], np.int32))), ("num_weights", 4), ("padding_idx", -1), ("scale_grad_by_freq", True)],
        ["int32"])),
    S("strided", lambda g: ([("grad_output", g.T([4, 3], view="transpose")), ("indices", indices(g, [4], 2)),
                             ("num_weights", 2), ("padding_idx", -1), ("scale_grad_by_freq", False)], ["noncontig"])),
    S("empty", lambda g: ([("grad_output", g.T([0, 3])), ("indices", indices(g, [0], 2)), ("num_weights", 2),
                           ("padding_idx", -1), ("scale_grad_by_freq", False)], ["empty"])),
], tol=LOOSE)
fam.op("embedding_backward", [
    S("dense", lambda g: ([("grad", g.T([5, 3])), ("indices", indices(g, [5], 4)), ("num_weights", 4),
                           ("padding_idx", 0), ("scale_grad_by_freq", True), ("sparse", False)], ["float32"])),
    S("dense_f64_2d", lambda g: ([("grad", g.T([2, 2, 3], "float64")), ("indices", indices(g, [2, 2], 3)),
                                  ("num_weights", 3), ("padding_idx", -1), ("scale_grad_by_freq", False),
                                  ("sparse", False)], ["float64"])),
], tol=LOOSE)
fam.op("embedding_renorm_", [
    S("f32_l2", lambda g: ([("self", g.T([5, 3], kind="wide")), ("indices", TSpec("int64", [4], np.array(
        [0, 2, 2, 4], np.int64))), ("max_norm", 1.5), ("norm_type", 2.0)], ["float32"])),
    S("f64_l1", lambda g: ([("self", g.T([4, 3], "float64")), ("indices", indices(g, [3], 4)),
                            ("max_norm", 2.0), ("norm_type", 1.0)], ["float64"])),
    S("f32_p3", lambda g: ([("self", g.T([4, 2])), ("indices", TSpec("int32", [2], np.array([1, 3], np.int32))),
                            ("max_norm", 0.5), ("norm_type", 3.0)], ["int32"])),
], errors=[
    ERR("err_1d", lambda g: ([("self", g.T([4])), ("indices", indices(g, [2], 4)), ("max_norm", 1.0),
                              ("norm_type", 2.0)], ["error"]), "RuntimeError", "Expected 2-dimensional tensor"),
], tol=LOOSE)

# ---- dropout: the deterministic cases (the random ones are checked statistically in
# tests/test_norm_ops.c) ----
fam.op("native_dropout", [
    S("eval", lambda g: ([("input", g.T([3, 4])), ("p", 0.5), ("train", False)], ["float32"])),
    S("eval_f64_strided", lambda g: ([("input", g.T([3, 4], "float64", view="any")), ("p", 0.3), ("train", False)],
                                     ["noncontig"])),
    S("p_zero", lambda g: ([("input", g.T([5])), ("p", 0.0), ("train", True)], ["float32"])),
    S("p_one", lambda g: ([("input", g.T([2, 3])), ("p", 1.0), ("train", True)], ["float32"])),
], errors=[
    ERR("err_p", lambda g: ([("input", g.T([3])), ("p", 1.5), ("train", True)], ["error"]),
        "RuntimeError", "bernoulli_ expects p to be in [0, 1]"),
])
fam.op("native_dropout_backward", [
    S("f32", lambda g: ([("grad_output", g.T([3, 4])), ("mask", g.T([3, 4], "bool")), ("scale", 2.0)], ["float32"])),
    S("f64", lambda g: ([("grad_output", g.T([5], "float64")), ("mask", g.T([5], "bool")), ("scale", 1.25)],
                        ["float64"])),
    S("strided", lambda g: ([("grad_output", g.T([3, 4], view="any")), ("mask", g.T([3, 4], "bool", view="any")),
                             ("scale", 1 / 0.7)], ["noncontig"])),
    S("empty", lambda g: ([("grad_output", g.T([0, 2])), ("mask", g.T([0, 2], "bool")), ("scale", 2.0)], ["empty"])),
])


# ---- the composites PyTorch decomposes these into (CompositeImplicitAutograd) ----
fam.op("relu6", [
    S("f32", lambda g: ([("self", g.T([4, 5], kind="wide"))], ["float32"])),
    S("int64", lambda g: ([("self", g.T([7], "int64"))], ["integer"])),
    S("strided", lambda g: ([("self", g.T([3, 4], "float64", kind="wide", view="any"))], ["noncontig"])),
])
fam.op("batch_norm", [
    S("train", lambda g: ([("input", g.T([4, 3, 2])), ("weight", g.T([3])), ("bias", g.T([3])),
                           ("running_mean", g.T([3])), ("running_var", g.T([3], kind="pos")), ("training", True),
                           ("momentum", 0.1), ("eps", 1e-5), ("cudnn_enabled", True)], ["float32"])),
    S("eval_f64", lambda g: ([("input", g.T([2, 3], "float64")), ("weight", None), ("bias", None),
                              ("running_mean", g.T([3], "float64")), ("running_var", g.T([3], "float64", kind="pos")),
                              ("training", False), ("momentum", 0.1), ("eps", 1e-5), ("cudnn_enabled", True)],
                             ["float64"])),
], tol=(1e-4, 1e-5))
fam.op("group_norm", [
    S("f32", lambda g: ([("input", g.T([2, 6, 3])), ("num_groups", 2), ("weight", g.T([6])), ("bias", g.T([6]))],
                        ["float32"])),
    S("f64_4d_defaults", lambda g: ([("input", g.T([2, 4, 2, 2], "float64")), ("num_groups", 4)], ["float64"])),
    S("strided", lambda g: ([("input", g.T([3, 4, 2], view="any")), ("num_groups", 2)], ["noncontig"])),
], errors=[
    ERR("err_groups", lambda g: ([("input", g.T([2, 6, 3])), ("num_groups", 4)], ["error"]), "RuntimeError",
        "Expected number of channels in input to be divisible by num_groups"),
], tol=(1e-4, 1e-5))
fam.op("dropout", [
    S("eval", lambda g: ([("input", g.T([3, 4])), ("p", 0.5), ("train", False)], ["float32"])),
    S("p_zero", lambda g: ([("input", g.T([5])), ("p", 0.0), ("train", True)], ["float32"])),
    S("p_one", lambda g: ([("input", g.T([2, 3], "float64")), ("p", 1.0), ("train", True)], ["float64"])),
], errors=[
    ERR("err_p", lambda g: ([("input", g.T([3])), ("p", -0.5), ("train", True)], ["error"]),
        "RuntimeError", "dropout probability has to be between 0 and 1"),
])


def nll_nd_args(g, dtype, shape, r, weight=False, ignore=-100, with_ignored=False):
    c = shape[1] if len(shape) > 1 else shape[0]
    tshape = [shape[0]] + list(shape[2:]) if len(shape) > 1 else []
    t = g.rng.integers(0, c, int(np.prod(tshape)))
    if with_ignored and t.size > 1:
        t[g.rng.integers(0, t.size)] = ignore
    return [("self", g.T(shape, dtype)), ("target", TSpec("int64", tshape, t.astype(np.int64))),
            ("weight", g.T([c], dtype, kind="pos") if weight else None), ("reduction", r),
            ("ignore_index", ignore)]


for op in ("nll_loss", "nll_loss_nd", "cross_entropy_loss"):
    sc = []
    for r, rn in REDUCTIONS:
        sc += [S("f32_" + rn, lambda g, r=r: (nll_nd_args(g, "float32", [4, 5], r), ["float32"])),
               S("f64_weight_" + rn, lambda g, r=r: (nll_nd_args(g, "float64", [6, 3], r, weight=True,
                                                                 with_ignored=True), ["float64"])),
               S("one_d_" + rn, lambda g, r=r: (nll_nd_args(g, "float32", [4], r), ["1d"]))]
        if op != "nll_loss":
            sc += [S("three_d_" + rn, lambda g, r=r: (nll_nd_args(g, "float32", [2, 3, 4], r, with_ignored=True),
                                                      ["nd"])),
                   S("four_d_weight_" + rn, lambda g, r=r: (nll_nd_args(g, "float32", [2, 3, 2, 2], r, weight=True),
                                                            ["nd"]))]
    sc.append(S("ignore_index", lambda g: (nll_nd_args(g, "float32", [5, 3], 1, ignore=1, with_ignored=True),
                                           ["ignore_index"])))
    errs = [ERR("err_size", lambda g: ([("self", g.T([3, 4])), ("target", TSpec("int64", [2], np.array(
        [0, 1], np.int64)))], ["error"]), *(("RuntimeError", "size mismatch (got input: [3, 4], target: [2])")
                                           if op == "nll_loss" else
                                           ("ValueError", "Expected input batch_size (3) to match target batch_size (2)")))]
    if op != "nll_loss":
        errs.append(ERR("err_target_shape", lambda g: ([("self", g.T([2, 3, 4])), ("target", TSpec(
            "int64", [2, 5], np.zeros(10, np.int64)))], ["error"]), "RuntimeError", "Expected target size [2, 4], got [2, 5]"))
    if op == "cross_entropy_loss":
        errs.append(ERR("err_target_range", lambda g: ([("self", g.T([3, 4])), ("target", TSpec(
            "int64", [3], np.array([0, 7, 1], np.int64)))], ["error"]), "IndexError", "Target 7 is out of bounds."))
    fam.op(op, sc, errors=errs, tol=LOOSE)

if __name__ == "__main__":
    fam.main()

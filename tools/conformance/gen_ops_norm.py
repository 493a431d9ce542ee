#!/usr/bin/python3
"""gen_ops_norm.py: conformance cases of the normalization, loss and activation family
(activations and their backward operators, softmax's backward operators, losses, norms,
embedding's backward), recorded from PyTorch 1.13 into tests/fixtures/ops_norm.json:

    /usr/bin/python3 tools/conformance/gen_ops_norm.py

See opgen.py for the format and the helpers. Every operator gets float32 and float64 cases,
strided views, 0-d and empty inputs where the operator accepts them, and PyTorch's errors.
"""
import opgen
from opgen import S, ERR

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

if __name__ == "__main__":
    fam.main()

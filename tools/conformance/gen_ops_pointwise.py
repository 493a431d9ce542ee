#!/usr/bin/python3
"""gen_ops_pointwise.py: conformance cases of the pointwise family (pointwise math, their
in-place variants and Scalar overloads), recorded from PyTorch 1.13 into
tests/fixtures/ops_pointwise.json (see opgen.py):

    /usr/bin/python3 tools/conformance/gen_ops_pointwise.py

Every operator gets float32 and float64 cases (with NaN, infinities and -0.0 among the
inputs), int64 / int32 / bool inputs (type promotion), a strided view, a 0-d and an empty
input; binary operators also broadcasting and a 0-d operand of another dtype, Scalar
overloads int and float scalars. Whether a case succeeds or raises is what PyTorch does:
each scenario is first run on PyTorch with a probe generator, and one that raises is recorded
as an error case (exception class and the start of PyTorch's message), such as a bitwise
operator on floats or an in-place operator whose result dtype does not cast to self's.
In-place operators are recorded like the others: their result aliases `self`, whose values
after the call are the expected ones.
"""
import numpy as np

import opgen
from opgen import ERR, S, gc

fam = opgen.Family("pointwise", seed=31)


def message_key(e):
    """The start of PyTorch's message that opd's message must contain."""
    msg = str(e).split("\n")[0]
    for stop in (". ", " (", ", but"):
        if stop in msg:
            msg = msg[: msg.index(stop)]
    return msg[:70]


def auto(op, name, fn):
    """S, or ERR with PyTorch's exception when a probe run of the scenario raises."""
    g = gc.Gen(np.random.default_rng(7))
    args, _ = fn(g)
    decoded = [(n, opgen.dec_value(opgen.enc_value(v))) for n, v in args]
    try:
        gc.call_op(op, decoded)
    except Exception as e:  # noqa: BLE001 - PyTorch's exception is the record
        return ERR(name, fn, type(e).__name__, message_key(e))
    return S(name, fn)


def add(op, scens, tol=None, skip_values=False):
    fam.op(op, [auto(op, n, f) for n, f in scens], tol=tol, skip_values=skip_values)


def small(g):
    """A small shape (the fixture stays small)."""
    return g.shape(g.ri(1, 3), 1, 4, maxn=12)


def special(kind):
    return "pos_special" if kind == "pos" else "special"


# the scenarios of in-place variants (the functional operator has them all)
INPLACE_UNARY = {"f32_special", "f64", "noncontig", "zero_dim", "int64", "bool"}
INPLACE_BINARY = {"f32", "f64_special", "int64_f32", "bool", "noncontig", "bcast_other", "bcast_self",
                  "f32_int64_other"}


def unary(op, kind="normal", tol=None):
    sp = special(kind)
    scens = [
        ("f32", lambda g: ([("self", g.T(small(g), "float32", kind))], ["float32"])),
        ("f32_special", lambda g: ([("self", g.T(small(g), "float32", sp))], ["special"])),
        ("f64", lambda g: ([("self", g.T(small(g), "float64", kind))], ["float64"])),
        ("f64_special", lambda g: ([("self", g.T(small(g), "float64", sp))], ["special"])),
        ("noncontig", lambda g: ([("self", g.T(g.shape(g.ri(2, 3), 2, 3), "float32", kind,
                                                view=g.choice(["transpose", "slice", "permute"])))],
                                 ["noncontig"])),
        ("zero_dim", lambda g: ([("self", g.T([], "float64", kind))], ["zero_dim"])),
        ("empty", lambda g: ([("self", g.T([0, 3], "float32", kind))], ["empty"])),
        ("int64", lambda g: ([("self", g.T(small(g), "int64", kind))], ["integer"])),
        ("int32", lambda g: ([("self", g.T(small(g), "int32", kind))], ["integer"])),
        ("bool", lambda g: ([("self", g.T(small(g), "bool"))], ["bool"])),
    ]
    if op.endswith("_"):
        scens = [sc for sc in scens if sc[0] in INPLACE_UNARY]
    add(op, scens, tol)


def binary(op, ka="normal", kb="normal", tol=None, inplace=False):
    """kb: the kind of the second operand (nonzero for divisors)."""
    T = [a.name for a in gc.op_handle(op)._schema.arguments][1]
    scens = [
        ("f32", lambda g: ([("self", g.T(s := small(g), "float32", ka)), (T, g.T(s, "float32", kb))], ["float32"])),
        ("f64_special", lambda g: ([("self", g.T(s := small(g), "float64", special(ka))),
                                    (T, g.T(s, "float64", special(kb)))], ["special"])),
        ("int64", lambda g: ([("self", g.T(s := small(g), "int64", ka)), (T, g.T(s, "int64", kb))], ["integer"])),
        ("int32_int64", lambda g: ([("self", g.T(s := small(g), "int32", ka)), (T, g.T(s, "int64", kb))], ["promotion"])),
        ("int64_f32", lambda g: ([("self", g.T(s := small(g), "int64", ka)), (T, g.T(s, "float32", kb))], ["promotion"])),
        ("bool", lambda g: ([("self", g.T(s := small(g), "bool")), (T, g.T(s, "bool"))], ["bool"])),
        ("f32_0d_f64", lambda g: ([("self", g.T(g.shape(2), "float32", ka)), (T, g.T([], "float64", kb))], ["zero_dim"])),
        ("noncontig", lambda g: ([("self", g.T(s := g.shape(g.ri(2, 3), 2, 3), "float32", ka,
                                              view=g.choice(["transpose", "slice", "permute"]))),
                                  (T, g.T(s, "float32", kb, view="any"))], ["noncontig"])),
        ("empty", lambda g: ([("self", g.T([0, 2], "float32", ka)), (T, g.T([2], "float32", kb))], ["empty"])),
    ]
    if inplace:  # the other operand broadcasts to self; self's shape must be the result's
        scens += [
            ("bcast_other", lambda g: ([("self", g.T([3, 4], "float32", ka)), (T, g.T([4], "float32", kb))], ["broadcast"])),
            ("bcast_self", lambda g: ([("self", g.T([4], "float32", ka)), (T, g.T([3, 4], "float32", kb))], ["broadcast"])),
            ("f32_int64_other", lambda g: ([("self", g.T(s := small(g), "float32", ka)), (T, g.T(s, "int64", kb))], ["promotion"])),
        ]
        scens = [sc for sc in scens if sc[0] in INPLACE_BINARY]
    else:
        scens += [
            ("bcast", lambda g: ((lambda ab: [("self", g.T(ab[0], "float32", ka)), (T, g.T(ab[1], "float32", kb))])(g.bcast_pair()),
                                 ["broadcast"])),
        ]
    add(op, scens, tol)


def scalar_overload(op, kb="normal", arg="other"):
    """op(Tensor self, Scalar other): int and float scalars, int and bool tensors."""
    fv = 2.5 if kb != "nonzero" else -1.5
    scens = [
        ("f32_float", lambda g: ([("self", g.T(small(g), "float32")), (arg, fv)], ["float32"])),
        ("f32_int", lambda g: ([("self", g.T(small(g), "float32")), (arg, 3)], ["float32"])),
        ("f64_special", lambda g: ([("self", g.T(small(g), "float64", "special")), (arg, -2.0)], ["special"])),
        ("int64_int", lambda g: ([("self", g.T(small(g), "int64")), (arg, 3)], ["integer"])),
        ("int32_float", lambda g: ([("self", g.T(small(g), "int32")), (arg, fv)], ["promotion"])),
        ("int32_int", lambda g: ([("self", g.T(small(g), "int32")), (arg, -4)], ["integer"])),
        ("bool_int", lambda g: ([("self", g.T(small(g), "bool")), (arg, 1)], ["bool"])),
        ("noncontig", lambda g: ([("self", g.T(g.shape(2, 2, 5), "float32", view=g.choice(["transpose", "slice"]))),
                                  (arg, fv)], ["noncontig"])),
        ("zero_dim", lambda g: ([("self", g.T([], "float32")), (arg, 2)], ["zero_dim"])),
        ("empty", lambda g: ([("self", g.T([0], "float32")), (arg, 2)], ["empty"])),
    ]
    add(op, scens)


# ---- unary ----
UNIT = {"acos", "asin", "atanh", "erfinv"}
POS = {"acosh": "offset", "lgamma": "normal"}
for name in ["acos", "asin", "atan", "acosh", "asinh", "atanh", "sinh", "cosh", "tan", "erf", "erfc",
             "erfinv", "lgamma", "digamma", "log1p", "expm1", "log2", "log10", "exp2", "reciprocal",
             "floor", "ceil", "round", "trunc", "frac", "sign", "sgn", "bitwise_not", "isnan", "signbit",
             "square", "logical_not", "isinf", "isfinite"]:
    kind = "unit" if name in UNIT else POS.get(name, "halfint" if name in ("round", "floor", "ceil", "trunc", "frac") else "normal")
    if name in ("log1p", "log2", "log10"):
        kind = "pos"
    tol = (1e-5, 1e-5) if name in ("lgamma", "digamma", "erfinv", "tan", "cosh", "sinh", "exp2") else None
    unary(name, kind, tol)
    if name not in ("isnan", "signbit", "isinf", "isfinite", "square", "logical_not"):
        unary(name + "_", kind, tol)
for name in ["exp", "log", "sqrt", "rsqrt", "sigmoid", "tanh", "sin", "cos", "neg", "abs"]:
    unary(name + "_", "pos" if name in ("log", "sqrt", "rsqrt") else "normal",
          (1e-5, 1e-5) if name in ("exp", "sigmoid", "tanh") else None)

for op in ["round.decimals", "round_.decimals"]:
    add(op, [
        ("f32_2", lambda g: ([("self", g.T(small(g), "float32", "wide")), ("decimals", 2)], ["float32"])),
        ("f64_1", lambda g: ([("self", g.T(small(g), "float64", "special")), ("decimals", 1)], ["special"])),
        ("f32_neg", lambda g: ([("self", g.T(small(g), "float32", "huge")), ("decimals", -1)], ["float32"])),
        ("f64_0", lambda g: ([("self", g.T(small(g), "float64", "halfint")), ("decimals", 0)], ["float64"])),
        ("int64", lambda g: ([("self", g.T(small(g), "int64")), ("decimals", 1)], ["integer"])),
    ])

# ---- binary ----
for op, ka, kb, tol in [("atan2", "normal", "normal", None), ("fmod.Tensor", "normal", "nonzero", None),
                        ("remainder.Tensor", "normal", "nonzero", None), ("hypot", "normal", "normal", None),
                        ("copysign.Tensor", "normal", "normal", None), ("xlogy.Tensor", "normal", "pos", None),
                        ("pow.Tensor_Tensor", "pos", "normal", (1e-5, 1e-5)), ("bitwise_and.Tensor", "normal", "normal", None),
                        ("bitwise_or.Tensor", "normal", "normal", None), ("bitwise_xor.Tensor", "normal", "normal", None),
                        ("clamp_min.Tensor", "normal", "normal", None), ("clamp_max.Tensor", "normal", "normal", None),
                        ("floor_divide", "normal", "nonzero", None)]:
    binary(op, ka, kb, tol)
    name, _, ov = op.partition(".")
    inpl = name + "_" + ("." + ov if ov else "")
    if op == "pow.Tensor_Tensor":
        inpl = "pow_.Tensor"
    if op == "floor_divide":
        inpl = "floor_divide_.Tensor"
    binary(inpl, ka, kb, tol, inplace=True)
for op in ["fmax", "fmin", "logaddexp", "ne.Tensor", "lt.Tensor", "le.Tensor", "ge.Tensor", "logical_and",
           "logical_or", "logical_xor", "rsub.Tensor"]:
    binary(op)
# ---- special functions (kernels/cpu/pointwise_special.c) ----
for name, kind in [("i0", "normal"), ("special_i0e", "wide"), ("special_i1", "normal"),
                   ("special_i1e", "wide"), ("special_ndtr", "normal"), ("special_ndtri", "unit"),
                   ("special_log_ndtr", "wide"), ("special_erfcx", "wide"), ("special_entr", "normal"),
                   ("sinc", "normal"), ("deg2rad", "wide"), ("rad2deg", "normal"), ("isposinf", "normal"),
                   ("isneginf", "normal")]:
    unary(name, kind, (1e-5, 1e-5))
for op, kb in [("logaddexp2", "normal"), ("nextafter", "normal"), ("gcd", "normal"), ("lcm", "normal"),
               ("special_xlog1py", "pos")]:
    binary(op, "normal", kb, (1e-5, 1e-5))
binary("heaviside", "int", "normal")
# ---- functional copy and fill (kernels/src/composite_pointwise.c) ----
add("copy", [
    ("f32", lambda g: ([("self", g.T([2, 3], "float32")), ("src", g.T([2, 3], "float32"))], ["float32"])),
    ("strided_self_bcast_src", lambda g: ([("self", g.T([3, 4], "float64", view="transpose")),
                                           ("src", g.T([4], "float64"))], ["noncontig", "broadcast"])),
    ("int64_from_f32", lambda g: ([("self", g.T([3], "int64")), ("src", g.T([3], "float32", "halfint"))], ["promotion"])),
    ("bool_from_int", lambda g: ([("self", g.T([4], "bool")), ("src", g.T([4], "int64"))], ["bool"])),
    ("0d", lambda g: ([("self", g.T([], "float32")), ("src", g.T([], "float64"))], ["zero_dim"])),
    ("empty", lambda g: ([("self", g.T([0, 2], "float32")), ("src", g.T([2], "float32"))], ["empty"])),
    ("shape_mismatch", lambda g: ([("self", g.T([2, 3], "float32")), ("src", g.T([4], "float32"))], ["error"])),
])
add("fill.Scalar", [
    ("f32_float", lambda g: ([("self", g.T([2, 3], "float32")), ("value", 2.5)], ["float32"])),
    ("int64_int", lambda g: ([("self", g.T([3], "int64")), ("value", -4)], ["integer"])),
    ("strided_f64", lambda g: ([("self", g.T([3, 4], "float64", view="transpose")), ("value", 1)], ["noncontig"])),
    ("bool", lambda g: ([("self", g.T([3], "bool")), ("value", True)], ["bool"])),
    ("0d", lambda g: ([("self", g.T([], "float32")), ("value", -1.0)], ["zero_dim"])),
    ("empty", lambda g: ([("self", g.T([0, 2], "float32")), ("value", 1.0)], ["empty"])),
])
add("fill.Tensor", [
    ("f32_0d_f64", lambda g: ([("self", g.T([2, 3], "float32")), ("value", g.T([], "float64"))], ["float32"])),
    ("int64", lambda g: ([("self", g.T([3], "int64")), ("value", g.T([], "int64"))], ["integer"])),
    ("strided", lambda g: ([("self", g.T([3, 4], "float64", view="transpose")), ("value", g.T([], "float32"))], ["noncontig"])),
    ("value_1d", lambda g: ([("self", g.T([3], "float32")), ("value", g.T([1], "float32"))], ["error"])),
])
for op in ["mul_.Tensor", "div_.Tensor", "sub_.Tensor", "add_.Tensor"]:
    binary(op, "normal", "nonzero" if op.startswith("div") else "normal", inplace=True)

# integer division by zero
for op in ["fmod.Tensor", "remainder.Tensor", "floor_divide"]:
    fam.op(op, [], errors=[ERR("int_by_zero", lambda g: ([("self", g.T([3], "int64")), ("other", gc.TSpec("int64", [3], np.array([1, 0, 2], dtype=np.int64)))], []),
                               "RuntimeError", "ZeroDivisionError")])

# ---- Scalar overloads ----
for op, kb in [("gt.Scalar", "normal"), ("le.Scalar", "normal"), ("ge.Scalar", "normal"), ("ne.Scalar", "normal"),
               ("div.Scalar", "nonzero"), ("fmod.Scalar", "nonzero"), ("remainder.Scalar", "nonzero"),
               ("copysign.Scalar", "normal"), ("xlogy.Scalar_Other", "normal"), ("bitwise_and.Scalar", "normal"),
               ("bitwise_or.Scalar", "normal"), ("bitwise_xor.Scalar", "normal"), ("floor_divide.Scalar", "nonzero"),
               ("mul_.Scalar", "normal"), ("div_.Scalar", "nonzero"), ("fmod_.Scalar", "nonzero"),
               ("remainder_.Scalar", "nonzero"), ("sub.Scalar", "normal"), ("rsub.Scalar", "normal"),
               ("add_.Scalar", "normal"), ("sub_.Scalar", "normal"), ("clamp_min", "normal"), ("clamp_max", "normal"),
               ("clamp_min_", "normal"), ("clamp_max_", "normal"), ("pow_.Scalar", "normal")]:
    arg = {"clamp_min": "min", "clamp_min_": "min", "clamp_max": "max", "clamp_max_": "max", "pow_.Scalar": "exponent"}.get(op, "other")
    scalar_overload(op, kb, arg)
for op, arg in [("pow.Scalar", "exponent"), ("remainder.Scalar_Tensor", "other"), ("xlogy.Scalar_Self", "other")]:
    add(op, [
        ("float_f32", lambda g, a=arg: ([("self", 2.5), (a, g.T(small(g), "float32", "nonzero"))], ["float32"])),
        ("int_int64", lambda g, a=arg: ([("self", 3), (a, g.T(small(g), "int64", "pos"))], ["integer"])),
        ("float_int32", lambda g, a=arg: ([("self", -1.5), (a, g.T(small(g), "int32", "nonzero"))], ["promotion"])),
        ("int_f64_special", lambda g, a=arg: ([("self", 2), (a, g.T(small(g), "float64", "special"))], ["special"])),
    ])
add("div.Scalar_mode", [
    ("f32_floor", lambda g: ([("self", g.T(small(g), "float32")), ("other", -1.5), ("rounding_mode", "floor")], ["float32"])),
    ("int64_trunc", lambda g: ([("self", g.T(small(g), "int64")), ("other", 4), ("rounding_mode", "trunc")], ["integer"])),
    ("int64_true", lambda g: ([("self", g.T(small(g), "int64")), ("other", 4), ("rounding_mode", None)], ["integer"])),
])
add("div_.Tensor_mode", [
    ("f32_floor", lambda g: ([("self", g.T(s := small(g), "float32")), ("other", g.T(s, "float32", "nonzero")), ("rounding_mode", "floor")], ["float32"])),
    ("int64_trunc", lambda g: ([("self", g.T(s := small(g), "int64")), ("other", g.T(s, "int64", "nonzero")), ("rounding_mode", "trunc")], ["integer"])),
])

# ---- ternary ----
for op in ["addcmul", "addcdiv", "addcmul_", "addcdiv_"]:
    kd = "nonzero" if "div" in op else "normal"
    add(op, [
        ("f32", lambda g: ([("self", g.T(s := small(g), "float32")), ("tensor1", g.T(s, "float32")), ("tensor2", g.T(s, "float32", kd)), ("value", 0.5)], ["float32"])),
        ("f64_default", lambda g: ([("self", g.T(s := small(g), "float64")), ("tensor1", g.T(s, "float64")), ("tensor2", g.T(s, "float64", kd))], ["float64"])),
        ("bcast", lambda g: ([("self", g.T([3, 4], "float32")), ("tensor1", g.T([4], "float32")), ("tensor2", g.T([3, 1], "float32", kd)), ("value", -2)], ["broadcast"])),
        ("int64", lambda g: ([("self", g.T(s := small(g), "int64")), ("tensor1", g.T(s, "int64")), ("tensor2", g.T(s, "int64", kd)), ("value", 3)], ["integer"])),
        # (in place, PyTorch 1.13 fails an internal assertion on mixed dtypes)
        ("mixed", lambda g: ([("self", g.T(s := small(g), "float64")), ("tensor1", g.T(s, "int64")), ("tensor2", g.T(s, "float32", kd))], ["promotion"])),
        ("bool", lambda g: ([("self", g.T(s := small(g), "bool")), ("tensor1", g.T(s, "bool")), ("tensor2", g.T(s, "bool"))], ["bool"])),
        ("noncontig", lambda g: ([("self", g.T(s := g.shape(2, 2, 5), "float32", view="slice")), ("tensor1", g.T(s, "float32", view="any")), ("tensor2", g.T(s, "float32", kd, view="any")), ("value", 1.5)], ["noncontig"])),
        ("special", lambda g: ([("self", g.T(s := small(g), "float32", "special")), ("tensor1", g.T(s, "float32", "special")), ("tensor2", g.T(s, "float32", "special"))], ["special"])),
    ], tol=(1e-5, 1e-5))
for op in ["lerp.Scalar", "lerp_.Scalar"]:
    add(op, [
        ("f32", lambda g: ([("self", g.T(s := small(g), "float32")), ("end", g.T(s, "float32")), ("weight", 0.3)], ["float32"])),
        ("f64_far", lambda g: ([("self", g.T(s := small(g), "float64")), ("end", g.T(s, "float64")), ("weight", 0.75)], ["float64"])),
        ("f32_one", lambda g: ([("self", g.T(s := small(g), "float32", "special")), ("end", g.T(s, "float32")), ("weight", 1)], ["special"])),
        ("bcast", lambda g: ([("self", g.T([3, 4], "float32")), ("end", g.T([4], "float32", view="slice")), ("weight", -0.5)], ["broadcast"])),
        ("f32_f64", lambda g: ([("self", g.T([3], "float32")), ("end", g.T([3], "float64")), ("weight", 0.5)], ["dtype"])),
        ("int64", lambda g: ([("self", g.T([3], "int64")), ("end", g.T([3], "int64")), ("weight", 1)], ["integer"])),
    ], tol=(1e-5, 1e-5))
for op in ["lerp.Tensor", "lerp_.Tensor"]:
    add(op, [
        ("f32", lambda g: ([("self", g.T(s := small(g), "float32")), ("end", g.T(s, "float32")), ("weight", g.T(s, "float32", "unit"))], ["float32"])),
        ("f64_bcast", lambda g: ([("self", g.T([2, 3], "float64")), ("end", g.T([3], "float64")), ("weight", g.T([2, 1], "float64", "unit"))], ["broadcast"])),
        ("weight_f64", lambda g: ([("self", g.T([3], "float32")), ("end", g.T([3], "float32")), ("weight", g.T([3], "float64"))], ["dtype"])),
    ], tol=(1e-5, 1e-5))
add("clamp.Tensor", [
    ("f32_both", lambda g: ([("self", g.T(s := small(g), "float32", "special")), ("min", g.T(s, "float32", "unit")), ("max", g.T(s, "float32", "pos"))], ["float32"])),
    ("f64_min", lambda g: ([("self", g.T(s := small(g), "float64", "special")), ("min", g.T([], "float64"))], ["zero_dim"])),
    ("f32_max_bcast", lambda g: ([("self", g.T([3, 4], "float32")), ("max", g.T([4], "float32"))], ["broadcast"])),
    ("int64_f32", lambda g: ([("self", g.T([5], "int64")), ("min", g.T([5], "float32")), ("max", g.T([5], "float32", "pos"))], ["promotion"])),
    ("int32", lambda g: ([("self", g.T([5], "int32")), ("min", g.T([5], "int32")), ("max", g.T([1], "int32", "pos"))], ["integer"])),
    ("none", lambda g: ([("self", g.T([5], "int32"))], [])),
    ("bool", lambda g: ([("self", g.T([5], "bool")), ("min", g.T([5], "bool"))], ["bool"])),
])
add("clamp_", [
    ("f32", lambda g: ([("self", g.T(small(g), "float32", "special")), ("min", -0.5), ("max", 0.5)], ["float32"])),
    ("int64_min", lambda g: ([("self", g.T(small(g), "int64")), ("min", 2)], ["integer"])),
    ("int64_float", lambda g: ([("self", g.T(small(g), "int64")), ("min", 0.5)], ["promotion"])),
])
for op in ["where.ScalarOther", "where.ScalarSelf"]:
    t_arg, s_arg = ("self", "other") if op.endswith("Other") else ("other", "self")
    add(op, [
        ("f32_float", lambda g, t=t_arg, s=s_arg: ([("condition", g.T(sh := small(g), "bool")), (t, g.T(sh, "float32")), (s, 2.5)], ["float32"])),
        ("int32_int", lambda g, t=t_arg, s=s_arg: ([("condition", g.T(sh := small(g), "bool")), (t, g.T(sh, "int32")), (s, -3)], ["integer"])),
        ("int64_float", lambda g, t=t_arg, s=s_arg: ([("condition", g.T(sh := small(g), "bool")), (t, g.T(sh, "int64")), (s, 0.5)], ["promotion"])),
        ("bcast", lambda g, t=t_arg, s=s_arg: ([("condition", g.T([3, 1], "bool")), (t, g.T([4], "float64")), (s, 1)], ["broadcast"])),
    ])
add("where.Scalar", [
    ("float_int", lambda g: ([("condition", g.T(small(g), "bool")), ("self", 1.5), ("other", 2)], ["float32"])),
    ("int_int", lambda g: ([("condition", g.T(small(g), "bool")), ("self", 1), ("other", -2)], ["integer"])),
    ("bool_bool", lambda g: ([("condition", g.T(small(g), "bool")), ("self", True), ("other", False)], ["bool"])),
])
add("pow.Tensor_Tensor", [
    ("int_negative_exponent", lambda g: ([("self", g.T([6], "int64")), ("exponent", g.T([6], "int64"))], ["integer"])),
])

# ---- factories and aten::to ----
import torch  # noqa: E402

# (empty_like and new_empty have no cases: their values are unspecified, and opd-conformance
# compares values until it reads "values_unspecified")
for op in ["zeros_like", "ones_like"]:
    add(op, [
        ("f32", lambda g: ([("self", g.T(small(g), "float32"))], ["float32"])),
        ("transposed", lambda g: ([("self", g.T([3, 4], "float64", view="transpose"))], ["noncontig"])),
        ("sliced", lambda g: ([("self", g.T([3, 4], "float32", view="slice"))], ["noncontig"])),
        ("dtype_int64", lambda g: ([("self", g.T(small(g), "float32")), ("dtype", torch.int64)], ["dtype"])),
        ("bool_zero_dim", lambda g: ([("self", g.T([], "bool"))], ["zero_dim"])),
        ("empty", lambda g: ([("self", g.T([0, 2], "int32"))], ["empty"])),
    ])
add("full_like", [
    ("f32_float", lambda g: ([("self", g.T(small(g), "float32")), ("fill_value", 2.5)], ["float32"])),
    ("int64_int", lambda g: ([("self", g.T(small(g), "int64")), ("fill_value", -3)], ["integer"])),
    ("int64_float", lambda g: ([("self", g.T(small(g), "int64")), ("fill_value", 2.5)], ["promotion"])),
    ("transposed_dtype", lambda g: ([("self", g.T([2, 3], "float32", view="transpose")), ("fill_value", 1),
                                     ("dtype", torch.float64)], ["noncontig"])),
    ("bool_nan", lambda g: ([("self", g.T([3], "float32")), ("fill_value", float("nan"))], ["special"])),
])
for op in ["new_zeros", "new_ones"]:
    add(op, [
        ("f32", lambda g: ([("self", g.T([2], "float32")), ("size", [2, 3])], ["float32"])),
        ("int32_dtype", lambda g: ([("self", g.T([2], "int32")), ("size", [4]), ("dtype", torch.float64)], ["dtype"])),
        ("zero_dim", lambda g: ([("self", g.T([2], "bool")), ("size", [])], ["zero_dim"])),
        ("empty", lambda g: ([("self", g.T([2], "int64")), ("size", [0, 3])], ["empty"])),
        ("negative", lambda g: ([("self", g.T([2], "int64")), ("size", [-1, 3])], [])),
    ])
add("new_full", [
    ("f32", lambda g: ([("self", g.T([2], "float32")), ("size", [2, 3]), ("fill_value", -1.5)], ["float32"])),
    ("int32_int", lambda g: ([("self", g.T([2], "int32")), ("size", [4]), ("fill_value", 7)], ["integer"])),
    ("int32_float", lambda g: ([("self", g.T([2], "int32")), ("size", [4]), ("fill_value", 7.5)], ["promotion"])),
])
add("scalar_tensor", [
    ("float", lambda g: ([("s", 2.5)], ["float32"])),
    ("int", lambda g: ([("s", 3)], ["integer"])),
    ("int_dtype", lambda g: ([("s", 3), ("dtype", torch.int32)], ["integer"])),
    ("bool_dtype", lambda g: ([("s", True), ("dtype", torch.bool)], ["bool"])),
])
add("lift_fresh", [
    ("f32", lambda g: ([("self", g.T(small(g), "float32"))], ["view"])),
    ("sliced", lambda g: ([("self", g.T([3, 4], "int64", view="slice"))], ["view"])),
])
add("zero_", [
    ("f32", lambda g: ([("self", g.T(small(g), "float32"))], ["float32"])),
    ("sliced_int64", lambda g: ([("self", g.T([3, 4], "int64", view="slice"))], ["noncontig"])),
    ("bool", lambda g: ([("self", g.T(small(g), "bool"))], ["bool"])),
])
add("fill_.Tensor", [
    ("f32_f64", lambda g: ([("self", g.T(small(g), "float32")), ("value", g.T([], "float64"))], ["float32"])),
    ("int64_f32", lambda g: ([("self", g.T(small(g), "int64")), ("value", g.T([], "float32"))], ["promotion"])),
    ("transposed", lambda g: ([("self", g.T([3, 4], "float64", view="transpose")), ("value", g.T([], "int32"))], ["noncontig"])),
    ("bool", lambda g: ([("self", g.T(small(g), "bool")), ("value", g.T([], "bool"))], ["bool"])),
    ("not_0d", lambda g: ([("self", g.T([3], "float32")), ("value", g.T([1], "float32"))], [])),
])
add("to.dtype", [
    ("same", lambda g: ([("self", g.T(small(g), "float32")), ("dtype", torch.float32)], ["view"])),
    ("same_copy", lambda g: ([("self", g.T(small(g), "float32")), ("dtype", torch.float32), ("copy", True)], ["float32"])),
    ("f32_to_int64", lambda g: ([("self", g.T(small(g), "float32", "wide")), ("dtype", torch.int64)], ["dtype"])),
    ("int32_to_f64", lambda g: ([("self", g.T(small(g), "int32")), ("dtype", torch.float64)], ["dtype"])),
    ("f64_to_bool", lambda g: ([("self", g.T(small(g), "float64", "special")), ("dtype", torch.bool)], ["special"])),
    ("transposed", lambda g: ([("self", g.T([3, 4], "float32", view="transpose")), ("dtype", torch.float64)], ["noncontig"])),
])
add("to.dtype_layout", [
    ("same", lambda g: ([("self", g.T(small(g), "int64"))], ["view"])),
    ("dtype", lambda g: ([("self", g.T(small(g), "int64")), ("dtype", torch.float32)], ["dtype"])),
])
add("to.other", [
    ("int64", lambda g: ([("self", g.T(small(g), "float32")), ("other", g.T([2], "int64"))], ["dtype"])),
    ("same", lambda g: ([("self", g.T(small(g), "float32")), ("other", g.T([], "float32"))], ["view"])),
])
for op in ["eye"]:
    add(op, [
        ("n3", lambda g: ([("n", 3)], ["float32"])),
        ("n0", lambda g: ([("n", 0)], ["empty"])),
        ("int64", lambda g: ([("n", 2), ("dtype", torch.int64)], ["integer"])),
        ("negative", lambda g: ([("n", -1)], [])),
    ])
add("eye.m", [
    ("wide", lambda g: ([("n", 2), ("m", 4)], ["float32"])),
    ("tall_bool", lambda g: ([("n", 4), ("m", 3), ("dtype", torch.bool)], ["bool"])),
    ("f64_empty", lambda g: ([("n", 3), ("m", 0), ("dtype", torch.float64)], ["empty"])),
    ("negative_m", lambda g: ([("n", 2), ("m", -1)], [])),
])
for op in ["nan_to_num", "nan_to_num_"]:
    add(op, [
        ("f32_defaults", lambda g: ([("self", g.T(small(g), "float32", "special"))], ["special"])),
        ("f64_given", lambda g: ([("self", g.T(small(g), "float64", "special")), ("nan", 1.5), ("posinf", 100.0),
                                  ("neginf", -7.0)], ["special"])),
        ("f32_nan_only", lambda g: ([("self", g.T([3, 4], "float32", "special", view="transpose")), ("nan", -1.0)],
                                    ["noncontig"])),
        ("int64", lambda g: ([("self", g.T(small(g), "int64")), ("nan", 1.0)], ["integer"])),
        ("bool", lambda g: ([("self", g.T(small(g), "bool"))], ["bool"])),
        ("zero_dim", lambda g: ([("self", g.T([], "float32", "special"))], ["zero_dim"])),
    ])
add("linspace", [
    ("f32", lambda g: ([("start", 0), ("end", 1), ("steps", 5)], ["float32"])),
    ("f32_odd", lambda g: ([("start", -3.25), ("end", 7.5), ("steps", 11)], ["float32"])),
    ("f64_down", lambda g: ([("start", 2.5), ("end", -1.0), ("steps", 8), ("dtype", torch.float64)], ["float64"])),
    ("int64", lambda g: ([("start", 0), ("end", 10), ("steps", 4), ("dtype", torch.int64)], ["integer"])),
    ("int32_neg", lambda g: ([("start", -7), ("end", 3), ("steps", 6), ("dtype", torch.int32)], ["integer"])),
    ("one", lambda g: ([("start", 1.5), ("end", 3.0), ("steps", 1)], ["zero_dim"])),
    ("none", lambda g: ([("start", 1.5), ("end", 3.0), ("steps", 0)], ["empty"])),
    ("negative", lambda g: ([("start", 0), ("end", 1), ("steps", -1)], [])),
])
add("logspace", [
    ("f32", lambda g: ([("start", 0), ("end", 2), ("steps", 5)], ["float32"])),
    ("base2_f64", lambda g: ([("start", -2.0), ("end", 3.0), ("steps", 6), ("base", 2.0), ("dtype", torch.float64)],
                             ["float64"])),
    ("one", lambda g: ([("start", 1.0), ("end", 3.0), ("steps", 1)], ["zero_dim"])),
], tol=(1e-5, 1e-5))

if __name__ == "__main__":
    fam.main()

#!/usr/bin/python3
"""gen_ops_reduce.py: conformance cases of the reductions and linear algebra family, recorded
from PyTorch 1.13 into tests/fixtures/ops_reduce.json (see opgen.py):

    /usr/bin/python3 tools/conformance/gen_ops_reduce.py

Each reduction is recorded on float32, float64, int64 and bool where PyTorch's CPU kernel
takes them (the result dtype is part of the record), on strided views, with keepdim, negative
dims and dim lists, on 0-d inputs, over empty dims (PyTorch's identities, or its errors where
an operation has none), with NaN and infinities, and with PyTorch's errors for bad dims and
dtypes. Errors that only PyTorch's CPU kernel raises (argmin of bool) are left out: a Meta run
would expect them too.
"""
import math
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import opgen  # noqa: E402
from opgen import ERR, S  # noqa: E402

fam = opgen.Family("reduce", seed=31)

FLOATS = ("float32", "float64")
ALL_DT = ("float32", "float64", "int64", "int32", "bool")


def case(name, build, tags=()):
    return S(name, lambda g: (build(g), list(tags)))


def err(name, build, exc, msg, tags=()):
    return ERR(name, lambda g: (build(g), list(tags)), exc, msg)


def dim_value(kind, dims):
    """The dim argument of a reduction whose schema's dim is `kind`, for the dims `dims` (a
    list): int and int? take its one element."""
    if kind in ("int", "optint"):
        return dims[0]
    return list(dims)


def reduction(op, kind, dtypes=ALL_DT, empty_identity=True, keepdim=True, extra=(), tol=None,
              empty_list=True):
    """Scenarios of a reduction `op` whose dim argument is of `kind` ("list" int[1], "optlist"
    int[1]?, "int", "optint" int?, None: no dim). extra: more (name, value) arguments for every
    case; empty_list: whether dim=[] (every dim) is a case."""
    ex = list(extra)

    def args(x, dims=None, kd=None):
        a = [("self", x)] + ex
        if kind is not None and dims is not None:
            a.append(("dim", dim_value(kind, dims)))
        elif kind in ("optlist", "optint"):
            a.append(("dim", None))
        if keepdim and kd is not None and kind is not None:
            a.append(("keepdim", kd))
        return a

    multi = kind in ("list", "optlist")
    scen = []
    for dt in dtypes:
        scen.append(case(dt, lambda g, dt=dt: args(g.T([3, 4, 5], dt, "halfint"), [1], False)))
        scen.append(case(dt + "_strided_keepdim",
                         lambda g, dt=dt: args(g.T([4, 3, 5], dt, view="any"),
                                               [0, -1] if multi else [-1], True)))
    scen.append(case("float32_special", lambda g: args(g.T([4, 6], "float32", "special"), [1],
                                                       False)))
    scen.append(case("float64_special_dim0",
                     lambda g: args(g.T([5, 3], "float64", "special"), [0], True)))
    scen.append(case("float32_0d", lambda g: args(g.T([], "float32"), [0] if kind else None,
                                                  False)))
    scen.append(case("float32_0d_negdim",
                     lambda g: args(g.T([], "float32"), [-1] if kind else None, True)))
    scen.append(case("float32_1d_long",
                     lambda g: args(g.T([300], "float32", "unit"), [0] if kind else None)))
    if kind is None or kind in ("optlist", "optint"):
        scen.append(case("float32_all_dims",
                         lambda g: args(g.T([2, 3, 4], "float32", view="transpose"))))
    if multi:
        scen.append(case("float64_dims_all_listed",
                         lambda g: args(g.T([2, 3, 4], "float64"), [2, 0, 1], False)))
    if multi and empty_list:
        scen.append(case("float32_dims_empty_list",
                         lambda g: args(g.T([2, 3], "float32"), [], False)))
    if kind is not None:
        scen.append(case("float32_empty_kept", lambda g: args(g.T([0, 3], "float32"), [1])))
        if empty_identity:
            scen.append(case("float32_empty_reduced",
                             lambda g: args(g.T([0, 3], "float32"), [0], True)))
    if empty_identity:
        scen.append(case("float64_empty_all",
                         lambda g: args(g.T([2, 0], "float64"),
                                        [1] if kind in ("list", "int") else None)))
    errs = []
    if kind is not None:
        errs.append(err("dim_out_of_range", lambda g: args(g.T([2, 3], "float32"), [2]),
                        "IndexError", "Dimension out of range"))
        errs.append(err("dim_out_of_range_0d", lambda g: args(g.T([], "float32"), [1]),
                        "IndexError", "Dimension out of range"))
    if multi:
        errs.append(err("dim_repeated", lambda g: args(g.T([2, 3], "float32"), [1, -1]),
                        "RuntimeError", "appears multiple times in the list of dims"))
    fam.op(op, scen, errors=errs, tol=tol)
    return errs


# ---- reductions on the reduction engine ----

reduction("mean", None, dtypes=FLOATS, extra=[("dtype", None)])
fam.op("mean", [], errors=[
    err("int64_refused", lambda g: [("self", g.T([3], "int64"))], "RuntimeError",
        "mean(): could not infer output dtype")])
reduction("nansum", "optlist")
fam.op("nansum", [case("dtype_float64", lambda g: [("self", g.T([3, 4], "float32", "special")),
                                                 ("dim", [1]), ("dtype", opgen.gc.DTYPES["float64"])]),
                  case("int32_to_int64_default", lambda g: [("self", g.T([3, 4], "int32"))])])
reduction("nanmean", "optlist", dtypes=FLOATS)
fam.op("nanmean", [
    case("nan_rows", lambda g: [("self", g.T([4, 6], "float32", "special")), ("dim", [1])]),
    case("all_nan", lambda g: [("self", opgen.gc.TSpec("float64", [2, 2], np.full(4, np.nan))),
                               ("dim", [0]), ("keepdim", True)])],
    errors=[err("int64_refused", lambda g: [("self", g.T([3], "int64"))], "RuntimeError",
                "nanmean(): expected input to have floating point dtype but got Long")])
reduction("prod", None)
reduction("prod.dim_int", "int")
fam.op("prod.dim_int", [
    case("int64_to_float32", lambda g: [("self", g.T([3, 4], "int64")), ("dim", 1),
                                        ("dtype", opgen.gc.DTYPES["float32"])]),
    case("int64_to_bool", lambda g: [("self", g.T([3, 4], "int64", "small")), ("dim", 0),
                                     ("dtype", opgen.gc.DTYPES["bool"])]),
    case("float32_zeros_infs", lambda g: [("self", g.T([6, 5], "float32", "special")),
                                          ("dim", 0), ("keepdim", True)])])
reduction("amin", "list", empty_identity=False)
fam.op("amin", [], errors=[
    err("empty_reduced", lambda g: [("self", g.T([0, 3], "float32")), ("dim", [0])],
        "IndexError", "amin(): Expected reduction dim 0 to have non-zero size"),
    err("empty_all", lambda g: [("self", g.T([0, 3], "float32"))], "RuntimeError",
        "amin(): Expected reduction dim to be specified")])
reduction("max", None, empty_identity=False)
reduction("min", None, empty_identity=False)
fam.op("max", [], errors=[err("empty", lambda g: [("self", g.T([2, 0], "float32"))],
                              "RuntimeError", "max(): Expected reduction dim to be specified")])
fam.op("min", [], errors=[err("empty", lambda g: [("self", g.T([0], "int64"))],
                              "RuntimeError", "min(): Expected reduction dim to be specified")])
reduction("argmin", "optint", dtypes=("float32", "float64", "int64", "int32"),
          empty_identity=False)
fam.op("argmin", [
    case("ties_first", lambda g: [("self", g.T([4, 6], "float32", "int")), ("dim", 1)]),
    case("bool_size_one_dim", lambda g: [("self", g.T([3, 1], "bool")), ("dim", 1)])],
    errors=[err("empty_reduced", lambda g: [("self", g.T([0, 3], "float32")), ("dim", 0)],
                "IndexError", "argmin(): Expected reduction dim 0 to have non-zero size"),
            err("empty_all", lambda g: [("self", g.T([0, 3], "float32"))], "IndexError",
                "argmin(): Expected reduction dim to be specified")])
for name in ("max.dim", "min.dim"):
    reduction(name, "int", empty_identity=False)
    fam.op(name, [case("ties", lambda g: [("self", g.T([5, 6], "float64", "int")), ("dim", 0)])],
           errors=[err("empty_reduced", lambda g: [("self", g.T([0, 3], "float32")), ("dim", -2)],
                       "IndexError", "Expected reduction dim 0 to have non-zero size")])
reduction("aminmax", "optint", empty_identity=False)
fam.op("aminmax", [], errors=[
    err("empty_all", lambda g: [("self", g.T([0, 3], "float32"))], "RuntimeError",
        "cannot compute aminmax over an empty dimension"),
    err("empty_reduced", lambda g: [("self", g.T([2, 0], "float32")), ("dim", -1)],
        "IndexError", "aminmax: Expected reduction dim 1 to have non-zero size")])
for name in ("any", "all"):
    reduction(name, None)
    reduction(name + ".dim", "int")
    fam.op(name + ".dim", [
        case("uint8_like_int64_small", lambda g: [("self", g.T([4, 5], "int64", "small")),
                                                  ("dim", 0)]),
        case("float_nan", lambda g: [("self", g.T([4, 6], "float32", "special")), ("dim", 1)])])
reduction("count_nonzero.dim_IntList", "list", keepdim=False)
reduction("count_nonzero", "optint", keepdim=False)


# ---- var, std and the norms (kernels/cpu/reduce_moments.c) ----

F64 = opgen.gc.DTYPES["float64"]
F32 = opgen.gc.DTYPES["float32"]
I64 = opgen.gc.DTYPES["int64"]
for name in ("var.correction", "std.correction", "var_mean.correction", "std_mean.correction"):
    reduction(name, "optlist", dtypes=FLOATS, extra=[("correction", None)])
    fam.op(name, [
        case("correction_0", lambda g: [("self", g.T([4, 5], "float32", "offset")), ("dim", [1]),
                                        ("correction", 0)]),
        case("correction_2_keepdim", lambda g: [("self", g.T([3, 6, 2], "float64", view="any")),
                                                ("dim", [0, 1]), ("correction", 2),
                                                ("keepdim", True)]),
        case("correction_past_n", lambda g: [("self", g.T([3, 2], "float32")), ("dim", [1]),
                                             ("correction", 5)]),
        case("correction_negative", lambda g: [("self", g.T([3, 4], "float64")), ("dim", [0]),
                                               ("correction", -1)]),
        case("one_element", lambda g: [("self", g.T([3, 1], "float32")), ("dim", [1]),
                                       ("correction", 1)]),
        case("large_offset", lambda g: [("self", g.T([2, 200], "float32", "offset")),
                                        ("dim", [1]), ("correction", 1)])],
        errors=[err("int64_refused", lambda g: [("self", g.T([3], "int64")), ("dim", [0]),
                                                ("correction", 1)],
                    "RuntimeError", "%s only support floating point and complex dtypes" %
                    ("std and var" if name in ("var.correction", "std.correction")
                     else name.split(".")[0]))])

ORDS = [2, 1, 0, 3, 0.5, -1.0, math.inf, -math.inf, 2.5]
reduction("linalg_vector_norm", "optlist", dtypes=FLOATS, empty_identity=True,
          extra=[("ord", 2)])
fam.op("linalg_vector_norm", [
    case("ord_%s" % str(o).replace(".", "_").replace("-", "neg"),
         lambda g, o=o: [("self", g.T([3, 5], "float32", "special" if o in (0, math.inf) else
                                      "normal", view="any")), ("ord", o), ("dim", [1])])
    for o in ORDS] + [
    case("ord_inf_all", lambda g: [("self", g.T([2, 3, 4], "float64")), ("ord", math.inf)]),
    case("ord_neginf_zero", lambda g: [("self", g.T([4, 3], "float64", "int")),
                                       ("ord", -math.inf), ("dim", [0])]),
    case("dtype_float64", lambda g: [("self", g.T([3, 4], "float32")), ("dim", [0]),
                                     ("dtype", F64)]),
    case("int_ord_3", lambda g: [("self", g.T([6], "float64")), ("ord", 3)]),
    case("empty_ord_inf_kept", lambda g: [("self", g.T([0, 3], "float32")), ("ord", math.inf),
                                          ("dim", [1])])],
    errors=[
        err("int64_refused", lambda g: [("self", g.T([3], "int64"))], "RuntimeError",
            "linalg.vector_norm: Expected a floating point or complex tensor as input"),
        err("dtype_int", lambda g: [("self", g.T([3], "float32")), ("dtype", I64)],
            "RuntimeError", "linalg.vector_norm: dtype should be floating point"),
        err("dtype_narrowing", lambda g: [("self", g.T([3], "float64")), ("dtype", F32)],
            "RuntimeError", "should be convertible without narrowing"),
        err("empty_ord_inf", lambda g: [("self", g.T([0, 3], "float32")), ("ord", math.inf)],
            "RuntimeError", "cannot compute the inf norm on an empty tensor"),
        err("empty_ord_neg", lambda g: [("self", g.T([0, 3], "float32")), ("ord", -1.0),
                                        ("dim", [0])],
            "RuntimeError", "cannot compute the -1 norm on the dimension 0")])

reduction("norm.ScalarOpt_dim", "list", dtypes=FLOATS, extra=[("p", 2)])
fam.op("norm.ScalarOpt_dim", [
    case("p_%s" % str(o).replace(".", "_").replace("-", "neg"),
         lambda g, o=o: [("self", g.T([4, 3], "float64", "special" if o in (0, math.inf) else
                                      "normal", view="any")), ("p", o), ("dim", [0])])
    for o in ORDS] + [
    case("p_none", lambda g: [("self", g.T([3, 4], "float32")), ("p", None), ("dim", [1])]),
    case("empty_p_inf", lambda g: [("self", g.T([0, 3], "float32")), ("p", math.inf),
                                   ("dim", [0])]),
    case("empty_p_neginf", lambda g: [("self", g.T([0, 3], "float32")), ("p", -math.inf),
                                      ("dim", [0])])],
    errors=[err("int64_refused", lambda g: [("self", g.T([3], "int64")), ("p", 2), ("dim", [0])],
                "RuntimeError", "norm(): input dtype should be either floating point or complex")])
fam.op("norm.ScalarOpt_dim_dtype", [
    case("float32_to_float64", lambda g: [("self", g.T([3, 4], "float32")), ("p", 3),
                                          ("dim", [1]), ("keepdim", False), ("dtype", F64)]),
    case("float64_to_float32", lambda g: [("self", g.T([3, 4], "float64", view="any")),
                                          ("p", 1), ("dim", [0]), ("keepdim", True),
                                          ("dtype", F32)]),
    case("int64_to_float32", lambda g: [("self", g.T([5], "int64")), ("p", 2), ("dim", [0]),
                                        ("keepdim", False), ("dtype", F32)])],
    errors=[err("dtype_int", lambda g: [("self", g.T([3], "float32")), ("p", 2), ("dim", [0]),
                                        ("keepdim", False), ("dtype", I64)],
                "RuntimeError", "norm(): the desired output dtype should be either floating")])

# ---- composites over them (kernels/src/composite_moments.c) ----

for name in ("var", "std", "var_mean", "std_mean"):
    fam.op(name, [
        case("unbiased", lambda g: [("self", g.T([4, 5], "float32", view="any"))]),
        case("biased_float64", lambda g: [("self", g.T([3, 4], "float64")), ("unbiased", False)]),
        case("one_element", lambda g: [("self", g.T([1], "float32"))])],
        errors=[err("int64_refused", lambda g: [("self", g.T([3], "int64"))], "RuntimeError",
                    "only support floating point and complex dtypes")])
    fam.op(name + ".dim", [
        case("dim_keepdim", lambda g: [("self", g.T([4, 5, 2], "float32", view="any")),
                                       ("dim", [0, 2]), ("unbiased", True), ("keepdim", True)]),
        case("biased_negdim", lambda g: [("self", g.T([3, 6], "float64", "special")),
                                         ("dim", [-1]), ("unbiased", False)]),
        case("dim_none", lambda g: [("self", g.T([3, 4], "float32")), ("dim", None)]),
        case("empty", lambda g: [("self", g.T([0, 4], "float32")), ("dim", [0])])],
        errors=[err("dim_out_of_range", lambda g: [("self", g.T([3, 4], "float32")),
                                                   ("dim", [2])],
                    "IndexError", "Dimension out of range")])

fam.op("norm.Scalar", [
    case("p_%s" % str(o).replace(".", "_").replace("-", "neg"),
         lambda g, o=o: [("self", g.T([3, 4], "float32", view="any")), ("p", o)])
    for o in ORDS] + [
    case("default_float64_0d", lambda g: [("self", g.T([], "float64"))]),
    case("empty", lambda g: [("self", g.T([0, 2], "float32")), ("p", math.inf)])],
    errors=[err("int64_refused", lambda g: [("self", g.T([3], "int64"))], "RuntimeError",
                "norm(): input dtype should be either floating point or complex")])
fam.op("norm.ScalarOpt_dtype", [
    case("to_float64", lambda g: [("self", g.T([3, 4], "float32")), ("p", 2), ("dtype", F64)]),
    case("p_none_int64", lambda g: [("self", g.T([5], "int64")), ("p", None), ("dtype", F32)])])

reduction("logsumexp", "list", dtypes=ALL_DT, empty_list=False)
fam.op("logsumexp", [
    case("infinities", lambda g: [("self", g.T([4, 6], "float32", "special")), ("dim", [1])]),
    case("large", lambda g: [("self", g.T([3, 5], "float64", "huge")), ("dim", [0, 1]),
                             ("keepdim", True)]),
    case("empty_all_kept_list", lambda g: [("self", g.T([3, 2], "float32")), ("dim", []),
                                           ("keepdim", True)]),
    case("zero_d_empty_list", lambda g: [("self", g.T([], "float32")), ("dim", [])])],
    errors=[err("empty_list_not_kept", lambda g: [("self", g.T([3, 2], "float32")), ("dim", [])],
                "RuntimeError", "output with shape [] doesn't match the broadcast shape [1, 1]")])

# ---- vector products (kernels/cpu/linalg.c, kernels/src/composite_products.c) ----

def dot_op(name, other):
    fam.op(name, [
        case(dt, lambda g, dt=dt: [("self", g.T([7], dt)), (other, g.T([7], dt))])
        for dt in ("float32", "float64", "int64", "int32")] + [
        case("strided", lambda g: [("self", g.T([6], "float32", view="slice")),
                                   (other, g.T([6], "float32", view="expand"))]),
        case("empty", lambda g: [("self", g.T([0], "float32")), (other, g.T([0], "float32"))]),
        case("special", lambda g: [("self", g.T([8], "float64", "special")),
                                   (other, g.T([8], "float64"))]),
        case("long", lambda g: [("self", g.T([500], "float32", "unit")),
                                (other, g.T([500], "float32", "unit"))])],
        errors=[
            err("not_1d", lambda g: [("self", g.T([2, 2], "float32")), (other, g.T([2], "float32"))],
                "RuntimeError", "1D tensors expected, but got 2D and 1D tensors"),
            err("dtypes", lambda g: [("self", g.T([2], "float32")), (other, g.T([2], "float64"))],
                "RuntimeError", "dot : expected both vectors to have same dtype, but found Float and Double"),
            err("sizes", lambda g: [("self", g.T([3], "float32")), (other, g.T([4], "float32"))],
                "RuntimeError", "inconsistent tensor size, expected tensor [3] and src [4]")])


dot_op("dot", "tensor")
dot_op("vdot", "other")

fam.op("addmv", [
    case(dt, lambda g, dt=dt: [("self", g.T([4], dt)), ("mat", g.T([4, 5], dt)),
                               ("vec", g.T([5], dt))])
    for dt in ("float32", "float64", "int64")] + [
    case("strided_alpha_beta", lambda g: [("self", g.T([3], "float32", view="expand")),
                                          ("mat", g.T([3, 6], "float32", view="transpose")),
                                          ("vec", g.T([6], "float32", view="slice")),
                                          ("beta", 0.5), ("alpha", -2.0)]),
    case("self_0d_float64", lambda g: [("self", g.T([], "float64")),
                                       ("mat", g.T([2, 3], "float32")), ("vec", g.T([3], "float32"))]),
    case("beta_0_nan", lambda g: [("self", g.T([4], "float32", "special")),
                                  ("mat", g.T([4, 2], "float32")), ("vec", g.T([2], "float32")),
                                  ("beta", 0)]),
    case("empty_contraction", lambda g: [("self", g.T([3], "float32")), ("mat", g.T([3, 0], "float32")),
                                         ("vec", g.T([0], "float32")), ("beta", 2.0)]),
    case("int_beta_float", lambda g: [("self", g.T([2], "int64")), ("mat", g.T([2, 3], "int64")),
                                      ("vec", g.T([3], "int64")), ("beta", 0.5)])],
    errors=[
        err("dims", lambda g: [("self", g.T([2, 1], "float32")), ("mat", g.T([2, 3], "float32")),
                               ("vec", g.T([3], "float32"))],
            "RuntimeError", "vector + matrix @ vector expected, got 2, 2, 1"),
        err("sizes", lambda g: [("self", g.T([3], "float32")), ("mat", g.T([2, 3], "float32")),
                                ("vec", g.T([3], "float32"))],
            "RuntimeError", "size mismatch, got 3, 2x3,3"),
        err("bool", lambda g: [("self", g.T([2], "bool")), ("mat", g.T([2, 3], "bool")),
                               ("vec", g.T([3], "bool"))],
            "RuntimeError", "\"addmv_impl_cpu\" not implemented for 'Bool'"),
        err("vec_dtype", lambda g: [("self", g.T([2], "float32")), ("mat", g.T([2, 3], "float32")),
                                    ("vec", g.T([3], "float64"))],
            "RuntimeError", "expected scalar type Float but found Double")])

fam.op("mv", [
    case(dt, lambda g, dt=dt: [("self", g.T([4, 5], dt, view="any")), ("vec", g.T([5], dt))])
    for dt in ("float32", "float64", "int64")] + [
    case("empty_contraction", lambda g: [("self", g.T([2, 0], "float32")), ("vec", g.T([0], "float32"))]),
    case("empty_rows", lambda g: [("self", g.T([0, 3], "float32")), ("vec", g.T([3], "float32"))])],
    errors=[
        err("vector", lambda g: [("self", g.T([2], "float32")), ("vec", g.T([2], "float32"))],
            "RuntimeError", "vector + matrix @ vector expected, got 1, 1, 1"),
        err("sizes", lambda g: [("self", g.T([2, 3], "float32")), ("vec", g.T([2], "float32"))],
            "RuntimeError", "size mismatch, got 2, 2x3,2")])

fam.op("baddbmm", [
    case(dt, lambda g, dt=dt: [("self", g.T([2, 3, 4], dt)), ("batch1", g.T([2, 3, 5], dt)),
                               ("batch2", g.T([2, 5, 4], dt))])
    for dt in ("float32", "float64", "int64")] + [
    case("broadcast_strided_alpha_beta", lambda g: [
        ("self", g.T([4], "float32")), ("batch1", g.T([3, 2, 5], "float32", view="any")),
        ("batch2", g.T([3, 5, 4], "float32", view="any")), ("beta", 0.5), ("alpha", 2.0)]),
    case("self_2d_float64", lambda g: [("self", g.T([3, 4], "float64")),
                                       ("batch1", g.T([2, 3, 5], "float32")),
                                       ("batch2", g.T([2, 5, 4], "float32"))]),
    case("beta_0_nan", lambda g: [("self", g.T([2, 2, 3], "float32", "special")),
                                  ("batch1", g.T([2, 2, 4], "float32")),
                                  ("batch2", g.T([2, 4, 3], "float32")), ("beta", 0)]),
    case("empty_contraction", lambda g: [("self", g.T([4], "float32")),
                                         ("batch1", g.T([2, 3, 0], "float32")),
                                         ("batch2", g.T([2, 0, 4], "float32")), ("beta", 2.0)]),
    case("larger", lambda g: [("self", g.T([1], "float32")), ("batch1", g.T([4, 16, 24], "float32", "unit")),
                              ("batch2", g.T([4, 24, 8], "float32", "unit"))])],
    errors=[
        err("batch1_2d", lambda g: [("self", g.T([4], "float32")), ("batch1", g.T([3, 5], "float32")),
                                    ("batch2", g.T([2, 5, 4], "float32"))],
            "RuntimeError", "batch1 must be a 3D tensor"),
        err("batch2_sizes", lambda g: [("self", g.T([4], "float32")),
                                       ("batch1", g.T([2, 3, 5], "float32")),
                                       ("batch2", g.T([2, 6, 4], "float32"))],
            "RuntimeError", "Expected size for first two dimensions of batch2 tensor to be: [2, 5] but got: [2, 6]."),
        err("self_expand", lambda g: [("self", g.T([3, 4, 4], "float32")),
                                      ("batch1", g.T([2, 3, 5], "float32")),
                                      ("batch2", g.T([2, 5, 4], "float32"))],
            "RuntimeError", "The expanded size of the tensor (3) must match the existing size (4) at non-singleton dimension 1."),
        err("dtypes", lambda g: [("self", g.T([4], "float32")), ("batch1", g.T([2, 3, 5], "float32")),
                                 ("batch2", g.T([2, 5, 4], "float64"))],
            "RuntimeError", "expected scalar type Float but found Double"),
        err("bool", lambda g: [("self", g.T([4], "bool")), ("batch1", g.T([2, 3, 5], "bool")),
                               ("batch2", g.T([2, 5, 4], "bool"))],
            "RuntimeError", "\"baddbmm\" not implemented for 'Bool'")])

fam.op("addbmm", [
    case(dt, lambda g, dt=dt: [("self", g.T([3, 4], dt)), ("batch1", g.T([2, 3, 5], dt)),
                               ("batch2", g.T([2, 5, 4], dt))])
    for dt in ("float32", "float64", "int64")] + [
    case("broadcast_strided_alpha_beta", lambda g: [
        ("self", g.T([4], "float32")), ("batch1", g.T([3, 2, 5], "float32", view="any")),
        ("batch2", g.T([3, 5, 4], "float32", view="any")), ("beta", -1.0), ("alpha", 0.5)]),
    case("no_batches", lambda g: [("self", g.T([3, 4], "float32")), ("batch1", g.T([0, 3, 5], "float32")),
                                  ("batch2", g.T([0, 5, 4], "float32")), ("beta", 2.0)])],
    errors=[
        err("batches", lambda g: [("self", g.T([3, 4], "float32")), ("batch1", g.T([2, 3, 5], "float32")),
                                  ("batch2", g.T([3, 5, 4], "float32"))],
            "RuntimeError", "batch1 and batch2 must have same number of batches, got 2 and 3"),
        err("sizes", lambda g: [("self", g.T([3, 4], "float32")), ("batch1", g.T([2, 3, 5], "float32")),
                                ("batch2", g.T([2, 6, 4], "float32"))],
            "RuntimeError", "Incompatible matrix sizes for bmm (3x5 and 6x4)"),
        err("self_expand", lambda g: [("self", g.T([2, 4], "float32")),
                                      ("batch1", g.T([2, 3, 5], "float32")),
                                      ("batch2", g.T([2, 5, 4], "float32"))],
            "RuntimeError", "The expanded size of the tensor (3) must match the existing size (2) at non-singleton dimension 0."),
        err("self_dtype", lambda g: [("self", g.T([3, 4], "float64")),
                                     ("batch1", g.T([2, 3, 5], "float32")),
                                     ("batch2", g.T([2, 5, 4], "float32"))],
            "RuntimeError", "self and mat2 must have the same dtype")])

for name in ("outer", "ger"):
    fam.op(name, [
        case("float32", lambda g: [("self", g.T([4], "float32", view="slice")),
                                   ("vec2", g.T([3], "float32"))]),
        case("promote", lambda g: [("self", g.T([3], "int64")), ("vec2", g.T([2], "float64"))]),
        case("bool", lambda g: [("self", g.T([3], "bool")), ("vec2", g.T([2], "bool"))]),
        case("empty", lambda g: [("self", g.T([0], "float32")), ("vec2", g.T([2], "float32"))])],
        errors=[err("self_2d", lambda g: [("self", g.T([2, 2], "float32")),
                                          ("vec2", g.T([2], "float32"))],
                    "RuntimeError", "outer: Expected 1-D argument self, but got 2-D"),
                err("vec2_2d", lambda g: [("self", g.T([2], "float32")),
                                          ("vec2", g.T([2, 1], "float32"))],
                    "RuntimeError", "outer: Expected 1-D argument vec2, but got 2-D")])

# ---- LAPACK (kernels/cpu/lapack.c, kernels/src/composite_lapack.c) ----
# Factorizations of random matrices; float32 results within 1e-4 (LAPACK's blocking may order
# the operations differently), float64 within 1e-8.


def lapack_tol(inputs, out, dtype):
    return (1e-4, 1e-4) if dtype == "float32" else (1e-8, 1e-8)


def spd(g, shape, dtype):
    """A symmetric positive-definite batch: X X^T + n I for X random."""
    n = shape[-1]
    x = g.rng.standard_normal(list(shape))
    a = x @ np.swapaxes(x, -1, -2) + n * np.eye(n)
    return opgen.gc.TSpec(dtype, list(shape), a.reshape(-1).astype(opgen.gc.NP_DTYPES[dtype]))


SQUARE_ERRORS = [
    ("rect", [3, 4], "float32", "A must be batches of square matrices, but they are 3 by 4 matrices"),
    ("int64", [3, 3], "int64", "Expected a floating point or complex tensor as input. Got Long"),
    ("one_dim", [3], "float32", "The input tensor A must have at least 2 dimensions.")]


def square_errors(arg, name, extra=()):
    return [err(e, lambda g, shape=shape, dt=dt: [(arg, g.T(shape, dt))] + list(extra),
                "RuntimeError", "%s: %s" % (name, msg)) for e, shape, dt, msg in SQUARE_ERRORS]


fam.op("linalg_lu_factor_ex", [
    case("float32", lambda g: [("A", g.T([4, 4], "float32"))]),
    case("float64_batched_strided", lambda g: [("A", g.T([2, 3, 3], "float64", view="any"))]),
    case("wide", lambda g: [("A", g.T([3, 5], "float64"))]),
    case("tall", lambda g: [("A", g.T([5, 3], "float32"))]),
    case("singular", lambda g: [("A", opgen.gc.TSpec("float64", [3, 3], np.zeros(9)))]),
    case("empty_matrix", lambda g: [("A", g.T([2, 0, 0], "float32"))]),
    case("empty_batch", lambda g: [("A", g.T([0, 3, 3], "float32"))])],
    errors=[err("int64", lambda g: [("A", g.T([3, 3], "int64"))], "RuntimeError",
                "\"lu_cpu\" not implemented for 'Long'"),
            err("no_pivoting", lambda g: [("A", g.T([3, 3], "float32")), ("pivot", False)],
                "RuntimeError", "LU without pivoting is not implemented on the CPU")],
    tol=lapack_tol)
fam.op("_linalg_det", [
    case("float32", lambda g: [("A", g.T([4, 4], "float32"))]),
    case("float64_batched_strided", lambda g: [("A", g.T([3, 3, 3], "float64", view="any"))]),
    case("singular", lambda g: [("A", opgen.gc.TSpec("float32", [2, 2], np.ones(4)))]),
    case("empty_matrix", lambda g: [("A", g.T([2, 0, 0], "float64"))]),
    case("empty_batch", lambda g: [("A", g.T([0, 2, 2], "float32"))])],
    errors=square_errors("A", "linalg.det"), tol=lapack_tol)
for name in ("_linalg_slogdet", "linalg_slogdet", "slogdet", "logdet"):
    arg = "A" if "linalg" in name else "self"
    fam.op(name, [
        case("float32", lambda g, arg=arg: [(arg, g.T([4, 4], "float32"))]),
        case("float64_batched_strided", lambda g, arg=arg: [(arg, g.T([3, 3, 3], "float64",
                                                                       view="any"))]),
        case("singular", lambda g, arg=arg: [(arg, opgen.gc.TSpec("float32", [2, 2], np.ones(4)))]),
        case("negative", lambda g, arg=arg: [(arg, opgen.gc.TSpec("float64", [2, 2],
                                                                  np.array([0., 1., 1., 0.])))]),
        case("empty_matrix", lambda g, arg=arg: [(arg, g.T([2, 0, 0], "float64"))])],
        errors=square_errors(arg, "logdet" if name == "logdet" else "linalg.slogdet"),
        tol=lapack_tol)
fam.op("linalg_inv_ex", [
    case("float32", lambda g: [("A", g.T([3, 3], "float32"))]),
    case("float64_batched_strided", lambda g: [("A", g.T([2, 4, 4], "float64", view="any"))]),
    case("empty_matrix", lambda g: [("A", g.T([2, 0, 0], "float32"))])],
    errors=square_errors("A", "linalg.inv"), tol=lapack_tol)
fam.op("linalg_cholesky_ex", [
    case("float32_lower", lambda g: [("self", spd(g, [4, 4], "float32"))]),
    case("float64_upper_batched", lambda g: [("self", spd(g, [2, 3, 3], "float64")),
                                             ("upper", True)])],
    errors=square_errors("self", "linalg.cholesky"), tol=lapack_tol)
fam.op("linalg_cholesky_ex", [
    case("not_positive_definite", lambda g: [("self", opgen.gc.TSpec(
        "float64", [2, 3, 3], np.stack([np.eye(3), -np.eye(3)]).reshape(-1)))])],
    tol=lapack_tol, compare=[False, True])
# eigenvectors and singular vectors are determined up to sign: only eigenvalues and singular
# values are compared (unit.linalg checks the reconstructions)


def sym(g, shape, dtype):
    """A random symmetric batch."""
    x = g.rng.standard_normal(list(shape))
    a = x + np.swapaxes(x, -1, -2)
    return opgen.gc.TSpec(dtype, list(shape), a.reshape(-1).astype(opgen.gc.NP_DTYPES[dtype]))


for name, compare in (("_linalg_eigh", [True, False]), ("linalg_eigh", [True, False])):
    fam.op(name, [
        case("float32", lambda g, name=name: [("self" if name == "linalg_eigh" else "A",
                                               sym(g, [4, 4], "float32"))]),
        case("float64_batched_upper", lambda g, name=name: [
            ("self" if name == "linalg_eigh" else "A", sym(g, [2, 3, 3], "float64")), ("UPLO", "U")]),
        case("lower_only_read", lambda g, name=name: [
            ("self" if name == "linalg_eigh" else "A", g.T([3, 3], "float64"))]),
        case("empty", lambda g, name=name: [("self" if name == "linalg_eigh" else "A",
                                             g.T([2, 0, 0], "float32"))])],
        errors=[err("uplo", lambda g, name=name: [("self" if name == "linalg_eigh" else "A",
                                                  sym(g, [2, 2], "float32")), ("UPLO", "X")],
                    "RuntimeError", "Expected UPLO argument to be 'L' or 'U', but got X")] +
        [err("int64", lambda g, name=name: [("self" if name == "linalg_eigh" else "A",
                                             g.T([3, 3], "int64"))],
             "RuntimeError", "\"linalg_eigh_cpu\" not implemented for 'Long'")] +
        [e for e in square_errors("self" if name == "linalg_eigh" else "A", "linalg.eigh")
         if e.scen_name != "int64"],
        tol=lapack_tol, compare=compare)
fam.op("_linalg_eigh", [
    case("values_only", lambda g: [("A", sym(g, [2, 3, 3], "float32")), ("compute_v", False)])],
    tol=lapack_tol)
fam.op("linalg_eigvalsh", [
    case("float64", lambda g: [("self", sym(g, [3, 4, 4], "float64"))]),
    case("upper", lambda g: [("self", g.T([3, 3], "float32")), ("UPLO", "U")])],
    tol=lapack_tol)
for name in ("_linalg_svd", "linalg_svd"):
    fam.op(name, [
        case("square", lambda g: [("A", g.T([3, 3], "float32"))]),
        case("tall_batched_strided", lambda g: [("A", g.T([2, 5, 3], "float64", view="any"))]),
        case("wide_full", lambda g: [("A", g.T([2, 4], "float32")), ("full_matrices", True)]),
        case("tall_reduced", lambda g: [("A", g.T([4, 2], "float64")), ("full_matrices", False)]),
        case("empty", lambda g: [("A", g.T([0, 3], "float32")), ("full_matrices", True)])],
        errors=[err("driver", lambda g: [("A", g.T([3, 3], "float32")), ("driver", "gesvd")],
                    "RuntimeError", "keyword argument `driver=` is only supported on CUDA"),
                err("int64", lambda g: [("A", g.T([3, 3], "int64"))], "RuntimeError",
                    "linalg.svd: Expected a floating point or complex tensor as input. Got Long"),
                err("one_dim", lambda g: [("A", g.T([3], "float32"))], "RuntimeError",
                    "linalg.svd: The input tensor A must have at least 2 dimensions.")],
        tol=lapack_tol, compare=[False, True, False])
fam.op("_linalg_svd", [
    case("values_only", lambda g: [("A", g.T([2, 3, 4], "float32")), ("compute_uv", False)])],
    tol=lapack_tol)
fam.op("linalg_svdvals", [
    case("float64", lambda g: [("A", g.T([3, 5], "float64"))]),
    case("batched", lambda g: [("A", g.T([2, 4, 3], "float32", view="any"))])],
    tol=lapack_tol)
fam.op("linalg_qr", [
    case("reduced_tall", lambda g: [("A", g.T([5, 3], "float32"))]),
    case("complete_tall_batched", lambda g: [("A", g.T([2, 4, 3], "float64", view="any")),
                                             ("mode", "complete")]),
    case("r_wide", lambda g: [("A", g.T([3, 5], "float64")), ("mode", "r")]),
    case("reduced_wide", lambda g: [("A", g.T([2, 4], "float32"))]),
    case("complete_empty", lambda g: [("A", g.T([3, 0], "float32")), ("mode", "complete")])],
    errors=[err("mode", lambda g: [("A", g.T([3, 3], "float32")), ("mode", "bad")], "RuntimeError",
                "qr received unrecognized mode 'bad' but expected one of 'reduced' (default), 'r', or 'complete'"),
            err("int64", lambda g: [("A", g.T([3, 3], "int64"))], "RuntimeError",
                "linalg.qr: Expected a floating point or complex tensor as input. Got Long"),
            err("one_dim", lambda g: [("A", g.T([3], "float32"))], "RuntimeError",
                "linalg.qr: The input tensor A must have at least 2 dimensions.")],
    tol=lapack_tol)
for name, arg in (("linalg_det", "A"), ("det", "self"), ("linalg_inv", "A"), ("inverse", "self")):
    fam.op(name, [
        case("float32", lambda g, arg=arg: [(arg, g.T([3, 3], "float32"))]),
        case("float64_batched", lambda g, arg=arg: [(arg, g.T([2, 2, 2], "float64", view="any"))])],
        errors=square_errors(arg, "linalg.det" if "det" in name else "linalg.inv"),
        tol=lapack_tol)
fam.op("linalg_cholesky", [
    case("float32", lambda g: [("self", spd(g, [3, 3], "float32"))]),
    case("float64_upper", lambda g: [("self", spd(g, [2, 4, 4], "float64")), ("upper", True)])],
    errors=square_errors("self", "linalg.cholesky"), tol=lapack_tol)


# ---- order statistics: median, nanmedian, mode (kernels/cpu/reduce_order.c) ----

ORDER_DT = ("float32", "float64", "int64", "int32")
for name in ("median", "nanmedian"):
    fam.op(name, [case(dt, lambda g, dt=dt: [("self", g.T([3, 5], dt, view="any"))])
                  for dt in ORDER_DT] + [
        case("even_count", lambda g: [("self", g.T([2, 3], "float64"))]),
        case("float32_nan", lambda g: [("self", g.T([4, 6], "float32", "special"))]),
        case("all_nan", lambda g: [("self", opgen.gc.TSpec("float32", [3], np.full(3, np.nan)))]),
        case("0d", lambda g: [("self", g.T([], "float64"))]),
        case("empty", lambda g: [("self", g.T([0, 3], "float32"))]),
        case("int_ties", lambda g: [("self", g.T([7, 3], "int64", "small"))])],
        errors=[err("bool", lambda g: [("self", g.T([3], "bool"))], "RuntimeError",
                    "\"median_cpu\" not implemented for 'Bool'")])
    # distinct values: the indices are those of PyTorch
    fam.op(name + ".dim", [
        case(dt, lambda g, dt=dt: [("self", g.T([3, 4, 5], dt, "normal" if dt in FLOATS else "wide")),
                                   ("dim", 1)]) for dt in FLOATS] + [
        case("strided_keepdim", lambda g: [("self", g.T([4, 6], "float64", view="any")),
                                           ("dim", -1), ("keepdim", True)]),
        case("even_count_dim0", lambda g: [("self", g.T([4, 3], "float32")), ("dim", 0)]),
        case("0d", lambda g: [("self", g.T([], "float32")), ("dim", -1), ("keepdim", True)]),
        case("empty_kept", lambda g: [("self", g.T([0, 3], "float32")), ("dim", 1)]),
        case("nan_rows", lambda g: [("self", opgen.gc.TSpec(
            "float32", [3, 4], np.array([3, np.nan, 1, 2, 5, -1, 0, 2.5, 4, 1, np.nan, 0],
                                        dtype=np.float32))), ("dim", 1)])],
        errors=[err("empty_reduced", lambda g: [("self", g.T([2, 0], "float32")), ("dim", 1)],
                    "IndexError", "median(): Expected reduction dim 1 to have non-zero size."),
                err("dim_out_of_range", lambda g: [("self", g.T([2, 3], "float32")), ("dim", 2)],
                    "IndexError", "Dimension out of range"),
                err("bool", lambda g: [("self", g.T([3], "bool")), ("dim", 0)], "RuntimeError",
                    "\"median_out\" not implemented for 'Bool'")])
    # ties: PyTorch leaves which of the tied elements' indices is given unspecified
    fam.op(name + ".dim", [
        case(dt + "_ties", lambda g, dt=dt: [("self", g.T([5, 6], dt, "int")), ("dim", 0)])
        for dt in ("float32", "int64", "int32")] + [
        case("all_nan_row", lambda g: [("self", opgen.gc.TSpec(
            "float64", [2, 4], np.array([np.nan] * 4 + [1, np.nan, 2, 0]))), ("dim", 1)])],
        compare=[True, False])
fam.op("mode", [
    case(dt, lambda g, dt=dt: [("self", g.T([4, 9], dt, "small" if dt in ("int64", "int32") else "int"))])
    for dt in ORDER_DT + ("bool",)] + [
    case("strided_dim0_keepdim", lambda g: [("self", g.T([7, 3], "int64", "small", view="any")),
                                            ("dim", 0), ("keepdim", True)]),
    case("distinct", lambda g: [("self", g.T([2, 5], "float64")), ("dim", -1)]),
    case("0d", lambda g: [("self", g.T([], "int64")), ("dim", 0)]),
    case("empty_kept", lambda g: [("self", g.T([0, 3], "float32")), ("dim", 1)])],
    errors=[err("empty_reduced", lambda g: [("self", g.T([2, 0], "float32")), ("dim", 1)],
                "IndexError", "mode(): Expected reduction dim 1 to have non-zero size."),
            err("dim_out_of_range", lambda g: [("self", g.T([2, 3], "float32")), ("dim", -3)],
                "IndexError", "Dimension out of range")])


# ---- linear solves (kernels/cpu/lapack_solve.c) ----


def well_conditioned(g, shape, dtype):
    """A batch of random matrices with n added to the diagonal."""
    n = shape[-1]
    a = g.rng.standard_normal(list(shape)) + n * np.eye(n)
    return opgen.gc.TSpec(dtype, list(shape), a.reshape(-1).astype(opgen.gc.NP_DTYPES[dtype]))


SOLVE_ERRORS = [
    err("rect", lambda g: [("A", g.T([3, 4], "float32")), ("B", g.T([3, 2], "float32"))],
        "RuntimeError", "linalg.solve: A must be batches of square matrices, but they are 3 by 4 matrices"),
    err("int64", lambda g: [("A", g.T([3, 3], "int64")), ("B", g.T([3, 2], "int64"))],
        "RuntimeError", "linalg.solve: Expected a floating point or complex tensor as input. Got Long"),
    err("dtypes_differ", lambda g: [("A", g.T([3, 3], "float32")), ("B", g.T([3, 2], "float64"))],
        "RuntimeError", "linalg.solve: Expected A and B to have the same dtype, but found A of type "
        "Float and B of type Double instead"),
    err("one_dim", lambda g: [("A", g.T([3], "float32")), ("B", g.T([3, 2], "float32"))],
        "RuntimeError", "linalg.solve: The input tensor A must have at least 2 dimensions."),
    err("rows_differ", lambda g: [("A", g.T([3, 3], "float32")), ("B", g.T([4, 2], "float32"))],
        "RuntimeError", "linalg.solve: Incompatible shapes of A and B for the equation AX = B "
        "(3x3 and 4x2)"),
    err("right_vector", lambda g: [("A", g.T([3, 3], "float32")), ("B", g.T([3], "float32")),
                                   ("left", False)],
        "RuntimeError", "linalg.solve: Incompatible shapes of A and B for the equation XA = B "
        "(3x3 and 3x1)"),
    err("batch_mismatch", lambda g: [("A", g.T([2, 3, 3], "float32")), ("B", g.T([3, 3, 2], "float32"))],
        "RuntimeError", "The size of tensor a (3) must match the size of tensor b (2) at "
        "non-singleton dimension 0")]


def solve_scenarios(extra=()):
    ex = list(extra)
    return [
        case("float32", lambda g: [("A", well_conditioned(g, [3, 3], "float32")),
                                   ("B", g.T([3, 2], "float32"))] + ex),
        case("float64_strided_A", lambda g: [("A", well_conditioned(g, [4, 4], "float64")),
                                             ("B", g.T([4, 3], "float64", view="any"))] + ex),
        case("float64_transposed_A", lambda g: [("A", g.T([2, 4, 4], "float64", view="transpose")),
                                                ("B", g.T([2, 4, 1], "float64"))] + ex),
        case("vector", lambda g: [("A", well_conditioned(g, [3, 3], "float64")),
                                  ("B", g.T([3], "float64"))] + ex),
        case("batched_vectors", lambda g: [("A", well_conditioned(g, [2, 3, 3], "float32")),
                                           ("B", g.T([2, 3], "float32"))] + ex),
        case("vector_broadcast", lambda g: [("A", well_conditioned(g, [2, 3, 3], "float64")),
                                            ("B", g.T([3], "float64"))] + ex),
        case("broadcast_B_batch", lambda g: [("A", well_conditioned(g, [2, 3, 3], "float64")),
                                             ("B", g.T([4, 1, 3, 2], "float64"))] + ex),
        case("broadcast_A_batch", lambda g: [("A", well_conditioned(g, [1, 3, 3], "float32")),
                                             ("B", g.T([3, 3, 2], "float32"))] + ex),
        case("right", lambda g: [("A", well_conditioned(g, [3, 3], "float64")),
                                 ("B", g.T([2, 3], "float64")), ("left", False)] + ex),
        case("right_batched", lambda g: [("A", well_conditioned(g, [2, 4, 4], "float32")),
                                         ("B", g.T([2, 5, 4], "float32", view="any")),
                                         ("left", False)] + ex),
        case("empty_matrix", lambda g: [("A", g.T([2, 0, 0], "float32")),
                                        ("B", g.T([2, 0, 3], "float32"))] + ex),
        case("empty_batch", lambda g: [("A", g.T([0, 3, 3], "float64")),
                                       ("B", g.T([3, 2], "float64"))] + ex),
        case("no_columns", lambda g: [("A", well_conditioned(g, [3, 3], "float64")),
                                      ("B", g.T([3, 0], "float64"))] + ex)]


fam.op("_linalg_solve_ex", solve_scenarios(), errors=SOLVE_ERRORS, tol=lapack_tol)
# a singular A: LU, pivots and info are PyTorch's; the result holds what dividing by its zero
# pivot gives, which depends on the order of LAPACK's operations
fam.op("_linalg_solve_ex", [
    case("singular", lambda g: [("A", opgen.gc.TSpec("float64", [2, 3, 3], np.concatenate(
        [np.zeros(9), np.eye(3).reshape(-1)]))), ("B", g.T([2, 3, 2], "float64"))])],
    compare=[False, True, True, True])
fam.op("linalg_solve_ex", solve_scenarios(), errors=SOLVE_ERRORS, tol=lapack_tol)
fam.op("linalg_solve", solve_scenarios(), errors=SOLVE_ERRORS, tol=lapack_tol)


# ---- distances (kernels/cpu/reduce_distance.c) ----

fam.op("_cdist_forward", [
    case("p2_float32", lambda g: [("x1", g.T([3, 4], "float32")), ("x2", g.T([5, 4], "float32")),
                                  ("p", 2.0), ("compute_mode", None)]),
    case("p1_float64_batched_broadcast", lambda g: [("x1", g.T([2, 1, 3, 4], "float64")),
                                                    ("x2", g.T([3, 5, 4], "float64", view="any")),
                                                    ("p", 1.0), ("compute_mode", None)]),
    case("p0_int_valued", lambda g: [("x1", g.T([4, 3], "float32", "int")),
                                     ("x2", g.T([2, 3], "float32", "int")), ("p", 0.0),
                                     ("compute_mode", None)]),
    case("pinf_strided", lambda g: [("x1", g.T([4, 3], "float64", view="transpose")),
                                    ("x2", g.T([3, 3], "float64")), ("p", float("inf")),
                                    ("compute_mode", None)]),
    case("p_fraction", lambda g: [("x1", g.T([3, 5], "float64")), ("x2", g.T([2, 5], "float64")),
                                  ("p", 0.5), ("compute_mode", 2)]),
    case("p3", lambda g: [("x1", g.T([2, 3], "float32")), ("x2", g.T([4, 3], "float32")),
                          ("p", 3.0), ("compute_mode", None)]),
    case("p2_matmul_mode", lambda g: [("x1", g.T([30, 3], "float64", "offset")),
                                      ("x2", g.T([4, 3], "float64")), ("p", 2.0),
                                      ("compute_mode", None)]),
    case("no_columns", lambda g: [("x1", g.T([3, 0], "float32")), ("x2", g.T([2, 0], "float32")),
                                  ("p", 2.0), ("compute_mode", None)]),
    case("no_rows", lambda g: [("x1", g.T([0, 3], "float32")), ("x2", g.T([2, 3], "float32")),
                               ("p", 2.0), ("compute_mode", None)])],
    errors=[err("one_dim", lambda g: [("x1", g.T([4], "float32")), ("x2", g.T([5, 4], "float32")),
                                      ("p", 2.0), ("compute_mode", None)], "RuntimeError",
                "cdist only supports at least 2D tensors, X1 got: 1D"),
            err("columns", lambda g: [("x1", g.T([3, 4], "float32")), ("x2", g.T([5, 3], "float32")),
                                      ("p", 2.0), ("compute_mode", None)], "RuntimeError",
                "X1 and X2 must have the same number of columns. X1: 4 X2: 3"),
            err("int64", lambda g: [("x1", g.T([3, 4], "int64")), ("x2", g.T([5, 4], "int64")),
                                    ("p", 2.0), ("compute_mode", None)], "RuntimeError",
                "cdist only supports floating-point dtypes, X1 got: Long"),
            err("negative_p", lambda g: [("x1", g.T([3, 4], "float32")), ("x2", g.T([5, 4], "float32")),
                                         ("p", -1.0), ("compute_mode", None)], "RuntimeError",
                "cdist only supports non-negative p values"),
            err("mode", lambda g: [("x1", g.T([3, 4], "float32")), ("x2", g.T([5, 4], "float32")),
                                   ("p", 2.0), ("compute_mode", 3)], "RuntimeError",
                "possible modes: 0, 1, 2, but was: 3"),
            err("dtypes_differ", lambda g: [("x1", g.T([3, 4], "float32")), ("x2", g.T([5, 4], "float64")),
                                            ("p", 2.0), ("compute_mode", None)], "RuntimeError",
                "expected scalar type Float but found Double"),
            err("batch_mismatch", lambda g: [("x1", g.T([2, 3, 4], "float32")),
                                             ("x2", g.T([3, 5, 4], "float32")), ("p", 2.0),
                                             ("compute_mode", None)], "RuntimeError",
                "The size of tensor a (2) must match the size of tensor b (3) at non-singleton dimension 0")],
    tol=(1e-5, 1e-5))
fam.op("_pdist_forward", [
    case("p2_float32", lambda g: [("self", g.T([5, 3], "float32")), ("p", 2.0)]),
    case("p1_float64", lambda g: [("self", g.T([6, 4], "float64")), ("p", 1.0)]),
    case("p0_int_valued", lambda g: [("self", g.T([4, 3], "float32", "int")), ("p", 0.0)]),
    case("pinf", lambda g: [("self", g.T([4, 3], "float64")), ("p", float("inf"))]),
    case("p_fraction", lambda g: [("self", g.T([3, 5], "float64")), ("p", 0.5)]),
    case("default_p", lambda g: [("self", g.T([3, 2], "float64"))]),
    case("one_row", lambda g: [("self", g.T([1, 3], "float32")), ("p", 2.0)]),
    case("no_columns", lambda g: [("self", g.T([4, 0], "float32")), ("p", 2.0)])],
    errors=[err("strided", lambda g: [("self", g.T([5, 3], "float32", view="transpose")), ("p", 2.0)],
                "RuntimeError", "_pdist_forward requires contiguous input"),
            err("one_dim", lambda g: [("self", g.T([5], "float32")), ("p", 2.0)], "IndexError",
                "Dimension out of range"),
            err("int64", lambda g: [("self", g.T([4, 3], "int64")), ("p", 2.0)], "RuntimeError",
                "\"pdist\" not implemented for 'Long'")],
    tol=(1e-5, 1e-5))


# ---- histc (kernels/cpu/reduce_histc.c) ----

fam.op("histc", [
    case("float32_range", lambda g: [("self", g.T([4, 5], "float32")), ("bins", 7), ("min", -2),
                                     ("max", 3.5)]),
    case("float64_data_range", lambda g: [("self", g.T([50], "float64", "wide"))]),
    case("float32_strided_bins", lambda g: [("self", g.T([6, 7], "float32", view="any")),
                                            ("bins", 13)]),
    case("edges_included", lambda g: [("self", opgen.gc.TSpec("float32", [6], np.array(
        [0, 1, 2, 4, 8, 9], dtype=np.float32))), ("bins", 4), ("min", 0), ("max", 8)]),
    case("nan_in_first_bin", lambda g: [("self", opgen.gc.TSpec("float64", [4], np.array(
        [1, np.nan, 2, 3]))), ("bins", 3), ("min", 0), ("max", 3)]),
    case("one_value", lambda g: [("self", opgen.gc.TSpec("float32", [2], np.array(
        [2, 2], dtype=np.float32))), ("bins", 3)]),
    case("empty", lambda g: [("self", g.T([0], "float32")), ("bins", 4)]),
    case("0d", lambda g: [("self", g.T([], "float64")), ("bins", 2)])],
    errors=[err("int64", lambda g: [("self", g.T([3], "int64")), ("bins", 4)], "RuntimeError",
                "\"histogram_cpu\" not implemented for 'Long'"),
            err("no_bins", lambda g: [("self", g.T([3], "float32")), ("bins", 0)], "RuntimeError",
                "torch.histogram(): bins must be > 0, but got 0 for dimension 0"),
            err("reversed", lambda g: [("self", g.T([3], "float32")), ("bins", 3), ("min", 3),
                                       ("max", 1)], "RuntimeError",
                "torch.histc: max must be larger than min"),
            err("infinite_data", lambda g: [("self", opgen.gc.TSpec("float32", [2], np.array(
                [1, np.inf], dtype=np.float32))), ("bins", 3)], "RuntimeError",
                "torch.histc: range of [1, inf] is not finite", tags=["data_dependent"])])


# ---- trace (kernels/src/composite_reduce.c) ----

fam.op("trace", [
    case("float32", lambda g: [("self", g.T([4, 4], "float32"))]),
    case("float64_wide_strided", lambda g: [("self", g.T([3, 5], "float64", view="any"))]),
    case("int32_to_int64", lambda g: [("self", g.T([4, 2], "int32"))]),
    case("int64", lambda g: [("self", g.T([3, 3], "int64"))]),
    case("empty", lambda g: [("self", g.T([0, 3], "float32"))])],
    errors=[err("one_dim", lambda g: [("self", g.T([3], "float32"))], "RuntimeError",
                "trace: expected a matrix, but got tensor with dim 1"),
            err("bool", lambda g: [("self", g.T([2, 2], "bool"))], "RuntimeError",
                "\"trace\" not implemented for 'Bool'")])

if __name__ == "__main__":
    fam.main()

#!/usr/bin/python3
"""gen_ops_index.py: conformance cases of the indexing family (indexing, joining, shapes,
sorting), recorded from PyTorch 1.13 into tests/fixtures/ops_index.json (opgen.py, format of
tests/fixtures/conformance/FORMAT.md):

    /usr/bin/python3 tools/conformance/gen_ops_index.py

Each operator gets float32 and the other dtypes it supports, strided and expanded inputs,
negative dims and indices, 0-d and empty tensors, duplicate indices where they combine, and
PyTorch's errors (out-of-range dims and indices among them).
"""
import numpy as np

import opgen
from opgen import S, ERR, TSpec, TensorList

fam = opgen.Family("index", seed=31)


def I(values, shape=None):
    """An int64 index tensor of the given values."""
    a = np.array(values, dtype=np.int64)
    return TSpec("int64", list(a.shape) if shape is None else shape, a.reshape(-1))


def I32(values):
    a = np.array(values, dtype=np.int32)
    return TSpec("int32", list(a.shape), a.reshape(-1))


def rand_index(g, shape, hi):
    return TSpec("int64", list(shape), g.rng.integers(0, hi, size=int(np.prod(shape))).astype(np.int64))


def case(name, fn, tags=()):
    return S(name, lambda g: (fn(g), list(tags)))


def err(name, fn, exc, msg):
    return ERR(name, lambda g: (fn(g), ["error"]), exc, msg)


# ---- views and shapes ----

fam.op("squeeze", [
    case("f32", lambda g: [("self", g.T([2, 1, 3, 1]))]),
    case("strided_i64", lambda g: [("self", g.T([1, 3, 1, 4], "int64", view="transpose"))], ["noncontig"]),
    case("0d", lambda g: [("self", g.T([]))], ["0d"]),
    case("all_ones_bool", lambda g: [("self", g.T([1, 1], "bool"))]),
    case("empty", lambda g: [("self", g.T([0, 1, 2]))], ["empty"]),
])

fam.op("diagonal", [
    case("f32", lambda g: [("self", g.T([3, 4]))]),
    case("offset_f64", lambda g: [("self", g.T([3, 4], "float64")), ("offset", 1)]),
    case("neg_offset_i64", lambda g: [("self", g.T([4, 3], "int64")), ("offset", -2)]),
    case("dims_3d", lambda g: [("self", g.T([2, 3, 4], view="any")), ("offset", 1), ("dim1", -1), ("dim2", 0)],
         ["noncontig", "negative_dim"]),
    case("offset_past_end", lambda g: [("self", g.T([2, 3])), ("offset", 5)], ["empty"]),
    case("bool", lambda g: [("self", g.T([3, 3], "bool"))]),
    err("same_dims", lambda g: [("self", g.T([3, 3])), ("dim1", 1), ("dim2", -1)],
        "RuntimeError", "diagonal dimensions cannot be identical"),
    err("dim_out_of_range", lambda g: [("self", g.T([3, 3])), ("dim2", 2)],
        "IndexError", "Dimension out of range"),
])

fam.op("unfold", [
    case("f32", lambda g: [("self", g.T([7])), ("dimension", 0), ("size", 3), ("step", 2)]),
    case("2d_i64", lambda g: [("self", g.T([3, 6], "int64", view="transpose")), ("dimension", -1), ("size", 2), ("step", 1)],
         ["noncontig", "negative_dim"]),
    case("0d", lambda g: [("self", g.T([])), ("dimension", 0), ("size", 1), ("step", 1)], ["0d"]),
    case("size0", lambda g: [("self", g.T([4])), ("dimension", 0), ("size", 0), ("step", 3)], ["empty"]),
    err("size_too_big", lambda g: [("self", g.T([3])), ("dimension", 0), ("size", 4), ("step", 1)],
        "RuntimeError", "maximum size for tensor at dimension 0 is 3 but size is 4"),
    err("step0", lambda g: [("self", g.T([3])), ("dimension", 0), ("size", 2), ("step", 0)],
        "RuntimeError", "step is 0 but must be > 0"),
])

fam.op("flatten.using_ints", [
    case("all_f32", lambda g: [("self", g.T([2, 3, 4]))]),
    case("middle_i64", lambda g: [("self", g.T([2, 3, 4, 2], "int64", view="any")), ("start_dim", 1), ("end_dim", -2)],
         ["noncontig", "negative_dim"]),
    case("same_dim", lambda g: [("self", g.T([2, 3])), ("start_dim", 1), ("end_dim", 1)]),
    case("0d", lambda g: [("self", g.T([]))], ["0d"]),
    case("empty", lambda g: [("self", g.T([0, 3, 2])), ("start_dim", 1)], ["empty"]),
    err("start_after_end", lambda g: [("self", g.T([2, 3])), ("start_dim", 1), ("end_dim", 0)],
        "RuntimeError", "start_dim cannot come after end_dim"),
])

fam.op("unflatten.int", [
    case("f32", lambda g: [("self", g.T([2, 6])), ("dim", 1), ("sizes", [2, 3])]),
    case("infer_i64", lambda g: [("self", g.T([6, 2], "int64", view="transpose")), ("dim", -2), ("sizes", [-1, 3])],
         ["noncontig", "negative_dim"]),
    err("bad_product", lambda g: [("self", g.T([2, 3])), ("dim", 1), ("sizes", [2, 2])],
        "RuntimeError", "don't multiply up to the size of dim 1 (3)"),
    err("empty_sizes", lambda g: [("self", g.T([2, 3])), ("dim", 1), ("sizes", [])],
        "RuntimeError", "unflatten: sizes must be non-empty"),
])

fam.op("movedim.int", [
    case("f32", lambda g: [("self", g.T([2, 3, 4])), ("source", 0), ("destination", -1)], ["negative_dim"]),
    case("strided_bool", lambda g: [("self", g.T([2, 3, 4], "bool", view="any")), ("source", 2), ("destination", 0)],
         ["noncontig"]),
    case("0d", lambda g: [("self", g.T([])), ("source", 0), ("destination", -1)], ["0d"]),
    err("dim_out_of_range", lambda g: [("self", g.T([2, 3])), ("source", 2), ("destination", 0)],
        "IndexError", "Dimension out of range"),
])

fam.op("movedim.intlist", [
    case("f32", lambda g: [("self", g.T([2, 3, 4, 5])), ("source", [0, 1]), ("destination", [3, 1])]),
    case("i64", lambda g: [("self", g.T([2, 3, 4], "int64")), ("source", [-1, 0]), ("destination", [0, 2])], ["negative_dim"]),
    err("repeated_source", lambda g: [("self", g.T([2, 3])), ("source", [0, 0]), ("destination", [1, 0])],
        "RuntimeError", "movedim: repeated dim in `source`"),
    err("repeated_destination", lambda g: [("self", g.T([2, 3])), ("source", [0, 1]), ("destination", [1, -1])],
        "RuntimeError", "movedim: repeated dim in `destination`"),
    err("lengths", lambda g: [("self", g.T([2, 3])), ("source", [0]), ("destination", [1, 0])],
        "RuntimeError", "movedim: Invalid source or destination dims"),
])

fam.op("narrow", [
    case("f32", lambda g: [("self", g.T([4, 5])), ("dim", 1), ("start", 1), ("length", 3)]),
    case("neg_start_i64", lambda g: [("self", g.T([4, 5], "int64", view="any")), ("dim", -2), ("start", -2), ("length", 2)],
         ["noncontig", "negative_dim"]),
    case("at_end", lambda g: [("self", g.T([2, 3])), ("dim", 1), ("start", 3), ("length", 0)], ["empty"]),
    err("too_long", lambda g: [("self", g.T([2, 3])), ("dim", 1), ("start", 2), ("length", 2)],
        "RuntimeError", "start (2) + length (2) exceeds dimension size (3)."),
    err("start_out_of_range", lambda g: [("self", g.T([2, 3])), ("dim", 1), ("start", 5), ("length", 0)],
        "IndexError", "Dimension out of range"),
    err("0d", lambda g: [("self", g.T([])), ("dim", 0), ("start", 0), ("length", 1)],
        "RuntimeError", "narrow() cannot be applied to a 0-dim tensor."),
])

fam.op("expand_as", [
    case("f32", lambda g: [("self", g.T([3, 1])), ("other", g.T([2, 3, 4]))]),
    case("i64_strided", lambda g: [("self", g.T([1, 4], "int64", view="slice")), ("other", g.T([3, 4]))], ["noncontig"]),
    err("mismatch", lambda g: [("self", g.T([3, 2])), ("other", g.T([3, 4]))],
        "RuntimeError", "must match the existing size (2) at non-singleton dimension 1"),
])

fam.op("view_as", [
    case("f32", lambda g: [("self", g.T([2, 6])), ("other", g.T([3, 4]))]),
    case("bool", lambda g: [("self", g.T([4], "bool")), ("other", g.T([2, 2], "int64"))]),
    err("not_viewable", lambda g: [("self", g.T([3, 4], view="transpose")), ("other", g.T([12]))],
        "RuntimeError", "view size is not compatible with input tensor's size and stride"),
])

fam.op("reshape_as", [
    case("f32_copy", lambda g: [("self", g.T([3, 4], view="transpose")), ("other", g.T([12]))], ["noncontig"]),
    case("i64_view", lambda g: [("self", g.T([2, 6], "int64")), ("other", g.T([4, 3]))]),
    err("numel", lambda g: [("self", g.T([2, 3])), ("other", g.T([4]))],
        "RuntimeError", "shape '[4]' is invalid for input of size 6"),
])

fam.op("swapaxes", [
    case("f32", lambda g: [("self", g.T([2, 3, 4])), ("axis0", 0), ("axis1", -1)], ["negative_dim"]),
    err("out_of_range", lambda g: [("self", g.T([2, 3])), ("axis0", 0), ("axis1", 2)],
        "IndexError", "Dimension out of range"),
])

fam.op("repeat", [
    case("f32", lambda g: [("self", g.T([2, 3])), ("repeats", [2, 2])]),
    case("new_dims_i64", lambda g: [("self", g.T([2, 3], "int64", view="any")), ("repeats", [2, 1, 3])], ["noncontig"]),
    case("expanded_bool", lambda g: [("self", g.T([3, 2], "bool", view="expand")), ("repeats", [1, 2])], ["noncontig"]),
    case("0d_f64", lambda g: [("self", g.T([], "float64")), ("repeats", [3])], ["0d"]),
    case("zero_repeat", lambda g: [("self", g.T([2, 3])), ("repeats", [0, 2])], ["empty"]),
    err("too_few", lambda g: [("self", g.T([2, 3])), ("repeats", [2])],
        "RuntimeError", "Number of dimensions of repeat dims can not be smaller than number of dimensions of tensor"),
    err("negative", lambda g: [("self", g.T([2, 3])), ("repeats", [2, -1])],
        "RuntimeError", "Trying to create tensor with negative dimension"),
])

fam.op("tile", [
    case("pad_f32", lambda g: [("self", g.T([2, 3])), ("dims", [2])]),
    case("more_i64", lambda g: [("self", g.T([3], "int64")), ("dims", [2, 2])]),
])

fam.op("rot90", [
    case("k1_f32", lambda g: [("self", g.T([2, 3]))]),
    case("k2_i64", lambda g: [("self", g.T([2, 3, 4], "int64", view="any")), ("k", 2), ("dims", [2, 0])], ["noncontig"]),
    case("k3_neg", lambda g: [("self", g.T([3, 4])), ("k", -1), ("dims", [-1, -2])], ["negative_dim"]),
    case("k0_bool", lambda g: [("self", g.T([2, 2], "bool")), ("k", 4)]),
    err("same_dims", lambda g: [("self", g.T([2, 3])), ("dims", [0, 0])],
        "RuntimeError", "expected rotation dims to be different"),
    err("1d", lambda g: [("self", g.T([3]))], "RuntimeError", "expected total dims >= 2"),
])

fam.op("diag_embed", [
    case("f32", lambda g: [("self", g.T([2, 3]))]),
    case("offset_dims_i64", lambda g: [("self", g.T([3, 2], "int64", view="transpose")), ("offset", -1), ("dim1", 0), ("dim2", 2)],
         ["noncontig"]),
    err("same_dims", lambda g: [("self", g.T([3])), ("dim1", 0), ("dim2", 0)],
        "RuntimeError", "diagonal dimensions cannot be identical"),
])

fam.op("diag", [
    case("vector_f32", lambda g: [("self", g.T([3]))]),
    case("vector_offset_i64", lambda g: [("self", g.T([2], "int64")), ("diagonal", -2)]),
    case("matrix_f64", lambda g: [("self", g.T([3, 4], "float64", view="transpose")), ("diagonal", 1)], ["noncontig"]),
    err("3d", lambda g: [("self", g.T([2, 2, 2]))], "RuntimeError", "matrix or a vector expected"),
])


def tl(g, shapes, dtypes=None, view=None):
    return TensorList([g.T(s, (dtypes[i] if dtypes else "float32"), view=view if i == 1 else None)
                       for i, s in enumerate(shapes)])


fam.op("stack", [
    case("f32", lambda g: [("tensors", tl(g, [[2, 3], [2, 3], [2, 3]]))]),
    case("last_dim_strided", lambda g: [("tensors", tl(g, [[2, 3], [2, 3]], view="transpose")), ("dim", -1)],
         ["noncontig", "negative_dim"]),
    case("promote", lambda g: [("tensors", tl(g, [[3], [3]], ["int64", "float64"])), ("dim", 1)], ["promotion"]),
    case("0d", lambda g: [("tensors", tl(g, [[], []]))], ["0d"]),
    case("empty", lambda g: [("tensors", tl(g, [[0, 2], [0, 2]])), ("dim", 1)], ["empty"]),
    err("sizes_differ", lambda g: [("tensors", tl(g, [[2, 3], [2, 2]]))],
        "RuntimeError", "stack expects each tensor to be equal size"),
    err("no_tensors", lambda g: [("tensors", TensorList([]))], "RuntimeError", "stack expects a non-empty TensorList"),
    err("dim_out_of_range", lambda g: [("tensors", tl(g, [[2], [2]])), ("dim", 3)], "IndexError", "Dimension out of range"),
])

fam.op("hstack", [
    case("1d_f32", lambda g: [("tensors", tl(g, [[2], [3], []]))], ["0d"]),
    case("2d_i64", lambda g: [("tensors", tl(g, [[2, 3], [2, 1]], ["int64", "int64"]))]),
    err("no_tensors", lambda g: [("tensors", TensorList([]))], "RuntimeError", "hstack expects a non-empty TensorList"),
])

fam.op("vstack", [
    case("1d_f32", lambda g: [("tensors", tl(g, [[3], [3]]))]),
    case("mixed", lambda g: [("tensors", tl(g, [[2, 3], [3]], ["float32", "int64"]))], ["promotion"]),
    err("no_tensors", lambda g: [("tensors", TensorList([]))], "RuntimeError", "vstack expects a non-empty TensorList"),
])

fam.op("select_scatter", [
    case("f32", lambda g: [("self", g.T([3, 4])), ("src", g.T([3])), ("dim", 1), ("index", -1)], ["negative_dim"]),
    case("strided_i64", lambda g: [("self", g.T([3, 4], "int64", view="transpose")), ("src", g.T([4], "int64")), ("dim", 0), ("index", 2)],
         ["noncontig"]),
    err("bad_src", lambda g: [("self", g.T([3, 4])), ("src", g.T([4])), ("dim", 1), ("index", 0)],
        "RuntimeError", "expected src to have a size equal to the slice of self"),
    err("index_out_of_range", lambda g: [("self", g.T([3, 4])), ("src", g.T([3])), ("dim", 1), ("index", 4)],
        "IndexError", "select(): index 4 out of range"),
])

fam.op("slice_scatter", [
    case("f32", lambda g: [("self", g.T([4, 5])), ("src", g.T([4, 2])), ("dim", 1), ("start", 1), ("end", 5), ("step", 2)]),
    case("default_i64", lambda g: [("self", g.T([3, 2], "int64")), ("src", g.T([3, 2], "int64", view="transpose"))], ["noncontig"]),
    err("bad_src", lambda g: [("self", g.T([4, 5])), ("src", g.T([4, 3])), ("dim", 1), ("start", 0), ("end", 2)],
        "RuntimeError", "expected src to have a size equal to the slice of self"),
])

fam.op("diagonal_scatter", [
    case("f32", lambda g: [("self", g.T([3, 4])), ("src", g.T([3])), ("offset", 1)]),
    case("bool", lambda g: [("self", g.T([3, 3], "bool")), ("src", g.T([2], "bool")), ("offset", -1)]),
    err("bad_src", lambda g: [("self", g.T([3, 4])), ("src", g.T([4]))],
        "RuntimeError", "expected src to have a size equal to the slice of self"),
])

fam.op("flip", [
    case("f32", lambda g: [("self", g.T([3, 4])), ("dims", [0])]),
    case("both_i64_strided", lambda g: [("self", g.T([3, 4, 2], "int64", view="any")), ("dims", [-1, 0])],
         ["noncontig", "negative_dim"]),
    case("expanded_bool", lambda g: [("self", g.T([3, 4], "bool", view="expand")), ("dims", [1])], ["noncontig"]),
    case("none_f64", lambda g: [("self", g.T([2, 3], "float64")), ("dims", [])]),
    case("0d", lambda g: [("self", g.T([])), ("dims", [0])], ["0d"]),
    case("empty", lambda g: [("self", g.T([0, 3])), ("dims", [1])], ["empty"]),
    err("repeated", lambda g: [("self", g.T([2, 3])), ("dims", [0, -2])],
        "RuntimeError", "dim 0 appears multiple times in the list of dims"),
    err("out_of_range", lambda g: [("self", g.T([2, 3])), ("dims", [2])], "IndexError", "Dimension out of range"),
])

fam.op("roll", [
    case("flat_f32", lambda g: [("self", g.T([3, 4])), ("shifts", [5])]),
    case("dim_i64", lambda g: [("self", g.T([3, 4], "int64", view="any")), ("shifts", [-1]), ("dims", [1])],
         ["noncontig"]),
    case("two_dims", lambda g: [("self", g.T([3, 4, 2])), ("shifts", [2, 7]), ("dims", [0, -2])], ["negative_dim"]),
    case("flat_strided_bool", lambda g: [("self", g.T([3, 4], "bool", view="transpose")), ("shifts", [-3])], ["noncontig"]),
    case("0d", lambda g: [("self", g.T([])), ("shifts", [1])], ["0d"]),
    case("empty", lambda g: [("self", g.T([0, 3])), ("shifts", [1]), ("dims", [0])], ["empty"]),
    err("misaligned", lambda g: [("self", g.T([2, 3])), ("shifts", [1, 2]), ("dims", [0])],
        "RuntimeError", "shifts and dimensions must align"),
    err("no_shifts", lambda g: [("self", g.T([2, 3])), ("shifts", []), ("dims", [])], "RuntimeError", "`shifts` required"),
    err("out_of_range", lambda g: [("self", g.T([2, 3])), ("shifts", [1]), ("dims", [5])], "IndexError", "Dimension out of range"),
])

for name in ("tril", "triu"):
    fam.op(name, [
        case("f32", lambda g: [("self", g.T([4, 5]))]),
        case("diag_i64_strided", lambda g: [("self", g.T([4, 5], "int64", view="any")), ("diagonal", 1)], ["noncontig"]),
        case("neg_diag_batched", lambda g: [("self", g.T([2, 3, 4], "float64")), ("diagonal", -2)]),
        case("bool", lambda g: [("self", g.T([3, 3], "bool"))]),
        case("huge_diag", lambda g: [("self", g.T([3, 3])), ("diagonal", -100)]),
        case("empty", lambda g: [("self", g.T([0, 3]))], ["empty"]),
        err("1d", lambda g: [("self", g.T([3]))], "IndexError", "Dimension out of range"),
    ])

# ---- gather, scatter ----

fam.op("gather", [
    case("f32", lambda g: [("self", g.T([3, 4])), ("dim", 1), ("index", rand_index(g, [3, 6], 4))]),
    case("dim0_strided_i64", lambda g: [("self", g.T([4, 3], "int64", view="transpose")), ("dim", -2), ("index", rand_index(g, [2, 3], 4))],
         ["noncontig", "negative_dim"]),
    case("smaller_index_bool", lambda g: [("self", g.T([3, 4], "bool")), ("dim", 0), ("index", rand_index(g, [2, 2], 3))]),
    case("expanded_index_f64", lambda g: [("self", g.T([3, 4], "float64")), ("dim", 1),
                                          ("index", TSpec("int64", [3, 1], np.array([3, 0, 1]), [["expand", [3, 5]]]))], ["noncontig"]),
    case("0d", lambda g: [("self", g.T([])), ("dim", 0), ("index", I(0))], ["0d"]),
    case("empty_index", lambda g: [("self", g.T([3, 4])), ("dim", 1), ("index", I([], [3, 0]))], ["empty"]),
    err("index_out_of_range", lambda g: [("self", g.T([2, 3])), ("dim", 1), ("index", I([[0, 3]]))],
        "RuntimeError", "index 3 is out of bounds for dimension 1 with size 3"),
    err("negative_index", lambda g: [("self", g.T([2, 3])), ("dim", 1), ("index", I([[0, -1]]))],
        "RuntimeError", "index -1 is out of bounds for dimension 1 with size 3"),
    err("int32_index", lambda g: [("self", g.T([2, 3])), ("dim", 1), ("index", I32([[0, 1]]))],
        "RuntimeError", "gather(): Expected dtype int64 for index"),
    err("ndim", lambda g: [("self", g.T([2, 3])), ("dim", 1), ("index", I([0, 1]))],
        "RuntimeError", "Index tensor must have the same number of dimensions as input tensor"),
    err("too_big", lambda g: [("self", g.T([2, 3])), ("dim", 1), ("index", I([[0], [0], [0]]))],
        "RuntimeError", "Size does not match at dimension 0"),
    err("dim_out_of_range", lambda g: [("self", g.T([2, 3])), ("dim", 2), ("index", I([[0]]))],
        "IndexError", "Dimension out of range"),
])

# indices without duplicates along dim (scatter without reduction leaves duplicates' order to
# the implementation)
def perm_index(g, rows, n, k):
    return TSpec("int64", [rows, k], np.concatenate([g.rng.permutation(n)[:k] for _ in range(rows)]).astype(np.int64))


fam.op("scatter.src", [
    case("f32", lambda g: [("self", g.T([3, 5])), ("dim", 1), ("index", perm_index(g, 2, 5, 3)), ("src", g.T([2, 4]))]),
    case("strided_i64", lambda g: [("self", g.T([3, 5], "int64", view="transpose")), ("dim", -1), ("index", perm_index(g, 3, 3, 2)),
                                   ("src", g.T([3, 2], "int64", view="transpose"))], ["noncontig", "negative_dim"]),
    case("dim0_bool", lambda g: [("self", g.T([4, 2], "bool")), ("dim", 0), ("index", I([[3, 0], [1, 2]])), ("src", g.T([2, 2], "bool"))]),
    case("empty_index", lambda g: [("self", g.T([2, 3])), ("dim", 0), ("index", I([], [0, 3])), ("src", g.T([2, 3]))], ["empty"]),
    err("index_out_of_range", lambda g: [("self", g.T([2, 3])), ("dim", 1), ("index", I([[5]])), ("src", g.T([2, 3]))],
        "RuntimeError", "index 5 is out of bounds for dimension 1 with size 3"),
    err("dtype", lambda g: [("self", g.T([2, 3])), ("dim", 1), ("index", I([[0]])), ("src", g.T([2, 3], "float64"))],
        "RuntimeError", "scatter(): Expected self.dtype to be equal to src.dtype"),
    err("src_too_small", lambda g: [("self", g.T([2, 3])), ("dim", 1), ("index", I([[0, 1]])), ("src", g.T([1, 1]))],
        "RuntimeError", "to be smaller size than src"),
])

fam.op("scatter.value", [
    case("f32", lambda g: [("self", g.T([3, 5])), ("dim", 1), ("index", rand_index(g, [2, 3], 5)), ("value", 2.5)]),
    case("i64_float_value", lambda g: [("self", g.T([3, 4], "int64")), ("dim", 0), ("index", rand_index(g, [2, 4], 3)), ("value", -3.7)]),
    case("bool", lambda g: [("self", g.T([3], "bool")), ("dim", 0), ("index", I([2, 2])), ("value", True)]),
    err("index_too_big", lambda g: [("self", g.T([2, 3])), ("dim", 1), ("index", I([[0], [0], [0]])), ("value", 1)],
        "RuntimeError", "to be smaller than self [2, 3] apart from dimension 1"),
])

fam.op("scatter.reduce", [
    case("add_dups_f32", lambda g: [("self", g.T([3, 4])), ("dim", 1), ("index", rand_index(g, [3, 6], 4)), ("src", g.T([3, 6])), ("reduce", "add")]),
    case("multiply_i64", lambda g: [("self", g.T([3, 4], "int64")), ("dim", 0), ("index", rand_index(g, [4, 4], 3)), ("src", g.T([4, 4], "int64")),
                                    ("reduce", "multiply")]),
    err("bad_reduce", lambda g: [("self", g.T([2, 3])), ("dim", 1), ("index", I([[0]])), ("src", g.T([2, 3])), ("reduce", "mean")],
        "RuntimeError", "reduce argument must be either add or multiply."),
])

fam.op("scatter.value_reduce", [
    case("add_f64", lambda g: [("self", g.T([3, 4], "float64")), ("dim", 1), ("index", rand_index(g, [3, 6], 4)), ("value", 1.5), ("reduce", "add")]),
    case("multiply_i64", lambda g: [("self", g.T([3, 4], "int64")), ("dim", 0), ("index", rand_index(g, [4, 4], 3)), ("value", 2), ("reduce", "multiply")]),
])

fam.op("scatter_.src", [
    case("f32", lambda g: [("self", g.T([3, 5])), ("dim", 1), ("index", perm_index(g, 3, 5, 2)), ("src", g.T([3, 2]))]),
])

fam.op("scatter_add", [
    case("dups_f32", lambda g: [("self", g.T([3, 4])), ("dim", 1), ("index", rand_index(g, [3, 8], 4)), ("src", g.T([3, 8]))], ["ties"]),
    case("dim0_f64_strided", lambda g: [("self", g.T([4, 3], "float64", view="transpose")), ("dim", 0), ("index", rand_index(g, [6, 3], 4)),
                                        ("src", g.T([6, 3], "float64", view="any"))], ["noncontig"]),
    case("i64", lambda g: [("self", g.T([5], "int64")), ("dim", -1), ("index", I([0, 4, 0, 0, 2])), ("src", g.T([5], "int64"))], ["negative_dim"]),
    case("bool", lambda g: [("self", g.T([4], "bool")), ("dim", 0), ("index", I([1, 1, 3])), ("src", g.T([3], "bool"))]),
    case("0d", lambda g: [("self", g.T([])), ("dim", 0), ("index", I(0)), ("src", g.T([]))], ["0d"]),
    err("index_out_of_range", lambda g: [("self", g.T([2, 3])), ("dim", 0), ("index", I([[2]])), ("src", g.T([2, 3]))],
        "RuntimeError", "index 2 is out of bounds for dimension 0 with size 2"),
    err("int32_index", lambda g: [("self", g.T([2, 3])), ("dim", 1), ("index", I32([[0]])), ("src", g.T([2, 3]))],
        "RuntimeError", "scatter(): Expected dtype int64 for index"),
])

fam.op("scatter_add_", [
    case("dups_f32", lambda g: [("self", g.T([3, 4])), ("dim", 1), ("index", rand_index(g, [3, 8], 4)), ("src", g.T([3, 8]))]),
])

scatter_reduce_cases = []
for red in ("sum", "prod", "mean", "amax", "amin"):
    for inc in (True, False):
        scatter_reduce_cases.append(case(
            "%s_%s_f32" % (red, "incl" if inc else "excl"),
            (lambda red, inc: lambda g: [("self", g.T([3, 4], kind="int")), ("dim", 1), ("index", rand_index(g, [3, 6], 4)),
                                         ("src", g.T([3, 6], kind="int")), ("reduce", red), ("include_self", inc)])(red, inc)))
    scatter_reduce_cases.append(case(
        "%s_i64" % red,
        (lambda red: lambda g: [("self", g.T([4], "int64")), ("dim", 0), ("index", I([0, 0, 2, 0, 2])),
                                ("src", g.T([5], "int64")), ("reduce", red), ("include_self", False)])(red)))
scatter_reduce_cases += [
    case("amax_nan_f64", lambda g: [("self", g.T([3], "float64", kind="special")), ("dim", 0), ("index", I([0, 1, 1, 2])),
                                    ("src", g.T([4], "float64", kind="special")), ("reduce", "amax")], ["special_values"]),
    case("sum_bool", lambda g: [("self", g.T([3], "bool")), ("dim", 0), ("index", I([0, 1, 1])), ("src", g.T([3], "bool")), ("reduce", "sum")]),
    err("bad_reduce", lambda g: [("self", g.T([2, 3])), ("dim", 1), ("index", I([[0]])), ("src", g.T([2, 3])), ("reduce", "max")],
        "RuntimeError", "reduce argument must be either sum, prod, mean, amax or amin"),
]
fam.op("scatter_reduce.two", scatter_reduce_cases, tol=(1e-5, 1e-5))

# ---- index_add, index_copy, index_fill ----

fam.op("index_add", [
    case("dups_f32", lambda g: [("self", g.T([5, 3])), ("dim", 0), ("index", I([0, 4, 0, 2])), ("source", g.T([4, 3]))], ["ties"]),
    case("alpha_i64_strided", lambda g: [("self", g.T([3, 5], "int64", view="transpose")), ("dim", -1), ("index", I([1, 1])),
                                         ("source", g.T([3, 2], "int64", view="transpose")), ("alpha", 3)], ["noncontig", "negative_dim"]),
    case("int32_index_f64", lambda g: [("self", g.T([4], "float64")), ("dim", 0), ("index", I32([3, 1])), ("source", g.T([2], "float64")),
                                       ("alpha", 0.5)]),
    case("0d", lambda g: [("self", g.T([])), ("dim", 0), ("index", I([0])), ("source", g.T([]))], ["0d"]),
    err("index_out_of_range", lambda g: [("self", g.T([2, 3])), ("dim", 1), ("index", I([0, 3])), ("source", g.T([2, 2]))],
        "IndexError", "index out of range in self"),
    err("negative_index", lambda g: [("self", g.T([2, 3])), ("dim", 1), ("index", I([0, -1])), ("source", g.T([2, 2]))],
        "IndexError", "index out of range in self"),
    err("count", lambda g: [("self", g.T([2, 3])), ("dim", 1), ("index", I([0, 1])), ("source", g.T([2, 3]))],
        "RuntimeError", "index_add_(): Number of indices (2) should be equal to source.size(dim)"),
    err("dtype", lambda g: [("self", g.T([2, 3])), ("dim", 1), ("index", I([0, 1])), ("source", g.T([2, 2], "float64"))],
        "RuntimeError", "must have the same scalar type"),
    err("matrix_index", lambda g: [("self", g.T([2, 3])), ("dim", 1), ("index", I([[0, 1]])), ("source", g.T([2, 2]))],
        "IndexError", "index_add_(): Index is supposed to be a vector"),
])

fam.op("index_copy", [
    case("f32", lambda g: [("self", g.T([5, 3])), ("dim", 0), ("index", I([4, 0, 2])), ("source", g.T([3, 3]))]),
    case("strided_bool", lambda g: [("self", g.T([3, 4], "bool", view="transpose")), ("dim", 1), ("index", I([2])),
                                    ("source", g.T([3, 1], "bool"))], ["noncontig"]),
    err("index_out_of_range", lambda g: [("self", g.T([2, 3])), ("dim", 1), ("index", I([0, 3])), ("source", g.T([2, 2]))],
        "IndexError", "index_copy_(): index 3 is out of bounds for dimension 1 with size 3"),
    err("int32_index", lambda g: [("self", g.T([2, 3])), ("dim", 1), ("index", I32([0])), ("source", g.T([2, 1]))],
        "RuntimeError", "index_copy_(): Expected a long tensor for index"),
    err("slice_shapes", lambda g: [("self", g.T([2, 3])), ("dim", 1), ("index", I([0, 1])), ("source", g.T([3, 2]))],
        "RuntimeError", "index_copy_(): Source/destination tensor must have same slice shapes"),
])

fam.op("index_add_", [
    case("dups_f32", lambda g: [("self", g.T([5, 3])), ("dim", 0), ("index", I([0, 4, 0])), ("source", g.T([3, 3])), ("alpha", 2)], ["ties"]),
])

fam.op("index_copy_", [
    case("i64", lambda g: [("self", g.T([3, 4], "int64")), ("dim", 1), ("index", I([3, 0])), ("source", g.T([3, 2], "int64"))]),
])

fam.op("index_fill_.int_Scalar", [
    case("f32", lambda g: [("self", g.T([3, 4])), ("dim", 1), ("index", I([0, -1])), ("value", -2.5)], ["negative_dim"]),
])

fam.op("index_fill.int_Scalar", [
    case("f32", lambda g: [("self", g.T([3, 4])), ("dim", 1), ("index", I([0, -1, 0])), ("value", -2.5)]),
    case("i64_strided", lambda g: [("self", g.T([3, 4], "int64", view="any")), ("dim", -2), ("index", I(2)), ("value", 7)],
         ["noncontig", "negative_dim", "0d"]),
    case("bool", lambda g: [("self", g.T([4], "bool")), ("dim", 0), ("index", I([1, 3])), ("value", True)]),
    err("index_out_of_range", lambda g: [("self", g.T([2, 3])), ("dim", 1), ("index", I([0, -4])), ("value", 1)],
        "IndexError", "index -4 is out of bounds for dimension 1 with size 3"),
    err("int32_index", lambda g: [("self", g.T([2, 3])), ("dim", 1), ("index", I32([0])), ("value", 1)],
        "IndexError", "index_fill_(): Expected dtype int64 for index."),
])

fam.op("index_fill.int_Tensor", [
    case("f32", lambda g: [("self", g.T([3, 4])), ("dim", 0), ("index", I([2])), ("value", g.T([], "float64"))], ["0d"]),
    err("value_1d", lambda g: [("self", g.T([2, 3])), ("dim", 1), ("index", I([0])), ("value", g.T([1]))],
        "RuntimeError", "index_fill_ only supports a 0-dimensional value tensor"),
])

# ---- masks, nonzero, take, put, where with Scalars ----

fam.op("masked_fill.Tensor", [
    case("f32", lambda g: [("self", g.T([3, 4])), ("mask", g.T([3, 4], "bool")), ("value", g.T([]))], ["0d"]),
    case("broadcast_i64_float_value", lambda g: [("self", g.T([4], "int64", view="slice")), ("mask", g.T([3, 1], "bool")),
                                                 ("value", g.T([], "float64"))], ["broadcast", "noncontig"]),
    case("bool", lambda g: [("self", g.T([2, 3], "bool")), ("mask", g.T([3], "bool")), ("value", g.T([], "bool"))], ["broadcast"]),
    err("value_1d", lambda g: [("self", g.T([2, 3])), ("mask", g.T([2, 3], "bool")), ("value", g.T([1]))],
        "RuntimeError", "masked_fill_ only supports a 0-dimensional value tensor"),
])

fam.op("masked_fill_.Tensor", [
    case("f32", lambda g: [("self", g.T([3, 4])), ("mask", g.T([4], "bool")), ("value", g.T([]))], ["broadcast"]),
    err("mask_bigger", lambda g: [("self", g.T([3])), ("mask", g.T([2, 3], "bool")), ("value", g.T([]))],
        "RuntimeError", "doesn't match the broadcast shape"),
])

fam.op("masked_scatter", [
    case("f32", lambda g: [("self", g.T([3, 4])), ("mask", g.T([3, 4], "bool")), ("source", g.T([12]))]),
    case("broadcast_i64_strided", lambda g: [("self", g.T([4], "int64")), ("mask", g.T([2, 4], "bool")),
                                             ("source", g.T([3, 4], "int64", view="transpose"))], ["broadcast", "noncontig"]),
    err("source_small", lambda g: [("self", g.T([2, 3])), ("mask", TSpec("bool", [2, 3], np.ones(6, bool))), ("source", g.T([5]))],
        "RuntimeError", "Number of elements of source < number of ones in mask"),
    err("dtype", lambda g: [("self", g.T([2, 3])), ("mask", g.T([2, 3], "bool")), ("source", g.T([6], "float64"))],
        "RuntimeError", "masked_scatter: expected self and source to have same dtypes"),
])

fam.op("masked_select", [
    case("f32", lambda g: [("self", g.T([3, 4])), ("mask", g.T([3, 4], "bool"))], ["data_dependent"]),
    case("broadcast_i64_strided", lambda g: [("self", g.T([4], "int64", view="slice")), ("mask", g.T([3, 1], "bool"))],
         ["broadcast", "noncontig", "data_dependent"]),
    case("self_broadcast", lambda g: [("self", g.T([2, 3], view="transpose")), ("mask", g.T([4, 2, 3], "bool"))], ["broadcast", "data_dependent"]),
    case("none", lambda g: [("self", g.T([3], "float64")), ("mask", TSpec("bool", [3], np.zeros(3, bool)))], ["empty", "data_dependent"]),
    case("0d", lambda g: [("self", g.T([])), ("mask", TSpec("bool", [], np.ones(1, bool)))], ["0d", "data_dependent"]),
    err("int_mask", lambda g: [("self", g.T([3])), ("mask", g.T([3], "int64"))],
        "RuntimeError", "masked_select: expected BoolTensor or ByteTensor for mask"),
    err("shapes", lambda g: [("self", g.T([2, 3])), ("mask", g.T([2, 2], "bool"))],
        "RuntimeError", "must match the size of tensor b"),
])

fam.op("nonzero", [
    case("f32_special", lambda g: [("self", g.T([3, 4], kind="special"))], ["special_values", "data_dependent"]),
    case("i64_strided", lambda g: [("self", g.T([3, 4, 2], "int64", kind="small", view="any"))], ["noncontig", "data_dependent"]),
    case("bool", lambda g: [("self", g.T([5], "bool"))], ["data_dependent"]),
    case("0d", lambda g: [("self", g.T([]))], ["0d", "data_dependent"]),
    case("0d_zero", lambda g: [("self", TSpec("int64", [], np.zeros(1, np.int64)))], ["0d", "data_dependent"]),
    case("empty", lambda g: [("self", g.T([0, 3]))], ["empty", "data_dependent"]),
])

fam.op("argwhere", [
    case("i64", lambda g: [("self", g.T([3, 4], "int64", kind="small"))], ["data_dependent"]),
])

fam.op("take", [
    case("f32", lambda g: [("self", g.T([3, 4])), ("index", I([[0, 11], [-1, -12]]))]),
    case("strided_i64", lambda g: [("self", g.T([3, 4], "int64", view="transpose")), ("index", rand_index(g, [5], 12))], ["noncontig"]),
    case("0d", lambda g: [("self", g.T([], "bool")), ("index", I([0, -1, 0]))], ["0d"]),
    case("empty", lambda g: [("self", g.T([0])), ("index", I([], [0]))], ["empty"]),
    err("out_of_range", lambda g: [("self", g.T([2, 3])), ("index", I([6]))],
        "IndexError", "out of range: tried to access index 6 on a tensor of 6 elements."),
    err("negative_out_of_range", lambda g: [("self", g.T([2, 3])), ("index", I([-7]))],
        "IndexError", "out of range: tried to access index -7 on a tensor of 6 elements."),
    err("int32_index", lambda g: [("self", g.T([2, 3])), ("index", I32([0]))],
        "RuntimeError", "take(): Expected a long tensor for index, but got Int"),
    err("from_empty", lambda g: [("self", g.T([0])), ("index", I([0]))],
        "IndexError", "take(): tried to take from an empty tensor"),
])

fam.op("put", [
    case("f32", lambda g: [("self", g.T([3, 4])), ("index", I([[0, 11], [-1, 5]])), ("source", g.T([4]))]),
    case("accumulate_dups_f64", lambda g: [("self", g.T([2, 3], "float64", view="transpose")), ("index", I([0, 5, 0, -6])),
                                           ("source", g.T([2, 2], "float64")), ("accumulate", True)], ["noncontig"]),
    case("accumulate_i64", lambda g: [("self", g.T([4], "int64")), ("index", I([1, 1, 3])), ("source", g.T([3], "int64")), ("accumulate", True)]),
    err("out_of_range", lambda g: [("self", g.T([2, 3])), ("index", I([6])), ("source", g.T([1]))],
        "IndexError", "out of range: tried to access index 6 on a tensor of 6 elements."),
    err("counts", lambda g: [("self", g.T([2, 3])), ("index", I([0, 1])), ("source", g.T([3]))],
        "IndexError", "put_(): Expected source and index to have the same number of elements"),
    err("dtype", lambda g: [("self", g.T([2, 3])), ("index", I([0])), ("source", g.T([1], "float64"))],
        "RuntimeError", "put_(): self and source expected to have the same dtype"),
])

fam.op("put_", [
    case("f32", lambda g: [("self", g.T([3, 4])), ("index", I([2, 3])), ("source", g.T([2]))]),
])

fam.op("where.ScalarOther", [
    case("f32", lambda g: [("condition", g.T([3, 4], "bool")), ("self", g.T([3, 4])), ("other", 2.5)]),
    case("i64_float", lambda g: [("condition", g.T([3, 1], "bool")), ("self", g.T([4], "int64")), ("other", 2.5)], ["promotion", "broadcast"]),
    case("i32_int", lambda g: [("condition", g.T([4], "bool")), ("self", g.T([4], "int32", view="slice")), ("other", -3)], ["noncontig"]),
    case("0d_self", lambda g: [("condition", g.T([4], "bool")), ("self", g.T([], "int64")), ("other", True)], ["0d"]),
    err("int_condition", lambda g: [("condition", g.T([4], "int64")), ("self", g.T([4])), ("other", 1.0)],
        "RuntimeError", "where expected condition to be a boolean tensor"),
])

fam.op("where.ScalarSelf", [
    case("f64", lambda g: [("condition", g.T([3, 4], "bool")), ("self", -1.5), ("other", g.T([3, 4], "float64"))]),
    case("bool_int", lambda g: [("condition", g.T([4], "bool")), ("self", 7), ("other", g.T([4], "bool"))], ["promotion"]),
])

fam.op("where.Scalar", [
    case("ints", lambda g: [("condition", g.T([3, 4], "bool")), ("self", 2), ("other", -3)]),
    case("float_int", lambda g: [("condition", g.T([4], "bool", view="slice")), ("self", 2.5), ("other", 1)], ["noncontig"]),
    case("bools", lambda g: [("condition", g.T([2], "bool")), ("self", True), ("other", False)]),
])

# ---- cumulative ----

for name in ("cumsum", "cumprod"):
    fam.op(name, [
        case("f32", lambda g: [("self", g.T([3, 5])), ("dim", 1)]),
        case("dim0_f64_strided", lambda g: [("self", g.T([4, 3], "float64", view="any")), ("dim", -2)], ["noncontig", "negative_dim"]),
        case("i64", lambda g: [("self", g.T([6], "int64")), ("dim", 0)]),
        case("i32_to_i64", lambda g: [("self", g.T([2, 3], "int32")), ("dim", 1)]),
        case("bool", lambda g: [("self", g.T([5], "bool")), ("dim", 0)]),
        case("dtype_arg", lambda g: [("self", g.T([2, 4], kind="halfint")), ("dim", 1), ("dtype", opgen.gc.DTYPES["int32"])], ["dtype_arg"]),
        case("to_f64", lambda g: [("self", g.T([2, 4])), ("dim", 1), ("dtype", opgen.gc.DTYPES["float64"])], ["dtype_arg"]),
        case("special", lambda g: [("self", g.T([2, 6], kind="special")), ("dim", 1)], ["special_values"]),
        case("0d", lambda g: [("self", g.T([])), ("dim", -1)], ["0d"]),
        case("empty", lambda g: [("self", g.T([0, 3])), ("dim", 0)], ["empty"]),
        err("dim_out_of_range", lambda g: [("self", g.T([2, 3])), ("dim", 2)], "IndexError", "Dimension out of range"),
    ], tol=(1e-5, 1e-5))

def FL(values):
    a = np.array(values, dtype=np.float32)
    return TSpec("float32", list(a.shape), a.reshape(-1))


for name in ("_logcumsumexp", "logcumsumexp"):
    fam.op(name, [
        case("f32", lambda g: [("self", g.T([3, 5])), ("dim", 1)]),
        case("dim0_f64_strided", lambda g: [("self", g.T([4, 3], "float64", view="any")), ("dim", -2)], ["noncontig", "negative_dim"]),
        case("wide_f64", lambda g: [("self", g.T([2, 40], "float64", kind="huge")), ("dim", 1)]),
        case("special", lambda g: [("self", g.T([3, 6], kind="special")), ("dim", 1)], ["special_values"]),
        case("infinities", lambda g: [("self", FL([[-np.inf, -np.inf, 1, np.inf, np.inf, 2], [np.inf, -np.inf, 0, np.nan, 1, 2]])),
                                      ("dim", 1)], ["special_values"]),
        case("0d", lambda g: [("self", g.T([])), ("dim", -1)], ["0d"]),
        case("empty", lambda g: [("self", g.T([0, 3])), ("dim", 0)], ["empty"]),
        err("i64", lambda g: [("self", g.T([6], "int64")), ("dim", 0)], "RuntimeError",
            "\"logcumsumexp_out_cpu\" not implemented for 'Long'"),
        err("dim_out_of_range", lambda g: [("self", g.T([2, 3])), ("dim", 2)], "IndexError", "Dimension out of range"),
    ])

for red in ("prod", "mean", "amax", "amin"):
    fam.op("index_reduce", [
        case(red + "_f32", lambda g, red=red: [("self", g.T([4, 3])), ("dim", 0), ("index", I([0, 2, 2, 3, 0])),
                                               ("source", g.T([5, 3])), ("reduce", red)]),
        case(red + "_exclude_self_f64_strided", lambda g, red=red: [
            ("self", g.T([3, 5], "float64", view="any")), ("dim", -1), ("index", I([4, 0, 4])),
            ("source", g.T([3, 3], "float64", view="any")), ("reduce", red), ("include_self", False)], ["noncontig"]),
        case(red + "_i64", lambda g, red=red: [("self", g.T([3, 2], "int64")), ("dim", 0), ("index", I32([1, 1, 0, 1])),
                                               ("source", g.T([4, 2], "int64")), ("reduce", red), ("include_self", red != "mean")]),
        case(red + "_special", lambda g, red=red: [("self", g.T([2, 6], kind="special")), ("dim", 1), ("index", I([5, 0, 5])),
                                                   ("source", g.T([2, 3], kind="special")), ("reduce", red)], ["special_values"]),
    ])
fam.op("index_reduce", [
    case("0d", lambda g: [("self", g.T([])), ("dim", 0), ("index", I([0])), ("source", g.T([])), ("reduce", "prod")], ["0d"]),
    case("empty_index", lambda g: [("self", g.T([2, 3])), ("dim", 1), ("index", I([], [0])), ("source", g.T([2, 0])),
                                   ("reduce", "amax")], ["empty"]),
    err("bad_reduce", lambda g: [("self", g.T([4, 3])), ("dim", 0), ("index", I([0])), ("source", g.T([1, 3])), ("reduce", "sum")],
        "RuntimeError", "index_reduce(): Expected reduce to be one of prod, mean, amax or amin but got sum."),
    err("float_index", lambda g: [("self", g.T([4, 3])), ("dim", 0), ("index", F([0])), ("source", g.T([1, 3])), ("reduce", "prod")],
        "RuntimeError", "index_reduce_(): Expected dtype int32/int64 for index but got: Float"),
    err("dtypes_differ", lambda g: [("self", g.T([4, 3])), ("dim", 0), ("index", I([0])), ("source", g.T([1, 3], "float64")),
                                    ("reduce", "prod")],
        "RuntimeError", "index_reduce_(): self (Float) and source (Double) must have the same scalar type"),
    err("count", lambda g: [("self", g.T([4, 3])), ("dim", 0), ("index", I([0, 1])), ("source", g.T([3, 3])), ("reduce", "prod")],
        "RuntimeError", "index_reduce_(): Number of indices (2) should be equal to source.size(dim): (3), for dim: 0"),
    err("index_2d", lambda g: [("self", g.T([4, 3])), ("dim", 0), ("index", I([[0, 1]])), ("source", g.T([2, 3])), ("reduce", "prod")],
        "IndexError", "index_reduce_(): Index is supposed to be a vector, but got dim: 2 with type: Long and size: [1, 2]"),
    err("out_of_range", lambda g: [("self", g.T([4, 3])), ("dim", 0), ("index", I([0, 4])), ("source", g.T([2, 3])), ("reduce", "prod")],
        "IndexError", "index out of range in self"),
    err("negative", lambda g: [("self", g.T([4, 3])), ("dim", 0), ("index", I([-1])), ("source", g.T([1, 3])), ("reduce", "amin")],
        "IndexError", "index out of range in self"),
    err("slice_shapes", lambda g: [("self", g.T([4, 3])), ("dim", 0), ("index", I([0, 1])), ("source", g.T([2, 4])), ("reduce", "prod")],
        "RuntimeError", "The size of tensor a (3) must match the size of tensor b (4) at non-singleton dimension 0"),
    err("dim_out_of_range", lambda g: [("self", g.T([4, 3])), ("dim", 2), ("index", I([0])), ("source", g.T([1, 3])), ("reduce", "prod")],
        "IndexError", "Dimension out of range"),
])

# ---- advanced indexing ----

OT = opgen.OptTensors


def B(values):
    a = np.array(values, dtype=bool)
    return TSpec("bool", list(a.shape), a.reshape(-1))


fam.op("index.Tensor", [
    case("one_f32", lambda g: [("self", g.T([4, 3])), ("indices", OT([I([3, 0, 3, -1])]))]),
    case("two_adjacent_i64", lambda g: [("self", g.T([2, 3, 4], "int64")), ("indices", OT([None, I([[0], [2]]), I([1, 3, -4])]))],
         ["broadcast"]),
    case("split_f64", lambda g: [("self", g.T([2, 3, 4], "float64", view="any")), ("indices", OT([I([1, 0]), None, I([3, 2])]))],
         ["noncontig"]),
    case("mask_bool", lambda g: [("self", g.T([3, 4], "bool")), ("indices", OT([B([True, False, True])]))], ["data_dependent"]),
    case("mask_2d", lambda g: [("self", g.T([3, 4, 2])), ("indices", OT([g.T([3, 4], "bool")]))], ["data_dependent"]),
    case("mask_after_none", lambda g: [("self", g.T([2, 3])), ("indices", OT([None, B([False, True, True])]))], ["data_dependent"]),
    case("expanded_index", lambda g: [("self", g.T([5])), ("indices", OT([TSpec("int64", [1], np.array([2]), [["expand", [4]]])]))],
         ["noncontig"]),
    case("0d_index", lambda g: [("self", g.T([3, 4])), ("indices", OT([I(1)]))], ["0d"]),
    case("empty_index", lambda g: [("self", g.T([3, 4])), ("indices", OT([I([], [0])]))], ["empty"]),
    err("out_of_range", lambda g: [("self", g.T([2, 3])), ("indices", OT([I([0, 2])]))],
        "IndexError", "index 2 is out of bounds for dimension 0 with size 2"),
    err("negative_out_of_range", lambda g: [("self", g.T([2, 3])), ("indices", OT([None, I([-4])]))],
        "IndexError", "index -4 is out of bounds for dimension 0 with size 3"),
    err("too_many", lambda g: [("self", g.T([2, 3])), ("indices", OT([I([0]), I([0]), I([0])]))],
        "IndexError", "too many indices for tensor of dimension 2 (got 3)"),
    err("float_index", lambda g: [("self", g.T([2, 3])), ("indices", OT([g.T([2])]))],
        "IndexError", "tensors used as indices must be long, byte or bool tensors"),
    err("int32_index", lambda g: [("self", g.T([2, 3])), ("indices", OT([I32([0])]))],
        "IndexError", "tensors used as indices must be long, byte or bool tensors"),
    err("broadcast", lambda g: [("self", g.T([2, 3])), ("indices", OT([I([0, 1]), I([0, 1, 2])]))],
        "IndexError", "shape mismatch: indexing tensors could not be broadcast together"),
    err("mask_shape", lambda g: [("self", g.T([2, 3])), ("indices", OT([B([True, False, True])]))],
        "IndexError", "The shape of the mask [3] at index 0 does not match the shape of the indexed tensor [2, 3] at index 0"),
])

fam.op("index_put", [
    case("f32", lambda g: [("self", g.T([4, 3])), ("indices", OT([I([3, 0])])), ("values", g.T([2, 3]))]),
    case("broadcast_value_i64", lambda g: [("self", g.T([2, 3, 4], "int64", view="any")), ("indices", OT([None, I([2, 0]), I([1, -1])])),
                                           ("values", g.T([1], "int64"))], ["noncontig", "broadcast"]),
    case("accumulate_dups_f64", lambda g: [("self", g.T([5], "float64")), ("indices", OT([I([1, 3, 1, 1, -1])])), ("values", g.T([5], "float64")),
                                           ("accumulate", True)], ["ties"]),
    case("accumulate_2d", lambda g: [("self", g.T([3, 4])), ("indices", OT([I([0, 0, 2]), I([1, 1, 3])])), ("values", g.T([3])),
                                     ("accumulate", True)]),
    case("mask_0d_value", lambda g: [("self", g.T([3, 4])), ("indices", OT([g.T([3, 4], "bool")])), ("values", g.T([]))], ["0d", "data_dependent"]),
    case("mask_bool", lambda g: [("self", g.T([4], "bool")), ("indices", OT([B([True, False, False, True])])), ("values", g.T([2], "bool"))], ["data_dependent"]),
    err("out_of_range", lambda g: [("self", g.T([2, 3])), ("indices", OT([I([0, 5])])), ("values", g.T([1]))],
        "IndexError", "index 5 is out of bounds for dimension 0 with size 2"),
    err("dtype", lambda g: [("self", g.T([2, 3])), ("indices", OT([I([0])])), ("values", g.T([3], "float64"))],
        "RuntimeError", "Index put requires the source and destination dtypes match"),
    err("value_shape", lambda g: [("self", g.T([2, 3])), ("indices", OT([I([0, 1])])), ("values", g.T([2]))],
        "RuntimeError", "shape mismatch: value tensor of shape [2] cannot be broadcast to indexing result of shape [2, 3]"),
])

fam.op("index_put_", [
    case("accumulate_f32", lambda g: [("self", g.T([4, 3])), ("indices", OT([I([3, 3])])), ("values", g.T([3])), ("accumulate", True)]),
])

fam.op("_index_put_impl_", [
    case("f32", lambda g: [("self", g.T([4, 3])), ("indices", OT([None, I([2])])), ("values", g.T([4, 1]))]),
])

# ---- splitting into views (Tensor[] results) ----

fam.op("split_with_sizes", [
    case("f32", lambda g: [("self", g.T([6, 2])), ("split_sizes", [1, 3, 2])]),
    case("dim_strided_i64", lambda g: [("self", g.T([2, 5], "int64", view="transpose")), ("split_sizes", [0, 5]), ("dim", -1)],
         ["noncontig", "negative_dim", "empty"]),
    err("sum", lambda g: [("self", g.T([6])), ("split_sizes", [2, 2])],
        "RuntimeError", "split_with_sizes expects split_sizes to sum exactly to 6"),
    err("negative", lambda g: [("self", g.T([6])), ("split_sizes", [7, -1])],
        "RuntimeError", "split_with_sizes expects split_sizes have only non-negative entries"),
    err("0d", lambda g: [("self", g.T([])), ("split_sizes", [1])], "RuntimeError", "split expects at least a 1-dimensional tensor"),
])

fam.op("unsafe_split_with_sizes", [
    case("f32", lambda g: [("self", g.T([3, 4])), ("split_sizes", [1, 3]), ("dim", 1)]),
])

fam.op("unsafe_split.Tensor", [
    case("f32", lambda g: [("self", g.T([7, 2])), ("split_size", 3)]),
])

fam.op("split.Tensor", [
    case("bool_strided", lambda g: [("self", g.T([3, 5], "bool", view="any")), ("split_size", 2), ("dim", 1)], ["noncontig"]),
])

fam.op("chunk", [
    case("f32", lambda g: [("self", g.T([7, 2])), ("chunks", 3)]),
    case("more_chunks_than_size", lambda g: [("self", g.T([2, 3], "int64")), ("chunks", 5), ("dim", -1)], ["negative_dim"]),
    case("empty", lambda g: [("self", g.T([0, 3])), ("chunks", 2)], ["empty"]),
    err("zero_chunks", lambda g: [("self", g.T([3])), ("chunks", 0)], "RuntimeError", "chunk expects `chunks` to be greater than 0"),
    err("0d", lambda g: [("self", g.T([])), ("chunks", 1)], "RuntimeError", "chunk expects at least a 1-dimensional tensor"),
])

fam.op("tensor_split.sections", [
    case("f32", lambda g: [("self", g.T([7, 2])), ("sections", 3)]),
    case("more_sections_f64", lambda g: [("self", g.T([2, 3], "float64", view="transpose")), ("sections", 4), ("dim", 1)], ["noncontig"]),
    err("zero", lambda g: [("self", g.T([3])), ("sections", 0)], "RuntimeError", "number of sections must be larger than 0, got 0"),
])

fam.op("tensor_split.indices", [
    case("f32", lambda g: [("self", g.T([7, 2])), ("indices", [1, 4])]),
    case("unordered_negative_i64", lambda g: [("self", g.T([2, 6], "int64")), ("indices", [4, 2, -1, 9]), ("dim", 1)]),
    err("0d", lambda g: [("self", g.T([])), ("indices", [1])], "RuntimeError", "tensor_split expected at least a 1-dimensional tensor"),
])

fam.op("unbind.int", [
    case("f32", lambda g: [("self", g.T([3, 2]))]),
    case("dim_strided_bool", lambda g: [("self", g.T([2, 3, 2], "bool", view="any")), ("dim", -2)], ["noncontig", "negative_dim"]),
])

# ---- sorting (ties: indices only where PyTorch specifies them) ----

fam.op("sort.stable", [
    case("f32", lambda g: [("self", g.T([3, 5])), ("stable", True)]),
    case("ties_desc_i64", lambda g: [("self", g.T([4, 6], "int64", kind="small")), ("stable", True), ("dim", 0), ("descending", True)],
         ["ties"]),
    case("ties_i64_strided", lambda g: [("self", g.T([3, 6], "int64", kind="small", view="any")), ("stable", True)], ["ties", "noncontig"]),
    case("nan_desc_f64", lambda g: [("self", g.T([8], "float64", kind="special")), ("stable", True), ("descending", True)],
         ["special_values"]),
    case("nan_f32", lambda g: [("self", g.T([2, 8], kind="special")), ("stable", True), ("dim", -1)], ["special_values"]),
    case("bool", lambda g: [("self", g.T([7], "bool")), ("stable", True)]),
    case("0d", lambda g: [("self", g.T([])), ("stable", True)], ["0d"]),
    case("empty", lambda g: [("self", g.T([0, 3])), ("stable", True), ("dim", 0)], ["empty"]),
    err("dim_out_of_range", lambda g: [("self", g.T([2, 3])), ("stable", True), ("dim", 2)], "IndexError", "Dimension out of range"),
])

fam.op("sort", [
    case("f32", lambda g: [("self", g.T([3, 5]))]),
    case("desc_i64_ties", lambda g: [("self", g.T([3, 6], "int64", kind="small")), ("dim", 0), ("descending", True)], ["ties"]),
], compare=[True, False])

fam.op("argsort", [
    case("f32", lambda g: [("self", g.T([3, 5]))]),
    case("desc_f64_strided", lambda g: [("self", g.T([4, 3], "float64", view="transpose")), ("dim", 0), ("descending", True)], ["noncontig"]),
])

fam.op("argsort.stable", [
    case("ties_i64", lambda g: [("self", g.T([3, 6], "int64", kind="small")), ("stable", True)], ["ties"]),
    case("desc_ties_strided", lambda g: [("self", g.T([5, 3], "int64", kind="small", view="transpose")), ("stable", True), ("dim", 0),
                                         ("descending", True)], ["ties", "noncontig"]),
])

fam.op("msort", [
    case("f32", lambda g: [("self", g.T([4, 3]))]),
    case("i64_ties", lambda g: [("self", g.T([5, 2], "int64", kind="small"))], ["ties"]),
])

fam.op("topk", [
    case("f32", lambda g: [("self", g.T([3, 6])), ("k", 3)]),
    case("smallest_f64_strided", lambda g: [("self", g.T([5, 3], "float64", view="any")), ("k", 2), ("dim", 0), ("largest", False)],
         ["noncontig"]),
    case("ties_i64", lambda g: [("self", g.T([2, 8], "int64", kind="small")), ("k", 4)], ["ties"]),
    case("nan_f32", lambda g: [("self", g.T([8], kind="special")), ("k", 3)], ["special_values"]),
    case("k0", lambda g: [("self", g.T([2, 3])), ("k", 0)], ["empty"]),
    case("0d", lambda g: [("self", g.T([])), ("k", 1)], ["0d"]),
    err("k_too_big", lambda g: [("self", g.T([2, 3])), ("k", 4)], "RuntimeError", "selected index k out of range"),
    err("k_negative", lambda g: [("self", g.T([2, 3])), ("k", -1)], "RuntimeError", "selected index k out of range"),
], compare=[True, False])

fam.op("kthvalue", [
    case("f32", lambda g: [("self", g.T([3, 6])), ("k", 2)]),
    case("keepdim_i64_ties", lambda g: [("self", g.T([5, 3], "int64", kind="small")), ("k", 5), ("dim", 0), ("keepdim", True)], ["ties"]),
    case("nan_f64", lambda g: [("self", g.T([6], "float64", kind="special")), ("k", 6)], ["special_values"]),
    case("0d", lambda g: [("self", g.T([])), ("k", 1)], ["0d"]),
    err("k_too_big", lambda g: [("self", g.T([2, 3])), ("k", 4)], "RuntimeError", "kthvalue(): selected number k out of range for dimension 1"),
    err("k_zero", lambda g: [("self", g.T([2, 3])), ("k", 0)], "RuntimeError", "kthvalue(): selected number k out of range"),
    err("empty_dim", lambda g: [("self", g.T([0, 3])), ("k", 1), ("dim", 0)],
        "IndexError", "kthvalue(): Expected reduction dim 0 to have non-zero size."),
], compare=[True, False])

for name in ("cummax", "cummin"):
    fam.op(name, [
        case("f32", lambda g: [("self", g.T([3, 6])), ("dim", 1)]),
        case("ties_i64_strided", lambda g: [("self", g.T([6, 3], "int64", kind="small", view="any")), ("dim", 0)], ["ties", "noncontig"]),
        case("nan_f64", lambda g: [("self", g.T([9], "float64", kind="special")), ("dim", -1)], ["special_values"]),
        case("bool", lambda g: [("self", g.T([6], "bool")), ("dim", 0)]),
        case("0d", lambda g: [("self", g.T([])), ("dim", 0)], ["0d"]),
        case("empty", lambda g: [("self", g.T([0, 3])), ("dim", 0)], ["empty"]),
        err("dim_out_of_range", lambda g: [("self", g.T([2, 3])), ("dim", 2)], "IndexError", "Dimension out of range"),
    ])

# ---- repeat_interleave ----

fam.op("repeat_interleave.Tensor", [
    case("i64", lambda g: [("repeats", I([1, 0, 3, 2]))], ["data_dependent"]),
    case("i32_output_size", lambda g: [("repeats", I32([2, 1])), ("output_size", 3)], ["data_dependent"]),
    err("negative", lambda g: [("repeats", I([1, -1]))], "RuntimeError", "repeats can not be negative"),
    err("2d", lambda g: [("repeats", I([[1]]))], "RuntimeError", "repeat_interleave only accept 1D vector as repeat"),
    err("output_size", lambda g: [("repeats", I([1, 2])), ("output_size", 4)],
        "RuntimeError", "allocated size does not match required size"),
])

fam.op("repeat_interleave.self_int", [
    case("flat_f32", lambda g: [("self", g.T([2, 3])), ("repeats", 2)], ["data_dependent"]),
    case("dim_i64_strided", lambda g: [("self", g.T([2, 3], "int64", view="transpose")), ("repeats", 3), ("dim", -1)],
         ["noncontig", "negative_dim", "data_dependent"]),
    err("negative", lambda g: [("self", g.T([2, 3])), ("repeats", -1), ("dim", 1)], "RuntimeError", "repeats can not be negative"),
])

fam.op("repeat_interleave.self_Tensor", [
    case("per_index_f32", lambda g: [("self", g.T([2, 3])), ("repeats", I([1, 2])), ("dim", 0)], ["data_dependent"]),
    case("one_bool", lambda g: [("self", g.T([2, 3], "bool")), ("repeats", I([2])), ("dim", 1)], ["data_dependent"]),
    err("size", lambda g: [("self", g.T([2, 3])), ("repeats", I([1, 2])), ("dim", 1)],
        "RuntimeError", "repeats must have the same size as input along dim"),
    err("2d", lambda g: [("self", g.T([2, 3])), ("repeats", I([[1, 2]])), ("dim", 1)],
        "RuntimeError", "repeats must be 0-dim or 1-dim tensor"),
])

# ---- cat: empty tensors and promotion ----

fam.op("cat", [
    case("legacy_empty_promote", lambda g: [("tensors", TensorList([g.T([0]), g.T([2, 3], "int32"), g.T([2, 3], "float64")]))],
         ["legacy", "promotion", "empty"]),
    case("empty_rows_strided", lambda g: [("tensors", TensorList([g.T([0, 3]), g.T([2, 3], view="transpose")]))], ["empty", "noncontig"]),
    case("bool_int", lambda g: [("tensors", TensorList([g.T([2], "bool"), g.T([3], "int64")]))], ["promotion"]),
    case("neg_dim_expanded", lambda g: [("tensors", TensorList([g.T([2, 3], view="expand"), g.T([2, 1])])), ("dim", -1)],
         ["negative_dim", "noncontig"]),
    err("ndim", lambda g: [("tensors", TensorList([g.T([2, 3]), g.T([2])]))], "RuntimeError", "Tensors must have same number of dimensions"),
    err("0d", lambda g: [("tensors", TensorList([g.T([])]))], "RuntimeError", "zero-dimensional tensor (at position 0) cannot be concatenated"),
])

fam.op("_unique2", [
    case("f32_all", lambda g: [("self", g.T([3, 4], kind="int")), ("return_inverse", True), ("return_counts", True)],
         ["data_dependent"]),
    case("i64_strided", lambda g: [("self", g.T([3, 4], "int64", kind="small", view="any")), ("return_inverse", True)],
         ["noncontig", "data_dependent"]),
    case("bool_counts", lambda g: [("self", g.T([2, 3], "bool")), ("return_counts", True)], ["data_dependent"]),
    case("values_only_f64", lambda g: [("self", g.T([6], "float64", kind="halfint"))], ["data_dependent"]),
    case("0d", lambda g: [("self", g.T([], "int64")), ("return_inverse", True), ("return_counts", True)], ["0d", "data_dependent"]),
    case("empty", lambda g: [("self", g.T([0, 2])), ("return_inverse", True), ("return_counts", True)], ["empty", "data_dependent"]),
])

fam.op("unique_dim", [
    case("rows_i64", lambda g: [("self", I([[1, 2], [3, 4], [1, 2], [0, 9]])), ("dim", 0)], ["data_dependent"]),
    case("columns_flags", lambda g: [("self", I([[1, 2, 1], [0, 5, 0]])), ("dim", 1), ("sorted", True),
                                     ("return_inverse", True), ("return_counts", True)], ["data_dependent"]),
    case("f32_strided_dim1", lambda g: [("self", g.T([3, 6, 2], kind="int", view="any")), ("dim", -2)],
         ["noncontig", "data_dependent"]),
    case("f64_3d_dim0", lambda g: [("self", g.T([5, 2, 2], "float64", kind="int")), ("dim", 0)], ["data_dependent"]),
    case("bool", lambda g: [("self", g.T([6, 2], "bool")), ("dim", 0)], ["data_dependent"]),
    case("empty_selected", lambda g: [("self", g.T([0, 3])), ("dim", 0)], ["empty", "data_dependent"]),
    err("empty_not_selected", lambda g: [("self", g.T([0, 3])), ("dim", 1)], "RuntimeError",
        "There are 0 sized dimensions, and they aren't selected, so unique cannot be applied"),
    err("two_empty_dims", lambda g: [("self", g.T([0, 0])), ("dim", 1)], "RuntimeError",
        "Number of zero sized dimensions is more than one, so unique cannot be applied"),
    err("dim_out_of_range", lambda g: [("self", g.T([2, 3])), ("dim", 2)], "IndexError", "Dimension out of range"),
])


def F(values, dtype="float32"):
    a = np.array(values, dtype=np.float64)
    return TSpec(dtype, list(a.shape), a.reshape(-1))


fam.op("searchsorted.Tensor", [
    case("left_f32", lambda g: [("sorted_sequence", F([1, 3, 5, 7])), ("self", F([[0, 3, 6], [8, 1, 5]]))]),
    case("right_i64", lambda g: [("sorted_sequence", I([1, 3, 3, 7])), ("self", I([[0, 3, 6], [8, 1, 3]])), ("right", True)], ["ties"]),
    case("side_int32_out", lambda g: [("sorted_sequence", F([1, 3, 5, 7], "float64")), ("self", F([3, 7, 9], "float64")),
                                      ("out_int32", True), ("side", "right")]),
    case("rows_strided", lambda g: [("sorted_sequence", F([[1, 3], [2, 4]])), ("self", TSpec("float32", [3, 2], np.array([2, 5, 0, 3, 1, 4.]), [["transpose", 0, 1]]))],
         ["noncontig"]),
    case("sorter", lambda g: [("sorted_sequence", F([7, 1, 5, 3])), ("self", F([[0, 3, 6], [8, 1, 5]])), ("sorter", I([1, 3, 2, 0]))]),
    case("mixed_dtypes", lambda g: [("sorted_sequence", I([1, 3, 5])), ("self", F([2.5, 3, -1]))], ["promotion"]),
    case("0d_value", lambda g: [("sorted_sequence", F([1, 3, 5])), ("self", F(4))], ["0d"]),
    err("opposite", lambda g: [("sorted_sequence", F([1, 3])), ("self", F([2])), ("right", True), ("side", "left")],
        "RuntimeError", "side and right can't be set to opposites"),
    err("bad_side", lambda g: [("sorted_sequence", F([1, 3])), ("self", F([2])), ("side", "up")],
        "RuntimeError", "side can only be 'left' or 'right' but got up"),
    err("0d_boundaries", lambda g: [("sorted_sequence", F(1)), ("self", F([2]))],
        "RuntimeError", "boundaries tensor should have positive dimension"),
    err("rows_mismatch", lambda g: [("sorted_sequence", F([[1, 3], [2, 4]])), ("self", F([[2], [3], [4]]))],
        "RuntimeError", "boundaries tensor should be 1 dimension or the first N-1 dimensions"),
    err("sorter_dtype", lambda g: [("sorted_sequence", F([7, 1])), ("self", F([2])), ("sorter", I32([1, 0]))],
        "RuntimeError", "sorter must be a tensor of long dtype but got dtype Int"),
])

fam.op("searchsorted.Scalar", [
    case("int_scalar", lambda g: [("sorted_sequence", I([1, 3, 5, 7])), ("self", 5)]),
    case("float_scalar_right", lambda g: [("sorted_sequence", F([1, 3, 5, 7])), ("self", 3.0), ("right", True)]),
    case("float_in_int_side_int32", lambda g: [("sorted_sequence", I([1, 3, 5, 7])), ("self", 4.5),
                                               ("out_int32", True), ("side", "right")], ["promotion"]),
    case("sorter", lambda g: [("sorted_sequence", F([7, 1, 5, 3])), ("self", 6.0), ("sorter", I([1, 3, 2, 0]))]),
    err("rows", lambda g: [("sorted_sequence", I([[1, 3], [5, 7]])), ("self", 4)],
        "RuntimeError", "input value can be a scalar only when boundaries tensor dimension is 1, but we got "
        "boundaries tensor dim(2) and input value's dim(0) numel(1)"),
])
fam.op("bucketize.Tensor", [
    case("left_i64", lambda g: [("self", I([[1, 5, 9], [0, 7, 3]])), ("boundaries", I([1, 3, 5, 7]))]),
    case("right_f64_int32", lambda g: [("self", g.T([3, 4], "float64", view="any")),
                                       ("boundaries", F([-1, 0, 0.5, 2], "float64")), ("right", True),
                                       ("out_int32", True)], ["noncontig"]),
    case("mixed_dtypes", lambda g: [("self", F([2.5, 3, -1, 9])), ("boundaries", I([1, 3, 5]))], ["promotion"]),
    case("0d", lambda g: [("self", F(4)), ("boundaries", F([1, 3, 5]))], ["0d"]),
    case("empty", lambda g: [("self", g.T([0, 2])), ("boundaries", F([1, 3]))], ["empty"]),
    case("empty_boundaries", lambda g: [("self", F([1, 2])), ("boundaries", g.T([0]))], ["empty"]),
    err("boundaries_2d", lambda g: [("self", I([1, 5])), ("boundaries", I([[1, 3], [5, 7]]))],
        "RuntimeError", "boundaries tensor must be 1 dimension, but got dim(2)"),
])
fam.op("bucketize.Scalar", [
    case("int", lambda g: [("self", 3), ("boundaries", I([1, 3, 5, 7]))]),
    case("int_right", lambda g: [("self", 3), ("boundaries", I([1, 3, 5, 7])), ("right", True)]),
    case("float_int32", lambda g: [("self", 3.5), ("boundaries", F([1, 3, 5, 7])), ("out_int32", True)]),
    err("boundaries_2d", lambda g: [("self", 1), ("boundaries", I([[1, 3], [5, 7]]))],
        "RuntimeError", "boundaries tensor must be 1 dimension, but got dim(2)"),
])

if __name__ == "__main__":
    fam.main()

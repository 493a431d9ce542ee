#!/usr/bin/python3
"""gen_graph_ops.py: conformance cases of our own for the three view operators that traced
graphs hold (aten::_reshape_alias, aten::_unsafe_view, aten::unbind.int; [Note: The views of
traced graphs] in kernels/src/views.c), recorded from real PyTorch in the format of
tests/fixtures/conformance/FORMAT.md (`opd-aten-conformance/1`).

The cases are built by the public fixtures' own generator
(tests/fixtures/conformance/tools/gen_conformance.py, or $OPD_FIXTURES_DIR's): its tensor specs,
its encoding, its replay of each case from its JSON and its recording of the outcome. This
script only lists the scenarios. Made and checked with Debian's interpreter (python3-torch
1.13), from the repository root:

    /usr/bin/python3 tools/conformance/gen_graph_ops.py --out tests/fixtures/graph_ops_conformance.json
    /usr/bin/python3 tests/fixtures/conformance/validate_conformance.py tests/fixtures/graph_ops_conformance.json

The output is deterministic (fixed seed, fixed case list): the same torch and numpy give the
same bytes.
ctest replays it with opd-conformance: conformance.graph_ops.{cpu,meta,cuda} in process and
rpc.conformance.graph_ops through a daemon (tests/CMakeLists.txt).

What the cases cover, and what the format leaves out:
- _reshape_alias: the sizes and strides reshape computes for contiguous, transposed, sliced
  (storage offset) and expanded (stride 0) inputs, a 0-d input, an empty input and an empty
  view of a non-empty buffer, sizes whose numel is smaller than the input's and overlapping
  strides (PyTorch checks neither); the errors PyTorch raises for sizes and strides of
  different lengths and for a negative size. A view past the storage, or with a negative
  stride, is no case: PyTorch 1.13 does not check either (it reads outside the buffer), opd
  refuses both.
- _unsafe_view: -1 inferred, 0-d in and out, transposed and sliced inputs that can be viewed,
  an empty view of a non-empty buffer, int64, int32, float32, float64 and bool; the errors for
  a wrong numel, two -1, -1 with zero elements and an input that cannot be viewed.
- unbind.int: only errors (a dim out of range either side, a 0-d input). A successful unbind
  returns a Tensor[], and the format's expected outcome is one Tensor (FORMAT.md section 6);
  tests/test_graph_ops.c checks its results on the CPU and Meta, tests/test_cuda.c on a GPU.
- _unsafe_view's empty result comes from a view of a non-empty buffer: PyTorch gives a tensor
  with no elements a storage at address 0 and _unsafe_view's result no _base, so the format's
  aliasing rule would record alias_of null for it on an empty contiguous tensor, where opd
  shares the storage.
"""
import argparse
import json
import os
import sys

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FIXTURES = os.environ.get("OPD_FIXTURES_DIR", os.path.join(ROOT, "tests", "fixtures"))
sys.path.insert(0, os.path.join(FIXTURES, "conformance", "tools"))
import gen_conformance as gc  # noqa: E402

SEED = 13
S, ERR = gc.S, gc.ERR


def spec(g, dtype, shape, steps=()):
    """A tensor of `shape` (the base's, when `steps` view it) with the generator's data."""
    return gc.TSpec(dtype, shape, g.data(gc.prod(shape), dtype), steps)


def reshape_alias(scenario, dtype, shape, steps, size, stride=None, error=None):
    """_reshape_alias with the strides reshape computes where it can view (what make_fx
    records), or the ones given."""
    def fn(g):
        t = spec(g, dtype, shape, steps)
        st = stride
        if st is None:
            x = gc.dec_tensor(t.to_json())
            r = x.reshape(size)
            assert gc.shares_storage(r, x), scenario
            st = list(r.stride())
        return [("self", t), ("size", size), ("stride", st)], ["view"] if error is None else []
    return S(scenario, fn) if error is None else ERR(scenario, fn, *error)


def unsafe_view(scenario, dtype, shape, steps, size, error=None):
    def fn(g):
        return [("self", spec(g, dtype, shape, steps)), ("size", size)], \
            ["view"] if error is None else []
    return S(scenario, fn) if error is None else ERR(scenario, fn, *error)


def unbind(scenario, dtype, shape, dim, tags=()):
    msg = "Dimension out of range" if shape else \
        "Dimension specified as 0 but tensor has no dimensions"
    return ERR(scenario, lambda g: ([("self", spec(g, dtype, shape)), ("dim", dim)], list(tags)),
               "IndexError", msg)


CASES = {
    "_reshape_alias": [
        reshape_alias("contig_f32", "float32", [2, 3, 4], (), [4, 6]),
        reshape_alias("split_dims_i64", "int64", [6, 4], (), [2, 3, 4]),
        reshape_alias("transposed_f32", "float32", [3, 4], [["transpose", 0, 1]], [2, 2, 3]),
        reshape_alias("sliced_offset_f64", "float64", [4, 5], [["slice", 0, 1, 3, 1]], [10]),
        reshape_alias("expanded_i32", "int32", [1, 4], [["expand", [3, 4]]], [3, 2, 2]),
        reshape_alias("permuted_bool", "bool", [2, 3, 4], [["permute", [2, 0, 1]]], [2, 2, 2, 3]),
        reshape_alias("0d_to_1x1_f32", "float32", [], (), [1, 1]),
        reshape_alias("1_to_0d_i64", "int64", [1], (), []),
        reshape_alias("empty_view_f32", "float32", [3, 4], [["slice", 0, 1, 1, 1]], [2, 0, 2]),
        reshape_alias("empty_i64", "int64", [0, 3], (), [3, 0]),
        # any geometry inside the storage: PyTorch checks neither numel nor overlap
        reshape_alias("smaller_numel_f32", "float32", [2, 3, 4], (), [2, 3], [3, 1]),
        reshape_alias("overlapping_i64", "int64", [6], (), [4, 3], [1, 1]),
        reshape_alias("sizes_strides_differ", "float32", [2, 3, 4], (), [4, 6], [1],
                      ("RuntimeError",
                       "dimensionality of sizes (2) must match dimensionality of strides (1)")),
        reshape_alias("negative_size", "int64", [2, 3, 4], (), [4, -1], [6, 1],
                      ("RuntimeError", "numel: integer multiplication overflow")),
    ],
    "_unsafe_view": [
        unsafe_view("contig_infer_f32", "float32", [2, 3, 4], (), [-1, 8]),
        unsafe_view("flatten_i64", "int64", [2, 3, 4], (), [24]),
        unsafe_view("infer_last_i32", "int32", [4, 6], (), [3, 2, -1]),
        unsafe_view("f64", "float64", [3, 5], (), [5, 3]),
        unsafe_view("bool", "bool", [2, 6], (), [3, 4]),
        unsafe_view("0d_to_1x1_f32", "float32", [], (), [1, 1]),
        unsafe_view("1x1_to_0d_i64", "int64", [1, 1], (), []),
        unsafe_view("transposed_split_f32", "float32", [3, 4], [["transpose", 0, 1]], [2, 2, 3]),
        unsafe_view("sliced_offset_i64", "int64", [4, 6], [["slice", 0, 1, 3, 1]], [3, -1]),
        unsafe_view("empty_view_f32", "float32", [2, 3], [["slice", 0, 1, 1, 1]], [3, 0]),
        unsafe_view("wrong_numel", "float32", [2, 3, 4], (), [5, 5],
                    ("RuntimeError", "shape '[5, 5]' is invalid for input of size 24")),
        unsafe_view("two_inferred", "int64", [2, 3, 4], (), [-1, -1],
                    ("RuntimeError", "only one dimension can be inferred")),
        unsafe_view("infer_from_empty", "float32", [0, 3], (), [-1, 0],
                    ("RuntimeError", "cannot reshape tensor of 0 elements")),
        unsafe_view("not_viewable", "float32", [2, 3, 4], [["transpose", 0, 2]], [12, 2],
                    ("RuntimeError",
                     "view size is not compatible with input tensor's size and stride")),
    ],
    "unbind.int": [
        unbind("dim_past_end", "float32", [2, 3, 4], 3),
        unbind("negative_dim_past_start", "int64", [2, 3, 4], -4, ["negative_dim"]),
        unbind("negative_dim_1d", "int32", [5], -2, ["negative_dim"]),
        unbind("0d", "float32", [], 0),
    ],
}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    schemas, cases = {}, []
    for op, scens in CASES.items():
        schemas[gc.qualname(op)] = str(gc.op_handle(op)._schema)
        g = gc.Gen(np.random.default_rng(gc.op_seed(SEED, op)))
        cases += [gc.build_case(op, i, scen, g) for i, scen in enumerate(scens)]
    doc = {
        "format": gc.FORMAT_VERSION,
        "generator": {"torch_version": gc.torch.__version__, "numpy_version": np.__version__,
                      "python": sys.version.split()[0], "seed": SEED, "count_per_op": 0,
                      "default_dtype": "float32", "script": "tools/conformance/gen_graph_ops.py"},
        "schemas": schemas,
        "cases": cases,
    }
    text = json.dumps(doc, separators=(",", ":"), allow_nan=False)
    with open(a.out, "w") as f:
        f.write(text + "\n")
    nerr = sum(1 for c in cases if "error" in c["expect"])
    print("wrote %s: %d ops, %d cases (%d error cases), %d bytes" %
          (a.out, len(schemas), len(cases), nerr, len(text) + 1))


if __name__ == "__main__":
    main()

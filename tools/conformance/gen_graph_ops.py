#!/usr/bin/python3
"""gen_graph_ops.py: conformance cases of our own for the three view operators that traced
graphs hold (aten::_reshape_alias, aten::_unsafe_view, aten::unbind.int; [Note: The views of
traced graphs] in kernels/src/views.c), recorded from real PyTorch in the format of
../shared/conformance/FORMAT.md (`opd-aten-conformance/1`).

Made and checked with Debian's interpreter (python3-torch 1.13), from the repository root:

    /usr/bin/python3 tools/conformance/gen_graph_ops.py --out tests/fixtures/graph_ops_conformance.json
    /usr/bin/python3 ../shared/conformance/validate_conformance.py tests/fixtures/graph_ops_conformance.json

The output is deterministic (fixed seed, fixed case list): the same torch and numpy give the
same bytes.
ctest replays it with opd-conformance: conformance.graph_ops.{cpu,meta,cuda} in process and
rpc.conformance.graph_ops through a daemon (tests/CMakeLists.txt).

What the cases cover, and what the format leaves out:
- _reshape_alias: the sizes and strides reshape computes for contiguous, transposed, sliced
  (storage offset) and expanded (stride 0) inputs, a 0-d input, an empty input and an empty
  view of a non-empty buffer, sizes whose numel is smaller than the input's and overlapping strides (PyTorch checks
  neither); the errors PyTorch raises for sizes and strides of different lengths and for a
  negative size. A view past the storage, or with a negative stride, is no case: PyTorch 1.13
  does not check either (it reads outside the buffer), opd refuses both.
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
import math
import sys
import warnings

import numpy as np
import torch

warnings.filterwarnings("ignore")
torch.set_num_threads(1)

A = torch.ops.aten
FORMAT_VERSION = "opd-aten-conformance/1"
SEED = 13
OPS = {"aten::_reshape_alias": A._reshape_alias.default, "aten::_unsafe_view": A._unsafe_view.default,
       "aten::unbind.int": A.unbind.int}
DTYPES = {"float32": torch.float32, "float64": torch.float64, "int64": torch.int64,
          "int32": torch.int32, "bool": torch.bool}
DTYPE_NAMES = {v: k for k, v in DTYPES.items()}
# FORMAT.md section 7: shape and copy ops
TOL = {"float32": (1.3e-06, 1e-05), "float64": (1e-10, 1e-10)}
DTYPE_TAG = {"float32": "float32", "float64": "float64", "int64": "integer", "int32": "integer",
             "bool": "bool"}


def enc_elem(v, dtype):
    """One element as JSON: shortest round-tripping decimal for float32, repr for float64."""
    if dtype == "bool":
        return bool(v)
    if dtype not in TOL:
        return int(v)
    v = float(v)
    if math.isnan(v):
        return "nan"
    if math.isinf(v):
        return "inf" if v > 0 else "-inf"
    if dtype == "float32":
        s = float(str(np.float32(v)))
        return s if np.float32(s) == np.float32(v) else v
    return v


def enc_data(t):
    dtype = DTYPE_NAMES[t.dtype]
    return [enc_elem(x, dtype) for x in t.detach().contiguous().reshape(-1).tolist()]


def apply_step(t, step):
    kind = step[0]
    if kind == "transpose":
        return t.transpose(step[1], step[2])
    if kind == "permute":
        return t.permute(*step[1])
    if kind == "slice":
        return A.slice.Tensor(t, step[1], step[2], step[3], step[4])
    if kind == "expand":
        return t.expand(*step[1])
    raise ValueError(step)


class Gen:
    """Seeded tensor values: a base buffer, and the view of it that `steps` make."""

    def __init__(self, seed):
        self.rng = np.random.default_rng(seed)

    def base(self, dtype, shape):
        n = int(np.prod(shape, dtype=np.int64))
        if dtype in TOL:
            a = self.rng.standard_normal(n).astype(np.float32 if dtype == "float32" else np.float64)
        elif dtype == "bool":
            a = self.rng.integers(0, 2, n).astype(np.bool_)
        else:
            a = self.rng.integers(-50, 50, n).astype(np.int64 if dtype == "int64" else np.int32)
        return torch.from_numpy(a.reshape(shape).copy())

    def tensor(self, dtype, shape, steps=()):
        """(JSON value, torch tensor) of a tensor: contiguous, or a view of a base buffer."""
        b = self.base(dtype, shape)
        if not steps:
            return {"type": "Tensor", "dtype": dtype, "shape": list(shape), "data": enc_data(b)}, b
        t = b
        for s in steps:
            t = apply_step(t, s)
        j = {"type": "Tensor", "dtype": dtype, "shape": list(t.shape), "strides": list(t.stride()),
             "storage_offset": t.storage_offset(), "base": {"shape": list(shape), "data": enc_data(b)},
             "view": [list(s) for s in steps]}
        return j, t


def shares_storage(out, inp):
    """FORMAT.md's alias_of: the same tensor, the same base, or the same data pointer."""
    if out is inp:
        return True
    ro = out._base if out._base is not None else out
    ri = inp._base if inp._base is not None else inp
    if ro is ri:
        return True
    po, pi = out.storage().data_ptr(), inp.storage().data_ptr()
    return po != 0 and po == pi


def encode_value(v):
    if isinstance(v, int):
        return {"type": "int", "value": v}
    return {"type": "int[]", "value": list(v)}


def make_case(op, scenario, tags, self_json, self_t, args, error=None):
    """One case: op called on self and the named int / int[] arguments, its outcome recorded.
    error: the (class, message substring) PyTorch must raise, or None for a success."""
    short = op[len("aten::"):]
    case = {"id": "%s/%s" % (short, scenario), "op": op, "scenario": scenario}
    dtype = self_json["dtype"]
    tags = set(tags) | {DTYPE_TAG[dtype]}
    if "base" in self_json:
        tags.add("noncontig")
    if len(self_json["shape"]) == 0:
        tags.add("0d")
    if 0 in self_json["shape"]:
        tags.add("empty")
    if error:
        tags.add("error")
    case["tags"] = sorted(tags)
    case["args"] = [{"name": "self", "value": self_json}] + [
        {"name": n, "value": encode_value(v)} for n, v in args]
    try:
        out = OPS[op](self_t, *[v for _, v in args])
    except Exception as e:  # noqa: BLE001 (any PyTorch error is an outcome)
        if not error or type(e).__name__ != error[0] or error[1] not in str(e):
            raise RuntimeError("%s: unexpected %s: %s" % (case["id"], type(e).__name__, e))
        case["expect"] = {"error": error[0], "message_contains": error[1]}
        return case
    if error:
        raise RuntimeError("%s: expected %s, the call succeeded" % (case["id"], error[0]))
    rtol, atol = TOL.get(dtype, (0.0, 0.0))
    case["expect"] = {"type": "Tensor", "dtype": DTYPE_NAMES[out.dtype], "shape": list(out.shape),
                      "data": enc_data(out), "strides": list(out.stride()),
                      "storage_offset": out.storage_offset(),
                      "alias_of": "self" if shares_storage(out, self_t) else None,
                      "rtol": rtol, "atol": atol, "equal_nan": True}
    return case


def reshape_alias_cases(g):
    """_reshape_alias with the strides reshape computes (what make_fx records), and others."""
    op = "aten::_reshape_alias"
    cases = []

    def add(scenario, tags, dtype, shape, steps, size, stride=None, error=None):
        j, t = g.tensor(dtype, shape, steps)
        if stride is None:  # what reshape computes where it can view
            r = t.reshape(size)
            assert shares_storage(r, t), scenario
            stride = list(r.stride())
        cases.append(make_case(op, scenario, tags, j, t, [("size", size), ("stride", stride)], error))

    add("contig_f32", ["view"], "float32", [2, 3, 4], (), [4, 6])
    add("split_dims_i64", ["view"], "int64", [6, 4], (), [2, 3, 4])
    add("transposed_f32", ["view"], "float32", [3, 4], [["transpose", 0, 1]], [2, 2, 3])
    add("sliced_offset_f64", ["view"], "float64", [4, 5], [["slice", 0, 1, 3, 1]], [10])
    add("expanded_i32", ["view"], "int32", [1, 4], [["expand", [3, 4]]], [3, 2, 2])
    add("permuted_bool", ["view"], "bool", [2, 3, 4], [["permute", [2, 0, 1]]], [2, 2, 2, 3])
    add("0d_to_1x1_f32", ["view"], "float32", [], (), [1, 1])
    add("1_to_0d_i64", ["view"], "int64", [1], (), [])
    add("empty_view_f32", ["view"], "float32", [3, 4], [["slice", 0, 1, 1, 1]], [2, 0, 2])
    add("empty_i64", ["view"], "int64", [0, 3], (), [3, 0])
    # any geometry inside the storage: PyTorch checks neither numel nor overlap
    add("smaller_numel_f32", ["view"], "float32", [2, 3, 4], (), [2, 3], [3, 1])
    add("overlapping_i64", ["view"], "int64", [6], (), [4, 3], [1, 1])
    add("sizes_strides_differ", [], "float32", [2, 3, 4], (), [4, 6], [1],
        ("RuntimeError", "dimensionality of sizes (2) must match dimensionality of strides (1)"))
    add("negative_size", [], "int64", [2, 3, 4], (), [4, -1], [6, 1],
        ("RuntimeError", "numel: integer multiplication overflow"))
    return cases


def unsafe_view_cases(g):
    op = "aten::_unsafe_view"
    cases = []

    def add(scenario, tags, dtype, shape, steps, size, error=None):
        j, t = g.tensor(dtype, shape, steps)
        cases.append(make_case(op, scenario, tags, j, t, [("size", size)], error))

    add("contig_infer_f32", ["view"], "float32", [2, 3, 4], (), [-1, 8])
    add("flatten_i64", ["view"], "int64", [2, 3, 4], (), [24])
    add("infer_last_i32", ["view"], "int32", [4, 6], (), [3, 2, -1])
    add("f64", ["view"], "float64", [3, 5], (), [5, 3])
    add("bool", ["view"], "bool", [2, 6], (), [3, 4])
    add("0d_to_1x1_f32", ["view"], "float32", [], (), [1, 1])
    add("1x1_to_0d_i64", ["view"], "int64", [1, 1], (), [])
    add("transposed_split_f32", ["view"], "float32", [3, 4], [["transpose", 0, 1]], [2, 2, 3])
    add("sliced_offset_i64", ["view"], "int64", [4, 6], [["slice", 0, 1, 3, 1]], [3, -1])
    add("empty_view_f32", ["view"], "float32", [2, 3], [["slice", 0, 1, 1, 1]], [3, 0])
    add("wrong_numel", [], "float32", [2, 3, 4], (), [5, 5],
        ("RuntimeError", "shape '[5, 5]' is invalid for input of size 24"))
    add("two_inferred", [], "int64", [2, 3, 4], (), [-1, -1],
        ("RuntimeError", "only one dimension can be inferred"))
    add("infer_from_empty", [], "float32", [0, 3], (), [-1, 0],
        ("RuntimeError", "cannot reshape tensor of 0 elements"))
    add("not_viewable", [], "float32", [2, 3, 4], [["transpose", 0, 2]], [12, 2],
        ("RuntimeError", "view size is not compatible with input tensor's size and stride"))
    return cases


def unbind_cases(g):
    op = "aten::unbind.int"
    cases = []

    def add(scenario, tags, dtype, shape, dim):
        j, t = g.tensor(dtype, shape)
        cases.append(make_case(op, scenario, tags, j, t, [("dim", dim)],
                               ("IndexError", "Dimension out of range" if shape else
                                "Dimension specified as 0 but tensor has no dimensions")))

    add("dim_past_end", [], "float32", [2, 3, 4], 3)
    add("negative_dim_past_start", ["negative_dim"], "int64", [2, 3, 4], -4)
    add("negative_dim_1d", ["negative_dim"], "int32", [5], -2)
    add("0d", [], "float32", [], 0)
    return cases


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    g = Gen(SEED)
    cases = reshape_alias_cases(g) + unsafe_view_cases(g) + unbind_cases(g)
    doc = {
        "format": FORMAT_VERSION,
        "generator": {"torch_version": torch.__version__, "numpy_version": np.__version__,
                      "python": sys.version.split()[0], "seed": SEED, "count_per_op": 0,
                      "default_dtype": "float32", "script": "tools/conformance/gen_graph_ops.py"},
        "schemas": {q: str(op._schema) for q, op in OPS.items()},
        "cases": cases,
    }
    text = json.dumps(doc, separators=(",", ":"), allow_nan=False)
    with open(a.out, "w") as f:
        f.write(text + "\n")
    nerr = sum(1 for c in cases if "error" in c["expect"])
    print("wrote %s: %d ops, %d cases (%d error cases), %d bytes" % (a.out, len(OPS), len(cases), nerr,
                                                                     len(text) + 1))


if __name__ == "__main__":
    main()

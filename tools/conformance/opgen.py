"""opgen.py: what the operator families' conformance generators share.

Each family lists its scenarios in tools/conformance/gen_ops_FAMILY.py and writes
tests/fixtures/ops_FAMILY.json in the format of tests/fixtures/conformance/FORMAT.md
(`opd-aten-conformance/1`), recorded from real PyTorch 1.13 (Debian's python3-torch):

    /usr/bin/python3 tools/conformance/gen_ops_FAMILY.py

ctest replays every tests/fixtures/ops_*.json with opd-conformance (in process on the CPU,
Meta and CUDA, and through a daemon: tests/CMakeLists.txt).

The cases are built by the fixtures' own generator (tests/fixtures/conformance/tools/
gen_conformance.py): its tensor specs (`g.T(shape, dtype, kind, view)`), its encoding, its
replay of each case from its JSON and its recording of the outcome. This module adds what
the operator families need beyond it:
- results that are not one tensor: a tuple of tensors (`native_batch_norm`, `sort`,
  `max_pool2d_with_indices`, ...) is recorded as {"type": "Tuple", "values": [E, ...]} and a
  Tensor[] as {"type": "Tensor[]", "values": [E, ...]}, each E a tensor outcome as in
  FORMAT.md section 6 (opd-conformance compares each element);
- an undefined tensor in a tuple (a backward operator's output_mask false) is
  {"type": "None"};
- tolerances per operator: `tol=(rtol, atol)` for every float dtype, a function
  `tol(inputs, out, dtype) -> (rtol, atol)`, or None for the generator's defaults
  (the assert_close defaults for float32, tight ones for float64);
- `skip_values=True` for outputs whose values PyTorch leaves unspecified (the contents of
  `empty`, the indices a tie can pick, ...): only dtype and shape are recorded
  ({"values_unspecified": true} in the outcome);
- argument values the format lacks: a list of bools (`bool[3] output_mask`) is
  {"type": "bool[]", "value": [...]}, a list of floats {"type": "float[]", "value": [...]},
  and a list of optional tensors (`Tensor?[] indices`) {"type": "Tensor?[]", "value": [T or
  {"type": "None"}, ...]}; pass Python lists of bools or floats, or `OptTensors([...])`;
- a case whose result shape depends on the data (nonzero, masked_select, unique) carries
  the tag "data_dependent": a Meta run skips it;
- `compare=False` on a tuple element that only shapes and dtypes should be compared for.

Usage:
    import opgen
    from opgen import S, ERR
    fam = opgen.Family("norm", seed=21)
    fam.op("native_batch_norm", [S("train_f32", lambda g: ([("input", g.T([2, 3, 4])), ...], []))],
           errors=[ERR("bad_weight", lambda g: (...), "RuntimeError", "weight")], tol=(1e-5, 1e-5))
    fam.main()
Operator names are those of torch.ops.aten without the namespace: "sort" is
aten::sort.default, "max_pool2d_with_indices_backward" likewise, "add.Tensor" an overload.
"""
import argparse
import json
import os
import sys

import numpy as np
import torch

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tests", "fixtures", "conformance", "tools"))
import gen_conformance as gc  # noqa: E402

S, ERR, TSpec, TensorList, Gen = gc.S, gc.ERR, gc.TSpec, gc.TensorList, gc.Gen
FLOAT_DT = gc.FLOAT_DT


class OptTensors:
    """A Tensor?[] argument: TSpecs and Nones."""

    def __init__(self, items):
        self.items = list(items)


def enc_value(v):
    if isinstance(v, OptTensors):
        return {"type": "Tensor?[]",
                "value": [{"type": "None"} if x is None else x.to_json() for x in v.items]}
    if isinstance(v, (list, tuple)) and v and all(isinstance(x, bool) for x in v):
        return {"type": "bool[]", "value": list(v)}
    if isinstance(v, (list, tuple)) and v and all(isinstance(x, float) for x in v):
        return {"type": "float[]", "value": [gc.enc_float_elem(x, "float64") for x in v]}
    return gc.enc_value(v)


def dec_value(j):
    ty = j["type"]
    if ty == "bool[]":
        return list(j["value"])
    if ty == "float[]":
        return [gc.dec_float_elem(x) for x in j["value"]]
    if ty == "Tensor?[]":
        return [None if x["type"] == "None" else gc.dec_tensor(x) for x in j["value"]]
    return gc.dec_value(j)


def _tensor_outcome(t, decoded, tol, values):
    dt = gc.DTYPE_NAMES.get(t.dtype)
    if dt is None:
        raise TypeError("result dtype %s is not in the format" % t.dtype)
    alias = None
    for name, v in decoded:
        if isinstance(v, torch.Tensor) and gc.shares_storage(t, v):
            alias = name
            break
    if dt in FLOAT_DT:
        if callable(tol):
            rtol, atol = tol(dict(decoded), t, dt)
        elif tol is not None:
            rtol, atol = tol
        else:
            rtol, atol = gc.BASE_TOL[dt]
        if dt == "float64" and tol is not None and not callable(tol):
            rtol, atol = min(rtol, 1e-9), min(atol, 1e-10)
    else:
        rtol, atol = 0.0, 0.0
    res = {"type": "Tensor", "dtype": dt, "shape": list(t.shape), "data": [],
           "strides": list(t.stride()), "storage_offset": t.storage_offset(), "alias_of": alias,
           "rtol": float("%.3g" % rtol), "atol": float("%.3g" % atol), "equal_nan": True}
    if values:
        res["data"] = gc.enc_data(t.detach().contiguous().numpy(), dt)
    else:
        res["values_unspecified"] = True
    return res


def encode_outcome(out, decoded, tol=None, skip_values=False, compare=None):
    """The expected outcome of a call's result `out` (a tensor, a tuple or a list of them)."""
    if isinstance(out, torch.Tensor):
        return _tensor_outcome(out, decoded, tol, not skip_values)
    if isinstance(out, (tuple, list)):
        values = []
        for i, t in enumerate(out):
            if t is None:
                values.append({"type": "None"})
                continue
            if not isinstance(t, torch.Tensor):
                raise TypeError("element %d of the result is %r" % (i, type(t)))
            keep = not skip_values and (compare is None or compare[i])
            values.append(_tensor_outcome(t, decoded, tol, keep))
        return {"type": "Tuple" if isinstance(out, tuple) else "Tensor[]", "values": values}
    raise TypeError("op returned %r" % type(out))


class Family:
    """One operator family's fixture: its operators, scenarios and error cases."""

    def __init__(self, name, seed):
        self.name, self.seed, self.ops = name, seed, []

    def op(self, name, scenarios, errors=(), tol=None, skip_values=False, compare=None):
        gc.op_handle(name)  # fails now for a name torch does not have
        self.ops.append((name, list(scenarios), list(errors), tol, skip_values, compare))

    def _case(self, op, idx, scen, g, tol, skip_values, compare):
        args, tags = scen(g)
        schema_args = gc.op_handle(op)._schema.arguments
        order = [a.name for a in schema_args]
        for n, _ in args:
            if n not in order:
                raise KeyError("%s has no argument %s" % (op, n))
        args = sorted(args, key=lambda nv: order.index(nv[0]))
        args_json = [{"name": n, "value": enc_value(v)} for n, v in args]
        case = {"id": "%s/%s/%d" % (op, scen.scen_name, idx), "op": gc.qualname(op),
                "scenario": scen.scen_name, "tags": sorted(set(tags)), "args": args_json}
        expect_err = getattr(scen, "expect_error", None)
        try:
            decoded = [(a["name"], dec_value(a["value"])) for a in args_json]
            out = gc.call_op(op, decoded)
        except Exception as e:  # noqa: BLE001 - PyTorch's exception is the record
            if expect_err is None:
                raise RuntimeError("case %s raised unexpectedly: %s: %s" % (case["id"], type(e).__name__, e))
            exc, msg = expect_err
            if type(e).__name__ != exc or msg not in str(e):
                raise RuntimeError("case %s: expected %s(%r), got %s: %s" %
                                   (case["id"], exc, msg, type(e).__name__, e))
            case["expect"] = {"error": exc, "message_contains": msg}
            return case
        if expect_err is not None:
            raise RuntimeError("case %s expected an error but succeeded" % case["id"])
        case["expect"] = encode_outcome(out, decoded, tol, skip_values, compare)
        return case

    def generate(self):
        schemas, cases = {}, []
        for op, scens, errs, tol, skip_values, compare in self.ops:
            schemas[gc.qualname(op)] = str(gc.op_handle(op)._schema)
            g = gc.Gen(np.random.default_rng(gc.op_seed(self.seed, op)))
            for i, scen in enumerate(scens):
                cases.append(self._case(op, i, scen, g, tol, skip_values, compare))
            for j, scen in enumerate(errs):
                cases.append(self._case(op, len(scens) + j, scen, g, tol, skip_values, compare))
        return schemas, cases

    def main(self):
        default = os.path.join(ROOT, "tests", "fixtures", "ops_%s.json" % self.name)
        ap = argparse.ArgumentParser(description="conformance cases of the %s family" % self.name)
        ap.add_argument("--out", default=default)
        a = ap.parse_args()
        torch.set_num_threads(1)
        schemas, cases = self.generate()
        doc = {"format": gc.FORMAT_VERSION,
               "generator": {"torch_version": torch.__version__, "numpy_version": np.__version__,
                             "family": self.name, "seed": self.seed, "default_dtype": "float32"},
               "schemas": schemas, "cases": cases}
        text = json.dumps(doc, separators=(",", ":"), allow_nan=False)
        with open(a.out, "w") as f:
            f.write(text + "\n")
        nerr = sum(1 for c in cases if "error" in c["expect"])
        print("wrote %s: %d ops, %d cases (%d error cases)" % (a.out, len(schemas), len(cases), nerr))

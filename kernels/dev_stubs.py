#!/usr/bin/env python3
# DEVELOPMENT ONLY (removed before the kernels land): writes C stubs for kernel functions of
# kernels/src/kernel_list.h that no source defines yet, so that partial work links.
import pathlib, re, sys
root = pathlib.Path(__file__).resolve().parent
out = pathlib.Path(sys.argv[1])
lst = (root / "src/kernel_list.h").read_text()
unboxed = re.findall(r'X\("[^"]+", \w+, (opd__\w+), (\w+)((?:, \w+)*)\)', lst)
boxed = re.findall(r'X\("[^"]+", \w+, (opd__\w+)\)', lst)
src = "\n".join(p.read_text() for p in list(root.glob("cpu/*.c")) + list(root.glob("meta/*.c")) + list(root.glob("src/*.c")))
defined = set(re.findall(r"^int (opd__\w+)\(", src, re.M))
ct = {"Tensor": "opd_tensor *", "OptTensor": "opd_tensor *", "TensorList": "opd_tensor_list", "Int": "int64_t",
      "OptInt": "opd_opt_int", "Double": "double", "Bool": "bool", "Scalar": "opd_scalar", "OptScalar": "opd_scalar",
      "IntList": "opd_int_list", "OptIntList": "opd_int_list", "Str": "const char *", "OptStr": "const char *",
      "DType": "opd_dtype", "OptDType": "opd_dtype", "OptLayout": "int64_t", "OptDevice": "opd_device",
      "OptBool": "opd_opt_bool", "MemoryFormat": "int64_t", "OptMemoryFormat": "int64_t"}
lines = ['#include "src/kernel_util.h"']
for fn, ret, args in unboxed:
    if fn in defined: continue
    params = ", ".join(ct[a.strip()] for a in args.split(",") if a.strip())
    r = ", opd_tensor **out" if ret == "Tensor" else ""
    lines.append(f"int {fn}(const opd_kernel_ctx *ctx, {params}{r});")
    lines.append(f"int {fn}(const opd_kernel_ctx *ctx, {params}{r}) {{ (void)ctx; return opd_error(OPD_ENOTIMPL, \"{fn} not written yet\"); }}")
for fn in boxed:
    if fn in defined: continue
    lines.append(f"int {fn}(const opd_kernel_ctx *ctx, opd_stack *s);")
    lines.append(f"int {fn}(const opd_kernel_ctx *ctx, opd_stack *s) {{ (void)ctx; opd_stack_clear(s); return opd_error(OPD_ENOTIMPL, \"{fn} not written yet\"); }}")
text = "\n".join(lines) + "\n"
if not out.exists() or out.read_text() != text:
    out.write_text(text)

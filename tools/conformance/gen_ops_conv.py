#!/usr/bin/python3
"""gen_ops_conv.py: conformance cases of the convolution, pooling and padding family,
recorded from PyTorch 1.13 into tests/fixtures/ops_conv.json (opgen.py describes the format
and the replay):

    /usr/bin/python3 tools/conformance/gen_ops_conv.py

What the cases cover: convolution in 1, 2 and 3 spatial dims with stride, padding, dilation,
groups (depthwise too), transposed with output_padding, with and without bias, float32 and
float64, non-contiguous inputs, an empty batch, and the geometries opd's oneDNN path declines
(an output padding past the padding); the composites conv1d/2d/3d, conv_transpose1d/2d/3d
and _convolution; average, adaptive average and max pooling (their indices too, NaN and infinities
among the values) with their backward operators (the max ones take the indices PyTorch's
forward computed), max_unpool2d and the pooling
composites; 3-d average and adaptive average and max pooling with their backward operators,
adaptive_avg_pool1d/3d and adaptive_max_pool1d; im2col and col2im; grid_sampler_2d in its
three interpolation and three padding modes, with grid points outside the image;
channel_shuffle
(int64 average pooling too, which PyTorch divides as integers); pixel_shuffle and
pixel_unshuffle; upsample_nearest1d/2d/3d, upsample_linear1d/bilinear2d/trilinear3d and
upsample_bicubic2d, their
.vec overloads (output_size or scale_factors) and backward operators, with and without
align_corners, downsampling and explicit scales; constant_pad_nd with positive and negative
pads, reflection and replication
padding in 1, 2 and 3 dims with their backward operators; and the errors PyTorch raises for
wrong channel counts, bad padding, strides and kernels. convolution_backward is recorded with
each output_mask combination it is called with (an unrequested gradient is None).
"""
import os
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import opgen  # noqa: E402
from opgen import S, ERR, TSpec  # noqa: E402

A = torch.ops.aten
fam = opgen.Family("conv", seed=31)

# a convolution sums K products: float32 rounding grows with K and the values' size
CONV_TOL = (2e-4, 2e-4)


def t(g, shape, dtype="float32", view=None, kind="normal"):
    return g.T(shape, dtype, kind, view=view)


def conv(name, x, w, b, stride, padding, dilation, transposed, output_padding, groups,
         dtype="float32", view=None, tags=()):
    def fn(g):
        return ([("input", t(g, x, dtype, view)), ("weight", t(g, w, dtype, view)),
                 ("bias", None if b is None else t(g, [b], dtype)), ("stride", stride),
                 ("padding", padding), ("dilation", dilation), ("transposed", transposed),
                 ("output_padding", output_padding), ("groups", groups)], list(tags))
    return S(name, fn)


def conv_err(name, x, w, b, stride, padding, dilation, transposed, output_padding, groups, msg,
             wdtype="float32"):
    def fn(g):
        return ([("input", t(g, x)), ("weight", t(g, w, wdtype)),
                 ("bias", None if b is None else t(g, [b])), ("stride", stride),
                 ("padding", padding), ("dilation", dilation), ("transposed", transposed),
                 ("output_padding", output_padding), ("groups", groups)], ["error"])
    return ERR(name, fn, "RuntimeError", msg)


fam.op("convolution", [
    conv("2d_bias", [2, 3, 7, 7], [4, 3, 3, 3], 4, [1, 1], [1, 1], [1, 1], False, [0, 0], 1),
    conv("2d_stride2_nobias", [2, 3, 8, 7], [5, 3, 3, 3], None, [2, 2], [0, 0], [1, 1], False, [0, 0], 1),
    conv("2d_dilation", [1, 2, 9, 8], [3, 2, 3, 2], 3, [2, 1], [2, 1], [2, 3], False, [0, 0], 1),
    conv("2d_single_params", [1, 2, 6, 6], [3, 2, 3, 3], None, [2], [1], [1], False, [0], 1),
    conv("2d_groups", [2, 4, 6, 6], [6, 2, 3, 3], 6, [1, 1], [1, 1], [1, 1], False, [0, 0], 2),
    conv("2d_depthwise", [1, 4, 5, 5], [4, 1, 3, 3], 4, [1, 1], [1, 1], [1, 1], False, [0, 0], 4),
    conv("2d_depthwise_mult", [1, 3, 6, 6], [6, 1, 3, 3], None, [2, 2], [1, 1], [1, 1], False, [0, 0], 3),
    conv("2d_1x1_stride2", [1, 3, 6, 6], [4, 3, 1, 1], None, [2, 2], [0, 0], [1, 1], False, [0, 0], 1),
    conv("2d_wide", [2, 16, 8, 8], [16, 16, 3, 3], 16, [1, 1], [1, 1], [1, 1], False, [0, 0], 1),
    conv("1d", [2, 3, 10], [5, 3, 3], 5, [2], [1], [1], False, [0], 1, tags=["1d"]),
    conv("1d_dilation_groups", [2, 4, 11], [4, 2, 3], None, [1], [2], [2], False, [0], 2, tags=["1d"]),
    conv("3d", [1, 2, 5, 5, 5], [3, 2, 3, 3, 3], 3, [1, 2, 1], [1, 1, 1], [1, 1, 1], False, [0, 0, 0], 1,
         tags=["3d"]),
    conv("3d_groups_dilation", [1, 4, 6, 5, 5], [4, 2, 2, 2, 2], None, [1, 1, 1], [0, 1, 0], [2, 1, 2],
         False, [0, 0, 0], 2, tags=["3d"]),
    conv("transposed_2d", [2, 4, 4, 4], [4, 3, 3, 3], 3, [2, 2], [1, 1], [1, 1], True, [1, 1], 1,
         tags=["transposed"]),
    conv("transposed_groups", [1, 4, 3, 3], [4, 2, 3, 3], None, [2, 1], [0, 1], [1, 1], True, [1, 0], 2,
         tags=["transposed"]),
    conv("transposed_1d_dilation", [2, 3, 5], [3, 2, 3], 2, [1], [0], [2], True, [0], 1,
         tags=["transposed", "1d"]),
    conv("transposed_3d", [1, 2, 3, 3, 3], [2, 2, 2, 2, 2], 2, [2, 2, 2], [0, 0, 0], [1, 1, 1], True,
         [1, 0, 1], 1, tags=["transposed", "3d"]),
    conv("transposed_outpad_past_pad", [1, 2, 4], [2, 2, 3], None, [1], [0], [2], True, [1], 1,
         tags=["transposed", "1d"]),
    conv("f64_2d", [2, 3, 6, 6], [4, 3, 3, 3], 4, [1, 2], [1, 0], [1, 1], False, [0, 0], 1, "float64",
         tags=["float64"]),
    conv("f64_groups_dilation", [1, 4, 7, 7], [4, 2, 2, 3], None, [2, 1], [1, 1], [2, 2], False, [0, 0], 2,
         "float64", tags=["float64"]),
    conv("f64_transposed", [1, 4, 3, 4], [4, 2, 3, 3], 2, [2, 2], [1, 1], [1, 1], True, [1, 0], 1,
         "float64", tags=["float64", "transposed"]),
    conv("f64_1d", [2, 2, 7], [3, 2, 2], 3, [1], [0], [1], False, [0], 1, "float64",
         tags=["float64", "1d"]),
    conv("noncontig", [2, 3, 6, 6], [4, 3, 3, 3], 4, [1, 1], [1, 1], [1, 1], False, [0, 0], 1,
         view="any", tags=["noncontig"]),
    conv("noncontig_transposed", [1, 3, 4, 4], [3, 2, 2, 2], None, [2, 2], [0, 0], [1, 1], True,
         [0, 0], 1, view="any", tags=["noncontig", "transposed"]),
    conv("empty_batch", [0, 3, 5, 5], [4, 3, 3, 3], 4, [1, 1], [0, 0], [1, 1], False, [0, 0], 1,
         tags=["empty"]),
], errors=[
    conv_err("err_channels", [2, 3, 5, 5], [4, 2, 3, 3], None, [1], [0], [1], False, [0], 1,
             "expected input[2, 3, 5, 5] to have 2 channels, but got 3 channels instead"),
    conv_err("err_weight_dims", [2, 3, 5, 5], [4, 3], None, [1], [0], [1], False, [0], 1,
             "weight should have at least three dimensions"),
    conv_err("err_input_dims", [2, 3, 5, 5], [4, 3, 3], None, [1], [0], [1], False, [0], 1,
             "Expected 3-dimensional input for 3-dimensional weight [4, 3, 3]"),
    conv_err("err_negative_padding", [2, 3, 5, 5], [4, 3, 3, 3], None, [1], [-1], [1], False, [0], 1,
             "negative padding is not supported"),
    conv_err("err_stride_zero", [2, 3, 5, 5], [4, 3, 3, 3], None, [0], [0], [1], False, [0], 1,
             "non-positive stride is not supported"),
    conv_err("err_dilation_zero", [2, 3, 5, 5], [4, 3, 3, 3], None, [1], [0], [0], False, [0], 1,
             "non-positive dilation is not supported"),
    conv_err("err_groups_zero", [2, 3, 5, 5], [4, 3, 3, 3], None, [1], [0], [1], False, [0], 0,
             "non-positive groups is not supported"),
    conv_err("err_groups_channels", [2, 3, 5, 5], [4, 3, 3, 3], None, [1], [0], [1], False, [0], 2,
             "expected input[2, 3, 5, 5] to have 6 channels, but got 3 channels instead"),
    conv_err("err_kernel_too_big", [2, 3, 5, 5], [4, 3, 7, 7], None, [1], [0], [1], False, [0], 1,
             "Kernel size can't be greater than actual input size"),
    conv_err("err_bias_size", [2, 3, 5, 5], [4, 3, 3, 3], 3, [1], [0], [1], False, [0], 1,
             "expected bias to be 1-dimensional with 4 elements, but got bias of size [3] instead"),
    conv_err("err_stride_length", [2, 3, 5, 5], [4, 3, 3, 3], None, [1, 1, 1], [0], [1], False, [0], 1,
             "expected stride to be a single integer value or a list of 2 values"),
    conv_err("err_dtype_mismatch", [2, 3, 5, 5], [4, 3, 3, 3], None, [1], [0], [1], False, [0], 1,
             "should be the same", wdtype="float64"),
    conv_err("err_transposed_channels", [2, 3, 5, 5], [4, 3, 3, 3], None, [1], [0], [1], True, [0], 1,
             "to have 4 channels, but got 3 channels instead"),
    conv_err("err_weight_groups", [2, 3, 5, 5], [0, 3, 3, 3], None, [1], [0], [1], False, [0], 1,
             "expected weight to be at least 1 at dimension 0"),
], tol=CONV_TOL)


def conv_nd_op(op, nd, transposed):
    def fn(shape_x, shape_w, b, extra, batched=True):
        def f(g):
            args = [("input", t(g, shape_x if batched else shape_x[1:])), ("weight", t(g, shape_w)),
                    ("bias", None if b is None else t(g, [b]))]
            return args + list(extra.items()), [] if batched else ["unbatched"]
        return f
    return fn


fam.op("conv1d", [
    S("basic", conv_nd_op("conv1d", 1, False)([2, 3, 9], [4, 3, 3], 4, {"stride": [2], "padding": [1]})),
    S("unbatched", conv_nd_op("conv1d", 1, False)([1, 3, 9], [4, 3, 3], None, {"groups": 1}, False)),
], errors=[
    ERR("err_dims", lambda g: ([("input", t(g, [2, 3, 4, 4])), ("weight", t(g, [4, 3, 3]))], ["error"]),
        "RuntimeError", "Expected 2D (unbatched) or 3D (batched) input to conv1d"),
], tol=CONV_TOL)
fam.op("conv2d", [
    S("basic", conv_nd_op("conv2d", 2, False)([2, 3, 6, 6], [4, 3, 3, 3], 4, {"padding": [1, 1]})),
    S("groups", conv_nd_op("conv2d", 2, False)([1, 4, 6, 5], [4, 1, 3, 3], None,
                                               {"stride": [2, 1], "dilation": [1, 2], "groups": 4})),
    S("unbatched", conv_nd_op("conv2d", 2, False)([1, 3, 5, 5], [2, 3, 2, 2], 2, {}, False)),
], tol=CONV_TOL)
fam.op("conv3d", [
    S("basic", conv_nd_op("conv3d", 3, False)([1, 2, 4, 5, 4], [3, 2, 2, 3, 2], 3, {"padding": [1, 0, 1]})),
], tol=CONV_TOL)
fam.op("conv_transpose1d", [
    S("basic", conv_nd_op("conv_transpose1d", 1, True)([2, 3, 5], [3, 2, 3], 2,
                                                       {"stride": [2], "output_padding": [1]})),
], tol=CONV_TOL)
fam.op("conv_transpose2d.input", [
    S("basic", conv_nd_op("conv_transpose2d", 2, True)([1, 4, 3, 3], [4, 2, 3, 3], None,
                                                       {"stride": [2, 2], "padding": [1, 1],
                                                        "output_padding": [1, 1], "groups": 2})),
    S("unbatched", conv_nd_op("conv_transpose2d", 2, True)([1, 2, 3, 3], [2, 3, 2, 2], 3, {}, False)),
], tol=CONV_TOL)
fam.op("conv_transpose3d.input", [
    S("basic", conv_nd_op("conv_transpose3d", 3, True)([1, 2, 2, 3, 2], [2, 2, 2, 2, 2], 2,
                                                       {"stride": [1, 2, 1]})),
], tol=CONV_TOL)
fam.op("_convolution", [
    S("basic", lambda g: ([("input", t(g, [1, 3, 5, 5])), ("weight", t(g, [2, 3, 3, 3])),
                           ("bias", t(g, [2])), ("stride", [1, 1]), ("padding", [1, 1]),
                           ("dilation", [1, 1]), ("transposed", False), ("output_padding", [0, 0]),
                           ("groups", 1), ("benchmark", False), ("deterministic", False),
                           ("cudnn_enabled", True), ("allow_tf32", True)], [])),
], tol=CONV_TOL)



def conv_bwd(name, x, w, stride, padding, dilation, transposed, output_padding, groups, mask,
             dtype="float32", bias=True, view=None, tags=()):
    def fn(g):
        xs, ws = t(g, x, dtype, view), t(g, w, dtype, view)
        y = A.convolution(opgen.dec_value(xs.to_json()), opgen.dec_value(ws.to_json()), None, stride,
                          padding, dilation, transposed, output_padding, groups)
        return ([("grad_output", t(g, list(y.shape), dtype)), ("input", xs), ("weight", ws),
                 ("bias_sizes", [y.shape[1]] if bias else None), ("stride", stride),
                 ("padding", padding), ("dilation", dilation), ("transposed", transposed),
                 ("output_padding", output_padding), ("groups", groups), ("output_mask", mask)],
                list(tags))
    return S(name, fn)


fam.op("convolution_backward", [
    conv_bwd("2d", [2, 3, 7, 7], [4, 3, 3, 3], [1, 1], [1, 1], [1, 1], False, [0, 0], 1, [True, True, True]),
    conv_bwd("2d_stride_dilation_groups", [2, 4, 8, 7], [6, 2, 3, 2], [2, 1], [1, 0], [1, 2], False, [0, 0], 2,
             [True, True, False], bias=False),
    conv_bwd("depthwise_weight_only", [1, 4, 6, 6], [4, 1, 3, 3], [1, 1], [1, 1], [1, 1], False, [0, 0], 4,
             [False, True, True]),
    conv_bwd("1d_input_only", [2, 3, 10], [5, 3, 3], [2], [1], [1], False, [0], 1, [True, False, False],
             tags=["1d"]),
    conv_bwd("3d", [1, 2, 4, 5, 4], [3, 2, 2, 3, 2], [1, 2, 1], [1, 1, 0], [1, 1, 1], False, [0, 0, 0], 1,
             [True, True, True], tags=["3d"]),
    conv_bwd("transposed", [2, 4, 4, 4], [4, 3, 3, 3], [2, 2], [1, 1], [1, 1], True, [1, 1], 1,
             [True, True, True], tags=["transposed"]),
    conv_bwd("transposed_groups_1d", [1, 4, 5], [4, 2, 3], [2], [0], [2], True, [1], 2, [True, True, False],
             tags=["transposed", "1d"]),
    conv_bwd("f64", [2, 3, 6, 5], [4, 3, 3, 2], [1, 2], [1, 0], [1, 1], False, [0, 0], 1, [True, True, True],
             "float64", tags=["float64"]),
    conv_bwd("f64_transposed", [1, 4, 3, 3], [4, 2, 2, 3], [2, 1], [0, 1], [1, 1], True, [1, 0], 2,
             [True, True, True], "float64", tags=["float64", "transposed"]),
    conv_bwd("noncontig", [2, 3, 6, 6], [4, 3, 3, 3], [1, 1], [1, 1], [1, 1], False, [0, 0], 1,
             [True, True, True], view="any", tags=["noncontig"]),
    conv_bwd("empty_batch", [0, 3, 5, 5], [4, 3, 3, 3], [1, 1], [0, 0], [1, 1], False, [0, 0], 1,
             [True, True, True], tags=["empty"]),
], tol=CONV_TOL)

# ---- pooling ----

def spec_of(x):
    """A TSpec holding a tensor PyTorch computed (indices of a forward pooling)."""
    dt = {torch.int64: "int64", torch.float32: "float32", torch.float64: "float64"}[x.dtype]
    return TSpec(dt, list(x.shape), x.contiguous().numpy().reshape(-1))


def max_bwd(name, shape, k, s, p, d, ceil, dtype="float32", nd=2):
    def fn(g):
        x = t(g, shape, dtype)
        xt = opgen.dec_value(x.to_json())
        fwd = A.max_pool2d_with_indices if nd == 2 else A.max_pool3d_with_indices
        out, idx = fwd(xt, k, s, p, d, ceil)
        return ([("grad_output", t(g, list(out.shape), dtype)), ("self", x), ("kernel_size", k),
                 ("stride", s), ("padding", p), ("dilation", d), ("ceil_mode", ceil),
                 ("indices", spec_of(idx))], [])
    return S(name, fn)


def max_fwd(name, shape, k, s, p, d, ceil, dtype="float32", view=None, kind="normal", tags=()):
    return S(name, lambda g: ([("self", t(g, shape, dtype, view, kind)), ("kernel_size", k), ("stride", s),
                               ("padding", p), ("dilation", d), ("ceil_mode", ceil)], list(tags)))


fam.op("max_pool2d_with_indices", [
    max_fwd("basic", [2, 3, 6, 6], [2, 2], [], [0], [1], False),
    max_fwd("overlap_pad_ceil", [1, 2, 7, 6], [3, 3], [2, 2], [1, 1], [1, 1], True),
    max_fwd("dilation_unbatched", [2, 7, 7], [2, 3], [1, 2], [1, 1], [2, 1], False),
    max_fwd("nan_inf", [1, 2, 4, 4], [2, 2], [1, 1], [0, 0], [1, 1], False, kind="special", tags=["special"]),
    max_fwd("f64_noncontig", [2, 2, 5, 6], [2, 3], [2, 1], [1, 1], [1, 1], False, "float64", "any",
            tags=["float64", "noncontig"]),
    max_fwd("empty_batch", [0, 2, 4, 4], [2, 2], [2, 2], [0, 0], [1, 1], False, tags=["empty"]),
], errors=[
    ERR("err_stride_zero", lambda g: ([("self", t(g, [2, 3, 5, 5])), ("kernel_size", [2, 2]), ("stride", [0])],
                                      ["error"]), "RuntimeError", "stride should not be zero"),
    ERR("err_too_small", lambda g: ([("self", t(g, [2, 3, 5, 5])), ("kernel_size", [7, 7])], ["error"]),
        "RuntimeError", "Output size is too small"),
])
fam.op("max_pool3d_with_indices", [
    max_fwd("basic", [1, 2, 4, 5, 4], [2, 2, 2], [2, 1, 2], [1, 0, 1], [1, 1, 1], False, tags=["3d"]),
    max_fwd("ceil_dilation_f64", [2, 5, 6, 5], [2, 3, 2], [2, 2, 1], [1, 1, 0], [1, 1, 2], True, "float64",
            tags=["3d", "float64"]),
])
fam.op("adaptive_max_pool2d", [
    S("uneven", lambda g: ([("self", t(g, [2, 3, 7, 5])), ("output_size", [3, 2])], [])),
    S("upsample_f64", lambda g: ([("self", t(g, [3, 2, 3], "float64")), ("output_size", [5, 4])], ["float64"])),
    S("nan", lambda g: ([("self", t(g, [1, 2, 4, 4], kind="special")), ("output_size", [2, 2])], ["special"])),
], errors=[
    ERR("err_dims", lambda g: ([("self", t(g, [4, 4])), ("output_size", [2, 2])], ["error"]),
        "RuntimeError", "Expected 3D or 4D tensor"),
])

fam.op("max_pool2d_with_indices_backward", [
    max_bwd("basic", [2, 3, 6, 6], [2, 2], [2, 2], [0, 0], [1, 1], False),
    max_bwd("overlap_pad_ceil", [1, 2, 7, 6], [3, 3], [2, 2], [1, 1], [1, 1], True),
    max_bwd("dilation_3d_input", [2, 7, 7], [2, 3], [1, 2], [1, 1], [2, 1], False),
    max_bwd("f64", [1, 2, 5, 5], [3, 3], [1, 1], [1, 1], [1, 1], False, "float64"),
])
fam.op("max_pool3d_with_indices_backward", [
    max_bwd("basic", [1, 2, 4, 5, 4], [2, 2, 2], [2, 1, 2], [1, 0, 1], [1, 1, 1], False, nd=3),
])


def pool_args(g, shape, dtype, view, **kw):
    return [("self", t(g, shape, dtype, view))] + list(kw.items())


fam.op("avg_pool2d", [
    S("basic", lambda g: (pool_args(g, [2, 3, 6, 6], "float32", None, kernel_size=[2, 2]), [])),
    S("pad_ceil", lambda g: (pool_args(g, [1, 2, 7, 6], "float32", None, kernel_size=[3, 3], stride=[2, 2],
                                       padding=[1, 1], ceil_mode=True), [])),
    S("no_count_pad", lambda g: (pool_args(g, [2, 5, 5], "float32", None, kernel_size=[3, 2], stride=[2, 1],
                                           padding=[1, 1], ceil_mode=False, count_include_pad=False), [])),
    S("divisor", lambda g: (pool_args(g, [1, 2, 5, 5], "float32", None, kernel_size=[2], stride=[1],
                                      padding=[0], ceil_mode=False, count_include_pad=True,
                                      divisor_override=3), [])),
    S("ceil_no_count_pad", lambda g: (pool_args(g, [1, 1, 6, 6], "float32", None, kernel_size=[3, 3],
                                                stride=[2, 2], padding=[1, 1], ceil_mode=True,
                                                count_include_pad=False), [])),
    S("f64_noncontig", lambda g: (pool_args(g, [2, 3, 6, 5], "float64", "any", kernel_size=[2, 2],
                                            stride=[1, 2]), ["float64", "noncontig"])),
], errors=[
    ERR("err_pad", lambda g: (pool_args(g, [2, 3, 5, 5], "float32", None, kernel_size=[2, 2], stride=[],
                                        padding=[2]), ["error"]),
        "RuntimeError", "pad should be at most half of kernel size"),
    ERR("err_divisor", lambda g: (pool_args(g, [2, 3, 5, 5], "float32", None, kernel_size=[2, 2], stride=[],
                                            padding=[0], ceil_mode=False, count_include_pad=True,
                                            divisor_override=0), ["error"]),
        "RuntimeError", "divisor must be not zero"),
    ERR("err_kernel_list", lambda g: (pool_args(g, [2, 3, 5, 5], "float32", None, kernel_size=[2, 2, 2]),
                                      ["error"]),
        "RuntimeError", "avg_pool2d: kernel_size must either be a single int, or a tuple of two ints"),
    ERR("err_too_small", lambda g: (pool_args(g, [1, 2, 3, 3], "float32", None, kernel_size=[4, 4]), ["error"]),
        "RuntimeError", "Output size is too small"),
])


def avg_bwd(name, shape, k, s, p, ceil, cip, div, dtype="float32"):
    def fn(g):
        x = t(g, shape, dtype)
        out = A.avg_pool2d(opgen.dec_value(x.to_json()), k, s, p, ceil, cip, div)
        return ([("grad_output", t(g, list(out.shape), dtype)), ("self", x), ("kernel_size", k),
                 ("stride", s), ("padding", p), ("ceil_mode", ceil), ("count_include_pad", cip),
                 ("divisor_override", div)], [])
    return S(name, fn)


fam.op("avg_pool2d_backward", [
    avg_bwd("basic", [2, 3, 6, 6], [2, 2], [2, 2], [0, 0], False, True, None),
    avg_bwd("pad_ceil", [1, 2, 7, 6], [3, 3], [2, 2], [1, 1], True, False, None),
    avg_bwd("divisor_f64", [2, 5, 5], [3, 2], [1, 2], [1, 0], False, True, 5, "float64"),
])

fam.op("_adaptive_avg_pool2d", [
    S("uneven", lambda g: ([("self", t(g, [2, 3, 7, 5])), ("output_size", [3, 2])], [])),
    S("upsample", lambda g: ([("self", t(g, [3, 2, 3])), ("output_size", [5, 4])], [])),
    S("one", lambda g: ([("self", t(g, [1, 2, 4, 4], "float64", "any")), ("output_size", [1, 1])],
                        ["float64", "noncontig"])),
    S("zero_size", lambda g: ([("self", t(g, [2, 3, 4, 4])), ("output_size", [0, 2])], ["empty"])),
], errors=[
    ERR("err_size_len", lambda g: ([("self", t(g, [2, 3, 4, 4])), ("output_size", [2])], ["error"]),
        "RuntimeError", "adaptive_avg_pool2d: output_size must be 2"),
    ERR("err_empty", lambda g: ([("self", t(g, [2, 3, 0, 4])), ("output_size", [2, 2])], ["error"]),
        "RuntimeError", "Expected input to have non-zero size for non-batch dimensions"),
])
fam.op("adaptive_avg_pool2d", [
    S("mean", lambda g: ([("self", t(g, [2, 3, 5, 5])), ("output_size", [1, 1])], [])),
    S("pool", lambda g: ([("self", t(g, [2, 3, 5, 6])), ("output_size", [2, 4])], [])),
])
fam.op("adaptive_avg_pool1d", [
    S("basic", lambda g: ([("self", t(g, [2, 3, 7])), ("output_size", [3])], [])),
    S("unbatched_f64", lambda g: ([("self", t(g, [3, 5], "float64")), ("output_size", [1])], ["float64"])),
], errors=[
    ERR("err_dims", lambda g: ([("self", t(g, [2, 3, 4, 5])), ("output_size", [2])], ["error"]), "RuntimeError",
        "Expected 2 to 3 dimensions, but got 4-dimensional tensor for argument #1 'self' (while checking "
        "arguments for adaptive_avg_pool1d)"),
    ERR("err_size_len", lambda g: ([("self", t(g, [2, 3, 5])), ("output_size", [2, 2])], ["error"]), "RuntimeError",
        "adaptive_avg_pool1d() argument 'output_size' should contain one int (got 2)"),
])
fam.op("adaptive_max_pool1d", [
    S("basic", lambda g: ([("self", t(g, [2, 3, 7])), ("output_size", [3])], [])),
    S("unbatched_f64", lambda g: ([("self", t(g, [3, 5], "float64")), ("output_size", [4])], ["float64"])),
], errors=[
    ERR("err_dims", lambda g: ([("self", t(g, [2, 3, 4, 5])), ("output_size", [2])], ["error"]), "RuntimeError",
        "Expected 2 to 3 dimensions, but got 4-dimensional tensor for argument #1 'self' (while checking "
        "arguments for adaptive_max_pool1d)"),
])
fam.op("adaptive_avg_pool3d", [
    S("mean", lambda g: ([("self", t(g, [2, 3, 4, 5, 3])), ("output_size", [1, 1, 1])], ["3d"])),
    S("pool", lambda g: ([("self", t(g, [2, 3, 5, 4, 6])), ("output_size", [2, 3, 4])], ["3d"])),
], errors=[
    ERR("err_size_len", lambda g: ([("self", t(g, [2, 3, 4, 4, 4])), ("output_size", [1, 1])], ["error"]),
        "RuntimeError", "adaptive_avg_pool3d: output_size must be 3"),
    ERR("err_negative", lambda g: ([("self", t(g, [2, 3, 4, 4, 4])), ("output_size", [1, -1, 1])], ["error"]),
        "RuntimeError", "elements of output_size must be greater than or equal to 0 but received {1, -1,1}"),
])


def adaptive_bwd(name, shape, size, dtype="float32", maxpool=False):
    def fn(g):
        x = t(g, shape, dtype)
        xt = opgen.dec_value(x.to_json())
        if maxpool:
            out, idx = A.adaptive_max_pool2d(xt, size)
            return ([("grad_output", t(g, list(out.shape), dtype)), ("self", x),
                     ("indices", spec_of(idx))], [])
        out = A._adaptive_avg_pool2d(xt, size)
        return ([("grad_output", t(g, list(out.shape), dtype)), ("self", x)], [])
    return S(name, fn)


fam.op("_adaptive_avg_pool2d_backward", [
    adaptive_bwd("uneven", [2, 3, 7, 5], [3, 2]),
    adaptive_bwd("upsample_f64", [3, 2, 3], [5, 4], "float64"),
])
fam.op("adaptive_max_pool2d_backward", [
    adaptive_bwd("uneven", [2, 3, 7, 5], [3, 2], maxpool=True),
    adaptive_bwd("f64", [1, 2, 5, 5], [2, 3], "float64", maxpool=True),
])


def unpool(name, shape, k, out_size, dtype="float32"):
    def fn(g):
        x = t(g, shape, dtype)
        out, idx = A.max_pool2d_with_indices(opgen.dec_value(x.to_json()), k, k, [0, 0], [1, 1], False)
        return ([("self", spec_of(out)), ("indices", spec_of(idx)), ("output_size", out_size)], [])
    return S(name, fn)


fam.op("max_unpool2d", [
    unpool("basic", [2, 3, 6, 6], [2, 2], [6, 6]),
    unpool("larger_output", [1, 2, 4, 4], [2, 2], [5, 5], "float64"),
], errors=[
    ERR("err_index", lambda g: ([("self", t(g, [1, 2, 2, 2])),
                                 ("indices", TSpec("int64", [1, 2, 2, 2], np.full(8, 200, dtype=np.int64))),
                                 ("output_size", [4, 4])], ["error"]),
        "RuntimeError", "Found an invalid max index: 200"),
    ERR("err_index_dtype", lambda g: ([("self", t(g, [1, 2, 2, 2])), ("indices", t(g, [1, 2, 2, 2], "int32", kind="small")),
                                       ("output_size", [4, 4])], ["error"]),
        "RuntimeError", "elements in indices should be type int64"),
])

fam.op("max_pool2d", [
    S("basic", lambda g: (pool_args(g, [2, 3, 6, 6], "float32", None, kernel_size=[3, 3], stride=[2, 2],
                                    padding=[1, 1]), [])),
    S("ceil_dilation", lambda g: (pool_args(g, [1, 2, 7, 7], "float32", None, kernel_size=[2, 2], stride=[2, 2],
                                            padding=[0, 0], dilation=[2, 2], ceil_mode=True), [])),
    S("special_values", lambda g: ([("self", t(g, [1, 2, 4, 4], kind="special")), ("kernel_size", [2, 2])],
                                   ["special"])),
    S("f64_noncontig", lambda g: (pool_args(g, [2, 2, 5, 6], "float64", "any", kernel_size=[2, 3]),
                                  ["float64", "noncontig"])),
], errors=[
    ERR("err_pad", lambda g: (pool_args(g, [2, 3, 5, 5], "float32", None, kernel_size=[2, 2], stride=[],
                                        padding=[2]), ["error"]),
        "RuntimeError", "pad should be at most half of kernel size"),
    ERR("err_dims", lambda g: (pool_args(g, [5, 5], "float32", None, kernel_size=[2, 2]), ["error"]),
        "RuntimeError", "non-empty 3D or 4D (batch mode) tensor expected for input"),
    ERR("err_dilation", lambda g: (pool_args(g, [2, 3, 5, 5], "float32", None, kernel_size=[2, 2], stride=[],
                                             padding=[0], dilation=[0]), ["error"]),
        "RuntimeError", "dilation should be greater than zero"),
    ERR("err_dtype", lambda g: (pool_args(g, [2, 3, 5, 5], "int64", None, kernel_size=[2, 2]), ["error"]),
        "RuntimeError", "\"max_pool2d\" not implemented for 'Long'"),
])
fam.op("max_pool1d", [
    S("basic", lambda g: (pool_args(g, [2, 3, 9], "float32", None, kernel_size=[3], stride=[2],
                                    padding=[1]), [])),
    S("unbatched_dilation", lambda g: (pool_args(g, [3, 10], "float32", None, kernel_size=[2], stride=[],
                                                 padding=[0], dilation=[2]), [])),
])
fam.op("avg_pool1d", [
    S("basic", lambda g: (pool_args(g, [2, 3, 9], "float32", None, kernel_size=[3], stride=[2],
                                    padding=[1]), [])),
    S("ceil_no_count_pad", lambda g: (pool_args(g, [3, 8], "float64", None, kernel_size=[3], stride=[2],
                                                padding=[1], ceil_mode=True, count_include_pad=False),
                                      ["float64"])),
])

# ---- 3-d average and adaptive pooling ----

fam.op("avg_pool3d", [
    S("basic", lambda g: (pool_args(g, [2, 3, 4, 4, 4], "float32", None, kernel_size=[2, 2, 2]), ["3d"])),
    S("pad_ceil", lambda g: (pool_args(g, [1, 2, 5, 6, 5], "float32", None, kernel_size=[3, 3, 2],
                                       stride=[2, 2, 1], padding=[1, 1, 1], ceil_mode=True), ["3d"])),
    S("no_count_pad_unbatched", lambda g: (pool_args(g, [2, 5, 4, 5], "float32", None, kernel_size=[3, 2, 3],
                                                     stride=[2, 1, 2], padding=[1, 1, 1], ceil_mode=False,
                                                     count_include_pad=False), ["3d"])),
    S("divisor", lambda g: (pool_args(g, [1, 2, 4, 4, 4], "float32", None, kernel_size=[2], stride=[1],
                                      padding=[0], ceil_mode=False, count_include_pad=True,
                                      divisor_override=3), ["3d"])),
    S("f64_noncontig", lambda g: (pool_args(g, [2, 3, 4, 5, 4], "float64", "any", kernel_size=[2, 2, 2],
                                            stride=[1, 2, 1]), ["3d", "float64", "noncontig"])),
    S("int64", lambda g: (pool_args(g, [1, 2, 4, 4, 4], "int64", None, kernel_size=[3, 3, 3], stride=[1],
                                    padding=[1]), ["3d", "integer"])),
    S("empty_batch", lambda g: (pool_args(g, [0, 2, 4, 4, 4], "float32", None, kernel_size=[2, 2, 2]),
                                ["3d", "empty"])),
], errors=[
    ERR("err_kernel_list", lambda g: (pool_args(g, [1, 2, 4, 4, 4], "float32", None, kernel_size=[2, 2]),
                                      ["error"]),
        "RuntimeError", "avg_pool3d: kernel_size must be a single int, or a tuple of three ints"),
    ERR("err_dims", lambda g: (pool_args(g, [4, 4, 4], "float32", None, kernel_size=[2, 2, 2]), ["error"]),
        "RuntimeError", "non-empty 4D or 5D (batch mode) tensor expected for input"),
    ERR("err_pad", lambda g: (pool_args(g, [1, 2, 4, 4, 4], "float32", None, kernel_size=[2, 2, 2], stride=[],
                                        padding=[2]), ["error"]),
        "RuntimeError", "pad should be at most half of kernel size"),
    ERR("err_divisor", lambda g: (pool_args(g, [1, 2, 4, 4, 4], "float32", None, kernel_size=[2, 2, 2], stride=[],
                                            padding=[0], ceil_mode=False, count_include_pad=True,
                                            divisor_override=0), ["error"]),
        "RuntimeError", "divisor must be not zero"),
    ERR("err_small", lambda g: (pool_args(g, [1, 2, 4, 4, 4], "float32", None, kernel_size=[5, 5, 5]), ["error"]),
        "RuntimeError", "input image (T: 4 H: 4 W: 4) smaller than kernel size (kT: 5 kH: 5 kW: 5)"),
    ERR("err_empty_channels", lambda g: (pool_args(g, [1, 0, 4, 4, 4], "float32", None, kernel_size=[2, 2, 2]),
                                         ["error"]),
        "RuntimeError", "Expected input's non-batch dimensions to have positive length"),
    ERR("err_dtype", lambda g: (pool_args(g, [1, 2, 4, 4, 4], "int32", None, kernel_size=[2, 2, 2]), ["error"]),
        "RuntimeError", "\"avg_pool3d_out_frame\" not implemented for 'Int'"),
])


def avg3d_bwd(name, shape, k, s, p, ceil, cip, div, dtype="float32"):
    def fn(g):
        x = t(g, shape, dtype)
        out = A.avg_pool3d(opgen.dec_value(x.to_json()), k, s, p, ceil, cip, div)
        return ([("grad_output", t(g, list(out.shape), dtype)), ("self", x), ("kernel_size", k),
                 ("stride", s), ("padding", p), ("ceil_mode", ceil), ("count_include_pad", cip),
                 ("divisor_override", div)], ["3d"])
    return S(name, fn)


fam.op("avg_pool3d_backward", [
    avg3d_bwd("basic", [2, 2, 4, 4, 4], [2, 2, 2], [2, 2, 2], [0, 0, 0], False, True, None),
    avg3d_bwd("overlap_pad_ceil", [1, 2, 5, 4, 5], [3, 3, 3], [2, 1, 2], [1, 1, 1], True, False, None),
    avg3d_bwd("divisor_f64", [1, 1, 4, 5, 4], [2, 3, 2], [1, 1, 1], [1, 1, 1], False, True, 5, "float64"),
    avg3d_bwd("int64", [1, 2, 4, 4, 4], [3, 3, 3], [1, 1, 1], [1, 1, 1], False, True, None, "int64"),
], errors=[
    ERR("err_grad_shape", lambda g: ([("grad_output", t(g, [1, 2, 3, 3, 3])), ("self", t(g, [1, 2, 4, 4, 4])),
                                      ("kernel_size", [2, 2, 2]), ("stride", [2, 2, 2]), ("padding", [0, 0, 0]),
                                      ("ceil_mode", False), ("count_include_pad", True),
                                      ("divisor_override", None)], ["error"]),
        "RuntimeError", "size"),
])

fam.op("_adaptive_avg_pool3d", [
    S("uneven", lambda g: ([("self", t(g, [2, 3, 7, 5, 6])), ("output_size", [3, 2, 4])], ["3d"])),
    S("upsample_unbatched", lambda g: ([("self", t(g, [2, 3, 2, 3])), ("output_size", [5, 3, 4])], ["3d"])),
    S("one_f64_noncontig", lambda g: ([("self", t(g, [1, 2, 4, 4, 3], "float64", "any")), ("output_size", [1, 1, 1])],
                                      ["3d", "float64", "noncontig"])),
    S("zero_size", lambda g: ([("self", t(g, [2, 3, 4, 4, 4])), ("output_size", [0, 2, 2])], ["3d", "empty"])),
], errors=[
    ERR("err_size_len", lambda g: ([("self", t(g, [2, 3, 4, 4, 4])), ("output_size", [2, 2])], ["error"]),
        "RuntimeError", "adaptive_avg_pool3d: output_size must be 3"),
    ERR("err_dims", lambda g: ([("self", t(g, [4, 4, 4])), ("output_size", [2, 2, 2])], ["error"]),
        "RuntimeError", "adaptive_avg_pool3d(): Expected 4D or 5D tensor, but got [4, 4, 4]"),
    ERR("err_empty", lambda g: ([("self", t(g, [2, 3, 0, 4, 4])), ("output_size", [2, 2, 2])], ["error"]),
        "RuntimeError", "Expected input to have non-zero size for non-batch dimensions"),
    ERR("err_dtype", lambda g: ([("self", t(g, [2, 3, 4, 4, 4], "int64")), ("output_size", [2, 2, 2])], ["error"]),
        "RuntimeError", "\"adaptive_avg_pool3d_cpu\" not implemented for 'Long'"),
])
fam.op("adaptive_max_pool3d", [
    S("uneven", lambda g: ([("self", t(g, [2, 3, 7, 5, 6])), ("output_size", [3, 2, 4])], ["3d"])),
    S("upsample_f64_unbatched", lambda g: ([("self", t(g, [3, 2, 3, 2], "float64")), ("output_size", [4, 5, 3])],
                                           ["3d", "float64"])),
    S("nan", lambda g: ([("self", t(g, [1, 2, 4, 4, 4], kind="special")), ("output_size", [2, 2, 2])],
                        ["3d", "special"])),
    S("noncontig", lambda g: ([("self", t(g, [2, 2, 4, 5, 4], view="any")), ("output_size", [2, 3, 2])],
                              ["3d", "noncontig"])),
], errors=[
    ERR("err_size_len", lambda g: ([("self", t(g, [2, 3, 4, 4, 4])), ("output_size", [2, 2])], ["error"]),
        "RuntimeError", "adaptive_max_pool3d(): internal error: output_size.size() must be 3"),
    ERR("err_dims", lambda g: ([("self", t(g, [4, 4])), ("output_size", [2, 2, 2])], ["error"]),
        "RuntimeError", "adaptive_max_pool3d(): Expected 4D or 5D tensor"),
    ERR("err_dtype", lambda g: ([("self", t(g, [2, 3, 4, 4, 4], "int64")), ("output_size", [2, 2, 2])], ["error"]),
        "RuntimeError", "\"adaptive_max_pool3d_cpu\" not implemented for 'Long'"),
])


def adaptive3d_bwd(name, shape, size, dtype="float32", maxpool=False):
    def fn(g):
        x = t(g, shape, dtype)
        xt = opgen.dec_value(x.to_json())
        if maxpool:
            out, idx = A.adaptive_max_pool3d(xt, size)
            return ([("grad_output", t(g, list(out.shape), dtype)), ("self", x),
                     ("indices", spec_of(idx))], ["3d"])
        out = A._adaptive_avg_pool3d(xt, size)
        return ([("grad_output", t(g, list(out.shape), dtype)), ("self", x)], ["3d"])
    return S(name, fn)


fam.op("_adaptive_avg_pool3d_backward", [
    adaptive3d_bwd("uneven", [2, 2, 7, 5, 6], [3, 2, 4]),
    adaptive3d_bwd("upsample_f64", [1, 2, 2, 3, 2], [4, 5, 3], "float64"),
])
fam.op("adaptive_max_pool3d_backward", [
    adaptive3d_bwd("uneven", [2, 2, 7, 5, 6], [3, 2, 4], maxpool=True),
    adaptive3d_bwd("overlap_f64", [1, 2, 3, 4, 3], [4, 5, 4], "float64", maxpool=True),
])

# ---- pixel_shuffle, pixel_unshuffle ----

fam.op("pixel_shuffle", [
    S("basic", lambda g: ([("self", t(g, [2, 8, 2, 3])), ("upscale_factor", 2)], [])),
    S("three", lambda g: ([("self", t(g, [18, 2, 2])), ("upscale_factor", 3)], [])),
    S("batch_dims_f64_noncontig", lambda g: ([("self", t(g, [2, 2, 8, 3, 2], "float64", "any")),
                                              ("upscale_factor", 2)], ["float64", "noncontig"])),
    S("int64", lambda g: ([("self", t(g, [1, 4, 2, 2], "int64", kind="small")), ("upscale_factor", 2)],
                          ["integer"])),
    S("factor_one", lambda g: ([("self", t(g, [1, 3, 2, 2])), ("upscale_factor", 1)], [])),
    S("empty", lambda g: ([("self", t(g, [0, 4, 2, 2])), ("upscale_factor", 2)], ["empty"])),
], errors=[
    ERR("err_dims", lambda g: ([("self", t(g, [8, 2])), ("upscale_factor", 2)], ["error"]), "RuntimeError",
        "pixel_shuffle expects input to have at least 3 dimensions, but got input with 2 dimension(s)"),
    ERR("err_factor", lambda g: ([("self", t(g, [1, 8, 2, 3])), ("upscale_factor", 0)], ["error"]), "RuntimeError",
        "pixel_shuffle expects a positive upscale_factor, but got 0"),
    ERR("err_channels", lambda g: ([("self", t(g, [1, 7, 2, 3])), ("upscale_factor", 2)], ["error"]), "RuntimeError",
        "input.size(-3)=7 is not divisible by 4"),
])
fam.op("pixel_unshuffle", [
    S("basic", lambda g: ([("self", t(g, [2, 2, 4, 6])), ("downscale_factor", 2)], [])),
    S("three", lambda g: ([("self", t(g, [2, 6, 3])), ("downscale_factor", 3)], [])),
    S("batch_dims_f64_noncontig", lambda g: ([("self", t(g, [2, 2, 2, 4, 2], "float64", "any")),
                                              ("downscale_factor", 2)], ["float64", "noncontig"])),
    S("int64", lambda g: ([("self", t(g, [1, 1, 4, 4], "int64", kind="small")), ("downscale_factor", 2)],
                          ["integer"])),
    S("empty", lambda g: ([("self", t(g, [0, 2, 4, 4])), ("downscale_factor", 2)], ["empty"])),
], errors=[
    ERR("err_dims", lambda g: ([("self", t(g, [4, 6])), ("downscale_factor", 2)], ["error"]), "RuntimeError",
        "pixel_unshuffle expects input to have at least 3 dimensions, but got input with 2 dimension(s)"),
    ERR("err_factor", lambda g: ([("self", t(g, [1, 2, 4, 6])), ("downscale_factor", -1)], ["error"]),
        "RuntimeError", "pixel_unshuffle expects a positive downscale_factor, but got -1"),
    ERR("err_height", lambda g: ([("self", t(g, [1, 2, 5, 6])), ("downscale_factor", 2)], ["error"]), "RuntimeError",
        "pixel_unshuffle expects height to be divisible by downscale_factor, but input.size(-2)=5 is not divisible by 2"),
    ERR("err_width", lambda g: ([("self", t(g, [1, 2, 4, 5])), ("downscale_factor", 2)], ["error"]), "RuntimeError",
        "pixel_unshuffle expects width to be divisible by downscale_factor, but input.size(-1)=5 is not divisible by 2"),
])

fam.op("channel_shuffle", [
    S("basic", lambda g: ([("self", t(g, [2, 6, 3, 2])), ("groups", 3)], [])),
    S("three_dims_int64", lambda g: ([("self", t(g, [2, 4, 3], "int64", kind="small")), ("groups", 2)], ["integer"])),
    S("f64_noncontig", lambda g: ([("self", t(g, [2, 4, 3, 2], "float64", "transpose")), ("groups", 2)],
                                  ["float64", "noncontig"])),
    S("empty_batch", lambda g: ([("self", t(g, [0, 6, 2])), ("groups", 2)], ["empty"])),
], errors=[
    ERR("err_dims", lambda g: ([("self", t(g, [2, 6])), ("groups", 2)], ["error"]), "RuntimeError",
        "channel_shuffle expects input with > 2 dims, but got input with sizes [2, 6]"),
    ERR("err_groups", lambda g: ([("self", t(g, [2, 6, 3])), ("groups", 0)], ["error"]), "RuntimeError",
        "Number of groups to divide channels in must be positive. Value of groups:0"),
    ERR("err_divisible", lambda g: ([("self", t(g, [2, 6, 3])), ("groups", 4)], ["error"]), "RuntimeError",
        "Number of channels must be divisible by groups. Got 6 channels and 4 groups."),
])

# ---- im2col (nn.Unfold), col2im (nn.Fold) ----

def im2col_args(g, shape, k, d, p, s, dtype="float32", view=None):
    return [("self", t(g, shape, dtype, view)), ("kernel_size", k), ("dilation", d), ("padding", p), ("stride", s)]


def col2im_args(g, shape, out, k, d, p, s, dtype="float32", view=None):
    return [("self", t(g, shape, dtype, view)), ("output_size", out), ("kernel_size", k), ("dilation", d),
            ("padding", p), ("stride", s)]


fam.op("im2col", [
    S("basic", lambda g: (im2col_args(g, [2, 3, 5, 6], [2, 3], [1, 1], [0, 1], [1, 2]), [])),
    S("dilation_unbatched", lambda g: (im2col_args(g, [2, 7, 6], [3, 2], [2, 2], [1, 0], [1, 1]), [])),
    S("f64_noncontig", lambda g: (im2col_args(g, [2, 2, 5, 5], [2, 2], [1, 1], [1, 1], [2, 2], "float64", "any"),
                                  ["float64", "noncontig"])),
    S("empty_batch", lambda g: (im2col_args(g, [0, 3, 5, 6], [2, 3], [1, 1], [0, 1], [1, 2]), ["empty"])),
], errors=[
    ERR("err_kernel_len", lambda g: (im2col_args(g, [2, 3, 5, 6], [2], [1, 1], [0, 1], [1, 2]), ["error"]),
        "RuntimeError", "It is expected kernel_size equals to 2, but got size 1"),
    ERR("err_kernel", lambda g: (im2col_args(g, [2, 3, 5, 6], [0, 3], [1, 1], [0, 1], [1, 2]), ["error"]),
        "RuntimeError", "kernel size should be greater than zero, but got kernel_height: 0 kernel_width: 3"),
    ERR("err_padding", lambda g: (im2col_args(g, [2, 3, 5, 6], [2, 3], [1, 1], [-1, 1], [1, 2]), ["error"]),
        "RuntimeError", "padding should be non-negative, but got pad_height: -1 pad_width: 1"),
    ERR("err_too_small", lambda g: (im2col_args(g, [2, 3, 5, 6], [7, 3], [1, 1], [0, 1], [1, 2]), ["error"]),
        "RuntimeError", "calculated shape of the array of sliding blocks as (-1, 3), but its components must be "
        "at least one."),
    ERR("err_empty", lambda g: (im2col_args(g, [2, 0, 5, 6], [2, 3], [1, 1], [0, 1], [1, 2]), ["error"]),
        "RuntimeError", "Expected 3D or 4D (batch mode) tensor with possibly 0 batch size and other non-zero "
        "dimensions for input, but got: [2, 0, 5, 6]"),
    ERR("err_dtype", lambda g: (im2col_args(g, [2, 3, 5, 6], [2, 3], [1, 1], [0, 1], [1, 2], "int64"), ["error"]),
        "RuntimeError", "\"im2col_out_cpu\" not implemented for 'Long'"),
])
fam.op("col2im", [
    S("basic", lambda g: (col2im_args(g, [2, 12, 20], [5, 6], [2, 2], [1, 1], [0, 0], [1, 1]), [])),
    S("overlap_pad_stride", lambda g: (col2im_args(g, [1, 18, 12], [5, 6], [2, 3], [1, 1], [0, 1], [1, 2]), [])),
    S("dilation_unbatched_f64", lambda g: (col2im_args(g, [8, 35], [7, 6], [2, 2], [2, 1], [1, 0], [1, 1],
                                                       "float64"), ["float64"])),
    S("noncontig", lambda g: (col2im_args(g, [2, 12, 20], [5, 6], [2, 2], [1, 1], [0, 0], [1, 1], view="any"),
                              ["noncontig"])),
    S("empty_batch", lambda g: (col2im_args(g, [0, 12, 20], [5, 6], [2, 2], [1, 1], [0, 0], [1, 1]), ["empty"])),
], errors=[
    ERR("err_blocks", lambda g: (col2im_args(g, [2, 12, 20], [6, 6], [2, 2], [1, 1], [0, 0], [1, 1]), ["error"]),
        "RuntimeError", "expected size of input's dimension 2 to match the calculated number of sliding blocks 5 * "
        "5 = 25, but got input.size(2)=20."),
    ERR("err_divisible", lambda g: (col2im_args(g, [2, 11, 20], [5, 6], [2, 2], [1, 1], [0, 0], [1, 1]), ["error"]),
        "RuntimeError", "Expected size of input's dimension 1 to be divisible by the product of kernel_size, but "
        "got input.size(1)=11 and kernel_size=(2, 2)."),
    ERR("err_output_len", lambda g: (col2im_args(g, [2, 12, 20], [5], [2, 2], [1, 1], [0, 0], [1, 1]), ["error"]),
        "RuntimeError", "It is expected output_size equals to 2, but got size 1"),
    ERR("err_stride", lambda g: (col2im_args(g, [2, 12, 20], [5, 6], [2, 2], [1, 1], [0, 0], [0, 1]), ["error"]),
        "RuntimeError", "stride should be greater than zero, but got stride_height: 0 stride_width: 1"),
    ERR("err_empty", lambda g: (col2im_args(g, [2, 0, 20], [5, 6], [2, 2], [1, 1], [0, 0], [1, 1]), ["error"]),
        "RuntimeError", "Expected 2D or 3D (batch mode) tensor for input with possibly 0 batch size and non-zero "
        "dimensions for input, but got: [2, 0, 20]"),
    ERR("err_dtype", lambda g: (col2im_args(g, [2, 12, 20], [5, 6], [2, 2], [1, 1], [0, 0], [1, 1], "int64"),
                                ["error"]), "RuntimeError", "\"col2im_out_cpu\" not implemented for 'Long'"),
])

# ---- grid_sampler_2d ----

def grid_args(g, in_shape, out_hw, mode, pad, align, dtype="float32", view=None, scale=1.3):
    n = in_shape[0]
    grid = TSpec(dtype, [n] + out_hw + [2],
                 (g.rng.random(n * out_hw[0] * out_hw[1] * 2) * 2 * scale - scale).astype(dtype))
    return [("input", t(g, in_shape, dtype, view)), ("grid", grid), ("interpolation_mode", mode),
            ("padding_mode", pad), ("align_corners", align)]


GRID_CASES = []
for gm, gmn in ((0, "bilinear"), (1, "nearest"), (2, "bicubic")):
    for gp, gpn in ((0, "zeros"), (1, "border"), (2, "reflection")):
        for ga in (False, True):
            GRID_CASES.append(S("%s_%s%s" % (gmn, gpn, "_align" if ga else ""),
                                lambda g, gm=gm, gp=gp, ga=ga: (grid_args(g, [2, 3, 4, 5], [3, 4], gm, gp, ga), [])))
fam.op("grid_sampler_2d", GRID_CASES + [
    S("f64_noncontig", lambda g: (grid_args(g, [1, 2, 5, 4], [4, 3], 0, 1, False, "float64", "any"),
                                  ["float64", "noncontig"])),
    S("f64_bicubic_reflection", lambda g: (grid_args(g, [1, 2, 3, 4], [3, 3], 2, 2, True, "float64", scale=3.0),
                                           ["float64"])),
    S("far_outside", lambda g: (grid_args(g, [1, 1, 3, 3], [2, 3], 0, 0, False, scale=6.0), [])),
    S("empty_channels", lambda g: (grid_args(g, [2, 0, 4, 5], [3, 4], 0, 0, False), ["empty"])),
], errors=[
    ERR("err_batch", lambda g: ([("input", t(g, [1, 3, 4, 5])), ("grid", t(g, [2, 3, 4, 2])),
                                 ("interpolation_mode", 0), ("padding_mode", 0), ("align_corners", False)],
                                ["error"]), "RuntimeError",
        "grid_sampler(): expected grid and input to have same batch size, but got input with sizes [1, 3, 4, 5] "
        "and grid with sizes [2, 3, 4, 2]"),
    ERR("err_last_dim", lambda g: ([("input", t(g, [2, 3, 4, 5])), ("grid", t(g, [2, 3, 4, 1])),
                                    ("interpolation_mode", 0), ("padding_mode", 0), ("align_corners", False)],
                                   ["error"]), "RuntimeError",
        "grid_sampler(): expected grid to have size 2 in last dimension, but got grid with sizes [2, 3, 4, 1]"),
    ERR("err_empty", lambda g: ([("input", t(g, [2, 3, 0, 5])), ("grid", t(g, [2, 3, 4, 2])),
                                 ("interpolation_mode", 0), ("padding_mode", 0), ("align_corners", False)],
                                ["error"]), "RuntimeError",
        "grid_sampler(): expected input to have non-empty spatial dimensions, but input has sizes [2, 3, 0, 5] "
        "with dimension 2 being empty"),
    ERR("err_dtype", lambda g: ([("input", t(g, [2, 3, 4, 5], "int64")), ("grid", t(g, [2, 3, 4, 2], "int64")),
                                 ("interpolation_mode", 0), ("padding_mode", 0), ("align_corners", False)],
                                ["error"]), "RuntimeError", "grid_sampler_2d_cpu not implemented for Long"),
    ERR("err_grid_dtype", lambda g: ([("input", t(g, [2, 3, 4, 5])), ("grid", t(g, [2, 3, 4, 2], "float64")),
                                      ("interpolation_mode", 0), ("padding_mode", 0), ("align_corners", False)],
                                     ["error"]), "RuntimeError", "expected scalar type Float but found Double"),
])

# ---- upsampling ----

UPSAMPLE = [("upsample_nearest1d", 1, False), ("upsample_nearest2d", 2, False), ("upsample_nearest3d", 3, False),
            ("upsample_linear1d", 1, True), ("upsample_bilinear2d", 2, True), ("upsample_trilinear3d", 3, True),
            ("upsample_bicubic2d", 2, True)]
SPATIAL = {1: [7], 2: [5, 6], 3: [4, 3, 5]}


def up_args(g, nd, linear, shape, out_size, align, scales, dtype="float32", view=None):
    args = [("self", t(g, shape, dtype, view)), ("output_size", out_size)]
    if linear:
        args.append(("align_corners", align))
    names = {1: ["scales"], 2: ["scales_h", "scales_w"], 3: ["scales_d", "scales_h", "scales_w"]}[nd]
    return args + list(zip(names, scales if scales is not None else [None] * nd))


def up_vec_args(g, linear, shape, out_size, align, scale_factors, dtype="float32"):
    args = [("input", t(g, shape, dtype)), ("output_size", out_size)]
    if linear:
        args.append(("align_corners", align))
    return args + [("scale_factors", scale_factors)]


def up_bwd(name, op, nd, linear, in_shape, out_size, align, scales, dtype="float32"):
    def fn(g):
        grad = t(g, in_shape[:2] + out_size, dtype)
        args = [("grad_output", grad), ("output_size", out_size), ("input_size", in_shape)]
        if linear:
            args.append(("align_corners", align))
        names = {1: ["scales"], 2: ["scales_h", "scales_w"], 3: ["scales_d", "scales_h", "scales_w"]}[nd]
        return args + list(zip(names, scales if scales is not None else [None] * nd)), ["upsample"]
    return S(name, fn)


def upsample_ops(op, nd, linear):
    """The plain operator, .vec and _backward of one mode (a function: the scenarios' lambdas
    capture its arguments)."""
    sp = SPATIAL[nd]
    twice = [2 * v for v in sp]
    odd = [v + 3 for v in sp]
    down = [max(1, v // 2) for v in sp]
    aligns = [False, True] if linear else [None]
    cases = []
    for align in aligns:
        sfx = "" if align is None else ("_align" if align else "")
        cases += [
            S("up_twice" + sfx, lambda g, a=align: (up_args(g, nd, linear, [2, 3] + sp, twice, a, None), [])),
            S("up_odd" + sfx, lambda g, a=align: (up_args(g, nd, linear, [1, 2] + sp, odd, a, None), [])),
            S("down" + sfx, lambda g, a=align: (up_args(g, nd, linear, [2, 2] + sp, down, a, None), [])),
        ]
    cases += [
        S("same_size", lambda g: (up_args(g, nd, linear, [1, 2] + sp, sp, False, None), [])),
        S("scales", lambda g: (up_args(g, nd, linear, [1, 2] + sp, [v * 2 - 1 for v in sp], False,
                                       [1.7] * nd), ["scales"])),
        S("f64_noncontig", lambda g: (up_args(g, nd, linear, [2, 2] + sp, odd, False, None, "float64", "any"),
                                      ["float64", "noncontig"])),
        S("empty_batch", lambda g: (up_args(g, nd, linear, [0, 2] + sp, odd, False, None), ["empty"])),
    ]
    errors = [
        ERR("err_output_len", lambda g: (up_args(g, nd, linear, [1, 2] + sp, odd + [2], False, None), ["error"]),
            "RuntimeError", "It is expected output_size equals to %d, but got size %d" % (nd, nd + 1)),
        ERR("err_input_dims", lambda g: (up_args(g, nd, linear, [2] + sp, odd, False, None), ["error"]),
            "RuntimeError", "It is expected input_size equals to %d, but got size %d" % (nd + 2, nd + 1)),
        ERR("err_zero_output", lambda g: (up_args(g, nd, linear, [1, 2] + sp, [0] + odd[1:], False, None), ["error"]),
            "RuntimeError", "Input and output sizes should be greater than 0"),
        ERR("err_empty_channels", lambda g: (up_args(g, nd, linear, [1, 0] + sp, odd, False, None), ["error"]),
            "RuntimeError", "Non-empty %dD data tensor expected" % (nd + 2)),
        ERR("err_dtype", lambda g: (up_args(g, nd, linear, [1, 2] + sp, odd, False, None, "int64"), ["error"]),
            "RuntimeError", "not implemented for 'Long'"),
    ]
    fam.op(op, cases, errors=errors)
    fam.op(op + ".vec", [
        S("output_size", lambda g: (up_vec_args(g, linear, [2, 2] + sp, odd, False, None), [])),
        S("scale_factors", lambda g: (up_vec_args(g, linear, [1, 2] + sp, None, True, [2.0] * nd), [])),
        S("scale_factors_fraction", lambda g: (up_vec_args(g, linear, [1, 3] + sp, None, False, [1.7, 0.6, 2.5][:nd]),
                                               ["scales"])),
    ], errors=[
        ERR("err_both", lambda g: (up_vec_args(g, linear, [1, 2] + sp, odd, False, [2.0] * nd), ["error"]),
            "RuntimeError", "Must specify exactly one of output_size and scale_factors"),
        ERR("err_neither", lambda g: (up_vec_args(g, linear, [1, 2] + sp, None, False, None), ["error"]),
            "RuntimeError", "Must specify exactly one of output_size and scale_factors"),
        ERR("err_scale_len", lambda g: (up_vec_args(g, linear, [1, 2] + sp, None, False, [2.0] * (nd + 1)),
                                        ["error"]),
            "RuntimeError", "scale_factors->size()) == spatial_dimensions to be true"),
    ])
    fam.op(op + "_backward", [
        up_bwd("up_twice", op, nd, linear, [2, 3] + sp, twice, False, None),
        up_bwd("up_odd", op, nd, linear, [1, 2] + sp, odd, False, None),
        up_bwd("down", op, nd, linear, [2, 2] + sp, down, False, None),
        up_bwd("scales", op, nd, linear, [1, 2] + sp, [v * 2 - 1 for v in sp], False, [1.7] * nd),
        up_bwd("f64_align", op, nd, linear, [1, 2] + sp, odd, True, None, "float64"),
    ], errors=[
        ERR("err_grad_shape", lambda g: ([("grad_output", t(g, [1, 2] + [v + 1 for v in odd])), ("output_size", odd),
                                          ("input_size", [1, 2] + sp)]
                                         + ([("align_corners", False)] if linear else []), ["error"]),
            "RuntimeError", "Expected" if nd == 1 else "Expected grad_output to have the same shape as output"),
        ERR("err_input_size", lambda g: ([("grad_output", t(g, [1, 2] + odd)), ("output_size", odd),
                                          ("input_size", [2] + sp)]
                                         + ([("align_corners", False)] if linear else []), ["error"]),
            "RuntimeError", "It is expected input_size equals to %d, but got size %d" % (nd + 2, nd + 1)),
    ])

for up_op, up_nd, up_linear in UPSAMPLE:
    upsample_ops(up_op, up_nd, up_linear)

# ---- padding ----

fam.op("constant_pad_nd", [
    S("2d", lambda g: ([("self", t(g, [2, 3, 4])), ("pad", [1, 2, 0, 1]), ("value", 1.5)], [])),
    S("negative", lambda g: ([("self", t(g, [2, 3, 5, 5])), ("pad", [-2, 1, 1, -1])], [])),
    S("all_negative", lambda g: ([("self", t(g, [3, 6])), ("pad", [-1, -2])], [])),
    S("int64", lambda g: ([("self", t(g, [2, 3], "int64")), ("pad", [1, 1, 1, 1]), ("value", 7)], ["integer"])),
    S("bool", lambda g: ([("self", t(g, [4], "bool")), ("pad", [2, 0]), ("value", True)], ["bool"])),
    S("noncontig", lambda g: ([("self", t(g, [3, 4, 2], view="any")), ("pad", [1, 0, 0, 2, 1, 1])],
                              ["noncontig"])),
], errors=[
    ERR("err_odd", lambda g: ([("self", t(g, [2, 3])), ("pad", [1, 2, 3])], ["error"]),
        "RuntimeError", "Length of pad must be even but instead it equals 3"),
    ERR("err_too_long", lambda g: ([("self", t(g, [2, 3])), ("pad", [1, 1, 1, 1, 1, 1])], ["error"]),
        "RuntimeError", "Length of pad should be no more than twice the number of dimensions"),
    ERR("err_negative_size", lambda g: ([("self", t(g, [2, 5])), ("pad", [-3, -3])], ["error"]),
        "RuntimeError", "start (0) + length (-1) exceeds dimension size (2)."),
])

fam.op("pad", [
    S("constant", lambda g: ([("self", t(g, [2, 3, 4])), ("pad", [1, 2]), ("mode", "constant"), ("value", 2.5)], [])),
    S("constant_default", lambda g: ([("self", t(g, [2, 3])), ("pad", [1, 0, -1, 1])], [])),
    S("reflect_2d", lambda g: ([("self", t(g, [1, 2, 4, 5])), ("pad", [1, 2, 2, 1]), ("mode", "reflect")], [])),
    S("replicate_1d", lambda g: ([("self", t(g, [2, 3, 4])), ("pad", [3, 1]), ("mode", "replicate")], [])),
    S("replicate_3d_f64", lambda g: ([("self", t(g, [2, 2, 3, 3], "float64")), ("pad", [1, 1, 0, 2, 1, 0]),
                                      ("mode", "replicate")], ["float64"])),
], errors=[
    ERR("err_mode", lambda g: ([("self", t(g, [2, 3, 4])), ("pad", [1, 1]), ("mode", "mirror")], ["error"]),
        "NotImplementedError", "Unrecognised padding mode mirror"),
    ERR("err_value", lambda g: ([("self", t(g, [2, 3, 4])), ("pad", [1, 1]), ("mode", "reflect"), ("value", 1.0)],
                                ["error"]), "RuntimeError", "doesn't take in value argument"),
    ERR("err_odd", lambda g: ([("self", t(g, [2, 3, 4])), ("pad", [1, 1, 1]), ("mode", "reflect")], ["error"]),
        "RuntimeError", "Padding length must be divisible by 2"),
])


def pad_case(name, shape, padding, dtype="float32", view=None):
    return S(name, lambda g: ([("self", t(g, shape, dtype, view)), ("padding", padding)], []))


def pad_bwd(op, name, shape, padding, dtype="float32"):
    def fn(g):
        x = t(g, shape, dtype)
        out = getattr(A, op)(opgen.dec_value(x.to_json()), padding)
        return ([("grad_output", t(g, list(out.shape), dtype)), ("self", x), ("padding", padding)], [])
    return S(name, fn)


for mode in ("reflection", "replication"):
    fam.op("%s_pad1d" % mode, [
        pad_case("basic", [2, 3, 5], [2, 3]),
        pad_case("unbatched_f64", [3, 4], [1, 0], "float64"),
        pad_case("negative", [2, 6], [-2, 1]),
    ], errors=[
        ERR("err_dims", lambda g: ([("self", t(g, [2, 3, 0])), ("padding", [1, 1])], ["error"]),
            "RuntimeError", "2D or 3D (batch mode) tensor expected for input" if mode == "reflection"
            else "Expected 2D or 3D (batch mode) tensor with possibly 0 batch size"),
    ])
    fam.op("%s_pad2d" % mode, [
        pad_case("basic", [2, 3, 4, 5], [1, 2, 3, 1]),
        pad_case("unbatched_noncontig", [2, 5, 4], [2, 1, 0, 2], view="any"),
        pad_case("f64_negative", [1, 2, 5, 5], [-1, 2, 1, -2], "float64"),
    ], errors=[
        ERR("err_int", lambda g: ([("self", t(g, [2, 3, 4, 4], "int64")), ("padding", [1, 1, 1, 1])], ["error"]),
            "RuntimeError", "\"%s\" not implemented for 'Long'" % ("reflection_pad2d" if mode == "reflection"
                                                                   else "replication_pad2d_cpu")),
    ] + ([ERR("err_pad_too_big", lambda g: ([("self", t(g, [2, 3, 5, 5])), ("padding", [5, 1, 1, 1])], ["error"]),
              "RuntimeError", "Padding size should be less than the corresponding input dimension")]
         if mode == "reflection" else []))
    fam.op("%s_pad3d" % mode, [
        pad_case("basic", [1, 2, 3, 4, 3], [1, 2, 2, 1, 1, 2]),
        pad_case("unbatched", [2, 3, 3, 4], [0, 1, 1, 0, 2, 2], "float64"),
    ])
    fam.op("%s_pad1d_backward" % mode, [pad_bwd("%s_pad1d" % mode, "basic", [2, 3, 5], [2, 3])])
    fam.op("%s_pad2d_backward" % mode, [
        pad_bwd("%s_pad2d" % mode, "basic", [2, 3, 4, 5], [1, 2, 3, 1]),
        pad_bwd("%s_pad2d" % mode, "f64_negative", [1, 2, 5, 5], [-1, 2, 1, -2], "float64"),
    ])
    fam.op("%s_pad3d_backward" % mode, [pad_bwd("%s_pad3d" % mode, "basic", [1, 2, 3, 4, 3], [1, 2, 2, 1, 1, 2])])

if __name__ == "__main__":
    fam.main()

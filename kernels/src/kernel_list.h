/* kernel_list.h: every kernel of the kernels library and the key it is registered at: the
 * one place to read what each backend provides. kernels/registrations.c turns these lists
 * into prototypes, boxed wrappers and registrations.
 *
 * OPD_UNBOXED_KERNELS(X): X(operator, key, function, return tag, argument tags...)
 * OPD_BOXED_KERNELS(X):   X(operator, key, function)  (multiple returns: boxed only)
 * The tags are those of opd/unboxed.h; registration checks them against the schema.
 * The CUDA kernels are listed beside these, one list per family, in
 * kernels/cuda/src/cuda_kernels.h (registered at the CUDA key by opd_cuda_init).
 */
#ifndef OPD_KERNELS_KERNEL_LIST_H
#define OPD_KERNELS_KERNEL_LIST_H

/* clang-format off */
#define OPD_UNBOXED_KERNELS(X) \
  /* elementwise: kernels/cpu/elementwise*.c, kernels/meta/elementwise_meta.c */ \
  X("aten::add.Tensor", CPU, opd__cpu_add_tensor, Tensor, Tensor, Tensor, Scalar) \
  X("aten::add.Tensor", Meta, opd__meta_add_tensor, Tensor, Tensor, Tensor, Scalar) \
  X("aten::add.out", CPU, opd__cpu_add_out, Tensor, Tensor, Tensor, Scalar, Tensor) \
  X("aten::add.out", Meta, opd__meta_add_out, Tensor, Tensor, Tensor, Scalar, Tensor) \
  X("aten::sub.Tensor", CPU, opd__cpu_sub_tensor, Tensor, Tensor, Tensor, Scalar) \
  X("aten::sub.Tensor", Meta, opd__meta_sub_tensor, Tensor, Tensor, Tensor, Scalar) \
  X("aten::mul.Tensor", CPU, opd__cpu_mul_tensor, Tensor, Tensor, Tensor) \
  X("aten::mul.Tensor", Meta, opd__meta_mul_tensor, Tensor, Tensor, Tensor) \
  /* unary */ \
  X("aten::neg", CPU, opd__cpu_neg, Tensor, Tensor) \
  X("aten::neg", Meta, opd__meta_neg, Tensor, Tensor) \
  X("aten::exp", CPU, opd__cpu_exp, Tensor, Tensor) \
  X("aten::exp", Meta, opd__meta_exp, Tensor, Tensor) \
  X("aten::log", CPU, opd__cpu_log, Tensor, Tensor) \
  X("aten::log", Meta, opd__meta_log, Tensor, Tensor) \
  X("aten::sqrt", CPU, opd__cpu_sqrt, Tensor, Tensor) \
  X("aten::sqrt", Meta, opd__meta_sqrt, Tensor, Tensor) \
  X("aten::rsqrt", CPU, opd__cpu_rsqrt, Tensor, Tensor) \
  X("aten::rsqrt", Meta, opd__meta_rsqrt, Tensor, Tensor) \
  X("aten::abs", CPU, opd__cpu_abs, Tensor, Tensor) \
  X("aten::abs", Meta, opd__meta_abs, Tensor, Tensor) \
  X("aten::relu", CPU, opd__cpu_relu, Tensor, Tensor) \
  X("aten::relu", Meta, opd__meta_relu, Tensor, Tensor) \
  X("aten::sigmoid", CPU, opd__cpu_sigmoid, Tensor, Tensor) \
  X("aten::sigmoid", Meta, opd__meta_sigmoid, Tensor, Tensor) \
  X("aten::tanh", CPU, opd__cpu_tanh, Tensor, Tensor) \
  X("aten::tanh", Meta, opd__meta_tanh, Tensor, Tensor) \
  X("aten::sin", CPU, opd__cpu_sin, Tensor, Tensor) \
  X("aten::sin", Meta, opd__meta_sin, Tensor, Tensor) \
  X("aten::cos", CPU, opd__cpu_cos, Tensor, Tensor) \
  X("aten::cos", Meta, opd__meta_cos, Tensor, Tensor) \
  X("aten::div.Tensor", CPU, opd__cpu_div_tensor, Tensor, Tensor, Tensor) \
  X("aten::div.Tensor", Meta, opd__meta_div_tensor, Tensor, Tensor, Tensor) \
  X("aten::div.Tensor_mode", CPU, opd__cpu_div_tensor_mode, Tensor, Tensor, Tensor, OptStr) \
  X("aten::div.Tensor_mode", Meta, opd__meta_div_tensor_mode, Tensor, Tensor, Tensor, OptStr) \
  X("aten::add.Scalar", CompositeExplicitAutograd, opd__cea_add_scalar, Tensor, Tensor, Scalar, Scalar) \
  X("aten::mul.Scalar", CompositeExplicitAutograd, opd__cea_mul_scalar, Tensor, Tensor, Scalar) \
  X("aten::gelu", CPU, opd__cpu_gelu, Tensor, Tensor, Str) \
  X("aten::gelu", Meta, opd__meta_gelu, Tensor, Tensor, Str) \
  X("aten::pow.Tensor_Scalar", CPU, opd__cpu_pow_tensor_scalar, Tensor, Tensor, Scalar) \
  X("aten::pow.Tensor_Scalar", Meta, opd__meta_pow_tensor_scalar, Tensor, Tensor, Scalar) \
  X("aten::maximum", CPU, opd__cpu_maximum, Tensor, Tensor, Tensor) \
  X("aten::maximum", Meta, opd__meta_maximum, Tensor, Tensor, Tensor) \
  X("aten::minimum", CPU, opd__cpu_minimum, Tensor, Tensor, Tensor) \
  X("aten::minimum", Meta, opd__meta_minimum, Tensor, Tensor, Tensor) \
  X("aten::eq.Tensor", CPU, opd__cpu_eq_tensor, Tensor, Tensor, Tensor) \
  X("aten::eq.Tensor", Meta, opd__meta_eq_tensor, Tensor, Tensor, Tensor) \
  X("aten::gt.Tensor", CPU, opd__cpu_gt_tensor, Tensor, Tensor, Tensor) \
  X("aten::gt.Tensor", Meta, opd__meta_gt_tensor, Tensor, Tensor, Tensor) \
  X("aten::lt.Scalar", CPU, opd__cpu_lt_scalar, Tensor, Tensor, Scalar) \
  X("aten::lt.Scalar", Meta, opd__meta_lt_scalar, Tensor, Tensor, Scalar) \
  X("aten::where.self", CPU, opd__cpu_where_self, Tensor, Tensor, Tensor, Tensor) \
  X("aten::where.self", Meta, opd__meta_where_self, Tensor, Tensor, Tensor, Tensor) \
  X("aten::clamp", CPU, opd__cpu_clamp, Tensor, Tensor, OptScalar, OptScalar) \
  X("aten::clamp", Meta, opd__meta_clamp, Tensor, Tensor, OptScalar, OptScalar) \
  X("aten::masked_fill.Scalar", CompositeExplicitAutograd, opd__cea_masked_fill_scalar, Tensor, Tensor, Tensor, Scalar) \
  X("aten::masked_fill_.Scalar", CPU, opd__cpu_masked_fill__scalar, Tensor, Tensor, Tensor, Scalar) \
  X("aten::masked_fill_.Scalar", Meta, opd__meta_masked_fill__scalar, Tensor, Tensor, Tensor, Scalar) \
  X("aten::copy_", CPU, opd__cpu_copy_, Tensor, Tensor, Tensor, Bool) \
  X("aten::copy_", Meta, opd__meta_copy_, Tensor, Tensor, Tensor, Bool) \
  X("aten::fill_.Scalar", CPU, opd__cpu_fill__scalar, Tensor, Tensor, Scalar) \
  X("aten::fill_.Scalar", Meta, opd__meta_fill__scalar, Tensor, Tensor, Scalar) \
  X("aten::_to_copy", CompositeExplicitAutograd, opd__cea_to_copy, Tensor, Tensor, OptDType, OptLayout, OptDevice, OptBool, Bool, OptMemoryFormat) \
  /* reductions, softmax, normalization: kernels/cpu/reduce*.c, kernels/meta/reduce_meta.c */ \
  X("aten::sum.dim_IntList", CPU, opd__cpu_sum_dim_intlist, Tensor, Tensor, OptIntList, Bool, OptDType) \
  X("aten::sum.dim_IntList", Meta, opd__meta_sum_dim_intlist, Tensor, Tensor, OptIntList, Bool, OptDType) \
  X("aten::sum", CompositeExplicitAutograd, opd__cea_sum, Tensor, Tensor, OptDType) \
  X("aten::mean.dim", CPU, opd__cpu_mean_dim, Tensor, Tensor, OptIntList, Bool, OptDType) \
  X("aten::mean.dim", Meta, opd__meta_mean_dim, Tensor, Tensor, OptIntList, Bool, OptDType) \
  X("aten::amax", CPU, opd__cpu_amax, Tensor, Tensor, IntList, Bool) \
  X("aten::amax", Meta, opd__meta_amax, Tensor, Tensor, IntList, Bool) \
  X("aten::argmax", CPU, opd__cpu_argmax, Tensor, Tensor, OptInt, Bool) \
  X("aten::argmax", Meta, opd__meta_argmax, Tensor, Tensor, OptInt, Bool) \
  X("aten::_softmax", CPU, opd__cpu_softmax, Tensor, Tensor, Int, Bool) \
  X("aten::_softmax", Meta, opd__meta_softmax, Tensor, Tensor, Int, Bool) \
  X("aten::_log_softmax", CPU, opd__cpu_log_softmax, Tensor, Tensor, Int, Bool) \
  X("aten::_log_softmax", Meta, opd__meta_log_softmax, Tensor, Tensor, Int, Bool) \
  X("aten::softmax.int", CompositeImplicitAutograd, opd__cia_softmax_int, Tensor, Tensor, Int, OptDType) \
  X("aten::layer_norm", CompositeImplicitAutograd, opd__cia_layer_norm, Tensor, Tensor, IntList, OptTensor, OptTensor, Double, Bool) \
  /* linear algebra, indexing, joining, factories: kernels/cpu/linalg.c, kernels/cpu/index.c, kernels/cpu/factory.c, kernels/meta/ */ \
  X("aten::mm", CPU, opd__cpu_mm, Tensor, Tensor, Tensor) \
  X("aten::mm", Meta, opd__meta_mm, Tensor, Tensor, Tensor) \
  X("aten::bmm", CPU, opd__cpu_bmm, Tensor, Tensor, Tensor) \
  X("aten::bmm", Meta, opd__meta_bmm, Tensor, Tensor, Tensor) \
  X("aten::addmm", CPU, opd__cpu_addmm, Tensor, Tensor, Tensor, Tensor, Scalar, Scalar) \
  X("aten::addmm", Meta, opd__meta_addmm, Tensor, Tensor, Tensor, Tensor, Scalar, Scalar) \
  X("aten::matmul", CompositeImplicitAutograd, opd__cia_matmul, Tensor, Tensor, Tensor) \
  X("aten::linear", CompositeImplicitAutograd, opd__cia_linear, Tensor, Tensor, Tensor, OptTensor) \
  X("aten::embedding", CompositeExplicitAutograd, opd__cea_embedding, Tensor, Tensor, Tensor, Int, Bool, Bool) \
  X("aten::index_select", CPU, opd__cpu_index_select, Tensor, Tensor, Int, Tensor) \
  X("aten::index_select", Meta, opd__meta_index_select, Tensor, Tensor, Int, Tensor) \
  X("aten::cat", CPU, opd__cpu_cat, Tensor, TensorList, Int) \
  X("aten::cat", Meta, opd__meta_cat, Tensor, TensorList, Int) \
  X("aten::empty.memory_format", BackendSelect, opd__bs_empty_memory_format, Tensor, IntList, OptDType, OptLayout, OptDevice, OptBool, OptMemoryFormat) \
  X("aten::empty.memory_format", CPU, opd__cpu_empty_memory_format, Tensor, IntList, OptDType, OptLayout, OptDevice, OptBool, OptMemoryFormat) \
  X("aten::empty.memory_format", Meta, opd__meta_empty_memory_format, Tensor, IntList, OptDType, OptLayout, OptDevice, OptBool, OptMemoryFormat) \
  X("aten::empty_strided", BackendSelect, opd__bs_empty_strided, Tensor, IntList, IntList, OptDType, OptLayout, OptDevice, OptBool) \
  X("aten::empty_strided", CPU, opd__cpu_empty_strided, Tensor, IntList, IntList, OptDType, OptLayout, OptDevice, OptBool) \
  X("aten::empty_strided", Meta, opd__meta_empty_strided, Tensor, IntList, IntList, OptDType, OptLayout, OptDevice, OptBool) \
  X("aten::zeros", CompositeExplicitAutograd, opd__cea_zeros, Tensor, IntList, OptDType, OptLayout, OptDevice, OptBool) \
  X("aten::ones", CompositeExplicitAutograd, opd__cea_ones, Tensor, IntList, OptDType, OptLayout, OptDevice, OptBool) \
  X("aten::full", CompositeExplicitAutograd, opd__cea_full, Tensor, IntList, Scalar, OptDType, OptLayout, OptDevice, OptBool) \
  X("aten::arange", CompositeExplicitAutograd, opd__cea_arange, Tensor, Scalar, OptDType, OptLayout, OptDevice, OptBool) \
  X("aten::arange.start", CompositeExplicitAutograd, opd__cea_arange_start, Tensor, Scalar, Scalar, OptDType, OptLayout, OptDevice, OptBool) \
  X("aten::arange.start_step", CompositeExplicitAutograd, opd__cea_arange_start_step, Tensor, Scalar, Scalar, Scalar, OptDType, OptLayout, OptDevice, OptBool) \
  /* views and shapes: kernels/src/views.c */ \
  X("aten::transpose.int", CompositeExplicitAutograd, opd__cea_transpose_int, Tensor, Tensor, Int, Int) \
  X("aten::permute", CompositeExplicitAutograd, opd__cea_permute, Tensor, Tensor, IntList) \
  X("aten::view", CPU, opd__view, Tensor, Tensor, IntList) \
  X("aten::view", Meta, opd__view_meta, Tensor, Tensor, IntList) \
  X("aten::reshape", CompositeImplicitAutograd, opd__cia_reshape, Tensor, Tensor, IntList) \
  X("aten::contiguous", CompositeImplicitAutograd, opd__cia_contiguous, Tensor, Tensor, MemoryFormat) \
  X("aten::clone", CompositeExplicitAutograd, opd__cea_clone, Tensor, Tensor, OptMemoryFormat) \
  X("aten::unsqueeze", CompositeExplicitAutograd, opd__cea_unsqueeze, Tensor, Tensor, Int) \
  X("aten::squeeze.dim", CompositeExplicitAutograd, opd__cea_squeeze_dim, Tensor, Tensor, Int) \
  X("aten::expand", CompositeExplicitAutograd, opd__cea_expand, Tensor, Tensor, IntList, Bool) \
  X("aten::slice.Tensor", CompositeExplicitAutograd, opd__cea_slice_tensor, Tensor, Tensor, Int, OptInt, OptInt, Int) \
  X("aten::select.int", CompositeExplicitAutograd, opd__cea_select_int, Tensor, Tensor, Int, Int) \
  X("aten::t", CompositeExplicitAutograd, opd__cea_t, Tensor, Tensor) \
  X("aten::_reshape_alias", CompositeExplicitAutograd, opd__cea_reshape_alias, Tensor, Tensor, IntList, IntList) \
  X("aten::_unsafe_view", CompositeExplicitAutograd, opd__cea_unsafe_view, Tensor, Tensor, IntList) \
  X("aten::alias", CompositeExplicitAutograd, opd__cea_alias, Tensor, Tensor) \
  X("aten::detach", CompositeExplicitAutograd, opd__cea_detach, Tensor, Tensor) \
  X("aten::as_strided", CPU, opd__as_strided, Tensor, Tensor, IntList, IntList, OptInt) \
  X("aten::as_strided", Meta, opd__as_strided_meta, Tensor, Tensor, IntList, IntList, OptInt) \
  OPD_NN_UNBOXED_KERNELS(X) \
  OPD_CONV_UNBOXED_KERNELS(X) \
  OPD_NORM_UNBOXED_KERNELS(X) \
  OPD_POINTWISE_UNBOXED_KERNELS(X) \
  OPD_INDEX_UNBOXED_KERNELS(X) \
  OPD_REDUCE_UNBOXED_KERNELS(X)

/* what torch.nn's building blocks decompose to: kernels/cpu/elementwise_*.c,
 * kernels/meta/elementwise_meta.c, kernels/src/views_split.c */
#define OPD_NN_UNBOXED_KERNELS(X) \
  X("aten::silu", CPU, opd__cpu_silu, Tensor, Tensor) \
  X("aten::silu", Meta, opd__meta_silu, Tensor, Tensor) \
  X("aten::eq.Scalar", CPU, opd__cpu_eq_scalar, Tensor, Tensor, Scalar) \
  X("aten::eq.Scalar", Meta, opd__meta_eq_scalar, Tensor, Tensor, Scalar)
#define OPD_NN_BOXED_KERNELS(X) \
  X("aten::split.Tensor", CompositeExplicitAutograd, opd__cea_split_tensor)

/* convolution, pooling, padding */
#define OPD_CONV_UNBOXED_KERNELS(X) \
  /* convolution: kernels/cpu/conv*.c, kernels/meta/conv_meta.c, kernels/src/composite_conv.c */ \
  X("aten::convolution", CPU, opd__cpu_convolution, Tensor, Tensor, Tensor, OptTensor, IntList, IntList, IntList, Bool, IntList, Int) \
  X("aten::convolution", Meta, opd__meta_convolution, Tensor, Tensor, Tensor, OptTensor, IntList, IntList, IntList, Bool, IntList, Int) \
  X("aten::conv1d", CompositeImplicitAutograd, opd__cia_conv1d, Tensor, Tensor, Tensor, OptTensor, IntList, IntList, IntList, Int) \
  X("aten::conv2d", CompositeImplicitAutograd, opd__cia_conv2d, Tensor, Tensor, Tensor, OptTensor, IntList, IntList, IntList, Int) \
  X("aten::conv3d", CompositeImplicitAutograd, opd__cia_conv3d, Tensor, Tensor, Tensor, OptTensor, IntList, IntList, IntList, Int) \
  X("aten::conv_transpose1d", CompositeImplicitAutograd, opd__cia_conv_transpose1d, Tensor, Tensor, Tensor, OptTensor, IntList, IntList, IntList, Int, IntList) \
  X("aten::conv_transpose2d.input", CompositeImplicitAutograd, opd__cia_conv_transpose2d_input, Tensor, Tensor, Tensor, OptTensor, IntList, IntList, IntList, Int, IntList) \
  X("aten::conv_transpose3d.input", CompositeImplicitAutograd, opd__cia_conv_transpose3d_input, Tensor, Tensor, Tensor, OptTensor, IntList, IntList, IntList, Int, IntList) \
  /* pooling: kernels/cpu/pool.c, kernels/meta/pool_meta.c, kernels/src/composite_conv.c */ \
  X("aten::max_pool2d_with_indices_backward", CPU, opd__cpu_max_pool2d_with_indices_backward, Tensor, Tensor, Tensor, IntList, IntList, IntList, IntList, Bool, Tensor) \
  X("aten::max_pool2d_with_indices_backward", Meta, opd__meta_max_pool2d_with_indices_backward, Tensor, Tensor, Tensor, IntList, IntList, IntList, IntList, Bool, Tensor) \
  X("aten::max_pool3d_with_indices_backward", CPU, opd__cpu_max_pool3d_with_indices_backward, Tensor, Tensor, Tensor, IntList, IntList, IntList, IntList, Bool, Tensor) \
  X("aten::max_pool3d_with_indices_backward", Meta, opd__meta_max_pool3d_with_indices_backward, Tensor, Tensor, Tensor, IntList, IntList, IntList, IntList, Bool, Tensor) \
  X("aten::avg_pool2d", CPU, opd__cpu_avg_pool2d, Tensor, Tensor, IntList, IntList, IntList, Bool, Bool, OptInt) \
  X("aten::avg_pool2d", Meta, opd__meta_avg_pool2d, Tensor, Tensor, IntList, IntList, IntList, Bool, Bool, OptInt) \
  X("aten::avg_pool2d_backward", CPU, opd__cpu_avg_pool2d_backward, Tensor, Tensor, Tensor, IntList, IntList, IntList, Bool, Bool, OptInt) \
  X("aten::avg_pool2d_backward", Meta, opd__meta_avg_pool2d_backward, Tensor, Tensor, Tensor, IntList, IntList, IntList, Bool, Bool, OptInt) \
  X("aten::_adaptive_avg_pool2d", CPU, opd__cpu_adaptive_avg_pool2d, Tensor, Tensor, IntList) \
  X("aten::_adaptive_avg_pool2d", Meta, opd__meta_adaptive_avg_pool2d, Tensor, Tensor, IntList) \
  X("aten::_adaptive_avg_pool2d_backward", CPU, opd__cpu_adaptive_avg_pool2d_backward, Tensor, Tensor, Tensor) \
  X("aten::_adaptive_avg_pool2d_backward", Meta, opd__meta_adaptive_avg_pool2d_backward, Tensor, Tensor, Tensor) \
  X("aten::adaptive_max_pool2d_backward", CPU, opd__cpu_adaptive_max_pool2d_backward, Tensor, Tensor, Tensor, Tensor) \
  X("aten::adaptive_max_pool2d_backward", Meta, opd__meta_adaptive_max_pool2d_backward, Tensor, Tensor, Tensor, Tensor) \
  X("aten::max_unpool2d", CPU, opd__cpu_max_unpool2d, Tensor, Tensor, Tensor, IntList) \
  X("aten::max_unpool2d", Meta, opd__meta_max_unpool2d, Tensor, Tensor, Tensor, IntList) \
  X("aten::avg_pool3d", CPU, opd__cpu_avg_pool3d, Tensor, Tensor, IntList, IntList, IntList, Bool, Bool, OptInt) \
  X("aten::avg_pool3d", Meta, opd__meta_avg_pool3d, Tensor, Tensor, IntList, IntList, IntList, Bool, Bool, OptInt) \
  X("aten::avg_pool3d_backward", CPU, opd__cpu_avg_pool3d_backward, Tensor, Tensor, Tensor, IntList, IntList, IntList, Bool, Bool, OptInt) \
  X("aten::avg_pool3d_backward", Meta, opd__meta_avg_pool3d_backward, Tensor, Tensor, Tensor, IntList, IntList, IntList, Bool, Bool, OptInt) \
  X("aten::_adaptive_avg_pool3d", CPU, opd__cpu_adaptive_avg_pool3d, Tensor, Tensor, IntList) \
  X("aten::_adaptive_avg_pool3d", Meta, opd__meta_adaptive_avg_pool3d, Tensor, Tensor, IntList) \
  X("aten::_adaptive_avg_pool3d_backward", CPU, opd__cpu_adaptive_avg_pool3d_backward, Tensor, Tensor, Tensor) \
  X("aten::_adaptive_avg_pool3d_backward", Meta, opd__meta_adaptive_avg_pool3d_backward, Tensor, Tensor, Tensor) \
  X("aten::adaptive_max_pool3d_backward", CPU, opd__cpu_adaptive_max_pool3d_backward, Tensor, Tensor, Tensor, Tensor) \
  X("aten::adaptive_max_pool3d_backward", Meta, opd__meta_adaptive_max_pool3d_backward, Tensor, Tensor, Tensor, Tensor) \
  /* pixel_shuffle, pixel_unshuffle, channel_shuffle: kernels/cpu/pixel_shuffle.c, kernels/meta/pixel_shuffle_meta.c */ \
  X("aten::pixel_shuffle", CPU, opd__cpu_pixel_shuffle, Tensor, Tensor, Int) \
  X("aten::pixel_shuffle", Meta, opd__meta_pixel_shuffle, Tensor, Tensor, Int) \
  X("aten::pixel_unshuffle", CPU, opd__cpu_pixel_unshuffle, Tensor, Tensor, Int) \
  X("aten::pixel_unshuffle", Meta, opd__meta_pixel_unshuffle, Tensor, Tensor, Int) \
  X("aten::channel_shuffle", CPU, opd__cpu_channel_shuffle, Tensor, Tensor, Int) \
  X("aten::channel_shuffle", Meta, opd__meta_channel_shuffle, Tensor, Tensor, Int) \
  /* im2col, col2im: kernels/cpu/fold.c, kernels/meta/fold_meta.c */ \
  X("aten::im2col", CPU, opd__cpu_im2col, Tensor, Tensor, IntList, IntList, IntList, IntList) \
  X("aten::im2col", Meta, opd__meta_im2col, Tensor, Tensor, IntList, IntList, IntList, IntList) \
  X("aten::col2im", CPU, opd__cpu_col2im, Tensor, Tensor, IntList, IntList, IntList, IntList, IntList) \
  X("aten::col2im", Meta, opd__meta_col2im, Tensor, Tensor, IntList, IntList, IntList, IntList, IntList) \
  /* grid_sampler_2d: kernels/cpu/grid_sampler.c */ \
  X("aten::grid_sampler_2d", CPU, opd__cpu_grid_sampler_2d, Tensor, Tensor, Tensor, Int, Int, Bool) \
  X("aten::grid_sampler_2d", Meta, opd__meta_grid_sampler_2d, Tensor, Tensor, Tensor, Int, Int, Bool) \
  X("aten::max_pool2d", CompositeImplicitAutograd, opd__cia_max_pool2d, Tensor, Tensor, IntList, IntList, IntList, IntList, Bool) \
  X("aten::max_pool1d", CompositeImplicitAutograd, opd__cia_max_pool1d, Tensor, Tensor, IntList, IntList, IntList, IntList, Bool) \
  X("aten::avg_pool1d", CompositeImplicitAutograd, opd__cia_avg_pool1d, Tensor, Tensor, IntList, IntList, IntList, Bool, Bool) \
  X("aten::adaptive_avg_pool2d", CompositeImplicitAutograd, opd__cia_adaptive_avg_pool2d, Tensor, Tensor, IntList) \
  X("aten::adaptive_avg_pool1d", CompositeImplicitAutograd, opd__cia_adaptive_avg_pool1d, Tensor, Tensor, IntList) \
  X("aten::adaptive_avg_pool3d", CompositeImplicitAutograd, opd__cia_adaptive_avg_pool3d, Tensor, Tensor, IntList) \
  /* padding: kernels/cpu/pad.c, kernels/meta/pool_meta.c, kernels/src/composite_conv.c */ \
  X("aten::constant_pad_nd", CompositeExplicitAutograd, opd__cea_constant_pad_nd, Tensor, Tensor, IntList, Scalar) \
  X("aten::reflection_pad1d", CPU, opd__cpu_reflection_pad1d, Tensor, Tensor, IntList) \
  X("aten::reflection_pad1d", Meta, opd__meta_reflection_pad1d, Tensor, Tensor, IntList) \
  X("aten::reflection_pad1d_backward", CPU, opd__cpu_reflection_pad1d_backward, Tensor, Tensor, Tensor, IntList) \
  X("aten::reflection_pad1d_backward", Meta, opd__meta_reflection_pad1d_backward, Tensor, Tensor, Tensor, IntList) \
  X("aten::reflection_pad2d", CPU, opd__cpu_reflection_pad2d, Tensor, Tensor, IntList) \
  X("aten::reflection_pad2d", Meta, opd__meta_reflection_pad2d, Tensor, Tensor, IntList) \
  X("aten::reflection_pad2d_backward", CPU, opd__cpu_reflection_pad2d_backward, Tensor, Tensor, Tensor, IntList) \
  X("aten::reflection_pad2d_backward", Meta, opd__meta_reflection_pad2d_backward, Tensor, Tensor, Tensor, IntList) \
  X("aten::reflection_pad3d", CPU, opd__cpu_reflection_pad3d, Tensor, Tensor, IntList) \
  X("aten::reflection_pad3d", Meta, opd__meta_reflection_pad3d, Tensor, Tensor, IntList) \
  X("aten::reflection_pad3d_backward", CPU, opd__cpu_reflection_pad3d_backward, Tensor, Tensor, Tensor, IntList) \
  X("aten::reflection_pad3d_backward", Meta, opd__meta_reflection_pad3d_backward, Tensor, Tensor, Tensor, IntList) \
  X("aten::replication_pad1d", CPU, opd__cpu_replication_pad1d, Tensor, Tensor, IntList) \
  X("aten::replication_pad1d", Meta, opd__meta_replication_pad1d, Tensor, Tensor, IntList) \
  X("aten::replication_pad1d_backward", CPU, opd__cpu_replication_pad1d_backward, Tensor, Tensor, Tensor, IntList) \
  X("aten::replication_pad1d_backward", Meta, opd__meta_replication_pad1d_backward, Tensor, Tensor, Tensor, IntList) \
  X("aten::replication_pad2d", CPU, opd__cpu_replication_pad2d, Tensor, Tensor, IntList) \
  X("aten::replication_pad2d", Meta, opd__meta_replication_pad2d, Tensor, Tensor, IntList) \
  X("aten::replication_pad2d_backward", CPU, opd__cpu_replication_pad2d_backward, Tensor, Tensor, Tensor, IntList) \
  X("aten::replication_pad2d_backward", Meta, opd__meta_replication_pad2d_backward, Tensor, Tensor, Tensor, IntList) \
  X("aten::replication_pad3d", CPU, opd__cpu_replication_pad3d, Tensor, Tensor, IntList) \
  X("aten::replication_pad3d", Meta, opd__meta_replication_pad3d, Tensor, Tensor, IntList) \
  X("aten::replication_pad3d_backward", CPU, opd__cpu_replication_pad3d_backward, Tensor, Tensor, Tensor, IntList) \
  X("aten::replication_pad3d_backward", Meta, opd__meta_replication_pad3d_backward, Tensor, Tensor, Tensor, IntList)
#define OPD_CONV_BOXED_KERNELS(X) \
  X("aten::_convolution", CompositeExplicitAutograd, opd__cea_convolution_legacy) \
  X("aten::pad", CompositeImplicitAutograd, opd__cia_pad) \
  X("aten::convolution_backward", CPU, opd__cpu_convolution_backward) \
  X("aten::convolution_backward", Meta, opd__meta_convolution_backward) \
  X("aten::max_pool2d_with_indices", CPU, opd__cpu_max_pool2d_with_indices) \
  X("aten::max_pool2d_with_indices", Meta, opd__meta_max_pool2d_with_indices) \
  X("aten::max_pool3d_with_indices", CPU, opd__cpu_max_pool3d_with_indices) \
  X("aten::max_pool3d_with_indices", Meta, opd__meta_max_pool3d_with_indices) \
  X("aten::adaptive_max_pool2d", CPU, opd__cpu_adaptive_max_pool2d) \
  X("aten::adaptive_max_pool2d", Meta, opd__meta_adaptive_max_pool2d) \
  X("aten::adaptive_max_pool3d", CPU, opd__cpu_adaptive_max_pool3d) \
  X("aten::adaptive_max_pool3d", Meta, opd__meta_adaptive_max_pool3d) \
  X("aten::adaptive_max_pool1d", CompositeImplicitAutograd, opd__cia_adaptive_max_pool1d) \
  /* upsampling (a float? or float[]? argument): kernels/cpu/upsample.c, kernels/meta/upsample_meta.c */ \
  X("aten::upsample_nearest1d", CPU, opd__cpu_upsample_nearest1d) \
  X("aten::upsample_nearest1d.vec", CPU, opd__cpu_upsample_nearest1d_vec) \
  X("aten::upsample_nearest1d_backward", CPU, opd__cpu_upsample_nearest1d_backward) \
  X("aten::upsample_nearest1d", Meta, opd__meta_upsample_nearest1d) \
  X("aten::upsample_nearest1d.vec", Meta, opd__meta_upsample_nearest1d_vec) \
  X("aten::upsample_nearest1d_backward", Meta, opd__meta_upsample_nearest1d_backward) \
  X("aten::upsample_nearest2d", CPU, opd__cpu_upsample_nearest2d) \
  X("aten::upsample_nearest2d.vec", CPU, opd__cpu_upsample_nearest2d_vec) \
  X("aten::upsample_nearest2d_backward", CPU, opd__cpu_upsample_nearest2d_backward) \
  X("aten::upsample_nearest2d", Meta, opd__meta_upsample_nearest2d) \
  X("aten::upsample_nearest2d.vec", Meta, opd__meta_upsample_nearest2d_vec) \
  X("aten::upsample_nearest2d_backward", Meta, opd__meta_upsample_nearest2d_backward) \
  X("aten::upsample_nearest3d", CPU, opd__cpu_upsample_nearest3d) \
  X("aten::upsample_nearest3d.vec", CPU, opd__cpu_upsample_nearest3d_vec) \
  X("aten::upsample_nearest3d_backward", CPU, opd__cpu_upsample_nearest3d_backward) \
  X("aten::upsample_nearest3d", Meta, opd__meta_upsample_nearest3d) \
  X("aten::upsample_nearest3d.vec", Meta, opd__meta_upsample_nearest3d_vec) \
  X("aten::upsample_nearest3d_backward", Meta, opd__meta_upsample_nearest3d_backward) \
  X("aten::upsample_linear1d", CPU, opd__cpu_upsample_linear1d) \
  X("aten::upsample_linear1d.vec", CPU, opd__cpu_upsample_linear1d_vec) \
  X("aten::upsample_linear1d_backward", CPU, opd__cpu_upsample_linear1d_backward) \
  X("aten::upsample_linear1d", Meta, opd__meta_upsample_linear1d) \
  X("aten::upsample_linear1d.vec", Meta, opd__meta_upsample_linear1d_vec) \
  X("aten::upsample_linear1d_backward", Meta, opd__meta_upsample_linear1d_backward) \
  X("aten::upsample_bilinear2d", CPU, opd__cpu_upsample_bilinear2d) \
  X("aten::upsample_bilinear2d.vec", CPU, opd__cpu_upsample_bilinear2d_vec) \
  X("aten::upsample_bilinear2d_backward", CPU, opd__cpu_upsample_bilinear2d_backward) \
  X("aten::upsample_bilinear2d", Meta, opd__meta_upsample_bilinear2d) \
  X("aten::upsample_bilinear2d.vec", Meta, opd__meta_upsample_bilinear2d_vec) \
  X("aten::upsample_bilinear2d_backward", Meta, opd__meta_upsample_bilinear2d_backward) \
  X("aten::upsample_trilinear3d", CPU, opd__cpu_upsample_trilinear3d) \
  X("aten::upsample_trilinear3d.vec", CPU, opd__cpu_upsample_trilinear3d_vec) \
  X("aten::upsample_trilinear3d_backward", CPU, opd__cpu_upsample_trilinear3d_backward) \
  X("aten::upsample_trilinear3d", Meta, opd__meta_upsample_trilinear3d) \
  X("aten::upsample_trilinear3d.vec", Meta, opd__meta_upsample_trilinear3d_vec) \
  X("aten::upsample_trilinear3d_backward", Meta, opd__meta_upsample_trilinear3d_backward) \
  X("aten::upsample_bicubic2d", CPU, opd__cpu_upsample_bicubic2d) \
  X("aten::upsample_bicubic2d.vec", CPU, opd__cpu_upsample_bicubic2d_vec) \
  X("aten::upsample_bicubic2d_backward", CPU, opd__cpu_upsample_bicubic2d_backward) \
  X("aten::upsample_bicubic2d", Meta, opd__meta_upsample_bicubic2d) \
  X("aten::upsample_bicubic2d.vec", Meta, opd__meta_upsample_bicubic2d_vec) \
  X("aten::upsample_bicubic2d_backward", Meta, opd__meta_upsample_bicubic2d_backward)

/* normalization, losses, activations and their backward operators */
#define OPD_NORM_UNBOXED_KERNELS(X) \
  /* activations and their backward operators: kernels/cpu/norm_activation.c, kernels/meta/norm_meta.c */ \
  X("aten::hardtanh", CPU, opd__cpu_hardtanh, Tensor, Tensor, Scalar, Scalar) \
  X("aten::hardtanh", Meta, opd__meta_hardtanh, Tensor, Tensor, Scalar, Scalar) \
  X("aten::leaky_relu", CPU, opd__cpu_leaky_relu, Tensor, Tensor, Scalar) \
  X("aten::leaky_relu", Meta, opd__meta_leaky_relu, Tensor, Tensor, Scalar) \
  X("aten::elu", CPU, opd__cpu_elu, Tensor, Tensor, Scalar, Scalar, Scalar) \
  X("aten::elu", Meta, opd__meta_elu, Tensor, Tensor, Scalar, Scalar, Scalar) \
  X("aten::mish", CPU, opd__cpu_mish, Tensor, Tensor) \
  X("aten::mish", Meta, opd__meta_mish, Tensor, Tensor) \
  X("aten::softplus", CPU, opd__cpu_softplus, Tensor, Tensor, Scalar, Scalar) \
  X("aten::softplus", Meta, opd__meta_softplus, Tensor, Tensor, Scalar, Scalar) \
  X("aten::hardswish", CPU, opd__cpu_hardswish, Tensor, Tensor) \
  X("aten::hardswish", Meta, opd__meta_hardswish, Tensor, Tensor) \
  X("aten::hardsigmoid", CPU, opd__cpu_hardsigmoid, Tensor, Tensor) \
  X("aten::hardsigmoid", Meta, opd__meta_hardsigmoid, Tensor, Tensor) \
  X("aten::threshold", CPU, opd__cpu_threshold, Tensor, Tensor, Scalar, Scalar) \
  X("aten::threshold", Meta, opd__meta_threshold, Tensor, Tensor, Scalar, Scalar) \
  X("aten::glu", CPU, opd__cpu_glu, Tensor, Tensor, Int) \
  X("aten::glu", Meta, opd__meta_glu, Tensor, Tensor, Int) \
  X("aten::glu_backward", CPU, opd__cpu_glu_backward, Tensor, Tensor, Tensor, Int) \
  X("aten::glu_backward", Meta, opd__meta_glu_backward, Tensor, Tensor, Tensor, Int) \
  X("aten::prelu", CPU, opd__cpu_prelu, Tensor, Tensor, Tensor) \
  X("aten::prelu", Meta, opd__meta_prelu, Tensor, Tensor, Tensor) \
  X("aten::threshold_backward", CPU, opd__cpu_threshold_backward, Tensor, Tensor, Tensor, Scalar) \
  X("aten::threshold_backward", Meta, opd__meta_threshold_backward, Tensor, Tensor, Tensor, Scalar) \
  X("aten::gelu_backward", CPU, opd__cpu_gelu_backward, Tensor, Tensor, Tensor, Str) \
  X("aten::gelu_backward", Meta, opd__meta_gelu_backward, Tensor, Tensor, Tensor, Str) \
  X("aten::silu_backward", CPU, opd__cpu_silu_backward, Tensor, Tensor, Tensor) \
  X("aten::silu_backward", Meta, opd__meta_silu_backward, Tensor, Tensor, Tensor) \
  X("aten::sigmoid_backward", CPU, opd__cpu_sigmoid_backward, Tensor, Tensor, Tensor) \
  X("aten::sigmoid_backward", Meta, opd__meta_sigmoid_backward, Tensor, Tensor, Tensor) \
  X("aten::tanh_backward", CPU, opd__cpu_tanh_backward, Tensor, Tensor, Tensor) \
  X("aten::tanh_backward", Meta, opd__meta_tanh_backward, Tensor, Tensor, Tensor) \
  X("aten::hardswish_backward", CPU, opd__cpu_hardswish_backward, Tensor, Tensor, Tensor) \
  X("aten::hardswish_backward", Meta, opd__meta_hardswish_backward, Tensor, Tensor, Tensor) \
  X("aten::hardsigmoid_backward", CPU, opd__cpu_hardsigmoid_backward, Tensor, Tensor, Tensor) \
  X("aten::hardsigmoid_backward", Meta, opd__meta_hardsigmoid_backward, Tensor, Tensor, Tensor) \
  X("aten::hardtanh_backward", CPU, opd__cpu_hardtanh_backward, Tensor, Tensor, Tensor, Scalar, Scalar) \
  X("aten::hardtanh_backward", Meta, opd__meta_hardtanh_backward, Tensor, Tensor, Tensor, Scalar, Scalar) \
  X("aten::leaky_relu_backward", CPU, opd__cpu_leaky_relu_backward, Tensor, Tensor, Tensor, Scalar, Bool) \
  X("aten::leaky_relu_backward", Meta, opd__meta_leaky_relu_backward, Tensor, Tensor, Tensor, Scalar, Bool) \
  X("aten::elu_backward", CPU, opd__cpu_elu_backward, Tensor, Tensor, Scalar, Scalar, Scalar, Bool, Tensor) \
  X("aten::elu_backward", Meta, opd__meta_elu_backward, Tensor, Tensor, Scalar, Scalar, Scalar, Bool, Tensor) \
  X("aten::softplus_backward", CPU, opd__cpu_softplus_backward, Tensor, Tensor, Tensor, Scalar, Scalar) \
  X("aten::softplus_backward", Meta, opd__meta_softplus_backward, Tensor, Tensor, Tensor, Scalar, Scalar) \
  X("aten::mish_backward", CPU, opd__cpu_mish_backward, Tensor, Tensor, Tensor) \
  X("aten::mish_backward", Meta, opd__meta_mish_backward, Tensor, Tensor, Tensor) \
  /* softmax's backward operators: kernels/cpu/norm_softmax_backward.c */ \
  X("aten::_softmax_backward_data", CPU, opd__cpu_softmax_backward_data, Tensor, Tensor, Tensor, Int, DType) \
  X("aten::_softmax_backward_data", Meta, opd__meta_softmax_backward_data, Tensor, Tensor, Tensor, Int, DType) \
  X("aten::_log_softmax_backward_data", CPU, opd__cpu_log_softmax_backward_data, Tensor, Tensor, Tensor, Int, DType) \
  X("aten::_log_softmax_backward_data", Meta, opd__meta_log_softmax_backward_data, Tensor, Tensor, Tensor, Int, DType) \
  /* losses: kernels/cpu/norm_loss.c */ \
  X("aten::mse_loss", CPU, opd__cpu_mse_loss, Tensor, Tensor, Tensor, Int) \
  X("aten::mse_loss", Meta, opd__meta_mse_loss, Tensor, Tensor, Tensor, Int) \
  X("aten::mse_loss_backward", CPU, opd__cpu_mse_loss_backward, Tensor, Tensor, Tensor, Tensor, Int) \
  X("aten::mse_loss_backward", Meta, opd__meta_mse_loss_backward, Tensor, Tensor, Tensor, Tensor, Int) \
  X("aten::smooth_l1_loss", CPU, opd__cpu_smooth_l1_loss, Tensor, Tensor, Tensor, Int, Double) \
  X("aten::smooth_l1_loss", Meta, opd__meta_smooth_l1_loss, Tensor, Tensor, Tensor, Int, Double) \
  X("aten::smooth_l1_loss_backward", CPU, opd__cpu_smooth_l1_loss_backward, Tensor, Tensor, Tensor, Tensor, Int, Double) \
  X("aten::smooth_l1_loss_backward", Meta, opd__meta_smooth_l1_loss_backward, Tensor, Tensor, Tensor, Tensor, Int, Double) \
  X("aten::huber_loss", CPU, opd__cpu_huber_loss, Tensor, Tensor, Tensor, Int, Double) \
  X("aten::huber_loss", Meta, opd__meta_huber_loss, Tensor, Tensor, Tensor, Int, Double) \
  X("aten::huber_loss_backward", CPU, opd__cpu_huber_loss_backward, Tensor, Tensor, Tensor, Tensor, Int, Double) \
  X("aten::huber_loss_backward", Meta, opd__meta_huber_loss_backward, Tensor, Tensor, Tensor, Tensor, Int, Double) \
  X("aten::binary_cross_entropy", CPU, opd__cpu_binary_cross_entropy, Tensor, Tensor, Tensor, OptTensor, Int) \
  X("aten::binary_cross_entropy", Meta, opd__meta_binary_cross_entropy, Tensor, Tensor, Tensor, OptTensor, Int) \
  X("aten::binary_cross_entropy_backward", CPU, opd__cpu_binary_cross_entropy_backward, Tensor, Tensor, Tensor, Tensor, OptTensor, Int) \
  X("aten::binary_cross_entropy_backward", Meta, opd__meta_binary_cross_entropy_backward, Tensor, Tensor, Tensor, Tensor, OptTensor, Int) \
  X("aten::nll_loss_backward", CPU, opd__cpu_nll_loss_backward, Tensor, Tensor, Tensor, Tensor, OptTensor, Int, Int, Tensor) \
  X("aten::nll_loss_backward", Meta, opd__meta_nll_loss_backward, Tensor, Tensor, Tensor, Tensor, OptTensor, Int, Int, Tensor) \
  X("aten::nll_loss2d_backward", CPU, opd__cpu_nll_loss2d_backward, Tensor, Tensor, Tensor, Tensor, OptTensor, Int, Int, Tensor) \
  X("aten::nll_loss2d_backward", Meta, opd__meta_nll_loss2d_backward, Tensor, Tensor, Tensor, Tensor, OptTensor, Int, Int, Tensor) \
  /* embedding's backward operators, dropout's: kernels/cpu/norm_embedding.c, kernels/cpu/norm_dropout.c */ \
  X("aten::embedding_dense_backward", CPU, opd__cpu_embedding_dense_backward, Tensor, Tensor, Tensor, Int, Int, Bool) \
  X("aten::embedding_dense_backward", Meta, opd__meta_embedding_dense_backward, Tensor, Tensor, Tensor, Int, Int, Bool) \
  X("aten::embedding_renorm_", CPU, opd__cpu_embedding_renorm_, Tensor, Tensor, Tensor, Double, Double) \
  X("aten::embedding_renorm_", Meta, opd__meta_embedding_renorm_, Tensor, Tensor, Tensor, Double, Double) \
  X("aten::native_dropout_backward", CPU, opd__cpu_native_dropout_backward, Tensor, Tensor, Tensor, Double) \
  X("aten::native_dropout_backward", Meta, opd__meta_native_dropout_backward, Tensor, Tensor, Tensor, Double) \
  /* composites: kernels/src/composite_norm.c */ \
  X("aten::relu6", CompositeImplicitAutograd, opd__cia_relu6, Tensor, Tensor) \
  X("aten::log_sigmoid", CompositeImplicitAutograd, opd__cia_log_sigmoid, Tensor, Tensor) \
  X("aten::log_sigmoid_backward", CPU, opd__cpu_log_sigmoid_backward, Tensor, Tensor, Tensor, Tensor) \
  X("aten::log_sigmoid_backward", Meta, opd__meta_log_sigmoid_backward, Tensor, Tensor, Tensor, Tensor) \
  X("aten::batch_norm", CompositeImplicitAutograd, opd__cia_batch_norm, Tensor, Tensor, OptTensor, OptTensor, OptTensor, OptTensor, Bool, Double, Double, Bool) \
  X("aten::group_norm", CompositeImplicitAutograd, opd__cia_group_norm, Tensor, Tensor, Int, OptTensor, OptTensor, Double, Bool) \
  X("aten::dropout", CompositeImplicitAutograd, opd__cia_dropout, Tensor, Tensor, Double, Bool) \
  X("aten::embedding_backward", CompositeImplicitAutograd, opd__cia_embedding_backward, Tensor, Tensor, Tensor, Int, Int, Bool, Bool) \
  X("aten::nll_loss", CompositeImplicitAutograd, opd__cia_nll_loss, Tensor, Tensor, Tensor, OptTensor, Int, Int) \
  X("aten::nll_loss_nd", CompositeImplicitAutograd, opd__cia_nll_loss_nd, Tensor, Tensor, Tensor, OptTensor, Int, Int) \
  X("aten::nll_loss2d", CompositeImplicitAutograd, opd__cia_nll_loss2d, Tensor, Tensor, Tensor, OptTensor, Int, Int) \
  X("aten::cross_entropy_loss", CompositeImplicitAutograd, opd__cia_cross_entropy_loss, Tensor, Tensor, Tensor, OptTensor, Int, Int, Double)
#define OPD_NORM_BOXED_KERNELS(X) \
  X("aten::nll_loss_forward", CPU, opd__cpu_nll_loss_forward) \
  X("aten::nll_loss_forward", Meta, opd__meta_nll_loss_forward) \
  X("aten::nll_loss2d_forward", CPU, opd__cpu_nll_loss2d_forward) \
  X("aten::nll_loss2d_forward", Meta, opd__meta_nll_loss2d_forward) \
  X("aten::native_layer_norm_backward", CPU, opd__cpu_native_layer_norm_backward) \
  X("aten::native_layer_norm_backward", Meta, opd__meta_native_layer_norm_backward) \
  X("aten::native_batch_norm", CPU, opd__cpu_native_batch_norm) \
  X("aten::native_batch_norm", Meta, opd__meta_native_batch_norm) \
  X("aten::native_batch_norm_backward", CPU, opd__cpu_native_batch_norm_backward) \
  X("aten::native_batch_norm_backward", Meta, opd__meta_native_batch_norm_backward) \
  X("aten::native_dropout", CPU, opd__cpu_native_dropout) \
  X("aten::native_dropout", Meta, opd__meta_native_dropout) \
  X("aten::native_group_norm", CPU, opd__cpu_native_group_norm) \
  X("aten::native_group_norm", Meta, opd__meta_native_group_norm) \
  X("aten::native_group_norm_backward", CPU, opd__cpu_native_group_norm_backward) \
  X("aten::native_group_norm_backward", Meta, opd__meta_native_group_norm_backward) \
  X("aten::log_sigmoid_forward", CPU, opd__cpu_log_sigmoid_forward) \
  X("aten::log_sigmoid_forward", Meta, opd__meta_log_sigmoid_forward) \
  X("aten::prelu_backward", CPU, opd__cpu_prelu_backward) \
  X("aten::prelu_backward", Meta, opd__meta_prelu_backward) \
  /* the fused transformer operators: kernels/src/composite_transformer.c */ \
  X("aten::_native_multi_head_attention", CompositeExplicitAutograd, opd__cea_native_multi_head_attention) \
  X("aten::_transformer_encoder_layer_fwd", CompositeExplicitAutograd, opd__cea_transformer_encoder_layer_fwd)

/* pointwise math, factories, random operators: kernels/cpu/pointwise_*.c,
 * kernels/meta/pointwise_meta.c ([Note: Pointwise operator lists]) */
#define OPD_POINTWISE_UNBOXED_KERNELS(X) \
  X("aten::acos", CPU, opd__cpu_acos, Tensor, Tensor) \
  X("aten::acos", Meta, opd__meta_acos, Tensor, Tensor) \
  X("aten::acos_", CPU, opd__cpu_acos_, Tensor, Tensor) \
  X("aten::acos_", Meta, opd__meta_acos_, Tensor, Tensor) \
  X("aten::asin", CPU, opd__cpu_asin, Tensor, Tensor) \
  X("aten::asin", Meta, opd__meta_asin, Tensor, Tensor) \
  X("aten::asin_", CPU, opd__cpu_asin_, Tensor, Tensor) \
  X("aten::asin_", Meta, opd__meta_asin_, Tensor, Tensor) \
  X("aten::atan", CPU, opd__cpu_atan, Tensor, Tensor) \
  X("aten::atan", Meta, opd__meta_atan, Tensor, Tensor) \
  X("aten::atan_", CPU, opd__cpu_atan_, Tensor, Tensor) \
  X("aten::atan_", Meta, opd__meta_atan_, Tensor, Tensor) \
  X("aten::acosh", CPU, opd__cpu_acosh, Tensor, Tensor) \
  X("aten::acosh", Meta, opd__meta_acosh, Tensor, Tensor) \
  X("aten::acosh_", CPU, opd__cpu_acosh_, Tensor, Tensor) \
  X("aten::acosh_", Meta, opd__meta_acosh_, Tensor, Tensor) \
  X("aten::asinh", CPU, opd__cpu_asinh, Tensor, Tensor) \
  X("aten::asinh", Meta, opd__meta_asinh, Tensor, Tensor) \
  X("aten::asinh_", CPU, opd__cpu_asinh_, Tensor, Tensor) \
  X("aten::asinh_", Meta, opd__meta_asinh_, Tensor, Tensor) \
  X("aten::atanh", CPU, opd__cpu_atanh, Tensor, Tensor) \
  X("aten::atanh", Meta, opd__meta_atanh, Tensor, Tensor) \
  X("aten::atanh_", CPU, opd__cpu_atanh_, Tensor, Tensor) \
  X("aten::atanh_", Meta, opd__meta_atanh_, Tensor, Tensor) \
  X("aten::sinh", CPU, opd__cpu_sinh, Tensor, Tensor) \
  X("aten::sinh", Meta, opd__meta_sinh, Tensor, Tensor) \
  X("aten::sinh_", CPU, opd__cpu_sinh_, Tensor, Tensor) \
  X("aten::sinh_", Meta, opd__meta_sinh_, Tensor, Tensor) \
  X("aten::cosh", CPU, opd__cpu_cosh, Tensor, Tensor) \
  X("aten::cosh", Meta, opd__meta_cosh, Tensor, Tensor) \
  X("aten::cosh_", CPU, opd__cpu_cosh_, Tensor, Tensor) \
  X("aten::cosh_", Meta, opd__meta_cosh_, Tensor, Tensor) \
  X("aten::tan", CPU, opd__cpu_tan, Tensor, Tensor) \
  X("aten::tan", Meta, opd__meta_tan, Tensor, Tensor) \
  X("aten::tan_", CPU, opd__cpu_tan_, Tensor, Tensor) \
  X("aten::tan_", Meta, opd__meta_tan_, Tensor, Tensor) \
  X("aten::erf", CPU, opd__cpu_erf, Tensor, Tensor) \
  X("aten::erf", Meta, opd__meta_erf, Tensor, Tensor) \
  X("aten::erf_", CPU, opd__cpu_erf_, Tensor, Tensor) \
  X("aten::erf_", Meta, opd__meta_erf_, Tensor, Tensor) \
  X("aten::erfc", CPU, opd__cpu_erfc, Tensor, Tensor) \
  X("aten::erfc", Meta, opd__meta_erfc, Tensor, Tensor) \
  X("aten::erfc_", CPU, opd__cpu_erfc_, Tensor, Tensor) \
  X("aten::erfc_", Meta, opd__meta_erfc_, Tensor, Tensor) \
  X("aten::erfinv", CPU, opd__cpu_erfinv, Tensor, Tensor) \
  X("aten::erfinv", Meta, opd__meta_erfinv, Tensor, Tensor) \
  X("aten::erfinv_", CPU, opd__cpu_erfinv_, Tensor, Tensor) \
  X("aten::erfinv_", Meta, opd__meta_erfinv_, Tensor, Tensor) \
  X("aten::lgamma", CPU, opd__cpu_lgamma, Tensor, Tensor) \
  X("aten::lgamma", Meta, opd__meta_lgamma, Tensor, Tensor) \
  X("aten::lgamma_", CPU, opd__cpu_lgamma_, Tensor, Tensor) \
  X("aten::lgamma_", Meta, opd__meta_lgamma_, Tensor, Tensor) \
  X("aten::digamma", CPU, opd__cpu_digamma, Tensor, Tensor) \
  X("aten::digamma", Meta, opd__meta_digamma, Tensor, Tensor) \
  X("aten::digamma_", CPU, opd__cpu_digamma_, Tensor, Tensor) \
  X("aten::digamma_", Meta, opd__meta_digamma_, Tensor, Tensor) \
  X("aten::log1p", CPU, opd__cpu_log1p, Tensor, Tensor) \
  X("aten::log1p", Meta, opd__meta_log1p, Tensor, Tensor) \
  X("aten::log1p_", CPU, opd__cpu_log1p_, Tensor, Tensor) \
  X("aten::log1p_", Meta, opd__meta_log1p_, Tensor, Tensor) \
  X("aten::expm1", CPU, opd__cpu_expm1, Tensor, Tensor) \
  X("aten::expm1", Meta, opd__meta_expm1, Tensor, Tensor) \
  X("aten::expm1_", CPU, opd__cpu_expm1_, Tensor, Tensor) \
  X("aten::expm1_", Meta, opd__meta_expm1_, Tensor, Tensor) \
  X("aten::log2", CPU, opd__cpu_log2, Tensor, Tensor) \
  X("aten::log2", Meta, opd__meta_log2, Tensor, Tensor) \
  X("aten::log2_", CPU, opd__cpu_log2_, Tensor, Tensor) \
  X("aten::log2_", Meta, opd__meta_log2_, Tensor, Tensor) \
  X("aten::log10", CPU, opd__cpu_log10, Tensor, Tensor) \
  X("aten::log10", Meta, opd__meta_log10, Tensor, Tensor) \
  X("aten::log10_", CPU, opd__cpu_log10_, Tensor, Tensor) \
  X("aten::log10_", Meta, opd__meta_log10_, Tensor, Tensor) \
  X("aten::exp2", CPU, opd__cpu_exp2, Tensor, Tensor) \
  X("aten::exp2", Meta, opd__meta_exp2, Tensor, Tensor) \
  X("aten::exp2_", CPU, opd__cpu_exp2_, Tensor, Tensor) \
  X("aten::exp2_", Meta, opd__meta_exp2_, Tensor, Tensor) \
  X("aten::reciprocal", CPU, opd__cpu_reciprocal, Tensor, Tensor) \
  X("aten::reciprocal", Meta, opd__meta_reciprocal, Tensor, Tensor) \
  X("aten::reciprocal_", CPU, opd__cpu_reciprocal_, Tensor, Tensor) \
  X("aten::reciprocal_", Meta, opd__meta_reciprocal_, Tensor, Tensor) \
  X("aten::floor", CPU, opd__cpu_floor, Tensor, Tensor) \
  X("aten::floor", Meta, opd__meta_floor, Tensor, Tensor) \
  X("aten::floor_", CPU, opd__cpu_floor_, Tensor, Tensor) \
  X("aten::floor_", Meta, opd__meta_floor_, Tensor, Tensor) \
  X("aten::ceil", CPU, opd__cpu_ceil, Tensor, Tensor) \
  X("aten::ceil", Meta, opd__meta_ceil, Tensor, Tensor) \
  X("aten::ceil_", CPU, opd__cpu_ceil_, Tensor, Tensor) \
  X("aten::ceil_", Meta, opd__meta_ceil_, Tensor, Tensor) \
  X("aten::round", CPU, opd__cpu_round, Tensor, Tensor) \
  X("aten::round", Meta, opd__meta_round, Tensor, Tensor) \
  X("aten::round_", CPU, opd__cpu_round_, Tensor, Tensor) \
  X("aten::round_", Meta, opd__meta_round_, Tensor, Tensor) \
  X("aten::trunc", CPU, opd__cpu_trunc, Tensor, Tensor) \
  X("aten::trunc", Meta, opd__meta_trunc, Tensor, Tensor) \
  X("aten::trunc_", CPU, opd__cpu_trunc_, Tensor, Tensor) \
  X("aten::trunc_", Meta, opd__meta_trunc_, Tensor, Tensor) \
  X("aten::frac", CPU, opd__cpu_frac, Tensor, Tensor) \
  X("aten::frac", Meta, opd__meta_frac, Tensor, Tensor) \
  X("aten::frac_", CPU, opd__cpu_frac_, Tensor, Tensor) \
  X("aten::frac_", Meta, opd__meta_frac_, Tensor, Tensor) \
  X("aten::sign", CPU, opd__cpu_sign, Tensor, Tensor) \
  X("aten::sign", Meta, opd__meta_sign, Tensor, Tensor) \
  X("aten::sign_", CPU, opd__cpu_sign_, Tensor, Tensor) \
  X("aten::sign_", Meta, opd__meta_sign_, Tensor, Tensor) \
  X("aten::sgn", CPU, opd__cpu_sgn, Tensor, Tensor) \
  X("aten::sgn", Meta, opd__meta_sgn, Tensor, Tensor) \
  X("aten::sgn_", CPU, opd__cpu_sgn_, Tensor, Tensor) \
  X("aten::sgn_", Meta, opd__meta_sgn_, Tensor, Tensor) \
  X("aten::bitwise_not", CPU, opd__cpu_bitwise_not, Tensor, Tensor) \
  X("aten::bitwise_not", Meta, opd__meta_bitwise_not, Tensor, Tensor) \
  X("aten::bitwise_not_", CPU, opd__cpu_bitwise_not_, Tensor, Tensor) \
  X("aten::bitwise_not_", Meta, opd__meta_bitwise_not_, Tensor, Tensor) \
  X("aten::isnan", CPU, opd__cpu_isnan, Tensor, Tensor) \
  X("aten::isnan", Meta, opd__meta_isnan, Tensor, Tensor) \
  X("aten::signbit", CPU, opd__cpu_signbit, Tensor, Tensor) \
  X("aten::signbit", Meta, opd__meta_signbit, Tensor, Tensor) \
  X("aten::round.decimals", CPU, opd__cpu_round_decimals, Tensor, Tensor, Int) \
  X("aten::round.decimals", Meta, opd__meta_round_decimals, Tensor, Tensor, Int) \
  X("aten::round_.decimals", CPU, opd__cpu_round__decimals, Tensor, Tensor, Int) \
  X("aten::round_.decimals", Meta, opd__meta_round__decimals, Tensor, Tensor, Int) \
  X("aten::atan2", CPU, opd__cpu_atan2, Tensor, Tensor, Tensor) \
  X("aten::atan2", Meta, opd__meta_atan2, Tensor, Tensor, Tensor) \
  X("aten::atan2_", CPU, opd__cpu_atan2_inplace, Tensor, Tensor, Tensor) \
  X("aten::atan2_", Meta, opd__meta_atan2_inplace, Tensor, Tensor, Tensor) \
  X("aten::fmod.Tensor", CPU, opd__cpu_fmod_tensor, Tensor, Tensor, Tensor) \
  X("aten::fmod.Tensor", Meta, opd__meta_fmod_tensor, Tensor, Tensor, Tensor) \
  X("aten::fmod_.Tensor", CPU, opd__cpu_fmod_tensor_inplace, Tensor, Tensor, Tensor) \
  X("aten::fmod_.Tensor", Meta, opd__meta_fmod_tensor_inplace, Tensor, Tensor, Tensor) \
  X("aten::remainder.Tensor", CPU, opd__cpu_remainder_tensor, Tensor, Tensor, Tensor) \
  X("aten::remainder.Tensor", Meta, opd__meta_remainder_tensor, Tensor, Tensor, Tensor) \
  X("aten::remainder_.Tensor", CPU, opd__cpu_remainder_tensor_inplace, Tensor, Tensor, Tensor) \
  X("aten::remainder_.Tensor", Meta, opd__meta_remainder_tensor_inplace, Tensor, Tensor, Tensor) \
  X("aten::hypot", CPU, opd__cpu_hypot, Tensor, Tensor, Tensor) \
  X("aten::hypot", Meta, opd__meta_hypot, Tensor, Tensor, Tensor) \
  X("aten::hypot_", CPU, opd__cpu_hypot_inplace, Tensor, Tensor, Tensor) \
  X("aten::hypot_", Meta, opd__meta_hypot_inplace, Tensor, Tensor, Tensor) \
  X("aten::copysign.Tensor", CPU, opd__cpu_copysign_tensor, Tensor, Tensor, Tensor) \
  X("aten::copysign.Tensor", Meta, opd__meta_copysign_tensor, Tensor, Tensor, Tensor) \
  X("aten::copysign_.Tensor", CPU, opd__cpu_copysign_tensor_inplace, Tensor, Tensor, Tensor) \
  X("aten::copysign_.Tensor", Meta, opd__meta_copysign_tensor_inplace, Tensor, Tensor, Tensor) \
  X("aten::xlogy.Tensor", CPU, opd__cpu_xlogy_tensor, Tensor, Tensor, Tensor) \
  X("aten::xlogy.Tensor", Meta, opd__meta_xlogy_tensor, Tensor, Tensor, Tensor) \
  X("aten::xlogy_.Tensor", CPU, opd__cpu_xlogy_tensor_inplace, Tensor, Tensor, Tensor) \
  X("aten::xlogy_.Tensor", Meta, opd__meta_xlogy_tensor_inplace, Tensor, Tensor, Tensor) \
  X("aten::pow.Tensor_Tensor", CPU, opd__cpu_pow_tensor_tensor, Tensor, Tensor, Tensor) \
  X("aten::pow.Tensor_Tensor", Meta, opd__meta_pow_tensor_tensor, Tensor, Tensor, Tensor) \
  X("aten::pow_.Tensor", CPU, opd__cpu_pow_tensor_tensor_inplace, Tensor, Tensor, Tensor) \
  X("aten::pow_.Tensor", Meta, opd__meta_pow_tensor_tensor_inplace, Tensor, Tensor, Tensor) \
  X("aten::bitwise_and.Tensor", CPU, opd__cpu_bitwise_and_tensor, Tensor, Tensor, Tensor) \
  X("aten::bitwise_and.Tensor", Meta, opd__meta_bitwise_and_tensor, Tensor, Tensor, Tensor) \
  X("aten::bitwise_and_.Tensor", CPU, opd__cpu_bitwise_and_tensor_inplace, Tensor, Tensor, Tensor) \
  X("aten::bitwise_and_.Tensor", Meta, opd__meta_bitwise_and_tensor_inplace, Tensor, Tensor, Tensor) \
  X("aten::bitwise_or.Tensor", CPU, opd__cpu_bitwise_or_tensor, Tensor, Tensor, Tensor) \
  X("aten::bitwise_or.Tensor", Meta, opd__meta_bitwise_or_tensor, Tensor, Tensor, Tensor) \
  X("aten::bitwise_or_.Tensor", CPU, opd__cpu_bitwise_or_tensor_inplace, Tensor, Tensor, Tensor) \
  X("aten::bitwise_or_.Tensor", Meta, opd__meta_bitwise_or_tensor_inplace, Tensor, Tensor, Tensor) \
  X("aten::bitwise_xor.Tensor", CPU, opd__cpu_bitwise_xor_tensor, Tensor, Tensor, Tensor) \
  X("aten::bitwise_xor.Tensor", Meta, opd__meta_bitwise_xor_tensor, Tensor, Tensor, Tensor) \
  X("aten::bitwise_xor_.Tensor", CPU, opd__cpu_bitwise_xor_tensor_inplace, Tensor, Tensor, Tensor) \
  X("aten::bitwise_xor_.Tensor", Meta, opd__meta_bitwise_xor_tensor_inplace, Tensor, Tensor, Tensor) \
  X("aten::clamp_min.Tensor", CPU, opd__cpu_clamp_min_tensor, Tensor, Tensor, Tensor) \
  X("aten::clamp_min.Tensor", Meta, opd__meta_clamp_min_tensor, Tensor, Tensor, Tensor) \
  X("aten::clamp_min_.Tensor", CPU, opd__cpu_clamp_min_tensor_inplace, Tensor, Tensor, Tensor) \
  X("aten::clamp_min_.Tensor", Meta, opd__meta_clamp_min_tensor_inplace, Tensor, Tensor, Tensor) \
  X("aten::clamp_max.Tensor", CPU, opd__cpu_clamp_max_tensor, Tensor, Tensor, Tensor) \
  X("aten::clamp_max.Tensor", Meta, opd__meta_clamp_max_tensor, Tensor, Tensor, Tensor) \
  X("aten::clamp_max_.Tensor", CPU, opd__cpu_clamp_max_tensor_inplace, Tensor, Tensor, Tensor) \
  X("aten::clamp_max_.Tensor", Meta, opd__meta_clamp_max_tensor_inplace, Tensor, Tensor, Tensor) \
  X("aten::fmax", CPU, opd__cpu_fmax, Tensor, Tensor, Tensor) \
  X("aten::fmax", Meta, opd__meta_fmax, Tensor, Tensor, Tensor) \
  X("aten::fmin", CPU, opd__cpu_fmin, Tensor, Tensor, Tensor) \
  X("aten::fmin", Meta, opd__meta_fmin, Tensor, Tensor, Tensor) \
  X("aten::logaddexp", CPU, opd__cpu_logaddexp, Tensor, Tensor, Tensor) \
  X("aten::logaddexp", Meta, opd__meta_logaddexp, Tensor, Tensor, Tensor) \
  X("aten::ne.Tensor", CPU, opd__cpu_ne_tensor, Tensor, Tensor, Tensor) \
  X("aten::ne.Tensor", Meta, opd__meta_ne_tensor, Tensor, Tensor, Tensor) \
  X("aten::lt.Tensor", CPU, opd__cpu_lt_tensor, Tensor, Tensor, Tensor) \
  X("aten::lt.Tensor", Meta, opd__meta_lt_tensor, Tensor, Tensor, Tensor) \
  X("aten::le.Tensor", CPU, opd__cpu_le_tensor, Tensor, Tensor, Tensor) \
  X("aten::le.Tensor", Meta, opd__meta_le_tensor, Tensor, Tensor, Tensor) \
  X("aten::ge.Tensor", CPU, opd__cpu_ge_tensor, Tensor, Tensor, Tensor) \
  X("aten::ge.Tensor", Meta, opd__meta_ge_tensor, Tensor, Tensor, Tensor) \
  X("aten::gt.Scalar", CPU, opd__cpu_gt_scalar, Tensor, Tensor, Scalar) \
  X("aten::gt.Scalar", Meta, opd__meta_gt_scalar, Tensor, Tensor, Scalar) \
  X("aten::le.Scalar", CPU, opd__cpu_le_scalar, Tensor, Tensor, Scalar) \
  X("aten::le.Scalar", Meta, opd__meta_le_scalar, Tensor, Tensor, Scalar) \
  X("aten::ge.Scalar", CPU, opd__cpu_ge_scalar, Tensor, Tensor, Scalar) \
  X("aten::ge.Scalar", Meta, opd__meta_ge_scalar, Tensor, Tensor, Scalar) \
  X("aten::ne.Scalar", CPU, opd__cpu_ne_scalar, Tensor, Tensor, Scalar) \
  X("aten::ne.Scalar", Meta, opd__meta_ne_scalar, Tensor, Tensor, Scalar) \
  X("aten::addcmul", CPU, opd__cpu_addcmul, Tensor, Tensor, Tensor, Tensor, Scalar) \
  X("aten::addcmul", Meta, opd__meta_addcmul, Tensor, Tensor, Tensor, Tensor, Scalar) \
  X("aten::addcmul_", CPU, opd__cpu_addcmul_, Tensor, Tensor, Tensor, Tensor, Scalar) \
  X("aten::addcmul_", Meta, opd__meta_addcmul_, Tensor, Tensor, Tensor, Tensor, Scalar) \
  X("aten::addcdiv", CPU, opd__cpu_addcdiv, Tensor, Tensor, Tensor, Tensor, Scalar) \
  X("aten::addcdiv", Meta, opd__meta_addcdiv, Tensor, Tensor, Tensor, Tensor, Scalar) \
  X("aten::addcdiv_", CPU, opd__cpu_addcdiv_, Tensor, Tensor, Tensor, Tensor, Scalar) \
  X("aten::addcdiv_", Meta, opd__meta_addcdiv_, Tensor, Tensor, Tensor, Tensor, Scalar) \
  X("aten::lerp.Scalar", CPU, opd__cpu_lerp_scalar, Tensor, Tensor, Tensor, Scalar) \
  X("aten::lerp.Scalar", Meta, opd__meta_lerp_scalar, Tensor, Tensor, Tensor, Scalar) \
  X("aten::lerp_.Scalar", CPU, opd__cpu_lerp__scalar, Tensor, Tensor, Tensor, Scalar) \
  X("aten::lerp_.Scalar", Meta, opd__meta_lerp__scalar, Tensor, Tensor, Tensor, Scalar) \
  X("aten::lerp.Tensor", CPU, opd__cpu_lerp_tensor, Tensor, Tensor, Tensor, Tensor) \
  X("aten::lerp.Tensor", Meta, opd__meta_lerp_tensor, Tensor, Tensor, Tensor, Tensor) \
  X("aten::lerp_.Tensor", CPU, opd__cpu_lerp__tensor, Tensor, Tensor, Tensor, Tensor) \
  X("aten::lerp_.Tensor", Meta, opd__meta_lerp__tensor, Tensor, Tensor, Tensor, Tensor) \
  X("aten::clamp_min", CPU, opd__cpu_clamp_min, Tensor, Tensor, Scalar) \
  X("aten::clamp_min", Meta, opd__meta_clamp_min, Tensor, Tensor, Scalar) \
  X("aten::clamp_min_", CPU, opd__cpu_clamp_min_, Tensor, Tensor, Scalar) \
  X("aten::clamp_min_", Meta, opd__meta_clamp_min_, Tensor, Tensor, Scalar) \
  X("aten::clamp_max", CPU, opd__cpu_clamp_max, Tensor, Tensor, Scalar) \
  X("aten::clamp_max", Meta, opd__meta_clamp_max, Tensor, Tensor, Scalar) \
  X("aten::clamp_max_", CPU, opd__cpu_clamp_max_, Tensor, Tensor, Scalar) \
  X("aten::clamp_max_", Meta, opd__meta_clamp_max_, Tensor, Tensor, Scalar) \
  X("aten::clamp.Tensor", CPU, opd__cpu_clamp_tensor, Tensor, Tensor, OptTensor, OptTensor) \
  X("aten::clamp.Tensor", Meta, opd__meta_clamp_tensor, Tensor, Tensor, OptTensor, OptTensor) \
  X("aten::clamp_", CPU, opd__cpu_clamp_, Tensor, Tensor, OptScalar, OptScalar) \
  X("aten::clamp_", Meta, opd__meta_clamp_, Tensor, Tensor, OptScalar, OptScalar) \
  /* in-place variants, Scalar overloads and composites: kernels/src/composite_pointwise.c */ \
  X("aten::exp_", CPU, opd__cpu_exp_, Tensor, Tensor) \
  X("aten::exp_", Meta, opd__meta_exp_, Tensor, Tensor) \
  X("aten::log_", CPU, opd__cpu_log_, Tensor, Tensor) \
  X("aten::log_", Meta, opd__meta_log_, Tensor, Tensor) \
  X("aten::sqrt_", CPU, opd__cpu_sqrt_, Tensor, Tensor) \
  X("aten::sqrt_", Meta, opd__meta_sqrt_, Tensor, Tensor) \
  X("aten::rsqrt_", CPU, opd__cpu_rsqrt_, Tensor, Tensor) \
  X("aten::rsqrt_", Meta, opd__meta_rsqrt_, Tensor, Tensor) \
  X("aten::sigmoid_", CPU, opd__cpu_sigmoid_, Tensor, Tensor) \
  X("aten::sigmoid_", Meta, opd__meta_sigmoid_, Tensor, Tensor) \
  X("aten::tanh_", CPU, opd__cpu_tanh_, Tensor, Tensor) \
  X("aten::tanh_", Meta, opd__meta_tanh_, Tensor, Tensor) \
  X("aten::sin_", CPU, opd__cpu_sin_, Tensor, Tensor) \
  X("aten::sin_", Meta, opd__meta_sin_, Tensor, Tensor) \
  X("aten::cos_", CPU, opd__cpu_cos_, Tensor, Tensor) \
  X("aten::cos_", Meta, opd__meta_cos_, Tensor, Tensor) \
  X("aten::neg_", CPU, opd__cpu_neg_, Tensor, Tensor) \
  X("aten::neg_", Meta, opd__meta_neg_, Tensor, Tensor) \
  X("aten::abs_", CompositeExplicitAutograd, opd__cea_abs_, Tensor, Tensor) \
  X("aten::mul_.Tensor", CPU, opd__cpu_mul__tensor, Tensor, Tensor, Tensor) \
  X("aten::mul_.Tensor", Meta, opd__meta_mul__tensor, Tensor, Tensor, Tensor) \
  X("aten::sub_.Tensor", CPU, opd__cpu_sub__tensor, Tensor, Tensor, Tensor, Scalar) \
  X("aten::sub_.Tensor", Meta, opd__meta_sub__tensor, Tensor, Tensor, Tensor, Scalar) \
  X("aten::div_.Tensor", CPU, opd__cpu_div__tensor, Tensor, Tensor, Tensor) \
  X("aten::div_.Tensor", Meta, opd__meta_div__tensor, Tensor, Tensor, Tensor) \
  X("aten::div_.Tensor_mode", CPU, opd__cpu_div__tensor_mode, Tensor, Tensor, Tensor, OptStr) \
  X("aten::div_.Tensor_mode", Meta, opd__meta_div__tensor_mode, Tensor, Tensor, Tensor, OptStr) \
  X("aten::floor_divide", CPU, opd__cpu_floor_divide, Tensor, Tensor, Tensor) \
  X("aten::floor_divide", Meta, opd__meta_floor_divide, Tensor, Tensor, Tensor) \
  X("aten::floor_divide_.Tensor", CPU, opd__cpu_floor_divide__tensor, Tensor, Tensor, Tensor) \
  X("aten::floor_divide_.Tensor", Meta, opd__meta_floor_divide__tensor, Tensor, Tensor, Tensor) \
  X("aten::add_.Tensor", CPU, opd__cpu_add__tensor, Tensor, Tensor, Tensor, Scalar) \
  X("aten::add_.Tensor", Meta, opd__meta_add__tensor, Tensor, Tensor, Tensor, Scalar) \
  X("aten::pow_.Scalar", CPU, opd__cpu_pow__scalar, Tensor, Tensor, Scalar) \
  X("aten::pow_.Scalar", Meta, opd__meta_pow__scalar, Tensor, Tensor, Scalar) \
  X("aten::rsub.Tensor", CPU, opd__cpu_rsub_tensor, Tensor, Tensor, Tensor, Scalar) \
  X("aten::rsub.Tensor", Meta, opd__meta_rsub_tensor, Tensor, Tensor, Tensor, Scalar) \
  X("aten::pow.Scalar", CPU, opd__cpu_pow_scalar, Tensor, Scalar, Tensor) \
  X("aten::pow.Scalar", Meta, opd__meta_pow_scalar, Tensor, Scalar, Tensor) \
  X("aten::remainder.Scalar_Tensor", CPU, opd__cpu_remainder_scalar_tensor, Tensor, Scalar, Tensor) \
  X("aten::remainder.Scalar_Tensor", Meta, opd__meta_remainder_scalar_tensor, Tensor, Scalar, Tensor) \
  X("aten::div.Scalar", CompositeExplicitAutograd, opd__cea_div_scalar, Tensor, Tensor, Scalar) \
  X("aten::fmod.Scalar", CompositeExplicitAutograd, opd__cea_fmod_scalar, Tensor, Tensor, Scalar) \
  X("aten::remainder.Scalar", CompositeExplicitAutograd, opd__cea_remainder_scalar, Tensor, Tensor, Scalar) \
  X("aten::copysign.Scalar", CompositeExplicitAutograd, opd__cea_copysign_scalar, Tensor, Tensor, Scalar) \
  X("aten::xlogy.Scalar_Other", CompositeExplicitAutograd, opd__cea_xlogy_scalar_other, Tensor, Tensor, Scalar) \
  X("aten::bitwise_and.Scalar", CompositeExplicitAutograd, opd__cea_bitwise_and_scalar, Tensor, Tensor, Scalar) \
  X("aten::bitwise_or.Scalar", CompositeExplicitAutograd, opd__cea_bitwise_or_scalar, Tensor, Tensor, Scalar) \
  X("aten::bitwise_xor.Scalar", CompositeExplicitAutograd, opd__cea_bitwise_xor_scalar, Tensor, Tensor, Scalar) \
  X("aten::mul_.Scalar", CompositeExplicitAutograd, opd__cea_mul__scalar, Tensor, Tensor, Scalar) \
  X("aten::div_.Scalar", CompositeExplicitAutograd, opd__cea_div__scalar, Tensor, Tensor, Scalar) \
  X("aten::fmod_.Scalar", CompositeExplicitAutograd, opd__cea_fmod__scalar, Tensor, Tensor, Scalar) \
  X("aten::remainder_.Scalar", CompositeExplicitAutograd, opd__cea_remainder__scalar, Tensor, Tensor, Scalar) \
  X("aten::xlogy.Scalar_Self", CompositeExplicitAutograd, opd__cea_xlogy_scalar_self, Tensor, Scalar, Tensor) \
  X("aten::sub.Scalar", CompositeExplicitAutograd, opd__cea_sub_scalar, Tensor, Tensor, Scalar, Scalar) \
  X("aten::rsub.Scalar", CompositeExplicitAutograd, opd__cea_rsub_scalar, Tensor, Tensor, Scalar, Scalar) \
  X("aten::add_.Scalar", CompositeExplicitAutograd, opd__cea_add__scalar, Tensor, Tensor, Scalar, Scalar) \
  X("aten::sub_.Scalar", CompositeExplicitAutograd, opd__cea_sub__scalar, Tensor, Tensor, Scalar, Scalar) \
  X("aten::div.Scalar_mode", CompositeExplicitAutograd, opd__cea_div_scalar_mode, Tensor, Tensor, Scalar, OptStr) \
  X("aten::logical_not", CompositeExplicitAutograd, opd__cea_logical_not, Tensor, Tensor) \
  X("aten::logical_and", CompositeExplicitAutograd, opd__cea_logical_and, Tensor, Tensor, Tensor) \
  X("aten::logical_or", CompositeExplicitAutograd, opd__cea_logical_or, Tensor, Tensor, Tensor) \
  X("aten::logical_xor", CompositeExplicitAutograd, opd__cea_logical_xor, Tensor, Tensor, Tensor) \
  X("aten::isinf", CompositeExplicitAutograd, opd__cea_isinf, Tensor, Tensor) \
  X("aten::floor_divide.Scalar", CompositeImplicitAutograd, opd__cia_floor_divide_scalar, Tensor, Tensor, Scalar) \
  X("aten::square", CompositeImplicitAutograd, opd__cia_square, Tensor, Tensor) \
  X("aten::isfinite", CompositeImplicitAutograd, opd__cia_isfinite, Tensor, Tensor) \
  X("aten::where.ScalarOther", CompositeImplicitAutograd, opd__cia_where_scalarother, Tensor, Tensor, Tensor, Scalar) \
  X("aten::where.ScalarSelf", CompositeImplicitAutograd, opd__cia_where_scalarself, Tensor, Tensor, Scalar, Tensor) \
  X("aten::where.Scalar", CompositeImplicitAutograd, opd__cia_where_scalar, Tensor, Tensor, Scalar, Scalar) \
  /* special functions, without in-place variants: kernels/cpu/pointwise_special.c */ \
  X("aten::i0", CPU, opd__cpu_i0, Tensor, Tensor) \
  X("aten::i0", Meta, opd__meta_i0, Tensor, Tensor) \
  X("aten::special_i0e", CPU, opd__cpu_special_i0e, Tensor, Tensor) \
  X("aten::special_i0e", Meta, opd__meta_special_i0e, Tensor, Tensor) \
  X("aten::special_i1", CPU, opd__cpu_special_i1, Tensor, Tensor) \
  X("aten::special_i1", Meta, opd__meta_special_i1, Tensor, Tensor) \
  X("aten::special_i1e", CPU, opd__cpu_special_i1e, Tensor, Tensor) \
  X("aten::special_i1e", Meta, opd__meta_special_i1e, Tensor, Tensor) \
  X("aten::special_ndtr", CPU, opd__cpu_special_ndtr, Tensor, Tensor) \
  X("aten::special_ndtr", Meta, opd__meta_special_ndtr, Tensor, Tensor) \
  X("aten::special_ndtri", CPU, opd__cpu_special_ndtri, Tensor, Tensor) \
  X("aten::special_ndtri", Meta, opd__meta_special_ndtri, Tensor, Tensor) \
  X("aten::special_log_ndtr", CPU, opd__cpu_special_log_ndtr, Tensor, Tensor) \
  X("aten::special_log_ndtr", Meta, opd__meta_special_log_ndtr, Tensor, Tensor) \
  X("aten::special_erfcx", CPU, opd__cpu_special_erfcx, Tensor, Tensor) \
  X("aten::special_erfcx", Meta, opd__meta_special_erfcx, Tensor, Tensor) \
  X("aten::special_entr", CPU, opd__cpu_special_entr, Tensor, Tensor) \
  X("aten::special_entr", Meta, opd__meta_special_entr, Tensor, Tensor) \
  X("aten::sinc", CPU, opd__cpu_sinc, Tensor, Tensor) \
  X("aten::sinc", Meta, opd__meta_sinc, Tensor, Tensor) \
  X("aten::deg2rad", CPU, opd__cpu_deg2rad, Tensor, Tensor) \
  X("aten::deg2rad", Meta, opd__meta_deg2rad, Tensor, Tensor) \
  X("aten::rad2deg", CPU, opd__cpu_rad2deg, Tensor, Tensor) \
  X("aten::rad2deg", Meta, opd__meta_rad2deg, Tensor, Tensor) \
  X("aten::isposinf", CPU, opd__cpu_isposinf, Tensor, Tensor) \
  X("aten::isposinf", Meta, opd__meta_isposinf, Tensor, Tensor) \
  X("aten::isneginf", CPU, opd__cpu_isneginf, Tensor, Tensor) \
  X("aten::isneginf", Meta, opd__meta_isneginf, Tensor, Tensor) \
  X("aten::logaddexp2", CPU, opd__cpu_logaddexp2, Tensor, Tensor, Tensor) \
  X("aten::logaddexp2", Meta, opd__meta_logaddexp2, Tensor, Tensor, Tensor) \
  X("aten::nextafter", CPU, opd__cpu_nextafter, Tensor, Tensor, Tensor) \
  X("aten::nextafter", Meta, opd__meta_nextafter, Tensor, Tensor, Tensor) \
  X("aten::gcd", CPU, opd__cpu_gcd, Tensor, Tensor, Tensor) \
  X("aten::gcd", Meta, opd__meta_gcd, Tensor, Tensor, Tensor) \
  X("aten::lcm", CPU, opd__cpu_lcm, Tensor, Tensor, Tensor) \
  X("aten::lcm", Meta, opd__meta_lcm, Tensor, Tensor, Tensor) \
  X("aten::special_xlog1py", CPU, opd__cpu_special_xlog1py, Tensor, Tensor, Tensor) \
  X("aten::special_xlog1py", Meta, opd__meta_special_xlog1py, Tensor, Tensor, Tensor) \
  X("aten::heaviside", CPU, opd__cpu_heaviside, Tensor, Tensor, Tensor) \
  X("aten::heaviside", Meta, opd__meta_heaviside, Tensor, Tensor, Tensor) \
  /* functional copy and fill: kernels/src/composite_pointwise.c */ \
  X("aten::copy", CompositeImplicitAutograd, opd__cia_copy, Tensor, Tensor, Tensor, Bool) \
  X("aten::fill.Scalar", CompositeExplicitAutograd, opd__cea_fill_scalar, Tensor, Tensor, Scalar) \
  X("aten::fill.Tensor", CompositeExplicitAutograd, opd__cea_fill_tensor, Tensor, Tensor, Tensor) \
  /* factories and aten::to: kernels/src/composite_factory.c */ \
  X("aten::empty_like", CompositeExplicitAutograd, opd__cea_empty_like, Tensor, Tensor, OptDType, OptLayout, OptDevice, OptBool, OptMemoryFormat) \
  X("aten::zeros_like", CompositeExplicitAutograd, opd__cea_zeros_like, Tensor, Tensor, OptDType, OptLayout, OptDevice, OptBool, OptMemoryFormat) \
  X("aten::ones_like", CompositeExplicitAutograd, opd__cea_ones_like, Tensor, Tensor, OptDType, OptLayout, OptDevice, OptBool, OptMemoryFormat) \
  X("aten::full_like", CompositeExplicitAutograd, opd__cea_full_like, Tensor, Tensor, Scalar, OptDType, OptLayout, OptDevice, OptBool, OptMemoryFormat) \
  X("aten::new_empty", CompositeExplicitAutograd, opd__cea_new_empty, Tensor, Tensor, IntList, OptDType, OptLayout, OptDevice, OptBool) \
  X("aten::new_zeros", CompositeExplicitAutograd, opd__cea_new_zeros, Tensor, Tensor, IntList, OptDType, OptLayout, OptDevice, OptBool) \
  X("aten::new_ones", CompositeExplicitAutograd, opd__cea_new_ones, Tensor, Tensor, IntList, OptDType, OptLayout, OptDevice, OptBool) \
  X("aten::new_full", CompositeExplicitAutograd, opd__cea_new_full, Tensor, Tensor, IntList, Scalar, OptDType, OptLayout, OptDevice, OptBool) \
  X("aten::scalar_tensor", CompositeExplicitAutograd, opd__cea_scalar_tensor, Tensor, Scalar, OptDType, OptLayout, OptDevice, OptBool) \
  X("aten::lift_fresh", CompositeExplicitAutograd, opd__cea_lift_fresh, Tensor, Tensor) \
  X("aten::zero_", CPU, opd__cpu_zero_, Tensor, Tensor) \
  X("aten::zero_", Meta, opd__meta_zero_, Tensor, Tensor) \
  X("aten::fill_.Tensor", CPU, opd__cpu_fill__tensor, Tensor, Tensor, Tensor) \
  X("aten::fill_.Tensor", Meta, opd__meta_fill__tensor, Tensor, Tensor, Tensor) \
  X("aten::to.dtype", CompositeImplicitAutograd, opd__cia_to_dtype, Tensor, Tensor, DType, Bool, Bool, OptMemoryFormat) \
  X("aten::to.dtype_layout", CompositeImplicitAutograd, opd__cia_to_dtype_layout, Tensor, Tensor, OptDType, OptLayout, OptDevice, OptBool, Bool, Bool, OptMemoryFormat) \
  X("aten::to.other", CompositeImplicitAutograd, opd__cia_to_other, Tensor, Tensor, Tensor, Bool, Bool, OptMemoryFormat) \
  /* random factories: kernels/cpu/random.c */ \
  X("aten::rand", CompositeExplicitAutograd, opd__cea_rand, Tensor, IntList, OptDType, OptLayout, OptDevice, OptBool) \
  X("aten::randn", CompositeExplicitAutograd, opd__cea_randn, Tensor, IntList, OptDType, OptLayout, OptDevice, OptBool) \
  X("aten::rand_like", CompositeExplicitAutograd, opd__cea_rand_like, Tensor, Tensor, OptDType, OptLayout, OptDevice, OptBool, OptMemoryFormat) \
  X("aten::randn_like", CompositeExplicitAutograd, opd__cea_randn_like, Tensor, Tensor, OptDType, OptLayout, OptDevice, OptBool, OptMemoryFormat) \
  X("aten::randint", CompositeExplicitAutograd, opd__cea_randint, Tensor, Int, IntList, OptDType, OptLayout, OptDevice, OptBool) \
  X("aten::randint.low", CompositeExplicitAutograd, opd__cea_randint_low, Tensor, Int, Int, IntList, OptDType, OptLayout, OptDevice, OptBool) \
  X("aten::randperm", CompositeExplicitAutograd, opd__cea_randperm, Tensor, Int, OptDType, OptLayout, OptDevice, OptBool) \
  X("aten::eye", CompositeExplicitAutograd, opd__cea_eye, Tensor, Int, OptDType, OptLayout, OptDevice, OptBool) \
  X("aten::eye.m", CompositeExplicitAutograd, opd__cea_eye_m, Tensor, Int, Int, OptDType, OptLayout, OptDevice, OptBool) \
  X("aten::linspace", CompositeExplicitAutograd, opd__cea_linspace, Tensor, Scalar, Scalar, Int, OptDType, OptLayout, OptDevice, OptBool) \
  X("aten::logspace", CompositeExplicitAutograd, opd__cea_logspace, Tensor, Scalar, Scalar, Int, Double, OptDType, OptLayout, OptDevice, OptBool)
#define OPD_POINTWISE_BOXED_KERNELS(X) \
  X("aten::to.device", CompositeImplicitAutograd, opd__cia_to_device) \
  /* random operators (a Generator? argument): kernels/cpu/random.c */ \
  X("aten::uniform_", CPU, opd__cpu_uniform_) \
  X("aten::uniform_", Meta, opd__meta_uniform_) \
  X("aten::normal_", CPU, opd__cpu_normal_) \
  X("aten::normal_", Meta, opd__meta_normal_) \
  X("aten::exponential_", CPU, opd__cpu_exponential_) \
  X("aten::exponential_", Meta, opd__meta_exponential_) \
  X("aten::bernoulli_.float", CPU, opd__cpu_bernoulli__float) \
  X("aten::bernoulli_.float", Meta, opd__meta_bernoulli__float) \
  X("aten::bernoulli_.Tensor", CPU, opd__cpu_bernoulli__tensor) \
  X("aten::bernoulli_.Tensor", Meta, opd__meta_bernoulli__tensor) \
  X("aten::random_", CPU, opd__cpu_random_) \
  X("aten::random_", Meta, opd__meta_random_) \
  X("aten::random_.from", CPU, opd__cpu_random__from) \
  X("aten::random_.from", Meta, opd__meta_random__from) \
  X("aten::random_.to", CPU, opd__cpu_random__to) \
  X("aten::random_.to", Meta, opd__meta_random__to) \
  X("aten::bernoulli", CompositeExplicitAutograd, opd__cea_bernoulli) \
  /* nan_to_num (a float? argument): kernels/cpu/pointwise_unary.c */ \
  X("aten::nan_to_num", CPU, opd__cpu_nan_to_num) \
  X("aten::nan_to_num", Meta, opd__meta_nan_to_num) \
  X("aten::nan_to_num_", CPU, opd__cpu_nan_to_num_) \
  X("aten::nan_to_num_", Meta, opd__meta_nan_to_num_)

/* indexing, joining, shapes, sorting */
#define OPD_INDEX_UNBOXED_KERNELS(X) \
  /* views and shapes: kernels/src/views_index.c, kernels/src/composite_index.c */ \
  X("aten::squeeze", CompositeExplicitAutograd, opd__cea_squeeze, Tensor, Tensor) \
  X("aten::diagonal", CompositeExplicitAutograd, opd__cea_diagonal, Tensor, Tensor, Int, Int, Int) \
  X("aten::unfold", CPU, opd__unfold, Tensor, Tensor, Int, Int, Int) \
  X("aten::unfold", Meta, opd__unfold_meta, Tensor, Tensor, Int, Int, Int) \
  X("aten::flatten.using_ints", CompositeImplicitAutograd, opd__cia_flatten_using_ints, Tensor, Tensor, Int, Int) \
  X("aten::unflatten.int", CompositeImplicitAutograd, opd__cia_unflatten_int, Tensor, Tensor, Int, IntList) \
  X("aten::movedim.int", CompositeImplicitAutograd, opd__cia_movedim_int, Tensor, Tensor, Int, Int) \
  X("aten::movedim.intlist", CompositeImplicitAutograd, opd__cia_movedim_intlist, Tensor, Tensor, IntList, IntList) \
  X("aten::narrow", CompositeImplicitAutograd, opd__cia_narrow, Tensor, Tensor, Int, Int, Int) \
  X("aten::expand_as", CompositeImplicitAutograd, opd__cia_expand_as, Tensor, Tensor, Tensor) \
  X("aten::view_as", CompositeImplicitAutograd, opd__cia_view_as, Tensor, Tensor, Tensor) \
  X("aten::reshape_as", CompositeImplicitAutograd, opd__cia_reshape_as, Tensor, Tensor, Tensor) \
  X("aten::swapaxes", CompositeImplicitAutograd, opd__cia_swapaxes, Tensor, Tensor, Int, Int) \
  X("aten::tile", CompositeImplicitAutograd, opd__cia_tile, Tensor, Tensor, IntList) \
  X("aten::repeat", CompositeExplicitAutograd, opd__cea_repeat, Tensor, Tensor, IntList) \
  X("aten::rot90", CompositeExplicitAutograd, opd__cea_rot90, Tensor, Tensor, Int, IntList) \
  X("aten::diag_embed", CompositeExplicitAutograd, opd__cea_diag_embed, Tensor, Tensor, Int, Int, Int) \
  X("aten::diag", CompositeExplicitAutograd, opd__cea_diag, Tensor, Tensor, Int) \
  X("aten::stack", CompositeExplicitAutograd, opd__cea_stack, Tensor, TensorList, Int) \
  X("aten::hstack", CompositeImplicitAutograd, opd__cia_hstack, Tensor, TensorList) \
  X("aten::vstack", CompositeImplicitAutograd, opd__cia_vstack, Tensor, TensorList) \
  X("aten::select_scatter", CompositeExplicitAutograd, opd__cea_select_scatter, Tensor, Tensor, Tensor, Int, Int) \
  X("aten::slice_scatter", CompositeExplicitAutograd, opd__cea_slice_scatter, Tensor, Tensor, Tensor, Int, OptInt, OptInt, Int) \
  X("aten::diagonal_scatter", CompositeExplicitAutograd, opd__cea_diagonal_scatter, Tensor, Tensor, Tensor, Int, Int, Int) \
  /* flip, roll, tril, triu: kernels/cpu/index_shape.c, kernels/meta/index_shape_meta.c */ \
  X("aten::flip", CPU, opd__cpu_flip, Tensor, Tensor, IntList) \
  X("aten::flip", Meta, opd__meta_flip, Tensor, Tensor, IntList) \
  X("aten::roll", CPU, opd__cpu_roll, Tensor, Tensor, IntList, IntList) \
  X("aten::roll", Meta, opd__meta_roll, Tensor, Tensor, IntList, IntList) \
  X("aten::tril", CPU, opd__cpu_tril, Tensor, Tensor, Int) \
  X("aten::tril", Meta, opd__meta_tril, Tensor, Tensor, Int) \
  X("aten::triu", CPU, opd__cpu_triu, Tensor, Tensor, Int) \
  X("aten::triu", Meta, opd__meta_triu, Tensor, Tensor, Int) \
  /* gather, scatter, index_add/copy/fill: kernels/cpu/index_scatter.c, kernels/meta/index_scatter_meta.c */ \
  X("aten::gather", CPU, opd__cpu_gather, Tensor, Tensor, Int, Tensor, Bool) \
  X("aten::gather", Meta, opd__meta_gather, Tensor, Tensor, Int, Tensor, Bool) \
  X("aten::scatter.src", CPU, opd__cpu_scatter_src, Tensor, Tensor, Int, Tensor, Tensor) \
  X("aten::scatter.src", Meta, opd__meta_scatter_src, Tensor, Tensor, Int, Tensor, Tensor) \
  X("aten::scatter.value", CPU, opd__cpu_scatter_value, Tensor, Tensor, Int, Tensor, Scalar) \
  X("aten::scatter.value", Meta, opd__meta_scatter_value, Tensor, Tensor, Int, Tensor, Scalar) \
  X("aten::scatter.reduce", CPU, opd__cpu_scatter_reduce, Tensor, Tensor, Int, Tensor, Tensor, Str) \
  X("aten::scatter.reduce", Meta, opd__meta_scatter_reduce, Tensor, Tensor, Int, Tensor, Tensor, Str) \
  X("aten::scatter.value_reduce", CPU, opd__cpu_scatter_value_reduce, Tensor, Tensor, Int, Tensor, Scalar, Str) \
  X("aten::scatter.value_reduce", Meta, opd__meta_scatter_value_reduce, Tensor, Tensor, Int, Tensor, Scalar, Str) \
  X("aten::scatter_.src", CPU, opd__cpu_scatter__src, Tensor, Tensor, Int, Tensor, Tensor) \
  X("aten::scatter_.src", Meta, opd__meta_scatter__src, Tensor, Tensor, Int, Tensor, Tensor) \
  X("aten::scatter_add", CPU, opd__cpu_scatter_add, Tensor, Tensor, Int, Tensor, Tensor) \
  X("aten::scatter_add", Meta, opd__meta_scatter_add, Tensor, Tensor, Int, Tensor, Tensor) \
  X("aten::scatter_add_", CPU, opd__cpu_scatter_add_, Tensor, Tensor, Int, Tensor, Tensor) \
  X("aten::scatter_add_", Meta, opd__meta_scatter_add_, Tensor, Tensor, Int, Tensor, Tensor) \
  X("aten::scatter_reduce.two", CPU, opd__cpu_scatter_reduce_two, Tensor, Tensor, Int, Tensor, Tensor, Str, Bool) \
  X("aten::scatter_reduce.two", Meta, opd__meta_scatter_reduce_two, Tensor, Tensor, Int, Tensor, Tensor, Str, Bool) \
  X("aten::index_add", CPU, opd__cpu_index_add, Tensor, Tensor, Int, Tensor, Tensor, Scalar) \
  X("aten::index_add", Meta, opd__meta_index_add, Tensor, Tensor, Int, Tensor, Tensor, Scalar) \
  X("aten::index_copy", CPU, opd__cpu_index_copy, Tensor, Tensor, Int, Tensor, Tensor) \
  X("aten::index_copy", Meta, opd__meta_index_copy, Tensor, Tensor, Int, Tensor, Tensor) \
  X("aten::index_add_", CPU, opd__cpu_index_add_, Tensor, Tensor, Int, Tensor, Tensor, Scalar) \
  X("aten::index_add_", Meta, opd__meta_index_add_, Tensor, Tensor, Int, Tensor, Tensor, Scalar) \
  X("aten::index_copy_", CPU, opd__cpu_index_copy_, Tensor, Tensor, Int, Tensor, Tensor) \
  X("aten::index_copy_", Meta, opd__meta_index_copy_, Tensor, Tensor, Int, Tensor, Tensor) \
  X("aten::index_fill_.int_Scalar", CPU, opd__cpu_index_fill__int_scalar, Tensor, Tensor, Int, Tensor, Scalar) \
  X("aten::index_fill_.int_Scalar", Meta, opd__meta_index_fill__int_scalar, Tensor, Tensor, Int, Tensor, Scalar) \
  X("aten::index_fill_.int_Tensor", CPU, opd__cpu_index_fill__int_tensor, Tensor, Tensor, Int, Tensor, Tensor) \
  X("aten::index_fill_.int_Tensor", Meta, opd__meta_index_fill__int_tensor, Tensor, Tensor, Int, Tensor, Tensor) \
  X("aten::index_fill.int_Scalar", CompositeExplicitAutograd, opd__cea_index_fill_int_scalar, Tensor, Tensor, Int, Tensor, Scalar) \
  X("aten::index_fill.int_Tensor", CompositeExplicitAutograd, opd__cea_index_fill_int_tensor, Tensor, Tensor, Int, Tensor, Tensor) \
  /* masks, nonzero, take, put: kernels/cpu/index_mask.c, kernels/meta/index_mask_meta.c */ \
  X("aten::masked_fill.Tensor", CompositeExplicitAutograd, opd__cea_masked_fill_tensor, Tensor, Tensor, Tensor, Tensor) \
  X("aten::masked_fill_.Tensor", CPU, opd__cpu_masked_fill__tensor, Tensor, Tensor, Tensor, Tensor) \
  X("aten::masked_fill_.Tensor", Meta, opd__meta_masked_fill__tensor, Tensor, Tensor, Tensor, Tensor) \
  X("aten::masked_scatter", CompositeExplicitAutograd, opd__cea_masked_scatter, Tensor, Tensor, Tensor, Tensor) \
  X("aten::masked_scatter_", CPU, opd__cpu_masked_scatter_, Tensor, Tensor, Tensor, Tensor) \
  X("aten::masked_scatter_", Meta, opd__meta_masked_scatter_, Tensor, Tensor, Tensor, Tensor) \
  X("aten::masked_select", CPU, opd__cpu_masked_select, Tensor, Tensor, Tensor) \
  X("aten::nonzero", CPU, opd__cpu_nonzero, Tensor, Tensor) \
  X("aten::argwhere", CompositeImplicitAutograd, opd__cia_argwhere, Tensor, Tensor) \
  X("aten::take", CPU, opd__cpu_take, Tensor, Tensor, Tensor) \
  X("aten::take", Meta, opd__meta_take, Tensor, Tensor, Tensor) \
  X("aten::put_", CPU, opd__cpu_put_, Tensor, Tensor, Tensor, Tensor, Bool) \
  X("aten::put_", Meta, opd__meta_put_, Tensor, Tensor, Tensor, Tensor, Bool) \
  X("aten::put", CompositeExplicitAutograd, opd__cea_put, Tensor, Tensor, Tensor, Tensor, Bool) \
  /* cumulative operators: kernels/cpu/index_cum.c, kernels/meta/index_cum_meta.c */ \
  X("aten::cumsum", CPU, opd__cpu_cumsum, Tensor, Tensor, Int, OptDType) \
  X("aten::cumsum", Meta, opd__meta_cumsum, Tensor, Tensor, Int, OptDType) \
  X("aten::cumprod", CPU, opd__cpu_cumprod, Tensor, Tensor, Int, OptDType) \
  X("aten::cumprod", Meta, opd__meta_cumprod, Tensor, Tensor, Int, OptDType) \
  X("aten::_logcumsumexp", CPU, opd__cpu_logcumsumexp_impl, Tensor, Tensor, Int) \
  X("aten::_logcumsumexp", Meta, opd__meta_logcumsumexp_impl, Tensor, Tensor, Int) \
  X("aten::logcumsumexp", CompositeExplicitAutograd, opd__cea_logcumsumexp, Tensor, Tensor, Int) \
  /* index_reduce (scatter_reduce.two along dim): kernels/src/composite_index.c */ \
  X("aten::index_reduce", CPU, opd__cpu_index_reduce, Tensor, Tensor, Int, Tensor, Tensor, Str, Bool) \
  X("aten::index_reduce", Meta, opd__meta_index_reduce, Tensor, Tensor, Int, Tensor, Tensor, Str, Bool) \
  /* advanced indexing: kernels/cpu/index_advanced.c, kernels/meta/index_advanced_meta.c */ \
  X("aten::index.Tensor", CPU, opd__cpu_index_tensor, Tensor, Tensor, OptTensorList) \
  X("aten::index.Tensor", Meta, opd__meta_index_tensor, Tensor, Tensor, OptTensorList) \
  X("aten::_index_put_impl_", CPU, opd__cpu_index_put_impl_, Tensor, Tensor, OptTensorList, Tensor, Bool, Bool) \
  X("aten::_index_put_impl_", Meta, opd__meta_index_put_impl_, Tensor, Tensor, OptTensorList, Tensor, Bool, Bool) \
  X("aten::index_put_", CompositeExplicitAutograd, opd__cea_index_put_, Tensor, Tensor, OptTensorList, Tensor, Bool) \
  X("aten::index_put", CompositeExplicitAutograd, opd__cea_index_put, Tensor, Tensor, OptTensorList, Tensor, Bool) \
  /* sorting: kernels/src/composite_index.c */ \
  X("aten::argsort", CompositeImplicitAutograd, opd__cia_argsort, Tensor, Tensor, Int, Bool) \
  X("aten::msort", CompositeImplicitAutograd, opd__cia_msort, Tensor, Tensor) \
  X("aten::argsort.stable", CPU, opd__argsort_stable, Tensor, Tensor, Bool, Int, Bool) \
  X("aten::argsort.stable", Meta, opd__argsort_stable_meta, Tensor, Tensor, Bool, Int, Bool) \
  X("aten::searchsorted.Tensor", CPU, opd__cpu_searchsorted_tensor, Tensor, Tensor, Tensor, Bool, Bool, OptStr, OptTensor) \
  X("aten::searchsorted.Tensor", Meta, opd__meta_searchsorted_tensor, Tensor, Tensor, Tensor, Bool, Bool, OptStr, OptTensor) \
  X("aten::searchsorted.Scalar", CPU, opd__cpu_searchsorted_scalar, Tensor, Tensor, Scalar, Bool, Bool, OptStr, OptTensor) \
  X("aten::searchsorted.Scalar", Meta, opd__meta_searchsorted_scalar, Tensor, Tensor, Scalar, Bool, Bool, OptStr, OptTensor) \
  X("aten::bucketize.Tensor", CPU, opd__cpu_bucketize_tensor, Tensor, Tensor, Tensor, Bool, Bool) \
  X("aten::bucketize.Tensor", Meta, opd__meta_bucketize_tensor, Tensor, Tensor, Tensor, Bool, Bool) \
  X("aten::bucketize.Scalar", CPU, opd__cpu_bucketize_scalar, Tensor, Scalar, Tensor, Bool, Bool) \
  X("aten::bucketize.Scalar", Meta, opd__meta_bucketize_scalar, Tensor, Scalar, Tensor, Bool, Bool) \
  /* repeat_interleave: kernels/cpu/index_mask.c, kernels/src/composite_index.c */ \
  X("aten::repeat_interleave.Tensor", CPU, opd__cpu_repeat_interleave_tensor, Tensor, Tensor, OptInt) \
  X("aten::repeat_interleave.self_Tensor", CompositeImplicitAutograd, opd__cia_repeat_interleave_self_tensor, Tensor, Tensor, Tensor, OptInt, OptInt) \
  X("aten::repeat_interleave.self_int", CompositeImplicitAutograd, opd__cia_repeat_interleave_self_int, Tensor, Tensor, Int, OptInt, OptInt)
#define OPD_INDEX_BOXED_KERNELS(X) \
  /* splitting into views: kernels/src/views_index.c */ \
  X("aten::split_with_sizes", CompositeExplicitAutograd, opd__cea_split_with_sizes) \
  X("aten::unsafe_split.Tensor", CompositeExplicitAutograd, opd__cea_unsafe_split_tensor) \
  X("aten::unsafe_split_with_sizes", CompositeExplicitAutograd, opd__cea_unsafe_split_with_sizes) \
  X("aten::chunk", CompositeImplicitAutograd, opd__cia_chunk) \
  X("aten::tensor_split.sections", CompositeImplicitAutograd, opd__cia_tensor_split_sections) \
  X("aten::tensor_split.indices", CompositeImplicitAutograd, opd__cia_tensor_split_indices) \
  /* sorting (two results): kernels/cpu/index_sort.c, kernels/meta/index_sort_meta.c, \
     kernels/src/composite_index.c */ \
  X("aten::sort.stable", CPU, opd__cpu_sort_stable) \
  X("aten::sort.stable", Meta, opd__meta_sort_stable) \
  X("aten::sort", CompositeExplicitAutograd, opd__cea_sort) \
  X("aten::topk", CPU, opd__cpu_topk) \
  X("aten::topk", Meta, opd__meta_topk) \
  X("aten::kthvalue", CompositeExplicitAutograd, opd__cea_kthvalue) \
  X("aten::cummax", CPU, opd__cpu_cummax) \
  X("aten::cummax", Meta, opd__meta_cummax_cummin) \
  X("aten::cummin", CPU, opd__cpu_cummin) \
  X("aten::cummin", Meta, opd__meta_cummax_cummin) \
  X("aten::_unique2", CPU, opd__cpu_unique2) \
  X("aten::unique_dim", CPU, opd__cpu_unique_dim)

/* reductions and linear algebra: kernels/cpu/reduce*.c, kernels/meta/reduce_meta.c,
 * kernels/src/composite_reduce.c, kernels/src/composite_moments.c; matrix and vector products:
 * kernels/cpu/linalg.c, kernels/meta/linalg_meta.c, kernels/src/composite_products.c; LAPACK:
 * kernels/cpu/lapack.c, kernels/meta/lapack_meta.c, kernels/src/composite_lapack.c */
#define OPD_REDUCE_UNBOXED_KERNELS(X) \
  X("aten::mean", CompositeExplicitAutograd, opd__cea_mean, Tensor, Tensor, OptDType) \
  X("aten::nansum", CPU, opd__cpu_nansum, Tensor, Tensor, OptIntList, Bool, OptDType) \
  X("aten::nansum", Meta, opd__meta_nansum, Tensor, Tensor, OptIntList, Bool, OptDType) \
  X("aten::prod", CPU, opd__cpu_prod, Tensor, Tensor, OptDType) \
  X("aten::prod", Meta, opd__meta_prod, Tensor, Tensor, OptDType) \
  X("aten::prod.dim_int", CPU, opd__cpu_prod_dim_int, Tensor, Tensor, Int, Bool, OptDType) \
  X("aten::prod.dim_int", Meta, opd__meta_prod_dim_int, Tensor, Tensor, Int, Bool, OptDType) \
  X("aten::amin", CPU, opd__cpu_amin, Tensor, Tensor, IntList, Bool) \
  X("aten::amin", Meta, opd__meta_amin, Tensor, Tensor, IntList, Bool) \
  X("aten::max", CPU, opd__cpu_max, Tensor, Tensor) \
  X("aten::max", Meta, opd__meta_max, Tensor, Tensor) \
  X("aten::min", CPU, opd__cpu_min, Tensor, Tensor) \
  X("aten::min", Meta, opd__meta_min, Tensor, Tensor) \
  X("aten::argmin", CPU, opd__cpu_argmin, Tensor, Tensor, OptInt, Bool) \
  X("aten::argmin", Meta, opd__meta_argmin, Tensor, Tensor, OptInt, Bool) \
  X("aten::any", CPU, opd__cpu_any, Tensor, Tensor) \
  X("aten::any", Meta, opd__meta_any, Tensor, Tensor) \
  X("aten::any.dim", CPU, opd__cpu_any_dim, Tensor, Tensor, Int, Bool) \
  X("aten::any.dim", Meta, opd__meta_any_dim, Tensor, Tensor, Int, Bool) \
  X("aten::all", CPU, opd__cpu_all, Tensor, Tensor) \
  X("aten::all", Meta, opd__meta_all, Tensor, Tensor) \
  X("aten::all.dim", CPU, opd__cpu_all_dim, Tensor, Tensor, Int, Bool) \
  X("aten::all.dim", Meta, opd__meta_all_dim, Tensor, Tensor, Int, Bool) \
  X("aten::count_nonzero.dim_IntList", CPU, opd__cpu_count_nonzero_dim_intlist, Tensor, Tensor, IntList) \
  X("aten::count_nonzero.dim_IntList", Meta, opd__meta_count_nonzero_dim_intlist, Tensor, Tensor, IntList) \
  X("aten::count_nonzero", CompositeExplicitAutograd, opd__cea_count_nonzero, Tensor, Tensor, OptInt) \
  X("aten::nanmean", CompositeImplicitAutograd, opd__cia_nanmean, Tensor, Tensor, OptIntList, Bool, OptDType) \
  X("aten::var.correction", CPU, opd__cpu_var_correction, Tensor, Tensor, OptIntList, OptInt, Bool) \
  X("aten::var.correction", Meta, opd__meta_var_correction, Tensor, Tensor, OptIntList, OptInt, Bool) \
  X("aten::std.correction", CPU, opd__cpu_std_correction, Tensor, Tensor, OptIntList, OptInt, Bool) \
  X("aten::std.correction", Meta, opd__meta_std_correction, Tensor, Tensor, OptIntList, OptInt, Bool) \
  X("aten::linalg_vector_norm", CPU, opd__cpu_linalg_vector_norm, Tensor, Tensor, Scalar, OptIntList, Bool, OptDType) \
  X("aten::linalg_vector_norm", Meta, opd__meta_linalg_vector_norm, Tensor, Tensor, Scalar, OptIntList, Bool, OptDType) \
  X("aten::norm.ScalarOpt_dim", CPU, opd__cpu_norm_scalaropt_dim, Tensor, Tensor, OptScalar, IntList, Bool) \
  X("aten::norm.ScalarOpt_dim", Meta, opd__meta_norm_scalaropt_dim, Tensor, Tensor, OptScalar, IntList, Bool) \
  X("aten::norm.ScalarOpt_dim_dtype", CPU, opd__cpu_norm_scalaropt_dim_dtype, Tensor, Tensor, OptScalar, IntList, Bool, DType) \
  X("aten::norm.ScalarOpt_dim_dtype", Meta, opd__meta_norm_scalaropt_dim_dtype, Tensor, Tensor, OptScalar, IntList, Bool, DType) \
  X("aten::var", CompositeImplicitAutograd, opd__cia_var, Tensor, Tensor, Bool) \
  X("aten::var.dim", CompositeImplicitAutograd, opd__cia_var_dim, Tensor, Tensor, OptIntList, Bool, Bool) \
  X("aten::std", CompositeImplicitAutograd, opd__cia_std, Tensor, Tensor, Bool) \
  X("aten::std.dim", CompositeImplicitAutograd, opd__cia_std_dim, Tensor, Tensor, OptIntList, Bool, Bool) \
  X("aten::norm.Scalar", CompositeExplicitAutograd, opd__cea_norm_scalar, Tensor, Tensor, Scalar) \
  X("aten::norm.ScalarOpt_dtype", CompositeExplicitAutograd, opd__cea_norm_scalaropt_dtype, Tensor, Tensor, OptScalar, DType) \
  X("aten::logsumexp", CompositeExplicitAutograd, opd__cea_logsumexp, Tensor, Tensor, IntList, Bool) \
  X("aten::dot", CPU, opd__cpu_dot, Tensor, Tensor, Tensor) \
  X("aten::dot", Meta, opd__meta_dot, Tensor, Tensor, Tensor) \
  X("aten::vdot", CPU, opd__cpu_vdot, Tensor, Tensor, Tensor) \
  X("aten::vdot", Meta, opd__meta_vdot, Tensor, Tensor, Tensor) \
  X("aten::addmv", CPU, opd__cpu_addmv, Tensor, Tensor, Tensor, Tensor, Scalar, Scalar) \
  X("aten::addmv", Meta, opd__meta_addmv, Tensor, Tensor, Tensor, Tensor, Scalar, Scalar) \
  X("aten::mv", CompositeExplicitAutograd, opd__cea_mv, Tensor, Tensor, Tensor) \
  X("aten::outer", CompositeImplicitAutograd, opd__cia_outer, Tensor, Tensor, Tensor) \
  X("aten::ger", CompositeImplicitAutograd, opd__cia_ger, Tensor, Tensor, Tensor) \
  X("aten::baddbmm", CPU, opd__cpu_baddbmm, Tensor, Tensor, Tensor, Tensor, Scalar, Scalar) \
  X("aten::baddbmm", Meta, opd__meta_baddbmm, Tensor, Tensor, Tensor, Tensor, Scalar, Scalar) \
  X("aten::addbmm", CPU, opd__cpu_addbmm, Tensor, Tensor, Tensor, Tensor, Scalar, Scalar) \
  X("aten::addbmm", Meta, opd__meta_addbmm, Tensor, Tensor, Tensor, Tensor, Scalar, Scalar) \
  X("aten::linalg_det", CompositeImplicitAutograd, opd__cia_linalg_det, Tensor, Tensor) \
  X("aten::det", CompositeImplicitAutograd, opd__cia_det, Tensor, Tensor) \
  X("aten::linalg_inv", CompositeImplicitAutograd, opd__cia_linalg_inv, Tensor, Tensor) \
  X("aten::inverse", CompositeImplicitAutograd, opd__cia_inverse, Tensor, Tensor) \
  X("aten::linalg_cholesky", CompositeImplicitAutograd, opd__cia_linalg_cholesky, Tensor, Tensor, Bool) \
  X("aten::logdet", CompositeImplicitAutograd, opd__cia_logdet, Tensor, Tensor) \
  X("aten::linalg_eigvalsh", CompositeImplicitAutograd, opd__cia_linalg_eigvalsh, Tensor, Tensor, Str) \
  X("aten::linalg_svdvals", CompositeImplicitAutograd, opd__cia_linalg_svdvals, Tensor, Tensor, OptStr) \
  /* order statistics: kernels/cpu/reduce_order.c, kernels/meta/reduce_order_meta.c */ \
  X("aten::median", CPU, opd__cpu_median, Tensor, Tensor) \
  X("aten::median", Meta, opd__meta_median, Tensor, Tensor) \
  X("aten::nanmedian", CPU, opd__cpu_nanmedian, Tensor, Tensor) \
  X("aten::nanmedian", Meta, opd__meta_nanmedian, Tensor, Tensor) \
  X("aten::linalg_solve", CompositeImplicitAutograd, opd__cia_linalg_solve, Tensor, Tensor, Tensor, Bool) \
  /* distances: kernels/cpu/reduce_distance.c, kernels/meta/reduce_distance_meta.c */ \
  X("aten::_cdist_forward", CPU, opd__cpu_cdist_forward, Tensor, Tensor, Tensor, Double, OptInt) \
  X("aten::_cdist_forward", Meta, opd__meta_cdist_forward, Tensor, Tensor, Tensor, Double, OptInt) \
  X("aten::_pdist_forward", CPU, opd__cpu_pdist_forward, Tensor, Tensor, Double) \
  X("aten::_pdist_forward", Meta, opd__meta_pdist_forward, Tensor, Tensor, Double) \
  /* histc: kernels/cpu/reduce_histc.c, kernels/meta/reduce_histc_meta.c */ \
  X("aten::histc", CPU, opd__cpu_histc, Tensor, Tensor, Int, Scalar, Scalar) \
  X("aten::histc", Meta, opd__meta_histc, Tensor, Tensor, Int, Scalar, Scalar) \
  /* trace: kernels/src/composite_reduce.c */ \
  X("aten::trace", CPU, opd__cpu_trace, Tensor, Tensor) \
  X("aten::trace", Meta, opd__meta_trace, Tensor, Tensor)
#define OPD_REDUCE_BOXED_KERNELS(X) \
  X("aten::var_mean.correction", CPU, opd__cpu_var_mean_correction) \
  X("aten::var_mean.correction", Meta, opd__meta_var_mean_correction) \
  X("aten::std_mean.correction", CPU, opd__cpu_std_mean_correction) \
  X("aten::std_mean.correction", Meta, opd__meta_std_mean_correction) \
  X("aten::max.dim", CPU, opd__cpu_max_dim) \
  X("aten::max.dim", Meta, opd__meta_max_dim) \
  X("aten::min.dim", CPU, opd__cpu_min_dim) \
  X("aten::min.dim", Meta, opd__meta_min_dim) \
  X("aten::aminmax", CPU, opd__cpu_aminmax) \
  X("aten::aminmax", Meta, opd__meta_aminmax) \
  X("aten::var_mean", CompositeImplicitAutograd, opd__cia_var_mean) \
  X("aten::var_mean.dim", CompositeImplicitAutograd, opd__cia_var_mean_dim) \
  X("aten::std_mean", CompositeImplicitAutograd, opd__cia_std_mean) \
  X("aten::std_mean.dim", CompositeImplicitAutograd, opd__cia_std_mean_dim) \
  X("aten::linalg_lu_factor_ex", CPU, opd__cpu_linalg_lu_factor_ex) \
  X("aten::linalg_lu_factor_ex", Meta, opd__meta_linalg_lu_factor_ex) \
  X("aten::_linalg_det", CPU, opd__cpu_linalg_det_lu) \
  X("aten::_linalg_det", Meta, opd__meta_linalg_det_lu) \
  X("aten::linalg_inv_ex", CPU, opd__cpu_linalg_inv_ex) \
  X("aten::linalg_inv_ex", Meta, opd__meta_linalg_inv_ex) \
  X("aten::linalg_cholesky_ex", CPU, opd__cpu_linalg_cholesky_ex) \
  X("aten::linalg_cholesky_ex", Meta, opd__meta_linalg_cholesky_ex) \
  X("aten::_linalg_slogdet", CPU, opd__cpu_linalg_slogdet_lu) \
  X("aten::_linalg_slogdet", Meta, opd__meta_linalg_slogdet_lu) \
  X("aten::linalg_slogdet", CompositeImplicitAutograd, opd__cia_linalg_slogdet) \
  X("aten::slogdet", CompositeImplicitAutograd, opd__cia_slogdet) \
  X("aten::_linalg_eigh", CPU, opd__cpu_linalg_eigh) \
  X("aten::_linalg_eigh", Meta, opd__meta_linalg_eigh) \
  X("aten::_linalg_svd", CPU, opd__cpu_linalg_svd) \
  X("aten::_linalg_svd", Meta, opd__meta_linalg_svd) \
  X("aten::linalg_eigh", CompositeImplicitAutograd, opd__cia_linalg_eigh) \
  X("aten::linalg_svd", CompositeImplicitAutograd, opd__cia_linalg_svd) \
  X("aten::linalg_qr", CPU, opd__cpu_linalg_qr) \
  X("aten::linalg_qr", Meta, opd__meta_linalg_qr) \
  X("aten::median.dim", CPU, opd__cpu_median_dim) \
  X("aten::median.dim", Meta, opd__meta_median_dim) \
  X("aten::nanmedian.dim", CPU, opd__cpu_nanmedian_dim) \
  X("aten::nanmedian.dim", Meta, opd__meta_median_dim) \
  X("aten::mode", CPU, opd__cpu_mode) \
  X("aten::mode", Meta, opd__meta_mode) \
  /* linear solves: kernels/cpu/lapack_solve.c, kernels/meta/lapack_solve_meta.c, kernels/src/composite_lapack.c */ \
  X("aten::_linalg_solve_ex", CPU, opd__cpu_linalg_solve_ex_impl) \
  X("aten::_linalg_solve_ex", Meta, opd__meta_linalg_solve_ex_impl) \
  X("aten::linalg_solve_ex", CompositeImplicitAutograd, opd__cia_linalg_solve_ex)

#define OPD_BOXED_KERNELS(X) \
  X("aten::native_layer_norm", CPU, opd__cpu_native_layer_norm) \
  X("aten::native_layer_norm", Meta, opd__meta_native_layer_norm) \
  X("aten::unbind.int", CompositeExplicitAutograd, opd__cea_unbind_int) \
  OPD_NN_BOXED_KERNELS(X) \
  OPD_CONV_BOXED_KERNELS(X) \
  OPD_NORM_BOXED_KERNELS(X) \
  OPD_POINTWISE_BOXED_KERNELS(X) \
  OPD_INDEX_BOXED_KERNELS(X) \
  OPD_REDUCE_BOXED_KERNELS(X)
/* clang-format on */

#endif

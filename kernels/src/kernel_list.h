/* kernel_list.h: every kernel of the kernels library and the key it is registered at: the
 * one place to read what each backend provides. kernels/registrations.c turns these lists
 * into prototypes, boxed wrappers and registrations.
 *
 * OPD_UNBOXED_KERNELS(X): X(operator, key, function, return tag, argument tags...)
 * OPD_BOXED_KERNELS(X):   X(operator, key, function)  (multiple returns: boxed only)
 * The tags are those of opd/unboxed.h; registration checks them against the schema.
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
#define OPD_CONV_UNBOXED_KERNELS(X)
#define OPD_CONV_BOXED_KERNELS(X)

/* normalization, losses, activations and their backward operators */
#define OPD_NORM_UNBOXED_KERNELS(X)
#define OPD_NORM_BOXED_KERNELS(X)

/* pointwise math, factories, random operators */
#define OPD_POINTWISE_UNBOXED_KERNELS(X)
#define OPD_POINTWISE_BOXED_KERNELS(X)

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
  X("aten::where.ScalarSelf", CompositeImplicitAutograd, opd__cia_where_scalarself, Tensor, Tensor, Scalar, Tensor) \
  X("aten::where.ScalarOther", CompositeImplicitAutograd, opd__cia_where_scalarother, Tensor, Tensor, Tensor, Scalar) \
  X("aten::where.Scalar", CompositeImplicitAutograd, opd__cia_where_scalar, Tensor, Tensor, Scalar, Scalar) \
  /* cumulative operators: kernels/cpu/index_cum.c, kernels/meta/index_cum_meta.c */ \
  X("aten::cumsum", CPU, opd__cpu_cumsum, Tensor, Tensor, Int, OptDType) \
  X("aten::cumsum", Meta, opd__meta_cumsum, Tensor, Tensor, Int, OptDType) \
  X("aten::cumprod", CPU, opd__cpu_cumprod, Tensor, Tensor, Int, OptDType) \
  X("aten::cumprod", Meta, opd__meta_cumprod, Tensor, Tensor, Int, OptDType) \
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
  X("aten::_unique2", CPU, opd__cpu_unique2)

/* reductions and linear algebra */
#define OPD_REDUCE_UNBOXED_KERNELS(X)
#define OPD_REDUCE_BOXED_KERNELS(X)

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

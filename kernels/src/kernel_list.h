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
#define OPD_INDEX_UNBOXED_KERNELS(X)
#define OPD_INDEX_BOXED_KERNELS(X)

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
  X("aten::linalg_svdvals", CompositeImplicitAutograd, opd__cia_linalg_svdvals, Tensor, Tensor, OptStr)
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
  X("aten::linalg_qr", Meta, opd__meta_linalg_qr)

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

/* cuda_kernels.h: the CUDA kernels of the kernels library and the operators they serve (every
 * operator with a CPU kernel in kernels/src/kernel_list.h), registered at the CUDA key by
 * opd_cuda_init (internal).
 *
 * OPD_CUDA_UNBOXED_KERNELS(X): X(operator, function, return tag, argument tags...)
 * OPD_CUDA_BOXED_KERNELS(X):   X(operator, function)
 */
#ifndef OPD_KERNELS_CUDA_KERNELS_H
#define OPD_KERNELS_CUDA_KERNELS_H

/* clang-format off */
#define OPD_CUDA_UNBOXED_KERNELS(X) \
  /* elementwise: cuda_kernels.c, elementwise.cu */ \
  X("aten::add.Tensor", opd__cuda_add_tensor, Tensor, Tensor, Tensor, Scalar) \
  X("aten::add.out", opd__cuda_add_out, Tensor, Tensor, Tensor, Scalar, Tensor) \
  X("aten::sub.Tensor", opd__cuda_sub_tensor, Tensor, Tensor, Tensor, Scalar) \
  X("aten::mul.Tensor", opd__cuda_mul_tensor, Tensor, Tensor, Tensor) \
  X("aten::neg", opd__cuda_neg, Tensor, Tensor) \
  X("aten::exp", opd__cuda_exp, Tensor, Tensor) \
  X("aten::log", opd__cuda_log, Tensor, Tensor) \
  X("aten::sqrt", opd__cuda_sqrt, Tensor, Tensor) \
  X("aten::rsqrt", opd__cuda_rsqrt, Tensor, Tensor) \
  X("aten::abs", opd__cuda_abs, Tensor, Tensor) \
  X("aten::relu", opd__cuda_relu, Tensor, Tensor) \
  X("aten::sigmoid", opd__cuda_sigmoid, Tensor, Tensor) \
  X("aten::tanh", opd__cuda_tanh, Tensor, Tensor) \
  X("aten::sin", opd__cuda_sin, Tensor, Tensor) \
  X("aten::cos", opd__cuda_cos, Tensor, Tensor) \
  X("aten::div.Tensor", opd__cuda_div_tensor, Tensor, Tensor, Tensor) \
  X("aten::div.Tensor_mode", opd__cuda_div_tensor_mode, Tensor, Tensor, Tensor, OptStr) \
  X("aten::gelu", opd__cuda_gelu, Tensor, Tensor, Str) \
  X("aten::pow.Tensor_Scalar", opd__cuda_pow_tensor_scalar, Tensor, Tensor, Scalar) \
  X("aten::maximum", opd__cuda_maximum, Tensor, Tensor, Tensor) \
  X("aten::minimum", opd__cuda_minimum, Tensor, Tensor, Tensor) \
  X("aten::eq.Tensor", opd__cuda_eq_tensor, Tensor, Tensor, Tensor) \
  X("aten::gt.Tensor", opd__cuda_gt_tensor, Tensor, Tensor, Tensor) \
  X("aten::lt.Scalar", opd__cuda_lt_scalar, Tensor, Tensor, Scalar) \
  X("aten::where.self", opd__cuda_where_self, Tensor, Tensor, Tensor, Tensor) \
  X("aten::clamp", opd__cuda_clamp, Tensor, Tensor, OptScalar, OptScalar) \
  X("aten::masked_fill_.Scalar", opd__cuda_masked_fill__scalar, Tensor, Tensor, Tensor, Scalar) \
  X("aten::copy_", opd__cuda_copy_, Tensor, Tensor, Tensor, Bool) \
  X("aten::fill_.Scalar", opd__cuda_fill__scalar, Tensor, Tensor, Scalar) \
  /* reductions and softmax: cuda_kernels.c, reduce.cu */ \
  X("aten::sum.dim_IntList", opd__cuda_sum_dim_intlist, Tensor, Tensor, OptIntList, Bool, OptDType) \
  X("aten::mean.dim", opd__cuda_mean_dim, Tensor, Tensor, OptIntList, Bool, OptDType) \
  X("aten::amax", opd__cuda_amax, Tensor, Tensor, IntList, Bool) \
  X("aten::argmax", opd__cuda_argmax, Tensor, Tensor, OptInt, Bool) \
  X("aten::_softmax", opd__cuda_softmax, Tensor, Tensor, Int, Bool) \
  X("aten::_log_softmax", opd__cuda_log_softmax, Tensor, Tensor, Int, Bool) \
  /* linear algebra (linalg.cu), indexing, factories */ \
  X("aten::mm", opd__cuda_mm, Tensor, Tensor, Tensor) \
  X("aten::bmm", opd__cuda_bmm, Tensor, Tensor, Tensor) \
  X("aten::addmm", opd__cuda_addmm, Tensor, Tensor, Tensor, Tensor, Scalar, Scalar) \
  X("aten::index_select", opd__cuda_index_select, Tensor, Tensor, Int, Tensor) \
  X("aten::cat", opd__cuda_cat, Tensor, TensorList, Int) \
  OPD_CUDA_FACTORY_KERNELS(X) \
  /* views: the device-independent kernels of kernels/src/views.c */ \
  X("aten::view", opd__view, Tensor, Tensor, IntList) \
  X("aten::as_strided", opd__as_strided, Tensor, Tensor, IntList, IntList, OptInt) \
  /* torch.nn building blocks: cuda_kernels.c, elementwise.cu */ \
  X("aten::silu", opd__cuda_silu, Tensor, Tensor) \
  X("aten::eq.Scalar", opd__cuda_eq_scalar, Tensor, Tensor, Scalar) \
  /* convolution: cuda_conv.c, conv.cu */ \
  X("aten::convolution", opd__cuda_convolution, Tensor, Tensor, Tensor, OptTensor, IntList, IntList, IntList, Bool, IntList, Int) \
  OPD_CUDA_CONV_UNBOXED_KERNELS(X) \
  OPD_CUDA_POINTWISE_UNBOXED_KERNELS(X) \
  OPD_CUDA_NORM_UNBOXED_KERNELS(X) \
  OPD_CUDA_REDUCE_UNBOXED_KERNELS(X) \
  OPD_CUDA_INDEX_UNBOXED_KERNELS(X)

/* the indexing family (kernel_list.h's OPD_INDEX_* lists): cuda_index.c, index.cu */
#define OPD_CUDA_INDEX_UNBOXED_KERNELS(X) \
  X("aten::gather", opd__cuda_gather_along, Tensor, Tensor, Int, Tensor, Bool) \
  X("aten::scatter.src", opd__cuda_scatter_src, Tensor, Tensor, Int, Tensor, Tensor) \
  X("aten::scatter.value", opd__cuda_scatter_value, Tensor, Tensor, Int, Tensor, Scalar) \
  X("aten::scatter.reduce", opd__cuda_scatter_reduce, Tensor, Tensor, Int, Tensor, Tensor, Str) \
  X("aten::scatter.value_reduce", opd__cuda_scatter_value_reduce, Tensor, Tensor, Int, Tensor, Scalar, Str) \
  X("aten::scatter_.src", opd__cuda_scatter__src, Tensor, Tensor, Int, Tensor, Tensor) \
  X("aten::scatter_add", opd__cuda_scatter_add, Tensor, Tensor, Int, Tensor, Tensor) \
  X("aten::scatter_add_", opd__cuda_scatter_add_, Tensor, Tensor, Int, Tensor, Tensor) \
  X("aten::masked_fill_.Tensor", opd__cuda_masked_fill__tensor, Tensor, Tensor, Tensor, Tensor) \
  X("aten::flip", opd__cuda_flip, Tensor, Tensor, IntList) \
  X("aten::roll", opd__cuda_roll, Tensor, Tensor, IntList, IntList) \
  X("aten::tril", opd__cuda_tril, Tensor, Tensor, Int) \
  X("aten::triu", opd__cuda_triu, Tensor, Tensor, Int) \
  X("aten::cumsum", opd__cuda_cumsum, Tensor, Tensor, Int, OptDType) \
  X("aten::cumprod", opd__cuda_cumprod, Tensor, Tensor, Int, OptDType) \
  X("aten::unfold", opd__unfold, Tensor, Tensor, Int, Int, Int) /* a view: kernels/src/views_index.c */

/* the reduction family (kernel_list.h's OPD_REDUCE_* lists): cuda_reduce.c, reduce.cu */
#define OPD_CUDA_REDUCE_UNBOXED_KERNELS(X) \
  X("aten::nansum", opd__cuda_nansum, Tensor, Tensor, OptIntList, Bool, OptDType) \
  X("aten::prod", opd__cuda_prod, Tensor, Tensor, OptDType) \
  X("aten::prod.dim_int", opd__cuda_prod_dim_int, Tensor, Tensor, Int, Bool, OptDType) \
  X("aten::amin", opd__cuda_amin, Tensor, Tensor, IntList, Bool) \
  X("aten::max", opd__cuda_max, Tensor, Tensor) \
  X("aten::min", opd__cuda_min, Tensor, Tensor) \
  X("aten::argmin", opd__cuda_argmin, Tensor, Tensor, OptInt, Bool) \
  X("aten::any", opd__cuda_any, Tensor, Tensor) \
  X("aten::any.dim", opd__cuda_any_dim, Tensor, Tensor, Int, Bool) \
  X("aten::all", opd__cuda_all, Tensor, Tensor) \
  X("aten::all.dim", opd__cuda_all_dim, Tensor, Tensor, Int, Bool) \
  X("aten::count_nonzero.dim_IntList", opd__cuda_count_nonzero_dim_intlist, Tensor, Tensor, IntList) \
  X("aten::var.correction", opd__cuda_var_correction, Tensor, Tensor, OptIntList, OptInt, Bool) \
  X("aten::std.correction", opd__cuda_std_correction, Tensor, Tensor, OptIntList, OptInt, Bool) \
  X("aten::linalg_vector_norm", opd__cuda_linalg_vector_norm, Tensor, Tensor, Scalar, OptIntList, Bool, OptDType) \
  X("aten::norm.ScalarOpt_dim", opd__cuda_norm_scalaropt_dim, Tensor, Tensor, OptScalar, IntList, Bool) \
  X("aten::norm.ScalarOpt_dim_dtype", opd__cuda_norm_scalaropt_dim_dtype, Tensor, Tensor, OptScalar, IntList, Bool, DType) \
  /* products: cuda_kernels.c (gemm), and addbmm's composite over permute, reshape and addmm */ \
  X("aten::dot", opd__cuda_dot, Tensor, Tensor, Tensor) \
  X("aten::vdot", opd__cuda_vdot, Tensor, Tensor, Tensor) \
  X("aten::addmv", opd__cuda_addmv, Tensor, Tensor, Tensor, Tensor, Scalar, Scalar) \
  X("aten::baddbmm", opd__cuda_baddbmm, Tensor, Tensor, Tensor, Tensor, Scalar, Scalar) \
  X("aten::addbmm", opd__cpu_addbmm, Tensor, Tensor, Tensor, Tensor, Scalar, Scalar)
#define OPD_CUDA_REDUCE_BOXED_KERNELS(X) \
  X("aten::var_mean.correction", opd__cuda_var_mean_correction) \
  X("aten::std_mean.correction", opd__cuda_std_mean_correction) \
  X("aten::max.dim", opd__cuda_max_dim) \
  X("aten::min.dim", opd__cuda_min_dim) \
  X("aten::aminmax", opd__cuda_aminmax)

/* the pooling operators of the convolution family (kernel_list.h's OPD_CONV_* lists):
 * cuda_pool.c, pool.cu */
#define OPD_CUDA_CONV_UNBOXED_KERNELS(X) \
  X("aten::max_pool2d_with_indices_backward", opd__cuda_max_pool2d_with_indices_backward, Tensor, Tensor, Tensor, IntList, IntList, IntList, IntList, Bool, Tensor) \
  X("aten::max_pool3d_with_indices_backward", opd__cuda_max_pool3d_with_indices_backward, Tensor, Tensor, Tensor, IntList, IntList, IntList, IntList, Bool, Tensor) \
  X("aten::avg_pool2d", opd__cuda_avg_pool2d, Tensor, Tensor, IntList, IntList, IntList, Bool, Bool, OptInt) \
  X("aten::avg_pool2d_backward", opd__cuda_avg_pool2d_backward, Tensor, Tensor, Tensor, IntList, IntList, IntList, Bool, Bool, OptInt) \
  X("aten::_adaptive_avg_pool2d", opd__cuda_adaptive_avg_pool2d, Tensor, Tensor, IntList) \
  X("aten::_adaptive_avg_pool2d_backward", opd__cuda_adaptive_avg_pool2d_backward, Tensor, Tensor, Tensor) \
  X("aten::adaptive_max_pool2d_backward", opd__cuda_adaptive_max_pool2d_backward, Tensor, Tensor, Tensor, Tensor)
#define OPD_CUDA_CONV_BOXED_KERNELS(X) \
  X("aten::max_pool2d_with_indices", opd__cuda_max_pool2d_with_indices) \
  X("aten::max_pool3d_with_indices", opd__cuda_max_pool3d_with_indices) \
  X("aten::adaptive_max_pool2d", opd__cuda_adaptive_max_pool2d)

/* the pointwise math family (kernel_list.h's OPD_POINTWISE_* lists): cuda_pointwise.c, and the
 * device-independent composites of kernels/src/composite_*.c, which PyTorch registers at the
 * CPU and CUDA keys and which call CUDA kernels through the dispatcher */
#define OPD_CUDA_POINTWISE_UNBOXED_KERNELS(X) \
  X("aten::acos", opd__cuda_acos, Tensor, Tensor) \
  X("aten::acos_", opd__cuda_acos_, Tensor, Tensor) \
  X("aten::asin", opd__cuda_asin, Tensor, Tensor) \
  X("aten::asin_", opd__cuda_asin_, Tensor, Tensor) \
  X("aten::atan", opd__cuda_atan, Tensor, Tensor) \
  X("aten::atan_", opd__cuda_atan_, Tensor, Tensor) \
  X("aten::acosh", opd__cuda_acosh, Tensor, Tensor) \
  X("aten::acosh_", opd__cuda_acosh_, Tensor, Tensor) \
  X("aten::asinh", opd__cuda_asinh, Tensor, Tensor) \
  X("aten::asinh_", opd__cuda_asinh_, Tensor, Tensor) \
  X("aten::atanh", opd__cuda_atanh, Tensor, Tensor) \
  X("aten::atanh_", opd__cuda_atanh_, Tensor, Tensor) \
  X("aten::sinh", opd__cuda_sinh, Tensor, Tensor) \
  X("aten::sinh_", opd__cuda_sinh_, Tensor, Tensor) \
  X("aten::cosh", opd__cuda_cosh, Tensor, Tensor) \
  X("aten::cosh_", opd__cuda_cosh_, Tensor, Tensor) \
  X("aten::tan", opd__cuda_tan, Tensor, Tensor) \
  X("aten::tan_", opd__cuda_tan_, Tensor, Tensor) \
  X("aten::erf", opd__cuda_erf, Tensor, Tensor) \
  X("aten::erf_", opd__cuda_erf_, Tensor, Tensor) \
  X("aten::erfc", opd__cuda_erfc, Tensor, Tensor) \
  X("aten::erfc_", opd__cuda_erfc_, Tensor, Tensor) \
  X("aten::erfinv", opd__cuda_erfinv, Tensor, Tensor) \
  X("aten::erfinv_", opd__cuda_erfinv_, Tensor, Tensor) \
  X("aten::lgamma", opd__cuda_lgamma, Tensor, Tensor) \
  X("aten::lgamma_", opd__cuda_lgamma_, Tensor, Tensor) \
  X("aten::digamma", opd__cuda_digamma, Tensor, Tensor) \
  X("aten::digamma_", opd__cuda_digamma_, Tensor, Tensor) \
  X("aten::log1p", opd__cuda_log1p, Tensor, Tensor) \
  X("aten::log1p_", opd__cuda_log1p_, Tensor, Tensor) \
  X("aten::expm1", opd__cuda_expm1, Tensor, Tensor) \
  X("aten::expm1_", opd__cuda_expm1_, Tensor, Tensor) \
  X("aten::log2", opd__cuda_log2, Tensor, Tensor) \
  X("aten::log2_", opd__cuda_log2_, Tensor, Tensor) \
  X("aten::log10", opd__cuda_log10, Tensor, Tensor) \
  X("aten::log10_", opd__cuda_log10_, Tensor, Tensor) \
  X("aten::exp2", opd__cuda_exp2, Tensor, Tensor) \
  X("aten::exp2_", opd__cuda_exp2_, Tensor, Tensor) \
  X("aten::reciprocal", opd__cuda_reciprocal, Tensor, Tensor) \
  X("aten::reciprocal_", opd__cuda_reciprocal_, Tensor, Tensor) \
  X("aten::floor", opd__cuda_floor, Tensor, Tensor) \
  X("aten::floor_", opd__cuda_floor_, Tensor, Tensor) \
  X("aten::ceil", opd__cuda_ceil, Tensor, Tensor) \
  X("aten::ceil_", opd__cuda_ceil_, Tensor, Tensor) \
  X("aten::round", opd__cuda_round, Tensor, Tensor) \
  X("aten::round_", opd__cuda_round_, Tensor, Tensor) \
  X("aten::trunc", opd__cuda_trunc, Tensor, Tensor) \
  X("aten::trunc_", opd__cuda_trunc_, Tensor, Tensor) \
  X("aten::frac", opd__cuda_frac, Tensor, Tensor) \
  X("aten::frac_", opd__cuda_frac_, Tensor, Tensor) \
  X("aten::sign", opd__cuda_sign, Tensor, Tensor) \
  X("aten::sign_", opd__cuda_sign_, Tensor, Tensor) \
  X("aten::sgn", opd__cuda_sgn, Tensor, Tensor) \
  X("aten::sgn_", opd__cuda_sgn_, Tensor, Tensor) \
  X("aten::bitwise_not", opd__cuda_bitwise_not, Tensor, Tensor) \
  X("aten::bitwise_not_", opd__cuda_bitwise_not_, Tensor, Tensor) \
  X("aten::isnan", opd__cuda_isnan, Tensor, Tensor) \
  X("aten::signbit", opd__cuda_signbit, Tensor, Tensor) \
  X("aten::round.decimals", opd__cuda_round_decimals, Tensor, Tensor, Int) \
  X("aten::round_.decimals", opd__cuda_round__decimals, Tensor, Tensor, Int) \
  X("aten::atan2", opd__cuda_atan2, Tensor, Tensor, Tensor) \
  X("aten::atan2_", opd__cuda_atan2_inplace, Tensor, Tensor, Tensor) \
  X("aten::fmod.Tensor", opd__cuda_fmod_tensor, Tensor, Tensor, Tensor) \
  X("aten::fmod_.Tensor", opd__cuda_fmod_tensor_inplace, Tensor, Tensor, Tensor) \
  X("aten::remainder.Tensor", opd__cuda_remainder_tensor, Tensor, Tensor, Tensor) \
  X("aten::remainder_.Tensor", opd__cuda_remainder_tensor_inplace, Tensor, Tensor, Tensor) \
  X("aten::hypot", opd__cuda_hypot, Tensor, Tensor, Tensor) \
  X("aten::hypot_", opd__cuda_hypot_inplace, Tensor, Tensor, Tensor) \
  X("aten::copysign.Tensor", opd__cuda_copysign_tensor, Tensor, Tensor, Tensor) \
  X("aten::copysign_.Tensor", opd__cuda_copysign_tensor_inplace, Tensor, Tensor, Tensor) \
  X("aten::xlogy.Tensor", opd__cuda_xlogy_tensor, Tensor, Tensor, Tensor) \
  X("aten::xlogy_.Tensor", opd__cuda_xlogy_tensor_inplace, Tensor, Tensor, Tensor) \
  X("aten::pow.Tensor_Tensor", opd__cuda_pow_tensor_tensor, Tensor, Tensor, Tensor) \
  X("aten::bitwise_and.Tensor", opd__cuda_bitwise_and_tensor, Tensor, Tensor, Tensor) \
  X("aten::bitwise_and_.Tensor", opd__cuda_bitwise_and_tensor_inplace, Tensor, Tensor, Tensor) \
  X("aten::bitwise_or.Tensor", opd__cuda_bitwise_or_tensor, Tensor, Tensor, Tensor) \
  X("aten::bitwise_or_.Tensor", opd__cuda_bitwise_or_tensor_inplace, Tensor, Tensor, Tensor) \
  X("aten::bitwise_xor.Tensor", opd__cuda_bitwise_xor_tensor, Tensor, Tensor, Tensor) \
  X("aten::bitwise_xor_.Tensor", opd__cuda_bitwise_xor_tensor_inplace, Tensor, Tensor, Tensor) \
  X("aten::clamp_min.Tensor", opd__cuda_clamp_min_tensor, Tensor, Tensor, Tensor) \
  X("aten::clamp_min_.Tensor", opd__cuda_clamp_min_tensor_inplace, Tensor, Tensor, Tensor) \
  X("aten::clamp_max.Tensor", opd__cuda_clamp_max_tensor, Tensor, Tensor, Tensor) \
  X("aten::clamp_max_.Tensor", opd__cuda_clamp_max_tensor_inplace, Tensor, Tensor, Tensor) \
  X("aten::pow_.Tensor", opd__cuda_pow_tensor_tensor_inplace, Tensor, Tensor, Tensor) \
  X("aten::fmax", opd__cuda_fmax, Tensor, Tensor, Tensor) \
  X("aten::fmin", opd__cuda_fmin, Tensor, Tensor, Tensor) \
  X("aten::logaddexp", opd__cuda_logaddexp, Tensor, Tensor, Tensor) \
  X("aten::ne.Tensor", opd__cuda_ne_tensor, Tensor, Tensor, Tensor) \
  X("aten::lt.Tensor", opd__cuda_lt_tensor, Tensor, Tensor, Tensor) \
  X("aten::le.Tensor", opd__cuda_le_tensor, Tensor, Tensor, Tensor) \
  X("aten::ge.Tensor", opd__cuda_ge_tensor, Tensor, Tensor, Tensor) \
  X("aten::gt.Scalar", opd__cuda_gt_scalar, Tensor, Tensor, Scalar) \
  X("aten::le.Scalar", opd__cuda_le_scalar, Tensor, Tensor, Scalar) \
  X("aten::ge.Scalar", opd__cuda_ge_scalar, Tensor, Tensor, Scalar) \
  X("aten::ne.Scalar", opd__cuda_ne_scalar, Tensor, Tensor, Scalar) \
  X("aten::addcmul", opd__cuda_addcmul, Tensor, Tensor, Tensor, Tensor, Scalar) \
  X("aten::addcmul_", opd__cuda_addcmul_, Tensor, Tensor, Tensor, Tensor, Scalar) \
  X("aten::addcdiv", opd__cuda_addcdiv, Tensor, Tensor, Tensor, Tensor, Scalar) \
  X("aten::addcdiv_", opd__cuda_addcdiv_, Tensor, Tensor, Tensor, Tensor, Scalar) \
  X("aten::lerp.Scalar", opd__cuda_lerp_scalar, Tensor, Tensor, Tensor, Scalar) \
  X("aten::lerp_.Scalar", opd__cuda_lerp__scalar, Tensor, Tensor, Tensor, Scalar) \
  X("aten::lerp.Tensor", opd__cuda_lerp_tensor, Tensor, Tensor, Tensor, Tensor) \
  X("aten::lerp_.Tensor", opd__cuda_lerp__tensor, Tensor, Tensor, Tensor, Tensor) \
  X("aten::clamp_min", opd__cuda_clamp_min, Tensor, Tensor, Scalar) \
  X("aten::clamp_min_", opd__cuda_clamp_min_, Tensor, Tensor, Scalar) \
  X("aten::clamp_max", opd__cuda_clamp_max, Tensor, Tensor, Scalar) \
  X("aten::clamp_max_", opd__cuda_clamp_max_, Tensor, Tensor, Scalar) \
  X("aten::clamp.Tensor", opd__cuda_clamp_tensor, Tensor, Tensor, OptTensor, OptTensor) \
  X("aten::fill_.Tensor", opd__cuda_fill__tensor, Tensor, Tensor, Tensor) \
  X("aten::exp_", opd__cpu_exp_, Tensor, Tensor) \
  X("aten::log_", opd__cpu_log_, Tensor, Tensor) \
  X("aten::sqrt_", opd__cpu_sqrt_, Tensor, Tensor) \
  X("aten::rsqrt_", opd__cpu_rsqrt_, Tensor, Tensor) \
  X("aten::sigmoid_", opd__cpu_sigmoid_, Tensor, Tensor) \
  X("aten::tanh_", opd__cpu_tanh_, Tensor, Tensor) \
  X("aten::sin_", opd__cpu_sin_, Tensor, Tensor) \
  X("aten::cos_", opd__cpu_cos_, Tensor, Tensor) \
  X("aten::neg_", opd__cpu_neg_, Tensor, Tensor) \
  X("aten::mul_.Tensor", opd__cpu_mul__tensor, Tensor, Tensor, Tensor) \
  X("aten::sub_.Tensor", opd__cpu_sub__tensor, Tensor, Tensor, Tensor, Scalar) \
  X("aten::div_.Tensor", opd__cpu_div__tensor, Tensor, Tensor, Tensor) \
  X("aten::div_.Tensor_mode", opd__cpu_div__tensor_mode, Tensor, Tensor, Tensor, OptStr) \
  X("aten::floor_divide", opd__cpu_floor_divide, Tensor, Tensor, Tensor) \
  X("aten::floor_divide_.Tensor", opd__cpu_floor_divide__tensor, Tensor, Tensor, Tensor) \
  X("aten::add_.Tensor", opd__cpu_add__tensor, Tensor, Tensor, Tensor, Scalar) \
  X("aten::pow_.Scalar", opd__cpu_pow__scalar, Tensor, Tensor, Scalar) \
  X("aten::rsub.Tensor", opd__cpu_rsub_tensor, Tensor, Tensor, Tensor, Scalar) \
  X("aten::pow.Scalar", opd__cpu_pow_scalar, Tensor, Scalar, Tensor) \
  X("aten::remainder.Scalar_Tensor", opd__cpu_remainder_scalar_tensor, Tensor, Scalar, Tensor) \
  X("aten::clamp_", opd__cpu_clamp_, Tensor, Tensor, OptScalar, OptScalar) \
  X("aten::zero_", opd__cpu_zero_, Tensor, Tensor)
#define OPD_CUDA_POINTWISE_BOXED_KERNELS(X) \
  X("aten::nan_to_num", opd__cuda_nan_to_num) \
  X("aten::nan_to_num_", opd__cuda_nan_to_num_)

/* the normalization family (kernel_list.h's OPD_NORM_* lists): activations and their backward
 * operators in cuda_pointwise.c */
#define OPD_CUDA_NORM_UNBOXED_KERNELS(X) \
  X("aten::hardtanh", opd__cuda_hardtanh, Tensor, Tensor, Scalar, Scalar) \
  X("aten::leaky_relu", opd__cuda_leaky_relu, Tensor, Tensor, Scalar) \
  X("aten::elu", opd__cuda_elu, Tensor, Tensor, Scalar, Scalar, Scalar) \
  X("aten::mish", opd__cuda_mish, Tensor, Tensor) \
  X("aten::softplus", opd__cuda_softplus, Tensor, Tensor, Scalar, Scalar) \
  X("aten::hardswish", opd__cuda_hardswish, Tensor, Tensor) \
  X("aten::hardsigmoid", opd__cuda_hardsigmoid, Tensor, Tensor) \
  X("aten::threshold", opd__cuda_threshold, Tensor, Tensor, Scalar, Scalar) \
  X("aten::glu", opd__cuda_glu, Tensor, Tensor, Int) \
  X("aten::threshold_backward", opd__cuda_threshold_backward, Tensor, Tensor, Tensor, Scalar) \
  X("aten::gelu_backward", opd__cuda_gelu_backward, Tensor, Tensor, Tensor, Str) \
  X("aten::silu_backward", opd__cuda_silu_backward, Tensor, Tensor, Tensor) \
  X("aten::sigmoid_backward", opd__cuda_sigmoid_backward, Tensor, Tensor, Tensor) \
  X("aten::tanh_backward", opd__cuda_tanh_backward, Tensor, Tensor, Tensor) \
  X("aten::hardswish_backward", opd__cuda_hardswish_backward, Tensor, Tensor, Tensor) \
  X("aten::hardsigmoid_backward", opd__cuda_hardsigmoid_backward, Tensor, Tensor, Tensor) \
  X("aten::hardtanh_backward", opd__cuda_hardtanh_backward, Tensor, Tensor, Tensor, Scalar, Scalar) \
  X("aten::leaky_relu_backward", opd__cuda_leaky_relu_backward, Tensor, Tensor, Tensor, Scalar, Bool) \
  X("aten::elu_backward", opd__cuda_elu_backward, Tensor, Tensor, Scalar, Scalar, Scalar, Bool, Tensor) \
  X("aten::softplus_backward", opd__cuda_softplus_backward, Tensor, Tensor, Tensor, Scalar, Scalar) \
  X("aten::mish_backward", opd__cuda_mish_backward, Tensor, Tensor, Tensor) \
  /* softmax's backward operators: cuda_norm.c, norm.cu */ \
  X("aten::_softmax_backward_data", opd__cuda_softmax_backward_data, Tensor, Tensor, Tensor, Int, DType) \
  X("aten::_log_softmax_backward_data", opd__cuda_log_softmax_backward_data, Tensor, Tensor, Tensor, Int, DType) \
  /* nll_loss's backward, embedding's: cuda_norm.c, norm.cu */ \
  X("aten::nll_loss_backward", opd__cuda_nll_loss_backward, Tensor, Tensor, Tensor, Tensor, OptTensor, Int, Int, Tensor) \
  X("aten::embedding_dense_backward", opd__cuda_embedding_dense_backward, Tensor, Tensor, Tensor, Int, Int, Bool) \
  X("aten::native_dropout_backward", opd__cuda_native_dropout_backward, Tensor, Tensor, Tensor, Double)
/* batch norm, layer norm's backward: cuda_norm.c, norm.cu */
#define OPD_CUDA_NORM_BOXED_KERNELS(X) \
  X("aten::native_batch_norm", opd__cuda_native_batch_norm) \
  X("aten::native_batch_norm_backward", opd__cuda_native_batch_norm_backward) \
  X("aten::native_layer_norm_backward", opd__cuda_native_layer_norm_backward) \
  X("aten::nll_loss_forward", opd__cuda_nll_loss_forward) \
  X("aten::native_dropout", opd__cuda_native_dropout)

/* factories.c, registered in every build (without CUDA: by cuda_off.c) */
#define OPD_CUDA_FACTORY_KERNELS(X) \
  X("aten::empty.memory_format", opd__cuda_empty_memory_format, Tensor, IntList, OptDType, OptLayout, OptDevice, OptBool, OptMemoryFormat) \
  X("aten::empty_strided", opd__cuda_empty_strided, Tensor, IntList, IntList, OptDType, OptLayout, OptDevice, OptBool)

#define OPD_CUDA_BOXED_KERNELS(X) \
  X("aten::native_layer_norm", opd__cuda_native_layer_norm) \
  X("aten::convolution_backward", opd__cuda_convolution_backward) \
  OPD_CUDA_CONV_BOXED_KERNELS(X) \
  OPD_CUDA_POINTWISE_BOXED_KERNELS(X) \
  OPD_CUDA_NORM_BOXED_KERNELS(X) \
  OPD_CUDA_REDUCE_BOXED_KERNELS(X)
/* clang-format on */

#include <stddef.h>

#include "opd/dispatcher.h"
#include "opd/unboxed.h"

/* The prototypes of the kernels of the lists, so that each definition is checked against its
 * list's argument tags. */
#define OPD__CUDA_DECLARE(op, fn, R, ...) \
  int fn(const opd_kernel_ctx *, OPD__MAP(OPD__M_TYPE, OPD__COMMA, __VA_ARGS__) OPD__RET_PTYPE_##R);
OPD_CUDA_UNBOXED_KERNELS(OPD__CUDA_DECLARE)
#undef OPD__CUDA_DECLARE
#define OPD__CUDA_DECLARE_BOXED(op, fn) int fn(const opd_kernel_ctx *ctx, opd_stack *stack);
OPD_CUDA_BOXED_KERNELS(OPD__CUDA_DECLARE_BOXED)
#undef OPD__CUDA_DECLARE_BOXED

/* The kernels of factories.c (in every build). */
int opd__cuda_empty_memory_format(const opd_kernel_ctx *ctx, opd_int_list size, opd_dtype dtype,
                                  int64_t layout, opd_device device, opd_opt_bool pin_memory,
                                  int64_t memory_format, opd_tensor **out);
int opd__cuda_empty_strided(const opd_kernel_ctx *ctx, opd_int_list size, opd_int_list stride,
                            opd_dtype dtype, int64_t layout, opd_device device,
                            opd_opt_bool pin_memory, opd_tensor **out);

/* Registers the kernels above at the CUDA key (after opd_kernels_register): 0 or the first
 * registration error. With CUDA, register.c registers them all; without, cuda_off.c only
 * OPD_CUDA_FACTORY_KERNELS. */
int opd__cuda_kernels_register(void);

/* A row of the registration tables of register.c and cuda_off.c. */
typedef struct opd__cuda_kernel_entry {
  const char *op;
  opd_kernel kernel;
} opd__cuda_kernel_entry;

/* Registers a table's n kernels at the CUDA key, each with provenance `where`: 0 or the first
 * registration error (opd__cuda_kernels_register of both builds). */
static inline int opd__cuda_register_table(const opd__cuda_kernel_entry *table, size_t n,
                                           opd_provenance where) {
  for (size_t i = 0; i < n; i++) {
    opd_reg_id id = opd_impl(table[i].op, OPD_KEY_CUDA, &table[i].kernel, where);
    if (id < 0) return (int)id;
  }
  return 0;
}

#endif

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
  X("aten::convolution", opd__cuda_convolution, Tensor, Tensor, Tensor, OptTensor, IntList, IntList, IntList, Bool, IntList, Int)

/* factories.c, registered in every build (without CUDA: by cuda_off.c) */
#define OPD_CUDA_FACTORY_KERNELS(X) \
  X("aten::empty.memory_format", opd__cuda_empty_memory_format, Tensor, IntList, OptDType, OptLayout, OptDevice, OptBool, OptMemoryFormat) \
  X("aten::empty_strided", opd__cuda_empty_strided, Tensor, IntList, IntList, OptDType, OptLayout, OptDevice, OptBool)

#define OPD_CUDA_BOXED_KERNELS(X) \
  X("aten::native_layer_norm", opd__cuda_native_layer_norm) \
  X("aten::convolution_backward", opd__cuda_convolution_backward)
/* clang-format on */

#include <stddef.h>

#include "opd/dispatcher.h"
#include "opd/unboxed.h"

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

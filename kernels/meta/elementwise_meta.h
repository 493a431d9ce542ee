/* elementwise_meta.h: the meta functions of the elementwise operators (internal): argument
 * checks with PyTorch's errors, output shape and dtype. Shared by their Meta kernels
 * (elementwise_meta.c) and CPU kernels (kernels/cpu/elementwise_*.c). */
#ifndef OPD_KERNELS_ELEMENTWISE_META_H
#define OPD_KERNELS_ELEMENTWISE_META_H

#include <stdbool.h>

#include "src/kernel_util.h"

/* The shape the tensors broadcast to, in order, as TensorIterator computes it (with its
 * error), into spec->sizes / ndim; OPD_EINVAL unless all are on one device. */
int opd__broadcast_tensors(opd_tensor *const *t, int n, opd_out_spec *spec);
/* A tensor written in place keeps its shape: `other` must broadcast to `self`'s shape
 * ("output with shape [2] doesn't match the broadcast shape [3, 2]"). */
int opd__check_inplace_shape(opd_tensor *self, opd_tensor *other);

/* add.Tensor / sub.Tensor (sub: bool operands rejected); alpha is checked against the
 * result dtype. */
int opd__add_meta(opd_tensor *self, opd_tensor *other, opd_scalar alpha, bool sub,
                  opd_out_spec *spec);
/* add.out: add's checks and out's: the result dtype must cast to out's dtype, out must have
 * the result's shape (opd does not resize outputs) and must not partially overlap an input. */
int opd__add_out_meta(opd_tensor *self, opd_tensor *other, opd_scalar alpha, opd_tensor *out,
                      opd_out_spec *spec);
/* mul, maximum, minimum: the promoted dtype of both operands. */
int opd__binary_meta(opd_tensor *self, opd_tensor *other, opd_out_spec *spec);

typedef enum opd__div_mode { OPD__DIV_TRUE, OPD__DIV_TRUNC, OPD__DIV_FLOOR } opd__div_mode;
/* div (rounding_mode NULL: true division, which gives float32 for integer operands). */
int opd__div_meta(opd_tensor *self, opd_tensor *other, const char *rounding_mode,
                  opd__div_mode *mode, opd_out_spec *spec);
/* eq, gt (bool result); *common is the dtype the operands are compared in. */
int opd__compare_meta(opd_tensor *self, opd_tensor *other, opd_dtype *common, opd_out_spec *spec);
/* lt.Scalar and the like. */
int opd__compare_scalar_meta(opd_tensor *self, opd_scalar other, opd_dtype *common,
                             opd_out_spec *spec);

typedef enum opd__unary_kind {
  OPD__UNARY_FLOAT, /* exp, log, ...: integers and bool compute in float32 */
  OPD__UNARY_SAME,  /* abs: same dtype */
  OPD__UNARY_NEG,   /* neg: same dtype, bool rejected */
  OPD__UNARY_RELU,  /* relu: same dtype, bool rejected */
} opd__unary_kind;
int opd__unary_meta(opd_tensor *self, opd__unary_kind kind, opd_out_spec *spec);
/* gelu: approximate must be "none" or "tanh" (*tanh_approx says which). */
int opd__gelu_meta(opd_tensor *self, const char *approximate, bool *tanh_approx,
                   opd_out_spec *spec);
int opd__pow_meta(opd_tensor *self, opd_scalar exponent, opd_out_spec *spec);
/* How pow.Tensor_Scalar computes for an exponent and the result dtype, as ATen picks it: 1
 * everywhere, a copy, the exponents a floating result computes without pow(), or pow() itself
 * (floating or integer). c10's Scalar::equal: a bool exponent equals no number. */
typedef enum opd__pow_kind {
  OPD__POW_ZERO,
  OPD__POW_COPY, /* converted to the result dtype */
  OPD__POW_HALF,
  OPD__POW_MHALF,
  OPD__POW_M1,
  OPD__POW_2,
  OPD__POW_3,
  OPD__POW_M2,
  OPD__POW_FLOAT, /* pow() in double */
  OPD__POW_INT,   /* integer power, the exponent converted to the result dtype */
} opd__pow_kind;
opd__pow_kind opd__pow_kind_of(opd_scalar exponent, opd_dtype result);
int opd__where_meta(opd_tensor *condition, opd_tensor *self, opd_tensor *other, opd_out_spec *spec);
/* min / max: tag OPD_IV_NONE for None. */
int opd__clamp_meta(opd_tensor *self, opd_scalar min, opd_scalar max, opd_out_spec *spec);
/* masked_fill_: bool mask broadcastable to self, no partial overlap. */
int opd__masked_fill_meta(opd_tensor *self, opd_tensor *mask);
/* copy_: src broadcastable to self; self's elements must not alias each other or src's. */
int opd__copy_meta(opd_tensor *self, opd_tensor *src);

#endif

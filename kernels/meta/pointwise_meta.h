/* pointwise_meta.h: the meta functions of the pointwise math operators (internal): the
 * operator lists the kernels are generated from, dtype rules, argument checks with PyTorch's
 * errors, and the checks of in-place variants. Shared by their Meta kernels
 * (pointwise_meta.c), CPU kernels (kernels/cpu/pointwise_*.c) and CUDA kernels
 * (kernels/cuda/src/cuda_pointwise.c).
 *
 * [Note: Pointwise operator lists]
 * The unary operators are listed once, OPD__POINTWISE_UNARY_OPS(X) with X(name, kind, dtypes,
 * cpu name):
 * pointwise_meta.c defines their Meta kernels from it, kernels/cpu/pointwise_unary.c their
 * CPU kernels (each with its loops there), both the functional operator (opd__cpu_NAME) and
 * its in-place variant (opd__cpu_NAME_). `kind` is the result dtype's rule (opd__pointwise_kind),
 * `dtypes` the compute dtypes ATen's CPU kernel takes (opd__pointwise_dtypes; the meta function
 * raises ATen's error for the others, so that Meta tensors fail as CPU ones do); the cpu name
 * is ATen's kernel name, in its "not implemented for 'Bool'" error. The
 * binary ones are OPD__POINTWISE_BINARY_OPS(X), X(function name, kind, cpu name), likewise.
 * The in-place variants of the operators kernels/cpu/elementwise_*.c computes (exp_, mul_,
 * ...) are written in terms of them (kernels/src/composite_pointwise.c).
 */
#ifndef OPD_KERNELS_POINTWISE_META_H
#define OPD_KERNELS_POINTWISE_META_H

#include <stdbool.h>

#include "src/kernel_util.h"

/* The result dtype of a pointwise operator, from the operands' promoted dtype. */
typedef enum opd__pointwise_kind {
  OPD__POINTWISE_SAME,  /* the promoted dtype */
  OPD__POINTWISE_FLOAT, /* the promoted dtype; integers and bool give float32 */
  OPD__POINTWISE_BOOL,  /* bool, computed in the promoted dtype */
} opd__pointwise_kind;

/* The compute dtypes an operator's CPU kernel takes. */
typedef enum opd__pointwise_dtypes {
  OPD__POINTWISE_ALL,
  OPD__POINTWISE_NUMBERS, /* all but bool */
  OPD__POINTWISE_FLOATS,
  OPD__POINTWISE_BITS, /* integers and bool */
  OPD__POINTWISE_INTS, /* integers */
} opd__pointwise_dtypes;

/* clang-format off */
#define OPD__POINTWISE_UNARY_OPS(X) \
  X(acos, FLOAT, ALL, "acos_vml_cpu") \
  X(asin, FLOAT, ALL, "asin_vml_cpu") \
  X(atan, FLOAT, ALL, "atan_vml_cpu") \
  X(acosh, FLOAT, ALL, "acosh_cpu") \
  X(asinh, FLOAT, ALL, "asinh_cpu") \
  X(atanh, FLOAT, ALL, "atanh_cpu") \
  X(sinh, FLOAT, ALL, "sinh_vml_cpu") \
  X(cosh, FLOAT, ALL, "cosh_vml_cpu") \
  X(tan, FLOAT, ALL, "tan_vml_cpu") \
  X(erf, FLOAT, ALL, "erf_vml_cpu") \
  X(erfc, FLOAT, ALL, "erfc_vml_cpu") \
  X(erfinv, FLOAT, ALL, "erfinv_cpu") \
  X(lgamma, FLOAT, ALL, "lgamma_vml_cpu") \
  X(digamma, FLOAT, ALL, "digamma") \
  X(log1p, FLOAT, ALL, "log1p_vml_cpu") \
  X(expm1, FLOAT, ALL, "expm1_vml_cpu") \
  X(log2, FLOAT, ALL, "log2_vml_cpu") \
  X(log10, FLOAT, ALL, "log10_vml_cpu") \
  X(exp2, FLOAT, ALL, "exp2_vml_cpu") \
  X(reciprocal, FLOAT, ALL, "reciprocal_cpu") \
  X(floor, SAME, NUMBERS, "floor_vml_cpu") \
  X(ceil, SAME, NUMBERS, "ceil_vml_cpu") \
  X(round, SAME, NUMBERS, "round_vml_cpu") \
  X(trunc, SAME, NUMBERS, "trunc_vml_cpu") \
  X(frac, SAME, FLOATS, "frac_cpu") \
  X(sign, SAME, ALL, "sign_cpu") \
  X(sgn, SAME, ALL, "sign_cpu") \
  X(bitwise_not, SAME, BITS, "bitwise_not_cpu")

/* X(function name, kind, dtypes, cpu name): functional and in-place */
#define OPD__POINTWISE_BINARY_OPS(X) \
  X(atan2, FLOAT, ALL, "atan2_cpu") \
  X(fmod_tensor, SAME, NUMBERS, "fmod_cpu") \
  X(remainder_tensor, SAME, NUMBERS, "remainder_cpu") \
  X(hypot, SAME, FLOATS, "hypot_cpu") \
  X(copysign_tensor, FLOAT, ALL, "copysign_cpu") \
  X(xlogy_tensor, FLOAT, ALL, "xlogy_cpu") \
  X(pow_tensor_tensor, SAME, NUMBERS, "pow") \
  X(bitwise_and_tensor, SAME, BITS, "bitwise_and_cpu") \
  X(bitwise_or_tensor, SAME, BITS, "bitwise_or_cpu") \
  X(bitwise_xor_tensor, SAME, BITS, "bitwise_xor_cpu") \
  X(clamp_min_tensor, SAME, ALL, "clamp_min_cpu") \
  X(clamp_max_tensor, SAME, ALL, "clamp_max_cpu")

/* X(function name, kind, dtypes, cpu name): functional only */
#define OPD__POINTWISE_BINARY_FUNCTIONAL_OPS(X) \
  X(fmax, SAME, ALL, "fmax_cpu") \
  X(fmin, SAME, ALL, "fmin_cpu") \
  X(logaddexp, SAME, FLOATS, "logaddexp_cpu") \
  X(ne_tensor, BOOL, ALL, "ne_cpu") \
  X(lt_tensor, BOOL, ALL, "lt_cpu") \
  X(le_tensor, BOOL, ALL, "le_cpu") \
  X(ge_tensor, BOOL, ALL, "ge_cpu")

/* X(function name, cpu name): comparisons with a Scalar */
#define OPD__POINTWISE_COMPARE_SCALAR_OPS(X) \
  X(gt_scalar, "gt_cpu") \
  X(le_scalar, "le_cpu") \
  X(ge_scalar, "ge_cpu") \
  X(ne_scalar, "ne_cpu")
/* clang-format on */

/* X(name, kind, dtypes, cpu name): functional only, kernels/cpu/pointwise_special.c */
#define OPD__POINTWISE_SPECIAL_UNARY_OPS(X)   \
  X(i0, FLOAT, ALL, "i0")                     \
  X(special_i0e, FLOAT, ALL, "i0e")           \
  X(special_i1, FLOAT, ALL, "i1")             \
  X(special_i1e, FLOAT, ALL, "i1e")           \
  X(special_ndtr, FLOAT, ALL, "ndtr")         \
  X(special_ndtri, FLOAT, ALL, "ndtri")       \
  X(special_log_ndtr, FLOAT, ALL, "log_ndtr") \
  X(special_erfcx, FLOAT, ALL, "erfcx_cpu")   \
  X(special_entr, FLOAT, ALL, "entr_cpu")     \
  X(sinc, FLOAT, ALL, "sinc_cpu")             \
  X(deg2rad, FLOAT, ALL, "deg2rad")           \
  X(rad2deg, FLOAT, ALL, "rad2deg")
#define OPD__POINTWISE_SPECIAL_BINARY_OPS(X)    \
  X(logaddexp2, SAME, FLOATS, "logaddexp2_cpu") \
  X(nextafter, SAME, FLOATS, "nextafter_cpu")   \
  X(gcd, SAME, INTS, "gcd_cpu")                 \
  X(lcm, SAME, INTS, "lcm_cpu")                 \
  X(special_xlog1py, FLOAT, ALL, "xlog1py_cpu")
#define OPD__POINTWISE_SPECIAL_PREDICATES(X) \
  X(isposinf)                                \
  X(isneginf)

/* heaviside: self and values of one dtype ("heaviside is not yet implemented for tensors with
 * different dtypes."), then the broadcast shape in that dtype. */
int opd__heaviside_meta(opd_tensor *self, opd_tensor *values, opd_dtype *compute,
                        opd_out_spec *spec);

/* unary operators without an in-place variant: bool results */
#define OPD__POINTWISE_PREDICATES(X) \
  X(isnan)                           \
  X(signbit)

/* The shape the inputs broadcast to and the result dtype of `kind`; *compute is the dtype
 * the operands are read in (the promoted one), which must be one of `dtypes` ("\"name\" not
 * implemented for 'Bool'"). */
int opd__pointwise_meta(opd_tensor *const *inputs, int n, opd__pointwise_kind kind,
                        opd__pointwise_dtypes dtypes, const char *name, opd_dtype *compute,
                        opd_out_spec *spec);
/* An in-place variant writing spec's result into self: the result dtype must cast to self's
 * ("result type Float can't be cast to the desired output type Long"), the result's shape
 * must be self's ("output with shape [2] doesn't match the broadcast shape [3, 2]"), self's
 * elements must not alias each other nor partially overlap an input. */
int opd__pointwise_inplace_meta(opd_tensor *self, opd_tensor *const *inputs, int n,
                                const opd_out_spec *spec);
/* The promoted dtype of tensors and scalar kinds (OPD_DTYPE_UNDEFINED kinds are skipped). */
opd_dtype opd__pointwise_promote(opd_tensor *const *t, int n, const opd_dtype *scalar_kinds,
                                 int ns);

/* round.decimals: the result is self's dtype; integers are not implemented. */
int opd__round_decimals_meta(opd_tensor *self, opd_out_spec *spec);
/* addcmul / addcdiv: the promoted dtype of the three; addcdiv rejects integer division
 * (div: true), and value is checked against the result dtype. */
int opd__addc_meta(opd_tensor *self, opd_tensor *t1, opd_tensor *t2, opd_scalar value, bool div,
                   opd_out_spec *spec);
/* lerp: self, end (and weight) of one floating dtype. */
int opd__lerp_meta(opd_tensor *self, opd_tensor *end, opd_tensor *weight, opd_out_spec *spec);
/* clamp_min / clamp_max with a Scalar bound, clamp.Tensor with optional bounds (NULL). */
int opd__clamp_scalar_meta(opd_tensor *self, opd_scalar bound, opd_out_spec *spec);
int opd__clamp_tensor_meta(opd_tensor *self, opd_tensor *min, opd_tensor *max, opd_out_spec *spec);

/* nan_to_num and nan_to_num_, boxed (no unboxed tag holds a float?): (self, nan, posinf,
 * neginf) checked (an int taken for a float), the output spec (self's dtype) and the
 * replacements of NaN, +inf and -inf (defaults 0 and the dtype's extremes) handed to a device's
 * compute fn (into: self for the in-place operator, else NULL; integers and bool: a copy, as
 * ATen's). */
typedef int (*opd__nan_to_num_fn)(opd_tensor *self, const opd_out_spec *spec,
                                  const double *replacements, opd_tensor *into, opd_tensor **out);
int opd__nan_to_num_boxed(opd_stack *stack, bool inplace, opd__nan_to_num_fn fn);

/* [Note: A pointwise operator's kernel pair on each device]
 * round.decimals, addcmul, addcdiv, lerp and clamp_min / clamp_max with a Scalar have a
 * functional and an in-place kernel that differ, on every device, only in the compute's `into`
 * (NULL, or self). OPD__DEFINE_*_KERNELS(dev, fn) define the device `dev`'s kernels over its
 * compute function fn, whose arguments are the operator's, a flag where one function serves
 * two operators (addcdiv; clamp_max), then into and out. */
#define OPD__DEFINE_ROUND_DECIMALS_KERNELS(dev, fn)                                               \
  int opd__##dev##_round_decimals(const opd_kernel_ctx *ctx, opd_tensor *self, int64_t decimals,  \
                                  opd_tensor **out) {                                             \
    (void)ctx;                                                                                    \
    return fn(self, decimals, NULL, out);                                                         \
  }                                                                                               \
  int opd__##dev##_round__decimals(const opd_kernel_ctx *ctx, opd_tensor *self, int64_t decimals, \
                                   opd_tensor **out) {                                            \
    (void)ctx;                                                                                    \
    return fn(self, decimals, self, out);                                                         \
  }
#define OPD__DEFINE_ADDC_KERNELS(dev, fn, name, div)                                      \
  int opd__##dev##_##name(const opd_kernel_ctx *ctx, opd_tensor *self, opd_tensor *t1,    \
                          opd_tensor *t2, opd_scalar value, opd_tensor **out) {           \
    (void)ctx;                                                                            \
    return fn(self, t1, t2, value, div, NULL, out);                                       \
  }                                                                                       \
  int opd__##dev##_##name##_(const opd_kernel_ctx *ctx, opd_tensor *self, opd_tensor *t1, \
                             opd_tensor *t2, opd_scalar value, opd_tensor **out) {        \
    (void)ctx;                                                                            \
    return fn(self, t1, t2, value, div, self, out);                                       \
  }
#define OPD__DEFINE_LERP_KERNELS(dev, fn)                                                     \
  int opd__##dev##_lerp_scalar(const opd_kernel_ctx *ctx, opd_tensor *self, opd_tensor *end,  \
                               opd_scalar weight, opd_tensor **out) {                         \
    (void)ctx;                                                                                \
    return fn(self, end, NULL, weight, NULL, out);                                            \
  }                                                                                           \
  int opd__##dev##_lerp__scalar(const opd_kernel_ctx *ctx, opd_tensor *self, opd_tensor *end, \
                                opd_scalar weight, opd_tensor **out) {                        \
    (void)ctx;                                                                                \
    return fn(self, end, NULL, weight, self, out);                                            \
  }                                                                                           \
  int opd__##dev##_lerp_tensor(const opd_kernel_ctx *ctx, opd_tensor *self, opd_tensor *end,  \
                               opd_tensor *weight, opd_tensor **out) {                        \
    (void)ctx;                                                                                \
    return fn(self, end, weight, opd__scalar_int(0), NULL, out);                              \
  }                                                                                           \
  int opd__##dev##_lerp__tensor(const opd_kernel_ctx *ctx, opd_tensor *self, opd_tensor *end, \
                                opd_tensor *weight, opd_tensor **out) {                       \
    (void)ctx;                                                                                \
    return fn(self, end, weight, opd__scalar_int(0), self, out);                              \
  }
#define OPD__DEFINE_CLAMP_BOUND_KERNELS(dev, fn, name, max)                                 \
  int opd__##dev##_##name(const opd_kernel_ctx *ctx, opd_tensor *self, opd_scalar bound,    \
                          opd_tensor **out) {                                               \
    (void)ctx;                                                                              \
    return fn(self, bound, max, NULL, out);                                                 \
  }                                                                                         \
  int opd__##dev##_##name##_(const opd_kernel_ctx *ctx, opd_tensor *self, opd_scalar bound, \
                             opd_tensor **out) {                                            \
    (void)ctx;                                                                              \
    return fn(self, bound, max, self, out);                                                 \
  }

#endif

/* cuda_pointwise.c: the CUDA kernels of the pointwise math operators (the lists of
 * kernels/meta/pointwise_meta.h: unary and binary functions, comparisons, bitwise operators,
 * round.decimals, nan_to_num, addcmul, addcdiv, lerp, the clamps) and of the activations and
 * their backward operators (kernels/meta/norm_meta.h). Each runs the meta function of its CPU
 * kernel (kernels/cpu/pointwise_*.c, kernels/cpu/norm_activation.c) and one opcode of the
 * elementwise engine (elementwise.cu), whose formulas are those of the CPU loops.
 *
 * [Note: CUDA pointwise opcodes]
 * An operator of a list is mapped to its opcode by OPCODE_name below, so that the kernels are
 * generated from the same X-macro lists as the CPU and Meta kernels: one table of functors
 * (the opcodes' cases in elementwise.cu), no kernel written twice. The dtypes an operator
 * takes are those its CPU kernel's loop table has; the meta functions raise ATen's error for
 * the others (with the CPU kernel's name, as the Meta kernels do).
 */
#include <math.h>

#include "cuda_ew.h"
#include "cuda_internal.h"
#include "cuda_kernels.h"
#include "meta/elementwise_meta.h"
#include "meta/norm_meta.h"
#include "meta/pointwise_meta.h"

/* ---- running an opcode ---- */

/* The dtype classes of a CPU kernel's loop table. */
enum { TAKES_FLOAT = 1, TAKES_INT = 2, TAKES_BOOL = 4, TAKES_NUMBER = 3, TAKES_ALL = 7 };

static int takes(int classes, opd_dtype t, const char *name) {
  int c = opd_dtype_is_floating(t) ? TAKES_FLOAT : t == OPD_BOOL ? TAKES_BOOL : TAKES_INT;
  return classes & c ? 0 : opd__cuda_not_implemented(name, t);
}

static bool divides_integers(const opd__cuda_ewop *o) {
  return (o->op == OPD_CUDA_EW_FMOD || o->op == OPD_CUDA_EW_REMAINDER) &&
         opd__cuda_compute_of(o->compute) == 2;
}

/* o over in (nin operands) into a new tensor of spec, or into `into` (an in-place variant,
 * checked as the CPU kernels check it); integer fmod and remainder fail with
 * "ZeroDivisionError" on a zero divisor. */
static int run(opd__cuda_ewop *o, const opd_out_spec *spec, opd_tensor *const *in, int nin,
               opd_tensor *into, opd_tensor **out) {
  bool checked = divides_integers(o);
  if (!into)
    return checked ? opd__cuda_ew_new_checked(o, spec, in, nin, out)
                   : opd__cuda_ew_new(o, spec, in, nin, out);
  int rc = opd__pointwise_inplace_meta(into, in, nin, spec);
  if (rc) return rc;
  int device = opd__cuda_dev_of(into), bad = 0;
  if (checked && (rc = opd__cuda_flag_new(device, &o->error))) return rc;
  rc = opd__cuda_ew_run(o, into, in, nin);
  if (checked) {
    int rc2 = opd__cuda_flag_take(device, o->error, &bad);
    if (!rc && (rc2 || bad)) rc = rc2 ? rc2 : opd_error(OPD_EINVAL, "ZeroDivisionError");
  }
  return rc ? rc : opd__cuda_inplace_done(into, out);
}

/* A Scalar as a value of dtype t (loops.h's opd__value: t's compute type) into o's constant k
 * (0 or 1): c10's checked conversion (checked) or a plain cast, each kernel with the dtype its
 * CPU kernel converts to. */
static int constant(opd__cuda_ewop *o, int k, opd_scalar s, opd_dtype t, bool checked) {
  opd__value v;
  if (checked) {
    int rc = opd__scalar_to(s, t, &v);
    if (rc) return rc;
  } else {
    v = opd__scalar_cast(s, t);
  }
  opd__cuda_value_to(v, t, k ? &o->c1d : &o->c0d, k ? &o->c1i : &o->c0i);
  return 0;
}

/* ---- the opcodes of the operator lists ([Note: CUDA pointwise opcodes]) ---- */

#define OPCODE_acos               OPD_CUDA_EW_ACOS
#define OPCODE_asin               OPD_CUDA_EW_ASIN
#define OPCODE_atan               OPD_CUDA_EW_ATAN
#define OPCODE_acosh              OPD_CUDA_EW_ACOSH
#define OPCODE_asinh              OPD_CUDA_EW_ASINH
#define OPCODE_atanh              OPD_CUDA_EW_ATANH
#define OPCODE_sinh               OPD_CUDA_EW_SINH
#define OPCODE_cosh               OPD_CUDA_EW_COSH
#define OPCODE_tan                OPD_CUDA_EW_TAN
#define OPCODE_erf                OPD_CUDA_EW_ERF
#define OPCODE_erfc               OPD_CUDA_EW_ERFC
#define OPCODE_erfinv             OPD_CUDA_EW_ERFINV
#define OPCODE_lgamma             OPD_CUDA_EW_LGAMMA
#define OPCODE_digamma            OPD_CUDA_EW_DIGAMMA
#define OPCODE_log1p              OPD_CUDA_EW_LOG1P
#define OPCODE_expm1              OPD_CUDA_EW_EXPM1
#define OPCODE_log2               OPD_CUDA_EW_LOG2
#define OPCODE_log10              OPD_CUDA_EW_LOG10
#define OPCODE_exp2               OPD_CUDA_EW_EXP2
#define OPCODE_reciprocal         OPD_CUDA_EW_RECIPROCAL
#define OPCODE_floor              OPD_CUDA_EW_FLOOR
#define OPCODE_ceil               OPD_CUDA_EW_CEIL
#define OPCODE_round              OPD_CUDA_EW_ROUND
#define OPCODE_trunc              OPD_CUDA_EW_TRUNC
#define OPCODE_frac               OPD_CUDA_EW_FRAC
#define OPCODE_sign               OPD_CUDA_EW_SIGN
#define OPCODE_sgn                OPD_CUDA_EW_SIGN /* sgn is sign for real dtypes */
#define OPCODE_bitwise_not        OPD_CUDA_EW_BITWISE_NOT
#define OPCODE_isnan              OPD_CUDA_EW_ISNAN
#define OPCODE_signbit            OPD_CUDA_EW_SIGNBIT
#define OPCODE_atan2              OPD_CUDA_EW_ATAN2
#define OPCODE_fmod_tensor        OPD_CUDA_EW_FMOD
#define OPCODE_remainder_tensor   OPD_CUDA_EW_REMAINDER
#define OPCODE_hypot              OPD_CUDA_EW_HYPOT
#define OPCODE_copysign_tensor    OPD_CUDA_EW_COPYSIGN
#define OPCODE_xlogy_tensor       OPD_CUDA_EW_XLOGY
#define OPCODE_pow_tensor_tensor  OPD_CUDA_EW_POW_TENSOR
#define OPCODE_bitwise_and_tensor OPD_CUDA_EW_BITWISE_AND
#define OPCODE_bitwise_or_tensor  OPD_CUDA_EW_BITWISE_OR
#define OPCODE_bitwise_xor_tensor OPD_CUDA_EW_BITWISE_XOR
#define OPCODE_clamp_min_tensor   OPD_CUDA_EW_MAXIMUM /* NaN-propagating, as clamp_min */
#define OPCODE_clamp_max_tensor   OPD_CUDA_EW_MINIMUM
#define OPCODE_fmax               OPD_CUDA_EW_FMAX
#define OPCODE_fmin               OPD_CUDA_EW_FMIN
#define OPCODE_logaddexp          OPD_CUDA_EW_LOGADDEXP
#define OPCODE_ne_tensor          OPD_CUDA_EW_NE
#define OPCODE_lt_tensor          OPD_CUDA_EW_LT
#define OPCODE_le_tensor          OPD_CUDA_EW_LE
#define OPCODE_ge_tensor          OPD_CUDA_EW_GE
#define OPCODE_gt_scalar          OPD_CUDA_EW_GT_SCALAR
#define OPCODE_le_scalar          OPD_CUDA_EW_LE_SCALAR
#define OPCODE_ge_scalar          OPD_CUDA_EW_GE_SCALAR
#define OPCODE_ne_scalar          OPD_CUDA_EW_NE_SCALAR

/* ---- unary and binary operators of the lists ---- */

static int unary(opd_tensor *self, opd__pointwise_kind kind, opd__pointwise_dtypes dtypes, int op,
                 const char *name, opd_tensor *into, opd_tensor **out) {
  opd_out_spec spec;
  opd_dtype compute;
  int rc = opd__pointwise_meta(&self, 1, kind, dtypes, name, &compute, &spec);
  if (rc) return rc;
  opd__cuda_ewop o = {.op = op, .compute = compute, .narrow = true};
  return run(&o, &spec, &self, 1, into, out);
}

#define CUDA_UNARY(name, kind, dtypes, cpu_name)                                                \
  int opd__cuda_##name(const opd_kernel_ctx *ctx, opd_tensor *self, opd_tensor **out) {         \
    (void)ctx;                                                                                  \
    return unary(self, OPD__POINTWISE_##kind, OPD__POINTWISE_##dtypes, OPCODE_##name, cpu_name, \
                 NULL, out);                                                                    \
  }                                                                                             \
  int opd__cuda_##name##_(const opd_kernel_ctx *ctx, opd_tensor *self, opd_tensor **out) {      \
    (void)ctx;                                                                                  \
    return unary(self, OPD__POINTWISE_##kind, OPD__POINTWISE_##dtypes, OPCODE_##name, cpu_name, \
                 self, out);                                                                    \
  }
OPD__POINTWISE_UNARY_OPS(CUDA_UNARY)

#define CUDA_PREDICATE(name)                                                                      \
  int opd__cuda_##name(const opd_kernel_ctx *ctx, opd_tensor *self, opd_tensor **out) {           \
    (void)ctx;                                                                                    \
    return unary(self, OPD__POINTWISE_BOOL, OPD__POINTWISE_ALL, OPCODE_##name, #name, NULL, out); \
  }
OPD__POINTWISE_PREDICATES(CUDA_PREDICATE)

static int binary_on(opd_tensor *const *in, opd__pointwise_kind kind, opd__pointwise_dtypes dtypes,
                     int op, const char *name, opd_tensor *into, opd_tensor **out) {
  opd_out_spec spec;
  opd_dtype compute;
  int rc = opd__pointwise_meta(in, 2, kind, dtypes, name, &compute, &spec);
  if (rc) return rc;
  opd__cuda_ewop o = {.op = op, .compute = compute, .narrow = true};
  return run(&o, &spec, in, 2, into, out);
}

/* self op other into a new tensor or into self, with CPU scalars on the device ([Note: CPU
 * scalars in CUDA kernels]) */
static int binary(opd_tensor *self, opd_tensor *other, opd__pointwise_kind kind,
                  opd__pointwise_dtypes dtypes, int op, const char *name, opd_tensor *into,
                  opd_tensor **out) {
  opd_tensor *in[2] = {self, other}, *held[2];
  int rc = opd__cuda_cpu_scalars(into, in, 2, held);
  if (rc == 0) rc = binary_on(in, kind, dtypes, op, name, into, out);
  opd__cuda_release_held(held, 2);
  return rc;
}

#define CUDA_BINARY_FUNCTIONAL(name, kind, dtypes, cpu_name)                                  \
  int opd__cuda_##name(const opd_kernel_ctx *ctx, opd_tensor *self, opd_tensor *other,        \
                       opd_tensor **out) {                                                    \
    (void)ctx;                                                                                \
    return binary(self, other, OPD__POINTWISE_##kind, OPD__POINTWISE_##dtypes, OPCODE_##name, \
                  cpu_name, NULL, out);                                                       \
  }
#define CUDA_BINARY(name, kind, dtypes, cpu_name)                                                \
  CUDA_BINARY_FUNCTIONAL(name, kind, dtypes, cpu_name)                                           \
  int opd__cuda_##name##_inplace(const opd_kernel_ctx *ctx, opd_tensor *self, opd_tensor *other, \
                                 opd_tensor **out) {                                             \
    (void)ctx;                                                                                   \
    return binary(self, other, OPD__POINTWISE_##kind, OPD__POINTWISE_##dtypes, OPCODE_##name,    \
                  cpu_name, self, out);                                                          \
  }
OPD__POINTWISE_BINARY_OPS(CUDA_BINARY)
OPD__POINTWISE_BINARY_FUNCTIONAL_OPS(CUDA_BINARY_FUNCTIONAL)

#define CUDA_COMPARE_SCALAR(name, cpu_name)                                           \
  int opd__cuda_##name(const opd_kernel_ctx *ctx, opd_tensor *self, opd_scalar other, \
                       opd_tensor **out) {                                            \
    (void)ctx;                                                                        \
    return opd__cuda_compare_scalar(self, other, OPCODE_##name, out);                 \
  }
OPD__POINTWISE_COMPARE_SCALAR_OPS(CUDA_COMPARE_SCALAR)

/* ---- round.decimals, nan_to_num ---- */

static int round_decimals(opd_tensor *self, int64_t decimals, opd_tensor *into, opd_tensor **out) {
  opd_out_spec spec;
  int rc = opd__round_decimals_meta(self, &spec);
  if (rc) return rc;
  bool neg = decimals < 0;
  /* 10^|decimals| in the compute type (ATen's std::pow(10, decimals)), as the CPU kernel */
  opd__cuda_ewop o = {.op = neg ? OPD_CUDA_EW_ROUND_COARSE : OPD_CUDA_EW_ROUND_SCALED,
                      .compute = spec.dtype,
                      .c0d = pow(10.0, neg ? -(double)decimals : (double)decimals)};
  if (opd__compute_dtype(spec.dtype) == OPD_FLOAT32) o.c0d = (float)o.c0d;
  return run(&o, &spec, &self, 1, into, out);
}

OPD__DEFINE_ROUND_DECIMALS_KERNELS(cuda, round_decimals)

/* nan_to_num's compute ([Note: A pointwise operator's kernel pair on each device]'s
 * opd__nan_to_num_boxed in kernels/meta/pointwise_meta.h) */
static int nan_to_num(opd_tensor *self, const opd_out_spec *spec, const double *repl,
                      opd_tensor *into, opd_tensor **out) {
  bool floating = opd_dtype_is_floating(spec->dtype);
  opd__cuda_ewop o = {.op = floating ? OPD_CUDA_EW_NAN_TO_NUM : OPD_CUDA_EW_COPY,
                      .compute = spec->dtype,
                      .c0d = repl[0],
                      .c1d = repl[1],
                      .c2d = repl[2]};
  return run(&o, spec, &self, 1, into, out);
}

int opd__cuda_nan_to_num(const opd_kernel_ctx *ctx, opd_stack *stack) {
  (void)ctx;
  return opd__nan_to_num_boxed(stack, false, nan_to_num);
}

int opd__cuda_nan_to_num_(const opd_kernel_ctx *ctx, opd_stack *stack) {
  (void)ctx;
  return opd__nan_to_num_boxed(stack, true, nan_to_num);
}

/* ---- addcmul, addcdiv, lerp, clamps ---- */

static int addc(opd_tensor *self, opd_tensor *t1, opd_tensor *t2, opd_scalar value, bool div,
                opd_tensor *into, opd_tensor **out) {
  opd_out_spec spec;
  int rc = opd__addc_meta(self, t1, t2, value, div, &spec);
  if (rc || (rc = takes(div ? TAKES_FLOAT : TAKES_NUMBER, spec.dtype,
                        div ? "addcdiv_cpu_out" : "addcmul_cpu_out")))
    return rc;
  opd__cuda_ewop o = {
      .op = div ? OPD_CUDA_EW_ADDCDIV : OPD_CUDA_EW_ADDCMUL, .compute = spec.dtype, .narrow = true};
  if ((rc = constant(&o, 0, value, opd__compute_dtype(spec.dtype), true))) return rc;
  return run(&o, &spec, (opd_tensor *[]){self, t1, t2}, 3, into, out);
}

OPD__DEFINE_ADDC_KERNELS(cuda, addc, addcmul, false)
OPD__DEFINE_ADDC_KERNELS(cuda, addc, addcdiv, true)

static int lerp(opd_tensor *self, opd_tensor *end, opd_tensor *weight, opd_scalar weight_value,
                opd_tensor *into, opd_tensor **out) {
  opd_out_spec spec;
  int rc = opd__lerp_meta(self, end, weight, &spec);
  if (rc ||
      (rc = takes(TAKES_FLOAT, spec.dtype, weight ? "lerp_kernel_tensor" : "lerp_kernel_scalar")))
    return rc;
  opd__cuda_ewop o = {.op = weight ? OPD_CUDA_EW_LERP_TENSOR : OPD_CUDA_EW_LERP_SCALAR,
                      .compute = spec.dtype};
  constant(&o, 0, weight_value, opd__compute_dtype(spec.dtype), false);
  return run(&o, &spec, (opd_tensor *[]){self, end, weight}, weight ? 3 : 2, into, out);
}

OPD__DEFINE_LERP_KERNELS(cuda, lerp)

/* clamp_min / clamp_max (max: true) with a Scalar bound, cast to the result dtype */
static int clamp_bound(opd_tensor *self, opd_scalar bound, bool max, opd_tensor *into,
                       opd_tensor **out) {
  opd_out_spec spec;
  int rc = opd__clamp_scalar_meta(self, bound, &spec);
  if (rc ||
      (rc = takes(TAKES_NUMBER, spec.dtype, max ? "clamp_max_scalar_cpu" : "clamp_min_scalar_cpu")))
    return rc;
  opd__cuda_ewop o = {.op = max ? OPD_CUDA_EW_CLAMP_HI : OPD_CUDA_EW_CLAMP_LO,
                      .compute = spec.dtype,
                      .narrow = true};
  constant(&o, 0, bound, opd__compute_dtype(spec.dtype), false);
  return run(&o, &spec, &self, 1, into, out);
}

OPD__DEFINE_CLAMP_BOUND_KERNELS(cuda, clamp_bound, clamp_min, false)
OPD__DEFINE_CLAMP_BOUND_KERNELS(cuda, clamp_bound, clamp_max, true)

int opd__cuda_clamp_tensor(const opd_kernel_ctx *ctx, opd_tensor *self, opd_tensor *min,
                           opd_tensor *max, opd_tensor **out) {
  (void)ctx;
  opd_out_spec spec;
  int rc = opd__clamp_tensor_meta(self, min, max, &spec);
  /* both bounds: the CPU kernel's table has no bool; one: maximum / minimum, every dtype */
  if (rc || (rc = takes(min && max ? TAKES_NUMBER : TAKES_ALL, spec.dtype, "clamp_cpu"))) return rc;
  opd__cuda_ewop o = {.op = min && max ? OPD_CUDA_EW_CLAMP_TENSOR
                            : min      ? OPD_CUDA_EW_MAXIMUM
                                       : OPD_CUDA_EW_MINIMUM,
                      .compute = spec.dtype,
                      .narrow = true};
  opd_tensor *in[3] = {self, min ? min : max, max};
  return run(&o, &spec, in, min && max ? 3 : 2, NULL, out);
}

/* ---- activations and their backward operators ---- */

/* The activation `act` (opcode op) of self with its n Scalar constants (c10's checked
 * conversion to self's dtype). */
static int activation(opd_tensor *self, opd__act act, int op, int n, const opd_scalar *s,
                      opd_tensor **out) {
  opd_out_spec spec;
  int rc = opd__activation_meta(self, act, n, s, &spec);
  opd__cuda_ewop o = {.op = op, .compute = spec.dtype, .narrow = true};
  for (int k = 0; k < n && rc == 0; k++) rc = constant(&o, k, s[k], spec.dtype, true);
  return rc ? rc : run(&o, &spec, &self, 1, NULL, out);
}

/* The backward operator `act` (opcode op) of grad and self (or the forward's result). */
static int activation_backward(opd_tensor *grad, opd_tensor *self, opd__act act, int op, int n,
                               const opd_scalar *s, opd_tensor **out) {
  opd_out_spec spec;
  int rc = opd__activation_backward_meta(grad, self, act, n, s, &spec);
  opd__cuda_ewop o = {.op = op, .compute = spec.dtype, .narrow = true};
  for (int k = 0; k < n && rc == 0; k++) rc = constant(&o, k, s[k], spec.dtype, true);
  return rc ? rc : run(&o, &spec, (opd_tensor *[]){grad, self}, 2, NULL, out);
}

int opd__cuda_hardtanh(const opd_kernel_ctx *ctx, opd_tensor *self, opd_scalar min_val,
                       opd_scalar max_val, opd_tensor **out) {
  (void)ctx;
  return activation(self, OPD__ACT_HARDTANH, OPD_CUDA_EW_HARDTANH, 2,
                    (opd_scalar[]){min_val, max_val}, out);
}

int opd__cuda_threshold(const opd_kernel_ctx *ctx, opd_tensor *self, opd_scalar threshold,
                        opd_scalar value, opd_tensor **out) {
  (void)ctx;
  return activation(self, OPD__ACT_THRESHOLD, OPD_CUDA_EW_THRESHOLD, 2,
                    (opd_scalar[]){threshold, value}, out);
}

int opd__cuda_leaky_relu(const opd_kernel_ctx *ctx, opd_tensor *self, opd_scalar negative_slope,
                         opd_tensor **out) {
  (void)ctx;
  return activation(self, OPD__ACT_LEAKY_RELU, OPD_CUDA_EW_LEAKY_RELU, 1, &negative_slope, out);
}

/* elu's and elu_backward's constants: alpha * scale, scale, input_scale */
static void elu_constants(opd__cuda_ewop *o, opd_dtype t, opd_scalar alpha, opd_scalar scale,
                          opd_scalar input_scale) {
  double a = opd__scalar_to_double(alpha), s = opd__scalar_to_double(scale);
  double k[3] = {a * s, s, opd__scalar_to_double(input_scale)};
  if (opd__compute_dtype(t) == OPD_FLOAT32)
    for (int i = 0; i < 3; i++) k[i] = (float)k[i];
  o->c0d = k[0];
  o->c1d = k[1];
  o->c2d = k[2];
}

int opd__cuda_elu(const opd_kernel_ctx *ctx, opd_tensor *self, opd_scalar alpha, opd_scalar scale,
                  opd_scalar input_scale, opd_tensor **out) {
  (void)ctx;
  opd_out_spec spec;
  int rc =
      opd__activation_meta(self, OPD__ACT_ELU, 3, (opd_scalar[]){alpha, scale, input_scale}, &spec);
  if (rc) return rc;
  opd__cuda_ewop o = {.op = OPD_CUDA_EW_ELU, .compute = spec.dtype};
  elu_constants(&o, spec.dtype, alpha, scale, input_scale);
  return run(&o, &spec, &self, 1, NULL, out);
}

int opd__cuda_mish(const opd_kernel_ctx *ctx, opd_tensor *self, opd_tensor **out) {
  (void)ctx;
  return activation(self, OPD__ACT_MISH, OPD_CUDA_EW_MISH, 0, NULL, out);
}

int opd__cuda_softplus(const opd_kernel_ctx *ctx, opd_tensor *self, opd_scalar beta,
                       opd_scalar threshold, opd_tensor **out) {
  (void)ctx;
  return activation(self, OPD__ACT_SOFTPLUS, OPD_CUDA_EW_SOFTPLUS, 2,
                    (opd_scalar[]){beta, threshold}, out);
}

int opd__cuda_hardswish(const opd_kernel_ctx *ctx, opd_tensor *self, opd_tensor **out) {
  (void)ctx;
  return activation(self, OPD__ACT_HARDSWISH, OPD_CUDA_EW_HARDSWISH, 0, NULL, out);
}

int opd__cuda_hardsigmoid(const opd_kernel_ctx *ctx, opd_tensor *self, opd_tensor **out) {
  (void)ctx;
  return activation(self, OPD__ACT_HARDSIGMOID, OPD_CUDA_EW_HARDSIGMOID, 0, NULL, out);
}

int opd__cuda_glu(const opd_kernel_ctx *ctx, opd_tensor *self, int64_t dim, opd_tensor **out) {
  (void)ctx;
  opd_out_spec spec;
  int64_t d;
  int rc = opd__glu_meta(self, dim, &d, &spec);
  if (rc || (rc = takes(TAKES_FLOAT, spec.dtype, "glu_cpu"))) return rc;
  /* the two halves, views of self */
  opd_tensor *half[2] = {NULL, NULL};
  const int64_t *strides = opd_tensor_strides(self);
  for (int k = 0; k < 2 && !rc; k++)
    rc = opd_tensor_view_of(self, spec.sizes, strides, spec.ndim,
                            self->storage_offset + k * spec.sizes[d] * strides[d], &half[k]);
  opd__cuda_ewop o = {.op = OPD_CUDA_EW_GLU, .compute = spec.dtype};
  if (!rc) rc = run(&o, &spec, half, 2, NULL, out);
  for (int k = 0; k < 2; k++)
    if (half[k]) opd_tensor_release(half[k]);
  return rc;
}

int opd__cuda_threshold_backward(const opd_kernel_ctx *ctx, opd_tensor *grad_output,
                                 opd_tensor *self, opd_scalar threshold, opd_tensor **out) {
  (void)ctx;
  return activation_backward(grad_output, self, OPD__ACT_THRESHOLD_BACKWARD,
                             OPD_CUDA_EW_THRESHOLD_BACKWARD, 1, &threshold, out);
}

int opd__cuda_gelu_backward(const opd_kernel_ctx *ctx, opd_tensor *grad_output, opd_tensor *self,
                            const char *approximate, opd_tensor **out) {
  (void)ctx;
  bool tanh_approx;
  int rc = opd__gelu_approximate(approximate, &tanh_approx);
  return rc ? rc
            : activation_backward(grad_output, self, OPD__ACT_GELU_BACKWARD,
                                  tanh_approx ? OPD_CUDA_EW_GELU_TANH_BACKWARD
                                              : OPD_CUDA_EW_GELU_BACKWARD,
                                  0, NULL, out);
}

#define CUDA_ACTIVATION_BACKWARD(name, ACT)                                                   \
  int opd__cuda_##name(const opd_kernel_ctx *ctx, opd_tensor *grad_output, opd_tensor *self,  \
                       opd_tensor **out) {                                                    \
    (void)ctx;                                                                                \
    return activation_backward(grad_output, self, OPD__ACT_##ACT, OPD_CUDA_EW_##ACT, 0, NULL, \
                               out);                                                          \
  }
CUDA_ACTIVATION_BACKWARD(silu_backward, SILU_BACKWARD)
CUDA_ACTIVATION_BACKWARD(sigmoid_backward, SIGMOID_BACKWARD)
CUDA_ACTIVATION_BACKWARD(tanh_backward, TANH_BACKWARD)
CUDA_ACTIVATION_BACKWARD(hardswish_backward, HARDSWISH_BACKWARD)
CUDA_ACTIVATION_BACKWARD(hardsigmoid_backward, HARDSIGMOID_BACKWARD)
CUDA_ACTIVATION_BACKWARD(mish_backward, MISH_BACKWARD)
#undef CUDA_ACTIVATION_BACKWARD

int opd__cuda_hardtanh_backward(const opd_kernel_ctx *ctx, opd_tensor *grad_output,
                                opd_tensor *self, opd_scalar min_val, opd_scalar max_val,
                                opd_tensor **out) {
  (void)ctx;
  return activation_backward(grad_output, self, OPD__ACT_HARDTANH_BACKWARD,
                             OPD_CUDA_EW_HARDTANH_BACKWARD, 2, (opd_scalar[]){min_val, max_val},
                             out);
}

int opd__cuda_leaky_relu_backward(const opd_kernel_ctx *ctx, opd_tensor *grad_output,
                                  opd_tensor *self, opd_scalar negative_slope, bool self_is_result,
                                  opd_tensor **out) {
  (void)ctx;
  int rc = opd__leaky_relu_backward_check(negative_slope, self_is_result);
  return rc ? rc
            : activation_backward(grad_output, self, OPD__ACT_LEAKY_RELU_BACKWARD,
                                  OPD_CUDA_EW_LEAKY_RELU_BACKWARD, 1, &negative_slope, out);
}

int opd__cuda_elu_backward(const opd_kernel_ctx *ctx, opd_tensor *grad_output, opd_scalar alpha,
                           opd_scalar scale, opd_scalar input_scale, bool is_result,
                           opd_tensor *self_or_result, opd_tensor **out) {
  (void)ctx;
  opd_out_spec spec;
  int rc = opd__elu_backward_check(alpha, is_result);
  if (!rc)
    rc = opd__activation_backward_meta(grad_output, self_or_result, OPD__ACT_ELU_BACKWARD, 3,
                                       (opd_scalar[]){alpha, scale, input_scale}, &spec);
  if (rc) return rc;
  opd__cuda_ewop o = {.op = is_result ? OPD_CUDA_EW_ELU_RESULT_BACKWARD : OPD_CUDA_EW_ELU_BACKWARD,
                      .compute = spec.dtype};
  elu_constants(&o, spec.dtype, alpha, scale, input_scale);
  return run(&o, &spec, (opd_tensor *[]){grad_output, self_or_result}, 2, NULL, out);
}

int opd__cuda_softplus_backward(const opd_kernel_ctx *ctx, opd_tensor *grad_output,
                                opd_tensor *self, opd_scalar beta, opd_scalar threshold,
                                opd_tensor **out) {
  (void)ctx;
  return activation_backward(grad_output, self, OPD__ACT_SOFTPLUS_BACKWARD,
                             OPD_CUDA_EW_SOFTPLUS_BACKWARD, 2, (opd_scalar[]){beta, threshold},
                             out);
}

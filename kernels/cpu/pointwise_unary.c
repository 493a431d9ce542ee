/* pointwise_unary.c: CPU kernels of the unary pointwise math operators of
 * OPD__POINTWISE_UNARY_OPS (trigonometric and hyperbolic functions, erf, erfc, erfinv, lgamma,
 * digamma, logarithms and exponentials, rounding, sign, reciprocal, bitwise_not) with their
 * in-place variants, the predicates isnan and signbit, and round.decimals. Shapes and dtypes
 * come from kernels/meta/pointwise_meta.c. */
#define _DEFAULT_SOURCE /* lgamma_r: glibc's lgamma writes the global signgam */
#include <tgmath.h>

#include "pointwise.h"

static const opd_device cpu_device = {OPD_DEVICE_CPU, -1};

int opd__pointwise_run(const opd_out_spec *spec, opd_tensor *const *inputs, const opd__loop *loop,
                       opd_tensor *into, opd_tensor **out) {
  opd_tensor *r = into;
  int rc = into ? opd__pointwise_inplace_meta(into, inputs, loop->ninputs, spec)
                : opd__alloc_elementwise_output(spec, inputs, loop->ninputs, cpu_device, &r);
  if (rc) return rc;
  opd__loop_run(r, inputs, loop);
  if (loop->ctx && atomic_load_explicit(&loop->ctx->error, memory_order_relaxed)) {
    if (!into) opd_tensor_release(r);
    return opd_error(OPD_EINVAL, "ZeroDivisionError");
  }
  if (into) {
    opd_tensor_bump_version(into);
    opd_tensor_retain(into);
  }
  *out = r;
  return 0;
}

/* ATen's calc_erfinv: a rational approximation refined by two Newton steps. */
#define ERFINV(T, sfx)                                                            \
  static T erfinv_##T(T y) {                                                      \
    static const T a[4] = {0.886226899, -1.645349621, 0.914624893, -0.140543331}; \
    static const T b[4] = {-2.118377725, 1.442710462, -0.329097515, 0.012229801}; \
    static const T c[4] = {-1.970840454, -1.624906493, 3.429567803, 1.641345311}; \
    static const T d[2] = {3.543889200, 1.637067800};                             \
    T y_abs = fabs##sfx(y), x, z, num, dem;                                       \
    if (y_abs > 1) return NAN;                                                    \
    if (y_abs == 1) return copysign##sfx((T)INFINITY, y);                         \
    if (y_abs <= (T)0.7) {                                                        \
      z = y * y;                                                                  \
      num = ((a[3] * z + a[2]) * z + a[1]) * z + a[0];                            \
      dem = (((b[3] * z + b[2]) * z + b[1]) * z + b[0]) * z + 1;                  \
      x = y * num / dem;                                                          \
    } else {                                                                      \
      z = sqrt##sfx(-log##sfx((1 - y_abs) / 2));                                  \
      num = ((c[3] * z + c[2]) * z + c[1]) * z + c[0];                            \
      dem = (d[1] * z + d[0]) * z + 1;                                            \
      x = copysign##sfx(num, y) / dem;                                            \
    }                                                                             \
    const T k = (T)2 / (T)1.77245385090551602730; /* 2 / sqrt(pi) */              \
    x = x - (erf##sfx(x) - y) / (k * exp##sfx(-x * x));                           \
    x = x - (erf##sfx(x) - y) / (k * exp##sfx(-x * x));                           \
    return x;                                                                     \
  }
ERFINV(float, f)
ERFINV(double, )

/* ATen's calc_digamma: the reflection for negative x, a recurrence up to 10, then the
 * asymptotic series (Cephes). */
#define DIGAMMA(T, sfx, PI)                                                      \
  static T digamma_##T(T x) {                                                    \
    static const T A[] = {8.33333333333333333333E-2, -2.10927960927960927961E-2, \
                          7.57575757575757575758E-3, -4.16666666666666666667E-3, \
                          3.96825396825396825397E-3, -8.33333333333333333333E-3, \
                          8.33333333333333333333E-2};                            \
    if (x == 0) return copysign##sfx((T)INFINITY, -x);                           \
    if (x < 0) {                                                                 \
      if (x == trunc##sfx(x)) return NAN;                                        \
      T q, r = modf##sfx(x, &q);                                                 \
      return digamma_##T(1 - x) - PI / tan##sfx(PI * r);                         \
    }                                                                            \
    T result = 0;                                                                \
    while (x < 10) {                                                             \
      result -= 1 / x;                                                           \
      x += 1;                                                                    \
    }                                                                            \
    if (x == 10) return result + (T)2.25175258906672110764;                      \
    T y = 0;                                                                     \
    if (x < (T)1.0e17) {                                                         \
      T z = 1 / (x * x), p = A[0];                                               \
      for (int i = 1; i < 7; i++) p = p * z + A[i];                              \
      y = z * p;                                                                 \
    }                                                                            \
    return result + log##sfx(x) - ((T)0.5 / x) - y;                              \
  }
DIGAMMA(float, f, 3.14159265358979323846f)
DIGAMMA(double, , 3.14159265358979323846)

static inline float lgamma_float(float x) {
  int sign;
  return lgammaf_r(x, &sign);
}
static inline double lgamma_double(double x) {
  int sign;
  return lgamma_r(x, &sign);
}

#define ERFINV_(x)  _Generic((x), float : erfinv_float, double : erfinv_double)(x)
#define DIGAMMA_(x) _Generic((x), float : digamma_float, double : digamma_double)(x)
#define LGAMMA_(x)  _Generic((x), float : lgamma_float, double : lgamma_double)(x)

OPD__FLOATS(OPD__UNARY_LOOP, acos, acos(x))
OPD__FLOATS(OPD__UNARY_LOOP, asin, asin(x))
OPD__FLOATS(OPD__UNARY_LOOP, atan, atan(x))
OPD__FLOATS(OPD__UNARY_LOOP, acosh, acosh(x))
OPD__FLOATS(OPD__UNARY_LOOP, asinh, asinh(x))
OPD__FLOATS(OPD__UNARY_LOOP, atanh, atanh(x))
OPD__FLOATS(OPD__UNARY_LOOP, sinh, sinh(x))
OPD__FLOATS(OPD__UNARY_LOOP, cosh, cosh(x))
OPD__FLOATS(OPD__UNARY_LOOP, tan, tan(x))
OPD__FLOATS(OPD__UNARY_LOOP, erf, erf(x))
OPD__FLOATS(OPD__UNARY_LOOP, erfc, erfc(x))
OPD__FLOATS(OPD__UNARY_LOOP, erfinv, ERFINV_(x))
OPD__FLOATS(OPD__UNARY_LOOP, lgamma, LGAMMA_(x))
OPD__FLOATS(OPD__UNARY_LOOP, digamma, DIGAMMA_(x))
OPD__FLOATS(OPD__UNARY_LOOP, log1p, log1p(x))
OPD__FLOATS(OPD__UNARY_LOOP, expm1, expm1(x))
OPD__FLOATS(OPD__UNARY_LOOP, log2, log2(x))
OPD__FLOATS(OPD__UNARY_LOOP, log10, log10(x))
OPD__FLOATS(OPD__UNARY_LOOP, exp2, exp2(x))
OPD__FLOATS(OPD__UNARY_LOOP, reciprocal, 1 / x)
/* rounding keeps integers as they are */
OPD__FLOATS(OPD__UNARY_LOOP, floor, floor(x))
OPD__INTS(OPD__UNARY_LOOP, floor, x)
OPD__FLOATS(OPD__UNARY_LOOP, ceil, ceil(x))
OPD__INTS(OPD__UNARY_LOOP, ceil, x)
/* half to even, as std::nearbyint in the default rounding mode */
OPD__FLOATS(OPD__UNARY_LOOP, round, nearbyint(x))
OPD__INTS(OPD__UNARY_LOOP, round, x)
OPD__FLOATS(OPD__UNARY_LOOP, trunc, trunc(x))
OPD__INTS(OPD__UNARY_LOOP, trunc, x)
OPD__FLOATS(OPD__UNARY_LOOP, frac, x - trunc(x))
/* NaN gives 0, as ATen's (0 < x) - (x < 0) */
OPD__FLOATS(OPD__UNARY_LOOP, sign, (T)((0 < x) - (x < 0)))
OPD__SINTS(OPD__UNARY_LOOP, sign, (0 < x) - (x < 0))
OPD__UNARY_LOOP(U8, sign, 0 < x)
OPD__BOOLS(OPD__UNARY_LOOP, sign, x)
OPD__INTS(OPD__UNARY_LOOP, bitwise_not, ~x)
OPD__BOOLS(OPD__UNARY_LOOP, bitwise_not, !x)
OPD__FLOATS(OPD__PRED1_LOOP, isnan, x != x)
OPD__INTS(OPD__PRED1_LOOP, isnan, 0)
OPD__BOOLS(OPD__PRED1_LOOP, isnan, 0)
OPD__FLOATS(OPD__PRED1_LOOP, signbit, signbit(x) != 0)
OPD__SINTS(OPD__PRED1_LOOP, signbit, x < 0)
OPD__UINTS(OPD__PRED1_LOOP, signbit, 0)
OPD__BOOLS(OPD__PRED1_LOOP, signbit, 0)

#define FLOAT_TABLE(name) \
  static const opd__loop_fn name##_loops[OPD__NC] = {OPD__FLOATS(OPD__ENTRY, name)};
#define NUMBER_TABLE(name)                                                         \
  static const opd__loop_fn name##_loops[OPD__NC] = {OPD__FLOATS(OPD__ENTRY, name) \
                                                         OPD__INTS(OPD__ENTRY, name)};
#define ALL_TABLE(name)                               \
  static const opd__loop_fn name##_loops[OPD__NC] = { \
      OPD__FLOATS(OPD__ENTRY, name) OPD__INTS(OPD__ENTRY, name) OPD__BOOLS(OPD__ENTRY, name)};
FLOAT_TABLE(acos)
FLOAT_TABLE(asin)
FLOAT_TABLE(atan)
FLOAT_TABLE(acosh)
FLOAT_TABLE(asinh)
FLOAT_TABLE(atanh)
FLOAT_TABLE(sinh)
FLOAT_TABLE(cosh)
FLOAT_TABLE(tan)
FLOAT_TABLE(erf)
FLOAT_TABLE(erfc)
FLOAT_TABLE(erfinv)
FLOAT_TABLE(lgamma)
FLOAT_TABLE(digamma)
FLOAT_TABLE(log1p)
FLOAT_TABLE(expm1)
FLOAT_TABLE(log2)
FLOAT_TABLE(log10)
FLOAT_TABLE(exp2)
FLOAT_TABLE(reciprocal)
NUMBER_TABLE(floor)
NUMBER_TABLE(ceil)
NUMBER_TABLE(round)
NUMBER_TABLE(trunc)
FLOAT_TABLE(frac)
ALL_TABLE(sign)
static const opd__loop_fn bitwise_not_loops[OPD__NC] = {OPD__INTS(OPD__ENTRY, bitwise_not)
                                                            OPD__BOOLS(OPD__ENTRY, bitwise_not)};
ALL_TABLE(isnan)
ALL_TABLE(signbit)
#define sgn_loops sign_loops /* sgn is sign for real dtypes */

/* self's operator of `kind` into a new tensor (into == NULL) or into self. */
static int unary(opd_tensor *self, opd__pointwise_kind kind, opd__pointwise_dtypes dtypes,
                 const opd__loop_fn *table, const char *name, opd_tensor *into, opd_tensor **out) {
  opd_out_spec spec;
  opd_dtype compute;
  opd__loop_fn fn;
  int rc = opd__pointwise_meta(&self, 1, kind, dtypes, name, &compute, &spec);
  if (rc || (rc = opd__loop_select(table, compute, name, &fn))) return rc;
  opd__loop loop = {.fn = fn,
                    .ninputs = 1,
                    .in_dtype = {opd__compute_dtype(compute)},
                    .out_dtype = opd__compute_dtype(spec.dtype)};
  return opd__pointwise_run(&spec, &self, &loop, into, out);
}

#define CPU_UNARY(name, kind, dtypes, cpu_name)                                                \
  int opd__cpu_##name(const opd_kernel_ctx *ctx, opd_tensor *self, opd_tensor **out) {         \
    (void)ctx;                                                                                 \
    return unary(self, OPD__POINTWISE_##kind, OPD__POINTWISE_##dtypes, name##_loops, cpu_name, \
                 NULL, out);                                                                   \
  }                                                                                            \
  int opd__cpu_##name##_(const opd_kernel_ctx *ctx, opd_tensor *self, opd_tensor **out) {      \
    (void)ctx;                                                                                 \
    return unary(self, OPD__POINTWISE_##kind, OPD__POINTWISE_##dtypes, name##_loops, cpu_name, \
                 self, out);                                                                   \
  }
OPD__POINTWISE_UNARY_OPS(CPU_UNARY)

#define CPU_PREDICATE(name)                                                                      \
  int opd__cpu_##name(const opd_kernel_ctx *ctx, opd_tensor *self, opd_tensor **out) {           \
    (void)ctx;                                                                                   \
    return unary(self, OPD__POINTWISE_BOOL, OPD__POINTWISE_ALL, name##_loops, #name, NULL, out); \
  }
OPD__POINTWISE_PREDICATES(CPU_PREDICATE)

/* ---- round.decimals: ATen's round_decimals_kernel ---- */

OPD__FLOATS(OPD__UNARY_LOOP, round_scaled, nearbyint(x *c0) / c0)
OPD__FLOATS(OPD__UNARY_LOOP, round_coarse, nearbyint(x / c0) * c0)
FLOAT_TABLE(round_scaled)
FLOAT_TABLE(round_coarse)

static int round_decimals(opd_tensor *self, int64_t decimals, opd_tensor *into, opd_tensor **out) {
  opd_out_spec spec;
  int rc = opd__round_decimals_meta(self, &spec);
  if (rc) return rc;
  opd_dtype c = opd__compute_dtype(spec.dtype);
  bool neg = decimals < 0;
  /* 10^|decimals| in the compute type, as ATen's std::pow(10, decimals) */
  double ten_pow = pow(10.0, neg ? -(double)decimals : (double)decimals);
  opd__loop_ctx lctx = {0};
  if (c == OPD_FLOAT32)
    lctx.c[0].f32 = (float)ten_pow;
  else
    lctx.c[0].f64 = ten_pow;
  opd__loop_fn fn;
  if ((rc = opd__loop_select(neg ? round_coarse_loops : round_scaled_loops, c, "round_cpu", &fn)))
    return rc;
  opd__loop loop = {.fn = fn, .ninputs = 1, .in_dtype = {c}, .out_dtype = c, .ctx = &lctx};
  return opd__pointwise_run(&spec, &self, &loop, into, out);
}

OPD__DEFINE_ROUND_DECIMALS_KERNELS(cpu, round_decimals)

/* ---- nan_to_num: NaN, +inf and -inf replaced (defaults 0 and the dtype's extremes) ---- */

/* the loop's constants: c[0] for NaN, c[1] for +inf, and -inf's after them */
typedef struct nan_to_num_ctx {
  opd__loop_ctx base;
  double neginf;
} nan_to_num_ctx;

#define NAN_TO_NUM_LOOP(tag)                                                                    \
  static void nan_to_num_##tag(char *out_, char *const *in, int64_t n, opd__loop_ctx *ctx) {    \
    OPD__LOOP_PROLOGUE(tag);                                                                    \
    const T c2 = (T)((const nan_to_num_ctx *)ctx)->neginf;                                      \
    T *out = (T *)out_;                                                                         \
    const T *a = (const T *)in[0];                                                              \
    for (int64_t i = 0; i < n; i++)                                                             \
      out[i] = a[i] != a[i] ? c0 : a[i] == (T)INFINITY ? c1 : a[i] == -(T)INFINITY ? c2 : a[i]; \
  }
NAN_TO_NUM_LOOP(F32)
NAN_TO_NUM_LOOP(F64)
FLOAT_TABLE(nan_to_num)

/* nan_to_num's compute ([Note: A pointwise operator's kernel pair on each device]'s
 * opd__nan_to_num_boxed in kernels/meta/pointwise_meta.h) */
static int nan_to_num(opd_tensor *self, const opd_out_spec *spec, const double *repl,
                      opd_tensor *into, opd_tensor **out) {
  int rc;
  opd_dtype c = opd__compute_dtype(spec->dtype);
  nan_to_num_ctx lctx = {.neginf = repl[2]};
  if (c == OPD_FLOAT32) {
    lctx.base.c[0].f32 = (float)repl[0];
    lctx.base.c[1].f32 = (float)repl[1];
  } else {
    lctx.base.c[0].f64 = repl[0];
    lctx.base.c[1].f64 = repl[1];
  }
  opd__loop loop = {
      .fn = opd_dtype_is_floating(spec->dtype) ? nan_to_num_loops[opd__compute_index(c)] : NULL,
      .ninputs = 1,
      .in_dtype = {c},
      .out_dtype = c,
      .ctx = &lctx.base};
  if (opd_tensor_is_meta(self)) {
    if (!into) return opd__alloc_elementwise_output(spec, &self, 1, opd_tensor_device(self), out);
    if ((rc = opd__pointwise_inplace_meta(into, &self, 1, spec))) return rc;
    opd_tensor_bump_version(into);
    opd_tensor_retain(into);
    *out = into;
    return 0;
  }
  return opd__pointwise_run(spec, &self, &loop, into, out);
}

int opd__cpu_nan_to_num(const opd_kernel_ctx *ctx, opd_stack *stack) {
  (void)ctx;
  return opd__nan_to_num_boxed(stack, false, nan_to_num);
}
int opd__meta_nan_to_num(const opd_kernel_ctx *ctx, opd_stack *stack) {
  (void)ctx;
  return opd__nan_to_num_boxed(stack, false, nan_to_num);
}
int opd__cpu_nan_to_num_(const opd_kernel_ctx *ctx, opd_stack *stack) {
  (void)ctx;
  return opd__nan_to_num_boxed(stack, true, nan_to_num);
}
int opd__meta_nan_to_num_(const opd_kernel_ctx *ctx, opd_stack *stack) {
  (void)ctx;
  return opd__nan_to_num_boxed(stack, true, nan_to_num);
}

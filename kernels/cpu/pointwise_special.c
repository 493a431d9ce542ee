/* pointwise_special.c: CPU kernels of the special functions and other pointwise operators
 * without in-place variants: OPD__POINTWISE_SPECIAL_UNARY_OPS (i0, special_i0e, special_i1,
 * special_i1e, special_ndtr, special_ndtri, special_log_ndtr, special_erfcx, special_entr, sinc,
 * deg2rad, rad2deg), OPD__POINTWISE_SPECIAL_BINARY_OPS (logaddexp2, nextafter, gcd, lcm,
 * special_xlog1py), heaviside and the predicates isposinf, isneginf. Shapes and dtypes come from
 * kernels/meta/pointwise_meta.c.
 *
 * [Note: Special functions in double]
 * Each function is computed in double and rounded to the result's dtype (float32's too: at
 * least as accurate as ATen's float polynomials). The modified Bessel functions I0 and I1 sum
 * their power series up to |x| = 20 and use their asymptotic expansion (scaled by e^-|x|)
 * beyond, where it is exact to double precision; erfcx is exp(x^2) erfc(x) (x^2 split exactly
 * with fma) up to 26, where erfc underflows, and its asymptotic series beyond; ndtri refines the
 * Abramowitz-Stegun 26.2.23 guess by Newton steps on ndtr, which is ATen's erf / erfc split. */
#include <float.h>
#include <tgmath.h>

#include "pointwise.h"

static const double sqrt_pi = 1.77245385090551602730, sqrt_2pi = 2.50662827463100050242;
static const double pi = 3.14159265358979323846;

/* e^-|x| I_nu(x) for nu 0 or 1 (I1 odd, I0 even) */
static double bessel_i_scaled(int nu, double x) {
  double ax = fabs(x), r;
  if (isnan(x)) return x;
  if (ax <= 20) { /* sum (x/2)^(2k+nu) / (k! (k+nu)!) */
    double h = ax / 2, term = nu ? h : 1, sum = term;
    for (int k = 1; k < 500 && term > sum * 1e-17; k++) {
      term *= h * h / ((double)k * (double)(k + nu));
      sum += term;
    }
    r = sum * exp(-ax);
  } else if (isinf(ax)) {
    r = 0;
  } else { /* 1/sqrt(2 pi x) sum_k (-1)^k prod_{j<=k} (4 nu^2 - (2j-1)^2) / (k! (8x)^k) */
    double term = 1, sum = 1, mu = 4.0 * nu * nu;
    for (int k = 1; k < 60; k++) {
      double next = -term * (mu - (2.0 * k - 1) * (2.0 * k - 1)) / (k * 8 * ax);
      if (fabs(next) >= fabs(term)) break; /* the series is asymptotic: stop at its smallest term */
      term = next;
      sum += term;
      if (fabs(term) < 1e-17 * fabs(sum)) break;
    }
    r = sum / sqrt(2 * pi * ax);
  }
  return nu && x < 0 ? -r : r;
}

static double bessel_i(int nu, double x) {
  double ax = fabs(x);
  if (isinf(ax)) return nu && x < 0 ? -INFINITY : INFINITY;
  return bessel_i_scaled(nu, x) * exp(ax);
}

/* exp(x^2) erfc(x) */
static double erfcx(double x) {
  if (isnan(x)) return x;
  if (x < 26) {
    double hi = x * x, lo = fma(x, x, -hi);
    return exp(hi) * exp(lo) * erfc(x);
  }
  if (isinf(x)) return 0;
  /* 1/(x sqrt(pi)) sum_k (-1)^k (2k-1)!! / (2x^2)^k */
  double term = 1, sum = 1;
  for (int k = 1; k < 30; k++) {
    term *= -(2.0 * k - 1) / (2 * x * x);
    sum += term;
    if (fabs(term) < 1e-17) break;
  }
  return sum / (x * sqrt_pi);
}

/* ATen's calc_ndtr */
static double ndtr(double x) {
  double y = x * 0.70710678118654752440, z = fabs(y);
  if (z < 0.70710678118654752440) return 0.5 + 0.5 * erf(y);
  double w = 0.5 * erfc(z);
  return y > 0 ? 1 - w : w;
}

/* ATen's calc_log_ndtr */
static double log_ndtr(double x) {
  double t = x * 0.70710678118654752440;
  if (x < -1) return log(erfcx(-t) / 2) - t * t;
  return log1p(-erfc(t) / 2);
}

/* the x with ndtr(x) = p */
static double ndtri(double p) {
  if (isnan(p) || p < 0 || p > 1) return NAN;
  if (p == 0) return -INFINITY;
  if (p == 1) return INFINITY;
  bool upper = p > 0.5;
  double q = upper ? 1 - p : p; /* the tail holding the root: x <= 0 for q */
  double t = sqrt(-2 * log(q));
  double x = -(t - (2.515517 + 0.802853 * t + 0.010328 * t * t) /
                       (1 + 1.432788 * t + 0.189269 * t * t + 0.001308 * t * t * t));
  for (int i = 0; i < 8; i++) {
    /* Newton on log ndtr in the far tail, where ndtr's value would lose digits */
    double step = x < -5 ? (log_ndtr(x) - log(q)) * ndtr(x) / (exp(-x * x / 2) / sqrt_2pi)
                         : (ndtr(x) - q) / (exp(-x * x / 2) / sqrt_2pi);
    x -= step;
    if (fabs(step) <= 1e-16 * fabs(x)) break;
  }
  return upper ? -x : x;
}

/* ATen's calc_entr */
static double entr(double x) {
  if (isnan(x)) return x;
  if (x > 0) return -x * log(x);
  return x == 0 ? 0 : -INFINITY;
}

/* ATen's sinc: sin(pi x) / (pi x), 1 at 0 */
static double sinc(double x) {
  if (x == 0) return 1;
  double product = pi * x;
  return sin(product) / product;
}

/* ATen's logaddexp2 */
static double logaddexp2(double a, double b) {
  if (isinf(a) && a == b) return a;
  double m = a < b ? b : a;
  return m + log2(1 + pow(2, -fabs(a - b)));
}

/* ATen's calc_gcd on absolute values (|INT64_MIN| wraps, as there) */
static int64_t gcd_int(int64_t a_in, int64_t b_in) {
  uint64_t a = a_in < 0 ? 0 - (uint64_t)a_in : (uint64_t)a_in;
  uint64_t b = b_in < 0 ? 0 - (uint64_t)b_in : (uint64_t)b_in;
  while (a != 0) {
    uint64_t c = a;
    a = b % a;
    b = c;
  }
  return (int64_t)b;
}

/* ATen's lcm: |a / gcd * b| (wrapping) */
static int64_t lcm_int(int64_t a, int64_t b) {
  int64_t g = gcd_int(a, b);
  if (g == 0) return 0;
  uint64_t r = (uint64_t)(a / g) * (uint64_t)b;
  return (int64_t)r < 0 ? (int64_t)(0 - r) : (int64_t)r;
}

/* ATen's xlog1py: NaN for a NaN y, 0 for x = 0 */
static double xlog1py(double x, double y) {
  if (isnan(y)) return NAN;
  if (x == 0) return 0;
  return x * log1p(y);
}

#define D(x) ((double)(x))
OPD__FLOATS(OPD__UNARY_LOOP, i0, (T)bessel_i(0, D(x)))
OPD__FLOATS(OPD__UNARY_LOOP, special_i0e, (T)bessel_i_scaled(0, D(x)))
OPD__FLOATS(OPD__UNARY_LOOP, special_i1, (T)bessel_i(1, D(x)))
OPD__FLOATS(OPD__UNARY_LOOP, special_i1e, (T)bessel_i_scaled(1, D(x)))
OPD__FLOATS(OPD__UNARY_LOOP, special_ndtr, (T)ndtr(D(x)))
OPD__FLOATS(OPD__UNARY_LOOP, special_ndtri, (T)ndtri(D(x)))
OPD__FLOATS(OPD__UNARY_LOOP, special_log_ndtr, (T)log_ndtr(D(x)))
OPD__FLOATS(OPD__UNARY_LOOP, special_erfcx, (T)erfcx(D(x)))
OPD__FLOATS(OPD__UNARY_LOOP, special_entr, (T)entr(D(x)))
OPD__FLOATS(OPD__UNARY_LOOP, sinc, (T)sinc(D(x)))
OPD__FLOATS(OPD__UNARY_LOOP, deg2rad, (T)(D(x) * (pi / 180)))
OPD__FLOATS(OPD__UNARY_LOOP, rad2deg, (T)(D(x) * (180 / pi)))
OPD__FLOATS(OPD__BINARY_LOOP, logaddexp2, (T)logaddexp2(D(x), D(y)))
OPD__FLOATS(OPD__BINARY_LOOP, nextafter, nextafter(x, y))
OPD__INTS(OPD__BINARY_LOOP, gcd, (T)gcd_int(x, y))
OPD__INTS(OPD__BINARY_LOOP, lcm, (T)lcm_int(x, y))
OPD__FLOATS(OPD__BINARY_LOOP, special_xlog1py, (T)xlog1py(D(x), D(y)))
/* ATen's heaviside: values where self is 0, else whether self > 0 */
OPD__FLOATS(OPD__BINARY_LOOP, heaviside, x == 0 ? y : (T)(x > 0))
OPD__INTS(OPD__BINARY_LOOP, heaviside, x == 0 ? y : (T)(x > 0))
OPD__BOOLS(OPD__BINARY_LOOP, heaviside, x == 0 ? y : (T)(x > 0))
OPD__FLOATS(OPD__PRED1_LOOP, isposinf, x == (T)INFINITY)
OPD__INTS(OPD__PRED1_LOOP, isposinf, 0)
OPD__BOOLS(OPD__PRED1_LOOP, isposinf, 0)
OPD__FLOATS(OPD__PRED1_LOOP, isneginf, x == -(T)INFINITY)
OPD__INTS(OPD__PRED1_LOOP, isneginf, 0)
OPD__BOOLS(OPD__PRED1_LOOP, isneginf, 0)

#define FLOAT_TABLE(name) \
  static const opd__loop_fn name##_loops[OPD__NC] = {OPD__FLOATS(OPD__ENTRY, name)};
#define INT_TABLE(name) \
  static const opd__loop_fn name##_loops[OPD__NC] = {OPD__INTS(OPD__ENTRY, name)};
#define ALL_TABLE(name)                               \
  static const opd__loop_fn name##_loops[OPD__NC] = { \
      OPD__FLOATS(OPD__ENTRY, name) OPD__INTS(OPD__ENTRY, name) OPD__BOOLS(OPD__ENTRY, name)};
FLOAT_TABLE(i0)
FLOAT_TABLE(special_i0e)
FLOAT_TABLE(special_i1)
FLOAT_TABLE(special_i1e)
FLOAT_TABLE(special_ndtr)
FLOAT_TABLE(special_ndtri)
FLOAT_TABLE(special_log_ndtr)
FLOAT_TABLE(special_erfcx)
FLOAT_TABLE(special_entr)
FLOAT_TABLE(sinc)
FLOAT_TABLE(deg2rad)
FLOAT_TABLE(rad2deg)
FLOAT_TABLE(logaddexp2)
FLOAT_TABLE(nextafter)
INT_TABLE(gcd)
INT_TABLE(lcm)
FLOAT_TABLE(special_xlog1py)
ALL_TABLE(heaviside)
ALL_TABLE(isposinf)
ALL_TABLE(isneginf)

/* The operator of `n` inputs through `table` into a new tensor. */
static int pointwise(opd_tensor **in, int n, opd__pointwise_kind kind, opd__pointwise_dtypes dtypes,
                     const opd__loop_fn *table, const char *name, opd_tensor **out) {
  opd_out_spec spec;
  opd_dtype compute;
  opd__loop_fn fn;
  int rc = opd__pointwise_meta(in, n, kind, dtypes, name, &compute, &spec);
  if (rc || (rc = opd__loop_select(table, compute, name, &fn))) return rc;
  opd_dtype c = opd__compute_dtype(compute);
  opd__loop loop = {
      .fn = fn, .ninputs = n, .in_dtype = {c, c}, .out_dtype = opd__compute_dtype(spec.dtype)};
  return opd__pointwise_run(&spec, in, &loop, NULL, out);
}

#define CPU_UNARY(name, kind, dtypes, cpu_name)                                              \
  int opd__cpu_##name(const opd_kernel_ctx *ctx, opd_tensor *self, opd_tensor **out) {       \
    (void)ctx;                                                                               \
    return pointwise(&self, 1, OPD__POINTWISE_##kind, OPD__POINTWISE_##dtypes, name##_loops, \
                     cpu_name, out);                                                         \
  }
OPD__POINTWISE_SPECIAL_UNARY_OPS(CPU_UNARY)

#define CPU_BINARY(name, kind, dtypes, cpu_name)                                          \
  int opd__cpu_##name(const opd_kernel_ctx *ctx, opd_tensor *self, opd_tensor *other,     \
                      opd_tensor **out) {                                                 \
    (void)ctx;                                                                            \
    opd_tensor *in[2] = {self, other};                                                    \
    return pointwise(in, 2, OPD__POINTWISE_##kind, OPD__POINTWISE_##dtypes, name##_loops, \
                     cpu_name, out);                                                      \
  }
OPD__POINTWISE_SPECIAL_BINARY_OPS(CPU_BINARY)

#define CPU_PREDICATE(name)                                                                        \
  int opd__cpu_##name(const opd_kernel_ctx *ctx, opd_tensor *self, opd_tensor **out) {             \
    (void)ctx;                                                                                     \
    return pointwise(&self, 1, OPD__POINTWISE_BOOL, OPD__POINTWISE_ALL, name##_loops, #name, out); \
  }
OPD__POINTWISE_SPECIAL_PREDICATES(CPU_PREDICATE)

int opd__cpu_heaviside(const opd_kernel_ctx *ctx, opd_tensor *self, opd_tensor *values,
                       opd_tensor **out) {
  (void)ctx;
  opd_out_spec spec;
  opd_dtype compute;
  int rc = opd__heaviside_meta(self, values, &compute, &spec);
  if (rc) return rc;
  opd_tensor *in[2] = {self, values};
  return pointwise(in, 2, OPD__POINTWISE_SAME, OPD__POINTWISE_ALL, heaviside_loops, "heaviside_cpu",
                   out);
}

/* pointwise_binary.c: CPU kernels of the binary pointwise math operators of
 * OPD__POINTWISE_BINARY_OPS (atan2, fmod, remainder, hypot, copysign, xlogy, pow.Tensor_Tensor,
 * bitwise and / or / xor; with their in-place variants) and OPD__POINTWISE_BINARY_FUNCTIONAL_OPS
 * (fmax, fmin, logaddexp, the comparisons ne, lt, le, ge), the comparisons with a Scalar of
 * OPD__POINTWISE_COMPARE_SCALAR_OPS, and the ternary addcmul, addcdiv, lerp and the clamps with
 * their in-place variants. Shapes and dtypes come from kernels/meta/pointwise_meta.c. */
#include <tgmath.h>

#include "meta/elementwise_meta.h"
#include "pointwise.h"

/* Integer fmod, remainder (Python's %, the sign of the divisor) and power, in int64 (every
 * integer dtype's values are int64 values; the result is cast back, wrapping as ATen's). A
 * zero divisor sets ctx->error. */
static inline int64_t fmod_int(int64_t a, int64_t b, opd__loop_ctx *ctx) {
  if (b == 0) {
    atomic_store_explicit(&ctx->error, 1, memory_order_relaxed);
    return 0;
  }
  return b == -1 ? 0 : a % b;
}
static inline int64_t remainder_int(int64_t a, int64_t b, opd__loop_ctx *ctx) {
  int64_t r = fmod_int(a, b, ctx);
  return r != 0 && (r < 0) != (b < 0) ? r + b : r;
}
/* ATen's powi: a negative exponent gives 0 but for bases 1 and -1 */
static inline int64_t pow_int(int64_t a, int64_t b) {
  if (b < 0) return a == 1 ? 1 : a == -1 ? (b % 2 ? -1 : 1) : 0;
  uint64_t r = 1, ua = (uint64_t)a;
  for (uint64_t e = (uint64_t)b; e; e >>= 1, ua *= ua)
    if (e & 1) r *= ua;
  return (int64_t)r;
}
/* ATen's remainder for floats: fmod, moved to the divisor's sign */
static inline double remainder_float_(double m, double b) {
  return m != 0 && (b < 0) != (m < 0) ? m + b : m;
}
static inline float remainder_float_f(float m, float b) {
  return m != 0 && (b < 0) != (m < 0) ? m + b : m;
}
/* ATen's xlogy: NaN for a NaN y, 0 for x == 0 */
#define XLOGY(x, y)     (y != y ? (T)NAN : x == 0 ? (T)0 : x * log(y))
/* ATen's logaddexp: an infinity added to itself stays, else max + log1p(exp(-|a - b|)) */
#define LOGADDEXP(x, y) (isinf(x) && x == y ? x : (x < y ? y : x) + log1p(exp(-fabs(x - y))))

OPD__FLOATS(OPD__BINARY_LOOP, atan2, atan2(x, y))
OPD__FLOATS(OPD__BINARY_LOOP, fmod_tensor, fmod(x, y))
OPD__INTS(OPD__BINARY_LOOP, fmod_tensor, fmod_int(x, y, ctx))
OPD__BINARY_LOOP(F32, remainder_tensor, remainder_float_f(fmodf(x, y), y))
OPD__BINARY_LOOP(F64, remainder_tensor, remainder_float_(fmod(x, y), y))
OPD__INTS(OPD__BINARY_LOOP, remainder_tensor, remainder_int(x, y, ctx))
OPD__FLOATS(OPD__BINARY_LOOP, hypot, hypot(x, y))
OPD__FLOATS(OPD__BINARY_LOOP, copysign_tensor, copysign(x, y))
OPD__FLOATS(OPD__BINARY_LOOP, xlogy_tensor, XLOGY(x, y))
OPD__FLOATS(OPD__BINARY_LOOP, pow_tensor_tensor, pow(x, y))
OPD__INTS(OPD__BINARY_LOOP, pow_tensor_tensor, pow_int(x, y))
OPD__INTS(OPD__BINARY_LOOP, bitwise_and_tensor, x &y)
OPD__BOOLS(OPD__BINARY_LOOP, bitwise_and_tensor, x &y)
OPD__INTS(OPD__BINARY_LOOP, bitwise_or_tensor, x | y)
OPD__BOOLS(OPD__BINARY_LOOP, bitwise_or_tensor, x | y)
OPD__INTS(OPD__BINARY_LOOP, bitwise_xor_tensor, x ^ y)
OPD__BOOLS(OPD__BINARY_LOOP, bitwise_xor_tensor, x ^ y)
/* fmax / fmin ignore a NaN operand (C's fmax, fmin) */
OPD__FLOATS(OPD__BINARY_LOOP, fmax, fmax(x, y))
OPD__INTS(OPD__BINARY_LOOP, fmax, x < y ? y : x)
OPD__BOOLS(OPD__BINARY_LOOP, fmax, x | y)
OPD__FLOATS(OPD__BINARY_LOOP, fmin, fmin(x, y))
OPD__INTS(OPD__BINARY_LOOP, fmin, y < x ? y : x)
OPD__BOOLS(OPD__BINARY_LOOP, fmin, x &y)
/* clamp_min / clamp_max with a tensor bound: maximum / minimum, NaN propagating */
OPD__FLOATS(OPD__BINARY_LOOP, clamp_min_tensor, x != x ? x : y != y ? y : x < y ? y : x)
OPD__INTS(OPD__BINARY_LOOP, clamp_min_tensor, x < y ? y : x)
OPD__BOOLS(OPD__BINARY_LOOP, clamp_min_tensor, x | y)
OPD__FLOATS(OPD__BINARY_LOOP, clamp_max_tensor, x != x ? x : y != y ? y : y < x ? y : x)
OPD__INTS(OPD__BINARY_LOOP, clamp_max_tensor, y < x ? y : x)
OPD__BOOLS(OPD__BINARY_LOOP, clamp_max_tensor, x &y)
OPD__FLOATS(OPD__BINARY_LOOP, logaddexp, LOGADDEXP(x, y))
#define COMPARISON(name, op)                 \
  OPD__FLOATS(OPD__PRED2_LOOP, name, x op y) \
  OPD__INTS(OPD__PRED2_LOOP, name, x op y)   \
  OPD__BOOLS(OPD__PRED2_LOOP, name, x op y)
#define COMPARISON_SCALAR(name, op)           \
  OPD__FLOATS(OPD__PRED1_LOOP, name, x op c0) \
  OPD__INTS(OPD__PRED1_LOOP, name, x op c0)   \
  OPD__BOOLS(OPD__PRED1_LOOP, name, x op c0)
COMPARISON(ne_tensor, !=)
COMPARISON(lt_tensor, <)
COMPARISON(le_tensor, <=)
COMPARISON(ge_tensor, >=)
COMPARISON_SCALAR(ne_scalar, !=)
COMPARISON_SCALAR(le_scalar, <=)
COMPARISON_SCALAR(ge_scalar, >=)
COMPARISON_SCALAR(gt_scalar, >)

#define FLOAT_TABLE(name) \
  static const opd__loop_fn name##_loops[OPD__NC] = {OPD__FLOATS(OPD__ENTRY, name)};
#define NUMBER_TABLE(name)                                                         \
  static const opd__loop_fn name##_loops[OPD__NC] = {OPD__FLOATS(OPD__ENTRY, name) \
                                                         OPD__INTS(OPD__ENTRY, name)};
#define ALL_TABLE(name)                               \
  static const opd__loop_fn name##_loops[OPD__NC] = { \
      OPD__FLOATS(OPD__ENTRY, name) OPD__INTS(OPD__ENTRY, name) OPD__BOOLS(OPD__ENTRY, name)};
#define BITS_TABLE(name)                                                         \
  static const opd__loop_fn name##_loops[OPD__NC] = {OPD__INTS(OPD__ENTRY, name) \
                                                         OPD__BOOLS(OPD__ENTRY, name)};
FLOAT_TABLE(atan2)
NUMBER_TABLE(fmod_tensor)
NUMBER_TABLE(remainder_tensor)
FLOAT_TABLE(hypot)
FLOAT_TABLE(copysign_tensor)
FLOAT_TABLE(xlogy_tensor)
NUMBER_TABLE(pow_tensor_tensor)
BITS_TABLE(bitwise_and_tensor)
BITS_TABLE(bitwise_or_tensor)
BITS_TABLE(bitwise_xor_tensor)
ALL_TABLE(fmax)
ALL_TABLE(fmin)
FLOAT_TABLE(logaddexp)
ALL_TABLE(clamp_min_tensor)
ALL_TABLE(clamp_max_tensor)
ALL_TABLE(ne_tensor)
ALL_TABLE(lt_tensor)
ALL_TABLE(le_tensor)
ALL_TABLE(ge_tensor)
ALL_TABLE(ne_scalar)
ALL_TABLE(le_scalar)
ALL_TABLE(ge_scalar)
ALL_TABLE(gt_scalar)

/* self op other into a new tensor (into == NULL) or into self. */
static int binary(opd_tensor *self, opd_tensor *other, opd__pointwise_kind kind,
                  opd__pointwise_dtypes dtypes, const opd__loop_fn *table, const char *name,
                  opd_tensor *into, opd_tensor **out) {
  opd_out_spec spec;
  opd_dtype compute;
  opd__loop_fn fn;
  opd_tensor *in[2] = {self, other};
  int rc = opd__pointwise_meta(in, 2, kind, dtypes, name, &compute, &spec);
  if (rc || (rc = opd__loop_select(table, compute, name, &fn))) return rc;
  opd__loop_ctx lctx = {0};
  opd_dtype c = opd__compute_dtype(compute);
  opd__loop loop = {.fn = fn,
                    .ninputs = 2,
                    .in_dtype = {c, c},
                    .out_dtype = opd__compute_dtype(spec.dtype),
                    .ctx = &lctx};
  return opd__pointwise_run(&spec, in, &loop, into, out);
}

#define CPU_BINARY_FUNCTIONAL(name, kind, dtypes, cpu_name)                                  \
  int opd__cpu_##name(const opd_kernel_ctx *ctx, opd_tensor *self, opd_tensor *other,        \
                      opd_tensor **out) {                                                    \
    (void)ctx;                                                                               \
    return binary(self, other, OPD__POINTWISE_##kind, OPD__POINTWISE_##dtypes, name##_loops, \
                  cpu_name, NULL, out);                                                      \
  }
#define CPU_BINARY(name, kind, dtypes, cpu_name)                                                \
  CPU_BINARY_FUNCTIONAL(name, kind, dtypes, cpu_name)                                           \
  int opd__cpu_##name##_inplace(const opd_kernel_ctx *ctx, opd_tensor *self, opd_tensor *other, \
                                opd_tensor **out) {                                             \
    (void)ctx;                                                                                  \
    return binary(self, other, OPD__POINTWISE_##kind, OPD__POINTWISE_##dtypes, name##_loops,    \
                  cpu_name, self, out);                                                         \
  }
OPD__POINTWISE_BINARY_OPS(CPU_BINARY)
OPD__POINTWISE_BINARY_FUNCTIONAL_OPS(CPU_BINARY_FUNCTIONAL)

/* A comparison with a Scalar, a wrapped number converted to the common dtype. */
static int compare_scalar(opd_tensor *self, opd_scalar other, const opd__loop_fn *table,
                          const char *name, opd_tensor **out) {
  opd_out_spec spec;
  opd_dtype common;
  int rc = opd__compare_scalar_meta(self, other, &common, &spec);
  opd__loop_fn fn;
  if (rc || (rc = opd__loop_select(table, common, name, &fn))) return rc;
  opd__loop_ctx lctx = {.c = {opd__scalar_cast(other, common)}};
  opd__loop loop = {.fn = fn,
                    .ninputs = 1,
                    .in_dtype = {opd__compute_dtype(common)},
                    .out_dtype = OPD_BOOL,
                    .ctx = &lctx};
  return opd__pointwise_run(&spec, &self, &loop, NULL, out);
}

#define CPU_COMPARE_SCALAR(name, cpu_name)                                           \
  int opd__cpu_##name(const opd_kernel_ctx *ctx, opd_tensor *self, opd_scalar other, \
                      opd_tensor **out) {                                            \
    (void)ctx;                                                                       \
    return compare_scalar(self, other, name##_loops, cpu_name, out);                 \
  }
OPD__POINTWISE_COMPARE_SCALAR_OPS(CPU_COMPARE_SCALAR)

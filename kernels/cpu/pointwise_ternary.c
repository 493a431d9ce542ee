/* pointwise_ternary.c: CPU kernels of addcmul, addcdiv, lerp (Scalar and Tensor weights),
 * clamp_min / clamp_max with a Scalar bound and clamp.Tensor, with their in-place variants.
 * Shapes and dtypes come from kernels/meta/pointwise_meta.c. */
#include <tgmath.h>

#include "meta/elementwise_meta.h"
#include "pointwise.h"

/* name_tag: out[i] = expr of x = in[0][i], y = in[1][i], z = in[2][i]. */
#define TERNARY_LOOP(tag, name, expr)                                                    \
  static void name##_##tag(char *out_, char *const *in, int64_t n, opd__loop_ctx *ctx) { \
    OPD__LOOP_PROLOGUE(tag);                                                             \
    T *out = (T *)out_;                                                                  \
    const T *a = (const T *)in[0], *b = (const T *)in[1], *w = (const T *)in[2];         \
    for (int64_t i = 0; i < n; i++) {                                                    \
      const T x = a[i], y = b[i], z = w[i];                                              \
      out[i] = (T)(expr);                                                                \
    }                                                                                    \
  }

/* ATen's addcmul / addcdiv: self + value * t1 * t2 (/ t2), in that order */
TERNARY_LOOP(F32, addcmul, x + c0 * y * z)
TERNARY_LOOP(F64, addcmul, x + c0 * y * z)
OPD__INTS(TERNARY_LOOP, addcmul, OPD__WRAP_ADD(T, x, OPD__WRAP_MUL(T, OPD__WRAP_MUL(T, c0, y), z)))
OPD__FLOATS(TERNARY_LOOP, addcdiv, x + c0 * y / z)
/* ATen's lerp: from the nearer end, so that weight 1 gives end exactly */
#define LERP(s, e, wt) (fabs(wt) < (T)0.5 ? s + wt * (e - s) : e - (e - s) * (1 - wt))
OPD__FLOATS(OPD__BINARY_LOOP, lerp_scalar, LERP(x, y, c0))
OPD__FLOATS(TERNARY_LOOP, lerp_tensor, LERP(x, y, z))
/* a NaN on either side gives NaN */
OPD__FLOATS(OPD__UNARY_LOOP, clamp_min, x != x ? x : c0 != c0 ? c0 : x < c0 ? c0 : x)
OPD__INTS(OPD__UNARY_LOOP, clamp_min, x < c0 ? c0 : x)
OPD__FLOATS(OPD__UNARY_LOOP, clamp_max, x != x ? x : c0 != c0 ? c0 : x > c0 ? c0 : x)
OPD__INTS(OPD__UNARY_LOOP, clamp_max, x > c0 ? c0 : x)
/* ATen's clamp with tensor bounds: NaN when a bound is NaN, else min(max(x, lo), hi) */
#define CLAMP_FLOAT(x, lo, hi) \
  (lo != lo || hi != hi ? (T)NAN : (x < lo ? lo : x) > hi ? hi : (x < lo ? lo : x))
OPD__FLOATS(TERNARY_LOOP, clamp_tensor, CLAMP_FLOAT(x, y, z))
OPD__INTS(TERNARY_LOOP, clamp_tensor, (x < y ? y : x) > z ? z : (x < y ? y : x))
/* one bound: maximum / minimum, NaN propagating */
OPD__FLOATS(OPD__BINARY_LOOP, clamp_lo, x != x ? x : y != y ? y : x < y ? y : x)
OPD__INTS(OPD__BINARY_LOOP, clamp_lo, x < y ? y : x)
OPD__BOOLS(OPD__BINARY_LOOP, clamp_lo, x | y)
OPD__FLOATS(OPD__BINARY_LOOP, clamp_hi, x != x ? x : y != y ? y : y < x ? y : x)
OPD__INTS(OPD__BINARY_LOOP, clamp_hi, y < x ? y : x)
OPD__BOOLS(OPD__BINARY_LOOP, clamp_hi, x &y)

static const opd__loop_fn addcmul_loops[OPD__NC] = {OPD__FLOATS(OPD__ENTRY, addcmul)
                                                        OPD__INTS(OPD__ENTRY, addcmul)};
#define FLOAT_TABLE(name) \
  static const opd__loop_fn name##_loops[OPD__NC] = {OPD__FLOATS(OPD__ENTRY, name)};
#define NUMBER_TABLE(name)                                                         \
  static const opd__loop_fn name##_loops[OPD__NC] = {OPD__FLOATS(OPD__ENTRY, name) \
                                                         OPD__INTS(OPD__ENTRY, name)};
FLOAT_TABLE(addcdiv)
FLOAT_TABLE(lerp_scalar)
FLOAT_TABLE(lerp_tensor)
NUMBER_TABLE(clamp_min)
NUMBER_TABLE(clamp_max)
NUMBER_TABLE(clamp_tensor)
#define ALL_TABLE(name)                               \
  static const opd__loop_fn name##_loops[OPD__NC] = { \
      OPD__FLOATS(OPD__ENTRY, name) OPD__INTS(OPD__ENTRY, name) OPD__BOOLS(OPD__ENTRY, name)};
ALL_TABLE(clamp_lo)
ALL_TABLE(clamp_hi)

/* A loop reading n inputs in compute dtype c and writing c. */
static opd__loop same_loop(opd__loop_fn fn, int n, opd_dtype c, opd__loop_ctx *ctx) {
  return (opd__loop){.fn = fn, .ninputs = n, .in_dtype = {c, c, c}, .out_dtype = c, .ctx = ctx};
}

static int addc(opd_tensor *self, opd_tensor *t1, opd_tensor *t2, opd_scalar value, bool div,
                opd_tensor *into, opd_tensor **out) {
  opd_out_spec spec;
  int rc = opd__addc_meta(self, t1, t2, value, div, &spec);
  opd__loop_fn fn;
  if (rc || (rc = opd__loop_select(div ? addcdiv_loops : addcmul_loops, spec.dtype,
                                   div ? "addcdiv_cpu_out" : "addcmul_cpu_out", &fn)))
    return rc;
  opd_dtype c = opd__compute_dtype(spec.dtype);
  opd__loop_ctx lctx = {0};
  if ((rc = opd__scalar_to(value, c, &lctx.c[0]))) return rc;
  opd__loop loop = same_loop(fn, 3, c, &lctx);
  return opd__pointwise_run(&spec, (opd_tensor *[]){self, t1, t2}, &loop, into, out);
}

OPD__DEFINE_ADDC_KERNELS(cpu, addc, addcmul, false)
OPD__DEFINE_ADDC_KERNELS(cpu, addc, addcdiv, true)

static int lerp(opd_tensor *self, opd_tensor *end, opd_tensor *weight, opd_scalar weight_value,
                opd_tensor *into, opd_tensor **out) {
  opd_out_spec spec;
  int rc = opd__lerp_meta(self, end, weight, &spec);
  opd__loop_fn fn;
  if (rc || (rc = opd__loop_select(weight ? lerp_tensor_loops : lerp_scalar_loops, spec.dtype,
                                   weight ? "lerp_kernel_tensor" : "lerp_kernel_scalar", &fn)))
    return rc;
  opd_dtype c = opd__compute_dtype(spec.dtype);
  opd__loop_ctx lctx = {.c = {opd__scalar_cast(weight_value, c)}};
  opd__loop loop = same_loop(fn, weight ? 3 : 2, c, &lctx);
  return opd__pointwise_run(&spec, (opd_tensor *[]){self, end, weight}, &loop, into, out);
}

OPD__DEFINE_LERP_KERNELS(cpu, lerp)

/* clamp_min / clamp_max (max: true) with a Scalar bound, converted to the result dtype. */
static int clamp_bound(opd_tensor *self, opd_scalar bound, bool max, opd_tensor *into,
                       opd_tensor **out) {
  opd_out_spec spec;
  int rc = opd__clamp_scalar_meta(self, bound, &spec);
  opd__loop_fn fn;
  if (rc || (rc = opd__loop_select(max ? clamp_max_loops : clamp_min_loops, spec.dtype,
                                   max ? "clamp_max_scalar_cpu" : "clamp_min_scalar_cpu", &fn)))
    return rc;
  opd_dtype c = opd__compute_dtype(spec.dtype);
  opd__loop_ctx lctx = {.c = {opd__scalar_cast(bound, c)}};
  opd__loop loop = same_loop(fn, 1, c, &lctx);
  return opd__pointwise_run(&spec, &self, &loop, into, out);
}

OPD__DEFINE_CLAMP_BOUND_KERNELS(cpu, clamp_bound, clamp_min, false)
OPD__DEFINE_CLAMP_BOUND_KERNELS(cpu, clamp_bound, clamp_max, true)

int opd__cpu_clamp_tensor(const opd_kernel_ctx *ctx, opd_tensor *self, opd_tensor *min,
                          opd_tensor *max, opd_tensor **out) {
  (void)ctx;
  opd_out_spec spec;
  int rc = opd__clamp_tensor_meta(self, min, max, &spec);
  if (rc) return rc;
  const opd__loop_fn *table = min && max ? clamp_tensor_loops
                              : min      ? clamp_lo_loops
                                         : clamp_hi_loops;
  opd__loop_fn fn;
  if ((rc = opd__loop_select(table, spec.dtype, "clamp_cpu", &fn))) return rc;
  opd_tensor *in[3] = {self, min ? min : max, max};
  opd__loop loop = same_loop(fn, min && max ? 3 : 2, opd__compute_dtype(spec.dtype), NULL);
  return opd__pointwise_run(&spec, in, &loop, NULL, out);
}

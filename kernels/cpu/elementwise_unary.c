/* elementwise_unary.c: CPU kernels of the unary elementwise operators: neg, abs, relu, the
 * floating functions exp, log, sqrt, rsqrt, sigmoid, silu, tanh, sin, cos, gelu, and
 * pow.Tensor_Scalar. Shapes and dtypes come from kernels/meta/elementwise_meta.c. */
#include <tgmath.h>

#include "meta/elementwise_meta.h"
#include "src/loops.h"

static const opd_device cpu_device = {OPD_DEVICE_CPU, -1};

/* e^x and tanh: the vectorizable float32 versions, libm's for float64. */
#define EXP(x)  _Generic((x), float : opd__expf, double : exp)(x)
#define TANH(x) _Generic((x), float : opd__tanhf, double : tanh)(x)

OPD__FLOATS(OPD__UNARY_LOOP, neg, -x)
OPD__INTS(OPD__UNARY_LOOP, neg, OPD__WRAP_NEG(T, x))
OPD__FLOATS(OPD__UNARY_LOOP, abs, fabs(x))
OPD__SINTS(OPD__UNARY_LOOP, abs, x < 0 ? OPD__WRAP_NEG(T, x) : x)
OPD__UINTS(OPD__UNARY_LOOP, abs, x)
/* relu is clamp_min(self, 0): NaN stays NaN */
OPD__FLOATS(OPD__UNARY_LOOP, relu, x < 0 ? 0 : x)
OPD__SINTS(OPD__UNARY_LOOP, relu, x < 0 ? 0 : x)
OPD__UINTS(OPD__UNARY_LOOP, relu, x)
OPD__UNARY_WIDE_LOOP(F32, exp, EXP(x))
OPD__UNARY_LOOP(F64, exp, EXP(x))
OPD__FLOATS(OPD__UNARY_LOOP, log, log(x))
OPD__FLOATS(OPD__UNARY_LOOP, sqrt, sqrt(x))
OPD__FLOATS(OPD__UNARY_LOOP, rsqrt, 1 / sqrt(x))
OPD__UNARY_WIDE_LOOP(F32, sigmoid, 1 / (1 + EXP(-x)))
OPD__UNARY_LOOP(F64, sigmoid, 1 / (1 + EXP(-x)))
/* silu, x * sigmoid(x) written as ATen's CPU kernel writes it */
OPD__UNARY_WIDE_LOOP(F32, silu, x / (1 + EXP(-x)))
OPD__UNARY_LOOP(F64, silu, x / (1 + EXP(-x)))
OPD__UNARY_WIDE_LOOP(F32, tanh, TANH(x))
OPD__UNARY_LOOP(F64, tanh, TANH(x))
OPD__FLOATS(OPD__UNARY_LOOP, sin, sin(x))
OPD__FLOATS(OPD__UNARY_LOOP, cos, cos(x))
/* 0.5 x (1 + erf(x / sqrt 2)), and the tanh approximation with sqrt(2 / pi) */
OPD__UNARY_WIDE_LOOP(F32, gelu, opd__gelu_f32(x))
OPD__UNARY_LOOP(F64, gelu, 0.5 * x * (1 + erf(x * 0.70710678118654752440)))
#define GELU_TANH(x) \
  ((T)0.5 * x * (1 + TANH((T)0.79788456080286535588 * (x + (T)0.044715 * (x * x * x)))))
OPD__UNARY_WIDE_LOOP(F32, gelu_tanh, GELU_TANH(x))
OPD__UNARY_LOOP(F64, gelu_tanh, GELU_TANH(x))

static const opd__loop_fn neg_loops[OPD__NC] = {OPD__FLOATS(OPD__ENTRY, neg)
                                                    OPD__INTS(OPD__ENTRY, neg)};
static const opd__loop_fn abs_loops[OPD__NC] = {
    OPD__FLOATS(OPD__ENTRY, abs) OPD__SINTS(OPD__ENTRY, abs) OPD__UINTS(OPD__ENTRY, abs)};
static const opd__loop_fn relu_loops[OPD__NC] = {
    OPD__FLOATS(OPD__ENTRY, relu) OPD__SINTS(OPD__ENTRY, relu) OPD__UINTS(OPD__ENTRY, relu)};
#define FLOAT_TABLE(name) \
  static const opd__loop_fn name##_loops[OPD__NC] = {OPD__FLOATS(OPD__ENTRY, name)};
FLOAT_TABLE(exp)
FLOAT_TABLE(log)
FLOAT_TABLE(sqrt)
FLOAT_TABLE(rsqrt)
FLOAT_TABLE(sigmoid)
FLOAT_TABLE(silu)
FLOAT_TABLE(tanh)
FLOAT_TABLE(sin)
FLOAT_TABLE(cos)
FLOAT_TABLE(gelu)
FLOAT_TABLE(gelu_tanh)

/* Allocates spec's output and runs fn over it and self (read in the output's compute dtype). */
static int run_unary(const opd_out_spec *spec, opd_tensor *self, opd__loop_fn fn,
                     opd__loop_ctx *ctx, opd_tensor **out) {
  opd_tensor *r = NULL;
  int rc = opd__alloc_elementwise_output(spec, &self, 1, cpu_device, &r);
  if (rc) return rc;
  opd_dtype c = opd__compute_dtype(spec->dtype);
  opd__loop loop = {.fn = fn, .ninputs = 1, .in_dtype = {c}, .out_dtype = c, .ctx = ctx};
  opd__loop_run(r, &self, &loop);
  *out = r;
  return 0;
}

static int unary(opd_tensor *self, opd__unary_kind kind, const opd__loop_fn *table,
                 const char *name, opd_tensor **out) {
  opd_out_spec spec;
  int rc = opd__unary_meta(self, kind, &spec);
  opd__loop_fn fn;
  if (rc || (rc = opd__loop_select(table, spec.dtype, name, &fn))) return rc;
  return run_unary(&spec, self, fn, NULL, out);
}

int opd__cpu_neg(const opd_kernel_ctx *ctx, opd_tensor *self, opd_tensor **out) {
  (void)ctx;
  return unary(self, OPD__UNARY_NEG, neg_loops, "neg_cpu", out);
}

int opd__cpu_abs(const opd_kernel_ctx *ctx, opd_tensor *self, opd_tensor **out) {
  (void)ctx;
  return unary(self, OPD__UNARY_SAME, abs_loops, "abs_cpu", out);
}

int opd__cpu_relu(const opd_kernel_ctx *ctx, opd_tensor *self, opd_tensor **out) {
  (void)ctx;
  return unary(self, OPD__UNARY_RELU, relu_loops, "clamp_min_scalar_cpu", out);
}

int opd__cpu_exp(const opd_kernel_ctx *ctx, opd_tensor *self, opd_tensor **out) {
  (void)ctx;
  return unary(self, OPD__UNARY_FLOAT, exp_loops, "exp_vml_cpu", out);
}

int opd__cpu_log(const opd_kernel_ctx *ctx, opd_tensor *self, opd_tensor **out) {
  (void)ctx;
  return unary(self, OPD__UNARY_FLOAT, log_loops, "log_vml_cpu", out);
}

int opd__cpu_sqrt(const opd_kernel_ctx *ctx, opd_tensor *self, opd_tensor **out) {
  (void)ctx;
  return unary(self, OPD__UNARY_FLOAT, sqrt_loops, "sqrt_vml_cpu", out);
}

int opd__cpu_rsqrt(const opd_kernel_ctx *ctx, opd_tensor *self, opd_tensor **out) {
  (void)ctx;
  return unary(self, OPD__UNARY_FLOAT, rsqrt_loops, "rsqrt_cpu", out);
}

int opd__cpu_sigmoid(const opd_kernel_ctx *ctx, opd_tensor *self, opd_tensor **out) {
  (void)ctx;
  return unary(self, OPD__UNARY_FLOAT, sigmoid_loops, "sigmoid_cpu", out);
}

/* silu keeps its dtype: integers and bool are not implemented, as in ATen */
int opd__cpu_silu(const opd_kernel_ctx *ctx, opd_tensor *self, opd_tensor **out) {
  (void)ctx;
  return unary(self, OPD__UNARY_SAME, silu_loops, "silu_cpu", out);
}

int opd__cpu_tanh(const opd_kernel_ctx *ctx, opd_tensor *self, opd_tensor **out) {
  (void)ctx;
  return unary(self, OPD__UNARY_FLOAT, tanh_loops, "tanh_vml_cpu", out);
}

int opd__cpu_sin(const opd_kernel_ctx *ctx, opd_tensor *self, opd_tensor **out) {
  (void)ctx;
  return unary(self, OPD__UNARY_FLOAT, sin_loops, "sin_vml_cpu", out);
}

int opd__cpu_cos(const opd_kernel_ctx *ctx, opd_tensor *self, opd_tensor **out) {
  (void)ctx;
  return unary(self, OPD__UNARY_FLOAT, cos_loops, "cos_vml_cpu", out);
}

int opd__cpu_gelu(const opd_kernel_ctx *ctx, opd_tensor *self, const char *approximate,
                  opd_tensor **out) {
  (void)ctx;
  opd_out_spec spec;
  bool tanh_approx;
  int rc = opd__gelu_meta(self, approximate, &tanh_approx, &spec);
  opd__loop_fn fn;
  if (rc || (rc = opd__loop_select(tanh_approx ? gelu_tanh_loops : gelu_loops, spec.dtype,
                                   "GeluKernelImpl", &fn)))
    return rc;
  return run_unary(&spec, self, fn, NULL, out);
}

/* ---- pow(Tensor, Scalar) ---- */

/* a^b by squaring, in wraparound arithmetic (b >= 0). */
static inline uint64_t powi(uint64_t a, uint64_t b) {
  uint64_t r = 1;
  for (; b; b >>= 1, a *= a)
    if (b & 1) r *= a;
  return r;
}

/* exponent 0 gives 1 everywhere, NaN included */
OPD__FLOATS(OPD__UNARY_LOOP, pow_zero, 1)
OPD__INTS(OPD__UNARY_LOOP, pow_zero, 1)
OPD__BOOLS(OPD__UNARY_LOOP, pow_zero, 1)
/* the exponents ATen computes without pow(), then pow() in double (std::pow(float, double)) */
OPD__FLOATS(OPD__UNARY_LOOP, pow_half, sqrt(x))
OPD__FLOATS(OPD__UNARY_LOOP, pow_mhalf, 1 / sqrt(x))
OPD__FLOATS(OPD__UNARY_LOOP, pow_m1, 1 / x)
OPD__FLOATS(OPD__UNARY_LOOP, pow_2, x *x)
OPD__FLOATS(OPD__UNARY_LOOP, pow_3, x *x *x)
OPD__FLOATS(OPD__UNARY_LOOP, pow_m2, 1 / (x * x))
OPD__FLOATS(OPD__UNARY_LOOP, pow_any, pow((double)x, ctx->c[0].f64))
OPD__INTS(OPD__UNARY_LOOP, pow_int, powi((uint64_t)x, (uint64_t)c0))

static const opd__loop_fn pow_zero_loops[OPD__NC] = {OPD__FLOATS(OPD__ENTRY, pow_zero) OPD__INTS(
    OPD__ENTRY, pow_zero) OPD__BOOLS(OPD__ENTRY, pow_zero)};
FLOAT_TABLE(pow_half)
FLOAT_TABLE(pow_mhalf)
FLOAT_TABLE(pow_m1)
FLOAT_TABLE(pow_2)
FLOAT_TABLE(pow_3)
FLOAT_TABLE(pow_m2)
static const opd__loop_fn pow_loops[OPD__NC] = {OPD__FLOATS(OPD__ENTRY, pow_any)
                                                    OPD__INTS(OPD__ENTRY, pow_int)};

int opd__cpu_pow_tensor_scalar(const opd_kernel_ctx *ctx, opd_tensor *self, opd_scalar exponent,
                               opd_tensor **out) {
  (void)ctx;
  opd_out_spec spec;
  int rc = opd__pow_meta(self, exponent, &spec);
  if (rc) return rc;
  static const opd__loop_fn *const tables[] = {
      [OPD__POW_ZERO] = pow_zero_loops,   [OPD__POW_HALF] = pow_half_loops,
      [OPD__POW_MHALF] = pow_mhalf_loops, [OPD__POW_M1] = pow_m1_loops,
      [OPD__POW_2] = pow_2_loops,         [OPD__POW_3] = pow_3_loops,
      [OPD__POW_M2] = pow_m2_loops,       [OPD__POW_FLOAT] = pow_loops,
      [OPD__POW_INT] = pow_loops};
  opd__pow_kind kind = opd__pow_kind_of(exponent, spec.dtype);
  if (kind == OPD__POW_COPY) {
    opd__loop copy = {.fn = NULL, .ninputs = 1};
    opd_tensor *r = NULL;
    if ((rc = opd__alloc_elementwise_output(&spec, &self, 1, cpu_device, &r))) return rc;
    opd__loop_run(r, &self, &copy);
    *out = r;
    return 0;
  }
  opd__loop_ctx lctx = {0};
  if (opd_dtype_is_floating(spec.dtype))
    lctx.c[0].f64 = opd__scalar_to_double(exponent);
  else if (kind == OPD__POW_INT && (rc = opd__scalar_to(exponent, spec.dtype, &lctx.c[0])))
    return rc;
  opd__loop_fn fn;
  if ((rc = opd__loop_select(tables[kind], spec.dtype, "pow", &fn))) return rc;
  return run_unary(&spec, self, fn, &lctx, out);
}

/* norm_activation.c: CPU kernels of the activations (hardtanh, leaky_relu, elu, mish,
 * softplus, hardswish, hardsigmoid, threshold, glu) and of the activations' backward
 * operators, all elementwise loops of the engine in src/loops.h. Shapes and dtypes come
 * from kernels/meta/norm_meta.c.
 *
 * [Note: Activation loops]
 * An activation's loop reads one input (x) and a backward operator's two (g, the incoming
 * gradient, and x, the forward's input or result), in the compute type T of the result's
 * dtype (a backward operator's operands are promoted, as TensorIterator's binary operations
 * promote them). Their Scalar parameters, up to four, are converted once to the compute type
 * (k0..k3) and carried in the loop's context. The formulas are ATen's CPU kernels', with its
 * handling of the boundaries (which side of a threshold an equal value falls on) and of NaN.
 */
#include <tgmath.h>

#include "meta/norm_meta.h"
#include "src/loops.h"

static const opd_device cpu_device = {OPD_DEVICE_CPU, -1};

typedef struct act_ctx {
  opd__loop_ctx base; /* first: the loop receives &base */
  opd__value k[4];
} act_ctx;

#define ACT_PROLOGUE(tag)                                                         \
  typedef OPD__T_##tag T;                                                         \
  const opd__value *K = ((const act_ctx *)(const void *)ctx)->k;                  \
  const T k0 = K[0].OPD__M_##tag, k1 = K[1].OPD__M_##tag, k2 = K[2].OPD__M_##tag, \
          k3 = K[3].OPD__M_##tag;                                                 \
  (void)k0;                                                                       \
  (void)k1;                                                                       \
  (void)k2;                                                                       \
  (void)k3;                                                                       \
  T *out = (T *)out_

/* name_tag: out[i] = expr of x = in[0][i] */
#define ACT_LOOP(tag, name, expr)                                                        \
  static void name##_##tag(char *out_, char *const *in, int64_t n, opd__loop_ctx *ctx) { \
    ACT_PROLOGUE(tag);                                                                   \
    const T *a = (const T *)in[0];                                                       \
    for (int64_t i = 0; i < n; i++) {                                                    \
      const T x = a[i];                                                                  \
      out[i] = (T)(expr);                                                                \
    }                                                                                    \
  }
/* name_tag: out[i] = expr of g = in[0][i], x = in[1][i] */
#define ACT_BACKWARD_LOOP(tag, name, expr)                                               \
  static void name##_##tag(char *out_, char *const *in, int64_t n, opd__loop_ctx *ctx) { \
    ACT_PROLOGUE(tag);                                                                   \
    const T *a = (const T *)in[0], *b = (const T *)in[1];                                \
    for (int64_t i = 0; i < n; i++) {                                                    \
      const T g = a[i], x = b[i];                                                        \
      out[i] = (T)(expr);                                                                \
    }                                                                                    \
  }

#define FLOAT_TABLE(name) \
  static const opd__loop_fn name##_loops[OPD__NC] = {OPD__FLOATS(OPD__ENTRY, name)};
#define NUMBER_TABLE(name)                                                         \
  static const opd__loop_fn name##_loops[OPD__NC] = {OPD__FLOATS(OPD__ENTRY, name) \
                                                         OPD__INTS(OPD__ENTRY, name)};

/* ---- forward ---- */

/* hardtanh is clamp(self, min_val, max_val): NaN stays NaN, min_val > max_val gives max_val */
OPD__FLOATS(ACT_LOOP, hardtanh, x != x ? x : fmin(fmax(x, k0), k1))
OPD__INTS(ACT_LOOP, hardtanh, x<k0 ? (k0 > k1 ? k1 : k0) : x> k1 ? k1 : x)
/* threshold: x <= threshold ? value : x */
OPD__FLOATS(ACT_LOOP, threshold, x <= k0 ? k1 : x)
OPD__INTS(ACT_LOOP, threshold, x <= k0 ? k1 : x)
OPD__FLOATS(ACT_LOOP, leaky_relu, x > 0 ? x : x * k0)
/* elu: k0 = alpha * scale, k1 = scale, k2 = input_scale */
OPD__FLOATS(ACT_LOOP, elu, x <= 0 ? expm1(x * k2) * k0 : x * k1)
OPD__FLOATS(ACT_LOOP, mish, x *tanh(log1p(exp(x))))
/* softplus: k0 = beta, k1 = threshold */
OPD__FLOATS(ACT_LOOP, softplus, x *k0 > k1 ? x : log1p(exp(x * k0)) / k0)
/* std::min and std::max, which keep a NaN first operand */
#define MAX_NAN(a, b) ((a) < (b) ? (b) : (a))
#define MIN_NAN(a, b) ((b) < (a) ? (b) : (a))
OPD__FLOATS(ACT_LOOP, hardswish, x *MIN_NAN(MAX_NAN(x + 3, (T)0), (T)6) / 6)
OPD__FLOATS(ACT_LOOP, hardsigmoid, MIN_NAN(MAX_NAN(x + 3, (T)0), (T)6) / 6)
/* glu: the first half times the sigmoid of the second (g: the first, x: the second) */
OPD__FLOATS(ACT_BACKWARD_LOOP, glu, g *(1 / (1 + exp(-x))))

/* prelu: x > 0 ? x : weight * x (g: x, x: the weight broadcast over the channels) */
OPD__FLOATS(ACT_BACKWARD_LOOP, prelu, g > 0 ? g : x * g)
/* log_sigmoid_forward's output and buffer: min(x, 0) - log1p(e^-|x|), and e^-|x| */
OPD__FLOATS(ACT_LOOP, log_sigmoid, (x < 0 ? x : 0) - log1p(exp(-fabs(x))))
OPD__FLOATS(ACT_LOOP, log_sigmoid_buffer, exp(-fabs(x)))

NUMBER_TABLE(hardtanh)
NUMBER_TABLE(threshold)
FLOAT_TABLE(log_sigmoid)
FLOAT_TABLE(prelu)
FLOAT_TABLE(log_sigmoid_buffer)
FLOAT_TABLE(leaky_relu)
FLOAT_TABLE(elu)
FLOAT_TABLE(mish)
FLOAT_TABLE(softplus)
FLOAT_TABLE(hardswish)
FLOAT_TABLE(hardsigmoid)
FLOAT_TABLE(glu)

/* ---- backward ---- */

OPD__FLOATS(ACT_BACKWARD_LOOP, threshold_backward, x <= k0 ? 0 : g)
OPD__INTS(ACT_BACKWARD_LOOP, threshold_backward, x <= k0 ? 0 : g)
/* gelu: x's cdf plus x times its density; the tanh approximation's derivative */
#define GELU_BETA  0.39894228040143267794 /* 1 / sqrt(2 pi) */
#define GELU_TBETA 0.79788456080286535588 /* sqrt(2 / pi) */
#define GELU_KAPPA 0.044715
OPD__FLOATS(ACT_BACKWARD_LOOP, gelu_backward,
            g *((T)0.5 * (1 + erf(x * (T)0.70710678118654752440)) +
                x * exp((T)-0.5 * x * x) * (T)GELU_BETA))
#define GELU_TANH_BACKWARD(g, x, t) \
  ((g) * ((T)0.5 * (1 + (t)) +      \
          (T)0.5 * (x) * (1 - (t) * (t)) * (T)GELU_TBETA * (1 + 3 * (T)GELU_KAPPA * (x) * (x))))
OPD__FLOATS(ACT_BACKWARD_LOOP, gelu_tanh_backward,
            GELU_TANH_BACKWARD(g, x, tanh((T)GELU_TBETA *(x + (T)GELU_KAPPA * x * x * x))))
OPD__FLOATS(ACT_BACKWARD_LOOP, silu_backward, g / (1 + exp(-x)) * (1 + x * (1 - 1 / (1 + exp(-x)))))
/* sigmoid_backward and tanh_backward take the forward's result */
OPD__FLOATS(ACT_BACKWARD_LOOP, sigmoid_backward, g *(1 - x) * x)
OPD__FLOATS(ACT_BACKWARD_LOOP, tanh_backward, g *(1 - x * x))
OPD__FLOATS(ACT_BACKWARD_LOOP, hardswish_backward, x < -3 ? 0 : x <= 3 ? g * (x / 3 + (T)0.5) : g)
OPD__FLOATS(ACT_BACKWARD_LOOP, hardsigmoid_backward, x > -3 && x < 3 ? g * (T)(1.0f / 6.0f) : 0)
OPD__FLOATS(ACT_BACKWARD_LOOP, hardtanh_backward, x <= k0 || x >= k1 ? 0 : g)
OPD__FLOATS(ACT_BACKWARD_LOOP, leaky_relu_backward, x > 0 ? g : g * k0)
/* elu_backward: k0 = alpha * scale, k1 = scale, k2 = input_scale; x the input, or (elu_result)
 * the forward's result */
OPD__FLOATS(ACT_BACKWARD_LOOP, elu_backward, x <= 0 ? g * k2 * k0 * exp(x * k2) : g * k1)
OPD__FLOATS(ACT_BACKWARD_LOOP, elu_result_backward, x <= 0 ? g * k2 * (x + k0) : g * k1)
OPD__FLOATS(ACT_BACKWARD_LOOP, softplus_backward,
            x *k0 > k1 ? g : g * exp(x * k0) / (exp(x * k0) + 1))
OPD__FLOATS(ACT_BACKWARD_LOOP, mish_backward,
            g *(tanh(log1p(exp(x))) +
                x / (1 + exp(-x)) * (1 - tanh(log1p(exp(x))) * tanh(log1p(exp(x))))))

/* log_sigmoid_backward: (x < 0 ? 1 - z / (1 + z) : z / (1 + z)) * g with z = buffer */
#define LOG_SIGMOID_BACKWARD_LOOP(tag, name)                                             \
  static void name##_##tag(char *out_, char *const *in, int64_t n, opd__loop_ctx *ctx) { \
    (void)ctx;                                                                           \
    typedef OPD__T_##tag T;                                                              \
    T *out = (T *)out_;                                                                  \
    const T *g = (const T *)in[0], *x = (const T *)in[1], *z = (const T *)in[2];         \
    for (int64_t i = 0; i < n; i++) {                                                    \
      const T q = z[i] / (1 + z[i]);                                                     \
      out[i] = (x[i] < 0 ? 1 - q : q) * g[i];                                            \
    }                                                                                    \
  }
OPD__FLOATS(LOG_SIGMOID_BACKWARD_LOOP, log_sigmoid_backward)
/* glu_backward's halves, as PyTorch's CPU kernel computes them (s: the sigmoid of the
 * second half b, rounded to the dtype): the first half's gradient s * g and the second's
 * (1 - s) * s * a * g */
OPD__FLOATS(ACT_BACKWARD_LOOP, glu_backward_first, (T)(1 / (1 + exp(-x))) * g)
#define GLU_BACKWARD_SECOND_LOOP(tag, name)                                              \
  static void name##_##tag(char *out_, char *const *in, int64_t n, opd__loop_ctx *ctx) { \
    (void)ctx;                                                                           \
    typedef OPD__T_##tag T;                                                              \
    T *out = (T *)out_;                                                                  \
    const T *a = (const T *)in[0], *b = (const T *)in[1], *g = (const T *)in[2];         \
    for (int64_t i = 0; i < n; i++) {                                                    \
      const T s = (T)(1 / (1 + exp(-b[i])));                                             \
      out[i] = (1 - s) * s * a[i] * g[i];                                                \
    }                                                                                    \
  }
OPD__FLOATS(GLU_BACKWARD_SECOND_LOOP, glu_backward_second)

NUMBER_TABLE(threshold_backward)
FLOAT_TABLE(log_sigmoid_backward)
FLOAT_TABLE(glu_backward_first)
FLOAT_TABLE(glu_backward_second)
FLOAT_TABLE(gelu_backward)
FLOAT_TABLE(gelu_tanh_backward)
FLOAT_TABLE(silu_backward)
FLOAT_TABLE(sigmoid_backward)
FLOAT_TABLE(tanh_backward)
FLOAT_TABLE(hardswish_backward)
FLOAT_TABLE(hardsigmoid_backward)
FLOAT_TABLE(hardtanh_backward)
FLOAT_TABLE(leaky_relu_backward)
FLOAT_TABLE(elu_backward)
FLOAT_TABLE(elu_result_backward)
FLOAT_TABLE(softplus_backward)
FLOAT_TABLE(mish_backward)

/* ---- running the loops ---- */

/* The loop of table for spec's dtype over `in` into a new output of spec. */
static int run(const opd_out_spec *spec, opd_tensor *const *in, int n, const opd__loop_fn *table,
               const char *name, act_ctx *c, opd_tensor **out) {
  opd__loop_fn fn;
  int rc = opd__loop_select(table, spec->dtype, name, &fn);
  opd_tensor *r = NULL;
  if (rc || (rc = opd__alloc_elementwise_output(spec, in, n, cpu_device, &r))) return rc;
  opd_dtype cd = opd__compute_dtype(spec->dtype);
  act_ctx none = {0};
  opd__loop loop = {.fn = fn,
                    .ninputs = n,
                    .in_dtype = {cd, cd},
                    .out_dtype = cd,
                    .ctx = c ? &c->base : &none.base};
  opd__loop_run(r, in, &loop);
  *out = r;
  return 0;
}

/* Scalars converted to dt's compute type (c10's checked conversion) into c->k. */
static int constants(act_ctx *c, opd_dtype dt, int n, const opd_scalar *s) {
  for (int i = 0; i < n; i++) {
    int rc = opd__scalar_to(s[i], dt, &c->k[i]);
    if (rc) return rc;
  }
  return 0;
}

/* A double as dt's floating compute type into c->k[i]. */
static void constant_double(act_ctx *c, opd_dtype dt, int i, double v) {
  if (opd__compute_dtype(dt) == OPD_FLOAT64)
    c->k[i].f64 = v;
  else
    c->k[i].f32 = (float)v;
}

static int unary(opd_tensor *self, const opd__loop_fn *table, opd__act act, int n,
                 const opd_scalar *s, opd_tensor **out) {
  opd_out_spec spec;
  act_ctx c = {0};
  int rc = opd__activation_meta(self, act, n, s, &spec);
  if (!rc) rc = constants(&c, spec.dtype, n, s);
  return rc ? rc : run(&spec, &self, 1, table, opd__act_infos[act].name, &c, out);
}

static int binary(opd_tensor *grad, opd_tensor *self, const opd__loop_fn *table, opd__act act,
                  int n, const opd_scalar *s, opd_tensor **out) {
  opd_out_spec spec;
  act_ctx c = {0};
  int rc = opd__activation_backward_meta(grad, self, act, n, s, &spec);
  if (!rc) rc = constants(&c, spec.dtype, n, s);
  return rc ? rc
            : run(&spec, (opd_tensor *[]){grad, self}, 2, table, opd__act_infos[act].name, &c, out);
}

int opd__cpu_hardtanh(const opd_kernel_ctx *ctx, opd_tensor *self, opd_scalar min_val,
                      opd_scalar max_val, opd_tensor **out) {
  (void)ctx;
  return unary(self, hardtanh_loops, OPD__ACT_HARDTANH, 2, (opd_scalar[]){min_val, max_val}, out);
}

int opd__cpu_threshold(const opd_kernel_ctx *ctx, opd_tensor *self, opd_scalar threshold,
                       opd_scalar value, opd_tensor **out) {
  (void)ctx;
  return unary(self, threshold_loops, OPD__ACT_THRESHOLD, 2, (opd_scalar[]){threshold, value}, out);
}

int opd__cpu_leaky_relu(const opd_kernel_ctx *ctx, opd_tensor *self, opd_scalar negative_slope,
                        opd_tensor **out) {
  (void)ctx;
  return unary(self, leaky_relu_loops, OPD__ACT_LEAKY_RELU, 1, &negative_slope, out);
}

/* elu's and elu_backward's constants: alpha * scale, scale, input_scale */
static void elu_constants(act_ctx *c, opd_dtype dt, opd_scalar alpha, opd_scalar scale,
                          opd_scalar input_scale) {
  double a = opd__scalar_to_double(alpha), s = opd__scalar_to_double(scale);
  constant_double(c, dt, 0, a * s);
  constant_double(c, dt, 1, s);
  constant_double(c, dt, 2, opd__scalar_to_double(input_scale));
}

int opd__cpu_elu(const opd_kernel_ctx *ctx, opd_tensor *self, opd_scalar alpha, opd_scalar scale,
                 opd_scalar input_scale, opd_tensor **out) {
  (void)ctx;
  opd_out_spec spec;
  act_ctx c = {0};
  int rc =
      opd__activation_meta(self, OPD__ACT_ELU, 3, (opd_scalar[]){alpha, scale, input_scale}, &spec);
  if (rc) return rc;
  elu_constants(&c, spec.dtype, alpha, scale, input_scale);
  return run(&spec, &self, 1, elu_loops, opd__act_infos[OPD__ACT_ELU].name, &c, out);
}

int opd__cpu_mish(const opd_kernel_ctx *ctx, opd_tensor *self, opd_tensor **out) {
  (void)ctx;
  return unary(self, mish_loops, OPD__ACT_MISH, 0, NULL, out);
}

int opd__cpu_softplus(const opd_kernel_ctx *ctx, opd_tensor *self, opd_scalar beta,
                      opd_scalar threshold, opd_tensor **out) {
  (void)ctx;
  return unary(self, softplus_loops, OPD__ACT_SOFTPLUS, 2, (opd_scalar[]){beta, threshold}, out);
}

int opd__cpu_hardswish(const opd_kernel_ctx *ctx, opd_tensor *self, opd_tensor **out) {
  (void)ctx;
  return unary(self, hardswish_loops, OPD__ACT_HARDSWISH, 0, NULL, out);
}

int opd__cpu_hardsigmoid(const opd_kernel_ctx *ctx, opd_tensor *self, opd_tensor **out) {
  (void)ctx;
  return unary(self, hardsigmoid_loops, OPD__ACT_HARDSIGMOID, 0, NULL, out);
}

int opd__cpu_glu(const opd_kernel_ctx *ctx, opd_tensor *self, int64_t dim, opd_tensor **out) {
  (void)ctx;
  opd_out_spec spec;
  int64_t d;
  int rc = opd__glu_meta(self, dim, &d, &spec);
  if (rc) return rc;
  /* the two halves, views of self */
  opd_tensor *half[2] = {NULL, NULL};
  const int64_t *strides = opd_tensor_strides(self);
  for (int k = 0; k < 2 && !rc; k++)
    rc = opd_tensor_view_of(self, spec.sizes, strides, spec.ndim,
                            self->storage_offset + k * spec.sizes[d] * strides[d], &half[k]);
  if (!rc) rc = run(&spec, half, 2, glu_loops, "glu_cpu", NULL, out);
  for (int k = 0; k < 2; k++)
    if (half[k]) opd_tensor_release(half[k]);
  return rc;
}

int opd__cpu_threshold_backward(const opd_kernel_ctx *ctx, opd_tensor *grad_output,
                                opd_tensor *self, opd_scalar threshold, opd_tensor **out) {
  (void)ctx;
  return binary(grad_output, self, threshold_backward_loops, OPD__ACT_THRESHOLD_BACKWARD, 1,
                &threshold, out);
}

int opd__cpu_gelu_backward(const opd_kernel_ctx *ctx, opd_tensor *grad_output, opd_tensor *self,
                           const char *approximate, opd_tensor **out) {
  (void)ctx;
  bool tanh_approx;
  int rc = opd__gelu_approximate(approximate, &tanh_approx);
  return rc ? rc
            : binary(grad_output, self,
                     tanh_approx ? gelu_tanh_backward_loops : gelu_backward_loops,
                     OPD__ACT_GELU_BACKWARD, 0, NULL, out);
}

int opd__cpu_silu_backward(const opd_kernel_ctx *ctx, opd_tensor *grad_output, opd_tensor *self,
                           opd_tensor **out) {
  (void)ctx;
  return binary(grad_output, self, silu_backward_loops, OPD__ACT_SILU_BACKWARD, 0, NULL, out);
}

int opd__cpu_sigmoid_backward(const opd_kernel_ctx *ctx, opd_tensor *grad_output,
                              opd_tensor *output, opd_tensor **out) {
  (void)ctx;
  return binary(grad_output, output, sigmoid_backward_loops, OPD__ACT_SIGMOID_BACKWARD, 0, NULL,
                out);
}

int opd__cpu_tanh_backward(const opd_kernel_ctx *ctx, opd_tensor *grad_output, opd_tensor *output,
                           opd_tensor **out) {
  (void)ctx;
  return binary(grad_output, output, tanh_backward_loops, OPD__ACT_TANH_BACKWARD, 0, NULL, out);
}

int opd__cpu_hardswish_backward(const opd_kernel_ctx *ctx, opd_tensor *grad_output,
                                opd_tensor *self, opd_tensor **out) {
  (void)ctx;
  return binary(grad_output, self, hardswish_backward_loops, OPD__ACT_HARDSWISH_BACKWARD, 0, NULL,
                out);
}

int opd__cpu_hardsigmoid_backward(const opd_kernel_ctx *ctx, opd_tensor *grad_output,
                                  opd_tensor *self, opd_tensor **out) {
  (void)ctx;
  return binary(grad_output, self, hardsigmoid_backward_loops, OPD__ACT_HARDSIGMOID_BACKWARD, 0,
                NULL, out);
}

int opd__cpu_hardtanh_backward(const opd_kernel_ctx *ctx, opd_tensor *grad_output, opd_tensor *self,
                               opd_scalar min_val, opd_scalar max_val, opd_tensor **out) {
  (void)ctx;
  return binary(grad_output, self, hardtanh_backward_loops, OPD__ACT_HARDTANH_BACKWARD, 2,
                (opd_scalar[]){min_val, max_val}, out);
}

int opd__cpu_leaky_relu_backward(const opd_kernel_ctx *ctx, opd_tensor *grad_output,
                                 opd_tensor *self, opd_scalar negative_slope, bool self_is_result,
                                 opd_tensor **out) {
  (void)ctx;
  int rc = opd__leaky_relu_backward_check(negative_slope, self_is_result);
  return rc ? rc
            : binary(grad_output, self, leaky_relu_backward_loops, OPD__ACT_LEAKY_RELU_BACKWARD, 1,
                     &negative_slope, out);
}

int opd__cpu_elu_backward(const opd_kernel_ctx *ctx, opd_tensor *grad_output, opd_scalar alpha,
                          opd_scalar scale, opd_scalar input_scale, bool is_result,
                          opd_tensor *self_or_result, opd_tensor **out) {
  (void)ctx;
  opd_out_spec spec;
  act_ctx c = {0};
  int rc = opd__elu_backward_check(alpha, is_result);
  if (!rc)
    rc = opd__activation_backward_meta(grad_output, self_or_result, OPD__ACT_ELU_BACKWARD, 3,
                                       (opd_scalar[]){alpha, scale, input_scale}, &spec);
  if (rc) return rc;
  elu_constants(&c, spec.dtype, alpha, scale, input_scale);
  return run(&spec, (opd_tensor *[]){grad_output, self_or_result}, 2,
             is_result ? elu_result_backward_loops : elu_backward_loops,
             opd__act_infos[OPD__ACT_ELU_BACKWARD].name, &c, out);
}

int opd__cpu_softplus_backward(const opd_kernel_ctx *ctx, opd_tensor *grad_output, opd_tensor *self,
                               opd_scalar beta, opd_scalar threshold, opd_tensor **out) {
  (void)ctx;
  return binary(grad_output, self, softplus_backward_loops, OPD__ACT_SOFTPLUS_BACKWARD, 2,
                (opd_scalar[]){beta, threshold}, out);
}

int opd__cpu_mish_backward(const opd_kernel_ctx *ctx, opd_tensor *grad_output, opd_tensor *self,
                           opd_tensor **out) {
  (void)ctx;
  return binary(grad_output, self, mish_backward_loops, OPD__ACT_MISH_BACKWARD, 0, NULL, out);
}

/* Runs table's loop for spec over in (n operands) into r (already allocated). */
static int run_into(const opd_out_spec *spec, opd_tensor *const *in, int n,
                    const opd__loop_fn *table, const char *name, opd_tensor *r) {
  opd__loop_fn fn;
  int rc = opd__loop_select(table, spec->dtype, name, &fn);
  if (rc) return rc;
  opd_dtype cd = opd__compute_dtype(spec->dtype);
  act_ctx none = {0};
  opd__loop loop = {
      .fn = fn, .ninputs = n, .in_dtype = {cd, cd, cd}, .out_dtype = cd, .ctx = &none.base};
  opd__loop_run(r, in, &loop);
  return 0;
}

static int log_sigmoid_forward(opd_tensor *self, opd_tensor **res) {
  opd_out_spec spec;
  int rc = opd__activation_meta(self, OPD__ACT_LOG_SIGMOID, 0, NULL, &spec);
  for (int k = 0; k < 2 && !rc; k++)
    rc = opd__alloc_elementwise_output(&spec, &self, 1, cpu_device, &res[k]);
  const char *name = opd__act_infos[OPD__ACT_LOG_SIGMOID].name;
  if (!rc) rc = run_into(&spec, &self, 1, log_sigmoid_loops, name, res[0]);
  if (!rc) rc = run_into(&spec, &self, 1, log_sigmoid_buffer_loops, name, res[1]);
  return rc;
}

int opd__cpu_log_sigmoid_forward(const opd_kernel_ctx *ctx, opd_stack *stack) {
  (void)ctx;
  opd_tensor *res[2] = {NULL, NULL};
  opd_ivalue *args = opd_stack_last(stack, 1);
  int rc = args[0].tag == OPD_IV_TENSOR
               ? log_sigmoid_forward(args[0].u.t, res)
               : opd_error(OPD_EINVAL, "log_sigmoid_forward: expected a Tensor argument");
  opd_stack_drop(stack, 1);
  return opd__push_optional_results(stack, res, 2, rc);
}

int opd__cpu_log_sigmoid_backward(const opd_kernel_ctx *ctx, opd_tensor *grad_output,
                                  opd_tensor *self, opd_tensor *buffer, opd_tensor **out) {
  (void)ctx;
  opd_out_spec spec;
  opd_tensor *in[3] = {grad_output, self, buffer}, *r = NULL;
  int rc = opd__log_sigmoid_backward_meta(grad_output, self, buffer, &spec);
  if (!rc) rc = opd__alloc_elementwise_output(&spec, in, 3, cpu_device, &r);
  if (!rc)
    rc = run_into(&spec, in, 3, log_sigmoid_backward_loops,
                  opd__act_infos[OPD__ACT_LOG_SIGMOID_BACKWARD].name, r);
  if (rc && r) opd_tensor_release(r);
  if (!rc) *out = r;
  return rc;
}

int opd__cpu_prelu(const opd_kernel_ctx *ctx, opd_tensor *self, opd_tensor *weight,
                   opd_tensor **out) {
  (void)ctx;
  opd_out_spec spec;
  int64_t sizes[OPD_MAX_DIMS], strides[OPD_MAX_DIMS];
  int rc = opd__prelu_meta(self, weight, &spec, sizes, strides);
  if (rc) return rc;
  opd_tensor *w = NULL; /* the weight as a view broadcast to self's dims */
  if ((rc = opd_tensor_view_of(weight, sizes, strides, self->ndim, weight->storage_offset, &w)))
    return rc;
  rc = run(&spec, (opd_tensor *[]){self, w}, 2, prelu_loops, "prelu_cpu", NULL, out);
  opd_tensor_release(w);
  return rc;
}

int opd__cpu_glu_backward(const opd_kernel_ctx *ctx, opd_tensor *grad_output, opd_tensor *self,
                          int64_t dim, opd_tensor **out) {
  (void)ctx;
  opd_out_spec half, spec;
  int64_t d;
  int rc = opd__glu_backward_meta(grad_output, self, dim, &d, &half, &spec);
  opd_tensor *r = NULL;
  if (!rc) rc = opd__alloc_output(&spec, cpu_device, &r);
  /* the two halves of self and of the (contiguous) gradient, as views */
  opd_tensor *x[2] = {NULL, NULL}, *gi[2] = {NULL, NULL};
  for (int k = 0; k < 2 && !rc; k++) {
    rc = opd_tensor_view_of(self, half.sizes, opd_tensor_strides(self), half.ndim,
                            self->storage_offset + k * half.sizes[d] * opd_tensor_strides(self)[d],
                            &x[k]);
    if (!rc)
      rc = opd_tensor_view_of(r, half.sizes, opd_tensor_strides(r), half.ndim,
                              k * half.sizes[d] * opd_tensor_strides(r)[d], &gi[k]);
  }
  if (!rc)
    rc = run_into(&half, (opd_tensor *[]){grad_output, x[1]}, 2, glu_backward_first_loops,
                  "glu_backward_cpu", gi[0]);
  if (!rc)
    rc = run_into(&half, (opd_tensor *[]){x[0], x[1], grad_output}, 3, glu_backward_second_loops,
                  "glu_backward_cpu", gi[1]);
  for (int k = 0; k < 2; k++) {
    if (x[k]) opd_tensor_release(x[k]);
    if (gi[k]) opd_tensor_release(gi[k]);
  }
  if (rc && r) opd_tensor_release(r);
  if (!rc) *out = r;
  return rc;
}

/* elementwise_binary.c: CPU kernels of the binary elementwise operators: add, sub, mul, div
 * (true, trunc, floor), maximum, minimum, and the comparisons eq, gt, lt.Scalar. Shapes and
 * dtypes come from kernels/meta/elementwise_meta.c, iteration from the engine (loops.h). */
#include <tgmath.h>

#include "meta/elementwise_meta.h"
#include "src/loops.h"

static const opd_device cpu_device = {OPD_DEVICE_CPU, -1};

/* Allocates the output of spec on the CPU and runs loop over it and the inputs. */
static int run_new(const opd_out_spec *spec, opd_tensor *const *inputs, opd__loop *loop,
                   opd_tensor **out) {
  opd_tensor *r = NULL;
  int rc = opd__alloc_elementwise_output(spec, inputs, loop->ninputs, cpu_device, &r);
  if (rc) return rc;
  opd__loop_run(r, inputs, loop);
  if (loop->ctx && atomic_load_explicit(&loop->ctx->error, memory_order_relaxed)) {
    opd_tensor_release(r);
    return opd_error(OPD_EINVAL, "ZeroDivisionError");
  }
  *out = r;
  return 0;
}

/* A loop over two inputs of compute dtype `compute` writing `out_dtype`. */
static opd__loop binary_loop(opd__loop_fn fn, opd_dtype compute, opd_dtype out_dtype,
                             opd__loop_ctx *ctx) {
  return (opd__loop){
      .fn = fn, .ninputs = 2, .in_dtype = {compute, compute}, .out_dtype = out_dtype, .ctx = ctx};
}

/* ---- add / sub: self + alpha * other ---- */

OPD__FLOATS(OPD__BINARY_LOOP, add, x + c0 * y)
OPD__INTS(OPD__BINARY_LOOP, add, OPD__WRAP_ADD(T, x, OPD__WRAP_MUL(T, c0, y)))
OPD__BOOLS(OPD__BINARY_LOOP, add, x | (c0 & y))
/* alpha == 1, the common case, without the multiplication */
OPD__FLOATS(OPD__BINARY_LOOP, add1, x + y)
OPD__INTS(OPD__BINARY_LOOP, add1, OPD__WRAP_ADD(T, x, y))
OPD__BOOLS(OPD__BINARY_LOOP, add1, x | y)

static const opd__loop_fn add_loops[OPD__NC] = {
    OPD__FLOATS(OPD__ENTRY, add) OPD__INTS(OPD__ENTRY, add) OPD__BOOLS(OPD__ENTRY, add)};
static const opd__loop_fn add1_loops[OPD__NC] = {
    OPD__FLOATS(OPD__ENTRY, add1) OPD__INTS(OPD__ENTRY, add1) OPD__BOOLS(OPD__ENTRY, add1)};

/* self + alpha * other (sub: - alpha) into `into`, or into a new tensor when it is NULL. */
static int add_sub(opd_tensor *self, opd_tensor *other, opd_scalar alpha, bool sub,
                   opd_tensor *into, opd_tensor **out) {
  opd_out_spec spec;
  int rc = into ? opd__add_out_meta(self, other, alpha, into, &spec)
                : opd__add_meta(self, other, alpha, sub, &spec);
  if (rc) return rc;
  if (sub) { /* sub is add with -alpha */
    if (alpha.tag == OPD_IV_DOUBLE)
      alpha.u.d = -alpha.u.d;
    else
      alpha.u.i = (int64_t)(0u - (uint64_t)alpha.u.i); /* bool alpha was rejected */
  }
  opd__loop_ctx ctx = {0};
  if ((rc = opd__scalar_to(alpha, opd__compute_dtype(spec.dtype), &ctx.c[0]))) return rc;
  bool one = opd__scalar_to_double(alpha) == 1.0;
  opd__loop_fn fn;
  rc = opd__loop_select(one ? add1_loops : add_loops, spec.dtype, "add_cpu/sub_cpu", &fn);
  if (rc) return rc;
  opd_dtype c = opd__compute_dtype(spec.dtype);
  opd__loop loop = binary_loop(fn, c, c, &ctx);
  opd_tensor *inputs[2] = {self, other};
  if (!into) return run_new(&spec, inputs, &loop, out);
  /* out= writes the result converted to out's dtype; an out that is one of the inputs
   * (fully overlapping it) is fine: each element is read before it is written */
  opd__loop_run(into, inputs, &loop);
  opd_tensor_bump_version(into);
  opd_tensor_retain(into);
  *out = into;
  return 0;
}

int opd__cpu_add_tensor(const opd_kernel_ctx *ctx, opd_tensor *self, opd_tensor *other,
                        opd_scalar alpha, opd_tensor **out) {
  (void)ctx;
  return add_sub(self, other, alpha, false, NULL, out);
}

int opd__cpu_add_out(const opd_kernel_ctx *ctx, opd_tensor *self, opd_tensor *other,
                     opd_scalar alpha, opd_tensor *out, opd_tensor **result) {
  (void)ctx;
  return add_sub(self, other, alpha, false, out, result);
}

int opd__cpu_sub_tensor(const opd_kernel_ctx *ctx, opd_tensor *self, opd_tensor *other,
                        opd_scalar alpha, opd_tensor **out) {
  (void)ctx;
  return add_sub(self, other, alpha, true, NULL, out);
}

/* ---- mul, maximum, minimum ---- */

OPD__FLOATS(OPD__BINARY_LOOP, mul, x *y)
OPD__INTS(OPD__BINARY_LOOP, mul, OPD__WRAP_MUL(T, x, y))
OPD__BOOLS(OPD__BINARY_LOOP, mul, x &y)
/* NaN propagates */
OPD__FLOATS(OPD__BINARY_LOOP, maximum, x != x ? x : y != y ? y : x < y ? y : x)
OPD__INTS(OPD__BINARY_LOOP, maximum, x < y ? y : x)
OPD__BOOLS(OPD__BINARY_LOOP, maximum, x | y)
OPD__FLOATS(OPD__BINARY_LOOP, minimum, x != x ? x : y != y ? y : y < x ? y : x)
OPD__INTS(OPD__BINARY_LOOP, minimum, y < x ? y : x)
OPD__BOOLS(OPD__BINARY_LOOP, minimum, x &y)

static const opd__loop_fn mul_loops[OPD__NC] = {
    OPD__FLOATS(OPD__ENTRY, mul) OPD__INTS(OPD__ENTRY, mul) OPD__BOOLS(OPD__ENTRY, mul)};
static const opd__loop_fn maximum_loops[OPD__NC] = {OPD__FLOATS(OPD__ENTRY, maximum) OPD__INTS(
    OPD__ENTRY, maximum) OPD__BOOLS(OPD__ENTRY, maximum)};
static const opd__loop_fn minimum_loops[OPD__NC] = {OPD__FLOATS(OPD__ENTRY, minimum) OPD__INTS(
    OPD__ENTRY, minimum) OPD__BOOLS(OPD__ENTRY, minimum)};

static int binary(opd_tensor *self, opd_tensor *other, const opd__loop_fn *table, const char *name,
                  opd_tensor **out) {
  opd_out_spec spec;
  int rc = opd__binary_meta(self, other, &spec);
  opd__loop_fn fn;
  if (rc || (rc = opd__loop_select(table, spec.dtype, name, &fn))) return rc;
  opd_dtype c = opd__compute_dtype(spec.dtype);
  opd__loop loop = binary_loop(fn, c, c, NULL);
  return run_new(&spec, (opd_tensor *[]){self, other}, &loop, out);
}

int opd__cpu_mul_tensor(const opd_kernel_ctx *ctx, opd_tensor *self, opd_tensor *other,
                        opd_tensor **out) {
  (void)ctx;
  return binary(self, other, mul_loops, "mul_cpu", out);
}

int opd__cpu_maximum(const opd_kernel_ctx *ctx, opd_tensor *self, opd_tensor *other,
                     opd_tensor **out) {
  (void)ctx;
  return binary(self, other, maximum_loops, "maximum_cpu", out);
}

int opd__cpu_minimum(const opd_kernel_ctx *ctx, opd_tensor *self, opd_tensor *other,
                     opd_tensor **out) {
  (void)ctx;
  return binary(self, other, minimum_loops, "minimum_cpu", out);
}

/* ---- div ---- */

/* c10's div_floor_floating: Python's a // b, computed as (a - fmod(a, b)) / b with fix-ups. */
#define DIV_FLOOR_FLOAT(T, a, b, fmod_, floor_, copysign_) \
  static inline T div_floor_##T(T a, T b) {                \
    if (b == 0) return a / b;                              \
    T mod = fmod_(a, b), div = (a - mod) / b;              \
    if (mod != 0 && (b < 0) != (mod < 0)) div -= 1;        \
    if (div == 0) return copysign_((T)0, a / b);           \
    T fl = floor_(div);                                    \
    return div - fl > (T)0.5 ? fl + 1 : fl;                \
  }
DIV_FLOOR_FLOAT(float, a, b, fmodf, floorf, copysignf)
DIV_FLOOR_FLOAT(double, a, b, fmod, floor, copysign)

/* Integer division: a zero divisor sets ctx->error (PyTorch's ZeroDivisionError) and
 * writes 0; MIN / -1 wraps. Floor division rounds toward -inf, as Python's //. */
static inline int64_t div_trunc_int(int64_t a, int64_t b, opd__loop_ctx *ctx) {
  if (b == 0) {
    atomic_store_explicit(&ctx->error, 1, memory_order_relaxed);
    return 0;
  }
  return b == -1 ? (int64_t)(0u - (uint64_t)a) : a / b;
}
static inline int64_t div_floor_int(int64_t a, int64_t b, opd__loop_ctx *ctx) {
  int64_t q = div_trunc_int(a, b, ctx);
  return b != 0 && b != -1 && (a < 0) != (b < 0) && q * b != a ? q - 1 : q;
}

OPD__FLOATS(OPD__BINARY_LOOP, div_true, x / y)
OPD__FLOATS(OPD__BINARY_LOOP, div_trunc, trunc(x / y))
OPD__INTS(OPD__BINARY_LOOP, div_trunc, div_trunc_int(x, y, ctx))
OPD__FLOATS(OPD__BINARY_LOOP, div_floor,
            _Generic(x, float
                     : div_floor_float, double
                     : div_floor_double)(x, y))
OPD__INTS(OPD__BINARY_LOOP, div_floor, div_floor_int(x, y, ctx))

static const opd__loop_fn div_true_loops[OPD__NC] = {OPD__FLOATS(OPD__ENTRY, div_true)};
static const opd__loop_fn div_trunc_loops[OPD__NC] = {OPD__FLOATS(OPD__ENTRY, div_trunc)
                                                          OPD__INTS(OPD__ENTRY, div_trunc)};
static const opd__loop_fn div_floor_loops[OPD__NC] = {OPD__FLOATS(OPD__ENTRY, div_floor)
                                                          OPD__INTS(OPD__ENTRY, div_floor)};

static int div_mode(opd_tensor *self, opd_tensor *other, const char *rounding_mode,
                    opd_tensor **out) {
  opd_out_spec spec;
  opd__div_mode mode;
  int rc = opd__div_meta(self, other, rounding_mode, &mode, &spec);
  if (rc) return rc;
  static const opd__loop_fn *const tables[] = {div_true_loops, div_trunc_loops, div_floor_loops};
  static const char *const names[] = {"div_true_cpu", "div_trunc_cpu", "div_floor_cpu"};
  opd__loop_fn fn;
  if ((rc = opd__loop_select(tables[mode], spec.dtype, names[mode], &fn))) return rc;
  opd__loop_ctx ctx = {0};
  opd_dtype c = opd__compute_dtype(spec.dtype);
  opd__loop loop = binary_loop(fn, c, c, &ctx);
  return run_new(&spec, (opd_tensor *[]){self, other}, &loop, out);
}

int opd__cpu_div_tensor(const opd_kernel_ctx *ctx, opd_tensor *self, opd_tensor *other,
                        opd_tensor **out) {
  (void)ctx;
  return div_mode(self, other, NULL, out);
}

int opd__cpu_div_tensor_mode(const opd_kernel_ctx *ctx, opd_tensor *self, opd_tensor *other,
                             const char *rounding_mode, opd_tensor **out) {
  (void)ctx;
  return div_mode(self, other, rounding_mode, out);
}

/* ---- comparisons: bool results, operands compared in their common dtype ---- */

OPD__FLOATS(OPD__PRED2_LOOP, eq, x == y)
OPD__INTS(OPD__PRED2_LOOP, eq, x == y)
OPD__BOOLS(OPD__PRED2_LOOP, eq, x == y)
OPD__FLOATS(OPD__PRED2_LOOP, gt, x > y)
OPD__INTS(OPD__PRED2_LOOP, gt, x > y)
OPD__BOOLS(OPD__PRED2_LOOP, gt, x > y)
OPD__FLOATS(OPD__PRED1_LOOP, lt_scalar, x < c0)
OPD__INTS(OPD__PRED1_LOOP, lt_scalar, x < c0)
OPD__BOOLS(OPD__PRED1_LOOP, lt_scalar, x < c0)
/* eq.Scalar */
OPD__FLOATS(OPD__PRED1_LOOP, eq_scalar, x == c0)
OPD__INTS(OPD__PRED1_LOOP, eq_scalar, x == c0)
OPD__BOOLS(OPD__PRED1_LOOP, eq_scalar, x == c0)

static const opd__loop_fn eq_loops[OPD__NC] = {OPD__FLOATS(OPD__ENTRY, eq) OPD__INTS(OPD__ENTRY, eq)
                                                   OPD__BOOLS(OPD__ENTRY, eq)};
static const opd__loop_fn gt_loops[OPD__NC] = {OPD__FLOATS(OPD__ENTRY, gt) OPD__INTS(OPD__ENTRY, gt)
                                                   OPD__BOOLS(OPD__ENTRY, gt)};
static const opd__loop_fn lt_scalar_loops[OPD__NC] = {OPD__FLOATS(OPD__ENTRY, lt_scalar) OPD__INTS(
    OPD__ENTRY, lt_scalar) OPD__BOOLS(OPD__ENTRY, lt_scalar)};
static const opd__loop_fn eq_scalar_loops[OPD__NC] = {OPD__FLOATS(OPD__ENTRY, eq_scalar) OPD__INTS(
    OPD__ENTRY, eq_scalar) OPD__BOOLS(OPD__ENTRY, eq_scalar)};

static int compare(opd_tensor *self, opd_tensor *other, const opd__loop_fn *table, const char *name,
                   opd_tensor **out) {
  opd_out_spec spec;
  opd_dtype common;
  int rc = opd__compare_meta(self, other, &common, &spec);
  opd__loop_fn fn;
  if (rc || (rc = opd__loop_select(table, common, name, &fn))) return rc;
  opd__loop loop = binary_loop(fn, opd__compute_dtype(common), OPD_BOOL, NULL);
  return run_new(&spec, (opd_tensor *[]){self, other}, &loop, out);
}

int opd__cpu_eq_tensor(const opd_kernel_ctx *ctx, opd_tensor *self, opd_tensor *other,
                       opd_tensor **out) {
  (void)ctx;
  return compare(self, other, eq_loops, "eq_cpu", out);
}

int opd__cpu_gt_tensor(const opd_kernel_ctx *ctx, opd_tensor *self, opd_tensor *other,
                       opd_tensor **out) {
  (void)ctx;
  return compare(self, other, gt_loops, "gt_cpu", out);
}

/* A comparison with a Scalar (lt.Scalar, eq.Scalar). */
static int compare_scalar(opd_tensor *self, opd_scalar other, const opd__loop_fn *table,
                          const char *name, opd_tensor **out) {
  opd_out_spec spec;
  opd_dtype common;
  int rc = opd__compare_scalar_meta(self, other, &common, &spec);
  opd__loop_fn fn;
  if (rc || (rc = opd__loop_select(table, common, name, &fn))) return rc;
  /* the scalar is a wrapped number: converted to the common dtype as TensorIterator does */
  opd__loop_ctx lctx = {.c = {opd__scalar_cast(other, common)}};
  opd__loop loop = {.fn = fn,
                    .ninputs = 1,
                    .in_dtype = {opd__compute_dtype(common)},
                    .out_dtype = OPD_BOOL,
                    .ctx = &lctx};
  return run_new(&spec, &self, &loop, out);
}

int opd__cpu_lt_scalar(const opd_kernel_ctx *ctx, opd_tensor *self, opd_scalar other,
                       opd_tensor **out) {
  (void)ctx;
  return compare_scalar(self, other, lt_scalar_loops, "lt_cpu", out);
}

int opd__cpu_eq_scalar(const opd_kernel_ctx *ctx, opd_tensor *self, opd_scalar other,
                       opd_tensor **out) {
  (void)ctx;
  return compare_scalar(self, other, eq_scalar_loops, "eq_cpu", out);
}

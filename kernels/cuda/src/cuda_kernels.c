/* cuda_kernels.c: the CUDA kernels of the kernels library (see cuda_kernels.h for the list):
 * each runs the operator's meta function (kernels/meta/, the checks and shapes the CPU kernel
 * uses), allocates its output on the CUDA device, and starts device code through a launcher
 * (elementwise.cu, reduce.cu, linalg.cu) on the current stream; plus copies between the CPU
 * and CUDA devices. See [Note: CUDA kernels as C plus launchers] in cuda_internal.h.
 */
#include <assert.h>
#include <math.h>
#include <string.h>

#include "cuda_ew.h"
#include "cuda_internal.h"
#include "cuda_kernels.h"
#include "meta/elementwise_meta.h"
#include "meta/index_meta.h"
#include "meta/linalg_meta.h"
#include "meta/reduce_meta.h"
#include "opd/cuda.h"
#include "src/loops.h"

/* device_util.cuh repeats the dtype values */
_Static_assert(OPD_UINT8 == 0 && OPD_INT8 == 1 && OPD_INT16 == 2 && OPD_INT32 == 3 &&
                   OPD_INT64 == 4 && OPD_FLOAT16 == 5 && OPD_FLOAT32 == 6 && OPD_FLOAT64 == 7 &&
                   OPD_BOOL == 11 && OPD_BFLOAT16 == 15,
               "dtype values of device_util.cuh");
_Static_assert(OPD_CUDA_MAX_DIMS == OPD_MAX_DIMS, "descriptor dims");

/* ---- helpers ---- */

/* The GPU ordinal of a CUDA tensor (index -1, "the current device", is device 0). */
int opd__cuda_dev_of(const opd_tensor *t) {
  int i = opd_tensor_device(t).index;
  return i < 0 ? 0 : i;
}

/* The launchers' compute / accumulate code of a dtype: 0 float, 1 double, 2 int64. */
int opd__cuda_compute_of(opd_dtype t) {
  return t == OPD_FLOAT64 ? 1 : opd_dtype_is_floating(t) ? 0 : 2;
}

/* A value of dtype t's compute type (loops.h) as the launchers' double / int64 scalars. */
void opd__cuda_value_to(opd__value v, opd_dtype t, double *d, int64_t *i) {
  switch (t) {
  case OPD_FLOAT16:
  case OPD_BFLOAT16:
  case OPD_FLOAT32: *d = v.f32; break;
  case OPD_FLOAT64: *d = v.f64; break;
  case OPD_INT64: *i = v.i64; break;
  case OPD_INT32: *i = v.i32; break;
  case OPD_INT16: *i = v.i16; break;
  case OPD_INT8: *i = v.i8; break;
  case OPD_UINT8: *i = v.u8; break;
  default: *i = v.b8; break;
  }
}

int opd__cuda_not_implemented(const char *name, opd_dtype t) {
  return opd_error(OPD_EINVAL, "\"%s\" not implemented for '%s'", name, opd_dtype_c10_name(t));
}

/* In-place kernels return self, with its version bumped. */
int opd__cuda_inplace_done(opd_tensor *self, opd_tensor **out) {
  opd_tensor_bump_version(self);
  opd_tensor_retain(self);
  *out = self;
  return 0;
}

/* A device int for a kernel to flag bad data in (zeroed), and reading it back (waits). */
int opd__cuda_flag_new(int device, int **flag) {
  if (!(*flag = opd__cuda_alloc(device, sizeof **flag))) return opd_last_error_code();
  int rc = opd__cuda_memset0(device, *flag, sizeof **flag);
  if (rc) opd__cuda_free(device, *flag, sizeof **flag);
  return rc;
}
int opd__cuda_flag_take(int device, int *flag, int *value) {
  int rc = opd__cuda_memcpy(device, value, flag, sizeof *value, 2, true);
  opd__cuda_free(device, flag, sizeof *flag);
  return rc;
}

/* ---- the elementwise engine ---- */

/* out[...] = op(in[0][...], ...) with broadcasting; out's shape is the broadcast shape. The
 * dims are put in the order of out's strides, size-1 dims dropped and neighbours that every
 * operand walks contiguously merged, so that most launches are flat. */
int opd__cuda_ew_run(const opd__cuda_ewop *o, opd_tensor *out, opd_tensor *const *in, int nin) {
  assert(nin < OPD_CUDA_EW_MAX_OPS);
  if (out->numel == 0) return 0;
  opd__cuda_ew d;
  memset(&d, 0, offsetof(opd__cuda_ew, sizes));
  const int nd = out->ndim, nops = nin + 1;
  const int64_t *os = opd_tensor_sizes(out);
  int64_t sizes[OPD_MAX_DIMS], strides[OPD_CUDA_EW_MAX_OPS][OPD_MAX_DIMS];
  for (int k = 0; k < nops; k++) {
    opd_tensor *t = k ? in[k - 1] : out;
    int off = nd - t->ndim;
    assert(off >= 0);
    d.dtype[k] = opd_tensor_dtype(t);
    d.data[k] = opd_tensor_data(t);
    for (int i = 0; i < nd; i++) {
      int64_t sz = i < off ? 1 : opd_tensor_sizes(t)[i - off];
      strides[k][i] = sz == 1 ? 0 : opd_tensor_strides(t)[i - off];
    }
  }
  /* order: dims by decreasing output stride (insertion sort, stable), size-1 dims dropped */
  int perm[OPD_MAX_DIMS], n = 0;
  for (int i = 0; i < nd; i++) {
    if (os[i] == 1) continue;
    int j = n++;
    for (; j > 0 && strides[0][perm[j - 1]] < strides[0][i]; j--) perm[j] = perm[j - 1];
    perm[j] = i;
  }
  int m = 0;
  for (int j = 0; j < n; j++) {
    int i = perm[j];
    bool merge = m > 0;
    for (int k = 0; k < nops && merge; k++) merge = d.strides[k][m - 1] == strides[k][i] * os[i];
    if (merge) {
      d.sizes[m - 1] *= os[i];
      for (int k = 0; k < nops; k++) d.strides[k][m - 1] = strides[k][i];
    } else {
      d.sizes[m] = os[i];
      for (int k = 0; k < nops; k++) d.strides[k][m] = strides[k][i];
      m++;
    }
  }
  (void)sizes;
  d.ndim = m;
  d.numel = out->numel;
  d.op = o->op;
  d.compute = opd__cuda_compute_of(o->compute);
  d.ninputs = nin;
  d.narrow = o->narrow && d.compute == 2 ? (int)o->compute : -1;
  d.c0d = o->c0d;
  d.c1d = o->c1d;
  d.c2d = o->c2d;
  d.c0i = o->c0i;
  d.c1i = o->c1i;
  d.error = o->error;
  return opd__cuda_launch_elementwise(opd__cuda_dev_of(out), &d);
}

/* A new output of spec laid out for `in` (as the CPU kernels lay it out), computed by o. */
int opd__cuda_ew_new(const opd__cuda_ewop *o, const opd_out_spec *spec, opd_tensor *const *in,
                     int nin, opd_tensor **out) {
  opd_tensor *r = NULL;
  int rc = opd__alloc_elementwise_output(spec, in, nin, opd_tensor_device(in[0]), &r);
  if (rc) return rc;
  if ((rc = opd__cuda_ew_run(o, r, in, nin))) {
    opd_tensor_release(r);
    return rc;
  }
  *out = r;
  return 0;
}

/* The same for operations that can meet integer division by zero (ZeroDivisionError). */
int opd__cuda_ew_new_checked(opd__cuda_ewop *o, const opd_out_spec *spec, opd_tensor *const *in,
                             int nin, opd_tensor **out) {
  int device = opd__cuda_dev_of(in[0]), bad = 0;
  int rc = opd__cuda_flag_new(device, &o->error);
  if (rc) return rc;
  rc = opd__cuda_ew_new(o, spec, in, nin, out);
  int rc2 = opd__cuda_flag_take(device, o->error, &bad);
  if (rc == 0 && (rc2 || bad)) {
    opd_tensor_release(*out);
    rc = rc2 ? rc2 : opd_error(OPD_EINVAL, "ZeroDivisionError");
  }
  return rc;
}

/* A contiguous copy of t on its device (a new reference to t when it is contiguous). */
int opd__cuda_contiguous(opd_tensor *t, opd_tensor **out) {
  if (opd_tensor_is_contiguous(t)) {
    opd_tensor_retain(t);
    *out = t;
    return 0;
  }
  opd_tensor *r = NULL;
  int rc =
      opd_tensor_empty(opd_tensor_sizes(t), t->ndim, opd_tensor_dtype(t), opd_tensor_device(t), &r);
  if (rc) return rc;
  opd__cuda_ewop copy = {.op = OPD_CUDA_EW_COPY, .compute = opd_tensor_dtype(t)};
  if ((rc = opd__cuda_ew_run(&copy, r, &t, 1))) {
    opd_tensor_release(r);
    return rc;
  }
  *out = r;
  return 0;
}

/* [Note: CPU scalars in CUDA kernels]
 * As with TensorIterator, a 0-dim CPU tensor (a "CPU scalar", e.g. torch.tensor(2.0)) may be
 * an operand of an elementwise operation on CUDA tensors: the call's key set selects the CUDA
 * kernel, which copies each such operand (one element, a waited copy) to the device of the
 * output (add.out) or else of the first CUDA operand before the meta function runs. Type promotion
 * is unchanged (a 0-dim tensor on any device is one), and the meta functions, shared with the CPU
 * backend, still reject every other mix of devices with PyTorch's message ("Expected all tensors to
 * be on the same device, but found at least two devices, cuda:0 and cpu!"). */
/* Replaces the CPU scalars of in[] by copies on the device (held[i]: the copy or NULL; the
 * caller releases them with release_held, also after an error). */
int opd__cuda_cpu_scalars(const opd_tensor *into, opd_tensor **in, int n, opd_tensor **held) {
  opd_device dev = into ? opd_tensor_device(into) : (opd_device){OPD_DEVICE_CPU, -1};
  for (int i = n - 1; i >= 0; i--) {
    held[i] = NULL;
    if (opd_tensor_device(in[i]).type == OPD_DEVICE_CUDA && !into) dev = opd_tensor_device(in[i]);
  }
  for (int i = 0; i < n && dev.type == OPD_DEVICE_CUDA; i++) {
    opd_tensor *t = in[i];
    if (t->ndim != 0 || opd_tensor_device(t).type != OPD_DEVICE_CPU) continue;
    int rc = opd_tensor_empty(opd_tensor_sizes(t), 0, opd_tensor_dtype(t), dev, &held[i]);
    if (rc == 0)
      rc = opd__cuda_memcpy(opd__cuda_dev_of(held[i]), opd_tensor_data(held[i]), opd_tensor_data(t),
                            opd_dtype_size(opd_tensor_dtype(t)), 1, true);
    if (rc) return rc; /* the caller releases held[] */
    in[i] = held[i];
  }
  return 0;
}

void opd__cuda_release_held(opd_tensor **held, int n) {
  for (int i = 0; i < n; i++)
    if (held[i]) opd_tensor_release(held[i]);
}

/* ---- add, sub, mul, div, maximum, minimum, comparisons ---- */

static int add_sub_on(opd_tensor *self, opd_tensor *other, opd_scalar alpha, bool sub,
                      opd_tensor *into, opd_tensor **out) {
  opd_out_spec spec;
  int rc = into ? opd__add_out_meta(self, other, alpha, into, &spec)
                : opd__add_meta(self, other, alpha, sub, &spec);
  if (rc) return rc;
  if (sub) { /* sub is add with -alpha (bool alpha was rejected) */
    if (alpha.tag == OPD_IV_DOUBLE)
      alpha.u.d = -alpha.u.d;
    else
      alpha.u.i = (int64_t)(0u - (uint64_t)alpha.u.i);
  }
  opd__value a;
  if ((rc = opd__scalar_to(alpha, opd__compute_dtype(spec.dtype), &a))) return rc;
  opd__cuda_ewop o = {.compute = spec.dtype, .narrow = true};
  o.op = opd__scalar_to_double(alpha) == 1.0 ? OPD_CUDA_EW_ADD1 : OPD_CUDA_EW_ADD;
  opd__cuda_value_to(a, opd__compute_dtype(spec.dtype), &o.c0d, &o.c0i);
  opd_tensor *in[2] = {self, other};
  if (!into) return opd__cuda_ew_new(&o, &spec, in, 2, out);
  if ((rc = opd__cuda_ew_run(&o, into, in, 2))) return rc;
  return opd__cuda_inplace_done(into, out);
}

/* add_sub_on with CPU scalar operands on the device ([Note: CPU scalars in CUDA kernels]) */
static int add_sub(opd_tensor *self, opd_tensor *other, opd_scalar alpha, bool sub,
                   opd_tensor *into, opd_tensor **out) {
  opd_tensor *in[2] = {self, other}, *held[2];
  int rc = opd__cuda_cpu_scalars(into, in, 2, held);
  if (rc == 0) rc = add_sub_on(in[0], in[1], alpha, sub, into, out);
  opd__cuda_release_held(held, 2);
  return rc;
}

int opd__cuda_add_tensor(const opd_kernel_ctx *ctx, opd_tensor *self, opd_tensor *other,
                         opd_scalar alpha, opd_tensor **out) {
  (void)ctx;
  return add_sub(self, other, alpha, false, NULL, out);
}

int opd__cuda_add_out(const opd_kernel_ctx *ctx, opd_tensor *self, opd_tensor *other,
                      opd_scalar alpha, opd_tensor *out, opd_tensor **result) {
  (void)ctx;
  return add_sub(self, other, alpha, false, out, result);
}

int opd__cuda_sub_tensor(const opd_kernel_ctx *ctx, opd_tensor *self, opd_tensor *other,
                         opd_scalar alpha, opd_tensor **out) {
  (void)ctx;
  return add_sub(self, other, alpha, true, NULL, out);
}

/* mul, maximum, minimum (compare false: computed in the result dtype) and the comparisons
 * (computed in the operands' common dtype, a bool result) */
static int binary(opd_tensor *self, opd_tensor *other, int op, bool compare, opd_tensor **out) {
  opd_tensor *in[2] = {self, other}, *held[2];
  opd_out_spec spec;
  opd_dtype common = OPD_DTYPE_UNDEFINED;
  int rc = opd__cuda_cpu_scalars(NULL, in, 2, held);
  if (rc == 0)
    rc = compare ? opd__compare_meta(in[0], in[1], &common, &spec)
                 : opd__binary_meta(in[0], in[1], &spec);
  if (rc == 0) {
    opd__cuda_ewop o = {.op = op, .compute = compare ? common : spec.dtype, .narrow = true};
    rc = opd__cuda_ew_new(&o, &spec, in, 2, out);
  }
  opd__cuda_release_held(held, 2);
  return rc;
}

#define BINARY_KERNEL(name, op, compare)                                               \
  int opd__cuda_##name(const opd_kernel_ctx *ctx, opd_tensor *self, opd_tensor *other, \
                       opd_tensor **out) {                                             \
    (void)ctx;                                                                         \
    return binary(self, other, op, compare, out);                                      \
  }
BINARY_KERNEL(mul_tensor, OPD_CUDA_EW_MUL, false)
BINARY_KERNEL(maximum, OPD_CUDA_EW_MAXIMUM, false)
BINARY_KERNEL(minimum, OPD_CUDA_EW_MINIMUM, false)
BINARY_KERNEL(eq_tensor, OPD_CUDA_EW_EQ, true)
BINARY_KERNEL(gt_tensor, OPD_CUDA_EW_GT, true)
#undef BINARY_KERNEL

static int div_mode_on(opd_tensor *self, opd_tensor *other, const char *rounding_mode,
                       opd_tensor **out) {
  opd_out_spec spec;
  opd__div_mode mode;
  int rc = opd__div_meta(self, other, rounding_mode, &mode, &spec);
  if (rc) return rc;
  static const int ops[] = {OPD_CUDA_EW_DIV_TRUE, OPD_CUDA_EW_DIV_TRUNC, OPD_CUDA_EW_DIV_FLOOR};
  static const char *const names[] = {"div_true_cuda", "div_trunc_cuda", "div_floor_cuda"};
  if (spec.dtype == OPD_BOOL || (mode == OPD__DIV_TRUE && !opd_dtype_is_floating(spec.dtype)))
    return opd__cuda_not_implemented(names[mode], spec.dtype);
  opd__cuda_ewop o = {.op = ops[mode], .compute = spec.dtype, .narrow = true};
  opd_tensor *in[2] = {self, other};
  if (opd_dtype_is_floating(spec.dtype)) return opd__cuda_ew_new(&o, &spec, in, 2, out);
  return opd__cuda_ew_new_checked(&o, &spec, in, 2, out);
}

static int div_mode(opd_tensor *self, opd_tensor *other, const char *rounding_mode,
                    opd_tensor **out) {
  opd_tensor *in[2] = {self, other}, *held[2];
  int rc = opd__cuda_cpu_scalars(NULL, in, 2, held);
  if (rc == 0) rc = div_mode_on(in[0], in[1], rounding_mode, out);
  opd__cuda_release_held(held, 2);
  return rc;
}

int opd__cuda_div_tensor(const opd_kernel_ctx *ctx, opd_tensor *self, opd_tensor *other,
                         opd_tensor **out) {
  (void)ctx;
  return div_mode(self, other, NULL, out);
}

int opd__cuda_div_tensor_mode(const opd_kernel_ctx *ctx, opd_tensor *self, opd_tensor *other,
                              const char *rounding_mode, opd_tensor **out) {
  (void)ctx;
  return div_mode(self, other, rounding_mode, out);
}

/* A comparison with a Scalar (lt.Scalar, eq.Scalar). */
int opd__cuda_compare_scalar(opd_tensor *self, opd_scalar other, int op, opd_tensor **out) {
  opd_out_spec spec;
  opd_dtype common;
  int rc = opd__compare_scalar_meta(self, other, &common, &spec);
  if (rc) return rc;
  /* the scalar is a wrapped number: converted to the common dtype as TensorIterator does */
  opd__cuda_ewop o = {.op = op, .compute = common, .narrow = true};
  opd__cuda_value_to(opd__scalar_cast(other, common), common, &o.c0d, &o.c0i);
  return opd__cuda_ew_new(&o, &spec, &self, 1, out);
}

int opd__cuda_lt_scalar(const opd_kernel_ctx *ctx, opd_tensor *self, opd_scalar other,
                        opd_tensor **out) {
  (void)ctx;
  return opd__cuda_compare_scalar(self, other, OPD_CUDA_EW_LT_SCALAR, out);
}

int opd__cuda_eq_scalar(const opd_kernel_ctx *ctx, opd_tensor *self, opd_scalar other,
                        opd_tensor **out) {
  (void)ctx;
  return opd__cuda_compare_scalar(self, other, OPD_CUDA_EW_EQ_SCALAR, out);
}

/* ---- unary ---- */

static int unary(opd_tensor *self, opd__unary_kind kind, int op, const char *name,
                 opd_tensor **out) {
  opd_out_spec spec;
  int rc = opd__unary_meta(self, kind, &spec);
  if (rc) return rc;
  if (kind == OPD__UNARY_SAME && spec.dtype == OPD_BOOL)
    return opd__cuda_not_implemented(name, spec.dtype);
  opd__cuda_ewop o = {.op = op, .compute = spec.dtype, .narrow = true};
  return opd__cuda_ew_new(&o, &spec, &self, 1, out);
}

#define UNARY_KERNEL(name, kind, op)                                                    \
  int opd__cuda_##name(const opd_kernel_ctx *ctx, opd_tensor *self, opd_tensor **out) { \
    (void)ctx;                                                                          \
    return unary(self, kind, op, #name "_cuda", out);                                   \
  }
UNARY_KERNEL(neg, OPD__UNARY_NEG, OPD_CUDA_EW_NEG)
UNARY_KERNEL(abs, OPD__UNARY_SAME, OPD_CUDA_EW_ABS)
UNARY_KERNEL(relu, OPD__UNARY_RELU, OPD_CUDA_EW_RELU)
UNARY_KERNEL(exp, OPD__UNARY_FLOAT, OPD_CUDA_EW_EXP)
UNARY_KERNEL(log, OPD__UNARY_FLOAT, OPD_CUDA_EW_LOG)
UNARY_KERNEL(sqrt, OPD__UNARY_FLOAT, OPD_CUDA_EW_SQRT)
UNARY_KERNEL(rsqrt, OPD__UNARY_FLOAT, OPD_CUDA_EW_RSQRT)
UNARY_KERNEL(sigmoid, OPD__UNARY_FLOAT, OPD_CUDA_EW_SIGMOID)
UNARY_KERNEL(tanh, OPD__UNARY_FLOAT, OPD_CUDA_EW_TANH)
UNARY_KERNEL(sin, OPD__UNARY_FLOAT, OPD_CUDA_EW_SIN)
UNARY_KERNEL(cos, OPD__UNARY_FLOAT, OPD_CUDA_EW_COS)
#undef UNARY_KERNEL

/* silu keeps its dtype, and only floating dtypes have it (as in ATen) */
int opd__cuda_silu(const opd_kernel_ctx *ctx, opd_tensor *self, opd_tensor **out) {
  (void)ctx;
  if (!opd_dtype_is_floating(opd_tensor_dtype(self)))
    return opd__cuda_not_implemented("silu_cuda", opd_tensor_dtype(self));
  return unary(self, OPD__UNARY_SAME, OPD_CUDA_EW_SILU, "silu_cuda", out);
}

int opd__cuda_gelu(const opd_kernel_ctx *ctx, opd_tensor *self, const char *approximate,
                   opd_tensor **out) {
  (void)ctx;
  opd_out_spec spec;
  bool tanh_approx;
  int rc = opd__gelu_meta(self, approximate, &tanh_approx, &spec);
  if (rc) return rc;
  if (!opd_dtype_is_floating(spec.dtype))
    return opd__cuda_not_implemented("GeluCUDAKernelImpl", spec.dtype);
  opd__cuda_ewop o = {.op = tanh_approx ? OPD_CUDA_EW_GELU_TANH : OPD_CUDA_EW_GELU,
                      .compute = spec.dtype};
  return opd__cuda_ew_new(&o, &spec, &self, 1, out);
}

int opd__cuda_pow_tensor_scalar(const opd_kernel_ctx *ctx, opd_tensor *self, opd_scalar exponent,
                                opd_tensor **out) {
  (void)ctx;
  opd_out_spec spec;
  int rc = opd__pow_meta(self, exponent, &spec);
  if (rc) return rc;
  static const int ops[] = {
      [OPD__POW_ZERO] = OPD_CUDA_EW_POW_ZERO, [OPD__POW_COPY] = OPD_CUDA_EW_COPY,
      [OPD__POW_HALF] = OPD_CUDA_EW_POW_HALF, [OPD__POW_MHALF] = OPD_CUDA_EW_POW_MHALF,
      [OPD__POW_M1] = OPD_CUDA_EW_POW_M1,     [OPD__POW_2] = OPD_CUDA_EW_POW_2,
      [OPD__POW_3] = OPD_CUDA_EW_POW_3,       [OPD__POW_M2] = OPD_CUDA_EW_POW_M2,
      [OPD__POW_FLOAT] = OPD_CUDA_EW_POW_ANY, [OPD__POW_INT] = OPD_CUDA_EW_POW_INT};
  opd__pow_kind kind = opd__pow_kind_of(exponent, spec.dtype);
  opd__cuda_ewop o = {.op = ops[kind],
                      .compute = spec.dtype,
                      .narrow = kind != OPD__POW_COPY,
                      .c0d = opd__scalar_to_double(exponent)};
  if (kind == OPD__POW_INT) {
    if (spec.dtype == OPD_BOOL) return opd__cuda_not_implemented("pow_cuda", spec.dtype);
    opd__value v;
    if ((rc = opd__scalar_to(exponent, spec.dtype, &v))) return rc;
    opd__cuda_value_to(v, spec.dtype, &o.c0d, &o.c0i);
  }
  return opd__cuda_ew_new(&o, &spec, &self, 1, out);
}

/* ---- where, clamp, masked_fill_, copy_, fill_ ---- */

int opd__cuda_where_self(const opd_kernel_ctx *ctx, opd_tensor *condition, opd_tensor *self,
                         opd_tensor *other, opd_tensor **out) {
  (void)ctx;
  opd_tensor *in[3] = {condition, self, other}, *held[3];
  opd_out_spec spec;
  int rc = opd__cuda_cpu_scalars(NULL, in, 3, held);
  if (rc == 0) rc = opd__where_meta(in[0], in[1], in[2], &spec);
  if (rc == 0) {
    opd__cuda_ewop o = {.op = OPD_CUDA_EW_WHERE, .compute = spec.dtype, .narrow = true};
    /* the condition is bool: narrowing keeps it 0 or 1 */
    rc = opd__cuda_ew_new(&o, &spec, in, 3, out);
  }
  opd__cuda_release_held(held, 3);
  return rc;
}

/* self = value (c10's Scalar::to<T> of self's dtype) everywhere */
static int fill(opd_tensor *self, opd_scalar value) {
  opd__value v;
  int rc = opd__scalar_to(value, opd_tensor_dtype(self), &v);
  if (rc) return rc;
  opd__cuda_ewop o = {.op = OPD_CUDA_EW_FILL, .compute = opd_tensor_dtype(self)};
  opd__cuda_value_to(v, opd_tensor_dtype(self), &o.c0d, &o.c0i);
  return opd__cuda_ew_run(&o, self, NULL, 0);
}

int opd__cuda_clamp(const opd_kernel_ctx *ctx, opd_tensor *self, opd_scalar min, opd_scalar max,
                    opd_tensor **out) {
  (void)ctx;
  opd_out_spec spec;
  int rc = opd__clamp_meta(self, min, max, &spec);
  if (rc) return rc;
  if (spec.dtype == OPD_BOOL) return opd__cuda_not_implemented("clamp_cuda", spec.dtype);
  bool has_min = min.tag != OPD_IV_NONE, has_max = max.tag != OPD_IV_NONE;
  opd_tensor *r = NULL;
  if ((rc = opd__alloc_elementwise_output(&spec, &self, 1, opd_tensor_device(self), &r))) return rc;
  if (has_min && has_max &&
      (isnan(opd__scalar_to_double(min)) || isnan(opd__scalar_to_double(max)))) {
    rc = fill(r, opd__scalar_double(NAN)); /* as ATen: a NaN bound makes everything NaN */
  } else {
    opd__cuda_ewop o = {.op = has_min && has_max ? OPD_CUDA_EW_CLAMP
                              : has_min          ? OPD_CUDA_EW_CLAMP_MIN
                                                 : OPD_CUDA_EW_CLAMP_MAX,
                        .compute = spec.dtype,
                        .narrow = true};
    opd__value v;
    if (has_min && !(rc = opd__scalar_to(min, spec.dtype, &v)))
      opd__cuda_value_to(v, spec.dtype, &o.c0d, &o.c0i);
    if (!rc && has_max && !(rc = opd__scalar_to(max, spec.dtype, &v)))
      opd__cuda_value_to(v, spec.dtype, &o.c1d, &o.c1i);
    if (!rc) rc = opd__cuda_ew_run(&o, r, &self, 1);
  }
  if (rc) {
    opd_tensor_release(r);
    return rc;
  }
  *out = r;
  return 0;
}

int opd__cuda_masked_fill__scalar(const opd_kernel_ctx *ctx, opd_tensor *self, opd_tensor *mask,
                                  opd_scalar value, opd_tensor **out) {
  (void)ctx;
  int rc = opd__masked_fill_meta(self, mask);
  opd__value v;
  if (rc || (rc = opd__scalar_to(value, opd_tensor_dtype(self), &v))) return rc;
  opd__cuda_ewop o = {
      .op = OPD_CUDA_EW_MASKED_FILL, .compute = opd_tensor_dtype(self), .narrow = true};
  opd__cuda_value_to(v, opd_tensor_dtype(self), &o.c0d, &o.c0i);
  if ((rc = opd__cuda_ew_run(&o, self, (opd_tensor *[]){mask, self}, 2))) return rc;
  return opd__cuda_inplace_done(self, out);
}

int opd__cuda_fill__scalar(const opd_kernel_ctx *ctx, opd_tensor *self, opd_scalar value,
                           opd_tensor **out) {
  (void)ctx;
  int rc = fill(self, value);
  return rc ? rc : opd__cuda_inplace_done(self, out);
}

int opd__cuda_item(const opd_tensor *t, opd_scalar *out) {
  union {
    float f32;
    double f64;
    int64_t i64;
    int32_t i32;
    int16_t i16;
    int8_t i8;
    uint8_t u8;
    uint16_t u16;
  } v = {0};
  opd_dtype dt = opd_tensor_dtype(t);
  size_t n = opd_dtype_size(dt);
  if (opd_tensor_device(t).type == OPD_DEVICE_CUDA) {
    int rc = opd__cuda_memcpy(opd__cuda_dev_of(t), &v, opd_tensor_data(t), n, 2, true);
    if (rc) return rc;
  } else {
    memcpy(&v, opd_tensor_data(t), n);
  }
  switch (dt) {
  case OPD_FLOAT32: *out = opd__scalar_double(v.f32); break;
  case OPD_FLOAT64: *out = opd__scalar_double(v.f64); break;
  case OPD_FLOAT16: *out = opd__scalar_double(opd_half_to_float(v.u16)); break;
  case OPD_BFLOAT16: *out = opd__scalar_double(opd_bf16_to_float(v.u16)); break;
  case OPD_INT64: *out = opd__scalar_int(v.i64); break;
  case OPD_INT32: *out = opd__scalar_int(v.i32); break;
  case OPD_INT16: *out = opd__scalar_int(v.i16); break;
  case OPD_INT8: *out = opd__scalar_int(v.i8); break;
  case OPD_UINT8: *out = opd__scalar_int(v.u8); break;
  default: *out = (opd_scalar){.tag = OPD_IV_BOOL, .u.b = v.u8 != 0}; break;
  }
  return 0;
}

/* fill_.Tensor: fill_.Scalar with the value's one element, as ATen's fill_(self, value.item()) */
int opd__cuda_fill__tensor(const opd_kernel_ctx *ctx, opd_tensor *self, opd_tensor *value,
                           opd_tensor **out) {
  (void)ctx;
  if (value->ndim != 0)
    return opd_error(OPD_EINVAL,
                     "fill_ only supports 0-dimension value tensor but got tensor with %d "
                     "dimensions.",
                     value->ndim);
  opd_scalar s;
  int rc = opd__cuda_item(value, &s);
  if (!rc) rc = fill(self, s);
  return rc ? rc : opd__cuda_inplace_done(self, out);
}

/* The compute dtype of a conversion from `from` to `to`: double if either is float64, float if
 * either is another floating dtype, int64 otherwise. */
opd_dtype opd__cuda_copy_compute(opd_dtype from, opd_dtype to) {
  if (from == OPD_FLOAT64 || to == OPD_FLOAT64) return OPD_FLOAT64;
  if (opd_dtype_is_floating(from) || opd_dtype_is_floating(to)) return OPD_FLOAT32;
  return OPD_INT64;
}

/* self = src on one CUDA device (broadcasting, strides, dtype conversion). */
static int copy_on_device(opd_tensor *self, opd_tensor *src) {
  opd__cuda_ewop o = {.op = OPD_CUDA_EW_COPY,
                      .compute =
                          opd__cuda_copy_compute(opd_tensor_dtype(src), opd_tensor_dtype(self))};
  return opd__cuda_ew_run(&o, self, &src, 1);
}

static bool same_layout(const opd_tensor *a, const opd_tensor *b) {
  return a->dtype == b->dtype && a->ndim == b->ndim &&
         !memcmp(opd_tensor_sizes(a), opd_tensor_sizes(b), a->ndim * sizeof(int64_t));
}

/* A new contiguous tensor of t's shape and dtype on `device`. */
static int empty_like_on(const opd_tensor *t, opd_device device, opd_tensor **out) {
  return opd_tensor_empty(opd_tensor_sizes(t), t->ndim, opd_tensor_dtype(t), device, out);
}

/* [Note: Copies between devices]
 * A copy between the CPU and a GPU moves the source's elements as one contiguous block:
 * a non-contiguous source is first made contiguous on its own device (staging), the block is
 * copied with cudaMemcpyAsync on the current stream (which then is waited for: the host
 * block may be freed right after), and the destination's kernel (broadcasting, strides, dtype
 * conversion) copies it into place unless the destination is that same contiguous block. */
static int copy_across(opd_tensor *self, opd_tensor *src) {
  bool to_cuda = opd_tensor_device(self).type == OPD_DEVICE_CUDA;
  opd_tensor *staged = NULL, *block = NULL;
  int rc;
  if (to_cuda) { /* CPU -> CUDA (or CUDA -> another CUDA device) */
    if (opd_tensor_device(src).type == OPD_DEVICE_CUDA) { /* another GPU: its stream first */
      rc = opd__cuda_contiguous(src, &staged);
      if (!rc) rc = opd_cuda_stream_synchronize(opd__cuda_dev_of(src), NULL);
    } else if (opd_tensor_is_contiguous(src)) {
      opd_tensor_retain(staged = src);
      rc = 0;
    } else if (!(rc = empty_like_on(src, opd_tensor_device(src), &staged))) {
      rc = opd__call_copy_(staged, src, false);
    }
    if (rc) return rc;
    bool direct = opd_tensor_is_contiguous(self) && same_layout(self, staged);
    if (direct)
      opd_tensor_retain(block = self);
    else
      rc = empty_like_on(staged, opd_tensor_device(self), &block);
    if (!rc)
      rc = opd__cuda_memcpy(opd__cuda_dev_of(self), opd_tensor_data(block), opd_tensor_data(staged),
                            (size_t)staged->numel * opd_dtype_size(opd_tensor_dtype(staged)),
                            opd_tensor_device(src).type == OPD_DEVICE_CUDA ? 0 : 1, true);
    if (!rc && !direct) rc = copy_on_device(self, block);
  } else { /* CUDA -> CPU */
    if ((rc = opd__cuda_contiguous(src, &staged))) return rc;
    bool direct = opd_tensor_is_contiguous(self) && same_layout(self, staged);
    if (direct)
      opd_tensor_retain(block = self);
    else
      rc = empty_like_on(staged, opd_tensor_device(self), &block);
    if (!rc)
      rc = opd__cuda_memcpy(opd__cuda_dev_of(src), opd_tensor_data(block), opd_tensor_data(staged),
                            (size_t)staged->numel * opd_dtype_size(opd_tensor_dtype(staged)), 2,
                            true);
    if (!rc && !direct) rc = opd__call_copy_(self, block, false);
  }
  if (staged) opd_tensor_release(staged);
  if (block) opd_tensor_release(block);
  return rc;
}

/* copy_ from a tensor that is self's memory, viewed the same way, is a no-op (ATen). */
static bool same_data(const opd_tensor *a, const opd_tensor *b) {
  return a == b ||
         (opd_tensor_shares_storage(a, b) && a->storage_offset == b->storage_offset &&
          same_layout(a, b) &&
          !memcmp(opd_tensor_strides(a), opd_tensor_strides(b), a->ndim * sizeof(int64_t)));
}

int opd__cuda_copy_(const opd_kernel_ctx *ctx, opd_tensor *self, opd_tensor *src, bool non_blocking,
                    opd_tensor **out) {
  (void)ctx;
  (void)non_blocking; /* copies wait: [Note: Copies between devices] */
  if (!same_data(self, src)) {
    int rc = opd__copy_meta(self, src);
    if (rc) return rc;
    opd_device sd = opd_tensor_device(self), rd = opd_tensor_device(src);
    if (opd_tensor_is_meta(self) || self->numel == 0) return opd__cuda_inplace_done(self, out);
    if (sd.type != OPD_DEVICE_CPU && sd.type != OPD_DEVICE_CUDA)
      return opd_error(OPD_ENOTIMPL, "copy_ from %s to this device is not supported", "cuda");
    if (rd.type != OPD_DEVICE_CPU && rd.type != OPD_DEVICE_CUDA)
      return opd_error(OPD_ENOTIMPL, "copy_ to cuda from this device is not supported");
    bool same_device = sd.type == OPD_DEVICE_CUDA && rd.type == OPD_DEVICE_CUDA &&
                       opd__cuda_dev_of(self) == opd__cuda_dev_of(src);
    rc = same_device ? copy_on_device(self, src) : copy_across(self, src);
    if (rc) return rc;
  }
  return opd__cuda_inplace_done(self, out);
}

/* ---- reductions ---- */

int opd__cuda_reduce_with(const opd__cuda_red *how, opd_tensor *self, uint64_t mask,
                          const opd_out_spec *spec, opd_tensor **out, opd_tensor **mean) {
  int op = how->op, rc = opd__alloc_output(spec, opd_tensor_device(self), out);
  if (!rc && mean && (rc = opd__alloc_output(spec, opd_tensor_device(self), mean)))
    opd_tensor_release(*out);
  if (rc || (*out)->numel == 0) return rc;
  opd__cuda_red d = {.op = op,
                     .in_dtype = opd_tensor_dtype(self),
                     .out_dtype = spec->dtype,
                     .in = opd_tensor_data(self),
                     .out = opd_tensor_data(*out),
                     .mean = mean ? opd_tensor_data(*mean) : NULL,
                     .correction = how->correction,
                     .ord = how->ord,
                     .nout = 1,
                     .nred = 1};
  /* the CPU engine's compute kinds: sums, means and products in the result's compute type
   * (products of floats in double), the extrema and their indices in the input's; any, all and
   * sums or products into bool read every element as 0 or 1 into int64 */
  bool to_out = op == OPD_CUDA_RED_SUM || op == OPD_CUDA_RED_MEAN || op == OPD_CUDA_RED_PROD ||
                op == OPD_CUDA_RED_NANSUM;
  opd_dtype kind = to_out ? spec->dtype : opd_tensor_dtype(self);
  d.nonzero = how->nonzero || op == OPD_CUDA_RED_ANY || op == OPD_CUDA_RED_ALL ||
              (to_out && op != OPD_CUDA_RED_MEAN && spec->dtype == OPD_BOOL);
  d.acc = d.nonzero                                                ? 2
          : op == OPD_CUDA_RED_PROD && opd_dtype_is_floating(kind) ? 1
                                                                   : opd__cuda_compute_of(kind);
  const int64_t *sz = opd_tensor_sizes(self), *st = opd_tensor_strides(self);
  for (int pass = 0; pass < 2; pass++) /* kept dims, then reduced ones */
    for (int k = 0; k < self->ndim; k++) {
      bool reduced = (mask >> k) & 1;
      if (reduced != (pass == 1)) continue;
      d.sizes[d.ndim] = sz[k];
      d.strides[d.ndim++] = st[k];
      /* products of sizes are bounded by numel only when it is not 0 (the kept ones by the
       * output's, which is not) */
      if (reduced)
        d.nred = self->numel ? d.nred * sz[k] : 0;
      else
        d.nout *= sz[k], d.nkept++;
    }
  if ((rc = opd__cuda_launch_reduce(opd__cuda_dev_of(self), &d))) {
    opd_tensor_release(*out);
    if (mean) opd_tensor_release(*mean);
  }
  return rc;
}

int opd__cuda_reduce(int op, opd_tensor *self, uint64_t mask, const opd_out_spec *spec,
                     opd_tensor **out) {
  return opd__cuda_reduce_with(&(opd__cuda_red){.op = op}, self, mask, spec, out, NULL);
}

int opd__cuda_sum_dim_intlist(const opd_kernel_ctx *ctx, opd_tensor *self, opd_int_list dim,
                              bool keepdim, opd_dtype dtype, opd_tensor **out) {
  (void)ctx;
  opd_out_spec spec;
  uint64_t mask;
  int rc = opd__sum_meta(self, dim, keepdim, dtype, &spec, &mask);
  return rc ? rc : opd__cuda_reduce(OPD_CUDA_RED_SUM, self, mask, &spec, out);
}

int opd__cuda_mean_dim(const opd_kernel_ctx *ctx, opd_tensor *self, opd_int_list dim, bool keepdim,
                       opd_dtype dtype, opd_tensor **out) {
  (void)ctx;
  opd_out_spec spec;
  uint64_t mask;
  int rc = opd__mean_meta(self, dim, keepdim, dtype, &spec, &mask);
  return rc ? rc : opd__cuda_reduce(OPD_CUDA_RED_MEAN, self, mask, &spec, out);
}

int opd__cuda_amax(const opd_kernel_ctx *ctx, opd_tensor *self, opd_int_list dim, bool keepdim,
                   opd_tensor **out) {
  (void)ctx;
  opd_out_spec spec;
  uint64_t mask;
  int rc = opd__amax_meta(self, dim, keepdim, &spec, &mask);
  return rc ? rc : opd__cuda_reduce(OPD_CUDA_RED_AMAX, self, mask, &spec, out);
}

int opd__cuda_argmax(const opd_kernel_ctx *ctx, opd_tensor *self, opd_opt_int dim, bool keepdim,
                     opd_tensor **out) {
  (void)ctx;
  opd_out_spec spec;
  uint64_t mask;
  int rc = opd__argmax_meta(self, dim, keepdim, &spec, &mask);
  if (rc) return rc;
  if (opd_tensor_dtype(self) == OPD_BOOL) return opd__cuda_not_implemented("argmax_cuda", OPD_BOOL);
  return opd__cuda_reduce(OPD_CUDA_RED_ARGMAX, self, mask, &spec, out);
}

/* ---- softmax, layer norm ---- */

static int softmax(opd_tensor *self, int64_t dim, bool half_to_float, bool is_log,
                   opd_tensor **out) {
  opd_out_spec spec;
  int64_t d;
  int rc = opd__softmax_meta(self, dim, half_to_float, &spec, &d);
  if (rc) return rc;
  if (!opd_dtype_is_floating(opd_tensor_dtype(self)))
    return opd__cuda_not_implemented(is_log ? "host_log_softmax" : "host_softmax",
                                     opd_tensor_dtype(self));
  /* an empty input: nothing to launch (and its sizes' products may overflow) */
  if (self->numel == 0) return opd__alloc_output(&spec, opd_tensor_device(self), out);
  opd_tensor *in = NULL;
  if ((rc = opd__cuda_contiguous(self, &in))) return rc;
  if ((rc = opd__alloc_output(&spec, opd_tensor_device(self), out))) {
    opd_tensor_release(in);
    return rc;
  }
  opd__cuda_softmax_args s = {.log = is_log,
                              .f64 = opd_tensor_dtype(self) == OPD_FLOAT64,
                              .in_dtype = opd_tensor_dtype(self),
                              .out_dtype = spec.dtype,
                              .outer = 1,
                              .len = 1,
                              .inner = 1,
                              .in = opd_tensor_data(in),
                              .out = opd_tensor_data(*out)};
  const int64_t *sz = opd_tensor_sizes(self);
  for (int k = 0; k < self->ndim; k++) {
    if (k < d)
      s.outer *= sz[k];
    else if (k == d)
      s.len = sz[k];
    else
      s.inner *= sz[k];
  }
  rc = opd__cuda_launch_softmax(opd__cuda_dev_of(self), &s);
  opd_tensor_release(in);
  if (rc) opd_tensor_release(*out);
  return rc;
}

int opd__cuda_softmax(const opd_kernel_ctx *ctx, opd_tensor *self, int64_t dim, bool half_to_float,
                      opd_tensor **out) {
  (void)ctx;
  return softmax(self, dim, half_to_float, false, out);
}

int opd__cuda_log_softmax(const opd_kernel_ctx *ctx, opd_tensor *self, int64_t dim,
                          bool half_to_float, opd_tensor **out) {
  (void)ctx;
  return softmax(self, dim, half_to_float, true, out);
}

static int layer_norm(const opd__layer_norm_args *a, opd_tensor *const *res) {
  int rc = 0;
  opd_tensor *srcs[3] = {a->input, a->weight, a->bias}, *c[3] = {NULL, NULL, NULL};
  for (int k = 0; k < 3 && !rc; k++)
    if (srcs[k] && srcs[k]->numel > 0) rc = opd__cuda_contiguous(srcs[k], &c[k]);
  if (!rc) {
    opd__cuda_layer_norm l = {.dtype = opd_tensor_dtype(a->input),
                              .rows = a->rows,
                              .cols = a->cols,
                              .eps = a->eps,
                              .in = c[0] ? opd_tensor_data(c[0]) : NULL, /* NULL: cols 0 */
                              .weight = c[1] ? opd_tensor_data(c[1]) : NULL,
                              .bias = c[2] ? opd_tensor_data(c[2]) : NULL,
                              .out = opd_tensor_data(res[0]),
                              .mean = opd_tensor_data(res[1]),
                              .rstd = opd_tensor_data(res[2])};
    rc = opd__cuda_launch_layer_norm(opd__cuda_dev_of(a->input), &l);
  }
  for (int k = 0; k < 3; k++)
    if (c[k]) opd_tensor_release(c[k]);
  return rc;
}

int opd__cuda_native_layer_norm(const opd_kernel_ctx *ctx, opd_stack *stack) {
  (void)ctx;
  return opd__layer_norm_kernel(stack, layer_norm);
}

/* ---- matrix products ---- */

/* A matrix operand (dims d0, d0 + 1 of t) in a layout cuBLAS reads directly (one stride 1
 * and the other, its leading dimension, an int as cuBLAS takes it: [Note: Row-major products
 * in cuBLAS] in linalg.cu), or else a contiguous copy (*held), as PyTorch copies operands it
 * cannot hand to cuBLAS. */
static int gemm_operand(opd_tensor *t, int d0, opd_tensor **held, const void **data, int64_t *rs,
                        int64_t *cs, int64_t *bs) {
  const int64_t *sz = opd_tensor_sizes(t), *st = opd_tensor_strides(t);
  int64_t rows = sz[d0], cols = sz[d0 + 1];
  *rs = rows == 1 ? (cols > 1 ? cols : 1) : st[d0];
  *cs = cols == 1 ? 1 : st[d0 + 1];
  *bs = d0 ? st[0] : 0;
  bool row_major = *cs == 1 && *rs >= (cols > 1 ? cols : 1) && *rs <= INT32_MAX;
  bool col_major = *rs == 1 && *cs >= (rows > 1 ? rows : 1) && *cs <= INT32_MAX;
  *held = NULL;
  if (row_major || col_major) {
    *data = opd_tensor_data(t);
    return 0;
  }
  opd_tensor *c = NULL;
  int rc = opd_tensor_empty(sz, t->ndim, opd_tensor_dtype(t), opd_tensor_device(t), &c);
  if (rc) return rc;
  opd__cuda_ewop copy = {.op = OPD_CUDA_EW_COPY, .compute = opd_tensor_dtype(t)};
  if ((rc = opd__cuda_ew_run(&copy, c, &t, 1))) {
    opd_tensor_release(c);
    return rc;
  }
  *held = c;
  *data = opd_tensor_data(c);
  *rs = cols;
  *cs = 1;
  *bs = d0 ? rows * cols : 0;
  return 0;
}

/* alpha or beta of an integer product (Scalar::to<int64_t>: a double must fit). */
static int int_coefficient(opd_scalar s, uint64_t *out) {
  opd__value v;
  int rc = opd__scalar_to(s, OPD_INT64, &v);
  if (rc == 0) *out = (uint64_t)v.i64;
  return rc;
}

/* out = alpha * a @ b + beta * out over `batch` matrices (d0: the first matrix dim). */
static int gemm(opd_tensor *a, opd_tensor *b, int d0, opd_scalar alpha, opd_scalar beta,
                opd_tensor *out, const char *name) {
  opd_dtype t = opd_tensor_dtype(out);
  const int64_t *os = opd_tensor_sizes(out);
  opd__cuda_gemm g = {.dtype = t,
                      .batch = d0 ? os[0] : 1,
                      .m = os[d0],
                      .n = os[d0 + 1],
                      .k = opd_tensor_sizes(a)[d0 + 1],
                      .c = opd_tensor_data(out),
                      .alpha = opd__scalar_to_double(alpha),
                      .beta = opd__scalar_to_double(beta)};
  if (!opd_dtype_is_floating(t)) {
    int rc = int_coefficient(alpha, &g.alpha_u);
    if (rc || (rc = int_coefficient(beta, &g.beta_u))) return rc;
  }
  int64_t big = g.m > g.n ? g.m : g.n;
  if (g.k > big) big = g.k;
  if (big > INT32_MAX || g.batch > INT32_MAX)
    return opd_error(OPD_EINVAL, "%s: matrix dimensions beyond 2^31 - 1 are not supported", name);
  opd_tensor *ha = NULL, *hb = NULL;
  int rc = gemm_operand(a, d0, &ha, &g.a, &g.a_rs, &g.a_cs, &g.a_bs);
  if (!rc) rc = gemm_operand(b, d0, &hb, &g.b, &g.b_rs, &g.b_cs, &g.b_bs);
  if (!rc) rc = opd__cuda_launch_gemm(opd__cuda_dev_of(out), &g);
  if (ha) opd_tensor_release(ha);
  if (hb) opd_tensor_release(hb);
  return rc;
}

/* out = beta * self (broadcast), for an empty contraction: zeros when beta is 0; else
 * PyTorch's result.copy_(self).mul_(beta), which cannot write a floating or integer product
 * into an integer or bool result. */
static int scale_into(opd_tensor *out, opd_tensor *self, opd_scalar beta) {
  opd_dtype t = opd_tensor_dtype(out);
  if (opd__scalar_to_double(beta) == 0)
    return opd__cuda_memset0(opd__cuda_dev_of(out), opd_tensor_data(out),
                             (size_t)out->numel * opd_dtype_size(t));
  if ((!opd_dtype_is_floating(t) && beta.tag == OPD_IV_DOUBLE) ||
      (t == OPD_BOOL && beta.tag == OPD_IV_INT))
    return opd_error(OPD_EINVAL, "result type %s can't be cast to the desired output type %s",
                     beta.tag == OPD_IV_DOUBLE ? "Float" : "Long", opd_dtype_c10_name(t));
  opd__cuda_ewop scale = {
      .op = OPD_CUDA_EW_SCALE, .compute = t, .c0d = opd__scalar_to_double(beta)};
  uint64_t u = 0;
  if (!opd_dtype_is_floating(t)) {
    int rc = int_coefficient(beta, &u);
    if (rc) return rc;
    scale.c0i = (int64_t)u;
  }
  return opd__cuda_ew_run(&scale, out, &self, 1);
}

/* mm (batched 0) and bmm (batched 1): zeros for an empty contraction, else the product */
static int mm_bmm(opd_tensor *self, opd_tensor *mat2, int batched, opd_tensor **out) {
  int rc = batched ? opd__bmm_alloc(self, mat2, out) : opd__mm_alloc(self, mat2, out);
  if (rc || (*out)->numel == 0) return rc;
  if (opd_tensor_sizes(self)[1 + batched] == 0)
    rc = opd__cuda_memset0(opd__cuda_dev_of(*out), opd_tensor_data(*out),
                           (size_t)(*out)->numel * opd_dtype_size(opd_tensor_dtype(*out)));
  else
    rc = gemm(self, mat2, batched, opd__scalar_int(1), opd__scalar_int(0), *out,
              batched ? "bmm" : "mm");
  if (rc) opd_tensor_release(*out);
  return rc;
}

int opd__cuda_mm(const opd_kernel_ctx *ctx, opd_tensor *self, opd_tensor *mat2, opd_tensor **out) {
  (void)ctx;
  return mm_bmm(self, mat2, 0, out);
}

int opd__cuda_bmm(const opd_kernel_ctx *ctx, opd_tensor *self, opd_tensor *mat2, opd_tensor **out) {
  (void)ctx;
  return mm_bmm(self, mat2, 1, out);
}

int opd__cuda_addmm(const opd_kernel_ctx *ctx, opd_tensor *self, opd_tensor *mat1, opd_tensor *mat2,
                    opd_scalar beta, opd_scalar alpha, opd_tensor **out) {
  (void)ctx;
  int rc = opd__addmm_alloc(self, mat1, mat2, out);
  if (rc || (*out)->numel == 0) return rc;
  if (opd_tensor_sizes(mat1)[1] == 0) {
    rc = scale_into(*out, self, beta);
  } else {
    if (opd__scalar_to_double(beta) !=
        0) { /* out = self (broadcast), then the product adds to beta * out */
      opd__cuda_ewop copy = {
          .op = OPD_CUDA_EW_COPY,
          .compute = opd__cuda_copy_compute(opd_tensor_dtype(self), opd_tensor_dtype(*out))};
      rc = opd__cuda_ew_run(&copy, *out, &self, 1);
    }
    if (!rc) rc = gemm(mat1, mat2, 0, alpha, beta, *out, "addmm");
  }
  if (rc) opd_tensor_release(*out);
  return rc;
}

/* ---- dot, vdot, addmv, baddbmm: more products on the gemm launcher ---- */

/* out = beta * self (broadcast to out) + alpha * a @ b over the matrices at dim d0 (1: batches),
 * as addmm computes it; beta * self alone for an empty contraction. */
static int add_product(opd_tensor *self, opd_tensor *a, opd_tensor *b, int d0, opd_scalar beta,
                       opd_scalar alpha, opd_tensor *out, opd_tensor *c, const char *name) {
  if (opd_tensor_sizes(a)[d0 + 1] == 0) return scale_into(out, self, beta);
  int rc = 0;
  if (opd__scalar_to_double(beta) != 0) { /* out = self, then the product adds to beta * out */
    opd__cuda_ewop copy = {
        .op = OPD_CUDA_EW_COPY,
        .compute = opd__cuda_copy_compute(opd_tensor_dtype(self), opd_tensor_dtype(out))};
    rc = opd__cuda_ew_run(&copy, out, &self, 1);
  }
  return rc ? rc : gemm(a, b, d0, alpha, beta, c, name);
}

/* A 2-d view (rows, cols) of a 1-d or 0-d tensor t with the given strides. */
static int matrix_view(opd_tensor *t, int64_t rows, int64_t cols, int64_t rs, int64_t cs,
                       opd_tensor **out) {
  int64_t sizes[2] = {rows, cols}, strides[2] = {rs, cs};
  return opd_tensor_view_of(t, sizes, strides, 2, t->storage_offset, out);
}

/* dot and vdot (the same for real dtypes): a (1 x k) @ (k x 1) product into the 0-d result */
static int dot(const char *name, opd_tensor *self, opd_tensor *other, opd_tensor **out) {
  opd_out_spec spec;
  int rc = opd__dot_output(name, self, other, &spec, out);
  if (rc) return rc;
  int64_t k = self->numel;
  opd_tensor *a = NULL, *b = NULL, *c = NULL;
  if (k == 0) {
    rc = opd__cuda_memset0(opd__cuda_dev_of(*out), opd_tensor_data(*out),
                           opd_dtype_size(spec.dtype));
  } else if (!(rc = matrix_view(self, 1, k, k, opd_tensor_strides(self)[0], &a)) &&
             !(rc = matrix_view(other, k, 1, opd_tensor_strides(other)[0], 1, &b)) &&
             !(rc = matrix_view(*out, 1, 1, 1, 1, &c))) {
    rc = gemm(a, b, 0, opd__scalar_int(1), opd__scalar_int(0), c, name);
  }
  opd_tensor *views[3] = {a, b, c};
  for (int i = 0; i < 3; i++)
    if (views[i]) opd_tensor_release(views[i]);
  if (rc) opd_tensor_release(*out);
  return rc;
}

OPD__DEFINE_DOT_KERNELS(cuda, dot)

/* addmv: out (m) = beta * self + alpha * mat (m x k) @ vec (k x 1) */
int opd__cuda_addmv(const opd_kernel_ctx *ctx, opd_tensor *self, opd_tensor *mat, opd_tensor *vec,
                    opd_scalar beta, opd_scalar alpha, opd_tensor **out) {
  (void)ctx;
  opd_out_spec spec;
  int rc = opd__addmv_output(self, mat, vec, &spec, out);
  if (rc || (*out)->numel == 0) return rc;
  int64_t m = opd_tensor_sizes(mat)[0], k = opd_tensor_sizes(mat)[1];
  opd_tensor *b = NULL, *c = NULL;
  if (!(rc = matrix_view(vec, k, 1, opd_tensor_strides(vec)[0], 1, &b)) &&
      !(rc = matrix_view(*out, m, 1, 1, 1, &c)))
    rc = add_product(self, mat, b, 0, beta, alpha, *out, c, "addmv");
  if (b) opd_tensor_release(b);
  if (c) opd_tensor_release(c);
  if (rc) opd_tensor_release(*out);
  return rc;
}

int opd__cuda_baddbmm(const opd_kernel_ctx *ctx, opd_tensor *self, opd_tensor *batch1,
                      opd_tensor *batch2, opd_scalar beta, opd_scalar alpha, opd_tensor **out) {
  (void)ctx;
  opd_out_spec spec;
  opd_device device;
  int rc = opd__baddbmm_meta(self, batch1, batch2, &spec, &device);
  if (!rc) rc = opd__alloc_output(&spec, device, out);
  if (rc || (*out)->numel == 0) return rc;
  if ((rc = add_product(self, batch1, batch2, 1, beta, alpha, *out, *out, "baddbmm")))
    opd_tensor_release(*out);
  return rc;
}

/* ---- index_select, cat ---- */

int opd__cuda_index_select(const opd_kernel_ctx *ctx, opd_tensor *self, int64_t dim,
                           opd_tensor *index, opd_tensor **out) {
  (void)ctx;
  opd__index_select_plan p;
  int rc = opd__index_select_prepare(self, dim, index, &p, out);
  if (rc || *out) return rc;
  int64_t d = p.dim, limit = p.limit;
  if ((rc = opd__alloc_output(&p.spec, p.device, out)) != 0 || (*out)->numel == 0) return rc;
  opd__cuda_gather g = {.ndim = self->ndim ? self->ndim : 1,
                        .dim = self->ndim ? (int)d : 0,
                        .index_dtype = opd_tensor_dtype(index),
                        .elsize = (int64_t)opd_dtype_size(p.spec.dtype),
                        .numel = (*out)->numel,
                        .limit = limit,
                        .index_stride = index->ndim ? opd_tensor_strides(index)[0] : 0,
                        .self = opd_tensor_data(self),
                        .index = opd_tensor_data(index),
                        .out = opd_tensor_data(*out)};
  if (self->ndim == 0) {
    g.sizes[0] = (*out)->numel;
    g.self_strides[0] = 0;
  } else {
    for (int k = 0; k < self->ndim; k++) {
      g.sizes[k] = opd_tensor_sizes(*out)[k];
      g.self_strides[k] = opd_tensor_strides(self)[k];
    }
  }
  int dev = opd__cuda_dev_of(self), bad = 0;
  if (!(rc = opd__cuda_flag_new(dev, &g.error))) {
    rc = opd__cuda_launch_gather(dev, &g);
    int rc2 = opd__cuda_flag_take(dev, g.error, &bad);
    if (!rc) rc = rc2;
    if (!rc && bad) rc = opd_error(OPD_EINDEX, "index out of range in self");
  }
  if (rc) opd_tensor_release(*out);
  return rc;
}

int opd__cuda_cat(const opd_kernel_ctx *ctx, opd_tensor_list tensors, int64_t dim,
                  opd_tensor **out) {
  (void)ctx;
  int64_t d;
  int rc = opd__cat_alloc(tensors, dim, &d, out);
  if (rc) return rc;
  const int64_t *os = opd_tensor_strides(*out);
  int64_t offset = 0;
  for (uint32_t i = 0; i < tensors.len && rc == 0; i++) {
    opd_tensor *t = tensors.data[i], *slice = NULL;
    if (opd__cat_skipped(t)) continue;
    rc = opd_tensor_view_of(*out, opd_tensor_sizes(t), os, t->ndim,
                            (*out)->storage_offset + offset * os[d], &slice);
    if (rc == 0) {
      rc = copy_on_device(slice, t);
      opd_tensor_release(slice);
    }
    offset += opd_tensor_sizes(t)[d];
  }
  if (rc) opd_tensor_release(*out);
  return rc;
}

/* composite_factory.c: the factories of the pointwise family, written with empty, fill_ and
 * _to_copy called through the dispatcher (so they work on every backend): empty_like,
 * zeros_like, ones_like, full_like, new_empty, new_zeros, new_ones, new_full, scalar_tensor,
 * lift_fresh, eye, the aten::to overloads (CompositeImplicitAutograd: self itself when
 * nothing changes, else _to_copy), and the in-place fills zero_ and fill_.Tensor. */
#include <string.h>

#include "kernel_util.h"
#include "loops.h"

/* c10::MemoryFormat */
enum { FORMAT_CONTIGUOUS, FORMAT_PRESERVE };

static int fill_scalar(opd_tensor *t, opd_scalar value) {
  static const opd_operator *op;
  opd_stack s;
  opd_stack_init(&s);
  int rc = OPD__PUSH_Tensor(&s, t);
  if (rc == 0) rc = OPD__PUSH_Scalar(&s, value);
  return opd__call_inplace(rc, &op, "aten::fill_.Scalar", &s);
}

/* *out, filled with value (or left as it is when value's tag is OPD_IV_NONE); released on
 * failure. */
static int then_fill(int rc, opd_scalar value, opd_tensor **out) {
  if (rc || value.tag == OPD_IV_NONE) return rc;
  if ((rc = fill_scalar(*out, value))) {
    opd_tensor_release(*out);
    *out = NULL;
  }
  return rc;
}

/* ATen's empty_like: self's dtype and device unless given; memory_format Preserve (the
 * default) keeps a dense self's strides and otherwise gives dense strides in self's
 * dimension order, as _to_copy does. */
static int empty_like(opd_tensor *self, opd_dtype dtype, int64_t layout, opd_device device,
                      opd_opt_bool pin_memory, int64_t memory_format, opd_tensor **out) {
  if (dtype == OPD_DTYPE_UNDEFINED) dtype = opd_tensor_dtype(self);
  if (device.type < 0) device = opd_tensor_device(self);
  if (memory_format < 0) memory_format = FORMAT_PRESERVE;
  opd_int_list size = {opd_tensor_sizes(self), self->ndim};
  if (memory_format != FORMAT_PRESERVE)
    return opd__call_empty(size, dtype, layout, device, pin_memory, memory_format, out);
  int64_t strides[OPD_MAX_DIMS];
  int rc = 0;
  if (opd__is_non_overlapping_and_dense(self))
    memcpy(strides, opd_tensor_strides(self), (size_t)self->ndim * sizeof *strides);
  else
    rc = opd__infer_dense_strides(opd_tensor_sizes(self), opd_tensor_strides(self), self->ndim,
                                  strides);
  return rc ? rc
            : opd__call_empty_strided(size, (opd_int_list){strides, self->ndim}, dtype, layout,
                                      device, pin_memory, out);
}

static const opd_scalar no_fill = {.tag = OPD_IV_NONE};

int opd__cea_empty_like(const opd_kernel_ctx *ctx, opd_tensor *self, opd_dtype dtype,
                        int64_t layout, opd_device device, opd_opt_bool pin_memory,
                        int64_t memory_format, opd_tensor **out) {
  (void)ctx;
  return empty_like(self, dtype, layout, device, pin_memory, memory_format, out);
}

int opd__cea_zeros_like(const opd_kernel_ctx *ctx, opd_tensor *self, opd_dtype dtype,
                        int64_t layout, opd_device device, opd_opt_bool pin_memory,
                        int64_t memory_format, opd_tensor **out) {
  (void)ctx;
  return then_fill(empty_like(self, dtype, layout, device, pin_memory, memory_format, out),
                   opd__scalar_int(0), out);
}

int opd__cea_ones_like(const opd_kernel_ctx *ctx, opd_tensor *self, opd_dtype dtype, int64_t layout,
                       opd_device device, opd_opt_bool pin_memory, int64_t memory_format,
                       opd_tensor **out) {
  (void)ctx;
  return then_fill(empty_like(self, dtype, layout, device, pin_memory, memory_format, out),
                   opd__scalar_int(1), out);
}

int opd__cea_full_like(const opd_kernel_ctx *ctx, opd_tensor *self, opd_scalar fill_value,
                       opd_dtype dtype, int64_t layout, opd_device device, opd_opt_bool pin_memory,
                       int64_t memory_format, opd_tensor **out) {
  (void)ctx;
  return then_fill(empty_like(self, dtype, layout, device, pin_memory, memory_format, out),
                   fill_value, out);
}

/* new_*: a contiguous tensor of `size` with self's dtype and device unless given. */
static int new_filled(opd_tensor *self, opd_int_list size, opd_scalar value, opd_dtype dtype,
                      int64_t layout, opd_device device, opd_opt_bool pin_memory,
                      opd_tensor **out) {
  if (dtype == OPD_DTYPE_UNDEFINED) dtype = opd_tensor_dtype(self);
  if (device.type < 0) device = opd_tensor_device(self);
  return then_fill(opd__call_empty(size, dtype, layout, device, pin_memory, -1, out), value, out);
}

int opd__cea_new_empty(const opd_kernel_ctx *ctx, opd_tensor *self, opd_int_list size,
                       opd_dtype dtype, int64_t layout, opd_device device, opd_opt_bool pin_memory,
                       opd_tensor **out) {
  (void)ctx;
  return new_filled(self, size, no_fill, dtype, layout, device, pin_memory, out);
}

int opd__cea_new_zeros(const opd_kernel_ctx *ctx, opd_tensor *self, opd_int_list size,
                       opd_dtype dtype, int64_t layout, opd_device device, opd_opt_bool pin_memory,
                       opd_tensor **out) {
  (void)ctx;
  return new_filled(self, size, opd__scalar_int(0), dtype, layout, device, pin_memory, out);
}

int opd__cea_new_ones(const opd_kernel_ctx *ctx, opd_tensor *self, opd_int_list size,
                      opd_dtype dtype, int64_t layout, opd_device device, opd_opt_bool pin_memory,
                      opd_tensor **out) {
  (void)ctx;
  return new_filled(self, size, opd__scalar_int(1), dtype, layout, device, pin_memory, out);
}

int opd__cea_new_full(const opd_kernel_ctx *ctx, opd_tensor *self, opd_int_list size,
                      opd_scalar fill_value, opd_dtype dtype, int64_t layout, opd_device device,
                      opd_opt_bool pin_memory, opd_tensor **out) {
  (void)ctx;
  return new_filled(self, size, fill_value, dtype, layout, device, pin_memory, out);
}

/* scalar_tensor: a 0-d tensor of the default dtype unless given */
int opd__cea_scalar_tensor(const opd_kernel_ctx *ctx, opd_scalar s, opd_dtype dtype, int64_t layout,
                           opd_device device, opd_opt_bool pin_memory, opd_tensor **out) {
  (void)ctx;
  return then_fill(
      opd__call_empty((opd_int_list){NULL, 0}, dtype, layout, device, pin_memory, -1, out), s, out);
}

/* lift_fresh is the identity outside functionalization */
int opd__cea_lift_fresh(const opd_kernel_ctx *ctx, opd_tensor *self, opd_tensor **out) {
  (void)ctx;
  opd_tensor_retain(self);
  *out = self;
  return 0;
}

/* ---- in-place fills ---- */

static int zero_(opd_tensor *self, opd_tensor **out) {
  int rc = fill_scalar(self, opd__scalar_int(0));
  if (rc) return rc;
  opd_tensor_retain(self);
  *out = self;
  return 0;
}

int opd__cpu_zero_(const opd_kernel_ctx *ctx, opd_tensor *self, opd_tensor **out) {
  (void)ctx;
  return zero_(self, out);
}

int opd__meta_zero_(const opd_kernel_ctx *ctx, opd_tensor *self, opd_tensor **out) {
  (void)ctx;
  return zero_(self, out);
}

/* The one element of a CPU tensor as a Scalar of its dtype's kind. */
static opd_scalar item(const opd_tensor *t) {
  const char *p = opd_tensor_data(t);
  union {
    float f32;
    double f64;
    int64_t i64;
    int32_t i32;
    int16_t i16;
    int8_t i8;
    uint8_t u8;
    uint16_t u16;
  } v;
  memcpy(&v, p, opd_dtype_size(opd_tensor_dtype(t)));
  switch (opd_tensor_dtype(t)) {
  case OPD_FLOAT32: return opd__scalar_double(v.f32);
  case OPD_FLOAT64: return opd__scalar_double(v.f64);
  case OPD_FLOAT16: return opd__scalar_double(opd_half_to_float(v.u16));
  case OPD_BFLOAT16: return opd__scalar_double(opd_bf16_to_float(v.u16));
  case OPD_INT64: return opd__scalar_int(v.i64);
  case OPD_INT32: return opd__scalar_int(v.i32);
  case OPD_INT16: return opd__scalar_int(v.i16);
  case OPD_INT8: return opd__scalar_int(v.i8);
  case OPD_UINT8: return opd__scalar_int(v.u8);
  default: return (opd_scalar){.tag = OPD_IV_BOOL, .u.b = v.u8 != 0};
  }
}

static int check_fill_value(opd_tensor *value) {
  if (value->ndim != 0)
    return opd_error(OPD_EINVAL,
                     "fill_ only supports 0-dimension value tensor but got tensor with %d "
                     "dimensions.",
                     value->ndim);
  return 0;
}

/* fill_.Tensor: fill_.Scalar with the value's element (a CPU value: its data is read here) */
int opd__cpu_fill__tensor(const opd_kernel_ctx *ctx, opd_tensor *self, opd_tensor *value,
                          opd_tensor **out) {
  (void)ctx;
  int rc = check_fill_value(value);
  if (rc) return rc;
  if (opd_tensor_device(value).type != OPD_DEVICE_CPU)
    return opd_error(OPD_ENOTIMPL, "fill_: the value tensor must be on the CPU here");
  if ((rc = fill_scalar(self, item(value)))) return rc;
  opd_tensor_retain(self);
  *out = self;
  return 0;
}

int opd__meta_fill__tensor(const opd_kernel_ctx *ctx, opd_tensor *self, opd_tensor *value,
                           opd_tensor **out) {
  (void)ctx;
  int rc = check_fill_value(value);
  if (rc) return rc;
  opd_tensor_bump_version(self);
  opd_tensor_retain(self);
  *out = self;
  return 0;
}

/* ---- aten::to (CompositeImplicitAutograd) ---- */

/* ATen's to_impl: self itself when dtype, device and memory format already are self's and no
 * copy is asked for, else _to_copy. */
static int to_impl(opd_tensor *self, opd_dtype dtype, int64_t layout, opd_device device,
                   opd_opt_bool pin_memory, bool non_blocking, bool copy, int64_t memory_format,
                   opd_tensor **out) {
  static const opd_operator *op;
  opd_device d = opd_tensor_device(self);
  bool same_device =
      device.type < 0 || (device.type == d.type && (device.index < 0 || device.index == d.index));
  bool same_format = memory_format < 0 || memory_format == FORMAT_PRESERVE ||
                     (memory_format == FORMAT_CONTIGUOUS && opd_tensor_is_contiguous(self));
  if (!copy && same_device && same_format &&
      (dtype == OPD_DTYPE_UNDEFINED || dtype == opd_tensor_dtype(self)) && layout <= 0) {
    opd_tensor_retain(self);
    *out = self;
    return 0;
  }
  opd_stack s;
  opd_stack_init(&s);
  int rc = OPD__PUSH_Tensor(&s, self);
  if (rc == 0) rc = OPD__PUSH_OptDType(&s, dtype);
  if (rc == 0) rc = OPD__PUSH_OptLayout(&s, layout);
  if (rc == 0) rc = OPD__PUSH_OptDevice(&s, device);
  if (rc == 0) rc = OPD__PUSH_OptBool(&s, pin_memory);
  if (rc == 0) rc = OPD__PUSH_Bool(&s, non_blocking);
  if (rc == 0) rc = OPD__PUSH_OptMemoryFormat(&s, memory_format);
  return opd__call_tensor(rc, &op, "aten::_to_copy", &s, out);
}

static const opd_opt_bool no_bool = {false, false};
static const opd_device no_device = {-1, -1};

int opd__cia_to_dtype(const opd_kernel_ctx *ctx, opd_tensor *self, opd_dtype dtype,
                      bool non_blocking, bool copy, int64_t memory_format, opd_tensor **out) {
  (void)ctx;
  return to_impl(self, dtype, -1, no_device, no_bool, non_blocking, copy, memory_format, out);
}

int opd__cia_to_dtype_layout(const opd_kernel_ctx *ctx, opd_tensor *self, opd_dtype dtype,
                             int64_t layout, opd_device device, opd_opt_bool pin_memory,
                             bool non_blocking, bool copy, int64_t memory_format,
                             opd_tensor **out) {
  (void)ctx;
  return to_impl(self, dtype, layout, device, pin_memory, non_blocking, copy, memory_format, out);
}

/* aten::to.device(Tensor(a) self, Device device, ScalarType dtype, bool non_blocking=False,
 * bool copy=False, MemoryFormat? memory_format=None) -> Tensor(a): boxed (no unboxed tag
 * holds a Device that is not optional) */
int opd__cia_to_device(const opd_kernel_ctx *ctx, opd_stack *stack) {
  (void)ctx;
  opd_ivalue *a = opd_stack_last(stack, 6);
  if (a[0].tag != OPD_IV_TENSOR || a[1].tag != OPD_IV_DEVICE || a[3].tag != OPD_IV_BOOL ||
      a[4].tag != OPD_IV_BOOL) {
    opd_stack_drop(stack, 6);
    return opd_error(OPD_EINVAL, "to.device: expected (Tensor, Device, ScalarType, bool, bool, "
                                 "MemoryFormat?) arguments");
  }
  opd_tensor *r = NULL;
  int rc = to_impl(a[0].u.t, OPD__FROM_OptDType(&a[2]), -1, a[1].u.device, no_bool, a[3].u.b,
                   a[4].u.b, OPD__FROM_OptMemoryFormat(&a[5]), &r);
  opd_stack_drop(stack, 6);
  return rc ? rc : opd_stack_push(stack, opd_iv_tensor_steal(r));
}

int opd__cia_to_other(const opd_kernel_ctx *ctx, opd_tensor *self, opd_tensor *other,
                      bool non_blocking, bool copy, int64_t memory_format, opd_tensor **out) {
  (void)ctx;
  return to_impl(self, opd_tensor_dtype(other), -1, opd_tensor_device(other), no_bool, non_blocking,
                 copy, memory_format, out);
}

/* ---- eye (CompositeExplicitAutograd): arange(n)[:, None] == arange(m), in dtype ---- */

static int arange_int64(int64_t n, opd_device device, opd_tensor **out) {
  static const opd_operator *op;
  opd_stack s;
  opd_stack_init(&s);
  int rc = OPD__PUSH_Scalar(&s, opd__scalar_int(n));
  if (rc == 0) rc = OPD__PUSH_OptDType(&s, OPD_INT64);
  if (rc == 0) rc = OPD__PUSH_OptLayout(&s, -1);
  if (rc == 0) rc = OPD__PUSH_OptDevice(&s, device);
  if (rc == 0) rc = OPD__PUSH_OptBool(&s, no_bool);
  return opd__call_tensor(rc, &op, "aten::arange", &s, out);
}

int opd__cea_eye_m(const opd_kernel_ctx *ctx, int64_t n, int64_t m, opd_dtype dtype, int64_t layout,
                   opd_device device, opd_opt_bool pin_memory, opd_tensor **out) {
  (void)ctx;
  (void)pin_memory;
  static const opd_operator *unsqueeze_op, *eq_op;
  if (n < 0)
    return opd_error(OPD_EINVAL, "n must be greater or equal to 0, got %lld", (long long)n);
  if (m < 0)
    return opd_error(OPD_EINVAL, "m must be greater or equal to 0, got %lld", (long long)m);
  if (layout > 0) return opd_error(OPD_EINVAL, "eye: only the strided layout is supported");
  if (dtype == OPD_DTYPE_UNDEFINED) dtype = OPD_DEFAULT_DTYPE;
  opd_tensor *rows = NULL, *cols = NULL, *col = NULL, *eq = NULL;
  int rc = arange_int64(n, device, &rows);
  if (rc == 0) rc = arange_int64(m, device, &cols);
  opd_stack s;
  if (rc == 0) {
    opd_stack_init(&s);
    rc = OPD__PUSH_Tensor(&s, rows);
    if (rc == 0) rc = OPD__PUSH_Int(&s, 1);
    rc = opd__call_tensor(rc, &unsqueeze_op, "aten::unsqueeze", &s, &col);
  }
  if (rc == 0) {
    opd_stack_init(&s);
    rc = OPD__PUSH_Tensor(&s, col);
    if (rc == 0) rc = OPD__PUSH_Tensor(&s, cols);
    rc = opd__call_tensor(rc, &eq_op, "aten::eq.Tensor", &s, &eq);
  }
  if (rc == 0 && dtype == OPD_BOOL) {
    *out = eq;
    eq = NULL;
  } else if (rc == 0) {
    rc = to_impl(eq, dtype, -1, no_device, no_bool, false, false, -1, out);
  }
  if (rows) opd_tensor_release(rows);
  if (cols) opd_tensor_release(cols);
  if (col) opd_tensor_release(col);
  if (eq) opd_tensor_release(eq);
  return rc;
}

int opd__cea_eye(const opd_kernel_ctx *ctx, int64_t n, opd_dtype dtype, int64_t layout,
                 opd_device device, opd_opt_bool pin_memory, opd_tensor **out) {
  return opd__cea_eye_m(ctx, n, n, dtype, layout, device, pin_memory, out);
}

/* ---- linspace and logspace (CompositeExplicitAutograd) ---- */

/* Calls `name` with args (borrowed tensors, scalars, None) and takes the Tensor it returns. */
static int call(const opd_operator **cache, const char *name, const opd_ivalue *args, int n,
                opd_tensor **out) {
  opd_stack s;
  opd_stack_init(&s);
  int rc = 0;
  for (int i = 0; i < n && rc == 0; i++) rc = opd_stack_push(&s, args[i]);
  return opd__call_tensor(rc, cache, name, &s, out);
}

/* ATen's linspace kernel, as operators on a computing dtype c (the dtype, or float64 for
 * integers): with step = (end - start) / (steps - 1), element i < steps / 2 is start + step *
 * i and the others end - step * (steps - 1 - i), so that both ends are exact. */
static int linspace_values(opd_scalar start, opd_scalar end, int64_t steps, opd_dtype c,
                           opd_device device, opd_tensor **out) {
  static const opd_operator *arange_op, *mul_op, *add_op, *rsub_op, *lt_op, *where_op;
  double s = opd__scalar_to_double(start), e = opd__scalar_to_double(end);
  /* the step in the computing type, as the kernel computes it */
  double step = c == OPD_FLOAT32 ? (double)(((float)e - (float)s) / (float)(steps - 1))
                                 : (e - s) / (double)(steps - 1);
  opd_tensor *idx = NULL, *lo = NULL, *lo2 = NULL, *rev = NULL, *hi = NULL, *hi2 = NULL,
             *mask = NULL;
  opd_ivalue arange_args[] = {opd_iv_scalar(opd__scalar_int(steps)), opd_iv_dtype(c), opd_iv_none(),
                              device.type < 0 ? opd_iv_none() : opd_iv_device(device),
                              opd_iv_none()};
  int rc = call(&arange_op, "aten::arange", arange_args, 5, &idx);
  if (rc == 0) {
    opd_ivalue a[] = {opd_iv_tensor_borrow(idx), opd_iv_double(step)};
    rc = call(&mul_op, "aten::mul.Scalar", a, 2, &lo);
  }
  if (rc == 0) {
    opd_ivalue a[] = {opd_iv_tensor_borrow(lo), opd_iv_double(s), opd_iv_int(1)};
    rc = call(&add_op, "aten::add.Scalar", a, 3, &lo2);
  }
  if (rc == 0) { /* steps - 1 - i */
    opd_ivalue a[] = {opd_iv_tensor_borrow(idx), opd_iv_int(steps - 1), opd_iv_int(1)};
    rc = call(&rsub_op, "aten::rsub.Scalar", a, 3, &rev);
  }
  if (rc == 0) {
    opd_ivalue a[] = {opd_iv_tensor_borrow(rev), opd_iv_double(step)};
    rc = call(&mul_op, "aten::mul.Scalar", a, 2, &hi);
  }
  if (rc == 0) {
    opd_ivalue a[] = {opd_iv_tensor_borrow(hi), opd_iv_double(e), opd_iv_int(1)};
    rc = call(&rsub_op, "aten::rsub.Scalar", a, 3, &hi2);
  }
  if (rc == 0) {
    opd_ivalue a[] = {opd_iv_tensor_borrow(idx), opd_iv_int(steps / 2)};
    rc = call(&lt_op, "aten::lt.Scalar", a, 2, &mask);
  }
  if (rc == 0) {
    opd_ivalue a[] = {opd_iv_tensor_borrow(mask), opd_iv_tensor_borrow(lo2),
                      opd_iv_tensor_borrow(hi2)};
    rc = call(&where_op, "aten::where.self", a, 3, out);
  }
  opd_tensor *all[] = {idx, lo, lo2, rev, hi, hi2, mask};
  for (size_t k = 0; k < sizeof all / sizeof *all; k++)
    if (all[k]) opd_tensor_release(all[k]);
  return rc;
}

/* linspace or logspace (base^linspace) of `steps` values in dtype (float32 by default). */
static int spaced(opd_scalar start, opd_scalar end, int64_t steps, const double *base,
                  opd_dtype dtype, int64_t layout, opd_device device, opd_opt_bool pin_memory,
                  opd_tensor **out) {
  static const opd_operator *pow_op;
  if (steps < 0) return opd_error(OPD_EINVAL, "number of steps must be non-negative");
  if (dtype == OPD_DTYPE_UNDEFINED) dtype = OPD_DEFAULT_DTYPE;
  opd_dtype c = opd_dtype_is_floating(dtype) ? opd__compute_dtype(dtype) : OPD_FLOAT64;
  if (steps <= 1) { /* empty, or the one value start (base^start) */
    double v = opd__scalar_to_double(start);
    opd_scalar value = base ? opd__scalar_double(pow(*base, v)) : start;
    return then_fill(
        opd__call_empty((opd_int_list){&steps, 1}, dtype, layout, device, pin_memory, -1, out),
        steps ? value : no_fill, out);
  }
  opd_tensor *v = NULL, *p = NULL;
  int rc = linspace_values(start, end, steps, c, device, &v);
  if (rc == 0 && base) {
    opd_ivalue a[] = {opd_iv_double(*base), opd_iv_tensor_borrow(v)};
    rc = call(&pow_op, "aten::pow.Scalar", a, 2, &p);
    opd_tensor_release(v);
    v = p;
  }
  if (rc) return rc;
  if (opd_tensor_dtype(v) == dtype) {
    *out = v;
    return 0;
  }
  rc = to_impl(v, dtype, -1, no_device, no_bool, false, false, -1, out);
  opd_tensor_release(v);
  return rc;
}

int opd__cea_linspace(const opd_kernel_ctx *ctx, opd_scalar start, opd_scalar end, int64_t steps,
                      opd_dtype dtype, int64_t layout, opd_device device, opd_opt_bool pin_memory,
                      opd_tensor **out) {
  (void)ctx;
  return spaced(start, end, steps, NULL, dtype, layout, device, pin_memory, out);
}

int opd__cea_logspace(const opd_kernel_ctx *ctx, opd_scalar start, opd_scalar end, int64_t steps,
                      double base, opd_dtype dtype, int64_t layout, opd_device device,
                      opd_opt_bool pin_memory, opd_tensor **out) {
  (void)ctx;
  return spaced(start, end, steps, &base, dtype, layout, device, pin_memory, out);
}

/* composite_pointwise.c: the pointwise operators written in terms of other operators,
 * called through the dispatcher: the Scalar overloads (sub.Scalar, div.Scalar, fmod.Scalar,
 * bitwise_and.Scalar, ...: the Tensor overload with the scalar in a 0-d tensor), rsub,
 * floor_divide, square, the logical operators, isinf, isfinite, the where overloads with
 * scalars, and the in-place variants of the operators kernels/cpu/elementwise_*.c computes
 * (exp_, mul_, div_, clamp_, ...), and the functional forms of copy_ and fill_ (copy;
 * fill.Scalar, fill.Tensor: a clone of self, strides kept, filled in place).
 *
 * [Note: In-place variants through the functional operator]
 * exp_, mul_.Tensor, div_.Tensor and the other in-place variants of operators whose
 * functional kernels live elsewhere compute the functional operator into a new tensor and
 * copy it into self (aten::copy_), after PyTorch's checks of an in-place result: its dtype
 * must cast to self's and its shape must be self's (opd__pointwise_inplace_meta). The same kernel
 * serves the CPU and Meta keys PyTorch registers them at (opd__cpu_X and opd__meta_X), as the
 * operators it calls dispatch on the tensors' device. add_.Tensor writes into self directly
 * through add.out. The operators of OPD__POINTWISE_UNARY_OPS and OPD__POINTWISE_BINARY_OPS have
 * in-place kernels of their own (kernels/cpu/pointwise_*.c) that write self without a temporary.
 */
#include <math.h>
#include <string.h>

#include "kernel_util.h"
#include "loops.h"
#include "meta/elementwise_meta.h"
#include "meta/pointwise_meta.h"

#define TV(t) opd_iv_tensor_borrow(t)
#define SV(s) opd_iv_scalar(s)

/* Calls `name` with args (borrowed tensors, scalars, None) and takes the Tensor it returns. */
static int call(const opd_operator **cache, const char *name, const opd_ivalue *args, int n,
                opd_tensor **out) {
  opd_stack s;
  opd_stack_init(&s);
  int rc = 0;
  for (int i = 0; i < n && rc == 0; i++) rc = opd_stack_push(&s, args[i]);
  return opd__call_tensor(rc, cache, name, &s, out);
}

/* A 0-d tensor of `dtype` on like's device holding value, converted as TensorIterator
 * converts a wrapped number (see wrapped_scalar in composite_elementwise.c: the tensor gets
 * the dtype the operation results in, so that it promotes as the wrapped number would). */
static int scalar_tensor(opd_tensor *like, opd_scalar value, opd_dtype dtype, opd_tensor **out) {
  static const opd_operator *fill_op;
  opd_tensor *t = NULL, *r = NULL;
  int rc = opd__call_empty((opd_int_list){NULL, 0}, dtype, -1, opd_tensor_device(like),
                           (opd_opt_bool){false, false}, -1, &t);
  if (rc) return rc;
  opd_ivalue args[] = {TV(t), SV(opd__value_scalar(opd__scalar_cast(value, dtype), dtype))};
  rc = call(&fill_op, "aten::fill_.Scalar", args, 2, &r);
  if (r) opd_tensor_release(r);
  if (rc) {
    opd_tensor_release(t);
    return rc;
  }
  *out = t;
  return 0;
}

/* The dtype of `like` with a wrapped number of value's kind. */
static opd_dtype with_scalar_dtype(opd_tensor *like, opd_scalar value) {
  opd_dtype kind = opd__scalar_kind(value);
  return opd__pointwise_promote(&like, 1, &kind, 1);
}

/* name(self, other as a 0-d tensor, extra...) (swap: name(other, self, extra...)). */
static int call_with_scalar(const opd_operator **cache, const char *name, opd_tensor *self,
                            opd_scalar other, bool swap, const opd_ivalue *extra, int nextra,
                            opd_tensor **out) {
  opd_tensor *t = NULL;
  int rc = scalar_tensor(self, other, with_scalar_dtype(self, other), &t);
  if (rc) return rc;
  opd_ivalue args[4] = {TV(swap ? t : self), TV(swap ? self : t)};
  for (int i = 0; i < nextra; i++) args[2 + i] = extra[i];
  rc = call(cache, name, args, 2 + nextra, out);
  opd_tensor_release(t);
  return rc;
}

/* self = *r, per [Note: In-place variants through the functional operator]; releases *r. rc
 * is the status of the call that made *r. */
static int assign(opd_tensor *self, int rc, opd_tensor **rp, opd_tensor **out) {
  if (rc) return rc;
  opd_tensor *r = *rp;
  opd_out_spec spec = {.ndim = r->ndim, .dtype = opd_tensor_dtype(r)};
  memcpy(spec.sizes, opd_tensor_sizes(r), (size_t)r->ndim * sizeof *spec.sizes);
  rc = opd__pointwise_inplace_meta(self, NULL, 0, &spec);
  if (rc == 0) rc = opd__call_copy_(self, r, false);
  opd_tensor_release(r);
  if (rc) return rc;
  opd_tensor_retain(self);
  *out = self;
  return 0;
}

/* ---- in-place variants of unary operators ---- */

#define INPLACE_UNARY_BODY(name)  \
  static const opd_operator *op;  \
  opd_tensor *r = NULL;           \
  opd_ivalue args[] = {TV(self)}; \
  return assign(self, call(&op, "aten::" #name, args, 1, &r), &r, out);
#define INPLACE_UNARY(name)                                                                \
  static int name##_inplace(opd_tensor *self, opd_tensor **out) {                          \
    INPLACE_UNARY_BODY(name)                                                               \
  }                                                                                        \
  int opd__cpu_##name##_(const opd_kernel_ctx *ctx, opd_tensor *self, opd_tensor **out) {  \
    (void)ctx;                                                                             \
    return name##_inplace(self, out);                                                      \
  }                                                                                        \
  int opd__meta_##name##_(const opd_kernel_ctx *ctx, opd_tensor *self, opd_tensor **out) { \
    (void)ctx;                                                                             \
    return name##_inplace(self, out);                                                      \
  }
INPLACE_UNARY(exp)
INPLACE_UNARY(log)
INPLACE_UNARY(sqrt)
INPLACE_UNARY(rsqrt)
INPLACE_UNARY(sigmoid)
INPLACE_UNARY(tanh)
INPLACE_UNARY(sin)
INPLACE_UNARY(cos)
INPLACE_UNARY(neg)
INPLACE_UNARY(relu)

/* abs_ is CompositeExplicitAutograd in PyTorch (bool refused here for Meta tensors, whose
 * abs takes any dtype) */
int opd__cea_abs_(const opd_kernel_ctx *ctx, opd_tensor *self, opd_tensor **out) {
  (void)ctx;
  if (opd_tensor_dtype(self) == OPD_BOOL)
    return opd_error(OPD_EINVAL, "\"abs_cpu\" not implemented for 'Bool'");
  INPLACE_UNARY_BODY(abs)
}

/* ---- in-place variants of binary operators ---- */

/* The same kernel at CPU and Meta: fn_body(args) defines static name##_inplace. */
#define CPU_AND_META(name, params, args)                                     \
  int opd__cpu_##name(const opd_kernel_ctx *ctx, opd_tensor *self params) {  \
    (void)ctx;                                                               \
    return name##_impl(self args);                                           \
  }                                                                          \
  int opd__meta_##name(const opd_kernel_ctx *ctx, opd_tensor *self params) { \
    (void)ctx;                                                               \
    return name##_impl(self args);                                           \
  }
#define P(...) , __VA_ARGS__

static int mul__tensor_impl(opd_tensor *self, opd_tensor *other, opd_tensor **out) {
  static const opd_operator *op;
  opd_tensor *r = NULL;
  opd_ivalue args[] = {TV(self), TV(other)};
  return assign(self, call(&op, "aten::mul.Tensor", args, 2, &r), &r, out);
}
CPU_AND_META(mul__tensor, P(opd_tensor *other, opd_tensor **out), P(other, out))

static int sub__tensor_impl(opd_tensor *self, opd_tensor *other, opd_scalar alpha,
                            opd_tensor **out) {
  static const opd_operator *op;
  opd_tensor *r = NULL;
  opd_ivalue args[] = {TV(self), TV(other), SV(alpha)};
  return assign(self, call(&op, "aten::sub.Tensor", args, 3, &r), &r, out);
}
CPU_AND_META(sub__tensor, P(opd_tensor *other, opd_scalar alpha, opd_tensor **out),
             P(other, alpha, out))

static int div__tensor_impl(opd_tensor *self, opd_tensor *other, opd_tensor **out) {
  static const opd_operator *op;
  opd_tensor *r = NULL;
  opd_ivalue args[] = {TV(self), TV(other)};
  return assign(self, call(&op, "aten::div.Tensor", args, 2, &r), &r, out);
}
CPU_AND_META(div__tensor, P(opd_tensor *other, opd_tensor **out), P(other, out))

/* div.Tensor_mode(self, other, rounding_mode) */
static int div_mode(opd_tensor *self, opd_tensor *other, const char *rounding_mode,
                    opd_tensor **out) {
  static const opd_operator *op;
  opd_stack s;
  opd_stack_init(&s);
  int rc = OPD__PUSH_Tensor(&s, self);
  if (rc == 0) rc = OPD__PUSH_Tensor(&s, other);
  if (rc == 0) rc = OPD__PUSH_OptStr(&s, rounding_mode);
  return opd__call_tensor(rc, &op, "aten::div.Tensor_mode", &s, out);
}

static int div__tensor_mode_impl(opd_tensor *self, opd_tensor *other, const char *rounding_mode,
                                 opd_tensor **out) {
  opd_tensor *r = NULL;
  return assign(self, div_mode(self, other, rounding_mode, &r), &r, out);
}
CPU_AND_META(div__tensor_mode, P(opd_tensor *other, const char *rounding_mode, opd_tensor **out),
             P(other, rounding_mode, out))

/* floor_divide is div with rounding_mode 'floor' in ATen (bool refused here for Meta tensors,
 * whose div takes any dtype) */
static int floor_divide_impl(opd_tensor *self, opd_tensor *other, opd_tensor **out) {
  if (opd__pointwise_promote((opd_tensor *[]){self, other}, 2, NULL, 0) == OPD_BOOL)
    return opd_error(OPD_EINVAL, "\"div_floor_cpu\" not implemented for 'Bool'");
  return div_mode(self, other, "floor", out);
}
CPU_AND_META(floor_divide, P(opd_tensor *other, opd_tensor **out), P(other, out))

static int floor_divide__tensor_impl(opd_tensor *self, opd_tensor *other, opd_tensor **out) {
  opd_tensor *r = NULL;
  return assign(self, floor_divide_impl(self, other, &r), &r, out);
}
CPU_AND_META(floor_divide__tensor, P(opd_tensor *other, opd_tensor **out), P(other, out))

/* add_ writes self through add.out, after the in-place checks */
static int add__tensor_impl(opd_tensor *self, opd_tensor *other, opd_scalar alpha,
                            opd_tensor **out) {
  static const opd_operator *op;
  opd_out_spec spec;
  int rc = opd__add_meta(self, other, alpha, false, &spec);
  if (rc || (rc = opd__pointwise_inplace_meta(self, (opd_tensor *[]){self, other}, 2, &spec)))
    return rc;
  opd_ivalue args[] = {TV(self), TV(other), SV(alpha), TV(self)};
  return call(&op, "aten::add.out", args, 4, out);
}
CPU_AND_META(add__tensor, P(opd_tensor *other, opd_scalar alpha, opd_tensor **out),
             P(other, alpha, out))

static int pow__scalar_impl(opd_tensor *self, opd_scalar exponent, opd_tensor **out) {
  static const opd_operator *op;
  opd_tensor *r = NULL;
  opd_ivalue args[] = {TV(self), SV(exponent)};
  return assign(self, call(&op, "aten::pow.Tensor_Scalar", args, 2, &r), &r, out);
}
CPU_AND_META(pow__scalar, P(opd_scalar exponent, opd_tensor **out), P(exponent, out))

static opd_ivalue opt_scalar(opd_scalar s) {
  return s.tag == OPD_IV_NONE ? opd_iv_none() : opd_iv_scalar(s);
}

static int clamp__impl(opd_tensor *self, opd_scalar min, opd_scalar max, opd_tensor **out) {
  static const opd_operator *op;
  opd_tensor *r = NULL;
  opd_ivalue args[] = {TV(self), opt_scalar(min), opt_scalar(max)};
  return assign(self, call(&op, "aten::clamp", args, 3, &r), &r, out);
}
CPU_AND_META(clamp_, P(opd_scalar min, opd_scalar max, opd_tensor **out), P(min, max, out))

/* rsub.Tensor: other - alpha * self */
static int rsub_tensor_impl(opd_tensor *self, opd_tensor *other, opd_scalar alpha,
                            opd_tensor **out) {
  static const opd_operator *op;
  opd_ivalue args[] = {TV(other), TV(self), SV(alpha)};
  return call(&op, "aten::sub.Tensor", args, 3, out);
}
CPU_AND_META(rsub_tensor, P(opd_tensor *other, opd_scalar alpha, opd_tensor **out),
             P(other, alpha, out))

/* pow.Scalar and remainder.Scalar_Tensor: a Scalar self */
static int pow_scalar_impl(opd_tensor *exponent, opd_scalar self, opd_tensor **out) {
  static const opd_operator *op;
  return call_with_scalar(&op, "aten::pow.Tensor_Tensor", exponent, self, true, NULL, 0, out);
}
int opd__cpu_pow_scalar(const opd_kernel_ctx *ctx, opd_scalar self, opd_tensor *exponent,
                        opd_tensor **out) {
  (void)ctx;
  return pow_scalar_impl(exponent, self, out);
}
int opd__meta_pow_scalar(const opd_kernel_ctx *ctx, opd_scalar self, opd_tensor *exponent,
                         opd_tensor **out) {
  (void)ctx;
  return pow_scalar_impl(exponent, self, out);
}

static int remainder_scalar_tensor_impl(opd_tensor *other, opd_scalar self, opd_tensor **out) {
  static const opd_operator *op;
  return call_with_scalar(&op, "aten::remainder.Tensor", other, self, true, NULL, 0, out);
}
int opd__cpu_remainder_scalar_tensor(const opd_kernel_ctx *ctx, opd_scalar self, opd_tensor *other,
                                     opd_tensor **out) {
  (void)ctx;
  return remainder_scalar_tensor_impl(other, self, out);
}
int opd__meta_remainder_scalar_tensor(const opd_kernel_ctx *ctx, opd_scalar self, opd_tensor *other,
                                      opd_tensor **out) {
  (void)ctx;
  return remainder_scalar_tensor_impl(other, self, out);
}

/* ---- Scalar overloads (CompositeExplicitAutograd) ---- */

/* opd__cea_NAME(self, other): aten_op(self, other as a 0-d tensor) */
#define SCALAR_OVERLOAD(name, aten_op)                                               \
  int opd__cea_##name(const opd_kernel_ctx *ctx, opd_tensor *self, opd_scalar other, \
                      opd_tensor **out) {                                            \
    (void)ctx;                                                                       \
    static const opd_operator *op;                                                   \
    return call_with_scalar(&op, aten_op, self, other, false, NULL, 0, out);         \
  }
SCALAR_OVERLOAD(div_scalar, "aten::div.Tensor")
SCALAR_OVERLOAD(fmod_scalar, "aten::fmod.Tensor")
SCALAR_OVERLOAD(remainder_scalar, "aten::remainder.Tensor")
SCALAR_OVERLOAD(copysign_scalar, "aten::copysign.Tensor")
SCALAR_OVERLOAD(xlogy_scalar_other, "aten::xlogy.Tensor")
SCALAR_OVERLOAD(bitwise_and_scalar, "aten::bitwise_and.Tensor")
SCALAR_OVERLOAD(bitwise_or_scalar, "aten::bitwise_or.Tensor")
SCALAR_OVERLOAD(bitwise_xor_scalar, "aten::bitwise_xor.Tensor")
SCALAR_OVERLOAD(mul__scalar, "aten::mul_.Tensor")
SCALAR_OVERLOAD(div__scalar, "aten::div_.Tensor")
SCALAR_OVERLOAD(fmod__scalar, "aten::fmod_.Tensor")
SCALAR_OVERLOAD(remainder__scalar, "aten::remainder_.Tensor")

/* floor_divide.Scalar is CompositeImplicitAutograd */
int opd__cia_floor_divide_scalar(const opd_kernel_ctx *ctx, opd_tensor *self, opd_scalar other,
                                 opd_tensor **out) {
  (void)ctx;
  static const opd_operator *op;
  return call_with_scalar(&op, "aten::floor_divide", self, other, false, NULL, 0, out);
}

int opd__cea_xlogy_scalar_self(const opd_kernel_ctx *ctx, opd_scalar self, opd_tensor *other,
                               opd_tensor **out) {
  (void)ctx;
  static const opd_operator *op;
  return call_with_scalar(&op, "aten::xlogy.Tensor", other, self, true, NULL, 0, out);
}

/* sub.Scalar / add_.Scalar / sub_.Scalar (alpha), rsub.Scalar (other - alpha * self) */
#define SCALAR_ALPHA_OVERLOAD(name, aten_op, swap)                                   \
  int opd__cea_##name(const opd_kernel_ctx *ctx, opd_tensor *self, opd_scalar other, \
                      opd_scalar alpha, opd_tensor **out) {                          \
    (void)ctx;                                                                       \
    static const opd_operator *op;                                                   \
    opd_ivalue extra[] = {SV(alpha)};                                                \
    return call_with_scalar(&op, aten_op, self, other, swap, extra, 1, out);         \
  }
SCALAR_ALPHA_OVERLOAD(sub_scalar, "aten::sub.Tensor", false)
SCALAR_ALPHA_OVERLOAD(rsub_scalar, "aten::sub.Tensor", true)
SCALAR_ALPHA_OVERLOAD(add__scalar, "aten::add_.Tensor", false)
SCALAR_ALPHA_OVERLOAD(sub__scalar, "aten::sub_.Tensor", false)

int opd__cea_div_scalar_mode(const opd_kernel_ctx *ctx, opd_tensor *self, opd_scalar other,
                             const char *rounding_mode, opd_tensor **out) {
  (void)ctx;
  opd_tensor *t = NULL;
  int rc = scalar_tensor(self, other, with_scalar_dtype(self, other), &t);
  if (rc) return rc;
  rc = div_mode(self, t, rounding_mode, out);
  opd_tensor_release(t);
  return rc;
}

/* ---- CompositeImplicitAutograd and CompositeExplicitAutograd predicates ---- */

/* square is pow(self, 2) (bool gives int64, as the exponent promotes it) */
int opd__cia_square(const opd_kernel_ctx *ctx, opd_tensor *self, opd_tensor **out) {
  (void)ctx;
  static const opd_operator *op;
  opd_ivalue args[] = {TV(self), SV(opd__scalar_int(2))};
  return call(&op, "aten::pow.Tensor_Scalar", args, 2, out);
}

static int ne_zero(opd_tensor *self, opd_tensor **out) {
  static const opd_operator *op;
  opd_ivalue args[] = {TV(self), SV(opd__scalar_int(0))};
  return call(&op, "aten::ne.Scalar", args, 2, out);
}

/* logical_not is self == 0 (NaN is true, so its negation false) */
int opd__cea_logical_not(const opd_kernel_ctx *ctx, opd_tensor *self, opd_tensor **out) {
  (void)ctx;
  static const opd_operator *op;
  opd_ivalue args[] = {TV(self), SV(opd__scalar_int(0))};
  return call(&op, "aten::eq.Scalar", args, 2, out);
}

/* logical_and / or / xor: a bitwise operator (xor: ne) on both operands' truth */
static int logical(const opd_operator **cache, const char *name, opd_tensor *self,
                   opd_tensor *other, opd_tensor **out) {
  opd_tensor *a = NULL, *b = NULL;
  int rc = ne_zero(self, &a);
  if (rc == 0) rc = ne_zero(other, &b);
  if (rc == 0) {
    opd_ivalue args[] = {TV(a), TV(b)};
    rc = call(cache, name, args, 2, out);
  }
  if (a) opd_tensor_release(a);
  if (b) opd_tensor_release(b);
  return rc;
}

int opd__cea_logical_and(const opd_kernel_ctx *ctx, opd_tensor *self, opd_tensor *other,
                         opd_tensor **out) {
  (void)ctx;
  static const opd_operator *op;
  return logical(&op, "aten::bitwise_and.Tensor", self, other, out);
}

int opd__cea_logical_or(const opd_kernel_ctx *ctx, opd_tensor *self, opd_tensor *other,
                        opd_tensor **out) {
  (void)ctx;
  static const opd_operator *op;
  return logical(&op, "aten::bitwise_or.Tensor", self, other, out);
}

int opd__cea_logical_xor(const opd_kernel_ctx *ctx, opd_tensor *self, opd_tensor *other,
                         opd_tensor **out) {
  (void)ctx;
  static const opd_operator *op;
  return logical(&op, "aten::ne.Tensor", self, other, out);
}

/* isinf: |self| == inf; no integer is infinite (nor NaN: isnan gives their all-false) */
int opd__cea_isinf(const opd_kernel_ctx *ctx, opd_tensor *self, opd_tensor **out) {
  (void)ctx;
  static const opd_operator *abs_op, *eq_op, *isnan_op;
  opd_ivalue arg[] = {TV(self)};
  if (!opd_dtype_is_floating(opd_tensor_dtype(self)))
    return call(&isnan_op, "aten::isnan", arg, 1, out);
  opd_tensor *a = NULL;
  int rc = call(&abs_op, "aten::abs", arg, 1, &a);
  if (rc) return rc;
  opd_ivalue args[] = {TV(a), SV(opd__scalar_double(INFINITY))};
  rc = call(&eq_op, "aten::eq.Scalar", args, 2, out);
  opd_tensor_release(a);
  return rc;
}

/* isfinite: self - self == 0 (NaN for infinities and NaN); integers are all finite */
int opd__cia_isfinite(const opd_kernel_ctx *ctx, opd_tensor *self, opd_tensor **out) {
  (void)ctx;
  static const opd_operator *sub_op, *eq_op, *not_op, *isnan_op;
  opd_tensor *d = NULL;
  int rc;
  if (!opd_dtype_is_floating(opd_tensor_dtype(self))) {
    opd_ivalue arg[] = {TV(self)};
    if ((rc = call(&isnan_op, "aten::isnan", arg, 1, &d))) return rc;
    opd_ivalue args[] = {TV(d)};
    rc = call(&not_op, "aten::logical_not", args, 1, out);
  } else {
    opd_ivalue sub_args[] = {TV(self), TV(self), SV(opd__scalar_int(1))};
    if ((rc = call(&sub_op, "aten::sub.Tensor", sub_args, 3, &d))) return rc;
    opd_ivalue args[] = {TV(d), SV(opd__scalar_int(0))};
    rc = call(&eq_op, "aten::eq.Scalar", args, 2, out);
  }
  opd_tensor_release(d);
  return rc;
}

/* ---- where with scalars (CompositeImplicitAutograd): where.self on 0-d tensors ---- */

/* where's scalars become tensors as c10's scalar_to_tensor makes them: a bool is an int64 */
static opd_scalar where_scalar(opd_scalar s) {
  return s.tag == OPD_IV_BOOL ? opd__scalar_int(s.u.b) : s;
}

static int where3(opd_tensor *condition, opd_tensor *self, opd_tensor *other, opd_tensor **out) {
  static const opd_operator *op;
  opd_ivalue args[] = {TV(condition), TV(self), TV(other)};
  return call(&op, "aten::where.self", args, 3, out);
}

int opd__cia_where_scalarother(const opd_kernel_ctx *ctx, opd_tensor *condition, opd_tensor *self,
                               opd_scalar other, opd_tensor **out) {
  (void)ctx;
  other = where_scalar(other);
  opd_tensor *t = NULL;
  int rc = scalar_tensor(self, other, with_scalar_dtype(self, other), &t);
  if (rc) return rc;
  rc = where3(condition, self, t, out);
  opd_tensor_release(t);
  return rc;
}

int opd__cia_where_scalarself(const opd_kernel_ctx *ctx, opd_tensor *condition, opd_scalar self,
                              opd_tensor *other, opd_tensor **out) {
  (void)ctx;
  self = where_scalar(self);
  opd_tensor *t = NULL;
  int rc = scalar_tensor(other, self, with_scalar_dtype(other, self), &t);
  if (rc) return rc;
  rc = where3(condition, t, other, out);
  opd_tensor_release(t);
  return rc;
}

int opd__cia_where_scalar(const opd_kernel_ctx *ctx, opd_tensor *condition, opd_scalar self,
                          opd_scalar other, opd_tensor **out) {
  (void)ctx;
  self = where_scalar(self);
  other = where_scalar(other);
  opd_dtype kinds[2] = {opd__scalar_kind(self), opd__scalar_kind(other)};
  opd_dtype dtype = opd__pointwise_promote(NULL, 0, kinds, 2);
  opd_tensor *a = NULL, *b = NULL;
  int rc = scalar_tensor(condition, self, dtype, &a);
  if (rc == 0) rc = scalar_tensor(condition, other, dtype, &b);
  if (rc == 0) rc = where3(condition, a, b, out);
  if (a) opd_tensor_release(a);
  if (b) opd_tensor_release(b);
  return rc;
}

/* ---- functional copy and fill ---- */

/* clone(self): a new tensor with self's strides and values */
static int clone_of(opd_tensor *self, opd_tensor **out) {
  static const opd_operator *clone_op;
  opd_ivalue args[] = {TV(self), opd_iv_none()};
  return call(&clone_op, "aten::clone", args, 2, out);
}

/* The in-place `name` on a clone of self with `value`, the clone its result. */
static int on_clone(const opd_operator **cache, const char *name, opd_tensor *self,
                    opd_ivalue value, opd_tensor **out) {
  opd_tensor *c = NULL, *r = NULL;
  int rc = clone_of(self, &c);
  if (rc) return rc;
  opd_ivalue args[] = {TV(c), value};
  rc = call(cache, name, args, 2, &r);
  if (r) opd_tensor_release(r);
  if (rc) {
    opd_tensor_release(c);
    return rc;
  }
  *out = c;
  return 0;
}

/* copy(self, src, non_blocking=False) (CompositeImplicitAutograd), as PyTorch 1.13 writes it:
 * src converted to self's dtype and device (src itself when they are its own), then, when
 * self's shape is not src's, expanded to it and copied into a contiguous tensor. */
int opd__cia_copy(const opd_kernel_ctx *ctx, opd_tensor *self, opd_tensor *src, bool non_blocking,
                  opd_tensor **out) {
  (void)ctx;
  static const opd_operator *to_op, *expand_op, *clone_op;
  opd_tensor *r = NULL;
  int rc = 0;
  opd_device sd = opd_tensor_device(self), rd = opd_tensor_device(src);
  if (opd_tensor_dtype(src) == opd_tensor_dtype(self) && sd.type == rd.type &&
      sd.index == rd.index) {
    opd_tensor_retain(r = src);
  } else {
    opd_ivalue args[] = {TV(src),       opd_iv_dtype(opd_tensor_dtype(self)),
                         opd_iv_none(), opd_iv_device(sd),
                         opd_iv_none(), opd_iv_bool(non_blocking),
                         opd_iv_none()};
    rc = call(&to_op, "aten::_to_copy", args, 7, &r);
  }
  if (rc || (self->ndim == r->ndim && memcmp(opd_tensor_sizes(self), opd_tensor_sizes(r),
                                             (size_t)self->ndim * sizeof(int64_t)) == 0)) {
    if (rc == 0) *out = r;
    return rc;
  }
  opd_tensor *e = NULL;
  opd_stack s;
  opd_stack_init(&s);
  rc = OPD__PUSH_Tensor(&s, r);
  if (rc == 0) rc = OPD__PUSH_IntList(&s, ((opd_int_list){opd_tensor_sizes(self), self->ndim}));
  if (rc == 0) rc = OPD__PUSH_Bool(&s, false);
  rc = opd__call_tensor(rc, &expand_op, "aten::expand", &s, &e);
  opd_tensor_release(r);
  if (rc) return rc;
  opd_ivalue cargs[] = {TV(e), opd_iv_int(0)}; /* MemoryFormat contiguous */
  rc = call(&clone_op, "aten::clone", cargs, 2, out);
  opd_tensor_release(e);
  return rc;
}

/* fill.Scalar(self, value), fill.Tensor(self, value): empty_like(self).fill_(value) */
int opd__cea_fill_scalar(const opd_kernel_ctx *ctx, opd_tensor *self, opd_scalar value,
                         opd_tensor **out) {
  (void)ctx;
  static const opd_operator *op;
  return on_clone(&op, "aten::fill_.Scalar", self, SV(value), out);
}

int opd__cea_fill_tensor(const opd_kernel_ctx *ctx, opd_tensor *self, opd_tensor *value,
                         opd_tensor **out) {
  (void)ctx;
  static const opd_operator *op;
  return on_clone(&op, "aten::fill_.Tensor", self, TV(value), out);
}

/* composite_moments.c: the composite kernels over var / std, the norms and logsumexp, written
 * in terms of other operators called through the dispatcher (so they work on every backend),
 * as PyTorch 1.13 registers them:
 *   var, var.dim, std, std.dim (CompositeImplicitAutograd)
 *       = var.correction / std.correction(self, dim or None, correction = unbiased, keepdim)
 *   var_mean, var_mean.dim, std_mean, std_mean.dim (CompositeImplicitAutograd, boxed)
 *       = var_mean.correction / std_mean.correction likewise
 *   norm.Scalar, norm.ScalarOpt_dtype (CompositeExplicitAutograd)
 *       = norm.ScalarOpt_dim(self, p, [], False) / norm.ScalarOpt_dim_dtype(..., dtype)
 *   logsumexp (CompositeExplicitAutograd): PyTorch's formula, integers and bool computed in
 *       float32; m = amax(x, dim, keepdim=True) with infinite maxima replaced by 0, then
 *       log(sum(exp(x - m), dim, keepdim)) + m (an empty input: log(sum(exp(x)))).
 */
#include <assert.h>
#include <math.h>

#include "kernel_util.h"

/* Pushes each value while rc is 0; returns the first failure. */
static int push_all(int rc, opd_stack *s, const opd_ivalue *v, int n) {
  for (int i = 0; i < n && !rc; i++) rc = opd_stack_push(s, v[i]);
  return rc;
}

/* name(self, dim, correction=unbiased, keepdim) for var.correction / std.correction */
static int correction_call(const opd_operator **cache, const char *name, opd_tensor *self,
                           opd_int_list dim, bool unbiased, bool keepdim, opd_tensor **out) {
  opd_stack s;
  opd_stack_init(&s);
  int rc = opd_stack_push(&s, opd_iv_tensor_borrow(self));
  if (!rc) rc = opd__push_int_list(&s, dim);
  opd_ivalue rest[] = {opd_iv_int(unbiased ? 1 : 0), opd_iv_bool(keepdim)};
  rc = push_all(rc, &s, rest, 2);
  return opd__call_tensor(rc, cache, name, &s, out);
}

int opd__cia_var(const opd_kernel_ctx *ctx, opd_tensor *self, bool unbiased, opd_tensor **out) {
  (void)ctx;
  static const opd_operator *op;
  return correction_call(&op, "aten::var.correction", self, (opd_int_list){NULL, -1}, unbiased,
                         false, out);
}

int opd__cia_var_dim(const opd_kernel_ctx *ctx, opd_tensor *self, opd_int_list dim, bool unbiased,
                     bool keepdim, opd_tensor **out) {
  (void)ctx;
  static const opd_operator *op;
  return correction_call(&op, "aten::var.correction", self, dim, unbiased, keepdim, out);
}

int opd__cia_std(const opd_kernel_ctx *ctx, opd_tensor *self, bool unbiased, opd_tensor **out) {
  (void)ctx;
  static const opd_operator *op;
  return correction_call(&op, "aten::std.correction", self, (opd_int_list){NULL, -1}, unbiased,
                         false, out);
}

int opd__cia_std_dim(const opd_kernel_ctx *ctx, opd_tensor *self, opd_int_list dim, bool unbiased,
                     bool keepdim, opd_tensor **out) {
  (void)ctx;
  static const opd_operator *op;
  return correction_call(&op, "aten::std.correction", self, dim, unbiased, keepdim, out);
}

/* var_mean / std_mean (n = 2: self, unbiased) and their .dim forms (n = 4: self, dim, unbiased,
 * keepdim) on the stack: replaced by the two results of `name` (the .correction overload). */
static int mean_pair(opd_stack *stack, int n, const opd_operator **cache, const char *name) {
  assert(stack->size >= (uint32_t)n);
  opd_ivalue *args = opd_stack_last(stack, (uint32_t)n);
  opd_ivalue *unbiased = &args[n == 2 ? 1 : 2];
  if (args[0].tag != OPD_IV_TENSOR || unbiased->tag != OPD_IV_BOOL ||
      (n == 4 && args[3].tag != OPD_IV_BOOL)) {
    opd_stack_drop(stack, (uint32_t)n);
    return opd_error(OPD_EINVAL, "%s: expected (Tensor%s, bool%s)", name, n == 4 ? ", int[1]?" : "",
                     n == 4 ? ", bool" : "");
  }
  opd_stack s;
  opd_stack_init(&s);
  int rc = opd_stack_push(&s, opd_iv_tensor_borrow(args[0].u.t));
  if (!rc)
    rc = opd__push_int_list(&s, n == 4 ? opd__iv_int_list(&args[1]) : (opd_int_list){NULL, -1});
  opd_ivalue rest[] = {opd_iv_int(unbiased->u.b ? 1 : 0),
                       opd_iv_bool(n == 4 ? args[3].u.b : false)};
  rc = push_all(rc, &s, rest, 2);
  if (!rc) rc = opd__call(cache, name, &s);
  opd_stack_drop(stack, (uint32_t)n);
  if (!rc && (s.size != 2 || s.items[0].tag != OPD_IV_TENSOR || s.items[1].tag != OPD_IV_TENSOR))
    rc = opd_error(OPD_EINTERNAL, "%s did not return two tensors", name);
  if (!rc) rc = opd_stack_push(stack, opd_iv_tensor(s.items[0].u.t));
  if (!rc) {
    rc = opd_stack_push(stack, opd_iv_tensor(s.items[1].u.t));
    if (rc) opd_stack_drop(stack, 1);
  }
  opd_stack_destroy(&s);
  return rc;
}

int opd__cia_var_mean(const opd_kernel_ctx *ctx, opd_stack *stack) {
  (void)ctx;
  static const opd_operator *op;
  return mean_pair(stack, 2, &op, "aten::var_mean.correction");
}

int opd__cia_var_mean_dim(const opd_kernel_ctx *ctx, opd_stack *stack) {
  (void)ctx;
  static const opd_operator *op;
  return mean_pair(stack, 4, &op, "aten::var_mean.correction");
}

int opd__cia_std_mean(const opd_kernel_ctx *ctx, opd_stack *stack) {
  (void)ctx;
  static const opd_operator *op;
  return mean_pair(stack, 2, &op, "aten::std_mean.correction");
}

int opd__cia_std_mean_dim(const opd_kernel_ctx *ctx, opd_stack *stack) {
  (void)ctx;
  static const opd_operator *op;
  return mean_pair(stack, 4, &op, "aten::std_mean.correction");
}

int opd__cea_norm_scalar(const opd_kernel_ctx *ctx, opd_tensor *self, opd_scalar p,
                         opd_tensor **out) {
  (void)ctx;
  static const opd_operator *op;
  opd_stack s;
  opd_stack_init(&s);
  opd_ivalue args[] = {opd_iv_tensor_borrow(self), opd_iv_scalar(p)};
  int rc = push_all(0, &s, args, 2);
  if (!rc) rc = opd__push_int_list(&s, (opd_int_list){NULL, 0});
  if (!rc) rc = opd_stack_push(&s, opd_iv_bool(false));
  return opd__call_tensor(rc, &op, "aten::norm.ScalarOpt_dim", &s, out);
}

int opd__cea_norm_scalaropt_dtype(const opd_kernel_ctx *ctx, opd_tensor *self, opd_scalar p,
                                  opd_dtype dtype, opd_tensor **out) {
  (void)ctx;
  static const opd_operator *op;
  opd_stack s;
  opd_stack_init(&s);
  opd_ivalue args[] = {opd_iv_tensor_borrow(self),
                       p.tag == OPD_IV_NONE ? opd_iv_none() : opd_iv_scalar(p)};
  int rc = push_all(0, &s, args, 2);
  if (!rc) rc = opd__push_int_list(&s, (opd_int_list){NULL, 0});
  opd_ivalue rest[] = {opd_iv_bool(false), opd_iv_dtype(dtype)};
  rc = push_all(rc, &s, rest, 2);
  return opd__call_tensor(rc, &op, "aten::norm.ScalarOpt_dim_dtype", &s, out);
}

/* ---- logsumexp ---- */

static int unary(const opd_operator **cache, const char *name, opd_tensor *x, opd_tensor **out) {
  opd_stack s;
  opd_stack_init(&s);
  int rc = opd_stack_push(&s, opd_iv_tensor_borrow(x));
  return opd__call_tensor(rc, cache, name, &s, out);
}

/* sum.dim_IntList(x, dim, keepdim) */
static int sum_dims(opd_tensor *x, opd_int_list dim, bool keepdim, opd_tensor **out) {
  static const opd_operator *op;
  opd_stack s;
  opd_stack_init(&s);
  int rc = opd_stack_push(&s, opd_iv_tensor_borrow(x));
  if (!rc) rc = opd__push_int_list(&s, dim);
  opd_ivalue rest[] = {opd_iv_bool(keepdim), opd_iv_none()};
  rc = push_all(rc, &s, rest, 2);
  return opd__call_tensor(rc, &op, "aten::sum.dim_IntList", &s, out);
}

/* The maxima of x over dim (kept), infinite ones replaced by 0. */
static int finite_maxima(opd_tensor *x, opd_int_list dim, opd_tensor **out) {
  static const opd_operator *amax, *abs_op, *eq, *fill;
  opd_tensor *m = NULL, *a = NULL, *inf = NULL;
  opd_stack s;
  opd_stack_init(&s);
  int rc = opd_stack_push(&s, opd_iv_tensor_borrow(x));
  if (!rc) rc = opd__push_int_list(&s, dim);
  if (!rc) rc = opd_stack_push(&s, opd_iv_bool(true));
  rc = opd__call_tensor(rc, &amax, "aten::amax", &s, &m);
  if (!rc) rc = unary(&abs_op, "aten::abs", m, &a);
  if (!rc) {
    opd_stack_init(&s);
    opd_ivalue args[] = {opd_iv_tensor_borrow(a), opd_iv_double(INFINITY)};
    rc = opd__call_tensor(push_all(0, &s, args, 2), &eq, "aten::eq.Scalar", &s, &inf);
  }
  if (!rc) {
    opd_stack_init(&s);
    opd_ivalue args[] = {opd_iv_tensor_borrow(m), opd_iv_tensor_borrow(inf), opd_iv_int(0)};
    rc = opd__call_tensor(push_all(0, &s, args, 3), &fill, "aten::masked_fill.Scalar", &s, out);
  }
  if (m) opd_tensor_release(m);
  if (a) opd_tensor_release(a);
  if (inf) opd_tensor_release(inf);
  return rc;
}

static int binary(const opd_operator **cache, const char *name, opd_tensor *a, opd_tensor *b,
                  bool alpha, opd_tensor **out) {
  opd_stack s;
  opd_stack_init(&s);
  opd_ivalue args[] = {opd_iv_tensor_borrow(a), opd_iv_tensor_borrow(b), opd_iv_int(1)};
  int rc = push_all(0, &s, args, alpha ? 3 : 2);
  return opd__call_tensor(rc, cache, name, &s, out);
}

int opd__cea_logsumexp(const opd_kernel_ctx *ctx, opd_tensor *self, opd_int_list dim, bool keepdim,
                       opd_tensor **out) {
  (void)ctx;
  static const opd_operator *to_copy, *exp_op, *log_op, *sub, *add, *view;
  opd_tensor *x = self, *m = NULL, *d = NULL, *e = NULL, *sum = NULL, *l = NULL, *mv = NULL;
  int rc = 0;
  opd_stack s;
  opd_dtype dt = opd_tensor_dtype(self);
  if (!opd_dtype_is_floating(dt)) { /* integers and bool: the default dtype */
    opd_stack_init(&s);
    opd_ivalue args[] = {opd_iv_tensor_borrow(self),
                         opd_iv_dtype(OPD_FLOAT32),
                         opd_iv_none(),
                         opd_iv_none(),
                         opd_iv_none(),
                         opd_iv_bool(false),
                         opd_iv_none()};
    rc = opd__call_tensor(push_all(0, &s, args, 7), &to_copy, "aten::_to_copy", &s, &x);
    if (rc) return rc;
  }
  if (self->numel == 0) {
    rc = unary(&exp_op, "aten::exp", x, &e);
    if (!rc) rc = sum_dims(e, dim, keepdim, &sum);
    if (!rc) rc = unary(&log_op, "aten::log", sum, out);
  } else if (dim.len <= 0 && !keepdim && self->ndim > 0) {
    /* PyTorch 1.13 adds the kept maxima to the reduced sum in place, which fails here */
    char want[256];
    int64_t ones[OPD_MAX_DIMS];
    for (int i = 0; i < self->ndim; i++) ones[i] = 1;
    rc = opd_error(OPD_EINVAL, "output with shape [] doesn't match the broadcast shape %s",
                   opd__format_sizes(ones, self->ndim, want, sizeof want));
  } else {
    rc = finite_maxima(x, dim, &m);
    if (!rc) rc = binary(&sub, "aten::sub.Tensor", x, m, true, &d);
    if (!rc) rc = unary(&exp_op, "aten::exp", d, &e);
    if (!rc) rc = sum_dims(e, dim, keepdim, &sum);
    if (!rc) rc = unary(&log_op, "aten::log", sum, &l);
    if (!rc && !keepdim) { /* the maxima in the result's shape */
      opd_stack_init(&s);
      rc = opd_stack_push(&s, opd_iv_tensor_borrow(m));
      if (!rc) rc = opd__push_int_list(&s, (opd_int_list){opd_tensor_sizes(l), l->ndim});
      rc = opd__call_tensor(rc, &view, "aten::view", &s, &mv);
    }
    if (!rc) rc = binary(&add, "aten::add.Tensor", l, keepdim ? m : mv, true, out);
  }
  opd_tensor *tmp[] = {m, d, e, sum, l, mv, x != self ? x : NULL};
  for (size_t i = 0; i < sizeof tmp / sizeof *tmp; i++)
    if (tmp[i]) opd_tensor_release(tmp[i]);
  return rc;
}

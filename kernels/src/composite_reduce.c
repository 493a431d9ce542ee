/* composite_reduce.c: the composite kernels of the reduction family, written in terms of other
 * operators called through the dispatcher, so they work on every backend:
 *   sum (CompositeExplicitAutograd)        = sum.dim_IntList(self, None, False, dtype)
 *   mean (CompositeExplicitAutograd)       = mean.dim(self, None, False, dtype)
 *   count_nonzero (CompositeExplicitAutograd) = count_nonzero.dim_IntList(self, [dim] or [])
 *   nanmean (CompositeImplicitAutograd)    = nansum(self, dim, keepdim, dtype) / sum(self == self)
 *   softmax.int (CompositeImplicitAutograd) = _softmax(self.to(dtype), dim, False)
 *   layer_norm (CompositeImplicitAutograd)  = native_layer_norm(...)[0]
 *   trace (at the CPU and Meta keys, as PyTorch) = sum(diagonal(self)), after its checks
 */
#include "kernel_util.h"

/* Pushes each value while rc is 0; returns the first failure. */
static int push_all(opd_stack *s, const opd_ivalue *v, int n) {
  int rc = 0;
  for (int i = 0; i < n && !rc; i++) rc = opd_stack_push(s, v[i]);
  return rc;
}

int opd__cea_sum(const opd_kernel_ctx *ctx, opd_tensor *self, opd_dtype dtype, opd_tensor **out) {
  (void)ctx;
  static const opd_operator *op;
  opd_stack s;
  opd_stack_init(&s);
  opd_ivalue args[] = {opd_iv_tensor_borrow(self), opd_iv_none(), opd_iv_bool(false),
                       dtype == OPD_DTYPE_UNDEFINED ? opd_iv_none() : opd_iv_dtype(dtype)};
  int rc = push_all(&s, args, 4);
  if (!rc) rc = opd__call(&op, "aten::sum.dim_IntList", &s);
  if (!rc) rc = opd__pop_tensor_return(&s, out);
  opd_stack_destroy(&s);
  return rc;
}

int opd__cia_softmax_int(const opd_kernel_ctx *ctx, opd_tensor *self, int64_t dim, opd_dtype dtype,
                         opd_tensor **out) {
  (void)ctx;
  static const opd_operator *to_copy, *softmax;
  opd_stack s;
  opd_stack_init(&s);
  opd_tensor *converted = NULL;
  int rc = 0;
  /* Tensor.to(dtype): a copy only when the dtype changes */
  if (dtype != OPD_DTYPE_UNDEFINED && dtype != opd_tensor_dtype(self)) {
    opd_ivalue args[] = {opd_iv_tensor_borrow(self),
                         opd_iv_dtype(dtype),
                         opd_iv_none(),
                         opd_iv_none(),
                         opd_iv_none(),
                         opd_iv_bool(false),
                         opd_iv_none()};
    rc = push_all(&s, args, 7);
    if (!rc) rc = opd__call(&to_copy, "aten::_to_copy", &s);
    if (!rc) rc = opd__pop_tensor_return(&s, &converted);
  }
  if (!rc) {
    opd_ivalue args[] = {opd_iv_tensor_borrow(converted ? converted : self), opd_iv_int(dim),
                         opd_iv_bool(false)};
    rc = push_all(&s, args, 3);
    if (!rc) rc = opd__call(&softmax, "aten::_softmax", &s);
    if (!rc) rc = opd__pop_tensor_return(&s, out);
  }
  if (converted) opd_tensor_release(converted);
  opd_stack_destroy(&s);
  return rc;
}

int opd__cia_layer_norm(const opd_kernel_ctx *ctx, opd_tensor *input, opd_int_list normalized_shape,
                        opd_tensor *weight, opd_tensor *bias, double eps, bool cudnn_enable,
                        opd_tensor **out) {
  (void)ctx;
  (void)cudnn_enable; /* deprecated, ignored by PyTorch */
  static const opd_operator *op;
  opd_stack s;
  opd_stack_init(&s);
  int rc = opd_stack_push(&s, opd_iv_tensor_borrow(input));
  if (!rc) rc = opd__push_int_list(&s, normalized_shape);
  if (!rc) {
    opd_ivalue args[] = {weight ? opd_iv_tensor_borrow(weight) : opd_iv_none(),
                         bias ? opd_iv_tensor_borrow(bias) : opd_iv_none(), opd_iv_double(eps)};
    rc = push_all(&s, args, 3);
  }
  if (!rc) rc = opd__call(&op, "aten::native_layer_norm", &s);
  if (!rc) {
    if (s.size != 3 || s.items[0].tag != OPD_IV_TENSOR) {
      rc = opd_error(OPD_EINTERNAL, "native_layer_norm did not return three tensors");
    } else {
      opd_stack_drop(&s, 2); /* mean, rstd */
      rc = opd__pop_tensor_return(&s, out);
    }
  }
  opd_stack_destroy(&s);
  return rc;
}

int opd__cea_mean(const opd_kernel_ctx *ctx, opd_tensor *self, opd_dtype dtype, opd_tensor **out) {
  (void)ctx;
  static const opd_operator *op;
  opd_stack s;
  opd_stack_init(&s);
  opd_ivalue args[] = {opd_iv_tensor_borrow(self), opd_iv_none(), opd_iv_bool(false),
                       dtype == OPD_DTYPE_UNDEFINED ? opd_iv_none() : opd_iv_dtype(dtype)};
  int rc = push_all(&s, args, 4);
  if (!rc) rc = opd__call(&op, "aten::mean.dim", &s);
  if (!rc) rc = opd__pop_tensor_return(&s, out);
  opd_stack_destroy(&s);
  return rc;
}

int opd__cea_count_nonzero(const opd_kernel_ctx *ctx, opd_tensor *self, opd_opt_int dim,
                           opd_tensor **out) {
  (void)ctx;
  static const opd_operator *op;
  opd_stack s;
  opd_stack_init(&s);
  int64_t d = dim.value;
  int rc = opd_stack_push(&s, opd_iv_tensor_borrow(self));
  if (!rc) rc = opd__push_int_list(&s, (opd_int_list){&d, dim.has_value ? 1 : 0});
  if (!rc) rc = opd__call(&op, "aten::count_nonzero.dim_IntList", &s);
  if (!rc) rc = opd__pop_tensor_return(&s, out);
  opd_stack_destroy(&s);
  return rc;
}

/* nanmean = nansum(self, dim, keepdim, dtype) / (the count of non-NaN elements: self == self) */
int opd__cia_nanmean(const opd_kernel_ctx *ctx, opd_tensor *self, opd_int_list dim, bool keepdim,
                     opd_dtype dtype, opd_tensor **out) {
  (void)ctx;
  static const opd_operator *nansum, *eq, *sum, *div;
  opd_dtype in = opd_tensor_dtype(self);
  if (!opd_dtype_is_floating(in))
    return opd_error(OPD_EINVAL,
                     "nanmean(): expected input to have floating point dtype but got %s",
                     opd_dtype_c10_name(in));
  opd_tensor *num = NULL, *mask = NULL, *count = NULL;
  opd_stack s;
  opd_stack_init(&s);
  int rc = opd_stack_push(&s, opd_iv_tensor_borrow(self));
  if (!rc) rc = opd__push_int_list(&s, dim);
  opd_ivalue rest[] = {opd_iv_bool(keepdim),
                       dtype == OPD_DTYPE_UNDEFINED ? opd_iv_none() : opd_iv_dtype(dtype)};
  if (!rc) rc = push_all(&s, rest, 2);
  rc = opd__call_tensor(rc, &nansum, "aten::nansum", &s, &num);
  if (!rc) {
    opd_stack_init(&s);
    opd_ivalue args[] = {opd_iv_tensor_borrow(self), opd_iv_tensor_borrow(self)};
    rc = opd__call_tensor(push_all(&s, args, 2), &eq, "aten::eq.Tensor", &s, &mask);
  }
  if (!rc) {
    opd_stack_init(&s);
    rc = opd_stack_push(&s, opd_iv_tensor_borrow(mask));
    if (!rc) rc = opd__push_int_list(&s, dim);
    opd_ivalue more[] = {opd_iv_bool(keepdim), opd_iv_none()};
    if (!rc) rc = push_all(&s, more, 2);
    rc = opd__call_tensor(rc, &sum, "aten::sum.dim_IntList", &s, &count);
  }
  if (!rc) {
    opd_stack_init(&s);
    opd_ivalue args[] = {opd_iv_tensor_borrow(num), opd_iv_tensor_borrow(count)};
    rc = opd__call_tensor(push_all(&s, args, 2), &div, "aten::div.Tensor", &s, out);
  }
  opd_tensor *tmp[] = {num, mask, count};
  for (int i = 0; i < 3; i++)
    if (tmp[i]) opd_tensor_release(tmp[i]);
  return rc;
}

/* trace(self): a matrix of any dtype but bool; the sum of its diagonal (integers as int64) */
static int trace(opd_tensor *self, opd_tensor **out) {
  if (self->ndim != 2)
    return opd_error(OPD_EINVAL, "trace: expected a matrix, but got tensor with dim %d",
                     self->ndim);
  if (opd_tensor_dtype(self) == OPD_BOOL)
    return opd_error(OPD_EINVAL, "\"trace\" not implemented for 'Bool'");
  static const opd_operator *diagonal_op, *sum_op;
  opd_stack s;
  opd_stack_init(&s);
  opd_ivalue args[] = {opd_iv_tensor_borrow(self), opd_iv_int(0), opd_iv_int(0), opd_iv_int(1)};
  opd_tensor *diag = NULL;
  int rc = opd__call_tensor(push_all(&s, args, 4), &diagonal_op, "aten::diagonal", &s, &diag);
  if (rc) return rc;
  opd_stack_init(&s);
  opd_ivalue sargs[] = {opd_iv_tensor_borrow(diag), opd_iv_none()};
  rc = opd__call_tensor(push_all(&s, sargs, 2), &sum_op, "aten::sum", &s, out);
  opd_tensor_release(diag);
  return rc;
}

int opd__cpu_trace(const opd_kernel_ctx *ctx, opd_tensor *self, opd_tensor **out) {
  (void)ctx;
  return trace(self, out);
}

int opd__meta_trace(const opd_kernel_ctx *ctx, opd_tensor *self, opd_tensor **out) {
  (void)ctx;
  return trace(self, out);
}

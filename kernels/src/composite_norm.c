/* composite_norm.c: the CompositeImplicitAutograd kernels of the normalization, loss and
 * activation family, written in terms of other operators called through the dispatcher (so
 * they work on every backend and in graphs), as PyTorch 1.13 decomposes them:
 *   relu6              = hardtanh(self, 0, 6)
 *   log_sigmoid        = log_sigmoid_forward(self)[0]
 *   batch_norm         = native_batch_norm(...)[0]  (through _batch_norm_impl_index in PyTorch)
 *   group_norm         = native_group_norm(input, weight, bias, N, C, HxW, groups, eps)[0]
 *   dropout            = input when not training, p = 0 or empty; input * 0 for p = 1;
 *                        else native_dropout(input, p, train)[0]
 *   embedding_backward = embedding_dense_backward(...) (sparse gradients are not supported)
 *   nll_loss           = nll_loss_forward(...)[0]
 *   nll_loss2d         = nll_loss2d_forward(...)[0]
 *   nll_loss_nd        = nll_loss for 1-d and 2-d inputs, nll_loss2d for 4-d ones; other
 *                        (N, C, d1, ...) inputs with the class dim moved last and flattened to
 *                        (N d1 ..., C) (PyTorch reshapes them for nll_loss2d, which computes
 *                        the same)
 *   cross_entropy_loss = nll_loss_nd(_log_softmax(self, class dim), target, ...) for class
 *                        index targets without label smoothing; probability targets and label
 *                        smoothing are not supported (a clear error).
 */
#include "kernel_util.h"

/* Pushes each value while rc is 0; returns the first failure. */
static int push_all(opd_stack *s, const opd_ivalue *v, int n) {
  int rc = 0;
  for (int i = 0; i < n && !rc; i++) rc = opd_stack_push(s, v[i]);
  return rc;
}

static opd_ivalue opt_tensor(opd_tensor *t) {
  return t ? opd_iv_tensor_borrow(t) : opd_iv_none();
}

/* Calls `name` with the n arguments; its first result (of nres) into *out. */
static int call_first(const opd_operator **cache, const char *name, const opd_ivalue *args, int n,
                      int nres, opd_tensor **out) {
  opd_stack s;
  opd_stack_init(&s);
  int rc = push_all(&s, args, n);
  if (!rc) rc = opd__call(cache, name, &s);
  if (!rc) {
    if (s.size != (uint32_t)nres || s.items[0].tag != OPD_IV_TENSOR) {
      rc = opd_error(OPD_EINTERNAL, "%s did not return %d results", name, nres);
    } else {
      opd_stack_drop(&s, (uint32_t)(nres - 1));
      rc = opd__pop_tensor_return(&s, out);
    }
  }
  opd_stack_destroy(&s);
  return rc;
}

int opd__cia_relu6(const opd_kernel_ctx *ctx, opd_tensor *self, opd_tensor **out) {
  (void)ctx;
  static const opd_operator *op;
  opd_ivalue args[] = {opd_iv_tensor_borrow(self), opd_iv_int(0), opd_iv_int(6)};
  return call_first(&op, "aten::hardtanh", args, 3, 1, out);
}

int opd__cia_log_sigmoid(const opd_kernel_ctx *ctx, opd_tensor *self, opd_tensor **out) {
  (void)ctx;
  static const opd_operator *op;
  opd_ivalue args[] = {opd_iv_tensor_borrow(self)};
  return call_first(&op, "aten::log_sigmoid_forward", args, 1, 2, out);
}

int opd__cia_batch_norm(const opd_kernel_ctx *ctx, opd_tensor *input, opd_tensor *weight,
                        opd_tensor *bias, opd_tensor *running_mean, opd_tensor *running_var,
                        bool training, double momentum, double eps, bool cudnn_enabled,
                        opd_tensor **out) {
  (void)ctx;
  (void)cudnn_enabled;
  static const opd_operator *op;
  opd_ivalue args[] = {opd_iv_tensor_borrow(input), opt_tensor(weight),      opt_tensor(bias),
                       opt_tensor(running_mean),    opt_tensor(running_var), opd_iv_bool(training),
                       opd_iv_double(momentum),     opd_iv_double(eps)};
  return call_first(&op, "aten::native_batch_norm", args, 8, 3, out);
}

int opd__cia_group_norm(const opd_kernel_ctx *ctx, opd_tensor *input, int64_t num_groups,
                        opd_tensor *weight, opd_tensor *bias, double eps, bool cudnn_enabled,
                        opd_tensor **out) {
  (void)ctx;
  (void)cudnn_enabled;
  static const opd_operator *op;
  if (input->ndim < 2)
    return opd_error(OPD_EINDEX,
                     "Dimension out of range (expected to be in range of [%d, %d], "
                     "but got 1)",
                     -(input->ndim > 0 ? input->ndim : 1), input->ndim > 0 ? input->ndim - 1 : 0);
  const int64_t *sizes = opd_tensor_sizes(input);
  int64_t hxw = 1;
  for (int k = 2; k < input->ndim; k++) hxw *= sizes[k];
  opd_ivalue args[] = {opd_iv_tensor_borrow(input), opt_tensor(weight),   opt_tensor(bias),
                       opd_iv_int(sizes[0]),        opd_iv_int(sizes[1]), opd_iv_int(hxw),
                       opd_iv_int(num_groups),      opd_iv_double(eps)};
  return call_first(&op, "aten::native_group_norm", args, 8, 3, out);
}

int opd__cia_dropout(const opd_kernel_ctx *ctx, opd_tensor *input, double p, bool train,
                     opd_tensor **out) {
  (void)ctx;
  static const opd_operator *dropout, *mul;
  if (!(p >= 0 && p <= 1))
    return opd_error(OPD_EINVAL, "dropout probability has to be between 0 and 1, but got %g", p);
  if (p == 0 || !train || input->numel == 0) {
    opd_tensor_retain(input);
    *out = input;
    return 0;
  }
  if (p == 1) {
    opd_ivalue args[] = {opd_iv_tensor_borrow(input), opd_iv_int(0)};
    return call_first(&mul, "aten::mul.Scalar", args, 2, 1, out);
  }
  opd_ivalue args[] = {opd_iv_tensor_borrow(input), opd_iv_double(p), opd_iv_bool(true)};
  return call_first(&dropout, "aten::native_dropout", args, 3, 2, out);
}

int opd__cia_embedding_backward(const opd_kernel_ctx *ctx, opd_tensor *grad, opd_tensor *indices,
                                int64_t num_weights, int64_t padding_idx, bool scale_grad_by_freq,
                                bool sparse, opd_tensor **out) {
  (void)ctx;
  static const opd_operator *op;
  if (sparse)
    return opd_error(OPD_EINVAL, "embedding_backward: sparse gradients are not supported");
  opd_ivalue args[] = {opd_iv_tensor_borrow(grad), opd_iv_tensor_borrow(indices),
                       opd_iv_int(num_weights), opd_iv_int(padding_idx),
                       opd_iv_bool(scale_grad_by_freq)};
  return call_first(&op, "aten::embedding_dense_backward", args, 5, 1, out);
}

int opd__cia_nll_loss(const opd_kernel_ctx *ctx, opd_tensor *self, opd_tensor *target,
                      opd_tensor *weight, int64_t reduction, int64_t ignore_index,
                      opd_tensor **out) {
  (void)ctx;
  static const opd_operator *op;
  opd_ivalue args[] = {opd_iv_tensor_borrow(self), opd_iv_tensor_borrow(target), opt_tensor(weight),
                       opd_iv_int(reduction), opd_iv_int(ignore_index)};
  return call_first(&op, "aten::nll_loss_forward", args, 5, 2, out);
}

int opd__cia_nll_loss2d(const opd_kernel_ctx *ctx, opd_tensor *self, opd_tensor *target,
                        opd_tensor *weight, int64_t reduction, int64_t ignore_index,
                        opd_tensor **out) {
  (void)ctx;
  static const opd_operator *op;
  opd_ivalue args[] = {opd_iv_tensor_borrow(self), opd_iv_tensor_borrow(target), opt_tensor(weight),
                       opd_iv_int(reduction), opd_iv_int(ignore_index)};
  return call_first(&op, "aten::nll_loss2d_forward", args, 5, 2, out);
}

/* reshape(t, sizes) through the dispatcher */
static int reshape(opd_tensor *t, const int64_t *sizes, int n, opd_tensor **out) {
  static const opd_operator *op;
  opd_stack s;
  opd_stack_init(&s);
  int rc = opd_stack_push(&s, opd_iv_tensor_borrow(t));
  if (!rc) rc = opd__push_int_list(&s, (opd_int_list){sizes, n});
  return opd__call_tensor(rc, &op, "aten::reshape", &s, out);
}

/* (N, C, d1, ...) -> (N d1 ..., C): the class dim moved last and the rest flattened */
static int classes_last(opd_tensor *self, opd_tensor **out) {
  static const opd_operator *permute;
  int64_t dims[OPD_MAX_DIMS], rows = 1;
  int nd = self->ndim, k = 0;
  dims[k++] = 0;
  for (int d = 2; d < nd; d++) dims[k++] = d;
  dims[k++] = 1;
  for (int d = 0; d < nd; d++)
    if (d != 1) rows *= opd_tensor_sizes(self)[d];
  opd_stack s;
  opd_stack_init(&s);
  int rc = opd_stack_push(&s, opd_iv_tensor_borrow(self));
  if (!rc) rc = opd__push_int_list(&s, (opd_int_list){dims, nd});
  opd_tensor *moved = NULL;
  if ((rc = opd__call_tensor(rc, &permute, "aten::permute", &s, &moved))) return rc;
  rc = reshape(moved, (int64_t[]){rows, opd_tensor_sizes(self)[1]}, 2, out);
  opd_tensor_release(moved);
  return rc;
}

int opd__cia_nll_loss_nd(const opd_kernel_ctx *ctx, opd_tensor *self, opd_tensor *target,
                         opd_tensor *weight, int64_t reduction, int64_t ignore_index,
                         opd_tensor **out) {
  if (self->ndim < 1)
    return opd_error(OPD_EINVAL, "Expected 1 or more dimensions (got %d)", self->ndim);
  const int64_t *sizes = opd_tensor_sizes(self), *tsizes = opd_tensor_sizes(target);
  if (self->ndim != 1 && (target->ndim < 1 || tsizes[0] != sizes[0]))
    return opd_error(OPD_EINVAL,
                     "Expected input batch_size (%lld) to match target batch_size "
                     "(%lld).",
                     (long long)sizes[0], (long long)(target->ndim > 0 ? tsizes[0] : 0));
  if (self->ndim <= 2)
    return opd__cia_nll_loss(ctx, self, target, weight, reduction, ignore_index, out);
  bool match = target->ndim == self->ndim - 1;
  for (int d = 1; match && d < target->ndim; d++) match = tsizes[d] == sizes[d + 1];
  if (!match) {
    int64_t want[OPD_MAX_DIMS];
    want[0] = sizes[0];
    for (int d = 2; d < self->ndim; d++) want[d - 1] = sizes[d];
    char a[256], b[256];
    return opd_error(OPD_EINVAL, "Expected target size %s, got %s",
                     opd__format_sizes(want, self->ndim - 1, a, sizeof a),
                     opd__format_sizes(tsizes, target->ndim, b, sizeof b));
  }
  if (self->ndim == 4)
    return opd__cia_nll_loss2d(ctx, self, target, weight, reduction, ignore_index, out);
  opd_tensor *x = NULL, *t = NULL, *loss = NULL;
  int rc = classes_last(self, &x);
  if (!rc) rc = reshape(target, (int64_t[]){target->numel}, 1, &t);
  if (!rc) rc = opd__cia_nll_loss(ctx, x, t, weight, reduction, ignore_index, &loss);
  if (!rc && reduction == 0) { /* per element: back to (N, d1, ...) */
    rc = reshape(loss, tsizes, target->ndim, out);
    opd_tensor_release(loss);
  } else if (!rc) {
    *out = loss;
  }
  if (x) opd_tensor_release(x);
  if (t) opd_tensor_release(t);
  return rc;
}

int opd__cia_cross_entropy_loss(const opd_kernel_ctx *ctx, opd_tensor *self, opd_tensor *target,
                                opd_tensor *weight, int64_t reduction, int64_t ignore_index,
                                double label_smoothing, opd_tensor **out) {
  static const opd_operator *log_softmax;
  bool same = self->ndim == target->ndim;
  for (int d = 0; same && d < self->ndim; d++)
    same = opd_tensor_sizes(self)[d] == opd_tensor_sizes(target)[d];
  if (same || opd_dtype_is_floating(opd_tensor_dtype(target)))
    return opd_error(OPD_EINVAL,
                     "cross_entropy_loss: class probabilities as targets are not supported");
  if (label_smoothing > 0)
    return opd_error(OPD_EINVAL, "cross_entropy_loss: label_smoothing is not supported");
  opd_tensor *logp = NULL;
  opd_ivalue args[] = {opd_iv_tensor_borrow(self), opd_iv_int(self->ndim == 1 ? 0 : 1),
                       opd_iv_bool(false)};
  int rc = call_first(&log_softmax, "aten::_log_softmax", args, 3, 1, &logp);
  if (rc) return rc;
  rc = opd__cia_nll_loss_nd(ctx, logp, target, weight, reduction, ignore_index, out);
  opd_tensor_release(logp);
  return rc;
}

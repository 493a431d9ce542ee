/* composite_lapack.c: the composite kernels over the LAPACK-backed operators, as PyTorch 1.13
 * registers them (CompositeImplicitAutograd):
 *   linalg_det(A) = _linalg_det(A)[0]; det(self) = linalg_det(self)
 *   linalg_inv(A) = linalg_inv_ex(A)[0], its info turned into PyTorch's error for a singular
 *                   matrix; inverse(self) = linalg_inv(self)
 *   linalg_cholesky(self, upper) = linalg_cholesky_ex(self, upper)[0], info turned into the
 *                   error for a matrix that is not positive-definite
 *   linalg_slogdet(A), slogdet(self) = _linalg_slogdet(A)[:2] (boxed)
 *   logdet(self)  = logabsdet of _linalg_slogdet, NaN where the sign is -1
 * The info of a batch is read where it lies on the CPU; on the Meta device there is none to
 * read, and other devices' info is copied to the CPU first.
 */
#include <assert.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>

#include "kernel_util.h"
#include "meta/lapack_meta.h"

/* Calls `name` on the pushed arguments and keeps its first result in *out (the others are
 * dropped); with `info` (not NULL), its last result too. Destroys s. */
static int call_first(int rc, const opd_operator **cache, const char *name, opd_stack *s,
                      opd_tensor **out, opd_tensor **info) {
  if (!rc) rc = opd__call(cache, name, s);
  if (!rc && (s->size < 1 || s->items[0].tag != OPD_IV_TENSOR ||
              s->items[s->size - 1].tag != OPD_IV_TENSOR))
    rc = opd_error(OPD_EINTERNAL, "%s did not return tensors", name);
  if (!rc) {
    opd_tensor_retain(*out = s->items[0].u.t);
    if (info) opd_tensor_retain(*info = s->items[s->size - 1].u.t);
  }
  opd_stack_destroy(s);
  return rc;
}

/* PyTorch's error for the first non-zero info of a batch (int32), or 0. `what` formats the
 * message with the info value. */
static int check_info(opd_tensor *info, const char *name, const char *what, int batched) {
  opd_device dev = opd_tensor_device(info);
  if (dev.type == OPD_DEVICE_META) return 0;
  opd_tensor *host = info;
  int rc = 0;
  if (dev.type != OPD_DEVICE_CPU) {
    static const opd_operator *to_copy;
    opd_stack s;
    opd_stack_init(&s);
    opd_ivalue args[] = {opd_iv_tensor_borrow(info),
                         opd_iv_none(),
                         opd_iv_none(),
                         opd_iv_device((opd_device){.type = OPD_DEVICE_CPU, .index = -1}),
                         opd_iv_none(),
                         opd_iv_bool(false),
                         opd_iv_none()};
    for (int i = 0; i < 7 && !rc; i++) rc = opd_stack_push(&s, args[i]);
    rc = opd__call_tensor(rc, &to_copy, "aten::_to_copy", &s, &host);
    if (rc) return rc;
  }
  const int32_t *v = opd_tensor_data(host);
  for (int64_t b = 0; b < host->numel && !rc; b++) {
    if (v[b] <= 0) continue;
    char prefix[64] = "";
    if (batched) snprintf(prefix, sizeof prefix, "(Batch element %" PRId64 "): ", b);
    char detail[256];
    snprintf(detail, sizeof detail, what, (int)v[b]);
    rc = opd_error(OPD_EINVAL, "%s: %s%s", name, prefix, detail);
  }
  if (host != info) opd_tensor_release(host);
  return rc;
}

int opd__cia_linalg_det(const opd_kernel_ctx *ctx, opd_tensor *a, opd_tensor **out) {
  (void)ctx;
  static const opd_operator *op;
  opd_stack s;
  opd_stack_init(&s);
  int rc = opd_stack_push(&s, opd_iv_tensor_borrow(a));
  return call_first(rc, &op, "aten::_linalg_det", &s, out, NULL);
}

int opd__cia_det(const opd_kernel_ctx *ctx, opd_tensor *self, opd_tensor **out) {
  (void)ctx;
  static const opd_operator *op;
  opd_stack s;
  opd_stack_init(&s);
  int rc = opd_stack_push(&s, opd_iv_tensor_borrow(self));
  return opd__call_tensor(rc, &op, "aten::linalg_det", &s, out);
}

int opd__cia_linalg_inv(const opd_kernel_ctx *ctx, opd_tensor *a, opd_tensor **out) {
  (void)ctx;
  static const opd_operator *op;
  opd_stack s;
  opd_stack_init(&s);
  int rc = opd_stack_push(&s, opd_iv_tensor_borrow(a));
  if (!rc) rc = opd_stack_push(&s, opd_iv_bool(false));
  opd_tensor *info = NULL;
  rc = call_first(rc, &op, "aten::linalg_inv_ex", &s, out, &info);
  if (rc) return rc;
  rc = check_info(info, "linalg.inv",
                  "The diagonal element %d is zero, the inversion could not be completed because "
                  "the input matrix is singular.",
                  a->ndim > 2);
  opd_tensor_release(info);
  if (rc) opd_tensor_release(*out);
  return rc;
}

int opd__cia_inverse(const opd_kernel_ctx *ctx, opd_tensor *self, opd_tensor **out) {
  (void)ctx;
  static const opd_operator *op;
  opd_stack s;
  opd_stack_init(&s);
  int rc = opd_stack_push(&s, opd_iv_tensor_borrow(self));
  return opd__call_tensor(rc, &op, "aten::linalg_inv", &s, out);
}

int opd__cia_linalg_cholesky(const opd_kernel_ctx *ctx, opd_tensor *self, bool upper,
                             opd_tensor **out) {
  (void)ctx;
  static const opd_operator *op;
  opd_stack s;
  opd_stack_init(&s);
  int rc = opd_stack_push(&s, opd_iv_tensor_borrow(self));
  if (!rc) rc = opd_stack_push(&s, opd_iv_bool(upper));
  if (!rc) rc = opd_stack_push(&s, opd_iv_bool(false));
  opd_tensor *info = NULL;
  rc = call_first(rc, &op, "aten::linalg_cholesky_ex", &s, out, &info);
  if (rc) return rc;
  rc = check_info(info, "linalg.cholesky",
                  "The factorization could not be completed because the input is not "
                  "positive-definite (the leading minor of order %d is not positive-definite).",
                  self->ndim > 2);
  opd_tensor_release(info);
  if (rc) opd_tensor_release(*out);
  return rc;
}

/* linalg_slogdet and slogdet (boxed): (sign, logabsdet) of _linalg_slogdet(A) */
static int slogdet_pair(opd_stack *stack) {
  static const opd_operator *op;
  assert(stack->size >= 1);
  opd_ivalue *arg = opd_stack_last(stack, 1);
  if (arg->tag != OPD_IV_TENSOR) {
    opd_stack_drop(stack, 1);
    return opd_error(OPD_EINVAL, "linalg.slogdet: expected a Tensor A");
  }
  opd_stack s;
  opd_stack_init(&s);
  int rc = opd_stack_push(&s, opd_iv_tensor_borrow(arg->u.t));
  if (!rc) rc = opd__call(&op, "aten::_linalg_slogdet", &s);
  opd_stack_drop(stack, 1);
  if (!rc && (s.size != 4 || s.items[0].tag != OPD_IV_TENSOR || s.items[1].tag != OPD_IV_TENSOR))
    rc = opd_error(OPD_EINTERNAL, "_linalg_slogdet did not return four tensors");
  if (!rc) rc = opd_stack_push(stack, opd_iv_tensor(s.items[0].u.t));
  if (!rc) {
    rc = opd_stack_push(stack, opd_iv_tensor(s.items[1].u.t));
    if (rc) opd_stack_drop(stack, 1);
  }
  opd_stack_destroy(&s);
  return rc;
}

int opd__cia_linalg_slogdet(const opd_kernel_ctx *ctx, opd_stack *stack) {
  (void)ctx;
  return slogdet_pair(stack);
}

int opd__cia_slogdet(const opd_kernel_ctx *ctx, opd_stack *stack) {
  (void)ctx;
  return slogdet_pair(stack);
}

/* logdet: logabsdet, NaN where the determinant is negative (sign -1) */
int opd__cia_logdet(const opd_kernel_ctx *ctx, opd_tensor *self, opd_tensor **out) {
  (void)ctx;
  static const opd_operator *slogdet, *eq, *fill;
  int rc = opd__linalg_square_check("logdet", self);
  if (rc) return rc;
  opd_stack s;
  opd_stack_init(&s);
  rc = opd_stack_push(&s, opd_iv_tensor_borrow(self));
  if (!rc) rc = opd__call(&slogdet, "aten::_linalg_slogdet", &s);
  if (!rc && (s.size != 4 || s.items[0].tag != OPD_IV_TENSOR || s.items[1].tag != OPD_IV_TENSOR))
    rc = opd_error(OPD_EINTERNAL, "_linalg_slogdet did not return four tensors");
  opd_tensor *negative = NULL;
  if (!rc) {
    opd_stack e;
    opd_stack_init(&e);
    opd_ivalue args[] = {opd_iv_tensor_borrow(s.items[0].u.t), opd_iv_int(-1)};
    int prc = opd_stack_push(&e, args[0]);
    if (!prc) prc = opd_stack_push(&e, args[1]);
    rc = opd__call_tensor(prc, &eq, "aten::eq.Scalar", &e, &negative);
  }
  if (!rc) {
    opd_stack f;
    opd_stack_init(&f);
    opd_ivalue args[] = {opd_iv_tensor_borrow(s.items[1].u.t), opd_iv_tensor_borrow(negative),
                         opd_iv_double(NAN)};
    int prc = 0;
    for (int i = 0; i < 3 && !prc; i++) prc = opd_stack_push(&f, args[i]);
    rc = opd__call_tensor(prc, &fill, "aten::masked_fill.Scalar", &f, out);
  }
  if (negative) opd_tensor_release(negative);
  opd_stack_destroy(&s);
  return rc;
}

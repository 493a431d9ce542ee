/* composite_lapack.c: the composite kernels over the LAPACK-backed operators, as PyTorch 1.13
 * registers them (CompositeImplicitAutograd):
 *   linalg_det(A) = _linalg_det(A)[0]; det(self) = linalg_det(self)
 *   linalg_inv(A) = linalg_inv_ex(A)[0], its info turned into PyTorch's error for a singular
 *                   matrix; inverse(self) = linalg_inv(self)
 *   linalg_cholesky(self, upper) = linalg_cholesky_ex(self, upper)[0], info turned into the
 *                   error for a matrix that is not positive-definite
 *   linalg_slogdet(A), slogdet(self) = _linalg_slogdet(A)[:2] (boxed)
 *   logdet(self)  = logabsdet of _linalg_slogdet, NaN where the sign is -1
 *   linalg_eigh(self, UPLO) = _linalg_eigh(self, UPLO, True) (boxed);
 *   linalg_eigvalsh(self, UPLO) = _linalg_eigh(self, UPLO, False)[0]
 *   linalg_svd(A, full_matrices, driver) = _linalg_svd(A, full_matrices, True, driver) (boxed);
 *   linalg_svdvals(A, driver) = _linalg_svd(A, False, False, driver)[1]
 *   linalg_solve_ex(A, B, left, check_errors) = _linalg_solve_ex(A, B, left, check_errors)
 *                   without LU and pivots (boxed), its info turned into the error for a
 *                   singular matrix with check_errors;
 *   linalg_solve(A, B, left) = _linalg_solve_ex(A, B, left)[0], likewise always
 * The info of a batch is read where it lies on the CPU; on the Meta device there is none to
 * read, and other devices' info is copied to the CPU first.
 */
#include <assert.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "kernel_util.h"
#include "meta/lapack_meta.h"
#include "meta/reduce_meta.h" /* opd__push_results */

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

/* Pushes a second owner of v. */
static int push_copy(opd_stack *s, const opd_ivalue *v) {
  opd_ivalue c;
  int rc = opd_iv_copy(&c, v);
  return rc ? rc : opd_stack_push(s, c);
}

/* The `nres` results of `name`, called on the arguments pushed on s, moved onto stack (which
 * the caller has dropped its own arguments from); result `only` alone when only >= 0.
 * Destroys s. */
static int forward_results(int rc, const opd_operator **cache, const char *name, opd_stack *s,
                           uint32_t nres, int only, opd_stack *stack) {
  if (!rc) rc = opd__call(cache, name, s);
  if (!rc && s->size != nres) rc = opd_error(OPD_EINTERNAL, "%s returned %u values", name, s->size);
  uint32_t pushed = 0;
  for (uint32_t i = 0; !rc && i < nres; i++) {
    if (only >= 0 && i != (uint32_t)only) continue;
    rc = push_copy(stack, &s->items[i]);
    if (!rc) pushed++;
  }
  if (rc) opd_stack_drop(stack, pushed);
  opd_stack_destroy(s);
  return rc;
}

/* linalg_eigh(self, UPLO) = _linalg_eigh(self, UPLO, True) (boxed) */
int opd__cia_linalg_eigh(const opd_kernel_ctx *ctx, opd_stack *stack) {
  (void)ctx;
  static const opd_operator *op;
  assert(stack->size >= 2);
  opd_ivalue *args = opd_stack_last(stack, 2);
  opd_stack s;
  opd_stack_init(&s);
  int rc = push_copy(&s, &args[0]);
  if (!rc) rc = push_copy(&s, &args[1]);
  if (!rc) rc = opd_stack_push(&s, opd_iv_bool(true));
  opd_stack_drop(stack, 2);
  return forward_results(rc, &op, "aten::_linalg_eigh", &s, 2, -1, stack);
}

/* linalg_eigvalsh(self, UPLO) = _linalg_eigh(self, UPLO, False)[0] */
int opd__cia_linalg_eigvalsh(const opd_kernel_ctx *ctx, opd_tensor *self, const char *uplo,
                             opd_tensor **out) {
  (void)ctx;
  static const opd_operator *op;
  opd_stack s, r;
  opd_stack_init(&s);
  opd_stack_init(&r);
  opd_ivalue u;
  int rc = opd_iv_make_string(&u, uplo, strlen(uplo));
  if (!rc) rc = opd_stack_push(&s, opd_iv_tensor_borrow(self));
  if (!rc) rc = opd_stack_push(&s, u);
  if (!rc) rc = opd_stack_push(&s, opd_iv_bool(false));
  rc = forward_results(rc, &op, "aten::_linalg_eigh", &s, 2, 0, &r);
  if (!rc) rc = opd__pop_tensor_return(&r, out);
  opd_stack_destroy(&r);
  return rc;
}

/* linalg_svd(A, full_matrices, driver) = _linalg_svd(A, full_matrices, True, driver) (boxed) */
int opd__cia_linalg_svd(const opd_kernel_ctx *ctx, opd_stack *stack) {
  (void)ctx;
  static const opd_operator *op;
  assert(stack->size >= 3);
  opd_ivalue *args = opd_stack_last(stack, 3);
  opd_stack s;
  opd_stack_init(&s);
  int rc = push_copy(&s, &args[0]);
  if (!rc) rc = push_copy(&s, &args[1]);
  if (!rc) rc = opd_stack_push(&s, opd_iv_bool(true));
  if (!rc) rc = push_copy(&s, &args[2]);
  opd_stack_drop(stack, 3);
  return forward_results(rc, &op, "aten::_linalg_svd", &s, 3, -1, stack);
}

/* linalg_svdvals(A, driver) = _linalg_svd(A, False, False, driver)[1] */
int opd__cia_linalg_svdvals(const opd_kernel_ctx *ctx, opd_tensor *a, const char *driver,
                            opd_tensor **out) {
  (void)ctx;
  static const opd_operator *op;
  opd_stack s, r;
  opd_stack_init(&s);
  opd_stack_init(&r);
  opd_ivalue d = opd_iv_none();
  int rc = driver ? opd_iv_make_string(&d, driver, strlen(driver)) : 0;
  if (!rc) rc = opd_stack_push(&s, opd_iv_tensor_borrow(a));
  if (!rc) rc = opd_stack_push(&s, opd_iv_bool(false));
  if (!rc) rc = opd_stack_push(&s, opd_iv_bool(false));
  if (!rc) rc = opd_stack_push(&s, d);
  rc = forward_results(rc, &op, "aten::_linalg_svd", &s, 3, 1, &r);
  if (!rc) rc = opd__pop_tensor_return(&r, out);
  opd_stack_destroy(&r);
  return rc;
}

/* The results of _linalg_solve_ex(A, B, left) into res (result, LU, pivots, info), and with
 * check_errors PyTorch's error (`name`) for a singular A. */
static int solve_ex(opd_tensor *a, opd_tensor *b, bool left, bool check_errors, const char *name,
                    opd_tensor **res) {
  static const opd_operator *op;
  opd_stack s;
  opd_stack_init(&s);
  int rc = opd_stack_push(&s, opd_iv_tensor_borrow(a));
  if (!rc) rc = opd_stack_push(&s, opd_iv_tensor_borrow(b));
  if (!rc) rc = opd_stack_push(&s, opd_iv_bool(left));
  if (!rc) rc = opd_stack_push(&s, opd_iv_bool(false));
  if (!rc) rc = opd__call(&op, "aten::_linalg_solve_ex", &s);
  if (!rc && s.size != 4)
    rc = opd_error(OPD_EINTERNAL, "_linalg_solve_ex returned %u values", s.size);
  for (uint32_t i = 0; !rc && i < 4; i++)
    if (s.items[i].tag != OPD_IV_TENSOR)
      rc = opd_error(OPD_EINTERNAL, "_linalg_solve_ex did not return tensors");
  for (int i = 0; !rc && i < 4; i++) opd_tensor_retain(res[i] = s.items[i].u.t);
  opd_stack_destroy(&s);
  if (!rc && check_errors) {
    rc = check_info(res[3], name, "The solver failed because the input matrix is singular.",
                    a->ndim > 2);
    if (rc)
      for (int i = 0; i < 4; i++) opd_tensor_release(res[i]);
  }
  return rc;
}

/* linalg_solve_ex(A, B, *, bool left=True, bool check_errors=False) -> (result, info) */
int opd__cia_linalg_solve_ex(const opd_kernel_ctx *ctx, opd_stack *stack) {
  (void)ctx;
  assert(stack->size >= 4);
  opd_ivalue *args = opd_stack_last(stack, 4);
  opd_tensor *res[4] = {NULL, NULL, NULL, NULL};
  int rc = args[0].tag == OPD_IV_TENSOR && args[1].tag == OPD_IV_TENSOR
               ? solve_ex(args[0].u.t, args[1].u.t, args[2].u.b, args[3].u.b,
                          "torch.linalg.solve_ex", res)
               : opd_error(OPD_EINVAL, "linalg.solve_ex: expected Tensors A and B");
  opd_stack_drop(stack, 4);
  if (rc) return rc;
  opd_tensor_release(res[1]);
  opd_tensor_release(res[2]);
  return opd__push_results(stack, (opd_tensor *[]){res[0], res[3]}, 2, 0);
}

int opd__cia_linalg_solve(const opd_kernel_ctx *ctx, opd_tensor *a, opd_tensor *b, bool left,
                          opd_tensor **out) {
  (void)ctx;
  opd_tensor *res[4];
  int rc = solve_ex(a, b, left, true, "torch.linalg.solve", res);
  if (rc) return rc;
  for (int i = 1; i < 4; i++) opd_tensor_release(res[i]);
  *out = res[0];
  return 0;
}

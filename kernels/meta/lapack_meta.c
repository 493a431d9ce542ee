/* lapack_meta.c: argument checks and result layouts of linalg_lu_factor_ex, _linalg_det,
 * _linalg_slogdet, linalg_inv_ex and linalg_cholesky_ex (PyTorch 1.13's errors), and their Meta
 * kernels. */
#include "lapack_meta.h"

#include <assert.h>
#include <string.h>

#include "reduce_meta.h" /* opd__push_results */

int opd__lapack_nargs(opd__lapack_op op) {
  static const int n[] = {3, 1, 2, 3, 1, 3, 4, 2};
  return n[op];
}

int opd__lapack_nres(opd__lapack_op op) {
  static const int n[] = {3, 3, 2, 2, 4, 2, 3, 2};
  return n[op];
}

static const char *op_name(opd__lapack_op op) {
  static const char *const names[] = {"linalg.lu_factor", "linalg.det",     "linalg.inv",
                                      "linalg.cholesky",  "linalg.slogdet", "linalg.eigh",
                                      "linalg.svd",       "linalg.qr"};
  return names[op];
}

static int check_input(opd__lapack_op op, const opd_tensor *a) {
  const char *name = op_name(op);
  if (a->ndim < 2)
    return opd_error(OPD_EINVAL, "%s: The input tensor A must have at least 2 dimensions.", name);
  opd_dtype dt = opd_tensor_dtype(a);
  if (op == OPD__LU_FACTOR_EX) {
    if (dt != OPD_FLOAT32 && dt != OPD_FLOAT64)
      return opd_error(OPD_EINVAL, "\"lu_cpu\" not implemented for '%s'", opd_dtype_c10_name(dt));
    return 0;
  }
  if (op == OPD__EIGH) { /* the shape first, then the dtype its kernel dispatches on */
    const int64_t *s = opd_tensor_sizes(a);
    if (s[a->ndim - 2] != s[a->ndim - 1])
      return opd_error(OPD_EINVAL,
                       "%s: A must be batches of square matrices, but they are %lld by %lld "
                       "matrices",
                       name, (long long)s[a->ndim - 2], (long long)s[a->ndim - 1]);
    if (dt != OPD_FLOAT32 && dt != OPD_FLOAT64)
      return opd_error(OPD_EINVAL, "\"linalg_eigh_cpu\" not implemented for '%s'",
                       opd_dtype_c10_name(dt));
    return 0;
  }
  if (op == OPD__SVD || op == OPD__QR) { /* any m x n */
    if (dt != OPD_FLOAT32 && dt != OPD_FLOAT64)
      return opd_error(opd_dtype_is_floating(dt) ? OPD_ENOTIMPL : OPD_EINVAL,
                       "%s: Expected a floating point or complex tensor as input. Got %s", name,
                       opd_dtype_c10_name(dt));
    return 0;
  }
  return opd__linalg_square_check(name, a);
}

int opd__linalg_square_check(const char *name, const opd_tensor *a) {
  if (a->ndim < 2)
    return opd_error(OPD_EINVAL, "%s: The input tensor A must have at least 2 dimensions.", name);
  opd_dtype dt = opd_tensor_dtype(a);
  if (!opd_dtype_is_floating(dt))
    return opd_error(OPD_EINVAL, "%s: Expected a floating point or complex tensor as input. Got %s",
                     name, opd_dtype_c10_name(dt));
  if (dt != OPD_FLOAT32 && dt != OPD_FLOAT64)
    return opd_error(OPD_ENOTIMPL, "%s: %s is not supported (float32 and float64 are)", name,
                     opd_dtype_c10_name(dt));
  const int64_t *s = opd_tensor_sizes(a);
  if (s[a->ndim - 2] != s[a->ndim - 1])
    return opd_error(OPD_EINVAL,
                     "%s: A must be batches of square matrices, but they are %lld by %lld matrices",
                     name, (long long)s[a->ndim - 2], (long long)s[a->ndim - 1]);
  return 0;
}

/* A result of the batch dims of a followed by `tail` dims: column-major matrices when
 * colmajor (tail 2), else contiguous. */
static int alloc(const opd_tensor *a, int tail, const int64_t *tail_sizes, bool colmajor,
                 opd_dtype dtype, opd_tensor **out) {
  int nb = a->ndim - 2, nd = nb + tail;
  int64_t sizes[OPD_MAX_DIMS], strides[OPD_MAX_DIMS];
  for (int d = 0; d < nb; d++) sizes[d] = opd_tensor_sizes(a)[d];
  for (int d = 0; d < tail; d++) sizes[nb + d] = tail_sizes[d];
  int64_t st = 1;
  if (colmajor) { /* (rows, cols) at strides (1, rows) */
    strides[nb] = 1;
    strides[nb + 1] = sizes[nb] > 1 ? sizes[nb] : 1;
    st = sizes[nb] * sizes[nb + 1];
    if (st < 1) st = 1;
    for (int d = nb - 1; d >= 0; d--) {
      strides[d] = st;
      st *= sizes[d] > 1 ? sizes[d] : 1;
    }
  } else {
    for (int d = nd - 1; d >= 0; d--) {
      strides[d] = st;
      st *= sizes[d] > 1 ? sizes[d] : 1;
    }
  }
  return opd__call_empty_strided((opd_int_list){sizes, nd}, (opd_int_list){strides, nd}, dtype, -1,
                                 opd_tensor_device(a), (opd_opt_bool){0}, out);
}

/* A 1-D result of `size` elements on a's device. */
static int alloc1(const opd_tensor *a, const int64_t *size, opd_dtype dtype, opd_tensor **out) {
  int64_t one = 1;
  return opd__call_empty_strided((opd_int_list){size, 1}, (opd_int_list){&one, 1}, dtype, -1,
                                 opd_tensor_device(a), (opd_opt_bool){0}, out);
}

int opd__lapack_prepare(opd__lapack_op op, opd_ivalue *args, opd_tensor **res) {
  int nres = opd__lapack_nres(op), nargs = opd__lapack_nargs(op);
  for (int i = 0; i < nres; i++) res[i] = NULL;
  if (args[0].tag != OPD_IV_TENSOR)
    return opd_error(OPD_EINVAL, "%s: expected a Tensor A", op_name(op));
  for (int i = 1; i < nargs; i++) {
    /* _linalg_eigh's UPLO (str) and _linalg_svd's driver (str?): the others are bools */
    bool str = (op == OPD__EIGH && i == 1) || (op == OPD__SVD && i == 3) || op == OPD__QR;
    if (str ? args[i].tag != OPD_IV_STRING && !(op == OPD__SVD && args[i].tag == OPD_IV_NONE)
            : args[i].tag != OPD_IV_BOOL)
      return opd_error(OPD_EINVAL, "%s: unexpected argument types", op_name(op));
  }
  opd_tensor *a = args[0].u.t;
  int rc = check_input(op, a);
  if (rc) return rc;
  if (op == OPD__LU_FACTOR_EX && !args[1].u.b)
    return opd_error(OPD_ENOTIMPL,
                     "linalg.lu_factor: LU without pivoting is not implemented on the CPU");
  if (op == OPD__EIGH && strcmp(args[1].u.s, "L") != 0 && strcmp(args[1].u.s, "U") != 0)
    return opd_error(OPD_EINVAL, "Expected UPLO argument to be 'L' or 'U', but got %s",
                     args[1].u.s);
  if (op == OPD__QR && strcmp(args[1].u.s, "reduced") != 0 && strcmp(args[1].u.s, "r") != 0 &&
      strcmp(args[1].u.s, "complete") != 0)
    return opd_error(OPD_EINVAL,
                     "qr received unrecognized mode '%s' but expected one of 'reduced' (default), "
                     "'r', or 'complete'",
                     args[1].u.s);
  if (op == OPD__SVD && args[3].tag == OPD_IV_STRING)
    return opd_error(OPD_EINVAL, "torch.linalg.svd: keyword argument `driver=` is only supported "
                                 "on CUDA inputs with cuSOLVER backend.");
  opd_dtype dt = opd_tensor_dtype(a);
  const int64_t *s = opd_tensor_sizes(a);
  int64_t m = s[a->ndim - 2], n = s[a->ndim - 1], k = m < n ? m : n, none = 0;
  int64_t mat[2] = {m, n};
  switch (op) {
  case OPD__EIGH: /* (eigenvalues, eigenvectors or an empty [0]) */
    rc = alloc(a, 1, &n, false, dt, &res[0]);
    if (!rc && args[2].u.b) rc = alloc(a, 2, mat, true, dt, &res[1]);
    if (!rc && !args[2].u.b) rc = alloc1(a, &none, dt, &res[1]);
    break;
  case OPD__QR: { /* (Q, R), Q empty [0] in mode 'r' */
    bool complete = strcmp(args[1].u.s, "complete") == 0, r_only = strcmp(args[1].u.s, "r") == 0;
    int64_t q[2] = {m, complete ? m : k}, r[2] = {complete ? m : k, n};
    rc = r_only ? alloc1(a, &none, dt, &res[0]) : alloc(a, 2, q, true, dt, &res[0]);
    if (!rc) rc = alloc(a, 2, r, true, dt, &res[1]);
  } break;
  case OPD__SVD: { /* (U, S, Vh), U and Vh empty [0] without compute_uv */
    bool full = args[1].u.b, uv = args[2].u.b;
    int64_t u[2] = {m, full ? m : k}, vh[2] = {full ? n : k, n};
    rc = uv ? alloc(a, 2, u, true, dt, &res[0]) : alloc1(a, &none, dt, &res[0]);
    if (!rc) rc = alloc(a, 1, &k, false, dt, &res[1]);
    if (!rc) rc = uv ? alloc(a, 2, vh, true, dt, &res[2]) : alloc1(a, &none, dt, &res[2]);
  } break;
  case OPD__LU_FACTOR_EX:
    rc = alloc(a, 2, mat, true, dt, &res[0]);
    if (!rc) rc = alloc(a, 1, &k, false, OPD_INT32, &res[1]);
    if (!rc) rc = alloc(a, 0, NULL, false, OPD_INT32, &res[2]);
    break;
  case OPD__LINALG_DET:
    rc = alloc(a, 0, NULL, false, dt, &res[0]);
    if (!rc) rc = alloc(a, 2, mat, true, dt, &res[1]);
    if (!rc) rc = alloc(a, 1, &k, false, OPD_INT32, &res[2]);
    break;
  case OPD__SLOGDET:
    rc = alloc(a, 0, NULL, false, dt, &res[0]);
    if (!rc) rc = alloc(a, 0, NULL, false, dt, &res[1]);
    if (!rc) rc = alloc(a, 2, mat, true, dt, &res[2]);
    if (!rc) rc = alloc(a, 1, &k, false, OPD_INT32, &res[3]);
    break;
  case OPD__INV_EX:
  case OPD__CHOLESKY_EX:
    rc = alloc(a, 2, mat, true, dt, &res[0]);
    if (!rc) rc = alloc(a, 0, NULL, false, OPD_INT32, &res[1]);
    break;
  }
  if (rc)
    for (int i = 0; i < nres; i++)
      if (res[i]) opd_tensor_release(res[i]), res[i] = NULL;
  return rc;
}

static int meta_kernel(opd__lapack_op op, opd_stack *stack) {
  int nargs = opd__lapack_nargs(op), nres = opd__lapack_nres(op);
  assert(stack->size >= (uint32_t)nargs);
  opd_tensor *res[4];
  int rc = opd__lapack_prepare(op, opd_stack_last(stack, (uint32_t)nargs), res);
  opd_stack_drop(stack, (uint32_t)nargs);
  return opd__push_results(stack, res, nres, rc);
}

int opd__meta_linalg_lu_factor_ex(const opd_kernel_ctx *ctx, opd_stack *stack) {
  (void)ctx;
  return meta_kernel(OPD__LU_FACTOR_EX, stack);
}

int opd__meta_linalg_det_lu(const opd_kernel_ctx *ctx, opd_stack *stack) {
  (void)ctx;
  return meta_kernel(OPD__LINALG_DET, stack);
}

int opd__meta_linalg_inv_ex(const opd_kernel_ctx *ctx, opd_stack *stack) {
  (void)ctx;
  return meta_kernel(OPD__INV_EX, stack);
}

int opd__meta_linalg_cholesky_ex(const opd_kernel_ctx *ctx, opd_stack *stack) {
  (void)ctx;
  return meta_kernel(OPD__CHOLESKY_EX, stack);
}

int opd__meta_linalg_slogdet_lu(const opd_kernel_ctx *ctx, opd_stack *stack) {
  (void)ctx;
  return meta_kernel(OPD__SLOGDET, stack);
}

int opd__meta_linalg_eigh(const opd_kernel_ctx *ctx, opd_stack *stack) {
  (void)ctx;
  return meta_kernel(OPD__EIGH, stack);
}

int opd__meta_linalg_svd(const opd_kernel_ctx *ctx, opd_stack *stack) {
  (void)ctx;
  return meta_kernel(OPD__SVD, stack);
}

int opd__meta_linalg_qr(const opd_kernel_ctx *ctx, opd_stack *stack) {
  (void)ctx;
  return meta_kernel(OPD__QR, stack);
}

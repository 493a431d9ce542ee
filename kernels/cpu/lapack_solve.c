/* lapack_solve.c: the CPU kernel of _linalg_solve_ex on LAPACK (getrf, getrs), float32 and
 * float64, batched and broadcast (shapes in kernels/meta/lapack_solve_meta.c).
 *
 * [Note: Solving through an LU factorization]
 * As PyTorch 1.13's _linalg_solve_ex: A's matrices are factored once each by getrf into LU
 * (column-major per matrix, pivots 1-based int32, info LAPACK's: the first zero pivot or 0),
 * and each right-hand side of the broadcast batch is solved by getrs with the factors of its
 * A. When A is contiguous (row-major) PyTorch factors A^T, which LAPACK reads in place, and
 * solves with the transpose: so does this kernel, so that LU and pivots are PyTorch's. XA = B
 * (left=False) is A^T X^T = B^T. A singular A is solved all the same (info says so; the
 * result holds the infinities and NaNs of the division by a zero pivot), as PyTorch does. */
#include <lapacke.h>
#include <string.h>

#include "meta/lapack_solve_meta.h"
#include "meta/reduce_meta.h" /* opd__push_results */
#include "opd/memory.h"

/* The element offset, in a tensor of `ndim` dims, of position `lin` of the broadcast batch
 * geo->batch: the tensor's batch dims (its first nbatch) align right, size 1 broadcasts. */
static int64_t batch_offset(const opd__solve_geometry *geo, int64_t lin, const int64_t *sizes,
                            const int64_t *strides, int nbatch) {
  int64_t off = 0;
  for (int d = geo->batch_ndim - 1, t = nbatch - 1; d >= 0; d--, t--) {
    int64_t i = lin % geo->batch[d];
    lin /= geo->batch[d];
    if (t >= 0 && sizes[t] != 1) off += i * strides[t];
  }
  return off;
}

/* The same position as a linear index into A's (contiguous) batch of factors. */
static int64_t batch_index(const opd__solve_geometry *geo, int64_t lin, const int64_t *sizes,
                           int nbatch) {
  int64_t idx = 0, scale = 1;
  for (int d = geo->batch_ndim - 1, t = nbatch - 1; d >= 0; d--, t--) {
    int64_t i = lin % geo->batch[d];
    lin /= geo->batch[d];
    if (t < 0) continue;
    idx += (sizes[t] != 1 ? i : 0) * scale;
    scale *= sizes[t];
  }
  return idx;
}

#define DEFINE_SOLVE(T, P)                                                                         \
  static int solve_##P(opd_tensor *a, opd_tensor *b, bool left, const opd__solve_geometry *geo,    \
                       opd_tensor **res) {                                                         \
    int64_t n = geo->n, k = geo->k, nn = n * n;                                                    \
    lapack_int ln = (lapack_int)n, ld = n > 1 ? (lapack_int)n : 1;                                 \
    bool use_at = opd_tensor_is_contiguous(a);                                                     \
    const int64_t *as = opd_tensor_strides(a);                                                     \
    int64_t rs = as[a->ndim - 2], cs = as[a->ndim - 1];                                            \
    if (use_at) {                                                                                  \
      int64_t t = rs;                                                                              \
      rs = cs;                                                                                     \
      cs = t;                                                                                      \
    }                                                                                              \
    const T *adata = opd_tensor_data(a);                                                           \
    T *lu = opd_tensor_data(res[1]);                                                               \
    lapack_int *piv = opd_tensor_data(res[2]);                                                     \
    int32_t *info = opd_tensor_data(res[3]);                                                       \
    int64_t abatch = res[3]->numel;                                                                \
    for (int64_t i = 0; i < abatch; i++) {                                                         \
      int64_t off = 0, lin = i;                                                                    \
      for (int d = a->ndim - 3; d >= 0; d--) {                                                     \
        off += (lin % opd_tensor_sizes(a)[d]) * as[d];                                             \
        lin /= opd_tensor_sizes(a)[d];                                                             \
      }                                                                                            \
      T *x = lu + i * nn;                                                                          \
      for (int64_t c = 0; c < n; c++)                                                              \
        for (int64_t r = 0; r < n; r++) x[r + c * n] = adata[off + r * rs + c * cs];               \
      info[i] =                                                                                    \
          n > 0 ? (int32_t)LAPACKE_##P##getrf_work(LAPACK_COL_MAJOR, ln, ln, x, ld, piv + i * n)   \
                : 0;                                                                               \
    }                                                                                              \
    int64_t nrhs = 1;                                                                              \
    for (int d = 0; d < geo->batch_ndim; d++) nrhs *= geo->batch[d];                               \
    if (n == 0 || k == 0 || nrhs == 0) return 0;                                                   \
    T *c = opd__malloc((size_t)(n * k) * sizeof(T));                                               \
    if (!c) return opd_error(OPD_ENOMEM, "linalg.solve: out of memory");                           \
    char trans = use_at == left ? 'T' : 'N';                                                       \
    int bnb = b->ndim - (geo->vector_case ? 1 : 2);                                                \
    const int64_t *bs = opd_tensor_strides(b);                                                     \
    /* B's matrix (rows, cols) strides; a vector is one column */                                  \
    int64_t brs = bs[b->ndim - 1 - !geo->vector_case],                                             \
            bcs = geo->vector_case ? 0 : bs[b->ndim - 1];                                          \
    const int64_t *xs = opd_tensor_strides(res[0]);                                                \
    int xnd = res[0]->ndim;                                                                        \
    int64_t xrs = xs[xnd - 1 - !geo->vector_case], xcs = geo->vector_case ? 0 : xs[xnd - 1];       \
    const T *bdata = opd_tensor_data(b);                                                           \
    T *xdata = opd_tensor_data(res[0]);                                                            \
    for (int64_t i = 0; i < nrhs; i++) {                                                           \
      int64_t boff = batch_offset(geo, i, opd_tensor_sizes(b), bs, bnb);                           \
      int64_t xoff = batch_offset(geo, i, geo->batch, xs, geo->batch_ndim);                        \
      int64_t ai = batch_index(geo, i, opd_tensor_sizes(a), a->ndim - 2);                          \
      /* c: n x k column-major, B's matrix (left) or its transpose */                              \
      for (int64_t q = 0; q < k; q++)                                                              \
        for (int64_t p = 0; p < n; p++)                                                            \
          c[p + q * n] = left ? bdata[boff + p * brs + q * bcs] : bdata[boff + q * brs + p * bcs]; \
      LAPACKE_##P##getrs_work(LAPACK_COL_MAJOR, trans, ln, (lapack_int)k, lu + ai * nn, ld,        \
                              piv + ai * n, c, ld);                                                \
      for (int64_t q = 0; q < k; q++)                                                              \
        for (int64_t p = 0; p < n; p++) {                                                          \
          if (left)                                                                                \
            xdata[xoff + p * xrs + q * xcs] = c[p + q * n];                                        \
          else                                                                                     \
            xdata[xoff + q * xrs + p * xcs] = c[p + q * n];                                        \
        }                                                                                          \
    }                                                                                              \
    opd__free(c);                                                                                  \
    return 0;                                                                                      \
  }
DEFINE_SOLVE(float, s)
DEFINE_SOLVE(double, d)

/* _linalg_solve_ex(A, B, *, bool left=True, bool check_errors=False) (boxed: four results);
 * check_errors is the composites' business (linalg_solve_ex), as in PyTorch's kernel it only
 * raises for a non-zero info */
int opd__cpu_linalg_solve_ex_impl(const opd_kernel_ctx *ctx, opd_stack *stack) {
  (void)ctx;
  opd_ivalue *args = opd_stack_last(stack, 4);
  opd_tensor *res[4] = {NULL, NULL, NULL, NULL};
  opd__solve_geometry geo;
  int rc = 0;
  if (args[0].tag != OPD_IV_TENSOR || args[1].tag != OPD_IV_TENSOR)
    rc = opd_error(OPD_EINVAL, "linalg.solve: expected Tensors A and B");
  opd_tensor *a = rc ? NULL : args[0].u.t, *b = rc ? NULL : args[1].u.t;
  bool left = args[2].u.b;
  if (!rc) rc = opd__linalg_solve_meta(a, b, left, &geo);
  opd_dtype t = rc ? OPD_FLOAT32 : opd_tensor_dtype(a);
  if (!rc && t != OPD_FLOAT32 && t != OPD_FLOAT64)
    rc = opd_error(OPD_EINVAL, "\"lu_cpu\" not implemented for '%s'", opd_dtype_c10_name(t));
  if (!rc) rc = opd__linalg_solve_alloc(a, b, left, &geo, (opd_device){OPD_DEVICE_CPU, -1}, res);
  if (!rc) rc = t == OPD_FLOAT64 ? solve_d(a, b, left, &geo, res) : solve_s(a, b, left, &geo, res);
  opd_stack_drop(stack, 4);
  return opd__push_results(stack, res, 4, rc);
}

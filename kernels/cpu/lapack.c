/* lapack.c: the CPU kernels of linalg_lu_factor_ex, _linalg_det, _linalg_slogdet,
 * linalg_inv_ex and linalg_cholesky_ex on LAPACK (LAPACKE, OpenBLAS's LAPACK), float32 and float64,
 * batched.
 *
 * [Note: LAPACK on batches]
 * Each matrix of the batch (the input's leading dims, any strides) is copied into its place
 * in the result, which is column-major per matrix as PyTorch lays it out, and LAPACK works
 * there in place (LAPACK_COL_MAJOR, leading dimension max(1, rows)): getrf for the LU
 * factorization (pivots 1-based, int32, as PyTorch's), getrf + getri for the inverse, potrf
 * for Cholesky (the other triangle zeroed). info is LAPACK's: 0, or the first zero pivot /
 * the order of the first leading minor that is not positive-definite (1-based); the
 * non-_ex composites turn it into PyTorch's errors. det is the product of U's diagonal,
 * negated once per row interchange (slogdet: the sign of that product, 0 for a zero pivot,
 * and the sum of log |U_ii|); like PyTorch's, it factors the transpose of a row-major
 * (contiguous) input, which LAPACK then reads in place in PyTorch (det A = det A^T), so LU and
 * pivots are those of A^T there. The batch is split over the intra-op pool, each matrix
 * one single-threaded LAPACK call. syevd, gesdd, geqrf + orgqr (eigh, svd, qr) work likewise on a
 * copy, their failures reported per batch element.
 */
#include <assert.h>
#include <lapacke.h>
#include <stdio.h>
#include <math.h>
#include <stdatomic.h>
#include <string.h>

#include "meta/lapack_meta.h"
#include "meta/reduce_meta.h" /* opd__push_results */
#include "opd/memory.h"
#include "reduce_walk.h"
#include "src/parallel.h"

typedef struct lapack_job {
  opd__lapack_op op;
  bool upper;
  opd_tensor *a;
  opd_tensor **res;
  opd__dims batch; /* a's batch dims */
  int64_t m, n;
  bool f64;
  bool transpose;     /* factor the matrices' transposes (det of a row-major input, as PyTorch) */
  bool vectors, full; /* eigh: compute_v; svd: compute_uv, full_matrices */
  char uplo;          /* eigh */
  atomic_bool no_memory;  /* a task found no memory for its work arrays */
  _Atomic int64_t failed; /* eigh / svd: the first batch element LAPACK failed on, or -1 */
  atomic_int failed_info; /* its info */
} lapack_job;

#define DEFINE_SOLVE(T, P)                                                                         \
  static lapack_int solve_##P(const lapack_job *j, T *x, lapack_int *piv, T *det, T *work) {       \
    lapack_int m = (lapack_int)j->m, n = (lapack_int)j->n, ld = m > 1 ? m : 1, info = 0;           \
    switch (j->op) {                                                                               \
    case OPD__LU_FACTOR_EX:                                                                        \
      if (m > 0 && n > 0) info = LAPACKE_##P##getrf_work(LAPACK_COL_MAJOR, m, n, x, ld, piv);      \
      break;                                                                                       \
    case OPD__LINALG_DET: {                                                                        \
      if (n > 0) info = LAPACKE_##P##getrf_work(LAPACK_COL_MAJOR, n, n, x, ld, piv);               \
      T d = 1;                                                                                     \
      for (lapack_int i = 0; i < n; i++) d *= piv[i] != i + 1 ? -x[i + i * ld] : x[i + i * ld];    \
      det[0] = d;                                                                                  \
    } break;                                                                                       \
    case OPD__SLOGDET: {                                                                           \
      if (n > 0) info = LAPACKE_##P##getrf_work(LAPACK_COL_MAJOR, n, n, x, ld, piv);               \
      T sign = 1, logabs = 0;                                                                      \
      for (lapack_int i = 0; i < n; i++) {                                                         \
        T v = x[i + i * ld];                                                                       \
        sign *= (v < 0) != (piv[i] != i + 1) ? -1 : 1;                                             \
        if (v == 0) sign = 0;                                                                      \
        logabs += (T)log(fabs((double)v));                                                         \
      }                                                                                            \
      det[0] = sign;                                                                               \
      det[1] = logabs;                                                                             \
    } break;                                                                                       \
    case OPD__INV_EX:                                                                              \
      if (n > 0) {                                                                                 \
        info = LAPACKE_##P##getrf_work(LAPACK_COL_MAJOR, n, n, x, ld, piv);                        \
        if (info == 0) info = LAPACKE_##P##getri_work(LAPACK_COL_MAJOR, n, x, ld, piv, work, n);   \
      }                                                                                            \
      break;                                                                                       \
    case OPD__CHOLESKY_EX:                                                                         \
      if (n > 0) info = LAPACKE_##P##potrf_work(LAPACK_COL_MAJOR, j->upper ? 'U' : 'L', n, x, ld); \
      for (lapack_int c = 0; c < n; c++)                                                           \
        for (lapack_int r = 0; r < n; r++)                                                         \
          if (j->upper ? r > c : r < c) x[r + c * ld] = 0;                                         \
      break;                                                                                       \
    case OPD__EIGH:                                                                                \
    case OPD__SVD:                                                                                 \
    case OPD__QR: /* (spectral_task, qr_task) */ break;                                            \
    }                                                                                              \
    return info;                                                                                   \
  }
DEFINE_SOLVE(float, s)
DEFINE_SOLVE(double, d)

/* The matrix of a at element offset off copied column-major into x (m x n, leading dim m). */
static void copy_in(const lapack_job *j, int64_t off, char *x) {
  const int64_t *st = opd_tensor_strides(j->a);
  int64_t rs = st[j->a->ndim - 2], cs = st[j->a->ndim - 1];
  if (j->transpose) {
    int64_t t = rs;
    rs = cs;
    cs = t;
  }
  size_t es = j->f64 ? sizeof(double) : sizeof(float);
  const char *base = (const char *)opd_tensor_data(j->a) + off * (int64_t)es;
  for (int64_t c = 0; c < j->n; c++)
    for (int64_t r = 0; r < j->m; r++)
      memcpy(x + (r + c * j->m) * (int64_t)es, base + (r * rs + c * cs) * (int64_t)es, es);
}

static void batch_task(void *ctx, int64_t begin, int64_t end) {
  lapack_job *j = ctx;
  size_t es = j->f64 ? sizeof(double) : sizeof(float);
  int64_t mn = j->m * j->n, k = j->m < j->n ? j->m : j->n;
  bool slog = j->op == OPD__SLOGDET;
  opd_tensor *mat = j->op == OPD__LINALG_DET ? j->res[1] : slog ? j->res[2] : j->res[0];
  opd_tensor *piv = j->op == OPD__LU_FACTOR_EX ? j->res[1]
                    : j->op == OPD__LINALG_DET ? j->res[2]
                    : slog                     ? j->res[3]
                                               : NULL;
  opd_tensor *info = j->op == OPD__LU_FACTOR_EX         ? j->res[2]
                     : j->op == OPD__LINALG_DET || slog ? NULL
                                                        : j->res[1];
  /* the inverse's pivots and getri's work array, per task */
  lapack_int *own_piv = NULL;
  void *work = NULL;
  if (j->op == OPD__INV_EX) {
    own_piv = opd__malloc((size_t)j->n * sizeof *own_piv);
    work = opd__malloc((size_t)j->n * es);
    if (!own_piv || !work) {
      atomic_store(&j->no_memory, true);
      opd__free(own_piv);
      opd__free(work);
      return;
    }
  }
  opd__iter it;
  opd__iter_seek(&it, &j->batch, begin);
  for (int64_t b = begin; b < end; b++) {
    char *x = (char *)opd_tensor_data(mat) + b * mn * (int64_t)es;
    copy_in(j, it.off, x);
    lapack_int *p = piv ? (lapack_int *)opd_tensor_data(piv) + b * k : own_piv;
    lapack_int r;
    if (j->f64) {
      double det[2] = {0, 0};
      r = solve_d(j, (double *)x, p, det, work);
      if (j->op == OPD__LINALG_DET || slog) ((double *)opd_tensor_data(j->res[0]))[b] = det[0];
      if (slog) ((double *)opd_tensor_data(j->res[1]))[b] = det[1];
    } else {
      float det[2] = {0, 0};
      r = solve_s(j, (float *)x, p, det, work);
      if (j->op == OPD__LINALG_DET || slog) ((float *)opd_tensor_data(j->res[0]))[b] = det[0];
      if (slog) ((float *)opd_tensor_data(j->res[1]))[b] = det[1];
    }
    if (info) ((int32_t *)opd_tensor_data(info))[b] = (int32_t)r;
    if (b + 1 < end) opd__iter_step(&it, 1);
  }
  opd__free(own_piv);
  opd__free(work);
}

/* Records LAPACK's info for batch element b (the smallest failing element wins). */
static void record_failure(lapack_job *j, int64_t b, lapack_int info) {
  int64_t prev = atomic_load(&j->failed);
  while ((prev < 0 || b < prev) && !atomic_compare_exchange_weak(&j->failed, &prev, b)) {
  }
  if (atomic_load(&j->failed) == b) atomic_store(&j->failed_info, (int)info);
}

/* _linalg_eigh (syevd) and _linalg_svd (gesdd) on batch elements [begin, end) */
static void spectral_task(void *ctx, int64_t begin, int64_t end) {
  lapack_job *j = ctx;
  bool eigh = j->op == OPD__EIGH;
  size_t es = j->f64 ? sizeof(double) : sizeof(float);
  int64_t m = j->m, n = j->n, k = m < n ? m : n;
  int64_t ucols = j->full ? m : k, vrows = j->full ? n : k;
  /* the matrix LAPACK overwrites when no result holds it, and stand-ins for unused U, Vh */
  int64_t scratch_n = eigh ? (j->vectors ? 0 : n * n) : m * n + 2;
  char *scratch = scratch_n ? opd__malloc((size_t)scratch_n * es) : NULL;
  if (scratch_n && !scratch) {
    atomic_store(&j->no_memory, true);
    return;
  }
  lapack_int li_m = (lapack_int)m, li_n = (lapack_int)n;
  lapack_int ldm = m > 1 ? (lapack_int)m : 1, ldn = n > 1 ? (lapack_int)n : 1;
  lapack_int ldv = vrows > 1 ? (lapack_int)vrows : 1;
  opd__iter it;
  opd__iter_seek(&it, &j->batch, begin);
  for (int64_t b = begin; b < end; b++) {
    lapack_int info;
    if (eigh) {
      char *x = j->vectors ? (char *)opd_tensor_data(j->res[1]) + b * n * n * (int64_t)es : scratch;
      char *w = (char *)opd_tensor_data(j->res[0]) + b * n * (int64_t)es;
      copy_in(j, it.off, x);
      char jobz = j->vectors ? 'V' : 'N';
      info =
          j->f64
              ? LAPACKE_dsyevd(LAPACK_COL_MAJOR, jobz, j->uplo, li_n, (double *)x, ldn, (double *)w)
              : LAPACKE_ssyevd(LAPACK_COL_MAJOR, jobz, j->uplo, li_n, (float *)x, ldn, (float *)w);
    } else {
      copy_in(j, it.off, scratch);
      char jobz = !j->vectors ? 'N' : j->full ? 'A' : 'S';
      char *sv = (char *)opd_tensor_data(j->res[1]) + b * k * (int64_t)es;
      char *u = j->vectors ? (char *)opd_tensor_data(j->res[0]) + b * m * ucols * (int64_t)es
                           : scratch + m * n * (int64_t)es;
      char *vt = j->vectors ? (char *)opd_tensor_data(j->res[2]) + b * vrows * n * (int64_t)es
                            : scratch + (m * n + 1) * (int64_t)es;
      info = j->f64 ? LAPACKE_dgesdd(LAPACK_COL_MAJOR, jobz, li_m, li_n, (double *)scratch, ldm,
                                     (double *)sv, (double *)u, ldm, (double *)vt, ldv)
                    : LAPACKE_sgesdd(LAPACK_COL_MAJOR, jobz, li_m, li_n, (float *)scratch, ldm,
                                     (float *)sv, (float *)u, ldm, (float *)vt, ldv);
    }
    if (info == LAPACK_WORK_MEMORY_ERROR || info == LAPACK_TRANSPOSE_MEMORY_ERROR)
      atomic_store(&j->no_memory, true);
    else if (info != 0)
      record_failure(j, b, info);
    if (b + 1 < end) opd__iter_step(&it, 1);
  }
  opd__free(scratch);
}

/* linalg_qr on batch elements [begin, end): geqrf on an m x max(m, n) column-major copy, R
 * its upper triangle (rows below zero), Q from orgqr (k or, complete, m columns) */
static void qr_task(void *ctx, int64_t begin, int64_t end) {
  lapack_job *j = ctx;
  size_t es = j->f64 ? sizeof(double) : sizeof(float);
  int64_t m = j->m, n = j->n, k = m < n ? m : n, w = m > n ? m : n;
  int64_t qcols = j->full ? m : k, rrows = j->full ? m : k;
  char *x = opd__malloc((size_t)(m * w + k + 1) * es);
  if (!x) {
    atomic_store(&j->no_memory, true);
    return;
  }
  char *tau = x + m * w * (int64_t)es;
  lapack_int li_m = (lapack_int)m, li_n = (lapack_int)n, li_k = (lapack_int)k;
  lapack_int ld = m > 1 ? (lapack_int)m : 1;
  opd__iter it;
  opd__iter_seek(&it, &j->batch, begin);
  for (int64_t b = begin; b < end; b++) {
    copy_in(j, it.off, x);
    lapack_int info =
        j->f64 ? LAPACKE_dgeqrf(LAPACK_COL_MAJOR, li_m, li_n, (double *)x, ld, (double *)tau)
               : LAPACKE_sgeqrf(LAPACK_COL_MAJOR, li_m, li_n, (float *)x, ld, (float *)tau);
    char *r = (char *)opd_tensor_data(j->res[1]) + b * rrows * n * (int64_t)es;
    for (int64_t c = 0; c < n; c++)
      for (int64_t i = 0; i < rrows; i++) {
        char *dst = r + (i + c * rrows) * (int64_t)es;
        if (i <= c && i < m)
          memcpy(dst, x + (i + c * m) * (int64_t)es, es);
        else
          memset(dst, 0, es);
      }
    if (info == 0 && j->vectors && qcols > 0) {
      info = j->f64 ? LAPACKE_dorgqr(LAPACK_COL_MAJOR, li_m, (lapack_int)qcols, li_k, (double *)x,
                                     ld, (const double *)tau)
                    : LAPACKE_sorgqr(LAPACK_COL_MAJOR, li_m, (lapack_int)qcols, li_k, (float *)x,
                                     ld, (const float *)tau);
      memcpy((char *)opd_tensor_data(j->res[0]) + b * m * qcols * (int64_t)es, x,
             (size_t)(m * qcols) * es);
    }
    if (info == LAPACK_WORK_MEMORY_ERROR || info == LAPACK_TRANSPOSE_MEMORY_ERROR)
      atomic_store(&j->no_memory, true);
    else if (info != 0)
      record_failure(j, b, info);
    if (b + 1 < end) opd__iter_step(&it, 1);
  }
  opd__free(x);
}

/* The identity in each matrix of t (batch, rows, cols; column-major or not alike). */
static void fill_identity(opd_tensor *t, bool f64) {
  if (t->ndim < 2 || t->numel == 0) return;
  const int64_t *s = opd_tensor_sizes(t);
  int64_t r = s[t->ndim - 2], c = s[t->ndim - 1], per = r * c;
  size_t es = f64 ? 8 : 4;
  memset(opd_tensor_data(t), 0, (size_t)t->numel * es);
  for (int64_t b = 0; b < t->numel / per; b++)
    for (int64_t i = 0; i < r && i < c; i++)
      opd__store_float((char *)opd_tensor_data(t) + (b * per + i + i * r) * (int64_t)es,
                       f64 ? OPD_FLOAT64 : OPD_FLOAT32, 1);
}

static int spectral_kernel(lapack_job *j, int64_t nbatch) {
  bool eigh = j->op == OPD__EIGH;
  if (j->a->numel == 0) { /* U and Vh (Q) of an empty matrix: identities; R empty or zero */
    if (j->op == OPD__SVD && j->vectors) {
      fill_identity(j->res[0], j->f64);
      fill_identity(j->res[2], j->f64);
    }
    if (j->op == OPD__QR) {
      if (j->vectors) fill_identity(j->res[0], j->f64);
      if (j->res[1]->numel)
        memset(opd_tensor_data(j->res[1]), 0, (size_t)j->res[1]->numel * (j->f64 ? 8 : 4));
    }
    return 0;
  }
  atomic_init(&j->no_memory, false);
  atomic_init(&j->failed, -1);
  atomic_init(&j->failed_info, 0);
  int64_t work = j->m * j->n * (j->m < j->n ? j->m : j->n);
  opd__parallel_for(0, nbatch, work >= 32768 ? 1 : 32768 / (work > 0 ? work : 1),
                    j->op == OPD__QR ? qr_task : spectral_task, j);
  if (atomic_load(&j->no_memory))
    return opd_error(OPD_ENOMEM, "%s: no memory for LAPACK's work arrays",
                     eigh               ? "linalg.eigh"
                     : j->op == OPD__QR ? "linalg.qr"
                                        : "linalg.svd");
  int64_t b = atomic_load(&j->failed);
  if (b < 0) return 0;
  char prefix[64] = "";
  if (j->a->ndim > 2) snprintf(prefix, sizeof prefix, "(Batch element %lld): ", (long long)b);
  return opd_error(OPD_EINVAL,
                   "%s: %sThe algorithm failed to converge because the input matrix is "
                   "ill-conditioned or has too many repeated %s (error code: %d).",
                   eigh ? "linalg.eigh" : "linalg.svd", prefix,
                   eigh ? "eigenvalues" : "singular values", atomic_load(&j->failed_info));
}

static int lapack_kernel(opd__lapack_op op, opd_stack *stack) {
  int nargs = opd__lapack_nargs(op), nres = opd__lapack_nres(op);
  assert(stack->size >= (uint32_t)nargs);
  opd_ivalue *args = opd_stack_last(stack, (uint32_t)nargs);
  opd_tensor *res[4];
  int rc = opd__lapack_prepare(op, args, res);
  if (!rc) {
    opd_tensor *a = args[0].u.t;
    const int64_t *s = opd_tensor_sizes(a);
    lapack_job j = {.op = op,
                    .upper = op == OPD__CHOLESKY_EX && args[1].u.b,
                    .a = a,
                    .res = res,
                    .m = s[a->ndim - 2],
                    .n = s[a->ndim - 1],
                    .f64 = opd_tensor_dtype(a) == OPD_FLOAT64,
                    .transpose = (op == OPD__LINALG_DET || op == OPD__SLOGDET) &&
                                 opd_tensor_is_contiguous(a),
                    .vectors = op == OPD__EIGH ? args[2].u.b
                               : op == OPD__QR ? strcmp(args[1].u.s, "r") != 0
                                               : op == OPD__SVD && args[2].u.b,
                    .full = op == OPD__QR ? strcmp(args[1].u.s, "complete") == 0
                                          : op == OPD__SVD && args[1].u.b,
                    .uplo = op == OPD__EIGH ? args[1].u.s[0] : 'L'};
    if (j.m > INT32_MAX || j.n > INT32_MAX || j.m * j.n > INT32_MAX) {
      rc = opd_error(OPD_EINVAL, "LAPACK: a %lld x %lld matrix is too large", (long long)j.m,
                     (long long)j.n);
    } else {
      opd__dims_of(a, 0, a->ndim - 2, &j.batch);
      int64_t nbatch = 1;
      for (int d = 0; d < a->ndim - 2; d++) nbatch *= s[d];
      if (op == OPD__EIGH || op == OPD__SVD || op == OPD__QR) {
        rc = spectral_kernel(&j, nbatch);
      } else if (a->numel == 0) {
        /* empty matrices: det 1 (sign 1, logabsdet 0), info 0 */
        for (int64_t b = 0; b < nbatch && (op == OPD__LINALG_DET || op == OPD__SLOGDET); b++) {
          opd__store_float((char *)opd_tensor_data(res[0]) + b * (j.f64 ? 8 : 4),
                           opd_tensor_dtype(a), 1);
          if (op == OPD__SLOGDET)
            opd__store_float((char *)opd_tensor_data(res[1]) + b * (j.f64 ? 8 : 4),
                             opd_tensor_dtype(a), 0);
        }
        opd_tensor *info = op == OPD__LU_FACTOR_EX                       ? res[2]
                           : op == OPD__LINALG_DET || op == OPD__SLOGDET ? NULL
                                                                         : res[1];
        if (info && info->numel)
          memset(opd_tensor_data(info), 0, (size_t)info->numel * sizeof(int32_t));
      } else {
        int64_t work = j.m * j.n * (j.m < j.n ? j.m : j.n);
        atomic_init(&j.no_memory, false);
        opd__parallel_for(0, nbatch, work >= 32768 ? 1 : 32768 / (work > 0 ? work : 1), batch_task,
                          &j);
        if (atomic_load(&j.no_memory))
          rc = opd_error(OPD_ENOMEM, "linalg.inv: no memory for LAPACK's work arrays");
      }
    }
  }
  opd_stack_drop(stack, (uint32_t)nargs);
  return opd__push_results(stack, res, nres, rc);
}

int opd__cpu_linalg_lu_factor_ex(const opd_kernel_ctx *ctx, opd_stack *stack) {
  (void)ctx;
  return lapack_kernel(OPD__LU_FACTOR_EX, stack);
}

int opd__cpu_linalg_det_lu(const opd_kernel_ctx *ctx, opd_stack *stack) {
  (void)ctx;
  return lapack_kernel(OPD__LINALG_DET, stack);
}

int opd__cpu_linalg_inv_ex(const opd_kernel_ctx *ctx, opd_stack *stack) {
  (void)ctx;
  return lapack_kernel(OPD__INV_EX, stack);
}

int opd__cpu_linalg_cholesky_ex(const opd_kernel_ctx *ctx, opd_stack *stack) {
  (void)ctx;
  return lapack_kernel(OPD__CHOLESKY_EX, stack);
}

int opd__cpu_linalg_slogdet_lu(const opd_kernel_ctx *ctx, opd_stack *stack) {
  (void)ctx;
  return lapack_kernel(OPD__SLOGDET, stack);
}

int opd__cpu_linalg_eigh(const opd_kernel_ctx *ctx, opd_stack *stack) {
  (void)ctx;
  return lapack_kernel(OPD__EIGH, stack);
}

int opd__cpu_linalg_svd(const opd_kernel_ctx *ctx, opd_stack *stack) {
  (void)ctx;
  return lapack_kernel(OPD__SVD, stack);
}

int opd__cpu_linalg_qr(const opd_kernel_ctx *ctx, opd_stack *stack) {
  (void)ctx;
  return lapack_kernel(OPD__QR, stack);
}

/* conv_direct.c: the plain convolution's three operations by im2col and OpenBLAS's gemm, for
 * float64 (oneDNN has no double convolution) and for the float32 geometries oneDNN declines.
 *
 * [Note: Convolution by im2col]
 * For each image and group, the input is unfolded into col [in_c/groups * K, OUT] (K the
 * kernel's positions, OUT the output's; a position outside the input reads 0), and
 *   FWD:         y_g  = w_g [out_c/groups, in_c/groups * K] @ col
 *   BWD_DATA:    col  = w_g^T @ gy_g, folded back into gx (col2im adds overlapping positions)
 *   BWD_WEIGHTS: gw_g += gy_g @ col^T, summed over the images
 * Spatial dimensions are handled as three, the missing ones of size 1. FWD and BWD_DATA
 * split the images over the intra-op pool (each chunk its own col buffer, gemm on one
 * thread); BWD_WEIGHTS accumulates over the images in order on the caller.
 */
#include <cblas.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>

#include "conv_impl.h"
#include "opd/checked.h"
#include "opd/memory.h"
#include "src/parallel.h"

/* The geometry as three spatial dimensions, with the per-group sizes. */
typedef struct geom3 {
  int64_t in[3], out[3], k[3], stride[3], pad[3], dil[3];
  int64_t in_n, out_n, k_n; /* elements of a plane of x, of y, positions of the kernel */
  int64_t icg, ocg, rows;   /* channels per group in and out; rows = icg * k_n */
} geom3;

static void geom3_init(const opd__conv_geom *g, geom3 *t) {
  int lead = 3 - g->sdims;
  for (int i = 0; i < 3; i++) {
    bool have = i >= lead;
    t->in[i] = have ? g->in[i - lead] : 1;
    t->out[i] = have ? g->out[i - lead] : 1;
    t->k[i] = have ? g->k[i - lead] : 1;
    t->stride[i] = have ? g->stride[i - lead] : 1;
    t->pad[i] = have ? g->pad[i - lead] : 0;
    t->dil[i] = have ? g->dil[i - lead] : 1;
  }
  t->in_n = t->in[0] * t->in[1] * t->in[2];
  t->out_n = t->out[0] * t->out[1] * t->out[2];
  t->k_n = t->k[0] * t->k[1] * t->k[2];
  t->icg = g->in_c / g->groups;
  t->ocg = g->out_c / g->groups;
  t->rows = t->icg * t->k_n;
}

/* im2col (FOLD 0: col from x) or col2im (FOLD 1: x += col) of one group of one image. */
#define DEFINE_UNFOLD(T)                                                              \
  static void unfold_##T(const geom3 *t, T *x, T *col, int fold) {                    \
    for (int64_t c = 0; c < t->icg; c++) {                                            \
      T *xc = x + c * t->in_n;                                                        \
      for (int64_t kd = 0; kd < t->k[0]; kd++)                                        \
        for (int64_t kh = 0; kh < t->k[1]; kh++)                                      \
          for (int64_t kw = 0; kw < t->k[2]; kw++) {                                  \
            int64_t row = (c * t->k[0] + kd) * t->k[1] * t->k[2] + kh * t->k[2] + kw; \
            T *cr = col + row * t->out_n;                                             \
            for (int64_t od = 0; od < t->out[0]; od++) {                              \
              int64_t id = od * t->stride[0] - t->pad[0] + kd * t->dil[0];            \
              for (int64_t oh = 0; oh < t->out[1]; oh++) {                            \
                int64_t ih = oh * t->stride[1] - t->pad[1] + kh * t->dil[1];          \
                T *cw = cr + (od * t->out[1] + oh) * t->out[2];                       \
                if (id < 0 || id >= t->in[0] || ih < 0 || ih >= t->in[1]) {           \
                  if (!fold) memset(cw, 0, (size_t)t->out[2] * sizeof(T));            \
                  continue;                                                           \
                }                                                                     \
                T *xr = xc + (id * t->in[1] + ih) * t->in[2];                         \
                for (int64_t ow = 0; ow < t->out[2]; ow++) {                          \
                  int64_t iw = ow * t->stride[2] - t->pad[2] + kw * t->dil[2];        \
                  bool in = iw >= 0 && iw < t->in[2];                                 \
                  if (fold && in)                                                     \
                    xr[iw] += cw[ow];                                                 \
                  else if (!fold)                                                     \
                    cw[ow] = in ? xr[iw] : 0;                                         \
                }                                                                     \
              }                                                                       \
            }                                                                         \
          }                                                                           \
    }                                                                                 \
  }
DEFINE_UNFOLD(float)
DEFINE_UNFOLD(double)

typedef struct direct_ctx {
  opd__conv_op op;
  const opd__conv_geom *g;
  geom3 t;
  bool dbl;
  char *x, *w, *y;
  atomic_bool nomem;
} direct_ctx;

/* C [m x n] = A (m x k, or its transpose) @ B (k x n, or its transpose) + beta C, row-major. */
static void gemm(bool dbl, bool ta, bool tb, int64_t m, int64_t n, int64_t k, const void *a,
                 const void *b, double beta, void *c) {
  blasint lda = (blasint)(ta ? m : k), ldb = (blasint)(tb ? k : n);
  CBLAS_TRANSPOSE cta = ta ? CblasTrans : CblasNoTrans, ctb = tb ? CblasTrans : CblasNoTrans;
  if (dbl)
    cblas_dgemm(CblasRowMajor, cta, ctb, (blasint)m, (blasint)n, (blasint)k, 1.0, a, lda, b, ldb,
                beta, c, (blasint)n);
  else
    cblas_sgemm(CblasRowMajor, cta, ctb, (blasint)m, (blasint)n, (blasint)k, 1.0f, a, lda, b, ldb,
                (float)beta, c, (blasint)n);
}

static void unfold(const direct_ctx *c, char *x, void *col, int fold) {
  if (c->dbl)
    unfold_double(&c->t, (double *)x, col, fold);
  else
    unfold_float(&c->t, (float *)x, col, fold);
}

/* The images [begin, end): FWD or BWD_DATA, or all of BWD_WEIGHTS. */
static void direct_task(void *ctx, int64_t begin, int64_t end) {
  direct_ctx *c = ctx;
  const geom3 *t = &c->t;
  size_t es = c->dbl ? sizeof(double) : sizeof(float);
  void *col = opd__malloc((size_t)(t->rows * t->out_n) * es + 1);
  if (!col) {
    atomic_store(&c->nomem, true);
    return;
  }
  int64_t groups = c->g->groups;
  for (int64_t n = begin; n < end; n++)
    for (int64_t grp = 0; grp < groups; grp++) {
      char *x = c->x + ((n * groups + grp) * t->icg * t->in_n) * (int64_t)es;
      char *y = c->y + ((n * groups + grp) * t->ocg * t->out_n) * (int64_t)es;
      char *w = c->w + (grp * t->ocg * t->rows) * (int64_t)es;
      switch (c->op) {
      case OPD__CONV_FWD:
        unfold(c, x, col, 0);
        gemm(c->dbl, false, false, t->ocg, t->out_n, t->rows, w, col, 0.0, y);
        break;
      case OPD__CONV_BWD_DATA:
        gemm(c->dbl, true, false, t->rows, t->out_n, t->ocg, w, y, 0.0, col);
        unfold(c, x, col, 1);
        break;
      case OPD__CONV_BWD_WEIGHTS:
        unfold(c, x, col, 0);
        gemm(c->dbl, false, true, t->ocg, t->rows, t->out_n, y, col, n == 0 ? 0.0 : 1.0, w);
        break;
      }
    }
  opd__free(col);
}

static pthread_once_t blas_once = PTHREAD_ONCE_INIT;

static void blas_one_thread(void) {
  openblas_set_num_threads(1); /* [Note: Matrix products on the CPU] in linalg.c */
}

int opd__conv_direct(opd__conv_op op, const opd__conv_geom *g, const opd__conv_bufs *b) {
  direct_ctx c = {
      .op = op, .g = g, .dbl = g->dtype == OPD_FLOAT64, .x = b->x, .w = b->w, .y = b->y};
  geom3_init(g, &c.t);
  atomic_init(&c.nomem, false);
  const geom3 *t = &c.t;
  int64_t blas_max = sizeof(blasint) == 8 ? INT64_MAX : INT32_MAX, col_n;
  size_t es = c.dbl ? sizeof(double) : sizeof(float);
  if (opd_ckd_mul(&col_n, t->rows, t->out_n) || col_n > blas_max || t->rows > blas_max ||
      t->out_n > blas_max || t->ocg > blas_max || (uint64_t)col_n > SIZE_MAX / es)
    return opd_error(OPD_EINVAL, "convolution: the unfolded input (%lld x %lld) is too large",
                     (long long)t->rows, (long long)t->out_n);
  /* the sizes of tensors that exist: no overflow */
  size_t x_bytes = (size_t)(g->n * g->in_c * t->in_n) * es;
  size_t w_bytes = (size_t)(g->out_c * t->rows) * es;
  size_t y_bytes = (size_t)(g->n * g->out_c * t->out_n) * es;
  if (op == OPD__CONV_BWD_DATA && x_bytes) memset(b->x, 0, x_bytes);
  if (g->n == 0 || t->rows == 0 || t->out_n == 0 || t->ocg == 0) { /* sums of nothing */
    if (op == OPD__CONV_FWD && y_bytes) memset(b->y, 0, y_bytes);
    if (op == OPD__CONV_BWD_WEIGHTS && w_bytes) memset(b->w, 0, w_bytes);
    return 0;
  }
  pthread_once(&blas_once, blas_one_thread);
  if (op == OPD__CONV_BWD_WEIGHTS)
    direct_task(&c, 0, g->n);
  else
    opd__parallel_for(0, g->n, 1, direct_task, &c);
  if (atomic_load(&c.nomem)) return opd_error(OPD_ENOMEM, "convolution: out of memory");
  return 0;
}

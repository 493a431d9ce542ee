/* linalg.c: the CPU kernels of the matrix products aten::mm, aten::bmm, aten::addmm,
 * aten::baddbmm, aten::addbmm, aten::addmv, aten::dot and aten::vdot
 * (checks and shapes in kernels/meta/linalg_meta.c).
 *
 * [Note: Matrix products on the CPU]
 * float32 and float64 products call OpenBLAS's gemm (row-major) on the operands in place:
 * an operand whose rows or columns have stride 1 is passed as is, with the transpose flag
 * and leading dimension that describe it, so transposed and sliced inputs are not copied.
 * Other layouts (both strides above 1, a broadcast stride 0) are packed into a contiguous
 * buffer first, as PyTorch does. float16 and bfloat16 are computed through float32. The
 * output is a fresh contiguous tensor; with beta == 0 it is not initialised before gemm
 * (gemm writes C without reading it when beta is 0, so NaN in `self` does not propagate),
 * else it is filled with `self` broadcast to the output and gemm scales it by beta.
 * Integer dtypes, and sizes beyond OpenBLAS's integer range, use a plain loop over the
 * strided operands (integers accumulate modulo 2^64 and wrap like PyTorch's).
 * OpenBLAS runs on one thread (set once, before the first product): a large product is
 * split by rows of the output over the intra-op pool, each chunk one single-threaded gemm,
 * so that the threads it takes follow [Note: Kernel threads and the load] (parallel.h)
 * rather than OpenBLAS's own pool, which would take every CPU whatever the workers do. A
 * batch of products (bmm) is split by products instead, at least GEMM_GRAIN_MACS a chunk:
 * products below that size never split their rows, so a batch of 64 products of 128^3 ran
 * on one thread (at 0.54x the speed of PyTorch on 2 threads; split, 1.8x faster).
 */
#include <assert.h>
#include <cblas.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>

#include "opd/checked.h"
#include "src/kernel_util.h"
#include "meta/linalg_meta.h"
#include "src/loops.h"
#include "src/parallel.h"

#define BLAS_MAX ((int64_t)(sizeof(blasint) == 8 ? INT64_MAX : INT32_MAX))

/* A strided matrix operand: element (i, j) at data + (i * rs + j * cs) * element size. */
typedef struct mat {
  const char *data;
  int64_t rs, cs;
} mat;

/* One gemm: c[m x n, row-major, contiguous] = alpha * a[m x k] @ b[k x n] (+ beta * c when
 * use_beta), all of dtype t. */
typedef struct gemm_args {
  opd_dtype t;
  int64_t m, n, k;
  mat a, b;
  char *c;
  double alpha, beta;       /* floating dtypes */
  uint64_t alpha_u, beta_u; /* integer dtypes */
  bool use_beta;
} gemm_args;

/* alpha and beta for dtype t (Scalar::to<T>: a double must fit an integer dtype's int64). */
static int set_coefficients(gemm_args *g, opd_scalar alpha, opd_scalar beta) {
  g->alpha = opd__scalar_to_double(alpha);
  g->beta = opd__scalar_to_double(beta);
  g->use_beta = g->beta != 0.0;
  if (opd_dtype_is_floating(g->t)) return 0;
  const opd_scalar s[2] = {alpha, beta};
  uint64_t *dst[2] = {&g->alpha_u, &g->beta_u};
  for (int i = 0; i < 2; i++) {
    opd__value v;
    int rc = opd__scalar_to(s[i], OPD_INT64, &v);
    if (rc) return rc;
    *dst[i] = (uint64_t)v.i64;
  }
  return 0;
}

static double load_double(const char *p, opd_dtype t) {
  switch (t) {
  case OPD_FLOAT32: {
    float v;
    memcpy(&v, p, sizeof v);
    return v;
  }
  case OPD_FLOAT64: {
    double v;
    memcpy(&v, p, sizeof v);
    return v;
  }
  case OPD_FLOAT16: {
    uint16_t v;
    memcpy(&v, p, sizeof v);
    return opd_half_to_float(v);
  }
  default: {
    assert(t == OPD_BFLOAT16);
    uint16_t v;
    memcpy(&v, p, sizeof v);
    return opd_bf16_to_float(v);
  }
  }
}

static void store_double(char *p, opd_dtype t, double d) {
  switch (t) {
  case OPD_FLOAT32: {
    float v = (float)d;
    memcpy(p, &v, sizeof v);
    break;
  }
  case OPD_FLOAT64: memcpy(p, &d, sizeof d); break;
  case OPD_FLOAT16: {
    uint16_t v = opd_float_to_half((float)d);
    memcpy(p, &v, sizeof v);
    break;
  }
  default: {
    assert(t == OPD_BFLOAT16);
    uint16_t v = opd_float_to_bf16((float)d);
    memcpy(p, &v, sizeof v);
    break;
  }
  }
}

/* Integers and bool, as the low bits of a uint64 (wrapping arithmetic). */
static uint64_t load_bits(const char *p, opd_dtype t) {
  switch (t) {
  case OPD_UINT8: return *(const uint8_t *)p;
  case OPD_BOOL: return *(const uint8_t *)p != 0;
  case OPD_INT8: return (uint64_t)(int64_t) * (const int8_t *)p;
  case OPD_INT16: {
    int16_t v;
    memcpy(&v, p, sizeof v);
    return (uint64_t)(int64_t)v;
  }
  case OPD_INT32: {
    int32_t v;
    memcpy(&v, p, sizeof v);
    return (uint64_t)(int64_t)v;
  }
  default: {
    assert(t == OPD_INT64);
    uint64_t v;
    memcpy(&v, p, sizeof v);
    return v;
  }
  }
}

static void store_bits(char *p, opd_dtype t, uint64_t u) {
  switch (t) {
  case OPD_UINT8:
  case OPD_INT8: *(uint8_t *)p = (uint8_t)u; break;
  case OPD_BOOL: *(uint8_t *)p = u != 0; break;
  case OPD_INT16: {
    uint16_t v = (uint16_t)u;
    memcpy(p, &v, sizeof v);
    break;
  }
  case OPD_INT32: {
    uint32_t v = (uint32_t)u;
    memcpy(p, &v, sizeof v);
    break;
  }
  default: memcpy(p, &u, sizeof u); break;
  }
}

/* ---- the plain loop: rows [begin, end) of c ---- */

static void naive_rows(void *ctx, int64_t begin, int64_t end) {
  const gemm_args *g = ctx;
  size_t es = opd_dtype_size(g->t);
  bool fp = opd_dtype_is_floating(g->t);
  for (int64_t i = begin; i < end; i++) {
    for (int64_t j = 0; j < g->n; j++) {
      char *c = g->c + (i * g->n + j) * (int64_t)es;
      const char *pa = g->a.data + i * g->a.rs * (int64_t)es;
      const char *pb = g->b.data + j * g->b.cs * (int64_t)es;
      if (fp) {
        double acc = 0;
        for (int64_t p = 0; p < g->k; p++)
          acc += load_double(pa + p * g->a.cs * (int64_t)es, g->t) *
                 load_double(pb + p * g->b.rs * (int64_t)es, g->t);
        double r = g->alpha * acc;
        if (g->use_beta) r += g->beta * load_double(c, g->t);
        store_double(c, g->t, r);
      } else {
        uint64_t acc = 0;
        for (int64_t p = 0; p < g->k; p++)
          acc += load_bits(pa + p * g->a.cs * (int64_t)es, g->t) *
                 load_bits(pb + p * g->b.rs * (int64_t)es, g->t);
        uint64_t r = g->alpha_u * acc;
        if (g->use_beta) r += g->beta_u * load_bits(c, g->t);
        store_bits(c, g->t, r);
      }
    }
  }
}

static void gemm_naive(gemm_args *g) {
  int64_t work = g->n * g->k > 0 ? g->n * g->k : 1; /* no overflow: both index real tensors */
  int64_t grain = OPD_GRAIN_ELEMENTWISE / work > 0 ? OPD_GRAIN_ELEMENTWISE / work : 1;
  opd__parallel_for(0, g->m, grain, naive_rows, g);
}

/* ---- OpenBLAS ---- */

/* How an operand of rows x cols with strides (rs, cs) is passed to row-major gemm without a
 * copy: false if it cannot be. */
static bool blas_operand(int64_t rows, int64_t cols, mat x, CBLAS_TRANSPOSE *trans, int64_t *ld) {
  if ((x.cs == 1 || cols == 1) && (rows == 1 || x.rs >= cols)) {
    *trans = CblasNoTrans;
    *ld = rows == 1 ? cols : x.rs;
  } else if ((x.rs == 1 || rows == 1) && (cols == 1 || x.cs >= rows)) {
    *trans = CblasTrans;
    *ld = cols == 1 ? rows : x.cs;
  } else {
    return false;
  }
  return *ld >= 1 && *ld <= BLAS_MAX;
}

/* Copies x (rows x cols, dtype t) into a contiguous buffer of dtype `to` (FLOAT32 or
 * FLOAT64, equal to t or wider). */
static void pack(mat x, int64_t rows, int64_t cols, opd_dtype t, opd_dtype to, char *dst) {
  size_t es = opd_dtype_size(t), eo = opd_dtype_size(to);
  for (int64_t i = 0; i < rows; i++) {
    const char *row = x.data + i * x.rs * (int64_t)es;
    char *out = dst + i * cols * (int64_t)eo;
    if (t == to && x.cs == 1) {
      memcpy(out, row, (size_t)cols * es);
      continue;
    }
    for (int64_t j = 0; j < cols; j++) {
      const char *p = row + j * x.cs * (int64_t)es;
      if (t == to)
        memcpy(out + j * (int64_t)eo, p, es);
      else
        store_double(out + j * (int64_t)eo, to, load_double(p, t));
    }
  }
}

/* A temporary buffer from the CPU allocator (so it shows in the memory statistics). */
typedef struct buffer {
  void *p;
  size_t nbytes;
} buffer;

static int buffer_alloc(buffer *b, int64_t rows, int64_t cols, size_t es) {
  int64_t n;
  if (opd_ckd_mul(&n, rows, cols) || opd_ckd_mul(&n, n, (int64_t)es))
    return opd_error(OPD_ENOMEM, "gemm buffer of %lld x %lld elements is too large",
                     (long long)rows, (long long)cols);
  const opd_allocator *a = opd_cpu_allocator();
  b->nbytes = (size_t)n;
  return (b->p = a->alloc(a, (opd_device){OPD_DEVICE_CPU, -1}, b->nbytes)) ? 0
                                                                           : opd_last_error_code();
}

static void buffer_free(buffer *b) {
  const opd_allocator *a = opd_cpu_allocator();
  if (b->p) a->free(a, (opd_device){OPD_DEVICE_CPU, -1}, b->p, b->nbytes);
}

/* An operand ready for gemm: passed in place, or packed into buf (dtype `to`). */
static int blas_prepare(mat x, int64_t rows, int64_t cols, opd_dtype t, opd_dtype to,
                        const void **ptr, CBLAS_TRANSPOSE *trans, blasint *ld, buffer *buf) {
  int64_t ld64;
  if (t == to && blas_operand(rows, cols, x, trans, &ld64)) {
    *ptr = x.data;
    *ld = (blasint)ld64;
    return 0;
  }
  int rc = buffer_alloc(buf, rows, cols, opd_dtype_size(to));
  if (rc) return rc;
  pack(x, rows, cols, t, to, buf->p);
  *ptr = buf->p;
  *trans = CblasNoTrans;
  *ld = (blasint)cols;
  return 0;
}

/* Rows of output per chunk below which a product stays on one thread: a chunk is at least
 * this many multiply-adds (about 100 us of one core). */
#define GEMM_GRAIN_MACS ((int64_t)1 << 21)

/* One gemm call split by rows of c: rows [begin, end) of op(a) and c. */
typedef struct blas_call {
  bool dbl; /* double, else float */
  CBLAS_TRANSPOSE ta, tb;
  blasint n, k, lda, ldb;
  const char *a, *b;
  char *c;
  double alpha, beta;
} blas_call;

static void blas_rows(void *ctx, int64_t begin, int64_t end) {
  const blas_call *bc = ctx;
  size_t es = bc->dbl ? sizeof(double) : sizeof(float);
  /* row i of op(a): row i of a as stored, or its column i when transposed */
  const char *a = bc->a + begin * (bc->ta == CblasNoTrans ? bc->lda : 1) * (int64_t)es;
  char *c = bc->c + begin * bc->n * (int64_t)es;
  blasint m = (blasint)(end - begin);
  if (bc->dbl)
    cblas_dgemm(CblasRowMajor, bc->ta, bc->tb, m, bc->n, bc->k, bc->alpha, (const double *)a,
                bc->lda, (const double *)bc->b, bc->ldb, bc->beta, (double *)c, bc->n);
  else
    cblas_sgemm(CblasRowMajor, bc->ta, bc->tb, m, bc->n, bc->k, (float)bc->alpha, (const float *)a,
                bc->lda, (const float *)bc->b, bc->ldb, (float)bc->beta, (float *)c, bc->n);
}

static pthread_once_t blas_threads_once = PTHREAD_ONCE_INIT;

static void blas_one_thread(void) {
  openblas_set_num_threads(1);
}

static int gemm_blas(gemm_args *g) {
  /* float16 and bfloat16 compute in float32 */
  opd_dtype ct = g->t == OPD_FLOAT64 ? OPD_FLOAT64 : OPD_FLOAT32;
  const void *a, *b;
  buffer abuf = {0}, bbuf = {0}, cbuf = {0};
  CBLAS_TRANSPOSE ta, tb;
  blasint lda, ldb, m = (blasint)g->m, n = (blasint)g->n, k = (blasint)g->k;
  int rc = blas_prepare(g->a, g->m, g->k, g->t, ct, &a, &ta, &lda, &abuf);
  if (rc == 0) rc = blas_prepare(g->b, g->k, g->n, g->t, ct, &b, &tb, &ldb, &bbuf);
  char *c = g->c;
  if (rc == 0 && ct != g->t) {
    rc = buffer_alloc(&cbuf, g->m, g->n, sizeof(float));
    if (rc == 0 && g->use_beta) pack((mat){g->c, g->n, 1}, g->m, g->n, g->t, ct, cbuf.p);
    c = cbuf.p;
  }
  if (rc == 0) {
    pthread_once(&blas_threads_once, blas_one_thread);
    blas_call bc = {.dbl = ct == OPD_FLOAT64,
                    .ta = ta,
                    .tb = tb,
                    .n = n,
                    .k = k,
                    .lda = lda,
                    .ldb = ldb,
                    .a = a,
                    .b = b,
                    .c = c,
                    .alpha = g->alpha,
                    .beta = g->use_beta ? g->beta : 0.0};
    int64_t row_macs = (int64_t)n * k; /* no overflow: b holds k x n elements */
    opd__parallel_for(0, m, row_macs >= GEMM_GRAIN_MACS ? 1 : GEMM_GRAIN_MACS / row_macs, blas_rows,
                      &bc);
    if (cbuf.p) {
      size_t es = opd_dtype_size(g->t);
      for (int64_t i = 0; i < g->m * g->n; i++)
        store_double(g->c + i * (int64_t)es, g->t, ((const float *)cbuf.p)[i]);
    }
  }
  buffer_free(&abuf);
  buffer_free(&bbuf);
  buffer_free(&cbuf);
  return rc;
}

/* c = alpha * a @ b (+ beta * c); m, n, k > 0. */
static int gemm(gemm_args *g) {
  assert(g->m > 0 && g->n > 0 && g->k > 0);
  if (opd_dtype_is_floating(g->t) && g->m <= BLAS_MAX && g->n <= BLAS_MAX && g->k <= BLAS_MAX)
    return gemm_blas(g);
  gemm_naive(g);
  return 0;
}

/* ---- the output before gemm ---- */

/* Strides of `self` broadcast to an m x n output (0 along broadcast dimensions). */
static void broadcast_strides(opd_tensor *self, int64_t *s0, int64_t *s1) {
  const int64_t *sz = opd_tensor_sizes(self), *st = opd_tensor_strides(self);
  *s0 = *s1 = 0;
  if (self->ndim == 2) {
    *s0 = sz[0] == 1 ? 0 : st[0];
    *s1 = sz[1] == 1 ? 0 : st[1];
  } else if (self->ndim == 1) {
    *s1 = sz[0] == 1 ? 0 : st[0];
  }
}

/* c[m x n] = self broadcast. */
static void fill_from_self(char *c, int64_t m, int64_t n, opd_tensor *self) {
  size_t es = opd_dtype_size(opd_tensor_dtype(self));
  const char *s = opd_tensor_data(self);
  int64_t s0, s1;
  broadcast_strides(self, &s0, &s1);
  for (int64_t i = 0; i < m; i++) {
    char *row = c + i * n * (int64_t)es;
    const char *src = s + i * s0 * (int64_t)es;
    if (s1 == 1) {
      memcpy(row, src, (size_t)n * es);
    } else {
      for (int64_t j = 0; j < n; j++) memcpy(row + j * (int64_t)es, src + j * s1 * (int64_t)es, es);
    }
  }
}

/* c[0 .. count) *= beta, in g's dtype */
static void scale_by_beta(const gemm_args *g, char *c, int64_t count) {
  size_t es = opd_dtype_size(g->t);
  for (int64_t i = 0; i < count; i++) {
    char *p = c + i * (int64_t)es;
    if (g->t == OPD_FLOAT64)
      store_double(p, g->t, load_double(p, g->t) * g->beta);
    else if (opd_dtype_is_floating(g->t))
      store_double(p, g->t, (float)load_double(p, g->t) * (float)g->beta);
    else
      store_bits(p, g->t, load_bits(p, g->t) * g->beta_u);
  }
}

/* addmm with an empty contraction: out = beta * self (PyTorch: result.copy_(self).mul_(beta),
 * which cannot write a floating or integer product into an integer or bool result). */
static int scale_self(const gemm_args *g, opd_tensor *self, opd_scalar beta) {
  if ((!opd_dtype_is_floating(g->t) && beta.tag == OPD_IV_DOUBLE) ||
      (g->t == OPD_BOOL && beta.tag == OPD_IV_INT))
    return opd_error(OPD_EINVAL, "result type %s can't be cast to the desired output type %s",
                     beta.tag == OPD_IV_DOUBLE ? "Float" : "Long", opd_dtype_c10_name(g->t));
  fill_from_self(g->c, g->m, g->n, self);
  scale_by_beta(g, g->c, g->m * g->n);
  return 0;
}

static mat mat_of(opd_tensor *t, int d0) {
  const int64_t *st = opd_tensor_strides(t);
  return (mat){opd_tensor_data(t), st[d0], st[d0 + 1]};
}

/* ---- kernels ---- */

int opd__cpu_mm(const opd_kernel_ctx *ctx, opd_tensor *self, opd_tensor *mat2, opd_tensor **out) {
  (void)ctx;
  int rc = opd__mm_alloc(self, mat2, out);
  if (rc) return rc;
  const int64_t *os = opd_tensor_sizes(*out);
  opd_dtype t = opd_tensor_dtype(*out);
  gemm_args g = {.t = t,
                 .m = os[0],
                 .n = os[1],
                 .k = opd_tensor_sizes(self)[1],
                 .a = mat_of(self, 0),
                 .b = mat_of(mat2, 0),
                 .c = opd_tensor_data(*out),
                 .alpha = 1,
                 .alpha_u = 1};
  if ((*out)->numel == 0) return 0;
  if (g.k == 0) {
    memset(g.c, 0, (size_t)(*out)->numel * opd_dtype_size(g.t));
    return 0;
  }
  if ((rc = gemm(&g)) != 0) opd_tensor_release(*out);
  return rc;
}

/* bmm's batch, split over the intra-op pool ([Note: Matrix products on the CPU]): each chunk
 * runs whole products, whose gemm then runs inline on the chunk's thread. */
typedef struct bmm_job {
  mat a, b;       /* the first product's operands */
  int64_t sa, sb; /* batch strides, elements */
  int64_t m, n, k;
  opd_dtype t;
  char *c;
  gemm_args coef; /* alpha, beta, use_beta (baddbmm; bmm: alpha 1) */
  atomic_int rc;  /* the first error */
} bmm_job;

static void bmm_range(void *ctx, int64_t begin, int64_t end) {
  bmm_job *j = ctx;
  int64_t es = (int64_t)opd_dtype_size(j->t);
  for (int64_t i = begin; i < end && atomic_load_explicit(&j->rc, memory_order_relaxed) == 0; i++) {
    mat a = j->a, b = j->b;
    a.data += i * j->sa * es;
    b.data += i * j->sb * es;
    gemm_args g = {.t = j->t,
                   .m = j->m,
                   .n = j->n,
                   .k = j->k,
                   .a = a,
                   .b = b,
                   .c = j->c + i * j->m * j->n * es,
                   .alpha = j->coef.alpha,
                   .alpha_u = j->coef.alpha_u,
                   .beta = j->coef.beta,
                   .beta_u = j->coef.beta_u,
                   .use_beta = j->coef.use_beta};
    int rc = gemm(&g);
    if (rc) {
      int none = 0;
      atomic_compare_exchange_strong(&j->rc, &none, rc);
    }
  }
}

/* Runs j's batch of products into *out (released on an error). */
static int bmm_run(bmm_job *j, int64_t batch, opd_tensor **out) {
  int rc;
  int64_t m = j->m, n = j->n, k = j->k;
  atomic_init(&j->rc, 0);
  /* a product large enough to split its own rows (gemm_blas does, from about twice
   * GEMM_GRAIN_MACS) does; smaller ones go whole to the threads, at least GEMM_GRAIN_MACS
   * multiply-adds a chunk */
  int64_t macs;
  if (opd_ckd_mul(&macs, m, n) || opd_ckd_mul(&macs, macs, k)) macs = INT64_MAX;
  if (batch == 1 || macs >= 2 * GEMM_GRAIN_MACS)
    bmm_range(j, 0, batch);
  else
    opd__parallel_for(0, batch, macs >= GEMM_GRAIN_MACS ? 1 : GEMM_GRAIN_MACS / macs, bmm_range, j);
  if ((rc = atomic_load(&j->rc)) != 0) {
    opd_tensor_release(*out);
    /* gemm fails only for its work buffers (a packed operand, a float32 result); its own
     * message was set on the thread that failed */
    return opd_error(rc, "bmm: no memory for a product's work buffer (%s)", opd_err_name(rc));
  }
  return 0;
}

int opd__cpu_bmm(const opd_kernel_ctx *ctx, opd_tensor *self, opd_tensor *mat2, opd_tensor **out) {
  (void)ctx;
  int rc = opd__bmm_alloc(self, mat2, out);
  if (rc) return rc;
  const int64_t *os = opd_tensor_sizes(*out);
  opd_dtype t = opd_tensor_dtype(*out);
  int64_t batch = os[0], m = os[1], n = os[2];
  int64_t k = opd_tensor_sizes(self)[2];
  size_t es = opd_dtype_size(t);
  if ((*out)->numel == 0) return 0;
  if (k == 0) {
    memset(opd_tensor_data(*out), 0, (size_t)(*out)->numel * es);
    return 0;
  }
  bmm_job j = {.a = mat_of(self, 1),
               .b = mat_of(mat2, 1),
               .sa = opd_tensor_strides(self)[0],
               .sb = opd_tensor_strides(mat2)[0],
               .m = m,
               .n = n,
               .k = k,
               .t = t,
               .c = opd_tensor_data(*out),
               .coef = {.alpha = 1, .alpha_u = 1}};
  return bmm_run(&j, batch, out);
}

int opd__cpu_addmm(const opd_kernel_ctx *ctx, opd_tensor *self, opd_tensor *mat1, opd_tensor *mat2,
                   opd_scalar beta, opd_scalar alpha, opd_tensor **out) {
  (void)ctx;
  int rc = opd__addmm_alloc(self, mat1, mat2, out);
  if (rc) return rc;
  const int64_t *os = opd_tensor_sizes(*out);
  opd_dtype t = opd_tensor_dtype(*out);
  gemm_args g = {.t = t,
                 .m = os[0],
                 .n = os[1],
                 .k = opd_tensor_sizes(mat1)[1],
                 .a = mat_of(mat1, 0),
                 .b = mat_of(mat2, 0),
                 .c = opd_tensor_data(*out)};
  if ((*out)->numel == 0) return 0;
  rc = set_coefficients(&g, alpha, beta);
  if (rc == 0 && g.k == 0 && g.use_beta) {
    rc = scale_self(&g, self, beta);
  } else if (rc == 0 && g.k == 0) {
    memset(g.c, 0, (size_t)(*out)->numel * opd_dtype_size(g.t));
  } else if (rc == 0) {
    if (g.use_beta) fill_from_self(g.c, g.m, g.n, self);
    rc = gemm(&g);
  }
  if (rc) opd_tensor_release(*out);
  return rc;
}

/* self of another dtype than the result, converted (PyTorch's result.copy_(self)); NULL when
 * it already is */
static int convert_self(opd_tensor *self, opd_dtype t, opd_tensor **out) {
  static const opd_operator *to_copy;
  *out = NULL;
  if (opd_tensor_dtype(self) == t) return 0;
  opd_stack s;
  opd_stack_init(&s);
  opd_ivalue args[] = {
      opd_iv_tensor_borrow(self), opd_iv_dtype(t), opd_iv_none(), opd_iv_none(), opd_iv_none(),
      opd_iv_bool(false),         opd_iv_none()};
  int rc = 0;
  for (int i = 0; i < 7 && !rc; i++) rc = opd_stack_push(&s, args[i]);
  return opd__call_tensor(rc, &to_copy, "aten::_to_copy", &s, out);
}

/* ---- dot, vdot, addmv ---- */

/* sum of a[i] * b[i] over n elements of dtype t at strides sa, sb (elements): floats in double,
 * integers modulo 2^64 */
static void dot_into(opd_dtype t, const char *a, int64_t sa, const char *b, int64_t sb, int64_t n,
                     char *out) {
  int64_t es = (int64_t)opd_dtype_size(t);
  if (opd_dtype_is_floating(t)) {
    double s = 0;
    for (int64_t i = 0; i < n; i++)
      s += load_double(a + i * sa * es, t) * load_double(b + i * sb * es, t);
    store_double(out, t, s);
  } else {
    uint64_t s = 0;
    for (int64_t i = 0; i < n; i++)
      s += load_bits(a + i * sa * es, t) * load_bits(b + i * sb * es, t);
    store_bits(out, t, s);
  }
}

static int dot_cpu(const char *name, opd_tensor *self, opd_tensor *other, opd_tensor **out) {
  opd_out_spec spec;
  int rc = opd__dot_output(name, self, other, &spec, out);
  if (rc) return rc;
  dot_into(spec.dtype, opd_tensor_data(self), opd_tensor_strides(self)[0], opd_tensor_data(other),
           opd_tensor_strides(other)[0], self->numel, opd_tensor_data(*out));
  return 0;
}

/* vdot conjugates self: the same as dot for real dtypes */
OPD__DEFINE_DOT_KERNELS(cpu, dot_cpu)

/* addmv as the row vector out^T (1 x m) = beta * self^T + alpha * vec^T (1 x k) @ mat^T (k x m),
 * one gemm (OpenBLAS reads mat^T in place as mat transposed); self, of another dtype than the
 * result, is converted first (PyTorch's result.copy_(self)). */
int opd__cpu_addmv(const opd_kernel_ctx *ctx, opd_tensor *self, opd_tensor *mat, opd_tensor *vec,
                   opd_scalar beta, opd_scalar alpha, opd_tensor **out) {
  (void)ctx;
  opd_out_spec spec;
  int rc = opd__addmv_output(self, mat, vec, &spec, out);
  if (rc) return rc;
  const int64_t *ms = opd_tensor_sizes(mat), *mst = opd_tensor_strides(mat);
  int64_t k = ms[1], vs = opd_tensor_strides(vec)[0];
  gemm_args g = {.t = spec.dtype,
                 .m = 1,
                 .n = ms[0],
                 .k = k,
                 .a = {opd_tensor_data(vec), k * vs, vs},
                 .b = {opd_tensor_data(mat), mst[1], mst[0]},
                 .c = opd_tensor_data(*out)};
  if ((*out)->numel == 0) return 0;
  rc = set_coefficients(&g, alpha, beta);
  opd_tensor *converted = NULL;
  if (!rc && g.use_beta) rc = convert_self(self, g.t, &converted);
  opd_tensor *src = converted ? converted : self;
  if (rc == 0 && g.k == 0 && g.use_beta) {
    rc = scale_self(&g, src, beta);
  } else if (rc == 0 && g.k == 0) {
    memset(g.c, 0, (size_t)(*out)->numel * opd_dtype_size(g.t));
  } else if (rc == 0) {
    if (g.use_beta) fill_from_self(g.c, g.m, g.n, src);
    rc = gemm(&g);
  }
  if (converted) opd_tensor_release(converted);
  if (rc) opd_tensor_release(*out);
  return rc;
}

/* ---- baddbmm, addbmm ---- */

/* c[bs x m x n] = self broadcast (right-aligned, stride 0 along size-1 and missing dims) */
static void fill_broadcast3(char *c, const int64_t *size, opd_tensor *self) {
  size_t es = opd_dtype_size(opd_tensor_dtype(self));
  int64_t st[3] = {0, 0, 0};
  for (int d = 0; d < self->ndim; d++) {
    int od = 3 - self->ndim + d;
    st[od] = opd_tensor_sizes(self)[d] == 1 ? 0 : opd_tensor_strides(self)[d];
  }
  const char *s = opd_tensor_data(self);
  for (int64_t b = 0; b < size[0]; b++)
    for (int64_t i = 0; i < size[1]; i++)
      for (int64_t j = 0; j < size[2]; j++)
        memcpy(c + ((b * size[1] + i) * size[2] + j) * (int64_t)es,
               s + (b * st[0] + i * st[1] + j * st[2]) * (int64_t)es, es);
}

int opd__cpu_baddbmm(const opd_kernel_ctx *ctx, opd_tensor *self, opd_tensor *batch1,
                     opd_tensor *batch2, opd_scalar beta, opd_scalar alpha, opd_tensor **out) {
  (void)ctx;
  opd_out_spec spec;
  opd_device device;
  int rc = opd__baddbmm_meta(self, batch1, batch2, &spec, &device);
  if (!rc) rc = opd__alloc_output(&spec, device, out);
  if (rc) return rc;
  int64_t bs = spec.sizes[0], m = spec.sizes[1], n = spec.sizes[2];
  int64_t k = opd_tensor_sizes(batch1)[2];
  bmm_job j = {.a = mat_of(batch1, 1),
               .b = mat_of(batch2, 1),
               .sa = opd_tensor_strides(batch1)[0],
               .sb = opd_tensor_strides(batch2)[0],
               .m = m,
               .n = n,
               .k = k,
               .t = spec.dtype,
               .c = opd_tensor_data(*out),
               .coef = {.t = spec.dtype}};
  if ((*out)->numel == 0) return 0;
  rc = set_coefficients(&j.coef, alpha, beta);
  opd_tensor *converted = NULL;
  if (!rc && j.coef.use_beta) rc = convert_self(self, spec.dtype, &converted);
  if (!rc && j.coef.use_beta) fill_broadcast3(j.c, spec.sizes, converted ? converted : self);
  if (converted) opd_tensor_release(converted);
  if (rc) {
    opd_tensor_release(*out);
    return rc;
  }
  if (k == 0) {
    if (j.coef.use_beta)
      scale_by_beta(&j.coef, j.c, (*out)->numel);
    else
      memset(j.c, 0, (size_t)(*out)->numel * opd_dtype_size(spec.dtype));
    return 0;
  }
  return bmm_run(&j, bs, out);
}

/* addbmm = addmm(self, batch1 as [m, bs * k] (its batches side by side), batch2 as [bs * k, n],
 * beta, alpha): the sum of the batch's products is one product. */
int opd__cpu_addbmm(const opd_kernel_ctx *ctx, opd_tensor *self, opd_tensor *batch1,
                    opd_tensor *batch2, opd_scalar beta, opd_scalar alpha, opd_tensor **out) {
  (void)ctx;
  static const opd_operator *permute, *reshape, *addmm;
  opd_out_spec spec;
  opd_device device;
  int rc = opd__addbmm_meta(self, batch1, batch2, &spec, &device);
  if (rc) return rc;
  const int64_t *a = opd_tensor_sizes(batch1), *b = opd_tensor_sizes(batch2);
  int64_t perm[3] = {1, 0, 2}, lhs[2] = {a[1], a[0] * a[2]}, rhs[2] = {b[0] * b[1], b[2]};
  opd_tensor *p = NULL, *l = NULL, *r = NULL;
  opd_stack s;
  opd_stack_init(&s);
  rc = opd_stack_push(&s, opd_iv_tensor_borrow(batch1));
  if (!rc) rc = opd__push_int_list(&s, (opd_int_list){perm, 3});
  rc = opd__call_tensor(rc, &permute, "aten::permute", &s, &p);
  opd_tensor *src[2] = {p, batch2};
  int64_t *shape[2] = {lhs, rhs};
  opd_tensor **dst[2] = {&l, &r};
  for (int i = 0; i < 2 && !rc; i++) {
    opd_stack_init(&s);
    rc = opd_stack_push(&s, opd_iv_tensor_borrow(src[i]));
    if (!rc) rc = opd__push_int_list(&s, (opd_int_list){shape[i], 2});
    rc = opd__call_tensor(rc, &reshape, "aten::reshape", &s, dst[i]);
  }
  if (!rc) {
    opd_stack_init(&s);
    opd_ivalue args[] = {opd_iv_tensor_borrow(self), opd_iv_tensor_borrow(l),
                         opd_iv_tensor_borrow(r), opd_iv_scalar(beta), opd_iv_scalar(alpha)};
    for (int i = 0; i < 5 && !rc; i++) rc = opd_stack_push(&s, args[i]);
    rc = opd__call_tensor(rc, &addmm, "aten::addmm", &s, out);
  }
  opd_tensor *tmp[] = {p, l, r};
  for (int i = 0; i < 3; i++)
    if (tmp[i]) opd_tensor_release(tmp[i]);
  return rc;
}

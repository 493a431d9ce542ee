/* softmax.c: the CPU kernels of _softmax and _log_softmax.
 *
 * [Note: Softmax on the CPU]
 * The input is seen as (outer, K, inner): K elements along `dim`, outer and inner the products
 * of the sizes before and after it; the output is contiguous. Each group of K elements is
 * normalized in passes that stay in cache: the maximum; exp(x - max), stored for softmax, and
 * its sum; then the scaling by 1 / sum, or x - max - log(sum) for log_softmax. Subtracting the
 * maximum keeps every exp in [0, 1], so nothing overflows; a group whose maximum is -inf or
 * NaN, or that holds +inf, comes out NaN, as in PyTorch. Two schedules:
 *   - inner == 1 (dim is the innermost non-trivial dim): rows, split over threads. Rows that
 *     are not contiguous are gathered ROWS at a time into their output rows (float16 and
 *     bfloat16 rows into a float buffer) and normalized there.
 *   - inner > 1: strips of up to COLS neighbouring columns; each pass over a K x COLS block
 *     is vectorized across the columns. Read in place when the dims after `dim` are one
 *     contiguous run of a float32 / float64 tensor, else gathered into a buffer first.
 * float32 computes in float with exp_f32 below, which GCC vectorizes (libm's expf is a call
 * per element), in its form for x <= 0 (exp_nonpos_f32: the same bits, two fix-ups fewer;
 * 11% off a (4096, 1024) softmax on one thread); float64 in double with libm; float16 and
 * bfloat16 in float.
 */
#include <assert.h>
#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "meta/reduce_meta.h"
#include "reduce_walk.h"
#include "src/parallel.h"
#include "opd/memory.h"

enum { LANES = 16, COLS = 256, ROWS = 16, GRAIN = 32768 };

/* [Note: A vectorizable expf]
 * exp(x) = 2^n * exp(r), n = round(x / ln2), r = x - n * ln2 in [-ln2/2, ln2/2], with ln2 split
 * in two (Cody-Waite) so r is exact enough; exp(r) - 1 is a degree-5 polynomial (the
 * coefficients of ARM's optimized-routines expf); n is rounded by adding 1.5 * 2^23
 * and read from the sum's low bits. The scale is built as 2^(n-1) * 2 so that n = 128 (x up to
 * log(FLT_MAX)) stays representable. The special cases are fixed up afterwards with integer
 * masks on the bits of x, because a float compare-and-select around arithmetic that may trap
 * keeps GCC from vectorizing without -ffast-math: x < -86.6 (including -inf) gives 0 (exp is
 * below 2.6e-38 there; the few denormal results are flushed), x > log(FLT_MAX) (including
 * +inf) gives +inf, NaN gives NaN. Relative error below 2e-7 (about 1.7 ulp) elsewhere, checked
 * against libm by the tests. */
/* The bits of 2^n e^r before the special cases are fixed up (the Note's polynomial). */
static inline uint32_t exp_unfixed_bits(float x) {
  float z = x * 0x1.715476p+0f + 0x1.8p23f;
  uint32_t zi;
  memcpy(&zi, &z, sizeof zi);
  float n = z - 0x1.8p23f;
  float r = x - n * 0x1.62e4p-1f;
  r = r - n * 0x1.7f7d1cp-20f;
  uint32_t e = (zi - 0x4B400000u + 126u) << 23; /* the bits of 2^(n-1) */
  float scale;
  memcpy(&scale, &e, sizeof scale);
  float r2 = r * r;
  float p = 0x1.0e4020p-7f * r + 0x1.573e2ep-5f;
  float q = 0x1.555e66p-3f * r + 0x1.fffdb6p-2f;
  q = p * r2 + q;
  p = 0x1.ffffecp-1f * r;
  float poly = q * r2 + p;
  float y = (poly * scale + scale) * 2.0f;
  uint32_t yi;
  memcpy(&yi, &y, sizeof yi);
  return yi;
}

/* yi with NaN's bits where x (bits xi) is NaN. */
static inline float nan_fixed(uint32_t yi, uint32_t xi) {
  uint32_t nan = 0u - (uint32_t)((xi & 0x7fffffffu) > 0x7f800000u);
  yi = (yi & ~nan) | (nan & (xi | 0x00400000u));
  float y;
  memcpy(&y, &yi, sizeof y);
  return y;
}

static inline float exp_f32(float x) {
  uint32_t xi;
  memcpy(&xi, &x, sizeof xi);
  uint32_t a = xi & 0x7fffffffu, neg = xi >> 31;
  uint32_t tiny = 0u - (neg & (uint32_t)(a > 0x42AD3333u));        /* x < -86.6 */
  uint32_t huge = 0u - ((neg ^ 1u) & (uint32_t)(a > 0x42B17218u)); /* x > log(FLT_MAX) */
  uint32_t yi = exp_unfixed_bits(x);
  return nan_fixed((yi & ~(tiny | huge)) | (huge & 0x7f800000u), xi);
}

/* exp_f32 for x <= 0 or NaN, the only arguments softmax gives it (x - max of its group; x is
 * NaN or at most max, and inf - inf is NaN): the same bits (tests/test_reduce.c compares
 * them), without the fix-up for x > log(FLT_MAX), which cannot apply. */
static inline float exp_nonpos_f32(float x) {
  uint32_t xi;
  memcpy(&xi, &x, sizeof xi);
  uint32_t tiny = 0u - (uint32_t)(xi > 0xC2AD3333u); /* x < -86.6 (and negative NaNs: next) */
  return nan_fixed(exp_unfixed_bits(x) & ~tiny, xi);
}

/* The exps the tests check: against libm, and against each other. */
float opd__softmax_exp_f32(float x);
float opd__softmax_exp_f32(float x) {
  return exp_f32(x);
}
float opd__softmax_exp_nonpos_f32(float x);
float opd__softmax_exp_nonpos_f32(float x) {
  return exp_nonpos_f32(x);
}

/* One contiguous float32 row; src may be dst. The maximum is taken on the order-preserving
 * integer image of the floats, which vectorizes (a float max reduction does not without
 * -ffast-math); NaN needs no care there, since any NaN makes the sum, and so the row, NaN. */
OPD__SIMD_CLONES static void row_f32(const float *src, float *dst, int64_t n, bool is_log) {
  int32_t km = INT32_MIN;
  for (int64_t i = 0; i < n; i++) {
    int32_t k;
    memcpy(&k, &src[i], sizeof k);
    k ^= (k >> 31) & 0x7fffffff;
    km = k > km ? k : km;
  }
  km ^= (km >> 31) & 0x7fffffff;
  float mx;
  memcpy(&mx, &km, sizeof mx);
  float lane[LANES] = {0}, sum = 0;
  int64_t i = 0;
  if (is_log) {
    for (; i + LANES <= n; i += LANES)
      for (int j = 0; j < LANES; j++) lane[j] += exp_nonpos_f32(src[i + j] - mx);
  } else {
    for (; i + LANES <= n; i += LANES)
      for (int j = 0; j < LANES; j++) {
        float e = exp_nonpos_f32(src[i + j] - mx);
        dst[i + j] = e;
        lane[j] += e;
      }
  }
  for (int j = 0; j < LANES; j++) sum += lane[j];
  for (; i < n; i++) {
    float e = exp_nonpos_f32(src[i] - mx);
    if (!is_log) dst[i] = e;
    sum += e;
  }
  if (is_log) {
    float lse = logf(sum);
    for (i = 0; i < n; i++) dst[i] = (src[i] - mx) - lse;
  } else {
    float inv = 1.0f / sum;
    for (i = 0; i < n; i++) dst[i] *= inv;
  }
}

/* A K x w block (w <= COLS): column j of row r at src[r * ss + j], written to dst[r * ds + j];
 * src may be dst (with ss == ds). */
#define DEFINE_COLS(NAME, T, EXP, LOG)                                                        \
  OPD__SIMD_CLONES static void NAME(const T *src, int64_t ss, T *dst, int64_t ds, int64_t k,  \
                                    int64_t w, bool is_log) {                                 \
    T mx[COLS], sum[COLS];                                                                    \
    for (int64_t j = 0; j < w; j++) {                                                         \
      mx[j] = -INFINITY;                                                                      \
      sum[j] = 0;                                                                             \
    }                                                                                         \
    for (int64_t r = 0; r < k; r++)                                                           \
      for (int64_t j = 0; j < w; j++) {                                                       \
        T v = src[r * ss + j];                                                                \
        mx[j] = v > mx[j] ? v : mx[j];                                                        \
      }                                                                                       \
    if (is_log) {                                                                             \
      for (int64_t r = 0; r < k; r++)                                                         \
        for (int64_t j = 0; j < w; j++) sum[j] += EXP(src[r * ss + j] - mx[j]);               \
      for (int64_t j = 0; j < w; j++) sum[j] = LOG(sum[j]);                                   \
      for (int64_t r = 0; r < k; r++)                                                         \
        for (int64_t j = 0; j < w; j++) dst[r * ds + j] = (src[r * ss + j] - mx[j]) - sum[j]; \
    } else {                                                                                  \
      for (int64_t r = 0; r < k; r++)                                                         \
        for (int64_t j = 0; j < w; j++) {                                                     \
          T e = EXP(src[r * ss + j] - mx[j]);                                                 \
          dst[r * ds + j] = e;                                                                \
          sum[j] += e;                                                                        \
        }                                                                                     \
      for (int64_t j = 0; j < w; j++) sum[j] = 1 / sum[j];                                    \
      for (int64_t r = 0; r < k; r++)                                                         \
        for (int64_t j = 0; j < w; j++) dst[r * ds + j] *= sum[j];                            \
    }                                                                                         \
  }

DEFINE_COLS(cols_f32, float, exp_nonpos_f32, logf)
DEFINE_COLS(cols_f64, double, exp, log)

typedef struct softmax_ctx {
  bool is_log;
  opd_dtype dt;
  size_t esz;
  const char *in;
  char *out;
  int64_t k, inner, sd;   /* size of and input stride along dim; elements after it */
  opd__dims outer, after; /* input walks of the dims before and after dim */
  bool after_contig;      /* `after` is one contiguous run */
  atomic_bool nomem;
} softmax_ctx;

/* Gathers the g rows at input offsets offs into buf (row i at i * k) in the compute type: down
 * the rows together, so that each cache line and page of a transposed input is visited once
 * for all of them. */
static void gather_rows(const softmax_ctx *s, const int64_t *offs, int64_t g, void *buf) {
  int64_t k = s->k, esz = (int64_t)s->esz;
  float *f = buf;
  double *d = buf;
  for (int64_t r = 0; r < k; r++) {
    const char *p = s->in + r * s->sd * esz;
    switch (s->dt) {
    case OPD_FLOAT32:
      for (int64_t i = 0; i < g; i++) f[i * k + r] = *(const float *)(p + offs[i] * esz);
      break;
    case OPD_FLOAT64:
      for (int64_t i = 0; i < g; i++) d[i * k + r] = *(const double *)(p + offs[i] * esz);
      break;
    case OPD_FLOAT16:
      for (int64_t i = 0; i < g; i++)
        f[i * k + r] = opd_half_to_float(*(const uint16_t *)(p + offs[i] * esz));
      break;
    default:
      assert(s->dt == OPD_BFLOAT16);
      for (int64_t i = 0; i < g; i++)
        f[i * k + r] = opd_bf16_to_float(*(const uint16_t *)(p + offs[i] * esz));
    }
  }
}

static void rows_task(void *ctx, int64_t begin, int64_t end) {
  softmax_ctx *s = ctx;
  int64_t k = s->k, esz = (int64_t)s->esz;
  bool f32 = s->dt == OPD_FLOAT32, f64 = s->dt == OPD_FLOAT64, gather = s->sd != 1 && k > 1;
  float *tmp = NULL;
  int64_t group = end - begin < ROWS ? end - begin : ROWS;
  if (!f32 && !f64 && !(tmp = opd__malloc((size_t)(group * k) * sizeof *tmp))) {
    atomic_store(&s->nomem, true);
    return;
  }
  opd__iter it;
  opd__iter_seek(&it, &s->outer, begin);
  for (int64_t o = begin; o < end;) {
    int64_t g = end - o < group ? end - o : group, offs[ROWS];
    for (int64_t i = 0; i < g; i++) {
      offs[i] = it.off;
      if (o + i + 1 < end) opd__iter_step(&it, 1);
    }
    char *dst = s->out + o * k * esz;
    if (f32 || f64) {
      if (gather) gather_rows(s, offs, g, dst);
      for (int64_t i = 0; i < g; i++) {
        char *d = dst + i * k * esz;
        const char *src = gather ? d : s->in + offs[i] * esz;
        if (f32)
          row_f32((const float *)src, (float *)d, k, s->is_log);
        else
          cols_f64((const double *)src, 1, (double *)d, 1, k, 1, s->is_log);
      }
    } else {
      gather_rows(s, offs, g, tmp);
      for (int64_t i = 0; i < g; i++) row_f32(tmp + i * k, tmp + i * k, k, s->is_log);
      for (int64_t i = 0; i < g * k; i++) opd__store_float(dst + i * esz, s->dt, tmp[i]);
    }
    o += g;
  }
  opd__free(tmp);
}

/* Gathers rows [0, k) x columns [j0, j0 + w) of the group at `base` into tmp (row stride w) in
 * the compute type. */
static void gather_block(const softmax_ctx *s, const char *base, int64_t j0, int64_t w, void *tmp) {
  bool f64 = s->dt == OPD_FLOAT64;
  size_t tsz = f64 ? sizeof(double) : sizeof(float);
  opd__iter start;
  opd__iter_seek(&start, &s->after, j0);
  for (int64_t r = 0; r < s->k; r++) {
    opd__iter it = start;
    for (int64_t j = 0; j < w;) {
      int64_t run = opd__iter_run_left(&it) < w - j ? opd__iter_run_left(&it) : w - j;
      const char *p = base + (r * s->sd + it.off) * (int64_t)s->esz;
      int64_t stride = it.d->stride[it.d->n - 1];
      void *d = (char *)tmp + (size_t)(r * w + j) * tsz;
      if (f64)
        opd__load_f64(p, stride, s->dt, run, d);
      else
        opd__load_f32(p, stride, s->dt, run, d);
      j += run;
      if (j < w) opd__iter_step(&it, run);
    }
  }
}

static void cols_task(void *ctx, int64_t begin, int64_t end) {
  softmax_ctx *s = ctx;
  int64_t k = s->k, inner = s->inner, strips = (inner + COLS - 1) / COLS;
  int64_t esz = (int64_t)s->esz;
  bool f32 = s->dt == OPD_FLOAT32, f64 = s->dt == OPD_FLOAT64;
  bool gather = !s->after_contig || !(f32 || f64);
  void *tmp = NULL;
  size_t width = (size_t)(inner < COLS ? inner : COLS);
  if (gather && !(tmp = opd__malloc((size_t)k * width * (f64 ? sizeof(double) : sizeof(float))))) {
    atomic_store(&s->nomem, true);
    return;
  }
  for (int64_t t = begin; t < end; t++) {
    int64_t o = t / strips, j0 = t % strips * COLS, w = inner - j0 < COLS ? inner - j0 : COLS;
    opd__iter oit;
    opd__iter_seek(&oit, &s->outer, o);
    const char *base = s->in + oit.off * esz;
    char *dst = s->out + (o * k * inner + j0) * esz;
    if (!gather) {
      const char *src = base + j0 * esz;
      if (f32)
        cols_f32((const float *)src, s->sd, (float *)dst, inner, k, w, s->is_log);
      else
        cols_f64((const double *)src, s->sd, (double *)dst, inner, k, w, s->is_log);
      continue;
    }
    gather_block(s, base, j0, w, tmp);
    if (f64)
      cols_f64(tmp, w, tmp, w, k, w, s->is_log);
    else
      cols_f32(tmp, w, tmp, w, k, w, s->is_log);
    for (int64_t r = 0; r < k; r++) {
      char *row = dst + r * inner * esz;
      if (f32 || f64)
        memcpy(row, (char *)tmp + r * w * esz, (size_t)(w * esz));
      else
        for (int64_t j = 0; j < w; j++)
          opd__store_float(row + j * esz, s->dt, ((const float *)tmp)[r * w + j]);
    }
  }
  opd__free(tmp);
}

static int softmax_cpu(opd_tensor *self, int64_t dim, bool half_to_float, bool is_log,
                       opd_tensor **out) {
  opd_out_spec spec;
  int64_t d = 0;
  int rc = opd__softmax_meta(self, dim, half_to_float, &spec, &d);
  if (rc) return rc;
  if (half_to_float)
    return opd_error(OPD_EINVAL, "softmax with half to float conversion is not supported on CPU");
  opd_dtype dt = opd_tensor_dtype(self);
  int ndim = self->ndim;
  if (self->numel > 0 && !opd_dtype_is_floating(dt))
    return opd_error(OPD_EINVAL, "\"%s%s_kernel_impl\" not implemented for '%s'",
                     is_log ? "log_softmax" : "softmax", d >= ndim - 1 ? "_lastdim" : "",
                     opd_dtype_c10_name(dt));
  opd_tensor *res;
  rc = opd__alloc_output(&spec, opd_tensor_device(self), &res);
  if (rc) return rc;
  if (self->numel > 0) {
    softmax_ctx s = {.is_log = is_log, .dt = dt, .esz = opd_dtype_size(dt)};
    s.in = opd_tensor_data(self);
    s.out = opd_tensor_data(res);
    s.k = ndim ? opd_tensor_sizes(self)[d] : 1;
    s.sd = ndim ? opd_tensor_strides(self)[d] : 1;
    s.inner = 1;
    for (int i = (int)d + 1; i < ndim; i++) s.inner *= opd_tensor_sizes(self)[i];
    opd__dims_of(self, 0, ndim ? (int)d : 0, &s.outer);
    opd__dims_of(self, ndim ? (int)d + 1 : 0, ndim, &s.after);
    s.after_contig = s.after.n == 1 && s.after.stride[0] == 1;
    atomic_init(&s.nomem, false);
    int64_t outer = self->numel / (s.k * s.inner);
    if (s.inner == 1) {
      opd__parallel_for(0, outer, s.k >= GRAIN ? 1 : GRAIN / s.k, rows_task, &s);
    } else {
      int64_t strips = (s.inner + COLS - 1) / COLS, work = s.k * COLS;
      opd__parallel_for(0, outer * strips, work >= GRAIN ? 1 : GRAIN / work, cols_task, &s);
    }
    if (atomic_load(&s.nomem)) {
      opd_tensor_release(res);
      return opd_error(OPD_ENOMEM, "softmax: out of memory for a work buffer");
    }
  }
  *out = res;
  return 0;
}

int opd__cpu_softmax(const opd_kernel_ctx *ctx, opd_tensor *self, int64_t dim, bool half_to_float,
                     opd_tensor **out) {
  (void)ctx;
  return softmax_cpu(self, dim, half_to_float, false, out);
}

int opd__cpu_log_softmax(const opd_kernel_ctx *ctx, opd_tensor *self, int64_t dim,
                         bool half_to_float, opd_tensor **out) {
  (void)ctx;
  return softmax_cpu(self, dim, half_to_float, true, out);
}

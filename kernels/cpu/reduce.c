/* reduce.c: the CPU kernels of sum.dim_IntList, mean.dim, nansum, prod, amax, amin, max, min,
 * argmax, argmin, any, all and count_nonzero, on one strided reduction engine.
 *
 * [Note: The reduction engine]
 * A reduction splits the input's dims into kept dims (in output order) and reduced dims, drops
 * size-1 dims and merges neighbours that are contiguous with each other; reduced dims are first
 * ordered by decreasing stride (stride-0 dims of expanded tensors outermost), except for argmax,
 * and argmin, whose indices count in row-major order. The input is read in place. Values accumulate
 * in one of three compute kinds: float (float32, float16 and bfloat16 sums and maxima), double
 * (float64) and int64 (integer and bool results; sums and products wrap as PyTorch's do). Products
 * of floats accumulate in double. any, all and count_nonzero read every element as 0 or 1 (its
 * being non-zero) into int64, as does a product into a bool result. A span of the input that is
 * contiguous and already of the compute type is reduced where it lies; anything else is
 * converted in chunks of BUF elements into a buffer first. Three schedules, none of which
 * depends on the thread count, so neither do the results:
 *   rows:    each output reduces its elements; outputs are split over threads;
 *   columns: (sums, means and maxima) when the innermost kept dim is more contiguous than the
 *            reduced dims (a sum over dim 0 of a row-major matrix), a task accumulates a strip of
 * up to COLS neighbouring outputs, reading one row of the strip per reduced position; split:   a
 * single output over many elements is cut into fixed blocks of SPLIT elements (more past 2^28
 * elements: [Note: The partials of a split reduction are bounded]) whose partial results
 * are combined in order. Contiguous spans of the compute type are reduced by the loops of
 * reduce_span.c, vectorized per instruction set with the same lanes on every set (see [Note:
 * Reductions per instruction set]): float32 sums in 64 float lanes within blocks of 4096 elements,
 * the block sums in double; in the columns schedule each output has one float accumulator, the
 * vector running across the strip. The error stays within FORMAT.md's bound for any summation
 * order, 2 (K + 2) u sum|x|.
 */
#include <assert.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "meta/reduce_meta.h"
#include "reduce_span.h"
#include "reduce_walk.h"
#include "src/parallel.h"
#include "opd/cancel.h"
#include "opd/memory.h"

enum { BUF = 512, COLS = 64, SPLIT = 65536, GRAIN = 32768, MAX_PARTS = 4096 };

/* [Note: The partials of a split reduction are bounded]
 * The split schedule keeps one partial result (an acc, 40 bytes) per block. With blocks of
 * SPLIT elements a sum over an aten::expand to 2^40 elements would hold 2^24 of them, 640 MiB
 * that no limit counts, for an input that holds 4 bytes. So a reduction has at most MAX_PARTS
 * blocks (160 KiB of partials): past MAX_PARTS * SPLIT elements (2^28) a block is the
 * smallest multiple of SPLIT that keeps their count within it. Block sizes depend on the
 * element count only, never on the threads, so the results do not either; 4096 blocks
 * still spread over every thread. */

typedef enum { K_F32, K_F64, K_I64 } compute_kind;
typedef enum {
  OP_SUM,
  OP_MEAN,
  OP_NANSUM,
  OP_PROD,
  OP_MAX,
  OP_MIN,
  OP_ARGMAX,
  OP_ARGMIN,
  OP_ANY,
  OP_ALL,
  OP_COUNT /* count_nonzero */
} red_op;

static int64_t stride_rank(int64_t stride) {
  return stride == 0 ? INT64_MAX : stride < 0 ? -stride : stride;
}

/* Stable insertion sort by decreasing stride, stride 0 first. */
static void dims_sort(opd__dims *d) {
  for (int i = 1; i < d->n; i++) {
    int64_t s = d->size[i], t = d->stride[i];
    int j = i;
    for (; j > 0 && stride_rank(d->stride[j - 1]) < stride_rank(t); j--) {
      d->size[j] = d->size[j - 1];
      d->stride[j] = d->stride[j - 1];
    }
    d->size[j] = s;
    d->stride[j] = t;
  }
}

/* ---- conversions ---- */

/* float -> int64 as x86 converts: out of range and NaN give INT64_MIN. */
static inline int64_t f2i(double v) {
  return v >= -0x1p63 && v < 0x1p63 ? (int64_t)v : INT64_MIN;
}

#define LOAD_CASE(DT, T, EXPR)        \
  case DT: {                          \
    const T *s = (const T *)p;        \
    for (int64_t i = 0; i < n; i++) { \
      T v = s[i * stride];            \
      d[i] = (EXPR);                  \
    }                                 \
  } break;

/* NAME(p, stride, dtype, n, d) (see reduce_walk.h): converts n elements of `dtype` at p, p +
 * stride, ... */
#define DEFINE_LOAD(LINKAGE, NAME, DST, FROM_INT, FROM_BOOL, FROM_FLOAT)              \
  LINKAGE void NAME(const char *p, int64_t stride, opd_dtype dt, int64_t n, DST *d) { \
    switch (dt) {                                                                     \
      LOAD_CASE(OPD_UINT8, uint8_t, FROM_INT(v))                                      \
      LOAD_CASE(OPD_INT8, int8_t, FROM_INT(v))                                        \
      LOAD_CASE(OPD_INT16, int16_t, FROM_INT(v))                                      \
      LOAD_CASE(OPD_INT32, int32_t, FROM_INT(v))                                      \
      LOAD_CASE(OPD_INT64, int64_t, FROM_INT(v))                                      \
      LOAD_CASE(OPD_BOOL, uint8_t, FROM_BOOL(v))                                      \
      LOAD_CASE(OPD_FLOAT16, uint16_t, FROM_FLOAT(opd_half_to_float(v)))              \
      LOAD_CASE(OPD_BFLOAT16, uint16_t, FROM_FLOAT(opd_bf16_to_float(v)))             \
      LOAD_CASE(OPD_FLOAT32, float, FROM_FLOAT(v))                                    \
      LOAD_CASE(OPD_FLOAT64, double, FROM_FLOAT(v))                                   \
    default: assert(!"dtype");                                                        \
    }                                                                                 \
  }

#define TO_F32(v)  ((float)(v))
#define TO_F64(v)  ((double)(v))
#define TO_I64(v)  ((int64_t)(v))
#define NONZERO(v) ((int64_t)((v) != 0))
#define F_TO_I(v)  f2i((double)(v))
DEFINE_LOAD(, opd__load_f32, float, TO_F32, TO_F32, TO_F32)
DEFINE_LOAD(, opd__load_f64, double, TO_F64, TO_F64, TO_F64)
DEFINE_LOAD(static, load_i64, int64_t, TO_I64, NONZERO, F_TO_I)
DEFINE_LOAD(static, load_nonzero, int64_t, NONZERO, NONZERO, NONZERO)

static void store_int(char *p, opd_dtype dt, int64_t v) {
  switch (dt) {
  case OPD_UINT8: *(uint8_t *)p = (uint8_t)v; break;
  case OPD_BOOL: *(uint8_t *)p = v != 0; break;
  case OPD_INT8: *(int8_t *)p = (int8_t)v; break;
  case OPD_INT16: *(int16_t *)p = (int16_t)v; break;
  case OPD_INT32: *(int32_t *)p = (int32_t)v; break;
  case OPD_INT64: *(int64_t *)p = v; break;
  default: assert(!"integer dtype");
  }
}

void opd__store_float(char *p, opd_dtype dt, double v) {
  switch (dt) {
  case OPD_FLOAT32: *(float *)p = (float)v; break;
  case OPD_FLOAT64: *(double *)p = v; break;
  case OPD_FLOAT16: *(uint16_t *)p = opd_float_to_half((float)v); break;
  case OPD_BFLOAT16: *(uint16_t *)p = opd_float_to_bf16((float)v); break;
  default: assert(!"floating dtype");
  }
}

/* ---- accumulators ---- */

typedef struct red {
  red_op op;
  compute_kind kind;
  bool nonzero; /* elements count as 0 / 1 (see [Note: The reduction engine]) */
  bool direct;  /* the input's dtype is the compute type */
  opd_dtype in_dtype, out_dtype;
  size_t in_size, out_size, buf_size; /* element sizes: input, output, compute type */
  const opd__span_kernels *span;      /* the loops over contiguous spans */
  const char *in;
  char *out;
  opd__dims kept, kept_outer, red; /* kept_outer: kept without its innermost dim */
  int64_t nout, nred;
} red;

/* One output's state: sums and products in d (float kinds) or u (also any / all), maxima and
 * minima in f / d / i, argmax's and argmin's index. */
typedef struct acc {
  double d;
  float f;
  uint64_t u;
  int64_t i;
  int64_t idx; /* argmax: -1 before the first element */
} acc;

static acc acc_init(const red *r) {
  switch (r->op) {
  case OP_MAX: return (acc){.d = -INFINITY, .f = -INFINITY, .i = INT64_MIN, .idx = -1};
  case OP_MIN: return (acc){.d = INFINITY, .f = INFINITY, .i = INT64_MAX, .idx = -1};
  case OP_PROD:
  case OP_ALL: return (acc){.d = 1, .u = 1, .idx = -1};
  default: return (acc){.idx = -1};
  }
}

static inline float min_nan_f(float a, float b) {
  return b < a || b != b ? b : a;
}
static inline double min_nan_d(double a, double b) {
  return b < a || b != b ? b : a;
}

static void load(const red *r, const char *p, int64_t stride, int64_t n, void *buf) {
  if (r->kind == K_F32)
    opd__load_f32(p, stride, r->in_dtype, n, buf);
  else if (r->kind == K_F64)
    opd__load_f64(p, stride, r->in_dtype, n, buf);
  else if (r->nonzero)
    load_nonzero(p, stride, r->in_dtype, n, buf);
  else
    load_i64(p, stride, r->in_dtype, n, buf);
}

/* the first extremum, or the first NaN (CMP: > for argmax, < for argmin) */
#define ARG_SPAN(T, FIELD, CMP)                                         \
  {                                                                     \
    const T *v = x;                                                     \
    T best = a->FIELD;                                                  \
    int64_t idx = a->idx;                                               \
    for (int64_t k = 0; k < n; k++)                                     \
      if (idx < 0 || v[k] CMP best || (v[k] != v[k] && best == best)) { \
        best = v[k];                                                    \
        idx = lin + k;                                                  \
      }                                                                 \
    a->FIELD = best;                                                    \
    a->idx = idx;                                                       \
  }
#define ARGMAX_SPAN(T, FIELD) ARG_SPAN(T, FIELD, >)
#define ARGMIN_SPAN(T, FIELD) ARG_SPAN(T, FIELD, <)

/* Adds n consecutive elements of the compute type, the first at reduced index `lin`. */
static void acc_span(const red *r, acc *a, const void *x, int64_t n, int64_t lin) {
  switch (r->op) {
  case OP_SUM:
  case OP_MEAN:
    if (r->kind == K_F32)
      a->d += r->span->sum_f32(x, n);
    else if (r->kind == K_F64)
      a->d += r->span->sum_f64(x, n);
    else
      a->u += r->span->sum_i64(x, n);
    break;
  case OP_MAX:
    if (r->kind == K_F32) {
      a->f = r->span->max_f32(x, n, a->f);
    } else if (r->kind == K_F64) {
      a->d = r->span->max_f64(x, n, a->d);
    } else {
      const int64_t *v = x;
      for (int64_t k = 0; k < n; k++) a->i = v[k] > a->i ? v[k] : a->i;
    }
    break;
  case OP_ARGMAX:
    if (r->kind == K_F32)
      ARGMAX_SPAN(float, f)
    else if (r->kind == K_F64)
      ARGMAX_SPAN(double, d)
    else
      ARGMAX_SPAN(int64_t, i)
    break;
  case OP_ARGMIN:
    if (r->kind == K_F32)
      ARGMIN_SPAN(float, f)
    else if (r->kind == K_F64)
      ARGMIN_SPAN(double, d)
    else
      ARGMIN_SPAN(int64_t, i)
    break;
  case OP_MIN:
    if (r->kind == K_F32) {
      const float *v = x;
      for (int64_t k = 0; k < n; k++) a->f = min_nan_f(a->f, v[k]);
    } else if (r->kind == K_F64) {
      const double *v = x;
      for (int64_t k = 0; k < n; k++) a->d = min_nan_d(a->d, v[k]);
    } else {
      const int64_t *v = x;
      for (int64_t k = 0; k < n; k++) a->i = v[k] < a->i ? v[k] : a->i;
    }
    break;
  case OP_NANSUM:
    if (r->kind == K_F32) {
      const float *v = x;
      for (int64_t k = 0; k < n; k++) a->d += v[k] != v[k] ? 0.0 : (double)v[k];
    } else if (r->kind == K_F64) {
      const double *v = x;
      for (int64_t k = 0; k < n; k++) a->d += v[k] != v[k] ? 0.0 : v[k];
    } else {
      a->u += r->span->sum_i64(x, n);
    }
    break;
  case OP_PROD:
    if (r->kind == K_F32) {
      const float *v = x;
      for (int64_t k = 0; k < n; k++) a->d *= (double)v[k];
    } else if (r->kind == K_F64) {
      const double *v = x;
      for (int64_t k = 0; k < n; k++) a->d *= v[k];
    } else {
      const int64_t *v = x;
      for (int64_t k = 0; k < n; k++) a->u *= (uint64_t)v[k];
    }
    break;
  case OP_ANY:
  case OP_ALL:
  case OP_COUNT: {
    const int64_t *v = x; /* 0 / 1 */
    if (r->op == OP_COUNT)
      a->u += r->span->sum_i64(x, n);
    else if (r->op == OP_ANY)
      for (int64_t k = 0; k < n; k++) a->u |= (uint64_t)v[k];
    else
      for (int64_t k = 0; k < n; k++) a->u &= (uint64_t)v[k];
  } break;
  }
}

/* Folds b, the partial result of the elements after a's, into a. */
static void acc_combine(const red *r, acc *a, const acc *b) {
  switch (r->op) {
  case OP_SUM:
  case OP_MEAN:
  case OP_NANSUM:
  case OP_COUNT:
    a->d += b->d;
    a->u += b->u;
    break;
  case OP_PROD:
    a->d *= b->d;
    a->u *= b->u;
    break;
  case OP_ANY: a->u |= b->u; break;
  case OP_ALL: a->u &= b->u; break;
  case OP_MAX:
    a->f = opd__max_nan_f(a->f, b->f);
    a->d = opd__max_nan_d(a->d, b->d);
    a->i = b->i > a->i ? b->i : a->i;
    break;
  case OP_MIN:
    a->f = min_nan_f(a->f, b->f);
    a->d = min_nan_d(a->d, b->d);
    a->i = b->i < a->i ? b->i : a->i;
    break;
  case OP_ARGMAX:
  case OP_ARGMIN: {
    bool max = r->op == OP_ARGMAX;
    bool better =
        r->kind == K_F32   ? (max ? b->f > a->f : b->f < a->f) || (b->f != b->f && a->f == a->f)
        : r->kind == K_F64 ? (max ? b->d > a->d : b->d < a->d) || (b->d != b->d && a->d == a->d)
                           : (max ? b->i > a->i : b->i < a->i);
    if (b->idx >= 0 && (a->idx < 0 || better)) *a = *b;
  } break;
  }
}

/* mean = sum / count as PyTorch computes it: the sum rounded to the result dtype, divided in
 * that dtype (float for the reduced-precision ones). */
static double mean_of(const red *r, double sum) {
  if (r->out_dtype == OPD_FLOAT64) return sum / (double)r->nred;
  float s = (float)sum;
  if (r->out_dtype == OPD_FLOAT16) s = opd_half_to_float(opd_float_to_half(s));
  if (r->out_dtype == OPD_BFLOAT16) s = opd_bf16_to_float(opd_float_to_bf16(s));
  return s / (float)r->nred;
}

static void acc_store(const red *r, const acc *a, char *p) {
  switch (r->op) {
  case OP_SUM:
  case OP_NANSUM:
  case OP_PROD:
  case OP_ANY:
  case OP_ALL:
  case OP_COUNT:
    if (r->kind == K_I64)
      store_int(p, r->out_dtype, (int64_t)a->u);
    else
      opd__store_float(p, r->out_dtype, a->d);
    break;
  case OP_MEAN: opd__store_float(p, r->out_dtype, mean_of(r, a->d)); break;
  case OP_MAX:
  case OP_MIN:
    if (r->kind == K_F32)
      opd__store_float(p, r->out_dtype, a->f);
    else if (r->kind == K_F64)
      opd__store_float(p, r->out_dtype, a->d);
    else
      store_int(p, r->out_dtype, a->i);
    break;
  case OP_ARGMAX:
  case OP_ARGMIN: store_int(p, OPD_INT64, a->idx); break;
  }
}

/* ---- schedules ---- */

/* Reduces reduced indices [lin, end) of the output whose kept offset is kofs into a. */
static void reduce_range(const red *r, int64_t kofs, int64_t lin, int64_t end, acc *a) {
  int64_t is = r->red.stride[r->red.n - 1];
  union {
    float f[BUF];
    double d[BUF];
    int64_t i[BUF];
  } buf;
  opd__iter it;
  opd__iter_seek(&it, &r->red, lin);
  int64_t checked = lin;
  while (lin < end) {
    if (lin - checked >= OPD_CANCEL_CHECK_ELEMENTS) { /* [Note: Cancelling long work] */
      if (opd_cancelled()) return;
      checked = lin;
    }
    if (r->direct && is == 1) {
      int64_t run = opd__iter_run_left(&it) < end - lin ? opd__iter_run_left(&it) : end - lin;
      acc_span(r, a, r->in + (kofs + it.off) * (int64_t)r->in_size, run, lin);
      lin += run;
      if (lin < end) opd__iter_step(&it, run);
      continue;
    }
    int64_t start = lin, n = 0;
    while (n < BUF && lin < end) {
      int64_t take = opd__iter_run_left(&it);
      if (take > end - lin) take = end - lin;
      if (take > BUF - n) take = BUF - n;
      load(r, r->in + (kofs + it.off) * (int64_t)r->in_size, is, take,
           (char *)&buf + n * (int64_t)r->buf_size);
      n += take;
      lin += take;
      if (lin < end) opd__iter_step(&it, take);
    }
    acc_span(r, a, &buf, n, start);
  }
}

static void rows_task(void *ctx, int64_t begin, int64_t end) {
  const red *r = ctx;
  opd__iter it;
  opd__iter_seek(&it, &r->kept, begin);
  for (int64_t o = begin; o < end; o++) {
    acc a = acc_init(r);
    reduce_range(r, it.off, 0, r->nred, &a);
    acc_store(r, &a, r->out + o * (int64_t)r->out_size);
    if (o + 1 < end) opd__iter_step(&it, 1);
  }
}

typedef struct split_ctx {
  const red *r;
  int64_t block; /* elements a block: a multiple of SPLIT */
  acc *part;
} split_ctx;

static void split_task(void *ctx, int64_t begin, int64_t end) {
  const split_ctx *s = ctx;
  for (int64_t b = begin; b < end; b++) {
    if (opd_cancelled()) return; /* reduce_range checks within a block too */
    int64_t lo = b * s->block, hi = s->r->nred - lo > s->block ? lo + s->block : s->r->nred;
    s->part[b] = acc_init(s->r);
    reduce_range(s->r, 0, lo, hi, &s->part[b]);
  }
}

typedef union col_acc {
  float f[COLS];
  double d[COLS];
  uint64_t u[COLS];
  int64_t i[COLS];
} col_acc;

OPD__SIMD_CLONES static void col_sum_f32(float *a, const float *v, int64_t w) {
  for (int64_t j = 0; j < w; j++) a[j] += v[j];
}

OPD__SIMD_CLONES static void col_sum_f64(double *a, const double *v, int64_t w) {
  for (int64_t j = 0; j < w; j++) a[j] += v[j];
}

OPD__SIMD_CLONES static void col_sum_i64(uint64_t *a, const int64_t *v, int64_t w) {
  for (int64_t j = 0; j < w; j++) a[j] += (uint64_t)v[j];
}

static void col_add(const red *r, col_acc *a, const void *v, int64_t w) {
  if (r->op == OP_MAX) {
    if (r->kind == K_F32) {
      const float *x = v;
      for (int64_t j = 0; j < w; j++) a->f[j] = opd__max_nan_f(a->f[j], x[j]);
    } else if (r->kind == K_F64) {
      const double *x = v;
      for (int64_t j = 0; j < w; j++) a->d[j] = opd__max_nan_d(a->d[j], x[j]);
    } else {
      const int64_t *x = v;
      for (int64_t j = 0; j < w; j++) a->i[j] = x[j] > a->i[j] ? x[j] : a->i[j];
    }
  } else if (r->kind == K_F32) {
    col_sum_f32(a->f, v, w);
  } else if (r->kind == K_F64) {
    col_sum_f64(a->d, v, w);
  } else {
    col_sum_i64(a->u, v, w);
  }
}

static void cols_task(void *ctx, int64_t begin, int64_t end) {
  const red *r = ctx;
  int64_t kin = r->kept.size[r->kept.n - 1], ks = r->kept.stride[r->kept.n - 1];
  int64_t strips = (kin + COLS - 1) / COLS;
  bool max = r->op == OP_MAX;
  for (int64_t t = begin; t < end; t++) {
    int64_t q = t / strips, j0 = t % strips * COLS, w = kin - j0 < COLS ? kin - j0 : COLS;
    opd__iter oit, rit;
    opd__iter_seek(&oit, &r->kept_outer, q);
    int64_t base = oit.off + j0 * ks;
    col_acc a;
    for (int64_t j = 0; j < w; j++) {
      if (r->kind == K_F32)
        a.f[j] = max ? -INFINITY : 0.0f;
      else if (r->kind == K_F64)
        a.d[j] = max ? -INFINITY : 0.0;
      else if (max)
        a.i[j] = INT64_MIN;
      else
        a.u[j] = 0;
    }
    col_acc buf;
    opd__iter_seek(&rit, &r->red, 0);
    for (int64_t l = 0; l < r->nred; l++) {
      const char *p = r->in + (base + rit.off) * (int64_t)r->in_size;
      const void *v = p;
      if (!r->direct || ks != 1) {
        load(r, p, ks, w, &buf);
        v = &buf;
      }
      col_add(r, &a, v, w);
      if (l % (OPD_CANCEL_CHECK_ELEMENTS / COLS) == 0 && opd_cancelled()) return;
      if (l + 1 < r->nred) opd__iter_step(&rit, 1);
    }
    for (int64_t j = 0; j < w; j++) {
      acc x = acc_init(r);
      if (r->kind == K_F32)
        x.f = x.d = a.f[j];
      else if (r->kind == K_F64)
        x.d = a.d[j];
      else if (max)
        x.i = a.i[j];
      else
        x.u = a.u[j];
      acc_store(r, &x, r->out + (q * kin + j0 + j) * (int64_t)r->out_size);
    }
  }
}

static void run(red *r, const opd_tensor *self, uint64_t mask) {
  const int64_t *sizes = opd_tensor_sizes(self), *strides = opd_tensor_strides(self);
  r->kept.n = r->red.n = 0;
  for (int d = 0; d < self->ndim; d++) {
    opd__dims *x = mask >> d & 1 ? &r->red : &r->kept;
    if (sizes[d] != 1) opd__dims_push(x, sizes[d], strides[d]);
  }
  if (r->op != OP_ARGMAX && r->op != OP_ARGMIN) dims_sort(&r->red);
  opd__dims_coalesce(&r->kept);
  opd__dims_coalesce(&r->red);
  r->kept_outer = r->kept;
  r->kept_outer.n--;
  opd__dims_coalesce(&r->kept_outer);

  int64_t kin = r->kept.size[r->kept.n - 1];
  int64_t kstride = r->kept.stride[r->kept.n - 1], rstride = r->red.stride[r->red.n - 1];
  if (r->nout == 1 && r->nred >= 2 * SPLIT) {
    /* [Note: The partials of a split reduction are bounded] */
    int64_t per = ((r->nred + SPLIT - 1) / SPLIT + MAX_PARTS - 1) / MAX_PARTS;
    split_ctx s = {r, per * SPLIT, NULL};
    int64_t blocks = (r->nred + s.block - 1) / s.block;
    s.part = opd__malloc((size_t)blocks * sizeof(acc));
    if (s.part) {
      opd__parallel_for(0, blocks, 1, split_task, &s);
      if (opd_cancelled()) { /* the partials are not all there */
        opd__free(s.part);
        return;
      }
      acc a = s.part[0];
      for (int64_t b = 1; b < blocks; b++) acc_combine(r, &a, &s.part[b]);
      acc_store(r, &a, r->out);
      opd__free(s.part);
      return;
    }
    /* no memory for the partials: one pass on this thread */
    rows_task(r, 0, 1);
  } else if ((r->op == OP_SUM || r->op == OP_MEAN || r->op == OP_MAX) && kin > 1 &&
             stride_rank(kstride) < stride_rank(rstride)) {
    int64_t tasks = r->nout / kin * ((kin + COLS - 1) / COLS), work = r->nred * COLS;
    opd__parallel_for(0, tasks, work >= GRAIN ? 1 : GRAIN / work, cols_task, r);
  } else {
    opd__parallel_for(0, r->nout, r->nred >= GRAIN ? 1 : GRAIN / r->nred, rows_task, r);
  }
}

static int reduce_cpu(red_op op, opd_tensor *self, uint64_t mask, const opd_out_spec *spec,
                      opd_tensor **out) {
  opd_tensor *res;
  int rc = opd__alloc_output(spec, opd_tensor_device(self), &res);
  if (rc) return rc;
  red r = {.op = op,
           .in_dtype = opd_tensor_dtype(self),
           .out_dtype = spec->dtype,
           .span = opd__span_kernels_get()};
  bool to_out = op == OP_SUM || op == OP_MEAN || op == OP_NANSUM || op == OP_PROD;
  opd_dtype kind_dtype = to_out ? r.out_dtype : r.in_dtype;
  r.nonzero = ((op == OP_SUM || op == OP_NANSUM || op == OP_PROD) && r.out_dtype == OPD_BOOL) ||
              op == OP_ANY || op == OP_ALL || op == OP_COUNT;
  r.kind = r.nonzero                           ? K_I64
           : kind_dtype == OPD_FLOAT64         ? K_F64
           : opd_dtype_is_floating(kind_dtype) ? K_F32
                                               : K_I64;
  r.direct = !r.nonzero && r.in_dtype == (r.kind == K_F32   ? OPD_FLOAT32
                                          : r.kind == K_F64 ? OPD_FLOAT64
                                                            : OPD_INT64);
  r.in_size = opd_dtype_size(r.in_dtype);
  r.out_size = opd_dtype_size(r.out_dtype);
  r.buf_size = r.kind == K_F32 ? sizeof(float) : 8;
  r.in = opd_tensor_data(self);
  r.out = opd_tensor_data(res);
  r.nout = res->numel;
  r.nred = self->numel > 0; /* products of sizes are bounded by numel only when it is not 0 */
  for (int d = 0; d < self->ndim && r.nred; d++)
    if (mask >> d & 1) r.nred *= opd_tensor_sizes(self)[d];
  if (r.nout > 0 && r.nred == 0) {
    /* an empty reduction: sum 0, mean NaN, prod 1, any false, all true (the extrema and their
     * indices raised in their meta functions) */
    assert(op != OP_MAX && op != OP_MIN && op != OP_ARGMAX && op != OP_ARGMIN);
    acc a = acc_init(&r);
    for (int64_t o = 0; o < r.nout; o++) acc_store(&r, &a, r.out + o * (int64_t)r.out_size);
  } else if (r.nout > 0) {
    run(&r, self, mask);
    if (opd_cancelled()) { /* the result is partial: [Note: Cancelling long work] */
      opd_tensor_release(res);
      return opd_cancelled_error("a reduction");
    }
  }
  *out = res;
  return 0;
}

int opd__cpu_sum_dim_intlist(const opd_kernel_ctx *ctx, opd_tensor *self, opd_int_list dim,
                             bool keepdim, opd_dtype dtype, opd_tensor **out) {
  (void)ctx;
  opd_out_spec spec;
  uint64_t mask = 0;
  int rc = opd__sum_meta(self, dim, keepdim, dtype, &spec, &mask);
  return rc ? rc : reduce_cpu(OP_SUM, self, mask, &spec, out);
}

int opd__cpu_mean_dim(const opd_kernel_ctx *ctx, opd_tensor *self, opd_int_list dim, bool keepdim,
                      opd_dtype dtype, opd_tensor **out) {
  (void)ctx;
  opd_out_spec spec;
  uint64_t mask = 0;
  int rc = opd__mean_meta(self, dim, keepdim, dtype, &spec, &mask);
  return rc ? rc : reduce_cpu(OP_MEAN, self, mask, &spec, out);
}

int opd__cpu_amax(const opd_kernel_ctx *ctx, opd_tensor *self, opd_int_list dim, bool keepdim,
                  opd_tensor **out) {
  (void)ctx;
  opd_out_spec spec;
  uint64_t mask = 0;
  int rc = opd__amax_meta(self, dim, keepdim, &spec, &mask);
  return rc ? rc : reduce_cpu(OP_MAX, self, mask, &spec, out);
}

int opd__cpu_argmax(const opd_kernel_ctx *ctx, opd_tensor *self, opd_opt_int dim, bool keepdim,
                    opd_tensor **out) {
  (void)ctx;
  opd_out_spec spec;
  uint64_t mask = 0;
  int rc = opd__argmax_meta(self, dim, keepdim, &spec, &mask);
  if (rc) return rc;
  if (opd_tensor_dtype(self) == OPD_BOOL) {
    /* bool has no argmax kernel, but PyTorch answers 0 for a dim of size 1 before it looks */
    bool size_one =
        dim.has_value && (mask == 0 || opd_tensor_sizes(self)[__builtin_ctzll(mask)] == 1);
    if (!size_one) return opd_error(OPD_EINVAL, "\"argmax_cpu\" not implemented for 'Bool'");
  }
  return reduce_cpu(OP_ARGMAX, self, mask, &spec, out);
}

/* The CPU's compute of the reductions above ([Note: A reduction's wrapper and its device's
 * compute]): call->op a red_op, one result. */
static int reduce_fn(const opd__red_call *call, opd_tensor *self, uint64_t mask,
                     const opd_out_spec *spec, opd_tensor **out, opd_tensor **mean) {
  assert(mean == NULL);
  (void)mean;
  return reduce_cpu((red_op)call->op, self, mask, spec, out);
}

int opd__cpu_nansum(const opd_kernel_ctx *ctx, opd_tensor *self, opd_int_list dim, bool keepdim,
                    opd_dtype dtype, opd_tensor **out) {
  (void)ctx;
  return opd__sum_run(reduce_fn, OP_NANSUM, self, dim, keepdim, dtype, out);
}

int opd__cpu_prod_dim_int(const opd_kernel_ctx *ctx, opd_tensor *self, int64_t dim, bool keepdim,
                          opd_dtype dtype, opd_tensor **out) {
  (void)ctx;
  return opd__prod_run(reduce_fn, OP_PROD, self, (opd_opt_int){.has_value = true, .value = dim},
                       keepdim, dtype, out);
}

int opd__cpu_prod(const opd_kernel_ctx *ctx, opd_tensor *self, opd_dtype dtype, opd_tensor **out) {
  (void)ctx;
  return opd__prod_run(reduce_fn, OP_PROD, self, (opd_opt_int){0}, false, dtype, out);
}

int opd__cpu_amin(const opd_kernel_ctx *ctx, opd_tensor *self, opd_int_list dim, bool keepdim,
                  opd_tensor **out) {
  (void)ctx;
  return opd__amin_run(reduce_fn, OP_MIN, self, dim, keepdim, out);
}

int opd__cpu_max(const opd_kernel_ctx *ctx, opd_tensor *self, opd_tensor **out) {
  (void)ctx;
  return opd__max_all_run(reduce_fn, OP_MAX, "max", self, out);
}

int opd__cpu_min(const opd_kernel_ctx *ctx, opd_tensor *self, opd_tensor **out) {
  (void)ctx;
  return opd__max_all_run(reduce_fn, OP_MIN, "min", self, out);
}

int opd__cpu_argmin(const opd_kernel_ctx *ctx, opd_tensor *self, opd_opt_int dim, bool keepdim,
                    opd_tensor **out) {
  (void)ctx;
  return opd__argmin_run(reduce_fn, OP_ARGMIN, "argmin_cpu", self, dim, keepdim, out);
}

int opd__cpu_any(const opd_kernel_ctx *ctx, opd_tensor *self, opd_tensor **out) {
  (void)ctx;
  return opd__any_all_run(reduce_fn, OP_ANY, self, (opd_opt_int){0}, false, out);
}

int opd__cpu_any_dim(const opd_kernel_ctx *ctx, opd_tensor *self, int64_t dim, bool keepdim,
                     opd_tensor **out) {
  (void)ctx;
  return opd__any_all_run(reduce_fn, OP_ANY, self, (opd_opt_int){.has_value = true, .value = dim},
                          keepdim, out);
}

int opd__cpu_all(const opd_kernel_ctx *ctx, opd_tensor *self, opd_tensor **out) {
  (void)ctx;
  return opd__any_all_run(reduce_fn, OP_ALL, self, (opd_opt_int){0}, false, out);
}

int opd__cpu_all_dim(const opd_kernel_ctx *ctx, opd_tensor *self, int64_t dim, bool keepdim,
                     opd_tensor **out) {
  (void)ctx;
  return opd__any_all_run(reduce_fn, OP_ALL, self, (opd_opt_int){.has_value = true, .value = dim},
                          keepdim, out);
}

int opd__cpu_count_nonzero_dim_intlist(const opd_kernel_ctx *ctx, opd_tensor *self,
                                       opd_int_list dim, opd_tensor **out) {
  (void)ctx;
  return opd__count_nonzero_run(reduce_fn, OP_COUNT, self, dim, out);
}

static const opd__extrema_ops extrema = {
    .max = OP_MAX, .min = OP_MIN, .argmax = OP_ARGMAX, .argmin = OP_ARGMIN};

int opd__cpu_max_dim(const opd_kernel_ctx *ctx, opd_stack *stack) {
  (void)ctx;
  return opd__two_results_run(reduce_fn, &extrema, OPD__MAX_DIM, stack);
}

int opd__cpu_min_dim(const opd_kernel_ctx *ctx, opd_stack *stack) {
  (void)ctx;
  return opd__two_results_run(reduce_fn, &extrema, OPD__MIN_DIM, stack);
}

int opd__cpu_aminmax(const opd_kernel_ctx *ctx, opd_stack *stack) {
  (void)ctx;
  return opd__two_results_run(reduce_fn, &extrema, OPD__AMINMAX, stack);
}

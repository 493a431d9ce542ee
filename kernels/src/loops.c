/* loops.c: the elementwise engine (see [Note: The elementwise engine] in loops.h): operand
 * geometry, dimension ordering and coalescing, the parallel strip walk, the dtype
 * conversion loops, scalar conversions and the memory-overlap checks. */
#include "loops.h"

#include <assert.h>
#include <math.h>
#include <string.h>

#include "opd/cancel.h"
#include "opd/checked.h"
#include "opd/error.h"
#include "parallel.h"

#define MAX_OPS (1 + OPD__MAX_INPUTS)

int opd__compute_index(opd_dtype t) {
  switch (opd__compute_dtype(t)) {
#define OPD__C_CASE(tag, ct, dt) \
  case dt: return OPD__C_##tag;
    OPD__COMPUTE_TYPES(OPD__C_CASE)
#undef OPD__C_CASE
  default: return -1;
  }
}

int opd__loop_select(const opd__loop_fn table[OPD__NC], opd_dtype t, const char *name,
                     opd__loop_fn *fn) {
  int i = opd__compute_index(t);
  if (i < 0 || !table[i])
    return opd_error(OPD_EINVAL, "\"%s\" not implemented for '%s'", name, opd_dtype_c10_name(t));
  *fn = table[i];
  return 0;
}

/* ---- conversions between storage dtypes ----
 * As PyTorch converts on x86-64: float to integer truncates toward zero, and a value out of
 * range (or NaN) gives the integer "indefinite" value INT64_MIN / INT32_MIN, as cvttsd2si
 * does (8- and 16-bit targets convert through int32 and wrap); integer to narrower integer
 * wraps; anything to bool is `!= 0` (so NaN is true). */

static inline int64_t f64_to_i64(double v) {
  return v >= -9223372036854775808.0 && v < 9223372036854775808.0 ? (int64_t)v : INT64_MIN;
}
static inline int32_t f64_to_i32(double v) {
  return v > -2147483649.0 && v < 2147483648.0 ? (int32_t)v : INT32_MIN;
}
static inline int64_t f32_to_i64(float v) {
  return v >= -9223372036854775808.0f && v < 9223372036854775808.0f ? (int64_t)v : INT64_MIN;
}
static inline int32_t f32_to_i32(float v) {
  return v >= -2147483648.0f && v < 2147483648.0f ? (int32_t)v : INT32_MIN;
}
static inline int64_t int_to_i64(int64_t v) {
  return v;
}
static inline int32_t int_to_i32(int64_t v) {
  return (int32_t)v;
}

#define TO_I64(v) _Generic((v), float : f32_to_i64, double : f64_to_i64, default : int_to_i64)(v)
#define TO_I32(v) _Generic((v), float : f32_to_i32, double : f64_to_i32, default : int_to_i32)(v)

/* X(tag, storage C type): in the order of storage_index. */
#define STORAGE(X) \
  X(U8, uint8_t)   \
  X(I8, int8_t)    \
  X(I16, int16_t)  \
  X(I32, int32_t)  \
  X(I64, int64_t) X(F16, uint16_t) X(F32, float) X(F64, double) X(B8, uint8_t) X(BF16, uint16_t)

enum {
#define SIDX(tag, st) SIDX_##tag,
  STORAGE(SIDX)
#undef SIDX
      NUM_STORAGE
};

static int storage_index(opd_dtype t) {
  switch (t) {
  case OPD_UINT8: return SIDX_U8;
  case OPD_INT8: return SIDX_I8;
  case OPD_INT16: return SIDX_I16;
  case OPD_INT32: return SIDX_I32;
  case OPD_INT64: return SIDX_I64;
  case OPD_FLOAT16: return SIDX_F16;
  case OPD_FLOAT32: return SIDX_F32;
  case OPD_FLOAT64: return SIDX_F64;
  case OPD_BOOL: return SIDX_B8;
  case OPD_BFLOAT16: return SIDX_BF16;
  default: return -1;
  }
}

/* An element to the value it stands for (floats for the 16-bit floats, 0/1 for bools). */
#define LOAD_U8(v)   (v)
#define LOAD_I8(v)   (v)
#define LOAD_I16(v)  (v)
#define LOAD_I32(v)  (v)
#define LOAD_I64(v)  (v)
#define LOAD_F16(v)  opd_half_to_float(v)
#define LOAD_F32(v)  (v)
#define LOAD_F64(v)  (v)
#define LOAD_B8(v)   ((uint8_t)((v) != 0))
#define LOAD_BF16(v) opd_bf16_to_float(v)
/* A value to an element. */
#define CONV_U8(v)   ((uint8_t)TO_I32(v))
#define CONV_I8(v)   ((int8_t)TO_I32(v))
#define CONV_I16(v)  ((int16_t)TO_I32(v))
#define CONV_I32(v)  TO_I32(v)
#define CONV_I64(v)  TO_I64(v)
#define CONV_F16(v)  opd_float_to_half((float)(v))
#define CONV_F32(v)  ((float)(v))
#define CONV_F64(v)  ((double)(v))
#define CONV_B8(v)   ((uint8_t)((v) != 0))
#define CONV_BF16(v) opd_float_to_bf16((float)(v))

typedef void (*cast_fn)(char *dst, int64_t ds, const char *src, int64_t ss, int64_t n);

/* cast_S_D: n elements from src (dtype S, byte stride ss) to dst (dtype D, stride ds). */
#define CAST_FN(D, DT, S, ST)                                                                 \
  static void cast_##S##_##D(char *dst, int64_t ds, const char *src, int64_t ss, int64_t n) { \
    if (SIDX_##S == SIDX_##D) { /* a copy, bit for bit */                                     \
      if (ds == (int64_t)sizeof(DT) && ss == (int64_t)sizeof(ST)) {                           \
        memmove(dst, src, (size_t)n * sizeof(DT));                                            \
      } else {                                                                                \
        for (int64_t i = 0; i < n; i++) memcpy(dst + i * ds, src + i * ss, sizeof(DT));       \
      }                                                                                       \
    } else if (ds == (int64_t)sizeof(DT) && ss == (int64_t)sizeof(ST)) {                      \
      DT *restrict d = (DT *)dst;                                                             \
      const ST *restrict s = (const ST *)src;                                                 \
      for (int64_t i = 0; i < n; i++) d[i] = CONV_##D(LOAD_##S(s[i]));                        \
    } else {                                                                                  \
      for (int64_t i = 0; i < n; i++)                                                         \
        *(DT *)(dst + i * ds) = CONV_##D(LOAD_##S(*(const ST *)(src + i * ss)));              \
    }                                                                                         \
  }
/* One function per (source, destination) pair. */
#define CAST_FN_ROW(S, ST)      \
  CAST_FN(U8, uint8_t, S, ST)   \
  CAST_FN(I8, int8_t, S, ST)    \
  CAST_FN(I16, int16_t, S, ST)  \
  CAST_FN(I32, int32_t, S, ST)  \
  CAST_FN(I64, int64_t, S, ST)  \
  CAST_FN(F16, uint16_t, S, ST) \
  CAST_FN(F32, float, S, ST)    \
  CAST_FN(F64, double, S, ST)   \
  CAST_FN(B8, uint8_t, S, ST)   \
  CAST_FN(BF16, uint16_t, S, ST)
STORAGE(CAST_FN_ROW)

#define CAST_ENTRY_ROW(S, ST)                                                      \
  {cast_##S##_U8,  cast_##S##_I8,  cast_##S##_I16, cast_##S##_I32, cast_##S##_I64, \
   cast_##S##_F16, cast_##S##_F32, cast_##S##_F64, cast_##S##_B8,  cast_##S##_BF16},
static const cast_fn casts[NUM_STORAGE][NUM_STORAGE] = {STORAGE(CAST_ENTRY_ROW)};

static cast_fn cast_for(opd_dtype src, opd_dtype dst) {
  int s = storage_index(src), d = storage_index(dst);
  assert(s >= 0 && d >= 0);
  return casts[s][d];
}

/* ---- the engine ---- */

typedef struct iter {
  const opd__loop *loop;
  opd__loop_ctx *ctx;
  int nops; /* operand 0 is the output */
  int ndim;
  int64_t numel;
  char *data[MAX_OPS];
  opd_dtype dtype[MAX_OPS];
  int64_t esize[MAX_OPS];                /* element size of each operand's compute dtype */
  int64_t shape[OPD_MAX_DIMS];           /* innermost dimension first */
  int64_t stride[OPD_MAX_DIMS][MAX_OPS]; /* bytes */
} iter;

/* TensorIterator's comparison: -1 if d0 should stay inside d1, 1 if it should move out. */
static int should_swap(const iter *it, int d0, int d1) {
  for (int k = 0; k < it->nops; k++) {
    int64_t s0 = it->stride[d0][k], s1 = it->stride[d1][k];
    if (s0 == 0 || s1 == 0) continue;
    if (s0 < s1) return -1;
    if (s0 > s1) return 1;
    if (it->shape[d0] > it->shape[d1]) return 1;
  }
  return 0;
}

/* TensorIterator's reorder_dimensions: an insertion sort of perm[0..n) (innermost first)
 * that moves a dimension out past another while swap(arg, inner, outer) > 0 and stops at the
 * first one that says < 0 (0: undecided, keep looking further out). */
static void sort_dims(int *perm, int n, int (*swap)(const void *arg, int d0, int d1),
                      const void *arg) {
  for (int i = 1; i < n; i++) {
    int d1 = i;
    for (int d0 = i - 1; d0 >= 0; d0--) {
      int c = swap(arg, perm[d0], perm[d1]);
      if (c > 0) {
        int t = perm[d0];
        perm[d0] = perm[d1];
        perm[d1] = t;
        d1 = d0;
      } else if (c < 0) {
        break;
      }
    }
  }
}

static int iter_swap(const void *arg, int d0, int d1) {
  return should_swap(arg, d0, d1);
}

static void reorder_dims(iter *it) {
  int perm[OPD_MAX_DIMS];
  for (int d = 0; d < it->ndim; d++) perm[d] = d;
  sort_dims(perm, it->ndim, iter_swap, it);
  int64_t shape[OPD_MAX_DIMS], stride[OPD_MAX_DIMS][MAX_OPS];
  memcpy(shape, it->shape, sizeof shape);
  memcpy(stride, it->stride, sizeof stride);
  for (int d = 0; d < it->ndim; d++) {
    it->shape[d] = shape[perm[d]];
    memcpy(it->stride[d], stride[perm[d]], sizeof stride[0]);
  }
}

static void coalesce_dims(iter *it) {
  int prev = 0;
  for (int d = 1; d < it->ndim; d++) {
    bool can = true;
    for (int k = 0; k < it->nops && can; k++)
      can = it->shape[prev] * it->stride[prev][k] == it->stride[d][k];
    if (can) {
      it->shape[prev] *= it->shape[d];
    } else {
      prev++;
      it->shape[prev] = it->shape[d];
      memcpy(it->stride[prev], it->stride[d], sizeof it->stride[0]);
    }
  }
  if (it->ndim > 0) it->ndim = prev + 1;
}

static void iter_init(iter *it, opd_tensor *out, opd_tensor *const *inputs, const opd__loop *loop) {
  opd_tensor *ops[MAX_OPS];
  assert(loop->ninputs >= 0 && loop->ninputs <= OPD__MAX_INPUTS);
  assert(loop->fn || loop->ninputs == 1);
  it->loop = loop;
  it->nops = 1 + loop->ninputs;
  ops[0] = out;
  for (int k = 1; k < it->nops; k++) {
    ops[k] = inputs[k - 1];
    assert(ops[k]->ndim <= out->ndim);
  }
  for (int k = 0; k < it->nops; k++) {
    it->data[k] = opd_tensor_data(ops[k]);
    it->dtype[k] = opd_tensor_dtype(ops[k]);
    opd_dtype compute = k == 0 ? loop->out_dtype : loop->in_dtype[k - 1];
    it->esize[k] = loop->fn ? (int64_t)opd_dtype_size(compute) : 0;
  }
  const int nd = out->ndim;
  const int64_t *osz = opd_tensor_sizes(out);
  it->ndim = 0;
  it->numel = 1;
  for (int d = nd - 1; d >= 0; d--) {
    it->numel *= osz[d];
    if (osz[d] == 1) continue;
    int j = it->ndim++;
    it->shape[j] = osz[d];
    for (int k = 0; k < it->nops; k++) {
      const opd_tensor *t = ops[k];
      int dk = d - (nd - t->ndim);
      int64_t size = dk >= 0 ? opd_tensor_sizes(t)[dk] : 1;
      assert(size == 1 || size == osz[d]);
      it->stride[j][k] =
          size == 1 ? 0 : opd_tensor_strides(t)[dk] * (int64_t)opd_dtype_size(opd_tensor_dtype(t));
    }
  }
  reorder_dims(it);
  coalesce_dims(it);
  if (it->ndim == 0) { /* a single element */
    it->ndim = 1;
    it->shape[0] = 1;
    memset(it->stride[0], 0, sizeof it->stride[0]);
  }
}

/* One strip of n elements along the innermost dimension, from the pointers p. */
static void run_strip(const iter *it, char *const *p, int64_t n) {
  const opd__loop *loop = it->loop;
  const int64_t *s = it->stride[0];
  if (!loop->fn) {
    cast_for(it->dtype[1], it->dtype[0])(p[0], s[0], p[1], s[1], n);
    return;
  }
  bool direct[MAX_OPS], all = true;
  for (int k = 0; k < it->nops; k++) {
    opd_dtype compute = k == 0 ? loop->out_dtype : loop->in_dtype[k - 1];
    direct[k] = it->dtype[k] == compute && (s[k] == it->esize[k] || n == 1);
    all = all && direct[k];
  }
  char *in[OPD__MAX_INPUTS];
  if (all) {
    for (int k = 1; k < it->nops; k++) in[k - 1] = p[k];
    loop->fn(p[0], in, n, it->ctx);
    return;
  }
  _Alignas(64) char buf[MAX_OPS][OPD__LOOP_BLOCK * sizeof(int64_t)];
  for (int64_t off = 0; off < n; off += OPD__LOOP_BLOCK) {
    int64_t nb = n - off < OPD__LOOP_BLOCK ? n - off : OPD__LOOP_BLOCK;
    for (int k = 1; k < it->nops; k++) {
      if (direct[k]) {
        in[k - 1] = p[k] + off * s[k];
      } else {
        cast_for(it->dtype[k], loop->in_dtype[k - 1])(buf[k], it->esize[k], p[k] + off * s[k], s[k],
                                                      nb);
        in[k - 1] = buf[k];
      }
    }
    char *o = direct[0] ? p[0] + off * s[0] : buf[0];
    if (!direct[0] && loop->reads_out)
      cast_for(it->dtype[0], loop->out_dtype)(buf[0], it->esize[0], p[0] + off * s[0], s[0], nb);
    loop->fn(o, in, nb, it->ctx);
    if (!direct[0])
      cast_for(loop->out_dtype, it->dtype[0])(p[0] + off * s[0], s[0], buf[0], it->esize[0], nb);
  }
}

static void run_range(void *arg, int64_t begin, int64_t end) {
  const iter *it = arg;
  int64_t idx[OPD_MAX_DIMS];
  char *p[MAX_OPS];
  for (int k = 0; k < it->nops; k++) p[k] = it->data[k];
  int64_t rem = begin;
  for (int d = 0; d < it->ndim; d++) {
    idx[d] = rem % it->shape[d];
    rem /= it->shape[d];
    for (int k = 0; k < it->nops; k++) p[k] += idx[d] * it->stride[d][k];
  }
  int64_t unchecked = 0;
  while (begin < end) {
    int64_t n = it->shape[0] - idx[0];
    if (n > end - begin) n = end - begin;
    if (n > OPD_CANCEL_CHECK_ELEMENTS) n = OPD_CANCEL_CHECK_ELEMENTS;
    if ((unchecked += n) > OPD_CANCEL_CHECK_ELEMENTS) { /* [Note: Cancelling long work] */
      if (opd_cancelled()) return;
      unchecked = n;
    }
    run_strip(it, p, n);
    begin += n;
    if (begin == end) break;
    idx[0] += n;
    for (int k = 0; k < it->nops; k++) p[k] += n * it->stride[0][k];
    for (int d = 0; idx[d] == it->shape[d]; d++) { /* carry into the next dimension */
      assert(d + 1 < it->ndim);
      idx[d] = 0;
      idx[d + 1]++;
      for (int k = 0; k < it->nops; k++)
        p[k] += it->stride[d + 1][k] - it->shape[d] * it->stride[d][k];
    }
  }
}

/* A small operation whose operands are all dense in row-major order, of the dtypes the loop
 * computes in and of the output's element count (so of its shape, broadcasting aside from
 * leading ones): one call of the loop over the whole of them, without the iterator, whose
 * set-up took most of a one-element add's kernel time. False for anything else. */
static bool run_dense_small(opd_tensor *out, opd_tensor *const *inputs, const opd__loop *loop,
                            opd__loop_ctx *ctx) {
  if (!loop->fn || out->numel >= OPD_GRAIN_ELEMENTWISE ||
      opd_tensor_dtype(out) != loop->out_dtype || !opd_tensor_is_contiguous(out))
    return false;
  char *in[OPD__MAX_INPUTS];
  for (int k = 0; k < loop->ninputs; k++) {
    const opd_tensor *t = inputs[k];
    if (t->numel != out->numel || opd_tensor_dtype(t) != loop->in_dtype[k] ||
        !opd_tensor_is_contiguous(t))
      return false;
    in[k] = opd_tensor_data(t);
  }
  loop->fn(opd_tensor_data(out), in, out->numel, ctx);
  return true;
}

void opd__loop_run(opd_tensor *out, opd_tensor *const *inputs, const opd__loop *loop) {
  static opd__loop_ctx zero_ctx; /* for loops without scalars (which never write it) */
  /* nothing to do; and an empty operand's strides may be anything ([Note: Checked
   * arithmetic]), while those of operands with elements give byte strides within int64 */
  if (out->numel == 0) return;
  if (run_dense_small(out, inputs, loop, loop->ctx ? loop->ctx : &zero_ctx)) return;
  iter it;
  iter_init(&it, out, inputs, loop);
  it.ctx = loop->ctx ? loop->ctx : &zero_ctx;
  bool aliased_out = false; /* out's elements alias each other: write them in order */
  for (int d = 0; d < it.ndim; d++) aliased_out = aliased_out || it.stride[d][0] == 0;
  if (aliased_out && it.numel > 1)
    run_range(&it, 0, it.numel);
  else
    opd__parallel_for(0, it.numel, OPD_GRAIN_ELEMENTWISE, run_range, &it);
}

/* t's stride along dimension d of an nd-dimensional broadcast shape; 0 where t is
 * broadcast. */
static int64_t broadcast_stride(const opd_tensor *t, int nd, const int64_t *sizes, int d) {
  int dt = d - (nd - t->ndim);
  if (dt < 0 || (opd_tensor_sizes(t)[dt] == 1 && sizes[d] != 1)) return 0;
  return opd_tensor_strides(t)[dt];
}

/* The inputs whose layout an elementwise output follows, as sort_dims compares them. */
typedef struct output_order {
  opd_tensor *const *inputs;
  int n, nd;
  const int64_t *sizes;
} output_order;

static int output_swap(const void *arg, int d0, int d1) {
  const output_order *o = arg;
  for (int k = 0; k < o->n; k++) {
    int64_t s0 = broadcast_stride(o->inputs[k], o->nd, o->sizes, d0);
    int64_t s1 = broadcast_stride(o->inputs[k], o->nd, o->sizes, d1);
    if (s0 == 0 || s1 == 0) continue;
    int c = s0 < s1 ? -1 : s0 > s1 || o->sizes[d0] > o->sizes[d1] ? 1 : 0;
    if (c) return c;
  }
  return 0;
}

int opd__alloc_elementwise_output(const opd_out_spec *spec, opd_tensor *const *inputs, int n,
                                  opd_device device, opd_tensor **out) {
  const int nd = spec->ndim;
  const int64_t *sizes = spec->sizes;
  int perm[OPD_MAX_DIMS]; /* innermost first */
  for (int i = 0; i < nd; i++) perm[i] = nd - 1 - i;
  const output_order order = {inputs, n, nd, sizes};
  sort_dims(perm, nd, output_swap, &order);
  bool row_major = true;
  for (int i = 0; i < nd; i++) row_major = row_major && perm[i] == nd - 1 - i;
  if (row_major) return opd__alloc_output(spec, device, out);
  int64_t strides[OPD_MAX_DIMS], next = 1;
  bool overflow = false;         /* of the next stride: only an empty shape's sizes get there */
  for (int i = 0; i < nd; i++) { /* dense in that order (compatible_stride) */
    if (overflow) return opd_error(OPD_EINVAL, "tensor sizes overflow int64");
    strides[perm[i]] = next;
    overflow = opd_ckd_mul(&next, next, sizes[perm[i]]);
  }
  return opd_tensor_empty_strided(sizes, strides, nd, spec->dtype, device, out);
}

/* ---- scalars ---- */

/* c10's checked_convert range test: does the scalar overflow dtype t? */
static bool scalar_overflows(opd_scalar s, opd_dtype t) {
  double lowest, max;
  switch (t) {
  case OPD_UINT8: lowest = 0, max = 255; break;
  case OPD_INT8: lowest = -128, max = 127; break;
  case OPD_INT16: lowest = -32768, max = 32767; break;
  case OPD_INT32: lowest = -2147483648.0, max = 2147483647.0; break;
  case OPD_INT64: lowest = -9223372036854775808.0, max = 9223372036854775807.0; break;
  case OPD_FLOAT16: lowest = -65504, max = 65504; break;
  case OPD_BFLOAT16: lowest = -3.38953139e38, max = 3.38953139e38; break;
  case OPD_FLOAT32: lowest = -3.40282347e38, max = 3.40282347e38; break;
  case OPD_FLOAT64: return false;
  case OPD_BOOL: lowest = 0, max = 1; break;
  default: return true;
  }
  bool floating = opd_dtype_is_floating(t);
  if (s.tag == OPD_IV_BOOL) return false;
  if (s.tag == OPD_IV_INT) {
    int64_t i = s.u.i;
    if (floating) return (double)i < lowest || (double)i > max;
    if (t == OPD_INT64) return false;
    if (lowest == 0) /* unsigned: negative values wrap (a - b as a + 255 * b) */
      return i > (int64_t)max || (i < 0 && 0u - (uint64_t)i > (uint64_t)max);
    return i < (int64_t)lowest || i > (int64_t)max;
  }
  double d = s.u.d;
  if (floating && isinf(d)) return false;
  if (!floating && d != d) return true;
  if (t == OPD_INT64) return !(d >= lowest && d < 9223372036854775808.0);
  return d < lowest || d > max;
}

opd__value opd__scalar_cast(opd_scalar s, opd_dtype t) {
  opd__value v = {.i64 = 0};
  bool is_d = s.tag == OPD_IV_DOUBLE;
  double d = is_d ? s.u.d : 0;
  int64_t i = s.tag == OPD_IV_INT ? s.u.i : s.tag == OPD_IV_BOOL ? (int64_t)s.u.b : 0;
  switch (t) {
  case OPD_UINT8: v.u8 = is_d ? CONV_U8(d) : (uint8_t)i; break;
  case OPD_INT8: v.i8 = is_d ? CONV_I8(d) : (int8_t)i; break;
  case OPD_INT16: v.i16 = is_d ? CONV_I16(d) : (int16_t)i; break;
  case OPD_INT32: v.i32 = is_d ? CONV_I32(d) : (int32_t)i; break;
  case OPD_INT64: v.i64 = is_d ? CONV_I64(d) : i; break;
  case OPD_FLOAT16: v.f32 = opd_half_to_float(is_d ? CONV_F16(d) : CONV_F16(i)); break;
  case OPD_BFLOAT16: v.f32 = opd_bf16_to_float(is_d ? CONV_BF16(d) : CONV_BF16(i)); break;
  case OPD_FLOAT32: v.f32 = is_d ? (float)d : (float)i; break;
  case OPD_FLOAT64: v.f64 = is_d ? d : (double)i; break;
  case OPD_BOOL: v.b8 = is_d ? d != 0 : i != 0; break;
  default: assert(!"not a dtype");
  }
  return v;
}

static const char *c10_type_name(opd_dtype t) {
  switch (t) {
  case OPD_UINT8: return "uint8_t";
  case OPD_INT8: return "int8_t";
  case OPD_INT16: return "int16_t";
  case OPD_INT32: return "int";
  case OPD_INT64: return "int64_t";
  case OPD_FLOAT16: return "at::Half";
  case OPD_BFLOAT16: return "at::BFloat16";
  case OPD_FLOAT32: return "float";
  case OPD_FLOAT64: return "double";
  case OPD_BOOL: return "bool";
  default: return "?";
  }
}

int opd__scalar_to(opd_scalar s, opd_dtype t, opd__value *out) {
  if (scalar_overflows(s, t))
    return opd_error(OPD_EINVAL, "value cannot be converted to type %s without overflow",
                     c10_type_name(t));
  *out = opd__scalar_cast(s, t);
  return 0;
}

opd_scalar opd__value_scalar(opd__value v, opd_dtype t) {
  switch (opd__compute_dtype(t)) {
  case OPD_FLOAT32: return (opd_scalar){.tag = OPD_IV_DOUBLE, .u.d = v.f32};
  case OPD_FLOAT64: return (opd_scalar){.tag = OPD_IV_DOUBLE, .u.d = v.f64};
  case OPD_INT64: return (opd_scalar){.tag = OPD_IV_INT, .u.i = v.i64};
  case OPD_INT32: return (opd_scalar){.tag = OPD_IV_INT, .u.i = v.i32};
  case OPD_INT16: return (opd_scalar){.tag = OPD_IV_INT, .u.i = v.i16};
  case OPD_INT8: return (opd_scalar){.tag = OPD_IV_INT, .u.i = v.i8};
  case OPD_UINT8: return (opd_scalar){.tag = OPD_IV_INT, .u.i = v.u8};
  default: return (opd_scalar){.tag = OPD_IV_BOOL, .u.b = v.b8 != 0};
  }
}

/* ---- memory overlap ---- */

bool opd__is_non_overlapping_and_dense(const opd_tensor *t) {
  const int nd = t->ndim;
  const int64_t *sizes = opd_tensor_sizes(t), *strides = opd_tensor_strides(t);
  if (nd == 1) return sizes[0] < 2 || strides[0] == 1;
  int perm[OPD_MAX_DIMS], n = 0;
  for (int d = 0; d < nd; d++) /* dimensions of size 0 and 1 do not constrain anything */
    if (sizes[d] >= 2) perm[n++] = d;
  for (int i = 1; i < n; i++) /* by stride, ascending */
    for (int j = i; j > 0 && strides[perm[j]] < strides[perm[j - 1]]; j--) {
      int x = perm[j];
      perm[j] = perm[j - 1];
      perm[j - 1] = x;
    }
  int64_t require = 1;
  for (int i = 0; i < n; i++) {
    if (strides[perm[i]] != require) return false;
    if (opd_ckd_mul(&require, require, sizes[perm[i]])) return false; /* empty: any sizes */
  }
  return true;
}

int opd__assert_no_internal_overlap(const opd_tensor *t) {
  if (opd__is_non_overlapping_and_dense(t)) return 0;
  for (int d = 0; d < t->ndim; d++)
    if (opd_tensor_sizes(t)[d] > 1 && opd_tensor_strides(t)[d] == 0)
      return opd_error(OPD_EINVAL,
                       "unsupported operation: more than one element of the written-to tensor "
                       "refers to a single memory location. Please clone() the tensor before "
                       "performing the operation.");
  return 0;
}

int opd__assert_no_partial_overlap(const opd_tensor *a, const opd_tensor *b) {
  if (a == b || a->numel == 0 || b->numel == 0) return 0;
  if (!opd_tensor_shares_storage(a, b) || !a->storage->data) return 0;
  if (!opd__is_non_overlapping_and_dense(a) || !opd__is_non_overlapping_and_dense(b)) return 0;
  const char *a0 = opd_tensor_data(a), *b0 = opd_tensor_data(b);
  const char *a1 = a0 + a->numel * (int64_t)opd_dtype_size(opd_tensor_dtype(a));
  const char *b1 = b0 + b->numel * (int64_t)opd_dtype_size(opd_tensor_dtype(b));
  bool partial;
  if (a0 == b0 && a1 == b1)
    partial = a->ndim != b->ndim || memcmp(opd_tensor_strides(a), opd_tensor_strides(b),
                                           (size_t)a->ndim * sizeof(int64_t)) != 0;
  else
    partial = a0 < b1 && b0 < a1;
  if (partial)
    return opd_error(OPD_EINVAL,
                     "unsupported operation: some elements of the input tensor and the "
                     "written-to tensor refer to a single memory location. Please clone() the "
                     "tensor before performing the operation.");
  return 0;
}

int opd__infer_dense_strides(const int64_t *sizes, const int64_t *strides, int ndim, int64_t *out) {
  int perm[OPD_MAX_DIMS]; /* innermost first */
  for (int i = 0; i < ndim; i++) perm[i] = ndim - 1 - i;
  for (int i = 1; i < ndim; i++) { /* TensorIterator's insertion sort; stride-0 dims stay */
    int d1 = i;
    for (int d0 = i - 1; d0 >= 0; d0--) {
      int64_t s0 = strides[perm[d0]], s1 = strides[perm[d1]];
      int c = s0 == 0 || s1 == 0 ? 0
              : s0 < s1          ? -1
              : s0 > s1          ? 1
                                 : sizes[perm[d0]] > sizes[perm[d1]];
      if (c > 0) {
        int t = perm[d0];
        perm[d0] = perm[d1];
        perm[d1] = t;
        d1 = d0;
      } else if (c < 0) {
        break;
      }
    }
  }
  int64_t cur = 1;
  bool overflow = false; /* of the next stride: only an empty tensor's sizes get there */
  for (int i = 0; i < ndim; i++) {
    if (overflow) {
      char buf[OPD_MAX_DIMS * 24];
      return opd_error(OPD_EINVAL, "the dense strides of sizes %s overflow int64",
                       opd__format_sizes(sizes, ndim, buf, sizeof buf));
    }
    out[perm[i]] = cur;
    if (sizes[perm[i]] > 1) overflow = opd_ckd_mul(&cur, cur, sizes[perm[i]]);
  }
  return 0;
}

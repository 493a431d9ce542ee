/* loops.h: the elementwise engine (internal to the kernels library), a small TensorIterator,
 * with the typed-loop macros the elementwise kernels are written with, the scalar
 * conversions they need and the memory-overlap checks of in-place operators.
 *
 * [Note: The elementwise engine]
 * An elementwise kernel computes out[i] = f(in_0[i], ..., in_n[i]) over out's shape; every
 * input is broadcast to it (its meta function has checked that the shapes broadcast and
 * computed the output's shape and dtype). opd__loop_run:
 *   1. gives every operand its byte strides over out's dimensions (0 where an input is
 *      broadcast), drops size-1 dimensions, orders the rest innermost-first by stride (as
 *      TensorIterator's reorder_dimensions does) and coalesces dimensions that are
 *      contiguous with each other for every operand;
 *   2. splits the flat index range with opd__parallel_for (grain OPD_GRAIN_ELEMENTWISE;
 *      serially when out has a stride-0 dimension, whose elements alias each other);
 *   3. walks each chunk in strips along the innermost dimension and hands each strip to
 *      the operator's *loop*: a function over n contiguous elements of fixed C types (the
 *      compute dtypes in opd__loop). When every operand of a strip already is contiguous
 *      and of its compute dtype (the common case) the loop runs on the tensors' memory
 *      directly, so the float32 loops are plain flat loops the compiler vectorizes;
 *      otherwise the strip goes in blocks of OPD__LOOP_BLOCK elements through small stack
 *      buffers: inputs are gathered from their strides and converted to their compute
 *      dtype, and the result is converted and scattered to out. No temporary tensor is
 *      ever made. float16 and bfloat16 compute in float32 (opd__compute_dtype) and round
 *      when stored.
 * A loop with fn == NULL copies its single input into out, converting the dtype (copy_).
 * New outputs get the layout TensorIterator gives them (opd__alloc_elementwise_output), so
 * that an operation on transposed inputs reads and writes memory in order, as in PyTorch.
 * Compute-bound float32 loops (exp, sigmoid: opd__expf; tanh: opd__tanhf; gelu: opd__gelu_f32)
 * are also compiled for AVX2 and AVX-512 (OPD__WIDE_VECTORS); the rest are memory-bound and stay
 * at the baseline ISA.
 *
 * Loops are instantiated per compute type with the OPD__*_LOOP macros below, so that an
 * operator is written once per semantics (floating, signed, unsigned, bool), not per dtype:
 *   OPD__FLOATS(OPD__BINARY_LOOP, mul, x * y)   defines mul_F32 and mul_F64
 * and collected in a table indexed by compute type:
 *   static const opd__loop_fn mul_loops[OPD__NC] = {OPD__FLOATS(OPD__ENTRY, mul) ...};
 * Inside a loop, T is the compute type, x (and y) the input elements, c0 and c1 the
 * loop's scalar operands (ctx->c, as T). The loops' pointers are not restrict-qualified:
 * an out= output may be one of the inputs (element i is read before it is written); GCC
 * vectorizes them behind a runtime overlap check.
 */
#ifndef OPD_KERNELS_LOOPS_H
#define OPD_KERNELS_LOOPS_H

#include <math.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "kernel_util.h"
#include "opd/dtype.h"
#include "opd/tensor.h"

#define OPD__MAX_INPUTS 3
/* Elements per block of the buffered path. */
#define OPD__LOOP_BLOCK 256

/* A scalar operand in a loop's compute type (member named after the type tag). */
typedef union opd__value {
  float f32;
  double f64;
  int64_t i64;
  int32_t i32;
  int16_t i16;
  int8_t i8;
  uint8_t u8;
  uint8_t b8;
} opd__value;

typedef struct opd__loop_ctx {
  opd__value c[2];  /* scalar operands */
  atomic_int error; /* set nonzero by a loop that meets bad data (integer division by zero) */
} opd__loop_ctx;

/* n contiguous output elements from n contiguous elements of each input. */
typedef void (*opd__loop_fn)(char *out, char *const *in, int64_t n, opd__loop_ctx *ctx);

typedef struct opd__loop {
  opd__loop_fn fn; /* NULL: copy the one input into out, converting dtypes */
  int ninputs;
  opd_dtype in_dtype[OPD__MAX_INPUTS]; /* compute dtype each input is read as */
  opd_dtype out_dtype;                 /* compute dtype fn writes */
  bool reads_out;                      /* fn reads out (read-modify-write, as masked_fill_) */
  opd__loop_ctx *ctx;                  /* passed to fn; may be NULL */
} opd__loop;

/* A new output of spec's shape and dtype for an elementwise operation on `inputs`, laid out
 * as TensorIterator lays it out: in the inputs' dimension order (by their strides, the
 * first input deciding ties; broadcast dimensions do not count), densely; contiguous when
 * that order is the row-major one. */
int opd__alloc_elementwise_output(const opd_out_spec *spec, opd_tensor *const *inputs, int n,
                                  opd_device device, opd_tensor **out);
/* Runs the loop over out (a CPU tensor of the broadcast shape) and the inputs (CPU, each
 * broadcastable to out's shape). Cannot fail; loops report bad data in ctx->error. */
void opd__loop_run(opd_tensor *out, opd_tensor *const *inputs, const opd__loop *loop);

/* ---- compute types ---- */

/* X(tag, C type, dtype) */
#define OPD__COMPUTE_TYPES(X) \
  X(F32, float, OPD_FLOAT32)  \
  X(F64, double, OPD_FLOAT64) \
  X(I64, int64_t, OPD_INT64)  \
  X(I32, int32_t, OPD_INT32)  \
  X(I16, int16_t, OPD_INT16)  \
  X(I8, int8_t, OPD_INT8)     \
  X(U8, uint8_t, OPD_UINT8)   \
  X(B8, uint8_t, OPD_BOOL)

enum {
#define OPD__C_ENUM(tag, ct, dt) OPD__C_##tag,
  OPD__COMPUTE_TYPES(OPD__C_ENUM)
#undef OPD__C_ENUM
      OPD__NC
};

#define OPD__T_F32 float
#define OPD__T_F64 double
#define OPD__T_I64 int64_t
#define OPD__T_I32 int32_t
#define OPD__T_I16 int16_t
#define OPD__T_I8  int8_t
#define OPD__T_U8  uint8_t
#define OPD__T_B8  uint8_t
#define OPD__M_F32 f32
#define OPD__M_F64 f64
#define OPD__M_I64 i64
#define OPD__M_I32 i32
#define OPD__M_I16 i16
#define OPD__M_I8  i8
#define OPD__M_U8  u8
#define OPD__M_B8  b8

/* The dtype a dtype computes in: float32 for float16 and bfloat16, itself otherwise. */
static inline opd_dtype opd__compute_dtype(opd_dtype t) {
  return t == OPD_FLOAT16 || t == OPD_BFLOAT16 ? OPD_FLOAT32 : t;
}
/* OPD__C_* of t's compute dtype. */
int opd__compute_index(opd_dtype t);
/* The loop of table for t's compute dtype, or OPD_EINVAL with PyTorch's dispatch error
 * "\"name\" not implemented for 'Bool'". */
int opd__loop_select(const opd__loop_fn table[OPD__NC], opd_dtype t, const char *name,
                     opd__loop_fn *fn);

/* ---- loop macros (see [Note: The elementwise engine]) ---- */

/* M(tag, ...) for each compute type of a class. */
#define OPD__FLOATS(M, ...) M(F32, __VA_ARGS__) M(F64, __VA_ARGS__)
#define OPD__SINTS(M, ...) \
  M(I64, __VA_ARGS__) M(I32, __VA_ARGS__) M(I16, __VA_ARGS__) M(I8, __VA_ARGS__)
#define OPD__UINTS(M, ...) M(U8, __VA_ARGS__)
#define OPD__INTS(M, ...)  OPD__SINTS(M, __VA_ARGS__) OPD__UINTS(M, __VA_ARGS__)
#define OPD__BOOLS(M, ...) M(B8, __VA_ARGS__)

/* A table entry: [OPD__C_F32] = name_F32, */
#define OPD__ENTRY(tag, name) [OPD__C_##tag] = name##_##tag,

#define OPD__LOOP_PROLOGUE(tag)                                     \
  typedef OPD__T_##tag T;                                           \
  const T c0 = ctx->c[0].OPD__M_##tag, c1 = ctx->c[1].OPD__M_##tag; \
  (void)c0;                                                         \
  (void)c1

/* Clones of a function for wider vector units, picked when the program loads (GCC's
 * target_clones; x86-64 Linux only): for compute-bound loops such as float32 exp, which
 * vectorize 2-4x wider than the baseline's SSE2. The clones compute bit-identical results
 * (no contraction into FMA in ISO C mode). */
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && defined(__linux__) && \
    !defined(__SANITIZE_THREAD__) /* (ThreadSanitizer's instrumented resolvers crash) */
#define OPD__WIDE_VECTORS __attribute__((target_clones("default", "avx2", "avx512f")))
#else
#define OPD__WIDE_VECTORS
#endif

/* name_tag: out[i] = expr of x = in[0][i]; U is the output's C type; attr: attributes. */
#define OPD__UNARY_LOOP_IMPL(tag, name, U, attr, expr)                                        \
  attr static void name##_##tag(char *out_, char *const *in, int64_t n, opd__loop_ctx *ctx) { \
    OPD__LOOP_PROLOGUE(tag);                                                                  \
    U *out = (U *)out_;                                                                       \
    const T *a = (const T *)in[0];                                                            \
    for (int64_t i = 0; i < n; i++) {                                                         \
      const T x = a[i];                                                                       \
      (void)x;                                                                                \
      out[i] = (U)(expr);                                                                     \
    }                                                                                         \
  }
#define OPD__UNARY_LOOP_TO(tag, name, U, expr) OPD__UNARY_LOOP_IMPL(tag, name, U, , expr)
/* name_tag: out[i] = expr of x = in[0][i], y = in[1][i]. */
#define OPD__BINARY_LOOP_TO(tag, name, U, expr)                                          \
  static void name##_##tag(char *out_, char *const *in, int64_t n, opd__loop_ctx *ctx) { \
    OPD__LOOP_PROLOGUE(tag);                                                             \
    U *out = (U *)out_;                                                                  \
    const T *a = (const T *)in[0], *b = (const T *)in[1];                                \
    for (int64_t i = 0; i < n; i++) {                                                    \
      const T x = a[i], y = b[i];                                                        \
      out[i] = (U)(expr);                                                                \
    }                                                                                    \
  }
/* The same with the output in the compute type (T) or bool (uint8_t). */
#define OPD__UNARY_LOOP(tag, name, expr) OPD__UNARY_LOOP_TO(tag, name, T, expr)
/* The same, cloned for wider vector units (OPD__WIDE_VECTORS). */
#define OPD__UNARY_WIDE_LOOP(tag, name, expr) \
  OPD__UNARY_LOOP_IMPL(tag, name, T, OPD__WIDE_VECTORS, expr)
#define OPD__PRED1_LOOP(tag, name, expr)  OPD__UNARY_LOOP_TO(tag, name, uint8_t, expr)
#define OPD__BINARY_LOOP(tag, name, expr) OPD__BINARY_LOOP_TO(tag, name, T, expr)
#define OPD__PRED2_LOOP(tag, name, expr)  OPD__BINARY_LOOP_TO(tag, name, uint8_t, expr)

/* Wraparound integer arithmetic (PyTorch's), without signed-overflow UB. */
#define OPD__WRAP_ADD(T, x, y) ((T)((uint64_t)(x) + (uint64_t)(y)))
#define OPD__WRAP_MUL(T, x, y) ((T)((uint64_t)(x) * (uint64_t)(y)))
#define OPD__WRAP_NEG(T, x)    ((T)(0u - (uint64_t)(x)))

/* ---- scalars ---- */

/* A scalar converted to dtype t as TensorIterator converts a wrapped number (a C cast; a
 * float16 / bfloat16 value is rounded to it), held in t's compute type. */
opd__value opd__scalar_cast(opd_scalar s, opd_dtype t);
/* c10's Scalar::to<T>() for dtype t: the same conversion, but OPD_EINVAL "value cannot be
 * converted to type int8_t without overflow" when the value is out of t's range. */
int opd__scalar_to(opd_scalar s, opd_dtype t, opd__value *out);
/* A value of t's compute type as a Scalar of t's kind (double, int or bool). */
opd_scalar opd__value_scalar(opd__value v, opd_dtype t);

/* ---- memory overlap (ATen's MemoryOverlap) ---- */

/* c10's is_non_overlapping_and_dense. */
bool opd__is_non_overlapping_and_dense(const opd_tensor *t);
/* OPD_EINVAL when elements of t certainly alias each other (a stride-0 dimension). */
int opd__assert_no_internal_overlap(const opd_tensor *t);
/* OPD_EINVAL when a and b share part, but not all, of their memory. */
int opd__assert_no_partial_overlap(const opd_tensor *a, const opd_tensor *b);
/* ATen's infer_dense_strides: dense strides that keep the dimension order of `strides`; 0, or
 * OPD_EINVAL when one overflows int64 (sizes of an empty tensor can multiply past it). */
int opd__infer_dense_strides(const int64_t *sizes, const int64_t *strides, int ndim, int64_t *out);

/* c ? a : b for floats, as bit operations: GCC does not if-convert a float select feeding
 * arithmetic that may trap (-ftrapping-math), which would keep loops from vectorizing. */
static inline float opd__select_f32(int c, float a, float b) {
  union {
    float f;
    uint32_t u;
  } ua = {a}, ub = {b}, r;
  uint32_t m = 0u - (uint32_t)c;
  r.u = (ua.u & m) | (ub.u & ~m);
  return r.f;
}

/* Cephes' minimax polynomial for e^r - 1 - r = r^2 P(r), |r| <= ln2 / 2, P's coefficients
 * from the highest power down, and ln2 in two parts for the Cody-Waite reduction
 * r = x - n ln2. */
#define OPD__EXP_P0      1.9875691500e-4f
#define OPD__EXP_P1      1.3981999507e-3f
#define OPD__EXP_P2      8.3334519073e-3f
#define OPD__EXP_P3      4.1665795894e-2f
#define OPD__EXP_P4      1.6666665459e-1f
#define OPD__EXP_P5      5.0000001201e-1f
#define OPD__LN2_HI      0.693359375f
#define OPD__LN2_LO      -2.12194440e-4f
/* Adding and subtracting 1.5 * 2^23 rounds a float of magnitude below 2^22 to an integer. */
#define OPD__ROUND_MAGIC 12582912.0f

/* float32 e^x without libm, so that loops over it vectorize; within 1 ulp of the exact
 * value (checked over all floats of [-110, 95]). e^x = 2^n e^r with n = round(x / ln2),
 * e^r = 1 + r + r^2 P(r) by Horner's rule, 2^n applied in two halves so that subnormal
 * results round once. Inputs are clamped to [-104, 88.8] first (e^x underflows to 0 /
 * overflows to inf beyond); NaN propagates. */
static inline float opd__expf(float x) {
  float xc = opd__select_f32(x != x, 0.0f, x);
  xc = opd__select_f32(xc > 88.8f, 88.8f, xc);
  xc = opd__select_f32(xc < -104.0f, -104.0f, xc);
  float n = (xc * 1.44269504088896341f + OPD__ROUND_MAGIC) - OPD__ROUND_MAGIC;
  float r = xc - n * OPD__LN2_HI;
  r = r - n * OPD__LN2_LO;
  float p = OPD__EXP_P0;
  p = p * r + OPD__EXP_P1;
  p = p * r + OPD__EXP_P2;
  p = p * r + OPD__EXP_P3;
  p = p * r + OPD__EXP_P4;
  p = p * r + OPD__EXP_P5;
  p = p * (r * r) + r + 1.0f;
  int32_t ni = (int32_t)n, n1 = ni / 2, n2 = ni - n1;
  union {
    uint32_t u;
    float f;
  } s1 = {.u = (uint32_t)(n1 + 127) << 23}, s2 = {.u = (uint32_t)(n2 + 127) << 23};
  return p * s1.f * s2.f + opd__select_f32(x != x, x, 0.0f);
}

/* float32 tanh without libm, so that loops over it vectorize (tanhf is a scalar call, and
 * the bulk of a tanh-GELU); within 1.5 ulp of the exact value over every finite float
 * (checked exhaustively: 1.36; glibc's tanhf is within 2.1). |x| < 0.625: Cephes' odd
 * minimax polynomial x + x^3 P(x^2); beyond: 1 - 2 / (e^{2|x|} + 1). Both are computed and
 * one is selected; the sign of x (-0 included) is put back last.
 * Its exponential is opd__expf's, shaped for a loop's throughput, which the length of one
 * element's dependency chain bounds (the out-of-order window holds a few elements):
 *   - tanh rounds to 1 from |x| = 9.02 on, so |x| is clamped to 9.1 and n stays in [0, 27]:
 *     2^n is one exact multiply, read from the rounding's own bits with no float-to-int
 *     conversion, and no clamp or NaN select is needed (a NaN passes the clamp, whose
 *     compare is false, and every operation after it);
 *   - both polynomials by Estrin's scheme (pairs, then pairs of pairs) instead of Horner's
 *     rule, which halves the exponential's chain of multiply-adds.
 * A third less time than 1 - 2 / (opd__expf(2|x|) + 1); the worst error over all floats went
 * from 1.33 to 1.36 ulp. (The exponential alone, by Estrin, misses opd__expf's 1 ulp.) */
static inline float opd__tanhf(float x) {
  const float ax = fabsf(x), z = x * x, z2 = z * z;
  const float p01 = -5.70498872745e-3f * z + 2.06390887954e-2f;
  const float p23 = -5.37397155531e-2f * z + 1.33314422036e-1f;
  const float p = (p01 * z2 + p23) * z - 3.33332819422e-1f;
  const float near_zero = p * z * ax + ax;
  const float t = 2.0f * opd__select_f32(ax > 9.1f, 9.1f, ax);
  union {
    float f;
    uint32_t u;
  } k = {t * 1.44269504088896341f + OPD__ROUND_MAGIC}, magic = {OPD__ROUND_MAGIC}, two_n;
  two_n.u = (k.u - magic.u + 127u) << 23; /* n in the low bits of k's mantissa */
  const float n = k.f - OPD__ROUND_MAGIC;
  float r = t - n * OPD__LN2_HI;
  r = r - n * OPD__LN2_LO;
  const float r2 = r * r;
  const float e01 = OPD__EXP_P0 * r + OPD__EXP_P1, e23 = OPD__EXP_P2 * r + OPD__EXP_P3;
  const float e45 = OPD__EXP_P4 * r + OPD__EXP_P5;
  const float e = (((e01 * r2 + e23) * r2 + e45) * r2 + (r + 1.0f)) * two_n.f;
  const float far = 1.0f - 2.0f / (e + 1.0f);
  return copysignf(opd__select_f32(ax < 0.625f, near_zero, far), x);
}

/* float32 gelu, x Phi(x) = x / 2 (1 + erf(x / sqrt 2)), without libm, so that loops over it
 * vectorize. erf(a) by Norbert Juffa's minimax approximations (two, split at |a| = 0.9277), the
 * outer one in the form erf(|a|) = 1 - e^r, so that 1 + erf(a) for a < 0 is e^r itself, with no
 * cancellation; both are computed and one selected. The error is below 4e-7 absolute everywhere
 * (and under 1 ulp of the result for x >= 1), below 1e-5 relative for x >= -3 and 1e-4 for
 * x >= -6, where PyTorch's float formula loses more to the cancellation in 1 + erf
 * (tests/test_elementwise.c checks a sweep of [-14, 14]). NaN propagates; gelu(inf) = inf,
 * gelu(-inf) = NaN as in PyTorch (-inf * 0). */
static inline float opd__gelu_f32(float x) {
  float a = x * 0.707106781186547524f, t = fabsf(a), s = a * a;
  float p = -5.96761703e-4f; /* erf(a), |a| <= 0.9277 */
  p = p * s + 4.99119423e-3f;
  p = p * s + -2.67681349e-2f;
  p = p * s + 1.12819925e-1f;
  p = p * s + -3.76125336e-1f;
  p = p * s + 1.28379166e-1f;
  p = p * a + a;
  float r = -1.72853470e-5f * t + 3.83197126e-4f; /* erfc(|a|) = e^r, |a| > 0.9277 */
  float u = -3.88396438e-3f * t + 2.42546219e-2f;
  r = r * s + u;
  r = r * t + -1.06777877e-1f;
  r = r * t + -6.34846687e-1f;
  r = r * t + -1.28717512e-1f;
  r = r * t - t;
  float q = opd__expf(r);
  float outer = opd__select_f32(a > 0, 2.0f - q, q);
  return 0.5f * x * opd__select_f32(t > 0.927734375f, outer, 1.0f + p);
}

#endif

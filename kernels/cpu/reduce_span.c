/* reduce_span.c: the reductions' span loops for AVX-512, AVX2 and the baseline, and the choice
 * among them (see [Note: Reductions per instruction set] in reduce_span.h). */
#include "reduce_span.h"

#include <math.h>
#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#endif
#include <pthread.h>
#include <string.h>

#include "opd/kernels.h"

/* float32 elements per block of a float32 sum; lanes per accumulator set */
enum { BLOCK = 4096, LANES_32 = 64, LANES_64 = 32 };

static float max_f32_serial(const float *x, int64_t n, float m) {
  for (int64_t i = 0; i < n; i++) m = opd__max_nan_f(m, x[i]);
  return m;
}
static double max_f64_serial(const double *x, int64_t n, double m) {
  for (int64_t i = 0; i < n; i++) m = opd__max_nan_d(m, x[i]);
  return m;
}

/* ---- the bodies, on vectors V of VL elements of T: LANES lanes in LANES / VL vectors ---- */

/* The accumulators' lanes combined pairwise, lane[j] = OP(lane[j], lane[j + h]) for h = LANES/2,
 * ..., 1: in whole vectors (VOP) while h >= VL, then on the lanes (SOP), so the order is the same
 * for every VL. */
#define FOLD(T, V, VL, LANES, acc, result, VOP, SOP)                                      \
  do {                                                                                    \
    _Pragma("GCC unroll 8") for (int h_ = (LANES) / 2; h_ >= (VL); h_ /= 2) {             \
      for (int k_ = 0; k_ < h_ / (VL); k_++) acc[k_] = VOP(acc[k_], acc[k_ + h_ / (VL)]); \
    }                                                                                     \
    T l_[VL];                                                                             \
    memcpy(l_, &acc[0], sizeof l_);                                                       \
    _Pragma("GCC unroll 8") for (int h_ = (VL) / 2; h_ >= 1; h_ /= 2)                     \
        _Pragma("GCC unroll 32") for (int j_ = 0; j_ < h_; j_++) l_[j_] =                 \
            SOP(l_[j_], l_[j_ + h_]);                                                     \
    result = l_[0];                                                                       \
  } while (0)
#define ADD(a, b) ((a) + (b))

/* n < LANES trailing elements, zero-padded, added to the accumulators lane by lane. */
#define ADD_TAIL(T, V, VL, LANES, acc, x, n)                         \
  do {                                                               \
    if ((n) > 0) {                                                   \
      V t_[(LANES) / (VL)];                                          \
      for (int k_ = 0; k_ < (LANES) / (VL); k_++) t_[k_] = (V){0};   \
      memcpy(t_, (x), (size_t)(n) * sizeof(T));                      \
      for (int k_ = 0; k_ < (LANES) / (VL); k_++) acc[k_] += t_[k_]; \
    }                                                                \
  } while (0)

/* A sum of n elements of T in LANES lanes (one block). */
#define SUM_LANES(T, V, VL, LANES, x, n, result)                                                 \
  do {                                                                                           \
    V acc[(LANES) / (VL)];                                                                       \
    for (int k_ = 0; k_ < (LANES) / (VL); k_++) acc[k_] = (V){0};                                \
    int64_t i_ = 0;                                                                              \
    for (; i_ + (LANES) <= (n); i_ += (LANES))                                                   \
      for (int k_ = 0; k_ < (LANES) / (VL); k_++) acc[k_] += *(const V *)((x) + i_ + k_ * (VL)); \
    ADD_TAIL(T, V, VL, LANES, acc, (x) + i_, (n)-i_);                                            \
    FOLD(T, V, VL, LANES, acc, result, ADD, ADD);                                                \
  } while (0)

/* max(init, x[0..n)). Each lane keeps VMAX(acc, v): v where v > acc, else acc (x86's max
 * instruction, one operation; a bit select on the comparison elsewhere), so a NaN element is
 * passed over there, and found by a second set of lanes that add the elements up: a NaN makes
 * its lane's sum NaN (so do +inf and -inf in one lane, a false alarm). A span with a NaN is
 * reduced again by the serial rule. Maxima of numbers are exact in any order; the lanes are
 * folded in FOLD's fixed order, so a signed zero comes out the same for every set. */
#define MAX_BODY(T, V, VI, VL, LANES, VMAX, SERIAL, MAX_NAN)                            \
  V acc[(LANES) / (VL)], chk[(LANES) / (VL)];                                           \
  for (int k = 0; k < (LANES) / (VL); k++) acc[k] = (V){0} - INFINITY, chk[k] = (V){0}; \
  int64_t i = 0;                                                                        \
  for (; i + (LANES) <= n; i += (LANES))                                                \
    for (int k = 0; k < (LANES) / (VL); k++) {                                          \
      V v = *(const V *)(x + i + k * (VL));                                             \
      acc[k] = VMAX(acc[k], v);                                                         \
      chk[k] += v;                                                                      \
    }                                                                                   \
  for (int k = 1; k < (LANES) / (VL); k++) chk[0] += chk[k];                            \
  VI nan = (VI)(chk[0] != chk[0]), none = {0};                                          \
  if (memcmp(&nan, &none, sizeof nan) != 0) return SERIAL(x, n, init);                  \
  T m;                                                                                  \
  FOLD(T, V, VL, LANES, acc, m, VMAX, SCALAR_MAX);                                      \
  m = SERIAL(x + i, n - i, m);                                                          \
  return m != m ? SERIAL(x, n, init) /* the NaN is in the tail */ : MAX_NAN(init, m);

/* b where b > a, else a: the rule of VMAX on one lane */
#define SCALAR_MAX(a, b)               ((b) > (a) ? (b) : (a))
/* VMAX on vectors V of lanes VI: a bit select on the comparison's mask; on x86 the max
 * instruction of the set's width, whose rule is the same (MAXPS: src1 > src2 ? src1 : src2) */
#define SELECT_MAX(V, VI, a, b)        ((V)(((VI)((b) > (a)) & (VI)(b)) | (~(VI)((b) > (a)) & (VI)(a))))
#define X86_MAX(V, INTRINSIC, M, a, b) ((V)INTRINSIC((M)(b), (M)(a)))

/* ---- the sets: the bodies compiled with vectors of BYTES bytes ---- */

#define SPAN_SET(SUFFIX, ATTR, BYTES, MAX_F32, MAX_F64)                                      \
  typedef float f32_##SUFFIX __attribute__((vector_size(BYTES), aligned(4), may_alias));     \
  typedef double f64_##SUFFIX __attribute__((vector_size(BYTES), aligned(8), may_alias));    \
  typedef uint64_t u64_##SUFFIX __attribute__((vector_size(BYTES), aligned(8), may_alias));  \
  typedef int32_t i32_##SUFFIX __attribute__((vector_size(BYTES), aligned(4), may_alias));   \
  typedef int64_t i64_##SUFFIX __attribute__((vector_size(BYTES), aligned(8), may_alias));   \
  enum { VL32_##SUFFIX = (BYTES) / 4, VL64_##SUFFIX = (BYTES) / 8 };                         \
  ATTR static inline f32_##SUFFIX vmax_f32_##SUFFIX(f32_##SUFFIX a, f32_##SUFFIX b) {        \
    return MAX_F32(f32_##SUFFIX, i32_##SUFFIX, a, b);                                        \
  }                                                                                          \
  ATTR static inline f64_##SUFFIX vmax_f64_##SUFFIX(f64_##SUFFIX a, f64_##SUFFIX b) {        \
    return MAX_F64(f64_##SUFFIX, i64_##SUFFIX, a, b);                                        \
  }                                                                                          \
  ATTR static double sum_f32_##SUFFIX(const float *x, int64_t n) {                           \
    double total = 0;                                                                        \
    for (int64_t b = 0; b < n; b += BLOCK) {                                                 \
      int64_t len = n - b > BLOCK ? BLOCK : n - b;                                           \
      float s;                                                                               \
      SUM_LANES(float, f32_##SUFFIX, VL32_##SUFFIX, LANES_32, x + b, len, s);                \
      total += s;                                                                            \
    }                                                                                        \
    return total;                                                                            \
  }                                                                                          \
  ATTR static double sum_f64_##SUFFIX(const double *x, int64_t n) {                          \
    double s;                                                                                \
    SUM_LANES(double, f64_##SUFFIX, VL64_##SUFFIX, LANES_64, x, n, s);                       \
    return s;                                                                                \
  }                                                                                          \
  ATTR static uint64_t sum_i64_##SUFFIX(const int64_t *x, int64_t n) {                       \
    uint64_t s;                                                                              \
    SUM_LANES(uint64_t, u64_##SUFFIX, VL64_##SUFFIX, LANES_64, (const uint64_t *)x, n, s);   \
    return s;                                                                                \
  }                                                                                          \
  ATTR static float max_f32_##SUFFIX(const float *x, int64_t n, float init) {                \
    MAX_BODY(float, f32_##SUFFIX, i32_##SUFFIX, VL32_##SUFFIX, LANES_32, vmax_f32_##SUFFIX,  \
             max_f32_serial, opd__max_nan_f);                                                \
  }                                                                                          \
  ATTR static double max_f64_##SUFFIX(const double *x, int64_t n, double init) {             \
    MAX_BODY(double, f64_##SUFFIX, i64_##SUFFIX, VL64_##SUFFIX, LANES_64, vmax_f64_##SUFFIX, \
             max_f64_serial, opd__max_nan_d);                                                \
  }                                                                                          \
  static const opd__span_kernels set_##SUFFIX = {#SUFFIX,          sum_f32_##SUFFIX,         \
                                                 sum_f64_##SUFFIX, sum_i64_##SUFFIX,         \
                                                 max_f32_##SUFFIX, max_f64_##SUFFIX};

#if defined(__x86_64__) && defined(__GNUC__)
#define HAVE_X86_SETS            1
#define MAX_F32_128(V, VI, a, b) X86_MAX(V, _mm_max_ps, __m128, a, b)
#define MAX_F64_128(V, VI, a, b) X86_MAX(V, _mm_max_pd, __m128d, a, b)
#define MAX_F32_256(V, VI, a, b) X86_MAX(V, _mm256_max_ps, __m256, a, b)
#define MAX_F64_256(V, VI, a, b) X86_MAX(V, _mm256_max_pd, __m256d, a, b)
#define MAX_F32_512(V, VI, a, b) X86_MAX(V, _mm512_max_ps, __m512, a, b)
#define MAX_F64_512(V, VI, a, b) X86_MAX(V, _mm512_max_pd, __m512d, a, b)
SPAN_SET(baseline, , 16, MAX_F32_128, MAX_F64_128)
SPAN_SET(avx2, __attribute__((target("avx2"))), 32, MAX_F32_256, MAX_F64_256)
SPAN_SET(avx512f, __attribute__((target("avx512f"))), 64, MAX_F32_512, MAX_F64_512)
#else
SPAN_SET(baseline, , 16, SELECT_MAX, SELECT_MAX)
#endif

static const opd__span_kernels *chosen;
static pthread_once_t chosen_once = PTHREAD_ONCE_INIT;

static void choose(void) {
  chosen = opd__span_kernels_named("avx512f");
  if (!chosen) chosen = opd__span_kernels_named("avx2");
  if (!chosen) chosen = &set_baseline;
}

const opd__span_kernels *opd__span_kernels_get(void) {
  pthread_once(&chosen_once, choose);
  return chosen;
}

const opd__span_kernels *opd__span_kernels_named(const char *isa) {
  if (!strcmp(isa, "baseline")) return &set_baseline;
#ifdef HAVE_X86_SETS
  __builtin_cpu_init();
  if (!strcmp(isa, "avx2") && __builtin_cpu_supports("avx2")) return &set_avx2;
  if (!strcmp(isa, "avx512f") && __builtin_cpu_supports("avx512f")) return &set_avx512f;
#endif
  return NULL;
}

const char *opd_kernels_cpu_isa(void) {
  return opd__span_kernels_get()->isa;
}

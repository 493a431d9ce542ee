/* reduce_span.h: the inner loops of the reductions over contiguous spans (internal to the
 * kernels library), one set per instruction set, chosen once on the CPU's features.
 *
 * [Note: Reductions per instruction set]
 * reduce_span.c writes each loop once, on GCC vector types of 64 bytes, and compiles that one
 * body three times: for AVX-512 (one zmm register per vector), for AVX2 (two ymm) and for the
 * baseline x86-64 (four xmm), each a function with its own target attribute (other compilers and
 * CPUs get the baseline only). The first reduction picks the widest set the CPU has
 * (__builtin_cpu_supports). The lanes do not depend on the set: a float32 sum always keeps 64
 * lanes, float64 and int64 sums 32, maxima 64 (float32) or 32 (float64); the partial lanes are
 * folded in one fixed pairwise order, and no multiply is contracted into an FMA (ISO C mode), so
 * every set gives bit-identical results and tests compare them with the baseline's. float32 sums
 * go in blocks of BLOCK elements, each block's lanes folded into a float and the block sums
 * added in double, as before (see [Note: The reduction engine]); the error bound is FORMAT.md's
 * for any order. Maxima propagate NaN: a span holding one is reduced again by the scalar rule
 * (opd__max_nan_f: the last NaN seen wins), so the answer is the serial one.
 */
#ifndef OPD_KERNELS_REDUCE_SPAN_H
#define OPD_KERNELS_REDUCE_SPAN_H

#include <stdint.h>

/* max that propagates NaN: a NaN `a` stays, a NaN `b` wins (the serial rule of amax) */
static inline float opd__max_nan_f(float a, float b) {
  return b > a || b != b ? b : a;
}
static inline double opd__max_nan_d(double a, double b) {
  return b > a || b != b ? b : a;
}

typedef struct opd__span_kernels {
  const char *isa; /* "avx512f", "avx2" or "baseline" */
  /* sums of x[0..n) */
  double (*sum_f32)(const float *x, int64_t n);
  double (*sum_f64)(const double *x, int64_t n);
  uint64_t (*sum_i64)(const int64_t *x, int64_t n); /* wraps */
  /* max(init, x[0], ..., x[n-1]), NaN propagating */
  float (*max_f32)(const float *x, int64_t n, float init);
  double (*max_f64)(const double *x, int64_t n, double init);
} opd__span_kernels;

/* The set the CPU's features chose (picked on the first call). */
const opd__span_kernels *opd__span_kernels_get(void);
/* The set named isa ("avx512f", "avx2", "baseline") if this CPU can run it, else NULL: for tests
 * comparing the sets. */
const opd__span_kernels *opd__span_kernels_named(const char *isa);

#endif

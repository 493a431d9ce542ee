/* fast_math.h: the vectorizable float32 math of the kernels (internal to the kernels
 * library): exp, tanh and gelu without libm calls, and the branch-free select they are built
 * from.
 *
 * [Note: One source for the fast math]
 * This header depends on nothing but the C library's headers, because it is compiled twice:
 * into the kernels and the fused-program interpreter, and, as text embedded in the daemon
 * (graph/CMakeLists.txt), into every C program the fused groups' second tier generates
 * ([Note: The C tier of fused programs] in graph/src/plan/c_tier.c). Both therefore compute the
 * same formulas to the bit, given the same ISO C rules (no contraction into FMA).
 */
#ifndef OPD_KERNELS_FAST_MATH_H
#define OPD_KERNELS_FAST_MATH_H

#include <math.h>
#include <stdint.h>

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

/* test_vec_math.c: the vectorizable float32 functions of kernels/src/loops.h (opd__expf,
 * opd__tanhf) that the elementwise kernels and the graphs' fused programs share, against
 * libm's double results: the error in ulps over a sample of every binade, and the special
 * values (signed zeros, infinities, NaN, the ends of the ranges). With OPD_TEST_EXHAUSTIVE=1
 * in the environment, every float as well (about 5 minutes): the bounds loops.h states. */
#include <check.h>
#include <float.h>
#include <stdlib.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "src/loops.h"

Suite *opd_test_vec_math_suite(void);

static float float_of(uint32_t bits) {
  float f;
  memcpy(&f, &bits, sizeof f);
  return f;
}

/* |got - want| in units of the last place of the float32 nearest want. */
static double ulps(float got, double want) {
  if (isinf(want)) return got == (float)want ? 0 : INFINITY;
  double w = fabs(want);
  int e;
  frexp(w, &e);
  double ulp = w < 0x1p-126 ? 0x1p-149 : ldexp(1.0, e - 24);
  return fabs((double)got - want) / ulp;
}

/* The worst error of f against ref over the floats between lo and hi (both signs), every
 * step-th bit pattern. */
static double worst_ulps(float (*f)(float), double (*ref)(double), float lo, float hi,
                         uint32_t step) {
  uint32_t blo, bhi;
  memcpy(&blo, &lo, sizeof blo);
  memcpy(&bhi, &hi, sizeof bhi);
  double worst = 0;
  for (uint32_t b = blo; b <= bhi && b >= blo; b += step) {
    for (int sign = 0; sign < 2; sign++) {
      float x = float_of(b | (uint32_t)sign << 31);
      double e = ulps(f(x), ref((double)x));
      if (e > worst) worst = e;
    }
  }
  return worst;
}

static float expf_of(float x) {
  return opd__expf(x);
}
static float tanhf_of(float x) {
  return opd__tanhf(x);
}

START_TEST(expf_within_one_ulp) {
  /* results between the smallest normal and the largest float: inputs in [-87.3, 88.7] */
  ck_assert_double_le(worst_ulps(expf_of, exp, 0x1p-30f, 87.3f, 997), 1.0);
  ck_assert_double_le(worst_ulps(expf_of, exp, 87.3f, 88.7f, 13), 1.0);
  ck_assert_float_eq(opd__expf(0.0f), 1.0f);
  ck_assert_float_eq(opd__expf(-INFINITY), 0.0f);
  ck_assert(isinf(opd__expf(INFINITY)) && opd__expf(INFINITY) > 0);
  ck_assert(isinf(opd__expf(89.0f)));
  ck_assert_float_eq(opd__expf(-110.0f), 0.0f);
  ck_assert(isnan(opd__expf(NAN)));
}
END_TEST

START_TEST(tanhf_within_one_and_a_half_ulps) {
  /* the polynomial below 0.625, the exponential form above, and where they meet */
  ck_assert_double_le(worst_ulps(tanhf_of, tanh, 0x1p-126f, 0.625f, 4099), 1.5);
  ck_assert_double_le(worst_ulps(tanhf_of, tanh, 0.6f, 0.65f, 7), 1.5);
  ck_assert_double_le(worst_ulps(tanhf_of, tanh, 0.625f, 10.0f, 1009), 1.5);
  /* every float where the exponential's input is clamped (9.1) and tanh reaches 1 (9.02) */
  ck_assert_double_le(worst_ulps(tanhf_of, tanh, 8.9f, 9.3f, 1), 1.5);
  ck_assert_double_le(worst_ulps(tanhf_of, tanh, 10.0f, 0x1p100f, 65537), 0.5);
  ck_assert_double_le(worst_ulps(tanhf_of, tanh, 0x1p-149f, 0x1p-126f, 65537), 0.5);
}
END_TEST

START_TEST(tanhf_special_values) {
  ck_assert(opd__tanhf(0.0f) == 0.0f && !signbit(opd__tanhf(0.0f)));
  ck_assert(opd__tanhf(-0.0f) == 0.0f && signbit(opd__tanhf(-0.0f)));
  ck_assert_float_eq(opd__tanhf(INFINITY), 1.0f);
  ck_assert_float_eq(opd__tanhf(-INFINITY), -1.0f);
  ck_assert_float_eq(opd__tanhf(FLT_MAX), 1.0f);
  ck_assert_float_eq(opd__tanhf(-FLT_MAX), -1.0f);
  ck_assert(isnan(opd__tanhf(NAN)));
  ck_assert(isnan(opd__tanhf(-NAN)));
  /* odd: tanh(-x) == -tanh(x) bit for bit */
  for (float x = 1e-3f; x < 20.0f; x *= 1.37f) ck_assert_float_eq(opd__tanhf(-x), -opd__tanhf(x));
}
END_TEST

/* Every float of the ranges, both signs: only in the suite with OPD_TEST_EXHAUSTIVE=1. */
START_TEST(every_float) {
  ck_assert_double_le(worst_ulps(tanhf_of, tanh, 0x1p-149f, FLT_MAX, 1), 1.5);
  ck_assert_double_le(worst_ulps(expf_of, exp, 0x1p-149f, 87.3f, 1), 1.0);
  ck_assert_double_le(worst_ulps(expf_of, exp, 87.3f, 88.7f, 1), 1.0);
}
END_TEST

Suite *opd_test_vec_math_suite(void) {
  Suite *s = suite_create("vec_math");
  TCase *tc = tcase_create("core");
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, expf_within_one_ulp);
  tcase_add_test(tc, tanhf_within_one_and_a_half_ulps);
  tcase_add_test(tc, tanhf_special_values);
  suite_add_tcase(s, tc);
  const char *exhaustive = getenv("OPD_TEST_EXHAUSTIVE");
  if (exhaustive && strcmp(exhaustive, "1") == 0) {
    TCase *all = tcase_create("exhaustive");
    tcase_set_timeout(all, 3600); /* about 5 minutes on one core */
    tcase_add_test(all, every_float);
    suite_add_tcase(s, all);
  }
  return s;
}

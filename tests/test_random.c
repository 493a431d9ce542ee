/* test_random.c: the random operators (uniform_, normal_, exponential_, bernoulli_,
 * random_, bernoulli, rand, randn, randint, randperm) on the CPU and Meta. Their values are
 * checked statistically, not bit for bit: the sample mean and variance of 8192 draws lie
 * within 6 standard errors of the distribution's (a bound a correct generator misses with
 * probability below 1e-8), and the bounds of every draw. Also: one seed gives the same
 * draws again, different seeds different draws, a strided self is filled through its view,
 * and PyTorch 1.13's errors (messages as PyTorch prints them). */
#include <check.h>
#include <math.h>
#include <string.h>

#include "boxed_call.h"
#include "opd/dispatcher.h"
#include "opd/error.h"
#include "opd/kernels.h"
#include "opd/random.h"
#include "opd/tensor.h"
#include "tensor_helpers.h"

Suite *opd_test_random_suite(void);

#define N 8192

static opd_generator gen;
static opd_generator *saved;

static void setup(void) {
  ck_assert_int_eq(opd_kernels_register(), 0);
  opd_generator_init(&gen, 1234);
  saved = opd_generator_swap(&gen);
}

static void teardown(void) {
  opd_generator_swap(saved);
}

/* self filled in place by `name`(self, args..., generator None) */
static void fill(const char *name, opd_tensor *self, const opd_ivalue *args, int n) {
  opd_ivalue all[5] = {T(self)};
  for (int i = 0; i < n; i++) all[1 + i] = args[i];
  all[1 + n] = NONE;
  opd_tensor *r = NULL;
  ck_assert_msg(opd_test_call(name, all, n + 2, &r) == 0, "%s: %s", name, opd_last_error());
  ck_assert_ptr_eq(r, self);
  opd_tensor_release(r);
}

static void expect_error(const char *name, opd_tensor *self, const opd_ivalue *args, int n,
                         const char *msg) {
  opd_ivalue all[5] = {T(self)};
  for (int i = 0; i < n; i++) all[1 + i] = args[i];
  all[1 + n] = NONE;
  opd_tensor *r = NULL;
  ck_assert_int_ne(opd_test_call(name, all, n + 2, &r), 0);
  ck_assert_msg(strstr(opd_last_error(), msg), "%s: '%s' lacks '%s'", name, opd_last_error(), msg);
}

/* mean and variance of t's elements */
static void moments(const opd_tensor *t, double *mean, double *var) {
  double s = 0, s2 = 0;
  for (int64_t i = 0; i < t->numel; i++) s += at(t, i);
  *mean = s / (double)t->numel;
  for (int64_t i = 0; i < t->numel; i++) s2 += (at(t, i) - *mean) * (at(t, i) - *mean);
  *var = s2 / (double)(t->numel - 1);
}

/* the sample mean within 6 standard errors of mu; the variance within 6 of its standard
 * error (fourth central moment m4) */
static void expect_moments(const opd_tensor *t, double mu, double sigma2, double m4) {
  double mean, var, n = (double)t->numel;
  moments(t, &mean, &var);
  ck_assert_msg(fabs(mean - mu) <= 6 * sqrt(sigma2 / n), "mean %g, want %g", mean, mu);
  double se_var = sqrt((m4 - sigma2 * sigma2) / n);
  ck_assert_msg(fabs(var - sigma2) <= 6 * se_var, "variance %g, want %g", var, sigma2);
}

START_TEST(test_uniform) {
  opd_tensor *t = mk(OPD_FLOAT32, SHAPE(N), NULL);
  fill("aten::uniform_", t, (opd_ivalue[]){D(-2), D(3)}, 2);
  for (int64_t i = 0; i < t->numel; i++) ck_assert(at(t, i) >= -2 && at(t, i) < 3);
  double w = 5; /* uniform on [a, b): variance w^2 / 12, fourth moment w^4 / 80 */
  expect_moments(t, 0.5, w * w / 12, w * w * w * w / 80);
  opd_tensor_release(t);
}
END_TEST

START_TEST(test_normal) {
  opd_tensor *t = mk(OPD_FLOAT64, SHAPE(N), NULL);
  fill("aten::normal_", t, (opd_ivalue[]){D(2), D(3)}, 2);
  expect_moments(t, 2, 9, 3 * 81); /* normal: fourth central moment 3 sigma^4 */
  opd_tensor_release(t);
}
END_TEST

START_TEST(test_exponential) {
  opd_tensor *t = mk(OPD_FLOAT32, SHAPE(N), NULL);
  fill("aten::exponential_", t, (opd_ivalue[]){D(2)}, 1);
  for (int64_t i = 0; i < t->numel; i++) ck_assert(at(t, i) >= 0);
  /* rate 2: mean 1/2, variance 1/4, fourth central moment 9 / 2^4 */
  expect_moments(t, 0.5, 0.25, 9.0 / 16);
  opd_tensor_release(t);
}
END_TEST

START_TEST(test_bernoulli) {
  opd_tensor *t = mk(OPD_INT64, SHAPE(N), NULL);
  fill("aten::bernoulli_.float", t, (opd_ivalue[]){D(0.3)}, 1);
  for (int64_t i = 0; i < t->numel; i++) ck_assert(at(t, i) == 0 || at(t, i) == 1);
  double p = 0.3, q = 1 - p; /* Bernoulli: variance pq, fourth central moment pq(1 - 3pq) */
  expect_moments(t, p, p * q, p * q * (1 - 3 * p * q));
  opd_tensor_release(t);
  /* p per element, broadcast: rows of p 0 and 1 are exact, 0.5 varies */
  opd_tensor *s = mk(OPD_FLOAT32, SHAPE(3, N / 4), NULL);
  opd_tensor *pr = mk(OPD_FLOAT64, SHAPE(3, 1), VALS(0, 1, 0.5));
  fill("aten::bernoulli_.Tensor", s, (opd_ivalue[]){T(pr)}, 1);
  double ones = 0;
  for (int64_t i = 0; i < N / 4; i++) {
    ck_assert(at(s, i) == 0);
    ck_assert(at(s, N / 4 + i) == 1);
    ones += at(s, N / 2 + i);
  }
  ck_assert(fabs(ones / (N / 4) - 0.5) <= 6 * sqrt(0.25 / (N / 4)));
  opd_tensor_release(pr);
  opd_tensor_release(s);
}
END_TEST

START_TEST(test_random_integers) {
  opd_tensor *t = mk(OPD_INT32, SHAPE(N), NULL);
  fill("aten::random_.from", t, (opd_ivalue[]){I(-3), I(5)}, 2);
  int seen[8] = {0};
  for (int64_t i = 0; i < t->numel; i++) {
    double v = at(t, i);
    ck_assert(v >= -3 && v < 5 && v == floor(v));
    seen[(int)v + 3]++;
  }
  for (int k = 0; k < 8; k++) ck_assert_int_gt(seen[k], N / 8 - 6 * 30); /* sd sqrt(N/8 7/8) */
  fill("aten::random_.to", t, (opd_ivalue[]){I(10)}, 1);
  for (int64_t i = 0; i < t->numel; i++) ck_assert(at(t, i) >= 0 && at(t, i) < 10);
  opd_tensor *b = mk(OPD_BOOL, SHAPE(64), NULL);
  fill("aten::random_", b, NULL, 0);
  double ones = 0;
  for (int64_t i = 0; i < b->numel; i++) ones += at(b, i);
  ck_assert(ones > 0 && ones < 64);
  opd_tensor_release(b);
  opd_tensor_release(t);
}
END_TEST

/* The same seed draws the same values; another seed others. */
START_TEST(test_seed_determines_draws) {
  opd_tensor *a = mk(OPD_FLOAT32, SHAPE(256), NULL), *b = mk(OPD_FLOAT32, SHAPE(256), NULL);
  opd_generator_init(&gen, 7);
  fill("aten::normal_", a, (opd_ivalue[]){D(0), D(1)}, 2);
  opd_generator_init(&gen, 7);
  fill("aten::normal_", b, (opd_ivalue[]){D(0), D(1)}, 2);
  ck_assert_mem_eq(opd_tensor_data(a), opd_tensor_data(b), 256 * sizeof(float));
  fill("aten::normal_", b, (opd_ivalue[]){D(0), D(1)}, 2); /* the offset moved on */
  ck_assert(memcmp(opd_tensor_data(a), opd_tensor_data(b), 256 * sizeof(float)) != 0);
  opd_generator_init(&gen, 8);
  fill("aten::normal_", b, (opd_ivalue[]){D(0), D(1)}, 2);
  ck_assert(memcmp(opd_tensor_data(a), opd_tensor_data(b), 256 * sizeof(float)) != 0);
  opd_tensor_release(a);
  opd_tensor_release(b);
}
END_TEST

/* A transposed self is filled element by element through its strides. */
START_TEST(test_strided_self) {
  opd_tensor *base = mk(OPD_FLOAT64, SHAPE(8, 16), NULL);
  opd_tensor *v = view(base, SHAPE(16, 8), (int64_t[]){1, 16}, 0);
  fill("aten::uniform_", v, (opd_ivalue[]){D(5), D(6)}, 2);
  for (int64_t i = 0; i < base->numel; i++) ck_assert(at(base, i) >= 5 && at(base, i) < 6);
  opd_tensor_release(v);
  opd_tensor_release(base);
}
END_TEST

START_TEST(test_factories) {
  opd_tensor *r = NULL;
  int64_t size[2] = {4, 512};
  opd_ivalue sz;
  ck_assert_int_eq(opd_iv_make_int_list(&sz, size, 2), 0);
  ck_assert_int_eq(opd_test_call("aten::randn", (opd_ivalue[]){sz, NONE, NONE, NONE, NONE}, 5, &r),
                   0);
  ck_assert_int_eq(opd_tensor_dtype(r), OPD_FLOAT32);
  ck_assert_int_eq(r->numel, 2048);
  expect_moments(r, 0, 1, 3);
  opd_tensor_release(r);
  ck_assert_int_eq(opd_iv_make_int_list(&sz, size, 2), 0);
  ck_assert_int_eq(opd_test_call("aten::randint.low",
                                 (opd_ivalue[]){I(-2), I(2), sz, NONE, NONE, NONE, NONE}, 7, &r),
                   0);
  ck_assert_int_eq(opd_tensor_dtype(r), OPD_INT64);
  for (int64_t i = 0; i < r->numel; i++) ck_assert(at(r, i) >= -2 && at(r, i) < 2);
  opd_tensor_release(r);
  ck_assert_int_eq(
      opd_test_call("aten::randperm", (opd_ivalue[]){I(100), NONE, NONE, NONE, NONE}, 5, &r), 0);
  int seen[100] = {0};
  for (int64_t i = 0; i < 100; i++) seen[(int)at(r, i)]++;
  for (int k = 0; k < 100; k++) ck_assert_int_eq(seen[k], 1);
  opd_tensor_release(r);
  opd_tensor *p = mk(OPD_FLOAT32, SHAPE(4), VALS(0, 1, 1, 0));
  ck_assert_int_eq(opd_test_call("aten::bernoulli", (opd_ivalue[]){T(p), NONE}, 2, &r), 0);
  for (int64_t i = 0; i < 4; i++) ck_assert(at(r, i) == at(p, i));
  opd_tensor_release(r);
  opd_tensor_release(p);
}
END_TEST

START_TEST(test_errors_and_meta) {
  opd_tensor *f = mk(OPD_FLOAT32, SHAPE(3), NULL), *i = mk(OPD_INT64, SHAPE(3), NULL);
  opd_tensor *m = mk_meta(OPD_FLOAT32, SHAPE(3));
  /* torch.empty(3).uniform_(1, 0), torch.empty(3).normal_(0, -1), ... */
  expect_error("aten::uniform_", f, (opd_ivalue[]){D(1), D(0)}, 2,
               "uniform_ expects to return a [from, to) range, but found from=1 > to=0");
  expect_error("aten::uniform_", m, (opd_ivalue[]){D(1), D(0)}, 2, "uniform_ expects");
  expect_error("aten::normal_", f, (opd_ivalue[]){D(0), D(-1)}, 2,
               "normal expects std >= 0.0, but found std -1");
  expect_error("aten::normal_", i, (opd_ivalue[]){D(0), D(1)}, 2,
               "\"normal_kernel_cpu\" not implemented for 'Long'");
  expect_error("aten::exponential_", f, (opd_ivalue[]){D(-1)}, 1,
               "exponential_ expects lambda >= 0.0, but found lambda=-1");
  expect_error("aten::bernoulli_.float", f, (opd_ivalue[]){D(2)}, 1,
               "bernoulli_ expects p to be in [0, 1], but got p=2");
  expect_error("aten::random_.from", i, (opd_ivalue[]){I(5), I(2)}, 2,
               "random_ expects 'from' to be less than 'to', but got from=5 >= to=2");
  fill("aten::uniform_", m, (opd_ivalue[]){D(0), D(1)}, 2); /* Meta: checks only */
  opd_tensor_release(m);
  opd_tensor_release(i);
  opd_tensor_release(f);
}
END_TEST

Suite *opd_test_random_suite(void) {
  Suite *s = suite_create("random");
  TCase *tc = tcase_create("random");
  tcase_add_checked_fixture(tc, setup, teardown);
  tcase_set_timeout(tc, 60); /* registration under ASan on a loaded machine */
  tcase_add_test(tc, test_uniform);
  tcase_add_test(tc, test_normal);
  tcase_add_test(tc, test_exponential);
  tcase_add_test(tc, test_bernoulli);
  tcase_add_test(tc, test_random_integers);
  tcase_add_test(tc, test_seed_determines_draws);
  tcase_add_test(tc, test_strided_self);
  tcase_add_test(tc, test_factories);
  tcase_add_test(tc, test_errors_and_meta);
  suite_add_tcase(s, tc);
  return s;
}

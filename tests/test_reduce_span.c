/* test_reduce_span.c: the reductions' span loops per instruction set (kernels/cpu/reduce_span.c,
 * [Note: Reductions per instruction set]): every set this CPU runs gives the baseline's bits;
 * the baseline against serial references (sums within the summation bound, maxima exact, int64
 * sums wrapping), on odd lengths, block-size tails and misaligned starts; NaN and infinity
 * propagation in the maxima; and amax / sum / mean over the last dim through the dispatcher on
 * float32 and float64, contiguous and transposed, with dims of size 0 and 1, against naive
 * loops. */
#include <check.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "opd/dispatcher.h"
#include "opd/kernels.h"
#include "opd/tensor.h"
#include "tensor_helpers.h"

#include "../kernels/cpu/reduce_span.h"

Suite *opd_test_reduce_span_suite(void);

static const char *const SETS[] = {"avx512f", "avx2"};
/* lengths: empty, below one vector, odd, around the 64 lanes, around a 4096-element block */
static const int64_t LENS[] = {0,  1,   2,   3,   7,   15,  16,   17,   31,   33,   63,   64,
                               65, 127, 128, 129, 255, 300, 1023, 1024, 4095, 4096, 4097, 10001};
enum { MAXN = 10001 + 8 };

static float xf[MAXN];
static double xd[MAXN];
static int64_t xi[MAXN];

static void fill(uint32_t seed) {
  for (int i = 0; i < MAXN; i++) {
    seed = seed * 1664525u + 1013904223u;
    double u = (double)(seed >> 8) / 16777216.0; /* [0, 1) */
    xf[i] = (float)(u * 8 - 3);
    xd[i] = u * 8 - 3 + u * 1e-9;
    xi[i] = (int64_t)seed << 31 ^ (int64_t)seed; /* sums wrap */
  }
}

static bool same_bits_f(float a, float b) {
  return memcmp(&a, &b, sizeof a) == 0;
}
static bool same_bits_d(double a, double b) {
  return memcmp(&a, &b, sizeof a) == 0;
}

START_TEST(test_sets_match_baseline) {
  const opd__span_kernels *base = opd__span_kernels_named("baseline");
  ck_assert_ptr_nonnull(base);
  ck_assert_ptr_nonnull(opd__span_kernels_get());
  ck_assert_str_eq(opd_kernels_cpu_isa(), opd__span_kernels_get()->isa);
  int tried = 0;
  fill(7);
  for (size_t s = 0; s < sizeof SETS / sizeof *SETS; s++) {
    const opd__span_kernels *k = opd__span_kernels_named(SETS[s]);
    if (!k) continue; /* this CPU lacks it */
    tried++;
    ck_assert_str_eq(k->isa, SETS[s]);
    for (size_t l = 0; l < sizeof LENS / sizeof *LENS; l++)
      for (int off = 0; off < 4; off += 3) { /* aligned and misaligned starts */
        int64_t n = LENS[l];
        ck_assert_msg(same_bits_d(k->sum_f32(xf + off, n), base->sum_f32(xf + off, n)),
                      "%s sum_f32 n=%lld", SETS[s], (long long)n);
        ck_assert_msg(same_bits_d(k->sum_f64(xd + off, n), base->sum_f64(xd + off, n)),
                      "%s sum_f64 n=%lld", SETS[s], (long long)n);
        ck_assert_msg(k->sum_i64(xi + off, n) == base->sum_i64(xi + off, n), "%s sum_i64 n=%lld",
                      SETS[s], (long long)n);
        ck_assert(
            same_bits_f(k->max_f32(xf + off, n, -INFINITY), base->max_f32(xf + off, n, -INFINITY)));
        ck_assert(
            same_bits_d(k->max_f64(xd + off, n, -INFINITY), base->max_f64(xd + off, n, -INFINITY)));
      }
  }
#if defined(__x86_64__) && defined(__GNUC__)
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx2")) ck_assert_int_ge(tried, 1);
  if (__builtin_cpu_supports("avx512f")) ck_assert_int_eq(tried, 2);
#endif
}
END_TEST

START_TEST(test_baseline_against_serial) {
  const opd__span_kernels *k = opd__span_kernels_named("baseline");
  fill(11);
  for (size_t l = 0; l < sizeof LENS / sizeof *LENS; l++) {
    int64_t n = LENS[l];
    long double sf = 0, sd = 0, af = 0, ad = 0;
    uint64_t si = 0;
    float mf = -INFINITY;
    double md = -INFINITY;
    for (int64_t i = 0; i < n; i++) {
      sf += xf[i + 1];
      af += fabsf(xf[i + 1]);
      sd += xd[i + 1];
      ad += fabs(xd[i + 1]);
      si += (uint64_t)xi[i + 1];
      mf = xf[i + 1] > mf ? xf[i + 1] : mf;
      md = xd[i + 1] > md ? xd[i + 1] : md;
    }
    /* FORMAT.md's bound for any order, 2 (K + 2) u sum|x|, with K = n */
    ck_assert_msg(fabsl(k->sum_f32(xf + 1, n) - sf) <= 2.0L * (n + 2) * 0x1p-24L * af,
                  "sum_f32 n=%lld", (long long)n);
    ck_assert_msg(fabsl(k->sum_f64(xd + 1, n) - sd) <= 2.0L * (n + 2) * 0x1p-53L * ad,
                  "sum_f64 n=%lld", (long long)n);
    ck_assert_uint_eq(k->sum_i64(xi + 1, n), si);
    ck_assert(same_bits_f(k->max_f32(xf + 1, n, -INFINITY), mf));
    ck_assert(same_bits_d(k->max_f64(xd + 1, n, -INFINITY), md));
    /* init takes part as an element before the span */
    ck_assert(same_bits_f(k->max_f32(xf + 1, n, 100.0f), 100.0f));
    ck_assert(same_bits_d(k->max_f64(xd + 1, n, 100.0), 100.0));
  }
}
END_TEST

/* NaN anywhere wins (the last one seen, as the serial rule has it); inf is a number. */
START_TEST(test_max_nan_and_inf) {
  const char *names[] = {"baseline", "avx2", "avx512f"};
  for (int s = 0; s < 3; s++) {
    const opd__span_kernels *k = opd__span_kernels_named(names[s]);
    if (!k) continue;
    for (size_t l = 1; l < sizeof LENS / sizeof *LENS; l++) {
      int64_t n = LENS[l];
      for (int64_t pos = 0; pos < n; pos += n / 5 + 1) {
        fill(3);
        xf[pos] = NAN;
        xd[pos] = NAN;
        ck_assert_msg(isnan(k->max_f32(xf, n, -INFINITY)), "%s n=%lld pos=%lld", names[s],
                      (long long)n, (long long)pos);
        ck_assert(isnan(k->max_f64(xd, n, -INFINITY)));
        xf[pos] = INFINITY;
        xd[pos] = INFINITY;
        ck_assert(k->max_f32(xf, n, -INFINITY) == INFINITY);
        ck_assert(k->max_f64(xd, n, -INFINITY) == INFINITY);
        xf[pos] = -INFINITY;
        xd[pos] = -INFINITY;
        ck_assert(!isnan(k->max_f32(xf, n, -INFINITY)));
      }
      for (int64_t i = 0; i < n; i++) {
        xf[i] = -INFINITY;
        xd[i] = -INFINITY;
      }
      ck_assert(k->max_f32(xf, n, -INFINITY) == -INFINITY);
      ck_assert(k->max_f64(xd, n, -INFINITY) == -INFINITY);
      ck_assert(isnan(k->max_f32(xf, n, NAN))); /* a NaN before the span stays */
      ck_assert(isnan(k->max_f64(xd, n, NAN)));
    }
  }
}
END_TEST

/* ---- through the dispatcher ---- */

static opd_tensor *run(const char *op, opd_tensor *x, bool has_dtype) {
  const opd_operator *o = opd_find_schema(op);
  ck_assert_ptr_nonnull(o);
  opd_stack s;
  opd_stack_init(&s);
  opd_ivalue dims;
  int64_t last = -1;
  ck_assert_int_eq(opd_iv_make_int_list(&dims, &last, 1), 0);
  ck_assert_int_eq(opd_stack_push(&s, opd_iv_tensor_borrow(x)), 0);
  ck_assert_int_eq(opd_stack_push(&s, dims), 0);
  ck_assert_int_eq(opd_stack_push(&s, opd_iv_bool(false)), 0);
  if (has_dtype) ck_assert_int_eq(opd_stack_push(&s, opd_iv_none()), 0);
  ck_assert_msg(opd_call_boxed(o, &s) == 0, "%s: %s", op, opd_last_error());
  ck_assert_int_eq(s.size, 1);
  opd_tensor *r = s.items[0].u.t;
  s.size = 0;
  opd_stack_destroy(&s);
  return r;
}

/* amax, sum and mean over the last dim of x against naive loops over at() */
static void check_last_dim(opd_tensor *x) {
  int64_t cols = opd_tensor_sizes(x)[x->ndim - 1], rows = cols ? x->numel / cols : 0;
  opd_tensor *mx = cols ? run("aten::amax", x, false) : NULL;
  opd_tensor *sm = run("aten::sum.dim_IntList", x, true), *mn = run("aten::mean.dim", x, true);
  double u = opd_tensor_dtype(x) == OPD_FLOAT32 ? 0x1p-24 : 0x1p-53;
  for (int64_t r = 0; r < rows; r++) {
    double m = -INFINITY, s = 0, a = 0;
    bool nan = false;
    for (int64_t c = 0; c < cols; c++) {
      double v = at(x, r * cols + c);
      nan |= isnan(v);
      m = v > m ? v : m;
      s += v;
      a += fabs(v);
    }
    double bound = 2 * (cols + 2) * u * a + 4 * u * fabs(s);
    if (nan) {
      ck_assert(isnan(at(mx, r)) && isnan(at(sm, r)));
    } else if (!isfinite(s)) { /* inf and -inf: NaN; -inf alone: -inf */
      ck_assert(isnan(s) ? isnan(at(sm, r)) : at(sm, r) == s);
      ck_assert(at(mx, r) == m);
    } else {
      if (mx)
        ck_assert_msg(at(mx, r) == m, "row %lld: %g, expected %g", (long long)r, at(mx, r), m);
      ck_assert_msg(fabs(at(sm, r) - s) <= bound, "row %lld", (long long)r);
      ck_assert(fabs(at(mn, r) - s / (double)cols) <= bound / (double)cols + 4 * u * fabs(s));
    }
  }
  if (!cols) /* an empty row: sum 0, mean NaN */
    for (int64_t r = 0; r < sm->numel; r++) ck_assert(at(sm, r) == 0 && isnan(at(mn, r)));
  if (mx) opd_tensor_release(mx);
  opd_tensor_release(sm);
  opd_tensor_release(mn);
}

START_TEST(test_last_dim_reductions) {
  ck_assert_int_eq(opd_kernels_register(), 0);
  const opd_dtype dts[] = {OPD_FLOAT32, OPD_FLOAT64};
  const int64_t cols[] = {0, 1, 3, 17, 64, 65, 130, 4097};
  for (int d = 0; d < 2; d++)
    for (size_t c = 0; c < sizeof cols / sizeof *cols; c++) {
      int64_t shape[] = {5, cols[c]};
      opd_tensor *x = mk(dts[d], 2, shape, NULL);
      for (int64_t i = 0; i < x->numel; i++)
        opd_test_write(dts[d], (char *)opd_tensor_data(x) + i * (int64_t)opd_dtype_size(dts[d]),
                       sin((double)i * 0.37) * 3 + (i % 7 == 0 ? 1e3 : 0));
      if (cols[c] > 2) { /* row 1 holds a NaN, row 2 inf and -inf, row 3 only -inf */
        opd_test_write(dts[d],
                       (char *)opd_tensor_data(x) +
                           (cols[c] + cols[c] / 2) * (int64_t)opd_dtype_size(dts[d]),
                       NAN);
        opd_test_write(dts[d],
                       (char *)opd_tensor_data(x) +
                           (2 * cols[c] + 1) * (int64_t)opd_dtype_size(dts[d]),
                       INFINITY);
        opd_test_write(dts[d],
                       (char *)opd_tensor_data(x) + (2 * cols[c]) * (int64_t)opd_dtype_size(dts[d]),
                       -INFINITY);
        for (int64_t i = 0; i < cols[c]; i++)
          opd_test_write(dts[d],
                         (char *)opd_tensor_data(x) +
                             (3 * cols[c] + i) * (int64_t)opd_dtype_size(dts[d]),
                         -INFINITY);
      }
      check_last_dim(x);
      /* the same rows through a transposed view: the last dim strided */
      int64_t tshape[] = {cols[c], 5};
      opd_tensor *y = mk(dts[d], 2, tshape, NULL);
      for (int64_t i = 0; i < x->numel; i++)
        opd_test_write(dts[d],
                       (char *)opd_tensor_data(y) +
                           (i % cols[c] * 5 + i / cols[c]) * (int64_t)opd_dtype_size(dts[d]),
                       at(x, i));
      int64_t strides[] = {1, 5};
      opd_tensor *yt = view(y, 2, shape, strides, 0);
      check_last_dim(yt);
      opd_tensor_release(yt);
      opd_tensor_release(y);
      opd_tensor_release(x);
    }
}
END_TEST

Suite *opd_test_reduce_span_suite(void) {
  Suite *s = suite_create("reduce_span");
  TCase *tc = tcase_create("reduce_span");
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, test_sets_match_baseline);
  tcase_add_test(tc, test_baseline_against_serial);
  tcase_add_test(tc, test_max_nan_and_inf);
  tcase_add_test(tc, test_last_dim_reductions);
  suite_add_tcase(s, tc);
  return s;
}

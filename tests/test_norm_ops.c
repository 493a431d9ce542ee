/* test_norm_ops.c: what the conformance fixture (tests/fixtures/ops_norm.json) cannot check
 * of the normalization family: native_batch_norm's in-place update of its running statistics,
 * its float32 path against its double path,
 * and native_dropout's random masks, checked statistically (PyTorch's draws differ from opd's:
 * [Note: Dropout's random numbers] in kernels/cpu/norm_dropout.c). */
#include <check.h>
#include <math.h>

#include "opd/dispatcher.h"
#include "opd/kernels.h"
#include "opd/tensor.h"
#include "tensor_helpers.h"

Suite *opd_test_norm_ops_suite(void);

static void setup(void) {
  ck_assert_int_eq(opd_kernels_register(), 0);
}

/* Calls `name` boxed with the n arguments; its nres Tensor results into res. */
static void call_results(const char *name, opd_ivalue *args, int n, opd_tensor **res, int nres) {
  const opd_operator *op = opd_find_schema(name);
  ck_assert_ptr_nonnull(op);
  opd_stack st;
  opd_stack_init(&st);
  for (int i = 0; i < n; i++) ck_assert_int_eq(opd_stack_push(&st, args[i]), 0);
  ck_assert_msg(opd_call_boxed(op, &st) == 0, "%s: %s", name, opd_last_error());
  ck_assert_uint_eq(st.size, (unsigned)nres);
  for (int i = 0; i < nres; i++) {
    ck_assert_uint_eq(st.items[i].tag, OPD_IV_TENSOR);
    res[i] = st.items[i].u.t;
    opd_tensor_retain(res[i]);
  }
  opd_stack_destroy(&st);
}

START_TEST(test_batch_norm_running_stats) {
  /* input (2, 3, 2): channel c holds 4 values; running_mean and running_var (a strided view:
   * every other element of 6) are updated in place with momentum 0.25 */
  const double x[12] = {1, 2, -3, 0.5, 4, 4, 7, -1, 2, 2.5, 0, 9};
  opd_tensor *input = mk(OPD_FLOAT32, SHAPE(2, 3, 2), x);
  opd_tensor *rm = mk(OPD_FLOAT32, SHAPE(3), VALS(0.5, -1, 2));
  opd_tensor *rv_base = mk(OPD_FLOAT32, SHAPE(6), VALS(1, 9, 2, 9, 3, 9));
  opd_tensor *rv = view(rv_base, SHAPE(3), (int64_t[]){2}, 0);
  const double rm0[3] = {0.5, -1, 2}, rv0[3] = {1, 2, 3}, momentum = 0.25;
  opd_tensor *res[3];
  call_results("aten::native_batch_norm",
               (opd_ivalue[]){T(input), NONE, NONE, T(rm), T(rv), B(true), D(momentum), D(1e-5)}, 8,
               res, 3);
  for (int c = 0; c < 3; c++) {
    /* the channel's mean and unbiased variance, computed here from the input */
    double v[4] = {x[c * 2], x[c * 2 + 1], x[6 + c * 2], x[6 + c * 2 + 1]}, mean = 0, sq = 0;
    for (int k = 0; k < 4; k++) mean += v[k] / 4;
    for (int k = 0; k < 4; k++) sq += (v[k] - mean) * (v[k] - mean);
    ck_assert_double_eq_tol(at(res[1], c), mean, 1e-6);
    ck_assert_double_eq_tol(at(res[2], c), 1 / sqrt(sq / 4 + 1e-5), 1e-5);
    ck_assert_double_eq_tol(at(rm, c), (1 - momentum) * rm0[c] + momentum * mean, 1e-6);
    ck_assert_double_eq_tol(at(rv, c), (1 - momentum) * rv0[c] + momentum * sq / 3, 1e-5);
    ck_assert_double_eq(at(rv_base, 2 * c + 1), 9); /* the view's gaps untouched */
  }
  /* evaluation leaves them as they are */
  double before[3] = {at(rm, 0), at(rm, 1), at(rm, 2)};
  opd_tensor *eval[3];
  call_results("aten::native_batch_norm",
               (opd_ivalue[]){T(input), NONE, NONE, T(rm), T(rv), B(false), D(momentum), D(1e-5)},
               8, eval, 3);
  for (int c = 0; c < 3; c++) ck_assert_double_eq(at(rm, c), before[c]);
  ck_assert_int_eq(eval[1]->numel, 0);
  for (int k = 0; k < 3; k++) {
    opd_tensor_release(res[k]);
    opd_tensor_release(eval[k]);
  }
  opd_tensor_release(input);
  opd_tensor_release(rm);
  opd_tensor_release(rv);
  opd_tensor_release(rv_base);
}
END_TEST

/* The in-place float32 path ([Note: Batch norm on contiguous float] in
 * kernels/cpu/norm_batch_norm.c), contiguous and channels-last, against the buffered double
 * path on the same values in float64, with planes long enough for the eight-way sums (S = 21:
 * two blocks of eight and a tail): native_batch_norm in training and evaluation, and its
 * backward. */
START_TEST(test_batch_norm_float_path_matches_double) {
  enum { N = 2, C = 3, S = 21, E = N * C * S };
  double x[E], g[E], x_last[E], g_last[E]; /* x_last: x's values as (N, S, C) */
  for (int i = 0; i < E; i++) {
    x[i] = 3 * sin(0.7 * i) + 10;
    g[i] = cos(1.3 * i);
  }
  for (int i = 0; i < N; i++)
    for (int c = 0; c < C; c++)
      for (int j = 0; j < S; j++) {
        x_last[(i * S + j) * C + c] = x[(i * C + c) * S + j];
        g_last[(i * S + j) * C + c] = g[(i * C + c) * S + j];
      }
  /* float32, float64 (the buffered path), float32 channels-last */
  const opd_dtype dts[3] = {OPD_FLOAT32, OPD_FLOAT64, OPD_FLOAT32};
  const int64_t last_strides[3] = {S * C, 1, C};
  opd_tensor *fwd[3][2][3], *bwd[3][2][3];
  for (int d = 0; d < 3; d++)
    for (int tr = 0; tr < 2; tr++) {
      opd_tensor *in, *go, *xb = NULL, *gb = NULL; /* xb, gb: the channels-last storage */
      if (d < 2) {
        in = mk(dts[d], SHAPE(N, C, S), x);
        go = mk(dts[d], SHAPE(N, C, S), g);
      } else {
        xb = mk(dts[d], SHAPE(N, S, C), x_last);
        gb = mk(dts[d], SHAPE(N, S, C), g_last);
        in = view(xb, SHAPE(N, C, S), last_strides, 0);
        go = view(gb, SHAPE(N, C, S), last_strides, 0);
      }
      opd_tensor *w = mk(dts[d], SHAPE(C), VALS(0.5, -1.5, 2));
      opd_tensor *b = mk(dts[d], SHAPE(C), VALS(0.1, 0, -0.3));
      opd_tensor *rm = mk(dts[d], SHAPE(C), VALS(9, 10, 11));
      opd_tensor *rv = mk(dts[d], SHAPE(C), VALS(4, 9, 2));
      call_results("aten::native_batch_norm",
                   (opd_ivalue[]){T(in), T(w), T(b), T(rm), T(rv), B(tr), D(0.1), D(1e-5)}, 8,
                   fwd[d][tr], 3);
      opd_ivalue mask;
      ck_assert_int_eq(opd_iv_make_bool_list(&mask, (const bool[]){true, true, true}, 3), 0);
      call_results("aten::native_batch_norm_backward",
                   (opd_ivalue[]){T(go), T(in), T(w), T(rm), T(rv), tr ? T(fwd[d][tr][1]) : NONE,
                                  tr ? T(fwd[d][tr][2]) : NONE, B(tr), D(1e-5), mask},
                   10, bwd[d][tr], 3);
      opd_tensor *made[8] = {in, go, w, b, rm, rv, xb, gb};
      for (int k = 0; k < 8; k++)
        if (made[k]) opd_tensor_release(made[k]);
    }
  for (int tr = 0; tr < 2; tr++)
    for (int k = 0; k < 3; k++) {
      opd_tensor *pairs[4][2] = {{fwd[0][tr][k], fwd[1][tr][k]},
                                 {bwd[0][tr][k], bwd[1][tr][k]},
                                 {fwd[2][tr][k], fwd[1][tr][k]},
                                 {bwd[2][tr][k], bwd[1][tr][k]}};
      for (int p = 0; p < 4; p++) {
        ck_assert_int_eq(pairs[p][0]->numel, pairs[p][1]->numel);
        for (int64_t i = 0; i < pairs[p][0]->numel; i++) {
          double want = at(pairs[p][1], i);
          ck_assert_double_eq_tol(at(pairs[p][0], i), want, 2e-5 * (1 + fabs(want)));
        }
      }
    }
  for (int d = 0; d < 3; d++)
    for (int tr = 0; tr < 2; tr++)
      for (int k = 0; k < 3; k++) {
        opd_tensor_release(fwd[d][tr][k]);
        opd_tensor_release(bwd[d][tr][k]);
      }
}
END_TEST

/* The fraction of kept elements of a dropout of n ones with probability p, each kept one
 * checked to be scaled by 1 / (1 - p) (1 when not training) and each dropped one to be 0. */
static double dropout_keep_fraction(opd_dtype dt, int64_t n, double p, opd_ivalue train,
                                    uint64_t *signature) {
  opd_tensor *ones = NULL;
  ck_assert_int_eq(opd_tensor_empty((int64_t[]){n}, 1, dt, (opd_device){OPD_DEVICE_CPU, -1}, &ones),
                   0);
  for (int64_t i = 0; i < n; i++)
    opd_test_write(dt, (char *)opd_tensor_data(ones) + i * (int64_t)opd_dtype_size(dt), 1);
  opd_tensor *res[2];
  call_results("aten::native_dropout", (opd_ivalue[]){T(ones), D(p), train}, 3, res, 2);
  ck_assert_int_eq(opd_tensor_dtype(res[0]), dt);
  ck_assert_int_eq(opd_tensor_dtype(res[1]), OPD_BOOL);
  int64_t kept = 0, wrong = 0;
  *signature = 0;
  for (int64_t i = 0; i < n; i++) { /* (Check's assertions are too slow for a loop this long) */
    bool keep = at(res[1], i) != 0;
    kept += keep;
    if (i < 64 && keep) *signature |= 1ull << i;
    double scale = train.tag == OPD_IV_BOOL && !train.u.b ? 1 : 1 / (1 - p);
    wrong += fabs(at(res[0], i) - (keep ? scale : 0)) > 1e-6;
  }
  ck_assert_int_eq(wrong, 0);
  opd_tensor_release(res[0]);
  opd_tensor_release(res[1]);
  opd_tensor_release(ones);
  return (double)kept / (double)n;
}

START_TEST(test_dropout_statistics) {
  /* 200,000 draws: the kept fraction's standard deviation is below 0.0011, the bound is 5 of
   * them */
  const int64_t n = 200000;
  uint64_t sig1, sig2, sig3;
  double f = dropout_keep_fraction(OPD_FLOAT32, n, 0.3, B(true), &sig1);
  ck_assert_msg(fabs(f - 0.7) < 0.0055, "kept %g, want 0.7", f);
  f = dropout_keep_fraction(OPD_FLOAT64, n, 0.9, NONE, &sig2); /* train=None trains */
  ck_assert_msg(fabs(f - 0.1) < 0.0055, "kept %g, want 0.1", f);
  /* another call draws other numbers */
  f = dropout_keep_fraction(OPD_FLOAT32, n, 0.3, B(true), &sig3);
  ck_assert_msg(fabs(f - 0.7) < 0.0055, "kept %g, want 0.7", f);
  ck_assert_uint_ne(sig1, sig3);
  /* train=False: the identity, every element kept */
  ck_assert_double_eq(dropout_keep_fraction(OPD_FLOAT32, 1000, 0.5, B(false), &sig1) * 2, 2);
}
END_TEST

START_TEST(test_dropout_errors) {
  opd_tensor *x = mk(OPD_FLOAT32, SHAPE(3), VALS(1, 2, 3)), *i = mk(OPD_INT64, SHAPE(3), NULL);
  const opd_operator *op = opd_find_schema("aten::native_dropout");
  opd_stack st;
  opd_stack_init(&st);
  ck_assert_int_eq(opd_stack_push(&st, T(x)), 0);
  ck_assert_int_eq(opd_stack_push(&st, D(-0.5)), 0);
  ck_assert_int_eq(opd_stack_push(&st, B(true)), 0);
  ck_assert_int_eq(opd_call_boxed(op, &st), OPD_EINVAL);
  ck_assert_str_eq(opd_last_error(), "bernoulli_ expects p to be in [0, 1], but got p=1.5");
  ck_assert_uint_eq(st.size, 0);
  ck_assert_int_eq(opd_stack_push(&st, T(i)), 0);
  ck_assert_int_eq(opd_stack_push(&st, D(0.5)), 0);
  ck_assert_int_eq(opd_stack_push(&st, B(true)), 0);
  ck_assert_int_eq(opd_call_boxed(op, &st), OPD_EINVAL);
  ck_assert_uint_eq(st.size, 0);
  opd_stack_destroy(&st);
  opd_tensor_release(x);
  opd_tensor_release(i);
}
END_TEST

Suite *opd_test_norm_ops_suite(void) {
  Suite *s = suite_create("norm_ops");
  TCase *tc = tcase_create("norm_ops");
  tcase_add_checked_fixture(tc, setup, NULL);
  tcase_add_test(tc, test_batch_norm_running_stats);
  tcase_add_test(tc, test_batch_norm_float_path_matches_double);
  tcase_add_test(tc, test_dropout_statistics);
  tcase_add_test(tc, test_dropout_errors);
  suite_add_tcase(s, tc);
  return s;
}

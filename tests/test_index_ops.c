/* test_index_ops.c: the indexing family's kernels against hostile arguments that PyTorch 1.13
 * cannot record (tests/fixtures/ops_index.json holds everything it can): extreme indices,
 * sorter indices past the sequence (which PyTorch 1.13 reads past), and Meta tensors whose
 * extents make sizes, strides or view counts overflow. Each must fail with a clear error,
 * never read or write outside a buffer (the suite runs under ASan in CI). */
#include <check.h>
#include <stdint.h>
#include <string.h>

#include "boxed_call.h"
#include "opd/dispatcher.h"
#include "opd/error.h"
#include "opd/kernels.h"
#include "opd/tensor.h"
#include "tensor_helpers.h"

Suite *opd_test_index_ops_suite(void);

static void setup(void) {
  ck_assert_int_eq(opd_kernels_register(), 0);
}

/* A 1-d int64 CPU tensor of the given values (exact: not through double). */
static opd_tensor *ints(int n, const int64_t *v) {
  opd_tensor *t = mk(OPD_INT64, 1, (int64_t[]){n}, NULL);
  memcpy(opd_tensor_data(t), v, (size_t)n * sizeof *v);
  return t;
}

static opd_ivalue int_list(int n, const int64_t *v) {
  opd_ivalue l;
  ck_assert_int_eq(opd_iv_make_int_list(&l, v, (size_t)n), 0);
  return l;
}

static const int64_t extremes[] = {INT64_MIN, INT64_MIN + 1, -4, 3, INT64_MAX};

START_TEST(test_extreme_indices_fail_cleanly) {
  opd_tensor *x = mk(OPD_FLOAT32, SHAPE(3), VALS(1, 2, 3)), *r;
  for (size_t i = 0; i < sizeof extremes / sizeof *extremes; i++) {
    opd_tensor *idx = ints(1, &extremes[i]);
    ck_assert_int_eq(
        opd_test_call("aten::gather", (opd_ivalue[]){T(x), I(0), T(idx), B(false)}, 4, &r),
        OPD_EINVAL);
    ck_assert_int_eq(opd_test_call("aten::take", (opd_ivalue[]){T(x), T(idx)}, 2, &r), OPD_EINDEX);
    ck_assert_int_eq(opd_test_call("aten::index_select", (opd_ivalue[]){T(x), I(0), T(idx)}, 3, &r),
                     OPD_EINDEX);
    ck_assert_int_eq(opd_test_call("aten::index_fill.int_Scalar",
                                   (opd_ivalue[]){T(x), I(0), T(idx), opd_iv_double(1)}, 4, &r),
                     OPD_EINDEX);
    opd_ivalue list;
    ck_assert_int_eq(opd_iv_make_tensor_list(&list, (opd_tensor *[]){idx}, 1, true), 0);
    ck_assert_int_eq(opd_test_call("aten::index.Tensor", (opd_ivalue[]){T(x), list}, 2, &r),
                     OPD_EINDEX);
    opd_tensor_release(idx);
  }
  opd_tensor_release(x);
}
END_TEST

START_TEST(test_searchsorted_sorter_out_of_range) {
  opd_tensor *seq = mk(OPD_FLOAT32, SHAPE(4), VALS(7, 1, 5, 3));
  opd_tensor *v = mk(OPD_FLOAT32, SHAPE(2), VALS(4, 8)), *r;
  for (size_t i = 0; i < sizeof extremes / sizeof *extremes; i++) {
    int64_t s[4] = {1, 3, 2, extremes[i] == 3 ? 4 : extremes[i]};
    opd_tensor *sorter = ints(4, s);
    ck_assert_int_eq(
        opd_test_call("aten::searchsorted.Tensor",
                      (opd_ivalue[]){T(seq), T(v), B(false), B(false), NONE, T(sorter)}, 6, &r),
        OPD_EINDEX);
    opd_tensor_release(sorter);
  }
  /* the valid sorter gives PyTorch's answer: torch.searchsorted(seq, v, sorter=[1, 3, 2, 0]) */
  opd_tensor *sorter = ints(4, (int64_t[]){1, 3, 2, 0});
  ck_assert_int_eq(opd_test_call("aten::searchsorted.Tensor",
                                 (opd_ivalue[]){T(seq), T(v), B(false), B(false), NONE, T(sorter)},
                                 6, &r),
                   0);
  ck_assert_int_eq((int64_t)at(r, 0), 2);
  ck_assert_int_eq((int64_t)at(r, 1), 4);
  opd_tensor_release(r);
  opd_tensor_release(sorter);
  opd_tensor_release(seq);
  opd_tensor_release(v);
}
END_TEST

START_TEST(test_meta_extents_overflow) {
  int64_t big = (int64_t)1 << 40;
  opd_tensor *m2 = mk_meta(OPD_FLOAT32, SHAPE(2, big)), *r;
  /* repeat's sizes overflow */
  ck_assert_int_eq(
      opd_test_call("aten::repeat", (opd_ivalue[]){T(m2), int_list(2, (int64_t[]){1, big})}, 2, &r),
      OPD_EINVAL);
  /* a chunk or a split into more views than a call may return */
  opd_tensor *e = mk_meta(OPD_FLOAT32, SHAPE(0));
  ck_assert_int_eq(opd_test_call("aten::chunk", (opd_ivalue[]){T(e), I(INT64_MAX), I(0)}, 3, &r),
                   OPD_EINVAL);
  ck_assert_int_eq(opd_test_call("aten::tensor_split.sections",
                                 (opd_ivalue[]){T(m2), I(INT64_MAX), I(1)}, 3, &r),
                   OPD_EINVAL);
  /* split sizes whose sum overflows */
  ck_assert_int_eq(
      opd_test_call("aten::split_with_sizes",
                    (opd_ivalue[]){T(m2), int_list(2, (int64_t[]){INT64_MAX, 1}), I(0)}, 3, &r),
      OPD_EINVAL);
  /* a diagonal offset at the ends of int64 is an empty diagonal */
  ck_assert_int_eq(
      opd_test_call("aten::diagonal", (opd_ivalue[]){T(m2), I(INT64_MIN), I(0), I(1)}, 4, &r), 0);
  ck_assert_int_eq(opd_tensor_sizes(r)[0], 0);
  opd_tensor_release(r);
  ck_assert_int_eq(
      opd_test_call("aten::diagonal", (opd_ivalue[]){T(m2), I(INT64_MAX), I(0), I(1)}, 4, &r), 0);
  ck_assert_int_eq(opd_tensor_sizes(r)[0], 0);
  opd_tensor_release(r);
  opd_tensor_release(e);
  opd_tensor_release(m2);
}
END_TEST

Suite *opd_test_index_ops_suite(void) {
  Suite *s = suite_create("index_ops");
  TCase *tc = tcase_create("hostile");
  tcase_add_checked_fixture(tc, setup, NULL);
  tcase_add_test(tc, test_extreme_indices_fail_cleanly);
  tcase_add_test(tc, test_searchsorted_sorter_out_of_range);
  tcase_add_test(tc, test_meta_extents_overflow);
  suite_add_tcase(s, tc);
  return s;
}

/* test_nn_ops.c: the operators for torch.nn's building blocks (silu,
 * eq.Scalar, split.Tensor, detach) through the dispatcher, on the CPU and Meta. The expected
 * values and errors were computed with PyTorch 1.13 (Debian's python3-torch), e.g.
 *   torch.nn.functional.silu(torch.tensor([-3., -1., -.5, 0., .5, 1., 2., 10.]))
 *   torch.eq(torch.tensor([1, 2, 3], dtype=torch.int32), 2.5)
 *   [(p.shape, p.stride(), p.storage_offset()) for p in torch.zeros(2, 6).split(2, 1)]
 *   torch.arange(2.5), torch.arange(True, 3), torch.arange(3, dtype=torch.bool)
 * and copied here (9 significant digits for float32, 17 for float64). */
#include <check.h>
#include <math.h>
#include <string.h>

#include "boxed_call.h"
#include "opd/dispatcher.h"
#include "opd/error.h"
#include "opd/kernels.h"
#include "opd/tensor.h"
#include "tensor_helpers.h"

Suite *opd_test_nn_ops_suite(void);

static void setup(void) {
  ck_assert_int_eq(opd_kernels_register(), 0);
}

static void expect_values(opd_tensor *t, opd_dtype dt, const double *want, int n, double tol) {
  ck_assert_int_eq(opd_tensor_dtype(t), dt);
  ck_assert_int_eq(t->numel, n);
  for (int i = 0; i < n; i++)
    ck_assert_msg(fabs(at(t, i) - want[i]) <= tol * (1 + fabs(want[i])), "[%d]: %.17g, want %.17g",
                  i, at(t, i), want[i]);
}

static const double silu_in[8] = {-3, -1, -0.5, 0, 0.5, 1, 2, 10};

START_TEST(test_silu_float32_float64) {
  static const double f32[8] = {-0.142277613, -0.268941432, -0.188770339, 0.0,
                                0.311229676,  0.731058598,  1.76159406,   9.99954605};
  static const double f64[8] = {
      -0.14227761953270035, -0.2689414213699951, -0.1887703343990727, 0.0,
      0.3112296656009273,   0.7310585786300049,  1.7615941559557646,  9.999546021312975};
  opd_tensor *x = mk(OPD_FLOAT32, SHAPE(2, 4), silu_in), *r;
  ck_assert_int_eq(opd_test_call("aten::silu", (opd_ivalue[]){T(x)}, 1, &r), 0);
  expect_values(r, OPD_FLOAT32, f32, 8, 1e-7);
  opd_tensor_release(r);
  opd_tensor *xd = mk(OPD_FLOAT64, SHAPE(8), silu_in);
  ck_assert_int_eq(opd_test_call("aten::silu", (opd_ivalue[]){T(xd)}, 1, &r), 0);
  expect_values(r, OPD_FLOAT64, f64, 8, 1e-15);
  opd_tensor_release(r);
  /* a strided view: the transposed 2x4 */
  opd_tensor *xt = view(x, SHAPE(4, 2), (int64_t[]){1, 4}, 0);
  ck_assert_int_eq(opd_test_call("aten::silu", (opd_ivalue[]){T(xt)}, 1, &r), 0);
  static const double ft[8] = {f32[0], f32[4], f32[1], f32[5], f32[2], f32[6], f32[3], f32[7]};
  expect_values(r, OPD_FLOAT32, ft, 8, 1e-7);
  opd_tensor_release(r);
  opd_tensor_release(xt);
  opd_tensor_release(x);
  opd_tensor_release(xd);
}
END_TEST

START_TEST(test_silu_dtypes) {
  /* bfloat16 computes in float32 and rounds once, as opd's other float ops do:
   * silu(torch.tensor([1.5, -2.25])).to(torch.bfloat16). (PyTorch 1.13's CPU kernel rounds
   * each step to bfloat16 and gets [1.234375, -0.2138671875].) */
  opd_tensor *x = mk(OPD_BFLOAT16, SHAPE(2), VALS(1.5, -2.25)), *r;
  ck_assert_int_eq(opd_test_call("aten::silu", (opd_ivalue[]){T(x)}, 1, &r), 0);
  expect_values(r, OPD_BFLOAT16, VALS(1.2265625, -0.21484375), 2, 0);
  opd_tensor_release(r);
  opd_tensor_release(x);
  /* integers and bool: "silu_cpu" not implemented for 'Long' / 'Bool', as in PyTorch */
  opd_tensor *i = mk(OPD_INT64, SHAPE(3), VALS(1, 2, 3));
  ck_assert_int_eq(opd_test_call("aten::silu", (opd_ivalue[]){T(i)}, 1, &r), OPD_EINVAL);
  ck_assert_str_eq(opd_last_error(), "\"silu_cpu\" not implemented for 'Long'");
  opd_tensor *b = mk(OPD_BOOL, SHAPE(2), VALS(1, 0));
  ck_assert_int_eq(opd_test_call("aten::silu", (opd_ivalue[]){T(b)}, 1, &r), OPD_EINVAL);
  ck_assert_str_eq(opd_last_error(), "\"silu_cpu\" not implemented for 'Bool'");
  /* Meta: shape and dtype only */
  opd_tensor *m = mk_meta(OPD_FLOAT32, SHAPE(3, 5));
  ck_assert_int_eq(opd_test_call("aten::silu", (opd_ivalue[]){T(m)}, 1, &r), 0);
  ck_assert_int_eq(opd_tensor_device(r).type, OPD_DEVICE_META);
  ck_assert_int_eq(r->numel, 15);
  opd_tensor_release(r);
  opd_tensor_release(m);
  opd_tensor_release(i);
  opd_tensor_release(b);
}
END_TEST

START_TEST(test_eq_scalar) {
  opd_tensor *i = mk(OPD_INT32, SHAPE(3), VALS(1, 2, 3)), *r;
  ck_assert_int_eq(opd_test_call("aten::eq.Scalar", (opd_ivalue[]){T(i), I(2)}, 2, &r), 0);
  expect_values(r, OPD_BOOL, VALS(0, 1, 0), 3, 0);
  opd_tensor_release(r);
  /* an int tensor against 2.5: compared in float32, nothing equal; 2.0 equals 2 */
  ck_assert_int_eq(opd_test_call("aten::eq.Scalar", (opd_ivalue[]){T(i), D(2.5)}, 2, &r), 0);
  expect_values(r, OPD_BOOL, VALS(0, 0, 0), 3, 0);
  opd_tensor_release(r);
  ck_assert_int_eq(opd_test_call("aten::eq.Scalar", (opd_ivalue[]){T(i), D(2.0)}, 2, &r), 0);
  expect_values(r, OPD_BOOL, VALS(0, 1, 0), 3, 0);
  opd_tensor_release(r);
  /* 0.1 as a wrapped number: converted to float32 before comparing with float32 data */
  opd_tensor *f = mk(OPD_FLOAT32, SHAPE(2), VALS(0.1, 0.5));
  ck_assert_int_eq(opd_test_call("aten::eq.Scalar", (opd_ivalue[]){T(f), D(0.1)}, 2, &r), 0);
  expect_values(r, OPD_BOOL, VALS(1, 0), 2, 0);
  opd_tensor_release(r);
  opd_tensor *b = mk(OPD_BOOL, SHAPE(2), VALS(1, 0));
  ck_assert_int_eq(opd_test_call("aten::eq.Scalar", (opd_ivalue[]){T(b), B(true)}, 2, &r), 0);
  expect_values(r, OPD_BOOL, VALS(1, 0), 2, 0);
  opd_tensor_release(r);
  /* the attention mask's use: tril(ones) == 0, on the strided slice tril(ones(3, 3))[:2, 1:] */
  opd_tensor *m = mk(OPD_FLOAT32, SHAPE(3, 3), VALS(1, 0, 0, 1, 1, 0, 1, 1, 1));
  opd_tensor *s = view(m, SHAPE(2, 2), (int64_t[]){3, 1}, 1);
  ck_assert_int_eq(opd_test_call("aten::eq.Scalar", (opd_ivalue[]){T(s), I(0)}, 2, &r), 0);
  expect_values(r, OPD_BOOL, VALS(1, 1, 0, 1), 4, 0);
  opd_tensor_release(r);
  opd_tensor *mm = mk_meta(OPD_INT64, SHAPE(4, 2));
  ck_assert_int_eq(opd_test_call("aten::eq.Scalar", (opd_ivalue[]){T(mm), D(1.5)}, 2, &r), 0);
  ck_assert_int_eq(opd_tensor_dtype(r), OPD_BOOL);
  ck_assert_int_eq(opd_tensor_device(r).type, OPD_DEVICE_META);
  opd_tensor_release(r);
  opd_tensor *objs[] = {i, f, b, s, m, mm};
  for (size_t k = 0; k < sizeof objs / sizeof objs[0]; k++) opd_tensor_release(objs[k]);
}
END_TEST

/* Calls split.Tensor; its pieces in out (at most max), their count returned, or the error. */
static int split(opd_tensor *self, int64_t size, int64_t dim, opd_tensor **out, int max) {
  const opd_operator *op = opd_find_schema("aten::split.Tensor");
  ck_assert_ptr_nonnull(op);
  opd_stack st;
  opd_stack_init(&st);
  ck_assert_int_eq(opd_stack_push(&st, T(self)), 0);
  ck_assert_int_eq(opd_stack_push(&st, I(size)), 0);
  ck_assert_int_eq(opd_stack_push(&st, I(dim)), 0);
  int rc = opd_call_boxed(op, &st);
  if (rc == 0) {
    ck_assert_uint_eq(st.size, 1);
    ck_assert_int_eq(st.items[0].tag, OPD_IV_TENSOR_LIST);
    rc = (int)st.items[0].len;
    ck_assert_int_le(rc, max);
    for (int k = 0; k < rc; k++) {
      out[k] = st.items[0].u.tensors[k];
      opd_tensor_retain(out[k]);
    }
  } else {
    ck_assert_uint_eq(st.size, 0);
  }
  opd_stack_destroy(&st);
  return rc;
}

static void expect_geometry(opd_tensor *t, int nd, const int64_t *sizes, const int64_t *strides,
                            int64_t offset) {
  ck_assert_int_eq(t->ndim, nd);
  for (int d = 0; d < nd; d++) {
    ck_assert_int_eq(opd_tensor_sizes(t)[d], sizes[d]);
    ck_assert_int_eq(opd_tensor_strides(t)[d], strides[d]);
  }
  ck_assert_int_eq(t->storage_offset, offset);
}

START_TEST(test_split_views) {
  /* torch.arange(10.).split(4): sizes 4, 4, 2 at offsets 0, 4, 8, views of one storage */
  double v[10];
  for (int k = 0; k < 10; k++) v[k] = k;
  opd_tensor *x = mk(OPD_FLOAT32, SHAPE(10), v), *p[8];
  ck_assert_int_eq(split(x, 4, 0, p, 8), 3);
  expect_geometry(p[0], SHAPE(4), (int64_t[]){1}, 0);
  expect_geometry(p[1], SHAPE(4), (int64_t[]){1}, 4);
  expect_geometry(p[2], SHAPE(2), (int64_t[]){1}, 8);
  ck_assert_ptr_eq(p[2]->storage, x->storage);
  ck_assert_double_eq(at(p[2], 1), 9);
  for (int k = 0; k < 3; k++) opd_tensor_release(p[k]);
  /* torch.zeros(2, 6).split(2, 1): (2, 2) views, strides (6, 1), offsets 0, 2, 4 */
  opd_tensor *y = mk(OPD_FLOAT32, SHAPE(2, 6), NULL);
  ck_assert_int_eq(split(y, 2, 1, p, 8), 3);
  for (int k = 0; k < 3; k++) {
    expect_geometry(p[k], SHAPE(2, 2), (int64_t[]){6, 1}, 2 * k);
    opd_tensor_release(p[k]);
  }
  /* a split size past the dimension: one piece, the whole tensor (dim -1 wraps) */
  opd_tensor *z = mk_meta(OPD_FLOAT32, SHAPE(3, 5));
  ck_assert_int_eq(split(z, 7, -1, p, 8), 1);
  expect_geometry(p[0], SHAPE(3, 5), (int64_t[]){5, 1}, 0);
  ck_assert_int_eq(opd_tensor_device(p[0]).type, OPD_DEVICE_META);
  opd_tensor_release(p[0]);
  /* size 0 of an empty dimension: one empty piece */
  opd_tensor *e = mk(OPD_FLOAT32, SHAPE(2, 0), NULL);
  ck_assert_int_eq(split(e, 0, 1, p, 8), 1);
  ck_assert_int_eq(p[0]->numel, 0);
  opd_tensor_release(p[0]);
  opd_tensor_release(x);
  opd_tensor_release(y);
  opd_tensor_release(z);
  opd_tensor_release(e);
}
END_TEST

START_TEST(test_split_errors) {
  opd_tensor *p[4];
  opd_tensor *s = mk(OPD_FLOAT32, SHAPE(), VALS(1)), *x = mk(OPD_FLOAT32, SHAPE(4), NULL);
  ck_assert_int_eq(split(s, 1, 0, p, 4), OPD_EINVAL);
  ck_assert_str_eq(opd_last_error(), "split expects at least a 1-dimensional tensor");
  ck_assert_int_eq(split(x, -1, 0, p, 4), OPD_EINVAL);
  ck_assert_str_eq(opd_last_error(),
                   "split expects split_size be non-negative, but got split_size=-1");
  ck_assert_int_eq(split(x, 0, 0, p, 4), OPD_EINVAL);
  ck_assert_str_eq(opd_last_error(),
                   "split_size can only be 0 if dimension size is 0, but got dimension size of 4");
  ck_assert_int_eq(split(x, 1, 2, p, 4), OPD_EINDEX);
  ck_assert_str_eq(opd_last_error(),
                   "Dimension out of range (expected to be in range of [-1, 0], but got 2)");
  /* hostile sizes: a huge Meta dimension in pieces of one is refused, not made */
  opd_tensor *big = mk_meta(OPD_FLOAT32, SHAPE((int64_t)1 << 40));
  ck_assert_int_eq(split(big, 1, 0, p, 4), OPD_EINVAL);
  ck_assert_ptr_nonnull(strstr(opd_last_error(), "more than the 65536"));
  ck_assert_int_eq(split(big, INT64_MAX, 0, p, 4), 1);
  opd_tensor_release(p[0]);
  opd_tensor_release(big);
  opd_tensor_release(s);
  opd_tensor_release(x);
}
END_TEST

START_TEST(test_detach_is_an_alias) {
  opd_tensor *x = mk(OPD_FLOAT32, SHAPE(2, 3), VALS(1, 2, 3, 4, 5, 6));
  opd_tensor *t = view(x, SHAPE(3, 2), (int64_t[]){1, 3}, 0), *r;
  ck_assert_int_eq(opd_test_call("aten::detach", (opd_ivalue[]){T(t)}, 1, &r), 0);
  expect_geometry(r, SHAPE(3, 2), (int64_t[]){1, 3}, 0);
  ck_assert_ptr_eq(r->storage, x->storage);
  ck_assert_ptr_ne(r, t);
  ck_assert_double_eq(at(r, 1), 4);
  opd_tensor_release(r);
  opd_tensor *m = mk_meta(OPD_FLOAT64, SHAPE(4));
  ck_assert_int_eq(opd_test_call("aten::detach", (opd_ivalue[]){T(m)}, 1, &r), 0);
  ck_assert_int_eq(opd_tensor_device(r).type, OPD_DEVICE_META);
  opd_tensor_release(r);
  opd_tensor_release(m);
  opd_tensor_release(t);
  opd_tensor_release(x);
}
END_TEST

/* arange(end) and arange.start(start, end): the dtype from the numbers given (ints and bools
 * give int64, a float the default dtype), or the one asked for; PyTorch's errors. TinyGPT's
 * positions (torch.arange(0, T)) trace to arange.start. */
START_TEST(test_arange_overloads) {
  opd_tensor *r;
  ck_assert_int_eq(
      opd_test_call("aten::arange", (opd_ivalue[]){I(5), NONE, NONE, NONE, NONE}, 5, &r), 0);
  expect_values(r, OPD_INT64, (double[]){0, 1, 2, 3, 4}, 5, 0);
  opd_tensor_release(r);
  ck_assert_int_eq(
      opd_test_call("aten::arange", (opd_ivalue[]){D(2.5), NONE, NONE, NONE, NONE}, 5, &r), 0);
  expect_values(r, OPD_FLOAT32, (double[]){0, 1, 2}, 3, 0);
  opd_tensor_release(r);
  ck_assert_int_eq(opd_test_call("aten::arange.start",
                                 (opd_ivalue[]){I(1), I(4), NONE, NONE, NONE, NONE}, 6, &r),
                   0);
  expect_values(r, OPD_INT64, (double[]){1, 2, 3}, 3, 0);
  opd_tensor_release(r);
  ck_assert_int_eq(opd_test_call("aten::arange.start",
                                 (opd_ivalue[]){D(0.5), I(3), NONE, NONE, NONE, NONE}, 6, &r),
                   0);
  expect_values(r, OPD_FLOAT32, (double[]){0.5, 1.5, 2.5}, 3, 0);
  opd_tensor_release(r);
  ck_assert_int_eq(opd_test_call("aten::arange.start",
                                 (opd_ivalue[]){B(true), I(3), NONE, NONE, NONE, NONE}, 6, &r),
                   0);
  expect_values(r, OPD_INT64, (double[]){1, 2}, 2, 0);
  opd_tensor_release(r);
  ck_assert_int_eq(
      opd_test_call("aten::arange.start",
                    (opd_ivalue[]){I(1), I(4), opd_iv_dtype(OPD_FLOAT64), NONE, NONE, NONE}, 6, &r),
      0);
  expect_values(r, OPD_FLOAT64, (double[]){1, 2, 3}, 3, 0);
  opd_tensor_release(r);
  /* on the Meta device: the shape only */
  opd_ivalue meta = opd_iv_device((opd_device){OPD_DEVICE_META, -1});
  ck_assert_int_eq(
      opd_test_call("aten::arange", (opd_ivalue[]){I(7), NONE, NONE, meta, NONE}, 5, &r), 0);
  ck_assert_int_eq(opd_tensor_device(r).type, OPD_DEVICE_META);
  ck_assert_int_eq(r->numel, 7);
  ck_assert_int_eq(opd_tensor_dtype(r), OPD_INT64);
  opd_tensor_release(r);
  ck_assert_int_eq(opd_test_call("aten::arange",
                                 (opd_ivalue[]){I(3), opd_iv_dtype(OPD_BOOL), NONE, NONE, NONE}, 5,
                                 &r),
                   OPD_EINVAL);
  ck_assert_str_eq(opd_last_error(), "\"arange_cpu\" not implemented for 'Bool'");
  ck_assert_int_eq(
      opd_test_call("aten::arange", (opd_ivalue[]){I(-1), NONE, NONE, NONE, NONE}, 5, &r),
      OPD_EINVAL);
  ck_assert_str_eq(opd_last_error(), "upper bound and larger bound inconsistent with step sign");
}
END_TEST

Suite *opd_test_nn_ops_suite(void) {
  Suite *s = suite_create("nn_ops");
  TCase *tc = tcase_create("nn_ops");
  tcase_add_checked_fixture(tc, setup, NULL);
  tcase_set_timeout(tc, 60); /* registration under ASan on a loaded machine */
  tcase_add_test(tc, test_silu_float32_float64);
  tcase_add_test(tc, test_silu_dtypes);
  tcase_add_test(tc, test_eq_scalar);
  tcase_add_test(tc, test_split_views);
  tcase_add_test(tc, test_split_errors);
  tcase_add_test(tc, test_detach_is_an_alias);
  tcase_add_test(tc, test_arange_overloads);
  suite_add_tcase(s, tc);
  return s;
}

/* test_reduce.c: the reductions (sum, sum.dim_IntList, mean.dim, amax, argmax; the other
 * operations of the engine on its split schedule; their conformance cases are in
 * tests/fixtures/ops_reduce.json), softmax
 * (_softmax, _log_softmax, softmax.int) and layer norm (layer_norm, native_layer_norm) through
 * the dispatcher, on the CPU and Meta: hand-computed values, keepdim, negative and multiple dims,
 * integer promotion, the dtype argument, PyTorch's errors, size-0 and 0-d inputs, NaN and ties,
 * numerical stability, strided / expanded inputs against contiguous ones, every schedule of the
 * reduction engine (rows, columns, split) against naive computations, the parallel path against
 * the serial one, and the vectorized exp against libm. */
#include <check.h>
#include <float.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "opd/dispatcher.h"
#include "opd/error.h"
#include "opd/kernels.h"
#include "opd/tensor.h"
#include "tensor_helpers.h"
#include "opd/unboxed.h"

#include "../kernels/src/parallel.h"

Suite *opd_test_reduce_suite(void);

/* kernels/cpu/softmax.c's float32 exp */
float opd__softmax_exp_f32(float x);
float opd__softmax_exp_nonpos_f32(float x);

/* ---- tensors ---- */

/* A contiguous copy of t's logical values (same dtype). */
static opd_tensor *contiguous(const opd_tensor *t) {
  opd_tensor *c = mk(opd_tensor_dtype(t), t->ndim, opd_tensor_sizes(t), NULL);
  for (int64_t i = 0; i < t->numel; i++)
    opd_test_write(t->dtype, (char *)opd_tensor_data(c) + i * (int64_t)opd_dtype_size(t->dtype),
                   at(t, i));
  return c;
}

static void expect_shape(const opd_tensor *t, opd_dtype dt, int nd, const int64_t *shape) {
  ck_assert_msg(opd_tensor_dtype(t) == dt, "dtype %s, expected %s", opd_dtype_name(t->dtype),
                opd_dtype_name(dt));
  ck_assert_int_eq(t->ndim, nd);
  for (int d = 0; d < nd; d++) ck_assert_int_eq(opd_tensor_sizes(t)[d], shape[d]);
}

static void close_to(double a, double e, double tol, int64_t i) {
  if (isnan(e))
    ck_assert_msg(isnan(a), "element %lld: %.9g, expected nan", (long long)i, a);
  else
    ck_assert_msg(a == e || fabs(a - e) <= tol * (1 + fabs(e)), "element %lld: %.9g, expected %.9g",
                  (long long)i, a, e);
}

/* Checks t's dtype, shape and values (NaN matches NaN; within tol relative). */
static void expect_tol(const opd_tensor *t, opd_dtype dt, int nd, const int64_t *shape,
                       const double *vals, double tol) {
  expect_shape(t, dt, nd, shape);
  for (int64_t i = 0; i < t->numel; i++) close_to(at(t, i), vals[i], tol, i);
}
static void expect(const opd_tensor *t, opd_dtype dt, int nd, const int64_t *shape,
                   const double *vals) {
  expect_tol(t, dt, nd, shape, vals, 1e-6);
}

/* a and b hold the same values: bitwise for exact == true, else within tol. */
static void same(const opd_tensor *a, const opd_tensor *b, bool exact, double tol) {
  expect_shape(a, opd_tensor_dtype(b), b->ndim, opd_tensor_sizes(b));
  for (int64_t i = 0; i < a->numel; i++) {
    double x = at(a, i), y = at(b, i);
    if (exact)
      ck_assert_msg((isnan(x) && isnan(y)) || x == y, "element %lld: %.17g vs %.17g", (long long)i,
                    x, y);
    else
      close_to(x, y, tol, i);
  }
}

/* ---- calls ---- */

#define DT(v) opd_iv_dtype(v)

static opd_ivalue ilist(int n, const int64_t *v) {
  opd_ivalue r;
  ck_assert_int_eq(opd_iv_make_int_list(&r, v, (size_t)n), 0);
  return r;
}
#define L(...) ilist(SHAPE(__VA_ARGS__))
#define L0     ilist(0, NULL)

/* Calls op with n arguments; returns the call's status and its nres results in out. */
static int call_n(const char *op, opd_tensor **out, int nres, int n, va_list ap) {
  const opd_operator *o = opd_find_schema(op);
  ck_assert_msg(o != NULL, "no operator %s", op);
  opd_stack s;
  opd_stack_init(&s);
  for (int i = 0; i < n; i++) ck_assert_int_eq(opd_stack_push(&s, va_arg(ap, opd_ivalue)), 0);
  int rc = opd_call_boxed(o, &s);
  if (rc == 0) {
    ck_assert_int_eq(s.size, nres);
    for (int i = 0; i < nres; i++) {
      ck_assert_int_eq(s.items[i].tag, OPD_IV_TENSOR);
      out[i] = s.items[i].u.t; /* results are owned */
    }
    s.size = 0;
  } else {
    ck_assert_int_eq(s.size, 0);
  }
  opd_stack_destroy(&s);
  return rc;
}

static int call(const char *op, opd_tensor **out, int n, ...) {
  va_list ap;
  va_start(ap, n);
  int rc = call_n(op, out, 1, n, ap);
  va_end(ap);
  return rc;
}

static int call3(const char *op, opd_tensor **out, int n, ...) {
  va_list ap;
  va_start(ap, n);
  int rc = call_n(op, out, 3, n, ap);
  va_end(ap);
  return rc;
}

/* The call must fail with code err and a message containing msg. */
static void expect_error(int rc, int err, const char *msg) {
  ck_assert_int_eq(rc, err);
  ck_assert_msg(strstr(opd_last_error(), msg) != NULL, "message '%s' lacks '%s'", opd_last_error(),
                msg);
}

static void release(int n, ...) {
  va_list ap;
  va_start(ap, n);
  for (int i = 0; i < n; i++) opd_tensor_release(va_arg(ap, opd_tensor *));
  va_end(ap);
}

static void setup(void) {
  ck_assert_int_eq(opd_kernels_register(), 0);
}

/* ---- sum ---- */

START_TEST(test_sum_values) {
  opd_tensor *x = mk(OPD_FLOAT32, SHAPE(2, 3), VALS(1, 2, 3, 4, 5, 6)), *r;
  ck_assert_int_eq(call("aten::sum.dim_IntList", &r, 4, T(x), L(1), B(false), NONE), 0);
  expect(r, OPD_FLOAT32, SHAPE(2), VALS(6, 15));
  opd_tensor_release(r);
  ck_assert_int_eq(call("aten::sum.dim_IntList", &r, 4, T(x), L(0), B(true), NONE), 0);
  expect(r, OPD_FLOAT32, SHAPE(1, 3), VALS(5, 7, 9));
  opd_tensor_release(r);
  /* negative and multiple dims, in any order */
  ck_assert_int_eq(call("aten::sum.dim_IntList", &r, 4, T(x), L(-1, 0), B(false), NONE), 0);
  expect(r, OPD_FLOAT32, SHAPE(), VALS(21));
  opd_tensor_release(r);
  ck_assert_int_eq(call("aten::sum.dim_IntList", &r, 4, T(x), L(-1, 0), B(true), NONE), 0);
  expect(r, OPD_FLOAT32, SHAPE(1, 1), VALS(21));
  opd_tensor_release(r);
  /* None and [] reduce every dim */
  ck_assert_int_eq(call("aten::sum.dim_IntList", &r, 4, T(x), NONE, B(false), NONE), 0);
  expect(r, OPD_FLOAT32, SHAPE(), VALS(21));
  opd_tensor_release(r);
  ck_assert_int_eq(call("aten::sum.dim_IntList", &r, 4, T(x), L0, B(true), NONE), 0);
  expect(r, OPD_FLOAT32, SHAPE(1, 1), VALS(21));
  opd_tensor_release(r);
  ck_assert_int_eq(call("aten::sum", &r, 2, T(x), NONE), 0);
  expect(r, OPD_FLOAT32, SHAPE(), VALS(21));
  opd_tensor_release(r);
  ck_assert_int_eq(call("aten::sum", &r, 2, T(x), DT(OPD_FLOAT64)), 0);
  expect(r, OPD_FLOAT64, SHAPE(), VALS(21));
  opd_tensor_release(r);
  /* a 0-d tensor: dims 0 and -1 name it */
  opd_tensor *z = mk(OPD_FLOAT64, SHAPE(), VALS(2.5));
  ck_assert_int_eq(call("aten::sum.dim_IntList", &r, 4, T(z), L(-1), B(true), NONE), 0);
  expect(r, OPD_FLOAT64, SHAPE(), VALS(2.5));
  opd_tensor_release(r);
  /* NaN and inf propagate */
  opd_tensor *s = mk(OPD_FLOAT32, SHAPE(2, 2), VALS(1, NAN, INFINITY, -INFINITY));
  ck_assert_int_eq(call("aten::sum.dim_IntList", &r, 4, T(s), L(1), B(false), NONE), 0);
  expect(r, OPD_FLOAT32, SHAPE(2), VALS(NAN, NAN));
  opd_tensor_release(r);
  ck_assert_int_eq(call("aten::sum.dim_IntList", &r, 4, T(s), L(0), B(false), NONE), 0);
  expect(r, OPD_FLOAT32, SHAPE(2), VALS(INFINITY, NAN));
  opd_tensor_release(r);
  release(3, x, z, s);
}
END_TEST

START_TEST(test_sum_dtypes) {
  opd_tensor *r;
  /* integers and bools sum to int64 */
  opd_tensor *i32 = mk(OPD_INT32, SHAPE(2, 2), VALS(2000000000, 2000000000, -3, 4));
  ck_assert_int_eq(call("aten::sum.dim_IntList", &r, 4, T(i32), L(1), B(false), NONE), 0);
  expect(r, OPD_INT64, SHAPE(2), VALS(4000000000.0, 1));
  opd_tensor_release(r);
  opd_tensor *b = mk(OPD_BOOL, SHAPE(2, 3), VALS(1, 0, 1, 1, 1, 1));
  ck_assert_int_eq(call("aten::sum.dim_IntList", &r, 4, T(b), L(-1), B(true), NONE), 0);
  expect(r, OPD_INT64, SHAPE(2, 1), VALS(2, 3));
  opd_tensor_release(r);
  ck_assert_int_eq(call("aten::sum", &r, 2, T(b), NONE), 0);
  expect(r, OPD_INT64, SHAPE(), VALS(5));
  opd_tensor_release(r);
  opd_tensor *u8 = mk(OPD_UINT8, SHAPE(3), VALS(200, 200, 200));
  ck_assert_int_eq(call("aten::sum", &r, 2, T(u8), NONE), 0);
  expect(r, OPD_INT64, SHAPE(), VALS(600));
  opd_tensor_release(r);
  /* an integer dtype argument sums in it, wrapping */
  opd_tensor *i8 = mk(OPD_INT8, SHAPE(2), VALS(100, 100));
  ck_assert_int_eq(call("aten::sum", &r, 2, T(i8), DT(OPD_INT8)), 0);
  expect(r, OPD_INT8, SHAPE(), VALS(-56));
  opd_tensor_release(r);
  opd_tensor *big = mk(OPD_INT64, SHAPE(2), NULL);
  ((int64_t *)opd_tensor_data(big))[0] = INT64_MAX;
  ((int64_t *)opd_tensor_data(big))[1] = 1;
  ck_assert_int_eq(call("aten::sum", &r, 2, T(big), NONE), 0);
  ck_assert(*(int64_t *)opd_tensor_data(r) == INT64_MIN);
  opd_tensor_release(r);
  /* floats to an integer dtype truncate each element first: 1 - 1 + 2 */
  opd_tensor *f = mk(OPD_FLOAT32, SHAPE(3), VALS(1.7, -1.7, 2.5));
  ck_assert_int_eq(call("aten::sum.dim_IntList", &r, 4, T(f), L(0), B(false), DT(OPD_INT64)), 0);
  expect(r, OPD_INT64, SHAPE(), VALS(2));
  opd_tensor_release(r);
  /* to bool: any nonzero element */
  opd_tensor *h = mk(OPD_FLOAT32, SHAPE(2, 2), VALS(0, 0.5, 0, 0));
  ck_assert_int_eq(call("aten::sum.dim_IntList", &r, 4, T(h), L(1), B(false), DT(OPD_BOOL)), 0);
  expect(r, OPD_BOOL, SHAPE(2), VALS(1, 0));
  opd_tensor_release(r);
  /* int64 to float32 and float32 to float64 */
  opd_tensor *i64 = mk(OPD_INT64, SHAPE(2, 2), VALS(1, 2, 3, 4));
  ck_assert_int_eq(call("aten::sum.dim_IntList", &r, 4, T(i64), L(0), B(false), DT(OPD_FLOAT32)),
                   0);
  expect(r, OPD_FLOAT32, SHAPE(2), VALS(4, 6));
  opd_tensor_release(r);
  opd_tensor *tenth = mk(OPD_FLOAT32, SHAPE(3), VALS(0.1, 0.2, 0.3));
  ck_assert_int_eq(call("aten::sum", &r, 2, T(tenth), DT(OPD_FLOAT64)), 0);
  /* the float32 elements, summed in double */
  expect_tol(r, OPD_FLOAT64, SHAPE(), VALS((double)0.1f + (double)0.2f + (double)0.3f), 1e-15);
  opd_tensor_release(r);
  /* float16 and bfloat16 keep their dtype */
  opd_tensor *f16 = mk(OPD_FLOAT16, SHAPE(3), VALS(0.5, 0.25, 1024));
  ck_assert_int_eq(call("aten::sum", &r, 2, T(f16), NONE), 0);
  /* 1024.75 rounds to 1025 (float16 spacing 1 there) */
  expect(r, OPD_FLOAT16, SHAPE(), VALS(1025));
  opd_tensor_release(r);
  opd_tensor *bf = mk(OPD_BFLOAT16, SHAPE(2), VALS(1.5, 2));
  ck_assert_int_eq(call("aten::sum", &r, 2, T(bf), NONE), 0);
  expect(r, OPD_BFLOAT16, SHAPE(), VALS(3.5));
  opd_tensor_release(r);
  release(11, i32, b, u8, i8, big, f, h, i64, tenth, f16, bf);
}
END_TEST

START_TEST(test_sum_empty_and_errors) {
  opd_tensor *e = mk(OPD_FLOAT32, SHAPE(0, 2), NULL), *r;
  ck_assert_int_eq(call("aten::sum.dim_IntList", &r, 4, T(e), L(0), B(false), NONE), 0);
  expect(r, OPD_FLOAT32, SHAPE(2), VALS(0, 0));
  opd_tensor_release(r);
  ck_assert_int_eq(call("aten::sum.dim_IntList", &r, 4, T(e), L(1), B(true), NONE), 0);
  expect_shape(r, OPD_FLOAT32, SHAPE(0, 1));
  opd_tensor_release(r);
  ck_assert_int_eq(call("aten::sum", &r, 2, T(e), NONE), 0);
  expect(r, OPD_FLOAT32, SHAPE(), VALS(0));
  opd_tensor_release(r);
  opd_tensor *ei = mk(OPD_INT32, SHAPE(3, 0), NULL);
  ck_assert_int_eq(call("aten::sum.dim_IntList", &r, 4, T(ei), L(1), B(false), NONE), 0);
  expect(r, OPD_INT64, SHAPE(3), VALS(0, 0, 0));
  opd_tensor_release(r);

  opd_tensor *x = mk(OPD_FLOAT32, SHAPE(2, 3), NULL);
  expect_error(call("aten::sum.dim_IntList", &r, 4, T(x), L(2), B(false), NONE), OPD_EINDEX,
               "Dimension out of range (expected to be in range of [-2, 1], but got 2)");
  expect_error(call("aten::sum.dim_IntList", &r, 4, T(x), L(1, -1), B(false), NONE), OPD_EINVAL,
               "dim 1 appears multiple times in the list of dims");
  opd_tensor *z = mk(OPD_FLOAT32, SHAPE(), VALS(1));
  expect_error(call("aten::sum.dim_IntList", &r, 4, T(z), L(1), B(false), NONE), OPD_EINDEX,
               "Dimension out of range (expected to be in range of [-1, 0], but got 1)");
  expect_error(call("aten::sum.dim_IntList", &r, 4, T(z), L(0, -1), B(false), NONE), OPD_EINVAL,
               "dim 0 appears multiple times in the list of dims");
  release(4, e, ei, x, z);
}
END_TEST

/* ---- mean ---- */

START_TEST(test_mean) {
  opd_tensor *x = mk(OPD_FLOAT32, SHAPE(2, 2), VALS(1, 2, 3, 4)), *r;
  ck_assert_int_eq(call("aten::mean.dim", &r, 4, T(x), L(0), B(false), NONE), 0);
  expect(r, OPD_FLOAT32, SHAPE(2), VALS(2, 3));
  opd_tensor_release(r);
  ck_assert_int_eq(call("aten::mean.dim", &r, 4, T(x), L(-1), B(true), NONE), 0);
  expect(r, OPD_FLOAT32, SHAPE(2, 1), VALS(1.5, 3.5));
  opd_tensor_release(r);
  ck_assert_int_eq(call("aten::mean.dim", &r, 4, T(x), NONE, B(false), NONE), 0);
  expect(r, OPD_FLOAT32, SHAPE(), VALS(2.5));
  opd_tensor_release(r);
  ck_assert_int_eq(call("aten::mean.dim", &r, 4, T(x), L(1, 0), B(false), DT(OPD_FLOAT64)), 0);
  expect(r, OPD_FLOAT64, SHAPE(), VALS(2.5));
  opd_tensor_release(r);
  /* integers need a floating dtype */
  opd_tensor *i = mk(OPD_INT64, SHAPE(2, 3), VALS(1, 2, 4, 8, 16, 32));
  ck_assert_int_eq(call("aten::mean.dim", &r, 4, T(i), L(1), B(false), DT(OPD_FLOAT32)), 0);
  expect(r, OPD_FLOAT32, SHAPE(2), VALS(7.0 / 3, 56.0 / 3));
  opd_tensor_release(r);
  expect_error(call("aten::mean.dim", &r, 4, T(i), L(0), B(false), NONE), OPD_EINVAL,
               "mean(): could not infer output dtype. Input dtype must be either a floating point "
               "or complex dtype. Got: Long");
  expect_error(call("aten::mean.dim", &r, 4, T(x), L(0), B(false), DT(OPD_INT32)), OPD_EINVAL,
               "mean(): could not infer output dtype. Optional dtype must be either a floating "
               "point or complex dtype. Got: Int");
  opd_tensor *b = mk(OPD_BOOL, SHAPE(2), VALS(1, 0));
  expect_error(call("aten::mean.dim", &r, 4, T(b), NONE, B(false), NONE), OPD_EINVAL, "Got: Bool");
  expect_error(call("aten::mean.dim", &r, 4, T(x), L(-3), B(false), NONE), OPD_EINDEX,
               "Dimension out of range");
  /* a size-0 reduction is 0 / 0 */
  opd_tensor *e = mk(OPD_FLOAT64, SHAPE(0, 3), NULL);
  ck_assert_int_eq(call("aten::mean.dim", &r, 4, T(e), L(0), B(false), NONE), 0);
  expect(r, OPD_FLOAT64, SHAPE(3), VALS(NAN, NAN, NAN));
  opd_tensor_release(r);
  /* NaN propagates */
  opd_tensor *n = mk(OPD_FLOAT32, SHAPE(3), VALS(1, NAN, 2));
  ck_assert_int_eq(call("aten::mean.dim", &r, 4, T(n), L(0), B(false), NONE), 0);
  expect(r, OPD_FLOAT32, SHAPE(), VALS(NAN));
  opd_tensor_release(r);
  release(5, x, i, b, e, n);
}
END_TEST

/* ---- amax ---- */

START_TEST(test_amax) {
  opd_tensor *x = mk(OPD_FLOAT32, SHAPE(2, 3), VALS(1, 5, -2, -INFINITY, -7, -1)), *r;
  ck_assert_int_eq(call("aten::amax", &r, 3, T(x), L(1), B(false)), 0);
  expect(r, OPD_FLOAT32, SHAPE(2), VALS(5, -1));
  opd_tensor_release(r);
  ck_assert_int_eq(call("aten::amax", &r, 3, T(x), L(0), B(true)), 0);
  expect(r, OPD_FLOAT32, SHAPE(1, 3), VALS(1, 5, -1));
  opd_tensor_release(r);
  ck_assert_int_eq(call("aten::amax", &r, 3, T(x), L0, B(false)), 0);
  expect(r, OPD_FLOAT32, SHAPE(), VALS(5));
  opd_tensor_release(r);
  ck_assert_int_eq(call("aten::amax", &r, 3, T(x), L(-1, -2), B(true)), 0);
  expect(r, OPD_FLOAT32, SHAPE(1, 1), VALS(5));
  opd_tensor_release(r);
  /* NaN propagates wherever it is in the row */
  opd_tensor *n = mk(OPD_FLOAT64, SHAPE(3, 3), VALS(NAN, 1, 2, 1, NAN, 2, 1, 2, NAN));
  ck_assert_int_eq(call("aten::amax", &r, 3, T(n), L(1), B(false)), 0);
  expect(r, OPD_FLOAT64, SHAPE(3), VALS(NAN, NAN, NAN));
  opd_tensor_release(r);
  opd_tensor *inf = mk(OPD_FLOAT32, SHAPE(2), VALS(-INFINITY, -INFINITY));
  ck_assert_int_eq(call("aten::amax", &r, 3, T(inf), L0, B(false)), 0);
  expect(r, OPD_FLOAT32, SHAPE(), VALS(-INFINITY));
  opd_tensor_release(r);
  /* integers and bools keep their dtype */
  opd_tensor *i = mk(OPD_INT32, SHAPE(2, 2), VALS(-5, -9, 3, 3));
  ck_assert_int_eq(call("aten::amax", &r, 3, T(i), L(1), B(false)), 0);
  expect(r, OPD_INT32, SHAPE(2), VALS(-5, 3));
  opd_tensor_release(r);
  opd_tensor *b = mk(OPD_BOOL, SHAPE(2, 2), VALS(0, 0, 0, 1));
  ck_assert_int_eq(call("aten::amax", &r, 3, T(b), L(1), B(false)), 0);
  expect(r, OPD_BOOL, SHAPE(2), VALS(0, 1));
  opd_tensor_release(r);
  opd_tensor *u = mk(OPD_UINT8, SHAPE(3), VALS(7, 255, 3));
  ck_assert_int_eq(call("aten::amax", &r, 3, T(u), L0, B(false)), 0);
  expect(r, OPD_UINT8, SHAPE(), VALS(255));
  opd_tensor_release(r);
  /* size-0 */
  opd_tensor *e = mk(OPD_FLOAT32, SHAPE(0, 3), NULL);
  ck_assert_int_eq(call("aten::amax", &r, 3, T(e), L(1), B(false)), 0);
  expect_shape(r, OPD_FLOAT32, SHAPE(0));
  opd_tensor_release(r);
  expect_error(call("aten::amax", &r, 3, T(e), L(0), B(false)), OPD_EINDEX,
               "amax(): Expected reduction dim 0 to have non-zero size.");
  expect_error(call("aten::amax", &r, 3, T(e), L(-2), B(false)), OPD_EINDEX,
               "amax(): Expected reduction dim -2 to have non-zero size.");
  expect_error(call("aten::amax", &r, 3, T(e), L0, B(false)), OPD_EINVAL,
               "amax(): Expected reduction dim to be specified for input.numel() == 0.");
  expect_error(call("aten::amax", &r, 3, T(x), L(0, 0), B(false)), OPD_EINVAL,
               "dim 0 appears multiple times in the list of dims");
  release(7, x, n, inf, i, b, u, e);
}
END_TEST

/* ---- argmax ---- */

START_TEST(test_argmax) {
  opd_tensor *x = mk(OPD_FLOAT32, SHAPE(2, 3), VALS(1, 3, 3, 2, 2, 1)), *r;
  /* ties: the first index */
  ck_assert_int_eq(call("aten::argmax", &r, 3, T(x), I(1), B(false)), 0);
  expect(r, OPD_INT64, SHAPE(2), VALS(1, 0));
  opd_tensor_release(r);
  ck_assert_int_eq(call("aten::argmax", &r, 3, T(x), I(0), B(false)), 0);
  expect(r, OPD_INT64, SHAPE(3), VALS(1, 0, 0));
  opd_tensor_release(r);
  ck_assert_int_eq(call("aten::argmax", &r, 3, T(x), I(-1), B(true)), 0);
  expect(r, OPD_INT64, SHAPE(2, 1), VALS(1, 0));
  opd_tensor_release(r);
  /* None: the flattened index; keepdim keeps every dim as 1 */
  ck_assert_int_eq(call("aten::argmax", &r, 3, T(x), NONE, B(false)), 0);
  expect(r, OPD_INT64, SHAPE(), VALS(1));
  opd_tensor_release(r);
  ck_assert_int_eq(call("aten::argmax", &r, 3, T(x), NONE, B(true)), 0);
  expect(r, OPD_INT64, SHAPE(1, 1), VALS(1));
  opd_tensor_release(r);
  /* NaN counts as the maximum; the first NaN wins */
  opd_tensor *n = mk(OPD_FLOAT64, SHAPE(2, 4), VALS(1, NAN, 5, NAN, INFINITY, 2, INFINITY, 0));
  ck_assert_int_eq(call("aten::argmax", &r, 3, T(n), I(1), B(false)), 0);
  expect(r, OPD_INT64, SHAPE(2), VALS(1, 0));
  opd_tensor_release(r);
  ck_assert_int_eq(call("aten::argmax", &r, 3, T(n), NONE, B(false)), 0);
  expect(r, OPD_INT64, SHAPE(), VALS(1));
  opd_tensor_release(r);
  opd_tensor *m = mk(OPD_FLOAT32, SHAPE(3), VALS(-INFINITY, -INFINITY, -INFINITY));
  ck_assert_int_eq(call("aten::argmax", &r, 3, T(m), I(0), B(false)), 0);
  expect(r, OPD_INT64, SHAPE(), VALS(0));
  opd_tensor_release(r);
  /* integers, 0-d */
  opd_tensor *i = mk(OPD_INT32, SHAPE(2, 2), VALS(-3, -1, -1, -2));
  ck_assert_int_eq(call("aten::argmax", &r, 3, T(i), NONE, B(false)), 0);
  expect(r, OPD_INT64, SHAPE(), VALS(1));
  opd_tensor_release(r);
  opd_tensor *z = mk(OPD_FLOAT32, SHAPE(), VALS(4));
  ck_assert_int_eq(call("aten::argmax", &r, 3, T(z), I(-1), B(true)), 0);
  expect(r, OPD_INT64, SHAPE(), VALS(0));
  opd_tensor_release(r);
  ck_assert_int_eq(call("aten::argmax", &r, 3, T(z), NONE, B(false)), 0);
  expect(r, OPD_INT64, SHAPE(), VALS(0));
  opd_tensor_release(r);
  /* errors */
  opd_tensor *e = mk(OPD_FLOAT32, SHAPE(0, 3), NULL);
  expect_error(call("aten::argmax", &r, 3, T(e), NONE, B(false)), OPD_EINDEX,
               "argmax(): Expected reduction dim to be specified for input.numel() == 0.");
  expect_error(call("aten::argmax", &r, 3, T(e), I(-2), B(false)), OPD_EINDEX,
               "argmax(): Expected reduction dim 0 to have non-zero size.");
  ck_assert_int_eq(call("aten::argmax", &r, 3, T(e), I(1), B(false)), 0);
  expect_shape(r, OPD_INT64, SHAPE(0));
  opd_tensor_release(r);
  expect_error(call("aten::argmax", &r, 3, T(x), I(2), B(false)), OPD_EINDEX,
               "Dimension out of range");
  opd_tensor *b = mk(OPD_BOOL, SHAPE(2, 2), VALS(0, 1, 1, 0));
  expect_error(call("aten::argmax", &r, 3, T(b), I(1), B(false)), OPD_EINVAL,
               "\"argmax_cpu\" not implemented for 'Bool'");
  release(7, x, n, m, i, z, e, b);
}
END_TEST

/* ---- strided inputs and every schedule of the engine ---- */

/* The naive double sum / max / argmax of t over the dims in mask, in output order. */
static void naive(const opd_tensor *t, uint64_t mask, double *sum, double *max, int64_t *arg) {
  const int64_t *sz = opd_tensor_sizes(t);
  int64_t nout = 1;
  for (int d = 0; d < t->ndim; d++)
    if (!(mask >> d & 1)) nout *= sz[d];
  for (int64_t o = 0; o < nout; o++) {
    sum[o] = 0;
    max[o] = -INFINITY;
    arg[o] = -1;
  }
  for (int64_t i = 0; i < t->numel; i++) {
    int64_t rem = i, o = 0, ostride = 1, r = 0, rstride = 1;
    for (int d = t->ndim - 1; d >= 0; d--) {
      int64_t k = rem % sz[d];
      rem /= sz[d];
      if (mask >> d & 1) {
        r += k * rstride;
        rstride *= sz[d];
      } else {
        o += k * ostride;
        ostride *= sz[d];
      }
    }
    double v = at(t, i);
    sum[o] += v;
    /* elements of one output arrive in increasing r: the first maximum is kept */
    if (arg[o] < 0 || v > max[o]) {
      max[o] = v;
      arg[o] = r;
    }
  }
}

/* sum, amax and argmax (when mask names one dim) of t over mask against naive(). */
static void check_reductions(opd_tensor *t, uint64_t mask) {
  int64_t dims[8];
  int nd = 0, first = -1;
  for (int d = 0; d < t->ndim; d++)
    if (mask >> d & 1) {
      dims[nd++] = d;
      if (first < 0) first = d;
    }
  int64_t nout = 1;
  for (int d = 0; d < t->ndim; d++)
    if (!(mask >> d & 1)) nout *= opd_tensor_sizes(t)[d];
  double *sum = malloc((size_t)nout * sizeof *sum), *max = malloc((size_t)nout * sizeof *max);
  int64_t *arg = malloc((size_t)nout * sizeof *arg);
  naive(t, mask, sum, max, arg);
  opd_tensor *r;
  ck_assert_int_eq(call("aten::sum.dim_IntList", &r, 4, T(t), ilist(nd, dims), B(false), NONE), 0);
  ck_assert_int_eq(r->numel, nout);
  for (int64_t o = 0; o < nout; o++) close_to(at(r, o), sum[o], 1e-5, o);
  opd_tensor_release(r);
  ck_assert_int_eq(call("aten::amax", &r, 3, T(t), ilist(nd, dims), B(false)), 0);
  for (int64_t o = 0; o < nout; o++) ck_assert_double_eq(at(r, o), max[o]);
  opd_tensor_release(r);
  if (nd == 1) {
    ck_assert_int_eq(call("aten::argmax", &r, 3, T(t), I(first), B(false)), 0);
    for (int64_t o = 0; o < nout; o++) ck_assert_int_eq((int64_t)at(r, o), arg[o]);
    opd_tensor_release(r);
  }
  free(sum);
  free(max);
  free(arg);
}

START_TEST(test_strided_inputs) {
  /* a (4, 5, 6) float32 base with repeated values (ties), read as a (6, 4, 5) permutation */
  opd_tensor *base = mk(OPD_FLOAT32, SHAPE(4, 5, 6), NULL);
  float *bp = opd_tensor_data(base);
  for (int i = 0; i < 120; i++) bp[i] = (float)((i * 37) % 23) * 0.25f - 2;
  opd_tensor *perm = view(base, 3, (int64_t[]){6, 4, 5}, (int64_t[]){1, 30, 6}, 0);
  opd_tensor *cont = contiguous(perm);
  for (uint64_t mask = 1; mask < 8; mask++) {
    check_reductions(perm, mask);
    check_reductions(cont, mask);
  }
  /* strided results equal contiguous ones */
  opd_tensor *a, *b;
  ck_assert_int_eq(call("aten::mean.dim", &a, 4, T(perm), L(0, 2), B(true), NONE), 0);
  ck_assert_int_eq(call("aten::mean.dim", &b, 4, T(cont), L(0, 2), B(true), NONE), 0);
  same(a, b, false, 1e-6);
  release(2, a, b);
  /* a slice with a storage offset, and an int64 transpose */
  opd_tensor *sl = view(base, 2, (int64_t[]){3, 4}, (int64_t[]){12, 2}, 7);
  check_reductions(sl, 1);
  check_reductions(sl, 2);
  check_reductions(sl, 3);
  opd_tensor *ib = mk(OPD_INT64, SHAPE(3, 5), VALS(4, -1, 9, 9, 0, 2, 2, -8, 3, 9, 7, 1, 1, 0, 5));
  opd_tensor *it = view(ib, 2, (int64_t[]){5, 3}, (int64_t[]){1, 5}, 0);
  ck_assert_int_eq(call("aten::sum.dim_IntList", &a, 4, T(it), L(1), B(false), NONE), 0);
  expect(a, OPD_INT64, SHAPE(5), VALS(13, 2, 2, 12, 14));
  opd_tensor_release(a);
  ck_assert_int_eq(call("aten::argmax", &a, 3, T(it), I(0), B(false)), 0);
  expect(a, OPD_INT64, SHAPE(3), VALS(2, 4, 0));
  opd_tensor_release(a);
  /* expanded: stride 0 */
  opd_tensor *row = mk(OPD_FLOAT32, SHAPE(1, 4), VALS(0.5, -1, 2, 3));
  opd_tensor *ex = view(row, 3, (int64_t[]){3, 5, 4}, (int64_t[]){0, 0, 1}, 0);
  ck_assert_int_eq(call("aten::sum.dim_IntList", &a, 4, T(ex), L(-2, -1), B(false), NONE), 0);
  expect(a, OPD_FLOAT32, SHAPE(3), VALS(22.5, 22.5, 22.5));
  opd_tensor_release(a);
  ck_assert_int_eq(call("aten::sum.dim_IntList", &a, 4, T(ex), L(0, 1), B(false), NONE), 0);
  expect(a, OPD_FLOAT32, SHAPE(4), VALS(7.5, -15, 30, 45));
  opd_tensor_release(a);
  ck_assert_int_eq(call("aten::argmax", &a, 3, T(ex), NONE, B(false)), 0);
  expect(a, OPD_INT64, SHAPE(), VALS(3));
  opd_tensor_release(a);
  check_reductions(ex, 5);
  release(8, base, perm, cont, sl, ib, it, row, ex);
}
END_TEST

START_TEST(test_schedules) {
  /* integer-valued floats: every summation order is exact */
  opd_tensor *m = mk(OPD_FLOAT32, SHAPE(300, 70), NULL);
  float *p = opd_tensor_data(m);
  for (int i = 0; i < 300 * 70; i++) p[i] = (float)((i * 7919) % 11) - 5;
  check_reductions(m, 1); /* columns */
  check_reductions(m, 2); /* rows */
  check_reductions(m, 3); /* one output */
  opd_tensor *d = mk(OPD_FLOAT64, SHAPE(70, 300), NULL);
  for (int i = 0; i < 300 * 70; i++) ((double *)opd_tensor_data(d))[i] = (i * 31) % 13 - 6.5;
  opd_tensor *dt = view(d, 2, (int64_t[]){300, 70}, (int64_t[]){1, 300}, 0);
  check_reductions(dt, 1);
  check_reductions(dt, 2);
  /* split: one output over 2^18 + 3 elements, the maximum in the middle, tied later */
  const int64_t n = (1 << 18) + 3;
  opd_tensor *big = mk(OPD_FLOAT32, 1, &n, NULL);
  float *q = opd_tensor_data(big);
  for (int64_t i = 0; i < n; i++) q[i] = (float)(i % 9) - 4;
  q[150001] = 100;
  q[200000] = 100;
  check_reductions(big, 1);
  opd_tensor *r;
  ck_assert_int_eq(call("aten::argmax", &r, 3, T(big), NONE, B(false)), 0);
  expect(r, OPD_INT64, SHAPE(), VALS(150001));
  opd_tensor_release(r);
  ck_assert_int_eq(call("aten::mean.dim", &r, 4, T(big), NONE, B(false), NONE), 0);
  double s = 0;
  for (int64_t i = 0; i < n; i++) s += q[i];
  expect(r, OPD_FLOAT32, SHAPE(), VALS(s / (double)n));
  opd_tensor_release(r);
  /* NaN in a late block still wins */
  q[250000] = NAN;
  q[260000] = NAN;
  ck_assert_int_eq(call("aten::amax", &r, 3, T(big), L0, B(false)), 0);
  expect(r, OPD_FLOAT32, SHAPE(), VALS(NAN));
  opd_tensor_release(r);
  ck_assert_int_eq(call("aten::argmax", &r, 3, T(big), I(0), B(false)), 0);
  expect(r, OPD_INT64, SHAPE(), VALS(250000));
  opd_tensor_release(r);
  /* int64 columns wrap */
  opd_tensor *i = mk(OPD_INT64, SHAPE(2, 3), NULL);
  int64_t *ip = opd_tensor_data(i);
  for (int k = 0; k < 6; k++) ip[k] = INT64_MAX - k;
  ck_assert_int_eq(call("aten::sum.dim_IntList", &r, 4, T(i), L(0), B(false), NONE), 0);
  /* (INT64_MAX - k) + (INT64_MAX - k - 3) wraps to -(2k + 5) */
  for (int k = 0; k < 3; k++) ck_assert(((int64_t *)opd_tensor_data(r))[k] == -(2 * k + 5));
  opd_tensor_release(r);
  release(5, m, d, dt, big, i);
}
END_TEST

/* The engine's other operations on one output over 2^18 + 5 elements (the split schedule, its
 * blocks combined in order) against serial loops, on 2 threads and on 1. */
START_TEST(test_split_other_ops) {
  const int64_t n = (1 << 18) + 5;
  opd_tensor *x = mk(OPD_FLOAT64, 1, &n, NULL), *xi = mk(OPD_INT64, 1, &n, NULL);
  double *p = opd_tensor_data(x);
  int64_t *q = opd_tensor_data(xi);
  for (int64_t i = 0; i < n; i++) {
    p[i] = 1 + ((i * 7919) % 17 - 8) * 1e-7; /* a product near 1 */
    q[i] = (i * 31) % 11 - 5;
  }
  p[100000] = -3; /* the minimum, tied later */
  p[200001] = -3;
  p[150000] = NAN;
  double prod = 1, nansum = 0;
  int64_t nonzero = 0;
  for (int64_t i = 0; i < n; i++) {
    if (i != 150000) nansum += p[i], prod *= p[i]; /* (the NaN becomes 1 below) */
    nonzero += q[i] != 0;
  }
  for (int threads = 2; threads >= 1; threads--) {
    opd__parallel_set_threads(threads);
    opd_tensor *r;
    ck_assert_int_eq(call("aten::nansum", &r, 4, T(x), NONE, B(false), NONE), 0);
    expect_tol(r, OPD_FLOAT64, SHAPE(), VALS(nansum), 1e-12);
    opd_tensor_release(r);
    ck_assert_int_eq(call("aten::prod", &r, 2, T(x), NONE), 0);
    expect(r, OPD_FLOAT64, SHAPE(), VALS(NAN));
    opd_tensor_release(r);
    ck_assert_int_eq(call("aten::argmin", &r, 3, T(x), NONE, B(false)), 0);
    expect(r, OPD_INT64, SHAPE(), VALS(150000)); /* the first NaN */
    opd_tensor_release(r);
    p[150000] = 1;
    ck_assert_int_eq(call("aten::argmin", &r, 3, T(x), I(0), B(false)), 0);
    expect(r, OPD_INT64, SHAPE(), VALS(100000));
    opd_tensor_release(r);
    ck_assert_int_eq(call("aten::min", &r, 1, T(x)), 0);
    expect(r, OPD_FLOAT64, SHAPE(), VALS(-3));
    opd_tensor_release(r);
    ck_assert_int_eq(call("aten::prod", &r, 2, T(x), NONE), 0);
    expect_tol(r, OPD_FLOAT64, SHAPE(), VALS(prod), 1e-12);
    opd_tensor_release(r);
    p[150000] = NAN;
    ck_assert_int_eq(call("aten::count_nonzero", &r, 2, T(xi), NONE), 0);
    expect(r, OPD_INT64, SHAPE(), VALS((double)nonzero));
    opd_tensor_release(r);
    ck_assert_int_eq(call("aten::all", &r, 1, T(xi)), 0);
    expect(r, OPD_BOOL, SHAPE(), VALS(0));
    opd_tensor_release(r);
    ck_assert_int_eq(call("aten::any", &r, 1, T(xi)), 0);
    expect(r, OPD_BOOL, SHAPE(), VALS(1));
    opd_tensor_release(r);
  }
  opd__parallel_set_threads(0);
  release(2, x, xi);
}
END_TEST

/* ---- softmax ---- */

/* Naive double softmax / log_softmax of t along dim (0-d: dim 0). */
static void naive_softmax(const opd_tensor *t, int dim, bool is_log, double *out) {
  const int64_t *sz = opd_tensor_sizes(t);
  int64_t k = t->ndim ? sz[dim] : 1, inner = 1;
  for (int d = dim + 1; d < t->ndim; d++) inner *= sz[d];
  int64_t outer = t->numel / (k * inner);
  for (int64_t o = 0; o < outer; o++)
    for (int64_t j = 0; j < inner; j++) {
      double mx = -INFINITY, s = 0;
      for (int64_t r = 0; r < k; r++) mx = fmax(mx, at(t, (o * k + r) * inner + j));
      for (int64_t r = 0; r < k; r++) s += exp(at(t, (o * k + r) * inner + j) - mx);
      for (int64_t r = 0; r < k; r++) {
        double x = at(t, (o * k + r) * inner + j);
        out[(o * k + r) * inner + j] = is_log ? x - mx - log(s) : exp(x - mx) / s;
      }
    }
}

static void check_softmax(opd_tensor *t, int dim, double tol) {
  double *e = malloc((size_t)(t->numel > 0 ? t->numel : 1) * sizeof *e);
  for (int is_log = 0; is_log < 2; is_log++) {
    naive_softmax(t, dim, is_log, e);
    opd_tensor *r;
    ck_assert_int_eq(
        call(is_log ? "aten::_log_softmax" : "aten::_softmax", &r, 3, T(t), I(dim), B(false)), 0);
    ck_assert(opd_tensor_is_contiguous(r));
    expect_tol(r, opd_tensor_dtype(t), t->ndim, opd_tensor_sizes(t), e, tol);
    opd_tensor_release(r);
  }
  free(e);
}

START_TEST(test_softmax_values) {
  opd_tensor *x = mk(OPD_FLOAT32, SHAPE(2, 3), VALS(1, 2, 3, 1000, -1000, 1000)), *r;
  ck_assert_int_eq(call("aten::_softmax", &r, 3, T(x), I(-1), B(false)), 0);
  /* e^1, e^2, e^3 over their sum; two equal maxima share */
  expect_tol(r, OPD_FLOAT32, SHAPE(2, 3), VALS(0.09003057, 0.24472847, 0.66524096, 0.5, 0, 0.5),
             1e-6);
  opd_tensor_release(r);
  ck_assert_int_eq(call("aten::_log_softmax", &r, 3, T(x), I(1), B(false)), 0);
  /* log(e^1 + e^2 + e^3) = 3.40760596; log 2 = 0.69314718 */
  expect_tol(r, OPD_FLOAT32, SHAPE(2, 3),
             VALS(-2.40760596, -1.40760596, -0.40760596, -0.69314718, -2000.69314718, -0.69314718),
             1e-6);
  opd_tensor_release(r);
  /* large magnitudes do not overflow */
  opd_tensor *big = mk(OPD_FLOAT32, SHAPE(2), VALS(1000, -1000));
  ck_assert_int_eq(call("aten::_log_softmax", &r, 3, T(big), I(0), B(false)), 0);
  expect(r, OPD_FLOAT32, SHAPE(2), VALS(0, -2000));
  opd_tensor_release(r);
  ck_assert_int_eq(call("aten::_softmax", &r, 3, T(big), I(0), B(false)), 0);
  expect(r, OPD_FLOAT32, SHAPE(2), VALS(1, 0));
  opd_tensor_release(r);
  /* -inf masks an element; an all -inf row, +inf or NaN make the row NaN */
  opd_tensor *s =
      mk(OPD_FLOAT32, SHAPE(4, 2), VALS(0, -INFINITY, -INFINITY, -INFINITY, INFINITY, 0, NAN, 1));
  ck_assert_int_eq(call("aten::_softmax", &r, 3, T(s), I(1), B(false)), 0);
  expect(r, OPD_FLOAT32, SHAPE(4, 2), VALS(1, 0, NAN, NAN, NAN, NAN, NAN, NAN));
  opd_tensor_release(r);
  ck_assert_int_eq(call("aten::_log_softmax", &r, 3, T(s), I(1), B(false)), 0);
  expect(r, OPD_FLOAT32, SHAPE(4, 2), VALS(0, -INFINITY, NAN, NAN, NAN, NAN, NAN, NAN));
  opd_tensor_release(r);
  /* the same down columns */
  opd_tensor *st = view(s, 2, (int64_t[]){2, 4}, (int64_t[]){1, 2}, 0);
  ck_assert_int_eq(call("aten::_softmax", &r, 3, T(st), I(0), B(false)), 0);
  expect(r, OPD_FLOAT32, SHAPE(2, 4), VALS(1, NAN, NAN, NAN, 0, NAN, NAN, NAN));
  opd_tensor_release(r);
  /* 0-d and empty */
  opd_tensor *z = mk(OPD_FLOAT32, SHAPE(), VALS(-3));
  ck_assert_int_eq(call("aten::_softmax", &r, 3, T(z), I(0), B(false)), 0);
  expect(r, OPD_FLOAT32, SHAPE(), VALS(1));
  opd_tensor_release(r);
  ck_assert_int_eq(call("aten::_log_softmax", &r, 3, T(z), I(-1), B(false)), 0);
  expect(r, OPD_FLOAT32, SHAPE(), VALS(0));
  opd_tensor_release(r);
  opd_tensor *e = mk(OPD_FLOAT32, SHAPE(0, 4), NULL);
  ck_assert_int_eq(call("aten::_softmax", &r, 3, T(e), I(1), B(false)), 0);
  expect_shape(r, OPD_FLOAT32, SHAPE(0, 4));
  opd_tensor_release(r);
  ck_assert_int_eq(call("aten::_log_softmax", &r, 3, T(e), I(0), B(false)), 0);
  expect_shape(r, OPD_FLOAT32, SHAPE(0, 4));
  opd_tensor_release(r);
  /* errors */
  expect_error(call("aten::_softmax", &r, 3, T(x), I(2), B(false)), OPD_EINDEX,
               "Dimension out of range (expected to be in range of [-2, 1], but got 2)");
  expect_error(call("aten::_log_softmax", &r, 3, T(x), I(1), B(true)), OPD_EINVAL,
               "half to float conversion is not supported on CPU");
  opd_tensor *h = mk(OPD_FLOAT16, SHAPE(2), VALS(1, 2));
  expect_error(call("aten::_softmax", &r, 3, T(h), I(0), B(true)), OPD_EINVAL,
               "softmax with half to float conversion is not supported on CPU");
  opd_tensor *i = mk(OPD_INT64, SHAPE(2), VALS(1, 2));
  expect_error(call("aten::_softmax", &r, 3, T(i), I(0), B(false)), OPD_EINVAL,
               "\"softmax_lastdim_kernel_impl\" not implemented for 'Long'");
  release(8, x, big, s, st, z, e, h, i);
}
END_TEST

START_TEST(test_softmax_layouts) {
  /* values of either sign up to +-40, against a naive double computation, every dim */
  opd_tensor *x = mk(OPD_FLOAT32, SHAPE(3, 37, 5), NULL);
  float *p = opd_tensor_data(x);
  for (int i = 0; i < 555; i++) p[i] = (float)(((i * 7919) % 801) - 400) / 10;
  for (int d = 0; d < 3; d++) check_softmax(x, d, 2e-6);
  /* a permuted view equals the naive result on its logical values */
  opd_tensor *perm = view(x, 3, (int64_t[]){5, 3, 37}, (int64_t[]){1, 185, 5}, 0);
  opd_tensor *cont = contiguous(perm);
  for (int d = 0; d < 3; d++) {
    check_softmax(perm, d, 2e-6);
    opd_tensor *a, *b;
    ck_assert_int_eq(call("aten::_softmax", &a, 3, T(perm), I(d), B(false)), 0);
    ck_assert_int_eq(call("aten::_softmax", &b, 3, T(cont), I(d), B(false)), 0);
    same(a, b, false, 1e-6);
    release(2, a, b);
  }
  /* transposed rows, more than one gathered group of them; float16 too */
  opd_tensor *tb = mk(OPD_FLOAT32, SHAPE(30, 40), NULL);
  for (int i = 0; i < 1200; i++) ((float *)opd_tensor_data(tb))[i] = (float)((i * 37) % 101) / 9;
  opd_tensor *tt = view(tb, 2, (int64_t[]){40, 30}, (int64_t[]){1, 40}, 0);
  check_softmax(tt, 1, 2e-6);
  check_softmax(tt, 0, 2e-6);
  opd_tensor *hb = mk(OPD_FLOAT16, SHAPE(6, 20), NULL);
  for (int i = 0; i < 120; i++)
    ((uint16_t *)opd_tensor_data(hb))[i] = opd_float_to_half((float)((i * 7) % 13) / 4);
  opd_tensor *ht = view(hb, 2, (int64_t[]){20, 6}, (int64_t[]){1, 20}, 0);
  check_softmax(ht, 1, 2e-3);
  check_softmax(ht, 0, 2e-3);
  release(4, tb, tt, hb, ht);
  /* a long row (vector body and tail), and a wide strip of columns */
  opd_tensor *row = mk(OPD_FLOAT32, SHAPE(2, 1000), NULL);
  for (int i = 0; i < 2000; i++) ((float *)opd_tensor_data(row))[i] = (float)((i * 13) % 97) / 7;
  check_softmax(row, 1, 2e-6);
  check_softmax(row, 0, 2e-6);
  /* rows sum to 1 */
  opd_tensor *r;
  ck_assert_int_eq(call("aten::_softmax", &r, 3, T(row), I(1), B(false)), 0);
  for (int o = 0; o < 2; o++) {
    double s = 0;
    for (int j = 0; j < 1000; j++) s += at(r, o * 1000 + j);
    ck_assert_double_eq_tol(s, 1, 1e-5);
  }
  opd_tensor_release(r);
  /* float64 to 1e-12; float16 and bfloat16 through float */
  opd_tensor *d = mk(OPD_FLOAT64, SHAPE(4, 6), NULL);
  for (int i = 0; i < 24; i++) ((double *)opd_tensor_data(d))[i] = sin(i) * 30;
  for (int k = 0; k < 2; k++) check_softmax(d, k, 1e-12);
  opd_tensor *dt = view(d, 2, (int64_t[]){6, 4}, (int64_t[]){1, 6}, 0);
  for (int k = 0; k < 2; k++) check_softmax(dt, k, 1e-12);
  opd_tensor *h = mk(OPD_FLOAT16, SHAPE(2, 3), VALS(0, 0, 0, 1, 2, 3));
  ck_assert_int_eq(call("aten::_softmax", &r, 3, T(h), I(1), B(false)), 0);
  expect_tol(r, OPD_FLOAT16, SHAPE(2, 3),
             VALS(1.0 / 3, 1.0 / 3, 1.0 / 3, 0.09003057, 0.24472847, 0.66524096), 1e-3);
  opd_tensor_release(r);
  opd_tensor *bf = mk(OPD_BFLOAT16, SHAPE(2, 2), VALS(1, 1, 1, 1));
  ck_assert_int_eq(call("aten::_log_softmax", &r, 3, T(bf), I(0), B(false)), 0);
  expect_tol(r, OPD_BFLOAT16, SHAPE(2, 2), VALS(-0.69314718, -0.69314718, -0.69314718, -0.69314718),
             1e-2);
  opd_tensor_release(r);
  release(8, x, perm, cont, row, d, dt, h, bf);
}
END_TEST

START_TEST(test_softmax_int) {
  opd_tensor *x = mk(OPD_FLOAT32, SHAPE(1, 3), VALS(1, 2, 3)), *r;
  ck_assert_int_eq(call("aten::softmax.int", &r, 3, T(x), I(1), NONE), 0);
  expect(r, OPD_FLOAT32, SHAPE(1, 3), VALS(0.09003057, 0.24472847, 0.66524096));
  opd_tensor_release(r);
  ck_assert_int_eq(call("aten::softmax.int", &r, 3, T(x), I(-1), DT(OPD_FLOAT64)), 0);
  expect_tol(r, OPD_FLOAT64, SHAPE(1, 3),
             VALS(0.090030573170380462, 0.24472847105479764, 0.66524095577481771), 1e-12);
  opd_tensor_release(r);
  ck_assert_int_eq(call("aten::softmax.int", &r, 3, T(x), I(0), DT(OPD_FLOAT32)), 0);
  expect(r, OPD_FLOAT32, SHAPE(1, 3), VALS(1, 1, 1));
  opd_tensor_release(r);
  expect_error(call("aten::softmax.int", &r, 3, T(x), I(2), NONE), OPD_EINDEX,
               "Dimension out of range");
  release(1, x);
}
END_TEST

/* The vectorized float32 exp against libm's double exp. */
START_TEST(test_softmax_exp) {
  enum { N = 200001 };
  for (int k = 0; k < N; k++) {
    float x = (float)(-86.5 + 175.2 * k / (N - 1));
    double e = exp((double)x), a = opd__softmax_exp_f32(x);
    ck_assert_msg(fabs(a - e) <= 2.5e-7 * e, "exp(%.9g) = %.9g, expected %.9g", x, a, e);
  }
  /* around the edges: flushed to 0 below -86.6, +inf past log(FLT_MAX) */
  ck_assert(opd__softmax_exp_f32(-86.7f) == 0);
  ck_assert(opd__softmax_exp_f32(-1e30f) == 0);
  ck_assert(opd__softmax_exp_f32(-INFINITY) == 0);
  ck_assert(fabs(opd__softmax_exp_f32(88.72f) - exp(88.72f)) <= 2.5e-7 * exp(88.72f));
  ck_assert(isinf(opd__softmax_exp_f32(88.73f)));
  ck_assert(isinf(opd__softmax_exp_f32(1e30f)));
  ck_assert(isinf(opd__softmax_exp_f32(INFINITY)));
  ck_assert(isnan(opd__softmax_exp_f32(NAN)));
  ck_assert(isnan(opd__softmax_exp_f32(-NAN)));
  ck_assert(opd__softmax_exp_f32(0) == 1);
  ck_assert(opd__softmax_exp_f32(-0.0f) == 1);
  /* the softmax loops' exp, for x <= 0 and NaN: the same bits, over every 997th negative
   * float, the zeros, the infinity and NaNs of both signs */
  uint64_t differ = 0, first = 0;
  for (uint64_t b = 0x80000000u; b <= 0xffffffffu; b += 997) {
    uint32_t bits = (uint32_t)b;
    float x, g, w;
    memcpy(&x, &bits, sizeof x);
    g = opd__softmax_exp_nonpos_f32(x);
    w = opd__softmax_exp_f32(x);
    if (memcmp(&g, &w, sizeof g) != 0 && differ++ == 0) first = b;
  }
  ck_assert_msg(differ == 0, "%llu inputs differ, the first of bits 0x%llx",
                (unsigned long long)differ, (unsigned long long)first);
  const float edges[] = {0.0f, -0.0f, -INFINITY, NAN, -NAN, -86.6f, -86.7f, -FLT_MIN};
  for (size_t k = 0; k < sizeof edges / sizeof *edges; k++) {
    float g = opd__softmax_exp_nonpos_f32(edges[k]), w = opd__softmax_exp_f32(edges[k]);
    ck_assert(memcmp(&g, &w, sizeof g) == 0);
  }
}
END_TEST

/* ---- layer norm ---- */

/* Naive double layer norm of t over its last `nn` dims. */
static void naive_layer_norm(const opd_tensor *t, int nn, const opd_tensor *w, const opd_tensor *b,
                             double eps, double *out, double *mean, double *rstd) {
  int64_t cols = 1;
  for (int d = t->ndim - nn; d < t->ndim; d++) cols *= opd_tensor_sizes(t)[d];
  int64_t rows = t->numel / cols;
  for (int64_t r = 0; r < rows; r++) {
    double s = 0, v = 0;
    for (int64_t j = 0; j < cols; j++) s += at(t, r * cols + j);
    double m = s / (double)cols;
    for (int64_t j = 0; j < cols; j++) v += pow(at(t, r * cols + j) - m, 2);
    double rs = 1 / sqrt(v / (double)cols + eps);
    for (int64_t j = 0; j < cols; j++)
      out[r * cols + j] = (at(t, r * cols + j) - m) * rs * (w ? at(w, j) : 1) + (b ? at(b, j) : 0);
    mean[r] = m;
    rstd[r] = rs;
  }
}

START_TEST(test_layer_norm) {
  opd_tensor *x = mk(OPD_FLOAT32, SHAPE(3, 2, 4), NULL);
  for (int i = 0; i < 24; i++) ((float *)opd_tensor_data(x))[i] = (float)(4 + sin(i * 1.7) * 1.5);
  opd_tensor *w = mk(OPD_FLOAT32, SHAPE(2, 4), VALS(1, -2, 0.5, 3, 1, 1, -1, 0.25));
  opd_tensor *b = mk(OPD_FLOAT32, SHAPE(2, 4), VALS(0, 1, 2, 3, -1, -2, -3, 0.5));
  double out[24], mean[6], rstd[6];
  opd_tensor *r, *res[3];
  /* two normalized dims, affine */
  naive_layer_norm(x, 2, w, b, 1e-5, out, mean, rstd);
  ck_assert_int_eq(call("aten::layer_norm", &r, 6, T(x), L(2, 4), T(w), T(b), D(1e-5), B(true)), 0);
  expect_tol(r, OPD_FLOAT32, SHAPE(3, 2, 4), out, 2e-6);
  opd_tensor_release(r);
  ck_assert_int_eq(call3("aten::native_layer_norm", res, 5, T(x), L(2, 4), T(w), T(b), D(1e-5)), 0);
  expect_tol(res[0], OPD_FLOAT32, SHAPE(3, 2, 4), out, 2e-6);
  expect_tol(res[1], OPD_FLOAT32, SHAPE(3, 1, 1), mean, 1e-6);
  expect_tol(res[2], OPD_FLOAT32, SHAPE(3, 1, 1), rstd, 1e-6);
  release(3, res[0], res[1], res[2]);
  /* one dim, no affine, a larger eps; weight only */
  naive_layer_norm(x, 1, NULL, NULL, 1e-3, out, mean, rstd);
  ck_assert_int_eq(call("aten::layer_norm", &r, 6, T(x), L(4), NONE, NONE, D(1e-3), B(true)), 0);
  expect_tol(r, OPD_FLOAT32, SHAPE(3, 2, 4), out, 2e-6);
  opd_tensor_release(r);
  opd_tensor *w1 = mk(OPD_FLOAT32, SHAPE(4), VALS(2, 0, -1, 0.5));
  naive_layer_norm(x, 1, w1, NULL, 1e-5, out, mean, rstd);
  ck_assert_int_eq(call("aten::layer_norm", &r, 6, T(x), L(4), T(w1), NONE, D(1e-5), B(true)), 0);
  expect_tol(r, OPD_FLOAT32, SHAPE(3, 2, 4), out, 2e-6);
  opd_tensor_release(r);
  /* strided input (transposed) and weight (a slice) equal the naive result */
  opd_tensor *base = mk(OPD_FLOAT64, SHAPE(5, 3), NULL);
  for (int i = 0; i < 15; i++) ((double *)opd_tensor_data(base))[i] = cos(i) * 3 + 10;
  opd_tensor *tr = view(base, 2, (int64_t[]){3, 5}, (int64_t[]){1, 3}, 0);
  opd_tensor *wb = mk(OPD_FLOAT64, SHAPE(10), VALS(1, 9, 2, 9, 3, 9, 4, 9, 5, 9));
  opd_tensor *ws = view(wb, 1, (int64_t[]){5}, (int64_t[]){2}, 0);
  opd_tensor *b5 = mk(OPD_FLOAT64, SHAPE(5), VALS(0.5, 0, -0.5, 1, 2));
  naive_layer_norm(tr, 1, ws, b5, 1e-5, out, mean, rstd);
  ck_assert_int_eq(call("aten::layer_norm", &r, 6, T(tr), L(5), T(ws), T(b5), D(1e-5), B(false)),
                   0);
  expect_tol(r, OPD_FLOAT64, SHAPE(3, 5), out, 1e-12);
  opd_tensor_release(r);
  /* constant rows: output == bias exactly, rstd = 1 / sqrt(eps) */
  opd_tensor *c = mk(OPD_FLOAT32, SHAPE(2, 4), VALS(2.5, 2.5, 2.5, 2.5, -3, -3, -3, -3));
  opd_tensor *b4 = mk(OPD_FLOAT32, SHAPE(4), VALS(1, 2, 3, 4));
  ck_assert_int_eq(call3("aten::native_layer_norm", res, 5, T(c), L(4), T(w1), T(b4), D(1e-5)), 0);
  expect_tol(res[0], OPD_FLOAT32, SHAPE(2, 4), VALS(1, 2, 3, 4, 1, 2, 3, 4), 0);
  expect(res[1], OPD_FLOAT32, SHAPE(2, 1), VALS(2.5, -3));
  expect(res[2], OPD_FLOAT32, SHAPE(2, 1), VALS(1 / sqrt(1e-5), 1 / sqrt(1e-5)));
  release(3, res[0], res[1], res[2]);
  /* data far from 0: no cancellation */
  opd_tensor *far = mk(OPD_FLOAT32, SHAPE(1, 4), VALS(10000, 10001, 10002, 10003));
  ck_assert_int_eq(call("aten::layer_norm", &r, 6, T(far), L(4), NONE, NONE, D(0), B(true)), 0);
  expect_tol(r, OPD_FLOAT32, SHAPE(1, 4),
             VALS(-1.5 / sqrt(1.25), -0.5 / sqrt(1.25), 0.5 / sqrt(1.25), 1.5 / sqrt(1.25)), 1e-6);
  opd_tensor_release(r);
  /* long float32 rows (computed in float lanes, [Note: Layer norm on the CPU]) far from 0:
   * within the conformance bound 4 (K + 4) u max(1, |y|) of the double reference */
  enum { K = 1003 };
  opd_tensor *lx = mk(OPD_FLOAT32, SHAPE(3, K), NULL), *lw = mk(OPD_FLOAT32, SHAPE(K), NULL);
  opd_tensor *lb = mk(OPD_FLOAT32, SHAPE(K), NULL);
  for (int i = 0; i < 3 * K; i++)
    ((float *)opd_tensor_data(lx))[i] = (float)(1000 * (i / K) + 300 + sin(i * 0.37) * 2);
  for (int i = 0; i < K; i++) {
    ((float *)opd_tensor_data(lw))[i] = (float)(1 + cos(i) / 2);
    ((float *)opd_tensor_data(lb))[i] = (float)(sin(i * 3.1) / 4);
  }
  static double lout[3 * K], lmean[3], lrstd[3];
  naive_layer_norm(lx, 1, lw, lb, 1e-5, lout, lmean, lrstd);
  double ymax = 1;
  for (int i = 0; i < 3 * K; i++) ymax = fabs(lout[i]) > ymax ? fabs(lout[i]) : ymax;
  ck_assert_int_eq(call3("aten::native_layer_norm", res, 5, T(lx), L(K), T(lw), T(lb), D(1e-5)), 0);
  expect_tol(res[0], OPD_FLOAT32, SHAPE(3, K), lout, 4.0 * (K + 4) * 0x1p-24 * ymax);
  expect_shape(res[1], OPD_FLOAT32, SHAPE(3, 1));
  for (int r = 0; r < 3; r++) {
    close_to(at(res[1], r), lmean[r], 1e-6 * lmean[r], r);
    close_to(at(res[2], r), lrstd[r], 1e-5 * lrstd[r], r);
  }
  release(6, res[0], res[1], res[2], lx, lw, lb);
  /* a 1-d input; an empty batch */
  opd_tensor *v = mk(OPD_FLOAT32, SHAPE(2), VALS(-1, 1));
  ck_assert_int_eq(call("aten::layer_norm", &r, 6, T(v), L(2), NONE, NONE, D(0), B(true)), 0);
  expect(r, OPD_FLOAT32, SHAPE(2), VALS(-1, 1));
  opd_tensor_release(r);
  opd_tensor *e = mk(OPD_FLOAT32, SHAPE(0, 4), NULL);
  ck_assert_int_eq(call3("aten::native_layer_norm", res, 5, T(e), L(4), NONE, NONE, D(1e-5)), 0);
  expect_shape(res[0], OPD_FLOAT32, SHAPE(0, 4));
  expect_shape(res[1], OPD_FLOAT32, SHAPE(0, 1));
  release(3, res[0], res[1], res[2]);
  /* empty groups: mean 0, rstd NaN (walking a group must not divide by its size 0) */
  opd_tensor *g = mk(OPD_FLOAT32, SHAPE(2, 0), NULL);
  ck_assert_int_eq(call3("aten::native_layer_norm", res, 5, T(g), L(0), NONE, NONE, D(1e-5)), 0);
  expect_shape(res[0], OPD_FLOAT32, SHAPE(2, 0));
  expect(res[1], OPD_FLOAT32, SHAPE(2, 1), VALS(0, 0));
  expect(res[2], OPD_FLOAT32, SHAPE(2, 1), VALS(NAN, NAN));
  release(4, res[0], res[1], res[2], g);
  /* errors */
  expect_error(call("aten::layer_norm", &r, 6, T(x), L(3), NONE, NONE, D(1e-5), B(true)),
               OPD_EINVAL,
               "Given normalized_shape=[3], expected input with shape [*, 3], but got input of "
               "size[3, 2, 4]");
  expect_error(call("aten::layer_norm", &r, 6, T(v), L(1, 2), NONE, NONE, D(1e-5), B(true)),
               OPD_EINVAL,
               "Given normalized_shape=[1, 2], expected input with shape [*, 1, 2], but got input "
               "of size[2]");
  expect_error(call("aten::layer_norm", &r, 6, T(x), L(4), T(w), NONE, D(1e-5), B(true)),
               OPD_EINVAL,
               "Expected weight to be of same shape as normalized_shape, but got weight of shape "
               "[2, 4] and normalized_shape = [4]");
  expect_error(call("aten::layer_norm", &r, 6, T(x), L(4), NONE, T(w), D(1e-5), B(true)),
               OPD_EINVAL, "Expected bias to be of same shape as normalized_shape");
  expect_error(call("aten::layer_norm", &r, 6, T(x), L0, NONE, NONE, D(1e-5), B(true)), OPD_EINVAL,
               "Expected normalized_shape to be at least 1-dimensional");
  expect_error(call("aten::layer_norm", &r, 6, T(tr), L(5), T(w1), NONE, D(1e-5), B(true)),
               OPD_EINVAL, "Expected weight to be of same shape");
  opd_tensor *w5 = mk(OPD_FLOAT32, SHAPE(5), NULL);
  expect_error(call("aten::layer_norm", &r, 6, T(tr), L(5), T(w5), NONE, D(1e-5), B(true)),
               OPD_EINVAL, "expected scalar type Double but found Float");
  opd_tensor *i = mk(OPD_INT64, SHAPE(2, 2), NULL);
  expect_error(call("aten::layer_norm", &r, 6, T(i), L(2), NONE, NONE, D(1e-5), B(true)),
               OPD_EINVAL, "\"LayerNormKernelImpl\" not implemented for 'Long'");
  release(15, x, w, b, w1, base, tr, wb, ws, b5, c, b4, far, v, e, w5);
  opd_tensor_release(i);
}
END_TEST

/* ---- meta ---- */

START_TEST(test_meta) {
  opd_tensor *x = mk_meta(OPD_FLOAT32, SHAPE(2, 3, 4)), *r, *res[3];
  ck_assert_int_eq(call("aten::sum.dim_IntList", &r, 4, T(x), L(-1, 0), B(true), NONE), 0);
  expect_shape(r, OPD_FLOAT32, SHAPE(1, 3, 1));
  ck_assert(opd_tensor_is_meta(r));
  opd_tensor_release(r);
  opd_tensor *i = mk_meta(OPD_INT16, SHAPE(5, 2));
  ck_assert_int_eq(call("aten::sum", &r, 2, T(i), NONE), 0);
  expect_shape(r, OPD_INT64, SHAPE());
  ck_assert(opd_tensor_is_meta(r));
  opd_tensor_release(r);
  ck_assert_int_eq(call("aten::mean.dim", &r, 4, T(x), L(1), B(false), DT(OPD_FLOAT64)), 0);
  expect_shape(r, OPD_FLOAT64, SHAPE(2, 4));
  opd_tensor_release(r);
  expect_error(call("aten::mean.dim", &r, 4, T(i), L(1), B(false), NONE), OPD_EINVAL, "Got: Short");
  ck_assert_int_eq(call("aten::amax", &r, 3, T(i), L0, B(true)), 0);
  expect_shape(r, OPD_INT16, SHAPE(1, 1));
  opd_tensor_release(r);
  opd_tensor *e = mk_meta(OPD_FLOAT32, SHAPE(0, 3));
  expect_error(call("aten::amax", &r, 3, T(e), L(0), B(false)), OPD_EINDEX,
               "Expected reduction dim 0 to have non-zero size");
  ck_assert_int_eq(call("aten::argmax", &r, 3, T(x), I(1), B(true)), 0);
  expect_shape(r, OPD_INT64, SHAPE(2, 1, 4));
  opd_tensor_release(r);
  expect_error(call("aten::argmax", &r, 3, T(e), NONE, B(false)), OPD_EINDEX,
               "Expected reduction dim to be specified");
  ck_assert_int_eq(call("aten::_softmax", &r, 3, T(x), I(1), B(false)), 0);
  expect_shape(r, OPD_FLOAT32, SHAPE(2, 3, 4));
  opd_tensor_release(r);
  /* half_to_float: a Half input gives float32 (the CUDA rule); anything else is refused */
  opd_tensor *h = mk_meta(OPD_FLOAT16, SHAPE(2, 3));
  ck_assert_int_eq(call("aten::_log_softmax", &r, 3, T(h), I(-1), B(true)), 0);
  expect_shape(r, OPD_FLOAT32, SHAPE(2, 3));
  opd_tensor_release(r);
  expect_error(call("aten::_softmax", &r, 3, T(x), I(1), B(true)), OPD_EINVAL,
               "half to float conversion is not supported on CPU");
  ck_assert_int_eq(call("aten::softmax.int", &r, 3, T(x), I(0), NONE), 0);
  expect_shape(r, OPD_FLOAT32, SHAPE(2, 3, 4));
  ck_assert(opd_tensor_is_meta(r));
  opd_tensor_release(r);
  opd_tensor *w = mk_meta(OPD_FLOAT32, SHAPE(3, 4));
  ck_assert_int_eq(call3("aten::native_layer_norm", res, 5, T(x), L(3, 4), T(w), NONE, D(1e-5)), 0);
  expect_shape(res[0], OPD_FLOAT32, SHAPE(2, 3, 4));
  expect_shape(res[1], OPD_FLOAT32, SHAPE(2, 1, 1));
  expect_shape(res[2], OPD_FLOAT32, SHAPE(2, 1, 1));
  ck_assert(opd_tensor_is_meta(res[2]));
  release(3, res[0], res[1], res[2]);
  ck_assert_int_eq(call("aten::layer_norm", &r, 6, T(x), L(4), NONE, NONE, D(1e-5), B(true)), 0);
  expect_shape(r, OPD_FLOAT32, SHAPE(2, 3, 4));
  opd_tensor_release(r);
  expect_error(call("aten::layer_norm", &r, 6, T(x), L(3), NONE, NONE, D(1e-5), B(true)),
               OPD_EINVAL, "Given normalized_shape=[3]");
  /* mixed devices */
  opd_tensor *wc = mk(OPD_FLOAT32, SHAPE(4), NULL);
  expect_error(call("aten::layer_norm", &r, 6, T(x), L(4), T(wc), NONE, D(1e-5), B(true)),
               OPD_EINVAL, "Expected all tensors to be on the same device");
  release(6, x, i, e, h, w, wc);
}
END_TEST

/* ---- the parallel path ---- */

START_TEST(test_parallel_matches_serial) {
  /* large enough for every schedule to split: rows (600 x 300 over dim 1), columns (over dim
   * 0), one output (2^18 elements), softmax rows and columns, layer norm */
  opd_tensor *x = mk(OPD_FLOAT32, SHAPE(600, 300), NULL);
  float *p = opd_tensor_data(x);
  for (int i = 0; i < 600 * 300; i++) p[i] = (float)sin(i * 0.013) * 5 + (float)(i % 3);
  const int64_t n = 1 << 18;
  opd_tensor *big = mk(OPD_FLOAT32, 1, &n, NULL);
  for (int64_t i = 0; i < n; i++) ((float *)opd_tensor_data(big))[i] = (float)cos(i * 0.7);
  opd_tensor *r[2][10];
  for (int k = 0; k < 2; k++) {
    opd__parallel_set_threads(k == 0 ? 2 : 1);
    opd_tensor **o = r[k];
    ck_assert_int_eq(call("aten::sum.dim_IntList", &o[0], 4, T(x), L(1), B(false), NONE), 0);
    ck_assert_int_eq(call("aten::sum.dim_IntList", &o[1], 4, T(x), L(0), B(false), NONE), 0);
    ck_assert_int_eq(call("aten::sum", &o[2], 2, T(big), NONE), 0);
    ck_assert_int_eq(call("aten::mean.dim", &o[3], 4, T(x), L(0), B(true), NONE), 0);
    ck_assert_int_eq(call("aten::amax", &o[4], 3, T(big), L0, B(false)), 0);
    ck_assert_int_eq(call("aten::argmax", &o[5], 3, T(x), I(1), B(false)), 0);
    ck_assert_int_eq(call("aten::_softmax", &o[6], 3, T(x), I(1), B(false)), 0);
    ck_assert_int_eq(call("aten::_log_softmax", &o[7], 3, T(x), I(0), B(false)), 0);
    ck_assert_int_eq(call("aten::layer_norm", &o[8], 6, T(x), L(300), NONE, NONE, D(1e-5), B(true)),
                     0);
    ck_assert_int_eq(call("aten::argmax", &o[9], 3, T(big), NONE, B(false)), 0);
  }
  opd__parallel_set_threads(0);
  for (int j = 0; j < 10; j++) {
    same(r[0][j], r[1][j], true, 0);
    release(2, r[0][j], r[1][j]);
  }
  release(2, x, big);
}
END_TEST

Suite *opd_test_reduce_suite(void) {
  Suite *s = suite_create("reduce");
  TCase *tc = tcase_create("reduce");
  tcase_add_checked_fixture(tc, setup, NULL);
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, test_sum_values);
  tcase_add_test(tc, test_sum_dtypes);
  tcase_add_test(tc, test_sum_empty_and_errors);
  tcase_add_test(tc, test_mean);
  tcase_add_test(tc, test_amax);
  tcase_add_test(tc, test_argmax);
  tcase_add_test(tc, test_strided_inputs);
  tcase_add_test(tc, test_schedules);
  tcase_add_test(tc, test_split_other_ops);
  tcase_add_test(tc, test_softmax_values);
  tcase_add_test(tc, test_softmax_layouts);
  tcase_add_test(tc, test_softmax_int);
  tcase_add_test(tc, test_softmax_exp);
  tcase_add_test(tc, test_layer_norm);
  tcase_add_test(tc, test_meta);
  tcase_add_test(tc, test_parallel_matches_serial);
  suite_add_tcase(s, tc);
  return s;
}

/* test_checked.c: overflow-checked arithmetic (opd/checked.h, [Note: Checked arithmetic]) and
 * the operators that turn a request's integers into sizes, strides and offsets, called boxed
 * through the dispatcher as the daemon calls them: the hostile cases found by a review (as_strided
 * past its storage, slice with a step near INT64_MAX) and the same classes found elsewhere
 * (views of empty tensors at huge offsets, new strides that overflow, expanded indices,
 * factories with overflowing sizes, doubles that do not fit an int64). Each must end in a
 * clear error and never touch memory outside a storage: the ASan build checks the accesses
 * and UBSan the arithmetic. docs/SECURITY.md lists the entry points these cover. */
#include <check.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "opd/checked.h"
#include "opd/dispatcher.h"
#include "opd/error.h"
#include "opd/kernels.h"
#include "opd/tensor.h"
#include "boxed_call.h"
#include "tensor_helpers.h"

Suite *opd_test_checked_suite(void);

#define P62 (INT64_C(1) << 62)

static const opd_device cpu = {OPD_DEVICE_CPU, -1};
static const opd_device meta = {OPD_DEVICE_META, -1};

/* The last call failed with OPD_EINVAL (or `code`) and a message containing `msg`. */
static void expect_error(int rc, int code, const char *msg) {
  ck_assert_int_eq(rc, code);
  ck_assert_msg(strstr(opd_last_error(), msg) != NULL, "message '%s' lacks '%s'", opd_last_error(),
                msg);
}

/* ---- the primitives ---- */

START_TEST(test_primitives) {
  int64_t r;
  ck_assert(!opd_ckd_add(&r, INT64_MAX - 1, 1));
  ck_assert_int_eq(r, INT64_MAX);
  ck_assert(opd_ckd_add(&r, INT64_MAX, 1));
  ck_assert(opd_ckd_sub(&r, INT64_MIN, 1));
  ck_assert(!opd_ckd_sub(&r, 0, INT64_MAX));
  ck_assert_int_eq(r, -INT64_MAX);
  ck_assert(opd_ckd_mul(&r, INT64_MAX, 2));
  ck_assert(opd_ckd_mul(&r, INT64_MIN, -1));
  ck_assert(opd_ckd_mul(&r, INT64_C(1) << 32, INT64_C(1) << 31));
  ck_assert(!opd_ckd_mul(&r, INT64_C(1) << 31, INT64_C(1) << 31));
  ck_assert_int_eq(r, P62);
  ck_assert(!opd_ckd_mul(&r, 0, INT64_MAX));
  ck_assert_int_eq(r, 0);
  /* the result's type decides: a negative value does not fit a size_t */
  size_t z;
  ck_assert(opd_ckd_add(&z, (int64_t)-2, (int64_t)1));
  ck_assert(!opd_ckd_mul(&z, (int64_t)3, (size_t)4));
  ck_assert_uint_eq(z, 12);
}
END_TEST

/* ---- element and byte counts ---- */

START_TEST(test_numel) {
  int64_t n = -1;
  ck_assert_int_eq(opd_ckd_numel(NULL, 0, &n, "t"), 0);
  ck_assert_int_eq(n, 1); /* a 0-d tensor has one element */
  ck_assert_int_eq(opd_ckd_numel((int64_t[]){INT64_MAX}, 1, &n, "t"), 0);
  ck_assert_int_eq(n, INT64_MAX);
  ck_assert_int_eq(opd_ckd_numel((int64_t[]){INT64_C(1) << 31, INT64_C(1) << 31, 1}, 3, &n, "t"),
                   0);
  ck_assert_int_eq(n, P62);
  /* a zero anywhere makes the tensor empty, whatever the other sizes multiply to */
  ck_assert_int_eq(opd_ckd_numel((int64_t[]){INT64_MAX, INT64_MAX, 0}, 3, &n, "t"), 0);
  ck_assert_int_eq(n, 0);
  expect_error(opd_ckd_numel((int64_t[]){INT64_MAX, 2}, 2, &n, "aten::full"), OPD_EINVAL,
               "aten::full: the shape's element count overflows int64");
  expect_error(opd_ckd_numel((int64_t[]){INT64_C(1) << 32, INT64_C(1) << 31}, 2, &n, "t"),
               OPD_EINVAL, "overflows int64");
  expect_error(opd_ckd_numel((int64_t[]){3, -1}, 2, &n, "upload"), OPD_EINVAL,
               "upload: negative dimension -1 at index 1");
  /* negative before empty: [0, -1] is not an empty shape */
  expect_error(opd_ckd_numel((int64_t[]){0, -1}, 2, &n, "t"), OPD_EINVAL, "negative dimension");
  int64_t many[OPD_MAX_DIMS + 1];
  for (int d = 0; d <= OPD_MAX_DIMS; d++) many[d] = 1;
  ck_assert_int_eq(opd_ckd_numel(many, OPD_MAX_DIMS, &n, "t"), 0);
  expect_error(opd_ckd_numel(many, OPD_MAX_DIMS + 1, &n, "t"), OPD_EINVAL,
               "65 dimensions, at most 64");
  expect_error(opd_ckd_numel((int64_t[]){-5}, 1, &n, NULL), OPD_EINVAL, "tensor: negative");
}
END_TEST

START_TEST(test_nbytes) {
  int64_t b = -1;
  ck_assert_int_eq(opd_ckd_nbytes(0, 8, &b, "t"), 0);
  ck_assert_int_eq(b, 0);
  ck_assert_int_eq(opd_ckd_nbytes(INT64_MAX / 8, 8, &b, "t"), 0);
  ck_assert_int_eq(b, INT64_MAX / 8 * 8);
  expect_error(opd_ckd_nbytes(INT64_MAX / 8 + 1, 8, &b, "download"), OPD_EINVAL,
               "download: 1152921504606846976 elements of 8 bytes overflow int64");
  expect_error(opd_ckd_nbytes(-1, 1, &b, "t"), OPD_EINVAL, "overflow");
  expect_error(opd_ckd_nbytes(1, (size_t)INT64_MAX + 1, &b, "t"), OPD_EINVAL, "overflow");
  ck_assert_int_eq(opd_ckd_shape_nbytes((int64_t[]){2, 3}, 2, 4, &b, "t"), 0);
  ck_assert_int_eq(b, 24);
  ck_assert_int_eq(opd_ckd_shape_nbytes((int64_t[]){P62, 0}, 2, 8, &b, "t"), 0);
  ck_assert_int_eq(b, 0);
  expect_error(opd_ckd_shape_nbytes((int64_t[]){P62, 2}, 2, 1, &b, "t"), OPD_EINVAL,
               "the shape's element count overflows int64");
  expect_error(opd_ckd_shape_nbytes((int64_t[]){P62}, 1, 2, &b, "t"), OPD_EINVAL,
               "4611686018427387904 elements of 2 bytes overflow int64");
  expect_error(opd_ckd_shape_nbytes((int64_t[]){2, -3}, 2, 4, &b, "t"), OPD_EINVAL,
               "negative dimension -3");
}
END_TEST

/* ---- geometry and bounds ---- */

START_TEST(test_geometry) {
  int64_t numel = -1, extent = -1;
  /* [2, 3] contiguous: the farthest element is 5 */
  ck_assert_int_eq(
      opd_ckd_geometry((int64_t[]){2, 3}, (int64_t[]){3, 1}, 2, 4, &numel, &extent, "t"), 0);
  ck_assert_int_eq(numel, 6);
  ck_assert_int_eq(extent, 6);
  /* expanded: 12 elements over 3 */
  ck_assert_int_eq(
      opd_ckd_geometry((int64_t[]){4, 3}, (int64_t[]){0, 1}, 2, 4, &numel, &extent, "t"), 0);
  ck_assert_int_eq(numel, 12);
  ck_assert_int_eq(extent, 3);
  /* empty: no element, whatever the strides */
  ck_assert_int_eq(opd_ckd_geometry((int64_t[]){0, INT64_MAX}, (int64_t[]){INT64_MAX, INT64_MAX}, 2,
                                    8, &numel, &extent, "t"),
                   0);
  ck_assert_int_eq(numel, 0);
  ck_assert_int_eq(extent, 0);
  /* a size-1 dimension's stride reaches nothing */
  ck_assert_int_eq(
      opd_ckd_geometry((int64_t[]){1}, (int64_t[]){INT64_MAX}, 1, 8, &numel, &extent, "t"), 0);
  ck_assert_int_eq(extent, 1);
  /* a 0-d tensor is one element */
  ck_assert_int_eq(opd_ckd_geometry(NULL, NULL, 0, 8, &numel, &extent, "t"), 0);
  ck_assert_int_eq(numel, 1);
  ck_assert_int_eq(extent, 1);
  /* [2] with stride 2^62 - 1 reaches element 2^62 - 1: fine for bytes, not floats */
  ck_assert_int_eq(
      opd_ckd_geometry((int64_t[]){2}, (int64_t[]){P62 - 1}, 1, 1, &numel, &extent, "t"), 0);
  ck_assert_int_eq(extent, P62);
  expect_error(
      opd_ckd_geometry((int64_t[]){2}, (int64_t[]){P62 - 1}, 1, 4, &numel, &extent, "as_strided"),
      OPD_EINVAL, "as_strided: 4611686018427387904 elements of 4 bytes overflow int64");
  /* each span fits, their sum does not */
  expect_error(opd_ckd_geometry((int64_t[]){3, 3}, (int64_t[]){INT64_MAX / 3, INT64_MAX / 3}, 2, 1,
                                &numel, &extent, "t"),
               OPD_EINVAL, "the strides reach past int64 elements");
  expect_error(opd_ckd_geometry((int64_t[]){3}, (int64_t[]){INT64_MAX}, 1, 1, &numel, &extent, "t"),
               OPD_EINVAL, "the strides reach past int64 elements");
  /* the last element itself must be addressable: extent = last + 1 */
  expect_error(opd_ckd_geometry((int64_t[]){2}, (int64_t[]){INT64_MAX}, 1, 1, &numel, &extent, "t"),
               OPD_EINVAL, "the strides reach past int64 elements");
  expect_error(opd_ckd_geometry((int64_t[]){2, 2}, (int64_t[]){1, -1}, 2, 4, &numel, &extent, "t"),
               OPD_EINVAL, "negative stride -1 at index 1");
  expect_error(opd_ckd_geometry((int64_t[]){-2}, (int64_t[]){1}, 1, 4, &numel, &extent, "t"),
               OPD_EINVAL, "negative dimension -2 at index 0");
}
END_TEST

START_TEST(test_view_bounds) {
  /* 3 floats: 12 bytes */
  ck_assert_int_eq(opd_ckd_view_bounds(0, 3, 4, 12, "v"), 0);
  ck_assert_int_eq(opd_ckd_view_bounds(1, 2, 4, 12, "v"), 0);
  expect_error(opd_ckd_view_bounds(1, 3, 4, 12, "v"), OPD_EINVAL,
               "v: a view of 3 elements at offset 1 is out of bounds for a storage of 12 bytes");
  /* 19 elements at 2^62 - 16 wrap to a small byte count in uint64 */
  expect_error(opd_ckd_view_bounds(P62 - 16, 19, 4, 12, "v"), OPD_EINVAL, "out of bounds");
  expect_error(opd_ckd_view_bounds(INT64_MAX, 1, 1, UINT64_MAX, "v"), OPD_EINVAL, "out of bounds");
  expect_error(opd_ckd_view_bounds(INT64_MAX / 2, INT64_MAX / 2 + 2, 1, UINT64_MAX, "v"),
               OPD_EINVAL, "out of bounds");
  expect_error(opd_ckd_view_bounds(-1, 1, 4, 12, "v"), OPD_EINVAL, "v: negative storage offset -1");
  expect_error(opd_ckd_view_bounds(INT64_MIN, 0, 4, 12, "v"), OPD_EINVAL,
               "negative storage offset");
  expect_error(opd_ckd_view_bounds(0, -1, 4, 12, "v"), OPD_EINVAL, "out of bounds");
  /* an empty view reads nothing: any offset, even in an empty storage */
  ck_assert_int_eq(opd_ckd_view_bounds(INT64_MAX, 0, 8, 0, "v"), 0);
  ck_assert_int_eq(opd_ckd_view_bounds(0, 0, 8, 0, "v"), 0);
  expect_error(opd_ckd_view_bounds(0, 1, 8, 0, "v"), OPD_EINVAL, "out of bounds");
}
END_TEST

START_TEST(test_contiguous_strides) {
  int64_t st[3];
  ck_assert_int_eq(opd_contiguous_strides((int64_t[]){2, 3, 4}, 3, st), 24);
  ck_assert_int_eq(st[0], 12);
  ck_assert_int_eq(st[1], 4);
  ck_assert_int_eq(st[2], 1);
  /* a zero size: no elements, the other strides as if it were 1 */
  ck_assert_int_eq(opd_contiguous_strides((int64_t[]){2, 0, 4}, 3, st), 0);
  ck_assert_int_eq(st[0], 4);
  ck_assert_int_eq(st[1], 4);
  ck_assert_int_eq(opd_contiguous_strides((int64_t[]){P62, 2}, 2, st), -1);
  /* a stride overflows, although a zero makes the tensor empty */
  ck_assert_int_eq(
      opd_contiguous_strides((int64_t[]){0, INT64_C(1) << 32, INT64_C(1) << 32}, 3, st), -1);
  /* only the element count would overflow, and a zero makes it 0 (PyTorch's strides) */
  ck_assert_int_eq(
      opd_contiguous_strides((int64_t[]){INT64_C(1) << 32, INT64_C(1) << 32, 0}, 3, st), 0);
  ck_assert_int_eq(st[0], INT64_C(1) << 32);
  ck_assert_int_eq(st[1], 1);
  ck_assert_int_eq(st[2], 1);
  ck_assert_int_eq(opd_contiguous_strides(NULL, 0, st), 1);
}
END_TEST

/* ---- operators, boxed as the daemon calls them ---- */

static void setup(void) {
  ck_assert_int_eq(opd_kernels_register(), 0);
}

static opd_ivalue ints(int n, const int64_t *v) {
  opd_ivalue iv;
  ck_assert_int_eq(opd_iv_make_int_list(&iv, v, (size_t)n), 0);
  return iv;
}

static int as_strided(opd_tensor *self, int n, const int64_t *size, const int64_t *stride,
                      opd_ivalue offset, opd_tensor **out) {
  return opd_test_call("aten::as_strided",
                       (opd_ivalue[]){T(self), ints(n, size), ints(n, stride), offset}, 4, out);
}

static int slice(opd_tensor *self, int64_t dim, opd_ivalue start, opd_ivalue end, int64_t step,
                 opd_tensor **out) {
  return opd_test_call("aten::slice.Tensor", (opd_ivalue[]){T(self), I(dim), start, end, I(step)},
                       5, out);
}

static int select_int(opd_tensor *self, int64_t dim, int64_t index, opd_tensor **out) {
  return opd_test_call("aten::select.int", (opd_ivalue[]){T(self), I(dim), I(index)}, 3, out);
}

static int expand(opd_tensor *self, int n, const int64_t *size, opd_tensor **out) {
  return opd_test_call("aten::expand", (opd_ivalue[]){T(self), ints(n, size), B(false)}, 3, out);
}

static int view_as(const char *op, opd_tensor *self, int n, const int64_t *size, opd_tensor **out) {
  return opd_test_call(op, (opd_ivalue[]){T(self), ints(n, size)}, 2, out);
}

static int fill(opd_tensor *self, double v) {
  opd_tensor *r;
  int rc = opd_test_call("aten::fill_.Scalar", (opd_ivalue[]){T(self), D(v)}, 2, &r);
  if (rc == 0) opd_tensor_release(r);
  return rc;
}

/* aten::empty_strided(size, stride, dtype, device=device) */
static opd_tensor *empty_strided(int n, const int64_t *size, const int64_t *stride, opd_dtype dt,
                                 opd_device device) {
  opd_tensor *t;
  ck_assert_int_eq(opd_test_call("aten::empty_strided",
                                 (opd_ivalue[]){ints(n, size), ints(n, stride), opd_iv_dtype(dt),
                                                NONE, opd_iv_device(device), NONE},
                                 6, &t),
                   0);
  return t;
}

/* A [3] float CPU tensor 1, 2, 3 in a storage of exactly 12 bytes. */
static opd_tensor *three_floats(void) {
  opd_tensor *t = mk(OPD_FLOAT32, SHAPE(3), VALS(1, 2, 3));
  ck_assert_uint_eq(t->storage->nbytes, 12);
  return t;
}

static void expect_values_kept(const opd_tensor *t) {
  for (int i = 0; i < 3; i++) ck_assert_double_eq(at(t, i), i + 1);
}

/* Issue 12, item 1: views reaching outside their storage, on the CPU and on Meta. */
START_TEST(test_as_strided_outside_storage) {
  opd_tensor *x = three_floats(), *m = mk_meta(OPD_FLOAT32, SHAPE(3)), *v;
  opd_tensor *bases[] = {x, m};
  for (int k = 0; k < 2; k++) {
    /* size [19], stride [1], offset 2^62 - 16: (offset + 19) * 4 wraps to 12 in uint64 */
    expect_error(as_strided(bases[k], SHAPE(19), (int64_t[]){1}, I(P62 - 16), &v), OPD_EINVAL,
                 "Storage size calculation overflowed with sizes=[19] and strides=[1]");
    ck_assert_ptr_null(v);
    /* size [2], stride [2^62 - 1]: the second element's byte offset overflows */
    expect_error(
        as_strided(bases[k], SHAPE(2), (int64_t[]){P62 - 1}, NONE, &v), OPD_EINVAL,
        "Storage size calculation overflowed with sizes=[2] and strides=[4611686018427387903]");
    /* in range of int64 but past the storage: PyTorch's setStorage message */
    expect_error(as_strided(bases[k], SHAPE(2), (int64_t[]){2}, I(1), &v), OPD_EINVAL,
                 "setStorage: sizes [2], strides [2], storage offset 1, and itemsize 4 requiring a "
                 "storage size of 16 are out of bounds for storage of size 12");
    expect_error(as_strided(bases[k], SHAPE(1), (int64_t[]){1}, I(INT64_MAX), &v), OPD_EINVAL,
                 "Storage size calculation overflowed");
  }
  /* nothing was written: fill_ never got a view */
  expect_values_kept(x);
  /* the largest view that fits is accepted, and fill_ writes only inside it */
  ck_assert_int_eq(as_strided(x, SHAPE(2), (int64_t[]){1}, I(1), &v), 0);
  ck_assert_int_eq(fill(v, 7), 0);
  ck_assert_double_eq(at(x, 0), 1);
  ck_assert_double_eq(at(x, 2), 7);
  opd_tensor_release(v);
  opd_tensor_release(x);
  opd_tensor_release(m);
}
END_TEST

START_TEST(test_as_strided_arguments) {
  opd_tensor *x = three_floats(), *v;
  expect_error(as_strided(x, SHAPE(2), (int64_t[]){-1}, I(2), &v), OPD_EINVAL,
               "as_strided: Negative strides are not supported at the moment, got strides: [-1]");
  expect_error(as_strided(x, SHAPE(-1), (int64_t[]){1}, I(0), &v), OPD_EINVAL,
               "negative dimension -1");
  expect_error(as_strided(x, SHAPE(1), (int64_t[]){1}, I(-1), &v), OPD_EINVAL,
               "Tensor: invalid storage offset -1");
  expect_error(opd_test_call("aten::as_strided",
                             (opd_ivalue[]){T(x), ints(SHAPE(1, 1)), ints(SHAPE(1)), NONE}, 4, &v),
               OPD_EINVAL, "mismatch in length of strides and shape");
  /* the element count of a shape that reads few elements overflows */
  expect_error(as_strided(x, SHAPE(INT64_MAX, 2), (int64_t[]){0, 0}, I(0), &v), OPD_EINVAL,
               "element count overflows int64");
  /* an empty view reads nothing and may sit at any offset, as in PyTorch */
  ck_assert_int_eq(as_strided(x, SHAPE(0), (int64_t[]){1}, I(INT64_MAX), &v), 0);
  ck_assert_int_eq(v->numel, 0);
  ck_assert_int_eq(v->storage_offset, INT64_MAX);
  ck_assert_ptr_eq(opd_tensor_data(v), x->storage->data);
  ck_assert_int_eq(fill(v, 9), 0);
  expect_values_kept(x);
  opd_tensor_release(v);
  opd_tensor_release(x);
}
END_TEST

/* Issue 12, item 2: PyTorch's (len + step - 1) / step and stride * step overflow for a step
 * near INT64_MAX; a large step that does not overflow keeps PyTorch's result. */
START_TEST(test_slice_huge_step) {
  opd_tensor *x = three_floats(), *v;
  expect_error(slice(x, 0, NONE, NONE, INT64_MAX, &v), OPD_EINVAL,
               "slice(): step 9223372036854775807 overflows int64 for a dimension of size 3");
  ck_assert_ptr_null(v);
  expect_error(slice(x, 0, I(0), I(INT64_MAX), INT64_MAX - 1, &v), OPD_EINVAL, "overflows int64");
  /* from 1 the length is 2: 2 + (INT64_MAX - 1) - 1 fits, one element */
  ck_assert_int_eq(slice(x, 0, I(1), I(INT64_MAX), INT64_MAX - 1, &v), 0);
  ck_assert_int_eq(opd_tensor_sizes(v)[0], 1);
  ck_assert_int_eq(opd_tensor_strides(v)[0], INT64_MAX - 1);
  opd_tensor_release(v);
  /* stride 2 (a transpose's rows): stride * step overflows although the length does not */
  opd_tensor *y = mk(OPD_FLOAT32, SHAPE(3, 2), VALS(1, 2, 3, 4, 5, 6));
  opd_tensor *yt = view(y, SHAPE(2, 3), (int64_t[]){1, 2}, 0);
  expect_error(slice(yt, 1, NONE, NONE, P62, &v), OPD_EINVAL, "overflows int64");
  expect_error(slice(x, 0, NONE, NONE, 0, &v), OPD_EINVAL, "slice step must be positive");
  expect_error(slice(x, 0, NONE, NONE, INT64_MIN, &v), OPD_EINVAL, "slice step must be positive");
  /* step 2^62 on stride 1: one element with stride 2^62, as PyTorch computes it */
  ck_assert_int_eq(slice(x, 0, I(1), NONE, P62, &v), 0);
  ck_assert_int_eq(v->ndim, 1);
  ck_assert_int_eq(opd_tensor_sizes(v)[0], 1);
  ck_assert_int_eq(opd_tensor_strides(v)[0], P62);
  ck_assert_int_eq(v->storage_offset, 1);
  ck_assert_double_eq(at(v, 0), 2);
  opd_tensor_release(v);
  /* bounds at the ends of int64 clamp to the dimension */
  ck_assert_int_eq(slice(x, 0, I(INT64_MIN), I(INT64_MAX), 2, &v), 0);
  ck_assert_int_eq(opd_tensor_sizes(v)[0], 2);
  ck_assert_double_eq(at(v, 1), 3);
  opd_tensor_release(v);
  ck_assert_int_eq(slice(x, 0, I(INT64_MAX), I(INT64_MIN), 1, &v), 0);
  ck_assert_int_eq(v->numel, 0);
  opd_tensor_release(v);
  opd_tensor_release(yt);
  opd_tensor_release(y);
  opd_tensor_release(x);
}
END_TEST

/* An empty view may sit at any offset; slicing or selecting from it adds to that offset. */
START_TEST(test_view_offsets_overflow) {
  opd_tensor *x = three_floats(), *e, *v;
  ck_assert_int_eq(as_strided(x, SHAPE(0, 2), (int64_t[]){1, P62}, I(P62), &e), 0);
  expect_error(select_int(e, 1, 1, &v), OPD_EINVAL,
               "select(): the storage offset of index 1 overflows int64");
  expect_error(slice(e, 1, I(1), NONE, 1, &v), OPD_EINVAL,
               "slice(): the storage offset of start 1 overflows int64");
  ck_assert_int_eq(select_int(e, 1, 0, &v), 0); /* offset 2^62 + 0: fine */
  ck_assert_int_eq(v->storage_offset, P62);
  opd_tensor_release(v);
  opd_tensor_release(e);
  /* slicing past the end of a Meta tensor with a huge extent moves the offset past int64 */
  opd_tensor *m = empty_strided(SHAPE(2), (int64_t[]){P62}, OPD_UINT8, meta);
  expect_error(slice(m, 0, I(2), NONE, 1, &v), OPD_EINVAL, "overflows int64");
  ck_assert_int_eq(slice(m, 0, I(1), NONE, 1, &v), 0);
  ck_assert_int_eq(v->storage_offset, P62);
  opd_tensor_release(v);
  opd_tensor_release(m);
  expect_values_kept(x);
  opd_tensor_release(x);
}
END_TEST

/* The strides views compute for new dimensions: size * stride of a neighbour. */
START_TEST(test_new_strides_overflow) {
  /* a Meta tensor of 2 bytes 2^62 apart (it has no data, so it can be that large) */
  opd_tensor *m = empty_strided(SHAPE(2), (int64_t[]){P62}, OPD_UINT8, meta), *v;
  expect_error(opd_test_call("aten::unsqueeze", (opd_ivalue[]){T(m), I(0)}, 2, &v), OPD_EINVAL,
               "unsqueeze(): the stride of the new dimension overflows int64");
  expect_error(expand(m, SHAPE(1, 2), &v), OPD_EINVAL,
               "expand(): the stride of the new dimension overflows int64");
  expect_error(view_as("aten::view", m, SHAPE(1, 2), &v), OPD_EINVAL,
               "view(): the strides of shape [1, 2] overflow int64");
  /* the dimension after it is fine */
  ck_assert_int_eq(opd_test_call("aten::unsqueeze", (opd_ivalue[]){T(m), I(1)}, 2, &v), 0);
  ck_assert_int_eq(opd_tensor_strides(v)[1], 1);
  opd_tensor_release(v);
  ck_assert_int_eq(view_as("aten::view", m, SHAPE(2, 1), &v), 0);
  ck_assert_int_eq(opd_tensor_strides(v)[0], P62);
  opd_tensor_release(v);
  opd_tensor_release(m);
  /* an empty tensor viewed as a shape whose other sizes multiply past int64 */
  opd_tensor *e = mk(OPD_FLOAT32, SHAPE(0), NULL);
  int64_t big = INT64_C(1) << 40;
  expect_error(view_as("aten::view", e, SHAPE(0, big, big), &v), OPD_EINVAL,
               "view(): the strides of shape [0, 1099511627776, 1099511627776] overflow int64");
  /* with the zero last the strides are 2^40, 1, 1 (the sizes multiply past int64, the strides
   * do not) */
  ck_assert_int_eq(view_as("aten::reshape", e, SHAPE(big, big, 0), &v), 0);
  ck_assert_int_eq(v->numel, 0);
  ck_assert_int_eq(opd_tensor_strides(v)[0], big);
  ck_assert_int_eq(opd_tensor_strides(v)[1], 1);
  opd_tensor_release(v);
  ck_assert_int_eq(view_as("aten::view", e, SHAPE(0, big), &v), 0);
  ck_assert_int_eq(opd_tensor_strides(v)[0], big);
  opd_tensor_release(v);
  opd_tensor_release(e);
}
END_TEST

START_TEST(test_shape_products) {
  opd_tensor *x = mk(OPD_FLOAT32, SHAPE(4), NULL), *v;
  /* [INT64_MAX, 2] and [2^32, 2^32] multiply to 4 modulo 2^64 */
  expect_error(view_as("aten::view", x, SHAPE(INT64_MAX, 2), &v), OPD_EINVAL,
               "shape '[9223372036854775807, 2]' is invalid for input of size 4");
  expect_error(view_as("aten::reshape", x, SHAPE(INT64_C(1) << 62, 4, -1), &v), OPD_EINVAL,
               "is invalid for input of size 4");
  expect_error(expand(x, SHAPE(INT64_MAX, INT64_MAX, 4), &v), OPD_EINVAL,
               "element count overflows int64");
  /* more sizes than a tensor has dimensions */
  int64_t many[OPD_MAX_DIMS + 1];
  for (int d = 0; d <= OPD_MAX_DIMS; d++) many[d] = 1;
  many[OPD_MAX_DIMS] = 4;
  expect_error(expand(x, OPD_MAX_DIMS + 1, many, &v), OPD_EINVAL, "at most 64 dimensions");
  expect_error(view_as("aten::view", x, OPD_MAX_DIMS + 1, many, &v), OPD_EINVAL,
               "at most 64 dimensions");
  opd_tensor_release(x);
}
END_TEST

/* index_select (and embedding) read every index of an expanded index tensor: 2^61 of them
 * would need a 2^64-byte buffer. */
START_TEST(test_index_select_expanded_index) {
  opd_tensor *w = mk(OPD_FLOAT32, SHAPE(3, 2), VALS(1, 2, 3, 4, 5, 6));
  opd_tensor *zero = mk(OPD_INT64, SHAPE(1), VALS(0)), *idx, *r;
  ck_assert_int_eq(expand(zero, SHAPE(INT64_C(1) << 61), &idx), 0);
  int rc = opd_test_call("aten::index_select", (opd_ivalue[]){T(w), I(0), T(idx)}, 3, &r);
  ck_assert_msg(rc == OPD_EINVAL || rc == OPD_ERESOURCE, "index_select: %s", opd_last_error());
  rc = opd_test_call("aten::embedding", (opd_ivalue[]){T(w), T(idx), I(-1), B(false), B(false)}, 5,
                     &r);
  ck_assert_msg(rc == OPD_EINVAL || rc == OPD_ERESOURCE, "embedding: %s", opd_last_error());
  opd_tensor_release(idx);
  /* 2^40 indices: the CPU allocator's limit refuses their buffer */
  ck_assert_int_eq(expand(zero, SHAPE(INT64_C(1) << 40), &idx), 0);
  opd_cpu_allocator_set_limit(1 << 30);
  expect_error(opd_test_call("aten::index_select", (opd_ivalue[]){T(w), I(1), T(idx)}, 3, &r),
               OPD_ERESOURCE, "CPU out of memory");
  opd_cpu_allocator_set_limit(0);
  opd_tensor_release(idx);
  /* expanded indices that fit work, on the stack (4) or from the allocator (300) */
  const int64_t counts[] = {4, 300};
  for (int k = 0; k < 2; k++) {
    ck_assert_int_eq(expand(zero, SHAPE(counts[k]), &idx), 0);
    ck_assert_int_eq(opd_test_call("aten::index_select", (opd_ivalue[]){T(w), I(0), T(idx)}, 3, &r),
                     0);
    ck_assert_int_eq(opd_tensor_sizes(r)[0], counts[k]);
    ck_assert_double_eq(at(r, 2 * counts[k] - 1), 2);
    opd_tensor_release(r);
    opd_tensor_release(idx);
  }
  opd_tensor_release(zero);
  opd_tensor_release(w);
}
END_TEST

/* Factories: sizes whose product overflows, doubles that do not fit an int64. */
START_TEST(test_factories) {
  opd_tensor *t;
  int64_t big = INT64_C(1) << 32;
  const char *sized[] = {"aten::zeros", "aten::ones"};
  for (int k = 0; k < 2; k++) {
    expect_error(opd_test_call(sized[k],
                               (opd_ivalue[]){ints(SHAPE(big, big)), NONE, NONE, NONE, NONE}, 5,
                               &t),
                 OPD_EINVAL, "overflow");
    expect_error(opd_test_call(sized[k],
                               (opd_ivalue[]){ints(SHAPE(0, big, big)), NONE, NONE, NONE, NONE}, 5,
                               &t),
                 OPD_EINVAL, "overflow");
  }
  expect_error(
      opd_test_call("aten::full",
                    (opd_ivalue[]){ints(SHAPE(INT64_MAX, 2)), D(1), NONE, NONE, NONE, NONE}, 6, &t),
      OPD_EINVAL, "overflow");
  /* NaN, infinity and 1e30 do not convert to int64 */
  const double bad[] = {NAN, INFINITY, 1e30, -1e19};
  for (int k = 0; k < 4; k++)
    expect_error(opd_test_call("aten::full",
                               (opd_ivalue[]){ints(SHAPE(2)), D(bad[k]), opd_iv_dtype(OPD_INT64),
                                              NONE, NONE, NONE},
                               6, &t),
                 OPD_EINVAL, "value cannot be converted to type int64_t without overflow");
  expect_error(opd_test_call(
                   "aten::empty_strided",
                   (opd_ivalue[]){ints(SHAPE(2)), ints(SHAPE(P62)), NONE, NONE, NONE, NONE}, 6, &t),
               OPD_EINVAL, "overflow");
  expect_error(
      opd_test_call("aten::empty.memory_format",
                    (opd_ivalue[]){ints(SHAPE(1, big, big, 2)), NONE, NONE, NONE, NONE, I(2)}, 6,
                    &t),
      OPD_EINVAL, "overflow");
  /* arange: the length of 0 .. 1e30, and bounds beyond int64 for an integer dtype */
  expect_error(opd_test_call("aten::arange.start_step",
                             (opd_ivalue[]){D(0), D(1e30), D(1), NONE, NONE, NONE, NONE}, 7, &t),
               OPD_EINVAL, "invalid size, possible overflow?");
  expect_error(
      opd_test_call("aten::arange.start_step",
                    (opd_ivalue[]){I(0), D(1e19), I(1), opd_iv_dtype(OPD_INT64), NONE, NONE, NONE},
                    7, &t),
      OPD_EINVAL, "value cannot be converted to type int64_t without overflow");
  expect_error(
      opd_test_call("aten::arange.start_step",
                    (opd_ivalue[]){I(0), D(NAN), I(1), opd_iv_dtype(OPD_INT32), NONE, NONE, NONE},
                    7, &t),
      OPD_EINVAL, "value cannot be converted to type int64_t without overflow");
  expect_error(opd_test_call("aten::arange.start_step",
                             (opd_ivalue[]){D(0), D(NAN), D(1), NONE, NONE, NONE, NONE}, 7, &t),
               OPD_EINVAL, "unsupported range");
  expect_error(opd_test_call("aten::arange.start_step",
                             (opd_ivalue[]){D(0), D(1), D(NAN), NONE, NONE, NONE, NONE}, 7, &t),
               OPD_EINVAL, "step must be nonzero");
  /* INT64_MIN .. INT64_MAX: end - start wraps, as in PyTorch */
  expect_error(opd_test_call(
                   "aten::arange.start_step",
                   (opd_ivalue[]){I(INT64_MIN), I(INT64_MAX), I(1), NONE, NONE, NONE, NONE}, 7, &t),
               OPD_EINVAL, "invalid size, possible overflow?");
  /* 2^62 int64 elements: the byte count overflows */
  expect_error(opd_test_call("aten::arange.start_step",
                             (opd_ivalue[]){I(0), I(P62), I(1), NONE, NONE, NONE, NONE}, 7, &t),
               OPD_EINVAL, "overflow");
  /* a step of INT64_MAX from INT64_MIN to -1: one element */
  ck_assert_int_eq(
      opd_test_call("aten::arange.start_step",
                    (opd_ivalue[]){I(INT64_MIN), I(-1), I(INT64_MAX), NONE, NONE, NONE, NONE}, 7,
                    &t),
      0);
  ck_assert_int_eq(t->numel, 1);
  ck_assert_int_eq(*(int64_t *)opd_tensor_data(t), INT64_MIN);
  opd_tensor_release(t);
}
END_TEST

/* Scalars that become int64 coefficients. */
START_TEST(test_scalar_coefficients) {
  opd_tensor *a = mk(OPD_INT64, SHAPE(1, 1), VALS(2)), *r;
  const double bad[] = {NAN, 1e300, -0x1p63 * 2};
  for (int k = 0; k < 3; k++) {
    expect_error(
        opd_test_call("aten::addmm", (opd_ivalue[]){T(a), T(a), T(a), I(1), D(bad[k])}, 5, &r),
        OPD_EINVAL, "value cannot be converted to type int64_t without overflow");
    expect_error(
        opd_test_call("aten::addmm", (opd_ivalue[]){T(a), T(a), T(a), D(bad[k]), I(1)}, 5, &r),
        OPD_EINVAL, "value cannot be converted to type int64_t without overflow");
  }
  ck_assert_int_eq(
      opd_test_call("aten::addmm", (opd_ivalue[]){T(a), T(a), T(a), I(1), D(-3.5)}, 5, &r), 0);
  ck_assert_double_eq(at(r, 0), -10); /* alpha truncated to -3, as Scalar::to<int64_t>: 2 - 3 * 4 */
  opd_tensor_release(r);
  opd_tensor_release(a);
}
END_TEST

/* Empty tensors may have any strides and sizes whose other products overflow: kernels that
 * walk them, lay out copies of them or coalesce their dims must not multiply those. */
START_TEST(test_empty_operands) {
  int64_t big = INT64_C(1) << 40;
  opd_tensor *e = empty_strided(SHAPE(2, 3, 0), (int64_t[]){1, P62, 1}, OPD_FLOAT32, cpu), *r;
  opd_tensor *f = mk(OPD_FLOAT32, SHAPE(4, 3, 0), NULL);
  opd_ivalue list;
  ck_assert_int_eq(opd_iv_make_tensor_list(&list, (opd_tensor *[]){e, f}, 2, false), 0);
  ck_assert_int_eq(opd_test_call("aten::cat", (opd_ivalue[]){list, I(0)}, 2, &r), 0);
  ck_assert_int_eq(opd_tensor_sizes(r)[0], 6);
  opd_tensor_release(r);
  ck_assert_int_eq(opd_test_call("aten::add.Tensor", (opd_ivalue[]){T(e), T(e), I(1)}, 3, &r), 0);
  ck_assert_int_eq(r->numel, 0);
  opd_tensor_release(r);
  ck_assert_int_eq(opd_test_call("aten::clone", (opd_ivalue[]){T(e), NONE}, 2, &r), 0);
  opd_tensor_release(r);
  ck_assert_int_eq(opd_test_call("aten::sum", (opd_ivalue[]){T(e), NONE}, 2, &r), 0);
  ck_assert_double_eq(at(r, 0), 0);
  opd_tensor_release(r);
  /* layer_norm over [0, 3] dims strided 1 and 2^62: mean 0, rstd NaN per row */
  opd_tensor *g = empty_strided(SHAPE(2, 0, 3), (int64_t[]){1, 1, P62}, OPD_FLOAT32, cpu);
  ck_assert_int_eq(
      opd_test_call("aten::layer_norm",
                    (opd_ivalue[]){T(g), ints(SHAPE(0, 3)), NONE, NONE, D(1e-5), B(true)}, 6, &r),
      0);
  ck_assert_int_eq(r->numel, 0);
  opd_tensor_release(r);
  /* expanded empty tensors whose other sizes multiply past int64: the dense copies of
   * [2^40, 2^40, 0] have strides [2^40, 1, 1], as in PyTorch; those of [2^40, 2^40, 2^40, 0]
   * would need a stride of 2^80 */
  opd_tensor *one = mk(OPD_FLOAT32, SHAPE(1, 1, 1), NULL), *wide;
  ck_assert_int_eq(expand(one, SHAPE(big, big, 0), &wide), 0);
  opd_ivalue to_copy[] = {T(wide), NONE, NONE, NONE, NONE, B(false), NONE};
  ck_assert_int_eq(opd_test_call("aten::_to_copy", to_copy, 7, &r), 0);
  ck_assert_int_eq(opd_tensor_strides(r)[0], big);
  ck_assert_int_eq(opd_tensor_strides(r)[1], 1);
  opd_tensor_release(r);
  ck_assert_int_eq(opd_test_call("aten::add.Tensor", (opd_ivalue[]){T(wide), T(wide), I(1)}, 3, &r),
                   0);
  ck_assert_int_eq(opd_tensor_strides(r)[0], big);
  opd_tensor_release(r);
  ck_assert_int_eq(opd_test_call("aten::clone", (opd_ivalue[]){T(wide), NONE}, 2, &r), 0);
  ck_assert_int_eq(r->numel, 0);
  opd_tensor_release(r);
  opd_tensor_release(wide);
  ck_assert_int_eq(expand(one, SHAPE(big, big, big, 0), &wide), 0); /* a new leading dim */
  to_copy[0] = T(wide);
  expect_error(opd_test_call("aten::_to_copy", to_copy, 7, &r), OPD_EINVAL, "overflow int64");
  expect_error(opd_test_call("aten::add.Tensor", (opd_ivalue[]){T(wide), T(wide), I(1)}, 3, &r),
               OPD_EINVAL, "overflow int64");
  expect_error(opd_test_call("aten::clone", (opd_ivalue[]){T(wide), NONE}, 2, &r), OPD_EINVAL,
               "overflow int64");
  opd_tensor_release(wide);
  opd_tensor_release(one);
  opd_tensor_release(g);
  opd_tensor_release(f);
  opd_tensor_release(e);
}
END_TEST

/* Matrix products of Meta tensors (no data, so any size): the output's element count. */
START_TEST(test_matrix_products) {
  int64_t big = INT64_C(1) << 40;
  opd_tensor *a = mk_meta(OPD_FLOAT32, SHAPE(big, 1)), *b = mk_meta(OPD_FLOAT32, SHAPE(1, big)), *r;
  expect_error(opd_test_call("aten::mm", (opd_ivalue[]){T(a), T(b)}, 2, &r), OPD_EINVAL,
               "overflow");
  expect_error(opd_test_call("aten::matmul", (opd_ivalue[]){T(a), T(b)}, 2, &r), OPD_EINVAL,
               "overflow");
  ck_assert_int_eq(opd_test_call("aten::mm", (opd_ivalue[]){T(b), T(a)}, 2, &r), 0);
  ck_assert_int_eq(r->numel, 1);
  opd_tensor_release(r);
  opd_tensor *c = mk_meta(OPD_UINT8, SHAPE(INT64_MAX / 2 + 1));
  opd_ivalue list;
  ck_assert_int_eq(opd_iv_make_tensor_list(&list, (opd_tensor *[]){c, c}, 2, false), 0);
  expect_error(opd_test_call("aten::cat", (opd_ivalue[]){list, I(0)}, 2, &r), OPD_EINVAL,
               "torch.cat(): the output size overflows int64");
  opd_tensor_release(c);
  opd_tensor_release(a);
  opd_tensor_release(b);
}
END_TEST

Suite *opd_test_checked_suite(void) {
  Suite *s = suite_create("checked");
  TCase *tc = tcase_create("arithmetic");
  tcase_add_test(tc, test_primitives);
  tcase_add_test(tc, test_numel);
  tcase_add_test(tc, test_nbytes);
  tcase_add_test(tc, test_geometry);
  tcase_add_test(tc, test_view_bounds);
  tcase_add_test(tc, test_contiguous_strides);
  suite_add_tcase(s, tc);
  tc = tcase_create("operators");
  tcase_add_checked_fixture(tc, setup, NULL);
  tcase_add_test(tc, test_as_strided_outside_storage);
  tcase_add_test(tc, test_as_strided_arguments);
  tcase_add_test(tc, test_slice_huge_step);
  tcase_add_test(tc, test_view_offsets_overflow);
  tcase_add_test(tc, test_new_strides_overflow);
  tcase_add_test(tc, test_shape_products);
  tcase_add_test(tc, test_index_select_expanded_index);
  tcase_add_test(tc, test_factories);
  tcase_add_test(tc, test_scalar_coefficients);
  tcase_add_test(tc, test_empty_operands);
  tcase_add_test(tc, test_matrix_products);
  suite_add_tcase(s, tc);
  return s;
}

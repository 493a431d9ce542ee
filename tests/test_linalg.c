/* test_linalg.c: tests of the matrix products (aten::mm, bmm, addmm, matmul, linear), the
 * LAPACK-backed inverse, eigh and svd (reconstructions) and the errors of linalg_inv and
 * linalg_cholesky,
 * aten::embedding, aten::index_select, aten::cat and the factories (empty.memory_format,
 * empty_strided, zeros, ones, full, arange.start_step), called through the dispatcher
 * after opd_kernels_register().
 *
 * Expected values come from plain double loops written here (matrix products) or by hand;
 * expected errors and dtypes are PyTorch 1.13's (tests/fixtures/conformance/FORMAT.md). */
#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "opd/allocator.h"
#include "opd/dispatcher.h"
#include "opd/dtype.h"
#include "opd/error.h"
#include "opd/kernels.h"
#include "opd/memory.h"
#include "opd/tensor.h"
#include "opd/unboxed.h"
#include "boxed_call.h"
#include "src/parallel.h"

Suite *opd_test_linalg_suite(void);
/* the CPU kernel of aten::cat (kernels/cpu/index.c) */
int opd__cpu_cat(const opd_kernel_ctx *ctx, opd_tensor_list tensors, int64_t dim, opd_tensor **out);

static const opd_device cpu = {OPD_DEVICE_CPU, -1};
static const opd_device meta = {OPD_DEVICE_META, -1};

/* ---- tensors ---- */

static opd_tensor *make(opd_dtype t, const int64_t *sizes, int ndim, opd_device device) {
  opd_tensor *x;
  ck_assert_int_eq(opd_tensor_empty(sizes, ndim, t, device, &x), 0);
  return x;
}

/* Element i (row-major, logical) of x, read through its strides, as a double. */
static double get(const opd_tensor *x, int64_t i) {
  const int64_t *sz = opd_tensor_sizes(x), *st = opd_tensor_strides(x);
  int64_t off = 0;
  for (int d = x->ndim - 1; d >= 0; d--) {
    off += (i % sz[d]) * st[d];
    i /= sz[d];
  }
  const char *p = (const char *)opd_tensor_data(x) + off * (int64_t)opd_dtype_size(x->dtype);
  switch (opd_tensor_dtype(x)) {
  case OPD_FLOAT32: return *(const float *)p;
  case OPD_FLOAT64: return *(const double *)p;
  case OPD_FLOAT16: return opd_half_to_float(*(const uint16_t *)p);
  case OPD_BFLOAT16: return opd_bf16_to_float(*(const uint16_t *)p);
  case OPD_INT64: return (double)*(const int64_t *)p;
  case OPD_INT32: return *(const int32_t *)p;
  case OPD_INT16: return *(const int16_t *)p;
  case OPD_INT8: return *(const int8_t *)p;
  case OPD_UINT8:
  case OPD_BOOL: return *(const uint8_t *)p;
  default: ck_abort(); return 0;
  }
}

static void set(opd_tensor *x, int64_t i, double v) {
  char *p = (char *)opd_tensor_data(x) + i * (int64_t)opd_dtype_size(x->dtype);
  switch (opd_tensor_dtype(x)) {
  case OPD_FLOAT32: *(float *)p = (float)v; break;
  case OPD_FLOAT64: *(double *)p = v; break;
  case OPD_FLOAT16: *(uint16_t *)p = opd_float_to_half((float)v); break;
  case OPD_BFLOAT16: *(uint16_t *)p = opd_float_to_bf16((float)v); break;
  case OPD_INT64: *(int64_t *)p = (int64_t)v; break;
  case OPD_INT32: *(int32_t *)p = (int32_t)v; break;
  case OPD_BOOL: *(uint8_t *)p = v != 0; break;
  default: ck_abort();
  }
}

/* A contiguous CPU tensor with the given values. */
static opd_tensor *from(opd_dtype t, const int64_t *sizes, int ndim, const double *v) {
  opd_tensor *x = make(t, sizes, ndim, cpu);
  for (int64_t i = 0; i < x->numel; i++) set(x, i, v[i]);
  return x;
}

static uint64_t rng_state = 88172645463325252u;
static double next_value(void) {
  rng_state ^= rng_state << 13;
  rng_state ^= rng_state >> 7;
  rng_state ^= rng_state << 17;
  return (double)(rng_state % 2001) / 1000.0 - 1.0; /* [-1, 1] in steps of 1/1000 */
}

/* A contiguous CPU tensor of pseudo-random values (small integers for integer dtypes). */
static opd_tensor *random_tensor(opd_dtype t, const int64_t *sizes, int ndim) {
  opd_tensor *x = make(t, sizes, ndim, cpu);
  for (int64_t i = 0; i < x->numel; i++) {
    double v = next_value();
    set(x, i, opd_dtype_is_floating(t) ? v : round(v * 9));
  }
  return x;
}

static opd_tensor *view(opd_tensor *base, const int64_t *sizes, const int64_t *strides, int ndim,
                        int64_t offset) {
  opd_tensor *v;
  ck_assert_int_eq(opd_tensor_view_of(base, sizes, strides, ndim, offset, &v), 0);
  return v;
}

static void assert_shape(const opd_tensor *x, opd_dtype t, const int64_t *sizes, int ndim) {
  ck_assert_int_eq(x->dtype, t);
  ck_assert_int_eq(x->ndim, ndim);
  for (int d = 0; d < ndim; d++) ck_assert_int_eq(opd_tensor_sizes(x)[d], sizes[d]);
}

static void assert_values(const opd_tensor *x, const double *expected, double tol) {
  for (int64_t i = 0; i < x->numel; i++) {
    double a = get(x, i), e = expected[i];
    if (isnan(e)) {
      ck_assert_msg(isnan(a), "element %lld: %g, expected NaN", (long long)i, a);
      continue;
    }
    ck_assert_msg(fabs(a - e) <= tol * (1 + fabs(e)), "element %lld: %.9g, expected %.9g",
                  (long long)i, a, e);
  }
}

/* ---- the reference: plain double loops ---- */

/* out[b][i][j] = sum_p a[b][i][p] * b[b][p][j] over batch (a and b given as 3-D logical
 * tensors via get, with batch stride 0 when the batch is broadcast). */
static void ref_bmm(const opd_tensor *a, const opd_tensor *b, int64_t batch, int64_t m, int64_t k,
                    int64_t n, bool a_batched, bool b_batched, double *out) {
  for (int64_t q = 0; q < batch; q++)
    for (int64_t i = 0; i < m; i++)
      for (int64_t j = 0; j < n; j++) {
        double acc = 0;
        for (int64_t p = 0; p < k; p++)
          acc += get(a, (a_batched ? q * m * k : 0) + i * k + p) *
                 get(b, (b_batched ? q * k * n : 0) + p * n + j);
        out[(q * m + i) * n + j] = acc;
      }
}

/* ---- calls ---- */

#define B(x) opd_iv_tensor_borrow(x)

static int mm(opd_tensor *a, opd_tensor *b, opd_tensor **out) {
  return opd_test_call("aten::mm", (opd_ivalue[]){B(a), B(b)}, 2, out);
}
static int bmm(opd_tensor *a, opd_tensor *b, opd_tensor **out) {
  return opd_test_call("aten::bmm", (opd_ivalue[]){B(a), B(b)}, 2, out);
}
static int addmm(opd_tensor *s, opd_tensor *a, opd_tensor *b, opd_ivalue beta, opd_ivalue alpha,
                 opd_tensor **out) {
  return opd_test_call("aten::addmm", (opd_ivalue[]){B(s), B(a), B(b), beta, alpha}, 5, out);
}
static int matmul(opd_tensor *a, opd_tensor *b, opd_tensor **out) {
  return opd_test_call("aten::matmul", (opd_ivalue[]){B(a), B(b)}, 2, out);
}
static int linear(opd_tensor *x, opd_tensor *w, opd_tensor *bias, opd_tensor **out) {
  return opd_test_call("aten::linear", (opd_ivalue[]){B(x), B(w), bias ? B(bias) : opd_iv_none()},
                       3, out);
}
static int embedding(opd_tensor *w, opd_tensor *idx, int64_t padding_idx, opd_tensor **out) {
  return opd_test_call(
      "aten::embedding",
      (opd_ivalue[]){B(w), B(idx), opd_iv_int(padding_idx), opd_iv_bool(false), opd_iv_bool(false)},
      5, out);
}
static int index_select(opd_tensor *s, int64_t dim, opd_tensor *idx, opd_tensor **out) {
  return opd_test_call("aten::index_select", (opd_ivalue[]){B(s), opd_iv_int(dim), B(idx)}, 3, out);
}
static int cat(opd_tensor *const *ts, size_t n, int64_t dim, opd_tensor **out) {
  opd_ivalue list;
  ck_assert_int_eq(opd_iv_make_tensor_list(&list, ts, n, false), 0);
  return opd_test_call("aten::cat", (opd_ivalue[]){list, opd_iv_int(dim)}, 2, out);
}
static opd_ivalue ints(const int64_t *v, size_t n) {
  opd_ivalue iv;
  ck_assert_int_eq(opd_iv_make_int_list(&iv, v, n), 0);
  return iv;
}
#define INTS(...) \
  ints((const int64_t[]){__VA_ARGS__}, sizeof((const int64_t[]){__VA_ARGS__}) / sizeof(int64_t))
static opd_ivalue dtype_iv(int t) {
  return t < 0 ? opd_iv_none() : opd_iv_dtype(t);
}
static opd_ivalue device_iv(const opd_device *d) {
  return d ? opd_iv_device(*d) : opd_iv_none();
}
/* aten::zeros / ones (size, dtype, layout, device, pin_memory) */
static int factory(const char *name, opd_ivalue size, int dtype, const opd_device *device,
                   opd_tensor **out) {
  return opd_test_call(
      name, (opd_ivalue[]){size, dtype_iv(dtype), opd_iv_none(), device_iv(device), opd_iv_none()},
      5, out);
}
static int full(opd_ivalue size, opd_ivalue value, int dtype, const opd_device *device,
                opd_tensor **out) {
  return opd_test_call(
      "aten::full",
      (opd_ivalue[]){size, value, dtype_iv(dtype), opd_iv_none(), device_iv(device), opd_iv_none()},
      6, out);
}
static int arange(opd_ivalue start, opd_ivalue end, opd_ivalue step, int dtype,
                  const opd_device *device, opd_tensor **out) {
  return opd_test_call("aten::arange.start_step",
                       (opd_ivalue[]){start, end, step, dtype_iv(dtype), opd_iv_none(),
                                      device_iv(device), opd_iv_none()},
                       7, out);
}

static void assert_error(int rc, int code, const char *message) {
  ck_assert_int_eq(rc, code);
  ck_assert_msg(strstr(opd_last_error(), message), "error '%s' lacks '%s'", opd_last_error(),
                message);
}

static void release_all(opd_tensor **ts, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (ts[i]) opd_tensor_release(ts[i]);
}
#define RELEASE(...)                         \
  release_all((opd_tensor *[]){__VA_ARGS__}, \
              sizeof((opd_tensor *[]){__VA_ARGS__}) / sizeof(opd_tensor *))

static void setup(void) {
  ck_assert_int_eq(opd_kernels_register(), 0);
}

/* ---- mm ---- */

START_TEST(test_mm_matches_loops) {
  const opd_dtype types[] = {OPD_FLOAT32, OPD_FLOAT64, OPD_INT64, OPD_INT32};
  for (size_t ti = 0; ti < sizeof types / sizeof *types; ti++) {
    opd_tensor *a = random_tensor(types[ti], (int64_t[]){7, 5}, 2);
    opd_tensor *b = random_tensor(types[ti], (int64_t[]){5, 9}, 2), *c;
    double expected[63];
    ref_bmm(a, b, 1, 7, 5, 9, false, false, expected);
    ck_assert_int_eq(mm(a, b, &c), 0);
    assert_shape(c, types[ti], (int64_t[]){7, 9}, 2);
    ck_assert(opd_tensor_is_contiguous(c));
    assert_values(c, expected, types[ti] == OPD_FLOAT32 ? 1e-5 : 1e-12);
    RELEASE(a, b, c);
  }
}
END_TEST

/* Transposed and sliced operands (stride 1 in one dimension) go to gemm in place: the
 * only CPU memory the call takes is its output. */
START_TEST(test_mm_transposed_inputs_not_copied) {
  const opd_dtype types[] = {OPD_FLOAT32, OPD_FLOAT64};
  for (size_t ti = 0; ti < 2; ti++) {
    opd_dtype t = types[ti];
    opd_tensor *abase = random_tensor(t, (int64_t[]){5, 7}, 2);
    opd_tensor *bbase = random_tensor(t, (int64_t[]){6, 10}, 2);
    /* a = abase^T: [7, 5] strides (1, 7); b = bbase[:, 2:7]^T... as [5, 6] strides (1, 10) */
    opd_tensor *a = view(abase, (int64_t[]){7, 5}, (int64_t[]){1, 7}, 2, 0);
    opd_tensor *b = view(bbase, (int64_t[]){5, 6}, (int64_t[]){1, 10}, 2, 2);
    /* a sliced row-major operand: bbase[0:5, 1:6] as [5, 5] strides (10, 1) */
    opd_tensor *s = view(bbase, (int64_t[]){5, 5}, (int64_t[]){10, 1}, 2, 1);
    double expected[42], expected2[35];
    ref_bmm(a, b, 1, 7, 5, 6, false, false, expected);
    ref_bmm(a, s, 1, 7, 5, 5, false, false, expected2);

    opd_memory_stats before, after;
    opd_memory_stats_get(OPD_DEVICE_CPU, &before);
    opd_memory_stats_reset_peak(OPD_DEVICE_CPU);
    opd_tensor *c, *c2;
    ck_assert_int_eq(mm(a, b, &c), 0);
    opd_memory_stats_get(OPD_DEVICE_CPU, &after);
    /* 42 elements rounded up to the allocator's 64-byte blocks */
    uint64_t out_bytes = (42 * opd_dtype_size(t) + 63) / 64 * 64;
    ck_assert_uint_eq(after.peak - before.in_use, out_bytes);
    ck_assert_int_eq(mm(a, s, &c2), 0);
    assert_values(c, expected, t == OPD_FLOAT32 ? 1e-5 : 1e-12);
    assert_values(c2, expected2, t == OPD_FLOAT32 ? 1e-5 : 1e-12);
    RELEASE(abase, bbase, a, b, s, c, c2);
  }
}
END_TEST

/* Layouts gemm cannot take (a broadcast stride 0, both strides above 1) are still right. */
START_TEST(test_mm_other_layouts) {
  opd_tensor *base = random_tensor(OPD_FLOAT32, (int64_t[]){4, 6}, 2);
  opd_tensor *rowb = view(base, (int64_t[]){3, 6}, (int64_t[]){0, 1}, 2, 0); /* expand(3, 6) */
  opd_tensor *every2 = view(base, (int64_t[]){6, 2}, (int64_t[]){1, 12}, 2, 0);
  opd_tensor *odd = view(base, (int64_t[]){2, 3}, (int64_t[]){12, 2}, 2, 1);
  opd_tensor *c, *c2;
  double expected[6], expected2[18];
  ref_bmm(rowb, every2, 1, 3, 6, 2, false, false, expected);
  ck_assert_int_eq(mm(rowb, every2, &c), 0);
  assert_values(c, expected, 1e-5);
  ck_assert_int_eq(mm(every2, odd, &c2), 0);
  ref_bmm(every2, odd, 1, 6, 2, 3, false, false, expected2);
  assert_shape(c2, OPD_FLOAT32, (int64_t[]){6, 3}, 2);
  assert_values(c2, expected2, 1e-5);
  RELEASE(base, rowb, every2, odd, c, c2);
}
END_TEST

START_TEST(test_mm_integer_and_half) {
  /* int64 by hand: [[1, 2], [3, 4]] @ [[5, 6], [7, 8]] */
  opd_tensor *a = from(OPD_INT64, (int64_t[]){2, 2}, 2, (double[]){1, 2, 3, 4});
  opd_tensor *b = from(OPD_INT64, (int64_t[]){2, 2}, 2, (double[]){5, 6, 7, 8}), *c;
  ck_assert_int_eq(mm(a, b, &c), 0);
  assert_shape(c, OPD_INT64, (int64_t[]){2, 2}, 2);
  assert_values(c, (double[]){19, 22, 43, 50}, 0);
  /* int32 wraps: 65536 * 65536 + 1 * 1 == 1 (mod 2^32) */
  opd_tensor *x = from(OPD_INT32, (int64_t[]){1, 2}, 2, (double[]){65536, 1});
  opd_tensor *y = from(OPD_INT32, (int64_t[]){2, 1}, 2, (double[]){65536, 1}), *z;
  ck_assert_int_eq(mm(x, y, &z), 0);
  assert_values(z, (double[]){1}, 0);
  /* float16 and bfloat16 through float32: small integers are exact */
  const opd_dtype halves[] = {OPD_FLOAT16, OPD_BFLOAT16};
  for (int i = 0; i < 2; i++) {
    opd_tensor *h = from(halves[i], (int64_t[]){2, 2}, 2, (double[]){1, 2, 3, 4});
    opd_tensor *g = from(halves[i], (int64_t[]){2, 2}, 2, (double[]){5, 6, 7, 8}), *r;
    ck_assert_int_eq(mm(h, g, &r), 0);
    assert_shape(r, halves[i], (int64_t[]){2, 2}, 2);
    assert_values(r, (double[]){19, 22, 43, 50}, 0);
    RELEASE(h, g, r);
  }
  /* bool has no gemm */
  opd_tensor *t = from(OPD_BOOL, (int64_t[]){2, 2}, 2, (double[]){1, 0, 1, 1}), *r = NULL;
  assert_error(mm(t, t, &r), OPD_EINVAL, "\"addmm_impl_cpu_\" not implemented for 'Bool'");
  RELEASE(a, b, c, x, y, z, t);
}
END_TEST

START_TEST(test_mm_empty_and_errors) {
  opd_tensor *a = make(OPD_FLOAT32, (int64_t[]){2, 0}, 2, cpu);
  opd_tensor *b = make(OPD_FLOAT32, (int64_t[]){0, 4}, 2, cpu), *c, *r = NULL;
  ck_assert_int_eq(mm(a, b, &c), 0);
  assert_shape(c, OPD_FLOAT32, (int64_t[]){2, 4}, 2);
  assert_values(c, (double[]){0, 0, 0, 0, 0, 0, 0, 0}, 0);
  opd_tensor *m23 = random_tensor(OPD_FLOAT32, (int64_t[]){2, 3}, 2);
  opd_tensor *m45 = random_tensor(OPD_FLOAT32, (int64_t[]){4, 5}, 2);
  opd_tensor *d32 = random_tensor(OPD_FLOAT64, (int64_t[]){3, 2}, 2);
  opd_tensor *v3 = random_tensor(OPD_FLOAT32, (int64_t[]){3}, 1);
  assert_error(mm(m23, m45, &r), OPD_EINVAL,
               "mat1 and mat2 shapes cannot be multiplied (2x3 and 4x5)");
  assert_error(mm(m23, d32, &r), OPD_EINVAL, "expected scalar type Float but found Double");
  assert_error(mm(v3, m23, &r), OPD_EINVAL, "self must be a matrix");
  assert_error(mm(m23, v3, &r), OPD_EINVAL, "mat2 must be a matrix");
  ck_assert_ptr_null(r);
  RELEASE(a, b, c, m23, m45, d32, v3);
}
END_TEST

/* ---- bmm ---- */

START_TEST(test_bmm) {
  opd_tensor *a = random_tensor(OPD_FLOAT32, (int64_t[]){4, 3, 5}, 3);
  opd_tensor *b = random_tensor(OPD_FLOAT32, (int64_t[]){4, 5, 2}, 3), *c;
  double expected[24];
  ref_bmm(a, b, 4, 3, 5, 2, true, true, expected);
  ck_assert_int_eq(bmm(a, b, &c), 0);
  assert_shape(c, OPD_FLOAT32, (int64_t[]){4, 3, 2}, 3);
  assert_values(c, expected, 1e-5);
  /* per-batch transposed operands: a^T(1, 2) of a [4, 5, 3] base */
  opd_tensor *tb = random_tensor(OPD_FLOAT64, (int64_t[]){4, 5, 3}, 3);
  opd_tensor *t = view(tb, (int64_t[]){4, 3, 5}, (int64_t[]){15, 1, 3}, 3, 0);
  opd_tensor *b64 = random_tensor(OPD_FLOAT64, (int64_t[]){4, 5, 2}, 3), *c64;
  ref_bmm(t, b64, 4, 3, 5, 2, true, true, expected);
  ck_assert_int_eq(bmm(t, b64, &c64), 0);
  assert_values(c64, expected, 1e-12);
  /* integers, an empty contraction, errors */
  opd_tensor *ia = random_tensor(OPD_INT64, (int64_t[]){2, 4, 4}, 3);
  opd_tensor *ib = random_tensor(OPD_INT64, (int64_t[]){2, 4, 3}, 3), *ic, *r = NULL;
  ref_bmm(ia, ib, 2, 4, 4, 3, true, true, expected);
  ck_assert_int_eq(bmm(ia, ib, &ic), 0);
  assert_values(ic, expected, 0);
  opd_tensor *k0a = make(OPD_FLOAT32, (int64_t[]){3, 3, 0}, 3, cpu);
  opd_tensor *k0b = make(OPD_FLOAT32, (int64_t[]){3, 0, 2}, 3, cpu), *k0;
  ck_assert_int_eq(bmm(k0a, k0b, &k0), 0);
  assert_shape(k0, OPD_FLOAT32, (int64_t[]){3, 3, 2}, 3);
  for (int64_t i = 0; i < k0->numel; i++) ck_assert(get(k0, i) == 0);
  assert_error(bmm(a, a, &r), OPD_EINVAL,
               "Expected size for first two dimensions of batch2 tensor to be: [4, 5] but got: "
               "[4, 3].");
  opd_tensor *m = random_tensor(OPD_FLOAT32, (int64_t[]){3, 4}, 2);
  assert_error(bmm(m, m, &r), OPD_EINVAL, "batch1 must be a 3D tensor");
  RELEASE(a, b, c, tb, t, b64, c64, ia, ib, ic, k0a, k0b, k0, m);
}
END_TEST

/* Products small enough to go whole to the intra-op threads (bmm_range in linalg.c), over an
 * odd number of threads and with an operand that is packed per product, and a packing
 * buffer that cannot be had: the error, and nothing kept. */
START_TEST(test_bmm_split_over_threads) {
  opd__parallel_set_threads(3);
  /* a: [20, 96, 80] read with strides (15360, 160, 2) from a [20, 96, 160] base: packed */
  opd_tensor *abase = random_tensor(OPD_FLOAT32, (int64_t[]){20, 96, 160}, 3);
  opd_tensor *a = view(abase, (int64_t[]){20, 96, 80}, (int64_t[]){15360, 160, 2}, 3, 1);
  opd_tensor *b = random_tensor(OPD_FLOAT32, (int64_t[]){20, 80, 28}, 3), *c = NULL;
  static double expected[20 * 96 * 28];
  ref_bmm(a, b, 20, 96, 80, 28, true, true, expected);
  ck_assert_int_eq(bmm(a, b, &c), 0);
  assert_shape(c, OPD_FLOAT32, (int64_t[]){20, 96, 28}, 3);
  assert_values(c, expected, 1e-4);
  opd_tensor_release(c);
  c = NULL;
  /* room for the output, not for a packed operand */
  opd_memory_stats s0, s1;
  opd_cpu_allocator_empty_cache();
  opd_memory_stats_get(OPD_DEVICE_CPU, &s0);
  /* the output (rounded up to its size class) fits; one 30 KiB packed operand does not */
  opd_cpu_allocator_set_limit(s0.in_use + 20 * 96 * 28 * sizeof(float) + 16384);
  assert_error(bmm(a, b, &c), OPD_ERESOURCE, "bmm: no memory for a product's work buffer");
  opd_cpu_allocator_set_limit(0);
  ck_assert_ptr_null(c);
  opd_cpu_allocator_empty_cache();
  opd_memory_stats_get(OPD_DEVICE_CPU, &s1);
  ck_assert_uint_eq(s1.in_use, s0.in_use);
  opd__parallel_set_threads(0);
  RELEASE(abase, a, b);
}
END_TEST

/* ---- addmm ---- */

START_TEST(test_addmm) {
  opd_tensor *bias = random_tensor(OPD_FLOAT32, (int64_t[]){3}, 1);
  opd_tensor *a = random_tensor(OPD_FLOAT32, (int64_t[]){6, 7}, 2);
  opd_tensor *b = random_tensor(OPD_FLOAT32, (int64_t[]){7, 3}, 2), *c;
  double prod[18], expected[18];
  ref_bmm(a, b, 1, 6, 7, 3, false, false, prod);
  /* beta 0.5, alpha 2: out = 0.5 * bias (broadcast over rows) + 2 * a @ b */
  for (int i = 0; i < 18; i++) expected[i] = 0.5 * get(bias, i % 3) + 2 * prod[i];
  ck_assert_int_eq(addmm(bias, a, b, opd_iv_double(0.5), opd_iv_double(2.0), &c), 0);
  assert_shape(c, OPD_FLOAT32, (int64_t[]){6, 3}, 2);
  assert_values(c, expected, 1e-5);
  /* beta = 0 ignores self: NaN there does not propagate */
  opd_tensor *nan = from(OPD_FLOAT32, (int64_t[]){6, 3}, 2,
                         (double[]){NAN, NAN, NAN, NAN, NAN, NAN, NAN, NAN, NAN, NAN, NAN, NAN, NAN,
                                    NAN, NAN, NAN, NAN, NAN}),
             *z;
  ck_assert_int_eq(addmm(nan, a, b, opd_iv_int(0), opd_iv_int(-1), &z), 0);
  for (int i = 0; i < 18; i++) expected[i] = -prod[i];
  assert_values(z, expected, 1e-5);
  /* a 0-d self and an empty contraction: out = beta * self */
  opd_tensor *s0 = from(OPD_FLOAT64, (int64_t[]){0}, 0, (double[]){1.5});
  opd_tensor *k0a = make(OPD_FLOAT64, (int64_t[]){2, 0}, 2, cpu);
  opd_tensor *k0b = make(OPD_FLOAT64, (int64_t[]){0, 3}, 2, cpu), *k0;
  ck_assert_int_eq(addmm(s0, k0a, k0b, opd_iv_double(3.0), opd_iv_int(1), &k0), 0);
  assert_shape(k0, OPD_FLOAT64, (int64_t[]){2, 3}, 2);
  assert_values(k0, (double[]){4.5, 4.5, 4.5, 4.5, 4.5, 4.5}, 0);
  /* integers with integer coefficients */
  opd_tensor *is = from(OPD_INT64, (int64_t[]){2, 1}, 2, (double[]){10, 20});
  opd_tensor *ia = from(OPD_INT64, (int64_t[]){2, 2}, 2, (double[]){1, 2, 3, 4});
  opd_tensor *ib = from(OPD_INT64, (int64_t[]){2, 2}, 2, (double[]){5, 6, 7, 8}), *ic, *r = NULL;
  ck_assert_int_eq(addmm(is, ia, ib, opd_iv_int(2), opd_iv_int(3), &ic), 0);
  assert_values(ic, (double[]){20 + 57, 20 + 66, 40 + 129, 40 + 150}, 0);
  /* errors */
  opd_tensor *bad = random_tensor(OPD_FLOAT32, (int64_t[]){5}, 1);
  opd_tensor *m24 = random_tensor(OPD_FLOAT32, (int64_t[]){2, 4}, 2);
  opd_tensor *m43 = random_tensor(OPD_FLOAT32, (int64_t[]){4, 3}, 2);
  assert_error(addmm(bad, m24, m43, opd_iv_int(1), opd_iv_int(1), &r), OPD_EINVAL,
               "The expanded size of the tensor (3) must match the existing size (5) at "
               "non-singleton dimension 1.  Target sizes: [2, 3].  Tensor sizes: [5]");
  assert_error(addmm(bias, m24, m24, opd_iv_int(1), opd_iv_int(1), &r), OPD_EINVAL,
               "mat1 and mat2 shapes cannot be multiplied (2x4 and 2x4)");
  RELEASE(bias, a, b, c, nan, z, s0, k0a, k0b, k0, is, ia, ib, ic, bad, m24, m43);
}
END_TEST

START_TEST(test_linalg_meta) {
  opd_tensor *a = make(OPD_FLOAT32, (int64_t[]){6, 7}, 2, meta);
  opd_tensor *b = make(OPD_FLOAT32, (int64_t[]){7, 3}, 2, meta);
  opd_tensor *bias = make(OPD_FLOAT32, (int64_t[]){3}, 1, meta);
  opd_tensor *b3 = make(OPD_FLOAT32, (int64_t[]){2, 3, 4}, 3, meta);
  opd_tensor *c3 = make(OPD_FLOAT32, (int64_t[]){2, 4, 5}, 3, meta), *c, *d, *e, *r = NULL;
  ck_assert_int_eq(mm(a, b, &c), 0);
  assert_shape(c, OPD_FLOAT32, (int64_t[]){6, 3}, 2);
  ck_assert(opd_tensor_is_meta(c));
  ck_assert_ptr_null(opd_tensor_data(c));
  ck_assert_int_eq(addmm(bias, a, b, opd_iv_int(1), opd_iv_int(1), &d), 0);
  assert_shape(d, OPD_FLOAT32, (int64_t[]){6, 3}, 2);
  ck_assert_int_eq(bmm(b3, c3, &e), 0);
  assert_shape(e, OPD_FLOAT32, (int64_t[]){2, 3, 5}, 3);
  ck_assert(opd_tensor_is_meta(e));
  assert_error(mm(b, b, &r), OPD_EINVAL, "mat1 and mat2 shapes cannot be multiplied (7x3 and 7x3)");
  /* a CPU tensor with a Meta one */
  opd_tensor *x = random_tensor(OPD_FLOAT32, (int64_t[]){7, 3}, 2);
  assert_error(mm(a, x, &r), OPD_EINVAL, "Expected all tensors to be on the same device");
  RELEASE(a, b, bias, b3, c3, c, d, e, x);
}
END_TEST

/* ---- matmul ---- */

/* matmul's expected values: a and b seen as batches of matrices ([k] -> [1, k] for a,
 * [k] -> [k, 1] for b) with the batch dimensions broadcast (numpy's rules). */
static void ref_matmul(const opd_tensor *a, const opd_tensor *b, double *out) {
  const int64_t *sa = opd_tensor_sizes(a), *sb = opd_tensor_sizes(b);
  int na = a->ndim, nb = b->ndim;
  int64_t m = na >= 2 ? sa[na - 2] : 1, k = sa[na - 1], n = nb >= 2 ? sb[nb - 1] : 1;
  int ba = na > 2 ? na - 2 : 0, bb = nb > 2 ? nb - 2 : 0, nbatch = ba > bb ? ba : bb;
  int64_t batch = 1, shape[8];
  for (int d = 0; d < nbatch; d++) {
    int ia = ba - nbatch + d, ib = bb - nbatch + d;
    int64_t x = ia >= 0 ? sa[ia] : 1, y = ib >= 0 ? sb[ib] : 1;
    shape[d] = x == 1 ? y : x;
    batch *= shape[d];
  }
  for (int64_t q = 0; q < batch; q++) {
    /* the batch index of each operand under broadcasting */
    int64_t qa = 0, qb = 0, rem = q, mul_a = 1, mul_b = 1;
    for (int d = nbatch - 1; d >= 0; d--) {
      int64_t i = rem % shape[d];
      rem /= shape[d];
      int ia = ba - nbatch + d, ib = bb - nbatch + d;
      if (ia >= 0) {
        qa += (sa[ia] == 1 ? 0 : i) * mul_a;
        mul_a *= sa[ia];
      }
      if (ib >= 0) {
        qb += (sb[ib] == 1 ? 0 : i) * mul_b;
        mul_b *= sb[ib];
      }
    }
    for (int64_t i = 0; i < m; i++)
      for (int64_t j = 0; j < n; j++) {
        double acc = 0;
        for (int64_t p = 0; p < k; p++)
          acc += get(a, qa * m * k + i * k + p) * get(b, qb * k * n + p * n + j);
        out[(q * m + i) * n + j] = acc;
      }
  }
}

START_TEST(test_matmul_dimensions) {
  static const struct {
    int na, nb;
    int64_t a[4], b[4];
    int nout;
    int64_t out[4];
  } cases[] = {
      {1, 1, {10}, {10}, 0, {0}},                          /* dot: 0-d */
      {2, 1, {6, 8}, {8}, 1, {6}},                         /* mv */
      {1, 2, {5}, {5, 2}, 1, {2}},                         /* vector @ matrix */
      {2, 2, {3, 4}, {4, 3}, 2, {3, 3}},                   /* mm */
      {3, 2, {2, 3, 4}, {4, 5}, 3, {2, 3, 5}},             /* folded into mm */
      {3, 1, {2, 3, 6}, {6}, 2, {2, 3}},                   /* folded into mv */
      {2, 3, {2, 2}, {3, 2, 3}, 3, {3, 2, 3}},             /* matrix @ batch */
      {1, 3, {4}, {2, 4, 3}, 2, {2, 3}},                   /* vector @ batch */
      {4, 3, {2, 1, 2, 2}, {3, 2, 3}, 4, {2, 3, 2, 3}},    /* batch dims broadcast */
      {3, 3, {1, 3, 4}, {5, 4, 2}, 3, {5, 3, 2}},          /* batch of 1 broadcast */
      {4, 4, {2, 1, 3, 4}, {1, 2, 4, 1}, 4, {2, 2, 3, 1}}, /* both broadcast */
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    opd_tensor *a = random_tensor(OPD_FLOAT64, cases[i].a, cases[i].na);
    opd_tensor *b = random_tensor(OPD_FLOAT64, cases[i].b, cases[i].nb), *c;
    double expected[64];
    ref_matmul(a, b, expected);
    ck_assert_msg(matmul(a, b, &c) == 0, "case %zu: %s", i, opd_last_error());
    assert_shape(c, OPD_FLOAT64, cases[i].out, cases[i].nout);
    assert_values(c, expected, 1e-12);
    RELEASE(a, b, c);
  }
}
END_TEST

START_TEST(test_matmul_noncontig_and_errors) {
  /* transposed views */
  opd_tensor *base = random_tensor(OPD_FLOAT32, (int64_t[]){5, 5}, 2);
  opd_tensor *t = view(base, (int64_t[]){5, 5}, (int64_t[]){1, 5}, 2, 0), *c, *r = NULL;
  double expected[25];
  ref_matmul(t, t, expected);
  ck_assert_int_eq(matmul(t, t, &c), 0);
  assert_values(c, expected, 1e-5);
  opd_tensor *s = from(OPD_FLOAT32, (int64_t[]){0}, 0, (double[]){1});
  opd_tensor *m23 = random_tensor(OPD_FLOAT32, (int64_t[]){2, 3}, 2);
  opd_tensor *m42 = random_tensor(OPD_FLOAT32, (int64_t[]){4, 2}, 2);
  opd_tensor *b234 = random_tensor(OPD_FLOAT32, (int64_t[]){2, 3, 4}, 3);
  opd_tensor *b354 = random_tensor(OPD_FLOAT32, (int64_t[]){3, 5, 4}, 3);
  assert_error(matmul(s, m23, &r), OPD_EINVAL,
               "both arguments to matmul need to be at least 1D, but they are 0D and 2D");
  assert_error(matmul(m23, m42, &r), OPD_EINVAL,
               "mat1 and mat2 shapes cannot be multiplied (2x3 and 4x2)");
  assert_error(matmul(b234, b354, &r), OPD_EINVAL, "must match the size of tensor b");
  ck_assert_ptr_null(r);
  RELEASE(base, t, c, s, m23, m42, b234, b354);
}
END_TEST

/* ---- linear ---- */

START_TEST(test_linear) {
  opd_tensor *w = random_tensor(OPD_FLOAT32, (int64_t[]){5, 7}, 2);
  opd_tensor *bias = random_tensor(OPD_FLOAT32, (int64_t[]){5}, 1);
  opd_tensor *x2 = random_tensor(OPD_FLOAT32, (int64_t[]){4, 7}, 2);
  opd_tensor *x3 = random_tensor(OPD_FLOAT32, (int64_t[]){2, 3, 7}, 3);
  opd_tensor *x1 = random_tensor(OPD_FLOAT32, (int64_t[]){7}, 1), *y;
  opd_tensor *wt = view(w, (int64_t[]){7, 5}, (int64_t[]){1, 7}, 2, 0);
  opd_tensor *inputs[] = {x2, x3, x1};
  int64_t rows[] = {4, 6, 1};
  for (int i = 0; i < 3; i++) {
    double prod[30], expected[30];
    ref_bmm(inputs[i], wt, 1, rows[i], 7, 5, false, false, prod);
    for (int with_bias = 0; with_bias < 2; with_bias++) {
      for (int j = 0; j < rows[i] * 5; j++)
        expected[j] = prod[j] + (with_bias ? get(bias, j % 5) : 0);
      ck_assert_msg(linear(inputs[i], w, with_bias ? bias : NULL, &y) == 0, "%s", opd_last_error());
      int64_t shape[3];
      int nd = inputs[i]->ndim;
      memcpy(shape, opd_tensor_sizes(inputs[i]), (size_t)nd * sizeof *shape);
      shape[nd - 1] = 5;
      assert_shape(y, OPD_FLOAT32, shape, nd);
      assert_values(y, expected, 1e-5);
      opd_tensor_release(y);
    }
  }
  opd_tensor *r = NULL;
  assert_error(linear(x2, wt, NULL, &r), OPD_EINVAL,
               "mat1 and mat2 shapes cannot be multiplied (4x7 and 5x7)");
  RELEASE(w, bias, x2, x3, x1, wt);
}
END_TEST

/* ---- embedding, index_select ---- */

START_TEST(test_embedding) {
  opd_tensor *w = random_tensor(OPD_FLOAT32, (int64_t[]){5, 3}, 2);
  opd_tensor *i2 = from(OPD_INT64, (int64_t[]){2, 2}, 2, (double[]){4, 0, 0, 2});
  opd_tensor *i1 = from(OPD_INT32, (int64_t[]){3}, 1, (double[]){1, 1, 3});
  opd_tensor *i0 = from(OPD_INT64, (int64_t[]){0}, 0, (double[]){2});
  opd_tensor *ie = make(OPD_INT64, (int64_t[]){0}, 1, cpu), *y, *r = NULL;
  const int64_t rows2[] = {4, 0, 0, 2}, rows1[] = {1, 1, 3};
  ck_assert_int_eq(embedding(w, i2, -1, &y), 0);
  assert_shape(y, OPD_FLOAT32, (int64_t[]){2, 2, 3}, 3);
  for (int i = 0; i < 12; i++) ck_assert(get(y, i) == get(w, rows2[i / 3] * 3 + i % 3));
  opd_tensor_release(y);
  /* padding_idx does not change the forward values */
  ck_assert_int_eq(embedding(w, i1, 1, &y), 0);
  assert_shape(y, OPD_FLOAT32, (int64_t[]){3, 3}, 2);
  for (int i = 0; i < 9; i++) ck_assert(get(y, i) == get(w, rows1[i / 3] * 3 + i % 3));
  opd_tensor_release(y);
  ck_assert_int_eq(embedding(w, i0, -1, &y), 0);
  assert_shape(y, OPD_FLOAT32, (int64_t[]){3}, 1);
  for (int i = 0; i < 3; i++) ck_assert(get(y, i) == get(w, 6 + i));
  opd_tensor_release(y);
  ck_assert_int_eq(embedding(w, ie, -1, &y), 0);
  assert_shape(y, OPD_FLOAT32, (int64_t[]){0, 3}, 2);
  opd_tensor_release(y);
  /* errors */
  opd_tensor *out_of_range = from(OPD_INT64, (int64_t[]){2}, 1, (double[]){1, 5});
  opd_tensor *negative = from(OPD_INT64, (int64_t[]){1}, 1, (double[]){-1});
  opd_tensor *floats = from(OPD_FLOAT32, (int64_t[]){2}, 1, (double[]){0, 1});
  assert_error(embedding(w, out_of_range, -1, &r), OPD_EINDEX, "index out of range in self");
  assert_error(embedding(w, negative, -1, &r), OPD_EINDEX, "index out of range in self");
  assert_error(embedding(w, floats, -1, &r), OPD_EINVAL,
               "Expected tensor for argument #1 'indices' to have one of the following scalar "
               "types: Long, Int; but got CPUFloatType instead");
  assert_error(embedding(i1, i1, -1, &r), OPD_EINVAL, "'weight' must be 2-D");
  ck_assert_ptr_null(r);
  RELEASE(w, i2, i1, i0, ie, out_of_range, negative, floats);
}
END_TEST

START_TEST(test_index_select) {
  /* a [3, 4] transposed view of a [4, 3] base: x[i][j] = base[j][i] = 3 * j + i */
  opd_tensor *base =
      from(OPD_INT64, (int64_t[]){4, 3}, 2, (double[]){0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11});
  opd_tensor *x = view(base, (int64_t[]){3, 4}, (int64_t[]){1, 3}, 2, 0);
  opd_tensor *idx = from(OPD_INT32, (int64_t[]){3}, 1, (double[]){3, 0, 3}), *y, *r = NULL;
  ck_assert_int_eq(index_select(x, -1, idx, &y), 0);
  assert_shape(y, OPD_INT64, (int64_t[]){3, 3}, 2);
  assert_values(y, (double[]){9, 0, 9, 10, 1, 10, 11, 2, 11}, 0);
  opd_tensor_release(y);
  ck_assert_int_eq(index_select(x, 0, idx, &y), OPD_EINDEX);
  /* a 0-d self takes one index, 0 */
  opd_tensor *s = from(OPD_FLOAT32, (int64_t[]){0}, 0, (double[]){2.5});
  opd_tensor *zero = from(OPD_INT64, (int64_t[]){1}, 1, (double[]){0});
  ck_assert_int_eq(index_select(s, 0, zero, &y), 0);
  assert_shape(y, OPD_FLOAT32, NULL, 0);
  assert_values(y, (double[]){2.5}, 0);
  opd_tensor_release(y);
  opd_tensor *idx2 = from(OPD_INT64, (int64_t[]){1, 1}, 2, (double[]){0});
  assert_error(index_select(x, 0, idx2, &r), OPD_EINDEX,
               "index_select(): Index is supposed to be a vector");
  assert_error(index_select(x, 2, idx, &r), OPD_EINDEX, "Dimension out of range");
  assert_error(index_select(x, 0, s, &r), OPD_EINVAL,
               "index_select(): Expected dtype int32 or int64 for index");
  ck_assert_ptr_null(r);
  RELEASE(base, x, idx, s, zero, idx2);
}
END_TEST

/* ---- cat ---- */

START_TEST(test_cat) {
  opd_tensor *a = from(OPD_FLOAT32, (int64_t[]){2, 2}, 2, (double[]){1, 2, 3, 4});
  opd_tensor *b = from(OPD_FLOAT32, (int64_t[]){2, 1}, 2, (double[]){5, 6}), *c;
  ck_assert_int_eq(cat((opd_tensor *[]){a, b}, 2, -1, &c), 0);
  assert_shape(c, OPD_FLOAT32, (int64_t[]){2, 3}, 2);
  assert_values(c, (double[]){1, 2, 5, 3, 4, 6}, 0);
  opd_tensor_release(c);
  /* noncontiguous input: a^T */
  opd_tensor *at = view(a, (int64_t[]){2, 2}, (int64_t[]){1, 2}, 2, 0);
  ck_assert_int_eq(cat((opd_tensor *[]){a, at}, 2, 0, &c), 0);
  assert_shape(c, OPD_FLOAT32, (int64_t[]){4, 2}, 2);
  assert_values(c, (double[]){1, 2, 3, 4, 1, 3, 2, 4}, 0);
  opd_tensor_release(c);
  /* legacy: a 1-D [0] tensor is skipped, even where its shape would not match */
  opd_tensor *e = make(OPD_FLOAT64, (int64_t[]){0}, 1, cpu);
  ck_assert_int_eq(cat((opd_tensor *[]){e, a, e}, 3, 1, &c), 0);
  assert_shape(c, OPD_FLOAT64, (int64_t[]){2, 2}, 2); /* the skipped float64 still promotes */
  assert_values(c, (double[]){1, 2, 3, 4}, 0);
  opd_tensor_release(c);
  ck_assert_int_eq(cat((opd_tensor *[]){e, e}, 2, 5, &c), 0);
  assert_shape(c, OPD_FLOAT64, (int64_t[]){0}, 1);
  opd_tensor_release(c);
  /* promotion: float32 + int64 + bool -> float32; int32 + int64 -> int64 */
  opd_tensor *i = from(OPD_INT64, (int64_t[]){1, 2}, 2, (double[]){7, -8});
  opd_tensor *t = from(OPD_BOOL, (int64_t[]){1, 2}, 2, (double[]){1, 0});
  opd_tensor *i32 = from(OPD_INT32, (int64_t[]){1, 2}, 2, (double[]){-3, 4});
  ck_assert_int_eq(cat((opd_tensor *[]){a, i, t}, 3, 0, &c), 0);
  assert_shape(c, OPD_FLOAT32, (int64_t[]){4, 2}, 2);
  assert_values(c, (double[]){1, 2, 3, 4, 7, -8, 1, 0}, 0);
  opd_tensor_release(c);
  ck_assert_int_eq(cat((opd_tensor *[]){i32, i}, 2, 0, &c), 0);
  assert_shape(c, OPD_INT64, (int64_t[]){2, 2}, 2);
  assert_values(c, (double[]){-3, 4, 7, -8}, 0);
  opd_tensor_release(c);
  /* errors */
  opd_tensor *r = NULL;
  opd_tensor *m23 = make(OPD_FLOAT32, (int64_t[]){2, 3}, 2, cpu);
  opd_tensor *m33 = make(OPD_FLOAT32, (int64_t[]){3, 3}, 2, cpu);
  opd_tensor *v3 = make(OPD_FLOAT32, (int64_t[]){3}, 1, cpu);
  opd_tensor *s = from(OPD_FLOAT32, (int64_t[]){0}, 0, (double[]){1});
  assert_error(cat((opd_tensor *[]){m23, m33}, 2, 1, &r), OPD_EINVAL,
               "Sizes of tensors must match except in dimension 1. Expected size 2 but got size "
               "3 for tensor number 1 in the list.");
  /* an empty list has no backend to dispatch to; the kernel itself rejects it as well */
  ck_assert_int_lt(cat(NULL, 0, 0, &r), 0);
  assert_error(opd__cpu_cat(NULL, (opd_tensor_list){NULL, 0}, 0, &r), OPD_EINVAL,
               "torch.cat(): expected a non-empty list of Tensors");
  assert_error(cat((opd_tensor *[]){m23, v3}, 2, 0, &r), OPD_EINVAL,
               "Tensors must have same number of dimensions: got 2 and 1");
  assert_error(cat((opd_tensor *[]){m23, m23}, 2, 2, &r), OPD_EINDEX, "Dimension out of range");
  assert_error(cat((opd_tensor *[]){m23, s}, 2, 0, &r), OPD_EINVAL,
               "zero-dimensional tensor (at position 1) cannot be concatenated");
  ck_assert_ptr_null(r);
  /* Meta */
  opd_tensor *ma = make(OPD_FLOAT32, (int64_t[]){2, 3}, 2, meta);
  opd_tensor *mb = make(OPD_INT64, (int64_t[]){4, 3}, 2, meta);
  ck_assert_int_eq(cat((opd_tensor *[]){ma, mb}, 2, 0, &c), 0);
  assert_shape(c, OPD_FLOAT32, (int64_t[]){6, 3}, 2);
  ck_assert(opd_tensor_is_meta(c));
  RELEASE(a, b, at, e, i, t, i32, m23, m33, v3, s, ma, mb, c);
}
END_TEST

/* ---- factories ---- */

START_TEST(test_factories) {
  opd_tensor *x;
  ck_assert_int_eq(factory("aten::zeros", INTS(3, 2), -1, NULL, &x), 0);
  assert_shape(x, OPD_FLOAT32, (int64_t[]){3, 2}, 2);
  ck_assert(!opd_tensor_is_meta(x));
  assert_values(x, (double[]){0, 0, 0, 0, 0, 0}, 0);
  opd_tensor_release(x);
  ck_assert_int_eq(factory("aten::ones", INTS(2), OPD_INT64, NULL, &x), 0);
  assert_shape(x, OPD_INT64, (int64_t[]){2}, 1);
  assert_values(x, (double[]){1, 1}, 0);
  opd_tensor_release(x);
  ck_assert_int_eq(factory("aten::ones", ints(NULL, 0), OPD_BOOL, NULL, &x), 0);
  assert_shape(x, OPD_BOOL, NULL, 0);
  assert_values(x, (double[]){1}, 0);
  opd_tensor_release(x);
  /* full infers its dtype: float -> float32, int -> int64, bool -> int64 as PyTorch 1.13
   * recorded it (see [Note: full's dtype]) */
  const struct {
    opd_ivalue value;
    int dtype;
    opd_dtype expected;
    double v;
  } fills[] = {{opd_iv_double(-0.25), -1, OPD_FLOAT32, -0.25},
               {opd_iv_int(-6), -1, OPD_INT64, -6},
               {opd_iv_bool(false), -1, OPD_INT64, 0},
               {opd_iv_bool(true), OPD_BOOL, OPD_BOOL, 1},
               {opd_iv_int(3), OPD_FLOAT64, OPD_FLOAT64, 3}};
  for (size_t i = 0; i < sizeof fills / sizeof *fills; i++) {
    ck_assert_int_eq(full(INTS(1, 2), fills[i].value, fills[i].dtype, NULL, &x), 0);
    assert_shape(x, fills[i].expected, (int64_t[]){1, 2}, 2);
    assert_values(x, (double[]){fills[i].v, fills[i].v}, 0);
    opd_tensor_release(x);
  }
  /* device=meta: BackendSelect sends the call to the Meta kernels */
  ck_assert_int_eq(full(INTS(4, 0, 2), opd_iv_double(1.5), -1, &meta, &x), 0);
  assert_shape(x, OPD_FLOAT32, (int64_t[]){4, 0, 2}, 3);
  ck_assert(opd_tensor_is_meta(x));
  opd_tensor_release(x);
  ck_assert_int_eq(factory("aten::zeros", INTS(5), OPD_FLOAT64, &meta, &x), 0);
  assert_shape(x, OPD_FLOAT64, (int64_t[]){5}, 1);
  ck_assert(opd_tensor_is_meta(x));
  ck_assert_ptr_null(opd_tensor_data(x));
  opd_tensor_release(x);
  ck_assert_int_eq(factory("aten::zeros", INTS(5), -1, &cpu, &x), 0);
  ck_assert(!opd_tensor_is_meta(x));
  opd_tensor_release(x);
  opd_tensor *r = NULL;
  assert_error(factory("aten::zeros", INTS(2, -1), -1, NULL, &r), OPD_EINVAL,
               "Trying to create tensor with negative dimension -1: [2, -1]");
  assert_error(full(INTS(2, -1), opd_iv_double(1), -1, &meta, &r), OPD_EINVAL,
               "Trying to create tensor with negative dimension -1");
  ck_assert_ptr_null(r);
}
END_TEST

START_TEST(test_empty) {
  opd_tensor *x, *r = NULL;
  /* empty.memory_format(size, dtype, layout, device, pin_memory, memory_format) */
  ck_assert_int_eq(opd_test_call("aten::empty.memory_format",
                                 (opd_ivalue[]){INTS(2, 3, 4, 5), opd_iv_none(), opd_iv_none(),
                                                opd_iv_none(), opd_iv_none(), opd_iv_int(2)},
                                 6, &x),
                   0);
  assert_shape(x, OPD_FLOAT32, (int64_t[]){2, 3, 4, 5}, 4);
  /* channels_last: C innermost, then W, H, N */
  const int64_t cl[] = {60, 1, 15, 3};
  for (int d = 0; d < 4; d++) ck_assert_int_eq(opd_tensor_strides(x)[d], cl[d]);
  opd_tensor_release(x);
  ck_assert_int_eq(opd_test_call("aten::empty_strided",
                                 (opd_ivalue[]){INTS(2, 3), INTS(1, 2), opd_iv_dtype(OPD_INT32),
                                                opd_iv_none(), opd_iv_device(meta), opd_iv_none()},
                                 6, &x),
                   0);
  assert_shape(x, OPD_INT32, (int64_t[]){2, 3}, 2);
  ck_assert(opd_tensor_is_meta(x));
  ck_assert_int_eq(opd_tensor_strides(x)[0], 1);
  ck_assert_int_eq(opd_tensor_strides(x)[1], 2);
  opd_tensor_release(x);
  assert_error(opd_test_call("aten::empty.memory_format",
                             (opd_ivalue[]){INTS(2, 3), opd_iv_none(), opd_iv_none(), opd_iv_none(),
                                            opd_iv_none(), opd_iv_int(2)},
                             6, &r),
               OPD_EINVAL, "required rank 4 tensor to use channels_last format");
  assert_error(opd_test_call("aten::empty.memory_format",
                             (opd_ivalue[]){INTS(2), opd_iv_none(), opd_iv_none(), opd_iv_none(),
                                            opd_iv_bool(true), opd_iv_none()},
                             6, &r),
               OPD_EINVAL, "pin memory");
  assert_error(opd_test_call("aten::empty_strided",
                             (opd_ivalue[]){INTS(2, 3), INTS(1), opd_iv_none(), opd_iv_none(),
                                            opd_iv_none(), opd_iv_none()},
                             6, &r),
               OPD_EINVAL, "dimensionality of sizes (2) must match dimensionality of strides (1)");
  /* a device with no kernels */
  opd_device cuda = {OPD_DEVICE_CUDA, 0};
  ck_assert_int_eq(opd_test_call("aten::empty.memory_format",
                                 (opd_ivalue[]){INTS(2), opd_iv_none(), opd_iv_none(),
                                                opd_iv_device(cuda), opd_iv_none(), opd_iv_none()},
                                 6, &r),
                   OPD_ENOTIMPL);
  ck_assert_ptr_null(r);
}
END_TEST

START_TEST(test_arange) {
  opd_tensor *x, *r = NULL;
  ck_assert_int_eq(arange(opd_iv_int(-1), opd_iv_int(17), opd_iv_int(3), -1, NULL, &x), 0);
  assert_shape(x, OPD_INT64, (int64_t[]){6}, 1);
  assert_values(x, (double[]){-1, 2, 5, 8, 11, 14}, 0);
  opd_tensor_release(x);
  ck_assert_int_eq(arange(opd_iv_int(14), opd_iv_int(-2), opd_iv_int(-4), -1, NULL, &x), 0);
  assert_values(x, (double[]){14, 10, 6, 2}, 0);
  assert_shape(x, OPD_INT64, (int64_t[]){4}, 1);
  opd_tensor_release(x);
  /* ceil((1 - 0) / 0.1) = 10 in double */
  ck_assert_int_eq(arange(opd_iv_int(0), opd_iv_int(1), opd_iv_double(0.1), -1, NULL, &x), 0);
  assert_shape(x, OPD_FLOAT32, (int64_t[]){10}, 1);
  assert_values(x, (double[]){0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9}, 1e-6);
  opd_tensor_release(x);
  ck_assert_int_eq(
      arange(opd_iv_double(-1.5), opd_iv_double(2.25), opd_iv_double(0.5), -1, NULL, &x), 0);
  assert_shape(x, OPD_FLOAT32, (int64_t[]){8}, 1);
  assert_values(x, (double[]){-1.5, -1, -0.5, 0, 0.5, 1, 1.5, 2}, 0);
  opd_tensor_release(x);
  ck_assert_int_eq(arange(opd_iv_int(1), opd_iv_int(9), opd_iv_int(2), OPD_INT32, NULL, &x), 0);
  assert_shape(x, OPD_INT32, (int64_t[]){4}, 1);
  assert_values(x, (double[]){1, 3, 5, 7}, 0);
  opd_tensor_release(x);
  ck_assert_int_eq(arange(opd_iv_int(0), opd_iv_int(5), opd_iv_int(1), OPD_FLOAT64, NULL, &x), 0);
  assert_shape(x, OPD_FLOAT64, (int64_t[]){5}, 1);
  assert_values(x, (double[]){0, 1, 2, 3, 4}, 0);
  opd_tensor_release(x);
  ck_assert_int_eq(arange(opd_iv_bool(false), opd_iv_int(3), opd_iv_bool(true), -1, NULL, &x), 0);
  assert_shape(x, OPD_INT64, (int64_t[]){3}, 1);
  opd_tensor_release(x);
  ck_assert_int_eq(arange(opd_iv_int(3), opd_iv_int(3), opd_iv_int(1), -1, NULL, &x), 0);
  assert_shape(x, OPD_INT64, (int64_t[]){0}, 1);
  opd_tensor_release(x);
  ck_assert_int_eq(arange(opd_iv_double(0.25), opd_iv_int(3), opd_iv_int(1), -1, &meta, &x), 0);
  assert_shape(x, OPD_FLOAT32, (int64_t[]){3}, 1);
  ck_assert(opd_tensor_is_meta(x));
  opd_tensor_release(x);
  assert_error(arange(opd_iv_int(0), opd_iv_int(5), opd_iv_int(0), -1, NULL, &r), OPD_EINVAL,
               "step must be nonzero");
  assert_error(arange(opd_iv_int(0), opd_iv_int(5), opd_iv_int(-1), -1, NULL, &r), OPD_EINVAL,
               "upper bound and larger bound inconsistent with step sign");
  /* an int64 result truncates a fractional step to 0 */
  assert_error(arange(opd_iv_int(0), opd_iv_int(5), opd_iv_double(0.5), OPD_INT64, NULL, &r),
               OPD_EINVAL, "step must be nonzero");
  ck_assert_ptr_null(r);
}
END_TEST

/* LAPACK: A @ inverse(A) is the identity for a batch of strided random matrices, and the
 * composites over the _ex operators raise PyTorch's errors from their info (a singular matrix,
 * one that is not positive-definite: their PyTorch exception class, _LinAlgError, is not one
 * the conformance fixtures can record). */
START_TEST(test_lapack_inverse_and_errors) {
  const int64_t n = 5;
  opd_tensor *base = random_tensor(OPD_FLOAT64, (int64_t[]){3, n, n}, 3), *a, *inv, *prod;
  /* each matrix transposed in place: strides (n * n, 1, n) */
  a = view(base, (int64_t[]){3, n, n}, (int64_t[]){n * n, 1, n}, 3, 0);
  for (int64_t b = 0; b < 3; b++)
    for (int64_t i = 0; i < n; i++)
      set(base, b * n * n + i * n + i, get(base, b * n * n + i * n + i) + 4);
  ck_assert_int_eq(opd_test_call("aten::inverse", (opd_ivalue[]){B(a)}, 1, &inv), 0);
  ck_assert_int_eq(bmm(a, inv, &prod), 0);
  for (int64_t b = 0; b < 3; b++)
    for (int64_t i = 0; i < n; i++)
      for (int64_t j = 0; j < n; j++)
        ck_assert_double_eq_tol(get(prod, (b * n + i) * n + j), i == j, 1e-12);
  RELEASE(inv, prod);
  /* the second matrix singular: its row 1 zero */
  for (int64_t j = 0; j < n; j++) set(base, n * n + j * n + 1, 0);
  opd_tensor *r = NULL;
  assert_error(opd_test_call("aten::linalg_inv", (opd_ivalue[]){B(a)}, 1, &r), OPD_EINVAL,
               "linalg.inv: (Batch element 1): The diagonal element ");
  ck_assert(strstr(opd_last_error(), " is zero, the inversion could not be completed because the "
                                     "input matrix is singular."));
  ck_assert_ptr_null(r);
  opd_tensor *neg = from(OPD_FLOAT32, (int64_t[]){2, 2}, 2, (double[]){1, 0, 0, -1});
  assert_error(
      opd_test_call("aten::linalg_cholesky", (opd_ivalue[]){B(neg), opd_iv_bool(false)}, 2, &r),
      OPD_EINVAL,
      "linalg.cholesky: The factorization could not be completed because the input is "
      "not positive-definite (the leading minor of order 2 is not positive-definite).");
  ck_assert_ptr_null(r);
  RELEASE(base, a, neg);
}
END_TEST

/* linalg_solve and linalg_solve_ex(check_errors=True) turn a zero pivot of the second matrix
 * of a batch into PyTorch's error (_LinAlgError, which the conformance fixtures cannot
 * record); linalg_solve_ex without check_errors reports it in info. */
START_TEST(test_linalg_solve_singular) {
  opd_tensor *a = from(OPD_FLOAT64, (int64_t[]){2, 2, 2}, 3, (double[]){2, 1, 1, 3, 1, 2, 2, 4});
  opd_tensor *b = from(OPD_FLOAT64, (int64_t[]){2, 2, 1}, 3, (double[]){1, 2, 3, 4});
  opd_tensor *r = NULL;
  assert_error(
      opd_test_call("aten::linalg_solve", (opd_ivalue[]){B(a), B(b), opd_iv_bool(true)}, 3, &r),
      OPD_EINVAL,
      "torch.linalg.solve: (Batch element 1): The solver failed because the input matrix "
      "is singular.");
  ck_assert_ptr_null(r);
  const opd_operator *op = opd_find_schema("aten::linalg_solve_ex");
  ck_assert_ptr_nonnull(op);
  for (int check = 0; check < 2; check++) {
    opd_stack st;
    opd_stack_init(&st);
    opd_ivalue args[] = {B(a), B(b), opd_iv_bool(true), opd_iv_bool(check)};
    for (int i = 0; i < 4; i++) ck_assert_int_eq(opd_stack_push(&st, args[i]), 0);
    int rc = opd_call_boxed(op, &st);
    if (check) {
      assert_error(rc, OPD_EINVAL,
                   "torch.linalg.solve_ex: (Batch element 1): The solver failed because the "
                   "input matrix is singular.");
    } else {
      ck_assert_int_eq(rc, 0);
      ck_assert_uint_eq(st.size, 2);
      const int32_t *info = opd_tensor_data(st.items[1].u.t);
      ck_assert_int_eq(info[0], 0);
      ck_assert_int_eq(info[1], 2);
      /* the first system is solved: 2x + y = 1, x + 3y = 2 */
      const double *x = opd_tensor_data(st.items[0].u.t);
      ck_assert_double_eq_tol(x[0], 0.2, 1e-12);
      ck_assert_double_eq_tol(x[1], 0.6, 1e-12);
    }
    opd_stack_destroy(&st);
  }
  RELEASE(a, b);
}
END_TEST

/* Calls `name` boxed; its nres Tensor results in out. */
static int call_results(const char *name, opd_ivalue *args, int n, opd_tensor **out, int nres) {
  const opd_operator *op = opd_find_schema(name);
  ck_assert_msg(op != NULL, "no operator %s", name);
  opd_stack st;
  opd_stack_init(&st);
  for (int i = 0; i < n; i++) ck_assert_int_eq(opd_stack_push(&st, args[i]), 0);
  int rc = opd_call_boxed(op, &st);
  if (rc == 0) {
    ck_assert_uint_eq(st.size, (unsigned)nres);
    for (int i = nres - 1; i >= 0; i--) out[i] = opd_stack_pop(&st).u.t;
  }
  opd_stack_destroy(&st);
  return rc;
}

/* Element (b, i, j) of a batch of matrices, whatever its strides. */
static double elem(const opd_tensor *t, int64_t b, int64_t i, int64_t j) {
  const int64_t *st = opd_tensor_strides(t);
  int nd = t->ndim;
  int64_t off = (nd > 2 ? b * st[0] : 0) + i * st[nd - 2] + j * st[nd - 1];
  return opd_tensor_dtype(t) == OPD_FLOAT64 ? ((const double *)opd_tensor_data(t))[off]
                                            : ((const float *)opd_tensor_data(t))[off];
}

/* The signs of eigenvectors and singular vectors are not specified, so the conformance cases
 * compare eigenvalues and singular values only: here A V = V diag(w) and U diag(S) Vh = A. */
START_TEST(test_lapack_eigh_svd_reconstruct) {
  const int64_t n = 4, bs = 2;
  opd_tensor *x = random_tensor(OPD_FLOAT64, (int64_t[]){bs, n, n}, 3);
  opd_tensor *a = make(OPD_FLOAT64, (int64_t[]){bs, n, n}, 3, cpu);
  for (int64_t b = 0; b < bs; b++) /* symmetric */
    for (int64_t i = 0; i < n; i++)
      for (int64_t j = 0; j < n; j++)
        set(a, (b * n + i) * n + j, get(x, (b * n + i) * n + j) + get(x, (b * n + j) * n + i));
  opd_tensor *eig[2];
  opd_ivalue l;
  ck_assert_int_eq(opd_iv_make_string(&l, "L", 1), 0);
  ck_assert_int_eq(call_results("aten::linalg_eigh", (opd_ivalue[]){B(a), l}, 2, eig, 2), 0);
  for (int64_t b = 0; b < bs; b++)
    for (int64_t i = 0; i < n; i++)
      for (int64_t c = 0; c < n; c++) { /* (A v_c)_i = w_c v_ic */
        double av = 0;
        for (int64_t p = 0; p < n; p++) av += get(a, (b * n + i) * n + p) * elem(eig[1], b, p, c);
        ck_assert_double_eq_tol(av, get(eig[0], b * n + c) * elem(eig[1], b, i, c), 1e-10);
      }
  /* a wide float32 batch, reduced: U (2 x 3 x 3), S (2 x 3), Vh (2 x 3 x 5) */
  opd_tensor *w = random_tensor(OPD_FLOAT32, (int64_t[]){bs, 3, 5}, 3), *svd[3];
  ck_assert_int_eq(call_results("aten::linalg_svd",
                                (opd_ivalue[]){B(w), opd_iv_bool(false), opd_iv_none()}, 3, svd, 3),
                   0);
  assert_shape(svd[2], OPD_FLOAT32, (int64_t[]){bs, 3, 5}, 3);
  for (int64_t b = 0; b < bs; b++)
    for (int64_t i = 0; i < 3; i++)
      for (int64_t j = 0; j < 5; j++) {
        double r = 0;
        for (int64_t p = 0; p < 3; p++)
          r += elem(svd[0], b, i, p) * get(svd[1], b * 3 + p) * elem(svd[2], b, p, j);
        ck_assert_double_eq_tol(r, get(w, (b * 3 + i) * 5 + j), 1e-4);
      }
  RELEASE(x, a, eig[0], eig[1], w, svd[0], svd[1], svd[2]);
}
END_TEST

Suite *opd_test_linalg_suite(void) {
  Suite *s = suite_create("linalg");
  TCase *tc = tcase_create("linalg");
  tcase_add_unchecked_fixture(tc, setup, NULL);
  tcase_add_test(tc, test_mm_matches_loops);
  tcase_add_test(tc, test_mm_transposed_inputs_not_copied);
  tcase_add_test(tc, test_mm_other_layouts);
  tcase_add_test(tc, test_mm_integer_and_half);
  tcase_add_test(tc, test_mm_empty_and_errors);
  tcase_add_test(tc, test_bmm);
  tcase_add_test(tc, test_bmm_split_over_threads);
  tcase_add_test(tc, test_addmm);
  tcase_add_test(tc, test_lapack_inverse_and_errors);
  tcase_add_test(tc, test_lapack_eigh_svd_reconstruct);
  tcase_add_test(tc, test_linalg_solve_singular);
  tcase_add_test(tc, test_linalg_meta);
  tcase_add_test(tc, test_matmul_dimensions);
  tcase_add_test(tc, test_matmul_noncontig_and_errors);
  tcase_add_test(tc, test_linear);
  tcase_add_test(tc, test_embedding);
  tcase_add_test(tc, test_index_select);
  tcase_add_test(tc, test_cat);
  tcase_add_test(tc, test_factories);
  tcase_add_test(tc, test_empty);
  tcase_add_test(tc, test_arange);
  suite_add_tcase(s, tc);
  return s;
}

/* tensor_helpers.h: building and reading small tensors in tests (shared by the kernel
 * suites): element access by dtype, contiguous CPU and Meta tensors from literal shapes and
 * values, strided views, and IValue shorthands. */
#ifndef OPD_TESTS_TENSOR_HELPERS_H
#define OPD_TESTS_TENSOR_HELPERS_H

#include <check.h>

#include "opd/dtype.h"
#include "opd/ivalue.h"
#include "opd/tensor.h"

static inline double opd_test_read(opd_dtype dt, const char *p) {
  switch (dt) {
  case OPD_FLOAT32: return *(const float *)p;
  case OPD_FLOAT64: return *(const double *)p;
  case OPD_FLOAT16: return opd_half_to_float(*(const uint16_t *)p);
  case OPD_BFLOAT16: return opd_bf16_to_float(*(const uint16_t *)p);
  case OPD_INT64: return (double)*(const int64_t *)p;
  case OPD_INT32: return *(const int32_t *)p;
  case OPD_INT16: return *(const int16_t *)p;
  case OPD_INT8: return *(const int8_t *)p;
  case OPD_UINT8: return *(const uint8_t *)p;
  case OPD_BOOL: return *(const uint8_t *)p;
  default: ck_abort_msg("bad dtype"); return 0;
  }
}

static inline void opd_test_write(opd_dtype dt, char *p, double v) {
  switch (dt) {
  case OPD_FLOAT32: *(float *)p = (float)v; break;
  case OPD_FLOAT64: *(double *)p = v; break;
  case OPD_FLOAT16: *(uint16_t *)p = opd_float_to_half((float)v); break;
  case OPD_BFLOAT16: *(uint16_t *)p = opd_float_to_bf16((float)v); break;
  case OPD_INT64: *(int64_t *)p = (int64_t)v; break;
  case OPD_INT32: *(int32_t *)p = (int32_t)v; break;
  case OPD_INT16: *(int16_t *)p = (int16_t)v; break;
  case OPD_INT8: *(int8_t *)p = (int8_t)v; break;
  case OPD_UINT8: *(uint8_t *)p = (uint8_t)v; break;
  case OPD_BOOL: *(uint8_t *)p = v != 0; break;
  default: ck_abort_msg("bad dtype");
  }
}

/* A contiguous CPU tensor holding vals (row-major), or zeros when vals is NULL. */
static inline opd_tensor *mk(opd_dtype dt, int nd, const int64_t *shape, const double *vals) {
  opd_tensor *t = NULL;
  ck_assert_int_eq(opd_tensor_empty(shape, nd, dt, (opd_device){OPD_DEVICE_CPU, -1}, &t), 0);
  for (int64_t i = 0; i < t->numel; i++)
    opd_test_write(dt, (char *)opd_tensor_data(t) + i * (int64_t)opd_dtype_size(dt),
                   vals ? vals[i] : 0);
  return t;
}
#define SHAPE(...) \
  (int)(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t)), ((int64_t[]){__VA_ARGS__})
#define VALS(...) ((double[]){__VA_ARGS__})

static inline opd_tensor *mk_meta(opd_dtype dt, int nd, const int64_t *shape) {
  opd_tensor *t = NULL;
  ck_assert_int_eq(opd_tensor_empty(shape, nd, dt, (opd_device){OPD_DEVICE_META, -1}, &t), 0);
  return t;
}

static inline opd_tensor *view(opd_tensor *base, int nd, const int64_t *shape,
                               const int64_t *strides, int64_t offset) {
  opd_tensor *t = NULL;
  ck_assert_int_eq(opd_tensor_view_of(base, shape, strides, nd, offset, &t), 0);
  return t;
}

/* Element i of t in row-major logical order, through its strides. */
static inline double at(const opd_tensor *t, int64_t i) {
  const int64_t *sz = opd_tensor_sizes(t), *st = opd_tensor_strides(t);
  int64_t off = 0;
  for (int d = t->ndim - 1; d >= 0; d--) {
    off += (i % sz[d]) * st[d];
    i /= sz[d];
  }
  return opd_test_read(opd_tensor_dtype(t),
                       (const char *)opd_tensor_data(t) + off * (int64_t)opd_dtype_size(t->dtype));
}

#define T(t) opd_iv_tensor_borrow(t)
#define I(v) opd_iv_int(v)
#define D(v) opd_iv_double(v)
#define B(v) opd_iv_bool(v)
#define NONE opd_iv_none()

#endif

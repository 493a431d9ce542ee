/* index_walk.h: what the indexing family's CPU kernels share (internal): a walk over every
 * position of a shape that keeps the element offsets of several strided operands, element
 * loads and stores of any dtype, the elementwise reductions of scatter and index_put, and
 * reading index tensors with bounds checks.
 *
 * [Note: Indexing kernels and their element access]
 * Gather- and scatter-like kernels move single elements between positions that an index
 * decides, so no elementwise engine applies: they walk positions with opd__walk (which
 * starts anywhere, so opd__parallel_for can split the walk) and copy elements by size, or
 * combine them through opd__elem_reduce, which computes floats in double and rounds to the
 * element's dtype after each step (the same value as the step in float32: a double holds the
 * exact sum or product of two floats to well within one rounding) and integers in wrapping
 * int64 arithmetic. Every index read from a tensor is checked against its dimension before
 * the first element is written.
 */
#ifndef OPD_KERNELS_INDEX_WALK_H
#define OPD_KERNELS_INDEX_WALK_H

#include <math.h>
#include <string.h>

#include "src/kernel_util.h"
#include "src/loops.h"

enum { OPD__WALK_MAX_OPS = 4 };

typedef struct opd__walk {
  int ndim, nops;
  int64_t sizes[OPD_MAX_DIMS];
  int64_t strides[OPD__WALK_MAX_OPS][OPD_MAX_DIMS]; /* in elements */
  int64_t idx[OPD_MAX_DIMS];
  int64_t off[OPD__WALK_MAX_OPS]; /* element offsets of the current position */
} opd__walk;

/* A walk over sizes[0..ndim) in row-major order. */
static inline void opd__walk_init(opd__walk *w, const int64_t *sizes, int ndim, int nops) {
  w->ndim = ndim;
  w->nops = nops;
  memcpy(w->sizes, sizes, (size_t)ndim * sizeof *sizes);
}

static inline void opd__walk_set_strides(opd__walk *w, int op, const int64_t *strides) {
  memcpy(w->strides[op], strides, (size_t)w->ndim * sizeof *strides);
}

/* Positions the walk at row-major position `linear`. */
static inline void opd__walk_seek(opd__walk *w, int64_t linear) {
  for (int k = 0; k < w->nops; k++) w->off[k] = 0;
  for (int d = w->ndim - 1; d >= 0; d--) {
    int64_t s = w->sizes[d];
    w->idx[d] = s > 0 ? linear % s : 0;
    linear = s > 0 ? linear / s : 0;
    for (int k = 0; k < w->nops; k++) w->off[k] += w->idx[d] * w->strides[k][d];
  }
}

static inline void opd__walk_next(opd__walk *w) {
  for (int d = w->ndim - 1; d >= 0; d--) {
    for (int k = 0; k < w->nops; k++) w->off[k] += w->strides[k][d];
    if (++w->idx[d] < w->sizes[d]) return;
    for (int k = 0; k < w->nops; k++) w->off[k] -= w->sizes[d] * w->strides[k][d];
    w->idx[d] = 0;
  }
}

/* ---- elements ---- */

static inline double opd__elem_get_f(const char *p, opd_dtype t) {
  uint16_t h;
  float f;
  double d;
  switch (t) {
  case OPD_FLOAT16: memcpy(&h, p, 2); return opd_half_to_float(h);
  case OPD_BFLOAT16: memcpy(&h, p, 2); return opd_bf16_to_float(h);
  case OPD_FLOAT32: memcpy(&f, p, 4); return f;
  default: memcpy(&d, p, 8); return d;
  }
}

static inline void opd__elem_put_f(char *p, opd_dtype t, double v) {
  uint16_t h;
  float f = (float)v;
  switch (t) {
  case OPD_FLOAT16: h = opd_float_to_half(f), memcpy(p, &h, 2); break;
  case OPD_BFLOAT16: h = opd_float_to_bf16(f), memcpy(p, &h, 2); break;
  case OPD_FLOAT32: memcpy(p, &f, 4); break;
  default: memcpy(p, &v, 8); break;
  }
}

static inline int64_t opd__elem_get_i(const char *p, opd_dtype t) {
  int16_t s;
  int32_t w;
  int64_t l;
  switch (t) {
  case OPD_UINT8: return *(const uint8_t *)p;
  case OPD_BOOL: return *(const uint8_t *)p != 0;
  case OPD_INT8: return *(const int8_t *)p;
  case OPD_INT16: memcpy(&s, p, 2); return s;
  case OPD_INT32: memcpy(&w, p, 4); return w;
  default: memcpy(&l, p, 8); return l;
  }
}

/* v truncated to t's width (two's complement, as a C cast to the narrower type) */
static inline void opd__elem_put_i(char *p, opd_dtype t, int64_t v) {
  uint64_t u = (uint64_t)v;
  uint8_t b = t == OPD_BOOL ? v != 0 : (uint8_t)u;
  uint16_t s = (uint16_t)u;
  uint32_t w = (uint32_t)u;
  switch (opd_dtype_size(t)) {
  case 1: memcpy(p, &b, 1); break;
  case 2: memcpy(p, &s, 2); break;
  case 4: memcpy(p, &w, 4); break;
  default: memcpy(p, &u, 8); break;
  }
}

/* A Scalar as an element of dtype t in buf (at least 8 bytes), converted as c10's
 * Scalar::to<T> (OPD_EINVAL when it overflows t). */
static inline int opd__elem_from_scalar(opd_scalar s, opd_dtype t, char *buf) {
  opd__value v;
  int rc = opd__scalar_to(s, t, &v);
  if (rc) return rc;
  if (t == OPD_FLOAT16 || t == OPD_BFLOAT16)
    opd__elem_put_f(buf, t, v.f32);
  else
    memcpy(buf, &v, opd_dtype_size(t));
  return 0;
}

typedef enum opd__reduce_op {
  OPD__REDUCE_NONE, /* assign */
  OPD__REDUCE_SUM,
  OPD__REDUCE_PROD,
  OPD__REDUCE_MAX,
  OPD__REDUCE_MIN,
} opd__reduce_op;

/* *dst = op(*dst, *src), both of dtype t (see [Note: Indexing kernels and their element
 * access]); max and min propagate NaN. */
static inline void opd__elem_reduce(char *dst, const char *src, opd_dtype t, opd__reduce_op op) {
  if (op == OPD__REDUCE_NONE) {
    memcpy(dst, src, opd_dtype_size(t));
  } else if (opd_dtype_is_floating(t)) {
    double a = opd__elem_get_f(dst, t), b = opd__elem_get_f(src, t), r;
    switch (op) {
    case OPD__REDUCE_SUM: r = a + b; break;
    case OPD__REDUCE_PROD: r = a * b; break;
    case OPD__REDUCE_MAX: r = isnan(a) || isnan(b) ? a + b : a > b ? a : b; break;
    default: r = isnan(a) || isnan(b) ? a + b : a < b ? a : b; break;
    }
    opd__elem_put_f(dst, t, r);
  } else if (t == OPD_BOOL) {
    uint8_t a = *(uint8_t *)dst != 0, b = *(const uint8_t *)src != 0;
    *(uint8_t *)dst = op == OPD__REDUCE_SUM || op == OPD__REDUCE_MAX ? (a | b) : (a & b);
  } else {
    int64_t a = opd__elem_get_i(dst, t), b = opd__elem_get_i(src, t), r;
    switch (op) {
    case OPD__REDUCE_SUM: r = OPD__WRAP_ADD(int64_t, a, b); break;
    case OPD__REDUCE_PROD: r = OPD__WRAP_MUL(int64_t, a, b); break;
    case OPD__REDUCE_MAX: r = a > b ? a : b; break;
    default: r = a < b ? a : b; break;
    }
    opd__elem_put_i(dst, t, r);
  }
}

/* The index at element offset `off` of an int64 or int32 index tensor's data. */
static inline int64_t opd__index_at(const char *data, opd_dtype t, int64_t off) {
  if (t == OPD_INT32) {
    int32_t v;
    memcpy(&v, data + off * 4, 4);
    return v;
  }
  int64_t v;
  memcpy(&v, data + off * 8, 8);
  return v;
}

#endif

/* conv_impl.h: the two implementations of the plain convolution's three operations
 * ([Note: Convolution as three products] in kernels/meta/conv_meta.h) that the CPU kernels
 * of kernels/cpu/conv.c choose between: oneDNN (conv_onednn.c, float32) and im2col with
 * OpenBLAS's gemm (conv_direct.c, float32 and float64). */
#ifndef OPD_KERNELS_CONV_IMPL_H
#define OPD_KERNELS_CONV_IMPL_H

#include "meta/conv_meta.h"

typedef enum opd__conv_op {
  OPD__CONV_FWD,         /* y from x and w */
  OPD__CONV_BWD_DATA,    /* x from y and w */
  OPD__CONV_BWD_WEIGHTS, /* w from x and y */
} opd__conv_op;

/* The three operands of the plain convolution of g, contiguous, of g->dtype: x [n, in_c, in...],
 * w [out_c, in_c / groups, k...], y [n, out_c, out...]. The operation overwrites one of them
 * (it is not read) from the other two. */
typedef struct opd__conv_bufs {
  void *x, *w, *y;
} opd__conv_bufs;

/* oneDNN: 0, a negative error, or OPD__CONV_DECLINED when oneDNN has no implementation for
 * the geometry (the caller then computes it directly). float32 only. */
#define OPD__CONV_DECLINED 1
int opd__conv_onednn(opd__conv_op op, const opd__conv_geom *g, const opd__conv_bufs *b);

/* im2col and gemm, any geometry, float32 or float64: 0 or a negative error. */
int opd__conv_direct(opd__conv_op op, const opd__conv_geom *g, const opd__conv_bufs *b);

/* aten::contiguous of t through the dispatcher (t itself, retained, when it is contiguous):
 * the CPU kernels of convolution, pooling and padding read contiguous operands. */
int opd__cpu_contiguous(opd_tensor *t, opd_tensor **out);

/* Element i of a contiguous plane of dtype t (float32, float64, bfloat16 or int64) read as, or
 * written from, a double: the accumulation type of the pooling, padding, fold and upsampling
 * loops (bfloat16 rounded through float). */
static inline double opd__cpu_load(const void *p, opd_dtype t, int64_t i) {
  switch (t) {
  case OPD_FLOAT64: return ((const double *)p)[i];
  case OPD_BFLOAT16: return opd_bf16_to_float(((const uint16_t *)p)[i]);
  case OPD_INT64: return (double)((const int64_t *)p)[i];
  default: return ((const float *)p)[i];
  }
}

static inline void opd__cpu_store(void *p, opd_dtype t, int64_t i, double v) {
  switch (t) {
  case OPD_FLOAT64: ((double *)p)[i] = v; break;
  case OPD_BFLOAT16: ((uint16_t *)p)[i] = opd_float_to_bf16((float)v); break;
  case OPD_INT64: ((int64_t *)p)[i] = (int64_t)v; break;
  default: ((float *)p)[i] = (float)v; break;
  }
}

#endif

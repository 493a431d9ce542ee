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

#endif

/* lapack_solve_meta.h: the argument checks and results of _linalg_solve_ex, shared by its
 * Meta kernel (kernels/meta/lapack_solve_meta.c) and CPU kernel (kernels/cpu/lapack_solve.c). */
#ifndef OPD_KERNELS_LAPACK_SOLVE_META_H
#define OPD_KERNELS_LAPACK_SOLVE_META_H

#include "src/kernel_util.h"

/* The geometry of AX = B (left) or XA = B: A is a batch of n x n matrices; B a batch of
 * n x k (left) or k x n matrices, or of vectors (vector_case: B 1-D, or of A's shape less
 * its last dim, read as k = 1); their batch dims broadcast to batch[0..batch_ndim). */
typedef struct opd__solve_geometry {
  bool vector_case;
  int batch_ndim;
  int64_t batch[OPD_MAX_DIMS];
  int64_t n, k;
} opd__solve_geometry;

/* PyTorch 1.13's checks of _linalg_solve_ex(A, B, left) and its geometry. */
int opd__linalg_solve_meta(const opd_tensor *a, const opd_tensor *b, bool left,
                           opd__solve_geometry *geo);

/* The four results (result, LU, pivots, info) on `device`, laid out as PyTorch's: result of
 * B's dtype and the broadcast shape, column-major matrices when left (the last two dims of a
 * vector result too); LU of A's shape, column-major matrices; pivots (A's shape less the
 * last dim) and info (A's batch shape) int32 and contiguous. res[i] are NULL on an error. */
int opd__linalg_solve_alloc(const opd_tensor *a, const opd_tensor *b, bool left,
                            const opd__solve_geometry *geo, opd_device device, opd_tensor **res);

#endif

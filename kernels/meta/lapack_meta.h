/* lapack_meta.h: the argument checks and results of the LAPACK-backed operators
 * (linalg_lu_factor_ex, _linalg_det, linalg_inv_ex, linalg_cholesky_ex,
 * _linalg_slogdet, _linalg_eigh, _linalg_svd, linalg_qr), shared by their Meta
 * kernels (kernels/meta/lapack_meta.c) and CPU kernels (kernels/cpu/lapack.c). */
#ifndef OPD_KERNELS_LAPACK_META_H
#define OPD_KERNELS_LAPACK_META_H

#include "src/kernel_util.h"

typedef enum {
  OPD__LU_FACTOR_EX,
  OPD__LINALG_DET,
  OPD__INV_EX,
  OPD__CHOLESKY_EX,
  OPD__SLOGDET,
  OPD__EIGH,
  OPD__SVD,
  OPD__QR
} opd__lapack_op;

/* The number of arguments each takes on the stack and of results it returns. */
int opd__lapack_nargs(opd__lapack_op op);
int opd__lapack_nres(opd__lapack_op op);

/* The checks of a batch of square float32 / float64 matrices, errors prefixed by name. */
int opd__linalg_square_check(const char *name, const opd_tensor *a);

/* Checks the arguments (args: the stack's opd__lapack_nargs(op) values) with PyTorch 1.13's
 * errors and allocates the results on the input's device, as PyTorch lays them out: matrices
 * column-major in each batch element (strides (.., 1, rows)), pivots and info int32 and
 * contiguous. res[i] are NULL on an error. */
int opd__lapack_prepare(opd__lapack_op op, opd_ivalue *args, opd_tensor **res);

#endif

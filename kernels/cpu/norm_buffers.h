/* norm_buffers.h: what the CPU kernels of the normalization and loss operators share
 * (internal): a tensor's elements gathered into a row-major buffer of doubles, and a new
 * contiguous result filled from one.
 *
 * [Note: Normalization and losses in double]
 * The backward operators of the norms and softmax, and the losses, reduce over groups and
 * mix every operand in each group. Their CPU kernels gather each strided operand once into a
 * contiguous double buffer (any dtype, any layout), compute in double, accumulating in
 * double, and round once into a new contiguous result. PyTorch computes float32 in float
 * with float accumulators, so opd's float32 results are at least as accurate; the
 * conformance cases' tolerances allow for PyTorch's accumulation error.
 */
#ifndef OPD_KERNELS_NORM_BUFFERS_H
#define OPD_KERNELS_NORM_BUFFERS_H

#include <stdint.h>

#include "src/kernel_util.h"

/* A new buffer of n doubles, zeroed (n >= 0; at least one element is allocated). */
int opd__norm_zeros(int64_t n, double **out);
/* t's elements in row-major order as doubles in a new buffer; *out NULL for a NULL t. */
int opd__norm_load(const opd_tensor *t, double **out);
/* The same for t broadcast to `sizes` (t's shape must broadcast to it). */
int opd__norm_load_as(const opd_tensor *t, const int64_t *sizes, int ndim, double **out);
/* An int64 tensor's elements in row-major order, in a new buffer. */
int opd__norm_load_i64(const opd_tensor *t, int64_t **out);
/* A new contiguous CPU tensor of spec. */
int opd__norm_result(const opd_out_spec *spec, opd_tensor **out);
/* dst's elements (a contiguous tensor of a floating dtype) from src, rounded once. */
void opd__norm_store(opd_tensor *dst, const double *src);

#endif

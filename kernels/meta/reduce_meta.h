/* reduce_meta.h: the meta functions of the reductions (sum, mean, amax, argmax), softmax and
 * layer norm (kernels/meta/reduce_meta.c), shared by their Meta and CPU kernels. Each checks
 * its arguments, raising PyTorch 1.13's errors, and computes the output spec without touching
 * data. */
#ifndef OPD_KERNELS_REDUCE_META_H
#define OPD_KERNELS_REDUCE_META_H

#include <stdint.h>

#include "src/kernel_util.h"

/* sum.dim_IntList and mean.dim: the output spec and the mask of reduced dims (bit d set: dim d
 * is reduced; dim None or [] reduces every dim). `dtype` is OPD_DTYPE_UNDEFINED for None. */
int opd__sum_meta(const opd_tensor *self, opd_int_list dim, bool keepdim, opd_dtype dtype,
                  opd_out_spec *spec, uint64_t *mask);
int opd__mean_meta(const opd_tensor *self, opd_int_list dim, bool keepdim, opd_dtype dtype,
                   opd_out_spec *spec, uint64_t *mask);
/* amax: [] reduces every dim; reducing a size-0 dim is an error. */
int opd__amax_meta(const opd_tensor *self, opd_int_list dim, bool keepdim, opd_out_spec *spec,
                   uint64_t *mask);
/* argmax: int64 output; dim None reduces the flattened tensor (mask: every dim). */
int opd__argmax_meta(const opd_tensor *self, opd_opt_int dim, bool keepdim, opd_out_spec *spec,
                     uint64_t *mask);
/* _softmax and _log_softmax: the output spec and the wrapped dim (0 for a 0-d tensor).
 * half_to_float is accepted for Half inputs only (the CUDA rule; the CPU kernels reject it). */
int opd__softmax_meta(const opd_tensor *self, int64_t dim, bool half_to_float, opd_out_spec *spec,
                      int64_t *wrapped_dim);
/* native_layer_norm: the spec of the output and of mean / rstd, and the geometry: `rows`
 * normalized groups of `cols` elements (the trailing normalized_shape dims). */
int opd__layer_norm_meta(const opd_tensor *input, opd_int_list normalized_shape,
                         const opd_tensor *weight, const opd_tensor *bias, opd_out_spec *out,
                         opd_out_spec *stat, int64_t *rows, int64_t *cols);

/* Pushes the n results of a boxed kernel (taking their references) if rc is 0; otherwise, or
 * if a push fails, releases them and leaves nothing pushed. Returns rc or the push error. */
int opd__push_results(opd_stack *stack, opd_tensor **res, int n, int rc);

#endif

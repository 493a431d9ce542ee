/* index_scatter_meta.h: the meta functions of gather, the scatter operators, index_add,
 * index_copy and index_fill_ (kernels/meta/index_scatter_meta.c), shared with their CPU and
 * CUDA kernels (kernels/cpu/index_scatter.c, kernels/cuda/src/cuda_index.c), and the wrappers
 * of gather and the scatters that both call. */
#ifndef OPD_KERNELS_INDEX_SCATTER_META_H
#define OPD_KERNELS_INDEX_SCATTER_META_H

#include "cpu/index_walk.h"
#include "src/kernel_util.h"

/* gather(self, dim, index): the output is index's shape and self's dtype. */
int opd__gather_meta(opd_tensor *self, int64_t dim, opd_tensor *index, int64_t *wrapped,
                     opd_out_spec *spec);
/* The scatter operators' checks (src NULL for a value); ATen names them all "scatter". */
int opd__scatter_meta(opd_tensor *self, int64_t dim, opd_tensor *index, opd_tensor *src,
                      int64_t *wrapped);
/* scatter.reduce's "add" / "multiply", scatter_reduce's "sum", "prod", "mean", "amax",
 * "amin" (mean: OPD__REDUCE_SUM with *mean set). */
int opd__scatter_reduce_arg(const char *reduce, bool two, opd__reduce_op *op, bool *mean);
/* index_add, index_copy, index_fill_ (value: a 0-d tensor or NULL for a Scalar). */
int opd__index_add_meta(opd_tensor *self, int64_t dim, opd_tensor *index, opd_tensor *source,
                        int64_t *wrapped);
int opd__index_copy_meta(opd_tensor *self, int64_t dim, opd_tensor *index, opd_tensor *source,
                         int64_t *wrapped);
int opd__index_fill_meta(opd_tensor *self, int64_t dim, opd_tensor *index, opd_tensor *value,
                         int64_t *wrapped);

/* [Note: A scatter's wrapper and its device's walk]
 * gather's and the scatter operators' CPU and CUDA kernels differ only in the walk over index.
 * Each device's kernel calls an opd__*_run function below with its walk; the run function checks
 * the arguments (the meta functions' errors, in the order the kernels raise them), makes the
 * output (a contiguous copy of self for an out-of-place scatter), runs the walk and releases the
 * output when the walk fails (an in-place one returns self with its version bumped). */
/* A device's gather (other: the output, read from self) or scatter (into self, of other or of
 * the element `value`, combined by op) along the wrapped dim; a bad index raises PyTorch's
 * error. */
typedef int (*opd__scatter_walk)(bool gather, opd_tensor *self, int64_t dim, opd_tensor *index,
                                 opd_tensor *other, const char *value, opd__reduce_op op);
/* A new contiguous copy of self on its device (the output of an out-of-place scatter). */
int opd__scatter_copy_of(opd_tensor *self, opd_tensor **out);
/* The result of an out-of-place kernel that computed into r (rc its status): r, or r released. */
int opd__scatter_finish(int rc, opd_tensor *r, opd_tensor **out);
/* The same of an in-place kernel: self, retained, with its version bumped. */
int opd__scatter_finish_inplace(int rc, opd_tensor *self, opd_tensor **out);
int opd__gather_run(opd__scatter_walk walk, opd_tensor *self, int64_t dim, opd_tensor *index,
                    opd_tensor **out);
/* scatter of src (or of *value; src NULL) with op into a copy of self. */
int opd__scatter_run(opd__scatter_walk walk, opd_tensor *self, int64_t dim, opd_tensor *index,
                     opd_tensor *src, const opd_scalar *value, opd__reduce_op op, opd_tensor **out);
/* scatter.reduce and scatter.value_reduce: the reduction named by reduce ("add", "multiply"). */
int opd__scatter_reduce_run(opd__scatter_walk walk, opd_tensor *self, int64_t dim,
                            opd_tensor *index, opd_tensor *src, const opd_scalar *value,
                            const char *reduce, opd_tensor **out);
/* scatter_.src and scatter_add_: src into self. */
int opd__scatter_inplace_run(opd__scatter_walk walk, opd_tensor *self, int64_t dim,
                             opd_tensor *index, opd_tensor *src, opd__reduce_op op,
                             opd_tensor **out);

#endif

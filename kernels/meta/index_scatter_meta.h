/* index_scatter_meta.h: the meta functions of gather, the scatter operators, index_add,
 * index_copy and index_fill_ (kernels/meta/index_scatter_meta.c), shared with their CPU
 * kernels (kernels/cpu/index_scatter.c). */
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

#endif

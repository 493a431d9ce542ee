/* index_meta.h: the meta functions of aten::index_select and aten::cat
 * (kernels/meta/index_meta.c), shared by their Meta, CPU and CUDA kernels. */
#ifndef OPD_KERNELS_INDEX_META_H
#define OPD_KERNELS_INDEX_META_H

#include "src/kernel_util.h"

int opd__index_select_meta(opd_tensor *self, int64_t dim, opd_tensor *index, opd_out_spec *spec,
                           int64_t *wrapped, opd_device *device);
/* index_select as the CPU and CUDA kernels compute it: the meta function's results and
 * `limit`, the size of the indexed dim (1 for a 0-d self). */
typedef struct opd__index_select_plan {
  opd_out_spec spec;
  opd_device device;
  int64_t dim; /* wrapped */
  int64_t limit;
} opd__index_select_plan;
/* The CPU and CUDA kernels' start: the plan and their checks before reading indices. *out is
 * NULL, or the result when there is nothing to index (self of more than one dim, empty
 * index): the kernel returns it. */
int opd__index_select_prepare(opd_tensor *self, int64_t dim, opd_tensor *index,
                              opd__index_select_plan *p, opd_tensor **out);
int opd__cat_meta(opd_tensor_list tensors, int64_t dim, opd_out_spec *spec, int64_t *wrapped,
                  opd_device *device);
/* cat's meta function, then the output allocated on the tensors' device: the Meta kernel, and
 * the start of the CPU and CUDA kernels (which then fill *out); *wrapped: the wrapped dim. */
int opd__cat_alloc(opd_tensor_list tensors, int64_t dim, int64_t *wrapped, opd_tensor **out);
/* PyTorch's legacy rule: cat skips 1-D tensors of size 0. */
bool opd__cat_skipped(const opd_tensor *t);

#endif

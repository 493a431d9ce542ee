/* index_meta.h: the meta functions of aten::index_select and aten::cat
 * (kernels/meta/index_meta.c), shared by their Meta and CPU kernels. */
#ifndef OPD_KERNELS_INDEX_META_H
#define OPD_KERNELS_INDEX_META_H

#include "src/kernel_util.h"

int opd__index_select_meta(opd_tensor *self, int64_t dim, opd_tensor *index, opd_out_spec *spec,
                           int64_t *wrapped, opd_device *device);
int opd__cat_meta(opd_tensor_list tensors, int64_t dim, opd_out_spec *spec, int64_t *wrapped,
                  opd_device *device);
/* PyTorch's legacy rule: cat skips 1-D tensors of size 0. */
bool opd__cat_skipped(const opd_tensor *t);

#endif

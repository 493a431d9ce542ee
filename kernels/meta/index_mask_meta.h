/* index_mask_meta.h: the meta functions of masked_fill_.Tensor, masked_scatter_, put_ and take
 * (kernels/meta/index_mask_meta.c), shared with their CPU kernels (kernels/cpu/index_mask.c).
 * masked_select and nonzero have no Meta kernel: their output shape depends on data. */
#ifndef OPD_KERNELS_INDEX_MASK_META_H
#define OPD_KERNELS_INDEX_MASK_META_H

#include "src/kernel_util.h"

int opd__masked_fill_tensor_meta(opd_tensor *self, opd_tensor *mask, opd_tensor *value);
int opd__masked_scatter_meta(opd_tensor *self, opd_tensor *mask, opd_tensor *source);
int opd__put_meta(opd_tensor *self, opd_tensor *index, opd_tensor *source);
/* take's output: index's shape, self's dtype */
int opd__take_meta(opd_tensor *self, opd_tensor *index, opd_out_spec *spec);

#endif

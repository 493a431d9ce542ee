/* index_shape_meta.h: the meta functions of flip, roll, tril and triu
 * (kernels/meta/index_shape_meta.c), shared with their CPU kernels (kernels/cpu/index_shape.c).
 * Each output has self's shape and dtype. */
#ifndef OPD_KERNELS_INDEX_SHAPE_META_H
#define OPD_KERNELS_INDEX_SHAPE_META_H

#include "src/kernel_util.h"

/* flipped[d]: whether dimension d is flipped. */
int opd__flip_meta(opd_tensor *self, opd_int_list dims, bool *flipped);
/* shift[d]: the shift of dimension d in [0, size), or, with *flat, shift[0] that of the
 * flattened tensor. */
int opd__roll_meta(opd_tensor *self, opd_int_list shifts, opd_int_list dims, int64_t *shift,
                   bool *flat);
int opd__tril_meta(opd_tensor *self);

#endif

/* index_cum_meta.h: the meta function of cumsum and cumprod (kernels/meta/index_cum_meta.c),
 * shared with their CPU kernels (kernels/cpu/index_cum.c). */
#ifndef OPD_KERNELS_INDEX_CUM_META_H
#define OPD_KERNELS_INDEX_CUM_META_H

#include "src/kernel_util.h"

/* The output: self's shape, `dtype`, or int64 for an integral or bool self without one. */
int opd__cum_meta(opd_tensor *self, int64_t dim, opd_dtype dtype, int64_t *wrapped,
                  opd_out_spec *spec);

#endif

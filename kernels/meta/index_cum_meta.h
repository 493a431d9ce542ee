/* index_cum_meta.h: the meta functions of cumsum, cumprod and _logcumsumexp
 * (kernels/meta/index_cum_meta.c), shared with their CPU kernels (kernels/cpu/index_cum.c). */
#ifndef OPD_KERNELS_INDEX_CUM_META_H
#define OPD_KERNELS_INDEX_CUM_META_H

#include "src/kernel_util.h"

/* The output: self's shape, `dtype`, or int64 for an integral or bool self without one. */
int opd__cum_meta(opd_tensor *self, int64_t dim, opd_dtype dtype, int64_t *wrapped,
                  opd_out_spec *spec);
/* _logcumsumexp: self's shape and dtype, which must be floating
 * ("\"logcumsumexp_out_cpu\" not implemented for 'Long'"). */
int opd__logcumsumexp_meta(opd_tensor *self, int64_t dim, int64_t *wrapped, opd_out_spec *spec);

#endif

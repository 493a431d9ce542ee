/* reduce_order_meta.h: the meta functions of the order statistics median, nanmedian and mode
 * (kernels/meta/reduce_order_meta.c), shared with their CPU kernels (kernels/cpu/reduce_order.c).
 */
#ifndef OPD_KERNELS_REDUCE_ORDER_META_H
#define OPD_KERNELS_REDUCE_ORDER_META_H

#include "src/kernel_util.h"

/* median and nanmedian of every element: a 0-d result of self's dtype; the dtypes of ATen's
 * CPU kernel (no bool, float16 or bfloat16: "\"median_cpu\" not implemented for 'Bool'"). */
int opd__median_all_meta(const opd_tensor *self, opd_out_spec *spec);

/* median.dim, nanmedian.dim and mode (`is_mode`): values of self's dtype and int64 indices
 * (their spec, the indices' dtype aside), self reduced over dim (*wrapped); a reduced dim of
 * size 0 is refused ("median(): Expected reduction dim 1 to have non-zero size."). */
int opd__order_dim_meta(bool is_mode, const opd_tensor *self, int64_t dim, bool keepdim,
                        int64_t *wrapped, opd_out_spec *spec);

#endif

/* reduce_distance_meta.h: the meta functions of _cdist_forward and _pdist_forward
 * (kernels/meta/reduce_distance_meta.c), shared with their CPU kernels
 * (kernels/cpu/reduce_distance.c). */
#ifndef OPD_KERNELS_REDUCE_DISTANCE_META_H
#define OPD_KERNELS_REDUCE_DISTANCE_META_H

#include "src/kernel_util.h"

/* _cdist_forward: x1 (*, r1, c) and x2 (*, r2, c) of one floating dtype, p >= 0, mode None or
 * 0..2: the result of x1's dtype, their broadcast batch dims followed by (r1, r2). */
int opd__cdist_meta(const opd_tensor *x1, const opd_tensor *x2, double p, opd_opt_int mode,
                    opd_out_spec *spec);
/* _pdist_forward: self contiguous, at least 2-D, floating: a 1-D result of the n (n - 1) / 2
 * distances of self's n = size(0) rows (size(1) elements each). */
int opd__pdist_meta(const opd_tensor *self, opd_out_spec *spec);

#endif

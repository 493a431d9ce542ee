/* reduce_histc_meta.h: the meta function of histc (kernels/meta/reduce_histc_meta.c), shared
 * with its CPU kernel (kernels/cpu/reduce_histc.c). */
#ifndef OPD_KERNELS_REDUCE_HISTC_META_H
#define OPD_KERNELS_REDUCE_HISTC_META_H

#include "src/kernel_util.h"

/* histc(self, bins, min, max): a floating self ("\"histogram_cpu\" not implemented for
 * 'Long'"), bins > 0; a 1-D result of `bins` counts in self's dtype. A range given (min !=
 * max) must be finite and increasing; one read from the data (min == max) is checked by the
 * CPU kernel (opd__histc_range_check). */
int opd__histc_meta(const opd_tensor *self, int64_t bins, double min, double max,
                    opd_out_spec *spec);
int opd__histc_range_check(double min, double max);

#endif

/* factory_meta.h: the checks and allocation shared by the CPU and Meta kernels of
 * aten::empty.memory_format and aten::empty_strided (kernels/meta/factory_meta.c). */
#ifndef OPD_KERNELS_FACTORY_META_H
#define OPD_KERNELS_FACTORY_META_H

#include "src/kernel_util.h"

int opd__empty_generic(opd_int_list size, opd_int_list stride, opd_dtype dtype, int64_t layout,
                       opd_opt_bool pin_memory, int64_t memory_format, opd_device device,
                       opd_tensor **out);

#endif

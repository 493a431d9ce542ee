/* factory.c: the CPU kernels of aten::empty.memory_format and aten::empty_strided: storage
 * from the CPU (caching) allocator, uninitialized. Checks and geometry are in
 * kernels/meta/factory_meta.c, with the Meta and BackendSelect kernels. */
#include "src/kernel_util.h"
#include "meta/factory_meta.h"

int opd__cpu_empty_memory_format(const opd_kernel_ctx *ctx, opd_int_list size, opd_dtype dtype,
                                 int64_t layout, opd_device device, opd_opt_bool pin_memory,
                                 int64_t memory_format, opd_tensor **out) {
  (void)ctx;
  (void)device;
  return opd__empty_generic(size, (opd_int_list){NULL, -1}, dtype, layout, pin_memory,
                            memory_format, (opd_device){OPD_DEVICE_CPU, -1}, out);
}

int opd__cpu_empty_strided(const opd_kernel_ctx *ctx, opd_int_list size, opd_int_list stride,
                           opd_dtype dtype, int64_t layout, opd_device device,
                           opd_opt_bool pin_memory, opd_tensor **out) {
  (void)ctx;
  (void)device;
  return opd__empty_generic(size, stride, dtype, layout, pin_memory, -1,
                            (opd_device){OPD_DEVICE_CPU, -1}, out);
}

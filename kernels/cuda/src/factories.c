/* factories.c: the CUDA kernels of aten::empty.memory_format and aten::empty_strided, in
 * every build: they allocate through the allocator registered for CUDA devices, so that
 * without CUDA (no device, or a build without it) a tensor made for a CUDA device, directly
 * or by a composite such as _to_copy, fails with OPD_EUNAVAILABLE and the reason. */
#include "cuda_kernels.h"
#include "meta/factory_meta.h"

static opd_device cuda_device(opd_device device) {
  return (opd_device){OPD_DEVICE_CUDA, device.index < 0 ? 0 : device.index};
}

int opd__cuda_empty_memory_format(const opd_kernel_ctx *ctx, opd_int_list size, opd_dtype dtype,
                                  int64_t layout, opd_device device, opd_opt_bool pin_memory,
                                  int64_t memory_format, opd_tensor **out) {
  (void)ctx;
  return opd__empty_generic(size, (opd_int_list){NULL, -1}, dtype, layout, pin_memory,
                            memory_format, cuda_device(device), out);
}

int opd__cuda_empty_strided(const opd_kernel_ctx *ctx, opd_int_list size, opd_int_list stride,
                            opd_dtype dtype, int64_t layout, opd_device device,
                            opd_opt_bool pin_memory, opd_tensor **out) {
  (void)ctx;
  return opd__empty_generic(size, stride, dtype, layout, pin_memory, -1, cuda_device(device), out);
}

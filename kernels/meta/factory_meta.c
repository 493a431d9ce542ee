/* factory_meta.c: the allocating factories aten::empty.memory_format and aten::empty_strided:
 * their argument checks and geometry (shared with the CPU kernels of kernels/cpu/factory.c),
 * their Meta kernels, and their BackendSelect kernels.
 *
 * [Note: BackendSelect for factories]
 * A factory has no tensor argument to take a backend from: the call's key set holds only
 * the thread-local keys, and BackendSelect (always included) is the highest one with a
 * kernel. As c10's generated BackendSelect kernels do, it computes the backend key from
 * the `device` argument (None: CPU) and redispatches with a key set holding that key
 * alone, so the CPU or Meta kernel (or a missing-kernel error for another device) runs.
 */
#include <stdio.h>

#include "factory_meta.h"
#include "opd/checked.h"

/* c10::MemoryFormat */
enum { FORMAT_CONTIGUOUS, FORMAT_PRESERVE, FORMAT_CHANNELS_LAST, FORMAT_CHANNELS_LAST_3D };

/* Strides of a contiguous tensor restrided to `format`, as c10's empty_tensor_restride. */
static int format_strides(const int64_t *sizes, int ndim, int64_t format, int64_t *strides) {
  if (format < 0 || format == FORMAT_CONTIGUOUS) {
    if (opd_contiguous_strides(sizes, ndim, strides) < 0)
      return opd_error(OPD_EINVAL, "tensor sizes overflow int64");
    return 0;
  }
  if (format == FORMAT_PRESERVE) return opd_error(OPD_EINVAL, "unsupported memory format Preserve");
  if (format == FORMAT_CHANNELS_LAST && ndim != 4)
    return opd_error(OPD_EINVAL, "required rank 4 tensor to use channels_last format");
  if (format == FORMAT_CHANNELS_LAST_3D && ndim != 5)
    return opd_error(OPD_EINVAL, "required rank 5 tensor to use channels_last_3d format");
  if (format != FORMAT_CHANNELS_LAST && format != FORMAT_CHANNELS_LAST_3D)
    return opd_error(OPD_EINVAL, "unsupported memory format %lld", (long long)format);
  /* channels (dimension 1) innermost, then the spatial dimensions from the last, then N */
  static const int order[2][5] = {{1, 3, 2, 0}, {1, 4, 3, 2, 0}};
  const int *o = order[ndim == 5];
  int64_t s = 1;
  bool overflow = false; /* of the next stride (the last product, numel, is checked later) */
  for (int i = 0; i < ndim; i++) {
    if (overflow) return opd_error(OPD_EINVAL, "tensor sizes overflow int64");
    strides[o[i]] = s;
    overflow = opd_ckd_mul(&s, s, sizes[o[i]]);
  }
  return 0;
}

int opd__empty_generic(opd_int_list size, opd_int_list stride, opd_dtype dtype, int64_t layout,
                       opd_opt_bool pin_memory, int64_t memory_format, opd_device device,
                       opd_tensor **out) {
  if (size.len > OPD_MAX_DIMS)
    return opd_error(OPD_EINVAL, "tensors have at most %d dimensions, got %lld", OPD_MAX_DIMS,
                     (long long)size.len);
  if (dtype == OPD_DTYPE_UNDEFINED) dtype = OPD_DEFAULT_DTYPE;
  if (!opd_dtype_valid(dtype)) return opd_error(OPD_EINVAL, "invalid dtype %d", (int)dtype);
  if (layout != -1 && layout != 0)
    return opd_error(OPD_EINVAL, "only the strided layout is supported, got layout %lld",
                     (long long)layout);
  if (pin_memory.has_value && pin_memory.value)
    return opd_error(OPD_EINVAL, "Need to provide pin_memory allocator to use pin memory.");
  int ndim = (int)size.len;
  for (int d = 0; d < ndim; d++) {
    if (size.data[d] < 0) {
      char buf[OPD_MAX_DIMS * 24];
      return opd_error(OPD_EINVAL, "Trying to create tensor with negative dimension %lld: %s",
                       (long long)size.data[d],
                       opd__format_sizes(size.data, ndim, buf, sizeof buf));
    }
  }
  int64_t strides[OPD_MAX_DIMS];
  if (stride.len >= 0) {
    if (stride.len != size.len)
      return opd_error(OPD_EINVAL,
                       "dimensionality of sizes (%lld) must match dimensionality of strides (%lld)",
                       (long long)size.len, (long long)stride.len);
    for (int d = 0; d < ndim; d++) strides[d] = stride.data[d];
  } else {
    int rc = format_strides(size.data, ndim, memory_format, strides);
    if (rc) return rc;
  }
  return opd_tensor_empty_strided(size.data, strides, ndim, dtype, device, out);
}

int opd__meta_empty_memory_format(const opd_kernel_ctx *ctx, opd_int_list size, opd_dtype dtype,
                                  int64_t layout, opd_device device, opd_opt_bool pin_memory,
                                  int64_t memory_format, opd_tensor **out) {
  (void)ctx;
  (void)device;
  return opd__empty_generic(size, (opd_int_list){NULL, -1}, dtype, layout, pin_memory,
                            memory_format, (opd_device){OPD_DEVICE_META, -1}, out);
}

int opd__meta_empty_strided(const opd_kernel_ctx *ctx, opd_int_list size, opd_int_list stride,
                            opd_dtype dtype, int64_t layout, opd_device device,
                            opd_opt_bool pin_memory, opd_tensor **out) {
  (void)ctx;
  (void)device;
  return opd__empty_generic(size, stride, dtype, layout, pin_memory, -1,
                            (opd_device){OPD_DEVICE_META, -1}, out);
}

/* ---- BackendSelect ---- */

OPD_DEFINE_TYPED_CALL(empty_memory_format_call, Tensor, IntList, OptDType, OptLayout, OptDevice,
                      OptBool, OptMemoryFormat)
OPD_DEFINE_TYPED_CALL(empty_strided_call, Tensor, IntList, IntList, OptDType, OptLayout, OptDevice,
                      OptBool)

/* The backend key `device` names (None: CPU); Undefined with an error recorded for a device
 * type that is not a backend. */
static opd_dispatch_key backend_key(opd_device device) {
  opd_dispatch_key key = device.type < 0 ? OPD_KEY_CPU : opd_device_key(device);
  if (key == OPD_KEY_Undefined) opd_error(OPD_EINVAL, "invalid device type %d", device.type);
  return key;
}

int opd__bs_empty_memory_format(const opd_kernel_ctx *ctx, opd_int_list size, opd_dtype dtype,
                                int64_t layout, opd_device device, opd_opt_bool pin_memory,
                                int64_t memory_format, opd_tensor **out) {
  opd_dispatch_key key = backend_key(device);
  if (key == OPD_KEY_Undefined) return OPD_EINVAL;
  return empty_memory_format_call_with_keyset(ctx->op, opd_keyset_of(key), size, dtype, layout,
                                              device, pin_memory, memory_format, out);
}

int opd__bs_empty_strided(const opd_kernel_ctx *ctx, opd_int_list size, opd_int_list stride,
                          opd_dtype dtype, int64_t layout, opd_device device,
                          opd_opt_bool pin_memory, opd_tensor **out) {
  opd_dispatch_key key = backend_key(device);
  if (key == OPD_KEY_Undefined) return OPD_EINVAL;
  return empty_strided_call_with_keyset(ctx->op, opd_keyset_of(key), size, stride, dtype, layout,
                                        device, pin_memory, out);
}

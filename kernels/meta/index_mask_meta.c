/* index_mask_meta.c: masked_fill_.Tensor, masked_scatter_, put_ and take: their argument
 * checks with PyTorch 1.13's errors (shared with kernels/cpu/index_mask.c) and their Meta
 * kernels. */
#include "index_mask_meta.h"

#include <string.h>

#include "elementwise_meta.h"

int opd__masked_fill_tensor_meta(opd_tensor *self, opd_tensor *mask, opd_tensor *value) {
  if (value->ndim != 0)
    return opd_error(OPD_EINVAL,
                     "masked_fill_ only supports a 0-dimensional value tensor, but got tensor with "
                     "%d dimension(s).",
                     value->ndim);
  return opd__masked_fill_meta(self, mask);
}

int opd__masked_scatter_meta(opd_tensor *self, opd_tensor *mask, opd_tensor *source) {
  opd_tensor *t[3] = {self, mask, source};
  opd_device device;
  int rc = opd__common_device(t, 3, &device);
  if (rc) return rc;
  if (opd_tensor_dtype(mask) != OPD_BOOL)
    return opd_error(OPD_EINVAL,
                     "masked_scatter_ only supports boolean masks, but got mask with dtype %s",
                     opd_dtype_c10_name(opd_tensor_dtype(mask)));
  if (opd_tensor_dtype(self) != opd_tensor_dtype(source))
    return opd_error(
        OPD_EINVAL, "masked_scatter: expected self and source to have same dtypes but got%s and %s",
        opd_dtype_c10_name(opd_tensor_dtype(self)), opd_dtype_c10_name(opd_tensor_dtype(source)));
  return opd__check_inplace_shape(self, mask);
}

int opd__put_meta(opd_tensor *self, opd_tensor *index, opd_tensor *source) {
  opd_tensor *t[3] = {self, index, source};
  opd_device device;
  int rc = opd__common_device(t, 3, &device);
  if (rc) return rc;
  if (opd_tensor_dtype(index) != OPD_INT64)
    return opd_error(OPD_EINVAL, "put_(): Expected a long tensor for index, but got %s",
                     opd_dtype_c10_name(opd_tensor_dtype(index)));
  if (opd_tensor_dtype(self) != opd_tensor_dtype(source))
    return opd_error(OPD_EINVAL,
                     "put_(): self and source expected to have the same dtype, but got "
                     "self.dtype = %s and source.dtype = %s",
                     opd_dtype_c10_name(opd_tensor_dtype(self)),
                     opd_dtype_c10_name(opd_tensor_dtype(source)));
  if (index->numel != source->numel)
    return opd_error(OPD_EINDEX,
                     "put_(): Expected source and index to have the same number of elements, but "
                     "got source.numel() = %lld, index.numel() = %lld",
                     (long long)source->numel, (long long)index->numel);
  return 0;
}

int opd__take_meta(opd_tensor *self, opd_tensor *index, opd_out_spec *spec) {
  opd_tensor *t[2] = {self, index};
  opd_device device;
  int rc = opd__common_device(t, 2, &device);
  if (rc) return rc;
  if (opd_tensor_dtype(index) != OPD_INT64)
    return opd_error(OPD_EINVAL, "take(): Expected a long tensor for index, but got %s",
                     opd_dtype_c10_name(opd_tensor_dtype(index)));
  if (self->numel == 0 && index->numel != 0)
    return opd_error(OPD_EINDEX, "take(): tried to take from an empty tensor");
  spec->ndim = index->ndim;
  spec->dtype = opd_tensor_dtype(self);
  memcpy(spec->sizes, opd_tensor_sizes(index), (size_t)index->ndim * sizeof(int64_t));
  return 0;
}

/* ---- Meta kernels ---- */

/* take's output shape does not depend on data: graphs infer it through this kernel, which
 * PyTorch 1.13 does not have. */
int opd__meta_take(const opd_kernel_ctx *ctx, opd_tensor *self, opd_tensor *index,
                   opd_tensor **out) {
  (void)ctx;
  opd_out_spec spec;
  int rc = opd__take_meta(self, index, &spec);
  return rc ? rc : opd__alloc_output(&spec, (opd_device){OPD_DEVICE_META, -1}, out);
}

static int inplace(int rc, opd_tensor *self, opd_tensor **out) {
  if (rc) return rc;
  opd_tensor_bump_version(self);
  opd_tensor_retain(self);
  *out = self;
  return 0;
}

int opd__meta_masked_fill__tensor(const opd_kernel_ctx *ctx, opd_tensor *self, opd_tensor *mask,
                                  opd_tensor *value, opd_tensor **out) {
  (void)ctx;
  return inplace(opd__masked_fill_tensor_meta(self, mask, value), self, out);
}

int opd__meta_masked_scatter_(const opd_kernel_ctx *ctx, opd_tensor *self, opd_tensor *mask,
                              opd_tensor *source, opd_tensor **out) {
  (void)ctx;
  return inplace(opd__masked_scatter_meta(self, mask, source), self, out);
}

int opd__meta_put_(const opd_kernel_ctx *ctx, opd_tensor *self, opd_tensor *index,
                   opd_tensor *source, bool accumulate, opd_tensor **out) {
  (void)ctx;
  (void)accumulate;
  return inplace(opd__put_meta(self, index, source), self, out);
}

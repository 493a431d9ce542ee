/* index_cum_meta.c: cumsum, cumprod and _logcumsumexp: their checks and output (shared with
 * kernels/cpu/index_cum.c) and their Meta kernels. */
#include "index_cum_meta.h"

#include <string.h>

int opd__cum_meta(opd_tensor *self, int64_t dim, opd_dtype dtype, int64_t *wrapped,
                  opd_out_spec *spec) {
  int rc = opd__wrap_dim(dim, self->ndim, wrapped);
  if (rc) return rc;
  opd_dtype t = opd_tensor_dtype(self);
  spec->dtype = dtype != OPD_DTYPE_UNDEFINED ? dtype : opd_dtype_is_floating(t) ? t : OPD_INT64;
  spec->ndim = self->ndim;
  memcpy(spec->sizes, opd_tensor_sizes(self), (size_t)self->ndim * sizeof(int64_t));
  return 0;
}

static int meta_cum(opd_tensor *self, int64_t dim, opd_dtype dtype, opd_tensor **out) {
  int64_t d;
  opd_out_spec spec;
  int rc = opd__cum_meta(self, dim, dtype, &d, &spec);
  return rc ? rc : opd__alloc_output(&spec, (opd_device){OPD_DEVICE_META, -1}, out);
}

int opd__meta_cumsum(const opd_kernel_ctx *ctx, opd_tensor *self, int64_t dim, opd_dtype dtype,
                     opd_tensor **out) {
  (void)ctx;
  return meta_cum(self, dim, dtype, out);
}

int opd__meta_cumprod(const opd_kernel_ctx *ctx, opd_tensor *self, int64_t dim, opd_dtype dtype,
                      opd_tensor **out) {
  (void)ctx;
  return meta_cum(self, dim, dtype, out);
}

int opd__logcumsumexp_meta(opd_tensor *self, int64_t dim, int64_t *wrapped, opd_out_spec *spec) {
  opd_dtype t = opd_tensor_dtype(self);
  if (!opd_dtype_is_floating(t) || t == OPD_FLOAT16)
    return opd_error(OPD_EINVAL, "\"logcumsumexp_out_cpu\" not implemented for '%s'",
                     opd_dtype_c10_name(t));
  return opd__cum_meta(self, dim, t, wrapped, spec);
}

int opd__meta_logcumsumexp_impl(const opd_kernel_ctx *ctx, opd_tensor *self, int64_t dim,
                                opd_tensor **out) {
  (void)ctx;
  int64_t d;
  opd_out_spec spec;
  int rc = opd__logcumsumexp_meta(self, dim, &d, &spec);
  return rc ? rc : opd__alloc_output(&spec, (opd_device){OPD_DEVICE_META, -1}, out);
}

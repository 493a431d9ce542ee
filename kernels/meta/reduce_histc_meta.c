/* reduce_histc_meta.c: histc's checks and result shape (shared with kernels/cpu/reduce_histc.c)
 * and its Meta kernel. */
#include "reduce_histc_meta.h"

#include <math.h>

int opd__histc_range_check(double min, double max) {
  if (isinf(min) || isinf(max) || isnan(min) || isnan(max))
    return opd_error(OPD_EINVAL, "torch.histc: range of [%g, %g] is not finite", min, max);
  if (!(min < max)) return opd_error(OPD_EINVAL, "torch.histc: max must be larger than min");
  return 0;
}

int opd__histc_meta(const opd_tensor *self, int64_t bins, double min, double max,
                    opd_out_spec *spec) {
  opd_dtype t = opd_tensor_dtype(self);
  if (t != OPD_FLOAT32 && t != OPD_FLOAT64)
    return opd_error(OPD_EINVAL, "\"histogram_cpu\" not implemented for '%s'",
                     opd_dtype_c10_name(t));
  if (bins <= 0)
    return opd_error(OPD_EINVAL,
                     "torch.histogram(): bins must be > 0, but got %lld for dimension 0",
                     (long long)bins);
  if (min != max) {
    int rc = opd__histc_range_check(min, max);
    if (rc) return rc;
  }
  spec->ndim = 1;
  spec->dtype = t;
  spec->sizes[0] = bins;
  return 0;
}

int opd__meta_histc(const opd_kernel_ctx *ctx, opd_tensor *self, int64_t bins, opd_scalar min,
                    opd_scalar max, opd_tensor **out) {
  (void)ctx;
  opd_out_spec spec;
  int rc =
      opd__histc_meta(self, bins, opd__scalar_to_double(min), opd__scalar_to_double(max), &spec);
  return rc ? rc : opd__alloc_output(&spec, (opd_device){OPD_DEVICE_META, -1}, out);
}

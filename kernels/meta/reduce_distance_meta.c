/* reduce_distance_meta.c: _cdist_forward and _pdist_forward: their checks and result shapes
 * (PyTorch 1.13's errors; shared with kernels/cpu/reduce_distance.c) and their Meta kernels. */
#include "reduce_distance_meta.h"

#include <string.h>

#include "opd/checked.h"

int opd__cdist_meta(const opd_tensor *x1, const opd_tensor *x2, double p, opd_opt_int mode,
                    opd_out_spec *spec) {
  if (x1->ndim < 2)
    return opd_error(OPD_EINVAL, "cdist only supports at least 2D tensors, X1 got: %dD", x1->ndim);
  if (x2->ndim < 2)
    return opd_error(OPD_EINVAL, "cdist only supports at least 2D tensors, X2 got: %dD", x2->ndim);
  const int64_t *s1 = opd_tensor_sizes(x1), *s2 = opd_tensor_sizes(x2);
  if (s1[x1->ndim - 1] != s2[x2->ndim - 1])
    return opd_error(OPD_EINVAL,
                     "X1 and X2 must have the same number of columns. X1: %lld X2: %lld",
                     (long long)s1[x1->ndim - 1], (long long)s2[x2->ndim - 1]);
  opd_dtype t1 = opd_tensor_dtype(x1), t2 = opd_tensor_dtype(x2);
  if (!opd_dtype_is_floating(t1))
    return opd_error(OPD_EINVAL, "cdist only supports floating-point dtypes, X1 got: %s",
                     opd_dtype_c10_name(t1));
  if (!opd_dtype_is_floating(t2))
    return opd_error(OPD_EINVAL, "cdist only supports floating-point dtypes, X2 got: %s",
                     opd_dtype_c10_name(t2));
  if (!(p >= 0)) return opd_error(OPD_EINVAL, "cdist only supports non-negative p values");
  opd_tensor *both[2] = {(opd_tensor *)x1, (opd_tensor *)x2};
  opd_device device;
  int rc = opd__common_device(both, 2, &device);
  if (rc) return rc;
  if (mode.has_value && (mode.value < 0 || mode.value > 2))
    return opd_error(OPD_EINVAL, "possible modes: 0, 1, 2, but was: %lld", (long long)mode.value);
  if (t1 != t2) /* the kernel's, once the shapes are known */
    return opd_error(OPD_EINVAL, "expected scalar type %s but found %s", opd_dtype_c10_name(t1),
                     opd_dtype_c10_name(t2));
  if ((rc = opd__broadcast_shapes(s1, x1->ndim - 2, s2, x2->ndim - 2, spec->sizes, &spec->ndim)))
    return rc;
  if (spec->ndim + 2 > OPD_MAX_DIMS) return opd_error(OPD_EINVAL, "cdist: too many dimensions");
  spec->sizes[spec->ndim++] = s1[x1->ndim - 2];
  spec->sizes[spec->ndim++] = s2[x2->ndim - 2];
  spec->dtype = t1;
  return 0;
}

int opd__pdist_meta(const opd_tensor *self, opd_out_spec *spec) {
  if (!opd_tensor_is_contiguous(self))
    return opd_error(OPD_EINVAL, "_pdist_forward requires contiguous input");
  int64_t d;
  int rc = opd__wrap_dim(1, self->ndim, &d); /* ATen reads self.size(1) */
  if (rc) return rc;
  opd_dtype t = opd_tensor_dtype(self);
  if (!opd_dtype_is_floating(t) || t == OPD_FLOAT16)
    return opd_error(OPD_EINVAL, "\"pdist\" not implemented for '%s'", opd_dtype_c10_name(t));
  int64_t n = opd_tensor_sizes(self)[0];
  spec->ndim = 1;
  spec->dtype = t;
  int64_t pairs = 0;
  if (n > 1 && opd_ckd_mul(&pairs, n, n - 1))
    return opd_error(OPD_EINVAL, "_pdist_forward: %lld rows have too many pairs", (long long)n);
  spec->sizes[0] = pairs / 2;
  return 0;
}

/* ---- Meta kernels ---- */

static const opd_device meta_device = {OPD_DEVICE_META, -1};

int opd__meta_cdist_forward(const opd_kernel_ctx *ctx, opd_tensor *x1, opd_tensor *x2, double p,
                            opd_opt_int compute_mode, opd_tensor **out) {
  (void)ctx;
  opd_out_spec spec;
  int rc = opd__cdist_meta(x1, x2, p, compute_mode, &spec);
  return rc ? rc : opd__alloc_output(&spec, meta_device, out);
}

int opd__meta_pdist_forward(const opd_kernel_ctx *ctx, opd_tensor *self, double p,
                            opd_tensor **out) {
  (void)ctx;
  (void)p; /* any p is a distance (ATen checks p >= 0 in pdist, the composite) */
  opd_out_spec spec;
  int rc = opd__pdist_meta(self, &spec);
  return rc ? rc : opd__alloc_output(&spec, meta_device, out);
}

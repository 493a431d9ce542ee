/* index_sort_meta.c: sort.stable, topk, cummax and cummin: their checks and result shapes
 * (shared with kernels/cpu/index_sort.c) and their Meta kernels. */
#include "index_sort_meta.h"

#include <string.h>

#include "reduce_meta.h"

int opd__sort_meta(opd_tensor *self, int64_t dim, int64_t *wrapped, opd_out_spec *spec) {
  int rc = opd__wrap_dim(dim, self->ndim, wrapped);
  if (rc) return rc;
  spec->ndim = self->ndim;
  spec->dtype = opd_tensor_dtype(self);
  memcpy(spec->sizes, opd_tensor_sizes(self), (size_t)self->ndim * sizeof(int64_t));
  return 0;
}

int opd__topk_meta(opd_tensor *self, int64_t k, int64_t dim, int64_t *wrapped, opd_out_spec *spec) {
  int rc = opd__sort_meta(self, dim, wrapped, spec);
  if (rc) return rc;
  int64_t size = self->ndim > 0 ? opd_tensor_sizes(self)[*wrapped] : 1;
  if (k < 0 || k > size) return opd_error(OPD_EINVAL, "selected index k out of range");
  if (self->ndim > 0) spec->sizes[*wrapped] = k;
  return 0;
}

int opd__alloc_values_indices(const opd_out_spec *spec, opd_device device, opd_tensor **res) {
  opd_out_spec ispec = *spec;
  ispec.dtype = OPD_INT64;
  res[0] = res[1] = NULL;
  int rc = opd__alloc_output(spec, device, &res[0]);
  if (rc == 0) rc = opd__alloc_output(&ispec, device, &res[1]);
  if (rc && res[0]) {
    opd_tensor_release(res[0]);
    res[0] = NULL;
  }
  return rc;
}

/* ---- Meta kernels (boxed: two results) ---- */

static const opd_device meta_device = {OPD_DEVICE_META, -1};

/* sort.stable(self, *, bool? stable, int dim=-1, bool descending=False) */
int opd__meta_sort_stable(const opd_kernel_ctx *ctx, opd_stack *stack) {
  (void)ctx;
  opd_ivalue *args = opd_stack_last(stack, 4);
  opd_tensor *res[2] = {NULL, NULL};
  int64_t d;
  opd_out_spec spec;
  int rc = opd__sort_meta(args[0].u.t, args[2].u.i, &d, &spec);
  if (rc == 0) rc = opd__alloc_values_indices(&spec, meta_device, res);
  opd_stack_drop(stack, 4);
  return opd__push_results(stack, res, 2, rc);
}

/* topk(self, k, dim=-1, largest=True, sorted=True) */
int opd__meta_topk(const opd_kernel_ctx *ctx, opd_stack *stack) {
  (void)ctx;
  opd_ivalue *args = opd_stack_last(stack, 5);
  opd_tensor *res[2] = {NULL, NULL};
  int64_t d;
  opd_out_spec spec;
  int rc = opd__topk_meta(args[0].u.t, args[1].u.i, args[2].u.i, &d, &spec);
  if (rc == 0) rc = opd__alloc_values_indices(&spec, meta_device, res);
  opd_stack_drop(stack, 5);
  return opd__push_results(stack, res, 2, rc);
}

/* cummax(self, dim), cummin(self, dim) */
int opd__meta_cummax_cummin(const opd_kernel_ctx *ctx, opd_stack *stack) {
  (void)ctx;
  opd_ivalue *args = opd_stack_last(stack, 2);
  opd_tensor *res[2] = {NULL, NULL};
  int64_t d;
  opd_out_spec spec;
  int rc = opd__sort_meta(args[0].u.t, args[1].u.i, &d, &spec);
  if (rc == 0) rc = opd__alloc_values_indices(&spec, meta_device, res);
  opd_stack_drop(stack, 2);
  return opd__push_results(stack, res, 2, rc);
}

/* ---- searchsorted ---- */

int opd__searchsorted_meta(opd_tensor *sorted, opd_tensor *self, bool out_int32, bool right,
                           const char *side, opd_tensor *sorter, opd_out_spec *spec) {
  char a[256], b[256];
  if (side && strcmp(side, "left") != 0 && strcmp(side, "right") != 0)
    return opd_error(OPD_EINVAL,
                     "torch.searchsorted(): side can only be 'left' or 'right' but got %s", side);
  if (side && right && strcmp(side, "right") != 0)
    return opd_error(OPD_EINVAL,
                     "torch.searchsorted(): side and right can't be set to opposites, got side of "
                     "%s while right was True",
                     side);
  opd_tensor *t[3] = {sorted, self, sorter};
  opd_device device;
  int rc = opd__common_device(t, 3, &device);
  if (rc) return rc;
  if (sorter) {
    if (sorter->ndim != sorted->ndim ||
        memcmp(opd_tensor_sizes(sorter), opd_tensor_sizes(sorted), (size_t)sorted->ndim * 8))
      return opd_error(OPD_EINVAL,
                       "torch.searchsorted(): boundary and sorter must have the same size, but "
                       "got boundary tensor %sand got sorter tensor %s",
                       opd__format_sizes(opd_tensor_sizes(sorted), sorted->ndim, a, sizeof a),
                       opd__format_sizes(opd_tensor_sizes(sorter), sorter->ndim, b, sizeof b));
    if (opd_tensor_dtype(sorter) != OPD_INT64)
      return opd_error(OPD_EINVAL,
                       "torch.searchsorted(): sorter must be a tensor of long dtype but got "
                       "dtype %s",
                       opd_dtype_c10_name(opd_tensor_dtype(sorter)));
  }
  if (self->ndim == 0 && sorted->ndim != 1)
    return opd_error(OPD_EINVAL,
                     "torch.searchsorted(): input value can be a scalar only when boundaries "
                     "tensor dimension is 1, but we got boundaries tensor dim(%d) and input "
                     "value's dim(%d) numel(%lld)",
                     sorted->ndim, self->ndim, (long long)self->numel);
  if (sorted->ndim == 0)
    return opd_error(OPD_EINVAL,
                     "torch.searchsorted(): boundaries tensor should have positive dimension, but "
                     "got 0 dimension");
  if (sorted->ndim != 1 &&
      (sorted->ndim != self->ndim ||
       memcmp(opd_tensor_sizes(sorted), opd_tensor_sizes(self), (size_t)(self->ndim - 1) * 8)))
    return opd_error(OPD_EINVAL,
                     "torch.searchsorted(): boundaries tensor should be 1 dimension or the first "
                     "N-1 dimensions of boundaries tensor and input value tensor must match, but "
                     "we got boundaries tensor %s and input value tensor %s",
                     opd__format_sizes(opd_tensor_sizes(sorted), sorted->ndim, a, sizeof a),
                     opd__format_sizes(opd_tensor_sizes(self), self->ndim, b, sizeof b));
  spec->ndim = self->ndim;
  spec->dtype = out_int32 ? OPD_INT32 : OPD_INT64;
  memcpy(spec->sizes, opd_tensor_sizes(self), (size_t)self->ndim * sizeof(int64_t));
  return 0;
}

int opd__meta_searchsorted_tensor(const opd_kernel_ctx *ctx, opd_tensor *sorted, opd_tensor *self,
                                  bool out_int32, bool right, const char *side, opd_tensor *sorter,
                                  opd_tensor **out) {
  (void)ctx;
  opd_out_spec spec;
  int rc = opd__searchsorted_meta(sorted, self, out_int32, right, side, sorter, &spec);
  return rc ? rc : opd__alloc_output(&spec, meta_device, out);
}

int opd__scalar_as_tensor(opd_scalar s, opd_device device, opd_tensor **out) {
  opd_out_spec spec = {.ndim = 0, .dtype = opd__scalar_kind(s)};
  int rc = opd__alloc_output(&spec, device, out);
  if (rc || device.type == OPD_DEVICE_META) return rc;
  if (s.tag == OPD_IV_DOUBLE)
    memcpy(opd_tensor_data(*out), &s.u.d, sizeof s.u.d);
  else if (s.tag == OPD_IV_INT)
    memcpy(opd_tensor_data(*out), &s.u.i, sizeof s.u.i);
  else
    *(bool *)opd_tensor_data(*out) = s.u.b;
  return 0;
}

int opd__bucketize_check(const opd_tensor *boundaries) {
  if (boundaries->ndim != 1)
    return opd_error(OPD_EINVAL, "boundaries tensor must be 1 dimension, but got dim(%d)",
                     boundaries->ndim);
  return 0;
}

/* searchsorted.Scalar(sorted_sequence, Scalar self, *, out_int32, right, side, sorter) */
int opd__meta_searchsorted_scalar(const opd_kernel_ctx *ctx, opd_tensor *sorted, opd_scalar self,
                                  bool out_int32, bool right, const char *side, opd_tensor *sorter,
                                  opd_tensor **out) {
  opd_tensor *value = NULL;
  int rc = opd__scalar_as_tensor(self, meta_device, &value);
  if (rc) return rc;
  rc = opd__meta_searchsorted_tensor(ctx, sorted, value, out_int32, right, side, sorter, out);
  opd_tensor_release(value);
  return rc;
}

/* bucketize.Tensor(self, boundaries, *, out_int32, right) */
int opd__meta_bucketize_tensor(const opd_kernel_ctx *ctx, opd_tensor *self, opd_tensor *boundaries,
                               bool out_int32, bool right, opd_tensor **out) {
  int rc = opd__bucketize_check(boundaries);
  return rc ? rc
            : opd__meta_searchsorted_tensor(ctx, boundaries, self, out_int32, right, NULL, NULL,
                                            out);
}

/* bucketize.Scalar(Scalar self, boundaries, *, out_int32, right) */
int opd__meta_bucketize_scalar(const opd_kernel_ctx *ctx, opd_scalar self, opd_tensor *boundaries,
                               bool out_int32, bool right, opd_tensor **out) {
  int rc = opd__bucketize_check(boundaries);
  return rc ? rc
            : opd__meta_searchsorted_scalar(ctx, boundaries, self, out_int32, right, NULL, NULL,
                                            out);
}

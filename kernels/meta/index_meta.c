/* index_meta.c: aten::index_select and aten::cat: their argument checks, output shapes and
 * dtypes (the meta functions, shared with the CPU kernels of kernels/cpu/index.c) and their
 * Meta kernels.
 *
 * [Note: cat's legacy rules]
 * PyTorch 1.13's cat skips every 1-D tensor of shape [0] (before size-0 dimensions could
 * exist elsewhere, it was the only empty tensor), in three places: `dim` is wrapped against
 * the first tensor that is not skipped, shapes are compared with that tensor, and the
 * output takes its shape (all skipped: a 1-D tensor of shape [0]). Skipped tensors still
 * count in the output dtype, which is the result_type of every input.
 */
#include "index_meta.h"

#include "opd/checked.h"

int opd__index_select_meta(opd_tensor *self, int64_t dim, opd_tensor *index, opd_out_spec *spec,
                           int64_t *wrapped, opd_device *device) {
  opd_tensor *args[] = {self, index};
  int rc = opd__common_device(args, 2, device);
  if (rc == 0) rc = opd__wrap_dim(dim, self->ndim, wrapped);
  if (rc) return rc;
  if (index->ndim > 1)
    return opd_error(OPD_EINDEX, "index_select(): Index is supposed to be a vector");
  if (self->ndim == 0 && index->numel != 1)
    return opd_error(OPD_EINVAL,
                     "index_select(): Index to scalar can have only 1 value, got %lld value(s)",
                     (long long)index->numel);
  opd_dtype it = opd_tensor_dtype(index);
  if (it != OPD_INT64 && it != OPD_INT32)
    return opd_error(OPD_EINVAL, "index_select(): Expected dtype int32 or int64 for index");
  spec->ndim = self->ndim;
  spec->dtype = opd_tensor_dtype(self);
  for (int d = 0; d < self->ndim; d++) spec->sizes[d] = opd_tensor_sizes(self)[d];
  if (self->ndim > 0) spec->sizes[*wrapped] = index->numel;
  return 0;
}

bool opd__cat_skipped(const opd_tensor *t) {
  return t->ndim == 1 && t->numel == 0;
}

static int check_same_shape(const opd_tensor *first, const opd_tensor *t, int64_t dim,
                            uint32_t index) {
  if (first->ndim != t->ndim)
    return opd_error(OPD_EINVAL, "Tensors must have same number of dimensions: got %d and %d",
                     first->ndim, t->ndim);
  const int64_t *a = opd_tensor_sizes(first), *b = opd_tensor_sizes(t);
  for (int d = 0; d < first->ndim; d++)
    if (d != dim && a[d] != b[d])
      return opd_error(OPD_EINVAL,
                       "Sizes of tensors must match except in dimension %lld. Expected size %lld "
                       "but got size %lld for tensor number %u in the list.",
                       (long long)dim, (long long)a[d], (long long)b[d], index);
  return 0;
}

int opd__index_select_prepare(opd_tensor *self, int64_t dim, opd_tensor *index,
                              opd__index_select_plan *p, opd_tensor **out) {
  *out = NULL;
  int rc = opd__index_select_meta(self, dim, index, &p->spec, &p->dim, &p->device);
  if (rc) return rc;
  p->limit = self->ndim == 0 ? 1 : opd_tensor_sizes(self)[p->dim];
  if (self->ndim > 1 && index->numel == 0) return opd__alloc_output(&p->spec, p->device, out);
  if (self->ndim > 1 && self->numel == 0 && p->limit == 0)
    return opd_error(OPD_EINVAL, "index_select(): self indexing axis dim should be positive");
  return 0;
}

int opd__cat_meta(opd_tensor_list tensors, int64_t dim, opd_out_spec *spec, int64_t *wrapped,
                  opd_device *device) {
  uint32_t n = tensors.len, valid = n;
  for (uint32_t i = 0; i < n; i++)
    if (tensors.data[i]->ndim == 0)
      return opd_error(OPD_EINVAL,
                       "zero-dimensional tensor (at position %u) cannot be concatenated", i);
  for (uint32_t i = 0; i < n && valid == n; i++)
    if (!opd__cat_skipped(tensors.data[i])) valid = i;
  int rc;
  *wrapped = dim;
  if (valid < n && (rc = opd__wrap_dim(dim, tensors.data[valid]->ndim, wrapped)) != 0) return rc;
  if (n == 0) return opd_error(OPD_EINVAL, "torch.cat(): expected a non-empty list of Tensors");
  if (n > INT32_MAX) return opd_error(OPD_EINVAL, "torch.cat(): too many tensors (%u)", n);
  if ((rc = opd__common_device(tensors.data, (int)n, device)) != 0) return rc;
  opd_result_type_state rt = opd_result_type_init();
  for (uint32_t i = 0; i < n; i++)
    opd_result_type_add_tensor(&rt, opd_tensor_dtype(tensors.data[i]), tensors.data[i]->ndim);
  spec->dtype = opd_result_type(&rt);
  if (valid == n) {
    spec->ndim = 1;
    spec->sizes[0] = 0;
    return 0;
  }
  const opd_tensor *first = tensors.data[valid];
  int64_t total = 0;
  for (uint32_t i = 0; i < n; i++) {
    const opd_tensor *t = tensors.data[i];
    if (opd__cat_skipped(t)) continue;
    if ((rc = check_same_shape(first, t, *wrapped, i)) != 0) return rc;
    if (opd_ckd_add(&total, total, opd_tensor_sizes(t)[*wrapped]))
      return opd_error(OPD_EINVAL, "torch.cat(): the output size overflows int64");
  }
  spec->ndim = first->ndim;
  for (int d = 0; d < first->ndim; d++) spec->sizes[d] = opd_tensor_sizes(first)[d];
  spec->sizes[*wrapped] = total;
  return 0;
}

int opd__meta_index_select(const opd_kernel_ctx *ctx, opd_tensor *self, int64_t dim,
                           opd_tensor *index, opd_tensor **out) {
  (void)ctx;
  opd_out_spec spec;
  opd_device device;
  int64_t wrapped;
  int rc = opd__index_select_meta(self, dim, index, &spec, &wrapped, &device);
  return rc ? rc : opd__alloc_output(&spec, device, out);
}

int opd__cat_alloc(opd_tensor_list tensors, int64_t dim, int64_t *wrapped, opd_tensor **out) {
  opd_out_spec spec;
  opd_device device;
  int rc = opd__cat_meta(tensors, dim, &spec, wrapped, &device);
  return rc ? rc : opd__alloc_output(&spec, device, out);
}

int opd__meta_cat(const opd_kernel_ctx *ctx, opd_tensor_list tensors, int64_t dim,
                  opd_tensor **out) {
  (void)ctx;
  int64_t wrapped;
  return opd__cat_alloc(tensors, dim, &wrapped, out);
}

/* views.c: view and shape operators (transpose, permute, view, reshape, contiguous, clone,
 * unsqueeze, squeeze, expand, slice, select, t, as_strided, and the ones traced graphs hold:
 * _reshape_alias, _unsafe_view, unbind.int, alias, detach; split.Tensor is in views_split.c).
 * Views share their input's storage with new sizes, strides and offset (see [Note: Tensors,
 * storage and views]); they touch no data, so one kernel serves every backend. reshape,
 * contiguous and clone copy through other operators when PyTorch does.
 *
 * A request's integers (sizes, strides, offsets, starts, steps, indices) and the products and
 * sums PyTorch forms from them go through opd/checked.h ([Note: Checked arithmetic]): an empty
 * view may have any strides and sit at any offset, and a Meta tensor any extent, so even the
 * strides and offsets computed from an existing tensor can overflow. */
#include <string.h>

#include "kernel_util.h"
#include "opd/checked.h"
#include "opd/memory.h"

/* A view of self with the given geometry (a new reference in *out). */
static int make_view(opd_tensor *self, const int64_t *sizes, const int64_t *strides, int ndim,
                     int64_t offset, opd_tensor **out) {
  return opd_tensor_view_of(self, sizes, strides, ndim, offset, out);
}

/* The stride of a new dimension laid out outside a neighbour of `size` elements `stride`
 * apart (unsqueeze, expand): OPD_EINVAL when it overflows. */
static int outer_stride(int64_t size, int64_t stride, const char *op, int64_t *out) {
  if (opd_ckd_mul(out, size, stride))
    return opd_error(OPD_EINVAL,
                     "%s(): the stride of the new dimension overflows int64 (a neighbour of "
                     "size %lld and stride %lld)",
                     op, (long long)size, (long long)stride);
  return 0;
}

/* self's storage offset moved `index` elements of `stride` along a dimension (slice, select):
 * OPD_EINVAL when it overflows. */
static int moved_offset(const opd_tensor *self, int64_t index, int64_t stride, const char *op,
                        const char *what, int64_t *out) {
  if (opd_ckd_mul(out, index, stride) || opd_ckd_add(out, self->storage_offset, *out))
    return opd_error(OPD_EINVAL,
                     "%s(): the storage offset of %s %lld overflows int64 (stride %lld, offset "
                     "%lld)",
                     op, what, (long long)index, (long long)stride,
                     (long long)self->storage_offset);
  return 0;
}

int opd__cea_transpose_int(const opd_kernel_ctx *ctx, opd_tensor *self, int64_t dim0, int64_t dim1,
                           opd_tensor **out) {
  (void)ctx;
  int64_t d0, d1;
  int rc = opd__wrap_dim(dim0, self->ndim, &d0);
  if (rc == 0) rc = opd__wrap_dim(dim1, self->ndim, &d1);
  if (rc) return rc;
  int64_t sizes[OPD_MAX_DIMS], strides[OPD_MAX_DIMS];
  memcpy(sizes, opd_tensor_sizes(self), self->ndim * sizeof *sizes);
  memcpy(strides, opd_tensor_strides(self), self->ndim * sizeof *strides);
  if (self->ndim > 0) {
    int64_t s = sizes[d0], st = strides[d0];
    sizes[d0] = sizes[d1], strides[d0] = strides[d1];
    sizes[d1] = s, strides[d1] = st;
  }
  return make_view(self, sizes, strides, self->ndim, self->storage_offset, out);
}

int opd__cea_t(const opd_kernel_ctx *ctx, opd_tensor *self, opd_tensor **out) {
  if (self->ndim > 2)
    return opd_error(OPD_EINVAL, "t() expects a tensor with <= 2 dimensions, but self is %dD",
                     self->ndim);
  return opd__cea_transpose_int(ctx, self, 0, self->ndim < 2 ? 0 : 1, out);
}

int opd__cea_permute(const opd_kernel_ctx *ctx, opd_tensor *self, opd_int_list dims,
                     opd_tensor **out) {
  (void)ctx;
  if (dims.len != self->ndim)
    return opd_error(OPD_EINVAL,
                     "permute(sparse_coo): number of dimensions in the tensor input does not "
                     "match the length of the desired ordering of dimensions i.e. input.dim() = "
                     "%d is not equal to len(dims) = %lld",
                     self->ndim, (long long)dims.len);
  int64_t sizes[OPD_MAX_DIMS], strides[OPD_MAX_DIMS];
  bool seen[OPD_MAX_DIMS] = {false};
  for (int i = 0; i < self->ndim; i++) {
    int64_t d;
    int rc = opd__wrap_dim(dims.data[i], self->ndim, &d);
    if (rc) return rc;
    if (seen[d]) return opd_error(OPD_EINVAL, "permute(): duplicate dims are not allowed.");
    seen[d] = true;
    sizes[i] = opd_tensor_sizes(self)[d];
    strides[i] = opd_tensor_strides(self)[d];
  }
  return make_view(self, sizes, strides, self->ndim, self->storage_offset, out);
}

/* PyTorch's infer_size: resolves one -1 against numel; checks the product (a product past
 * int64 matches no tensor; a size of 0 makes it 0 whatever the other sizes are). */
static int infer_size(opd_int_list shape, int64_t numel, int64_t *sizes) {
  if (shape.len > OPD_MAX_DIMS)
    return opd_error(OPD_EINVAL, "tensors have at most %d dimensions", OPD_MAX_DIMS);
  int64_t product = 1, infer = -1;
  bool overflow = false, empty = false;
  for (int64_t i = 0; i < shape.len; i++) {
    sizes[i] = shape.data[i];
    if (sizes[i] == -1) {
      if (infer >= 0) return opd_error(OPD_EINVAL, "only one dimension can be inferred");
      infer = i;
    } else if (sizes[i] < 0) {
      return opd_error(OPD_EINVAL, "invalid shape dimension %lld", (long long)sizes[i]);
    } else {
      empty |= sizes[i] == 0;
      overflow |= opd_ckd_mul(&product, product, sizes[i]);
    }
  }
  if (empty) product = 0, overflow = false;
  bool ok = !overflow && (infer >= 0 ? product > 0 && numel % product == 0 : numel == product);
  if (infer >= 0 && product == 0 && numel == 0) ok = false; /* -1 is ambiguous then */
  if (!ok) {
    char buf[256];
    return opd_error(OPD_EINVAL, "shape '%s' is invalid for input of size %lld",
                     opd__format_sizes(shape.data, (int)shape.len, buf, sizeof buf),
                     (long long)numel);
  }
  if (infer >= 0) sizes[infer] = numel / product;
  return 0;
}

static int strides_overflow(const int64_t *sizes, int ndim) {
  char buf[OPD_MAX_DIMS * 24];
  return opd_error(OPD_EINVAL, "view(): the strides of shape %s overflow int64",
                   opd__format_sizes(sizes, ndim, buf, sizeof buf));
}

/* PyTorch's computeStride: strides that view (old sizes, old strides) as new sizes; *viewable
 * false when the view would have to span non-contiguous chunks. OPD_EINVAL when a stride
 * overflows (an empty tensor's, or a Meta tensor's of a huge extent). */
static int compute_stride(const int64_t *old_sizes, const int64_t *old_strides, int old_ndim,
                          const int64_t *sizes, int ndim, int64_t numel, int64_t *strides,
                          bool *viewable) {
  *viewable = true;
  if (old_ndim == 0) {
    for (int i = 0; i < ndim; i++) strides[i] = 1;
    return 0;
  }
  if (numel == 0) { /* any strides work; PyTorch keeps the old ones for the same shape */
    bool same = old_ndim == ndim && memcmp(old_sizes, sizes, ndim * sizeof *sizes) == 0;
    for (int d = ndim - 1; d >= 0; d--) {
      if (same || d == ndim - 1)
        strides[d] = same ? old_strides[d] : 1;
      else if (opd_ckd_mul(&strides[d], sizes[d + 1] > 1 ? sizes[d + 1] : 1, strides[d + 1]))
        return strides_overflow(sizes, ndim);
    }
    return 0;
  }
  /* numel > 0: products of sizes stay within numel, those with strides may not */
  int view_d = ndim - 1;
  int64_t chunk_base_stride = old_strides[old_ndim - 1];
  int64_t tensor_numel = 1, view_numel = 1, chunk_stride;
  for (int tensor_d = old_ndim - 1; tensor_d >= 0; tensor_d--) {
    tensor_numel *= old_sizes[tensor_d];
    if (tensor_d == 0 || (old_sizes[tensor_d - 1] != 1 &&
                          (opd_ckd_mul(&chunk_stride, tensor_numel, chunk_base_stride) ||
                           old_strides[tensor_d - 1] != chunk_stride))) {
      while (view_d >= 0 && (view_numel < tensor_numel || sizes[view_d] == 1)) {
        if (opd_ckd_mul(&strides[view_d], view_numel, chunk_base_stride))
          return strides_overflow(sizes, ndim);
        view_numel *= sizes[view_d];
        view_d--;
      }
      if (view_numel != tensor_numel) {
        *viewable = false;
        return 0;
      }
      if (tensor_d > 0) {
        chunk_base_stride = old_strides[tensor_d - 1];
        tensor_numel = 1;
        view_numel = 1;
      }
    }
  }
  *viewable = view_d == -1;
  return 0;
}

static int view_impl(opd_tensor *self, opd_int_list size, opd_tensor **out) {
  int64_t sizes[OPD_MAX_DIMS], strides[OPD_MAX_DIMS];
  bool viewable;
  int rc = infer_size(size, self->numel, sizes);
  if (rc == 0)
    rc = compute_stride(opd_tensor_sizes(self), opd_tensor_strides(self), self->ndim, sizes,
                        (int)size.len, self->numel, strides, &viewable);
  if (rc) return rc;
  if (!viewable)
    return opd_error(OPD_EINVAL,
                     "view size is not compatible with input tensor's size and stride (at least "
                     "one dimension spans across two contiguous subspaces). Use .reshape(...) "
                     "instead.");
  return make_view(self, sizes, strides, (int)size.len, self->storage_offset, out);
}

int opd__view(const opd_kernel_ctx *ctx, opd_tensor *self, opd_int_list size, opd_tensor **out) {
  (void)ctx;
  return view_impl(self, size, out);
}

int opd__view_meta(const opd_kernel_ctx *ctx, opd_tensor *self, opd_int_list size,
                   opd_tensor **out) {
  (void)ctx;
  return view_impl(self, size, out);
}

/* Calls aten::clone(self, memory_format) and returns its result. */
static int call_clone(opd_tensor *self, int64_t memory_format, opd_tensor **out) {
  static const opd_operator *clone;
  opd_stack st;
  opd_stack_init(&st);
  opd_stack_push(&st, opd_iv_tensor_borrow(self));
  opd_stack_push(&st, memory_format < 0 ? opd_iv_none() : opd_iv_int(memory_format));
  int rc = opd__call(&clone, "aten::clone", &st);
  if (rc == 0) *out = opd_stack_pop(&st).u.t;
  opd_stack_destroy(&st);
  return rc;
}

/* c10's MemoryFormat values. */
enum { MEMORY_FORMAT_CONTIGUOUS = 0, MEMORY_FORMAT_PRESERVE = 1 };

int opd__cia_reshape(const opd_kernel_ctx *ctx, opd_tensor *self, opd_int_list shape,
                     opd_tensor **out) {
  (void)ctx;
  int64_t sizes[OPD_MAX_DIMS], strides[OPD_MAX_DIMS];
  bool viewable;
  int rc = infer_size(shape, self->numel, sizes);
  if (rc == 0)
    rc = compute_stride(opd_tensor_sizes(self), opd_tensor_strides(self), self->ndim, sizes,
                        (int)shape.len, self->numel, strides, &viewable);
  if (rc) return rc;
  if (viewable) return make_view(self, sizes, strides, (int)shape.len, self->storage_offset, out);
  opd_tensor *copy;
  if ((rc = call_clone(self, MEMORY_FORMAT_CONTIGUOUS, &copy)) != 0) return rc;
  rc = view_impl(copy, (opd_int_list){sizes, shape.len}, out);
  opd_tensor_release(copy);
  return rc;
}

int opd__cia_contiguous(const opd_kernel_ctx *ctx, opd_tensor *self, int64_t memory_format,
                        opd_tensor **out) {
  (void)ctx;
  if (memory_format != MEMORY_FORMAT_CONTIGUOUS)
    return opd_error(OPD_EINVAL,
                     "contiguous: only torch.contiguous_format is supported, got "
                     "memory format %lld",
                     (long long)memory_format);
  if (opd_tensor_is_contiguous(self)) {
    opd_tensor_retain(self);
    *out = self;
    return 0;
  }
  return call_clone(self, MEMORY_FORMAT_CONTIGUOUS, out);
}

/* c10's is_non_overlapping_and_dense: some permutation of the dims is contiguous. */
static bool non_overlapping_and_dense(const opd_tensor *t) {
  int n = t->ndim, order[OPD_MAX_DIMS];
  const int64_t *sizes = opd_tensor_sizes(t), *strides = opd_tensor_strides(t);
  for (int i = 0; i < n; i++) order[i] = i;
  for (int i = 1; i < n; i++) /* insertion sort by stride, size-1 dims first */
    for (int j = i; j > 0; j--) {
      int a = order[j - 1], b = order[j];
      bool swap = sizes[a] >= 2 && (sizes[b] < 2 || strides[a] > strides[b]);
      if (!swap) break;
      order[j - 1] = b, order[j] = a;
    }
  int64_t expected = 1;
  for (int i = 0; i < n; i++) {
    int d = order[i];
    if (sizes[d] < 2) continue; /* as c10: an empty dimension constrains no stride either */
    if (strides[d] != expected) return false;
    if (opd_ckd_mul(&expected, expected, sizes[d])) return false; /* empty: sizes unbounded */
  }
  return true;
}

int opd__cea_clone(const opd_kernel_ctx *ctx, opd_tensor *self, int64_t memory_format,
                   opd_tensor **out) {
  (void)ctx;
  if (memory_format != -1 && memory_format != MEMORY_FORMAT_CONTIGUOUS &&
      memory_format != MEMORY_FORMAT_PRESERVE)
    return opd_error(OPD_EINVAL, "clone: unsupported memory format %lld", (long long)memory_format);
  opd_int_list sizes = {opd_tensor_sizes(self), self->ndim};
  opd_dtype dtype = opd_tensor_dtype(self);
  opd_device device = opd_tensor_device(self);
  opd_opt_bool no_pin = {false, false};
  opd_tensor *result;
  int rc =
      memory_format != MEMORY_FORMAT_CONTIGUOUS && non_overlapping_and_dense(self)
          ? opd__call_empty_strided(sizes, (opd_int_list){opd_tensor_strides(self), self->ndim},
                                    dtype, -1, device, no_pin, &result)
          : opd__call_empty(sizes, dtype, -1, device, no_pin, -1, &result);
  if (rc) return rc;
  if ((rc = opd__call_copy_(result, self, false)) != 0) {
    opd_tensor_release(result);
    return rc;
  }
  *out = result;
  return 0;
}

int opd__cea_unsqueeze(const opd_kernel_ctx *ctx, opd_tensor *self, int64_t dim, opd_tensor **out) {
  (void)ctx;
  int64_t d;
  int rc = opd__wrap_dim(dim, self->ndim + 1, &d);
  if (rc) return rc;
  if (self->ndim + 1 > OPD_MAX_DIMS)
    return opd_error(OPD_EINVAL, "tensors have at most %d dimensions", OPD_MAX_DIMS);
  const int64_t *os = opd_tensor_sizes(self), *ost = opd_tensor_strides(self);
  int64_t sizes[OPD_MAX_DIMS], strides[OPD_MAX_DIMS];
  for (int i = 0, j = 0; i <= self->ndim; i++) {
    if (i == d) {
      sizes[i] = 1;
      strides[i] = 1;
      if (d < self->ndim && (rc = outer_stride(os[d], ost[d], "unsqueeze", &strides[i]))) return rc;
    } else {
      sizes[i] = os[j];
      strides[i] = ost[j];
      j++;
    }
  }
  return make_view(self, sizes, strides, self->ndim + 1, self->storage_offset, out);
}

int opd__cea_squeeze_dim(const opd_kernel_ctx *ctx, opd_tensor *self, int64_t dim,
                         opd_tensor **out) {
  (void)ctx;
  int64_t d;
  int rc = opd__wrap_dim(dim, self->ndim, &d);
  if (rc) return rc;
  const int64_t *os = opd_tensor_sizes(self), *ost = opd_tensor_strides(self);
  int64_t sizes[OPD_MAX_DIMS], strides[OPD_MAX_DIMS];
  int n = 0;
  for (int i = 0; i < self->ndim; i++) {
    if (i == d && os[i] == 1) continue;
    sizes[n] = os[i];
    strides[n++] = ost[i];
  }
  return make_view(self, sizes, strides, n, self->storage_offset, out);
}

int opd__cea_expand(const opd_kernel_ctx *ctx, opd_tensor *self, opd_int_list size, bool implicit,
                    opd_tensor **out) {
  (void)ctx;
  (void)implicit;
  char target[256], have[256];
  if (size.len > OPD_MAX_DIMS)
    return opd_error(OPD_EINVAL, "tensors have at most %d dimensions", OPD_MAX_DIMS);
  int n = (int)size.len;
  if (size.len < self->ndim)
    return opd_error(OPD_EINVAL,
                     "expand(torch.FloatTensor{%s}, size=%s): the number of sizes provided (%lld) "
                     "must be greater or equal to the number of dimensions in the tensor (%d)",
                     opd__format_sizes(opd_tensor_sizes(self), self->ndim, have, sizeof have),
                     opd__format_sizes(size.data, n, target, sizeof target), (long long)size.len,
                     self->ndim);
  const int64_t *os = opd_tensor_sizes(self), *ost = opd_tensor_strides(self);
  int64_t sizes[OPD_MAX_DIMS], strides[OPD_MAX_DIMS];
  for (int i = n - 1; i >= 0; i--) {
    int offset = n - 1 - i, dim = self->ndim - 1 - offset;
    /* a new leading dimension gets the stride a contiguous layout would give it */
    int64_t s = dim >= 0 ? os[dim] : 1, st = dim >= 0 ? ost[dim] : 1;
    int rc = dim < 0 && i < n - 1 ? outer_stride(sizes[i + 1], strides[i + 1], "expand", &st) : 0;
    if (rc) return rc;
    int64_t want = size.data[i];
    if (want == -1) {
      if (dim < 0)
        return opd_error(OPD_EINVAL,
                         "The expanded size of the tensor (-1) isn't allowed in a leading, "
                         "non-existing dimension %d",
                         i);
      want = s;
    }
    if (want < 0)
      return opd_error(OPD_EINVAL, "Trying to create tensor with negative dimension %lld",
                       (long long)want);
    if (s != want) {
      if (s != 1)
        return opd_error(OPD_EINVAL,
                         "The expanded size of the tensor (%lld) must match the existing size "
                         "(%lld) at non-singleton dimension %d.  Target sizes: %s.  Tensor "
                         "sizes: %s",
                         (long long)want, (long long)s, i,
                         opd__format_sizes(size.data, n, target, sizeof target),
                         opd__format_sizes(os, self->ndim, have, sizeof have));
      st = 0;
    }
    sizes[i] = want;
    strides[i] = st;
  }
  return make_view(self, sizes, strides, n, self->storage_offset, out);
}

int opd__cea_slice_tensor(const opd_kernel_ctx *ctx, opd_tensor *self, int64_t dim,
                          opd_opt_int start, opd_opt_int end, int64_t step, opd_tensor **out) {
  (void)ctx;
  if (self->ndim == 0) return opd_error(OPD_EINVAL, "slice() cannot be applied to a 0-dim tensor.");
  int64_t d;
  int rc = opd__wrap_dim(dim, self->ndim, &d);
  if (rc) return rc;
  if (step <= 0) return opd_error(OPD_EINVAL, "slice step must be positive");
  const int64_t *os = opd_tensor_sizes(self), *ost = opd_tensor_strides(self);
  int64_t size = os[d];
  int64_t s = start.has_value ? start.value : 0, e = end.has_value ? end.value : INT64_MAX;
  if (s < 0) s += size;
  if (e < 0) e += size;
  s = s < 0 ? 0 : s > size ? size : s;
  e = e < s ? s : e > size ? size : e;
  int64_t sizes[OPD_MAX_DIMS], strides[OPD_MAX_DIMS], rounded, offset;
  memcpy(sizes, os, self->ndim * sizeof *sizes);
  memcpy(strides, ost, self->ndim * sizeof *strides);
  /* PyTorch's (len + step - 1) / step and stride * step, which overflow for a huge step */
  if (opd_ckd_add(&rounded, e - s, step - 1) || opd_ckd_mul(&strides[d], ost[d], step))
    return opd_error(OPD_EINVAL,
                     "slice(): step %lld overflows int64 for a dimension of size %lld and stride "
                     "%lld",
                     (long long)step, (long long)size, (long long)ost[d]);
  sizes[d] = rounded / step;
  if ((rc = moved_offset(self, s, ost[d], "slice", "start", &offset))) return rc;
  return make_view(self, sizes, strides, self->ndim, offset, out);
}

int opd__cea_select_int(const opd_kernel_ctx *ctx, opd_tensor *self, int64_t dim, int64_t index,
                        opd_tensor **out) {
  (void)ctx;
  if (self->ndim == 0)
    return opd_error(OPD_EINDEX, "select() cannot be applied to a 0-dim tensor.");
  int64_t d;
  int rc = opd__wrap_dim(dim, self->ndim, &d);
  if (rc) return rc;
  const int64_t *os = opd_tensor_sizes(self), *ost = opd_tensor_strides(self);
  if (index < -os[d] || index >= os[d]) {
    char buf[256];
    return opd_error(OPD_EINDEX,
                     "select(): index %lld out of range for tensor of size %s at "
                     "dimension %lld",
                     (long long)index, opd__format_sizes(os, self->ndim, buf, sizeof buf),
                     (long long)d);
  }
  if (index < 0) index += os[d];
  int64_t sizes[OPD_MAX_DIMS], strides[OPD_MAX_DIMS], offset;
  for (int i = 0, j = 0; i < self->ndim; i++) {
    if (i == d) continue;
    sizes[j] = os[i];
    strides[j++] = ost[i];
  }
  if ((rc = moved_offset(self, index, ost[d], "select", "index", &offset))) return rc;
  return make_view(self, sizes, strides, self->ndim - 1, offset, out);
}

/* as_strided's geometry against self's storage, with PyTorch's errors (setStrided,
 * computeStorageNbytes); opd_tensor_view_of checks the same again. */
static int check_as_strided(const opd_tensor *self, opd_int_list size, opd_int_list stride,
                            int64_t offset) {
  char sz[OPD_MAX_DIMS * 24], st[OPD_MAX_DIMS * 24];
  const int n = (int)size.len;
  for (int d = 0; d < n; d++)
    if (stride.data[d] < 0)
      return opd_error(OPD_EINVAL,
                       "as_strided: Negative strides are not supported at the moment, got "
                       "strides: %s",
                       opd__format_sizes(stride.data, n, st, sizeof st));
  int64_t numel, extent, end, nbytes;
  size_t esize = opd_dtype_size(opd_tensor_dtype(self));
  int rc = opd_ckd_numel(size.data, (size_t)n, &numel, "as_strided");
  if (rc || numel == 0 || !self->storage) return rc; /* an empty view reads nothing */
  if (opd_ckd_geometry(size.data, stride.data, (size_t)n, esize, &numel, &extent, "as_strided") ||
      opd_ckd_add(&end, offset, extent) || opd_ckd_mul(&nbytes, end, (int64_t)esize))
    return opd_error(OPD_EINVAL,
                     "as_strided: Storage size calculation overflowed with sizes=%s and "
                     "strides=%s at storage offset %lld",
                     opd__format_sizes(size.data, n, sz, sizeof sz),
                     opd__format_sizes(stride.data, n, st, sizeof st), (long long)offset);
  if ((uint64_t)nbytes > self->storage->nbytes)
    return opd_error(OPD_EINVAL,
                     "setStorage: sizes %s, strides %s, storage offset %lld, and itemsize %zu "
                     "requiring a storage size of %lld are out of bounds for storage of size %zu",
                     opd__format_sizes(size.data, n, sz, sizeof sz),
                     opd__format_sizes(stride.data, n, st, sizeof st), (long long)offset, esize,
                     (long long)nbytes, self->storage->nbytes);
  return 0;
}

static int as_strided_impl(opd_tensor *self, opd_int_list size, opd_int_list stride,
                           opd_opt_int storage_offset, opd_tensor **out) {
  if (size.len != stride.len)
    return opd_error(OPD_EINVAL, "mismatch in length of strides and shape");
  if (size.len > OPD_MAX_DIMS)
    return opd_error(OPD_EINVAL, "tensors have at most %d dimensions", OPD_MAX_DIMS);
  int64_t offset = storage_offset.has_value ? storage_offset.value : self->storage_offset;
  if (offset < 0)
    return opd_error(OPD_EINVAL, "Tensor: invalid storage offset %lld", (long long)offset);
  int rc = check_as_strided(self, size, stride, offset);
  return rc ? rc : make_view(self, size.data, stride.data, (int)size.len, offset, out);
}

int opd__as_strided(const opd_kernel_ctx *ctx, opd_tensor *self, opd_int_list size,
                    opd_int_list stride, opd_opt_int storage_offset, opd_tensor **out) {
  (void)ctx;
  return as_strided_impl(self, size, stride, storage_offset, out);
}

int opd__as_strided_meta(const opd_kernel_ctx *ctx, opd_tensor *self, opd_int_list size,
                         opd_int_list stride, opd_opt_int storage_offset, opd_tensor **out) {
  (void)ctx;
  return as_strided_impl(self, size, stride, storage_offset, out);
}

/* [Note: The views of traced graphs]
 * make_fx records three view operators that user code never calls: _reshape_alias (what
 * reshape becomes when it can view: the sizes and strides it computed, at self's storage
 * offset), _unsafe_view (a view whose result autograd treats as a new tensor: view's
 * semantics here, where nothing records gradients) and unbind.int (one select per index of
 * `dim`); with them alias and detach (the same geometry: opd records no gradients, so detach
 * is alias), and split.Tensor (views_split.c). They touch
 * no data, so one kernel at CompositeExplicitAutograd serves the CPU, Meta and CUDA
 * (PyTorch registers _reshape_alias per backend with the same code). */
int opd__cea_reshape_alias(const opd_kernel_ctx *ctx, opd_tensor *self, opd_int_list size,
                           opd_int_list stride, opd_tensor **out) {
  (void)ctx;
  if (size.len != stride.len)
    return opd_error(OPD_EINVAL, "_reshape_alias: %lld sizes but %lld strides", (long long)size.len,
                     (long long)stride.len);
  return as_strided_impl(self, size, stride, (opd_opt_int){false, 0}, out);
}

int opd__cea_unsafe_view(const opd_kernel_ctx *ctx, opd_tensor *self, opd_int_list size,
                         opd_tensor **out) {
  (void)ctx;
  return view_impl(self, size, out);
}

int opd__cea_alias(const opd_kernel_ctx *ctx, opd_tensor *self, opd_tensor **out) {
  (void)ctx;
  return make_view(self, opd_tensor_sizes(self), opd_tensor_strides(self), self->ndim,
                   self->storage_offset, out);
}

int opd__cea_detach(const opd_kernel_ctx *ctx, opd_tensor *self, opd_tensor **out) {
  return opd__cea_alias(ctx, self, out);
}

/* Pushes the n views in parts (references taken over) as one Tensor[]; frees parts. */
static int push_views(opd_stack *stack, opd_tensor **parts, int64_t n, int rc) {
  opd_ivalue list = opd_iv_none();
  if (!rc) rc = opd_iv_make_tensor_list(&list, parts, (size_t)n, false);
  for (int64_t i = 0; parts && i < n; i++)
    if (parts[i]) opd_tensor_release(parts[i]);
  opd__free(parts);
  if (rc) return rc;
  return opd_stack_push(stack, list);
}

/* Boxed: it returns a Tensor[]. */
int opd__cea_unbind_int(const opd_kernel_ctx *ctx, opd_stack *stack) {
  opd_ivalue dim_v = opd_stack_pop(stack), self_v = opd_stack_pop(stack);
  opd_tensor *self = self_v.u.t, **parts = NULL;
  int64_t d = 0, n = 0;
  int rc = 0;
  if (self->ndim == 0)
    rc = opd_error(OPD_EINDEX, "Dimension specified as %lld but tensor has no dimensions",
                   (long long)dim_v.u.i);
  if (!rc) rc = opd__wrap_dim(dim_v.u.i, self->ndim, &d);
  if (!rc && (n = opd_tensor_sizes(self)[d]) > OPD__MAX_VIEWS_RETURNED)
    rc = opd_error(OPD_EINVAL, "unbind: %lld views are more than the %d one call may return",
                   (long long)n, OPD__MAX_VIEWS_RETURNED);
  if (!rc) {
    if (n > 0 && !(parts = opd__calloc((size_t)n, sizeof *parts)))
      rc = opd_error(OPD_ENOMEM, "unbind: out of memory for %lld results", (long long)n);
  }
  for (int64_t i = 0; !rc && i < n; i++) rc = opd__cea_select_int(ctx, self, d, i, &parts[i]);
  opd_iv_destroy(&self_v);
  return push_views(stack, parts, n, rc);
}

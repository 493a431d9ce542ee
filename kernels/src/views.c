/* views.c: view and shape operators (transpose, permute, view, reshape, contiguous, clone,
 * unsqueeze, squeeze, expand, slice, select, t, as_strided, and the ones traced graphs hold:
 * _reshape_alias, _unsafe_view, unbind.int, split.Tensor, alias, detach). Views share their input's
 * storage with new sizes, strides and offset (see [Note: Tensors, storage and views]); they
 * touch no data, so one kernel serves every backend. reshape, contiguous and clone copy
 * through other operators when PyTorch does. */
#include <string.h>

#include "kernel_util.h"
#include "opd/memory.h"

/* A view of self with the given geometry (a new reference in *out). */
static int make_view(opd_tensor *self, const int64_t *sizes, const int64_t *strides, int ndim,
                     int64_t offset, opd_tensor **out) {
  return opd_tensor_view_of(self, sizes, strides, ndim, offset, out);
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

/* PyTorch's infer_size: resolves one -1 against numel; checks the product. */
static int infer_size(opd_int_list shape, int64_t numel, int64_t *sizes) {
  if (shape.len > OPD_MAX_DIMS)
    return opd_error(OPD_EINVAL, "tensors have at most %d dimensions", OPD_MAX_DIMS);
  int64_t product = 1, infer = -1;
  for (int64_t i = 0; i < shape.len; i++) {
    sizes[i] = shape.data[i];
    if (sizes[i] == -1) {
      if (infer >= 0) return opd_error(OPD_EINVAL, "only one dimension can be inferred");
      infer = i;
    } else if (sizes[i] < 0) {
      return opd_error(OPD_EINVAL, "invalid shape dimension %lld", (long long)sizes[i]);
    } else if (__builtin_mul_overflow(product, sizes[i], &product)) {
      return opd_error(OPD_EINVAL, "shape is too large");
    }
  }
  bool ok = infer >= 0 ? (product > 0 && numel % product == 0) : numel == product;
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

/* PyTorch's computeStride: strides that view (old sizes, old strides) as new sizes, or
 * false when the view would have to span non-contiguous chunks. */
static bool compute_stride(const int64_t *old_sizes, const int64_t *old_strides, int old_ndim,
                           const int64_t *sizes, int ndim, int64_t numel, int64_t *strides) {
  if (old_ndim == 0) {
    for (int i = 0; i < ndim; i++) strides[i] = 1;
    return true;
  }
  if (numel == 0) { /* any strides work; PyTorch keeps the old ones for the same shape */
    bool same = old_ndim == ndim && memcmp(old_sizes, sizes, ndim * sizeof *sizes) == 0;
    for (int d = ndim - 1; d >= 0; d--)
      strides[d] = same            ? old_strides[d]
                   : d == ndim - 1 ? 1
                                   : (sizes[d + 1] > 1 ? sizes[d + 1] : 1) * strides[d + 1];
    return true;
  }
  int view_d = ndim - 1;
  int64_t chunk_base_stride = old_strides[old_ndim - 1];
  int64_t tensor_numel = 1, view_numel = 1;
  for (int tensor_d = old_ndim - 1; tensor_d >= 0; tensor_d--) {
    tensor_numel *= old_sizes[tensor_d];
    if (tensor_d == 0 || (old_sizes[tensor_d - 1] != 1 &&
                          old_strides[tensor_d - 1] != tensor_numel * chunk_base_stride)) {
      while (view_d >= 0 && (view_numel < tensor_numel || sizes[view_d] == 1)) {
        strides[view_d] = view_numel * chunk_base_stride;
        view_numel *= sizes[view_d];
        view_d--;
      }
      if (view_numel != tensor_numel) return false;
      if (tensor_d > 0) {
        chunk_base_stride = old_strides[tensor_d - 1];
        tensor_numel = 1;
        view_numel = 1;
      }
    }
  }
  return view_d == -1;
}

static int view_impl(opd_tensor *self, opd_int_list size, opd_tensor **out) {
  int64_t sizes[OPD_MAX_DIMS], strides[OPD_MAX_DIMS];
  int rc = infer_size(size, self->numel, sizes);
  if (rc) return rc;
  if (!compute_stride(opd_tensor_sizes(self), opd_tensor_strides(self), self->ndim, sizes,
                      (int)size.len, self->numel, strides))
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
  int rc = infer_size(shape, self->numel, sizes);
  if (rc) return rc;
  if (compute_stride(opd_tensor_sizes(self), opd_tensor_strides(self), self->ndim, sizes,
                     (int)shape.len, self->numel, strides))
    return make_view(self, sizes, strides, (int)shape.len, self->storage_offset, out);
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
    if (sizes[d] == 1) continue;
    if (strides[d] != expected) return false;
    expected *= sizes[d];
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
      strides[i] = d >= self->ndim ? 1 : os[d] * ost[d];
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
  int n = (int)size.len;
  if (size.len < self->ndim)
    return opd_error(OPD_EINVAL,
                     "expand(torch.FloatTensor{%s}, size=%s): the number of sizes provided (%lld) "
                     "must be greater or equal to the number of dimensions in the tensor (%d)",
                     opd__format_sizes(opd_tensor_sizes(self), self->ndim, have, sizeof have),
                     opd__format_sizes(size.data, n, target, sizeof target), (long long)size.len,
                     self->ndim);
  if (n > OPD_MAX_DIMS)
    return opd_error(OPD_EINVAL, "tensors have at most %d dimensions", OPD_MAX_DIMS);
  const int64_t *os = opd_tensor_sizes(self), *ost = opd_tensor_strides(self);
  int64_t sizes[OPD_MAX_DIMS], strides[OPD_MAX_DIMS];
  for (int i = n - 1; i >= 0; i--) {
    int offset = n - 1 - i, dim = self->ndim - 1 - offset;
    /* a new leading dimension gets the stride a contiguous layout would give it */
    int64_t s = dim >= 0 ? os[dim] : 1;
    int64_t st = dim >= 0 ? ost[dim] : i == n - 1 ? 1 : sizes[i + 1] * strides[i + 1];
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
  int64_t sizes[OPD_MAX_DIMS], strides[OPD_MAX_DIMS];
  memcpy(sizes, os, self->ndim * sizeof *sizes);
  memcpy(strides, ost, self->ndim * sizeof *strides);
  sizes[d] = (e - s + step - 1) / step;
  strides[d] = ost[d] * step;
  return make_view(self, sizes, strides, self->ndim, self->storage_offset + s * ost[d], out);
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
  int64_t sizes[OPD_MAX_DIMS], strides[OPD_MAX_DIMS];
  for (int i = 0, j = 0; i < self->ndim; i++) {
    if (i == d) continue;
    sizes[j] = os[i];
    strides[j++] = ost[i];
  }
  return make_view(self, sizes, strides, self->ndim - 1, self->storage_offset + index * ost[d],
                   out);
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
  return make_view(self, size.data, stride.data, (int)size.len, offset, out);
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
 * `dim`); with them split.Tensor (slices of split_size along dim, the last shorter), alias
 * and detach (the same geometry: opd records no gradients, so detach is alias). They touch
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
int opd__cea_split_tensor(const opd_kernel_ctx *ctx, opd_stack *stack) {
  opd_ivalue dim_v = opd_stack_pop(stack), size_v = opd_stack_pop(stack),
             self_v = opd_stack_pop(stack);
  opd_tensor *self = self_v.u.t, **parts = NULL;
  int64_t d = 0, n = 0, split = size_v.u.i;
  int rc = 0;
  if (self->ndim == 0) rc = opd_error(OPD_EINVAL, "split expects at least a 1-dimensional tensor");
  if (!rc) rc = opd__wrap_dim(dim_v.u.i, self->ndim, &d);
  int64_t len = rc ? 0 : opd_tensor_sizes(self)[d];
  if (!rc && split < 0)
    rc = opd_error(OPD_EINVAL, "split expects split_size be non-negative, but got split_size=%lld",
                   (long long)split);
  if (!rc && split == 0 && len != 0)
    rc =
        opd_error(OPD_EINVAL,
                  "split_size can only be 0 if dimension size is 0, but got dimension size of %lld",
                  (long long)len);
  if (!rc) {
    n = split == 0 ? 1 : (len + split - 1) / split;
    if (n == 0) n = 1; /* a size-0 dimension splits into one empty piece */
    if (!(parts = opd__calloc((size_t)n, sizeof *parts)))
      rc = opd_error(OPD_ENOMEM, "split: out of memory for %lld results", (long long)n);
  }
  for (int64_t i = 0; !rc && i < n; i++) {
    int64_t start = i * split, end = start + split < len ? start + split : len;
    rc = opd__cea_slice_tensor(ctx, self, d, (opd_opt_int){true, start}, (opd_opt_int){true, end},
                               1, &parts[i]);
  }
  opd_iv_destroy(&self_v);
  return push_views(stack, parts, n, rc);
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
  if (!rc) {
    n = opd_tensor_sizes(self)[d];
    if (n > 0 && !(parts = opd__calloc((size_t)n, sizeof *parts)))
      rc = opd_error(OPD_ENOMEM, "unbind: out of memory for %lld results", (long long)n);
  }
  for (int64_t i = 0; !rc && i < n; i++) rc = opd__cea_select_int(ctx, self, d, i, &parts[i]);
  opd_iv_destroy(&self_v);
  return push_views(stack, parts, n, rc);
}

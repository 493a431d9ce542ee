/* views_index.c: the view operators of the indexing family: squeeze, diagonal, unfold, and the
 * ones that split a tensor into views (split_with_sizes, unsafe_split.Tensor,
 * unsafe_split_with_sizes, chunk, tensor_split.sections, tensor_split.indices). They touch no
 * data, so one kernel serves every backend; opd_tensor_view_of checks that every view lies
 * inside its storage. Strides and offsets computed from a request's integers go through
 * opd/checked.h ([Note: Checked arithmetic]). */
#include <stdio.h>
#include <string.h>

#include "kernel_util.h"
#include "opd/checked.h"
#include "opd/memory.h"

/* views.c's slice kernel (its signature is the schema's: kernel_list.h) */
int opd__cea_slice_tensor(const opd_kernel_ctx *ctx, opd_tensor *self, int64_t dim,
                          opd_opt_int start, opd_opt_int end, int64_t step, opd_tensor **out);

int opd__cea_squeeze(const opd_kernel_ctx *ctx, opd_tensor *self, opd_tensor **out) {
  (void)ctx;
  const int64_t *os = opd_tensor_sizes(self), *ost = opd_tensor_strides(self);
  int64_t sizes[OPD_MAX_DIMS], strides[OPD_MAX_DIMS];
  int n = 0;
  for (int i = 0; i < self->ndim; i++) {
    if (os[i] == 1) continue;
    sizes[n] = os[i];
    strides[n++] = ost[i];
  }
  return opd_tensor_view_of(self, sizes, strides, n, self->storage_offset, out);
}

/* ATen's diagonal: dim1 and dim2 removed, the diagonal appended as the last dimension. */
int opd__cea_diagonal(const opd_kernel_ctx *ctx, opd_tensor *self, int64_t offset, int64_t dim1,
                      int64_t dim2, opd_tensor **out) {
  (void)ctx;
  int64_t d1, d2;
  int rc = opd__wrap_dim(dim1, self->ndim, &d1);
  if (rc == 0) rc = opd__wrap_dim(dim2, self->ndim, &d2);
  if (rc) return rc;
  if (d1 == d2)
    return opd_error(OPD_EINVAL, "diagonal dimensions cannot be identical %lld, %lld",
                     (long long)dim1, (long long)dim2);
  if (self->ndim < 2) /* a 0-d tensor wraps 0 and -1 to the same dim: caught above */
    return opd_error(OPD_EINVAL, "diagonal dimensions cannot be identical %lld, %lld",
                     (long long)dim1, (long long)dim2);
  const int64_t *os = opd_tensor_sizes(self), *ost = opd_tensor_strides(self);
  int64_t len, start = self->storage_offset, step;
  /* offsets past either size give an empty diagonal; the sums below then cannot overflow */
  if (offset >= 0)
    len = offset >= os[d2] ? 0 : (os[d1] < os[d2] - offset ? os[d1] : os[d2] - offset);
  else
    len = offset <= -os[d1] ? 0 : (os[d1] + offset < os[d2] ? os[d1] + offset : os[d2]);
  if (len > 0) {
    int64_t moved;
    bool bad =
        offset >= 0 ? opd_ckd_mul(&moved, offset, ost[d2]) : opd_ckd_mul(&moved, -offset, ost[d1]);
    if (bad || opd_ckd_add(&start, start, moved))
      return opd_error(OPD_EINVAL, "diagonal(): the storage offset of offset %lld overflows int64",
                       (long long)offset);
  }
  if (opd_ckd_add(&step, ost[d1], ost[d2]))
    return opd_error(OPD_EINVAL, "diagonal(): the stride of the diagonal overflows int64");
  int64_t sizes[OPD_MAX_DIMS], strides[OPD_MAX_DIMS];
  int n = 0;
  for (int i = 0; i < self->ndim; i++) {
    if (i == d1 || i == d2) continue;
    sizes[n] = os[i];
    strides[n++] = ost[i];
  }
  sizes[n] = len;
  strides[n++] = step;
  return opd_tensor_view_of(self, sizes, strides, n, start, out);
}

/* ATen's unfold: dimension d becomes (size[d] - size) / step + 1 windows, a new last dimension
 * of `size` elements walks each window. */
static int unfold_impl(opd_tensor *self, int64_t dimension, int64_t size, int64_t step,
                       opd_tensor **out) {
  int64_t d;
  int rc = opd__wrap_dim(dimension, self->ndim, &d);
  if (rc) return rc;
  if (self->ndim + 1 > OPD_MAX_DIMS)
    return opd_error(OPD_EINVAL, "tensors have at most %d dimensions", OPD_MAX_DIMS);
  const int64_t *os = opd_tensor_sizes(self), *ost = opd_tensor_strides(self);
  int64_t max_size = self->ndim == 0 ? 1 : os[d];
  if (size > max_size)
    return opd_error(OPD_EINVAL,
                     "maximum size for tensor at dimension %lld is %lld but size is %lld",
                     (long long)d, (long long)max_size, (long long)size);
  if (step <= 0) return opd_error(OPD_EINVAL, "step is %lld but must be > 0", (long long)step);
  if (size < 0)
    return opd_error(OPD_EINVAL, "Trying to create tensor with negative dimension %lld",
                     (long long)size);
  int64_t sizes[OPD_MAX_DIMS], strides[OPD_MAX_DIMS];
  memcpy(sizes, os, (size_t)self->ndim * sizeof *sizes);
  memcpy(strides, ost, (size_t)self->ndim * sizeof *strides);
  sizes[self->ndim] = size;
  strides[self->ndim] = self->ndim == 0 ? 1 : ost[d];
  if (self->ndim > 0) {
    sizes[d] = (os[d] - size) / step + 1;
    if (opd_ckd_mul(&strides[d], ost[d], step))
      return opd_error(OPD_EINVAL, "unfold(): step %lld overflows int64 for a stride of %lld",
                       (long long)step, (long long)ost[d]);
  }
  return opd_tensor_view_of(self, sizes, strides, self->ndim + 1, self->storage_offset, out);
}

int opd__unfold(const opd_kernel_ctx *ctx, opd_tensor *self, int64_t dimension, int64_t size,
                int64_t step, opd_tensor **out) {
  (void)ctx;
  return unfold_impl(self, dimension, size, step, out);
}

int opd__unfold_meta(const opd_kernel_ctx *ctx, opd_tensor *self, int64_t dimension, int64_t size,
                     int64_t step, opd_tensor **out) {
  (void)ctx;
  return unfold_impl(self, dimension, size, step, out);
}

/* ---- splitting into views ---- */

/* [Note: Splitting into views]
 * Every operator that splits a tensor returns a Tensor[] of slices of one dimension, given as
 * n (start, length) pairs: split_pieces checks the count against OPD__MAX_VIEWS_RETURNED
 * before anything is allocated, makes the slices and pushes them as one list. The pieces'
 * starts and lengths are computed by each operator as ATen computes them, with its errors. */
typedef struct piece {
  int64_t start, end;
} piece;

/* Replaces the `nargs` arguments on the stack by the slices of self along dim given by
 * pieces[0..n), as one Tensor[] (self is one of the arguments: it lives until they go). */
static int push_slices(const opd_kernel_ctx *ctx, opd_stack *stack, int nargs, opd_tensor *self,
                       int64_t dim, const piece *pieces, int64_t n) {
  opd_tensor **views = n > 0 ? opd__calloc((size_t)n, sizeof *views) : NULL;
  int rc = n > 0 && !views
               ? opd_error(OPD_ENOMEM, "split: out of memory for %lld views", (long long)n)
               : 0;
  for (int64_t i = 0; rc == 0 && i < n; i++)
    rc = opd__cea_slice_tensor(ctx, self, dim, (opd_opt_int){true, pieces[i].start},
                               (opd_opt_int){true, pieces[i].end}, 1, &views[i]);
  opd_ivalue list;
  if (rc == 0) rc = opd_iv_make_tensor_list(&list, views, (size_t)n, false); /* retains them */
  for (int64_t i = 0; views && i < n; i++)
    if (views[i]) opd_tensor_release(views[i]);
  opd__free(views);
  opd_stack_drop(stack, nargs);
  return rc ? rc : opd_stack_push(stack, list);
}

static int too_many(const char *op, int64_t n) {
  return opd_error(OPD_EINVAL, "%s: %lld views are more than the %d one call may return", op,
                   (long long)n, OPD__MAX_VIEWS_RETURNED);
}

static piece *pieces_alloc(int64_t n, const char *op, int *rc) {
  *rc = 0;
  if (n > OPD__MAX_VIEWS_RETURNED) {
    *rc = too_many(op, n);
    return NULL;
  }
  piece *p = opd__calloc((size_t)(n > 0 ? n : 1), sizeof *p);
  if (!p) *rc = opd_error(OPD_ENOMEM, "%s: out of memory for %lld views", op, (long long)n);
  return p;
}

/* split_with_sizes and unsafe_split_with_sizes: (self, split_sizes, dim) on the stack. */
static int split_with_sizes(const opd_kernel_ctx *ctx, opd_stack *stack) {
  opd_ivalue *args = opd_stack_last(stack, 3);
  opd_tensor *self = args[0].u.t;
  opd_int_list sizes = opd__iv_int_list(&args[1]);
  int64_t dim = 0;
  int rc = 0;
  char buf[256];
  if (self->ndim == 0) rc = opd_error(OPD_EINVAL, "split expects at least a 1-dimensional tensor");
  if (rc == 0) rc = opd__wrap_dim(args[2].u.i, self->ndim, &dim);
  piece *p = rc ? NULL : pieces_alloc(sizes.len, "split_with_sizes", &rc);
  int64_t start = 0;
  for (int64_t i = 0; rc == 0 && i < sizes.len; i++) {
    if (sizes.data[i] < 0) {
      rc = opd_error(OPD_EINVAL,
                     "split_with_sizes expects split_sizes have only non-negative entries, but "
                     "got split_sizes=%s",
                     opd__format_sizes(sizes.data, (int)sizes.len, buf, sizeof buf));
      break;
    }
    p[i].start = start;
    if (opd_ckd_add(&p[i].end, start, sizes.data[i]))
      rc = opd_error(OPD_EINVAL, "split_with_sizes: the split sizes overflow int64");
    start = p[i].end;
  }
  int64_t dim_size = rc ? 0 : opd_tensor_sizes(self)[dim];
  if (rc == 0 && start != dim_size)
    rc = opd_error(OPD_EINVAL,
                   "split_with_sizes expects split_sizes to sum exactly to %lld (input tensor's "
                   "size at dimension %lld), but got split_sizes=%s",
                   (long long)dim_size, (long long)dim,
                   opd__format_sizes(sizes.data, (int)sizes.len, buf, sizeof buf));
  if (rc == 0)
    rc = push_slices(ctx, stack, 3, self, dim, p, sizes.len);
  else
    opd_stack_drop(stack, 3);
  opd__free(p);
  return rc;
}

int opd__cea_split_with_sizes(const opd_kernel_ctx *ctx, opd_stack *stack) {
  return split_with_sizes(ctx, stack);
}

int opd__cea_unsafe_split_with_sizes(const opd_kernel_ctx *ctx, opd_stack *stack) {
  return split_with_sizes(ctx, stack);
}

/* the split.Tensor kernel (views_split.c) */
int opd__cea_split_tensor(const opd_kernel_ctx *ctx, opd_stack *stack);

int opd__cea_unsafe_split_tensor(const opd_kernel_ctx *ctx, opd_stack *stack) {
  return opd__cea_split_tensor(ctx, stack);
}

/* chunk(self, chunks, dim): split into pieces of ceil(size / chunks) (the last shorter), or,
 * when that is 0 (an empty dimension), `chunks` empty pieces, as ATen. */
int opd__cia_chunk(const opd_kernel_ctx *ctx, opd_stack *stack) {
  opd_ivalue *args = opd_stack_last(stack, 3);
  opd_tensor *self = args[0].u.t;
  int64_t chunks = args[1].u.i, dim = 0;
  int rc = 0;
  if (self->ndim == 0) rc = opd_error(OPD_EINVAL, "chunk expects at least a 1-dimensional tensor");
  if (rc == 0 && chunks <= 0)
    rc = opd_error(OPD_EINVAL, "chunk expects `chunks` to be greater than 0, got: %lld",
                   (long long)chunks);
  if (rc == 0) rc = opd__wrap_dim(args[2].u.i, self->ndim, &dim);
  if (rc) {
    opd_stack_drop(stack, 3);
    return rc;
  }
  int64_t size = opd_tensor_sizes(self)[dim];
  /* ceil(size / chunks) without overflow */
  int64_t split = size == 0 ? 0 : (size - 1) / chunks + 1;
  if (split > 0) {
    args[1] = opd_iv_int(split);
    args[2] = opd_iv_int(dim);
    return opd__cea_split_tensor(ctx, stack);
  }
  piece *p = pieces_alloc(chunks, "chunk", &rc);
  if (rc == 0)
    rc = push_slices(ctx, stack, 3, self, dim, p, chunks); /* calloc'd: every piece [0, 0) */
  else
    opd_stack_drop(stack, 3);
  opd__free(p);
  return rc;
}

/* tensor_split.sections(self, sections, dim) and tensor_split.indices(self, indices, dim) */
static int tensor_split(const opd_kernel_ctx *ctx, opd_stack *stack, bool by_indices) {
  opd_ivalue *args = opd_stack_last(stack, 3);
  opd_tensor *self = args[0].u.t;
  int64_t dim = 0, n = 0;
  int rc = 0;
  if (self->ndim == 0)
    rc = opd_error(OPD_EINVAL,
                   "tensor_split expected at least a 1-dimensional tensor, but got a tensor with "
                   "0 dims");
  if (rc == 0) rc = opd__wrap_dim(args[2].u.i, self->ndim, &dim);
  int64_t sections = by_indices ? 0 : args[1].u.i;
  opd_int_list indices = by_indices ? opd__iv_int_list(&args[1]) : (opd_int_list){NULL, 0};
  if (rc == 0 && !by_indices && sections <= 0)
    rc = opd_error(OPD_EINVAL, "number of sections must be larger than 0, got %lld",
                   (long long)sections);
  if (rc == 0) n = by_indices ? indices.len + 1 : sections;
  piece *p = rc ? NULL : pieces_alloc(n, "tensor_split", &rc);
  if (rc == 0) {
    int64_t size = opd_tensor_sizes(self)[dim], start = 0;
    if (by_indices) {
      for (int64_t i = 0; i < indices.len; i++) {
        p[i] = (piece){start, indices.data[i]};
        start = indices.data[i];
      }
      p[indices.len] = (piece){start, size};
    } else {
      int64_t min_size = size / sections, extra = size % sections;
      for (int64_t i = 0; i < sections; i++) {
        int64_t len = i < extra ? min_size + 1 : min_size;
        p[i] = (piece){start, start + len}; /* start + len <= size */
        start += len;
      }
    }
    rc = push_slices(ctx, stack, 3, self, dim, p, n);
  } else {
    opd_stack_drop(stack, 3);
  }
  opd__free(p);
  return rc;
}

int opd__cia_tensor_split_sections(const opd_kernel_ctx *ctx, opd_stack *stack) {
  return tensor_split(ctx, stack, false);
}

int opd__cia_tensor_split_indices(const opd_kernel_ctx *ctx, opd_stack *stack) {
  return tensor_split(ctx, stack, true);
}

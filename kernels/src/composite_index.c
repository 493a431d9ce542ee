/* composite_index.c: the composite kernels of the indexing family, written with other
 * operators called through the dispatcher (so that they work on every backend and in graphs),
 * as ATen writes them: the shape operators (flatten, unflatten, movedim, narrow, expand_as,
 * view_as, reshape_as, swapaxes, tile, repeat, rot90, diag, diag_embed), joining (stack,
 * hstack, vstack), the *_scatter operators (a clone with one view of it overwritten), the
 * out-of-place forms of in-place indexing operators (index_fill, masked_fill.Tensor,
 * masked_scatter, index_put, index_put_, put), where's Scalar overloads, logcumsumexp and
 * index_reduce. */
#include <stdlib.h>
#include <string.h>

#include "kernel_util.h"
#include "loops.h"
#include "meta/reduce_meta.h"
#include "opd/checked.h"
#include "opd/memory.h"

/* c10's MemoryFormat values. */
enum { MEMORY_FORMAT_CONTIGUOUS = 0, MEMORY_FORMAT_PRESERVE = 1 };

/* views_index.c's unfold and diagonal, views.c's select and slice (views: every backend) */
int opd__unfold(const opd_kernel_ctx *ctx, opd_tensor *self, int64_t dimension, int64_t size,
                int64_t step, opd_tensor **out);
int opd__cea_diagonal(const opd_kernel_ctx *ctx, opd_tensor *self, int64_t offset, int64_t dim1,
                      int64_t dim2, opd_tensor **out);
int opd__cea_select_int(const opd_kernel_ctx *ctx, opd_tensor *self, int64_t dim, int64_t index,
                        opd_tensor **out);
int opd__cea_slice_tensor(const opd_kernel_ctx *ctx, opd_tensor *self, int64_t dim,
                          opd_opt_int start, opd_opt_int end, int64_t step, opd_tensor **out);

/* ---- calls through the dispatcher ---- */

/* op(self, ints) for an operator taking a tensor and an int list (reshape, view, permute,
 * flip, repeat). */
static int call_t_ints(const opd_operator **cache, const char *name, opd_tensor *self,
                       const int64_t *v, int64_t n, opd_tensor **out) {
  opd_stack s;
  opd_stack_init(&s);
  int rc = OPD__PUSH_Tensor(&s, self);
  if (rc == 0) rc = OPD__PUSH_IntList(&s, ((opd_int_list){v, n}));
  return opd__call_tensor(rc, cache, name, &s, out);
}

static int call_reshape(opd_tensor *self, const int64_t *v, int64_t n, opd_tensor **out) {
  static const opd_operator *op;
  return call_t_ints(&op, "aten::reshape", self, v, n, out);
}

static int call_view(opd_tensor *self, const int64_t *v, int64_t n, opd_tensor **out) {
  static const opd_operator *op;
  return call_t_ints(&op, "aten::view", self, v, n, out);
}

static int call_permute(opd_tensor *self, const int64_t *v, int64_t n, opd_tensor **out) {
  static const opd_operator *op;
  return call_t_ints(&op, "aten::permute", self, v, n, out);
}

static int call_flip(opd_tensor *self, const int64_t *v, int64_t n, opd_tensor **out) {
  static const opd_operator *op;
  return call_t_ints(&op, "aten::flip", self, v, n, out);
}

static int call_repeat(opd_tensor *self, const int64_t *v, int64_t n, opd_tensor **out) {
  static const opd_operator *op;
  return call_t_ints(&op, "aten::repeat", self, v, n, out);
}

static int call_expand(opd_tensor *self, const int64_t *v, int64_t n, opd_tensor **out) {
  static const opd_operator *op;
  opd_stack s;
  opd_stack_init(&s);
  int rc = OPD__PUSH_Tensor(&s, self);
  if (rc == 0) rc = OPD__PUSH_IntList(&s, ((opd_int_list){v, n}));
  if (rc == 0) rc = OPD__PUSH_Bool(&s, false);
  return opd__call_tensor(rc, &op, "aten::expand", &s, out);
}

static int call_t_int(const opd_operator **cache, const char *name, opd_tensor *self, int64_t a,
                      opd_tensor **out) {
  opd_stack s;
  opd_stack_init(&s);
  int rc = OPD__PUSH_Tensor(&s, self);
  if (rc == 0) rc = OPD__PUSH_Int(&s, a);
  return opd__call_tensor(rc, cache, name, &s, out);
}

static int call_unsqueeze(opd_tensor *self, int64_t dim, opd_tensor **out) {
  static const opd_operator *op;
  return call_t_int(&op, "aten::unsqueeze", self, dim, out);
}

static int call_transpose(opd_tensor *self, int64_t d0, int64_t d1, opd_tensor **out) {
  static const opd_operator *op;
  opd_stack s;
  opd_stack_init(&s);
  int rc = OPD__PUSH_Tensor(&s, self);
  if (rc == 0) rc = OPD__PUSH_Int(&s, d0);
  if (rc == 0) rc = OPD__PUSH_Int(&s, d1);
  return opd__call_tensor(rc, &op, "aten::transpose.int", &s, out);
}

static int call_clone(opd_tensor *self, int64_t memory_format, opd_tensor **out) {
  static const opd_operator *op;
  opd_stack s;
  opd_stack_init(&s);
  int rc = OPD__PUSH_Tensor(&s, self);
  if (rc == 0) rc = OPD__PUSH_OptMemoryFormat(&s, memory_format);
  return opd__call_tensor(rc, &op, "aten::clone", &s, out);
}

static int call_cat(opd_tensor *const *tensors, uint32_t n, int64_t dim, opd_tensor **out) {
  static const opd_operator *op;
  opd_stack s;
  opd_stack_init(&s);
  int rc = OPD__PUSH_TensorList(&s, ((opd_tensor_list){tensors, n}));
  if (rc == 0) rc = OPD__PUSH_Int(&s, dim);
  return opd__call_tensor(rc, &op, "aten::cat", &s, out);
}

/* aten::zeros(sizes) of like's dtype and device */
static int call_zeros_like_options(opd_tensor *like, const int64_t *sizes, int n,
                                   opd_tensor **out) {
  static const opd_operator *op;
  opd_stack s;
  opd_stack_init(&s);
  int rc = OPD__PUSH_IntList(&s, ((opd_int_list){sizes, n}));
  if (rc == 0) rc = OPD__PUSH_OptDType(&s, opd_tensor_dtype(like));
  if (rc == 0) rc = OPD__PUSH_OptLayout(&s, -1);
  if (rc == 0) rc = OPD__PUSH_OptDevice(&s, opd_tensor_device(like));
  if (rc == 0) rc = OPD__PUSH_OptBool(&s, ((opd_opt_bool){false, false}));
  return opd__call_tensor(rc, &op, "aten::zeros", &s, out);
}

/* The new tensor in *out, or its release on failure: `rc` is the status of what was done to
 * it since it was made. */
static int keep_or_release(int rc, opd_tensor *t, opd_tensor **out) {
  if (rc) {
    opd_tensor_release(t);
    return rc;
  }
  *out = t;
  return 0;
}

/* self itself, as ATen returns it (a new reference). */
static int same_tensor(opd_tensor *self, opd_tensor **out) {
  opd_tensor_retain(self);
  *out = self;
  return 0;
}

/* ---- shapes ---- */

int opd__cia_flatten_using_ints(const opd_kernel_ctx *ctx, opd_tensor *self, int64_t start_dim,
                                int64_t end_dim, opd_tensor **out) {
  (void)ctx;
  int64_t s, e;
  int rc = opd__wrap_dim(start_dim, self->ndim, &s);
  if (rc == 0) rc = opd__wrap_dim(end_dim, self->ndim, &e);
  if (rc) return rc;
  if (s > e)
    return opd_error(OPD_EINVAL, "flatten() has invalid args: start_dim cannot come after end_dim");
  if (self->ndim == 0) return call_reshape(self, (int64_t[]){1}, 1, out);
  if (s == e) return same_tensor(self, out);
  const int64_t *os = opd_tensor_sizes(self);
  int64_t shape[OPD_MAX_DIMS], numel = 1;
  int n = 0;
  for (int d = 0; d < s; d++) shape[n++] = os[d];
  for (int64_t d = s; d <= e; d++) /* a Meta tensor's empty sizes can multiply past int64 */
    if (opd_ckd_mul(&numel, numel, os[d]))
      return opd_error(OPD_EINVAL, "flatten(): the flattened size overflows int64");
  shape[n++] = numel;
  for (int d = (int)e + 1; d < self->ndim; d++) shape[n++] = os[d];
  return call_reshape(self, shape, n, out);
}

int opd__cia_unflatten_int(const opd_kernel_ctx *ctx, opd_tensor *self, int64_t dim,
                           opd_int_list sizes, opd_tensor **out) {
  (void)ctx;
  int64_t d;
  int rc = opd__wrap_dim(dim, self->ndim, &d);
  if (rc) return rc;
  if (sizes.len == 0) return opd_error(OPD_EINVAL, "unflatten: sizes must be non-empty");
  if (self->ndim - 1 + sizes.len > OPD_MAX_DIMS)
    return opd_error(OPD_EINVAL, "tensors have at most %d dimensions", OPD_MAX_DIMS);
  int64_t size = self->ndim ? opd_tensor_sizes(self)[d] : 1, product = 1, infer = -1;
  bool overflow = false;
  for (int64_t i = 0; i < sizes.len; i++) {
    if (sizes.data[i] == -1 && infer < 0)
      infer = i;
    else
      overflow |= opd_ckd_mul(&product, product, sizes.data[i]);
  }
  int64_t shape[OPD_MAX_DIMS];
  int n = 0;
  for (int i = 0; i < d; i++) shape[n++] = opd_tensor_sizes(self)[i];
  for (int64_t i = 0; i < sizes.len; i++) shape[n++] = sizes.data[i];
  if (infer >= 0 && !overflow && product > 0 && size % product == 0)
    shape[d + infer] = size / product;
  else if (infer >= 0 || overflow || product != size) {
    char buf[256];
    return opd_error(OPD_EINVAL,
                     "unflatten: Provided sizes %s don't multiply up to the size of dim %lld "
                     "(%lld) in the input tensor",
                     opd__format_sizes(sizes.data, (int)sizes.len, buf, sizeof buf), (long long)dim,
                     (long long)size);
  }
  for (int i = (int)d + 1; i < self->ndim; i++) shape[n++] = opd_tensor_sizes(self)[i];
  return call_view(self, shape, n, out);
}

/* ATen's movedim: source dims go to their destinations, the others keep their order. */
static int movedim(opd_tensor *self, opd_int_list src, opd_int_list dst, opd_tensor **out) {
  char a[256], b[256];
  if (src.len != dst.len)
    return opd_error(OPD_EINVAL,
                     "movedim: Invalid source or destination dims: source (%s dims) should "
                     "contain the same number of dims as destination (%s dims)",
                     opd__format_sizes(src.data, (int)src.len, a, sizeof a),
                     opd__format_sizes(dst.data, (int)dst.len, b, sizeof b));
  int nd = self->ndim;
  if (src.len > (nd > 0 ? nd : 1))
    return opd_error(OPD_EINVAL, "movedim: repeated dim in `source` (%s)",
                     opd__format_sizes(src.data, (int)src.len, a, sizeof a));
  int64_t order[OPD_MAX_DIMS], ns[OPD_MAX_DIMS], nds[OPD_MAX_DIMS];
  bool src_used[OPD_MAX_DIMS] = {false}, dst_used[OPD_MAX_DIMS] = {false};
  for (int64_t i = 0; i < src.len; i++) {
    int rc = opd__wrap_dim(src.data[i], nd, &ns[i]);
    if (rc) return rc;
  }
  for (int64_t i = 0; i < dst.len; i++) {
    int rc = opd__wrap_dim(dst.data[i], nd, &nds[i]);
    if (rc) return rc;
  }
  for (int64_t i = 0; i < src.len; i++) {
    if (src_used[ns[i]])
      return opd_error(OPD_EINVAL, "movedim: repeated dim in `source` (%s)",
                       opd__format_sizes(src.data, (int)src.len, a, sizeof a));
    src_used[ns[i]] = true;
  }
  for (int64_t i = 0; i < dst.len; i++) {
    if (dst_used[nds[i]])
      return opd_error(OPD_EINVAL, "movedim: repeated dim in `destination` (%s)",
                       opd__format_sizes(dst.data, (int)dst.len, a, sizeof a));
    dst_used[nds[i]] = true;
  }
  if (nd == 0) return call_view(self, NULL, 0, out); /* ATen: self.alias() */
  for (int64_t i = 0; i < src.len; i++) order[nds[i]] = ns[i];
  int next_src = 0;
  for (int d = 0; d < nd; d++) {
    if (dst_used[d]) continue;
    while (src_used[next_src]) next_src++;
    order[d] = next_src++;
  }
  return call_permute(self, order, nd, out);
}

int opd__cia_movedim_intlist(const opd_kernel_ctx *ctx, opd_tensor *self, opd_int_list source,
                             opd_int_list destination, opd_tensor **out) {
  (void)ctx;
  return movedim(self, source, destination, out);
}

int opd__cia_movedim_int(const opd_kernel_ctx *ctx, opd_tensor *self, int64_t source,
                         int64_t destination, opd_tensor **out) {
  (void)ctx;
  return movedim(self, (opd_int_list){&source, 1}, (opd_int_list){&destination, 1}, out);
}

int opd__cia_narrow(const opd_kernel_ctx *ctx, opd_tensor *self, int64_t dim, int64_t start,
                    int64_t length, opd_tensor **out) {
  (void)ctx;
  static const opd_operator *op;
  if (self->ndim == 0)
    return opd_error(OPD_EINVAL, "narrow() cannot be applied to a 0-dim tensor.");
  int64_t d;
  int rc = opd__wrap_dim(dim, self->ndim, &d);
  if (rc) return rc;
  int64_t size = opd_tensor_sizes(self)[d];
  if (start != size && (rc = opd__wrap_dim(start, size, &start))) return rc;
  if (length < 0 || start > size - length)
    return opd_error(OPD_EINVAL, "start (%lld) + length (%lld) exceeds dimension size (%lld).",
                     (long long)start, (long long)length, (long long)size);
  opd_stack s;
  opd_stack_init(&s);
  rc = OPD__PUSH_Tensor(&s, self);
  if (rc == 0) rc = OPD__PUSH_Int(&s, d);
  if (rc == 0) rc = OPD__PUSH_OptInt(&s, ((opd_opt_int){true, start}));
  if (rc == 0) rc = OPD__PUSH_OptInt(&s, ((opd_opt_int){true, start + length}));
  if (rc == 0) rc = OPD__PUSH_Int(&s, 1);
  return opd__call_tensor(rc, &op, "aten::slice.Tensor", &s, out);
}

int opd__cia_expand_as(const opd_kernel_ctx *ctx, opd_tensor *self, opd_tensor *other,
                       opd_tensor **out) {
  (void)ctx;
  return call_expand(self, opd_tensor_sizes(other), other->ndim, out);
}

int opd__cia_view_as(const opd_kernel_ctx *ctx, opd_tensor *self, opd_tensor *other,
                     opd_tensor **out) {
  (void)ctx;
  return call_view(self, opd_tensor_sizes(other), other->ndim, out);
}

int opd__cia_reshape_as(const opd_kernel_ctx *ctx, opd_tensor *self, opd_tensor *other,
                        opd_tensor **out) {
  (void)ctx;
  return call_reshape(self, opd_tensor_sizes(other), other->ndim, out);
}

int opd__cia_swapaxes(const opd_kernel_ctx *ctx, opd_tensor *self, int64_t axis0, int64_t axis1,
                      opd_tensor **out) {
  (void)ctx;
  return call_transpose(self, axis0, axis1, out);
}

int opd__cia_tile(const opd_kernel_ctx *ctx, opd_tensor *self, opd_int_list dims,
                  opd_tensor **out) {
  (void)ctx;
  if (dims.len >= self->ndim) return call_repeat(self, dims.data, dims.len, out);
  int64_t reps[OPD_MAX_DIMS];
  int64_t pad = self->ndim - dims.len;
  for (int64_t i = 0; i < pad; i++) reps[i] = 1;
  for (int64_t i = 0; i < dims.len; i++) reps[pad + i] = dims.data[i];
  return call_repeat(self, reps, self->ndim, out);
}

/* [Note: repeat as a copy into windows]
 * ATen's repeat: the result of sizes padded_size[i] * repeats[i] is viewed, with one unfold
 * per dimension, as repeats[i] windows of padded_size[i] elements, and self (with leading
 * size-1 dimensions added) is expanded over the windows and copied in: one copy_, no loop
 * here, and any backend's copy_ does the work. */
int opd__cea_repeat(const opd_kernel_ctx *ctx, opd_tensor *self, opd_int_list repeats,
                    opd_tensor **out) {
  if (repeats.len < self->ndim)
    return opd_error(OPD_EINVAL,
                     "Number of dimensions of repeat dims can not be smaller than number of "
                     "dimensions of tensor");
  if (repeats.len > OPD_MAX_DIMS)
    return opd_error(OPD_EINVAL, "tensors have at most %d dimensions", OPD_MAX_DIMS);
  int n = (int)repeats.len, pad = n - self->ndim;
  int64_t padded[OPD_MAX_DIMS], target[OPD_MAX_DIMS];
  bool zero = false;
  for (int i = 0; i < n; i++) {
    padded[i] = i < pad ? 1 : opd_tensor_sizes(self)[i - pad];
    if (repeats.data[i] == 0) zero = true;
    if (opd_ckd_mul(&target[i], padded[i], repeats.data[i]))
      return opd_error(OPD_EINVAL, "repeat: the size of dimension %d overflows int64", i);
  }
  opd_tensor *result = NULL, *x = NULL, *windows = NULL;
  int rc = opd__call_empty((opd_int_list){target, n}, opd_tensor_dtype(self), -1,
                           opd_tensor_device(self), (opd_opt_bool){false, false}, -1, &result);
  if (rc || zero) return rc ? rc : (*out = result, 0);
  if ((rc = call_expand(self, padded, n, &x))) return keep_or_release(rc, result, out);
  windows = result;
  opd_tensor_retain(windows);
  for (int i = 0; rc == 0 && i < n; i++) {
    opd_tensor *next = NULL;
    rc = opd__unfold(ctx, windows, i, padded[i], padded[i] > 1 ? padded[i] : 1, &next);
    opd_tensor_release(windows);
    windows = next;
  }
  opd_tensor *src = NULL;
  if (rc == 0) rc = call_expand(x, opd_tensor_sizes(windows), windows->ndim, &src);
  if (rc == 0) rc = opd__call_copy_(windows, src, false);
  if (src) opd_tensor_release(src);
  if (windows) opd_tensor_release(windows);
  opd_tensor_release(x);
  return keep_or_release(rc, result, out);
}

int opd__cea_rot90(const opd_kernel_ctx *ctx, opd_tensor *self, int64_t k, opd_int_list dims,
                   opd_tensor **out) {
  (void)ctx;
  int64_t total = self->ndim;
  if (dims.len != 2)
    return opd_error(OPD_EINVAL, "expected total rotation dims == 2, but got dims = %lld",
                     (long long)dims.len);
  if (total < 2)
    return opd_error(OPD_EINVAL, "expected total dims >= 2, but got total dims = %lld",
                     (long long)total);
  int64_t d0 = dims.data[0], d1 = dims.data[1];
  if (d0 == d1 || llabs(d0 - d1) == total)
    return opd_error(OPD_EINVAL,
                     "expected rotation dims to be different, but got dim0 = %lld and dim1 = %lld",
                     (long long)d0, (long long)d1);
  if (d0 >= total || d0 < -total)
    return opd_error(OPD_EINVAL, "Rotation dim0 out of range, dim0 = %lld", (long long)d0);
  if (d1 >= total || d1 < -total)
    return opd_error(OPD_EINVAL, "Rotation dim1 out of range, dim1 = %lld", (long long)d1);
  k = (4 + k % 4) % 4;
  opd_tensor *flipped = NULL;
  int rc;
  switch (k) {
  case 1:
    if ((rc = call_flip(self, &d1, 1, &flipped))) return rc;
    break;
  case 2: return call_flip(self, dims.data, 2, out);
  case 3:
    if ((rc = call_flip(self, &d0, 1, &flipped))) return rc;
    break;
  default: return call_clone(self, MEMORY_FORMAT_CONTIGUOUS, out);
  }
  /* ATen transposes the flipped tensor in place: the same values as its transposed view */
  rc = call_transpose(flipped, d0, d1, out);
  opd_tensor_release(flipped);
  return rc;
}

int opd__cea_diag_embed(const opd_kernel_ctx *ctx, opd_tensor *self, int64_t offset, int64_t dim1,
                        int64_t dim2, opd_tensor **out) {
  int64_t nd = self->ndim + 1, d1, d2;
  int rc = opd__wrap_dim(dim1, nd, &d1);
  if (rc == 0) rc = opd__wrap_dim(dim2, nd, &d2);
  if (rc) return rc;
  if (d1 == d2)
    return opd_error(OPD_EINVAL, "diagonal dimensions cannot be identical %lld, %lld",
                     (long long)dim1, (long long)dim2);
  if (self->ndim == 0)
    return opd_error(OPD_EINDEX, "Dimension specified as -1 but tensor has no dimensions");
  if (nd > OPD_MAX_DIMS)
    return opd_error(OPD_EINVAL, "tensors have at most %d dimensions", OPD_MAX_DIMS);
  int64_t len, last = opd_tensor_sizes(self)[self->ndim - 1];
  if (offset == INT64_MIN || opd_ckd_add(&len, llabs(offset), last))
    return opd_error(OPD_EINVAL, "diag_embed: offset %lld overflows int64", (long long)offset);
  int64_t sizes[OPD_MAX_DIMS];
  int64_t lo = d1 < d2 ? d1 : d2, hi = d1 < d2 ? d2 : d1;
  for (int i = 0, j = 0; i < nd; i++) {
    if (i == lo || i == hi)
      sizes[i] = len;
    else
      sizes[i] = opd_tensor_sizes(self)[j++];
  }
  opd_tensor *result = NULL, *diag = NULL;
  if ((rc = call_zeros_like_options(self, sizes, (int)nd, &result))) return rc;
  rc = opd__cea_diagonal(ctx, result, offset, d1, d2, &diag);
  if (rc == 0) rc = opd__call_copy_(diag, self, false);
  if (diag) opd_tensor_release(diag);
  return keep_or_release(rc, result, out);
}

int opd__cea_diag(const opd_kernel_ctx *ctx, opd_tensor *self, int64_t diagonal, opd_tensor **out) {
  if (self->ndim == 1) return opd__cea_diag_embed(ctx, self, diagonal, 0, 1, out);
  if (self->ndim != 2) return opd_error(OPD_EINVAL, "matrix or a vector expected");
  opd_tensor *d = NULL;
  int rc = opd__cea_diagonal(ctx, self, diagonal, 0, 1, &d);
  if (rc) return rc;
  rc = call_clone(d, MEMORY_FORMAT_CONTIGUOUS, out);
  opd_tensor_release(d);
  return rc;
}

/* ---- joining ---- */

/* tensors[i] reshaped by `fn` (unsqueeze at dim, or at-least-n-d), then cat along cat_dim. */
typedef int (*reshape_fn)(opd_tensor *t, int64_t arg, opd_tensor **out);

static int cat_reshaped(opd_tensor_list tensors, reshape_fn fn, int64_t arg, int64_t cat_dim,
                        bool cat_dim_from_first, opd_tensor **out) {
  opd_tensor **parts = opd__calloc(tensors.len, sizeof *parts);
  if (!parts) return opd_error(OPD_ENOMEM, "out of memory for %u tensors", tensors.len);
  int rc = 0;
  for (uint32_t i = 0; rc == 0 && i < tensors.len; i++) rc = fn(tensors.data[i], arg, &parts[i]);
  if (rc == 0 && cat_dim_from_first) cat_dim = parts[0]->ndim == 1 ? 0 : 1;
  if (rc == 0) rc = call_cat(parts, tensors.len, cat_dim, out);
  for (uint32_t i = 0; i < tensors.len; i++)
    if (parts[i]) opd_tensor_release(parts[i]);
  opd__free(parts);
  return rc;
}

static int unsqueeze_fn(opd_tensor *t, int64_t dim, opd_tensor **out) {
  return call_unsqueeze(t, dim, out);
}

/* ATen's atleast_1d (n == 1) and atleast_2d (n == 2). */
static int atleast_fn(opd_tensor *t, int64_t n, opd_tensor **out) {
  if (t->ndim == 0) return call_reshape(t, (int64_t[]){1, 1}, n, out);
  if (n == 2 && t->ndim == 1) return call_unsqueeze(t, 0, out);
  return same_tensor(t, out);
}

int opd__cea_stack(const opd_kernel_ctx *ctx, opd_tensor_list tensors, int64_t dim,
                   opd_tensor **out) {
  (void)ctx;
  if (tensors.len == 0) return opd_error(OPD_EINVAL, "stack expects a non-empty TensorList");
  opd_tensor *first = tensors.data[0];
  int64_t d;
  int rc = opd__wrap_dim(dim, first->ndim + 1, &d);
  if (rc) return rc;
  for (uint32_t i = 1; i < tensors.len; i++) {
    opd_tensor *t = tensors.data[i];
    if (t->ndim != first->ndim ||
        memcmp(opd_tensor_sizes(t), opd_tensor_sizes(first), (size_t)t->ndim * sizeof(int64_t))) {
      char a[256], b[256];
      return opd_error(OPD_EINVAL,
                       "stack expects each tensor to be equal size, but got %s at entry 0 and %s "
                       "at entry %u",
                       opd__format_sizes(opd_tensor_sizes(first), first->ndim, a, sizeof a),
                       opd__format_sizes(opd_tensor_sizes(t), t->ndim, b, sizeof b), i);
    }
  }
  return cat_reshaped(tensors, unsqueeze_fn, d, d, false, out);
}

int opd__cia_hstack(const opd_kernel_ctx *ctx, opd_tensor_list tensors, opd_tensor **out) {
  (void)ctx;
  if (tensors.len == 0) return opd_error(OPD_EINVAL, "hstack expects a non-empty TensorList");
  return cat_reshaped(tensors, atleast_fn, 1, 0, true, out);
}

int opd__cia_vstack(const opd_kernel_ctx *ctx, opd_tensor_list tensors, opd_tensor **out) {
  (void)ctx;
  if (tensors.len == 0) return opd_error(OPD_EINVAL, "vstack expects a non-empty TensorList");
  return cat_reshaped(tensors, atleast_fn, 2, 0, false, out);
}

/* ---- *_scatter: a clone of self with one view of it overwritten by src ---- */

static int scatter_into_view(opd_tensor *result, opd_tensor *view, opd_tensor *src,
                             opd_tensor **out) {
  int rc = 0;
  if (view->ndim != src->ndim ||
      memcmp(opd_tensor_sizes(view), opd_tensor_sizes(src), (size_t)src->ndim * sizeof(int64_t))) {
    char a[256], b[256];
    rc = opd_error(OPD_EINVAL,
                   "expected src to have a size equal to the slice of self. src size = %s, slice "
                   "size = %s",
                   opd__format_sizes(opd_tensor_sizes(src), src->ndim, a, sizeof a),
                   opd__format_sizes(opd_tensor_sizes(view), view->ndim, b, sizeof b));
  }
  if (rc == 0) rc = opd__call_copy_(view, src, false);
  opd_tensor_release(view);
  return keep_or_release(rc, result, out);
}

int opd__cea_select_scatter(const opd_kernel_ctx *ctx, opd_tensor *self, opd_tensor *src,
                            int64_t dim, int64_t index, opd_tensor **out) {
  opd_tensor *r = NULL, *v = NULL;
  int rc = call_clone(self, -1, &r);
  if (rc) return rc;
  if ((rc = opd__cea_select_int(ctx, r, dim, index, &v))) return keep_or_release(rc, r, out);
  return scatter_into_view(r, v, src, out);
}

int opd__cea_slice_scatter(const opd_kernel_ctx *ctx, opd_tensor *self, opd_tensor *src,
                           int64_t dim, opd_opt_int start, opd_opt_int end, int64_t step,
                           opd_tensor **out) {
  opd_tensor *r = NULL, *v = NULL;
  int rc = call_clone(self, -1, &r);
  if (rc) return rc;
  if ((rc = opd__cea_slice_tensor(ctx, r, dim, start, end, step, &v)))
    return keep_or_release(rc, r, out);
  return scatter_into_view(r, v, src, out);
}

int opd__cea_diagonal_scatter(const opd_kernel_ctx *ctx, opd_tensor *self, opd_tensor *src,
                              int64_t offset, int64_t dim1, int64_t dim2, opd_tensor **out) {
  opd_tensor *r = NULL, *v = NULL;
  int rc = call_clone(self, -1, &r);
  if (rc) return rc;
  if ((rc = opd__cea_diagonal(ctx, r, offset, dim1, dim2, &v))) return keep_or_release(rc, r, out);
  return scatter_into_view(r, v, src, out);
}

/* ---- out-of-place forms of in-place indexing operators: a clone, then the in-place one ---- */

int opd__cea_index_fill_int_scalar(const opd_kernel_ctx *ctx, opd_tensor *self, int64_t dim,
                                   opd_tensor *index, opd_scalar value, opd_tensor **out) {
  (void)ctx;
  static const opd_operator *op;
  opd_tensor *r = NULL;
  int rc = call_clone(self, MEMORY_FORMAT_PRESERVE, &r);
  if (rc) return rc;
  opd_stack s;
  opd_stack_init(&s);
  rc = OPD__PUSH_Tensor(&s, r);
  if (rc == 0) rc = OPD__PUSH_Int(&s, dim);
  if (rc == 0) rc = OPD__PUSH_Tensor(&s, index);
  if (rc == 0) rc = OPD__PUSH_Scalar(&s, value);
  return keep_or_release(opd__call_inplace(rc, &op, "aten::index_fill_.int_Scalar", &s), r, out);
}

int opd__cea_index_fill_int_tensor(const opd_kernel_ctx *ctx, opd_tensor *self, int64_t dim,
                                   opd_tensor *index, opd_tensor *value, opd_tensor **out) {
  (void)ctx;
  static const opd_operator *op;
  opd_tensor *r = NULL;
  int rc = call_clone(self, MEMORY_FORMAT_PRESERVE, &r);
  if (rc) return rc;
  opd_stack s;
  opd_stack_init(&s);
  rc = OPD__PUSH_Tensor(&s, r);
  if (rc == 0) rc = OPD__PUSH_Int(&s, dim);
  if (rc == 0) rc = OPD__PUSH_Tensor(&s, index);
  if (rc == 0) rc = OPD__PUSH_Tensor(&s, value);
  return keep_or_release(opd__call_inplace(rc, &op, "aten::index_fill_.int_Tensor", &s), r, out);
}

/* self expanded to the broadcast shape of mask and self, cloned contiguous (ATen's
 * expand_outplace(mask, self) then clone), for masked_fill and masked_scatter. */
static int expanded_clone(opd_tensor *self, opd_tensor *mask, opd_tensor **out) {
  int64_t shape[OPD_MAX_DIMS];
  int nd;
  int rc = opd__broadcast_shapes(opd_tensor_sizes(mask), mask->ndim, opd_tensor_sizes(self),
                                 self->ndim, shape, &nd);
  if (rc) return rc;
  opd_tensor *src = NULL;
  if ((rc = call_expand(self, shape, nd, &src))) return rc;
  rc = call_clone(src, MEMORY_FORMAT_CONTIGUOUS, out);
  opd_tensor_release(src);
  return rc;
}

/* op_(r, a, b) for an in-place operator of two tensor arguments; r kept or released */
static int inplace_tt(const opd_operator **cache, const char *name, opd_tensor *r, opd_tensor *a,
                      opd_tensor *b, opd_tensor **out) {
  opd_stack s;
  opd_stack_init(&s);
  int rc = OPD__PUSH_Tensor(&s, r);
  if (rc == 0) rc = OPD__PUSH_Tensor(&s, a);
  if (rc == 0) rc = OPD__PUSH_Tensor(&s, b);
  return keep_or_release(opd__call_inplace(rc, cache, name, &s), r, out);
}

int opd__cea_masked_fill_tensor(const opd_kernel_ctx *ctx, opd_tensor *self, opd_tensor *mask,
                                opd_tensor *value, opd_tensor **out) {
  (void)ctx;
  static const opd_operator *op;
  opd_tensor *r = NULL;
  int rc = expanded_clone(self, mask, &r);
  return rc ? rc : inplace_tt(&op, "aten::masked_fill_.Tensor", r, mask, value, out);
}

int opd__cea_masked_scatter(const opd_kernel_ctx *ctx, opd_tensor *self, opd_tensor *mask,
                            opd_tensor *source, opd_tensor **out) {
  (void)ctx;
  static const opd_operator *op;
  opd_tensor *r = NULL;
  int rc = expanded_clone(self, mask, &r);
  return rc ? rc : inplace_tt(&op, "aten::masked_scatter_", r, mask, source, out);
}

int opd__cea_put(const opd_kernel_ctx *ctx, opd_tensor *self, opd_tensor *index, opd_tensor *source,
                 bool accumulate, opd_tensor **out) {
  (void)ctx;
  static const opd_operator *op;
  opd_tensor *r = NULL;
  int rc = call_clone(self, MEMORY_FORMAT_PRESERVE, &r);
  if (rc) return rc;
  opd_stack s;
  opd_stack_init(&s);
  rc = OPD__PUSH_Tensor(&s, r);
  if (rc == 0) rc = OPD__PUSH_Tensor(&s, index);
  if (rc == 0) rc = OPD__PUSH_Tensor(&s, source);
  if (rc == 0) rc = OPD__PUSH_Bool(&s, accumulate);
  return keep_or_release(opd__call_inplace(rc, &op, "aten::put_", &s), r, out);
}

int opd__cia_argwhere(const opd_kernel_ctx *ctx, opd_tensor *self, opd_tensor **out) {
  (void)ctx;
  static const opd_operator *op;
  opd_stack s;
  opd_stack_init(&s);
  return opd__call_tensor(OPD__PUSH_Tensor(&s, self), &op, "aten::nonzero", &s, out);
}

/* ---- a Scalar as a 0-d tensor ---- */

/* A 0-d tensor of `dtype` on like's device holding value. */
static int scalar_tensor(opd_tensor *like, opd_scalar value, opd_dtype dtype, opd_tensor **out) {
  static const opd_operator *fill_op;
  opd_tensor *t = NULL;
  int rc = opd__call_empty((opd_int_list){NULL, 0}, dtype, -1, opd_tensor_device(like),
                           (opd_opt_bool){false, false}, -1, &t);
  if (rc) return rc;
  opd_stack s;
  opd_stack_init(&s);
  rc = OPD__PUSH_Tensor(&s, t);
  if (rc == 0) rc = OPD__PUSH_Scalar(&s, opd__value_scalar(opd__scalar_cast(value, dtype), dtype));
  return keep_or_release(opd__call_inplace(rc, &fill_op, "aten::fill_.Scalar", &s), t, out);
}

/* ---- index_put ---- */

static int index_put_impl(opd_tensor *self, opd_tensor_list indices, opd_tensor *values,
                          bool accumulate) {
  static const opd_operator *op;
  opd_stack s;
  opd_stack_init(&s);
  int rc = OPD__PUSH_Tensor(&s, self);
  if (rc == 0) rc = OPD__PUSH_OptTensorList(&s, indices);
  if (rc == 0) rc = OPD__PUSH_Tensor(&s, values);
  if (rc == 0) rc = OPD__PUSH_Bool(&s, accumulate);
  if (rc == 0) rc = OPD__PUSH_Bool(&s, false);
  return opd__call_inplace(rc, &op, "aten::_index_put_impl_", &s);
}

int opd__cea_index_put_(const opd_kernel_ctx *ctx, opd_tensor *self, opd_tensor_list indices,
                        opd_tensor *values, bool accumulate, opd_tensor **out) {
  (void)ctx;
  int rc = index_put_impl(self, indices, values, accumulate);
  return rc ? rc : same_tensor(self, out);
}

int opd__cea_index_put(const opd_kernel_ctx *ctx, opd_tensor *self, opd_tensor_list indices,
                       opd_tensor *values, bool accumulate, opd_tensor **out) {
  (void)ctx;
  opd_tensor *r = NULL;
  int rc = call_clone(self, MEMORY_FORMAT_PRESERVE, &r);
  return rc ? rc : keep_or_release(index_put_impl(r, indices, values, accumulate), r, out);
}

/* ---- sorting composites: sort.stable through the dispatcher ---- */

/* sort.stable(self, stable, dim, descending): values in res[0], indices in res[1] */
static int call_sort_stable(opd_tensor *self, bool stable, int64_t dim, bool descending,
                            opd_tensor **res) {
  static const opd_operator *op;
  res[0] = res[1] = NULL;
  opd_stack s;
  opd_stack_init(&s);
  int rc = OPD__PUSH_Tensor(&s, self);
  if (rc == 0) rc = OPD__PUSH_OptBool(&s, ((opd_opt_bool){true, stable}));
  if (rc == 0) rc = OPD__PUSH_Int(&s, dim);
  if (rc == 0) rc = OPD__PUSH_Bool(&s, descending);
  if (rc == 0) rc = opd__call(&op, "aten::sort.stable", &s);
  if (rc == 0 &&
      (s.size != 2 || s.items[0].tag != OPD_IV_TENSOR || s.items[1].tag != OPD_IV_TENSOR))
    rc = opd_error(OPD_EINTERNAL, "sort.stable did not return two Tensors");
  if (rc == 0) {
    opd_iv_own(&s.items[0]);
    opd_iv_own(&s.items[1]);
    res[1] = opd_stack_pop(&s).u.t;
    res[0] = opd_stack_pop(&s).u.t;
  }
  opd_stack_destroy(&s);
  return rc;
}

/* sort(self, dim=-1, descending=False): sort.stable with stable=False */
int opd__cea_sort(const opd_kernel_ctx *ctx, opd_stack *stack) {
  (void)ctx;
  opd_ivalue *args = opd_stack_last(stack, 3);
  opd_tensor *res[2];
  int rc = call_sort_stable(args[0].u.t, false, args[1].u.i, args[2].u.b, res);
  opd_stack_drop(stack, 3);
  return opd__push_results(stack, res, 2, rc);
}

int opd__cia_argsort(const opd_kernel_ctx *ctx, opd_tensor *self, int64_t dim, bool descending,
                     opd_tensor **out) {
  (void)ctx;
  opd_tensor *res[2];
  int rc = call_sort_stable(self, false, dim, descending, res);
  if (rc) return rc;
  opd_tensor_release(res[0]);
  *out = res[1];
  return 0;
}

/* logcumsumexp(self, dim) = _logcumsumexp(self, dim) */
int opd__cea_logcumsumexp(const opd_kernel_ctx *ctx, opd_tensor *self, int64_t dim,
                          opd_tensor **out) {
  (void)ctx;
  static const opd_operator *op;
  opd_stack s;
  opd_stack_init(&s);
  int rc = opd_stack_push(&s, opd_iv_tensor_borrow(self));
  if (!rc) rc = opd_stack_push(&s, opd_iv_int(dim));
  return opd__call_tensor(rc, &op, "aten::_logcumsumexp", &s, out);
}

int opd__cia_msort(const opd_kernel_ctx *ctx, opd_tensor *self, opd_tensor **out) {
  (void)ctx;
  opd_tensor *res[2];
  int rc = call_sort_stable(self, false, 0, false, res);
  if (rc) return rc;
  opd_tensor_release(res[1]);
  *out = res[0];
  return 0;
}

/* kthvalue(self, k, dim=-1, keepdim=False): the k-th smallest of each line (NaN the largest),
 * from the line sorted ascending (ATen leaves which index a tie gives unspecified). */
int opd__cea_kthvalue(const opd_kernel_ctx *ctx, opd_stack *stack) {
  opd_ivalue *args = opd_stack_last(stack, 4);
  opd_tensor *self = args[0].u.t, *sorted[2] = {NULL, NULL}, *res[2] = {NULL, NULL};
  int64_t k = args[1].u.i, d = 0;
  bool keepdim = args[3].u.b;
  int rc = opd__wrap_dim(args[2].u.i, self->ndim, &d);
  int64_t size = rc == 0 && self->ndim ? opd_tensor_sizes(self)[d] : 1;
  if (rc == 0 && size == 0)
    rc = opd_error(OPD_EINDEX, "kthvalue(): Expected reduction dim %lld to have non-zero size.",
                   (long long)d);
  if (rc == 0 && (k < 1 || k > size))
    rc = opd_error(OPD_EINVAL, "kthvalue(): selected number k out of range for dimension %lld",
                   (long long)d);
  if (rc == 0) rc = call_sort_stable(self, true, d, false, sorted);
  for (int i = 0; rc == 0 && i < 2; i++) {
    if (self->ndim == 0) {
      res[i] = sorted[i];
      sorted[i] = NULL;
    } else if (keepdim) {
      rc = opd__cea_slice_tensor(ctx, sorted[i], d, (opd_opt_int){true, k - 1},
                                 (opd_opt_int){true, k}, 1, &res[i]);
    } else {
      rc = opd__cea_select_int(ctx, sorted[i], d, k - 1, &res[i]);
    }
  }
  for (int i = 0; i < 2; i++)
    if (sorted[i]) opd_tensor_release(sorted[i]);
  opd_stack_drop(stack, 4);
  return opd__push_results(stack, res, 2, rc);
}

/* ---- repeat_interleave ---- */

/* ATen's repeat_interleave.self_Tensor: self flattened when dim is None, the repeats (one
 * for every index, or one for all) turned into indices by repeat_interleave.Tensor, then
 * index_select. */
int opd__cia_repeat_interleave_self_tensor(const opd_kernel_ctx *ctx, opd_tensor *self,
                                           opd_tensor *repeats, opd_opt_int dim,
                                           opd_opt_int output_size, opd_tensor **out) {
  static const opd_operator *ri_op, *select_op;
  opd_tensor *input = NULL, *reps = NULL, *indices = NULL;
  int64_t d = 0;
  int rc;
  if (!dim.has_value)
    rc = opd__cia_flatten_using_ints(ctx, self, 0, -1, &input);
  else
    rc = same_tensor(self, &input);
  if (rc == 0 && dim.has_value) rc = opd__wrap_dim(dim.value, self->ndim, &d);
  int64_t size = rc == 0 && input->ndim ? opd_tensor_sizes(input)[d] : 1;
  if (rc == 0 &&
      (repeats->ndim == 0 || (repeats->ndim == 1 && opd_tensor_sizes(repeats)[0] == 1))) {
    opd_tensor *one = NULL;
    rc = call_reshape(repeats, (int64_t[]){1}, 1, &one);
    if (rc == 0) rc = call_expand(one, &size, 1, &reps);
    if (one) opd_tensor_release(one);
  } else if (rc == 0 && repeats->ndim == 1) {
    if (opd_tensor_sizes(repeats)[0] != size)
      rc = opd_error(OPD_EINVAL, "repeats must have the same size as input along dim");
    else
      rc = same_tensor(repeats, &reps);
  } else if (rc == 0) {
    rc = opd_error(OPD_EINVAL, "repeats must be 0-dim or 1-dim tensor");
  }
  if (rc == 0) {
    opd_stack s;
    opd_stack_init(&s);
    rc = OPD__PUSH_Tensor(&s, reps);
    if (rc == 0) rc = OPD__PUSH_OptInt(&s, output_size);
    rc = opd__call_tensor(rc, &ri_op, "aten::repeat_interleave.Tensor", &s, &indices);
  }
  if (rc == 0) {
    opd_stack s;
    opd_stack_init(&s);
    rc = OPD__PUSH_Tensor(&s, input);
    if (rc == 0) rc = OPD__PUSH_Int(&s, d);
    if (rc == 0) rc = OPD__PUSH_Tensor(&s, indices);
    rc = opd__call_tensor(rc, &select_op, "aten::index_select", &s, out);
  }
  if (input) opd_tensor_release(input);
  if (reps) opd_tensor_release(reps);
  if (indices) opd_tensor_release(indices);
  return rc;
}

int opd__cia_repeat_interleave_self_int(const opd_kernel_ctx *ctx, opd_tensor *self,
                                        int64_t repeats, opd_opt_int dim, opd_opt_int output_size,
                                        opd_tensor **out) {
  opd_tensor *r = NULL;
  int rc = scalar_tensor(self, opd__scalar_int(repeats), OPD_INT64, &r);
  if (rc) return rc;
  rc = opd__cia_repeat_interleave_self_tensor(ctx, self, r, dim, output_size, out);
  opd_tensor_release(r);
  return rc;
}

/* argsort.stable: PyTorch 1.13 registers it for the CPU only; here it is sort.stable's indices
 * on every backend (a CPU and a Meta registration of this one kernel). */
int opd__argsort_stable(const opd_kernel_ctx *ctx, opd_tensor *self, bool stable, int64_t dim,
                        bool descending, opd_tensor **out) {
  (void)ctx;
  opd_tensor *res[2];
  int rc = call_sort_stable(self, stable, dim, descending, res);
  if (rc) return rc;
  opd_tensor_release(res[0]);
  *out = res[1];
  return 0;
}

int opd__argsort_stable_meta(const opd_kernel_ctx *ctx, opd_tensor *self, bool stable, int64_t dim,
                             bool descending, opd_tensor **out) {
  return opd__argsort_stable(ctx, self, stable, dim, descending, out);
}

/* ---- index_reduce ---- */

/* index_reduce(self, dim, index, source, reduce, *, include_self=True), registered at the CPU
 * and Meta keys as PyTorch's: with its checks, scatter_reduce.two along dim with index (a
 * vector of source.size(dim) indices of self's dim) expanded to source's shape, which is what
 * PyTorch's kernel computes slice by slice (prod, mean, amax, amin; mean divides integers
 * rounding down). */
static int index_reduce(opd_tensor *self, int64_t dim, opd_tensor *index, opd_tensor *source,
                        const char *reduce, bool include_self, opd_tensor **out) {
  static const char fn[] = "index_reduce_()";
  if (strcmp(reduce, "prod") && strcmp(reduce, "mean") && strcmp(reduce, "amax") &&
      strcmp(reduce, "amin"))
    return opd_error(
        OPD_EINVAL,
        "index_reduce(): Expected reduce to be one of prod, mean, amax or amin but got "
        "%s.",
        reduce);
  int64_t d;
  int rc = opd__wrap_dim(dim, self->ndim, &d);
  if (rc) return rc;
  char buf[256];
  opd_dtype it = opd_tensor_dtype(index), st = opd_tensor_dtype(self);
  if (index->ndim > 1)
    return opd_error(OPD_EINDEX,
                     "%s: Index is supposed to be a vector, but got dim: %d with type: %s and "
                     "size: %s",
                     fn, index->ndim, opd_dtype_c10_name(it),
                     opd__format_sizes(opd_tensor_sizes(index), index->ndim, buf, sizeof buf));
  if (it != OPD_INT64 && it != OPD_INT32)
    return opd_error(OPD_EINVAL, "%s: Expected dtype int32/int64 for index but got: %s", fn,
                     opd_dtype_c10_name(it));
  if (st != opd_tensor_dtype(source))
    return opd_error(OPD_EINVAL, "%s: self (%s) and source (%s) must have the same scalar type", fn,
                     opd_dtype_c10_name(st), opd_dtype_c10_name(opd_tensor_dtype(source)));
  if (!(d == 0 || d < source->ndim))
    return opd_error(OPD_EINDEX,
                     "%s: Indexing dim %lld is out of bounds of the source tensor with dim %d", fn,
                     (long long)d, source->ndim);
  int64_t n = source->ndim ? opd_tensor_sizes(source)[d] : 1;
  if (index->numel != n)
    return opd_error(OPD_EINVAL,
                     "%s: Number of indices (%lld) should be equal to source.size(dim): (%lld), "
                     "for dim: %lld",
                     fn, (long long)index->numel, (long long)n, (long long)d);
  /* the slices along dim must have one shape (PyTorch broadcasts source's slice to self's) */
  if (source->ndim != self->ndim)
    return opd_error(OPD_EINVAL, "%s: source must have as many dimensions as self (%d), got %d", fn,
                     self->ndim, source->ndim);
  for (int k = self->ndim - 1, j = 0; k >= 0; k--) {
    if (k == d) continue;
    int64_t a = opd_tensor_sizes(self)[k], b = opd_tensor_sizes(source)[k];
    if (a != b)
      return opd_error(OPD_EINVAL,
                       "The size of tensor a (%lld) must match the size of tensor b (%lld) at "
                       "non-singleton dimension %d",
                       (long long)a, (long long)b, self->ndim - 2 - j);
    j++;
  }
  /* every index within self's dim (read where it lies: a Meta index has no values) */
  int64_t size = self->ndim ? opd_tensor_sizes(self)[d] : 1;
  if (opd_tensor_device(index).type == OPD_DEVICE_CPU) {
    const char *data = opd_tensor_data(index);
    int64_t step = index->ndim ? opd_tensor_strides(index)[0] : 0;
    for (int64_t i = 0; i < index->numel; i++) {
      int64_t v =
          it == OPD_INT64 ? ((const int64_t *)data)[i * step] : ((const int32_t *)data)[i * step];
      if (v < 0 || v >= size) return opd_error(OPD_EINDEX, "index out of range in self");
    }
  }
  /* index as int64, shaped [1, .., n, .., 1] and expanded to source's shape */
  opd_tensor *idx = NULL, *shaped = NULL, *expanded = NULL;
  if (it == OPD_INT64) {
    opd_tensor_retain(idx = index);
  } else {
    static const opd_operator *to_op;
    opd_stack st2;
    opd_stack_init(&st2);
    opd_ivalue args[] = {opd_iv_tensor_borrow(index),
                         opd_iv_dtype(OPD_INT64),
                         opd_iv_none(),
                         opd_iv_none(),
                         opd_iv_none(),
                         opd_iv_bool(false),
                         opd_iv_none()};
    for (int i = 0; i < 7 && rc == 0; i++) rc = opd_stack_push(&st2, args[i]);
    rc = opd__call_tensor(rc, &to_op, "aten::_to_copy", &st2, &idx);
    if (rc) return rc;
  }
  int64_t shape[OPD_MAX_DIMS];
  for (int k = 0; k < source->ndim; k++) shape[k] = k == d ? n : 1;
  rc = call_reshape(idx, shape, source->ndim, &shaped);
  if (rc == 0) rc = call_expand(shaped, opd_tensor_sizes(source), source->ndim, &expanded);
  if (rc == 0) {
    static const opd_operator *op;
    opd_stack sr;
    opd_stack_init(&sr);
    rc = OPD__PUSH_Tensor(&sr, self);
    if (rc == 0) rc = OPD__PUSH_Int(&sr, d);
    if (rc == 0) rc = OPD__PUSH_Tensor(&sr, expanded);
    if (rc == 0) rc = OPD__PUSH_Tensor(&sr, source);
    if (rc == 0) rc = OPD__PUSH_Str(&sr, reduce);
    if (rc == 0) rc = OPD__PUSH_Bool(&sr, include_self);
    rc = opd__call_tensor(rc, &op, "aten::scatter_reduce.two", &sr, out);
  }
  opd_tensor_release(idx);
  if (shaped) opd_tensor_release(shaped);
  if (expanded) opd_tensor_release(expanded);
  return rc;
}

int opd__cpu_index_reduce(const opd_kernel_ctx *ctx, opd_tensor *self, int64_t dim,
                          opd_tensor *index, opd_tensor *source, const char *reduce,
                          bool include_self, opd_tensor **out) {
  (void)ctx;
  return index_reduce(self, dim, index, source, reduce, include_self, out);
}

int opd__meta_index_reduce(const opd_kernel_ctx *ctx, opd_tensor *self, int64_t dim,
                           opd_tensor *index, opd_tensor *source, const char *reduce,
                           bool include_self, opd_tensor **out) {
  (void)ctx;
  return index_reduce(self, dim, index, source, reduce, include_self, out);
}

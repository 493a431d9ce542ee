/* index_scatter_meta.c: gather, scatter (src, value, reduce), scatter_add, scatter_reduce.two,
 * index_add, index_copy and index_fill_: their argument checks with PyTorch 1.13's errors and
 * output shapes (the meta functions, shared with kernels/cpu/index_scatter.c), and their Meta
 * kernels. The out-of-place operators' outputs are contiguous tensors of self's shape and
 * dtype (gather: of index's shape), as ATen's structured kernels make them. */
#include "index_scatter_meta.h"

#include <string.h>

/* ATen's ensure_nonempty_dim / ensure_nonempty_size: a 0-d tensor counts as one element. */
static int nonempty_dim(const opd_tensor *t) {
  return t->ndim > 0 ? t->ndim : 1;
}
static int64_t nonempty_size(const opd_tensor *t, int d) {
  return t->ndim > 0 ? opd_tensor_sizes(t)[d] : 1;
}

static int devices(opd_tensor *a, opd_tensor *b, opd_tensor *c) {
  opd_tensor *t[3] = {a, b, c};
  opd_device device;
  return opd__common_device(t, 3, &device);
}

int opd__gather_meta(opd_tensor *self, int64_t dim, opd_tensor *index, int64_t *wrapped,
                     opd_out_spec *spec) {
  int rc = devices(self, index, NULL);
  if (rc == 0) rc = opd__wrap_dim(dim, self->ndim, wrapped);
  if (rc) return rc;
  if (opd_tensor_dtype(index) != OPD_INT64)
    return opd_error(OPD_EINVAL, "gather(): Expected dtype int64 for index");
  spec->ndim = index->ndim;
  spec->dtype = opd_tensor_dtype(self);
  memcpy(spec->sizes, opd_tensor_sizes(index), (size_t)index->ndim * sizeof(int64_t));
  if (index->numel == 0) return 0;
  if (nonempty_dim(self) != nonempty_dim(index))
    return opd_error(OPD_EINVAL,
                     "Index tensor must have the same number of dimensions as input tensor");
  for (int d = 0; d < nonempty_dim(self); d++) {
    if (d == *wrapped || nonempty_size(index, d) <= nonempty_size(self, d)) continue;
    char a[256], b[256];
    return opd_error(OPD_EINVAL,
                     "Size does not match at dimension %d expected index %s to be smaller than "
                     "self %s apart from dimension %lld",
                     d, opd__format_sizes(opd_tensor_sizes(index), index->ndim, a, sizeof a),
                     opd__format_sizes(opd_tensor_sizes(self), self->ndim, b, sizeof b),
                     (long long)*wrapped);
  }
  return 0;
}

int opd__scatter_meta(opd_tensor *self, int64_t dim, opd_tensor *index, opd_tensor *src,
                      int64_t *wrapped) {
  int rc = devices(self, index, src);
  if (rc == 0) rc = opd__wrap_dim(dim, self->ndim, wrapped);
  if (rc) return rc;
  if (opd_tensor_dtype(index) != OPD_INT64)
    return opd_error(OPD_EINVAL, "scatter(): Expected dtype int64 for index");
  if (src && opd_tensor_dtype(src) != opd_tensor_dtype(self))
    return opd_error(OPD_EINVAL, "scatter(): Expected self.dtype to be equal to src.dtype");
  if (index->numel == 0) return 0;
  if (nonempty_dim(self) != nonempty_dim(index))
    return opd_error(OPD_EINVAL,
                     "Index tensor must have the same number of dimensions as self tensor");
  if (src && nonempty_dim(src) != nonempty_dim(index))
    return opd_error(OPD_EINVAL,
                     "Index tensor must have the same number of dimensions as src tensor");
  bool wrong = false;
  for (int d = 0; d < nonempty_dim(self); d++) {
    if (d != *wrapped && nonempty_size(index, d) > nonempty_size(self, d)) wrong = true;
    if (src && nonempty_size(index, d) > nonempty_size(src, d)) wrong = true;
  }
  if (!wrong) return 0;
  char a[256], b[256], c[256];
  const char *is = opd__format_sizes(opd_tensor_sizes(index), index->ndim, a, sizeof a);
  const char *ss = opd__format_sizes(opd_tensor_sizes(self), self->ndim, b, sizeof b);
  if (!src)
    return opd_error(OPD_EINVAL,
                     "Expected index %s to be smaller than self %s apart from dimension %lld", is,
                     ss, (long long)*wrapped);
  return opd_error(OPD_EINVAL,
                   "Expected index %s to be smaller than self %s apart from dimension %lld and to "
                   "be smaller size than src %s",
                   is, ss, (long long)*wrapped,
                   opd__format_sizes(opd_tensor_sizes(src), src->ndim, c, sizeof c));
}

int opd__scatter_reduce_arg(const char *reduce, bool two, opd__reduce_op *op, bool *mean) {
  *mean = false;
  if (!two) {
    if (strcmp(reduce, "add") == 0) return *op = OPD__REDUCE_SUM, 0;
    if (strcmp(reduce, "multiply") == 0) return *op = OPD__REDUCE_PROD, 0;
    return opd_error(OPD_EINVAL, "reduce argument must be either add or multiply.");
  }
  if (strcmp(reduce, "sum") == 0) return *op = OPD__REDUCE_SUM, 0;
  if (strcmp(reduce, "prod") == 0) return *op = OPD__REDUCE_PROD, 0;
  if (strcmp(reduce, "mean") == 0) return *op = OPD__REDUCE_SUM, *mean = true, 0;
  if (strcmp(reduce, "amax") == 0) return *op = OPD__REDUCE_MAX, 0;
  if (strcmp(reduce, "amin") == 0) return *op = OPD__REDUCE_MIN, 0;
  return opd_error(OPD_EINVAL, "reduce argument must be either sum, prod, mean, amax or amin.");
}

/* self's and source's sizes without dimension dim (a 0-d tensor: none) */
static int sliced(const opd_tensor *t, int64_t dim, int64_t *out) {
  int n = 0;
  for (int d = 0; d < t->ndim; d++)
    if (d != dim) out[n++] = opd_tensor_sizes(t)[d];
  return n;
}

int opd__index_add_meta(opd_tensor *self, int64_t dim, opd_tensor *index, opd_tensor *source,
                        int64_t *wrapped) {
  int rc = devices(self, index, source);
  if (rc == 0) rc = opd__wrap_dim(dim, self->ndim, wrapped);
  if (rc) return rc;
  char buf[256];
  opd_dtype it = opd_tensor_dtype(index);
  if (index->ndim > 1)
    return opd_error(OPD_EINDEX,
                     "index_add_(): Index is supposed to be a vector, but got dim: %d with type: "
                     "%s and size: %s",
                     index->ndim, opd_dtype_c10_name(it),
                     opd__format_sizes(opd_tensor_sizes(index), index->ndim, buf, sizeof buf));
  if (it != OPD_INT64 && it != OPD_INT32)
    return opd_error(OPD_EINVAL, "index_add_(): Expected dtype int32/int64 for index but got: %s",
                     opd_dtype_c10_name(it));
  if (opd_tensor_dtype(self) != opd_tensor_dtype(source))
    return opd_error(
        OPD_EINVAL, "index_add_(): self (%s) and source (%s) must have the same scalar type",
        opd_dtype_c10_name(opd_tensor_dtype(self)), opd_dtype_c10_name(opd_tensor_dtype(source)));
  if (*wrapped != 0 && *wrapped >= source->ndim)
    return opd_error(OPD_EINDEX,
                     "index_add_(): Indexing dim %lld is out of bounds of the source tensor with "
                     "dim %d",
                     (long long)*wrapped, source->ndim);
  int64_t n = source->ndim == 0 ? 1 : opd_tensor_sizes(source)[*wrapped];
  if (index->numel != n)
    return opd_error(OPD_EINVAL,
                     "index_add_(): Number of indices (%lld) should be equal to source.size(dim): "
                     "(%lld), for dim: %lld",
                     (long long)index->numel, (long long)n, (long long)*wrapped);
  int64_t a[OPD_MAX_DIMS], b[OPD_MAX_DIMS];
  int na = self->ndim && source->ndim ? sliced(self, *wrapped, a) : self->ndim;
  int nb = self->ndim && source->ndim ? sliced(source, *wrapped, b) : source->ndim;
  if (!(self->ndim && source->ndim)) {
    memcpy(a, opd_tensor_sizes(self), (size_t)na * sizeof *a);
    memcpy(b, opd_tensor_sizes(source), (size_t)nb * sizeof *b);
  }
  bool same = na == nb && memcmp(a, b, (size_t)na * sizeof *a) == 0;
  if (same) return 0;
  for (int i = 0; i < na && i < nb; i++)
    if (a[na - 1 - i] != b[nb - 1 - i])
      return opd_error(OPD_EINVAL,
                       "The size of tensor a (%lld) must match the size of tensor b (%lld) at "
                       "non-singleton dimension %d",
                       (long long)a[na - 1 - i], (long long)b[nb - 1 - i],
                       (na > nb ? na : nb) - 1 - i);
  char c[256];
  return opd_error(OPD_EINVAL,
                   "source tensor shape must match self tensor shape, excluding the specified "
                   "dimension. Got self.shape = %s source.shape = %s",
                   opd__format_sizes(opd_tensor_sizes(self), self->ndim, buf, sizeof buf),
                   opd__format_sizes(opd_tensor_sizes(source), source->ndim, c, sizeof c));
}

int opd__index_copy_meta(opd_tensor *self, int64_t dim, opd_tensor *index, opd_tensor *source,
                         int64_t *wrapped) {
  int rc = devices(self, index, source);
  if (rc == 0) rc = opd__wrap_dim(dim, self->ndim, wrapped);
  if (rc) return rc;
  if (index->ndim >= 2)
    return opd_error(OPD_EINDEX, "index_copy_(): Index should have dimension 1 or 0 (got %d)",
                     index->ndim);
  if (source->ndim == 0 && index->numel != 1)
    return opd_error(OPD_EINDEX,
                     "index_copy_(): When source is scalar, index should have one element (got "
                     "%lld)",
                     (long long)index->numel);
  if (source->ndim != self->ndim && source->ndim != 0 && self->ndim != 0)
    return opd_error(OPD_EINDEX,
                     "index_copy_(): When source and destination are not scalars, their "
                     "dimensionality must match. Source dimensionality (%d), destination "
                     "dimensionality (%d)",
                     source->ndim, self->ndim);
  if (opd_tensor_dtype(index) != OPD_INT64)
    return opd_error(OPD_EINVAL, "index_copy_(): Expected a long tensor for index, but got %s",
                     opd_dtype_c10_name(opd_tensor_dtype(index)));
  if (opd_tensor_dtype(self) != opd_tensor_dtype(source))
    return opd_error(OPD_EINVAL,
                     "index_copy_(): self and source expected to have the same dtype, but got "
                     "(self) %s and (source) %s",
                     opd_dtype_c10_name(opd_tensor_dtype(self)),
                     opd_dtype_c10_name(opd_tensor_dtype(source)));
  int64_t a[OPD_MAX_DIMS], b[OPD_MAX_DIMS];
  int na = sliced(self, self->ndim ? *wrapped : -1, a);
  int nb = sliced(source, source->ndim ? *wrapped : -1, b);
  if (na != nb || memcmp(a, b, (size_t)na * sizeof *a)) {
    char x[256], y[256];
    /* ATen prints a one-element shape as its number */
    return opd_error(OPD_EINVAL,
                     "index_copy_(): Source/destination tensor must have same slice shapes. "
                     "Destination slice shape: %s at dimension %lld and source slice shape: %s at "
                     "dimension 0.",
                     opd__format_sizes(a, na, x, sizeof x), (long long)*wrapped,
                     opd__format_sizes(b, nb, y, sizeof y));
  }
  if (source->ndim != 0 && index->numel != opd_tensor_sizes(source)[*wrapped])
    return opd_error(OPD_EINDEX,
                     "index_copy_(): Number of indices (%lld) should be equal to source.size(dim) "
                     "(%lld)",
                     (long long)index->numel, (long long)opd_tensor_sizes(source)[*wrapped]);
  return 0;
}

int opd__index_fill_meta(opd_tensor *self, int64_t dim, opd_tensor *index, opd_tensor *value,
                         int64_t *wrapped) {
  int rc = devices(self, index, NULL);
  if (rc) return rc;
  if (value && value->ndim != 0)
    return opd_error(OPD_EINVAL,
                     "index_fill_ only supports a 0-dimensional value tensor, but got tensor with "
                     "%d dimension(s).",
                     value->ndim);
  if (opd_tensor_dtype(index) != OPD_INT64)
    return opd_error(OPD_EINDEX, "index_fill_(): Expected dtype int64 for index.");
  if ((rc = opd__wrap_dim(dim, self->ndim, wrapped))) return rc;
  if (index->ndim > 1) return opd_error(OPD_EINVAL, "Index has to be a vector/scalar");
  return 0;
}

/* ---- the devices' wrappers: [Note: A scatter's wrapper and its device's walk] ---- */

int opd__scatter_copy_of(opd_tensor *self, opd_tensor **out) {
  opd_out_spec spec = {.ndim = self->ndim, .dtype = opd_tensor_dtype(self)};
  memcpy(spec.sizes, opd_tensor_sizes(self), (size_t)self->ndim * sizeof(int64_t));
  int rc = opd__alloc_output(&spec, opd_tensor_device(self), out);
  if (rc) return rc;
  if ((rc = opd__call_copy_(*out, self, false))) {
    opd_tensor_release(*out);
    *out = NULL;
  }
  return rc;
}

int opd__scatter_finish(int rc, opd_tensor *r, opd_tensor **out) {
  if (rc) {
    opd_tensor_release(r);
    return rc;
  }
  *out = r;
  return 0;
}

int opd__scatter_finish_inplace(int rc, opd_tensor *self, opd_tensor **out) {
  if (rc) return rc;
  opd_tensor_bump_version(self);
  opd_tensor_retain(self);
  *out = self;
  return 0;
}

int opd__gather_run(opd__scatter_walk walk, opd_tensor *self, int64_t dim, opd_tensor *index,
                    opd_tensor **out) {
  int64_t d;
  opd_out_spec spec;
  opd_tensor *r = NULL;
  int rc = opd__gather_meta(self, dim, index, &d, &spec);
  if (rc == 0) rc = opd__alloc_output(&spec, opd_tensor_device(self), &r);
  if (rc) return rc;
  return opd__scatter_finish(walk(true, self, d, index, r, NULL, OPD__REDUCE_NONE), r, out);
}

int opd__scatter_run(opd__scatter_walk walk, opd_tensor *self, int64_t dim, opd_tensor *index,
                     opd_tensor *src, const opd_scalar *value, opd__reduce_op op,
                     opd_tensor **out) {
  int64_t d;
  char v[8];
  int rc = opd__scatter_meta(self, dim, index, src, &d);
  if (rc == 0 && value) rc = opd__elem_from_scalar(*value, opd_tensor_dtype(self), v);
  opd_tensor *r = NULL;
  if (rc == 0) rc = opd__scatter_copy_of(self, &r);
  if (rc) return rc;
  return opd__scatter_finish(walk(false, r, d, index, src, value ? v : NULL, op), r, out);
}

int opd__scatter_reduce_run(opd__scatter_walk walk, opd_tensor *self, int64_t dim,
                            opd_tensor *index, opd_tensor *src, const opd_scalar *value,
                            const char *reduce, opd_tensor **out) {
  opd__reduce_op op = OPD__REDUCE_NONE;
  bool mean;
  int rc = opd__scatter_reduce_arg(reduce, false, &op, &mean);
  return rc ? rc : opd__scatter_run(walk, self, dim, index, src, value, op, out);
}

int opd__scatter_inplace_run(opd__scatter_walk walk, opd_tensor *self, int64_t dim,
                             opd_tensor *index, opd_tensor *src, opd__reduce_op op,
                             opd_tensor **out) {
  int64_t d;
  int rc = opd__scatter_meta(self, dim, index, src, &d);
  if (rc == 0) rc = opd__assert_no_internal_overlap(self);
  if (rc == 0) rc = walk(false, self, d, index, src, NULL, op);
  return opd__scatter_finish_inplace(rc, self, out);
}

/* ---- Meta kernels ---- */

static const opd_device meta_device = {OPD_DEVICE_META, -1};

static int like_self(int rc, opd_tensor *self, opd_tensor **out) {
  if (rc) return rc;
  opd_out_spec spec = {.ndim = self->ndim, .dtype = opd_tensor_dtype(self)};
  memcpy(spec.sizes, opd_tensor_sizes(self), (size_t)self->ndim * sizeof(int64_t));
  return opd__alloc_output(&spec, meta_device, out);
}

int opd__meta_gather(const opd_kernel_ctx *ctx, opd_tensor *self, int64_t dim, opd_tensor *index,
                     bool sparse_grad, opd_tensor **out) {
  (void)ctx;
  (void)sparse_grad;
  int64_t d;
  opd_out_spec spec;
  int rc = opd__gather_meta(self, dim, index, &d, &spec);
  return rc ? rc : opd__alloc_output(&spec, meta_device, out);
}

int opd__meta_scatter_src(const opd_kernel_ctx *ctx, opd_tensor *self, int64_t dim,
                          opd_tensor *index, opd_tensor *src, opd_tensor **out) {
  (void)ctx;
  int64_t d;
  return like_self(opd__scatter_meta(self, dim, index, src, &d), self, out);
}

int opd__meta_scatter_value(const opd_kernel_ctx *ctx, opd_tensor *self, int64_t dim,
                            opd_tensor *index, opd_scalar value, opd_tensor **out) {
  (void)ctx;
  (void)value;
  int64_t d;
  return like_self(opd__scatter_meta(self, dim, index, NULL, &d), self, out);
}

int opd__meta_scatter_reduce(const opd_kernel_ctx *ctx, opd_tensor *self, int64_t dim,
                             opd_tensor *index, opd_tensor *src, const char *reduce,
                             opd_tensor **out) {
  (void)ctx;
  int64_t d;
  opd__reduce_op op;
  bool mean;
  int rc = opd__scatter_meta(self, dim, index, src, &d);
  if (rc == 0) rc = opd__scatter_reduce_arg(reduce, false, &op, &mean);
  return like_self(rc, self, out);
}

int opd__meta_scatter_value_reduce(const opd_kernel_ctx *ctx, opd_tensor *self, int64_t dim,
                                   opd_tensor *index, opd_scalar value, const char *reduce,
                                   opd_tensor **out) {
  (void)ctx;
  (void)value;
  int64_t d;
  opd__reduce_op op;
  bool mean;
  int rc = opd__scatter_meta(self, dim, index, NULL, &d);
  if (rc == 0) rc = opd__scatter_reduce_arg(reduce, false, &op, &mean);
  return like_self(rc, self, out);
}

int opd__meta_scatter_add(const opd_kernel_ctx *ctx, opd_tensor *self, int64_t dim,
                          opd_tensor *index, opd_tensor *src, opd_tensor **out) {
  (void)ctx;
  int64_t d;
  return like_self(opd__scatter_meta(self, dim, index, src, &d), self, out);
}

int opd__meta_scatter_add_(const opd_kernel_ctx *ctx, opd_tensor *self, int64_t dim,
                           opd_tensor *index, opd_tensor *src, opd_tensor **out) {
  (void)ctx;
  int64_t d;
  return opd__scatter_finish_inplace(opd__scatter_meta(self, dim, index, src, &d), self, out);
}

int opd__meta_scatter__src(const opd_kernel_ctx *ctx, opd_tensor *self, int64_t dim,
                           opd_tensor *index, opd_tensor *src, opd_tensor **out) {
  (void)ctx;
  int64_t d;
  return opd__scatter_finish_inplace(opd__scatter_meta(self, dim, index, src, &d), self, out);
}

int opd__meta_scatter_reduce_two(const opd_kernel_ctx *ctx, opd_tensor *self, int64_t dim,
                                 opd_tensor *index, opd_tensor *src, const char *reduce,
                                 bool include_self, opd_tensor **out) {
  (void)ctx;
  (void)include_self;
  int64_t d;
  opd__reduce_op op;
  bool mean;
  int rc = opd__scatter_meta(self, dim, index, src, &d);
  if (rc == 0) rc = opd__scatter_reduce_arg(reduce, true, &op, &mean);
  return like_self(rc, self, out);
}

int opd__meta_index_add(const opd_kernel_ctx *ctx, opd_tensor *self, int64_t dim, opd_tensor *index,
                        opd_tensor *source, opd_scalar alpha, opd_tensor **out) {
  (void)ctx;
  (void)alpha;
  int64_t d;
  return like_self(opd__index_add_meta(self, dim, index, source, &d), self, out);
}

int opd__meta_index_copy(const opd_kernel_ctx *ctx, opd_tensor *self, int64_t dim,
                         opd_tensor *index, opd_tensor *source, opd_tensor **out) {
  (void)ctx;
  int64_t d;
  return like_self(opd__index_copy_meta(self, dim, index, source, &d), self, out);
}

int opd__meta_index_fill__int_scalar(const opd_kernel_ctx *ctx, opd_tensor *self, int64_t dim,
                                     opd_tensor *index, opd_scalar value, opd_tensor **out) {
  (void)ctx;
  (void)value;
  int64_t d;
  return opd__scatter_finish_inplace(opd__index_fill_meta(self, dim, index, NULL, &d), self, out);
}

int opd__meta_index_fill__int_tensor(const opd_kernel_ctx *ctx, opd_tensor *self, int64_t dim,
                                     opd_tensor *index, opd_tensor *value, opd_tensor **out) {
  (void)ctx;
  int64_t d;
  return opd__scatter_finish_inplace(opd__index_fill_meta(self, dim, index, value, &d), self, out);
}

int opd__meta_index_add_(const opd_kernel_ctx *ctx, opd_tensor *self, int64_t dim,
                         opd_tensor *index, opd_tensor *source, opd_scalar alpha,
                         opd_tensor **out) {
  (void)ctx;
  (void)alpha;
  int64_t d;
  return opd__scatter_finish_inplace(opd__index_add_meta(self, dim, index, source, &d), self, out);
}

int opd__meta_index_copy_(const opd_kernel_ctx *ctx, opd_tensor *self, int64_t dim,
                          opd_tensor *index, opd_tensor *source, opd_tensor **out) {
  (void)ctx;
  int64_t d;
  return opd__scatter_finish_inplace(opd__index_copy_meta(self, dim, index, source, &d), self, out);
}

/* cuda_index.c: the CUDA kernels of gather, the scatter operators (scatter.src, .value,
 * .reduce, .value_reduce, scatter_.src, scatter_add, scatter_add_), masked_fill_.Tensor, flip,
 * roll, tril, triu, cumsum and cumprod: the meta functions of the CPU kernels
 * (kernels/meta/index_*_meta.c) and index.cu's kernels ([Note: CUDA scatter]).
 */
#include <string.h>

#include "cuda_ew.h"
#include "cuda_internal.h"
#include "cuda_kernels.h"
#include "meta/index_cum_meta.h"
#include "meta/index_mask_meta.h"
#include "meta/index_scatter_meta.h"
#include "meta/index_shape_meta.h"

/* CUDA's walk of a gather (other: the output, read from self) or a scatter (into self, of other
 * or of value) along the wrapped dim ([Note: A scatter's wrapper and its device's walk] in
 * kernels/meta/index_scatter_meta.h). */
static int run_scatter(bool gather, opd_tensor *self, int64_t dim, opd_tensor *index,
                       opd_tensor *other, const char *value, opd__reduce_op op) {
  if (index->numel == 0) return 0;
  opd__cuda_scatter d = {.gather = gather,
                         .op = op,
                         .dtype = opd_tensor_dtype(self),
                         .index = opd_tensor_data(index),
                         .self = opd_tensor_data(self),
                         .other = other ? opd_tensor_data(other) : NULL};
  if (value) memcpy(d.value, value, opd_dtype_size(opd_tensor_dtype(self)));
  d.ndim = index->ndim > 0 ? index->ndim : 1;
  opd_tensor *ops[3] = {index, other, self};
  for (int i = 0; i < d.ndim; i++) {
    d.sizes[i] = index->ndim ? opd_tensor_sizes(index)[i] : 1;
    for (int k = 0; k < 3; k++)
      d.strides[k][i] = ops[k] && ops[k]->ndim ? opd_tensor_strides(ops[k])[i] : 0;
  }
  d.len = d.sizes[dim];
  d.limit = self->ndim ? opd_tensor_sizes(self)[dim] : 1;
  d.sizes[dim] = 1;
  d.outer = index->numel / d.len;
  d.istride = index->ndim ? opd_tensor_strides(index)[dim] : 0;
  d.sstride = other && other->ndim ? opd_tensor_strides(other)[dim] : 0;
  d.tstride = self->ndim ? opd_tensor_strides(self)[dim] : 0;
  int device = opd__cuda_dev_of(self), bad = 0;
  int64_t bad_value = 0;
  /* one device allocation for the flag and the index it reports */
  int64_t *report = opd__cuda_alloc(device, 2 * sizeof(int64_t));
  if (!report) return opd_last_error_code();
  int rc = opd__cuda_memset0(device, report, 2 * sizeof(int64_t));
  d.bad = (int *)report;
  d.bad_value = report + 1;
  if (!rc) rc = opd__cuda_launch_scatter(device, &d);
  if (!rc) rc = opd__cuda_memcpy(device, &bad, report, sizeof bad, 2, true);
  if (!rc && bad) rc = opd__cuda_memcpy(device, &bad_value, report + 1, sizeof bad_value, 2, true);
  opd__cuda_free(device, report, 2 * sizeof(int64_t));
  if (!rc && bad)
    rc = opd_error(OPD_EINVAL, "index %lld is out of bounds for dimension %lld with size %lld",
                   (long long)bad_value, (long long)dim, (long long)d.limit);
  return rc;
}

int opd__cuda_gather_along(const opd_kernel_ctx *ctx, opd_tensor *self, int64_t dim,
                           opd_tensor *index, bool sparse_grad, opd_tensor **out) {
  (void)ctx;
  (void)sparse_grad;
  return opd__gather_run(run_scatter, self, dim, index, out);
}

int opd__cuda_scatter_src(const opd_kernel_ctx *ctx, opd_tensor *self, int64_t dim,
                          opd_tensor *index, opd_tensor *src, opd_tensor **out) {
  (void)ctx;
  return opd__scatter_run(run_scatter, self, dim, index, src, NULL, OPD__REDUCE_NONE, out);
}

int opd__cuda_scatter_value(const opd_kernel_ctx *ctx, opd_tensor *self, int64_t dim,
                            opd_tensor *index, opd_scalar value, opd_tensor **out) {
  (void)ctx;
  return opd__scatter_run(run_scatter, self, dim, index, NULL, &value, OPD__REDUCE_NONE, out);
}

int opd__cuda_scatter_reduce(const opd_kernel_ctx *ctx, opd_tensor *self, int64_t dim,
                             opd_tensor *index, opd_tensor *src, const char *reduce,
                             opd_tensor **out) {
  (void)ctx;
  return opd__scatter_reduce_run(run_scatter, self, dim, index, src, NULL, reduce, out);
}

int opd__cuda_scatter_value_reduce(const opd_kernel_ctx *ctx, opd_tensor *self, int64_t dim,
                                   opd_tensor *index, opd_scalar value, const char *reduce,
                                   opd_tensor **out) {
  (void)ctx;
  return opd__scatter_reduce_run(run_scatter, self, dim, index, NULL, &value, reduce, out);
}

int opd__cuda_scatter_add(const opd_kernel_ctx *ctx, opd_tensor *self, int64_t dim,
                          opd_tensor *index, opd_tensor *src, opd_tensor **out) {
  (void)ctx;
  return opd__scatter_run(run_scatter, self, dim, index, src, NULL, OPD__REDUCE_SUM, out);
}

int opd__cuda_scatter__src(const opd_kernel_ctx *ctx, opd_tensor *self, int64_t dim,
                           opd_tensor *index, opd_tensor *src, opd_tensor **out) {
  (void)ctx;
  return opd__scatter_inplace_run(run_scatter, self, dim, index, src, OPD__REDUCE_NONE, out);
}

int opd__cuda_scatter_add_(const opd_kernel_ctx *ctx, opd_tensor *self, int64_t dim,
                           opd_tensor *index, opd_tensor *src, opd_tensor **out) {
  (void)ctx;
  return opd__scatter_inplace_run(run_scatter, self, dim, index, src, OPD__REDUCE_SUM, out);
}

/* masked_fill_.Tensor: masked_fill_.Scalar with the value's one element */
int opd__cuda_masked_fill__tensor(const opd_kernel_ctx *ctx, opd_tensor *self, opd_tensor *mask,
                                  opd_tensor *value, opd_tensor **out) {
  opd_scalar v;
  int rc = opd__masked_fill_tensor_meta(self, mask, value);
  if (!rc) rc = opd__cuda_item(value, &v);
  return rc ? rc : opd__cuda_masked_fill__scalar(ctx, self, mask, v, out);
}

/* ---- flip, roll, tril, triu ---- */

/* A new contiguous tensor like self, filled by the shape kernel of kind d->kind (strides: self's
 * as the kernel reads them). */
static int run_shape(opd__cuda_shape *d, opd_tensor *self, const int64_t *strides,
                     opd_tensor **out) {
  opd_out_spec spec = {.ndim = self->ndim, .dtype = opd_tensor_dtype(self)};
  memcpy(spec.sizes, opd_tensor_sizes(self), (size_t)self->ndim * sizeof(int64_t));
  int rc = opd__alloc_output(&spec, opd_tensor_device(self), out);
  if (rc || (*out)->numel == 0) return rc;
  d->ndim = self->ndim;
  d->elsize = (int)opd_dtype_size(opd_tensor_dtype(self));
  d->numel = self->numel;
  d->src = opd_tensor_data(self);
  d->dst = opd_tensor_data(*out);
  for (int k = 0; k < self->ndim; k++) {
    d->sizes[k] = opd_tensor_sizes(self)[k];
    d->strides[k] = strides[k];
  }
  if ((rc = opd__cuda_launch_shape(opd__cuda_dev_of(self), d))) opd_tensor_release(*out);
  return rc;
}

int opd__cuda_flip(const opd_kernel_ctx *ctx, opd_tensor *self, opd_int_list dims,
                   opd_tensor **out) {
  (void)ctx;
  bool flipped[OPD_MAX_DIMS];
  int rc = opd__flip_meta(self, dims, flipped);
  if (rc) return rc;
  /* self read backwards along flipped dims: from their last element, with negated strides */
  opd__cuda_shape d = {.kind = 0};
  int64_t strides[OPD_MAX_DIMS];
  for (int k = 0; k < self->ndim; k++) {
    int64_t size = opd_tensor_sizes(self)[k], st = opd_tensor_strides(self)[k];
    strides[k] = flipped[k] ? -st : st;
    if (flipped[k] && size > 0) d.base += (size - 1) * st; /* inside self's storage */
  }
  return run_shape(&d, self, strides, out);
}

int opd__cuda_roll(const opd_kernel_ctx *ctx, opd_tensor *self, opd_int_list shifts,
                   opd_int_list dims, opd_tensor **out) {
  (void)ctx;
  opd__cuda_shape d = {.kind = 1};
  bool flat;
  int rc = opd__roll_meta(self, shifts, dims, d.shift, &flat);
  if (rc) return rc;
  if (flat) d.kind = 2;
  return run_shape(&d, self, opd_tensor_strides(self), out);
}

int opd__cuda_tril(const opd_kernel_ctx *ctx, opd_tensor *self, int64_t diagonal,
                   opd_tensor **out) {
  (void)ctx;
  int rc = opd__tril_meta(self);
  opd__cuda_shape d = {.kind = 3, .diagonal = diagonal};
  return rc ? rc : run_shape(&d, self, opd_tensor_strides(self), out);
}

int opd__cuda_triu(const opd_kernel_ctx *ctx, opd_tensor *self, int64_t diagonal,
                   opd_tensor **out) {
  (void)ctx;
  int rc = opd__tril_meta(self);
  opd__cuda_shape d = {.kind = 4, .diagonal = diagonal};
  return rc ? rc : run_shape(&d, self, opd_tensor_strides(self), out);
}

/* ---- cumsum, cumprod ---- */

static int cum(opd_tensor *self, int64_t dim, opd_dtype dtype, bool prod, opd_tensor **out) {
  int64_t d;
  opd_out_spec spec;
  int rc = opd__cum_meta(self, dim, dtype, &d, &spec);
  if (rc == 0) rc = opd__alloc_output(&spec, opd_tensor_device(self), out);
  if (rc || (*out)->numel == 0) return rc;
  opd__cuda_cum c = {.prod = prod,
                     .self_dtype = opd_tensor_dtype(self),
                     .out_dtype = spec.dtype,
                     .ndim = self->ndim ? self->ndim : 1,
                     .self = opd_tensor_data(self),
                     .out = opd_tensor_data(*out)};
  for (int k = 0; k < c.ndim; k++) {
    c.sizes[k] = self->ndim ? opd_tensor_sizes(self)[k] : 1;
    c.strides[0][k] = self->ndim ? opd_tensor_strides(self)[k] : 0;
    c.strides[1][k] = self->ndim ? opd_tensor_strides(*out)[k] : 0;
  }
  c.len = c.sizes[d];
  c.sizes[d] = 1;
  c.outer = (*out)->numel / c.len;
  c.self_step = c.strides[0][d];
  c.out_step = c.strides[1][d];
  if ((rc = opd__cuda_launch_cum(opd__cuda_dev_of(self), &c))) opd_tensor_release(*out);
  return rc;
}

int opd__cuda_cumsum(const opd_kernel_ctx *ctx, opd_tensor *self, int64_t dim, opd_dtype dtype,
                     opd_tensor **out) {
  (void)ctx;
  return cum(self, dim, dtype, false, out);
}

int opd__cuda_cumprod(const opd_kernel_ctx *ctx, opd_tensor *self, int64_t dim, opd_dtype dtype,
                      opd_tensor **out) {
  (void)ctx;
  return cum(self, dim, dtype, true, out);
}

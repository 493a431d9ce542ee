/* index_advanced_meta.c: the plans of advanced indexing ([Note: Advanced indexing]) with
 * PyTorch 1.13's errors, and the Meta kernels of index.Tensor and _index_put_impl_. */
#include "index_advanced_meta.h"

#include <stdio.h>
#include <string.h>

#include "opd/allocator.h"
#include "opd/checked.h"

static const opd_device cpu_device = {OPD_DEVICE_CPU, -1};

void opd__adv_plan_free(opd__adv_plan *p) {
  const opd_allocator *cpu = opd_cpu_allocator();
  for (int i = 0; i < p->nowned; i++)
    cpu->free(cpu, cpu_device, p->owned[i], (size_t)p->owned_bytes[i]);
  p->nowned = 0;
}

static bool is_mask(const opd_tensor *t) {
  opd_dtype d = opd_tensor_dtype(t);
  return d == OPD_BOOL || d == OPD_UINT8;
}

/* The k index tensors of a mask's nonzero coordinates, as 1-d buffers of p's. */
static int mask_coordinates(opd_tensor *mask, opd__adv_plan *p, int64_t **coords, int64_t *count) {
  int k = mask->ndim;
  const int64_t *sizes = opd_tensor_sizes(mask), *strides = opd_tensor_strides(mask);
  const uint8_t *m = opd_tensor_data(mask);
  int64_t idx[OPD_MAX_DIMS] = {0}, n = 0;
  for (int64_t i = 0; i < mask->numel; i++) { /* count, walking the mask's positions */
    int64_t off = 0;
    for (int d = 0; d < k; d++) off += idx[d] * strides[d];
    n += m[off] != 0;
    for (int d = k - 1; d >= 0 && ++idx[d] == sizes[d]; d--) idx[d] = 0;
  }
  *count = n;
  const opd_allocator *cpu = opd_cpu_allocator();
  for (int j = 0; j < k; j++) {
    int64_t nbytes;
    int rc = opd_ckd_nbytes(n > 0 ? n : 1, sizeof(int64_t), &nbytes, "index: the mask's indices");
    if (rc) return rc;
    if (!(coords[j] = cpu->alloc(cpu, cpu_device, (size_t)nbytes))) return opd_last_error_code();
    p->owned[p->nowned] = coords[j];
    p->owned_bytes[p->nowned++] = nbytes;
  }
  memset(idx, 0, sizeof idx);
  for (int64_t i = 0, w = 0; i < mask->numel; i++) {
    int64_t off = 0;
    for (int d = 0; d < k; d++) off += idx[d] * strides[d];
    if (m[off])
      for (int d = 0; d < k; d++) coords[d][w] = idx[d];
    w += m[off] != 0;
    for (int d = k - 1; d >= 0 && ++idx[d] == sizes[d]; d--) idx[d] = 0;
  }
  return 0;
}

/* One index tensor of the plan before broadcasting: its data and own shape. */
typedef struct raw_index {
  const int64_t *data;
  int ndim;
  int64_t sizes[OPD_MAX_DIMS], strides[OPD_MAX_DIMS];
} raw_index;

static int check_index_values(const raw_index *r, int k, int64_t size) {
  int64_t idx[OPD_MAX_DIMS] = {0}, numel = 1;
  for (int d = 0; d < r->ndim; d++) numel *= r->sizes[d];
  for (int64_t i = 0; i < numel; i++) {
    int64_t off = 0;
    for (int d = 0; d < r->ndim; d++) off += idx[d] * r->strides[d];
    int64_t v = r->data[off];
    if (v < -size || v >= size)
      return opd_error(OPD_EINDEX, "index %lld is out of bounds for dimension %d with size %lld",
                       (long long)v, k, (long long)size);
    for (int d = r->ndim - 1; d >= 0 && ++idx[d] == r->sizes[d]; d--) idx[d] = 0;
  }
  return 0;
}

int opd__adv_plan_make(opd_tensor *self, opd_tensor_list indices, bool with_data,
                       opd__adv_plan *p) {
  memset(p, 0, sizeof *p);
  char a[256], b[256];
  int64_t used = 0;
  for (uint32_t i = 0; i < indices.len; i++)
    used += indices.data[i] && is_mask(indices.data[i]) ? indices.data[i]->ndim : 1;
  if (used > self->ndim)
    return opd_error(OPD_EINDEX, "too many indices for tensor of dimension %d (got %lld)",
                     self->ndim, (long long)used);
  raw_index raw[OPD_MAX_DIMS];
  int dim = 0;
  for (uint32_t i = 0; i < indices.len; i++) {
    opd_tensor *t = indices.data[i];
    if (!t) {
      dim++;
      continue;
    }
    opd_dtype dt = opd_tensor_dtype(t);
    if (dt != OPD_INT64 && !is_mask(t))
      return opd_error(OPD_EINDEX, "tensors used as indices must be long, byte or bool tensors");
    opd_tensor *devs[2] = {self, t};
    opd_device device;
    int rc = opd__common_device(devs, 2, &device);
    if (rc) return rc;
    if (!is_mask(t)) {
      raw_index *r = &raw[p->nidx];
      r->data = with_data ? opd_tensor_data(t) : NULL;
      r->ndim = t->ndim;
      memcpy(r->sizes, opd_tensor_sizes(t), (size_t)t->ndim * sizeof(int64_t));
      memcpy(r->strides, opd_tensor_strides(t), (size_t)t->ndim * sizeof(int64_t));
      p->idx[p->nidx++].dim = dim++;
      continue;
    }
    if (t->ndim == 0)
      return opd_error(OPD_ENOTIMPL, "index: a 0-dimensional mask is not supported");
    for (int j = 0; j < t->ndim; j++)
      if (opd_tensor_sizes(t)[j] != opd_tensor_sizes(self)[dim + j])
        return opd_error(OPD_EINDEX,
                         "The shape of the mask %s at index %d does not match the shape of the "
                         "indexed tensor %s at index %d",
                         opd__format_sizes(opd_tensor_sizes(t), t->ndim, a, sizeof a), j,
                         opd__format_sizes(opd_tensor_sizes(self), self->ndim, b, sizeof b),
                         dim + j);
    if (!with_data)
      return opd_error(OPD_ENOTIMPL,
                       "index: a mask's result shape depends on its data, which the Meta device "
                       "does not have");
    int64_t *coords[OPD_MAX_DIMS], count;
    if ((rc = mask_coordinates(t, p, coords, &count))) return rc;
    for (int j = 0; j < t->ndim; j++) {
      raw_index *r = &raw[p->nidx];
      r->data = coords[j];
      r->ndim = 1;
      r->sizes[0] = count;
      r->strides[0] = 1;
      p->idx[p->nidx++].dim = dim++;
    }
  }
  if (p->nidx == 0) return opd_error(OPD_ENOTIMPL, "index: at least one index tensor is required");
  /* broadcast the index tensors together */
  p->nb = 0;
  for (int k = 0; k < p->nidx; k++) {
    int64_t out[OPD_MAX_DIMS];
    int nout;
    if (opd__broadcast_shapes(p->bsizes, p->nb, raw[k].sizes, raw[k].ndim, out, &nout)) {
      char msg[1024] = "";
      size_t used_len = 0;
      for (int j = 0; j < p->nidx; j++)
        used_len += (size_t)snprintf(
            msg + used_len, used_len < sizeof msg ? sizeof msg - used_len : 0, "%s%s",
            j ? ", " : "", opd__format_sizes(raw[j].sizes, raw[j].ndim, a, sizeof a));
      return opd_error(OPD_EINDEX,
                       "shape mismatch: indexing tensors could not be broadcast together with "
                       "shapes %s",
                       msg);
    }
    memcpy(p->bsizes, out, (size_t)nout * sizeof *out);
    p->nb = nout;
  }
  for (int k = 0; k < p->nidx; k++) {
    const raw_index *r = &raw[k];
    for (int j = 0; j < p->nb; j++) {
      int rd = j - (p->nb - r->ndim);
      p->idx[k].strides[j] = rd >= 0 && r->sizes[rd] == p->bsizes[j] ? r->strides[rd] : 0;
    }
    p->idx[k].data = r->data;
  }
  /* the result's dimensions */
  int first = p->idx[0].dim, last = p->idx[p->nidx - 1].dim;
  bool adjacent = last - first + 1 == p->nidx;
  int n = 0;
  if (self->ndim - p->nidx + p->nb > OPD_MAX_DIMS)
    return opd_error(OPD_EINVAL, "tensors have at most %d dimensions", OPD_MAX_DIMS);
  bool indexed[OPD_MAX_DIMS] = {false};
  for (int k = 0; k < p->nidx; k++) indexed[p->idx[k].dim] = true;
  int insert_at = adjacent ? first : 0;
  for (int d = 0; d <= self->ndim; d++) {
    if (d == insert_at)
      for (int j = 0; j < p->nb; j++) {
        p->map[n] = -1 - j;
        p->sizes[n++] = p->bsizes[j];
      }
    if (d < self->ndim && !indexed[d]) {
      p->map[n] = d;
      p->sizes[n++] = opd_tensor_sizes(self)[d];
    }
  }
  p->ndim = n;
  if (!with_data) return 0;
  for (int k = 0; k < p->nidx; k++) {
    if (raw[k].data == NULL) continue;
    int rc = check_index_values(&raw[k], k, opd_tensor_sizes(self)[p->idx[k].dim]);
    if (rc) return rc;
  }
  return 0;
}

int opd__adv_put_check(opd_tensor *self, opd_tensor *values, const opd__adv_plan *p) {
  if (opd_tensor_dtype(self) != opd_tensor_dtype(values))
    return opd_error(OPD_EINVAL,
                     "Index put requires the source and destination dtypes match, got %s for the "
                     "destination and %s for the source.",
                     opd_dtype_c10_name(opd_tensor_dtype(self)),
                     opd_dtype_c10_name(opd_tensor_dtype(values)));
  int64_t out[OPD_MAX_DIMS];
  int nout;
  int rc =
      opd__broadcast_shapes(p->sizes, p->ndim, opd_tensor_sizes(values), values->ndim, out, &nout);
  if (rc || nout != p->ndim || memcmp(out, p->sizes, (size_t)nout * sizeof *out)) {
    char a[256], b[256];
    return opd_error(OPD_EINVAL,
                     "shape mismatch: value tensor of shape %s cannot be broadcast to indexing "
                     "result of shape %s",
                     opd__format_sizes(opd_tensor_sizes(values), values->ndim, a, sizeof a),
                     opd__format_sizes(p->sizes, p->ndim, b, sizeof b));
  }
  return 0;
}

/* ---- Meta kernels ---- */

int opd__meta_index_tensor(const opd_kernel_ctx *ctx, opd_tensor *self, opd_tensor_list indices,
                           opd_tensor **out) {
  (void)ctx;
  opd__adv_plan p;
  int rc = opd__adv_plan_make(self, indices, false, &p);
  opd_out_spec spec = {.ndim = p.ndim, .dtype = opd_tensor_dtype(self)};
  memcpy(spec.sizes, p.sizes, (size_t)p.ndim * sizeof(int64_t));
  opd__adv_plan_free(&p);
  return rc ? rc : opd__alloc_output(&spec, (opd_device){OPD_DEVICE_META, -1}, out);
}

int opd__meta_index_put_impl_(const opd_kernel_ctx *ctx, opd_tensor *self, opd_tensor_list indices,
                              opd_tensor *values, bool accumulate, bool unsafe, opd_tensor **out) {
  (void)ctx;
  (void)accumulate;
  (void)unsafe;
  opd__adv_plan p;
  int rc = opd__adv_plan_make(self, indices, false, &p);
  if (rc == 0) rc = opd__adv_put_check(self, values, &p);
  opd__adv_plan_free(&p);
  if (rc) return rc;
  opd_tensor_bump_version(self);
  opd_tensor_retain(self);
  *out = self;
  return 0;
}

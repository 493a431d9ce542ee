/* index_mask.c: the CPU kernels of masked_fill_.Tensor, masked_scatter_, masked_select,
 * nonzero, take and put_ (checks in kernels/meta/index_mask_meta.c). Those whose output size
 * or order depends on data (masked_select, nonzero, masked_scatter_, put_) walk serially in
 * row-major order, as ATen's CPU kernels do; indices are checked before any element moves. */
#include <string.h>

#include "index_walk.h"
#include "meta/index_mask_meta.h"
#include "opd/checked.h"

static const opd_device cpu_device = {OPD_DEVICE_CPU, -1};

/* elementwise_misc.c's masked_fill_.Scalar kernel (kernel_list.h) */
int opd__cpu_masked_fill__scalar(const opd_kernel_ctx *ctx, opd_tensor *self, opd_tensor *mask,
                                 opd_scalar value, opd_tensor **out);

static bool nonzero_at(const char *p, opd_dtype t) {
  return opd_dtype_is_floating(t) ? opd__elem_get_f(p, t) != 0 : opd__elem_get_i(p, t) != 0;
}

/* A 0-d CPU tensor's element as a Scalar of its kind. */
static opd_scalar scalar_of(const opd_tensor *t) {
  const char *p = opd_tensor_data(t);
  opd_dtype dt = opd_tensor_dtype(t);
  if (opd_dtype_is_floating(dt)) return opd__scalar_double(opd__elem_get_f(p, dt));
  if (dt == OPD_BOOL) return (opd_scalar){.tag = OPD_IV_BOOL, .u.b = *(const uint8_t *)p != 0};
  return opd__scalar_int(opd__elem_get_i(p, dt));
}

int opd__cpu_masked_fill__tensor(const opd_kernel_ctx *ctx, opd_tensor *self, opd_tensor *mask,
                                 opd_tensor *value, opd_tensor **out) {
  int rc = opd__masked_fill_tensor_meta(self, mask, value);
  return rc ? rc : opd__cpu_masked_fill__scalar(ctx, self, mask, scalar_of(value), out);
}

/* The strides of t broadcast to sizes[0..nd) (0 where t has no such dimension or size 1). */
static void broadcast_strides(const opd_tensor *t, const int64_t *sizes, int nd, int64_t *out) {
  for (int d = 0; d < nd; d++) {
    int k = d - (nd - t->ndim);
    out[d] = k >= 0 && opd_tensor_sizes(t)[k] == sizes[d] ? opd_tensor_strides(t)[k] : 0;
  }
}

/* A walk over a shape with self (op 0) and mask (op 1) broadcast to it. */
static void mask_walk(opd__walk *w, const int64_t *sizes, int nd, opd_tensor *self,
                      opd_tensor *mask) {
  int64_t st[OPD_MAX_DIMS];
  opd__walk_init(w, sizes, nd, 2);
  broadcast_strides(self, sizes, nd, st);
  opd__walk_set_strides(w, 0, st);
  broadcast_strides(mask, sizes, nd, st);
  opd__walk_set_strides(w, 1, st);
  opd__walk_seek(w, 0);
}

int opd__cpu_masked_scatter_(const opd_kernel_ctx *ctx, opd_tensor *self, opd_tensor *mask,
                             opd_tensor *source, opd_tensor **out) {
  (void)ctx;
  int rc = opd__masked_scatter_meta(self, mask, source);
  if (rc == 0) rc = opd__assert_no_internal_overlap(self);
  if (rc) return rc;
  opd__walk w, src;
  const uint8_t *m = opd_tensor_data(mask);
  int64_t ones = 0;
  mask_walk(&w, opd_tensor_sizes(self), self->ndim, self, mask);
  for (int64_t i = 0; i < self->numel; i++, opd__walk_next(&w)) ones += m[w.off[1]] != 0;
  if (ones > source->numel)
    return opd_error(OPD_EINVAL, "Number of elements of source < number of ones in mask");
  size_t es = opd_dtype_size(opd_tensor_dtype(self));
  char *dst = opd_tensor_data(self);
  const char *s = opd_tensor_data(source);
  opd__walk_init(&src, opd_tensor_sizes(source), source->ndim, 1);
  opd__walk_set_strides(&src, 0, opd_tensor_strides(source));
  opd__walk_seek(&src, 0);
  opd__walk_seek(&w, 0);
  for (int64_t i = 0; i < self->numel; i++, opd__walk_next(&w)) {
    if (!m[w.off[1]]) continue;
    memcpy(dst + w.off[0] * (int64_t)es, s + src.off[0] * (int64_t)es, es);
    opd__walk_next(&src);
  }
  opd_tensor_bump_version(self);
  opd_tensor_retain(self);
  *out = self;
  return 0;
}

int opd__cpu_masked_select(const opd_kernel_ctx *ctx, opd_tensor *self, opd_tensor *mask,
                           opd_tensor **out) {
  (void)ctx;
  opd_tensor *t[2] = {self, mask};
  opd_device device;
  int rc = opd__common_device(t, 2, &device);
  opd_dtype mt = opd_tensor_dtype(mask);
  if (rc == 0 && mt != OPD_BOOL && mt != OPD_UINT8)
    rc = opd_error(OPD_EINVAL, "masked_select: expected BoolTensor or ByteTensor for mask");
  int64_t sizes[OPD_MAX_DIMS], numel = 1;
  int nd;
  if (rc == 0)
    rc = opd__broadcast_shapes(opd_tensor_sizes(mask), mask->ndim, opd_tensor_sizes(self),
                               self->ndim, sizes, &nd);
  if (rc == 0) rc = opd_ckd_numel(sizes, (size_t)nd, &numel, "masked_select");
  if (rc) return rc;
  opd__walk w;
  const uint8_t *m = opd_tensor_data(mask);
  int64_t n = 0;
  mask_walk(&w, sizes, nd, self, mask);
  for (int64_t i = 0; i < numel; i++, opd__walk_next(&w)) n += m[w.off[1]] != 0;
  opd_out_spec spec = {.ndim = 1, .dtype = opd_tensor_dtype(self), .sizes = {n}};
  opd_tensor *r = NULL;
  if ((rc = opd__alloc_output(&spec, cpu_device, &r))) return rc;
  size_t es = opd_dtype_size(spec.dtype);
  char *dst = opd_tensor_data(r);
  const char *s = opd_tensor_data(self);
  opd__walk_seek(&w, 0);
  for (int64_t i = 0; i < numel; i++, opd__walk_next(&w))
    if (m[w.off[1]]) {
      memcpy(dst, s + w.off[0] * (int64_t)es, es);
      dst += es;
    }
  *out = r;
  return 0;
}

int opd__cpu_nonzero(const opd_kernel_ctx *ctx, opd_tensor *self, opd_tensor **out) {
  (void)ctx;
  opd__walk w;
  opd_dtype t = opd_tensor_dtype(self);
  size_t es = opd_dtype_size(t);
  const char *s = opd_tensor_data(self);
  int64_t n = 0;
  opd__walk_init(&w, opd_tensor_sizes(self), self->ndim, 1);
  opd__walk_set_strides(&w, 0, opd_tensor_strides(self));
  opd__walk_seek(&w, 0);
  for (int64_t i = 0; i < self->numel; i++, opd__walk_next(&w))
    n += nonzero_at(s + w.off[0] * (int64_t)es, t);
  opd_out_spec spec = {.ndim = 2, .dtype = OPD_INT64, .sizes = {n, self->ndim}};
  opd_tensor *r = NULL;
  int rc = opd__alloc_output(&spec, cpu_device, &r);
  if (rc) return rc;
  int64_t *dst = opd_tensor_data(r);
  opd__walk_seek(&w, 0);
  for (int64_t i = 0; self->ndim > 0 && i < self->numel; i++, opd__walk_next(&w)) /* 0-d: [n, 0] */
    if (nonzero_at(s + w.off[0] * (int64_t)es, t)) {
      memcpy(dst, w.idx, (size_t)self->ndim * sizeof *dst);
      dst += self->ndim;
    }
  *out = r;
  return 0;
}

/* The element offset of self's element at row-major position k. */
static int64_t flat_offset(const opd_tensor *self, int64_t k) {
  int64_t off = 0;
  for (int d = self->ndim - 1; d >= 0; d--) {
    int64_t size = opd_tensor_sizes(self)[d];
    off += (k % size) * opd_tensor_strides(self)[d];
    k /= size;
  }
  return off;
}

/* index's elements in row-major order, each checked against self's numel and wrapped */
static int flat_index(const opd_tensor *self, const opd_tensor *index, const opd__walk *w,
                      int64_t *k) {
  int64_t i = opd__index_at(opd_tensor_data(index), OPD_INT64, w->off[0]);
  if (i < -self->numel || i >= self->numel)
    return opd_error(OPD_EINDEX,
                     "out of range: tried to access index %lld on a tensor of %lld elements.",
                     (long long)i, (long long)self->numel);
  *k = i < 0 ? i + self->numel : i;
  return 0;
}

int opd__cpu_take(const opd_kernel_ctx *ctx, opd_tensor *self, opd_tensor *index,
                  opd_tensor **out) {
  (void)ctx;
  opd_out_spec spec;
  int rc = opd__take_meta(self, index, &spec);
  if (rc) return rc;
  opd__walk w;
  opd__walk_init(&w, opd_tensor_sizes(index), index->ndim, 1);
  opd__walk_set_strides(&w, 0, opd_tensor_strides(index));
  opd__walk_seek(&w, 0);
  int64_t k = 0;
  for (int64_t i = 0; i < index->numel; i++, opd__walk_next(&w))
    if ((rc = flat_index(self, index, &w, &k))) return rc;
  opd_tensor *r = NULL;
  if ((rc = opd__alloc_output(&spec, cpu_device, &r))) return rc;
  size_t es = opd_dtype_size(spec.dtype);
  char *dst = opd_tensor_data(r);
  const char *s = opd_tensor_data(self);
  opd__walk_seek(&w, 0);
  for (int64_t i = 0; i < index->numel; i++, opd__walk_next(&w), dst += es) {
    flat_index(self, index, &w, &k); /* checked above */
    memcpy(dst, s + flat_offset(self, k) * (int64_t)es, es);
  }
  *out = r;
  return 0;
}

int opd__cpu_put_(const opd_kernel_ctx *ctx, opd_tensor *self, opd_tensor *index,
                  opd_tensor *source, bool accumulate, opd_tensor **out) {
  (void)ctx;
  int rc = opd__put_meta(self, index, source);
  if (rc == 0) rc = opd__assert_no_internal_overlap(self);
  if (rc) return rc;
  opd__walk w;
  opd__walk_init(&w, opd_tensor_sizes(index), index->ndim, 1);
  opd__walk_set_strides(&w, 0, opd_tensor_strides(index));
  opd__walk_seek(&w, 0);
  int64_t k = 0;
  for (int64_t i = 0; i < index->numel; i++, opd__walk_next(&w))
    if ((rc = flat_index(self, index, &w, &k))) return rc;
  opd_dtype t = opd_tensor_dtype(self);
  size_t es = opd_dtype_size(t);
  char *dst = opd_tensor_data(self);
  const char *s = opd_tensor_data(source);
  opd__walk sw; /* source has index's numel, not its shape: read in its row-major order */
  opd__walk_init(&sw, opd_tensor_sizes(source), source->ndim, 1);
  opd__walk_set_strides(&sw, 0, opd_tensor_strides(source));
  opd__walk_seek(&sw, 0);
  opd__walk_seek(&w, 0);
  for (int64_t i = 0; i < index->numel; i++, opd__walk_next(&w), opd__walk_next(&sw)) {
    flat_index(self, index, &w, &k); /* checked above */
    opd__elem_reduce(dst + flat_offset(self, k) * (int64_t)es, s + sw.off[0] * (int64_t)es, t,
                     accumulate ? OPD__REDUCE_SUM : OPD__REDUCE_NONE);
  }
  opd_tensor_bump_version(self);
  opd_tensor_retain(self);
  *out = self;
  return 0;
}

/* repeat_interleave.Tensor(repeats, *, output_size=None): i repeated repeats[i] times, in
 * repeats' dtype (int64 or int32). */
int opd__cpu_repeat_interleave_tensor(const opd_kernel_ctx *ctx, opd_tensor *repeats,
                                      opd_opt_int output_size, opd_tensor **out) {
  (void)ctx;
  opd_dtype t = opd_tensor_dtype(repeats);
  if (repeats->ndim != 1)
    return opd_error(OPD_EINVAL, "repeat_interleave only accept 1D vector as repeat");
  if (t != OPD_INT64 && t != OPD_INT32)
    return opd_error(OPD_EINVAL, "\"repeat_interleave_cpu\" not implemented for '%s'",
                     opd_dtype_c10_name(t));
  const char *data = opd_tensor_data(repeats);
  int64_t stride = opd_tensor_strides(repeats)[0], total = 0;
  for (int64_t i = 0; i < repeats->numel; i++) {
    int64_t r = opd__index_at(data, t, i * stride);
    if (r < 0) return opd_error(OPD_EINVAL, "repeats can not be negative");
    if (opd_ckd_add(&total, total, r))
      return opd_error(OPD_EINVAL, "repeat_interleave: the repeats' sum overflows int64");
  }
  if (output_size.has_value && output_size.value != total)
    return opd_error(OPD_EINVAL, "allocated size does not match required size");
  opd_out_spec spec = {.ndim = 1, .dtype = t, .sizes = {total}};
  opd_tensor *r = NULL;
  int rc = opd__alloc_output(&spec, cpu_device, &r);
  if (rc) return rc;
  char *dst = opd_tensor_data(r);
  size_t es = opd_dtype_size(t);
  for (int64_t i = 0; i < repeats->numel; i++)
    for (int64_t k = opd__index_at(data, t, i * stride); k > 0; k--, dst += es)
      opd__elem_put_i(dst, t, i);
  *out = r;
  return 0;
}

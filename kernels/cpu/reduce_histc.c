/* reduce_histc.c: the CPU kernel of histc (shape in kernels/meta/reduce_histc_meta.c).
 *
 * [Note: histc's bins]
 * As PyTorch 1.13's histc: the range is [min, max], or the data's extrema when min == max (a
 * range of one value widened by 1 each side); it must be finite and increasing. Its ends are
 * those of linspace(min, max, bins + 1) in self's dtype; an element in the range falls in bin
 * (x - left) * bins / (right - left), computed in self's dtype and truncated, the right end in
 * the last bin; a NaN in bin 0, as PyTorch 1.13 counts it. Counts are self's dtype. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "index_walk.h"
#include "meta/reduce_histc_meta.h"

typedef struct range {
  double lo, hi;
} range;

/* The data's extrema (NaN if there is one). */
static range extrema(opd_tensor *self) {
  range r = {INFINITY, -INFINITY};
  opd_dtype t = opd_tensor_dtype(self);
  size_t es = opd_dtype_size(t);
  opd__walk w;
  opd__walk_init(&w, opd_tensor_sizes(self), self->ndim, 1);
  opd__walk_set_strides(&w, 0, opd_tensor_strides(self));
  opd__walk_seek(&w, 0);
  const char *src = opd_tensor_data(self);
  for (int64_t i = 0; i < self->numel; i++, opd__walk_next(&w)) {
    double x = opd__elem_get_f(src + w.off[0] * (int64_t)es, t);
    if (isnan(x)) return (range){x, x};
    if (x < r.lo) r.lo = x;
    if (x > r.hi) r.hi = x;
  }
  return r;
}

#define DEFINE_COUNT(T)                                                              \
  static void count_##T(opd_tensor *self, T left, T right, int64_t bins, T *hist) {  \
    opd__walk w;                                                                     \
    opd__walk_init(&w, opd_tensor_sizes(self), self->ndim, 1);                       \
    opd__walk_set_strides(&w, 0, opd_tensor_strides(self));                          \
    opd__walk_seek(&w, 0);                                                           \
    const T *src = opd_tensor_data(self);                                            \
    for (int64_t i = 0; i < self->numel; i++, opd__walk_next(&w)) {                  \
      T x = src[w.off[0]];                                                           \
      if (x < left || x > right) continue;                                           \
      int64_t pos = isnan(x) ? 0 : (int64_t)((x - left) * (T)bins / (right - left)); \
      if (pos == bins) pos--;                                                        \
      hist[pos] += 1;                                                                \
    }                                                                                \
  }
DEFINE_COUNT(float)
DEFINE_COUNT(double)

int opd__cpu_histc(const opd_kernel_ctx *ctx, opd_tensor *self, int64_t bins, opd_scalar min,
                   opd_scalar max, opd_tensor **out) {
  (void)ctx;
  opd_out_spec spec;
  range r = {opd__scalar_to_double(min), opd__scalar_to_double(max)};
  int rc = opd__histc_meta(self, bins, r.lo, r.hi, &spec);
  if (rc) return rc;
  if (r.lo == r.hi && self->numel > 0) r = extrema(self);
  if (r.lo == r.hi) r.lo -= 1, r.hi += 1;
  if ((rc = opd__histc_range_check(r.lo, r.hi))) return rc;
  opd_tensor *h = NULL;
  if ((rc = opd__alloc_output(&spec, (opd_device){OPD_DEVICE_CPU, -1}, &h))) return rc;
  memset(opd_tensor_data(h), 0, (size_t)bins * opd_dtype_size(spec.dtype));
  if (spec.dtype == OPD_FLOAT32)
    count_float(self, (float)r.lo, (float)r.hi, bins, opd_tensor_data(h));
  else
    count_double(self, r.lo, r.hi, bins, opd_tensor_data(h));
  *out = h;
  return 0;
}

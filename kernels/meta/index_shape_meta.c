/* index_shape_meta.c: flip, roll, tril and triu: their argument checks with PyTorch 1.13's
 * errors (the meta functions, shared with kernels/cpu/index_shape.c) and their Meta kernels. */
#include "index_shape_meta.h"

#include <string.h>

int opd__flip_meta(opd_tensor *self, opd_int_list dims, bool *flipped) {
  memset(flipped, 0, OPD_MAX_DIMS * sizeof *flipped);
  for (int64_t i = 0; i < dims.len; i++) {
    int64_t d;
    int rc = opd__wrap_dim(dims.data[i], self->ndim, &d);
    if (rc) return rc;
    if (flipped[d])
      return opd_error(OPD_EINVAL, "dim %lld appears multiple times in the list of dims",
                       (long long)d);
    flipped[d] = true;
  }
  return 0;
}

int opd__roll_meta(opd_tensor *self, opd_int_list shifts, opd_int_list dims, int64_t *shift,
                   bool *flat) {
  memset(shift, 0, OPD_MAX_DIMS * sizeof *shift);
  *flat = false;
  if (dims.len < 0) dims.len = 0;
  if (shifts.len <= 0) return opd_error(OPD_EINVAL, "`shifts` required");
  if (dims.len == 0 && shifts.len == 1) {
    *flat = true;
    shift[0] = self->numel > 0 ? shifts.data[0] % self->numel : 0;
    if (shift[0] < 0) shift[0] += self->numel;
    return 0;
  }
  if (shifts.len != dims.len)
    return opd_error(OPD_EINVAL, "shifts and dimensions must align. shifts: %lld, dims:%lld",
                     (long long)shifts.len, (long long)dims.len);
  for (int64_t i = 0; i < dims.len; i++) {
    int64_t d;
    if (self->ndim == 0)
      return opd_error(OPD_EINDEX, "Dimension specified as %lld but tensor has no dimensions",
                       (long long)dims.data[i]);
    int rc = opd__wrap_dim(dims.data[i], self->ndim, &d);
    if (rc) return rc;
    int64_t size = opd_tensor_sizes(self)[d];
    if (size == 0) continue;
    /* rolls of the same dim add up (ATen rolls once per entry) */
    int64_t s = shifts.data[i] % size;
    if (s < 0) s += size;
    shift[d] = (shift[d] + s) % size;
  }
  return 0;
}

/* ATen reads the sizes of dims -2 and -1: a tensor of fewer dims fails to wrap -2 */
int opd__tril_meta(opd_tensor *self) {
  int64_t d;
  return opd__wrap_dim(-2, self->ndim, &d);
}

/* ---- Meta kernels ---- */

static int like_self(int rc, opd_tensor *self, opd_tensor **out) {
  if (rc) return rc;
  opd_out_spec spec = {.ndim = self->ndim, .dtype = opd_tensor_dtype(self)};
  memcpy(spec.sizes, opd_tensor_sizes(self), (size_t)self->ndim * sizeof(int64_t));
  return opd__alloc_output(&spec, (opd_device){OPD_DEVICE_META, -1}, out);
}

int opd__meta_flip(const opd_kernel_ctx *ctx, opd_tensor *self, opd_int_list dims,
                   opd_tensor **out) {
  (void)ctx;
  bool flipped[OPD_MAX_DIMS];
  return like_self(opd__flip_meta(self, dims, flipped), self, out);
}

int opd__meta_roll(const opd_kernel_ctx *ctx, opd_tensor *self, opd_int_list shifts,
                   opd_int_list dims, opd_tensor **out) {
  (void)ctx;
  int64_t shift[OPD_MAX_DIMS];
  bool flat;
  return like_self(opd__roll_meta(self, shifts, dims, shift, &flat), self, out);
}

int opd__meta_tril(const opd_kernel_ctx *ctx, opd_tensor *self, int64_t diagonal,
                   opd_tensor **out) {
  (void)ctx;
  (void)diagonal;
  return like_self(opd__tril_meta(self), self, out);
}

int opd__meta_triu(const opd_kernel_ctx *ctx, opd_tensor *self, int64_t diagonal,
                   opd_tensor **out) {
  (void)ctx;
  (void)diagonal;
  return like_self(opd__tril_meta(self), self, out);
}

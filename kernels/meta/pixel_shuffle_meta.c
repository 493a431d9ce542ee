/* pixel_shuffle_meta.c: pixel_shuffle's and pixel_unshuffle's checks, shapes and Meta
 * kernels (pixel_shuffle_meta.h). */
#include "pixel_shuffle_meta.h"

#include <string.h>

#include "opd/checked.h"

int opd__pixel_shuffle_meta(opd_tensor *self, int64_t factor, bool unshuffle,
                            opd__shuffle_geom *g) {
  memset(g, 0, sizeof *g);
  const char *name = unshuffle ? "pixel_unshuffle" : "pixel_shuffle";
  if (self->ndim < 3)
    return opd_error(OPD_EINVAL,
                     "%s expects input to have at least 3 dimensions, but got input with %d "
                     "dimension(s)",
                     name, self->ndim);
  if (factor <= 0)
    return opd_error(OPD_EINVAL, "%s expects a positive %s, but got %lld", name,
                     unshuffle ? "downscale_factor" : "upscale_factor", (long long)factor);
  const int64_t *s = opd_tensor_sizes(self);
  int nd = self->ndim;
  int64_t c = s[nd - 3], h = s[nd - 2], w = s[nd - 1], square;
  bool square_overflows = opd_ckd_mul(&square, factor, factor);
  if (!unshuffle && (square_overflows || c % square != 0))
    return opd_error(OPD_EINVAL,
                     "pixel_shuffle expects its input's 'channel' dimension to be divisible by the "
                     "square of upscale_factor, but input.size(-3)=%lld is not divisible by %s%lld",
                     (long long)c, square_overflows ? "a square past int64: " : "",
                     (long long)(square_overflows ? factor : square));
  if (unshuffle && h % factor != 0)
    return opd_error(OPD_EINVAL,
                     "pixel_unshuffle expects height to be divisible by downscale_factor, but "
                     "input.size(-2)=%lld is not divisible by %lld",
                     (long long)h, (long long)factor);
  if (unshuffle && w % factor != 0)
    return opd_error(OPD_EINVAL,
                     "pixel_unshuffle expects width to be divisible by downscale_factor, but "
                     "input.size(-1)=%lld is not divisible by %lld",
                     (long long)w, (long long)factor);
  g->unshuffle = unshuffle;
  g->factor = factor;
  g->batch = 1;
  for (int i = 0; i < nd - 3; i++) g->batch *= s[i]; /* zero, or the product fits */
  if (unshuffle) {
    g->channels = c;
    g->height = h / factor;
    g->width = w / factor;
  } else {
    g->channels = c / square;
    g->height = h;
    g->width = w;
  }
  g->spec.ndim = nd;
  g->spec.dtype = opd_tensor_dtype(self);
  memcpy(g->spec.sizes, s, (size_t)nd * sizeof *s);
  /* shuffle: C / r^2, H r, W r; unshuffle: C r^2, H / r, W / r (the same element count) */
  int64_t oc, oh, ow;
  bool overflow = unshuffle ? opd_ckd_mul(&oc, c, square) || square_overflows
                            : opd_ckd_mul(&oh, h, factor) || opd_ckd_mul(&ow, w, factor);
  if (overflow) return opd_error(OPD_EINVAL, "%s: the output's sizes overflow int64", name);
  if (unshuffle && self->numel == 0) return 0; /* PyTorch returns an empty input's clone */
  g->spec.sizes[nd - 3] = unshuffle ? oc : c / square;
  g->spec.sizes[nd - 2] = unshuffle ? h / factor : oh;
  g->spec.sizes[nd - 1] = unshuffle ? w / factor : ow;
  return 0;
}

int opd__meta_pixel_shuffle(const opd_kernel_ctx *ctx, opd_tensor *self, int64_t upscale_factor,
                            opd_tensor **out) {
  (void)ctx;
  opd__shuffle_geom g;
  int rc = opd__pixel_shuffle_meta(self, upscale_factor, false, &g);
  return rc ? rc : opd__alloc_output(&g.spec, opd_tensor_device(self), out);
}

int opd__meta_pixel_unshuffle(const opd_kernel_ctx *ctx, opd_tensor *self, int64_t downscale_factor,
                              opd_tensor **out) {
  (void)ctx;
  opd__shuffle_geom g;
  int rc = opd__pixel_shuffle_meta(self, downscale_factor, true, &g);
  return rc ? rc : opd__alloc_output(&g.spec, opd_tensor_device(self), out);
}

int opd__channel_shuffle_meta(opd_tensor *self, int64_t groups, opd_out_spec *spec) {
  const int64_t *s = opd_tensor_sizes(self);
  char b[256];
  if (self->ndim <= 2)
    return opd_error(OPD_EINVAL,
                     "channel_shuffle expects input with > 2 dims, but got input with sizes %s",
                     opd__format_sizes(s, self->ndim, b, sizeof b));
  if (groups <= 0)
    return opd_error(
        OPD_EINVAL, "Number of groups to divide channels in must be positive. Value of groups:%lld",
        (long long)groups);
  if (s[1] % groups != 0)
    return opd_error(OPD_EINVAL,
                     "Number of channels must be divisible by groups. Got %lld channels and %lld "
                     "groups.",
                     (long long)s[1], (long long)groups);
  spec->ndim = self->ndim;
  spec->dtype = opd_tensor_dtype(self);
  memcpy(spec->sizes, s, (size_t)self->ndim * sizeof *s);
  return 0;
}

int opd__channel_shuffle_alias(opd_tensor *self, opd_tensor **out) {
  return opd_tensor_view_of(self, opd_tensor_sizes(self), opd_tensor_strides(self), self->ndim,
                            self->storage_offset, out);
}

int opd__meta_channel_shuffle(const opd_kernel_ctx *ctx, opd_tensor *self, int64_t groups,
                              opd_tensor **out) {
  (void)ctx;
  opd_out_spec spec;
  int rc = opd__channel_shuffle_meta(self, groups, &spec);
  if (!rc && self->numel == 0) return opd__channel_shuffle_alias(self, out);
  return rc ? rc : opd__alloc_output(&spec, opd_tensor_device(self), out);
}

/* pixel_shuffle.c: the CPU kernels of pixel_shuffle and pixel_unshuffle (checks and shapes in
 * kernels/meta/pixel_shuffle_meta.c): element copies of any dtype between the layouts
 * (batch, C, r, r, H, W) and (batch, C, H, r, W, r), one (batch, channel) plane per task of
 * the intra-op pool; the input is made contiguous first, the output is contiguous. And
 * channel_shuffle's: (N, g, C / g, rest) to (N, C / g, g, rest), one channel per copy. */
#include <string.h>

#include "conv_impl.h"
#include "meta/pixel_shuffle_meta.h"
#include "src/parallel.h"

typedef struct shuffle_ctx {
  const opd__shuffle_geom *g;
  size_t es;
  const char *in;
  char *out;
} shuffle_ctx;

static void shuffle_task(void *ctx, int64_t begin, int64_t end) {
  const shuffle_ctx *c = ctx;
  const opd__shuffle_geom *g = c->g;
  int64_t r = g->factor, h = g->height, w = g->width, plane = r * r * h * w;
  for (int64_t p = begin; p < end; p++) {
    const char *src = c->in + (size_t)(p * plane) * c->es;
    char *dst = c->out + (size_t)(p * plane) * c->es;
    /* i, j: the position in the factor block; y, x: in the small grid */
    for (int64_t i = 0; i < r; i++)
      for (int64_t j = 0; j < r; j++)
        for (int64_t y = 0; y < h; y++)
          for (int64_t x = 0; x < w; x++) {
            int64_t blocked = ((i * r + j) * h + y) * w + x;     /* (r, r, H, W) */
            int64_t interleaved = ((y * r + i) * w + x) * r + j; /* (H, r, W, r) */
            int64_t from = g->unshuffle ? interleaved : blocked;
            int64_t to = g->unshuffle ? blocked : interleaved;
            memcpy(dst + (size_t)to * c->es, src + (size_t)from * c->es, c->es);
          }
  }
}

static int shuffle(opd_tensor *self, int64_t factor, bool unshuffle, opd_tensor **out) {
  opd__shuffle_geom g;
  int rc = opd__pixel_shuffle_meta(self, factor, unshuffle, &g);
  opd_tensor *x = NULL, *y = NULL;
  if (!rc) rc = opd__alloc_output(&g.spec, opd_tensor_device(self), &y);
  if (!rc && self->numel > 0) {
    rc = opd__cpu_contiguous(self, &x);
    if (!rc) {
      shuffle_ctx c = {.g = &g,
                       .es = opd_dtype_size(g.spec.dtype),
                       .in = opd_tensor_data(x),
                       .out = opd_tensor_data(y)};
      int64_t plane = self->numel / (g.batch * g.channels);
      opd__parallel_for(0, g.batch * g.channels,
                        plane >= OPD_GRAIN_ELEMENTWISE ? 1 : OPD_GRAIN_ELEMENTWISE / plane,
                        shuffle_task, &c);
    }
  }
  if (x) opd_tensor_release(x);
  if (rc && y) opd_tensor_release(y);
  if (!rc) *out = y;
  return rc;
}

int opd__cpu_pixel_shuffle(const opd_kernel_ctx *ctx, opd_tensor *self, int64_t upscale_factor,
                           opd_tensor **out) {
  (void)ctx;
  return shuffle(self, upscale_factor, false, out);
}

int opd__cpu_pixel_unshuffle(const opd_kernel_ctx *ctx, opd_tensor *self, int64_t downscale_factor,
                             opd_tensor **out) {
  (void)ctx;
  return shuffle(self, downscale_factor, true, out);
}

typedef struct channel_ctx {
  int64_t groups, per_group, plane; /* plane: the elements of one channel */
  size_t es;
  const char *in;
  char *out;
} channel_ctx;

/* tasks: (batch, output channel) pairs */
static void channel_task(void *ctx, int64_t begin, int64_t end) {
  const channel_ctx *c = ctx;
  int64_t channels = c->groups * c->per_group;
  for (int64_t t = begin; t < end; t++) {
    int64_t n = t / channels, oc = t % channels, j = oc / c->groups, i = oc % c->groups;
    int64_t ic = i * c->per_group + j;
    memcpy(c->out + (size_t)(t * c->plane) * c->es,
           c->in + (size_t)((n * channels + ic) * c->plane) * c->es, (size_t)c->plane * c->es);
  }
}

int opd__cpu_channel_shuffle(const opd_kernel_ctx *ctx, opd_tensor *self, int64_t groups,
                             opd_tensor **out) {
  (void)ctx;
  opd_out_spec spec;
  int rc = opd__channel_shuffle_meta(self, groups, &spec);
  if (!rc && self->numel == 0) return opd__channel_shuffle_alias(self, out);
  opd_tensor *x = NULL, *y = NULL;
  if (!rc) rc = opd__alloc_output(&spec, opd_tensor_device(self), &y);
  if (!rc) {
    rc = opd__cpu_contiguous(self, &x);
    if (!rc) {
      const int64_t *s = opd_tensor_sizes(self);
      channel_ctx c = {.groups = groups,
                       .per_group = s[1] / groups,
                       .plane = self->numel / (s[0] * s[1]),
                       .es = opd_dtype_size(spec.dtype),
                       .in = opd_tensor_data(x),
                       .out = opd_tensor_data(y)};
      opd__parallel_for(0, s[0] * s[1],
                        c.plane >= OPD_GRAIN_ELEMENTWISE ? 1 : OPD_GRAIN_ELEMENTWISE / c.plane,
                        channel_task, &c);
    }
  }
  if (x) opd_tensor_release(x);
  if (rc && y) opd_tensor_release(y);
  if (!rc) *out = y;
  return rc;
}

/* pixel_shuffle_meta.h: pixel_shuffle's, pixel_unshuffle's and channel_shuffle's checks
 * (PyTorch 1.13's messages) and geometry (kernels/meta/pixel_shuffle_meta.c), shared by their Meta
 * and CPU kernels (kernels/cpu/pixel_shuffle.c). */
#ifndef OPD_KERNELS_PIXEL_SHUFFLE_META_H
#define OPD_KERNELS_PIXEL_SHUFFLE_META_H

#include "src/kernel_util.h"

/* Both see the input as (batch, C, r, r, H, W) against the output (batch, C, H, r, W, r)
 * (shuffle) or the reverse (unshuffle), batch the product of the leading dims. */
typedef struct opd__shuffle_geom {
  bool unshuffle;
  int64_t batch, channels, factor, height, width; /* the shuffled side's H and W */
  opd_out_spec spec;
} opd__shuffle_geom;

int opd__pixel_shuffle_meta(opd_tensor *self, int64_t factor, bool unshuffle, opd__shuffle_geom *g);

/* channel_shuffle: (N, C, ...) with C divisible by groups; the result has self's shape. */
int opd__channel_shuffle_meta(opd_tensor *self, int64_t groups, opd_out_spec *spec);
/* An empty input's result: PyTorch returns a view of it (its alias). */
int opd__channel_shuffle_alias(opd_tensor *self, opd_tensor **out);

#endif

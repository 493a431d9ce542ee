/* grid_sampler.c: grid_sampler_2d's checks (PyTorch 1.13's messages), its Meta kernel and
 * its CPU kernel.
 *
 * [Note: grid_sampler_2d on the CPU]
 * out[n, c, h, w] samples input[n, c] at grid[n, h, w] = (x, y) in [-1, 1] (beyond it too),
 * as ATen/native/GridSampler.h computes it: the coordinate is unnormalized to pixels
 * (align_corners: -1 and 1 are the corner pixels' centers, else the image's edges), then
 * clipped to the image (border) or reflected into it and clipped (reflection). Bilinear
 * weights the four neighbours, a neighbour outside the image reading 0; nearest reads the
 * pixel at the coordinate rounded half to even (0 outside); bicubic weights 4 x 4
 * neighbours with the cubic convolution (A = -0.75) of the unnormalized coordinate, each
 * neighbour clipped or reflected by the padding mode. Coordinates are computed in the
 * dtype (float for float32), the weighted sums in double and rounded once. An
 * interpolation or padding mode PyTorch does not define is an error.
 */
#include <math.h>
#include <string.h>

#include "conv_impl.h"
#include "opd/checked.h"
#include "src/parallel.h"

enum { MODE_BILINEAR, MODE_NEAREST, MODE_BICUBIC };
enum { PAD_ZEROS, PAD_BORDER, PAD_REFLECTION };

typedef struct grid_geom {
  int64_t n, c, h, w, oh, ow;
  int64_t mode, padding;
  bool align_corners;
  opd_out_spec spec;
} grid_geom;

static int grid_meta(opd_tensor *input, opd_tensor *grid, int64_t mode, int64_t padding,
                     bool align_corners, grid_geom *g) {
  memset(g, 0, sizeof *g);
  char a[256], b[256];
  const int64_t *is = opd_tensor_sizes(input), *gs = opd_tensor_sizes(grid);
  opd_device device;
  int rc = opd__common_device((opd_tensor *const[]){input, grid}, 2, &device);
  if (rc) return rc;
  if (input->ndim < 1 || grid->ndim < 1 || is[0] != gs[0])
    return opd_error(OPD_EINVAL,
                     "grid_sampler(): expected grid and input to have same batch size, but got "
                     "input with sizes %s and grid with sizes %s",
                     opd__format_sizes(is, input->ndim, a, sizeof a),
                     opd__format_sizes(gs, grid->ndim, b, sizeof b));
  if (gs[grid->ndim - 1] != input->ndim - 2)
    return opd_error(OPD_EINVAL,
                     "grid_sampler(): expected grid to have size %d in last dimension, but got "
                     "grid with sizes %s",
                     input->ndim - 2, opd__format_sizes(gs, grid->ndim, b, sizeof b));
  for (int i = 2; i < input->ndim; i++)
    if (is[i] <= 0)
      return opd_error(OPD_EINVAL,
                       "grid_sampler(): expected input to have non-empty spatial dimensions, but "
                       "input has sizes %s with dimension %d being empty",
                       opd__format_sizes(is, input->ndim, a, sizeof a), i);
  if (input->ndim != 4 || grid->ndim != 4)
    return opd_error(OPD_EINVAL,
                     "grid_sampler(): expected 4D input and grid with same number of dimensions, "
                     "but got input with sizes %s and grid with sizes %s",
                     opd__format_sizes(is, input->ndim, a, sizeof a),
                     opd__format_sizes(gs, grid->ndim, b, sizeof b));
  if (mode < MODE_BILINEAR || mode > MODE_BICUBIC)
    return opd_error(OPD_EINVAL, "grid_sampler(): unknown interpolation_mode %lld",
                     (long long)mode);
  if (padding < PAD_ZEROS || padding > PAD_REFLECTION)
    return opd_error(OPD_EINVAL, "grid_sampler(): unknown padding_mode %lld", (long long)padding);
  opd_dtype dt = opd_tensor_dtype(input), gdt = opd_tensor_dtype(grid);
  if (dt != OPD_FLOAT32 && dt != OPD_FLOAT64)
    return opd_error(OPD_EINVAL, "grid_sampler_2d_cpu not implemented for %s",
                     opd_dtype_c10_name(dt));
  if (gdt != dt)
    return opd_error(OPD_EINVAL, "expected scalar type %s but found %s", opd_dtype_c10_name(dt),
                     opd_dtype_c10_name(gdt));
  g->n = is[0], g->c = is[1], g->h = is[2], g->w = is[3], g->oh = gs[1], g->ow = gs[2];
  g->mode = mode;
  g->padding = padding;
  g->align_corners = align_corners;
  g->spec.ndim = 4;
  g->spec.dtype = dt;
  int64_t sizes[4] = {g->n, g->c, g->oh, g->ow}, numel;
  memcpy(g->spec.sizes, sizes, sizeof sizes);
  return opd_ckd_numel(sizes, 4, &numel, "grid_sampler_2d output");
}

int opd__meta_grid_sampler_2d(const opd_kernel_ctx *ctx, opd_tensor *input, opd_tensor *grid,
                              int64_t interpolation_mode, int64_t padding_mode, bool align_corners,
                              opd_tensor **out) {
  (void)ctx;
  grid_geom g;
  int rc = grid_meta(input, grid, interpolation_mode, padding_mode, align_corners, &g);
  return rc ? rc : opd__alloc_output(&g.spec, opd_tensor_device(input), out);
}

/* ---- the CPU kernel ---- */

typedef struct grid_ctx {
  const grid_geom *g;
  bool f32; /* coordinates in float */
  const char *in, *grid;
  char *out;
} grid_ctx;

static inline double ld(const grid_ctx *c, const char *p, int64_t i) {
  return c->f32 ? ((const float *)p)[i] : ((const double *)p)[i];
}

/* x rounded to the coordinates' precision */
static inline double R(const grid_ctx *c, double x) {
  return c->f32 ? (double)(float)x : x;
}

static double unnormalize(const grid_ctx *c, double coord, int64_t size) {
  if (c->g->align_corners) return R(c, R(c, R(c, coord + 1) / 2) * (double)(size - 1));
  return R(c, R(c, R(c, R(c, coord + 1) * (double)size) - 1) / 2);
}

static double clip(const grid_ctx *c, double x, int64_t size) {
  (void)c;
  double hi = (double)(size - 1);
  return x < 0 ? 0 : x > hi ? hi : x; /* NaN passes through, as std::min/max leave it */
}

static double reflect(const grid_ctx *c, double in, int64_t twice_low, int64_t twice_high) {
  if (twice_low == twice_high) return 0;
  double min = (double)twice_low / 2, span = (double)(twice_high - twice_low) / 2;
  in = R(c, fabs(R(c, in - min)));
  double extra = R(c, fmod(in, span));
  int64_t flips = (int64_t)floor(R(c, in / span));
  return flips % 2 == 0 ? R(c, extra + min) : R(c, R(c, span - extra) + min);
}

/* compute_coordinates: the padding mode applied to a pixel coordinate */
static double pad_coordinate(const grid_ctx *c, double x, int64_t size) {
  if (c->g->padding == PAD_BORDER) return clip(c, x, size);
  if (c->g->padding == PAD_REFLECTION) {
    x = c->g->align_corners ? reflect(c, x, 0, 2 * (size - 1)) : reflect(c, x, -1, 2 * size - 1);
    return clip(c, x, size);
  }
  return x;
}

static inline double pixel(const grid_ctx *c, const char *plane, int64_t y, int64_t x) {
  const grid_geom *g = c->g;
  return y >= 0 && y < g->h && x >= 0 && x < g->w ? ld(c, plane, y * g->w + x) : 0.0;
}

/* get_value_bounded: a bicubic neighbour, its coordinates padded */
static double bounded(const grid_ctx *c, const char *plane, double x, double y) {
  x = pad_coordinate(c, x, c->g->w);
  y = pad_coordinate(c, y, c->g->h);
  /* an int64 conversion of NaN or of a huge value is undefined in C: such a point reads 0 */
  if (!(x > -2 && x < (double)c->g->w && y > -2 && y < (double)c->g->h)) return 0.0;
  return pixel(c, plane, (int64_t)y, (int64_t)x);
}

static void cubic_coefficients(double t, double coeffs[4]) {
  const double A = -0.75;
  double x1 = t, x2 = 1 - t;
  coeffs[0] = ((A * (x1 + 1) - 5 * A) * (x1 + 1) + 8 * A) * (x1 + 1) - 4 * A;
  coeffs[1] = ((A + 2) * x1 - (A + 3)) * x1 * x1 + 1;
  coeffs[2] = ((A + 2) * x2 - (A + 3)) * x2 * x2 + 1;
  coeffs[3] = ((A * (x2 + 1) - 5 * A) * (x2 + 1) + 8 * A) * (x2 + 1) - 4 * A;
}

/* One output point of one plane. */
static double sample(const grid_ctx *c, const char *plane, double gx, double gy) {
  const grid_geom *g = c->g;
  if (g->mode == MODE_BICUBIC) {
    double x = unnormalize(c, gx, g->w), y = unnormalize(c, gy, g->h);
    double x0 = floor(x), y0 = floor(y), cx[4], cy[4], v = 0;
    cubic_coefficients(R(c, x - x0), cx);
    cubic_coefficients(R(c, y - y0), cy);
    for (int i = 0; i < 4; i++) {
      double row = 0;
      for (int j = 0; j < 4; j++) row += bounded(c, plane, x0 - 1 + j, y0 - 1 + i) * cx[j];
      v += row * cy[i];
    }
    return v;
  }
  double x = pad_coordinate(c, unnormalize(c, gx, g->w), g->w);
  double y = pad_coordinate(c, unnormalize(c, gy, g->h), g->h);
  /* outside every neighbour (NaN included): 0, before any int64 conversion */
  if (!(x > -2 && x < (double)g->w + 1 && y > -2 && y < (double)g->h + 1)) return 0.0;
  if (g->mode == MODE_NEAREST) return pixel(c, plane, (int64_t)nearbyint(y), (int64_t)nearbyint(x));
  double x0 = floor(x), y0 = floor(y);
  double tx = R(c, x - x0), ty = R(c, y - y0);
  int64_t ix = (int64_t)x0, iy = (int64_t)y0;
  return pixel(c, plane, iy, ix) * (1 - tx) * (1 - ty) +
         pixel(c, plane, iy, ix + 1) * tx * (1 - ty) + pixel(c, plane, iy + 1, ix) * (1 - tx) * ty +
         pixel(c, plane, iy + 1, ix + 1) * tx * ty;
}

static void grid_task(void *ctx, int64_t begin, int64_t end) {
  const grid_ctx *c = ctx;
  const grid_geom *g = c->g;
  int64_t es = c->f32 ? 4 : 8, points = g->oh * g->ow;
  for (int64_t nc = begin; nc < end; nc++) {
    int64_t n = nc / g->c;
    const char *plane = c->in + nc * g->h * g->w * es;
    const char *gp = c->grid + n * points * 2 * es;
    char *op = c->out + nc * points * es;
    for (int64_t p = 0; p < points; p++) {
      double v = sample(c, plane, ld(c, gp, 2 * p), ld(c, gp, 2 * p + 1));
      if (c->f32)
        ((float *)op)[p] = (float)v;
      else
        ((double *)op)[p] = v;
    }
  }
}

int opd__cpu_grid_sampler_2d(const opd_kernel_ctx *ctx, opd_tensor *input, opd_tensor *grid,
                             int64_t interpolation_mode, int64_t padding_mode, bool align_corners,
                             opd_tensor **out) {
  (void)ctx;
  grid_geom g;
  int rc = grid_meta(input, grid, interpolation_mode, padding_mode, align_corners, &g);
  opd_tensor *x = NULL, *gr = NULL, *y = NULL;
  if (!rc) rc = opd__alloc_output(&g.spec, opd_tensor_device(input), &y);
  if (!rc && g.n * g.c > 0 && g.oh * g.ow > 0) {
    rc = opd__cpu_contiguous(input, &x);
    if (!rc) rc = opd__cpu_contiguous(grid, &gr);
    if (!rc) {
      grid_ctx c = {.g = &g,
                    .f32 = g.spec.dtype == OPD_FLOAT32,
                    .in = opd_tensor_data(x),
                    .grid = opd_tensor_data(gr),
                    .out = opd_tensor_data(y)};
      int64_t work = g.oh * g.ow * (g.mode == MODE_BICUBIC ? 16 : 4);
      opd__parallel_for(0, g.n * g.c,
                        work >= OPD_GRAIN_ELEMENTWISE ? 1 : OPD_GRAIN_ELEMENTWISE / (work + 1),
                        grid_task, &c);
    }
  }
  if (x) opd_tensor_release(x);
  if (gr) opd_tensor_release(gr);
  if (rc && y) opd_tensor_release(y);
  if (!rc) *out = y;
  return rc;
}

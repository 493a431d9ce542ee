/* upsample.c: the CPU kernels of upsample_nearest{1,2,3}d,
 * upsample_{linear1d,bilinear2d,trilinear3d} and upsample_bicubic2d, their .vec overloads and
 * backward operators;
 * arguments, checks and shapes in kernels/meta/upsample_meta.c.
 *
 * [Note: Upsampling on the CPU]
 * Each plane (batch x channel) is independent and planes are split over the intra-op pool.
 * Along each spatial dim an output position reads one input position (nearest), two
 * (linear) or four (cubic) with weights, computed once per dim as PyTorch 1.13 does
 * (ATen/native/UpSample.h):
 *  - nearest_idx: the same position when the sizes are equal, o / 2 when the output is twice
 *    the input, else floor(o * s) with s = 1 / scale when a positive scale is given, else
 *    in / out, in float, clamped to the last position;
 *  - linear: the same position when the sizes are equal; else the source position is
 *    o * (in - 1) / (out - 1) with align_corners, else (o + 0.5) * s - 0.5 clamped at 0 (s
 *    as above), in float for float32 and bfloat16 and in double for float64; it reads its
 *    floor and the next position (the last one twice), weighted by the fraction;
 *  - cubic: linear's source position without the clamp at 0; the four positions around its
 *    floor (clamped to the input) weighted by the cubic convolution (A = -0.75) of the
 *    fraction.
 * A given scale can point past the input (PyTorch then reads outside it); here positions are
 * clamped to the input. Values are combined in double and rounded once; the backward
 * operators add each output's gradient, times its weights, into the positions it read, in
 * the output's order.
 */
#include <math.h>
#include <string.h>

#include "conv_impl.h"
#include "meta/upsample_meta.h"
#include "opd/memory.h"
#include "src/parallel.h"

/* Per spatial dim and output position: the input positions read and their weights
 * (nearest: one, linear: two, cubic: four). */
#define MAX_TAPS 4
typedef struct taps {
  int64_t *i[MAX_TAPS];
  double *w[MAX_TAPS];
} taps;

static void nearest_taps(const opd__upsample_geom *g, int d, taps *t) {
  int64_t in = g->in[d], out = g->out[d];
  float s = g->has_scale[d] && g->scale[d] > 0 ? (float)(1.0 / g->scale[d]) : (float)in / out;
  for (int64_t o = 0; o < out; o++) {
    int64_t i;
    if (out == in)
      i = o;
    else if (out == 2 * in)
      i = o >> 1;
    else
      i = (int64_t)floorf((float)o * s);
    if (i > in - 1) i = in - 1;
    t->i[0][o] = i;
    t->w[0][o] = 1.0;
  }
}

/* The step of linear and cubic source positions along dim d: (in - 1) / (out - 1) with
 * align_corners, else 1 / scale when a positive scale is given, else in / out (in float when
 * as_float). */
static double source_scale(const opd__upsample_geom *g, int d, bool as_float) {
  int64_t in = g->in[d], out = g->out[d];
  if (g->align_corners)
    return out > 1 ? (as_float ? (double)((float)(in - 1) / (float)(out - 1))
                               : (double)(in - 1) / (double)(out - 1))
                   : 0.0;
  if (g->has_scale[d] && g->scale[d] > 0)
    return as_float ? (double)(float)(1.0 / g->scale[d]) : 1.0 / g->scale[d];
  return as_float ? (double)((float)in / (float)out) : (double)in / (double)out;
}

static void linear_taps(const opd__upsample_geom *g, int d, bool as_float, taps *t) {
  int64_t in = g->in[d], out = g->out[d];
  double scale = source_scale(g, d, as_float);
  for (int64_t o = 0; o < out; o++) {
    if (out == in) {
      t->i[0][o] = t->i[1][o] = o;
      t->w[0][o] = 1.0;
      t->w[1][o] = 0.0;
      continue;
    }
    double real;
    if (g->align_corners) {
      real = as_float ? (double)((float)scale * (float)o) : scale * (double)o;
    } else {
      real = as_float ? (double)((float)scale * ((float)o + 0.5f) - 0.5f)
                      : scale * ((double)o + 0.5) - 0.5;
      if (real < 0) real = 0;
    }
    int64_t i0 = (int64_t)real;
    if (i0 > in - 1) i0 = in - 1;
    double l1 = as_float ? (double)((float)real - (float)i0) : real - (double)i0;
    if (l1 > 1) l1 = 1;
    t->i[0][o] = i0;
    t->i[1][o] = i0 + (i0 < in - 1 ? 1 : 0);
    t->w[1][o] = l1;
    t->w[0][o] = as_float ? (double)(1.0f - (float)l1) : 1.0 - l1;
  }
}

/* The scale of linear_taps, the source position without the clamp at 0, and the cubic
 * convolution's weights (A = -0.75) of the four positions around its floor, clamped to the
 * input. */
static void cubic_taps(const opd__upsample_geom *g, int d, bool as_float, taps *t) {
  int64_t in = g->in[d], out = g->out[d];
  double scale = source_scale(g, d, as_float);
  const double A = -0.75;
  for (int64_t o = 0; o < out; o++) {
    double real = g->align_corners
                      ? (as_float ? (double)((float)scale * (float)o) : scale * (double)o)
                  : as_float ? (double)((float)scale * ((float)o + 0.5f) - 0.5f)
                             : scale * ((double)o + 0.5) - 0.5;
    double f = floor(real), x1 = as_float ? (double)((float)real - (float)f) : real - f,
           x2 = 1 - x1;
    /* a position past the int64 range (from a tiny scale) is clamped before converting */
    int64_t base = f < -2.0 ? -2 : f > (double)in ? in : (int64_t)f;
    t->w[0][o] = ((A * (x1 + 1) - 5 * A) * (x1 + 1) + 8 * A) * (x1 + 1) - 4 * A;
    t->w[1][o] = ((A + 2) * x1 - (A + 3)) * x1 * x1 + 1;
    t->w[2][o] = ((A + 2) * x2 - (A + 3)) * x2 * x2 + 1;
    t->w[3][o] = ((A * (x2 + 1) - 5 * A) * (x2 + 1) + 8 * A) * (x2 + 1) - 4 * A;
    for (int k = 0; k < 4; k++) {
      int64_t i = base - 1 + k;
      t->i[k][o] = i < 0 ? 0 : i > in - 1 ? in - 1 : i;
    }
  }
}

typedef struct upsample_ctx {
  const opd__upsample_geom *g;
  opd_dtype dt;
  int64_t es;
  const char *src; /* forward: the input; backward: grad_output */
  char *dst;       /* forward: the output; backward: grad_input */
  taps t[3];
} upsample_ctx;

static void upsample_plane(const upsample_ctx *c, int64_t p) {
  const opd__upsample_geom *g = c->g;
  int64_t in_n = g->in[0] * g->in[1] * g->in[2], out_n = g->out[0] * g->out[1] * g->out[2];
  bool backward = g->form == OPD__UPSAMPLE_BACKWARD;
  const char *src = c->src + p * (backward ? out_n : in_n) * c->es;
  char *dst = c->dst + p * (backward ? in_n : out_n) * c->es;
  const taps *td = &c->t[0], *th = &c->t[1], *tw = &c->t[2];
  if (backward) memset(dst, 0, (size_t)(in_n * c->es));
  int64_t o = 0;
  for (int64_t od = 0; od < g->out[0]; od++)
    for (int64_t oh = 0; oh < g->out[1]; oh++)
      for (int64_t ow = 0; ow < g->out[2]; ow++, o++) {
        int taps_per_dim = g->mode == OPD__UPSAMPLE_NEAREST  ? 1
                           : g->mode == OPD__UPSAMPLE_LINEAR ? 2
                                                             : 4;
        int64_t id[MAX_TAPS] = {0}, ih[MAX_TAPS], iw[MAX_TAPS];
        double wd[MAX_TAPS] = {1.0}, wh[MAX_TAPS], ww[MAX_TAPS];
        for (int k = 0; k < taps_per_dim; k++) {
          ih[k] = th->i[k][oh], iw[k] = tw->i[k][ow];
          wh[k] = th->w[k][oh], ww[k] = tw->w[k][ow];
          if (g->sdims == 3) id[k] = td->i[k][od], wd[k] = td->w[k][od];
        }
        /* the depth dim of a 1-d or 2-d operator is one position of weight 1 */
        int taps_d = g->sdims == 3 ? taps_per_dim : 1;
        if (backward) {
          double gv = opd__cpu_load(src, c->dt, o);
          for (int a = 0; a < taps_d; a++)
            for (int b = 0; b < taps_per_dim; b++)
              for (int e = 0; e < taps_per_dim; e++) {
                int64_t i = (id[a] * g->in[1] + ih[b]) * g->in[2] + iw[e];
                opd__cpu_store(dst, c->dt, i,
                               opd__cpu_load(dst, c->dt, i) + wd[a] * wh[b] * ww[e] * gv);
              }
          continue;
        }
        double v = 0;
        for (int a = 0; a < taps_d; a++) {
          double vh = 0;
          for (int b = 0; b < taps_per_dim; b++) {
            double vw = 0;
            for (int e = 0; e < taps_per_dim; e++)
              vw +=
                  opd__cpu_load(src, c->dt, (id[a] * g->in[1] + ih[b]) * g->in[2] + iw[e]) * ww[e];
            vh += vw * wh[b];
          }
          v += vh * wd[a];
        }
        opd__cpu_store(dst, c->dt, o, v);
      }
}

static void upsample_task(void *ctx, int64_t begin, int64_t end) {
  for (int64_t p = begin; p < end; p++) upsample_plane(ctx, p);
}

static int upsample_run(const opd__upsample_geom *g, opd_tensor *src, opd_tensor *dst) {
  upsample_ctx c = {.g = g, .dt = g->spec.dtype, .es = (int64_t)opd_dtype_size(g->spec.dtype)};
  int64_t n = g->out[0] + g->out[1] + g->out[2];
  int64_t *idx = NULL;
  double *w = NULL;
  opd_tensor *x = NULL;
  int rc = opd__cpu_contiguous(src, &x);
  if (!rc) {
    idx = opd__malloc((size_t)(MAX_TAPS * n) * sizeof *idx);
    w = opd__malloc((size_t)(MAX_TAPS * n) * sizeof *w);
    if (!idx || !w) rc = opd_error(OPD_ENOMEM, "upsample: out of memory");
  }
  if (!rc) {
    int64_t off = 0;
    for (int d = 0; d < 3; d++) {
      taps *t = &c.t[d];
      for (int k = 0; k < MAX_TAPS; k++) {
        t->i[k] = idx + k * n + off;
        t->w[k] = w + k * n + off;
      }
      off += g->out[d];
      bool as_float = g->spec.dtype != OPD_FLOAT64;
      if (g->mode == OPD__UPSAMPLE_NEAREST)
        nearest_taps(g, d, t);
      else if (g->mode == OPD__UPSAMPLE_LINEAR)
        linear_taps(g, d, as_float, t);
      else
        cubic_taps(g, d, as_float, t);
    }
    c.src = opd_tensor_data(x);
    c.dst = opd_tensor_data(dst);
    int64_t work = g->in[0] * g->in[1] * g->in[2] + g->out[0] * g->out[1] * g->out[2];
    opd__parallel_for(0, g->planes,
                      work >= OPD_GRAIN_ELEMENTWISE ? 1 : OPD_GRAIN_ELEMENTWISE / (work + 1),
                      upsample_task, &c);
  }
  opd__free(idx);
  opd__free(w);
  if (x) opd_tensor_release(x);
  return rc;
}

static int cpu_upsample(opd_stack *stack, opd__upsample_mode mode, int sdims,
                        opd__upsample_form form, const char *name) {
  opd__upsample_geom g;
  opd_tensor *src, *out = NULL;
  int rc = opd__upsample_args(stack, mode, sdims, form, name, &g, &src);
  if (!rc) rc = opd__alloc_output(&g.spec, g.device, &out);
  if (!rc && g.planes > 0) rc = upsample_run(&g, src, out);
  if (src) opd_tensor_release(src);
  if (rc && out) opd_tensor_release(out);
  return rc ? rc : opd_stack_push(stack, opd_iv_tensor_steal(out));
}

#define DEFINE_UPSAMPLE_CPU(NAME, MODE, D)                                      \
  int opd__cpu_##NAME(const opd_kernel_ctx *ctx, opd_stack *stack) {            \
    (void)ctx;                                                                  \
    return cpu_upsample(stack, MODE, D, OPD__UPSAMPLE_PLAIN, #NAME);            \
  }                                                                             \
  int opd__cpu_##NAME##_vec(const opd_kernel_ctx *ctx, opd_stack *stack) {      \
    (void)ctx;                                                                  \
    return cpu_upsample(stack, MODE, D, OPD__UPSAMPLE_VEC, #NAME);              \
  }                                                                             \
  int opd__cpu_##NAME##_backward(const opd_kernel_ctx *ctx, opd_stack *stack) { \
    (void)ctx;                                                                  \
    return cpu_upsample(stack, MODE, D, OPD__UPSAMPLE_BACKWARD, #NAME);         \
  }
DEFINE_UPSAMPLE_CPU(upsample_nearest1d, OPD__UPSAMPLE_NEAREST, 1)
DEFINE_UPSAMPLE_CPU(upsample_nearest2d, OPD__UPSAMPLE_NEAREST, 2)
DEFINE_UPSAMPLE_CPU(upsample_nearest3d, OPD__UPSAMPLE_NEAREST, 3)
DEFINE_UPSAMPLE_CPU(upsample_linear1d, OPD__UPSAMPLE_LINEAR, 1)
DEFINE_UPSAMPLE_CPU(upsample_bilinear2d, OPD__UPSAMPLE_LINEAR, 2)
DEFINE_UPSAMPLE_CPU(upsample_trilinear3d, OPD__UPSAMPLE_LINEAR, 3)
DEFINE_UPSAMPLE_CPU(upsample_bicubic2d, OPD__UPSAMPLE_CUBIC, 2)

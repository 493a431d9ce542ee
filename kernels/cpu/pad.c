/* pad.c: the CPU kernels of reflection_pad{1,2,3}d and replication_pad{1,2,3}d and their
 * backward operators (checks and shapes in kernels/meta/pool_meta.c).
 *
 * [Note: Padding as a gather]
 * Each padded dimension gets a map from output position to input position, computed with
 * PyTorch 1.13's formulas (negative padding crops first: positions are shifted by
 * max(0, -pad_left) in the input and max(0, pad_left) in the output). Every output element
 * of a plane is then the input element at its mapped position in each dimension; the
 * backward operators add each grad_output element into the grad_input position it was read
 * from. A map entry outside the input (PyTorch's formulas reach one for a right padding past
 * the cropped input) is refused rather than read.
 */
#include <string.h>

#include "conv_impl.h"
#include "meta/pool_meta.h"
#include "opd/memory.h"
#include "src/parallel.h"

/* Fills map[0 .. out) for one dimension; false if an entry falls outside [0, in). */
static bool make_map(opd__pad_mode mode, int64_t in, int64_t pad_l, int64_t out, int64_t *map) {
  int64_t i_start = pad_l < 0 ? -pad_l : 0, o_start = pad_l > 0 ? pad_l : 0;
  for (int64_t j = 0; j < out; j++) {
    int64_t ip;
    if (j < pad_l)
      ip = mode == OPD__PAD_REFLECT ? pad_l * 2 - j : pad_l;
    else if (j < in + pad_l)
      ip = j;
    else
      ip = mode == OPD__PAD_REFLECT ? (in + pad_l - 1) * 2 - j : in + pad_l - 1;
    ip = ip - o_start + i_start;
    if (ip < 0 || ip >= in) return false;
    map[j] = ip;
  }
  return true;
}

typedef struct pad_ctx {
  const opd__pool_geom *g;
  bool dbl, backward;
  const char *src;
  char *dst;
  const int64_t *map[3];
} pad_ctx;

static void pad_task(void *ctx, int64_t begin, int64_t end) {
  pad_ctx *c = ctx;
  const opd__pool_geom *g = c->g;
  int64_t in_n = g->in[0] * g->in[1] * g->in[2], out_n = g->out[0] * g->out[1] * g->out[2];
  for (int64_t p = begin; p < end; p++) {
    int64_t o = 0;
    for (int64_t od = 0; od < g->out[0]; od++)
      for (int64_t oh = 0; oh < g->out[1]; oh++) {
        int64_t row = (c->map[0][od] * g->in[1] + c->map[1][oh]) * g->in[2];
        const int64_t *mw = c->map[2];
        if (c->dbl) {
          const double *in = (const double *)c->src;
          double *out = (double *)c->dst;
          if (c->backward)
            for (int64_t ow = 0; ow < g->out[2]; ow++, o++)
              out[p * in_n + row + mw[ow]] += in[p * out_n + o];
          else
            for (int64_t ow = 0; ow < g->out[2]; ow++, o++)
              out[p * out_n + o] = in[p * in_n + row + mw[ow]];
        } else {
          const float *in = (const float *)c->src;
          float *out = (float *)c->dst;
          if (c->backward)
            for (int64_t ow = 0; ow < g->out[2]; ow++, o++)
              out[p * in_n + row + mw[ow]] += in[p * out_n + o];
          else
            for (int64_t ow = 0; ow < g->out[2]; ow++, o++)
              out[p * out_n + o] = in[p * in_n + row + mw[ow]];
        }
      }
  }
}

/* Forward (src the input, dst the output) or backward (src grad_output, dst grad_input). */
static int pad_run(const opd__pool_geom *g, opd__pad_mode mode, bool backward, opd_tensor *src,
                   opd_out_spec *dst_spec, opd_tensor **out, const char *op) {
  opd_dtype t = g->spec.dtype;
  if (t != OPD_FLOAT32 && t != OPD_FLOAT64)
    return opd_error(OPD_EINVAL, "\"%s\" not implemented for '%s'", op, opd_dtype_c10_name(t));
  int64_t total = g->out[0] + g->out[1] + g->out[2];
  int64_t *maps = opd__malloc((size_t)(total > 0 ? total : 1) * sizeof *maps);
  if (!maps) return opd_error(OPD_ENOMEM, "%s: out of memory", op);
  pad_ctx c = {.g = g, .dbl = t == OPD_FLOAT64, .backward = backward};
  int64_t *m = maps;
  int rc = 0;
  for (int d = 0; d < 3 && !rc; d++) {
    if (!make_map(mode, g->in[d], g->pad[d], g->out[d], m))
      rc = opd_error(OPD_EINVAL, "%s: padding (%lld, %lld) reaches outside the input of size %lld",
                     op, (long long)g->pad[d], (long long)g->k[d], (long long)g->in[d]);
    c.map[d] = m;
    m += g->out[d];
  }
  opd_tensor *x = NULL, *y = NULL;
  if (!rc) rc = opd__cpu_contiguous(src, &x);
  if (!rc) rc = opd__alloc_output(dst_spec, g->device, &y);
  if (!rc) {
    c.src = opd_tensor_data(x);
    c.dst = opd_tensor_data(y);
    if (backward && y->numel > 0) memset(c.dst, 0, (size_t)y->numel * opd_dtype_size(t));
    int64_t plane = g->out[0] * g->out[1] * g->out[2] + 1;
    opd__parallel_for(0, g->planes,
                      plane >= OPD_GRAIN_ELEMENTWISE ? 1 : OPD_GRAIN_ELEMENTWISE / plane, pad_task,
                      &c);
  }
  opd__free(maps);
  if (x) opd_tensor_release(x);
  if (rc && y) opd_tensor_release(y);
  if (!rc) *out = y;
  return rc;
}

static int pad_forward(opd_tensor *self, opd_int_list padding, int sdims, opd__pad_mode mode,
                       opd_tensor **out, const char *op) {
  opd__pool_geom g;
  int rc = opd__pad_meta(self, padding, sdims, mode, &g);
  return rc ? rc : pad_run(&g, mode, false, self, &g.spec, out, op);
}

static int pad_backward(opd_tensor *grad_output, opd_tensor *self, opd_int_list padding, int sdims,
                        opd__pad_mode mode, opd_tensor **out, const char *op) {
  opd__pool_geom g;
  int rc = opd__pad_backward_meta(grad_output, self, padding, sdims, mode, &g);
  if (rc) return rc;
  opd_out_spec spec = {.ndim = self->ndim, .dtype = g.spec.dtype};
  memcpy(spec.sizes, opd_tensor_sizes(self), (size_t)self->ndim * sizeof *spec.sizes);
  return pad_run(&g, mode, true, grad_output, &spec, out, op);
}

#define DEFINE_PAD_CPU(MODE, mode_enum, D, name)                                               \
  int opd__cpu_##MODE##_pad##D##d(const opd_kernel_ctx *ctx, opd_tensor *self,                 \
                                  opd_int_list padding, opd_tensor **out) {                    \
    (void)ctx;                                                                                 \
    return pad_forward(self, padding, D, mode_enum, out, name);                                \
  }                                                                                            \
  int opd__cpu_##MODE##_pad##D##d_backward(const opd_kernel_ctx *ctx, opd_tensor *grad_output, \
                                           opd_tensor *self, opd_int_list padding,             \
                                           opd_tensor **out) {                                 \
    (void)ctx;                                                                                 \
    return pad_backward(grad_output, self, padding, D, mode_enum, out, name "_backward");      \
  }
DEFINE_PAD_CPU(reflection, OPD__PAD_REFLECT, 1, "reflection_pad1d")
DEFINE_PAD_CPU(reflection, OPD__PAD_REFLECT, 2, "reflection_pad2d")
DEFINE_PAD_CPU(reflection, OPD__PAD_REFLECT, 3, "reflection_pad3d")
DEFINE_PAD_CPU(replication, OPD__PAD_REPLICATE, 1, "replication_pad1d")
DEFINE_PAD_CPU(replication, OPD__PAD_REPLICATE, 2, "replication_pad2d_cpu")
DEFINE_PAD_CPU(replication, OPD__PAD_REPLICATE, 3, "replication_pad3d_cpu")

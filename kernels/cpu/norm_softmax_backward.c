/* norm_softmax_backward.c: CPU kernels of _softmax_backward_data and
 * _log_softmax_backward_data, in double ([Note: Normalization and losses in double]).
 * With y the forward's output and g the incoming gradient along the K elements of dim:
 *   softmax:      grad_input = y * (g - sum(g * y))
 *   log_softmax:  grad_input = g - exp(y) * sum(g)
 */
#include <math.h>

#include "meta/norm_meta.h"
#include "norm_buffers.h"
#include "opd/memory.h"
#include "src/parallel.h"

enum { GRAIN = 32768 };

typedef struct sbw_ctx {
  const double *g, *y;
  double *r;
  int64_t k, inner;
  bool is_log;
} sbw_ctx;

static void sbw_task(void *ctx, int64_t begin, int64_t end) {
  const sbw_ctx *c = ctx;
  for (int64_t o = begin; o < end; o++)
    for (int64_t i = 0; i < c->inner; i++) {
      int64_t base = o * c->k * c->inner + i;
      double s = 0;
      for (int64_t j = 0; j < c->k; j++) {
        int64_t at = base + j * c->inner;
        s += c->is_log ? c->g[at] : c->g[at] * c->y[at];
      }
      for (int64_t j = 0; j < c->k; j++) {
        int64_t at = base + j * c->inner;
        c->r[at] = c->is_log ? c->g[at] - exp(c->y[at]) * s : c->y[at] * (c->g[at] - s);
      }
    }
}

static int softmax_backward(opd_tensor *grad, opd_tensor *output, int64_t dim,
                            opd_dtype input_dtype, bool is_log, opd_tensor **out) {
  opd_out_spec spec;
  int64_t d;
  int rc = opd__softmax_backward_meta(grad, output, dim, input_dtype, &d, &spec);
  if (rc) return rc;
  if (!opd_dtype_is_floating(spec.dtype))
    return opd_error(OPD_EINVAL, "\"%s\" not implemented for '%s'",
                     is_log ? "log_softmax_backward_lastdim" : "softmax_backward_lastdim",
                     opd_dtype_c10_name(spec.dtype));
  opd_tensor *r = NULL;
  double *g = NULL, *y = NULL, *res = NULL;
  if (!(rc = opd__norm_result(&spec, &r)) && !(rc = opd__norm_load(grad, &g)) &&
      !(rc = opd__norm_load(output, &y)) && !(rc = opd__norm_zeros(r->numel, &res))) {
    sbw_ctx c = {.g = g, .y = y, .r = res, .k = 1, .inner = 1, .is_log = is_log};
    int64_t outer = 1;
    for (int i = 0; i < spec.ndim; i++)
      if (i < d)
        outer *= spec.sizes[i];
      else if (i == d)
        c.k = spec.sizes[i];
      else
        c.inner *= spec.sizes[i];
    int64_t per = c.k * c.inner;
    if (r->numel > 0) opd__parallel_for(0, outer, per >= GRAIN ? 1 : GRAIN / per, sbw_task, &c);
    opd__norm_store(r, res);
  }
  opd__free(g);
  opd__free(y);
  opd__free(res);
  if (rc && r) opd_tensor_release(r);
  if (!rc) *out = r;
  return rc;
}

OPD__DEFINE_SOFTMAX_BACKWARD_KERNELS(cpu, softmax_backward)

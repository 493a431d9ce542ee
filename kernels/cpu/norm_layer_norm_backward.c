/* norm_layer_norm_backward.c: the CPU kernel of native_layer_norm_backward (boxed: grad_input,
 * grad_weight, grad_bias, each only where output_mask asks), in double ([Note:
 * Normalization and losses in double]). Over the M rows of N normalized elements, with
 * x_hat = (x - mean) * rstd and h = grad_out * weight (grad_out without a weight):
 *   grad_input  = rstd / N * (N h - sum(h) - x_hat sum(h x_hat))   (per row)
 *   grad_weight = sum over rows of grad_out * x_hat
 *   grad_bias   = sum over rows of grad_out
 */
#include "meta/norm_meta.h"
#include "norm_buffers.h"
#include "opd/memory.h"
#include "src/parallel.h"

enum { GRAIN = 32768 };

typedef struct lnb_ctx {
  const double *g, *x, *mean, *rstd, *w;
  double *gi;
  int64_t n;
} lnb_ctx;

static void grad_input_task(void *ctx, int64_t begin, int64_t end) {
  const lnb_ctx *c = ctx;
  int64_t n = c->n;
  for (int64_t r = begin; r < end; r++) {
    const double *g = c->g + r * n, *x = c->x + r * n;
    double mean = c->mean[r], rstd = c->rstd[r], sh = 0, shx = 0;
    for (int64_t j = 0; j < n; j++) {
      double h = c->w ? g[j] * c->w[j] : g[j];
      sh += h;
      shx += h * (x[j] - mean) * rstd;
    }
    double *gi = c->gi + r * n;
    for (int64_t j = 0; j < n; j++) {
      double h = c->w ? g[j] * c->w[j] : g[j];
      gi[j] = rstd / (double)n * ((double)n * h - sh - (x[j] - mean) * rstd * shx);
    }
  }
}

static int layer_norm_backward(opd_ivalue *args, opd_tensor **res) {
  opd__norm_backward_args a = {0};
  int rc = opd__layer_norm_backward_outputs(args, &a, res);
  if (rc) return rc;
  int64_t m = a.rows, n = a.cols;
  double *b[8] = {NULL};
  if (!(rc = opd__norm_load(a.grad, &b[0])) && !(rc = opd__norm_load(a.input, &b[1])) &&
      !(rc = opd__norm_load(a.mean, &b[2])) && !(rc = opd__norm_load(a.rstd, &b[3])) &&
      !(rc = opd__norm_load(a.weight, &b[4])) && !(rc = opd__norm_zeros(m * n, &b[5])) &&
      !(rc = opd__norm_zeros(n, &b[6])) && !(rc = opd__norm_zeros(n, &b[7]))) {
    lnb_ctx c = {.g = b[0], .x = b[1], .mean = b[2], .rstd = b[3], .w = b[4], .gi = b[5], .n = n};
    if (a.mask[0]) {
      if (m > 0 && n > 0) opd__parallel_for(0, m, n >= GRAIN ? 1 : GRAIN / n, grad_input_task, &c);
      opd__norm_store(res[0], b[5]);
    }
    if (a.mask[1] || a.mask[2]) {
      for (int64_t r = 0; r < m; r++)
        for (int64_t j = 0; j < n; j++) {
          double g = c.g[r * n + j];
          b[6][j] += g * (c.x[r * n + j] - c.mean[r]) * c.rstd[r];
          b[7][j] += g;
        }
      if (a.mask[1]) opd__norm_store(res[1], b[6]);
      if (a.mask[2]) opd__norm_store(res[2], b[7]);
    }
  }
  for (int k = 0; k < 8; k++) opd__free(b[k]);
  return rc;
}

int opd__cpu_native_layer_norm_backward(const opd_kernel_ctx *ctx, opd_stack *stack) {
  (void)ctx;
  return opd__boxed_run(stack, 8, 3, true, layer_norm_backward);
}

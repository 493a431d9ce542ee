/* norm_group_norm.c: the CPU kernels of native_group_norm and native_group_norm_backward
 * (boxed, three results each), in double ([Note: Normalization and losses in double]). The
 * input is N x C x HxW in row-major order; each of the N * group rows of D = C / group channels
 * times HxW elements is normalized as layer norm normalizes its rows (biased variance,
 * rstd = 1 / sqrt(var + eps)), then channel c is scaled by weight[c] and shifted by bias[c].
 * mean and rstd are (N, group). The backward pass is layer norm's with the incoming gradient
 * times weight[c] as h (norm_layer_norm_backward.c):
 *   grad_input  = rstd / M * (M h - sum(h) - x_hat sum(h x_hat))   per row of M = D HxW
 *   grad_weight[c] = sum over n and HxW of g x_hat,  grad_bias[c] = sum of g.
 */
#include <math.h>

#include "meta/norm_meta.h"
#include "norm_buffers.h"
#include "opd/memory.h"

static int group_norm(opd_ivalue *args, opd_tensor **res) {
  opd__group_norm_args a = {0};
  opd_out_spec specs[3] = {{0}};
  int rc = opd__group_norm_args_read(args, &a);
  if (!rc) rc = opd__group_norm_meta(&a, specs);
  for (int k = 0; k < 3 && !rc; k++) rc = opd__norm_result(&specs[k], &res[k]);
  if (rc) return rc;
  int64_t rows = a.n * a.group, d = a.c / a.group, m = d * a.hxw;
  double *b[6] = {NULL};
  if (!(rc = opd__norm_load(a.input, &b[0])) && !(rc = opd__norm_load(a.weight, &b[1])) &&
      !(rc = opd__norm_load(a.bias, &b[2])) && !(rc = opd__norm_zeros(rows, &b[3])) &&
      !(rc = opd__norm_zeros(rows, &b[4])) && !(rc = opd__norm_zeros(a.input->numel, &b[5]))) {
    const double *x = b[0], *w = b[1], *bias = b[2];
    double *mean = b[3], *rstd = b[4], *y = b[5];
    for (int64_t r = 0; r < rows; r++) {
      const double *xr = x + r * m;
      double s = 0, sq = 0;
      for (int64_t j = 0; j < m; j++) s += xr[j];
      mean[r] = m > 0 ? s / (double)m : 0;
      for (int64_t j = 0; j < m; j++) sq += (xr[j] - mean[r]) * (xr[j] - mean[r]);
      rstd[r] = 1 / sqrt(sq / (double)m + a.eps);
      for (int64_t j = 0; j < m; j++) {
        int64_t c = (r % a.group) * d + j / a.hxw;
        y[r * m + j] = (xr[j] - mean[r]) * rstd[r] * (w ? w[c] : 1) + (bias ? bias[c] : 0);
      }
    }
    opd__norm_store(res[0], y);
    opd__norm_store(res[1], mean);
    opd__norm_store(res[2], rstd);
  }
  for (int k = 0; k < 6; k++) opd__free(b[k]);
  return rc;
}

int opd__cpu_native_group_norm(const opd_kernel_ctx *ctx, opd_stack *stack) {
  (void)ctx;
  return opd__boxed_run(stack, 8, 3, true, group_norm);
}

static int group_norm_backward(opd_ivalue *args, opd_tensor **res) {
  opd__group_norm_backward_args a = {0};
  opd_out_spec specs[3] = {{0}};
  int rc = opd__group_norm_backward_args_read(args, &a);
  if (!rc) rc = opd__group_norm_backward_meta(&a, specs);
  for (int k = 0; k < 3 && !rc; k++)
    if (a.mask[k]) rc = opd__norm_result(&specs[k], &res[k]);
  if (rc) return rc;
  const opd__group_norm_args *g = &a.gn;
  int64_t rows = g->n * g->group, d = g->c / g->group, m = d * g->hxw;
  double *b[8] = {NULL};
  if (!(rc = opd__norm_load(a.grad, &b[0])) && !(rc = opd__norm_load(g->input, &b[1])) &&
      !(rc = opd__norm_load(g->weight, &b[2])) && !(rc = opd__norm_load(a.mean, &b[3])) &&
      !(rc = opd__norm_load(a.rstd, &b[4])) && !(rc = opd__norm_zeros(g->input->numel, &b[5])) &&
      !(rc = opd__norm_zeros(g->c, &b[6])) && !(rc = opd__norm_zeros(g->c, &b[7]))) {
    const double *dy = b[0], *x = b[1], *w = b[2], *mean = b[3], *rstd = b[4];
    double *gi = b[5], *gw = b[6], *gb = b[7];
    for (int64_t r = 0; r < rows; r++) {
      double sh = 0, shx = 0;
      for (int64_t j = 0; j < m; j++) {
        int64_t c = (r % g->group) * d + j / g->hxw, at = r * m + j;
        double h = dy[at] * (w ? w[c] : 1), xh = (x[at] - mean[r]) * rstd[r];
        sh += h;
        shx += h * xh;
        gw[c] += dy[at] * xh;
        gb[c] += dy[at];
      }
      for (int64_t j = 0; j < m; j++) {
        int64_t c = (r % g->group) * d + j / g->hxw, at = r * m + j;
        double h = dy[at] * (w ? w[c] : 1), xh = (x[at] - mean[r]) * rstd[r];
        gi[at] = rstd[r] / (double)m * ((double)m * h - sh - xh * shx);
      }
    }
    if (a.mask[0]) opd__norm_store(res[0], gi);
    if (a.mask[1]) opd__norm_store(res[1], gw);
    if (a.mask[2]) opd__norm_store(res[2], gb);
  }
  for (int k = 0; k < 8; k++) opd__free(b[k]);
  return rc;
}

int opd__cpu_native_group_norm_backward(const opd_kernel_ctx *ctx, opd_stack *stack) {
  (void)ctx;
  return opd__boxed_run(stack, 10, 3, true, group_norm_backward);
}

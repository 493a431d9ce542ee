/* norm_batch_norm.c: the CPU kernels of native_batch_norm and native_batch_norm_backward
 * (boxed, three results each), in double ([Note: Normalization and losses in double]).
 *
 * [Note: Batch norm on the CPU]
 * The input (N, C, *) is gathered as N x C x S (S the product of the trailing sizes); each
 * channel's n = N S elements are normalized with their mean and biased variance (training)
 * or with running_mean and running_var (evaluation): y = (x - mean) * invstd * weight + bias,
 * invstd = 1 / sqrt(var + eps). Training returns the mean and invstd of each channel (save_mean,
 * save_invstd; empty in evaluation, as PyTorch's CPU kernel) and updates running_mean and
 * running_var in place when given: r = (1 - momentum) r + momentum v, with the unbiased variance
 * var n / (n - 1) for running_var. The backward pass, with g the incoming gradient, takes the
 * same mean and invstd (save_* in training, running_* in evaluation):
 *   grad_input  = (g - sum(g) / n - (x - mean) invstd^2 sum(g (x - mean)) / n) invstd weight
 *                 in training, g invstd weight in evaluation;
 *   grad_weight = sum(g (x - mean)) invstd,  grad_bias = sum(g).
 */
#include <math.h>

#include "meta/norm_meta.h"
#include "norm_buffers.h"
#include "opd/memory.h"
#include "reduce_walk.h"
#include "src/parallel.h"

enum { GRAIN = 32768 };

/* Writes the C doubles of v into the 1-d tensor t (in place; any floating dtype, strided). */
static void store_vector(opd_tensor *t, const double *v, int64_t c) {
  opd_dtype dt = opd_tensor_dtype(t);
  size_t esz = opd_dtype_size(dt);
  int64_t stride = t->ndim > 0 ? opd_tensor_strides(t)[0] : 0;
  char *p = opd_tensor_data(t);
  for (int64_t k = 0; k < c; k++) opd__store_float(p + k * stride * (int64_t)esz, dt, v[k]);
  opd_tensor_bump_version(t);
}

typedef struct bn_ctx {
  const double *x, *w, *b, *mean, *invstd;
  double *y;
  int64_t n, c, s;
} bn_ctx;

/* y for channels [begin, end) */
static void normalize_task(void *ctx, int64_t begin, int64_t end) {
  const bn_ctx *k = ctx;
  for (int64_t ch = begin; ch < end; ch++) {
    double scale = k->invstd[ch] * (k->w ? k->w[ch] : 1), shift = k->b ? k->b[ch] : 0;
    for (int64_t i = 0; i < k->n; i++) {
      int64_t at = (i * k->c + ch) * k->s;
      for (int64_t j = 0; j < k->s; j++)
        k->y[at + j] = (k->x[at + j] - k->mean[ch]) * scale + shift;
    }
  }
}

static int batch_norm(opd_ivalue *args, opd_tensor **res) {
  opd__batch_norm_args a = {0};
  opd_out_spec specs[3] = {{0}};
  int rc = opd__batch_norm_args_read(args, &a);
  if (!rc) rc = opd__batch_norm_meta(&a, specs);
  for (int k = 0; k < 3 && !rc; k++) rc = opd__norm_result(&specs[k], &res[k]);
  if (rc) return rc;
  int64_t n = a.batch, c = a.channels, s = a.spatial, count = n * s;
  double *b[7] = {NULL};
  if (!(rc = opd__norm_load(a.input, &b[0])) && !(rc = opd__norm_load(a.weight, &b[1])) &&
      !(rc = opd__norm_load(a.bias, &b[2])) && !(rc = opd__norm_zeros(c, &b[3])) &&
      !(rc = opd__norm_zeros(c, &b[4])) && !(rc = opd__norm_zeros(a.input->numel, &b[5])) &&
      !(rc = opd__norm_zeros(c, &b[6]))) {
    double *mean = b[3], *invstd = b[4], *var = b[6];
    const double *x = b[0];
    if (a.training) {
      for (int64_t ch = 0; ch < c; ch++) {
        double sum = 0, sq = 0;
        for (int64_t i = 0; i < n; i++)
          for (int64_t j = 0; j < s; j++) sum += x[(i * c + ch) * s + j];
        mean[ch] = sum / (double)count;
        for (int64_t i = 0; i < n; i++)
          for (int64_t j = 0; j < s; j++) {
            double d = x[(i * c + ch) * s + j] - mean[ch];
            sq += d * d;
          }
        var[ch] = sq;
        invstd[ch] = 1 / sqrt(sq / (double)count + a.eps);
      }
    } else {
      double *rm = NULL, *rv = NULL;
      if (!(rc = opd__norm_load(a.running_mean, &rm)) && !(rc = opd__norm_load(a.running_var, &rv)))
        for (int64_t ch = 0; ch < c; ch++) {
          mean[ch] = rm[ch];
          invstd[ch] = 1 / sqrt(rv[ch] + a.eps);
        }
      opd__free(rm);
      opd__free(rv);
    }
    if (!rc) {
      bn_ctx k = {.x = x,
                  .w = b[1],
                  .b = b[2],
                  .mean = mean,
                  .invstd = invstd,
                  .y = b[5],
                  .n = n,
                  .c = c,
                  .s = s};
      int64_t per = count > 0 ? count : 1;
      if (a.input->numel > 0)
        opd__parallel_for(0, c, per >= GRAIN ? 1 : GRAIN / per, normalize_task, &k);
      opd__norm_store(res[0], b[5]);
      if (a.training) {
        opd__norm_store(res[1], mean);
        opd__norm_store(res[2], invstd);
        if (a.running_mean || a.running_var) {
          double *rm = NULL, *rv = NULL;
          if (!(rc = opd__norm_load(a.running_mean, &rm)) &&
              !(rc = opd__norm_load(a.running_var, &rv))) {
            double m = a.momentum;
            if (rm) {
              for (int64_t ch = 0; ch < c; ch++) rm[ch] = (1 - m) * rm[ch] + m * mean[ch];
              store_vector(a.running_mean, rm, c);
            }
            if (rv) {
              for (int64_t ch = 0; ch < c; ch++)
                rv[ch] = (1 - m) * rv[ch] + m * var[ch] / (double)(count - 1);
              store_vector(a.running_var, rv, c);
            }
          }
          opd__free(rm);
          opd__free(rv);
        }
      }
    }
  }
  for (int k = 0; k < 7; k++) opd__free(b[k]);
  return rc;
}

int opd__cpu_native_batch_norm(const opd_kernel_ctx *ctx, opd_stack *stack) {
  (void)ctx;
  opd_tensor *res[3] = {NULL, NULL, NULL};
  int rc = batch_norm(opd_stack_last(stack, 8), res);
  opd_stack_drop(stack, 8);
  return opd__push_optional_results(stack, res, 3, rc);
}

static int batch_norm_backward(opd_ivalue *args, opd_tensor **res) {
  opd__batch_norm_backward_args a = {0};
  opd_out_spec specs[3] = {{0}};
  int rc = opd__batch_norm_backward_args_read(args, &a);
  if (!rc) rc = opd__batch_norm_backward_meta(&a, specs);
  for (int k = 0; k < 3 && !rc; k++)
    if (a.mask[k]) rc = opd__norm_result(&specs[k], &res[k]);
  if (rc) return rc;
  int64_t n = a.bn.batch, c = a.bn.channels, s = a.bn.spatial, count = n * s;
  double *b[8] = {NULL};
  opd_tensor *mean_t = a.bn.training ? a.save_mean : a.bn.running_mean;
  opd_tensor *stat_t = a.bn.training ? a.save_invstd : a.bn.running_var;
  if (!(rc = opd__norm_load(a.grad, &b[0])) && !(rc = opd__norm_load(a.bn.input, &b[1])) &&
      !(rc = opd__norm_load(a.bn.weight, &b[2])) && !(rc = opd__norm_load(mean_t, &b[3])) &&
      !(rc = opd__norm_load(stat_t, &b[4])) && !(rc = opd__norm_zeros(a.bn.input->numel, &b[5])) &&
      !(rc = opd__norm_zeros(c, &b[6])) && !(rc = opd__norm_zeros(c, &b[7]))) {
    const double *g = b[0], *x = b[1], *w = b[2], *mean = b[3];
    double *invstd = b[4], *gi = b[5], *gw = b[6], *gb = b[7];
    if (!a.bn.training)
      for (int64_t ch = 0; ch < c; ch++) invstd[ch] = 1 / sqrt(invstd[ch] + a.bn.eps);
    for (int64_t ch = 0; ch < c; ch++) {
      double sum = 0, dot = 0;
      for (int64_t i = 0; i < n; i++)
        for (int64_t j = 0; j < s; j++) {
          int64_t at = (i * c + ch) * s + j;
          sum += g[at];
          dot += g[at] * (x[at] - mean[ch]);
        }
      gw[ch] = dot * invstd[ch];
      gb[ch] = sum;
      double scale = invstd[ch] * (w ? w[ch] : 1);
      double proj = dot * invstd[ch] * invstd[ch] / (double)count, gmean = sum / (double)count;
      for (int64_t i = 0; i < n; i++)
        for (int64_t j = 0; j < s; j++) {
          int64_t at = (i * c + ch) * s + j;
          gi[at] =
              a.bn.training ? (g[at] - gmean - (x[at] - mean[ch]) * proj) * scale : g[at] * scale;
        }
    }
    if (a.mask[0]) opd__norm_store(res[0], gi);
    if (a.mask[1]) opd__norm_store(res[1], gw);
    if (a.mask[2]) opd__norm_store(res[2], gb);
  }
  for (int k = 0; k < 8; k++) opd__free(b[k]);
  return rc;
}

int opd__cpu_native_batch_norm_backward(const opd_kernel_ctx *ctx, opd_stack *stack) {
  (void)ctx;
  opd_tensor *res[3] = {NULL, NULL, NULL};
  int rc = batch_norm_backward(opd_stack_last(stack, 10), res);
  opd_stack_drop(stack, 10);
  return opd__push_optional_results(stack, res, 3, rc);
}

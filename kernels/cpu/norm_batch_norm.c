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
 *
 * [Note: Batch norm on contiguous float]
 * A contiguous or channels-last float32 input (and grad_out of the same layout) is read in
 * place, with no double copy, into a contiguous result: the
 * statistics of each channel (sum x, then sum (x - mean)^2; in the backward pass sum g and
 * sum g (x - mean)) are accumulated in double, in eight partial sums per channel so that the
 * loop vectorizes, split over channels; then one pass over the (n, channel) planes, split
 * over planes, writes each element as (x - mean) * scale + shift computed in double, so the
 * results round as the buffered path's do. The statistics of a 2-d (S = 1) or channels-last
 * input are taken by rows (all channels of one position at once, a channel range per thread);
 * its normalize pass reads each plane with stride C. Other layouts and dtypes take the
 * buffered path.
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

enum { NOT_PLAIN, PLAIN_CONTIGUOUS, PLAIN_CHANNELS_LAST };

/* How a float32 tensor t (N, C, *) lies for the in-place path: contiguous, channels-last
 * (dense, C innermost), or neither (NOT_PLAIN; also for other dtypes). */
static int plain_layout(const opd_tensor *t) {
  if (!t || opd_tensor_dtype(t) != OPD_FLOAT32) return NOT_PLAIN;
  if (opd_tensor_is_contiguous(t)) return PLAIN_CONTIGUOUS;
  const int64_t *size = opd_tensor_sizes(t), *stride = opd_tensor_strides(t);
  int nd = t->ndim;
  if (nd < 3 || stride[1] != 1 || stride[nd - 1] != size[1]) return NOT_PLAIN;
  for (int d = nd - 2; d >= 2; d--)
    if (stride[d] != stride[d + 1] * size[d + 1]) return NOT_PLAIN;
  return stride[0] == stride[2] * size[2] ? PLAIN_CHANNELS_LAST : NOT_PLAIN;
}

/* The planes (i, ch) of a contiguous or channels-last (N, C, S) float input (x, and g
 * of the same layout) and of a contiguous result y, with per-channel doubles. */
typedef struct bn_plain {
  const float *x, *g; /* g: grad_out (backward) or NULL */
  float *y;           /* output or grad_input, contiguous */
  const double *mean, *scale, *shift, *proj, *gmean;
  double *sum, *sq; /* per-channel results of the statistics pass */
  int64_t n, c, s;
  int64_t xc, xj; /* x's strides of channel and position: S and 1, or 1 and C */
} bn_plain;

/* k for input of the layout (contiguous or channels-last). */
static void plain_set_layout(bn_plain *k, int layout) {
  bool last = layout == PLAIN_CHANNELS_LAST && k->s > 1;
  k->xc = last ? 1 : k->s;
  k->xj = last ? k->c : 1;
}

/* The statistics pass of k: over rows of C channels (S = 1 or channels-last, all positions
 * N S as rows), else over planes. */
static void plain_stats(bn_plain *k, opd__range_fn fn) {
  bn_plain rows = *k;
  if (k->xj != 1) {
    rows.n = k->n * k->s;
    rows.s = 1;
  }
  int64_t per = k->n * k->s > 0 ? k->n * k->s : 1;
  opd__parallel_for(0, k->c, per >= GRAIN ? 1 : GRAIN / per, fn, &rows);
}

/* Sums over v[0, len), each in eight partial doubles: of v, of (v - m)^2, of g (v - m). */
static double plane_sum(const float *v, int64_t len) {
  double acc[8] = {0};
  int64_t j = 0;
  for (; j + 8 <= len; j += 8)
    for (int k = 0; k < 8; k++) acc[k] += v[j + k];
  for (; j < len; j++) acc[0] += v[j];
  return ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
}

static double plane_dev2(const float *v, int64_t len, double m) {
  double acc[8] = {0};
  int64_t j = 0;
  for (; j + 8 <= len; j += 8)
    for (int k = 0; k < 8; k++) {
      double d = v[j + k] - m;
      acc[k] += d * d;
    }
  for (; j < len; j++) acc[0] += (v[j] - m) * (v[j] - m);
  return ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
}

static double plane_dot(const float *g, const float *v, int64_t len, double m) {
  double acc[8] = {0};
  int64_t j = 0;
  for (; j + 8 <= len; j += 8)
    for (int k = 0; k < 8; k++) acc[k] += g[j + k] * (v[j + k] - m);
  for (; j < len; j++) acc[0] += g[j] * (v[j] - m);
  return ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
}

/* Training statistics of channels [begin, end): sum[ch] = sum x, sq[ch] = sum (x - mean)^2. */
static void plain_stats_task(void *ctx, int64_t begin, int64_t end) {
  const bn_plain *k = ctx;
  double count = (double)(k->n * k->s);
  if (k->s == 1) {
    for (int64_t ch = begin; ch < end; ch++) k->sum[ch] = k->sq[ch] = 0;
    for (int64_t i = 0; i < k->n; i++)
      for (int64_t ch = begin; ch < end; ch++) k->sum[ch] += k->x[i * k->c + ch];
    for (int64_t i = 0; i < k->n; i++)
      for (int64_t ch = begin; ch < end; ch++) {
        double d = k->x[i * k->c + ch] - k->sum[ch] / count;
        k->sq[ch] += d * d;
      }
    return;
  }
  for (int64_t ch = begin; ch < end; ch++) {
    double sum = 0, sq = 0;
    for (int64_t i = 0; i < k->n; i++) sum += plane_sum(k->x + (i * k->c + ch) * k->s, k->s);
    double m = sum / count;
    for (int64_t i = 0; i < k->n; i++) sq += plane_dev2(k->x + (i * k->c + ch) * k->s, k->s, m);
    k->sum[ch] = sum;
    k->sq[ch] = sq;
  }
}

/* Backward sums of channels [begin, end): sum[ch] = sum g, sq[ch] = sum g (x - mean). */
static void plain_grad_sums_task(void *ctx, int64_t begin, int64_t end) {
  const bn_plain *k = ctx;
  if (k->s == 1) {
    for (int64_t ch = begin; ch < end; ch++) k->sum[ch] = k->sq[ch] = 0;
    for (int64_t i = 0; i < k->n; i++)
      for (int64_t ch = begin; ch < end; ch++) {
        int64_t at = i * k->c + ch;
        k->sum[ch] += k->g[at];
        k->sq[ch] += k->g[at] * (k->x[at] - k->mean[ch]);
      }
    return;
  }
  for (int64_t ch = begin; ch < end; ch++) {
    double sum = 0, dot = 0;
    for (int64_t i = 0; i < k->n; i++) {
      int64_t at = (i * k->c + ch) * k->s;
      sum += plane_sum(k->g + at, k->s);
      dot += plane_dot(k->g + at, k->x + at, k->s, k->mean[ch]);
    }
    k->sum[ch] = sum;
    k->sq[ch] = dot;
  }
}

/* y of planes [begin, end): (x - mean) * scale + shift. */
static void plain_normalize_task(void *ctx, int64_t begin, int64_t end) {
  const bn_plain *k = ctx;
  for (int64_t p = begin; p < end; p++) {
    int64_t ch = p % k->c, xj = k->xj;
    double m = k->mean[ch], scale = k->scale[ch], shift = k->shift[ch];
    const float *x = k->x + (p - ch) * k->s + ch * k->xc;
    float *y = k->y + p * k->s;
    if (xj == 1)
      for (int64_t j = 0; j < k->s; j++) y[j] = (float)((x[j] - m) * scale + shift);
    else
      for (int64_t j = 0; j < k->s; j++) y[j] = (float)((x[j * xj] - m) * scale + shift);
  }
}

/* grad_input of planes [begin, end): (g - gmean - (x - mean) proj) scale, or g scale in
 * evaluation (proj and gmean NULL). */
static void plain_grad_input_task(void *ctx, int64_t begin, int64_t end) {
  const bn_plain *k = ctx;
  for (int64_t p = begin; p < end; p++) {
    int64_t ch = p % k->c, xj = k->xj, at = (p - ch) * k->s + ch * k->xc;
    double scale = k->scale[ch];
    const float *g = k->g + at, *x = k->x + at;
    float *gi = k->y + p * k->s;
    if (k->proj) {
      double m = k->mean[ch], proj = k->proj[ch], gm = k->gmean[ch];
      for (int64_t j = 0; j < k->s; j++)
        gi[j] = (float)((g[j * xj] - gm - (x[j * xj] - m) * proj) * scale);
    } else {
      for (int64_t j = 0; j < k->s; j++) gi[j] = (float)(g[j * xj] * scale);
    }
  }
}

/* Runs fn over the N * C planes of k, split so that each chunk holds about GRAIN elements. */
static void for_planes(bn_plain *k, opd__range_fn fn) {
  int64_t s = k->s > 0 ? k->s : 1;
  opd__parallel_for(0, k->n * k->c, s >= GRAIN ? 1 : GRAIN / s, fn, k);
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

/* Updates running_mean and running_var (when given) from a training pass's mean and sum of
 * squared deviations var of each channel. */
static int update_running(const opd__batch_norm_args *a, const double *mean, const double *var) {
  int64_t c = a->channels, count = a->batch * a->spatial;
  if (!a->running_mean && !a->running_var) return 0;
  double *rm = NULL, *rv = NULL;
  int rc;
  if (!(rc = opd__norm_load(a->running_mean, &rm)) && !(rc = opd__norm_load(a->running_var, &rv))) {
    double m = a->momentum;
    if (rm) {
      for (int64_t ch = 0; ch < c; ch++) rm[ch] = (1 - m) * rm[ch] + m * mean[ch];
      store_vector(a->running_mean, rm, c);
    }
    if (rv) {
      for (int64_t ch = 0; ch < c; ch++)
        rv[ch] = (1 - m) * rv[ch] + m * var[ch] / (double)(count - 1);
      store_vector(a->running_var, rv, c);
    }
  }
  opd__free(rm);
  opd__free(rv);
  return rc;
}

/* native_batch_norm of a contiguous float32 input ([Note: Batch norm on contiguous float]). */
static int batch_norm_plain(const opd__batch_norm_args *a, int layout, opd_tensor **res) {
  int64_t n = a->batch, c = a->channels, s = a->spatial, count = n * s;
  double *b[7] = {NULL}; /* weight, bias, mean, invstd, var, scale, shift */
  int rc;
  if (!(rc = opd__norm_load(a->weight, &b[0])) && !(rc = opd__norm_load(a->bias, &b[1])) &&
      !(rc = opd__norm_zeros(c, &b[2])) && !(rc = opd__norm_zeros(c, &b[3])) &&
      !(rc = opd__norm_zeros(c, &b[4])) && !(rc = opd__norm_zeros(c, &b[5])) &&
      !(rc = opd__norm_zeros(c, &b[6]))) {
    double *mean = b[2], *invstd = b[3], *var = b[4], *scale = b[5], *shift = b[6];
    bn_plain k = {.x = opd_tensor_data(a->input),
                  .y = opd_tensor_data(res[0]),
                  .mean = mean,
                  .scale = scale,
                  .shift = shift,
                  .sum = mean,
                  .sq = var,
                  .n = n,
                  .c = c,
                  .s = s};
    plain_set_layout(&k, layout);
    if (a->training) {
      plain_stats(&k, plain_stats_task);
      for (int64_t ch = 0; ch < c; ch++) {
        mean[ch] /= (double)count;
        invstd[ch] = 1 / sqrt(var[ch] / (double)count + a->eps);
      }
    } else {
      double *rv = NULL;
      opd__free(b[2]);
      b[2] = NULL;
      if (!(rc = opd__norm_load(a->running_mean, &b[2])) &&
          !(rc = opd__norm_load(a->running_var, &rv)))
        for (int64_t ch = 0; ch < c; ch++) invstd[ch] = 1 / sqrt(rv[ch] + a->eps);
      opd__free(rv);
      k.mean = mean = b[2];
    }
    if (!rc) {
      for (int64_t ch = 0; ch < c; ch++) {
        scale[ch] = invstd[ch] * (b[0] ? b[0][ch] : 1);
        shift[ch] = b[1] ? b[1][ch] : 0;
      }
      if (a->input->numel > 0) for_planes(&k, plain_normalize_task);
      if (a->training) {
        opd__norm_store(res[1], mean);
        opd__norm_store(res[2], invstd);
        rc = update_running(a, mean, var);
      }
    }
  }
  for (int j = 0; j < 7; j++) opd__free(b[j]);
  return rc;
}

static int batch_norm(opd_ivalue *args, opd_tensor **res) {
  opd__batch_norm_args a = {0};
  int rc = opd__batch_norm_outputs(args, &a, res);
  if (rc) return rc;
  int layout = plain_layout(a.input);
  if (layout != NOT_PLAIN && plain_layout(res[0]) == PLAIN_CONTIGUOUS)
    return batch_norm_plain(&a, layout, res);
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
        rc = update_running(&a, mean, var);
      }
    }
  }
  for (int k = 0; k < 7; k++) opd__free(b[k]);
  return rc;
}

int opd__cpu_native_batch_norm(const opd_kernel_ctx *ctx, opd_stack *stack) {
  (void)ctx;
  return opd__boxed_run(stack, 8, 3, true, batch_norm);
}

/* native_batch_norm_backward of a contiguous float32 input and grad_out ([Note: Batch norm on
 * contiguous float]). */
static int batch_norm_backward_plain(const opd__batch_norm_backward_args *a, int layout,
                                     opd_tensor **res) {
  int64_t n = a->bn.batch, c = a->bn.channels, s = a->bn.spatial, count = n * s;
  double *b[8] = {NULL}; /* weight, mean, invstd, sum g, sum g (x - mean), scale, proj, gmean */
  opd_tensor *mean_t = a->bn.training ? a->save_mean : a->bn.running_mean;
  opd_tensor *stat_t = a->bn.training ? a->save_invstd : a->bn.running_var;
  int rc;
  if (!(rc = opd__norm_load(a->bn.weight, &b[0])) && !(rc = opd__norm_load(mean_t, &b[1])) &&
      !(rc = opd__norm_load(stat_t, &b[2])) && !(rc = opd__norm_zeros(c, &b[3])) &&
      !(rc = opd__norm_zeros(c, &b[4])) && !(rc = opd__norm_zeros(c, &b[5])) &&
      !(rc = opd__norm_zeros(c, &b[6])) && !(rc = opd__norm_zeros(c, &b[7]))) {
    double *invstd = b[2], *gb = b[3], *dot = b[4], *scale = b[5], *proj = b[6], *gmean = b[7];
    if (!a->bn.training)
      for (int64_t ch = 0; ch < c; ch++) invstd[ch] = 1 / sqrt(invstd[ch] + a->bn.eps);
    bn_plain k = {.x = opd_tensor_data(a->bn.input),
                  .g = opd_tensor_data(a->grad),
                  .y = a->mask[0] ? opd_tensor_data(res[0]) : NULL,
                  .mean = b[1],
                  .scale = scale,
                  .proj = a->bn.training ? proj : NULL,
                  .gmean = gmean,
                  .sum = gb,
                  .sq = dot,
                  .n = n,
                  .c = c,
                  .s = s};
    plain_set_layout(&k, layout);
    plain_stats(&k, plain_grad_sums_task);
    for (int64_t ch = 0; ch < c; ch++) {
      scale[ch] = invstd[ch] * (b[0] ? b[0][ch] : 1);
      proj[ch] = dot[ch] * invstd[ch] * invstd[ch] / (double)count;
      gmean[ch] = gb[ch] / (double)count;
      dot[ch] *= invstd[ch]; /* grad_weight */
    }
    if (a->mask[0] && a->bn.input->numel > 0) for_planes(&k, plain_grad_input_task);
    if (a->mask[1]) opd__norm_store(res[1], dot);
    if (a->mask[2]) opd__norm_store(res[2], gb);
  }
  for (int j = 0; j < 8; j++) opd__free(b[j]);
  return rc;
}

static int batch_norm_backward(opd_ivalue *args, opd_tensor **res) {
  opd__batch_norm_backward_args a = {0};
  int rc = opd__batch_norm_backward_outputs(args, &a, res);
  if (rc) return rc;
  int layout = plain_layout(a.bn.input);
  if (layout != NOT_PLAIN && plain_layout(a.grad) == layout &&
      (!a.mask[0] || plain_layout(res[0]) == PLAIN_CONTIGUOUS))
    return batch_norm_backward_plain(&a, layout, res);
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
  return opd__boxed_run(stack, 10, 3, true, batch_norm_backward);
}

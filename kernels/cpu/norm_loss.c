/* norm_loss.c: CPU kernels of the losses and their backward operators: mse_loss,
 * smooth_l1_loss, huber_loss, binary_cross_entropy, nll_loss_forward and nll_loss2d_forward
 * (boxed: output and total_weight) and their backward operators, in double ([Note: Normalization
 * and losses in double]). */
#include <math.h>

#include "meta/elementwise_meta.h"
#include "meta/norm_meta.h"
#include "meta/reduce_meta.h"
#include "norm_buffers.h"
#include "opd/memory.h"

/* The buffers of a kernel, freed together. */
enum { MAX_BUFS = 5 };
typedef struct bufs {
  double *b[MAX_BUFS];
} bufs;

static void bufs_free(bufs *b) {
  for (int i = 0; i < MAX_BUFS; i++) opd__free(b->b[i]);
}

/* The result of spec, or the reduction of the n per-element losses in `loss` into a 0-d one. */
static int reduce_loss(const opd_out_spec *spec, int64_t reduction, double *loss, int64_t n,
                       opd_tensor **out) {
  opd_tensor *r = NULL;
  int rc = opd__norm_result(spec, &r);
  if (rc) return rc;
  if (reduction != OPD__REDUCTION_NONE) {
    double s = 0;
    for (int64_t i = 0; i < n; i++) s += loss[i];
    loss[0] = reduction == OPD__REDUCTION_MEAN ? s / (double)n : s;
  }
  opd__norm_store(r, loss);
  *out = r;
  return 0;
}

/* ---- mse_loss ---- */

int opd__cpu_mse_loss(const opd_kernel_ctx *ctx, opd_tensor *self, opd_tensor *target,
                      int64_t reduction, opd_tensor **out) {
  (void)ctx;
  opd_out_spec spec, each;
  int rc = opd__pointwise_loss_meta(self, target, reduction, "mse_cpu", &spec);
  if (rc) return rc;
  opd__binary_meta(self, target, &each);
  int64_t n = 1;
  for (int k = 0; k < each.ndim; k++) n *= each.sizes[k];
  bufs b = {{NULL}};
  if (!(rc = opd__norm_load_as(self, each.sizes, each.ndim, &b.b[0])) &&
      !(rc = opd__norm_load_as(target, each.sizes, each.ndim, &b.b[1]))) {
    for (int64_t i = 0; i < n; i++) {
      double d = b.b[0][i] - b.b[1][i];
      b.b[0][i] = d * d;
    }
    rc = reduce_loss(&spec, reduction, b.b[0], n, out);
  }
  bufs_free(&b);
  return rc;
}

int opd__cpu_mse_loss_backward(const opd_kernel_ctx *ctx, opd_tensor *grad_output, opd_tensor *self,
                               opd_tensor *target, int64_t reduction, opd_tensor **out) {
  (void)ctx;
  opd_out_spec spec;
  int rc = opd__pointwise_loss_backward_meta(grad_output, self, target, "mse_backward_cpu", &spec);
  if (rc) return rc;
  bufs b = {{NULL}};
  opd_tensor *r = NULL;
  if (!(rc = opd__norm_load_as(self, spec.sizes, spec.ndim, &b.b[0])) &&
      !(rc = opd__norm_load_as(target, spec.sizes, spec.ndim, &b.b[1])) &&
      !(rc = opd__norm_load_as(grad_output, spec.sizes, spec.ndim, &b.b[2])) &&
      !(rc = opd__norm_result(&spec, &r))) {
    double norm = reduction == OPD__REDUCTION_MEAN ? 2. / (double)self->numel : 2.;
    for (int64_t i = 0; i < r->numel; i++) b.b[0][i] = norm * (b.b[0][i] - b.b[1][i]) * b.b[2][i];
    opd__norm_store(r, b.b[0]);
    *out = r;
  }
  bufs_free(&b);
  return rc;
}

/* ---- smooth_l1_loss, huber_loss ---- */

/* The per-element loss of z = |x - t|: smooth L1 (z < beta ? z^2 / (2 beta) : z - beta / 2; L1
 * for beta 0) or Huber (z < delta ? z^2 / 2 : delta (z - delta / 2)). */
static double smooth_l1(double z, double beta) {
  return z < beta ? 0.5 * z * z / beta : z - 0.5 * beta;
}
static double huber(double z, double delta) {
  return z < delta ? 0.5 * z * z : delta * (z - 0.5 * delta);
}

static int robust_loss(opd_tensor *self, opd_tensor *target, int64_t reduction, double k,
                       bool is_huber, opd_tensor **out) {
  if (is_huber ? !(k > 0) : k < 0)
    return opd_error(OPD_EINVAL, is_huber
                                     ? "huber_loss does not support non-positive values for delta."
                                     : "smooth_l1_loss does not support negative values for beta.");
  opd_out_spec spec, each;
  int rc = opd__pointwise_loss_meta(self, target, reduction,
                                    is_huber ? "huber_cpu" : "smooth_l1_cpu", &spec);
  if (rc) return rc;
  if (is_huber) spec.dtype = opd_tensor_dtype(self); /* into empty_like(self), as PyTorch */
  opd__binary_meta(self, target, &each);
  int64_t n = 1;
  for (int d = 0; d < each.ndim; d++) n *= each.sizes[d];
  bufs b = {{NULL}};
  if (!(rc = opd__norm_load_as(self, each.sizes, each.ndim, &b.b[0])) &&
      !(rc = opd__norm_load_as(target, each.sizes, each.ndim, &b.b[1]))) {
    for (int64_t i = 0; i < n; i++) {
      double z = fabs(b.b[0][i] - b.b[1][i]);
      b.b[0][i] = is_huber ? huber(z, k) : smooth_l1(z, k);
    }
    rc = reduce_loss(&spec, reduction, b.b[0], n, out);
  }
  bufs_free(&b);
  return rc;
}

int opd__cpu_smooth_l1_loss(const opd_kernel_ctx *ctx, opd_tensor *self, opd_tensor *target,
                            int64_t reduction, double beta, opd_tensor **out) {
  (void)ctx;
  return robust_loss(self, target, reduction, beta, false, out);
}

int opd__cpu_huber_loss(const opd_kernel_ctx *ctx, opd_tensor *self, opd_tensor *target,
                        int64_t reduction, double delta, opd_tensor **out) {
  (void)ctx;
  return robust_loss(self, target, reduction, delta, true, out);
}

/* d loss / d x of x - t: smooth L1 clamps x / beta to [-1, 1] (the sign of x for beta 0), Huber
 * clamps x to [-delta, delta]. */
static int robust_loss_backward(opd_tensor *grad, opd_tensor *self, opd_tensor *target,
                                int64_t reduction, double k, bool is_huber, opd_tensor **out) {
  opd_out_spec spec;
  int rc = opd__pointwise_loss_backward_meta(
      grad, self, target, is_huber ? "huber_backward_cpu_out" : "smooth_l1_backward_cpu_out",
      &spec);
  if (rc) return rc;
  bufs b = {{NULL}};
  opd_tensor *r = NULL;
  if (!(rc = opd__norm_load_as(self, spec.sizes, spec.ndim, &b.b[0])) &&
      !(rc = opd__norm_load_as(target, spec.sizes, spec.ndim, &b.b[1])) &&
      !(rc = opd__norm_load_as(grad, spec.sizes, spec.ndim, &b.b[2])) &&
      !(rc = opd__norm_result(&spec, &r))) {
    double norm = reduction == OPD__REDUCTION_MEAN ? 1. / (double)self->numel : 1.;
    for (int64_t i = 0; i < r->numel; i++) {
      double x = b.b[0][i] - b.b[1][i], g = b.b[2][i], d;
      if (is_huber)
        d = x < -k ? -k : x > k ? k : x;
      else if (k == 0)
        d = (x > 0) - (x < 0);
      else
        d = x <= -k ? -1 : x >= k ? 1 : x / k;
      b.b[0][i] = norm * d * g;
    }
    opd__norm_store(r, b.b[0]);
    *out = r;
  }
  bufs_free(&b);
  return rc;
}

int opd__cpu_smooth_l1_loss_backward(const opd_kernel_ctx *ctx, opd_tensor *grad_output,
                                     opd_tensor *self, opd_tensor *target, int64_t reduction,
                                     double beta, opd_tensor **out) {
  (void)ctx;
  return robust_loss_backward(grad_output, self, target, reduction, beta, false, out);
}

int opd__cpu_huber_loss_backward(const opd_kernel_ctx *ctx, opd_tensor *grad_output,
                                 opd_tensor *self, opd_tensor *target, int64_t reduction,
                                 double delta, opd_tensor **out) {
  (void)ctx;
  return robust_loss_backward(grad_output, self, target, reduction, delta, true, out);
}

/* ---- binary_cross_entropy ---- */

/* -w (t log(x) + (1 - t) log(1 - x)), each log clamped at -100 as in PyTorch */
static double bce(double x, double t, double w) {
  double lx = log(x), l1x = log1p(-x);
  return -w * (t * (lx < -100 ? -100 : lx) + (1 - t) * (l1x < -100 ? -100 : l1x));
}

static int bce_inputs_check(const double *x, int64_t n) {
  for (int64_t i = 0; i < n; i++)
    if (!(x[i] >= 0 && x[i] <= 1))
      return opd_error(OPD_EINVAL, "all elements of input should be between 0 and 1");
  return 0;
}

int opd__cpu_binary_cross_entropy(const opd_kernel_ctx *ctx, opd_tensor *self, opd_tensor *target,
                                  opd_tensor *weight, int64_t reduction, opd_tensor **out) {
  (void)ctx;
  opd_out_spec spec;
  int rc = opd__bce_meta(self, target, weight, reduction, &spec);
  if (rc) return rc;
  const int64_t *sizes = opd_tensor_sizes(self);
  int nd = self->ndim;
  int64_t n = self->numel;
  bufs b = {{NULL}};
  if (!(rc = opd__norm_load(self, &b.b[0])) &&
      !(rc = opd__norm_load_as(target, sizes, nd, &b.b[1])) &&
      !(rc = weight ? opd__norm_load_as(weight, sizes, nd, &b.b[2]) : 0) &&
      !(rc = bce_inputs_check(b.b[0], n))) {
    for (int64_t i = 0; i < n; i++) b.b[0][i] = bce(b.b[0][i], b.b[1][i], weight ? b.b[2][i] : 1);
    rc = reduce_loss(&spec, reduction, b.b[0], n, out);
  }
  bufs_free(&b);
  return rc;
}

int opd__cpu_binary_cross_entropy_backward(const opd_kernel_ctx *ctx, opd_tensor *grad_output,
                                           opd_tensor *self, opd_tensor *target, opd_tensor *weight,
                                           int64_t reduction, opd_tensor **out) {
  (void)ctx;
  opd_out_spec spec;
  int rc = opd__bce_backward_meta(grad_output, self, target, weight, &spec);
  if (rc) return rc;
  const int64_t *sizes = spec.sizes;
  int nd = spec.ndim;
  bufs b = {{NULL}};
  opd_tensor *r = NULL;
  if (!(rc = opd__norm_load(self, &b.b[0])) &&
      !(rc = opd__norm_load_as(target, sizes, nd, &b.b[1])) &&
      !(rc = opd__norm_load_as(grad_output, sizes, nd, &b.b[2])) &&
      !(rc = weight ? opd__norm_load_as(weight, sizes, nd, &b.b[3]) : 0) &&
      !(rc = opd__norm_result(&spec, &r))) {
    /* grad * (x - t) / max((1 - x) x, eps), as ATen's kernel */
    const double eps = 1e-12;
    double norm = reduction == OPD__REDUCTION_MEAN ? 1. / (double)self->numel : 1.;
    for (int64_t i = 0; i < r->numel; i++) {
      double x = b.b[0][i], d = (1 - x) * x;
      b.b[0][i] =
          b.b[2][i] * (x - b.b[1][i]) / (d > eps ? d : eps) * norm * (weight ? b.b[3][i] : 1);
    }
    opd__norm_store(r, b.b[0]);
    *out = r;
  }
  bufs_free(&b);
  return rc;
}

/* ---- nll_loss ---- */

/* The targets of the batch (a 0-d target is a batch of one); OPD_EINDEX for one out of
 * [0, classes) that is not ignore_index. */
static int nll_targets(opd_tensor *target, int64_t batch, int64_t classes, int64_t ignore_index,
                       int64_t **out) {
  int rc = opd__norm_load_i64(target, out);
  if (rc) return rc;
  for (int64_t i = 0; i < batch; i++) {
    int64_t k = (*out)[i];
    if (k != ignore_index && (k < 0 || k >= classes))
      return opd_error(OPD_EINDEX, "Target %lld is out of bounds.", (long long)k);
  }
  return 0;
}

static int nll_forward(opd_ivalue *args, opd_tensor **res) {
  opd__nll_forward_args a;
  int rc = opd__nll_forward_args_read(args, false, &a);
  if (rc) return rc;
  if ((rc = opd__norm_result(&a.out_spec, &res[0])) || (rc = opd__norm_result(&a.tw_spec, &res[1])))
    return rc;
  opd_tensor *self = a.self, *target = a.target, *weight = a.weight;
  int64_t reduction = a.reduction, ignore_index = a.ignore_index, batch = a.batch,
          classes = a.classes;
  bufs b = {{NULL}};
  int64_t *t = NULL;
  if (!(rc = opd__norm_load(self, &b.b[0])) && !(rc = opd__norm_load(weight, &b.b[1])) &&
      !(rc = opd__norm_zeros(batch, &b.b[2])) &&
      !(rc = nll_targets(target, batch, classes, ignore_index, &t))) {
    const double *x = b.b[0], *w = b.b[1];
    double *loss = b.b[2], sum = 0, total = 0;
    for (int64_t i = 0; i < batch; i++) {
      if (t[i] == ignore_index) continue;
      double wi = w ? w[t[i]] : 1;
      loss[i] = -wi * x[i * classes + t[i]];
      sum += loss[i];
      total += wi;
    }
    bool per_sample = reduction == OPD__REDUCTION_NONE && self->ndim == 2;
    if (!per_sample) loss[0] = reduction == OPD__REDUCTION_MEAN ? sum / total : sum;
    /* a batch's total weight, or 0 for per-sample losses (PyTorch's) */
    double tw = per_sample ? 0 : total;
    opd__norm_store(res[0], loss);
    opd__norm_store(res[1], &tw);
  }
  opd__free(t);
  bufs_free(&b);
  return rc;
}

int opd__cpu_nll_loss_forward(const opd_kernel_ctx *ctx, opd_stack *stack) {
  (void)ctx;
  return opd__boxed_run(stack, 5, 2, false, nll_forward);
}

int opd__cpu_nll_loss_backward(const opd_kernel_ctx *ctx, opd_tensor *grad_output, opd_tensor *self,
                               opd_tensor *target, opd_tensor *weight, int64_t reduction,
                               int64_t ignore_index, opd_tensor *total_weight, opd_tensor **out) {
  (void)ctx;
  int64_t batch, classes;
  opd_out_spec spec;
  int rc = opd__nll_loss_backward_meta(grad_output, self, target, weight, reduction, total_weight,
                                       &batch, &classes, &spec);
  if (rc) return rc;
  bufs b = {{NULL}};
  int64_t *t = NULL;
  opd_tensor *r = NULL;
  if (!(rc = opd__norm_load(grad_output, &b.b[0])) && !(rc = opd__norm_load(weight, &b.b[1])) &&
      !(rc = opd__norm_load(total_weight, &b.b[2])) &&
      !(rc = opd__norm_zeros(self->numel, &b.b[3])) &&
      !(rc = nll_targets(target, batch, classes, ignore_index, &t)) &&
      !(rc = opd__norm_result(&spec, &r))) {
    const double *g = b.b[0], *w = b.b[1];
    double *gi = b.b[3];
    bool per_sample = reduction == OPD__REDUCTION_NONE && self->ndim == 2;
    double scale = reduction == OPD__REDUCTION_MEAN ? 1 / b.b[2][0] : 1;
    for (int64_t i = 0; i < batch; i++) {
      if (t[i] == ignore_index) continue;
      double wi = w ? w[t[i]] : 1;
      gi[i * classes + t[i]] = -wi * (per_sample ? g[i] : g[0] * scale);
    }
    opd__norm_store(r, gi);
    *out = r;
  }
  opd__free(t);
  bufs_free(&b);
  return rc;
}

/* ---- nll_loss2d: nll_loss over every position of (N, C, H, W) ---- */

static int nll2d_forward(opd_ivalue *args, opd_tensor **res) {
  opd__nll_forward_args a;
  int rc = opd__nll_forward_args_read(args, true, &a);
  if (rc) return rc;
  if ((rc = opd__norm_result(&a.out_spec, &res[0])) || (rc = opd__norm_result(&a.tw_spec, &res[1])))
    return rc;
  opd_tensor *self = a.self, *target = a.target, *weight = a.weight;
  int64_t reduction = a.reduction, ignore_index = a.ignore_index, batch = a.batch,
          classes = a.classes, plane = a.plane;
  bufs b = {{NULL}};
  int64_t *t = NULL, positions = target->numel;
  if (!(rc = opd__norm_load(self, &b.b[0])) && !(rc = opd__norm_load(weight, &b.b[1])) &&
      !(rc = opd__norm_zeros(positions, &b.b[2])) &&
      !(rc = nll_targets(target, positions, classes, ignore_index, &t))) {
    const double *x = b.b[0], *w = b.b[1];
    double *loss = b.b[2], sum = 0, total = 0;
    for (int64_t n = 0; n < batch; n++)
      for (int64_t p = 0; p < plane; p++) {
        int64_t i = n * plane + p, k = t[i];
        if (k == ignore_index) continue;
        double wk = w ? w[k] : 1;
        loss[i] = -wk * x[(n * classes + k) * plane + p];
        sum += loss[i];
        total += wk;
      }
    bool per_position = reduction == OPD__REDUCTION_NONE;
    double reduced = reduction == OPD__REDUCTION_MEAN ? sum / total : sum;
    double tw = per_position ? 0 : total; /* 0 for per-position losses, as PyTorch's */
    opd__norm_store(res[0], per_position ? loss : &reduced);
    opd__norm_store(res[1], &tw);
  }
  opd__free(t);
  bufs_free(&b);
  return rc;
}

int opd__cpu_nll_loss2d_forward(const opd_kernel_ctx *ctx, opd_stack *stack) {
  (void)ctx;
  return opd__boxed_run(stack, 5, 2, false, nll2d_forward);
}

int opd__cpu_nll_loss2d_backward(const opd_kernel_ctx *ctx, opd_tensor *grad_output,
                                 opd_tensor *self, opd_tensor *target, opd_tensor *weight,
                                 int64_t reduction, int64_t ignore_index, opd_tensor *total_weight,
                                 opd_tensor **out) {
  (void)ctx;
  int64_t batch, classes, plane;
  opd_out_spec spec;
  int rc = opd__nll_loss2d_backward_meta(grad_output, self, target, weight, reduction, total_weight,
                                         &batch, &classes, &plane, &spec);
  if (rc) return rc;
  bufs b = {{NULL}};
  int64_t *t = NULL;
  opd_tensor *r = NULL;
  if (!(rc = opd__norm_load(grad_output, &b.b[0])) && !(rc = opd__norm_load(weight, &b.b[1])) &&
      !(rc = opd__norm_load(total_weight, &b.b[2])) &&
      !(rc = opd__norm_zeros(self->numel, &b.b[3])) &&
      !(rc = nll_targets(target, target->numel, classes, ignore_index, &t)) &&
      !(rc = opd__norm_result(&spec, &r))) {
    const double *g = b.b[0], *w = b.b[1];
    double *gi = b.b[3];
    bool per_position = reduction == OPD__REDUCTION_NONE;
    double scale = reduction == OPD__REDUCTION_MEAN ? 1 / b.b[2][0] : 1;
    for (int64_t n = 0; n < batch; n++)
      for (int64_t p = 0; p < plane; p++) {
        int64_t i = n * plane + p, k = t[i];
        if (k == ignore_index) continue;
        double wk = w ? w[k] : 1;
        gi[(n * classes + k) * plane + p] = -wk * (per_position ? g[i] : g[0] * scale);
      }
    opd__norm_store(r, gi);
    *out = r;
  }
  opd__free(t);
  bufs_free(&b);
  return rc;
}

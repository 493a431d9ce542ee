/* cuda_norm.c: the CUDA kernels of native_batch_norm, native_batch_norm_backward,
 * native_layer_norm_backward, _softmax_backward_data, _log_softmax_backward_data,
 * nll_loss_forward, nll_loss_backward, embedding_dense_backward, native_dropout and
 * native_dropout_backward: the
 * meta functions and argument readers of their CPU kernels (kernels/cpu/norm_*.c), contiguous
 * operands on the device, and norm.cu's kernels ([Note: CUDA normalizations in double]).
 */
#include <stdatomic.h>
#include <sys/random.h>

#include "cuda_ew.h"
#include "cuda_internal.h"
#include "cuda_kernels.h"
#include "meta/norm_meta.h"
#include "meta/reduce_meta.h"

/* A tensor as a vector operand: its first dim's stride (a contiguous tensor's elements in
 * order when flat); absent for NULL. */
static opd__cuda_vec vec_of(opd_tensor *t, bool flat) {
  if (!t) return (opd__cuda_vec){0};
  int64_t stride = flat || t->ndim == 0 ? 1 : opd_tensor_strides(t)[0];
  return (opd__cuda_vec){opd_tensor_data(t), (int)opd_tensor_dtype(t), stride};
}

/* Contiguous copies of the n tensors of t (NULL stays NULL) into c; the caller releases c. */
static int contiguous_all(opd_tensor *const *t, opd_tensor **c, int n) {
  int rc = 0;
  for (int k = 0; k < n; k++) c[k] = NULL;
  for (int k = 0; k < n && !rc; k++)
    if (t[k]) rc = opd__cuda_contiguous(t[k], &c[k]);
  return rc;
}

static void release_all(opd_tensor **c, int n) {
  for (int k = 0; k < n; k++)
    if (c[k]) opd_tensor_release(c[k]);
}

/* ---- batch norm ---- */

static int batch_norm(opd_ivalue *args, opd_tensor **res) {
  opd__batch_norm_args a = {0};
  int rc = opd__batch_norm_outputs(args, &a, res);
  opd_tensor *x = NULL;
  if (rc || (rc = opd__cuda_contiguous(a.input, &x))) return rc;
  opd__cuda_norm d = {.kind = OPD_CUDA_NORM_BATCH,
                      .training = a.training,
                      .n = a.batch,
                      .c = a.channels,
                      .s = a.spatial,
                      .momentum = a.momentum,
                      .eps = a.eps,
                      .x = vec_of(x, true),
                      .weight = vec_of(a.weight, false),
                      .bias = vec_of(a.bias, false),
                      .out = {vec_of(res[0], true), vec_of(res[1], false), vec_of(res[2], false)}};
  if (a.training) {
    d.running_mean = vec_of(a.running_mean, false);
    d.running_var = vec_of(a.running_var, false);
  } else {
    d.mean = vec_of(a.running_mean, false);
    d.stat = vec_of(a.running_var, false);
  }
  rc = opd__cuda_launch_norm(opd__cuda_dev_of(a.input), &d);
  opd_tensor_release(x);
  if (!rc && a.training) { /* the running statistics were updated in place */
    if (a.running_mean) opd_tensor_bump_version(a.running_mean);
    if (a.running_var) opd_tensor_bump_version(a.running_var);
  }
  return rc;
}

int opd__cuda_native_batch_norm(const opd_kernel_ctx *ctx, opd_stack *stack) {
  (void)ctx;
  return opd__boxed_run(stack, 8, 3, true, batch_norm);
}

static int batch_norm_backward(opd_ivalue *args, opd_tensor **res) {
  opd__batch_norm_backward_args a = {0};
  int rc = opd__batch_norm_backward_outputs(args, &a, res);
  opd_tensor *c[2];
  if (rc || (rc = contiguous_all((opd_tensor *[]){a.bn.input, a.grad}, c, 2))) {
    if (!rc) release_all(c, 2);
    return rc;
  }
  opd__cuda_norm d = {.kind = OPD_CUDA_NORM_BATCH_BACKWARD,
                      .training = a.bn.training,
                      .n = a.bn.batch,
                      .c = a.bn.channels,
                      .s = a.bn.spatial,
                      .eps = a.bn.eps,
                      .x = vec_of(c[0], true),
                      .g = vec_of(c[1], true),
                      .weight = vec_of(a.bn.weight, false),
                      .mean = vec_of(a.bn.training ? a.save_mean : a.bn.running_mean, false),
                      .stat = vec_of(a.bn.training ? a.save_invstd : a.bn.running_var, false),
                      .out = {vec_of(res[0], true), vec_of(res[1], false), vec_of(res[2], false)}};
  rc = opd__cuda_launch_norm(opd__cuda_dev_of(a.bn.input), &d);
  release_all(c, 2);
  return rc;
}

int opd__cuda_native_batch_norm_backward(const opd_kernel_ctx *ctx, opd_stack *stack) {
  (void)ctx;
  return opd__boxed_run(stack, 10, 3, true, batch_norm_backward);
}

/* ---- layer norm's backward ---- */

static int layer_norm_backward(opd_ivalue *args, opd_tensor **res) {
  opd__norm_backward_args a = {0};
  int rc = opd__layer_norm_backward_outputs(args, &a, res);
  if (rc) return rc;
  if (a.rows * a.cols == 0) { /* grad_weight and grad_bias are zeros (sums over no rows) */
    for (int k = 1; k < 3 && !rc; k++)
      if (res[k] && res[k]->numel > 0)
        rc = opd__cuda_memset0(opd__cuda_dev_of(res[k]), opd_tensor_data(res[k]),
                               (size_t)res[k]->numel * opd_dtype_size(opd_tensor_dtype(res[k])));
    return rc;
  }
  opd_tensor *c[5];
  if ((rc = contiguous_all((opd_tensor *[]){a.input, a.grad, a.weight, a.mean, a.rstd}, c, 5))) {
    release_all(c, 5);
    return rc;
  }
  opd__cuda_norm d = {.kind = OPD_CUDA_NORM_LAYER_BACKWARD,
                      .n = a.rows,
                      .c = a.cols,
                      .x = vec_of(c[0], true),
                      .g = vec_of(c[1], true),
                      .weight = vec_of(c[2], true),
                      .mean = vec_of(c[3], true),
                      .stat = vec_of(c[4], true),
                      .out = {vec_of(res[0], true), vec_of(res[1], true), vec_of(res[2], true)}};
  rc = opd__cuda_launch_norm(opd__cuda_dev_of(a.input), &d);
  release_all(c, 5);
  return rc;
}

int opd__cuda_native_layer_norm_backward(const opd_kernel_ctx *ctx, opd_stack *stack) {
  (void)ctx;
  return opd__boxed_run(stack, 8, 3, true, layer_norm_backward);
}

/* ---- softmax's backward ---- */

static int softmax_backward(opd_tensor *grad, opd_tensor *output, int64_t dim,
                            opd_dtype input_dtype, bool is_log, opd_tensor **out) {
  opd_out_spec spec;
  int64_t d;
  int rc = opd__softmax_backward_meta(grad, output, dim, input_dtype, &d, &spec);
  if (rc) return rc;
  if (!opd_dtype_is_floating(spec.dtype))
    return opd__cuda_not_implemented(
        is_log ? "log_softmax_backward_lastdim" : "softmax_backward_lastdim", spec.dtype);
  if ((rc = opd__alloc_output(&spec, opd_tensor_device(grad), out)) || (*out)->numel == 0)
    return rc;
  opd_tensor *c[2];
  if (!(rc = contiguous_all((opd_tensor *[]){output, grad}, c, 2))) {
    opd__cuda_norm n = {.kind = is_log ? OPD_CUDA_NORM_LOG_SOFTMAX_BACKWARD
                                       : OPD_CUDA_NORM_SOFTMAX_BACKWARD,
                        .n = 1,
                        .c = 1,
                        .s = 1,
                        .x = vec_of(c[0], true),
                        .g = vec_of(c[1], true),
                        .out = {vec_of(*out, true)}};
    for (int i = 0; i < spec.ndim; i++)
      if (i < d)
        n.n *= spec.sizes[i];
      else if (i == d)
        n.c = spec.sizes[i];
      else
        n.s *= spec.sizes[i];
    rc = opd__cuda_launch_norm(opd__cuda_dev_of(grad), &n);
  }
  release_all(c, 2);
  if (rc) opd_tensor_release(*out);
  return rc;
}

OPD__DEFINE_SOFTMAX_BACKWARD_KERNELS(cuda, softmax_backward)

/* ---- nll_loss ---- */

/* A device flag and the value it reports (zeroed), and reading them back (freed). */
static int report_new(int device, int64_t **report) {
  if (!(*report = opd__cuda_alloc(device, 2 * sizeof(int64_t)))) return opd_last_error_code();
  int rc = opd__cuda_memset0(device, *report, 2 * sizeof(int64_t));
  if (rc) opd__cuda_free(device, *report, 2 * sizeof(int64_t));
  return rc;
}
static int report_take(int device, int64_t *report, int *bad, int64_t *value) {
  int rc = opd__cuda_memcpy(device, bad, report, sizeof *bad, 2, true);
  if (!rc && *bad) rc = opd__cuda_memcpy(device, value, report + 1, sizeof *value, 2, true);
  opd__cuda_free(device, report, 2 * sizeof(int64_t));
  return rc;
}

/* Runs d (its operands set) with the target check; "Target k is out of bounds." */
static int run_nll(opd__cuda_nll *d, int device) {
  int64_t *report = NULL, value = 0;
  int bad = 0, rc = report_new(device, &report);
  if (rc) return rc;
  d->bad = (int *)report;
  d->bad_value = report + 1;
  rc = opd__cuda_launch_nll(device, d);
  int rc2 = report_take(device, report, &bad, &value);
  if (!rc) rc = rc2;
  if (!rc && bad) rc = opd_error(OPD_EINDEX, "Target %lld is out of bounds.", (long long)value);
  return rc;
}

static int nll_forward(opd_ivalue *args, opd_tensor **res) {
  opd__nll_forward_args a;
  int rc = opd__nll_forward_args_read(args, false, &a);
  opd_tensor *self = a.self;
  if (rc || (rc = opd__alloc_output(&a.out_spec, opd_tensor_device(self), &res[0])) ||
      (rc = opd__alloc_output(&a.tw_spec, opd_tensor_device(self), &res[1])))
    return rc;
  opd_tensor *c[3];
  if (!(rc = contiguous_all((opd_tensor *[]){self, a.target, a.weight}, c, 3))) {
    opd__cuda_nll d = {.per_sample = a.reduction == OPD__REDUCTION_NONE && self->ndim == 2,
                       .mean = a.reduction == OPD__REDUCTION_MEAN,
                       .batch = a.batch,
                       .classes = a.classes,
                       .ignore_index = a.ignore_index,
                       .self = vec_of(c[0], true),
                       .target = vec_of(c[1], true),
                       .weight = vec_of(c[2], true),
                       .out = vec_of(res[0], true),
                       .out_total = vec_of(res[1], true)};
    rc = run_nll(&d, opd__cuda_dev_of(self));
  }
  release_all(c, 3);
  return rc;
}

int opd__cuda_nll_loss_forward(const opd_kernel_ctx *ctx, opd_stack *stack) {
  (void)ctx;
  return opd__boxed_run(stack, 5, 2, false, nll_forward);
}

int opd__cuda_nll_loss_backward(const opd_kernel_ctx *ctx, opd_tensor *grad_output,
                                opd_tensor *self, opd_tensor *target, opd_tensor *weight,
                                int64_t reduction, int64_t ignore_index, opd_tensor *total_weight,
                                opd_tensor **out) {
  (void)ctx;
  int64_t batch, classes;
  opd_out_spec spec;
  int rc = opd__nll_loss_backward_meta(grad_output, self, target, weight, reduction, total_weight,
                                       &batch, &classes, &spec);
  int device = opd__cuda_dev_of(self);
  if (rc || (rc = opd__alloc_output(&spec, opd_tensor_device(self), out))) return rc;
  if ((*out)->numel > 0)
    rc = opd__cuda_memset0(device, opd_tensor_data(*out),
                           (size_t)(*out)->numel * opd_dtype_size(spec.dtype));
  opd_tensor *c[4] = {NULL, NULL, NULL, NULL};
  if (!rc &&
      !(rc = contiguous_all((opd_tensor *[]){grad_output, target, weight, total_weight}, c, 4))) {
    opd__cuda_nll d = {.backward = true,
                       .per_sample = reduction == OPD__REDUCTION_NONE && self->ndim == 2,
                       .mean = reduction == OPD__REDUCTION_MEAN,
                       .batch = batch,
                       .classes = classes,
                       .ignore_index = ignore_index,
                       .grad = vec_of(c[0], true),
                       .target = vec_of(c[1], true),
                       .weight = vec_of(c[2], true),
                       .total_weight = vec_of(c[3], true),
                       .out = vec_of(*out, true)};
    rc = run_nll(&d, device);
  }
  release_all(c, 4);
  if (rc) opd_tensor_release(*out);
  return rc;
}

/* ---- embedding_dense_backward ---- */

int opd__cuda_embedding_dense_backward(const opd_kernel_ctx *ctx, opd_tensor *grad_output,
                                       opd_tensor *indices, int64_t num_weights,
                                       int64_t padding_idx, bool scale_grad_by_freq,
                                       opd_tensor **out) {
  (void)ctx;
  opd_out_spec spec;
  int rc = opd__embedding_backward_meta(grad_output, indices, num_weights, &spec);
  if (rc || (rc = opd__alloc_output(&spec, opd_tensor_device(grad_output), out))) return rc;
  int device = opd__cuda_dev_of(grad_output), bad = 0;
  int64_t d = spec.sizes[1];
  /* scratch: the weight's gradient and the counts in double, and the flag */
  size_t wbytes = (size_t)(num_weights * d + num_weights) * sizeof(double);
  size_t bytes = wbytes + sizeof(int64_t);
  char *scratch = opd__cuda_alloc(device, bytes);
  opd_tensor *c[2] = {NULL, NULL};
  if (!scratch) rc = opd_last_error_code();
  if (!rc) rc = opd__cuda_memset0(device, scratch, bytes);
  if (!rc && !(rc = contiguous_all((opd_tensor *[]){grad_output, indices}, c, 2))) {
    opd__cuda_embedding_backward e = {.n = indices->numel,
                                      .d = d,
                                      .num_weights = num_weights,
                                      .padding_idx = padding_idx,
                                      .scale_grad_by_freq = scale_grad_by_freq,
                                      .grad = vec_of(c[0], true),
                                      .indices = vec_of(c[1], true),
                                      .out = vec_of(*out, true),
                                      .w = (double *)scratch,
                                      .count = (double *)scratch + num_weights * d,
                                      .bad = (int *)(scratch + wbytes)};
    rc = opd__cuda_launch_embedding_backward(device, &e);
    if (!rc) rc = opd__cuda_memcpy(device, &bad, e.bad, sizeof bad, 2, true);
    if (!rc && bad) rc = opd_error(OPD_EINDEX, "index out of range in self");
  }
  release_all(c, 2);
  if (scratch) opd__cuda_free(device, scratch, bytes);
  if (rc) opd_tensor_release(*out);
  return rc;
}

/* ---- dropout ---- */

/* [Note: CUDA dropout's random numbers]
 * As on the CPU ([Note: Dropout's random numbers] in kernels/cpu/norm_dropout.c), each element
 * is kept with probability 1 - p and the results agree with PyTorch in distribution, not bit
 * for bit. A call draws a 64-bit seed from the process's entropy (getrandom, mixed with a
 * counter so that no two calls share one); element i's draw is a splitmix64 hash of the seed
 * and i, so that the kernel needs no generator state and any thread may take any element. */
static int dropout(opd_ivalue *args, opd_tensor **res) {
  static atomic_uint_fast64_t calls;
  opd_tensor *input;
  double p;
  bool train;
  opd_out_spec out_spec, mask_spec;
  int rc = opd__dropout_args_read(args, &input, &p, &train, &out_spec, &mask_spec);
  if (rc) return rc;
  opd_device dev = opd_tensor_device(input);
  if (input->numel == 0) { /* PyTorch returns the input itself and an uninitialized mask */
    opd_tensor_retain(input);
    res[0] = input;
    return opd__alloc_output(&mask_spec, dev, &res[1]);
  }
  if ((rc = opd__alloc_output(&out_spec, dev, &res[0])) ||
      (rc = opd__alloc_output(&mask_spec, dev, &res[1])) ||
      (rc = opd__call_copy_(res[0], input, false)))
    return rc;
  if (!train) { /* the identity: a copy, and a mask of ones */
    opd__cuda_ewop ones = {.op = OPD_CUDA_EW_FILL, .compute = OPD_BOOL, .c0i = 1};
    return opd__cuda_ew_run(&ones, res[1], NULL, 0);
  }
  uint64_t seed = 0;
  if (getrandom(&seed, sizeof seed, 0) != (ssize_t)sizeof seed) seed = (uint64_t)(uintptr_t)res[0];
  seed ^= atomic_fetch_add(&calls, 1) * 0xd1b54a32d192ed03u;
  double p1m = 1 - p;
  opd__cuda_dropout d = {.dtype = opd_tensor_dtype(res[0]),
                         .n = res[0]->numel,
                         .p1m = p1m,
                         .scale = p1m == 0 ? 0 : 1 / p1m,
                         .seed = seed,
                         .out = opd_tensor_data(res[0]),
                         .mask = opd_tensor_data(res[1])};
  return opd__cuda_launch_dropout(opd__cuda_dev_of(input), &d);
}

int opd__cuda_native_dropout(const opd_kernel_ctx *ctx, opd_stack *stack) {
  (void)ctx;
  return opd__boxed_run(stack, 3, 2, true, dropout);
}

/* grad * mask * scale, the mask read as the gradient's dtype (grad * mask is exact: the mask is
 * 0 or 1), as the CPU kernel */
int opd__cuda_native_dropout_backward(const opd_kernel_ctx *ctx, opd_tensor *grad_output,
                                      opd_tensor *mask, double scale, opd_tensor **out) {
  (void)ctx;
  opd_out_spec spec;
  int rc = opd__dropout_backward_meta(grad_output, mask, &spec);
  if (rc) return rc;
  if (!opd_dtype_is_floating(spec.dtype)) return opd__cuda_not_implemented("mul_cpu", spec.dtype);
  opd__cuda_ewop mul = {.op = OPD_CUDA_EW_MUL, .compute = spec.dtype};
  if ((rc = opd__cuda_ew_new(&mul, &spec, (opd_tensor *[]){grad_output, mask}, 2, out))) return rc;
  opd__cuda_ewop times = {.op = OPD_CUDA_EW_SCALE,
                          .compute = spec.dtype,
                          .c0d =
                              opd__compute_dtype(spec.dtype) == OPD_FLOAT64 ? scale : (float)scale};
  if ((rc = opd__cuda_ew_run(&times, *out, out, 1))) opd_tensor_release(*out);
  return rc;
}

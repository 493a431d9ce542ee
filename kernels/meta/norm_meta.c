/* norm_meta.c: meta functions of the normalization, loss and activation operators and their
 * backward operators (see norm_meta.h), and their Meta kernels. */
#include "norm_meta.h"

#include <assert.h>
#include <string.h>

#include "elementwise_meta.h"
#include "meta/reduce_meta.h"
#include "opd/checked.h"
#include "src/loops.h"

static const opd_device meta_device = {OPD_DEVICE_META, -1};

const opd__act_info opd__act_infos[] = {
    [OPD__ACT_HARDTANH] = {"clamp_scalar_cpu", OPD__ACT_NUMBER},
    [OPD__ACT_THRESHOLD] = {"threshold_cpu", OPD__ACT_NUMBER},
    [OPD__ACT_LEAKY_RELU] = {"leaky_relu_cpu", OPD__ACT_FLOAT},
    [OPD__ACT_ELU] = {"elu_cpu", OPD__ACT_FLOAT},
    [OPD__ACT_MISH] = {"mish_cpu", OPD__ACT_FLOAT},
    [OPD__ACT_SOFTPLUS] = {"softplus_cpu", OPD__ACT_FLOAT},
    [OPD__ACT_HARDSWISH] = {"hardswish_cpu", OPD__ACT_FLOAT},
    [OPD__ACT_HARDSIGMOID] = {"hardsigmoid_cpu", OPD__ACT_FLOAT},
    [OPD__ACT_THRESHOLD_BACKWARD] = {"threshold_backward_cpu", OPD__ACT_NUMBER},
    [OPD__ACT_GELU_BACKWARD] = {"GeluBackwardKernelImpl", OPD__ACT_FLOAT},
    [OPD__ACT_SILU_BACKWARD] = {"silu_backward_cpu", OPD__ACT_FLOAT},
    [OPD__ACT_SIGMOID_BACKWARD] = {"sigmoid_backward_cpu", OPD__ACT_FLOAT},
    [OPD__ACT_TANH_BACKWARD] = {"tanh_backward_cpu", OPD__ACT_FLOAT},
    [OPD__ACT_HARDSWISH_BACKWARD] = {"hardswish_backward_cpu", OPD__ACT_FLOAT},
    [OPD__ACT_HARDSIGMOID_BACKWARD] = {"hardsigmoid_backward", OPD__ACT_FLOAT},
    [OPD__ACT_HARDTANH_BACKWARD] = {"hardshrink_backward_cpu", OPD__ACT_FLOAT},
    [OPD__ACT_LEAKY_RELU_BACKWARD] = {"leaky_relu_backward_cpu", OPD__ACT_FLOAT},
    [OPD__ACT_ELU_BACKWARD] = {"elu_backward_cpu", OPD__ACT_FLOAT},
    [OPD__ACT_SOFTPLUS_BACKWARD] = {"softplus_backward_cpu", OPD__ACT_FLOAT},
    [OPD__ACT_MISH_BACKWARD] = {"mish_backward_cpu", OPD__ACT_FLOAT},
    [OPD__ACT_LOG_SIGMOID] = {"log_sigmoid_cpu", OPD__ACT_FLOAT},
    [OPD__ACT_LOG_SIGMOID_BACKWARD] = {"log_sigmoid_backward_cpu", OPD__ACT_FLOAT},
};

static void same_as(opd_tensor *self, opd_out_spec *spec) {
  spec->ndim = self->ndim;
  spec->dtype = opd_tensor_dtype(self);
  memcpy(spec->sizes, opd_tensor_sizes(self), (size_t)self->ndim * sizeof *spec->sizes);
}

static int check_dtype(opd_dtype dt, opd__act_dtypes dtypes, const char *name, int n,
                       const opd_scalar *params) {
  if (dtypes == OPD__ACT_FLOAT ? !opd_dtype_is_floating(dt) : dt == OPD_BOOL)
    return opd_error(OPD_EINVAL, "\"%s\" not implemented for '%s'", name, opd_dtype_c10_name(dt));
  for (int i = 0; i < n; i++) {
    opd__value v;
    int rc = opd__scalar_to(params[i], dt, &v);
    if (rc) return rc;
  }
  return 0;
}

int opd__activation_meta(opd_tensor *self, opd__act act, int n, const opd_scalar *params,
                         opd_out_spec *spec) {
  same_as(self, spec);
  return check_dtype(spec->dtype, opd__act_infos[act].dtypes, opd__act_infos[act].name, n, params);
}

static opd_dtype promote(opd_tensor *const *t, int n) {
  opd_result_type_state s = opd_result_type_init();
  for (int i = 0; i < n; i++)
    if (t[i]) opd_result_type_add_tensor(&s, opd_tensor_dtype(t[i]), t[i]->ndim);
  return opd_result_type(&s);
}

int opd__activation_backward_meta(opd_tensor *grad, opd_tensor *self, opd__act act, int n,
                                  const opd_scalar *params, opd_out_spec *spec) {
  int rc = opd__binary_meta(grad, self, spec);
  return rc ? rc
            : check_dtype(spec->dtype, opd__act_infos[act].dtypes, opd__act_infos[act].name, n,
                          params);
}

int opd__gelu_approximate(const char *approximate, bool *tanh_approx) {
  *tanh_approx = strcmp(approximate, "tanh") == 0;
  if (!*tanh_approx && strcmp(approximate, "none") != 0)
    return opd_error(OPD_EINVAL, "approximate argument must be either none or tanh.");
  return 0;
}

int opd__leaky_relu_backward_check(opd_scalar negative_slope, bool self_is_result) {
  if (self_is_result && opd__scalar_to_double(negative_slope) < 0)
    return opd_error(OPD_EINVAL,
                     "In-place leakyReLu backward calculation is triggered with a negative slope "
                     "which is not supported. This is caused by calling in-place forward function "
                     "with a negative slope, please call out-of-place version instead.");
  return 0;
}

int opd__elu_backward_check(opd_scalar alpha, bool is_result) {
  if (is_result && opd__scalar_to_double(alpha) < 0)
    return opd_error(OPD_EINVAL,
                     "In-place elu backward calculation is triggered with a negative slope which "
                     "is not supported. This is caused by calling in-place forward function with "
                     "a negative slope, please call out-of-place version instead.");
  return 0;
}

int opd__log_sigmoid_backward_meta(opd_tensor *grad, opd_tensor *self, opd_tensor *buffer,
                                   opd_out_spec *spec) {
  opd_tensor *t[3] = {grad, self, buffer};
  int rc = opd__broadcast_tensors(t, 3, spec);
  if (rc) return rc;
  spec->dtype = promote(t, 3);
  return check_dtype(spec->dtype, OPD__ACT_FLOAT, "log_sigmoid_backward_cpu", 0, NULL);
}

int opd__prelu_meta(opd_tensor *self, opd_tensor *weight, opd_out_spec *spec, int64_t *sizes,
                    int64_t *strides) {
  opd_device device;
  int rc = opd__common_device((opd_tensor *const[]){self, weight}, 2, &device);
  if (rc) return rc;
  if (weight->ndim > 1)
    return opd_error(OPD_EINVAL,
                     "prelu: Expected `weight` to be a scalar or 1D tensor, but got ndim = %d",
                     weight->ndim);
  int64_t channels = self->ndim >= 2 ? opd_tensor_sizes(self)[1] : 1;
  if (weight->numel != 1 && weight->numel != channels)
    return opd_error(OPD_EINVAL,
                     "Mismatch of parameter numbers and input channel size. Found parameter "
                     "numbers = %lld and channel size = %lld.",
                     (long long)weight->numel, (long long)channels);
  same_as(self, spec);
  if (opd_tensor_dtype(weight) != spec->dtype)
    return opd_error(OPD_EINVAL, "Found dtype %s but expected %s",
                     opd_dtype_c10_name(opd_tensor_dtype(weight)), opd_dtype_c10_name(spec->dtype));
  if ((rc = check_dtype(spec->dtype, OPD__ACT_FLOAT, "prelu_cpu", 0, NULL))) return rc;
  for (int k = 0; k < self->ndim; k++) {
    sizes[k] = 1;
    strides[k] = 0;
  }
  if (weight->numel > 1) {
    sizes[1] = channels;
    strides[1] = opd_tensor_strides(weight)[0];
  }
  return 0;
}

int opd__glu_meta(opd_tensor *self, int64_t dim, int64_t *wrapped, opd_out_spec *spec) {
  if (self->ndim == 0) return opd_error(OPD_EINVAL, "glu does not support 0-dimensional tensors");
  int rc = opd__wrap_dim(dim, self->ndim, wrapped);
  if (rc) return rc;
  same_as(self, spec);
  if ((rc = check_dtype(spec->dtype, OPD__ACT_FLOAT, "glu_cpu", 0, NULL))) return rc;
  if (spec->sizes[*wrapped] % 2)
    return opd_error(OPD_EINVAL, "Halving dimension must be even, but dimension %lld is size %lld",
                     (long long)*wrapped, (long long)spec->sizes[*wrapped]);
  spec->sizes[*wrapped] /= 2;
  return 0;
}

int opd__glu_backward_meta(opd_tensor *grad, opd_tensor *self, int64_t dim, int64_t *wrapped,
                           opd_out_spec *half, opd_out_spec *spec) {
  opd_device device;
  int rc = opd__common_device((opd_tensor *const[]){grad, self}, 2, &device);
  if (!rc) rc = opd__glu_meta(self, dim, wrapped, half);
  if (rc) return rc;
  /* grad_output broadcasts to a half, which keeps its shape (the half of the gradient is
   * TensorIterator's output) */
  int64_t sizes[OPD_MAX_DIMS];
  int nd;
  rc = opd__broadcast_shapes(half->sizes, half->ndim, opd_tensor_sizes(grad), grad->ndim, sizes,
                             &nd);
  if (rc) return rc;
  bool same = nd == half->ndim && !memcmp(sizes, half->sizes, (size_t)nd * sizeof *sizes);
  if (!same) {
    char a[256], b[256];
    return opd_error(OPD_EINVAL, "output with shape %s doesn't match the broadcast shape %s",
                     opd__format_sizes(half->sizes, half->ndim, a, sizeof a),
                     opd__format_sizes(sizes, nd, b, sizeof b));
  }
  if (opd_tensor_dtype(grad) != half->dtype)
    return opd_error(OPD_EINVAL, "Found dtype %s but expected %s",
                     opd_dtype_c10_name(opd_tensor_dtype(grad)), opd_dtype_c10_name(half->dtype));
  same_as(self, spec);
  return 0;
}

int opd__meta_glu_backward(const opd_kernel_ctx *ctx, opd_tensor *grad_output, opd_tensor *self,
                           int64_t dim, opd_tensor **out) {
  (void)ctx;
  int64_t d;
  opd_out_spec half, spec;
  int rc = opd__glu_backward_meta(grad_output, self, dim, &d, &half, &spec);
  return rc ? rc : opd__alloc_output(&spec, opd_tensor_device(self), out);
}

static bool same_shape(const opd_tensor *a, const opd_tensor *b) {
  return a->ndim == b->ndim &&
         !memcmp(opd_tensor_sizes(a), opd_tensor_sizes(b), (size_t)a->ndim * sizeof(int64_t));
}

int opd__softmax_backward_meta(opd_tensor *grad, opd_tensor *output, int64_t dim,
                               opd_dtype input_dtype, int64_t *wrapped, opd_out_spec *spec) {
  opd_device device;
  int rc = opd__common_device((opd_tensor *const[]){grad, output}, 2, &device);
  if (rc) return rc;
  if (!same_shape(grad, output)) {
    char a[256], b[256];
    return opd_error(OPD_EINVAL,
                     "Expected tensor for argument #1 'grad' to have same size as tensor for "
                     "argument #2 'output'; but %s does not equal %s (while checking arguments "
                     "for softmax_backward)",
                     opd__format_sizes(opd_tensor_sizes(grad), grad->ndim, a, sizeof a),
                     opd__format_sizes(opd_tensor_sizes(output), output->ndim, b, sizeof b));
  }
  if ((rc = opd__wrap_dim(dim, grad->ndim, wrapped))) return rc;
  opd_dtype gdt = opd_tensor_dtype(grad), odt = opd_tensor_dtype(output);
  if (gdt != odt)
    return opd_error(OPD_EINVAL, "expected scalar type %s but found %s", opd_dtype_c10_name(gdt),
                     opd_dtype_c10_name(odt));
  bool half_to_float = gdt != input_dtype;
  if (half_to_float && !(gdt == OPD_FLOAT32 && input_dtype == OPD_FLOAT16))
    return opd_error(OPD_EINVAL, "expected input and grad types to match, or input to be at::Half "
                                 "and grad to be at::Float");
  same_as(grad, spec);
  spec->dtype = half_to_float ? OPD_FLOAT16 : gdt;
  return 0;
}

static int floating(opd_dtype dt, const char *name) {
  if (!opd_dtype_is_floating(dt))
    return opd_error(OPD_EINVAL, "\"%s\" not implemented for '%s'", name, opd_dtype_c10_name(dt));
  return 0;
}

static int check_reduction(int64_t reduction) {
  if (reduction < OPD__REDUCTION_NONE || reduction > OPD__REDUCTION_SUM)
    return opd_error(OPD_EINVAL,
                     "reduction == Reduction::Mean || reduction == Reduction::Sum: "
                     "unknown reduction %lld",
                     (long long)reduction);
  return 0;
}

int opd__pointwise_loss_meta(opd_tensor *self, opd_tensor *target, int64_t reduction,
                             const char *name, opd_out_spec *spec) {
  int rc = opd__binary_meta(self, target, spec);
  if (!rc) rc = check_reduction(reduction);
  if (!rc) rc = floating(spec->dtype, name);
  if (!rc && reduction != OPD__REDUCTION_NONE) spec->ndim = 0;
  return rc;
}

int opd__pointwise_loss_backward_meta(opd_tensor *grad, opd_tensor *self, opd_tensor *target,
                                      const char *name, opd_out_spec *spec) {
  opd_tensor *t[3] = {self, target, grad};
  int rc = opd__broadcast_tensors(t, 3, spec);
  if (rc) return rc;
  if ((rc = opd__check_inplace_shape(self, target)) || (rc = opd__check_inplace_shape(self, grad)))
    return rc;
  opd_dtype common = promote(t, 3), dt = opd_tensor_dtype(self);
  if (common != dt)
    return opd_error(OPD_EINVAL, "Found dtype %s but expected %s", opd_dtype_c10_name(common),
                     opd_dtype_c10_name(dt));
  spec->dtype = dt;
  return floating(dt, name);
}

static int nll_loss_check(opd_tensor *self, opd_tensor *target, opd_tensor *weight, int64_t *batch,
                          int64_t *classes) {
  opd_device device;
  int rc = opd__common_device((opd_tensor *const[]){self, target, weight}, 3, &device);
  if (rc) return rc;
  if (self->ndim < 1 || self->ndim > 2)
    return opd_error(OPD_EINVAL, "input tensor should be 1D or 2D");
  if (target->ndim > 1)
    return opd_error(OPD_EINVAL, "0D or 1D target tensor expected, multi-target not supported");
  const int64_t *s = opd_tensor_sizes(self);
  bool no_batch = self->ndim == 1 && target->ndim == 0;
  if (!no_batch && (target->ndim != 1 || s[0] != opd_tensor_sizes(target)[0])) {
    char a[256], b[256];
    return opd_error(OPD_EINVAL, "size mismatch (got input: %s, target: %s)",
                     opd__format_sizes(s, self->ndim, a, sizeof a),
                     opd__format_sizes(opd_tensor_sizes(target), target->ndim, b, sizeof b));
  }
  opd_dtype dt = opd_tensor_dtype(self), tdt = opd_tensor_dtype(target);
  if ((rc = floating(dt, "nll_loss_out_frame"))) return rc;
  if (tdt != OPD_INT64)
    return opd_error(OPD_EINVAL, "expected scalar type Long but found %s", opd_dtype_c10_name(tdt));
  if (weight && opd_tensor_dtype(weight) != dt)
    return opd_error(OPD_EINVAL, "expected scalar type %s but found %s", opd_dtype_c10_name(dt),
                     opd_dtype_c10_name(opd_tensor_dtype(weight)));
  *classes = s[self->ndim - 1];
  *batch = self->ndim == 2 ? s[0] : 1;
  if (weight && (weight->ndim > 1 || weight->numel != *classes)) {
    char a[256];
    return opd_error(OPD_EINVAL,
                     "weight tensor should be defined either for all %lld classes or no classes "
                     "but got weight tensor of shape: %s",
                     (long long)*classes,
                     opd__format_sizes(opd_tensor_sizes(weight), weight->ndim, a, sizeof a));
  }
  return 0;
}

int opd__nll_loss_meta(opd_tensor *self, opd_tensor *target, opd_tensor *weight, int64_t reduction,
                       int64_t *batch, int64_t *classes, opd_out_spec *out,
                       opd_out_spec *total_weight_spec) {
  int rc = nll_loss_check(self, target, weight, batch, classes);
  if (rc) return rc;
  out->dtype = total_weight_spec->dtype = opd_tensor_dtype(self);
  total_weight_spec->ndim = 0;
  out->ndim = reduction == OPD__REDUCTION_NONE && self->ndim == 2 ? 1 : 0;
  out->sizes[0] = *batch;
  return 0;
}

int opd__nll_loss_backward_meta(opd_tensor *grad, opd_tensor *self, opd_tensor *target,
                                opd_tensor *weight, int64_t reduction, opd_tensor *total_weight,
                                int64_t *batch, int64_t *classes, opd_out_spec *spec) {
  int rc = nll_loss_check(self, target, weight, batch, classes);
  opd_device device;
  if (!rc) rc = opd__common_device((opd_tensor *const[]){grad, self, total_weight}, 3, &device);
  if (rc) return rc;
  char a[256];
  if (total_weight->numel != 1)
    return opd_error(
        OPD_EINVAL,
        "expected total_weight to be a  single element tensor, got: %s (%lld "
        "elements)",
        opd__format_sizes(opd_tensor_sizes(total_weight), total_weight->ndim, a, sizeof a),
        (long long)total_weight->numel);
  if (reduction == OPD__REDUCTION_NONE && self->ndim == 2) {
    if (grad->ndim != 1 || opd_tensor_sizes(grad)[0] != *batch)
      return opd_error(OPD_EINVAL,
                       "Expected a tensor of dimension 1 and tensor.size[0] == %lld but got: "
                       "dimension %d and tensor.size[0] = %lld",
                       (long long)*batch, grad->ndim,
                       (long long)(grad->ndim > 0 ? opd_tensor_sizes(grad)[0] : 1));
  } else if (grad->numel != 1) {
    return opd_error(OPD_EINVAL, "Expected a single element grad_output tensor, but got: %s",
                     opd__format_sizes(opd_tensor_sizes(grad), grad->ndim, a, sizeof a));
  }
  same_as(self, spec);
  return 0;
}

/* check_inputs_nll_loss2d: self (N, C, H, W), target (N, H, W) of int64, weight (C) of
 * self's dtype or absent; float32, float64 or bfloat16. */
static int nll_loss2d_check(opd_tensor *self, opd_tensor *target, opd_tensor *weight,
                            int64_t *batch, int64_t *classes, int64_t *plane) {
  opd_device device;
  int rc = opd__common_device((opd_tensor *const[]){self, target, weight}, 3, &device);
  if (rc) return rc;
  if (target->ndim != 3)
    return opd_error(OPD_EINVAL,
                     "only batches of spatial targets supported (3D tensors) but got targets of "
                     "dimension: %d",
                     target->ndim);
  if (self->ndim != 4)
    return opd_error(OPD_EINVAL,
                     "only batches of spatial inputs supported (4D tensors), but got input of "
                     "dimension: %d",
                     self->ndim);
  const int64_t *s = opd_tensor_sizes(self), *ts = opd_tensor_sizes(target);
  if (weight && weight->numel != s[1])
    return opd_error(OPD_EINVAL, "weight tensor should be defined either for all or no classes");
  if (s[0] != ts[0] || s[2] != ts[1] || s[3] != ts[2]) {
    char a[256], b[256];
    return opd_error(OPD_EINVAL, "size mismatch (got input: %s , target: %s",
                     opd__format_sizes(s, 4, a, sizeof a), opd__format_sizes(ts, 3, b, sizeof b));
  }
  opd_dtype dt = opd_tensor_dtype(self), tdt = opd_tensor_dtype(target);
  if (dt != OPD_FLOAT32 && dt != OPD_FLOAT64 && dt != OPD_BFLOAT16)
    return opd_error(OPD_EINVAL, "\"nll_loss2d_forward_out_frame\" not implemented for '%s'",
                     opd_dtype_c10_name(dt));
  if (tdt != OPD_INT64)
    return opd_error(OPD_EINVAL, "expected scalar type Long but found %s", opd_dtype_c10_name(tdt));
  if (weight && opd_tensor_dtype(weight) != dt)
    return opd_error(OPD_EINVAL, "expected scalar type %s but found %s", opd_dtype_c10_name(dt),
                     opd_dtype_c10_name(opd_tensor_dtype(weight)));
  *batch = s[0];
  *classes = s[1];
  *plane = s[2] * s[3]; /* the tensor's sizes: a product that fits unless one is 0 */
  if (s[2] == 0 || s[3] == 0) *plane = 0;
  return 0;
}

int opd__nll_loss2d_meta(opd_tensor *self, opd_tensor *target, opd_tensor *weight,
                         int64_t reduction, int64_t *batch, int64_t *classes, int64_t *plane,
                         opd_out_spec *out, opd_out_spec *total_weight_spec) {
  int rc = nll_loss2d_check(self, target, weight, batch, classes, plane);
  if (rc) return rc;
  out->dtype = total_weight_spec->dtype = opd_tensor_dtype(self);
  total_weight_spec->ndim = 0;
  out->ndim = 0;
  if (reduction == OPD__REDUCTION_NONE) {
    out->ndim = 3;
    memcpy(out->sizes, opd_tensor_sizes(target), 3 * sizeof *out->sizes);
  }
  return 0;
}

int opd__nll_loss2d_backward_meta(opd_tensor *grad, opd_tensor *self, opd_tensor *target,
                                  opd_tensor *weight, int64_t reduction, opd_tensor *total_weight,
                                  int64_t *batch, int64_t *classes, int64_t *plane,
                                  opd_out_spec *spec) {
  int rc = nll_loss2d_check(self, target, weight, batch, classes, plane);
  opd_device device;
  if (!rc) rc = opd__common_device((opd_tensor *const[]){grad, self, total_weight}, 3, &device);
  if (rc) return rc;
  char a[256], b[256];
  if (total_weight->numel != 1)
    return opd_error(
        OPD_EINVAL, "expected total_weight to be a single element tensor, got: %s (%lld elements)",
        opd__format_sizes(opd_tensor_sizes(total_weight), total_weight->ndim, a, sizeof a),
        (long long)total_weight->numel);
  opd_dtype dt = opd_tensor_dtype(self);
  opd_tensor *same_dtype[2] = {grad, total_weight};
  for (int i = 0; i < 2; i++)
    if (opd_tensor_dtype(same_dtype[i]) != dt)
      return opd_error(OPD_EINVAL, "expected scalar type %s but found %s", opd_dtype_c10_name(dt),
                       opd_dtype_c10_name(opd_tensor_dtype(same_dtype[i])));
  if (reduction == OPD__REDUCTION_NONE) {
    bool same = grad->ndim == 3;
    for (int i = 0; same && i < 3; i++)
      same = opd_tensor_sizes(grad)[i] == opd_tensor_sizes(target)[i];
    if (!same)
      return opd_error(OPD_EINVAL, "size mismatch (got grad_output: %s target: %s",
                       opd__format_sizes(opd_tensor_sizes(grad), grad->ndim, a, sizeof a),
                       opd__format_sizes(opd_tensor_sizes(target), 3, b, sizeof b));
  } else if (grad->ndim > 1 || grad->numel != 1) {
    return opd_error(OPD_EINVAL, "Expected a single element grad_output tensor, but got: %s",
                     opd__format_sizes(opd_tensor_sizes(grad), grad->ndim, a, sizeof a));
  }
  same_as(self, spec);
  return 0;
}

/* target and weight broadcast to self's shape */
static int bce_shapes(opd_tensor *self, opd_tensor *target, opd_tensor *weight) {
  opd_device device;
  int rc = opd__common_device((opd_tensor *const[]){self, target, weight}, 3, &device);
  opd_tensor *others[2] = {target, weight};
  for (int i = 0; i < 2 && !rc; i++) {
    if (!others[i]) continue;
    int64_t sizes[OPD_MAX_DIMS];
    int nd;
    rc = opd__broadcast_shapes(opd_tensor_sizes(self), self->ndim, opd_tensor_sizes(others[i]),
                               others[i]->ndim, sizes, &nd);
    if (!rc) rc = opd__check_inplace_shape(self, others[i]);
  }
  return rc;
}

int opd__bce_meta(opd_tensor *self, opd_tensor *target, opd_tensor *weight, int64_t reduction,
                  opd_out_spec *spec) {
  int rc = bce_shapes(self, target, weight);
  if (!rc) rc = check_reduction(reduction);
  if (rc) return rc;
  same_as(self, spec);
  if (reduction != OPD__REDUCTION_NONE) spec->ndim = 0;
  return floating(spec->dtype, "binary_cross_entropy");
}

int opd__bce_backward_meta(opd_tensor *grad, opd_tensor *self, opd_tensor *target,
                           opd_tensor *weight, opd_out_spec *spec) {
  int rc = bce_shapes(self, target, weight);
  if (!rc) rc = opd__check_inplace_shape(self, grad);
  if (rc) return rc;
  same_as(self, spec);
  return floating(spec->dtype, "binary_cross_entropy_backward");
}

/* OPD_EINVAL unless every tensor given has dtype dt (PyTorch's error) */
static int same_dtype(opd_dtype dt, opd_tensor *const *t, int n) {
  for (int i = 0; i < n; i++)
    if (t[i] && opd_tensor_dtype(t[i]) != dt)
      return opd_error(OPD_EINVAL, "expected scalar type %s but found %s", opd_dtype_c10_name(dt),
                       opd_dtype_c10_name(opd_tensor_dtype(t[i])));
  return 0;
}

/* t's sizes equal to sizes[0..n) */
static bool has_shape(const opd_tensor *t, const int64_t *sizes, int64_t n) {
  if (t->ndim != n) return false;
  for (int k = 0; k < t->ndim; k++)
    if (opd_tensor_sizes(t)[k] != sizes[k]) return false;
  return true;
}

static opd_tensor *opt_tensor(const opd_ivalue *v) {
  return v->tag == OPD_IV_TENSOR ? v->u.t : NULL;
}

/* A bool[3] output_mask into mask. */
static int output_mask(const opd_ivalue *v, bool *mask) {
  if (v->tag != OPD_IV_BOOL_LIST || v->len != 3)
    return opd_error(OPD_EINVAL, "output_mask: expected a bool[3]");
  for (int k = 0; k < 3; k++) mask[k] = v->u.bools[k];
  return 0;
}

int opd__push_optional_results(opd_stack *stack, opd_tensor **res, int n, int rc) {
  int pushed = 0;
  for (; !rc && pushed < n; pushed++)
    rc = opd_stack_push(stack, res[pushed] ? opd_iv_tensor_steal(res[pushed]) : opd_iv_none());
  if (!rc) return 0;
  if (pushed > 0)
    opd_stack_drop(stack, (uint32_t)(pushed - 1)); /* the failed push destroyed its value */
  for (int i = pushed; i < n; i++)
    if (res[i]) opd_tensor_release(res[i]);
  return rc;
}

int opd__boxed_run(opd_stack *stack, int nargs, int nres, bool optional, opd__boxed_fill fill) {
  assert(nres <= 3 && stack->size >= (uint32_t)nargs);
  opd_tensor *res[3] = {NULL, NULL, NULL};
  int rc = fill(opd_stack_last(stack, (uint32_t)nargs), res);
  opd_stack_drop(stack, (uint32_t)nargs);
  return optional ? opd__push_optional_results(stack, res, nres, rc)
                  : opd__push_results(stack, res, nres, rc);
}

int opd__batch_norm_outputs(opd_ivalue *args, opd__batch_norm_args *a, opd_tensor **res) {
  opd_out_spec specs[3] = {{0}};
  int rc = opd__batch_norm_args_read(args, a);
  if (!rc) rc = opd__batch_norm_meta(a, specs);
  for (int k = 0; k < 3 && !rc; k++)
    rc = opd__alloc_output(&specs[k], opd_tensor_device(a->input), &res[k]);
  return rc;
}

int opd__batch_norm_backward_outputs(opd_ivalue *args, opd__batch_norm_backward_args *a,
                                     opd_tensor **res) {
  opd_out_spec specs[3] = {{0}};
  int rc = opd__batch_norm_backward_args_read(args, a);
  if (!rc) rc = opd__batch_norm_backward_meta(a, specs);
  for (int k = 0; k < 3 && !rc; k++)
    if (a->mask[k]) rc = opd__alloc_output(&specs[k], opd_tensor_device(a->bn.input), &res[k]);
  return rc;
}

int opd__layer_norm_backward_outputs(opd_ivalue *args, opd__norm_backward_args *a,
                                     opd_tensor **res) {
  opd_out_spec specs[3] = {{0}};
  int rc = opd__layer_norm_backward_args(args, a);
  if (!rc) rc = opd__layer_norm_backward_meta(a, specs);
  for (int k = 0; k < 3 && !rc; k++)
    if (a->mask[k]) rc = opd__alloc_output(&specs[k], opd_tensor_device(a->input), &res[k]);
  return rc;
}

int opd__nll_forward_args_read(opd_ivalue *args, bool two_d, opd__nll_forward_args *a) {
  if (args[0].tag != OPD_IV_TENSOR || args[1].tag != OPD_IV_TENSOR ||
      (args[2].tag != OPD_IV_TENSOR && args[2].tag != OPD_IV_NONE) || args[3].tag != OPD_IV_INT ||
      args[4].tag != OPD_IV_INT)
    return opd_error(OPD_EINVAL, "%s: expected (Tensor, Tensor, Tensor?, int, int) arguments",
                     two_d ? "nll_loss2d_forward" : "nll_loss_forward");
  *a = (opd__nll_forward_args){.self = args[0].u.t,
                               .target = args[1].u.t,
                               .weight = args[2].tag == OPD_IV_TENSOR ? args[2].u.t : NULL,
                               .reduction = args[3].u.i,
                               .ignore_index = args[4].u.i,
                               .plane = 1};
  if (two_d)
    return opd__nll_loss2d_meta(a->self, a->target, a->weight, a->reduction, &a->batch, &a->classes,
                                &a->plane, &a->out_spec, &a->tw_spec);
  return opd__nll_loss_meta(a->self, a->target, a->weight, a->reduction, &a->batch, &a->classes,
                            &a->out_spec, &a->tw_spec);
}

int opd__layer_norm_backward_args(opd_ivalue *args, opd__norm_backward_args *a) {
  if (args[0].tag != OPD_IV_TENSOR || args[1].tag != OPD_IV_TENSOR ||
      args[2].tag != OPD_IV_INT_LIST || args[3].tag != OPD_IV_TENSOR ||
      args[4].tag != OPD_IV_TENSOR)
    return opd_error(OPD_EINVAL, "native_layer_norm_backward: expected (Tensor, Tensor, int[], "
                                 "Tensor, Tensor, Tensor?, Tensor?, bool[3]) arguments");
  *a = (opd__norm_backward_args){.grad = args[0].u.t,
                                 .input = args[1].u.t,
                                 .mean = args[3].u.t,
                                 .rstd = args[4].u.t,
                                 .weight = opt_tensor(&args[5]),
                                 .bias = opt_tensor(&args[6]),
                                 .normalized_shape = opd__iv_int_list(&args[2])};
  int rc = output_mask(&args[7], a->mask);
  if (rc) return rc;
  opd_tensor *all[6] = {a->grad, a->input, a->mean, a->rstd, a->weight, a->bias};
  opd_device device;
  if ((rc = opd__common_device(all, 6, &device))) return rc;
  opd_out_spec out, stat;
  if ((rc = opd__layer_norm_meta(a->input, a->normalized_shape, a->weight, a->bias, &out, &stat,
                                 &a->rows, &a->cols)))
    return rc;
  opd_dtype dt = opd_tensor_dtype(a->input);
  if ((rc = floating(dt, "layer_norm_backward_cpu")) || (rc = same_dtype(dt, all, 6))) return rc;
  char x[256], y[256];
  if (!has_shape(a->grad, opd_tensor_sizes(a->input), a->input->ndim))
    return opd_error(OPD_EINVAL, "layer_norm_backward: grad_out has shape %s, input %s",
                     opd__format_sizes(opd_tensor_sizes(a->grad), a->grad->ndim, x, sizeof x),
                     opd__format_sizes(opd_tensor_sizes(a->input), a->input->ndim, y, sizeof y));
  if (a->mean->numel != a->rows || a->rstd->numel != a->rows)
    return opd_error(OPD_EINVAL,
                     "layer_norm_backward: mean and rstd must have %lld elements, got %lld and "
                     "%lld",
                     (long long)a->rows, (long long)a->mean->numel, (long long)a->rstd->numel);
  return 0;
}

int opd__layer_norm_backward_meta(const opd__norm_backward_args *a, opd_out_spec *specs) {
  same_as(a->input, &specs[0]);
  const opd_tensor *affine[2] = {a->weight, a->bias};
  for (int k = 0; k < 2; k++) {
    opd_out_spec *s = &specs[k + 1];
    s->dtype = opd_tensor_dtype(a->input);
    s->ndim = (int)a->normalized_shape.len;
    memcpy(s->sizes, affine[k] ? opd_tensor_sizes(affine[k]) : a->normalized_shape.data,
           (size_t)s->ndim * sizeof *s->sizes);
  }
  return 0;
}

static bool is_double(const opd_ivalue *v) {
  return v->tag == OPD_IV_DOUBLE || v->tag == OPD_IV_INT;
}
static double as_double(const opd_ivalue *v) {
  return v->tag == OPD_IV_DOUBLE ? v->u.d : (double)v->u.i;
}

/* The checks of batch norm's tensors (a->input set, the others NULL or given). */
static int batch_norm_check(opd__batch_norm_args *a, opd_tensor *const *more, int nmore) {
  opd_tensor *all[8] = {a->input, a->weight, a->bias, a->running_mean, a->running_var};
  for (int i = 0; i < nmore; i++) all[5 + i] = more[i];
  opd_device device;
  int rc = opd__common_device(all, 5 + nmore, &device);
  if (rc) return rc;
  opd_tensor *x = a->input;
  int64_t c;
  if ((rc = opd__wrap_dim(1, x->ndim, &c))) return rc;
  a->batch = opd_tensor_sizes(x)[0];
  a->channels = opd_tensor_sizes(x)[1];
  a->spatial = 1;
  for (int k = 2; k < x->ndim; k++) a->spatial *= opd_tensor_sizes(x)[k];
  opd_dtype dt = opd_tensor_dtype(x);
  if ((rc = floating(dt, "batch_norm")) || (rc = same_dtype(dt, all + 1, 4 + nmore))) return rc;
  static const char *const names[] = {"weight",      "bias",      "running_mean",
                                      "running_var", "save_mean", "save_invstd"};
  for (int i = 1; i < 5 + nmore; i++)
    if (all[i] && all[i]->numel != a->channels)
      return opd_error(OPD_EINVAL, "%s should contain %lld elements not %lld", names[i - 1],
                       (long long)a->channels, (long long)all[i]->numel);
  if (!a->training && (!a->running_mean || !a->running_var))
    return opd_error(OPD_EINVAL, "running_mean and running_var must be defined in evaluation mode");
  return 0;
}

int opd__batch_norm_args_read(opd_ivalue *args, opd__batch_norm_args *a) {
  if (args[0].tag != OPD_IV_TENSOR || args[5].tag != OPD_IV_BOOL || !is_double(&args[6]) ||
      !is_double(&args[7]))
    return opd_error(OPD_EINVAL, "native_batch_norm: expected (Tensor, Tensor?, Tensor?, Tensor?, "
                                 "Tensor?, bool, float, float) arguments");
  *a = (opd__batch_norm_args){.input = args[0].u.t,
                              .weight = opt_tensor(&args[1]),
                              .bias = opt_tensor(&args[2]),
                              .running_mean = opt_tensor(&args[3]),
                              .running_var = opt_tensor(&args[4]),
                              .training = args[5].u.b,
                              .momentum = as_double(&args[6]),
                              .eps = as_double(&args[7])};
  return batch_norm_check(a, NULL, 0);
}

int opd__batch_norm_meta(const opd__batch_norm_args *a, opd_out_spec *specs) {
  same_as(a->input, &specs[0]);
  for (int k = 1; k < 3; k++)
    specs[k] = (opd_out_spec){
        .ndim = 1, .dtype = specs[0].dtype, .sizes = {a->training ? a->channels : 0}};
  return 0;
}

int opd__batch_norm_backward_args_read(opd_ivalue *args, opd__batch_norm_backward_args *a) {
  if (args[0].tag != OPD_IV_TENSOR || args[1].tag != OPD_IV_TENSOR || args[7].tag != OPD_IV_BOOL ||
      !is_double(&args[8]))
    return opd_error(OPD_EINVAL, "native_batch_norm_backward: expected (Tensor, Tensor, Tensor?, "
                                 "Tensor?, Tensor?, Tensor?, Tensor?, bool, float, bool[3]) "
                                 "arguments");
  *a = (opd__batch_norm_backward_args){.bn = {.input = args[1].u.t,
                                              .weight = opt_tensor(&args[2]),
                                              .running_mean = opt_tensor(&args[3]),
                                              .running_var = opt_tensor(&args[4]),
                                              .training = args[7].u.b,
                                              .eps = as_double(&args[8])},
                                       .grad = args[0].u.t,
                                       .save_mean = opt_tensor(&args[5]),
                                       .save_invstd = opt_tensor(&args[6])};
  int rc = output_mask(&args[9], a->mask);
  if (!rc)
    rc = batch_norm_check(&a->bn, (opd_tensor *[]){a->save_mean, a->save_invstd, a->grad}, 2);
  if (rc) return rc;
  if (a->bn.training && (!a->save_mean || !a->save_invstd))
    return opd_error(OPD_EINVAL, "save_mean and save_invstd must be defined in training mode");
  char x[256], y[256];
  opd_tensor *in = a->bn.input;
  if (!has_shape(a->grad, opd_tensor_sizes(in), in->ndim))
    return opd_error(OPD_EINVAL, "batch_norm_backward: grad_out has shape %s, input %s",
                     opd__format_sizes(opd_tensor_sizes(a->grad), a->grad->ndim, x, sizeof x),
                     opd__format_sizes(opd_tensor_sizes(in), in->ndim, y, sizeof y));
  return same_dtype(opd_tensor_dtype(in), &a->grad, 1);
}

int opd__batch_norm_backward_meta(const opd__batch_norm_backward_args *a, opd_out_spec *specs) {
  same_as(a->bn.input, &specs[0]);
  for (int k = 1; k < 3; k++)
    specs[k] = (opd_out_spec){.ndim = 1, .dtype = specs[0].dtype, .sizes = {a->bn.channels}};
  return 0;
}

int opd__dropout_args_read(opd_ivalue *args, opd_tensor **input, double *p, bool *train,
                           opd_out_spec *out, opd_out_spec *mask) {
  if (args[0].tag != OPD_IV_TENSOR || !is_double(&args[1]) ||
      (args[2].tag != OPD_IV_BOOL && args[2].tag != OPD_IV_NONE))
    return opd_error(OPD_EINVAL, "native_dropout: expected (Tensor, float, bool?) arguments");
  *input = args[0].u.t;
  *p = as_double(&args[1]);
  *train = args[2].tag == OPD_IV_NONE || args[2].u.b;
  same_as(*input, out);
  *mask = *out;
  mask->dtype = OPD_BOOL;
  int rc = floating(out->dtype, "bernoulli_tensor_cpu_self_");
  if (rc) return rc;
  double p1m = 1 - *p;
  if (*train && (*input)->numel > 0 && !(p1m >= 0 && p1m <= 1))
    return opd_error(OPD_EINVAL, "bernoulli_ expects p to be in [0, 1], but got p=%g", p1m);
  return 0;
}

int opd__dropout_backward_meta(opd_tensor *grad, opd_tensor *mask, opd_out_spec *spec) {
  int rc = opd__broadcast_tensors((opd_tensor *[]){grad, mask}, 2, spec);
  if (rc) return rc;
  spec->dtype = opd_tensor_dtype(grad);
  return floating(spec->dtype, "mul_cpu");
}

static int index_dtype(opd_tensor *indices) {
  opd_dtype dt = opd_tensor_dtype(indices);
  if (dt != OPD_INT64 && dt != OPD_INT32)
    return opd_error(OPD_EINVAL,
                     "Expected tensor for argument #1 'indices' to have one of the following "
                     "scalar types: Long, Int; but got %s instead",
                     opd_dtype_c10_name(dt));
  return 0;
}

int opd__embedding_backward_meta(opd_tensor *grad, opd_tensor *indices, int64_t num_weights,
                                 opd_out_spec *spec) {
  opd_device device;
  int rc = opd__common_device((opd_tensor *const[]){grad, indices}, 2, &device);
  if (rc || (rc = index_dtype(indices))) return rc;
  if ((rc = floating(opd_tensor_dtype(grad), "embedding_dense_backward"))) return rc;
  bool ok = grad->ndim == indices->ndim + 1;
  for (int k = 0; ok && k < indices->ndim; k++)
    ok = opd_tensor_sizes(grad)[k] == opd_tensor_sizes(indices)[k];
  if (!ok) {
    char a[256], b[256];
    return opd_error(OPD_EINVAL,
                     "embedding_dense_backward: grad_output of shape %s does not match indices "
                     "of shape %s",
                     opd__format_sizes(opd_tensor_sizes(grad), grad->ndim, a, sizeof a),
                     opd__format_sizes(opd_tensor_sizes(indices), indices->ndim, b, sizeof b));
  }
  if (num_weights < 0)
    return opd_error(OPD_EINVAL, "Trying to create tensor with negative dimension %lld",
                     (long long)num_weights);
  *spec = (opd_out_spec){.ndim = 2,
                         .dtype = opd_tensor_dtype(grad),
                         .sizes = {num_weights, opd_tensor_sizes(grad)[grad->ndim - 1]}};
  return 0;
}

int opd__embedding_renorm_meta(opd_tensor *self, opd_tensor *indices) {
  opd_device device;
  int rc = opd__common_device((opd_tensor *const[]){self, indices}, 2, &device);
  if (rc || (rc = index_dtype(indices))) return rc;
  if (self->ndim != 2)
    return opd_error(OPD_EINVAL,
                     "Expected 2-dimensional tensor, but got %d-dimensional tensor "
                     "for argument #1 'self' (while checking arguments for "
                     "embedding_renorm_)",
                     self->ndim);
  return floating(opd_tensor_dtype(self), "embedding_renorm_cpu_");
}

static int group_norm_check(opd__group_norm_args *a, opd_tensor *const *more, int nmore) {
  opd_tensor *all[6] = {a->input, a->weight, a->bias};
  for (int i = 0; i < nmore; i++) all[3 + i] = more[i];
  opd_device device;
  int rc = opd__common_device(all, 3 + nmore, &device);
  if (rc) return rc;
  opd_tensor *x = a->input;
  int64_t want;
  if (a->n < 0 || a->c < 0 || a->hxw < 0 || opd_ckd_mul(&want, a->n, a->c) ||
      opd_ckd_mul(&want, want, a->hxw) || want != x->numel)
    return opd_error(OPD_EINVAL, "Expected X.numel() == N * C * HxW to be true, but got false.");
  char s1[256], s2[256];
  if (a->group <= 0 || a->c % a->group != 0)
    return opd_error(OPD_EINVAL,
                     "Expected number of channels in input to be divisible by num_groups, but got "
                     "input of shape %s and num_groups=%lld",
                     opd__format_sizes(opd_tensor_sizes(x), x->ndim, s1, sizeof s1),
                     (long long)a->group);
  static const char *const names[] = {"weight", "bias"};
  for (int k = 0; k < 2; k++) {
    opd_tensor *t = all[1 + k];
    if (t && (t->ndim != 1 || t->numel != a->c))
      return opd_error(OPD_EINVAL,
                       "Expected %s to be a vector of size equal to the number of channels in "
                       "input, but got %s of shape %s and input of shape %s",
                       names[k], names[k],
                       opd__format_sizes(opd_tensor_sizes(t), t->ndim, s1, sizeof s1),
                       opd__format_sizes(opd_tensor_sizes(x), x->ndim, s2, sizeof s2));
  }
  opd_dtype dt = opd_tensor_dtype(x);
  if ((rc = floating(dt, "GroupNormKernelImpl"))) return rc;
  return same_dtype(dt, all + 1, 2 + nmore);
}

static bool group_norm_ints(const opd_ivalue *v, int n) {
  for (int i = 0; i < n; i++)
    if (v[i].tag != OPD_IV_INT) return false;
  return true;
}

int opd__group_norm_args_read(opd_ivalue *args, opd__group_norm_args *a) {
  if (args[0].tag != OPD_IV_TENSOR || !group_norm_ints(&args[3], 4) || !is_double(&args[7]))
    return opd_error(OPD_EINVAL, "native_group_norm: expected (Tensor, Tensor?, Tensor?, int, int, "
                                 "int, int, float) arguments");
  *a = (opd__group_norm_args){.input = args[0].u.t,
                              .weight = opt_tensor(&args[1]),
                              .bias = opt_tensor(&args[2]),
                              .n = args[3].u.i,
                              .c = args[4].u.i,
                              .hxw = args[5].u.i,
                              .group = args[6].u.i,
                              .eps = as_double(&args[7])};
  return group_norm_check(a, NULL, 0);
}

int opd__group_norm_meta(const opd__group_norm_args *a, opd_out_spec *specs) {
  same_as(a->input, &specs[0]);
  for (int k = 1; k < 3; k++)
    specs[k] = (opd_out_spec){.ndim = 2, .dtype = specs[0].dtype, .sizes = {a->n, a->group}};
  return 0;
}

int opd__group_norm_backward_args_read(opd_ivalue *args, opd__group_norm_backward_args *a) {
  if (args[0].tag != OPD_IV_TENSOR || args[1].tag != OPD_IV_TENSOR ||
      args[2].tag != OPD_IV_TENSOR || args[3].tag != OPD_IV_TENSOR || !group_norm_ints(&args[5], 4))
    return opd_error(OPD_EINVAL, "native_group_norm_backward: expected (Tensor, Tensor, Tensor, "
                                 "Tensor, Tensor?, int, int, int, int, bool[3]) arguments");
  *a = (opd__group_norm_backward_args){.gn = {.input = args[1].u.t,
                                              .weight = opt_tensor(&args[4]),
                                              .n = args[5].u.i,
                                              .c = args[6].u.i,
                                              .hxw = args[7].u.i,
                                              .group = args[8].u.i},
                                       .grad = args[0].u.t,
                                       .mean = args[2].u.t,
                                       .rstd = args[3].u.t};
  int rc = output_mask(&args[9], a->mask);
  if (!rc) rc = group_norm_check(&a->gn, (opd_tensor *[]){a->grad, a->mean, a->rstd}, 3);
  if (rc) return rc;
  opd_tensor *in = a->gn.input;
  char x[256], y[256];
  if (!has_shape(a->grad, opd_tensor_sizes(in), in->ndim))
    return opd_error(OPD_EINVAL, "group_norm_backward: grad_out has shape %s, input %s",
                     opd__format_sizes(opd_tensor_sizes(a->grad), a->grad->ndim, x, sizeof x),
                     opd__format_sizes(opd_tensor_sizes(in), in->ndim, y, sizeof y));
  int64_t rows = a->gn.n * a->gn.group;
  if (a->mean->numel != rows || a->rstd->numel != rows)
    return opd_error(OPD_EINVAL,
                     "group_norm_backward: mean and rstd must have %lld elements, got %lld and "
                     "%lld",
                     (long long)rows, (long long)a->mean->numel, (long long)a->rstd->numel);
  return 0;
}

int opd__group_norm_backward_meta(const opd__group_norm_backward_args *a, opd_out_spec *specs) {
  same_as(a->gn.input, &specs[0]);
  for (int k = 1; k < 3; k++)
    specs[k] = (opd_out_spec){.ndim = 1, .dtype = specs[0].dtype, .sizes = {a->gn.c}};
  return 0;
}

int opd__prelu_backward_meta(opd_tensor *grad, opd_tensor *self, opd_tensor *weight,
                             opd_out_spec *specs) {
  int64_t sizes[OPD_MAX_DIMS], strides[OPD_MAX_DIMS];
  int rc = opd__prelu_meta(self, weight, &specs[0], sizes, strides);
  if (rc) return rc;
  opd_device device;
  if ((rc = opd__common_device((opd_tensor *const[]){grad, self}, 2, &device))) return rc;
  if (!has_shape(grad, opd_tensor_sizes(self), self->ndim)) {
    char a[256], b[256];
    return opd_error(OPD_EINVAL, "prelu_backward: grad_output has shape %s, self %s",
                     opd__format_sizes(opd_tensor_sizes(grad), grad->ndim, a, sizeof a),
                     opd__format_sizes(opd_tensor_sizes(self), self->ndim, b, sizeof b));
  }
  if ((rc = same_dtype(specs[0].dtype, &grad, 1))) return rc;
  same_as(weight, &specs[1]);
  return 0;
}

/* ---- Meta kernels ---- */

static int meta_out(int rc, const opd_out_spec *spec, opd_tensor *const *inputs, int n,
                    opd_tensor **out) {
  return rc ? rc : opd__alloc_elementwise_output(spec, inputs, n, meta_device, out);
}

static int meta_activation(opd_tensor *self, opd__act act, int n, const opd_scalar *params,
                           opd_tensor **out) {
  opd_out_spec spec;
  return meta_out(opd__activation_meta(self, act, n, params, &spec), &spec, &self, 1, out);
}

static int meta_activation_backward(opd_tensor *grad, opd_tensor *self, opd__act act, int n,
                                    const opd_scalar *params, opd_tensor **out) {
  opd_out_spec spec;
  return meta_out(opd__activation_backward_meta(grad, self, act, n, params, &spec), &spec,
                  (opd_tensor *[]){grad, self}, 2, out);
}

int opd__meta_hardtanh(const opd_kernel_ctx *ctx, opd_tensor *self, opd_scalar min_val,
                       opd_scalar max_val, opd_tensor **out) {
  (void)ctx;
  return meta_activation(self, OPD__ACT_HARDTANH, 2, (opd_scalar[]){min_val, max_val}, out);
}

int opd__meta_threshold(const opd_kernel_ctx *ctx, opd_tensor *self, opd_scalar threshold,
                        opd_scalar value, opd_tensor **out) {
  (void)ctx;
  return meta_activation(self, OPD__ACT_THRESHOLD, 2, (opd_scalar[]){threshold, value}, out);
}

int opd__meta_leaky_relu(const opd_kernel_ctx *ctx, opd_tensor *self, opd_scalar negative_slope,
                         opd_tensor **out) {
  (void)ctx;
  return meta_activation(self, OPD__ACT_LEAKY_RELU, 1, &negative_slope, out);
}

int opd__meta_elu(const opd_kernel_ctx *ctx, opd_tensor *self, opd_scalar alpha, opd_scalar scale,
                  opd_scalar input_scale, opd_tensor **out) {
  (void)ctx;
  return meta_activation(self, OPD__ACT_ELU, 3, (opd_scalar[]){alpha, scale, input_scale}, out);
}

int opd__meta_mish(const opd_kernel_ctx *ctx, opd_tensor *self, opd_tensor **out) {
  (void)ctx;
  return meta_activation(self, OPD__ACT_MISH, 0, NULL, out);
}

int opd__meta_softplus(const opd_kernel_ctx *ctx, opd_tensor *self, opd_scalar beta,
                       opd_scalar threshold, opd_tensor **out) {
  (void)ctx;
  return meta_activation(self, OPD__ACT_SOFTPLUS, 2, (opd_scalar[]){beta, threshold}, out);
}

int opd__meta_hardswish(const opd_kernel_ctx *ctx, opd_tensor *self, opd_tensor **out) {
  (void)ctx;
  return meta_activation(self, OPD__ACT_HARDSWISH, 0, NULL, out);
}

int opd__meta_hardsigmoid(const opd_kernel_ctx *ctx, opd_tensor *self, opd_tensor **out) {
  (void)ctx;
  return meta_activation(self, OPD__ACT_HARDSIGMOID, 0, NULL, out);
}

int opd__meta_threshold_backward(const opd_kernel_ctx *ctx, opd_tensor *grad_output,
                                 opd_tensor *self, opd_scalar threshold, opd_tensor **out) {
  (void)ctx;
  return meta_activation_backward(grad_output, self, OPD__ACT_THRESHOLD_BACKWARD, 1, &threshold,
                                  out);
}

int opd__meta_gelu_backward(const opd_kernel_ctx *ctx, opd_tensor *grad_output, opd_tensor *self,
                            const char *approximate, opd_tensor **out) {
  (void)ctx;
  bool tanh_approx;
  int rc = opd__gelu_approximate(approximate, &tanh_approx);
  if (rc) return rc;
  return meta_activation_backward(grad_output, self, OPD__ACT_GELU_BACKWARD, 0, NULL, out);
}

int opd__meta_silu_backward(const opd_kernel_ctx *ctx, opd_tensor *grad_output, opd_tensor *self,
                            opd_tensor **out) {
  (void)ctx;
  return meta_activation_backward(grad_output, self, OPD__ACT_SILU_BACKWARD, 0, NULL, out);
}

int opd__meta_sigmoid_backward(const opd_kernel_ctx *ctx, opd_tensor *grad_output,
                               opd_tensor *output, opd_tensor **out) {
  (void)ctx;
  return meta_activation_backward(grad_output, output, OPD__ACT_SIGMOID_BACKWARD, 0, NULL, out);
}

int opd__meta_tanh_backward(const opd_kernel_ctx *ctx, opd_tensor *grad_output, opd_tensor *output,
                            opd_tensor **out) {
  (void)ctx;
  return meta_activation_backward(grad_output, output, OPD__ACT_TANH_BACKWARD, 0, NULL, out);
}

int opd__meta_hardswish_backward(const opd_kernel_ctx *ctx, opd_tensor *grad_output,
                                 opd_tensor *self, opd_tensor **out) {
  (void)ctx;
  return meta_activation_backward(grad_output, self, OPD__ACT_HARDSWISH_BACKWARD, 0, NULL, out);
}

int opd__meta_hardsigmoid_backward(const opd_kernel_ctx *ctx, opd_tensor *grad_output,
                                   opd_tensor *self, opd_tensor **out) {
  (void)ctx;
  return meta_activation_backward(grad_output, self, OPD__ACT_HARDSIGMOID_BACKWARD, 0, NULL, out);
}

int opd__meta_hardtanh_backward(const opd_kernel_ctx *ctx, opd_tensor *grad_output,
                                opd_tensor *self, opd_scalar min_val, opd_scalar max_val,
                                opd_tensor **out) {
  (void)ctx;
  return meta_activation_backward(grad_output, self, OPD__ACT_HARDTANH_BACKWARD, 2,
                                  (opd_scalar[]){min_val, max_val}, out);
}

int opd__meta_leaky_relu_backward(const opd_kernel_ctx *ctx, opd_tensor *grad_output,
                                  opd_tensor *self, opd_scalar negative_slope, bool self_is_result,
                                  opd_tensor **out) {
  (void)ctx;
  int rc = opd__leaky_relu_backward_check(negative_slope, self_is_result);
  if (rc) return rc;
  return meta_activation_backward(grad_output, self, OPD__ACT_LEAKY_RELU_BACKWARD, 1,
                                  &negative_slope, out);
}

int opd__meta_elu_backward(const opd_kernel_ctx *ctx, opd_tensor *grad_output, opd_scalar alpha,
                           opd_scalar scale, opd_scalar input_scale, bool is_result,
                           opd_tensor *self_or_result, opd_tensor **out) {
  (void)ctx;
  int rc = opd__elu_backward_check(alpha, is_result);
  return rc ? rc
            : meta_activation_backward(grad_output, self_or_result, OPD__ACT_ELU_BACKWARD, 3,
                                       (opd_scalar[]){alpha, scale, input_scale}, out);
}

int opd__meta_softplus_backward(const opd_kernel_ctx *ctx, opd_tensor *grad_output,
                                opd_tensor *self, opd_scalar beta, opd_scalar threshold,
                                opd_tensor **out) {
  (void)ctx;
  return meta_activation_backward(grad_output, self, OPD__ACT_SOFTPLUS_BACKWARD, 2,
                                  (opd_scalar[]){beta, threshold}, out);
}

int opd__meta_mish_backward(const opd_kernel_ctx *ctx, opd_tensor *grad_output, opd_tensor *self,
                            opd_tensor **out) {
  (void)ctx;
  return meta_activation_backward(grad_output, self, OPD__ACT_MISH_BACKWARD, 0, NULL, out);
}

int opd__meta_glu(const opd_kernel_ctx *ctx, opd_tensor *self, int64_t dim, opd_tensor **out) {
  (void)ctx;
  opd_out_spec spec;
  int64_t d;
  int rc = opd__glu_meta(self, dim, &d, &spec);
  return rc ? rc : opd__alloc_output(&spec, opd_tensor_device(self), out);
}

int opd__meta_softmax_backward_data(const opd_kernel_ctx *ctx, opd_tensor *grad_output,
                                    opd_tensor *output, int64_t dim, opd_dtype input_dtype,
                                    opd_tensor **out) {
  (void)ctx;
  opd_out_spec spec;
  int64_t d;
  int rc = opd__softmax_backward_meta(grad_output, output, dim, input_dtype, &d, &spec);
  return rc ? rc : opd__alloc_output(&spec, opd_tensor_device(grad_output), out);
}

int opd__meta_mse_loss(const opd_kernel_ctx *ctx, opd_tensor *self, opd_tensor *target,
                       int64_t reduction, opd_tensor **out) {
  (void)ctx;
  opd_out_spec spec;
  int rc = opd__pointwise_loss_meta(self, target, reduction, "mse_cpu", &spec);
  return rc ? rc : opd__alloc_output(&spec, opd_tensor_device(self), out);
}

int opd__meta_mse_loss_backward(const opd_kernel_ctx *ctx, opd_tensor *grad_output,
                                opd_tensor *self, opd_tensor *target, int64_t reduction,
                                opd_tensor **out) {
  (void)ctx;
  (void)reduction;
  opd_out_spec spec;
  int rc = opd__pointwise_loss_backward_meta(grad_output, self, target, "mse_backward_cpu", &spec);
  return rc ? rc : opd__alloc_output(&spec, opd_tensor_device(self), out);
}

int opd__meta_binary_cross_entropy(const opd_kernel_ctx *ctx, opd_tensor *self, opd_tensor *target,
                                   opd_tensor *weight, int64_t reduction, opd_tensor **out) {
  (void)ctx;
  opd_out_spec spec;
  int rc = opd__bce_meta(self, target, weight, reduction, &spec);
  return rc ? rc : opd__alloc_output(&spec, opd_tensor_device(self), out);
}

int opd__meta_binary_cross_entropy_backward(const opd_kernel_ctx *ctx, opd_tensor *grad_output,
                                            opd_tensor *self, opd_tensor *target,
                                            opd_tensor *weight, int64_t reduction,
                                            opd_tensor **out) {
  (void)ctx;
  (void)reduction;
  opd_out_spec spec;
  int rc = opd__bce_backward_meta(grad_output, self, target, weight, &spec);
  return rc ? rc : opd__alloc_output(&spec, opd_tensor_device(self), out);
}

int opd__meta_nll_loss_backward(const opd_kernel_ctx *ctx, opd_tensor *grad_output,
                                opd_tensor *self, opd_tensor *target, opd_tensor *weight,
                                int64_t reduction, int64_t ignore_index, opd_tensor *total_weight,
                                opd_tensor **out) {
  (void)ctx;
  (void)ignore_index;
  int64_t batch, classes;
  opd_out_spec spec;
  int rc = opd__nll_loss_backward_meta(grad_output, self, target, weight, reduction, total_weight,
                                       &batch, &classes, &spec);
  return rc ? rc : opd__alloc_output(&spec, opd_tensor_device(self), out);
}

static int meta_nll_forward(opd_ivalue *args, bool two_d, opd_tensor **res) {
  opd__nll_forward_args a;
  int rc = opd__nll_forward_args_read(args, two_d, &a);
  if (!rc) rc = opd__alloc_output(&a.out_spec, opd_tensor_device(a.self), &res[0]);
  if (!rc) rc = opd__alloc_output(&a.tw_spec, opd_tensor_device(a.self), &res[1]);
  return rc;
}

static int meta_nll_loss_forward(opd_ivalue *args, opd_tensor **res) {
  return meta_nll_forward(args, false, res);
}

static int meta_nll_loss2d_forward(opd_ivalue *args, opd_tensor **res) {
  return meta_nll_forward(args, true, res);
}

int opd__meta_nll_loss_forward(const opd_kernel_ctx *ctx, opd_stack *stack) {
  (void)ctx;
  return opd__boxed_run(stack, 5, 2, false, meta_nll_loss_forward);
}

int opd__meta_nll_loss2d_backward(const opd_kernel_ctx *ctx, opd_tensor *grad_output,
                                  opd_tensor *self, opd_tensor *target, opd_tensor *weight,
                                  int64_t reduction, int64_t ignore_index, opd_tensor *total_weight,
                                  opd_tensor **out) {
  (void)ctx;
  (void)ignore_index;
  int64_t batch, classes, plane;
  opd_out_spec spec;
  int rc = opd__nll_loss2d_backward_meta(grad_output, self, target, weight, reduction, total_weight,
                                         &batch, &classes, &plane, &spec);
  return rc ? rc : opd__alloc_output(&spec, opd_tensor_device(self), out);
}

int opd__meta_nll_loss2d_forward(const opd_kernel_ctx *ctx, opd_stack *stack) {
  (void)ctx;
  return opd__boxed_run(stack, 5, 2, false, meta_nll_loss2d_forward);
}

int opd__meta_log_softmax_backward_data(const opd_kernel_ctx *ctx, opd_tensor *grad_output,
                                        opd_tensor *output, int64_t dim, opd_dtype input_dtype,
                                        opd_tensor **out) {
  return opd__meta_softmax_backward_data(ctx, grad_output, output, dim, input_dtype, out);
}

/* Allocates on `device` the results of specs that mask asks for and pushes them (None for the
 * others); the n arguments are dropped first. */
static int meta_optional_results(opd_stack *stack, int nargs, int rc, const opd_out_spec *specs,
                                 const bool *mask, opd_device device) {
  opd_tensor *res[3] = {NULL, NULL, NULL};
  for (int k = 0; k < 3 && !rc; k++)
    if (mask[k]) rc = opd__alloc_output(&specs[k], device, &res[k]);
  opd_stack_drop(stack, (uint32_t)nargs);
  return opd__push_optional_results(stack, res, 3, rc);
}

int opd__meta_native_layer_norm_backward(const opd_kernel_ctx *ctx, opd_stack *stack) {
  (void)ctx;
  opd__norm_backward_args a = {0};
  opd_out_spec specs[3] = {{0}};
  int rc = opd__layer_norm_backward_args(opd_stack_last(stack, 8), &a);
  if (!rc) rc = opd__layer_norm_backward_meta(&a, specs);
  return meta_optional_results(stack, 8, rc, specs, a.mask,
                               rc ? (opd_device){OPD_DEVICE_META, -1} : opd_tensor_device(a.input));
}

int opd__meta_native_batch_norm(const opd_kernel_ctx *ctx, opd_stack *stack) {
  (void)ctx;
  opd__batch_norm_args a = {0};
  opd_out_spec specs[3] = {{0}};
  int rc = opd__batch_norm_args_read(opd_stack_last(stack, 8), &a);
  if (!rc) rc = opd__batch_norm_meta(&a, specs);
  return meta_optional_results(stack, 8, rc, specs, (const bool[]){true, true, true},
                               rc ? (opd_device){OPD_DEVICE_META, -1} : opd_tensor_device(a.input));
}

int opd__meta_native_batch_norm_backward(const opd_kernel_ctx *ctx, opd_stack *stack) {
  (void)ctx;
  opd__batch_norm_backward_args a = {0};
  opd_out_spec specs[3] = {{0}};
  int rc = opd__batch_norm_backward_args_read(opd_stack_last(stack, 10), &a);
  if (!rc) rc = opd__batch_norm_backward_meta(&a, specs);
  return meta_optional_results(stack, 10, rc, specs, a.mask,
                               rc ? (opd_device){OPD_DEVICE_META, -1}
                                  : opd_tensor_device(a.bn.input));
}

int opd__meta_native_dropout(const opd_kernel_ctx *ctx, opd_stack *stack) {
  (void)ctx;
  opd_tensor *input = NULL;
  double p;
  bool train;
  opd_out_spec specs[2] = {{0}};
  int rc =
      opd__dropout_args_read(opd_stack_last(stack, 3), &input, &p, &train, &specs[0], &specs[1]);
  opd_tensor *res[2] = {NULL, NULL};
  for (int k = 0; k < 2 && !rc; k++)
    rc = opd__alloc_output(&specs[k], opd_tensor_device(input), &res[k]);
  opd_stack_drop(stack, 3);
  return opd__push_optional_results(stack, res, 2, rc);
}

int opd__meta_native_dropout_backward(const opd_kernel_ctx *ctx, opd_tensor *grad_output,
                                      opd_tensor *mask, double scale, opd_tensor **out) {
  (void)ctx;
  (void)scale;
  opd_out_spec spec;
  return meta_out(opd__dropout_backward_meta(grad_output, mask, &spec), &spec,
                  (opd_tensor *[]){grad_output, mask}, 2, out);
}

int opd__meta_embedding_dense_backward(const opd_kernel_ctx *ctx, opd_tensor *grad_output,
                                       opd_tensor *indices, int64_t num_weights,
                                       int64_t padding_idx, bool scale_grad_by_freq,
                                       opd_tensor **out) {
  (void)ctx;
  (void)padding_idx;
  (void)scale_grad_by_freq;
  opd_out_spec spec;
  int rc = opd__embedding_backward_meta(grad_output, indices, num_weights, &spec);
  return rc ? rc : opd__alloc_output(&spec, opd_tensor_device(grad_output), out);
}

int opd__meta_embedding_renorm_(const opd_kernel_ctx *ctx, opd_tensor *self, opd_tensor *indices,
                                double max_norm, double norm_type, opd_tensor **out) {
  (void)ctx;
  (void)max_norm;
  (void)norm_type;
  int rc = opd__embedding_renorm_meta(self, indices);
  if (rc) return rc;
  opd_tensor_bump_version(self);
  opd_tensor_retain(self);
  *out = self;
  return 0;
}

int opd__meta_native_group_norm(const opd_kernel_ctx *ctx, opd_stack *stack) {
  (void)ctx;
  opd__group_norm_args a = {0};
  opd_out_spec specs[3] = {{0}};
  int rc = opd__group_norm_args_read(opd_stack_last(stack, 8), &a);
  if (!rc) rc = opd__group_norm_meta(&a, specs);
  return meta_optional_results(stack, 8, rc, specs, (const bool[]){true, true, true},
                               rc ? (opd_device){OPD_DEVICE_META, -1} : opd_tensor_device(a.input));
}

int opd__meta_native_group_norm_backward(const opd_kernel_ctx *ctx, opd_stack *stack) {
  (void)ctx;
  opd__group_norm_backward_args a = {0};
  opd_out_spec specs[3] = {{0}};
  int rc = opd__group_norm_backward_args_read(opd_stack_last(stack, 10), &a);
  if (!rc) rc = opd__group_norm_backward_meta(&a, specs);
  return meta_optional_results(stack, 10, rc, specs, a.mask,
                               rc ? (opd_device){OPD_DEVICE_META, -1}
                                  : opd_tensor_device(a.gn.input));
}

int opd__meta_log_sigmoid_forward(const opd_kernel_ctx *ctx, opd_stack *stack) {
  (void)ctx;
  opd_ivalue *args = opd_stack_last(stack, 1);
  opd_out_spec spec;
  opd_tensor *res[2] = {NULL, NULL};
  int rc = args[0].tag == OPD_IV_TENSOR
               ? opd__activation_meta(args[0].u.t, OPD__ACT_LOG_SIGMOID, 0, NULL, &spec)
               : opd_error(OPD_EINVAL, "log_sigmoid_forward: expected a Tensor argument");
  for (int k = 0; k < 2 && !rc; k++) rc = meta_out(0, &spec, &args[0].u.t, 1, &res[k]);
  opd_stack_drop(stack, 1);
  return opd__push_optional_results(stack, res, 2, rc);
}

int opd__meta_log_sigmoid_backward(const opd_kernel_ctx *ctx, opd_tensor *grad_output,
                                   opd_tensor *self, opd_tensor *buffer, opd_tensor **out) {
  (void)ctx;
  opd_out_spec spec;
  return meta_out(opd__log_sigmoid_backward_meta(grad_output, self, buffer, &spec), &spec,
                  (opd_tensor *[]){grad_output, self, buffer}, 3, out);
}

int opd__meta_smooth_l1_loss(const opd_kernel_ctx *ctx, opd_tensor *self, opd_tensor *target,
                             int64_t reduction, double beta, opd_tensor **out) {
  (void)ctx;
  if (beta < 0)
    return opd_error(OPD_EINVAL, "smooth_l1_loss does not support negative values for beta.");
  opd_out_spec spec;
  int rc = opd__pointwise_loss_meta(self, target, reduction, "smooth_l1_cpu", &spec);
  return rc ? rc : opd__alloc_output(&spec, opd_tensor_device(self), out);
}

int opd__meta_huber_loss(const opd_kernel_ctx *ctx, opd_tensor *self, opd_tensor *target,
                         int64_t reduction, double delta, opd_tensor **out) {
  (void)ctx;
  if (!(delta > 0))
    return opd_error(OPD_EINVAL, "huber_loss does not support non-positive values for delta.");
  opd_out_spec spec;
  int rc = opd__pointwise_loss_meta(self, target, reduction, "huber_cpu", &spec);
  spec.dtype = opd_tensor_dtype(self); /* into empty_like(self), as PyTorch */
  return rc ? rc : opd__alloc_output(&spec, opd_tensor_device(self), out);
}

int opd__meta_smooth_l1_loss_backward(const opd_kernel_ctx *ctx, opd_tensor *grad_output,
                                      opd_tensor *self, opd_tensor *target, int64_t reduction,
                                      double beta, opd_tensor **out) {
  (void)ctx;
  (void)reduction;
  (void)beta;
  opd_out_spec spec;
  int rc = opd__pointwise_loss_backward_meta(grad_output, self, target,
                                             "smooth_l1_backward_cpu_out", &spec);
  return rc ? rc : opd__alloc_output(&spec, opd_tensor_device(self), out);
}

int opd__meta_huber_loss_backward(const opd_kernel_ctx *ctx, opd_tensor *grad_output,
                                  opd_tensor *self, opd_tensor *target, int64_t reduction,
                                  double delta, opd_tensor **out) {
  (void)ctx;
  (void)reduction;
  (void)delta;
  opd_out_spec spec;
  int rc =
      opd__pointwise_loss_backward_meta(grad_output, self, target, "huber_backward_cpu_out", &spec);
  return rc ? rc : opd__alloc_output(&spec, opd_tensor_device(self), out);
}

int opd__meta_prelu(const opd_kernel_ctx *ctx, opd_tensor *self, opd_tensor *weight,
                    opd_tensor **out) {
  (void)ctx;
  opd_out_spec spec;
  int64_t sizes[OPD_MAX_DIMS], strides[OPD_MAX_DIMS];
  return meta_out(opd__prelu_meta(self, weight, &spec, sizes, strides), &spec, &self, 1, out);
}

int opd__meta_prelu_backward(const opd_kernel_ctx *ctx, opd_stack *stack) {
  (void)ctx;
  opd_ivalue *args = opd_stack_last(stack, 3);
  opd_out_spec specs[2] = {{0}};
  opd_tensor *res[2] = {NULL, NULL};
  int rc =
      args[0].tag == OPD_IV_TENSOR && args[1].tag == OPD_IV_TENSOR && args[2].tag == OPD_IV_TENSOR
          ? opd__prelu_backward_meta(args[0].u.t, args[1].u.t, args[2].u.t, specs)
          : opd_error(OPD_EINVAL, "prelu_backward: expected (Tensor, Tensor, Tensor) arguments");
  for (int k = 0; k < 2 && !rc; k++)
    rc = opd__alloc_output(&specs[k], opd_tensor_device(args[1].u.t), &res[k]);
  opd_stack_drop(stack, 3);
  return opd__push_optional_results(stack, res, 2, rc);
}

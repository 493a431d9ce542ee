/* norm_meta.h: the meta functions of the normalization, loss and activation operators and
 * their backward operators (internal): PyTorch's argument checks and errors, the outputs'
 * shapes and dtypes. Shared by their Meta kernels (norm_meta.c), CPU kernels
 * (kernels/cpu/norm_*.c) and CUDA kernels (kernels/cuda/src/cuda_norm.c). */
#ifndef OPD_KERNELS_NORM_META_H
#define OPD_KERNELS_NORM_META_H

#include <stdbool.h>

#include "src/kernel_util.h"

/* The dtypes an activation's CPU kernel computes in: floating ones, or every one but bool.
 * Others fail with PyTorch's dispatch error, "\"name\" not implemented for 'Long'". */
typedef enum opd__act_dtypes { OPD__ACT_FLOAT, OPD__ACT_NUMBER } opd__act_dtypes;
/* The activations and their backward operators, each with the name of its ATen CPU kernel
 * (in the dispatch error) and its dtypes. */
typedef enum opd__act {
  OPD__ACT_HARDTANH,
  OPD__ACT_THRESHOLD,
  OPD__ACT_LEAKY_RELU,
  OPD__ACT_ELU,
  OPD__ACT_MISH,
  OPD__ACT_SOFTPLUS,
  OPD__ACT_HARDSWISH,
  OPD__ACT_HARDSIGMOID,
  OPD__ACT_THRESHOLD_BACKWARD,
  OPD__ACT_GELU_BACKWARD,
  OPD__ACT_SILU_BACKWARD,
  OPD__ACT_SIGMOID_BACKWARD,
  OPD__ACT_TANH_BACKWARD,
  OPD__ACT_HARDSWISH_BACKWARD,
  OPD__ACT_HARDSIGMOID_BACKWARD,
  OPD__ACT_HARDTANH_BACKWARD,
  OPD__ACT_LEAKY_RELU_BACKWARD,
  OPD__ACT_ELU_BACKWARD,
  OPD__ACT_SOFTPLUS_BACKWARD,
  OPD__ACT_MISH_BACKWARD,
  OPD__ACT_LOG_SIGMOID,
  OPD__ACT_LOG_SIGMOID_BACKWARD,
} opd__act;
typedef struct opd__act_info {
  const char *name;
  opd__act_dtypes dtypes;
} opd__act_info;
extern const opd__act_info opd__act_infos[];
/* An activation's output: self's shape and dtype; its n Scalar parameters must convert to
 * that dtype (c10's checked conversion). */
int opd__activation_meta(opd_tensor *self, opd__act act, int n, const opd_scalar *params,
                         opd_out_spec *spec);
/* An activation's backward (grad_output and self or the forward's result): the shape they
 * broadcast to and their promoted dtype, as TensorIterator's binary operations compute it. */
int opd__activation_backward_meta(opd_tensor *grad, opd_tensor *self, opd__act act, int n,
                                  const opd_scalar *params, opd_out_spec *spec);
/* gelu's approximate: "none" or "tanh" (*tanh_approx says which). */
int opd__gelu_approximate(const char *approximate, bool *tanh_approx);
/* leaky_relu_backward / elu_backward of an in-place forward (self_is_result) with a negative
 * slope: PyTorch's error. */
int opd__leaky_relu_backward_check(opd_scalar negative_slope, bool self_is_result);
int opd__elu_backward_check(opd_scalar alpha, bool is_result);
/* log_sigmoid_backward: grad_output, self and buffer broadcast and promoted. */
int opd__log_sigmoid_backward_meta(opd_tensor *grad, opd_tensor *self, opd_tensor *buffer,
                                   opd_out_spec *spec);
/* prelu: weight a scalar or 1-d, of 1 or C elements (C: self's dim 1, 1 below 2 dims), of
 * self's dtype; the result self's shape and dtype; sizes and strides of the weight broadcast
 * to self's dims (a view the kernel reads it through). */
int opd__prelu_meta(opd_tensor *self, opd_tensor *weight, opd_out_spec *spec, int64_t *sizes,
                    int64_t *strides);
/* prelu_backward: prelu's checks, grad_output of self's shape; grad_input (self's shape) and
 * grad_weight (weight's). */
int opd__prelu_backward_meta(opd_tensor *grad, opd_tensor *self, opd_tensor *weight,
                             opd_out_spec *specs);
/* glu: self's shape with dim halved (its size must be even); *wrapped the dim. */
int opd__glu_meta(opd_tensor *self, int64_t dim, int64_t *wrapped, opd_out_spec *spec);
/* glu_backward: glu's checks, grad_output broadcastable to a half of self's shape (*half)
 * without growing it and of self's dtype; the result (*spec) has self's shape and dtype. */
int opd__glu_backward_meta(opd_tensor *grad, opd_tensor *self, int64_t dim, int64_t *wrapped,
                           opd_out_spec *half, opd_out_spec *spec);

/* _softmax_backward_data / _log_softmax_backward_data: grad_output and output of one shape;
 * the result has input_dtype (output's dtype, or Float for a Half output). */
int opd__softmax_backward_meta(opd_tensor *grad, opd_tensor *output, int64_t dim,
                               opd_dtype input_dtype, int64_t *wrapped, opd_out_spec *spec);
/* _softmax_backward_data and _log_softmax_backward_data of the device `dev` over its function
 * fn(grad_output, output, dim, input_dtype, is_log, out). */
#define OPD__DEFINE_SOFTMAX_BACKWARD_KERNELS(dev, fn)                                            \
  int opd__##dev##_softmax_backward_data(const opd_kernel_ctx *ctx, opd_tensor *grad_output,     \
                                         opd_tensor *output, int64_t dim, opd_dtype input_dtype, \
                                         opd_tensor **out) {                                     \
    (void)ctx;                                                                                   \
    return fn(grad_output, output, dim, input_dtype, false, out);                                \
  }                                                                                              \
  int opd__##dev##_log_softmax_backward_data(const opd_kernel_ctx *ctx, opd_tensor *grad_output, \
                                             opd_tensor *output, int64_t dim,                    \
                                             opd_dtype input_dtype, opd_tensor **out) {          \
    (void)ctx;                                                                                   \
    return fn(grad_output, output, dim, input_dtype, true, out);                                 \
  }

/* The reductions of the losses (at::Reduction). */
enum { OPD__REDUCTION_NONE = 0, OPD__REDUCTION_MEAN = 1, OPD__REDUCTION_SUM = 2 };
/* mse_loss and the other pointwise losses: self and target broadcast; the result is that
 * shape (reduction none) or 0-d, of a floating dtype (else the dispatch error of the ATen
 * kernel `name`). */
int opd__pointwise_loss_meta(opd_tensor *self, opd_tensor *target, int64_t reduction,
                             const char *name, opd_out_spec *spec);
/* Their backward: grad_output and target broadcast to self's shape, the result's. */
int opd__pointwise_loss_backward_meta(opd_tensor *grad, opd_tensor *self, opd_tensor *target,
                                      const char *name, opd_out_spec *spec);

/* binary_cross_entropy: target and weight broadcast to self's shape; the result is that
 * shape (reduction none) or 0-d, of self's dtype. */
int opd__bce_meta(opd_tensor *self, opd_tensor *target, opd_tensor *weight, int64_t reduction,
                  opd_out_spec *spec);
/* Its backward: self's shape and dtype; grad_output, target and weight broadcast to it. */
int opd__bce_backward_meta(opd_tensor *grad, opd_tensor *self, opd_tensor *target,
                           opd_tensor *weight, opd_out_spec *spec);

/* nll_loss_forward: self (C) or (N, C), target () or (N), weight (C) or absent; ATen's
 * checks. *batch is N (1 for a 1-d self), *classes C. The output is (N) for reduction none
 * of a 2-d self, else 0-d; total_weight 0-d; both of self's dtype. */
int opd__nll_loss_meta(opd_tensor *self, opd_tensor *target, opd_tensor *weight, int64_t reduction,
                       int64_t *batch, int64_t *classes, opd_out_spec *out,
                       opd_out_spec *total_weight_spec);
/* nll_loss_backward: the same checks, grad_output of the forward output's shape, a
 * one-element total_weight; the result has self's shape and dtype. */
int opd__nll_loss_backward_meta(opd_tensor *grad, opd_tensor *self, opd_tensor *target,
                                opd_tensor *weight, int64_t reduction, opd_tensor *total_weight,
                                int64_t *batch, int64_t *classes, opd_out_spec *spec);

/* nll_loss2d_forward: self (N, C, H, W), target (N, H, W), weight (C) or absent; ATen's
 * checks. *plane is H x W. The output is (N, H, W) for reduction none, else 0-d;
 * total_weight 0-d; both of self's dtype. */
int opd__nll_loss2d_meta(opd_tensor *self, opd_tensor *target, opd_tensor *weight,
                         int64_t reduction, int64_t *batch, int64_t *classes, int64_t *plane,
                         opd_out_spec *out, opd_out_spec *total_weight_spec);
/* nll_loss2d_backward: the same checks, grad_output of the forward output's shape and
 * total_weight of one element, both of self's dtype; the result has self's shape and dtype. */
int opd__nll_loss2d_backward_meta(opd_tensor *grad, opd_tensor *self, opd_tensor *target,
                                  opd_tensor *weight, int64_t reduction, opd_tensor *total_weight,
                                  int64_t *batch, int64_t *classes, int64_t *plane,
                                  opd_out_spec *spec);

/* Pushes a backward operator's n results, None for a NULL one (an output_mask false), if rc
 * is 0; otherwise releases them and pushes nothing. Returns rc or the push error. */
int opd__push_optional_results(opd_stack *stack, opd_tensor **res, int n, int rc);
/* A boxed kernel's body, shared by its devices: fill reads the nargs arguments (their checks
 * and meta function) and makes the nres (at most 3) results with the device's compute; the
 * arguments are then dropped and the results pushed (opd__push_optional_results when optional:
 * a NULL result is None; else opd__push_results), or released on an error. */
typedef int (*opd__boxed_fill)(opd_ivalue *args, opd_tensor **res);
int opd__boxed_run(opd_stack *stack, int nargs, int nres, bool optional, opd__boxed_fill fill);

/* nll_loss_forward's and nll_loss2d_forward's (two_d) boxed arguments (self, target, weight?,
 * reduction, ignore_index), checked, with their meta function's geometry (plane 1 for
 * nll_loss) and the specs of the output and total_weight. */
typedef struct opd__nll_forward_args {
  opd_tensor *self, *target, *weight;
  int64_t reduction, ignore_index, batch, classes, plane;
  opd_out_spec out_spec, tw_spec;
} opd__nll_forward_args;
int opd__nll_forward_args_read(opd_ivalue *args, bool two_d, opd__nll_forward_args *a);

/* native_layer_norm_backward's arguments (grad_out, input, normalized_shape, mean, rstd,
 * weight?, bias?, output_mask), read from the stack and checked: the geometry of
 * native_layer_norm (rows groups of cols elements), grad_out of input's shape, mean and rstd
 * of rows elements, floating tensors of one dtype. */
typedef struct opd__norm_backward_args {
  opd_tensor *grad, *input, *mean, *rstd, *weight, *bias; /* weight, bias NULL when absent */
  bool mask[3];
  int64_t rows, cols;
  opd_int_list normalized_shape;
} opd__norm_backward_args;
int opd__layer_norm_backward_args(opd_ivalue *args, opd__norm_backward_args *a);
/* The specs of its three results: input's, and weight's (bias's) or normalized_shape for
 * grad_weight (grad_bias). */
int opd__layer_norm_backward_meta(const opd__norm_backward_args *a, opd_out_spec *specs);

/* native_batch_norm's arguments (input, weight?, bias?, running_mean?, running_var?, training,
 * momentum, eps), read from the stack and checked: input (N, C, *) of a floating dtype; weight,
 * bias and the running statistics of C elements and its dtype; running statistics given in
 * evaluation. */
typedef struct opd__batch_norm_args {
  opd_tensor *input, *weight, *bias, *running_mean, *running_var; /* NULL when absent */
  bool training;
  double momentum, eps;
  int64_t batch, channels, spatial; /* N, C and the product of the trailing sizes */
} opd__batch_norm_args;
int opd__batch_norm_args_read(opd_ivalue *args, opd__batch_norm_args *a);
/* output (input's shape), save_mean and save_invstd ((C) in training, (0) in evaluation) */
int opd__batch_norm_meta(const opd__batch_norm_args *a, opd_out_spec *specs);

/* native_batch_norm_backward's arguments (grad_out, input, weight?, running_mean?,
 * running_var?, save_mean?, save_invstd?, train, eps, output_mask): batch norm's checks,
 * grad_out of input's shape, save_mean and save_invstd of C elements given in training. */
typedef struct opd__batch_norm_backward_args {
  opd__batch_norm_args bn; /* bias absent, momentum 0 */
  opd_tensor *grad, *save_mean, *save_invstd;
  bool mask[3];
} opd__batch_norm_backward_args;
int opd__batch_norm_backward_args_read(opd_ivalue *args, opd__batch_norm_backward_args *a);
/* grad_input (input's shape), grad_weight and grad_bias ((C)) */
int opd__batch_norm_backward_meta(const opd__batch_norm_backward_args *a, opd_out_spec *specs);
/* What every device's kernel of native_batch_norm, native_batch_norm_backward and
 * native_layer_norm_backward does first: reads and checks the arguments, runs the meta function
 * and allocates the results on the input's device (the backward ones: those of output_mask,
 * NULL the others). */
int opd__batch_norm_outputs(opd_ivalue *args, opd__batch_norm_args *a, opd_tensor **res);
int opd__batch_norm_backward_outputs(opd_ivalue *args, opd__batch_norm_backward_args *a,
                                     opd_tensor **res);
int opd__layer_norm_backward_outputs(opd_ivalue *args, opd__norm_backward_args *a,
                                     opd_tensor **res);

/* native_dropout's arguments (input, p, train?) read and checked: a floating input, 1 - p in
 * [0, 1] (PyTorch's bernoulli_ error); the output (input's shape and dtype, contiguous) and
 * the mask (bool). train is true when absent. */
int opd__dropout_args_read(opd_ivalue *args, opd_tensor **input, double *p, bool *train,
                           opd_out_spec *out, opd_out_spec *mask);
/* native_dropout_backward: grad_output and mask broadcast; the result has grad_output's dtype
 * (floating). */
int opd__dropout_backward_meta(opd_tensor *grad, opd_tensor *mask, opd_out_spec *spec);

/* embedding_dense_backward: indices Long or Int, grad_output (*indices.shape, D); the result
 * (num_weights, D) of grad_output's dtype. */
int opd__embedding_backward_meta(opd_tensor *grad, opd_tensor *indices, int64_t num_weights,
                                 opd_out_spec *spec);
/* embedding_renorm_: self a floating 2-d tensor, indices Long or Int. */
int opd__embedding_renorm_meta(opd_tensor *self, opd_tensor *indices);

/* native_group_norm's arguments (input, weight?, bias?, N, C, HxW, group, eps) read and
 * checked as PyTorch checks them: input of N * C * HxW elements of a floating dtype, C
 * divisible by group, weight and bias of C elements and input's dtype. */
typedef struct opd__group_norm_args {
  opd_tensor *input, *weight, *bias; /* NULL when absent */
  int64_t n, c, hxw, group;
  double eps;
} opd__group_norm_args;
int opd__group_norm_args_read(opd_ivalue *args, opd__group_norm_args *a);
/* output (input's shape), mean and rstd ((N, group)) */
int opd__group_norm_meta(const opd__group_norm_args *a, opd_out_spec *specs);
/* native_group_norm_backward (grad_out, input, mean, rstd, weight?, N, C, HxW, group,
 * output_mask): the same checks, grad_out of input's shape, mean and rstd of N * group
 * elements. */
typedef struct opd__group_norm_backward_args {
  opd__group_norm_args gn; /* bias absent, eps 0 */
  opd_tensor *grad, *mean, *rstd;
  bool mask[3];
} opd__group_norm_backward_args;
int opd__group_norm_backward_args_read(opd_ivalue *args, opd__group_norm_backward_args *a);
/* grad_input (input's shape), grad_weight and grad_bias ((C)) */
int opd__group_norm_backward_meta(const opd__group_norm_backward_args *a, opd_out_spec *specs);

#endif

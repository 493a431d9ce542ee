/* reduce_meta.h: the meta functions of the reductions (sum, mean, amax, argmax), softmax and
 * layer norm (kernels/meta/reduce_meta.c), shared by their Meta, CPU and CUDA kernels. Each checks
 * its arguments, raising PyTorch 1.13's errors, and computes the output spec without touching
 * data. */
#ifndef OPD_KERNELS_REDUCE_META_H
#define OPD_KERNELS_REDUCE_META_H

#include <stdint.h>

#include "src/kernel_util.h"

/* The mask of the dims `dim` names in a tensor of `ndim` dims (None or []: all of them; bit d
 * set: dim d is reduced), raising PyTorch's errors for a dim out of range or repeated. A 0-d
 * tensor accepts 0 and -1 and has nothing to reduce. */
int opd__reduce_dim_mask(opd_int_list dim, int ndim, uint64_t *mask);
/* The spec of self reduced over mask. */
void opd__reduced_spec(const opd_tensor *self, uint64_t mask, bool keepdim, opd_dtype dtype,
                       opd_out_spec *spec);

/* sum.dim_IntList and mean.dim: the output spec and the mask of reduced dims (bit d set: dim d
 * is reduced; dim None or [] reduces every dim). `dtype` is OPD_DTYPE_UNDEFINED for None. */
int opd__sum_meta(const opd_tensor *self, opd_int_list dim, bool keepdim, opd_dtype dtype,
                  opd_out_spec *spec, uint64_t *mask);
int opd__mean_meta(const opd_tensor *self, opd_int_list dim, bool keepdim, opd_dtype dtype,
                   opd_out_spec *spec, uint64_t *mask);
/* amax: [] reduces every dim; reducing a size-0 dim is an error. */
int opd__amax_meta(const opd_tensor *self, opd_int_list dim, bool keepdim, opd_out_spec *spec,
                   uint64_t *mask);
int opd__amin_meta(const opd_tensor *self, opd_int_list dim, bool keepdim, opd_out_spec *spec,
                   uint64_t *mask);
/* max and min without a dim (name "max" or "min"): every dim reduced, an empty input refused. */
int opd__max_all_meta(const char *name, const opd_tensor *self, opd_out_spec *spec, uint64_t *mask);
/* argmax and argmin: int64 output; dim None reduces the flattened tensor (mask: every dim). */
int opd__argmax_meta(const opd_tensor *self, opd_opt_int dim, bool keepdim, opd_out_spec *spec,
                     uint64_t *mask);
int opd__argmin_meta(const opd_tensor *self, opd_opt_int dim, bool keepdim, opd_out_spec *spec,
                     uint64_t *mask);
/* prod and prod.dim_int (dim None: every dim); integers and bool give int64 unless dtype says. */
int opd__prod_meta(const opd_tensor *self, opd_opt_int dim, bool keepdim, opd_dtype dtype,
                   opd_out_spec *spec, uint64_t *mask);
/* any and all (dim None: every dim): bool results, uint8 for a uint8 input. */
int opd__any_all_meta(const opd_tensor *self, opd_opt_int dim, bool keepdim, opd_out_spec *spec,
                      uint64_t *mask);
/* count_nonzero.dim_IntList: int64, dims [] reduce every dim. */
int opd__count_nonzero_meta(const opd_tensor *self, opd_int_list dim, opd_out_spec *spec,
                            uint64_t *mask);
/* var.correction, std.correction, var_mean.correction, std_mean.correction: floating inputs
 * (else "NAME only support floating point and complex dtypes", name "std and var", "var_mean"
 * or "std_mean"), results of the input's dtype. */
int opd__var_meta(const char *name, const opd_tensor *self, opd_int_list dim, bool keepdim,
                  opd_out_spec *spec, uint64_t *mask);
/* linalg_vector_norm: floating input; dtype (OPD_DTYPE_UNDEFINED for None) floating and not
 * narrower than the input's; no norm of order < 0 or inf over an empty dim. */
int opd__vector_norm_meta(const opd_tensor *self, double ord, opd_int_list dim, bool keepdim,
                          opd_dtype dtype, opd_out_spec *spec, uint64_t *mask);
/* norm.ScalarOpt_dim and norm.ScalarOpt_dim_dtype (dtype OPD_DTYPE_UNDEFINED for the first):
 * a floating input unless dtype is given, a floating dtype. */
int opd__norm_meta(const opd_tensor *self, opd_int_list dim, bool keepdim, opd_dtype dtype,
                   opd_out_spec *spec, uint64_t *mask);

/* max.dim, min.dim (values of the input's dtype, int64 indices) and aminmax (min and max of
 * the input's dtype), boxed: `which` is one of these; args the stack's three arguments. */
enum { OPD__MAX_DIM, OPD__MIN_DIM, OPD__AMINMAX };
int opd__two_results_meta(int which, opd_ivalue *args, opd_out_spec *first, opd_out_spec *second,
                          uint64_t *mask);

/* [Note: A reduction's wrapper and its device's compute]
 * The reductions' CPU and CUDA kernels differ only in the computation. Each device's kernel calls
 * one of the opd__*_run functions below with its compute function and its own code of the
 * operation; the run function reads the arguments (off the stack for the boxed ones), runs the
 * meta function (PyTorch's errors) and hands the spec and the reduced mask to the compute, which
 * makes the new output(s); boxed results are pushed back on the stack. */
typedef struct opd__red_call {
  int op;            /* the device's code of the reduction */
  double correction; /* var and std: the correction (1 when None) */
  double ord;        /* the norms: the order */
} opd__red_call;
/* A device's reduction call->op of self over the dims of mask into a new output of spec; `mean`
 * is NULL, or for var and std a second result (the mean) of the same spec. */
typedef int (*opd__red_fn)(const opd__red_call *call, opd_tensor *self, uint64_t mask,
                           const opd_out_spec *spec, opd_tensor **out, opd_tensor **mean);
/* The device's codes of the reductions behind max.dim, min.dim and aminmax. */
typedef struct opd__extrema_ops {
  int max, min, argmax, argmin;
} opd__extrema_ops;

/* sum.dim_IntList's arguments (nansum's too). */
int opd__sum_run(opd__red_fn fn, int op, opd_tensor *self, opd_int_list dim, bool keepdim,
                 opd_dtype dtype, opd_tensor **out);
/* prod.dim_int (dim set) and prod (dim None, keepdim false). */
int opd__prod_run(opd__red_fn fn, int op, opd_tensor *self, opd_opt_int dim, bool keepdim,
                  opd_dtype dtype, opd_tensor **out);
int opd__amin_run(opd__red_fn fn, int op, opd_tensor *self, opd_int_list dim, bool keepdim,
                  opd_tensor **out);
/* max and min of every element; name "max" or "min". */
int opd__max_all_run(opd__red_fn fn, int op, const char *name, opd_tensor *self, opd_tensor **out);
/* argmin; a Bool input raises "<kernel_name>" not implemented, but for a dim of size 1 (0, as
 * PyTorch answers before it looks at the dtype). */
int opd__argmin_run(opd__red_fn fn, int op, const char *kernel_name, opd_tensor *self,
                    opd_opt_int dim, bool keepdim, opd_tensor **out);
/* any, any.dim, all and all.dim (dim None: every dim, keepdim false). */
int opd__any_all_run(opd__red_fn fn, int op, opd_tensor *self, opd_opt_int dim, bool keepdim,
                     opd_tensor **out);
int opd__count_nonzero_run(opd__red_fn fn, int op, opd_tensor *self, opd_int_list dim,
                           opd_tensor **out);
/* max.dim, min.dim and aminmax, boxed: two reductions of the same input over the same dims. */
int opd__two_results_run(opd__red_fn fn, const opd__extrema_ops *ops, int which, opd_stack *stack);
/* var.correction and std.correction (op: the device's var or std). */
int opd__var_run(opd__red_fn fn, int op, opd_tensor *self, opd_int_list dim, opd_opt_int correction,
                 bool keepdim, opd_tensor **out);
/* var_mean.correction and std_mean.correction, boxed (self, dim, correction, keepdim); name
 * "var_mean" or "std_mean". */
int opd__var_mean_run(opd__red_fn fn, int op, const char *name, opd_stack *stack);
int opd__vector_norm_run(opd__red_fn fn, int op, opd_tensor *self, opd_scalar ord, opd_int_list dim,
                         bool keepdim, opd_dtype dtype, opd_tensor **out);
/* norm.ScalarOpt_dim and norm.ScalarOpt_dim_dtype (dtype OPD_DTYPE_UNDEFINED for the first);
 * p None is 2. */
int opd__norm_run(opd__red_fn fn, int op, opd_tensor *self, opd_scalar p, opd_int_list dim,
                  bool keepdim, opd_dtype dtype, opd_tensor **out);

/* _softmax and _log_softmax: the output spec and the wrapped dim (0 for a 0-d tensor).
 * half_to_float is accepted for Half inputs only (the CUDA rule; the CPU kernels reject it). */
int opd__softmax_meta(const opd_tensor *self, int64_t dim, bool half_to_float, opd_out_spec *spec,
                      int64_t *wrapped_dim);
/* native_layer_norm: the spec of the output and of mean / rstd, and the geometry: `rows`
 * normalized groups of `cols` elements (the trailing normalized_shape dims). */
int opd__layer_norm_meta(const opd_tensor *input, opd_int_list normalized_shape,
                         const opd_tensor *weight, const opd_tensor *bias, opd_out_spec *out,
                         opd_out_spec *stat, int64_t *rows, int64_t *cols);

/* The CPU and CUDA native_layer_norm kernels (boxed): their arguments (Tensor, int[], Tensor?,
 * Tensor?, float) read and checked, the meta function, the kernels' dtype checks (floating
 * input, weight and bias of its dtype) and the three results allocated (output, mean, rstd);
 * then, unless there are no rows, `fill` computes them on the device. Pushes the results, or
 * releases them on an error. */
typedef struct opd__layer_norm_args {
  opd_tensor *input, *weight, *bias; /* weight and bias NULL when absent */
  int norm_ndim;                     /* the length of normalized_shape */
  double eps;
  int64_t rows, cols; /* as opd__layer_norm_meta */
} opd__layer_norm_args;
typedef int (*opd__layer_norm_fill)(const opd__layer_norm_args *a, opd_tensor *const *res);
int opd__layer_norm_kernel(opd_stack *stack, opd__layer_norm_fill fill);

/* Pushes the n results of a boxed kernel (taking their references) if rc is 0; otherwise, or
 * if a push fails, releases them and leaves nothing pushed. Returns rc or the push error. */
int opd__push_results(opd_stack *stack, opd_tensor **res, int n, int rc);

#endif

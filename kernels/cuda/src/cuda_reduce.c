/* cuda_reduce.c: the CUDA kernels of the reduction family beyond sum, mean, amax and argmax
 * (cuda_kernels.c): nansum, prod, amin, max and min of everything, argmin, any, all,
 * count_nonzero, max.dim, min.dim, aminmax, var, std, var_mean, std_mean and the vector norms.
 * Each is its CPU kernel's wrapper (kernels/meta/reduce_meta.c: [Note: A reduction's wrapper
 * and its device's compute]) with reduce.cu's kernels ([Note: CUDA reductions]; var, std and
 * the norms one thread per output in double, as kernels/cpu/reduce_moments.c).
 */
#include "cuda_ew.h"
#include "cuda_internal.h"
#include "cuda_kernels.h"
#include "meta/reduce_meta.h"

/* CUDA's compute of these reductions ([Note: A reduction's wrapper and its device's compute]):
 * call->op an opd__cuda_red_op. */
static int reduce_fn(const opd__red_call *call, opd_tensor *self, uint64_t mask,
                     const opd_out_spec *spec, opd_tensor **out, opd_tensor **mean) {
  opd__cuda_red how = {.op = call->op, .correction = call->correction, .ord = call->ord};
  return opd__cuda_reduce_with(&how, self, mask, spec, out, mean);
}

int opd__cuda_nansum(const opd_kernel_ctx *ctx, opd_tensor *self, opd_int_list dim, bool keepdim,
                     opd_dtype dtype, opd_tensor **out) {
  (void)ctx;
  return opd__sum_run(reduce_fn, OPD_CUDA_RED_NANSUM, self, dim, keepdim, dtype, out);
}

int opd__cuda_prod_dim_int(const opd_kernel_ctx *ctx, opd_tensor *self, int64_t dim, bool keepdim,
                           opd_dtype dtype, opd_tensor **out) {
  (void)ctx;
  return opd__prod_run(reduce_fn, OPD_CUDA_RED_PROD, self,
                       (opd_opt_int){.has_value = true, .value = dim}, keepdim, dtype, out);
}

int opd__cuda_prod(const opd_kernel_ctx *ctx, opd_tensor *self, opd_dtype dtype, opd_tensor **out) {
  (void)ctx;
  return opd__prod_run(reduce_fn, OPD_CUDA_RED_PROD, self, (opd_opt_int){0}, false, dtype, out);
}

int opd__cuda_amin(const opd_kernel_ctx *ctx, opd_tensor *self, opd_int_list dim, bool keepdim,
                   opd_tensor **out) {
  (void)ctx;
  return opd__amin_run(reduce_fn, OPD_CUDA_RED_AMIN, self, dim, keepdim, out);
}

int opd__cuda_max(const opd_kernel_ctx *ctx, opd_tensor *self, opd_tensor **out) {
  (void)ctx;
  return opd__max_all_run(reduce_fn, OPD_CUDA_RED_AMAX, "max", self, out);
}

int opd__cuda_min(const opd_kernel_ctx *ctx, opd_tensor *self, opd_tensor **out) {
  (void)ctx;
  return opd__max_all_run(reduce_fn, OPD_CUDA_RED_AMIN, "min", self, out);
}

int opd__cuda_argmin(const opd_kernel_ctx *ctx, opd_tensor *self, opd_opt_int dim, bool keepdim,
                     opd_tensor **out) {
  (void)ctx;
  return opd__argmin_run(reduce_fn, OPD_CUDA_RED_ARGMIN, "argmin_cuda", self, dim, keepdim, out);
}

int opd__cuda_any(const opd_kernel_ctx *ctx, opd_tensor *self, opd_tensor **out) {
  (void)ctx;
  return opd__any_all_run(reduce_fn, OPD_CUDA_RED_ANY, self, (opd_opt_int){0}, false, out);
}

int opd__cuda_any_dim(const opd_kernel_ctx *ctx, opd_tensor *self, int64_t dim, bool keepdim,
                      opd_tensor **out) {
  (void)ctx;
  return opd__any_all_run(reduce_fn, OPD_CUDA_RED_ANY, self,
                          (opd_opt_int){.has_value = true, .value = dim}, keepdim, out);
}

int opd__cuda_all(const opd_kernel_ctx *ctx, opd_tensor *self, opd_tensor **out) {
  (void)ctx;
  return opd__any_all_run(reduce_fn, OPD_CUDA_RED_ALL, self, (opd_opt_int){0}, false, out);
}

int opd__cuda_all_dim(const opd_kernel_ctx *ctx, opd_tensor *self, int64_t dim, bool keepdim,
                      opd_tensor **out) {
  (void)ctx;
  return opd__any_all_run(reduce_fn, OPD_CUDA_RED_ALL, self,
                          (opd_opt_int){.has_value = true, .value = dim}, keepdim, out);
}

/* count_nonzero: a sum of the elements read as 0 or 1 (the int64 result of the meta) */
static int count_fn(const opd__red_call *call, opd_tensor *self, uint64_t mask,
                    const opd_out_spec *spec, opd_tensor **out, opd_tensor **mean) {
  opd__cuda_red how = {.op = call->op, .nonzero = true};
  return opd__cuda_reduce_with(&how, self, mask, spec, out, mean);
}

int opd__cuda_count_nonzero_dim_intlist(const opd_kernel_ctx *ctx, opd_tensor *self,
                                        opd_int_list dim, opd_tensor **out) {
  (void)ctx;
  return opd__count_nonzero_run(count_fn, OPD_CUDA_RED_SUM, self, dim, out);
}

static const opd__extrema_ops extrema = {.max = OPD_CUDA_RED_AMAX,
                                         .min = OPD_CUDA_RED_AMIN,
                                         .argmax = OPD_CUDA_RED_ARGMAX,
                                         .argmin = OPD_CUDA_RED_ARGMIN};

int opd__cuda_max_dim(const opd_kernel_ctx *ctx, opd_stack *stack) {
  (void)ctx;
  return opd__two_results_run(reduce_fn, &extrema, OPD__MAX_DIM, stack);
}

int opd__cuda_min_dim(const opd_kernel_ctx *ctx, opd_stack *stack) {
  (void)ctx;
  return opd__two_results_run(reduce_fn, &extrema, OPD__MIN_DIM, stack);
}

int opd__cuda_aminmax(const opd_kernel_ctx *ctx, opd_stack *stack) {
  (void)ctx;
  return opd__two_results_run(reduce_fn, &extrema, OPD__AMINMAX, stack);
}

/* ---- var, std and the norms ---- */

int opd__cuda_var_correction(const opd_kernel_ctx *ctx, opd_tensor *self, opd_int_list dim,
                             opd_opt_int correction, bool keepdim, opd_tensor **out) {
  (void)ctx;
  return opd__var_run(reduce_fn, OPD_CUDA_RED_VAR, self, dim, correction, keepdim, out);
}

int opd__cuda_std_correction(const opd_kernel_ctx *ctx, opd_tensor *self, opd_int_list dim,
                             opd_opt_int correction, bool keepdim, opd_tensor **out) {
  (void)ctx;
  return opd__var_run(reduce_fn, OPD_CUDA_RED_STD, self, dim, correction, keepdim, out);
}

int opd__cuda_var_mean_correction(const opd_kernel_ctx *ctx, opd_stack *stack) {
  (void)ctx;
  return opd__var_mean_run(reduce_fn, OPD_CUDA_RED_VAR, "var_mean", stack);
}

int opd__cuda_std_mean_correction(const opd_kernel_ctx *ctx, opd_stack *stack) {
  (void)ctx;
  return opd__var_mean_run(reduce_fn, OPD_CUDA_RED_STD, "std_mean", stack);
}

int opd__cuda_linalg_vector_norm(const opd_kernel_ctx *ctx, opd_tensor *self, opd_scalar ord,
                                 opd_int_list dim, bool keepdim, opd_dtype dtype,
                                 opd_tensor **out) {
  (void)ctx;
  return opd__vector_norm_run(reduce_fn, OPD_CUDA_RED_NORM, self, ord, dim, keepdim, dtype, out);
}

int opd__cuda_norm_scalaropt_dim(const opd_kernel_ctx *ctx, opd_tensor *self, opd_scalar p,
                                 opd_int_list dim, bool keepdim, opd_tensor **out) {
  (void)ctx;
  return opd__norm_run(reduce_fn, OPD_CUDA_RED_NORM, self, p, dim, keepdim, OPD_DTYPE_UNDEFINED,
                       out);
}

int opd__cuda_norm_scalaropt_dim_dtype(const opd_kernel_ctx *ctx, opd_tensor *self, opd_scalar p,
                                       opd_int_list dim, bool keepdim, opd_dtype dtype,
                                       opd_tensor **out) {
  (void)ctx;
  return opd__norm_run(reduce_fn, OPD_CUDA_RED_NORM, self, p, dim, keepdim, dtype, out);
}

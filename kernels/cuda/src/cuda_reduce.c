/* cuda_reduce.c: the CUDA kernels of the reduction family beyond sum, mean, amax and argmax
 * (cuda_kernels.c): nansum, prod, amin, max and min of everything, argmin, any, all,
 * count_nonzero, max.dim, min.dim, aminmax, var, std, var_mean, std_mean and the vector norms.
 * Each runs its CPU kernel's meta function (kernels/meta/reduce_meta.c) and reduce.cu's
 * kernels ([Note: CUDA reductions]; var, std and the norms one thread per output in double,
 * as kernels/cpu/reduce_moments.c).
 */
#include <assert.h>

#include "cuda_ew.h"
#include "cuda_internal.h"
#include "cuda_kernels.h"
#include "meta/reduce_meta.h"

int opd__cuda_nansum(const opd_kernel_ctx *ctx, opd_tensor *self, opd_int_list dim, bool keepdim,
                     opd_dtype dtype, opd_tensor **out) {
  (void)ctx;
  opd_out_spec spec;
  uint64_t mask = 0;
  int rc = opd__sum_meta(self, dim, keepdim, dtype, &spec, &mask);
  return rc ? rc : opd__cuda_reduce(OPD_CUDA_RED_NANSUM, self, mask, &spec, out);
}

int opd__cuda_prod_dim_int(const opd_kernel_ctx *ctx, opd_tensor *self, int64_t dim, bool keepdim,
                           opd_dtype dtype, opd_tensor **out) {
  (void)ctx;
  opd_out_spec spec;
  uint64_t mask = 0;
  int rc = opd__prod_meta(self, (opd_opt_int){.has_value = true, .value = dim}, keepdim, dtype,
                          &spec, &mask);
  return rc ? rc : opd__cuda_reduce(OPD_CUDA_RED_PROD, self, mask, &spec, out);
}

int opd__cuda_prod(const opd_kernel_ctx *ctx, opd_tensor *self, opd_dtype dtype, opd_tensor **out) {
  (void)ctx;
  opd_out_spec spec;
  uint64_t mask = 0;
  int rc = opd__prod_meta(self, (opd_opt_int){0}, false, dtype, &spec, &mask);
  return rc ? rc : opd__cuda_reduce(OPD_CUDA_RED_PROD, self, mask, &spec, out);
}

int opd__cuda_amin(const opd_kernel_ctx *ctx, opd_tensor *self, opd_int_list dim, bool keepdim,
                   opd_tensor **out) {
  (void)ctx;
  opd_out_spec spec;
  uint64_t mask = 0;
  int rc = opd__amin_meta(self, dim, keepdim, &spec, &mask);
  return rc ? rc : opd__cuda_reduce(OPD_CUDA_RED_AMIN, self, mask, &spec, out);
}

int opd__cuda_max(const opd_kernel_ctx *ctx, opd_tensor *self, opd_tensor **out) {
  (void)ctx;
  opd_out_spec spec;
  uint64_t mask = 0;
  int rc = opd__max_all_meta("max", self, &spec, &mask);
  return rc ? rc : opd__cuda_reduce(OPD_CUDA_RED_AMAX, self, mask, &spec, out);
}

int opd__cuda_min(const opd_kernel_ctx *ctx, opd_tensor *self, opd_tensor **out) {
  (void)ctx;
  opd_out_spec spec;
  uint64_t mask = 0;
  int rc = opd__max_all_meta("min", self, &spec, &mask);
  return rc ? rc : opd__cuda_reduce(OPD_CUDA_RED_AMIN, self, mask, &spec, out);
}

int opd__cuda_argmin(const opd_kernel_ctx *ctx, opd_tensor *self, opd_opt_int dim, bool keepdim,
                     opd_tensor **out) {
  (void)ctx;
  opd_out_spec spec;
  uint64_t mask = 0;
  int rc = opd__argmin_meta(self, dim, keepdim, &spec, &mask);
  if (rc) return rc;
  if (opd_tensor_dtype(self) == OPD_BOOL) {
    /* as the CPU kernel: 0 for a dim of size 1 before the dtype is looked at */
    bool size_one =
        dim.has_value && (mask == 0 || opd_tensor_sizes(self)[__builtin_ctzll(mask)] == 1);
    if (!size_one) return opd__cuda_not_implemented("argmin_cuda", OPD_BOOL);
  }
  return opd__cuda_reduce(OPD_CUDA_RED_ARGMIN, self, mask, &spec, out);
}

static int any_all(int op, opd_tensor *self, opd_opt_int dim, bool keepdim, opd_tensor **out) {
  opd_out_spec spec;
  uint64_t mask = 0;
  int rc = opd__any_all_meta(self, dim, keepdim, &spec, &mask);
  return rc ? rc : opd__cuda_reduce(op, self, mask, &spec, out);
}

int opd__cuda_any(const opd_kernel_ctx *ctx, opd_tensor *self, opd_tensor **out) {
  (void)ctx;
  return any_all(OPD_CUDA_RED_ANY, self, (opd_opt_int){0}, false, out);
}

int opd__cuda_any_dim(const opd_kernel_ctx *ctx, opd_tensor *self, int64_t dim, bool keepdim,
                      opd_tensor **out) {
  (void)ctx;
  return any_all(OPD_CUDA_RED_ANY, self, (opd_opt_int){.has_value = true, .value = dim}, keepdim,
                 out);
}

int opd__cuda_all(const opd_kernel_ctx *ctx, opd_tensor *self, opd_tensor **out) {
  (void)ctx;
  return any_all(OPD_CUDA_RED_ALL, self, (opd_opt_int){0}, false, out);
}

int opd__cuda_all_dim(const opd_kernel_ctx *ctx, opd_tensor *self, int64_t dim, bool keepdim,
                      opd_tensor **out) {
  (void)ctx;
  return any_all(OPD_CUDA_RED_ALL, self, (opd_opt_int){.has_value = true, .value = dim}, keepdim,
                 out);
}

/* count_nonzero: a sum of the elements read as 0 or 1 (the int64 result of the meta) */
int opd__cuda_count_nonzero_dim_intlist(const opd_kernel_ctx *ctx, opd_tensor *self,
                                        opd_int_list dim, opd_tensor **out) {
  (void)ctx;
  opd_out_spec spec;
  uint64_t mask = 0;
  int rc = opd__count_nonzero_meta(self, dim, &spec, &mask);
  return rc ? rc
            : opd__cuda_reduce_with(&(opd__cuda_red){.op = OPD_CUDA_RED_SUM, .nonzero = true}, self,
                                    mask, &spec, out, NULL);
}

/* max.dim and min.dim (values, indices) and aminmax (min, max): two reductions of the same input
 * over the same dims. */
static int two_results(int which, opd_stack *stack) {
  assert(stack->size >= 3);
  opd_ivalue *args = opd_stack_last(stack, 3);
  opd_tensor *res[2] = {NULL, NULL};
  opd_out_spec a, b;
  uint64_t mask = 0;
  int rc = opd__two_results_meta(which, args, &a, &b, &mask);
  int first =
      which == OPD__MIN_DIM || which == OPD__AMINMAX ? OPD_CUDA_RED_AMIN : OPD_CUDA_RED_AMAX;
  int second = which == OPD__AMINMAX   ? OPD_CUDA_RED_AMAX
               : which == OPD__MIN_DIM ? OPD_CUDA_RED_ARGMIN
                                       : OPD_CUDA_RED_ARGMAX;
  if (!rc) rc = opd__cuda_reduce(first, args[0].u.t, mask, &a, &res[0]);
  if (!rc) rc = opd__cuda_reduce(second, args[0].u.t, mask, &b, &res[1]);
  opd_stack_drop(stack, 3);
  return opd__push_results(stack, res, 2, rc);
}

int opd__cuda_max_dim(const opd_kernel_ctx *ctx, opd_stack *stack) {
  (void)ctx;
  return two_results(OPD__MAX_DIM, stack);
}

int opd__cuda_min_dim(const opd_kernel_ctx *ctx, opd_stack *stack) {
  (void)ctx;
  return two_results(OPD__MIN_DIM, stack);
}

int opd__cuda_aminmax(const opd_kernel_ctx *ctx, opd_stack *stack) {
  (void)ctx;
  return two_results(OPD__AMINMAX, stack);
}

/* ---- var, std and the norms ---- */

static double correction_of(opd_opt_int c) {
  return c.has_value ? (double)c.value : 1;
}

int opd__cuda_var_correction(const opd_kernel_ctx *ctx, opd_tensor *self, opd_int_list dim,
                             opd_opt_int correction, bool keepdim, opd_tensor **out) {
  (void)ctx;
  opd_out_spec spec;
  uint64_t mask = 0;
  int rc = opd__var_meta("std and var", self, dim, keepdim, &spec, &mask);
  opd__cuda_red how = {.op = OPD_CUDA_RED_VAR, .correction = correction_of(correction)};
  return rc ? rc : opd__cuda_reduce_with(&how, self, mask, &spec, out, NULL);
}

int opd__cuda_std_correction(const opd_kernel_ctx *ctx, opd_tensor *self, opd_int_list dim,
                             opd_opt_int correction, bool keepdim, opd_tensor **out) {
  (void)ctx;
  opd_out_spec spec;
  uint64_t mask = 0;
  int rc = opd__var_meta("std and var", self, dim, keepdim, &spec, &mask);
  opd__cuda_red how = {.op = OPD_CUDA_RED_STD, .correction = correction_of(correction)};
  return rc ? rc : opd__cuda_reduce_with(&how, self, mask, &spec, out, NULL);
}

/* var_mean.correction and std_mean.correction: (self, dim, correction, keepdim) on the stack;
 * the results (var or std, mean) replace them. */
static int var_mean_boxed(opd_stack *stack, int op) {
  assert(stack->size >= 4);
  opd_ivalue *args = opd_stack_last(stack, 4);
  opd_tensor *res[2] = {NULL, NULL};
  int rc = 0;
  if (args[0].tag != OPD_IV_TENSOR || args[3].tag != OPD_IV_BOOL)
    rc = opd_error(OPD_EINVAL, "var_mean / std_mean: expected (Tensor, int[1]?, int?, bool)");
  opd_out_spec spec;
  uint64_t mask = 0;
  if (!rc)
    rc = opd__var_meta(op == OPD_CUDA_RED_VAR ? "var_mean" : "std_mean", args[0].u.t,
                       opd__iv_int_list(&args[1]), args[3].u.b, &spec, &mask);
  if (!rc) {
    opd__cuda_red how = {.op = op, .correction = correction_of(opd__iv_opt_int(&args[2]))};
    rc = opd__cuda_reduce_with(&how, args[0].u.t, mask, &spec, &res[0], &res[1]);
  }
  opd_stack_drop(stack, 4);
  return opd__push_results(stack, res, 2, rc);
}

int opd__cuda_var_mean_correction(const opd_kernel_ctx *ctx, opd_stack *stack) {
  (void)ctx;
  return var_mean_boxed(stack, OPD_CUDA_RED_VAR);
}

int opd__cuda_std_mean_correction(const opd_kernel_ctx *ctx, opd_stack *stack) {
  (void)ctx;
  return var_mean_boxed(stack, OPD_CUDA_RED_STD);
}

int opd__cuda_linalg_vector_norm(const opd_kernel_ctx *ctx, opd_tensor *self, opd_scalar ord,
                                 opd_int_list dim, bool keepdim, opd_dtype dtype,
                                 opd_tensor **out) {
  (void)ctx;
  opd_out_spec spec;
  uint64_t mask = 0;
  double p = opd__scalar_to_double(ord);
  int rc = opd__vector_norm_meta(self, p, dim, keepdim, dtype, &spec, &mask);
  opd__cuda_red how = {.op = OPD_CUDA_RED_NORM, .ord = p};
  return rc ? rc : opd__cuda_reduce_with(&how, self, mask, &spec, out, NULL);
}

static int norm(opd_tensor *self, opd_scalar p, opd_int_list dim, bool keepdim, opd_dtype dtype,
                opd_tensor **out) {
  opd_out_spec spec;
  uint64_t mask = 0;
  int rc = opd__norm_meta(self, dim, keepdim, dtype, &spec, &mask);
  opd__cuda_red how = {.op = OPD_CUDA_RED_NORM,
                       .ord = p.tag == OPD_IV_NONE ? 2 : opd__scalar_to_double(p)};
  return rc ? rc : opd__cuda_reduce_with(&how, self, mask, &spec, out, NULL);
}

int opd__cuda_norm_scalaropt_dim(const opd_kernel_ctx *ctx, opd_tensor *self, opd_scalar p,
                                 opd_int_list dim, bool keepdim, opd_tensor **out) {
  (void)ctx;
  return norm(self, p, dim, keepdim, OPD_DTYPE_UNDEFINED, out);
}

int opd__cuda_norm_scalaropt_dim_dtype(const opd_kernel_ctx *ctx, opd_tensor *self, opd_scalar p,
                                       opd_int_list dim, bool keepdim, opd_dtype dtype,
                                       opd_tensor **out) {
  (void)ctx;
  return norm(self, p, dim, keepdim, dtype, out);
}

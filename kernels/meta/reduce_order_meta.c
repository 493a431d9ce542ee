/* reduce_order_meta.c: median, nanmedian and mode: their checks and result shapes (shared with
 * kernels/cpu/reduce_order.c) and their Meta kernels. */
#include "reduce_order_meta.h"

#include "index_sort_meta.h"
#include "reduce_meta.h"

/* ATen's median kernels take every dtype but bool, float16 and bfloat16 */
static int check_median_dtype(const char *kernel, const opd_tensor *self) {
  opd_dtype t = opd_tensor_dtype(self);
  if (t == OPD_BOOL || t == OPD_FLOAT16 || t == OPD_BFLOAT16)
    return opd_error(OPD_EINVAL, "\"%s\" not implemented for '%s'", kernel, opd_dtype_c10_name(t));
  return 0;
}

int opd__median_all_meta(const opd_tensor *self, opd_out_spec *spec) {
  int rc = check_median_dtype("median_cpu", self);
  if (rc) return rc;
  spec->ndim = 0;
  spec->dtype = opd_tensor_dtype(self);
  return 0;
}

int opd__order_dim_meta(bool is_mode, const opd_tensor *self, int64_t dim, bool keepdim,
                        int64_t *wrapped, opd_out_spec *spec) {
  int rc = opd__wrap_dim(dim, self->ndim, wrapped);
  if (rc == 0 && !is_mode) rc = check_median_dtype("median_out", self);
  if (rc) return rc;
  if (self->ndim > 0 && opd_tensor_sizes(self)[*wrapped] == 0)
    return opd_error(OPD_EINDEX, "%s(): Expected reduction dim %lld to have non-zero size.",
                     is_mode ? "mode" : "median", (long long)*wrapped);
  opd__reduced_spec(self, self->ndim > 0 ? UINT64_C(1) << *wrapped : 0, keepdim,
                    opd_tensor_dtype(self), spec);
  return 0;
}

/* ---- Meta kernels ---- */

static const opd_device meta_device = {OPD_DEVICE_META, -1};

static int median_all(opd_tensor *self, opd_tensor **out) {
  opd_out_spec spec;
  int rc = opd__median_all_meta(self, &spec);
  return rc ? rc : opd__alloc_output(&spec, meta_device, out);
}

int opd__meta_median(const opd_kernel_ctx *ctx, opd_tensor *self, opd_tensor **out) {
  (void)ctx;
  return median_all(self, out);
}

int opd__meta_nanmedian(const opd_kernel_ctx *ctx, opd_tensor *self, opd_tensor **out) {
  (void)ctx;
  return median_all(self, out);
}

/* median.dim, nanmedian.dim (self, int dim, bool keepdim=False) and mode (self, int dim=-1,
 * bool keepdim=False) */
static int order_dim(opd_stack *stack, bool is_mode) {
  opd_ivalue *args = opd_stack_last(stack, 3);
  opd_tensor *res[2] = {NULL, NULL};
  int64_t d;
  opd_out_spec spec;
  int rc = opd__order_dim_meta(is_mode, args[0].u.t, args[1].u.i, args[2].u.b, &d, &spec);
  if (rc == 0) rc = opd__alloc_values_indices(&spec, meta_device, res);
  opd_stack_drop(stack, 3);
  return opd__push_results(stack, res, 2, rc);
}

int opd__meta_median_dim(const opd_kernel_ctx *ctx, opd_stack *stack) {
  (void)ctx;
  return order_dim(stack, false);
}

int opd__meta_mode(const opd_kernel_ctx *ctx, opd_stack *stack) {
  (void)ctx;
  return order_dim(stack, true);
}

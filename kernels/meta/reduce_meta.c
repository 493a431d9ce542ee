/* reduce_meta.c: argument checks and output specs of the reductions (sum.dim_IntList, mean.dim,
 * nansum, prod, amax, amin, max, min, argmax, argmin, any, all, count_nonzero), _softmax /
 * _log_softmax and native_layer_norm, with PyTorch 1.13's errors, and their Meta kernels (see
 * [Note: How a kernel is written] in src/kernel_util.h). */
#include "reduce_meta.h"

#include <assert.h>
#include <math.h>
#include <stdio.h>

#include "opd/checked.h"

static int check_dtype_arg(opd_dtype dtype) {
  if (dtype != OPD_DTYPE_UNDEFINED && !opd_dtype_valid(dtype))
    return opd_error(OPD_EINVAL, "invalid dtype %d", (int)dtype);
  return 0;
}

int opd__reduce_dim_mask(opd_int_list dim, int ndim, uint64_t *mask) {
  assert(ndim >= 0 && ndim <= OPD_MAX_DIMS);
  uint64_t all = ndim == 64 ? ~UINT64_C(0) : (UINT64_C(1) << ndim) - 1;
  if (dim.len <= 0) {
    *mask = all;
    return 0;
  }
  uint64_t m = 0;
  for (int64_t i = 0; i < dim.len; i++) {
    int64_t d = 0;
    int rc = opd__wrap_dim(dim.data[i], ndim, &d);
    if (rc) return rc;
    if (m >> d & 1)
      return opd_error(OPD_EINVAL, "dim %lld appears multiple times in the list of dims",
                       (long long)d);
    m |= UINT64_C(1) << d;
  }
  *mask = m & all;
  return 0;
}

void opd__reduced_spec(const opd_tensor *self, uint64_t mask, bool keepdim, opd_dtype dtype,
                       opd_out_spec *spec) {
  const int64_t *sizes = opd_tensor_sizes(self);
  spec->ndim = 0;
  spec->dtype = dtype;
  for (int d = 0; d < self->ndim; d++) {
    if (!(mask >> d & 1))
      spec->sizes[spec->ndim++] = sizes[d];
    else if (keepdim)
      spec->sizes[spec->ndim++] = 1;
  }
}

int opd__sum_meta(const opd_tensor *self, opd_int_list dim, bool keepdim, opd_dtype dtype,
                  opd_out_spec *spec, uint64_t *mask) {
  int rc = check_dtype_arg(dtype);
  if (rc) return rc;
  opd_dtype in = opd_tensor_dtype(self);
  if (dtype == OPD_DTYPE_UNDEFINED)
    dtype = opd_dtype_is_integral(in) || in == OPD_BOOL ? OPD_INT64 : in;
  rc = opd__reduce_dim_mask(dim, self->ndim, mask);
  if (rc) return rc;
  opd__reduced_spec(self, *mask, keepdim, dtype, spec);
  return 0;
}

int opd__mean_meta(const opd_tensor *self, opd_int_list dim, bool keepdim, opd_dtype dtype,
                   opd_out_spec *spec, uint64_t *mask) {
  int rc = check_dtype_arg(dtype);
  if (rc) return rc;
  opd_dtype out = dtype != OPD_DTYPE_UNDEFINED ? dtype : opd_tensor_dtype(self);
  if (!opd_dtype_is_floating(out))
    return opd_error(OPD_EINVAL,
                     "mean(): could not infer output dtype. %s dtype must be either a floating "
                     "point or complex dtype. Got: %s",
                     dtype != OPD_DTYPE_UNDEFINED ? "Optional" : "Input", opd_dtype_c10_name(out));
  rc = opd__reduce_dim_mask(dim, self->ndim, mask);
  if (rc) return rc;
  opd__reduced_spec(self, *mask, keepdim, out, spec);
  return 0;
}

/* amax, amin, max and min (name) */
static int extremum_meta(const char *name, const opd_tensor *self, opd_int_list dim, bool keepdim,
                         opd_out_spec *spec, uint64_t *mask) {
  if (self->numel == 0) {
    if (dim.len <= 0)
      return opd_error(OPD_EINVAL,
                       "%s(): Expected reduction dim to be specified for input.numel() == 0. "
                       "Specify the reduction dim with the 'dim' argument.",
                       name);
    for (int64_t i = 0; i < dim.len; i++) {
      int64_t d = 0;
      int rc = opd__wrap_dim(dim.data[i], self->ndim, &d);
      if (rc) return rc;
      /* numel == 0 implies ndim > 0 */
      if (opd_tensor_sizes(self)[d] == 0)
        return opd_error(OPD_EINDEX, "%s(): Expected reduction dim %lld to have non-zero size.",
                         name, (long long)dim.data[i]);
    }
  }
  int rc = opd__reduce_dim_mask(dim, self->ndim, mask);
  if (rc) return rc;
  opd__reduced_spec(self, *mask, keepdim, opd_tensor_dtype(self), spec);
  return 0;
}

int opd__amax_meta(const opd_tensor *self, opd_int_list dim, bool keepdim, opd_out_spec *spec,
                   uint64_t *mask) {
  return extremum_meta("amax", self, dim, keepdim, spec, mask);
}

int opd__amin_meta(const opd_tensor *self, opd_int_list dim, bool keepdim, opd_out_spec *spec,
                   uint64_t *mask) {
  return extremum_meta("amin", self, dim, keepdim, spec, mask);
}

int opd__max_all_meta(const char *name, const opd_tensor *self, opd_out_spec *spec,
                      uint64_t *mask) {
  return extremum_meta(name, self, (opd_int_list){NULL, -1}, false, spec, mask);
}

/* argmax and argmin (name) */
static int arg_extremum_meta(const char *name, const opd_tensor *self, opd_opt_int dim,
                             bool keepdim, opd_out_spec *spec, uint64_t *mask) {
  if (dim.has_value) {
    int64_t d = 0;
    int rc = opd__wrap_dim(dim.value, self->ndim, &d);
    if (rc) return rc;
    if (self->ndim > 0 && opd_tensor_sizes(self)[d] == 0)
      return opd_error(OPD_EINDEX, "%s(): Expected reduction dim %lld to have non-zero size.", name,
                       (long long)d);
    *mask = self->ndim > 0 ? UINT64_C(1) << d : 0;
  } else {
    if (self->numel == 0)
      return opd_error(
          OPD_EINDEX, "%s(): Expected reduction dim to be specified for input.numel() == 0.", name);
    int rc = opd__reduce_dim_mask((opd_int_list){NULL, -1}, self->ndim, mask);
    if (rc) return rc;
  }
  opd__reduced_spec(self, *mask, keepdim, OPD_INT64, spec);
  return 0;
}

int opd__argmax_meta(const opd_tensor *self, opd_opt_int dim, bool keepdim, opd_out_spec *spec,
                     uint64_t *mask) {
  return arg_extremum_meta("argmax", self, dim, keepdim, spec, mask);
}

int opd__argmin_meta(const opd_tensor *self, opd_opt_int dim, bool keepdim, opd_out_spec *spec,
                     uint64_t *mask) {
  return arg_extremum_meta("argmin", self, dim, keepdim, spec, mask);
}

/* the mask of one optional dim (None: every dim) */
static int opt_dim_mask(const opd_tensor *self, opd_opt_int dim, uint64_t *mask) {
  int64_t d = dim.value;
  return opd__reduce_dim_mask((opd_int_list){dim.has_value ? &d : NULL, dim.has_value ? 1 : -1},
                              self->ndim, mask);
}

int opd__prod_meta(const opd_tensor *self, opd_opt_int dim, bool keepdim, opd_dtype dtype,
                   opd_out_spec *spec, uint64_t *mask) {
  int rc = check_dtype_arg(dtype);
  if (rc) return rc;
  opd_dtype in = opd_tensor_dtype(self);
  if (dtype == OPD_DTYPE_UNDEFINED)
    dtype = opd_dtype_is_integral(in) || in == OPD_BOOL ? OPD_INT64 : in;
  rc = opt_dim_mask(self, dim, mask);
  if (rc) return rc;
  opd__reduced_spec(self, *mask, keepdim, dtype, spec);
  return 0;
}

int opd__any_all_meta(const opd_tensor *self, opd_opt_int dim, bool keepdim, opd_out_spec *spec,
                      uint64_t *mask) {
  int rc = opt_dim_mask(self, dim, mask);
  if (rc) return rc;
  opd_dtype in = opd_tensor_dtype(self);
  opd__reduced_spec(self, *mask, keepdim, in == OPD_UINT8 ? OPD_UINT8 : OPD_BOOL, spec);
  return 0;
}

int opd__count_nonzero_meta(const opd_tensor *self, opd_int_list dim, opd_out_spec *spec,
                            uint64_t *mask) {
  int rc = opd__reduce_dim_mask(dim, self->ndim, mask);
  if (rc) return rc;
  opd__reduced_spec(self, *mask, false, OPD_INT64, spec);
  return 0;
}

int opd__softmax_meta(const opd_tensor *self, int64_t dim, bool half_to_float, opd_out_spec *spec,
                      int64_t *wrapped_dim) {
  int rc = opd__wrap_dim(dim, self->ndim, wrapped_dim);
  if (rc) return rc;
  opd_dtype dtype = opd_tensor_dtype(self);
  if (half_to_float) {
    if (dtype != OPD_FLOAT16)
      return opd_error(OPD_EINVAL,
                       "softmax with half to float conversion is not supported on CPU, and "
                       "elsewhere only for Half inputs (got %s)",
                       opd_dtype_c10_name(dtype));
    dtype = OPD_FLOAT32;
  }
  spec->ndim = self->ndim;
  spec->dtype = dtype;
  for (int d = 0; d < self->ndim; d++) spec->sizes[d] = opd_tensor_sizes(self)[d];
  return 0;
}

int opd__layer_norm_meta(const opd_tensor *input, opd_int_list normalized_shape,
                         const opd_tensor *weight, const opd_tensor *bias, opd_out_spec *out,
                         opd_out_spec *stat, int64_t *rows, int64_t *cols) {
  char ns[256], got[256];
  int64_t nn = normalized_shape.len < 0 ? 0 : normalized_shape.len;
  const int64_t *shape = normalized_shape.data;
  /* a list longer than any tensor cannot match; keep the formatting bounded */
  int nfmt = nn > OPD_MAX_DIMS ? OPD_MAX_DIMS : (int)nn;
  if (nn < 1)
    return opd_error(OPD_EINVAL,
                     "Expected normalized_shape to be at least 1-dimensional, i.e., containing at "
                     "least one element, but got normalized_shape = []");
  const opd_tensor *affine[2] = {weight, bias};
  const char *names[2] = {"weight", "bias"};
  for (int k = 0; k < 2; k++) {
    const opd_tensor *t = affine[k];
    if (!t) continue;
    bool same = t->ndim == nn;
    for (int d = 0; same && d < t->ndim; d++) same = opd_tensor_sizes(t)[d] == shape[d];
    if (!same)
      return opd_error(OPD_EINVAL,
                       "Expected %s to be of same shape as normalized_shape, but got %s of shape "
                       "%s and normalized_shape = %s",
                       names[k], names[k],
                       opd__format_sizes(opd_tensor_sizes(t), t->ndim, got, sizeof got),
                       opd__format_sizes(shape, nfmt, ns, sizeof ns));
  }
  const int64_t *sizes = opd_tensor_sizes(input);
  int ndim = input->ndim;
  bool match = ndim >= nn;
  for (int64_t i = 0; match && i < nn; i++) match = sizes[ndim - nn + i] == shape[i];
  if (!match) {
    char want[256];
    size_t used = (size_t)snprintf(want, sizeof want, "[*");
    for (int i = 0; i < nfmt && used < sizeof want; i++)
      used += (size_t)snprintf(want + used, sizeof want - used, ", %lld", (long long)shape[i]);
    if (used < sizeof want) snprintf(want + used, sizeof want - used, "]");
    return opd_error(OPD_EINVAL,
                     "Given normalized_shape=%s, expected input with shape %s, but got input of "
                     "size%s",
                     opd__format_sizes(shape, nfmt, ns, sizeof ns), want,
                     opd__format_sizes(sizes, ndim, got, sizeof got));
  }
  int axis = ndim - (int)nn;
  int64_t m = 1, n = 1;
  for (int d = 0; d < ndim; d++) {
    int64_t *p = d < axis ? &m : &n;
    if (opd_ckd_mul(p, *p, sizes[d]))
      return opd_error(OPD_EINVAL, "layer_norm: input of size%s is too large",
                       opd__format_sizes(sizes, ndim, got, sizeof got));
  }
  *rows = m;
  *cols = n;
  out->ndim = ndim;
  out->dtype = opd_tensor_dtype(input);
  stat->ndim = ndim;
  stat->dtype = out->dtype;
  for (int d = 0; d < ndim; d++) {
    out->sizes[d] = sizes[d];
    stat->sizes[d] = d < axis ? sizes[d] : 1;
  }
  return 0;
}

int opd__push_results(opd_stack *stack, opd_tensor **res, int n, int rc) {
  int pushed = 0;
  if (!rc) {
    for (; pushed < n; pushed++) {
      rc = opd_stack_push(stack, opd_iv_tensor_steal(res[pushed]));
      if (rc) break;
    }
    if (!rc) return 0;
    opd_stack_drop(stack, (uint32_t)pushed);
    pushed++; /* the failed push destroyed its value */
  }
  for (int i = pushed; i < n; i++)
    if (res[i]) opd_tensor_release(res[i]);
  return rc;
}

/* ---- Meta kernels ---- */

int opd__meta_sum_dim_intlist(const opd_kernel_ctx *ctx, opd_tensor *self, opd_int_list dim,
                              bool keepdim, opd_dtype dtype, opd_tensor **out) {
  (void)ctx;
  opd_out_spec spec;
  uint64_t mask = 0;
  int rc = opd__sum_meta(self, dim, keepdim, dtype, &spec, &mask);
  return rc ? rc : opd__alloc_output(&spec, opd_tensor_device(self), out);
}

int opd__meta_mean_dim(const opd_kernel_ctx *ctx, opd_tensor *self, opd_int_list dim, bool keepdim,
                       opd_dtype dtype, opd_tensor **out) {
  (void)ctx;
  opd_out_spec spec;
  uint64_t mask = 0;
  int rc = opd__mean_meta(self, dim, keepdim, dtype, &spec, &mask);
  return rc ? rc : opd__alloc_output(&spec, opd_tensor_device(self), out);
}

int opd__meta_amax(const opd_kernel_ctx *ctx, opd_tensor *self, opd_int_list dim, bool keepdim,
                   opd_tensor **out) {
  (void)ctx;
  opd_out_spec spec;
  uint64_t mask = 0;
  int rc = opd__amax_meta(self, dim, keepdim, &spec, &mask);
  return rc ? rc : opd__alloc_output(&spec, opd_tensor_device(self), out);
}

int opd__meta_argmax(const opd_kernel_ctx *ctx, opd_tensor *self, opd_opt_int dim, bool keepdim,
                     opd_tensor **out) {
  (void)ctx;
  opd_out_spec spec;
  uint64_t mask = 0;
  int rc = opd__argmax_meta(self, dim, keepdim, &spec, &mask);
  return rc ? rc : opd__alloc_output(&spec, opd_tensor_device(self), out);
}

int opd__meta_softmax(const opd_kernel_ctx *ctx, opd_tensor *self, int64_t dim, bool half_to_float,
                      opd_tensor **out) {
  (void)ctx;
  opd_out_spec spec;
  int64_t d = 0;
  int rc = opd__softmax_meta(self, dim, half_to_float, &spec, &d);
  return rc ? rc : opd__alloc_output(&spec, opd_tensor_device(self), out);
}

int opd__meta_log_softmax(const opd_kernel_ctx *ctx, opd_tensor *self, int64_t dim,
                          bool half_to_float, opd_tensor **out) {
  (void)ctx;
  opd_out_spec spec;
  int64_t d = 0;
  int rc = opd__softmax_meta(self, dim, half_to_float, &spec, &d);
  return rc ? rc : opd__alloc_output(&spec, opd_tensor_device(self), out);
}

static int layer_norm_prepare(opd_ivalue *args, opd__layer_norm_args *a, opd_tensor **res) {
  if (args[0].tag != OPD_IV_TENSOR || args[1].tag != OPD_IV_INT_LIST ||
      (args[4].tag != OPD_IV_DOUBLE && args[4].tag != OPD_IV_INT))
    return opd_error(OPD_EINVAL,
                     "native_layer_norm: expected (Tensor, int[], Tensor?, Tensor?, float)");
  opd_tensor *input = a->input = args[0].u.t;
  opd_tensor *weight = a->weight = args[2].tag == OPD_IV_TENSOR ? args[2].u.t : NULL;
  opd_tensor *bias = a->bias = args[3].tag == OPD_IV_TENSOR ? args[3].u.t : NULL;
  a->norm_ndim = (int)args[1].len;
  a->eps = args[4].tag == OPD_IV_DOUBLE ? args[4].u.d : (double)args[4].u.i;
  opd_out_spec out, stat;
  opd_device device;
  int rc = opd__common_device((opd_tensor *const[]){input, weight, bias}, 3, &device);
  if (!rc)
    rc = opd__layer_norm_meta(input, opd__iv_int_list(&args[1]), weight, bias, &out, &stat,
                              &a->rows, &a->cols);
  if (rc) return rc;
  opd_dtype dt = opd_tensor_dtype(input);
  if (!opd_dtype_is_floating(dt))
    return opd_error(OPD_EINVAL, "\"LayerNormKernelImpl\" not implemented for '%s'",
                     opd_dtype_c10_name(dt));
  const opd_tensor *affine[2] = {weight, bias};
  for (int k = 0; k < 2; k++)
    if (affine[k] && opd_tensor_dtype(affine[k]) != dt)
      return opd_error(OPD_EINVAL, "expected scalar type %s but found %s", opd_dtype_c10_name(dt),
                       opd_dtype_c10_name(opd_tensor_dtype(affine[k])));
  rc = opd__alloc_output(&out, device, &res[0]);
  if (!rc) rc = opd__alloc_output(&stat, device, &res[1]);
  if (!rc) rc = opd__alloc_output(&stat, device, &res[2]);
  return rc;
}

int opd__layer_norm_kernel(opd_stack *stack, opd__layer_norm_fill fill) {
  assert(stack->size >= 5);
  opd_tensor *res[3] = {NULL, NULL, NULL};
  opd__layer_norm_args a;
  int rc = layer_norm_prepare(opd_stack_last(stack, 5), &a, res);
  if (!rc && a.rows > 0) rc = fill(&a, res);
  opd_stack_drop(stack, 5);
  return opd__push_results(stack, res, 3, rc);
}

int opd__meta_native_layer_norm(const opd_kernel_ctx *ctx, opd_stack *stack) {
  (void)ctx;
  assert(stack->size >= 5);
  opd_ivalue *args = opd_stack_last(stack, 5);
  opd_tensor *res[3] = {NULL, NULL, NULL};
  int rc = 0;
  if (args[0].tag != OPD_IV_TENSOR || args[1].tag != OPD_IV_INT_LIST)
    rc = opd_error(OPD_EINVAL, "native_layer_norm: expected (Tensor, int[], Tensor?, Tensor?, "
                               "float) arguments");
  opd_tensor *input = rc ? NULL : args[0].u.t;
  opd_tensor *weight = args[2].tag == OPD_IV_TENSOR ? args[2].u.t : NULL;
  opd_tensor *bias = args[3].tag == OPD_IV_TENSOR ? args[3].u.t : NULL;
  opd_out_spec out, stat;
  int64_t rows, cols;
  opd_device device;
  if (!rc) rc = opd__common_device((opd_tensor *const[]){input, weight, bias}, 3, &device);
  if (!rc)
    rc = opd__layer_norm_meta(input, opd__iv_int_list(&args[1]), weight, bias, &out, &stat, &rows,
                              &cols);
  if (!rc) rc = opd__alloc_output(&out, device, &res[0]);
  if (!rc) rc = opd__alloc_output(&stat, device, &res[1]);
  if (!rc) rc = opd__alloc_output(&stat, device, &res[2]);
  opd_stack_drop(stack, 5);
  return opd__push_results(stack, res, 3, rc);
}

/* The Meta device's compute of the reductions below ([Note: A reduction's wrapper and its
 * device's compute]): the output(s) allocated, nothing computed. */
static int meta_alloc(const opd__red_call *call, opd_tensor *self, uint64_t mask,
                      const opd_out_spec *spec, opd_tensor **out, opd_tensor **mean) {
  (void)call;
  (void)mask;
  int rc = opd__alloc_output(spec, opd_tensor_device(self), out);
  if (!rc && mean && (rc = opd__alloc_output(spec, opd_tensor_device(self), mean))) {
    opd_tensor_release(*out);
    *out = NULL;
  }
  return rc;
}

int opd__meta_nansum(const opd_kernel_ctx *ctx, opd_tensor *self, opd_int_list dim, bool keepdim,
                     opd_dtype dtype, opd_tensor **out) {
  return opd__meta_sum_dim_intlist(ctx, self, dim, keepdim, dtype, out);
}

int opd__meta_prod_dim_int(const opd_kernel_ctx *ctx, opd_tensor *self, int64_t dim, bool keepdim,
                           opd_dtype dtype, opd_tensor **out) {
  (void)ctx;
  return opd__prod_run(meta_alloc, 0, self, (opd_opt_int){.has_value = true, .value = dim}, keepdim,
                       dtype, out);
}

int opd__meta_prod(const opd_kernel_ctx *ctx, opd_tensor *self, opd_dtype dtype, opd_tensor **out) {
  (void)ctx;
  return opd__prod_run(meta_alloc, 0, self, (opd_opt_int){0}, false, dtype, out);
}

int opd__meta_amin(const opd_kernel_ctx *ctx, opd_tensor *self, opd_int_list dim, bool keepdim,
                   opd_tensor **out) {
  (void)ctx;
  return opd__amin_run(meta_alloc, 0, self, dim, keepdim, out);
}

int opd__meta_max(const opd_kernel_ctx *ctx, opd_tensor *self, opd_tensor **out) {
  (void)ctx;
  return opd__max_all_run(meta_alloc, 0, "max", self, out);
}

int opd__meta_min(const opd_kernel_ctx *ctx, opd_tensor *self, opd_tensor **out) {
  (void)ctx;
  return opd__max_all_run(meta_alloc, 0, "min", self, out);
}

int opd__meta_argmin(const opd_kernel_ctx *ctx, opd_tensor *self, opd_opt_int dim, bool keepdim,
                     opd_tensor **out) {
  (void)ctx;
  opd_out_spec spec;
  uint64_t mask = 0;
  int rc = opd__argmin_meta(self, dim, keepdim, &spec, &mask);
  return rc ? rc : opd__alloc_output(&spec, opd_tensor_device(self), out);
}

int opd__meta_any(const opd_kernel_ctx *ctx, opd_tensor *self, opd_tensor **out) {
  (void)ctx;
  return opd__any_all_run(meta_alloc, 0, self, (opd_opt_int){0}, false, out);
}

int opd__meta_any_dim(const opd_kernel_ctx *ctx, opd_tensor *self, int64_t dim, bool keepdim,
                      opd_tensor **out) {
  (void)ctx;
  return opd__any_all_run(meta_alloc, 0, self, (opd_opt_int){.has_value = true, .value = dim},
                          keepdim, out);
}

int opd__meta_all(const opd_kernel_ctx *ctx, opd_tensor *self, opd_tensor **out) {
  (void)ctx;
  return opd__any_all_run(meta_alloc, 0, self, (opd_opt_int){0}, false, out);
}

int opd__meta_all_dim(const opd_kernel_ctx *ctx, opd_tensor *self, int64_t dim, bool keepdim,
                      opd_tensor **out) {
  (void)ctx;
  return opd__any_all_run(meta_alloc, 0, self, (opd_opt_int){.has_value = true, .value = dim},
                          keepdim, out);
}

/* (PyTorch 1.13 has no Meta kernel for it; opd's lets graphs infer its shape) */
int opd__meta_count_nonzero_dim_intlist(const opd_kernel_ctx *ctx, opd_tensor *self,
                                        opd_int_list dim, opd_tensor **out) {
  (void)ctx;
  return opd__count_nonzero_run(meta_alloc, 0, self, dim, out);
}

/* ---- var, std and the norms ---- */

int opd__var_meta(const char *name, const opd_tensor *self, opd_int_list dim, bool keepdim,
                  opd_out_spec *spec, uint64_t *mask) {
  if (!opd_dtype_is_floating(opd_tensor_dtype(self)))
    return opd_error(OPD_EINVAL, "%s only support floating point and complex dtypes", name);
  int rc = opd__reduce_dim_mask(dim, self->ndim, mask);
  if (rc) return rc;
  opd__reduced_spec(self, *mask, keepdim, opd_tensor_dtype(self), spec);
  return 0;
}

/* Whether a value of `from` converts to `to` without narrowing (both floating). */
static bool widens(opd_dtype from, opd_dtype to) {
  if (from == to || to == OPD_FLOAT64) return true;
  return to == OPD_FLOAT32 && (from == OPD_FLOAT16 || from == OPD_BFLOAT16);
}

int opd__vector_norm_meta(const opd_tensor *self, double ord, opd_int_list dim, bool keepdim,
                          opd_dtype dtype, opd_out_spec *spec, uint64_t *mask) {
  int rc = check_dtype_arg(dtype);
  if (rc) return rc;
  opd_dtype in = opd_tensor_dtype(self);
  if (!opd_dtype_is_floating(in))
    return opd_error(OPD_EINVAL,
                     "linalg.vector_norm: Expected a floating point or complex tensor as input. "
                     "Got %s",
                     opd_dtype_c10_name(in));
  if (dtype != OPD_DTYPE_UNDEFINED) {
    if (!opd_dtype_is_floating(dtype))
      return opd_error(OPD_EINVAL,
                       "linalg.vector_norm: dtype should be floating point or complex, but got %s",
                       opd_dtype_c10_name(dtype));
    if (!widens(in, dtype))
      return opd_error(OPD_EINVAL,
                       "linalg.vector_norm: the dtype of the input (%s) should be convertible "
                       "without narrowing to the specified dtype (%s)",
                       opd_dtype_c10_name(in), opd_dtype_c10_name(dtype));
  }
  rc = opd__reduce_dim_mask(dim, self->ndim, mask);
  if (rc) return rc;
  if (self->numel == 0 && (ord < 0 || ord == INFINITY)) {
    if (dim.len <= 0)
      return opd_error(OPD_EINVAL,
                       "linalg.vector_norm cannot compute the %g norm on an empty tensor because "
                       "the operation does not have an identity",
                       ord);
    for (int d = 0; d < self->ndim; d++)
      if ((*mask >> d & 1) && opd_tensor_sizes(self)[d] == 0)
        return opd_error(OPD_EINVAL,
                         "linalg.vector_norm cannot compute the %g norm on the dimension %d"
                         "because this dimension is empty and the operation does not have an "
                         "identity",
                         ord, d);
  }
  opd__reduced_spec(self, *mask, keepdim, dtype != OPD_DTYPE_UNDEFINED ? dtype : in, spec);
  return 0;
}

int opd__norm_meta(const opd_tensor *self, opd_int_list dim, bool keepdim, opd_dtype dtype,
                   opd_out_spec *spec, uint64_t *mask) {
  int rc = check_dtype_arg(dtype);
  if (rc) return rc;
  opd_dtype in = opd_tensor_dtype(self);
  if (dtype == OPD_DTYPE_UNDEFINED && !opd_dtype_is_floating(in))
    return opd_error(OPD_EINVAL,
                     "norm(): input dtype should be either floating point or complex. Got %s "
                     "instead.",
                     opd_dtype_c10_name(in));
  if (dtype != OPD_DTYPE_UNDEFINED && !opd_dtype_is_floating(dtype))
    return opd_error(OPD_EINVAL,
                     "norm(): the desired output dtype should be either floating point or "
                     "complex. Got %s instead.",
                     opd_dtype_c10_name(dtype));
  rc = opd__reduce_dim_mask(dim, self->ndim, mask);
  if (rc) return rc;
  opd__reduced_spec(self, *mask, keepdim, dtype != OPD_DTYPE_UNDEFINED ? dtype : in, spec);
  return 0;
}

int opd__meta_var_correction(const opd_kernel_ctx *ctx, opd_tensor *self, opd_int_list dim,
                             opd_opt_int correction, bool keepdim, opd_tensor **out) {
  (void)ctx;
  return opd__var_run(meta_alloc, 0, self, dim, correction, keepdim, out);
}

int opd__meta_linalg_vector_norm(const opd_kernel_ctx *ctx, opd_tensor *self, opd_scalar ord,
                                 opd_int_list dim, bool keepdim, opd_dtype dtype,
                                 opd_tensor **out) {
  (void)ctx;
  return opd__vector_norm_run(meta_alloc, 0, self, ord, dim, keepdim, dtype, out);
}

int opd__meta_norm_scalaropt_dim(const opd_kernel_ctx *ctx, opd_tensor *self, opd_scalar p,
                                 opd_int_list dim, bool keepdim, opd_tensor **out) {
  (void)ctx;
  return opd__norm_run(meta_alloc, 0, self, p, dim, keepdim, OPD_DTYPE_UNDEFINED, out);
}

int opd__meta_norm_scalaropt_dim_dtype(const opd_kernel_ctx *ctx, opd_tensor *self, opd_scalar p,
                                       opd_int_list dim, bool keepdim, opd_dtype dtype,
                                       opd_tensor **out) {
  (void)ctx;
  return opd__norm_run(meta_alloc, 0, self, p, dim, keepdim, dtype, out);
}

int opd__meta_std_correction(const opd_kernel_ctx *ctx, opd_tensor *self, opd_int_list dim,
                             opd_opt_int correction, bool keepdim, opd_tensor **out) {
  return opd__meta_var_correction(ctx, self, dim, correction, keepdim, out);
}

int opd__meta_var_mean_correction(const opd_kernel_ctx *ctx, opd_stack *stack) {
  (void)ctx;
  return opd__var_mean_run(meta_alloc, 0, "var_mean", stack);
}

int opd__meta_std_mean_correction(const opd_kernel_ctx *ctx, opd_stack *stack) {
  (void)ctx;
  return opd__var_mean_run(meta_alloc, 0, "std_mean", stack);
}

/* ---- max.dim, min.dim, aminmax: two results ---- */

int opd__max_dim_meta(const char *name, const opd_tensor *self, int64_t dim, bool keepdim,
                      opd_out_spec *values, opd_out_spec *indices, uint64_t *mask) {
  int64_t d = 0;
  int rc = opd__wrap_dim(dim, self->ndim, &d);
  if (rc) return rc;
  if (self->ndim > 0 && opd_tensor_sizes(self)[d] == 0)
    return opd_error(OPD_EINDEX, "%s(): Expected reduction dim %lld to have non-zero size.", name,
                     (long long)d);
  *mask = self->ndim > 0 ? UINT64_C(1) << d : 0;
  opd__reduced_spec(self, *mask, keepdim, opd_tensor_dtype(self), values);
  opd__reduced_spec(self, *mask, keepdim, OPD_INT64, indices);
  return 0;
}

int opd__aminmax_meta(const opd_tensor *self, opd_opt_int dim, bool keepdim, opd_out_spec *spec,
                      uint64_t *mask) {
  if (!dim.has_value) {
    if (self->numel == 0)
      return opd_error(OPD_EINVAL, "aminmax(): cannot compute aminmax over an empty dimension as "
                                   "the operation has no identity.");
    int rc = opd__reduce_dim_mask((opd_int_list){NULL, -1}, self->ndim, mask);
    if (rc) return rc;
    opd__reduced_spec(self, *mask, keepdim, opd_tensor_dtype(self), spec);
    return 0;
  }
  int64_t d = 0;
  int rc = opd__wrap_dim(dim.value, self->ndim, &d);
  if (rc) return rc;
  if (self->ndim > 0 && opd_tensor_sizes(self)[d] == 0)
    return opd_error(OPD_EINDEX, "aminmax: Expected reduction dim %lld to have non-zero size.",
                     (long long)d);
  *mask = self->ndim > 0 ? UINT64_C(1) << d : 0;
  opd__reduced_spec(self, *mask, keepdim, opd_tensor_dtype(self), spec);
  if (self->ndim == 0 && keepdim) { /* PyTorch 1.13 gives a 0-d input's keepdim result 1 dim */
    spec->ndim = 1;
    spec->sizes[0] = 1;
  }
  return 0;
}

/* The arguments of max.dim / min.dim (self, int dim, bool keepdim) and aminmax (self, int? dim,
 * bool keepdim) on a boxed stack, checked; the specs of both results and the reduced mask. */
int opd__two_results_meta(int which, opd_ivalue *args, opd_out_spec *first, opd_out_spec *second,
                          uint64_t *mask) {
  bool aminmax = which == OPD__AMINMAX;
  if (args[0].tag != OPD_IV_TENSOR || args[2].tag != OPD_IV_BOOL ||
      (aminmax ? args[1].tag != OPD_IV_INT && args[1].tag != OPD_IV_NONE
               : args[1].tag != OPD_IV_INT))
    return opd_error(OPD_EINVAL, "%s: expected (Tensor, int%s, bool)",
                     aminmax ? "aminmax" : "max / min", aminmax ? "?" : "");
  if (aminmax) {
    int rc = opd__aminmax_meta(args[0].u.t, opd__iv_opt_int(&args[1]), args[2].u.b, first, mask);
    *second = *first;
    return rc;
  }
  return opd__max_dim_meta(which == OPD__MAX_DIM ? "max" : "min", args[0].u.t, args[1].u.i,
                           args[2].u.b, first, second, mask);
}

static const opd__extrema_ops meta_extrema = {0};

int opd__meta_max_dim(const opd_kernel_ctx *ctx, opd_stack *stack) {
  (void)ctx;
  return opd__two_results_run(meta_alloc, &meta_extrema, OPD__MAX_DIM, stack);
}

int opd__meta_min_dim(const opd_kernel_ctx *ctx, opd_stack *stack) {
  (void)ctx;
  return opd__two_results_run(meta_alloc, &meta_extrema, OPD__MIN_DIM, stack);
}

int opd__meta_aminmax(const opd_kernel_ctx *ctx, opd_stack *stack) {
  (void)ctx;
  return opd__two_results_run(meta_alloc, &meta_extrema, OPD__AMINMAX, stack);
}

/* ---- the devices' wrappers: [Note: A reduction's wrapper and its device's compute] ---- */

static int compute(opd__red_fn fn, int op, opd_tensor *self, uint64_t mask,
                   const opd_out_spec *spec, opd_tensor **out) {
  return fn(&(opd__red_call){.op = op}, self, mask, spec, out, NULL);
}

int opd__sum_run(opd__red_fn fn, int op, opd_tensor *self, opd_int_list dim, bool keepdim,
                 opd_dtype dtype, opd_tensor **out) {
  opd_out_spec spec;
  uint64_t mask = 0;
  int rc = opd__sum_meta(self, dim, keepdim, dtype, &spec, &mask);
  return rc ? rc : compute(fn, op, self, mask, &spec, out);
}

int opd__prod_run(opd__red_fn fn, int op, opd_tensor *self, opd_opt_int dim, bool keepdim,
                  opd_dtype dtype, opd_tensor **out) {
  opd_out_spec spec;
  uint64_t mask = 0;
  int rc = opd__prod_meta(self, dim, keepdim, dtype, &spec, &mask);
  return rc ? rc : compute(fn, op, self, mask, &spec, out);
}

int opd__amin_run(opd__red_fn fn, int op, opd_tensor *self, opd_int_list dim, bool keepdim,
                  opd_tensor **out) {
  opd_out_spec spec;
  uint64_t mask = 0;
  int rc = opd__amin_meta(self, dim, keepdim, &spec, &mask);
  return rc ? rc : compute(fn, op, self, mask, &spec, out);
}

int opd__max_all_run(opd__red_fn fn, int op, const char *name, opd_tensor *self, opd_tensor **out) {
  opd_out_spec spec;
  uint64_t mask = 0;
  int rc = opd__max_all_meta(name, self, &spec, &mask);
  return rc ? rc : compute(fn, op, self, mask, &spec, out);
}

int opd__argmin_run(opd__red_fn fn, int op, const char *kernel_name, opd_tensor *self,
                    opd_opt_int dim, bool keepdim, opd_tensor **out) {
  opd_out_spec spec;
  uint64_t mask = 0;
  int rc = opd__argmin_meta(self, dim, keepdim, &spec, &mask);
  if (rc) return rc;
  if (opd_tensor_dtype(self) == OPD_BOOL) {
    bool size_one =
        dim.has_value && (mask == 0 || opd_tensor_sizes(self)[__builtin_ctzll(mask)] == 1);
    if (!size_one)
      return opd_error(OPD_EINVAL, "\"%s\" not implemented for '%s'", kernel_name,
                       opd_dtype_c10_name(OPD_BOOL));
  }
  return compute(fn, op, self, mask, &spec, out);
}

int opd__any_all_run(opd__red_fn fn, int op, opd_tensor *self, opd_opt_int dim, bool keepdim,
                     opd_tensor **out) {
  opd_out_spec spec;
  uint64_t mask = 0;
  int rc = opd__any_all_meta(self, dim, keepdim, &spec, &mask);
  return rc ? rc : compute(fn, op, self, mask, &spec, out);
}

int opd__count_nonzero_run(opd__red_fn fn, int op, opd_tensor *self, opd_int_list dim,
                           opd_tensor **out) {
  opd_out_spec spec;
  uint64_t mask = 0;
  int rc = opd__count_nonzero_meta(self, dim, &spec, &mask);
  return rc ? rc : compute(fn, op, self, mask, &spec, out);
}

int opd__two_results_run(opd__red_fn fn, const opd__extrema_ops *ops, int which, opd_stack *stack) {
  assert(stack->size >= 3);
  opd_ivalue *args = opd_stack_last(stack, 3);
  opd_tensor *res[2] = {NULL, NULL};
  opd_out_spec a, b;
  uint64_t mask = 0;
  int rc = opd__two_results_meta(which, args, &a, &b, &mask);
  int first = which == OPD__MIN_DIM || which == OPD__AMINMAX ? ops->min : ops->max;
  int second = which == OPD__AMINMAX ? ops->max : which == OPD__MIN_DIM ? ops->argmin : ops->argmax;
  if (!rc) rc = compute(fn, first, args[0].u.t, mask, &a, &res[0]);
  if (!rc) rc = compute(fn, second, args[0].u.t, mask, &b, &res[1]);
  opd_stack_drop(stack, 3);
  return opd__push_results(stack, res, 2, rc);
}

static double correction_of(opd_opt_int c) {
  return c.has_value ? (double)c.value : 1;
}

int opd__var_run(opd__red_fn fn, int op, opd_tensor *self, opd_int_list dim, opd_opt_int correction,
                 bool keepdim, opd_tensor **out) {
  opd_out_spec spec;
  uint64_t mask = 0;
  int rc = opd__var_meta("std and var", self, dim, keepdim, &spec, &mask);
  opd__red_call call = {.op = op, .correction = correction_of(correction)};
  return rc ? rc : fn(&call, self, mask, &spec, out, NULL);
}

int opd__var_mean_run(opd__red_fn fn, int op, const char *name, opd_stack *stack) {
  assert(stack->size >= 4);
  opd_ivalue *args = opd_stack_last(stack, 4);
  opd_tensor *res[2] = {NULL, NULL};
  int rc = 0;
  if (args[0].tag != OPD_IV_TENSOR || args[3].tag != OPD_IV_BOOL)
    rc = opd_error(OPD_EINVAL, "var_mean / std_mean: expected (Tensor, int[1]?, int?, bool)");
  opd_out_spec spec;
  uint64_t mask = 0;
  if (!rc)
    rc = opd__var_meta(name, args[0].u.t, opd__iv_int_list(&args[1]), args[3].u.b, &spec, &mask);
  if (!rc) {
    opd__red_call call = {.op = op, .correction = correction_of(opd__iv_opt_int(&args[2]))};
    rc = fn(&call, args[0].u.t, mask, &spec, &res[0], &res[1]);
  }
  opd_stack_drop(stack, 4);
  return opd__push_results(stack, res, 2, rc);
}

int opd__vector_norm_run(opd__red_fn fn, int op, opd_tensor *self, opd_scalar ord, opd_int_list dim,
                         bool keepdim, opd_dtype dtype, opd_tensor **out) {
  opd_out_spec spec;
  uint64_t mask = 0;
  double p = opd__scalar_to_double(ord);
  int rc = opd__vector_norm_meta(self, p, dim, keepdim, dtype, &spec, &mask);
  return rc ? rc : fn(&(opd__red_call){.op = op, .ord = p}, self, mask, &spec, out, NULL);
}

int opd__norm_run(opd__red_fn fn, int op, opd_tensor *self, opd_scalar p, opd_int_list dim,
                  bool keepdim, opd_dtype dtype, opd_tensor **out) {
  opd_out_spec spec;
  uint64_t mask = 0;
  int rc = opd__norm_meta(self, dim, keepdim, dtype, &spec, &mask);
  double ord = p.tag == OPD_IV_NONE ? 2 : opd__scalar_to_double(p);
  return rc ? rc : fn(&(opd__red_call){.op = op, .ord = ord}, self, mask, &spec, out, NULL);
}

/* pointwise_meta.c: meta functions of the pointwise math operators (dtype rules, shapes,
 * PyTorch's argument errors; see pointwise_meta.h) and their Meta kernels. */
#include "pointwise_meta.h"

#include <string.h>

#include "elementwise_meta.h"
#include "src/loops.h"

static const opd_device meta_device = {OPD_DEVICE_META, -1};

opd_dtype opd__pointwise_promote(opd_tensor *const *t, int n, const opd_dtype *scalar_kinds,
                                 int ns) {
  opd_result_type_state s = opd_result_type_init();
  for (int i = 0; i < n; i++) opd_result_type_add_tensor(&s, opd_tensor_dtype(t[i]), t[i]->ndim);
  for (int i = 0; i < ns; i++)
    if (scalar_kinds[i] != OPD_DTYPE_UNDEFINED) opd_result_type_add_scalar(&s, scalar_kinds[i]);
  return opd_result_type(&s);
}

static opd_dtype kind_dtype(opd__pointwise_kind kind, opd_dtype promoted) {
  switch (kind) {
  case OPD__POINTWISE_FLOAT: return opd_dtype_is_floating(promoted) ? promoted : OPD_DEFAULT_DTYPE;
  case OPD__POINTWISE_BOOL: return OPD_BOOL;
  default: return promoted;
  }
}

static bool takes(opd__pointwise_dtypes dtypes, opd_dtype t) {
  switch (dtypes) {
  case OPD__POINTWISE_NUMBERS: return t != OPD_BOOL;
  case OPD__POINTWISE_FLOATS: return opd_dtype_is_floating(t);
  case OPD__POINTWISE_BITS: return !opd_dtype_is_floating(t);
  case OPD__POINTWISE_INTS: return opd_dtype_is_integral(t);
  default: return true;
  }
}

int opd__pointwise_meta(opd_tensor *const *inputs, int n, opd__pointwise_kind kind,
                        opd__pointwise_dtypes dtypes, const char *name, opd_dtype *compute,
                        opd_out_spec *spec) {
  int rc = opd__broadcast_tensors(inputs, n, spec);
  if (rc) return rc;
  opd_dtype promoted = opd__pointwise_promote(inputs, n, NULL, 0);
  spec->dtype = kind_dtype(kind, promoted);
  *compute = kind == OPD__POINTWISE_BOOL ? promoted : spec->dtype;
  if (!takes(dtypes, *compute))
    return opd_error(OPD_EINVAL, "\"%s\" not implemented for '%s'", name,
                     opd_dtype_c10_name(*compute));
  return 0;
}

/* c10's canCast: no floating to integral, nothing but bool to bool. */
static bool can_cast(opd_dtype from, opd_dtype to) {
  return !(opd_dtype_is_floating(from) && opd_dtype_is_integral(to)) &&
         !(from != OPD_BOOL && to == OPD_BOOL);
}

int opd__pointwise_inplace_meta(opd_tensor *self, opd_tensor *const *inputs, int n,
                                const opd_out_spec *spec) {
  opd_dtype t = opd_tensor_dtype(self);
  if (!can_cast(spec->dtype, t))
    return opd_error(OPD_EINVAL, "result type %s can't be cast to the desired output type %s",
                     opd_dtype_c10_name(spec->dtype), opd_dtype_c10_name(t));
  if (spec->ndim != self->ndim ||
      memcmp(spec->sizes, opd_tensor_sizes(self), (size_t)spec->ndim * sizeof *spec->sizes)) {
    char a[256], b[256];
    return opd_error(OPD_EINVAL, "output with shape %s doesn't match the broadcast shape %s",
                     opd__format_sizes(opd_tensor_sizes(self), self->ndim, a, sizeof a),
                     opd__format_sizes(spec->sizes, spec->ndim, b, sizeof b));
  }
  if (opd_tensor_is_meta(self)) return 0;
  int rc = opd__assert_no_internal_overlap(self);
  for (int i = 0; i < n && rc == 0; i++)
    if (inputs[i] != self) rc = opd__assert_no_partial_overlap(self, inputs[i]);
  return rc;
}

int opd__round_decimals_meta(opd_tensor *self, opd_out_spec *spec) {
  opd_dtype t = opd_tensor_dtype(self);
  if (!opd_dtype_is_floating(t))
    return opd_error(OPD_EINVAL, "\"round_cpu\" not implemented for '%s'", opd_dtype_c10_name(t));
  int rc = opd__broadcast_tensors(&self, 1, spec);
  spec->dtype = t;
  return rc;
}

static bool is_integral_or_bool(opd_dtype t) {
  return opd_dtype_is_integral(t) || t == OPD_BOOL;
}

int opd__addc_meta(opd_tensor *self, opd_tensor *t1, opd_tensor *t2, opd_scalar value, bool div,
                   opd_out_spec *spec) {
  (void)value;
  if (div && is_integral_or_bool(opd_tensor_dtype(t1)) && is_integral_or_bool(opd_tensor_dtype(t2)))
    return opd_error(OPD_EINVAL,
                     "Integer division with addcdiv is no longer supported, and in a future  "
                     "release addcdiv will perform a true division of tensor1 and tensor2.");
  opd_dtype compute;
  int rc = opd__pointwise_meta((opd_tensor *[]){self, t1, t2}, 3, OPD__POINTWISE_SAME,
                               OPD__POINTWISE_ALL, NULL, &compute, spec);
  if (rc) return rc;
  if (spec->dtype == OPD_BOOL)
    return opd_error(OPD_EINVAL, "\"%s\" not implemented for 'Bool'",
                     div ? "addcdiv_cpu_out" : "addcmul_cpu_out");
  return 0;
}

/* c10's names of dtypes in lerp's errors */
static const char *lerp_dtype_name(opd_dtype t) {
  return t == OPD_FLOAT32 ? "float" : t == OPD_FLOAT64 ? "double" : opd_dtype_name(t);
}

int opd__lerp_meta(opd_tensor *self, opd_tensor *end, opd_tensor *weight, opd_out_spec *spec) {
  opd_dtype t = opd_tensor_dtype(self);
  if (opd_tensor_dtype(end) != t)
    return opd_error(OPD_EINVAL, "expected dtype %s for `end` but got dtype %s", lerp_dtype_name(t),
                     lerp_dtype_name(opd_tensor_dtype(end)));
  if (weight && opd_tensor_dtype(weight) != t)
    return opd_error(OPD_EINVAL, "expected dtype %s for `weight` but got dtype %s",
                     lerp_dtype_name(t), lerp_dtype_name(opd_tensor_dtype(weight)));
  if (!opd_dtype_is_floating(t))
    return opd_error(OPD_EINVAL, "\"%s\" not implemented for '%s'",
                     weight ? "lerp_kernel_tensor" : "lerp_kernel_scalar", opd_dtype_c10_name(t));
  int rc = opd__broadcast_tensors((opd_tensor *[]){self, end, weight}, weight ? 3 : 2, spec);
  spec->dtype = t;
  return rc;
}

int opd__clamp_scalar_meta(opd_tensor *self, opd_scalar bound, opd_out_spec *spec) {
  int rc = opd__broadcast_tensors(&self, 1, spec);
  if (rc) return rc;
  opd_dtype kind = opd__scalar_kind(bound);
  spec->dtype = opd__pointwise_promote(&self, 1, &kind, 1);
  if (spec->dtype == OPD_BOOL)
    return opd_error(OPD_EINVAL, "\"clamp_scalar_cpu\" not implemented for 'Bool'");
  return 0;
}

int opd__clamp_tensor_meta(opd_tensor *self, opd_tensor *min, opd_tensor *max, opd_out_spec *spec) {
  if (!min && !max)
    return opd_error(OPD_EINVAL, "torch.clamp: At least one of 'min' or 'max' must not be None");
  opd_tensor *t[3] = {self};
  int n = 1;
  if (min) t[n++] = min;
  if (max) t[n++] = max;
  opd_dtype compute;
  int rc = opd__pointwise_meta(t, n, OPD__POINTWISE_SAME, OPD__POINTWISE_ALL, NULL, &compute, spec);
  if (rc) return rc;
  if (min && max && spec->dtype == OPD_BOOL) /* one bound is maximum / minimum, which take bool */
    return opd_error(OPD_EINVAL, "\"clamp_cpu\" not implemented for 'Bool'");
  return 0;
}

/* ---- Meta kernels ---- */

static int meta_out(int rc, const opd_out_spec *spec, opd_tensor *const *inputs, int n,
                    opd_tensor **out) {
  return rc ? rc : opd__alloc_elementwise_output(spec, inputs, n, meta_device, out);
}

/* An in-place kernel on Meta: the result's checks, the version bump, and self back. */
static int meta_inplace(int rc, const opd_out_spec *spec, opd_tensor *self,
                        opd_tensor *const *inputs, int n, opd_tensor **out) {
  if (rc || (rc = opd__pointwise_inplace_meta(self, inputs, n, spec))) return rc;
  opd_tensor_bump_version(self);
  opd_tensor_retain(self);
  *out = self;
  return 0;
}

#define META_UNARY(name, kind, dtypes, cpu_name)                                                  \
  int opd__meta_##name(const opd_kernel_ctx *ctx, opd_tensor *self, opd_tensor **out) {           \
    (void)ctx;                                                                                    \
    opd_out_spec spec;                                                                            \
    opd_dtype c;                                                                                  \
    return meta_out(opd__pointwise_meta(&self, 1, OPD__POINTWISE_##kind, OPD__POINTWISE_##dtypes, \
                                        cpu_name, &c, &spec),                                     \
                    &spec, &self, 1, out);                                                        \
  }                                                                                               \
  int opd__meta_##name##_(const opd_kernel_ctx *ctx, opd_tensor *self, opd_tensor **out) {        \
    (void)ctx;                                                                                    \
    opd_out_spec spec;                                                                            \
    opd_dtype c;                                                                                  \
    return meta_inplace(opd__pointwise_meta(&self, 1, OPD__POINTWISE_##kind,                      \
                                            OPD__POINTWISE_##dtypes, cpu_name, &c, &spec),        \
                        &spec, self, &self, 1, out);                                              \
  }
OPD__POINTWISE_UNARY_OPS(META_UNARY)

#define META_PREDICATE(name)                                                                      \
  int opd__meta_##name(const opd_kernel_ctx *ctx, opd_tensor *self, opd_tensor **out) {           \
    (void)ctx;                                                                                    \
    opd_out_spec spec;                                                                            \
    opd_dtype c;                                                                                  \
    return meta_out(                                                                              \
        opd__pointwise_meta(&self, 1, OPD__POINTWISE_BOOL, OPD__POINTWISE_ALL, #name, &c, &spec), \
        &spec, &self, 1, out);                                                                    \
  }
OPD__POINTWISE_PREDICATES(META_PREDICATE)
OPD__POINTWISE_SPECIAL_PREDICATES(META_PREDICATE)

#define META_UNARY_FUNCTIONAL(name, kind, dtypes, cpu_name)                                       \
  int opd__meta_##name(const opd_kernel_ctx *ctx, opd_tensor *self, opd_tensor **out) {           \
    (void)ctx;                                                                                    \
    opd_out_spec spec;                                                                            \
    opd_dtype c;                                                                                  \
    return meta_out(opd__pointwise_meta(&self, 1, OPD__POINTWISE_##kind, OPD__POINTWISE_##dtypes, \
                                        cpu_name, &c, &spec),                                     \
                    &spec, &self, 1, out);                                                        \
  }
OPD__POINTWISE_SPECIAL_UNARY_OPS(META_UNARY_FUNCTIONAL)

#define META_BINARY_FUNCTIONAL(name, kind, dtypes, cpu_name)                                   \
  int opd__meta_##name(const opd_kernel_ctx *ctx, opd_tensor *self, opd_tensor *other,         \
                       opd_tensor **out) {                                                     \
    (void)ctx;                                                                                 \
    opd_out_spec spec;                                                                         \
    opd_dtype c;                                                                               \
    opd_tensor *in[2] = {self, other};                                                         \
    return meta_out(opd__pointwise_meta(in, 2, OPD__POINTWISE_##kind, OPD__POINTWISE_##dtypes, \
                                        cpu_name, &c, &spec),                                  \
                    &spec, in, 2, out);                                                        \
  }
#define META_BINARY(name, kind, dtypes, cpu_name)                                                  \
  META_BINARY_FUNCTIONAL(name, kind, dtypes, cpu_name)                                             \
  int opd__meta_##name##_inplace(const opd_kernel_ctx *ctx, opd_tensor *self, opd_tensor *other,   \
                                 opd_tensor **out) {                                               \
    (void)ctx;                                                                                     \
    opd_out_spec spec;                                                                             \
    opd_dtype c;                                                                                   \
    opd_tensor *in[2] = {self, other};                                                             \
    return meta_inplace(opd__pointwise_meta(in, 2, OPD__POINTWISE_##kind, OPD__POINTWISE_##dtypes, \
                                            cpu_name, &c, &spec),                                  \
                        &spec, self, in, 2, out);                                                  \
  }
OPD__POINTWISE_BINARY_OPS(META_BINARY)
OPD__POINTWISE_BINARY_FUNCTIONAL_OPS(META_BINARY_FUNCTIONAL)
OPD__POINTWISE_SPECIAL_BINARY_OPS(META_BINARY_FUNCTIONAL)

#define META_COMPARE_SCALAR(name, cpu_name)                                                       \
  int opd__meta_##name(const opd_kernel_ctx *ctx, opd_tensor *self, opd_scalar other,             \
                       opd_tensor **out) {                                                        \
    (void)ctx;                                                                                    \
    opd_out_spec spec;                                                                            \
    opd_dtype common;                                                                             \
    return meta_out(opd__compare_scalar_meta(self, other, &common, &spec), &spec, &self, 1, out); \
  }
OPD__POINTWISE_COMPARE_SCALAR_OPS(META_COMPARE_SCALAR)

int opd__heaviside_meta(opd_tensor *self, opd_tensor *values, opd_dtype *compute,
                        opd_out_spec *spec) {
  if (opd_tensor_dtype(self) != opd_tensor_dtype(values))
    return opd_error(OPD_EINVAL,
                     "heaviside is not yet implemented for tensors with different dtypes.");
  opd_tensor *in[2] = {self, values};
  return opd__pointwise_meta(in, 2, OPD__POINTWISE_SAME, OPD__POINTWISE_ALL, "heaviside_cpu",
                             compute, spec);
}

int opd__meta_heaviside(const opd_kernel_ctx *ctx, opd_tensor *self, opd_tensor *values,
                        opd_tensor **out) {
  (void)ctx;
  opd_out_spec spec;
  opd_dtype c;
  opd_tensor *in[2] = {self, values};
  return meta_out(opd__heaviside_meta(self, values, &c, &spec), &spec, in, 2, out);
}

int opd__meta_round_decimals(const opd_kernel_ctx *ctx, opd_tensor *self, int64_t decimals,
                             opd_tensor **out) {
  (void)ctx;
  (void)decimals;
  opd_out_spec spec;
  return meta_out(opd__round_decimals_meta(self, &spec), &spec, &self, 1, out);
}

int opd__meta_round__decimals(const opd_kernel_ctx *ctx, opd_tensor *self, int64_t decimals,
                              opd_tensor **out) {
  (void)ctx;
  (void)decimals;
  opd_out_spec spec;
  return meta_inplace(opd__round_decimals_meta(self, &spec), &spec, self, &self, 1, out);
}

#define META_ADDC(name, div)                                                           \
  int opd__meta_##name(const opd_kernel_ctx *ctx, opd_tensor *self, opd_tensor *t1,    \
                       opd_tensor *t2, opd_scalar value, opd_tensor **out) {           \
    (void)ctx;                                                                         \
    opd_out_spec spec;                                                                 \
    return meta_out(opd__addc_meta(self, t1, t2, value, div, &spec), &spec,            \
                    (opd_tensor *[]){self, t1, t2}, 3, out);                           \
  }                                                                                    \
  int opd__meta_##name##_(const opd_kernel_ctx *ctx, opd_tensor *self, opd_tensor *t1, \
                          opd_tensor *t2, opd_scalar value, opd_tensor **out) {        \
    (void)ctx;                                                                         \
    opd_out_spec spec;                                                                 \
    return meta_inplace(opd__addc_meta(self, t1, t2, value, div, &spec), &spec, self,  \
                        (opd_tensor *[]){self, t1, t2}, 3, out);                       \
  }
META_ADDC(addcmul, false)
META_ADDC(addcdiv, true)

int opd__meta_lerp_scalar(const opd_kernel_ctx *ctx, opd_tensor *self, opd_tensor *end,
                          opd_scalar weight, opd_tensor **out) {
  (void)ctx;
  (void)weight;
  opd_out_spec spec;
  return meta_out(opd__lerp_meta(self, end, NULL, &spec), &spec, (opd_tensor *[]){self, end}, 2,
                  out);
}

int opd__meta_lerp__scalar(const opd_kernel_ctx *ctx, opd_tensor *self, opd_tensor *end,
                           opd_scalar weight, opd_tensor **out) {
  (void)ctx;
  (void)weight;
  opd_out_spec spec;
  return meta_inplace(opd__lerp_meta(self, end, NULL, &spec), &spec, self,
                      (opd_tensor *[]){self, end}, 2, out);
}

int opd__meta_lerp_tensor(const opd_kernel_ctx *ctx, opd_tensor *self, opd_tensor *end,
                          opd_tensor *weight, opd_tensor **out) {
  (void)ctx;
  opd_out_spec spec;
  return meta_out(opd__lerp_meta(self, end, weight, &spec), &spec,
                  (opd_tensor *[]){self, end, weight}, 3, out);
}

int opd__meta_lerp__tensor(const opd_kernel_ctx *ctx, opd_tensor *self, opd_tensor *end,
                           opd_tensor *weight, opd_tensor **out) {
  (void)ctx;
  opd_out_spec spec;
  return meta_inplace(opd__lerp_meta(self, end, weight, &spec), &spec, self,
                      (opd_tensor *[]){self, end, weight}, 3, out);
}

#define META_CLAMP_BOUND(name)                                                                   \
  int opd__meta_##name(const opd_kernel_ctx *ctx, opd_tensor *self, opd_scalar bound,            \
                       opd_tensor **out) {                                                       \
    (void)ctx;                                                                                   \
    opd_out_spec spec;                                                                           \
    return meta_out(opd__clamp_scalar_meta(self, bound, &spec), &spec, &self, 1, out);           \
  }                                                                                              \
  int opd__meta_##name##_(const opd_kernel_ctx *ctx, opd_tensor *self, opd_scalar bound,         \
                          opd_tensor **out) {                                                    \
    (void)ctx;                                                                                   \
    opd_out_spec spec;                                                                           \
    return meta_inplace(opd__clamp_scalar_meta(self, bound, &spec), &spec, self, &self, 1, out); \
  }
META_CLAMP_BOUND(clamp_min)
META_CLAMP_BOUND(clamp_max)

int opd__meta_clamp_tensor(const opd_kernel_ctx *ctx, opd_tensor *self, opd_tensor *min,
                           opd_tensor *max, opd_tensor **out) {
  (void)ctx;
  opd_out_spec spec;
  return meta_out(opd__clamp_tensor_meta(self, min, max, &spec), &spec,
                  (opd_tensor *[]){self, min ? min : self, max ? max : self}, 3, out);
}

/* the largest finite value of a floating dtype */
static double float_max(opd_dtype t) {
  switch (t) {
  case OPD_FLOAT16: return 65504.0;
  case OPD_BFLOAT16: return 3.38953138925153547590e38;
  case OPD_FLOAT32: return 3.40282346638528859812e38;
  default: return 1.79769313486231570815e308;
  }
}

static int nan_to_num(opd_tensor *self, const opd_ivalue *v, opd_tensor *into, opd_tensor **out,
                      opd__nan_to_num_fn fn) {
  opd_out_spec spec;
  opd_dtype compute;
  int rc = opd__pointwise_meta(&self, 1, OPD__POINTWISE_SAME, OPD__POINTWISE_ALL, "nan_to_num",
                               &compute, &spec);
  if (rc) return rc;
  double max = float_max(spec.dtype);
  double repl[3] = {0, max, -max};
  for (int k = 0; k < 3; k++)
    if (v[k].tag == OPD_IV_DOUBLE) repl[k] = v[k].u.d;
  return fn(self, &spec, repl, into, out);
}

int opd__nan_to_num_boxed(opd_stack *stack, bool inplace, opd__nan_to_num_fn fn) {
  opd_ivalue *a = opd_stack_last(stack, 4);
  int rc = a[0].tag == OPD_IV_TENSOR ? 0 : OPD_EINVAL;
  for (int k = 1; k < 4 && rc == 0; k++)
    if (a[k].tag == OPD_IV_INT) /* an int where a float is taken */
      a[k] = opd_iv_double((double)a[k].u.i);
    else if (a[k].tag != OPD_IV_DOUBLE && a[k].tag != OPD_IV_NONE)
      rc = OPD_EINVAL;
  opd_tensor *r = NULL;
  if (rc)
    rc = opd_error(OPD_EINVAL, "nan_to_num: expected (Tensor, float?, float?, float?) arguments");
  else
    rc = nan_to_num(a[0].u.t, a + 1, inplace ? a[0].u.t : NULL, &r, fn);
  opd_stack_drop(stack, 4);
  return rc ? rc : opd_stack_push(stack, opd_iv_tensor_steal(r));
}

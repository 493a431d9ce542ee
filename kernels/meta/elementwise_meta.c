/* elementwise_meta.c: meta functions of the elementwise operators (shape, dtype, PyTorch's
 * argument errors; see elementwise_meta.h) and their Meta kernels. */
#include "elementwise_meta.h"

#include <string.h>

#include "src/loops.h"

static const opd_device meta_device = {OPD_DEVICE_META, -1};

int opd__broadcast_tensors(opd_tensor *const *t, int n, opd_out_spec *spec) {
  opd_device device;
  int rc = opd__common_device(t, n, &device);
  if (rc) return rc;
  spec->ndim = 0;
  /* sizes compared and copied element by element: there are a few, and the start-up of a
   * memcpy or memcmp of a length known only here costs more (a rep movsq, with GCC) */
  for (int i = 0; i < n; i++) {
    const int64_t *ti = opd_tensor_sizes(t[i]);
    int nd = t[i]->ndim, d = 0;
    if (i == 0) { /* broadcast with nothing */
      for (; d < nd; d++) spec->sizes[d] = ti[d];
      spec->ndim = nd;
      continue;
    }
    if (nd == spec->ndim) {
      while (d < nd && ti[d] == spec->sizes[d]) d++;
      if (d == nd) continue; /* with itself */
    }
    int64_t sizes[OPD_MAX_DIMS];
    rc = opd__broadcast_shapes(spec->sizes, spec->ndim, ti, nd, sizes, &nd);
    if (rc) return rc;
    memcpy(spec->sizes, sizes, (size_t)nd * sizeof *sizes);
    spec->ndim = nd;
  }
  return 0;
}

int opd__check_inplace_shape(opd_tensor *self, opd_tensor *other) {
  int64_t sizes[OPD_MAX_DIMS];
  int nd;
  int rc = opd__broadcast_shapes(opd_tensor_sizes(self), self->ndim, opd_tensor_sizes(other),
                                 other->ndim, sizes, &nd);
  if (rc) return rc;
  if (nd != self->ndim || memcmp(sizes, opd_tensor_sizes(self), (size_t)nd * sizeof *sizes)) {
    char a[256], b[256];
    return opd_error(OPD_EINVAL, "output with shape %s doesn't match the broadcast shape %s",
                     opd__format_sizes(opd_tensor_sizes(self), self->ndim, a, sizeof a),
                     opd__format_sizes(sizes, nd, b, sizeof b));
  }
  return 0;
}

static opd_dtype result_type2(opd_tensor *a, opd_tensor *b) {
  opd_result_type_state s = opd_result_type_init();
  opd_result_type_add_tensor(&s, opd_tensor_dtype(a), a->ndim);
  opd_result_type_add_tensor(&s, opd_tensor_dtype(b), b->ndim);
  return opd_result_type(&s);
}

int opd__binary_meta(opd_tensor *self, opd_tensor *other, opd_out_spec *spec) {
  opd_tensor *t[2] = {self, other};
  int rc = opd__broadcast_tensors(t, 2, spec);
  if (rc) return rc;
  spec->dtype = result_type2(self, other);
  return 0;
}

int opd__add_meta(opd_tensor *self, opd_tensor *other, opd_scalar alpha, bool sub,
                  opd_out_spec *spec) {
  if (sub && opd_tensor_dtype(self) == OPD_BOOL && opd_tensor_dtype(other) == OPD_BOOL)
    return opd_error(OPD_EINVAL, "Subtraction, the `-` operator, with two bool tensors is not "
                                 "supported. Use the `^` or `logical_xor()` operator instead.");
  if (sub && (opd_tensor_dtype(self) == OPD_BOOL || opd_tensor_dtype(other) == OPD_BOOL))
    return opd_error(OPD_EINVAL,
                     "Subtraction, the `-` operator, with a bool tensor is not supported. If you "
                     "are trying to invert a mask, use the `~` or `logical_not()` operator "
                     "instead.");
  int rc = opd__binary_meta(self, other, spec);
  if (rc) return rc;
  /* ATen's alpha_check */
  if (alpha.tag == OPD_IV_BOOL && spec->dtype != OPD_BOOL)
    return opd_error(OPD_EINVAL, "Boolean alpha only supported for Boolean results.");
  if (alpha.tag == OPD_IV_DOUBLE && !opd_dtype_is_floating(spec->dtype))
    return opd_error(OPD_EINVAL,
                     "For integral input tensors, argument alpha must not be a floating point "
                     "number.");
  return 0;
}

/* c10's canCast: no floating to integral, nothing but bool to bool. */
static bool can_cast(opd_dtype from, opd_dtype to) {
  return !(opd_dtype_is_floating(from) && opd_dtype_is_integral(to)) &&
         !(from != OPD_BOOL && to == OPD_BOOL);
}

int opd__add_out_meta(opd_tensor *self, opd_tensor *other, opd_scalar alpha, opd_tensor *out,
                      opd_out_spec *spec) {
  int rc = opd__add_meta(self, other, alpha, false, spec);
  if (rc) return rc;
  opd_tensor *t[3] = {self, other, out};
  opd_device device;
  if ((rc = opd__common_device(t, 3, &device))) return rc;
  if (!can_cast(spec->dtype, opd_tensor_dtype(out)))
    return opd_error(OPD_EINVAL, "result type %s can't be cast to the desired output type %s",
                     opd_dtype_c10_name(spec->dtype), opd_dtype_c10_name(opd_tensor_dtype(out)));
  if (out->ndim != spec->ndim ||
      memcmp(opd_tensor_sizes(out), spec->sizes, (size_t)spec->ndim * sizeof *spec->sizes)) {
    char a[256], b[256];
    return opd_error(OPD_EINVAL,
                     "add.out: out has shape %s but the result has shape %s (opd does not resize "
                     "outputs)",
                     opd__format_sizes(opd_tensor_sizes(out), out->ndim, a, sizeof a),
                     opd__format_sizes(spec->sizes, spec->ndim, b, sizeof b));
  }
  if (opd_tensor_is_meta(out)) return 0;
  if ((rc = opd__assert_no_internal_overlap(out)) ||
      (rc = opd__assert_no_partial_overlap(out, self)))
    return rc;
  return opd__assert_no_partial_overlap(out, other);
}

int opd__div_meta(opd_tensor *self, opd_tensor *other, const char *rounding_mode,
                  opd__div_mode *mode, opd_out_spec *spec) {
  if (!rounding_mode)
    *mode = OPD__DIV_TRUE;
  else if (strcmp(rounding_mode, "trunc") == 0)
    *mode = OPD__DIV_TRUNC;
  else if (strcmp(rounding_mode, "floor") == 0)
    *mode = OPD__DIV_FLOOR;
  else
    return opd_error(OPD_EINVAL,
                     "div expected rounding_mode to be one of None, 'trunc', or 'floor' but found "
                     "'%.64s'",
                     rounding_mode);
  int rc = opd__binary_meta(self, other, spec);
  if (rc) return rc;
  if (*mode == OPD__DIV_TRUE && !opd_dtype_is_floating(spec->dtype))
    spec->dtype = OPD_DEFAULT_DTYPE;
  return 0;
}

int opd__compare_meta(opd_tensor *self, opd_tensor *other, opd_dtype *common, opd_out_spec *spec) {
  int rc = opd__binary_meta(self, other, spec);
  if (rc) return rc;
  *common = spec->dtype;
  spec->dtype = OPD_BOOL;
  return 0;
}

int opd__compare_scalar_meta(opd_tensor *self, opd_scalar other, opd_dtype *common,
                             opd_out_spec *spec) {
  int rc = opd__broadcast_tensors(&self, 1, spec);
  if (rc) return rc;
  opd_result_type_state s = opd_result_type_init();
  opd_result_type_add_tensor(&s, opd_tensor_dtype(self), self->ndim);
  opd_result_type_add_scalar(&s, opd__scalar_kind(other));
  *common = opd_result_type(&s);
  spec->dtype = OPD_BOOL;
  return 0;
}

int opd__unary_meta(opd_tensor *self, opd__unary_kind kind, opd_out_spec *spec) {
  opd_dtype t = opd_tensor_dtype(self);
  if (kind == OPD__UNARY_NEG && t == OPD_BOOL)
    return opd_error(OPD_EINVAL,
                     "Negation, the `-` operator, on a bool tensor is not supported. If you are "
                     "trying to invert a mask, use the `~` or `logical_not()` operator instead.");
  if (kind == OPD__UNARY_RELU && t == OPD_BOOL)
    return opd_error(OPD_EINVAL, "Boolean inputs not supported for relu");
  int rc = opd__broadcast_tensors(&self, 1, spec);
  if (rc) return rc;
  spec->dtype = kind == OPD__UNARY_FLOAT && !opd_dtype_is_floating(t) ? OPD_DEFAULT_DTYPE : t;
  return 0;
}

int opd__gelu_meta(opd_tensor *self, const char *approximate, bool *tanh_approx,
                   opd_out_spec *spec) {
  if (strcmp(approximate, "none") == 0)
    *tanh_approx = false;
  else if (strcmp(approximate, "tanh") == 0)
    *tanh_approx = true;
  else
    return opd_error(OPD_EINVAL, "approximate argument must be either none or tanh.");
  return opd__unary_meta(self, OPD__UNARY_SAME, spec);
}

opd__pow_kind opd__pow_kind_of(opd_scalar exponent, opd_dtype result) {
  double e = opd__scalar_to_double(exponent);
  bool is_num = exponent.tag != OPD_IV_BOOL;
  if (is_num && e == 0) return OPD__POW_ZERO;
  if (is_num && e == 1) return OPD__POW_COPY;
  if (!opd_dtype_is_floating(result)) return OPD__POW_INT;
  return e == 0.5    ? OPD__POW_HALF
         : e == -0.5 ? OPD__POW_MHALF
         : e == -1   ? OPD__POW_M1
         : e == 2    ? OPD__POW_2
         : e == 3    ? OPD__POW_3
         : e == -2   ? OPD__POW_M2
                     : OPD__POW_FLOAT;
}

int opd__pow_meta(opd_tensor *self, opd_scalar exponent, opd_out_spec *spec) {
  opd_dtype t = opd_tensor_dtype(self);
  bool int_base = opd_dtype_is_integral(t) || t == OPD_BOOL;
  if (int_base && exponent.tag == OPD_IV_INT && exponent.u.i < 0)
    return opd_error(OPD_EINVAL, "Integers to negative integer powers are not allowed.");
  int rc = opd__broadcast_tensors(&self, 1, spec);
  if (rc) return rc;
  opd_result_type_state s = opd_result_type_init();
  opd_result_type_add_tensor(&s, t, self->ndim);
  opd_result_type_add_scalar(&s, opd__scalar_kind(exponent));
  spec->dtype = opd_result_type(&s);
  return 0;
}

int opd__where_meta(opd_tensor *condition, opd_tensor *self, opd_tensor *other,
                    opd_out_spec *spec) {
  opd_dtype c = opd_tensor_dtype(condition);
  /* PyTorch 1.13 still accepts a uint8 condition (with a deprecation warning) */
  if (c != OPD_BOOL && c != OPD_UINT8)
    return opd_error(OPD_EINVAL,
                     "where expected condition to be a boolean tensor, but got a tensor with "
                     "dtype %s",
                     opd_dtype_c10_name(c));
  opd_tensor *t[3] = {condition, self, other};
  int rc = opd__broadcast_tensors(t, 3, spec);
  if (rc) return rc;
  spec->dtype = result_type2(self, other);
  return 0;
}

int opd__clamp_meta(opd_tensor *self, opd_scalar min, opd_scalar max, opd_out_spec *spec) {
  if (min.tag == OPD_IV_NONE && max.tag == OPD_IV_NONE)
    return opd_error(OPD_EINVAL, "torch.clamp: At least one of 'min' or 'max' must not be None");
  int rc = opd__broadcast_tensors(&self, 1, spec);
  if (rc) return rc;
  spec->dtype = opd_tensor_dtype(self);
  if (!opd_dtype_is_floating(spec->dtype)) { /* the bounds take part in type promotion */
    opd_result_type_state s = opd_result_type_init();
    opd_result_type_add_tensor(&s, spec->dtype, self->ndim);
    if (min.tag != OPD_IV_NONE) opd_result_type_add_scalar(&s, opd__scalar_kind(min));
    if (max.tag != OPD_IV_NONE) opd_result_type_add_scalar(&s, opd__scalar_kind(max));
    spec->dtype = opd_result_type(&s);
  }
  return 0;
}

int opd__masked_fill_meta(opd_tensor *self, opd_tensor *mask) {
  opd_tensor *t[2] = {self, mask};
  opd_device device;
  int rc = opd__common_device(t, 2, &device);
  if (rc) return rc;
  if (opd_tensor_dtype(mask) != OPD_BOOL)
    return opd_error(OPD_EINVAL,
                     "masked_fill_ only supports boolean masks, but got mask with dtype %s",
                     opd_dtype_c10_name(opd_tensor_dtype(mask)));
  rc = opd__assert_no_partial_overlap(self, mask);
  return rc ? rc : opd__check_inplace_shape(self, mask);
}

int opd__copy_meta(opd_tensor *self, opd_tensor *src) {
  int rc = opd__check_inplace_shape(self, src);
  if (rc) return rc;
  if (!opd_tensor_is_meta(self) && opd_tensor_is_meta(src))
    return opd_error(OPD_ENOTIMPL, "Cannot copy out of meta tensor; no data!");
  if (opd_tensor_is_meta(self)) return 0;
  rc = opd__assert_no_internal_overlap(self);
  return rc ? rc : opd__assert_no_partial_overlap(self, src);
}

/* ---- Meta kernels ---- */

/* The meta function's status, or the output, laid out as the CPU kernel lays it out. */
static int meta_out(int rc, const opd_out_spec *spec, opd_tensor *const *inputs, int n,
                    opd_tensor **out) {
  return rc ? rc : opd__alloc_elementwise_output(spec, inputs, n, meta_device, out);
}

int opd__meta_add_tensor(const opd_kernel_ctx *ctx, opd_tensor *self, opd_tensor *other,
                         opd_scalar alpha, opd_tensor **out) {
  (void)ctx;
  opd_out_spec spec;
  return meta_out(opd__add_meta(self, other, alpha, false, &spec), &spec,
                  (opd_tensor *[]){self, other}, 2, out);
}

int opd__meta_add_out(const opd_kernel_ctx *ctx, opd_tensor *self, opd_tensor *other,
                      opd_scalar alpha, opd_tensor *out, opd_tensor **result) {
  (void)ctx;
  opd_out_spec spec;
  int rc = opd__add_out_meta(self, other, alpha, out, &spec);
  if (rc) return rc;
  opd_tensor_bump_version(out);
  opd_tensor_retain(out);
  *result = out;
  return 0;
}

int opd__meta_sub_tensor(const opd_kernel_ctx *ctx, opd_tensor *self, opd_tensor *other,
                         opd_scalar alpha, opd_tensor **out) {
  (void)ctx;
  opd_out_spec spec;
  return meta_out(opd__add_meta(self, other, alpha, true, &spec), &spec,
                  (opd_tensor *[]){self, other}, 2, out);
}

int opd__meta_mul_tensor(const opd_kernel_ctx *ctx, opd_tensor *self, opd_tensor *other,
                         opd_tensor **out) {
  (void)ctx;
  opd_out_spec spec;
  return meta_out(opd__binary_meta(self, other, &spec), &spec, (opd_tensor *[]){self, other}, 2,
                  out);
}

int opd__meta_maximum(const opd_kernel_ctx *ctx, opd_tensor *self, opd_tensor *other,
                      opd_tensor **out) {
  (void)ctx;
  opd_out_spec spec;
  return meta_out(opd__binary_meta(self, other, &spec), &spec, (opd_tensor *[]){self, other}, 2,
                  out);
}

int opd__meta_minimum(const opd_kernel_ctx *ctx, opd_tensor *self, opd_tensor *other,
                      opd_tensor **out) {
  (void)ctx;
  opd_out_spec spec;
  return meta_out(opd__binary_meta(self, other, &spec), &spec, (opd_tensor *[]){self, other}, 2,
                  out);
}

int opd__meta_div_tensor(const opd_kernel_ctx *ctx, opd_tensor *self, opd_tensor *other,
                         opd_tensor **out) {
  (void)ctx;
  opd_out_spec spec;
  opd__div_mode mode;
  return meta_out(opd__div_meta(self, other, NULL, &mode, &spec), &spec,
                  (opd_tensor *[]){self, other}, 2, out);
}

int opd__meta_div_tensor_mode(const opd_kernel_ctx *ctx, opd_tensor *self, opd_tensor *other,
                              const char *rounding_mode, opd_tensor **out) {
  (void)ctx;
  opd_out_spec spec;
  opd__div_mode mode;
  return meta_out(opd__div_meta(self, other, rounding_mode, &mode, &spec), &spec,
                  (opd_tensor *[]){self, other}, 2, out);
}

static int meta_compare(opd_tensor *self, opd_tensor *other, opd_tensor **out) {
  opd_out_spec spec;
  opd_dtype common;
  return meta_out(opd__compare_meta(self, other, &common, &spec), &spec,
                  (opd_tensor *[]){self, other}, 2, out);
}

int opd__meta_eq_tensor(const opd_kernel_ctx *ctx, opd_tensor *self, opd_tensor *other,
                        opd_tensor **out) {
  (void)ctx;
  return meta_compare(self, other, out);
}

int opd__meta_gt_tensor(const opd_kernel_ctx *ctx, opd_tensor *self, opd_tensor *other,
                        opd_tensor **out) {
  (void)ctx;
  return meta_compare(self, other, out);
}

int opd__meta_lt_scalar(const opd_kernel_ctx *ctx, opd_tensor *self, opd_scalar other,
                        opd_tensor **out) {
  (void)ctx;
  opd_out_spec spec;
  opd_dtype common;
  return meta_out(opd__compare_scalar_meta(self, other, &common, &spec), &spec, &self, 1, out);
}

int opd__meta_eq_scalar(const opd_kernel_ctx *ctx, opd_tensor *self, opd_scalar other,
                        opd_tensor **out) {
  return opd__meta_lt_scalar(ctx, self, other, out); /* the same shape and dtype rules */
}

static int meta_unary(opd_tensor *self, opd__unary_kind kind, opd_tensor **out) {
  opd_out_spec spec;
  return meta_out(opd__unary_meta(self, kind, &spec), &spec, &self, 1, out);
}

int opd__meta_neg(const opd_kernel_ctx *ctx, opd_tensor *self, opd_tensor **out) {
  (void)ctx;
  return meta_unary(self, OPD__UNARY_NEG, out);
}

int opd__meta_abs(const opd_kernel_ctx *ctx, opd_tensor *self, opd_tensor **out) {
  (void)ctx;
  return meta_unary(self, OPD__UNARY_SAME, out);
}

int opd__meta_relu(const opd_kernel_ctx *ctx, opd_tensor *self, opd_tensor **out) {
  (void)ctx;
  return meta_unary(self, OPD__UNARY_RELU, out);
}

int opd__meta_exp(const opd_kernel_ctx *ctx, opd_tensor *self, opd_tensor **out) {
  (void)ctx;
  return meta_unary(self, OPD__UNARY_FLOAT, out);
}

int opd__meta_log(const opd_kernel_ctx *ctx, opd_tensor *self, opd_tensor **out) {
  (void)ctx;
  return meta_unary(self, OPD__UNARY_FLOAT, out);
}

int opd__meta_sqrt(const opd_kernel_ctx *ctx, opd_tensor *self, opd_tensor **out) {
  (void)ctx;
  return meta_unary(self, OPD__UNARY_FLOAT, out);
}

int opd__meta_rsqrt(const opd_kernel_ctx *ctx, opd_tensor *self, opd_tensor **out) {
  (void)ctx;
  return meta_unary(self, OPD__UNARY_FLOAT, out);
}

int opd__meta_silu(const opd_kernel_ctx *ctx, opd_tensor *self, opd_tensor **out) {
  (void)ctx;
  return meta_unary(self, OPD__UNARY_SAME, out);
}

int opd__meta_sigmoid(const opd_kernel_ctx *ctx, opd_tensor *self, opd_tensor **out) {
  (void)ctx;
  return meta_unary(self, OPD__UNARY_FLOAT, out);
}

int opd__meta_tanh(const opd_kernel_ctx *ctx, opd_tensor *self, opd_tensor **out) {
  (void)ctx;
  return meta_unary(self, OPD__UNARY_FLOAT, out);
}

int opd__meta_sin(const opd_kernel_ctx *ctx, opd_tensor *self, opd_tensor **out) {
  (void)ctx;
  return meta_unary(self, OPD__UNARY_FLOAT, out);
}

int opd__meta_cos(const opd_kernel_ctx *ctx, opd_tensor *self, opd_tensor **out) {
  (void)ctx;
  return meta_unary(self, OPD__UNARY_FLOAT, out);
}

int opd__meta_gelu(const opd_kernel_ctx *ctx, opd_tensor *self, const char *approximate,
                   opd_tensor **out) {
  (void)ctx;
  opd_out_spec spec;
  bool tanh_approx;
  return meta_out(opd__gelu_meta(self, approximate, &tanh_approx, &spec), &spec, &self, 1, out);
}

int opd__meta_pow_tensor_scalar(const opd_kernel_ctx *ctx, opd_tensor *self, opd_scalar exponent,
                                opd_tensor **out) {
  (void)ctx;
  opd_out_spec spec;
  return meta_out(opd__pow_meta(self, exponent, &spec), &spec, &self, 1, out);
}

int opd__meta_where_self(const opd_kernel_ctx *ctx, opd_tensor *condition, opd_tensor *self,
                         opd_tensor *other, opd_tensor **out) {
  (void)ctx;
  opd_out_spec spec;
  return meta_out(opd__where_meta(condition, self, other, &spec), &spec,
                  (opd_tensor *[]){condition, self, other}, 3, out);
}

int opd__meta_clamp(const opd_kernel_ctx *ctx, opd_tensor *self, opd_scalar min, opd_scalar max,
                    opd_tensor **out) {
  (void)ctx;
  opd_out_spec spec;
  return meta_out(opd__clamp_meta(self, min, max, &spec), &spec, &self, 1, out);
}

/* In-place kernels on Meta: the checks, the version bump, and self back. */
static int meta_inplace(int rc, opd_tensor *self, opd_tensor **out) {
  if (rc) return rc;
  opd_tensor_bump_version(self);
  opd_tensor_retain(self);
  *out = self;
  return 0;
}

int opd__meta_masked_fill__scalar(const opd_kernel_ctx *ctx, opd_tensor *self, opd_tensor *mask,
                                  opd_scalar value, opd_tensor **out) {
  (void)ctx;
  (void)value;
  return meta_inplace(opd__masked_fill_meta(self, mask), self, out);
}

int opd__meta_copy_(const opd_kernel_ctx *ctx, opd_tensor *self, opd_tensor *src, bool non_blocking,
                    opd_tensor **out) {
  (void)ctx;
  (void)non_blocking;
  return meta_inplace(opd__copy_meta(self, src), self, out);
}

int opd__meta_fill__scalar(const opd_kernel_ctx *ctx, opd_tensor *self, opd_scalar value,
                           opd_tensor **out) {
  (void)ctx;
  (void)value;
  return meta_inplace(0, self, out);
}

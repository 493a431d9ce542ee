/* conv_meta.c: aten::convolution and aten::convolution_backward: their argument checks (as
 * PyTorch 1.13's check_shape_forward raises them), output shapes, the geometry the CPU
 * kernels compute with ([Note: Convolution as three products] in conv_meta.h) and their Meta
 * kernels. */
#include "conv_meta.h"

#include <assert.h>
#include <stdio.h>
#include <string.h>

#include "opd/checked.h"

/* A parameter list of 1 value expanded to `dim` values, or one of `dim` values. */
static int expand_param(opd_int_list l, const char *name, int dim, int64_t *out) {
  if (l.len == 1) {
    for (int i = 0; i < dim; i++) out[i] = l.data[0];
    return 0;
  }
  if (l.len != dim) {
    char buf[256];
    return opd_error(OPD_EINVAL,
                     "expected %s to be a single integer value or a list of %d values to match "
                     "the convolution dimensions, but got %s=%s",
                     name, dim, name,
                     opd__format_sizes(l.data, l.len > 0 ? (int)l.len : 0, buf, sizeof buf));
  }
  for (int i = 0; i < dim; i++) out[i] = l.data[i];
  return 0;
}

static const char *type_name(const opd_tensor *t, char *buf, size_t len) {
  snprintf(buf, len, "torch.%s%sTensor", opd_tensor_is_meta(t) ? "meta." : "",
           opd_dtype_c10_name(opd_tensor_dtype(t)));
  return buf;
}

/* The parameters, the shape checks of check_shape_forward, and the geometry. */
static int conv_geometry(opd_tensor *input, opd_tensor *weight, bool has_bias,
                         const int64_t *bias_sizes, int bias_ndim, const opd__conv_args *a,
                         opd__conv_geom *g, int64_t *op_out) {
  int k = weight->ndim, dim = k - 2;
  if (dim <= 0) return opd_error(OPD_EINVAL, "weight should have at least three dimensions");
  if (a->groups <= 0) return opd_error(OPD_EINVAL, "non-positive groups is not supported");
  int64_t stride[OPD__CONV_MAX_SDIMS + 1], pad[OPD__CONV_MAX_SDIMS + 1],
      dil[OPD__CONV_MAX_SDIMS + 1], opad[OPD__CONV_MAX_SDIMS + 1];
  if (dim > OPD__CONV_MAX_SDIMS) {
    /* PyTorch reaches its slow fallback here; opd computes up to 3 spatial dimensions */
    return opd_error(OPD_EINVAL,
                     "convolution: %d spatial dimensions are not supported (at most %d)", dim,
                     OPD__CONV_MAX_SDIMS);
  }
  int rc = expand_param(a->stride, "stride", dim, stride);
  if (!rc) rc = expand_param(a->padding, "padding", dim, pad);
  if (!rc) rc = expand_param(a->dilation, "dilation", dim, dil);
  if (!rc) rc = expand_param(a->output_padding, "output_padding", dim, opad);
  if (rc) return rc;
  for (int i = 0; i < dim; i++)
    if (pad[i] < 0) return opd_error(OPD_EINVAL, "negative padding is not supported");
  for (int i = 0; i < dim; i++)
    if (opad[i] < 0) return opd_error(OPD_EINVAL, "negative output_padding is not supported");
  for (int i = 0; i < dim; i++)
    if (stride[i] <= 0) return opd_error(OPD_EINVAL, "non-positive stride is not supported");
  for (int i = 0; i < dim; i++)
    if (dil[i] <= 0) return opd_error(OPD_EINVAL, "non-positive dilation is not supported");
  const int64_t *ws = opd_tensor_sizes(weight), *is = opd_tensor_sizes(input);
  char b1[256], b2[256], b3[256];
  if (input->ndim != k)
    return opd_error(OPD_EINVAL,
                     "Expected %d-dimensional input for %d-dimensional weight %s, but got "
                     "%d-dimensional input of size %s instead",
                     k, k, opd__format_sizes(ws, k, b1, sizeof b1), input->ndim,
                     opd__format_sizes(is, input->ndim, b2, sizeof b2));
  if (ws[0] < a->groups)
    return opd_error(OPD_EINVAL,
                     "Given groups=%lld, expected weight to be at least %lld at dimension 0, but "
                     "got weight of size %s instead",
                     (long long)a->groups, (long long)a->groups,
                     opd__format_sizes(ws, k, b1, sizeof b1));
  if (ws[0] % a->groups != 0)
    return opd_error(OPD_EINVAL,
                     "Given groups=%lld, expected weight to be divisible by %lld at dimension 0, "
                     "but got weight of size [%s] instead",
                     (long long)a->groups, (long long)a->groups,
                     opd__format_sizes(ws, k, b1, sizeof b1));
  int64_t wc; /* channels the weight takes: weight[1] * groups */
  if (opd_ckd_mul(&wc, ws[1], a->groups))
    return opd_error(OPD_EINVAL, "convolution: weight size overflows");
  if (!a->transposed) {
    if (is[1] != wc)
      return opd_error(OPD_EINVAL,
                       "Given groups=%lld, weight of size %s, expected input%s to have %lld "
                       "channels, but got %lld channels instead",
                       (long long)a->groups, opd__format_sizes(ws, k, b1, sizeof b1),
                       opd__format_sizes(is, k, b2, sizeof b2), (long long)wc, (long long)is[1]);
    if (has_bias && (bias_ndim != 1 || bias_sizes[0] != ws[0]))
      return opd_error(OPD_EINVAL,
                       "Given weight of size %s, expected bias to be 1-dimensional with %lld "
                       "elements, but got bias of size %s instead",
                       opd__format_sizes(ws, k, b1, sizeof b1), (long long)ws[0],
                       opd__format_sizes(bias_sizes, bias_ndim, b3, sizeof b3));
    bool fits = true;
    int64_t padded[OPD__CONV_MAX_SDIMS], kext[OPD__CONV_MAX_SDIMS];
    for (int i = 0; i < dim; i++) {
      if (opd_ckd_mul(&padded[i], pad[i], 2) || opd_ckd_add(&padded[i], padded[i], is[i + 2]) ||
          opd_ckd_mul(&kext[i], dil[i], ws[i + 2] - 1) || opd_ckd_add(&kext[i], kext[i], 1))
        return opd_error(OPD_EINVAL, "convolution: sizes overflow");
      if (padded[i] < kext[i]) fits = false;
    }
    if (!fits) {
      char in_s[128] = "", k_s[128] = "";
      for (int i = 0; i < dim; i++) {
        size_t li = strlen(in_s), lk = strlen(k_s);
        snprintf(in_s + li, sizeof in_s - li, "%s%lld", i ? " x " : "", (long long)padded[i]);
        snprintf(k_s + lk, sizeof k_s - lk, "%s%lld", i ? " x " : "", (long long)kext[i]);
      }
      return opd_error(OPD_EINVAL,
                       "Calculated padded input size per channel: (%s). Kernel size: (%s). Kernel "
                       "size can't be greater than actual input size",
                       in_s, k_s);
    }
    g->in_c = is[1];
    g->out_c = ws[0];
    for (int i = 0; i < dim; i++) {
      g->in[i] = is[i + 2];
      g->out[i] = (padded[i] - kext[i]) / stride[i] + 1;
      op_out[i] = g->out[i];
    }
  } else {
    if (is[1] != ws[0])
      return opd_error(OPD_EINVAL,
                       "Given transposed=1, weight of size %s, expected input%s to have %lld "
                       "channels, but got %lld channels instead",
                       opd__format_sizes(ws, k, b1, sizeof b1),
                       opd__format_sizes(is, k, b2, sizeof b2), (long long)ws[0], (long long)is[1]);
    if (has_bias && (bias_ndim != 1 || bias_sizes[0] != wc))
      return opd_error(OPD_EINVAL,
                       "Given transposed=1, weight of size %s, expected bias to be 1-dimensional "
                       "with %lld elements, but got bias of size %s instead",
                       opd__format_sizes(ws, k, b1, sizeof b1), (long long)wc,
                       opd__format_sizes(bias_sizes, bias_ndim, b3, sizeof b3));
    for (int i = 0; i < dim; i++)
      if (opad[i] >= stride[i] && opad[i] >= dil[i])
        return opd_error(OPD_EINVAL,
                         "output padding must be smaller than either stride or dilation, but got "
                         "output_padding: %lld stride: %lld dilation: %lld at dimension %d",
                         (long long)opad[i], (long long)stride[i], (long long)dil[i], i);
    g->in_c = wc;
    g->out_c = ws[0];
    for (int i = 0; i < dim; i++) {
      /* (in - 1) * stride - 2 * padding + dilation * (k - 1) + output_padding + 1 */
      int64_t o, t;
      if (opd_ckd_mul(&o, is[i + 2] - 1, stride[i]) || opd_ckd_mul(&t, pad[i], 2) ||
          opd_ckd_sub(&o, o, t) || opd_ckd_mul(&t, dil[i], ws[i + 2] - 1) ||
          opd_ckd_add(&o, o, t) || opd_ckd_add(&o, o, opad[i] + 1))
        return opd_error(OPD_EINVAL, "convolution: sizes overflow");
      if (o < 0 || (o == 0 && is[i + 2] > 0)) {
        return opd_error(OPD_EINVAL,
                         "Given input size per channel: %lld. Calculated output size per channel: "
                         "%lld at dimension %d. Output size is too small",
                         (long long)is[i + 2], (long long)o, i);
      }
      g->in[i] = o;
      g->out[i] = is[i + 2];
      op_out[i] = o;
    }
  }
  g->sdims = dim;
  g->n = is[0];
  g->groups = a->groups;
  for (int i = 0; i < dim; i++) {
    g->k[i] = ws[i + 2];
    g->stride[i] = stride[i];
    g->pad[i] = pad[i];
    g->dil[i] = dil[i];
  }
  return 0;
}

int opd__conv_meta(opd_tensor *input, opd_tensor *weight, opd_tensor *bias, const opd__conv_args *a,
                   opd__conv_geom *g, opd_out_spec *spec, opd_device *device) {
  int rc = opd__common_device((opd_tensor *const[]){input, weight, bias}, 3, device);
  if (rc) return rc;
  int64_t op_out[OPD__CONV_MAX_SDIMS];
  rc = conv_geometry(input, weight, bias != NULL, bias ? opd_tensor_sizes(bias) : NULL,
                     bias ? bias->ndim : 0, a, g, op_out);
  if (rc) return rc;
  char b1[64], b2[64];
  if (opd_tensor_dtype(input) != opd_tensor_dtype(weight))
    return opd_error(OPD_EINVAL,
                     "Input type (%s) and weight type (%s) should be the same or input should be "
                     "a MKLDNN tensor and weight is a dense tensor",
                     type_name(input, b1, sizeof b1), type_name(weight, b2, sizeof b2));
  if (bias && opd_tensor_dtype(input) != opd_tensor_dtype(bias))
    return opd_error(OPD_EINVAL,
                     "Input type (%s) and bias type (%s) should be the same or input should be "
                     "a MKLDNN tensor and bias is a dense tensor",
                     type_name(input, b1, sizeof b1), type_name(bias, b2, sizeof b2));
  g->dtype = opd_tensor_dtype(input);
  spec->dtype = g->dtype;
  spec->ndim = input->ndim;
  spec->sizes[0] = g->n;
  spec->sizes[1] = a->transposed ? g->in_c : g->out_c;
  for (int i = 0; i < g->sdims; i++) spec->sizes[i + 2] = op_out[i];
  return 0;
}

int opd__conv_backward_meta(opd_tensor *grad_output, opd_tensor *input, opd_tensor *weight,
                            opd_int_list bias_sizes, const opd__conv_args *a, opd__conv_geom *g,
                            opd_device *device) {
  int rc = opd__common_device((opd_tensor *const[]){grad_output, input, weight}, 3, device);
  if (rc) return rc;
  int64_t op_out[OPD__CONV_MAX_SDIMS];
  rc = conv_geometry(input, weight, false, NULL, 0, a, g, op_out);
  if (rc) return rc;
  if (input->ndim != grad_output->ndim)
    return opd_error(OPD_EINVAL,
                     "Expected input and grad_output to have the same number of dimensions, but "
                     "got: %d and %d",
                     input->ndim, grad_output->ndim);
  int64_t expect[OPD__CONV_MAX_SDIMS + 2];
  expect[0] = g->n;
  expect[1] = a->transposed ? g->in_c : g->out_c;
  for (int i = 0; i < g->sdims; i++) expect[i + 2] = op_out[i];
  const int64_t *gs = opd_tensor_sizes(grad_output);
  for (int i = 0; i < grad_output->ndim; i++)
    if (gs[i] != expect[i]) {
      char b1[256], b2[256];
      return opd_error(OPD_EINVAL,
                       "convolution_backward: expected grad_output of size %s, but got %s",
                       opd__format_sizes(expect, grad_output->ndim, b1, sizeof b1),
                       opd__format_sizes(gs, grad_output->ndim, b2, sizeof b2));
    }
  if (bias_sizes.len >= 0 && (bias_sizes.len != 1 || bias_sizes.data[0] != expect[1]))
    return opd_error(OPD_EINVAL, "convolution_backward: expected bias_sizes [%lld]",
                     (long long)expect[1]);
  opd_dtype t = opd_tensor_dtype(input);
  if (opd_tensor_dtype(weight) != t || opd_tensor_dtype(grad_output) != t)
    return opd_error(OPD_EINVAL,
                     "convolution_backward: expected grad_output, input and weight of one dtype, "
                     "got %s, %s and %s",
                     opd_dtype_name(opd_tensor_dtype(grad_output)), opd_dtype_name(t),
                     opd_dtype_name(opd_tensor_dtype(weight)));
  g->dtype = t;
  return 0;
}

/* ---- Meta kernels ---- */

int opd__meta_convolution(const opd_kernel_ctx *ctx, opd_tensor *input, opd_tensor *weight,
                          opd_tensor *bias, opd_int_list stride, opd_int_list padding,
                          opd_int_list dilation, bool transposed, opd_int_list output_padding,
                          int64_t groups, opd_tensor **out) {
  (void)ctx;
  opd__conv_args a = {stride, padding, dilation, output_padding, transposed, groups};
  opd__conv_geom g;
  opd_out_spec spec;
  opd_device device;
  int rc = opd__conv_meta(input, weight, bias, &a, &g, &spec, &device);
  return rc ? rc : opd__alloc_output(&spec, device, out);
}

/* ---- convolution_backward, boxed (three results, each undefined where output_mask is false) ----
 */

/* Pushes the three results (None for an undefined one) if rc is 0, else releases them. */
static int push_grads(opd_stack *stack, opd_tensor **res, int rc) {
  int pushed = 0;
  for (; rc == 0 && pushed < 3; pushed++) {
    opd_ivalue v = res[pushed] ? opd_iv_tensor_steal(res[pushed]) : opd_iv_none();
    res[pushed] = NULL;
    rc = opd_stack_push(stack, v);
  }
  if (rc) opd_stack_drop(stack, (uint32_t)(pushed > 0 ? pushed - 1 : 0));
  for (int i = 0; i < 3; i++)
    if (res[i]) opd_tensor_release(res[i]);
  return rc;
}

static void spec_of(const opd_tensor *t, opd_dtype dt, opd_out_spec *s) {
  s->ndim = t->ndim;
  s->dtype = dt;
  for (int i = 0; i < t->ndim; i++) s->sizes[i] = opd_tensor_sizes(t)[i];
}

int opd__conv_backward_kernel(opd_stack *stack, opd__conv_backward_fill fill) {
  enum { NARGS = 11 };
  assert(stack->size >= NARGS);
  opd_ivalue *v = opd_stack_last(stack, NARGS);
  opd_tensor *res[3] = {NULL, NULL, NULL};
  int rc = 0;
  if (v[0].tag != OPD_IV_TENSOR || v[1].tag != OPD_IV_TENSOR || v[2].tag != OPD_IV_TENSOR ||
      v[4].tag != OPD_IV_INT_LIST || v[5].tag != OPD_IV_INT_LIST || v[6].tag != OPD_IV_INT_LIST ||
      v[7].tag != OPD_IV_BOOL || v[8].tag != OPD_IV_INT_LIST || v[9].tag != OPD_IV_INT ||
      v[10].tag != OPD_IV_BOOL_LIST || v[10].len != 3)
    rc = opd_error(OPD_EINVAL, "convolution_backward: unexpected argument types");
  opd__conv_args a;
  opd__conv_geom g;
  opd_device device;
  bool mask[3] = {false, false, false};
  opd_tensor *grad_output = NULL, *input = NULL, *weight = NULL;
  if (!rc) {
    grad_output = v[0].u.t;
    input = v[1].u.t;
    weight = v[2].u.t;
    a = (opd__conv_args){opd__iv_int_list(&v[4]),
                         opd__iv_int_list(&v[5]),
                         opd__iv_int_list(&v[6]),
                         opd__iv_int_list(&v[8]),
                         v[7].u.b,
                         v[9].u.i};
    for (int i = 0; i < 3; i++) mask[i] = v[10].u.bools[i];
    rc = opd__conv_backward_meta(grad_output, input, weight, opd__iv_int_list(&v[3]), &a, &g,
                                 &device);
  }
  opd_out_spec spec;
  if (!rc && mask[0]) {
    spec_of(input, g.dtype, &spec);
    rc = opd__alloc_output(&spec, device, &res[0]);
  }
  if (!rc && mask[1]) {
    spec_of(weight, g.dtype, &spec);
    rc = opd__alloc_output(&spec, device, &res[1]);
  }
  if (!rc && mask[2]) {
    spec = (opd_out_spec){.ndim = 1, .dtype = g.dtype};
    spec.sizes[0] = opd_tensor_sizes(grad_output)[1];
    rc = opd__alloc_output(&spec, device, &res[2]);
  }
  if (!rc && fill) rc = fill(&g, a.transposed, grad_output, input, weight, res);
  opd_stack_drop(stack, NARGS);
  return push_grads(stack, res, rc);
}

int opd__meta_convolution_backward(const opd_kernel_ctx *ctx, opd_stack *stack) {
  (void)ctx;
  return opd__conv_backward_kernel(stack, NULL);
}

/* upsample_meta.c: the upsampling operators' arguments, checks and geometry (upsample_meta.h)
 * and their Meta kernels. */
#include "upsample_meta.h"

#include <assert.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "opd/checked.h"

static const char *const dim_names[3] = {"D", "H", "W"};

/* A `float?` argument: a double, an int where a float is taken, or None. */
static int opt_double(const opd_ivalue *v, bool *has, double *out) {
  *has = v->tag == OPD_IV_DOUBLE || v->tag == OPD_IV_INT;
  *out = v->tag == OPD_IV_DOUBLE ? v->u.d : v->tag == OPD_IV_INT ? (double)v->u.i : 0.0;
  return *has || v->tag == OPD_IV_NONE ? 0 : opd_error(OPD_EINVAL, "expected a float or None");
}

/* upsample_{1,2,3}d_common_check: output_size of sdims values, input_size of sdims + 2, every
 * spatial size positive. */
static int common_check(const int64_t *input_size, int64_t input_len, opd_int_list output_size,
                        opd__upsample_geom *g) {
  int sd = g->sdims;
  if (output_size.len != sd)
    return opd_error(OPD_EINVAL, "It is expected output_size equals to %d, but got size %lld", sd,
                     (long long)output_size.len);
  if (input_len != sd + 2)
    return opd_error(OPD_EINVAL, "It is expected input_size equals to %d, but got size %lld",
                     sd + 2, (long long)input_len);
  bool positive = true;
  for (int i = 0; i < sd; i++)
    positive = positive && input_size[2 + i] > 0 && output_size.data[i] > 0;
  if (!positive) {
    char in[128] = "", out[128] = "";
    for (int i = 0; i < sd; i++) {
      size_t li = strlen(in), lo = strlen(out);
      snprintf(in + li, sizeof in - li, "%s%s: %lld", i ? ", " : "", dim_names[3 - sd + i],
               (long long)input_size[2 + i]);
      snprintf(out + lo, sizeof out - lo, "%s%s: %lld", i ? ", " : "", dim_names[3 - sd + i],
               (long long)output_size.data[i]);
    }
    return opd_error(OPD_EINVAL,
                     "Input and output sizes should be greater than 0, but got input (%s)%s "
                     "output (%s)",
                     in, sd == 1 ? " and" : "", out);
  }
  if (input_size[0] < 0 || input_size[1] < 0)
    return opd_error(OPD_EINVAL, "Trying to create tensor with negative dimension");
  /* the result's and the gradient's element counts (one of them a client's list) fit */
  int64_t full_out[5] = {input_size[0], input_size[1]}, n;
  for (int i = 0; i < sd; i++) full_out[2 + i] = output_size.data[i];
  int rc = opd_ckd_numel(input_size, (size_t)input_len, &n, "upsample input_size");
  if (!rc) rc = opd_ckd_numel(full_out, (size_t)sd + 2, &n, "upsample output_size");
  if (rc) return rc;
  g->planes = input_size[0] * input_size[1];
  for (int i = 0; i < 3; i++) {
    g->in[i] = i < 3 - sd ? 1 : input_size[2 + i - (3 - sd)];
    g->out[i] = i < 3 - sd ? 1 : output_size.data[i - (3 - sd)];
  }
  return 0;
}

/* compute_output_size of the .vec overloads: exactly one of output_size and scale_factors,
 * with one value per spatial dim of the input; a scale gives floor(input size * scale). */
static int vec_output_size(opd_tensor *input, const opd_ivalue *output_size,
                           const opd_ivalue *scale_factors, int64_t *osize, int *n,
                           opd__upsample_geom *g) {
  static const char improve[] =
      " to be true, but got false.  (Could this error message be improved?  If so, please "
      "report an enhancement request to PyTorch.)";
  bool has_out = output_size->tag != OPD_IV_NONE, has_scales = scale_factors->tag != OPD_IV_NONE;
  int spatial = input->ndim - 2;
  if (has_out == has_scales)
    return opd_error(OPD_EINVAL, "Must specify exactly one of output_size and scale_factors");
  if (has_out) {
    opd_int_list l = opd__iv_int_list(output_size);
    if (l.len != spatial || spatial > 3)
      return opd_error(OPD_EINVAL,
                       "Expected static_cast<int64_t>(output_size->size()) == "
                       "spatial_dimensions%s",
                       improve);
    memcpy(osize, l.data, (size_t)l.len * sizeof *osize);
    *n = (int)l.len;
    return 0;
  }
  double scales[3];
  int64_t len;
  if (scale_factors->tag == OPD_IV_DOUBLE_LIST) {
    len = scale_factors->len;
    for (int64_t i = 0; i < len && i < 3; i++) scales[i] = scale_factors->u.doubles[i];
  } else if (scale_factors->tag == OPD_IV_INT_LIST) {
    len = scale_factors->len;
    for (int64_t i = 0; i < len && i < 3; i++) scales[i] = (double)scale_factors->u.ints[i];
  } else {
    return opd_error(OPD_EINVAL, "upsample: scale_factors must be a list of floats");
  }
  if (len != spatial || spatial > 3)
    return opd_error(OPD_EINVAL,
                     "Expected static_cast<int64_t>(scale_factors->size()) == spatial_dimensions%s",
                     improve);
  const int64_t *s = opd_tensor_sizes(input);
  for (int i = 0; i < spatial; i++) {
    double odim = (double)s[2 + i] * scales[i];
    /* checked_convert: a NaN or a value past int64 is refused, the rest truncated */
    if (!(odim > -9.2233720368547758e18 && odim < 9.2233720368547758e18))
      return opd_error(OPD_EINVAL, "value cannot be converted to type int64_t without overflow");
    osize[i] = (int64_t)odim;
    g->has_scale[3 - g->sdims + i] = true;
    g->scale[3 - g->sdims + i] = scales[i];
  }
  *n = spatial;
  return 0;
}

/* float32, float64 and bfloat16, as PyTorch's CPU kernels take; the error names their loop. */
static int check_dtype(const opd__upsample_geom *g, const char *name) {
  opd_dtype t = g->spec.dtype;
  if (t == OPD_FLOAT32 || t == OPD_FLOAT64 || t == OPD_BFLOAT16) return 0;
  char loop[48];
  if (g->form != OPD__UPSAMPLE_BACKWARD)
    snprintf(loop, sizeof loop, "compute_indices_weights_%s",
             g->mode == OPD__UPSAMPLE_NEAREST  ? "nearest"
             : g->mode == OPD__UPSAMPLE_LINEAR ? "linear"
                                               : "cubic");
  else
    snprintf(loop, sizeof loop, "%s_backward", name);
  return opd_error(OPD_EINVAL, "\"%s\" not implemented for '%s'", loop, opd_dtype_c10_name(t));
}

int opd__upsample_args(opd_stack *stack, opd__upsample_mode mode, int sdims,
                       opd__upsample_form form, const char *name, opd__upsample_geom *g,
                       opd_tensor **src) {
  memset(g, 0, sizeof *g);
  g->mode = mode;
  g->form = form;
  g->sdims = sdims;
  bool linear = mode != OPD__UPSAMPLE_NEAREST; /* takes align_corners */
  int nargs = form == OPD__UPSAMPLE_VEC     ? 3 + linear
              : form == OPD__UPSAMPLE_PLAIN ? 2 + linear + sdims
                                            : 3 + linear + sdims;
  assert(stack->size >= (size_t)nargs);
  opd_ivalue *v = opd_stack_last(stack, nargs);
  *src = NULL;
  int rc = 0;
  int pos = form == OPD__UPSAMPLE_BACKWARD ? 3 : 2; /* the first argument past the sizes */
  if (v[0].tag != OPD_IV_TENSOR || (linear && v[pos].tag != OPD_IV_BOOL))
    rc = opd_error(OPD_EINVAL, "upsample: unexpected argument types");
  opd_tensor *x = rc ? NULL : v[0].u.t;
  if (!rc && linear) g->align_corners = v[pos].u.b;
  if (!rc && form != OPD__UPSAMPLE_VEC)
    for (int i = 0; i < sdims && !rc; i++)
      rc = opt_double(&v[pos + linear + i], &g->has_scale[3 - sdims + i], &g->scale[3 - sdims + i]);
  int64_t osize[3] = {0};
  opd_int_list output_size = {osize, 0};
  if (!rc && form == OPD__UPSAMPLE_VEC) {
    int n = 0;
    rc = vec_output_size(x, &v[1], &v[2 + linear], osize, &n, g);
    output_size.len = n;
  } else if (!rc) {
    output_size = opd__iv_int_list(&v[1]);
  }
  if (!rc && form == OPD__UPSAMPLE_BACKWARD) {
    opd_int_list input_size = opd__iv_int_list(&v[2]);
    rc = common_check(input_size.data, input_size.len, output_size, g);
    if (!rc && x->ndim != sdims + 2)
      rc = opd_error(OPD_EINVAL,
                     "Expected grad_output to be a tensor of dimension %d but got: dimension %d",
                     sdims + 2, x->ndim);
    for (int i = 0; !rc && i < sdims + 2; i++) {
      int64_t want = i < 2 ? input_size.data[i] : output_size.data[i - 2];
      if (opd_tensor_sizes(x)[i] != want)
        rc = opd_error(OPD_EINVAL,
                       "Expected grad_output to have the same shape as output; output.size(%d) = "
                       "%lld but got grad_output.size(%d) = %lld",
                       i, (long long)want, i, (long long)opd_tensor_sizes(x)[i]);
    }
    if (!rc) {
      g->spec.ndim = sdims + 2;
      memcpy(g->spec.sizes, input_size.data, (size_t)(sdims + 2) * sizeof *g->spec.sizes);
    }
  } else if (!rc) {
    const int64_t *s = opd_tensor_sizes(x);
    rc = common_check(s, x->ndim, output_size, g);
    bool rest_empty = false; /* a non-batch size of 0 */
    for (int i = 1; !rc && i < x->ndim; i++) rest_empty = rest_empty || s[i] == 0;
    if (!rc && rest_empty) {
      char b[256];
      rc =
          opd_error(OPD_EINVAL, "Non-empty %dD data tensor expected but got a tensor with sizes %s",
                    sdims + 2, opd__format_sizes(s, x->ndim, b, sizeof b));
    }
    if (!rc) {
      g->spec.ndim = sdims + 2;
      g->spec.sizes[0] = s[0];
      g->spec.sizes[1] = s[1];
      for (int i = 0; i < sdims; i++) g->spec.sizes[2 + i] = output_size.data[i];
    }
  }
  if (!rc) {
    g->spec.dtype = opd_tensor_dtype(x);
    g->device = opd_tensor_device(x);
    rc = check_dtype(g, name);
  }
  if (!rc) {
    *src = x;
    opd_tensor_retain(x);
  }
  opd_stack_drop(stack, nargs);
  return rc;
}

/* ---- Meta kernels ---- */

static int meta_upsample(opd_stack *stack, opd__upsample_mode mode, int sdims,
                         opd__upsample_form form, const char *name) {
  opd__upsample_geom g;
  opd_tensor *src, *out = NULL;
  int rc = opd__upsample_args(stack, mode, sdims, form, name, &g, &src);
  if (!rc) rc = opd__alloc_output(&g.spec, g.device, &out);
  if (src) opd_tensor_release(src);
  return rc ? rc : opd_stack_push(stack, opd_iv_tensor_steal(out));
}

#define DEFINE_UPSAMPLE_META(NAME, MODE, D)                                      \
  int opd__meta_##NAME(const opd_kernel_ctx *ctx, opd_stack *stack) {            \
    (void)ctx;                                                                   \
    return meta_upsample(stack, MODE, D, OPD__UPSAMPLE_PLAIN, #NAME);            \
  }                                                                              \
  int opd__meta_##NAME##_vec(const opd_kernel_ctx *ctx, opd_stack *stack) {      \
    (void)ctx;                                                                   \
    return meta_upsample(stack, MODE, D, OPD__UPSAMPLE_VEC, #NAME);              \
  }                                                                              \
  int opd__meta_##NAME##_backward(const opd_kernel_ctx *ctx, opd_stack *stack) { \
    (void)ctx;                                                                   \
    return meta_upsample(stack, MODE, D, OPD__UPSAMPLE_BACKWARD, #NAME);         \
  }
DEFINE_UPSAMPLE_META(upsample_nearest1d, OPD__UPSAMPLE_NEAREST, 1)
DEFINE_UPSAMPLE_META(upsample_nearest2d, OPD__UPSAMPLE_NEAREST, 2)
DEFINE_UPSAMPLE_META(upsample_nearest3d, OPD__UPSAMPLE_NEAREST, 3)
DEFINE_UPSAMPLE_META(upsample_linear1d, OPD__UPSAMPLE_LINEAR, 1)
DEFINE_UPSAMPLE_META(upsample_bilinear2d, OPD__UPSAMPLE_LINEAR, 2)
DEFINE_UPSAMPLE_META(upsample_trilinear3d, OPD__UPSAMPLE_LINEAR, 3)
DEFINE_UPSAMPLE_META(upsample_bicubic2d, OPD__UPSAMPLE_CUBIC, 2)

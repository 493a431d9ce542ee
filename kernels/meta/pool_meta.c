/* pool_meta.c: the pooling and padding operators' argument checks (PyTorch 1.13's messages),
 * output shapes and geometries (pool_meta.h), and their Meta kernels. */
#include "pool_meta.h"

#include <assert.h>
#include <stdio.h>
#include <string.h>

#include "opd/checked.h"

/* floor(a / b), b != 0 */
static int64_t div_floor(int64_t a, int64_t b) {
  int64_t q = a / b, r = a % b;
  return (r != 0 && ((r < 0) != (b < 0))) ? q - 1 : q;
}

/* pooling_output_shape of PyTorch (arguments checked for overflow by the caller's limits) */
static int pool_out_size(int64_t in, int64_t k, int64_t pad, int64_t stride, int64_t dil,
                         bool ceil_mode, int64_t *out) {
  if (stride == 0) return opd_error(OPD_EINVAL, "stride should not be zero");
  if (pad < 0)
    return opd_error(OPD_EINVAL, "pad must be non-negative, but got pad: %lld", (long long)pad);
  if (pad > k / 2)
    return opd_error(
        OPD_EINVAL,
        "pad should be at most half of kernel size, but got pad=%lld and kernel_size=%lld",
        (long long)pad, (long long)k);
  int64_t o =
      div_floor(in + 2 * pad - dil * (k - 1) - 1 + (ceil_mode ? stride - 1 : 0), stride) + 1;
  if (ceil_mode && (o - 1) * stride >= in + pad) o--;
  *out = o;
  return 0;
}

/* A list of 1 or n values (or, with may_omit, none: `dflt`) into three values, the leading
 * 3 - n of them `fill`. */
static bool take_list(opd_int_list l, int n, bool may_omit, const int64_t *dflt, int64_t fill,
                      int64_t *out) {
  if (!(l.len == 1 || l.len == n || (may_omit && l.len == 0))) return false;
  for (int i = 0; i < 3 - n; i++) out[i] = fill;
  for (int i = 0; i < n; i++)
    out[3 - n + i] = l.len == 0 ? dflt[3 - n + i] : l.len == 1 ? l.data[0] : l.data[i];
  return true;
}

/* Values of a pool list past int32 would be truncated by PyTorch (safe_downcast raises); opd
 * refuses them, which also keeps the size arithmetic below far from overflow. */
static int check_range(const int64_t *v, const char *what) {
  for (int i = 0; i < 3; i++)
    if (v[i] > INT32_MAX || v[i] < INT32_MIN)
      return opd_error(OPD_EINVAL, "%s value %lld out of range", what, (long long)v[i]);
  return 0;
}

static int set_planes(opd_tensor *self, int sdims, opd__pool_geom *g) {
  const int64_t *s = opd_tensor_sizes(self);
  int lead = self->ndim - sdims;
  g->planes = 1;
  for (int i = 0; i < lead; i++) g->planes *= s[i];
  for (int i = 0; i < 3; i++) g->in[i] = i < 3 - sdims ? 1 : s[lead + i - (3 - sdims)];
  g->spec.ndim = self->ndim;
  g->spec.dtype = opd_tensor_dtype(self);
  for (int i = 0; i < lead; i++) g->spec.sizes[i] = s[i];
  g->device = opd_tensor_device(self);
  g->sdims = sdims;
  return 0;
}

static void set_out_sizes(opd__pool_geom *g) {
  int lead = g->spec.ndim - g->sdims;
  for (int i = 0; i < g->sdims; i++) g->spec.sizes[lead + i] = g->out[3 - g->sdims + i];
}

/* pool2d_shape_check / pool3d_shape_check */
static int pool_shape_check(opd_tensor *self, const opd__pool_geom *g, const char *name) {
  int sd = g->sdims;
  const int64_t *k = g->k + 3 - sd, *st = g->stride + 3 - sd, *d = g->dil + 3 - sd,
                *p = g->pad + 3 - sd;
  for (int i = 0; i < sd; i++)
    if (k[i] <= 0)
      return opd_error(OPD_EINVAL, "kernel size should be greater than zero, but got %s: %lld",
                       name, (long long)k[i]);
  for (int i = 0; i < sd; i++)
    if (st[i] <= 0)
      return opd_error(OPD_EINVAL, "stride should be greater than zero, but got %s: %lld", name,
                       (long long)st[i]);
  if (sd == 2 && (d[0] <= 0 || d[1] <= 0))
    return opd_error(
        OPD_EINVAL, "dilation should be greater than zero, but got dilationH: %lld dilationW: %lld",
        (long long)d[0], (long long)d[1]);
  for (int i = 0; i < sd; i++)
    if (d[i] <= 0)
      return opd_error(OPD_EINVAL, "dilation should be greater than zero, but got %lld",
                       (long long)d[i]);
  const int64_t *s = opd_tensor_sizes(self);
  bool valid = true;
  for (int i = 1; i < self->ndim; i++)
    if (s[i] == 0) valid = false;
  if (self->ndim == sd + 1 && s[0] == 0) valid = false;
  if (!valid) {
    char b[256];
    return opd_error(OPD_EINVAL,
                     "Expected %dD or %dD (batch mode) tensor with optional 0 dim batch size for "
                     "input, but got:%s",
                     sd + 1, sd + 2, opd__format_sizes(s, self->ndim, b, sizeof b));
  }
  for (int i = 0; i < sd; i++)
    if (k[i] / 2 < p[i])
      return opd_error(OPD_EINVAL,
                       "pad should be smaller than or equal to half of kernel size, but got pad "
                       "%lld and kernel size %lld",
                       (long long)p[i], (long long)k[i]);
  const int64_t *o = g->out + 3 - sd, *in = g->in + 3 - sd;
  for (int i = 0; i < sd; i++)
    if (o[i] < 1) {
      char ib[128] = "", ob[128] = "";
      int64_t planes = s[self->ndim - sd - 1];
      snprintf(ib, sizeof ib, "%lld", (long long)planes);
      snprintf(ob, sizeof ob, "%lld", (long long)planes);
      for (int j = 0; j < sd; j++) {
        size_t li = strlen(ib), lo = strlen(ob);
        snprintf(ib + li, sizeof ib - li, "x%lld", (long long)in[j]);
        snprintf(ob + lo, sizeof ob - lo, "x%lld", (long long)o[j]);
      }
      return opd_error(OPD_EINVAL,
                       "Given input size: (%s). Calculated output size: (%s). Output size is too "
                       "small",
                       ib, ob);
    }
  return 0;
}

int opd__max_pool_meta(opd_tensor *self, int sdims, opd_int_list kernel_size, opd_int_list stride,
                       opd_int_list padding, opd_int_list dilation, bool ceil_mode,
                       opd__pool_geom *g) {
  memset(g, 0, sizeof *g);
  g->kind = OPD__POOL_MAX;
  const char *name = sdims == 2 ? "max_pool2d" : "max_pool3d";
  const char *count = sdims == 2 ? "two" : "three";
  static const int64_t one[3] = {1, 1, 1};
  if (!take_list(kernel_size, sdims, false, one, 1, g->k))
    return opd_error(OPD_EINVAL,
                     "%s: kernel_size must either be a single int, or a tuple of %s ints", name,
                     count);
  if (!take_list(stride, sdims, true, g->k, 1, g->stride))
    return opd_error(OPD_EINVAL,
                     "%s: stride must either be omitted, a single int, or a tuple of %s ints", name,
                     count);
  if (!take_list(padding, sdims, false, one, 0, g->pad))
    return opd_error(OPD_EINVAL, "%s: padding must either be a single int, or a tuple of %s ints",
                     name, count);
  if (!take_list(dilation, sdims, false, one, 1, g->dil))
    return opd_error(OPD_EINVAL, "%s: dilation must be either a single int, or a tuple of %s ints",
                     name, count);
  int rc = check_range(g->k, "kernel_size");
  if (!rc) rc = check_range(g->stride, "stride");
  if (!rc) rc = check_range(g->pad, "padding");
  if (!rc) rc = check_range(g->dil, "dilation");
  if (rc) return rc;
  if (self->ndim != sdims + 1 && self->ndim != sdims + 2)
    return opd_error(OPD_EINVAL, "non-empty %dD or %dD (batch mode) tensor expected for input",
                     sdims + 1, sdims + 2);
  set_planes(self, sdims, g);
  for (int i = 3 - sdims; i < 3; i++)
    if ((rc = pool_out_size(g->in[i], g->k[i], g->pad[i], g->stride[i], g->dil[i], ceil_mode,
                            &g->out[i])) != 0)
      return rc;
  for (int i = 0; i < 3 - sdims; i++) g->out[i] = 1;
  if ((rc = pool_shape_check(self, g, name)) != 0) return rc;
  set_out_sizes(g);
  return 0;
}

/* The checks avg_pool3d's pool3d_shape_check makes before the shared ones: a non-batch
 * dimension of size zero and an input smaller than the kernel. */
static int avg_pool3d_input_check(opd_tensor *self, const opd__pool_geom *g) {
  const int64_t *s = opd_tensor_sizes(self);
  char b[256];
  for (int i = 0; i < self->ndim; i++)
    if (!(self->ndim == 5 && i == 0) && s[i] <= 0)
      return opd_error(OPD_EINVAL,
                       "avg_pool3d(): Expected input's non-batch dimensions to have positive "
                       "length, but input has a shape of %s and non-batch dimension %lld has "
                       "length zero!",
                       opd__format_sizes(s, self->ndim, b, sizeof b), (long long)s[i]);
  if (g->in[0] < g->k[0] || g->in[1] < g->k[1] || g->in[2] < g->k[2])
    return opd_error(OPD_EINVAL,
                     "input image (T: %lld H: %lld W: %lld) smaller than kernel size (kT: %lld "
                     "kH: %lld kW: %lld)",
                     (long long)g->in[0], (long long)g->in[1], (long long)g->in[2],
                     (long long)g->k[0], (long long)g->k[1], (long long)g->k[2]);
  return 0;
}

int opd__avg_pool_meta(opd_tensor *self, int sdims, opd_int_list kernel_size, opd_int_list stride,
                       opd_int_list padding, bool ceil_mode, bool count_include_pad,
                       opd_opt_int divisor_override, opd__pool_geom *g) {
  memset(g, 0, sizeof *g);
  g->kind = OPD__POOL_AVG;
  static const int64_t one[3] = {1, 1, 1};
  /* PyTorch words the two dimensionalities' list errors differently */
  bool is2d = sdims == 2;
  if (!take_list(kernel_size, sdims, false, one, 1, g->k))
    return opd_error(
        OPD_EINVAL, is2d
                        ? "avg_pool2d: kernel_size must either be a single int, or a tuple of "
                          "two ints"
                        : "avg_pool3d: kernel_size must be a single int, or a tuple of three ints");
  if (!take_list(stride, sdims, true, g->k, 1, g->stride))
    return opd_error(OPD_EINVAL, is2d ? "avg_pool2d: stride must either be omitted, a single int, "
                                        "or a tuple of two ints"
                                      : "avg_pool3d: stride must be omitted, a single int, or a "
                                        "tuple of three ints");
  if (!take_list(padding, sdims, false, one, 0, g->pad))
    return opd_error(OPD_EINVAL,
                     is2d ? "avg_pool2d: padding must either be a single int, or a tuple of two "
                            "ints"
                          : "avg_pool3d: padding must be a single int, or a tuple of three ints");
  if (divisor_override.has_value && divisor_override.value == 0)
    return opd_error(OPD_EINVAL, "divisor must be not zero");
  int rc = check_range(g->k, "kernel_size");
  if (!rc) rc = check_range(g->stride, "stride");
  if (!rc) rc = check_range(g->pad, "padding");
  if (rc) return rc;
  for (int i = 0; i < 3; i++) g->dil[i] = 1;
  if (!is2d && self->ndim != 4 && self->ndim != 5)
    return opd_error(OPD_EINVAL, "non-empty 4D or 5D (batch mode) tensor expected for input");
  if (is2d && self->ndim < 3) {
    int64_t w;
    return opd__wrap_dim(-3, self->ndim, &w);
  }
  if (is2d && self->ndim > 4) {
    char b[256];
    return opd_error(OPD_EINVAL,
                     "Expected 3D or 4D (batch mode) tensor with optional 0 dim batch size for "
                     "input, but got:%s",
                     opd__format_sizes(opd_tensor_sizes(self), self->ndim, b, sizeof b));
  }
  set_planes(self, sdims, g);
  for (int i = 3 - sdims; i < 3; i++)
    if ((rc = pool_out_size(g->in[i], g->k[i], g->pad[i], g->stride[i], 1, ceil_mode,
                            &g->out[i])) != 0)
      return rc;
  for (int i = 0; i < 3 - sdims; i++) g->out[i] = 1;
  if (!is2d && (rc = avg_pool3d_input_check(self, g)) != 0) return rc;
  if ((rc = pool_shape_check(self, g, is2d ? "avg_pool2d" : "avg_pool3d")) != 0) return rc;
  g->count_include_pad = count_include_pad;
  g->has_divisor = divisor_override.has_value;
  g->divisor = divisor_override.value;
  set_out_sizes(g);
  return 0;
}

int opd__adaptive_pool_meta(opd_tensor *self, int sdims, opd_int_list output_size, bool max,
                            opd__pool_geom *g) {
  memset(g, 0, sizeof *g);
  g->kind = max ? OPD__POOL_ADAPTIVE_MAX : OPD__POOL_ADAPTIVE_AVG;
  char name[32];
  snprintf(name, sizeof name, "%s_pool%dd", max ? "adaptive_max" : "adaptive_avg", sdims);
  if (output_size.len != sdims) {
    if (max)
      return opd_error(OPD_EINVAL, "%s(): internal error: output_size.size() must be %d", name,
                       sdims);
    return opd_error(OPD_EINVAL, "%s: output_size must be %d", name, sdims);
  }
  for (int i = 0; i < sdims; i++) {
    if (output_size.data[i] < 0) {
      char b[128];
      return opd_error(OPD_EINVAL,
                       "%s: elements of output_size must be greater than or equal to 0 but "
                       "received %s",
                       name, opd__format_sizes(output_size.data, sdims, b, sizeof b));
    }
    /* the windows' bounds multiply an output position by an input size */
    if (output_size.data[i] > INT32_MAX)
      return opd_error(OPD_EINVAL, "%s: output_size %lld out of range", name,
                       (long long)output_size.data[i]);
  }
  char b[256];
  const int64_t *s = opd_tensor_sizes(self);
  if (self->ndim != sdims + 1 && self->ndim != sdims + 2)
    return opd_error(OPD_EINVAL, "%s(): Expected %dD or %dD tensor, but got%s %s", name, sdims + 1,
                     sdims + 2, max && sdims == 3 ? ":" : "",
                     opd__format_sizes(s, self->ndim, b, sizeof b));
  for (int i = 1; i < self->ndim; i++)
    if (s[i] == 0)
      return opd_error(OPD_EINVAL,
                       "%s(): Expected input to have non-zero size for non-batch dimensions, but "
                       "input has sizes %s with dimension %d being empty",
                       name, opd__format_sizes(s, self->ndim, b, sizeof b), i);
  set_planes(self, sdims, g);
  for (int i = 0; i < 3; i++) g->out[i] = i < 3 - sdims ? 1 : output_size.data[i - (3 - sdims)];
  set_out_sizes(g);
  return 0;
}

int opd__pool_backward_check(const opd__pool_geom *g, opd_tensor *grad_output, opd_tensor *indices,
                             const char *op) {
  char b1[256], b2[256];
  opd_tensor *ts[2] = {grad_output, indices};
  for (int t = 0; t < 2; t++) {
    opd_tensor *x = ts[t];
    if (!x) continue;
    bool same = x->ndim == g->spec.ndim;
    for (int i = 0; same && i < x->ndim; i++) same = opd_tensor_sizes(x)[i] == g->spec.sizes[i];
    if (!same)
      return opd_error(OPD_EINVAL, "%s(): expected %s of size %s, but got %s", op,
                       t == 0 ? "grad_output" : "indices",
                       opd__format_sizes(g->spec.sizes, g->spec.ndim, b1, sizeof b1),
                       opd__format_sizes(opd_tensor_sizes(x), x->ndim, b2, sizeof b2));
  }
  if (indices && opd_tensor_dtype(indices) != OPD_INT64)
    return opd_error(OPD_EINVAL, "%s(): expected indices of dtype int64, but got %s", op,
                     opd_dtype_name(opd_tensor_dtype(indices)));
  if (opd_tensor_dtype(grad_output) != g->spec.dtype)
    return opd_error(OPD_EINVAL, "%s(): expected grad_output of dtype %s, but got %s", op,
                     opd_dtype_name(g->spec.dtype), opd_dtype_name(opd_tensor_dtype(grad_output)));
  return 0;
}

int opd__max_unpool2d_meta(opd_tensor *self, opd_tensor *indices, opd_int_list output_size,
                           opd__pool_geom *g) {
  memset(g, 0, sizeof *g);
  char b1[256], b2[256];
  if (opd_tensor_dtype(indices) != OPD_INT64)
    return opd_error(OPD_EINVAL, "elements in indices should be type int64 but got: %s",
                     opd_dtype_c10_name(opd_tensor_dtype(indices)));
  if (output_size.len != 2)
    return opd_error(OPD_EINVAL,
                     "There should be exactly two elements (height, width) in output_size, but "
                     "got %lld elements.",
                     (long long)output_size.len);
  if (self->ndim != 3 && self->ndim != 4)
    return opd_error(OPD_EINVAL,
                     "Input to max_unpooling2d should be a 3d or 4d Tensor, but got a tensor with "
                     "%d dimensions.",
                     self->ndim);
  const int64_t *s = opd_tensor_sizes(self);
  bool same = indices->ndim == self->ndim;
  for (int i = 0; same && i < self->ndim; i++) same = opd_tensor_sizes(indices)[i] == s[i];
  if (!same)
    return opd_error(OPD_EINVAL,
                     "Expected shape of indices to be same as that of the input tensor (%s) but "
                     "got indices tensor with shape: %s",
                     opd__format_sizes(s, self->ndim, b1, sizeof b1),
                     opd__format_sizes(opd_tensor_sizes(indices), indices->ndim, b2, sizeof b2));
  for (int i = 1; i < self->ndim; i++)
    if (s[i] == 0)
      return opd_error(
          OPD_EINVAL,
          "max_unpooling2d_forward_out_cpu(): Expected input to have non-zero size for "
          "non-batch dimensions, but got %s with dimension %d being empty.",
          opd__format_sizes(s, self->ndim, b1, sizeof b1), i);
  if (output_size.data[0] < 0 || output_size.data[1] < 0)
    return opd_error(OPD_EINVAL, "max_unpool2d: negative output_size");
  set_planes(self, 2, g);
  for (int i = 0; i < 3; i++) g->out[i] = g->in[i];
  g->in[1] = output_size.data[0];
  g->in[2] = output_size.data[1];
  int lead = self->ndim - 2;
  g->spec.sizes[lead] = g->in[1];
  g->spec.sizes[lead + 1] = g->in[2];
  return 0;
}

int opd__pad_meta(opd_tensor *self, opd_int_list padding, int sdims, opd__pad_mode mode,
                  opd__pool_geom *g) {
  memset(g, 0, sizeof *g);
  char b[256];
  if (padding.len != 2 * sdims)
    return opd_error(OPD_EINVAL, "padding size is expected to be %d", 2 * sdims);
  const int64_t *s = opd_tensor_sizes(self);
  bool valid = self->ndim == sdims + 1 || self->ndim == sdims + 2;
  for (int i = 1; valid && i < self->ndim; i++) valid = s[i] != 0;
  if (valid && mode == OPD__PAD_REPLICATE && self->ndim == sdims + 1) valid = s[0] != 0;
  if (!valid) {
    if (mode == OPD__PAD_REFLECT && sdims < 3)
      return opd_error(OPD_EINVAL, "%dD or %dD (batch mode) tensor expected for input, but got: %s",
                       sdims + 1, sdims + 2, opd__format_sizes(s, self->ndim, b, sizeof b));
    return opd_error(OPD_EINVAL,
                     "Expected %dD or %dD (batch mode) tensor with possibly 0 batch size and other "
                     "non-zero dimensions for input, but got: %s",
                     sdims + 1, sdims + 2, opd__format_sizes(s, self->ndim, b, sizeof b));
  }
  set_planes(self, sdims, g);
  for (int i = 0; i < 3; i++) g->out[i] = g->in[i];
  bool any_positive = false;
  for (int i = 0; i < sdims; i++) {
    /* padding lists the last dimension first */
    int d = 2 - i;
    int64_t l = padding.data[2 * i], r = padding.data[2 * i + 1], o;
    if (l > INT32_MAX || l < INT32_MIN || r > INT32_MAX || r < INT32_MIN)
      return opd_error(OPD_EINVAL, "padding (%lld, %lld) out of range", (long long)l, (long long)r);
    if (mode == OPD__PAD_REFLECT && (l >= g->in[d] || r >= g->in[d]))
      return opd_error(OPD_EINVAL,
                       "Argument #%d: Padding size should be less than the corresponding input "
                       "dimension, but got: padding (%lld, %lld) at dimension %d of input %s",
                       4 + 2 * i, (long long)l, (long long)r, self->ndim - 1 - i,
                       opd__format_sizes(s, self->ndim, b, sizeof b));
    o = g->in[d] + l + r;
    g->pad[d] = l;
    g->k[d] = r;
    g->out[d] = o;
    if (o >= 1) any_positive = true;
    if (o < 0 || (sdims == 1 && o < 1))
      return opd_error(OPD_EINVAL, "input (W: %lld) is too small. Calculated output W: %lld",
                       (long long)g->in[d], (long long)o);
  }
  if (!any_positive)
    return opd_error(OPD_EINVAL, "input is too small: every calculated output size is 0");
  set_out_sizes(g);
  return 0;
}

/* ---- Meta kernels ---- */

static int alloc_like(const opd__pool_geom *g, opd_tensor **out) {
  return opd__alloc_output(&g->spec, g->device, out);
}

/* The input-shaped result of a backward operator. */
static int alloc_input_like(opd_tensor *self, opd_tensor **out) {
  opd_out_spec spec = {.ndim = self->ndim, .dtype = opd_tensor_dtype(self)};
  memcpy(spec.sizes, opd_tensor_sizes(self), (size_t)self->ndim * sizeof *spec.sizes);
  return opd__alloc_output(&spec, opd_tensor_device(self), out);
}

/* Pushes the output and the indices (taking their references) or releases them. */
int opd__push_pool_results(opd_stack *stack, opd_tensor *out, opd_tensor *indices, int rc) {
  if (!rc)
    rc = opd_stack_push(stack, opd_iv_tensor_steal(out));
  else if (out)
    opd_tensor_release(out);
  if (!rc) {
    rc = opd_stack_push(stack, opd_iv_tensor_steal(indices));
    if (rc) opd_stack_drop(stack, 1);
  } else if (indices) {
    opd_tensor_release(indices);
  }
  return rc;
}

/* The output and int64 indices of a max pooling. */
int opd__alloc_pool_results(const opd__pool_geom *g, opd_tensor **out, opd_tensor **indices) {
  opd_out_spec is = g->spec;
  is.dtype = OPD_INT64;
  *out = *indices = NULL;
  int rc = alloc_like(g, out);
  if (!rc) rc = opd__alloc_output(&is, g->device, indices);
  return rc;
}

/* Pops max_pool{2,3}d_with_indices' six arguments into a geometry. */
int opd__max_pool_args(opd_stack *stack, int sdims, opd__pool_geom *g, opd_tensor **self) {
  assert(stack->size >= 6);
  opd_ivalue *v = opd_stack_last(stack, 6);
  int rc = 0;
  if (v[0].tag != OPD_IV_TENSOR || v[5].tag != OPD_IV_BOOL)
    rc = opd_error(OPD_EINVAL, "max_pool%dd_with_indices: unexpected argument types", sdims);
  *self = rc ? NULL : v[0].u.t;
  if (!rc)
    rc = opd__max_pool_meta(v[0].u.t, sdims, opd__iv_int_list(&v[1]), opd__iv_int_list(&v[2]),
                            opd__iv_int_list(&v[3]), opd__iv_int_list(&v[4]), v[5].u.b, g);
  if (*self) opd_tensor_retain(*self);
  opd_stack_drop(stack, 6);
  return rc;
}

typedef int pool_args_fn(opd_stack *stack, int sdims, opd__pool_geom *g, opd_tensor **self);

/* The Meta kernel of a pool with indices: its arguments read by `args`, its results
 * allocated and pushed. */
static int meta_pool_with_indices(opd_stack *stack, int sdims, pool_args_fn *args) {
  opd__pool_geom g;
  opd_tensor *self, *out = NULL, *indices = NULL;
  int rc = args(stack, sdims, &g, &self);
  if (!rc) rc = opd__alloc_pool_results(&g, &out, &indices);
  if (self) opd_tensor_release(self);
  return opd__push_pool_results(stack, out, indices, rc);
}

int opd__meta_max_pool2d_with_indices(const opd_kernel_ctx *ctx, opd_stack *stack) {
  (void)ctx;
  return meta_pool_with_indices(stack, 2, opd__max_pool_args);
}

int opd__meta_max_pool3d_with_indices(const opd_kernel_ctx *ctx, opd_stack *stack) {
  (void)ctx;
  return meta_pool_with_indices(stack, 3, opd__max_pool_args);
}

int opd__adaptive_max_pool_args(opd_stack *stack, int sdims, opd__pool_geom *g, opd_tensor **self) {
  assert(stack->size >= 2);
  opd_ivalue *v = opd_stack_last(stack, 2);
  int rc = v[0].tag == OPD_IV_TENSOR
               ? opd__adaptive_pool_meta(v[0].u.t, sdims, opd__iv_int_list(&v[1]), true, g)
               : opd_error(OPD_EINVAL, "adaptive_max_pool%dd: unexpected argument types", sdims);
  *self = v[0].tag == OPD_IV_TENSOR ? v[0].u.t : NULL;
  if (*self) opd_tensor_retain(*self);
  opd_stack_drop(stack, 2);
  return rc;
}

int opd__meta_adaptive_max_pool2d(const opd_kernel_ctx *ctx, opd_stack *stack) {
  (void)ctx;
  return meta_pool_with_indices(stack, 2, opd__adaptive_max_pool_args);
}

int opd__meta_adaptive_max_pool3d(const opd_kernel_ctx *ctx, opd_stack *stack) {
  (void)ctx;
  return meta_pool_with_indices(stack, 3, opd__adaptive_max_pool_args);
}

int opd__meta_max_pool2d_with_indices_backward(const opd_kernel_ctx *ctx, opd_tensor *grad_output,
                                               opd_tensor *self, opd_int_list kernel_size,
                                               opd_int_list stride, opd_int_list padding,
                                               opd_int_list dilation, bool ceil_mode,
                                               opd_tensor *indices, opd_tensor **out) {
  (void)ctx;
  opd__pool_geom g;
  int rc = opd__max_pool_meta(self, 2, kernel_size, stride, padding, dilation, ceil_mode, &g);
  if (!rc)
    rc = opd__pool_backward_check(&g, grad_output, indices, "max_pool2d_with_indices_backward");
  return rc ? rc : alloc_input_like(self, out);
}

int opd__meta_max_pool3d_with_indices_backward(const opd_kernel_ctx *ctx, opd_tensor *grad_output,
                                               opd_tensor *self, opd_int_list kernel_size,
                                               opd_int_list stride, opd_int_list padding,
                                               opd_int_list dilation, bool ceil_mode,
                                               opd_tensor *indices, opd_tensor **out) {
  (void)ctx;
  opd__pool_geom g;
  int rc = opd__max_pool_meta(self, 3, kernel_size, stride, padding, dilation, ceil_mode, &g);
  if (!rc)
    rc = opd__pool_backward_check(&g, grad_output, indices, "max_pool3d_with_indices_backward");
  return rc ? rc : alloc_input_like(self, out);
}

#define DEFINE_AVG_POOL_META(D)                                                                \
  int opd__meta_avg_pool##D##d(const opd_kernel_ctx *ctx, opd_tensor *self,                    \
                               opd_int_list kernel_size, opd_int_list stride,                  \
                               opd_int_list padding, bool ceil_mode, bool count_include_pad,   \
                               opd_opt_int divisor_override, opd_tensor **out) {               \
    (void)ctx;                                                                                 \
    opd__pool_geom g;                                                                          \
    int rc = opd__avg_pool_meta(self, D, kernel_size, stride, padding, ceil_mode,              \
                                count_include_pad, divisor_override, &g);                      \
    return rc ? rc : alloc_like(&g, out);                                                      \
  }                                                                                            \
  int opd__meta_avg_pool##D##d_backward(                                                       \
      const opd_kernel_ctx *ctx, opd_tensor *grad_output, opd_tensor *self,                    \
      opd_int_list kernel_size, opd_int_list stride, opd_int_list padding, bool ceil_mode,     \
      bool count_include_pad, opd_opt_int divisor_override, opd_tensor **out) {                \
    (void)ctx;                                                                                 \
    opd__pool_geom g;                                                                          \
    int rc = opd__avg_pool_meta(self, D, kernel_size, stride, padding, ceil_mode,              \
                                count_include_pad, divisor_override, &g);                      \
    if (!rc) rc = opd__pool_backward_check(&g, grad_output, NULL, "avg_pool" #D "d_backward"); \
    return rc ? rc : alloc_input_like(self, out);                                              \
  }
DEFINE_AVG_POOL_META(2)
DEFINE_AVG_POOL_META(3)

/* The forward geometry of an adaptive pooling backward: the output size is grad_output's. */
int opd__adaptive_backward_meta(opd_tensor *grad_output, opd_tensor *self, opd_tensor *indices,
                                int sdims, bool max, opd__pool_geom *g) {
  char op[40];
  snprintf(op, sizeof op, "%s_pool%dd_backward", max ? "adaptive_max" : "_adaptive_avg", sdims);
  if (grad_output->ndim != self->ndim || self->ndim < sdims)
    return opd_error(OPD_EINVAL, "%s(): expected grad_output of %d dimensions, but got %d", op,
                     self->ndim, grad_output->ndim);
  const int64_t *gs = opd_tensor_sizes(grad_output);
  int rc = opd__adaptive_pool_meta(self, sdims,
                                   (opd_int_list){gs + grad_output->ndim - sdims, sdims}, max, g);
  return rc ? rc : opd__pool_backward_check(g, grad_output, indices, op);
}

#define DEFINE_ADAPTIVE_POOL_META(D)                                                            \
  int opd__meta_adaptive_avg_pool##D##d(const opd_kernel_ctx *ctx, opd_tensor *self,            \
                                        opd_int_list output_size, opd_tensor **out) {           \
    (void)ctx;                                                                                  \
    opd__pool_geom g;                                                                           \
    int rc = opd__adaptive_pool_meta(self, D, output_size, false, &g);                          \
    return rc ? rc : alloc_like(&g, out);                                                       \
  }                                                                                             \
  int opd__meta_adaptive_avg_pool##D##d_backward(                                               \
      const opd_kernel_ctx *ctx, opd_tensor *grad_output, opd_tensor *self, opd_tensor **out) { \
    (void)ctx;                                                                                  \
    opd__pool_geom g;                                                                           \
    int rc = opd__adaptive_backward_meta(grad_output, self, NULL, D, false, &g);                \
    return rc ? rc : alloc_input_like(self, out);                                               \
  }                                                                                             \
  int opd__meta_adaptive_max_pool##D##d_backward(const opd_kernel_ctx *ctx,                     \
                                                 opd_tensor *grad_output, opd_tensor *self,     \
                                                 opd_tensor *indices, opd_tensor **out) {       \
    (void)ctx;                                                                                  \
    opd__pool_geom g;                                                                           \
    int rc = opd__adaptive_backward_meta(grad_output, self, indices, D, true, &g);              \
    return rc ? rc : alloc_input_like(self, out);                                               \
  }
DEFINE_ADAPTIVE_POOL_META(2)
DEFINE_ADAPTIVE_POOL_META(3)

int opd__meta_max_unpool2d(const opd_kernel_ctx *ctx, opd_tensor *self, opd_tensor *indices,
                           opd_int_list output_size, opd_tensor **out) {
  (void)ctx;
  opd__pool_geom g;
  int rc = opd__max_unpool2d_meta(self, indices, output_size, &g);
  return rc ? rc : alloc_like(&g, out);
}

/* The padding operators' Meta kernels, forward and backward. */
int opd__pad_backward_meta(opd_tensor *grad_output, opd_tensor *self, opd_int_list padding,
                           int sdims, opd__pad_mode mode, opd__pool_geom *g) {
  int rc = opd__pad_meta(self, padding, sdims, mode, g);
  return rc ? rc
            : opd__pool_backward_check(g, grad_output, NULL,
                                       mode == OPD__PAD_REFLECT ? "reflection_pad_backward"
                                                                : "replication_pad_backward");
}

#define DEFINE_PAD_META(MODE, mode_enum, D)                                                     \
  int opd__meta_##MODE##_pad##D##d(const opd_kernel_ctx *ctx, opd_tensor *self,                 \
                                   opd_int_list padding, opd_tensor **out) {                    \
    (void)ctx;                                                                                  \
    opd__pool_geom g;                                                                           \
    int rc = opd__pad_meta(self, padding, D, mode_enum, &g);                                    \
    return rc ? rc : alloc_like(&g, out);                                                       \
  }                                                                                             \
  int opd__meta_##MODE##_pad##D##d_backward(const opd_kernel_ctx *ctx, opd_tensor *grad_output, \
                                            opd_tensor *self, opd_int_list padding,             \
                                            opd_tensor **out) {                                 \
    (void)ctx;                                                                                  \
    opd__pool_geom g;                                                                           \
    int rc = opd__pad_backward_meta(grad_output, self, padding, D, mode_enum, &g);              \
    return rc ? rc : alloc_input_like(self, out);                                               \
  }
DEFINE_PAD_META(reflection, OPD__PAD_REFLECT, 1)
DEFINE_PAD_META(reflection, OPD__PAD_REFLECT, 2)
DEFINE_PAD_META(reflection, OPD__PAD_REFLECT, 3)
DEFINE_PAD_META(replication, OPD__PAD_REPLICATE, 1)
DEFINE_PAD_META(replication, OPD__PAD_REPLICATE, 2)
DEFINE_PAD_META(replication, OPD__PAD_REPLICATE, 3)

/* ---- the devices' wrappers: [Note: A pooling's wrapper and its device's run] ---- */

static int check_dtype(const opd__pool_geom *g, const char *op) {
  opd_dtype t = g->spec.dtype;
  bool bf16 = g->sdims == 2 || g->kind == OPD__POOL_MAX, int64 = !bf16 && g->kind == OPD__POOL_AVG;
  if (t == OPD_FLOAT32 || t == OPD_FLOAT64 || (t == OPD_BFLOAT16 && bf16) ||
      (t == OPD_INT64 && int64))
    return 0;
  return opd_error(OPD_EINVAL, "\"%s\" not implemented for '%s'", op, opd_dtype_c10_name(t));
}

static int forward(opd__pool_run_fn run, const opd__pool_geom *g, opd_tensor *self,
                   opd_tensor **out, const char *op) {
  int rc = check_dtype(g, op);
  if (!rc) rc = opd__alloc_output(&g->spec, g->device, out);
  if (!rc && (rc = run(g, false, self, *out, NULL, op)) != 0) {
    opd_tensor_release(*out);
    *out = NULL;
  }
  return rc;
}

static int backward(opd__pool_run_fn run, const opd__pool_geom *g, opd_tensor *grad_output,
                    opd_tensor *self, opd_tensor *indices, opd_tensor **out, const char *op) {
  int rc = check_dtype(g, op);
  opd_out_spec spec = {.ndim = self->ndim, .dtype = g->spec.dtype};
  memcpy(spec.sizes, opd_tensor_sizes(self), (size_t)self->ndim * sizeof *spec.sizes);
  if (!rc) rc = opd__alloc_output(&spec, g->device, out);
  if (!rc && (rc = run(g, true, grad_output, *out, indices, op)) != 0) {
    opd_tensor_release(*out);
    *out = NULL;
  }
  return rc;
}

/* The boxed max poolings once their geometry is read (rc: the reading's status). */
static int max_pool_boxed(opd__pool_run_fn run, opd_stack *stack, int rc, opd__pool_geom *g,
                          opd_tensor *self, const char *op) {
  opd_tensor *out = NULL, *indices = NULL;
  if (!rc) rc = check_dtype(g, op);
  if (!rc) rc = opd__alloc_pool_results(g, &out, &indices);
  if (!rc) rc = run(g, false, self, out, indices, op);
  if (self) opd_tensor_release(self);
  return opd__push_pool_results(stack, out, indices, rc);
}

int opd__max_pool_run(opd__pool_run_fn run, opd_stack *stack, int sdims) {
  opd__pool_geom g;
  opd_tensor *self;
  int rc = opd__max_pool_args(stack, sdims, &g, &self);
  return max_pool_boxed(run, stack, rc, &g, self, sdims == 2 ? "max_pool2d" : "max_pool3d");
}

int opd__adaptive_max_pool_run(opd__pool_run_fn run, opd_stack *stack, int sdims) {
  opd__pool_geom g;
  opd_tensor *self;
  int rc = opd__adaptive_max_pool_args(stack, sdims, &g, &self);
  return max_pool_boxed(run, stack, rc, &g, self,
                        sdims == 2 ? "adaptive_max_pool2d" : "adaptive_max_pool3d_cpu");
}

int opd__max_pool_backward_run(opd__pool_run_fn run, int sdims, opd_tensor *grad_output,
                               opd_tensor *self, opd_int_list kernel_size, opd_int_list stride,
                               opd_int_list padding, opd_int_list dilation, bool ceil_mode,
                               opd_tensor *indices, opd_tensor **out) {
  const char *op =
      sdims == 2 ? "max_pool2d_with_indices_backward" : "max_pool3d_with_indices_backward";
  opd__pool_geom g;
  int rc = opd__max_pool_meta(self, sdims, kernel_size, stride, padding, dilation, ceil_mode, &g);
  if (!rc) rc = opd__pool_backward_check(&g, grad_output, indices, op);
  return rc ? rc : backward(run, &g, grad_output, self, indices, out, op);
}

int opd__avg_pool_run(opd__pool_run_fn run, int sdims, opd_tensor *self, opd_int_list kernel_size,
                      opd_int_list stride, opd_int_list padding, bool ceil_mode,
                      bool count_include_pad, opd_opt_int divisor_override, const char *name,
                      opd_tensor **out) {
  opd__pool_geom g;
  int rc = opd__avg_pool_meta(self, sdims, kernel_size, stride, padding, ceil_mode,
                              count_include_pad, divisor_override, &g);
  return rc ? rc : forward(run, &g, self, out, name);
}

int opd__avg_pool_backward_run(opd__pool_run_fn run, int sdims, opd_tensor *grad_output,
                               opd_tensor *self, opd_int_list kernel_size, opd_int_list stride,
                               opd_int_list padding, bool ceil_mode, bool count_include_pad,
                               opd_opt_int divisor_override, const char *name, opd_tensor **out) {
  opd__pool_geom g;
  int rc = opd__avg_pool_meta(self, sdims, kernel_size, stride, padding, ceil_mode,
                              count_include_pad, divisor_override, &g);
  if (!rc)
    rc = opd__pool_backward_check(&g, grad_output, NULL,
                                  sdims == 2 ? "avg_pool2d_backward" : "avg_pool3d_backward");
  return rc ? rc : backward(run, &g, grad_output, self, NULL, out, name);
}

int opd__adaptive_avg_pool_run(opd__pool_run_fn run, int sdims, opd_tensor *self,
                               opd_int_list output_size, const char *name, opd_tensor **out) {
  opd__pool_geom g;
  int rc = opd__adaptive_pool_meta(self, sdims, output_size, false, &g);
  return rc ? rc : forward(run, &g, self, out, name);
}

int opd__adaptive_pool_backward_run(opd__pool_run_fn run, int sdims, opd_tensor *grad_output,
                                    opd_tensor *self, opd_tensor *indices, bool max,
                                    const char *name, opd_tensor **out) {
  opd__pool_geom g;
  int rc = opd__adaptive_backward_meta(grad_output, self, indices, sdims, max, &g);
  return rc ? rc : backward(run, &g, grad_output, self, indices, out, name);
}

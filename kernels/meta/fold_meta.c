/* fold_meta.c: im2col's and col2im's checks, shapes and Meta kernels (fold_meta.h). */
#include "fold_meta.h"

#include <stdio.h>
#include <string.h>

#include "opd/checked.h"

/* floor(a / b) for b > 0 (div_rtn) */
static int64_t div_floor(int64_t a, int64_t b) {
  int64_t q = a / b;
  return (a % b != 0 && a < 0) ? q - 1 : q;
}

/* The four pairs: each of two values, within int32 (PyTorch keeps them in int), positive
 * kernel, dilation and stride, non-negative padding. */
static int pairs(opd_int_list kernel_size, opd_int_list dilation, opd_int_list padding,
                 opd_int_list stride, opd__fold_geom *g) {
  const char *names[4] = {"kernel_size", "dilation", "padding", "stride"};
  opd_int_list l[4] = {kernel_size, dilation, padding, stride};
  for (int i = 0; i < 4; i++) {
    if (l[i].len != 2)
      return opd_error(OPD_EINVAL, "It is expected %s equals to 2, but got size %lld", names[i],
                       (long long)l[i].len);
    for (int j = 0; j < 2; j++)
      if (l[i].data[j] > INT32_MAX || l[i].data[j] < INT32_MIN)
        return opd_error(OPD_EINVAL, "%s value %lld out of range", names[i],
                         (long long)l[i].data[j]);
  }
  g->kh = kernel_size.data[0], g->kw = kernel_size.data[1];
  g->dh = dilation.data[0], g->dw = dilation.data[1];
  g->ph = padding.data[0], g->pw = padding.data[1];
  g->sh = stride.data[0], g->sw = stride.data[1];
  if (g->kh <= 0 || g->kw <= 0)
    return opd_error(OPD_EINVAL,
                     "kernel size should be greater than zero, but got kernel_height: %lld "
                     "kernel_width: %lld",
                     (long long)g->kh, (long long)g->kw);
  if (g->dh <= 0 || g->dw <= 0)
    return opd_error(OPD_EINVAL,
                     "dilation should be greater than zero, but got dilation_height: %lld "
                     "dilation_width: %lld",
                     (long long)g->dh, (long long)g->dw);
  if (g->ph < 0 || g->pw < 0)
    return opd_error(OPD_EINVAL,
                     "padding should be non-negative, but got pad_height: %lld pad_width: %lld",
                     (long long)g->ph, (long long)g->pw);
  if (g->sh <= 0 || g->sw <= 0)
    return opd_error(OPD_EINVAL,
                     "stride should be greater than zero, but got stride_height: %lld "
                     "stride_width: %lld",
                     (long long)g->sh, (long long)g->sw);
  return 0;
}

/* The number of blocks along a dim of size n (all values within int32: no overflow). */
static int64_t blocks(int64_t n, int64_t k, int64_t d, int64_t p, int64_t s) {
  return div_floor(n + 2 * p - (d * (k - 1) + 1), s) + 1;
}

static int float_dtype(opd_dtype t, const char *loop) {
  if (t == OPD_FLOAT32 || t == OPD_FLOAT64 || t == OPD_BFLOAT16) return 0;
  return opd_error(OPD_EINVAL, "\"%s\" not implemented for '%s'", loop, opd_dtype_c10_name(t));
}

int opd__im2col_meta(opd_tensor *self, opd_int_list kernel_size, opd_int_list dilation,
                     opd_int_list padding, opd_int_list stride, opd__fold_geom *g) {
  memset(g, 0, sizeof *g);
  int rc = pairs(kernel_size, dilation, padding, stride, g);
  if (rc) return rc;
  const int64_t *s = opd_tensor_sizes(self);
  int nd = self->ndim;
  bool valid = (nd == 3 && s[0] != 0 && s[1] != 0 && s[2] != 0) ||
               (nd == 4 && s[1] != 0 && s[2] != 0 && s[3] != 0);
  if (!valid) {
    char b[256];
    return opd_error(OPD_EINVAL,
                     "Expected 3D or 4D (batch mode) tensor with possibly 0 batch size and other "
                     "non-zero dimensions for input, but got: %s",
                     opd__format_sizes(s, nd, b, sizeof b));
  }
  int64_t n = nd == 4 ? s[0] : 1, c = s[nd - 3];
  g->height = s[nd - 2];
  g->width = s[nd - 1];
  g->oh = blocks(g->height, g->kh, g->dh, g->ph, g->sh);
  g->ow = blocks(g->width, g->kw, g->dw, g->pw, g->sw);
  if (g->oh < 1 || g->ow < 1) /* PyTorch's message prints the input height twice */
    return opd_error(OPD_EINVAL,
                     "Given input with spatial size (%lld, %lld), kernel_size=(%lld, %lld), "
                     "dilation=(%lld, %lld), padding=(%lld, %lld), calculated shape of the array "
                     "of sliding blocks as (%lld, %lld), but its components must be at least one.",
                     (long long)g->height, (long long)g->height, (long long)g->kh, (long long)g->kw,
                     (long long)g->dh, (long long)g->dw, (long long)g->ph, (long long)g->pw,
                     (long long)g->oh, (long long)g->ow);
  if ((rc = float_dtype(opd_tensor_dtype(self), "im2col_out_cpu"))) return rc;
  int64_t rows, cols;
  if (opd_ckd_mul(&rows, c, g->kh * g->kw) || opd_ckd_mul(&cols, g->oh, g->ow))
    return opd_error(OPD_EINVAL, "im2col: the output's sizes overflow int64");
  g->planes = n * c; /* the input's sizes: zero, or a product that fits */
  g->spec.dtype = opd_tensor_dtype(self);
  g->spec.ndim = nd - 1;
  if (nd == 4) g->spec.sizes[0] = n;
  g->spec.sizes[nd - 3] = rows;
  g->spec.sizes[nd - 2] = cols;
  return 0;
}

int opd__col2im_meta(opd_tensor *self, opd_int_list output_size, opd_int_list kernel_size,
                     opd_int_list dilation, opd_int_list padding, opd_int_list stride,
                     opd__fold_geom *g) {
  memset(g, 0, sizeof *g);
  if (output_size.len != 2)
    return opd_error(OPD_EINVAL, "It is expected output_size equals to 2, but got size %lld",
                     (long long)output_size.len);
  int rc = pairs(kernel_size, dilation, padding, stride, g);
  if (rc) return rc;
  for (int i = 0; i < 2; i++)
    if (output_size.data[i] > INT32_MAX || output_size.data[i] < INT32_MIN)
      return opd_error(OPD_EINVAL, "output_size value %lld out of range",
                       (long long)output_size.data[i]);
  const int64_t *s = opd_tensor_sizes(self);
  int nd = self->ndim;
  bool valid = (nd == 2 && s[0] != 0 && s[1] != 0) || (nd == 3 && s[1] != 0 && s[2] != 0);
  if (!valid) {
    char b[256];
    return opd_error(OPD_EINVAL,
                     "Expected 2D or 3D (batch mode) tensor for input with possibly 0 batch size "
                     "and non-zero dimensions for input, but got: %s",
                     opd__format_sizes(s, nd, b, sizeof b));
  }
  int64_t planes_in = s[nd - 2], length = s[nd - 1], k = g->kh * g->kw;
  if (planes_in % k != 0)
    return opd_error(OPD_EINVAL,
                     "Expected size of input's dimension 1 to be divisible by the product of "
                     "kernel_size, but got input.size(1)=%lld and kernel_size=(%lld, %lld).",
                     (long long)planes_in, (long long)g->kh, (long long)g->kw);
  g->height = output_size.data[0];
  g->width = output_size.data[1];
  g->oh = blocks(g->height, g->kh, g->dh, g->ph, g->sh);
  g->ow = blocks(g->width, g->kw, g->dw, g->pw, g->sw);
  char geom[256];
  snprintf(geom, sizeof geom,
           "Given output_size=(%lld, %lld), kernel_size=(%lld, %lld), dilation=(%lld, %lld), "
           "padding=(%lld, %lld), stride=(%lld, %lld), ",
           (long long)g->height, (long long)g->width, (long long)g->kh, (long long)g->kw,
           (long long)g->dh, (long long)g->dw, (long long)g->ph, (long long)g->pw, (long long)g->sh,
           (long long)g->sw);
  if (length != g->oh * g->ow)
    return opd_error(OPD_EINVAL,
                     "%sexpected size of input's dimension 2 to match the calculated number of "
                     "sliding blocks %lld * %lld = %lld, but got input.size(2)=%lld.",
                     geom, (long long)g->oh, (long long)g->ow, (long long)(g->oh * g->ow),
                     (long long)length);
  if (g->oh < 1 || g->ow < 1)
    return opd_error(OPD_EINVAL,
                     "%scalculated shape of the array of sliding blocks as (%lld, %lld), which is "
                     "too small (non-positive)",
                     geom, (long long)g->oh, (long long)g->ow);
  if ((rc = float_dtype(opd_tensor_dtype(self), "col2im_out_cpu"))) return rc;
  int64_t n = nd == 3 ? s[0] : 1, c = planes_in / k;
  g->planes = n * c;
  g->spec.dtype = opd_tensor_dtype(self);
  g->spec.ndim = nd + 1;
  if (nd == 3) g->spec.sizes[0] = n;
  g->spec.sizes[nd - 2] = c;
  g->spec.sizes[nd - 1] = g->height;
  g->spec.sizes[nd] = g->width;
  int64_t numel;
  return opd_ckd_numel(g->spec.sizes, (size_t)g->spec.ndim, &numel, "col2im output");
}

int opd__meta_im2col(const opd_kernel_ctx *ctx, opd_tensor *self, opd_int_list kernel_size,
                     opd_int_list dilation, opd_int_list padding, opd_int_list stride,
                     opd_tensor **out) {
  (void)ctx;
  opd__fold_geom g;
  int rc = opd__im2col_meta(self, kernel_size, dilation, padding, stride, &g);
  return rc ? rc : opd__alloc_output(&g.spec, opd_tensor_device(self), out);
}

int opd__meta_col2im(const opd_kernel_ctx *ctx, opd_tensor *self, opd_int_list output_size,
                     opd_int_list kernel_size, opd_int_list dilation, opd_int_list padding,
                     opd_int_list stride, opd_tensor **out) {
  (void)ctx;
  opd__fold_geom g;
  int rc = opd__col2im_meta(self, output_size, kernel_size, dilation, padding, stride, &g);
  return rc ? rc : opd__alloc_output(&g.spec, opd_tensor_device(self), out);
}

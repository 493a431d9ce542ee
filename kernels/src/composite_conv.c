/* composite_conv.c: the convolution, pooling and padding operators PyTorch 1.13 writes in
 * terms of others, written the same way (through the dispatcher, so they work on every
 * backend and in graphs): conv1d/2d/3d and conv_transpose1d/2d/3d (CompositeImplicitAutograd,
 * an unbatched input gets a batch dim of 1), _convolution (CompositeExplicitAutograd here:
 * PyTorch's aten::convolution calls it, opd's computes and _convolution calls it), max_pool2d,
 * max_pool1d, avg_pool1d, adaptive_avg_pool1d/2d/3d, adaptive_max_pool1d, pad
 * (CompositeImplicitAutograd) and constant_pad_nd (CompositeExplicitAutograd).
 */
#include <stdio.h>
#include <string.h>

#include "opd/checked.h"
#include "src/kernel_util.h"

/* ---- calling other operators ---- */

static int unsqueeze(opd_tensor *t, int64_t dim, opd_tensor **out) {
  static const opd_operator *op;
  opd_stack s;
  opd_stack_init(&s);
  int rc = OPD__PUSH_Tensor(&s, t);
  if (!rc) rc = OPD__PUSH_Int(&s, dim);
  return opd__call_tensor(rc, &op, "aten::unsqueeze", &s, out);
}

static int squeeze_dim(opd_tensor *t, int64_t dim, opd_tensor **out) {
  static const opd_operator *op;
  opd_stack s;
  opd_stack_init(&s);
  int rc = OPD__PUSH_Tensor(&s, t);
  if (!rc) rc = OPD__PUSH_Int(&s, dim);
  return opd__call_tensor(rc, &op, "aten::squeeze.dim", &s, out);
}

/* Releases t and returns rc. */
static int then_release(int rc, opd_tensor *t) {
  if (t) opd_tensor_release(t);
  return rc;
}

/* *out = squeeze(t, dim) when squeeze, else t; takes t's reference. */
static int maybe_squeeze(int rc, opd_tensor *t, bool squeeze, int64_t dim, opd_tensor **out) {
  if (rc) return then_release(rc, t);
  if (!squeeze) {
    *out = t;
    return 0;
  }
  return then_release(squeeze_dim(t, dim, out), t);
}

static int convolution(opd_tensor *input, opd_tensor *weight, opd_tensor *bias, opd_int_list stride,
                       opd_int_list padding, opd_int_list dilation, bool transposed,
                       opd_int_list output_padding, int64_t groups, opd_tensor **out) {
  static const opd_operator *op;
  opd_stack s;
  opd_stack_init(&s);
  int rc = OPD__PUSH_Tensor(&s, input);
  if (!rc) rc = OPD__PUSH_Tensor(&s, weight);
  if (!rc) rc = OPD__PUSH_OptTensor(&s, bias);
  if (!rc) rc = OPD__PUSH_IntList(&s, stride);
  if (!rc) rc = OPD__PUSH_IntList(&s, padding);
  if (!rc) rc = OPD__PUSH_IntList(&s, dilation);
  if (!rc) rc = OPD__PUSH_Bool(&s, transposed);
  if (!rc) rc = OPD__PUSH_IntList(&s, output_padding);
  if (!rc) rc = OPD__PUSH_Int(&s, groups);
  return opd__call_tensor(rc, &op, "aten::convolution", &s, out);
}

/* ---- convolutions ---- */

/* batchify of PyTorch: *batched tells whether input has the batch dim; else it gets one. */
static int batchify(opd_tensor *input, int sdims, const char *name, opd_tensor **out,
                    bool *batched) {
  *batched = input->ndim == sdims + 2;
  if (input->ndim != sdims + 1 && !*batched) {
    char b[256];
    return opd_error(OPD_EINVAL,
                     "Expected %dD (unbatched) or %dD (batched) input to %s, but got input of "
                     "size: %s",
                     sdims + 1, sdims + 2, name,
                     opd__format_sizes(opd_tensor_sizes(input), input->ndim, b, sizeof b));
  }
  if (*batched) {
    opd_tensor_retain(input);
    *out = input;
    return 0;
  }
  return unsqueeze(input, 0, out);
}

static int conv_nd(int sdims, const char *name, opd_tensor *input, opd_tensor *weight,
                   opd_tensor *bias, opd_int_list stride, opd_int_list padding,
                   opd_int_list dilation, bool transposed, opd_int_list output_padding,
                   int64_t groups, opd_tensor **out) {
  static const int64_t zeros[3] = {0, 0, 0};
  opd_tensor *x, *y = NULL;
  bool batched;
  int rc = batchify(input, sdims, name, &x, &batched);
  if (rc) return rc;
  if (!transposed) output_padding = (opd_int_list){zeros, sdims};
  rc = then_release(convolution(x, weight, bias, stride, padding, dilation, transposed,
                                output_padding, groups, &y),
                    x);
  return maybe_squeeze(rc, y, !batched, 0, out);
}

#define DEFINE_CONV(D)                                                                      \
  int opd__cia_conv##D##d(const opd_kernel_ctx *ctx, opd_tensor *input, opd_tensor *weight, \
                          opd_tensor *bias, opd_int_list stride, opd_int_list padding,      \
                          opd_int_list dilation, int64_t groups, opd_tensor **out) {        \
    (void)ctx;                                                                              \
    return conv_nd(D, "conv" #D "d", input, weight, bias, stride, padding, dilation, false, \
                   (opd_int_list){NULL, 0}, groups, out);                                   \
  }
DEFINE_CONV(1)
DEFINE_CONV(2)
DEFINE_CONV(3)

int opd__cia_conv_transpose1d(const opd_kernel_ctx *ctx, opd_tensor *input, opd_tensor *weight,
                              opd_tensor *bias, opd_int_list stride, opd_int_list padding,
                              opd_int_list output_padding, int64_t groups, opd_int_list dilation,
                              opd_tensor **out) {
  (void)ctx;
  return conv_nd(1, "conv_transpose1d", input, weight, bias, stride, padding, dilation, true,
                 output_padding, groups, out);
}

int opd__cia_conv_transpose2d_input(const opd_kernel_ctx *ctx, opd_tensor *input,
                                    opd_tensor *weight, opd_tensor *bias, opd_int_list stride,
                                    opd_int_list padding, opd_int_list output_padding,
                                    int64_t groups, opd_int_list dilation, opd_tensor **out) {
  (void)ctx;
  return conv_nd(2, "conv_transpose2d", input, weight, bias, stride, padding, dilation, true,
                 output_padding, groups, out);
}

int opd__cia_conv_transpose3d_input(const opd_kernel_ctx *ctx, opd_tensor *input,
                                    opd_tensor *weight, opd_tensor *bias, opd_int_list stride,
                                    opd_int_list padding, opd_int_list output_padding,
                                    int64_t groups, opd_int_list dilation, opd_tensor **out) {
  (void)ctx;
  return conv_nd(3, "conv_transpose3d", input, weight, bias, stride, padding, dilation, true,
                 output_padding, groups, out);
}

/* Boxed: its 13 arguments are more than an unboxed kernel takes. The last four choose among
 * a backend's algorithms (opd's kernels have one): dropped, the rest are convolution's. */
int opd__cea_convolution_legacy(const opd_kernel_ctx *ctx, opd_stack *stack) {
  static const opd_operator *op;
  (void)ctx;
  if (stack->size < 13)
    return opd_error(OPD_EINTERNAL, "_convolution: expected 13 arguments on the stack");
  opd_stack_drop(stack, 4);
  return opd__call(&op, "aten::convolution", stack);
}

/* ---- pooling ---- */

/* max_pool2d_with_indices' output (its indices dropped). */
static int max_pool2d_values(opd_tensor *self, opd_int_list kernel_size, opd_int_list stride,
                             opd_int_list padding, opd_int_list dilation, bool ceil_mode,
                             opd_tensor **out) {
  static const opd_operator *op;
  opd_stack s;
  opd_stack_init(&s);
  int rc = OPD__PUSH_Tensor(&s, self);
  if (!rc) rc = OPD__PUSH_IntList(&s, kernel_size);
  if (!rc) rc = OPD__PUSH_IntList(&s, stride);
  if (!rc) rc = OPD__PUSH_IntList(&s, padding);
  if (!rc) rc = OPD__PUSH_IntList(&s, dilation);
  if (!rc) rc = OPD__PUSH_Bool(&s, ceil_mode);
  if (!rc) rc = opd__call(&op, "aten::max_pool2d_with_indices", &s);
  if (!rc && (s.size != 2 || s.items[0].tag != OPD_IV_TENSOR))
    rc = opd_error(OPD_EINTERNAL, "max_pool2d_with_indices did not return two Tensors");
  if (!rc) {
    opd_iv_own(&s.items[0]);
    opd_ivalue indices = opd_stack_pop(&s);
    opd_iv_destroy(&indices);
    *out = opd_stack_pop(&s).u.t;
  }
  opd_stack_destroy(&s);
  return rc;
}

int opd__cia_max_pool2d(const opd_kernel_ctx *ctx, opd_tensor *self, opd_int_list kernel_size,
                        opd_int_list stride, opd_int_list padding, opd_int_list dilation,
                        bool ceil_mode, opd_tensor **out) {
  (void)ctx;
  return max_pool2d_values(self, kernel_size, stride, padding, dilation, ceil_mode, out);
}

int opd__cia_max_pool1d(const opd_kernel_ctx *ctx, opd_tensor *self, opd_int_list kernel_size,
                        opd_int_list stride, opd_int_list padding, opd_int_list dilation,
                        bool ceil_mode, opd_tensor **out) {
  (void)ctx;
  char b[256];
  if (self->ndim != 2 && self->ndim != 3)
    return opd_error(OPD_EINVAL, "max_pool1d() Expected 2D or 3D input tensor, but got %s",
                     opd__format_sizes(opd_tensor_sizes(self), self->ndim, b, sizeof b));
  if (kernel_size.len != 1)
    return opd_error(OPD_EINVAL,
                     "max_pool1d() kernel_size must be an int, list of ints or tuple of ints of "
                     "size 1 but got size %lld",
                     (long long)kernel_size.len);
  if (stride.len != 0 && stride.len != 1)
    return opd_error(OPD_EINVAL,
                     "max_pool1d() stride must be None, an int, list of ints, or tuple of ints of "
                     "size 1 but got size %lld",
                     (long long)stride.len);
  if (padding.len != 1)
    return opd_error(OPD_EINVAL,
                     "max_pool1d() padding must be an int, list of ints, or tuple of ints of size "
                     "1 but got size %lld",
                     (long long)padding.len);
  if (dilation.len != 1)
    return opd_error(OPD_EINVAL,
                     "max_pool1d() dilation must be an int, list of ints or tuple of ints of size "
                     "1 but got size %lld",
                     (long long)dilation.len);
  int64_t k = kernel_size.data[0], s = stride.len ? stride.data[0] : k, p = padding.data[0],
          d = dilation.data[0];
  if (k <= 0)
    return opd_error(OPD_EINVAL, "max_pool1d() kernel_size must be greater than zero, but got %lld",
                     (long long)k);
  if (s <= 0)
    return opd_error(OPD_EINVAL, "max_pool1d() stride must be greater than zero, but got %lld",
                     (long long)s);
  if (p < 0)
    return opd_error(OPD_EINVAL, "max_pool1d() padding must be non-negative, but got %lld",
                     (long long)p);
  if (p > k / 2)
    return opd_error(OPD_EINVAL,
                     "max_pool1d() padding should be at most half of kernel size, but got "
                     "padding=%lld and kernel_size=%lld",
                     (long long)p, (long long)k);
  if (d <= 0)
    return opd_error(OPD_EINVAL, "max_pool1d() dilation must be greater than zero, but got %lld",
                     (long long)d);
  opd_tensor *x, *y = NULL;
  int rc = unsqueeze(self, -2, &x);
  if (rc) return rc;
  rc = max_pool2d_values(x, (opd_int_list){(int64_t[]){1, k}, 2},
                         (opd_int_list){(int64_t[]){1, s}, 2}, (opd_int_list){(int64_t[]){0, p}, 2},
                         (opd_int_list){(int64_t[]){1, d}, 2}, ceil_mode, &y);
  return maybe_squeeze(then_release(rc, x), y, true, -2, out);
}

int opd__cia_avg_pool1d(const opd_kernel_ctx *ctx, opd_tensor *self, opd_int_list kernel_size,
                        opd_int_list stride, opd_int_list padding, bool ceil_mode,
                        bool count_include_pad, opd_tensor **out) {
  static const opd_operator *op;
  (void)ctx;
  if (stride.len == 0) stride = kernel_size;
  if (self->ndim < 2 || self->ndim > 3)
    return opd_error(OPD_EINVAL,
                     "Expected 2 to 3 dimensions, but got %d-dimensional tensor for argument #1 "
                     "'self' (while checking arguments for avg_pool1d)",
                     self->ndim);
  const char *names[3] = {"kernel_size", "stride", "padding"};
  opd_int_list lists[3] = {kernel_size, stride, padding};
  for (int i = 0; i < 3; i++)
    if (lists[i].len != 1)
      return opd_error(OPD_EINVAL, "avg_pool1d() argument '%s' should contain one int (got %lld)",
                       names[i], (long long)lists[i].len);
  opd_tensor *x, *y = NULL;
  int rc = unsqueeze(self, -2, &x);
  if (rc) return rc;
  opd_stack s;
  opd_stack_init(&s);
  rc = OPD__PUSH_Tensor(&s, x);
  if (!rc) rc = OPD__PUSH_IntList(&s, ((opd_int_list){(int64_t[]){1, kernel_size.data[0]}, 2}));
  if (!rc) rc = OPD__PUSH_IntList(&s, ((opd_int_list){(int64_t[]){1, stride.data[0]}, 2}));
  if (!rc) rc = OPD__PUSH_IntList(&s, ((opd_int_list){(int64_t[]){0, padding.data[0]}, 2}));
  if (!rc) rc = OPD__PUSH_Bool(&s, ceil_mode);
  if (!rc) rc = OPD__PUSH_Bool(&s, count_include_pad);
  if (!rc) rc = opd_stack_push(&s, opd_iv_none());
  rc = then_release(opd__call_tensor(rc, &op, "aten::avg_pool2d", &s, &y), x);
  return maybe_squeeze(rc, y, true, -2, out);
}

int opd__cia_adaptive_avg_pool2d(const opd_kernel_ctx *ctx, opd_tensor *self,
                                 opd_int_list output_size, opd_tensor **out) {
  static const opd_operator *mean_op, *pool_op;
  (void)ctx;
  if (output_size.len != 2)
    return opd_error(OPD_EINVAL, "adaptive_avg_pool2d: output_size must be 2");
  if (output_size.data[0] < 0 || output_size.data[1] < 0)
    return opd_error(OPD_EINVAL,
                     "adaptive_avg_pool2d: elements of output_size must be greater than or equal "
                     "to 0 but received {%lld, %lld}",
                     (long long)output_size.data[0], (long long)output_size.data[1]);
  opd_stack s;
  opd_stack_init(&s);
  int rc = OPD__PUSH_Tensor(&s, self);
  if (output_size.data[0] == 1 && output_size.data[1] == 1) {
    /* as PyTorch: the mean over the two spatial dims */
    if (!rc) rc = OPD__PUSH_IntList(&s, ((opd_int_list){(int64_t[]){-1, -2}, 2}));
    if (!rc) rc = OPD__PUSH_Bool(&s, true);
    if (!rc) rc = opd_stack_push(&s, opd_iv_none());
    return opd__call_tensor(rc, &mean_op, "aten::mean.dim", &s, out);
  }
  if (!rc) rc = OPD__PUSH_IntList(&s, output_size);
  return opd__call_tensor(rc, &pool_op, "aten::_adaptive_avg_pool2d", &s, out);
}

/* The checks adaptive_{avg,max}_pool1d make: 2 or 3 dims, one output size. */
static int adaptive_pool1d_check(opd_tensor *self, opd_int_list output_size, const char *name) {
  if (self->ndim < 2 || self->ndim > 3)
    return opd_error(OPD_EINVAL,
                     "Expected 2 to 3 dimensions, but got %d-dimensional tensor for argument #1 "
                     "'self' (while checking arguments for %s)",
                     self->ndim, name);
  if (output_size.len != 1)
    return opd_error(OPD_EINVAL, "%s() argument 'output_size' should contain one int (got %lld)",
                     name, (long long)output_size.len);
  return 0;
}

int opd__cia_adaptive_avg_pool1d(const opd_kernel_ctx *ctx, opd_tensor *self,
                                 opd_int_list output_size, opd_tensor **out) {
  static const opd_operator *op;
  (void)ctx;
  int rc = adaptive_pool1d_check(self, output_size, "adaptive_avg_pool1d");
  opd_tensor *x = NULL, *y = NULL;
  if (!rc) rc = unsqueeze(self, -2, &x);
  if (rc) return rc;
  opd_stack s;
  opd_stack_init(&s);
  rc = OPD__PUSH_Tensor(&s, x);
  if (!rc) rc = OPD__PUSH_IntList(&s, ((opd_int_list){(int64_t[]){1, output_size.data[0]}, 2}));
  rc = then_release(opd__call_tensor(rc, &op, "aten::adaptive_avg_pool2d", &s, &y), x);
  return maybe_squeeze(rc, y, true, -2, out);
}

/* Boxed (two results): adaptive_max_pool2d of self unsqueezed at -2, both results squeezed
 * back. */
int opd__cia_adaptive_max_pool1d(const opd_kernel_ctx *ctx, opd_stack *stack) {
  static const opd_operator *op;
  (void)ctx;
  opd_ivalue *v = opd_stack_last(stack, 2);
  opd_int_list output_size = opd__iv_int_list(&v[1]);
  int rc = v[0].tag == OPD_IV_TENSOR
               ? adaptive_pool1d_check(v[0].u.t, output_size, "adaptive_max_pool1d")
               : opd_error(OPD_EINVAL, "adaptive_max_pool1d: unexpected argument types");
  opd_tensor *x = NULL, *res[2] = {NULL, NULL};
  if (!rc) rc = unsqueeze(v[0].u.t, -2, &x);
  if (!rc) {
    opd_stack s;
    opd_stack_init(&s);
    rc = OPD__PUSH_Tensor(&s, x);
    if (!rc) rc = OPD__PUSH_IntList(&s, ((opd_int_list){(int64_t[]){1, output_size.data[0]}, 2}));
    if (!rc) rc = opd__call(&op, "aten::adaptive_max_pool2d", &s);
    for (int i = 0; i < 2 && !rc; i++) {
      if (s.size != 2 || s.items[i].tag != OPD_IV_TENSOR)
        rc = opd_error(OPD_EINTERNAL, "adaptive_max_pool2d did not return two tensors");
      else
        rc = squeeze_dim(s.items[i].u.t, -2, &res[i]);
    }
    opd_stack_destroy(&s);
  }
  if (x) opd_tensor_release(x);
  opd_stack_drop(stack, 2);
  for (int i = 0; i < 2 && !rc; i++) {
    rc = opd_stack_push(stack, opd_iv_tensor_steal(res[i]));
    res[i] = NULL;
    if (rc && i == 1) opd_stack_drop(stack, 1);
  }
  for (int i = 0; i < 2; i++)
    if (res[i]) opd_tensor_release(res[i]);
  return rc;
}

int opd__cia_adaptive_avg_pool3d(const opd_kernel_ctx *ctx, opd_tensor *self,
                                 opd_int_list output_size, opd_tensor **out) {
  static const opd_operator *mean_op, *pool_op;
  (void)ctx;
  if (output_size.len != 3)
    return opd_error(OPD_EINVAL, "adaptive_avg_pool3d: output_size must be 3");
  const int64_t *o = output_size.data;
  if (o[0] < 0 || o[1] < 0 || o[2] < 0) /* PyTorch's message, which names the 2-d operator */
    return opd_error(OPD_EINVAL,
                     "adaptive_avg_pool2d: elements of output_size must be greater than or equal "
                     "to 0 but received {%lld, %lld,%lld}",
                     (long long)o[0], (long long)o[1], (long long)o[2]);
  opd_stack s;
  opd_stack_init(&s);
  int rc = OPD__PUSH_Tensor(&s, self);
  if (o[0] == 1 && o[1] == 1 && o[2] == 1) {
    /* as PyTorch: the mean over the three spatial dims */
    if (!rc) rc = OPD__PUSH_IntList(&s, ((opd_int_list){(int64_t[]){-1, -2, -3}, 3}));
    if (!rc) rc = OPD__PUSH_Bool(&s, true);
    if (!rc) rc = opd_stack_push(&s, opd_iv_none());
    return opd__call_tensor(rc, &mean_op, "aten::mean.dim", &s, out);
  }
  if (!rc) rc = OPD__PUSH_IntList(&s, output_size);
  return opd__call_tensor(rc, &pool_op, "aten::_adaptive_avg_pool3d", &s, out);
}

/* ---- constant_pad_nd ---- */

/* narrow(t, dim, start, length) of PyTorch (its checks), as a slice; takes t's reference. */
static int narrow(opd_tensor *t, int64_t dim, int64_t start, int64_t length, opd_tensor **out) {
  static const opd_operator *op;
  int64_t cur = opd_tensor_sizes(t)[dim];
  if (start != cur && (start < -cur || start >= cur)) {
    int64_t w;
    return then_release(opd__wrap_dim(start, cur, &w), t);
  }
  if (start < 0) start += cur;
  if (length < 0 || start > cur - length)
    return then_release(opd_error(OPD_EINVAL,
                                  "start (%lld) + length (%lld) exceeds dimension size (%lld).",
                                  (long long)start, (long long)length, (long long)cur),
                        t);
  opd_stack s;
  opd_stack_init(&s);
  int rc = OPD__PUSH_Tensor(&s, t);
  if (!rc) rc = OPD__PUSH_Int(&s, dim);
  if (!rc) rc = OPD__PUSH_OptInt(&s, ((opd_opt_int){true, start}));
  if (!rc) rc = OPD__PUSH_OptInt(&s, ((opd_opt_int){true, start + length}));
  if (!rc) rc = OPD__PUSH_Int(&s, 1);
  return then_release(opd__call_tensor(rc, &op, "aten::slice.Tensor", &s, out), t);
}

static int clone(opd_tensor *t, opd_tensor **out) {
  static const opd_operator *op;
  opd_stack s;
  opd_stack_init(&s);
  int rc = OPD__PUSH_Tensor(&s, t);
  if (!rc) rc = opd_stack_push(&s, opd_iv_none());
  return opd__call_tensor(rc, &op, "aten::clone", &s, out);
}

static int fill_(opd_tensor *t, opd_scalar value) {
  static const opd_operator *op;
  opd_stack s;
  opd_stack_init(&s);
  int rc = OPD__PUSH_Tensor(&s, t);
  if (!rc) rc = OPD__PUSH_Scalar(&s, value);
  return opd__call_inplace(rc, &op, "aten::fill_.Scalar", &s);
}

int opd__cea_constant_pad_nd(const opd_kernel_ctx *ctx, opd_tensor *self, opd_int_list pad,
                             opd_scalar value, opd_tensor **out) {
  (void)ctx;
  if (pad.len % 2 != 0)
    return opd_error(OPD_EINVAL, "Length of pad must be even but instead it equals %lld",
                     (long long)pad.len);
  int64_t l_inp = self->ndim, l_pad = pad.len / 2, l_diff = l_inp - l_pad;
  if (l_inp < l_pad)
    return opd_error(OPD_EINVAL,
                     "Length of pad should be no more than twice the number of dimensions of the "
                     "input. Pad length is %lldwhile the input has %llddimensions.",
                     (long long)pad.len, (long long)l_inp);
  const int64_t *sizes = opd_tensor_sizes(self);
  for (int64_t i = 0; i < pad.len; i++)
    if (pad.data[i] > INT32_MAX || pad.data[i] < INT32_MIN)
      return opd_error(OPD_EINVAL, "constant_pad_nd: pad %lld out of range",
                       (long long)pad.data[i]);
  /* negative pads crop the input first */
  bool all_non_positive = true;
  opd_tensor *c_input = self;
  opd_tensor_retain(c_input);
  int rc = 0;
  for (int64_t i = l_diff; i < l_inp && !rc; i++) {
    int64_t pi = 2 * (l_inp - i - 1);
    if (pad.data[pi] < 0)
      rc = narrow(c_input, i, -pad.data[pi], opd_tensor_sizes(c_input)[i] + pad.data[pi], &c_input);
    else if (pad.data[pi] != 0)
      all_non_positive = false;
    if (rc) return rc;
    if (pad.data[pi + 1] < 0)
      rc = narrow(c_input, i, 0, opd_tensor_sizes(c_input)[i] + pad.data[pi + 1], &c_input);
    else if (pad.data[pi + 1] != 0)
      all_non_positive = false;
  }
  if (rc) return rc;
  if (all_non_positive) return then_release(clone(c_input, out), c_input);
  int64_t shape[OPD_MAX_DIMS];
  for (int64_t i = 0; i < l_inp; i++) {
    shape[i] = sizes[i];
    if (i < l_diff) continue;
    int64_t pi = 2 * (l_inp - i - 1);
    shape[i] = sizes[i] + pad.data[pi] + pad.data[pi + 1];
    if (shape[i] < 0)
      return then_release(
          opd_error(OPD_EINVAL,
                    "The input size %lld, plus negative padding %lld and %lld resulted in a "
                    "negative output size, which is invalid. Check dimension %lld of your input.",
                    (long long)sizes[i], (long long)pad.data[pi], (long long)pad.data[pi + 1],
                    (long long)i),
          c_input);
  }
  opd_tensor *output = NULL, *c_output;
  rc = opd__call_empty((opd_int_list){shape, l_inp}, opd_tensor_dtype(self), -1,
                       opd_tensor_device(self), (opd_opt_bool){false, false}, -1, &output);
  if (!rc) rc = fill_(output, value);
  if (rc) {
    opd_tensor_release(c_input);
    return then_release(rc, output);
  }
  c_output = output;
  opd_tensor_retain(c_output);
  for (int64_t i = l_diff; i < l_inp && !rc; i++) {
    int64_t pi = 2 * (l_inp - i - 1);
    if (pad.data[pi] > 0)
      rc = narrow(c_output, i, pad.data[pi], opd_tensor_sizes(c_output)[i] - pad.data[pi],
                  &c_output);
    if (!rc && pad.data[pi + 1] > 0)
      rc = narrow(c_output, i, 0, opd_tensor_sizes(c_output)[i] - pad.data[pi + 1], &c_output);
  }
  if (!rc) rc = then_release(opd__call_copy_(c_output, c_input, false), c_output);
  opd_tensor_release(c_input);
  if (rc) return then_release(rc, output);
  *out = output;
  return 0;
}

/* ---- pad ---- */

/* aten::pad(self, pad, mode, value): constant_pad_nd, or the reflection or replication pad of
 * as many dims as pad has pairs (PyTorch 1.13's _pad_enum and its checks). Boxed: `float?` has
 * no unboxed tag. */
int opd__cia_pad(const opd_kernel_ctx *ctx, opd_stack *stack) {
  static const opd_operator *constant_op, *pad_ops[2][3];
  static const char *const pad_names[2][3] = {
      {"aten::reflection_pad1d", "aten::reflection_pad2d", "aten::reflection_pad3d"},
      {"aten::replication_pad1d", "aten::replication_pad2d", "aten::replication_pad3d"}};
  (void)ctx;
  if (stack->size < 4) return opd_error(OPD_EINTERNAL, "pad: expected 4 arguments on the stack");
  opd_ivalue *v = opd_stack_last(stack, 4);
  if (v[0].tag != OPD_IV_TENSOR || v[2].tag != OPD_IV_STRING ||
      (v[3].tag != OPD_IV_DOUBLE && v[3].tag != OPD_IV_INT && v[3].tag != OPD_IV_NONE)) {
    opd_stack_drop(stack, 4);
    return opd_error(OPD_EINVAL, "pad: unexpected argument types");
  }
  opd_tensor *self = v[0].u.t;
  opd_int_list pad = opd__iv_int_list(&v[1]);
  const char *mode = v[2].u.s;
  bool has_value = v[3].tag != OPD_IV_NONE;
  double value = v[3].tag == OPD_IV_DOUBLE ? v[3].u.d
                 : v[3].tag == OPD_IV_INT  ? (double)v[3].u.i
                                           : 0.0;
  int m = strcmp(mode, "constant") == 0    ? 0
          : strcmp(mode, "reflect") == 0   ? 1
          : strcmp(mode, "replicate") == 0 ? 2
          : strcmp(mode, "circular") == 0  ? 3
                                           : -1;
  int rc = 0;
  if (m < 0)
    rc = opd_error(OPD_EINVAL, "Unrecognised padding mode %s", mode);
  else if (pad.len < 0 || pad.len % 2 != 0)
    rc = opd_error(OPD_EINVAL, "Padding length must be divisible by 2");
  else if (pad.len > 2 * (int64_t)self->ndim)
    rc = opd_error(OPD_EINVAL,
                   "Padding length should be less than or equal to two times the input dimension "
                   "but got padding length %lld and input of dimension %d",
                   (long long)pad.len, self->ndim);
  else if (m != 0 && has_value && value != 0)
    rc = opd_error(OPD_EINVAL, "Padding mode \"%s\" doesn't take in value argument", mode);
  int dims = (int)(pad.len / 2);
  if (!rc && m != 0 && (dims < 1 || dims > 3 || self->ndim < dims + 1 || self->ndim > dims + 2))
    rc = opd_error(OPD_EINVAL,
                   "Only 2D, 3D, 4D, 5D padding with non-constant padding are supported for now");
  if (!rc && m == 3) rc = opd_error(OPD_EINVAL, "pad: mode \"circular\" is not supported");
  opd_stack s;
  opd_stack_init(&s);
  opd_tensor *out = NULL;
  if (!rc) {
    rc = OPD__PUSH_Tensor(&s, self);
    if (!rc) rc = OPD__PUSH_IntList(&s, pad);
    if (m == 0) {
      if (!rc) rc = OPD__PUSH_Scalar(&s, opd__scalar_double(value));
      rc = opd__call_tensor(rc, &constant_op, "aten::constant_pad_nd", &s, &out);
    } else {
      rc = opd__call_tensor(rc, &pad_ops[m - 1][dims - 1], pad_names[m - 1][dims - 1], &s, &out);
    }
  }
  opd_stack_drop(stack, 4);
  return rc ? rc : opd_stack_push(stack, opd_iv_tensor_steal(out));
}

/* conv.c: the CPU kernels of aten::convolution and aten::convolution_backward (checks and
 * shapes in kernels/meta/conv_meta.c). Each is one or two of the plain convolution's three
 * operations ([Note: Convolution as three products] in conv_meta.h) on contiguous operands:
 * through oneDNN in float32 (conv_onednn.c), else, and where oneDNN declines a geometry,
 * by im2col and gemm (conv_direct.c). The bias is added, and its gradient summed, here.
 * float32 and float64 are computed, and the forward of bfloat16 in float32 (as PyTorch's
 * mkldnn path does); PyTorch's other CPU dtypes (bfloat16 gradients, integers through its
 * slow path) are refused with a clear error.
 */
#include <string.h>

#include "conv_impl.h"
#include "src/kernel_util.h"
#include "src/parallel.h"

int opd__cpu_contiguous(opd_tensor *t, opd_tensor **out) {
  static const opd_operator *op;
  opd_stack s;
  opd_stack_init(&s);
  int rc = opd_stack_push(&s, opd_iv_tensor_borrow(t));
  if (!rc) rc = opd_stack_push(&s, opd_iv_int(0));
  return opd__call_tensor(rc, &op, "aten::contiguous", &s, out);
}

static int check_dtype(opd_dtype t, const char *op) {
  if (t == OPD_FLOAT32 || t == OPD_FLOAT64) return 0;
  return opd_error(OPD_EINVAL, "%s: dtype %s is not supported on the CPU (float32 and float64 are)",
                   op, opd_dtype_name(t));
}

/* aten::_to_copy(t, dtype) through the dispatcher. */
static int to_dtype(opd_tensor *t, opd_dtype dtype, opd_tensor **out) {
  static const opd_operator *op;
  opd_stack s;
  opd_stack_init(&s);
  int rc = OPD__PUSH_Tensor(&s, t);
  if (!rc) rc = OPD__PUSH_OptDType(&s, dtype);
  if (!rc) rc = OPD__PUSH_OptLayout(&s, -1);
  if (!rc) rc = OPD__PUSH_OptDevice(&s, ((opd_device){-1, -1}));
  if (!rc) rc = OPD__PUSH_OptBool(&s, ((opd_opt_bool){false, false}));
  if (!rc) rc = OPD__PUSH_Bool(&s, false);
  if (!rc) rc = OPD__PUSH_OptMemoryFormat(&s, -1);
  return opd__call_tensor(rc, &op, "aten::_to_copy", &s, out);
}

static int run(opd__conv_op op, const opd__conv_geom *g, void *x, void *w, void *y) {
  opd__conv_bufs b = {x, w, y};
  int rc = opd__conv_onednn(op, g, &b);
  return rc == OPD__CONV_DECLINED ? opd__conv_direct(op, g, &b) : rc;
}

/* A transposed convolution's forward: the plain one's input gradient. PyTorch 1.13 computes a
 * transposed 3-d convolution by im2col and gemm (slow_conv_transpose3d), whose sums are
 * several times more accurate on long reductions than oneDNN's order here (PyTorch's OpInfo
 * samples measured 3.8x eager float32's error against float64): 3-d goes the same way. */
static int run_transposed(const opd__conv_geom *g, void *x, void *w, void *y) {
  if (g->sdims != 3) return run(OPD__CONV_BWD_DATA, g, x, w, y);
  opd__conv_bufs b = {x, w, y};
  return opd__conv_direct(OPD__CONV_BWD_DATA, g, &b);
}

/* out [n, c, rest] += bias[c] (bias of any strides). */
typedef struct bias_ctx {
  bool dbl;
  char *out;
  const char *bias;
  int64_t bias_stride, c, rest;
} bias_ctx;

static void bias_task(void *ctx, int64_t begin, int64_t end) {
  bias_ctx *b = ctx;
  for (int64_t i = begin; i < end; i++) { /* i = image * c + channel */
    int64_t ch = i % b->c;
    if (b->dbl) {
      double v = ((const double *)b->bias)[ch * b->bias_stride],
             *o = (double *)b->out + i * b->rest;
      for (int64_t j = 0; j < b->rest; j++) o[j] += v;
    } else {
      float v = ((const float *)b->bias)[ch * b->bias_stride], *o = (float *)b->out + i * b->rest;
      for (int64_t j = 0; j < b->rest; j++) o[j] += v;
    }
  }
}

static void add_bias(opd_tensor *out, opd_tensor *bias) {
  const int64_t *s = opd_tensor_sizes(out);
  int64_t rest = 1;
  for (int d = 2; d < out->ndim; d++) rest *= s[d];
  bias_ctx b = {.dbl = opd_tensor_dtype(out) == OPD_FLOAT64,
                .out = opd_tensor_data(out),
                .bias = opd_tensor_data(bias),
                .bias_stride = opd_tensor_strides(bias)[0],
                .c = s[1],
                .rest = rest};
  if (out->numel == 0) return;
  opd__parallel_for(0, s[0] * s[1],
                    rest >= OPD_GRAIN_ELEMENTWISE ? 1 : OPD_GRAIN_ELEMENTWISE / rest, bias_task,
                    &b);
}

int opd__cpu_convolution(const opd_kernel_ctx *ctx, opd_tensor *input, opd_tensor *weight,
                         opd_tensor *bias, opd_int_list stride, opd_int_list padding,
                         opd_int_list dilation, bool transposed, opd_int_list output_padding,
                         int64_t groups, opd_tensor **out) {
  (void)ctx;
  opd__conv_args a = {stride, padding, dilation, output_padding, transposed, groups};
  opd__conv_geom g;
  opd_out_spec spec;
  opd_device device;
  int rc = opd__conv_meta(input, weight, bias, &a, &g, &spec, &device);
  if (!rc && g.dtype == OPD_BFLOAT16) {
    /* as PyTorch's mkldnn path: float32 products, the result rounded once */
    opd_tensor *xf = NULL, *wf = NULL, *bf = NULL, *yf = NULL;
    rc = to_dtype(input, OPD_FLOAT32, &xf);
    if (!rc) rc = to_dtype(weight, OPD_FLOAT32, &wf);
    if (!rc && bias) rc = to_dtype(bias, OPD_FLOAT32, &bf);
    if (!rc)
      rc = opd__cpu_convolution(ctx, xf, wf, bf, stride, padding, dilation, transposed,
                                output_padding, groups, &yf);
    if (!rc) rc = to_dtype(yf, OPD_BFLOAT16, out);
    opd_tensor *held[] = {xf, wf, bf, yf};
    for (int i = 0; i < 4; i++)
      if (held[i]) opd_tensor_release(held[i]);
    return rc;
  }
  if (!rc) rc = check_dtype(g.dtype, "convolution");
  if (rc) return rc;
  opd_tensor *x = NULL, *w = NULL, *y = NULL;
  rc = opd__cpu_contiguous(input, &x);
  if (!rc) rc = opd__cpu_contiguous(weight, &w);
  if (!rc) rc = opd__alloc_output(&spec, device, &y);
  if (!rc) {
    /* a transposed convolution is the plain one's input gradient */
    if (transposed)
      rc = run_transposed(&g, opd_tensor_data(y), opd_tensor_data(w), opd_tensor_data(x));
    else
      rc = run(OPD__CONV_FWD, &g, opd_tensor_data(x), opd_tensor_data(w), opd_tensor_data(y));
  }
  if (!rc && bias) add_bias(y, bias);
  if (x) opd_tensor_release(x);
  if (w) opd_tensor_release(w);
  if (rc) {
    if (y) opd_tensor_release(y);
    return rc;
  }
  *out = y;
  return 0;
}

/* grad_bias[c] = the sum of grad_output [n, c, rest] over n and rest, in double. */
static void bias_grad(opd_tensor *go, opd_tensor *gb) {
  const int64_t *s = opd_tensor_sizes(go);
  int64_t rest = 1;
  for (int d = 2; d < go->ndim; d++) rest *= s[d];
  bool dbl = opd_tensor_dtype(go) == OPD_FLOAT64;
  const char *p = opd_tensor_data(go);
  for (int64_t c = 0; c < s[1]; c++) {
    double sum = 0;
    for (int64_t n = 0; n < s[0]; n++) {
      int64_t base = (n * s[1] + c) * rest;
      if (dbl)
        for (int64_t j = 0; j < rest; j++) sum += ((const double *)p)[base + j];
      else
        for (int64_t j = 0; j < rest; j++) sum += ((const float *)p)[base + j];
    }
    if (dbl)
      ((double *)opd_tensor_data(gb))[c] = sum;
    else
      ((float *)opd_tensor_data(gb))[c] = (float)sum;
  }
}

static int conv_backward(const opd__conv_geom *g, bool transposed, opd_tensor *grad_output,
                         opd_tensor *input, opd_tensor *weight, opd_tensor *const *res) {
  int rc = check_dtype(g->dtype, "convolution_backward");
  if (rc) return rc;
  opd_tensor *go = NULL, *x = NULL, *w = NULL;
  rc = opd__cpu_contiguous(grad_output, &go);
  if (!rc) rc = opd__cpu_contiguous(input, &x);
  if (!rc) rc = opd__cpu_contiguous(weight, &w);
  void *gop = rc ? NULL : opd_tensor_data(go), *xp = rc ? NULL : opd_tensor_data(x),
       *wp = rc ? NULL : opd_tensor_data(w);
  if (!rc && res[0]) {
    void *gi = opd_tensor_data(res[0]);
    rc = transposed ? run(OPD__CONV_FWD, g, gop, wp, gi) : run(OPD__CONV_BWD_DATA, g, gi, wp, gop);
  }
  if (!rc && res[1]) {
    void *gw = opd_tensor_data(res[1]);
    rc = transposed ? run(OPD__CONV_BWD_WEIGHTS, g, gop, gw, xp)
                    : run(OPD__CONV_BWD_WEIGHTS, g, xp, gw, gop);
  }
  if (!rc && res[2]) bias_grad(go, res[2]);
  if (go) opd_tensor_release(go);
  if (x) opd_tensor_release(x);
  if (w) opd_tensor_release(w);
  return rc;
}

int opd__cpu_convolution_backward(const opd_kernel_ctx *ctx, opd_stack *stack) {
  (void)ctx;
  return opd__conv_backward_kernel(stack, conv_backward);
}

/* cuda_conv.c: the CUDA kernels of aten::convolution and aten::convolution_backward, float32
 * and float64: the plain convolution's three operations ([Note: Convolution as three
 * products] in kernels/meta/conv_meta.h) by im2col (conv.cu) and cuBLAS (linalg.cu), image by
 * image and group by group, as [Note: Convolution by im2col] (kernels/cpu/conv_direct.c)
 * describes; the bias is added and its gradient summed by the elementwise and reduction
 * operators, through the dispatcher. */
#include <string.h>

#include "cuda_internal.h"
#include "meta/conv_meta.h"
#include "opd/cuda.h"

enum { FWD, BWD_DATA, BWD_WEIGHTS };

static int call1(const opd_operator **cache, const char *name, opd_stack *s, int rc,
                 opd_tensor **out) {
  return opd__call_tensor(rc, cache, name, s, out);
}

static int contiguous(opd_tensor *t, opd_tensor **out) {
  static const opd_operator *op;
  opd_stack s;
  opd_stack_init(&s);
  int rc = OPD__PUSH_Tensor(&s, t);
  if (!rc) rc = OPD__PUSH_Int(&s, 0);
  return call1(&op, "aten::contiguous", &s, rc, out);
}

typedef struct plan {
  int device, dtype;
  int64_t es, n, groups, icg, ocg, rows, in_n, out_n;
  opd__cuda_im2col u; /* x and col set per image */
} plan;

static int gemm(const plan *p, int64_t m, int64_t n, int64_t k, const void *a, int64_t a_rs,
                int64_t a_cs, const void *b, int64_t b_rs, int64_t b_cs, void *c, double beta) {
  opd__cuda_gemm g = {.dtype = p->dtype,
                      .batch = 1,
                      .m = m,
                      .n = n,
                      .k = k,
                      .a = a,
                      .b = b,
                      .c = c,
                      .a_rs = a_rs,
                      .a_cs = a_cs,
                      .b_rs = b_rs,
                      .b_cs = b_cs,
                      .alpha = 1.0,
                      .beta = beta};
  return opd__cuda_launch_gemm(p->device, &g);
}

/* One operation over every image and group (x, w, y contiguous; the written one overwritten). */
static int run(int op, const opd__conv_geom *g, int device, char *x, char *w, char *y) {
  plan p = {.device = device,
            .dtype = g->dtype,
            .es = g->dtype == OPD_FLOAT64 ? 8 : 4,
            .n = g->n,
            .groups = g->groups,
            .icg = g->in_c / g->groups,
            .ocg = g->out_c / g->groups};
  int lead = 3 - g->sdims;
  p.u = (opd__cuda_im2col){.dtype = g->dtype, .icg = p.icg};
  for (int i = 0; i < 3; i++) {
    bool have = i >= lead;
    p.u.in[i] = have ? g->in[i - lead] : 1;
    p.u.out[i] = have ? g->out[i - lead] : 1;
    p.u.k[i] = have ? g->k[i - lead] : 1;
    p.u.stride[i] = have ? g->stride[i - lead] : 1;
    p.u.pad[i] = have ? g->pad[i - lead] : 0;
    p.u.dil[i] = have ? g->dil[i - lead] : 1;
  }
  p.in_n = p.u.in[0] * p.u.in[1] * p.u.in[2];
  p.out_n = p.u.out[0] * p.u.out[1] * p.u.out[2];
  p.rows = p.icg * p.u.k[0] * p.u.k[1] * p.u.k[2];
  /* the sizes of tensors that exist: no overflow */
  size_t x_bytes = (size_t)(p.n * g->in_c * p.in_n * p.es),
         w_bytes = (size_t)(g->out_c * p.rows * p.es),
         y_bytes = (size_t)(p.n * g->out_c * p.out_n * p.es);
  if (p.n == 0 || p.rows == 0 || p.out_n == 0 || p.ocg == 0) { /* sums of nothing */
    void *dst = op == FWD ? (void *)y : op == BWD_DATA ? (void *)x : (void *)w;
    size_t bytes = op == FWD ? y_bytes : op == BWD_DATA ? x_bytes : w_bytes;
    return bytes ? opd__cuda_memset0(device, dst, bytes) : 0;
  }
  if (p.rows > INT32_MAX || p.out_n > INT32_MAX || p.ocg > INT32_MAX ||
      p.rows > INT64_MAX / p.out_n)
    return opd_error(OPD_EINVAL, "convolution: the unfolded input (%lld x %lld) is too large",
                     (long long)p.rows, (long long)p.out_n);
  opd_tensor *col = NULL;
  int64_t col_n = p.rows * p.out_n;
  int rc = opd_tensor_empty(&col_n, 1, g->dtype, (opd_device){OPD_DEVICE_CUDA, device}, &col);
  if (rc) return rc;
  p.u.col = opd_tensor_data(col);
  for (int64_t n = 0; n < p.n && !rc; n++)
    for (int64_t grp = 0; grp < p.groups && !rc; grp++) {
      char *xg = x + (n * p.groups + grp) * p.icg * p.in_n * p.es;
      char *yg = y + (n * p.groups + grp) * p.ocg * p.out_n * p.es;
      char *wg = w + grp * p.ocg * p.rows * p.es;
      p.u.x = xg;
      switch (op) {
      case FWD: /* y_g = w_g @ col */
        p.u.fold = 0;
        rc = opd__cuda_launch_im2col(device, &p.u);
        if (!rc) rc = gemm(&p, p.ocg, p.out_n, p.rows, wg, p.rows, 1, p.u.col, p.out_n, 1, yg, 0.0);
        break;
      case BWD_DATA: /* col = w_g^T @ gy_g, folded into gx */
        rc = gemm(&p, p.rows, p.out_n, p.ocg, wg, 1, p.rows, yg, p.out_n, 1, p.u.col, 0.0);
        p.u.fold = 1;
        if (!rc) rc = opd__cuda_launch_im2col(device, &p.u);
        break;
      default: /* gw_g += gy_g @ col^T */
        p.u.fold = 0;
        rc = opd__cuda_launch_im2col(device, &p.u);
        if (!rc)
          rc = gemm(&p, p.ocg, p.rows, p.out_n, yg, p.out_n, 1, p.u.col, 1, p.out_n, wg,
                    n == 0 ? 0.0 : 1.0);
        break;
      }
    }
  opd_tensor_release(col);
  return rc;
}

static int check_dtype(opd_dtype t, const char *op) {
  if (t == OPD_FLOAT32 || t == OPD_FLOAT64) return 0;
  return opd_error(OPD_EINVAL, "%s: dtype %s is not supported on CUDA (float32 and float64 are)",
                   op, opd_dtype_name(t));
}

/* y + bias viewed as [C, 1, ...] (a new tensor) */
static int add_bias(opd_tensor *y, opd_tensor *bias, opd_tensor **out) {
  static const opd_operator *view_op, *add_op;
  int64_t shape[OPD_MAX_DIMS];
  shape[0] = opd_tensor_sizes(bias)[0];
  for (int i = 1; i < y->ndim - 1; i++) shape[i] = 1;
  opd_tensor *b = NULL;
  opd_stack s;
  opd_stack_init(&s);
  int rc = OPD__PUSH_Tensor(&s, bias);
  if (!rc) rc = OPD__PUSH_IntList(&s, ((opd_int_list){shape, y->ndim - 1}));
  rc = call1(&view_op, "aten::view", &s, rc, &b);
  if (rc) return rc;
  opd_stack_init(&s);
  rc = OPD__PUSH_Tensor(&s, y);
  if (!rc) rc = OPD__PUSH_Tensor(&s, b);
  if (!rc) rc = OPD__PUSH_Scalar(&s, opd__scalar_int(1));
  rc = call1(&add_op, "aten::add.Tensor", &s, rc, out);
  opd_tensor_release(b);
  return rc;
}

int opd__cuda_convolution(const opd_kernel_ctx *ctx, opd_tensor *input, opd_tensor *weight,
                          opd_tensor *bias, opd_int_list stride, opd_int_list padding,
                          opd_int_list dilation, bool transposed, opd_int_list output_padding,
                          int64_t groups, opd_tensor **out) {
  (void)ctx;
  opd__conv_args a = {stride, padding, dilation, output_padding, transposed, groups};
  opd__conv_geom g;
  opd_out_spec spec;
  opd_device device;
  int rc = opd__conv_meta(input, weight, bias, &a, &g, &spec, &device);
  if (!rc) rc = check_dtype(g.dtype, "convolution");
  if (rc) return rc;
  opd_tensor *x = NULL, *w = NULL, *y = NULL;
  rc = contiguous(input, &x);
  if (!rc) rc = contiguous(weight, &w);
  if (!rc) rc = opd__alloc_output(&spec, device, &y);
  if (!rc)
    rc = transposed ? run(BWD_DATA, &g, device.index, opd_tensor_data(y), opd_tensor_data(w),
                          opd_tensor_data(x))
                    : run(FWD, &g, device.index, opd_tensor_data(x), opd_tensor_data(w),
                          opd_tensor_data(y));
  if (x) opd_tensor_release(x);
  if (w) opd_tensor_release(w);
  if (!rc && bias) {
    opd_tensor *yb = NULL;
    rc = add_bias(y, bias, &yb);
    opd_tensor_release(y);
    y = yb;
  }
  if (rc) {
    if (y) opd_tensor_release(y);
    return rc;
  }
  *out = y;
  return 0;
}

/* grad_bias = grad_output summed over every dim but 1 */
static int bias_grad(opd_tensor *go, opd_tensor *gb) {
  static const opd_operator *op;
  int64_t dims[OPD_MAX_DIMS];
  int nd = 0;
  for (int i = 0; i < go->ndim; i++)
    if (i != 1) dims[nd++] = i;
  opd_tensor *sum = NULL;
  opd_stack s;
  opd_stack_init(&s);
  int rc = OPD__PUSH_Tensor(&s, go);
  if (!rc) rc = OPD__PUSH_OptIntList(&s, ((opd_int_list){dims, nd}));
  if (!rc) rc = OPD__PUSH_Bool(&s, false);
  if (!rc) rc = OPD__PUSH_OptDType(&s, OPD_DTYPE_UNDEFINED);
  rc = call1(&op, "aten::sum.dim_IntList", &s, rc, &sum);
  if (!rc) rc = opd__call_copy_(gb, sum, false);
  if (sum) opd_tensor_release(sum);
  return rc;
}

static int conv_backward(const opd__conv_geom *g, bool transposed, opd_tensor *grad_output,
                         opd_tensor *input, opd_tensor *weight, opd_tensor *const *res) {
  int rc = check_dtype(g->dtype, "convolution_backward");
  if (rc) return rc;
  int device = opd_tensor_device(input).index;
  opd_tensor *go = NULL, *x = NULL, *w = NULL;
  rc = contiguous(grad_output, &go);
  if (!rc) rc = contiguous(input, &x);
  if (!rc) rc = contiguous(weight, &w);
  char *gop = rc ? NULL : opd_tensor_data(go), *xp = rc ? NULL : opd_tensor_data(x),
       *wp = rc ? NULL : opd_tensor_data(w);
  if (!rc && res[0]) {
    char *gi = opd_tensor_data(res[0]);
    rc = transposed ? run(FWD, g, device, gop, wp, gi) : run(BWD_DATA, g, device, gi, wp, gop);
  }
  if (!rc && res[1]) {
    char *gw = opd_tensor_data(res[1]);
    rc = transposed ? run(BWD_WEIGHTS, g, device, gop, gw, xp)
                    : run(BWD_WEIGHTS, g, device, xp, gw, gop);
  }
  if (!rc && res[2]) rc = bias_grad(go, res[2]);
  if (go) opd_tensor_release(go);
  if (x) opd_tensor_release(x);
  if (w) opd_tensor_release(w);
  return rc;
}

int opd__cuda_convolution_backward(const opd_kernel_ctx *ctx, opd_stack *stack) {
  (void)ctx;
  return opd__conv_backward_kernel(stack, conv_backward);
}

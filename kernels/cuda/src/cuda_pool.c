/* cuda_pool.c: the CUDA kernels of the poolings (max_pool2d/3d_with_indices,
 * adaptive_max_pool2d, avg_pool2d, _adaptive_avg_pool2d) and their backward operators: the
 * CPU kernels' wrappers (kernels/meta/pool_meta.c), contiguous operands on the device and
 * pool.cu's kernels ([Note: CUDA pooling]).
 */
#include "cuda_ew.h"
#include "cuda_internal.h"
#include "cuda_kernels.h"
#include "meta/pool_meta.h"

_Static_assert(OPD__POOL_MAX == 0 && OPD__POOL_AVG == 1 && OPD__POOL_ADAPTIVE_AVG == 2 &&
                   OPD__POOL_ADAPTIVE_MAX == 3,
               "pooling kinds of pool.cu");

/* CUDA's forward (src the input, indices written for max) or backward (src grad_output, indices
 * read) pooling of g into out ([Note: A pooling's wrapper and its device's run] in
 * kernels/meta/pool_meta.h). */
static int pool_run(const opd__pool_geom *g, bool backward, opd_tensor *src, opd_tensor *out,
                    opd_tensor *indices, const char *op) {
  opd_tensor *x = NULL, *ix = NULL;
  int device = opd__cuda_dev_of(out), bad = 0;
  int rc = opd__cuda_contiguous(src, &x);
  if (!rc && backward && indices) rc = opd__cuda_contiguous(indices, &ix);
  if (!rc && backward && out->numel > 0)
    rc = opd__cuda_memset0(device, opd_tensor_data(out),
                           (size_t)out->numel * opd_dtype_size(opd_tensor_dtype(out)));
  opd__cuda_pool d = {.kind = g->kind,
                      .dtype = g->spec.dtype,
                      .backward = backward,
                      .planes = g->planes,
                      .count_include_pad = g->count_include_pad,
                      .has_divisor = g->has_divisor,
                      .divisor = g->divisor,
                      .src = x ? opd_tensor_data(x) : NULL,
                      .dst = opd_tensor_data(out),
                      .idx = !backward && indices ? opd_tensor_data(indices) : NULL,
                      .gidx = ix ? opd_tensor_data(ix) : NULL};
  for (int k = 0; k < 3; k++) {
    d.in[k] = g->in[k];
    d.out[k] = g->out[k];
    d.k[k] = g->k[k];
    d.stride[k] = g->stride[k];
    d.pad[k] = g->pad[k];
    d.dil[k] = g->dil[k];
  }
  bool reads_indices = backward && ix;
  if (!rc && reads_indices) rc = opd__cuda_flag_new(device, &d.bad);
  if (!rc) {
    rc = opd__cuda_launch_pool(device, &d);
    if (reads_indices) {
      int rc2 = opd__cuda_flag_take(device, d.bad, &bad);
      if (!rc) rc = rc2;
      if (!rc && bad) rc = opd_error(OPD_EINVAL, "%s: an index is out of range of its plane", op);
    }
  }
  if (x) opd_tensor_release(x);
  if (ix) opd_tensor_release(ix);
  return rc;
}

int opd__cuda_max_pool2d_with_indices(const opd_kernel_ctx *ctx, opd_stack *stack) {
  (void)ctx;
  return opd__max_pool_run(pool_run, stack, 2);
}

int opd__cuda_max_pool3d_with_indices(const opd_kernel_ctx *ctx, opd_stack *stack) {
  (void)ctx;
  return opd__max_pool_run(pool_run, stack, 3);
}

int opd__cuda_adaptive_max_pool2d(const opd_kernel_ctx *ctx, opd_stack *stack) {
  (void)ctx;
  return opd__adaptive_max_pool_run(pool_run, stack, 2);
}

int opd__cuda_max_pool2d_with_indices_backward(const opd_kernel_ctx *ctx, opd_tensor *grad_output,
                                               opd_tensor *self, opd_int_list kernel_size,
                                               opd_int_list stride, opd_int_list padding,
                                               opd_int_list dilation, bool ceil_mode,
                                               opd_tensor *indices, opd_tensor **out) {
  (void)ctx;
  return opd__max_pool_backward_run(pool_run, 2, grad_output, self, kernel_size, stride, padding,
                                    dilation, ceil_mode, indices, out);
}

int opd__cuda_max_pool3d_with_indices_backward(const opd_kernel_ctx *ctx, opd_tensor *grad_output,
                                               opd_tensor *self, opd_int_list kernel_size,
                                               opd_int_list stride, opd_int_list padding,
                                               opd_int_list dilation, bool ceil_mode,
                                               opd_tensor *indices, opd_tensor **out) {
  (void)ctx;
  return opd__max_pool_backward_run(pool_run, 3, grad_output, self, kernel_size, stride, padding,
                                    dilation, ceil_mode, indices, out);
}

int opd__cuda_avg_pool2d(const opd_kernel_ctx *ctx, opd_tensor *self, opd_int_list kernel_size,
                         opd_int_list stride, opd_int_list padding, bool ceil_mode,
                         bool count_include_pad, opd_opt_int divisor_override, opd_tensor **out) {
  (void)ctx;
  return opd__avg_pool_run(pool_run, 2, self, kernel_size, stride, padding, ceil_mode,
                           count_include_pad, divisor_override, "avg_pool2d", out);
}

int opd__cuda_avg_pool2d_backward(const opd_kernel_ctx *ctx, opd_tensor *grad_output,
                                  opd_tensor *self, opd_int_list kernel_size, opd_int_list stride,
                                  opd_int_list padding, bool ceil_mode, bool count_include_pad,
                                  opd_opt_int divisor_override, opd_tensor **out) {
  (void)ctx;
  return opd__avg_pool_backward_run(pool_run, 2, grad_output, self, kernel_size, stride, padding,
                                    ceil_mode, count_include_pad, divisor_override,
                                    "avg_pool2d_backward", out);
}

int opd__cuda_adaptive_avg_pool2d(const opd_kernel_ctx *ctx, opd_tensor *self,
                                  opd_int_list output_size, opd_tensor **out) {
  (void)ctx;
  return opd__adaptive_avg_pool_run(pool_run, 2, self, output_size, "adaptive_avg_pool2d", out);
}

int opd__cuda_adaptive_avg_pool2d_backward(const opd_kernel_ctx *ctx, opd_tensor *grad_output,
                                           opd_tensor *self, opd_tensor **out) {
  (void)ctx;
  return opd__adaptive_pool_backward_run(pool_run, 2, grad_output, self, NULL, false,
                                         "adaptive_avg_pool2d_backward", out);
}

int opd__cuda_adaptive_max_pool2d_backward(const opd_kernel_ctx *ctx, opd_tensor *grad_output,
                                           opd_tensor *self, opd_tensor *indices,
                                           opd_tensor **out) {
  (void)ctx;
  return opd__adaptive_pool_backward_run(pool_run, 2, grad_output, self, indices, true,
                                         "adaptive_max_pool2d_backward", out);
}

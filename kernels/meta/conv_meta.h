/* conv_meta.h: the geometry of aten::convolution and aten::convolution_backward (argument
 * checks and output shapes in kernels/meta/conv_meta.c), shared by their Meta and CPU
 * kernels.
 *
 * [Note: Convolution as three products]
 * Every convolution opd computes is one of three operations on a plain (not transposed)
 * convolution of `groups` groups from `in_c` input channels to `out_c` output channels,
 * `sdims` spatial dimensions, kernel `k`, stride, padding and dilation:
 *   FWD:         y  = conv(x, w)            x [n, in_c, in...],  y [n, out_c, out...]
 *   BWD_DATA:    gx = conv_input_grad(gy, w)
 *   BWD_WEIGHTS: gw = conv_weight_grad(gy, x)  w [out_c, in_c / groups, k...]
 * A transposed convolution of weight [C, D / groups, k...] from C to D channels is the
 * gradient of the plain convolution from D to C channels with the same weight, so its forward
 * is BWD_DATA (its input in the role of gy), the gradient of its input is FWD of the grad of
 * its output, and the gradient of its weight is BWD_WEIGHTS with its input as gy and the grad
 * of its output as x. opd__conv_geom describes that plain convolution (`in` and `out` its
 * spatial sizes); the kernels (kernels/cpu/conv.c) then only pick the operation.
 * PyTorch registers convolution and convolution_backward at CompositeExplicitAutograd, above
 * one operator per backend and algorithm (mkldnn_convolution, cudnn_convolution,
 * slow_conv2d, ...); opd registers them at CPU and Meta and computes there, so that a backend
 * provides the two operators and nothing else.
 */
#ifndef OPD_KERNELS_CONV_META_H
#define OPD_KERNELS_CONV_META_H

#include "src/kernel_util.h"

#define OPD__CONV_MAX_SDIMS 3

typedef struct opd__conv_geom {
  int sdims;
  opd_dtype dtype;
  int64_t n, groups, in_c, out_c;
  int64_t in[OPD__CONV_MAX_SDIMS], out[OPD__CONV_MAX_SDIMS], k[OPD__CONV_MAX_SDIMS];
  int64_t stride[OPD__CONV_MAX_SDIMS], pad[OPD__CONV_MAX_SDIMS], dil[OPD__CONV_MAX_SDIMS];
} opd__conv_geom;

/* The arguments of aten::convolution (and of convolution_backward after its first two). */
typedef struct opd__conv_args {
  opd_int_list stride, padding, dilation, output_padding;
  bool transposed;
  int64_t groups;
} opd__conv_args;

/* Checks convolution's arguments as PyTorch does (its messages), computes the output's spec
 * (the operator's: for a transposed convolution, the plain convolution's input) and the
 * geometry of the plain convolution. bias may be NULL. */
int opd__conv_meta(opd_tensor *input, opd_tensor *weight, opd_tensor *bias, const opd__conv_args *a,
                   opd__conv_geom *g, opd_out_spec *spec, opd_device *device);

/* The checks of convolution_backward: those of the forward, and grad_output of the forward's
 * output shape; bias_sizes (len < 0: None) must be [out channels] when given. */
int opd__conv_backward_meta(opd_tensor *grad_output, opd_tensor *input, opd_tensor *weight,
                            opd_int_list bias_sizes, const opd__conv_args *a, opd__conv_geom *g,
                            opd_device *device);

/* The gradients convolution_backward computes into res (grad_input, grad_weight, grad_bias;
 * NULL where output_mask is false), allocated to their shapes. */
typedef int (*opd__conv_backward_fill)(const opd__conv_geom *g, bool transposed,
                                       opd_tensor *grad_output, opd_tensor *input,
                                       opd_tensor *weight, opd_tensor *const *res);
/* convolution_backward's boxed kernel: pops its 11 arguments, checks them, allocates the
 * results on their device, calls fill (none for the Meta kernel) and pushes the three
 * results (None where output_mask is false). */
int opd__conv_backward_kernel(opd_stack *stack, opd__conv_backward_fill fill);

#endif

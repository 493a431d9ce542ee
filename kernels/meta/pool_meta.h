/* pool_meta.h: the geometry of the pooling and padding operators (argument checks and
 * output shapes in kernels/meta/pool_meta.c), shared by their Meta, CPU and CUDA kernels
 * (kernels/cpu/pool.c, kernels/cpu/pad.c, kernels/cuda/src/cuda_pool.c).
 *
 * Every pooling and padding operator works on `planes` independent planes (the leading
 * batch and channel dims flattened) of up to three spatial dimensions; the geometry keeps
 * three, the missing leading ones of size 1 (kernel 1, stride 1, padding 0, dilation 1).
 */
#ifndef OPD_KERNELS_POOL_META_H
#define OPD_KERNELS_POOL_META_H

#include "src/kernel_util.h"

typedef enum opd__pool_kind {
  OPD__POOL_MAX,          /* max_pool2d/3d_with_indices */
  OPD__POOL_AVG,          /* avg_pool2d/3d */
  OPD__POOL_ADAPTIVE_AVG, /* _adaptive_avg_pool2d/3d */
  OPD__POOL_ADAPTIVE_MAX, /* adaptive_max_pool2d/3d */
} opd__pool_kind;

typedef struct opd__pool_geom {
  opd__pool_kind kind;
  int sdims; /* 2 or 3 */
  int64_t planes;
  int64_t in[3], out[3], k[3], stride[3], pad[3], dil[3];
  bool count_include_pad;
  bool has_divisor;
  int64_t divisor;
  opd_out_spec spec; /* the output's (and the indices', as int64) */
  opd_device device;
} opd__pool_geom;

/* max_pool{2,3}d_with_indices (sdims 2 or 3). */
int opd__max_pool_meta(opd_tensor *self, int sdims, opd_int_list kernel_size, opd_int_list stride,
                       opd_int_list padding, opd_int_list dilation, bool ceil_mode,
                       opd__pool_geom *g);
/* avg_pool{2,3}d (sdims 2 or 3). */
int opd__avg_pool_meta(opd_tensor *self, int sdims, opd_int_list kernel_size, opd_int_list stride,
                       opd_int_list padding, bool ceil_mode, bool count_include_pad,
                       opd_opt_int divisor_override, opd__pool_geom *g);
/* _adaptive_avg_pool{2,3}d (max false) and adaptive_max_pool{2,3}d (max true). */
int opd__adaptive_pool_meta(opd_tensor *self, int sdims, opd_int_list output_size, bool max,
                            opd__pool_geom *g);
/* The checks of a pooling backward: grad_output of the forward's output shape and, when
 * given, indices of the same shape and dtype int64. */
int opd__pool_backward_check(const opd__pool_geom *g, opd_tensor *grad_output, opd_tensor *indices,
                             const char *op);
/* max_unpool2d: the output [.., C, output_size[0], output_size[1]] (g->in its sizes, g->out
 * the input's). */
int opd__max_unpool2d_meta(opd_tensor *self, opd_tensor *indices, opd_int_list output_size,
                           opd__pool_geom *g);

/* reflection_pad / replication_pad of sdims (1 to 3) dims: g->in the input's spatial sizes,
 * g->out the output's, g->pad the left pads and g->k the right pads. */
typedef enum opd__pad_mode { OPD__PAD_REFLECT, OPD__PAD_REPLICATE } opd__pad_mode;
int opd__pad_meta(opd_tensor *self, opd_int_list padding, int sdims, opd__pad_mode mode,
                  opd__pool_geom *g);

int opd__pad_backward_meta(opd_tensor *grad_output, opd_tensor *self, opd_int_list padding,
                           int sdims, opd__pad_mode mode, opd__pool_geom *g);

/* The boxed max poolings (two results) share these with their CPU kernels: popping the
 * arguments into a geometry (*self retained, or NULL), allocating the output and the int64
 * indices, and pushing both (or releasing them when rc is an error). */
int opd__max_pool_args(opd_stack *stack, int sdims, opd__pool_geom *g, opd_tensor **self);
int opd__adaptive_max_pool_args(opd_stack *stack, int sdims, opd__pool_geom *g, opd_tensor **self);
int opd__alloc_pool_results(const opd__pool_geom *g, opd_tensor **out, opd_tensor **indices);
int opd__push_pool_results(opd_stack *stack, opd_tensor *out, opd_tensor *indices, int rc);
/* The forward geometry of _adaptive_avg_pool{2,3}d_backward (max false) or
 * adaptive_max_pool{2,3}d_backward: the output size is grad_output's. */
int opd__adaptive_backward_meta(opd_tensor *grad_output, opd_tensor *self, opd_tensor *indices,
                                int sdims, bool max, opd__pool_geom *g);

/* [Note: A pooling's wrapper and its device's run]
 * The poolings' CPU and CUDA kernels differ only in the pooling itself. Each device's kernel
 * calls an opd__*_pool*_run function below with its run function; the run function reads the
 * arguments, computes the geometry (the meta functions' errors), checks the dtype (PyTorch's CPU
 * loops': float32, float64; bfloat16 for the 2-d operators and max pooling; int64 for
 * avg_pool3d and its backward), allocates the output(s) and releases them when the run fails.
 * The CUDA kernels are the 2-d ones and max_pool3d (pool.cu takes the dtypes these take). */
/* A device's forward (src the input, indices written for max) or backward (src grad_output,
 * indices read, out zeroed first where the device needs it) pooling of g into out; op names the
 * operator in an index error. */
typedef int (*opd__pool_run_fn)(const opd__pool_geom *g, bool backward, opd_tensor *src,
                                opd_tensor *out, opd_tensor *indices, const char *op);
/* max_pool{2,3}d_with_indices and adaptive_max_pool{2,3}d, boxed. */
int opd__max_pool_run(opd__pool_run_fn run, opd_stack *stack, int sdims);
int opd__adaptive_max_pool_run(opd__pool_run_fn run, opd_stack *stack, int sdims);
int opd__max_pool_backward_run(opd__pool_run_fn run, int sdims, opd_tensor *grad_output,
                               opd_tensor *self, opd_int_list kernel_size, opd_int_list stride,
                               opd_int_list padding, opd_int_list dilation, bool ceil_mode,
                               opd_tensor *indices, opd_tensor **out);
/* avg_pool{2,3}d and its backward; name: the dtype error's loop. */
int opd__avg_pool_run(opd__pool_run_fn run, int sdims, opd_tensor *self, opd_int_list kernel_size,
                      opd_int_list stride, opd_int_list padding, bool ceil_mode,
                      bool count_include_pad, opd_opt_int divisor_override, const char *name,
                      opd_tensor **out);
int opd__avg_pool_backward_run(opd__pool_run_fn run, int sdims, opd_tensor *grad_output,
                               opd_tensor *self, opd_int_list kernel_size, opd_int_list stride,
                               opd_int_list padding, bool ceil_mode, bool count_include_pad,
                               opd_opt_int divisor_override, const char *name, opd_tensor **out);
/* _adaptive_avg_pool{2,3}d, and the backward of it (max false, indices NULL) or of
 * adaptive_max_pool{2,3}d (max true). */
int opd__adaptive_avg_pool_run(opd__pool_run_fn run, int sdims, opd_tensor *self,
                               opd_int_list output_size, const char *name, opd_tensor **out);
int opd__adaptive_pool_backward_run(opd__pool_run_fn run, int sdims, opd_tensor *grad_output,
                                    opd_tensor *self, opd_tensor *indices, bool max,
                                    const char *name, opd_tensor **out);

/* The kernels of the device `dev` over its run function, for D (2 or 3) spatial dims:
 * max_pool<D>d_with_indices and its backward; avg_pool<D>d and its backward (the dtype errors
 * name PyTorch's CPU loops, FWD_NAME and BWD_NAME); adaptive_max_pool<D>d,
 * _adaptive_avg_pool<D>d and the two adaptive backward operators (AVG_NAME, AVG_BWD and
 * MAX_BWD name their loops). */
#define OPD__DEFINE_MAX_POOL_KERNELS(dev, run, D)                                                 \
  int opd__##dev##_max_pool##D##d_with_indices(const opd_kernel_ctx *ctx, opd_stack *stack) {     \
    (void)ctx;                                                                                    \
    return opd__max_pool_run(run, stack, D);                                                      \
  }                                                                                               \
  int opd__##dev##_max_pool##D##d_with_indices_backward(                                          \
      const opd_kernel_ctx *ctx, opd_tensor *grad_output, opd_tensor *self,                       \
      opd_int_list kernel_size, opd_int_list stride, opd_int_list padding, opd_int_list dilation, \
      bool ceil_mode, opd_tensor *indices, opd_tensor **out) {                                    \
    (void)ctx;                                                                                    \
    return opd__max_pool_backward_run(run, D, grad_output, self, kernel_size, stride, padding,    \
                                      dilation, ceil_mode, indices, out);                         \
  }
#define OPD__DEFINE_AVG_POOL_KERNELS(dev, run, D, FWD_NAME, BWD_NAME)                           \
  int opd__##dev##_avg_pool##D##d(const opd_kernel_ctx *ctx, opd_tensor *self,                  \
                                  opd_int_list kernel_size, opd_int_list stride,                \
                                  opd_int_list padding, bool ceil_mode, bool count_include_pad, \
                                  opd_opt_int divisor_override, opd_tensor **out) {             \
    (void)ctx;                                                                                  \
    return opd__avg_pool_run(run, D, self, kernel_size, stride, padding, ceil_mode,             \
                             count_include_pad, divisor_override, FWD_NAME, out);               \
  }                                                                                             \
  int opd__##dev##_avg_pool##D##d_backward(                                                     \
      const opd_kernel_ctx *ctx, opd_tensor *grad_output, opd_tensor *self,                     \
      opd_int_list kernel_size, opd_int_list stride, opd_int_list padding, bool ceil_mode,      \
      bool count_include_pad, opd_opt_int divisor_override, opd_tensor **out) {                 \
    (void)ctx;                                                                                  \
    return opd__avg_pool_backward_run(run, D, grad_output, self, kernel_size, stride, padding,  \
                                      ceil_mode, count_include_pad, divisor_override, BWD_NAME, \
                                      out);                                                     \
  }
#define OPD__DEFINE_ADAPTIVE_POOL_KERNELS(dev, run, D, AVG_NAME, AVG_BWD, MAX_BWD)                \
  int opd__##dev##_adaptive_max_pool##D##d(const opd_kernel_ctx *ctx, opd_stack *stack) {         \
    (void)ctx;                                                                                    \
    return opd__adaptive_max_pool_run(run, stack, D);                                             \
  }                                                                                               \
  int opd__##dev##_adaptive_avg_pool##D##d(const opd_kernel_ctx *ctx, opd_tensor *self,           \
                                           opd_int_list output_size, opd_tensor **out) {          \
    (void)ctx;                                                                                    \
    return opd__adaptive_avg_pool_run(run, D, self, output_size, AVG_NAME, out);                  \
  }                                                                                               \
  int opd__##dev##_adaptive_avg_pool##D##d_backward(                                              \
      const opd_kernel_ctx *ctx, opd_tensor *grad_output, opd_tensor *self, opd_tensor **out) {   \
    (void)ctx;                                                                                    \
    return opd__adaptive_pool_backward_run(run, D, grad_output, self, NULL, false, AVG_BWD, out); \
  }                                                                                               \
  int opd__##dev##_adaptive_max_pool##D##d_backward(const opd_kernel_ctx *ctx,                    \
                                                    opd_tensor *grad_output, opd_tensor *self,    \
                                                    opd_tensor *indices, opd_tensor **out) {      \
    (void)ctx;                                                                                    \
    return opd__adaptive_pool_backward_run(run, D, grad_output, self, indices, true, MAX_BWD,     \
                                           out);                                                  \
  }

#endif

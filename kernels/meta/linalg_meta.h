/* linalg_meta.h: the meta functions of aten::mm, aten::bmm, aten::addmm, aten::dot,
 * aten::vdot and aten::addmv
 * (kernels/meta/linalg_meta.c), shared by their Meta, CPU and CUDA kernels: argument checks with
 * PyTorch 1.13's errors, the output spec and the common device. */
#ifndef OPD_KERNELS_LINALG_META_H
#define OPD_KERNELS_LINALG_META_H

#include "src/kernel_util.h"

int opd__mm_meta(opd_tensor *self, opd_tensor *mat2, opd_out_spec *spec, opd_device *device);
int opd__bmm_meta(opd_tensor *self, opd_tensor *mat2, opd_out_spec *spec, opd_device *device);
int opd__addmm_meta(opd_tensor *self, opd_tensor *mat1, opd_tensor *mat2, opd_out_spec *spec,
                    opd_device *device);

/* dot and vdot (name, for the Bool error): two 1-D tensors of one dtype and size, a 0-d
 * result. addmv: self of 0 or 1 dims, a matrix and a vector; the matrix's dtype. */
int opd__dot_meta(const char *name, opd_tensor *self, opd_tensor *other, opd_out_spec *spec,
                  opd_device *device);
int opd__addmv_meta(opd_tensor *self, opd_tensor *mat, opd_tensor *vec, opd_out_spec *spec,
                    opd_device *device);
/* The same, and the new output of *spec that every device's kernel computes into. */
int opd__dot_output(const char *name, opd_tensor *self, opd_tensor *other, opd_out_spec *spec,
                    opd_tensor **out);
int opd__addmv_output(opd_tensor *self, opd_tensor *mat, opd_tensor *vec, opd_out_spec *spec,
                      opd_tensor **out);
/* dot and vdot of the device `dev` over its function fn(name, self, other, out). */
#define OPD__DEFINE_DOT_KERNELS(dev, fn)                                                \
  int opd__##dev##_dot(const opd_kernel_ctx *ctx, opd_tensor *self, opd_tensor *tensor, \
                       opd_tensor **out) {                                              \
    (void)ctx;                                                                          \
    return fn("dot", self, tensor, out);                                                \
  }                                                                                     \
  int opd__##dev##_vdot(const opd_kernel_ctx *ctx, opd_tensor *self, opd_tensor *other, \
                        opd_tensor **out) {                                             \
    (void)ctx;                                                                          \
    return fn("vdot", self, other, out);                                                \
  }

/* baddbmm ([bs, m, n], batch1's dtype) and addbmm ([m, n]): 3-D batches, self expanding to the
 * result. */
int opd__baddbmm_meta(opd_tensor *self, opd_tensor *batch1, opd_tensor *batch2, opd_out_spec *spec,
                      opd_device *device);
int opd__addbmm_meta(opd_tensor *self, opd_tensor *batch1, opd_tensor *batch2, opd_out_spec *spec,
                     opd_device *device);

/* The meta function, then the output allocated on the operands' device: the whole Meta
 * kernel, and the start of the CPU and CUDA kernels (which then fill *out). */
int opd__mm_alloc(opd_tensor *self, opd_tensor *mat2, opd_tensor **out);
int opd__bmm_alloc(opd_tensor *self, opd_tensor *mat2, opd_tensor **out);
int opd__addmm_alloc(opd_tensor *self, opd_tensor *mat1, opd_tensor *mat2, opd_tensor **out);

#endif

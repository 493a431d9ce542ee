/* upsample_meta.h: the upsampling operators' arguments, checks (PyTorch 1.13's messages) and
 * geometry (kernels/meta/upsample_meta.c), shared by their Meta and CPU kernels
 * (kernels/cpu/upsample.c).
 *
 * upsample_nearest{1,2,3}d, upsample_{linear1d,bilinear2d,trilinear3d} and
 * upsample_bicubic2d, each in three
 * forms: the plain operator (output_size and one `float?` scale per spatial dim), `.vec`
 * (output_size or scale_factors, `float[]?`) and `_backward` (grad_output, output_size,
 * input_size and the scales). No unboxed tag holds a `float?` or a `float[]?`, so every
 * kernel is boxed: opd__upsample_args pops the arguments of any form into a geometry.
 */
#ifndef OPD_KERNELS_UPSAMPLE_META_H
#define OPD_KERNELS_UPSAMPLE_META_H

#include "src/kernel_util.h"

typedef enum opd__upsample_mode {
  OPD__UPSAMPLE_NEAREST,
  OPD__UPSAMPLE_LINEAR,
  OPD__UPSAMPLE_CUBIC /* upsample_bicubic2d */
} opd__upsample_mode;
typedef enum opd__upsample_form {
  OPD__UPSAMPLE_PLAIN,
  OPD__UPSAMPLE_VEC,
  OPD__UPSAMPLE_BACKWARD
} opd__upsample_form;

typedef struct opd__upsample_geom {
  opd__upsample_mode mode;
  opd__upsample_form form;
  int sdims; /* 1 to 3; the leading 3 - sdims dims below are of size 1 */
  bool align_corners;
  int64_t planes; /* batch x channels */
  int64_t in[3], out[3];
  bool has_scale[3];
  double scale[3];
  opd_out_spec spec; /* the result's: the output, or (backward) the gradient of the input */
  opd_device device;
} opd__upsample_geom;

/* Pops the operator's arguments (form, mode and sdims say which; name is the operator's,
 * without overload) into g, with PyTorch's checks and its CPU kernels' dtypes; *src is the
 * tensor read (self, or grad_output for a backward), retained, or NULL on an error. */
int opd__upsample_args(opd_stack *stack, opd__upsample_mode mode, int sdims,
                       opd__upsample_form form, const char *name, opd__upsample_geom *g,
                       opd_tensor **src);

#endif

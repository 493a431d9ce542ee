/* fold_meta.h: im2col's and col2im's checks (PyTorch 1.13's messages) and geometry
 * (kernels/meta/fold_meta.c), shared by their Meta and CPU kernels (kernels/cpu/fold.c).
 *
 * im2col (nn.Unfold) turns (N, C, H, W) into the columns (N, C kh kw, oh ow) of every
 * sliding block; col2im (nn.Fold) adds such columns back into (N, C, H, W). Both see
 * `planes` = N x C planes of H x W and blocks oh x ow. */
#ifndef OPD_KERNELS_FOLD_META_H
#define OPD_KERNELS_FOLD_META_H

#include "src/kernel_util.h"

typedef struct opd__fold_geom {
  int64_t planes, height, width, kh, kw, dh, dw, ph, pw, sh, sw, oh, ow;
  opd_out_spec spec;
} opd__fold_geom;

int opd__im2col_meta(opd_tensor *self, opd_int_list kernel_size, opd_int_list dilation,
                     opd_int_list padding, opd_int_list stride, opd__fold_geom *g);
int opd__col2im_meta(opd_tensor *self, opd_int_list output_size, opd_int_list kernel_size,
                     opd_int_list dilation, opd_int_list padding, opd_int_list stride,
                     opd__fold_geom *g);

#endif

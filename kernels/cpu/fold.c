/* fold.c: the CPU kernels of im2col and col2im (checks and shapes in
 * kernels/meta/fold_meta.c). The input is made contiguous; each (batch, channel) plane is a
 * task of the intra-op pool: im2col copies each block position's element (0 in the padding)
 * into its column, col2im adds each column element into its position (padding dropped), in
 * the order PyTorch's loops add them, in the dtype's compute type (double for float64, float
 * otherwise). */
#include <string.h>

#include "conv_impl.h"
#include "meta/fold_meta.h"
#include "src/parallel.h"

typedef struct fold_ctx {
  const opd__fold_geom *g;
  opd_dtype dt;
  int64_t es;
  bool col2im;
  const char *in;
  char *out;
} fold_ctx;

static void fold_task(void *ctx, int64_t begin, int64_t end) {
  const fold_ctx *c = ctx;
  const opd__fold_geom *g = c->g;
  int64_t image = g->height * g->width, cols = g->oh * g->ow, col_plane = g->kh * g->kw * cols;
  for (int64_t p = begin; p < end; p++) {
    const char *src = c->in + p * (c->col2im ? col_plane : image) * c->es;
    char *dst = c->out + p * (c->col2im ? image : col_plane) * c->es;
    if (c->col2im) memset(dst, 0, (size_t)(image * c->es));
    for (int64_t i = 0; i < g->kh; i++)
      for (int64_t j = 0; j < g->kw; j++)
        for (int64_t y = 0; y < g->oh; y++) {
          int64_t h = y * g->sh - g->ph + i * g->dh;
          for (int64_t x = 0; x < g->ow; x++) {
            int64_t w = x * g->sw - g->pw + j * g->dw;
            int64_t col = ((i * g->kw + j) * g->oh + y) * g->ow + x;
            bool inside = h >= 0 && h < g->height && w >= 0 && w < g->width;
            if (!c->col2im)
              opd__cpu_store(dst, c->dt, col,
                             inside ? opd__cpu_load(src, c->dt, h * g->width + w) : 0.0);
            else if (inside)
              opd__cpu_store(dst, c->dt, h * g->width + w,
                             opd__cpu_load(dst, c->dt, h * g->width + w) +
                                 opd__cpu_load(src, c->dt, col));
          }
        }
  }
}

static int fold_run(const opd__fold_geom *g, bool col2im, opd_tensor *self, opd_tensor **out) {
  opd_tensor *x = NULL, *y = NULL;
  int rc = opd__alloc_output(&g->spec, opd_tensor_device(self), &y);
  if (!rc && g->planes > 0) {
    rc = opd__cpu_contiguous(self, &x);
    if (!rc) {
      fold_ctx c = {.g = g,
                    .dt = g->spec.dtype,
                    .es = (int64_t)opd_dtype_size(g->spec.dtype),
                    .col2im = col2im,
                    .in = opd_tensor_data(x),
                    .out = opd_tensor_data(y)};
      int64_t work = g->kh * g->kw * g->oh * g->ow;
      opd__parallel_for(0, g->planes,
                        work >= OPD_GRAIN_ELEMENTWISE ? 1 : OPD_GRAIN_ELEMENTWISE / (work + 1),
                        fold_task, &c);
    }
  }
  if (x) opd_tensor_release(x);
  if (rc && y) opd_tensor_release(y);
  if (!rc) *out = y;
  return rc;
}

int opd__cpu_im2col(const opd_kernel_ctx *ctx, opd_tensor *self, opd_int_list kernel_size,
                    opd_int_list dilation, opd_int_list padding, opd_int_list stride,
                    opd_tensor **out) {
  (void)ctx;
  opd__fold_geom g;
  int rc = opd__im2col_meta(self, kernel_size, dilation, padding, stride, &g);
  return rc ? rc : fold_run(&g, false, self, out);
}

int opd__cpu_col2im(const opd_kernel_ctx *ctx, opd_tensor *self, opd_int_list output_size,
                    opd_int_list kernel_size, opd_int_list dilation, opd_int_list padding,
                    opd_int_list stride, opd_tensor **out) {
  (void)ctx;
  opd__fold_geom g;
  int rc = opd__col2im_meta(self, output_size, kernel_size, dilation, padding, stride, &g);
  return rc ? rc : fold_run(&g, true, self, out);
}

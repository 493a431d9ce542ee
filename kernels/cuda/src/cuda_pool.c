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

OPD__DEFINE_MAX_POOL_KERNELS(cuda, pool_run, 2)
OPD__DEFINE_MAX_POOL_KERNELS(cuda, pool_run, 3)
OPD__DEFINE_AVG_POOL_KERNELS(cuda, pool_run, 2, "avg_pool2d", "avg_pool2d_backward")
OPD__DEFINE_ADAPTIVE_POOL_KERNELS(cuda, pool_run, 2, "adaptive_avg_pool2d",
                                  "adaptive_avg_pool2d_backward", "adaptive_max_pool2d_backward")

/* pool.cu: the device code of the poolings (max, average, adaptive average and adaptive max
 * pooling) and their backward operators.
 *
 * [Note: CUDA pooling]
 * The windows, their clipping, the divisors and the choice of a max window's index are those
 * of the CPU kernels ([Note: Pooling on the CPU] in kernels/cpu/pool.c), computed by the same
 * functions. The forward passes take a thread per output element (the windows are
 * independent); the backward passes take a thread per plane, which adds its outputs'
 * gradients into the plane in the CPU kernel's order (windows overlap, and each addition
 * rounds to the dtype as the CPU's does), so that the results are the CPU's exactly. Values
 * are accumulated in double.
 */
#include <cuda_runtime.h>

#include "cuda_internal.h"
#include "device_util.cuh"
#include "opd/cuda.h"

namespace opd_cuda {
namespace {

constexpr int THREADS = 256;
/* opd__pool_kind (kernels/meta/pool_meta.h; cuda_pool.c asserts they agree) */
enum { POOL_MAX = 0, POOL_AVG = 1, POOL_ADAPTIVE_AVG = 2, POOL_ADAPTIVE_MAX = 3 };

struct window {
  int64_t lo, hi, step, extent;
};

__device__ window window_of(const opd__cuda_pool &g, int d, int64_t o) {
  window w = {0, 0, 1, 0};
  int64_t in = g.in[d];
  switch (g.kind) {
  case POOL_MAX:
    w.lo = o * g.stride[d] - g.pad[d];
    w.hi = w.lo + (g.k[d] - 1) * g.dil[d] + 1;
    if (w.hi > in) w.hi = in;
    w.step = g.dil[d];
    while (w.lo < 0) w.lo += w.step;
    break;
  case POOL_AVG:
    w.lo = o * g.stride[d] - g.pad[d];
    w.hi = w.lo + g.k[d];
    if (w.hi > in + g.pad[d]) w.hi = in + g.pad[d];
    w.extent = w.hi - w.lo; /* with the padding */
    if (w.lo < 0) w.lo = 0;
    if (w.hi > in) w.hi = in;
    break;
  default: /* adaptive: [floor(o * in / out), ceil((o + 1) * in / out)) */
    w.lo = (o / g.out[d]) * in + ((o % g.out[d]) * in) / g.out[d];
    w.hi = 1 + ((o + 1) * in - 1) / g.out[d];
    w.extent = w.hi - w.lo;
    break;
  }
  return w;
}

__device__ __forceinline__ double ld(const void *p, int dt, int64_t i) {
  return load<double>((const char *)p + i * elsize(dt), dt);
}
__device__ __forceinline__ void st(void *p, int dt, int64_t i, double v) {
  store<double>((char *)p + i * elsize(dt), dt, v);
}

/* the windows of output o (d, h, w) of a plane */
struct windows {
  window d, h, w;
};
__device__ windows windows_of(const opd__cuda_pool &g, int64_t o) {
  int64_t ow = o % g.out[2], oh = o / g.out[2] % g.out[1], od = o / (g.out[2] * g.out[1]);
  return {window_of(g, 0, od), window_of(g, 1, oh), window_of(g, 2, ow)};
}

__device__ int64_t divisor_of(const opd__cuda_pool &g, const windows &w) {
  if (g.kind == POOL_ADAPTIVE_AVG) return w.d.extent * w.h.extent * w.w.extent;
  if (g.has_divisor) return g.divisor;
  if (g.count_include_pad) return w.h.extent * w.w.extent;
  return (w.h.hi - w.h.lo) * (w.w.hi - w.w.lo);
}

/* forward: a thread per output element (plane p, output o) */
__global__ void pool_forward(opd__cuda_pool g, int64_t out_n, int64_t in_n) {
  const bool max = g.kind == POOL_MAX || g.kind == POOL_ADAPTIVE_MAX;
  for (int64_t e = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; e < g.planes * out_n;
       e += (int64_t)gridDim.x * blockDim.x) {
    int64_t p = e / out_n, o = e % out_n;
    const void *src = (const char *)g.src + p * in_n * elsize(g.dtype);
    windows w = windows_of(g, o);
    if (max) {
      int64_t best = (w.d.lo * g.in[1] + w.h.lo) * g.in[2] + w.w.lo;
      double mv = -INFINITY;
      for (int64_t id = w.d.lo; id < w.d.hi; id += w.d.step)
        for (int64_t ih = w.h.lo; ih < w.h.hi; ih += w.h.step)
          for (int64_t iw = w.w.lo; iw < w.w.hi; iw += w.w.step) {
            int64_t i = (id * g.in[1] + ih) * g.in[2] + iw;
            double v = ld(src, g.dtype, i);
            if (v > mv || isnan(v)) {
              mv = v;
              best = i;
            }
          }
      st(g.dst, g.dtype, e, mv);
      g.idx[e] = best;
      continue;
    }
    bool empty = w.d.lo >= w.d.hi || w.h.lo >= w.h.hi || w.w.lo >= w.w.hi;
    double sum = 0;
    for (int64_t id = w.d.lo; id < w.d.hi; id++)
      for (int64_t ih = w.h.lo; ih < w.h.hi; ih++)
        for (int64_t iw = w.w.lo; iw < w.w.hi; iw++)
          sum += ld(src, g.dtype, (id * g.in[1] + ih) * g.in[2] + iw);
    st(g.dst, g.dtype, e, empty ? 0.0 : sum / (double)divisor_of(g, w));
  }
}

/* backward: a thread per plane, adding into the zeroed grad_input in the CPU's order */
__global__ void pool_backward(opd__cuda_pool g, int64_t out_n, int64_t in_n) {
  const bool max = g.kind == POOL_MAX || g.kind == POOL_ADAPTIVE_MAX;
  for (int64_t p = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; p < g.planes;
       p += (int64_t)gridDim.x * blockDim.x) {
    const void *src = (const char *)g.src + p * out_n * elsize(g.dtype);
    void *dst = (char *)g.dst + p * in_n * elsize(g.dtype);
    if (max) {
      const int64_t *ix = g.gidx + p * out_n;
      for (int64_t o = 0; o < out_n; o++) {
        if (ix[o] < 0 || ix[o] >= in_n) {
          *g.bad = 1;
          break;
        }
        st(dst, g.dtype, ix[o], ld(dst, g.dtype, ix[o]) + ld(src, g.dtype, o));
      }
      continue;
    }
    for (int64_t o = 0; o < out_n; o++) {
      windows w = windows_of(g, o);
      if (w.d.lo >= w.d.hi || w.h.lo >= w.h.hi || w.w.lo >= w.w.hi) continue;
      double gv = ld(src, g.dtype, o) / (double)divisor_of(g, w);
      for (int64_t id = w.d.lo; id < w.d.hi; id++)
        for (int64_t ih = w.h.lo; ih < w.h.hi; ih++)
          for (int64_t iw = w.w.lo; iw < w.w.hi; iw++) {
            int64_t i = (id * g.in[1] + ih) * g.in[2] + iw;
            st(dst, g.dtype, i, ld(dst, g.dtype, i) + gv);
          }
    }
  }
}

unsigned grid_for(int64_t n) {
  int64_t blocks = (n + THREADS - 1) / THREADS;
  return (unsigned)(blocks < 65535 ? (blocks > 0 ? blocks : 1) : 65535);
}

} // namespace
} // namespace opd_cuda

extern "C" int opd__cuda_launch_pool(int device, const opd__cuda_pool *d) {
  using namespace opd_cuda;
  int rc = opd__cuda_use_device(device);
  if (rc) return rc;
  int64_t out_n = d->out[0] * d->out[1] * d->out[2], in_n = d->in[0] * d->in[1] * d->in[2];
  if (d->planes == 0 || out_n == 0) return 0;
  cudaStream_t s = (cudaStream_t)opd_cuda_current_stream(device);
  if (d->backward)
    pool_backward<<<grid_for(d->planes), THREADS, 0, s>>>(*d, out_n, in_n);
  else
    pool_forward<<<grid_for(d->planes * out_n), THREADS, 0, s>>>(*d, out_n, in_n);
  return opd__cuda_check_launch(device, "a pooling kernel launch");
}

/* index.cu: the device code of gather, the scatter operators, flip, roll, tril, triu, cumsum
 * and cumprod.
 *
 * [Note: CUDA scatter]
 * As the CPU kernels ([Note: The order of scatter's writes] in kernels/cpu/index_scatter.c), a
 * thread takes one position of index with the scattered dimension held at 0 and walks along
 * the dimension in order: different threads write different elements of self, and duplicate
 * indices combine (or, without a reduction, the last write wins) in index order, so the
 * results are the CPU's bit for bit. Floats combine in double, rounded to the dtype after each
 * step, integers in wrapping int64, bool as or / and. A bad index stops its thread and is
 * reported (the first thread to meet one wins).
 */
#include <cuda_runtime.h>

#include "cuda_internal.h"
#include "device_util.cuh"
#include "opd/cuda.h"

namespace opd_cuda {
namespace {

constexpr int THREADS = 256;
enum { REDUCE_NONE, REDUCE_SUM, REDUCE_PROD, REDUCE_MAX, REDUCE_MIN };

__device__ bool is_floating(int dt) {
  return dt == OPD_FLOAT16 || dt == OPD_FLOAT32 || dt == OPD_FLOAT64 || dt == OPD_BFLOAT16;
}

/* *dst = op(*dst, *src), both of dtype dt (kernels/cpu/index_walk.h's opd__elem_reduce) */
__device__ void elem_reduce(char *dst, const char *src, int dt, int op) {
  if (op == REDUCE_NONE) {
    for (int b = 0; b < elsize(dt); b++) dst[b] = src[b];
  } else if (is_floating(dt)) {
    double a = load<double>(dst, dt), b = load<double>(src, dt), r;
    switch (op) {
    case REDUCE_SUM: r = a + b; break;
    case REDUCE_PROD: r = a * b; break;
    case REDUCE_MAX: r = isnan(a) || isnan(b) ? a + b : a > b ? a : b; break;
    default: r = isnan(a) || isnan(b) ? a + b : a < b ? a : b; break;
    }
    store<double>(dst, dt, r);
  } else if (dt == OPD_BOOL) {
    uint8_t a = *(uint8_t *)dst != 0, b = *(const uint8_t *)src != 0;
    *(uint8_t *)dst = op == REDUCE_SUM || op == REDUCE_MAX ? (a | b) : (a & b);
  } else {
    int64_t a = load<int64_t>(dst, dt), b = load<int64_t>(src, dt), r;
    switch (op) {
    case REDUCE_SUM: r = (int64_t)((uint64_t)a + (uint64_t)b); break;
    case REDUCE_PROD: r = (int64_t)((uint64_t)a * (uint64_t)b); break;
    case REDUCE_MAX: r = a > b ? a : b; break;
    default: r = a < b ? a : b; break;
    }
    store<int64_t>(dst, dt, r);
  }
}

__global__ void scatter_kernel(opd__cuda_scatter d) {
  const int es = elsize(d.dtype);
  for (int64_t p = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; p < d.outer;
       p += (int64_t)gridDim.x * blockDim.x) {
    int64_t off[3] = {0, 0, 0}, rest = p;
    for (int k = d.ndim - 1; k >= 0; k--) {
      int64_t i = rest % d.sizes[k];
      rest /= d.sizes[k];
      for (int o = 0; o < 3; o++) off[o] += i * d.strides[o][k];
    }
    for (int64_t k = 0; k < d.len; k++) {
      int64_t i = ((const int64_t *)d.index)[off[0] + k * d.istride];
      if (i < 0 || i >= d.limit) {
        if (atomicCAS(d.bad, 0, 1) == 0) *d.bad_value = i;
        break;
      }
      char *t = (char *)d.self + (off[2] + i * d.tstride) * es;
      char *other = d.other ? (char *)d.other + (off[1] + k * d.sstride) * es : nullptr;
      if (d.gather)
        elem_reduce(other, t, d.dtype, REDUCE_NONE);
      else
        elem_reduce(t, other ? other : (const char *)d.value, d.dtype, d.op);
    }
  }
}

/* flip, roll, tril, triu: a thread per output element, its source as the CPU kernel maps it */
__global__ void shape_kernel(opd__cuda_shape d) {
  for (int64_t p = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; p < d.numel;
       p += (int64_t)gridDim.x * blockDim.x) {
    char *dst = (char *)d.dst + p * d.elsize;
    int64_t src = 0, rest = p, row = 0, col = 0;
    if (d.kind == 2) { /* the flattened roll */
      int64_t q = p - d.shift[0];
      if (q < 0) q += d.numel;
      for (int k = d.ndim - 1; k >= 0; k--) {
        src += (q % d.sizes[k]) * d.strides[k];
        q /= d.sizes[k];
      }
    } else {
      for (int k = d.ndim - 1; k >= 0; k--) {
        int64_t i = rest % d.sizes[k];
        rest /= d.sizes[k];
        if (k == d.ndim - 1) col = i;
        if (k == d.ndim - 2) row = i;
        if (d.kind == 1) {
          i -= d.shift[k];
          if (i < 0) i += d.sizes[k];
        }
        src += i * d.strides[k];
      }
      if (d.kind == 0) src += d.base;
    }
    bool keep = d.kind == 3   ? col - row <= d.diagonal
                : d.kind == 4 ? col - row >= d.diagonal
                              : true;
    const char *from = (const char *)d.src + src * d.elsize;
    for (int b = 0; b < d.elsize; b++) dst[b] = keep ? from[b] : 0;
  }
}

/* cumsum, cumprod: a thread per line along dim, in order, as the CPU kernel */
__global__ void cum_kernel(opd__cuda_cum d) {
  const int ses = elsize(d.self_dtype), oes = elsize(d.out_dtype);
  const int st = d.self_dtype, ot = d.out_dtype;
  const bool floating = is_floating(ot);
  for (int64_t p = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; p < d.outer;
       p += (int64_t)gridDim.x * blockDim.x) {
    int64_t off[2] = {0, 0}, rest = p;
    for (int k = d.ndim - 1; k >= 0; k--) {
      int64_t i = rest % d.sizes[k];
      rest /= d.sizes[k];
      for (int o = 0; o < 2; o++) off[o] += i * d.strides[o][k];
    }
    double facc = d.prod ? 1 : 0;
    int64_t iacc = d.prod ? 1 : 0;
    char tmp[8];
    for (int64_t k = 0; k < d.len; k++) {
      const char *src = (const char *)d.self + (off[0] + k * d.self_step) * ses;
      char *dst = (char *)d.out + (off[1] + k * d.out_step) * oes;
      if (floating) { /* the element rounded to the output's dtype, as ATen's self.to(dtype) */
        store<double>(tmp, ot, load<double>(src, st));
        double f = load<double>(tmp, ot);
        facc = d.prod ? facc * f : facc + f;
        store<double>(dst, ot, facc);
        continue;
      }
      int64_t i;
      if (!is_floating(st)) {
        i = load<int64_t>(src, st);
      } else { /* C's conversion is undefined out of int64's range (and for NaN); ATen's too */
        double v = load<double>(src, st);
        i = ot == OPD_BOOL ? v != 0 : isnan(v) || fabs(v) >= 9.2e18 ? 0 : (int64_t)v;
      }
      store<int64_t>(tmp, ot, i); /* truncated to the output's dtype */
      i = load<int64_t>(tmp, ot);
      iacc = d.prod ? (int64_t)((uint64_t)iacc * (uint64_t)i)
                    : (int64_t)((uint64_t)iacc + (uint64_t)i);
      store<int64_t>(dst, ot, iacc);
    }
  }
}

} // namespace
} // namespace opd_cuda

extern "C" int opd__cuda_launch_scatter(int device, const opd__cuda_scatter *d) {
  using namespace opd_cuda;
  int rc = opd__cuda_use_device(device);
  if (rc || d->outer == 0 || d->len == 0) return rc;
  int64_t blocks = (d->outer + THREADS - 1) / THREADS;
  cudaStream_t s = (cudaStream_t)opd_cuda_current_stream(device);
  scatter_kernel<<<(unsigned)(blocks < 65535 ? blocks : 65535), THREADS, 0, s>>>(*d);
  return opd__cuda_check_launch(device, "a scatter kernel launch");
}

extern "C" int opd__cuda_launch_shape(int device, const opd__cuda_shape *d) {
  using namespace opd_cuda;
  int rc = opd__cuda_use_device(device);
  if (rc || d->numel == 0) return rc;
  int64_t blocks = (d->numel + THREADS - 1) / THREADS;
  cudaStream_t s = (cudaStream_t)opd_cuda_current_stream(device);
  shape_kernel<<<(unsigned)(blocks < 65535 ? blocks : 65535), THREADS, 0, s>>>(*d);
  return opd__cuda_check_launch(device, "a flip, roll, tril or triu kernel launch");
}

extern "C" int opd__cuda_launch_cum(int device, const opd__cuda_cum *d) {
  using namespace opd_cuda;
  int rc = opd__cuda_use_device(device);
  if (rc || d->outer == 0 || d->len == 0) return rc;
  int64_t blocks = (d->outer + THREADS - 1) / THREADS;
  cudaStream_t s = (cudaStream_t)opd_cuda_current_stream(device);
  cum_kernel<<<(unsigned)(blocks < 65535 ? blocks : 65535), THREADS, 0, s>>>(*d);
  return opd__cuda_check_launch(device, "a cumsum or cumprod kernel launch");
}

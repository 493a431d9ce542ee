/* conv.cu: im2col and col2im for the CUDA convolutions of cuda_conv.c ([Note: Convolution by
 * im2col] in kernels/cpu/conv_direct.c: the same unfolding, one thread per element). col2im
 * gathers rather than scatters: each input position sums the col entries that read it, so it
 * needs no atomics and is deterministic. */
#include <cuda_runtime.h>

#include "cuda_internal.h"
#include "opd/cuda.h"

namespace {

constexpr int THREADS = 256;

template <class T> __global__ void im2col(opd__cuda_im2col d) {
  const int64_t out_n = d.out[0] * d.out[1] * d.out[2], k_n = d.k[0] * d.k[1] * d.k[2];
  const int64_t total = d.icg * k_n * out_n;
  const T *x = (const T *)d.x;
  T *col = (T *)d.col;
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < total;
       i += (int64_t)gridDim.x * blockDim.x) {
    int64_t o = i % out_n, row = i / out_n;
    int64_t ow = o % d.out[2], oh = (o / d.out[2]) % d.out[1], od = o / (d.out[2] * d.out[1]);
    int64_t kw = row % d.k[2], kh = (row / d.k[2]) % d.k[1],
            kd = (row / (d.k[2] * d.k[1])) % d.k[0];
    int64_t c = row / k_n;
    int64_t id = od * d.stride[0] - d.pad[0] + kd * d.dil[0];
    int64_t ih = oh * d.stride[1] - d.pad[1] + kh * d.dil[1];
    int64_t iw = ow * d.stride[2] - d.pad[2] + kw * d.dil[2];
    bool in = id >= 0 && id < d.in[0] && ih >= 0 && ih < d.in[1] && iw >= 0 && iw < d.in[2];
    col[i] = in ? x[((c * d.in[0] + id) * d.in[1] + ih) * d.in[2] + iw] : (T)0;
  }
}

/* The output positions along one dim whose window reads input position i at kernel offset
 * kk: o with o * stride - pad + kk * dil == i, 0 <= o < out; -1 when there is none. */
__device__ __forceinline__ int64_t source(int64_t i, int64_t kk, int64_t stride, int64_t pad,
                                          int64_t dil, int64_t out) {
  int64_t t = i + pad - kk * dil;
  if (t < 0 || t % stride != 0) return -1;
  t /= stride;
  return t < out ? t : -1;
}

template <class T> __global__ void col2im(opd__cuda_im2col d) {
  const int64_t out_n = d.out[0] * d.out[1] * d.out[2], k_n = d.k[0] * d.k[1] * d.k[2];
  const int64_t in_n = d.in[0] * d.in[1] * d.in[2], total = d.icg * in_n;
  T *x = (T *)d.x;
  const T *col = (const T *)d.col;
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < total;
       i += (int64_t)gridDim.x * blockDim.x) {
    int64_t p = i % in_n, c = i / in_n;
    int64_t iw = p % d.in[2], ih = (p / d.in[2]) % d.in[1], id = p / (d.in[2] * d.in[1]);
    T sum = 0;
    for (int64_t kd = 0; kd < d.k[0]; kd++) {
      int64_t od = source(id, kd, d.stride[0], d.pad[0], d.dil[0], d.out[0]);
      if (od < 0) continue;
      for (int64_t kh = 0; kh < d.k[1]; kh++) {
        int64_t oh = source(ih, kh, d.stride[1], d.pad[1], d.dil[1], d.out[1]);
        if (oh < 0) continue;
        for (int64_t kw = 0; kw < d.k[2]; kw++) {
          int64_t ow = source(iw, kw, d.stride[2], d.pad[2], d.dil[2], d.out[2]);
          if (ow < 0) continue;
          int64_t row = c * k_n + (kd * d.k[1] + kh) * d.k[2] + kw;
          sum += col[row * out_n + (od * d.out[1] + oh) * d.out[2] + ow];
        }
      }
    }
    x[i] = sum;
  }
}

template <class T> int launch(int device, const opd__cuda_im2col *d) {
  int64_t out_n = d->out[0] * d->out[1] * d->out[2], k_n = d->k[0] * d->k[1] * d->k[2];
  int64_t total = d->fold ? d->icg * d->in[0] * d->in[1] * d->in[2] : d->icg * k_n * out_n;
  if (total == 0) return 0;
  int64_t b = (total + THREADS - 1) / THREADS;
  unsigned blocks = (unsigned)(b < 65536 ? b : 65536);
  cudaStream_t s = (cudaStream_t)opd_cuda_current_stream(device);
  if (d->fold)
    col2im<T><<<blocks, THREADS, 0, s>>>(*d);
  else
    im2col<T><<<blocks, THREADS, 0, s>>>(*d);
  return opd__cuda_check_launch(device,
                                d->fold ? "a col2im kernel launch" : "an im2col kernel launch");
}

} // namespace

extern "C" int opd__cuda_launch_im2col(int device, const opd__cuda_im2col *d) {
  int rc = opd__cuda_use_device(device);
  if (rc) return rc;
  return d->dtype == 7 ? launch<double>(device, d) : launch<float>(device, d);
}

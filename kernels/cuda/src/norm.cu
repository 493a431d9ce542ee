/* norm.cu: the device code of native_batch_norm and its backward operator,
 * native_layer_norm_backward, the backward operators of _softmax and _log_softmax, nll_loss,
 * embedding_dense_backward and native_dropout.
 *
 * [Note: CUDA normalizations in double]
 * As the CPU kernels ([Note: Normalization and losses in double] in
 * kernels/cpu/norm_buffers.h), every operand is read as double, the statistics and sums are
 * accumulated in double and each result is rounded once to its dtype, so that the CUDA
 * results round as the CPU's do. The operands are contiguous (cuda_norm.c copies the others);
 * vectors (weights, statistics) may be strided. One block takes one channel (batch norm) or
 * one row (layer norm): its threads stride over the group's elements and sum with
 * block_reduce; the per-column sums (layer norm's grad_weight and grad_bias) and softmax's
 * backward take one thread per column, which walks it in order. Simple and exact rather than
 * fast: a channel of a batch norm is one block however large it is.
 */
#include <cuda_runtime.h>

#include "cuda_internal.h"
#include "device_util.cuh"
#include "opd/cuda.h"

namespace opd_cuda {
namespace {

constexpr int THREADS = 256;
constexpr int64_t MAX_BLOCKS = 65535;

__device__ __forceinline__ double vget(const opd__cuda_vec &v, int64_t i, double absent) {
  if (!v.data) return absent;
  return load<double>((const char *)v.data + i * v.stride * elsize(v.dtype), v.dtype);
}

__device__ __forceinline__ void vset(const opd__cuda_vec &v, int64_t i, double value) {
  if (v.data) store<double>((char *)v.data + i * v.stride * elsize(v.dtype), v.dtype, value);
}

/* the offset of element i (of N S) of channel ch in a contiguous (N, C, S) tensor */
__device__ __forceinline__ int64_t bn_at(const opd__cuda_norm &d, int64_t ch, int64_t i) {
  return (i / d.s * d.c + ch) * d.s + i % d.s;
}

__global__ void batch_norm_kernel(opd__cuda_norm d) {
  __shared__ double shared[32];
  const int64_t count = d.n * d.s;
  for (int64_t ch = blockIdx.x; ch < d.c; ch += gridDim.x) {
    double mean, invstd, var = 0;
    if (d.training) {
      double sum = 0, sq = 0;
      for (int64_t i = threadIdx.x; i < count; i += blockDim.x)
        sum += vget(d.x, bn_at(d, ch, i), 0);
      mean = block_reduce<double, false>(sum, shared) / (double)count;
      for (int64_t i = threadIdx.x; i < count; i += blockDim.x) {
        double dev = vget(d.x, bn_at(d, ch, i), 0) - mean;
        sq += dev * dev;
      }
      var = block_reduce<double, false>(sq, shared); /* the sum of squared deviations */
      invstd = 1 / sqrt(var / (double)count + d.eps);
    } else {
      mean = vget(d.mean, ch, 0);
      invstd = 1 / sqrt(vget(d.stat, ch, 0) + d.eps);
    }
    double scale = invstd * vget(d.weight, ch, 1), shift = vget(d.bias, ch, 0);
    for (int64_t i = threadIdx.x; i < count; i += blockDim.x) {
      int64_t at = bn_at(d, ch, i);
      vset(d.out[0], at, (vget(d.x, at, 0) - mean) * scale + shift);
    }
    if (threadIdx.x == 0 && d.training) {
      vset(d.out[1], ch, mean);
      vset(d.out[2], ch, invstd);
      double m = d.momentum;
      if (d.running_mean.data)
        vset(d.running_mean, ch, (1 - m) * vget(d.running_mean, ch, 0) + m * mean);
      if (d.running_var.data)
        vset(d.running_var, ch,
             (1 - m) * vget(d.running_var, ch, 0) + m * var / (double)(count - 1));
    }
  }
}

__global__ void batch_norm_backward_kernel(opd__cuda_norm d) {
  __shared__ double shared[32];
  const int64_t count = d.n * d.s;
  for (int64_t ch = blockIdx.x; ch < d.c; ch += gridDim.x) {
    double mean = vget(d.mean, ch, 0), stat = vget(d.stat, ch, 0);
    double invstd = d.training ? stat : 1 / sqrt(stat + d.eps);
    double sum = 0, dot = 0;
    for (int64_t i = threadIdx.x; i < count; i += blockDim.x) {
      int64_t at = bn_at(d, ch, i);
      double g = vget(d.g, at, 0);
      sum += g;
      dot += g * (vget(d.x, at, 0) - mean);
    }
    sum = block_reduce<double, false>(sum, shared);
    dot = block_reduce<double, false>(dot, shared);
    double scale = invstd * vget(d.weight, ch, 1);
    double proj = dot * invstd * invstd / (double)count, gmean = sum / (double)count;
    if (d.out[0].data)
      for (int64_t i = threadIdx.x; i < count; i += blockDim.x) {
        int64_t at = bn_at(d, ch, i);
        double g = vget(d.g, at, 0), x = vget(d.x, at, 0);
        vset(d.out[0], at, d.training ? (g - gmean - (x - mean) * proj) * scale : g * scale);
      }
    if (threadIdx.x == 0) {
      vset(d.out[1], ch, dot * invstd);
      vset(d.out[2], ch, sum);
    }
  }
}

/* layer norm's grad_input: a block per row of c elements */
__global__ void layer_norm_grad_input_kernel(opd__cuda_norm d) {
  __shared__ double shared[32];
  const int64_t n = d.c;
  for (int64_t r = blockIdx.x; r < d.n; r += gridDim.x) {
    double mean = vget(d.mean, r, 0), rstd = vget(d.stat, r, 0), sh = 0, shx = 0;
    for (int64_t j = threadIdx.x; j < n; j += blockDim.x) {
      double h = vget(d.g, r * n + j, 0) * vget(d.weight, j, 1);
      sh += h;
      shx += h * (vget(d.x, r * n + j, 0) - mean) * rstd;
    }
    sh = block_reduce<double, false>(sh, shared);
    shx = block_reduce<double, false>(shx, shared);
    for (int64_t j = threadIdx.x; j < n; j += blockDim.x) {
      double h = vget(d.g, r * n + j, 0) * vget(d.weight, j, 1);
      double x = vget(d.x, r * n + j, 0);
      vset(d.out[0], r * n + j, rstd / (double)n * ((double)n * h - sh - (x - mean) * rstd * shx));
    }
  }
}

/* layer norm's grad_weight and grad_bias: a thread per column, over the rows in order */
__global__ void layer_norm_grad_params_kernel(opd__cuda_norm d) {
  const int64_t n = d.c;
  for (int64_t j = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; j < n;
       j += (int64_t)gridDim.x * blockDim.x) {
    double gw = 0, gb = 0;
    for (int64_t r = 0; r < d.n; r++) {
      double g = vget(d.g, r * n + j, 0);
      gw += g * (vget(d.x, r * n + j, 0) - vget(d.mean, r, 0)) * vget(d.stat, r, 0);
      gb += g;
    }
    vset(d.out[1], j, gw);
    vset(d.out[2], j, gb);
  }
}

/* softmax's backward: a thread per (outer, inner) column of len c, with y the forward's
 * output: y (g - sum(g y)), or for log_softmax g - exp(y) sum(g) */
__global__ void softmax_backward_kernel(opd__cuda_norm d) {
  const bool is_log = d.kind == OPD_CUDA_NORM_LOG_SOFTMAX_BACKWARD;
  for (int64_t col = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; col < d.n * d.s;
       col += (int64_t)gridDim.x * blockDim.x) {
    int64_t base = col / d.s * d.c * d.s + col % d.s;
    double sum = 0;
    for (int64_t j = 0; j < d.c; j++) {
      int64_t at = base + j * d.s;
      sum += is_log ? vget(d.g, at, 0) : vget(d.g, at, 0) * vget(d.x, at, 0);
    }
    for (int64_t j = 0; j < d.c; j++) {
      int64_t at = base + j * d.s;
      double g = vget(d.g, at, 0), y = vget(d.x, at, 0);
      vset(d.out[0], at, is_log ? g - exp(y) * sum : y * (g - sum));
    }
  }
}

/* ---- nll_loss, embedding_dense_backward ---- */

__device__ bool nll_target_ok(const opd__cuda_nll &d, int64_t k) {
  if (k == d.ignore_index || (k >= 0 && k < d.classes)) return true;
  if (atomicCAS(d.bad, 0, 1) == 0) *d.bad_value = k;
  return false;
}

/* one thread: the batch in order, as the CPU kernel sums it */
__global__ void nll_forward_kernel(opd__cuda_nll d) {
  double sum = 0, total = 0;
  for (int64_t i = 0; i < d.batch; i++) {
    int64_t k =
        load<int64_t>((const char *)d.target.data + i * elsize(d.target.dtype), d.target.dtype);
    if (!nll_target_ok(d, k)) return;
    double loss = 0;
    if (k != d.ignore_index) {
      double wi = vget(d.weight, k, 1);
      loss = -wi * vget(d.self, i * d.classes + k, 0);
      sum += loss;
      total += wi;
    }
    if (d.per_sample) vset(d.out, i, loss);
  }
  if (!d.per_sample) vset(d.out, 0, d.mean ? sum / total : sum);
  vset(d.out_total, 0, d.per_sample ? 0 : total); /* 0 for per-sample losses (PyTorch's) */
}

__global__ void nll_backward_kernel(opd__cuda_nll d) {
  double scale = d.mean ? 1 / vget(d.total_weight, 0, 1) : 1;
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < d.batch;
       i += (int64_t)gridDim.x * blockDim.x) {
    int64_t k =
        load<int64_t>((const char *)d.target.data + i * elsize(d.target.dtype), d.target.dtype);
    if (!nll_target_ok(d, k) || k == d.ignore_index) continue;
    double wi = vget(d.weight, k, 1);
    vset(d.out, i * d.classes + k,
         -wi * (d.per_sample ? vget(d.grad, i, 0) : vget(d.grad, 0, 0) * scale));
  }
}

__device__ int64_t embedding_index(const opd__cuda_embedding_backward &d, int64_t i) {
  return load<int64_t>((const char *)d.indices.data + i * elsize(d.indices.dtype), d.indices.dtype);
}

/* each index's count (exact in double whatever the order); an index out of range is flagged */
__global__ void embedding_count_kernel(opd__cuda_embedding_backward d) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < d.n;
       i += (int64_t)gridDim.x * blockDim.x) {
    int64_t k = embedding_index(d, i);
    if (k < 0 || k >= d.num_weights)
      *d.bad = 1;
    else
      atomicAdd(&d.count[k], 1.0);
  }
}

/* a thread per column: the rows in index order, as the CPU kernel adds them */
__global__ void embedding_sum_kernel(opd__cuda_embedding_backward d) {
  for (int64_t j = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; j < d.d;
       j += (int64_t)gridDim.x * blockDim.x)
    for (int64_t i = 0; i < d.n; i++) {
      int64_t k = embedding_index(d, i);
      if (k < 0 || k >= d.num_weights || k == d.padding_idx) continue;
      double scale = d.scale_grad_by_freq ? 1 / d.count[k] : 1;
      d.w[k * d.d + j] += vget(d.grad, i * d.d + j, 0) * scale;
    }
}

__global__ void embedding_store_kernel(opd__cuda_embedding_backward d) {
  for (int64_t e = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; e < d.num_weights * d.d;
       e += (int64_t)gridDim.x * blockDim.x)
    vset(d.out, e, d.w[e]);
}

/* ---- dropout ---- */

__device__ __forceinline__ uint64_t splitmix64(uint64_t z) {
  z += 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

__global__ void dropout_kernel(opd__cuda_dropout d) {
  const int es = elsize(d.dtype);
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < d.n;
       i += (int64_t)gridDim.x * blockDim.x) {
    /* a uniform double in [0, 1) from the hash of (seed, i) */
    double u = (double)(splitmix64(d.seed ^ splitmix64((uint64_t)i)) >> 11) * 0x1p-53;
    bool keep = u < d.p1m;
    d.mask[i] = keep;
    char *e = (char *)d.out + i * es;
    if (d.dtype == OPD_FLOAT64)
      *(double *)e = keep ? *(double *)e * d.scale : 0.0;
    else
      store<float>(e, d.dtype, keep ? load<float>(e, d.dtype) * (float)d.scale : 0.0f);
  }
}

unsigned blocks_for(int64_t groups) {
  return (unsigned)(groups < 1 ? 1 : groups < MAX_BLOCKS ? groups : MAX_BLOCKS);
}

unsigned grid_for(int64_t n) {
  return blocks_for((n + THREADS - 1) / THREADS);
}

} // namespace
} // namespace opd_cuda

extern "C" int opd__cuda_launch_norm(int device, const opd__cuda_norm *d) {
  using namespace opd_cuda;
  int rc = opd__cuda_use_device(device);
  if (rc) return rc;
  cudaStream_t s = (cudaStream_t)opd_cuda_current_stream(device);
  switch (d->kind) {
  case OPD_CUDA_NORM_BATCH:
    if (d->c > 0) batch_norm_kernel<<<blocks_for(d->c), THREADS, 0, s>>>(*d);
    break;
  case OPD_CUDA_NORM_BATCH_BACKWARD:
    if (d->c > 0) batch_norm_backward_kernel<<<blocks_for(d->c), THREADS, 0, s>>>(*d);
    break;
  case OPD_CUDA_NORM_LAYER_BACKWARD:
    if (d->out[0].data && d->n > 0 && d->c > 0)
      layer_norm_grad_input_kernel<<<blocks_for(d->n), THREADS, 0, s>>>(*d);
    if ((d->out[1].data || d->out[2].data) && d->c > 0)
      layer_norm_grad_params_kernel<<<grid_for(d->c), THREADS, 0, s>>>(*d);
    break;
  default:
    if (d->n * d->s > 0) softmax_backward_kernel<<<grid_for(d->n * d->s), THREADS, 0, s>>>(*d);
    break;
  }
  return opd__cuda_check_launch(device, "a normalization kernel launch");
}

extern "C" int opd__cuda_launch_nll(int device, const opd__cuda_nll *d) {
  using namespace opd_cuda;
  int rc = opd__cuda_use_device(device);
  if (rc) return rc;
  cudaStream_t s = (cudaStream_t)opd_cuda_current_stream(device);
  if (!d->backward)
    nll_forward_kernel<<<1, 1, 0, s>>>(*d);
  else if (d->batch > 0)
    nll_backward_kernel<<<grid_for(d->batch), THREADS, 0, s>>>(*d);
  return opd__cuda_check_launch(device, "an nll_loss kernel launch");
}

extern "C" int opd__cuda_launch_embedding_backward(int device,
                                                   const opd__cuda_embedding_backward *d) {
  using namespace opd_cuda;
  int rc = opd__cuda_use_device(device);
  if (rc) return rc;
  cudaStream_t s = (cudaStream_t)opd_cuda_current_stream(device);
  if (d->n > 0) embedding_count_kernel<<<grid_for(d->n), THREADS, 0, s>>>(*d);
  if (d->n > 0 && d->d > 0) embedding_sum_kernel<<<grid_for(d->d), THREADS, 0, s>>>(*d);
  if (d->num_weights * d->d > 0)
    embedding_store_kernel<<<grid_for(d->num_weights * d->d), THREADS, 0, s>>>(*d);
  return opd__cuda_check_launch(device, "an embedding_dense_backward kernel launch");
}

extern "C" int opd__cuda_launch_dropout(int device, const opd__cuda_dropout *d) {
  using namespace opd_cuda;
  int rc = opd__cuda_use_device(device);
  if (rc || d->n == 0) return rc;
  cudaStream_t s = (cudaStream_t)opd_cuda_current_stream(device);
  dropout_kernel<<<grid_for(d->n), THREADS, 0, s>>>(*d);
  return opd__cuda_check_launch(device, "a dropout kernel launch");
}

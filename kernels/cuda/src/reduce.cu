/* reduce.cu: the device code of the reductions (sum, mean, amax, argmax over any dims),
 * _softmax / _log_softmax, native_layer_norm and index_select.
 *
 * [Note: CUDA reductions]
 * A reduction's output element o reduces the elements of the reduced dims (descriptor:
 * kept dims first, then reduced ones, with the input's strides). When there are many
 * outputs a warp reduces each one (lanes stride over the reduced elements, then shuffle);
 * when there are few, a block does (then a warp shuffle and a shared-memory step). When
 * there are few outputs with many elements each (x.sum() over 2^30 elements), one block per
 * output would leave the GPU idle: each output's elements are split into `splits` equal
 * slices, a block reduces a slice into a partial state (value and index, in the accumulate
 * type, in a scratch buffer from the caching allocator on the same stream), and a second
 * pass combines each output's partials in slice order and writes the output. Values
 * accumulate in float for float16/bfloat16/float32, in double for float64 and in wrapping
 * int64 for the integers and bool; argmax keeps the first index of the maximum, a NaN
 * counting as larger than any number (PyTorch's rule).
 *
 * [Note: CUDA softmax]
 * The input is made contiguous and seen as [outer, len, inner]. With inner == 1 a block
 * takes a row: the row is read once from global memory into shared memory (when it fits,
 * converted to the accumulate type), then max, the sum of exp(x - max) and the output come
 * from there; a longer row is read three times. With inner > 1 a thread takes one column
 * (coalesced across the threads of a warp) and reads it three times.
 */
#include <cuda_runtime.h>

#include "cuda_internal.h"
#include "device_util.cuh"
#include "opd/cuda.h"
#include "opd/error.h"

namespace opd_cuda {
namespace {

constexpr int THREADS = 256;
constexpr int SOFTMAX_SHARED_BYTES = 32 * 1024;

struct red_geom {
  int ndim, nkept;
  int64_t sizes[OPD_CUDA_MAX_DIMS];
  int64_t strides[OPD_CUDA_MAX_DIMS];
};

template <class T> __device__ __forceinline__ T acc_add(T a, T b) {
  if constexpr (is_float<T>::value)
    return a + b;
  else
    return (T)((uint64_t)a + (uint64_t)b);
}

/* (value, index) of argmax: is a better than b? */
template <class T> __device__ __forceinline__ bool arg_better(T av, int64_t ai, T bv, int64_t bi) {
  if constexpr (is_float<T>::value) {
    if (av != av) return bv == bv || ai < bi;
    if (bv != bv) return false;
  }
  return av > bv || (av == bv && ai < bi);
}

/* (value, index) of argmin: is a better than b? (the first minimum; a NaN is smaller than any
 * number) */
template <class T>
__device__ __forceinline__ bool arg_better_min(T av, int64_t ai, T bv, int64_t bi) {
  if constexpr (is_float<T>::value) {
    if (av != av) return bv == bv || ai < bi;
    if (bv != bv) return false;
  }
  return av < bv || (av == bv && ai < bi);
}

/* min with NaN propagation */
template <class T> __device__ __forceinline__ T min_nan(T a, T b) {
  if constexpr (is_float<T>::value)
    return (a != a || a < b) ? a : (b != b ? b : (a < b ? a : b));
  else
    return a < b ? a : b;
}

/* the index of an argmax state that has seen no element */
constexpr int64_t EMPTY = INT64_MAX;

/* the identity of max (NaN still propagates through max_nan) */
template <class T> __device__ __forceinline__ T lowest() {
  if constexpr (is_float<T>::value)
    return -(T)INFINITY;
  else
    return INT64_MIN;
}

/* the identity of a reduction's combine */
template <class T> __device__ __forceinline__ T identity(int op) {
  switch (op) {
  case OPD_CUDA_RED_AMAX:
  case OPD_CUDA_RED_ARGMAX: return lowest<T>();
  case OPD_CUDA_RED_AMIN:
  case OPD_CUDA_RED_ARGMIN:
    if constexpr (is_float<T>::value)
      return (T)INFINITY;
    else
      return INT64_MAX;
  case OPD_CUDA_RED_PROD:
  case OPD_CUDA_RED_ALL: return (T)1;
  default: return (T)0;
  }
}

template <class T> struct red_state {
  T v;
  int64_t i;
};

template <class T> __device__ red_state<T> combine(int op, red_state<T> a, red_state<T> b) {
  switch (op) {
  case OPD_CUDA_RED_AMAX: return {max_nan(a.v, b.v), 0};
  case OPD_CUDA_RED_ARGMAX:
    if (a.i == EMPTY) return b;
    if (b.i == EMPTY) return a;
    return arg_better(a.v, a.i, b.v, b.i) ? a : b;
  case OPD_CUDA_RED_AMIN: return {min_nan(a.v, b.v), 0};
  case OPD_CUDA_RED_ARGMIN:
    if (a.i == EMPTY) return b;
    if (b.i == EMPTY) return a;
    return arg_better_min(a.v, a.i, b.v, b.i) ? a : b;
  case OPD_CUDA_RED_PROD:
    if constexpr (is_float<T>::value)
      return {a.v * b.v, 0};
    else
      return {(T)((uint64_t)a.v * (uint64_t)b.v), 0};
  case OPD_CUDA_RED_ANY:
  case OPD_CUDA_RED_ALL:
    if constexpr (is_float<T>::value)
      return {a.v, 0}; /* (read into int64 only) */
    else
      return {op == OPD_CUDA_RED_ANY ? (a.v | b.v) : (a.v & b.v), 0};
  default: return {acc_add(a.v, b.v), 0};
  }
}

template <class T> __device__ red_state<T> warp_combine(int op, red_state<T> s) {
  for (int o = 16; o > 0; o >>= 1) {
    red_state<T> t = {__shfl_xor_sync(0xffffffffu, s.v, o), __shfl_xor_sync(0xffffffffu, s.i, o)};
    s = combine(op, s, t);
  }
  return s;
}

/* The final value of output o from its reduced state. */
template <class T> __device__ void write_output(const opd__cuda_red &d, int64_t o, red_state<T> s) {
  void *p = (char *)d.out + o * elsize(d.out_dtype);
  switch (d.op) {
  case OPD_CUDA_RED_MEAN: store<T>(p, d.out_dtype, s.v / (T)d.nred); break;
  case OPD_CUDA_RED_ARGMAX:
  case OPD_CUDA_RED_ARGMIN: *(int64_t *)p = s.i; break;
  default: store<T>(p, d.out_dtype, s.v);
  }
}

/* Partial states of a split reduction: nout * splits of them, output-major. */
template <class T> struct red_partials {
  T *v;
  int64_t *i;
  int64_t splits;
};

/* warp_per_output: each warp of the block reduces one output; else the block reduces one
 * output, or with p.splits > 1 one slice of one (its state goes to p) */
template <class T>
__global__ void reduce_kernel(opd__cuda_red d, red_geom g, bool warp_per_output,
                              red_partials<T> p) {
  __shared__ T sv[32];
  __shared__ int64_t si[32];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nwarps = blockDim.x >> 5;
  const int64_t splits = warp_per_output ? 1 : p.splits;
  const int64_t slice = (d.nred + splits - 1) / splits, items = d.nout * splits;
  /* ob is uniform over the block, so that every thread meets the same __syncthreads */
  const int64_t step = warp_per_output ? (int64_t)gridDim.x * nwarps : gridDim.x;
  const int64_t start = warp_per_output ? (int64_t)blockIdx.x * nwarps : blockIdx.x;
  const int width = warp_per_output ? 32 : blockDim.x;
  const int me = warp_per_output ? lane : threadIdx.x;
  const T init = identity<T>(d.op);
  for (int64_t ob = start; ob < items; ob += step) {
    const int64_t o = warp_per_output ? ob + warp : ob / splits;
    const int64_t lo = warp_per_output ? 0 : ob % splits * slice;
    const int64_t hi = lo + slice < d.nred ? lo + slice : d.nred;
    red_state<T> s = {init, EMPTY};
    if (o < d.nout) {
      int64_t base = 0, rest = o;
      for (int k = g.nkept - 1; k >= 0; k--) {
        base += (rest % g.sizes[k]) * g.strides[k];
        rest /= g.sizes[k];
      }
      const int esz = elsize(d.in_dtype);
      for (int64_t r = lo + me; r < hi; r += width) {
        int64_t off = base, rr = r;
        for (int k = g.ndim - 1; k >= g.nkept; k--) {
          off += (rr % g.sizes[k]) * g.strides[k];
          rr /= g.sizes[k];
        }
        const char *at = (const char *)d.in + off * esz;
        red_state<T> e = {
            d.nonzero ? (T)(load<double>(at, d.in_dtype) != 0) : load<T>(at, d.in_dtype), r};
        if constexpr (is_float<T>::value)
          if (d.op == OPD_CUDA_RED_NANSUM && e.v != e.v) e.v = 0;
        s = combine(d.op, s, e);
      }
    }
    s = warp_combine(d.op, s);
    if (!warp_per_output) {
      __syncthreads();
      if (lane == 0) {
        sv[warp] = s.v;
        si[warp] = s.i;
      }
      __syncthreads();
      if (warp == 0) {
        red_state<T> t =
            lane < nwarps ? red_state<T>{sv[lane], si[lane]} : red_state<T>{init, EMPTY};
        s = warp_combine(d.op, t);
      }
    }
    if (o < d.nout && me == 0) {
      if (splits > 1) {
        p.v[ob] = s.v;
        p.i[ob] = s.i;
      } else {
        write_output(d, o, s);
      }
    }
  }
}

/* The second pass of a split reduction: a warp per output combines its partials. */
template <class T> __global__ void reduce_finish(opd__cuda_red d, red_partials<T> p) {
  const int lane = threadIdx.x & 31;
  const int64_t nwarps = blockDim.x >> 5;
  const T init = identity<T>(d.op);
  for (int64_t o = blockIdx.x * nwarps + (threadIdx.x >> 5); o < d.nout;
       o += (int64_t)gridDim.x * nwarps) {
    red_state<T> s = {init, EMPTY};
    for (int64_t k = lane; k < p.splits; k += 32)
      s = combine(d.op, s, red_state<T>{p.v[o * p.splits + k], p.i[o * p.splits + k]});
    s = warp_combine(d.op, s);
    if (lane == 0) write_output(d, o, s);
  }
}

/* var, std and the vector norms: a thread per output walks its reduced elements in row-major
 * order in double, as the CPU kernels do ([Note: Moments and norms in double] in
 * kernels/cpu/reduce_moments.c) */
__global__ void moments_kernel(opd__cuda_red d, red_geom g) {
  const int esz = elsize(d.in_dtype), osz = elsize(d.out_dtype);
  for (int64_t o = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; o < d.nout;
       o += (int64_t)gridDim.x * blockDim.x) {
    int64_t base = 0, rest = o;
    for (int k = g.nkept - 1; k >= 0; k--) {
      base += (rest % g.sizes[k]) * g.strides[k];
      rest /= g.sizes[k];
    }
    double mean = 0, m2 = 0, n = 0, sum = 0, mx = 0, mn = INFINITY, count = 0;
    for (int64_t r = 0; r < d.nred; r++) {
      int64_t off = base, rr = r;
      for (int k = g.ndim - 1; k >= g.nkept; k--) {
        off += (rr % g.sizes[k]) * g.strides[k];
        rr /= g.sizes[k];
      }
      double x = load<double>((const char *)d.in + off * esz, d.in_dtype);
      if (d.op != OPD_CUDA_RED_NORM) {
        n += 1;
        double delta = x - mean;
        mean += delta / n;
        m2 += delta * (x - mean);
        continue;
      }
      double v = fabs(x), p = d.ord;
      if (p == 0)
        count += x != 0;
      else if (p == INFINITY)
        mx = max_nan(mx, v);
      else if (p == -INFINITY)
        mn = v < mn || v != v ? v : mn;
      else if (p == 1)
        sum += v;
      else if (p == 2)
        sum += v * v;
      else
        sum += pow(v, p);
    }
    char *dst = (char *)d.out + o * osz;
    if (d.op == OPD_CUDA_RED_NORM) {
      double p = d.ord, r = d.nred == 0      ? 0
                            : p == 0         ? count
                            : p == INFINITY  ? mx
                            : p == -INFINITY ? mn
                            : p == 1         ? sum
                            : p == 2         ? sqrt(sum)
                                             : pow(sum, 1 / p);
      store<double>(dst, d.out_dtype, r);
      continue;
    }
    double div = (double)d.nred - d.correction;
    double var = d.nred > 0 ? m2 / (div > 0 ? div : 0) : (double)NAN;
    if (d.nred == 0) mean = NAN;
    store<double>(dst, d.out_dtype, d.op == OPD_CUDA_RED_STD ? sqrt(var) : var);
    if (d.mean) store<double>((char *)d.mean + o * osz, d.out_dtype, mean);
  }
}

/* How many slices each output's elements are split into ([Note: CUDA reductions]): enough
 * for about SPLIT_BLOCKS blocks in all, each with at least SPLIT_MIN elements. */
constexpr int64_t SPLIT_BLOCKS = 1024, SPLIT_MIN = 16 * THREADS;

int64_t reduce_splits(int64_t nout, int64_t nred) {
  int64_t by_blocks = (SPLIT_BLOCKS + nout - 1) / nout, by_size = nred / SPLIT_MIN;
  int64_t n = by_blocks < by_size ? by_blocks : by_size;
  return n > 1 ? n : 1;
}

template <class T> int reduce_launch(int device, const opd__cuda_red *d, cudaStream_t s) {
  red_geom g;
  g.ndim = d->ndim;
  g.nkept = d->nkept;
  for (int k = 0; k < d->ndim; k++) {
    g.sizes[k] = d->sizes[k];
    g.strides[k] = d->strides[k];
  }
  /* few outputs with many elements each: a block per output, or per slice of one */
  bool warp_per_output = d->nout >= 1024 || d->nred <= 256;
  red_partials<T> p = {nullptr, nullptr, warp_per_output ? 1 : reduce_splits(d->nout, d->nred)};
  const size_t nparts = (size_t)(d->nout * p.splits), ioff = (nparts * sizeof(T) + 7) / 8 * 8;
  const size_t scratch_bytes = ioff + nparts * sizeof(int64_t);
  void *scratch = nullptr;
  if (p.splits > 1) {
    if (!(scratch = opd__cuda_alloc(device, scratch_bytes))) return opd_last_error_code();
    p.v = (T *)scratch;
    p.i = (int64_t *)((char *)scratch + ioff);
  }
  int64_t groups =
      warp_per_output ? (d->nout + THREADS / 32 - 1) / (THREADS / 32) : d->nout * p.splits;
  unsigned blocks = (unsigned)(groups < 65536 ? groups : 65536);
  reduce_kernel<T><<<blocks, THREADS, 0, s>>>(*d, g, warp_per_output, p);
  int rc = opd__cuda_check_launch(device, "a reduction kernel launch");
  if (rc == 0 && p.splits > 1) {
    int64_t fb = (d->nout + THREADS / 32 - 1) / (THREADS / 32);
    reduce_finish<T><<<(unsigned)(fb < 65536 ? fb : 65536), THREADS, 0, s>>>(*d, p);
    rc = opd__cuda_check_launch(device, "a reduction's second pass");
  }
  /* freed on the stream that uses it: the next user of the block runs after both passes */
  if (scratch) opd__cuda_free(device, scratch, scratch_bytes);
  return rc;
}

/* ---- softmax ---- */

template <class T> __device__ __forceinline__ T m_exp(T x) {
  if constexpr (sizeof(T) == 4)
    return expf(x);
  else
    return exp(x);
}
template <class T> __device__ __forceinline__ T m_log(T x) {
  if constexpr (sizeof(T) == 4)
    return logf(x);
  else
    return log(x);
}

/* inner == 1: a block per row; `cached`: the row fits in dynamic shared memory */
template <class T> __global__ void softmax_rows(opd__cuda_softmax_args d, bool cached) {
  extern __shared__ __align__(16) unsigned char smem_raw[]; /* holds T (double: 8-aligned) */
  T *row = (T *)smem_raw;
  __shared__ T red[32];
  const int ie = elsize(d.in_dtype), oe = elsize(d.out_dtype);
  for (int64_t r = blockIdx.x; r < d.outer; r += gridDim.x) {
    const char *in = (const char *)d.in + r * d.len * ie;
    char *out = (char *)d.out + r * d.len * oe;
    T mx = load<T>(in, d.in_dtype);
    for (int64_t j = threadIdx.x; j < d.len; j += blockDim.x) {
      T x = load<T>(in + j * ie, d.in_dtype);
      if (cached) row[j] = x;
      mx = max_nan(mx, x);
    }
    mx = block_reduce<T, true>(mx, red);
    T sum = 0;
    for (int64_t j = threadIdx.x; j < d.len; j += blockDim.x)
      sum += m_exp((cached ? row[j] : load<T>(in + j * ie, d.in_dtype)) - mx);
    sum = block_reduce<T, false>(sum, red);
    const T lsum = m_log(sum);
    for (int64_t j = threadIdx.x; j < d.len; j += blockDim.x) {
      T x = cached ? row[j] : load<T>(in + j * ie, d.in_dtype);
      store<T>(out + j * oe, d.out_dtype, d.log ? x - mx - lsum : m_exp(x - mx) / sum);
    }
    __syncthreads(); /* row is rewritten by the next iteration */
  }
}

/* inner > 1: a thread per column */
template <class T> __global__ void softmax_columns(opd__cuda_softmax_args d) {
  const int ie = elsize(d.in_dtype), oe = elsize(d.out_dtype);
  for (int64_t c = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; c < d.outer * d.inner;
       c += (int64_t)gridDim.x * blockDim.x) {
    const int64_t o = c / d.inner, i = c % d.inner, base = o * d.len * d.inner + i;
    const char *in = (const char *)d.in;
    char *out = (char *)d.out;
    T mx = load<T>(in + base * ie, d.in_dtype);
    for (int64_t j = 0; j < d.len; j++)
      mx = max_nan(mx, load<T>(in + (base + j * d.inner) * ie, d.in_dtype));
    T sum = 0;
    for (int64_t j = 0; j < d.len; j++)
      sum += m_exp(load<T>(in + (base + j * d.inner) * ie, d.in_dtype) - mx);
    const T lsum = m_log(sum);
    for (int64_t j = 0; j < d.len; j++) {
      T x = load<T>(in + (base + j * d.inner) * ie, d.in_dtype);
      store<T>(out + (base + j * d.inner) * oe, d.out_dtype,
               d.log ? x - mx - lsum : m_exp(x - mx) / sum);
    }
  }
}

template <class T> void softmax_launch(const opd__cuda_softmax_args *d, cudaStream_t s) {
  if (d->inner == 1) {
    bool cached = d->len * (int64_t)sizeof(T) <= SOFTMAX_SHARED_BYTES;
    unsigned blocks = (unsigned)(d->outer < 65536 ? d->outer : 65536);
    int threads = d->len <= 32 ? 32 : d->len <= 128 ? 128 : THREADS;
    softmax_rows<T><<<blocks, threads, cached ? d->len * sizeof(T) : 0, s>>>(*d, cached);
  } else {
    int64_t n = d->outer * d->inner, b = (n + THREADS - 1) / THREADS;
    softmax_columns<T><<<(unsigned)(b < 65536 ? b : 65536), THREADS, 0, s>>>(*d);
  }
}

/* ---- layer norm: a block per row, in double as the CPU kernel ---- */

__global__ void layer_norm_rows(opd__cuda_layer_norm d) {
  __shared__ double red[32];
  const int es = elsize(d.dtype);
  for (int64_t r = blockIdx.x; r < d.rows; r += gridDim.x) {
    const char *x = (const char *)d.in + r * d.cols * es;
    double s = 0;
    for (int64_t j = threadIdx.x; j < d.cols; j += blockDim.x)
      s += load<double>(x + j * es, d.dtype);
    s = block_reduce<double, false>(s, red);
    const double mean = d.cols > 0 ? s / (double)d.cols : 0;
    double q = 0;
    for (int64_t j = threadIdx.x; j < d.cols; j += blockDim.x) {
      double v = load<double>(x + j * es, d.dtype) - mean;
      q += v * v;
    }
    q = block_reduce<double, false>(q, red);
    const double rstd = 1 / sqrt(q / (double)d.cols + d.eps);
    for (int64_t j = threadIdx.x; j < d.cols; j += blockDim.x) {
      double y = (load<double>(x + j * es, d.dtype) - mean) * rstd;
      if (d.weight) y *= load<double>((const char *)d.weight + j * es, d.dtype);
      if (d.bias) y += load<double>((const char *)d.bias + j * es, d.dtype);
      store<double>((char *)d.out + (r * d.cols + j) * es, d.dtype, y);
    }
    if (threadIdx.x == 0) {
      store<double>((char *)d.mean + r * es, d.dtype, mean);
      store<double>((char *)d.rstd + r * es, d.dtype, rstd);
    }
  }
}

/* ---- index_select ---- */

__global__ void gather(opd__cuda_gather d) {
  const int ie = elsize(d.index_dtype);
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < d.numel;
       i += (int64_t)gridDim.x * blockDim.x) {
    int64_t off = 0, rest = i;
    bool ok = true;
    for (int k = d.ndim - 1; k >= 0; k--) {
      int64_t idx = rest % d.sizes[k];
      rest /= d.sizes[k];
      if (k == d.dim) {
        idx = load<int64_t>((const char *)d.index + idx * d.index_stride * ie, d.index_dtype);
        if (idx < 0 || idx >= d.limit) {
          *d.error = 1;
          ok = false;
        }
      }
      off += idx * d.self_strides[k];
    }
    if (!ok) continue;
    const char *src = (const char *)d.self + off * d.elsize;
    char *dst = (char *)d.out + i * d.elsize;
    switch (d.elsize) {
    case 1: *(uint8_t *)dst = *(const uint8_t *)src; break;
    case 2: *(uint16_t *)dst = *(const uint16_t *)src; break;
    case 4: *(uint32_t *)dst = *(const uint32_t *)src; break;
    default: *(uint64_t *)dst = *(const uint64_t *)src; break;
    }
  }
}

cudaStream_t stream_of(int device) {
  return (cudaStream_t)opd_cuda_current_stream(device);
}

} // namespace
} // namespace opd_cuda

extern "C" int opd__cuda_launch_reduce(int device, const opd__cuda_red *d) {
  using namespace opd_cuda;
  int rc = opd__cuda_use_device(device);
  if (rc || d->nout == 0) return rc;
  if (d->op == OPD_CUDA_RED_VAR || d->op == OPD_CUDA_RED_STD || d->op == OPD_CUDA_RED_NORM) {
    red_geom g;
    g.ndim = d->ndim;
    g.nkept = d->nkept;
    for (int k = 0; k < d->ndim; k++) {
      g.sizes[k] = d->sizes[k];
      g.strides[k] = d->strides[k];
    }
    int64_t blocks = (d->nout + THREADS - 1) / THREADS;
    moments_kernel<<<(unsigned)(blocks < 65536 ? blocks : 65536), THREADS, 0, stream_of(device)>>>(
        *d, g);
    return opd__cuda_check_launch(device, "a moments kernel launch");
  }
  if (d->acc == 0) return reduce_launch<float>(device, d, stream_of(device));
  if (d->acc == 1) return reduce_launch<double>(device, d, stream_of(device));
  return reduce_launch<int64_t>(device, d, stream_of(device));
}

extern "C" int opd__cuda_launch_softmax(int device, const opd__cuda_softmax_args *d) {
  using namespace opd_cuda;
  int rc = opd__cuda_use_device(device);
  if (rc || d->outer == 0 || d->len == 0 || d->inner == 0) return rc;
  if (d->f64)
    softmax_launch<double>(d, stream_of(device));
  else
    softmax_launch<float>(d, stream_of(device));
  return opd__cuda_check_launch(device, "a softmax kernel launch");
}

extern "C" int opd__cuda_launch_layer_norm(int device, const opd__cuda_layer_norm *d) {
  using namespace opd_cuda;
  int rc = opd__cuda_use_device(device);
  if (rc || d->rows == 0) return rc;
  unsigned blocks = (unsigned)(d->rows < 65536 ? d->rows : 65536);
  layer_norm_rows<<<blocks, d->cols <= 64 ? 64 : THREADS, 0, stream_of(device)>>>(*d);
  return opd__cuda_check_launch(device, "a layer_norm kernel launch");
}

extern "C" int opd__cuda_launch_gather(int device, const opd__cuda_gather *d) {
  using namespace opd_cuda;
  int rc = opd__cuda_use_device(device);
  if (rc || d->numel == 0) return rc;
  int64_t b = (d->numel + THREADS - 1) / THREADS;
  gather<<<(unsigned)(b < 65536 ? b : 65536), THREADS, 0, stream_of(device)>>>(*d);
  return opd__cuda_check_launch(device, "an index_select kernel launch");
}

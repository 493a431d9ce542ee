/* device_util.cuh: device helpers shared by the CUDA kernels (internal): dtype loads and
 * stores with conversion to and from the compute type, warp and block reductions. */
#ifndef OPD_KERNELS_CUDA_DEVICE_UTIL_CUH
#define OPD_KERNELS_CUDA_DEVICE_UTIL_CUH

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <stdint.h>

namespace opd_cuda {

/* opd_dtype values (opd/dtype.h is C only; cuda_kernels.c asserts they agree). */
enum {
  OPD_UINT8 = 0,
  OPD_INT8 = 1,
  OPD_INT16 = 2,
  OPD_INT32 = 3,
  OPD_INT64 = 4,
  OPD_FLOAT16 = 5,
  OPD_FLOAT32 = 6,
  OPD_FLOAT64 = 7,
  OPD_BOOL = 11,
  OPD_BFLOAT16 = 15
};

template <class T> struct is_float { static constexpr bool value = false; };
template <> struct is_float<float> { static constexpr bool value = true; };
template <> struct is_float<double> { static constexpr bool value = true; };

/* The element of dtype dt at p, converted to CT as a C cast does (bool: 0 or 1). */
template <class CT> __device__ __forceinline__ CT load(const void *p, int dt) {
  switch (dt) {
  case OPD_BOOL: return (CT)(*(const uint8_t *)p != 0);
  case OPD_UINT8: return (CT)(*(const uint8_t *)p);
  case OPD_INT8: return (CT)(*(const int8_t *)p);
  case OPD_INT16: return (CT)(*(const int16_t *)p);
  case OPD_INT32: return (CT)(*(const int32_t *)p);
  case OPD_INT64: return (CT)(*(const int64_t *)p);
  case OPD_FLOAT16: return (CT)__half2float(*(const __half *)p);
  case OPD_BFLOAT16: return (CT)__bfloat162float(*(const __nv_bfloat16 *)p);
  case OPD_FLOAT32: return (CT)(*(const float *)p);
  default: return (CT)(*(const double *)p);
  }
}

/* v converted to dtype dt at p (bool: v != 0; integers: a C cast through int64). */
template <class CT> __device__ __forceinline__ void store(void *p, int dt, CT v) {
  switch (dt) {
  case OPD_BOOL: *(uint8_t *)p = v != (CT)0; break;
  case OPD_UINT8: *(uint8_t *)p = (uint8_t)(int64_t)v; break;
  case OPD_INT8: *(int8_t *)p = (int8_t)(int64_t)v; break;
  case OPD_INT16: *(int16_t *)p = (int16_t)(int64_t)v; break;
  case OPD_INT32: *(int32_t *)p = (int32_t)(int64_t)v; break;
  case OPD_INT64: *(int64_t *)p = (int64_t)v; break;
  case OPD_FLOAT16: *(__half *)p = __float2half_rn((float)v); break;
  case OPD_BFLOAT16: *(__nv_bfloat16 *)p = __float2bfloat16_rn((float)v); break;
  case OPD_FLOAT32: *(float *)p = (float)v; break;
  default: *(double *)p = (double)v; break;
  }
}

__host__ __device__ __forceinline__ int elsize(int dt) {
  switch (dt) {
  case OPD_BOOL:
  case OPD_UINT8:
  case OPD_INT8: return 1;
  case OPD_INT16:
  case OPD_FLOAT16:
  case OPD_BFLOAT16: return 2;
  case OPD_INT32:
  case OPD_FLOAT32: return 4;
  default: return 8;
  }
}

template <class T> __device__ __forceinline__ T warp_sum(T v) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

/* max with NaN propagation (ATen's max_propagate_nan) */
template <class T> __device__ __forceinline__ T max_nan(T a, T b) {
  if constexpr (is_float<T>::value)
    return (a != a || a > b) ? a : (b != b ? b : (a > b ? a : b));
  else
    return a > b ? a : b;
}

template <class T> __device__ __forceinline__ T warp_max(T v) {
  for (int o = 16; o > 0; o >>= 1) v = max_nan(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

/* The sum (or max) of v over the block (blockDim.x a multiple of 32, at most 1024); every
 * thread gets the result. `shared` holds 32 values. */
template <class T, bool MAX> __device__ T block_reduce(T v, T *shared) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nwarps = blockDim.x >> 5;
  v = MAX ? warp_max(v) : warp_sum(v);
  __syncthreads(); /* shared may still be read from a previous call */
  if (lane == 0) shared[warp] = v;
  __syncthreads();
  v = lane < nwarps ? shared[lane] : (MAX ? shared[0] : (T)0);
  return MAX ? warp_max(v) : warp_sum(v);
}

} // namespace opd_cuda

#endif

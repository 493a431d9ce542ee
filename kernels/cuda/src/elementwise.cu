/* elementwise.cu: the device code of every elementwise operator (arithmetic, comparisons,
 * unary math, where, clamp, masked_fill, fill, copy with dtype conversion).
 *
 * [Note: CUDA elementwise kernels]
 * One kernel per compute type (float for float16/bfloat16/float32, double, int64 for the
 * integers and bool) serves every operator: the operator is a launch argument, a switch that
 * every thread of a launch takes the same way. Operands are read in their own dtype and
 * converted to the compute type (integers are first narrowed to the operation's dtype, as the
 * CPU engine reads them in it), and the result is converted to the output's dtype; integer
 * arithmetic wraps as in PyTorch. Three shapes of launch:
 *  - contiguous operands of one element size, 16-byte aligned: each thread moves 16 bytes of
 *    every operand with one vector load or store;
 *  - contiguous operands otherwise: a flat loop;
 *  - anything else (broadcasting, strides, views): the geometry (sizes and element strides of
 *    up to OPD_CUDA_EW_MAX_OPS operands, dims coalesced by cuda_kernels.c) is passed by value,
 *    in a small struct for up to SMALL_DIMS dims and a large one (up to 64) beyond, and each
 *    element's offsets are computed from its index.
 * Keeping the operator a runtime value keeps the number of instantiations (and the build
 * time) small.
 */
#include <cuda_runtime.h>

#include "cuda_internal.h"
#include "device_util.cuh"
#include "opd/cuda.h"

namespace opd_cuda {
namespace {

constexpr int SMALL_DIMS = 6;
constexpr int THREADS = 256;

struct ew_args {
  int op, ninputs, narrow;
  bool native; /* every operand has the compute type's own dtype (no conversions) */
  int dtype[OPD_CUDA_EW_MAX_OPS];
  char *data[OPD_CUDA_EW_MAX_OPS];
  double c0d, c1d, c2d;
  int64_t c0i, c1i;
  int *error;
  int64_t numel;
};

template <int D> struct geometry {
  int ndim;
  int64_t sizes[D];
  int64_t strides[OPD_CUDA_EW_MAX_OPS][D];
};

/* an integer read as the operation's dtype (the CPU engine's narrowing) */
__device__ __forceinline__ int64_t narrow_int(int64_t v, int dt) {
  switch (dt) {
  case OPD_BOOL: return v != 0;
  case OPD_UINT8: return (uint8_t)v;
  case OPD_INT8: return (int8_t)v;
  case OPD_INT16: return (int16_t)v;
  case OPD_INT32: return (int32_t)v;
  default: return v;
  }
}

template <class CT> __device__ __forceinline__ CT read(const ew_args &a, int k, const char *p) {
  CT v = load<CT>(p, a.dtype[k]);
  if constexpr (!is_float<CT>::value)
    if (a.narrow >= 0) v = narrow_int(v, a.narrow);
  return v;
}

__device__ __forceinline__ float m_exp(float x) {
  return expf(x);
}
__device__ __forceinline__ double m_exp(double x) {
  return exp(x);
}
__device__ __forceinline__ float m_log(float x) {
  return logf(x);
}
__device__ __forceinline__ double m_log(double x) {
  return log(x);
}
__device__ __forceinline__ float m_sqrt(float x) {
  return sqrtf(x);
}
__device__ __forceinline__ double m_sqrt(double x) {
  return sqrt(x);
}
__device__ __forceinline__ float m_tanh(float x) {
  return tanhf(x);
}
__device__ __forceinline__ double m_tanh(double x) {
  return tanh(x);
}
__device__ __forceinline__ float m_sin(float x) {
  return sinf(x);
}
__device__ __forceinline__ double m_sin(double x) {
  return sin(x);
}
__device__ __forceinline__ float m_cos(float x) {
  return cosf(x);
}
__device__ __forceinline__ double m_cos(double x) {
  return cos(x);
}
__device__ __forceinline__ float m_erf(float x) {
  return erff(x);
}
__device__ __forceinline__ double m_erf(double x) {
  return erf(x);
}
__device__ __forceinline__ float m_fabs(float x) {
  return fabsf(x);
}
__device__ __forceinline__ double m_fabs(double x) {
  return fabs(x);
}
__device__ __forceinline__ float m_trunc(float x) {
  return truncf(x);
}
__device__ __forceinline__ double m_trunc(double x) {
  return trunc(x);
}
__device__ __forceinline__ float m_floor(float x) {
  return floorf(x);
}
__device__ __forceinline__ double m_floor(double x) {
  return floor(x);
}
__device__ __forceinline__ float m_fmod(float x, float y) {
  return fmodf(x, y);
}
__device__ __forceinline__ double m_fmod(double x, double y) {
  return fmod(x, y);
}
__device__ __forceinline__ float m_copysign(float x, float y) {
  return copysignf(x, y);
}
__device__ __forceinline__ double m_copysign(double x, double y) {
  return copysign(x, y);
}

/* the float and double overloads of the CUDA math library's functions of one or two
 * arguments, as m_NAME */
#define OPD_CUDA_MATH1(name)                             \
  __device__ __forceinline__ float m_##name(float x) {   \
    return name##f(x);                                   \
  }                                                      \
  __device__ __forceinline__ double m_##name(double x) { \
    return name(x);                                      \
  }
#define OPD_CUDA_MATH2(name)                                       \
  __device__ __forceinline__ float m_##name(float x, float y) {    \
    return name##f(x, y);                                          \
  }                                                                \
  __device__ __forceinline__ double m_##name(double x, double y) { \
    return name(x, y);                                             \
  }
OPD_CUDA_MATH1(acos)
OPD_CUDA_MATH1(asin)
OPD_CUDA_MATH1(atan)
OPD_CUDA_MATH1(acosh)
OPD_CUDA_MATH1(asinh)
OPD_CUDA_MATH1(atanh)
OPD_CUDA_MATH1(sinh)
OPD_CUDA_MATH1(cosh)
OPD_CUDA_MATH1(tan)
OPD_CUDA_MATH1(erfc)
OPD_CUDA_MATH1(erfinv)
OPD_CUDA_MATH1(lgamma)
OPD_CUDA_MATH1(log1p)
OPD_CUDA_MATH1(expm1)
OPD_CUDA_MATH1(log2)
OPD_CUDA_MATH1(log10)
OPD_CUDA_MATH1(exp2)
OPD_CUDA_MATH1(rint)
OPD_CUDA_MATH1(ceil)
OPD_CUDA_MATH2(atan2)
OPD_CUDA_MATH2(hypot)
OPD_CUDA_MATH2(pow)
OPD_CUDA_MATH2(fmax)
OPD_CUDA_MATH2(fmin)
#undef OPD_CUDA_MATH1
#undef OPD_CUDA_MATH2

/* ATen's calc_digamma (as kernels/cpu/pointwise_unary.c): the reflection for negative x, a
 * recurrence up to 10, then the asymptotic series */
template <class T> __device__ T digamma(T x) {
  const T PI = (T)3.14159265358979323846;
  const T A[7] = {(T)8.33333333333333333333E-2, (T)-2.10927960927960927961E-2,
                  (T)7.57575757575757575758E-3, (T)-4.16666666666666666667E-3,
                  (T)3.96825396825396825397E-3, (T)-8.33333333333333333333E-3,
                  (T)8.33333333333333333333E-2};
  if (x == 0) return m_copysign((T)INFINITY, -x);
  T result = 0;
  if (x < 0) {
    if (x == m_trunc(x)) return (T)NAN;
    result = -PI / m_tan(PI * (x - m_trunc(x)));
    x = 1 - x;
  }
  while (x < 10) {
    result -= 1 / x;
    x += 1;
  }
  if (x == 10) return result + (T)2.25175258906672110764;
  T y = 0;
  if (x < (T)1.0e17) {
    T z = 1 / (x * x), p = A[0];
    for (int i = 1; i < 7; i++) p = p * z + A[i];
    y = z * p;
  }
  return result + m_log(x) - ((T)0.5 / x) - y;
}

/* ATen's lerp: from the nearer end, so that weight 1 gives end exactly */
template <class T> __device__ __forceinline__ T lerp(T s, T e, T w) {
  return m_fabs(w) < (T)0.5 ? s + w * (e - s) : e - (e - s) * (1 - w);
}

/* std::min and std::max, which keep a NaN first operand */
template <class T> __device__ __forceinline__ T std_max(T a, T b) {
  return a < b ? b : a;
}
template <class T> __device__ __forceinline__ T std_min(T a, T b) {
  return b < a ? b : a;
}

/* c10's div_floor_floating */
template <class T> __device__ T div_floor_float(T a, T b) {
  if (b == 0) return a / b;
  T mod = m_fmod(a, b), div = (a - mod) / b;
  if (mod != 0 && (b < 0) != (mod < 0)) div -= 1;
  if (div == 0) return m_copysign((T)0, a / b);
  T fl = m_floor(div);
  return div - fl > (T)0.5 ? fl + 1 : fl;
}

__device__ __forceinline__ int64_t wrap_add(int64_t x, int64_t y) {
  return (int64_t)((uint64_t)x + (uint64_t)y);
}
__device__ __forceinline__ int64_t wrap_mul(int64_t x, int64_t y) {
  return (int64_t)((uint64_t)x * (uint64_t)y);
}
__device__ __forceinline__ int64_t wrap_neg(int64_t x) {
  return (int64_t)(0u - (uint64_t)x);
}

__device__ int64_t div_trunc_int(int64_t a, int64_t b, int *error) {
  if (b == 0) {
    if (error) *error = 1;
    return 0;
  }
  return b == -1 ? wrap_neg(a) : a / b;
}

/* integer fmod (a zero divisor flags an error) and ATen's powi (a negative exponent gives 0
 * but for bases 1 and -1) */
__device__ int64_t fmod_int(int64_t a, int64_t b, int *error) {
  if (b == 0) {
    if (error) *error = 1;
    return 0;
  }
  return b == -1 ? 0 : a % b;
}
__device__ int64_t pow_int(int64_t a, int64_t b) {
  if (b < 0) return a == 1 ? 1 : a == -1 ? (b % 2 ? -1 : 1) : 0;
  uint64_t r = 1, ua = (uint64_t)a;
  for (uint64_t e = (uint64_t)b; e; e >>= 1, ua *= ua)
    if (e & 1) r *= ua;
  return (int64_t)r;
}

template <class CT> __device__ __forceinline__ CT constant(const ew_args &a, int k) {
  if constexpr (is_float<CT>::value)
    return (CT)(k ? a.c1d : a.c0d);
  else
    return (CT)(k ? a.c1i : a.c0i);
}

/* the operation on inputs x, y, z (those it has) */
template <class CT> __device__ __forceinline__ CT apply(const ew_args &a, CT x, CT y, CT z) {
  const CT c0 = constant<CT>(a, 0), c1 = constant<CT>(a, 1);
  switch (a.op) {
  case OPD_CUDA_EW_COPY: return x;
  case OPD_CUDA_EW_FILL: return c0;
  case OPD_CUDA_EW_EQ: return x == y ? 1 : 0;
  case OPD_CUDA_EW_GT: return x > y ? 1 : 0;
  case OPD_CUDA_EW_LT_SCALAR: return x < c0 ? 1 : 0;
  case OPD_CUDA_EW_EQ_SCALAR: return x == c0 ? 1 : 0;
  case OPD_CUDA_EW_NE: return x != y ? 1 : 0;
  case OPD_CUDA_EW_LT: return x < y ? 1 : 0;
  case OPD_CUDA_EW_LE: return x <= y ? 1 : 0;
  case OPD_CUDA_EW_GE: return x >= y ? 1 : 0;
  case OPD_CUDA_EW_GT_SCALAR: return x > c0 ? 1 : 0;
  case OPD_CUDA_EW_LE_SCALAR: return x <= c0 ? 1 : 0;
  case OPD_CUDA_EW_GE_SCALAR: return x >= c0 ? 1 : 0;
  case OPD_CUDA_EW_NE_SCALAR: return x != c0 ? 1 : 0;
  case OPD_CUDA_EW_THRESHOLD: return x <= c0 ? c1 : x;
  case OPD_CUDA_EW_THRESHOLD_BACKWARD: return y <= c0 ? (CT)0 : x;
  case OPD_CUDA_EW_WHERE: return x != 0 ? y : z;
  case OPD_CUDA_EW_MASKED_FILL: return x != 0 ? c0 : y;
  case OPD_CUDA_EW_CLAMP: {
    CT lo = x < c0 ? c0 : x;
    return c1 < lo ? c1 : lo;
  }
  case OPD_CUDA_EW_CLAMP_MIN: return x < c0 ? c0 : x;
  case OPD_CUDA_EW_CLAMP_MAX: return c1 < x ? c1 : x;
  case OPD_CUDA_EW_RELU: return x < 0 ? (CT)0 : x;
  case OPD_CUDA_EW_POW_ZERO: return (CT)1;
  default: break;
  }
  if constexpr (is_float<CT>::value) {
    const CT c2 = (CT)a.c2d;
    constexpr CT GELU_BETA = (CT)0.39894228040143267794;  /* 1 / sqrt(2 pi) */
    constexpr CT GELU_TBETA = (CT)0.79788456080286535588; /* sqrt(2 / pi) */
    constexpr CT GELU_KAPPA = (CT)0.044715;
    switch (a.op) {
    case OPD_CUDA_EW_ADD: return x + c0 * y;
    case OPD_CUDA_EW_ADD1: return x + y;
    case OPD_CUDA_EW_MUL: return x * y;
    case OPD_CUDA_EW_SCALE: return c0 * x;
    case OPD_CUDA_EW_MAXIMUM: return x != x ? x : y != y ? y : x < y ? y : x;
    case OPD_CUDA_EW_MINIMUM: return x != x ? x : y != y ? y : y < x ? y : x;
    case OPD_CUDA_EW_DIV_TRUE: return x / y;
    case OPD_CUDA_EW_DIV_TRUNC: return m_trunc(x / y);
    case OPD_CUDA_EW_DIV_FLOOR: return div_floor_float(x, y);
    case OPD_CUDA_EW_NEG: return -x;
    case OPD_CUDA_EW_ABS: return m_fabs(x);
    case OPD_CUDA_EW_EXP: return m_exp(x);
    case OPD_CUDA_EW_LOG: return m_log(x);
    case OPD_CUDA_EW_SQRT: return m_sqrt(x);
    case OPD_CUDA_EW_RSQRT: return 1 / m_sqrt(x);
    case OPD_CUDA_EW_SIGMOID: return 1 / (1 + m_exp(-x));
    case OPD_CUDA_EW_SILU: return x / (1 + m_exp(-x));
    case OPD_CUDA_EW_TANH: return m_tanh(x);
    case OPD_CUDA_EW_SIN: return m_sin(x);
    case OPD_CUDA_EW_COS: return m_cos(x);
    case OPD_CUDA_EW_GELU: return (CT)0.5 * x * (1 + m_erf(x * (CT)0.70710678118654752440));
    case OPD_CUDA_EW_GELU_TANH:
      return (CT)0.5 * x *
             (1 + m_tanh((CT)0.79788456080286535588 * (x + (CT)0.044715 * (x * x * x))));
    case OPD_CUDA_EW_POW_HALF: return m_sqrt(x);
    case OPD_CUDA_EW_POW_MHALF: return 1 / m_sqrt(x);
    case OPD_CUDA_EW_POW_M1: return 1 / x;
    case OPD_CUDA_EW_POW_2: return x * x;
    case OPD_CUDA_EW_POW_3: return x * x * x;
    case OPD_CUDA_EW_POW_M2: return 1 / (x * x);
    case OPD_CUDA_EW_POW_ANY: return (CT)pow((double)x, a.c0d);
    case OPD_CUDA_EW_ACOS: return m_acos(x);
    case OPD_CUDA_EW_ASIN: return m_asin(x);
    case OPD_CUDA_EW_ATAN: return m_atan(x);
    case OPD_CUDA_EW_ACOSH: return m_acosh(x);
    case OPD_CUDA_EW_ASINH: return m_asinh(x);
    case OPD_CUDA_EW_ATANH: return m_atanh(x);
    case OPD_CUDA_EW_SINH: return m_sinh(x);
    case OPD_CUDA_EW_COSH: return m_cosh(x);
    case OPD_CUDA_EW_TAN: return m_tan(x);
    case OPD_CUDA_EW_ERF: return m_erf(x);
    case OPD_CUDA_EW_ERFC: return m_erfc(x);
    case OPD_CUDA_EW_ERFINV: return m_erfinv(x);
    case OPD_CUDA_EW_LGAMMA: return m_lgamma(x);
    case OPD_CUDA_EW_DIGAMMA: return digamma(x);
    case OPD_CUDA_EW_LOG1P: return m_log1p(x);
    case OPD_CUDA_EW_EXPM1: return m_expm1(x);
    case OPD_CUDA_EW_LOG2: return m_log2(x);
    case OPD_CUDA_EW_LOG10: return m_log10(x);
    case OPD_CUDA_EW_EXP2: return m_exp2(x);
    case OPD_CUDA_EW_RECIPROCAL: return 1 / x;
    case OPD_CUDA_EW_FRAC: return x - m_trunc(x);
    case OPD_CUDA_EW_ROUND_SCALED: return m_rint(x * c0) / c0;
    case OPD_CUDA_EW_ROUND_COARSE: return m_rint(x / c0) * c0;
    case OPD_CUDA_EW_NAN_TO_NUM:
      return x != x ? c0 : x == (CT)INFINITY ? c1 : x == -(CT)INFINITY ? c2 : x;
    case OPD_CUDA_EW_FLOOR: return m_floor(x);
    case OPD_CUDA_EW_CEIL: return m_ceil(x);
    case OPD_CUDA_EW_ROUND: return m_rint(x); /* half to even */
    case OPD_CUDA_EW_TRUNC: return m_trunc(x);
    case OPD_CUDA_EW_SIGN: return (CT)((0 < x) - (x < 0)); /* NaN gives 0 */
    case OPD_CUDA_EW_ISNAN: return x != x ? 1 : 0;
    case OPD_CUDA_EW_SIGNBIT: return signbit(x) ? 1 : 0;
    case OPD_CUDA_EW_ATAN2: return m_atan2(x, y);
    case OPD_CUDA_EW_FMOD: return m_fmod(x, y);
    case OPD_CUDA_EW_REMAINDER: {
      CT m = m_fmod(x, y); /* moved to the divisor's sign */
      return m != 0 && (y < 0) != (m < 0) ? m + y : m;
    }
    case OPD_CUDA_EW_HYPOT: return m_hypot(x, y);
    case OPD_CUDA_EW_COPYSIGN: return m_copysign(x, y);
    case OPD_CUDA_EW_XLOGY: return y != y ? (CT)NAN : x == 0 ? (CT)0 : x * m_log(y);
    case OPD_CUDA_EW_POW_TENSOR: return m_pow(x, y);
    case OPD_CUDA_EW_FMAX: return m_fmax(x, y);
    case OPD_CUDA_EW_FMIN: return m_fmin(x, y);
    case OPD_CUDA_EW_LOGADDEXP:
      return (x == (CT)INFINITY || x == -(CT)INFINITY) && x == y
                 ? x
                 : (x < y ? y : x) + m_log1p(m_exp(-m_fabs(x - y)));
    case OPD_CUDA_EW_CLAMP_LO: return x != x ? x : c0 != c0 ? c0 : x < c0 ? c0 : x;
    case OPD_CUDA_EW_CLAMP_HI: return x != x ? x : c0 != c0 ? c0 : x > c0 ? c0 : x;
    case OPD_CUDA_EW_ADDCMUL: return x + c0 * y * z;
    case OPD_CUDA_EW_ADDCDIV: return x + c0 * y / z;
    case OPD_CUDA_EW_LERP_SCALAR: return lerp(x, y, c0);
    case OPD_CUDA_EW_LERP_TENSOR: return lerp(x, y, z);
    case OPD_CUDA_EW_CLAMP_TENSOR:
      return y != y || z != z ? (CT)NAN : (x < y ? y : x) > z ? z : (x < y ? y : x);
    case OPD_CUDA_EW_HARDTANH: return x != x ? x : m_fmin(m_fmax(x, c0), c1);
    case OPD_CUDA_EW_LEAKY_RELU: return x > 0 ? x : x * c0;
    case OPD_CUDA_EW_ELU: return x <= 0 ? m_expm1(x * c2) * c0 : x * c1;
    case OPD_CUDA_EW_MISH: return x * m_tanh(m_log1p(m_exp(x)));
    case OPD_CUDA_EW_SOFTPLUS: return x * c0 > c1 ? x : m_log1p(m_exp(x * c0)) / c0;
    case OPD_CUDA_EW_HARDSWISH: return x * std_min(std_max(x + 3, (CT)0), (CT)6) / 6;
    case OPD_CUDA_EW_HARDSIGMOID: return std_min(std_max(x + 3, (CT)0), (CT)6) / 6;
    case OPD_CUDA_EW_GLU: return x * (1 / (1 + m_exp(-y)));
    /* the backward operators: x the gradient, y the forward's input (or result) */
    case OPD_CUDA_EW_GELU_BACKWARD:
      return x * ((CT)0.5 * (1 + m_erf(y * (CT)0.70710678118654752440)) +
                  y * m_exp((CT)-0.5 * y * y) * GELU_BETA);
    case OPD_CUDA_EW_GELU_TANH_BACKWARD: {
      CT t = m_tanh(GELU_TBETA * (y + GELU_KAPPA * y * y * y));
      return x * ((CT)0.5 * (1 + t) +
                  (CT)0.5 * y * (1 - t * t) * GELU_TBETA * (1 + 3 * GELU_KAPPA * y * y));
    }
    case OPD_CUDA_EW_SILU_BACKWARD:
      return x / (1 + m_exp(-y)) * (1 + y * (1 - 1 / (1 + m_exp(-y))));
    case OPD_CUDA_EW_SIGMOID_BACKWARD: return x * (1 - y) * y;
    case OPD_CUDA_EW_TANH_BACKWARD: return x * (1 - y * y);
    case OPD_CUDA_EW_HARDSWISH_BACKWARD: return y < -3 ? (CT)0 : y <= 3 ? x * (y / 3 + (CT)0.5) : x;
    case OPD_CUDA_EW_HARDSIGMOID_BACKWARD: return y > -3 && y < 3 ? x * (CT)(1.0f / 6.0f) : (CT)0;
    case OPD_CUDA_EW_HARDTANH_BACKWARD: return y <= c0 || y >= c1 ? (CT)0 : x;
    case OPD_CUDA_EW_LEAKY_RELU_BACKWARD: return y > 0 ? x : x * c0;
    case OPD_CUDA_EW_ELU_BACKWARD: return y <= 0 ? x * c2 * c0 * m_exp(y * c2) : x * c1;
    case OPD_CUDA_EW_ELU_RESULT_BACKWARD: return y <= 0 ? x * c2 * (y + c0) : x * c1;
    case OPD_CUDA_EW_SOFTPLUS_BACKWARD:
      return y * c0 > c1 ? x : x * m_exp(y * c0) / (m_exp(y * c0) + 1);
    case OPD_CUDA_EW_MISH_BACKWARD: {
      CT t = m_tanh(m_log1p(m_exp(y)));
      return x * (t + y / (1 + m_exp(-y)) * (1 - t * t));
    }
    default: return x;
    }
  } else {
    switch (a.op) {
    case OPD_CUDA_EW_ADD: return wrap_add(x, wrap_mul(c0, y));
    case OPD_CUDA_EW_ADD1: return wrap_add(x, y);
    case OPD_CUDA_EW_MUL: return wrap_mul(x, y);
    case OPD_CUDA_EW_SCALE: return wrap_mul(c0, x);
    case OPD_CUDA_EW_MAXIMUM: return x < y ? y : x;
    case OPD_CUDA_EW_MINIMUM: return y < x ? y : x;
    case OPD_CUDA_EW_DIV_TRUNC: return div_trunc_int(x, y, a.error);
    case OPD_CUDA_EW_DIV_FLOOR: {
      int64_t q = div_trunc_int(x, y, a.error);
      return y != 0 && y != -1 && (x < 0) != (y < 0) && q * y != x ? q - 1 : q;
    }
    case OPD_CUDA_EW_NEG: return wrap_neg(x);
    case OPD_CUDA_EW_ABS: return x < 0 ? wrap_neg(x) : x;
    case OPD_CUDA_EW_FLOOR:
    case OPD_CUDA_EW_CEIL:
    case OPD_CUDA_EW_ROUND:
    case OPD_CUDA_EW_TRUNC: return x;
    case OPD_CUDA_EW_SIGN: return (0 < x) - (x < 0);
    case OPD_CUDA_EW_BITWISE_NOT: return a.narrow == OPD_BOOL ? x == 0 : ~x;
    case OPD_CUDA_EW_ISNAN: return 0;
    case OPD_CUDA_EW_SIGNBIT: return x < 0 ? 1 : 0;
    case OPD_CUDA_EW_FMOD: return fmod_int(x, y, a.error);
    case OPD_CUDA_EW_REMAINDER: { /* Python's %: the sign of the divisor */
      int64_t r = fmod_int(x, y, a.error);
      return r != 0 && (r < 0) != (y < 0) ? r + y : r;
    }
    case OPD_CUDA_EW_POW_TENSOR: return pow_int(x, y);
    case OPD_CUDA_EW_BITWISE_AND: return x & y;
    case OPD_CUDA_EW_BITWISE_OR: return x | y;
    case OPD_CUDA_EW_BITWISE_XOR: return x ^ y;
    case OPD_CUDA_EW_FMAX: return x < y ? y : x;
    case OPD_CUDA_EW_FMIN: return y < x ? y : x;
    case OPD_CUDA_EW_CLAMP_LO: return x < c0 ? c0 : x;
    case OPD_CUDA_EW_CLAMP_HI: return x > c0 ? c0 : x;
    case OPD_CUDA_EW_ADDCMUL: return wrap_add(x, wrap_mul(wrap_mul(c0, y), z));
    case OPD_CUDA_EW_CLAMP_TENSOR: return (x < y ? y : x) > z ? z : (x < y ? y : x);
    case OPD_CUDA_EW_HARDTANH: return x < c0 ? (c0 > c1 ? c1 : c0) : x > c1 ? c1 : x;
    case OPD_CUDA_EW_POW_INT: {
      uint64_t r = 1, b = (uint64_t)x;
      for (uint64_t e = (uint64_t)c0; e; e >>= 1, b *= b)
        if (e & 1) r *= b;
      return (int64_t)r;
    }
    default: return x;
    }
  }
}

/* element i of a contiguous launch */
template <class CT> __device__ __forceinline__ void one_flat(const ew_args &a, int64_t i) {
  CT x = 0, y = 0, z = 0;
  if (a.ninputs > 0) x = read<CT>(a, 1, a.data[1] + i * elsize(a.dtype[1]));
  if (a.ninputs > 1) y = read<CT>(a, 2, a.data[2] + i * elsize(a.dtype[2]));
  if (a.ninputs > 2) z = read<CT>(a, 3, a.data[3] + i * elsize(a.dtype[3]));
  store<CT>(a.data[0] + i * elsize(a.dtype[0]), a.dtype[0], apply<CT>(a, x, y, z));
}

template <class CT> __global__ void ew_flat(ew_args a, int64_t begin) {
  for (int64_t i = begin + blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < a.numel;
       i += (int64_t)gridDim.x * blockDim.x)
    one_flat<CT>(a, i);
}

/* 16 bytes of every operand per step; es: the common element size */
template <class CT> __global__ void ew_vector(ew_args a, int64_t nvec, int es) {
  const int per = 16 / es;
  constexpr int NATIVE_PER = 16 / sizeof(CT);
  for (int64_t v = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; v < nvec;
       v += (int64_t)gridDim.x * blockDim.x) {
    uint4 in[OPD_CUDA_EW_MAX_OPS - 1], out;
    for (int k = 0; k < a.ninputs; k++) in[k] = ((const uint4 *)a.data[k + 1])[v];
    if (a.native) { /* the common case: no dtype switches, the values stay in registers */
#pragma unroll
      for (int j = 0; j < NATIVE_PER; j++) {
        CT x = a.ninputs > 0 ? ((const CT *)&in[0])[j] : (CT)0;
        CT y = a.ninputs > 1 ? ((const CT *)&in[1])[j] : (CT)0;
        CT z = a.ninputs > 2 ? ((const CT *)&in[2])[j] : (CT)0;
        ((CT *)&out)[j] = apply<CT>(a, x, y, z);
      }
      ((uint4 *)a.data[0])[v] = out;
      continue;
    }
    for (int j = 0; j < per; j++) {
      CT x = 0, y = 0, z = 0;
      if (a.ninputs > 0) x = read<CT>(a, 1, (const char *)&in[0] + j * es);
      if (a.ninputs > 1) y = read<CT>(a, 2, (const char *)&in[1] + j * es);
      if (a.ninputs > 2) z = read<CT>(a, 3, (const char *)&in[2] + j * es);
      store<CT>((char *)&out + j * es, a.dtype[0], apply<CT>(a, x, y, z));
    }
    ((uint4 *)a.data[0])[v] = out;
  }
}

template <class CT, int D> __global__ void ew_strided(ew_args a, geometry<D> g) {
  const int nops = a.ninputs + 1;
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < a.numel;
       i += (int64_t)gridDim.x * blockDim.x) {
    int64_t off[OPD_CUDA_EW_MAX_OPS] = {0, 0, 0, 0}, rest = i;
    for (int d = g.ndim - 1; d >= 0; d--) {
      int64_t idx = rest % g.sizes[d];
      rest /= g.sizes[d];
      for (int k = 0; k < nops; k++) off[k] += idx * g.strides[k][d];
    }
    CT x = 0, y = 0, z = 0;
    if (a.ninputs > 0) x = read<CT>(a, 1, a.data[1] + off[1] * elsize(a.dtype[1]));
    if (a.ninputs > 1) y = read<CT>(a, 2, a.data[2] + off[2] * elsize(a.dtype[2]));
    if (a.ninputs > 2) z = read<CT>(a, 3, a.data[3] + off[3] * elsize(a.dtype[3]));
    store<CT>(a.data[0] + off[0] * elsize(a.dtype[0]), a.dtype[0], apply<CT>(a, x, y, z));
  }
}

unsigned grid_for(int64_t n) {
  int64_t blocks = (n + THREADS - 1) / THREADS;
  return (unsigned)(blocks < 65536 ? (blocks > 0 ? blocks : 1) : 65536);
}

template <class CT> void launch(const opd__cuda_ew *d, const ew_args &a, cudaStream_t s) {
  bool flat = d->ndim <= 1, same_size = true, aligned = true;
  int es = elsize(d->dtype[0]);
  for (int k = 0; k <= d->ninputs; k++) {
    if (d->ndim == 1 && d->strides[k][0] != 1) flat = false;
    same_size = same_size && elsize(d->dtype[k]) == es;
    aligned = aligned && ((uintptr_t)d->data[k] & 15) == 0;
  }
  if (flat && same_size && aligned) {
    int64_t per = 16 / es, nvec = d->numel / per;
    if (nvec > 0) ew_vector<CT><<<grid_for(nvec), THREADS, 0, s>>>(a, nvec, es);
    if (nvec * per < d->numel) ew_flat<CT><<<1, THREADS, 0, s>>>(a, nvec * per);
  } else if (flat) {
    ew_flat<CT><<<grid_for(d->numel), THREADS, 0, s>>>(a, 0);
  } else if (d->ndim <= SMALL_DIMS) {
    geometry<SMALL_DIMS> g;
    g.ndim = d->ndim;
    for (int i = 0; i < d->ndim; i++) {
      g.sizes[i] = d->sizes[i];
      for (int k = 0; k <= d->ninputs; k++) g.strides[k][i] = d->strides[k][i];
    }
    ew_strided<CT, SMALL_DIMS><<<grid_for(d->numel), THREADS, 0, s>>>(a, g);
  } else {
    geometry<OPD_CUDA_MAX_DIMS> g;
    g.ndim = d->ndim;
    for (int i = 0; i < d->ndim; i++) {
      g.sizes[i] = d->sizes[i];
      for (int k = 0; k <= d->ninputs; k++) g.strides[k][i] = d->strides[k][i];
    }
    ew_strided<CT, OPD_CUDA_MAX_DIMS><<<grid_for(d->numel), THREADS, 0, s>>>(a, g);
  }
}

} // namespace
} // namespace opd_cuda

extern "C" int opd__cuda_launch_elementwise(int device, const opd__cuda_ew *d) {
  using namespace opd_cuda;
  int rc = opd__cuda_use_device(device);
  if (rc || d->numel == 0) return rc;
  ew_args a;
  a.op = d->op;
  a.ninputs = d->ninputs;
  a.narrow = d->narrow;
  const int own = d->compute == 0 ? OPD_FLOAT32 : d->compute == 1 ? OPD_FLOAT64 : OPD_INT64;
  a.native = true;
  for (int k = 0; k <= d->ninputs; k++) a.native = a.native && d->dtype[k] == own;
  for (int k = 0; k < OPD_CUDA_EW_MAX_OPS; k++) {
    a.dtype[k] = k <= d->ninputs ? d->dtype[k] : OPD_FLOAT32;
    a.data[k] = k <= d->ninputs ? (char *)d->data[k] : nullptr;
  }
  a.c0d = d->c0d;
  a.c1d = d->c1d;
  a.c2d = d->c2d;
  a.c0i = d->c0i;
  a.c1i = d->c1i;
  a.error = d->error;
  a.numel = d->numel;
  cudaStream_t s = (cudaStream_t)opd_cuda_current_stream(device);
  if (d->compute == 0)
    launch<float>(d, a, s);
  else if (d->compute == 1)
    launch<double>(d, a, s);
  else
    launch<int64_t>(d, a, s);
  return opd__cuda_check_launch(device, "an elementwise kernel launch");
}

/* pw_formulas.h: the operations of a fused pointwise program and what each computes, written
 * once for the interpreter, the C tier and CUDA (internal to the graph library).
 *
 * [Note: One formula per operation]
 * OPD__PW_FORMULAS(X) calls X(OPCODE, NAME, ARITY, RESULT, EXPRESSION) for every computing
 * opcode; everything that lists the opcodes is made from it: plan.h's enum (after LOAD and
 * STORE, which move data and compute nothing), their names in dumps, their arity, which may
 * write a bool value (RESULT BOOL: comparisons, conversions to bool, copy and where; F32
 * ones make float32 only) and the formulas of every tier. The expression is C over the
 * float operands x, y and z, the instruction's constants c0 and c1 as float and e (its
 * first constant as double), with the kernels' formulas: opd__expf and opd__tanhf of
 * kernels/src/fast_math.h, libm's float functions (logf, sqrtf, erff, sinf, acosf, atan2f,
 * ...: the ones the kernels' float32 loops call through tgmath.h) and pow, and the NaN
 * rules of ATen's maximum, minimum and clamp. The interpreter (fused_run.c) expands each
 * expression into a loop over a tile; the C tier (fused_c.c) writes each one, stringified,
 * into the program's generated source, which embeds fast_math.h. Both so compute the same
 * operations to the bit, and the kernels of the unfused nodes compute them too (the
 * numerics check of a group confirms it). CUDA (fused_cuda.c) writes the same text into
 * its source, whose prelude makes opd__expf and opd__tanhf CUDA's expf and tanhf, as the
 * CUDA kernels compute (kernels/cuda/src/elementwise.cu). An expression here must
 * therefore stay valid C and CUDA C++ on its own: no macro of this library in it.
 */
#ifndef OPD_GRAPH_PW_FORMULAS_H
#define OPD_GRAPH_PW_FORMULAS_H

/* (unformatted: clang-format takes x * y for a declaration) */
/* clang-format off */
#define OPD__PW_FORMULAS(X)                                                               \
  X(ADD, add, 2, F32, x + y)                                                              \
  X(ADD_SCALED, add_scaled, 2, F32, x + c0 * y)                                           \
  X(MUL, mul, 2, F32, x * y)                                                              \
  X(DIV, div, 2, F32, x / y)                                                              \
  X(MAXIMUM, maximum, 2, F32, x != x ? x : y != y ? y : x < y ? y : x)                    \
  X(MINIMUM, minimum, 2, F32, x != x ? x : y != y ? y : y < x ? y : x)                    \
  X(EQ, eq, 2, BOOL, x == y ? 1.0f : 0.0f)                                                \
  X(GT, gt, 2, BOOL, x > y ? 1.0f : 0.0f)                                                 \
  X(LT, lt, 2, BOOL, x < y ? 1.0f : 0.0f)                                                 \
  X(MASKED_FILL, masked_fill, 2, F32, y != 0 ? c0 : x)                                    \
  X(NEG, neg, 1, F32, -x)                                                                 \
  X(EXP, exp, 1, F32, opd__expf(x))                                                       \
  X(LOG, log, 1, F32, logf(x))                                                            \
  X(SQRT, sqrt, 1, F32, sqrtf(x))                                                         \
  X(RSQRT, rsqrt, 1, F32, 1 / sqrtf(x))                                                   \
  X(ABS, abs, 1, F32, fabsf(x))                                                           \
  X(RELU, relu, 1, F32, x < 0 ? 0 : x)                                                    \
  X(SIGMOID, sigmoid, 1, F32, 1 / (1 + opd__expf(-x)))                                    \
  X(TANH, tanh, 1, F32, opd__tanhf(x))                                                    \
  X(SIN, sin, 1, F32, sinf(x))                                                            \
  X(COS, cos, 1, F32, cosf(x))                                                            \
  X(GELU, gelu, 1, F32, 0.5f * x * (1 + erff(x * 0.70710678118654752440f)))               \
  X(GELU_TANH, gelu_tanh, 1, F32,                                                         \
    0.5f * x * (1 + opd__tanhf(0.79788456080286535588f * (x + 0.044715f * (x * x * x))))) \
  X(FILL, fill, 0, F32, c0)                                                               \
  X(COPY, copy, 1, BOOL, x)                                                               \
  X(RECIP, recip, 1, F32, 1 / x)                                                          \
  X(SQUARE, square, 1, F32, x * x)                                                        \
  X(CUBE, cube, 1, F32, x * x * x)                                                        \
  X(RECIP_SQUARE, recip_square, 1, F32, 1 / (x * x))                                      \
  X(POW, pow, 1, F32, (float)pow((double)x, e))                                           \
  X(CLAMP, clamp, 1, F32, c1 < (x < c0 ? c0 : x) ? c1 : (x < c0 ? c0 : x))                \
  X(CLAMP_MIN, clamp_min, 1, F32, x < c0 ? c0 : x)                                        \
  X(CLAMP_MAX, clamp_max, 1, F32, c1 < x ? c1 : x)                                        \
  X(TO_BOOL, to_bool, 1, BOOL, x != 0 ? 1.0f : 0.0f)                                      \
  X(WHERE, where, 3, BOOL, x != 0 ? y : z)                                                \
  /* the pointwise family's operators, as kernels/cpu/pointwise_*.c compute float32 */    \
  X(ACOS, acos, 1, F32, acosf(x))                                                         \
  X(ASIN, asin, 1, F32, asinf(x))                                                         \
  X(ATAN, atan, 1, F32, atanf(x))                                                         \
  X(ACOSH, acosh, 1, F32, acoshf(x))                                                      \
  X(ASINH, asinh, 1, F32, asinhf(x))                                                      \
  X(ATANH, atanh, 1, F32, atanhf(x))                                                      \
  X(SINH, sinh, 1, F32, sinhf(x))                                                         \
  X(COSH, cosh, 1, F32, coshf(x))                                                         \
  X(TAN, tan, 1, F32, tanf(x))                                                            \
  X(ERF, erf, 1, F32, erff(x))                                                            \
  X(ERFC, erfc, 1, F32, erfcf(x))                                                         \
  X(LOG1P, log1p, 1, F32, log1pf(x))                                                      \
  X(EXPM1, expm1, 1, F32, expm1f(x))                                                      \
  X(LOG2, log2, 1, F32, log2f(x))                                                         \
  X(LOG10, log10, 1, F32, log10f(x))                                                      \
  X(EXP2, exp2, 1, F32, exp2f(x))                                                         \
  X(FLOOR, floor, 1, F32, floorf(x))                                                      \
  X(CEIL, ceil, 1, F32, ceilf(x))                                                         \
  X(ROUND, round, 1, F32, nearbyintf(x))                                                  \
  X(TRUNC, trunc, 1, F32, truncf(x))                                                      \
  X(FRAC, frac, 1, F32, x - truncf(x))                                                    \
  X(SIGN, sign, 1, F32, (float)((0 < x) - (x < 0)))                                       \
  X(ATAN2, atan2, 2, F32, atan2f(x, y))                                                   \
  X(FMOD, fmod, 2, F32, fmodf(x, y))                                                      \
  X(REMAINDER, remainder, 2, F32,                                                         \
    fmodf(x, y) != 0 && (y < 0) != (fmodf(x, y) < 0) ? fmodf(x, y) + y : fmodf(x, y))     \
  X(HYPOT, hypot, 2, F32, hypotf(x, y))                                                   \
  X(COPYSIGN, copysign, 2, F32, copysignf(x, y))                                          \
  X(FMAX, fmax, 2, F32, fmaxf(x, y))                                                      \
  X(FMIN, fmin, 2, F32, fminf(x, y))                                                      \
  X(XLOGY, xlogy, 2, F32, y != y ? NAN : x == 0 ? 0.0f : x * logf(y))                     \
  X(LOGADDEXP, logaddexp, 2, F32,                                                         \
    isinf(x) && x == y ? x : (x < y ? y : x) + log1pf(expf(-fabsf(x - y))))               \
  X(POW_TENSOR, pow_tensor, 2, F32, powf(x, y))                                           \
  X(NE, ne, 2, BOOL, x != y ? 1.0f : 0.0f)                                                \
  X(LE, le, 2, BOOL, x <= y ? 1.0f : 0.0f)                                                \
  X(GE, ge, 2, BOOL, x >= y ? 1.0f : 0.0f)                                                \
  X(LT_TENSOR, lt_tensor, 2, BOOL, x < y ? 1.0f : 0.0f)
/* clang-format on */

/* RESULT: whether the operation may write a bool value (1) or makes float32 only (0). */
#define OPD__PW_RESULT_BOOL 1
#define OPD__PW_RESULT_F32  0

#endif

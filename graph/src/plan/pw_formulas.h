/* pw_formulas.h: what every operation of a fused pointwise program computes, written once for
 * the two CPU tiers (internal to the graph library).
 *
 * [Note: One formula per operation]
 * OPD__PW_FORMULAS(X) calls X(OPCODE, ARITY, EXPRESSION) for every computing opcode of
 * plan.h. The expression is C over the float operands x, y and z, the instruction's
 * constants c0 and c1 as float and e (its first constant as double), with the kernels'
 * formulas: opd__expf and opd__tanhf of kernels/src/fast_math.h, libm's float functions
 * (logf, sqrtf, erff, sinf, acosf, atan2f, ...: the ones the kernels' float32 loops call
 * through tgmath.h) and pow, and the NaN rules of ATen's maximum, minimum and clamp. The
 * interpreter (fused_run.c) expands each expression into a loop over a tile; the C tier
 * (fused_c.c) writes each one, stringified, into the program's generated source, which
 * embeds fast_math.h. Both so compute the same operations to the bit, and the kernels of
 * the unfused nodes compute them too (the numerics check of a group confirms it). An
 * expression here must therefore stay valid C on its own: no macro of this library in it.
 */
#ifndef OPD_GRAPH_PW_FORMULAS_H
#define OPD_GRAPH_PW_FORMULAS_H

/* (unformatted: clang-format takes x * y for a declaration) */
/* clang-format off */
#define OPD__PW_FORMULAS(X)                                                               \
  X(ADD, 2, x + y)                                                                        \
  X(ADD_SCALED, 2, x + c0 * y)                                                            \
  X(MUL, 2, x * y)                                                                        \
  X(DIV, 2, x / y)                                                                        \
  X(MAXIMUM, 2, x != x ? x : y != y ? y : x < y ? y : x)                                  \
  X(MINIMUM, 2, x != x ? x : y != y ? y : y < x ? y : x)                                  \
  X(EQ, 2, x == y ? 1.0f : 0.0f)                                                          \
  X(GT, 2, x > y ? 1.0f : 0.0f)                                                           \
  X(LT, 2, x < y ? 1.0f : 0.0f)                                                           \
  X(MASKED_FILL, 2, y != 0 ? c0 : x)                                                      \
  X(NEG, 1, -x)                                                                           \
  X(EXP, 1, opd__expf(x))                                                                 \
  X(LOG, 1, logf(x))                                                                      \
  X(SQRT, 1, sqrtf(x))                                                                    \
  X(RSQRT, 1, 1 / sqrtf(x))                                                               \
  X(ABS, 1, fabsf(x))                                                                     \
  X(RELU, 1, x < 0 ? 0 : x)                                                               \
  X(SIGMOID, 1, 1 / (1 + opd__expf(-x)))                                                  \
  X(TANH, 1, opd__tanhf(x))                                                               \
  X(SIN, 1, sinf(x))                                                                      \
  X(COS, 1, cosf(x))                                                                      \
  X(GELU, 1, 0.5f * x * (1 + erff(x * 0.70710678118654752440f)))                          \
  X(GELU_TANH, 1,                                                                         \
    0.5f * x * (1 + opd__tanhf(0.79788456080286535588f * (x + 0.044715f * (x * x * x))))) \
  X(FILL, 0, c0)                                                                          \
  X(COPY, 1, x)                                                                           \
  X(RECIP, 1, 1 / x)                                                                      \
  X(SQUARE, 1, x * x)                                                                     \
  X(CUBE, 1, x * x * x)                                                                   \
  X(RECIP_SQUARE, 1, 1 / (x * x))                                                         \
  X(POW, 1, (float)pow((double)x, e))                                                     \
  X(CLAMP, 1, c1 < (x < c0 ? c0 : x) ? c1 : (x < c0 ? c0 : x))                            \
  X(CLAMP_MIN, 1, x < c0 ? c0 : x)                                                        \
  X(CLAMP_MAX, 1, c1 < x ? c1 : x)                                                        \
  X(TO_BOOL, 1, x != 0 ? 1.0f : 0.0f)                                                     \
  X(WHERE, 3, x != 0 ? y : z)                                                             \
  /* the pointwise family's operators, as kernels/cpu/pointwise_*.c compute float32 */    \
  X(ACOS, 1, acosf(x))                                                                    \
  X(ASIN, 1, asinf(x))                                                                    \
  X(ATAN, 1, atanf(x))                                                                    \
  X(ACOSH, 1, acoshf(x))                                                                  \
  X(ASINH, 1, asinhf(x))                                                                  \
  X(ATANH, 1, atanhf(x))                                                                  \
  X(SINH, 1, sinhf(x))                                                                    \
  X(COSH, 1, coshf(x))                                                                    \
  X(TAN, 1, tanf(x))                                                                      \
  X(ERF, 1, erff(x))                                                                      \
  X(ERFC, 1, erfcf(x))                                                                    \
  X(LOG1P, 1, log1pf(x))                                                                  \
  X(EXPM1, 1, expm1f(x))                                                                  \
  X(LOG2, 1, log2f(x))                                                                    \
  X(LOG10, 1, log10f(x))                                                                  \
  X(EXP2, 1, exp2f(x))                                                                    \
  X(FLOOR, 1, floorf(x))                                                                  \
  X(CEIL, 1, ceilf(x))                                                                    \
  X(ROUND, 1, nearbyintf(x))                                                              \
  X(TRUNC, 1, truncf(x))                                                                  \
  X(FRAC, 1, x - truncf(x))                                                               \
  X(SIGN, 1, (float)((0 < x) - (x < 0)))                                                  \
  X(ATAN2, 2, atan2f(x, y))                                                               \
  X(FMOD, 2, fmodf(x, y))                                                                 \
  X(REMAINDER, 2,                                                                         \
    fmodf(x, y) != 0 && (y < 0) != (fmodf(x, y) < 0) ? fmodf(x, y) + y : fmodf(x, y))     \
  X(HYPOT, 2, hypotf(x, y))                                                               \
  X(COPYSIGN, 2, copysignf(x, y))                                                         \
  X(FMAX, 2, fmaxf(x, y))                                                                 \
  X(FMIN, 2, fminf(x, y))                                                                 \
  X(XLOGY, 2, y != y ? NAN : x == 0 ? 0.0f : x * logf(y))                                 \
  X(LOGADDEXP, 2, isinf(x) && x == y ? x : (x < y ? y : x) + log1pf(expf(-fabsf(x - y)))) \
  X(POW_TENSOR, 2, powf(x, y))                                                            \
  X(NE, 2, x != y ? 1.0f : 0.0f)                                                          \
  X(LE, 2, x <= y ? 1.0f : 0.0f)                                                          \
  X(GE, 2, x >= y ? 1.0f : 0.0f)                                                          \
  X(LT_TENSOR, 2, x < y ? 1.0f : 0.0f)
/* clang-format on */

#endif

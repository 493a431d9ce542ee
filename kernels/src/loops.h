/* loops.h: the elementwise engine (internal to the kernels library), a small TensorIterator,
 * with the typed-loop macros the elementwise kernels are written with, the scalar
 * conversions they need and the memory-overlap checks of in-place operators.
 *
 * [Note: The elementwise engine]
 * An elementwise kernel computes out[i] = f(in_0[i], ..., in_n[i]) over out's shape; every
 * input is broadcast to it (its meta function has checked that the shapes broadcast and
 * computed the output's shape and dtype). opd__loop_run:
 *   1. gives every operand its byte strides over out's dimensions (0 where an input is
 *      broadcast), drops size-1 dimensions, orders the rest innermost-first by stride (as
 *      TensorIterator's reorder_dimensions does) and coalesces dimensions that are
 *      contiguous with each other for every operand;
 *   2. splits the flat index range with opd__parallel_for (grain OPD_GRAIN_ELEMENTWISE;
 *      serially when out has a stride-0 dimension, whose elements alias each other);
 *   3. walks each chunk in strips along the innermost dimension and hands each strip to
 *      the operator's *loop*: a function over n contiguous elements of fixed C types (the
 *      compute dtypes in opd__loop). When every operand of a strip already is contiguous
 *      and of its compute dtype (the common case) the loop runs on the tensors' memory
 *      directly, so the float32 loops are plain flat loops the compiler vectorizes;
 *      otherwise the strip goes in blocks of OPD__LOOP_BLOCK elements through small stack
 *      buffers: inputs are gathered from their strides and converted to their compute
 *      dtype, and the result is converted and scattered to out. No temporary tensor is
 *      ever made. float16 and bfloat16 compute in float32 (opd__compute_dtype) and round
 *      when stored.
 * A loop with fn == NULL copies its single input into out, converting the dtype (copy_).
 * New outputs get the layout TensorIterator gives them (opd__alloc_elementwise_output), so
 * that an operation on transposed inputs reads and writes memory in order, as in PyTorch.
 * Compute-bound float32 loops (exp, sigmoid: opd__expf; tanh: opd__tanhf; gelu: opd__gelu_f32)
 * are also compiled for AVX2 and AVX-512 (OPD__WIDE_VECTORS); the rest are memory-bound and stay
 * at the baseline ISA.
 *
 * Loops are instantiated per compute type with the OPD__*_LOOP macros below, so that an
 * operator is written once per semantics (floating, signed, unsigned, bool), not per dtype:
 *   OPD__FLOATS(OPD__BINARY_LOOP, mul, x * y)   defines mul_F32 and mul_F64
 * and collected in a table indexed by compute type:
 *   static const opd__loop_fn mul_loops[OPD__NC] = {OPD__FLOATS(OPD__ENTRY, mul) ...};
 * Inside a loop, T is the compute type, x (and y) the input elements, c0 and c1 the
 * loop's scalar operands (ctx->c, as T). The loops' pointers are not restrict-qualified:
 * an out= output may be one of the inputs (element i is read before it is written); GCC
 * vectorizes them behind a runtime overlap check.
 */
#ifndef OPD_KERNELS_LOOPS_H
#define OPD_KERNELS_LOOPS_H

#include <math.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "fast_math.h"
#include "kernel_util.h"
#include "opd/dtype.h"
#include "opd/tensor.h"

#define OPD__MAX_INPUTS 3
/* Elements per block of the buffered path. */
#define OPD__LOOP_BLOCK 256

/* A scalar operand in a loop's compute type (member named after the type tag). */
typedef union opd__value {
  float f32;
  double f64;
  int64_t i64;
  int32_t i32;
  int16_t i16;
  int8_t i8;
  uint8_t u8;
  uint8_t b8;
} opd__value;

typedef struct opd__loop_ctx {
  opd__value c[2];  /* scalar operands */
  atomic_int error; /* set nonzero by a loop that meets bad data (integer division by zero) */
} opd__loop_ctx;

/* n contiguous output elements from n contiguous elements of each input. */
typedef void (*opd__loop_fn)(char *out, char *const *in, int64_t n, opd__loop_ctx *ctx);

typedef struct opd__loop {
  opd__loop_fn fn; /* NULL: copy the one input into out, converting dtypes */
  int ninputs;
  opd_dtype in_dtype[OPD__MAX_INPUTS]; /* compute dtype each input is read as */
  opd_dtype out_dtype;                 /* compute dtype fn writes */
  bool reads_out;                      /* fn reads out (read-modify-write, as masked_fill_) */
  opd__loop_ctx *ctx;                  /* passed to fn; may be NULL */
} opd__loop;

/* A new output of spec's shape and dtype for an elementwise operation on `inputs`, laid out
 * as TensorIterator lays it out: in the inputs' dimension order (by their strides, the
 * first input deciding ties; broadcast dimensions do not count), densely; contiguous when
 * that order is the row-major one. */
int opd__alloc_elementwise_output(const opd_out_spec *spec, opd_tensor *const *inputs, int n,
                                  opd_device device, opd_tensor **out);
/* Runs the loop over out (a CPU tensor of the broadcast shape) and the inputs (CPU, each
 * broadcastable to out's shape). Cannot fail; loops report bad data in ctx->error. */
void opd__loop_run(opd_tensor *out, opd_tensor *const *inputs, const opd__loop *loop);

/* ---- compute types ---- */

/* X(tag, C type, dtype) */
#define OPD__COMPUTE_TYPES(X) \
  X(F32, float, OPD_FLOAT32)  \
  X(F64, double, OPD_FLOAT64) \
  X(I64, int64_t, OPD_INT64)  \
  X(I32, int32_t, OPD_INT32)  \
  X(I16, int16_t, OPD_INT16)  \
  X(I8, int8_t, OPD_INT8)     \
  X(U8, uint8_t, OPD_UINT8)   \
  X(B8, uint8_t, OPD_BOOL)

enum {
#define OPD__C_ENUM(tag, ct, dt) OPD__C_##tag,
  OPD__COMPUTE_TYPES(OPD__C_ENUM)
#undef OPD__C_ENUM
      OPD__NC
};

#define OPD__T_F32 float
#define OPD__T_F64 double
#define OPD__T_I64 int64_t
#define OPD__T_I32 int32_t
#define OPD__T_I16 int16_t
#define OPD__T_I8  int8_t
#define OPD__T_U8  uint8_t
#define OPD__T_B8  uint8_t
#define OPD__M_F32 f32
#define OPD__M_F64 f64
#define OPD__M_I64 i64
#define OPD__M_I32 i32
#define OPD__M_I16 i16
#define OPD__M_I8  i8
#define OPD__M_U8  u8
#define OPD__M_B8  b8

/* The dtype a dtype computes in: float32 for float16 and bfloat16, itself otherwise. */
static inline opd_dtype opd__compute_dtype(opd_dtype t) {
  return t == OPD_FLOAT16 || t == OPD_BFLOAT16 ? OPD_FLOAT32 : t;
}
/* OPD__C_* of t's compute dtype. */
int opd__compute_index(opd_dtype t);
/* The loop of table for t's compute dtype, or OPD_EINVAL with PyTorch's dispatch error
 * "\"name\" not implemented for 'Bool'". */
int opd__loop_select(const opd__loop_fn table[OPD__NC], opd_dtype t, const char *name,
                     opd__loop_fn *fn);

/* ---- loop macros (see [Note: The elementwise engine]) ---- */

/* M(tag, ...) for each compute type of a class. */
#define OPD__FLOATS(M, ...) M(F32, __VA_ARGS__) M(F64, __VA_ARGS__)
#define OPD__SINTS(M, ...) \
  M(I64, __VA_ARGS__) M(I32, __VA_ARGS__) M(I16, __VA_ARGS__) M(I8, __VA_ARGS__)
#define OPD__UINTS(M, ...) M(U8, __VA_ARGS__)
#define OPD__INTS(M, ...)  OPD__SINTS(M, __VA_ARGS__) OPD__UINTS(M, __VA_ARGS__)
#define OPD__BOOLS(M, ...) M(B8, __VA_ARGS__)

/* A table entry: [OPD__C_F32] = name_F32, */
#define OPD__ENTRY(tag, name) [OPD__C_##tag] = name##_##tag,

#define OPD__LOOP_PROLOGUE(tag)                                     \
  typedef OPD__T_##tag T;                                           \
  const T c0 = ctx->c[0].OPD__M_##tag, c1 = ctx->c[1].OPD__M_##tag; \
  (void)c0;                                                         \
  (void)c1

/* Clones of a function for wider vector units, picked when the program loads (GCC's
 * target_clones; x86-64 Linux only): for compute-bound loops such as float32 exp, which
 * vectorize 2-4x wider than the baseline's SSE2. The clones compute bit-identical results
 * (no contraction into FMA in ISO C mode). */
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && defined(__linux__) && \
    !defined(__SANITIZE_THREAD__) /* (ThreadSanitizer's instrumented resolvers crash) */
#define OPD__WIDE_VECTORS __attribute__((target_clones("default", "avx2", "avx512f")))
#else
#define OPD__WIDE_VECTORS
#endif

/* name_tag: out[i] = expr of x = in[0][i]; U is the output's C type; attr: attributes. */
#define OPD__UNARY_LOOP_IMPL(tag, name, U, attr, expr)                                        \
  attr static void name##_##tag(char *out_, char *const *in, int64_t n, opd__loop_ctx *ctx) { \
    OPD__LOOP_PROLOGUE(tag);                                                                  \
    U *out = (U *)out_;                                                                       \
    const T *a = (const T *)in[0];                                                            \
    for (int64_t i = 0; i < n; i++) {                                                         \
      const T x = a[i];                                                                       \
      (void)x;                                                                                \
      out[i] = (U)(expr);                                                                     \
    }                                                                                         \
  }
#define OPD__UNARY_LOOP_TO(tag, name, U, expr) OPD__UNARY_LOOP_IMPL(tag, name, U, , expr)
/* name_tag: out[i] = expr of x = in[0][i], y = in[1][i]. */
#define OPD__BINARY_LOOP_TO(tag, name, U, expr)                                          \
  static void name##_##tag(char *out_, char *const *in, int64_t n, opd__loop_ctx *ctx) { \
    OPD__LOOP_PROLOGUE(tag);                                                             \
    U *out = (U *)out_;                                                                  \
    const T *a = (const T *)in[0], *b = (const T *)in[1];                                \
    for (int64_t i = 0; i < n; i++) {                                                    \
      const T x = a[i], y = b[i];                                                        \
      out[i] = (U)(expr);                                                                \
    }                                                                                    \
  }
/* The same with the output in the compute type (T) or bool (uint8_t). */
#define OPD__UNARY_LOOP(tag, name, expr) OPD__UNARY_LOOP_TO(tag, name, T, expr)
/* The same, cloned for wider vector units (OPD__WIDE_VECTORS). */
#define OPD__UNARY_WIDE_LOOP(tag, name, expr) \
  OPD__UNARY_LOOP_IMPL(tag, name, T, OPD__WIDE_VECTORS, expr)
#define OPD__PRED1_LOOP(tag, name, expr)  OPD__UNARY_LOOP_TO(tag, name, uint8_t, expr)
#define OPD__BINARY_LOOP(tag, name, expr) OPD__BINARY_LOOP_TO(tag, name, T, expr)
#define OPD__PRED2_LOOP(tag, name, expr)  OPD__BINARY_LOOP_TO(tag, name, uint8_t, expr)

/* Wraparound integer arithmetic (PyTorch's), without signed-overflow UB. */
#define OPD__WRAP_ADD(T, x, y) ((T)((uint64_t)(x) + (uint64_t)(y)))
#define OPD__WRAP_MUL(T, x, y) ((T)((uint64_t)(x) * (uint64_t)(y)))
#define OPD__WRAP_NEG(T, x)    ((T)(0u - (uint64_t)(x)))

/* ---- scalars ---- */

/* A scalar converted to dtype t as TensorIterator converts a wrapped number (a C cast; a
 * float16 / bfloat16 value is rounded to it), held in t's compute type. */
opd__value opd__scalar_cast(opd_scalar s, opd_dtype t);
/* c10's Scalar::to<T>() for dtype t: the same conversion, but OPD_EINVAL "value cannot be
 * converted to type int8_t without overflow" when the value is out of t's range. */
int opd__scalar_to(opd_scalar s, opd_dtype t, opd__value *out);
/* A value of t's compute type as a Scalar of t's kind (double, int or bool). */
opd_scalar opd__value_scalar(opd__value v, opd_dtype t);

/* ---- memory overlap (ATen's MemoryOverlap) ---- */

/* c10's is_non_overlapping_and_dense. */
bool opd__is_non_overlapping_and_dense(const opd_tensor *t);
/* OPD_EINVAL when elements of t certainly alias each other (a stride-0 dimension). */
int opd__assert_no_internal_overlap(const opd_tensor *t);
/* OPD_EINVAL when a and b share part, but not all, of their memory. */
int opd__assert_no_partial_overlap(const opd_tensor *a, const opd_tensor *b);
/* ATen's infer_dense_strides: dense strides that keep the dimension order of `strides`; 0, or
 * OPD_EINVAL when one overflows int64 (sizes of an empty tensor can multiply past it). */
int opd__infer_dense_strides(const int64_t *sizes, const int64_t *strides, int ndim, int64_t *out);

#endif

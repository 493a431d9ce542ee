/* opd/dtype.h: element types (c10's ScalarType, with its numeric values), their sizes and
 * categories, the type-promotion lattice, and half/bfloat16 conversions. */
#ifndef OPD_DTYPE_H
#define OPD_DTYPE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#ifdef __cplusplus
extern "C" {
#endif

/* X(enum name, c10 value, element size, name, c10 name). */
#define OPD_DTYPES(X)                   \
  X(UINT8, 0, 1, "uint8", "Byte")       \
  X(INT8, 1, 1, "int8", "Char")         \
  X(INT16, 2, 2, "int16", "Short")      \
  X(INT32, 3, 4, "int32", "Int")        \
  X(INT64, 4, 8, "int64", "Long")       \
  X(FLOAT16, 5, 2, "float16", "Half")   \
  X(FLOAT32, 6, 4, "float32", "Float")  \
  X(FLOAT64, 7, 8, "float64", "Double") \
  X(BOOL, 11, 1, "bool", "Bool")        \
  X(BFLOAT16, 15, 2, "bfloat16", "BFloat16")

typedef enum opd_dtype {
#define OPD__DTYPE_ENUM(e, v, size, name, c10) OPD_##e = v,
  OPD_DTYPES(OPD__DTYPE_ENUM)
#undef OPD__DTYPE_ENUM
      OPD_DTYPE_UNDEFINED = -1
} opd_dtype;

#define OPD_DEFAULT_DTYPE OPD_FLOAT32

bool opd_dtype_valid(int dtype);
/* Bytes per element; 0 for a value that is not a supported dtype. Inline: every call path
 * reads it several times. */
static inline size_t opd_dtype_size(opd_dtype t) {
  switch (t) {
#define OPD__DTYPE_SIZE(e, v, size, name, c10) \
  case OPD_##e: return size;
    OPD_DTYPES(OPD__DTYPE_SIZE)
#undef OPD__DTYPE_SIZE
  default: return 0;
  }
}
/* "float32"; "invalid" for a value that is not a supported dtype. */
const char *opd_dtype_name(opd_dtype t);
/* c10's name: "Float" for float32 (as PyTorch's error messages spell dtypes). */
const char *opd_dtype_c10_name(opd_dtype t);
/* Accepts "float32" and c10's "Float"; 0 or OPD_EINVAL. */
int opd_dtype_from_name(const char *name, opd_dtype *out);
static inline bool opd_dtype_is_floating(opd_dtype t) {
  return t == OPD_FLOAT32 || t == OPD_FLOAT64 || t == OPD_FLOAT16 || t == OPD_BFLOAT16;
}
/* Integral types, bool excluded. */
static inline bool opd_dtype_is_integral(opd_dtype t) {
  return t == OPD_UINT8 || t == OPD_INT8 || t == OPD_INT16 || t == OPD_INT32 || t == OPD_INT64;
}
/* c10's promoteTypes for two dtypes. */
opd_dtype opd_promote_types(opd_dtype a, opd_dtype b);

/* [Note: Type promotion of operands]
 * c10's result_type: operands fall into three priority classes, dimensioned tensors, 0-d
 * tensors, and wrapped numbers (Python scalars). Each class promotes its own dtypes; the
 * result is the highest class's dtype unless a lower class holds a higher *category*
 * (bool < integral < floating), in which case the result moves up to that category:
 * float32 tensor + float64 0-d tensor -> float32; int32 tensor + float64 0-d tensor ->
 * float64; int32 tensor + float scalar -> the default dtype (float32). */
typedef struct opd_result_type_state {
  opd_dtype dim_result;
  opd_dtype zero_dim_result;
  opd_dtype wrapped_result;
} opd_result_type_state;
static inline opd_result_type_state opd_result_type_init(void) {
  return (opd_result_type_state){OPD_DTYPE_UNDEFINED, OPD_DTYPE_UNDEFINED, OPD_DTYPE_UNDEFINED};
}
/* Adds an operand: a tensor of dtype `t` with `ndim` dimensions. */
void opd_result_type_add_tensor(opd_result_type_state *s, opd_dtype t, int ndim);
/* Adds a wrapped number: an int (OPD_INT64), double (the default dtype's category,
 * recorded as OPD_FLOAT64) or bool (OPD_BOOL). */
void opd_result_type_add_scalar(opd_result_type_state *s, opd_dtype scalar_kind);
opd_dtype opd_result_type(const opd_result_type_state *s);

/* IEEE half and bfloat16, round to nearest even. */
float opd_half_to_float(uint16_t h);
uint16_t opd_float_to_half(float f);
static inline float opd_bf16_to_float(uint16_t b) {
  uint32_t u = (uint32_t)b << 16;
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}
static inline uint16_t opd_float_to_bf16(float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40); /* quiet NaN */
  u += 0x7fffu + ((u >> 16) & 1);
  return (uint16_t)(u >> 16);
}

#ifdef __cplusplus
}
#endif
#endif

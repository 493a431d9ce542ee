/* dtype.c: dtype names and sizes, c10's promotion table and result_type, half floats. */
#include "opd/dtype.h"

#include <math.h>
#include <string.h>

#include "opd/error.h"

bool opd_dtype_valid(int t) {
  switch (t) {
#define OPD__DTYPE_CASE(e, v, size, name, c10) case v:
    OPD_DTYPES(OPD__DTYPE_CASE)
#undef OPD__DTYPE_CASE
    return true;
  default: return false;
  }
}

const char *opd_dtype_name(opd_dtype t) {
  switch (t) {
#define OPD__DTYPE_NAME(e, v, size, name, c10) \
  case OPD_##e: return name;
    OPD_DTYPES(OPD__DTYPE_NAME)
#undef OPD__DTYPE_NAME
  default: return "invalid";
  }
}

const char *opd_dtype_c10_name(opd_dtype t) {
  switch (t) {
#define OPD__DTYPE_C10_NAME(e, v, size, name, c10) \
  case OPD_##e: return c10;
    OPD_DTYPES(OPD__DTYPE_C10_NAME)
#undef OPD__DTYPE_C10_NAME
  default: return "Undefined";
  }
}

int opd_dtype_from_name(const char *s, opd_dtype *out) {
#define OPD__DTYPE_PARSE(e, v, size, name, c10)      \
  if (strcmp(s, name) == 0 || strcmp(s, c10) == 0) { \
    *out = OPD_##e;                                  \
    return 0;                                        \
  }
  OPD_DTYPES(OPD__DTYPE_PARSE)
#undef OPD__DTYPE_PARSE
  return opd_error(OPD_EINVAL, "unknown dtype '%s'", s);
}

/* c10's promoteTypes, restricted to opd's dtypes (indexed by index_of). */
static int index_of(opd_dtype t) {
  switch (t) {
  case OPD_UINT8: return 0;
  case OPD_INT8: return 1;
  case OPD_INT16: return 2;
  case OPD_INT32: return 3;
  case OPD_INT64: return 4;
  case OPD_FLOAT16: return 5;
  case OPD_FLOAT32: return 6;
  case OPD_FLOAT64: return 7;
  case OPD_BOOL: return 8;
  case OPD_BFLOAT16: return 9;
  default: return -1;
  }
}

opd_dtype opd_promote_types(opd_dtype a, opd_dtype b) {
  enum {
    u1 = OPD_UINT8,
    i1 = OPD_INT8,
    i2 = OPD_INT16,
    i4 = OPD_INT32,
    i8 = OPD_INT64,
    f2 = OPD_FLOAT16,
    f4 = OPD_FLOAT32,
    f8 = OPD_FLOAT64,
    b1 = OPD_BOOL,
    bf = OPD_BFLOAT16,
  };
  static const signed char table[10][10] = {
      /*        u1  i1  i2  i4  i8  f2  f4  f8  b1  bf */
      /* u1 */ {u1, i2, i2, i4, i8, f2, f4, f8, u1, bf},
      /* i1 */ {i2, i1, i2, i4, i8, f2, f4, f8, i1, bf},
      /* i2 */ {i2, i2, i2, i4, i8, f2, f4, f8, i2, bf},
      /* i4 */ {i4, i4, i4, i4, i8, f2, f4, f8, i4, bf},
      /* i8 */ {i8, i8, i8, i8, i8, f2, f4, f8, i8, bf},
      /* f2 */ {f2, f2, f2, f2, f2, f2, f4, f8, f2, f4},
      /* f4 */ {f4, f4, f4, f4, f4, f4, f4, f8, f4, f4},
      /* f8 */ {f8, f8, f8, f8, f8, f8, f8, f8, f8, f8},
      /* b1 */ {u1, i1, i2, i4, i8, f2, f4, f8, b1, bf},
      /* bf */ {bf, bf, bf, bf, bf, f4, f4, f8, bf, bf},
  };
  int ia = index_of(a), ib = index_of(b);
  if (ia < 0) return b;
  if (ib < 0) return a;
  return (opd_dtype)table[ia][ib];
}

void opd_result_type_add_tensor(opd_result_type_state *s, opd_dtype t, int ndim) {
  opd_dtype *slot = ndim > 0 ? &s->dim_result : &s->zero_dim_result;
  *slot = opd_promote_types(*slot, t);
}

void opd_result_type_add_scalar(opd_result_type_state *s, opd_dtype kind) {
  /* a Python float is the default dtype, as c10 treats wrapped numbers */
  opd_dtype t = opd_dtype_is_floating(kind) ? OPD_DEFAULT_DTYPE : kind;
  s->wrapped_result = opd_promote_types(s->wrapped_result, t);
}

static opd_dtype combine_categories(opd_dtype higher, opd_dtype lower) {
  if (opd_dtype_is_floating(higher)) return higher;
  if (higher == OPD_BOOL || opd_dtype_is_floating(lower)) return opd_promote_types(higher, lower);
  if (higher != OPD_DTYPE_UNDEFINED) return higher;
  return lower;
}

opd_dtype opd_result_type(const opd_result_type_state *s) {
  return combine_categories(s->dim_result,
                            combine_categories(s->zero_dim_result, s->wrapped_result));
}

float opd_half_to_float(uint16_t h) {
  uint32_t sign = (uint32_t)(h & 0x8000) << 16, exp = (h >> 10) & 0x1f, mant = h & 0x3ff, u;
  if (exp == 0x1f) {
    u = sign | 0x7f800000u | (mant << 13);
  } else if (exp == 0) {
    if (mant == 0) {
      u = sign;
    } else { /* subnormal: normalise */
      int e = -1;
      do {
        e++;
        mant <<= 1;
      } while (!(mant & 0x400));
      u = sign | ((uint32_t)(127 - 15 - e) << 23) | ((mant & 0x3ff) << 13);
    }
  } else {
    u = sign | ((exp + 127 - 15) << 23) | (mant << 13);
  }
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}

uint16_t opd_float_to_half(float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  uint16_t sign = (uint16_t)((u >> 16) & 0x8000);
  uint32_t abs = u & 0x7fffffffu;
  if (abs > 0x7f800000u) return sign | 0x7e00;  /* NaN */
  if (abs >= 0x477ff000u) return sign | 0x7c00; /* overflow (rounds to) inf */
  if (abs < 0x38800000u) {                      /* subnormal or zero in half */
    float a;
    memcpy(&a, &abs, sizeof a);
    return sign | (uint16_t)lrintf(a * 16777216.0f); /* a / 2^-24, round to nearest even */
  }
  uint32_t mant_odd = (abs >> 13) & 1;
  abs += 0xfffu + mant_odd; /* round to nearest even */
  return sign | (uint16_t)((abs - 0x38000000u) >> 13);
}

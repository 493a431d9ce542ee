/* conformance_check.c: reading the fixture's values and judging results against them: the
 * rules of tests/fixtures/conformance/FORMAT.md sections 4 and 6 and [Note: Outcomes of
 * several results], shared by the in-process and RPC replays. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "conformance.h"
#include "opd/error.h"

/* Errors that only data can reveal, and those of a CPU kernel's dtype dispatch (PyTorch's Meta
 * kernels accept every dtype): a Meta run cannot raise them. One a line, so that each family
 * adds its own. */
static const char *const data_dependent_errors[] = {
    "ZeroDivisionError",
    "index out of range in self",
    "Found an invalid max index",                      /* max_unpool's indices */
    "\" not implemented for '",                        /* a CPU kernel's dtype dispatch */
    "is out of bounds.",                               /* nll_loss's targets */
    "all elements of input should be between 0 and 1", /* binary_cross_entropy's inputs */
    "is out of bounds for dimension",                  /* the indexing family's indices */
    "out of range: tried to access index",
    "Number of elements of source < number of ones in mask",
    "] is not finite", /* histc's range, read from the data */
};

const char *str(const json_t *obj, const char *key) {
  const char *v = json_string_value(json_object_get(obj, key));
  return v ? v : "";
}
bool is_meta(const runner *r) {
  return r->device.type == OPD_DEVICE_META;
}
int parse_float(const json_t *v, double *out) {
  if (json_is_number(v)) {
    *out = json_number_value(v);
    return 0;
  }
  const char *s = json_string_value(v);
  if (!s) return -1;
  if (strcmp(s, "nan") == 0)
    *out = NAN;
  else if (strcmp(s, "inf") == 0)
    *out = INFINITY;
  else if (strcmp(s, "-inf") == 0)
    *out = -INFINITY;
  else
    return -1;
  return 0;
}
int write_element(void *base, int64_t i, opd_dtype t, const json_t *v) {
  double d = 0;
  int64_t n = 0;
  if (t == OPD_BOOL) {
    if (!json_is_boolean(v)) return -1;
    ((bool *)base)[i] = json_is_true(v);
    return 0;
  }
  if (opd_dtype_is_floating(t)) {
    if (parse_float(v, &d)) return -1;
  } else {
    if (!json_is_integer(v)) return -1;
    n = json_integer_value(v);
  }
  switch (t) {
  case OPD_FLOAT32: ((float *)base)[i] = (float)d; break;
  case OPD_FLOAT64: ((double *)base)[i] = d; break;
  case OPD_FLOAT16: ((uint16_t *)base)[i] = opd_float_to_half((float)d); break;
  case OPD_BFLOAT16: ((uint16_t *)base)[i] = opd_float_to_bf16((float)d); break;
  case OPD_INT64: ((int64_t *)base)[i] = n; break;
  case OPD_INT32: ((int32_t *)base)[i] = (int32_t)n; break;
  case OPD_INT16: ((int16_t *)base)[i] = (int16_t)n; break;
  case OPD_INT8: ((int8_t *)base)[i] = (int8_t)n; break;
  case OPD_UINT8: ((uint8_t *)base)[i] = (uint8_t)n; break;
  default: return -1;
  }
  return 0;
}
outcome_kind outcome_kind_of(const json_t *expect) {
  const char *type = str(expect, "type");
  if (strcmp(type, "Tuple") == 0) return OUTCOME_TUPLE;
  if (strcmp(type, "Tensor[]") == 0) return OUTCOME_LIST;
  return OUTCOME_TENSOR;
}
bool outcome_has_values(const json_t *expect) {
  return !json_is_true(json_object_get(expect, "values_unspecified"));
}
int bool_array(const json_t *a, bool *out, int max) {
  if (!json_is_array(a) || (int)json_array_size(a) > max) return -1;
  for (size_t i = 0; i < json_array_size(a); i++) {
    if (!json_is_boolean(json_array_get(a, i))) return -1;
    out[i] = json_is_true(json_array_get(a, i));
  }
  return (int)json_array_size(a);
}
int float_array(const json_t *a, double *out, int max) {
  if (!json_is_array(a) || (int)json_array_size(a) > max) return -1;
  for (size_t i = 0; i < json_array_size(a); i++)
    if (parse_float(json_array_get(a, i), &out[i]) != 0) return -1;
  return (int)json_array_size(a);
}
int int_array(const json_t *a, int64_t *out, int max) {
  if (!json_is_array(a) || (int)json_array_size(a) > max) return -1;
  for (size_t i = 0; i < json_array_size(a); i++) {
    if (!json_is_integer(json_array_get(a, i))) return -1;
    out[i] = json_integer_value(json_array_get(a, i));
  }
  return (int)json_array_size(a);
}
const char *format_sizes(const int64_t *sizes, int n, char *buf, size_t len) {
  size_t used = (size_t)snprintf(buf, len, "[");
  for (int i = 0; i < n && used < len; i++)
    used += (size_t)snprintf(buf + used, len - used, "%s%lld", i ? ", " : "", (long long)sizes[i]);
  if (used < len) snprintf(buf + used, len - used, "]");
  return buf;
}
double read_double(const void *p, opd_dtype t) {
  switch (t) {
  case OPD_FLOAT32: return *(const float *)p;
  case OPD_FLOAT64: return *(const double *)p;
  case OPD_FLOAT16: return opd_half_to_float(*(const uint16_t *)p);
  case OPD_BFLOAT16: return opd_bf16_to_float(*(const uint16_t *)p);
  default: return 0;
  }
}
int64_t read_int(const void *p, opd_dtype t) {
  switch (t) {
  case OPD_INT64: return *(const int64_t *)p;
  case OPD_INT32: return *(const int32_t *)p;
  case OPD_INT16: return *(const int16_t *)p;
  case OPD_INT8: return *(const int8_t *)p;
  case OPD_UINT8: return *(const uint8_t *)p;
  case OPD_BOOL: return *(const bool *)p;
  default: return 0;
  }
}
/* Compares the logical values of a strided buffer with the fixture's row-major `data`. */
bool compare_buffer(const char *base, opd_dtype dtype, const int64_t *sizes, const int64_t *strides,
                    int ndim, int64_t numel, const json_t *expect, char *why, size_t wlen) {
  const json_t *data = json_object_get(expect, "data");
  double rtol = json_number_value(json_object_get(expect, "rtol"));
  double atol = json_number_value(json_object_get(expect, "atol"));
  size_t esize = opd_dtype_size(dtype);
  if ((int64_t)json_array_size(data) != numel) {
    snprintf(why, wlen, "expected %zu values, result has %lld", json_array_size(data),
             (long long)numel);
    return false;
  }
  int64_t index[OPD_MAX_DIMS] = {0};
  for (int64_t i = 0; i < numel; i++) {
    int64_t off = 0;
    for (int d = 0; d < ndim; d++) off += index[d] * strides[d];
    const void *p = base + off * (int64_t)esize;
    const json_t *e = json_array_get(data, (size_t)i);
    if (opd_dtype_is_floating(dtype)) {
      double want, got = read_double(p, dtype);
      bool ok = parse_float(e, &want) == 0 &&
                (isnan(want)   ? isnan(got)
                 : isinf(want) ? got == want
                               : isfinite(got) && fabs(got - want) <= atol + rtol * fabs(want));
      if (!ok) {
        snprintf(why, wlen, "value %lld: expected %.9g, got %.9g (rtol %g, atol %g)", (long long)i,
                 want, got, rtol, atol);
        return false;
      }
    } else {
      int64_t want = dtype == OPD_BOOL ? json_is_true(e) : json_integer_value(e);
      if (read_int(p, dtype) != want) {
        snprintf(why, wlen, "value %lld: expected %lld, got %lld", (long long)i, (long long)want,
                 (long long)read_int(p, dtype));
        return false;
      }
    }
    for (int d = ndim - 1; d >= 0 && ++index[d] == sizes[d]; d--) index[d] = 0;
  }
  return true;
}
/* An error case: the call must fail. The error class and message are compared too, and a
 * mismatch is noted, not failed (FORMAT.md calls matching them optional). */
bool judge_error(runner *r, const char *id, const json_t *expect, int rc, const char *message,
                 char *why, size_t wlen) {
  if (rc == 0) {
    snprintf(why, wlen, "expected %s (%s), the call succeeded", str(expect, "error"),
             str(expect, "message_contains"));
    return false;
  }
  bool index_error = strcmp(str(expect, "error"), "IndexError") == 0;
  if (!strstr(message, str(expect, "message_contains")) || index_error != (rc == OPD_EINDEX)) {
    r->message_mismatches++;
    if (r->verbose)
      printf("note %s: expected %s containing \"%s\", got %s: %s\n", id, str(expect, "error"),
             str(expect, "message_contains"), opd_err_name(rc), message);
  }
  return true;
}
/* A result's dtype and shape. */
bool judge_geometry(const json_t *expect, opd_dtype dtype, const int64_t *sizes, int ndim,
                    char *why, size_t wlen) {
  opd_dtype want_dtype;
  int64_t shape[OPD_MAX_DIMS];
  int nd = int_array(json_object_get(expect, "shape"), shape, OPD_MAX_DIMS);
  if (opd_dtype_from_name(str(expect, "dtype"), &want_dtype) != 0 || nd < 0) {
    snprintf(why, wlen, "fixture dtype or shape malformed");
    return false;
  }
  if (dtype != want_dtype) {
    snprintf(why, wlen, "dtype: expected %s, got %s", str(expect, "dtype"), opd_dtype_name(dtype));
    return false;
  }
  if (nd != ndim || memcmp(shape, sizes, nd * sizeof *shape) != 0) {
    size_t used = (size_t)snprintf(why, wlen, "shape: expected ");
    if (used < wlen) used += strlen(format_sizes(shape, nd, why + used, wlen - used));
    if (used < wlen) used += (size_t)snprintf(why + used, wlen - used, ", got ");
    if (used < wlen) format_sizes(sizes, ndim, why + used, wlen - used);
    return false;
  }
  return true;
}
void report(runner *r, bool ok, const char *id, const char *why) {
  if (ok) {
    r->passed++;
    if (r->verbose) printf("ok   %s\n", id);
  } else {
    r->failed++;
    printf("FAIL %s: %s\n", id, why);
  }
}
bool data_dependent(const json_t *expect) {
  const char *m = str(expect, "message_contains");
  for (size_t i = 0; i < sizeof data_dependent_errors / sizeof *data_dependent_errors; i++)
    if (strstr(m, data_dependent_errors[i])) return true;
  return false;
}

/* nvrtc_check.c: the checks of an NVRTC kernel (see [Note: NVRTC kernels] in
 * opd/cuda_nvrtc.h), in every build: opd_nvrtc_check judges a registration the same with or
 * without CUDA, before the device's absence is reported; opd_nvrtc_check_call judges a
 * call's tensors. */
#include <stdio.h>
#include <string.h>

#include "opd/cuda_nvrtc.h"
#include "opd/error.h"
#include "opd/tensor.h"

static bool plain(const opd_type *t) {
  return !t->optional && !t->is_list;
}

static int check_schema(const opd_schema *s) {
  if (s->num_returns != 1 || s->returns[0].type.kind != OPD_TYPE_TENSOR ||
      !plain(&s->returns[0].type))
    return opd_error(OPD_EINVAL, "an NVRTC kernel's schema returns one Tensor");
  uint32_t ntensors = 0;
  for (uint32_t i = 0; i < s->num_args; i++) {
    const opd_type *t = &s->args[i].type;
    bool tensor = plain(t) && t->kind == OPD_TYPE_TENSOR && ntensors == i;
    bool value = plain(t) && (t->kind == OPD_TYPE_FLOAT || t->kind == OPD_TYPE_INT) && ntensors;
    if (!tensor && !value)
      return opd_error(OPD_EINVAL,
                       "argument '%s' of an NVRTC kernel's schema: the arguments are Tensors "
                       "(at least one, none optional or a list), then float and int values",
                       s->args[i].name);
    ntensors += tensor;
  }
  if (ntensors == 0)
    return opd_error(OPD_EINVAL, "an NVRTC kernel's schema takes at least one Tensor");
  return 0;
}

static int check_entry(const char *entry) {
  size_t n = entry ? strlen(entry) : 0;
  bool ok = n > 0 && n <= OPD_NVRTC_MAX_ENTRY && !(entry[0] >= '0' && entry[0] <= '9');
  for (size_t i = 0; ok && i < n; i++) {
    char c = entry[i];
    ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
  }
  return ok ? 0
            : opd_error(OPD_EINVAL,
                        "entry '%.100s': the name of a __global__ function (an identifier of 1 "
                        "to %d characters)",
                        entry ? entry : "", OPD_NVRTC_MAX_ENTRY);
}

/* ---- dtypes ---- */

static bool name_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

static const char *skip_spaces(const char *p) {
  while (*p == ' ' || *p == '\t') p++;
  return p;
}

static int dtypes_error(const char *text, const char *why, uint32_t ntensors) {
  return opd_error(OPD_EINVAL,
                   "dtypes '%.100s': %s (expected one dtype for everything, or one per Tensor "
                   "argument (%u here), then '->' and the result's: \"float16, float16 -> "
                   "float32\")",
                   text, why, ntensors);
}

/* The dtypes `text` declares for a schema check_schema accepted. */
static int parse_dtypes(const char *text, const opd_schema *schema, opd_nvrtc_dtypes *out) {
  uint32_t n = 0;
  while (n < schema->num_args && schema->args[n].type.kind == OPD_TYPE_TENSOR) n++;
  *out = (opd_nvrtc_dtypes){.ntensors = n, .result = OPD_FLOAT32};
  for (uint32_t i = 0; i < n; i++) out->args[i] = OPD_FLOAT32;
  if (!text || !text[0]) return 0;
  if (strlen(text) > OPD_NVRTC_MAX_DTYPES)
    return opd_error(OPD_EINVAL, "dtypes: at most %d bytes", OPD_NVRTC_MAX_DTYPES);
  opd_dtype got[OPD_SCHEMA_MAX_ARGS + 1];
  uint32_t ngot = 0, before_arrow = 0;
  bool arrow = false;
  for (const char *p = skip_spaces(text);;) {
    char name[16];
    size_t len = 0;
    while (name_char(p[len])) len++;
    if (len == 0 || len >= sizeof name) {
      char why[64];
      snprintf(why, sizeof why, "a dtype name expected at byte %td", p - text);
      return dtypes_error(text, why, n);
    }
    memcpy(name, p, len);
    name[len] = '\0';
    opd_dtype t;
    if (opd_dtype_from_name(name, &t) < 0)
      return opd_error(OPD_EINVAL,
                       "dtypes '%.100s': unknown dtype '%s' (uint8, int8, int16, int32, int64, "
                       "float16, float32, float64, bool, bfloat16)",
                       text, name);
    if (ngot == n + 1) return dtypes_error(text, "too many dtypes", n);
    got[ngot++] = t;
    p = skip_spaces(p + len);
    if (!*p) break;
    if (*p == ',' && !arrow) {
      p = skip_spaces(p + 1);
    } else if (p[0] == '-' && p[1] == '>' && !arrow) {
      arrow = true;
      before_arrow = ngot;
      p = skip_spaces(p + 2);
    } else {
      char why[64];
      if (*p > ' ' && *p < 0x7f)
        snprintf(why, sizeof why, "unexpected '%c' at byte %td", *p, p - text);
      else
        snprintf(why, sizeof why, "unexpected byte 0x%02x at byte %td", (unsigned char)*p,
                 p - text);
      return dtypes_error(text, why, n);
    }
  }
  if (!arrow && ngot != 1) return dtypes_error(text, "a list without '->' and the result", n);
  if (arrow && (before_arrow != n || ngot != n + 1))
    return dtypes_error(text, before_arrow != n ? "not one per Tensor argument" : "no result", n);
  for (uint32_t i = 0; i < n; i++) out->args[i] = (int8_t)got[arrow ? i : 0];
  out->result = (int8_t)got[ngot - 1];
  return 0;
}

int opd_nvrtc_check(const char *source, size_t len, const char *entry, const opd_schema *schema,
                    const char *dtypes, opd_nvrtc_dtypes *types) {
  if (!source || len == 0 || len > OPD_NVRTC_MAX_SOURCE || memchr(source, '\0', len))
    return opd_error(OPD_EINVAL, "CUDA source: 1 to %d bytes, without NUL bytes (got %zu)",
                     OPD_NVRTC_MAX_SOURCE, len);
  int rc = check_entry(entry);
  if (rc == 0) rc = check_schema(schema);
  return rc < 0 ? rc : parse_dtypes(dtypes, schema, types);
}

/* ---- a call's tensors ---- */

int opd_nvrtc_check_call(const opd_nvrtc_dtypes *d, const opd_ivalue *a, const char *op) {
  const opd_tensor *first = a[0].u.t;
  opd_device dev = opd_tensor_device(first);
  for (uint32_t i = 0; i < d->ntensors; i++)
    if (opd_tensor_dtype(a[i].u.t) != (opd_dtype)d->args[i])
      return opd_error(OPD_EINVAL,
                       "%s: argument %u is a %s tensor, but the NVRTC kernel was registered to "
                       "take %s there",
                       op, i, opd_dtype_name(opd_tensor_dtype(a[i].u.t)),
                       opd_dtype_name((opd_dtype)d->args[i]));
  for (uint32_t i = 0; i < d->ntensors; i++) {
    const opd_tensor *t = a[i].u.t;
    opd_device td = opd_tensor_device(t);
    if (td.type != OPD_DEVICE_CUDA)
      return opd_error(OPD_EINVAL, "%s: an NVRTC kernel runs on CUDA tensors (argument %u is not)",
                       op, i);
    if (td.index != dev.index)
      return opd_error(OPD_EINVAL,
                       "%s: expected all tensors to be on the same device, but argument %u is on "
                       "another one",
                       op, i);
    if (!opd_tensor_is_contiguous(t))
      return opd_error(OPD_EINVAL, "%s: argument %u is not contiguous (call contiguous() first)",
                       op, i);
    if (t->ndim != first->ndim ||
        memcmp(opd_tensor_sizes(t), opd_tensor_sizes(first), (size_t)t->ndim * sizeof(int64_t)))
      return opd_error(OPD_EINVAL, "%s: argument %u's sizes differ from argument 0's", op, i);
  }
  return 0;
}

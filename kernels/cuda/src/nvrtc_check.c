/* nvrtc_check.c: opd_nvrtc_check, the input checks of an NVRTC kernel (see [Note: NVRTC
 * kernels] in opd/cuda_nvrtc.h), in every build: a request is judged the same with or
 * without CUDA, before the device's absence is reported. */
#include <string.h>

#include "opd/cuda_nvrtc.h"
#include "opd/error.h"

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

int opd_nvrtc_check(const char *source, size_t len, const char *entry, const opd_schema *schema) {
  if (!source || len == 0 || len > OPD_NVRTC_MAX_SOURCE || memchr(source, '\0', len))
    return opd_error(OPD_EINVAL, "CUDA source: 1 to %d bytes, without NUL bytes (got %zu)",
                     OPD_NVRTC_MAX_SOURCE, len);
  int rc = check_entry(entry);
  return rc < 0 ? rc : check_schema(schema);
}

/* nvrtc_off.c: opd/cuda_nvrtc.h in a build without CUDA: nothing compiles, every kernel
 * creation fails with OPD_EUNAVAILABLE. */
#include <assert.h>

#include "opd/cuda.h"
#include "opd/cuda_nvrtc.h"
#include "opd/error.h"

int opd_nvrtc_kernel_create(const char *source, size_t len, const char *entry,
                            const opd_schema *schema, opd_nvrtc_launch launch, const char *dtypes,
                            opd_nvrtc_kernel **out, char **log) {
  (void)launch;
  *out = NULL;
  *log = NULL;
  opd_nvrtc_dtypes types;
  int rc = opd_nvrtc_check(source, len, entry, schema, dtypes, &types);
  if (rc < 0) return rc;
  opd_cuda_init();
  const char *why = opd_cuda_unavailable_reason();
  return opd_error(OPD_EUNAVAILABLE, "CUDA unavailable: %s", why ? why : "built without CUDA");
}

opd_kernel opd_nvrtc_kernel_boxed(opd_nvrtc_kernel *k) {
  (void)k;
  assert(!"no NVRTC kernel exists in a build without CUDA");
  return (opd_kernel){0};
}

void opd_nvrtc_kernel_free(opd_nvrtc_kernel *k) {
  assert(!k);
  (void)k;
}

int opd_nvrtc_compile_cubin(const char *source, const char *entry, int capability, void **image,
                            size_t *size, char **log) {
  (void)source;
  (void)entry;
  (void)capability;
  *image = NULL;
  *size = 0;
  *log = NULL;
  return opd_error(OPD_EUNAVAILABLE, "CUDA unavailable: built without CUDA (no NVRTC)");
}

int opd_nvrtc_function_create(const char *source, const char *entry, opd_nvrtc_function **out,
                              char **log) {
  (void)source;
  (void)entry;
  *out = NULL;
  *log = NULL;
  opd_cuda_init();
  const char *why = opd_cuda_unavailable_reason();
  return opd_error(OPD_EUNAVAILABLE, "CUDA unavailable: %s", why ? why : "built without CUDA");
}

int opd_nvrtc_function_launch(const opd_nvrtc_function *f, int device, const void *params,
                              size_t size, int64_t n) {
  (void)f;
  (void)device;
  (void)params;
  (void)size;
  (void)n;
  assert(!"no generated function exists in a build without CUDA");
  return OPD_EUNAVAILABLE;
}

void opd_nvrtc_function_free(opd_nvrtc_function *f) {
  assert(!f);
  (void)f;
}

const char *opd_nvrtc_version(void) {
  return "nvrtc=none (built without CUDA)";
}

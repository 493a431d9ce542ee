/* unavailable.c: the allocator registered for CUDA devices when there are none (no driver, no
 * device, or a build without CUDA): every allocation fails with OPD_EUNAVAILABLE and the
 * reason, so that creating a CUDA tensor reports why CUDA cannot be used. */
#include <assert.h>

#include "cuda_internal.h"
#include "opd/allocator.h"
#include "opd/cuda.h"
#include "opd/error.h"

static void *unavailable_alloc(const opd_allocator *a, opd_device device, size_t nbytes) {
  (void)a;
  const char *why = opd_cuda_unavailable_reason();
  opd_error(OPD_EUNAVAILABLE, "cannot allocate %zu bytes on cuda:%d: CUDA unavailable: %s", nbytes,
            device.index < 0 ? 0 : device.index, why ? why : "unknown");
  return NULL;
}

static void unavailable_free(const opd_allocator *a, opd_device device, void *p, size_t nbytes) {
  (void)a;
  (void)device;
  (void)nbytes;
  (void)p;
  assert(p == NULL && "no CUDA block exists without CUDA");
}

static const opd_allocator unavailable_allocator = {.alloc = unavailable_alloc,
                                                    .free = unavailable_free};

int opd__cuda_register_unavailable(void) {
  return opd_allocator_register(OPD_DEVICE_CUDA, &unavailable_allocator);
}

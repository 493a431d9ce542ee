/* cuda_off.c: opd/cuda.h in a build without CUDA (-DOPD_CUDA=OFF or no toolkit): no device,
 * every call fails with OPD_EUNAVAILABLE "built without CUDA", and creating a CUDA tensor
 * fails the same way (the allocator of unavailable.c), also through the dispatcher: the
 * factory kernels of factories.c are registered at the CUDA key, so that a composite that
 * makes a CUDA tensor (_to_copy to a CUDA device) gets that error, not "not implemented". */
#include <pthread.h>

#include "cuda_internal.h"
#include "cuda_kernels.h"
#include "opd/cuda.h"
#include "opd/error.h"
#include "opd/kernels.h"

#define OPD__WRAPPER(op, fn, R, ...) OPD_BOXED_WRAPPER(fn, R, __VA_ARGS__)
OPD_CUDA_FACTORY_KERNELS(OPD__WRAPPER)
#undef OPD__WRAPPER

static const opd__cuda_kernel_entry kernels[] = {
#define OPD__ENTRY(op, fn, R, ...) {op, OPD_UNBOXED_KERNEL(fn, R, __VA_ARGS__)},
    OPD_CUDA_FACTORY_KERNELS(OPD__ENTRY)
#undef OPD__ENTRY
};

int opd__cuda_kernels_register(void) {
  return opd__cuda_register_table(kernels, sizeof kernels / sizeof *kernels, OPD_HERE);
}

static const char reason[] = "built without CUDA";

static int unavailable(void) {
  return opd_error(OPD_EUNAVAILABLE, "CUDA unavailable: %s", reason);
}

static int init_status;
static void init(void) {
  init_status = opd__cuda_register_unavailable();
  if (init_status == 0) init_status = opd_kernels_register();
  if (init_status == 0) init_status = opd__cuda_kernels_register();
}

int opd_cuda_init(void) {
  static pthread_once_t once = PTHREAD_ONCE_INIT;
  pthread_once(&once, init);
  return init_status < 0 ? init_status : 0;
}

int opd_cuda_device_count(void) {
  return 0;
}

const char *opd_cuda_unavailable_reason(void) {
  return reason;
}

const char *opd_cuda_device_name(int device) {
  (void)device;
  return NULL;
}

int opd_cuda_device_capability(int device) {
  (void)device;
  return -1;
}

bool opd_cuda_device_healthy(int device, const char **sticky_error) {
  (void)device;
  if (sticky_error) *sticky_error = NULL;
  return false;
}

void *opd_cuda_stream_create(int device) {
  (void)device;
  unavailable();
  return NULL;
}

void opd_cuda_stream_destroy(int device, void *stream) {
  (void)device;
  (void)stream;
}

void opd_cuda_set_current_stream(int device, void *stream) {
  (void)device;
  (void)stream;
}

void *opd_cuda_current_stream(int device) {
  (void)device;
  return NULL;
}

int opd_cuda_stream_synchronize(int device, void *stream) {
  (void)device;
  (void)stream;
  return unavailable();
}

int opd_cuda_copy_from_host(opd_tensor *dst, size_t byte_offset, const void *src, size_t nbytes) {
  (void)dst;
  (void)byte_offset;
  (void)src;
  (void)nbytes;
  return unavailable();
}

int opd_cuda_copy_to_host(void *dst, const opd_tensor *src, size_t byte_offset, size_t nbytes) {
  (void)dst;
  (void)src;
  (void)byte_offset;
  (void)nbytes;
  return unavailable();
}

void *opd_cuda_host_alloc(size_t nbytes) {
  (void)nbytes;
  unavailable();
  return NULL;
}

void opd_cuda_host_free(void *p) {
  (void)p;
}

int opd_cuda_set_memory_limit(int device, uint64_t bytes) {
  (void)device;
  (void)bytes;
  return unavailable();
}

void opd_cuda_empty_cache(void) {}

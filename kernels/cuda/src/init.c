/* init.c: opd_cuda_init (devices, the allocator, the CUDA kernels) and the tensor copies of
 * opd/cuda.h between host memory and CUDA storage. */
#include <pthread.h>

#include "cuda_internal.h"
#include "cuda_kernels.h"
#include "opd/cuda.h"
#include "opd/error.h"
#include "opd/kernels.h"
#include "opd/tensor.h"

static int init_status;

static void init(void) {
  const char *reason;
  int n = opd__cuda_runtime_init(&reason);
  int rc = opd__cuda_allocator_register(n > 0);
  if (rc == 0) rc = opd_kernels_register();
  if (rc == 0) rc = opd__cuda_kernels_register();
  init_status = rc < 0 ? rc : n;
}

int opd_cuda_init(void) {
  static pthread_once_t once = PTHREAD_ONCE_INIT;
  pthread_once(&once, init);
  return init_status;
}

/* The device and the address of byte `byte_offset` past element 0 of a CUDA tensor, after
 * checking that nbytes from there stay inside its storage. */
static int storage_range(const opd_tensor *t, size_t byte_offset, size_t nbytes, int *device,
                         char **p) {
  if (opd_tensor_device(t).type != OPD_DEVICE_CUDA)
    return opd_error(OPD_EINVAL, "expected a CUDA tensor");
  size_t start = (size_t)t->storage_offset * opd_dtype_size(opd_tensor_dtype(t));
  if (byte_offset > t->storage->nbytes || start > t->storage->nbytes - byte_offset ||
      nbytes > t->storage->nbytes - byte_offset - start)
    return opd_error(OPD_EINVAL,
                     "copy of %zu bytes at offset %zu is outside the storage (%zu bytes)", nbytes,
                     byte_offset, t->storage->nbytes);
  *device = opd_tensor_device(t).index < 0 ? 0 : opd_tensor_device(t).index;
  *p = nbytes ? (char *)opd_tensor_data(t) + byte_offset : NULL;
  return 0;
}

int opd_cuda_copy_from_host(opd_tensor *dst, size_t byte_offset, const void *src, size_t nbytes) {
  int device = 0;
  char *p = NULL;
  int rc = storage_range(dst, byte_offset, nbytes, &device, &p);
  if (rc == 0) rc = opd__cuda_memcpy(device, p, src, nbytes, 1, true);
  if (rc == 0) opd_tensor_bump_version(dst);
  return rc;
}

int opd_cuda_copy_to_host(void *dst, const opd_tensor *src, size_t byte_offset, size_t nbytes) {
  int device = 0;
  char *p = NULL;
  int rc = storage_range(src, byte_offset, nbytes, &device, &p);
  return rc ? rc : opd__cuda_memcpy(device, dst, p, nbytes, 2, true);
}

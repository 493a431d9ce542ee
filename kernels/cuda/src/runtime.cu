/* runtime.cu: the CUDA backend's runtime: device discovery, device health (sticky errors),
 * streams (per thread and device), copies, pinned host memory, raw device memory for the
 * allocator (allocator.c) and CUDA errors as opd errors.
 *
 * [Note: Sticky errors]
 * After cudaErrorIllegalAddress and its kind (launch failure, misaligned address, illegal
 * instruction, hardware stack error, device-side assert, uncorrectable ECC or NVLink errors,
 * an error the GPU's containment caught, an external device's error, the MPS server ending
 * the client, and cudaErrorUnknown, which the runtime gives for failures it cannot name) the
 * device's context is unusable until the process ends: every later call on it returns the
 * same error.
 * The first one seen is recorded for the device (once, under a mutex; readers check an
 * atomic flag), and opd__cuda_use_device refuses the device from then on with
 * OPD_EUNAVAILABLE naming it, so clients get a clear error instead of a cascade of CUDA
 * failures.
 */
#include <cuda_runtime.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "cuda_internal.h"
#include "opd/cuda.h"
#include "opd/error.h"

namespace {

struct device_info {
  char name[256];
  int capability;
};

int device_count;
const char *unavailable_reason = "opd_cuda_init has not run";
char reason_buf[160];
device_info devices[OPD_CUDA_MAX_DEVICES];
pthread_once_t init_once = PTHREAD_ONCE_INIT;

/* [Note: Sticky errors] */
pthread_mutex_t sticky_lock = PTHREAD_MUTEX_INITIALIZER;
int sticky_set[OPD_CUDA_MAX_DEVICES]; /* read with __atomic_load_n */
char sticky_text[OPD_CUDA_MAX_DEVICES][192];

thread_local cudaStream_t current_stream[OPD_CUDA_MAX_DEVICES];
thread_local char thread_stream_key; /* its address stands for this thread's default stream */

bool is_sticky(cudaError_t e) {
  switch ((int)e) { /* an int: the newest codes are numbers, for older toolkits' headers */
  case cudaErrorIllegalAddress:
  case cudaErrorLaunchFailure:
  case cudaErrorMisalignedAddress:
  case cudaErrorIllegalInstruction:
  case cudaErrorInvalidAddressSpace:
  case cudaErrorInvalidPc:
  case cudaErrorHardwareStackError:
  case cudaErrorAssert:
  case cudaErrorECCUncorrectable:
  case cudaErrorNvlinkUncorrectable:
  case 226: /* cudaErrorContained (CUDA 12.4 on) */
  case 721: /* cudaErrorTensorMemoryLeak (CUDA 12.8 on) */
  case cudaErrorExternalDevice:
  case cudaErrorMpsClientTerminated:
  case cudaErrorUnknown:
  case cudaErrorLaunchTimeout:
  case cudaErrorContextIsDestroyed: return true;
  default: return false;
  }
}

void mark_unhealthy(int device, cudaError_t e, const char *what) {
  if (device < 0 || device >= OPD_CUDA_MAX_DEVICES) return;
  pthread_mutex_lock(&sticky_lock);
  if (!sticky_set[device]) {
    snprintf(sticky_text[device], sizeof sticky_text[device], "%s: %s (during %s)",
             cudaGetErrorName(e), cudaGetErrorString(e), what);
    __atomic_store_n(&sticky_set[device], 1, __ATOMIC_RELEASE);
  }
  pthread_mutex_unlock(&sticky_lock);
}

void discover(void) {
  int n = 0;
  cudaError_t e = cudaGetDeviceCount(&n);
  int driver = 0;
  if (e == cudaErrorInsufficientDriver && cudaDriverGetVersion(&driver) == cudaSuccess &&
      driver > 0) { /* a driver older than the (static) runtime: say so, it is not missing */
    snprintf(reason_buf, sizeof reason_buf,
             "CUDA driver too old: it supports CUDA %d.%d, opd was built with CUDA %d.%d (%s)",
             driver / 1000, driver % 1000 / 10, CUDART_VERSION / 1000, CUDART_VERSION % 1000 / 10,
             cudaGetErrorName(e));
  } else if (e == cudaErrorInsufficientDriver || e == cudaErrorNoDevice) {
    snprintf(reason_buf, sizeof reason_buf, "%s (%s)",
             e == cudaErrorNoDevice ? "no CUDA device" : "no CUDA driver", cudaGetErrorName(e));
  } else if (e != cudaSuccess) {
    snprintf(reason_buf, sizeof reason_buf, "CUDA unusable: %s (%s)", cudaGetErrorString(e),
             cudaGetErrorName(e));
  } else if (n <= 0) {
    snprintf(reason_buf, sizeof reason_buf, "no CUDA device");
  }
  if (e != cudaSuccess || n <= 0) {
    (void)cudaGetLastError(); /* clear it: not sticky */
    unavailable_reason = reason_buf;
    return;
  }
  if (n > OPD_CUDA_MAX_DEVICES) n = OPD_CUDA_MAX_DEVICES;
  for (int d = 0; d < n; d++) {
    cudaDeviceProp p;
    if (cudaGetDeviceProperties(&p, d) != cudaSuccess) {
      snprintf(devices[d].name, sizeof devices[d].name, "CUDA device %d", d);
      devices[d].capability = -1;
      continue;
    }
    snprintf(devices[d].name, sizeof devices[d].name, "%s", p.name);
    devices[d].capability = p.major * 10 + p.minor;
  }
  device_count = n;
  unavailable_reason = NULL;
}

int check_index(int device) {
  if (device_count == 0)
    return opd_error(OPD_EUNAVAILABLE, "CUDA unavailable: %s", unavailable_reason);
  if (device < 0 || device >= device_count)
    return opd_error(OPD_EINVAL, "CUDA device %d does not exist (%d device%s)", device,
                     device_count, device_count == 1 ? "" : "s");
  return 0;
}

} // namespace

extern "C" {

int opd__cuda_runtime_init(const char **reason) {
  pthread_once(&init_once, discover);
  *reason = unavailable_reason;
  return device_count;
}

int opd_cuda_device_count(void) {
  return device_count;
}

const char *opd_cuda_unavailable_reason(void) {
  return unavailable_reason;
}

const char *opd_cuda_device_name(int device) {
  return device >= 0 && device < device_count ? devices[device].name : NULL;
}

int opd_cuda_device_capability(int device) {
  return device >= 0 && device < device_count ? devices[device].capability : -1;
}

bool opd_cuda_device_healthy(int device, const char **sticky_error) {
  if (sticky_error) *sticky_error = NULL;
  if (device < 0 || device >= device_count) return false;
  if (__atomic_load_n(&sticky_set[device], __ATOMIC_ACQUIRE)) {
    if (sticky_error) *sticky_error = sticky_text[device];
    return false;
  }
  return true;
}

int opd__cuda_use_device(int device) {
  int rc = check_index(device);
  if (rc) return rc;
  const char *sticky;
  if (!opd_cuda_device_healthy(device, &sticky))
    return opd_error(OPD_EUNAVAILABLE, "CUDA device %d is unhealthy: %s", device, sticky);
  return opd__cuda_error(device, cudaSetDevice(device), "cudaSetDevice");
}

int opd__cuda_error(int device, int cuda_error, const char *what) {
  cudaError_t e = (cudaError_t)cuda_error;
  if (e == cudaSuccess) return 0;
  if (is_sticky(e)) {
    mark_unhealthy(device, e, what);
    return opd_error(OPD_EUNAVAILABLE, "CUDA device %d: %s: %s (during %s)", device,
                     cudaGetErrorName(e), cudaGetErrorString(e), what);
  }
  (void)cudaGetLastError(); /* a non-sticky error must not be reported again by later calls */
  return opd_error(e == cudaErrorMemoryAllocation ? OPD_ERESOURCE : OPD_EINTERNAL,
                   "CUDA device %d: %s: %s (during %s)", device, cudaGetErrorName(e),
                   cudaGetErrorString(e), what);
}

int opd__cuda_check_launch(int device, const char *what) {
  return opd__cuda_error(device, cudaGetLastError(), what);
}

int opd__cuda_raw_malloc(int device, size_t nbytes, void **out) {
  int rc = opd__cuda_use_device(device);
  if (rc) return rc;
  cudaError_t e = cudaMalloc(out, nbytes);
  if (e == cudaErrorMemoryAllocation) {
    (void)cudaGetLastError();
    return OPD_ERESOURCE;
  }
  return opd__cuda_error(device, e, "cudaMalloc");
}

void opd__cuda_raw_free(int device, void *p) {
  if (opd__cuda_use_device(device)) return; /* an unhealthy context keeps its memory */
  opd__cuda_error(device, cudaFree(p), "cudaFree");
}

void *opd_cuda_current_stream(int device) {
  if (device < 0 || device >= OPD_CUDA_MAX_DEVICES) return NULL;
  cudaStream_t s = current_stream[device];
  return s ? (void *)s : (void *)cudaStreamPerThread;
}

void opd_cuda_set_current_stream(int device, void *stream) {
  if (device >= 0 && device < OPD_CUDA_MAX_DEVICES) current_stream[device] = (cudaStream_t)stream;
}

const void *opd__cuda_stream_key(int device) {
  cudaStream_t s = current_stream[device];
  return s ? (const void *)s : (const void *)&thread_stream_key;
}

void *opd_cuda_stream_create(int device) {
  if (opd__cuda_use_device(device)) return NULL;
  cudaStream_t s = NULL;
  if (opd__cuda_error(device, cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking),
                      "cudaStreamCreateWithFlags"))
    return NULL;
  return (void *)s;
}

void opd_cuda_stream_destroy(int device, void *stream) {
  if (!stream || opd__cuda_use_device(device)) return;
  /* its blocks go to the other streams only once no work of it can touch them; its cuBLAS
   * workspaces are freed into its own cache either way */
  bool idle = opd__cuda_error(device, cudaStreamSynchronize((cudaStream_t)stream),
                              "cudaStreamSynchronize") == 0;
  opd__cuda_blas_stream_destroyed(device, stream);
  if (idle) opd__cuda_allocator_stream_destroyed(device, stream);
  opd__cuda_error(device, cudaStreamDestroy((cudaStream_t)stream), "cudaStreamDestroy");
}

int opd_cuda_stream_synchronize(int device, void *stream) {
  int rc = opd__cuda_use_device(device);
  if (rc) return rc;
  cudaStream_t s = stream ? (cudaStream_t)stream : (cudaStream_t)opd_cuda_current_stream(device);
  return opd__cuda_error(device, cudaStreamSynchronize(s), "cudaStreamSynchronize");
}

int opd__cuda_memcpy(int device, void *dst, const void *src, size_t nbytes, int kind, bool wait) {
  int rc = opd__cuda_use_device(device);
  if (rc || nbytes == 0) return rc;
  static const cudaMemcpyKind kinds[] = {cudaMemcpyDefault, cudaMemcpyHostToDevice,
                                         cudaMemcpyDeviceToHost, cudaMemcpyDeviceToDevice};
  cudaStream_t s = (cudaStream_t)opd_cuda_current_stream(device);
  rc =
      opd__cuda_error(device, cudaMemcpyAsync(dst, src, nbytes, kinds[kind], s), "cudaMemcpyAsync");
  if (rc == 0 && wait)
    rc = opd__cuda_error(device, cudaStreamSynchronize(s), "cudaStreamSynchronize");
  return rc;
}

int opd__cuda_memset0(int device, void *p, size_t nbytes) {
  int rc = opd__cuda_use_device(device);
  if (rc || nbytes == 0) return rc;
  return opd__cuda_error(
      device, cudaMemsetAsync(p, 0, nbytes, (cudaStream_t)opd_cuda_current_stream(device)),
      "cudaMemsetAsync");
}

void *opd_cuda_host_alloc(size_t nbytes) {
  if (device_count == 0) {
    opd_error(OPD_EUNAVAILABLE, "CUDA unavailable: %s", unavailable_reason);
    return NULL;
  }
  void *p = NULL;
  cudaError_t e = cudaHostAlloc(&p, nbytes ? nbytes : 1, cudaHostAllocPortable);
  if (e != cudaSuccess) {
    (void)cudaGetLastError();
    opd_error(OPD_ERESOURCE, "cudaHostAlloc of %zu bytes failed: %s", nbytes, cudaGetErrorName(e));
    return NULL;
  }
  return p;
}

void opd_cuda_host_free(void *p) {
  if (p) (void)cudaFreeHost(p);
}

} // extern "C"

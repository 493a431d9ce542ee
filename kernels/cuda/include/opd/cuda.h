/* opd/cuda.h: the CUDA backend's public API (runtime, streams, copies, pinned memory).
 *
 * [Note: The CUDA backend in every build]
 * This header exists in every build. With -DOPD_CUDA=OFF (or no toolkit found) a small C
 * file implements it: opd_cuda_init() registers an allocator for OPD_DEVICE_CUDA whose
 * alloc fails with OPD_EUNAVAILABLE, returns 0, and opd_cuda_unavailable_reason() says
 * "built without CUDA". With CUDA, the runtime is linked statically, so a machine with no
 * driver or no device still starts: opd_cuda_init() then returns 0 and the reason names
 * the CUDA error ("no CUDA driver (cudaErrorInsufficientDriver)", "CUDA driver too old: it
 * supports CUDA 12.4, opd was built with CUDA 13.0 (cudaErrorInsufficientDriver)", "no CUDA
 * device (cudaErrorNoDevice)").
 *
 * [Note: Device health]
 * A sticky CUDA error (cudaErrorIllegalAddress, cudaErrorLaunchFailure, ...) poisons the
 * device's context for the life of the process. The first one seen on a device is
 * recorded; from then on every call that would use that device fails with
 * OPD_EUNAVAILABLE naming the error, and opd_cuda_device_healthy() reports it.
 *
 * [Note: Streams]
 * Every kernel and copy runs on the calling thread's current stream of its device
 * (opd_cuda_current_stream): the stream set with opd_cuda_set_current_stream, or the
 * per-thread default stream (cudaStreamPerThread) when none is set. Device memory freed
 * on one stream is reused only on that stream, or on any once that stream was destroyed
 * ([Note: The CUDA caching allocator] in kernels/cuda/src/allocator.c).
 */
#ifndef OPD_CUDA_H
#define OPD_CUDA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* opd_tensor stays opaque here, so that CUDA C++ files can include this header too. */
typedef struct opd_tensor opd_tensor;

#ifdef __cplusplus
extern "C" {
#endif

/* Idempotent and thread-safe. Counts devices, registers the CUDA allocator (when there is
 * no device: an allocator whose alloc fails with OPD_EUNAVAILABLE and the reason) and the
 * CUDA kernels. Returns the device count (0 when unavailable). */
int opd_cuda_init(void);
/* The device count found by opd_cuda_init (0 before it, or when unavailable). */
int opd_cuda_device_count(void);
/* NULL when at least one device is available; else why not ("built without CUDA", "no
 * CUDA device (cudaErrorNoDevice)", ...). Valid after opd_cuda_init. */
const char *opd_cuda_unavailable_reason(void);
/* "NVIDIA H200"; NULL for a bad index or when unavailable. */
const char *opd_cuda_device_name(int device);
/* major * 10 + minor (90 for sm_90); -1 for a bad index or when unavailable. */
int opd_cuda_device_capability(int device);
/* False when `device` is not a usable device or has seen a sticky error; *sticky_error
 * (if non-NULL) then gets the reason ("cudaErrorIllegalAddress: ..."), else NULL. */
bool opd_cuda_device_healthy(int device, const char **sticky_error);

/* A new non-blocking stream on `device` (cudaStream_t as void *); NULL + opd_error. */
void *opd_cuda_stream_create(int device);
/* Waits for `stream`, hands its cached device memory to the other streams, destroys it. */
void opd_cuda_stream_destroy(int device, void *stream);
/* Thread-local; NULL: the per-thread default stream. */
void opd_cuda_set_current_stream(int device, void *stream);
/* The calling thread's current stream of `device` (never NULL when available: the
 * per-thread default stream's handle when none is set). */
void *opd_cuda_current_stream(int device);
/* Waits for `stream` (NULL: the current stream). 0, or the asynchronous error as an opd
 * error (OPD_EUNAVAILABLE for sticky errors, which mark the device unhealthy). */
int opd_cuda_stream_synchronize(int device, void *stream);

/* Copies nbytes from host memory into dst's storage at element 0 + byte_offset, on the
 * current stream, and waits. OPD_EINVAL when the range is outside the storage. */
int opd_cuda_copy_from_host(opd_tensor *dst, size_t byte_offset, const void *src, size_t nbytes);
/* Copies nbytes from src's storage at element 0 + byte_offset to host memory, on the
 * current stream, and waits: raw bytes (for a contiguous src its elements from that byte
 * on; for a view, the span of storage it reaches). OPD_EINVAL when the range is outside
 * the storage. */
int opd_cuda_copy_to_host(void *dst, const opd_tensor *src, size_t byte_offset, size_t nbytes);

/* Pinned host staging buffers (cudaHostAlloc); NULL + opd_error on failure. */
void *opd_cuda_host_alloc(size_t nbytes);
void opd_cuda_host_free(void *p);

/* Caps the device memory that `device`'s allocator hands out (bytes in use plus the cache
 * it keeps; 0: no limit). OPD_EINVAL for a bad device, OPD_EUNAVAILABLE without CUDA. */
int opd_cuda_set_memory_limit(int device, uint64_t bytes);
/* Returns the cached device blocks of every device to the driver. */
void opd_cuda_empty_cache(void);

#ifdef __cplusplus
}
#endif
#endif

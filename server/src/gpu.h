/* gpu.h: the daemon's CUDA side: the GPU pools, the sessions' streams, uploads and
 * downloads of CUDA tensors through pinned staging buffers, synchronize, device health,
 * the status section, and the teardown of a session's CUDA state (internal to the server).
 *
 * [Note: Sessions on the GPU]
 * At start the server calls opd_cuda_init(). Without a driver or a device it logs "CUDA
 * backend unavailable: <reason>" once and serves the CPU: an upload to a CUDA device is
 * refused with UNAVAILABLE, and a call that would allocate on one fails in the CUDA
 * allocator with OPD_EUNAVAILABLE, also UNAVAILABLE on the wire. With devices, each gets a
 * pool of cuda_workers_per_device threads ([Note: Sessions on workers] in worker.h); a job
 * runs on the pool of the first CUDA device among its tensors and Device arguments (its
 * upload's device, a download's or a release's tensor).
 *
 * A session has one stream per device it used, created by the first job that touches that
 * device and installed (opd_cuda_set_current_stream) by every worker that runs one of its
 * jobs on every device the job touches ([Note: A session's streams on every device a job
 * touches] in gpu.c): since a session runs one job at a time, in order, its kernels and
 * copies on a device are ordered on that stream whichever worker launched them, and
 * different sessions overlap on the device. Launches are
 * asynchronous; a download waits for its stream (the copy does), synchronize waits for
 * every stream of the session, and an asynchronous error comes back as that request's
 * error. A device that saw a sticky error is unhealthy: its jobs fail with UNAVAILABLE at
 * once, and status shows the error.
 *
 * The event loop never calls CUDA. It receives an upload's bytes into host memory as for
 * the CPU; the device's worker allocates the CUDA tensor and copies the bytes through its
 * pinned staging buffer (STAGING_BYTES, allocated once per worker and reused), chunk by
 * chunk; a download copies back the same way into a host tensor that the loop then writes
 * (for a strided view, only the bytes of its storage that the view reaches: an expanded
 * element is downloaded as that element, [Note: Downloading a CUDA view] in gpu.c).
 * When the session ends, the loop hands its streams and its handle table to the server's
 * reaper thread, which waits for the streams, releases the tensors (CUDA memory is freed
 * off the loop) and destroys the streams; the device memory the session's stream cached then
 * serves every other stream ([Note: The CUDA caching allocator] in kernels/cuda/src/allocator.c).
 */
#ifndef OPD_SERVER_GPU_H
#define OPD_SERVER_GPU_H

#include <jansson.h>

#include "job.h"
#include "opd/server.h"

typedef struct opd__gpu opd__gpu;
typedef struct opd__gpu_session opd__gpu_session;

/* Server start, after the scheduler started: opd_cuda_init(), the log line when CUDA is
 * unavailable, and with devices the GPU pools and the reaper (srv->gpu). 0 or an error. */
int opd__gpu_start(opd_server *srv);
/* The CUDA side of `ndev` devices (1 to 64) with its reaper running, without pools (what
 * opd__gpu_start makes; tests make one for fake devices). 0 with *out, or an error. */
int opd__gpu_create(unsigned ndev, opd__gpu **out);
/* After the scheduler stopped: reaps what is left, joins the reaper. NULL is a no-op. */
void opd__gpu_stop(opd__gpu *g);

/* The device a job runs on (opd__route_fn; on a worker that owns the job's session). */
opd_device opd__gpu_route(opd__job *job);
/* On a worker, before a job on a CUDA device runs: fails for a missing or unhealthy
 * device (OPD_EUNAVAILABLE), else installs the session's stream of the device (created
 * on first use). */
int opd__gpu_enter(opd__job *job);
/* An upload to job->device: replaces job->tensor (host bytes) by a CUDA tensor holding
 * them. */
int opd__gpu_upload(opd__job *job);
/* A host copy of CUDA tensor t, after the session's work on it (current stream), with t's
 * sizes and dtype: contiguous, or for a view that reaches fewer storage elements than it has
 * (an expand) a view with t's strides of a copy of just those elements ([Note: Downloading
 * a CUDA view] in gpu.c). It never holds more bytes than t's storage. */
int opd__gpu_to_host(const opd_tensor *t, opd_tensor **host);
/* Waits for every stream of the session: 0 or the first asynchronous error. */
int opd__gpu_synchronize(opd__session *s);
/* The loop, as the session ends: hands its CUDA state and handle table to the reaper. */
void opd__gpu_session_end(opd__session *s);
/* The loop, for an upload's device (CUDA type): reads only what opd_cuda_init recorded.
 * 0 with *out, or OPD_EUNAVAILABLE / OPD_EINVAL with a message. */
int opd__gpu_upload_device(int index, opd_device *out);
/* Adds "cuda": {available, reason, devices: [...]} to /v1/info and the GPUs to its
 * "devices" list. */
void opd__gpu_status(const opd_server *srv, json_t *info);

/* What gpu.c asks of the CUDA backend for the sessions' streams: opd/cuda.h's
 * opd_cuda_device_healthy, opd_cuda_stream_create, _synchronize and _destroy. Tests replace
 * them (before any session uses a GPU) to run the stream logic on fake devices; NULL
 * restores them. */
typedef struct opd__gpu_stream_ops {
  bool (*healthy)(int device, const char **sticky_error);
  void *(*create)(int device);
  int (*synchronize)(int device, void *stream);
  void (*destroy)(int device, void *stream);
} opd__gpu_stream_ops;
void opd__gpu_set_stream_ops(const opd__gpu_stream_ops *ops);

#endif

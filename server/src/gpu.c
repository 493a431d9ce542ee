/* gpu.c: the daemon's CUDA side (see [Note: Sessions on the GPU] in gpu.h). */
#include "gpu.h"

#include <assert.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "connection.h"
#include "decode.h"
#include "graphs.h"
#include "loop.h"
#include "opd/allocator.h"
#include "opd/checked.h"
#include "opd/cuda.h"
#include "opd/error.h"
#include "opd/graph_exec.h"
#include "opd/log.h"
#include "opd/memory.h"
#include "session.h"

/* A worker's pinned staging buffer: uploads and downloads go through it in chunks. */
#define STAGING_BYTES ((size_t)4 << 20)

/* The CUDA backend's stream functions, or a test's (opd__gpu_set_stream_ops). */
static const opd__gpu_stream_ops cuda_stream_ops = {.healthy = opd_cuda_device_healthy,
                                                    .create = opd_cuda_stream_create,
                                                    .synchronize = opd_cuda_stream_synchronize,
                                                    .destroy = opd_cuda_stream_destroy};
static const opd__gpu_stream_ops *ops = &cuda_stream_ops;

void opd__gpu_set_stream_ops(const opd__gpu_stream_ops *o) {
  ops = o ? o : &cuda_stream_ops;
}

struct opd__gpu_session {
  opd__gpu *g;
  opd__map handles; /* at the reaper: the session's handle table, taken over at its end */
  opd__map graphs;  /* and its compiled graphs */
  opd__gpu_session *next;
  unsigned ndev;
  void *streams[]; /* per device; NULL until a job runs there */
};

struct opd__gpu {
  unsigned ndev;
  pthread_t reaper;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  opd__gpu_session *head; /* ended sessions to reap */
  bool stopping;
};

/* ---- the reaper ---- */

static void reap(opd__gpu_session *gs) {
  for (unsigned d = 0; d < gs->ndev; d++)
    if (gs->streams[d]) (void)ops->synchronize((int)d, gs->streams[d]);
  for (size_t i = 0; i < gs->handles.cap; i++)
    if (gs->handles.keys[i]) opd_tensor_release((opd_tensor *)(uintptr_t)gs->handles.vals[i]);
  opd__free(gs->handles.keys);
  opd__free(gs->handles.vals);
  for (size_t i = 0; i < gs->graphs.cap; i++)
    if (gs->graphs.keys[i])
      opd_compiled_graph_release((opd_compiled_graph *)(uintptr_t)gs->graphs.vals[i]);
  opd__free(gs->graphs.keys);
  opd__free(gs->graphs.vals);
  for (unsigned d = 0; d < gs->ndev; d++)
    if (gs->streams[d]) ops->destroy((int)d, gs->streams[d]);
  opd__free(gs);
}

static void *reaper_main(void *arg) {
  opd__gpu *g = arg;
  pthread_mutex_lock(&g->mu);
  for (;;) {
    while (!g->head && !g->stopping) pthread_cond_wait(&g->cv, &g->mu);
    opd__gpu_session *gs = g->head;
    if (!gs) break; /* stopping, and nothing is left */
    g->head = gs->next;
    pthread_mutex_unlock(&g->mu);
    reap(gs);
    pthread_mutex_lock(&g->mu);
  }
  pthread_mutex_unlock(&g->mu);
  return NULL;
}

void opd__gpu_session_end(opd__session *s) {
  opd__gpu_session *gs = s->gpu;
  if (!gs) return;
  s->gpu = NULL;
  /* the tensors go with the streams: their memory is freed by the reaper, not the loop; so
   * do the compiled graphs, whose CUDA constants the streams may still read and whose
   * generated functions are unloaded only once the devices are idle (opd_nvrtc_function_free
   * waits for them) */
  gs->handles = s->handles;
  s->handles = (opd__map){0};
  gs->graphs = s->graphs;
  s->graphs = (opd__map){0};
  opd__gpu *g = gs->g;
  pthread_mutex_lock(&g->mu);
  gs->next = g->head;
  g->head = gs;
  pthread_cond_signal(&g->cv);
  pthread_mutex_unlock(&g->mu);
}

/* ---- start and stop ---- */

int opd__gpu_create(unsigned ndev, opd__gpu **out) {
  assert(ndev > 0 && ndev <= 64);
  opd__gpu *g = opd__calloc(1, sizeof *g);
  if (!g) return opd_error(OPD_ENOMEM, "out of memory starting the GPU workers");
  g->ndev = ndev;
  pthread_mutex_init(&g->mu, NULL);
  pthread_cond_init(&g->cv, NULL);
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  int err = pthread_create(&g->reaper, NULL, reaper_main, g);
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  if (err) {
    pthread_cond_destroy(&g->cv);
    pthread_mutex_destroy(&g->mu);
    opd__free(g);
    return opd_error(OPD_ERESOURCE, "cannot start the GPU reaper thread: %s", strerror(err));
  }
  *out = g;
  return 0;
}

int opd__gpu_start(opd_server *srv) {
  int ndev = opd_cuda_init();
  if (ndev <= 0) {
    const char *why = opd_cuda_unavailable_reason();
    opd_log(OPD_LOG_INFO, "CUDA backend unavailable: %s", why ? why : "no CUDA device");
    /* a call with a CUDA Device argument then fails with UNAVAILABLE (opd__gpu_enter); the
     * workers read route only after the loop, started later, queued a job */
    srv->sched.route = opd__gpu_route;
    return 0;
  }
  int rc = opd__gpu_create((unsigned)ndev, &srv->gpu);
  if (rc < 0) return rc;
  opd__gpu *g = srv->gpu;
  unsigned per = srv->cfg.cuda_workers_per_device ? srv->cfg.cuda_workers_per_device : 1;
  rc = opd__sched_start_gpu(&srv->sched, g->ndev, per, opd__gpu_route);
  if (rc < 0) return rc;
  for (int d = 0; d < ndev; d++)
    opd_log(OPD_LOG_INFO, "cuda:%d: %s (sm_%d), %u worker(s)", d, opd_cuda_device_name(d),
            opd_cuda_device_capability(d), per);
  return 0;
}

void opd__gpu_stop(opd__gpu *g) {
  if (!g) return;
  pthread_mutex_lock(&g->mu);
  g->stopping = true;
  pthread_cond_signal(&g->cv);
  pthread_mutex_unlock(&g->mu);
  pthread_join(g->reaper, NULL);
  assert(!g->head);
  pthread_cond_destroy(&g->cv);
  pthread_mutex_destroy(&g->mu);
  opd__free(g);
}

/* ---- routing and streams ---- */

/* A visit of a CUDA device a job names; true stops the walk. */
typedef bool (*device_visit)(opd_device d, void *arg);

static bool visit_handle(opd__session *s, uint64_t handle, device_visit visit, void *arg) {
  opd_tensor *t = opd__session_lookup(s, handle);
  return t && opd_tensor_device(t).type == OPD_DEVICE_CUDA && visit(opd_tensor_device(t), arg);
}

static bool visit_handles(opd__session *s, const uint64_t *h, size_t n, device_visit visit,
                          void *arg) {
  for (size_t i = 0; i < n; i++)
    if (visit_handle(s, h[i], visit, arg)) return true;
  return false;
}

static bool take_first(opd_device d, void *arg) {
  *(opd_device *)arg = d;
  return true;
}

/* The loop set an upload's device. */
static opd_device route_upload(opd__job *job, bool devices) {
  (void)devices;
  return job->device;
}

/* [Note: Prepared calls]: a call is decoded here, once, and routed on its tensors' and
 * Device arguments' CUDA devices. A job that goes to another pool is prepared again by the
 * worker that takes it there. */
static opd_device route_call(opd__job *job, bool devices) {
  (void)devices;
  if (job->call.state == OPD__CALL_NONE && opd__call_prepare(job) < 0)
    return job->device; /* answered: nothing runs, on this pool */
  return job->call.device;
}

/* A graph run, on its inputs' specs (graphs.c). */
static opd_device route_graph_run(opd__job *job, bool devices) {
  (void)devices;
  opd_device d;
  return opd__graph_route(job, &d) < 0 ? job->device : d;
}

static opd_device route_download(opd__job *job, bool devices) {
  opd_device d = {OPD_DEVICE_CPU, -1};
  if (devices) visit_handle(job->session, job->req->download->handle, take_first, &d);
  return d;
}

static opd_device route_release(opd__job *job, bool devices) {
  opd_device d = {OPD_DEVICE_CPU, -1};
  const Opd__V1__Release *r = job->req->release;
  if (devices) visit_handles(job->session, r->handles, r->n_handles, take_first, &d);
  return d;
}

/* The ROUTE column of requests.def ([Note: The request table]): the rest need no device
 * (synchronize waits on any thread). */
static opd_device (*const routes[OPD__NUM_JOB_KINDS])(opd__job *job, bool devices) = {
#define NONE NULL
#define OPD__REQUEST(kind, body, session, accept, on_loop, estimate, route, ...) \
  [OPD__JOB_##kind] = route,
#include "requests.def"
#undef OPD__REQUEST
#undef NONE
};

opd_device opd__gpu_route(opd__job *job) {
  opd_server *srv = job->conn->server;
  bool devices = srv->gpu != NULL; /* else no tensor is on CUDA */
  opd_device d = {OPD_DEVICE_CPU, -1};
  if (routes[job->kind]) d = routes[job->kind](job, devices);
  if (opd__sched_pool_of(&srv->sched, d) != opd__sched_pool_of(&srv->sched, job->device))
    opd__call_unprepare(job); /* it moves: prepared again on its pool */
  return d;
}

static int unavailable(int index) {
  int n = opd_cuda_device_count();
  if (n == 0) {
    const char *why = opd_cuda_unavailable_reason();
    return opd_error(OPD_EUNAVAILABLE, "CUDA unavailable: %s", why ? why : "no CUDA device");
  }
  return opd_error(OPD_EUNAVAILABLE, "no device cuda:%d (this machine has %d CUDA device%s)", index,
                   n, n == 1 ? "" : "s");
}

int opd__gpu_upload_device(int index, opd_device *out) {
  if (index < -1 || index > INT16_MAX)
    return opd_error(OPD_EINVAL, "upload: invalid CUDA device index %d", index);
  if (index < 0) index = 0;
  if (index >= opd_cuda_device_count()) return unavailable(index);
  *out = (opd_device){OPD_DEVICE_CUDA, (int16_t)index};
  return 0;
}

static int check_healthy(int dev) {
  const char *sticky;
  if (!ops->healthy(dev, &sticky))
    return opd_error(OPD_EUNAVAILABLE, "device cuda:%d is unhealthy: %s", dev,
                     sticky ? sticky : "unknown error");
  return 0;
}

/* Makes the session's stream of `dev` (created on first use) the worker's current one. */
static int install_stream(opd__gpu_session *gs, int dev) {
  if (!gs->streams[dev] && !(gs->streams[dev] = ops->create(dev))) {
    char msg[512];
    snprintf(msg, sizeof msg, "%s", opd_last_error());
    return opd_error(opd_last_error_code(), "cuda:%d: cannot create the session's stream: %s", dev,
                     msg);
  }
  opd_cuda_set_current_stream(dev, gs->streams[dev]);
  return 0;
}

/* [Note: A session's streams on every device a job touches]
 * A job runs on the pool of one device, but a call may touch others: a copy between two GPUs
 * (x.to("cuda:1") of a tensor on cuda:0), or a kernel whose tensors are spread over
 * devices. Every device it touches must run its work on the session's stream of that
 * device: on the per-thread default stream instead, the copy would not be ordered with the
 * session's earlier kernels there (a non-blocking stream does not wait for it, nor it for
 * them), and the allocator would cache the blocks it frees under the wrong stream ([Note: The
 * CUDA caching allocator]). So with more than one device, entering a call installs the
 * session's stream (created on first use) on every device among its tensors and Device
 * arguments, and the per-thread default stream on the others, so that no stream of another
 * session (or of one that ended) stays current on the worker. With one device the job's
 * device is the only one there is. */
int opd__gpu_enter(opd__job *job) {
  int dev = job->device.index < 0 ? 0 : job->device.index;
  opd_server *srv = job->conn->server;
  if (!srv->gpu || dev >= (int)srv->gpu->ndev) return unavailable(dev);
  int rc = check_healthy(dev);
  if (rc < 0) return rc;
  opd__session *s = job->session;
  opd__gpu_session *gs = s->gpu;
  if (!gs) {
    unsigned n = srv->gpu->ndev;
    if (!(gs = opd__calloc(1, sizeof *gs + n * sizeof *gs->streams)))
      return opd_error(OPD_ENOMEM, "out of memory for the session's CUDA state");
    gs->g = srv->gpu;
    gs->ndev = n;
    s->gpu = gs;
  }
  if ((rc = install_stream(gs, dev)) < 0 || gs->ndev == 1) return rc;
  uint64_t touched = (uint64_t)1 << dev;
  if (job->kind == OPD__JOB_CALL) touched |= job->call.cuda_devices;
  if (job->kind == OPD__JOB_RUN_GRAPH && job->graph)
    touched |= opd_compiled_graph_cuda_devices(job->graph);
  for (unsigned d = 0; d < gs->ndev && rc == 0; d++) {
    if ((int)d == dev) continue;
    if (!((touched >> d) & 1))
      opd_cuda_set_current_stream((int)d, NULL);
    else if ((rc = check_healthy((int)d)) == 0)
      rc = install_stream(gs, (int)d);
  }
  return rc;
}

int opd__gpu_synchronize(opd__session *s) {
  opd__gpu_session *gs = s->gpu;
  for (unsigned d = 0; gs && d < gs->ndev; d++) {
    if (!gs->streams[d]) continue;
    int rc = ops->synchronize((int)d, gs->streams[d]);
    if (rc < 0) {
      char msg[512];
      snprintf(msg, sizeof msg, "%s", opd_last_error());
      return opd_error(rc, "synchronize: cuda:%u: %s", d, msg);
    }
  }
  return 0;
}

/* ---- staging ---- */

static pthread_key_t staging_key;
static pthread_once_t staging_once = PTHREAD_ONCE_INIT;

static void staging_free(void *p) {
  opd_cuda_host_free(p);
}

static void staging_init(void) {
  int rc = pthread_key_create(&staging_key, staging_free);
  assert(rc == 0);
  (void)rc;
}

/* The calling worker's pinned buffer of STAGING_BYTES, allocated once and kept (freed when
 * the thread ends). */
static void *staging(void) {
  pthread_once(&staging_once, staging_init);
  void *p = pthread_getspecific(staging_key);
  if (!p && (p = opd_cuda_host_alloc(STAGING_BYTES))) pthread_setspecific(staging_key, p);
  return p;
}

int opd__gpu_upload(opd__job *job) {
  opd_tensor *host = job->tensor, *dev;
  int rc = opd_tensor_empty(opd_tensor_sizes(host), host->ndim, opd_tensor_dtype(host), job->device,
                            &dev);
  if (rc < 0) return rc;
  size_t nbytes = (size_t)host->numel * opd_dtype_size(opd_tensor_dtype(host));
  const char *src = opd_tensor_data(host);
  void *buf = nbytes ? staging() : NULL;
  if (nbytes && !buf) rc = opd_last_error_code();
  for (size_t off = 0; rc == 0 && off < nbytes; off += STAGING_BYTES) {
    size_t n = nbytes - off < STAGING_BYTES ? nbytes - off : STAGING_BYTES;
    memcpy(buf, src + off, n);
    rc = opd_cuda_copy_from_host(dev, off, buf, n);
  }
  if (rc < 0) {
    opd_tensor_release(dev);
    return rc;
  }
  opd_tensor_release(host);
  job->tensor = dev;
  return 0;
}

/* A contiguous copy of CUDA tensor t made on its device, on the current stream. */
static int contiguous_on_device(opd_tensor *t, opd_tensor **out) {
  const opd_operator *op = opd_find_op("aten::contiguous");
  opd_stack st;
  opd_stack_init(&st);
  int rc = op ? opd_stack_push(&st, opd_iv_tensor_borrow(t))
              : opd_error(OPD_EINTERNAL, "aten::contiguous is not registered");
  if (rc == 0) rc = opd_stack_push(&st, opd_iv_int(0)); /* contiguous_format */
  if (rc == 0) rc = opd_call_boxed(op, &st);
  if (rc == 0) {
    opd_ivalue v = opd_stack_pop(&st);
    assert(v.tag == OPD_IV_TENSOR);
    opd_iv_own(&v);
    *out = v.u.t;
  }
  opd_stack_destroy(&st);
  return rc;
}

/* Copies nbytes of src's storage from its element 0 into host memory at dst, through the
 * worker's staging buffer. */
static int copy_span_to_host(char *dst, const opd_tensor *src, size_t nbytes) {
  void *buf = nbytes ? staging() : NULL;
  int rc = nbytes && !buf ? opd_last_error_code() : 0;
  for (size_t off = 0; rc == 0 && off < nbytes; off += STAGING_BYTES) {
    size_t n = nbytes - off < STAGING_BYTES ? nbytes - off : STAGING_BYTES;
    if ((rc = opd_cuda_copy_to_host(buf, src, off, n)) == 0) memcpy(dst + off, buf, n);
  }
  return rc;
}

/* [Note: Downloading a CUDA view]
 * A CUDA tensor is downloaded from a host copy. A view can reach far fewer storage
 * elements than it has (an expand of one element to [2^28] holds 4 bytes and is 1 GiB
 * contiguous) or far more (a column of a wide matrix), so the copy is the smaller of two:
 *  - the span of storage the view reaches (storage_offset .. storage_offset + extent, which
 *    lies inside the storage: [Note: Checked arithmetic] in opd/checked.h), copied as raw
 *    bytes into a host block of extent elements and viewed with the tensor's sizes and
 *    strides at offset 0, when the view has at least as many elements as its span (an
 *    expand, a transpose: the CPU download path sends such a view as it sends any CPU
 *    view);
 *  - a contiguous copy made on the device, of numel elements, when that is fewer.
 * Either way a download never makes the daemon hold more bytes than the tensor's storage. */
int opd__gpu_to_host(const opd_tensor *t, opd_tensor **host) {
  const opd_device cpu = {OPD_DEVICE_CPU, -1};
  opd_dtype dtype = opd_tensor_dtype(t);
  size_t es = opd_dtype_size(dtype);
  int64_t numel = 0, extent = 0;
  int rc = opd_ckd_geometry(opd_tensor_sizes(t), opd_tensor_strides(t), t->ndim, es, &numel,
                            &extent, "download");
  if (rc < 0) return rc;
  opd_tensor *src = (opd_tensor *)t, *base = NULL;
  bool span = numel > 0 && extent <= numel && !opd_tensor_is_contiguous(t);
  if (numel > 0 && extent > numel && (rc = contiguous_on_device(src, &src)) < 0) return rc;
  if (span) {
    rc = opd_tensor_empty(&extent, 1, dtype, cpu, &base);
    if (rc == 0) rc = copy_span_to_host(opd_tensor_data(base), src, (size_t)extent * es);
    if (rc == 0)
      rc = opd_tensor_view_of(base, opd_tensor_sizes(t), opd_tensor_strides(t), t->ndim, 0, host);
    if (base) opd_tensor_release(base);
  } else if ((rc = opd_tensor_empty(opd_tensor_sizes(t), t->ndim, dtype, cpu, host)) == 0 &&
             (rc = copy_span_to_host(opd_tensor_data(*host), src, (size_t)numel * es)) < 0) {
    opd_tensor_release(*host);
  }
  if (rc < 0) *host = NULL;
  if (src != t) opd_tensor_release(src);
  return rc;
}

/* ---- status ---- */

void opd__gpu_status(const opd_server *srv, json_t *info) {
  const char *why = opd_cuda_unavailable_reason();
  int n = opd_cuda_device_count();
  json_t *devs = json_array(), *listed = json_object_get(info, "devices");
  for (int d = 0; d < n; d++) {
    const char *sticky = NULL;
    bool healthy = opd_cuda_device_healthy(d, &sticky);
    opd_memory_stats m;
    opd_memory_stats_get_device((opd_device){OPD_DEVICE_CUDA, (int16_t)d}, &m);
    unsigned workers = (unsigned)d < srv->sched.ngpu ? srv->sched.gpu[d].nthreads : 0;
    const char *name = opd_cuda_device_name(d);
    json_array_append_new(
        devs, json_pack("{s:i, s:s, s:i, s:b, s:s?, s:I, s:{s:I, s:I, s:I, s:I}}", "index", d,
                        "name", name ? name : "", "capability", opd_cuda_device_capability(d),
                        "healthy", healthy, "sticky_error", sticky, "workers", (json_int_t)workers,
                        "memory", "in_use", (json_int_t)m.in_use, "cached", (json_int_t)m.cached,
                        "peak", (json_int_t)m.peak, "limit", (json_int_t)m.limit));
    if (json_is_array(listed))
      json_array_append_new(listed, json_pack("{s:s, s:i, s:I, s:b}", "type", "cuda", "index", d,
                                              "workers", (json_int_t)workers, "healthy", healthy));
  }
  json_object_set_new(info, "cuda",
                      json_pack("{s:b, s:s?, s:i, s:o}", "available", n > 0, "reason",
                                n > 0 ? NULL : (why ? why : "no CUDA device"), "device_count", n,
                                "devices", devs));
}

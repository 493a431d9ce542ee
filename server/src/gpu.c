/* gpu.c: the daemon's CUDA side (see [Note: Sessions on the GPU] in gpu.h). */
#include "gpu.h"

#include <assert.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "connection.h"
#include "loop.h"
#include "opd/allocator.h"
#include "opd/cuda.h"
#include "opd/error.h"
#include "opd/log.h"
#include "opd/memory.h"
#include "session.h"

/* A worker's pinned staging buffer: uploads and downloads go through it in chunks. */
#define STAGING_BYTES ((size_t)4 << 20)

struct opd__gpu_session {
  opd__gpu *g;
  opd__map handles; /* at the reaper: the session's handle table, taken over at its end */
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
    if (gs->streams[d]) (void)opd_cuda_stream_synchronize((int)d, gs->streams[d]);
  for (size_t i = 0; i < gs->handles.cap; i++)
    if (gs->handles.keys[i]) opd_tensor_release((opd_tensor *)(uintptr_t)gs->handles.vals[i]);
  opd__free(gs->handles.keys);
  opd__free(gs->handles.vals);
  for (unsigned d = 0; d < gs->ndev; d++)
    if (gs->streams[d]) opd_cuda_stream_destroy((int)d, gs->streams[d]);
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
  /* the tensors go with the streams: their memory is freed by the reaper, not the loop */
  gs->handles = s->handles;
  s->handles = (opd__map){0};
  opd__gpu *g = gs->g;
  pthread_mutex_lock(&g->mu);
  gs->next = g->head;
  g->head = gs;
  pthread_cond_signal(&g->cv);
  pthread_mutex_unlock(&g->mu);
}

/* ---- start and stop ---- */

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
  opd__gpu *g = opd__calloc(1, sizeof *g);
  if (!g) return opd_error(OPD_ENOMEM, "out of memory starting the GPU workers");
  g->ndev = (unsigned)ndev;
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
  srv->gpu = g;
  unsigned per = srv->cfg.cuda_workers_per_device ? srv->cfg.cuda_workers_per_device : 1;
  int rc = opd__sched_start_gpu(&srv->sched, g->ndev, per, opd__gpu_route);
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

static bool cuda_handle(opd__session *s, uint64_t handle, opd_device *out) {
  opd_tensor *t = opd__session_lookup(s, handle);
  if (!t || opd_tensor_device(t).type != OPD_DEVICE_CUDA) return false;
  *out = opd_tensor_device(t);
  return true;
}

static bool cuda_handles(opd__session *s, const uint64_t *h, size_t n, opd_device *out) {
  for (size_t i = 0; i < n; i++)
    if (cuda_handle(s, h[i], out)) return true;
  return false;
}

/* The first CUDA device among a call's tensors (when CUDA tensors can exist) and Device
 * arguments. */
static bool call_device(opd__session *s, const Opd__V1__Call *c, bool tensors, opd_device *out) {
  for (size_t i = 0; i < c->n_args; i++) {
    const Opd__V1__IValue *w = c->args[i];
    switch (w->value_case) {
    case OPD__V1__IVALUE__VALUE_TENSOR:
      if (tensors && cuda_handle(s, w->tensor, out)) return true;
      break;
    case OPD__V1__IVALUE__VALUE_TENSORS:
      if (tensors && w->tensors && cuda_handles(s, w->tensors->handles, w->tensors->n_handles, out))
        return true;
      break;
    case OPD__V1__IVALUE__VALUE_OPTIONAL_TENSORS:
      if (tensors && w->optional_tensors &&
          cuda_handles(s, w->optional_tensors->handles, w->optional_tensors->n_handles, out))
        return true;
      break;
    case OPD__V1__IVALUE__VALUE_DEVICE:
      if (w->device && w->device->type == OPD_DEVICE_CUDA && w->device->index >= -1 &&
          w->device->index <= INT16_MAX) {
        *out =
            (opd_device){OPD_DEVICE_CUDA, (int16_t)(w->device->index < 0 ? 0 : w->device->index)};
        return true;
      }
      break;
    default: break;
    }
  }
  return false;
}

opd_device opd__gpu_route(const opd__job *job) {
  opd_device d = {OPD_DEVICE_CPU, -1};
  opd__session *s = job->session;
  bool devices = job->conn->server->gpu != NULL; /* else no tensor is on CUDA */
  switch (job->kind) {
  case OPD__JOB_UPLOAD: return job->device; /* the loop set it */
  case OPD__JOB_CALL: call_device(s, job->req->call, devices, &d); break;
  case OPD__JOB_DOWNLOAD:
    if (devices) cuda_handle(s, job->req->download->handle, &d);
    break;
  case OPD__JOB_RELEASE:
    if (devices) cuda_handles(s, job->req->release->handles, job->req->release->n_handles, &d);
    break;
  default: break; /* synchronize waits on any thread; the rest need no device */
  }
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

int opd__gpu_enter(opd__job *job) {
  int dev = job->device.index < 0 ? 0 : job->device.index;
  opd_server *srv = job->conn->server;
  if (!srv->gpu || dev >= (int)srv->gpu->ndev) return unavailable(dev);
  const char *sticky;
  if (!opd_cuda_device_healthy(dev, &sticky))
    return opd_error(OPD_EUNAVAILABLE, "device cuda:%d is unhealthy: %s", dev,
                     sticky ? sticky : "unknown error");
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
  if (!gs->streams[dev] && !(gs->streams[dev] = opd_cuda_stream_create(dev))) {
    char msg[512];
    snprintf(msg, sizeof msg, "%s", opd_last_error());
    return opd_error(opd_last_error_code(), "cuda:%d: cannot create the session's stream: %s", dev,
                     msg);
  }
  opd_cuda_set_current_stream(dev, gs->streams[dev]);
  return 0;
}

int opd__gpu_synchronize(opd__session *s) {
  opd__gpu_session *gs = s->gpu;
  for (unsigned d = 0; gs && d < gs->ndev; d++) {
    if (!gs->streams[d]) continue;
    int rc = opd_cuda_stream_synchronize((int)d, gs->streams[d]);
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

int opd__gpu_to_host(const opd_tensor *t, opd_tensor **host) {
  opd_tensor *src = (opd_tensor *)t;
  int rc = 0;
  if (!opd_tensor_is_contiguous(t)) { /* made contiguous on the device, on the stream */
    const opd_operator *op = opd_find_op("aten::contiguous");
    opd_stack st;
    opd_stack_init(&st);
    rc = op ? opd_stack_push(&st, opd_iv_tensor_borrow(src))
            : opd_error(OPD_EINTERNAL, "aten::contiguous is not registered");
    if (rc == 0) rc = opd_stack_push(&st, opd_iv_int(0)); /* contiguous_format */
    if (rc == 0) rc = opd_call_boxed(op, &st);
    if (rc == 0) {
      opd_ivalue v = opd_stack_pop(&st);
      assert(v.tag == OPD_IV_TENSOR);
      opd_iv_own(&v);
      src = v.u.t;
    }
    opd_stack_destroy(&st);
    if (rc < 0) return rc;
  }
  if ((rc = opd_tensor_empty(opd_tensor_sizes(t), t->ndim, opd_tensor_dtype(t),
                             (opd_device){OPD_DEVICE_CPU, -1}, host)) == 0) {
    size_t nbytes = (size_t)t->numel * opd_dtype_size(opd_tensor_dtype(t));
    char *dst = opd_tensor_data(*host);
    void *buf = nbytes ? staging() : NULL;
    if (nbytes && !buf) rc = opd_last_error_code();
    for (size_t off = 0; rc == 0 && off < nbytes; off += STAGING_BYTES) {
      size_t n = nbytes - off < STAGING_BYTES ? nbytes - off : STAGING_BYTES;
      if ((rc = opd_cuda_copy_to_host(buf, src, off, n)) == 0) memcpy(dst + off, buf, n);
    }
    if (rc < 0) {
      opd_tensor_release(*host);
      *host = NULL;
    }
  }
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

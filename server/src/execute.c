/* execute.c: running requests on a worker thread: calls ([Note: Prepared calls] in
 * prepared.h, decoded as [Note: Checking a call against its schema] in decode.c says),
 * uploads, downloads, releases, dispatch state, synchronize; the graph requests are
 * graphs.c's. The call runs with the session's dispatch state installed in the worker's
 * thread-local state; tensor results become new handles (counted against the session's
 * limits, all or none), other results are sent as IValues.
 */
#include "execute.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "decode.h"
#include "gather.h"
#include "graphs.h"
#include "gpu.h"
#include "metrics.h"
#include "opd/cancel.h"
#include "opd/checked.h"
#include "opd/dispatcher.h"
#include "opd/error.h"
#include "opd/memory.h"
#include "session.h"

#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "the protocol's tensor bytes are little-endian; this server sends them as stored"
#endif

static void normalize_bools(uint8_t *p, size_t n) {
  for (size_t i = 0; i < n; i++) p[i] = p[i] != 0;
}

/* ---- calls ---- */

/* A call on a worker within this many times loop_call_ns shows its operator fit for the loop
 * ([Note: Tiny calls on the loop] in conn_loop_calls.c). */
#define LOOP_FIT_FACTOR 4

/* What a call showed of its operator's fit for the loop. */
static opd__loop_lesson loop_lesson(const opd__job *job, int rc) {
  const opd_server_config *k = job->session->cfg;
  if (rc < 0 || !k->loop_call_ns) return OPD__LOOP_NOTHING;
  if (job->on_loop)
    return job->kernel_ns > (uint64_t)k->short_job_us * 1000 ? OPD__LOOP_OVERRAN
                                                             : OPD__LOOP_IN_TIME;
  bool fits = job->costed && job->cost_ns <= k->loop_call_ns &&
              job->kernel_ns <= LOOP_FIT_FACTOR * (uint64_t)k->loop_call_ns;
  return fits ? OPD__LOOP_FITS : OPD__LOOP_NOTHING;
}

/* Runs a call prepared on this thread ([Note: Prepared calls] in prepared.h), or prepares it
 * first (a scheduler without a route). */
static int run_call(opd__job *job, Opd__V1__Response *resp, const char **op) {
  opd__prepared_call *call = &job->call;
  *op = job->req->call->op;
  if (call->state == OPD__CALL_NONE && opd__call_prepare(job) < 0) {
    call->state = OPD__CALL_NONE; /* answered */
    return 0;
  }
  opd_tls_set(job->session->dispatch);
  opd_generator *rng = opd_generator_swap(&job->session->rng);
  unsigned slot;
  uint64_t t0 = opd__metrics_ticks();
  int rc = opd_call_boxed_keys(call->op, call->keys, &call->stack, &slot);
  /* a loop stopped early leaves a partial result ([Note: Cancelling long work]) */
  if (rc == 0 && opd_cancelled()) rc = opd_cancelled_error(opd_op_name(call->op));
  job->kernel_ns = opd__metrics_ticks_ns(t0, opd__metrics_ticks());
  opd__metrics_call(call->op, slot, rc, job->kernel_ns, loop_lesson(job, rc));
  opd_generator_swap(rng);
  opd_tls_set(opd_default_dispatch_state);
  opd__count(&job->session->calls, 1); /* [Note: Counters with one writer at a time] */
  if (rc == 0) rc = opd__job_reply_results(job, &call->stack, resp);
  opd_stack_destroy(&call->stack);
  opd_mem_budget_uninstall();
  call->state = OPD__CALL_NONE;
  return rc;
}

/* ---- uploads, downloads, releases, dispatch state ---- */

static int finish_upload(opd__job *job, Opd__V1__Response *resp, const char **op) {
  (void)op;
  opd_tensor *t = job->tensor;
  if (opd_tensor_dtype(t) == OPD_BOOL && t->numel)
    normalize_bools(opd_tensor_data(t), (size_t)t->numel);
  int rc;
  if (job->device.type == OPD_DEVICE_CUDA) { /* the host bytes go to the device */
    if ((rc = opd__gpu_upload(job)) < 0) return rc;
    t = job->tensor;
  }
  Opd__V1__UploadReply reply = OPD__V1__UPLOAD_REPLY__INIT;
  rc = opd__session_hold(job->session, t, &job->reserved, &reply.handle);
  if (rc < 0) return rc;
  job->tensor = NULL; /* its reference is the handle table's */
  resp->body_case = OPD__V1__RESPONSE__BODY_UPLOAD;
  resp->upload = &reply;
  rc = opd__job_pack(job, resp);
  assert(rc == 0); /* a handle fits any frame */
  return rc;
}

static int run_download(opd__job *job, Opd__V1__Response *resp, const char **op) {
  (void)op;
  uint64_t handle = job->req->download->handle;
  opd_tensor *t = opd__session_lookup(job->session, handle);
  if (!t)
    return opd_error(OPD_ENOENT,
                     "download: unknown tensor handle %" PRIu64
                     " (never issued to this session, or released)",
                     handle);
  opd_device dev = opd_tensor_device(t);
  int64_t nbytes; /* an expanded view's numel times its element size may pass int64 */
  if (opd_ckd_nbytes(t->numel, opd_dtype_size(opd_tensor_dtype(t)), &nbytes, "download") < 0)
    return opd_last_error_code();
  if (dev.type == OPD_DEVICE_META)
    return opd_error(OPD_EINVAL,
                     "download: tensor %" PRIu64 " is a Meta tensor (%s, %d dimensions): it has "
                     "a shape and dtype but no data",
                     handle, opd_dtype_name(opd_tensor_dtype(t)), t->ndim);
  if (dev.type == OPD_DEVICE_CUDA) { /* sent from a contiguous host copy (the job's) */
    int rc = opd__gpu_to_host(t, &job->tensor);
    if (rc < 0) return rc;
    t = job->tensor;
    dev = opd_tensor_device(t);
  }
  if (dev.type != OPD_DEVICE_CPU || (nbytes && !opd_tensor_data(t)))
    return opd_error(OPD_EINVAL, "download: tensor %" PRIu64 " has no data on the CPU", handle);
  int64_t *strides = opd__arena_alloc(&job->arena, (t->ndim + 1) * sizeof *strides);
  if (!strides) return opd_error(OPD_ENOMEM, "out of memory encoding a download");
  opd_contiguous_strides(opd_tensor_sizes(t), t->ndim, strides);
  if (job->tensor != t) opd_tensor_retain(t);
  job->tensor = t;
  /* the bytes are sent row-major: a strided tensor's are gathered a chunk at a time as they
   * are written ([Note: Downloads of strided views] in gather.h) */
  if (nbytes && !opd_tensor_is_contiguous(t) && !(job->gather = opd__gather_new(t)))
    return opd_last_error_code();
  Opd__V1__DownloadReply reply = OPD__V1__DOWNLOAD_REPLY__INIT;
  reply.dtype = (Opd__V1__DType)opd_tensor_dtype(t);
  reply.n_shape = reply.n_strides = t->ndim;
  reply.shape = (int64_t *)opd_tensor_sizes(t);
  reply.strides = strides;
  reply.nbytes = (uint64_t)nbytes;
  resp->body_case = OPD__V1__RESPONSE__BODY_DOWNLOAD;
  resp->download = &reply;
  int rc = opd__job_pack(job, resp);
  if (rc < 0) return rc;
  job->raw = nbytes && !job->gather ? opd_tensor_data(t) : NULL;
  job->raw_len = (size_t)nbytes;
  return 0;
}

static int run_release(opd__job *job, Opd__V1__Response *resp, const char **op) {
  (void)resp, (void)op;
  const Opd__V1__Release *r = job->req->release;
  for (size_t i = 0; i < r->n_handles; i++) {
    const opd_tensor *t = opd__session_lookup(job->session, r->handles[i]);
    if (!t)
      return opd_error(OPD_ENOENT,
                       "release: unknown tensor handle %" PRIu64
                       " (never issued to this session, or released); nothing was released",
                       r->handles[i]);
    /* made long ago (a pipelined client releases a batch behind the calls that made it):
     * fetched while the rest are looked up, before the drops read it */
    __builtin_prefetch(t, 1);
  }
  for (size_t i = 0; i < r->n_handles; i++)
    opd__session_drop(job->session, r->handles[i]); /* a repeated handle goes once */
  return 0;
}

static int key_list(char *const *names, size_t n, opd_keyset *set) {
  for (size_t i = 0; i < n; i++) {
    opd_dispatch_key k;
    if (opd_key_from_name(names[i], &k) < 0)
      return opd_error(OPD_EINVAL, "set_dispatch_state: unknown dispatch key '%.100s'", names[i]);
    opd_key_kind kind = opd_key_kind_of(k);
    if (kind != OPD_KEY_KIND_FUNCTIONALITY && kind != OPD_KEY_KIND_PER_BACKEND &&
        kind != OPD_KEY_KIND_RUNTIME_BACKEND)
      return opd_error(OPD_EINVAL,
                       "set_dispatch_state: '%s' is not a runtime or functionality key and "
                       "cannot be in a key set",
                       names[i]);
    *set = opd_keyset_union(*set, opd_keyset_of(k));
  }
  return 0;
}

static int run_dispatch_state(opd__job *job, Opd__V1__Response *resp, const char **op) {
  (void)resp, (void)op;
  const Opd__V1__DispatchState *d = job->req->set_dispatch_state;
  opd_local_dispatch_state st = opd_default_dispatch_state;
  opd_keyset remove_include = opd_keyset_empty(), remove_exclude = opd_keyset_empty();
  int rc = key_list(d->include, d->n_include, &st.included);
  if (rc == 0) rc = key_list(d->exclude, d->n_exclude, &st.excluded);
  if (rc == 0) rc = key_list(d->remove_include, d->n_remove_include, &remove_include);
  if (rc == 0) rc = key_list(d->remove_exclude, d->n_remove_exclude, &remove_exclude);
  if (rc == 0) {
    st.included = opd_keyset_minus(st.included, remove_include);
    st.excluded = opd_keyset_minus(st.excluded, remove_exclude);
    job->session->dispatch = st;
    opd__session_publish_dispatch(job->session);
  }
  return rc;
}

/* CPU work is synchronous; CUDA work waits for the session's streams. */
static int run_synchronize(opd__job *job, Opd__V1__Response *resp, const char **op) {
  (void)resp, (void)op;
  return opd__gpu_synchronize(job->session);
}

/* ---- graphs (graphs.c) ---- */

static int run_graph(opd__job *job, Opd__V1__Response *resp, const char **op) {
  (void)resp, (void)op;
  return opd__graph_run(job);
}

static int run_release_graph(opd__job *job, Opd__V1__Response *resp, const char **op) {
  (void)resp, (void)op;
  return opd__graph_release(job);
}

static int run_describe_graph(opd__job *job, Opd__V1__Response *resp, const char **op) {
  (void)op;
  return opd__graph_describe(job, resp);
}

/* ---- the requests ---- */

static int pack_ack(opd__job *job, Opd__V1__Response *resp) {
  Opd__V1__Ack ack = OPD__V1__ACK__INIT;
  resp->body_case = OPD__V1__RESPONSE__BODY_ACK;
  resp->ack = &ack;
  return opd__job_pack(job, resp);
}

/* What runs each kind of request, and whether it is answered with an Ack: the RUN and ACK
 * columns of requests.def ([Note: The request table]). */
static const struct {
  int (*run)(opd__job *job, Opd__V1__Response *resp, const char **op);
  bool ack;
} worker_requests[OPD__NUM_JOB_KINDS] = {
#define NONE NULL
#define OPD__REQUEST(kind, body, session, accept, on_loop, estimate, route, run, ack) \
  [OPD__JOB_##kind] = {run, ack},
#include "requests.def"
#undef OPD__REQUEST
#undef NONE
};

bool opd__execute(opd__job *job) {
  /* the request is decoded; what the response needs is the server's own making */
  job->arena.limit = SIZE_MAX;
  Opd__V1__Response resp = OPD__V1__RESPONSE__INIT;
  resp.id = job->id;
  int rc = 0;
  const char *op = NULL;
  if (job->call.state == OPD__CALL_FAILED) { /* answered when it was prepared */
    job->call.state = OPD__CALL_NONE;
    return false;
  }
  if (job->device.type == OPD_DEVICE_CUDA && (rc = opd__gpu_enter(job)) < 0) {
    opd__call_unprepare(job);
    opd__job_error(job, opd__error_code(rc), job->kind == OPD__JOB_CALL ? job->req->call->op : NULL,
                   "%s", opd_last_error());
    return false;
  }
  if (!worker_requests[job->kind].run)
    rc = opd_error(OPD_EINTERNAL, "a loop-thread request on a worker");
  else if ((rc = worker_requests[job->kind].run(job, &resp, &op)) == 0 &&
           worker_requests[job->kind].ack)
    rc = pack_ack(job, &resp);
  if (rc < 0) {
    opd__job_error(job, opd__error_code(rc), op, "%s", opd_last_error());
    return false;
  }
  job->holds_session = job->raw_len > 0;
  return job->holds_session;
}

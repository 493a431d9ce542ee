/* execute.c: running requests on a worker thread: calls ([Note: Prepared calls] in
 * prepared.h, decoded as [Note: Checking a call against its schema] in decode.c says),
 * uploads, downloads, releases, dispatch state, synchronize; the graph requests are
 * graphs.c's. The call runs with the session's dispatch state installed in the worker's
 * thread-local state; tensor results become new handles (counted against the session's
 * limits, all or none), other results are sent as IValues.
 */
#include "execute.h"

#include <inttypes.h>
#include <stdarg.h>
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
#include "opd/utf8.h"
#include "session.h"
#include "opd_wire.h"

#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "the protocol's tensor bytes are little-endian; this server sends them as stored"
#endif

/* ---- responses ---- */

Opd__V1__ErrorCode opd__error_code(int err) {
  switch (err) {
  case OPD_EINVAL:
  case OPD_ESCHEMA: return OPD__V1__ERROR_CODE__INVALID_ARGUMENT;
  case OPD_ENOENT: return OPD__V1__ERROR_CODE__NOT_FOUND;
  case OPD_ENOTIMPL:
  case OPD_EAMBIGUOUS:
  case OPD_EFALLTHROUGH: return OPD__V1__ERROR_CODE__UNIMPLEMENTED;
  case OPD_ERESOURCE:
  case OPD_ENOMEM: return OPD__V1__ERROR_CODE__RESOURCE_EXHAUSTED;
  case OPD_EINDEX: return OPD__V1__ERROR_CODE__INDEX_OUT_OF_RANGE;
  case OPD_ECANCELED: return OPD__V1__ERROR_CODE__CANCELLED;
  case OPD_EUNAVAILABLE: return OPD__V1__ERROR_CODE__UNAVAILABLE;
  default: return OPD__V1__ERROR_CODE__INTERNAL;
  }
}

static int ensure_out(opd__job *job, size_t n) {
  if (job->out_cap >= n) return 0;
  uint8_t *p = opd__realloc(job->out, n);
  if (!p) return opd_error(OPD_ENOMEM, "out of memory for a response of %zu bytes", n);
  job->out = p;
  job->out_cap = n;
  return 0;
}

/* [Note: Answers charged before they are held]
 * An answer waits in its job until the client reads it, and a client that pipelines small
 * requests with large answers (a graph's introspection, a megabyte for 13 bytes) and reads
 * slowly would make the daemon hold them all: reading pauses only once the socket's write
 * queue is full, and the answers of up to twice max_in_flight requests read before that
 * wait behind it. So a response's bytes past OPD__JOB_OUT_MIN are charged before it is
 * packed, to its session's max_bytes_held (with its tensors) and to the daemon's
 * max_bytes_total (with every tensor's bytes), and given back when its job is recycled,
 * once written. Over either limit the request is answered RESOURCE_EXHAUSTED instead (a
 * small error, naming the limit), and the session's other requests and other sessions go
 * on. A recycled job may keep a buffer of up to KEEP_OUT_BYTES (connection.c) uncharged
 * for the next answer, at most MAX_FREE_JOBS of them per connection. */
static int charge_answer(opd__job *job, size_t frame) {
  uint64_t want = frame > OPD__JOB_OUT_MIN ? frame - OPD__JOB_OUT_MIN : 0;
  if (want <= job->out_charged) return 0;
  uint64_t more = want - job->out_charged;
  opd__session *s = job->session;
  if (opd__session_reserve(s, more) < 0)
    return opd_error(OPD_ERESOURCE,
                     "session limit reached: a response of %zu bytes would take the session past "
                     "max_bytes_held (%" PRIu64 " bytes held by its tensors and the responses "
                     "waiting to be read, limit %" PRIu64 "); read the responses",
                     frame, atomic_load_explicit(&s->bytes_held, memory_order_relaxed),
                     s->budget.limit);
  if (opd_cpu_allocator_reserve(more) < 0) {
    opd__session_unreserve(s, more);
    opd_memory_stats st;
    opd_memory_stats_get(OPD_DEVICE_CPU, &st);
    return opd_error(OPD_ERESOURCE,
                     "daemon limit reached: a response of %zu bytes would take the daemon past "
                     "max_bytes_total (%" PRIu64 " bytes in use, limit %" PRIu64 ")",
                     frame, st.in_use, st.limit);
  }
  job->out_charged = want;
  return 0;
}

void opd__job_uncharge(opd__job *job) {
  if (!job->out_charged) return;
  opd__session_unreserve(job->session, job->out_charged);
  opd_cpu_allocator_unreserve(job->out_charged);
  job->out_charged = 0;
}

uint8_t *opd__job_frame(opd__job *job, size_t n) {
  uint64_t max = job->session->cfg->max_frame_bytes;
  if (n > max) {
    opd_error(OPD_ERESOURCE, "the response would be %zu bytes, over max_frame_bytes (%" PRIu64 ")",
              n, max);
    return NULL;
  }
  if (charge_answer(job, 4 + n) < 0 || ensure_out(job, 4 + n) < 0) return NULL;
  job->out[0] = (uint8_t)n;
  job->out[1] = (uint8_t)(n >> 8);
  job->out[2] = (uint8_t)(n >> 16);
  job->out[3] = (uint8_t)(n >> 24);
  job->out_len = 4 + n;
  return job->out + 4;
}

int opd__job_pack(opd__job *job, const Opd__V1__Response *resp) {
  size_t n = opd__v1__response__get_packed_size(resp);
  uint8_t *body = opd__job_frame(job, n);
  if (!body) return opd_last_error_code();
  size_t packed = opd__v1__response__pack(resp, body);
  assert(packed == n);
  (void)packed;
  return 0;
}

void opd__job_error(opd__job *job, Opd__V1__ErrorCode code, const char *op, const char *fmt, ...) {
  char msg[1024], opname[256];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  /* [Note: Strings on the wire are UTF-8]: both are cut at a character boundary, and the
   * op name, which a request brought, has any byte that is not UTF-8 escaped */
  opd_utf8_repair(msg);
  opd_utf8_escape(opname, sizeof opname, op ? op : "", op ? strlen(op) : 0);
  Opd__V1__Error err = OPD__V1__ERROR__INIT;
  err.code = code;
  err.message = msg;
  err.op = opname;
  Opd__V1__Response resp = OPD__V1__RESPONSE__INIT;
  resp.id = job->id;
  resp.body_case = OPD__V1__RESPONSE__BODY_ERROR;
  resp.error = &err;
  /* fits: the buffer has OPD__JOB_OUT_MIN bytes and max_frame_bytes is at least 4096 */
  int rc = opd__job_pack(job, &resp);
  assert(rc == 0);
  (void)rc;
  if (job->tensor) { /* an error sends no tensor */
    opd_tensor_release(job->tensor);
    job->tensor = NULL;
  }
  opd__gather_free(job->gather);
  job->gather = NULL;
  job->raw = NULL;
  job->raw_len = 0;
  atomic_fetch_add_explicit(&job->session->errors, 1, memory_order_relaxed);
  opd__metrics_response_error((int)code);
}

int opd__checked_nbytes(opd_dtype dtype, const int64_t *shape, size_t ndim, uint64_t *nbytes,
                        const char *what) {
  if (!opd_dtype_valid(dtype))
    return opd_error(OPD_EINVAL, "%s: invalid dtype %d", what, (int)dtype);
  int64_t n = 0; /* [Note: Checked arithmetic] */
  int rc = opd_ckd_shape_nbytes(shape, ndim, opd_dtype_size(dtype), &n, what);
  if (rc) return rc;
  *nbytes = (uint64_t)n;
  return 0;
}

static void normalize_bools(uint8_t *p, size_t n) {
  for (size_t i = 0; i < n; i++) p[i] = p[i] != 0;
}

/* ---- calls ---- */

/* Undoes the handles a call's results were given. */
static void drop_handles(opd__session *s, const uint64_t *handles, size_t n) {
  for (size_t i = 0; i < n; i++) opd__session_drop(s, handles[i]);
}

/* Gives a result a handle, which takes over the caller's reference on success; its
 * storage's charge to the session's budget, if the call made it, becomes the bytes its
 * handle holds ([Note: Memory reserved before it is allocated]). */
static int hold_result(opd__session *s, opd_tensor *t, uint64_t *handles, size_t *nheld) {
  uint64_t charge = opd_tensor_take_charge(t);
  int rc = opd__session_hold(s, t, &charge, &handles[*nheld]);
  if (charge) opd__session_unreserve(s, charge); /* not consumed: the hold failed */
  if (rc == 0) ++*nheld;
  return rc;
}

/* hold_result for a tensor whose holder keeps its own reference. */
static int hold_shared_result(opd__session *s, opd_tensor *t, uint64_t *handles, size_t *nheld) {
  opd_tensor_retain(t);
  int rc = hold_result(s, t, handles, nheld);
  if (rc) opd_tensor_release(t);
  return rc;
}

/* Packs Response{call: CallReply{handles}} by hand ([Note: Hand-packed messages] in
 * proto/opd_wire.h), or drops the handles on failure. */
static int pack_held(opd__job *job, const uint64_t *handles, size_t nheld, int rc) {
  if (rc == 0) {
    uint8_t *body = opd__job_frame(job, opd__wire_call_handles_size(job->id, handles, nheld));
    if (body)
      opd__wire_call_handles(body, job->id, handles, nheld);
    else
      rc = opd_last_error_code();
  }
  if (rc < 0) drop_handles(job->session, handles, nheld);
  return rc;
}

/* The common reply, a few tensors and nothing else, as new handles: each result's reference
 * moves from the stack to its handle (a borrowed one is retained for it). */
#define HANDLES_REPLY_MAX 8
static int pack_handles_reply(opd__job *job, opd_stack *st) {
  uint64_t handles[HANDLES_REPLY_MAX];
  size_t nheld = 0;
  int rc = 0;
  for (uint32_t i = 0; i < st->size && rc == 0; i++) {
    opd_ivalue *v = &st->items[i];
    if (v->len == OPD_IV_BORROWED)
      rc = hold_shared_result(job->session, v->u.t, handles, &nheld);
    else if ((rc = hold_result(job->session, v->u.t, handles, &nheld)) == 0)
      *v = opd_iv_none();
  }
  return pack_held(job, handles, nheld, rc);
}

int opd__job_reply_tensors(opd__job *job, opd_tensor *const *ts, size_t n) {
  uint64_t few[HANDLES_REPLY_MAX];
  uint64_t *handles =
      n <= HANDLES_REPLY_MAX ? few : opd__arena_alloc(&job->arena, n * sizeof *handles);
  size_t nheld = 0;
  int rc = handles ? 0 : opd_error(OPD_ENOMEM, "out of memory encoding %zu results", n);
  for (size_t i = 0; i < n && rc == 0; i++) rc = hold_result(job->session, ts[i], handles, &nheld);
  for (size_t i = nheld; i < n; i++) opd_tensor_release(ts[i]); /* not taken by a handle */
  return pack_held(job, handles, nheld, rc);
}

/* Turns the returns on the stack into the reply's values, tensors into new handles. */
static int encode_results(opd__job *job, opd_stack *st, Opd__V1__Response *resp) {
  bool handles_only = st->size <= HANDLES_REPLY_MAX;
  for (uint32_t i = 0; i < st->size && handles_only; i++)
    handles_only = st->items[i].tag == OPD_IV_TENSOR;
  if (handles_only) return pack_handles_reply(job, st);
  opd__arena *arena = &job->arena;
  opd__session *s = job->session;
  size_t ntensors = 0, nheld = 0;
  for (uint32_t i = 0; i < st->size; i++) {
    const opd_ivalue *v = &st->items[i];
    if (v->tag == OPD_IV_TENSOR) ntensors++;
    if (v->tag == OPD_IV_TENSOR_LIST || v->tag == OPD_IV_OPT_TENSOR_LIST) ntensors += v->len;
  }
  Opd__V1__CallReply *reply = opd__arena_alloc(arena, sizeof *reply);
  Opd__V1__IValue **results = opd__arena_alloc(arena, st->size * sizeof *results);
  uint64_t *handles = opd__arena_alloc(arena, ntensors * sizeof *handles);
  if (!reply || !results || !handles)
    return opd_error(OPD_ENOMEM, "out of memory encoding results");
  opd__v1__call_reply__init(reply);
  reply->n_results = st->size;
  reply->results = results;
  int rc = 0;
  for (uint32_t i = 0; i < st->size && rc == 0; i++) {
    const opd_ivalue *v = &st->items[i];
    Opd__V1__IValue *w = results[i] = opd__arena_alloc(arena, sizeof *w);
    if (!w) {
      rc = opd_error(OPD_ENOMEM, "out of memory encoding results");
      break;
    }
    opd__v1__ivalue__init(w);
    switch ((opd_iv_tag)v->tag) {
    case OPD_IV_NONE:
      w->value_case = OPD__V1__IVALUE__VALUE_NONE;
      w->none = 1;
      break;
    case OPD_IV_BOOL:
      w->value_case = OPD__V1__IVALUE__VALUE_B;
      w->b = v->u.b;
      break;
    case OPD_IV_INT:
      w->value_case = OPD__V1__IVALUE__VALUE_I;
      w->i = v->u.i;
      break;
    case OPD_IV_DOUBLE:
      w->value_case = OPD__V1__IVALUE__VALUE_D;
      w->d = v->u.d;
      break;
    case OPD_IV_STRING: /* packed before the stack goes */
      w->value_case = OPD__V1__IVALUE__VALUE_S;
      w->s = v->u.s;
      break;
    case OPD_IV_TENSOR:
      w->value_case = OPD__V1__IVALUE__VALUE_TENSOR;
      rc = hold_shared_result(s, v->u.t, handles, &nheld);
      w->tensor = rc == 0 ? handles[nheld - 1] : 0;
      break;
    case OPD_IV_INT_LIST: {
      Opd__V1__IntList *l = opd__arena_alloc(arena, sizeof *l);
      if (!l) {
        rc = opd_error(OPD_ENOMEM, "out of memory encoding results");
        break;
      }
      opd__v1__int_list__init(l);
      l->n_values = v->len;
      l->values = v->u.ints;
      w->value_case = OPD__V1__IVALUE__VALUE_INTS;
      w->ints = l;
      break;
    }
    case OPD_IV_DOUBLE_LIST: {
      Opd__V1__DoubleList *l = opd__arena_alloc(arena, sizeof *l);
      if (!l) {
        rc = opd_error(OPD_ENOMEM, "out of memory encoding results");
        break;
      }
      opd__v1__double_list__init(l);
      l->n_values = v->len;
      l->values = v->u.doubles;
      w->value_case = OPD__V1__IVALUE__VALUE_DOUBLES;
      w->doubles = l;
      break;
    }
    case OPD_IV_BOOL_LIST: {
      Opd__V1__BoolList *l = opd__arena_alloc(arena, sizeof *l);
      protobuf_c_boolean *b = opd__arena_alloc(arena, v->len * sizeof *b);
      if (!l || !b) {
        rc = opd_error(OPD_ENOMEM, "out of memory encoding results");
        break;
      }
      opd__v1__bool_list__init(l);
      for (uint32_t k = 0; k < v->len; k++) b[k] = v->u.bools[k];
      l->n_values = v->len;
      l->values = b;
      w->value_case = OPD__V1__IVALUE__VALUE_BOOLS;
      w->bools = l;
      break;
    }
    case OPD_IV_TENSOR_LIST:
    case OPD_IV_OPT_TENSOR_LIST: {
      uint64_t *hs = opd__arena_alloc(arena, v->len * sizeof *hs);
      bool have_list;
      if (v->tag == OPD_IV_TENSOR_LIST) {
        Opd__V1__HandleList *l = opd__arena_alloc(arena, sizeof *l);
        if (l) {
          opd__v1__handle_list__init(l);
          l->n_handles = v->len;
          l->handles = hs;
        }
        w->value_case = OPD__V1__IVALUE__VALUE_TENSORS;
        w->tensors = l;
        have_list = l != NULL;
      } else {
        Opd__V1__OptionalHandleList *l = opd__arena_alloc(arena, sizeof *l);
        if (l) {
          opd__v1__optional_handle_list__init(l);
          l->n_handles = v->len;
          l->handles = hs;
        }
        w->value_case = OPD__V1__IVALUE__VALUE_OPTIONAL_TENSORS;
        w->optional_tensors = l;
        have_list = l != NULL;
      }
      if (!hs || !have_list) {
        rc = opd_error(OPD_ENOMEM, "out of memory encoding results");
        break;
      }
      for (uint32_t k = 0; k < v->len && rc == 0; k++) {
        hs[k] = 0;
        if (v->u.tensors[k] && (rc = hold_shared_result(s, v->u.tensors[k], handles, &nheld)) == 0)
          hs[k] = handles[nheld - 1];
      }
      break;
    }
    case OPD_IV_DTYPE:
      w->value_case = OPD__V1__IVALUE__VALUE_DTYPE;
      w->dtype = (Opd__V1__DType)v->u.dtype;
      break;
    case OPD_IV_DEVICE: {
      Opd__V1__Device *d = opd__arena_alloc(arena, sizeof *d);
      if (!d) {
        rc = opd_error(OPD_ENOMEM, "out of memory encoding results");
        break;
      }
      opd__v1__device__init(d);
      d->type = v->u.device.type;
      d->index = v->u.device.index;
      w->value_case = OPD__V1__IVALUE__VALUE_DEVICE;
      w->device = d;
      break;
    }
    case OPD_IV_NUM_TAGS: rc = opd_error(OPD_EINTERNAL, "a result with an invalid tag"); break;
    }
  }
  if (rc == 0) {
    resp->body_case = OPD__V1__RESPONSE__BODY_CALL;
    resp->call = reply;
    rc = opd__job_pack(job, resp);
  }
  if (rc < 0) drop_handles(s, handles, nheld);
  return rc;
}

/* A call on a worker within this many times loop_call_ns shows its operator fit for the loop
 * ([Note: Tiny calls on the loop] in connection.c). */
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
  if (rc == 0) rc = encode_results(job, &call->stack, resp);
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

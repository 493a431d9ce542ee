/* job.c: a job's response (job.h): its frame, packed responses and errors, the charge of
 * the bytes it holds, and results that become handles. Every request kind's run and the
 * loop's answers pack their responses through these; nothing here knows a request kind.
 */
#include "job.h"

#include <assert.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "gather.h"
#include "metrics.h"
#include "opd/checked.h"
#include "opd/error.h"
#include "opd/memory.h"
#include "opd/utf8.h"
#include "opd_wire.h"
#include "session.h"

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
int opd__job_reply_results(opd__job *job, opd_stack *st, Opd__V1__Response *resp) {
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

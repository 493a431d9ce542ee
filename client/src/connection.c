/* connection.c: the client's connection: URL parsing and connecting, the hello handshake,
 * the request list, the I/O pump (framed writes with raw upload bytes, framed reads with raw
 * download bytes straight into the caller's buffers), response routing by request id,
 * futures and their completion, and the thread-local error message.
 *
 * [Note: The client's I/O pump]
 * There is no I/O thread. All state is guarded by c->mu except the bytes being moved: the
 * thread that sets c->io_busy (the "pump") alone writes requests from c->send on and reads
 * responses, with c->mu released while it is in poll(), sendmsg() or read(). Any thread
 * that has to wait (for a future, for room under the in-flight limit, for everything)
 * becomes the pump if there is none, else sleeps on c->cv, which the pump broadcasts on
 * every completion and when it stops. A submission appends to the list and, when another
 * thread pumps, wakes it through a self-pipe so that its poll() starts watching for
 * writability; when nobody pumps, it writes what the socket takes at once. The pump polls
 * for reading and writing together, so it never blocks writing a large upload while the
 * server waits for it to read responses. Responses come in request order, so the match is
 * normally the head of the list; ids are still checked.
 */
#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "client_internal.h"
#include "opd_wire.h"

#define READ_CHUNK (64u * 1024)

static _Thread_local int tls_code;
static _Thread_local char tls_msg[OPD__CLIENT_MSG_MAX];
/* The client whose I/O this thread runs (so: a callback of it is running, or it pumps). */
static _Thread_local opd_client *tls_io_client;

int opd__client_error(int err, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(tls_msg, sizeof tls_msg, fmt, ap);
  va_end(ap);
  tls_code = err;
  return err;
}

const char *opd_client_last_error(void) {
  return tls_msg;
}

int opd_client_last_error_code(void) {
  return tls_code;
}

const char *opd_client_strerror(int err) {
  switch (err) {
#define OPD__CLIENT_ERR_MSG(name, value, msg) \
  case value: return msg;
    OPD_ERRNO_MAP(OPD__CLIENT_ERR_MSG)
#undef OPD__CLIENT_ERR_MSG
  case 0: return "success";
  default: return "unknown error";
  }
}

const char *opd_client_err_name(int err) {
  switch (err) {
#define OPD__CLIENT_ERR_NAME(name, value, msg) \
  case value: return #name;
    OPD_ERRNO_MAP(OPD__CLIENT_ERR_NAME)
#undef OPD__CLIENT_ERR_NAME
  default: return "UNKNOWN";
  }
}

size_t opd_client_dtype_size(int dtype) {
  switch (dtype) {
#define OPD__CLIENT_DTYPE_SIZE(e, v, size, name, c10) \
  case v: return size;
    OPD_DTYPES(OPD__CLIENT_DTYPE_SIZE)
#undef OPD__CLIENT_DTYPE_SIZE
  default: return 0;
  }
}

/* ---- time ---- */

int64_t opd__client_now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int64_t now_ms(void) {
  return opd__client_now_ms();
}

/* A deadline for a timeout in ms (negative: none, -1). */
static int64_t deadline_after(int timeout_ms) {
  return timeout_ms < 0 ? -1 : now_ms() + timeout_ms;
}

static int64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int ms_left(int64_t deadline) {
  if (deadline < 0) return -1;
  int64_t left = deadline - now_ms();
  return left <= 0 ? 0 : left > INT32_MAX ? INT32_MAX : (int)left;
}

/* ---- futures ---- */

/* [Note: Reused futures]
 * A pipelined tiny call used to cost the client five allocations (its future, its frame,
 * a copy of the operator name, its results, and for a ping a copy of the payload), which
 * with 64 in flight also overflowed malloc's per-thread cache: a fifth of the library's
 * time. Now a future holds the small cases in itself (client_internal.h: OPD__FUTURE_*),
 * and a completed future that the library frees goes on the client's spare list, from
 * which the next future is taken. The list belongs to the I/O pump (like the reader's
 * state): only a thread running c's I/O (tls_io_client == c: the pump, and the callbacks
 * it runs) takes from it or adds to it, so it needs no lock. An application that submits
 * from its callbacks, as an event loop does, thus allocates nothing per call; other
 * submissions allocate as before. */
#define MAX_SPARE_FUTURES 256

opd_future *opd__future_new(opd_client *c, opd__req_kind kind, opd_future_cb cb, void *user,
                            bool user_owned) {
  opd_future *f;
  if (tls_io_client == c && c->spare) {
    f = c->spare;
    c->spare = f->next;
    c->nspare--;
    memset(f, 0, offsetof(opd_future, frame_inline));
  } else if (!(f = calloc(1, sizeof *f))) {
    return NULL;
  }
  f->client = c;
  f->kind = kind;
  f->cb = cb;
  f->user = user;
  f->user_owned = user_owned;
  if (f->user_owned) {
    pthread_mutex_lock(&c->mu);
    c->refs++;
    pthread_mutex_unlock(&c->mu);
  }
  return f;
}

static void future_destroy(opd_future *f) {
  if (f->frame != f->frame_inline) free(f->frame);
  free(f->message);
  free(f->error_op);
  if (f->op != f->op_inline) free(f->op);
  opd__client_free_values(f->results, f->num_results);
  if (f->results != f->results_inline) free(f->results);
  free(f->info);
  if (f->alloc) free(f->buf);
  if (f->pong != f->pong_inline) free(f->pong);
  free(f->graph_info);
  free(f->introspection);
  opd_client *c = f->client;
  if (tls_io_client == c && c->nspare < MAX_SPARE_FUTURES) { /* [Note: Reused futures] */
    f->next = c->spare;
    c->spare = f;
    c->nspare++;
    return;
  }
  free(f);
}

static void client_unref(opd_client *c) {
  pthread_mutex_lock(&c->mu);
  bool last = --c->refs == 0;
  pthread_mutex_unlock(&c->mu);
  if (!last) return;
  assert(c->head == NULL);
  while (c->spare) {
    opd_future *f = c->spare;
    c->spare = f->next;
    free(f);
  }
  pthread_cond_destroy(&c->cv);
  pthread_mutex_destroy(&c->mu);
  free(c);
}

void opd__future_discard(opd_future *f) {
  opd_client *c = f->client;
  bool owned = f->user_owned;
  future_destroy(f);
  if (owned) client_unref(c);
}

/* Sets f's outcome to an error (the first one wins). */
static void future_set_error(opd_future *f, int rc, const char *msg, const char *op) {
  if (f->rc) return;
  f->rc = rc;
  f->message = strndup(msg ? msg : "", OPD__CLIENT_MSG_MAX);
  if (op && *op) f->error_op = strndup(op, 256);
}

/* Takes f off the request list (prev: the one before it, or NULL). With c->mu held. */
static void unlink_locked(opd_client *c, opd_future *f, opd_future *prev) {
  if (prev)
    prev->next = f->next;
  else
    c->head = f->next;
  if (c->tail == f) c->tail = prev;
  if (c->send == f) c->send = f->next;
  c->pending--;
  c->completions++;
}

/* Requests not yet completed: pending, and those of a batch whose callbacks wait. With
 * c->mu held. */
static size_t outstanding(opd_client *c) {
  return c->pending + atomic_load_explicit(&c->completing, memory_order_relaxed);
}

/* Runs the callback of f, already off the list, and publishes it. Called by the pump (or
 * by close), without c->mu.
 * A future the library frees is published without a lock or a wake-up: nobody else can
 * see it, and the threads waiting for room under the in-flight limit or for everything
 * to complete are woken when the pump's round ends (every caller of pump_once
 * broadcasts then; no round sleeps after it has completed requests). */
static void finish(opd_client *c, opd_future *f) {
  f->next = NULL;
  f->finished = true;
  if (f->cb) {
    opd_client *saved = tls_io_client;
    tls_io_client = c;
    f->cb(f, f->user);
    tls_io_client = saved;
  }
  /* only this thread, the pump, turns a user-owned future into one the library frees
   * (opd_future_free from a callback), so user_owned reads without the lock */
  if (!f->user_owned) {
    future_destroy(f);
    return;
  }
  pthread_mutex_lock(&c->mu);
  f->done = true;
  pthread_cond_broadcast(&c->cv);
  pthread_mutex_unlock(&c->mu);
}

/* Takes f (finished or not) off the list, runs its callback and publishes it. Called by the
 * pump (or by close), without c->mu. */
static void complete(opd_client *c, opd_future *f) {
  pthread_mutex_lock(&c->mu);
  opd_future *prev = NULL;
  for (opd_future *p = c->head; p != f; p = p->next) prev = p;
  unlink_locked(c, f, prev);
  atomic_store_explicit(&c->completing, 1, memory_order_relaxed);
  pthread_mutex_unlock(&c->mu);
  finish(c, f);
  atomic_store_explicit(&c->completing, 0, memory_order_relaxed);
}

/* The connection is unusable: every pending request fails with rc (an early error response
 * wins for its request), and so does every later one. */
static int fail_all(opd_client *c, int rc, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int fail_all(opd_client *c, int rc, const char *fmt, ...) {
  pthread_mutex_lock(&c->mu);
  if (!c->broken_rc) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->broken_msg, sizeof c->broken_msg, fmt, ap);
    va_end(ap);
    c->broken_rc = rc;
  }
  rc = c->broken_rc;
  c->raw_active = false;
  c->raw_f = NULL;
  for (;;) {
    opd_future *f = c->head;
    if (!f) break;
    pthread_mutex_unlock(&c->mu);
    future_set_error(f, c->broken_rc, c->broken_msg, NULL);
    complete(c, f);
    pthread_mutex_lock(&c->mu);
  }
  pthread_mutex_unlock(&c->mu);
  return rc;
}

/* ---- the server's errors ---- */

static int map_server_code(Opd__V1__ErrorCode code) {
  switch (code) {
  case OPD__V1__ERROR_CODE__INVALID_ARGUMENT: return OPD_EINVAL;
  case OPD__V1__ERROR_CODE__NOT_FOUND: return OPD_ENOENT;
  case OPD__V1__ERROR_CODE__UNIMPLEMENTED: return OPD_ENOTIMPL;
  case OPD__V1__ERROR_CODE__RESOURCE_EXHAUSTED: return OPD_ERESOURCE;
  case OPD__V1__ERROR_CODE__INDEX_OUT_OF_RANGE: return OPD_EINDEX;
  case OPD__V1__ERROR_CODE__CANCELLED: return OPD_ECANCELED;
  case OPD__V1__ERROR_CODE__UNAVAILABLE: return OPD_EUNAVAILABLE;
  default: return OPD_EINTERNAL;
  }
}

/* ---- decoding with a bounded allocator ----
 *
 * [Note: Decoding responses]
 * protobuf-c allocates every message, array and string of a response it unpacks. They are
 * carved from the client's decode buffer (16 KiB, reused for every response: an ordinary
 * response needs no malloc at all) and, past it, taken from malloc; the whole decode is
 * bounded by a budget proportional to the frame. */

typedef struct decoder {
  uint8_t *buf;
  size_t cap, pos;    /* decode_buf[0, pos) is handed out */
  size_t used, limit; /* the budget */
} decoder;

typedef struct block_header {
  size_t size;
  max_align_t align;
} block_header;

static void *decoder_alloc(void *data, size_t size) {
  decoder *d = data;
  if (size > d->limit - d->used || sizeof(block_header) > d->limit - d->used - size) return NULL;
  size_t rounded = (size + _Alignof(max_align_t) - 1) & ~(_Alignof(max_align_t) - 1);
  if (rounded >= size && rounded <= d->cap - d->pos) {
    void *p = d->buf + d->pos;
    d->pos += rounded;
    d->used += rounded;
    return p;
  }
  block_header *h = malloc(sizeof *h + size);
  if (!h) return NULL;
  h->size = size;
  d->used += sizeof *h + size;
  return h + 1;
}

static void decoder_free(void *data, void *p) {
  decoder *d = data;
  if (!p || ((uint8_t *)p >= d->buf && (uint8_t *)p < d->buf + d->cap))
    return; /* the buffer is reused whole */
  block_header *h = (block_header *)p - 1;
  d->used -= sizeof *h + h->size;
  free(h);
}

/* ---- handling one response ---- */

static int protocol_error(opd_client *c, const char *what, uint64_t id) {
  return fail_all(c, OPD_EINTERNAL, "protocol error: %s (request id %llu)", what,
                  (unsigned long long)id);
}

static bool body_matches(const opd_future *f, Opd__V1__Response__BodyCase body) {
  switch (f->kind) {
  case OPD__REQ_HELLO: return body == OPD__V1__RESPONSE__BODY_HELLO;
  case OPD__REQ_CALL: return body == OPD__V1__RESPONSE__BODY_CALL;
  case OPD__REQ_UPLOAD: return body == OPD__V1__RESPONSE__BODY_UPLOAD;
  case OPD__REQ_DOWNLOAD: return body == OPD__V1__RESPONSE__BODY_DOWNLOAD;
  case OPD__REQ_PING: return body == OPD__V1__RESPONSE__BODY_PONG;
  case OPD__REQ_RELEASE:
  case OPD__REQ_DISPATCH_STATE:
  case OPD__REQ_SYNCHRONIZE:
  case OPD__REQ_RELEASE_GRAPH: return body == OPD__V1__RESPONSE__BODY_ACK;
  case OPD__REQ_DEFINE_GRAPH: return body == OPD__V1__RESPONSE__BODY_DEFINE_GRAPH;
  case OPD__REQ_RUN_GRAPH: return body == OPD__V1__RESPONSE__BODY_CALL;
  case OPD__REQ_DESCRIBE_GRAPH: return body == OPD__V1__RESPONSE__BODY_DESCRIBE_GRAPH;
  }
  return false;
}

/* The download's raw bytes have all arrived. */
static void finish_raw(opd_client *c) {
  opd_future *f = c->raw_f;
  c->raw_active = false;
  c->raw_f = NULL;
  c->raw_dst = c->raw_end = NULL;
  complete(c, f);
}

/* [Note: Download buffers grow]
 * The size of a download comes from the server, and a server is not trusted more than its
 * bytes: a download the library allocates for (opd_client_download_alloc) starts with a
 * buffer of at most FIRST_DOWNLOAD_BUFFER bytes and doubles it, up to the declared size, as
 * the bytes arrive, so a server that declares terabytes and sends little makes the client
 * allocate no more than twice what it sent. A download into the caller's buffer checks the
 * declared size against the buffer first. When a buffer cannot grow, the download fails
 * with OPD_ENOMEM and its remaining bytes are read and dropped: the connection stays in
 * step. */
#define FIRST_DOWNLOAD_BUFFER ((size_t)1 << 20)

/* Room for the raw bytes at raw_dst: the bytes that may be written there now (an allocating
 * download's buffer grown first when it is full), or 0 when they are dropped. */
static size_t raw_room(opd_client *c) {
  if (!c->raw_dst) return 0;
  opd_future *f = c->raw_f;
  if (c->raw_dst == c->raw_end && f->alloc) {
    size_t have = f->capacity, total = (size_t)f->info->nbytes;
    size_t want = have > total / 2 ? total : 2 * have;
    uint8_t *nb = realloc(f->buf, want);
    if (!nb) {
      future_set_error(f, OPD_ENOMEM, "cannot grow the download buffer", NULL);
      c->raw_dst = c->raw_end = NULL;
      return 0;
    }
    f->buf = nb;
    f->capacity = want;
    c->raw_dst = nb + have;
    c->raw_end = nb + want;
  }
  return (size_t)(c->raw_end - c->raw_dst);
}

/* Sets up the reading of a DownloadReply's raw bytes. Returns 0 or a broken-connection code. */
static int start_download(opd_client *c, opd_future *f, const Opd__V1__DownloadReply *d,
                          uint64_t id) {
  size_t esize = opd_client_dtype_size((int)d->dtype);
  if (esize == 0 || d->n_shape > OPD_CLIENT_MAX_DIMS)
    return protocol_error(c, "download reply with a bad dtype or rank", id);
  f->info = calloc(1, sizeof *f->info);
  if (!f->info) return fail_all(c, OPD_ENOMEM, "out of memory reading a download reply");
  f->info->dtype = (int)d->dtype;
  f->info->ndim = (int)d->n_shape;
  uint64_t bytes = esize;
  for (size_t i = 0; i < d->n_shape; i++) {
    if (d->shape[i] < 0) return protocol_error(c, "download reply with a negative size", id);
    f->info->shape[i] = d->shape[i];
    if (bytes && (uint64_t)d->shape[i] > UINT64_MAX / bytes) bytes = UINT64_MAX;
    bytes = (uint64_t)d->shape[i] ? bytes * (uint64_t)d->shape[i] : 0;
  }
  if (bytes != d->nbytes) return protocol_error(c, "download nbytes does not match its shape", id);
  f->info->nbytes = d->nbytes;
  c->raw_dst = c->raw_end = NULL;
  if (d->nbytes == 0) {
    /* nothing follows */
  } else if (f->alloc) { /* [Note: Download buffers grow] */
    size_t first = d->nbytes < FIRST_DOWNLOAD_BUFFER ? (size_t)d->nbytes : FIRST_DOWNLOAD_BUFFER;
    if (d->nbytes > SIZE_MAX || !(f->buf = malloc(first))) {
      future_set_error(f, OPD_ENOMEM, "cannot allocate the download buffer", NULL);
    } else {
      f->capacity = first;
      c->raw_dst = f->buf;
      c->raw_end = c->raw_dst + first;
    }
  } else if (d->nbytes > f->capacity) {
    char msg[160];
    snprintf(msg, sizeof msg, "a download of %llu bytes does not fit the buffer of %zu bytes",
             (unsigned long long)d->nbytes, f->capacity);
    future_set_error(f, OPD_EINVAL, msg, NULL);
  } else {
    c->raw_dst = f->buf;
    c->raw_end = c->raw_dst + d->nbytes;
  }
  if (d->nbytes == 0) {
    complete(c, f);
    return 0;
  }
  c->raw_active = true;
  c->raw_f = f;
  c->raw_left = d->nbytes;
  return 0;
}

static void set_server_info(opd_client *c, const Opd__V1__HelloReply *h) {
  pthread_mutex_lock(&c->mu);
  c->server.protocol_version = h->protocol_version;
  snprintf(c->server.server, sizeof c->server.server, "%s", h->server ? h->server : "");
  c->server.max_frame_bytes = h->max_frame_bytes;
  c->server.max_literal_bytes = h->max_literal_bytes;
  c->server.max_handles = h->max_handles;
  c->server.max_bytes_held = h->max_bytes_held;
  c->server.max_in_flight = h->max_in_flight;
  c->server.priority = (opd_client_priority)h->priority;
  const Opd__V1__Load *load = h->load; /* absent from an older daemon: all zero */
  c->server.sessions = load ? load->sessions : 0;
  c->server.jobs_queued = load ? load->jobs_queued : 0;
  c->server.draining = load && load->draining;
  c->server.num_devices = 0;
  for (size_t i = 0; load && i < load->n_devices && i < OPD_CLIENT_MAX_DEVICE_LOADS; i++) {
    const Opd__V1__DeviceLoad *d = load->devices[i];
    c->server.devices[c->server.num_devices++] =
        (opd_client_device_load){.type = d->device ? d->device->type : OPD_CLIENT_DEVICE_CPU,
                                 .index = d->device ? d->device->index : -1,
                                 .bytes_held = d->bytes_held,
                                 .bytes_limit = d->bytes_limit};
  }
  pthread_mutex_unlock(&c->mu);
}

/* Handles one decoded response. Returns 0 or a broken-connection code. */
/* Completes f, off the list already, with its reply r (a call's, an upload's, a pong, an
 * ack, or an error): 0, or a broken-connection code for a reply that breaks the protocol
 * (f then fails with the same message). */
static int take_reply(opd_client *c, opd_future *f, const Opd__V1__Response *r) {
  const char *broken = NULL;
  switch (r->body_case) {
  case OPD__V1__RESPONSE__BODY_ERROR: {
    const Opd__V1__Error *e = r->error;
    future_set_error(f, map_server_code(e->code), e->message, e->op);
    break;
  }
  case OPD__V1__RESPONSE__BODY_CALL: {
    int rc = opd__client_results_copy(r->call->results, r->call->n_results, f);
    if (rc == OPD_EINTERNAL)
      broken = "a call result without a value";
    else if (rc != 0)
      future_set_error(f, rc, "out of memory copying call results", NULL);
    break;
  }
  case OPD__V1__RESPONSE__BODY_DEFINE_GRAPH:
  case OPD__V1__RESPONSE__BODY_DESCRIBE_GRAPH: {
    const Opd__V1__DescribeGraphReply *d = r->describe_graph;
    bool define = r->body_case == OPD__V1__RESPONSE__BODY_DEFINE_GRAPH;
    if (!define && !d->info)
      broken = "a describe_graph reply without its GraphInfo";
    else if (opd__client_graph_reply(define ? r->define_graph : d->info,
                                     define ? NULL : d->introspection, f) != 0)
      future_set_error(f, OPD_ENOMEM, "out of memory copying a graph reply", NULL);
    break;
  }
  case OPD__V1__RESPONSE__BODY_UPLOAD:
    if (r->upload->handle == 0) broken = "an upload reply with handle 0";
    f->handle = r->upload->handle;
    break;
  case OPD__V1__RESPONSE__BODY_PONG:
    if (r->pong->payload.len != f->pong_len ||
        (f->pong_len && memcmp(r->pong->payload.data, f->pong, f->pong_len) != 0))
      future_set_error(f, OPD_EINTERNAL, "the pong payload differs from the ping's", NULL);
    break;
  default: break; /* Ack */
  }
  if (!broken) {
    finish(c, f);
    return 0;
  }
  char msg[160];
  snprintf(msg, sizeof msg, "protocol error: %s (request id %llu)", broken,
           (unsigned long long)r->id);
  future_set_error(f, OPD_EINTERNAL, msg, NULL);
  finish(c, f);
  return protocol_error(c, broken, r->id);
}

/* The pending request whose id is `id` (NULL: none), the one before it (*prev) and whether
 * it is not yet written whole (*unsent). With c->mu held. */
static opd_future *find_locked(opd_client *c, uint64_t id, opd_future **prev, bool *unsent) {
  opd_future *f = c->head, *before = NULL;
  bool not_sent = false;
  for (; f && f->id != id; before = f, f = f->next) not_sent |= f == c->send;
  *prev = before;
  *unsent = not_sent || (f && f == c->send);
  return f;
}

/* Whether a reply of kind `body` to f (found by find_locked) is the usual reply, which
 * completes its request whatever it holds and so takes it off the list at once: a reply
 * of its kind (an error, or one that matches its request, other than hello and a download's
 * header) to a request written whole and not answered yet. */
static bool completes_at_once(const opd_future *f, bool unsent, Opd__V1__Response__BodyCase body) {
  return f && !unsent && !f->responded &&
         (body == OPD__V1__RESPONSE__BODY_ERROR ||
          (body_matches(f, body) && body != OPD__V1__RESPONSE__BODY_HELLO &&
           body != OPD__V1__RESPONSE__BODY_DOWNLOAD));
}

static int dispatch_response(opd_client *c, const Opd__V1__Response *r) {
  pthread_mutex_lock(&c->mu);
  opd_future *prev;
  bool unsent;
  opd_future *f = find_locked(c, r->id, &prev, &unsent);
  /* the usual reply leaves the list in this critical section */
  bool taken = completes_at_once(f, unsent, r->body_case);
  if (taken) {
    unlink_locked(c, f, prev);
    atomic_store_explicit(&c->completing, 1, memory_order_relaxed);
  }
  pthread_mutex_unlock(&c->mu);
  if (taken) {
    int rc = take_reply(c, f, r);
    atomic_store_explicit(&c->completing, 0, memory_order_relaxed);
    return rc;
  }
  if (!f && r->id == 0 && r->body_case == OPD__V1__RESPONSE__BODY_ERROR) {
    const Opd__V1__Error *e = r->error;
    return fail_all(c, map_server_code(e->code), "the server closed the session: %s",
                    e->message ? e->message : "");
  }
  if (!f || f->responded) return protocol_error(c, "a response to no pending request", r->id);
  if (r->body_case == OPD__V1__RESPONSE__BODY_ERROR) { /* to a request not yet sent whole */
    const Opd__V1__Error *e = r->error;
    future_set_error(f, map_server_code(e->code), e->message, e->op);
    f->responded = true; /* completed once its bytes are all written */
    return 0;
  }
  if (unsent) return protocol_error(c, "a reply to a request not yet fully sent", r->id);
  if (!body_matches(f, r->body_case)) return protocol_error(c, "a reply of the wrong kind", r->id);
  if (r->body_case == OPD__V1__RESPONSE__BODY_DOWNLOAD)
    return start_download(c, f, r->download, r->id);
  assert(r->body_case == OPD__V1__RESPONSE__BODY_HELLO);
  c->greeted = true;
  set_server_info(c, r->hello);
  if (r->hello->protocol_version != OPD_CLIENT_PROTOCOL_VERSION) {
    char msg[96];
    snprintf(msg, sizeof msg, "the server speaks protocol version %u, this client %d",
             r->hello->protocol_version, OPD_CLIENT_PROTOCOL_VERSION);
    future_set_error(f, OPD_EINTERNAL, msg, NULL);
  }
  complete(c, f);
  return 0;
}

/* The common responses, read by hand ([Note: Hand-packed messages]): true if this was one
 * (*rc is then dispatch_response's). A pong is tried first: the result handles of a call
 * come here only when take_reply_batch, which read them already, could not complete their
 * request (an error path). */
static bool handle_common_frame(opd_client *c, const uint8_t *data, uint32_t len, int *rc) {
  Opd__V1__Response r = OPD__V1__RESPONSE__INIT;
  Opd__V1__Pong pong = OPD__V1__PONG__INIT;
  const uint8_t *payload;
  if (opd__wire_parse_pong(data, len, &r.id, &payload, &pong.payload.len)) {
    pong.payload.data = (uint8_t *)payload;
    r.body_case = OPD__V1__RESPONSE__BODY_PONG;
    r.pong = &pong;
    *rc = dispatch_response(c, &r);
    return true;
  }
  uint64_t handles[OPD__WIRE_VIEW_HANDLES];
  size_t n;
  if (opd__wire_parse_call_handles(data, len, &r.id, handles, OPD__WIRE_VIEW_HANDLES, &n)) {
    opd__wire_handles_view view;
    *rc = dispatch_response(c, opd__wire_handles_view_init(&view, r.id, handles, n));
    return true;
  }
  return false;
}

static int handle_frame(opd_client *c, const uint8_t *data, uint32_t len) {
  int rc;
  if (handle_common_frame(c, data, len, &rc)) return rc;
  decoder d = {c->decode_buf, sizeof c->decode_buf, 0, 0, (size_t)len * 32 + 65536};
  ProtobufCAllocator alloc = {decoder_alloc, decoder_free, &d};
  Opd__V1__Response *r = opd__v1__response__unpack(&alloc, len, data);
  if (!r) return protocol_error(c, "an undecodable response frame", 0);
  rc = dispatch_response(c, r);
  opd__v1__response__free_unpacked(r, &alloc);
  assert(d.used == d.pos); /* what is left is the buffer's share */
  return rc;
}

/* ---- reading and writing (the pump only) ---- */

/* [Note: Not an opd daemon]
 * A client pointed at something else (the status port, a web server, SSH) reads that
 * server's first bytes as a frame length: "HTTP" is a frame of 1347703880 bytes. Before the
 * hello reply, 4 bytes that spell "HTTP", or a length over the limit whose bytes are text,
 * say that the server is not an opd daemon, and the connection fails with OPD_EINVAL and a
 * message that says so ("the server at tcp://127.0.0.1:7471 is not an opd daemon: it
 * answered HTTP"; other text is quoted: "it answered \"SSH-2.0-OpenSSH_9.2p1\""). The hello
 * reply is short, so a length of text never starts one; later frames are not looked at. */

#define HTTP_AS_LENGTH 0x50545448u /* "HTTP" read as a little-endian length */

static bool looks_like_text(const uint8_t *p, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (!(p[i] >= 0x20 && p[i] < 0x7f) && p[i] != '\r' && p[i] != '\n' && p[i] != '\t')
      return false;
  return true;
}

/* A frame of len bytes at p (avail bytes read) that the limit refuses or that spells HTTP:
 * the connection fails ([Note: Not an opd daemon]), or 0 when it is a frame after all. */
static int refuse_length(opd_client *c, const uint8_t *p, size_t avail, uint32_t len) {
  if (!c->greeted && (len == HTTP_AS_LENGTH || looks_like_text(p, 4))) {
    size_t line = 0; /* the printable start of what came */
    while (line < avail && line < 80 && p[line] >= 0x20 && p[line] < 0x7f) line++;
    c->not_opd = true;
    char at[OPD__CLIENT_MSG_MAX / 2] = "";
    if (c->url) snprintf(at, sizeof at, " at %s", c->url);
    if (len == HTTP_AS_LENGTH)
      return fail_all(c, OPD_EINVAL, "the server%s is not an opd daemon: it answered HTTP", at);
    return fail_all(c, OPD_EINVAL, "the server%s is not an opd daemon: it answered \"%.*s%s\"", at,
                    (int)line, (const char *)p, line == 80 ? "..." : "");
  }
  if (len <= c->max_frame_in) return 0;
  return fail_all(c, OPD_EINTERNAL, "protocol error: a response frame of %u bytes (limit %llu)",
                  len, (unsigned long long)c->max_frame_in);
}

/* [Note: Replies taken in a batch]
 * The usual reply is a call's result handles, which completes its request: the pump takes
 * the request off the list under c->mu. With 64 calls in flight on a connection one read
 * brings up to 64 such replies, and a lock and an unlock for each (two locked instructions)
 * took 4.5% of the library's time in opd-bench. So the frames a read brought are parsed by
 * hand for as long as they are such replies (at most REPLY_BATCH), their requests are taken
 * off the list in one critical section, in order, and then completed one by one outside
 * the lock (their callbacks may submit). The batch ends before the first reply that is not
 * the usual one (an error, a reply to a request not yet written whole, to no request, or of
 * the wrong kind): handle_frame takes that one as before, so completions keep the order of
 * the replies and every other path is unchanged.
 * A request taken off the list still counts (c->completing, outstanding()) until its
 * callback has returned: opd_client_wait_all in another thread, woken when one of the
 * batch's futures is published but running later, must not return while a later one's
 * callback still runs. Every path that takes a request off the list and completes it
 * (dispatch_response and complete too) keeps that count, so the rule holds for all. */
#define REPLY_BATCH 64

typedef struct handles_reply {
  uint64_t id;
  size_t n;
  uint64_t handles[OPD__WIRE_VIEW_HANDLES];
  size_t end; /* where its frame ends in rbuf */
} handles_reply;

static uint32_t frame_length(const uint8_t *p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* Completes the usual replies at the start of what rbuf holds: how many (0: the first
 * frame is not one, or is not whole). */
static size_t take_reply_batch(opd_client *c) {
  handles_reply batch[REPLY_BATCH];
  size_t n = 0, pos = c->rpos;
  while (n < REPLY_BATCH && c->rlen - pos >= 4) {
    uint32_t len = frame_length(c->rbuf + pos);
    if (len > c->max_frame_in || len == HTTP_AS_LENGTH || c->rlen - pos - 4 < len) break;
    handles_reply *h = &batch[n];
    if (!opd__wire_parse_call_handles(c->rbuf + pos + 4, len, &h->id, h->handles,
                                      OPD__WIRE_VIEW_HANDLES, &h->n))
      break;
    pos += 4 + (size_t)len;
    h->end = pos;
    n++;
  }
  if (n == 0) return 0;
  opd_future *taken[REPLY_BATCH];
  size_t k = 0;
  pthread_mutex_lock(&c->mu);
  for (; k < n; k++) {
    opd_future *prev;
    bool unsent;
    opd_future *f = find_locked(c, batch[k].id, &prev, &unsent);
    if (!completes_at_once(f, unsent, OPD__V1__RESPONSE__BODY_CALL)) break;
    unlink_locked(c, f, prev);
    taken[k] = f;
  }
  /* until its callback has returned, each request still counts (outstanding) */
  atomic_store_explicit(&c->completing, k, memory_order_relaxed);
  pthread_mutex_unlock(&c->mu);
  if (k == 0) return 0;
  c->rpos = batch[k - 1].end;
  for (size_t i = 0; i < k; i++) {
    atomic_store_explicit(&c->completing, k - i, memory_order_relaxed);
    if (opd__client_results_handles(batch[i].handles, batch[i].n, taken[i]) != 0)
      future_set_error(taken[i], OPD_ENOMEM, "out of memory copying call results", NULL);
    finish(c, taken[i]);
  }
  atomic_store_explicit(&c->completing, 0, memory_order_relaxed);
  return k;
}

/* Parses what rbuf holds: frames, and raw download bytes. */
static int process_input(opd_client *c) {
  for (;;) {
    size_t avail = c->rlen - c->rpos;
    if (c->raw_active) {
      if (avail == 0) return 0;
      size_t take = avail < c->raw_left ? avail : (size_t)c->raw_left;
      size_t room = raw_room(c);
      if (c->raw_dst) {
        if (take > room) take = room;
        memcpy(c->raw_dst, c->rbuf + c->rpos, take);
        c->raw_dst += take;
      }
      c->rpos += take;
      c->raw_left -= take;
      if (c->raw_left == 0) finish_raw(c);
      continue;
    }
    if (avail < 4) return 0;
    const uint8_t *p = c->rbuf + c->rpos;
    uint32_t len = frame_length(p);
    if (len > c->max_frame_in || len == HTTP_AS_LENGTH) {
      int rc = refuse_length(c, p, avail, len);
      if (rc) return rc;
    }
    if (avail - 4 < len) {
      if ((size_t)len + 4 > c->rcap) {
        memmove(c->rbuf, c->rbuf + c->rpos, avail);
        c->rlen = avail;
        c->rpos = 0;
        uint8_t *nb = realloc(c->rbuf, (size_t)len + 4);
        if (!nb) return fail_all(c, OPD_ENOMEM, "out of memory for a response of %u bytes", len);
        c->rbuf = nb;
        c->rcap = (size_t)len + 4;
      }
      return 0;
    }
    if (take_reply_batch(c) > 0) continue; /* [Note: Replies taken in a batch] */
    c->rpos += 4 + (size_t)len;
    int rc = handle_frame(c, p + 4, len);
    if (rc) return rc;
  }
}

/* [Note: A lost session is final]
 * A session is its connection: when the connection goes (the daemon closed it, died, or
 * stopped answering within liveness_timeout_ms or call_timeout_ms) its handles, graphs and
 * dispatch state are gone with it, in a daemon the client cannot reach. So the client does
 * not reconnect behind the application's back (it would hand back a session without the
 * tensors the application holds handles to): every pending request fails at once, and
 * every later one, with OPD_ESESSION and a message that names the daemon and says so. A
 * new opd_client_connect is a new session, placed anew; the application uploads and
 * defines again (a define finds a graph compiled already where affinity placed it). Before
 * the hello reply, the same failures are a failed connect (connect_fd), which placement
 * answers by trying the next daemon. */
static int connection_lost(opd_client *c, int err, const char *when) {
  pthread_mutex_lock(&c->mu);
  bool deadline = c->deadline_passed;
  int call_timeout = c->call_timeout_ms;
  pthread_mutex_unlock(&c->mu);
  const char *at = c->endpoint[0] ? c->endpoint : "(a socket)";
  static const char gone[] = "the session's handles and graphs are gone";
  if (!c->greeted) { /* no session yet: a failed connect */
    if (err == 0)
      return fail_all(c, OPD_ECANCELED,
                      "the daemon at %s closed the connection before its hello "
                      "reply",
                      at);
    return fail_all(c, OPD_ECANCELED, "the connection to the daemon at %s failed %s: %s", at, when,
                    strerror(err));
  }
  if (deadline)
    return fail_all(c, OPD_ESESSION,
                    "session lost: the daemon at %s did not answer within the call deadline of "
                    "%d ms, so the client ended the session; %s",
                    at, call_timeout, gone);
  if (err == 0)
    return fail_all(c, OPD_ESESSION, "session lost: the daemon at %s closed the connection; %s", at,
                    gone);
  if (err == ETIMEDOUT)
    return fail_all(c, OPD_ESESSION,
                    "session lost: the daemon at %s stopped answering (no acknowledgement within "
                    "the liveness timeout); %s",
                    at, gone);
  return fail_all(c, OPD_ESESSION,
                  "session lost: the connection to the daemon at %s failed %s: %s; %s", at, when,
                  strerror(err), gone);
}

/* One read (into the download's buffer directly when possible), then parsing. 1: data was
 * read, 0: nothing to read, negative: the connection broke. */
static int read_some(opd_client *c) {
  for (;;) {
    ssize_t n;
    size_t room = c->raw_active && c->rpos == c->rlen ? raw_room(c) : 0;
    if (room) {
      size_t want = c->raw_left < c->raw_read_max ? (size_t)c->raw_left : c->raw_read_max;
      if (want > room) want = room;
      n = read(c->fd, c->raw_dst, want);
      if (n > 0) {
        c->raw_dst += n;
        c->raw_left -= (uint64_t)n;
        if (c->raw_left == 0) finish_raw(c);
        return 1;
      }
    } else {
      if (c->rpos == c->rlen) {
        c->rpos = c->rlen = 0;
        if (c->rcap > 4 * READ_CHUNK) { /* give back a buffer grown for a large frame */
          uint8_t *nb = realloc(c->rbuf, READ_CHUNK);
          if (nb) c->rbuf = nb, c->rcap = READ_CHUNK;
        }
      } else if (c->rlen == c->rcap) {
        memmove(c->rbuf, c->rbuf + c->rpos, c->rlen - c->rpos);
        c->rlen -= c->rpos;
        c->rpos = 0;
      }
      assert(c->rlen < c->rcap);
      n = read(c->fd, c->rbuf + c->rlen, c->rcap - c->rlen);
      if (n > 0) {
        c->rlen += (size_t)n;
        int rc = process_input(c);
        return rc ? rc : 1;
      }
    }
    if (n == 0) return connection_lost(c, 0, "");
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) return 0;
    return connection_lost(c, errno, "reading");
  }
}

/* Reads whatever the server sent before a failed write (its error, or its reason to close). */
static int drain_after_write_error(opd_client *c, int err) {
  for (int i = 0; i < 1024; i++) {
    int rc = read_some(c);
    if (rc < 0) return rc;
    if (rc == 0) break;
  }
  return connection_lost(c, err, "writing");
}

/* Requests one sendmsg takes at most (two iovecs each: the frame and an upload's bytes):
 * a pump's round submits one request per response it read, so the pipelines of 64 deep
 * that users run, and the release that goes with them, leave in one system call, not two. */
#define WRITE_IOVS 256

/* Writes what the socket takes, several requests per sendmsg. 0, or a broken-connection
 * code. */
static int write_some(opd_client *c) {
  for (;;) {
    struct iovec iov[WRITE_IOVS];
    opd_future *fs[WRITE_IOVS];
    int n = 0, nf = 0;
    pthread_mutex_lock(&c->mu);
    for (opd_future *f = c->send; f && n + 2 <= WRITE_IOVS; f = f->next) {
      size_t total = f->frame_len + f->raw_len;
      if (f->sent < f->frame_len) {
        iov[n++] = (struct iovec){f->frame + f->sent, f->frame_len - f->sent};
        if (f->raw_len) iov[n++] = (struct iovec){(void *)f->raw, f->raw_len};
      } else {
        iov[n++] = (struct iovec){(void *)(f->raw + (f->sent - f->frame_len)), total - f->sent};
      }
      fs[nf++] = f;
    }
    pthread_mutex_unlock(&c->mu);
    if (nf == 0) return 0;
    struct msghdr m = {.msg_iov = iov, .msg_iovlen = (size_t)n};
    ssize_t w = sendmsg(c->fd, &m, MSG_NOSIGNAL);
    if (w < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) return 0;
      return drain_after_write_error(c, errno);
    }
    size_t left = (size_t)w;
    int whole = 0;
    for (; whole < nf; whole++) {
      opd_future *f = fs[whole];
      size_t total = f->frame_len + f->raw_len, take = total - f->sent;
      if (take > left) take = left;
      f->sent += take;
      left -= take;
      if (f->sent < total) break;
      if (f->frame != f->frame_inline) free(f->frame);
      f->frame = NULL;
    }
    pthread_mutex_lock(&c->mu);
    /* (the futures sent whole stay on the list: only this thread completes them) */
    if (whole > 0) c->send = fs[whole - 1]->next;
    c->unsent_bytes = c->send && c->unsent_bytes > (size_t)w ? c->unsent_bytes - (size_t)w : 0;
    pthread_mutex_unlock(&c->mu);
    for (int i = 0; i < whole; i++) /* an early error response completes it now */
      if (fs[i]->responded) complete(c, fs[i]);
    if (whole < nf) return 0;
  }
}

/* One round of I/O: waits up to timeout_ms for the socket, then writes and reads what it
 * can (with a zero timeout and assume_ready, as in opd_client_poll(c, 0), it tries both
 * without asking poll() first; a submission only reads what poll() says is there). The
 * caller is the pump (c->io_busy set by it), without c->mu. */
static void pump_round(opd_client *c, int timeout_ms, bool assume_ready) {
  pthread_mutex_lock(&c->mu);
  bool broken = c->broken_rc != 0, want_write = c->send != NULL;
  pthread_mutex_unlock(&c->mu);
  if (broken) return;
  struct pollfd p[2] = {{c->fd, (short)(POLLIN | (want_write ? POLLOUT : 0)), 0},
                        {c->wake[0], POLLIN, 0}};
  if (timeout_ms == 0 && assume_ready) {
    /* nothing to wait for: the non-blocking write and read find out what is ready (an
     * application's own event loop, opd_client_fd, has usually just said it is) */
    p[0].revents = (short)(POLLIN | (want_write ? POLLOUT : 0));
  } else if (poll(p, 2, timeout_ms) < 0) {
    if (errno != EINTR) connection_lost(c, errno, "polling");
    return;
  }
  if (p[1].revents & POLLIN) {
    char drain[64];
    while (read(c->wake[0], drain, sizeof drain) > 0) continue;
  }
  if (want_write && (p[0].revents & (POLLOUT | POLLERR | POLLHUP)) && write_some(c) < 0) return;
  if (!(p[0].revents & (POLLIN | POLLERR | POLLHUP)) || read_some(c) < 0) return;
  /* requests the callbacks just submitted go out now, not after another poll */
  pthread_mutex_lock(&c->mu);
  want_write = c->send != NULL && !c->broken_rc;
  pthread_mutex_unlock(&c->mu);
  if (want_write) write_some(c);
}

/* [Note: Never hang]
 * Whatever the daemon does, a request ends. A dead host or a cut link is found by the TCP
 * options set at connect (keepalive probes and TCP_USER_TIMEOUT from liveness_timeout_ms:
 * the kernel fails the socket with ETIMEDOUT, idle or not). A daemon that is alive but does
 * not answer is bounded by the call deadline (call_timeout_ms, off by default): the pump
 * never sleeps past the deadline of the oldest pending request (the first of the list:
 * replies come in order), and when it passes, the client ends the session. It cannot do
 * less: the protocol cannot cancel one request, and a reply that came after its caller gave
 * up would land in a download buffer the caller no longer owns. The pump shuts the socket
 * down and fails every pending request ([Note: A lost session is final]). The deadline is
 * checked whenever the client runs its I/O, so however the application waits (a
 * synchronous call, a future, opd_client_poll in slices, its own event loop that polls). */
static void end_session_at_deadline(opd_client *c) {
  pthread_mutex_lock(&c->mu);
  c->deadline_passed = true;
  pthread_mutex_unlock(&c->mu);
  shutdown(c->fd, SHUT_RDWR);
  connection_lost(c, 0, "");
}

/* The call deadline of the oldest pending request (-1: none). With c->mu held. */
static int64_t deadline_due(opd_client *c) {
  if (c->call_timeout_ms <= 0 || !c->head || c->broken_rc) return -1;
  return c->head->submitted_ms + c->call_timeout_ms;
}

/* One round of I/O (pump_round), never sleeping past the call deadline, after which the
 * session ends when the oldest request is still pending ([Note: Never hang]). */
static void pump_once(opd_client *c, int timeout_ms, bool assume_ready) {
  pthread_mutex_lock(&c->mu);
  int64_t due = deadline_due(c);
  pthread_mutex_unlock(&c->mu);
  if (due >= 0) {
    int64_t left = due - now_ms();
    if (left < 0) left = 0;
    if (timeout_ms < 0 || left < timeout_ms) timeout_ms = left > INT32_MAX ? INT32_MAX : (int)left;
  }
  pump_round(c, timeout_ms, assume_ready);
  pthread_mutex_lock(&c->mu);
  due = deadline_due(c);
  pthread_mutex_unlock(&c->mu);
  if (due >= 0 && now_ms() >= due) end_session_at_deadline(c);
}

typedef bool (*until_fn)(opd_client *c, const void *arg);

/* Runs the I/O (or sleeps while another thread does) until until(c, arg), the deadline
 * (OPD_EBUSY) or, for a condition that a broken connection cannot satisfy, the breakage.
 * Called and returns with c->mu held. */
static int progress(opd_client *c, until_fn until, const void *arg, int64_t deadline) {
  if (tls_io_client == c && !until(c, arg))
    return opd__client_error(OPD_EBUSY, "a blocking client call from one of its own callbacks");
  bool pumped = false; /* a zero timeout still pumps once, without blocking */
  for (;;) {
    if (until(c, arg)) return 0;
    int left = ms_left(deadline);
    /* a broken connection's requests are failed by the pump that saw it break */
    if (!c->io_busy && c->broken_rc) return c->broken_rc;
    if (left == 0 && (pumped || c->io_busy)) return OPD_EBUSY;
    if (c->io_busy) {
      if (deadline < 0) {
        pthread_cond_wait(&c->cv, &c->mu);
      } else {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        ts.tv_sec += left / 1000;
        ts.tv_nsec += (long)(left % 1000) * 1000000;
        if (ts.tv_nsec >= 1000000000) ts.tv_sec++, ts.tv_nsec -= 1000000000;
        pthread_cond_timedwait(&c->cv, &c->mu, &ts);
      }
      continue;
    }
    c->io_busy = true;
    tls_io_client = c;
    pthread_mutex_unlock(&c->mu);
    pump_once(c, left, true);
    pumped = true;
    pthread_mutex_lock(&c->mu);
    tls_io_client = NULL;
    c->io_busy = false;
    pthread_cond_broadcast(&c->cv);
  }
}

static bool future_is_done(opd_client *c, const void *arg) {
  (void)c;
  return ((const opd_future *)arg)->done;
}

static bool has_room(opd_client *c, const void *arg) {
  (void)arg;
  return c->pending < c->max_in_flight;
}

static bool nothing_pending(opd_client *c, const void *arg) {
  (void)arg;
  return outstanding(c) == 0;
}

/* ---- submitting ---- */

/* Packs a request with id `id` behind a 4-byte length prefix into f's frame (its own
 * storage when it fits, else malloc'd): the protobuf-c Request req, or, when req is NULL,
 * the plain call ([Note: Typed calls packed directly]). 0, or OPD_ERESOURCE (over `limit`)
 * / OPD_ENOMEM, with the thread's message set. */
static int pack(Opd__V1__Request *req, const opd__client_plain_call *call, uint64_t id,
                uint64_t limit, opd_future *f) {
  size_t hand = 0, n;
  if (req) {
    req->id = id;
    hand = opd__wire_request_size(req); /* [Note: Hand-packed messages] */
    n = hand ? hand : opd__v1__request__get_packed_size(req);
  } else {
    n = opd__wire_call_request_size(id, call->call_size);
  }
  if (n > limit || n > UINT32_MAX)
    return opd__client_error(OPD_ERESOURCE,
                             "a request of %zu bytes exceeds the server's max_frame_bytes (%llu)",
                             n, (unsigned long long)limit);
  uint8_t *buf = n + 4 <= sizeof f->frame_inline ? f->frame_inline : malloc(n + 4);
  if (!buf) return opd__client_error(OPD_ENOMEM, "out of memory for a request of %zu bytes", n);
  buf[0] = (uint8_t)n;
  buf[1] = (uint8_t)(n >> 8);
  buf[2] = (uint8_t)(n >> 16);
  buf[3] = (uint8_t)(n >> 24);
  if (!req)
    opd__wire_call_request_pack(buf + 4, id, call->call_size, call->op, call->oplen, call->args,
                                call->nargs);
  else if (hand)
    opd__wire_request_pack(req, buf + 4);
  else if (opd__v1__request__pack(req, buf + 4) != n) {
    if (buf != f->frame_inline) free(buf);
    return opd__client_error(OPD_EINTERNAL, "protobuf-c packed a request to an unexpected size");
  }
  f->frame = buf;
  f->frame_len = n + 4;
  return 0;
}

/* [Note: Batched writes]
 * Written at once, each submission costs a poll() and a sendmsg() (and the server a wake-up
 * and a read): on a loopback connection several microseconds, more than the rest of a small
 * call's client side, and the most of a program that submits many small calls without
 * waiting (the Python bridge: one request per PyTorch operator). With
 * opd_client_options.write_batch_bytes, a submission made while nobody runs the I/O is held
 * instead (appended to the list, as always, so the order is unchanged) and the held ones
 * leave together in one sendmsg of up to WRITE_IOVS requests when:
 *   - they add up to write_batch_bytes (the unsent bytes are counted from c->send on:
 *     c->unsent_bytes, lowered by every write and cleared when nothing is left to send);
 *   - a submission finds the oldest held one write_batch_us old or more (the time is read
 *     only in this mode), which bounds how long a program that keeps submitting can leave
 *     the server idle;
 *   - any thread waits or polls (progress() runs the pump, which writes before it reads):
 *     whoever needs a result has its request written first, so nothing waits on a held
 *     request; a submission over the in-flight limit waits, so it writes them too;
 *   - opd_client_flush.
 * A held request is pending like any other (opd_client_pending counts it, opd_client_fd's
 * user sees opd_client_wants_write). What is not sent is not seen by the server: a program
 * that submits and then neither waits, polls nor flushes leaves its last batch unsent until
 * it does one of those, or until its next submission after write_batch_us. When another
 * thread runs the I/O, a submission is not held: that thread is woken to write it, as
 * without batching. */

/* opd__client_submit and opd__client_submit_call: req, or the plain call when req is NULL */
static int submit(opd_client *c, opd_future *f, Opd__V1__Request *req,
                  const opd__client_plain_call *call) {
  pthread_mutex_lock(&c->mu);
  int rc = 0;
  /* a callback may submit over the limit: it cannot wait for the pump it runs on */
  if (tls_io_client != c && !c->closing) rc = progress(c, has_room, NULL, -1);
  if (c->closing)
    rc = opd__client_error(OPD_ECANCELED, "the client is closed");
  else if (c->broken_rc)
    rc = opd__client_error(c->broken_rc, "%s", c->broken_msg);
  if (rc == 0) rc = pack(req, call, c->next_id + 1, c->max_frame_out, f);
  if (rc != 0) {
    pthread_mutex_unlock(&c->mu);
    opd__future_discard(f);
    return rc;
  }
  f->id = ++c->next_id;
  if (c->call_timeout_ms > 0) f->submitted_ms = now_ms(); /* [Note: Never hang] */
  if (c->tail)
    c->tail->next = f;
  else
    c->head = f;
  c->tail = f;
  if (!c->send) c->send = f;
  c->pending++;
  bool hold = false; /* [Note: Batched writes] */
  if (c->batch_bytes) {
    int64_t now = now_ns();
    if (c->unsent_bytes == 0) c->unsent_since_ns = now;
    c->unsent_bytes += f->frame_len + f->raw_len;
    hold = c->unsent_bytes < c->batch_bytes && now - c->unsent_since_ns < c->batch_ns;
  } else {
    c->unsent_bytes += f->frame_len + f->raw_len;
  }
  if (c->io_busy) {
    /* the pump may sleep in poll() without watching for writability: wake it */
    if (tls_io_client != c) {
      ssize_t w = write(c->wake[1], "", 1);
      (void)w; /* a full pipe is already a pending wake-up */
    }
    pthread_mutex_unlock(&c->mu);
    return 0;
  }
  if (hold) {
    pthread_mutex_unlock(&c->mu);
    return 0;
  }
  /* nobody pumps: write what the socket takes now (and read what is there) */
  c->io_busy = true;
  tls_io_client = c;
  pthread_mutex_unlock(&c->mu);
  pump_once(c, 0, false);
  pthread_mutex_lock(&c->mu);
  tls_io_client = NULL;
  c->io_busy = false;
  pthread_cond_broadcast(&c->cv);
  pthread_mutex_unlock(&c->mu);
  return 0;
}

int opd__client_submit(opd_client *c, opd_future *f, Opd__V1__Request *req) {
  return submit(c, f, req, NULL);
}

int opd__client_submit_call(opd_client *c, opd_future *f, const opd__client_plain_call *call) {
  return submit(c, f, NULL, call);
}

/* Copies a failed future's message to the thread's last error. */
static int future_to_thread_error(const opd_future *f) {
  const char *op = f->error_op ? f->error_op : f->op;
  if (op) return opd__client_error(f->rc, "%s: %s", op, f->message ? f->message : "");
  return opd__client_error(f->rc, "%s", f->message ? f->message : "");
}

int opd__future_wait_sync(opd_future *f) {
  assert(f->user_owned);
  int rc = opd_future_wait(f);
  if (rc != 0 && opd_future_done(f)) rc = future_to_thread_error(f);
  return rc;
}

/* ---- futures, public ---- */

int opd_future_wait_for(opd_future *f, int timeout_ms) {
  opd_client *c = f->client;
  pthread_mutex_lock(&c->mu);
  int rc = progress(c, future_is_done, f, deadline_after(timeout_ms));
  bool done = f->done;
  pthread_mutex_unlock(&c->mu);
  if (!done) {
    if (tls_io_client != c)
      opd__client_error(OPD_EBUSY, "the request did not complete within %d ms", timeout_ms);
    return rc ? rc : OPD_EBUSY;
  }
  return f->rc;
}

int opd_future_wait(opd_future *f) {
  return opd_future_wait_for(f, -1);
}

bool opd_future_done(const opd_future *f) {
  opd_client *c = f->client;
  pthread_mutex_lock(&c->mu);
  bool done = f->done;
  pthread_mutex_unlock(&c->mu);
  /* in its callback, a future is finished but not yet published */
  return done || (tls_io_client == c && f->finished);
}

void opd_future_free(opd_future *f) {
  if (!f) return;
  assert(f->user_owned);
  opd_client *c = f->client;
  pthread_mutex_lock(&c->mu);
  if (!f->done && tls_io_client == c) {
    /* from a callback, which cannot wait: the library frees it when it completes */
    f->user_owned = false;
    pthread_mutex_unlock(&c->mu);
    client_unref(c);
    return;
  }
  int rc = progress(c, future_is_done, f, -1);
  assert(rc == 0 && f->done);
  (void)rc;
  pthread_mutex_unlock(&c->mu);
  future_destroy(f);
  client_unref(c);
}

int opd__client_may_block(opd_client *c) {
  if (tls_io_client == c)
    return opd__client_error(OPD_EBUSY, "a blocking client call from one of its own callbacks");
  return 0;
}

int opd_future_status(const opd_future *f) {
  return f->finished ? f->rc : OPD_EBUSY;
}

const char *opd_future_error(const opd_future *f) {
  return f->finished && f->message ? f->message : "";
}

const char *opd_future_error_op(const opd_future *f) {
  return f->finished && f->error_op ? f->error_op : "";
}

const opd_client_value *opd_future_results(const opd_future *f, size_t *num_results) {
  bool ok =
      f->finished && f->rc == 0 && (f->kind == OPD__REQ_CALL || f->kind == OPD__REQ_RUN_GRAPH);
  if (num_results) *num_results = ok ? f->num_results : 0;
  return ok ? f->results : NULL;
}

opd_client_tensor opd_future_tensor(const opd_future *f, size_t i) {
  size_t n;
  const opd_client_value *v = opd_future_results(f, &n);
  return i < n && v[i].kind == OPD_CV_TENSOR ? v[i].u.tensor : 0;
}

opd_client_tensor opd_future_handle(const opd_future *f) {
  return f->finished && f->rc == 0 ? f->handle : 0;
}

const opd_client_tensor_info *opd_future_tensor_info(const opd_future *f) {
  return f->finished ? f->info : NULL;
}

void *opd_future_take_data(opd_future *f) {
  if (!f->finished || !f->alloc || f->rc != 0) return NULL;
  void *p = f->buf;
  f->buf = NULL;
  return p;
}

/* ---- polling ---- */

typedef struct completion_count {
  uint64_t before; /* c->completions when the poll began */
} completion_count;

static bool completed_since(opd_client *c, const void *arg) {
  return c->completions != ((const completion_count *)arg)->before;
}

int opd_client_poll(opd_client *c, int timeout_ms) {
  pthread_mutex_lock(&c->mu);
  if (c->pending == 0) {
    int rc = c->broken_rc;
    pthread_mutex_unlock(&c->mu);
    return rc;
  }
  /* counted by completions, not by what is pending: callbacks may submit more */
  completion_count since = {c->completions};
  int rc = progress(c, completed_since, &since, deadline_after(timeout_ms));
  uint64_t done = c->completions - since.before;
  pthread_mutex_unlock(&c->mu);
  if (done > 0) return (int)(done > INT32_MAX ? INT32_MAX : done);
  return rc == OPD_EBUSY ? 0 : rc;
}

int opd_client_wait_all(opd_client *c) {
  pthread_mutex_lock(&c->mu);
  int rc = progress(c, nothing_pending, NULL, -1);
  if (rc == 0) rc = c->broken_rc;
  if (rc != 0 && rc != OPD_EBUSY) opd__client_error(rc, "%s", c->broken_msg);
  pthread_mutex_unlock(&c->mu);
  return rc;
}

size_t opd_client_pending(opd_client *c) {
  pthread_mutex_lock(&c->mu);
  size_t n = outstanding(c);
  pthread_mutex_unlock(&c->mu);
  return n;
}

int opd_client_fd(const opd_client *c) {
  return c->fd;
}

bool opd_client_wants_write(opd_client *c) {
  pthread_mutex_lock(&c->mu);
  bool want = c->send != NULL && !c->broken_rc;
  pthread_mutex_unlock(&c->mu);
  return want;
}

int opd_client_flush(opd_client *c) {
  pthread_mutex_lock(&c->mu);
  int rc = c->broken_rc;
  /* a pump (this thread's, in a callback, or another's, woken at submission) writes them */
  if (rc || c->io_busy || !c->send) {
    if (rc) opd__client_error(rc, "%s", c->broken_msg);
    pthread_mutex_unlock(&c->mu);
    return rc;
  }
  c->io_busy = true;
  tls_io_client = c;
  pthread_mutex_unlock(&c->mu);
  pump_once(c, 0, true);
  pthread_mutex_lock(&c->mu);
  tls_io_client = NULL;
  c->io_busy = false;
  pthread_cond_broadcast(&c->cv);
  rc = c->broken_rc;
  if (rc) opd__client_error(rc, "%s", c->broken_msg);
  pthread_mutex_unlock(&c->mu);
  return rc;
}

/* ---- connecting ---- */

static int set_nonblocking(int fd) {
  int fl = fcntl(fd, F_GETFL);
  if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0) return -1;
  return fcntl(fd, F_SETFD, FD_CLOEXEC);
}

static int hello(opd_client *c, const opd_client_options *o) {
  opd_future *f = opd__future_new(c, OPD__REQ_HELLO, NULL, NULL, true);
  if (!f) {
    opd_client_close(c);
    return opd__client_error(OPD_ENOMEM, "out of memory");
  }
  Opd__V1__Hello h = OPD__V1__HELLO__INIT;
  h.protocol_version = OPD_CLIENT_PROTOCOL_VERSION;
  h.client_name = (char *)(o->client_name ? o->client_name : "opd-client");
  h.priority = (Opd__V1__Priority)o->priority;
  Opd__V1__Request req = OPD__V1__REQUEST__INIT;
  req.body_case = OPD__V1__REQUEST__BODY_HELLO;
  req.hello = &h;
  int rc = opd__client_submit(c, f, &req);
  if (rc != 0) {
    char saved[OPD__CLIENT_MSG_MAX];
    snprintf(saved, sizeof saved, "%s", tls_msg);
    opd_client_close(c);
    return opd__client_error(rc, "%s", saved);
  }
  int timeout = o->connect_timeout_ms == 0 ? 10000 : o->connect_timeout_ms;
  rc = opd_future_wait_for(f, timeout);
  if (rc == OPD_EBUSY && !f->done) {
    opd__client_error(OPD_EBUSY, "no hello reply from the server within %d ms", timeout);
    /* close() below fails the request */
  } else if (rc != 0 && c->not_opd) {
    rc = opd__client_error(rc, "%s", f->message ? f->message : ""); /* it names the URL */
  } else if (rc != 0) {
    rc = opd__client_error(rc, "hello refused: %s", f->message ? f->message : "");
  }
  if (rc == 0) {
    uint32_t limit = c->server.max_in_flight ? c->server.max_in_flight : OPD__CLIENT_DEFAULT_INFL;
    if (o->max_in_flight && o->max_in_flight < limit) limit = o->max_in_flight;
    pthread_mutex_lock(&c->mu);
    c->max_in_flight = limit;
    if (c->server.max_frame_bytes) {
      /* the server's limit holds both ways */
      c->max_frame_out = c->server.max_frame_bytes;
      if (c->server.max_frame_bytes < c->max_frame_in) c->max_frame_in = c->server.max_frame_bytes;
    }
    pthread_mutex_unlock(&c->mu);
    opd_future_free(f);
  } else {
    /* the future goes with the client: free it after close has failed it */
    char saved[OPD__CLIENT_MSG_MAX];
    snprintf(saved, sizeof saved, "%s", tls_msg);
    opd_client_close(c);
    opd_future_free(f);
    opd__client_error(rc, "%s", saved);
  }
  return rc;
}

static bool is_tcp(int fd) {
  struct sockaddr_storage a;
  socklen_t len = sizeof a;
  return getsockname(fd, (struct sockaddr *)&a, &len) == 0 &&
         (a.ss_family == AF_INET || a.ss_family == AF_INET6);
}

/* The TCP options of [Note: Never hang] for a liveness timeout of timeout_ms (0: the
 * default; negative: none): keepalive probes start after a third of it without traffic and
 * go every sixth (4 probes), and TCP_USER_TIMEOUT bounds unacknowledged data by all of it,
 * so a dead peer fails the socket with ETIMEDOUT within about timeout_ms, idle or not. */
#define DEFAULT_LIVENESS_MS 30000
#define KEEPALIVE_PROBES    4

static void set_liveness(int fd, int timeout_ms) {
  if (timeout_ms < 0) return;
  if (timeout_ms == 0) timeout_ms = DEFAULT_LIVENESS_MS;
  int seconds = timeout_ms < 3000 ? 3 : timeout_ms / 1000;
  int one = 1, idle = seconds / 3, interval = (seconds - idle) / KEEPALIVE_PROBES,
      probes = KEEPALIVE_PROBES;
  if (interval < 1) interval = 1;
  unsigned user_timeout = (unsigned)timeout_ms;
  setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof one);
  setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof idle);
  setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &interval, sizeof interval);
  setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &probes, sizeof probes);
  setsockopt(fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &user_timeout, sizeof user_timeout);
}

/* "tcp://10.0.0.3:7470", "tcp://[::1]:7470" or "unix:///path" for an address ("" for
 * another family). */
static void name_address(const struct sockaddr *a, socklen_t len, char *out, size_t cap) {
  char host[INET6_ADDRSTRLEN] = "", port[8] = "";
  out[0] = '\0';
  if (a->sa_family == AF_UNIX) {
    const struct sockaddr_un *u = (const struct sockaddr_un *)a;
    size_t n = len > offsetof(struct sockaddr_un, sun_path)
                   ? strnlen(u->sun_path, len - offsetof(struct sockaddr_un, sun_path))
                   : 0;
    if (n > 0 && u->sun_path[0] != '\0') /* not a socketpair's, nor an abstract name */
      snprintf(out, cap, "unix://%.*s", (int)n, u->sun_path);
  } else if ((a->sa_family == AF_INET || a->sa_family == AF_INET6) &&
             getnameinfo(a, len, host, sizeof host, port, sizeof port,
                         NI_NUMERICHOST | NI_NUMERICSERV) == 0) {
    snprintf(out, cap, a->sa_family == AF_INET6 ? "tcp://[%s]:%s" : "tcp://%s:%s", host, port);
  }
}

/* opd_client_connect_fd, with the daemon's name (or NULL: from the socket's peer) that the
 * messages and opd_client_endpoint say. */
static int connect_fd(int fd, const opd_client_options *options, const char *name,
                      opd_client **out) {
  static const opd_client_options defaults;
  const opd_client_options *o = options ? options : &defaults;
  *out = NULL;
  if (fd < 0) return opd__client_error(OPD_EINVAL, "bad file descriptor %d", fd);
  opd_client *c = calloc(1, sizeof *c);
  uint8_t *rbuf = malloc(READ_CHUNK);
  if (!c || !rbuf) {
    free(c);
    free(rbuf);
    close(fd);
    return opd__client_error(OPD_ENOMEM, "out of memory");
  }
  if (set_nonblocking(fd) != 0 || pipe(c->wake) != 0) {
    int err = errno;
    free(c);
    free(rbuf);
    close(fd);
    return opd__client_error(OPD_EINTERNAL, "cannot set up the connection: %s", strerror(err));
  }
  set_nonblocking(c->wake[0]);
  set_nonblocking(c->wake[1]);
  pthread_condattr_t ca;
  pthread_condattr_init(&ca);
  pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
  pthread_cond_init(&c->cv, &ca);
  pthread_condattr_destroy(&ca);
  pthread_mutex_init(&c->mu, NULL);
  c->fd = fd;
  c->refs = 1;
  c->rbuf = rbuf;
  c->rcap = READ_CHUNK;
  bool tcp = is_tcp(fd);
  c->raw_read_max = tcp ? OPD__WIRE_TCP_RAW_READ : SSIZE_MAX;
  if (tcp) set_liveness(fd, o->liveness_timeout_ms);
  c->max_in_flight = 1;
  c->max_frame_out = OPD__CLIENT_DEFAULT_FRAME;
  c->max_frame_in =
      o->max_response_frame_bytes ? o->max_response_frame_bytes : OPD__CLIENT_DEFAULT_RFRAME;
  c->call_timeout_ms = o->call_timeout_ms > 0 ? o->call_timeout_ms : 0;
  if (name) {
    snprintf(c->endpoint, sizeof c->endpoint, "%s", name);
  } else {
    struct sockaddr_storage peer;
    socklen_t plen = sizeof peer;
    if (getpeername(fd, (struct sockaddr *)&peer, &plen) == 0)
      name_address((struct sockaddr *)&peer, plen, c->endpoint, sizeof c->endpoint);
  }
  c->url = name;
  int rc = hello(c, o);
  if (rc == 0) {
    c->url = NULL;
    c->batch_bytes = o->write_batch_bytes; /* [Note: Batched writes] (the hello is not held) */
    c->batch_ns = (int64_t)o->write_batch_us * 1000;
    *out = c;
  }
  return rc;
}

int opd_client_connect_fd(int fd, const opd_client_options *options, opd_client **out) {
  return connect_fd(fd, options, NULL, out);
}

static int connect_code(int err) {
  switch (err) {
  case ECONNREFUSED:
  case ENOENT:
  case EHOSTUNREACH:
  case ENETUNREACH:
  case ECONNRESET: return OPD_ENOENT;
  case ETIMEDOUT: return OPD_EBUSY;
  default: return OPD_EINTERNAL;
  }
}

/* Connects a non-blocking socket by the deadline: 0 or an errno value. */
static int connect_by(int fd, const struct sockaddr *a, socklen_t len, int64_t deadline) {
  if (set_nonblocking(fd) != 0) return errno;
  if (connect(fd, a, len) == 0) return 0;
  if (errno != EINPROGRESS && errno != EINTR) return errno;
  for (;;) {
    struct pollfd p = {fd, POLLOUT, 0};
    int n = poll(&p, 1, ms_left(deadline));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return errno;
    if (n == 0) return ETIMEDOUT;
    int err = 0;
    socklen_t elen = sizeof err;
    if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &elen) != 0) return errno;
    return err;
  }
}

int opd__client_connect_endpoint(const opd__endpoint *e, const opd_client_options *o,
                                 int timeout_ms, opd_client **out) {
  *out = NULL;
  int64_t deadline = deadline_after(timeout_ms);
  const struct sockaddr *a = (const struct sockaddr *)&e->addr;
  int fd = socket(a->sa_family, SOCK_STREAM, 0), err;
  if (fd < 0) {
    err = errno;
  } else if ((err = connect_by(fd, a, e->addrlen, deadline)) != 0) {
    close(fd);
    fd = -1;
  }
  if (fd < 0)
    return opd__client_error(connect_code(err), "cannot connect to %s: %s", e->name, strerror(err));
  if (a->sa_family != AF_UNIX) {
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  }
  opd_client_options left = *o;
  if (timeout_ms >= 0) {
    int ms = ms_left(deadline);
    left.connect_timeout_ms = ms > 0 ? ms : 1;
  } else {
    left.connect_timeout_ms = -1;
  }
  int rc = connect_fd(fd, &left, e->name, out);
  if (rc != 0 && !strstr(tls_msg, e->name)) { /* named by the message already: not again */
    char saved[OPD__CLIENT_MSG_MAX];
    snprintf(saved, sizeof saved, "%s", tls_msg);
    opd__client_error(rc, "%s: %s", e->name, saved);
  }
  return rc;
}

void opd_client_close(opd_client *c) {
  if (!c) return;
  pthread_mutex_lock(&c->mu);
  assert(!c->io_busy && "opd_client_close while another thread uses the client");
  c->closing = true;
  pthread_mutex_unlock(&c->mu);
  fail_all(c, OPD_ECANCELED, "the client was closed");
  close(c->fd);
  close(c->wake[0]);
  close(c->wake[1]);
  free(c->rbuf);
  c->rbuf = NULL;
  client_unref(c);
}

const opd_client_server_info *opd_client_server(const opd_client *c) {
  return &c->server;
}

const char *opd_client_endpoint(const opd_client *c) {
  return c->endpoint;
}

bool opd_client_connected(opd_client *c) {
  pthread_mutex_lock(&c->mu);
  bool up = c->broken_rc == 0;
  pthread_mutex_unlock(&c->mu);
  return up;
}

/* connection.c: one client connection on the loop thread: frames in, responses out.
 *
 * [Note: Reading frames and raw payloads]
 * Bytes are read into a per-connection buffer (64 KiB, grown up to one maximal frame while a
 * long frame arrives, shrunk back after) in which several pipelined frames are decoded per
 * read. A length over max_frame_bytes is answered with an error and the connection closed
 * (the stream can no longer be trusted). An Upload header is checked (dtype, shape, byte
 * count, device, limits) and its tensor allocated; the raw bytes that follow go straight
 * into the tensor's storage: those already in the buffer are copied, and from then on
 * libuv's alloc callback hands out the storage itself, so the payload is never held twice.
 * A refused upload's bytes are read and discarded, and the session goes on. An upload whose
 * bytes would exceed max_bytes_held while earlier requests of the session are still in
 * flight waits (reading stops) until they are answered, so that the check sees the state the
 * request order implies.
 *
 * [Note: Back-pressure]
 * A session may have max_in_flight requests accepted and unanswered; one more is answered
 * with RESOURCE_EXHAUSTED. Reading stops while the responses not yet written (answered or
 * not) reach twice max_in_flight, or the bytes queued for writing reach four frames plus a
 * download, or the requests decoded and waiting for workers hold 32 maximal frames of
 * memory, or the session's jobs on workers reach max_session_jobs or their estimated cost
 * max_session_cost_ms ([Note: Fair sharing of workers] in worker.h), and resumes as
 * responses go out or jobs finish: a client that does not read its responses, or sends
 * faster than it is served, cannot make the daemon queue without bound.
 *
 * [Note: Writing responses]
 * Responses leave in request order: after workers hand jobs back, the done jobs at the head
 * of the order go out together (several frames, and a download's raw bytes written from
 * the tensor's storage, which the job keeps alive until the write completes). Frames
 * alone are first tried with uv_try_write: what the socket takes at once needs no write
 * request (a completed uv_write also costs libuv an epoll_ctl on the socket). Frames alone
 * of up to JOINED_BYTES in all are first copied into one buffer of the write's: a pipelined
 * batch of a hundred 16-byte responses is then one write of one segment, where a writev
 * of a hundred pieces costs the kernel a copy and a check per piece (the tiny call over 16
 * connections pipelined 64 deep did 2 sends per read, a writev of 64 pieces and a write of
 * the 65th).
 *
 * [Note: Responses written after the poll]
 * The responses of the requests one read answered on the loop, and of the jobs the
 * workers handed back, are written once the loop has run the callbacks of everything its
 * poll found ready: the connections are queued (queue_flush) and written from a uv_check
 * handle after the poll, and from the uv_prepare handle before the loop sleeps for jobs
 * taken back there (opd__conn_flush_queued), as redis writes its replies before it
 * sleeps, not at the end of each read. A client sleeping between its replies (the kernel wakes it
 * through the hypervisor, on a virtual machine an interrupt to another CPU) is then woken once for
 * the replies of a poll's connections, not once for each; the first reply waits at most for the
 * other reads of that poll. A read after which the connection must stop reading (the limits
 * of [Note: Back-pressure]) writes at once, as before, so that reading stops before libuv
 * reads on.
 *
 * [Note: Responses written by workers]
 * When a worker hands a batch back, it first sends, for each connection of the batch, the
 * responses of that connection's jobs that come next in the response order (after the
 * ones already sent whole and not yet recycled), in one non-blocking sendmsg, if no write
 * of the loop's is in progress (opd__conn_send_from_worker). So a call reaches its client
 * without waiting for the loop to wake up, and a pipelined connection gets a batch of
 * responses in one send; the loop then only recycles the jobs (and writes whatever part
 * the send left over). The response order's head and links, the count of writes in
 * progress and `closing` are guarded by the connection's `wmu` for this: the loop takes
 * jobs off the head and starts their write in one critical section, so a worker never
 * writes past a response that is still on its way. A response sent so stops counting
 * against max_in_flight at once (`sent_early`), since the client may answer it with a new
 * request before the loop has the job back. Downloads, whose bytes follow from the
 * tensor, always go through the loop.
 *
 * [Note: Quiet completions]
 * A job whose response its worker sent whole needs nothing more from the loop than to be
 * recycled, and the client, which got the response, will wake the loop with its next
 * request anyway; so a batch of such jobs goes on the completion list without waking the
 * loop, which takes the list before it next sleeps (and whenever it is woken). This holds
 * only while the connection's state waits on no job (`recycle_lazily`: reading, not
 * draining, closing or waiting for the session to go idle before an upload, and no
 * response ready to write behind one whose job is not back: a job of another worker's
 * batch, or one answered by the loop, may have overtaken it); the loop
 * clears the flag before it waits on jobs and then wakes itself if jobs came back quietly,
 * and workers read the flag under the completion list's lock after pushing, so that no job
 * the loop waits for is left on the list unseen.
 *
 * [Note: Tiny calls on the loop]
 * Handing a job to a worker costs more than a tiny call: the job is queued under the
 * scheduler's lock, a worker is woken (on a shared CPU, a switch to it and back) and the
 * job comes back through the completion list, all for about 100 ns of kernel in a 1-element
 * add. So the loop runs such a call itself, as redis runs every command, when
 *  - loop_call_ns is not 0 and the session has nothing queued or running on workers
 *    (`outstanding` and `npending` are 0: every worker's write to the session came before
 *    the loop took its last job back), so the loop is the session's running job, which
 *    alone reads its handle table ([Note: Sessions and handles] in session.h); once a
 *    request of the session goes to a worker, those after it follow in order until the
 *    session has nothing there again. Before it processes what it read, the loop takes
 *    back the jobs done quietly ([Note: Quiet completions]), so that a session calling one
 *    operator after another finds its last job back (`taking_back`: the bytes just read
 *    wait, and the connection's own processing is left to on_read);
 *  - the session is not held by a download whose bytes are still being written from its
 *    tensor ([Note: Sessions on workers] in worker.h): a later in-place write must wait;
 *  - the call was decoded into at most LOOP_PREPARE_BYTES, and its operator fits the loop
 *    (below; checked first, by the operator's name alone): the loop prepares it ([Note:
 *    Prepared calls] in prepared.h: its operator found, its handles looked up, once) to
 *    judge it, and a call that goes to a worker after all is unprepared again, so a large
 *    literal is not copied on the loop only to be thrown away. A call that fails to
 *    prepare (an unknown operator or handle, a bad argument) is answered by the loop;
 *  - the session has no GPU state, and the call's tensors and Device arguments are on the
 *    CPU (or Meta): a CUDA call goes to its device's workers, as it would have;
 *  - the call's estimate ([Note: The cost of a job] in cost.h), read from its prepared
 *    stack, is at most loop_call_ns;
 *  - its operator has shown itself to be as fast as its estimates: a call of it estimated
 *    within loop_call_ns ran on a worker within LOOP_FIT_FACTOR (execute.c) times that.
 *    OPD__LOOP_STRIKES (3) of its calls in a row on the loop that take longer than
 *    short_job_us send it to the workers for good (one alone may have been preempted;
 *    metrics.h keeps these facts beside the operator's counters). The estimate is a scale
 *    for the built-in operators; a plugin's kernel slower than its shapes say stalls the
 *    loop three times at most. Both facts hold for the operator's registrations as they
 *    were: a hot registration or removal that touches it ([Note: Operator generations])
 *    voids them, and its calls go to workers until one shows again that it fits;
 *  - this read's calls on the loop have taken less than LOOP_TURN_NS of kernel time
 *    (`loop_ns`): the rest of a long pipeline goes to the workers, and other connections
 *    are read in between.
 * Releases of such a session run on the loop as well: they only drop handles. A call that
 * goes to a worker after all keeps the estimate the loop made (nothing of its session ran
 * in between), so the worker does not estimate it again. The loop thread is a dispatcher
 * reader (dispatcher/src/rcu.c), online from its first such call until it next goes to
 * sleep (loop.c), so a registration's grace period never waits for an
 * idle loop. The scheduler does not see these requests: they cost less than its own
 * bookkeeping, and the loop shares itself among connections read by read.
 *
 * [Note: Closing]
 * On end of stream, a read or write error, or a drain timeout: queued requests are
 * cancelled, a partial upload's tensor is released, and running requests are told to stop
 * ([Note: Cancelling long work] in opd/cancel.h) and finish on their workers; when the last one is
 * back the session's handles are released and the connection is freed.
 */
#define _GNU_SOURCE /* POLLRDHUP */
#include "connection.h"

#include <inttypes.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include "cost.h"
#include "decode.h"
#include "execute.h"
#include "gather.h"
#include "gpu.h"
#include "loop.h"
#include "metrics.h"
#include "opd/error.h"
#include "opd/log.h"
#include "opd/memory.h"
#include "opd/utf8.h"
#include "opd_wire.h"

#define READ_CHUNK         (64 * 1024)
#define MAX_WRITE_JOBS     256 /* a 64-deep pipeline of calls and releases answered at once */
#define JOINED_BYTES       (16 * 1024) /* frames of one write copied together, at most */
#define MAX_FREE_JOBS      128         /* its jobs, and those of the pipeline before, reused */
#define KEEP_OUT_BYTES     (64 * 1024)
#define MAX_RAW_READ       ((size_t)1 << 30)
#define PROTOCOL_VERSION   1
/* the decoded requests on workers may take this many maximal frames of memory */
#define DECODED_FRAMES     32
/* requests with more arguments are read by protobuf-c (schemas have far fewer) */
#define WIRE_MAX_ARGS      64
/* kernel time one read's calls may take on the loop ([Note: Tiny calls on the loop]) */
#define LOOP_TURN_NS       100000
/* calls decoded into more bytes are not prepared on the loop (same Note) */
#define LOOP_PREPARE_BYTES 4096

struct opd__write {
  uv_write_t req;
  opd__conn *conn;
  opd__write *next_free;
  unsigned njobs;
  opd__job *jobs[MAX_WRITE_JOBS];
  uv_buf_t bufs[2 * MAX_WRITE_JOBS];
  char *joined; /* JOINED_BYTES, made on first use ([Note: Writing responses]) */
};

static void process(opd__conn *c);
static void flush(opd__conn *c);
static void on_write(uv_write_t *req, int status);
static void update_reading(opd__conn *c);
static bool wants_reading(opd__conn *c);
static void queue_flush(opd__conn *c);

static const opd_server_config *cfg(const opd__conn *c) {
  return &c->server->cfg;
}

/* ---- jobs ---- */

/* [Note: Requests when memory runs out]
 * A release, a download or a small call must still be served when the daemon has no memory
 * left: a release is how a client gives memory back. So reading a small request allocates
 * nothing once a connection has jobs: a job keeps its response buffer and its decode arena's first
 * block (at least FIRST_ARENA_BLOCK, enough for any request but a large upload header or
 * call) when it is recycled, and a new job gets both when it is made. When no job is free
 * and none can be made, the frame waits while the connection has jobs in its response
 * order (each is recycled once its response is written, and the frame is processed then);
 * only a connection with none is closed. A request whose decoding needs more than the first
 * block, when no memory is left for more, is refused with RESOURCE_EXHAUSTED.
 * tests/test_fault.c releases with every allocation failing. */
#define FIRST_ARENA_BLOCK 4096

/* A fresh job whose arena bounds decoding to OPD__DECODE_BYTES_PER_FRAME_BYTE x the frame
 * plus 16 KiB: room for any valid request, and no more. protobuf-c's structs take up to 8
 * bytes per byte of frame (a varint of one byte becomes an 8-byte array element; the floor
 * covers a call's at most 64 small arguments), and the call's decoded lists as many again (a
 * tensor list's one-byte handle becomes an 8-byte tensor pointer), so a list as long as the
 * frame holds decodes. NULL when none is free and none can be made. */
static opd__job *job_get(opd__conn *c, size_t frame_len) {
  opd__job *j = c->free_jobs;
  if (j) {
    c->free_jobs = j->next;
    c->nfree_jobs--;
    /* the next request's job, last used a whole round of the connections ago: fetched
     * from memory while this one is decoded and run */
    if (j->next)
      for (size_t o = 0; o < sizeof *j; o += 64) __builtin_prefetch((const char *)j->next + o, 1);
  } else {
    if (!(j = opd__calloc(1, sizeof *j))) return NULL;
    if (!(j->out = opd__malloc(OPD__JOB_OUT_MIN))) {
      opd__free(j);
      return NULL;
    }
    j->out_cap = OPD__JOB_OUT_MIN;
    opd__arena_init(&j->arena);
    if (opd__arena_reserve_first(&j->arena, FIRST_ARENA_BLOCK) < 0) {
      opd__free(j->out);
      opd__free(j);
      return NULL;
    }
  }
  opd__arena_reset(&j->arena, OPD__DECODE_BYTES_PER_FRAME_BYTE * frame_len + 16384);
  j->next = j->qnext = NULL;
  j->conn = c;
  j->session = &c->session;
  j->device = (opd_device){OPD_DEVICE_CPU, -1};
  j->id = 0;
  j->req = NULL;
  j->tensor = NULL;
  j->reserved = 0;
  j->raw = NULL;
  j->raw_len = 0;
  j->gather = NULL;
  j->out_len = 0;
  j->sent = 0;
  j->kernel_ns = 0;
  j->cost_ns = 0;
  j->call.op = NULL;
  j->call.state = OPD__CALL_NONE;
  j->graph = NULL;
  j->kind = OPD__JOB_LOCAL;
  j->at_worker = j->counted = j->done = j->holds_session = j->costed = j->waits = false;
  j->on_loop = false;
  return j;
}

static void job_free(opd__job *j) {
  opd__conn *c = j->conn;
  opd__gather_free(j->gather);
  j->gather = NULL;
  if (j->tensor) opd_tensor_release(j->tensor);
  j->tensor = NULL;
  if (j->reserved) opd__session_unreserve(&c->session, j->reserved);
  j->reserved = 0;
  if (j->holds_session) opd__sched_resume(&c->server->sched, &c->session);
  j->holds_session = false;
  opd__job_uncharge(j);
  if (c->nfree_jobs >= MAX_FREE_JOBS) {
    opd__arena_destroy(&j->arena);
    opd__free(j->out);
    opd__free(j);
    return;
  }
  opd__arena_reset(&j->arena, 0);
  c->wait_job = false; /* [Note: Requests when memory runs out] */
  if (j->out_cap > KEEP_OUT_BYTES) {
    uint8_t *p = opd__realloc(j->out, OPD__JOB_OUT_MIN);
    if (p) {
      j->out = p;
      j->out_cap = OPD__JOB_OUT_MIN;
    }
  }
  j->next = c->free_jobs;
  c->free_jobs = j;
  c->nfree_jobs++;
}

/* Adds a job to the response order. A worker reads and links the order only when it hands
 * back a batch holding jobs of this connection ([Note: Responses written by workers]); with
 * none out (`outstanding` counts down as the loop takes jobs back, after their worker's
 * last touch), the loop is alone with it and takes no lock. */
static void append(opd__conn *c, opd__job *j) {
  bool shared = c->outstanding > 0;
  if (shared) pthread_mutex_lock(&c->wmu);
  if (c->order_tail)
    c->order_tail->next = j;
  else
    c->order_head = j;
  c->order_tail = j;
  if (shared) pthread_mutex_unlock(&c->wmu);
  c->norder++;
}

static void answered(opd__conn *c, opd__job *j) {
  j->done = true;
  c->ndone++;
  append(c, j);
}

static void refuse(opd__conn *c, opd__job *j, Opd__V1__ErrorCode code, const char *op,
                   const char *msg) {
  opd__job_error(j, code, op, "%s", msg);
  answered(c, j);
}

/* Hands a job to the workers: it waits, in order, with the others decoded from the same
 * read, until submit_pending hands them over together (one critical section and at most
 * one wake-up of a worker for the lot, instead of a worker woken, on a shared CPU, to run
 * each job while the loop is still decoding the next). */
static void to_worker(opd__conn *c, opd__job *j) {
  j->decoded = j->arena.total;
  c->decoded_bytes += j->decoded;
  c->npending++;
  j->qnext = NULL;
  if (c->pending_tail)
    c->pending_tail->qnext = j;
  else
    c->pending_head = j;
  c->pending_tail = j;
}

/* run_on_loop's judgement of a call by its operator and estimate, and the run: false when
 * the job goes to a worker after all. */
static bool run_here(opd__conn *c, opd__job *j) {
  const opd_server_config *k = cfg(c);
  if (j->kind == OPD__JOB_CALL) {
    if (j->arena.total > LOOP_PREPARE_BYTES) return false;
    opd__server_loop_online(c->server); /* preparing reads the operator's schema */
    /* an operator not (yet) fit for the loop: not prepared here only to be unprepared (the
     * prepare takes the operator found; an unknown one fails it, answered here) */
    if ((j->call.op = opd_find_op(j->req->call->op)) && !opd__metrics_loop_fits(j->call.op))
      return false;
    if (opd__call_prepare(j) == 0) { /* failed: its error is answered here */
      if (j->call.device.type == OPD_DEVICE_CUDA || j->call.cuda_devices) {
        opd__call_unprepare(j);
        return false;
      }
      /* a call that goes to a worker keeps its estimate: the session has nothing before it */
      j->cost_ns = opd__job_estimate(j);
      j->costed = true;
      if (j->cost_ns > k->loop_call_ns || j->waits) {
        opd__call_unprepare(j);
        return false;
      }
    }
  }
  j->on_loop = true;
  bool hold = opd__execute(j); /* a prepared call's error was packed when it was decoded */
  assert(!hold);
  (void)hold;
  c->loop_ns += j->kernel_ns;
  c->in_flight--;
  j->counted = false;
  j->done = true;
  c->ndone++;
  opd__count(&c->server->loop_calls, 1); /* [Note: Counters with one writer at a time] */
  return true;
}

/* The kinds the loop may run itself: the ON_LOOP column of requests.def. */
static const bool may_run_on_loop[OPD__NUM_JOB_KINDS] = {
#define OPD__REQUEST(kind, body, session, accept, on_loop, ...) [OPD__JOB_##kind] = on_loop,
#include "requests.def"
#undef OPD__REQUEST
};

/* Runs a counted call or release of the response order on the loop if [Note: Tiny calls on
 * the loop] allows, answering it; false when it must go to a worker. */
static bool run_on_loop(opd__conn *c, opd__job *j) {
  const opd_server_config *k = cfg(c);
  /* with nothing on workers, only the loop writes the state: it is IDLE, or HELD */
  if (!k->loop_call_ns || c->outstanding || c->npending || c->loop_ns >= LOOP_TURN_NS ||
      c->session.sched.state != OPD__SESSION_IDLE || c->session.gpu || !may_run_on_loop[j->kind])
    return false;
  /* so the loop alone changes the session's bytes held ([Note: A budget with one writer] in
   * opd/allocator.h) until it hands a job to a worker */
  c->session.budget.one_writer = true;
  bool ran = run_here(c, j);
  c->session.budget.one_writer = false;
  return ran;
}

static void submit_pending(opd__conn *c) {
  if (!c->pending_head) return;
  for (opd__job *j = c->pending_head; j; j = j->qnext) c->outstanding++;
  bool queued = opd__sched_submit_list(&c->server->sched, c->pending_head, c->pending_tail);
  assert(queued); /* only a closing connection's session is closed, and it reads nothing */
  (void)queued;
  c->pending_head = c->pending_tail = NULL;
  c->npending = 0;
}

/* ---- closing ---- */

static void finalize(opd__conn *c) {
  if (!c->closing || !c->handle_closed || c->outstanding || c->writes) return;
  assert(!c->flush_queued); /* the check after the poll ran before the handle closed */
  opd_log(OPD_LOG_DEBUG, "session %" PRIu64 " (%s) closed: %" PRIu64 " calls, %" PRIu64 " errors",
          c->session.id, c->peer, (uint64_t)c->session.calls, (uint64_t)c->session.errors);
  opd__session_unregister(&c->server->sessions, &c->session);
  opd__session_destroy(&c->session);
  while (c->free_jobs) {
    opd__job *j = c->free_jobs;
    c->free_jobs = j->next;
    opd__arena_destroy(&j->arena);
    opd__free(j->out);
    opd__free(j);
  }
  while (c->free_writes) {
    opd__write *w = c->free_writes;
    c->free_writes = w->next_free;
    opd__free(w->joined);
    opd__free(w);
  }
  opd__free(c->rbuf);
  pthread_mutex_destroy(&c->wmu);
  opd_server *s = c->server;
  if (c->prev)
    c->prev->next = c->next;
  else
    s->conns = c->next;
  if (c->next) c->next->prev = c->prev;
  opd__free(c);
  opd__server_conn_removed(s);
}

static void on_closed(uv_handle_t *h) {
  opd__conn *c = h->data;
  c->handle_closed = true;
  finalize(c);
}

/* [Note: Quiet completions] */
static void set_recycle_lazily(opd__conn *c, bool lazy) {
  if (lazy == c->lazy) return;
  c->lazy = lazy;
  atomic_store_explicit(&c->recycle_lazily, lazy, memory_order_relaxed);
  if (!lazy) opd__server_kick(c->server); /* jobs back quietly meanwhile are taken */
}

void opd__conn_close(opd__conn *c) {
  if (c->closing) return;
  set_recycle_lazily(c, false);
  pthread_mutex_lock(&c->wmu);
  c->closing = true;
  pthread_mutex_unlock(&c->wmu);
  /* its running work stops ([Note: Cancelling long work] in opd/cancel.h) */
  atomic_store_explicit(&c->session.budget.cancelled, true, memory_order_relaxed);
  opd__job *cancelled = opd__sched_cancel(&c->server->sched, &c->session);
  for (opd__job *j = cancelled; j; j = j->qnext) c->outstanding--;
  c->pending_head = c->pending_tail = NULL; /* in the response order: freed below */
  c->npending = 0;
  /* jobs still on a worker are freed when they come back */
  for (opd__job *j = c->order_head, *next; j; j = next) {
    next = j->next;
    if (!j->at_worker) job_free(j);
  }
  pthread_mutex_lock(&c->wmu);
  c->order_head = c->order_tail = NULL;
  pthread_mutex_unlock(&c->wmu);
  c->norder = 0;
  c->ndone = 0;
  c->upload = NULL;
  uv_close(&c->h.handle, on_closed);
}

/* Closes once everything answered is written, if that is what the connection waits for. */
static void maybe_close_quiet(opd__conn *c) {
  if (c->closing || c->order_head || c->writes) return;
  if (c->close_after_flush || (c->draining && c->in_flight == 0)) opd__conn_close(c);
}

/* Answers a fatal protocol error, then closes. */
static void fatal(opd__conn *c, opd__job *j, Opd__V1__ErrorCode code, const char *msg) {
  opd_log(OPD_LOG_DEBUG, "session %" PRIu64 " (%s): %s", c->session.id, c->peer, msg);
  if (j) refuse(c, j, code, NULL, msg);
  c->close_after_flush = true;
}

/* ---- writing ---- */

/* Frees a write's jobs and keeps the write for the next. */
static void recycle_write(opd__write *w) {
  opd__conn *c = w->conn;
  for (unsigned i = 0; i < w->njobs; i++) job_free(w->jobs[i]);
  w->next_free = c->free_writes;
  c->free_writes = w;
}

/* A write is over: its jobs go back to the pool. False if the connection is closing. */
static bool write_finished(opd__write *w, int status) {
  opd__conn *c = w->conn;
  pthread_mutex_lock(&c->wmu);
  c->writes--;
  pthread_mutex_unlock(&c->wmu);
  recycle_write(w);
  if (c->closing) {
    finalize(c);
    return false;
  }
  if (status < 0) {
    opd_log(OPD_LOG_DEBUG, "session %" PRIu64 " (%s): write failed: %s", c->session.id, c->peer,
            uv_strerror(status));
    opd__conn_close(c);
    return false;
  }
  return true;
}

/* Writes the next chunk of a gathered download whose write just completed: 1 when it did,
 * 0 when there is none (the write is over), or libuv's error. */
static int next_chunk(opd__write *w) {
  opd__job *j = w->jobs[0];
  opd__conn *c = w->conn;
  if (c->streaming != w || c->closing || !opd__gather_left(j->gather)) return 0;
  const void *chunk;
  size_t n = opd__gather_next(j->gather, &chunk);
  w->bufs[0] = uv_buf_init((char *)chunk, (unsigned)n);
  int rc = uv_write(&w->req, &c->h.stream, w->bufs, 1, on_write);
  return rc < 0 ? rc : 1;
}

static void on_write(uv_write_t *req, int status) {
  opd__write *w = req->data;
  opd__conn *c = w->conn;
  if (status == 0 && (status = next_chunk(w)) > 0) return;
  bool streamed = c->streaming == w;
  if (streamed) c->streaming = NULL;
  if (!write_finished(w, status)) return;
  if (streamed) flush(c); /* the responses behind the download */
  maybe_close_quiet(c);
  if (!c->closing) update_reading(c);
}

/* Copies the write's frames into its one buffer when they fit ([Note: Writing responses]);
 * returns the number of buffers left to write. Without memory for the buffer they go as
 * they are. */
static unsigned join_frames(opd__write *w, unsigned nbufs) {
  size_t total = 0;
  for (unsigned i = 0; i < nbufs; i++) total += w->bufs[i].len;
  if (nbufs < 2 || total > JOINED_BYTES || (!w->joined && !(w->joined = opd__malloc(JOINED_BYTES))))
    return nbufs;
  char *p = w->joined;
  for (unsigned i = 0; i < nbufs; i++) {
    memcpy(p, w->bufs[i].base, w->bufs[i].len);
    p += w->bufs[i].len;
  }
  w->bufs[0] = uv_buf_init(w->joined, (unsigned)total);
  return 1;
}

static void flush(opd__conn *c) {
  while (!c->closing && !c->streaming && c->order_head && c->order_head->done) {
    opd__write *w = c->free_writes;
    if (w)
      c->free_writes = w->next_free;
    else if ((w = opd__malloc(sizeof *w)))
      w->joined = NULL;
    else {
      opd_log(OPD_LOG_ERROR, "out of memory writing responses; closing %s", c->peer);
      opd__conn_close(c);
      return;
    }
    w->conn = c;
    w->req.data = w;
    w->njobs = 0;
    unsigned nbufs = 0;
    bool raw = false;
    pthread_mutex_lock(&c->wmu); /* [Note: Responses written by workers] */
    while (c->order_head && c->order_head->done && w->njobs < MAX_WRITE_JOBS) {
      opd__job *j = c->order_head;
      if (j->gather && w->njobs) break; /* a gathered download has a write of its own */
      if (!(c->order_head = j->next)) c->order_tail = NULL;
      c->norder--;
      c->ndone--;
      w->jobs[w->njobs++] = j;
      if (j->sent < j->out_len)
        w->bufs[nbufs++] = uv_buf_init((char *)j->out + j->sent, (unsigned)(j->out_len - j->sent));
      if (j->gather) { /* [Note: Downloads of strided views]: its first chunk */
        const void *chunk;
        size_t n = opd__gather_next(j->gather, &chunk);
        raw = true;
        c->streaming = w;
        w->bufs[nbufs++] = uv_buf_init((char *)chunk, (unsigned)n);
        break;
      }
      if (j->raw_len) { /* from the tensor's storage; uv_buf_init's length is only unsigned */
        raw = true;
        w->bufs[nbufs] = uv_buf_init((char *)j->raw, 0);
        w->bufs[nbufs++].len = j->raw_len;
      }
    }
    if (nbufs) c->writes++;
    pthread_mutex_unlock(&c->wmu);
    if (!nbufs) { /* every response went out from its worker */
      recycle_write(w);
      continue;
    }
    /* [Note: Writing responses]: what the socket takes at once needs no write request
     * (a download's bytes always get one) */
    if (!raw) nbufs = join_frames(w, nbufs);
    int rc = raw ? UV_EAGAIN : uv_try_write(&c->h.stream, w->bufs, nbufs);
    size_t left = rc > 0 ? (size_t)rc : 0;
    unsigned first = 0;
    while (first < nbufs && left >= w->bufs[first].len) left -= w->bufs[first++].len;
    if (first == nbufs || (rc < 0 && rc != UV_EAGAIN)) {
      if (!write_finished(w, first == nbufs ? 0 : rc)) return;
      continue;
    }
    w->bufs[first].base += left;
    w->bufs[first].len -= left;
    rc = uv_write(&w->req, &c->h.stream, w->bufs + first, nbufs - first, on_write);
    if (rc < 0) { /* no callback will come: finish here */
      on_write(&w->req, rc);
      return;
    }
  }
  maybe_close_quiet(c);
}

static bool sent_whole(const opd__job *j) {
  return j->out_len && j->sent == j->out_len;
}

void opd__conn_send_from_worker(opd__job *first) {
  opd__conn *c = first->conn;
  while (first && (first->conn != c || sent_whole(first))) first = first->qnext; /* sent before */
  if (!first || first->sent || c->fd < 0) return; /* the rest of a partial send is the loop's */
  struct iovec iov[MAX_WRITE_JOBS];
  opd__job *run[MAX_WRITE_JOBS];
  unsigned n = 0;
  pthread_mutex_lock(&c->wmu);
  /* past the responses sent whole, not yet recycled (closing frees the order's jobs once it
   * is set: the walk must not start then) */
  opd__job *head = c->closing ? NULL : c->order_head;
  while (head && head != first && sent_whole(head)) head = head->next;
  if (head && head == first && c->writes == 0) {
    /* the connection's jobs of this batch that follow each other in the response order
     * (between them, the batch may hold other connections' jobs) */
    for (opd__job *j = first; j && n < MAX_WRITE_JOBS; j = j->qnext) {
      if (j->conn != c) continue;
      if (j->raw_len || (n && run[n - 1]->next != j)) break;
      run[n] = j;
      iov[n++] = (struct iovec){.iov_base = j->out, .iov_len = j->out_len};
    }
  }
  if (n) {
    /* counted first: the client may send its next request before sendmsg returns */
    atomic_fetch_add_explicit(&c->sent_early, n, memory_order_relaxed);
    struct msghdr m = {.msg_iov = iov, .msg_iovlen = n};
    ssize_t sent = sendmsg(c->fd, &m, MSG_NOSIGNAL | MSG_DONTWAIT);
    size_t left = sent > 0 ? (size_t)sent : 0; /* an error shows again in the loop's write */
    unsigned whole = 0;
    for (unsigned i = 0; i < n && left; i++) {
      run[i]->sent = left < run[i]->out_len ? left : run[i]->out_len;
      left -= run[i]->sent;
      whole += run[i]->sent == run[i]->out_len;
    }
    if (whole < n) atomic_fetch_sub_explicit(&c->sent_early, n - whole, memory_order_relaxed);
  }
  pthread_mutex_unlock(&c->wmu);
}

/* ---- requests ---- */

static void reply_hello(opd__conn *c, opd__job *j) {
  const Opd__V1__Hello *h = j->req->hello;
  if (h->protocol_version != PROTOCOL_VERSION) {
    char msg[160];
    snprintf(msg, sizeof msg,
             "unsupported protocol version %u: this server speaks version %d; closing the "
             "connection",
             h->protocol_version, PROTOCOL_VERSION);
    fatal(c, j, OPD__V1__ERROR_CODE__FAILED_PRECONDITION, msg);
    return;
  }
  const opd_server_config *k = cfg(c);
  /* [Note: Fair sharing of workers]: the class asked for, at most max_priority */
  static const int rank[OPD__NUM_PRIORITIES] = {
      [OPD_PRIORITY_LOW] = 0, [OPD_PRIORITY_NORMAL] = 1, [OPD_PRIORITY_HIGH] = 2};
  opd_priority prio = (opd_priority)h->priority;
  if (!opd__priority_name(prio)) {
    char msg[160];
    snprintf(msg, sizeof msg,
             "unknown priority %d in hello (0 normal, 1 low, 2 high); closing the connection",
             (int)h->priority);
    fatal(c, j, OPD__V1__ERROR_CODE__INVALID_ARGUMENT, msg);
    return;
  }
  if (rank[prio] > rank[k->max_priority]) prio = k->max_priority;
  prio = opd__sched_set_priority(&c->server->sched, &c->session, prio, false);
  Opd__V1__HelloReply r = OPD__V1__HELLO_REPLY__INIT;
  r.protocol_version = PROTOCOL_VERSION;
  r.server = "opd " OPD_VERSION;
  r.max_frame_bytes = k->max_frame_bytes;
  r.max_literal_bytes = k->max_literal_bytes;
  r.max_handles = k->max_handles;
  r.max_bytes_held = k->max_bytes_held;
  r.max_in_flight = k->max_in_flight;
  r.priority = (Opd__V1__Priority)prio;
  Opd__V1__Response resp = OPD__V1__RESPONSE__INIT;
  resp.id = j->id;
  resp.body_case = OPD__V1__RESPONSE__BODY_HELLO;
  resp.hello = &r;
  int rc = opd__job_pack(j, &resp);
  assert(rc == 0);
  (void)rc;
  c->hello_done = true;
  opd_log(OPD_LOG_DEBUG, "session %" PRIu64 " (%s): hello from '%.100s', priority %s",
          c->session.id, c->peer, h->client_name, opd__priority_name(prio));
  answered(c, j);
}

static void reply_pong(opd__conn *c, opd__job *j) {
  const ProtobufCBinaryData *payload = &j->req->ping->payload; /* [Note: Hand-packed messages] */
  uint8_t *body = opd__job_frame(j, opd__wire_pong_size(j->id, payload->len));
  if (!body) {
    refuse(c, j, opd__error_code(opd_last_error_code()), NULL, opd_last_error());
    return;
  }
  opd__wire_pong(body, j->id, payload->data, payload->len);
  answered(c, j);
}

/* Requests in flight whose response the client does not have yet: a response a worker sent
 * counts no more, though its job is not back ([Note: Responses written by workers]). */
static uint32_t unanswered(opd__conn *c) {
  return c->in_flight - atomic_load_explicit(&c->sent_early, memory_order_relaxed);
}

static bool over_in_flight(opd__conn *c, opd__job *j) {
  if (unanswered(c) < cfg(c)->max_in_flight) return false;
  char msg[200];
  snprintf(msg, sizeof msg,
           "session limit reached: %u requests in flight (max_in_flight); wait for responses "
           "before sending more",
           c->in_flight);
  refuse(c, j, OPD__V1__ERROR_CODE__RESOURCE_EXHAUSTED, NULL, msg);
  return true;
}

/* Refuses an upload; its declared bytes are skipped. */
static void refuse_upload(opd__conn *c, opd__job *j, int err, uint64_t nbytes) {
  refuse(c, j, opd__error_code(err), NULL, opd_last_error());
  if (nbytes) {
    c->mode = OPD__READ_SKIP;
    c->raw_left = nbytes;
  }
}

static void upload_received(opd__conn *c) {
  opd__job *j = c->upload;
  c->upload = NULL;
  c->mode = OPD__READ_FRAME;
  to_worker(c, j);
}

int opd__upload_check(const Opd__V1__Upload *u, uint64_t *nbytes, opd_device *dev) {
  int rc;
  *nbytes = 0;
  *dev = (opd_device){OPD_DEVICE_CPU, -1};
  if (u->device && u->device->type == OPD_DEVICE_CUDA &&
      (rc = opd__gpu_upload_device(u->device->index, dev)) < 0)
    return rc;
  if (u->device && u->device->type != OPD_DEVICE_CUDA &&
      (u->device->type != OPD_DEVICE_CPU || u->device->index < -1 || u->device->index > 0))
    return opd_error(OPD_EINVAL,
                     "upload: tensors are uploaded to the CPU (device type 0, index -1 or 0) or "
                     "a CUDA device (type 1), not to device type %d index %d",
                     (int)u->device->type, (int)u->device->index);
  if ((rc = opd__checked_nbytes((opd_dtype)u->dtype, u->shape, u->n_shape, nbytes, "upload")) < 0)
    return rc;
  if (*nbytes != u->nbytes)
    return opd_error(OPD_EINVAL,
                     "upload: dtype %s and a shape of %" PRIu64 " elements need %" PRIu64
                     " bytes, but nbytes is %" PRIu64,
                     opd_dtype_name((opd_dtype)u->dtype),
                     *nbytes / opd_dtype_size((opd_dtype)u->dtype), *nbytes, u->nbytes);
  return 0;
}

/* Starts an upload; false when it must wait for the session's requests in flight (the frame
 * is then decoded again later). */
static bool begin_upload(opd__conn *c, opd__job *j) {
  const Opd__V1__Upload *u = j->req->upload;
  uint64_t declared = u->nbytes, nbytes;
  opd_device dev;
  int rc;
  if (unanswered(c) >= cfg(c)->max_in_flight) {
    over_in_flight(c, j);
    if (declared) {
      c->mode = OPD__READ_SKIP;
      c->raw_left = declared;
    }
    return true;
  }
  if ((rc = opd__upload_check(u, &nbytes, &dev)) < 0) {
    refuse_upload(c, j, rc, declared);
    return true;
  }
  if ((rc = opd__session_reserve(&c->session, nbytes)) < 0) {
    if (c->in_flight > 0) { /* earlier requests may release: decide after them */
      c->wait_idle = true;
      return false;
    }
    refuse_upload(c, j, rc, declared);
    return true;
  }
  j->reserved = nbytes;
  if ((rc = opd_tensor_empty(u->shape, (int)u->n_shape, (opd_dtype)u->dtype,
                             (opd_device){OPD_DEVICE_CPU, -1}, &j->tensor)) < 0) {
    opd__session_unreserve(&c->session, nbytes);
    j->reserved = 0;
    refuse_upload(c, j, rc, declared);
    return true;
  }
  j->kind = OPD__JOB_UPLOAD;
  j->device = dev; /* the bytes arrive in host memory; a GPU worker copies them over */
  j->counted = true;
  c->in_flight++;
  append(c, j);
  c->upload = j;
  if (nbytes == 0) {
    upload_received(c);
  } else {
    c->mode = OPD__READ_RAW;
    c->raw_dst = opd_tensor_data(j->tensor);
    c->raw_left = nbytes;
  }
  return true;
}

static bool accept_hello(opd__conn *c, opd__job *j) {
  reply_hello(c, j);
  return true;
}

static bool accept_ping(opd__conn *c, opd__job *j) {
  reply_pong(c, j);
  return true;
}

/* A job of the session: counted against max_in_flight, in the response order, then run on
 * the loop ([Note: Tiny calls on the loop]) or handed to the workers. */
static bool accept_job(opd__conn *c, opd__job *j) {
  if (over_in_flight(c, j)) return true;
  j->counted = true;
  c->in_flight++;
  append(c, j);
  if (!run_on_loop(c, j)) to_worker(c, j);
  return true;
}

/* What the loop does with each kind of request ([Note: The request table] in requests.def). */
static const struct {
  bool (*accept)(opd__conn *c, opd__job *j); /* false: the frame waits (nothing consumed) */
  bool session;                              /* it needs the session hello opens */
} loop_requests[OPD__NUM_JOB_KINDS] = {
#define OPD__REQUEST(kind, body, session, accept, ...) [OPD__JOB_##kind] = {accept, session},
#include "requests.def"
#undef OPD__REQUEST
};

int opd__request_decode(opd__arena *arena, const uint8_t *data, size_t len,
                        uint64_t max_graph_nodes, Opd__V1__Request **out, uint64_t *id) {
  /* [Note: Hand-packed messages]: the common requests are read by hand */
  Opd__V1__Request *req = NULL;
  bool by_hand = opd__wire_parse_request(data, len, &arena->pb, WIRE_MAX_ARGS, &req) > 0;
  uint64_t gid, nodes;
  *out = NULL;
  *id = 0;
  if (!by_hand && opd__wire_graph_nodes_over(data, len, max_graph_nodes, &gid, &nodes)) {
    *id = gid; /* [Note: Graphs in the daemon]: refused before it is decoded */
    return opd_error(OPD_EINVAL,
                     "graph node %" PRIu64 ": the graph has %" PRIu64
                     " nodes, more than max_graph_nodes (%" PRIu64 ")",
                     max_graph_nodes, nodes, max_graph_nodes);
  }
  if (!by_hand) {
    opd__arena_reset(arena, arena->limit);
    req = opd__v1__request__unpack(&arena->pb, len, data);
  }
  *out = req;
  if (req) *id = req->id;
  if (!req && arena->out_of_memory)
    return opd_error(OPD_ENOMEM, "out of memory decoding a request of %zu bytes", len);
  if (!req && arena->exceeded)
    return opd_error(OPD_EINVAL,
                     "malformed request: a %zu-byte frame that decodes to more than %zu bytes "
                     "(%d per byte of frame, plus 16 KiB)",
                     len, arena->limit, OPD__DECODE_BYTES_PER_FRAME_BYTE);
  if (!req)
    return opd_error(OPD_EINVAL,
                     "malformed request: the %zu-byte frame is not an opd.v1.Request (protobuf "
                     "decoding failed)",
                     len);
  /* [Note: Strings in requests]: the hand reader took a plain name; check the others */
  char bad[512];
  if (!by_hand && !opd__wire_strings_valid(&opd__v1__request__descriptor, data, len, opd_utf8_valid,
                                           opd_utf8_escape, bad, sizeof bad))
    return opd_error(OPD_EINVAL, "%s", bad);
  return 0;
}

/* Handles one frame; false when it must be handled again later (nothing consumed). */
static bool handle_frame(opd__conn *c, const uint8_t *data, size_t len) {
  opd__job *j = job_get(c, len);
  if (!j && c->norder > 0) { /* [Note: Requests when memory runs out] */
    c->wait_job = true;
    return false;
  }
  if (!j) {
    opd_log(OPD_LOG_ERROR, "out of memory reading a request; closing %s", c->peer);
    opd__conn_close(c);
    return true;
  }
  Opd__V1__Request *req;
  uint64_t id;
  int rc = opd__request_decode(&j->arena, data, len,
                               c->hello_done ? cfg(c)->max_graph_nodes : UINT64_MAX, &req, &id);
  j->req = req;
  j->id = id;
  if (rc < 0) { /* the frame was read whole: the stream is still in step */
    Opd__V1__ErrorCode code = rc == OPD_ENOMEM ? OPD__V1__ERROR_CODE__RESOURCE_EXHAUSTED
                                               : OPD__V1__ERROR_CODE__INVALID_ARGUMENT;
    if (c->hello_done)
      refuse(c, j, code, NULL, opd_last_error());
    else
      fatal(c, j, code, opd_last_error());
    return true;
  }
  opd__job_kind kind = opd__job_kind_of(req->body_case);
  bool known = kind != OPD__JOB_LOCAL;
  if (!c->hello_done) {
    if (known && !loop_requests[kind].session) {
      j->kind = kind;
      return loop_requests[kind].accept(c, j);
    }
    fatal(c, j, OPD__V1__ERROR_CODE__FAILED_PRECONDITION,
          "the first request of a connection must be hello; closing the connection");
    return true;
  }
  if (!known) {
    char msg[160];
    snprintf(msg, sizeof msg,
             "request %" PRIu64 " has no body: an unknown or missing request type (this server "
             "speaks protocol version %d)",
             req->id, PROTOCOL_VERSION);
    refuse(c, j, OPD__V1__ERROR_CODE__INVALID_ARGUMENT, NULL, msg);
    return true;
  }
  if (!loop_requests[kind].session) {
    refuse(c, j, OPD__V1__ERROR_CODE__FAILED_PRECONDITION, NULL,
           "hello was already sent on this connection");
    return true;
  }
  j->kind = kind;
  bool consumed = loop_requests[kind].accept(c, j);
  if (!consumed) job_free(j);
  return consumed;
}

/* ---- reading ---- */

/* Whether the session's work on workers is within its limits ([Note: Fair sharing of
 * workers] in worker.h): its jobs, decoded ones included, and their estimated cost. */
static bool session_work_allowed(const opd__conn *c) {
  const opd__sched_entry *e = &c->session.sched;
  return c->npending + atomic_load_explicit(&e->jobs, memory_order_relaxed) <
             cfg(c)->max_session_jobs &&
         atomic_load_explicit(&e->cost_ns, memory_order_relaxed) <
             (uint64_t)cfg(c)->max_session_cost_ms * 1000000;
}

/* Whether the connection takes new frames now. */
static bool frames_allowed(const opd__conn *c) {
  return !c->closing && !c->close_after_flush && !c->draining && !c->wait_idle && !c->wait_job &&
         c->norder < 2 * (size_t)cfg(c)->max_in_flight &&
         c->decoded_bytes < DECODED_FRAMES * cfg(c)->max_frame_bytes &&
         uv_stream_get_write_queue_size(&c->h.stream) < 4 * cfg(c)->max_frame_bytes &&
         session_work_allowed(c);
}

static uint32_t le32(const uint8_t *p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* Consumes what the buffer holds: raw bytes, skipped bytes, whole frames. */
static void process(opd__conn *c) {
  c->loop_ns = 0; /* [Note: Tiny calls on the loop] */
  while (!c->closing) {
    size_t avail = c->rlen - c->rpos;
    if (c->mode != OPD__READ_FRAME) {
      size_t n = avail < c->raw_left ? avail : (size_t)c->raw_left;
      if (c->mode == OPD__READ_RAW) {
        memcpy(c->raw_dst, c->rbuf + c->rpos, n);
        c->raw_dst += n;
      }
      c->rpos += n;
      c->raw_left -= n;
      if (c->raw_left) break;
      if (c->mode == OPD__READ_RAW)
        upload_received(c);
      else
        c->mode = OPD__READ_FRAME;
      continue;
    }
    if (!frames_allowed(c) || avail < 4) break;
    uint32_t len = le32(c->rbuf + c->rpos);
    if (len > cfg(c)->max_frame_bytes) {
      char msg[200];
      snprintf(msg, sizeof msg,
               "frame of %" PRIu32 " bytes exceeds max_frame_bytes (%" PRIu64
               "); closing the connection",
               len, cfg(c)->max_frame_bytes);
      fatal(c, job_get(c, 0), OPD__V1__ERROR_CODE__RESOURCE_EXHAUSTED, msg);
      break;
    }
    if (avail - 4 < len) break;
    if (!handle_frame(c, c->rbuf + c->rpos + 4, len)) break;
    c->rpos += 4 + (size_t)len;
  }
  if (!c->closing) submit_pending(c);
  if (c->rpos == c->rlen) {
    c->rpos = c->rlen = 0;
    if (c->rcap > READ_CHUNK) { /* a long frame is gone: give its room back */
      opd__free(c->rbuf);
      c->rbuf = NULL;
      c->rcap = 0;
    }
  }
}

static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf) {
  (void)suggested;
  opd__conn *c = h->data;
  if (c->mode == OPD__READ_RAW && c->rpos == c->rlen) {
    /* [Note: Raw reads over TCP] */
    size_t most = c->h.handle.type == UV_TCP ? OPD__WIRE_TCP_RAW_READ : MAX_RAW_READ;
    size_t n = c->raw_left < most ? (size_t)c->raw_left : most;
    c->read_raw = true;
    *buf = uv_buf_init((char *)c->raw_dst, 0);
    buf->len = n;
    return;
  }
  c->read_raw = false;
  if (c->rpos) { /* compact */
    memmove(c->rbuf, c->rbuf + c->rpos, c->rlen - c->rpos);
    c->rlen -= c->rpos;
    c->rpos = 0;
  }
  /* room for the frame being read, whole, and a chunk */
  size_t want = c->rlen + READ_CHUNK;
  if (c->mode == OPD__READ_FRAME && c->rlen >= 4) {
    size_t frame = 4 + (size_t)le32(c->rbuf);
    if (frame <= 4 + cfg(c)->max_frame_bytes && frame > want) want = frame;
  }
  if (c->rcap < want) {
    uint8_t *p = opd__realloc(c->rbuf, want);
    if (p) {
      c->rbuf = p;
      c->rcap = want;
    }
  }
  *buf = uv_buf_init((char *)c->rbuf + c->rlen, (unsigned)(c->rcap - c->rlen));
}

static void on_read(uv_stream_t *stream, ssize_t nread, const uv_buf_t *buf) {
  (void)buf;
  opd__conn *c = stream->data;
  if (nread == 0 || c->closing) return;
  if (nread < 0) {
    if (nread != UV_EOF)
      opd_log(OPD_LOG_DEBUG, "session %" PRIu64 " (%s): read failed: %s", c->session.id, c->peer,
              uv_strerror((int)nread));
    else if (c->rlen != c->rpos || c->mode != OPD__READ_FRAME)
      opd_log(OPD_LOG_DEBUG, "session %" PRIu64 " (%s): closed in the middle of a %s",
              c->session.id, c->peer, c->mode == OPD__READ_FRAME ? "frame" : "raw payload");
    opd__conn_close(c);
    return;
  }
  if (c->read_raw) {
    c->raw_dst += nread;
    c->raw_left -= (uint64_t)nread;
    if (c->raw_left == 0) {
      upload_received(c);
      submit_pending(c);
    }
  } else {
    if (c->outstanding) { /* [Note: Tiny calls on the loop]: jobs back quietly first */
      c->taking_back = true;
      opd__server_take_done(c->server);
      c->taking_back = false;
      if (c->closing) return;
    }
    c->rlen += (size_t)nread;
    process(c);
  }
  if (c->closing) return;
  if (wants_reading(c)) { /* [Note: Responses written after the poll] */
    queue_flush(c);
    return;
  }
  flush(c);
  update_reading(c);
}

/* Queues the connection's responses for opd__conn_flush_queued ([Note: Responses written
 * after the poll]). */
static void queue_flush(opd__conn *c) {
  if (c->flush_queued) return;
  c->flush_queued = true;
  c->flush_next = c->server->to_flush;
  c->server->to_flush = c;
}

void opd__conn_flush_queued(opd_server *s) {
  while (s->to_flush) {
    opd__conn *c = s->to_flush;
    s->to_flush = c->flush_next;
    c->flush_queued = false;
    c->flush_next = NULL;
    if (c->closing) continue;
    flush(c);
    update_reading(c);
  }
}

/* Whether the connection's state lets it read more. */
static bool wants_reading(opd__conn *c) {
  return c->mode == OPD__READ_RAW ? !c->close_after_flush : frames_allowed(c);
}

/* Starts or stops reading as the connection's state asks, processing buffered frames a
 * pause left behind. */
static void update_reading(opd__conn *c) {
  if (c->closing || c->taking_back) return; /* on_read goes on with the bytes it read */
  while (c->rlen != c->rpos) {
    size_t before = c->rpos;
    process(c);
    bool waits = c->wait_job;
    flush(c);
    if (c->closing) return;
    if (waits && !c->wait_job) continue; /* the write gave a job back: the frame can go */
    /* on, while frames go and the write made room for more (requests answered on the loop,
     * written at once, leave the response order within this call) */
    if (c->rpos == before || !frames_allowed(c)) break;
  }
  bool want = wants_reading(c);
  if (want && !c->reading) {
    int rc = uv_read_start(&c->h.stream, on_alloc, on_read);
    if (rc < 0) {
      opd_log(OPD_LOG_DEBUG, "session %" PRIu64 " (%s): cannot read: %s", c->session.id, c->peer,
              uv_strerror(rc));
      opd__conn_close(c);
      return;
    }
    c->reading = true;
  } else if (!want && c->reading) {
    uv_read_stop(&c->h.stream);
    c->reading = false;
  }
  set_recycle_lazily(c, c->reading && !c->draining && !c->wait_idle && !c->close_after_flush &&
                            c->ndone == 0);
}

/* [Note: Clients gone while reading is paused]
 * A connection whose reading is paused (its session's work at its limits, a long call
 * running, answers waiting to be written) would not see its client go: the end of stream
 * is only read behind the requests still buffered. So the loop looks at the sockets of such
 * connections every OPD__HANGUP_CHECK_MS, with poll's POLLRDHUP (the peer shut its side,
 * whatever is still unread) and POLLHUP / POLLERR, and closes those whose client has gone,
 * as the end of stream would have ([Note: Closing]): their queued requests are cancelled and
 * their running ones stopped ([Note: Cancelling long work] in opd/cancel.h), within
 * OPD__HANGUP_CHECK_MS and the time a loop takes to look at its flag. */
void opd__conns_check_hangup(opd_server *s) {
  for (opd__conn *c = s->conns, *next; c; c = next) {
    next = c->next;
    uv_os_fd_t fd;
    if (c->closing || c->reading || uv_fileno(&c->h.handle, &fd) != 0) continue;
    struct pollfd p = {.fd = fd, .events = POLLRDHUP};
    if (poll(&p, 1, 0) == 1 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR))) {
      opd_log(OPD_LOG_DEBUG, "session %" PRIu64 " (%s): the client has gone", c->session.id,
              c->peer);
      opd__conn_close(c);
    }
  }
}

/* ---- the loop's entry points ---- */

void opd__conn_jobs_back(opd__job *jobs) {
  for (opd__job *j = jobs, *next; j; j = next) {
    next = j->qnext;
    j->qnext = NULL;
    opd__conn *c = j->conn;
    j->at_worker = false;
    c->outstanding--;
    c->decoded_bytes -= j->decoded;
    if (j->counted) {
      c->in_flight--;
      j->counted = false;
    }
    if (j->out_len && j->sent == j->out_len)
      atomic_fetch_sub_explicit(&c->sent_early, 1, memory_order_relaxed);
    if (c->closing) {
      job_free(j);
      finalize(c);
      continue;
    }
    j->done = true;
    c->ndone++;
    if (c->wait_idle && c->in_flight == 0) c->wait_idle = false;
    queue_flush(c);
  }
}

void opd__conn_drain(opd__conn *c) {
  c->draining = true;
  update_reading(c);
  maybe_close_quiet(c);
}

static void format_peer(opd__conn *c, bool tcp) {
  snprintf(c->peer, sizeof c->peer, "unix socket");
  if (!tcp) return;
  struct sockaddr_storage ss;
  int len = sizeof ss;
  if (uv_tcp_getpeername(&c->h.tcp, (struct sockaddr *)&ss, &len) < 0) return;
  char ip[48] = "?";
  int port = 0;
  if (ss.ss_family == AF_INET) {
    struct sockaddr_in *a = (struct sockaddr_in *)&ss;
    uv_ip4_name(a, ip, sizeof ip);
    port = ntohs(a->sin_port);
  } else if (ss.ss_family == AF_INET6) {
    struct sockaddr_in6 *a = (struct sockaddr_in6 *)&ss;
    uv_ip6_name(a, ip, sizeof ip);
    port = ntohs(a->sin6_port);
  }
  snprintf(c->peer, sizeof c->peer, "%s:%d", ip, port);
}

/* [Note: Refusing a connection without memory]
 * libuv stops watching a listener while the connection it announced is not accepted, so a
 * connection the daemon has no memory for must still be accepted, or the listener would
 * take no connection again. It is accepted into the listener's own spare handle and closed
 * at once (the client sees the connection closed); while that close is in progress the
 * listener waits, and the close's callback accepts whatever came meanwhile. */
static void on_rejected(uv_handle_t *h) {
  opd__listener *l = h->data;
  l->rejecting = false;
  if (!l->server->stopping) opd__conn_accept(l->server, l); /* one may be waiting */
}

static void reject(opd_server *s, opd__listener *l) {
  if (l->rejecting) return; /* on_rejected takes this one */
  bool tcp = l->addr.kind == OPD__LISTEN_TCP;
  int rc = tcp ? uv_tcp_init(&s->loop, &l->reject.tcp) : uv_pipe_init(&s->loop, &l->reject.pipe, 0);
  if (rc < 0) return;
  l->reject.handle.data = l;
  l->rejecting = true;
  rc = uv_accept(&l->h.stream, &l->reject.stream);
  if (rc == 0)
    opd_log(OPD_LOG_ERROR, "out of memory accepting a connection on %s: closed it", l->url);
  uv_close(&l->reject.handle, on_rejected);
}

void opd__conn_accept(opd_server *s, opd__listener *l) {
  opd__conn *c = opd__calloc(1, sizeof *c);
  if (!c) {
    reject(s, l);
    return;
  }
  bool tcp = l->addr.kind == OPD__LISTEN_TCP;
  int rc = tcp ? uv_tcp_init(&s->loop, &c->h.tcp) : uv_pipe_init(&s->loop, &c->h.pipe, 0);
  if (rc < 0) {
    opd__free(c);
    reject(s, l);
    return;
  }
  c->h.handle.data = c;
  c->server = s;
  c->closing = false;
  c->fd = -1;
  atomic_init(&c->sent_early, 0);
  atomic_init(&c->recycle_lazily, false);
  pthread_mutex_init(&c->wmu, NULL);
  opd__session_init(&c->session, ++s->next_session, &s->cfg);
  c->session.graph_ctx = s->graphs;
  c->next = s->conns;
  if (s->conns) s->conns->prev = c;
  s->conns = c;
  s->nconns++;
  if ((rc = uv_accept(&l->h.stream, &c->h.stream)) < 0) {
    if (rc != UV_EAGAIN) /* EAGAIN: none was waiting (after a rejected one) */
      opd_log(OPD_LOG_WARN, "accepting a connection on %s failed: %s", l->url, uv_strerror(rc));
    opd__conn_close(c);
    return;
  }
  if (tcp) uv_tcp_nodelay(&c->h.tcp, 1);
  uv_os_fd_t fd;
  if (uv_fileno(&c->h.handle, &fd) == 0) c->fd = fd;
  format_peer(c, tcp);
  c->session.peer = c->peer;
  opd__session_register(&s->sessions, &c->session);
  opd_log(OPD_LOG_DEBUG, "session %" PRIu64 " opened from %s on %s", c->session.id, c->peer,
          l->url);
  update_reading(c);
}

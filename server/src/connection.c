/* connection.c: one client connection on the loop thread: its life (accepted,
 * drained, closed, freed), its pool of jobs and the order of its responses, the jobs back
 * from the workers, and the clients gone while reading is paused. Reading and framing are
 * conn_read.c's, the requests conn_requests.c's and conn_upload.c's, the calls the loop
 * runs itself conn_loop_calls.c's, writing conn_write.c's (conn.h).
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
 * [Note: Closing]
 * On end of stream, a read or write error, or a drain timeout: queued requests are
 * cancelled, a partial upload's tensor is released, and running requests are told to stop
 * ([Note: Cancelling long work] in opd/cancel.h) and finish on their workers; when the last one is
 * back the session's handles are released and the connection is freed.
 */
#define _GNU_SOURCE /* POLLRDHUP */
#include "conn.h"

#include <errno.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>

#include "decode.h"
#include "gather.h"
#include "opd/log.h"
#include "opd/memory.h"

#define MAX_FREE_JOBS  128 /* its jobs, and those of the pipeline before, reused */
#define KEEP_OUT_BYTES (64 * 1024)

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
opd__job *opd__conn_job_get(opd__conn *c, size_t frame_len) {
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

void opd__conn_job_free(opd__job *j) {
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
 * back a batch holding jobs of this connection ([Note: Responses written by workers] in
 * conn_write.c); with none out (`outstanding` counts down as the loop takes jobs back, after their
 * worker's last touch), the loop is alone with it and takes no lock. */
void opd__conn_append(opd__conn *c, opd__job *j) {
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

void opd__conn_answered(opd__conn *c, opd__job *j) {
  j->done = true;
  c->ndone++;
  opd__conn_append(c, j);
}

void opd__conn_refuse(opd__conn *c, opd__job *j, Opd__V1__ErrorCode code, const char *op,
                      const char *msg) {
  opd__job_error(j, code, op, "%s", msg);
  opd__conn_answered(c, j);
}

/* Hands a job to the workers: it waits, in order, with the others decoded from the same
 * read, until submit_pending hands them over together (one critical section and at most
 * one wake-up of a worker for the lot, instead of a worker woken, on a shared CPU, to run
 * each job while the loop is still decoding the next). */
void opd__conn_to_worker(opd__conn *c, opd__job *j) {
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

void opd__conn_submit_pending(opd__conn *c) {
  if (!c->pending_head) return;
  for (opd__job *j = c->pending_head; j; j = j->qnext) c->outstanding++;
  bool queued = opd__sched_submit_list(&c->server->sched, c->pending_head, c->pending_tail);
  assert(queued); /* only a closing connection's session is closed, and it reads nothing */
  (void)queued;
  c->pending_head = c->pending_tail = NULL;
  c->npending = 0;
}

/* ---- closing ---- */

void opd__conn_finalize(opd__conn *c) {
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
  opd__conn_free_writes(c);
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
  opd__conn_finalize(c);
}

/* [Note: Quiet completions] */
void opd__conn_set_recycle_lazily(opd__conn *c, bool lazy) {
  if (lazy == c->lazy) return;
  c->lazy = lazy;
  atomic_store_explicit(&c->recycle_lazily, lazy, memory_order_relaxed);
  if (!lazy) opd__server_kick(c->server); /* jobs back quietly meanwhile are taken */
}

void opd__conn_close(opd__conn *c) {
  if (c->closing) return;
  opd__conn_set_recycle_lazily(c, false);
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
    if (!j->at_worker) opd__conn_job_free(j);
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
void opd__conn_maybe_close_quiet(opd__conn *c) {
  if (c->closing || c->order_head || c->writes) return;
  if (c->close_after_flush || (c->draining && c->in_flight == 0)) opd__conn_close(c);
}

/* Answers a fatal protocol error, then closes. */
void opd__conn_fatal(opd__conn *c, opd__job *j, Opd__V1__ErrorCode code, const char *msg) {
  opd_log(OPD_LOG_DEBUG, "session %" PRIu64 " (%s): %s", c->session.id, c->peer, msg);
  if (j) opd__conn_refuse(c, j, code, NULL, msg);
  c->close_after_flush = true;
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

/* [Note: Idle sessions]
 * With session_idle_timeout_s, a session whose client has sent nothing for that long while
 * the daemon owes it nothing (no request in flight or partly read, no response unwritten)
 * is closed, its handles and graphs freed: for clients that leave sessions open and
 * forgotten (a notebook left running). Keepalive ([Note: Dead peers]) cannot tell those from
 * live ones: their kernels answer the probes. Checked with the hang-up check, every
 * OPD__HANGUP_CHECK_MS. Off (0) by default: an idle session is a normal one. */
void opd__conns_check_idle(opd_server *s) {
  uint64_t limit_ms = (uint64_t)s->cfg.session_idle_timeout_s * 1000;
  if (!limit_ms) return;
  uint64_t now = uv_now(&s->loop);
  for (opd__conn *c = s->conns, *next; c; c = next) {
    next = c->next;
    if (c->closing || c->in_flight || c->outstanding || c->norder || c->writes || c->upload ||
        c->mode != OPD__READ_FRAME || c->rlen != c->rpos || now - c->active_ms < limit_ms)
      continue;
    opd_log(OPD_LOG_INFO, "session %" PRIu64 " (%s): idle for %" PRIu32 " s; closing it",
            c->session.id, c->peer, s->cfg.session_idle_timeout_s);
    opd__conn_close(c);
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
      opd__conn_job_free(j);
      opd__conn_finalize(c);
      continue;
    }
    j->done = true;
    c->ndone++;
    if (c->wait_idle && c->in_flight == 0) c->wait_idle = false;
    opd__conn_queue_flush(c);
  }
}

void opd__conn_drain(opd__conn *c) {
  c->draining = true;
  opd__conn_update_reading(c);
  opd__conn_maybe_close_quiet(c);
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

/* [Note: Dead peers]
 * A client whose host vanished (powered off, its link cut) sends nothing, not even a reset:
 * without help the kernel keeps its connection for about 15 minutes while data is
 * unacknowledged and forever while idle, and the session keeps its handles, bytes and
 * graphs. So every accepted TCP connection gets keepalive probes (after
 * tcp_keepalive_idle_s of silence, every tcp_keepalive_interval_s, tcp_keepalive_probes
 * of them: 5 + 3 x 2 = 11 s by default) and TCP_USER_TIMEOUT (data unacknowledged for
 * tcp_user_timeout_ms, 15 s by default, also bounds the probes); the connection then fails
 * with ETIMEDOUT, and its close reclaims the session as for any client gone. A live client
 * answers probes from its kernel, so an idle session is never closed by them. Unix sockets
 * need none: their peer is on this host. A failed setsockopt is logged, not fatal: the
 * connection still works, as it did without. */
static void set_dead_peer_options(opd__conn *c, int fd) {
  const opd_server_config *k = &c->server->cfg;
  int on = 1, idle = (int)k->tcp_keepalive_idle_s, interval = (int)k->tcp_keepalive_interval_s,
      probes = (int)k->tcp_keepalive_probes;
  unsigned user_timeout = k->tcp_user_timeout_ms;
  bool ok = true;
  if (idle > 0)
    ok = setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &on, sizeof on) == 0 &&
         setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof idle) == 0 &&
         setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &interval, sizeof interval) == 0 &&
         setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &probes, sizeof probes) == 0;
  if (ok && user_timeout > 0)
    ok = setsockopt(fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &user_timeout, sizeof user_timeout) == 0;
  if (!ok)
    opd_log(OPD_LOG_WARN, "session %" PRIu64 " (%s): cannot set TCP keepalive or user timeout: %s",
            c->session.id, c->peer, strerror(errno));
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
  c->active_ms = uv_now(&s->loop);
  if (tcp && c->fd >= 0) set_dead_peer_options(c, c->fd); /* [Note: Dead peers] */
  opd__session_register(&s->sessions, &c->session);
  opd_log(OPD_LOG_DEBUG, "session %" PRIu64 " opened from %s on %s", c->session.id, c->peer,
          l->url);
  opd__conn_update_reading(c);
}

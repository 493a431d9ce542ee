/* conn_read.c: reading a connection: bytes into its buffer or an upload's tensor,
 * frames cut from them and handed to conn_requests.c, back-pressure (when reading stops and
 * resumes), and the responses written after the poll.
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
 */
#include "conn.h"

#include <inttypes.h>
#include <string.h>

#include "opd/log.h"
#include "opd/memory.h"
#include "opd_wire.h"

#define READ_CHUNK     (64 * 1024)
#define MAX_RAW_READ   ((size_t)1 << 30)
/* the decoded requests on workers may take this many maximal frames of memory */
#define DECODED_FRAMES 32

static bool wants_reading(opd__conn *c);

/* ---- reading ---- */

/* Whether the session's work on workers is within its limits ([Note: Fair sharing of
 * workers] in worker.h): its jobs, decoded ones included, and their estimated cost. */
static bool session_work_allowed(const opd__conn *c) {
  const opd__sched_entry *e = &c->session.sched;
  return c->npending + atomic_load_explicit(&e->jobs, memory_order_relaxed) <
             opd__conn_cfg(c)->max_session_jobs &&
         atomic_load_explicit(&e->cost_ns, memory_order_relaxed) <
             (uint64_t)opd__conn_cfg(c)->max_session_cost_ms * 1000000;
}

/* Whether the connection takes new frames now. */
static bool frames_allowed(const opd__conn *c) {
  return !c->closing && !c->close_after_flush && !c->draining && !c->wait_idle && !c->wait_job &&
         c->norder < 2 * (size_t)opd__conn_cfg(c)->max_in_flight &&
         c->decoded_bytes < DECODED_FRAMES * opd__conn_cfg(c)->max_frame_bytes &&
         uv_stream_get_write_queue_size(&c->h.stream) < 4 * opd__conn_cfg(c)->max_frame_bytes &&
         session_work_allowed(c);
}

static uint32_t le32(const uint8_t *p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* Consumes what the buffer holds: raw bytes, skipped bytes, whole frames. */
static void process(opd__conn *c) {
  c->loop_ns = 0; /* [Note: Tiny calls on the loop] in conn_loop_calls.c */
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
        opd__conn_upload_received(c);
      else
        c->mode = OPD__READ_FRAME;
      continue;
    }
    if (!frames_allowed(c) || avail < 4) break;
    uint32_t len = le32(c->rbuf + c->rpos);
    if (len > opd__conn_cfg(c)->max_frame_bytes) {
      char msg[200];
      snprintf(msg, sizeof msg,
               "frame of %" PRIu32 " bytes exceeds max_frame_bytes (%" PRIu64
               "); closing the connection",
               len, opd__conn_cfg(c)->max_frame_bytes);
      opd__conn_fatal(c, opd__conn_job_get(c, 0), OPD__V1__ERROR_CODE__RESOURCE_EXHAUSTED, msg);
      break;
    }
    if (avail - 4 < len) break;
    if (!opd__conn_handle_frame(c, c->rbuf + c->rpos + 4, len)) break;
    c->rpos += 4 + (size_t)len;
  }
  if (!c->closing) opd__conn_submit_pending(c);
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
    if (frame <= 4 + opd__conn_cfg(c)->max_frame_bytes && frame > want) want = frame;
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
  c->active_ms = uv_now(stream->loop); /* [Note: Idle sessions] in connection.c */
  if (c->read_raw) {
    c->raw_dst += nread;
    c->raw_left -= (uint64_t)nread;
    if (c->raw_left == 0) {
      opd__conn_upload_received(c);
      opd__conn_submit_pending(c);
    }
  } else {
    if (c->outstanding) { /* [Note: Tiny calls on the loop] in conn_loop_calls.c: jobs back quietly
                             first */
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
    opd__conn_queue_flush(c);
    return;
  }
  opd__conn_flush(c);
  opd__conn_update_reading(c);
}

/* Queues the connection's responses for opd__conn_flush_queued ([Note: Responses written
 * after the poll]). */
void opd__conn_queue_flush(opd__conn *c) {
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
    opd__conn_flush(c);
    opd__conn_update_reading(c);
  }
}

/* Whether the connection's state lets it read more. */
static bool wants_reading(opd__conn *c) {
  return c->mode == OPD__READ_RAW ? !c->close_after_flush : frames_allowed(c);
}

/* Starts or stops reading as the connection's state asks, processing buffered frames a
 * pause left behind. */
void opd__conn_update_reading(opd__conn *c) {
  if (c->closing || c->taking_back) return; /* on_read goes on with the bytes it read */
  while (c->rlen != c->rpos) {
    size_t before = c->rpos;
    process(c);
    bool waits = c->wait_job;
    opd__conn_flush(c);
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
  opd__conn_set_recycle_lazily(c, c->reading && !c->draining && !c->wait_idle &&
                                      !c->close_after_flush && c->ndone == 0);
}

/* conn_write.c: writing a connection's responses, in request order: batched
 * writes from the loop, a download's bytes from its tensor, and the sends of the workers,
 * the two writers ordered by the connection's lock.
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
 */
#include "conn.h"

#include <inttypes.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include "gather.h"
#include "opd/log.h"
#include "opd/memory.h"

#define MAX_WRITE_JOBS 256         /* a 64-deep pipeline of calls and releases answered at once */
#define JOINED_BYTES   (16 * 1024) /* frames of one write copied together, at most */

struct opd__write {
  uv_write_t req;
  opd__conn *conn;
  opd__write *next_free;
  unsigned njobs;
  opd__job *jobs[MAX_WRITE_JOBS];
  uv_buf_t bufs[2 * MAX_WRITE_JOBS];
  char *joined; /* JOINED_BYTES, made on first use ([Note: Writing responses]) */
};

static void on_write(uv_write_t *req, int status);

/* ---- writing ---- */

/* Frees a write's jobs and keeps the write for the next. */
static void recycle_write(opd__write *w) {
  opd__conn *c = w->conn;
  for (unsigned i = 0; i < w->njobs; i++) opd__conn_job_free(w->jobs[i]);
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
    opd__conn_finalize(c);
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
  if (streamed) opd__conn_flush(c); /* the responses behind the download */
  opd__conn_maybe_close_quiet(c);
  if (!c->closing) opd__conn_update_reading(c);
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

void opd__conn_flush(opd__conn *c) {
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
  opd__conn_maybe_close_quiet(c);
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

void opd__conn_free_writes(opd__conn *c) {
  while (c->free_writes) {
    opd__write *w = c->free_writes;
    c->free_writes = w->next_free;
    opd__free(w->joined);
    opd__free(w);
  }
}

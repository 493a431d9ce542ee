/* connection.h: a client connection: framing, request decoding, uploads read into tensor
 * storage, batched response writes, back-pressure, and closing (internal). */
#ifndef OPD_SERVER_CONNECTION_H
#define OPD_SERVER_CONNECTION_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <uv.h>

#include "job.h"
#include "loop.h"
#include "session.h"

typedef struct opd__write opd__write;

typedef enum opd__read_mode {
  OPD__READ_FRAME, /* length-prefixed frames */
  OPD__READ_RAW,   /* an upload's bytes, into its tensor */
  OPD__READ_SKIP,  /* the bytes of a refused upload, discarded */
} opd__read_mode;

struct opd__conn {
  union {
    uv_handle_t handle;
    uv_stream_t stream;
    uv_tcp_t tcp;
    uv_pipe_t pipe;
  } h;
  opd_server *server;
  opd__conn *prev, *next; /* the server's connections */
  opd__session session;
  char peer[64];
  /* reading */
  uint8_t *rbuf; /* bytes read and not yet consumed: rbuf[rpos, rlen) */
  size_t rcap, rlen, rpos;
  opd__read_mode mode;
  uint8_t *raw_dst;  /* RAW: where the next upload byte goes */
  uint64_t raw_left; /* RAW, SKIP: bytes still to come */
  opd__job *upload;  /* the upload being received */
  bool reading;      /* uv_read_start is in effect */
  bool read_raw;     /* the last buffer handed to libuv was raw_dst */
  /* responses, in request order ([Note: Responses written by workers] for wmu) */
  pthread_mutex_t wmu;        /* guards order_head, order_tail, the jobs' next, writes, closing */
  int fd;                     /* the socket, for workers' sends; -1 when unknown */
  atomic_uint sent_early;     /* responses workers sent whose jobs are not back yet */
  atomic_bool recycle_lazily; /* [Note: Quiet completions]; `lazy` is the loop's copy */
  bool lazy;
  opd__job *order_head, *order_tail;
  size_t norder;
  size_t ndone;         /* of them, done (the rest are not back from the workers) */
  uint32_t in_flight;   /* requests accepted and not answered */
  uint32_t outstanding; /* jobs on workers */
  bool taking_back;     /* on_read takes jobs back before it processes what it read */
  uint64_t loop_ns;     /* kernel time of this read's calls on the loop ([Note: Tiny calls on
                           the loop] in connection.c) */
  opd__job *pending_head, *pending_tail; /* decoded, for the workers (by qnext) */
  uint32_t npending;                     /* their count */
  size_t decoded_bytes;                  /* their decoded requests' memory */
  uint32_t writes;                       /* writes in progress */
  opd__job *free_jobs;
  uint32_t nfree_jobs;
  opd__write *free_writes;
  opd__conn *flush_next; /* [Note: Responses written after the poll] in conn_read.c */
  bool flush_queued;
  /* state */
  bool hello_done;
  bool wait_idle;         /* an upload waits for the session's requests to finish */
  bool wait_job;          /* no job could be allocated: the next frame waits for one back */
  opd__write *streaming;  /* the write of a gathered download's chunks: no other may start */
  bool close_after_flush; /* a fatal protocol error was answered */
  bool draining;          /* the server stops: no new requests */
  uint64_t active_ms;     /* the loop's time of the last bytes read ([Note: Idle sessions]) */
  bool closing, handle_closed;
};

/* Accepts a pending connection on a listener. */
void opd__conn_accept(opd_server *s, opd__listener *l);
/* Writes the responses of the queued connections (read, or with jobs back, since the last
 * call), and reads on ([Note: Responses written after the poll] in conn_read.c). */
void opd__conn_flush_queued(opd_server *s);
/* Jobs back from the workers (linked by qnext): marks them done and queues their
 * connections' responses for opd__conn_flush_queued. */
void opd__conn_jobs_back(opd__job *jobs);
/* Reads no new requests; closes once every request in flight is answered. */
void opd__conn_drain(opd__conn *c);
/* Closes the connections whose reading is paused and whose client has gone ([Note: Clients
 * gone while reading is paused]); the loop runs it every OPD__HANGUP_CHECK_MS. */
#define OPD__HANGUP_CHECK_MS 200
/* Closes the connections idle for session_idle_timeout_s ([Note: Idle sessions] in
 * connection.c); the loop runs it with the hang-up check. */
void opd__conns_check_idle(opd_server *s);
void opd__conns_check_hangup(opd_server *s);
/* On a worker, for the first job of its connection in a batch that ran (linked by qnext):
 * sends, in one sendmsg, the responses of the batch's jobs of that connection, not sent
 * yet, that come next in the response order, if nothing else is being written ([Note:
 * Responses written by workers]). */
void opd__conn_send_from_worker(opd__job *first);
/* Closes at once: queued requests are cancelled, running ones finish unanswered. */
void opd__conn_close(opd__conn *c);

/* The steps of reading a request that need no connection (the daemon's, and tests/fuzz's):
 *
 * opd__request_decode decodes one frame's len bytes into `arena` as the daemon does: by hand
 * when the frame is in a hand-packed form, else by protobuf-c within the arena's limit, then
 * every string field checked ([Note: Hand-packed messages], [Note: Strings in requests] in
 * proto/opd_wire.h). 0 and *out; OPD_EINVAL (not a Request, over the arena's limit, a string
 * that is not UTF-8 or holds a NUL) or OPD_ENOMEM, with the message. *out is also set for a
 * refused string (its id is answered), NULL when nothing decoded. A define_graph of more than
 * max_graph_nodes nodes (UINT64_MAX: no limit) is refused from its bytes before protobuf-c
 * builds them ([Note: Graphs in the daemon]). *id is the request's id, the refused graph's,
 * or 0. */
int opd__request_decode(opd__arena *arena, const uint8_t *data, size_t len,
                        uint64_t max_graph_nodes, Opd__V1__Request **out, uint64_t *id);
/* The checks of an Upload header that need no session: its device (the CPU, or a CUDA
 * device that is available) and its dtype, shape and nbytes (product(shape) x element
 * size, every factor checked). 0 with the byte count and the device the tensor goes to, or
 * a negative error with the message. */
int opd__upload_check(const Opd__V1__Upload *u, uint64_t *nbytes, opd_device *dev);

#endif

/* loop.h: the server: its event loop thread, listeners, the completion queue from the
 * workers, and the drain on stop (internal). */
#ifndef OPD_SERVER_LOOP_H
#define OPD_SERVER_LOOP_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <uv.h>

#include "config.h"
#include "job.h"
#include "session.h"
#include "opd/server.h"
#include "worker.h"

typedef struct opd__listener {
  union {
    uv_handle_t handle;
    uv_stream_t stream;
    uv_tcp_t tcp;
    uv_pipe_t pipe;
  } h;
  opd_server *server;
  opd__listen_addr addr;
  char url[200]; /* as bound */
  int port;      /* -1 for Unix sockets */
  /* [Note: Refusing a connection without memory] (connection.c) */
  union {
    uv_handle_t handle;
    uv_stream_t stream;
    uv_tcp_t tcp;
    uv_pipe_t pipe;
  } reject;
  bool rejecting; /* `reject` is being closed */
} opd__listener;

struct opd_server {
  opd_server_config cfg; /* the server's own copy */
  uv_loop_t loop;
  uv_poll_t done_poll;       /* workers: jobs are back (done_fd is readable) */
  int done_fd;               /* an eventfd; -1 before start */
  uv_prepare_t done_prepare; /* takes jobs back quietly before the loop sleeps */
  uv_check_t flush_check;    /* writes the responses queued in the poll (to_flush) */
  opd__conn *to_flush;       /* [Note: Responses written after the poll] in conn_read.c */
  uv_async_t stop_async;     /* opd_server_stop: drain */
  uv_timer_t drain_timer;
  uv_timer_t hangup_timer; /* [Note: Clients gone while reading is paused] in connection.c */
  opd__listener *listeners;
  size_t nlisteners;
  pthread_t thread;
  opd__sched sched;
  bool sched_started;
  pthread_mutex_t done_mu;
  opd__job *done_list; /* jobs back from the workers, newest first */
  bool wake_pending;   /* done_fd was written and the loop has not taken the list since */
  opd__conn *conns;    /* open connections */
  size_t nconns;
  uint64_t next_session;
  bool stopping;
  /* [Note: Session drain]: set once the server serves (ready), and while it drains */
  _Atomic bool ready;
  _Atomic bool draining;
  opd__session_registry sessions; /* every open session, for the status endpoint */
  struct opd__status *status;     /* the status endpoint; NULL when disabled */
  struct opd__admin *admin;       /* the admin listener (admin.h); NULL when disabled */
  struct opd__gpu *gpu;           /* the CUDA side (gpu.h); NULL without a CUDA device */
  struct opd__graphs *graphs;     /* the graphs' cache and counters (graphs.h) */
  /* [Note: Tiny calls on the loop] in conn_loop_calls.c: the loop thread is an online dispatcher
   * reader (until it next sleeps), and the requests it ran itself */
  bool loop_online;
  _Atomic uint64_t loop_calls;
};

/* Takes the completion list and hands it to the connections, oldest first. */
void opd__server_take_done(opd_server *s);
/* Makes the loop thread an online dispatcher reader until it next sleeps ([Note: Tiny calls
 * on the loop] in conn_loop_calls.c). */
void opd__server_loop_online(opd_server *s);

/* Wakes the loop if jobs came back quietly ([Note: Quiet completions] in connection.c). */
void opd__server_kick(opd_server *s);
/* A connection is gone (connection.c calls this as it frees one). */
void opd__server_conn_removed(opd_server *s);

#endif

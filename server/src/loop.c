/* loop.c: the server: start (listeners bound, workers and the event-loop thread started),
 * the completion queue from workers to the loop, and stop (drain, then join).
 *
 * [Note: Threads]
 * One event-loop thread (libuv) owns every socket: it accepts, reads and decodes frames,
 * answers what needs no session state, and writes responses; it never runs a kernel and
 * never blocks. Worker threads (worker.c) run requests. Workers hand finished jobs back
 * ([Note: Handing jobs back in batches] in worker.c) by pushing them on the completion
 * list; a push wakes the loop through an eventfd it polls unless a wake-up is pending or
 * the jobs need nothing but recycling ([Note: Quiet completions] in connection.c), so
 * wake-ups coalesce: one takes every job finished meanwhile, and each connection's ready
 * responses then go out in one write. The loop also takes the list before it sleeps. (Not
 * uv_async_send: its sender marks the handle busy around the eventfd write, and the loop spins
 * until the mark is gone, so a worker preempted there by the loop it just woke, on a shared CPU,
 * costs the loop its time slice.) Every thread the server starts blocks all signals: they belong to
 * the embedding program (the daemon handles SIGTERM/SIGINT in main.c), and a write to a closed
 * socket gives EPIPE instead of killing the process.
 *
 * Stop: the listeners close, connections read no new requests, and each closes once its
 * requests in flight are answered and written; after drain_timeout_ms the rest are closed
 * (queued requests cancelled, running ones awaited). When the last connection is gone the
 * loop's own handles close, the loop ends and the workers are joined.
 *
 * [Note: Session drain]
 * A balancer or Kubernetes moves new sessions elsewhere when a daemon stops being ready; a
 * session open here lives as long as its connection (its handles and graphs are nowhere
 * else), so a daemon about to go away first drains its sessions: `draining` makes
 * /v1/ready answer 503 and a hello be refused with UNAVAILABLE and a message saying so (the
 * client then tries the next daemon, client/src/placement.c), while every session open goes
 * on as before. The server only keeps the flag: the embedder decides when to stop (the opd
 * daemon, main.c: when the last session is gone or session_drain_timeout_ms has passed),
 * and undrain clears it. `ready` is false until opd_server_start has finished, so /v1/ready
 * says `starting` while the listeners are bound but the server is not yet serving.
 */
#include "loop.h"

#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "admin.h"
#include "connection.h"
#include "cost.h"
#include "execute.h"
#include "gpu.h"
#include "graphs.h"
#include "metrics.h"
#include "server_view.h"
#include "status.h"
#include "opd/error.h"
#include "opd/kernels.h"
#include "opd/log.h"
#include "opd/memory.h"

/* ---- completions ---- */

/* Wakes the loop to take the completion list. done_mu held. */
static void wake_locked(opd_server *s) {
  if (s->wake_pending) return;
  s->wake_pending = true;
  uint64_t one = 1;
  if (write(s->done_fd, &one, sizeof one) < 0)
    assert(errno == EAGAIN); /* the counter is full: a wake-up is pending anyway */
}

/* Sends the responses of a batch that can go ([Note: Responses written by workers] in
 * conn_write.c): once per connection of the batch (a batch is short: BATCH_MAX in
 * worker.c). */
static void send_batch(opd__job *jobs, void *arg) {
  (void)arg;
  for (opd__job *j = jobs; j; j = j->qnext) {
    opd__job *k = jobs;
    while (k != j && k->conn != j->conn) k = k->qnext;
    if (k == j) opd__conn_send_from_worker(j);
  }
}

static void post_done(opd__job *jobs, void *arg) {
  opd_server *s = arg;
  send_batch(jobs, s);
  pthread_mutex_lock(&s->done_mu);
  bool quiet = true;                             /* [Note: Quiet completions] in connection.c */
  for (opd__job *j = jobs, *next; j; j = next) { /* the list is newest first */
    next = j->qnext;
    quiet = quiet && j->out_len && j->sent == j->out_len &&
            atomic_load_explicit(&j->conn->recycle_lazily, memory_order_relaxed);
    j->qnext = s->done_list;
    s->done_list = j;
  }
  if (!quiet) wake_locked(s);
  pthread_mutex_unlock(&s->done_mu);
}

void opd__server_kick(opd_server *s) {
  pthread_mutex_lock(&s->done_mu);
  if (s->done_list) wake_locked(s);
  pthread_mutex_unlock(&s->done_mu);
}

void opd__server_take_done(opd_server *s) {
  pthread_mutex_lock(&s->done_mu);
  opd__job *list = s->done_list;
  s->done_list = NULL;
  s->wake_pending = false;
  pthread_mutex_unlock(&s->done_mu);
  opd__job *fifo = NULL;
  while (list) {
    opd__job *j = list;
    list = j->qnext;
    j->qnext = fifo;
    fifo = j;
  }
  if (fifo) opd__conn_jobs_back(fifo);
}

static void on_done(uv_poll_t *poll, int status, int events) {
  (void)status, (void)events;
  opd_server *s = poll->data;
  uint64_t count;
  /* reset the counter before taking the list: a push after this wakes the loop again */
  if (read(s->done_fd, &count, sizeof count) < 0) assert(errno == EAGAIN);
  opd__server_take_done(s);
}

void opd__server_loop_online(opd_server *s) {
  if (s->loop_online) return;
  opd_reader_online();
  s->loop_online = true;
}

/* Before the loop sleeps: jobs back quietly are recycled (their connections written), and
 * the loop stops being an online reader (a grace period waits for no thread that sleeps). */
static void on_prepare(uv_prepare_t *prepare) {
  opd_server *s = prepare->data;
  opd__server_take_done(s);
  opd__conn_flush_queued(s); /* [Note: Responses written after the poll] in conn_read.c */
  if (s->loop_online) {
    opd_reader_offline();
    s->loop_online = false;
  }
}

/* After the poll's callbacks: the responses they queued ([Note: Responses written after
 * the poll] in conn_read.c). */
static void on_check(uv_check_t *check) {
  opd__conn_flush_queued(check->data);
}

/* ---- stopping ---- */

static void close_if_open(uv_handle_t *h) {
  if (!uv_is_closing(h)) uv_close(h, NULL);
}

static void maybe_finish(opd_server *s) {
  if (!s->stopping || s->nconns) return;
  close_if_open((uv_handle_t *)&s->done_poll);
  close_if_open((uv_handle_t *)&s->done_prepare);
  close_if_open((uv_handle_t *)&s->flush_check);
  close_if_open((uv_handle_t *)&s->stop_async);
  close_if_open((uv_handle_t *)&s->drain_timer);
  close_if_open((uv_handle_t *)&s->hangup_timer);
}

void opd__server_conn_removed(opd_server *s) {
  s->nconns--;
  maybe_finish(s);
}

static void on_drain_timeout(uv_timer_t *t) {
  opd_server *s = t->data;
  if (s->nconns)
    opd_log(OPD_LOG_WARN, "drain timeout (%" PRIu32 " ms): closing %zu connections",
            s->cfg.drain_timeout_ms, s->nconns);
  for (opd__conn *c = s->conns, *next; c; c = next) {
    next = c->next;
    opd__conn_close(c);
  }
}

static void on_hangup_check(uv_timer_t *t) {
  opd__conns_check_hangup(t->data);
  opd__conns_check_idle(t->data);
}

static void on_stop(uv_async_t *a) {
  opd_server *s = a->data;
  if (s->stopping) return;
  s->stopping = true;
  opd_log(OPD_LOG_INFO, "stopping: draining %zu connections", s->nconns);
  for (size_t i = 0; i < s->nlisteners; i++) close_if_open(&s->listeners[i].h.handle);
  for (opd__conn *c = s->conns, *next; c; c = next) {
    next = c->next;
    opd__conn_drain(c);
  }
  uv_timer_start(&s->drain_timer, on_drain_timeout, s->cfg.drain_timeout_ms, 0);
  maybe_finish(s);
}

static void *loop_main(void *arg) {
  opd_server *s = arg;
  opd__sched_latency_thread(); /* [Note: Fair sharing of workers] in worker.h */
  opd_reader_register();       /* [Note: Tiny calls on the loop] in conn_loop_calls.c */
  opd_reader_offline();
  opd__metrics_claim_counters(); /* [Note: Call metrics] in metrics.h: it runs tiny calls */
  uv_run(&s->loop, UV_RUN_DEFAULT);
  opd__metrics_unclaim_counters();
  if (s->loop_online) opd_reader_offline();
  s->loop_online = false;
  opd_reader_unregister();
  return NULL;
}

/* ---- listeners ---- */

static void on_connection(uv_stream_t *stream, int status) {
  opd__listener *l = stream->data;
  if (status < 0) {
    opd_log(OPD_LOG_WARN, "listener %s: %s", l->url, uv_strerror(status));
    return;
  }
  opd__conn_accept(l->server, l);
}

/* Removes a socket file nothing listens on; refuses to touch anything else. */
static int clear_stale_socket(const char *path) {
  struct stat st;
  if (lstat(path, &st) < 0)
    return errno == ENOENT ? 0 : opd_error(OPD_EINVAL, "cannot use %s: %s", path, strerror(errno));
  if (!S_ISSOCK(st.st_mode))
    return opd_error(OPD_EINVAL, "%s exists and is not a socket; not replacing it", path);
  struct sockaddr_un sun = {.sun_family = AF_UNIX};
  snprintf(sun.sun_path, sizeof sun.sun_path, "%s", path);
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return opd_error(OPD_ERESOURCE, "socket: %s", strerror(errno));
  int rc = connect(fd, (struct sockaddr *)&sun, sizeof sun);
  int err = errno;
  close(fd);
  if (rc == 0) return opd_error(OPD_EEXIST, "a server is already listening on %s", path);
  if (err != ECONNREFUSED)
    return opd_error(OPD_EINVAL, "cannot check the socket %s: %s", path, strerror(err));
  if (unlink(path) < 0)
    return opd_error(OPD_EINVAL, "cannot remove the stale socket %s: %s", path, strerror(errno));
  opd_log(OPD_LOG_INFO, "removed the stale socket %s", path);
  return 0;
}

static void tcp_url(char *url, size_t size, const char *host, int port) {
  snprintf(url, size, strchr(host, ':') ? "tcp://[%s]:%d" : "tcp://%s:%d", host, port);
}

static int bind_tcp(opd_server *s, opd__listener *l) {
  struct sockaddr_storage ss;
  bool v6 = strchr(l->addr.host, ':') != NULL;
  int rc = v6 ? uv_ip6_addr(l->addr.host, l->addr.port, (struct sockaddr_in6 *)&ss)
              : uv_ip4_addr(l->addr.host, l->addr.port, (struct sockaddr_in *)&ss);
  if (rc < 0) return rc;
  if ((rc = uv_tcp_init(&s->loop, &l->h.tcp)) < 0) return rc;
  if ((rc = uv_tcp_bind(&l->h.tcp, (struct sockaddr *)&ss, 0)) < 0) return rc;
  if ((rc = uv_listen(&l->h.stream, SOMAXCONN, on_connection)) < 0) return rc;
  int len = sizeof ss;
  if ((rc = uv_tcp_getsockname(&l->h.tcp, (struct sockaddr *)&ss, &len)) < 0) return rc;
  l->port =
      ntohs(v6 ? ((struct sockaddr_in6 *)&ss)->sin6_port : ((struct sockaddr_in *)&ss)->sin_port);
  tcp_url(l->url, sizeof l->url, l->addr.host, l->port);
  return 0;
}

static int bind_unix(opd_server *s, opd__listener *l) {
  int rc;
  if ((rc = uv_pipe_init(&s->loop, &l->h.pipe, 0)) < 0) return rc;
  if ((rc = uv_pipe_bind(&l->h.pipe, l->addr.path)) < 0) return rc;
  /* before listen(): nobody can connect while the mode is the umask's */
  if (chmod(l->addr.path, s->cfg.unix_socket_mode) < 0) return uv_translate_sys_error(errno);
  if ((rc = uv_listen(&l->h.stream, SOMAXCONN, on_connection)) < 0) return rc;
  l->port = -1;
  snprintf(l->url, sizeof l->url, "unix://%s", l->addr.path);
  return 0;
}

static int bind_listener(opd_server *s, opd__listener *l, const char *url) {
  l->server = s;
  int rc = opd__parse_listen_url(url, &l->addr);
  if (rc < 0) return rc;
  if (l->addr.kind == OPD__LISTEN_UNIX && (rc = clear_stale_socket(l->addr.path)) < 0) return rc;
  rc = l->addr.kind == OPD__LISTEN_TCP ? bind_tcp(s, l) : bind_unix(s, l);
  l->h.handle.data = l;
  if (rc < 0) return opd_error(OPD_EINVAL, "cannot listen on %s: %s", url, uv_strerror(rc));
  return 0;
}

/* ---- start and stop ---- */

static void close_walk(uv_handle_t *h, void *arg) {
  (void)arg;
  close_if_open(h);
}

static void free_server(opd_server *s) {
  opd__graphs_stop(s->graphs);
  opd__session_registry_destroy(&s->sessions);
  opd__free(s->listeners);
  opd_server_config_destroy(&s->cfg);
  pthread_mutex_destroy(&s->done_mu);
  if (s->done_fd >= 0) close(s->done_fd);
  opd__free(s);
}

/* Undoes a start that failed after the loop was initialized. */
static void abort_start(opd_server *s) {
  if (s->sched_started) opd__sched_stop(&s->sched);
  opd__gpu_stop(s->gpu);
  uv_walk(&s->loop, close_walk, NULL);
  uv_run(&s->loop, UV_RUN_DEFAULT);
  uv_loop_close(&s->loop);
  free_server(s);
}

static int copy_config(opd_server_config *dst, const opd_server_config *src) {
  *dst = *src;
  dst->listen = NULL;
  dst->num_listen = 0;
  for (size_t i = 0; i < src->num_listen; i++) {
    int rc = opd_server_config_add_listen(dst, src->listen[i]);
    if (rc < 0) {
      opd_server_config_destroy(dst);
      return rc;
    }
  }
  return 0;
}

/* A shutdown request on the admin listener stops the process as SIGINT does (main.c: at
 * once, without a session drain). */
static void on_admin_shutdown(void *arg) {
  (void)arg;
  opd_log(OPD_LOG_INFO, "admin: shutdown requested");
  kill(getpid(), SIGINT);
}

/* The admin's drain and undrain ([Note: Session drain]). */
static void on_admin_set_draining(void *arg, bool draining) {
  opd_log(OPD_LOG_INFO, "admin: %s requested", draining ? "drain" : "undrain");
  opd_server_set_draining(arg, draining);
}

void opd_server_set_draining(opd_server *s, bool draining) {
  bool was = atomic_exchange(&s->draining, draining);
  if (was != draining)
    opd_log(OPD_LOG_INFO, "%s",
            draining ? "draining: new sessions are refused"
                     : "undrained: new sessions are served again");
}

bool opd_server_draining(const opd_server *s) {
  return atomic_load(&s->draining);
}

size_t opd_server_num_sessions(opd_server *s) {
  size_t n = 0;
  pthread_mutex_lock(&s->sessions.mu);
  for (const opd__session *x = s->sessions.head; x; x = x->reg_next) n++;
  pthread_mutex_unlock(&s->sessions.mu);
  return n;
}

/* The admin's set_priority: the open session `id`, found under the registry's lock (a session
 * leaves the registry before it is freed). */
static int on_admin_set_priority(void *arg, uint64_t id, opd_priority p) {
  opd_server *s = arg;
  opd__session_registry *r = &s->sessions;
  pthread_mutex_lock(&r->mu);
  opd__session *session = r->head;
  while (session && session->id != id) session = session->reg_next;
  if (session) {
    opd__sched_set_priority(&s->sched, session, p, true);
    opd_log(OPD_LOG_INFO, "admin: session %" PRIu64 " is now of priority %s", id,
            opd__priority_name(p));
  }
  pthread_mutex_unlock(&r->mu);
  return session ? 0 : opd_error(OPD_ENOENT, "set_priority: no open session %" PRIu64, id);
}

/* The admin listener (docs/ADMIN.md), when a socket or a TCP address is configured, and
 * the plugins of the plugins option, which the admin's plugin set owns (without a listener
 * it listens on nothing), loaded before the server serves, so that daemons started with
 * one configuration define the same operators for every session. */
static int start_admin(opd_server *s) {
  if (!s->cfg.admin[0] && !s->cfg.admin_tcp[0] && !s->cfg.num_plugins) return 0;
  opd__admin_config ac = {
      s->cfg.admin,      s->cfg.admin_tcp,      s->cfg.admin_token_file, s->cfg.plugin_dir,
      on_admin_shutdown, on_admin_set_priority, on_admin_set_draining,   s};
  int rc = opd__admin_start(&ac, &s->admin);
  for (uint32_t i = 0; rc == 0 && i < s->cfg.num_plugins; i++) {
    if ((rc = opd__admin_load_plugin(s->admin, s->cfg.plugins[i])) < 0) {
      char msg[512];
      snprintf(msg, sizeof msg, "%s", opd_last_error());
      rc = opd_error(rc, "plugin %s (the plugins option): %s", s->cfg.plugins[i], msg);
    }
  }
  if (rc < 0 && s->admin) {
    opd__admin_stop(s->admin); /* unloads what was loaded */
    s->admin = NULL;
  }
  return rc;
}

static void warn_if_exposed(const opd__listen_addr *a, const char *url, const char *what) {
  if (!opd__listen_addr_is_loopback(a))
    opd_log(OPD_LOG_WARN,
            "%s is not a loopback address: %s has no authentication, anyone who can reach it "
            "can use it",
            url, what);
}

/* Logs every listener with its URL ([Note: Addresses in the configuration] in config.c),
 * and warns about the unauthenticated ones that other machines can reach. */
static void log_listeners(const opd_server *s) {
  for (size_t i = 0; i < s->nlisteners; i++) {
    opd_log(OPD_LOG_INFO, "listening on %s", s->listeners[i].url);
    warn_if_exposed(&s->listeners[i].addr, s->listeners[i].url, "the RPC port");
  }
  opd__listen_addr a;
  char url[128];
  if (s->admin && s->cfg.admin[0])
    opd_log(OPD_LOG_INFO, "admin listener on unix://%s", s->cfg.admin);
  if (s->admin && s->cfg.admin_tcp[0] && opd__parse_host_port(s->cfg.admin_tcp, &a) == 0) {
    tcp_url(url, sizeof url, a.host, opd__admin_tcp_port(s->admin));
    opd_log(OPD_LOG_INFO, "admin listener on %s (requests carry the token)", url);
  }
  if (s->status && opd__parse_host_port(opd__status_address(s->status), &a) == 0) {
    snprintf(url, sizeof url, "http://%s/", opd__status_address(s->status));
    opd_log(OPD_LOG_INFO, "status endpoint on %s", url);
    warn_if_exposed(&a, url, "the status endpoint");
  }
}

int opd_server_start(const opd_server_config *c, opd_server **out) {
  *out = NULL;
  int rc = opd__config_check(c);
  if (rc < 0) return rc;
  if ((rc = opd_kernels_register()) < 0) {
    char msg[512];
    snprintf(msg, sizeof msg, "%s", opd_last_error());
    return opd_error(rc, "registering the built-in operators failed: %s", msg);
  }
  opd_log_set_level(c->log_level);
  opd__metrics_clock_init(); /* [Note: The duration clock] in metrics.h */
  /* [Note: The replaceable allocator]: libuv and jansson allocate from opd's allocator */
  uv_replace_allocator(opd__malloc, opd__realloc, opd__calloc, opd__free);
  json_set_alloc_funcs(opd__malloc, opd__free);
  opd_server *s = opd__calloc(1, sizeof *s);
  if (!s) return opd_error(OPD_ENOMEM, "out of memory starting the server");
  /* [Note: Memory reserved before it is allocated]: the daemon-wide cap */
  opd_cpu_allocator_set_limit(opd__max_bytes_total(c));
  pthread_mutex_init(&s->done_mu, NULL);
  s->done_fd = -1;
  opd__session_registry_init(&s->sessions);
  if ((rc = copy_config(&s->cfg, c)) < 0 ||
      !(s->listeners = opd__calloc(c->num_listen, sizeof *s->listeners))) {
    free_server(s);
    return rc < 0 ? rc : opd_error(OPD_ENOMEM, "out of memory starting the server");
  }
  if ((rc = opd__graphs_start(&s->cfg, &s->graphs)) < 0) {
    free_server(s);
    return rc;
  }
  /* a literal travels inside a frame */
  if (s->cfg.max_literal_bytes > s->cfg.max_frame_bytes)
    s->cfg.max_literal_bytes = s->cfg.max_frame_bytes;
  if ((rc = uv_loop_init(&s->loop)) < 0) {
    free_server(s);
    return opd_error(OPD_ERESOURCE, "cannot start the event loop: %s", uv_strerror(rc));
  }
  if ((s->done_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) < 0 ||
      (rc = uv_poll_init(&s->loop, &s->done_poll, s->done_fd)) < 0) {
    rc = opd_error(OPD_ERESOURCE, "cannot start the event loop: %s",
                   s->done_fd < 0 ? strerror(errno) : uv_strerror(rc));
    abort_start(s);
    return rc;
  }
  uv_poll_start(&s->done_poll, UV_READABLE, on_done);
  uv_prepare_init(&s->loop, &s->done_prepare);
  uv_prepare_start(&s->done_prepare, on_prepare);
  s->done_prepare.data = s;
  uv_check_init(&s->loop, &s->flush_check);
  uv_check_start(&s->flush_check, on_check);
  s->flush_check.data = s;
  uv_async_init(&s->loop, &s->stop_async, on_stop);
  uv_timer_init(&s->loop, &s->drain_timer);
  s->done_poll.data = s->stop_async.data = s->drain_timer.data = s;
  uv_unref((uv_handle_t *)&s->drain_timer);
  uv_timer_init(&s->loop, &s->hangup_timer);
  s->hangup_timer.data = s;
  uv_timer_start(&s->hangup_timer, on_hangup_check, OPD__HANGUP_CHECK_MS, OPD__HANGUP_CHECK_MS);
  uv_unref((uv_handle_t *)&s->hangup_timer);
  for (; s->nlisteners < s->cfg.num_listen; s->nlisteners++) {
    if ((rc = bind_listener(s, &s->listeners[s->nlisteners], s->cfg.listen[s->nlisteners])) < 0) {
      abort_start(s);
      return rc;
    }
  }
  if ((rc = opd__sched_start(&s->sched, s->cfg.workers, opd__execute, post_done, s)) < 0) {
    abort_start(s);
    return rc;
  }
  s->sched_started = true;
  /* workers read these only once the loop, started later, queued */
  s->sched.send = send_batch;
  s->sched.estimate = opd__job_estimate; /* [Note: Fair sharing of workers] in worker.h */
  s->sched.short_ns = (uint64_t)s->cfg.short_job_us * 1000;
  s->sched.worker_nice = (int)s->cfg.worker_nice;
  if ((rc = opd__gpu_start(s)) < 0) {
    abort_start(s);
    return rc;
  }
  if (s->cfg.status[0] && (rc = opd__status_start(s, s->cfg.status, &s->status)) < 0) {
    abort_start(s);
    return rc;
  }
  if ((rc = start_admin(s)) < 0) {
    if (s->status) opd__status_stop(s->status);
    abort_start(s);
    return rc;
  }
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  rc = pthread_create(&s->thread, NULL, loop_main, s);
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  if (rc != 0) {
    if (s->status) opd__status_stop(s->status);
    opd__admin_stop(s->admin);
    abort_start(s);
    return opd_error(OPD_ERESOURCE, "cannot start the event-loop thread: %s", strerror(rc));
  }
  /* only now: a start that failed later (an admin socket in use) listened on nothing */
  log_listeners(s);
  atomic_store(&s->ready, true); /* [Note: Session drain] */
  *out = s;
  return 0;
}

size_t opd_server_num_listeners(const opd_server *s) {
  return s->nlisteners;
}

const char *opd_server_listener_url(const opd_server *s, size_t i) {
  return i < s->nlisteners ? s->listeners[i].url : NULL;
}

int opd_server_listener_port(const opd_server *s, size_t i) {
  return i < s->nlisteners ? s->listeners[i].port : -1;
}

const char *opd_server_status_address(const opd_server *s) {
  return s->status ? opd__status_address(s->status) : NULL;
}

int opd_server_status_port(const opd_server *s) {
  return s->status ? opd__status_port(s->status) : -1;
}

void opd_server_stop(opd_server *s) {
  opd__admin_stop(s->admin);
  if (s->status) opd__status_stop(s->status);
  uv_async_send(&s->stop_async);
  pthread_join(s->thread, NULL);
  int rc = uv_loop_close(&s->loop);
  assert(rc == 0); /* every handle is closed */
  (void)rc;
  opd__sched_stop(&s->sched);
  opd__gpu_stop(s->gpu);
  opd_log(OPD_LOG_INFO, "stopped");
  free_server(s);
  opd_cpu_allocator_set_limit(0);
}

/* ---- what the status endpoint reads (server_view.h) ---- */

unsigned opd__server_cpu_workers(const opd_server *s) {
  return s->sched.cpu.nthreads;
}

opd__session_registry *opd__server_sessions(opd_server *s) {
  return &s->sessions;
}

struct opd__graphs *opd__server_graphs(opd_server *s) {
  return s->graphs;
}

const char *opd__server_unready_reason(const opd_server *s) {
  if (!atomic_load(&s->ready)) return "starting";
  return atomic_load(&s->draining) ? "draining" : NULL;
}

uint64_t opd__server_loop_requests(const opd_server *s) {
  return atomic_load_explicit(&s->loop_calls, memory_order_relaxed);
}

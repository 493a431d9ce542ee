/* opd_bench.c: opd-bench, a load generator for the opd daemon: calls per second and the
 * latency distribution of one workload over N connections, each keeping D requests in
 * flight (D = 1: unpipelined), for a duration after a warm-up or for a count per connection.
 *
 *   opd-bench [--url URL] [--workload add|ping|upload|download] [--connections N]
 *             [--pipeline D] [--duration S] [--warmup S] [--count N] [--size BYTES] [--raw]
 *
 * Workloads:
 *   add       aten::add.Tensor on two 1-element float32 tensors (handles in, a new handle
 *             out) through the client library (opd_add_async); the result handles are
 *             released 64 at a time by a pipelined release that is not counted as a call.
 *             With --raw: the same requests over raw sockets (below), which tells the
 *             daemon's cost from the client library's
 *   ping      Ping with an empty payload (opd_client_ping_async); with --raw over raw
 *             sockets
 *   upload    opd_client_upload_async of a float32 tensor of --size bytes (default 64 MiB),
 *             each released after it is answered
 *   download  opd_client_download_async of one such tensor into a buffer per slot
 * Raw sockets speak proto/opd.proto directly, as redis-benchmark speaks RESP: requests are
 * framed into one buffer and written together, each response is decoded (protobuf-c) and
 * its id and kind checked.
 * Threads: one, like redis-benchmark's single event loop: it poll()s every connection's
 * socket (opd_client_fd, or the raw socket) and runs the ready ones' I/O
 * (opd_client_poll(c, 0), or the raw reader).
 *
 * Output: one line on stdout, key=value pairs:
 *   opd-bench workload=add client=lib url=tcp://127.0.0.1:7470 connections=1 pipeline=1
 *   threads=1 calls=123456 seconds=5.000 calls_per_s=24691 p50_us=38.2 p99_us=55.1
 *   mb_per_s=0.0 errors=0
 * (one line); mb_per_s is payload throughput in 10^6 bytes per second (upload, download).
 * Latency: from a request's submission to its completion, so with D > 1 it includes the
 * time queued behind the other D - 1; the clock is read once per event-loop round (see
 * round_now), as redis-benchmark reads it once per batch of replies. The exit status is 1 when a
 * request failed. */
#include <assert.h>
#include <errno.h>
#include <getopt.h>
#include <netdb.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <netinet/in.h>
#include <netinet/tcp.h>

#include "opd.pb-c.h"
#include "opd/client.h"

#define BENCH_NAME "opd-bench"
#include "bench_util.h"

enum workload { W_ADD, W_PING, W_UPLOAD, W_DOWNLOAD };
static const char *const workload_names[] = {"add", "ping", "upload", "download"};

enum { RELEASE_BATCH = 64, MAX_CONNECTIONS = 1024, MAX_PIPELINE = 4096 };
/* raw add: releases in flight at once (one per RELEASE_BATCH calls, and one more) */
enum { RELEASES_OUT = MAX_PIPELINE / RELEASE_BATCH + 2 };

/* Phases: warm-up (nothing recorded), measuring, stopping (no new submissions). */
enum { PHASE_WARMUP, PHASE_MEASURE, PHASE_STOP };

typedef struct options {
  const char *url;
  enum workload workload;
  int connections, pipeline, threads;
  double duration, warmup;
  long count; /* per connection; 0: run for the duration */
  bool raw;   /* raw sockets instead of the client library (add, ping) */
  size_t size;
} options;

static options opt = {
    .url = OPD_CLIENT_DEFAULT_URL,
    .workload = W_ADD,
    .connections = 1,
    .pipeline = 1,
    .duration = 5,
    .warmup = 1,
    .size = 64u << 20,
};

static atomic_int phase;

/* The time of the current event-loop round: read once, when first needed, and shared by
 * every request submitted or completed in the round, as redis-benchmark reads its clock
 * once per batch of replies (the clock costs as much as a pipelined call's share of the
 * client library). Each loop round starts with round_start(). */
static _Thread_local uint64_t round_ns;

static void round_start(void) {
  round_ns = 0;
}

static uint64_t round_now(void) {
  if (round_ns == 0) round_ns = now_ns();
  return round_ns;
}

/* ---- a connection ---- */

typedef struct conn conn;

typedef struct slot {
  conn *cn;
  uint64_t t0;
  void *buf; /* download destination */
} slot;

struct conn {
  /* the client library (add, upload, download) */
  opd_client *c;
  opd_client_tensor a, b; /* add's inputs; download's tensor */
  /* raw sockets (ping and add with --raw) */
  int fd;
  uint8_t *rbuf;
  size_t rlen, rcap;
  uint64_t next_id, expect_id;
  uint64_t release_ids[RELEASES_OUT]; /* of the releases in flight, oldest first */
  unsigned release_head, releases;
  /* both */
  slot *slots;
  long submitted, completed, in_flight;
  long calls; /* completions while measuring */
  long errors;
  uint64_t last_done_ns;
  samples lat;
  opd_client_tensor batch[RELEASE_BATCH];
  size_t nbatch;
  const void *payload; /* upload's bytes (shared, read-only) */
};

static bool may_submit(const conn *cn) {
  if (atomic_load_explicit(&phase, memory_order_relaxed) == PHASE_STOP) return false;
  return opt.count == 0 || cn->submitted < opt.count;
}

/* A measured request completed (submitted at t0). */
static void record(conn *cn, uint64_t t0) {
  uint64_t t = round_now();
  cn->completed++;
  cn->in_flight--;
  cn->last_done_ns = t;
  if (atomic_load_explicit(&phase, memory_order_relaxed) == PHASE_MEASURE) {
    cn->calls++;
    samples_add(&cn->lat, t - t0);
  }
}

static void report_error(conn *cn, const char *what, int rc, const char *msg) {
  if (cn->errors++ == 0) fprintf(stderr, "opd-bench: %s: %d %s\n", what, rc, msg);
}

static void release_done(opd_future *f, void *user) {
  if (opd_future_status(f) != 0)
    report_error(user, "release", opd_future_status(f), opd_future_error(f));
}

static void flush_releases(conn *cn) {
  if (cn->nbatch == 0) return;
  int rc = opd_client_release_async(cn->c, cn->batch, cn->nbatch, release_done, cn, NULL);
  if (rc != 0) report_error(cn, "release", rc, opd_client_last_error());
  cn->nbatch = 0;
}

static void keep_handle(conn *cn, opd_client_tensor h) {
  cn->batch[cn->nbatch++] = h;
  if (cn->nbatch == RELEASE_BATCH) flush_releases(cn);
}

static void lib_submit(slot *s);

static void lib_done(opd_future *f, void *user) {
  slot *s = user;
  conn *cn = s->cn;
  record(cn, s->t0);
  int rc = opd_future_status(f);
  if (rc != 0) {
    report_error(cn, workload_names[opt.workload], rc, opd_future_error(f));
  } else if (opt.workload == W_ADD) {
    keep_handle(cn, opd_future_tensor(f, 0));
  } else if (opt.workload == W_UPLOAD) {
    keep_handle(cn, opd_future_handle(f));
    flush_releases(cn); /* a 64 MiB tensor is not kept waiting for 63 more */
  } else if (opt.workload == W_DOWNLOAD) {
    const opd_client_tensor_info *info = opd_future_tensor_info(f);
    if (!info || info->nbytes != opt.size) report_error(cn, "download", 0, "wrong size");
  }
  if (may_submit(cn)) lib_submit(s);
}

static void lib_submit(slot *s) {
  conn *cn = s->cn;
  int64_t n = (int64_t)(opt.size / 4);
  int rc = 0;
  s->t0 = round_now();
  switch (opt.workload) {
  case W_ADD: rc = opd_add_async(cn->c, cn->a, cn->b, NULL, lib_done, s, NULL); break;
  case W_UPLOAD:
    rc = opd_client_upload_async(cn->c, OPD_FLOAT32, &n, 1, cn->payload, opt.size, NULL, lib_done,
                                 s, NULL);
    break;
  case W_DOWNLOAD:
    rc = opd_client_download_async(cn->c, cn->a, s->buf, opt.size, lib_done, s, NULL);
    break;
  case W_PING: rc = opd_client_ping_async(cn->c, NULL, 0, lib_done, s, NULL); break;
  }
  if (rc != 0) {
    report_error(cn, "submit", rc, opd_client_last_error());
    return;
  }
  cn->submitted++;
  cn->in_flight++;
}

static void lib_open(conn *cn) {
  if (opd_client_connect(opt.url, &(opd_client_options){.client_name = "opd-bench"}, &cn->c) != 0)
    die("connect: %s", opd_client_last_error());
  int64_t one = 1;
  float x = 1, y = 2;
  if (opt.workload == W_ADD) {
    if (opd_client_upload(cn->c, OPD_FLOAT32, &one, 1, &x, 4, NULL, &cn->a) != 0 ||
        opd_client_upload(cn->c, OPD_FLOAT32, &one, 1, &y, 4, NULL, &cn->b) != 0)
      die("upload: %s", opd_client_last_error());
    opd_client_tensor r;
    float got = 0;
    if (opd_add(cn->c, cn->a, cn->b, NULL, &r) != 0 ||
        opd_client_download(cn->c, r, &got, 4, NULL) != 0 || opd_client_release(cn->c, &r, 1) != 0)
      die("add: %s", opd_client_last_error());
    if (got != 3) die("%s", "add: 1 + 2 is not 3");
  } else if (opt.workload == W_DOWNLOAD) {
    int64_t n = (int64_t)(opt.size / 4);
    if (opd_client_upload(cn->c, OPD_FLOAT32, &n, 1, cn->payload, opt.size, NULL, &cn->a) != 0)
      die("upload: %s", opd_client_last_error());
    for (int i = 0; i < opt.pipeline; i++)
      if (!(cn->slots[i].buf = malloc(opt.size ? opt.size : 1))) die("%s", "out of memory");
  }
}

static void lib_close(conn *cn) {
  flush_releases(cn);
  if (cn->a) opd_client_release_async(cn->c, &cn->a, 1, release_done, cn, NULL);
  if (cn->b) opd_client_release_async(cn->c, &cn->b, 1, release_done, cn, NULL);
  int rc = opd_client_wait_all(cn->c);
  if (rc != 0) report_error(cn, "wait_all", rc, opd_client_last_error());
  opd_client_close(cn->c);
  for (int i = 0; i < opt.pipeline; i++) free(cn->slots[i].buf);
}

/* ---- raw sockets: ping and add with --raw ---- */

static int raw_connect(const char *url) {
  int fd = -1;
  if (strncmp(url, "unix://", 7) == 0) {
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    if (strlen(url + 7) >= sizeof a.sun_path) die("socket path too long: %s", url);
    strcpy(a.sun_path, url + 7);
    fd = socket(AF_UNIX, SOCK_STREAM, 0);
    if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof a) != 0)
      die("cannot connect to %s", url);
    return fd;
  }
  if (strncmp(url, "tcp://", 6) != 0) die("not a tcp:// or unix:// URL: %s", url);
  char host[256];
  snprintf(host, sizeof host, "%s", url + 6);
  char *colon = strrchr(host, ':');
  if (!colon) die("no port in %s", url);
  *colon = 0;
  const char *port = colon + 1, *h = host;
  if (host[0] == '[') {
    h = host + 1;
    char *end = strchr(host, ']');
    if (end) *end = 0;
  }
  if (strcmp(h, "localhost") == 0) h = "127.0.0.1";
  struct addrinfo hints = {.ai_socktype = SOCK_STREAM, .ai_flags = AI_NUMERICHOST}, *ai;
  if (getaddrinfo(h, port, &hints, &ai) != 0) die("bad address in %s", url);
  fd = socket(ai->ai_family, SOCK_STREAM, 0);
  if (fd < 0 || connect(fd, ai->ai_addr, ai->ai_addrlen) != 0) die("cannot connect to %s", url);
  freeaddrinfo(ai);
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  return fd;
}

static void raw_write(int fd, const uint8_t *p, size_t n) {
  while (n) {
    ssize_t k = write(fd, p, n);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) die("write: %s", strerror(errno));
    p += k;
    n -= (size_t)k;
  }
}

/* An output buffer: requests are framed into it and written together. */
typedef struct outbuf {
  uint8_t data[16384];
  size_t len;
} outbuf;

/* Frames r (with the connection's next id) into out, writing out first when it is full. */
static void raw_put(conn *cn, outbuf *out, Opd__V1__Request *r) {
  r->id = cn->next_id++;
  size_t n = opd__v1__request__get_packed_size(r);
  if (n + 4 > sizeof out->data) die("%s", "a request too large");
  if (out->len + n + 4 > sizeof out->data) {
    raw_write(cn->fd, out->data, out->len);
    out->len = 0;
  }
  uint8_t *h = out->data + out->len;
  h[0] = (uint8_t)n, h[1] = (uint8_t)(n >> 8), h[2] = (uint8_t)(n >> 16), h[3] = (uint8_t)(n >> 24);
  opd__v1__request__pack(r, h + 4);
  out->len += n + 4;
}

static void raw_flush(conn *cn, outbuf *out) {
  if (out->len) raw_write(cn->fd, out->data, out->len);
  out->len = 0;
}

/* Releases the result handles batched so far (its Ack is not a measured call). */
static void raw_release(conn *cn, outbuf *out) {
  Opd__V1__Release rel = OPD__V1__RELEASE__INIT;
  rel.n_handles = cn->nbatch;
  rel.handles = cn->batch;
  Opd__V1__Request r = OPD__V1__REQUEST__INIT;
  r.body_case = OPD__V1__REQUEST__BODY_RELEASE;
  r.release = &rel;
  if (cn->releases == RELEASES_OUT) die("%s", "too many releases in flight");
  raw_put(cn, out, &r);
  cn->release_ids[(cn->release_head + cn->releases++) % RELEASES_OUT] = r.id;
  cn->nbatch = 0;
}

/* Sends k measured requests: pings, or adds of the connection's two tensors. */
static void raw_send(conn *cn, long k) {
  outbuf out;
  out.len = 0;
  Opd__V1__Ping ping = OPD__V1__PING__INIT;
  Opd__V1__IValue va = OPD__V1__IVALUE__INIT, vb = OPD__V1__IVALUE__INIT;
  Opd__V1__IValue *args[] = {&va, &vb};
  va.value_case = vb.value_case = OPD__V1__IVALUE__VALUE_TENSOR;
  va.tensor = cn->a;
  vb.tensor = cn->b;
  Opd__V1__Call call = OPD__V1__CALL__INIT;
  call.op = "aten::add.Tensor";
  call.n_args = 2;
  call.args = args;
  Opd__V1__Request r = OPD__V1__REQUEST__INIT;
  if (opt.workload == W_PING) {
    r.body_case = OPD__V1__REQUEST__BODY_PING;
    r.ping = &ping;
  } else {
    r.body_case = OPD__V1__REQUEST__BODY_CALL;
    r.call = &call;
  }
  uint64_t t = round_now();
  for (long i = 0; i < k; i++) {
    cn->slots[cn->submitted % opt.pipeline].t0 = t;
    raw_put(cn, &out, &r);
    cn->submitted++;
    cn->in_flight++;
  }
  raw_flush(cn, &out);
}

/* Decodes the whole frames read: how many measured requests completed. */
static long raw_consume(conn *cn) {
  size_t pos = 0;
  long done = 0;
  outbuf out;
  out.len = 0;
  while (cn->rlen - pos >= 4) {
    const uint8_t *h = cn->rbuf + pos;
    size_t n = (size_t)h[0] | (size_t)h[1] << 8 | (size_t)h[2] << 16 | (size_t)h[3] << 24;
    if (n > cn->rcap - 4) die("%s", "a response frame too large");
    if (cn->rlen - pos - 4 < n) break;
    Opd__V1__Response *r = opd__v1__response__unpack(NULL, n, h + 4);
    if (!r) die("%s", "an undecodable response");
    if (r->id != cn->expect_id++) die("%s", "a response out of order");
    bool is_error = r->body_case == OPD__V1__RESPONSE__BODY_ERROR;
    if (cn->releases && r->id == cn->release_ids[cn->release_head % RELEASES_OUT]) {
      cn->release_head++;
      cn->releases--;
      if (r->body_case != OPD__V1__RESPONSE__BODY_ACK)
        report_error(cn, "release", (int)r->body_case, is_error ? r->error->message : "no ack");
    } else {
      if (is_error)
        report_error(cn, workload_names[opt.workload], (int)r->error->code, r->error->message);
      else if (opt.workload == W_PING && r->body_case != OPD__V1__RESPONSE__BODY_PONG)
        report_error(cn, "ping", (int)r->body_case, "not a pong");
      else if (opt.workload == W_ADD &&
               (r->body_case != OPD__V1__RESPONSE__BODY_CALL || r->call->n_results != 1 ||
                r->call->results[0]->value_case != OPD__V1__IVALUE__VALUE_TENSOR))
        report_error(cn, "add", (int)r->body_case, "not one tensor");
      else if (opt.workload == W_ADD)
        cn->batch[cn->nbatch++] = r->call->results[0]->tensor;
      record(cn, cn->slots[cn->completed % opt.pipeline].t0);
      done++;
      if (cn->nbatch == RELEASE_BATCH || (cn->nbatch && cn->in_flight == 0 && !may_submit(cn)))
        raw_release(cn, &out);
    }
    opd__v1__response__free_unpacked(r, NULL);
    pos += 4 + n;
  }
  raw_flush(cn, &out);
  memmove(cn->rbuf, cn->rbuf + pos, cn->rlen - pos);
  cn->rlen -= pos;
  return done;
}

/* Reads what is there and refills the pipeline. False at end of stream. */
static bool raw_step(conn *cn) {
  ssize_t k = read(cn->fd, cn->rbuf + cn->rlen, cn->rcap - cn->rlen);
  if (k < 0 && (errno == EINTR || errno == EAGAIN)) return true;
  if (k <= 0) return false;
  cn->rlen += (size_t)k;
  long room = raw_consume(cn);
  if (!may_submit(cn)) return true;
  if (opt.count && opt.count - cn->submitted < room) room = opt.count - cn->submitted;
  if (room) raw_send(cn, room);
  return true;
}

/* Sends r (and `raw` bytes after it) and waits for its response. */
static Opd__V1__Response *raw_round_trip(conn *cn, Opd__V1__Request *r, const void *raw,
                                         size_t raw_len) {
  outbuf out;
  out.len = 0;
  raw_put(cn, &out, r);
  raw_flush(cn, &out);
  if (raw_len) raw_write(cn->fd, raw, raw_len);
  for (;;) {
    if (cn->rlen >= 4) {
      size_t n = (size_t)cn->rbuf[0] | (size_t)cn->rbuf[1] << 8 | (size_t)cn->rbuf[2] << 16 |
                 (size_t)cn->rbuf[3] << 24;
      if (n > cn->rcap - 4) die("%s", "a response frame too large");
      if (cn->rlen >= 4 + n) {
        Opd__V1__Response *resp = opd__v1__response__unpack(NULL, n, cn->rbuf + 4);
        if (!resp || resp->id != cn->expect_id++) die("%s", "a bad response");
        memmove(cn->rbuf, cn->rbuf + 4 + n, cn->rlen - 4 - n);
        cn->rlen -= 4 + n;
        return resp;
      }
    }
    ssize_t k = read(cn->fd, cn->rbuf + cn->rlen, cn->rcap - cn->rlen);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) die("%s", "the daemon closed the connection");
    cn->rlen += (size_t)k;
  }
}

/* Uploads a 1-element float32 tensor: its handle. */
static uint64_t raw_upload(conn *cn, float x) {
  int64_t one = 1;
  Opd__V1__Upload u = OPD__V1__UPLOAD__INIT;
  u.dtype = OPD__V1__DTYPE__FLOAT32;
  u.n_shape = 1;
  u.shape = &one;
  u.nbytes = 4;
  Opd__V1__Request r = OPD__V1__REQUEST__INIT;
  r.body_case = OPD__V1__REQUEST__BODY_UPLOAD;
  r.upload = &u;
  Opd__V1__Response *resp = raw_round_trip(cn, &r, &x, 4);
  if (resp->body_case != OPD__V1__RESPONSE__BODY_UPLOAD) die("%s", "upload refused");
  uint64_t h = resp->upload->handle;
  opd__v1__response__free_unpacked(resp, NULL);
  return h;
}

static void raw_open(conn *cn) {
  cn->fd = raw_connect(opt.url);
  cn->rcap = 1 << 16;
  if (!(cn->rbuf = malloc(cn->rcap))) die("%s", "out of memory");
  cn->next_id = cn->expect_id = 1;
  Opd__V1__Hello hl = OPD__V1__HELLO__INIT;
  hl.protocol_version = 1;
  hl.client_name = "opd-bench";
  Opd__V1__Request r = OPD__V1__REQUEST__INIT;
  r.body_case = OPD__V1__REQUEST__BODY_HELLO;
  r.hello = &hl;
  Opd__V1__Response *resp = raw_round_trip(cn, &r, NULL, 0);
  if (resp->body_case != OPD__V1__RESPONSE__BODY_HELLO) die("%s", "hello refused");
  opd__v1__response__free_unpacked(resp, NULL);
  if (opt.workload == W_ADD) {
    cn->a = raw_upload(cn, 1);
    cn->b = raw_upload(cn, 2);
  }
}

/* ---- threads ---- */

typedef struct worker {
  pthread_t thread;
  conn *conns;
  int nconns;
  pthread_barrier_t *ready;
} worker;

/* This thread's connections: it runs their I/O (and the callbacks that refill the
 * pipelines) as redis-benchmark does, one event loop for all: poll() on their sockets
 * (opd_client_fd), then opd_client_poll(c, 0) on the ready ones. */
static void *lib_thread(worker *w) {
  struct pollfd *pf = calloc((size_t)w->nconns, sizeof *pf);
  if (!pf) die("%s", "out of memory");
  for (int i = 0; i < w->nconns; i++) {
    conn *cn = &w->conns[i];
    for (int k = 0; k < opt.pipeline && may_submit(cn); k++) lib_submit(&cn->slots[k]);
  }
  for (;;) {
    bool busy = false;
    for (int i = 0; i < w->nconns; i++) {
      conn *cn = &w->conns[i];
      busy |= cn->in_flight > 0;
      pf[i] = (struct pollfd){.fd = cn->in_flight > 0 ? opd_client_fd(cn->c) : -1,
                              .events =
                                  (short)(POLLIN | (opd_client_wants_write(cn->c) ? POLLOUT : 0))};
    }
    if (!busy) break;
    if (poll(pf, (nfds_t)w->nconns, 1000) < 0 && errno != EINTR) die("poll: %s", strerror(errno));
    round_start();
    for (int i = 0; i < w->nconns; i++) {
      conn *cn = &w->conns[i];
      if (!pf[i].revents) continue;
      int rc = opd_client_poll(cn->c, 0);
      if (rc < 0) {
        report_error(cn, "connection", rc, opd_client_last_error());
        cn->in_flight = 0;
      }
    }
  }
  for (int i = 0; i < w->nconns; i++) lib_close(&w->conns[i]);
  free(pf);
  return NULL;
}

static void *raw_thread(worker *w) {
  struct pollfd *pf = calloc((size_t)w->nconns, sizeof *pf);
  if (!pf) die("%s", "out of memory");
  for (int i = 0; i < w->nconns; i++) {
    pf[i] = (struct pollfd){.fd = w->conns[i].fd, .events = POLLIN};
    raw_send(&w->conns[i], opt.count && opt.count < opt.pipeline ? opt.count : opt.pipeline);
  }
  for (;;) {
    bool busy = false;
    for (int i = 0; i < w->nconns; i++) busy |= w->conns[i].in_flight > 0 || w->conns[i].releases;
    if (!busy) break;
    if (poll(pf, (nfds_t)w->nconns, 1000) < 0 && errno != EINTR) die("poll: %s", strerror(errno));
    round_start();
    for (int i = 0; i < w->nconns; i++) {
      conn *cn = &w->conns[i];
      if (!(pf[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      if (!raw_step(cn)) {
        report_error(cn, workload_names[opt.workload], 0, "the daemon closed the connection");
        cn->in_flight = 0;
        cn->releases = 0;
        pf[i].fd = -1;
      }
    }
  }
  for (int i = 0; i < w->nconns; i++) {
    close(w->conns[i].fd);
    free(w->conns[i].rbuf);
  }
  free(pf);
  return NULL;
}

static void *worker_main(void *arg) {
  worker *w = arg;
  for (int i = 0; i < w->nconns; i++) {
    if (opt.raw)
      raw_open(&w->conns[i]);
    else
      lib_open(&w->conns[i]);
  }
  pthread_barrier_wait(w->ready); /* every connection is open */
  pthread_barrier_wait(w->ready); /* go */
  return opt.raw ? raw_thread(w) : lib_thread(w);
}

/* ---- main ---- */

static void usage(FILE *f) {
  fprintf(f, "usage: opd-bench [--url URL] [--workload add|ping|upload|download] "
             "[--connections N]\n"
             "                 [--pipeline D] [--duration S] [--warmup S] [--count N] "
             "[--size BYTES]\n"
             "                 [--raw]\n");
}

static void parse_args(int argc, char **argv) {
  static const struct option longopts[] = {
      {"url", required_argument, NULL, 'u'},
      {"workload", required_argument, NULL, 'w'},
      {"connections", required_argument, NULL, 'c'},
      {"pipeline", required_argument, NULL, 'P'},
      {"duration", required_argument, NULL, 'd'},
      {"warmup", required_argument, NULL, 'W'},
      {"count", required_argument, NULL, 'n'},
      {"size", required_argument, NULL, 's'},
      {"raw", no_argument, NULL, 'r'},
      {"help", no_argument, NULL, 'h'},
      {0},
  };
  int ch;
  while ((ch = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
    switch (ch) {
    case 'u': opt.url = optarg; break;
    case 'w':
      opt.workload = (enum workload)parse_name(optarg, "workload", workload_names, 4);
      break;
    case 'c': opt.connections = (int)parse_long(optarg, "--connections", 1, MAX_CONNECTIONS); break;
    case 'P': opt.pipeline = (int)parse_long(optarg, "--pipeline", 1, MAX_PIPELINE); break;
    case 'd': opt.duration = parse_seconds(optarg, "--duration"); break;
    case 'W': opt.warmup = parse_seconds(optarg, "--warmup"); break;
    case 'n': opt.count = parse_long(optarg, "--count", 1, 1L << 40); break;
    case 's': opt.size = (size_t)parse_long(optarg, "--size", 4, 1L << 34) & ~(size_t)3; break;
    case 'r': opt.raw = true; break;
    case 'h': usage(stdout); exit(0);
    default: usage(stderr); exit(2);
    }
  }
  if (optind < argc) {
    usage(stderr);
    exit(2);
  }
  if (opt.raw && opt.workload != W_PING && opt.workload != W_ADD)
    die("%s", "--raw drives add and ping only");
  /* raw sockets: all on one thread; the library: a thread per connection */
  opt.threads = 1; /* one event loop for every connection, like redis-benchmark */
}

int main(int argc, char **argv) {
  parse_args(argc, argv);
  conn *conns = calloc((size_t)opt.connections, sizeof *conns);
  worker *workers = calloc((size_t)opt.threads, sizeof *workers);
  void *payload = NULL;
  if (!conns || !workers) die("%s", "out of memory");
  if (opt.workload == W_UPLOAD || opt.workload == W_DOWNLOAD) {
    if (!(payload = malloc(opt.size))) die("%s", "out of memory");
    memset(payload, 0x3f, opt.size);
  }
  for (int i = 0; i < opt.connections; i++) {
    conns[i].payload = payload;
    conns[i].fd = -1;
    if (!(conns[i].slots = calloc((size_t)opt.pipeline, sizeof *conns[i].slots)))
      die("%s", "out of memory");
    for (int k = 0; k < opt.pipeline; k++) conns[i].slots[k].cn = &conns[i];
  }
  pthread_barrier_t ready;
  pthread_barrier_init(&ready, NULL, (unsigned)opt.threads + 1);
  atomic_store(&phase, opt.count ? PHASE_MEASURE : PHASE_WARMUP);
  int next = 0;
  for (int t = 0; t < opt.threads; t++) {
    worker *w = &workers[t];
    w->conns = &conns[next];
    w->nconns = opt.connections / opt.threads + (t < opt.connections % opt.threads);
    w->ready = &ready;
    next += w->nconns;
    if (pthread_create(&w->thread, NULL, worker_main, w) != 0) die("%s", "cannot start a thread");
  }
  pthread_barrier_wait(&ready);
  uint64_t t1 = now_ns(), t2 = t1;
  pthread_barrier_wait(&ready);
  if (opt.count == 0) {
    struct timespec ws = {(time_t)opt.warmup,
                          (long)((opt.warmup - (double)(time_t)opt.warmup) * 1e9)};
    nanosleep(&ws, NULL);
    t1 = now_ns();
    atomic_store(&phase, PHASE_MEASURE);
    struct timespec ds = {(time_t)opt.duration,
                          (long)((opt.duration - (double)(time_t)opt.duration) * 1e9)};
    nanosleep(&ds, NULL);
    atomic_store(&phase, PHASE_STOP);
    t2 = now_ns();
  }
  for (int t = 0; t < opt.threads; t++) pthread_join(workers[t].thread, NULL);
  if (opt.count) {
    for (int i = 0; i < opt.connections; i++)
      if (conns[i].last_done_ns > t2) t2 = conns[i].last_done_ns;
  }
  samples all = {0};
  long calls = 0, errors = 0;
  for (int i = 0; i < opt.connections; i++) {
    conn *cn = &conns[i];
    calls += cn->calls;
    errors += cn->errors;
    for (size_t k = 0; k < cn->lat.n; k++) samples_add(&all, cn->lat.v[k]);
    free(cn->lat.v);
    free(cn->slots);
  }
  samples_sort(&all);
  double secs = (double)(t2 - t1) * 1e-9;
  double rate = secs > 0 ? (double)calls / secs : 0;
  double mbps =
      opt.workload == W_UPLOAD || opt.workload == W_DOWNLOAD ? rate * (double)opt.size / 1e6 : 0;
  printf("opd-bench workload=%s client=%s url=%s connections=%d pipeline=%d threads=%d "
         "calls=%ld seconds=%.3f calls_per_s=%.0f p50_us=%.1f p99_us=%.1f mb_per_s=%.1f "
         "errors=%ld\n",
         workload_names[opt.workload], opt.raw ? "raw" : "lib", opt.url, opt.connections,
         opt.pipeline, opt.threads, calls, secs, rate, quantile_us(&all, 0.50),
         quantile_us(&all, 0.99), mbps, errors);
  free(all.v);
  free(conns);
  free(workers);
  free(payload);
  pthread_barrier_destroy(&ready);
  return errors ? 1 : 0;
}

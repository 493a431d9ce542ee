/* test_rpc.c: the daemon under load and abuse, started in process (opd/server.h) and driven
 * through the client library and raw sockets: 32 concurrent clients each making 10,000
 * pipelined aten::add.Tensor calls with every result downloaded and checked; a deep pipeline
 * of mixed requests (calls, failing calls, uploads, downloads, releases) completing in
 * submission order with the right values; client processes SIGKILLed in the middle of a
 * frame, of an upload's raw bytes and of a long pipelined burst; a client closing with work
 * queued (the daemon cancels it). After each, the daemon serves a new client and the
 * session's tensors are all released: the CPU allocator's bytes in use return to the
 * baseline (LeakSanitizer checks the rest). The protocol-level matrix of bad input is in
 * test_server.c; the client library's own behaviour in test_client.c. */
#include <check.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "opd.pb-c.h"
#include "opd/allocator.h"
#include "opd/client.h"
#include "opd/error.h"
#include "opd/server.h"

/* The load test's size: the issue asks for 32 clients x 10,000 calls; keep it. Under
 * ThreadSanitizer, which looks for races and not for load, 2,500 each: the full load takes
 * 100 s there, the longest step of CI (Release and ASan+UBSan run it whole). */
#if defined(__SANITIZE_THREAD__)
#define RPC_CALLS_EACH 2500
#else
#define RPC_CALLS_EACH 10000
#endif
enum {
  RPC_CLIENTS = 32,
  RPC_CALLS = RPC_CALLS_EACH,
  RPC_WINDOW = 64,  /* add calls each client keeps in flight */
  RPC_RELEASE = 64, /* result handles released per request */
  RPC_NUMEL = 4,
};

/* ---- the daemon and its memory ---- */

static opd_server *start_daemon(uint32_t workers) {
  opd_server_config cfg;
  opd_server_config_init(&cfg);
  opd_server_config_clear_listen(&cfg);
  ck_assert_int_eq(opd_server_config_add_listen(&cfg, "tcp://127.0.0.1:0"), 0);
  cfg.workers = workers;
  cfg.log_level = OPD_LOG_ERROR;
  opd_server *s = NULL;
  int rc = opd_server_start(&cfg, &s);
  opd_server_config_destroy(&cfg);
  ck_assert_msg(rc == 0, "opd_server_start: %s", opd_last_error());
  return s;
}

static opd_client *connect_daemon(opd_server *s) {
  opd_client *c = NULL;
  int rc = opd_client_connect(opd_server_listener_url(s, 0), NULL, &c);
  ck_assert_msg(rc == 0, "connect %s: %s", opd_server_listener_url(s, 0), opd_client_last_error());
  return c;
}

static void sleep_ms(long ms) {
  struct timespec ts = {ms / 1000, (ms % 1000) * 1000000};
  nanosleep(&ts, NULL);
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static uint64_t cpu_in_use(void) {
  opd_memory_stats st;
  opd_memory_stats_get(OPD_DEVICE_CPU, &st);
  return st.in_use;
}

/* Waits (up to 10 s) for the CPU allocator's bytes in use to come back to `want`. */
static void expect_in_use(uint64_t want) {
  for (int i = 0; i < 1000 && cpu_in_use() != want; i++) sleep_ms(10);
  ck_assert_uint_eq(cpu_in_use(), want);
}

/* Waits (up to 10 s) until the bytes in use reach at least `want`. */
static void wait_in_use_at_least(uint64_t want, const char *what) {
  for (int i = 0; i < 1000 && cpu_in_use() < want; i++) sleep_ms(10);
  ck_assert_msg(cpu_in_use() >= want, "%s: %llu bytes in use, expected at least %llu", what,
                (unsigned long long)cpu_in_use(), (unsigned long long)want);
}

/* A new client is served: [1, 2] + 2 * [3, 4] = [7, 10]. */
static void expect_served(opd_server *s) {
  opd_client *c = connect_daemon(s);
  int64_t shape[] = {2};
  float a[] = {1, 2}, b[] = {3, 4}, got[2] = {0};
  opd_client_tensor ta, tb, r;
  ck_assert_int_eq(opd_client_upload(c, OPD_FLOAT32, shape, 1, a, sizeof a, NULL, &ta), 0);
  ck_assert_int_eq(opd_client_upload(c, OPD_FLOAT32, shape, 1, b, sizeof b, NULL, &tb), 0);
  ck_assert_int_eq(opd_add(c, ta, tb, OPD_SCALAR_INT(2), &r), 0);
  ck_assert_int_eq(opd_client_download(c, r, got, sizeof got, NULL), 0);
  ck_assert(got[0] == 7 && got[1] == 10);
  opd_client_close(c);
}

/* ---- 32 clients x 10,000 calls ----
 * Each client thread keeps RPC_WINDOW adds in flight: out_i = a + i * b (alpha = i). An add's
 * callback submits the download of its result and the next add; the download's callback
 * checks the values and batches the handle for release. Failures are counted (Check's
 * asserts belong on the test's thread) with the first message kept. */

typedef struct load_client load_client;

typedef struct load_call {
  load_client *lc;
  int64_t i;
  opd_client_tensor result;
  float out[RPC_NUMEL];
} load_call;

struct load_client {
  opd_server *srv;
  int index;
  opd_client *c;
  opd_client_tensor a, b;
  float xa[RPC_NUMEL], xb[RPC_NUMEL];
  load_call *calls;
  int64_t next;    /* next add to submit */
  int64_t checked; /* results downloaded and checked */
  int64_t released;
  opd_client_tensor batch[RPC_RELEASE];
  size_t nbatch;
  int failures;
  char first_failure[256];
};

static void load_fail(load_client *lc, const char *what, int64_t i, int rc, const char *msg) {
  if (lc->failures++ == 0)
    snprintf(lc->first_failure, sizeof lc->first_failure, "client %d, call %lld: %s: %d %s",
             lc->index, (long long)i, what, rc, msg);
}

static void release_done(opd_future *f, void *user) {
  load_client *lc = user;
  if (opd_future_status(f) != 0)
    load_fail(lc, "release", -1, opd_future_status(f), opd_future_error(f));
}

static void flush_releases(load_client *lc) {
  if (lc->nbatch == 0) return;
  int rc = opd_client_release_async(lc->c, lc->batch, lc->nbatch, release_done, lc, NULL);
  if (rc != 0) load_fail(lc, "release submit", -1, rc, opd_client_last_error());
  lc->released += (int64_t)lc->nbatch;
  lc->nbatch = 0;
}

static void download_done(opd_future *f, void *user) {
  load_call *call = user;
  load_client *lc = call->lc;
  const opd_client_tensor_info *info = opd_future_tensor_info(f);
  if (opd_future_status(f) != 0) {
    load_fail(lc, "download", call->i, opd_future_status(f), opd_future_error(f));
  } else if (!info || info->dtype != OPD_FLOAT32 || info->ndim != 1 ||
             info->shape[0] != RPC_NUMEL) {
    load_fail(lc, "download", call->i, 0, "wrong dtype or shape");
  } else {
    for (int k = 0; k < RPC_NUMEL; k++) {
      /* exact: every value is a small multiple of 1/4 */
      double want = (double)lc->xa[k] + (double)call->i * (double)lc->xb[k];
      if ((double)call->out[k] != want) {
        char msg[96];
        snprintf(msg, sizeof msg, "element %d is %g, expected %g", k, call->out[k], want);
        load_fail(lc, "value", call->i, 0, msg);
        break;
      }
    }
  }
  lc->checked++;
  lc->batch[lc->nbatch++] = call->result;
  if (lc->nbatch == RPC_RELEASE || lc->checked == RPC_CALLS) flush_releases(lc);
}

static void submit_add(load_client *lc);

static void add_done(opd_future *f, void *user) {
  load_call *call = user;
  load_client *lc = call->lc;
  if (opd_future_status(f) != 0) {
    load_fail(lc, "add", call->i, opd_future_status(f), opd_future_error(f));
    lc->checked++;
  } else {
    call->result = opd_future_tensor(f, 0);
    int rc = opd_client_download_async(lc->c, call->result, call->out, sizeof call->out,
                                       download_done, call, NULL);
    if (rc != 0) {
      load_fail(lc, "download submit", call->i, rc, opd_client_last_error());
      lc->checked++;
    }
  }
  submit_add(lc);
}

static void submit_add(load_client *lc) {
  if (lc->next >= RPC_CALLS) return;
  load_call *call = &lc->calls[lc->next];
  *call = (load_call){.lc = lc, .i = lc->next};
  lc->next++;
  int rc = opd_add_async(lc->c, lc->a, lc->b, OPD_SCALAR_INT(call->i), add_done, call, NULL);
  if (rc != 0) {
    load_fail(lc, "add submit", call->i, rc, opd_client_last_error());
    lc->checked++;
  }
}

static void *load_main(void *arg) {
  load_client *lc = arg;
  int64_t shape[] = {RPC_NUMEL};
  if (opd_client_connect(opd_server_listener_url(lc->srv, 0), NULL, &lc->c) != 0) {
    load_fail(lc, "connect", -1, opd_client_last_error_code(), opd_client_last_error());
    return NULL;
  }
  if (opd_client_upload(lc->c, OPD_FLOAT32, shape, 1, lc->xa, sizeof lc->xa, NULL, &lc->a) != 0 ||
      opd_client_upload(lc->c, OPD_FLOAT32, shape, 1, lc->xb, sizeof lc->xb, NULL, &lc->b) != 0) {
    load_fail(lc, "upload", -1, opd_client_last_error_code(), opd_client_last_error());
    opd_client_close(lc->c);
    return NULL;
  }
  for (int k = 0; k < RPC_WINDOW; k++) submit_add(lc);
  while (lc->checked < RPC_CALLS) {
    int rc = opd_client_poll(lc->c, 10000);
    if (rc < 0) {
      load_fail(lc, "poll", lc->checked, rc, opd_client_last_error());
      break;
    }
  }
  int rc = opd_client_wait_all(lc->c);
  if (rc != 0) load_fail(lc, "wait_all", -1, rc, opd_client_last_error());
  if (opd_client_release(lc->c, (opd_client_tensor[]){lc->a, lc->b}, 2) != 0)
    load_fail(lc, "release inputs", -1, opd_client_last_error_code(), opd_client_last_error());
  opd_client_close(lc->c);
  return NULL;
}

START_TEST(test_concurrent_clients) {
  opd_server *s = start_daemon(2);
  uint64_t base = cpu_in_use();
  load_client *lcs = calloc(RPC_CLIENTS, sizeof *lcs);
  pthread_t th[RPC_CLIENTS];
  ck_assert_ptr_nonnull(lcs);
  for (int t = 0; t < RPC_CLIENTS; t++) {
    load_client *lc = &lcs[t];
    lc->srv = s;
    lc->index = t;
    const float xa[RPC_NUMEL] = {(float)t, (float)t + 0.5f, -(float)t, 1000 + (float)t};
    const float xb[RPC_NUMEL] = {1, 2, 0.25f, -3};
    memcpy(lc->xa, xa, sizeof xa);
    memcpy(lc->xb, xb, sizeof xb);
    lc->calls = calloc(RPC_CALLS, sizeof *lc->calls);
    ck_assert_ptr_nonnull(lc->calls);
    ck_assert_int_eq(pthread_create(&th[t], NULL, load_main, lc), 0);
  }
  int64_t total = 0;
  for (int t = 0; t < RPC_CLIENTS; t++) {
    pthread_join(th[t], NULL);
    ck_assert_msg(lcs[t].failures == 0, "%d failures; the first: %s", lcs[t].failures,
                  lcs[t].first_failure);
    ck_assert_int_eq(lcs[t].checked, RPC_CALLS);
    ck_assert_int_eq(lcs[t].released, RPC_CALLS);
    total += lcs[t].checked;
    free(lcs[t].calls);
  }
  free(lcs);
  ck_assert_int_eq(total, (int64_t)RPC_CLIENTS * RPC_CALLS);
  expect_in_use(base);
  opd_server_stop(s);
}
END_TEST

/* ---- a deep pipeline of mixed requests ----
 * 3,000 requests submitted without waiting (more than the daemon's max_in_flight, so
 * submission itself runs the I/O at times): adds with alpha = i, uploads, downloads of
 * the inputs, calls that fail (mismatched shapes) and releases. Every callback logs its
 * sequence number: completions come in submission order, failures stay with their own
 * request, and every add's result is then downloaded and checked. */

enum { PIPE_N = 3000 };

typedef enum pipe_kind { PIPE_ADD, PIPE_UPLOAD, PIPE_DOWNLOAD, PIPE_BAD_CALL } pipe_kind;

typedef struct pipe_req {
  struct pipe_state *st;
  int seq;
  pipe_kind kind;
  int status;
  opd_future *future; /* adds and uploads: kept for their handles */
  float data[3];      /* uploads: the bytes sent; downloads: the bytes received */
} pipe_req;

typedef struct pipe_state {
  int log[PIPE_N];
  int nlog;
} pipe_state;

static void pipe_done(opd_future *f, void *user) {
  pipe_req *r = user;
  r->status = opd_future_status(f);
  r->st->log[r->st->nlog++] = r->seq;
}

START_TEST(test_pipelined_in_order) {
  opd_server *s = start_daemon(2);
  uint64_t base = cpu_in_use();
  opd_client *c = connect_daemon(s);
  int64_t s3[] = {3}, s2[] = {2};
  const float xa[] = {1.5f, -2, 100}, xb[] = {0.25f, 3, -1};
  opd_client_tensor a, b, odd;
  ck_assert_int_eq(opd_client_upload(c, OPD_FLOAT32, s3, 1, xa, sizeof xa, NULL, &a), 0);
  ck_assert_int_eq(opd_client_upload(c, OPD_FLOAT32, s3, 1, xb, sizeof xb, NULL, &b), 0);
  ck_assert_int_eq(opd_client_upload(c, OPD_FLOAT32, s2, 1, xa, 8, NULL, &odd), 0);
  pipe_state *st = calloc(1, sizeof *st);
  pipe_req *reqs = calloc(PIPE_N, sizeof *reqs);
  ck_assert(st && reqs);
  for (int i = 0; i < PIPE_N; i++) {
    pipe_req *r = &reqs[i];
    *r = (pipe_req){.st = st, .seq = i, .status = 1};
    int rc;
    if (i % 13 == 5) {
      r->kind = PIPE_BAD_CALL; /* [3] + [2]: a shape error in the middle of the pipeline */
      rc = opd_add_async(c, a, odd, NULL, pipe_done, r, NULL);
    } else if (i % 7 == 3) {
      r->kind = PIPE_UPLOAD;
      for (int k = 0; k < 3; k++) r->data[k] = (float)(i * 3 + k);
      rc = opd_client_upload_async(c, OPD_FLOAT32, s3, 1, r->data, sizeof r->data, NULL, pipe_done,
                                   r, &r->future);
    } else if (i % 5 == 1) {
      r->kind = PIPE_DOWNLOAD;
      rc = opd_client_download_async(c, i % 2 ? a : b, r->data, sizeof r->data, pipe_done, r, NULL);
    } else {
      r->kind = PIPE_ADD;
      rc = opd_add_async(c, a, b, OPD_SCALAR_INT(i), pipe_done, r, &r->future);
    }
    ck_assert_msg(rc == 0, "submission %d: %s", i, opd_client_last_error());
  }
  ck_assert_int_eq(opd_client_wait_all(c), 0);
  ck_assert_int_eq(st->nlog, PIPE_N);
  for (int i = 0; i < PIPE_N; i++) ck_assert_int_eq(st->log[i], i);
  /* each outcome; the handles made are collected and their values checked */
  opd_client_tensor *made = calloc(PIPE_N, sizeof *made);
  float(*got)[3] = calloc(PIPE_N, sizeof *got);
  ck_assert(made && got);
  size_t nmade = 0;
  for (int i = 0; i < PIPE_N; i++) {
    pipe_req *r = &reqs[i];
    if (r->kind == PIPE_BAD_CALL) {
      ck_assert_int_eq(r->status, OPD_EINVAL);
      continue;
    }
    ck_assert_msg(r->status == 0, "request %d (kind %d): %d", i, (int)r->kind, r->status);
    if (r->kind == PIPE_DOWNLOAD) {
      const float *want = i % 2 ? xa : xb;
      for (int k = 0; k < 3; k++) ck_assert(r->data[k] == want[k]);
      continue;
    }
    made[nmade] =
        r->kind == PIPE_UPLOAD ? opd_future_handle(r->future) : opd_future_tensor(r->future, 0);
    ck_assert_uint_ne(made[nmade], 0);
    ck_assert_int_eq(
        opd_client_download_async(c, made[nmade], got[i], sizeof got[i], NULL, NULL, NULL), 0);
    nmade++;
  }
  ck_assert_int_eq(opd_client_wait_all(c), 0);
  for (int i = 0; i < PIPE_N; i++) {
    pipe_req *r = &reqs[i];
    for (int k = 0; k < 3 && r->future; k++) {
      float want = r->kind == PIPE_UPLOAD ? r->data[k] : xa[k] + (float)i * xb[k];
      ck_assert_msg(got[i][k] == want, "request %d element %d: %g, expected %g", i, k, got[i][k],
                    want);
    }
    opd_future_free(r->future);
  }
  ck_assert_int_eq(opd_client_release(c, made, nmade), 0);
  ck_assert_int_eq(opd_client_release(c, (opd_client_tensor[]){a, b, odd}, 3), 0);
  expect_in_use(base);
  opd_client_close(c);
  free(made);
  free(got);
  free(reqs);
  free(st);
  opd_server_stop(s);
}
END_TEST

/* ---- sessions overtaking each other ----
 * Several sessions pipeline cheap calls, pings and downloads on a daemon with two workers,
 * so that a connection's responses come back from different workers' batches and from the
 * loop itself out of order with their jobs: every response must still arrive, in order
 * ([Note: Quiet completions] in server/src/connection.c: a daemon that left a job on the
 * completion list unseen stalled a session here). */

enum { MIX_CLIENTS = 4, MIX_N = 4000 };

typedef struct mix_client {
  opd_server *server;
  int log[MIX_N];
  int status[MIX_N];
  int nlog;
  float got[MIX_N / 7 + 1][RPC_NUMEL];
} mix_client;

typedef struct mix_req {
  mix_client *mc;
  int seq;
} mix_req;

static void mix_done(opd_future *f, void *user) {
  mix_req *r = user;
  r->mc->status[r->seq] = opd_future_status(f);
  r->mc->log[r->mc->nlog++] = r->seq;
  free(r);
}

static void *mix_main(void *arg) {
  mix_client *mc = arg;
  opd_client *c = connect_daemon(mc->server);
  int64_t shape[] = {RPC_NUMEL};
  const float xa[RPC_NUMEL] = {1, 2, 3, 4};
  opd_client_tensor a;
  ck_assert_int_eq(opd_client_upload(c, OPD_FLOAT32, shape, 1, xa, sizeof xa, NULL, &a), 0);
  for (int i = 0; i < MIX_N; i++) {
    mix_req *r = malloc(sizeof *r);
    ck_assert_ptr_nonnull(r);
    *r = (mix_req){mc, i};
    int rc;
    if (i % 7 == 0)
      rc =
          opd_client_download_async(c, a, mc->got[i / 7], sizeof mc->got[i / 7], mix_done, r, NULL);
    else if (i % 3 == 0)
      rc = opd_client_ping_async(c, &i, sizeof i, mix_done, r, NULL);
    else
      rc = opd_add_async(c, a, a, NULL, mix_done, r, NULL);
    ck_assert_msg(rc == 0, "submission %d: %s", i, opd_client_last_error());
    if (i % 500 == 499) ck_assert_int_eq(opd_client_wait_all(c), 0); /* results held: bounded */
  }
  ck_assert_int_eq(opd_client_wait_all(c), 0);
  opd_client_close(c); /* releases the sums */
  return NULL;
}

START_TEST(test_sessions_overtaking) {
  opd_server *s = start_daemon(2);
  uint64_t base = cpu_in_use();
  mix_client *mcs = calloc(MIX_CLIENTS, sizeof *mcs);
  pthread_t threads[MIX_CLIENTS];
  ck_assert_ptr_nonnull(mcs);
  for (int k = 0; k < MIX_CLIENTS; k++) {
    mcs[k].server = s;
    ck_assert_int_eq(pthread_create(&threads[k], NULL, mix_main, &mcs[k]), 0);
  }
  for (int k = 0; k < MIX_CLIENTS; k++) ck_assert_int_eq(pthread_join(threads[k], NULL), 0);
  for (int k = 0; k < MIX_CLIENTS; k++) {
    ck_assert_int_eq(mcs[k].nlog, MIX_N);
    for (int i = 0; i < MIX_N; i++) {
      ck_assert_int_eq(mcs[k].log[i], i);
      ck_assert_msg(mcs[k].status[i] == 0, "client %d request %d: %d", k, i, mcs[k].status[i]);
    }
    for (int d = 0; d <= (MIX_N - 1) / 7; d++)
      for (int e = 0; e < RPC_NUMEL; e++) ck_assert(mcs[k].got[d][e] == (float)(e + 1));
  }
  expect_in_use(base); /* the closed sessions' tensors are all released */
  expect_served(s);
  free(mcs);
  opd_server_stop(s);
}
END_TEST

/* ---- clients killed mid-request ----
 * A child process connects, sends `pre` (requests built here, before the fork: the child
 * only makes system calls), reads `pre_responses` response frames, says so on a pipe
 * (before or after sending `post`, as asked), sends `post` and waits to be killed. */

typedef struct wire {
  uint8_t *data;
  size_t len, cap;
} wire;

static void wire_put(wire *w, const void *p, size_t n) {
  if (n == 0) return;
  if (w->len + n > w->cap) {
    w->cap = (w->len + n) * 2;
    w->data = realloc(w->data, w->cap);
    ck_assert_ptr_nonnull(w->data);
  }
  memcpy(w->data + w->len, p, n);
  w->len += n;
}

static void wire_request(wire *w, uint64_t id, Opd__V1__Request *r) {
  r->id = id;
  size_t n = opd__v1__request__get_packed_size(r);
  uint8_t *buf = malloc(4 + n);
  ck_assert_ptr_nonnull(buf);
  buf[0] = (uint8_t)n, buf[1] = (uint8_t)(n >> 8), buf[2] = (uint8_t)(n >> 16),
  buf[3] = (uint8_t)(n >> 24);
  opd__v1__request__pack(r, buf + 4);
  wire_put(w, buf, 4 + n);
  free(buf);
}

static void wire_hello(wire *w) {
  Opd__V1__Hello h = OPD__V1__HELLO__INIT;
  h.protocol_version = 1;
  h.client_name = "test_rpc child";
  Opd__V1__Request r = OPD__V1__REQUEST__INIT;
  r.body_case = OPD__V1__REQUEST__BODY_HELLO;
  r.hello = &h;
  wire_request(w, 1, &r);
}

/* An upload header of n float32 elements, followed by `sent` of its bytes (0.5 each). */
static void wire_upload(wire *w, uint64_t id, int64_t n, int64_t sent) {
  Opd__V1__Upload u = OPD__V1__UPLOAD__INIT;
  u.dtype = OPD__V1__DTYPE__FLOAT32;
  u.n_shape = 1;
  u.shape = &n;
  u.nbytes = (uint64_t)n * 4;
  Opd__V1__Request r = OPD__V1__REQUEST__INIT;
  r.body_case = OPD__V1__REQUEST__BODY_UPLOAD;
  r.upload = &u;
  wire_request(w, id, &r);
  float half = 0.5f;
  for (int64_t i = 0; i < sent; i++) wire_put(w, &half, 4);
}

/* aten::add.Tensor(handle x, handle y, alpha) */
static void wire_add(wire *w, uint64_t id, uint64_t x, uint64_t y, int64_t alpha) {
  Opd__V1__IValue v[3] = {OPD__V1__IVALUE__INIT, OPD__V1__IVALUE__INIT, OPD__V1__IVALUE__INIT};
  Opd__V1__IValue *args[3] = {&v[0], &v[1], &v[2]};
  v[0].value_case = v[1].value_case = OPD__V1__IVALUE__VALUE_TENSOR;
  v[0].tensor = x;
  v[1].tensor = y;
  v[2].value_case = OPD__V1__IVALUE__VALUE_I;
  v[2].i = alpha;
  Opd__V1__Call call = OPD__V1__CALL__INIT;
  call.op = "aten::add.Tensor";
  call.n_args = 3;
  call.args = args;
  Opd__V1__Request r = OPD__V1__REQUEST__INIT;
  r.body_case = OPD__V1__REQUEST__BODY_CALL;
  r.call = &call;
  wire_request(w, id, &r);
}

static bool child_write(int fd, const uint8_t *p, size_t n) {
  while (n) {
    ssize_t k = write(fd, p, n);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) return false;
    p += k;
    n -= (size_t)k;
  }
  return true;
}

static bool child_read(int fd, uint8_t *p, size_t n) {
  while (n) {
    ssize_t k = read(fd, p, n);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) return false;
    p += k;
    n -= (size_t)k;
  }
  return true;
}

/* The child: system calls only (the parent's other threads may hold any lock). */
static _Noreturn void child_main(int port, const wire *pre, int pre_responses, const wire *post,
                                 bool ready_before_post, int ready) {
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof a) != 0) _exit(3);
  if (!child_write(fd, pre->data, pre->len)) _exit(4);
  uint8_t frame[4096];
  for (int i = 0; i < pre_responses; i++) {
    uint8_t h[4];
    if (!child_read(fd, h, 4)) _exit(5);
    size_t n = (size_t)h[0] | (size_t)h[1] << 8 | (size_t)h[2] << 16 | (size_t)h[3] << 24;
    if (n > sizeof frame || !child_read(fd, frame, n)) _exit(6);
    /* a Response: the id (field 1, a varint), then the body; field 2 (tag 0x12) is an
     * Error */
    size_t k = 0;
    if (n && frame[0] == 0x08) {
      k = 1;
      while (k < n && (frame[k] & 0x80)) k++;
      k++; /* the varint's last byte */
    }
    if (k < n && frame[k] == 0x12) _exit(7);
  }
  if (ready_before_post && write(ready, "r", 1) != 1) _exit(8);
  if (!child_write(fd, post->data, post->len)) _exit(9);
  if (!ready_before_post && write(ready, "r", 1) != 1) _exit(8);
  for (;;) pause();
}

/* Forks the child and waits (up to 10 s) for its signal: its pid. */
static pid_t spawn_child(opd_server *s, const wire *pre, int pre_responses, const wire *post,
                         bool ready_before_post) {
  int p[2];
  ck_assert_int_eq(pipe(p), 0);
  pid_t pid = fork();
  ck_assert_int_ge(pid, 0);
  if (pid == 0) {
    close(p[0]);
    child_main(opd_server_listener_port(s, 0), pre, pre_responses, post, ready_before_post, p[1]);
  }
  close(p[1]);
  struct pollfd pf = {.fd = p[0], .events = POLLIN};
  char ch = 0;
  bool ready = poll(&pf, 1, 10000) == 1 && read(p[0], &ch, 1) == 1;
  close(p[0]);
  if (!ready) {
    int st = 0;
    kill(pid, SIGKILL);
    waitpid(pid, &st, 0);
    ck_abort_msg("the child never got ready (exit status %d)",
                 WIFEXITED(st) ? WEXITSTATUS(st) : -1);
  }
  return pid;
}

static void kill_child(pid_t pid) {
  int st;
  ck_assert_int_eq(kill(pid, SIGKILL), 0);
  ck_assert_int_eq(waitpid(pid, &st, 0), pid);
  ck_assert(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
}

/* hello, two 1024-element uploads (handles 1 and 2: a session issues them in order) and
 * 8 adds: 11 responses. */
static wire session_start(void) {
  wire w = {0};
  wire_hello(&w);
  wire_upload(&w, 2, 1024, 1024);
  wire_upload(&w, 3, 1024, 1024);
  for (int i = 0; i < 8; i++) wire_add(&w, 4 + (uint64_t)i, 1, 2, i);
  return w;
}

START_TEST(test_killed_mid_frame) {
  opd_server *s = start_daemon(2);
  uint64_t base = cpu_in_use();
  wire pre = session_start(), post = {0};
  /* a frame announcing 200 bytes, of which 100 are sent (a Request's id, then padding) */
  uint8_t part[104] = {200, 0, 0, 0, 0x08, 0x2a};
  wire_put(&post, part, sizeof part);
  pid_t pid = spawn_child(s, &pre, 11, &post, false);
  /* the session holds its tensors: 2 inputs and 8 results of 4 KiB */
  ck_assert_uint_ge(cpu_in_use(), base + 10 * 4096);
  sleep_ms(20);
  kill_child(pid);
  expect_in_use(base);
  expect_served(s);
  expect_in_use(base);
  free(pre.data);
  free(post.data);
  opd_server_stop(s);
}
END_TEST

START_TEST(test_killed_mid_upload) {
  opd_server *s = start_daemon(2);
  uint64_t base = cpu_in_use();
  wire pre = session_start(), post = {0};
  /* a 4 MiB upload of which 1 MiB arrives: its storage is allocated at the header */
  wire_upload(&post, 100, 1 << 20, 1 << 18);
  pid_t pid = spawn_child(s, &pre, 11, &post, true);
  wait_in_use_at_least(base + 10 * 4096 + (4u << 20), "the upload's storage");
  sleep_ms(20);
  kill_child(pid);
  expect_in_use(base);
  expect_served(s);
  expect_in_use(base);
  free(pre.data);
  free(post.data);
  opd_server_stop(s);
}
END_TEST

START_TEST(test_killed_mid_burst) {
  opd_server *s = start_daemon(2);
  uint64_t base = cpu_in_use();
  wire pre = session_start(), post = {0};
  /* 20,000 pipelined adds, responses never read: the daemon stops reading at its limits,
   * and the child is killed while the burst is being executed */
  enum { BURST = 20000 };
  for (int i = 0; i < BURST; i++) wire_add(&post, 100 + (uint64_t)i, 1, 2, i);
  pid_t pid = spawn_child(s, &pre, 11, &post, true);
  wait_in_use_at_least(base + (10 + 200) * 4096, "the burst's results");
  kill_child(pid);
  expect_in_use(base);
  expect_served(s);
  expect_in_use(base);
  free(pre.data);
  free(post.data);
  opd_server_stop(s);
}
END_TEST

/* ---- a client closing with work queued ----
 * One worker; QUEUED matrix products of 512x512 submitted, then the client closes once the
 * first is answered. The daemon cancels the rest: a new client is served in much less time
 * than they would take, and every byte is released. */

START_TEST(test_close_with_queued_work) {
  enum { N = 512, QUEUED = 400 };
  opd_server *s = start_daemon(1);
  uint64_t base = cpu_in_use();
  opd_client *c = connect_daemon(s);
  float *m = malloc(N * N * sizeof *m);
  ck_assert_ptr_nonnull(m);
  for (int i = 0; i < N * N; i++) m[i] = (float)(i % 7) - 3;
  int64_t shape[] = {N, N};
  opd_client_tensor x, r;
  ck_assert_int_eq(opd_client_upload(c, OPD_FLOAT32, shape, 2, m, N * N * sizeof *m, NULL, &x), 0);
  /* the time of one product (the best of 5) */
  double one = 1e9;
  for (int k = 0; k < 5; k++) {
    double t0 = now_s();
    ck_assert_msg(opd_mm(c, x, x, &r) == 0, "mm: %s", opd_client_last_error());
    double dt = now_s() - t0;
    one = dt < one ? dt : one;
    ck_assert_int_eq(opd_client_release(c, &r, 1), 0);
  }
  opd_future *f[QUEUED];
  for (int k = 0; k < QUEUED; k++) ck_assert_int_eq(opd_mm_async(c, x, x, NULL, NULL, &f[k]), 0);
  ck_assert_int_eq(opd_future_wait(f[0]), 0);
  double t0 = now_s();
  opd_client_close(c);
  /* the pending requests failed on the client's side */
  ck_assert_int_eq(opd_future_status(f[QUEUED - 1]), OPD_ECANCELED);
  for (int k = 0; k < QUEUED; k++) opd_future_free(f[k]);
  expect_served(s);
  double waited = now_s() - t0;
  ck_assert_msg(waited < QUEUED * one / 4,
                "a new client waited %.3f s; the %d queued products take %.3f s", waited, QUEUED,
                QUEUED * one);
  expect_in_use(base);
  free(m);
  opd_server_stop(s);
}
END_TEST

Suite *opd_test_rpc_suite(void) {
  Suite *s = suite_create("rpc");
  TCase *load = tcase_create("load");
  tcase_set_timeout(load, 300); /* about 40 s under ASan on 2 cores */
  tcase_add_test(load, test_concurrent_clients);
  tcase_add_test(load, test_pipelined_in_order);
  tcase_add_test(load, test_sessions_overtaking);
  suite_add_tcase(s, load);
  TCase *abuse = tcase_create("abuse");
  tcase_set_timeout(abuse, 60);
  tcase_add_test(abuse, test_killed_mid_frame);
  tcase_add_test(abuse, test_killed_mid_upload);
  tcase_add_test(abuse, test_killed_mid_burst);
  tcase_add_test(abuse, test_close_with_queued_work);
  suite_add_tcase(s, abuse);
  return s;
}

/* test_server.c: the daemon end to end, in process: each test starts a server (opd/server.h)
 * on an ephemeral port or a temporary Unix socket and speaks the protocol to it over raw
 * sockets with a small frame helper: hello and versions, upload/call/download round trips
 * with values checked, pipelining, release, dispatch state, the bad-input matrix (each
 * answered with its error code while another session keeps being served), per-session
 * limits, clients that vanish mid-request (the session's tensors must all be released:
 * the CPU allocator's bytes in use return to where they were; LeakSanitizer checks the
 * rest), Unix sockets, configuration (address URLs, hostile files and flags, the shipped
 * file and docs listing every option), the listeners' log, and draining on stop. */
#include <check.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "config.h"
#include "opd.pb-c.h"
#include "opd/allocator.h"
#include "opd/client.h"
#include "opd/dispatcher.h"
#include "opd/error.h"
#include "opd/server.h"

#define EC(name) OPD__V1__ERROR_CODE__##name

/* ---- the server ---- */

typedef struct test_limits {
  uint64_t max_frame_bytes, max_handles, max_bytes_held, max_literal_bytes;
  uint32_t max_in_flight, workers;
} test_limits;

static opd_server *start_server_with(const test_limits *lim, const char *url) {
  opd_server_config cfg;
  opd_server_config_init(&cfg);
  opd_server_config_clear_listen(&cfg);
  ck_assert_int_eq(opd_server_config_add_listen(&cfg, url ? url : "tcp://127.0.0.1:0"), 0);
  cfg.workers = 2;
  cfg.log_level = OPD_LOG_ERROR;
  if (lim) {
    if (lim->max_frame_bytes) cfg.max_frame_bytes = lim->max_frame_bytes;
    if (lim->max_handles) cfg.max_handles = lim->max_handles;
    if (lim->max_bytes_held) cfg.max_bytes_held = lim->max_bytes_held;
    if (lim->max_literal_bytes) cfg.max_literal_bytes = lim->max_literal_bytes;
    if (lim->max_in_flight) cfg.max_in_flight = lim->max_in_flight;
    if (lim->workers) cfg.workers = lim->workers;
  }
  opd_server *s = NULL;
  int rc = opd_server_start(&cfg, &s);
  opd_server_config_destroy(&cfg);
  ck_assert_msg(rc == 0, "server start: %s", opd_last_error());
  return s;
}

static opd_server *start_server(void) {
  return start_server_with(NULL, NULL);
}

static int connect_tcp(int port) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  ck_assert_int_ge(fd, 0);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ck_assert_int_eq(connect(fd, (struct sockaddr *)&a, sizeof a), 0);
  struct timeval tv = {10, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  return fd;
}

static int connect_to(opd_server *s) {
  return connect_tcp(opd_server_listener_port(s, 0));
}

/* ---- frames ---- */

static void send_all(int fd, const void *p, size_t n) {
  const char *c = p;
  while (n) {
    ssize_t k = send(fd, c, n, MSG_NOSIGNAL);
    ck_assert_msg(k > 0, "send: %s", strerror(errno));
    c += k;
    n -= (size_t)k;
  }
}

/* Appends a framed request to a buffer (for pipelining), or sends it when buf is NULL. */
typedef struct outbuf {
  uint8_t *data;
  size_t len, cap;
} outbuf;

static void out_put(outbuf *b, const void *p, size_t n) {
  if (n == 0) return;
  if (b->len + n > b->cap) {
    b->cap = (b->len + n) * 2;
    b->data = realloc(b->data, b->cap);
    ck_assert_ptr_nonnull(b->data);
  }
  memcpy(b->data + b->len, p, n);
  b->len += n;
}

static void frame_request(outbuf *b, const Opd__V1__Request *r) {
  size_t n = opd__v1__request__get_packed_size(r);
  uint8_t *buf = malloc(4 + n);
  buf[0] = (uint8_t)n, buf[1] = (uint8_t)(n >> 8), buf[2] = (uint8_t)(n >> 16),
  buf[3] = (uint8_t)(n >> 24);
  opd__v1__request__pack(r, buf + 4);
  out_put(b, buf, 4 + n);
  free(buf);
}

static void send_request(int fd, const Opd__V1__Request *r) {
  outbuf b = {0};
  frame_request(&b, r);
  send_all(fd, b.data, b.len);
  free(b.data);
}

/* Reads exactly n bytes: true, or false at end of stream. */
static bool recv_exact(int fd, void *p, size_t n) {
  char *c = p;
  while (n) {
    ssize_t k = recv(fd, c, n, 0);
    if (k == 0) return false;
    if (k < 0 && errno == EINTR) continue;
    ck_assert_msg(k > 0, "recv: %s", strerror(errno));
    c += k;
    n -= (size_t)k;
  }
  return true;
}

/* The next response, or NULL at end of stream. */
static Opd__V1__Response *recv_response(int fd) {
  uint8_t h[4];
  if (!recv_exact(fd, h, 4)) return NULL;
  size_t n = (size_t)h[0] | (size_t)h[1] << 8 | (size_t)h[2] << 16 | (size_t)h[3] << 24;
  uint8_t *buf = malloc(n ? n : 1);
  ck_assert(recv_exact(fd, buf, n));
  Opd__V1__Response *r = opd__v1__response__unpack(NULL, n, buf);
  free(buf);
  ck_assert_msg(r != NULL, "undecodable response");
  return r;
}

static void free_response(Opd__V1__Response *r) {
  opd__v1__response__free_unpacked(r, NULL);
}

/* True when the server closed the connection (end of stream within the timeout). */
static bool closed_by_server(int fd) {
  char c;
  ssize_t k;
  while ((k = recv(fd, &c, 1, 0)) > 0) {
  }
  return k == 0;
}

/* ---- requests ---- */

static void hello_version(int fd, uint64_t id, uint32_t version) {
  Opd__V1__Hello h = OPD__V1__HELLO__INIT;
  h.protocol_version = version;
  h.client_name = "test_server";
  Opd__V1__Request r = OPD__V1__REQUEST__INIT;
  r.id = id;
  r.body_case = OPD__V1__REQUEST__BODY_HELLO;
  r.hello = &h;
  send_request(fd, &r);
}

static void expect_error(Opd__V1__Response *r, uint64_t id, Opd__V1__ErrorCode code,
                         const char *needle) {
  ck_assert_ptr_nonnull(r);
  ck_assert_msg(r->body_case == OPD__V1__RESPONSE__BODY_ERROR,
                "request %llu: expected an error, got response kind %d", (unsigned long long)id,
                (int)r->body_case);
  ck_assert_msg(r->error->code == code, "request %llu: code %d, expected %d: %s",
                (unsigned long long)id, (int)r->error->code, (int)code, r->error->message);
  ck_assert_uint_eq(r->id, id);
  ck_assert_msg(strlen(r->error->message) > 10, "unclear message '%s'", r->error->message);
  if (needle)
    ck_assert_msg(strstr(r->error->message, needle), "message '%s' lacks '%s'", r->error->message,
                  needle);
  free_response(r);
}

static void expect_error_next(int fd, uint64_t id, Opd__V1__ErrorCode code, const char *needle) {
  expect_error(recv_response(fd), id, code, needle);
}

static int hello(opd_server *s) {
  int fd = connect_to(s);
  hello_version(fd, 1, 1);
  Opd__V1__Response *r = recv_response(fd);
  ck_assert_ptr_nonnull(r);
  ck_assert_int_eq(r->body_case, OPD__V1__RESPONSE__BODY_HELLO);
  ck_assert_uint_eq(r->hello->protocol_version, 1);
  free_response(r);
  return fd;
}

static void upload_request(outbuf *b, uint64_t id, Opd__V1__DType dtype, const int64_t *shape,
                           size_t ndim, uint64_t nbytes) {
  Opd__V1__Upload u = OPD__V1__UPLOAD__INIT;
  u.dtype = dtype;
  u.n_shape = ndim;
  u.shape = (int64_t *)shape;
  u.nbytes = nbytes;
  Opd__V1__Request r = OPD__V1__REQUEST__INIT;
  r.id = id;
  r.body_case = OPD__V1__REQUEST__BODY_UPLOAD;
  r.upload = &u;
  frame_request(b, &r);
}

static void upload_into(outbuf *b, uint64_t id, Opd__V1__DType dtype, const int64_t *shape,
                        size_t ndim, const void *data, size_t nbytes) {
  upload_request(b, id, dtype, shape, ndim, nbytes);
  out_put(b, data, nbytes);
}

static uint64_t expect_handle(Opd__V1__Response *r, uint64_t id) {
  ck_assert_ptr_nonnull(r);
  ck_assert_uint_eq(r->id, id);
  ck_assert_msg(r->body_case == OPD__V1__RESPONSE__BODY_UPLOAD, "upload %llu failed: %s",
                (unsigned long long)id,
                r->body_case == OPD__V1__RESPONSE__BODY_ERROR ? r->error->message : "?");
  uint64_t h = r->upload->handle;
  ck_assert_uint_ne(h, 0);
  free_response(r);
  return h;
}

static uint64_t upload(int fd, uint64_t id, Opd__V1__DType dtype, const int64_t *shape, size_t ndim,
                       const void *data, size_t nbytes) {
  outbuf b = {0};
  upload_into(&b, id, dtype, shape, ndim, data, nbytes);
  send_all(fd, b.data, b.len);
  free(b.data);
  return expect_handle(recv_response(fd), id);
}

static uint64_t upload_f32(int fd, uint64_t id, const int64_t *shape, size_t ndim,
                           const float *data) {
  size_t n = 1;
  for (size_t i = 0; i < ndim; i++) n *= (size_t)shape[i];
  return upload(fd, id, OPD__V1__DTYPE__FLOAT32, shape, ndim, data, n * sizeof(float));
}

/* IValue builders (static storage per call site is not needed: the caller keeps them) */
static Opd__V1__IValue iv_handle(uint64_t h) {
  Opd__V1__IValue v = OPD__V1__IVALUE__INIT;
  v.value_case = OPD__V1__IVALUE__VALUE_TENSOR;
  v.tensor = h;
  return v;
}
static Opd__V1__IValue iv_int(int64_t i) {
  Opd__V1__IValue v = OPD__V1__IVALUE__INIT;
  v.value_case = OPD__V1__IVALUE__VALUE_I;
  v.i = i;
  return v;
}
static Opd__V1__IValue iv_double(double d) {
  Opd__V1__IValue v = OPD__V1__IVALUE__INIT;
  v.value_case = OPD__V1__IVALUE__VALUE_D;
  v.d = d;
  return v;
}
static Opd__V1__IValue iv_str(char *s) {
  Opd__V1__IValue v = OPD__V1__IVALUE__INIT;
  v.value_case = OPD__V1__IVALUE__VALUE_S;
  v.s = s;
  return v;
}
static Opd__V1__IValue iv_ints(Opd__V1__IntList *l, int64_t *vals, size_t n) {
  opd__v1__int_list__init(l);
  l->n_values = n;
  l->values = vals;
  Opd__V1__IValue v = OPD__V1__IVALUE__INIT;
  v.value_case = OPD__V1__IVALUE__VALUE_INTS;
  v.ints = l;
  return v;
}

static void call_request(outbuf *b, uint64_t id, const char *op, Opd__V1__IValue *args,
                         size_t nargs) {
  Opd__V1__IValue *ptrs[16];
  ck_assert_uint_le(nargs, 16);
  for (size_t i = 0; i < nargs; i++) ptrs[i] = &args[i];
  Opd__V1__Call c = OPD__V1__CALL__INIT;
  c.op = (char *)op;
  c.n_args = nargs;
  c.args = ptrs;
  Opd__V1__Request r = OPD__V1__REQUEST__INIT;
  r.id = id;
  r.body_case = OPD__V1__REQUEST__BODY_CALL;
  r.call = &c;
  frame_request(b, &r);
}

static Opd__V1__Response *call(int fd, uint64_t id, const char *op, Opd__V1__IValue *args,
                               size_t nargs) {
  outbuf b = {0};
  call_request(&b, id, op, args, nargs);
  send_all(fd, b.data, b.len);
  free(b.data);
  return recv_response(fd);
}

/* The single tensor result of a call. */
static uint64_t expect_tensor_result(Opd__V1__Response *r, uint64_t id) {
  ck_assert_ptr_nonnull(r);
  ck_assert_uint_eq(r->id, id);
  ck_assert_msg(r->body_case == OPD__V1__RESPONSE__BODY_CALL, "call %llu failed: %s",
                (unsigned long long)id,
                r->body_case == OPD__V1__RESPONSE__BODY_ERROR ? r->error->message : "?");
  ck_assert_uint_eq(r->call->n_results, 1);
  ck_assert_int_eq(r->call->results[0]->value_case, OPD__V1__IVALUE__VALUE_TENSOR);
  uint64_t h = r->call->results[0]->tensor;
  free_response(r);
  return h;
}

static uint64_t call_view(int fd, uint64_t id, uint64_t h, int64_t *size, size_t n) {
  Opd__V1__IntList l;
  Opd__V1__IValue args[] = {iv_handle(h), iv_ints(&l, size, n)};
  return expect_tensor_result(call(fd, id, "aten::view", args, 2), id);
}

static uint64_t call_transpose(int fd, uint64_t id, uint64_t h, int64_t d0, int64_t d1) {
  Opd__V1__IValue args[] = {iv_handle(h), iv_int(d0), iv_int(d1)};
  return expect_tensor_result(call(fd, id, "aten::transpose.int", args, 3), id);
}

static void download_request(outbuf *b, uint64_t id, uint64_t h) {
  Opd__V1__Download d = OPD__V1__DOWNLOAD__INIT;
  d.handle = h;
  Opd__V1__Request r = OPD__V1__REQUEST__INIT;
  r.id = id;
  r.body_case = OPD__V1__REQUEST__BODY_DOWNLOAD;
  r.download = &d;
  frame_request(b, &r);
}

/* Reads a download's response and bytes; checks dtype and shape; returns the bytes. */
static void *expect_download(int fd, uint64_t id, Opd__V1__DType dtype, const int64_t *shape,
                             size_t ndim, size_t *nbytes) {
  Opd__V1__Response *r = recv_response(fd);
  ck_assert_ptr_nonnull(r);
  ck_assert_uint_eq(r->id, id);
  ck_assert_msg(r->body_case == OPD__V1__RESPONSE__BODY_DOWNLOAD, "download %llu failed: %s",
                (unsigned long long)id,
                r->body_case == OPD__V1__RESPONSE__BODY_ERROR ? r->error->message : "?");
  Opd__V1__DownloadReply *d = r->download;
  ck_assert_int_eq(d->dtype, dtype);
  ck_assert_uint_eq(d->n_shape, ndim);
  ck_assert_uint_eq(d->n_strides, ndim);
  int64_t stride = 1;
  for (size_t i = ndim; i-- > 0;) {
    ck_assert_int_eq(d->shape[i], shape[i]);
    ck_assert_int_eq(d->strides[i], stride);
    stride *= shape[i];
  }
  *nbytes = d->nbytes;
  void *bytes = malloc(d->nbytes ? d->nbytes : 1);
  ck_assert(recv_exact(fd, bytes, d->nbytes));
  free_response(r);
  return bytes;
}

static void download_f32(int fd, uint64_t id, uint64_t h, const int64_t *shape, size_t ndim,
                         const float *want) {
  outbuf b = {0};
  download_request(&b, id, h);
  send_all(fd, b.data, b.len);
  free(b.data);
  size_t nbytes, n = 1;
  for (size_t i = 0; i < ndim; i++) n *= (size_t)shape[i];
  float *got = expect_download(fd, id, OPD__V1__DTYPE__FLOAT32, shape, ndim, &nbytes);
  ck_assert_uint_eq(nbytes, n * sizeof(float));
  if (n && memcmp(got, want, n * sizeof(float)) != 0)
    for (size_t i = 0; i < n; i++)
      ck_assert_msg(got[i] == want[i], "element %zu: %g, expected %g", i, got[i], want[i]);
  free(got);
}

static void release_request(outbuf *b, uint64_t id, uint64_t *handles, size_t n) {
  Opd__V1__Release rel = OPD__V1__RELEASE__INIT;
  rel.n_handles = n;
  rel.handles = handles;
  Opd__V1__Request r = OPD__V1__REQUEST__INIT;
  r.id = id;
  r.body_case = OPD__V1__REQUEST__BODY_RELEASE;
  r.release = &rel;
  frame_request(b, &r);
}

static Opd__V1__Response *release(int fd, uint64_t id, uint64_t *handles, size_t n) {
  outbuf b = {0};
  release_request(&b, id, handles, n);
  send_all(fd, b.data, b.len);
  free(b.data);
  return recv_response(fd);
}

static void expect_ack(Opd__V1__Response *r, uint64_t id) {
  ck_assert_ptr_nonnull(r);
  ck_assert_uint_eq(r->id, id);
  ck_assert_msg(r->body_case == OPD__V1__RESPONSE__BODY_ACK, "request %llu: no ack: %s",
                (unsigned long long)id,
                r->body_case == OPD__V1__RESPONSE__BODY_ERROR ? r->error->message : "?");
  free_response(r);
}

static void ping_request(outbuf *b, uint64_t id) {
  Opd__V1__Ping p = OPD__V1__PING__INIT;
  p.payload.data = (uint8_t *)"abc";
  p.payload.len = 3;
  Opd__V1__Request r = OPD__V1__REQUEST__INIT;
  r.id = id;
  r.body_case = OPD__V1__REQUEST__BODY_PING;
  r.ping = &p;
  frame_request(b, &r);
}

/* The connection still works: a ping is answered. */
static void expect_alive(int fd, uint64_t id) {
  outbuf b = {0};
  ping_request(&b, id);
  send_all(fd, b.data, b.len);
  free(b.data);
  Opd__V1__Response *r = recv_response(fd);
  ck_assert_ptr_nonnull(r);
  ck_assert_uint_eq(r->id, id);
  ck_assert_int_eq(r->body_case, OPD__V1__RESPONSE__BODY_PONG);
  ck_assert_uint_eq(r->pong->payload.len, 3);
  ck_assert(memcmp(r->pong->payload.data, "abc", 3) == 0);
  free_response(r);
}

static Opd__V1__Response *set_dispatch(int fd, uint64_t id, char **include, size_t ninclude) {
  Opd__V1__DispatchState d = OPD__V1__DISPATCH_STATE__INIT;
  d.n_include = ninclude;
  d.include = include;
  Opd__V1__Request r = OPD__V1__REQUEST__INIT;
  r.id = id;
  r.body_case = OPD__V1__REQUEST__BODY_SET_DISPATCH_STATE;
  r.set_dispatch_state = &d;
  send_request(fd, &r);
  return recv_response(fd);
}

static void sleep_ms(long ms) {
  struct timespec ts = {ms / 1000, (ms % 1000) * 1000000};
  nanosleep(&ts, NULL);
}

static uint64_t cpu_in_use(void) {
  opd_memory_stats st;
  opd_memory_stats_get(OPD_DEVICE_CPU, &st);
  return st.in_use;
}

/* Waits (up to 5 s) for the CPU allocator's bytes in use to come back to `want`. */
static void expect_in_use(uint64_t want) {
  for (int i = 0; i < 500 && cpu_in_use() != want; i++) sleep_ms(10);
  ck_assert_uint_eq(cpu_in_use(), want);
}

static const float x6[] = {0, 1, 2, 3, 4, 5};
static const int64_t shape23[] = {2, 3};

/* ---- tests ---- */

START_TEST(test_hello_versions) {
  opd_server *s = start_server();
  /* version 1 is accepted and the reply names the limits */
  int fd = connect_to(s);
  hello_version(fd, 7, 1);
  Opd__V1__Response *r = recv_response(fd);
  ck_assert_ptr_nonnull(r);
  ck_assert_uint_eq(r->id, 7);
  ck_assert_int_eq(r->body_case, OPD__V1__RESPONSE__BODY_HELLO);
  ck_assert_uint_eq(r->hello->protocol_version, 1);
  ck_assert_str_eq(r->hello->server, "opd 0.1.0");
  ck_assert_uint_eq(r->hello->max_frame_bytes, 1 << 20);
  ck_assert_uint_eq(r->hello->max_handles, 65536);
  ck_assert_uint_eq(r->hello->max_in_flight, 1024);
  ck_assert_uint_eq(r->hello->max_bytes_held, UINT64_C(8) << 30);
  free_response(r);
  /* a second hello is refused, the session goes on */
  hello_version(fd, 8, 1);
  expect_error_next(fd, 8, EC(FAILED_PRECONDITION), "already");
  expect_alive(fd, 9);
  close(fd);

  /* another version is refused and the connection closed */
  fd = connect_to(s);
  hello_version(fd, 1, 2);
  expect_error_next(fd, 1, EC(FAILED_PRECONDITION), "version 2");
  ck_assert(closed_by_server(fd));
  close(fd);

  /* so is a first request that is not hello */
  fd = connect_to(s);
  outbuf b = {0};
  ping_request(&b, 3);
  send_all(fd, b.data, b.len);
  free(b.data);
  expect_error_next(fd, 3, EC(FAILED_PRECONDITION), "hello");
  ck_assert(closed_by_server(fd));
  close(fd);
  opd_server_stop(s);
}
END_TEST

START_TEST(test_round_trip) {
  opd_server *s = start_server();
  uint64_t base = cpu_in_use();
  int fd = hello(s);
  uint64_t x = upload_f32(fd, 2, shape23, 2, x6);
  download_f32(fd, 3, x, shape23, 2, x6);
  /* a view shares storage: [[0,1],[2,3],[4,5]] */
  int64_t s32[] = {3, 2};
  uint64_t v = call_view(fd, 4, x, s32, 2);
  ck_assert_uint_ne(v, x);
  download_f32(fd, 5, v, s32, 2, x6);
  /* -1 is inferred */
  int64_t sm1[] = {-1};
  int64_t s6[] = {6};
  download_f32(fd, 7, call_view(fd, 6, x, sm1, 1), s6, 1, x6);
  /* a transpose is strided: the download is row-major [[0,3],[1,4],[2,5]] */
  uint64_t t = call_transpose(fd, 8, x, 0, 1);
  const float xt[] = {0, 3, 1, 4, 2, 5};
  download_f32(fd, 9, t, s32, 2, xt);
  /* a transpose of a transpose */
  download_f32(fd, 11, call_transpose(fd, 10, t, -1, -2), shape23, 2, x6);
  /* an inline literal as the tensor argument */
  Opd__V1__TensorLiteral lit = OPD__V1__TENSOR_LITERAL__INIT;
  lit.dtype = OPD__V1__DTYPE__FLOAT32;
  lit.n_shape = 2;
  lit.shape = (int64_t *)shape23;
  lit.data.data = (uint8_t *)x6;
  lit.data.len = sizeof x6;
  Opd__V1__IntList l;
  Opd__V1__IValue args[] = {OPD__V1__IVALUE__INIT, iv_ints(&l, s32, 2)};
  args[0].value_case = OPD__V1__IVALUE__VALUE_LITERAL;
  args[0].literal = &lit;
  download_f32(fd, 13, expect_tensor_result(call(fd, 12, "aten::view", args, 2), 12), s32, 2, x6);
  /* int64 and bool round trips (bools arrive normalized to 0/1) */
  int64_t li[] = {-5, 1ll << 40, 7};
  int64_t s3[] = {3};
  uint64_t hi = upload(fd, 14, OPD__V1__DTYPE__INT64, s3, 1, li, sizeof li);
  outbuf b = {0};
  download_request(&b, 15, hi);
  uint8_t bools[] = {0, 1, 2};
  upload_into(&b, 16, OPD__V1__DTYPE__BOOL, s3, 1, bools, 3);
  send_all(fd, b.data, b.len);
  free(b.data);
  size_t n;
  int64_t *gi = expect_download(fd, 15, OPD__V1__DTYPE__INT64, s3, 1, &n);
  ck_assert(n == sizeof li && memcmp(gi, li, n) == 0);
  free(gi);
  uint64_t hb = expect_handle(recv_response(fd), 16);
  b = (outbuf){0};
  download_request(&b, 17, hb);
  send_all(fd, b.data, b.len);
  free(b.data);
  uint8_t *gb = expect_download(fd, 17, OPD__V1__DTYPE__BOOL, s3, 1, &n);
  ck_assert(n == 3 && gb[0] == 0 && gb[1] == 1 && gb[2] == 1);
  free(gb);
  /* a 0-d tensor and an empty one */
  float one = 1.5f;
  uint64_t z = upload_f32(fd, 18, NULL, 0, &one);
  download_f32(fd, 19, z, NULL, 0, &one);
  int64_t s0[] = {0, 4};
  uint64_t e = upload_f32(fd, 20, s0, 2, NULL);
  download_f32(fd, 21, e, s0, 2, NULL);
  close(fd);
  expect_in_use(base);
  opd_server_stop(s);
}
END_TEST

/* aten::add.Tensor, once its kernel exists: values with alpha, broadcasting and promotion. */
START_TEST(test_add) {
  opd_server *s = start_server();
  int fd = hello(s);
  uint64_t x = upload_f32(fd, 1, shape23, 2, x6);
  const float row[] = {10, 20, 30};
  int64_t s3[] = {3};
  uint64_t y = upload_f32(fd, 2, s3, 1, row);
  Opd__V1__IValue args[] = {iv_handle(x), iv_handle(y), iv_int(2)};
  Opd__V1__Response *r = call(fd, 3, "aten::add.Tensor", args, 3);
  if (r->body_case == OPD__V1__RESPONSE__BODY_ERROR &&
      r->error->code == OPD__V1__ERROR_CODE__UNIMPLEMENTED) {
    /* the kernel is not written yet (development stubs) */
    free_response(r);
  } else {
    uint64_t sum = expect_tensor_result(r, 3);
    const float want[] = {20, 41, 62, 23, 44, 65}; /* x + 2 * row */
    download_f32(fd, 4, sum, shape23, 2, want);
    /* alpha omitted: its default 1; a float alpha */
    const float want1[] = {10, 21, 32, 13, 24, 35};
    download_f32(fd, 6, expect_tensor_result(call(fd, 5, "aten::add.Tensor", args, 2), 5), shape23,
                 2, want1);
    args[2] = iv_double(0.5);
    const float wanth[] = {5, 11, 17, 8, 14, 20};
    download_f32(fd, 8, expect_tensor_result(call(fd, 7, "aten::add.Tensor", args, 3), 7), shape23,
                 2, wanth);
    /* a shape mismatch */
    int64_t s2[] = {2};
    uint64_t w = upload_f32(fd, 9, s2, 1, row);
    args[1] = iv_handle(w);
    expect_error(call(fd, 10, "aten::add.Tensor", args, 3), 10, EC(INVALID_ARGUMENT), NULL);
  }
  close(fd);
  opd_server_stop(s);
}
END_TEST

/* srvtest::echo returns copies of its arguments: every argument kind the protocol carries
 * in, every result kind out. */
#define ECHO_NARGS 13
static int echo_kernel(const opd_kernel_ctx *ctx, opd_stack *st) {
  (void)ctx;
  opd_ivalue copies[ECHO_NARGS];
  opd_ivalue *args = opd_stack_last(st, ECHO_NARGS);
  for (int i = 0; i < ECHO_NARGS; i++) ck_assert_int_eq(opd_iv_copy(&copies[i], &args[i]), 0);
  opd_stack_drop(st, ECHO_NARGS);
  for (int i = 0; i < ECHO_NARGS; i++) ck_assert_int_eq(opd_stack_push(st, copies[i]), 0);
  return 0;
}

static void register_echo(void) {
  ck_assert_int_gt(
      opd_def("srvtest",
              "echo(Tensor self, int[2] pad, float f, Scalar s, str mode, bool flag, Tensor[] ts, "
              "Tensor?[] ots, ScalarType? dt=None, Device? dev=None, int[]? opt=None, *, float "
              "kw, bool kw2=True) -> (Tensor, int[], float, Scalar, str, bool, Tensor[], "
              "Tensor?[], ScalarType?, Device?, int[]?, float, bool)",
              OPD_HERE),
      0);
  static const opd_kernel k = {.boxed = echo_kernel, .name = "echo_kernel"};
  ck_assert_int_gt(opd_impl("srvtest::echo", OPD_NO_KEY, &k, OPD_HERE), 0);
}

START_TEST(test_argument_kinds) {
  register_echo();
  opd_server *s = start_server();
  int fd = hello(s);
  uint64_t x = upload_f32(fd, 1, shape23, 2, x6);
  uint64_t y = upload_f32(fd, 2, shape23, 2, x6);
  uint64_t hl[] = {x, y}, ohl[] = {y, 0};
  Opd__V1__HandleList ts = OPD__V1__HANDLE_LIST__INIT;
  ts.n_handles = 2;
  ts.handles = hl;
  Opd__V1__OptionalHandleList ots = OPD__V1__OPTIONAL_HANDLE_LIST__INIT;
  ots.n_handles = 2;
  ots.handles = ohl;
  Opd__V1__Device dev = OPD__V1__DEVICE__INIT;
  dev.type = 10;
  dev.index = -1;
  Opd__V1__IValue a[12];
  a[0] = iv_handle(x);
  a[1] = iv_int(3); /* int[2] from one int: [3, 3] */
  a[2] = iv_int(2); /* float from an int */
  a[3] = (Opd__V1__IValue)OPD__V1__IVALUE__INIT;
  a[3].value_case = OPD__V1__IVALUE__VALUE_B; /* Scalar: a bool stays a bool */
  a[3].b = 1;
  a[4] = iv_str("reflect");
  a[5] = (Opd__V1__IValue)OPD__V1__IVALUE__INIT;
  a[5].value_case = OPD__V1__IVALUE__VALUE_B;
  a[5].b = 0;
  a[6] = (Opd__V1__IValue)OPD__V1__IVALUE__INIT;
  a[6].value_case = OPD__V1__IVALUE__VALUE_TENSORS;
  a[6].tensors = &ts;
  a[7] = (Opd__V1__IValue)OPD__V1__IVALUE__INIT;
  a[7].value_case = OPD__V1__IVALUE__VALUE_OPTIONAL_TENSORS;
  a[7].optional_tensors = &ots;
  a[8] = (Opd__V1__IValue)OPD__V1__IVALUE__INIT;
  a[8].value_case = OPD__V1__IVALUE__VALUE_DTYPE;
  a[8].dtype = OPD__V1__DTYPE__BFLOAT16;
  a[9] = (Opd__V1__IValue)OPD__V1__IVALUE__INIT;
  a[9].value_case = OPD__V1__IVALUE__VALUE_DEVICE;
  a[9].device = &dev;
  a[10] = (Opd__V1__IValue)OPD__V1__IVALUE__INIT;
  a[10].value_case = OPD__V1__IVALUE__VALUE_NONE;
  a[10].none = 1;
  a[11] = iv_double(-1.25); /* kw, passed positionally */
  Opd__V1__Response *r = call(fd, 3, "srvtest::echo", a, 12);
  ck_assert_msg(r->body_case == OPD__V1__RESPONSE__BODY_CALL, "%s",
                r->body_case == OPD__V1__RESPONSE__BODY_ERROR ? r->error->message : "?");
  ck_assert_uint_eq(r->call->n_results, 13);
  Opd__V1__IValue **v = r->call->results;
  /* self: a new handle of the same tensor */
  ck_assert_int_eq(v[0]->value_case, OPD__V1__IVALUE__VALUE_TENSOR);
  uint64_t self2 = v[0]->tensor;
  ck_assert(self2 != x && self2 != y && self2 != 0);
  ck_assert_int_eq(v[1]->value_case, OPD__V1__IVALUE__VALUE_INTS);
  ck_assert_uint_eq(v[1]->ints->n_values, 2);
  ck_assert(v[1]->ints->values[0] == 3 && v[1]->ints->values[1] == 3);
  ck_assert(v[2]->value_case == OPD__V1__IVALUE__VALUE_D && v[2]->d == 2.0);
  ck_assert(v[3]->value_case == OPD__V1__IVALUE__VALUE_B && v[3]->b);
  ck_assert(v[4]->value_case == OPD__V1__IVALUE__VALUE_S && strcmp(v[4]->s, "reflect") == 0);
  ck_assert(v[5]->value_case == OPD__V1__IVALUE__VALUE_B && !v[5]->b);
  ck_assert(v[6]->value_case == OPD__V1__IVALUE__VALUE_TENSORS && v[6]->tensors->n_handles == 2);
  ck_assert(v[7]->value_case == OPD__V1__IVALUE__VALUE_OPTIONAL_TENSORS &&
            v[7]->optional_tensors->n_handles == 2 && v[7]->optional_tensors->handles[0] != 0 &&
            v[7]->optional_tensors->handles[1] == 0);
  ck_assert(v[8]->value_case == OPD__V1__IVALUE__VALUE_DTYPE &&
            v[8]->dtype == OPD__V1__DTYPE__BFLOAT16);
  ck_assert(v[9]->value_case == OPD__V1__IVALUE__VALUE_DEVICE && v[9]->device->type == 10 &&
            v[9]->device->index == -1);
  ck_assert(v[10]->value_case == OPD__V1__IVALUE__VALUE_NONE);
  ck_assert(v[11]->value_case == OPD__V1__IVALUE__VALUE_D && v[11]->d == -1.25);
  ck_assert(v[12]->value_case == OPD__V1__IVALUE__VALUE_B && v[12]->b); /* the default */
  uint64_t list0 = v[6]->tensors->handles[0];
  free_response(r);
  /* the returned handles are live tensors */
  download_f32(fd, 4, self2, shape23, 2, x6);
  download_f32(fd, 5, list0, shape23, 2, x6);

  /* refusals, each naming the argument */
  Opd__V1__IValue b[12];
  memcpy(b, a, sizeof b);
  expect_error(call(fd, 6, "srvtest::echo", b, 11), 6, EC(INVALID_ARGUMENT),
               "keyword-only argument 'kw'");
  b[1] = iv_double(3);
  expect_error(call(fd, 7, "srvtest::echo", b, 12), 7, EC(INVALID_ARGUMENT), "'int[2]'");
  memcpy(b, a, sizeof b);
  b[2] = iv_str("2");
  expect_error(call(fd, 8, "srvtest::echo", b, 12), 8, EC(INVALID_ARGUMENT), "'f'");
  memcpy(b, a, sizeof b);
  b[3] = iv_str("1");
  expect_error(call(fd, 9, "srvtest::echo", b, 12), 9, EC(INVALID_ARGUMENT), "'Scalar'");
  memcpy(b, a, sizeof b);
  hl[1] = 4242;
  expect_error(call(fd, 10, "srvtest::echo", b, 12), 10, EC(NOT_FOUND), "4242");
  hl[1] = 0;
  expect_error(call(fd, 11, "srvtest::echo", b, 12), 11, EC(INVALID_ARGUMENT), "handle 0");
  hl[1] = y;
  b[6] = a[7]; /* Tensor?[] where Tensor[] is expected */
  expect_error(call(fd, 12, "srvtest::echo", b, 12), 12, EC(INVALID_ARGUMENT), "'Tensor[]'");
  memcpy(b, a, sizeof b);
  b[8].dtype = 9;
  expect_error(call(fd, 13, "srvtest::echo", b, 12), 13, EC(INVALID_ARGUMENT), "dtype 9");
  memcpy(b, a, sizeof b);
  dev.type = 99;
  expect_error(call(fd, 14, "srvtest::echo", b, 12), 14, EC(INVALID_ARGUMENT), "device");
  dev.type = 10;
  b[4] = iv_int(1);
  expect_error(call(fd, 15, "srvtest::echo", b, 12), 15, EC(INVALID_ARGUMENT), "'mode'");
  /* nothing refused left a handle behind: the next one is the next number */
  int64_t s6[] = {6};
  ck_assert_uint_eq(call_view(fd, 16, x, s6, 1), list0 + 3);
  close(fd);
  opd_server_stop(s);
}
END_TEST

START_TEST(test_pipelining) {
  opd_server *s = start_server();
  int fd = hello(s);
  /* 64 rounds of upload, view, transpose, download (handles are issued in order from 1,
   * so the requests can name them before the responses arrive) */
  enum { ROUNDS = 64 };
  outbuf b = {0};
  uint64_t id = 100, handle = 0;
  int64_t s32[] = {3, 2};
  for (int i = 0; i < ROUNDS; i++) {
    float v[6];
    for (int k = 0; k < 6; k++) v[k] = (float)(i * 6 + k);
    upload_into(&b, id++, OPD__V1__DTYPE__FLOAT32, shape23, 2, v, sizeof v);
    uint64_t h = ++handle;
    Opd__V1__IntList l;
    Opd__V1__IValue va[] = {iv_handle(h), iv_ints(&l, s32, 2)};
    call_request(&b, id++, "aten::view", va, 2);
    ++handle;
    Opd__V1__IValue ta[] = {iv_handle(h), iv_int(0), iv_int(1)};
    call_request(&b, id++, "aten::transpose.int", ta, 3);
    uint64_t t = ++handle;
    download_request(&b, id++, t);
  }
  send_all(fd, b.data, b.len);
  free(b.data);
  id = 100;
  handle = 0;
  for (int i = 0; i < ROUNDS; i++) {
    ck_assert_uint_eq(expect_handle(recv_response(fd), id++), ++handle);
    ck_assert_uint_eq(expect_tensor_result(recv_response(fd), id), ++handle);
    id++;
    ck_assert_uint_eq(expect_tensor_result(recv_response(fd), id), ++handle);
    id++;
    size_t n;
    float *got = expect_download(fd, id++, OPD__V1__DTYPE__FLOAT32, s32, 2, &n);
    ck_assert_uint_eq(n, 24);
    for (int k = 0; k < 6; k++) {
      int r = k / 2, c = k % 2; /* transposed: element (r, c) is x[c][r] */
      ck_assert_float_eq(got[k], (float)(i * 6 + c * 3 + r));
    }
    free(got);
  }
  close(fd);
  opd_server_stop(s);
}
END_TEST

START_TEST(test_release) {
  opd_server *s = start_server();
  uint64_t base = cpu_in_use();
  int fd = hello(s);
  uint64_t x = upload_f32(fd, 1, shape23, 2, x6);
  int64_t s6[] = {6};
  uint64_t v = call_view(fd, 2, x, s6, 1);
  ck_assert_uint_gt(cpu_in_use(), base);
  uint64_t hs[] = {x};
  expect_ack(release(fd, 3, hs, 1), 3);
  /* the view keeps the storage alive */
  download_f32(fd, 4, v, s6, 1, x6);
  /* a released handle is unknown */
  Opd__V1__IntList l;
  Opd__V1__IValue args[] = {iv_handle(x), iv_ints(&l, s6, 1)};
  expect_error(call(fd, 5, "aten::view", args, 2), 5, EC(NOT_FOUND), "unknown tensor handle");
  expect_error(release(fd, 6, hs, 1), 6, EC(NOT_FOUND), "nothing was released");
  outbuf b = {0};
  download_request(&b, 7, x);
  send_all(fd, b.data, b.len);
  free(b.data);
  expect_error_next(fd, 7, EC(NOT_FOUND), "unknown tensor handle");
  /* a list with an unknown handle releases nothing */
  uint64_t mixed[] = {v, 999};
  expect_error(release(fd, 8, mixed, 2), 8, EC(NOT_FOUND), "999");
  download_f32(fd, 9, v, s6, 1, x6);
  /* a repeated handle is released once */
  uint64_t twice[] = {v, v};
  expect_ack(release(fd, 10, twice, 2), 10);
  expect_in_use(base);
  expect_alive(fd, 11);
  close(fd);
  opd_server_stop(s);
}
END_TEST

/* Calls aten::neg on x; with Meta included its Meta kernel runs and the result has no data
 * (or, while the kernel is a development stub, the stub says it is the Meta one). Returns
 * whether it ran on the Meta kernel. */
static bool neg_went_to_meta(int fd, uint64_t id, uint64_t x) {
  Opd__V1__IValue args[] = {iv_handle(x)};
  Opd__V1__Response *r = call(fd, id, "aten::neg", args, 1);
  ck_assert_ptr_nonnull(r);
  if (r->body_case == OPD__V1__RESPONSE__BODY_ERROR) {
    ck_assert_int_eq(r->error->code, EC(UNIMPLEMENTED));
    bool meta = strstr(r->error->message, "meta") != NULL;
    free_response(r);
    return meta;
  }
  uint64_t h = expect_tensor_result(r, id);
  outbuf b = {0};
  download_request(&b, id + 1, h);
  send_all(fd, b.data, b.len);
  free(b.data);
  r = recv_response(fd);
  if (r->body_case == OPD__V1__RESPONSE__BODY_ERROR) {
    expect_error(r, id + 1, EC(INVALID_ARGUMENT), "Meta tensor");
    return true;
  }
  ck_assert_int_eq(r->body_case, OPD__V1__RESPONSE__BODY_DOWNLOAD);
  ck_assert_uint_eq(r->download->nbytes, 24);
  free_response(r);
  float got[6];
  ck_assert(recv_exact(fd, got, sizeof got));
  for (int i = 0; i < 6; i++) ck_assert_float_eq(got[i], -x6[i]);
  return false;
}

START_TEST(test_dispatch_state) {
  opd_server *s = start_server();
  int fd = hello(s);
  uint64_t x = upload_f32(fd, 1, shape23, 2, x6);
  int64_t s6[] = {6};
  /* with Meta included, a CPU tensor's call goes to the Meta kernel */
  char *meta[] = {"Meta"};
  expect_ack(set_dispatch(fd, 2, meta, 1), 2);
  ck_assert(neg_went_to_meta(fd, 3, x));
  /* view's Meta kernel is its CPU one: a view of a CPU tensor, with its data */
  download_f32(fd, 6, call_view(fd, 5, x, s6, 1), s6, 1, x6);
  /* the state is per session: another session computes on the CPU */
  int fd2 = hello(s);
  uint64_t y = upload_f32(fd2, 1, shape23, 2, x6);
  ck_assert(!neg_went_to_meta(fd2, 2, y));
  download_f32(fd2, 5, call_view(fd2, 4, y, s6, 1), s6, 1, x6);
  close(fd2);
  /* back to the defaults */
  expect_ack(set_dispatch(fd, 7, NULL, 0), 7);
  ck_assert(!neg_went_to_meta(fd, 8, x));
  /* bad key names */
  char *bogus[] = {"NoSuchKey"};
  expect_error(set_dispatch(fd, 10, bogus, 1), 10, EC(INVALID_ARGUMENT), "NoSuchKey");
  char *alias[] = {"Autograd"};
  expect_error(set_dispatch(fd, 11, alias, 1), 11, EC(INVALID_ARGUMENT), "Autograd");
  /* a refused state changes nothing: still the defaults */
  download_f32(fd, 13, call_view(fd, 12, x, s6, 1), s6, 1, x6);
  close(fd);
  opd_server_stop(s);
}
END_TEST

START_TEST(test_bad_frames) {
  opd_server *s = start_server_with(&(test_limits){.max_frame_bytes = 4096}, NULL);
  int live = hello(s);
  uint64_t x = upload_f32(live, 1, shape23, 2, x6);

  /* a truncated frame, then close */
  int fd = hello(s);
  uint8_t part[] = {100, 0, 0, 0, 1, 2, 3};
  send_all(fd, part, sizeof part);
  close(fd);
  expect_alive(live, 2);

  /* an oversize frame: refused, connection closed */
  fd = hello(s);
  uint8_t big[] = {0x01, 0x10, 0, 0}; /* 4097 bytes */
  send_all(fd, big, sizeof big);
  expect_error_next(fd, 0, EC(RESOURCE_EXHAUSTED), "max_frame_bytes");
  ck_assert(closed_by_server(fd));
  close(fd);
  expect_alive(live, 3);

  /* garbage bytes in a frame: refused, the session goes on */
  fd = hello(s);
  uint8_t junk[] = {6, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff};
  send_all(fd, junk, sizeof junk);
  expect_error_next(fd, 0, EC(INVALID_ARGUMENT), "malformed");
  expect_alive(fd, 4);
  /* a request with no body (an unknown request type) */
  Opd__V1__Request r = OPD__V1__REQUEST__INIT;
  r.id = 5;
  send_request(fd, &r);
  expect_error_next(fd, 5, EC(INVALID_ARGUMENT), "no body");
  /* an unknown field number (a newer client's request type) reads as no body too */
  uint8_t unknown[] = {5, 0, 0, 0, 0x08, 0x06, 0xa2, 0x06, 0x00}; /* id 6, field 100: empty */
  send_all(fd, unknown, sizeof unknown);
  expect_error_next(fd, 6, EC(INVALID_ARGUMENT), "no body");
  expect_alive(fd, 7);
  /* a garbage stream: a length far over the limit */
  send_all(fd, "GET / HTTP/1.1\r\n\r\n", 18);
  expect_error_next(fd, 0, EC(RESOURCE_EXHAUSTED), "max_frame_bytes");
  ck_assert(closed_by_server(fd));
  close(fd);

  /* the live session kept its tensor */
  download_f32(live, 8, x, shape23, 2, x6);
  close(live);
  opd_server_stop(s);
}
END_TEST

START_TEST(test_bad_calls) {
  opd_server *s = start_server();
  int fd = hello(s);
  uint64_t x = upload_f32(fd, 1, shape23, 2, x6);
  int64_t s6[] = {6}, s7[] = {7};
  Opd__V1__IntList l;

  /* unknown operator */
  Opd__V1__IValue a1[] = {iv_handle(x)};
  expect_error(call(fd, 2, "aten::no_such_op", a1, 1), 2, EC(NOT_FOUND), "aten::no_such_op");
  /* too many arguments */
  Opd__V1__IValue a3[] = {iv_handle(x), iv_ints(&l, s6, 1), iv_int(1)};
  expect_error(call(fd, 3, "aten::view", a3, 3), 3, EC(INVALID_ARGUMENT), "expected at most 2");
  /* a missing required argument */
  expect_error(call(fd, 4, "aten::view", a1, 1), 4, EC(INVALID_ARGUMENT), "'size'");
  /* wrong types: a string for a Tensor, a float for an int list, a float for an int */
  Opd__V1__IValue a4[] = {iv_str("x"), iv_ints(&l, s6, 1)};
  expect_error(call(fd, 5, "aten::view", a4, 2), 5, EC(INVALID_ARGUMENT), "'Tensor'");
  Opd__V1__IValue a5[] = {iv_handle(x), iv_double(6)};
  expect_error(call(fd, 6, "aten::view", a5, 2), 6, EC(INVALID_ARGUMENT), "SymInt[]");
  Opd__V1__IValue a6[] = {iv_handle(x), iv_double(0), iv_int(1)};
  expect_error(call(fd, 7, "aten::transpose.int", a6, 3), 7, EC(INVALID_ARGUMENT), "'dim0'");
  /* None for a non-optional argument; an empty IValue */
  Opd__V1__IValue a7[] = {iv_handle(x), OPD__V1__IVALUE__INIT, iv_int(1)};
  a7[1].value_case = OPD__V1__IVALUE__VALUE_NONE;
  a7[1].none = 1;
  expect_error(call(fd, 8, "aten::transpose.int", a7, 3), 8, EC(INVALID_ARGUMENT), "None");
  a7[1].value_case = OPD__V1__IVALUE__VALUE__NOT_SET;
  expect_error(call(fd, 9, "aten::transpose.int", a7, 3), 9, EC(INVALID_ARGUMENT), "empty");
  /* a handle of another session, a handle never issued, handle 0 */
  int other = hello(s);
  uint64_t y = upload_f32(other, 1, shape23, 2, x6);
  uint64_t y2 = upload_f32(other, 2, shape23, 2, x6); /* a number this session never had */
  ck_assert_uint_gt(y2, x);
  Opd__V1__IValue a8[] = {iv_handle(y2), iv_ints(&l, s6, 1)};
  expect_error(call(fd, 10, "aten::view", a8, 2), 10, EC(NOT_FOUND), "unknown tensor handle");
  a8[0] = iv_handle(0);
  expect_error(call(fd, 11, "aten::view", a8, 2), 11, EC(INVALID_ARGUMENT), "handle 0");
  (void)y;
  /* a shape mismatch, a dimension out of range */
  Opd__V1__IValue a9[] = {iv_handle(x), iv_ints(&l, s7, 1)};
  expect_error(call(fd, 12, "aten::view", a9, 2), 12, EC(INVALID_ARGUMENT), "[7]");
  Opd__V1__IValue a10[] = {iv_handle(x), iv_int(0), iv_int(5)};
  expect_error(call(fd, 13, "aten::transpose.int", a10, 3), 13, EC(INDEX_OUT_OF_RANGE), "range");
  /* a literal whose byte count disagrees with dtype x shape, and an oversize one */
  Opd__V1__TensorLiteral lit = OPD__V1__TENSOR_LITERAL__INIT;
  lit.dtype = OPD__V1__DTYPE__FLOAT32;
  lit.n_shape = 2;
  lit.shape = (int64_t *)shape23;
  lit.data.data = (uint8_t *)x6;
  lit.data.len = sizeof x6 - 4;
  Opd__V1__IValue a11[] = {OPD__V1__IVALUE__INIT, iv_ints(&l, s6, 1)};
  a11[0].value_case = OPD__V1__IVALUE__VALUE_LITERAL;
  a11[0].literal = &lit;
  expect_error(call(fd, 14, "aten::view", a11, 2), 14, EC(INVALID_ARGUMENT), "literal");
  lit.dtype = 9; /* not a dtype */
  lit.data.len = sizeof x6;
  expect_error(call(fd, 15, "aten::view", a11, 2), 15, EC(INVALID_ARGUMENT), "dtype");

  /* uploads: byte count disagreeing with dtype x shape (the declared bytes are skipped and
   * the session goes on), bad dtype, too many dimensions, a negative one, an overflow */
  outbuf b = {0};
  upload_into(&b, 16, OPD__V1__DTYPE__FLOAT32, shape23, 2, x6, 20);
  ping_request(&b, 17);
  send_all(fd, b.data, b.len);
  free(b.data);
  expect_error_next(fd, 16, EC(INVALID_ARGUMENT), "need 24 bytes");
  Opd__V1__Response *r = recv_response(fd);
  ck_assert_int_eq(r->body_case, OPD__V1__RESPONSE__BODY_PONG);
  free_response(r);
  b = (outbuf){0};
  upload_into(&b, 18, 8, shape23, 2, x6, 24); /* 8 is not a dtype */
  int64_t many[65];
  for (int i = 0; i < 65; i++) many[i] = 1;
  upload_into(&b, 19, OPD__V1__DTYPE__FLOAT32, many, 65, x6, 4);
  int64_t neg[] = {-2, -3};
  upload_into(&b, 20, OPD__V1__DTYPE__FLOAT32, neg, 2, x6, 24);
  int64_t huge[] = {INT64_MAX / 2, 16};
  upload_request(&b, 21, OPD__V1__DTYPE__FLOAT32, huge, 2, 0);
  send_all(fd, b.data, b.len);
  free(b.data);
  expect_error_next(fd, 18, EC(INVALID_ARGUMENT), "dtype");
  expect_error_next(fd, 19, EC(INVALID_ARGUMENT), "dimensions");
  expect_error_next(fd, 20, EC(INVALID_ARGUMENT), "negative");
  expect_error_next(fd, 21, EC(INVALID_ARGUMENT), "overflow");
  /* an upload to another device */
  int64_t dev[] = {1};
  Opd__V1__Device meta = OPD__V1__DEVICE__INIT;
  meta.type = 10;
  Opd__V1__Upload u = OPD__V1__UPLOAD__INIT;
  u.dtype = OPD__V1__DTYPE__FLOAT32;
  u.n_shape = 1;
  u.shape = dev;
  u.device = &meta;
  u.nbytes = 4;
  Opd__V1__Request ur = OPD__V1__REQUEST__INIT;
  ur.id = 23;
  ur.body_case = OPD__V1__REQUEST__BODY_UPLOAD;
  ur.upload = &u;
  b = (outbuf){0};
  frame_request(&b, &ur);
  out_put(&b, x6, 4);
  send_all(fd, b.data, b.len);
  free(b.data);
  expect_error_next(fd, 23, EC(INVALID_ARGUMENT), "CPU");
  expect_alive(fd, 24);
  download_f32(fd, 25, x, shape23, 2, x6);
  close(fd);
  close(other);
  opd_server_stop(s);
}
END_TEST

START_TEST(test_limits_handles_bytes) {
  opd_server *s = start_server_with(&(test_limits){.max_handles = 3, .max_bytes_held = 100}, NULL);
  int fd = hello(s);
  int64_t s6[] = {6};
  uint64_t x = upload_f32(fd, 1, shape23, 2, x6); /* 24 bytes */
  uint64_t v = call_view(fd, 2, x, s6, 1);        /* shares x's storage: no new bytes */
  uint64_t t = call_transpose(fd, 3, x, 0, 1);
  /* a fourth handle */
  Opd__V1__IntList l;
  Opd__V1__IValue args[] = {iv_handle(x), iv_ints(&l, s6, 1)};
  expect_error(call(fd, 4, "aten::view", args, 2), 4, EC(RESOURCE_EXHAUSTED), "max_handles");
  outbuf b = {0};
  upload_into(&b, 5, OPD__V1__DTYPE__FLOAT32, s6, 1, x6, 24);
  ping_request(&b, 6);
  send_all(fd, b.data, b.len);
  free(b.data);
  expect_error_next(fd, 5, EC(RESOURCE_EXHAUSTED), "max_handles");
  Opd__V1__Response *r = recv_response(fd);
  ck_assert(r->id == 6 && r->body_case == OPD__V1__RESPONSE__BODY_PONG);
  free_response(r);
  uint64_t hs[] = {v, t};
  expect_ack(release(fd, 8, hs, 2), 8);
  /* bytes: 24 held, 80 more is over 100 (the bytes are skipped) */
  float big[20] = {0};
  int64_t s20[] = {20};
  b = (outbuf){0};
  upload_into(&b, 9, OPD__V1__DTYPE__FLOAT32, s20, 1, big, sizeof big);
  send_all(fd, b.data, b.len);
  free(b.data);
  expect_error_next(fd, 9, EC(RESOURCE_EXHAUSTED), "max_bytes_held");
  expect_alive(fd, 10);
  /* 76 more is exactly 100 */
  int64_t s19[] = {19};
  upload(fd, 11, OPD__V1__DTYPE__FLOAT32, s19, 1, big, 76);
  /* a release pipelined before an upload that needs its bytes: the upload waits for it */
  b = (outbuf){0};
  uint64_t hx[] = {x};
  release_request(&b, 12, hx, 1);
  upload_into(&b, 13, OPD__V1__DTYPE__FLOAT32, s6, 1, x6, 24);
  send_all(fd, b.data, b.len);
  free(b.data);
  expect_ack(recv_response(fd), 12);
  uint64_t y = expect_handle(recv_response(fd), 13);
  download_f32(fd, 14, y, s6, 1, x6);
  close(fd);
  opd_server_stop(s);
}
END_TEST

START_TEST(test_limits_in_flight) {
  opd_server *s = start_server_with(&(test_limits){.max_in_flight = 2, .workers = 1}, NULL);
  int fd = hello(s);
  uint64_t x = upload_f32(fd, 1, shape23, 2, x6);
  int64_t s6[] = {6};
  enum { N = 200 };
  outbuf b = {0};
  for (int i = 0; i < N; i++) {
    Opd__V1__IntList l;
    Opd__V1__IValue args[] = {iv_handle(x), iv_ints(&l, s6, 1)};
    call_request(&b, 100 + (uint64_t)i, "aten::view", args, 2);
  }
  send_all(fd, b.data, b.len);
  free(b.data);
  int ok = 0, refused = 0;
  for (int i = 0; i < N; i++) {
    Opd__V1__Response *r = recv_response(fd);
    ck_assert_ptr_nonnull(r);
    ck_assert_uint_eq(r->id, 100 + (uint64_t)i); /* every request answered, in order */
    if (r->body_case == OPD__V1__RESPONSE__BODY_CALL) {
      ok++;
      free_response(r);
    } else {
      expect_error(r, 100 + (uint64_t)i, EC(RESOURCE_EXHAUSTED), "max_in_flight");
      refused++;
    }
  }
  ck_assert_int_ge(ok, 2);
  ck_assert_int_ge(refused, 1);
  expect_alive(fd, 1000);
  close(fd);
  opd_server_stop(s);
}
END_TEST

START_TEST(test_large_tensor) {
  /* 16 MiB through a server whose frames are at most 4 KiB: the bytes stream around frames */
  opd_server *s = start_server_with(&(test_limits){.max_frame_bytes = 4096}, NULL);
  uint64_t base = cpu_in_use();
  int fd = hello(s);
  enum { N = 4 << 20 };
  float *v = malloc(N * sizeof *v);
  for (int i = 0; i < N; i++) v[i] = (float)i * 0.5f;
  int64_t shape[] = {1024, N / 1024};
  uint64_t h = upload_f32(fd, 1, shape, 2, v);
  download_f32(fd, 2, h, shape, 2, v);
  /* transposed: gathered into row-major order */
  uint64_t t = call_transpose(fd, 3, h, 0, 1);
  int64_t tshape[] = {N / 1024, 1024};
  float *vt = malloc(N * sizeof *vt);
  for (int r = 0; r < N / 1024; r++)
    for (int c = 0; c < 1024; c++) vt[r * 1024 + c] = v[c * (N / 1024) + r];
  download_f32(fd, 4, t, tshape, 2, vt);
  free(vt);
  free(v);
  close(fd);
  expect_in_use(base);
  opd_server_stop(s);
}
END_TEST

START_TEST(test_disconnect_mid_request) {
  opd_server *s = start_server();
  uint64_t base = cpu_in_use();
  int live = hello(s);
  uint64_t x = upload_f32(live, 1, shape23, 2, x6);
  uint64_t live_bytes = cpu_in_use();

  /* mid-frame */
  int fd = hello(s);
  upload_f32(fd, 1, shape23, 2, x6);
  uint8_t part[] = {50, 0, 0, 0, 0x08, 0x01};
  send_all(fd, part, sizeof part);
  close(fd);
  /* mid-raw-payload: 1 MiB declared, 1000 bytes sent */
  fd = hello(s);
  outbuf b = {0};
  int64_t shape[] = {1 << 18};
  upload_request(&b, 2, OPD__V1__DTYPE__FLOAT32, shape, 1, 1 << 20);
  uint8_t zeros[1000] = {0};
  out_put(&b, zeros, sizeof zeros);
  send_all(fd, b.data, b.len);
  free(b.data);
  sleep_ms(50);
  close(fd);
  /* many requests queued, then gone without reading a response */
  fd = hello(s);
  b = (outbuf){0};
  int64_t s6[] = {6};
  upload_into(&b, 1, OPD__V1__DTYPE__FLOAT32, shape23, 2, x6, sizeof x6);
  for (int i = 0; i < 500; i++) {
    Opd__V1__IntList l;
    Opd__V1__IValue args[] = {iv_handle(1), iv_ints(&l, s6, 1)};
    call_request(&b, 10 + (uint64_t)i, "aten::view", args, 2);
    if (i % 50 == 0) download_request(&b, 5000 + (uint64_t)i, 1);
  }
  send_all(fd, b.data, b.len);
  free(b.data);
  close(fd);
  /* every tensor of those sessions is released; the live one is served */
  expect_in_use(live_bytes);
  expect_alive(live, 2);
  download_f32(live, 3, x, shape23, 2, x6);
  close(live);
  expect_in_use(base);
  opd_server_stop(s);
}
END_TEST

START_TEST(test_unix_socket) {
  char path[] = "/tmp/opd-test-XXXXXX";
  ck_assert_ptr_nonnull(mkdtemp(path));
  char sock[64], url[96];
  snprintf(sock, sizeof sock, "%s/opd.sock", path);
  snprintf(url, sizeof url, "unix://%s", sock);
  /* a stale socket file (nothing listens) is replaced */
  int stale = socket(AF_UNIX, SOCK_STREAM, 0);
  struct sockaddr_un a = {.sun_family = AF_UNIX};
  snprintf(a.sun_path, sizeof a.sun_path, "%s", sock);
  ck_assert_int_eq(bind(stale, (struct sockaddr *)&a, sizeof a), 0);
  close(stale);
  opd_server *s = start_server_with(NULL, url);
  ck_assert_str_eq(opd_server_listener_url(s, 0), url);
  ck_assert_int_eq(opd_server_listener_port(s, 0), -1);
  struct stat st;
  ck_assert_int_eq(stat(sock, &st), 0);
  ck_assert_int_eq(st.st_mode & 0777, 0600);
  /* a live server's socket is not taken over */
  opd_server_config cfg;
  opd_server_config_init(&cfg);
  opd_server_config_clear_listen(&cfg);
  opd_server_config_add_listen(&cfg, url);
  cfg.log_level = OPD_LOG_ERROR;
  opd_server *s2;
  ck_assert_int_lt(opd_server_start(&cfg, &s2), 0);
  ck_assert_msg(strstr(opd_last_error(), "already listening"), "%s", opd_last_error());
  opd_server_config_destroy(&cfg);
  /* the protocol over it */
  int fd = socket(AF_UNIX, SOCK_STREAM, 0);
  ck_assert_int_eq(connect(fd, (struct sockaddr *)&a, sizeof a), 0);
  hello_version(fd, 1, 1);
  Opd__V1__Response *r = recv_response(fd);
  ck_assert_int_eq(r->body_case, OPD__V1__RESPONSE__BODY_HELLO);
  free_response(r);
  uint64_t x = upload_f32(fd, 2, shape23, 2, x6);
  download_f32(fd, 3, x, shape23, 2, x6);
  close(fd);
  opd_server_stop(s);
  ck_assert_int_ne(access(sock, F_OK), 0); /* removed on stop */
  rmdir(path);
}
END_TEST

static char *write_temp_bytes(const char *text, size_t len) {
  static char path[64];
  snprintf(path, sizeof path, "/tmp/opd-config-XXXXXX");
  int fd = mkstemp(path);
  ck_assert_int_ge(fd, 0);
  for (size_t put = 0; put < len;) {
    ssize_t n = write(fd, text + put, len - put);
    ck_assert_int_gt(n, 0);
    put += (size_t)n;
  }
  close(fd);
  return path;
}

static char *write_temp(const char *text) {
  return write_temp_bytes(text, strlen(text));
}

static void expect_config_error_bytes(const char *text, size_t len, const char *needle) {
  opd_server_config c;
  opd_server_config_init(&c);
  char *path = write_temp_bytes(text, len);
  int rc = opd_server_config_load(&c, path);
  unlink(path);
  ck_assert_msg(rc == OPD_EINVAL, "'%.200s' was accepted", text);
  ck_assert_msg(strstr(opd_last_error(), needle), "'%.200s': message '%s' lacks '%s'", text,
                opd_last_error(), needle);
  /* unchanged */
  ck_assert_uint_eq(c.max_handles, 65536);
  ck_assert_uint_eq(c.num_listen, 1);
  ck_assert_str_eq(c.listen[0], "tcp://127.0.0.1:7470");
  ck_assert_str_eq(c.status, "");
  ck_assert_str_eq(c.admin, "");
  opd_server_config_destroy(&c);
}

static void expect_config_error(const char *text, const char *needle) {
  expect_config_error_bytes(text, strlen(text), needle);
}

static void expect_set_error(opd_server_config *c, const char *key, const char *value,
                             const char *needle) {
  ck_assert_msg(opd_server_config_set(c, key, value) == OPD_EINVAL, "%s '%.200s' was accepted", key,
                value);
  ck_assert_msg(strstr(opd_last_error(), needle), "%s '%.200s': message '%s' lacks '%s'", key,
                value, opd_last_error(), needle);
}

static void expect_set(opd_server_config *c, const char *key, const char *value, const char *field,
                       const char *stored) {
  ck_assert_msg(opd_server_config_set(c, key, value) == 0, "%s '%s': %s", key, value,
                opd_last_error());
  ck_assert_str_eq(field, stored);
}

START_TEST(test_config) {
  opd_server_config c;
  opd_server_config_init(&c);
  ck_assert_uint_eq(c.num_listen, 1);
  ck_assert_str_eq(c.listen[0], "tcp://127.0.0.1:7470");
  ck_assert_uint_eq(c.max_frame_bytes, 1 << 20);
  ck_assert_uint_eq(c.max_bytes_held, UINT64_C(8) << 30);
  ck_assert_uint_eq(c.drain_timeout_ms, 5000);
  ck_assert_uint_eq(c.unix_socket_mode, 0600);
  /* the shipped file holds the defaults */
  ck_assert_int_eq(opd_server_config_load(&c, OPD_SOURCE_DIR "/config/opd.json"), 0);
  opd_server_config d;
  opd_server_config_init(&d);
  ck_assert_uint_eq(c.num_listen, d.num_listen);
  ck_assert_str_eq(c.listen[0], d.listen[0]);
  ck_assert(c.workers == d.workers && c.max_frame_bytes == d.max_frame_bytes &&
            c.max_literal_bytes == d.max_literal_bytes && c.max_handles == d.max_handles &&
            c.max_bytes_held == d.max_bytes_held && c.max_in_flight == d.max_in_flight &&
            c.drain_timeout_ms == d.drain_timeout_ms && c.unix_socket_mode == d.unix_socket_mode &&
            c.log_level == d.log_level && c.cuda_workers_per_device == d.cuda_workers_per_device &&
            c.short_job_us == d.short_job_us && c.loop_call_ns == d.loop_call_ns &&
            c.worker_nice == d.worker_nice && c.max_session_jobs == d.max_session_jobs &&
            c.max_session_cost_ms == d.max_session_cost_ms && c.max_priority == d.max_priority);
  ck_assert_str_eq(c.status, OPD__DEFAULT_STATUS); /* the daemon's, which embedders opt into */
  ck_assert_str_eq(c.admin, d.admin);              /* null: the default */
  ck_assert_str_eq(c.admin_tcp, d.admin_tcp);
  ck_assert_str_eq(c.admin_token_file, d.admin_token_file);
  ck_assert_str_eq(c.plugin_dir, d.plugin_dir);
  opd_server_config_destroy(&d);
  /* and it lists every option, as docs/CONFIG.md's table does */
  json_t *shipped = json_load_file(OPD_SOURCE_DIR "/config/opd.json", 0, NULL);
  ck_assert_ptr_nonnull(shipped);
  FILE *doc = fopen(OPD_SOURCE_DIR "/docs/CONFIG.md", "r");
  ck_assert_ptr_nonnull(doc);
  static char doc_text[1 << 16];
  doc_text[fread(doc_text, 1, sizeof doc_text - 1, doc)] = '\0';
  fclose(doc);
  ck_assert_uint_eq(json_object_size(shipped), opd__num_options);
  for (size_t i = 0; i < opd__num_options; i++) {
    char row[64];
    snprintf(row, sizeof row, "\n| `%s` |", opd__options[i].key);
    ck_assert_msg(json_object_get(shipped, opd__options[i].key), "config/opd.json lacks %s",
                  opd__options[i].key);
    ck_assert_msg(strstr(doc_text, row), "docs/CONFIG.md has no row for %s", opd__options[i].key);
  }
  json_decref(shipped);
  /* a file overrides; listen replaces the list */
  char *path = write_temp("{\"listen\": [\"unix:///tmp/a.sock\", \"tcp://[::1]:0\"], "
                          "\"workers\": 3, \"max_in_flight\": 7, \"unix_socket_mode\": \"0660\", "
                          "\"log_level\": \"debug\"}");
  ck_assert_int_eq(opd_server_config_load(&c, path), 0);
  unlink(path);
  ck_assert_uint_eq(c.num_listen, 2);
  ck_assert_str_eq(c.listen[1], "tcp://[::1]:0");
  ck_assert_uint_eq(c.workers, 3);
  ck_assert_uint_eq(c.max_in_flight, 7);
  ck_assert_uint_eq(c.unix_socket_mode, 0660);
  ck_assert_int_eq(c.log_level, OPD_LOG_DEBUG);
  /* flags as text */
  ck_assert_int_eq(opd_server_config_set(&c, "max_handles", "12"), 0);
  ck_assert_uint_eq(c.max_handles, 12);
  ck_assert_int_eq(opd_server_config_set(&c, "max_handles", "0"), OPD_EINVAL);
  ck_assert_int_eq(opd_server_config_set(&c, "max_handles", "-1"), OPD_EINVAL);
  ck_assert_int_eq(opd_server_config_set(&c, "max_handles", "12x"), OPD_EINVAL);
  ck_assert_int_eq(opd_server_config_set(&c, "nope", "1"), OPD_EINVAL);
  ck_assert(strstr(opd_last_error(), "nope"));
  ck_assert_int_eq(opd_server_config_set(&c, "log_level", "loud"), OPD_EINVAL);
  ck_assert_int_eq(opd_server_config_set(&c, "max_priority", "high"), 0);
  ck_assert_int_eq(c.max_priority, OPD_PRIORITY_HIGH);
  ck_assert_int_eq(opd_server_config_set(&c, "max_priority", "urgent"), OPD_EINVAL);
  ck_assert(strstr(opd_last_error(), "must be one of normal, low, high"));
  ck_assert_int_eq(opd_server_config_set(&c, "max_session_jobs", "0"), OPD_EINVAL);
  ck_assert_int_eq(opd_server_config_set(&c, "listen", "tcp://127.0.0.1:1"), 0);
  ck_assert_uint_eq(c.num_listen, 3);
  opd_server_config_destroy(&c);
  /* bad files are refused with a clear message and change nothing */
  expect_config_error("{\"max_handles\": 1, \"colour\": 2}", "unknown option 'colour'");
  expect_config_error("{\"workers\": \"four\"}", "'workers' must be a whole number");
  expect_config_error("{\"workers\": -1}", "negative");
  expect_config_error("{\"max_frame_bytes\": 12}", "from 4096");
  expect_config_error("{\"listen\": []}", "non-empty");
  expect_config_error("{\"listen\": [\"http://x:1\"]}", "tcp://HOST:PORT");
  expect_config_error("{\"listen\": [\"tcp://example.com:1\"]}", "numeric");
  expect_config_error("{\"listen\": [\"tcp://127.0.0.1:99999\"]}", "port");
  expect_config_error("{\"unix_socket_mode\": \"0999\"}", "octal");
  expect_config_error("{\"log_level\": 3}", "string");
  expect_config_error("{\"max_priority\": 2}", "string");
  expect_config_error("{\"short_job_us\": 0}", "from 1");
  expect_config_error("{\"worker_nice\": 20}", "from 0 to 19");
  expect_config_error("{\"workers\": 1,", "line");
  expect_config_error("[1]", "object");
  expect_config_error("{\"workers\": 1, \"workers\": 2}", "duplicate");
  /* no listen address at start */
  opd_server_config_init(&c);
  opd_server_config_clear_listen(&c);
  opd_server *s;
  ck_assert_int_eq(opd_server_start(&c, &s), OPD_EINVAL);
  ck_assert(strstr(opd_last_error(), "listen"));
  opd_server_config_destroy(&c);
}
END_TEST

/* [Note: Addresses in the configuration] */
START_TEST(test_config_addresses) {
  opd_server_config c;
  opd_server_config_init(&c);
  /* status: http://HOST:PORT (a trailing / too) or HOST:PORT, kept bare */
  expect_set(&c, "status", "http://127.0.0.1:7471", c.status, "127.0.0.1:7471");
  expect_set(&c, "status", "http://[::1]:0/", c.status, "[::1]:0");
  expect_set(&c, "status", "localhost:8080", c.status, "localhost:8080");
  expect_set(&c, "status", "", c.status, "");
  /* admin: unix:///PATH or a path, kept as the path */
  expect_set(&c, "admin", "unix:///tmp/opd-a.sock", c.admin, "/tmp/opd-a.sock");
  expect_set(&c, "admin", "unix://run/opd-b.sock", c.admin, "run/opd-b.sock");
  expect_set(&c, "admin", "/tmp/opd-c.sock", c.admin, "/tmp/opd-c.sock");
  /* admin_tcp: tcp://HOST:PORT or HOST:PORT */
  expect_set(&c, "admin_tcp", "tcp://127.0.0.1:7472", c.admin_tcp, "127.0.0.1:7472");
  expect_set(&c, "admin_tcp", "127.0.0.1:7473", c.admin_tcp, "127.0.0.1:7473");
  /* a URL of another scheme is refused, naming the options that take it; nothing changes */
  expect_set_error(&c, "admin", "tcp://127.0.0.1:7472",
                   "'admin' must be unix:///PATH or a path; tcp:// addresses are for listen, "
                   "admin_tcp");
  ck_assert_str_eq(c.admin, "/tmp/opd-c.sock");
  expect_set_error(&c, "status", "tcp://127.0.0.1:7471",
                   "'status' must be http://HOST:PORT or HOST:PORT; tcp:// addresses are for");
  ck_assert_str_eq(c.status, "");
  expect_set_error(&c, "status", "unix:///tmp/s.sock", "unix:// addresses are for listen, admin");
  expect_set_error(&c, "admin_tcp", "http://127.0.0.1:1",
                   "'admin_tcp' must be tcp://HOST:PORT or HOST:PORT; http:// addresses are for "
                   "status");
  ck_assert_str_eq(c.admin_tcp, "127.0.0.1:7473");
  expect_set_error(&c, "listen", "http://127.0.0.1:1",
                   "'listen' must be tcp://HOST:PORT or unix:///PATH; http:// addresses are for "
                   "status");
  ck_assert_uint_eq(c.num_listen, 1);
  expect_set_error(&c, "status", "https://127.0.0.1:1", "no option takes https:// addresses");
  /* malformed ones */
  expect_set_error(&c, "status", "http://", "'http://' names no HOST:PORT");
  expect_set_error(&c, "admin", "unix://", "'unix://' names no socket path");
  expect_set_error(&c, "status", "http://127.0.0.1:7471/v1", "must be http://HOST:PORT or");
  expect_set_error(&c, "admin_tcp", "tcp://example.com:1", "numeric IPv4");
  expect_set_error(&c, "admin_tcp", "127.0.0.1", "must be tcp://HOST:PORT or HOST:PORT");
  char path[160];
  memset(path, 'p', sizeof path);
  memcpy(path, "unix:///", 8);
  path[7 + 108] = '\0'; /* 108 bytes of path: one more than a Unix socket takes */
  expect_set_error(&c, "admin", path, "'admin' must be at most 107 bytes");
  path[7 + 107] = '\0';
  expect_set(&c, "admin", path, c.admin, path + 7);
  opd_server_config_destroy(&c);
  /* the same forms in a file */
  opd_server_config_init(&c);
  char *file = write_temp("{\"status\": \"http://127.0.0.1:7481/\", \"admin\": "
                          "\"unix:///tmp/opd-d.sock\", \"admin_tcp\": \"tcp://[::1]:7482\"}");
  ck_assert_int_eq(opd_server_config_load(&c, file), 0);
  unlink(file);
  ck_assert_str_eq(c.status, "127.0.0.1:7481");
  ck_assert_str_eq(c.admin, "/tmp/opd-d.sock");
  ck_assert_str_eq(c.admin_tcp, "[::1]:7482");
  opd_server_config_destroy(&c);
  expect_config_error("{\"admin\": \"tcp://127.0.0.1:1\"}", "tcp:// addresses are for");
  expect_config_error("{\"listen\": [\"unix:///tmp/a\", \"http://127.0.0.1:1\"]}",
                      "'listen' must be tcp://HOST:PORT or unix:///PATH; http://");
  /* loopback or not: what the daemon warns about */
  static const struct {
    const char *url;
    bool loopback;
  } cases[] = {{"tcp://127.0.0.1:1", true},          {"tcp://127.1.2.3:1", true},
               {"tcp://localhost:1", true},          {"tcp://[::1]:1", true},
               {"tcp://[::ffff:127.0.0.1]:1", true}, {"unix:///tmp/x.sock", true},
               {"tcp://0.0.0.0:1", false},           {"tcp://[::]:1", false},
               {"tcp://10.0.0.1:1", false},          {"tcp://[::ffff:10.0.0.1]:1", false},
               {"tcp://128.0.0.1:1", false}};
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    opd__listen_addr a;
    ck_assert_int_eq(opd__parse_listen_url(cases[i].url, &a), 0);
    ck_assert_msg(opd__listen_addr_is_loopback(&a) == cases[i].loopback, "%s", cases[i].url);
  }
}
END_TEST

/* A configuration file is hostile input: sizes, nesting, bytes, numbers, text. */
START_TEST(test_config_hostile) {
  /* a huge file is refused before it is parsed, whatever it holds */
  size_t big = OPD__CONFIG_MAX_BYTES + 2;
  char *text = malloc(big + 1);
  memset(text, ' ', big);
  text[0] = '{';
  text[big - 1] = '}';
  text[big] = '\0';
  expect_config_error(text, "larger than 1024 KiB");
  free(text);
  /* too many listen addresses */
  char many[8192] = "{\"listen\": [";
  for (int i = 0; i <= OPD__MAX_LISTEN; i++)
    snprintf(many + strlen(many), sizeof many - strlen(many), "%s\"tcp://127.0.0.1:%d\"",
             i ? ", " : "", 10000 + i);
  strcat(many, "]}");
  expect_config_error(many, "at most 64 listen addresses");
  /* nesting: jansson's depth limit, then the type check */
  char deep[8192] = "{\"listen\": ";
  size_t n = strlen(deep);
  for (int i = 0; i < 3000; i++) deep[n++] = '[';
  for (int i = 0; i < 3000; i++) deep[n++] = ']';
  deep[n++] = '}';
  deep[n] = '\0';
  expect_config_error(deep, "maximum parsing depth");
  expect_config_error("{\"listen\": [[[[[\"tcp://127.0.0.1:1\"]]]]]}",
                      "'listen'[0] must be a URL string, got an array");
  expect_config_error("{\"admin\": {\"path\": \"/tmp/a\"}}",
                      "'admin' must be a string, got an object");
  /* NUL bytes, raw or escaped, and bytes that are not UTF-8 */
  static const char raw_nul[] = "{\"log_level\": \"info\0junk\"}";
  expect_config_error_bytes(raw_nul, sizeof raw_nul - 1, "line 1");
  expect_config_error("{\"log_level\": \"in\\u0000fo\"}", "NUL");
  expect_config_error("{\"admin\": \"/tmp/\xff.sock\"}", "line 1");
  /* duplicate keys */
  expect_config_error("{\"status\": \"\", \"status\": \"127.0.0.1:1\"}", "duplicate");
  /* numbers out of range, of the wrong kind, or as text with blanks and signs */
  expect_config_error("{\"workers\": 18446744073709551616}", "too big");
  expect_config_error("{\"workers\": 1025}", "from 0 to 1024, got 1025");
  expect_config_error("{\"max_handles\": 4294967297}", "from 1 to 4294967296");
  expect_config_error("{\"workers\": 1.0}", "got a real number");
  expect_config_error("{\"workers\": true}", "got a boolean");
  opd_server_config c;
  opd_server_config_init(&c);
  expect_set_error(&c, "workers", "18446744073709551616", "'workers' must be a whole number");
  expect_set_error(&c, "workers", " 2", "'workers' must be a whole number");
  expect_set_error(&c, "unix_socket_mode", " 0600", "octal permission mode");
  expect_set_error(&c, "unix_socket_mode", "+0600", "octal permission mode");
  expect_set_error(&c, "unix_socket_mode", "01000", "octal permission mode");
  ck_assert_uint_eq(c.unix_socket_mode, 0600);
  /* long and strange text is quoted short, so that the reason stays in the message */
  char key[10000];
  memset(key, 'k', sizeof key - 1);
  key[sizeof key - 1] = '\0';
  expect_set_error(&c, key, "1", "...' (the options are: listen, workers");
  char value[10000];
  memset(value, '9', sizeof value - 1);
  value[sizeof value - 1] = '\0';
  expect_set_error(&c, "log_level", value, "must be one of debug, info, warn, error; got \"999");
  expect_set_error(&c, "status", value, "'status' must be at most 71 bytes");
  expect_set_error(&c, "log_level", "\x1b[2Jloud\n", "got \"?[2Jloud?\"");
  /* a quote is cut at a character: 63 bytes of 'a' and a 2-byte character straddling 64 */
  char utf8[80];
  memset(utf8, 'a', 63);
  strcpy(utf8 + 63, "\xc3\xa9\xc3\xa9");
  expect_set_error(&c, "log_level", utf8, "aaa...\"");
  opd_server_config_destroy(&c);
  /* null keeps an option's value (config/opd.json writes admin so) */
  opd_server_config_init(&c);
  snprintf(c.admin, sizeof c.admin, "/run/opd/admin.sock");
  char *file = write_temp("{\"admin\": null, \"workers\": null, \"max_handles\": 3}");
  ck_assert_int_eq(opd_server_config_load(&c, file), 0);
  unlink(file);
  ck_assert_str_eq(c.admin, "/run/opd/admin.sock");
  ck_assert_uint_eq(c.workers, 0);
  ck_assert_uint_eq(c.max_handles, 3);
  /* a directory, and no file at all */
  ck_assert_int_eq(opd_server_config_load(&c, "/tmp"), OPD_EINVAL);
  ck_assert_msg(strstr(opd_last_error(), "config /tmp: cannot read it"), "%s", opd_last_error());
  ck_assert_int_eq(opd_server_config_load(&c, "/nonexistent/opd.json"), OPD_EINVAL);
  ck_assert_msg(strstr(opd_last_error(), "cannot open it: No such file"), "%s", opd_last_error());
  ck_assert_uint_eq(c.max_handles, 3);
  opd_server_config_destroy(&c);
}
END_TEST

/* The log of a start names every listener with its URL, and warns about unauthenticated
 * ones off loopback. */
typedef struct log_capture {
  pthread_mutex_t mu;
  char text[16384];
  size_t len;
} log_capture;

static void capture_log(opd_log_level level, const char *message, void *arg) {
  log_capture *lc = arg;
  pthread_mutex_lock(&lc->mu);
  int n = snprintf(lc->text + lc->len, sizeof lc->text - lc->len, "%s: %s\n",
                   opd_log_level_name(level), message);
  if (n > 0 && (size_t)n < sizeof lc->text - lc->len) lc->len += (size_t)n;
  pthread_mutex_unlock(&lc->mu);
}

static void expect_logged(log_capture *lc, const char *line) {
  pthread_mutex_lock(&lc->mu);
  bool found = strstr(lc->text, line) != NULL;
  pthread_mutex_unlock(&lc->mu);
  ck_assert_msg(found, "the log lacks '%s':\n%s", line, lc->text);
}

START_TEST(test_listener_log) {
  log_capture lc = {.mu = PTHREAD_MUTEX_INITIALIZER};
  opd_log_set_handler(capture_log, &lc);
  char dir[] = "/tmp/opd-log-XXXXXX";
  ck_assert_ptr_nonnull(mkdtemp(dir));
  char sock[64], admin[64], token[64], url[128], line[256];
  snprintf(sock, sizeof sock, "%s/opd.sock", dir);
  snprintf(admin, sizeof admin, "%s/admin.sock", dir);
  snprintf(token, sizeof token, "%s/token", dir);
  FILE *f = fopen(token, "w");
  fputs("secret\n", f);
  fclose(f);
  opd_server_config cfg;
  opd_server_config_init(&cfg);
  opd_server_config_clear_listen(&cfg);
  snprintf(url, sizeof url, "unix://%s", sock);
  ck_assert_int_eq(opd_server_config_set(&cfg, "listen", "tcp://127.0.0.1:0"), 0);
  ck_assert_int_eq(opd_server_config_set(&cfg, "listen", url), 0);
  snprintf(url, sizeof url, "unix://%s", admin);
  ck_assert_int_eq(opd_server_config_set(&cfg, "admin", url), 0);
  ck_assert_int_eq(opd_server_config_set(&cfg, "admin_tcp", "tcp://127.0.0.1:0"), 0);
  ck_assert_int_eq(opd_server_config_set(&cfg, "admin_token_file", token), 0);
  ck_assert_int_eq(opd_server_config_set(&cfg, "status", "http://127.0.0.1:0/"), 0);
  cfg.workers = 1;
  opd_server *s;
  int rc = opd_server_start(&cfg, &s);
  opd_server_config_destroy(&cfg);
  ck_assert_msg(rc == 0, "server start: %s", opd_last_error());
  snprintf(line, sizeof line, "info: listening on tcp://127.0.0.1:%d\n",
           opd_server_listener_port(s, 0));
  expect_logged(&lc, line);
  snprintf(line, sizeof line, "info: listening on unix://%s\n", sock);
  expect_logged(&lc, line);
  snprintf(line, sizeof line, "info: admin listener on unix://%s\n", admin);
  expect_logged(&lc, line);
  expect_logged(&lc, "info: admin listener on tcp://127.0.0.1:");
  snprintf(line, sizeof line, "info: status endpoint on http://%s/\n",
           opd_server_status_address(s));
  expect_logged(&lc, line);
  ck_assert_msg(!strstr(lc.text, "warn:"), "%s", lc.text);
  opd_server_stop(s);
  /* every interface: the RPC port and the status endpoint are reachable, and unauthenticated */
  opd_server_config_init(&cfg);
  opd_server_config_clear_listen(&cfg);
  ck_assert_int_eq(opd_server_config_set(&cfg, "listen", "tcp://0.0.0.0:0"), 0);
  ck_assert_int_eq(opd_server_config_set(&cfg, "status", "0.0.0.0:0"), 0);
  cfg.workers = 1;
  rc = opd_server_start(&cfg, &s);
  opd_server_config_destroy(&cfg);
  ck_assert_msg(rc == 0, "server start: %s", opd_last_error());
  snprintf(line, sizeof line,
           "warn: tcp://0.0.0.0:%d is not a loopback address: the RPC port has no "
           "authentication",
           opd_server_listener_port(s, 0));
  expect_logged(&lc, line);
  snprintf(line, sizeof line,
           "warn: http://0.0.0.0:%d/ is not a loopback address: the status endpoint has no "
           "authentication",
           opd_server_status_port(s));
  expect_logged(&lc, line);
  opd_server_stop(s);
  opd_log_set_handler(NULL, NULL);
  unlink(token);
  rmdir(dir);
}
END_TEST

START_TEST(test_drain) {
  opd_server *s = start_server();
  int fd = hello(s);
  upload_f32(fd, 1, shape23, 2, x6);
  int64_t s6[] = {6};
  outbuf b = {0};
  for (int i = 0; i < 100; i++) {
    Opd__V1__IntList l;
    Opd__V1__IValue args[] = {iv_handle(1), iv_ints(&l, s6, 1)};
    call_request(&b, 10 + (uint64_t)i, "aten::view", args, 2);
  }
  send_all(fd, b.data, b.len);
  free(b.data);
  /* the first response shows the server has the requests; stop drains what it accepted */
  Opd__V1__Response *r = recv_response(fd);
  ck_assert_uint_eq(r->id, 10);
  free_response(r);
  opd_server_stop(s);
  /* answered in order, then closed */
  uint64_t want = 11;
  while ((r = recv_response(fd))) {
    ck_assert_uint_eq(r->id, want++);
    ck_assert_int_eq(r->body_case, OPD__V1__RESPONSE__BODY_CALL);
    free_response(r);
  }
  ck_assert_uint_le(want, 110);
  close(fd);
}
END_TEST

/* [Note: Dead peers] in connection.c: the server's end of an accepted TCP connection, found
 * among this process's descriptors by its two ports: keepalive and TCP_USER_TIMEOUT as
 * configured; the defaults find a dead peer within 15 s. */
static int accepted_end(int server_port, int client_fd) {
  struct sockaddr_in mine;
  socklen_t len = sizeof mine;
  ck_assert_int_eq(getsockname(client_fd, (struct sockaddr *)&mine, &len), 0);
  for (int tries = 0; tries < 500; tries++) { /* the loop thread accepts it: bounded wait */
    for (int fd = 3; fd < 1024; fd++) {
      struct sockaddr_in local, peer;
      socklen_t l1 = sizeof local, l2 = sizeof peer;
      int listening = 1;
      socklen_t l3 = sizeof listening;
      if (fd == client_fd || getsockname(fd, (struct sockaddr *)&local, &l1) != 0 ||
          local.sin_family != AF_INET || getpeername(fd, (struct sockaddr *)&peer, &l2) != 0 ||
          getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &l3) != 0 || listening)
        continue;
      if (ntohs(local.sin_port) == server_port && peer.sin_port == mine.sin_port) return fd;
    }
    nanosleep(&(struct timespec){0, 10 * 1000 * 1000}, NULL);
  }
  ck_abort_msg("the server's end of the connection was not found");
  return -1;
}

/* Waits (bounded) until the server has registered `n` sessions: the loop thread sets an
 * accepted connection's socket options before it registers its session ([Note: Dead
 * peers]), so they are all set once it has. */
static void await_sessions(opd_server *s, size_t n) {
  for (int tries = 0; tries < 500 && opd_server_num_sessions(s) < n; tries++)
    nanosleep(&(struct timespec){0, 10 * 1000 * 1000}, NULL);
  ck_assert_uint_eq(opd_server_num_sessions(s), n);
}

static int int_sockopt(int fd, int level, int name) {
  int v = -1;
  socklen_t len = sizeof v;
  ck_assert_int_eq(getsockopt(fd, level, name, &v, &len), 0);
  return v;
}

START_TEST(test_accepted_tcp_dead_peer_options) {
  opd_server_config cfg;
  opd_server_config_init(&cfg);
  /* the defaults: probes start after 5 s of silence, 3 every 2 s, and data unacknowledged
   * for 15 s ends the connection */
  ck_assert_uint_le(
      cfg.tcp_keepalive_idle_s + cfg.tcp_keepalive_interval_s * cfg.tcp_keepalive_probes, 15);
  ck_assert_uint_gt(cfg.tcp_keepalive_idle_s, 0);
  ck_assert_uint_le(cfg.tcp_user_timeout_ms, 15000);
  ck_assert_uint_gt(cfg.tcp_user_timeout_ms, 0);
  opd_server_config_clear_listen(&cfg);
  ck_assert_int_eq(opd_server_config_add_listen(&cfg, "tcp://127.0.0.1:0"), 0);
  ck_assert_int_eq(opd_server_config_set(&cfg, "tcp_keepalive_idle_s", "7"), 0);
  ck_assert_int_eq(opd_server_config_set(&cfg, "tcp_keepalive_interval_s", "3"), 0);
  ck_assert_int_eq(opd_server_config_set(&cfg, "tcp_keepalive_probes", "4"), 0);
  ck_assert_int_eq(opd_server_config_set(&cfg, "tcp_user_timeout_ms", "9000"), 0);
  ck_assert_int_lt(opd_server_config_set(&cfg, "tcp_keepalive_probes", "0"), 0);
  ck_assert_int_lt(opd_server_config_set(&cfg, "tcp_keepalive_idle_s", "40000"), 0);
  cfg.workers = 1;
  cfg.log_level = OPD_LOG_ERROR;
  opd_server *s = NULL;
  ck_assert_int_eq(opd_server_start(&cfg, &s), 0);
  int port = opd_server_listener_port(s, 0);
  int client = connect_tcp(port);
  int fd = accepted_end(port, client);
  await_sessions(s, 1);
  ck_assert_int_eq(int_sockopt(fd, SOL_SOCKET, SO_KEEPALIVE), 1);
  ck_assert_int_eq(int_sockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE), 7);
  ck_assert_int_eq(int_sockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL), 3);
  ck_assert_int_eq(int_sockopt(fd, IPPROTO_TCP, TCP_KEEPCNT), 4);
  ck_assert_int_eq(int_sockopt(fd, IPPROTO_TCP, TCP_USER_TIMEOUT), 9000);
  close(client);
  opd_server_stop(s);

  /* idle 0 and user timeout 0: neither is set, as before these options */
  ck_assert_int_eq(opd_server_config_set(&cfg, "tcp_keepalive_idle_s", "0"), 0);
  ck_assert_int_eq(opd_server_config_set(&cfg, "tcp_user_timeout_ms", "0"), 0);
  ck_assert_int_eq(opd_server_start(&cfg, &s), 0);
  opd_server_config_destroy(&cfg);
  port = opd_server_listener_port(s, 0);
  client = connect_tcp(port);
  fd = accepted_end(port, client);
  await_sessions(s, 1);
  ck_assert_int_eq(int_sockopt(fd, SOL_SOCKET, SO_KEEPALIVE), 0);
  ck_assert_int_eq(int_sockopt(fd, IPPROTO_TCP, TCP_USER_TIMEOUT), 0);
  close(client);
  opd_server_stop(s);
}
END_TEST

/* [Note: Idle sessions] in connection.c: with session_idle_timeout_s, a session that sends
 * nothing is closed by the daemon (its next call finds the session gone); without it, the
 * session stays. */
START_TEST(test_idle_session_timeout) {
  opd_server_config cfg;
  opd_server_config_init(&cfg);
  ck_assert_uint_eq(cfg.session_idle_timeout_s, 0);
  opd_server_config_clear_listen(&cfg);
  ck_assert_int_eq(opd_server_config_add_listen(&cfg, "tcp://127.0.0.1:0"), 0);
  ck_assert_int_eq(opd_server_config_set(&cfg, "session_idle_timeout_s", "1"), 0);
  cfg.workers = 1;
  cfg.log_level = OPD_LOG_ERROR;
  opd_server *s = NULL;
  ck_assert_int_eq(opd_server_start(&cfg, &s), 0);
  opd_server_config_destroy(&cfg);
  opd_client *c = NULL;
  ck_assert_int_eq(opd_client_connect(opd_server_listener_url(s, 0), NULL, &c), 0);
  float x[] = {1, 2};
  opd_client_tensor t;
  ck_assert_int_eq(opd_client_upload(c, OPD_FLOAT32, (int64_t[]){2}, 1, x, sizeof x, NULL, &t), 0);
  ck_assert_uint_eq(opd_server_num_sessions(s), 1);
  /* the daemon closes it after a second of silence: waited for, bounded */
  for (int i = 0; i < 2000 && opd_server_num_sessions(s) > 0; i++)
    nanosleep(&(struct timespec){0, 10 * 1000 * 1000}, NULL);
  ck_assert_uint_eq(opd_server_num_sessions(s), 0);
  float back[2];
  ck_assert_int_eq(opd_client_download(c, t, back, sizeof back, NULL), OPD_ESESSION);
  opd_client_close(c);
  opd_server_stop(s);
}
END_TEST

Suite *opd_test_server_suite(void) {
  Suite *s = suite_create("server");
  TCase *tc = tcase_create("server");
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, test_hello_versions);
  tcase_add_test(tc, test_accepted_tcp_dead_peer_options);
  tcase_add_test(tc, test_idle_session_timeout);
  tcase_add_test(tc, test_round_trip);
  tcase_add_test(tc, test_add);
  tcase_add_test(tc, test_argument_kinds);
  tcase_add_test(tc, test_pipelining);
  tcase_add_test(tc, test_release);
  tcase_add_test(tc, test_dispatch_state);
  tcase_add_test(tc, test_bad_frames);
  tcase_add_test(tc, test_bad_calls);
  tcase_add_test(tc, test_limits_handles_bytes);
  tcase_add_test(tc, test_limits_in_flight);
  tcase_add_test(tc, test_large_tensor);
  tcase_add_test(tc, test_disconnect_mid_request);
  tcase_add_test(tc, test_unix_socket);
  tcase_add_test(tc, test_config);
  tcase_add_test(tc, test_config_addresses);
  tcase_add_test(tc, test_config_hostile);
  tcase_add_test(tc, test_listener_log);
  tcase_add_test(tc, test_drain);
  suite_add_tcase(s, tc);
  return s;
}

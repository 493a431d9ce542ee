/* raw_client.c: the soak's abrupt clients, speaking proto/opd.proto over raw sockets (a
 * 4-byte little-endian length, then an opd.v1.Request; raw tensor bytes after an upload):
 * connections cut in the middle of a frame, of an upload's raw bytes or of a download's,
 * closed with a hundred requests queued and unread, a client that never reads its
 * responses until the daemon stops reading from it, a client process SIGKILLed in the middle
 * of a burst, and protocol errors answered with their codes. Each episode ends its
 * connection by a close, a reset (SO_LINGER 0) or a half-close chosen at random. */
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "opd.pb-c.h"
#include "soak.h"

#define EC(name)         OPD__V1__ERROR_CODE__##name
#define MAX_FRAME_BYTES  (1u << 20) /* the daemon's default max_frame_bytes */
#define MAX_RESPONSE     (16u << 20)
#define NEVER_READ_LIMIT ((size_t)64 << 20)
#define QUEUED_CALLS     100

/* ---- connections and frames ---- */

typedef struct raw_buf {
  uint8_t *data;
  size_t len, cap;
  bool failed; /* out of memory */
} raw_buf;

/* Room for n more bytes at the end (NULL when out of memory: the buffer is then failed). */
static uint8_t *buf_room(raw_buf *b, size_t n) {
  if (b->failed) return NULL;
  if (b->len + n > b->cap) {
    size_t cap = (b->len + n) * 2;
    uint8_t *d = realloc(b->data, cap);
    if (!d) {
      b->failed = true;
      return NULL;
    }
    b->data = d;
    b->cap = cap;
  }
  return b->data + b->len;
}

static void buf_put(raw_buf *b, const void *p, size_t n) {
  uint8_t *at = buf_room(b, n);
  if (!at || !n) return;
  memcpy(at, p, n);
  b->len += n;
}

static void buf_frame(raw_buf *b, const Opd__V1__Request *r) {
  size_t n = opd__v1__request__get_packed_size(r);
  uint8_t *at = buf_room(b, 4 + n);
  if (!at) return;
  at[0] = (uint8_t)n, at[1] = (uint8_t)(n >> 8), at[2] = (uint8_t)(n >> 16),
  at[3] = (uint8_t)(n >> 24);
  opd__v1__request__pack(r, at + 4);
  b->len += 4 + n;
}

static void buf_free(raw_buf *b) {
  free(b->data);
  *b = (raw_buf){0};
}

/* The address of the daemon's TCP or Unix listener. */
typedef struct raw_addr {
  struct sockaddr_storage ss;
  socklen_t len;
  bool tcp;
} raw_addr;

static raw_addr listener_addr(const soak_daemon *d, bool tcp) {
  raw_addr a = {.tcp = tcp};
  if (tcp) {
    struct sockaddr_in *in = (struct sockaddr_in *)&a.ss;
    *in = (struct sockaddr_in){.sin_family = AF_INET, .sin_port = htons((uint16_t)d->tcp_port)};
    in->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.len = sizeof *in;
  } else {
    struct sockaddr_un *un = (struct sockaddr_un *)&a.ss;
    *un = (struct sockaddr_un){.sun_family = AF_UNIX};
    snprintf(un->sun_path, sizeof un->sun_path, "%s", d->unix_path);
    a.len = sizeof *un;
  }
  return a;
}

/* A socket connected to the address, or -1 (async-signal-safe). */
static int connect_addr(const raw_addr *a) {
  int fd = socket(a->ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  if (connect(fd, (const struct sockaddr *)&a->ss, a->len) < 0) {
    close(fd);
    return -1;
  }
  int one = 1;
  if (a->tcp) setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  return fd;
}

static int raw_connect(soak_client *cl) {
  bool tcp = soak_rng_chance(&cl->rng, 50);
  raw_addr a = listener_addr(cl->daemon, tcp);
  int fd = connect_addr(&a);
  if (fd < 0) {
    soak_fail(cl, "connect to the %s listener: %s", tcp ? "TCP" : "Unix", strerror(errno));
    return -1;
  }
  struct timeval tv = {30, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  return fd;
}

/* Ends a connection by a close, a reset or a half-close first. */
static void raw_close(soak_client *cl, int fd) {
  int how = (int)soak_rng_range(&cl->rng, 0, 2);
  if (how == 1) {
    struct linger l = {1, 0};
    setsockopt(fd, SOL_SOCKET, SO_LINGER, &l, sizeof l);
  } else if (how == 2) {
    shutdown(fd, SHUT_WR);
  }
  close(fd);
}

static bool send_all(soak_client *cl, int fd, const void *p, size_t n) {
  const char *c = p;
  while (n) {
    ssize_t k = send(fd, c, n, MSG_NOSIGNAL);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) {
      soak_fail(cl, "send: %s", k < 0 ? strerror(errno) : "nothing sent");
      return false;
    }
    c += k;
    n -= (size_t)k;
  }
  return true;
}

static bool send_buf(soak_client *cl, int fd, raw_buf *b) {
  if (b->failed) {
    soak_fail(cl, "out of memory building requests");
    return false;
  }
  return send_all(cl, fd, b->data, b->len);
}

/* Reads n bytes: 1, 0 at the end of the stream, -1 on an error or the 30 s timeout. */
static int recv_exact(int fd, void *p, size_t n) {
  char *c = p;
  while (n) {
    ssize_t k = recv(fd, c, n, 0);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) return k == 0 ? 0 : -1;
    c += k;
    n -= (size_t)k;
  }
  return 1;
}

/* The next response; NULL with a failure recorded, unless the stream ended and eof_ok. */
static Opd__V1__Response *recv_response(soak_client *cl, int fd, const char *what, bool eof_ok) {
  uint8_t h[4];
  int rc = recv_exact(fd, h, 4);
  if (rc <= 0) {
    if (rc < 0 || !eof_ok)
      soak_fail(cl, "%s: %s", what, rc < 0 ? strerror(errno) : "the daemon closed the connection");
    return NULL;
  }
  size_t n = (size_t)h[0] | (size_t)h[1] << 8 | (size_t)h[2] << 16 | (size_t)h[3] << 24;
  if (n > MAX_RESPONSE) {
    soak_fail(cl, "%s: a response frame of %zu bytes", what, n);
    return NULL;
  }
  uint8_t *buf = malloc(n ? n : 1);
  Opd__V1__Response *r = NULL;
  if (!buf || recv_exact(fd, buf, n) != 1)
    soak_fail(cl, "%s: the response frame was cut short", what);
  else if (!(r = opd__v1__response__unpack(NULL, n, buf)))
    soak_fail(cl, "%s: an undecodable response frame of %zu bytes", what, n);
  free(buf);
  return r;
}

/* True when the daemon closed the connection (the stream ends within the timeout). */
static bool closed_by_daemon(int fd) {
  char c[256];
  ssize_t k;
  while ((k = recv(fd, c, sizeof c, 0)) > 0) {
  }
  return k == 0 || errno == ECONNRESET;
}

/* ---- requests ---- */

static void req_hello(raw_buf *b, uint64_t id, uint32_t version) {
  Opd__V1__Hello h = OPD__V1__HELLO__INIT;
  h.protocol_version = version;
  h.client_name = "opd_soak raw";
  Opd__V1__Request r = OPD__V1__REQUEST__INIT;
  r.id = id;
  r.body_case = OPD__V1__REQUEST__BODY_HELLO;
  r.hello = &h;
  buf_frame(b, &r);
}

static void req_ping(raw_buf *b, uint64_t id, const void *payload, size_t n) {
  Opd__V1__Ping p = OPD__V1__PING__INIT;
  p.payload.data = (uint8_t *)payload;
  p.payload.len = n;
  Opd__V1__Request r = OPD__V1__REQUEST__INIT;
  r.id = id;
  r.body_case = OPD__V1__REQUEST__BODY_PING;
  r.ping = &p;
  buf_frame(b, &r);
}

/* An upload of float32 [numel]; its raw bytes are the caller's to send. */
static void req_upload_f32(raw_buf *b, uint64_t id, int64_t *shape, size_t ndim, uint64_t nbytes) {
  Opd__V1__Upload u = OPD__V1__UPLOAD__INIT;
  u.dtype = OPD__V1__DTYPE__FLOAT32;
  u.n_shape = ndim;
  u.shape = shape;
  u.nbytes = nbytes;
  Opd__V1__Request r = OPD__V1__REQUEST__INIT;
  r.id = id;
  r.body_case = OPD__V1__REQUEST__BODY_UPLOAD;
  r.upload = &u;
  buf_frame(b, &r);
}

static void req_download(raw_buf *b, uint64_t id, uint64_t handle) {
  Opd__V1__Download d = OPD__V1__DOWNLOAD__INIT;
  d.handle = handle;
  Opd__V1__Request r = OPD__V1__REQUEST__INIT;
  r.id = id;
  r.body_case = OPD__V1__REQUEST__BODY_DOWNLOAD;
  r.download = &d;
  buf_frame(b, &r);
}

/* op(handles..., ints...) */
static void req_call(raw_buf *b, uint64_t id, const char *op, const uint64_t *handles, size_t nh,
                     const int64_t *ints, size_t ni) {
  Opd__V1__IValue v[8], *pv[8];
  size_t n = 0;
  for (size_t i = 0; i < nh && n < 8; i++, n++) {
    opd__v1__ivalue__init(&v[n]);
    v[n].value_case = OPD__V1__IVALUE__VALUE_TENSOR;
    v[n].tensor = handles[i];
  }
  for (size_t i = 0; i < ni && n < 8; i++, n++) {
    opd__v1__ivalue__init(&v[n]);
    v[n].value_case = OPD__V1__IVALUE__VALUE_I;
    v[n].i = ints[i];
  }
  for (size_t i = 0; i < n; i++) pv[i] = &v[i];
  Opd__V1__Call c = OPD__V1__CALL__INIT;
  c.op = (char *)op;
  c.n_args = n;
  c.args = pv;
  Opd__V1__Request r = OPD__V1__REQUEST__INIT;
  r.id = id;
  r.body_case = OPD__V1__REQUEST__BODY_CALL;
  r.call = &c;
  buf_frame(b, &r);
}

/* ---- responses ---- */

static const char *body_name(const Opd__V1__Response *r) {
  switch (r->body_case) {
  case OPD__V1__RESPONSE__BODY_ERROR: return "error";
  case OPD__V1__RESPONSE__BODY_HELLO: return "hello";
  case OPD__V1__RESPONSE__BODY_CALL: return "call";
  case OPD__V1__RESPONSE__BODY_UPLOAD: return "upload";
  case OPD__V1__RESPONSE__BODY_DOWNLOAD: return "download";
  case OPD__V1__RESPONSE__BODY_ACK: return "ack";
  case OPD__V1__RESPONSE__BODY_PONG: return "pong";
  default: return "none";
  }
}

/* The response to `id` of the kind `body`; NULL with a failure recorded otherwise. */
static Opd__V1__Response *expect_body(soak_client *cl, int fd, uint64_t id,
                                      Opd__V1__Response__BodyCase body, const char *what) {
  Opd__V1__Response *r = recv_response(cl, fd, what, false);
  if (!r) return NULL;
  if (r->id != id || r->body_case != body) {
    soak_fail(cl, "%s: response %llu of kind %s (%s), expected %llu of kind %d", what,
              (unsigned long long)r->id, body_name(r),
              r->body_case == OPD__V1__RESPONSE__BODY_ERROR ? r->error->message : "",
              (unsigned long long)id, (int)body);
    opd__v1__response__free_unpacked(r, NULL);
    return NULL;
  }
  return r;
}

/* The error response to `id` with `code`: true, or false with a failure recorded. */
static bool expect_error(soak_client *cl, int fd, uint64_t id, Opd__V1__ErrorCode code,
                         const char *what) {
  Opd__V1__Response *r = expect_body(cl, fd, id, OPD__V1__RESPONSE__BODY_ERROR, what);
  if (!r) return false;
  bool ok = r->error->code == code && strlen(r->error->message) > 10;
  if (!ok)
    soak_fail(cl, "%s: error code %d ('%s'), expected %d with a message", what, (int)r->error->code,
              r->error->message, (int)code);
  opd__v1__response__free_unpacked(r, NULL);
  if (ok) SOAK_COUNT(expected_errors, 1);
  return ok;
}

static bool hello(soak_client *cl, int fd) {
  raw_buf b = {0};
  req_hello(&b, 1, 1);
  bool ok = send_buf(cl, fd, &b);
  buf_free(&b);
  Opd__V1__Response *r = ok ? expect_body(cl, fd, 1, OPD__V1__RESPONSE__BODY_HELLO, "hello") : NULL;
  if (r) opd__v1__response__free_unpacked(r, NULL);
  return r != NULL;
}

/* A connection that said hello, or -1 (with a failure recorded). */
static int raw_session(soak_client *cl) {
  int fd = raw_connect(cl);
  if (fd >= 0 && !hello(cl, fd)) {
    close(fd);
    fd = -1;
  }
  return fd;
}

/* A ping whose echo must come back whole. */
static bool ping(soak_client *cl, int fd, uint64_t id) {
  char payload[32];
  size_t n = (size_t)snprintf(payload, sizeof payload, "soak %llu", (unsigned long long)id);
  raw_buf b = {0};
  req_ping(&b, id, payload, n);
  bool ok = send_buf(cl, fd, &b);
  buf_free(&b);
  Opd__V1__Response *r = ok ? expect_body(cl, fd, id, OPD__V1__RESPONSE__BODY_PONG, "ping") : NULL;
  if (!r) return false;
  ok = r->pong->payload.len == n && memcmp(r->pong->payload.data, payload, n) == 0;
  if (!ok) soak_fail(cl, "ping %llu: the echo differs", (unsigned long long)id);
  opd__v1__response__free_unpacked(r, NULL);
  SOAK_COUNT(pings, 1);
  return ok;
}

/* Uploads float32 data of the shape and returns its handle (0 on a failure). */
static uint64_t upload_f32(soak_client *cl, int fd, uint64_t id, int64_t *shape, size_t ndim,
                           const float *data, size_t numel) {
  raw_buf b = {0};
  req_upload_f32(&b, id, shape, ndim, numel * sizeof *data);
  bool ok = send_buf(cl, fd, &b) && send_all(cl, fd, data, numel * sizeof *data);
  buf_free(&b);
  Opd__V1__Response *r =
      ok ? expect_body(cl, fd, id, OPD__V1__RESPONSE__BODY_UPLOAD, "upload") : NULL;
  if (!r) return 0;
  uint64_t h = r->upload->handle;
  opd__v1__response__free_unpacked(r, NULL);
  SOAK_COUNT(uploads, 1);
  SOAK_COUNT(bytes_up, numel * sizeof *data);
  return h;
}

static float *random_floats(soak_client *cl, size_t n) {
  float *v = malloc((n ? n : 1) * sizeof *v);
  if (!v) soak_fail(cl, "out of memory");
  for (size_t i = 0; v && i < n; i++) v[i] = (float)soak_rng_range(&cl->rng, -32, 32) * 0.25f;
  return v;
}

/* A connection that said hello and uploaded random float32 values of the shape (handle *h),
 * or -1 (with a failure recorded). */
static int raw_session_with_tensor(soak_client *cl, int64_t *shape, size_t ndim, uint64_t *h) {
  size_t numel = 1;
  for (size_t d = 0; d < ndim; d++) numel *= (size_t)shape[d];
  float *data = random_floats(cl, numel);
  int fd = data ? raw_session(cl) : -1;
  *h = fd >= 0 ? upload_f32(cl, fd, 2, shape, ndim, data, numel) : 0;
  free(data);
  if (fd >= 0 && !*h) {
    close(fd);
    fd = -1;
  }
  return fd;
}

/* ---- episodes ---- */

/* Cut in the middle of a frame: a length prefix, or a frame missing its end. */
static void mid_frame(soak_client *cl) {
  int fd = raw_session(cl);
  if (fd < 0) return;
  for (int64_t i = 0, n = soak_rng_range(&cl->rng, 0, 3); i < n; i++)
    if (!ping(cl, fd, (uint64_t)(2 + i))) break;
  raw_buf b = {0};
  int64_t dims[] = {3};
  if (soak_rng_chance(&cl->rng, 50))
    req_call(&b, 10, "aten::add.Tensor", (uint64_t[]){1, 1}, 2, NULL, 0);
  else
    req_upload_f32(&b, 10, dims, 1, 12);
  size_t cut = (size_t)soak_rng_range(&cl->rng, 1, (int64_t)b.len - 1);
  if (!soak_stopped()) send_all(cl, fd, b.data, cut);
  buf_free(&b);
  if (soak_rng_chance(&cl->rng, 50)) soak_sleep_ms(soak_rng_range(&cl->rng, 1, 10));
  raw_close(cl, fd);
  SOAK_COUNT(closed_mid_frame, 1);
}

/* Cut in the middle of an upload's raw bytes (the header announced up to 8 MiB). */
static void mid_upload(soak_client *cl) {
  int fd = raw_session(cl);
  if (fd < 0) return;
  int64_t numel = soak_rng_range(&cl->rng, 1, 2 << 20);
  size_t nbytes = (size_t)numel * 4,
         sent = (size_t)soak_rng_range(&cl->rng, 0, (int64_t)nbytes - 1);
  raw_buf b = {0};
  req_upload_f32(&b, 2, &numel, 1, nbytes);
  char *junk = calloc(1, 256 << 10);
  bool ok = junk && send_buf(cl, fd, &b);
  buf_free(&b);
  while (ok && sent) {
    size_t n = sent < (256u << 10) ? sent : (256u << 10);
    ok = send_all(cl, fd, junk, n);
    sent -= n;
    if (soak_rng_chance(&cl->rng, 10)) soak_sleep_ms(1);
  }
  free(junk);
  if (soak_rng_chance(&cl->rng, 50)) soak_sleep_ms(soak_rng_range(&cl->rng, 1, 20));
  raw_close(cl, fd);
  SOAK_COUNT(closed_mid_upload, 1);
}

/* A hundred requests (calls, downloads, pings) sent at once, then the connection closed
 * without reading one answer: the daemon has them queued, running and being written. */
static void queued_unread(soak_client *cl) {
  int64_t shape[] = {64, 64};
  uint64_t h;
  int fd = raw_session_with_tensor(cl, shape, 2, &h);
  if (fd < 0) return;
  raw_buf b = {0};
  for (uint64_t id = 3; id < 3 + QUEUED_CALLS; id++) {
    switch (soak_rng_range(&cl->rng, 0, 5)) {
    case 0: req_call(&b, id, "aten::mm", (uint64_t[]){h, h}, 2, NULL, 0); break;
    case 1: req_call(&b, id, "aten::add.Tensor", (uint64_t[]){h, h}, 2, NULL, 0); break;
    case 2: req_call(&b, id, "aten::_softmax", (uint64_t[]){h}, 1, (int64_t[]){1, 0}, 2); break;
    case 3: req_call(&b, id, "aten::sum", (uint64_t[]){h}, 1, NULL, 0); break;
    case 4: req_download(&b, id, h); break;
    default: req_ping(&b, id, "queued", 6); break;
    }
  }
  if (send_buf(cl, fd, &b)) SOAK_COUNT(closed_with_work, 1);
  buf_free(&b);
  if (soak_rng_chance(&cl->rng, 30)) soak_sleep_ms(soak_rng_range(&cl->rng, 0, 5));
  raw_close(cl, fd);
}

/* A client that sends downloads of a 1 MiB tensor and never reads: the daemon must stop
 * reading from it ([Note: Back-pressure] in server/src/conn_read.c) long before it has
 * sent NEVER_READ_LIMIT bytes of requests. */
static void never_reads(soak_client *cl) {
  int64_t numel = 1 << 18;
  uint64_t h;
  int fd = raw_session_with_tensor(cl, &numel, 1, &h);
  if (fd < 0) return;
  raw_buf b = {0};
  for (uint64_t id = 0; id < 64; id++) req_download(&b, 100 + id, h);
  if (b.failed) {
    soak_fail(cl, "out of memory building requests");
    buf_free(&b);
    close(fd);
    return;
  }
  fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
  size_t total = 0, at = 0;
  bool blocked = false;
  while (!blocked && total < NEVER_READ_LIMIT && !soak_client_done(cl)) {
    ssize_t k = send(fd, b.data + at, b.len - at, MSG_NOSIGNAL);
    if (k > 0) {
      total += (size_t)k;
      at = (at + (size_t)k) % b.len;
      continue;
    }
    if (k < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
      soak_fail(cl, "a client that never reads: send: %s", strerror(errno));
      break;
    }
    struct pollfd p = {.fd = fd, .events = POLLOUT};
    blocked = poll(&p, 1, 300) == 0; /* the daemon took nothing for 300 ms */
  }
  buf_free(&b);
  SOAK_COUNT(never_read, 1);
  if (blocked) SOAK_COUNT(back_pressure_seen, 1);
  if (total >= NEVER_READ_LIMIT)
    soak_fail(cl,
              "a client that never reads its responses sent %zu bytes of requests and the "
              "daemon still read them: no back-pressure",
              total);
  soak_sleep_ms(soak_rng_range(&cl->rng, 0, 50));
  raw_close(cl, fd);
}

/* A download (of a contiguous tensor, or of a transposed view, which the daemon gathers)
 * read in part, then the connection closed. */
static void mid_download(soak_client *cl) {
  int64_t shape[] = {soak_rng_range(&cl->rng, 64, 1024), soak_rng_range(&cl->rng, 64, 1024)};
  size_t nbytes = (size_t)(shape[0] * shape[1]) * 4;
  uint64_t h;
  int fd = raw_session_with_tensor(cl, shape, 2, &h);
  if (fd < 0) return;
  if (soak_rng_chance(&cl->rng, 50)) { /* a strided view */
    raw_buf b = {0};
    req_call(&b, 3, "aten::t", &h, 1, NULL, 0);
    Opd__V1__Response *r = send_buf(cl, fd, &b)
                               ? expect_body(cl, fd, 3, OPD__V1__RESPONSE__BODY_CALL, "aten::t")
                               : NULL;
    buf_free(&b);
    h = 0;
    if (r && r->call->n_results == 1 &&
        r->call->results[0]->value_case == OPD__V1__IVALUE__VALUE_TENSOR)
      h = r->call->results[0]->tensor;
    else if (r)
      soak_fail(cl, "aten::t: %zu results, expected one tensor", r->call->n_results);
    if (r) opd__v1__response__free_unpacked(r, NULL);
  }
  raw_buf b = {0};
  if (h) req_download(&b, 4, h);
  Opd__V1__Response *r = h && send_buf(cl, fd, &b)
                             ? expect_body(cl, fd, 4, OPD__V1__RESPONSE__BODY_DOWNLOAD, "download")
                             : NULL;
  buf_free(&b);
  if (r && r->download->nbytes != nbytes)
    soak_fail(cl, "download: nbytes %llu, expected %zu", (unsigned long long)r->download->nbytes,
              nbytes);
  bool header = r != NULL;
  if (r) opd__v1__response__free_unpacked(r, NULL);
  size_t part = (size_t)soak_rng_range(&cl->rng, 0, (int64_t)nbytes - 1);
  char *got = header && !soak_stopped() ? malloc(part + 1) : NULL;
  if (got && part && recv_exact(fd, got, part) != 1)
    soak_fail(cl, "download: the raw bytes were cut short");
  free(got);
  raw_close(cl, fd);
  SOAK_COUNT(closed_mid_download, 1);
}

/* Protocol errors, each answered with its code; the session goes on after those that do
 * not close it. */
static void protocol_errors(soak_client *cl) {
  int fd = raw_connect(cl);
  if (fd < 0) return;
  raw_buf b = {0};
  int variant = (int)soak_rng_range(&cl->rng, 0, 7);
  bool ok = true, closes = false;
  if (variant == 0) { /* a request before hello */
    req_ping(&b, 7, "x", 1);
    ok = send_buf(cl, fd, &b) && expect_error(cl, fd, 7, EC(FAILED_PRECONDITION), "ping first");
    closes = true;
  } else if (variant == 1) { /* a protocol version the daemon does not speak */
    req_hello(&b, 1, 2);
    ok = send_buf(cl, fd, &b) && expect_error(cl, fd, 1, EC(FAILED_PRECONDITION), "hello v2");
    closes = true;
  } else if ((ok = hello(cl, fd))) {
    if (variant == 2) { /* bytes that are no Request: a varint cut short */
      static const uint8_t bad[] = {2, 0, 0, 0, 0x08, 0xff};
      buf_put(&b, bad, sizeof bad);
      ok = send_buf(cl, fd, &b) && expect_error(cl, fd, 0, EC(INVALID_ARGUMENT), "malformed");
    } else if (variant == 3) { /* nbytes that the shape does not need: skipped */
      int64_t dims[] = {2};
      req_upload_f32(&b, 5, dims, 1, 12);
      buf_put(&b, "twelve bytes", 12);
      ok = send_buf(cl, fd, &b) && expect_error(cl, fd, 5, EC(INVALID_ARGUMENT), "bad nbytes");
    } else if (variant == 4) { /* a frame over max_frame_bytes */
      uint32_t n = MAX_FRAME_BYTES + 1;
      uint8_t head[4] = {(uint8_t)n, (uint8_t)(n >> 8), (uint8_t)(n >> 16), (uint8_t)(n >> 24)};
      buf_put(&b, head, 4);
      ok = send_buf(cl, fd, &b) && expect_error(cl, fd, 0, EC(RESOURCE_EXHAUSTED), "long frame");
      closes = true;
    } else if (variant == 5) { /* handles never issued */
      req_call(&b, 5, "aten::neg", (uint64_t[]){UINT64_C(1) << 40}, 1, NULL, 0);
      req_download(&b, 6, 12345);
      ok = send_buf(cl, fd, &b) && expect_error(cl, fd, 5, EC(NOT_FOUND), "unknown handle") &&
           expect_error(cl, fd, 6, EC(NOT_FOUND), "download of an unknown handle");
    } else if (variant == 6) { /* a second hello */
      req_hello(&b, 5, 1);
      ok = send_buf(cl, fd, &b) && expect_error(cl, fd, 5, EC(FAILED_PRECONDITION), "hello twice");
    } else { /* a request without a body */
      Opd__V1__Request r = OPD__V1__REQUEST__INIT;
      r.id = 5;
      buf_frame(&b, &r);
      ok = send_buf(cl, fd, &b) && expect_error(cl, fd, 5, EC(INVALID_ARGUMENT), "no body");
    }
  }
  buf_free(&b);
  if (ok && closes && !closed_by_daemon(fd))
    soak_fail(cl, "protocol error %d: the daemon did not close the connection", variant);
  else if (ok && !closes)
    ping(cl, fd, 50);
  raw_close(cl, fd);
}

/* A client process SIGKILLed in the middle of a burst: hello, an upload (its handle is 1,
 * handles being issued from 1) and calls on it, written again and again. The requests are
 * built before fork(); the child only connects and writes (async-signal-safe calls in a
 * copy of a threaded process). */
static void killed_child(soak_client *cl) {
  raw_addr addr = listener_addr(cl->daemon, soak_rng_chance(&cl->rng, 50));
  int64_t shape[] = {32, 32};
  float *data = random_floats(cl, 32 * 32);
  raw_buf b = {0};
  req_hello(&b, 1, 1);
  req_upload_f32(&b, 2, shape, 2, sizeof(float) * 32 * 32);
  if (data) buf_put(&b, data, sizeof(float) * 32 * 32);
  free(data);
  size_t burst = b.len;
  for (uint64_t id = 3; id < 3 + 200; id++) {
    if (id % 3 == 0)
      req_call(&b, id, "aten::mm", (uint64_t[]){1, 1}, 2, NULL, 0);
    else if (id % 3 == 1)
      req_call(&b, id, "aten::mul.Tensor", (uint64_t[]){1, 1}, 2, NULL, 0);
    else
      req_download(&b, id, 1);
  }
  bool reads = soak_rng_chance(&cl->rng, 50);
  long after_ms = soak_rng_range(&cl->rng, 1, 40);
  if (b.failed || soak_stopped()) {
    buf_free(&b);
    return;
  }
  pid_t pid = fork();
  if (pid < 0) {
    soak_fail(cl, "fork: %s", strerror(errno));
    buf_free(&b);
    return;
  }
  if (pid == 0) {
    for (int fd = 3; fd < 1024; fd++) close(fd); /* the parent's connections are not ours */
    int fd = connect_addr(&addr);
    char sink[4096];
    for (int round = 0; fd >= 0 && round < 100000; round++) {
      const uint8_t *p = round ? b.data + burst : b.data;
      size_t n = round ? b.len - burst : b.len;
      while (n) {
        ssize_t k = send(fd, p, n, MSG_NOSIGNAL);
        if (k <= 0) _exit(0);
        p += k;
        n -= (size_t)k;
      }
      if (reads) (void)!recv(fd, sink, sizeof sink, MSG_DONTWAIT);
    }
    _exit(0);
  }
  buf_free(&b);
  soak_sleep_ms(after_ms);
  kill(pid, SIGKILL);
  int status;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  SOAK_COUNT(killed_children, 1);
}

void soak_raw_episode(soak_client *cl) {
  static const struct {
    const char *name;
    void (*run)(soak_client *cl);
    int weight;
  } kinds[] = {
      {"raw: cut mid-frame", mid_frame, 3},
      {"raw: cut mid-upload", mid_upload, 3},
      {"raw: 100 requests queued and unread", queued_unread, 3},
      {"raw: never reads its responses", never_reads, 1},
      {"raw: cut mid-download", mid_download, 2},
      {"raw: protocol errors", protocol_errors, 3},
      {"raw: SIGKILLed mid-burst", killed_child, 2},
  };
  int total = 0;
  for (size_t i = 0; i < sizeof kinds / sizeof *kinds; i++) total += kinds[i].weight;
  int pick = (int)soak_rng_range(&cl->rng, 0, total - 1);
  size_t i = 0;
  while (pick >= kinds[i].weight) pick -= kinds[i++].weight;
  cl->episode_kind = kinds[i].name;
  soak_doing(cl, kinds[i].name);
  kinds[i].run(cl);
  SOAK_COUNT(raw_episodes, 1);
}

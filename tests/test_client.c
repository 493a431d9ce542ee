/* test_client.c: the client library (client/): URL parsing and connection errors; requests and
 * responses against a fake server speaking the protocol over a socketpair (framing, raw upload
 * and download bytes, typed calls' wire encoding with defaults, error codes and messages,
 * pipelining, the in-flight limit, callbacks, threads, lost connections and protocol
 * violations); round trips against a real daemon started in-process (opd/server.h); and
 * servers that are not opd (its status port, an SSH banner), named as such. */
#include <check.h>
#include <poll.h>
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <netinet/in.h>

#include "opd.pb-c.h"
#include "opd_wire.h"
#include "opd/client.h"
#include "opd/server.h"

/* ---- the fake server ---- */

#define FAKE_MAX_TENSORS 64

typedef struct fake_tensor {
  uint64_t handle; /* 0: free slot */
  int dtype;
  size_t ndim;
  int64_t shape[8];
  uint8_t *data;
  size_t nbytes;
} fake_tensor;

typedef struct fake_server {
  int fd;
  pthread_t thread;
  /* configuration */
  uint32_t max_in_flight;
  uint64_t max_frame;
  int hold;          /* answer nothing until this many requests (after hello) are read */
  bool refuse_hello; /* answer hello with an error */
  bool lie_download; /* declare a download of 4 TiB, send the tensor's bytes, and close */
  /* state (mu) */
  pthread_mutex_t mu;
  char last_call[512]; /* "op(args)" of the last call, values encoded by encode_value */
  char dispatch[256];
  int requests;
  fake_tensor tensors[FAKE_MAX_TENSORS];
  uint64_t next_handle;
  /* pending output while holding */
  uint8_t *out;
  size_t out_len, out_cap;
} fake_server;

static bool read_full(int fd, void *buf, size_t n) {
  uint8_t *p = buf;
  while (n) {
    ssize_t r = read(fd, p, n);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return false;
    p += r;
    n -= (size_t)r;
  }
  return true;
}

static void write_full(int fd, const void *buf, size_t n) {
  const uint8_t *p = buf;
  while (n) {
    ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return;
    p += w;
    n -= (size_t)w;
  }
}

static void out_append(fake_server *fs, const void *p, size_t n) {
  if (fs->out_len + n > fs->out_cap) {
    fs->out_cap = (fs->out_len + n) * 2;
    fs->out = realloc(fs->out, fs->out_cap);
    ck_assert_ptr_nonnull(fs->out);
  }
  memcpy(fs->out + fs->out_len, p, n);
  fs->out_len += n;
}

static void flush_out(fake_server *fs) {
  write_full(fs->fd, fs->out, fs->out_len);
  fs->out_len = 0;
}

static void respond(fake_server *fs, const Opd__V1__Response *r, const void *raw, size_t raw_len) {
  size_t n = opd__v1__response__get_packed_size(r);
  uint8_t *buf = malloc(n + 4);
  buf[0] = (uint8_t)n, buf[1] = (uint8_t)(n >> 8), buf[2] = (uint8_t)(n >> 16),
  buf[3] = (uint8_t)(n >> 24);
  opd__v1__response__pack(r, buf + 4);
  out_append(fs, buf, n + 4);
  if (raw_len) out_append(fs, raw, raw_len);
  free(buf);
}

static void respond_error(fake_server *fs, uint64_t id, Opd__V1__ErrorCode code, const char *msg,
                          const char *op) {
  Opd__V1__Error e = OPD__V1__ERROR__INIT;
  e.code = code;
  e.message = (char *)msg;
  e.op = (char *)(op ? op : "");
  Opd__V1__Response r = OPD__V1__RESPONSE__INIT;
  r.id = id;
  r.body_case = OPD__V1__RESPONSE__BODY_ERROR;
  r.error = &e;
  respond(fs, &r, NULL, 0);
}

static void append(char *buf, size_t len, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void append(char *buf, size_t len, const char *fmt, ...) {
  size_t used = strlen(buf);
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf + used, len - used, fmt, ap);
  va_end(ap);
}

/* N, b1, i3, d2.5, s:none, T7, I[1,2], D[..], B[1,0], L[1,2], O[1,0], y6, v10:-1, l6[2]:8 */
static void encode_value(const Opd__V1__IValue *v, char *buf, size_t len) {
  switch (v->value_case) {
  case OPD__V1__IVALUE__VALUE_NONE: append(buf, len, "N"); break;
  case OPD__V1__IVALUE__VALUE_B: append(buf, len, "b%d", v->b); break;
  case OPD__V1__IVALUE__VALUE_I: append(buf, len, "i%" PRId64, v->i); break;
  case OPD__V1__IVALUE__VALUE_D: append(buf, len, "d%g", v->d); break;
  case OPD__V1__IVALUE__VALUE_S: append(buf, len, "s:%s", v->s); break;
  case OPD__V1__IVALUE__VALUE_TENSOR: append(buf, len, "T%" PRIu64, v->tensor); break;
  case OPD__V1__IVALUE__VALUE_INTS:
    append(buf, len, "I[");
    for (size_t i = 0; i < v->ints->n_values; i++)
      append(buf, len, "%s%" PRId64, i ? "," : "", v->ints->values[i]);
    append(buf, len, "]");
    break;
  case OPD__V1__IVALUE__VALUE_DOUBLES:
    append(buf, len, "D[");
    for (size_t i = 0; i < v->doubles->n_values; i++)
      append(buf, len, "%s%g", i ? "," : "", v->doubles->values[i]);
    append(buf, len, "]");
    break;
  case OPD__V1__IVALUE__VALUE_BOOLS:
    append(buf, len, "B[");
    for (size_t i = 0; i < v->bools->n_values; i++)
      append(buf, len, "%s%d", i ? "," : "", v->bools->values[i]);
    append(buf, len, "]");
    break;
  case OPD__V1__IVALUE__VALUE_TENSORS:
  case OPD__V1__IVALUE__VALUE_OPTIONAL_TENSORS: {
    const Opd__V1__HandleList *l = v->tensors; /* same layout for both */
    append(buf, len, v->value_case == OPD__V1__IVALUE__VALUE_TENSORS ? "L[" : "O[");
    for (size_t i = 0; i < l->n_handles; i++)
      append(buf, len, "%s%" PRIu64, i ? "," : "", l->handles[i]);
    append(buf, len, "]");
    break;
  }
  case OPD__V1__IVALUE__VALUE_DTYPE: append(buf, len, "y%d", (int)v->dtype); break;
  case OPD__V1__IVALUE__VALUE_DEVICE:
    append(buf, len, "v%d:%d", v->device->type, v->device->index);
    break;
  case OPD__V1__IVALUE__VALUE_LITERAL:
    append(buf, len, "l%d[%zu]:%zu", (int)v->literal->dtype, v->literal->n_shape,
           v->literal->data.len);
    break;
  default: append(buf, len, "?"); break;
  }
}

static fake_tensor *fake_find(fake_server *fs, uint64_t h) {
  for (int i = 0; i < FAKE_MAX_TENSORS; i++)
    if (h && fs->tensors[i].handle == h) return &fs->tensors[i];
  return NULL;
}

static uint64_t fake_add_tensor(fake_server *fs, int dtype, const int64_t *shape, size_t ndim,
                                uint8_t *data, size_t nbytes) {
  for (int i = 0; i < FAKE_MAX_TENSORS; i++) {
    fake_tensor *t = &fs->tensors[i];
    if (t->handle) continue;
    *t = (fake_tensor){++fs->next_handle, dtype, ndim, {0}, data, nbytes};
    if (ndim) memcpy(t->shape, shape, ndim * sizeof *shape);
    return t->handle;
  }
  free(data);
  return 0;
}

static void reply_handles(fake_server *fs, uint64_t id, const uint64_t *handles, size_t n) {
  opd__wire_handles_view view;
  respond(fs, opd__wire_handles_view_init(&view, id, handles, n), NULL, 0);
}

/* aten::add.Tensor on float32 tensors of one shape. */
static void fake_add(fake_server *fs, uint64_t id, const Opd__V1__Call *call) {
  fake_tensor *a = call->n_args >= 2 ? fake_find(fs, call->args[0]->tensor) : NULL;
  fake_tensor *b = call->n_args >= 2 ? fake_find(fs, call->args[1]->tensor) : NULL;
  if (!a || !b)
    return respond_error(fs, id, OPD__V1__ERROR_CODE__NOT_FOUND, "unknown handle", call->op);
  if (a->nbytes != b->nbytes) {
    char msg[128];
    snprintf(msg, sizeof msg,
             "The size of tensor a (%" PRId64 ") must match the size of tensor b (%" PRId64 ")",
             a->shape[a->ndim - 1], b->shape[b->ndim - 1]);
    return respond_error(fs, id, OPD__V1__ERROR_CODE__INVALID_ARGUMENT, msg, call->op);
  }
  double alpha = 1;
  if (call->n_args > 2)
    alpha = call->args[2]->value_case == OPD__V1__IVALUE__VALUE_I ? (double)call->args[2]->i
                                                                  : call->args[2]->d;
  float *out = malloc(a->nbytes ? a->nbytes : 1);
  for (size_t i = 0; i < a->nbytes / 4; i++)
    out[i] = ((float *)a->data)[i] + (float)alpha * ((float *)b->data)[i];
  uint64_t h = fake_add_tensor(fs, a->dtype, a->shape, a->ndim, (uint8_t *)out, a->nbytes);
  reply_handles(fs, id, &h, 1);
}

static void fake_call(fake_server *fs, uint64_t id, const Opd__V1__Call *call) {
  pthread_mutex_lock(&fs->mu);
  snprintf(fs->last_call, sizeof fs->last_call, "%s(", call->op);
  for (size_t i = 0; i < call->n_args; i++) {
    if (i) append(fs->last_call, sizeof fs->last_call, ",");
    encode_value(call->args[i], fs->last_call, sizeof fs->last_call);
  }
  append(fs->last_call, sizeof fs->last_call, ")");
  pthread_mutex_unlock(&fs->mu);
  if (strcmp(call->op, "test::echo") == 0) {
    Opd__V1__CallReply cr = OPD__V1__CALL_REPLY__INIT;
    cr.n_results = call->n_args;
    cr.results = call->args;
    Opd__V1__Response r = OPD__V1__RESPONSE__INIT;
    r.id = id;
    r.body_case = OPD__V1__RESPONSE__BODY_CALL;
    r.call = &cr;
    respond(fs, &r, NULL, 0);
  } else if (strcmp(call->op, "test::fail") == 0) {
    respond_error(fs, id, (Opd__V1__ErrorCode)call->args[0]->i, call->args[1]->s, call->op);
  } else if (strcmp(call->op, "test::close") == 0) {
    respond_error(fs, 0, OPD__V1__ERROR_CODE__RESOURCE_EXHAUSTED, "session limit reached", NULL);
    flush_out(fs);
    shutdown(fs->fd, SHUT_RDWR);
  } else if (strcmp(call->op, "test::huge_frame") == 0) {
    uint8_t header[4] = {0, 0, 0, 0x40}; /* 1 GiB */
    out_append(fs, header, 4);
  } else if (strcmp(call->op, "test::wrong_id") == 0) {
    reply_handles(fs, id + 1000, (uint64_t[]){1}, 1);
  } else if (strcmp(call->op, "test::no_value") == 0) { /* a result with no value set */
    Opd__V1__IValue v = OPD__V1__IVALUE__INIT, *pv = &v;
    Opd__V1__CallReply cr = OPD__V1__CALL_REPLY__INIT;
    cr.n_results = 1;
    cr.results = &pv;
    Opd__V1__Response r = OPD__V1__RESPONSE__INIT;
    r.id = id;
    r.body_case = OPD__V1__RESPONSE__BODY_CALL;
    r.call = &cr;
    respond(fs, &r, NULL, 0);
  } else if (strcmp(call->op, "aten::add.Tensor") == 0) {
    fake_add(fs, id, call);
  } else if (strncmp(call->op, "aten::", 6) == 0) {
    /* anything else: fresh dummy results, three for native_layer_norm */
    size_t n = strcmp(call->op, "aten::native_layer_norm") == 0 ? 3 : 1;
    uint64_t hs[3];
    for (size_t i = 0; i < n; i++) hs[i] = fake_add_tensor(fs, OPD_FLOAT32, NULL, 0, NULL, 0);
    reply_handles(fs, id, hs, n);
  } else {
    char msg[128];
    snprintf(msg, sizeof msg, "unknown operator '%s'", call->op);
    respond_error(fs, id, OPD__V1__ERROR_CODE__NOT_FOUND, msg, "");
  }
}

static bool fake_request(fake_server *fs, const Opd__V1__Request *q) {
  Opd__V1__Response r = OPD__V1__RESPONSE__INIT;
  r.id = q->id;
  switch (q->body_case) {
  case OPD__V1__REQUEST__BODY_HELLO: {
    if (fs->refuse_hello) {
      respond_error(fs, q->id, OPD__V1__ERROR_CODE__FAILED_PRECONDITION,
                    "protocol version 7 unknown", NULL);
      return true;
    }
    Opd__V1__HelloReply h = OPD__V1__HELLO_REPLY__INIT;
    h.protocol_version = 1;
    h.server = "fake 0.0";
    h.max_frame_bytes = fs->max_frame;
    h.max_in_flight = fs->max_in_flight;
    r.body_case = OPD__V1__RESPONSE__BODY_HELLO;
    r.hello = &h;
    respond(fs, &r, NULL, 0);
    return true;
  }
  case OPD__V1__REQUEST__BODY_UPLOAD: {
    const Opd__V1__Upload *u = q->upload;
    uint8_t *data = malloc(u->nbytes ? u->nbytes : 1);
    if (!read_full(fs->fd, data, u->nbytes)) {
      free(data);
      return false;
    }
    Opd__V1__UploadReply ur = OPD__V1__UPLOAD_REPLY__INIT;
    ur.handle = fake_add_tensor(fs, u->dtype, u->shape, u->n_shape, data, u->nbytes);
    r.body_case = OPD__V1__RESPONSE__BODY_UPLOAD;
    r.upload = &ur;
    respond(fs, &r, NULL, 0);
    return true;
  }
  case OPD__V1__REQUEST__BODY_DOWNLOAD: {
    fake_tensor *t = fake_find(fs, q->download->handle);
    if (!t) {
      respond_error(fs, q->id, OPD__V1__ERROR_CODE__NOT_FOUND, "unknown handle", NULL);
      return true;
    }
    Opd__V1__DownloadReply d = OPD__V1__DOWNLOAD_REPLY__INIT;
    d.dtype = t->dtype;
    d.n_shape = t->ndim;
    d.shape = t->shape;
    d.nbytes = t->nbytes;
    int64_t tebi[] = {(int64_t)1 << 40};
    if (fs->lie_download) {
      d.dtype = OPD__V1__DTYPE__FLOAT32;
      d.n_shape = 1;
      d.shape = tebi;
      d.nbytes = (uint64_t)4 << 40;
    }
    r.body_case = OPD__V1__RESPONSE__BODY_DOWNLOAD;
    r.download = &d;
    respond(fs, &r, t->data, t->nbytes);
    if (fs->lie_download) flush_out(fs);
    return !fs->lie_download;
  }
  case OPD__V1__REQUEST__BODY_RELEASE: {
    uint64_t missing = 0;
    for (size_t i = 0; i < q->release->n_handles; i++) {
      fake_tensor *t = fake_find(fs, q->release->handles[i]);
      if (!t) {
        missing = q->release->handles[i];
        continue;
      }
      free(t->data);
      *t = (fake_tensor){0};
    }
    if (missing) {
      char msg[64];
      snprintf(msg, sizeof msg, "unknown handle %" PRIu64, missing);
      respond_error(fs, q->id, OPD__V1__ERROR_CODE__INVALID_ARGUMENT, msg, NULL);
      return true;
    }
    break;
  }
  case OPD__V1__REQUEST__BODY_SET_DISPATCH_STATE:
    pthread_mutex_lock(&fs->mu);
    fs->dispatch[0] = 0;
    for (size_t i = 0; i < q->set_dispatch_state->n_include; i++)
      append(fs->dispatch, sizeof fs->dispatch, "+%s", q->set_dispatch_state->include[i]);
    for (size_t i = 0; i < q->set_dispatch_state->n_exclude; i++)
      append(fs->dispatch, sizeof fs->dispatch, "-%s", q->set_dispatch_state->exclude[i]);
    pthread_mutex_unlock(&fs->mu);
    break;
  case OPD__V1__REQUEST__BODY_PING: {
    Opd__V1__Pong p = OPD__V1__PONG__INIT;
    p.payload = q->ping->payload;
    r.body_case = OPD__V1__RESPONSE__BODY_PONG;
    r.pong = &p;
    respond(fs, &r, NULL, 0);
    return true;
  }
  case OPD__V1__REQUEST__BODY_CALL: fake_call(fs, q->id, q->call); return true;
  default: break; /* synchronize */
  }
  Opd__V1__Ack ack = OPD__V1__ACK__INIT;
  r.body_case = OPD__V1__RESPONSE__BODY_ACK;
  r.ack = &ack;
  respond(fs, &r, NULL, 0);
  return true;
}

static void *fake_main(void *arg) {
  fake_server *fs = arg;
  for (;;) {
    uint8_t hdr[4];
    if (!read_full(fs->fd, hdr, 4)) break;
    uint32_t len = hdr[0] | hdr[1] << 8 | hdr[2] << 16 | (uint32_t)hdr[3] << 24;
    uint8_t *buf = malloc(len ? len : 1);
    if (!read_full(fs->fd, buf, len)) {
      free(buf);
      break;
    }
    Opd__V1__Request *q = opd__v1__request__unpack(NULL, len, buf);
    free(buf);
    ck_assert_ptr_nonnull(q);
    bool ok = fake_request(fs, q);
    bool is_hello = q->body_case == OPD__V1__REQUEST__BODY_HELLO;
    opd__v1__request__free_unpacked(q, NULL);
    if (!ok) break;
    pthread_mutex_lock(&fs->mu);
    int n = is_hello ? 0 : ++fs->requests;
    pthread_mutex_unlock(&fs->mu);
    if (is_hello || fs->hold == 0 || n >= fs->hold) flush_out(fs);
  }
  for (int i = 0; i < FAKE_MAX_TENSORS; i++) free(fs->tensors[i].data);
  free(fs->out);
  fs->out = NULL;
  close(fs->fd);
  return NULL;
}

static opd_client *fake_connect_opts(fake_server *fs, const opd_client_options *o) {
  int sv[2];
  ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
  if (!fs->max_frame) fs->max_frame = 1 << 20;
  if (!fs->max_in_flight) fs->max_in_flight = 128;
  pthread_mutex_init(&fs->mu, NULL);
  fs->fd = sv[1];
  ck_assert_int_eq(pthread_create(&fs->thread, NULL, fake_main, fs), 0);
  opd_client *c = NULL;
  int rc = opd_client_connect_fd(sv[0], o, &c);
  ck_assert_msg(rc == 0, "connect_fd: %s", opd_client_last_error());
  return c;
}

static opd_client *fake_connect(fake_server *fs) {
  return fake_connect_opts(fs, NULL);
}

static void fake_finish(fake_server *fs, opd_client *c) {
  opd_client_close(c);
  pthread_join(fs->thread, NULL);
  pthread_mutex_destroy(&fs->mu);
}

static void last_call(fake_server *fs, char *buf, size_t len) {
  pthread_mutex_lock(&fs->mu);
  snprintf(buf, len, "%s", fs->last_call);
  pthread_mutex_unlock(&fs->mu);
}

#define ck_assert_last_call(fs, expect) \
  do {                                  \
    char got_[512];                     \
    last_call((fs), got_, sizeof got_); \
    ck_assert_str_eq(got_, (expect));   \
  } while (0)

/* ---- URLs and connecting ---- */

START_TEST(test_url_errors) {
  static const struct {
    const char *url, *message;
  } cases[] = {
      {"http://127.0.0.1:80", "must start with tcp:// or unix:// (http:// is the daemon's status "
                              "endpoint, not its client port)"},
      {"127.0.0.1:7878", "must start with tcp:// or unix://"},
      {"tcp://127.0.0.1", "no port"},
      {"tcp://:7878", "no host"},
      {"tcp://127.0.0.1:", "port must be a number from 1 to 65535"},
      {"tcp://127.0.0.1:0", "port must be a number from 1 to 65535"},
      {"tcp://127.0.0.1:65536", "port must be a number from 1 to 65535"},
      {"tcp://127.0.0.1:12ab", "port must be a number from 1 to 65535"},
      {"tcp://127.0.0.1:99999999999999999999", "port must be a number from 1 to 65535"},
      {"tcp://[::1:7878", "unterminated [IPv6 address]"},
      {"tcp://[::1]7878", "no port"},
      {"unix://", "no socket path"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    opd_client *c = (opd_client *)1;
    ck_assert_int_eq(opd_client_connect(cases[i].url, NULL, &c), OPD_EINVAL);
    ck_assert_ptr_null(c);
    ck_assert_msg(strstr(opd_client_last_error(), cases[i].message), "%s: got '%s'", cases[i].url,
                  opd_client_last_error());
    ck_assert_int_eq(opd_client_last_error_code(), OPD_EINVAL);
  }
  char long_url[300] = "unix:///";
  memset(long_url + 8, 'x', 200);
  long_url[208] = 0;
  opd_client *c;
  ck_assert_int_eq(opd_client_connect(long_url, NULL, &c), OPD_EINVAL);
  ck_assert_ptr_nonnull(strstr(opd_client_last_error(), "socket path is longer than"));
  ck_assert_int_eq(opd_client_connect(NULL, NULL, &c), OPD_EINVAL);
}
END_TEST

/* A TCP port on which nothing listens (bound, then closed). */
static int closed_port(void) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  ck_assert_int_eq(bind(fd, (struct sockaddr *)&sa, sizeof sa), 0);
  socklen_t len = sizeof sa;
  getsockname(fd, (struct sockaddr *)&sa, &len);
  close(fd);
  return ntohs(sa.sin_port);
}

START_TEST(test_connect_failures) {
  char url[64];
  snprintf(url, sizeof url, "tcp://127.0.0.1:%d", closed_port());
  opd_client *c = (opd_client *)1;
  ck_assert_int_eq(opd_client_connect(url, NULL, &c), OPD_ENOENT);
  ck_assert_ptr_null(c);
  char expect[160];
  snprintf(expect, sizeof expect, "cannot connect to %s: Connection refused", url);
  ck_assert_str_eq(opd_client_last_error(), expect);

  ck_assert_int_eq(opd_client_connect("unix:///nonexistent/opd.sock", NULL, &c), OPD_ENOENT);
  ck_assert_str_eq(opd_client_last_error(),
                   "cannot connect to unix:///nonexistent/opd.sock: No such file or directory");

  ck_assert_int_eq(opd_client_connect("tcp://no-such-host.invalid:7878", NULL, &c), OPD_ENOENT);
  ck_assert_ptr_nonnull(strstr(opd_client_last_error(), "cannot connect to tcp://no-such-host"));
  ck_assert_int_eq(opd_client_connect_fd(-1, NULL, &c), OPD_EINVAL);
}
END_TEST

START_TEST(test_hello_refused) {
  fake_server fs = {.refuse_hello = true, .max_frame = 1 << 20, .max_in_flight = 8};
  int sv[2];
  ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
  pthread_mutex_init(&fs.mu, NULL);
  fs.fd = sv[1];
  pthread_create(&fs.thread, NULL, fake_main, &fs);
  opd_client *c = (opd_client *)1;
  /* FAILED_PRECONDITION maps to OPD_EINTERNAL */
  ck_assert_int_eq(opd_client_connect_fd(sv[0], NULL, &c), OPD_EINTERNAL);
  ck_assert_ptr_null(c);
  ck_assert_str_eq(opd_client_last_error(), "hello refused: protocol version 7 unknown");
  pthread_join(fs.thread, NULL);
  pthread_mutex_destroy(&fs.mu);
}
END_TEST

START_TEST(test_hello_timeout) {
  int sv[2];
  ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
  opd_client *c = (opd_client *)1;
  opd_client_options o = {.connect_timeout_ms = 50};
  ck_assert_int_eq(opd_client_connect_fd(sv[0], &o, &c), OPD_EBUSY);
  ck_assert_ptr_null(c);
  ck_assert_str_eq(opd_client_last_error(), "no hello reply from the server within 50 ms");
  close(sv[1]);
}
END_TEST

/* ---- requests against the fake server ---- */

typedef struct ping_log {
  int order[8], n, status[8];
} ping_log;
typedef struct ping_slot {
  ping_log *log;
  int seq;
} ping_slot;

static void ping_done(opd_future *f, void *user) {
  ping_slot *s = user;
  s->log->status[s->seq] = opd_future_status(f);
  s->log->order[s->log->n++] = s->seq;
}

START_TEST(test_server_info_and_ping) {
  fake_server fs = {.max_frame = 4096, .max_in_flight = 16};
  opd_client *c = fake_connect(&fs);
  const opd_client_server_info *info = opd_client_server(c);
  ck_assert_uint_eq(info->protocol_version, 1);
  ck_assert_str_eq(info->server, "fake 0.0");
  ck_assert_uint_eq(info->max_frame_bytes, 4096);
  ck_assert_uint_eq(info->max_in_flight, 16);
  ck_assert_int_eq(opd_client_ping(c, "hello", 5), 0);
  ck_assert_int_eq(opd_client_ping(c, NULL, 0), 0);
  /* pipelined: answered in order; the payload is copied at submission */
  ping_log log = {0};
  ping_slot slots[8];
  char payload[8];
  for (int i = 0; i < 8; i++) {
    slots[i] = (ping_slot){&log, i};
    memset(payload, 'a' + i, sizeof payload);
    ck_assert_int_eq(opd_client_ping_async(c, payload, (size_t)i, ping_done, &slots[i], NULL), 0);
  }
  ck_assert_int_eq(opd_client_ping_async(c, NULL, 1, ping_done, &slots[0], NULL), OPD_EINVAL);
  ck_assert_int_eq(opd_client_wait_all(c), 0);
  ck_assert_int_eq(log.n, 8);
  for (int i = 0; i < 8; i++) {
    ck_assert_int_eq(log.order[i], i);
    ck_assert_int_eq(log.status[i], 0);
  }
  ck_assert_int_eq(opd_client_synchronize(c), 0);
  fake_finish(&fs, c);
}
END_TEST

START_TEST(test_upload_add_download) {
  fake_server fs = {0};
  opd_client *c = fake_connect(&fs);
  int64_t shape[] = {2, 2};
  float xa[] = {1, 2, 3, 4}, xb[] = {10, 20, 30, 40}, got[4] = {0};
  opd_client_tensor a, b, r;
  ck_assert_int_eq(opd_client_upload(c, OPD_FLOAT32, shape, 2, xa, sizeof xa, NULL, &a), 0);
  ck_assert_int_eq(opd_client_upload(c, OPD_FLOAT32, shape, 2, xb, sizeof xb, NULL, &b), 0);
  ck_assert_uint_ne(a, 0);
  ck_assert_uint_ne(a, b);
  ck_assert_int_eq(opd_add(c, a, b, NULL, &r), 0);
  /* alpha left to its default: trailing, so not sent */
  char expect[96];
  snprintf(expect, sizeof expect, "aten::add.Tensor(T%" PRIu64 ",T%" PRIu64 ")", a, b);
  ck_assert_last_call(&fs, expect);
  opd_client_tensor_info info;
  ck_assert_int_eq(opd_client_download(c, r, got, sizeof got, &info), 0);
  ck_assert_int_eq(info.dtype, OPD_FLOAT32);
  ck_assert_int_eq(info.ndim, 2);
  ck_assert_int_eq(info.shape[0], 2);
  ck_assert_int_eq(info.shape[1], 2);
  ck_assert_uint_eq(info.nbytes, 16);
  ck_assert(got[0] == 11 && got[1] == 22 && got[2] == 33 && got[3] == 44);

  opd_client_tensor r2;
  ck_assert_int_eq(opd_add(c, a, b, OPD_SCALAR_DOUBLE(0.5), &r2), 0);
  snprintf(expect, sizeof expect, "aten::add.Tensor(T%" PRIu64 ",T%" PRIu64 ",d0.5)", a, b);
  ck_assert_last_call(&fs, expect);
  void *data;
  ck_assert_int_eq(opd_client_download_alloc(c, r2, &info, &data), 0);
  ck_assert(((float *)data)[3] == 24);
  free(data);
  ck_assert_int_eq(opd_client_release(c, (opd_client_tensor[]){a, b, r, r2}, 4), 0);
  fake_finish(&fs, c);
}
END_TEST

/* [Note: Download buffers grow]: an allocating download of 3 MiB and 12 bytes arrives whole
 * through a buffer grown as its bytes come; a server that declares 4 TiB and sends 16 bytes
 * makes the download fail as the connection closes, not for want of 4 TiB. */
START_TEST(test_download_alloc_grows_with_the_bytes) {
  fake_server fs = {0};
  opd_client *c = fake_connect(&fs);
  int64_t n = (3 << 20) / 4 + 3;
  float *x = malloc((size_t)n * sizeof *x);
  for (int64_t i = 0; i < n; i++) x[i] = (float)i;
  opd_client_tensor t;
  ck_assert_int_eq(opd_client_upload(c, OPD_FLOAT32, &n, 1, x, (size_t)n * 4, NULL, &t), 0);
  opd_client_tensor_info info;
  void *data = NULL;
  ck_assert_int_eq(opd_client_download_alloc(c, t, &info, &data), 0);
  ck_assert_uint_eq(info.nbytes, (uint64_t)n * 4);
  ck_assert(memcmp(data, x, (size_t)n * 4) == 0);
  free(data);
  free(x);
  fake_finish(&fs, c);

  fake_server liar = {.lie_download = true};
  c = fake_connect(&liar);
  int64_t four = 4;
  float y[4] = {1, 2, 3, 4};
  ck_assert_int_eq(opd_client_upload(c, OPD_FLOAT32, &four, 1, y, sizeof y, NULL, &t), 0);
  data = NULL;
  ck_assert_int_eq(opd_client_download_alloc(c, t, &info, &data), OPD_ESESSION);
  ck_assert_ptr_null(data);
  ck_assert_msg(strstr(opd_client_last_error(), "closed the connection"), "%s",
                opd_client_last_error());
  fake_finish(&liar, c);
}
END_TEST

START_TEST(test_upload_errors) {
  fake_server fs = {0};
  opd_client *c = fake_connect(&fs);
  int64_t shape[] = {2, 3}, neg[] = {-1}, huge[] = {INT64_MAX / 2, 4};
  float x[6] = {0};
  opd_client_tensor t = 99;
  ck_assert_int_eq(opd_client_upload(c, OPD_FLOAT32, shape, 2, x, 20, NULL, &t), OPD_EINVAL);
  ck_assert_uint_eq(t, 0);
  ck_assert_str_eq(opd_client_last_error(), "upload: 20 bytes given, the shape and dtype need 24");
  ck_assert_int_eq(opd_client_upload(c, 42, shape, 2, x, 24, NULL, &t), OPD_EINVAL);
  ck_assert_int_eq(opd_client_upload(c, OPD_FLOAT32, neg, 1, x, 0, NULL, &t), OPD_EINVAL);
  ck_assert_int_eq(opd_client_upload(c, OPD_FLOAT32, huge, 2, x, 0, NULL, &t), OPD_EINVAL);
  ck_assert_int_eq(opd_client_upload(c, OPD_FLOAT32, shape, 65, x, 24, NULL, &t), OPD_EINVAL);
  ck_assert_int_eq(opd_client_upload(c, OPD_FLOAT32, shape, 2, NULL, 24, NULL, &t), OPD_EINVAL);
  /* nothing was sent: the session is fine */
  ck_assert_int_eq(opd_client_upload(c, OPD_FLOAT32, shape, 2, x, 24, NULL, &t), 0);
  /* 0-d and empty tensors */
  opd_client_tensor s, e;
  double one = 1;
  ck_assert_int_eq(opd_client_upload(c, OPD_FLOAT64, NULL, 0, &one, 8, NULL, &s), 0);
  int64_t empty[] = {0, 3};
  ck_assert_int_eq(opd_client_upload(c, OPD_INT64, empty, 2, NULL, 0, NULL, &e), 0);
  opd_client_tensor_info info;
  ck_assert_int_eq(opd_client_download(c, e, NULL, 0, &info), 0);
  ck_assert_int_eq(info.ndim, 2);
  ck_assert_uint_eq(info.nbytes, 0);
  double back = 0;
  ck_assert_int_eq(opd_client_download(c, s, &back, sizeof back, &info), 0);
  ck_assert_int_eq(info.ndim, 0);
  ck_assert(back == 1);
  fake_finish(&fs, c);
}
END_TEST

START_TEST(test_download_errors) {
  fake_server fs = {0};
  opd_client *c = fake_connect(&fs);
  int64_t shape[] = {4};
  int32_t x[] = {1, 2, 3, 4}, small[2];
  opd_client_tensor t;
  ck_assert_int_eq(opd_client_upload(c, OPD_INT32, shape, 1, x, sizeof x, NULL, &t), 0);
  opd_client_tensor_info info;
  ck_assert_int_eq(opd_client_download(c, t, small, sizeof small, &info), OPD_EINVAL);
  ck_assert_str_eq(opd_client_last_error(),
                   "a download of 16 bytes does not fit the buffer of 8 bytes");
  /* the metadata still tells what was needed, and the raw bytes were skipped */
  ck_assert_int_eq(info.dtype, OPD_INT32);
  ck_assert_int_eq(info.shape[0], 4);
  ck_assert_uint_eq(info.nbytes, 16);
  int32_t back[4] = {0};
  ck_assert_int_eq(opd_client_download(c, t, back, sizeof back, NULL), 0);
  ck_assert_int_eq(back[3], 4);
  ck_assert_int_eq(opd_client_download(c, 777, back, sizeof back, &info), OPD_ENOENT);
  ck_assert_str_eq(opd_client_last_error(), "unknown handle");
  ck_assert_int_eq(opd_client_download(c, 0, back, sizeof back, &info), OPD_EINVAL);
  fake_finish(&fs, c);
}
END_TEST

START_TEST(test_large_transfers) {
  /* larger than any socket buffer: partial writes and reads, raw bytes straight through */
  fake_server fs = {0};
  opd_client *c = fake_connect(&fs);
  size_t n = 3u << 20;
  int64_t shape[] = {(int64_t)n};
  float *x = malloc(n * 4), *y = malloc(n * 4);
  for (size_t i = 0; i < n; i++) x[i] = (float)i;
  opd_client_tensor a, b, r;
  ck_assert_int_eq(opd_client_upload(c, OPD_FLOAT32, shape, 1, x, n * 4, NULL, &a), 0);
  ck_assert_int_eq(opd_client_upload(c, OPD_FLOAT32, shape, 1, x, n * 4, NULL, &b), 0);
  ck_assert_int_eq(opd_add(c, a, b, NULL, &r), 0);
  ck_assert_int_eq(opd_client_download(c, r, y, n * 4, NULL), 0);
  for (size_t i = 0; i < n; i += 4099) ck_assert(y[i] == 2 * (float)i);
  ck_assert(y[n - 1] == 2 * (float)(n - 1));
  /* async: upload, download and a ping in flight together */
  opd_future *fu, *fd, *fp;
  ck_assert_int_eq(
      opd_client_upload_async(c, OPD_FLOAT32, shape, 1, x, n * 4, NULL, NULL, NULL, &fu), 0);
  memset(y, 0, n * 4);
  ck_assert_int_eq(opd_client_download_async(c, a, y, n * 4, NULL, NULL, &fd), 0);
  ck_assert_int_eq(opd_client_release_async(c, &b, 1, NULL, NULL, &fp), 0);
  ck_assert_int_eq(opd_future_wait(fp), 0);
  ck_assert(opd_future_done(fu) && opd_future_done(fd));
  ck_assert_int_eq(opd_future_status(fu), 0);
  ck_assert_uint_ne(opd_future_handle(fu), 0);
  ck_assert(y[n - 1] == (float)(n - 1));
  opd_future_free(fu);
  opd_future_free(fd);
  opd_future_free(fp);
  free(x);
  free(y);
  fake_finish(&fs, c);
}
END_TEST

START_TEST(test_boxed_values_round_trip) {
  fake_server fs = {0};
  opd_client *c = fake_connect(&fs);
  int64_t ints[] = {1, -2, INT64_MAX};
  double doubles[] = {0.5, -1};
  bool bools[] = {true, false};
  opd_client_tensor ts[] = {5, 6}, opts[] = {7, 0};
  int64_t lshape[] = {2};
  float ldata[] = {1, 2};
  opd_client_literal lit = {OPD_FLOAT32, 1, lshape, ldata, sizeof ldata};
  opd_client_value args[] = {
      opd_cv_none(),
      opd_cv_bool(true),
      opd_cv_int(-3),
      opd_cv_double(2.5),
      opd_cv_str("trunc"),
      opd_cv_tensor(4),
      opd_cv_ints(ints, 3),
      opd_cv_doubles(doubles, 2),
      opd_cv_bools(bools, 2),
      opd_cv_tensors(ts, 2),
      opd_cv_opt_tensors(opts, 2),
      opd_cv_dtype(OPD_BFLOAT16),
      opd_cv_device(OPD_CLIENT_DEVICE_META, -1),
      opd_cv_literal(&lit),
      opd_cv_ints(NULL, 0),
  };
  size_t nargs = sizeof args / sizeof *args;
  opd_future *f;
  ck_assert_int_eq(opd_client_call_async(c, "test::echo", args, nargs, NULL, NULL, &f), 0);
  ck_assert_int_eq(opd_future_wait(f), 0);
  ck_assert_last_call(&fs, "test::echo(N,b1,i-3,d2.5,s:trunc,T4,I[1,-2,9223372036854775807],"
                           "D[0.5,-1],B[1,0],L[5,6],O[7,0],y15,v10:-1,l6[1]:8,I[])");
  size_t n;
  const opd_client_value *v = opd_future_results(f, &n);
  ck_assert_uint_eq(n, nargs);
  ck_assert_int_eq(v[0].kind, OPD_CV_NONE);
  ck_assert(v[1].kind == OPD_CV_BOOL && v[1].u.b);
  ck_assert(v[2].kind == OPD_CV_INT && v[2].u.i == -3);
  ck_assert(v[3].kind == OPD_CV_DOUBLE && v[3].u.d == 2.5);
  ck_assert(v[4].kind == OPD_CV_STR && v[4].len == 5);
  ck_assert_str_eq(v[4].u.s, "trunc");
  ck_assert(v[5].kind == OPD_CV_TENSOR && v[5].u.tensor == 4);
  ck_assert_int_eq(opd_future_tensor(f, 5), 4);
  ck_assert_int_eq(opd_future_tensor(f, 4), 0); /* not a tensor */
  ck_assert(v[6].kind == OPD_CV_INTS && v[6].len == 3 && v[6].u.ints[2] == INT64_MAX);
  ck_assert(v[7].kind == OPD_CV_DOUBLES && v[7].len == 2 && v[7].u.doubles[1] == -1);
  ck_assert(v[8].kind == OPD_CV_BOOLS && v[8].u.bools[0] && !v[8].u.bools[1]);
  ck_assert(v[9].kind == OPD_CV_TENSORS && v[9].u.tensors[1] == 6);
  ck_assert(v[10].kind == OPD_CV_OPT_TENSORS && v[10].u.tensors[1] == 0);
  ck_assert(v[11].kind == OPD_CV_DTYPE && v[11].u.dtype == OPD_BFLOAT16);
  ck_assert(v[12].kind == OPD_CV_DEVICE && v[12].u.device.type == 10 && v[12].u.device.index == -1);
  ck_assert(v[13].kind == OPD_CV_LITERAL && v[13].u.literal->ndim == 1 &&
            v[13].u.literal->shape[0] == 2 && ((const float *)v[13].u.literal->data)[1] == 2);
  ck_assert(v[14].kind == OPD_CV_INTS && v[14].len == 0);
  opd_future_free(f);

  /* the synchronous boxed call wants Tensor results only */
  opd_client_tensor outs[2];
  size_t nouts = 9;
  ck_assert_int_eq(opd_client_call(c, "test::echo",
                                   (opd_client_value[]){opd_cv_tensor(8), opd_cv_tensor(9)}, 2,
                                   outs, 2, &nouts),
                   0);
  ck_assert_uint_eq(nouts, 2);
  ck_assert(outs[0] == 8 && outs[1] == 9);
  ck_assert_int_eq(opd_client_call(c, "test::echo",
                                   (opd_client_value[]){opd_cv_tensor(8), opd_cv_tensor(9)}, 2,
                                   outs, 1, &nouts),
                   OPD_EINVAL);
  ck_assert_str_eq(opd_client_last_error(), "test::echo returned 2 tensors, with room for 1");
  ck_assert_int_eq(
      opd_client_call(c, "test::echo", (opd_client_value[]){opd_cv_int(1)}, 1, outs, 2, &nouts),
      OPD_EINVAL);
  ck_assert_ptr_nonnull(strstr(opd_client_last_error(), "a result is not a Tensor"));
  fake_finish(&fs, c);
}
END_TEST

START_TEST(test_bad_arguments_rejected_locally) {
  fake_server fs = {.max_frame = 4096};
  opd_client *c = fake_connect(&fs);
  opd_future *f = (opd_future *)1;
  ck_assert_int_eq(opd_client_call_async(c, "test::echo", (opd_client_value[]){opd_cv_tensor(0)}, 1,
                                         NULL, NULL, &f),
                   OPD_EINVAL);
  ck_assert_ptr_null(f);
  ck_assert_str_eq(opd_client_last_error(), "argument 0: tensor handle 0 (None is opd_cv_none())");
  /* a graph's value is not a handle, in a call of plain arguments or with a list */
  opd_client_tensor value = OPD_CLIENT_GRAPH_VALUE_BIT | 1;
  ck_assert_int_eq(opd_client_call_async(c, "test::echo",
                                         (opd_client_value[]){opd_cv_int(1), opd_cv_tensor(value)},
                                         2, NULL, NULL, &f),
                   OPD_EINVAL);
  ck_assert_str_eq(opd_client_last_error(),
                   "argument 1: a value of a graph being built, not a tensor handle: it is an "
                   "argument only of calls captured into its graph");
  ck_assert_int_eq(opd_client_call_async(
                       c, "test::echo", (opd_client_value[]){opd_cv_tensor(value), opd_cv_str("x")},
                       2, NULL, NULL, &f),
                   OPD_EINVAL);
  ck_assert_ptr_nonnull(strstr(opd_client_last_error(), "argument 0: a value of a graph"));
  ck_assert_int_eq(opd_client_call_async(c, "test::echo",
                                         (opd_client_value[]){opd_cv_ints(NULL, 2)}, 1, NULL, NULL,
                                         &f),
                   OPD_EINVAL);
  ck_assert_int_eq(opd_client_call_async(c, "test::echo", (opd_client_value[]){opd_cv_dtype(9)}, 1,
                                         NULL, NULL, &f),
                   OPD_EINVAL);
  ck_assert_int_eq(
      opd_client_call_async(c, "test::echo",
                            (opd_client_value[]){opd_cv_tensors((opd_client_tensor[]){1, 0}, 2)}, 1,
                            NULL, NULL, &f),
      OPD_EINVAL);
  ck_assert_int_eq(opd_client_call_async(c, "", NULL, 0, NULL, NULL, &f), OPD_EINVAL);
  opd_client_literal bad = {OPD_FLOAT32, 1, (int64_t[]){3}, (float[]){1, 2}, 8};
  ck_assert_int_eq(opd_client_call_async(c, "test::echo",
                                         (opd_client_value[]){opd_cv_literal(&bad)}, 1, NULL, NULL,
                                         &f),
                   OPD_EINVAL);
  /* a frame over the server's max_frame_bytes is refused before sending */
  int64_t *big = calloc(5000, sizeof *big);
  ck_assert_int_eq(opd_client_call_async(c, "test::echo",
                                         (opd_client_value[]){opd_cv_ints(big, 5000)}, 1, NULL,
                                         NULL, &f),
                   OPD_ERESOURCE);
  ck_assert_ptr_nonnull(
      strstr(opd_client_last_error(), "exceeds the server's max_frame_bytes (4096)"));
  free(big);
  /* so is a call of plain arguments ([Note: Typed calls packed directly]) */
  char *long_op = malloc(5000);
  memset(long_op, 'x', 4999);
  long_op[4999] = 0;
  ck_assert_int_eq(
      opd_client_call_async(c, long_op, (opd_client_value[]){opd_cv_tensor(1)}, 1, NULL, NULL, &f),
      OPD_ERESOURCE);
  ck_assert_ptr_nonnull(
      strstr(opd_client_last_error(), "exceeds the server's max_frame_bytes (4096)"));
  free(long_op);
  /* typed calls check required arguments */
  opd_client_tensor r = 5;
  ck_assert_int_eq(opd_add(c, 0, 1, NULL, &r), OPD_EINVAL);
  ck_assert_str_eq(opd_client_last_error(),
                   "aten::add.Tensor: argument 'self' is a required Tensor (handle 0)");
  ck_assert_int_eq(opd_mul_scalar(c, 1, (opd_client_scalar){.kind = OPD_CV_STR}, &r), OPD_EINVAL);
  ck_assert_int_eq(opd_gelu(c, 1, NULL, &r), 0); /* str with a default: NULL is fine */
  ck_assert_int_eq(opd_client_ping(c, "x", 1), 0);
  ck_assert_uint_eq(opd_client_pending(c), 0);
  fake_finish(&fs, c);
}
END_TEST

/* The operators with a typed call: the X lines of the daemon's schema list (an X_UNTYPED
 * operator, one with a Tensor[] result such as split.Tensor, has none). */
enum {
  SCHEMAS_TYPED = 0
#define X(schema)         +1
#define X_UNTYPED(schema) +0
#include "../kernels/aten_schemas.def"
#undef X
#undef X_UNTYPED
};

START_TEST(test_typed_calls_encode_defaults) {
  fake_server fs = {0};
  opd_client *c = fake_connect(&fs);
  opd_client_tensor r, r3[3];
  ck_assert_int_eq(opd_sum_dim_intlist(c, 1, (int64_t[]){1, -1}, 2, NULL, NULL, &r), 0);
  ck_assert_last_call(&fs, "aten::sum.dim_IntList(T1,I[1,-1])");
  /* int[1]? dim without default: NULL is None and is always sent */
  ck_assert_int_eq(opd_sum_dim_intlist(c, 1, NULL, 0, NULL, OPD_DTYPE(OPD_FLOAT64), &r), 0);
  ck_assert_last_call(&fs, "aten::sum.dim_IntList(T1,N,b0,y7)");
  ck_assert_int_eq(opd_sum(c, 2, NULL, &r), 0);
  ck_assert_last_call(&fs, "aten::sum(T2)");
  /* a later explicit argument sends the defaults before it */
  ck_assert_int_eq(opd_slice(c, 3, NULL, NULL, OPD_INT(4), NULL, &r), 0);
  ck_assert_last_call(&fs, "aten::slice.Tensor(T3,i0,N,i4)");
  ck_assert_int_eq(opd_slice(c, 3, OPD_INT(1), OPD_INT(-2), NULL, OPD_INT(2), &r), 0);
  ck_assert_last_call(&fs, "aten::slice.Tensor(T3,i1,i-2,N,i2)");
  ck_assert_int_eq(opd_layer_norm(c, 1, (int64_t[]){4}, 1, 0, 0, NULL, OPD_BOOL(false), &r), 0);
  ck_assert_last_call(&fs, "aten::layer_norm(T1,I[4],N,N,d1e-05,b0)");
  ck_assert_int_eq(opd_layer_norm(c, 1, (int64_t[]){4}, 1, 2, 0, NULL, NULL, &r), 0);
  ck_assert_last_call(&fs, "aten::layer_norm(T1,I[4],T2)");
  ck_assert_int_eq(opd_native_layer_norm(c, 1, (int64_t[]){4}, 1, 0, 0, 1e-3, r3), 0);
  ck_assert_last_call(&fs, "aten::native_layer_norm(T1,I[4],N,N,d0.001)");
  ck_assert(r3[0] && r3[1] && r3[2] && r3[0] != r3[1]);
  ck_assert_int_eq(opd_gelu(c, 1, "tanh", &r), 0);
  ck_assert_last_call(&fs, "aten::gelu(T1,s:tanh)");
  ck_assert_int_eq(opd_div_tensor_mode(c, 1, 2, NULL, &r), 0);
  ck_assert_last_call(&fs, "aten::div.Tensor_mode(T1,T2,N)");
  ck_assert_int_eq(opd_clamp(c, 1, NULL, OPD_SCALAR_INT(3), &r), 0);
  ck_assert_last_call(&fs, "aten::clamp(T1,N,i3)");
  ck_assert_int_eq(opd_full(c, (int64_t[]){2, 3}, 2, opd_cs_bool(true), NULL, NULL,
                            OPD_DEVICE(OPD_CLIENT_DEVICE_META, -1), NULL, &r),
                   0);
  ck_assert_last_call(&fs, "aten::full(I[2,3],b1,N,N,v10:-1)");
  ck_assert_int_eq(
      opd_arange_start_step(c, opd_cs_int(0), opd_cs_double(2.5), NULL, NULL, NULL, NULL, NULL, &r),
      0);
  ck_assert_last_call(&fs, "aten::arange.start_step(i0,d2.5)");
  /* the overload-less operator takes the plain name: torch.arange(end) */
  ck_assert_int_eq(opd_arange(c, opd_cs_int(5), OPD_DTYPE(OPD_FLOAT64), NULL, NULL, NULL, &r), 0);
  ck_assert_last_call(&fs, "aten::arange(i5,y7)");
  ck_assert_int_eq(opd_arange_start(c, opd_cs_int(1), opd_cs_int(4), NULL, NULL, NULL, NULL, &r),
                   0);
  ck_assert_last_call(&fs, "aten::arange.start(i1,i4)");
  ck_assert_int_eq(opd_amax(c, 1, NULL, 0, OPD_BOOL(true), &r), 0);
  ck_assert_last_call(&fs, "aten::amax(T1,I[],b1)");
  ck_assert_int_eq(opd_cat(c, (opd_client_tensor[]){1, 2}, 2, NULL, &r), 0);
  ck_assert_last_call(&fs, "aten::cat(L[1,2])");
  ck_assert_int_eq(opd_add_out(c, 1, 2, NULL, 3, &r), 0);
  ck_assert_last_call(&fs, "aten::add.out(T1,T2,i1,T3)");
  ck_assert_int_eq(opd_contiguous(c, 1, NULL, &r), 0);
  ck_assert_last_call(&fs, "aten::contiguous(T1)");
  ck_assert_int_eq(opd__to_copy(c, 1, OPD_DTYPE(OPD_INT64), NULL, NULL, NULL, NULL, NULL, &r), 0);
  ck_assert_last_call(&fs, "aten::_to_copy(T1,y4)");
  ck_assert_int_eq(opd_log_op(c, 1, &r), 0);
  ck_assert_last_call(&fs, "aten::log(T1)");
  ck_assert_int_eq(opd_as_strided(c, 1, (int64_t[]){2}, 1, (int64_t[]){3}, 1, OPD_INT(1), &r), 0);
  ck_assert_last_call(&fs, "aten::as_strided(T1,I[2],I[3],i1)");
  /* the asynchronous form sends the same */
  opd_future *f;
  ck_assert_int_eq(opd_expand_async(c, 1, (int64_t[]){4, 4}, 2, OPD_BOOL(true), NULL, NULL, &f), 0);
  ck_assert_int_eq(opd_future_wait(f), 0);
  ck_assert_uint_ne(opd_future_tensor(f, 0), 0);
  ck_assert_last_call(&fs, "aten::expand(T1,I[4,4],b1)");
  opd_future_free(f);
  ck_assert_int_eq(OPD_CLIENT_NUM_TYPED_OPS, SCHEMAS_TYPED);
  fake_finish(&fs, c);
}
END_TEST

START_TEST(test_server_errors_map) {
  fake_server fs = {0};
  opd_client *c = fake_connect(&fs);
  static const struct {
    Opd__V1__ErrorCode code;
    int rc;
  } map[] = {
      {OPD__V1__ERROR_CODE__INVALID_ARGUMENT, OPD_EINVAL},
      {OPD__V1__ERROR_CODE__NOT_FOUND, OPD_ENOENT},
      {OPD__V1__ERROR_CODE__UNIMPLEMENTED, OPD_ENOTIMPL},
      {OPD__V1__ERROR_CODE__RESOURCE_EXHAUSTED, OPD_ERESOURCE},
      {OPD__V1__ERROR_CODE__INDEX_OUT_OF_RANGE, OPD_EINDEX},
      {OPD__V1__ERROR_CODE__CANCELLED, OPD_ECANCELED},
      {OPD__V1__ERROR_CODE__INTERNAL, OPD_EINTERNAL},
      {OPD__V1__ERROR_CODE__UNKNOWN, OPD_EINTERNAL},
      {OPD__V1__ERROR_CODE__FAILED_PRECONDITION, OPD_EINTERNAL},
  };
  for (size_t i = 0; i < sizeof map / sizeof *map; i++) {
    opd_client_value args[] = {opd_cv_int(map[i].code), opd_cv_str("Dimension out of range")};
    opd_future *f;
    ck_assert_int_eq(opd_client_call_async(c, "test::fail", args, 2, NULL, NULL, &f), 0);
    ck_assert_int_eq(opd_future_wait(f), map[i].rc);
    ck_assert_int_eq(opd_future_status(f), map[i].rc);
    ck_assert_str_eq(opd_future_error(f), "Dimension out of range");
    ck_assert_str_eq(opd_future_error_op(f), "test::fail");
    size_t n = 7;
    ck_assert_ptr_null(opd_future_results(f, &n));
    ck_assert_uint_eq(n, 0);
    opd_future_free(f);
    /* the synchronous form: the op, then the message */
    opd_client_tensor out;
    ck_assert_int_eq(opd_client_call(c, "test::fail", args, 2, &out, 1, NULL), map[i].rc);
    ck_assert_str_eq(opd_client_last_error(), "test::fail: Dimension out of range");
    ck_assert_int_eq(opd_client_last_error_code(), map[i].rc);
  }
  /* an unknown operator; the session goes on */
  opd_client_tensor out;
  ck_assert_int_eq(opd_client_call(c, "nope::op", NULL, 0, &out, 1, NULL), OPD_ENOENT);
  ck_assert_str_eq(opd_client_last_error(), "nope::op: unknown operator 'nope::op'");
  /* shape mismatch from the (fake) kernel */
  opd_client_tensor a, b;
  ck_assert_int_eq(
      opd_client_upload(c, OPD_FLOAT32, (int64_t[]){2}, 1, (float[]){1, 2}, 8, NULL, &a), 0);
  ck_assert_int_eq(
      opd_client_upload(c, OPD_FLOAT32, (int64_t[]){3}, 1, (float[]){1, 2, 3}, 12, NULL, &b), 0);
  ck_assert_int_eq(opd_add(c, a, b, NULL, &out), OPD_EINVAL);
  ck_assert_str_eq(
      opd_client_last_error(),
      "aten::add.Tensor: The size of tensor a (2) must match the size of tensor b (3)");
  ck_assert_int_eq(opd_client_release(c, (opd_client_tensor[]){a, 4242}, 2), OPD_EINVAL);
  ck_assert_str_eq(opd_client_last_error(), "unknown handle 4242");
  ck_assert_int_eq(opd_client_release(c, &b, 1), 0);
  ck_assert_str_eq(opd_client_strerror(OPD_EINDEX), "index out of range");
  ck_assert_str_eq(opd_client_err_name(OPD_ENOTIMPL), "ENOTIMPL");
  ck_assert_str_eq(opd_client_err_name(12345), "UNKNOWN");
  ck_assert_uint_eq(opd_client_dtype_size(OPD_BFLOAT16), 2);
  ck_assert_uint_eq(opd_client_dtype_size(8), 0);
  fake_finish(&fs, c);
}
END_TEST

START_TEST(test_dispatch_state) {
  fake_server fs = {0};
  opd_client *c = fake_connect(&fs);
  const char *inc[] = {"Meta"}, *exc[] = {"AutogradFunctionality", "ADInplaceOrView"};
  ck_assert_int_eq(opd_client_set_dispatch_state(c, inc, 1, exc, 2), 0);
  pthread_mutex_lock(&fs.mu);
  ck_assert_str_eq(fs.dispatch, "+Meta-AutogradFunctionality-ADInplaceOrView");
  pthread_mutex_unlock(&fs.mu);
  ck_assert_int_eq(opd_client_set_dispatch_state(c, NULL, 0, NULL, 0), 0);
  pthread_mutex_lock(&fs.mu);
  ck_assert_str_eq(fs.dispatch, "");
  pthread_mutex_unlock(&fs.mu);
  ck_assert_int_eq(opd_client_set_dispatch_state(c, (const char *[]){NULL}, 1, NULL, 0),
                   OPD_EINVAL);
  fake_finish(&fs, c);
}
END_TEST

typedef struct order_log {
  pthread_mutex_t mu;
  int64_t seen[256];
  int count;
} order_log;

static void record_order(opd_future *f, void *user) {
  order_log *log = user;
  size_t n;
  const opd_client_value *v = opd_future_results(f, &n);
  ck_assert(opd_future_done(f));
  ck_assert_uint_eq(n, opd_future_status(f) == 0 ? 1 : 0);
  pthread_mutex_lock(&log->mu);
  log->seen[log->count++] = n ? v[0].u.i : opd_future_status(f);
  pthread_mutex_unlock(&log->mu);
}

START_TEST(test_pipelining_64_deep) {
  /* the server answers nothing until it has read 64 requests: they must all be in flight */
  fake_server fs = {.hold = 64};
  opd_client *c = fake_connect(&fs);
  opd_future *f[64];
  order_log log = {.mu = PTHREAD_MUTEX_INITIALIZER};
  for (int i = 0; i < 64; i++) {
    opd_client_value arg = opd_cv_int(1000 + i);
    ck_assert_int_eq(opd_client_call_async(c, "test::echo", &arg, 1, record_order, &log, &f[i]), 0);
  }
  ck_assert_uint_eq(opd_client_pending(c), 64);
  /* waiting on the last one completes all: responses come in request order */
  ck_assert_int_eq(opd_future_wait(f[63]), 0);
  for (int i = 0; i < 64; i++) {
    ck_assert(opd_future_done(f[i]));
    size_t n;
    const opd_client_value *v = opd_future_results(f[i], &n);
    ck_assert(n == 1 && v[0].kind == OPD_CV_INT && v[0].u.i == 1000 + i);
    ck_assert_int_eq(log.seen[i], 1000 + i);
    opd_future_free(f[i]);
  }
  ck_assert_int_eq(log.count, 64);
  fake_finish(&fs, c);
}
END_TEST

/* [Note: Replies taken in a batch]: 150 replies that arrive in one write, where runs of
 * the usual reply (tensor handles: echo of a tensor) are broken by errors and by replies
 * of other values, and the last 70 are one run, longer than a batch. Each request gets its
 * own outcome and the callbacks run in request order. */
typedef struct mixed_slot {
  order_log *log;
  int index;
} mixed_slot;

static void record_mixed(opd_future *f, void *user) {
  mixed_slot *s = user;
  ck_assert(opd_future_done(f));
  s->log->seen[s->log->count++] = s->index;
}

START_TEST(test_replies_batched_in_order) {
  enum { N = 150 };
  fake_server fs = {.hold = N, .max_in_flight = 256};
  opd_client *c = fake_connect(&fs);
  order_log log = {.mu = PTHREAD_MUTEX_INITIALIZER};
  mixed_slot slots[N];
  opd_future *f[N];
  for (int i = 0; i < N; i++) {
    slots[i] = (mixed_slot){&log, i};
    bool fail = i < 80 && i % 7 == 3, echo_int = i < 80 && i % 11 == 5;
    opd_client_value fail_args[] = {opd_cv_int(OPD__V1__ERROR_CODE__INVALID_ARGUMENT),
                                    opd_cv_str("no")};
    opd_client_value arg = echo_int ? opd_cv_int(i) : opd_cv_tensor((opd_client_tensor)i + 1);
    ck_assert_int_eq(
        fail ? opd_client_call_async(c, "test::fail", fail_args, 2, record_mixed, &slots[i], &f[i])
             : opd_client_call_async(c, "test::echo", &arg, 1, record_mixed, &slots[i], &f[i]),
        0);
  }
  ck_assert_int_eq(opd_client_wait_all(c), 0);
  ck_assert_int_eq(log.count, N);
  for (int i = 0; i < N; i++) {
    ck_assert_int_eq(log.seen[i], i);
    bool fail = i < 80 && i % 7 == 3, echo_int = i < 80 && i % 11 == 5;
    size_t n;
    const opd_client_value *v = opd_future_results(f[i], &n);
    if (fail) {
      ck_assert_int_eq(opd_future_status(f[i]), OPD_EINVAL);
      ck_assert_str_eq(opd_future_error(f[i]), "no");
      ck_assert_uint_eq(n, 0);
    } else if (echo_int) {
      ck_assert_int_eq(opd_future_status(f[i]), 0);
      ck_assert(n == 1 && v[0].kind == OPD_CV_INT && v[0].u.i == i);
    } else {
      ck_assert_int_eq(opd_future_status(f[i]), 0);
      ck_assert_uint_eq(n, 1);
      ck_assert_uint_eq(opd_future_tensor(f[i], 0), (opd_client_tensor)i + 1);
    }
    opd_future_free(f[i]);
  }
  ck_assert_uint_eq(opd_client_pending(c), 0);
  fake_finish(&fs, c);

  /* a reply to no request inside a run: the ones before it complete, then the connection
   * fails every request after it */
  fake_server fs2 = {.hold = 10};
  c = fake_connect(&fs2);
  for (int i = 0; i < 10; i++) {
    opd_client_value arg = opd_cv_tensor((opd_client_tensor)i + 1);
    ck_assert_int_eq(opd_client_call_async(c, i == 5 ? "test::wrong_id" : "test::echo", &arg, 1,
                                           NULL, NULL, &f[i]),
                     0);
  }
  for (int i = 0; i < 10; i++) {
    int rc = opd_future_wait(f[i]);
    if (i < 5) {
      ck_assert_int_eq(rc, 0);
      ck_assert_uint_eq(opd_future_tensor(f[i], 0), (opd_client_tensor)i + 1);
    } else {
      ck_assert_int_eq(rc, OPD_EINTERNAL);
      ck_assert_ptr_nonnull(strstr(opd_future_error(f[i]), "a response to no pending request"));
    }
    opd_future_free(f[i]);
  }
  fake_finish(&fs2, c);
}
END_TEST

/* opd_client_poll counts the requests completed, also when their callbacks submit more
 * than completed: 1 + 2 + 2 + 2 requests, each poll's count in (0, 7], summing to 7. */
typedef struct fan_out {
  opd_client *c;
  int splits;
} fan_out;

static void split_in_two(opd_future *f, void *user) {
  fan_out *s = user;
  ck_assert_int_eq(opd_future_status(f), 0);
  if (s->splits == 0) return;
  s->splits--;
  opd_client_value arg = opd_cv_int(1);
  for (int i = 0; i < 2; i++)
    ck_assert_int_eq(opd_client_call_async(s->c, "test::echo", &arg, 1, split_in_two, s, NULL), 0);
}

START_TEST(test_poll_counts_completions) {
  fake_server fs = {0};
  opd_client *c = fake_connect(&fs);
  fan_out s = {c, 3};
  opd_client_value arg = opd_cv_int(1);
  ck_assert_int_eq(opd_client_call_async(c, "test::echo", &arg, 1, split_in_two, &s, NULL), 0);
  int total = 0;
  while (opd_client_pending(c) > 0) {
    int n = opd_client_poll(c, 5000);
    ck_assert_int_gt(n, 0);
    ck_assert_int_le(n, 7);
    total += n;
  }
  ck_assert_int_eq(total, 7);
  ck_assert_int_eq(s.splits, 0);
  fake_finish(&fs, c);
}
END_TEST

/* [Note: Replies taken in a batch]: a thread in opd_client_wait_all while another runs the
 * I/O returns only once every request's callback has run, though the replies were taken
 * off the list together. */
typedef struct slow_pump {
  opd_client *c;
  int rc;
} slow_pump;

static void slow_callback(opd_future *f, void *user) {
  (void)user;
  ck_assert_int_eq(opd_future_status(f), 0);
  nanosleep(&(struct timespec){0, 100000000}, NULL); /* the waiter is woken meanwhile */
}

static void *pump_once_blocking(void *arg) {
  slow_pump *p = arg;
  p->rc = opd_client_poll(p->c, 10000);
  return NULL;
}

START_TEST(test_wait_all_waits_for_batched_callbacks) {
  fake_server fs = {.hold = 3};
  opd_client *c = fake_connect(&fs);
  opd_future *f[3];
  opd_client_value arg = opd_cv_tensor(7);
  for (int i = 0; i < 2; i++)
    ck_assert_int_eq(opd_client_call_async(c, "test::echo", &arg, 1, slow_callback, NULL, &f[i]),
                     0);
  slow_pump p = {c, -1};
  pthread_t pump;
  ck_assert_int_eq(pthread_create(&pump, NULL, pump_once_blocking, &p), 0);
  nanosleep(&(struct timespec){0, 50000000}, NULL); /* it is in poll() now, running the I/O */
  /* the third request makes the server answer all three in one write */
  ck_assert_int_eq(opd_client_call_async(c, "test::echo", &arg, 1, slow_callback, NULL, &f[2]), 0);
  ck_assert_int_eq(opd_client_wait_all(c), 0);
  for (int i = 0; i < 3; i++) ck_assert_msg(opd_future_done(f[i]), "future %d not done", i);
  pthread_join(pump, NULL);
  /* 3 as a rule; fewer if a loaded machine let this thread run the I/O itself */
  ck_assert_int_ge(p.rc, 0);
  ck_assert_int_le(p.rc, 3);
  for (int i = 0; i < 3; i++) opd_future_free(f[i]);
  fake_finish(&fs, c);
}
END_TEST

START_TEST(test_in_flight_limit) {
  fake_server fs = {.max_in_flight = 4};
  opd_client *c = fake_connect(&fs);
  ck_assert_uint_eq(opd_client_server(c)->max_in_flight, 4);
  order_log log = {.mu = PTHREAD_MUTEX_INITIALIZER};
  for (int i = 0; i < 40; i++) {
    opd_client_value arg = opd_cv_int(i);
    /* fire and forget: the library frees the futures after their callbacks */
    ck_assert_int_eq(opd_client_call_async(c, "test::echo", &arg, 1, record_order, &log, NULL), 0);
    ck_assert_uint_le(opd_client_pending(c), 4);
  }
  ck_assert_int_eq(opd_client_wait_all(c), 0);
  ck_assert_int_eq(log.count, 40);
  for (int i = 0; i < 40; i++) ck_assert_int_eq(log.seen[i], i);
  ck_assert_uint_eq(opd_client_pending(c), 0);
  fake_finish(&fs, c);

  /* the client's own limit is lower than the server's */
  fake_server fs2 = {.max_in_flight = 64};
  opd_client_options o = {.max_in_flight = 2, .client_name = "test"};
  c = fake_connect_opts(&fs2, &o);
  for (int i = 0; i < 10; i++) {
    opd_client_value arg = opd_cv_int(i);
    ck_assert_int_eq(opd_client_call_async(c, "test::echo", &arg, 1, NULL, NULL, NULL), 0);
    ck_assert_uint_le(opd_client_pending(c), 2);
  }
  ck_assert_int_eq(opd_client_wait_all(c), 0);
  fake_finish(&fs2, c);
}
END_TEST

/* [Note: Batched writes]: submissions are held until flush, a wait, the byte threshold or
 * the time bound; held ones are pending and complete in order. */
static int requests_read(fake_server *fs) {
  pthread_mutex_lock(&fs->mu);
  int n = fs->requests;
  pthread_mutex_unlock(&fs->mu);
  return n;
}

static void wait_requests_read(fake_server *fs, int n) {
  for (int i = 0; i < 1000 && requests_read(fs) < n; i++)
    nanosleep(&(struct timespec){0, 10000000}, NULL);
  ck_assert_int_eq(requests_read(fs), n);
}

START_TEST(test_batched_writes) {
  fake_server fs = {0};
  opd_client_options o = {.write_batch_bytes = 1 << 20, .write_batch_us = 60000000};
  opd_client *c = fake_connect_opts(&fs, &o);
  order_log log = {.mu = PTHREAD_MUTEX_INITIALIZER};
  opd_future *f[8];
  for (int i = 0; i < 8; i++) {
    opd_client_value arg = opd_cv_int(i);
    ck_assert_int_eq(opd_client_call_async(c, "test::echo", &arg, 1, record_order, &log, &f[i]), 0);
  }
  ck_assert_uint_eq(opd_client_pending(c), 8);
  ck_assert(opd_client_wants_write(c));
  nanosleep(&(struct timespec){0, 20000000}, NULL);
  ck_assert_int_eq(requests_read(&fs), 0); /* held: nothing was written */
  ck_assert_int_eq(opd_client_flush(c), 0);
  ck_assert(!opd_client_wants_write(c));
  wait_requests_read(&fs, 8);
  /* a wait writes what is held before it waits */
  opd_client_value arg = opd_cv_int(8);
  opd_future *last;
  ck_assert_int_eq(opd_client_call_async(c, "test::echo", &arg, 1, record_order, &log, &last), 0);
  ck_assert_int_eq(opd_future_wait(last), 0);
  for (int i = 0; i < 8; i++) {
    ck_assert(opd_future_done(f[i]));
    size_t n;
    const opd_client_value *v = opd_future_results(f[i], &n);
    ck_assert(n == 1 && v[0].kind == OPD_CV_INT && v[0].u.i == i);
    opd_future_free(f[i]);
  }
  opd_future_free(last);
  ck_assert_int_eq(log.count, 9);
  for (int i = 0; i < 9; i++) ck_assert_int_eq(log.seen[i], i);
  /* a synchronous request writes the held ones first, in order */
  for (int i = 0; i < 3; i++) {
    opd_client_value a = opd_cv_int(100 + i);
    ck_assert_int_eq(opd_client_call_async(c, "test::echo", &a, 1, NULL, NULL, NULL), 0);
  }
  ck_assert_int_eq(opd_client_ping(c, "p", 1), 0);
  ck_assert_int_eq(requests_read(&fs), 13);
  ck_assert_uint_eq(opd_client_pending(c), 0);
  fake_finish(&fs, c);

  /* the byte threshold: a string argument over it is written at once */
  fake_server fs2 = {0};
  opd_client_options o2 = {.write_batch_bytes = 256, .write_batch_us = 60000000};
  c = fake_connect_opts(&fs2, &o2);
  opd_client_value small = opd_cv_int(1);
  ck_assert_int_eq(opd_client_call_async(c, "test::echo", &small, 1, NULL, NULL, NULL), 0);
  nanosleep(&(struct timespec){0, 20000000}, NULL);
  ck_assert_int_eq(requests_read(&fs2), 0);
  char big[300];
  memset(big, 'x', sizeof big - 1);
  big[sizeof big - 1] = 0;
  opd_client_value s = opd_cv_str(big);
  ck_assert_int_eq(opd_client_call_async(c, "test::echo", &s, 1, NULL, NULL, NULL), 0);
  wait_requests_read(&fs2, 2);
  ck_assert_int_eq(opd_client_wait_all(c), 0);
  fake_finish(&fs2, c);

  /* the time bound: a submission after write_batch_us writes the held ones with it */
  fake_server fs3 = {0};
  opd_client_options o3 = {.write_batch_bytes = 1 << 20, .write_batch_us = 1000};
  c = fake_connect_opts(&fs3, &o3);
  ck_assert_int_eq(opd_client_call_async(c, "test::echo", &small, 1, NULL, NULL, NULL), 0);
  nanosleep(&(struct timespec){0, 20000000}, NULL);
  ck_assert_int_eq(requests_read(&fs3), 0);
  ck_assert_int_eq(opd_client_call_async(c, "test::echo", &small, 1, NULL, NULL, NULL), 0);
  wait_requests_read(&fs3, 2);
  ck_assert_int_eq(opd_client_wait_all(c), 0);
  fake_finish(&fs3, c);
}
END_TEST

typedef struct chain_state {
  opd_client *c;
  int remaining;
  int busy_rc;
  int completed;
} chain_state;

static void chain_next(opd_future *f, void *user) {
  chain_state *s = user;
  ck_assert_int_eq(opd_future_status(f), 0);
  s->completed++;
  /* blocking calls on the same client fail here; asynchronous ones are fine */
  s->busy_rc = opd_client_ping(s->c, "x", 1);
  if (--s->remaining > 0) {
    opd_client_value arg = opd_cv_int(s->remaining);
    ck_assert_int_eq(opd_client_call_async(s->c, "test::echo", &arg, 1, chain_next, s, NULL), 0);
  }
}

START_TEST(test_callbacks_chain) {
  fake_server fs = {0};
  opd_client *c = fake_connect(&fs);
  chain_state s = {c, 10, 0, 0};
  opd_client_value arg = opd_cv_int(10);
  ck_assert_int_eq(opd_client_call_async(c, "test::echo", &arg, 1, chain_next, &s, NULL), 0);
  ck_assert_int_eq(opd_client_wait_all(c), 0);
  ck_assert_int_eq(s.completed, 10);
  ck_assert_int_eq(s.busy_rc, OPD_EBUSY);
  /* poll: completes what is there */
  opd_future *f;
  ck_assert_int_eq(opd_client_call_async(c, "test::echo", &arg, 1, NULL, NULL, &f), 0);
  int got = 0;
  while (got == 0) got = opd_client_poll(c, 1000);
  ck_assert_int_eq(got, 1);
  ck_assert(opd_future_done(f));
  ck_assert_int_eq(opd_client_poll(c, 0), 0);
  opd_future_free(f);
  fake_finish(&fs, c);
}
END_TEST

/* [Note: Reused futures]: futures that callbacks submit are taken from those completed
 * before, whatever each held in itself or on the heap: results, operator names and ping
 * payloads of every size, errors, futures the user keeps, and futures freed in callbacks. */
typedef struct reuse_state {
  opd_client *c;
  int next, completed, failures;
  opd_future *kept[8];
  int nkept;
} reuse_state;

#define REUSE_ROUNDS 400
static const char long_op[] = "test::an_operator_name_longer_than_a_future_holds_in_itself";

static void reuse_submit(reuse_state *s, int k);

static void reuse_done(opd_future *f, void *user) {
  reuse_state *s = user;
  int k = s->completed++;
  size_t n = 0;
  const opd_client_value *v = opd_future_results(f, &n);
  switch (k % 5) {
  case 0: /* one result, held in the future */
    if (opd_future_status(f) != 0 || n != 1 || v[0].u.i != k) s->failures++;
    break;
  case 1: /* four results, one a string and one a list: on the heap */
    if (opd_future_status(f) != 0 || n != 4 || v[0].u.i != k || strcmp(v[1].u.s, "abc") != 0 ||
        v[2].len != 3 || v[2].u.ints[2] != k || v[3].u.d != 0.5)
      s->failures++;
    break;
  case 2: /* a ping with a payload longer than the future holds */
  case 3: /* and a short one */
    if (opd_future_status(f) != 0 || n != 0) s->failures++;
    break;
  case 4: /* an error naming an operator too long to hold */
    if (opd_future_status(f) != OPD_ENOENT || !strstr(opd_future_error(f), long_op)) s->failures++;
    break;
  }
  if (s->next < REUSE_ROUNDS) reuse_submit(s, s->next++);
}

static void reuse_submit(reuse_state *s, int k) {
  char payload[100];
  memset(payload, 'a' + k % 26, sizeof payload);
  opd_future *freed_now = NULL, **keep = NULL; /* some the user owns */
  if (k % 14 == 0)
    keep = &freed_now;
  else if (k % 7 == 0 && s->nkept < 8)
    keep = &s->kept[s->nkept++];
  int rc = 0;
  switch (k % 5) {
  case 0: {
    opd_client_value a = opd_cv_int(k);
    rc = opd_client_call_async(s->c, "test::echo", &a, 1, reuse_done, s, keep);
    break;
  }
  case 1: {
    int64_t ints[3] = {1, 2, k};
    opd_client_value a[4] = {opd_cv_int(k), opd_cv_str("abc"), opd_cv_ints(ints, 3),
                             opd_cv_double(0.5)};
    rc = opd_client_call_async(s->c, "test::echo", a, 4, reuse_done, s, keep);
    break;
  }
  case 2: rc = opd_client_ping_async(s->c, payload, sizeof payload, reuse_done, s, keep); break;
  case 3: rc = opd_client_ping_async(s->c, payload, 4, reuse_done, s, keep); break;
  case 4: rc = opd_client_call_async(s->c, long_op, NULL, 0, reuse_done, s, keep); break;
  }
  if (rc != 0) s->failures++;
  /* freed at once (in a callback, which cannot wait for it: freed when it completes) */
  if (freed_now) opd_future_free(freed_now);
}

START_TEST(test_futures_reused) {
  fake_server fs = {0};
  opd_client *c = fake_connect(&fs);
  reuse_state s = {.c = c};
  while (s.next < 16) reuse_submit(&s, s.next++); /* (freeing a kept one runs callbacks) */
  ck_assert_int_eq(opd_client_wait_all(c), 0);
  ck_assert_int_eq(s.completed, REUSE_ROUNDS);
  ck_assert_int_eq(s.failures, 0);
  for (int i = 0; i < s.nkept; i++) {
    ck_assert(opd_future_done(s.kept[i]));
    opd_future_free(s.kept[i]);
  }
  fake_finish(&fs, c);
}
END_TEST

typedef struct thread_arg {
  opd_client *c;
  int base;
  int failures;
} thread_arg;

static void *hammer(void *p) {
  thread_arg *t = p;
  for (int i = 0; i < 100; i++) {
    int64_t want = t->base + i;
    if (i % 3 == 0) {
      opd_future *f;
      opd_client_value arg = opd_cv_int(want);
      if (opd_client_call_async(t->c, "test::echo", &arg, 1, NULL, NULL, &f) != 0) {
        t->failures++;
        continue;
      }
      size_t n;
      const opd_client_value *v;
      if (opd_future_wait(f) != 0 || !(v = opd_future_results(f, &n)) || v[0].u.i != want)
        t->failures++;
      opd_future_free(f);
    } else {
      opd_client_tensor out;
      int64_t shape[] = {1};
      float x = (float)want, y = 0;
      if (opd_client_upload(t->c, OPD_FLOAT32, shape, 1, &x, 4, NULL, &out) != 0 ||
          opd_client_download(t->c, out, &y, 4, NULL) != 0 || y != x ||
          opd_client_release(t->c, &out, 1) != 0)
        t->failures++;
    }
  }
  return NULL;
}

START_TEST(test_threads_share_a_client) {
  fake_server fs = {.max_in_flight = 8};
  opd_client *c = fake_connect(&fs);
  pthread_t th[6];
  thread_arg args[6];
  for (int i = 0; i < 6; i++) {
    args[i] = (thread_arg){c, i * 1000, 0};
    pthread_create(&th[i], NULL, hammer, &args[i]);
  }
  for (int i = 0; i < 6; i++) {
    pthread_join(th[i], NULL);
    ck_assert_int_eq(args[i].failures, 0);
  }
  ck_assert_uint_eq(opd_client_pending(c), 0);
  fake_finish(&fs, c);
}
END_TEST

START_TEST(test_connection_lost) {
  fake_server fs = {0};
  opd_client *c = fake_connect(&fs);
  /* the server's session-level error (id 0), then it closes: pending requests fail */
  opd_future *f1, *f2;
  opd_client_value arg = opd_cv_int(1);
  ck_assert_int_eq(opd_client_call_async(c, "test::close", NULL, 0, NULL, NULL, &f1), 0);
  ck_assert_int_eq(opd_client_call_async(c, "test::echo", &arg, 1, NULL, NULL, &f2), 0);
  ck_assert_int_eq(opd_future_wait(f2), OPD_ERESOURCE);
  ck_assert_int_eq(opd_future_wait(f1), OPD_ERESOURCE);
  ck_assert_str_eq(opd_future_error(f2), "the server closed the session: session limit reached");
  opd_future_free(f1);
  opd_future_free(f2);
  /* and later ones fail at once */
  ck_assert_int_eq(opd_client_ping(c, "x", 1), OPD_ERESOURCE);
  ck_assert_str_eq(opd_client_last_error(), "the server closed the session: session limit reached");
  ck_assert_int_eq(opd_client_wait_all(c), OPD_ERESOURCE);
  fake_finish(&fs, c);
}
END_TEST

START_TEST(test_server_vanishes) {
  int sv[2];
  ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
  fake_server fs = {.max_frame = 1 << 20, .max_in_flight = 8};
  pthread_mutex_init(&fs.mu, NULL);
  fs.fd = sv[1];
  /* answer hello by hand, then close */
  pthread_create(&fs.thread, NULL, fake_main, &fs);
  opd_client *c;
  ck_assert_int_eq(opd_client_connect_fd(sv[0], NULL, &c), 0);
  opd_future *f;
  opd_client_value arg = opd_cv_int(1);
  shutdown(sv[1], SHUT_RDWR);
  pthread_join(fs.thread, NULL);
  pthread_mutex_destroy(&fs.mu);
  int rc = opd_client_call_async(c, "test::echo", &arg, 1, NULL, NULL, &f);
  if (rc == 0) {
    ck_assert_int_eq(opd_future_wait(f), OPD_ESESSION);
    ck_assert_ptr_nonnull(strstr(opd_future_error(f), "session lost: the daemon at (a socket) "
                                                      "closed the connection"));
    opd_future_free(f);
  }
  ck_assert_int_eq(opd_client_ping(c, "x", 1), OPD_ESESSION);
  ck_assert_int_eq(opd_client_poll(c, 0), OPD_ESESSION);
  opd_client_close(c);
}
END_TEST

START_TEST(test_protocol_violations) {
  fake_server fs = {0};
  opd_client_options o = {.max_response_frame_bytes = 1 << 20};
  opd_client *c = fake_connect_opts(&fs, &o);
  opd_future *f;
  ck_assert_int_eq(opd_client_call_async(c, "test::huge_frame", NULL, 0, NULL, NULL, &f), 0);
  ck_assert_int_eq(opd_future_wait(f), OPD_EINTERNAL);
  ck_assert_str_eq(opd_future_error(f),
                   "protocol error: a response frame of 1073741824 bytes (limit 1048576)");
  opd_future_free(f);
  fake_finish(&fs, c);

  fake_server fs2 = {0};
  c = fake_connect(&fs2);
  ck_assert_int_eq(opd_client_call(c, "test::wrong_id", NULL, 0, NULL, 0, NULL), OPD_EINTERNAL);
  ck_assert_ptr_nonnull(strstr(opd_client_last_error(), "a response to no pending request"));
  fake_finish(&fs2, c);

  /* a reply that breaks the protocol fails its own request with the reason, and every
   * other one, pending or later, with the same */
  fake_server fs3 = {0};
  c = fake_connect(&fs3);
  opd_future *bad, *next;
  opd_client_value arg = opd_cv_int(7);
  ck_assert_int_eq(opd_client_call_async(c, "test::no_value", NULL, 0, NULL, NULL, &bad), 0);
  ck_assert_int_eq(opd_client_call_async(c, "test::echo", &arg, 1, NULL, NULL, &next), 0);
  ck_assert_int_eq(opd_future_wait(bad), OPD_EINTERNAL);
  ck_assert_int_eq(opd_future_wait(next), OPD_EINTERNAL);
  char want[96];
  snprintf(want, sizeof want, "protocol error: a call result without a value (request id %llu)",
           (unsigned long long)2); /* ids: hello 1, then this call */
  ck_assert_str_eq(opd_future_error(bad), want);
  ck_assert_str_eq(opd_future_error(next), want);
  ck_assert_ptr_null(opd_future_results(bad, NULL));
  opd_future_free(bad);
  opd_future_free(next);
  ck_assert_int_eq(opd_client_ping(c, "x", 1), OPD_EINTERNAL);
  ck_assert_str_eq(opd_client_last_error(), want);
  fake_finish(&fs3, c);
}
END_TEST

START_TEST(test_close_cancels_pending) {
  fake_server fs = {.hold = 1000};
  opd_client *c = fake_connect(&fs);
  order_log log = {.mu = PTHREAD_MUTEX_INITIALIZER};
  opd_future *f;
  opd_client_value arg = opd_cv_int(5);
  ck_assert_int_eq(opd_client_call_async(c, "test::echo", &arg, 1, NULL, NULL, &f), 0);
  ck_assert_int_eq(opd_client_call_async(c, "test::echo", &arg, 1, record_order, &log, NULL), 0);
  ck_assert_int_eq(opd_future_wait_for(f, 20), OPD_EBUSY);
  ck_assert(!opd_future_done(f));
  fake_finish(&fs, c);
  /* the callback ran for the cancelled fire-and-forget request */
  ck_assert_int_eq(log.count, 1);
  ck_assert_int_eq(log.seen[0], OPD_ECANCELED);
  /* the future outlives the client */
  ck_assert(opd_future_done(f));
  ck_assert_int_eq(opd_future_status(f), OPD_ECANCELED);
  ck_assert_str_eq(opd_future_error(f), "the client was closed");
  opd_future_free(f);
}
END_TEST

/* ---- against the real daemon, in process ---- */

typedef struct inproc_daemon {
  opd_server *srv;
  char url[128];
} inproc_daemon;

static void daemon_start(inproc_daemon *d, const char *listen) {
  opd_server_config cfg;
  opd_server_config_init(&cfg);
  opd_server_config_clear_listen(&cfg);
  ck_assert_int_eq(opd_server_config_add_listen(&cfg, listen), 0);
  cfg.workers = 2;
  cfg.log_level = OPD_LOG_ERROR;
  int rc = opd_server_start(&cfg, &d->srv);
  opd_server_config_destroy(&cfg);
  ck_assert_msg(rc == 0, "opd_server_start: %s", opd_last_error());
  snprintf(d->url, sizeof d->url, "%s", opd_server_listener_url(d->srv, 0));
}

static opd_client *daemon_connect(inproc_daemon *d) {
  opd_client *c;
  int rc = opd_client_connect(d->url, NULL, &c);
  ck_assert_msg(rc == 0, "connect %s: %s", d->url, opd_client_last_error());
  return c;
}

/* [Note: Not an opd daemon]: the daemon's status port answers HTTP, an SSH server a line of
 * text; either is named as what it is, not read as a frame of 1347703880 bytes */
START_TEST(test_not_an_opd_daemon) {
  opd_server_config cfg;
  opd_server_config_init(&cfg);
  opd_server_config_clear_listen(&cfg);
  ck_assert_int_eq(opd_server_config_add_listen(&cfg, "tcp://127.0.0.1:0"), 0);
  ck_assert_int_eq(opd_server_config_set(&cfg, "status", "http://127.0.0.1:0"), 0);
  cfg.workers = 1;
  cfg.log_level = OPD_LOG_ERROR;
  opd_server *srv;
  int rc = opd_server_start(&cfg, &srv);
  opd_server_config_destroy(&cfg);
  ck_assert_msg(rc == 0, "opd_server_start: %s", opd_last_error());
  char url[64], want[160];
  snprintf(url, sizeof url, "tcp://127.0.0.1:%d", opd_server_status_port(srv));
  opd_client *c = (opd_client *)1;
  ck_assert_int_eq(opd_client_connect(url, NULL, &c), OPD_EINVAL);
  ck_assert_ptr_null(c);
  snprintf(want, sizeof want, "the server at %s is not an opd daemon: it answered HTTP", url);
  ck_assert_str_eq(opd_client_last_error(), want);
  /* the RPC port of the same daemon is one */
  ck_assert_int_eq(opd_client_connect(opd_server_listener_url(srv, 0), NULL, &c), 0);
  opd_client_close(c);
  opd_server_stop(srv);

  int sv[2];
  ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
  static const char banner[] = "SSH-2.0-OpenSSH_9.2p1 Debian-2\r\n";
  write_full(sv[1], banner, sizeof banner - 1);
  ck_assert_int_eq(opd_client_connect_fd(sv[0], NULL, &c), OPD_EINVAL);
  ck_assert_str_eq(
      opd_client_last_error(),
      "the server is not an opd daemon: it answered \"SSH-2.0-OpenSSH_9.2p1 Debian-2\"");
  close(sv[1]);
}
END_TEST

START_TEST(test_daemon_round_trip) {
  inproc_daemon d;
  daemon_start(&d, "tcp://127.0.0.1:0");
  opd_client *c = daemon_connect(&d);
  ck_assert_uint_eq(opd_client_server(c)->protocol_version, 1);
  ck_assert_uint_gt(opd_client_server(c)->max_frame_bytes, 0);
  ck_assert_int_eq(opd_client_ping(c, "abc", 3), 0);
  int64_t shape[] = {2, 3};
  float xa[] = {1, 2, 3, 4, 5, 6}, xb[] = {10, 20, 30, 40, 50, 60}, got[6];
  opd_client_tensor a, b, r, t, s;
  ck_assert_int_eq(opd_client_upload(c, OPD_FLOAT32, shape, 2, xa, sizeof xa, NULL, &a), 0);
  ck_assert_int_eq(opd_client_upload(c, OPD_FLOAT32, shape, 2, xb, sizeof xb, NULL, &b), 0);
  ck_assert_int_eq(opd_add(c, a, b, OPD_SCALAR_INT(2), &r), 0);
  opd_client_tensor_info info;
  ck_assert_int_eq(opd_client_download(c, r, got, sizeof got, &info), 0);
  ck_assert(info.dtype == OPD_FLOAT32 && info.ndim == 2 && info.shape[0] == 2 &&
            info.shape[1] == 3);
  for (int i = 0; i < 6; i++) ck_assert(got[i] == xa[i] + 2 * xb[i]);
  /* a view comes back contiguous: a^T is [[1,4],[2,5],[3,6]] */
  ck_assert_int_eq(opd_t(c, a, &t), 0);
  ck_assert_int_eq(opd_client_download(c, t, got, sizeof got, &info), 0);
  ck_assert(info.shape[0] == 3 && info.shape[1] == 2);
  ck_assert(got[0] == 1 && got[1] == 4 && got[2] == 2 && got[5] == 6);
  /* defaults around an explicit argument: slice(ti, dim=1, start=1, end=None, step=1) */
  int64_t ia[] = {1, 2, 3, 4, 5, 6};
  opd_client_tensor ti;
  ck_assert_int_eq(opd_client_upload(c, OPD_INT64, shape, 2, ia, sizeof ia, NULL, &ti), 0);
  ck_assert_int_eq(opd_slice(c, ti, OPD_INT(1), OPD_INT(1), NULL, NULL, &s), 0);
  int64_t cols[4];
  ck_assert_int_eq(opd_client_download(c, s, cols, sizeof cols, &info), 0);
  ck_assert(info.dtype == OPD_INT64 && info.ndim == 2 && info.shape[0] == 2 && info.shape[1] == 2);
  ck_assert(cols[0] == 2 && cols[1] == 3 && cols[2] == 5 && cols[3] == 6);
  /* a factory: int bounds give int64 */
  opd_client_tensor ar;
  ck_assert_int_eq(
      opd_arange_start_step(c, opd_cs_int(0), opd_cs_int(5), NULL, NULL, NULL, NULL, NULL, &ar), 0);
  int64_t seq[5];
  ck_assert_int_eq(opd_client_download(c, ar, seq, sizeof seq, &info), 0);
  ck_assert(info.dtype == OPD_INT64 && info.shape[0] == 5 && seq[0] == 0 && seq[4] == 4);
  /* the boxed call by name */
  opd_client_tensor m;
  size_t nm;
  ck_assert_int_eq(opd_client_call(c, "aten::mul.Tensor",
                                   (opd_client_value[]){opd_cv_tensor(a), opd_cv_tensor(a)}, 2, &m,
                                   1, &nm),
                   0);
  ck_assert_int_eq(opd_client_download(c, m, got, sizeof got, NULL), 0);
  ck_assert(got[5] == 36);
  ck_assert_int_eq(opd_client_release(c, (opd_client_tensor[]){a, b, r, t, s, ti, m, ar}, 8), 0);
  ck_assert_int_eq(opd_client_synchronize(c), 0);
  /* [Note: Raw reads over TCP]: megabytes both ways in reads of 128 KiB, a size that is no
   * multiple of them, two downloads back to back with a ping behind */
  int64_t big_n = (3 << 20) / 4 + 3;
  float *big = malloc((size_t)big_n * 4), *back1 = malloc((size_t)big_n * 4),
        *back2 = malloc((size_t)big_n * 4);
  ck_assert(big && back1 && back2);
  for (int64_t i = 0; i < big_n; i++) big[i] = (float)(i % 1000003);
  opd_client_tensor bt;
  ck_assert_int_eq(opd_client_upload(c, OPD_FLOAT32, &big_n, 1, big, (size_t)big_n * 4, NULL, &bt),
                   0);
  opd_future *d1, *d2, *p;
  ck_assert_int_eq(opd_client_download_async(c, bt, back1, (size_t)big_n * 4, NULL, NULL, &d1), 0);
  ck_assert_int_eq(opd_client_download_async(c, bt, back2, (size_t)big_n * 4, NULL, NULL, &d2), 0);
  ck_assert_int_eq(opd_client_ping_async(c, "after", 5, NULL, NULL, &p), 0);
  ck_assert_int_eq(opd_future_wait(p), 0);
  ck_assert_int_eq(opd_future_wait(d1), 0);
  ck_assert_int_eq(opd_future_wait(d2), 0);
  ck_assert_int_eq(memcmp(big, back1, (size_t)big_n * 4), 0);
  ck_assert_int_eq(memcmp(big, back2, (size_t)big_n * 4), 0);
  opd_future_free(d1);
  opd_future_free(d2);
  opd_future_free(p);
  free(big);
  free(back1);
  free(back2);
  ck_assert_int_eq(opd_client_release(c, &bt, 1), 0);
  opd_client_close(c);
  opd_server_stop(d.srv);
}
END_TEST

/* opd_client_poll with a zero timeout makes progress without blocking: a program that polls
 * from its own event loop completes its requests. */
START_TEST(test_daemon_poll_without_blocking) {
  inproc_daemon d;
  daemon_start(&d, "tcp://127.0.0.1:0");
  opd_client *c = daemon_connect(&d);
  opd_client_tensor a;
  ck_assert_int_eq(
      opd_client_upload(c, OPD_FLOAT32, (int64_t[]){2}, 1, (float[]){1, 2}, 8, NULL, &a), 0);
  opd_future *f;
  ck_assert_int_eq(opd_add_async(c, a, a, NULL, NULL, NULL, &f), 0);
  int polls = 0;
  while (!opd_future_done(f) && polls < 100000) {
    ck_assert_int_ge(opd_client_poll(c, 0), 0);
    polls++;
    nanosleep(&(struct timespec){0, 100000}, NULL);
  }
  ck_assert_msg(opd_future_done(f), "no progress after %d zero-timeout polls", polls);
  ck_assert_int_eq(opd_future_status(f), 0);
  opd_future_free(f);
  opd_client_close(c);
  opd_server_stop(d.srv);
}
END_TEST

/* A dispatch-state change can remove default keys: without BackendSelect in the include set,
 * a factory call has no key to reach its device's kernel through and fails as in PyTorch
 * ("no tensor arguments"); with the defaults back it makes a Meta tensor again. */
START_TEST(test_daemon_dispatch_change_removes_defaults) {
  inproc_daemon d;
  daemon_start(&d, "tcp://127.0.0.1:0");
  opd_client *c = daemon_connect(&d);
  int64_t size[] = {2};
  opd_client_value args[] = {opd_cv_ints(size, 1), opd_cv_none(), opd_cv_none(),
                             opd_cv_device(10 /* meta */, -1)};
  opd_client_tensor t;
  ck_assert_int_eq(opd_client_call(c, "aten::empty.memory_format", args, 4, &t, 1, NULL), 0);
  const char *backend_select[] = {"BackendSelect"};
  opd_client_dispatch_change change = {.remove_include = backend_select, .num_remove_include = 1};
  ck_assert_int_eq(opd_client_change_dispatch_state(c, &change), 0);
  opd_client_tensor u;
  ck_assert_int_eq(opd_client_call(c, "aten::empty.memory_format", args, 4, &u, 1, NULL),
                   OPD_ENOTIMPL);
  ck_assert_ptr_nonnull(strstr(opd_client_last_error(), "no tensor arguments"));
  ck_assert_int_eq(opd_client_set_dispatch_state(c, NULL, 0, NULL, 0), 0);
  ck_assert_int_eq(opd_client_call(c, "aten::empty.memory_format", args, 4, &u, 1, NULL), 0);
  ck_assert_int_eq(opd_client_release(c, (opd_client_tensor[]){t, u}, 2), 0);
  opd_client_close(c);
  opd_server_stop(d.srv);
}
END_TEST

START_TEST(test_daemon_errors) {
  inproc_daemon d;
  daemon_start(&d, "tcp://127.0.0.1:0");
  opd_client *c = daemon_connect(&d);
  opd_client_tensor a, b, r;
  ck_assert_int_eq(
      opd_client_upload(c, OPD_FLOAT32, (int64_t[]){2}, 1, (float[]){1, 2}, 8, NULL, &a), 0);
  ck_assert_int_eq(
      opd_client_upload(c, OPD_FLOAT32, (int64_t[]){3}, 1, (float[]){1, 2, 3}, 12, NULL, &b), 0);
  ck_assert_int_eq(opd_add(c, a, b, NULL, &r), OPD_EINVAL);
  ck_assert_ptr_nonnull(strstr(opd_client_last_error(),
                               "The size of tensor a (2) must match the size of tensor b (3)"));
  ck_assert_int_eq(opd_client_call(c, "aten::no_such_op", NULL, 0, &r, 1, NULL), OPD_ENOENT);
  ck_assert_int_eq(opd_transpose(c, a, 0, 5, &r), OPD_EINDEX);
  ck_assert_ptr_nonnull(strstr(opd_client_last_error(), "Dimension out of range"));
  float buf[2];
  ck_assert_int_eq(opd_client_download(c, 987654, buf, sizeof buf, NULL), OPD_ENOENT);
  ck_assert_int_eq(opd_client_release(c, (opd_client_tensor[]){987654}, 1), OPD_ENOENT);
  /* the session is still usable */
  ck_assert_int_eq(opd_client_download(c, a, buf, sizeof buf, NULL), 0);
  ck_assert(buf[1] == 2);
  opd_client_close(c);
  opd_server_stop(d.srv);
}
END_TEST

static void count_done(opd_future *f, void *user) {
  if (opd_future_status(f) == 0) (*(int *)user)++;
}

START_TEST(test_daemon_pipelining_unix) {
  inproc_daemon d;
  char listen[96];
  snprintf(listen, sizeof listen, "unix:///tmp/opd-test-client-%d.sock", (int)getpid());
  daemon_start(&d, listen);
  ck_assert_str_eq(d.url, listen);
  opd_client *c = daemon_connect(&d);
  float one = 1;
  opd_client_tensor x;
  ck_assert_int_eq(opd_client_upload(c, OPD_FLOAT32, NULL, 0, &one, 4, NULL, &x), 0);
  /* 64 chained adds in flight at once: y_i = y_{i-1} + x needs y_{i-1}'s handle, so
   * pipeline independent ones: z_i = x + i * x */
  opd_future *f[64];
  int ok = 0;
  for (int i = 0; i < 64; i++)
    ck_assert_int_eq(opd_add_async(c, x, x, OPD_SCALAR_INT(i), count_done, &ok, &f[i]), 0);
  ck_assert_int_eq(opd_client_wait_all(c), 0);
  ck_assert_int_eq(ok, 64);
  for (int i = 0; i < 64; i++) {
    float v = 0;
    ck_assert_int_eq(opd_future_status(f[i]), 0);
    ck_assert_int_eq(opd_client_download(c, opd_future_tensor(f[i], 0), &v, 4, NULL), 0);
    ck_assert(v == 1 + (float)i);
    opd_client_tensor h = opd_future_tensor(f[i], 0);
    ck_assert_int_eq(opd_client_release_async(c, &h, 1, NULL, NULL, NULL), 0);
    opd_future_free(f[i]);
  }
  ck_assert_int_eq(opd_client_wait_all(c), 0);
  opd_client_close(c);
  opd_server_stop(d.srv);
}
END_TEST

/* One thread drives several clients through their descriptors (opd_client_fd), as an
 * application with its own event loop does: poll() on them (for writing too while
 * opd_client_wants_write), then opd_client_poll(c, 0) on the ready ones; pipelined pings
 * of 64 KiB (4 MiB a client: more than a socket usually takes at once) complete in order
 * on every client. */
enum { LOOP_CLIENTS = 3, LOOP_PINGS = 64 };
typedef struct loop_log {
  int order[LOOP_PINGS], status[LOOP_PINGS], n;
} loop_log;
typedef struct loop_slot {
  loop_log *log;
  int seq;
} loop_slot;

static void loop_ping_done(opd_future *f, void *user) {
  loop_slot *s = user;
  s->log->status[s->seq] = opd_future_status(f);
  s->log->order[s->log->n++] = s->seq;
}

START_TEST(test_daemon_own_event_loop) {
  enum { NCLIENTS = LOOP_CLIENTS, NPINGS = LOOP_PINGS, PAYLOAD = 65536 };
  inproc_daemon d;
  daemon_start(&d, "tcp://127.0.0.1:0");
  opd_client *cs[NCLIENTS];
  loop_log logs[NCLIENTS];
  static loop_slot slots[NCLIENTS][NPINGS];
  static char payload[PAYLOAD];
  memset(payload, 'p', sizeof payload);
  for (int k = 0; k < NCLIENTS; k++) {
    cs[k] = daemon_connect(&d);
    logs[k] = (loop_log){0};
    ck_assert_int_ge(opd_client_fd(cs[k]), 0);
    ck_assert(!opd_client_wants_write(cs[k]));
    for (int i = 0; i < NPINGS; i++) {
      slots[k][i] = (loop_slot){&logs[k], i};
      ck_assert_int_eq(
          opd_client_ping_async(cs[k], payload, sizeof payload, loop_ping_done, &slots[k][i], NULL),
          0);
    }
  }
  for (int round = 0; round < 100000; round++) {
    struct pollfd pf[NCLIENTS];
    size_t pending = 0;
    for (int k = 0; k < NCLIENTS; k++) {
      pending += opd_client_pending(cs[k]);
      bool w = opd_client_wants_write(cs[k]);
      pf[k] = (struct pollfd){opd_client_fd(cs[k]), (short)(POLLIN | (w ? POLLOUT : 0)), 0};
    }
    if (!pending) break;
    ck_assert_int_ge(poll(pf, NCLIENTS, 5000), 1); /* something is always ready */
    for (int k = 0; k < NCLIENTS; k++)
      if (pf[k].revents) ck_assert_int_ge(opd_client_poll(cs[k], 0), 0);
  }
  for (int k = 0; k < NCLIENTS; k++) {
    ck_assert_uint_eq(opd_client_pending(cs[k]), 0);
    ck_assert_int_eq(logs[k].n, NPINGS);
    for (int i = 0; i < NPINGS; i++) {
      ck_assert_int_eq(logs[k].order[i], i);
      ck_assert_int_eq(logs[k].status[i], 0);
    }
    opd_client_close(cs[k]);
  }
  opd_server_stop(d.srv);
}
END_TEST

Suite *opd_test_client_suite(void) {
  Suite *s = suite_create("client");
  TCase *urls = tcase_create("connect");
  tcase_set_timeout(urls, 30); /* name resolution may be slow where there is no DNS */
  tcase_add_test(urls, test_url_errors);
  tcase_add_test(urls, test_connect_failures);
  tcase_add_test(urls, test_hello_refused);
  tcase_add_test(urls, test_hello_timeout);
  suite_add_tcase(s, urls);
  TCase *fake = tcase_create("fake_server");
  tcase_set_timeout(fake, 60);
  tcase_add_test(fake, test_server_info_and_ping);
  tcase_add_test(fake, test_upload_add_download);
  tcase_add_test(fake, test_download_alloc_grows_with_the_bytes);
  tcase_add_test(fake, test_upload_errors);
  tcase_add_test(fake, test_download_errors);
  tcase_add_test(fake, test_large_transfers);
  tcase_add_test(fake, test_boxed_values_round_trip);
  tcase_add_test(fake, test_bad_arguments_rejected_locally);
  tcase_add_test(fake, test_typed_calls_encode_defaults);
  tcase_add_test(fake, test_server_errors_map);
  tcase_add_test(fake, test_dispatch_state);
  tcase_add_test(fake, test_pipelining_64_deep);
  tcase_add_test(fake, test_replies_batched_in_order);
  tcase_add_test(fake, test_poll_counts_completions);
  tcase_add_test(fake, test_wait_all_waits_for_batched_callbacks);
  tcase_add_test(fake, test_in_flight_limit);
  tcase_add_test(fake, test_batched_writes);
  tcase_add_test(fake, test_callbacks_chain);
  tcase_add_test(fake, test_futures_reused);
  tcase_add_test(fake, test_threads_share_a_client);
  tcase_add_test(fake, test_connection_lost);
  tcase_add_test(fake, test_server_vanishes);
  tcase_add_test(fake, test_protocol_violations);
  tcase_add_test(fake, test_close_cancels_pending);
  suite_add_tcase(s, fake);
  TCase *real = tcase_create("inproc_daemon");
  tcase_set_timeout(real, 60);
  tcase_add_test(real, test_daemon_round_trip);
  tcase_add_test(real, test_not_an_opd_daemon);
  tcase_add_test(real, test_daemon_errors);
  tcase_add_test(real, test_daemon_poll_without_blocking);
  tcase_add_test(real, test_daemon_dispatch_change_removes_defaults);
  tcase_add_test(real, test_daemon_pipelining_unix);
  tcase_add_test(real, test_daemon_own_event_loop);
  suite_add_tcase(s, real);
  return s;
}

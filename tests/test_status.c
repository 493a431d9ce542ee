/* test_status.c: the HTTP status endpoint (docs/STATUS.md), against an in-process server
 * with the endpoint on port 0: every endpoint over a raw socket, its JSON checked against
 * what the dispatcher itself says; 404, 405, 400, 431; /metrics, /v1/sessions and
 * /v1/memory seeing a call made over the client RPC. */
#include <check.h>
#include <stdbool.h>
#include <jansson.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "opd/client.h"
#include "opd/dispatcher.h"
#include "opd/error.h"
#include "opd/introspect.h"
#include "opd/server.h"
#include "opd/tensor.h"

static opd_server *start_status_server(const char *status) {
  opd_server_config cfg;
  opd_server_config_init(&cfg);
  opd_server_config_clear_listen(&cfg);
  ck_assert_int_eq(opd_server_config_add_listen(&cfg, "tcp://127.0.0.1:0"), 0);
  ck_assert_int_eq(opd_server_config_set(&cfg, "status", status), 0);
  cfg.workers = 2;
  cfg.log_level = OPD_LOG_ERROR;
  opd_server *s = NULL;
  int rc = opd_server_start(&cfg, &s);
  opd_server_config_destroy(&cfg);
  ck_assert_msg(rc == 0, "server start: %s", opd_last_error());
  return s;
}

static opd_server *start_server(void) {
  opd_server *s = start_status_server("127.0.0.1:0");
  ck_assert_int_gt(opd_server_status_port(s), 0);
  return s;
}

typedef struct http_reply {
  int code;
  char *head; /* status line and headers */
  char *body;
  size_t body_len;
} http_reply;

static void reply_free(http_reply *r) {
  free(r->head);
  r->head = r->body = NULL;
}

/* Sends `request` as is and reads until the server closes. */
static http_reply http_raw(int port, const char *request, size_t len) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  ck_assert_int_ge(fd, 0);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ck_assert_int_eq(connect(fd, (struct sockaddr *)&a, sizeof a), 0);
  struct timeval tv = {10, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  for (size_t off = 0; off < len;) {
    ssize_t n = send(fd, request + off, len - off, MSG_NOSIGNAL);
    if (n <= 0) break; /* the server may answer and close before reading everything */
    off += (size_t)n;
  }
  size_t cap = 1 << 16, got = 0;
  char *buf = malloc(cap + 1);
  ck_assert_ptr_nonnull(buf);
  for (;;) {
    if (got == cap) {
      cap *= 2;
      buf = realloc(buf, cap + 1);
      ck_assert_ptr_nonnull(buf);
    }
    ssize_t n = recv(fd, buf + got, cap - got, 0);
    if (n <= 0) break;
    got += (size_t)n;
  }
  close(fd);
  buf[got] = '\0';
  http_reply r = {0};
  char *sep = strstr(buf, "\r\n\r\n");
  ck_assert_msg(sep, "no header end in: %.200s", buf);
  *sep = '\0';
  r.head = buf;
  r.body = sep + 4;
  r.body_len = got - (size_t)(r.body - buf);
  ck_assert_int_eq(sscanf(buf, "HTTP/1.1 %d", &r.code), 1);
  return r;
}

static http_reply http_get(opd_server *s, const char *path) {
  char req[4096];
  int n = snprintf(req, sizeof req, "GET %s HTTP/1.1\r\nHost: localhost\r\n\r\n", path);
  ck_assert(n > 0 && (size_t)n < sizeof req);
  return http_raw(opd_server_status_port(s), req, (size_t)n);
}

/* GETs path, expects `code` and a JSON body; returns it (a new reference). */
static json_t *get_json(opd_server *s, const char *path, int code) {
  http_reply r = http_get(s, path);
  ck_assert_msg(r.code == code, "%s: HTTP %d, expected %d: %s", path, r.code, code, r.body);
  ck_assert_msg(strstr(r.head, "Content-Type: application/json"), "%s: %s", path, r.head);
  json_error_t err;
  json_t *j = json_loadb(r.body, r.body_len, 0, &err);
  ck_assert_msg(j, "%s: bad JSON (%s): %s", path, err.text, r.body);
  reply_free(&r);
  return j;
}

static const char *jstr(json_t *o, const char *key) {
  const char *s = json_string_value(json_object_get(o, key));
  ck_assert_msg(s, "no string '%s'", key);
  return s;
}

static json_t *find_by(json_t *array, const char *field, const char *value) {
  size_t i;
  json_t *e;
  json_array_foreach(array, i, e) {
    const char *v = json_string_value(json_object_get(e, field));
    if (v && strcmp(v, value) == 0) return e;
  }
  return NULL;
}

static bool has_str(json_t *array, const char *value) {
  size_t i;
  json_t *e;
  json_array_foreach(array, i, e) {
    if (json_is_string(e) && strcmp(json_string_value(e), value) == 0) return true;
  }
  return false;
}

START_TEST(test_health_info) {
  opd_server *s = start_server();
  json_t *j = get_json(s, "/v1/health", 200);
  ck_assert_str_eq(jstr(j, "status"), "ok");
  json_decref(j);
  j = get_json(s, "/v1/info", 200);
  ck_assert(strlen(jstr(j, "version")) > 0);
  json_t *backends = json_object_get(j, "backends");
  ck_assert_str_eq(json_string_value(json_array_get(backends, 0)), "CPU");
  ck_assert_str_eq(json_string_value(json_array_get(backends, 1)), "Meta");
  json_t *cpu = find_by(json_object_get(j, "devices"), "type", "cpu");
  ck_assert_ptr_nonnull(cpu);
  ck_assert_int_eq(json_integer_value(json_object_get(cpu, "workers")), 2);
  ck_assert(json_is_number(json_object_get(j, "uptime_s")));
  ck_assert(json_number_value(json_object_get(j, "uptime_s")) >= 0);
  ck_assert_str_eq(json_string_value(json_array_get(json_object_get(j, "listen"), 0)),
                   opd_server_listener_url(s, 0));
  json_decref(j);
  opd_server_stop(s);
}
END_TEST

START_TEST(test_keys) {
  opd_server *s = start_server();
  json_t *j = get_json(s, "/v1/keys", 200);
  ck_assert_int_eq(json_integer_value(json_object_get(j, "num_slots")), 106);
  json_t *slots = json_object_get(j, "slots");
  ck_assert_int_eq(json_array_size(slots), 106);
  ck_assert_str_eq(json_string_value(json_array_get(slots, 0)), "Undefined");
  /* slot 1 is Dense's first backend: CPU */
  ck_assert_str_eq(json_string_value(json_array_get(slots, 1)), "CPU");
  json_t *keys = json_object_get(j, "keys");
  json_t *k = find_by(keys, "name", "CPU");
  ck_assert_str_eq(jstr(k, "category"), "per_backend_runtime");
  ck_assert_str_eq(jstr(k, "functionality"), "Dense");
  ck_assert_str_eq(jstr(k, "backend"), "CPU");
  ck_assert_int_eq(json_integer_value(json_object_get(k, "slot")), 1);
  ck_assert_int_eq(json_integer_value(json_object_get(k, "value")), 43);
  /* CPU = backend bit 0 + Dense, the first functionality bit (14) */
  json_t *bits = json_object_get(k, "bits");
  ck_assert_int_eq(json_array_size(bits), 2);
  ck_assert_int_eq(json_integer_value(json_array_get(bits, 0)), 0);
  ck_assert_int_eq(json_integer_value(json_array_get(bits, 1)), 14);
  k = find_by(keys, "name", "Dense");
  ck_assert_str_eq(jstr(k, "category"), "per_backend_functionality");
  ck_assert(json_is_null(json_object_get(k, "slot")));
  ck_assert_str_eq(jstr(find_by(keys, "name", "FPGA"), "category"), "non_customizable_backend");
  ck_assert_str_eq(jstr(find_by(keys, "name", "BackendSelect"), "category"),
                   "non_customizable_functionality");
  k = find_by(keys, "name", "AutogradCPU");
  ck_assert_int_eq(json_integer_value(json_object_get(k, "slot")),
                   opd_key_slot(OPD_KEY_AutogradCPU));
  k = find_by(keys, "name", "CompositeImplicitAutograd");
  ck_assert_str_eq(jstr(k, "category"), "alias");
  ck_assert(json_is_null(json_object_get(k, "slot")));
  ck_assert(has_str(json_object_get(k, "covers"), "CPU"));
  ck_assert(has_str(json_object_get(k, "covers"), "AutogradCPU"));
  ck_assert_int_eq(json_array_size(json_object_get(j, "backends")), 14);
  ck_assert_str_eq(jstr(json_array_get(json_object_get(j, "backends"), 10), "name"), "Meta");
  json_decref(j);
  opd_server_stop(s);
}
END_TEST

static const char *slot_source(json_t *op, const char *key) {
  json_t *e = json_object_get(json_object_get(op, "table"), key);
  ck_assert_msg(e, "no table entry for %s", key);
  return jstr(e, "source");
}

START_TEST(test_ops) {
  opd_server *s = start_server();
  json_t *j = get_json(s, "/v1/ops", 200);
  json_t *add = find_by(json_object_get(j, "ops"), "name", "aten::add.Tensor");
  ck_assert_ptr_nonnull(add);
  ck_assert_str_eq(jstr(add, "schema"),
                   "aten::add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor");
  ck_assert_int_eq(json_integer_value(json_object_get(j, "count")),
                   json_array_size(json_object_get(j, "ops")));
  json_decref(j);

  /* the name percent-encoded, as a browser sends it */
  j = get_json(s, "/v1/ops/aten%3A%3Aadd.Tensor", 200);
  ck_assert_str_eq(jstr(j, "name"), "aten::add.Tensor");
  ck_assert_int_eq(json_object_size(json_object_get(j, "table")), 106);
  ck_assert_str_eq(slot_source(j, "CPU"), "CPU");
  ck_assert_str_eq(slot_source(j, "Meta"), "Meta");
#ifdef OPD_HAVE_CUDA /* the CUDA backend registers its kernels even without a device */
  ck_assert_str_eq(slot_source(j, "CUDA"), "CUDA");
#else
  ck_assert_str_eq(slot_source(j, "CUDA"), "missing");
#endif
  ck_assert_str_eq(slot_source(j, "BackendSelect"), "fallthrough");
  ck_assert_str_eq(jstr(json_object_get(json_object_get(j, "table"), "BackendSelect"), "scope"),
                   "global");
  /* AutogradCPU: whatever the dispatcher says (opd registers the Autograd pass-through) */
  json_t *want = opd_op_slot_json(opd_find_op("aten::add.Tensor"), OPD_KEY_AutogradCPU);
  ck_assert_str_eq(slot_source(j, "AutogradCPU"), jstr(want, "source"));
  ck_assert_str_eq(jstr(want, "source"), "Autograd");
  json_decref(want);
  json_t *cpu_reg = find_by(json_object_get(j, "registrations"), "key", "CPU");
  ck_assert_ptr_nonnull(cpu_reg);
  ck_assert_str_eq(jstr(cpu_reg, "kind"), "impl");
  ck_assert(json_is_true(json_object_get(cpu_reg, "unboxed")));
  ck_assert_str_eq(jstr(json_object_get(cpu_reg, "provenance"), "origin"), "builtin");
  json_decref(j);

  j = get_json(s, "/v1/ops/aten::matmul", 200);
  ck_assert_str_eq(slot_source(j, "CPU"), "CompositeImplicitAutograd");
  ck_assert_str_eq(slot_source(j, "AutogradCPU"), "CompositeImplicitAutograd");
  ck_assert_str_eq(slot_source(j, "Meta"), "CompositeImplicitAutograd");
  json_decref(j);

  j = get_json(s, "/v1/ops/aten::no_such_op", 404);
  ck_assert_int_eq(json_integer_value(json_object_get(json_object_get(j, "error"), "code")), 404);
  json_decref(j);
  opd_server_stop(s);
}
END_TEST

START_TEST(test_dispatch) {
  opd_server *s = start_server();
  const opd_operator *op = opd_find_op("aten::add.Tensor");
  json_t *j = get_json(s, "/v1/ops/aten::add.Tensor/dispatch?keys=CPU,AutogradCPU", 200);
  opd_keyset args =
      opd_keyset_union(opd_keyset_of(OPD_KEY_CPU), opd_keyset_of(OPD_KEY_AutogradCPU));
  opd_dispatch_key want = opd_keyset_highest_key(opd_call_keyset(op, args));
  ck_assert_str_eq(jstr(j, "key"), opd_key_name(want));
  ck_assert_str_eq(jstr(j, "key"), "AutogradCPU");
  ck_assert_str_eq(jstr(json_object_get(j, "entry"), "source"), "Autograd");
  json_decref(j);
  /* excluding autograd reaches the CPU kernel */
  j = get_json(
      s, "/v1/ops/aten%3A%3Aadd.Tensor/dispatch?keys=CPU%2CAutogradCPU&exclude=AutogradCPU", 200);
  ck_assert_str_eq(jstr(j, "key"), "CPU");
  ck_assert_str_eq(jstr(j, "kernel"), opd_op_lookup(op, opd_keyset_of(OPD_KEY_CPU))->name);
  ck_assert(has_str(json_object_get(j, "exclude"), "AutogradCPU"));
  ck_assert(has_str(json_object_get(j, "exclude"), "AutocastCPU"));
  json_decref(j);
  j = get_json(s, "/v1/ops/aten::add.Tensor/dispatch?keys=Meta", 200);
  ck_assert_str_eq(jstr(j, "key"), "Meta");
  ck_assert_str_eq(jstr(json_object_get(j, "entry"), "source"), "Meta");
  json_decref(j);
  j = get_json(s, "/v1/ops/aten::add.Tensor/dispatch?keys=CPU,NoSuchKey", 400);
  ck_assert_ptr_nonnull(strstr(jstr(json_object_get(j, "error"), "message"), "NoSuchKey"));
  json_decref(j);
  j = get_json(s, "/v1/ops/aten::add.Tensor/dispatch?keys=Autograd", 400);
  json_decref(j);
  opd_server_stop(s);
}
END_TEST

START_TEST(test_fallbacks_memory) {
  opd_server *s = start_server();
  json_t *j = get_json(s, "/v1/fallbacks", 200);
  json_t *f = json_object_get(j, "fallbacks");
  json_t *bs = find_by(f, "key", "BackendSelect");
  ck_assert_ptr_nonnull(bs);
  ck_assert_str_eq(jstr(bs, "source"), "fallthrough");
  ck_assert_str_eq(jstr(bs, "scope"), "global");
  json_t *tracer = find_by(f, "key", "Tracer");
  ck_assert_ptr_nonnull(tracer);
  ck_assert_str_eq(jstr(tracer, "source"), "fallback");
  ck_assert_ptr_null(find_by(f, "key", "CPU")); /* 1.13 has no CPU fallback */
  json_decref(j);
  j = get_json(s, "/v1/memory", 200);
  json_t *cpu = find_by(json_object_get(j, "devices"), "device", "cpu");
  ck_assert_ptr_nonnull(cpu);
  ck_assert(json_is_integer(json_object_get(cpu, "in_use")));
  ck_assert(json_integer_value(json_object_get(cpu, "peak")) >=
            json_integer_value(json_object_get(cpu, "in_use")));
  ck_assert(json_is_integer(json_object_get(cpu, "limit")));
  /* the 1-element tensors the server holds live in the tensor slab's pages */
  ck_assert_int_eq(json_integer_value(json_object_get(j, "tensor_slab_bytes")),
                   (json_int_t)opd_tensor_slab_bytes());
  json_decref(j);
  opd_server_stop(s);
}
END_TEST

START_TEST(test_http_errors) {
  opd_server *s = start_server();
  int port = opd_server_status_port(s);
  json_t *j = get_json(s, "/v1/nothing", 404);
  ck_assert_int_eq(json_integer_value(json_object_get(json_object_get(j, "error"), "code")), 404);
  json_decref(j);
  static const char post[] = "POST /v1/health HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n";
  http_reply r = http_raw(port, post, sizeof post - 1);
  ck_assert_int_eq(r.code, 405);
  ck_assert_ptr_nonnull(strstr(r.head, "Allow: GET"));
  ck_assert_ptr_nonnull(strstr(r.body, "\"code\":405"));
  reply_free(&r);
  static const char garbage[] = "NOT HTTP AT ALL\r\n\r\n";
  r = http_raw(port, garbage, sizeof garbage - 1);
  ck_assert_int_eq(r.code, 400);
  reply_free(&r);
  /* a header past the 8 KiB limit */
  size_t n = 20000;
  char *big = malloc(n + 100);
  ck_assert_ptr_nonnull(big);
  int off = sprintf(big, "GET /v1/health HTTP/1.1\r\nX-Big: ");
  memset(big + off, 'a', n);
  strcpy(big + off + n, "\r\n\r\n");
  r = http_raw(port, big, strlen(big));
  ck_assert_int_eq(r.code, 431);
  reply_free(&r);
  free(big);
  /* bad percent-encoding */
  j = get_json(s, "/v1/ops/aten%3", 400);
  json_decref(j);
  /* the server still answers */
  j = get_json(s, "/v1/health", 200);
  json_decref(j);
  opd_server_stop(s);
}
END_TEST

static uint64_t metric(const char *text, const char *series) {
  const char *p = text;
  size_t len = strlen(series);
  while ((p = strstr(p, series))) {
    if ((p == text || p[-1] == '\n') && p[len] == ' ') return strtoull(p + len + 1, NULL, 10);
    p += len;
  }
  return 0;
}

/* The exposition format's grouping rule: each family's samples are contiguous, after its
 * TYPE line, and every sample line is NAME{LABELS} VALUE. */
static void check_prometheus_text(const char *text) {
  char families[128][64];
  size_t nfam = 0;
  char current[64] = "";
  for (const char *line = text; *line;) {
    const char *eol = strchr(line, '\n');
    ck_assert_msg(eol, "unterminated last line");
    char buf[1024];
    size_t len = (size_t)(eol - line);
    ck_assert_uint_lt(len, sizeof buf);
    memcpy(buf, line, len);
    buf[len] = '\0';
    line = eol + 1;
    if (strncmp(buf, "# TYPE ", 7) == 0) {
      char name[64];
      ck_assert_int_eq(sscanf(buf + 7, "%63s", name), 1);
      for (size_t i = 0; i < nfam; i++)
        ck_assert_msg(strcmp(families[i], name) != 0, "%s twice", name);
      ck_assert_uint_lt(nfam, 128);
      strcpy(families[nfam++], name);
      strcpy(current, name);
      continue;
    }
    if (buf[0] == '#') continue;
    size_t n = strspn(buf, "abcdefghijklmnopqrstuvwxyz_");
    ck_assert_msg(strncmp(buf, current, strlen(current)) == 0 && *current,
                  "sample '%s' outside its family (%s)", buf, current);
    const char *rest = buf + n;
    if (*rest == '{') {
      rest = strchr(rest, '}');
      ck_assert_msg(rest, "unclosed labels: %s", buf);
      rest++;
    }
    ck_assert_msg(*rest == ' ', "bad sample line: %s", buf);
    char *end;
    strtod(rest + 1, &end);
    ck_assert_msg(end != rest + 1 && *end == '\0', "bad value: %s", buf);
  }
}

START_TEST(test_metrics_sessions_count_a_call) {
  opd_server *s = start_server();
  http_reply r = http_get(s, "/metrics");
  ck_assert_int_eq(r.code, 200);
  ck_assert_ptr_nonnull(strstr(r.head, "Content-Type: text/plain; version=0.0.4"));
  ck_assert_ptr_nonnull(strstr(r.body, "# TYPE opd_call_duration_seconds histogram"));
  /* a CPU tensor's calls reach the key the dispatcher picks for its key set (AutogradCPU:
   * tensors carry the autograd key, as in PyTorch) */
  opd_dispatch_key key = opd_keyset_highest_key(
      opd_call_keyset(opd_find_op("aten::add.Tensor"), opd_tensor_keyset_for(OPD_KEY_CPU)));
  ck_assert_str_eq(opd_key_name(key), "AutogradCPU");
  char calls[128];
  snprintf(calls, sizeof calls, "opd_calls_total{op=\"aten::add.Tensor\",key=\"%s\"}",
           opd_key_name(key));
  const char *count = "opd_call_duration_seconds_count{op=\"aten::add.Tensor\"}";
  uint64_t calls0 = metric(r.body, calls), count0 = metric(r.body, count);
  ck_assert_uint_eq(metric(r.body, "opd_sessions"), 0);
  ck_assert_uint_gt(metric(r.body, "opd_registrations{kind=\"impl\"}"), 0);
  reply_free(&r);

  opd_client *c = NULL;
  ck_assert_int_eq(opd_client_connect(opd_server_listener_url(s, 0), NULL, &c), 0);
  int64_t shape[] = {2, 2};
  float xa[] = {1, 2, 3, 4}, xb[] = {10, 20, 30, 40};
  opd_client_tensor a, b, out;
  ck_assert_int_eq(opd_client_upload(c, OPD_FLOAT32, shape, 2, xa, sizeof xa, NULL, &a), 0);
  ck_assert_int_eq(opd_client_upload(c, OPD_FLOAT32, shape, 2, xb, sizeof xb, NULL, &b), 0);
  opd_client_value args[] = {opd_cv_tensor(a), opd_cv_tensor(b)};
  ck_assert_int_eq(opd_client_call(c, "aten::add.Tensor", args, 2, &out, 1, NULL), 0);
  /* a failing call: shapes that do not broadcast */
  int64_t shape3[] = {3};
  float xc[] = {1, 2, 3};
  opd_client_tensor t3, bad;
  ck_assert_int_eq(opd_client_upload(c, OPD_FLOAT32, shape3, 1, xc, sizeof xc, NULL, &t3), 0);
  opd_client_value bad_args[] = {opd_cv_tensor(a), opd_cv_tensor(t3)};
  ck_assert_int_lt(opd_client_call(c, "aten::add.Tensor", bad_args, 2, &bad, 1, NULL), 0);

  /* an unknown operator fails before any dispatch: a NOT_FOUND response */
  ck_assert_int_lt(opd_client_call(c, "aten::no_such_op", NULL, 0, &bad, 1, NULL), 0);

  r = http_get(s, "/metrics");
  ck_assert_int_eq(r.code, 200);
  check_prometheus_text(r.body);
  ck_assert_uint_eq(metric(r.body, calls), calls0 + 2);
  char errs_by_key[128];
  snprintf(errs_by_key, sizeof errs_by_key,
           "opd_call_errors_by_key_total{op=\"aten::add.Tensor\",key=\"%s\"}", opd_key_name(key));
  ck_assert_uint_eq(metric(r.body, errs_by_key), 1);
  ck_assert_uint_ge(metric(r.body, "opd_response_errors_total{code=\"NOT_FOUND\"}"), 1);
  ck_assert_uint_eq(metric(r.body, count), count0 + 2);
  ck_assert_uint_ge(
      metric(r.body, "opd_call_errors_total{op=\"aten::add.Tensor\",code=\"EINVAL\"}") +
          metric(r.body, "opd_call_errors_total{op=\"aten::add.Tensor\",code=\"EINDEX\"}"),
      1);
  ck_assert_uint_eq(metric(r.body, "opd_sessions"), 1);
  ck_assert_uint_eq(metric(r.body, "opd_handles"), 4);
  ck_assert_uint_ge(metric(r.body, "opd_memory_bytes_in_use{device=\"cpu\"}"), 3 * 16 + 12);
  reply_free(&r);

  json_t *j = get_json(s, "/v1/sessions", 200);
  ck_assert_int_eq(json_integer_value(json_object_get(j, "count")), 1);
  json_t *sess = json_array_get(json_object_get(j, "sessions"), 0);
  ck_assert_int_eq(json_integer_value(json_object_get(sess, "calls")), 2);
  ck_assert_int_eq(json_integer_value(json_object_get(sess, "errors")), 2);
  ck_assert_int_eq(json_integer_value(json_object_get(sess, "handles")), 4);
  ck_assert_int_eq(json_integer_value(json_object_get(sess, "bytes_held")), 3 * 16 + 12);
  ck_assert_ptr_nonnull(strstr(jstr(sess, "peer"), "127.0.0.1:"));
  ck_assert_str_eq(json_string_value(json_array_get(json_object_get(sess, "include"), 0)),
                   "BackendSelect");
  ck_assert_str_eq(json_string_value(json_array_get(json_object_get(sess, "exclude"), 0)),
                   "AutocastCPU");
  json_decref(j);
  /* a changed dispatch state shows */
  const char *inc[] = {"Tracer"};
  ck_assert_int_eq(opd_client_set_dispatch_state(c, inc, 1, NULL, 0), 0);
  j = get_json(s, "/v1/sessions", 200);
  sess = json_array_get(json_object_get(j, "sessions"), 0);
  ck_assert(has_str(json_object_get(sess, "include"), "Tracer"));
  json_decref(j);
  opd_client_close(c);
  opd_server_stop(s);
}
END_TEST

START_TEST(test_page_and_disabled) {
  opd_server *s = start_server();
  http_reply r = http_get(s, "/");
  ck_assert_int_eq(r.code, 200);
  ck_assert_ptr_nonnull(strstr(r.head, "Content-Type: text/html"));
  ck_assert_ptr_nonnull(strstr(r.body, "/v1/ops/"));
  ck_assert_ptr_nonnull(strstr(r.body, "id=\"grid\""));
  reply_free(&r);
  opd_server_stop(s);
  s = start_status_server("");
  ck_assert_ptr_null(opd_server_status_address(s));
  ck_assert_int_eq(opd_server_status_port(s), -1);
  opd_server_stop(s);
  opd_server_config cfg;
  opd_server_config_init(&cfg);
  ck_assert_str_eq(cfg.status, "");
  ck_assert_int_eq(opd_server_config_set(&cfg, "status", "not an address"), OPD_EINVAL);
  ck_assert_int_eq(opd_server_config_set(&cfg, "status", "[::1]:7471"), 0);
  ck_assert_str_eq(cfg.status, "[::1]:7471");
  opd_server_config_destroy(&cfg);
}
END_TEST

START_TEST(test_timeout_and_connection_cap) {
  opd_server *s = start_server();
  int port = opd_server_status_port(s);
  /* 64 idle connections are held; the 65th is refused */
  int fds[64];
  for (int i = 0; i < 64; i++) {
    fds[i] = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ck_assert_int_eq(connect(fds[i], (struct sockaddr *)&a, sizeof a), 0);
  }
  static const char get[] = "GET /v1/health HTTP/1.1\r\n\r\n";
  /* the server accepts the 64 first: wait until a 65th is answered 503 */
  http_reply r = http_raw(port, get, sizeof get - 1);
  ck_assert_int_eq(r.code, 503);
  reply_free(&r);
  for (int i = 0; i < 64; i++) close(fds[i]);
  /* the server sees the closes in its own time: wait until it serves again */
  for (int tries = 0;; tries++) {
    r = http_raw(port, get, sizeof get - 1);
    int code = r.code;
    reply_free(&r);
    if (code == 200) break;
    ck_assert_int_eq(code, 503);
    ck_assert_int_lt(tries, 500);
    nanosleep(&(struct timespec){0, 10000000}, NULL);
  }
  /* a request that never ends its headers is answered 408 after 5 s */
  static const char partial[] = "GET /v1/health HTTP/1.1\r\nHost: x\r\n";
  time_t t0 = time(NULL);
  r = http_raw(port, partial, sizeof partial - 1);
  ck_assert_int_eq(r.code, 408);
  ck_assert_int_ge(time(NULL) - t0, 4);
  reply_free(&r);
  opd_server_stop(s);
}
END_TEST

Suite *opd_test_status_suite(void) {
  Suite *s = suite_create("status");
  TCase *tc = tcase_create("status");
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, test_health_info);
  tcase_add_test(tc, test_keys);
  tcase_add_test(tc, test_ops);
  tcase_add_test(tc, test_dispatch);
  tcase_add_test(tc, test_fallbacks_memory);
  tcase_add_test(tc, test_http_errors);
  tcase_add_test(tc, test_metrics_sessions_count_a_call);
  tcase_add_test(tc, test_page_and_disabled);
  tcase_add_test(tc, test_timeout_and_connection_cap);
  suite_add_tcase(s, tc);
  return s;
}

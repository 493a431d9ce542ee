/* test_status.c: the HTTP status endpoint (docs/STATUS.md), against an in-process server
 * with the endpoint on port 0: every endpoint over a raw socket, its JSON checked against
 * what the dispatcher itself says; 404, 405, 400, 431; /metrics, /v1/sessions and
 * /v1/memory seeing a call made over the client RPC. Strings: bad percent-encoding and
 * decoded bytes that are not UTF-8 are 400, long names are cut at characters, bytes from
 * registrations (kernel names, provenance, operator names) are escaped. Idle connections
 * do not lock others out. A stress test reads every endpoint from 4 threads while the CPU
 * kernel of aten::add.Tensor is overridden and removed 500 times (run under ASan). */
#include <check.h>
#include <errno.h>
#include <math.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <jansson.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "opd/client.h"
#include "opd/client_ops.h"
#include "opd/clock.h"
#include "opd/dispatcher.h"
#include "opd/error.h"
#include "opd/graph_exec.h"
#include "opd/introspect.h"
#include "opd/kernels.h"
#include "opd/server.h"
#include "opd/tensor.h"
#include "opd/utf8.h"

#include "metrics.h"
#include "status.h"
#include "test_files.h"

/* A daemon with the status endpoint at `status` and, when graph_cc_dir is not NULL, the C
 * tier of fused programs on: 0 and *out, or opd_server_start's error. */
static int try_start_server(const char *status, const char *graph_cc_dir, opd_server **out) {
  opd_server_config cfg;
  opd_server_config_init(&cfg);
  opd_server_config_clear_listen(&cfg);
  ck_assert_int_eq(opd_server_config_add_listen(&cfg, "tcp://127.0.0.1:0"), 0);
  ck_assert_int_eq(opd_server_config_set(&cfg, "status", status), 0);
  if (graph_cc_dir) { /* the C tier kept on its numerics alone: no decision on timings, which
                       * a loaded machine (CI's sanitizer builds) can turn against the C */
    ck_assert_int_eq(opd_server_config_set(&cfg, "graph_cc_dir", graph_cc_dir), 0);
    ck_assert_int_eq(opd_server_config_set(&cfg, "graph_benefit_runs", "0"), 0);
  }
  cfg.workers = 2;
  cfg.log_level = OPD_LOG_ERROR;
  *out = NULL;
  int rc = opd_server_start(&cfg, out);
  opd_server_config_destroy(&cfg);
  return rc;
}

static opd_server *start_status_server(const char *status) {
  opd_server *s;
  int rc = try_start_server(status, NULL, &s);
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

/* Sends `request` as is and reads until the server closes: NULL and the reply, or what
 * failed (the connection, or an answer that is not an HTTP/1.1 response). No assertions:
 * stress threads call it. The receive timeout only keeps a dead server from hanging it. */
static const char *http_fetch(int port, const char *request, size_t len, http_reply *out) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return "no socket";
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  struct timeval tv = {60, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  if (connect(fd, (struct sockaddr *)&a, sizeof a) != 0) {
    close(fd);
    return "connect failed";
  }
  for (size_t off = 0; off < len;) {
    ssize_t n = send(fd, request + off, len - off, MSG_NOSIGNAL);
    if (n <= 0) break; /* the server may answer and close before reading everything */
    off += (size_t)n;
  }
  size_t cap = 1 << 16, got = 0;
  char *buf = malloc(cap + 1);
  const char *failed = NULL;
  for (ssize_t n = 1; buf && n > 0;) {
    if (got == cap) {
      char *bigger = realloc(buf, 2 * cap + 1);
      if (!bigger) break;
      buf = bigger;
      cap *= 2;
    }
    n = recv(fd, buf + got, cap - got, 0);
    if (n > 0) got += (size_t)n;
    if (n < 0) failed = errno == EAGAIN || errno == EWOULDBLOCK ? "timed out" : "reset";
  }
  close(fd);
  if (!buf) return "out of memory";
  buf[got] = '\0';
  char *sep = strstr(buf, "\r\n\r\n");
  *out = (http_reply){0};
  if (!sep || sscanf(buf, "HTTP/1.1 %d", &out->code) != 1) {
    free(buf);
    return failed ? failed : "no HTTP response";
  }
  *sep = '\0';
  out->head = buf;
  out->body = sep + 4;
  out->body_len = got - (size_t)(out->body - buf);
  return NULL;
}

static http_reply http_raw(int port, const char *request, size_t len) {
  http_reply r;
  const char *failed = http_fetch(port, request, len, &r);
  ck_assert_msg(!failed, "%s: %.200s", failed, request);
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
  ck_assert_msg(opd_utf8_valid(r.body, r.body_len), "%s: the body is not UTF-8", path);
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

/* A client of s (*c) building a graph of one [2, 3] float32 input x and *e = exp(x). */
static opd_graph_builder *exp_graph_builder(opd_server *s, opd_client **c, opd_client_tensor *e) {
  *c = NULL;
  ck_assert_int_eq(opd_client_connect(opd_server_listener_url(s, 0), NULL, c), 0);
  opd_graph_builder *b;
  ck_assert_int_eq(opd_graph_builder_new(*c, &b), 0);
  opd_client_tensor x;
  ck_assert_int_eq(opd_graph_input(b, OPD_FLOAT32, (int64_t[]){2, 3}, 2, NULL, false, &x), 0);
  ck_assert_int_eq(opd_graph_node(b, "aten::exp", (opd_client_value[]){opd_cv_tensor(x)}, 1, e), 0);
  return b;
}

/* GET /v1/graphs and /v1/graphs/{id} after a client defined and ran a graph; /metrics' graph
 * counters. */
START_TEST(test_graphs) {
  opd_server *s = start_server();
  opd_client *c;
  opd_client_tensor e, sum, y;
  opd_graph_builder *b = exp_graph_builder(s, &c, &e);
  ck_assert_int_eq(
      opd_graph_node(b, "aten::sum.dim_IntList",
                     (opd_client_value[]){opd_cv_tensor(e), opd_cv_ints((int64_t[]){-1}, 1),
                                          opd_cv_bool(true)},
                     3, &sum),
      0);
  ck_assert_int_eq(opd_graph_node(b, "aten::div.Tensor",
                                  (opd_client_value[]){opd_cv_tensor(e), opd_cv_tensor(sum)}, 2,
                                  &y),
                   0);
  opd_client_graph g;
  opd_client_graph_info info;
  ck_assert_int_eq(opd_graph_define(b, &y, 1, &g, &info), 0);
  opd_graph_builder_free(b);
  float v[6] = {1, 2, 3, 4, 5, 6};
  opd_client_tensor t, out;
  ck_assert_int_eq(opd_client_upload(c, OPD_FLOAT32, (int64_t[]){2, 3}, 2, v, sizeof v, NULL, &t),
                   0);
  ck_assert_int_eq(opd_graph_run(c, g, &t, 1, &out, 1, NULL), 0);

  json_t *j = get_json(s, "/v1/graphs", 200);
  json_t *graphs = json_object_get(j, "graphs");
  ck_assert_uint_eq(json_array_size(graphs), 1);
  json_t *entry = json_array_get(graphs, 0);
  ck_assert_int_eq(json_integer_value(json_object_get(entry, "id")), (json_int_t)info.compiled);
  ck_assert_str_eq(jstr(entry, "key"), info.key);
  ck_assert_int_eq(json_integer_value(json_object_get(entry, "nodes_before")), 3);
  ck_assert_int_eq(json_integer_value(json_object_get(entry, "runs")), 1);
  ck_assert_int_eq(json_integer_value(json_object_get(j, "misses")), 1);
  ck_assert_int_eq(json_integer_value(json_object_get(j, "defines")), 1);
  ck_assert_int_eq(json_integer_value(json_object_get(j, "runs")), 1);
  ck_assert_uint_eq(json_array_size(json_object_get(j, "disabled_passes")), 0);
  json_decref(j);
  j = get_json(s, "/v1/sessions", 200);
  json_t *session = json_array_get(json_object_get(j, "sessions"), 0);
  ck_assert_int_eq(json_integer_value(json_object_get(session, "graphs")), 1);
  ck_assert_int_eq(json_integer_value(json_object_get(session, "calls")), 1); /* the run */
  json_decref(j);

  char path[64];
  snprintf(path, sizeof path, "/v1/graphs/%llu", (unsigned long long)info.compiled);
  j = get_json(s, path, 200);
  json_t *sm = find_by(json_object_get(j, "passes"), "name", "softmax_pattern");
  ck_assert_ptr_nonnull(sm);
  ck_assert_int_eq(json_integer_value(json_object_get(sm, "hits")), 1);
  ck_assert_ptr_nonnull(strstr(jstr(sm, "ir"), "aten::_softmax"));
  json_decref(j);
  j = get_json(s, "/v1/graphs/999", 404);
  ck_assert_ptr_nonnull(strstr(jstr(json_object_get(j, "error"), "message"), "no graph 999"));
  json_decref(j);
  j = get_json(s, "/v1/graphs/01", 404);
  json_decref(j);
  j = get_json(s, "/v1/graphs/18446744073709551616", 404);
  json_decref(j);

  http_reply r = http_get(s, "/metrics");
  ck_assert_int_eq(r.code, 200);
  ck_assert_ptr_nonnull(strstr(r.body, "\nopd_graph_defines_total 1\n"));
  ck_assert_ptr_nonnull(strstr(r.body, "\nopd_graph_runs_total 1\n"));
  ck_assert_ptr_nonnull(strstr(r.body, "\nopd_graph_cache_misses_total 1\n"));
  /* no fused group disagreed with its nodes run one by one */
  ck_assert_ptr_nonnull(strstr(r.body, "\nopd_graph_numerics_mismatches_total 0\n"));
  ck_assert_ptr_nonnull(strstr(r.body, "\nopd_graph_pass_hits_total{pass=\"softmax_pattern\"} "));
  reply_free(&r);
  opd_client_close(c);
  opd_server_stop(s);
}
END_TEST

/* The value of the first metrics line that starts with `prefix`, or -1. */
static long long metric_value(const char *body, const char *prefix) {
  for (const char *line = body; line && *line;
       line = strchr(line, '\n'), line = line ? line + 1 : NULL)
    if (strncmp(line, prefix, strlen(prefix)) == 0) return atoll(line + strlen(prefix));
  return -1;
}

/* A daemon with the C tier (graph_cc_dir): a graph's fused group runs its compiled C once
 * the tier has loaded it, as /v1/graphs/{id} shows with the source; /v1/graphs shows the
 * tier and /metrics its counters. A directory open to others stops the daemon from
 * starting, with the reason. Needs a C compiler ("cc"): without one, nothing is checked. */
START_TEST(test_graphs_c_tier) {
  if (opd_test_no_compiler("cc", "test_graphs_c_tier")) return;
  char dir[] = "/tmp/opd-status-c-tier-XXXXXX", cache[64];
  ck_assert_ptr_nonnull(mkdtemp(dir));
  ck_assert_int_eq(chmod(dir, 0777), 0);
  opd_server *s;
  ck_assert_int_eq(try_start_server("127.0.0.1:0", dir, &s), OPD_EINVAL);
  ck_assert_msg(strstr(opd_last_error(), "graph_cc_dir"), "%s", opd_last_error());
  ck_assert_int_eq(chmod(dir, 0700), 0);
  snprintf(cache, sizeof cache, "%s/fused", dir); /* created by the daemon */
  ck_assert_msg(try_start_server("127.0.0.1:0", cache, &s) == 0, "%s", opd_last_error());
  opd_client *c;
  opd_client_tensor e, twice, y;
  opd_graph_builder *b = exp_graph_builder(s, &c, &e);
  ck_assert_int_eq(opd_graph_node(b, "aten::mul.Tensor",
                                  (opd_client_value[]){opd_cv_tensor(e), opd_cv_double(2)}, 2,
                                  &twice),
                   0);
  ck_assert_int_eq(
      opd_graph_node(b, "aten::add.Tensor",
                     (opd_client_value[]){opd_cv_tensor(twice), opd_cv_double(1), opd_cv_int(1)}, 3,
                     &y),
      0);
  opd_client_graph g;
  opd_client_graph_info info;
  ck_assert_int_eq(opd_graph_define(b, &y, 1, &g, &info), 0);
  opd_graph_builder_free(b);
  float v[6] = {-1, 0, 0.5f, 1, 2, 3}, got[6];
  opd_client_tensor t, out;
  ck_assert_int_eq(opd_client_upload(c, OPD_FLOAT32, (int64_t[]){2, 3}, 2, v, sizeof v, NULL, &t),
                   0);
  for (int run = 0; run < 8; run++) { /* the first submits; the checks take a few more */
    ck_assert_int_eq(opd_graph_run(c, g, &t, 1, &out, 1, NULL), 0);
    ck_assert_int_eq(opd_client_download(c, out, got, sizeof got, NULL), 0);
    for (int i = 0; i < 6; i++) ck_assert_double_eq_tol(got[i], 2 * exp(v[i]) + 1, 1e-5);
    ck_assert_int_eq(opd_client_release(c, &out, 1), 0);
    if (run == 0) opd_graph_c_tier_drain(); /* the daemon's tier is this process's */
  }
  json_t *j = get_json(s, "/v1/graphs", 200);
  json_t *tier = json_object_get(j, "c_tier");
  ck_assert(json_is_true(json_object_get(tier, "enabled")));
  ck_assert_str_eq(jstr(tier, "dir"), cache);
  ck_assert_int_eq(json_integer_value(json_object_get(tier, "compiles")), 1);
  ck_assert_int_eq(json_integer_value(json_object_get(tier, "failures")), 0);
  ck_assert_ptr_nonnull(strstr(jstr(tier, "compiler"), "-ffp-contract=off"));
  json_decref(j);
  char path[64];
  snprintf(path, sizeof path, "/v1/graphs/%llu", (unsigned long long)info.compiled);
  j = get_json(s, path, 200);
  json_t *group = json_array_get(json_object_get(j, "groups"), 0);
  const char *why = json_string_value(json_object_get(group, "c_why")); /* null: none */
  ck_assert_msg(strcmp(jstr(group, "tier"), "c") == 0, "tier %s: %s", jstr(group, "tier"),
                why ? why : "(no reason)");
  ck_assert_str_eq(jstr(group, "c_tier"), "ready");
  ck_assert_str_eq(jstr(group, "numerics"), "fused");
  ck_assert_int_eq(strlen(jstr(group, "c_module")), 32);
  ck_assert_ptr_nonnull(strstr(jstr(group, "source"), "opd_fused_tile"));
  json_decref(j);
  http_reply r = http_get(s, "/metrics");
  ck_assert_int_eq(r.code, 200);
  ck_assert_int_eq(metric_value(r.body, "opd_graph_c_compiles_total "), 1);
  ck_assert_int_eq(metric_value(r.body, "opd_graph_c_mismatches_total "), 0);
  reply_free(&r);
  ck_assert_int_eq(opd_client_release(c, &t, 1), 0);
  opd_client_close(c);
  opd_server_stop(s);
  char cmd[96];
  snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
  ck_assert_int_eq(system(cmd), 0);
}
END_TEST

/* [Note: The duration clock] in metrics.h: a duration read from it is the one that
 * CLOCK_MONOTONIC reads around it, in nanoseconds (a TSC count left unconverted, or
 * converted the wrong way up, is off by the TSC's rate: several times); never negative. The
 * bounds are loose: a preemption between the paired readings only shortens the inner one. */
START_TEST(test_duration_clock) {
  opd__metrics_clock_init();
  opd__metrics_clock_init(); /* measures once */
  for (int i = 0; i < 3; i++) {
    uint64_t m0 = opd_monotonic_ns(), t0 = opd__metrics_ticks();
    struct timespec nap = {0, 30 * 1000 * 1000};
    while (nanosleep(&nap, &nap) != 0) continue;
    uint64_t t1 = opd__metrics_ticks(), m1 = opd_monotonic_ns();
    uint64_t d = opd__metrics_ticks_ns(t0, t1), outer = m1 - m0;
    ck_assert_msg(d <= outer + outer / 50 && d >= outer / 2,
                  "the duration clock read %llu ns where CLOCK_MONOTONIC read %llu",
                  (unsigned long long)d, (unsigned long long)outer);
    ck_assert_uint_eq(opd__metrics_ticks_ns(t1, t0), 0);
    ck_assert_uint_eq(opd__metrics_ticks_ns(t0, t0), 0);
  }
}
END_TEST

/* Regression: the call metrics counted aten::cat (tensors only inside a Tensor[]) at the key
 * of a call without tensors; they count the key the dispatcher dispatched to ([Note:
 * Prepared calls] in server/src/prepared.h), the same as an add of the same tensors. */
START_TEST(test_metrics_key_of_tensor_lists) {
  opd_server *s = start_server();
  opd_client *c = NULL;
  ck_assert_int_eq(opd_client_connect(opd_server_listener_url(s, 0), NULL, &c), 0);
  float v[2] = {1, 2};
  opd_client_tensor a, b, sum, cat;
  ck_assert_int_eq(opd_client_upload(c, OPD_FLOAT32, (int64_t[]){2}, 1, v, sizeof v, NULL, &a), 0);
  ck_assert_int_eq(opd_client_upload(c, OPD_FLOAT32, (int64_t[]){2}, 1, v, sizeof v, NULL, &b), 0);
  ck_assert_int_eq(opd_add(c, a, b, NULL, &sum), 0);
  ck_assert_int_eq(opd_cat(c, (opd_client_tensor[]){a, b}, 2, NULL, &cat), 0);
  http_reply r = http_get(s, "/metrics");
  ck_assert_int_eq(r.code, 200);
  const char *add = strstr(r.body, "opd_calls_total{op=\"aten::add.Tensor\",key=\"");
  ck_assert_ptr_nonnull(add);
  char key[64] = "";
  ck_assert_int_eq(sscanf(add, "opd_calls_total{op=\"aten::add.Tensor\",key=\"%63[^\"]\"", key), 1);
  char want[160];
  snprintf(want, sizeof want, "opd_calls_total{op=\"aten::cat\",key=\"%s\"} ", key);
  ck_assert_msg(metric_value(r.body, want) == 1, "no '%s1' in the metrics:\n%s", want, r.body);
  reply_free(&r);
  opd_client_close(c);
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
  /* [Note: Fair sharing of workers]: its class, and nothing on workers between calls */
  ck_assert_str_eq(jstr(sess, "priority"), "normal");
  ck_assert_int_eq(json_integer_value(json_object_get(sess, "jobs")), 0);
  ck_assert(json_real_value(json_object_get(sess, "cost_ms")) == 0);
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

static int dial_status(int port) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  ck_assert_int_ge(fd, 0);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ck_assert_int_eq(connect(fd, (struct sockaddr *)&a, sizeof a), 0);
  return fd;
}

START_TEST(test_idle_connections_do_not_block) {
  opd_server *s = start_server();
  int port = opd_server_status_port(s);
  /* more idle connections than the endpoint holds at once */
  enum { IDLE = 100 };
  int fds[IDLE];
  for (int i = 0; i < IDLE; i++) fds[i] = dial_status(port);
  json_t *j = get_json(s, "/v1/health", 200);
  ck_assert_str_eq(jstr(j, "status"), "ok");
  json_decref(j);
  /* answered before the idle ones time out: the newest are still open, unanswered */
  for (int i = IDLE - 16; i < IDLE; i++) {
    struct pollfd p = {fds[i], POLLIN, 0};
    ck_assert_int_eq(poll(&p, 1, 0), 0);
  }
  /* the oldest made room: closed without an answer */
  struct pollfd p = {fds[0], POLLIN, 0};
  ck_assert_int_eq(poll(&p, 1, 10000), 1);
  char c;
  ck_assert_int_le(recv(fds[0], &c, 1, 0), 0);
  for (int i = 0; i < IDLE; i++) close(fds[i]);
  /* a request that never ends its headers is answered 408 after 5 s */
  static const char partial[] = "GET /v1/health HTTP/1.1\r\nHost: x\r\n";
  time_t t0 = time(NULL);
  http_reply r = http_raw(port, partial, sizeof partial - 1);
  ck_assert_int_eq(r.code, 408);
  ck_assert_int_ge(time(NULL) - t0, 4);
  reply_free(&r);
  opd_server_stop(s);
}
END_TEST

/* ---- strings ---- */

START_TEST(test_bad_encoding_is_400) {
  opd_server *s = start_server();
  static const char *const bad[] = {
      "/v1/ops/%FF",
      "/v1/ops/%zz",
      "/v1/ops/%C3",
      "/v1/ops/x%ED%A0%80",
      "/v1/ops/%C0%AF",
      "/v1/%FF",
      "/v1/ops/%00",
      "/v1/ops/%F4%90%80%80",
      "/v1/ops/aten::add.Tensor/dispatch?keys=%FF",
      "/v1/ops/aten::add.Tensor/dispatch?keys=CPU%2",
  };
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    json_t *j = get_json(s, bad[i], 400);
    ck_assert_int_eq(json_integer_value(json_object_get(json_object_get(j, "error"), "code")), 400);
    ck_assert_uint_gt(strlen(jstr(json_object_get(j, "error"), "message")), 10);
    json_decref(j);
  }
  /* a name of valid UTF-8 that is no operator: 404, the name echoed */
  json_t *j = get_json(s, "/v1/ops/caf%C3%A9", 404);
  ck_assert_ptr_nonnull(strstr(jstr(json_object_get(j, "error"), "message"), "caf\xc3\xa9"));
  json_decref(j);
  /* long names of 2- and 3-byte characters, cut in the message at each position within a
   * character (get_json checks that the body is UTF-8) */
  static const char *const chars[] = {"%C3%A9", "%E2%82%AC"};
  for (int c = 0; c < 2; c++)
    for (int lead = 0; lead < 3; lead++) {
      char path[2048] = "/v1/ops/";
      memset(path + 8, 'x', (size_t)lead);
      for (int i = 0; i < 200; i++) strcat(path, chars[c]);
      j = get_json(s, path, 404);
      ck_assert_uint_gt(strlen(jstr(json_object_get(j, "error"), "message")), 250);
      json_decref(j);
      strcat(path, "/dispatch?keys=CPU");
      json_decref(get_json(s, path, 404));
    }
  opd_server_stop(s);
}
END_TEST

static int never_called(const opd_kernel_ctx *ctx, opd_stack *stack) {
  (void)ctx;
  opd_stack_clear(stack);
  return opd_error(OPD_EINTERNAL, "a status test's kernel ran");
}

START_TEST(test_registered_bytes_escaped) {
  opd_server *s = start_server();
  /* a plugin's kernel name and provenance, and an operator name, of bytes that are not UTF-8 */
  opd_kernel k = {.boxed = never_called, .name = "kernel\xfe"};
  opd_provenance prov = {"plugin\xfd", "file\xfc.c", 7};
  opd_reg_id def = opd_def("t_status_bytes", "f(Tensor a) -> Tensor", OPD_HERE);
  opd_reg_id impl = opd_impl("t_status_bytes::f", OPD_KEY_CPU, &k, prov);
  opd_reg_id odd = opd_impl("t_status_bytes::g\xff", OPD_KEY_CPU, &k, prov);
  ck_assert(def > 0 && impl > 0 && odd > 0);

  json_t *j = get_json(s, "/v1/ops/t_status_bytes::f", 200);
  json_t *cpu = json_object_get(json_object_get(j, "table"), "CPU");
  ck_assert_str_eq(jstr(cpu, "kernel"), "kernel\\xfe");
  ck_assert_str_eq(jstr(json_object_get(cpu, "provenance"), "origin"), "plugin\\xfd");
  ck_assert_str_eq(jstr(json_object_get(cpu, "provenance"), "file"), "file\\xfc.c");
  ck_assert_str_eq(jstr(find_by(json_object_get(j, "registrations"), "key", "CPU"), "kernel"),
                   "kernel\\xfe");
  json_decref(j);
  j = get_json(s, "/v1/ops/t_status_bytes::f/dispatch?keys=CPU&exclude=AutogradCPU", 200);
  ck_assert_str_eq(jstr(j, "key"), "CPU");
  ck_assert_str_eq(jstr(j, "kernel"), "kernel\\xfe");
  ck_assert_str_eq(jstr(json_object_get(j, "entry"), "kernel"), "kernel\\xfe");
  json_decref(j);
  j = get_json(s, "/v1/ops", 200);
  ck_assert_ptr_nonnull(find_by(json_object_get(j, "ops"), "name", "t_status_bytes::g\\xff"));
  json_decref(j);
  char *dump = opd_op_dump_table(opd_find_op("t_status_bytes::f"));
  ck_assert_ptr_nonnull(dump);
  ck_assert(opd_utf8_valid(dump, strlen(dump)));
  ck_assert_ptr_nonnull(strstr(dump, "CPU: kernel\\xfe [kernel]"));
  free(dump);
  /* a call of the oddly named operator in the metrics: its label escaped */
  opd__metrics_call(opd_find_op("t_status_bytes::g\xff"), opd_key_slot(OPD_KEY_CPU), 0, 1000,
                    OPD__LOOP_NOTHING);
  http_reply r = http_get(s, "/metrics");
  ck_assert_int_eq(r.code, 200);
  ck_assert(opd_utf8_valid(r.body, r.body_len));
  check_prometheus_text(r.body);
  ck_assert_uint_eq(metric(r.body, "opd_calls_total{op=\"t_status_bytes::g\\\\xff\",key=\"CPU\"}"),
                    1);
  reply_free(&r);
  ck_assert_int_eq(opd_deregister(odd), 0);
  ck_assert_int_eq(opd_deregister(impl), 0);
  ck_assert_int_eq(opd_deregister(def), 0);
  opd_server_stop(s);
}
END_TEST

/* ---- the single-writer copy of the call counters ---- */

typedef struct op_counts {
  const opd_operator *op;
  uint64_t calls, sum_ns, bucketed;
} op_counts;

static void count_op(const opd__op_metrics_snapshot *m, void *arg) {
  op_counts *c = arg;
  if (m->op != c->op) return;
  c->calls = m->calls_by_slot[opd_key_slot(OPD_KEY_CPU)];
  c->sum_ns = m->sum_ns;
  c->bucketed = 0;
  for (int b = 0; b < OPD__METRICS_BUCKETS; b++) c->bucketed += m->buckets[b];
}

static op_counts counts_of(const opd_operator *op) {
  op_counts c = {op, 0, 0, 0};
  opd__metrics_for_each(count_op, &c);
  return c;
}

typedef struct recorder {
  const opd_operator *op;
  int calls;
  bool claimed;
} recorder;

/* Records r->calls calls of 1 us, with the counters claimed if it can. */
static void *record_calls(void *arg) {
  recorder *r = arg;
  r->claimed = opd__metrics_claim_counters();
  for (int i = 0; i < r->calls; i++)
    opd__metrics_call(r->op, opd_key_slot(OPD_KEY_CPU), 0, 1000, OPD__LOOP_NOTHING);
  opd__metrics_unclaim_counters();
  return NULL;
}

/* [Note: Call metrics]: one thread at a time has the counters it adds to without an atomic
 * add; a scrape sees the calls of both copies. */
START_TEST(test_metrics_owned_counters) {
  ck_assert_int_eq(opd_kernels_register(), 0);
  const opd_operator *op = opd_find_op("aten::add.Tensor");
  ck_assert_ptr_nonnull(op);
  op_counts before = counts_of(op);
  ck_assert(opd__metrics_claim_counters()); /* this thread has them */
  recorder other = {op, 300, true};
  pthread_t th;
  ck_assert_int_eq(pthread_create(&th, NULL, record_calls, &other), 0);
  for (int i = 0; i < 200; i++)
    opd__metrics_call(op, opd_key_slot(OPD_KEY_CPU), 0, 2000, OPD__LOOP_NOTHING);
  ck_assert_int_eq(pthread_join(th, NULL), 0);
  ck_assert(!other.claimed); /* taken: its calls were added atomically */
  opd__metrics_unclaim_counters();
  recorder next = {op, 100, false};
  ck_assert_int_eq(pthread_create(&th, NULL, record_calls, &next), 0);
  ck_assert_int_eq(pthread_join(th, NULL), 0);
  ck_assert(next.claimed); /* given back, then claimed by the next thread */
  op_counts after = counts_of(op);
  ck_assert_uint_eq(after.calls - before.calls, 600);
  ck_assert_uint_eq(after.bucketed - before.bucketed, 600);
  ck_assert_uint_eq(after.sum_ns - before.sum_ns, 300 * 1000 + 200 * 2000 + 100 * 1000);
}
END_TEST

/* ---- the request target, without a socket ---- */

static int parse(const char *target, opd__status_target *t) {
  int code = opd__status_parse_target(target, strlen(target), t);
  if (code) {
    ck_assert_msg(*t->error && opd_utf8_valid(t->error, strlen(t->error)), "%s: error '%s'", target,
                  t->error);
  }
  return code;
}

START_TEST(test_parse_target) {
  opd__status_target t;
  static const struct {
    const char *target;
    opd__status_route route;
  } fixed[] = {
      {"/", OPD__STATUS_PAGE},
      {"/index.html", OPD__STATUS_PAGE},
      {"/v1/health", OPD__STATUS_HEALTH},
      {"/v1/health?probe=1", OPD__STATUS_HEALTH},
      {"/v1/info", OPD__STATUS_INFO},
      {"/v1/keys", OPD__STATUS_KEYS},
      {"/v1/ops", OPD__STATUS_OPS},
      {"/v1/fallbacks", OPD__STATUS_FALLBACKS},
      {"/v1/sessions", OPD__STATUS_SESSIONS},
      {"/v1/memory", OPD__STATUS_MEMORY},
      {"/v1/graphs", OPD__STATUS_GRAPHS},
      {"/metrics", OPD__STATUS_METRICS},
      {"/v1/%6Fps", OPD__STATUS_OPS},
  };
  for (size_t i = 0; i < sizeof fixed / sizeof *fixed; i++) {
    ck_assert_int_eq(parse(fixed[i].target, &t), 0);
    ck_assert_int_eq(t.route, fixed[i].route);
  }
  ck_assert_int_eq(parse("/v1/ops/aten%3A%3Aadd.Tensor", &t), 0);
  ck_assert_int_eq(t.route, OPD__STATUS_OP);
  ck_assert_str_eq(t.name, "aten::add.Tensor");
  ck_assert_int_eq(parse("/v1/graphs/12", &t), 0);
  ck_assert_int_eq(t.route, OPD__STATUS_GRAPH);
  ck_assert_str_eq(t.name, "12");
  ck_assert_int_eq(parse("/v1/ops/caf%C3%A9", &t), 0);
  ck_assert_str_eq(t.name, "caf\xc3\xa9");
  ck_assert_int_eq(parse("/v1/ops/aten::add.Tensor/dispatch?keys=CPU%2CAutogradCPU&exclude=Autog"
                         "radCPU&include=Meta",
                         &t),
                   0);
  ck_assert_int_eq(t.route, OPD__STATUS_OP_DISPATCH);
  ck_assert_str_eq(t.name, "aten::add.Tensor");
  ck_assert_uint_eq(
      t.keys.repr,
      opd_keyset_union(opd_keyset_of(OPD_KEY_CPU), opd_keyset_of(OPD_KEY_AutogradCPU)).repr);
  ck_assert_uint_eq(t.exclude.repr, opd_keyset_of(OPD_KEY_AutogradCPU).repr);
  ck_assert_uint_eq(t.include.repr, opd_keyset_of(OPD_KEY_Meta).repr);

  static const struct {
    const char *target;
    int code;
    const char *needle;
  } refused[] = {
      {"/v1/ops/%FF", 400, "not UTF-8"},
      {"/v1/ops/%zz", 400, "malformed percent-encoding"},
      {"/v1/ops/%C3", 400, "not UTF-8"},
      {"/v1/ops/a%2", 400, "malformed percent-encoding"},
      {"/v1/ops/%00", 400, "not UTF-8 text"},
      {"/v1/ops/\xff", 400, "not UTF-8"},
      {"/v1/ops/x/dispatch?keys=CPU,Bogus", 400, "'Bogus' is not a runtime"},
      {"/v1/ops/x/dispatch?keys=Autograd", 400, "'Autograd'"},
      {"/v1/ops/x/dispatch?exclude=%E2%82", 400, "'exclude'"},
      {"/v1/nothing", 404, "no such endpoint: /v1/nothing"},
      {"/v1/caf%C3%A9", 404, "no such endpoint: /v1/caf\xc3\xa9"},
      {"not a target", 400, "malformed request target"},
  };
  for (size_t i = 0; i < sizeof refused / sizeof *refused; i++) {
    ck_assert_int_eq(parse(refused[i].target, &t), refused[i].code);
    ck_assert_msg(strstr(t.error, refused[i].needle), "%s: '%s' lacks '%s'", refused[i].target,
                  t.error, refused[i].needle);
  }
  static char longest[OPD__STATUS_MAX_URL + 2];
  memset(longest, 'a', sizeof longest - 1);
  longest[0] = '/';
  ck_assert_int_eq(parse(longest, &t), 414);
}
END_TEST

/* Random targets (bytes that matter to the parser, often): whatever they are, the answer is
 * a route or 400 / 404 / 414 with a UTF-8 message, and a name is UTF-8 text. */
START_TEST(test_parse_target_random) {
  static const char *const pieces[] = {"/",    "/v1/ops/",  "%", "%C3", "%A9",      "%FF", "%00",
                                       "%2",   "?",         "&", "=",   "keys=CPU", "é",   "\xff",
                                       "\x80", "/dispatch", "a", "::",  "exclude=", "#",   "%zz"};
  unsigned seed = 5150;
  for (int round = 0; round < 20000; round++) {
    char target[OPD__STATUS_MAX_URL + 64] = "";
    size_t len = 0;
    int n = rand_r(&seed) % 24;
    for (int i = 0; i < n; i++) {
      const char *p = pieces[rand_r(&seed) % (sizeof pieces / sizeof *pieces)];
      size_t plen = strlen(p);
      memcpy(target + len, p, plen);
      len += plen;
    }
    if (round % 10 == 0)
      for (int i = 0; i < 8; i++) target[len++] = (char)(rand_r(&seed) & 0xff);
    opd__status_target t;
    int code = opd__status_parse_target(target, len, &t);
    ck_assert_msg(code == 0 || code == 400 || code == 404 || code == 414, "code %d", code);
    if (code)
      ck_assert(*t.error && opd_utf8_valid(t.error, strlen(t.error)));
    else if (t.route == OPD__STATUS_OP || t.route == OPD__STATUS_OP_DISPATCH)
      ck_assert(opd_utf8_valid_text(t.name, strlen(t.name)));
  }
}
END_TEST

/* ---- reading every endpoint while registrations change ---- */

enum { CHURN_READERS = 4, CHURN_CHANGES = 500, CHURN_NAMES = 4, CHURN_SEEN = 4096 };

static const char *const churn_paths[] = {
    "/v1/ops/aten::add.Tensor/dispatch?keys=CPU&exclude=AutogradCPU",
    "/v1/ops",
    "/v1/ops/aten::add.Tensor",
    "/v1/ops/aten::add.Tensor/dispatch?keys=CPU,AutogradCPU&exclude=AutogradCPU",
    "/v1/ops/t_status_churn::f",
    "/v1/ops/aten::add.Tensor/dispatch?keys=CPU&exclude=AutogradCPU",
    "/v1/fallbacks",
    "/v1/sessions",
    "/v1/ops/aten::add.Tensor/dispatch?keys=CPU&exclude=AutogradCPU",
    "/v1/memory",
    "/metrics",
    "/v1/info",
    "/v1/ops/t_status_churn::f/dispatch?keys=CPU",
    "/v1/keys",
    "/v1/health",
    "/",
};
#define CHURN_PATHS (sizeof churn_paths / sizeof *churn_paths)

static const char *const churn_names[CHURN_NAMES] = {"churn_cpu_0", "churn_cpu_1", "churn_cpu_2",
                                                     "churn_cpu_3"};

/* a dispatch reply's CPU entry: the registration and the kernel the reply names */
typedef struct churn_pair {
  opd_reg_id id;
  char kernel[32];
} churn_pair;

typedef struct churn_reader {
  pthread_t thread;
  unsigned index;
  churn_pair seen[CHURN_SEEN];
  size_t nseen;
  long failures;
  char first_failure[256];
} churn_reader;

static int churn_port;
static atomic_bool churn_stop;
static atomic_long churn_replies;

static void churn_fail(churn_reader *r, const char *path, const char *what) {
  if (r->failures++ == 0) snprintf(r->first_failure, sizeof r->first_failure, "%s: %s", path, what);
}

static void churn_check_dispatch(churn_reader *r, const char *path, json_t *j) {
  json_t *entry = json_object_get(j, "entry");
  const char *kernel = json_string_value(json_object_get(j, "kernel"));
  const char *entry_kernel = json_string_value(json_object_get(entry, "kernel"));
  if (!kernel) return churn_fail(r, path, "no kernel");
  if (entry_kernel && strcmp(kernel, entry_kernel) != 0)
    return churn_fail(r, path, "the kernel is not its entry's");
  const char *key = json_string_value(json_object_get(j, "key"));
  if (strstr(path, "aten::add.Tensor") && key && strcmp(key, "CPU") == 0 && r->nseen < CHURN_SEEN) {
    churn_pair *p = &r->seen[r->nseen++];
    p->id = json_integer_value(json_object_get(entry, "registration"));
    snprintf(p->kernel, sizeof p->kernel, "%s", kernel);
  }
}

static void *churn_read(void *arg) {
  churn_reader *r = arg;
  for (unsigned i = r->index; !atomic_load(&churn_stop); i++) {
    const char *path = churn_paths[i % CHURN_PATHS];
    char req[512];
    int n = snprintf(req, sizeof req, "GET %s HTTP/1.1\r\nHost: localhost\r\n\r\n", path);
    http_reply rep;
    const char *failed = http_fetch(churn_port, req, (size_t)n, &rep);
    if (failed) {
      churn_fail(r, path, failed);
      continue;
    }
    if (rep.code != 200) {
      churn_fail(r, path, rep.body);
    } else if (strcmp(path, "/metrics") != 0 && strcmp(path, "/") != 0) {
      json_t *j = json_loadb(rep.body, rep.body_len, 0, NULL);
      if (!j)
        churn_fail(r, path, "not JSON");
      else if (strstr(path, "/dispatch"))
        churn_check_dispatch(r, path, j);
      json_decref(j);
    }
    reply_free(&rep);
    atomic_fetch_add(&churn_replies, 1);
  }
  return NULL;
}

/* Waits until the readers have had `n` more replies (or 10 s without one). */
static void churn_wait_replies(long n) {
  long want = atomic_load(&churn_replies) + n;
  for (int i = 0; i < 100000 && atomic_load(&churn_replies) < want; i++)
    nanosleep(&(struct timespec){0, 100000}, NULL);
}

START_TEST(test_endpoints_under_registration_churn) {
  opd_server *s = start_server();
  churn_port = opd_server_status_port(s);
  const opd_operator *add = opd_find_op("aten::add.Tensor");
  opd_reg_id builtin_id = opd_op_slot_registration(add, OPD_KEY_CPU);
  const char *builtin_name = opd_op_lookup(add, opd_keyset_of(OPD_KEY_CPU))->name;
  /* the other operator exists from the start (operators stay once made) */
  opd_reg_id first = opd_def("t_status_churn", "f(Tensor a) -> Tensor", OPD_HERE);
  ck_assert_int_gt(first, 0);
  ck_assert_int_eq(opd_deregister(first), 0);
  atomic_store(&churn_stop, false);
  atomic_store(&churn_replies, 0);
  static churn_reader readers[CHURN_READERS];
  for (unsigned i = 0; i < CHURN_READERS; i++) {
    readers[i] = (churn_reader){.index = i * 3};
    ck_assert_int_eq(pthread_create(&readers[i].thread, NULL, churn_read, &readers[i]), 0);
  }
  /* override the CPU kernel, define another operator, then remove both */
  static churn_pair made[CHURN_CHANGES];
  for (int i = 0; i < CHURN_CHANGES; i++) {
    opd_kernel k = {.boxed = never_called, .name = churn_names[i % CHURN_NAMES]};
    opd_reg_id id = opd_impl("aten::add.Tensor", OPD_KEY_CPU, &k, OPD_HERE);
    opd_reg_id def = opd_def("t_status_churn", "f(Tensor a) -> Tensor", OPD_HERE);
    ck_assert(id > 0 && def > 0);
    made[i].id = id;
    snprintf(made[i].kernel, sizeof made[i].kernel, "%s", k.name);
    churn_wait_replies(1);
    ck_assert_int_eq(opd_deregister(id), 0);
    ck_assert_int_eq(opd_deregister(def), 0);
    churn_wait_replies(1);
  }
  atomic_store(&churn_stop, true);
  long failures = 0;
  for (unsigned i = 0; i < CHURN_READERS; i++) {
    pthread_join(readers[i].thread, NULL);
    ck_assert_msg(readers[i].failures == 0, "reader %u: %ld failures, first: %s", i,
                  readers[i].failures, readers[i].first_failure);
    failures += readers[i].failures;
  }
  ck_assert_int_eq(failures, 0);
  ck_assert_int_gt(atomic_load(&churn_replies), 2 * CHURN_CHANGES);
  /* every reply named the kernel of the registration it showed */
  size_t checked = 0;
  for (unsigned i = 0; i < CHURN_READERS; i++)
    for (size_t k = 0; k < readers[i].nseen; k++, checked++) {
      const churn_pair *p = &readers[i].seen[k];
      const char *want = p->id == builtin_id ? builtin_name : NULL;
      for (int c = 0; !want && c < CHURN_CHANGES; c++)
        if (made[c].id == p->id) want = made[c].kernel;
      ck_assert_msg(want, "registration %lld was never made", (long long)p->id);
      ck_assert_str_eq(p->kernel, want);
    }
  ck_assert_uint_gt(checked, 0);
  ck_assert_int_eq(opd_op_slot_registration(add, OPD_KEY_CPU), builtin_id);
  ck_assert_int_eq(opd_op_count_stale_slots(add), 0);
  opd_server_stop(s);
}
END_TEST

/* [Note: Session drain] in loop.c: GET /v1/ready, the opd_draining gauge and /v1/info's
 * draining follow the drain; a hello while draining is refused with UNAVAILABLE and a
 * message saying so, while the session opened before goes on computing; undrain serves new
 * sessions again. */
START_TEST(test_ready_and_drain) {
  opd_server *s = start_server();
  json_t *j = get_json(s, "/v1/ready", 200);
  ck_assert_str_eq(jstr(j, "status"), "ready");
  json_decref(j);
  http_reply r = http_get(s, "/metrics");
  ck_assert_ptr_nonnull(strstr(r.body, "# TYPE opd_draining gauge\nopd_draining 0\n"));
  reply_free(&r);
  opd_client *c = NULL;
  ck_assert_int_eq(opd_client_connect(opd_server_listener_url(s, 0), NULL, &c), 0);
  int64_t shape[] = {3};
  float xa[] = {1, 2, 3}, got[3];
  opd_client_tensor a, sum;
  ck_assert_int_eq(opd_client_upload(c, OPD_FLOAT32, shape, 1, xa, sizeof xa, NULL, &a), 0);

  opd_server_set_draining(s, true);
  ck_assert(opd_server_draining(s));
  j = get_json(s, "/v1/ready", 503);
  ck_assert_str_eq(jstr(j, "status"), "unavailable");
  ck_assert_str_eq(jstr(j, "reason"), "draining");
  json_decref(j);
  j = get_json(s, "/v1/health", 200); /* liveness is not readiness */
  json_decref(j);
  j = get_json(s, "/v1/info", 200);
  ck_assert(json_is_true(json_object_get(j, "draining")));
  json_decref(j);
  r = http_get(s, "/metrics");
  ck_assert_ptr_nonnull(strstr(r.body, "\nopd_draining 1\n"));
  reply_free(&r);
  opd_client *refused = NULL;
  ck_assert_int_eq(opd_client_connect(opd_server_listener_url(s, 0), NULL, &refused),
                   OPD_EUNAVAILABLE);
  ck_assert_ptr_null(refused);
  ck_assert_msg(strstr(opd_client_last_error(), "this daemon is draining"), "%s",
                opd_client_last_error());
  /* the session open before the drain goes on */
  opd_client_value args[] = {opd_cv_tensor(a), opd_cv_tensor(a)};
  ck_assert_int_eq(opd_client_call(c, "aten::add.Tensor", args, 2, &sum, 1, NULL), 0);
  ck_assert_int_eq(opd_client_download(c, sum, got, sizeof got, NULL), 0);
  for (int i = 0; i < 3; i++) ck_assert(got[i] == xa[i] + xa[i]);
  ck_assert_uint_eq(opd_server_num_sessions(s), 1);
  opd_client_close(c);
  for (int i = 0; i < 1000 && opd_server_num_sessions(s) > 0; i++) /* the loop closes it */
    nanosleep(&(struct timespec){0, 5 * 1000 * 1000}, NULL);
  ck_assert_uint_eq(opd_server_num_sessions(s), 0);

  opd_server_set_draining(s, false);
  j = get_json(s, "/v1/ready", 200);
  json_decref(j);
  ck_assert_int_eq(opd_client_connect(opd_server_listener_url(s, 0), NULL, &c), 0);
  opd_client_close(c);
  opd_server_stop(s);
}
END_TEST

Suite *opd_test_status_suite(void) {
  Suite *s = suite_create("status");
  TCase *tc = tcase_create("status");
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, test_health_info);
  tcase_add_test(tc, test_ready_and_drain);
  tcase_add_test(tc, test_keys);
  tcase_add_test(tc, test_ops);
  tcase_add_test(tc, test_dispatch);
  tcase_add_test(tc, test_fallbacks_memory);
  tcase_add_test(tc, test_graphs);
  tcase_add_test(tc, test_graphs_c_tier);
  tcase_add_test(tc, test_metrics_key_of_tensor_lists);
  tcase_add_test(tc, test_duration_clock);
  tcase_add_test(tc, test_http_errors);
  tcase_add_test(tc, test_metrics_sessions_count_a_call);
  tcase_add_test(tc, test_page_and_disabled);
  tcase_add_test(tc, test_idle_connections_do_not_block);
  tcase_add_test(tc, test_bad_encoding_is_400);
  tcase_add_test(tc, test_registered_bytes_escaped);
  tcase_add_test(tc, test_parse_target);
  tcase_add_test(tc, test_metrics_owned_counters);
  tcase_add_test(tc, test_parse_target_random);
  suite_add_tcase(s, tc);
  TCase *churn = tcase_create("churn");
  tcase_set_timeout(churn, 300);
  tcase_add_test(churn, test_endpoints_under_registration_churn);
  suite_add_tcase(s, churn);
  return s;
}

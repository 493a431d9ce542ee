/* test_slow_readers.c: clients that pipeline requests with large answers and do not read
 * them cannot make a daemon hold more than its limits ([Note: Answers charged before they
 * are held] in server/src/execute.c). Several raw connections each define a graph whose
 * introspection is a few hundred kilobytes, then send a hundred describe_graph requests
 * asking for it, reading nothing: the answers waiting in the daemon stay within each
 * session's max_bytes_held and the daemon's max_bytes_total, the requests past a limit are
 * answered RESOURCE_EXHAUSTED naming it, a session that stays within its limits is served
 * meanwhile, and everything is given back when the readers go. */
#include <arpa/inet.h>
#include <check.h>
#include <jansson.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "opd.pb-c.h"
#include "opd/allocator.h"
#include "opd/client.h"
#include "opd/error.h"
#include "opd/server.h"

enum {
  READERS = 3,      /* slow readers */
  REQUESTS = 100,   /* describe_graph requests each pipelines */
  CHAIN = 300,      /* nodes of each reader's graph */
  FIRST_ID = 10,    /* request ids of the describes: FIRST_ID + i */
  SETTLE_MS = 20000 /* how long the daemon may take to answer what it read */
};

static opd_server *start_daemon(uint64_t max_bytes_held, uint64_t max_bytes_total) {
  opd_server_config cfg;
  opd_server_config_init(&cfg);
  opd_server_config_clear_listen(&cfg);
  ck_assert_int_eq(opd_server_config_add_listen(&cfg, "tcp://127.0.0.1:0"), 0);
  ck_assert_int_eq(opd_server_config_set(&cfg, "status", "127.0.0.1:0"), 0);
  cfg.workers = 2;
  cfg.log_level = OPD_LOG_ERROR;
  cfg.drain_timeout_ms = 500;
  cfg.max_bytes_held = max_bytes_held;
  cfg.max_bytes_total = max_bytes_total;
  opd_server *s = NULL;
  int rc = opd_server_start(&cfg, &s);
  opd_server_config_destroy(&cfg);
  ck_assert_msg(rc == 0, "opd_server_start: %s", opd_last_error());
  return s;
}

static uint64_t cpu_in_use(void) {
  opd_memory_stats st;
  opd_memory_stats_get(OPD_DEVICE_CPU, &st);
  return st.in_use;
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void sleep_ms(long ms) {
  nanosleep(&(struct timespec){ms / 1000, (ms % 1000) * 1000000}, NULL);
}

/* ---- the status endpoint's sessions ---- */

typedef struct sessions {
  int count;
  uint64_t max_bytes_held; /* the most any session holds */
  uint64_t errors;         /* errors answered, all sessions */
} sessions;

static sessions sessions_now(opd_server *s) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  ck_assert_int_ge(fd, 0);
  struct sockaddr_in a = {.sin_family = AF_INET,
                          .sin_port = htons((uint16_t)opd_server_status_port(s))};
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ck_assert_int_eq(connect(fd, (struct sockaddr *)&a, sizeof a), 0);
  static const char req[] =
      "GET /v1/sessions HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n";
  ck_assert_int_eq(send(fd, req, sizeof req - 1, MSG_NOSIGNAL), (ssize_t)(sizeof req - 1));
  static char buf[1 << 16];
  size_t got = 0;
  for (ssize_t n; got < sizeof buf - 1 && (n = recv(fd, buf + got, sizeof buf - 1 - got, 0)) > 0;)
    got += (size_t)n;
  close(fd);
  buf[got] = '\0';
  const char *body = strstr(buf, "\r\n\r\n");
  ck_assert_ptr_nonnull(body);
  json_t *j = json_loads(body + 4, 0, NULL);
  ck_assert_ptr_nonnull(j);
  sessions r = {.count = (int)json_integer_value(json_object_get(j, "count"))};
  size_t i;
  json_t *e;
  json_array_foreach(json_object_get(j, "sessions"), i, e) {
    uint64_t held = (uint64_t)json_integer_value(json_object_get(e, "bytes_held"));
    if (held > r.max_bytes_held) r.max_bytes_held = held;
    r.errors += (uint64_t)json_integer_value(json_object_get(e, "errors"));
  }
  json_decref(j);
  return r;
}

/* ---- raw frames ---- */

static void send_request(int fd, const Opd__V1__Request *r) {
  size_t n = opd__v1__request__get_packed_size(r);
  uint8_t *buf = malloc(4 + n);
  ck_assert_ptr_nonnull(buf);
  buf[0] = (uint8_t)n, buf[1] = (uint8_t)(n >> 8), buf[2] = (uint8_t)(n >> 16);
  buf[3] = (uint8_t)(n >> 24);
  opd__v1__request__pack(r, buf + 4);
  for (size_t off = 0; off < 4 + n;) {
    ssize_t k = send(fd, buf + off, 4 + n - off, MSG_NOSIGNAL);
    ck_assert_msg(k > 0, "send failed");
    off += (size_t)k;
  }
  free(buf);
}

static bool recv_exact(int fd, void *p, size_t n) {
  for (size_t off = 0; off < n;) {
    ssize_t k = recv(fd, (char *)p + off, n - off, 0);
    if (k <= 0) return false;
    off += (size_t)k;
  }
  return true;
}

static Opd__V1__Response *recv_response(int fd) {
  uint8_t h[4];
  ck_assert_msg(recv_exact(fd, h, 4), "the daemon closed the connection");
  size_t n = (size_t)h[0] | (size_t)h[1] << 8 | (size_t)h[2] << 16 | (size_t)h[3] << 24;
  uint8_t *buf = malloc(n ? n : 1);
  ck_assert(recv_exact(fd, buf, n));
  Opd__V1__Response *r = opd__v1__response__unpack(NULL, n, buf);
  free(buf);
  ck_assert_ptr_nonnull(r);
  return r;
}

static int raw_session(opd_server *s) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  ck_assert_int_ge(fd, 0);
  struct sockaddr_in sa = {.sin_family = AF_INET,
                           .sin_port = htons((uint16_t)opd_server_listener_port(s, 0))};
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ck_assert_int_eq(connect(fd, (struct sockaddr *)&sa, sizeof sa), 0);
  struct timeval tv = {20, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  Opd__V1__Hello h = OPD__V1__HELLO__INIT;
  h.protocol_version = 1;
  h.client_name = "test_slow_readers";
  Opd__V1__Request r = OPD__V1__REQUEST__INIT;
  r.id = 1;
  r.body_case = OPD__V1__REQUEST__BODY_HELLO;
  r.hello = &h;
  send_request(fd, &r);
  Opd__V1__Response *resp = recv_response(fd);
  ck_assert_int_eq(resp->body_case, OPD__V1__RESPONSE__BODY_HELLO);
  opd__v1__response__free_unpacked(resp, NULL);
  return fd;
}

/* Defines graph 1 in the raw session: CHAIN add.Scalar nodes on an input of [4] floats, each
 * with its own constant (no two readers' graphs alike: seed). */
static void define_chain(int fd, double seed) {
  static Opd__V1__GraphNode nodes[CHAIN], *node_ptrs[CHAIN];
  static Opd__V1__IValue args[CHAIN][2], *arg_ptrs[CHAIN][2];
  static Opd__V1__ValueRef refs[CHAIN];
  Opd__V1__ValueSpec spec = OPD__V1__VALUE_SPEC__INIT, *specs = &spec;
  int64_t shape = 4;
  spec.dtype = OPD__V1__DTYPE__FLOAT32;
  spec.shape = &shape;
  spec.n_shape = 1;
  for (int i = 0; i < CHAIN; i++) {
    opd__v1__graph_node__init(&nodes[i]);
    nodes[i].op = "aten::add.Scalar";
    opd__v1__value_ref__init(&refs[i]);
    refs[i].position = (uint32_t)i; /* the input, then node i - 1 */
    opd__v1__ivalue__init(&args[i][0]);
    args[i][0].value_case = OPD__V1__IVALUE__VALUE_REF;
    args[i][0].ref = &refs[i];
    opd__v1__ivalue__init(&args[i][1]);
    args[i][1].value_case = OPD__V1__IVALUE__VALUE_D;
    args[i][1].d = seed + i * 1e-3;
    arg_ptrs[i][0] = &args[i][0];
    arg_ptrs[i][1] = &args[i][1];
    nodes[i].args = arg_ptrs[i];
    nodes[i].n_args = 2;
    node_ptrs[i] = &nodes[i];
  }
  Opd__V1__ValueRef out = OPD__V1__VALUE_REF__INIT, *outs = &out;
  out.position = CHAIN;
  Opd__V1__DefineGraph d = OPD__V1__DEFINE_GRAPH__INIT;
  d.graph = 1;
  d.inputs = &specs;
  d.n_inputs = 1;
  d.nodes = node_ptrs;
  d.n_nodes = CHAIN;
  d.outputs = &outs;
  d.n_outputs = 1;
  Opd__V1__Request r = OPD__V1__REQUEST__INIT;
  r.id = 2;
  r.body_case = OPD__V1__REQUEST__BODY_DEFINE_GRAPH;
  r.define_graph = &d;
  send_request(fd, &r);
  Opd__V1__Response *resp = recv_response(fd);
  ck_assert_msg(resp->body_case == OPD__V1__RESPONSE__BODY_DEFINE_GRAPH, "define: %s",
                resp->body_case == OPD__V1__RESPONSE__BODY_ERROR ? resp->error->message : "?");
  opd__v1__response__free_unpacked(resp, NULL);
}

/* REQUESTS describe_graph requests with introspection, sent at once. */
static void pipeline_describes(int fd) {
  Opd__V1__DescribeGraph d = OPD__V1__DESCRIBE_GRAPH__INIT;
  d.graph = 1;
  d.introspection = true;
  Opd__V1__Request r = OPD__V1__REQUEST__INIT;
  r.body_case = OPD__V1__REQUEST__BODY_DESCRIBE_GRAPH;
  r.describe_graph = &d;
  for (int i = 0; i < REQUESTS; i++) {
    r.id = FIRST_ID + (uint64_t)i;
    send_request(fd, &r);
  }
}

/* Reads the REQUESTS answers: each the introspection (counted in *served) or
 * RESOURCE_EXHAUSTED naming `option` (in *refused). */
static void read_describes(int fd, const char *option, int *served, int *refused) {
  *served = *refused = 0;
  for (int i = 0; i < REQUESTS; i++) {
    Opd__V1__Response *r = recv_response(fd);
    ck_assert_uint_eq(r->id, FIRST_ID + (uint64_t)i);
    if (r->body_case == OPD__V1__RESPONSE__BODY_DESCRIBE_GRAPH) {
      ck_assert_ptr_nonnull(r->describe_graph->introspection);
      ck_assert_uint_gt(strlen(r->describe_graph->introspection), 64 << 10);
      ++*served;
    } else {
      ck_assert_int_eq(r->body_case, OPD__V1__RESPONSE__BODY_ERROR);
      ck_assert_msg(r->error->code == OPD__V1__ERROR_CODE__RESOURCE_EXHAUSTED &&
                        strstr(r->error->message, option),
                    "request %d: %d: %s", i, (int)r->error->code, r->error->message);
      ++*refused;
    }
    opd__v1__response__free_unpacked(r, NULL);
  }
}

/* A session that holds little: a one-element product, downloaded. */
static void small_call(opd_server *s) {
  opd_client *c;
  ck_assert_msg(opd_client_connect(opd_server_listener_url(s, 0), NULL, &c) == 0, "%s",
                opd_client_last_error());
  float v = 3, got = 0;
  int64_t one = 1;
  opd_client_tensor x, y;
  ck_assert_int_eq(opd_client_upload(c, OPD_FLOAT32, &one, 1, &v, sizeof v, NULL, &x), 0);
  ck_assert_msg(opd_client_call(c, "aten::mul.Tensor",
                                (opd_client_value[]){opd_cv_tensor(x), opd_cv_tensor(x)}, 2, &y, 1,
                                NULL) == 0,
                "%s", opd_client_last_error());
  ck_assert_int_eq(opd_client_download(c, y, &got, sizeof got, NULL), 0);
  ck_assert(got == 9);
  opd_client_close(c);
}

/* Starts READERS slow readers (defined, pipelined, reading nothing) and waits until the
 * daemon has answered or refused what they sent (their errors stop growing), checking all
 * along that no session holds more than max_bytes_held and the daemon no more than
 * max_bytes_total. Returns the CPU bytes in use once the graphs were defined (the daemon's
 * graph cache keeps them after their sessions). */
static uint64_t start_readers(opd_server *s, int *fds, uint64_t max_bytes_held,
                              uint64_t max_bytes_total) {
  for (int k = 0; k < READERS; k++) {
    fds[k] = raw_session(s);
    define_chain(fds[k], 100.0 * k);
  }
  uint64_t defined = cpu_in_use();
  for (int k = 0; k < READERS; k++) pipeline_describes(fds[k]);
  double deadline = now_s() + SETTLE_MS / 1000.0;
  uint64_t errors = 0;
  int still = 0;
  while (still < 20 && now_s() < deadline) { /* 20 looks, 1 s, without a new error */
    sessions now = sessions_now(s);
    ck_assert_msg(now.max_bytes_held <= max_bytes_held, "a session holds %llu bytes, limit %llu",
                  (unsigned long long)now.max_bytes_held, (unsigned long long)max_bytes_held);
    uint64_t in_use = cpu_in_use();
    ck_assert_msg(in_use <= max_bytes_total, "the daemon holds %llu bytes, limit %llu",
                  (unsigned long long)in_use, (unsigned long long)max_bytes_total);
    still = now.errors > errors || now.errors == 0 ? 0 : still + 1;
    errors = now.errors;
    sleep_ms(50);
  }
  ck_assert_msg(errors > 0, "no request was refused: the answers fit the limits");
  return defined;
}

/* Each session may hold 4 MiB: the readers' answers past it are refused naming
 * max_bytes_held; a session within its limits is served meanwhile; the readers read what was
 * answered, or go without reading, and the daemon holds what it held before. */
START_TEST(test_slow_readers_within_max_bytes_held) {
  const uint64_t held = 4 << 20, total = (uint64_t)1 << 30;
  opd_server *s = start_daemon(held, total);
  int fds[READERS];
  uint64_t before = start_readers(s, fds, held, total);
  small_call(s); /* another session is not affected */
  int refused_all = 0;
  for (int k = 0; k < READERS - 1; k++) {
    int served, refused;
    read_describes(fds[k], "max_bytes_held", &served, &refused);
    ck_assert_int_gt(served, 0);
    refused_all += refused;
    close(fds[k]);
  }
  ck_assert_int_gt(refused_all, 0);
  close(fds[READERS - 1]); /* gone without reading */
  double deadline = now_s() + 10;
  while ((sessions_now(s).count > 0 || cpu_in_use() > before) && now_s() < deadline) sleep_ms(20);
  ck_assert_int_eq(sessions_now(s).count, 0);
  ck_assert_uint_le(cpu_in_use(), before); /* the answers given back */
  small_call(s);
  opd_server_stop(s);
}
END_TEST

/* The daemon may hold 24 MiB more than when it started, the sessions far more: the readers'
 * answers past the daemon's limit are refused naming max_bytes_total, and are given back
 * when the readers go, after which another session is served. */
START_TEST(test_slow_readers_within_max_bytes_total) {
  uint64_t base = cpu_in_use();
  const uint64_t held = (uint64_t)1 << 30, total = base + (24 << 20);
  opd_server *s = start_daemon(held, total);
  int fds[READERS];
  uint64_t before = start_readers(s, fds, held, total);
  int refused_all = 0;
  for (int k = 0; k < READERS - 1; k++) {
    int served, refused;
    read_describes(fds[k], "max_bytes_total", &served, &refused);
    refused_all += refused;
    close(fds[k]);
  }
  ck_assert_int_gt(refused_all, 0);
  close(fds[READERS - 1]);
  double deadline = now_s() + 10;
  while ((sessions_now(s).count > 0 || cpu_in_use() > before) && now_s() < deadline) sleep_ms(20);
  ck_assert_int_eq(sessions_now(s).count, 0);
  ck_assert_uint_le(cpu_in_use(), before);
  small_call(s);
  opd_server_stop(s);
}
END_TEST

Suite *opd_test_slow_readers_suite(void) {
  Suite *s = suite_create("slow_readers");
  TCase *tc = tcase_create("slow_readers");
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, test_slow_readers_within_max_bytes_held);
  tcase_add_test(tc, test_slow_readers_within_max_bytes_total);
  suite_add_tcase(s, tc);
  return s;
}

/* test_isolation.c: what one session of a daemon can see of another and hold of the daemon:
 * memory is cleared between owners ([Note: Memory cleared between owners] in
 * opd/allocator.h), through the allocator and through a daemon in this process with two
 * client sessions; a reduction holds what its input bounds; answers are charged; long work,
 * a call's or a graph run's, ends when its session closes or the daemon stops. */
#include <arpa/inet.h>
#include <check.h>
#include <jansson.h>
#include <stdio.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "opd/allocator.h"
#include "opd/client.h"
#include "opd/dtype.h"
#include "opd/server.h"
#include "opd/tensor.h"
#include "opd/dispatcher.h"
#include "opd/kernels.h"
#include "opd/memory.h"
#include "tensor_helpers.h"

/* ---- the allocator ---- */

typedef struct owner {
  _Atomic uint64_t held;
  opd_mem_budget budget;
} owner;

static void owner_init(owner *o) {
  atomic_init(&o->held, 0);
  o->budget = (opd_mem_budget){.held = &o->held,
                               .limit = UINT64_MAX,
                               .limit_name = "limit",
                               .owner = "owner",
                               .owner_id = opd_mem_owner_new()};
}

static bool all_zero(const unsigned char *p, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (p[i]) return false;
  return true;
}

/* A cached block another owner wrote is zeroed whole before it is handed out; its own owner
 * gets it back as it left it (the hot path pays nothing). */
START_TEST(test_cached_block_cleared_for_another_owner) {
  const opd_allocator *a = opd_cpu_allocator();
  const opd_device cpu = {OPD_DEVICE_CPU, -1};
  owner x, y;
  owner_init(&x);
  owner_init(&y);
  size_t sizes[] = {OPD_CPU_CACHE_MIN, 100000, (size_t)5 << 20};
  for (size_t k = 0; k < sizeof sizes / sizeof *sizes; k++) {
    size_t n = sizes[k];
    opd_mem_budget_install(&x.budget);
    unsigned char *p = a->alloc(a, cpu, n);
    ck_assert_ptr_nonnull(p);
    ck_assert(all_zero(p, n)); /* fresh: zeroed */
    memset(p, 0x5a, n);
    a->free(a, cpu, p, n);
    unsigned char *q = a->alloc(a, cpu, n);
    ck_assert_ptr_eq(q, p); /* x again: the cached block as x left it, past the list's link */
    ck_assert_int_eq(q[n - 1], 0x5a);
    ck_assert_int_eq(q[sizeof(void *)], 0x5a);
    ck_assert(all_zero(q, sizeof(void *)));
    memset(q, 0x5a, n);
    a->free(a, cpu, q, n);
    opd_mem_budget_uninstall();
    opd_mem_budget_install(&y.budget);
    unsigned char *r = a->alloc(a, cpu, n);
    ck_assert_ptr_eq(r, p);
    ck_assert_msg(all_zero(r, n), "another owner's block was handed out uncleared (%zu bytes)", n);
    a->free(a, cpu, r, n);
    opd_mem_budget_uninstall();
    /* no owner (the process itself) is another owner too */
    r = a->alloc(a, cpu, n);
    ck_assert_ptr_eq(r, p);
    ck_assert(all_zero(r, n));
    a->free(a, cpu, r, n);
  }
}
END_TEST

/* Blocks below the cache's sizes come from malloc, which recycles what its last user left
 * there: zeroed for every owner. */
START_TEST(test_small_blocks_zeroed) {
  const opd_allocator *a = opd_cpu_allocator();
  const opd_device cpu = {OPD_DEVICE_CPU, -1};
  owner x;
  owner_init(&x);
  opd_mem_budget_install(&x.budget);
  for (size_t n = 64; n < OPD_CPU_CACHE_MIN; n *= 4) {
    for (int round = 0; round < 3; round++) {
      unsigned char *p = a->alloc(a, cpu, n);
      ck_assert_ptr_nonnull(p);
      ck_assert_msg(all_zero(p, n), "a block of %zu bytes was not zeroed", n);
      memset(p, 0x5a, n);
      a->free(a, cpu, p, n);
    }
  }
  opd_mem_budget_uninstall();
}
END_TEST

/* A tensor slab slot's data (tiny tensors) is zeroed as it is taken. */
START_TEST(test_slab_slot_zeroed) {
  owner x, y;
  owner_init(&x);
  owner_init(&y);
  int64_t two = 2;
  for (int round = 0; round < 4; round++) {
    opd_mem_budget_install(round % 2 ? &y.budget : &x.budget);
    opd_tensor *t;
    ck_assert_int_eq(opd_tensor_empty(&two, 1, OPD_FLOAT32, (opd_device){OPD_DEVICE_CPU, -1}, &t),
                     0);
    ck_assert(all_zero(opd_tensor_data(t), 2 * sizeof(float)));
    memset(opd_tensor_data(t), 0x5a, 2 * sizeof(float));
    opd_tensor_release(t);
    opd_mem_budget_uninstall();
  }
}
END_TEST

/* ---- what a reduction holds ([Note: The partials of a split reduction are bounded] in
 * kernels/cpu/reduce.c) ---- */

static size_t largest_block;
static void *largest_malloc(size_t n) {
  if (n > largest_block) largest_block = n;
  return malloc(n);
}
static void *largest_calloc(size_t n, size_t size) {
  if (n * size > largest_block) largest_block = n * size;
  return calloc(n, size);
}
static void *largest_realloc(void *p, size_t n) {
  if (n > largest_block) largest_block = n;
  return realloc(p, n);
}

/* aten::sum of a one-element float32 tensor expanded (stride 0) to n elements: 0 with the
 * sum in *got, or the call's error code. */
static int sum_of_expanded(int64_t n, double *got) {
  ck_assert_int_eq(opd_kernels_register(), 0);
  opd_tensor *one = mk(OPD_FLOAT32, SHAPE(1), VALS(1)), *big;
  ck_assert_int_eq(opd_tensor_view_of(one, &n, (int64_t[]){0}, 1, 0, &big), 0);
  opd_stack st;
  opd_stack_init(&st);
  opd_stack_push(&st, T(big));
  opd_stack_push(&st, NONE);
  int rc = opd_call_boxed(opd_find_op("aten::sum"), &st);
  if (rc == 0) *got = at(st.items[0].u.t, 0);
  opd_stack_destroy(&st);
  opd_tensor_release(big);
  opd_tensor_release(one);
  return rc;
}

/* A sum over 2^40 elements keeps at most 4,096 partial results (it kept 2^24 of them, 640
 * MiB, before): the largest block it asks for, with its session's flag set so that the
 * blocks stop at once, is that array. */
START_TEST(test_split_reduction_partials_bounded) {
  owner x;
  owner_init(&x);
  atomic_store(&x.budget.cancelled, true);
  largest_block = 0;
  ck_assert_int_eq(opd_replace_allocator(largest_malloc, largest_realloc, largest_calloc, free), 0);
  opd_mem_budget_install(&x.budget);
  double sum;
  int rc = sum_of_expanded((int64_t)1 << 40, &sum);
  opd_mem_budget_uninstall();
  ck_assert_int_eq(opd_replace_allocator(NULL, NULL, NULL, NULL), 0);
  ck_assert_int_eq(rc, OPD_ECANCELED);
  ck_assert_msg(largest_block >= 4096 * 32 && largest_block <= 4096 * 64,
                "the largest block of the sum: %zu bytes", largest_block);
}
END_TEST

/* Past 2^28 elements the blocks grow, and the sum is still exact where it can be: 2^28 +
 * 2^20 + 7 ones (2,057 blocks of 2 * 65,536), the float nearest the count. */
START_TEST(test_split_reduction_of_larger_blocks) {
  const int64_t n = ((int64_t)1 << 28) + (1 << 20) + 7;
  double sum = 0;
  ck_assert_int_eq(sum_of_expanded(n, &sum), 0);
  ck_assert_double_eq(sum, (double)(float)n);
}
END_TEST

/* ---- through a daemon ---- */

static opd_server *start_limited(int workers, uint64_t max_frame_bytes, uint64_t max_bytes_held) {
  opd_server_config cfg;
  opd_server_config_init(&cfg);
  opd_server_config_clear_listen(&cfg);
  ck_assert_int_eq(opd_server_config_add_listen(&cfg, "tcp://127.0.0.1:0"), 0);
  ck_assert_int_eq(opd_server_config_set(&cfg, "status", "127.0.0.1:0"), 0);
  cfg.drain_timeout_ms = 500;
  cfg.workers = workers;
  if (max_frame_bytes) cfg.max_frame_bytes = max_frame_bytes;
  if (max_bytes_held) {
    cfg.max_bytes_held = max_bytes_held;
    cfg.max_handles = 1 << 22;
  }
  opd_server *s;
  ck_assert_msg(opd_server_start(&cfg, &s) == 0, "%s", opd_last_error());
  opd_server_config_destroy(&cfg);
  return s;
}

static opd_server *start_with(int workers, uint64_t max_frame_bytes) {
  return start_limited(workers, max_frame_bytes, 0);
}

static opd_server *start(int workers) {
  return start_with(workers, 0);
}

static opd_client *connect_to(opd_server *s) {
  opd_client *c;
  ck_assert_msg(opd_client_connect(opd_server_listener_url(s, 0), NULL, &c) == 0, "%s",
                opd_client_last_error());
  return c;
}

/* Session a uploads n floats and releases them; session b's aten::empty.memory_format([n])
 * and aten::empty_strided([n], [1]) must not show them. */
static void expect_no_leak(opd_client *a, opd_client *b, int64_t n) {
  float *data = malloc((size_t)n * sizeof *data), *got = malloc((size_t)n * sizeof *got);
  ck_assert(data && got);
  for (int64_t i = 0; i < n; i++) data[i] = 1234.5f + (float)(i % 7);
  for (int op = 0; op < 2; op++) {
    opd_client_tensor up, t;
    ck_assert_int_eq(
        opd_client_upload(a, OPD_FLOAT32, &n, 1, data, (size_t)n * sizeof *data, NULL, &up), 0);
    ck_assert_int_eq(opd_client_release(a, &up, 1), 0);
    int64_t one = 1;
    int rc =
        op == 0
            ? opd_client_call(b, "aten::empty.memory_format",
                              (opd_client_value[]){opd_cv_ints(&n, 1), opd_cv_dtype(OPD_FLOAT32)},
                              2, &t, 1, NULL)
            : opd_client_call(b, "aten::empty_strided",
                              (opd_client_value[]){opd_cv_ints(&n, 1), opd_cv_ints(&one, 1),
                                                   opd_cv_dtype(OPD_FLOAT32)},
                              3, &t, 1, NULL);
    ck_assert_msg(rc == 0, "%s", opd_client_last_error());
    ck_assert_int_eq(opd_client_download(b, t, got, (size_t)n * sizeof *got, NULL), 0);
    int64_t seen = 0;
    for (int64_t i = 0; i < n; i++) seen += got[i] == data[i];
    ck_assert_msg(seen == 0, "%s of %lld floats shows %lld of another session's",
                  op ? "empty_strided" : "empty", (long long)n, (long long)seen);
    ck_assert_int_eq(opd_client_release(b, &t, 1), 0);
  }
  free(data);
  free(got);
}

START_TEST(test_empty_shows_no_other_session_data) {
  opd_server *s = start(1);
  opd_client *a = connect_to(s), *b = connect_to(s);
  int64_t sizes[] = {2, 1000, 16384, 1 << 20};
  for (size_t k = 0; k < sizeof sizes / sizeof *sizes; k++) expect_no_leak(a, b, sizes[k]);
  opd_client_close(a);
  opd_client_close(b);
  opd_server_stop(s);
}
END_TEST

/* aten::cat of n one-element tensors (ten tensors holding 0..9, repeated): 0, or the call's
 * error code. Repeated handles are the densest list a frame can carry (a byte each). */
static int cat_of(opd_client *c, int n, double *sum) {
  opd_client_tensor *parts = calloc((size_t)n, sizeof *parts), ten[10];
  ck_assert_ptr_nonnull(parts);
  int64_t one = 1;
  for (int i = 0; i < 10; i++) {
    float v = (float)i;
    ck_assert_int_eq(opd_client_upload(c, OPD_FLOAT32, &one, 1, &v, sizeof v, NULL, &ten[i]), 0);
  }
  for (int i = 0; i < n; i++) parts[i] = ten[i % 10];
  opd_client_tensor out;
  int rc = opd_client_call(c, "aten::cat", (opd_client_value[]){opd_cv_tensors(parts, (size_t)n)},
                           1, &out, 1, NULL);
  if (rc == 0) {
    float *got = calloc((size_t)n, sizeof *got);
    ck_assert_int_eq(opd_client_download(c, out, got, (size_t)n * sizeof *got, NULL), 0);
    *sum = 0;
    for (int i = 0; i < n; i++) *sum += got[i];
    free(got);
    ck_assert_int_eq(opd_client_release(c, &out, 1), 0);
  }
  ck_assert_int_eq(opd_client_release(c, ten, 10), 0);
  free(parts);
  return rc;
}

/* A tensor list as long as the frame holds decodes (5,000 and 50,000 tensors in a frame of
 * at most 64 KiB); a longer one is refused for the limit that refuses it, max_frame_bytes. */
START_TEST(test_cat_of_many_tensors) {
  opd_server *s = start_with(1, 64 * 1024);
  opd_client *c = connect_to(s);
  int counts[] = {5000, 50000};
  for (size_t k = 0; k < 2; k++) {
    double sum = -1;
    int rc = cat_of(c, counts[k], &sum);
    ck_assert_msg(rc == 0, "cat of %d tensors: %s", counts[k], opd_client_last_error());
    ck_assert_double_eq(sum, 4.5 * counts[k]); /* 0..9 repeated */
  }
  double sum;
  ck_assert_int_ne(cat_of(c, 100000, &sum), 0);
  ck_assert_msg(strstr(opd_client_last_error(), "max_frame_bytes"), "%s", opd_client_last_error());
  opd_client_close(c);
  opd_server_stop(s);
}
END_TEST

/* A one-element add in session c: 0, or its error. */
static int small_call(opd_client *c) {
  float v = 2, got = 0;
  int64_t one = 1;
  opd_client_tensor x, y;
  int rc = opd_client_upload(c, OPD_FLOAT32, &one, 1, &v, sizeof v, NULL, &x);
  if (rc) return rc;
  rc = opd_client_call(c, "aten::mul.Tensor",
                       (opd_client_value[]){opd_cv_tensor(x), opd_cv_tensor(x)}, 2, &y, 1, NULL);
  if (rc) return rc;
  ck_assert_int_eq(opd_client_download(c, y, &got, sizeof got, NULL), 0);
  ck_assert(got == 4);
  return opd_client_release(c, (opd_client_tensor[]){x, y}, 2);
}

/* ---- answers waiting to be read ([Note: Answers charged before they are held] in
 * server/src/execute.c) ---- */

/* An answer is charged to its session's max_bytes_held before it is packed, with the
 * session's tensors, until it is written: aten::unbind of a 4,000-element tensor (16,000
 * bytes held) answers 4,000 handles in about 8 KB, past a limit of 20 KiB, and is refused
 * naming the option, while a smaller answer (of 500 tensors) fits; another session is
 * served meanwhile. Answers that wait for a slow reader are charged the same way. */
/* aten::unbind(t, 0) in session c: its result code, and the message of a failure. */
static int unbind(opd_client *c, opd_client_tensor t, size_t *count, char *msg, size_t cap) {
  opd_future *f;
  ck_assert_int_eq(opd_client_call_async(c, "aten::unbind.int",
                                         (opd_client_value[]){opd_cv_tensor(t), opd_cv_int(0)}, 2,
                                         NULL, NULL, &f),
                   0);
  int rc = opd_future_wait(f);
  snprintf(msg, cap, "%s", opd_future_error(f));
  *count = 0;
  if (rc == 0) {
    const opd_client_value *v = opd_future_results(f, NULL);
    ck_assert_ptr_nonnull(v);
    *count = v[0].len;
  }
  opd_future_free(f);
  return rc;
}

START_TEST(test_answers_charged) {
  opd_server *s = start_limited(1, 0, 20 << 10);
  opd_client *a = connect_to(s), *b = connect_to(s);
  static float data[4000];
  int64_t n = 4000, small = 500;
  opd_client_tensor x, part;
  ck_assert_int_eq(opd_client_upload(a, OPD_FLOAT32, &n, 1, data, sizeof data, NULL, &x), 0);
  char msg[1024];
  size_t count;
  int rc = unbind(a, x, &count, msg, sizeof msg);
  ck_assert_msg(rc == OPD_ERESOURCE, "%d: %s", rc, msg);
  ck_assert_msg(strstr(msg, "max_bytes_held") && strstr(msg, "responses"), "%s", msg);
  ck_assert_int_eq(small_call(b), 0);
  ck_assert_int_eq(opd_client_call(a, "aten::slice.Tensor",
                                   (opd_client_value[]){opd_cv_tensor(x), opd_cv_int(0),
                                                        opd_cv_int(0), opd_cv_int(small)},
                                   4, &part, 1, NULL),
                   0);
  rc = unbind(a, part, &count, msg, sizeof msg);
  ck_assert_msg(rc == 0, "%s", msg);
  ck_assert_uint_eq(count, (size_t)small);
  opd_client_close(a);
  ck_assert_int_eq(small_call(b), 0);
  opd_client_close(b);
  opd_server_stop(s);
}
END_TEST

/* ---- cancelling long work ([Note: Cancelling long work] in opd/cancel.h) ---- */

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* The sessions /v1/sessions lists. */
static int sessions_listed(opd_server *s) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  ck_assert_int_ge(fd, 0);
  struct sockaddr_in a = {.sin_family = AF_INET,
                          .sin_port = htons((uint16_t)opd_server_status_port(s))};
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ck_assert_int_eq(connect(fd, (struct sockaddr *)&a, sizeof a), 0);
  static const char req[] =
      "GET /v1/sessions HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n";
  ck_assert_int_eq(send(fd, req, sizeof req - 1, MSG_NOSIGNAL), (ssize_t)(sizeof req - 1));
  char buf[1 << 16];
  size_t got = 0;
  for (ssize_t n; got < sizeof buf - 1 && (n = recv(fd, buf + got, sizeof buf - 1 - got, 0)) > 0;)
    got += (size_t)n;
  close(fd);
  buf[got] = '\0';
  const char *body = strstr(buf, "\r\n\r\n");
  ck_assert_ptr_nonnull(body);
  json_t *j = json_loads(body + 4, 0, NULL);
  ck_assert_ptr_nonnull(j);
  int count = (int)json_integer_value(json_object_get(j, "count"));
  json_decref(j);
  return count;
}

/* Starts, in a new session, a sum over 2^40 elements (an expanded one-element tensor):
 * hours of work on the daemon's one worker. */
static opd_client *start_long_sum(opd_server *s, opd_future **f) {
  opd_client *c = connect_to(s);
  float v = 1;
  int64_t one = 1, huge = (int64_t)1 << 40;
  opd_client_tensor x, big;
  ck_assert_int_eq(opd_client_upload(c, OPD_FLOAT32, &one, 1, &v, sizeof v, NULL, &x), 0);
  ck_assert_int_eq(opd_client_call(c, "aten::expand",
                                   (opd_client_value[]){opd_cv_tensor(x), opd_cv_ints(&huge, 1)}, 2,
                                   &big, 1, NULL),
                   0);
  ck_assert_int_eq(opd_client_call_async(c, "aten::sum", (opd_client_value[]){opd_cv_tensor(big)},
                                         1, NULL, NULL, f),
                   0);
  return c;
}

/* A session that closes while its sum runs ends it: within 10 s the daemon's one worker
 * serves another session and the first is gone from /v1/sessions. */
START_TEST(test_closed_session_work_stops) {
  opd_server *s = start(1);
  opd_future *f;
  opd_client *a = start_long_sum(s, &f);
  ck_assert_int_eq(opd_future_wait_for(f, 200), OPD_EBUSY); /* it runs */
  opd_client *b = connect_to(s);
  ck_assert_int_eq(sessions_listed(s), 2);
  opd_client_close(a);
  opd_future_free(f);
  double deadline = now_s() + 10;
  while (sessions_listed(s) > 1 && now_s() < deadline)
    nanosleep(&(struct timespec){0, 10000000}, NULL);
  ck_assert_int_eq(sessions_listed(s), 1);
  ck_assert_int_eq(small_call(b), 0); /* the worker is free */
  opd_client_close(b);
  opd_server_stop(s);
}
END_TEST

/* Stopping the daemon (what SIGTERM does) while a session's sum runs: the drain timeout
 * passes, the connection closes and the sum stops, so the stop returns (the test case's
 * timeout would catch one that waits for the sum). */
START_TEST(test_stop_during_long_work) {
  opd_server *s = start(1);
  opd_future *f;
  opd_client *a = start_long_sum(s, &f);
  ck_assert_int_eq(opd_future_wait_for(f, 200), OPD_EBUSY);
  opd_server_stop(s);
  ck_assert_int_ne(opd_future_wait(f), 0); /* not a sum: the connection closed */
  opd_future_free(f);
  opd_client_close(a);
}
END_TEST

/* Starts, in a new session, a graph whose one run is the same sum: an input of one element,
 * expanded to 2^40 in the graph, summed. The graph's step runs the reduction, which checks
 * the session's flag. */
static opd_client *start_long_graph_run(opd_server *s, opd_future **f) {
  opd_client *c = connect_to(s);
  float v = 1;
  int64_t one = 1, huge = (int64_t)1 << 40;
  opd_client_tensor x, in, big, sum;
  ck_assert_int_eq(opd_client_upload(c, OPD_FLOAT32, &one, 1, &v, sizeof v, NULL, &x), 0);
  opd_graph_builder *b;
  ck_assert_int_eq(opd_graph_builder_new(c, &b), 0);
  ck_assert_int_eq(opd_graph_input(b, OPD_FLOAT32, &one, 1, NULL, false, &in), 0);
  ck_assert_int_eq(opd_graph_node(b, "aten::expand",
                                  (opd_client_value[]){opd_cv_tensor(in), opd_cv_ints(&huge, 1)}, 2,
                                  &big),
                   0);
  ck_assert_int_eq(
      opd_graph_node(b, "aten::sum", (opd_client_value[]){opd_cv_tensor(big)}, 1, &sum), 0);
  opd_client_graph g;
  ck_assert_msg(opd_graph_define(b, &sum, 1, &g, NULL) == 0, "define: %s", opd_client_last_error());
  opd_graph_builder_free(b);
  ck_assert_int_eq(opd_graph_run_async(c, g, &x, 1, NULL, NULL, f), 0);
  return c;
}

/* A session that closes while its graph run is in that sum: within 10 s the worker serves
 * another session and the session is gone from /v1/sessions. */
START_TEST(test_closed_session_graph_run_stops) {
  opd_server *s = start(1);
  opd_future *f;
  opd_client *a = start_long_graph_run(s, &f);
  ck_assert_int_eq(opd_future_wait_for(f, 200), OPD_EBUSY); /* it runs */
  opd_client *b = connect_to(s);
  ck_assert_int_eq(sessions_listed(s), 2);
  opd_client_close(a);
  opd_future_free(f);
  double deadline = now_s() + 10;
  while (sessions_listed(s) > 1 && now_s() < deadline)
    nanosleep(&(struct timespec){0, 10000000}, NULL);
  ck_assert_int_eq(sessions_listed(s), 1);
  ck_assert_int_eq(small_call(b), 0); /* the worker is free */
  opd_client_close(b);
  opd_server_stop(s);
}
END_TEST

/* Stopping the daemon while a session's graph run is in that sum returns (the test case's
 * timeout would catch one that waits for the run). */
START_TEST(test_stop_during_long_graph_run) {
  opd_server *s = start(1);
  opd_future *f;
  opd_client *a = start_long_graph_run(s, &f);
  ck_assert_int_eq(opd_future_wait_for(f, 200), OPD_EBUSY);
  opd_server_stop(s);
  ck_assert_int_ne(opd_future_wait(f), 0); /* no result: the connection closed */
  opd_future_free(f);
  opd_client_close(a);
}
END_TEST

Suite *opd_test_isolation_suite(void) {
  Suite *s = suite_create("isolation");
  TCase *tc = tcase_create("isolation");
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, test_cached_block_cleared_for_another_owner);
  tcase_add_test(tc, test_small_blocks_zeroed);
  tcase_add_test(tc, test_slab_slot_zeroed);
  tcase_add_test(tc, test_split_reduction_partials_bounded);
  tcase_add_test(tc, test_split_reduction_of_larger_blocks);
  tcase_add_test(tc, test_empty_shows_no_other_session_data);
  tcase_add_test(tc, test_cat_of_many_tensors);
  tcase_add_test(tc, test_answers_charged);
  tcase_add_test(tc, test_closed_session_work_stops);
  tcase_add_test(tc, test_stop_during_long_work);
  tcase_add_test(tc, test_closed_session_graph_run_stops);
  tcase_add_test(tc, test_stop_during_long_graph_run);
  suite_add_tcase(s, tc);
  return s;
}

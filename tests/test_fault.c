/* test_fault.c: allocation failure injection, as SQLite's fault profiles do it. The test
 * replaces opd's allocator ([Note: The replaceable allocator] in opd/memory.h) with one that
 * counts allocations and fails the Nth, then sweeps N over each operation a client does
 * (connect and hello, an upload, calls, downloads, a release, session teardown): for N = 1,
 * 2, ... the operation runs with the Nth allocation the daemon makes failing, until it runs
 * with none failing. Every failure must come back as a clear error (or, where the daemon
 * cannot answer, a closed connection), and the daemon must go on: after each step a fresh
 * client is served and the operation succeeds, the session's memory is given back (the CPU
 * allocator's bytes in use return to their baseline), and under ASan nothing leaks. The
 * client library allocates from libc: only the daemon's allocations are failed. Admin
 * registration (a def, a fallthrough, a plugin's load) is swept through opd__admin_handle,
 * the admin's request path without a socket. */
#include <check.h>
#include <jansson.h>
#include <libgen.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "opd/allocator.h"
#include "opd/client.h"
#include "opd/dtype.h"
#include "opd/error.h"
#include "opd/log.h"
#include "opd/memory.h"
#include "opd/server.h"
#include "admin.h"
#include "fault_alloc.h"

/* ---- the daemon ---- */

static void quiet(opd_log_level level, const char *message, void *arg) {
  (void)level, (void)message, (void)arg;
}

static opd_server *start_daemon(void) {
  ck_assert_int_eq(opd_replace_allocator(fault_malloc, fault_realloc, fault_calloc, free), 0);
  opd_server_config cfg;
  opd_server_config_init(&cfg);
  opd_server_config_clear_listen(&cfg);
  ck_assert_int_eq(opd_server_config_add_listen(&cfg, "tcp://127.0.0.1:0"), 0);
  cfg.workers = 2;
  cfg.log_level = OPD_LOG_ERROR;
  opd_log_set_handler(quiet, NULL); /* the injected failures log errors */
  opd_server *s;
  ck_assert_msg(opd_server_start(&cfg, &s) == 0, "%s", opd_last_error());
  opd_server_config_destroy(&cfg);
  return s;
}

static uint64_t cpu_in_use(void) {
  opd_memory_stats st;
  opd_memory_stats_get(OPD_DEVICE_CPU, &st);
  return st.in_use;
}

/* Waits (boundedly) for the daemon to release a closed session's memory. */
static void expect_in_use(uint64_t baseline) {
  for (int i = 0; i < 2000 && cpu_in_use() != baseline; i++)
    nanosleep(&(struct timespec){0, 1000000}, NULL);
  ck_assert_uint_eq(cpu_in_use(), baseline);
}

static opd_client *connect_to(opd_server *s) {
  opd_client *c;
  ck_assert_msg(opd_client_connect(opd_server_listener_url(s, 0), NULL, &c) == 0, "%s",
                opd_client_last_error());
  return c;
}

/* An injected failure is reported as the daemon running out of memory (or the connection it
 * could not serve is closed); the message says what happened. */
static void expect_clear_error(int rc, const char *what, long n) {
  ck_assert_msg(rc == OPD_ERESOURCE || rc == OPD_ECANCELED || rc == OPD_ENOMEM,
                "%s with allocation %ld failing: %d (%s)", what, n, rc, opd_client_last_error());
  ck_assert_msg(opd_client_last_error()[0], "%s with allocation %ld failing: no message", what, n);
}

/* ---- the operations ---- */

typedef struct fixture {
  opd_client *c;
  opd_client_tensor x, y; /* float32 [64, 48], uploaded before the operation */
} fixture;

enum { ROWS = 64, COLS = 48 };
static float data[ROWS * COLS];

static int op_upload(fixture *f) {
  int64_t shape[] = {ROWS, COLS};
  opd_client_tensor t;
  return opd_client_upload(f->c, OPD_FLOAT32, shape, 2, data, sizeof data, NULL, &t);
}

static int op_add(fixture *f) {
  opd_client_tensor out;
  return opd_add(f->c, f->x, f->y, NULL, &out);
}

static int op_softmax(fixture *f) { /* a composite (softmax.int calls _softmax) */
  opd_client_value args[] = {opd_cv_tensor(f->x), opd_cv_int(1), opd_cv_none()};
  opd_client_tensor out;
  return opd_client_call(f->c, "aten::softmax.int", args, 3, &out, 1, NULL);
}

static int op_mm(fixture *f) {
  opd_client_tensor t, out;
  int rc =
      opd_client_call(f->c, "aten::t", (opd_client_value[]){opd_cv_tensor(f->y)}, 1, &t, 1, NULL);
  if (rc) return rc;
  return opd_client_call(f->c, "aten::mm",
                         (opd_client_value[]){opd_cv_tensor(f->x), opd_cv_tensor(t)}, 2, &out, 1,
                         NULL);
}

static int op_download(fixture *f) {
  static float out[ROWS * COLS];
  return opd_client_download(f->c, f->x, out, sizeof out, NULL);
}

static int op_download_strided(fixture *f) {
  static float out[ROWS * COLS];
  opd_client_tensor t;
  opd_client_value args[] = {opd_cv_tensor(f->x), opd_cv_int(0), opd_cv_int(1)};
  int rc = opd_client_call(f->c, "aten::transpose.int", args, 3, &t, 1, NULL);
  return rc ? rc : opd_client_download(f->c, t, out, sizeof out, NULL);
}

static int op_release(fixture *f) {
  return opd_client_release(f->c, &f->y, 1);
}

static int op_literal_call(fixture *f) { /* a tensor passed by value, decoded by the daemon */
  int64_t shape[] = {COLS};
  opd_client_literal lit = {OPD_FLOAT32, 1, shape, data, COLS * sizeof(float)};
  opd_client_value args[] = {opd_cv_tensor(f->x), opd_cv_literal(&lit), opd_cv_int(1)};
  opd_client_tensor out;
  return opd_client_call(f->c, "aten::add.Tensor", args, 3, &out, 1, NULL);
}

/* Pipelined pings, whose responses the daemon's writes join into one buffer ([Note: Writing
 * responses] in server/src/conn_write.c); a failed allocation of that buffer sends them as
 * they are. Then a ping of its own: a burst the daemon could not serve closes the
 * connection, and that ping reports it. */
enum { PING_BURST = 24 };
static int op_ping_burst(fixture *f) {
  opd_future *fut[PING_BURST];
  int failed = 0;
  for (int i = 0; i < PING_BURST; i++)
    if (opd_client_ping_async(f->c, "burst", 5, NULL, NULL, &fut[i]) < 0) fut[i] = NULL;
  for (int i = 0; i < PING_BURST; i++) {
    failed += !fut[i] || opd_future_wait(fut[i]) != 0;
    opd_future_free(fut[i]);
  }
  int rc = opd_client_ping(f->c, "end", 3);
  ck_assert_msg(rc != 0 || failed == 0, "%d pings of a burst failed on a connection that serves",
                failed);
  return rc;
}

typedef int (*operation)(fixture *f);

/* Sweeps the failing allocation over one operation of a connected client with two tensors:
 * the number of allocations the operation made the daemon do (each was failed in turn). */
static long sweep(const char *what, operation op) {
  opd_server *s = start_daemon();
  uint64_t baseline = cpu_in_use();
  long n = 1;
  for (;; n++) {
    fixture f = {connect_to(s), 0, 0};
    int64_t shape[] = {ROWS, COLS};
    ck_assert_int_eq(opd_client_upload(f.c, OPD_FLOAT32, shape, 2, data, sizeof data, NULL, &f.x),
                     0);
    ck_assert_int_eq(opd_client_upload(f.c, OPD_FLOAT32, shape, 2, data, sizeof data, NULL, &f.y),
                     0);
    arm(n);
    int rc = op(&f);
    bool failed = disarm();
    if (rc != 0) expect_clear_error(rc, what, n);
    ck_assert_msg(failed || rc == 0, "%s failed with no allocation failing: %s", what,
                  opd_client_last_error());
    opd_client_close(f.c);
    expect_in_use(baseline);
    /* the daemon goes on: a fresh client does the same thing */
    fixture g = {connect_to(s), 0, 0};
    ck_assert_int_eq(opd_client_upload(g.c, OPD_FLOAT32, shape, 2, data, sizeof data, NULL, &g.x),
                     0);
    ck_assert_int_eq(opd_client_upload(g.c, OPD_FLOAT32, shape, 2, data, sizeof data, NULL, &g.y),
                     0);
    ck_assert_msg(op(&g) == 0, "%s after failure %ld: %s", what, n, opd_client_last_error());
    opd_client_close(g.c);
    expect_in_use(baseline);
    if (!failed) break; /* the operation made fewer than n allocations: all were tried */
  }
  opd_server_stop(s);
  if (getenv("FAULT_TRACE")) fprintf(stderr, "%s: %ld allocations swept\n", what, n - 1);
  return n - 1;
}

/* connect + hello, and session teardown (with handles held), swept together: the client
 * connects, uploads, and leaves while the Nth allocation fails. */
START_TEST(test_fault_connect_and_teardown) {
  opd_server *s = start_daemon();
  uint64_t baseline = cpu_in_use();
  long n = 1;
  for (;; n++) {
    if (getenv("FAULT_TRACE")) fprintf(stderr, "connect n=%ld\n", n);
    arm(n);
    opd_client *c = NULL;
    int rc = opd_client_connect(opd_server_listener_url(s, 0), NULL, &c);
    if (rc == 0) {
      int64_t shape[] = {ROWS, COLS};
      opd_client_tensor t;
      rc = opd_client_upload(c, OPD_FLOAT32, shape, 2, data, sizeof data, NULL, &t);
      opd_client_close(c);
    }
    bool failed = disarm();
    if (rc != 0) {
      ck_assert_msg(failed, "connect/upload failed with no allocation failing: %s",
                    opd_client_last_error());
      ck_assert_msg(opd_client_last_error()[0], "no message");
    }
    expect_in_use(baseline);
    opd_client *d = connect_to(s);
    ck_assert_int_eq(opd_client_ping(d, "ok", 2), 0);
    opd_client_close(d);
    if (!failed) break;
  }
  ck_assert_int_gt(n, 1);
  opd_server_stop(s);
}
END_TEST

/* The lower bounds are the allocations each operation needs: a new tensor is two (the
 * tensor and its storage), a view one. Reading a request allocates nothing ([Note: Requests
 * when memory runs out] in server/src/connection.c). */
START_TEST(test_fault_upload) {
  ck_assert_int_ge(sweep("upload", op_upload), 2);
}
END_TEST

START_TEST(test_fault_call) {
  ck_assert_int_ge(sweep("add", op_add), 2);
  ck_assert_int_ge(sweep("literal add", op_literal_call), 4); /* the literal, the result */
}
END_TEST

START_TEST(test_fault_ping_burst) {
  /* how many frames the daemon reads ahead depends on timing; at most, each ping needs a job
   * (three allocations), a write and its joined buffer */
  ck_assert_int_le(sweep("ping burst", op_ping_burst), 5 * PING_BURST);
}
END_TEST

START_TEST(test_fault_composite_calls) {
  ck_assert_int_ge(sweep("softmax", op_softmax), 2);
  ck_assert_int_ge(sweep("mm", op_mm), 3); /* the transpose's view, the product */
}
END_TEST

START_TEST(test_fault_download) {
  /* written from the tensor's storage: a contiguous download allocates nothing itself; when
   * the upload's job is not back yet (a worker sends an answer before it hands the job
   * back), reading the request makes a job: the job, its response buffer and its arena's
   * first block, each of which may fail without failing the download ([Note: Requests
   * when memory runs out]) */
  ck_assert_int_le(sweep("download", op_download), 3);
  ck_assert_int_ge(sweep("strided download", op_download_strided), 2); /* a view, a chunk */
}
END_TEST

/* A release frees memory, so it must work when none is left: with every allocation the
 * daemon makes failing (those of its own housekeeping too, such as recycling the upload's
 * job just after answering it), a release succeeds and gives the tensor's memory back. */
START_TEST(test_fault_release) {
  opd_server *s = start_daemon();
  uint64_t baseline = cpu_in_use();
  for (int round = 0; round < 3; round++) {
    fixture f = {connect_to(s), 0, 0};
    int64_t shape[] = {ROWS, COLS};
    ck_assert_int_eq(opd_client_upload(f.c, OPD_FLOAT32, shape, 2, data, sizeof data, NULL, &f.x),
                     0);
    uint64_t with_x = cpu_in_use();
    ck_assert_int_eq(opd_client_upload(f.c, OPD_FLOAT32, shape, 2, data, sizeof data, NULL, &f.y),
                     0);
    ck_assert_uint_ge(cpu_in_use(), with_x + sizeof data);
    arm(FAIL_ALL);
    int rc = op_release(&f);
    disarm();
    ck_assert_msg(rc == 0, "release with no memory left: %d (%s)", rc, opd_client_last_error());
    expect_in_use(with_x);
    /* the released handle is gone, the other one still works */
    ck_assert_int_eq(op_download(&f), 0);
    f.x = f.y;
    ck_assert_int_ne(op_download(&f), 0);
    opd_client_close(f.c);
    expect_in_use(baseline);
  }
  opd_server_stop(s);
}
END_TEST

/* ---- admin registration ---- */

/* Runs one admin request, with the failure armed at the `n`th allocation (0: none): the
 * answer's JSON (read once disarmed: jansson allocates from the same allocator), or NULL
 * when the admin could make none (OPD_ENOMEM). *fired: whether the failure happened. */
static json_t *admin_request_failing(opd__admin *a, const char *req, long n, bool *fired) {
  char *reply = NULL;
  size_t len = 0;
  arm(n);
  int rc = opd__admin_handle(a, req, strlen(req), false, &reply, &len);
  *fired = disarm();
  if (rc == OPD_ENOMEM) {
    ck_assert_ptr_null(reply);
    return NULL;
  }
  ck_assert_int_ge(rc, 0);
  json_t *j = json_loadb(reply, len, 0, NULL);
  opd__free(reply);
  ck_assert_ptr_nonnull(j);
  return j;
}

static json_t *admin_request(opd__admin *a, const char *req) {
  bool fired;
  return admin_request_failing(a, req, 0, &fired);
}

/* Whether an answer is a success; a failure must be the admin's out-of-memory error. */
static bool admin_ok(json_t *r, const char *what, long n) {
  if (!r) return false;
  if (json_is_true(json_object_get(r, "ok"))) return true;
  const char *code = json_string_value(json_object_get(r, "code"));
  const char *msg = json_string_value(json_object_get(r, "error"));
  ck_assert_msg(code && msg && msg[0],
                "%s with allocation %ld failing: an answer without a code "
                "and message",
                what, n);
  ck_assert_msg(!strcmp(code, "ENOMEM") || !strcmp(code, "ERESOURCE"),
                "%s with allocation %ld failing: %s: %s", what, n, code, msg);
  return false;
}

/* Undoes what a successful request registered: its "id", or a plugin's "registrations". */
static void admin_undo(opd__admin *a, json_t *r, const char *plugin_file) {
  char req[160];
  json_t *id = json_object_get(r, "id");
  if (id) {
    snprintf(req, sizeof req, "{\"op\":\"deregister\",\"id\":%lld}",
             (long long)json_integer_value(id));
    json_t *d = admin_request(a, req);
    ck_assert(json_is_true(json_object_get(d, "ok")));
    json_decref(d);
  }
  if (plugin_file) {
    json_t *regs = json_object_get(r, "registrations");
    size_t i;
    json_t *v;
    json_array_foreach(regs, i, v) {
      snprintf(req, sizeof req, "{\"op\":\"deregister\",\"id\":%lld}",
               (long long)json_integer_value(v));
      json_t *d = admin_request(a, req);
      ck_assert(json_is_true(json_object_get(d, "ok")));
      json_decref(d);
    }
    snprintf(req, sizeof req, "{\"op\":\"unload_plugin\",\"file\":\"%s\"}", plugin_file);
    json_t *d = admin_request(a, req);
    ck_assert_msg(json_is_true(json_object_get(d, "ok")), "unload: %s",
                  json_string_value(json_object_get(d, "error")));
    json_decref(d);
  }
}

static long sweep_admin(opd__admin *a, const char *what, const char *req, const char *plugin_file) {
  long n = 1;
  for (;; n++) {
    bool failed;
    json_t *r = admin_request_failing(a, req, n, &failed);
    bool ok = admin_ok(r, what, n);
    ck_assert_msg(ok || failed, "%s failed with no allocation failing", what);
    if (ok) admin_undo(a, r, plugin_file);
    json_decref(r);
    /* the admin goes on: the same request succeeds, and is undone */
    r = admin_request(a, req);
    ck_assert_msg(admin_ok(r, what, 0), "%s after failure %ld", what, n);
    admin_undo(a, r, plugin_file);
    json_decref(r);
    if (!failed) break;
  }
  return n - 1;
}

START_TEST(test_fault_admin_registration) {
  opd_server *s = start_daemon(); /* the built-in operators, and the allocator replaced */
  char plugin[512];
  snprintf(plugin, sizeof plugin, "%s", OPD_EXAMPLE_PLUGIN);
  const char *file = basename(plugin);
  char dir[512];
  snprintf(dir, sizeof dir, "%s", OPD_EXAMPLE_PLUGIN);
  opd__admin_config cfg = {"", "", NULL, dirname(dir), NULL, NULL, NULL, NULL};
  opd__admin *a;
  ck_assert_int_eq(opd__admin_start(&cfg, &a), 0);
  ck_assert_int_gt(sweep_admin(a, "def",
                               "{\"op\":\"def\",\"namespace\":\"faultops\","
                               "\"schema\":\"twice(Tensor a) -> Tensor\"}",
                               NULL),
                   0);
  ck_assert_int_gt(sweep_admin(a, "register a fallthrough",
                               "{\"op\":\"register\",\"name\":\"aten::add.Tensor\","
                               "\"key\":\"AutocastCPU\",\"fallthrough\":true}",
                               NULL),
                   0);
  char load[600];
  snprintf(load, sizeof load, "{\"op\":\"load_plugin\",\"file\":\"%s\"}", file);
  ck_assert_int_gt(sweep_admin(a, "load_plugin", load, file), 0);
  opd__admin_stop(a);
  opd_server_stop(s);
}
END_TEST

Suite *opd_test_fault_suite(void) {
  Suite *s = suite_create("fault");
  TCase *tc = tcase_create("fault");
  tcase_set_timeout(tc, 300);
  tcase_add_test(tc, test_fault_connect_and_teardown);
  tcase_add_test(tc, test_fault_upload);
  tcase_add_test(tc, test_fault_call);
  tcase_add_test(tc, test_fault_composite_calls);
  tcase_add_test(tc, test_fault_ping_burst);
  tcase_add_test(tc, test_fault_download);
  tcase_add_test(tc, test_fault_release);
  tcase_add_test(tc, test_fault_admin_registration);
  suite_add_tcase(s, tc);
  return s;
}

/* test_graph_server.c: graphs through a real daemon, started in process (opd/server.h) on
 * an ephemeral port: the client's graph API (capture with the typed calls, the boxed
 * builder, a run pipelined behind its define, release) with values checked against the
 * same program computed here; the cache (a second define is a hit; a hot registration of an
 * operator the graph calls, and its removal, compile it again); graphs per session
 * (another session's id and a released one are NOT_FOUND; closing the connection releases
 * the graphs and their outputs); runs charged to the session's budget; the per-pass IR
 * dumps (graph_dump_dir, bounded by graph_dump_max_bytes); the bad-input matrix
 * of define and run over raw frames (forward and self references, positions out of range,
 * unknown operators, wrong argument types, handles in nodes, a shape whose element count
 * overflows, a shape error at define, 1,000,000 nodes, the session's limit of graphs; runs
 * with the wrong number, dtype or shape of handles), each answered with its code and a
 * message naming the node, after which the daemon keeps serving. LeakSanitizer checks that
 * nothing leaks. [Note: Graphs in the daemon] in server/src/graphs.c. */
#include <check.h>
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "opd.pb-c.h"
#include "opd/allocator.h"
#include "opd/client.h"
#include "opd/client_ops.h"
#include "opd/dispatcher.h"
#include "opd/tensor.h"
#include "opd/error.h"
#include "opd/server.h"

#define EC(name) OPD__V1__ERROR_CODE__##name

/* ---- the daemon ---- */

typedef struct daemon_limits {
  uint64_t max_frame_bytes, max_bytes_held, graph_dump_max_bytes;
  uint32_t max_graphs;
  const char *graph_dump_dir;
} daemon_limits;

static opd_server *start_daemon(const daemon_limits *lim) {
  opd_server_config cfg;
  opd_server_config_init(&cfg);
  opd_server_config_clear_listen(&cfg);
  ck_assert_int_eq(opd_server_config_add_listen(&cfg, "tcp://127.0.0.1:0"), 0);
  cfg.workers = 2;
  cfg.log_level = OPD_LOG_ERROR;
  if (lim && lim->max_frame_bytes) cfg.max_frame_bytes = lim->max_frame_bytes;
  if (lim && lim->max_bytes_held) cfg.max_bytes_held = lim->max_bytes_held;
  if (lim && lim->max_graphs) cfg.max_graphs = lim->max_graphs;
  if (lim && lim->graph_dump_dir)
    snprintf(cfg.graph_dump_dir, sizeof cfg.graph_dump_dir, "%s", lim->graph_dump_dir);
  if (lim && lim->graph_dump_max_bytes) cfg.graph_dump_max_bytes = lim->graph_dump_max_bytes;
  opd_server *s = NULL;
  int rc = opd_server_start(&cfg, &s);
  opd_server_config_destroy(&cfg);
  ck_assert_msg(rc == 0, "opd_server_start: %s", opd_last_error());
  return s;
}

static opd_client *connect_daemon(opd_server *s) {
  opd_client *c = NULL;
  int rc = opd_client_connect(opd_server_listener_url(s, 0), NULL, &c);
  ck_assert_msg(rc == 0, "connect: %s", opd_client_last_error());
  return c;
}

static uint64_t cpu_in_use(void) {
  opd_memory_stats st;
  opd_memory_stats_get(OPD_DEVICE_CPU, &st);
  return st.in_use;
}

/* Waits (up to 10 s) for the CPU allocator's bytes in use to come back to `want`. */
static void expect_in_use(uint64_t want) {
  for (int i = 0; i < 1000 && cpu_in_use() != want; i++)
    nanosleep(&(struct timespec){0, 10000000}, NULL);
  ck_assert_uint_eq(cpu_in_use(), want);
}

static opd_client_tensor upload_f32(opd_client *c, const int64_t *shape, int ndim, const float *v) {
  size_t n = 1;
  for (int i = 0; i < ndim; i++) n *= (size_t)shape[i];
  opd_client_tensor t = 0;
  int rc = opd_client_upload(c, OPD_FLOAT32, shape, ndim, v, n * sizeof *v, NULL, &t);
  ck_assert_msg(rc == 0, "upload: %s", opd_client_last_error());
  return t;
}

static void expect_client_error(int rc, int code, const char *needle) {
  ck_assert_msg(rc == code, "rc %d, expected %d: %s", rc, code, opd_client_last_error());
  ck_assert_msg(strstr(opd_client_last_error(), needle), "message '%s' lacks '%s'",
                opd_client_last_error(), needle);
}

/* ---- the program: y = relu(x @ w), p = exp(y) / sum(exp(y), -1, keepdim) ---- */

enum { M = 4, K = 8, N = 6 };

static void program_inputs(float *x, float *w) {
  for (int i = 0; i < M * K; i++) x[i] = (float)((i * 7) % 11) / 11.0f - 0.4f;
  for (int i = 0; i < K * N; i++) w[i] = (float)((i * 5) % 13) / 13.0f - 0.5f;
}

static void program_expected(const float *x, const float *w, float *y, float *p) {
  for (int i = 0; i < M; i++) {
    double sum = 0;
    for (int j = 0; j < N; j++) {
      double acc = 0;
      for (int k = 0; k < K; k++) acc += (double)x[i * K + k] * w[k * N + j];
      y[i * N + j] = acc > 0 ? (float)acc : 0.0f;
      sum += exp(y[i * N + j]);
    }
    for (int j = 0; j < N; j++) p[i * N + j] = (float)(exp(y[i * N + j]) / sum);
  }
}

static void expect_close(const float *got, const float *want, int n) {
  for (int i = 0; i < n; i++)
    ck_assert_msg(fabsf(got[i] - want[i]) <= 1e-5f + 1e-4f * fabsf(want[i]),
                  "element %d: %g, expected %g", i, got[i], want[i]);
}

/* Records the program with the typed calls: its outputs y and p. */
static opd_graph_builder *capture_program(opd_client *c, opd_client_tensor outs[2]) {
  opd_graph_builder *b = NULL;
  ck_assert_int_eq(opd_graph_capture_begin(c, &b), 0);
  opd_client_tensor x, w, h, y, e, s, p;
  ck_assert_int_eq(opd_graph_input(b, OPD_FLOAT32, (int64_t[]){M, K}, 2, NULL, false, &x), 0);
  ck_assert_int_eq(opd_graph_input(b, OPD_FLOAT32, (int64_t[]){K, N}, 2, NULL, true, &w), 0);
  ck_assert_int_eq(opd_mm(c, x, w, &h), 0);
  ck_assert(opd_graph_is_value(h));
  ck_assert_int_eq(opd_relu(c, h, &y), 0);
  ck_assert_int_eq(opd_exp(c, y, &e), 0);
  ck_assert_int_eq(opd_sum_dim_intlist(c, e, (int64_t[]){-1}, 1, &(bool){true}, NULL, &s), 0);
  ck_assert_int_eq(opd_div(c, e, s, &p), 0);
  ck_assert_int_eq(opd_graph_capture_end(b), 0);
  outs[0] = y;
  outs[1] = p;
  return b;
}

static void expect_program_outputs(opd_client *c, const opd_client_tensor *outs, const float *x,
                                   const float *w) {
  float y[M * N], p[M * N], want_y[M * N], want_p[M * N];
  program_expected(x, w, want_y, want_p);
  ck_assert_int_eq(opd_client_download(c, outs[0], y, sizeof y, NULL), 0);
  ck_assert_int_eq(opd_client_download(c, outs[1], p, sizeof p, NULL), 0);
  expect_close(y, want_y, M * N);
  expect_close(p, want_p, M * N);
}

START_TEST(test_capture_define_run_release) {
  opd_server *s = start_daemon(NULL);
  opd_client *c = connect_daemon(s);
  float x[M * K], w[K * N];
  program_inputs(x, w);
  opd_client_tensor tx = upload_f32(c, (int64_t[]){M, K}, 2, x);
  opd_client_tensor tw = upload_f32(c, (int64_t[]){K, N}, 2, w);

  opd_client_tensor vals[2];
  opd_graph_builder *b = capture_program(c, vals);
  /* after the capture, calls go to the daemon again */
  opd_client_tensor neg;
  ck_assert_int_eq(opd_neg(c, tx, &neg), 0);
  ck_assert(!opd_graph_is_value(neg));
  opd_client_graph g = 0, g2 = 0;
  opd_client_graph_info info, info2;
  int rc = opd_graph_define(b, vals, 2, &g, &info);
  ck_assert_msg(rc == 0, "define: %s", opd_client_last_error());
  ck_assert_uint_ne(g, 0);
  ck_assert_uint_eq(info.graph, g);
  ck_assert_uint_eq(info.nodes_before, 5);
  ck_assert_uint_eq(info.softmax_patterns, 1);
  /* the same graph again: a hit on the same compiled graph */
  ck_assert_int_eq(opd_graph_define(b, vals, 2, &g2, &info2), 0);
  ck_assert_uint_ne(g2, g);
  ck_assert(info2.cache_hit);
  ck_assert_uint_eq(info2.compiled, info.compiled);
  ck_assert_str_eq(info2.key, info.key);
  opd_graph_builder_free(b);

  for (int run = 0; run < 3; run++) { /* past the runs that check the fused groups */
    opd_client_tensor outs[2];
    size_t nouts = 0;
    rc = opd_graph_run(c, g, (opd_client_tensor[]){tx, tw}, 2, outs, 2, &nouts);
    ck_assert_msg(rc == 0, "run: %s", opd_client_last_error());
    ck_assert_uint_eq(nouts, 2);
    expect_program_outputs(c, outs, x, w);
    ck_assert_int_eq(opd_client_release(c, outs, 2), 0);
  }
  opd_client_graph_info now;
  char *doc = NULL;
  ck_assert_int_eq(opd_graph_describe(c, g, &now, &doc), 0);
  ck_assert_uint_ge(now.runs, 3);
  ck_assert_ptr_nonnull(doc);
  ck_assert_ptr_nonnull(strstr(doc, "\"passes\""));
  /* what the last run launched (opd-graph-conformance reports it through a daemon): one
   * kernel at least, and no fewer than the groups' current decisions launch (a run that
   * checks a group counts its unfused kernels); the reply and the document agree */
  ck_assert_uint_ge(now.kernels_last_run, 1);
  ck_assert_uint_ge(now.kernels_last_run, now.kernels);
  json_t *j = json_loads(doc, 0, NULL);
  ck_assert_ptr_nonnull(j);
  ck_assert_int_eq(json_integer_value(json_object_get(j, "kernels_last_run")),
                   now.kernels_last_run);
  json_decref(j);
  free(doc);

  ck_assert_int_eq(opd_graph_release(c, g), 0);
  opd_client_tensor out;
  expect_client_error(opd_graph_run(c, g, (opd_client_tensor[]){tx, tw}, 2, &out, 1, NULL),
                      OPD_ENOENT, "not defined in this session");
  expect_client_error(opd_graph_release(c, g), OPD_ENOENT, "nothing was released");
  /* the other definition of it still runs */
  opd_client_tensor outs[2];
  ck_assert_int_eq(opd_graph_run(c, g2, (opd_client_tensor[]){tx, tw}, 2, outs, 2, NULL), 0);
  expect_program_outputs(c, outs, x, w);
  opd_client_close(c);
  opd_server_stop(s);
}
END_TEST

typedef struct done_flag {
  int calls;
} done_flag;

static void count_done(opd_future *f, void *user) {
  (void)f;
  ((done_flag *)user)->calls++;
}

START_TEST(test_boxed_builder_pipelined) {
  opd_server *s = start_daemon(NULL);
  opd_client *c = connect_daemon(s);
  float a[6] = {0.5f, -1, 2, 3, -0.25f, 1}, got[6];
  opd_client_tensor ta = upload_f32(c, (int64_t[]){2, 3}, 2, a);

  /* z = exp(a) * a + 2 (the Python number as a tensor argument, as PyTorch wraps it) */
  opd_graph_builder *b;
  ck_assert_int_eq(opd_graph_builder_new(c, &b), 0);
  opd_client_tensor x, e, m, z;
  ck_assert_int_eq(opd_graph_input(b, OPD_FLOAT32, (int64_t[]){2, 3}, 2, NULL, false, &x), 0);
  ck_assert_int_eq(opd_graph_node(b, "aten::exp", (opd_client_value[]){opd_cv_tensor(x)}, 1, &e),
                   0);
  ck_assert_int_eq(opd_graph_node(b, "aten::mul.Tensor",
                                  (opd_client_value[]){opd_cv_tensor(e), opd_cv_tensor(x)}, 2, &m),
                   0);
  ck_assert_int_eq(opd_graph_node(b, "aten::add.Tensor",
                                  (opd_client_value[]){opd_cv_tensor(m), opd_cv_int(2)}, 2, &z),
                   0);
  /* the define and the run sent back to back, the run not waiting for the define's reply */
  done_flag defined = {0}, ran = {0};
  opd_future *fd = NULL, *fr = NULL;
  opd_client_graph g = 0;
  ck_assert_int_eq(opd_graph_define_async(b, &z, 1, &g, count_done, &defined, &fd), 0);
  ck_assert_uint_ne(g, 0);
  ck_assert_int_eq(opd_graph_run_async(c, g, &ta, 1, count_done, &ran, &fr), 0);
  ck_assert_int_eq(opd_future_wait(fr), 0);
  ck_assert_int_eq(opd_future_wait(fd), 0);
  const opd_client_graph_info *info = opd_future_graph_info(fd);
  ck_assert_ptr_nonnull(info);
  ck_assert_uint_eq(info->nodes_before, 3);
  ck_assert_uint_le(info->kernels, 1); /* one fused group */
  opd_client_tensor out = opd_future_tensor(fr, 0);
  ck_assert_uint_ne(out, 0);
  ck_assert_int_eq(opd_client_download(c, out, got, sizeof got, NULL), 0);
  for (int i = 0; i < 6; i++) {
    float want = expf(a[i]) * a[i] + 2;
    ck_assert_msg(fabsf(got[i] - want) <= 1e-5f * (1 + fabsf(want)), "%d: %g vs %g", i, got[i],
                  want);
  }
  opd_future_free(fd);
  opd_future_free(fr);
  ck_assert_int_eq(defined.calls, 1);
  ck_assert_int_eq(ran.calls, 1);

  /* a handle is no node's argument, and an async call is refused during a capture */
  opd_client_tensor bad;
  expect_client_error(
      opd_graph_node(b, "aten::neg", (opd_client_value[]){opd_cv_tensor(ta)}, 1, &bad), OPD_EINVAL,
      "a graph holds no handle");
  opd_graph_builder_free(b);
  opd_graph_builder *cap;
  ck_assert_int_eq(opd_graph_capture_begin(c, &cap), 0);
  opd_future *f = NULL;
  ck_assert_int_eq(opd_neg_async(c, ta, NULL, NULL, &f), OPD_EINVAL);
  ck_assert_ptr_null(f);
  ck_assert_int_eq(opd_graph_capture_end(cap), 0);
  opd_graph_builder_free(cap);
  opd_client_close(c);
  opd_server_stop(s);
}
END_TEST

/* aten::exp's CPU kernel for the invalidation test: sevens of the input's shape. */
static int sevens(const opd_kernel_ctx *ctx, opd_stack *st) {
  (void)ctx;
  opd_ivalue self = opd_stack_pop(st);
  opd_tensor *r = NULL;
  int rc = opd_tensor_empty(opd_tensor_sizes(self.u.t), self.u.t->ndim, OPD_FLOAT32,
                            (opd_device){OPD_DEVICE_CPU, -1}, &r);
  for (int64_t i = 0; rc == 0 && i < r->numel; i++) ((float *)opd_tensor_data(r))[i] = 7;
  opd_iv_destroy(&self);
  return rc ? rc : opd_stack_push(st, opd_iv_tensor_steal(r));
}

/* Defines y = exp(x) * 2 and runs it on ones: its compiled graph's id and y[0]. */
static float define_and_run(opd_client *c, opd_client_tensor ones, opd_client_graph_info *info) {
  opd_graph_builder *b;
  ck_assert_int_eq(opd_graph_builder_new(c, &b), 0);
  opd_client_tensor x, e, y;
  ck_assert_int_eq(opd_graph_input(b, OPD_FLOAT32, (int64_t[]){4}, 1, NULL, false, &x), 0);
  ck_assert_int_eq(opd_graph_node(b, "aten::exp", (opd_client_value[]){opd_cv_tensor(x)}, 1, &e),
                   0);
  ck_assert_int_eq(opd_graph_node(b, "aten::mul.Tensor",
                                  (opd_client_value[]){opd_cv_tensor(e), opd_cv_int(2)}, 2, &y),
                   0);
  opd_client_graph g;
  ck_assert_int_eq(opd_graph_define(b, &y, 1, &g, info), 0);
  opd_graph_builder_free(b);
  opd_client_tensor out;
  ck_assert_int_eq(opd_graph_run(c, g, &ones, 1, &out, 1, NULL), 0);
  float v[4];
  ck_assert_int_eq(opd_client_download(c, out, v, sizeof v, NULL), 0);
  return v[0];
}

/* A hot registration of an operator a graph calls, and its removal, give the graph another
 * cache key: the next define compiles again, with the kernel in force. */
START_TEST(test_hot_registration_invalidates) {
  opd_server *s = start_daemon(NULL);
  opd_client *c = connect_daemon(s);
  opd_client_tensor ones = upload_f32(c, (int64_t[]){4}, 1, (float[]){1, 1, 1, 1});
  opd_client_graph_info first, again, hot, removed;
  ck_assert_float_eq_tol(define_and_run(c, ones, &first), 2 * expf(1), 1e-5);
  ck_assert_float_eq_tol(define_and_run(c, ones, &again), 2 * expf(1), 1e-5);
  ck_assert(!first.cache_hit && again.cache_hit);
  opd_kernel k = {.boxed = sevens, .name = "sevens"};
  opd_reg_id id = opd_impl("aten::exp", OPD_KEY_CPU, &k, OPD_HERE);
  ck_assert_int_gt(id, 0);
  ck_assert_float_eq(define_and_run(c, ones, &hot), 14);
  ck_assert(!hot.cache_hit);
  ck_assert_str_ne(hot.key, first.key);
  ck_assert_int_eq(opd_deregister(id), 0);
  ck_assert_float_eq_tol(define_and_run(c, ones, &removed), 2 * expf(1), 1e-5);
  ck_assert(!removed.cache_hit);
  opd_client_close(c);
  opd_server_stop(s);
}
END_TEST

/* ---- graphs per session ---- */

START_TEST(test_graphs_per_session) {
  opd_server *s = start_daemon(&(daemon_limits){.max_graphs = 2});
  opd_client *a = connect_daemon(s), *b = connect_daemon(s);
  float x[M * K], w[K * N];
  program_inputs(x, w);
  opd_client_tensor ax = upload_f32(a, (int64_t[]){M, K}, 2, x);
  opd_client_tensor aw = upload_f32(a, (int64_t[]){K, N}, 2, w);
  opd_client_tensor bx = upload_f32(b, (int64_t[]){M, K}, 2, x);
  opd_client_tensor bw = upload_f32(b, (int64_t[]){K, N}, 2, w);

  opd_client_tensor vals[2];
  opd_graph_builder *gb = capture_program(a, vals);
  opd_client_graph g1, g2, g3;
  ck_assert_int_eq(opd_graph_define(gb, vals, 2, &g1, NULL), 0);
  ck_assert_int_eq(opd_graph_define(gb, vals, 2, &g2, NULL), 0);
  expect_client_error(opd_graph_define(gb, vals, 2, &g3, NULL), OPD_ERESOURCE, "max_graphs");
  opd_graph_builder_free(gb);

  /* b never defined a's ids: NOT_FOUND, though a's graph of that id exists */
  opd_client_tensor out;
  expect_client_error(opd_graph_run(b, g1, (opd_client_tensor[]){bx, bw}, 2, &out, 1, NULL),
                      OPD_ENOENT, "not defined in this session");
  expect_client_error(opd_graph_release(b, g1), OPD_ENOENT, "not defined in this session");
  /* a's handles are not b's */
  expect_client_error(opd_graph_run(a, g1, (opd_client_tensor[]){ax, bw + 1000}, 2, &out, 1, NULL),
                      OPD_ENOENT, "input 1: unknown tensor handle");
  opd_client_tensor outs[2];
  ck_assert_int_eq(opd_graph_run(a, g1, (opd_client_tensor[]){ax, aw}, 2, outs, 2, NULL), 0);
  opd_client_close(b);
  opd_client_close(a);
  opd_server_stop(s);
}
END_TEST

/* Closing a connection releases its graphs and the outputs its runs made: the CPU bytes in
 * use return to what they were with the compiled graph cached (its planned buffers are the
 * cache's). */
START_TEST(test_disconnect_releases) {
  opd_server *s = start_daemon(NULL);
  float x[M * K], w[K * N];
  program_inputs(x, w);
  uint64_t baseline = 0;
  for (int round = 0; round < 3; round++) {
    opd_client *c = connect_daemon(s);
    opd_client_tensor tx = upload_f32(c, (int64_t[]){M, K}, 2, x);
    opd_client_tensor tw = upload_f32(c, (int64_t[]){K, N}, 2, w);
    opd_client_tensor vals[2];
    opd_graph_builder *b = capture_program(c, vals);
    opd_client_graph g[3];
    for (int i = 0; i < 3; i++) ck_assert_int_eq(opd_graph_define(b, vals, 2, &g[i], NULL), 0);
    opd_graph_builder_free(b);
    for (int i = 0; i < 3; i++) {
      opd_client_tensor outs[2];
      ck_assert_int_eq(opd_graph_run(c, g[i], (opd_client_tensor[]){tx, tw}, 2, outs, 2, NULL), 0);
    }
    opd_client_close(c); /* graphs and outputs still held */
    if (round == 0) {
      nanosleep(&(struct timespec){0, 200000000}, NULL);
      baseline = cpu_in_use();
    } else {
      expect_in_use(baseline);
    }
  }
  opd_server_stop(s);
}
END_TEST

/* A run's outputs are charged to the session: past max_bytes_held it fails whole. */
START_TEST(test_run_charged_to_budget) {
  opd_server *s = start_daemon(&(daemon_limits){.max_bytes_held = 64 << 10});
  opd_client *c = connect_daemon(s);
  float col[256], row[256];
  for (int i = 0; i < 256; i++) col[i] = row[i] = (float)i;
  opd_client_tensor a = upload_f32(c, (int64_t[]){256, 1}, 2, col);
  opd_client_tensor b = upload_f32(c, (int64_t[]){1, 256}, 2, row);
  opd_graph_builder *gb;
  ck_assert_int_eq(opd_graph_builder_new(c, &gb), 0);
  opd_client_tensor x, y, outer;
  ck_assert_int_eq(opd_graph_input(gb, OPD_FLOAT32, (int64_t[]){256, 1}, 2, NULL, false, &x), 0);
  ck_assert_int_eq(opd_graph_input(gb, OPD_FLOAT32, (int64_t[]){1, 256}, 2, NULL, false, &y), 0);
  ck_assert_int_eq(opd_graph_node(gb, "aten::mm",
                                  (opd_client_value[]){opd_cv_tensor(x), opd_cv_tensor(y)}, 2,
                                  &outer),
                   0);
  opd_client_graph g;
  ck_assert_int_eq(opd_graph_define(gb, &outer, 1, &g, NULL), 0);
  opd_graph_builder_free(gb);
  uint64_t before = cpu_in_use();
  opd_client_tensor out;
  expect_client_error(opd_graph_run(c, g, (opd_client_tensor[]){a, b}, 2, &out, 1, NULL),
                      OPD_ERESOURCE, "run_graph");
  ck_assert_uint_eq(cpu_in_use(), before);
  /* the session goes on: a small call still runs */
  opd_client_tensor n;
  ck_assert_int_eq(opd_neg(c, a, &n), 0);
  opd_client_close(c);
  opd_server_stop(s);
}
END_TEST

/* ---- isolation between sessions ([Note: A compiled graph's memory never reaches a caller]
 * in graph/src/exec/outputs.c, [Note: The charge of a graph definition] in server/src/graphs.c) */

/* contiguous(mul(add(t(x), t(x)), .)) of a [3, 4] x: the product is a planned buffer of the
 * compiled graph, which `contiguous` returns a view of at run time. */
static opd_client_graph define_planned(opd_client *c, bool *hit) {
  opd_graph_builder *b;
  ck_assert_int_eq(opd_graph_builder_new(c, &b), 0);
  opd_client_tensor x, t, a, m, out;
  ck_assert_int_eq(opd_graph_input(b, OPD_FLOAT32, (int64_t[]){3, 4}, 2, NULL, false, &x), 0);
  ck_assert_int_eq(opd_graph_node(b, "aten::t", (opd_client_value[]){opd_cv_tensor(x)}, 1, &t), 0);
  ck_assert_int_eq(opd_graph_node(b, "aten::add.Tensor",
                                  (opd_client_value[]){opd_cv_tensor(t), opd_cv_tensor(t)}, 2, &a),
                   0);
  ck_assert_int_eq(opd_graph_node(b, "aten::mul.Tensor",
                                  (opd_client_value[]){opd_cv_tensor(a), opd_cv_tensor(a)}, 2, &m),
                   0);
  ck_assert_int_eq(
      opd_graph_node(b, "aten::contiguous", (opd_client_value[]){opd_cv_tensor(m)}, 1, &out), 0);
  opd_client_graph g;
  opd_client_graph_info info;
  ck_assert_msg(opd_graph_define(b, &out, 1, &g, &info) == 0, "define: %s",
                opd_client_last_error());
  opd_graph_builder_free(b);
  *hit = info.cache_hit;
  return g;
}

/* (2 x[j][i])^2 for element k of the [4, 3] result. */
static void check_planned_result(opd_client *c, opd_client_tensor r, const float *x,
                                 const char *who) {
  float got[12];
  ck_assert_int_eq(opd_client_download(c, r, got, sizeof got, NULL), 0);
  for (int k = 0; k < 12; k++) {
    float s = 2.0f * x[(k % 3) * 4 + k / 3];
    ck_assert_msg(got[k] == s * s, "%s: element %d: %g, expected %g", who, k, got[k], s * s);
  }
}

START_TEST(test_sessions_never_share_graph_memory) {
  opd_server *s = start_daemon(NULL);
  opd_client *a = connect_daemon(s), *b = connect_daemon(s);
  float xa[12], xb[12];
  for (int i = 0; i < 12; i++) {
    xa[i] = (float)(i + 1);
    xb[i] = (float)(i % 5) - 7.0f;
  }
  opd_client_tensor ta = upload_f32(a, (int64_t[]){3, 4}, 2, xa);
  opd_client_tensor tb = upload_f32(b, (int64_t[]){3, 4}, 2, xb);
  bool hit;
  opd_client_graph ga = define_planned(a, &hit);
  ck_assert(!hit);
  opd_client_tensor ra = 0, rb = 0, w;
  for (int i = 0; i < 8; i++) /* past the runs that check the fused group: it runs fused */
    ck_assert_int_eq(opd_graph_run(a, ga, &ta, 1, &ra, 1, NULL), 0);
  opd_client_graph gb = define_planned(b, &hit);
  ck_assert(hit); /* one compiled graph, shared */
  for (int i = 0; i < 8; i++) ck_assert_int_eq(opd_graph_run(b, gb, &tb, 1, &rb, 1, NULL), 0);
  check_planned_result(a, ra, xa, "A after B's runs");
  check_planned_result(b, rb, xb, "B");
  ck_assert_int_eq(opd_fill_(a, ra, opd_cs_double(-3.0), &w), 0); /* A writes its result */
  check_planned_result(b, rb, xb, "B after A wrote its result");
  ck_assert_int_eq(opd_graph_run(b, gb, &tb, 1, &rb, 1, NULL), 0);
  check_planned_result(b, rb, xb, "B's run after A wrote its result");
  opd_client_close(b);
  opd_client_close(a);
  opd_server_stop(s);
}
END_TEST

/* A graph of n nodes, each an add.Scalar of its own constant (no two alike: no cache hit). */
static int define_chain(opd_client *c, int n, double seed, opd_client_graph *g) {
  opd_graph_builder *b;
  ck_assert_int_eq(opd_graph_builder_new(c, &b), 0);
  opd_client_tensor v;
  ck_assert_int_eq(opd_graph_input(b, OPD_FLOAT32, (int64_t[]){4}, 1, NULL, false, &v), 0);
  for (int i = 0; i < n; i++)
    ck_assert_int_eq(
        opd_graph_node(b, "aten::add.Scalar",
                       (opd_client_value[]){opd_cv_tensor(v), opd_cv_double(seed + i * 1e-3)}, 2,
                       &v),
        0);
  int rc = opd_graph_define(b, &v, 1, g, NULL);
  opd_graph_builder_free(b);
  return rc;
}

/* Graph definitions are charged to the session before they are compiled: a session past
 * max_bytes_held is refused with RESOURCE_EXHAUSTED naming it, releasing a graph gives its
 * charge back, and another session is not affected. */
START_TEST(test_graph_definitions_charged) {
  opd_server *s = start_daemon(&(daemon_limits){.max_bytes_held = 16 << 20});
  opd_client *a = connect_daemon(s), *b = connect_daemon(s);
  opd_client_graph g[64];
  int defined = 0, rc = 0;
  while (defined < 64 && (rc = define_chain(a, 1000, defined, &g[defined])) == 0) defined++;
  expect_client_error(rc, OPD_ERESOURCE, "max_bytes_held");
  ck_assert_int_ge(defined, 1);
  ck_assert_int_lt(defined, 20); /* megabytes a graph: far fewer than max_graphs */
  opd_client_graph more;
  ck_assert_int_eq(define_chain(b, 1000, 0.5, &more), 0); /* b is charged on its own */
  /* releasing gives the charge back (two graphs: they differ by a few bytes of text) */
  ck_assert_int_eq(opd_graph_release(a, g[0]), 0);
  ck_assert_int_eq(opd_graph_release(a, g[1]), 0);
  ck_assert_msg(define_chain(a, 1000, 1000.0, &g[0]) == 0, "after a release: %s",
                opd_client_last_error());
  /* a cache hit (b's graph) is charged as the definition it repeats */
  int hits = 0;
  while (hits < 64 && (rc = define_chain(a, 1000, 0.5, &g[1 + hits])) == 0) hits++;
  expect_client_error(rc, OPD_ERESOURCE, "max_bytes_held");
  ck_assert_int_lt(hits, 4);
  opd_client_close(b);
  opd_client_close(a);
  opd_server_stop(s);
}
END_TEST

/* The text of the one file in dir (malloc'd), or NULL; *mode its permission bits. */
static char *only_file(const char *dir, char *name, size_t cap, unsigned *mode) {
  DIR *d = opendir(dir);
  ck_assert_ptr_nonnull(d);
  struct dirent *e;
  char *text = NULL;
  int files = 0;
  while ((e = readdir(d))) {
    if (e->d_name[0] == '.') continue;
    files++;
    snprintf(name, cap, "%s", e->d_name);
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
    struct stat st;
    ck_assert_int_eq(stat(path, &st), 0);
    *mode = st.st_mode & 0777;
    FILE *f = fopen(path, "r");
    ck_assert_ptr_nonnull(f);
    text = calloc(1, (size_t)st.st_size + 1);
    ck_assert_uint_eq(fread(text, 1, (size_t)st.st_size, f), (size_t)st.st_size);
    fclose(f);
  }
  closedir(d);
  ck_assert_int_eq(files, 1);
  return text;
}

static void remove_dir(const char *dir) {
  DIR *d = opendir(dir);
  struct dirent *e;
  while (d && (e = readdir(d))) {
    if (e->d_name[0] == '.') continue;
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
    unlink(path);
  }
  if (d) closedir(d);
  rmdir(dir);
}

/* graph_dump_dir: a newly compiled graph's IR after every pass, in a file named by its key
 * (mode 0600, the directory made 0700); a cache hit writes nothing; graph_dump_max_bytes cuts
 * a dump short, saying so. */
START_TEST(test_dumps) {
  char base[] = "/tmp/opd-graph-dumps-XXXXXX", dir[64];
  ck_assert_ptr_nonnull(mkdtemp(base));
  snprintf(dir, sizeof dir, "%s/dumps", base);
  for (int round = 0; round < 2; round++) {
    opd_server *s = start_daemon(
        &(daemon_limits){.graph_dump_dir = dir, .graph_dump_max_bytes = round ? 300 : 0});
    opd_client *c = connect_daemon(s);
    opd_client_tensor vals[2];
    opd_graph_builder *b = capture_program(c, vals);
    opd_client_graph g, g2;
    opd_client_graph_info info;
    ck_assert_int_eq(opd_graph_define(b, vals, 2, &g, &info), 0);
    ck_assert_int_eq(opd_graph_define(b, vals, 2, &g2, NULL), 0); /* a hit: no second dump */
    opd_graph_builder_free(b);
    struct stat st;
    ck_assert_int_eq(stat(dir, &st), 0);
    ck_assert_uint_eq(st.st_mode & 0777, 0700);
    char name[256], want[64];
    unsigned mode = 0;
    char *text = only_file(dir, name, sizeof name, &mode);
    snprintf(want, sizeof want, "graph-%s.txt", info.key);
    ck_assert_str_eq(name, want);
    ck_assert_uint_eq(mode, 0600);
    if (round == 0) {
      ck_assert_ptr_nonnull(strstr(text, "# after pass softmax_pattern (version 1, hits 1)"));
      ck_assert_ptr_nonnull(strstr(text, "aten::_softmax"));
      ck_assert_ptr_null(strstr(text, "cut"));
    } else {
      ck_assert_ptr_nonnull(strstr(text, "# ... cut: graph_dump_max_bytes reached"));
      ck_assert_uint_le(strlen(text), 300 + 64);
    }
    free(text);
    opd_client_close(c);
    opd_server_stop(s);
    remove_dir(dir);
  }
  rmdir(base);
}
END_TEST

/* ---- raw frames: what the client library would not send ---- */

static int raw_connect(opd_server *s) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  ck_assert_int_ge(fd, 0);
  struct sockaddr_in sa = {.sin_family = AF_INET,
                           .sin_port = htons((uint16_t)opd_server_listener_port(s, 0))};
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ck_assert_int_eq(connect(fd, (struct sockaddr *)&sa, sizeof sa), 0);
  struct timeval tv = {20, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  return fd;
}

static void raw_send_bytes(int fd, const uint8_t *body, size_t n) {
  uint8_t h[4] = {(uint8_t)n, (uint8_t)(n >> 8), (uint8_t)(n >> 16), (uint8_t)(n >> 24)};
  ck_assert_int_eq(send(fd, h, 4, MSG_NOSIGNAL), 4);
  for (size_t off = 0; off < n;) {
    ssize_t k = send(fd, body + off, n - off, MSG_NOSIGNAL);
    ck_assert_msg(k > 0, "send: %s", strerror(errno));
    off += (size_t)k;
  }
}

static void raw_send(int fd, const Opd__V1__Request *r) {
  size_t n = opd__v1__request__get_packed_size(r);
  uint8_t *buf = malloc(n ? n : 1);
  opd__v1__request__pack(r, buf);
  raw_send_bytes(fd, buf, n);
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

static Opd__V1__Response *raw_recv(int fd) {
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
  int fd = raw_connect(s);
  Opd__V1__Hello h = OPD__V1__HELLO__INIT;
  h.protocol_version = 1;
  h.client_name = "test_graph_server";
  Opd__V1__Request r = OPD__V1__REQUEST__INIT;
  r.id = 1;
  r.body_case = OPD__V1__REQUEST__BODY_HELLO;
  r.hello = &h;
  raw_send(fd, &r);
  Opd__V1__Response *resp = raw_recv(fd);
  ck_assert_int_eq(resp->body_case, OPD__V1__RESPONSE__BODY_HELLO);
  opd__v1__response__free_unpacked(resp, NULL);
  return fd;
}

static void expect_raw_error(int fd, uint64_t id, Opd__V1__ErrorCode code, const char *needle) {
  Opd__V1__Response *r = raw_recv(fd);
  ck_assert_uint_eq(r->id, id);
  ck_assert_msg(r->body_case == OPD__V1__RESPONSE__BODY_ERROR, "request %llu: no error (%d)",
                (unsigned long long)id, (int)r->body_case);
  ck_assert_msg(r->error->code == code, "request %llu: code %d, expected %d: %s",
                (unsigned long long)id, (int)r->error->code, (int)code, r->error->message);
  ck_assert_msg(strstr(r->error->message, needle), "request %llu: '%s' lacks '%s'",
                (unsigned long long)id, r->error->message, needle);
  opd__v1__response__free_unpacked(r, NULL);
}

/* One graph of up to 4 nodes of up to 3 arguments, built in place. */
typedef struct raw_graph {
  Opd__V1__DefineGraph d;
  Opd__V1__ValueSpec specs[2], *spec_ptrs[2];
  Opd__V1__GraphNode nodes[4], *node_ptrs[4];
  Opd__V1__IValue args[4][3], *arg_ptrs[4][3];
  Opd__V1__ValueRef refs[4][3], out, *out_ptr;
  int64_t shape[2][4];
} raw_graph;

/* inputs: two float32 tensors of shape {2, 3} */
static void raw_graph_init(raw_graph *g, uint64_t id) {
  memset(g, 0, sizeof *g);
  opd__v1__define_graph__init(&g->d);
  g->d.graph = id;
  for (int i = 0; i < 2; i++) {
    opd__v1__value_spec__init(&g->specs[i]);
    g->specs[i].dtype = OPD__V1__DTYPE__FLOAT32;
    g->shape[i][0] = 2, g->shape[i][1] = 3;
    g->specs[i].shape = g->shape[i];
    g->specs[i].n_shape = 2;
    g->spec_ptrs[i] = &g->specs[i];
  }
  g->d.n_inputs = 2;
  g->d.inputs = g->spec_ptrs;
  g->d.nodes = g->node_ptrs;
  opd__v1__value_ref__init(&g->out);
  g->out_ptr = &g->out;
  g->d.outputs = &g->out_ptr;
  g->d.n_outputs = 1;
}

static Opd__V1__IValue *raw_node(raw_graph *g, const char *op, size_t nargs) {
  size_t j = g->d.n_nodes++;
  opd__v1__graph_node__init(&g->nodes[j]);
  g->nodes[j].op = (char *)op;
  g->nodes[j].n_args = nargs;
  g->nodes[j].args = g->arg_ptrs[j];
  for (size_t i = 0; i < nargs; i++) {
    opd__v1__ivalue__init(&g->args[j][i]);
    g->arg_ptrs[j][i] = &g->args[j][i];
  }
  g->node_ptrs[j] = &g->nodes[j];
  g->out.position = (uint32_t)(g->d.n_inputs + j);
  return g->args[j];
}

static void raw_ref(raw_graph *g, Opd__V1__IValue *v, uint32_t position) {
  Opd__V1__ValueRef *r = &g->refs[g->d.n_nodes - 1][v - g->args[g->d.n_nodes - 1]];
  opd__v1__value_ref__init(r);
  r->position = position;
  v->value_case = OPD__V1__IVALUE__VALUE_REF;
  v->ref = r;
}

static void raw_define(int fd, uint64_t id, raw_graph *g) {
  Opd__V1__Request r = OPD__V1__REQUEST__INIT;
  r.id = id;
  r.body_case = OPD__V1__REQUEST__BODY_DEFINE_GRAPH;
  r.define_graph = &g->d;
  raw_send(fd, &r);
}

/* A good graph: node 0 = add(input 0, input 1); the daemon keeps serving. */
static void expect_good_define(int fd, uint64_t id, uint64_t graph) {
  raw_graph g;
  raw_graph_init(&g, graph);
  Opd__V1__IValue *a = raw_node(&g, "aten::add.Tensor", 2);
  raw_ref(&g, &a[0], 0);
  raw_ref(&g, &a[1], 1);
  raw_define(fd, id, &g);
  Opd__V1__Response *r = raw_recv(fd);
  ck_assert_uint_eq(r->id, id);
  ck_assert_msg(r->body_case == OPD__V1__RESPONSE__BODY_DEFINE_GRAPH, "define failed: %s",
                r->body_case == OPD__V1__RESPONSE__BODY_ERROR ? r->error->message : "?");
  ck_assert_uint_eq(r->define_graph->graph, graph);
  opd__v1__response__free_unpacked(r, NULL);
}

START_TEST(test_bad_define) {
  opd_server *s = start_daemon(NULL);
  int fd = raw_session(s);
  uint64_t id = 10;
  raw_graph g;

  /* a forward reference: node 0 uses position 3 (node 1) */
  raw_graph_init(&g, 1);
  Opd__V1__IValue *a = raw_node(&g, "aten::neg", 1);
  raw_ref(&g, &a[0], 3);
  a = raw_node(&g, "aten::neg", 1);
  raw_ref(&g, &a[0], 0);
  raw_define(fd, ++id, &g);
  expect_raw_error(fd, id, EC(INVALID_ARGUMENT), "graph node 0 (aten::neg)");

  /* a self reference: node 0 is position 2 */
  raw_graph_init(&g, 1);
  a = raw_node(&g, "aten::neg", 1);
  raw_ref(&g, &a[0], 2);
  raw_define(fd, ++id, &g);
  expect_raw_error(fd, id, EC(INVALID_ARGUMENT), "refers to the node itself");

  /* a position out of range, and an output of a node that has one */
  raw_graph_init(&g, 1);
  a = raw_node(&g, "aten::neg", 1);
  raw_ref(&g, &a[0], 4000000000u);
  raw_define(fd, ++id, &g);
  expect_raw_error(fd, id, EC(INVALID_ARGUMENT), "graph node 0 (aten::neg)");
  raw_graph_init(&g, 1);
  a = raw_node(&g, "aten::neg", 1);
  raw_ref(&g, &a[0], 0);
  a = raw_node(&g, "aten::neg", 1);
  raw_ref(&g, &a[0], 2);
  g.refs[1][0].output = 1;
  raw_define(fd, ++id, &g);
  expect_raw_error(fd, id, EC(INVALID_ARGUMENT), "graph node 1 (aten::neg)");

  /* an unknown operator, named with its node */
  raw_graph_init(&g, 1);
  a = raw_node(&g, "aten::neg", 1);
  raw_ref(&g, &a[0], 0);
  a = raw_node(&g, "aten::no_such_op", 1);
  raw_ref(&g, &a[0], 2);
  raw_define(fd, ++id, &g);
  expect_raw_error(fd, id, EC(NOT_FOUND), "graph node 1: unknown operator 'aten::no_such_op'");

  /* wrong argument types: a string for a Tensor, a Tensor for alpha */
  raw_graph_init(&g, 1);
  a = raw_node(&g, "aten::add.Tensor", 2);
  raw_ref(&g, &a[0], 0);
  a[1].value_case = OPD__V1__IVALUE__VALUE_S;
  a[1].s = "two";
  raw_define(fd, ++id, &g);
  expect_raw_error(fd, id, EC(INVALID_ARGUMENT), "graph node 0 (aten::add.Tensor)");
  raw_graph_init(&g, 1);
  a = raw_node(&g, "aten::add.Tensor", 3);
  raw_ref(&g, &a[0], 0);
  raw_ref(&g, &a[1], 1);
  raw_ref(&g, &a[2], 1);
  raw_define(fd, ++id, &g);
  expect_raw_error(fd, id, EC(INVALID_ARGUMENT), "argument 'alpha'");

  /* a handle in a node */
  raw_graph_init(&g, 1);
  a = raw_node(&g, "aten::neg", 1);
  a[0].value_case = OPD__V1__IVALUE__VALUE_TENSOR;
  a[0].tensor = 7;
  raw_define(fd, ++id, &g);
  expect_raw_error(fd, id, EC(INVALID_ARGUMENT), "a graph holds no handle");

  /* a shape whose element count overflows */
  raw_graph_init(&g, 1);
  g.shape[0][0] = INT64_C(1) << 40;
  g.shape[0][1] = INT64_C(1) << 40;
  a = raw_node(&g, "aten::neg", 1);
  raw_ref(&g, &a[0], 0);
  raw_define(fd, ++id, &g);
  expect_raw_error(fd, id, EC(INVALID_ARGUMENT), "graph input 0");

  /* a shape error found by the Meta kernel, naming the node and its operator */
  raw_graph_init(&g, 1);
  a = raw_node(&g, "aten::neg", 1);
  raw_ref(&g, &a[0], 0);
  a = raw_node(&g, "aten::mm", 2);
  raw_ref(&g, &a[0], 2);
  raw_ref(&g, &a[1], 1);
  raw_define(fd, ++id, &g);
  expect_raw_error(fd, id, EC(INVALID_ARGUMENT), "graph node 1 (aten::mm)");

  /* graph id 0, then an id in use */
  expect_good_define(fd, ++id, 5);
  raw_graph_init(&g, 0);
  a = raw_node(&g, "aten::neg", 1);
  raw_ref(&g, &a[0], 0);
  raw_define(fd, ++id, &g);
  expect_raw_error(fd, id, EC(INVALID_ARGUMENT), "graph id 0");
  g.d.graph = 5;
  raw_define(fd, ++id, &g);
  expect_raw_error(fd, id, EC(INVALID_ARGUMENT), "already defined in this session");

  expect_good_define(fd, ++id, 6);
  close(fd);
  opd_server_stop(s);
}
END_TEST

/* 1,000,000 nodes: refused by their count before they are decoded. */
START_TEST(test_million_nodes) {
  opd_server *s = start_daemon(&(daemon_limits){.max_frame_bytes = 16 << 20});
  int fd = raw_session(s);
  enum { NODES = 1000000 };
  /* Request{id = 2, define_graph = {graph = 1, nodes: NODES x {op: "aten::neg"}}} */
  static const uint8_t node[] = {0x1a, 11, 0x0a, 9, 'a', 't', 'e', 'n', ':', ':', 'n', 'e', 'g'};
  size_t body = 2 + (size_t)NODES * sizeof node;
  uint8_t *buf = malloc(body + 16), *p = buf;
  *p++ = 0x08, *p++ = 2;            /* id */
  *p++ = 10 << 3 | 2;               /* define_graph */
  for (size_t v = body;; v >>= 7) { /* its length */
    *p++ = (uint8_t)(v & 0x7f) | (v >= 0x80 ? 0x80 : 0);
    if (v < 0x80) break;
  }
  *p++ = 0x08, *p++ = 1; /* graph = 1 */
  for (size_t j = 0; j < NODES; j++, p += sizeof node) memcpy(p, node, sizeof node);
  raw_send_bytes(fd, buf, (size_t)(p - buf));
  free(buf);
  expect_raw_error(fd, 2, EC(INVALID_ARGUMENT), "1000000 nodes, more than max_graph_nodes");
  expect_good_define(fd, 3, 1);
  close(fd);
  opd_server_stop(s);
}
END_TEST

static uint64_t raw_upload(int fd, uint64_t id, Opd__V1__DType dtype, const int64_t *shape,
                           size_t ndim, size_t nbytes) {
  Opd__V1__Upload u = OPD__V1__UPLOAD__INIT;
  u.dtype = dtype;
  u.shape = (int64_t *)shape;
  u.n_shape = ndim;
  u.nbytes = nbytes;
  Opd__V1__Request r = OPD__V1__REQUEST__INIT;
  r.id = id;
  r.body_case = OPD__V1__REQUEST__BODY_UPLOAD;
  r.upload = &u;
  raw_send(fd, &r);
  uint8_t *zeros = calloc(1, nbytes ? nbytes : 1);
  for (size_t off = 0; off < nbytes;) {
    ssize_t k = send(fd, zeros + off, nbytes - off, MSG_NOSIGNAL);
    ck_assert(k > 0);
    off += (size_t)k;
  }
  free(zeros);
  Opd__V1__Response *resp = raw_recv(fd);
  ck_assert_int_eq(resp->body_case, OPD__V1__RESPONSE__BODY_UPLOAD);
  uint64_t h = resp->upload->handle;
  opd__v1__response__free_unpacked(resp, NULL);
  return h;
}

static void raw_run(int fd, uint64_t id, uint64_t graph, uint64_t *handles, size_t n) {
  Opd__V1__RunGraph run = OPD__V1__RUN_GRAPH__INIT;
  run.graph = graph;
  run.inputs = handles;
  run.n_inputs = n;
  Opd__V1__Request r = OPD__V1__REQUEST__INIT;
  r.id = id;
  r.body_case = OPD__V1__REQUEST__BODY_RUN_GRAPH;
  r.run_graph = &run;
  raw_send(fd, &r);
}

START_TEST(test_bad_run) {
  opd_server *s = start_daemon(NULL);
  int fd = raw_session(s);
  expect_good_define(fd, 2, 1); /* add of two float32 {2, 3} */
  uint64_t f23 = raw_upload(fd, 3, OPD__V1__DTYPE__FLOAT32, (int64_t[]){2, 3}, 2, 24);
  uint64_t f32 = raw_upload(fd, 4, OPD__V1__DTYPE__FLOAT32, (int64_t[]){3, 2}, 2, 24);
  uint64_t i23 = raw_upload(fd, 5, OPD__V1__DTYPE__INT64, (int64_t[]){2, 3}, 2, 48);

  raw_run(fd, 10, 1, (uint64_t[]){f23}, 1);
  expect_raw_error(fd, 10, EC(INVALID_ARGUMENT), "1 input handles given, the graph takes 2");
  raw_run(fd, 11, 1, (uint64_t[]){f23, f23, f23}, 3);
  expect_raw_error(fd, 11, EC(INVALID_ARGUMENT), "3 input handles given");
  raw_run(fd, 12, 1, (uint64_t[]){f23, i23}, 2);
  expect_raw_error(fd, 12, EC(INVALID_ARGUMENT), "graph input 1: expected");
  raw_run(fd, 13, 1, (uint64_t[]){f32, f23}, 2);
  expect_raw_error(fd, 13, EC(INVALID_ARGUMENT), "graph input 0: expected");
  raw_run(fd, 14, 1, (uint64_t[]){f23, 999}, 2);
  expect_raw_error(fd, 14, EC(NOT_FOUND), "input 1: unknown tensor handle 999");
  raw_run(fd, 15, 2, (uint64_t[]){f23, f23}, 2);
  expect_raw_error(fd, 15, EC(NOT_FOUND), "graph 2 is not defined in this session");

  /* a run right behind a define that fails: NOT_FOUND, in order */
  raw_graph g;
  raw_graph_init(&g, 3);
  Opd__V1__IValue *a = raw_node(&g, "aten::no_such_op", 1);
  raw_ref(&g, &a[0], 0);
  raw_define(fd, 16, &g);
  raw_run(fd, 17, 3, (uint64_t[]){f23, f23}, 2);
  expect_raw_error(fd, 16, EC(NOT_FOUND), "unknown operator");
  expect_raw_error(fd, 17, EC(NOT_FOUND), "graph 3 is not defined in this session");

  /* the good run still works, then a released graph is NOT_FOUND */
  raw_run(fd, 18, 1, (uint64_t[]){f23, f23}, 2);
  Opd__V1__Response *r = raw_recv(fd);
  ck_assert_msg(r->body_case == OPD__V1__RESPONSE__BODY_CALL, "run failed: %s",
                r->body_case == OPD__V1__RESPONSE__BODY_ERROR ? r->error->message : "?");
  ck_assert_uint_eq(r->call->n_results, 1);
  opd__v1__response__free_unpacked(r, NULL);
  Opd__V1__ReleaseGraph rel = OPD__V1__RELEASE_GRAPH__INIT;
  rel.graphs = (uint64_t[]){1};
  rel.n_graphs = 1;
  Opd__V1__Request req = OPD__V1__REQUEST__INIT;
  req.id = 19;
  req.body_case = OPD__V1__REQUEST__BODY_RELEASE_GRAPH;
  req.release_graph = &rel;
  raw_send(fd, &req);
  r = raw_recv(fd);
  ck_assert_int_eq(r->body_case, OPD__V1__RESPONSE__BODY_ACK);
  opd__v1__response__free_unpacked(r, NULL);
  raw_run(fd, 20, 1, (uint64_t[]){f23, f23}, 2);
  expect_raw_error(fd, 20, EC(NOT_FOUND), "graph 1 is not defined in this session");
  close(fd);
  opd_server_stop(s);
}
END_TEST

Suite *opd_test_graph_server_suite(void) {
  Suite *s = suite_create("graph_server");
  TCase *api = tcase_create("client_api");
  tcase_set_timeout(api, 60);
  tcase_add_test(api, test_capture_define_run_release);
  tcase_add_test(api, test_boxed_builder_pipelined);
  tcase_add_test(api, test_graphs_per_session);
  tcase_add_test(api, test_disconnect_releases);
  tcase_add_test(api, test_run_charged_to_budget);
  tcase_add_test(api, test_dumps);
  tcase_add_test(api, test_hot_registration_invalidates);
  tcase_add_test(api, test_sessions_never_share_graph_memory);
  tcase_add_test(api, test_graph_definitions_charged);
  suite_add_tcase(s, api);
  TCase *bad = tcase_create("bad_input");
  tcase_set_timeout(bad, 120);
  tcase_add_test(bad, test_bad_define);
  tcase_add_test(bad, test_million_nodes);
  tcase_add_test(bad, test_bad_run);
  suite_add_tcase(s, bad);
  return s;
}

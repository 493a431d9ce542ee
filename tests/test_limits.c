/* test_limits.c: memory limits are checked before memory is allocated ([Note: Memory
 * reserved before it is allocated] in opd/allocator.h) and strided downloads stream in
 * bounded chunks ([Note: Downloads of strided views] in server/src/gather.h), through a
 * daemon in this process and the client library. The daemon's CPU allocator is this
 * process's, so its peak shows what a request made the daemon allocate. */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "opd/allocator.h"
#include "opd/client.h"
#include "opd/dtype.h"
#include "opd/server.h"

#define MiB ((uint64_t)1 << 20)

static opd_server *start(uint64_t max_bytes_held, uint64_t max_bytes_total) {
  opd_server_config cfg;
  opd_server_config_init(&cfg);
  opd_server_config_clear_listen(&cfg);
  ck_assert_int_eq(opd_server_config_add_listen(&cfg, "tcp://127.0.0.1:0"), 0);
  cfg.workers = 2;
  cfg.max_bytes_held = max_bytes_held;
  cfg.max_bytes_total = max_bytes_total;
  opd_server *s;
  ck_assert_msg(opd_server_start(&cfg, &s) == 0, "%s", opd_last_error());
  opd_server_config_destroy(&cfg);
  return s;
}

static opd_client *connect_to(opd_server *s) {
  opd_client *c;
  ck_assert_msg(opd_client_connect(opd_server_listener_url(s, 0), NULL, &c) == 0, "%s",
                opd_client_last_error());
  return c;
}

/* aten::full(size, fill_value) of float32 on the CPU: 0 or the client's error code. */
static int full(opd_client *c, int64_t n, double value, opd_client_tensor *out) {
  opd_client_value args[] = {opd_cv_ints(&n, 1), opd_cv_double(value), opd_cv_dtype(OPD_FLOAT32)};
  return opd_client_call(c, "aten::full", args, 3, out, 1, NULL);
}

static uint64_t cpu_peak_since_reset(void) {
  opd_memory_stats st;
  opd_memory_stats_get(OPD_DEVICE_CPU, &st);
  return st.peak;
}

static uint64_t cpu_in_use(void) {
  opd_memory_stats st;
  opd_memory_stats_get(OPD_DEVICE_CPU, &st);
  return st.in_use;
}

static void expect_refused(int rc, const char *needle) {
  ck_assert_int_eq(rc, OPD_ERESOURCE);
  ck_assert_msg(strstr(opd_client_last_error(), needle), "'%s' lacks '%s'", opd_client_last_error(),
                needle);
}

/* The case: a 64 MiB session asks for 3 GiB; refused before a byte is allocated. */
START_TEST(test_session_limit_before_allocation) {
  opd_server *s = start(64 * MiB, 0);
  opd_client *c = connect_to(s);
  opd_memory_stats_reset_peak(OPD_DEVICE_CPU);
  uint64_t before = cpu_in_use();
  opd_client_tensor t;
  expect_refused(full(c, (int64_t)3 << 28, 1.0, &t), "max_bytes_held");
  ck_assert_uint_lt(cpu_peak_since_reset(), before + MiB);
  /* the session goes on, and what it is allowed still works */
  ck_assert_int_eq(full(c, 1 << 20, 2.0, &t), 0);
  float v[4];
  opd_client_tensor_info info;
  ck_assert_int_eq(opd_client_call(c, "aten::slice.Tensor",
                                   (opd_client_value[]){opd_cv_tensor(t), opd_cv_int(0),
                                                        opd_cv_int(0), opd_cv_int(4)},
                                   4, &t, 1, NULL),
                   0);
  ck_assert_int_eq(opd_client_download(c, t, v, sizeof v, &info), 0);
  ck_assert(v[0] == 2.0f && v[3] == 2.0f);
  opd_client_close(c);
  opd_server_stop(s);
}
END_TEST

/* The daemon-wide cap refuses what no session limit would. */
START_TEST(test_total_limit_before_allocation) {
  opd_server *s = start(UINT64_C(1) << 40, 32 * MiB);
  opd_client *c = connect_to(s);
  opd_memory_stats_reset_peak(OPD_DEVICE_CPU);
  uint64_t before = cpu_in_use();
  opd_client_tensor t;
  expect_refused(full(c, 16 << 20, 1.0, &t), "limit"); /* 64 MiB */
  ck_assert_uint_lt(cpu_peak_since_reset(), before + MiB);
  ck_assert_int_eq(full(c, 1 << 20, 1.0, &t), 0); /* 4 MiB */
  opd_client_close(c);
  opd_server_stop(s);
}
END_TEST

/* A result keeps its charge as a held handle; a released one gives it back. */
START_TEST(test_results_keep_their_charge) {
  opd_server *s = start(MiB, 0);
  opd_client *c = connect_to(s);
  opd_client_tensor a, b;
  ck_assert_int_eq(full(c, 150 << 10, 1.0, &a), 0); /* 600 KiB */
  expect_refused(full(c, 150 << 10, 1.0, &b), "max_bytes_held");
  ck_assert_int_eq(opd_client_release(c, &a, 1), 0);
  ck_assert_int_eq(full(c, 150 << 10, 1.0, &b), 0);
  opd_client_close(c);
  opd_server_stop(s);
}
END_TEST

/* Intermediates are refunded as they are freed: many calls that make them leave no charge
 * behind, so the whole limit stays usable. */
START_TEST(test_intermediates_refunded) {
  opd_server *s = start(MiB, 0);
  opd_client *c = connect_to(s);
  int64_t shape[] = {64, 512};
  float *x = calloc(64 * 512, sizeof *x);
  opd_client_tensor h;
  ck_assert_int_eq(opd_client_upload(c, OPD_FLOAT32, shape, 2, x, 64 * 512 * sizeof *x, NULL, &h),
                   0); /* 128 KiB held */
  for (int i = 0; i < 50; i++) {
    opd_client_tensor y;
    /* softmax through its composite form: exp, sum, div, each a new tensor */
    opd_client_value args[] = {opd_cv_tensor(h), opd_cv_int(1), opd_cv_none()};
    ck_assert_int_eq(opd_client_call(c, "aten::softmax.int", args, 3, &y, 1, NULL), 0);
    ck_assert_int_eq(opd_client_release(c, &y, 1), 0);
  }
  opd_client_tensor big;
  ck_assert_int_eq(full(c, 200 << 10, 0.0, &big), 0); /* 800 KiB: 928 KiB of 1 MiB held */
  free(x);
  opd_client_close(c);
  opd_server_stop(s);
}
END_TEST

/* The expand of one element: the download streams 64 MiB while the session holds 4
 * bytes and the daemon never holds more than a chunk of it. */
START_TEST(test_expanded_download_streams) {
  opd_server *s = start(MiB, 8 * MiB);
  opd_client *c = connect_to(s);
  int64_t one = 1, n = (int64_t)1 << 24;
  float seven = 7.0f;
  opd_client_tensor x, e;
  ck_assert_int_eq(opd_client_upload(c, OPD_FLOAT32, &one, 1, &seven, 4, NULL, &x), 0);
  opd_client_value args[] = {opd_cv_tensor(x), opd_cv_ints(&n, 1), opd_cv_bool(false)};
  ck_assert_int_eq(opd_client_call(c, "aten::expand", args, 3, &e, 1, NULL), 0);
  opd_memory_stats_reset_peak(OPD_DEVICE_CPU);
  uint64_t before = cpu_in_use();
  float *out = malloc((size_t)n * sizeof *out);
  opd_client_tensor_info info;
  ck_assert_int_eq(opd_client_download(c, e, out, (size_t)n * sizeof *out, &info), 0);
  ck_assert_uint_eq(info.nbytes, (uint64_t)n * 4);
  ck_assert_uint_lt(cpu_peak_since_reset(), before + MiB);
  int64_t wrong = 0;
  for (int64_t i = 0; i < n; i++) wrong += out[i] != 7.0f;
  ck_assert_int_eq(wrong, 0);
  free(out);
  opd_client_close(c);
  opd_server_stop(s);
}
END_TEST

/* An expanded view whose byte count passes int64 is refused, not sent as 0 bytes. */
START_TEST(test_download_too_large_for_int64) {
  opd_server *s = start(MiB, 0);
  opd_client *c = connect_to(s);
  int64_t one = 1, n = (int64_t)1 << 61;
  double v = 1.0;
  opd_client_tensor x, e;
  ck_assert_int_eq(opd_client_upload(c, OPD_FLOAT64, &one, 1, &v, 8, NULL, &x), 0);
  opd_client_value args[] = {opd_cv_tensor(x), opd_cv_ints(&n, 1), opd_cv_bool(false)};
  ck_assert_int_eq(opd_client_call(c, "aten::expand", args, 3, &e, 1, NULL), 0);
  double out[4];
  ck_assert_int_eq(opd_client_download(c, e, out, sizeof out, NULL), OPD_EINVAL);
  ck_assert_ptr_nonnull(strstr(opd_client_last_error(), "overflow"));
  ck_assert_int_eq(opd_client_ping(c, "x", 1), 0);
  opd_client_close(c);
  opd_server_stop(s);
}
END_TEST

/* A transposed matrix of several chunks arrives in row-major order of the view, and a
 * request pipelined behind it is answered after it. */
START_TEST(test_transposed_download_in_chunks) {
  opd_server *s = start(64 * MiB, 0);
  opd_client *c = connect_to(s);
  enum { R = 600, C = 700 }; /* 1.6 MiB: seven chunks */
  float *x = malloc(R * C * sizeof *x), *out = malloc(R * C * sizeof *out);
  for (int i = 0; i < R * C; i++) x[i] = (float)i;
  int64_t shape[] = {R, C};
  opd_client_tensor h, t;
  ck_assert_int_eq(opd_client_upload(c, OPD_FLOAT32, shape, 2, x, R * C * sizeof *x, NULL, &h), 0);
  opd_client_value args[] = {opd_cv_tensor(h), opd_cv_int(0), opd_cv_int(1)};
  ck_assert_int_eq(opd_client_call(c, "aten::transpose.int", args, 3, &t, 1, NULL), 0);
  opd_future *d, *p;
  ck_assert_int_eq(opd_client_download_async(c, t, out, R * C * sizeof *out, NULL, NULL, &d), 0);
  ck_assert_int_eq(opd_client_ping_async(c, "after", 5, NULL, NULL, &p), 0);
  ck_assert_int_eq(opd_future_wait(d), 0);
  ck_assert_int_eq(opd_future_wait(p), 0);
  const opd_client_tensor_info *info = opd_future_tensor_info(d);
  ck_assert(info->ndim == 2 && info->shape[0] == C && info->shape[1] == R);
  int wrong = 0;
  for (int i = 0; i < C; i++)
    for (int j = 0; j < R; j++) wrong += out[i * R + j] != x[j * C + i];
  ck_assert_int_eq(wrong, 0);
  opd_future_free(d);
  opd_future_free(p);
  free(x);
  free(out);
  opd_client_close(c);
  opd_server_stop(s);
}
END_TEST

/* A client that leaves in the middle of a streamed download: the daemon frees the job and
 * its chunk, and serves the next client. */
START_TEST(test_client_leaves_mid_download) {
  opd_server *s = start(MiB, 0);
  opd_client *c = connect_to(s);
  int64_t one = 1, n = (int64_t)1 << 24;
  float seven = 7.0f;
  opd_client_tensor x, e;
  ck_assert_int_eq(opd_client_upload(c, OPD_FLOAT32, &one, 1, &seven, 4, NULL, &x), 0);
  opd_client_value args[] = {opd_cv_tensor(x), opd_cv_ints(&n, 1), opd_cv_bool(false)};
  ck_assert_int_eq(opd_client_call(c, "aten::expand", args, 3, &e, 1, NULL), 0);
  /* fire and forget: the library would allocate the buffer when the reply arrives */
  ck_assert_int_eq(opd_client_download_async(c, e, NULL, 0, NULL, NULL, NULL), 0);
  ck_assert_int_ge(opd_client_poll(c, 5), 0); /* the stream has begun, or soon will */
  opd_client_close(c);
  opd_client *c2 = connect_to(s);
  ck_assert_int_eq(opd_client_ping(c2, "x", 1), 0);
  opd_client_close(c2);
  opd_server_stop(s);
}
END_TEST

Suite *opd_test_limits_suite(void) {
  Suite *s = suite_create("limits");
  TCase *tc = tcase_create("limits");
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, test_session_limit_before_allocation);
  tcase_add_test(tc, test_total_limit_before_allocation);
  tcase_add_test(tc, test_results_keep_their_charge);
  tcase_add_test(tc, test_intermediates_refunded);
  tcase_add_test(tc, test_expanded_download_streams);
  tcase_add_test(tc, test_transposed_download_in_chunks);
  tcase_add_test(tc, test_download_too_large_for_int64);
  tcase_add_test(tc, test_client_leaves_mid_download);
  suite_add_tcase(s, tc);
  return s;
}

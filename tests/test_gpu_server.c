/* test_gpu_server.c: the daemon without a CUDA device (server/src/gpu.c): /v1/info reports
 * CUDA unavailable with a reason; an upload to cuda:0 and a call that would allocate on
 * cuda:0 are refused with UNAVAILABLE while the same session goes on serving CPU calls;
 * a synchronize succeeds; cuda_register on the admin socket answers "CUDA unavailable";
 * cuda_workers_per_device is checked. On a machine with a device these cases skip, saying
 * so (tests/gpu/run_device_checks.sh covers it there). And the scheduler's GPU pools, which
 * need no GPU: jobs of 8 sessions moving at random between the CPU pool and two GPU pools
 * each run on their device's pool, and every session's jobs run in order, one at a time;
 * and, on two fake devices, the sessions' streams: whichever pool runs a job, every device
 * it touches runs it on the session's one stream of that device, and the reaper waits for
 * and destroys each stream once.
 */
#include <arpa/inet.h>
#include <check.h>
#include <sched.h>
#include <stdatomic.h>
#include <jansson.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#include "connection.h"
#include "decode.h"
#include "gpu.h"
#include "loop.h"
#include "opd/allocator.h"
#include "opd/client.h"
#include "opd/cuda.h"
#include "opd/error.h"
#include "opd/graph.h"
#include "opd/graph_exec.h"
#include "opd/kernels.h"
#include "opd/server.h"
#include "session.h"
#include "worker.h"

Suite *opd_test_gpu_server_suite(void);

/* True (and says why) when this machine has a CUDA device: these cases are for none. */
static bool skip_with_device(void) {
  if (opd_cuda_init() <= 0) return false;
  fprintf(stderr, "SKIP: a CUDA device is present (%s); tests/gpu/run_device_checks.sh covers it\n",
          opd_cuda_device_name(0));
  return true;
}

static char admin_path[108];

static opd_server *start(bool admin) {
  opd_server_config cfg;
  opd_server_config_init(&cfg);
  opd_server_config_clear_listen(&cfg);
  ck_assert_int_eq(opd_server_config_add_listen(&cfg, "tcp://127.0.0.1:0"), 0);
  ck_assert_int_eq(opd_server_config_set(&cfg, "status", "127.0.0.1:0"), 0);
  if (admin) {
    snprintf(admin_path, sizeof admin_path, "/tmp/opd-gpu-test-%d.sock", (int)getpid());
    ck_assert_int_eq(opd_server_config_set(&cfg, "admin", admin_path), 0);
  }
  cfg.workers = 2;
  cfg.log_level = OPD_LOG_ERROR;
  opd_server *s = NULL;
  int rc = opd_server_start(&cfg, &s);
  opd_server_config_destroy(&cfg);
  ck_assert_msg(rc == 0, "server start: %s", opd_last_error());
  return s;
}

static int connect_tcp(int port) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  ck_assert_int_ge(fd, 0);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ck_assert_int_eq(connect(fd, (struct sockaddr *)&a, sizeof a), 0);
  struct timeval tv = {10, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  return fd;
}

static void send_all(int fd, const void *p, size_t n) {
  for (size_t off = 0; off < n;) {
    ssize_t w = send(fd, (const char *)p + off, n - off, MSG_NOSIGNAL);
    ck_assert_int_gt(w, 0);
    off += (size_t)w;
  }
}

static void recv_all(int fd, void *p, size_t n) {
  for (size_t off = 0; off < n;) {
    ssize_t r = recv(fd, (char *)p + off, n - off, 0);
    ck_assert_int_gt(r, 0);
    off += (size_t)r;
  }
}

/* GET /v1/info from the status endpoint. */
static json_t *get_info(opd_server *s) {
  int fd = connect_tcp(opd_server_status_port(s));
  const char req[] = "GET /v1/info HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n";
  send_all(fd, req, sizeof req - 1);
  static char buf[1 << 16];
  size_t got = 0;
  for (ssize_t r; got < sizeof buf - 1 && (r = recv(fd, buf + got, sizeof buf - 1 - got, 0)) > 0;)
    got += (size_t)r;
  close(fd);
  buf[got] = '\0';
  ck_assert_msg(strncmp(buf, "HTTP/1.1 200", 12) == 0, "%.200s", buf);
  char *body = strstr(buf, "\r\n\r\n");
  ck_assert_ptr_nonnull(body);
  json_t *j = json_loads(body + 4, 0, NULL);
  ck_assert_msg(j, "bad JSON: %s", body + 4);
  return j;
}

START_TEST(test_info_reports_unavailable) {
  if (skip_with_device()) return;
  opd_server *s = start(false);
  json_t *info = get_info(s);
  json_t *cuda = json_object_get(info, "cuda");
  ck_assert_msg(json_is_object(cuda), "no \"cuda\" in /v1/info");
  ck_assert(json_is_false(json_object_get(cuda, "available")));
  const char *reason = json_string_value(json_object_get(cuda, "reason"));
  ck_assert_msg(reason && reason[0], "no reason given");
  ck_assert_str_eq(reason, opd_cuda_unavailable_reason());
  ck_assert_int_eq(json_integer_value(json_object_get(cuda, "device_count")), 0);
  ck_assert_uint_eq(json_array_size(json_object_get(cuda, "devices")), 0);
  /* no GPU among the devices served */
  size_t i;
  json_t *d;
  json_array_foreach(json_object_get(info, "devices"), i, d)
      ck_assert_str_ne(json_string_value(json_object_get(d, "type")), "cuda");
  json_decref(info);
  opd_server_stop(s);
}
END_TEST

/* 1 + 2 on the CPU through c: the session still serves. */
static void check_cpu_add(opd_client *c) {
  const float x[3] = {1, 2, 3}, y[3] = {10, 20, 30};
  const int64_t shape[] = {3};
  opd_client_tensor a, b, sum;
  ck_assert_int_eq(opd_client_upload(c, OPD_FLOAT32, shape, 1, x, sizeof x, NULL, &a), 0);
  ck_assert_int_eq(opd_client_upload(c, OPD_FLOAT32, shape, 1, y, sizeof y, NULL, &b), 0);
  opd_client_value args[] = {opd_cv_tensor(a), opd_cv_tensor(b)};
  ck_assert_msg(opd_client_call(c, "aten::add.Tensor", args, 2, &sum, 1, NULL) == 0, "%s",
                opd_client_last_error());
  float out[3];
  ck_assert_int_eq(opd_client_download(c, sum, out, sizeof out, NULL), 0);
  for (int k = 0; k < 3; k++) ck_assert_float_eq(out[k], x[k] + y[k]);
  opd_client_tensor hs[] = {a, b, sum};
  ck_assert_int_eq(opd_client_release(c, hs, 3), 0);
}

START_TEST(test_cuda_requests_refused_cpu_goes_on) {
  if (skip_with_device()) return;
  opd_server *s = start(false);
  opd_client *c;
  ck_assert_int_eq(opd_client_connect(opd_server_listener_url(s, 0), NULL, &c), 0);
  check_cpu_add(c);

  /* an upload to cuda:0 (and to the default CUDA device): refused, its bytes skipped */
  const float x[4] = {1, 2, 3, 4};
  const int64_t shape[] = {2, 2};
  opd_client_tensor t = 0;
  for (int index = -1; index <= 0; index++) {
    const opd_client_device dev = {OPD_CLIENT_DEVICE_CUDA, index};
    ck_assert_int_eq(opd_client_upload(c, OPD_FLOAT32, shape, 2, x, sizeof x, &dev, &t),
                     OPD_EUNAVAILABLE);
    ck_assert_msg(strstr(opd_client_last_error(), "CUDA unavailable"), "%s",
                  opd_client_last_error());
    ck_assert_msg(strstr(opd_client_last_error(), opd_cuda_unavailable_reason()), "%s",
                  opd_client_last_error());
    check_cpu_add(c);
  }

  /* a call that would make a CUDA tensor: refused the same way */
  ck_assert_int_eq(opd_client_upload(c, OPD_FLOAT32, shape, 2, x, sizeof x, NULL, &t), 0);
  opd_client_value args[] = {opd_cv_tensor(t), opd_cv_none(), opd_cv_none(),
                             opd_cv_device(OPD_CLIENT_DEVICE_CUDA, 0)};
  opd_client_tensor out;
  ck_assert_int_eq(opd_client_call(c, "aten::_to_copy", args, 4, &out, 1, NULL), OPD_EUNAVAILABLE);
  ck_assert_msg(strstr(opd_client_last_error(), "unavailable"), "%s", opd_client_last_error());
  ck_assert_int_eq(opd_client_synchronize(c), 0);
  ck_assert_int_eq(opd_client_release(c, &t, 1), 0);
  check_cpu_add(c);
  opd_client_close(c);
  opd_server_stop(s);
}
END_TEST

/* One admin request over the Unix socket: the parsed reply. */
static json_t *admin_request(json_t *req) {
  int fd = socket(AF_UNIX, SOCK_STREAM, 0);
  struct sockaddr_un sa = {.sun_family = AF_UNIX};
  snprintf(sa.sun_path, sizeof sa.sun_path, "%s", admin_path);
  ck_assert_int_eq(connect(fd, (struct sockaddr *)&sa, sizeof sa), 0);
  char *text = json_dumps(req, JSON_COMPACT);
  json_decref(req);
  uint32_t n = htonl((uint32_t)strlen(text));
  send_all(fd, &n, 4);
  send_all(fd, text, strlen(text));
  free(text);
  recv_all(fd, &n, 4);
  n = ntohl(n);
  ck_assert_uint_lt(n, 1 << 20);
  char *buf = malloc(n);
  recv_all(fd, buf, n);
  close(fd);
  json_t *j = json_loadb(buf, n, 0, NULL);
  free(buf);
  ck_assert_ptr_nonnull(j);
  return j;
}

START_TEST(test_cuda_register_unavailable) {
  if (skip_with_device()) return;
  opd_server *s = start(true);
  const char *src =
      "extern \"C\" __global__ void twice(float *out, const float *x, long long n) {\n"
      "  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;\n"
      "  if (i < n) out[i] = 2 * x[i];\n"
      "}\n";
  json_t *r = admin_request(
      json_pack("{s:s, s:s, s:s, s:s, s:s}", "op", "cuda_register", "source", src, "entry", "twice",
                "schema", "gputest::twice(Tensor x) -> Tensor", "launch", "elementwise"));
  ck_assert(json_is_false(json_object_get(r, "ok")));
  ck_assert_str_eq(json_string_value(json_object_get(r, "code")), "EUNAVAILABLE");
  const char *err = json_string_value(json_object_get(r, "error"));
  ck_assert_msg(err && strstr(err, "CUDA unavailable: "), "%s", err ? err : "(none)");
  json_decref(r);
  /* nothing stayed: the operator was not defined */
  r = admin_request(json_pack("{s:s, s:s}", "op", "list", "name", "gputest::twice"));
  ck_assert_str_eq(json_string_value(json_object_get(r, "code")), "ENOENT");
  json_decref(r);
  /* a bad launch rule and a missing field are refused before anything */
  r = admin_request(json_pack("{s:s, s:s, s:s, s:s, s:s}", "op", "cuda_register", "source", src,
                              "entry", "twice", "schema", "gputest::twice(Tensor x) -> Tensor",
                              "launch", "columns"));
  ck_assert_str_eq(json_string_value(json_object_get(r, "code")), "EINVAL");
  json_decref(r);
  r = admin_request(json_pack("{s:s, s:s}", "op", "cuda_register", "source", src));
  ck_assert_str_eq(json_string_value(json_object_get(r, "code")), "EINVAL");
  json_decref(r);
  /* the inputs are judged before the device's absence: bad ones say what is wrong */
  static const struct {
    const char *schema, *entry, *code, *says;
  } bad[] = {
      {"twice(Tensor x) -> Tensor", "twice", "EINVAL", "namespace"},
      {"aten::add.Tensor(Tensor x) -> Tensor", "twice", "EEXIST", "another schema"},
      {"gputest::twice(Tensor x ->", "twice", "ESCHEMA", "schema"},
      {"gputest::twice(Tensor x) -> Tensor", "two words", "EINVAL", "identifier"},
      {"gputest::twice(Tensor x) -> Tensor", "", "EINVAL", "identifier"},
      {"gputest::twice(Tensor x) -> (Tensor, Tensor)", "twice", "EINVAL", "returns one Tensor"},
      {"gputest::twice(float a, Tensor x) -> Tensor", "twice", "EINVAL", "argument 'a'"},
      {"gputest::twice(Tensor? x) -> Tensor", "twice", "EINVAL", "argument 'x'"},
      {"gputest::twice(Tensor x, str s) -> Tensor", "twice", "EINVAL", "argument 's'"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    r = admin_request(json_pack("{s:s, s:s, s:s, s:s, s:s}", "op", "cuda_register", "source", src,
                                "entry", bad[i].entry, "schema", bad[i].schema, "launch", "rows"));
    const char *e = json_string_value(json_object_get(r, "error"));
    ck_assert_msg(strcmp(json_string_value(json_object_get(r, "code")), bad[i].code) == 0 && e &&
                      strstr(e, bad[i].says),
                  "%s / %s: %s", bad[i].schema, bad[i].entry, json_dumps(r, 0));
    json_decref(r);
  }
  /* a source over 256 KiB is refused (the admin frame itself takes up to 1 MiB) */
  size_t big = 256 * 1024 + 1;
  char *text = malloc(big + 1);
  memset(text, ' ', big);
  text[big] = '\0';
  r = admin_request(json_pack("{s:s, s:s, s:s, s:s, s:s}", "op", "cuda_register", "source", text,
                              "entry", "twice", "schema", "gputest::twice(Tensor x) -> Tensor",
                              "launch", "elementwise"));
  free(text);
  ck_assert_str_eq(json_string_value(json_object_get(r, "code")), "EINVAL");
  ck_assert_ptr_nonnull(strstr(json_string_value(json_object_get(r, "error")), "262144"));
  json_decref(r);
  /* with a float and an int after the tensors the schema fits: only the device is missing */
  r = admin_request(json_pack(
      "{s:s, s:s, s:s, s:s, s:s}", "op", "cuda_register", "source", src, "entry", "twice", "schema",
      "gputest::twice(Tensor x, Tensor y, float a, int k) -> Tensor", "launch", "rows"));
  ck_assert_str_eq(json_string_value(json_object_get(r, "code")), "EUNAVAILABLE");
  json_decref(r);
  opd_server_stop(s);
}
END_TEST

START_TEST(test_config_cuda_workers) {
  opd_server_config cfg;
  opd_server_config_init(&cfg);
  ck_assert_uint_eq(cfg.cuda_workers_per_device, 1);
  ck_assert_int_eq(opd_server_config_set(&cfg, "cuda_workers_per_device", "4"), 0);
  ck_assert_uint_eq(cfg.cuda_workers_per_device, 4);
  ck_assert_int_eq(opd_server_config_set(&cfg, "cuda_workers_per_device", "0"), OPD_EINVAL);
  ck_assert_int_eq(opd_server_config_set(&cfg, "cuda_workers_per_device", "65"), OPD_EINVAL);
  ck_assert_uint_eq(cfg.cuda_workers_per_device, 4);
  opd_server_config_destroy(&cfg);
}
END_TEST

/* ---- the scheduler's GPU pools, without a GPU ---- */

enum { NSESS = 8, NJOBS = 300 };

typedef struct sched_run {
  opd__sched sched;
  opd__session sessions[NSESS];
  opd__job jobs[NSESS][NJOBS];
  _Atomic int running[NSESS]; /* jobs of the session running now */
  uint64_t last_id[NSESS];    /* written by the session's running job only */
  _Atomic int bad_order, overlap, wrong_pool, done;
} sched_run;

static sched_run *sr;

/* Where a job runs: its id says (0: CPU, 1: cuda:0, 2: cuda:1). */
static opd_device route_by_id(opd__job *job) {
  int k = (int)(job->id % 3);
  return k == 0 ? (opd_device){OPD_DEVICE_CPU, -1}
                : (opd_device){OPD_DEVICE_CUDA, (int16_t)(k - 1)};
}

static bool on_pool(const opd__pool *p) { /* its workers and its lane thread */
  for (unsigned i = 0; i < p->nthreads + p->lane_started; i++)
    if (pthread_equal(p->threads[i], pthread_self())) return true;
  return false;
}

static bool run_job(opd__job *job) {
  int si = (int)(job->session - sr->sessions);
  if (atomic_fetch_add(&sr->running[si], 1) != 0) atomic_fetch_add(&sr->overlap, 1);
  opd_device d = route_by_id(job);
  const opd__pool *want = d.type == OPD_DEVICE_CUDA ? &sr->sched.gpu[d.index] : &sr->sched.cpu;
  if (!on_pool(want) || job->device.type != d.type || job->device.index != d.index)
    atomic_fetch_add(&sr->wrong_pool, 1);
  if (job->id <= sr->last_id[si] && sr->last_id[si] != 0) atomic_fetch_add(&sr->bad_order, 1);
  sr->last_id[si] = job->id;
  if (job->id % 7 == 0) sched_yield();
  atomic_fetch_sub(&sr->running[si], 1);
  return false;
}

static void job_done(opd__job *jobs, void *arg) {
  (void)arg;
  for (opd__job *j = jobs; j; j = j->qnext) atomic_fetch_add(&sr->done, 1);
}

/* Sessions whose jobs alternate at random between the CPU and two GPU pools (two workers
 * each): every job runs on its device's pool, a session's jobs in order and one at a time. */
START_TEST(test_sched_gpu_pools_keep_session_order) {
  sr = calloc(1, sizeof *sr);
  ck_assert_ptr_nonnull(sr);
  opd_server_config cfg;
  opd_server_config_init(&cfg);
  ck_assert_int_eq(opd__sched_start(&sr->sched, 2, run_job, job_done, NULL), 0);
  ck_assert_int_eq(opd__sched_start_gpu(&sr->sched, 2, 2, route_by_id), 0);
  ck_assert_uint_eq(sr->sched.ngpu, 2);
  for (int i = 0; i < NSESS; i++) opd__session_init(&sr->sessions[i], (uint64_t)i + 1, &cfg);
  srand(7);
  uint64_t next_id[NSESS] = {0};
  for (int n = 0; n < NJOBS; n++)
    for (int i = 0; i < NSESS; i++) {
      opd__job *j = &sr->jobs[i][n];
      j->session = &sr->sessions[i];
      j->kind = OPD__JOB_CALL;
      j->device = (opd_device){OPD_DEVICE_CPU, -1};
      /* increasing ids whose residue picks the device at random */
      next_id[i] += 1 + (uint64_t)(rand() % 3);
      j->id = next_id[i];
      ck_assert(opd__sched_submit(&sr->sched, j));
    }
  for (int t = 0; t < 2000 && atomic_load(&sr->done) < NSESS * NJOBS; t++)
    nanosleep(&(struct timespec){0, 5000000}, NULL);
  ck_assert_int_eq(atomic_load(&sr->done), NSESS * NJOBS);
  opd__sched_stop(&sr->sched);
  int wrong_pool = atomic_load(&sr->wrong_pool), bad_order = atomic_load(&sr->bad_order),
      overlap = atomic_load(&sr->overlap);
  ck_assert_int_eq(wrong_pool, 0);
  ck_assert_int_eq(bad_order, 0);
  ck_assert_int_eq(overlap, 0);
  for (int i = 0; i < NSESS; i++) opd__session_destroy(&sr->sessions[i]);
  opd_server_config_destroy(&cfg);
  free(sr);
}
END_TEST

/* ---- downloads of CUDA views, with a device ---- */

/* A CUDA tensor of `shape` holding 0, 1, 2, ... (float32). */
static opd_tensor *cuda_counting(const int64_t *shape, int ndim) {
  opd_tensor *t;
  ck_assert_int_eq(opd_tensor_empty(shape, ndim, OPD_FLOAT32, (opd_device){OPD_DEVICE_CUDA, 0}, &t),
                   0);
  float *h = malloc((size_t)t->numel * sizeof *h);
  for (int64_t i = 0; i < t->numel; i++) h[i] = (float)i;
  ck_assert_int_eq(opd_cuda_copy_from_host(t, 0, h, (size_t)t->numel * sizeof *h), 0);
  free(h);
  return t;
}

/* Element i (row-major) of a float32 CPU tensor, through its strides. */
static float host_at(const opd_tensor *t, int64_t i) {
  int64_t off = 0;
  for (int d = t->ndim - 1; d >= 0; d--) {
    off += i % opd_tensor_sizes(t)[d] * opd_tensor_strides(t)[d];
    i /= opd_tensor_sizes(t)[d];
  }
  return ((const float *)opd_tensor_data(t))[off];
}

/* [Note: Downloading a CUDA view]: the host copy of a view holds only the storage it reaches
 * (an expand of one element to 2^26 is 4 bytes, not 256 MiB, and nothing is made contiguous
 * on the device), with the view's sizes and strides; a view that reaches more storage than it
 * has elements (a column) comes back contiguous. */
START_TEST(test_download_of_views) {
  if (opd_cuda_init() <= 0) {
    fprintf(stderr, "SKIP: test_download_of_views: %s\n", opd_cuda_unavailable_reason());
    return;
  }
  const opd_device cuda0 = {OPD_DEVICE_CUDA, 0};
  const int64_t shape[2] = {64, 1024};
  opd_tensor *base = cuda_counting(shape, 2);
  static const struct {
    int ndim;
    int64_t sizes[2], strides[2], offset;
    uint64_t host_bytes; /* of the host copy's storage */
    bool contiguous;
  } views[] = {
      {1, {1 << 26}, {0}, 5, 4, false},                    /* one element expanded */
      {2, {4, 3}, {0, 1}, 10, 12, false},                  /* a row expanded */
      {2, {1024, 64}, {1, 1024}, 0, 64 * 1024 * 4, false}, /* the transpose */
      {1, {64}, {1024}, 7, 64 * 4, true},                  /* a column: contiguous */
      {2, {64, 1024}, {1024, 1}, 0, 64 * 1024 * 4, true},  /* the tensor itself */
  };
  for (size_t k = 0; k < sizeof views / sizeof *views; k++) {
    opd_tensor *v = NULL, *h = NULL;
    ck_assert_int_eq(opd_tensor_view_of(base, views[k].sizes, views[k].strides, views[k].ndim,
                                        views[k].offset, &v),
                     0);
    opd_memory_stats before, after;
    opd_memory_stats_get_device(cuda0, &before);
    ck_assert_msg(opd__gpu_to_host(v, &h) == 0, "view %zu: %s", k, opd_last_error());
    opd_memory_stats_get_device(cuda0, &after);
    if (!views[k].contiguous) /* nothing made on the device */
      ck_assert_uint_eq(after.peak, before.peak);
    ck_assert_int_eq(opd_tensor_device(h).type, OPD_DEVICE_CPU);
    ck_assert_uint_eq(h->storage->nbytes, views[k].host_bytes);
    ck_assert_int_eq(h->ndim, v->ndim);
    ck_assert_int_eq(opd_tensor_is_contiguous(h), views[k].contiguous);
    for (int d = 0; d < v->ndim; d++) {
      ck_assert_int_eq(opd_tensor_sizes(h)[d], opd_tensor_sizes(v)[d]);
      if (!views[k].contiguous)
        ck_assert_int_eq(opd_tensor_strides(h)[d], opd_tensor_strides(v)[d]);
    }
    for (int64_t i = 0; i < v->numel; i += 1 + v->numel / 4096) { /* element = its offset */
      int64_t off = v->storage_offset, rest = i;
      for (int d = v->ndim - 1; d >= 0; d--) {
        off += rest % opd_tensor_sizes(v)[d] * opd_tensor_strides(v)[d];
        rest /= opd_tensor_sizes(v)[d];
      }
      ck_assert_msg(host_at(h, i) == (float)off, "view %zu, element %lld: %g, expected %lld", k,
                    (long long)i, host_at(h, i), (long long)off);
    }
    opd_tensor_release(h);
    opd_tensor_release(v);
  }
  opd_tensor_release(base);
}
END_TEST

#ifdef OPD_HAVE_CUDA
/* ---- the sessions' streams on two fake devices ([Note: A session's streams on every
 * device a job touches] in server/src/gpu.c) ---- */

enum { FAKE_DEVICES = 2, MAX_STREAMS = 16, STREAM_JOBS = 9 };

/* A fake stream: which device it is on, and what the reaper did to it. */
typedef struct fake_stream {
  int device;
  _Atomic int synced, destroyed;
} fake_stream;

typedef struct stream_run {
  opd__sched sched;
  opd_server *srv;
  opd__conn *conn;
  opd__session sessions[2];
  opd__job jobs[STREAM_JOBS];
  Opd__V1__Request reqs[STREAM_JOBS];
  Opd__V1__Call calls[STREAM_JOBS];
  Opd__V1__Download downloads[STREAM_JOBS];
  Opd__V1__IValue values[STREAM_JOBS][2];
  Opd__V1__IValue *args[STREAM_JOBS][2];
  Opd__V1__Device cuda[FAKE_DEVICES];
  uint64_t touches[STREAM_JOBS];            /* the devices each job names, as a mask */
  void *current[STREAM_JOBS][FAKE_DEVICES]; /* the worker's streams as the job ran */
  int entered[STREAM_JOBS];                 /* opd__gpu_enter's result */
  pthread_mutex_t mu;
  fake_stream streams[MAX_STREAMS]; /* created, in order */
  int nstreams;
  _Atomic int done, wrong_pool;
} stream_run;

static stream_run *sm;

static bool fake_healthy(int device, const char **sticky) {
  if (sticky) *sticky = NULL;
  return device >= 0 && device < FAKE_DEVICES;
}
static void *fake_stream_create(int device) {
  pthread_mutex_lock(&sm->mu);
  ck_assert_int_lt(sm->nstreams, MAX_STREAMS);
  fake_stream *f = &sm->streams[sm->nstreams++];
  f->device = device;
  pthread_mutex_unlock(&sm->mu);
  return f;
}
static int fake_stream_synchronize(int device, void *stream) {
  fake_stream *f = stream;
  ck_assert_int_eq(f->device, device);
  atomic_fetch_add(&f->synced, 1);
  return 0;
}
static void fake_stream_destroy(int device, void *stream) {
  fake_stream *f = stream;
  ck_assert_int_eq(f->device, device);
  ck_assert_int_gt(atomic_load(&f->synced), 0); /* waited for before it goes */
  atomic_fetch_add(&f->destroyed, 1);
}
static const opd__gpu_stream_ops fake_stream_ops = {.healthy = fake_healthy,
                                                    .create = fake_stream_create,
                                                    .synchronize = fake_stream_synchronize,
                                                    .destroy = fake_stream_destroy};

/* "CUDA" memory for tensors on the fake devices: host memory. */
static void *host_alloc(const opd_allocator *a, opd_device device, size_t nbytes) {
  (void)a;
  ck_assert_int_lt(device.index, FAKE_DEVICES);
  return malloc(nbytes ? nbytes : 1);
}
static void host_free(const opd_allocator *a, opd_device device, void *p, size_t nbytes) {
  (void)a;
  (void)device;
  (void)nbytes;
  free(p);
}
static const opd_allocator host_as_cuda = {.alloc = host_alloc, .free = host_free};

/* The worker's current stream of each device as the job runs (what its kernels and copies
 * would use). */
static bool record_streams(opd__job *job) {
  int i = (int)(job - sm->jobs);
  const opd__pool *want =
      job->device.type == OPD_DEVICE_CUDA ? &sm->sched.gpu[job->device.index] : &sm->sched.cpu;
  if (!on_pool(want)) atomic_fetch_add(&sm->wrong_pool, 1);
  sm->entered[i] = opd__gpu_enter(job);
  for (int d = 0; d < FAKE_DEVICES; d++) sm->current[i][d] = opd_cuda_current_stream(d);
  opd__call_unprepare(job); /* routed: prepared, never run */
  return false;
}

static void stream_job_done(opd__job *jobs, void *arg) {
  (void)arg;
  for (opd__job *j = jobs; j; j = j->qnext) atomic_fetch_add(&sm->done, 1);
}

/* A session's tensor on fake device `d`, by handle. */
static uint64_t fake_cuda_tensor(opd__session *s, int d) {
  opd_tensor *t;
  const int64_t shape[1] = {4};
  ck_assert_int_eq(opd_tensor_empty(shape, 1, OPD_FLOAT32, (opd_device){OPD_DEVICE_CUDA, d}, &t),
                   0);
  uint64_t reserved = 0, h;
  ck_assert_int_eq(opd__session_hold(s, t, &reserved, &h), 0); /* takes t's reference */
  return h;
}

/* Job i of session s: a call of a tensor (handle, or 0: none) and a Device argument (-1:
 * none), or a download of `handle`; touches = the devices it names. */
static void stream_job(int i, opd__session *s, bool download, uint64_t handle, int device,
                       uint64_t touches) {
  opd__job *j = &sm->jobs[i];
  Opd__V1__Request *r = &sm->reqs[i];
  opd__v1__request__init(r);
  j->conn = sm->conn;
  j->session = s;
  j->id = (uint64_t)i + 1;
  j->req = r;
  j->device = (opd_device){OPD_DEVICE_CPU, -1};
  sm->touches[i] = touches;
  if (download) {
    j->kind = OPD__JOB_DOWNLOAD;
    opd__v1__download__init(&sm->downloads[i]);
    sm->downloads[i].handle = handle;
    r->body_case = OPD__V1__REQUEST__BODY_DOWNLOAD;
    r->download = &sm->downloads[i];
    return;
  }
  j->kind = OPD__JOB_CALL;
  Opd__V1__Call *c = &sm->calls[i];
  opd__v1__call__init(c);
  c->op = "test::op";
  c->args = sm->args[i];
  Opd__V1__IValue *t = &sm->values[i][c->n_args]; /* the tensor, or None */
  opd__v1__ivalue__init(t);
  t->value_case = handle ? OPD__V1__IVALUE__VALUE_TENSOR : OPD__V1__IVALUE__VALUE_NONE;
  if (handle)
    t->tensor = handle;
  else
    t->none = 1; /* one member of the oneof */
  c->args[c->n_args++] = t;
  if (device >= 0) {
    Opd__V1__IValue *v = &sm->values[i][c->n_args];
    opd__v1__ivalue__init(v);
    v->value_case = OPD__V1__IVALUE__VALUE_DEVICE;
    v->device = &sm->cuda[device];
    c->args[c->n_args++] = v;
  }
  r->body_case = OPD__V1__REQUEST__BODY_CALL;
  r->call = c;
}

/* The fake devices' run (sm), with the fake streams and a GPU reaper of FAKE_DEVICES. */
static void fake_gpu_start(opd_server_config *cfg) {
  sm = calloc(1, sizeof *sm);
  ck_assert_ptr_nonnull(sm);
  pthread_mutex_init(&sm->mu, NULL);
  opd__gpu_set_stream_ops(&fake_stream_ops);
  opd_server_config_init(cfg);
  sm->srv = calloc(1, sizeof *sm->srv);
  sm->conn = calloc(1, sizeof *sm->conn);
  ck_assert(sm->srv && sm->conn);
  sm->conn->server = sm->srv;
  ck_assert_int_eq(opd__gpu_create(FAKE_DEVICES, &sm->srv->gpu), 0);
}

/* After opd__gpu_stop: the stream functions back, sm freed. */
static void fake_gpu_finish(opd_server_config *cfg) {
  opd__gpu_set_stream_ops(NULL);
  opd_server_config_destroy(cfg);
  pthread_mutex_destroy(&sm->mu);
  free(sm->conn);
  free(sm->srv);
  free(sm);
}

/* Two sessions whose jobs the router sends to two fake devices' pools; some jobs touch both
 * devices (a tensor on one, a Device argument naming the other: a copy between GPUs). Each
 * job must find, on the worker that runs it, its session's stream of every device it touches
 * (the same stream for all of the session's jobs there, whichever pool ran them: so a
 * cross-device copy is ordered with the session's kernels on the other device) and the
 * per-thread default stream on the others. */
START_TEST(test_session_streams_on_every_device) {
  opd_server_config cfg;
  fake_gpu_start(&cfg);
  ck_assert_int_eq(opd_allocator_register(OPD_DEVICE_CUDA, &host_as_cuda), 0);
  /* the router decodes the calls ([Note: Prepared calls]): test::op(tensor?, device?) */
  if (!opd_find_schema("test::op"))
    ck_assert_int_gt(opd_def("test", "op(Tensor? self=None, Device? device=None) -> ()", OPD_HERE),
                     0);
  for (int d = 0; d < FAKE_DEVICES; d++) {
    opd__v1__device__init(&sm->cuda[d]);
    sm->cuda[d].type = OPD_DEVICE_CUDA;
    sm->cuda[d].index = d;
  }
  opd__session *a = &sm->sessions[0], *b = &sm->sessions[1];
  opd__session_init(a, 1, &cfg);
  opd__session_init(b, 2, &cfg);
  uint64_t a0 = fake_cuda_tensor(a, 0), a1 = fake_cuda_tensor(a, 1), b1 = fake_cuda_tensor(b, 1);
  stream_job(0, a, false, a0, 1, 3);  /* a0.to("cuda:1"): runs on cuda:0's pool */
  stream_job(1, a, false, a1, -1, 2); /* on cuda:1 */
  stream_job(2, b, false, b1, -1, 2); /* on cuda:1 */
  stream_job(3, a, true, a1, -1, 2);  /* a download from cuda:1 */
  stream_job(4, b, false, 0, 0, 1);   /* a factory on cuda:0 */
  stream_job(5, a, false, a0, -1, 1); /* on cuda:0 only: cuda:1's stream is not a's */
  stream_job(6, b, false, b1, 0, 3);  /* b1.to("cuda:0"): runs on cuda:1's pool */
  stream_job(7, a, false, a1, 0, 3);  /* a1.to("cuda:0"): runs on cuda:1's pool */
  stream_job(8, b, false, 0, 1, 2);   /* a factory on cuda:1 */
  ck_assert_int_eq(opd__sched_start(&sm->sched, 1, record_streams, stream_job_done, NULL), 0);
  ck_assert_int_eq(opd__sched_start_gpu(&sm->sched, FAKE_DEVICES, 1, opd__gpu_route), 0);
  for (int i = 0; i < STREAM_JOBS; i++) ck_assert(opd__sched_submit(&sm->sched, &sm->jobs[i]));
  for (int t = 0; t < 2000 && atomic_load(&sm->done) < STREAM_JOBS; t++)
    nanosleep(&(struct timespec){0, 5000000}, NULL);
  ck_assert_int_eq(atomic_load(&sm->done), STREAM_JOBS);
  opd__sched_stop(&sm->sched);
  ck_assert_int_eq(atomic_load(&sm->wrong_pool), 0);
  /* one stream per session and device it touched, each the same for all its jobs */
  void *stream_of[2][FAKE_DEVICES] = {{NULL}};
  for (int i = 0; i < STREAM_JOBS; i++) {
    int si = (int)(sm->jobs[i].session - sm->sessions);
    ck_assert_int_eq(sm->entered[i], 0);
    ck_assert_msg(sm->jobs[i].device.type == OPD_DEVICE_CUDA, "job %d routed to device type %d", i,
                  sm->jobs[i].device.type);
    for (int d = 0; d < FAKE_DEVICES; d++) {
      void *cur = sm->current[i][d];
      if (!((sm->touches[i] >> d) & 1)) { /* this thread's: the per-thread default stream */
        ck_assert_msg(cur == opd_cuda_current_stream(d),
                      "job %d: a stream stays current on cuda:%d, which it does not touch", i, d);
        continue;
      }
      const fake_stream *f = cur;
      ck_assert_msg(f >= sm->streams && f < sm->streams + sm->nstreams,
                    "job %d: cuda:%d runs on the per-thread default stream, not the session's", i,
                    d);
      ck_assert_int_eq(f->device, d);
      if (!stream_of[si][d]) stream_of[si][d] = cur;
      ck_assert_msg(stream_of[si][d] == cur, "job %d: a second stream of session %d on cuda:%d", i,
                    si, d);
    }
  }
  ck_assert_int_eq(sm->nstreams, 4);
  ck_assert_ptr_ne(stream_of[0][0], stream_of[1][0]);
  ck_assert_ptr_ne(stream_of[0][1], stream_of[1][1]);
  /* the sessions end: the reaper waits for each stream, releases the tensors, destroys them */
  opd__session_destroy(a);
  opd__session_destroy(b);
  opd__gpu_stop(sm->srv->gpu);
  for (int k = 0; k < sm->nstreams; k++) {
    ck_assert_int_eq(atomic_load(&sm->streams[k].synced), 1);
    ck_assert_int_eq(atomic_load(&sm->streams[k].destroyed), 1);
  }
  fake_gpu_finish(&cfg);
}
END_TEST

/* A graph run goes to the pool of the CUDA device it computes on even when its inputs are
 * all on the CPU (a _to_copy to cuda:1), and enters with the session's stream of every
 * device its values are on ([Note: Graphs in the daemon] in server/src/graphs.c). Only
 * routed and entered, on two fake devices: nothing runs. */
START_TEST(test_graph_run_routed_to_its_cuda_device) {
  opd_server_config cfg;
  fake_gpu_start(&cfg);
  ck_assert_int_eq(opd_kernels_register(), 0);
  opd__session *a = &sm->sessions[0];
  opd__session_init(a, 1, &cfg);
  /* graph(x: cpu) = relu(_to_copy(x, device=cuda:1)) */
  opd_graph *g = NULL;
  ck_assert_int_eq(opd_graph_new(NULL, &g), 0);
  const int64_t shape[1] = {4};
  int x = opd_graph_add_input(
      g, &(opd_graph_input_spec){OPD_FLOAT32, shape, 1, {OPD_DEVICE_CPU, -1}, OPD_GRAPH_INPUT});
  ck_assert_int_eq(x, 0);
  opd_graph_arg to[4] = {opd_graph_arg_ref(0, 0), opd_graph_arg_default(), opd_graph_arg_default(),
                         opd_graph_arg_value(opd_iv_device((opd_device){OPD_DEVICE_CUDA, 1}))};
  int y = opd_graph_add_node(g, "aten::_to_copy", to, 4);
  ck_assert_msg(y > 0, "%s", opd_last_error());
  opd_graph_arg r[1] = {opd_graph_arg_ref((uint32_t)y, 0)};
  int z = opd_graph_add_node(g, "aten::relu", r, 1);
  ck_assert_msg(z > 0, "%s", opd_last_error());
  ck_assert_int_eq(opd_graph_set_outputs(g, &(opd_graph_ref){(uint32_t)z, 0}, 1), 0);
  ck_assert_int_eq(opd_graph_finish(g), 0);
  opd_graph_options o;
  opd_graph_options_default(&o);
  opd_compiled_graph *cg = NULL;
  ck_assert_msg(opd_graph_compile(g, &o, NULL, &cg, NULL) == 0, "%s", opd_last_error());
  ck_assert_uint_eq(opd_compiled_graph_cuda_devices(cg), 2);
  ck_assert_int_eq(opd__session_add_graph(a, 7, cg), 0); /* takes the reference */
  opd__job *j = &sm->jobs[0];
  Opd__V1__Request *req = &sm->reqs[0];
  Opd__V1__RunGraph run = OPD__V1__RUN_GRAPH__INIT;
  run.graph = 7;
  opd__v1__request__init(req);
  req->body_case = OPD__V1__REQUEST__BODY_RUN_GRAPH;
  req->run_graph = &run;
  j->conn = sm->conn;
  j->session = a;
  j->req = req;
  j->kind = OPD__JOB_RUN_GRAPH;
  j->device = (opd_device){OPD_DEVICE_CPU, -1};
  opd_device d = opd__gpu_route(j);
  ck_assert_int_eq(d.type, OPD_DEVICE_CUDA);
  ck_assert_int_eq(d.index, 1);
  ck_assert_ptr_eq(j->graph, cg);
  j->device = d;
  ck_assert_int_eq(opd__gpu_enter(j), 0);
  ck_assert_int_eq(sm->nstreams, 1); /* the session's stream of cuda:1, current there */
  ck_assert_ptr_eq(opd_cuda_current_stream(1), &sm->streams[0]);
  opd_cuda_set_current_stream(1, NULL);
  /* the session's end hands the graph to the reaper with the streams: released there after
   * they are waited for (a leak or a second release under ASan otherwise) */
  opd_compiled_graph_retain(cg);
  opd__session_destroy(a);
  opd__gpu_stop(sm->srv->gpu);
  ck_assert_int_eq(atomic_load(&sm->streams[0].destroyed), 1);
  ck_assert_uint_eq(opd_compiled_graph_cuda_devices(cg), 2);
  opd_compiled_graph_release(cg);
  fake_gpu_finish(&cfg);
}
END_TEST
#endif

Suite *opd_test_gpu_server_suite(void) {
  Suite *s = suite_create("gpu_server");
  TCase *tc = tcase_create("no_device");
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, test_info_reports_unavailable);
  tcase_add_test(tc, test_cuda_requests_refused_cpu_goes_on);
  tcase_add_test(tc, test_cuda_register_unavailable);
  tcase_add_test(tc, test_config_cuda_workers);
  suite_add_tcase(s, tc);
  TCase *dev = tcase_create("device");
  tcase_set_timeout(dev, 60);
  tcase_add_test(dev, test_download_of_views);
  suite_add_tcase(s, dev);
  TCase *sched = tcase_create("sched");
  tcase_set_timeout(sched, 60);
  tcase_add_test(sched, test_sched_gpu_pools_keep_session_order);
#ifdef OPD_HAVE_CUDA
  tcase_add_test(sched, test_session_streams_on_every_device);
  tcase_add_test(sched, test_graph_run_routed_to_its_cuda_device);
#endif
  suite_add_tcase(s, sched);
  return s;
}

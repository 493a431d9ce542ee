/* cuda_bench.c: opd-bench-cuda, the GPU figures of docs/PERFORMANCE.md and the RPC checks
 * of tests/gpu/run_device_checks.sh (built only with the CUDA backend).
 *
 *   opd-bench-cuda                  benchmarks, then a table (printed last):
 *     add      aten::add.Tensor on 2^26 float32 elements, GB/s moved (3 x 4 bytes per
 *              element) against cudaMemcpy device-to-device (2 x 4 bytes per element) in
 *              the same run (target >= 0.8x);
 *     softmax  aten::_softmax over the last dimension of 8192 x 4096 float32 against the
 *              three separate passes exp, sum(dim=-1, keepdim), div (target >= 1.5x faster);
 *     mm       aten::mm 4096^3 float32 against cublasSgemm on the same data (target
 *              >= 0.95x the throughput);
 *     rpc      a tiny aten::add.Tensor (4 elements) over the protocol to a daemon in this
 *              process, microseconds per synchronous call, on cuda:0 and on the CPU.
 *   opd-bench-cuda --rpc-check URL [--nvrtc]
 *              through a running daemon: CUDA tensors uploaded, used by calls (add, mul,
 *              exp, sum, softmax, mm, _to_copy to the CPU and back) and downloaded, each
 *              result compared with the same call on CPU tensors; with --nvrtc also the
 *              kernels run_device_checks.sh registered (gputest::twice, elementwise;
 *              gputest::rowmax_div, rows). Exit status 0 when everything matched.
 * Times: the median of REPS runs, each after a synchronization of the device.
 */
#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "opd/client.h"
#include "opd/cuda.h"
#include "opd/dispatcher.h"
#include "opd/error.h"
#include "opd/kernels.h"
#include "opd/server.h"
#include "opd/tensor.h"

enum { REPS = 9 };

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static double median(double *v, int n) {
  qsort(v, (size_t)n, sizeof *v, cmp_double);
  return v[n / 2];
}

static void die(const char *what) {
  fprintf(stderr, "opd-bench-cuda: %s: %s\n", what, opd_last_error());
  exit(1);
}

static void sync0(void) {
  if (opd_cuda_stream_synchronize(0, NULL) != 0) die("synchronize");
}

static const opd_device CUDA0 = {OPD_DEVICE_CUDA, 0};

/* A float32 CUDA tensor of uniform values in [-1, 1). */
static opd_tensor *random_cuda(const int64_t *sizes, int ndim) {
  int64_t n = 1;
  for (int d = 0; d < ndim; d++) n *= sizes[d];
  float *h = malloc((size_t)n * sizeof *h);
  if (!h) die("out of memory");
  for (int64_t i = 0; i < n; i++) h[i] = (float)rand() / ((float)RAND_MAX / 2) - 1;
  opd_tensor *t;
  if (opd_tensor_empty(sizes, ndim, OPD_FLOAT32, CUDA0, &t) != 0) die("empty");
  if (opd_cuda_copy_from_host(t, 0, h, (size_t)n * sizeof *h) != 0) die("copy to the device");
  free(h);
  return t;
}

/* Calls op with the values pushed (tensors borrowed); returns its one Tensor result. */
static opd_tensor *call(const char *name, const opd_ivalue *args, int nargs) {
  const opd_operator *op = opd_find_op(name);
  if (!op) {
    opd_error(OPD_ENOENT, "no operator %s", name);
    die(name);
  }
  opd_stack st;
  opd_stack_init(&st);
  for (int i = 0; i < nargs; i++) opd_stack_push(&st, args[i]);
  if (opd_call_boxed(op, &st) != 0) die(name);
  opd_ivalue v = opd_stack_pop(&st);
  opd_iv_own(&v);
  opd_stack_destroy(&st);
  return v.u.t;
}

/* ---- add against cudaMemcpy ---- */

static void bench_add(double *opd_gbs, double *ref_gbs) {
  const int64_t n = INT64_C(1) << 26;
  opd_tensor *a = random_cuda(&n, 1), *b = random_cuda(&n, 1);
  double t[REPS];
  for (int r = -1; r < REPS; r++) {
    sync0();
    double t0 = now_s();
    opd_ivalue args[] = {opd_iv_tensor_borrow(a), opd_iv_tensor_borrow(b), opd_iv_int(1)};
    opd_tensor *c = call("aten::add.Tensor", args, 3);
    sync0();
    if (r >= 0) t[r] = now_s() - t0;
    opd_tensor_release(c);
  }
  *opd_gbs = 3.0 * (double)n * 4 / median(t, REPS) / 1e9;
  void *dst;
  if (cudaMalloc(&dst, (size_t)n * 4) != cudaSuccess) die("cudaMalloc");
  for (int r = -1; r < REPS; r++) {
    cudaStreamSynchronize(cudaStreamPerThread);
    double t0 = now_s();
    cudaMemcpyAsync(dst, opd_tensor_data(a), (size_t)n * 4, cudaMemcpyDeviceToDevice,
                    cudaStreamPerThread);
    cudaStreamSynchronize(cudaStreamPerThread);
    if (r >= 0) t[r] = now_s() - t0;
  }
  *ref_gbs = 2.0 * (double)n * 4 / median(t, REPS) / 1e9;
  cudaFree(dst);
  opd_tensor_release(a);
  opd_tensor_release(b);
}

/* ---- softmax against exp, sum, div ---- */

static void bench_softmax(double *opd_ms, double *ref_ms) {
  const int64_t sizes[] = {8192, 4096};
  opd_tensor *x = random_cuda(sizes, 2);
  double t[REPS];
  for (int r = -1; r < REPS; r++) {
    sync0();
    double t0 = now_s();
    opd_ivalue args[] = {opd_iv_tensor_borrow(x), opd_iv_int(-1), opd_iv_bool(false)};
    opd_tensor *y = call("aten::_softmax", args, 3);
    sync0();
    if (r >= 0) t[r] = now_s() - t0;
    opd_tensor_release(y);
  }
  *opd_ms = median(t, REPS) * 1e3;
  const int64_t last = -1;
  for (int r = -1; r < REPS; r++) {
    sync0();
    double t0 = now_s();
    opd_ivalue ea[] = {opd_iv_tensor_borrow(x)};
    opd_tensor *e = call("aten::exp", ea, 1);
    opd_ivalue dims;
    if (opd_iv_make_int_list(&dims, &last, 1) != 0) die("int list");
    opd_ivalue sa[] = {opd_iv_tensor_borrow(e), dims, opd_iv_bool(true), opd_iv_none()};
    opd_tensor *s = call("aten::sum.dim_IntList", sa, 4);
    opd_ivalue da[] = {opd_iv_tensor_borrow(e), opd_iv_tensor_borrow(s)};
    opd_tensor *y = call("aten::div.Tensor", da, 2);
    sync0();
    if (r >= 0) t[r] = now_s() - t0;
    opd_tensor_release(e);
    opd_tensor_release(s);
    opd_tensor_release(y);
  }
  *ref_ms = median(t, REPS) * 1e3;
  opd_tensor_release(x);
}

/* ---- mm against cublasSgemm ---- */

static void bench_mm(double *opd_tflops, double *ref_tflops) {
  const int64_t n = 4096, sizes[] = {n, n};
  opd_tensor *a = random_cuda(sizes, 2), *b = random_cuda(sizes, 2);
  const double flop = 2.0 * (double)n * (double)n * (double)n;
  double t[REPS];
  for (int r = -1; r < REPS; r++) {
    sync0();
    double t0 = now_s();
    opd_ivalue args[] = {opd_iv_tensor_borrow(a), opd_iv_tensor_borrow(b)};
    opd_tensor *c = call("aten::mm", args, 2);
    sync0();
    if (r >= 0) t[r] = now_s() - t0;
    opd_tensor_release(c);
  }
  *opd_tflops = flop / median(t, REPS) / 1e12;
  cublasHandle_t h;
  float *c;
  if (cublasCreate(&h) != CUBLAS_STATUS_SUCCESS ||
      cudaMalloc((void **)&c, (size_t)(n * n) * sizeof *c) != cudaSuccess)
    die("cuBLAS");
  cublasSetStream(h, cudaStreamPerThread);
  const float one = 1, zero = 0;
  for (int r = -1; r < REPS; r++) {
    cudaStreamSynchronize(cudaStreamPerThread);
    double t0 = now_s();
    /* row-major C = A B is column-major C^T = B^T A^T */
    cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, (int)n, (int)n, (int)n, &one, opd_tensor_data(b),
                (int)n, opd_tensor_data(a), (int)n, &zero, c, (int)n);
    cudaStreamSynchronize(cudaStreamPerThread);
    if (r >= 0) t[r] = now_s() - t0;
  }
  *ref_tflops = flop / median(t, REPS) / 1e12;
  cudaFree(c);
  cublasDestroy(h);
  opd_tensor_release(a);
  opd_tensor_release(b);
}

/* ---- a tiny call over the protocol ---- */

static double rpc_us_per_call(opd_client *c, const opd_client_device *dev) {
  const float x[4] = {1, 2, 3, 4};
  const int64_t shape[] = {4};
  opd_client_tensor t;
  if (opd_client_upload(c, OPD_FLOAT32, shape, 1, x, sizeof x, dev, &t) != 0) {
    fprintf(stderr, "opd-bench-cuda: upload: %s\n", opd_client_last_error());
    exit(1);
  }
  enum { CALLS = 2000 };
  static opd_client_tensor out[CALLS];
  opd_client_value args[] = {opd_cv_tensor(t), opd_cv_tensor(t)};
  double t0 = 0;
  for (int i = -100; i < CALLS; i++) {
    if (i == 0) t0 = now_s();
    opd_client_tensor o;
    if (opd_client_call(c, "aten::add.Tensor", args, 2, &o, 1, NULL) != 0) {
      fprintf(stderr, "opd-bench-cuda: call: %s\n", opd_client_last_error());
      exit(1);
    }
    if (i >= 0)
      out[i] = o;
    else
      opd_client_release(c, &o, 1);
  }
  double us = (now_s() - t0) / CALLS * 1e6;
  opd_client_release(c, out, CALLS);
  opd_client_release(c, &t, 1);
  return us;
}

static void bench_rpc(double *cuda_us, double *cpu_us) {
  opd_server_config cfg;
  opd_server_config_init(&cfg);
  opd_server_config_clear_listen(&cfg);
  opd_server_config_add_listen(&cfg, "tcp://127.0.0.1:0");
  cfg.log_level = OPD_LOG_WARN;
  opd_server *s;
  if (opd_server_start(&cfg, &s) != 0) die("server start");
  opd_server_config_destroy(&cfg);
  opd_client *c;
  if (opd_client_connect(opd_server_listener_url(s, 0), NULL, &c) != 0) die("connect");
  const opd_client_device cuda = {OPD_CLIENT_DEVICE_CUDA, 0};
  *cuda_us = rpc_us_per_call(c, &cuda);
  *cpu_us = rpc_us_per_call(c, NULL);
  opd_client_close(c);
  opd_server_stop(s);
}

/* ---- checks through a running daemon ---- */

static int failures;

static void check(bool ok, const char *what) {
  printf("%-52s %s\n", what, ok ? "ok" : "FAILED");
  if (!ok) {
    failures++;
    fprintf(stderr, "  %s\n", opd_client_last_error());
  }
}

/* Downloads both and compares them within rtol/atol. */
static bool same(opd_client *c, opd_client_tensor x, opd_client_tensor y, double tol) {
  opd_client_tensor_info ix, iy;
  void *px = NULL, *py = NULL;
  bool ok = opd_client_download_alloc(c, x, &ix, &px) == 0 &&
            opd_client_download_alloc(c, y, &iy, &py) == 0 && ix.nbytes == iy.nbytes &&
            ix.ndim == iy.ndim && ix.dtype == OPD_FLOAT32 && iy.dtype == OPD_FLOAT32 &&
            memcmp(ix.shape, iy.shape, (size_t)ix.ndim * sizeof *ix.shape) == 0;
  for (size_t i = 0; ok && i < ix.nbytes / 4; i++) {
    double a = ((float *)px)[i], b = ((float *)py)[i];
    ok = fabs(a - b) <= tol * (1 + fabs(b));
  }
  free(px);
  free(py);
  return ok;
}

typedef struct pair {
  opd_client_tensor cuda, cpu;
} pair;

/* op on the CUDA operands and on the CPU ones (same other arguments). */
static pair both(opd_client *c, const char *op, opd_client_value *args, int nargs, const pair *t,
                 int nt) {
  pair r = {0, 0};
  for (int k = 0; k < nt; k++) args[k] = opd_cv_tensor(t[k].cuda);
  if (opd_client_call(c, op, args, (size_t)nargs, &r.cuda, 1, NULL) != 0) r.cuda = 0;
  for (int k = 0; k < nt; k++) args[k] = opd_cv_tensor(t[k].cpu);
  if (opd_client_call(c, op, args, (size_t)nargs, &r.cpu, 1, NULL) != 0) r.cpu = 0;
  return r;
}

static void check_pair(opd_client *c, pair r, const char *what, double tol) {
  check(r.cuda && r.cpu && same(c, r.cuda, r.cpu, tol), what);
}

static pair upload_pair(opd_client *c, const int64_t *shape, int ndim, const float *x, size_t n) {
  const opd_client_device cuda = {OPD_CLIENT_DEVICE_CUDA, 0};
  pair p;
  if (opd_client_upload(c, OPD_FLOAT32, shape, ndim, x, n * 4, &cuda, &p.cuda) != 0 ||
      opd_client_upload(c, OPD_FLOAT32, shape, ndim, x, n * 4, NULL, &p.cpu) != 0) {
    fprintf(stderr, "opd-bench-cuda: upload: %s\n", opd_client_last_error());
    exit(1);
  }
  return p;
}

static int rpc_check(const char *url, bool nvrtc) {
  opd_client *c;
  if (opd_client_connect(url, NULL, &c) != 0) {
    fprintf(stderr, "opd-bench-cuda: %s: %s\n", url, opd_client_last_error());
    return 1;
  }
  enum { R = 64, C = 300 };
  static float x[R * C], y[R * C];
  for (int i = 0; i < R * C; i++) {
    x[i] = (float)rand() / ((float)RAND_MAX / 2) - 1;
    y[i] = (float)rand() / ((float)RAND_MAX / 2) - 1;
  }
  const int64_t shape[] = {R, C}, sq[] = {C, R};
  pair a = upload_pair(c, shape, 2, x, R * C), b = upload_pair(c, shape, 2, y, R * C);
  pair bt = upload_pair(c, sq, 2, y, R * C);
  check(same(c, a.cuda, a.cpu, 0), "upload and download a CUDA tensor");
  opd_client_value args[8];
  pair ab[] = {a, b}, abt[] = {a, bt};
  args[2] = opd_cv_int(1);
  check_pair(c, both(c, "aten::add.Tensor", args, 3, ab, 2), "aten::add.Tensor", 1e-6);
  check_pair(c, both(c, "aten::mul.Tensor", args, 2, ab, 2), "aten::mul.Tensor", 1e-6);
  check_pair(c, both(c, "aten::exp", args, 1, ab, 1), "aten::exp", 1e-5);
  const int64_t last = -1;
  args[1] = opd_cv_ints(&last, 1);
  args[2] = opd_cv_bool(false);
  args[3] = opd_cv_none();
  check_pair(c, both(c, "aten::sum.dim_IntList", args, 4, ab, 1), "aten::sum.dim_IntList", 1e-5);
  args[1] = opd_cv_int(-1);
  args[2] = opd_cv_bool(false);
  check_pair(c, both(c, "aten::_softmax", args, 3, ab, 1), "aten::_softmax", 1e-5);
  check_pair(c, both(c, "aten::mm", args, 2, abt, 2), "aten::mm", 1e-4);
  /* a transposed (strided) CUDA tensor downloads row-major */
  args[1] = opd_cv_int(0);
  args[2] = opd_cv_int(1);
  check_pair(c, both(c, "aten::transpose.int", args, 3, ab, 1), "download of a strided CUDA view",
             0);
  /* to the CPU and back */
  args[1] = opd_cv_none();
  args[2] = opd_cv_none();
  args[3] = opd_cv_device(OPD_CLIENT_DEVICE_CPU, -1);
  opd_client_tensor host;
  args[0] = opd_cv_tensor(a.cuda);
  check(opd_client_call(c, "aten::_to_copy", args, 4, &host, 1, NULL) == 0 &&
            same(c, host, a.cpu, 0),
        "aten::_to_copy cuda -> cpu");
  args[3] = opd_cv_device(OPD_CLIENT_DEVICE_CUDA, 0);
  opd_client_tensor back;
  args[0] = opd_cv_tensor(a.cpu);
  check(opd_client_call(c, "aten::_to_copy", args, 4, &back, 1, NULL) == 0 &&
            same(c, back, a.cpu, 0),
        "aten::_to_copy cpu -> cuda");
  check(opd_client_synchronize(c) == 0, "synchronize");
  if (nvrtc) {
    pair twice = both(c, "gputest::twice", args, 1, ab, 1);
    args[2] = opd_cv_int(1);
    pair a2[] = {a, a};
    pair sum = both(c, "aten::add.Tensor", args, 3, a2, 2);
    check(twice.cuda && sum.cpu && same(c, twice.cuda, sum.cpu, 1e-6),
          "NVRTC gputest::twice (elementwise)");
    /* rows: x / max(|x|) of its row, against the same computed here */
    static float want[R * C];
    for (int r = 0; r < R; r++) {
      float m = 0;
      for (int k = 0; k < C; k++) m = fmaxf(m, fabsf(x[r * C + k]));
      for (int k = 0; k < C; k++) want[r * C + k] = x[r * C + k] / m;
    }
    pair w = upload_pair(c, shape, 2, want, R * C);
    args[0] = opd_cv_tensor(a.cuda);
    opd_client_tensor got;
    check(opd_client_call(c, "gputest::rowmax_div", args, 1, &got, 1, NULL) == 0 &&
              same(c, got, w.cpu, 1e-6),
          "NVRTC gputest::rowmax_div (rows)");
  }
  opd_client_close(c);
  printf("%s\n", failures ? "RPC CHECKS FAILED" : "rpc checks passed");
  return failures ? 1 : 0;
}

int main(int argc, char **argv) {
  if (opd_kernels_register() != 0) die("registering the kernels");
  if (argc >= 3 && strcmp(argv[1], "--rpc-check") == 0)
    return rpc_check(argv[2], argc >= 4 && strcmp(argv[3], "--nvrtc") == 0);
  if (argc > 1) {
    fprintf(stderr, "usage: opd-bench-cuda [--rpc-check URL [--nvrtc]]\n");
    return 2;
  }
  if (opd_cuda_init() <= 0) {
    printf("no GPU: skipped (%s)\n", opd_cuda_unavailable_reason());
    return 0;
  }
  srand(1);
  double add, memcpy_gbs, sm, three, mm, sgemm, rpc_cuda, rpc_cpu;
  bench_add(&add, &memcpy_gbs);
  bench_softmax(&sm, &three);
  bench_mm(&mm, &sgemm);
  bench_rpc(&rpc_cuda, &rpc_cpu);
  printf("\n%s (sm_%d)\n", opd_cuda_device_name(0), opd_cuda_device_capability(0));
  printf("%-34s %12s %24s %8s %8s\n", "benchmark", "opd", "reference", "ratio", "target");
  printf("%-34s %12.1f %13.1f (memcpy) %8.2f %8s %s\n", "add f32 2^26 (GB/s)", add, memcpy_gbs,
         add / memcpy_gbs, ">=0.80", add / memcpy_gbs >= 0.8 ? "met" : "MISSED");
  printf("%-34s %12.3f %10.3f (exp/sum/div) %5.2f %8s %s\n", "softmax 8192x4096 f32 (ms)", sm,
         three, three / sm, ">=1.50", three / sm >= 1.5 ? "met" : "MISSED");
  printf("%-34s %12.2f %10.2f (cublasSgemm) %5.2f %8s %s\n", "mm 4096^3 f32 (TFLOP/s)", mm, sgemm,
         mm / sgemm, ">=0.95", mm / sgemm >= 0.95 ? "met" : "MISSED");
  printf("%-34s %12.1f %16.1f (cpu) %8s %8s\n", "tiny add over RPC (us/call)", rpc_cuda, rpc_cpu,
         "-", "-");
  return 0;
}

/* kernels_bench.c: opd-bench-kernels, seconds per call of opd's CPU kernels through the
 * dispatcher, on the workloads of docs/PERFORMANCE.md (bench/kernels_peers.py measures
 * numpy and PyTorch on the same ones; bench/run_kernels_bench.sh runs both and prints the
 * ratios). Each workload: one warm-up call, then REPS timed calls; prints the median as
 * "opd <workload> <seconds>" and the bytes the workload must move at least (inputs read once,
 * outputs written once) as "bytes <workload> <n>", from which the runner computes each kernel's
 * bandwidth as a fraction of the machine's copy bandwidth: the copy_* workloads (memcpy, and
 * opd's copy_ kernel) move the same 64 MiB. Lines starting with "#" describe the machine: the
 * CPU model, its vector extensions, and the instruction set opd's kernels chose.
 * Threads: OPD_NUM_THREADS (default: all cores). OPD_BENCH_ONLY=NAME runs only the workloads
 * whose names start with NAME (to profile one: perf record opd-bench-kernels). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "opd/kernels.h"
#include "opd/memory.h"
#include "opd/tensor.h"
#include "opd/unboxed.h"

enum { REPS = 7 };
#define N16M    ((int64_t)16 << 20)
#define F32_16M (N16M * (int64_t)sizeof(float))

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static void die(const char *what) {
  fprintf(stderr, "opd-bench-kernels: %s: %s\n", what, opd_last_error());
  exit(1);
}

static opd_tensor *empty(const int64_t *sizes, int ndim, opd_dtype dt) {
  opd_tensor *t;
  if (opd_tensor_empty(sizes, ndim, dt, (opd_device){OPD_DEVICE_CPU, -1}, &t) != 0) die("empty");
  return t;
}

static opd_tensor *random_tensor(const int64_t *sizes, int ndim) {
  opd_tensor *t = empty(sizes, ndim, OPD_FLOAT32);
  float *p = opd_tensor_data(t);
  uint32_t x = 12345;
  for (int64_t i = 0; i < t->numel; i++) {
    x = x * 1664525u + 1013904223u;
    p[i] = (float)(x >> 8) / 16777216.0f * 4.0f - 2.0f;
  }
  return t;
}

/* ---- the machine ---- */

static void print_machine(void) {
  char line[512], model[256] = "unknown", family[32] = "?", number[32] = "?";
  FILE *f = fopen("/proc/cpuinfo", "r");
  while (f && fgets(line, sizeof line, f)) {
    char *v = strchr(line, ':');
    if (!v) continue;
    v += v[1] == ' ' ? 2 : 1;
    v[strcspn(v, "\n")] = 0;
    if (!strncmp(line, "model name", 10) && !strcmp(model, "unknown"))
      snprintf(model, sizeof model, "%s", v);
    else if (!strncmp(line, "cpu family", 10) && family[0] == '?')
      snprintf(family, sizeof family, "%s", v);
    else if (!strncmp(line, "model\t", 6) && number[0] == '?')
      snprintf(number, sizeof number, "%s", v);
  }
  if (f) fclose(f);
  printf("# cpu: %s (family %s, model %s)\n", model, family, number);
  printf("# vector extensions:");
#if defined(__x86_64__) && defined(__GNUC__)
  __builtin_cpu_init();
  if (__builtin_cpu_supports("sse4.2")) printf(" sse4.2");
  if (__builtin_cpu_supports("avx")) printf(" avx");
  if (__builtin_cpu_supports("avx2")) printf(" avx2");
  if (__builtin_cpu_supports("fma")) printf(" fma");
  if (__builtin_cpu_supports("avx512f")) printf(" avx512f");
  if (__builtin_cpu_supports("avx512bw")) printf(" avx512bw");
  if (__builtin_cpu_supports("avx512vl")) printf(" avx512vl");
#else
  printf(" (not x86-64: not probed)");
#endif
  printf("\n# opd reductions: %s\n", opd_kernels_cpu_isa());
}

/* ---- boxed calls ---- */

/* One boxed call of `op` with the arguments built by `push`; the result is dropped. */
typedef void (*push_fn)(opd_stack *st, void *arg);

typedef struct args {
  opd_tensor *a, *b, *c, *out;
} args;

static double median(double *runs) {
  qsort(runs + 1, REPS, sizeof *runs, cmp_double); /* runs[0] is the warm-up */
  return runs[1 + REPS / 2];
}

static void bench_call(const char *workload, const char *name, push_fn push, args *arg,
                       int64_t bytes) {
  const char *only = getenv("OPD_BENCH_ONLY");
  if (only && strncmp(workload, only, strlen(only)) != 0) return;
  const opd_operator *op = opd_find_schema(name);
  if (!op) die(name);
  double runs[REPS + 1];
  for (int r = 0; r <= REPS; r++) {
    opd_stack st;
    opd_stack_init(&st);
    push(&st, arg);
    double t0 = now_s();
    if (opd_call_boxed(op, &st) != 0) die(name);
    runs[r] = now_s() - t0;
    opd_stack_destroy(&st);
  }
  printf("opd %s %.6f\n", workload, median(runs));
  if (bytes) printf("bytes %s %lld\n", workload, (long long)bytes);
  fflush(stdout);
}

/* The copy reference: memcpy of 64 MiB between two buffers touched before. */
static void bench_memcpy(void) {
  char *src = opd__malloc((size_t)F32_16M), *dst = opd__malloc((size_t)F32_16M);
  if (!src || !dst) die("memcpy buffers");
  memset(src, 1, (size_t)F32_16M);
  memset(dst, 0, (size_t)F32_16M);
  double runs[REPS + 1];
  for (int r = 0; r <= REPS; r++) {
    double t0 = now_s();
    memcpy(dst, src, (size_t)F32_16M);
    runs[r] = now_s() - t0;
    src[r] ^= dst[F32_16M - 1 - r]; /* keeps the copies from being dropped */
  }
  printf("opd copy_memcpy_16M %.6f\nbytes copy_memcpy_16M %lld\n", median(runs),
         (long long)(2 * F32_16M));
  opd__free(src);
  opd__free(dst);
}

static void push_int_list(opd_stack *st, int64_t v) {
  opd_ivalue dims;
  if (opd_iv_make_int_list(&dims, &v, 1) != 0) die("int list");
  opd_stack_push(st, dims);
}

static void push_add(opd_stack *st, void *p) {
  args *x = p;
  opd_stack_push(st, opd_iv_tensor_borrow(x->a));
  opd_stack_push(st, opd_iv_tensor_borrow(x->b));
  opd_stack_push(st, opd_iv_int(1));
}

static void push_add_out(opd_stack *st, void *p) { /* out = a + b into an existing out */
  push_add(st, p);
  opd_stack_push(st, opd_iv_tensor_borrow(((args *)p)->out));
}

static void push_copy(opd_stack *st, void *p) { /* out.copy_(a) */
  args *x = p;
  opd_stack_push(st, opd_iv_tensor_borrow(x->out));
  opd_stack_push(st, opd_iv_tensor_borrow(x->a));
  opd_stack_push(st, opd_iv_bool(false));
}

static void push_unary(opd_stack *st, void *p) {
  opd_stack_push(st, opd_iv_tensor_borrow(((args *)p)->a));
}

static void push_gelu(opd_stack *st, void *p) {
  opd_ivalue none;
  if (opd_iv_make_string(&none, "none", 4) != 0) die("string");
  push_unary(st, p);
  opd_stack_push(st, none);
}

static void push_sum_last(opd_stack *st, void *p) { /* sum.dim_IntList and mean.dim */
  push_unary(st, p);
  push_int_list(st, -1);
  opd_stack_push(st, opd_iv_bool(false));
  opd_stack_push(st, opd_iv_none());
}

static void push_amax_last(opd_stack *st, void *p) {
  push_unary(st, p);
  push_int_list(st, -1);
  opd_stack_push(st, opd_iv_bool(false));
}

static void push_softmax_last(opd_stack *st, void *p) {
  push_unary(st, p);
  opd_stack_push(st, opd_iv_int(-1));
  opd_stack_push(st, opd_iv_none());
}

static void push_layer_norm(opd_stack *st, void *p) { /* normalized over the last dim */
  args *x = p;
  push_unary(st, p);
  push_int_list(st, opd_tensor_sizes(x->a)[x->a->ndim - 1]);
  opd_stack_push(st, opd_iv_tensor_borrow(x->b));
  opd_stack_push(st, opd_iv_tensor_borrow(x->c));
  opd_stack_push(st, opd_iv_double(1e-5));
  opd_stack_push(st, opd_iv_bool(true));
}

static void push_two(opd_stack *st, void *p) { /* mm, bmm */
  args *x = p;
  opd_stack_push(st, opd_iv_tensor_borrow(x->a));
  opd_stack_push(st, opd_iv_tensor_borrow(x->b));
}

static void push_embedding(opd_stack *st, void *p) { /* weight, indices */
  push_two(st, p);
  opd_stack_push(st, opd_iv_int(-1));
  opd_stack_push(st, opd_iv_bool(false));
  opd_stack_push(st, opd_iv_bool(false));
}

static void release(args *x) {
  opd_tensor *t[] = {x->a, x->b, x->c, x->out};
  for (int i = 0; i < 4; i++)
    if (t[i]) opd_tensor_release(t[i]);
  *x = (args){0};
}

int main(void) {
  if (opd_kernels_register() != 0) die("register");
  print_machine();
  int64_t n16m[] = {N16M}, rows[] = {4096, 1024}, cols[] = {1024};
  const int64_t rows_bytes = 4096 * 1024 * (int64_t)sizeof(float);

  bench_memcpy();
  args x = {random_tensor(n16m, 1), random_tensor(n16m, 1), NULL, random_tensor(n16m, 1)};
  bench_call("copy_16M", "aten::copy_", push_copy, &x, 2 * F32_16M);
  bench_call("add_16M", "aten::add.Tensor", push_add, &x, 3 * F32_16M);
  bench_call("add_into_16M", "aten::add.out", push_add_out, &x, 3 * F32_16M);
  bench_call("exp_16M", "aten::exp", push_unary, &x, 2 * F32_16M);
  bench_call("gelu_16M", "aten::gelu", push_gelu, &x, 2 * F32_16M);
  release(&x);

  args r = {random_tensor(rows, 2), random_tensor(cols, 1), random_tensor(cols, 1), NULL};
  bench_call("sum_4096x1024", "aten::sum.dim_IntList", push_sum_last, &r, rows_bytes);
  bench_call("mean_4096x1024", "aten::mean.dim", push_sum_last, &r, rows_bytes);
  bench_call("amax_4096x1024", "aten::amax", push_amax_last, &r, rows_bytes);
  bench_call("softmax_4096x1024", "aten::softmax.int", push_softmax_last, &r, 2 * rows_bytes);
  bench_call("layer_norm_4096x1024", "aten::layer_norm", push_layer_norm, &r, 2 * rows_bytes);
  release(&r);

  /* embedding: 4096 rows gathered from a 50257 x 768 table (GPT-2's) */
  int64_t table[] = {50257, 768}, nidx[] = {4096};
  args e = {random_tensor(table, 2), empty(nidx, 1, OPD_INT64), NULL, NULL};
  int64_t *idx = opd_tensor_data(e.b);
  uint32_t s = 777;
  for (int64_t i = 0; i < nidx[0]; i++) {
    s = s * 1664525u + 1013904223u;
    idx[i] = (int64_t)(s >> 8) % table[0];
  }
  bench_call("embedding_4096", "aten::embedding", push_embedding, &e,
             2 * nidx[0] * table[1] * (int64_t)sizeof(float));
  release(&e);

  int64_t batch[] = {64, 128, 128};
  args b = {random_tensor(batch, 3), random_tensor(batch, 3), NULL, NULL};
  bench_call("bmm_64x128x128", "aten::bmm", push_two, &b, 0);
  release(&b);
  for (int64_t n = 1024; n <= 2048; n *= 2) {
    int64_t sq[] = {n, n};
    char name[32];
    snprintf(name, sizeof name, "mm_%lld", (long long)n);
    args m = {random_tensor(sq, 2), random_tensor(sq, 2), NULL, NULL};
    bench_call(name, "aten::mm", push_two, &m, 0);
    release(&m);
  }
  return 0;
}

/* kernels_bench.c: opd-bench-kernels, seconds per call of opd's CPU kernels through the
 * dispatcher, on the workloads of docs/PERFORMANCE.md (bench/kernels_peers.py measures
 * numpy and PyTorch on the same ones; bench/run_kernels_bench.sh runs both and prints the
 * ratios). Each workload: one warm-up call, then REPS timed calls; prints the median as
 * "opd <workload> <seconds>". Threads: OPD_NUM_THREADS (default: all cores). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "opd/kernels.h"
#include "opd/tensor.h"
#include "opd/unboxed.h"

enum { REPS = 7 };

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static opd_tensor *random_tensor(const int64_t *sizes, int ndim) {
  opd_tensor *t;
  if (opd_tensor_empty(sizes, ndim, OPD_FLOAT32, (opd_device){OPD_DEVICE_CPU, -1}, &t) != 0) {
    fprintf(stderr, "opd-bench-kernels: %s\n", opd_last_error());
    exit(1);
  }
  float *p = opd_tensor_data(t);
  uint32_t x = 12345;
  for (int64_t i = 0; i < t->numel; i++) {
    x = x * 1664525u + 1013904223u;
    p[i] = (float)(x >> 8) / 16777216.0f * 4.0f - 2.0f;
  }
  return t;
}

/* One boxed call of `op` with the arguments built by `push`; the result is dropped. */
typedef void (*push_fn)(opd_stack *st, void *arg);

static double time_call(const char *name, push_fn push, void *arg) {
  const opd_operator *op = opd_find_schema(name);
  if (!op) {
    fprintf(stderr, "opd-bench-kernels: %s\n", opd_last_error());
    exit(1);
  }
  double runs[REPS + 1];
  for (int r = 0; r <= REPS; r++) {
    opd_stack st;
    opd_stack_init(&st);
    push(&st, arg);
    double t0 = now_s();
    if (opd_call_boxed(op, &st) != 0) {
      fprintf(stderr, "opd-bench-kernels: %s: %s\n", name, opd_last_error());
      exit(1);
    }
    runs[r] = now_s() - t0;
    opd_stack_destroy(&st);
  }
  qsort(runs + 1, REPS, sizeof *runs, cmp_double); /* runs[0] is the warm-up */
  return runs[1 + REPS / 2];
}

typedef struct args {
  opd_tensor *a, *b, *out;
} args;

static void push_add(opd_stack *st, void *p) {
  args *x = p;
  opd_stack_push(st, opd_iv_tensor_borrow(x->a));
  opd_stack_push(st, opd_iv_tensor_borrow(x->b));
  opd_stack_push(st, opd_iv_int(1));
}

static void push_add_out(opd_stack *st, void *p) { /* out = a + b into an existing out */
  args *x = p;
  push_add(st, p);
  opd_stack_push(st, opd_iv_tensor_borrow(x->out));
}

static void push_unary(opd_stack *st, void *p) {
  opd_stack_push(st, opd_iv_tensor_borrow(((args *)p)->a));
}

static void push_sum_last(opd_stack *st, void *p) {
  opd_ivalue dims;
  int64_t last = -1;
  opd_iv_make_int_list(&dims, &last, 1);
  opd_stack_push(st, opd_iv_tensor_borrow(((args *)p)->a));
  opd_stack_push(st, dims);
  opd_stack_push(st, opd_iv_bool(false));
  opd_stack_push(st, opd_iv_none());
}

static void push_softmax_last(opd_stack *st, void *p) {
  opd_stack_push(st, opd_iv_tensor_borrow(((args *)p)->a));
  opd_stack_push(st, opd_iv_int(-1));
  opd_stack_push(st, opd_iv_none());
}

static void push_mm(opd_stack *st, void *p) {
  args *x = p;
  opd_stack_push(st, opd_iv_tensor_borrow(x->a));
  opd_stack_push(st, opd_iv_tensor_borrow(x->b));
}

int main(void) {
  if (opd_kernels_register() != 0) {
    fprintf(stderr, "opd-bench-kernels: %s\n", opd_last_error());
    return 1;
  }
  int64_t n16m[] = {16 << 20}, rows[] = {4096, 1024};
  args x = {random_tensor(n16m, 1), random_tensor(n16m, 1), random_tensor(n16m, 1)};
  printf("opd add_16M %.6f\n", time_call("aten::add.Tensor", push_add, &x));
  printf("opd add_into_16M %.6f\n", time_call("aten::add.out", push_add_out, &x));
  printf("opd exp_16M %.6f\n", time_call("aten::exp", push_unary, &x));
  opd_tensor_release(x.a);
  opd_tensor_release(x.b);
  opd_tensor_release(x.out);
  args r = {random_tensor(rows, 2), NULL, NULL};
  printf("opd sum_4096x1024 %.6f\n", time_call("aten::sum.dim_IntList", push_sum_last, &r));
  printf("opd softmax_4096x1024 %.6f\n", time_call("aten::softmax.int", push_softmax_last, &r));
  opd_tensor_release(r.a);
  for (int64_t n = 1024; n <= 2048; n *= 2) {
    int64_t sq[] = {n, n};
    args m = {random_tensor(sq, 2), random_tensor(sq, 2), NULL};
    printf("opd mm_%lld %.6f\n", (long long)n, time_call("aten::mm", push_mm, &m));
    opd_tensor_release(m.a);
    opd_tensor_release(m.b);
  }
  return 0;
}

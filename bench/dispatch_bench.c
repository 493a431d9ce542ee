/* dispatch_bench.c: opd-bench-dispatch, ns per call of opd's dispatcher.
 *
 * On a no-op operator `opdbench::noop(Tensor a, Tensor b) -> Tensor` whose CPU kernel
 * returns `a` (one reference count bump), with two CPU tensors and the default
 * thread-local state (so AutogradCPU, ADInplaceOrView and BackendSelect are in the key set
 * and fall through, as in a normal PyTorch call):
 *   lookup      key set -> table slot -> kernel (opd_op_lookup), on a set computed once;
 *   typed_call  a typed call (OPD_DEFINE_TYPED_CALL) reaching the unboxed kernel: key
 *               extraction, TLS, fallthrough mask, lookup, call;
 *   boxed_call  opd_call_boxed with both tensors pushed (borrowed, as the server pushes
 *               handles) and the result popped each time, reaching the boxed kernel.
 * typed_call and boxed_call measure `opdbench::noop_void(Tensor a, Tensor b) -> ()`, a true
 * no-op; the *_ret variants measure `noop`, whose returned tensor costs a reference count
 * increment and decrement (two atomic operations, about 8 ns each on the reference machine)
 * in both implementations.
 * The method matches bench/torch_dispatch_bench.cpp: a warm-up pass, 5 repetitions of
 * 2,000,000 calls, the median; one line per measurement, "opd <name> <ns_per_call>".
 * Run pinned: taskset -c 1 opd-bench-dispatch (bench/run_dispatch_bench.sh does both).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "opd/dispatcher.h"
#include "opd/tensor.h"
#include "opd/unboxed.h"

enum { ITERS = 2000000, WARMUP = 200000, REPS = 5 };

static volatile uintptr_t sink;

static int noop_cpu(const opd_kernel_ctx *ctx, opd_tensor *a, opd_tensor *b, opd_tensor **out) {
  (void)ctx;
  (void)b;
  opd_tensor_retain(a);
  *out = a;
  return 0;
}
OPD_BOXED_WRAPPER(noop_cpu, Tensor, Tensor, Tensor)

static int noop_void_cpu(const opd_kernel_ctx *ctx, opd_tensor *a, opd_tensor *b) {
  (void)ctx;
  sink ^= (uintptr_t)a ^ (uintptr_t)b;
  return 0;
}
OPD_BOXED_WRAPPER(noop_void_cpu, Void, Tensor, Tensor)

static int noop_boxed(const opd_kernel_ctx *ctx, opd_stack *stack) {
  (void)ctx;
  opd_stack_drop(stack, 1); /* b */
  return 0;                 /* a stays as the result */
}

static int noop_void_boxed(const opd_kernel_ctx *ctx, opd_stack *stack) {
  (void)ctx;
  opd_stack_drop(stack, 2);
  return 0;
}

OPD_DEFINE_TYPED_CALL(noop_call, Tensor, Tensor, Tensor)
OPD_DEFINE_TYPED_CALL(noop_void_call, Void, Tensor, Tensor)

static double now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

typedef void (*bench_fn)(int iters);
static const opd_operator *typed_op, *boxed_op, *void_typed_op, *void_boxed_op;
static opd_tensor *ta, *tb;

static void bench_lookup(int iters) {
  volatile uint64_t repr = opd_call_keyset(typed_op, opd_tensor_key_set(ta)).repr;
  for (int i = 0; i < iters; i++)
    sink ^= (uintptr_t)opd_op_lookup(typed_op, opd_keyset_from_repr(repr));
}

static void bench_typed_ret(int iters) {
  for (int i = 0; i < iters; i++) {
    opd_tensor *out;
    if (noop_call(typed_op, ta, tb, &out) != 0) abort();
    sink ^= (uintptr_t)out;
    opd_tensor_release(out);
  }
}

static void bench_typed(int iters) {
  for (int i = 0; i < iters; i++)
    if (noop_void_call(void_typed_op, ta, tb) != 0) abort();
}

static void boxed_loop(const opd_operator *op, int iters, bool has_result) {
  opd_stack st;
  opd_stack_init(&st);
  for (int i = 0; i < iters; i++) {
    opd_stack_push(&st, opd_iv_tensor_borrow(ta));
    opd_stack_push(&st, opd_iv_tensor_borrow(tb));
    if (opd_call_boxed(op, &st) != 0) abort();
    if (has_result) {
      opd_ivalue r = opd_stack_pop(&st);
      sink ^= (uintptr_t)r.u.t;
      opd_iv_destroy(&r);
    }
  }
  opd_stack_destroy(&st);
}

static void bench_boxed_ret(int iters) {
  boxed_loop(boxed_op, iters, true);
}
static void bench_boxed(int iters) {
  boxed_loop(void_boxed_op, iters, false);
}

static double median_ns(bench_fn fn) {
  double runs[REPS];
  fn(WARMUP);
  for (int r = 0; r < REPS; r++) {
    double t0 = now_ns();
    fn(ITERS);
    runs[r] = (now_ns() - t0) / ITERS;
  }
  qsort(runs, REPS, sizeof *runs, cmp_double);
  return runs[REPS / 2];
}

static const opd_operator *setup(const char *ns, const char *schema, const opd_kernel *k) {
  char name[64];
  snprintf(name, sizeof name, "%s::%.*s", ns, (int)strcspn(schema, "("), schema);
  const opd_operator *op = NULL;
  if (opd_def(ns, schema, OPD_HERE) < 0 || opd_impl(name, OPD_KEY_CPU, k, OPD_HERE) < 0 ||
      !(op = opd_find_schema(name))) {
    fprintf(stderr, "opd-bench-dispatch: setup failed: %s\n", opd_last_error());
    exit(1);
  }
  return op;
}

int main(void) {
  opd_kernel unboxed = OPD_UNBOXED_KERNEL(noop_cpu, Tensor, Tensor, Tensor);
  opd_kernel unboxed_void = OPD_UNBOXED_KERNEL(noop_void_cpu, Void, Tensor, Tensor);
  opd_kernel boxed = {.boxed = noop_boxed, .name = "noop_boxed"};
  opd_kernel boxed_void = {.boxed = noop_void_boxed, .name = "noop_void_boxed"};
  typed_op = setup("opdbench", "noop(Tensor a, Tensor b) -> Tensor", &unboxed);
  void_typed_op = setup("opdbench", "noop_void(Tensor a, Tensor b) -> ()", &unboxed_void);
  boxed_op = setup("opdbench_boxed", "noop(Tensor a, Tensor b) -> Tensor", &boxed);
  void_boxed_op = setup("opdbench_boxed", "noop_void(Tensor a, Tensor b) -> ()", &boxed_void);
  if (!opd_find_typed("opdbench::noop", OPD_SIGNATURE(Tensor, Tensor, Tensor)) ||
      !opd_find_typed("opdbench::noop_void", OPD_SIGNATURE(Void, Tensor, Tensor))) {
    fprintf(stderr, "opd-bench-dispatch: %s\n", opd_last_error());
    return 1;
  }
  ta = opd_tensor_new(OPD_KEY_CPU, false);
  tb = opd_tensor_new(OPD_KEY_CPU, false);
  printf("opd lookup %.1f\n", median_ns(bench_lookup));
  printf("opd typed_call_ret %.1f\n", median_ns(bench_typed_ret));
  printf("opd boxed_call_ret %.1f\n", median_ns(bench_boxed_ret));
  printf("opd typed_call %.1f\n", median_ns(bench_typed));
  printf("opd boxed_call %.1f\n", median_ns(bench_boxed));
  opd_tensor_release(ta);
  opd_tensor_release(tb);
  return 0;
}

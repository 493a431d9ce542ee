/* test_rcu.c: registration under traffic ([Note: Registration under traffic] in
 * dispatcher/src/registry.c): a slot that turns into a fallthrough falls through until
 * the grace period ends, registration changes wait for online readers, and a stress test
 * in which 16 reader threads call an operator (boxed and typed) while another thread
 * registers and removes its CPU kernel 1,000 times: no call fails, every result is one of
 * the two kernels', nothing leaks and nothing freed is touched (run under ASan).
 */
#include <check.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>

#include "opd/allocator.h"
#include "opd/dispatcher.h"
#include "opd/introspect.h"
#include "opd/tensor.h"
#include "opd/unboxed.h"

Suite *opd_test_rcu_suite(void);

/* Both kernels return a new Meta tensor whose one size says which kernel ran: 1 for the
 * CompositeImplicitAutograd kernel, 2 for the CPU kernel. */
static int result_of(int64_t which, opd_tensor **out) {
  return opd_tensor_empty(&which, 1, OPD_FLOAT32, (opd_device){OPD_DEVICE_META, -1}, out);
}

static int math_kernel(const opd_kernel_ctx *ctx, opd_tensor *a, opd_tensor **out) {
  (void)ctx;
  (void)a;
  return result_of(1, out);
}
OPD_BOXED_WRAPPER(math_kernel, Tensor, Tensor)

static int cpu_kernel(const opd_kernel_ctx *ctx, opd_tensor *a, opd_tensor **out) {
  /* reads its registration's data: a freed registration would show under ASan */
  ck_assert_ptr_eq(ctx->data, (void *)&cpu_kernel);
  (void)a;
  return result_of(2, out);
}
OPD_BOXED_WRAPPER(cpu_kernel, Tensor, Tensor)

OPD_DEFINE_TYPED_CALL(call_f, Tensor, Tensor)

static opd_kernel cpu_unboxed(void) {
  opd_kernel k = OPD_UNBOXED_KERNEL(cpu_kernel, Tensor, Tensor);
  k.data = (void *)&cpu_kernel;
  return k;
}

static opd_kernel cpu_boxed_only(void) {
  opd_kernel k = cpu_unboxed();
  k.unboxed = NULL;
  k.signature = NULL;
  return k;
}

typedef struct fixture {
  opd_reg_id def, math;
  const opd_operator *op;
  opd_tensor *input; /* CPU */
} fixture;

static fixture setup(const char *ns) {
  fixture f;
  f.def = opd_def(ns, "f(Tensor a) -> Tensor", OPD_HERE);
  ck_assert_int_gt(f.def, 0);
  char name[64];
  snprintf(name, sizeof name, "%s::f", ns);
  opd_kernel math = OPD_UNBOXED_KERNEL(math_kernel, Tensor, Tensor);
  f.math = opd_impl(name, OPD_KEY_CompositeImplicitAutograd, &math, OPD_HERE);
  ck_assert_int_gt(f.math, 0);
  f.op = opd_find_typed(name, OPD_SIGNATURE(Tensor, Tensor));
  ck_assert_ptr_nonnull(f.op);
  int64_t size = 3;
  ck_assert_int_eq(
      opd_tensor_empty(&size, 1, OPD_FLOAT32, (opd_device){OPD_DEVICE_CPU, -1}, &f.input), 0);
  return f;
}

static void teardown(fixture *f) {
  opd_tensor_release(f->input);
  ck_assert_int_eq(opd_deregister(f->math), 0);
  ck_assert_int_eq(opd_deregister(f->def), 0);
}

/* Which kernel a boxed call with key set `ks` ran (1 or 2), or the error. */
static int64_t call_with(const opd_operator *op, opd_keyset ks, opd_tensor *input) {
  opd_stack st;
  opd_stack_init(&st);
  ck_assert_int_eq(opd_stack_push(&st, opd_iv_tensor_borrow(input)), 0);
  int rc = opd_call_boxed_with_keyset(op, ks, &st);
  int64_t r = rc;
  if (rc == 0) {
    ck_assert_uint_eq(st.size, 1);
    opd_ivalue v = opd_stack_pop(&st);
    r = opd_tensor_sizes(v.u.t)[0];
    opd_iv_destroy(&v);
  }
  opd_stack_destroy(&st);
  return r;
}

/* ---- a slot that becomes a fallthrough falls through during the grace period ---- */

static atomic_int reader_state; /* 1: online, 2: may go */
static atomic_int writer_done;
static fixture pending_f;
static opd_reg_id pending_id;

static void *online_reader(void *arg) {
  (void)arg;
  opd_reader_register();
  atomic_store(&reader_state, 1);
  while (atomic_load(&reader_state) != 2) sched_yield();
  opd_reader_unregister();
  return NULL;
}

static void *register_cpu(void *arg) {
  (void)arg;
  opd_kernel k = cpu_unboxed();
  pending_id = opd_impl("t_rcu_pending::f", OPD_KEY_CPU, &k, OPD_HERE);
  atomic_store(&writer_done, 1);
  return NULL;
}

START_TEST(test_pending_fallthrough) {
  pending_f = setup("t_rcu_pending");
  opd_keyset autograd_cpu =
      opd_keyset_union(opd_keyset_of(OPD_KEY_CPU), opd_keyset_of(OPD_KEY_AutogradCPU));
  /* before: AutogradCPU runs the math kernel (no CPU kernel blocks it) */
  ck_assert_int_eq(call_with(pending_f.op, autograd_cpu, pending_f.input), 1);

  atomic_store(&reader_state, 0);
  atomic_store(&writer_done, 0);
  pthread_t reader, writer;
  ck_assert_int_eq(pthread_create(&reader, NULL, online_reader, NULL), 0);
  while (atomic_load(&reader_state) != 1) sched_yield();
  ck_assert_int_eq(pthread_create(&writer, NULL, register_cpu, NULL), 0);
  /* the CPU kernel blocks the math kernel at AutogradCPU, whose slot becomes the backend
   * fallback's fallthrough: while the reader is online the slot falls through to CPU */
  int64_t r = 1;
  for (int i = 0; i < 1000000 && r == 1; i++) {
    r = call_with(pending_f.op, autograd_cpu, pending_f.input);
    if (r == 1) sched_yield();
  }
  ck_assert_int_eq(r, 2);
  int done = atomic_load(&writer_done);
  ck_assert_int_eq(done, 0); /* it waits for the online reader */
  atomic_store(&reader_state, 2);
  pthread_join(reader, NULL);
  pthread_join(writer, NULL);
  ck_assert_int_gt(pending_id, 0);
  /* settled: the ordinary fallthrough kernel, which reports a misdirected call */
  ck_assert_int_eq(call_with(pending_f.op, autograd_cpu, pending_f.input), OPD_EFALLTHROUGH);
  ck_assert_int_eq(opd_op_count_stale_slots(pending_f.op), 0);
  /* an ordinary call of a CPU tensor reaches the CPU kernel */
  opd_tensor *out = NULL;
  ck_assert_int_eq(call_f(pending_f.op, pending_f.input, &out), 0);
  ck_assert_int_eq(opd_tensor_sizes(out)[0], 2);
  opd_tensor_release(out);

  ck_assert_int_eq(opd_deregister(pending_id), 0);
  ck_assert_int_eq(call_with(pending_f.op, autograd_cpu, pending_f.input), 1);
  teardown(&pending_f);
}
END_TEST

/* ---- the stress test ---- */

enum { READERS = 16, CHANGES = 1000 };

static fixture stress_f;
static atomic_bool stop;
static atomic_long calls, failures, saw[3];

static void *stress_reader(void *arg) {
  uintptr_t index = (uintptr_t)arg;
  opd_reader_register();
  while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
    int64_t which;
    if (index % 2) {
      opd_tensor *out = NULL;
      int rc = call_f(stress_f.op, stress_f.input, &out);
      which = rc == 0 ? opd_tensor_sizes(out)[0] : rc;
      if (out) opd_tensor_release(out);
    } else {
      opd_stack st;
      opd_stack_init(&st);
      opd_stack_push(&st, opd_iv_tensor_borrow(stress_f.input));
      int rc = opd_call_boxed(stress_f.op, &st);
      which = rc == 0 && st.size == 1 ? opd_tensor_sizes(st.items[0].u.t)[0] : rc;
      opd_stack_destroy(&st);
    }
    atomic_fetch_add_explicit(&calls, 1, memory_order_relaxed);
    if (which == 1 || which == 2)
      atomic_fetch_add_explicit(&saw[which], 1, memory_order_relaxed);
    else
      atomic_fetch_add_explicit(&failures, 1, memory_order_relaxed);
    opd_reader_quiescent();
    /* 16 busy threads on a few cores: yield, so that a grace period (every reader
     * scheduled once) lasts microseconds, not scheduler time slices */
    sched_yield();
  }
  opd_reader_unregister();
  return NULL;
}

START_TEST(test_stress_register_deregister) {
  stress_f = setup("t_rcu_stress");
  atomic_store(&stop, false);
  atomic_store(&calls, 0);
  atomic_store(&failures, 0);
  for (int i = 0; i < 3; i++) atomic_store(&saw[i], 0);
  pthread_t readers[READERS];
  for (uintptr_t i = 0; i < READERS; i++)
    ck_assert_int_eq(pthread_create(&readers[i], NULL, stress_reader, (void *)i), 0);
  for (int i = 0; i < CHANGES; i++) {
    /* unboxed and boxed-only kernels in turn: typed calls take both paths */
    opd_kernel k = i % 2 ? cpu_unboxed() : cpu_boxed_only();
    opd_reg_id id = opd_impl("t_rcu_stress::f", OPD_KEY_CPU, &k, OPD_HERE);
    ck_assert_int_gt(id, 0);
    sched_yield();
    ck_assert_int_eq(opd_deregister(id), 0);
  }
  atomic_store(&stop, true);
  for (int i = 0; i < READERS; i++) pthread_join(readers[i], NULL);
  long n = atomic_load(&calls), failed = atomic_load(&failures);
  long ran_math = atomic_load(&saw[1]), ran_cpu = atomic_load(&saw[2]);
  ck_assert_int_eq(failed, 0);
  ck_assert_int_gt(n, 0);
  ck_assert_int_eq(ran_math + ran_cpu, n);
  ck_assert_int_eq(opd_op_count_stale_slots(stress_f.op), 0);
  opd_tensor *out = NULL;
  ck_assert_int_eq(call_f(stress_f.op, stress_f.input, &out), 0);
  ck_assert_int_eq(opd_tensor_sizes(out)[0], 1); /* the CPU kernel is gone */
  opd_tensor_release(out);
  teardown(&stress_f);
}
END_TEST

Suite *opd_test_rcu_suite(void) {
  Suite *s = suite_create("rcu");
  TCase *tc = tcase_create("rcu");
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, test_pending_fallthrough);
  tcase_add_test(tc, test_stress_register_deregister);
  suite_add_tcase(s, tc);
  return s;
}

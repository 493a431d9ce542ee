/* test_calls.c: tests of the call path (call.c, opd/unboxed.h): boxing in all four
 * directions, `-> ()` returns, typed-call signature checks, redispatch (boxed and typed),
 * the Tracer fallback, the thread-local include / exclude sets, Tensor[] / Tensor?[] /
 * Tensor? key extraction, and the errors a call can end in (NotImplemented, ambiguous
 * AutogradOther, no tensor arguments, FallthroughExecuted, undefined operator), each of
 * which must leave the stack empty and every tensor's reference count balanced.
 *
 * Expected outcomes follow tests/fixtures/oracle/FORMAT.md sections 4 to 6 (PyTorch 1.13);
 * the directed scenario each case mirrors is named in a comment. Each test uses its own
 * namespace and removes what it registers, so the suite also passes with CK_FORK=no.
 */
#include <check.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "opd/dispatcher.h"
#include "opd/error.h"
#include "opd/introspect.h"
#include "opd/tensor.h"
#include "opd/unboxed.h"

Suite *opd_test_calls_suite(void);

/* ---- what kernels saw ---- */

static struct {
  int calls;
  char order[256]; /* "autograd,cpu," */
  const char *kernel;
  opd_tensor *self, *other;
  opd_scalar alpha;
  int64_t dims[8];
  int64_t ndims; /* -1: None */
  char mode[32];
  bool has_mode;
  int64_t n;
  opd_keyset ks;
} seen;

static void reset_seen(void) {
  memset(&seen, 0, sizeof seen);
}

static void saw(const opd_kernel_ctx *ctx) {
  seen.calls++;
  seen.kernel = ctx->data;
  seen.ks = ctx->ks;
  size_t used = strlen(seen.order);
  snprintf(seen.order + used, sizeof seen.order - used, "%s,", (const char *)ctx->data);
}

static void saw_rich(opd_tensor *self, opd_tensor *other, opd_scalar alpha, opd_int_list dims,
                     const char *mode) {
  seen.self = self;
  seen.other = other;
  seen.alpha = alpha;
  seen.ndims = dims.len;
  for (int64_t i = 0; i < dims.len && i < 8; i++) seen.dims[i] = dims.data[i];
  seen.has_mode = mode != NULL;
  if (mode) snprintf(seen.mode, sizeof seen.mode, "%s", mode);
}

static uint32_t refs(opd_tensor *t) {
  return (uint32_t)atomic_load(&t->refcount);
}

static opd_tensor *tensor(opd_dispatch_key k) {
  opd_tensor *t = opd_tensor_new(k, false);
  ck_assert_ptr_nonnull(t);
  return t;
}

/* ---- kernels ---- */

/* Any schema: drops the arguments, records, returns a new CPU tensor or nothing. */
static int marker_kernel(const opd_kernel_ctx *ctx, opd_stack *stack) {
  const opd_schema *s = opd_op_schema(ctx->op);
  opd_stack_drop(stack, s->num_args);
  saw(ctx);
  if (s->num_returns == 0) return 0;
  return opd_stack_push(stack, opd_iv_tensor_steal(tensor(OPD_KEY_CPU)));
}

/* Records, then calls the next kernel below. */
static int redispatching_kernel(const opd_kernel_ctx *ctx, opd_stack *stack) {
  saw(ctx);
  return opd_redispatch_boxed(ctx, stack);
}

/* Fails after dropping its arguments, as a boxed kernel must. */
static int failing_kernel(const opd_kernel_ctx *ctx, opd_stack *stack) {
  opd_stack_drop(stack, opd_op_schema(ctx->op)->num_args);
  saw(ctx);
  return opd_error(OPD_ERESOURCE, "failing kernel");
}

static opd_kernel marker(const char *name) {
  return (opd_kernel){.boxed = marker_kernel, .data = (void *)name, .name = name};
}

/* rich(Tensor self, Tensor other, *, Scalar alpha=1, int[] dims=[], str? mode=None) -> Tensor */
#define RICH_SCHEMA \
  "rich(Tensor self, Tensor other, *, Scalar alpha=1, int[] dims=[], str? mode=None) -> Tensor"

static int rich_boxed(const opd_kernel_ctx *ctx, opd_stack *stack) {
  saw(ctx);
  ck_assert_uint_ge(stack->size, 5);
  opd_ivalue *a = opd_stack_last(stack, 5);
  ck_assert_uint_eq(a[0].tag, OPD_IV_TENSOR);
  ck_assert_uint_eq(a[1].tag, OPD_IV_TENSOR);
  ck_assert(opd_iv_is_scalar(&a[2]));
  ck_assert(a[3].tag == OPD_IV_INT_LIST || a[3].tag == OPD_IV_NONE);
  ck_assert(a[4].tag == OPD_IV_STRING || a[4].tag == OPD_IV_NONE);
  opd_int_list dims = a[3].tag == OPD_IV_INT_LIST ? (opd_int_list){a[3].u.ints, a[3].len}
                                                  : (opd_int_list){NULL, -1};
  saw_rich(a[0].u.t, a[1].u.t, opd_iv_to_scalar(&a[2]), dims,
           a[4].tag == OPD_IV_STRING ? a[4].u.s : NULL);
  opd_ivalue ret = opd_iv_tensor(a[0].u.t);
  opd_stack_drop(stack, 5);
  return opd_stack_push(stack, ret);
}

static int rich_unboxed(const opd_kernel_ctx *ctx, opd_tensor *self, opd_tensor *other,
                        opd_scalar alpha, opd_int_list dims, const char *mode, opd_tensor **out) {
  saw(ctx);
  saw_rich(self, other, alpha, dims, mode);
  opd_tensor_retain(self);
  *out = self;
  return 0;
}
OPD_BOXED_WRAPPER(rich_unboxed, Tensor, Tensor, Tensor, Scalar, IntList, OptStr)
OPD_DEFINE_TYPED_CALL(call_rich, Tensor, Tensor, Tensor, Scalar, IntList, OptStr)

/* void(Tensor a, int n) -> () */
static int void_boxed(const opd_kernel_ctx *ctx, opd_stack *stack) {
  saw(ctx);
  opd_ivalue *a = opd_stack_last(stack, 2);
  ck_assert_uint_eq(a[0].tag, OPD_IV_TENSOR);
  seen.self = a[0].u.t;
  seen.n = a[1].u.i;
  opd_stack_drop(stack, 2);
  return 0;
}
static int void_unboxed(const opd_kernel_ctx *ctx, opd_tensor *a, int64_t n) {
  saw(ctx);
  seen.self = a;
  seen.n = n;
  return 0;
}
OPD_BOXED_WRAPPER(void_unboxed, Void, Tensor, Int)
OPD_DEFINE_TYPED_CALL(call_void, Void, Tensor, Int)

/* unary(Tensor a) -> Tensor, with typed redispatch */
OPD_DEFINE_TYPED_CALL(call_unary, Tensor, Tensor)

static int unary_unboxed(const opd_kernel_ctx *ctx, opd_tensor *a, opd_tensor **out) {
  saw(ctx);
  opd_tensor_retain(a);
  *out = a;
  return 0;
}
OPD_BOXED_WRAPPER(unary_unboxed, Tensor, Tensor)

static opd_keyset redispatch_ks;
static int unary_typed_redispatch(const opd_kernel_ctx *ctx, opd_tensor *a, opd_tensor **out) {
  saw(ctx);
  redispatch_ks = opd_redispatch_keyset(ctx);
  return call_unary_with_keyset(ctx->op, redispatch_ks, a, out);
}
OPD_BOXED_WRAPPER(unary_typed_redispatch, Tensor, Tensor)

/* Typed calls with list and optional tensors. */
OPD_DEFINE_TYPED_CALL(call_optlist, Tensor, OptTensorList)
OPD_DEFINE_TYPED_CALL(call_list, Tensor, TensorList)
OPD_DEFINE_TYPED_CALL(call_opt, Tensor, Tensor, OptTensor)

/* ---- registration bookkeeping ---- */

static opd_reg_id tracked[128];
static int num_tracked;

static opd_reg_id track_(opd_reg_id id, const char *what, int line) {
  ck_assert_msg(id > 0, "line %d: %s failed (%lld): %s", line, what, (long long)id,
                opd_last_error());
  ck_assert_int_lt(num_tracked, 128);
  tracked[num_tracked++] = id;
  return id;
}
#define TRACK(expr) track_((expr), #expr, __LINE__)

static void deregister_all(void) {
  while (num_tracked > 0) ck_assert_int_eq(opd_deregister(tracked[--num_tracked]), 0);
}

static const opd_operator *def(const char *ns, const char *schema) {
  TRACK(opd_def(ns, schema, OPD_HERE));
  char name[256];
  const char *paren = strchr(schema, '(');
  snprintf(name, sizeof name, "%s::%.*s", ns, (int)(paren - schema), schema);
  const opd_operator *op = opd_find_schema(name);
  ck_assert_msg(op != NULL, "%s: %s", name, opd_last_error());
  return op;
}
static void impl_kernel(const opd_operator *op, opd_dispatch_key key, opd_kernel k) {
  TRACK(opd_impl(opd_op_name(op), key, &k, OPD_HERE));
}
static void impl(const opd_operator *op, opd_dispatch_key key, const char *name) {
  impl_kernel(op, key, marker(name));
}
static void impl_redispatch(const opd_operator *op, opd_dispatch_key key, const char *name) {
  impl_kernel(op, key,
              (opd_kernel){.boxed = redispatching_kernel, .data = (void *)name, .name = name});
}

/* ---- thread-local state ---- */

static opd_local_dispatch_state tls_saved;

static void tls_change(opd_keyset include, opd_keyset exclude, opd_keyset unexclude) {
  tls_saved = opd_tls_get();
  opd_local_dispatch_state st = tls_saved;
  st.included = opd_keyset_union(st.included, include);
  st.excluded = opd_keyset_union(st.excluded, exclude);
  st.excluded.repr &= ~unexclude.repr;
  opd_tls_set(st);
}
static void tls_restore(void) {
  opd_tls_set(tls_saved);
}

/* ---- boxed calls ---- */

/* Calls `op` boxed with the values pushed; checks the stack holds the returns on success
 * and nothing on error. */
static int call(const opd_operator *op, opd_stack *st) {
  int rc = opd_call_boxed(op, st);
  if (rc == 0)
    ck_assert_uint_eq(st->size, opd_op_schema(op)->num_returns);
  else
    ck_assert_msg(st->size == 0, "stack holds %u values after error %s", st->size,
                  opd_err_name(rc));
  return rc;
}

/* Calls a one-Tensor operator with a new tensor of backend key k. */
static int call1(const opd_operator *op, opd_dispatch_key k) {
  opd_tensor *t = tensor(k);
  opd_stack st;
  opd_stack_init(&st);
  ck_assert_int_eq(opd_stack_push(&st, opd_iv_tensor(t)), 0);
  reset_seen();
  int rc = call(op, &st);
  opd_stack_destroy(&st);
  ck_assert_uint_eq(refs(t), 1);
  opd_tensor_release(t);
  return rc;
}

/* Calls an operator with one list argument of the given tensors (NULL: None). */
static int call_list_boxed(const opd_operator *op, opd_tensor *const *ts, size_t n, bool optional) {
  opd_stack st;
  opd_stack_init(&st);
  opd_ivalue v;
  ck_assert_int_eq(opd_iv_make_tensor_list(&v, ts, n, optional), 0);
  ck_assert_int_eq(opd_stack_push(&st, v), 0);
  reset_seen();
  int rc = call(op, &st);
  opd_stack_destroy(&st);
  return rc;
}

/* ---- boxing in four directions ---- */

static void push_rich(opd_stack *st, opd_tensor *a, opd_tensor *b, opd_ivalue alpha,
                      const int64_t *dims, size_t ndims, const char *mode) {
  ck_assert_int_eq(opd_stack_push(st, opd_iv_tensor(a)), 0);
  ck_assert_int_eq(opd_stack_push(st, opd_iv_tensor(b)), 0);
  ck_assert_int_eq(opd_stack_push(st, alpha), 0);
  opd_ivalue l, s = opd_iv_none();
  ck_assert_int_eq(opd_iv_make_int_list(&l, dims, ndims), 0);
  ck_assert_int_eq(opd_stack_push(st, l), 0);
  if (mode) ck_assert_int_eq(opd_iv_make_string(&s, mode, strlen(mode)), 0);
  ck_assert_int_eq(opd_stack_push(st, s), 0);
}

START_TEST(test_boxed_call_boxed_kernel) {
  const opd_operator *op = def("t_calls_bb", RICH_SCHEMA);
  impl_kernel(op, OPD_KEY_CPU, (opd_kernel){.boxed = rich_boxed, .data = "bb", .name = "bb"});
  opd_tensor *a = tensor(OPD_KEY_CPU), *b = tensor(OPD_KEY_CPU);
  opd_stack st;
  opd_stack_init(&st);
  const int64_t dims[] = {1, -2, 3};
  push_rich(&st, a, b, opd_iv_int(3), dims, 3, "floor");
  reset_seen();
  ck_assert_int_eq(call(op, &st), 0);
  ck_assert_int_eq(seen.calls, 1);
  ck_assert_str_eq(seen.kernel, "bb");
  ck_assert_ptr_eq(seen.self, a);
  ck_assert_ptr_eq(seen.other, b);
  ck_assert_uint_eq(seen.alpha.tag, OPD_IV_INT);
  ck_assert_int_eq(seen.alpha.u.i, 3);
  ck_assert_int_eq(seen.ndims, 3);
  ck_assert_int_eq(seen.dims[1], -2);
  ck_assert(seen.has_mode);
  ck_assert_str_eq(seen.mode, "floor");
  /* the result replaced the arguments */
  ck_assert_uint_eq(st.items[0].tag, OPD_IV_TENSOR);
  ck_assert_ptr_eq(st.items[0].u.t, a);
  ck_assert_uint_eq(refs(a), 2);
  ck_assert_uint_eq(refs(b), 1);
  opd_stack_destroy(&st);
  ck_assert_uint_eq(refs(a), 1);
  opd_tensor_release(a);
  opd_tensor_release(b);
  deregister_all();
}
END_TEST

START_TEST(test_boxed_call_unboxed_kernel) {
  const opd_operator *op = def("t_calls_bu", RICH_SCHEMA);
  opd_kernel k = OPD_UNBOXED_KERNEL(rich_unboxed, Tensor, Tensor, Tensor, Scalar, IntList, OptStr);
  k.data = "bu";
  ck_assert_str_eq(k.signature, "T:TTsIR");
  impl_kernel(op, OPD_KEY_CPU, k);
  opd_tensor *a = tensor(OPD_KEY_CPU), *b = tensor(OPD_KEY_CPU);
  opd_stack st;
  opd_stack_init(&st);
  push_rich(&st, a, b, opd_iv_double(2.5), NULL, 0, NULL);
  reset_seen();
  ck_assert_int_eq(call(op, &st), 0);
  ck_assert_int_eq(seen.calls, 1);
  ck_assert_str_eq(seen.kernel, "bu");
  ck_assert_ptr_eq(seen.self, a);
  ck_assert_ptr_eq(seen.other, b);
  ck_assert_uint_eq(seen.alpha.tag, OPD_IV_DOUBLE);
  ck_assert_double_eq(seen.alpha.u.d, 2.5);
  ck_assert_int_eq(seen.ndims, 0);
  ck_assert(!seen.has_mode);
  ck_assert_ptr_eq(st.items[0].u.t, a);
  ck_assert_uint_eq(refs(a), 2);
  opd_stack_destroy(&st);
  ck_assert_uint_eq(refs(a), 1);
  ck_assert_uint_eq(refs(b), 1);

  /* the same kernel through the typed call: typed -> unboxed */
  const opd_operator *typed = opd_find_typed(
      "t_calls_bu::rich", OPD_SIGNATURE(Tensor, Tensor, Tensor, Scalar, IntList, OptStr));
  ck_assert_ptr_eq(typed, op);
  opd_tensor *out = NULL;
  const int64_t dims[] = {4, 5};
  reset_seen();
  ck_assert_int_eq(call_rich(op, a, b, (opd_scalar){.tag = OPD_IV_BOOL, .u.b = true},
                             (opd_int_list){dims, 2}, "trunc", &out),
                   0);
  ck_assert_ptr_eq(out, a);
  ck_assert_int_eq(seen.calls, 1);
  ck_assert_str_eq(seen.kernel, "bu");
  ck_assert_ptr_eq(seen.other, b);
  ck_assert_uint_eq(seen.alpha.tag, OPD_IV_BOOL);
  ck_assert(seen.alpha.u.b);
  ck_assert_int_eq(seen.ndims, 2);
  ck_assert_int_eq(seen.dims[0], 4);
  ck_assert_int_eq(seen.dims[1], 5);
  ck_assert_str_eq(seen.mode, "trunc");
  ck_assert_uint_eq(refs(a), 2);
  opd_tensor_release(out);
  ck_assert_uint_eq(refs(a), 1);
  ck_assert_uint_eq(refs(b), 1);
  opd_tensor_release(a);
  opd_tensor_release(b);
  deregister_all();
}
END_TEST

START_TEST(test_typed_call_boxed_kernel) {
  const opd_operator *op = def("t_calls_tb", RICH_SCHEMA);
  impl_kernel(op, OPD_KEY_CPU, (opd_kernel){.boxed = rich_boxed, .data = "tb", .name = "tb"});
  ck_assert_ptr_eq(opd_find_typed("t_calls_tb::rich", "T:TTsIR"), op);
  opd_tensor *a = tensor(OPD_KEY_CPU), *b = tensor(OPD_KEY_CPU), *out = NULL;
  const int64_t dims[] = {7};
  reset_seen();
  ck_assert_int_eq(call_rich(op, a, b, (opd_scalar){.tag = OPD_IV_DOUBLE, .u.d = -0.5},
                             (opd_int_list){dims, 1}, NULL, &out),
                   0);
  ck_assert_int_eq(seen.calls, 1);
  ck_assert_str_eq(seen.kernel, "tb");
  ck_assert_ptr_eq(seen.self, a);
  ck_assert_ptr_eq(seen.other, b);
  ck_assert_uint_eq(seen.alpha.tag, OPD_IV_DOUBLE);
  ck_assert_double_eq(seen.alpha.u.d, -0.5);
  ck_assert_int_eq(seen.ndims, 1);
  ck_assert_int_eq(seen.dims[0], 7);
  ck_assert(!seen.has_mode); /* NULL travelled as None */
  ck_assert_ptr_eq(out, a);
  ck_assert_uint_eq(refs(a), 2);
  ck_assert_uint_eq(refs(b), 1);
  opd_tensor_release(out);

  /* a string and a None int list (len < 0) */
  out = NULL;
  reset_seen();
  ck_assert_int_eq(call_rich(op, b, a, (opd_scalar){.tag = OPD_IV_INT, .u.i = 9},
                             (opd_int_list){NULL, -1}, "floor", &out),
                   0);
  ck_assert_ptr_eq(seen.self, b);
  ck_assert_int_eq(seen.alpha.u.i, 9);
  ck_assert_int_eq(seen.ndims, -1);
  ck_assert_str_eq(seen.mode, "floor");
  ck_assert_ptr_eq(out, b);
  opd_tensor_release(out);
  ck_assert_uint_eq(refs(a), 1);
  ck_assert_uint_eq(refs(b), 1);
  opd_tensor_release(a);
  opd_tensor_release(b);
  deregister_all();
}
END_TEST

START_TEST(test_void_return) {
  const opd_operator *op = def("t_calls_void", "v(Tensor a, int n) -> ()");
  ck_assert_ptr_eq(opd_find_typed("t_calls_void::v", OPD_SIGNATURE(Void, Tensor, Int)), op);
  ck_assert_str_eq(OPD_SIGNATURE(Void, Tensor, Int), "v:Ti");
  const opd_operator *op2 = def("t_calls_void", "w(Tensor a, int n) -> ()");
  opd_kernel k = OPD_UNBOXED_KERNEL(void_unboxed, Void, Tensor, Int);
  k.data = "void_unboxed";
  impl_kernel(op, OPD_KEY_CPU, k);
  impl_kernel(op2, OPD_KEY_CPU,
              (opd_kernel){.boxed = void_boxed, .data = "void_boxed", .name = "void_boxed"});
  opd_tensor *a = tensor(OPD_KEY_CPU);

  for (int which = 0; which < 2; which++) {
    const opd_operator *o = which ? op2 : op;
    const char *kernel = which ? "void_boxed" : "void_unboxed";
    /* boxed call: nothing comes back */
    opd_stack st;
    opd_stack_init(&st);
    ck_assert_int_eq(opd_stack_push(&st, opd_iv_tensor(a)), 0);
    ck_assert_int_eq(opd_stack_push(&st, opd_iv_int(11)), 0);
    reset_seen();
    ck_assert_int_eq(call(o, &st), 0);
    ck_assert_uint_eq(st.size, 0);
    ck_assert_str_eq(seen.kernel, kernel);
    ck_assert_int_eq(seen.n, 11);
    ck_assert_ptr_eq(seen.self, a);
    opd_stack_destroy(&st);
    ck_assert_uint_eq(refs(a), 1);
    /* typed call */
    reset_seen();
    ck_assert_int_eq(call_void(o, a, -4), 0);
    ck_assert_int_eq(seen.calls, 1);
    ck_assert_str_eq(seen.kernel, kernel);
    ck_assert_int_eq(seen.n, -4);
    ck_assert_ptr_eq(seen.self, a);
    ck_assert_uint_eq(refs(a), 1);
  }
  opd_tensor_release(a);
  deregister_all();
}
END_TEST

START_TEST(test_find_typed_rejects_mismatch) {
  def("t_calls_ft", RICH_SCHEMA);
  ck_assert_ptr_nonnull(opd_find_typed("t_calls_ft::rich", "T:TTsIR"));
  const char *wrong[] = {"T:TTsI", "T:TTsIS", "v:TTsIR", "T:TtsIR", "T:TTzIR", "T:TTsJR", ""};
  for (size_t i = 0; i < sizeof wrong / sizeof *wrong; i++) {
    opd_clear_error();
    ck_assert_msg(opd_find_typed("t_calls_ft::rich", wrong[i]) == NULL, "accepted %s", wrong[i]);
    ck_assert_int_eq(opd_last_error_code(), OPD_EINVAL);
  }
  ck_assert_ptr_null(opd_find_typed("t_calls_ft::none", "T:T"));
  ck_assert_int_eq(opd_last_error_code(), OPD_ENOENT);
  /* kernels but no def */
  opd_kernel k = marker("ft_cpu");
  TRACK(opd_impl("t_calls_ft::undefined", OPD_KEY_CPU, &k, OPD_HERE));
  ck_assert_ptr_null(opd_find_typed("t_calls_ft::undefined", "T:T"));
  ck_assert_int_eq(opd_last_error_code(), OPD_ENOENT);
  /* schemas unboxed calls cannot express */
  def("t_calls_ft", "floats(Tensor a, float[] f) -> Tensor");
  ck_assert_ptr_null(opd_find_typed("t_calls_ft::floats", "T:T?"));
  ck_assert_int_eq(opd_last_error_code(), OPD_EINVAL);
  def("t_calls_ft", "pair(Tensor a) -> (Tensor, Tensor)");
  ck_assert_ptr_null(opd_find_typed("t_calls_ft::pair", "T:T"));
  ck_assert_int_eq(opd_last_error_code(), OPD_EINVAL);
  deregister_all();
}
END_TEST

/* ---- redispatch ---- */

START_TEST(test_redispatch_boxed) {
  const opd_operator *op = def("t_calls_rd", "unary(Tensor a) -> Tensor");
  impl_redispatch(op, OPD_KEY_AutogradCPU, "autograd");
  opd_kernel cpu = OPD_UNBOXED_KERNEL(unary_unboxed, Tensor, Tensor);
  cpu.data = "cpu";
  impl_kernel(op, OPD_KEY_CPU, cpu);
  opd_tensor *a = tensor(OPD_KEY_CPU);
  opd_stack st;
  opd_stack_init(&st);
  ck_assert_int_eq(opd_stack_push(&st, opd_iv_tensor(a)), 0);
  reset_seen();
  ck_assert_int_eq(call(op, &st), 0);
  ck_assert_str_eq(seen.order, "autograd,cpu,");
  /* the CPU kernel was reached with a key set below AutogradCPU */
  ck_assert_int_eq(opd_keyset_highest_key(seen.ks), OPD_KEY_CPU);
  ck_assert(!opd_keyset_has(seen.ks, OPD_KEY_AutogradCPU));
  ck_assert_ptr_eq(st.items[0].u.t, a);
  opd_stack_destroy(&st);
  ck_assert_uint_eq(refs(a), 1);

  /* a Meta tensor: AutogradMeta has no kernel and no fallback */
  ck_assert_int_eq(call1(op, OPD_KEY_Meta), OPD_ENOTIMPL);
  ck_assert_int_eq(seen.calls, 0);
  opd_tensor_release(a);
  deregister_all();
}
END_TEST

START_TEST(test_redispatch_typed) {
  const opd_operator *op = def("t_calls_rdt", "unary(Tensor a) -> Tensor");
  opd_kernel ag = OPD_UNBOXED_KERNEL(unary_typed_redispatch, Tensor, Tensor);
  ag.data = "autograd";
  impl_kernel(op, OPD_KEY_AutogradCPU, ag);
  opd_kernel cpu = OPD_UNBOXED_KERNEL(unary_unboxed, Tensor, Tensor);
  cpu.data = "cpu";
  impl_kernel(op, OPD_KEY_CPU, cpu);
  ck_assert_ptr_eq(opd_find_typed("t_calls_rdt::unary", OPD_SIGNATURE(Tensor, Tensor)), op);

  opd_tensor *a = tensor(OPD_KEY_CPU), *out = NULL;
  reset_seen();
  ck_assert_int_eq(call_unary(op, a, &out), 0);
  ck_assert_str_eq(seen.order, "autograd,cpu,");
  ck_assert_ptr_eq(out, a);
  ck_assert_int_eq(opd_keyset_highest_key(redispatch_ks), OPD_KEY_CPU);
  ck_assert(!opd_keyset_has(redispatch_ks, OPD_KEY_AutogradCPU));
  ck_assert(opd_keyset_equal(seen.ks, redispatch_ks));
  opd_tensor_release(out);
  ck_assert_uint_eq(refs(a), 1);

  /* the boxed call reaches the typed redispatch through the generated wrapper */
  opd_stack st;
  opd_stack_init(&st);
  ck_assert_int_eq(opd_stack_push(&st, opd_iv_tensor(a)), 0);
  reset_seen();
  ck_assert_int_eq(call(op, &st), 0);
  ck_assert_str_eq(seen.order, "autograd,cpu,");
  opd_stack_destroy(&st);
  ck_assert_uint_eq(refs(a), 1);

  /* a redispatch that lands on a missing slot fails cleanly */
  opd_tensor *m = tensor(OPD_KEY_Meta);
  opd_kernel agm = ag;
  TRACK(opd_impl("t_calls_rdt::unary", OPD_KEY_AutogradMeta, &agm, OPD_HERE));
  out = NULL;
  reset_seen();
  ck_assert_int_eq(call_unary(op, m, &out), OPD_ENOTIMPL);
  ck_assert_str_eq(seen.order, "autograd,");
  ck_assert_ptr_null(out);
  ck_assert_ptr_nonnull(strstr(opd_last_error(), "'Meta' backend"));
  ck_assert_uint_eq(refs(m), 1);
  opd_tensor_release(m);
  opd_tensor_release(a);
  deregister_all();
}
END_TEST

START_TEST(test_call_with_keyset_and_lookup) {
  const opd_operator *op = def("t_calls_ks", "unary(Tensor a) -> Tensor");
  impl(op, OPD_KEY_CPU, "cpu");
  impl(op, OPD_KEY_Meta, "meta");
  ck_assert_str_eq(opd_op_lookup(op, opd_keyset_of(OPD_KEY_CPU))->name, "cpu");
  ck_assert_str_eq(opd_op_lookup(op, opd_keyset_of(OPD_KEY_Meta))->name, "meta");
  /* the key set is used as is: Meta is the highest backend of {CPU, Meta} */
  opd_tensor *a = tensor(OPD_KEY_CPU);
  opd_stack st;
  opd_stack_init(&st);
  ck_assert_int_eq(opd_stack_push(&st, opd_iv_tensor(a)), 0);
  reset_seen();
  ck_assert_int_eq(
      opd_call_boxed_with_keyset(
          op, opd_keyset_union(opd_keyset_of(OPD_KEY_CPU), opd_keyset_of(OPD_KEY_Meta)), &st),
      0);
  ck_assert_str_eq(seen.kernel, "meta");
  ck_assert_uint_eq(st.size, 1);
  opd_stack_clear(&st);
  /* no masking either: a tensor's own key set selects the AutogradCPU fallthrough */
  ck_assert_int_eq(opd_stack_push(&st, opd_iv_tensor(a)), 0);
  reset_seen();
  ck_assert_int_eq(opd_call_boxed_with_keyset(op, opd_tensor_key_set(a), &st), OPD_EFALLTHROUGH);
  ck_assert_uint_eq(st.size, 0);
  ck_assert_int_eq(seen.calls, 0);
  opd_stack_destroy(&st);
  ck_assert_uint_eq(refs(a), 1);
  opd_tensor_release(a);
  deregister_all();
}
END_TEST

/* Records what it would redispatch with, without redispatching. */
static int recording_redispatch_keyset(const opd_kernel_ctx *ctx, opd_stack *stack) {
  redispatch_ks = opd_redispatch_keyset(ctx);
  return marker_kernel(ctx, stack);
}

/* A TLS include of the bare Dense functionality (FORMAT.md section 2: "Dense" in a list
 * is the bare bit) with no tensor arguments: the call key set is {Dense} without a
 * backend, which selects the CPU slot (c10's getDispatchTableIndexForDispatchKeySet gives
 * offset(Dense) + 0). c10's FULL_AFTER maps the key set's highest key, the placeholder
 * StartOfDenseBackends, to Dense, so a redispatch from there has no functionality left. */
START_TEST(test_redispatch_from_backendless_dense) {
  const opd_operator *op = def("t_calls_bare", "make(int n) -> Tensor");
  impl_kernel(op, OPD_KEY_CPU,
              (opd_kernel){.boxed = recording_redispatch_keyset, .data = "cpu", .name = "cpu"});
  tls_change(opd_keyset_of(OPD_KEY_Dense), opd_keyset_empty(), opd_keyset_empty());
  opd_stack st;
  opd_stack_init(&st);
  ck_assert_int_eq(opd_stack_push(&st, opd_iv_int(1)), 0);
  reset_seen();
  int rc = call(op, &st);
  tls_restore();
  opd_stack_destroy(&st);
  ck_assert_int_eq(rc, 0);
  ck_assert_str_eq(seen.kernel, "cpu");
  ck_assert_msg(opd_keyset_highest_key(redispatch_ks) == OPD_KEY_Undefined,
                "redispatch key set %#llx still selects %d", (unsigned long long)redispatch_ks.repr,
                (int)opd_keyset_highest_key(redispatch_ks));
  deregister_all();
}
END_TEST

START_TEST(test_tracer_fallback_passes_through) {
  const opd_operator *op = def("t_calls_tr", "unary(Tensor a) -> Tensor");
  impl(op, OPD_KEY_CPU, "cpu");
  json_t *j = opd_op_slot_json(op, OPD_KEY_Tracer);
  ck_assert_str_eq(json_string_value(json_object_get(j, "source")), "fallback");
  json_decref(j);

  tls_change(opd_keyset_of(OPD_KEY_Tracer), opd_keyset_empty(), opd_keyset_empty());
  ck_assert_int_eq(opd_keyset_highest_key(opd_call_keyset(op, opd_tensor_keyset_for(OPD_KEY_CPU))),
                   OPD_KEY_Tracer);
  ck_assert_int_eq(call1(op, OPD_KEY_CPU), 0);
  ck_assert_str_eq(seen.order, "cpu,");
  /* with an autograd kernel in between, the order is kept */
  impl_redispatch(op, OPD_KEY_AutogradCPU, "autograd");
  ck_assert_int_eq(call1(op, OPD_KEY_CPU), 0);
  ck_assert_str_eq(seen.order, "autograd,cpu,");
  /* 1-d29: an operator's own Tracer kernel replaces the fallback */
  impl_redispatch(op, OPD_KEY_Tracer, "tracer");
  ck_assert_int_eq(call1(op, OPD_KEY_CPU), 0);
  ck_assert_str_eq(seen.order, "tracer,autograd,cpu,");
  tls_restore();
  /* without Tracer in the include set it is not reached */
  ck_assert_int_eq(call1(op, OPD_KEY_CPU), 0);
  ck_assert_str_eq(seen.order, "autograd,cpu,");
  deregister_all();
}
END_TEST

/* ---- thread-local include / exclude ---- */

START_TEST(test_tls_exclude_autograd) {
  const opd_operator *op = def("t_calls_ex", "unary(Tensor a) -> Tensor");
  impl(op, OPD_KEY_Autograd, "autograd");
  impl(op, OPD_KEY_CPU, "cpu");
  impl(op, OPD_KEY_Meta, "meta");
  ck_assert_int_eq(call1(op, OPD_KEY_CPU), 0);
  ck_assert_str_eq(seen.kernel, "autograd");
  ck_assert_int_eq(opd_keyset_highest_key(seen.ks), OPD_KEY_AutogradCPU);

  /* below_autograd: the Autograd kernel is skipped */
  tls_change(opd_keyset_empty(), opd_keyset_of(OPD_KEY_AutogradFunctionality), opd_keyset_empty());
  ck_assert_int_eq(call1(op, OPD_KEY_CPU), 0);
  ck_assert_str_eq(seen.kernel, "cpu");
  ck_assert_int_eq(call1(op, OPD_KEY_Meta), 0);
  ck_assert_str_eq(seen.kernel, "meta");
  tls_restore();

  /* 1-108 call 3: excluding AutogradCPU skips AutogradMeta as well (cross product) */
  tls_change(opd_keyset_empty(), opd_keyset_of(OPD_KEY_AutogradCPU), opd_keyset_empty());
  ck_assert_int_eq(call1(op, OPD_KEY_Meta), 0);
  ck_assert_str_eq(seen.kernel, "meta");
  tls_restore();

  /* excluding AutogradOther leaves AutogradCPU alone */
  tls_change(opd_keyset_empty(), opd_keyset_of(OPD_KEY_AutogradOther), opd_keyset_empty());
  ck_assert_int_eq(call1(op, OPD_KEY_CPU), 0);
  ck_assert_str_eq(seen.kernel, "autograd");
  tls_restore();
  ck_assert_int_eq(call1(op, OPD_KEY_Meta), 0);
  ck_assert_str_eq(seen.kernel, "autograd");
  deregister_all();
}
END_TEST

START_TEST(test_tls_include_meta) {
  /* 1-d30 include_meta: a CPU-tensor call goes to the Meta kernel */
  const opd_operator *op = def("t_calls_in", "binary(Tensor a, Tensor b) -> Tensor");
  impl(op, OPD_KEY_AutogradCUDA, "agcuda");
  impl(op, OPD_KEY_CPU, "cpu");
  impl(op, OPD_KEY_CUDA, "cuda");
  impl(op, OPD_KEY_Meta, "meta");
  opd_tensor *a = tensor(OPD_KEY_CPU), *b = tensor(OPD_KEY_CPU);
  opd_stack st;
  opd_stack_init(&st);
  for (int include = 0; include < 2; include++) {
    if (include) tls_change(opd_keyset_of(OPD_KEY_Meta), opd_keyset_empty(), opd_keyset_empty());
    ck_assert_int_eq(opd_stack_push(&st, opd_iv_tensor(a)), 0);
    ck_assert_int_eq(opd_stack_push(&st, opd_iv_tensor(b)), 0);
    reset_seen();
    ck_assert_int_eq(call(op, &st), 0);
    ck_assert_str_eq(seen.kernel, include ? "meta" : "cpu");
    opd_stack_clear(&st);
  }
  tls_restore();
  /* the typed path computes the same key set */
  tls_change(opd_keyset_of(OPD_KEY_Meta), opd_keyset_empty(), opd_keyset_empty());
  opd_keyset ks = opd_call_keyset(op, opd_tensor_keyset_for(OPD_KEY_CPU));
  ck_assert_int_eq(opd_keyset_highest_key(ks), OPD_KEY_Meta);
  tls_restore();
  ks = opd_call_keyset(op, opd_tensor_keyset_for(OPD_KEY_CPU));
  ck_assert_int_eq(opd_keyset_highest_key(ks), OPD_KEY_CPU);
  /* mixed inputs use the highest backend: CPU + CUDA tensors reach AutogradCUDA */
  opd_tensor *c = tensor(OPD_KEY_CUDA);
  ck_assert_int_eq(opd_stack_push(&st, opd_iv_tensor(a)), 0);
  ck_assert_int_eq(opd_stack_push(&st, opd_iv_tensor(c)), 0);
  reset_seen();
  ck_assert_int_eq(call(op, &st), 0);
  ck_assert_str_eq(seen.kernel, "agcuda");
  opd_stack_destroy(&st);
  ck_assert_uint_eq(refs(a), 1);
  ck_assert_uint_eq(refs(b), 1);
  ck_assert_uint_eq(refs(c), 1);
  opd_tensor_release(a);
  opd_tensor_release(b);
  opd_tensor_release(c);
  deregister_all();
}
END_TEST

START_TEST(test_backend_select_and_autocast) {
  /* 1-d24: a BackendSelect kernel runs first on every call (default TLS include) */
  const opd_operator *op = def("t_calls_bs", "unary(Tensor a) -> Tensor");
  impl_redispatch(op, OPD_KEY_BackendSelect, "backend_select");
  impl(op, OPD_KEY_CPU, "cpu");
  ck_assert_int_eq(call1(op, OPD_KEY_CPU), 0);
  ck_assert_str_eq(seen.order, "backend_select,cpu,");
  /* an AutocastCPU kernel is reached only when AutocastCPU is not excluded */
  impl_redispatch(op, OPD_KEY_AutocastCPU, "autocast");
  ck_assert_int_eq(call1(op, OPD_KEY_CPU), 0);
  ck_assert_str_eq(seen.order, "backend_select,cpu,");
  tls_change(opd_keyset_empty(), opd_keyset_empty(), opd_keyset_of(OPD_KEY_AutocastCPU));
  ck_assert_int_eq(call1(op, OPD_KEY_CPU), 0);
  ck_assert_str_eq(seen.order, "autocast,backend_select,cpu,");
  /* a Meta tensor has no AutocastCPU key */
  impl(op, OPD_KEY_Meta, "meta");
  impl_kernel(op, OPD_KEY_AutogradMeta,
              (opd_kernel){.boxed = redispatching_kernel, .data = "agmeta", .name = "agmeta"});
  ck_assert_int_eq(call1(op, OPD_KEY_Meta), 0);
  ck_assert_str_eq(seen.order, "agmeta,backend_select,meta,");
  tls_restore();
  deregister_all();
}
END_TEST

/* ---- errors ---- */

START_TEST(test_error_missing_kernel) {
  const opd_operator *op = def("t_calls_miss", "unary(Tensor a) -> Tensor");
  impl(op, OPD_KEY_CPU, "cpu");
  /* 1-d3: AutogradMeta has no fallback */
  ck_assert_int_eq(call1(op, OPD_KEY_Meta), OPD_ENOTIMPL);
  ck_assert_int_eq(seen.calls, 0);
  ck_assert_int_eq(opd_last_error_code(), OPD_ENOTIMPL);
  ck_assert_ptr_nonnull(strstr(opd_last_error(), "t_calls_miss::unary"));
  ck_assert_ptr_nonnull(strstr(opd_last_error(), "'AutogradMeta' backend"));
  /* below autograd the Meta slot itself is missing */
  tls_change(opd_keyset_empty(), opd_keyset_of(OPD_KEY_AutogradFunctionality), opd_keyset_empty());
  ck_assert_int_eq(call1(op, OPD_KEY_Meta), OPD_ENOTIMPL);
  ck_assert_ptr_nonnull(strstr(opd_last_error(), "t_calls_miss::unary"));
  ck_assert_ptr_nonnull(strstr(opd_last_error(), "'Meta' backend"));
  ck_assert_ptr_nonnull(strstr(opd_last_error(), "CPU")); /* where it is available */
  tls_restore();
  /* the typed path reports the same, returns nothing and leaks nothing */
  opd_tensor *m = tensor(OPD_KEY_Meta), *out = NULL;
  ck_assert_int_eq(call_unary(op, m, &out), OPD_ENOTIMPL);
  ck_assert_ptr_null(out);
  ck_assert_ptr_nonnull(strstr(opd_last_error(), "'AutogradMeta' backend"));
  ck_assert_uint_eq(refs(m), 1);
  opd_tensor_release(m);
  /* the CPU call still works */
  ck_assert_int_eq(call1(op, OPD_KEY_CPU), 0);
  ck_assert_str_eq(seen.kernel, "cpu");
  deregister_all();
}
END_TEST

START_TEST(test_error_ambiguous) {
  /* 1-d8: CIA + SparseCPU; an MkldnnCPU or SparseCsrCPU tensor lands on AutogradOther */
  const opd_operator *op = def("t_calls_amb", "unary(Tensor a) -> Tensor");
  impl(op, OPD_KEY_CompositeImplicitAutograd, "math");
  impl(op, OPD_KEY_SparseCPU, "sparse");
  ck_assert_int_eq(call1(op, OPD_KEY_MkldnnCPU), OPD_EAMBIGUOUS);
  ck_assert_int_eq(seen.calls, 0);
  ck_assert_ptr_nonnull(strstr(opd_last_error(), "t_calls_amb::unary"));
  ck_assert_int_eq(call1(op, OPD_KEY_SparseCsrCPU), OPD_EAMBIGUOUS);
  /* a sparse CPU tensor goes through AutogradCPU (math) instead */
  ck_assert_int_eq(call1(op, OPD_KEY_SparseCPU), 0);
  ck_assert_str_eq(seen.kernel, "math");
  /* below autograd the backend kernels are reached */
  tls_change(opd_keyset_empty(), opd_keyset_of(OPD_KEY_AutogradOther), opd_keyset_empty());
  ck_assert_int_eq(call1(op, OPD_KEY_MkldnnCPU), 0);
  ck_assert_str_eq(seen.kernel, "math");
  tls_restore();
  deregister_all();
}
END_TEST

START_TEST(test_error_no_tensor_arguments) {
  const opd_operator *op = def("t_calls_nt", "make(int n) -> Tensor");
  impl(op, OPD_KEY_CPU, "cpu");
  opd_stack st;
  opd_stack_init(&st);
  ck_assert_int_eq(opd_stack_push(&st, opd_iv_int(3)), 0);
  reset_seen();
  ck_assert_int_eq(call(op, &st), OPD_ENOTIMPL);
  ck_assert_int_eq(seen.calls, 0);
  ck_assert_ptr_nonnull(strstr(opd_last_error(), "no tensor arguments"));
  ck_assert_ptr_nonnull(strstr(opd_last_error(), "t_calls_nt::make"));
  /* a CIA kernel fills Undefined, so the call runs */
  impl(op, OPD_KEY_CompositeImplicitAutograd, "math");
  ck_assert_int_eq(opd_stack_push(&st, opd_iv_int(3)), 0);
  reset_seen();
  ck_assert_int_eq(call(op, &st), 0);
  ck_assert_str_eq(seen.kernel, "math");
  opd_stack_destroy(&st);

  /* an empty Tensor[] has no tensors either */
  const opd_operator *lop = def("t_calls_nt", "cat(Tensor[] xs) -> Tensor");
  impl(lop, OPD_KEY_CPU, "cat_cpu");
  ck_assert_int_eq(call_list_boxed(lop, NULL, 0, false), OPD_ENOTIMPL);
  ck_assert_ptr_nonnull(strstr(opd_last_error(), "no tensor arguments"));
  deregister_all();
}
END_TEST

START_TEST(test_error_fallthrough_executed) {
  /* 1-d22 call 3: a global fallthrough at Meta, CPU arguments, Meta in the TLS include:
   * the masks use CPU (the arguments' backend) but the key is Meta */
  opd_reg_id g = TRACK(opd_fallback_fallthrough(OPD_KEY_Meta, OPD_HERE));
  (void)g;
  const opd_operator *op = def("t_calls_fte", "binary(Tensor a, Tensor b) -> Tensor");
  impl(op, OPD_KEY_CPU, "cpu");
  impl(op, OPD_KEY_AutogradMeta, "agmeta");
  opd_tensor *a = tensor(OPD_KEY_CPU), *b = tensor(OPD_KEY_CPU);
  opd_stack st;
  opd_stack_init(&st);
  ck_assert_int_eq(opd_stack_push(&st, opd_iv_tensor(a)), 0);
  ck_assert_int_eq(opd_stack_push(&st, opd_iv_tensor(b)), 0);
  reset_seen();
  ck_assert_int_eq(call(op, &st), 0);
  ck_assert_str_eq(seen.kernel, "cpu");
  opd_stack_clear(&st);

  tls_change(opd_keyset_of(OPD_KEY_Meta), opd_keyset_empty(), opd_keyset_empty());
  ck_assert_int_eq(opd_stack_push(&st, opd_iv_tensor(a)), 0);
  ck_assert_int_eq(opd_stack_push(&st, opd_iv_tensor(b)), 0);
  reset_seen();
  ck_assert_int_eq(call(op, &st), OPD_EFALLTHROUGH);
  ck_assert_int_eq(seen.calls, 0);
  ck_assert_int_eq(opd_last_error_code(), OPD_EFALLTHROUGH);
  tls_restore();
  opd_stack_destroy(&st);
  ck_assert_uint_eq(refs(a), 1);
  ck_assert_uint_eq(refs(b), 1);
  opd_tensor_release(a);
  opd_tensor_release(b);

  /* 1-d15: a fallthrough at CIA leaves Undefined with a fallthrough */
  const opd_operator *op2 = def("t_calls_fte", "unary(Tensor a) -> Tensor");
  TRACK(opd_impl_fallthrough("t_calls_fte::unary", OPD_KEY_CompositeImplicitAutograd, OPD_HERE));
  ck_assert_int_eq(call1(op2, OPD_KEY_CPU), OPD_EFALLTHROUGH);
  ck_assert_int_eq(call1(op2, OPD_KEY_Meta), OPD_EFALLTHROUGH);
  deregister_all();
}
END_TEST

START_TEST(test_error_undefined_operator_and_bad_stacks) {
  opd_kernel k = marker("cpu");
  TRACK(opd_impl("t_calls_undef::unary", OPD_KEY_CPU, &k, OPD_HERE));
  const opd_operator *op = opd_find_op("t_calls_undef::unary");
  ck_assert_ptr_nonnull(op);
  opd_tensor *a = tensor(OPD_KEY_CPU);
  opd_stack st;
  opd_stack_init(&st);
  ck_assert_int_eq(opd_stack_push(&st, opd_iv_tensor(a)), 0);
  reset_seen();
  ck_assert_int_eq(opd_call_boxed(op, &st), OPD_ENOENT);
  ck_assert_uint_eq(st.size, 0);
  ck_assert_int_eq(seen.calls, 0);
  ck_assert_ptr_nonnull(strstr(opd_last_error(), "t_calls_undef::unary"));
  ck_assert_uint_eq(refs(a), 1);

  /* too few arguments */
  const opd_operator *op2 = def("t_calls_undef", "binary(Tensor a, Tensor b) -> Tensor");
  impl(op2, OPD_KEY_CPU, "cpu");
  ck_assert_int_eq(opd_stack_push(&st, opd_iv_tensor(a)), 0);
  ck_assert_int_eq(call(op2, &st), OPD_EINVAL);
  ck_assert_uint_eq(refs(a), 1);

  /* a kernel's own error comes back with its arguments gone */
  const opd_operator *op3 = def("t_calls_undef", "fails(Tensor a) -> Tensor");
  impl_kernel(op3, OPD_KEY_CPU,
              (opd_kernel){.boxed = failing_kernel, .data = "failing", .name = "failing"});
  ck_assert_int_eq(opd_stack_push(&st, opd_iv_tensor(a)), 0);
  reset_seen();
  ck_assert_int_eq(call(op3, &st), OPD_ERESOURCE);
  ck_assert_int_eq(seen.calls, 1);
  ck_assert_str_eq(opd_last_error(), "failing kernel");
  ck_assert_uint_eq(refs(a), 1);
  /* and through a typed call */
  opd_tensor *out = NULL;
  ck_assert_int_eq(call_unary(op3, a, &out), OPD_ERESOURCE);
  ck_assert_ptr_null(out);
  ck_assert_uint_eq(refs(a), 1);
  opd_stack_destroy(&st);
  opd_tensor_release(a);
  deregister_all();
}
END_TEST

/* A buggy boxed kernel for a `-> Tensor` operator that returns an int. */
static int returns_int_kernel(const opd_kernel_ctx *ctx, opd_stack *stack) {
  opd_stack_drop(stack, opd_op_schema(ctx->op)->num_args);
  saw(ctx);
  return opd_stack_push(stack, opd_iv_int(5));
}

START_TEST(test_stack_below_arguments_and_bad_returns) {
  const opd_operator *op = def("t_calls_below", "unary(Tensor a) -> Tensor");
  impl(op, OPD_KEY_CPU, "cpu");
  opd_tensor *a = tensor(OPD_KEY_CPU), *m = tensor(OPD_KEY_Meta);
  opd_stack st;
  opd_stack_init(&st);
  /* values below the arguments are the caller's: the returns replace the arguments only */
  ck_assert_int_eq(opd_stack_push(&st, opd_iv_int(77)), 0);
  ck_assert_int_eq(opd_stack_push(&st, opd_iv_tensor(a)), 0);
  reset_seen();
  ck_assert_int_eq(opd_call_boxed(op, &st), 0);
  ck_assert_str_eq(seen.kernel, "cpu");
  ck_assert_uint_eq(st.size, 2);
  ck_assert_uint_eq(st.items[0].tag, OPD_IV_INT);
  ck_assert_int_eq(st.items[0].u.i, 77);
  ck_assert_uint_eq(st.items[1].tag, OPD_IV_TENSOR);
  opd_stack_drop(&st, 1);
  /* and on an error in the table (missing AutogradMeta) only the arguments go */
  ck_assert_int_eq(opd_stack_push(&st, opd_iv_tensor(m)), 0);
  ck_assert_int_eq(opd_call_boxed(op, &st), OPD_ENOTIMPL);
  ck_assert_uint_eq(st.size, 1);
  ck_assert_int_eq(st.items[0].u.i, 77);
  ck_assert_uint_eq(refs(m), 1);
  opd_stack_destroy(&st);

  /* a typed call to a boxed kernel that returns the wrong thing fails without leaking */
  const opd_operator *bad = def("t_calls_below", "bad(Tensor a) -> Tensor");
  impl_kernel(bad, OPD_KEY_CPU,
              (opd_kernel){.boxed = returns_int_kernel, .data = "bad", .name = "bad"});
  opd_tensor *out = NULL;
  ck_assert_int_eq(call_unary(bad, a, &out), OPD_EINTERNAL);
  ck_assert_ptr_null(out);
  ck_assert_uint_eq(refs(a), 1);
  opd_tensor_release(a);
  opd_tensor_release(m);
  deregister_all();
}
END_TEST

/* ---- tensor lists and optional tensors ---- */

START_TEST(test_tensor_list_arguments) {
  const opd_operator *op = def("t_calls_tl", "pick(Tensor?[] xs) -> Tensor");
  impl(op, OPD_KEY_CPU, "cpu");
  impl(op, OPD_KEY_Meta, "meta");
  impl(op, OPD_KEY_QuantizedMeta, "qmeta");
  TRACK(opd_impl_fallthrough("t_calls_tl::pick", OPD_KEY_AutogradMeta, OPD_HERE));
  opd_tensor *c = tensor(OPD_KEY_CPU), *m = tensor(OPD_KEY_Meta), *q = tensor(OPD_KEY_QuantizedCPU);

  opd_tensor *cpu_none_meta[] = {c, NULL, m};
  ck_assert_int_eq(call_list_boxed(op, cpu_none_meta, 3, true), 0);
  ck_assert_str_eq(seen.kernel, "meta");
  opd_tensor *none_cpu[] = {NULL, c};
  ck_assert_int_eq(call_list_boxed(op, none_cpu, 2, true), 0);
  ck_assert_str_eq(seen.kernel, "cpu");
  opd_tensor *none[] = {NULL};
  ck_assert_int_eq(call_list_boxed(op, none, 1, true), OPD_ENOTIMPL);
  ck_assert_ptr_nonnull(strstr(opd_last_error(), "no tensor arguments"));
  /* quantized_cpu + meta: QuantizedMeta (the highest functionality, highest backend) */
  opd_tensor *q_m[] = {q, m};
  ck_assert_int_eq(call_list_boxed(op, q_m, 2, true), 0);
  ck_assert_str_eq(seen.kernel, "qmeta");

  /* typed calls extract the same keys */
  ck_assert_ptr_eq(opd_find_typed("t_calls_tl::pick", OPD_SIGNATURE(Tensor, OptTensorList)), op);
  opd_tensor *out = NULL;
  reset_seen();
  ck_assert_int_eq(call_optlist(op, (opd_tensor_list){cpu_none_meta, 3}, &out), 0);
  ck_assert_str_eq(seen.kernel, "meta");
  opd_tensor_release(out);
  reset_seen();
  ck_assert_int_eq(call_optlist(op, (opd_tensor_list){none_cpu, 2}, &out), 0);
  ck_assert_str_eq(seen.kernel, "cpu");
  opd_tensor_release(out);
  out = NULL;
  ck_assert_int_eq(call_optlist(op, (opd_tensor_list){none, 1}, &out), OPD_ENOTIMPL);
  ck_assert_ptr_null(out);

  /* Tensor[] */
  const opd_operator *lop = def("t_calls_tl", "cat(Tensor[] xs) -> Tensor");
  impl(lop, OPD_KEY_CPU, "cat_cpu");
  impl(lop, OPD_KEY_Meta, "cat_meta");
  TRACK(opd_impl_fallthrough("t_calls_tl::cat", OPD_KEY_AutogradMeta, OPD_HERE));
  opd_tensor *cpu_meta[] = {c, m}, *cpu_cpu[] = {c, c};
  ck_assert_int_eq(call_list_boxed(lop, cpu_meta, 2, false), 0);
  ck_assert_str_eq(seen.kernel, "cat_meta");
  ck_assert_int_eq(call_list_boxed(lop, cpu_cpu, 2, false), 0);
  ck_assert_str_eq(seen.kernel, "cat_cpu");
  reset_seen();
  ck_assert_int_eq(call_list(lop, (opd_tensor_list){cpu_meta, 2}, &out), 0);
  ck_assert_str_eq(seen.kernel, "cat_meta");
  opd_tensor_release(out);

  ck_assert_uint_eq(refs(c), 1);
  ck_assert_uint_eq(refs(m), 1);
  ck_assert_uint_eq(refs(q), 1);
  opd_tensor_release(c);
  opd_tensor_release(m);
  opd_tensor_release(q);
  deregister_all();
}
END_TEST

START_TEST(test_optional_tensor_argument) {
  const opd_operator *op = def("t_calls_opt", "opt(Tensor a, Tensor? b) -> Tensor");
  impl(op, OPD_KEY_CPU, "cpu");
  impl(op, OPD_KEY_Meta, "meta");
  TRACK(opd_impl_fallthrough("t_calls_opt::opt", OPD_KEY_AutogradMeta, OPD_HERE));
  opd_tensor *c = tensor(OPD_KEY_CPU), *m = tensor(OPD_KEY_Meta), *out = NULL;
  opd_stack st;
  opd_stack_init(&st);
  /* a None Tensor? contributes nothing */
  ck_assert_int_eq(opd_stack_push(&st, opd_iv_tensor(c)), 0);
  ck_assert_int_eq(opd_stack_push(&st, opd_iv_none()), 0);
  reset_seen();
  ck_assert_int_eq(call(op, &st), 0);
  ck_assert_str_eq(seen.kernel, "cpu");
  opd_stack_clear(&st);
  /* a Meta one does */
  ck_assert_int_eq(opd_stack_push(&st, opd_iv_tensor(c)), 0);
  ck_assert_int_eq(opd_stack_push(&st, opd_iv_tensor(m)), 0);
  reset_seen();
  ck_assert_int_eq(call(op, &st), 0);
  ck_assert_str_eq(seen.kernel, "meta");
  opd_stack_destroy(&st);

  ck_assert_ptr_eq(opd_find_typed("t_calls_opt::opt", OPD_SIGNATURE(Tensor, Tensor, OptTensor)),
                   op);
  reset_seen();
  ck_assert_int_eq(call_opt(op, c, NULL, &out), 0);
  ck_assert_str_eq(seen.kernel, "cpu");
  opd_tensor_release(out);
  reset_seen();
  ck_assert_int_eq(call_opt(op, c, m, &out), 0);
  ck_assert_str_eq(seen.kernel, "meta");
  opd_tensor_release(out);
  ck_assert_uint_eq(refs(c), 1);
  ck_assert_uint_eq(refs(m), 1);
  opd_tensor_release(c);
  opd_tensor_release(m);
  deregister_all();
}
END_TEST

Suite *opd_test_calls_suite(void) {
  Suite *s = suite_create("calls");
  TCase *tc = tcase_create("boxing");
  tcase_add_test(tc, test_boxed_call_boxed_kernel);
  tcase_add_test(tc, test_boxed_call_unboxed_kernel);
  tcase_add_test(tc, test_typed_call_boxed_kernel);
  tcase_add_test(tc, test_void_return);
  tcase_add_test(tc, test_find_typed_rejects_mismatch);
  suite_add_tcase(s, tc);

  tc = tcase_create("dispatch");
  tcase_add_test(tc, test_redispatch_boxed);
  tcase_add_test(tc, test_redispatch_typed);
  tcase_add_test(tc, test_call_with_keyset_and_lookup);
  tcase_add_test(tc, test_redispatch_from_backendless_dense); /* fails: library bug */
  tcase_add_test(tc, test_tracer_fallback_passes_through);
  tcase_add_test(tc, test_tls_exclude_autograd);
  tcase_add_test(tc, test_tls_include_meta);
  tcase_add_test(tc, test_backend_select_and_autocast);
  tcase_add_test(tc, test_tensor_list_arguments);
  tcase_add_test(tc, test_optional_tensor_argument);
  suite_add_tcase(s, tc);

  tc = tcase_create("errors");
  tcase_add_test(tc, test_error_missing_kernel);
  tcase_add_test(tc, test_error_ambiguous);
  tcase_add_test(tc, test_error_no_tensor_arguments);
  tcase_add_test(tc, test_error_fallthrough_executed);
  tcase_add_test(tc, test_error_undefined_operator_and_bad_stacks);
  tcase_add_test(tc, test_stack_below_arguments_and_bad_returns);
  suite_add_tcase(s, tc);
  return s;
}

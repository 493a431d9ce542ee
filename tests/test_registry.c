/* test_registry.c: tests of registration (registry.c), dispatch-table filling (table.c)
 * and introspection (introspect.c).
 *
 * Covers the rules of def / impl / fallthrough / backend fallback / deregister, each
 * table-filling rule of tests/fixtures/oracle/FORMAT.md section 4 (asserted through the JSON
 * "source" of specific slots, as the oracle spells them), a fixed-seed property test
 * that compares every slot after each random registration change with an independent
 * model of those rules (and checks that incremental updates equal a full recompute),
 * and the JSON / text introspection and operator enumeration.
 *
 * Each test uses its own namespace and removes what it registers, so the suite also
 * passes with CK_FORK=no.
 */
#include <check.h>
#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "opd/dispatcher.h"
#include "opd/error.h"
#include "opd/introspect.h"
#include "opd/log.h"
#include "opd/tensor.h"
#include "opd/unboxed.h"
#include "test_files.h"

Suite *opd_test_registry_suite(void);

#define CIA   OPD_KEY_CompositeImplicitAutograd
#define CEA   OPD_KEY_CompositeExplicitAutograd
#define CEANF OPD_KEY_CompositeExplicitAutogradNonFunctional

/* ---- kernels ---- */

/* The name of the last kernel that ran (its ctx->data). */
static const char *last_ran;

/* A boxed kernel for any schema: drops its arguments, records its name and returns a new
 * CPU tensor (or nothing for `-> ()`). */
static int marker_kernel(const opd_kernel_ctx *ctx, opd_stack *stack) {
  const opd_schema *s = opd_op_schema(ctx->op);
  opd_stack_drop(stack, s->num_args);
  last_ran = ctx->data;
  if (s->num_returns == 0) return 0;
  return opd_stack_push(stack, opd_iv_tensor_steal(opd_tensor_new(OPD_KEY_CPU, false)));
}

static opd_kernel kernel_named(const char *name) {
  return (opd_kernel){.boxed = marker_kernel, .data = (void *)name, .name = name};
}

/* Unboxed kernels of two signatures. */
static int unboxed_ts(const opd_kernel_ctx *ctx, opd_tensor *a, opd_scalar b, opd_tensor **out) {
  (void)b;
  last_ran = ctx->data;
  opd_tensor_retain(a);
  *out = a;
  return 0;
}
OPD_BOXED_WRAPPER(unboxed_ts, Tensor, Tensor, Scalar)

static int unboxed_tt(const opd_kernel_ctx *ctx, opd_tensor *a, opd_tensor *b, opd_tensor **out) {
  (void)b;
  last_ran = ctx->data;
  opd_tensor_retain(a);
  *out = a;
  return 0;
}
OPD_BOXED_WRAPPER(unboxed_tt, Tensor, Tensor, Tensor)

/* ---- registration bookkeeping: every test removes what it registered ---- */

#define MAX_TRACKED 1024
static opd_reg_id tracked[MAX_TRACKED];
static int num_tracked;

static opd_reg_id track_(opd_reg_id id, const char *what, int line) {
  ck_assert_msg(id > 0, "line %d: %s failed (%lld): %s", line, what, (long long)id,
                opd_last_error());
  ck_assert_int_lt(num_tracked, MAX_TRACKED);
  tracked[num_tracked++] = id;
  return id;
}
#define TRACK(expr) track_((expr), #expr, __LINE__)

static void deregister_tracked(opd_reg_id id) {
  for (int i = 0; i < num_tracked; i++) {
    if (tracked[i] == id) {
      tracked[i] = tracked[--num_tracked];
      ck_assert_int_eq(opd_deregister(id), 0);
      return;
    }
  }
  ck_abort_msg("registration %lld is not tracked", (long long)id);
}

static void deregister_all(void) {
  while (num_tracked > 0) ck_assert_int_eq(opd_deregister(tracked[--num_tracked]), 0);
}

static opd_reg_id def(const char *ns, const char *schema) {
  return TRACK(opd_def(ns, schema, OPD_HERE));
}
static opd_reg_id impl(const char *op, opd_dispatch_key key, const char *kernel_name) {
  opd_kernel k = kernel_named(kernel_name);
  return TRACK(opd_impl(op, key, &k, OPD_HERE));
}
static opd_reg_id fallthrough(const char *op, opd_dispatch_key key) {
  return TRACK(opd_impl_fallthrough(op, key, OPD_HERE));
}

static const opd_operator *find(const char *name) {
  const opd_operator *op = opd_find_op(name);
  ck_assert_msg(op != NULL, "no operator %s", name);
  return op;
}

/* ---- slot assertions ---- */

static const char *jstr(json_t *obj, const char *field) {
  return json_string_value(json_object_get(obj, field));
}

/* Asserts the slot of `key`: its source, the registration that fills it (0: none; -1:
 * don't check), and for fallthroughs the scope and via (NULL: don't check). */
static void expect_slot_(const opd_operator *op, opd_dispatch_key key, const char *source,
                         opd_reg_id reg, const char *scope, const char *via, int line) {
  json_t *j = opd_op_slot_json(op, key);
  ck_assert_msg(j != NULL, "line %d: no slot json for %s", line, opd_key_name(key));
  char *text = json_dumps(j, JSON_COMPACT | JSON_SORT_KEYS);
  const char *got = jstr(j, "source");
  ck_assert_msg(got && strcmp(got, source) == 0, "line %d: %s of %s: %s, want source %s", line,
                opd_key_name(key), opd_op_name(op), text, source);
  if (reg >= 0) {
    json_t *r = json_object_get(j, "registration");
    opd_reg_id have = r ? (opd_reg_id)json_integer_value(r) : 0;
    ck_assert_msg(have == reg, "line %d: %s: %s, want registration %lld", line, opd_key_name(key),
                  text, (long long)reg);
    ck_assert_int_eq(opd_op_slot_registration(op, key), reg);
  }
  if (scope) {
    const char *s = jstr(j, "scope");
    ck_assert_msg(s && strcmp(s, scope) == 0, "line %d: %s: %s, want scope %s", line,
                  opd_key_name(key), text, scope);
  }
  if (via) {
    const char *v = jstr(j, "via");
    ck_assert_msg(v && strcmp(v, via) == 0, "line %d: %s: %s, want via %s", line, opd_key_name(key),
                  text, via);
  }
  free(text);
  json_decref(j);
}
/* A kernel from `from` (the key itself or an alias) of registration reg. */
#define EXPECT_KERNEL(op, key, from, reg) \
  expect_slot_(op, key, opd_key_name(from), reg, NULL, NULL, __LINE__)
#define EXPECT_OP_FALLTHROUGH(op, key, via, reg) \
  expect_slot_(op, key, "fallthrough", reg, "op", opd_key_name(via), __LINE__)
#define EXPECT_GLOBAL_FALLTHROUGH(op, key) \
  expect_slot_(op, key, "fallthrough", -1, "global", NULL, __LINE__)
#define EXPECT_SOURCE(op, key, source) expect_slot_(op, key, source, -1, NULL, NULL, __LINE__)
#define EXPECT_MISSING(op, key)        expect_slot_(op, key, "missing", 0, NULL, NULL, __LINE__)

#define EXPECT_NOT_STALE(op) ck_assert_int_eq(opd_op_count_stale_slots(op), 0)

/* Runs the operator `op(Tensor a) -> ...` boxed with one tensor of backend key `k`. */
static int call_with(const opd_operator *op, opd_dispatch_key k) {
  opd_stack st;
  opd_stack_init(&st);
  ck_assert_int_eq(opd_stack_push(&st, opd_iv_tensor_steal(opd_tensor_new(k, false))), 0);
  last_ran = NULL;
  int rc = opd_call_boxed(op, &st);
  opd_stack_destroy(&st);
  return rc;
}

/* The same below autograd (TLS exclude AutogradFunctionality), for backends whose
 * autograd key has no fallback. */
static int call_below_autograd(const opd_operator *op, opd_dispatch_key k) {
  opd_local_dispatch_state saved = opd_tls_get(), st = saved;
  st.excluded = opd_keyset_union(st.excluded, opd_keyset_of(OPD_KEY_AutogradFunctionality));
  opd_tls_set(st);
  int rc = call_with(op, k);
  opd_tls_set(saved);
  return rc;
}

/* ---- log capture ---- */

static int warnings;
static char last_warning[1024];

static void capture_log(opd_log_level level, const char *message, void *arg) {
  (void)arg;
  if (level != OPD_LOG_WARN) return;
  warnings++;
  snprintf(last_warning, sizeof last_warning, "%s", message);
}

/* ---- def ---- */

START_TEST(test_def_rules) {
  opd_reg_id d = def("t_reg_def", "op(Tensor a) -> Tensor");
  const opd_operator *op = opd_find_schema("t_reg_def::op");
  ck_assert_ptr_nonnull(op);
  ck_assert_str_eq(opd_op_name(op), "t_reg_def::op");
  ck_assert_ptr_nonnull(opd_op_schema(op));
  ck_assert_str_eq(opd_op_schema(op)->ns, "t_reg_def");

  /* a second def of the same name is refused, whatever its schema */
  ck_assert_int_eq(opd_def("t_reg_def", "op(Tensor a) -> Tensor", OPD_HERE), OPD_EEXIST);
  ck_assert_int_eq(opd_last_error_code(), OPD_EEXIST);
  ck_assert_int_eq(opd_def("t_reg_def", "op(Tensor a, Tensor b) -> Tensor", OPD_HERE), OPD_EEXIST);
  ck_assert_int_eq(opd_def(NULL, "t_reg_def::op(int n) -> ()", OPD_HERE), OPD_EEXIST);
  /* the first schema is untouched */
  ck_assert_uint_eq(opd_op_schema(op)->num_args, 1);

  /* another overload is another operator */
  def("t_reg_def", "op.other(Tensor a, Tensor b) -> Tensor");
  ck_assert_ptr_nonnull(opd_find_schema("t_reg_def::op.other"));
  ck_assert_ptr_ne(opd_find_schema("t_reg_def::op.other"), op);

  /* the namespace comes from the library or the schema, and they must agree */
  def(NULL, "t_reg_def::named(Tensor a) -> Tensor");
  ck_assert_ptr_nonnull(opd_find_schema("t_reg_def::named"));
  def("t_reg_def", "t_reg_def::same(Tensor a) -> Tensor");
  ck_assert_int_eq(opd_def("t_reg_def", "other_ns::op2(Tensor a) -> Tensor", OPD_HERE),
                   OPD_ESCHEMA);
  ck_assert_int_eq(opd_def(NULL, "nons(Tensor a) -> Tensor", OPD_HERE), OPD_ESCHEMA);
  ck_assert_int_eq(opd_def("bad-ns", "op(Tensor a) -> Tensor", OPD_HERE), OPD_EINVAL);
  ck_assert_ptr_null(opd_find_op("other_ns::op2"));

  /* removing the def makes the operator undefined; it can be defined again */
  deregister_tracked(d);
  ck_assert_ptr_null(opd_op_schema(op));
  ck_assert_ptr_null(opd_find_schema("t_reg_def::op"));
  ck_assert_int_eq(opd_last_error_code(), OPD_ENOENT);
  ck_assert_ptr_eq(opd_find_op("t_reg_def::op"), op); /* operators are never freed */
  opd_reg_id d2 = def("t_reg_def", "op(Tensor a, int n) -> Tensor");
  ck_assert_int_ne(d2, d);
  ck_assert_uint_eq(opd_op_schema(op)->num_args, 2);

  ck_assert_ptr_null(opd_find_schema("t_reg_def::nothing"));
  ck_assert_int_eq(opd_last_error_code(), OPD_ENOENT);
  deregister_all();
}
END_TEST

START_TEST(test_bad_schema) {
  const char *bad[] = {
      "op(Tensor a -> Tensor",
      "",
      "op(Tensor a) -> Tensor junk extra",
      "op(Tensr a) -> Tensor",
      "op(int n=) -> Tensor",
      "9op(Tensor a) -> Tensor",
  };
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    ck_assert_msg(opd_def("t_reg_bad", bad[i], OPD_HERE) == OPD_ESCHEMA, "accepted: %s", bad[i]);
    ck_assert_int_eq(opd_last_error_code(), OPD_ESCHEMA);
  }
  ck_assert_ptr_null(opd_find_op("t_reg_bad::op"));
}
END_TEST

/* ---- impl ---- */

START_TEST(test_impl_before_def) {
  opd_reg_id k = impl("t_reg_ibd::op", OPD_KEY_CPU, "ibd_cpu");
  const opd_operator *op = find("t_reg_ibd::op");
  ck_assert_ptr_null(opd_op_schema(op));
  ck_assert_ptr_null(opd_find_schema("t_reg_ibd::op"));
  ck_assert_int_eq(opd_last_error_code(), OPD_ENOENT);
  /* the kernel is in the table already */
  EXPECT_KERNEL(op, OPD_KEY_CPU, OPD_KEY_CPU, k);
  /* but the operator cannot be called until it is defined */
  ck_assert_int_eq(call_with(op, OPD_KEY_CPU), OPD_ENOENT);
  ck_assert_ptr_null(last_ran);

  def("t_reg_ibd", "op(Tensor a) -> Tensor");
  ck_assert_ptr_eq(opd_find_schema("t_reg_ibd::op"), op);
  EXPECT_KERNEL(op, OPD_KEY_CPU, OPD_KEY_CPU, k);
  ck_assert_int_eq(call_with(op, OPD_KEY_CPU), 0);
  ck_assert_str_eq(last_ran, "ibd_cpu");
  EXPECT_NOT_STALE(op);
  deregister_all();
}
END_TEST

START_TEST(test_impl_without_key_is_cia) {
  def("t_reg_nokey", "op(Tensor a) -> Tensor");
  opd_kernel k = kernel_named("nokey_math");
  opd_reg_id id = TRACK(opd_impl("t_reg_nokey::op", OPD_NO_KEY, &k, OPD_HERE));
  const opd_operator *op = find("t_reg_nokey::op");
  EXPECT_KERNEL(op, OPD_KEY_CPU, CIA, id);
  EXPECT_KERNEL(op, OPD_KEY_Undefined, CIA, id);
  EXPECT_KERNEL(op, OPD_KEY_AutogradCPU, CIA, id);
  /* the registration is recorded at CompositeImplicitAutograd */
  json_t *j = opd_op_json(op);
  json_t *regs = json_object_get(j, "registrations");
  size_t i;
  json_t *r;
  int found = 0;
  json_array_foreach(regs, i, r) {
    if (json_integer_value(json_object_get(r, "id")) == id) {
      ck_assert_str_eq(jstr(r, "key"), "CompositeImplicitAutograd");
      found++;
    }
  }
  ck_assert_int_eq(found, 1);
  json_decref(j);
  ck_assert_int_eq(call_with(op, OPD_KEY_Meta), 0);
  ck_assert_str_eq(last_ran, "nokey_math");
  deregister_all();
}
END_TEST

START_TEST(test_override_and_restore) {
  opd_log_set_handler(capture_log, NULL);
  warnings = 0;
  def("t_reg_ovr", "op(Tensor a) -> Tensor");
  const opd_operator *op = find("t_reg_ovr::op");

  /* below the log level (test_main sets OPD_LOG_ERROR) the warning is dropped */
  opd_log_set_level(OPD_LOG_ERROR);
  opd_reg_id quiet1 = impl("t_reg_ovr::op", OPD_KEY_CUDA, "ovr_quiet1");
  opd_reg_id quiet2 = impl("t_reg_ovr::op", OPD_KEY_CUDA, "ovr_quiet2");
  ck_assert_int_eq(warnings, 0);
  EXPECT_KERNEL(op, OPD_KEY_CUDA, OPD_KEY_CUDA, quiet2);
  deregister_tracked(quiet2);
  deregister_tracked(quiet1);
  EXPECT_MISSING(op, OPD_KEY_CUDA);

  opd_log_set_level(OPD_LOG_WARN);
  opd_reg_id older = impl("t_reg_ovr::op", OPD_KEY_CPU, "ovr_old");
  ck_assert_int_eq(warnings, 0);
  ck_assert_str_eq(opd_log_level_name(OPD_LOG_WARN), "warn");
  EXPECT_KERNEL(op, OPD_KEY_CPU, OPD_KEY_CPU, older);

  /* a second kernel at the same key overrides it, with a warning */
  opd_reg_id newer = impl("t_reg_ovr::op", OPD_KEY_CPU, "ovr_new");
  ck_assert_int_eq(warnings, 1);
  ck_assert_ptr_nonnull(strstr(last_warning, "t_reg_ovr::op"));
  ck_assert_ptr_nonnull(strstr(last_warning, "CPU"));
  EXPECT_KERNEL(op, OPD_KEY_CPU, OPD_KEY_CPU, newer);
  ck_assert_int_eq(opd_op_slot_registration(op, OPD_KEY_CPU), newer);
  ck_assert_int_eq(call_with(op, OPD_KEY_CPU), 0);
  ck_assert_str_eq(last_ran, "ovr_new");

  /* removing the newer one brings the older one back */
  deregister_tracked(newer);
  EXPECT_KERNEL(op, OPD_KEY_CPU, OPD_KEY_CPU, older);
  ck_assert_int_eq(call_with(op, OPD_KEY_CPU), 0);
  ck_assert_str_eq(last_ran, "ovr_old");
  EXPECT_NOT_STALE(op);

  /* removing the older one while a newer one is live changes nothing visible */
  opd_reg_id newest = impl("t_reg_ovr::op", OPD_KEY_CPU, "ovr_newest");
  ck_assert_int_eq(warnings, 2);
  json_t *before = opd_op_json(op);
  deregister_tracked(older);
  json_t *after = opd_op_json(op);
  ck_assert(json_equal(json_object_get(before, "table"), json_object_get(after, "table")));
  ck_assert_uint_eq(json_array_size(json_object_get(after, "registrations")),
                    json_array_size(json_object_get(before, "registrations")) - 1);
  json_decref(before);
  json_decref(after);
  EXPECT_KERNEL(op, OPD_KEY_CPU, OPD_KEY_CPU, newest);
  ck_assert_int_eq(call_with(op, OPD_KEY_CPU), 0);
  ck_assert_str_eq(last_ran, "ovr_newest");

  /* and when the last one goes, the slot is empty */
  deregister_tracked(newest);
  EXPECT_MISSING(op, OPD_KEY_CPU);
  /* a fallthrough overrides a kernel too */
  opd_reg_id k = impl("t_reg_ovr::op", OPD_KEY_AutogradCPU, "ovr_ag");
  opd_reg_id f = fallthrough("t_reg_ovr::op", OPD_KEY_AutogradCPU);
  ck_assert_int_eq(warnings, 3);
  EXPECT_OP_FALLTHROUGH(op, OPD_KEY_AutogradCPU, OPD_KEY_AutogradCPU, f);
  deregister_tracked(f);
  EXPECT_KERNEL(op, OPD_KEY_AutogradCPU, OPD_KEY_AutogradCPU, k);
  EXPECT_NOT_STALE(op);

  opd_log_set_handler(NULL, NULL);
  opd_log_set_level(OPD_LOG_ERROR);
  deregister_all();
}
END_TEST

START_TEST(test_invalid_keys_and_kernels) {
  def("t_reg_inv", "op(Tensor a) -> Tensor");
  opd_kernel k = kernel_named("inv");
  const int bad_keys[] = {OPD_KEY_Dense,
                          OPD_KEY_AutogradFunctionality,
                          OPD_KEY_Sparse,
                          OPD_KEY_EndOfFunctionalityKeys,
                          42,
                          119,
                          OPD_NUM_KEYS,
                          500,
                          -2};
  for (size_t i = 0; i < sizeof bad_keys / sizeof *bad_keys; i++) {
    opd_dispatch_key key = (opd_dispatch_key)bad_keys[i];
    ck_assert_msg(opd_impl("t_reg_inv::op", key, &k, OPD_HERE) == OPD_EINVAL, "impl at %d",
                  bad_keys[i]);
    ck_assert_int_eq(opd_last_error_code(), OPD_EINVAL);
    ck_assert_int_eq(opd_impl_fallthrough("t_reg_inv::op", key, OPD_HERE), OPD_EINVAL);
    ck_assert_int_eq(opd_fallback(key, &k, OPD_HERE), OPD_EINVAL);
    ck_assert_int_eq(opd_fallback_fallthrough(key, OPD_HERE), OPD_EINVAL);
  }
  /* nor at an alias key for a backend fallback */
  ck_assert_int_eq(opd_fallback(CIA, &k, OPD_HERE), OPD_EINVAL);
  ck_assert_int_eq(opd_fallback_fallthrough(OPD_KEY_Autograd, OPD_HERE), OPD_EINVAL);
  /* nothing was registered for an operator with invalid keys */
  ck_assert_ptr_null(opd_find_op("t_reg_inv::never"));
  ck_assert_int_eq(opd_impl("t_reg_inv::never", OPD_KEY_Dense, &k, OPD_HERE), OPD_EINVAL);
  ck_assert_ptr_null(opd_find_op("t_reg_inv::never"));

  /* malformed kernels and names */
  opd_kernel no_boxed = {.name = "no_boxed"};
  ck_assert_int_eq(opd_impl("t_reg_inv::op", OPD_KEY_CPU, &no_boxed, OPD_HERE), OPD_EINVAL);
  ck_assert_int_eq(opd_impl("t_reg_inv::op", OPD_KEY_CPU, NULL, OPD_HERE), OPD_EINVAL);
  opd_kernel no_sig = OPD_UNBOXED_KERNEL(unboxed_tt, Tensor, Tensor, Tensor);
  no_sig.signature = NULL;
  ck_assert_int_eq(opd_impl("t_reg_inv::op", OPD_KEY_CPU, &no_sig, OPD_HERE), OPD_EINVAL);
  ck_assert_int_eq(opd_fallback(OPD_KEY_PrivateUse3, &no_boxed, OPD_HERE), OPD_EINVAL);
  ck_assert_int_eq(opd_impl("no_namespace", OPD_KEY_CPU, &k, OPD_HERE), OPD_EINVAL);
  ck_assert_int_eq(opd_impl(NULL, OPD_KEY_CPU, &k, OPD_HERE), OPD_EINVAL);
  ck_assert_int_eq(opd_impl_fallthrough("no_namespace", OPD_KEY_CPU, OPD_HERE), OPD_EINVAL);

  /* the operator's table is as it was */
  const opd_operator *op = find("t_reg_inv::op");
  EXPECT_MISSING(op, OPD_KEY_CPU);
  EXPECT_MISSING(op, OPD_KEY_PrivateUse3);
  json_t *j = opd_op_json(op);
  ck_assert_uint_eq(json_array_size(json_object_get(j, "registrations")), 1); /* the def */
  json_decref(j);
  deregister_all();
}
END_TEST

START_TEST(test_deregister_unknown) {
  ck_assert_int_eq(opd_deregister(0), OPD_ENOENT);
  ck_assert_int_eq(opd_deregister(-1), OPD_ENOENT);
  ck_assert_int_eq(opd_deregister(INT64_MAX), OPD_ENOENT);
  ck_assert_int_eq(opd_last_error_code(), OPD_ENOENT);
  opd_reg_id d = opd_def("t_reg_unk", "op(Tensor a) -> Tensor", OPD_HERE);
  ck_assert_int_gt(d, 0);
  opd_kernel k = kernel_named("unk");
  opd_reg_id i = opd_impl("t_reg_unk::op", OPD_KEY_CPU, &k, OPD_HERE);
  ck_assert_int_gt(i, 0);
  ck_assert_int_eq(opd_deregister(i), 0);
  ck_assert_int_eq(opd_deregister(i), OPD_ENOENT); /* twice */
  ck_assert_int_eq(opd_deregister(d), 0);
  ck_assert_int_eq(opd_deregister(d), OPD_ENOENT);
}
END_TEST

START_TEST(test_ids_unique) {
  opd_reg_id ids[64];
  int n = 0;
  opd_kernel k = kernel_named("ids");
  ids[n++] = def("t_reg_ids", "op(Tensor a) -> Tensor");
  ids[n++] = def("t_reg_ids", "op2(Tensor a) -> Tensor");
  const opd_dispatch_key keys[] = {OPD_KEY_CPU,      OPD_KEY_CPU,         OPD_KEY_Meta,  CIA, CEA,
                                   OPD_KEY_Autograd, OPD_KEY_AutogradCPU, OPD_KEY_Tracer};
  for (size_t i = 0; i < sizeof keys / sizeof *keys; i++) {
    ids[n++] = impl("t_reg_ids::op", keys[i], "ids");
    ids[n++] = fallthrough("t_reg_ids::op2", keys[i]);
  }
  ids[n++] = impl("t_reg_ids::undefined_yet", OPD_KEY_CPU, "ids");
  ids[n++] = TRACK(opd_fallback(OPD_KEY_PrivateUse3, &k, OPD_HERE));
  ids[n++] = TRACK(opd_fallback_fallthrough(OPD_KEY_PrivateUse2, OPD_HERE));
  /* removing one does not free its id for reuse */
  deregister_tracked(ids[2]);
  ids[n++] = impl("t_reg_ids::op", OPD_KEY_CPU, "ids");
  for (int i = 0; i < n; i++) {
    ck_assert_int_gt(ids[i], 0);
    for (int j = 0; j < i; j++) ck_assert_int_ne(ids[i], ids[j]);
  }
  deregister_all();
}
END_TEST

START_TEST(test_unboxed_signature_checked) {
  /* def first: the impl is checked */
  def("t_reg_sig", "op(Tensor a, Scalar b) -> Tensor");
  opd_kernel wrong = OPD_UNBOXED_KERNEL(unboxed_tt, Tensor, Tensor, Tensor);
  opd_kernel right = OPD_UNBOXED_KERNEL(unboxed_ts, Tensor, Tensor, Scalar);
  ck_assert_str_eq(right.signature, "T:Ts");
  ck_assert_int_eq(opd_impl("t_reg_sig::op", OPD_KEY_CPU, &wrong, OPD_HERE), OPD_EINVAL);
  ck_assert_int_eq(opd_last_error_code(), OPD_EINVAL);
  const opd_operator *op = find("t_reg_sig::op");
  EXPECT_MISSING(op, OPD_KEY_CPU);
  opd_reg_id ok = TRACK(opd_impl("t_reg_sig::op", OPD_KEY_CPU, &right, OPD_HERE));
  EXPECT_KERNEL(op, OPD_KEY_CPU, OPD_KEY_CPU, ok);
  /* a boxed-only kernel has no signature to check */
  impl("t_reg_sig::op", OPD_KEY_Meta, "sig_boxed");

  /* impl first: the def is checked, and fails */
  opd_reg_id bad = TRACK(opd_impl("t_reg_sig2::op", OPD_KEY_CPU, &wrong, OPD_HERE));
  ck_assert_int_eq(opd_def("t_reg_sig2", "op(Tensor a, Scalar b) -> Tensor", OPD_HERE), OPD_EINVAL);
  ck_assert_int_eq(opd_last_error_code(), OPD_EINVAL);
  const opd_operator *op2 = find("t_reg_sig2::op");
  ck_assert_ptr_null(opd_op_schema(op2));
  ck_assert_ptr_null(opd_find_schema("t_reg_sig2::op"));
  /* without the mismatching kernel the def succeeds, and a matching one stays */
  TRACK(opd_impl("t_reg_sig2::op", OPD_KEY_Meta, &right, OPD_HERE));
  deregister_tracked(bad);
  def("t_reg_sig2", "op(Tensor a, Scalar b) -> Tensor");
  ck_assert_ptr_nonnull(opd_op_schema(op2));

  /* a schema with types unboxed calls lack takes boxed kernels only */
  def("t_reg_sig", "lists(Tensor a, float[] f) -> Tensor");
  ck_assert_int_eq(opd_impl("t_reg_sig::lists", OPD_KEY_CPU, &right, OPD_HERE), OPD_EINVAL);
  impl("t_reg_sig::lists", OPD_KEY_CPU, "lists_boxed");
  def("t_reg_sig", "two(Tensor a, Scalar b) -> (Tensor, Tensor)");
  ck_assert_int_eq(opd_impl("t_reg_sig::two", OPD_KEY_CPU, &right, OPD_HERE), OPD_EINVAL);
  deregister_all();
}
END_TEST

START_TEST(test_fallback_rules) {
  opd_kernel k = kernel_named("pu2_fallback");
  def("t_reg_fb", "op(Tensor a) -> Tensor");
  const opd_operator *op = find("t_reg_fb::op");
  EXPECT_MISSING(op, OPD_KEY_PrivateUse2);

  opd_reg_id fb = TRACK(opd_fallback(OPD_KEY_PrivateUse2, &k, OPD_HERE));
  /* a second live fallback at the key is refused, kernel or fallthrough */
  ck_assert_int_eq(opd_fallback(OPD_KEY_PrivateUse2, &k, OPD_HERE), OPD_EEXIST);
  ck_assert_int_eq(opd_last_error_code(), OPD_EEXIST);
  ck_assert_int_eq(opd_fallback_fallthrough(OPD_KEY_PrivateUse2, OPD_HERE), OPD_EEXIST);
  /* the default fallbacks count too */
  ck_assert_int_eq(opd_fallback_fallthrough(OPD_KEY_BackendSelect, OPD_HERE), OPD_EEXIST);
  ck_assert_int_eq(opd_fallback(OPD_KEY_Tracer, &k, OPD_HERE), OPD_EEXIST);

  /* it fills the slot of existing operators and of operators made later */
  expect_slot_(op, OPD_KEY_PrivateUse2, "fallback", fb, NULL, NULL, __LINE__);
  json_t *j = opd_op_slot_json(op, OPD_KEY_PrivateUse2);
  ck_assert_str_eq(jstr(j, "kernel"), "pu2_fallback");
  json_decref(j);
  def("t_reg_fb", "later(Tensor a) -> Tensor");
  const opd_operator *later = find("t_reg_fb::later");
  expect_slot_(later, OPD_KEY_PrivateUse2, "fallback", fb, NULL, NULL, __LINE__);
  ck_assert_int_eq(call_below_autograd(later, OPD_KEY_PrivateUse2), 0);
  ck_assert_str_eq(last_ran, "pu2_fallback");

  /* an operator's own kernel beats the fallback */
  opd_reg_id own = impl("t_reg_fb::op", OPD_KEY_PrivateUse2, "pu2_own");
  EXPECT_KERNEL(op, OPD_KEY_PrivateUse2, OPD_KEY_PrivateUse2, own);

  /* removing it empties the slots; then another fallback may be registered */
  deregister_tracked(fb);
  EXPECT_MISSING(later, OPD_KEY_PrivateUse2);
  EXPECT_KERNEL(op, OPD_KEY_PrivateUse2, OPD_KEY_PrivateUse2, own);
  opd_reg_id ft = TRACK(opd_fallback_fallthrough(OPD_KEY_PrivateUse2, OPD_HERE));
  expect_slot_(later, OPD_KEY_PrivateUse2, "fallthrough", ft, "global", NULL, __LINE__);
  EXPECT_NOT_STALE(op);
  EXPECT_NOT_STALE(later);
  deregister_all();
  EXPECT_MISSING(later, OPD_KEY_PrivateUse2);
}
END_TEST

/* The 1.13 default backend fallbacks (oracle all_backend_fallbacks): every fallthrough
 * one is a global fallthrough for an operator without kernels, Tracer's is a kernel, and
 * a key without a fallback is missing. */
START_TEST(test_default_fallbacks_match_oracle) {
  def("t_reg_dflt", "op(Tensor a) -> Tensor");
  const opd_operator *op = find("t_reg_dflt::op");
  json_t *root = opd_test_load_shared("oracle/public.json");
  json_t *fallbacks = json_object_get(root, "all_backend_fallbacks");
  int fallthroughs = 0, missing = 0;
  for (unsigned s = 0; s < OPD_NUM_RUNTIME_SLOTS; s++) {
    opd_dispatch_key k = opd_slot_key(s);
    const char *kind = jstr(fallbacks, opd_key_name(k));
    if (kind && strcmp(kind, "fallthrough") == 0) {
      EXPECT_GLOBAL_FALLTHROUGH(op, k);
      fallthroughs++;
    } else if (!kind) {
      EXPECT_MISSING(op, k);
      missing++;
    }
  }
  ck_assert_int_eq(fallthroughs, 14);
  ck_assert_int_gt(missing, 50);
  ck_assert_str_eq(jstr(fallbacks, "Tracer"), "kernel");
  EXPECT_SOURCE(op, OPD_KEY_Tracer, "fallback");
  json_decref(root);
  deregister_all();
}
END_TEST

/* ---- table rules (FORMAT.md section 4) ---- */

START_TEST(test_rule_direct) {
  def("t_reg_direct", "op(Tensor a) -> Tensor");
  const opd_operator *op = find("t_reg_direct::op");
  opd_reg_id cpu = impl("t_reg_direct::op", OPD_KEY_CPU, "direct_cpu");
  opd_reg_id sparse = impl("t_reg_direct::op", OPD_KEY_SparseCPU, "direct_sparse");
  opd_reg_id ag = impl("t_reg_direct::op", OPD_KEY_AutogradMeta, "direct_agmeta");
  opd_reg_id bs = impl("t_reg_direct::op", OPD_KEY_BackendSelect, "direct_bs");
  EXPECT_KERNEL(op, OPD_KEY_CPU, OPD_KEY_CPU, cpu);
  EXPECT_KERNEL(op, OPD_KEY_SparseCPU, OPD_KEY_SparseCPU, sparse);
  EXPECT_KERNEL(op, OPD_KEY_AutogradMeta, OPD_KEY_AutogradMeta, ag);
  EXPECT_KERNEL(op, OPD_KEY_BackendSelect, OPD_KEY_BackendSelect, bs); /* beats the fallback */
  json_t *j = opd_op_slot_json(op, OPD_KEY_CPU);
  ck_assert_str_eq(jstr(j, "kernel"), "direct_cpu");
  json_decref(j);
  /* nothing else is filled */
  EXPECT_MISSING(op, OPD_KEY_CUDA);
  EXPECT_MISSING(op, OPD_KEY_Meta);
  EXPECT_MISSING(op, OPD_KEY_Undefined);
  EXPECT_GLOBAL_FALLTHROUGH(op, OPD_KEY_AutogradCPU);
  EXPECT_GLOBAL_FALLTHROUGH(op, OPD_KEY_AutogradOther);
  /* a direct AutogradOther kernel wins even over the ambiguity (1-d10) */
  opd_reg_id math = impl("t_reg_direct::op", CIA, "direct_math");
  EXPECT_SOURCE(op, OPD_KEY_AutogradOther, "ambiguous_autogradother");
  opd_reg_id other = impl("t_reg_direct::op", OPD_KEY_AutogradOther, "direct_other");
  EXPECT_KERNEL(op, OPD_KEY_AutogradOther, OPD_KEY_AutogradOther, other);
  EXPECT_KERNEL(op, OPD_KEY_CUDA, CIA, math);
  EXPECT_KERNEL(op, OPD_KEY_CPU, OPD_KEY_CPU, cpu);
  EXPECT_NOT_STALE(op);
  /* removing the kernels empties the slots again */
  deregister_tracked(cpu);
  EXPECT_KERNEL(op, OPD_KEY_CPU, CIA, math);
  deregister_tracked(bs);
  EXPECT_GLOBAL_FALLTHROUGH(op, OPD_KEY_BackendSelect);
  EXPECT_NOT_STALE(op);
  deregister_all();
}
END_TEST

START_TEST(test_rule_ceanf) {
  /* 1-d11: CEANF fills its backends and Undefined; autograd keys still take CIA */
  def("t_reg_ceanf", "op(Tensor a) -> Tensor");
  const opd_operator *op = find("t_reg_ceanf::op");
  opd_reg_id nf = impl("t_reg_ceanf::op", CEANF, "ceanf");
  opd_reg_id math = impl("t_reg_ceanf::op", CIA, "ceanf_math");
  EXPECT_KERNEL(op, OPD_KEY_Undefined, CEANF, nf);
  EXPECT_KERNEL(op, OPD_KEY_CPU, CEANF, nf);
  EXPECT_KERNEL(op, OPD_KEY_CUDA, CEANF, nf);
  EXPECT_KERNEL(op, OPD_KEY_Meta, CEANF, nf);
  EXPECT_KERNEL(op, OPD_KEY_QuantizedCPU, CEANF, nf);
  EXPECT_KERNEL(op, OPD_KEY_MkldnnCPU, CEANF, nf);
  EXPECT_KERNEL(op, OPD_KEY_SparseCsrCPU, CEANF, nf);
  EXPECT_KERNEL(op, OPD_KEY_SparseCPU, CIA, math); /* no sparse in CEANF */
  EXPECT_KERNEL(op, OPD_KEY_XLA, CIA, math);       /* nor XLA, Lazy */
  EXPECT_KERNEL(op, OPD_KEY_Lazy, CIA, math);
  EXPECT_KERNEL(op, OPD_KEY_AutogradCPU, CIA, math); /* CEANF does not block CIA */
  EXPECT_KERNEL(op, OPD_KEY_AutogradOther, CIA, math);
  EXPECT_KERNEL(op, OPD_KEY_AutogradMeta, CIA, math);
  json_t *j = opd_op_slot_json(op, OPD_KEY_CPU);
  ck_assert_str_eq(jstr(j, "source"), "CompositeExplicitAutogradNonFunctional");
  json_decref(j);
  /* a direct kernel beats it; CEA loses to it */
  opd_reg_id cpu = impl("t_reg_ceanf::op", OPD_KEY_CPU, "ceanf_cpu");
  opd_reg_id cea = impl("t_reg_ceanf::op", CEA, "ceanf_cea");
  EXPECT_KERNEL(op, OPD_KEY_CPU, OPD_KEY_CPU, cpu);
  EXPECT_KERNEL(op, OPD_KEY_Meta, CEANF, nf);
  EXPECT_KERNEL(op, OPD_KEY_XLA, CEA, cea);
  EXPECT_KERNEL(op, OPD_KEY_SparseCPU, CEA, cea);
  EXPECT_KERNEL(op, OPD_KEY_Undefined, CEANF, nf);
  EXPECT_NOT_STALE(op);
  deregister_all();
}
END_TEST

START_TEST(test_rule_cea_blocks_cia) {
  /* 1-d4: CEA + CIA: the backends take CEA, and no autograd key takes CIA */
  def("t_reg_cea", "op(Tensor a) -> Tensor");
  const opd_operator *op = find("t_reg_cea::op");
  ck_assert_ptr_nonnull(op);
  opd_reg_id cea = impl("t_reg_cea::op", CEA, "cea");
  opd_reg_id math = impl("t_reg_cea::op", CIA, "cea_math");
  (void)math;
  EXPECT_KERNEL(op, OPD_KEY_Undefined, CEA, cea);
  EXPECT_KERNEL(op, OPD_KEY_CPU, CEA, cea);
  EXPECT_KERNEL(op, OPD_KEY_XLA, CEA, cea);
  EXPECT_KERNEL(op, OPD_KEY_SparseCPU, CEA, cea);
  EXPECT_KERNEL(op, OPD_KEY_MkldnnCPU, CEA, cea);
  EXPECT_GLOBAL_FALLTHROUGH(op, OPD_KEY_AutogradCPU);
  EXPECT_GLOBAL_FALLTHROUGH(op, OPD_KEY_AutogradCUDA);
  EXPECT_GLOBAL_FALLTHROUGH(op, OPD_KEY_AutogradOther);
  EXPECT_MISSING(op, OPD_KEY_AutogradMeta);
  EXPECT_MISSING(op, OPD_KEY_AutogradNestedTensor);
  /* CEA does not cover nested tensors, and blocks CIA there too */
  EXPECT_MISSING(op, OPD_KEY_NestedTensorCPU);
  EXPECT_NOT_STALE(op);
  /* removing CEA gives the math kernel everything back (1-d32) */
  deregister_tracked(cea);
  EXPECT_KERNEL(op, OPD_KEY_AutogradCPU, CIA, math);
  EXPECT_KERNEL(op, OPD_KEY_AutogradMeta, CIA, math);
  EXPECT_KERNEL(op, OPD_KEY_NestedTensorCPU, CIA, math);
  EXPECT_KERNEL(op, OPD_KEY_CPU, CIA, math);
  EXPECT_NOT_STALE(op);
  /* 1-d17: a CEA fallthrough blocks the math kernel as well */
  opd_reg_id ft = fallthrough("t_reg_cea::op", CEA);
  EXPECT_OP_FALLTHROUGH(op, OPD_KEY_CPU, CEA, ft);
  EXPECT_OP_FALLTHROUGH(op, OPD_KEY_Undefined, CEA, ft);
  EXPECT_OP_FALLTHROUGH(op, OPD_KEY_SparseCPU, CEA, ft);
  EXPECT_GLOBAL_FALLTHROUGH(op, OPD_KEY_AutogradCPU);
  EXPECT_GLOBAL_FALLTHROUGH(op, OPD_KEY_AutogradOther);
  EXPECT_MISSING(op, OPD_KEY_AutogradMeta);
  EXPECT_NOT_STALE(op);
  deregister_all();
}
END_TEST

START_TEST(test_rule_cia) {
  /* 1-d1: CIA only fills backends, autograd keys and Undefined */
  def("t_reg_cia", "op(Tensor a) -> Tensor");
  const opd_operator *op = find("t_reg_cia::op");
  ck_assert_ptr_nonnull(op);
  opd_reg_id math = impl("t_reg_cia::op", CIA, "cia_math");
  const opd_dispatch_key covered[] = {OPD_KEY_Undefined,
                                      OPD_KEY_CPU,
                                      OPD_KEY_CUDA,
                                      OPD_KEY_Meta,
                                      OPD_KEY_SparseCPU,
                                      OPD_KEY_SparseCsrCPU,
                                      OPD_KEY_QuantizedCPU,
                                      OPD_KEY_MkldnnCPU,
                                      OPD_KEY_AutogradOther,
                                      OPD_KEY_AutogradCPU,
                                      OPD_KEY_AutogradCUDA,
                                      OPD_KEY_AutogradMeta,
                                      OPD_KEY_NestedTensorCPU,
                                      OPD_KEY_AutogradNestedTensor,
                                      OPD_KEY_AutogradHIP,
                                      OPD_KEY_XLA};
  for (size_t i = 0; i < sizeof covered / sizeof *covered; i++)
    EXPECT_KERNEL(op, covered[i], CIA, math);
  /* keys outside the alias keep their fallbacks or stay empty */
  EXPECT_GLOBAL_FALLTHROUGH(op, OPD_KEY_BackendSelect);
  EXPECT_GLOBAL_FALLTHROUGH(op, OPD_KEY_ADInplaceOrView);
  EXPECT_GLOBAL_FALLTHROUGH(op, OPD_KEY_AutocastCPU);
  EXPECT_SOURCE(op, OPD_KEY_Tracer, "fallback");
  EXPECT_MISSING(op, OPD_KEY_Fake); /* no fallback there in 1.13 either */
  EXPECT_MISSING(op, OPD_KEY_DeferredInit);
  /* 1-d6: the math kernel beats the Autograd alias where it is not blocked */
  opd_reg_id ag = impl("t_reg_cia::op", OPD_KEY_Autograd, "cia_autograd");
  EXPECT_KERNEL(op, OPD_KEY_AutogradCPU, CIA, math);
  EXPECT_KERNEL(op, OPD_KEY_AutogradOther, CIA, math);
  /* once a CPU kernel blocks it at AutogradCPU, the Autograd alias fills that slot */
  impl("t_reg_cia::op", OPD_KEY_CPU, "cia_cpu");
  EXPECT_KERNEL(op, OPD_KEY_AutogradCPU, OPD_KEY_Autograd, ag);
  EXPECT_KERNEL(op, OPD_KEY_AutogradCUDA, CIA, math);
  EXPECT_NOT_STALE(op);
  deregister_all();
}
END_TEST

START_TEST(test_rule_ambiguous_autogradother) {
  /* 1-d8: CIA + SparseCPU: AutogradOther becomes ambiguous */
  def("t_reg_amb", "op(Tensor a) -> Tensor");
  const opd_operator *op = find("t_reg_amb::op");
  opd_reg_id math = impl("t_reg_amb::op", CIA, "amb_math");
  EXPECT_KERNEL(op, OPD_KEY_AutogradOther, CIA, math);
  opd_reg_id sparse = impl("t_reg_amb::op", OPD_KEY_SparseCPU, "amb_sparse");
  EXPECT_SOURCE(op, OPD_KEY_AutogradOther, "ambiguous_autogradother");
  ck_assert_int_eq(opd_op_slot_registration(op, OPD_KEY_AutogradOther), 0);
  EXPECT_KERNEL(op, OPD_KEY_SparseCPU, OPD_KEY_SparseCPU, sparse);
  EXPECT_KERNEL(op, OPD_KEY_AutogradCPU, CIA, math); /* SparseCPU does not block it */
  EXPECT_KERNEL(op, OPD_KEY_MkldnnCPU, CIA, math);
  EXPECT_NOT_STALE(op);
  /* the Autograd alias does not resolve it (1-d8) */
  opd_reg_id ag = impl("t_reg_amb::op", OPD_KEY_Autograd, "amb_autograd");
  EXPECT_SOURCE(op, OPD_KEY_AutogradOther, "ambiguous_autogradother");
  deregister_tracked(ag);
  /* removing the sparse kernel lifts the ambiguity */
  deregister_tracked(sparse);
  EXPECT_KERNEL(op, OPD_KEY_AutogradOther, CIA, math);
  EXPECT_NOT_STALE(op);
  /* any AutogradOther-group key does it: a fallthrough at MkldnnCPU, QuantizedMeta */
  opd_reg_id mk = fallthrough("t_reg_amb::op", OPD_KEY_MkldnnCPU);
  EXPECT_SOURCE(op, OPD_KEY_AutogradOther, "ambiguous_autogradother");
  deregister_tracked(mk);
  EXPECT_KERNEL(op, OPD_KEY_AutogradOther, CIA, math);
  impl("t_reg_amb::op", OPD_KEY_QuantizedMeta, "amb_qmeta");
  EXPECT_SOURCE(op, OPD_KEY_AutogradOther, "ambiguous_autogradother");
  EXPECT_KERNEL(op, OPD_KEY_AutogradMeta, CIA, math);
  EXPECT_NOT_STALE(op);
  deregister_all();
}
END_TEST

START_TEST(test_rule_cia_blocked_by_backend) {
  /* 1-d2: CIA + CPU: AutogradCPU does not take the math kernel, AutogradCUDA does */
  def("t_reg_blk", "op(Tensor a) -> Tensor");
  const opd_operator *op = find("t_reg_blk::op");
  ck_assert_ptr_nonnull(op);
  opd_reg_id math = impl("t_reg_blk::op", CIA, "blk_math");
  opd_reg_id cpu = impl("t_reg_blk::op", OPD_KEY_CPU, "blk_cpu");
  EXPECT_KERNEL(op, OPD_KEY_CPU, OPD_KEY_CPU, cpu);
  EXPECT_GLOBAL_FALLTHROUGH(op, OPD_KEY_AutogradCPU);
  EXPECT_KERNEL(op, OPD_KEY_AutogradCUDA, CIA, math);
  EXPECT_KERNEL(op, OPD_KEY_AutogradMeta, CIA, math);
  EXPECT_KERNEL(op, OPD_KEY_AutogradOther, CIA, math);
  EXPECT_KERNEL(op, OPD_KEY_Undefined, CIA, math);
  EXPECT_NOT_STALE(op);
  /* a Meta kernel blocks AutogradMeta, which has no fallback: missing */
  opd_reg_id meta = impl("t_reg_blk::op", OPD_KEY_Meta, "blk_meta");
  EXPECT_MISSING(op, OPD_KEY_AutogradMeta);
  deregister_tracked(meta);
  EXPECT_KERNEL(op, OPD_KEY_AutogradMeta, CIA, math);
  /* 1-d16: a CPU fallthrough blocks it as well */
  deregister_tracked(cpu);
  EXPECT_KERNEL(op, OPD_KEY_AutogradCPU, CIA, math);
  opd_reg_id ft = fallthrough("t_reg_blk::op", OPD_KEY_CPU);
  EXPECT_OP_FALLTHROUGH(op, OPD_KEY_CPU, OPD_KEY_CPU, ft);
  EXPECT_GLOBAL_FALLTHROUGH(op, OPD_KEY_AutogradCPU);
  EXPECT_KERNEL(op, OPD_KEY_AutogradCUDA, CIA, math);
  EXPECT_NOT_STALE(op);
  /* AutogradHIP has no backend keys in 1.13, so a HIP kernel does not block it */
  impl("t_reg_blk::op", OPD_KEY_HIP, "blk_hip");
  EXPECT_KERNEL(op, OPD_KEY_AutogradHIP, CIA, math);
  /* while an XLA kernel blocks AutogradXLA, which has a fallthrough fallback */
  impl("t_reg_blk::op", OPD_KEY_XLA, "blk_xla");
  EXPECT_GLOBAL_FALLTHROUGH(op, OPD_KEY_AutogradXLA);
  EXPECT_NOT_STALE(op);
  deregister_all();
}
END_TEST

START_TEST(test_rule_autograd_alias) {
  /* 1-d7 / 1-d14: the Autograd alias fills autograd keys only, not Undefined */
  def("t_reg_ag", "op(Tensor a) -> Tensor");
  const opd_operator *op = find("t_reg_ag::op");
  opd_reg_id ag = impl("t_reg_ag::op", OPD_KEY_Autograd, "ag_alias");
  opd_reg_id cpu = impl("t_reg_ag::op", OPD_KEY_CPU, "ag_cpu");
  EXPECT_KERNEL(op, OPD_KEY_AutogradCPU, OPD_KEY_Autograd, ag);
  EXPECT_KERNEL(op, OPD_KEY_AutogradMeta, OPD_KEY_Autograd, ag);
  EXPECT_KERNEL(op, OPD_KEY_AutogradOther, OPD_KEY_Autograd, ag);
  EXPECT_KERNEL(op, OPD_KEY_AutogradNestedTensor, OPD_KEY_Autograd, ag);
  EXPECT_KERNEL(op, OPD_KEY_AutogradPrivateUse3, OPD_KEY_Autograd, ag);
  EXPECT_KERNEL(op, OPD_KEY_CPU, OPD_KEY_CPU, cpu);
  EXPECT_MISSING(op, OPD_KEY_Undefined);
  EXPECT_MISSING(op, OPD_KEY_Meta);
  /* a direct autograd kernel beats it */
  opd_reg_id agcuda = impl("t_reg_ag::op", OPD_KEY_AutogradCUDA, "ag_cuda");
  EXPECT_KERNEL(op, OPD_KEY_AutogradCUDA, OPD_KEY_AutogradCUDA, agcuda);
  json_t *j = opd_op_slot_json(op, OPD_KEY_AutogradMeta);
  ck_assert_str_eq(jstr(j, "kernel"), "ag_alias");
  json_decref(j);
  deregister_tracked(ag);
  EXPECT_GLOBAL_FALLTHROUGH(op, OPD_KEY_AutogradCPU);
  EXPECT_MISSING(op, OPD_KEY_AutogradMeta);
  EXPECT_NOT_STALE(op);
  deregister_all();
}
END_TEST

START_TEST(test_rule_backend_fallback_and_missing) {
  /* 1-d3: a Meta-only op is missing at AutogradMeta (no fallback there in 1.13), while
   * AutogradCPU keeps its fallthrough fallback */
  def("t_reg_miss", "op(Tensor a) -> Tensor");
  const opd_operator *op = find("t_reg_miss::op");
  opd_reg_id meta = impl("t_reg_miss::op", OPD_KEY_Meta, "miss_meta");
  EXPECT_KERNEL(op, OPD_KEY_Meta, OPD_KEY_Meta, meta);
  EXPECT_MISSING(op, OPD_KEY_AutogradMeta);
  EXPECT_MISSING(op, OPD_KEY_CPU);
  EXPECT_GLOBAL_FALLTHROUGH(op, OPD_KEY_AutogradCPU);
  json_t *j = opd_op_slot_json(op, OPD_KEY_AutogradCPU);
  ck_assert_int_gt(json_integer_value(json_object_get(j, "registration")), 0);
  json_decref(j);

  /* 1-d22: a global fallthrough at Meta */
  opd_reg_id g = TRACK(opd_fallback_fallthrough(OPD_KEY_Meta, OPD_HERE));
  EXPECT_KERNEL(op, OPD_KEY_Meta, OPD_KEY_Meta, meta); /* the op's own kernel wins */
  def("t_reg_miss", "op2(Tensor a, Tensor b) -> Tensor");
  const opd_operator *op2 = find("t_reg_miss::op2");
  opd_reg_id cpu = impl("t_reg_miss::op2", OPD_KEY_CPU, "miss_cpu");
  opd_reg_id agm = impl("t_reg_miss::op2", OPD_KEY_AutogradMeta, "miss_agmeta");
  expect_slot_(op2, OPD_KEY_Meta, "fallthrough", g, "global", NULL, __LINE__);
  EXPECT_KERNEL(op2, OPD_KEY_CPU, OPD_KEY_CPU, cpu);
  EXPECT_KERNEL(op2, OPD_KEY_AutogradMeta, OPD_KEY_AutogradMeta, agm);
  EXPECT_MISSING(op2, OPD_KEY_CUDA);
  EXPECT_MISSING(op2, OPD_KEY_Undefined);

  /* 1-d23: a global fallthrough at CPU; an alias kernel beats the fallback */
  opd_reg_id gc = TRACK(opd_fallback_fallthrough(OPD_KEY_CPU, OPD_HERE));
  def("t_reg_miss", "op3(Tensor a) -> Tensor");
  const opd_operator *op3 = find("t_reg_miss::op3");
  expect_slot_(op3, OPD_KEY_CPU, "fallthrough", gc, "global", NULL, __LINE__);
  opd_reg_id math = impl("t_reg_miss::op3", CIA, "miss_math");
  impl("t_reg_miss::op3", OPD_KEY_CUDA, "miss_cuda");
  EXPECT_KERNEL(op3, OPD_KEY_CPU, CIA, math);
  EXPECT_KERNEL(op3, OPD_KEY_AutogradCPU, CIA, math);
  EXPECT_GLOBAL_FALLTHROUGH(op3, OPD_KEY_AutogradCUDA);
  EXPECT_NOT_STALE(op);
  EXPECT_NOT_STALE(op2);
  EXPECT_NOT_STALE(op3);

  deregister_tracked(g);
  EXPECT_MISSING(op2, OPD_KEY_Meta);
  deregister_tracked(gc);
  EXPECT_MISSING(op, OPD_KEY_CPU);
  deregister_all();
}
END_TEST

START_TEST(test_rule_alias_fallthrough) {
  /* 1-d15: a fallthrough at CIA spreads over everything CIA covers, Undefined included */
  def("t_reg_aft", "op(Tensor a) -> Tensor");
  const opd_operator *op = find("t_reg_aft::op");
  ck_assert_ptr_nonnull(op);
  opd_reg_id ft = fallthrough("t_reg_aft::op", CIA);
  const opd_dispatch_key covered[] = {
      OPD_KEY_Undefined,      OPD_KEY_CPU,          OPD_KEY_CUDA,         OPD_KEY_Meta,
      OPD_KEY_SparseCPU,      OPD_KEY_SparseCsrCPU, OPD_KEY_QuantizedCPU, OPD_KEY_MkldnnCPU,
      OPD_KEY_AutogradOther,  OPD_KEY_AutogradCPU,  OPD_KEY_AutogradCUDA, OPD_KEY_AutogradMeta,
      OPD_KEY_NestedTensorCPU};
  for (size_t i = 0; i < sizeof covered / sizeof *covered; i++)
    EXPECT_OP_FALLTHROUGH(op, covered[i], CIA, ft);
  EXPECT_GLOBAL_FALLTHROUGH(op, OPD_KEY_BackendSelect);
  EXPECT_SOURCE(op, OPD_KEY_Tracer, "fallback");
  /* a kernel at a covered key beats it */
  opd_reg_id cpu = impl("t_reg_aft::op", OPD_KEY_CPU, "aft_cpu");
  EXPECT_KERNEL(op, OPD_KEY_CPU, OPD_KEY_CPU, cpu);
  EXPECT_GLOBAL_FALLTHROUGH(op, OPD_KEY_AutogradCPU); /* blocked by CPU */
  EXPECT_OP_FALLTHROUGH(op, OPD_KEY_AutogradMeta, CIA, ft);
  deregister_tracked(ft);
  EXPECT_MISSING(op, OPD_KEY_Meta);
  EXPECT_MISSING(op, OPD_KEY_Undefined);
  /* an Autograd-alias fallthrough spreads over the autograd keys */
  opd_reg_id agft = fallthrough("t_reg_aft::op", OPD_KEY_Autograd);
  EXPECT_OP_FALLTHROUGH(op, OPD_KEY_AutogradMeta, OPD_KEY_Autograd, agft);
  EXPECT_OP_FALLTHROUGH(op, OPD_KEY_AutogradCPU, OPD_KEY_Autograd, agft);
  EXPECT_OP_FALLTHROUGH(op, OPD_KEY_AutogradNestedTensor, OPD_KEY_Autograd, agft);
  EXPECT_MISSING(op, OPD_KEY_Undefined);
  /* and a CEA fallthrough over the backends */
  opd_reg_id ceaft = fallthrough("t_reg_aft::op", CEA);
  EXPECT_OP_FALLTHROUGH(op, OPD_KEY_Meta, CEA, ceaft);
  EXPECT_OP_FALLTHROUGH(op, OPD_KEY_Undefined, CEA, ceaft);
  EXPECT_KERNEL(op, OPD_KEY_CPU, OPD_KEY_CPU, cpu);
  EXPECT_NOT_STALE(op);
  deregister_all();
}
END_TEST

/* ---- property test: incremental updates against an independent model ---- */

static uint64_t rng_state;
static uint64_t rng_next(void) {
  rng_state ^= rng_state >> 12;
  rng_state ^= rng_state << 25;
  rng_state ^= rng_state >> 27;
  return rng_state * UINT64_C(2685821657736338717);
}

typedef struct model_reg {
  opd_reg_id id;
  opd_dispatch_key key;
  bool fallthrough;
} model_reg;

typedef struct model {
  model_reg regs[MAX_TRACKED]; /* live, oldest first */
  int n;
  opd_reg_id global_ft[OPD_NUM_KEYS]; /* global fallthroughs the test added */
} model;

typedef struct expected_slot {
  const char *source; /* a key name, "fallthrough", "fallback", "ambiguous_autogradother",
                         "missing" */
  const char *scope;  /* fallthroughs */
  opd_dispatch_key via;
  opd_reg_id reg; /* -1: a default fallback's (not checked) */
} expected_slot;

static const model_reg *newest_at(const model *m, opd_dispatch_key k) {
  for (int i = m->n - 1; i >= 0; i--)
    if (m->regs[i].key == k) return &m->regs[i];
  return NULL;
}

static bool has_reg_in(const model *m, opd_keyset s) {
  for (int i = 0; i < m->n; i++) {
    opd_dispatch_key k = m->regs[i].key;
    /* only runtime keys are members of a key set (alias keys have an empty set) */
    if (k != OPD_KEY_Undefined && opd_key_is_runtime(k) && opd_keyset_has(s, k)) return true;
  }
  return false;
}

static expected_slot from_reg(const model_reg *r, opd_dispatch_key at) {
  if (r->fallthrough) return (expected_slot){"fallthrough", "op", at, r->id};
  return (expected_slot){opd_key_name(at), NULL, at, r->id};
}

/* opd's default backend fallbacks: the 1.13 fallthrough ones, and Tracer's kernel. */
static const opd_dispatch_key default_fallthroughs[] = {
    OPD_KEY_BackendSelect,     OPD_KEY_ADInplaceOrView, OPD_KEY_AutogradOther, OPD_KEY_AutogradCPU,
    OPD_KEY_AutogradCUDA,      OPD_KEY_AutogradXLA,     OPD_KEY_AutogradMPS,   OPD_KEY_AutogradXPU,
    OPD_KEY_AutogradHPU,       OPD_KEY_AutogradLazy,    OPD_KEY_AutocastCPU,   OPD_KEY_AutocastCUDA,
    OPD_KEY_FuncTorchVmapMode, OPD_KEY_VmapMode};

/* FORMAT.md section 4, rules 1 to 7. */
static expected_slot model_slot(const model *m, opd_dispatch_key k) {
  const model_reg *r = newest_at(m, k);
  if (r) return from_reg(r, k);
  const opd_dispatch_key explicit_aliases[] = {CEANF, CEA};
  for (int i = 0; i < 2; i++)
    if ((r = newest_at(m, explicit_aliases[i])) && opd_alias_covers(explicit_aliases[i], k))
      return from_reg(r, explicit_aliases[i]);
  if ((r = newest_at(m, CIA)) && opd_alias_covers(CIA, k)) {
    if (k == OPD_KEY_AutogradOther && has_reg_in(m, opd_autogradother_backends()))
      return (expected_slot){"ambiguous_autogradother", NULL, k, 0};
    bool blocked = newest_at(m, CEA) || has_reg_in(m, opd_autograd_backend_keyset(k));
    if (!blocked) return from_reg(r, CIA);
  }
  if ((r = newest_at(m, OPD_KEY_Autograd)) && opd_alias_covers(OPD_KEY_Autograd, k))
    return from_reg(r, OPD_KEY_Autograd);
  if (m->global_ft[k]) return (expected_slot){"fallthrough", "global", k, m->global_ft[k]};
  for (size_t i = 0; i < sizeof default_fallthroughs / sizeof *default_fallthroughs; i++)
    if (default_fallthroughs[i] == k) return (expected_slot){"fallthrough", "global", k, -1};
  if (k == OPD_KEY_Tracer) return (expected_slot){"fallback", NULL, k, -1};
  return (expected_slot){"missing", NULL, k, 0};
}

/* 1.13 has kernel fallbacks at these keys that opd does not register (yet); their
 * entries are opd's choice, so the model does not judge them. */
static bool unjudged(opd_dispatch_key k) {
  static const opd_dispatch_key keys[] = {OPD_KEY_Python,
                                          OPD_KEY_FuncTorchDynamicLayerBackMode,
                                          OPD_KEY_Functionalize,
                                          OPD_KEY_Named,
                                          OPD_KEY_Conjugate,
                                          OPD_KEY_Negative,
                                          OPD_KEY_ZeroTensor,
                                          OPD_KEY_FuncTorchBatched,
                                          OPD_KEY_Batched,
                                          OPD_KEY_FuncTorchGradWrapper,
                                          OPD_KEY_PythonTLSSnapshot,
                                          OPD_KEY_FuncTorchDynamicLayerFrontMode,
                                          OPD_KEY_PythonDispatcher};
  for (size_t i = 0; i < sizeof keys / sizeof *keys; i++)
    if (keys[i] == k) return true;
  return false;
}

static void check_against_model(const opd_operator *op, const model *m, int step) {
  ck_assert_msg(opd_op_count_stale_slots(op) == 0, "step %d: stale slots", step);
  expected_slot slots[OPD_NUM_RUNTIME_SLOTS];
  for (unsigned s = 0; s < OPD_NUM_RUNTIME_SLOTS; s++) {
    opd_dispatch_key k = opd_slot_key(s);
    expected_slot e = slots[s] = model_slot(m, k);
    if (unjudged(k)) continue;
    json_t *j = opd_op_slot_json(op, k);
    ck_assert_ptr_nonnull(j);
    const char *source = jstr(j, "source");
    json_t *reg = json_object_get(j, "registration");
    opd_reg_id have = reg ? (opd_reg_id)json_integer_value(reg) : 0;
    bool ok = source && strcmp(source, e.source) == 0 && (e.reg < 0 || have == e.reg);
    if (ok && e.scope) ok = jstr(j, "scope") && strcmp(jstr(j, "scope"), e.scope) == 0;
    if (ok && e.scope && strcmp(e.scope, "op") == 0)
      ok = jstr(j, "via") && strcmp(jstr(j, "via"), opd_key_name(e.via)) == 0;
    if (!ok) {
      char *text = json_dumps(j, JSON_COMPACT | JSON_SORT_KEYS);
      ck_abort_msg("step %d: %s is %s, model says source %s scope %s via %s reg %lld", step,
                   opd_key_name(k), text, e.source, e.scope ? e.scope : "-", opd_key_name(e.via),
                   (long long)e.reg);
    }
    json_decref(j);
  }
  /* the fallthrough masks, seen through the call key set of one tensor of each backend
   * under the default TLS (FORMAT.md section 6, steps 1 to 4) */
  const opd_dispatch_key tensors[] = {OPD_KEY_CPU,       OPD_KEY_CUDA,         OPD_KEY_Meta,
                                      OPD_KEY_SparseCPU, OPD_KEY_SparseCsrCPU, OPD_KEY_XLA};
  for (size_t t = 0; t < sizeof tensors / sizeof *tensors; t++) {
    opd_keyset args = opd_tensor_keyset_for(tensors[t]);
    opd_local_dispatch_state tls = opd_tls_get();
    opd_keyset s = opd_keyset_minus(opd_keyset_union(args, tls.included), tls.excluded);
    opd_backend b = opd_keyset_highest_backend(args);
    if (b == OPD_NUM_BACKENDS) b = OPD_BACKEND_CPU;
    uint64_t want = s.repr;
    for (int f = 1; f <= OPD_NUM_FUNCTIONALITIES; f++) {
      uint64_t bit = OPD_FUNCTIONALITY_BIT(f);
      if (!(s.repr & bit)) continue;
      opd_dispatch_key k = opd_key_kind_of((opd_dispatch_key)f) == OPD_KEY_KIND_PER_BACKEND
                               ? opd_key_for_backend((opd_dispatch_key)f, b)
                               : (opd_dispatch_key)f;
      if (strcmp(slots[opd_key_slot(k)].source, "fallthrough") == 0) want &= ~bit;
    }
    opd_keyset got = opd_call_keyset(op, args);
    ck_assert_msg(got.repr == want, "step %d: call key set of a %s tensor", step,
                  opd_key_name(tensors[t]));
  }
}

START_TEST(test_property_incremental_equals_model) {
  static const opd_dispatch_key pool[] = {OPD_KEY_CPU,
                                          OPD_KEY_CUDA,
                                          OPD_KEY_Meta,
                                          OPD_KEY_XLA,
                                          OPD_KEY_HIP,
                                          OPD_KEY_SparseCPU,
                                          OPD_KEY_SparseMeta,
                                          OPD_KEY_QuantizedCPU,
                                          OPD_KEY_MkldnnCPU,
                                          OPD_KEY_SparseCsrCPU,
                                          OPD_KEY_NestedTensorCPU,
                                          OPD_KEY_AutogradCPU,
                                          OPD_KEY_AutogradCUDA,
                                          OPD_KEY_AutogradMeta,
                                          OPD_KEY_AutogradOther,
                                          OPD_KEY_AutogradNestedTensor,
                                          OPD_KEY_AutogradXLA,
                                          OPD_KEY_BackendSelect,
                                          OPD_KEY_ADInplaceOrView,
                                          OPD_KEY_Tracer,
                                          OPD_KEY_AutocastCPU,
                                          OPD_KEY_Autograd,
                                          CIA,
                                          CEA,
                                          CEANF,
                                          CIA,
                                          CEA,
                                          OPD_KEY_Autograd};
  static const opd_dispatch_key globals[] = {OPD_KEY_CPU, OPD_KEY_CUDA, OPD_KEY_Meta};
  static model m;
  memset(&m, 0, sizeof m);
  const int steps = 600;
  int counts[4] = {0};

  def("t_reg_prop", "op(Tensor a) -> Tensor");
  const opd_operator *op = find("t_reg_prop::op");
  check_against_model(op, &m, -1);
  rng_state = UINT64_C(0x2545F4914F6CDD1D);
  for (int step = 0; step < steps; step++) {
    unsigned r = (unsigned)(rng_next() % 100);
    if (r < 40 || (r < 90 && m.n == 0)) {
      opd_dispatch_key k = pool[rng_next() % (sizeof pool / sizeof *pool)];
      bool ft = r >= 25 && r < 40;
      opd_reg_id id = ft ? fallthrough("t_reg_prop::op", k) : impl("t_reg_prop::op", k, "prop");
      ck_assert_int_lt(m.n, MAX_TRACKED);
      m.regs[m.n++] = (model_reg){id, k, ft};
      counts[ft]++;
    } else if (r < 90) {
      int i = (int)(rng_next() % (uint64_t)m.n);
      deregister_tracked(m.regs[i].id);
      memmove(&m.regs[i], &m.regs[i + 1], (size_t)(m.n - i - 1) * sizeof *m.regs);
      m.n--;
      counts[2]++;
    } else {
      opd_dispatch_key g = globals[rng_next() % 3];
      if (m.global_ft[g]) {
        deregister_tracked(m.global_ft[g]);
        m.global_ft[g] = 0;
      } else {
        m.global_ft[g] = TRACK(opd_fallback_fallthrough(g, OPD_HERE));
      }
      counts[3]++;
    }
    check_against_model(op, &m, step);
  }
  /* every kind of step happened often */
  for (int i = 0; i < 4; i++) ck_assert_int_gt(counts[i], 20);
  deregister_all();
  memset(&m, 0, sizeof m);
  /* the def is gone too, but the table is back to the empty operator's */
  check_against_model(op, &m, steps);
}
END_TEST

/* ---- introspection ---- */

START_TEST(test_op_json) {
  opd_reg_id cpu = impl("t_reg_json::op", OPD_KEY_CPU, "json_cpu");
  const opd_operator *op = find("t_reg_json::op");
  json_t *j = opd_op_json(op);
  ck_assert_ptr_nonnull(j);
  ck_assert_str_eq(jstr(j, "name"), "t_reg_json::op");
  ck_assert(json_is_null(json_object_get(j, "schema"))); /* not defined yet */
  json_decref(j);

  opd_reg_id d = def("t_reg_json", "op(Tensor a, *, Scalar alpha=1) -> Tensor");
  opd_reg_id ft = fallthrough("t_reg_json::op", OPD_KEY_AutogradCPU);
  opd_kernel unboxed = OPD_UNBOXED_KERNEL(unboxed_ts, Tensor, Tensor, Scalar);
  opd_reg_id ub = TRACK(opd_impl("t_reg_json::op", OPD_KEY_Meta, &unboxed, OPD_HERE));
  j = opd_op_json(op);
  ck_assert_str_eq(jstr(j, "name"), "t_reg_json::op");
  ck_assert_str_eq(jstr(j, "schema"), "t_reg_json::op(Tensor a, *, Scalar alpha=1) -> Tensor");

  json_t *regs = json_object_get(j, "registrations");
  ck_assert(json_is_array(regs));
  ck_assert_uint_eq(json_array_size(regs), 4);
  int seen = 0;
  size_t i;
  json_t *r;
  json_array_foreach(regs, i, r) {
    opd_reg_id id = (opd_reg_id)json_integer_value(json_object_get(r, "id"));
    const char *kind = jstr(r, "kind");
    ck_assert_ptr_nonnull(kind);
    ck_assert_ptr_nonnull(json_object_get(r, "provenance"));
    json_t *prov = json_object_get(r, "provenance");
    ck_assert_str_eq(jstr(prov, "origin"), "builtin");
    ck_assert_ptr_nonnull(strstr(jstr(prov, "file"), "test_registry.c"));
    ck_assert_int_gt(json_integer_value(json_object_get(prov, "line")), 0);
    if (id == d) {
      ck_assert_str_eq(kind, "def");
      seen |= 1;
    } else if (id == cpu) {
      ck_assert_str_eq(kind, "impl");
      ck_assert_str_eq(jstr(r, "key"), "CPU");
      ck_assert_str_eq(jstr(r, "kernel"), "json_cpu");
      ck_assert(json_is_false(json_object_get(r, "unboxed")));
      seen |= 2;
    } else if (id == ft) {
      ck_assert_str_eq(kind, "fallthrough");
      ck_assert_str_eq(jstr(r, "key"), "AutogradCPU");
      seen |= 4;
    } else if (id == ub) {
      ck_assert_str_eq(kind, "impl");
      ck_assert_str_eq(jstr(r, "key"), "Meta");
      ck_assert_str_eq(jstr(r, "kernel"), "unboxed_ts");
      ck_assert(json_is_true(json_object_get(r, "unboxed")));
      seen |= 8;
    }
  }
  ck_assert_int_eq(seen, 15);

  /* the table has an entry for every runtime key */
  json_t *table = json_object_get(j, "table");
  ck_assert(json_is_object(table));
  ck_assert_uint_eq(json_object_size(table), OPD_NUM_RUNTIME_SLOTS);
  for (int k = 0; k < OPD_NUM_KEYS; k++) {
    if (!opd_key_is_runtime((opd_dispatch_key)k)) continue;
    json_t *slot = json_object_get(table, opd_key_name((opd_dispatch_key)k));
    ck_assert_msg(slot != NULL, "no table entry for %s", opd_key_name((opd_dispatch_key)k));
    ck_assert_ptr_nonnull(jstr(slot, "source"));
    json_t *one = opd_op_slot_json(op, (opd_dispatch_key)k);
    ck_assert(json_equal(slot, one));
    json_decref(one);
  }
  ck_assert_str_eq(jstr(json_object_get(table, "CPU"), "source"), "CPU");
  ck_assert_str_eq(jstr(json_object_get(table, "CPU"), "kernel"), "json_cpu");
  ck_assert_str_eq(jstr(json_object_get(table, "AutogradCPU"), "via"), "AutogradCPU");
  ck_assert_str_eq(jstr(json_object_get(table, "CUDA"), "source"), "missing");
  json_decref(j);

  /* not runtime keys */
  ck_assert_ptr_null(opd_op_slot_json(op, CIA));
  ck_assert_ptr_null(opd_op_slot_json(op, OPD_KEY_Dense));
  ck_assert_int_eq(opd_op_slot_registration(op, CIA), 0);
  deregister_all();
}
END_TEST

START_TEST(test_dump_table) {
  def("t_reg_dump", "op(Tensor a) -> Tensor");
  const opd_operator *op = find("t_reg_dump::op");
  impl("t_reg_dump::op", OPD_KEY_CPU, "dump_cpu");
  char *text = opd_op_dump_table(op);
  ck_assert_ptr_nonnull(text);
  ck_assert_ptr_nonnull(strstr(text, "t_reg_dump::op"));
  ck_assert_ptr_nonnull(strstr(text, "\nCPU: dump_cpu [kernel]\n"));
  ck_assert_ptr_null(strstr(text, "\nMeta:")); /* missing entries are not listed */
  ck_assert_ptr_null(strstr(text, "\nCUDA:"));
  ck_assert_ptr_nonnull(strstr(text, "\nAutogradCPU: ")); /* its fallthrough fallback */
  free(text);

  impl("t_reg_dump::op", CIA, "dump_math");
  impl("t_reg_dump::op", OPD_KEY_SparseCPU, "dump_sparse");
  text = opd_op_dump_table(op);
  ck_assert_ptr_nonnull(strstr(text, "\nCPU: dump_cpu [kernel]\n"));
  ck_assert_ptr_nonnull(strstr(text, "\nMeta: dump_math [math kernel]\n"));
  ck_assert_ptr_nonnull(strstr(text, "\nAutogradMeta: dump_math [math kernel]\n"));
  ck_assert_ptr_nonnull(strstr(text, "[ambiguous autogradother]"));
  free(text);

  def("t_reg_dump", "op2(Tensor a) -> Tensor");
  const opd_operator *op2 = find("t_reg_dump::op2");
  impl("t_reg_dump::op2", CEA, "dump_cea");
  impl("t_reg_dump::op2", OPD_KEY_Autograd, "dump_autograd");
  text = opd_op_dump_table(op2);
  ck_assert_ptr_nonnull(strstr(text, "\nCPU: dump_cea [default backend kernel]\n"));
  ck_assert_ptr_nonnull(strstr(text, "\nAutogradMeta: dump_autograd [autograd kernel]\n"));
  free(text);
  deregister_all();
}
END_TEST

static void collect_names(const opd_operator *op, void *arg) {
  json_t *names = arg;
  json_array_append_new(names, json_string(opd_op_name(op)));
}

START_TEST(test_for_each_op_in_name_order) {
  def("t_reg_each", "c(Tensor a) -> Tensor");
  def("t_reg_each", "a(Tensor a) -> Tensor");
  opd_reg_id b = def("t_reg_each", "b(Tensor a) -> Tensor");
  def("t_reg_each", "a.overload(Tensor a) -> Tensor");
  impl("t_reg_each::d", OPD_KEY_CPU, "each_d"); /* kernels but no def: visited too */

  json_t *names = json_array();
  opd_for_each_op(collect_names, names);
  const char *want[] = {"t_reg_each::a", "t_reg_each::a.overload", "t_reg_each::b", "t_reg_each::c",
                        "t_reg_each::d"};
  size_t got = 0, i;
  json_t *v;
  const char *prev = NULL;
  json_array_foreach(names, i, v) {
    const char *name = json_string_value(v);
    if (prev) ck_assert_msg(strcmp(prev, name) < 0, "%s before %s", prev, name);
    prev = name;
    if (strncmp(name, "t_reg_each::", 12) != 0) continue;
    ck_assert_uint_lt(got, 5);
    ck_assert_str_eq(name, want[got]);
    got++;
  }
  ck_assert_uint_eq(got, 5);
  json_decref(names);

  /* an operator with nothing registered any more is not visited */
  deregister_tracked(b);
  names = json_array();
  opd_for_each_op(collect_names, names);
  json_array_foreach(names, i, v) ck_assert_str_ne(json_string_value(v), "t_reg_each::b");
  json_decref(names);
  deregister_all();
}
END_TEST

/* [Note: The last operator found]: a thread answers the name it found last from its own
 * copy; every other name (a longer one that the copy is a prefix of, one too long to keep,
 * one that names nothing) still finds its own entry, the one the map holds, or none. */
START_TEST(test_find_op_last_found) {
  char long_op[160], long_schema[200];
  memset(long_op, 0, sizeof long_op);
  strcpy(long_op, "t_reg_last::");
  memset(long_op + strlen(long_op), 'l', 120);
  snprintf(long_schema, sizeof long_schema, "%s(Tensor x) -> Tensor", long_op);
  def("t_reg_last", "a(Tensor x) -> Tensor");
  def("t_reg_last", "ab(Tensor x) -> Tensor");
  def("t_reg_last", "b(Tensor x) -> Tensor");
  def(NULL, long_schema);
  const struct {
    const char *name;
    bool defined;
  } order[] = {{"t_reg_last::a", true},   {"t_reg_last::a", true}, {"t_reg_last::ab", true},
               {"t_reg_last::a", true},   {"t_reg_last::b", true}, {"t_reg_last::c", false},
               {"t_reg_last::b", true},   {long_op, true},         {long_op, true},
               {"t_reg_last::ab", true},  {"t_reg_last::", false}, {"t_reg_last::a", true},
               {"t_reg_last::aB", false}, {"t_reg_last::a", true}};
  for (size_t i = 0; i < sizeof order / sizeof *order; i++) {
    const opd_operator *want = opd_find_schema(order[i].name); /* the map itself */
    ck_assert_int_eq(want != NULL, order[i].defined);
    ck_assert_msg(opd_find_op(order[i].name) == want, "lookup %zu (%.40s) found another entry", i,
                  order[i].name);
  }
  deregister_all();
}
END_TEST

Suite *opd_test_registry_suite(void) {
  Suite *s = suite_create("registry");
  TCase *tc = tcase_create("registration");
  tcase_add_test(tc, test_def_rules);
  tcase_add_test(tc, test_find_op_last_found);
  tcase_add_test(tc, test_bad_schema);
  tcase_add_test(tc, test_impl_before_def);
  tcase_add_test(tc, test_impl_without_key_is_cia);
  tcase_add_test(tc, test_override_and_restore);
  tcase_add_test(tc, test_invalid_keys_and_kernels);
  tcase_add_test(tc, test_deregister_unknown);
  tcase_add_test(tc, test_ids_unique);
  tcase_add_test(tc, test_unboxed_signature_checked);
  tcase_add_test(tc, test_fallback_rules);
  tcase_add_test(tc, test_default_fallbacks_match_oracle);
  suite_add_tcase(s, tc);

  tc = tcase_create("table_rules");
  tcase_add_test(tc, test_rule_direct);
  tcase_add_test(tc, test_rule_ceanf);
  tcase_add_test(tc, test_rule_cea_blocks_cia);
  tcase_add_test(tc, test_rule_cia);
  tcase_add_test(tc, test_rule_ambiguous_autogradother);
  tcase_add_test(tc, test_rule_cia_blocked_by_backend);
  tcase_add_test(tc, test_rule_autograd_alias);
  tcase_add_test(tc, test_rule_backend_fallback_and_missing);
  tcase_add_test(tc, test_rule_alias_fallthrough);
  suite_add_tcase(s, tc);

  tc = tcase_create("property");
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, test_property_incremental_equals_model);
  suite_add_tcase(s, tc);

  tc = tcase_create("introspection");
  tcase_add_test(tc, test_op_json);
  tcase_add_test(tc, test_dump_table);
  tcase_add_test(tc, test_for_each_op_in_name_order);
  suite_add_tcase(s, tc);
  return s;
}

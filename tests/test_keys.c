/* test_keys.c: tests of the key universe and key sets (dispatch_key.c, keyset.c), tensors'
 * key sets (tensor.c), the thread-local dispatch state, IValues and the stack (ivalue.c),
 * and error names and messages (error.c).
 *
 * Expectations come from PyTorch 1.13's c10 (names, values, priority order, the
 * cross-product key set of tests/fixtures/oracle/FORMAT.md section 2), written out here by hand
 * or read from the oracle fixture recorded from real PyTorch (key_enum, alias_sets,
 * autograd_backend_keys, tensor_keysets, default_tls, priority cases).
 */
#include <check.h>
#include <jansson.h>
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "opd/dispatch_key.h"
#include "opd/dispatcher.h"
#include "opd/error.h"
#include "opd/ivalue.h"
#include "opd/keyset.h"
#include "opd/tensor.h"
#include "test_files.h"

Suite *opd_test_keys_suite(void);

/* ---- c10 1.13's key universe, written out independently of dispatch_key.h ---- */

/* Functionality keys, lowest priority first: value i + 1. */
static const char *const c10_functionalities[40] = {
    "Dense",
    "FPGA",
    "ORT",
    "Vulkan",
    "Metal",
    "Quantized",
    "CustomRNGKeyId",
    "MkldnnCPU",
    "Sparse",
    "SparseCsrCPU",
    "SparseCsrCUDA",
    "NestedTensor",
    "BackendSelect",
    "Python",
    "Fake",
    "FuncTorchDynamicLayerBackMode",
    "Functionalize",
    "Named",
    "Conjugate",
    "Negative",
    "ZeroTensor",
    "ADInplaceOrView",
    "AutogradOther",
    "AutogradFunctionality",
    "AutogradNestedTensor",
    "Tracer",
    "AutocastCPU",
    "AutocastXPU",
    "AutocastCUDA",
    "FuncTorchBatched",
    "FuncTorchVmapMode",
    "Batched",
    "VmapMode",
    "FuncTorchGradWrapper",
    "DeferredInit",
    "PythonTLSSnapshot",
    "FuncTorchDynamicLayerFrontMode",
    "TESTING_ONLY_GenericWrapper",
    "TESTING_ONLY_GenericMode",
    "PythonDispatcher",
};
static const char *const c10_backends[14] = {
    "CPU", "CUDA", "HIP",  "XLA",  "MPS",         "IPU",         "XPU",
    "HPU", "VE",   "Lazy", "Meta", "PrivateUse1", "PrivateUse2", "PrivateUse3"};
/* Per-backend functionalities: runtime-key prefix and functionality value. Block j of
 * runtime keys starts at 42 + 15 j with a placeholder, then one key per backend. */
static const struct {
  const char *prefix;
  int functionality;
} c10_per_backend[5] = {
    {"", 1}, {"Quantized", 6}, {"Sparse", 9}, {"NestedTensor", 12}, {"Autograd", 24}};
static const struct {
  const char *name;
  int value;
} c10_aliases[4] = {{"Autograd", 117},
                    {"CompositeImplicitAutograd", 118},
                    {"CompositeExplicitAutograd", 120},
                    {"CompositeExplicitAutogradNonFunctional", 121}};

static int per_backend_block(int functionality) {
  for (int j = 0; j < 5; j++)
    if (c10_per_backend[j].functionality == functionality) return j;
  return -1;
}
static int c10_runtime_value(int block, int backend) {
  return 42 + 15 * block + 1 + backend;
}

/* The runtime keys of c10 1.13: Undefined, the 35 functionalities that are not
 * per-backend, the 70 per-backend runtime keys. */
static int c10_runtime_keys(opd_dispatch_key *out) {
  int n = 0;
  out[n++] = OPD_KEY_Undefined;
  for (int f = 1; f <= 40; f++)
    if (per_backend_block(f) < 0) out[n++] = (opd_dispatch_key)f;
  for (int j = 0; j < 5; j++)
    for (int b = 0; b < 14; b++) out[n++] = (opd_dispatch_key)c10_runtime_value(j, b);
  return n;
}

/* Decomposes a c10 runtime key value into (functionality value, backend or -1). */
static void c10_decompose(int v, int *functionality, int *backend) {
  if (v >= 43 && v <= 116) {
    int j = (v - 42) / 15, b = (v - 42) % 15 - 1;
    *functionality = c10_per_backend[j].functionality;
    *backend = b;
  } else {
    *functionality = v;
    *backend = -1;
  }
}

/* ---- helpers ---- */

static opd_keyset ks_from(const opd_dispatch_key *keys, size_t n) {
  opd_keyset s = opd_keyset_empty();
  for (size_t i = 0; i < n; i++) s = opd_keyset_union(s, opd_keyset_of(keys[i]));
  return s;
}
#define KS(...)                                    \
  ks_from((const opd_dispatch_key[]){__VA_ARGS__}, \
          sizeof((const opd_dispatch_key[]){__VA_ARGS__}) / sizeof(opd_dispatch_key))

static opd_dispatch_key key_named(const char *name) {
  opd_dispatch_key k = OPD_KEY_Undefined;
  ck_assert_msg(opd_key_from_name(name, &k) == 0, "unknown key name %s", name);
  return k;
}

/* The listing of s, as opd_keyset_format writes it. */
static const char *listing(opd_keyset s) {
  static char buf[2048];
  int n = opd_keyset_format(s, buf, sizeof buf);
  ck_assert_int_eq(n, (int)strlen(buf));
  return buf;
}

/* The same listing built by iteration. */
static void listing_by_iter(opd_keyset s, char *buf, size_t len) {
  opd_keyset_iter it = opd_keyset_iter_begin(s);
  opd_dispatch_key k;
  size_t used = 0;
  buf[0] = '\0';
  while (opd_keyset_iter_next(&it, &k)) {
    ck_assert_ptr_nonnull(opd_key_name(k));
    used += (size_t)snprintf(buf + used, len - used, "%s%s", used ? ", " : "", opd_key_name(k));
    ck_assert_uint_lt(used, len);
  }
}

static json_t *load_oracle(void) {
  return opd_test_load_shared("oracle/public.json");
}

/* The union (or for minus, the difference) of a JSON array of key names. */
static opd_keyset ks_of_names(json_t *names) {
  opd_keyset s = opd_keyset_empty();
  size_t i;
  json_t *v;
  ck_assert(json_is_array(names));
  json_array_foreach(names, i, v) {
    s = opd_keyset_union(s, opd_keyset_of(key_named(json_string_value(v))));
  }
  return s;
}

/* "A, B, C" from a JSON array of names. */
static void join_names(json_t *names, char *buf, size_t len) {
  size_t used = 0, i;
  json_t *v;
  buf[0] = '\0';
  json_array_foreach(names, i, v) {
    used +=
        (size_t)snprintf(buf + used, len - used, "%s%s", used ? ", " : "", json_string_value(v));
  }
}

/* A fixed-seed PRNG (xorshift64*). */
static uint64_t rng_state;
static uint64_t rng_next(void) {
  rng_state ^= rng_state >> 12;
  rng_state ^= rng_state << 25;
  rng_state ^= rng_state >> 27;
  return rng_state * UINT64_C(2685821657736338717);
}

/* ---- key universe ---- */

START_TEST(test_key_values) {
  ck_assert_int_eq(OPD_KEY_Undefined, 0);
  ck_assert_int_eq(OPD_KEY_Dense, 1);
  ck_assert_int_eq(OPD_KEY_BackendSelect, 13);
  ck_assert_int_eq(OPD_KEY_AutogradOther, 23);
  ck_assert_int_eq(OPD_KEY_AutogradFunctionality, 24);
  ck_assert_int_eq(OPD_KEY_Tracer, 26);
  ck_assert_int_eq(OPD_KEY_PythonDispatcher, 40);
  ck_assert_int_eq(OPD_KEY_CPU, 43);
  ck_assert_int_eq(OPD_KEY_Meta, 53);
  ck_assert_int_eq(OPD_KEY_QuantizedCPU, 58);
  ck_assert_int_eq(OPD_KEY_SparseCPU, 73);
  ck_assert_int_eq(OPD_KEY_NestedTensorCPU, 88);
  ck_assert_int_eq(OPD_KEY_AutogradCPU, 103);
  ck_assert_int_eq(OPD_KEY_AutogradMeta, 113);
  ck_assert_int_eq(OPD_KEY_AutogradPrivateUse3, 116);
  ck_assert_int_eq(OPD_KEY_Autograd, 117);
  ck_assert_int_eq(OPD_KEY_CompositeImplicitAutograd, 118);
  ck_assert_int_eq(OPD_KEY_CompositeExplicitAutograd, 120);
  ck_assert_int_eq(OPD_KEY_CompositeExplicitAutogradNonFunctional, 121);
  ck_assert_int_eq(OPD_NUM_BACKENDS, 14);
  ck_assert_int_eq(OPD_NUM_FUNCTIONALITIES, 40);
  ck_assert_int_eq(OPD_NUM_RUNTIME_SLOTS, 1 + 35 + 5 * 14);
  ck_assert_int_eq(OPD_BACKEND_CPU, 0);
  ck_assert_int_eq(OPD_BACKEND_Meta, 10);
  ck_assert_int_eq(OPD_BACKEND_PrivateUse3, 13);
}
END_TEST

START_TEST(test_key_names_round_trip) {
  int named = 0;
  /* every c10 name maps to its c10 value and back */
  for (int f = 0; f < 40; f++) {
    ck_assert_str_eq(opd_key_name((opd_dispatch_key)(f + 1)), c10_functionalities[f]);
    ck_assert_int_eq(key_named(c10_functionalities[f]), f + 1);
  }
  for (int j = 0; j < 5; j++) {
    for (int b = 0; b < 14; b++) {
      char name[64];
      snprintf(name, sizeof name, "%s%s", c10_per_backend[j].prefix, c10_backends[b]);
      int v = c10_runtime_value(j, b);
      ck_assert_ptr_nonnull(opd_key_name((opd_dispatch_key)v));
      ck_assert_str_eq(opd_key_name((opd_dispatch_key)v), name);
      ck_assert_int_eq(key_named(name), v);
    }
  }
  for (int a = 0; a < 4; a++) {
    ck_assert_str_eq(opd_key_name((opd_dispatch_key)c10_aliases[a].value), c10_aliases[a].name);
    ck_assert_int_eq(key_named(c10_aliases[a].name), c10_aliases[a].value);
  }
  ck_assert_str_eq(opd_key_name(OPD_KEY_Undefined), "Undefined");
  ck_assert_int_eq(key_named("Undefined"), OPD_KEY_Undefined);

  /* every named value round-trips, and there are exactly c10's 115 */
  for (int k = 0; k < OPD_NUM_KEYS; k++) {
    const char *name = opd_key_name((opd_dispatch_key)k);
    if (!name) continue;
    named++;
    opd_dispatch_key back = (opd_dispatch_key)-7;
    ck_assert_int_eq(opd_key_from_name(name, &back), 0);
    ck_assert_int_eq(back, k);
  }
  ck_assert_int_eq(named, 1 + 40 + 70 + 4);

  /* placeholders, gaps and out-of-range values are not keys */
  const int not_keys[] = {41, 42, 57, 72, 87, 102, 119, OPD_NUM_KEYS, 200, -1};
  for (size_t i = 0; i < sizeof not_keys / sizeof *not_keys; i++)
    ck_assert_ptr_null(opd_key_name((opd_dispatch_key)not_keys[i]));

  /* unknown names */
  opd_dispatch_key out = OPD_KEY_Tracer;
  ck_assert_int_eq(opd_key_from_name("NoSuchKey", &out), OPD_ENOENT);
  ck_assert_int_eq(opd_last_error_code(), OPD_ENOENT);
  ck_assert_ptr_nonnull(strstr(opd_last_error(), "NoSuchKey"));
  ck_assert_int_eq(opd_key_from_name("cpu", &out), OPD_ENOENT);
  ck_assert_int_eq(opd_key_from_name("", &out), OPD_ENOENT);
  ck_assert_int_eq(out, OPD_KEY_Tracer); /* untouched on failure */

  /* backend components */
  for (int b = 0; b < 14; b++) {
    ck_assert_str_eq(opd_backend_name((opd_backend)b), c10_backends[b]);
    opd_backend ob = OPD_NUM_BACKENDS;
    ck_assert_int_eq(opd_backend_from_name(c10_backends[b], &ob), 0);
    ck_assert_int_eq(ob, b);
  }
  ck_assert_ptr_null(opd_backend_name(OPD_NUM_BACKENDS));
  opd_backend ob;
  ck_assert_int_eq(opd_backend_from_name("AutogradCPU", &ob), OPD_ENOENT);
}
END_TEST

START_TEST(test_key_values_match_oracle) {
  json_t *root = load_oracle();
  json_t *enums = json_object_get(root, "key_enum");
  ck_assert(json_is_object(enums));
  const char *name;
  json_t *value;
  int checked = 0;
  json_object_foreach(enums, name, value) {
    int v = (int)json_integer_value(value);
    opd_dispatch_key k;
    if (opd_key_from_name(name, &k) == 0) {
      ck_assert_msg((int)k == v, "%s: opd %d, c10 %d", name, (int)k, v);
      checked++;
    } else {
      /* names opd lacks: c10's placeholders and the nested-tensor composite alias */
      ck_assert_msg(strstr(name, "Unknown") ||
                        strcmp(name, "CompositeImplicitAutogradNestedTensor") == 0,
                    "opd lacks key %s", name);
      ck_assert_ptr_null(opd_key_name((opd_dispatch_key)v));
    }
  }
  ck_assert_int_eq(checked, 115);
  json_decref(root);
}
END_TEST

START_TEST(test_key_kinds) {
  ck_assert_int_eq(opd_key_kind_of(OPD_KEY_Undefined), OPD_KEY_KIND_UNDEFINED);
  int counts[OPD_KEY_KIND_INVALID + 1] = {0};
  for (int f = 1; f <= 40; f++) {
    opd_key_kind want =
        per_backend_block(f) >= 0 ? OPD_KEY_KIND_PER_BACKEND : OPD_KEY_KIND_FUNCTIONALITY;
    ck_assert_int_eq(opd_key_kind_of((opd_dispatch_key)f), want);
  }
  for (int j = 0; j < 5; j++) {
    ck_assert_int_eq(opd_key_kind_of((opd_dispatch_key)(42 + 15 * j)), OPD_KEY_KIND_INVALID);
    for (int b = 0; b < 14; b++)
      ck_assert_int_eq(opd_key_kind_of((opd_dispatch_key)c10_runtime_value(j, b)),
                       OPD_KEY_KIND_RUNTIME_BACKEND);
  }
  for (int a = 0; a < 4; a++)
    ck_assert_int_eq(opd_key_kind_of((opd_dispatch_key)c10_aliases[a].value), OPD_KEY_KIND_ALIAS);
  ck_assert_int_eq(opd_key_kind_of((opd_dispatch_key)41), OPD_KEY_KIND_INVALID);
  ck_assert_int_eq(opd_key_kind_of((opd_dispatch_key)119), OPD_KEY_KIND_INVALID);
  ck_assert_int_eq(opd_key_kind_of((opd_dispatch_key)OPD_NUM_KEYS), OPD_KEY_KIND_INVALID);
  ck_assert_int_eq(opd_key_kind_of((opd_dispatch_key)-1), OPD_KEY_KIND_INVALID);
  ck_assert_int_eq(opd_key_kind_of((opd_dispatch_key)1000), OPD_KEY_KIND_INVALID);

  for (int k = 0; k < OPD_NUM_KEYS; k++) counts[opd_key_kind_of((opd_dispatch_key)k)]++;
  ck_assert_int_eq(counts[OPD_KEY_KIND_UNDEFINED], 1);
  ck_assert_int_eq(counts[OPD_KEY_KIND_FUNCTIONALITY], 35);
  ck_assert_int_eq(counts[OPD_KEY_KIND_PER_BACKEND], 5);
  ck_assert_int_eq(counts[OPD_KEY_KIND_RUNTIME_BACKEND], 70);
  ck_assert_int_eq(counts[OPD_KEY_KIND_ALIAS], 4);

  /* runtime and alias predicates agree with c10's list */
  opd_dispatch_key runtime[128];
  int n = c10_runtime_keys(runtime);
  ck_assert_int_eq(n, OPD_NUM_RUNTIME_SLOTS);
  bool is_runtime[OPD_NUM_KEYS] = {false};
  for (int i = 0; i < n; i++) is_runtime[runtime[i]] = true;
  for (int k = 0; k < OPD_NUM_KEYS; k++) {
    ck_assert_msg(opd_key_is_runtime((opd_dispatch_key)k) == is_runtime[k], "key %d", k);
    bool alias = k == 117 || k == 118 || k == 120 || k == 121;
    ck_assert_msg(opd_key_is_alias((opd_dispatch_key)k) == alias, "key %d", k);
  }
  ck_assert(!opd_key_is_runtime(OPD_KEY_Dense));
  ck_assert(!opd_key_is_runtime(OPD_KEY_AutogradFunctionality));
  ck_assert(!opd_key_is_runtime((opd_dispatch_key)-1));
  ck_assert(!opd_key_is_alias((opd_dispatch_key)-1));
}
END_TEST

START_TEST(test_key_decomposition) {
  for (int j = 0; j < 5; j++) {
    opd_dispatch_key f = (opd_dispatch_key)c10_per_backend[j].functionality;
    for (int b = 0; b < 14; b++) {
      opd_dispatch_key k = opd_key_for_backend(f, (opd_backend)b);
      ck_assert_int_eq(k, c10_runtime_value(j, b));
      ck_assert_int_eq(opd_key_functionality(k), f);
      ck_assert_int_eq(opd_key_backend(k), b);
      /* the inverse */
      ck_assert_int_eq(opd_key_for_backend(opd_key_functionality(k), opd_key_backend(k)), k);
    }
  }
  ck_assert_int_eq(opd_key_for_backend(OPD_KEY_Dense, OPD_BACKEND_CUDA), OPD_KEY_CUDA);
  ck_assert_int_eq(opd_key_for_backend(OPD_KEY_AutogradFunctionality, OPD_BACKEND_Meta),
                   OPD_KEY_AutogradMeta);
  ck_assert_int_eq(opd_key_for_backend(OPD_KEY_Sparse, OPD_BACKEND_CPU), OPD_KEY_SparseCPU);
  ck_assert_int_eq(opd_key_for_backend(OPD_KEY_Tracer, OPD_BACKEND_CPU), OPD_KEY_Undefined);
  ck_assert_int_eq(opd_autograd_key_of_backend(OPD_BACKEND_CPU), OPD_KEY_AutogradCPU);
  ck_assert_int_eq(opd_autograd_key_of_backend(OPD_BACKEND_PrivateUse3),
                   OPD_KEY_AutogradPrivateUse3);

  /* functionality keys decompose to themselves and no backend */
  for (int f = 1; f <= 40; f++) {
    ck_assert_int_eq(opd_key_functionality((opd_dispatch_key)f), f);
    ck_assert_int_eq(opd_key_backend((opd_dispatch_key)f), OPD_NUM_BACKENDS);
  }
  ck_assert_int_eq(opd_key_functionality(OPD_KEY_Undefined), OPD_KEY_Undefined);
  ck_assert_int_eq(opd_key_backend(OPD_KEY_Undefined), OPD_NUM_BACKENDS);
  ck_assert_int_eq(opd_key_backend(OPD_KEY_Autograd), OPD_NUM_BACKENDS);
}
END_TEST

/* ---- key sets ---- */

START_TEST(test_keyset_bits) {
  /* a per-backend runtime key sets one functionality bit and one backend bit */
  opd_keyset cpu = opd_keyset_of(OPD_KEY_CPU);
  ck_assert_int_eq(__builtin_popcountll(cpu.repr), 2);
  ck_assert(opd_keyset_has_backend(cpu, OPD_BACKEND_CPU));
  ck_assert(!opd_keyset_has_backend(cpu, OPD_BACKEND_Meta));
  ck_assert_uint_eq(cpu.repr & OPD_BACKEND_BITS_MASK, UINT64_C(1) << OPD_BACKEND_CPU);
  ck_assert_uint_eq(cpu.repr & ~OPD_BACKEND_BITS_MASK, OPD_FUNCTIONALITY_BIT(OPD_KEY_Dense));
  /* other runtime keys one functionality bit only */
  opd_keyset tracer = opd_keyset_of(OPD_KEY_Tracer);
  ck_assert_int_eq(__builtin_popcountll(tracer.repr), 1);
  ck_assert_uint_eq(tracer.repr & OPD_BACKEND_BITS_MASK, 0);
  ck_assert_uint_eq(opd_keyset_of(OPD_KEY_MkldnnCPU).repr & OPD_BACKEND_BITS_MASK, 0);
  /* Undefined and aliases are empty */
  ck_assert(opd_keyset_is_empty(opd_keyset_of(OPD_KEY_Undefined)));
  ck_assert(opd_keyset_is_empty(opd_keyset_of(OPD_KEY_CompositeImplicitAutograd)));
  ck_assert(opd_keyset_is_empty(opd_keyset_empty()));
  /* the functionality bits follow priority order */
  for (int f = 1; f < 40; f++)
    ck_assert_uint_lt(opd_keyset_of((opd_dispatch_key)f).repr,
                      opd_keyset_of((opd_dispatch_key)(f + 1)).repr);
  /* a bare functionality key: its bit, no backend, has() of none of its runtime keys */
  opd_keyset dense = opd_keyset_of(OPD_KEY_Dense);
  ck_assert(opd_keyset_has(dense, OPD_KEY_Dense));
  ck_assert(!opd_keyset_has(dense, OPD_KEY_CPU));
  ck_assert(opd_keyset_has(cpu, OPD_KEY_Dense));
  ck_assert(opd_keyset_equal(opd_keyset_of_backend(OPD_BACKEND_Meta),
                             opd_keyset_from_repr(UINT64_C(1) << OPD_BACKEND_Meta)));
  ck_assert(opd_keyset_equal(
      opd_keyset_intersect(KS(OPD_KEY_CPU, OPD_KEY_Tracer), KS(OPD_KEY_Tracer, OPD_KEY_Named)),
      opd_keyset_of(OPD_KEY_Tracer)));
  /* intersection is bitwise too: {CPU} and {Meta} share Dense but no backend */
  opd_keyset shared = opd_keyset_intersect(KS(OPD_KEY_CPU), KS(OPD_KEY_Meta));
  ck_assert(opd_keyset_equal(shared, dense));
  ck_assert(!opd_keyset_has(shared, OPD_KEY_CPU));
  ck_assert(!opd_keyset_has(shared, OPD_KEY_Meta));
}
END_TEST

START_TEST(test_keyset_cross_product) {
  opd_keyset a = KS(OPD_KEY_CPU, OPD_KEY_AutogradCUDA);
  opd_keyset b = KS(OPD_KEY_CUDA, OPD_KEY_AutogradCPU);
  ck_assert(opd_keyset_equal(a, b));
  ck_assert(opd_keyset_has(a, OPD_KEY_CUDA));
  ck_assert(opd_keyset_has(a, OPD_KEY_AutogradCPU));
  ck_assert(opd_keyset_has(a, OPD_KEY_CPU));
  ck_assert(opd_keyset_has(a, OPD_KEY_AutogradCUDA));
  ck_assert(!opd_keyset_has(a, OPD_KEY_Meta));
  ck_assert(!opd_keyset_has(a, OPD_KEY_SparseCPU));
  ck_assert(!opd_keyset_has(a, OPD_KEY_AutogradMeta));
  ck_assert_str_eq(listing(a), "CPU, CUDA, AutogradCPU, AutogradCUDA");
  /* union is commutative and idempotent */
  ck_assert(opd_keyset_equal(opd_keyset_union(a, b), a));
  /* {NestedTensorHIP, HPU}: has NestedTensorHPU too */
  opd_keyset n = KS(OPD_KEY_NestedTensorHIP, OPD_KEY_HPU);
  ck_assert(opd_keyset_has(n, OPD_KEY_NestedTensorHPU));
  ck_assert(opd_keyset_has(n, OPD_KEY_HIP));
  ck_assert_str_eq(listing(n), "HIP, HPU, NestedTensorHIP, NestedTensorHPU");
}
END_TEST

START_TEST(test_keyset_minus) {
  /* {CPU, Meta} - {CPU}: Dense is gone, so neither key is left; backends stay */
  opd_keyset s = opd_keyset_minus(KS(OPD_KEY_CPU, OPD_KEY_Meta), KS(OPD_KEY_CPU));
  ck_assert_uint_eq(s.repr >> OPD_NUM_BACKENDS, 0);
  ck_assert(!opd_keyset_has(s, OPD_KEY_CPU));
  ck_assert(!opd_keyset_has(s, OPD_KEY_Meta));
  ck_assert(opd_keyset_has_backend(s, OPD_BACKEND_CPU));
  ck_assert(opd_keyset_has_backend(s, OPD_BACKEND_Meta));
  ck_assert_int_eq(opd_keyset_highest_key(s), OPD_KEY_Undefined);
  ck_assert_str_eq(listing(s), "");

  /* excluding AutogradCPU removes autograd for every backend */
  opd_keyset meta = KS(OPD_KEY_Meta, OPD_KEY_ADInplaceOrView, OPD_KEY_AutogradMeta);
  opd_keyset m = opd_keyset_minus(meta, KS(OPD_KEY_AutogradCPU));
  ck_assert(!opd_keyset_has(m, OPD_KEY_AutogradMeta));
  ck_assert(opd_keyset_has(m, OPD_KEY_Meta));
  ck_assert(opd_keyset_has(m, OPD_KEY_ADInplaceOrView));
  ck_assert_str_eq(listing(m), "Meta, ADInplaceOrView");
  ck_assert_int_eq(opd_keyset_highest_key(m), OPD_KEY_ADInplaceOrView);

  /* removing a key that is not there changes nothing; removing Undefined nothing either */
  ck_assert(opd_keyset_equal(opd_keyset_minus(meta, KS(OPD_KEY_Tracer)), meta));
  ck_assert(opd_keyset_equal(opd_keyset_minus(meta, opd_keyset_of(OPD_KEY_Undefined)), meta));
  /* removing a backend bit alone does nothing */
  ck_assert(
      opd_keyset_equal(opd_keyset_minus(meta, opd_keyset_of_backend(OPD_BACKEND_Meta)), meta));

  /* oracle p12: {AutocastCPU, CUDA, Meta, NestedTensorCPU, Python, AutocastCUDA} minus
   * {SparseMeta, Undefined, AutocastCPU} */
  opd_keyset p12 =
      opd_keyset_minus(KS(OPD_KEY_AutocastCPU, OPD_KEY_CUDA, OPD_KEY_Meta, OPD_KEY_NestedTensorCPU,
                          OPD_KEY_Python, OPD_KEY_AutocastCUDA),
                       KS(OPD_KEY_SparseMeta, OPD_KEY_Undefined, OPD_KEY_AutocastCPU));
  ck_assert_int_eq(opd_keyset_highest_key(p12), OPD_KEY_AutocastCUDA);
  ck_assert_str_eq(listing(p12), "CPU, CUDA, Meta, NestedTensorCPU, NestedTensorCUDA, "
                                 "NestedTensorMeta, Python, AutocastCUDA");
}
END_TEST

START_TEST(test_highest_key) {
  opd_dispatch_key runtime[128];
  int n = c10_runtime_keys(runtime);
  for (int i = 0; i < n; i++)
    ck_assert_int_eq(opd_keyset_highest_key(opd_keyset_of(runtime[i])), runtime[i]);

  ck_assert_int_eq(opd_keyset_highest_key(opd_keyset_empty()), OPD_KEY_Undefined);
  ck_assert_int_eq(opd_keyset_highest_key(opd_keyset_of_backend(OPD_BACKEND_Meta)),
                   OPD_KEY_Undefined);
  /* the highest functionality combined with the highest backend of the whole set */
  ck_assert_int_eq(opd_keyset_highest_key(KS(OPD_KEY_CPU, OPD_KEY_AutogradCUDA)),
                   OPD_KEY_AutogradCUDA);
  ck_assert_int_eq(opd_keyset_highest_key(KS(OPD_KEY_AutogradCPU, OPD_KEY_Meta)),
                   OPD_KEY_AutogradMeta);
  ck_assert_int_eq(opd_keyset_highest_key(KS(OPD_KEY_NestedTensorHIP, OPD_KEY_HPU)),
                   OPD_KEY_NestedTensorHPU);
  ck_assert_int_eq(opd_keyset_highest_key(KS(OPD_KEY_PrivateUse1, OPD_KEY_AutogradXLA,
                                             OPD_KEY_QuantizedPrivateUse1, OPD_KEY_QuantizedCPU,
                                             OPD_KEY_QuantizedMeta, OPD_KEY_NestedTensorXLA)),
                   OPD_KEY_AutogradPrivateUse1);
  ck_assert_int_eq(opd_keyset_highest_key(KS(OPD_KEY_QuantizedCPU, OPD_KEY_Meta)),
                   OPD_KEY_QuantizedMeta);
  ck_assert_int_eq(
      opd_keyset_highest_key(KS(OPD_KEY_AutogradCUDA, OPD_KEY_CPU, OPD_KEY_Named, OPD_KEY_Tracer,
                                OPD_KEY_AutogradOther, OPD_KEY_MkldnnCPU)),
      OPD_KEY_Tracer);
  ck_assert_int_eq(opd_keyset_highest_key(KS(OPD_KEY_AutogradOther, OPD_KEY_SparseCsrCPU)),
                   OPD_KEY_AutogradOther);
  ck_assert_int_eq(opd_keyset_highest_key(KS(OPD_KEY_AutogradNestedTensor, OPD_KEY_AutogradCPU)),
                   OPD_KEY_AutogradNestedTensor);
  /* a per-backend functionality without a backend: c10's placeholder value */
  ck_assert_int_eq(opd_keyset_highest_key(opd_keyset_of(OPD_KEY_Dense)), 42);
  ck_assert_int_eq(opd_keyset_highest_key(opd_keyset_of(OPD_KEY_AutogradFunctionality)), 102);

  ck_assert_int_eq(opd_keyset_highest_backend(KS(OPD_KEY_CPU, OPD_KEY_SparseMeta)),
                   OPD_BACKEND_Meta);
  ck_assert_int_eq(opd_keyset_highest_backend(KS(OPD_KEY_Tracer)), OPD_NUM_BACKENDS);
}
END_TEST

START_TEST(test_listing_order) {
  opd_keyset s = KS(OPD_KEY_AutogradCUDA, OPD_KEY_CPU, OPD_KEY_Named, OPD_KEY_Tracer,
                    OPD_KEY_AutogradOther, OPD_KEY_MkldnnCPU);
  const char *want =
      "CPU, CUDA, MkldnnCPU, Named, AutogradOther, AutogradCPU, AutogradCUDA, Tracer";
  ck_assert_str_eq(listing(s), want);
  char buf[512];
  listing_by_iter(s, buf, sizeof buf);
  ck_assert_str_eq(buf, want);

  /* snprintf-like truncation */
  char small[8];
  memset(small, 'x', sizeof small);
  ck_assert_int_eq(opd_keyset_format(s, small, sizeof small), (int)strlen(want));
  ck_assert_int_eq(small[7], '\0');
  ck_assert_int_eq(strncmp(small, want, 7), 0);
  ck_assert_int_eq(opd_keyset_format(s, NULL, 0), (int)strlen(want));
  char one[1] = {'x'};
  ck_assert_int_eq(opd_keyset_format(s, one, 1), (int)strlen(want));
  ck_assert_int_eq(one[0], '\0');
  ck_assert_int_eq(opd_keyset_format(opd_keyset_empty(), buf, sizeof buf), 0);
  ck_assert_str_eq(buf, "");

  /* iteration of an empty set yields nothing */
  opd_keyset_iter it = opd_keyset_iter_begin(opd_keyset_empty());
  opd_dispatch_key k;
  ck_assert(!opd_keyset_iter_next(&it, &k));
}
END_TEST

/* Every priority case PyTorch recorded: highest, listing and has(). */
START_TEST(test_priority_cases_match_oracle) {
  json_t *root = load_oracle();
  json_t *cases = json_object_get(root, "priority");
  ck_assert(json_is_array(cases));
  ck_assert_uint_gt(json_array_size(cases), 0);
  size_t i;
  json_t *c;
  json_array_foreach(cases, i, c) {
    const char *id = json_string_value(json_object_get(c, "id"));
    opd_keyset s = ks_of_names(json_object_get(c, "keys"));
    json_t *minus = json_object_get(c, "minus");
    if (minus) s = opd_keyset_minus(s, ks_of_names(minus));
    const char *highest = json_string_value(json_object_get(c, "highest"));
    const char *got = opd_key_name(opd_keyset_highest_key(s));
    ck_assert_msg(got && strcmp(got, highest) == 0, "%s: highest %s, want %s", id,
                  got ? got : "(null)", highest);
    char want[2048], by_iter[2048];
    join_names(json_object_get(c, "listed"), want, sizeof want);
    ck_assert_msg(strcmp(listing(s), want) == 0, "%s: listed [%s], want [%s]", id, listing(s),
                  want);
    listing_by_iter(s, by_iter, sizeof by_iter);
    ck_assert_str_eq(by_iter, want);
    const char *name;
    json_t *v;
    json_object_foreach(json_object_get(c, "has"), name, v) {
      ck_assert_msg(opd_keyset_has(s, key_named(name)) == json_is_true(v), "%s: has(%s)", id, name);
    }
    /* the slot of the set is the slot of its highest key */
    ck_assert_uint_eq(opd_keyset_slot(s), opd_key_slot(opd_keyset_highest_key(s)));
  }
  json_decref(root);
}
END_TEST

/* ---- table slots ---- */

START_TEST(test_slots_distinct_and_inverse) {
  opd_dispatch_key runtime[128];
  int n = c10_runtime_keys(runtime);
  bool used[OPD_NUM_RUNTIME_SLOTS] = {false};
  ck_assert_uint_eq(opd_key_slot(OPD_KEY_Undefined), 0);
  for (int i = 0; i < n; i++) {
    unsigned slot = opd_key_slot(runtime[i]);
    ck_assert_uint_lt(slot, OPD_NUM_RUNTIME_SLOTS);
    ck_assert_msg(!used[slot], "slot %u used twice", slot);
    used[slot] = true;
    ck_assert_int_eq(opd_slot_key(slot), runtime[i]);
  }
  for (unsigned s = 0; s < OPD_NUM_RUNTIME_SLOTS; s++) {
    ck_assert(used[s]);
    ck_assert_uint_eq(opd_key_slot(opd_slot_key(s)), s);
  }
  /* a per-backend functionality's slots are contiguous, in backend order */
  for (int j = 0; j < 5; j++)
    for (int b = 1; b < 14; b++)
      ck_assert_uint_eq(opd_key_slot((opd_dispatch_key)c10_runtime_value(j, b)),
                        opd_key_slot((opd_dispatch_key)c10_runtime_value(j, 0)) + (unsigned)b);
}
END_TEST

/* The expected highest key of a union of runtime keys (FORMAT.md section 2), computed
 * from c10's numbering alone. */
static opd_dispatch_key model_highest(const opd_dispatch_key *keys, int n) {
  int max_f = 0, max_b = -1;
  for (int i = 0; i < n; i++) {
    int f, b;
    c10_decompose((int)keys[i], &f, &b);
    if (f > max_f) max_f = f;
    if (b > max_b) max_b = b;
  }
  int block = per_backend_block(max_f);
  if (block < 0) return (opd_dispatch_key)max_f;
  return (opd_dispatch_key)c10_runtime_value(block, max_b);
}

START_TEST(test_keyset_slot_agrees) {
  opd_dispatch_key runtime[128];
  int n = c10_runtime_keys(runtime);
  for (int i = 0; i < n; i++) {
    opd_keyset s = opd_keyset_of(runtime[i]);
    ck_assert_uint_eq(opd_keyset_slot(s), opd_key_slot(runtime[i]));
    ck_assert_uint_eq(opd_keyset_slot(s), opd_key_slot(opd_keyset_highest_key(s)));
  }
  rng_state = UINT64_C(0x9E3779B97F4A7C15);
  for (int iter = 0; iter < 5000; iter++) {
    opd_dispatch_key chosen[8];
    int m = 1 + (int)(rng_next() % 6);
    for (int j = 0; j < m; j++) chosen[j] = runtime[rng_next() % (uint64_t)n];
    opd_keyset s = ks_from(chosen, (size_t)m);
    opd_dispatch_key hi = opd_keyset_highest_key(s);
    ck_assert_msg(hi == model_highest(chosen, m), "iteration %d: highest %s, want %s", iter,
                  opd_key_name(hi), opd_key_name(model_highest(chosen, m)));
    ck_assert(opd_key_is_runtime(hi));
    ck_assert_uint_eq(opd_keyset_slot(s), opd_key_slot(hi));
    ck_assert(opd_keyset_has(s, hi));
    /* a redispatch's set, from one bit scan, is the set below the highest key */
    ck_assert_uint_eq(opd_keyset_below_highest(s).repr,
                      opd_keyset_intersect(s, opd_keyset_after(hi)).repr);
    /* and after removing a random other set (backend bits stay) */
    opd_dispatch_key other[3];
    for (int j = 0; j < 3; j++) other[j] = runtime[rng_next() % (uint64_t)n];
    opd_keyset d = opd_keyset_minus(s, ks_from(other, 3));
    ck_assert_uint_eq(d.repr & OPD_BACKEND_BITS_MASK, s.repr & OPD_BACKEND_BITS_MASK);
    opd_dispatch_key dh = opd_keyset_highest_key(d);
    ck_assert(opd_key_is_runtime(dh));
    ck_assert_uint_eq(opd_keyset_slot(d), opd_key_slot(dh));
    ck_assert_uint_eq(opd_keyset_below_highest(d).repr,
                      opd_keyset_intersect(d, opd_keyset_after(dh)).repr);
  }
  /* backend bits alone, or nothing: nothing below */
  ck_assert(opd_keyset_is_empty(opd_keyset_below_highest((opd_keyset){OPD_BACKEND_BITS_MASK})));
  ck_assert(opd_keyset_is_empty(opd_keyset_below_highest(opd_keyset_empty())));
}
END_TEST

START_TEST(test_keyset_after) {
  /* nothing below Dense: only the backend bits */
  ck_assert_uint_eq(opd_keyset_after(OPD_KEY_CPU).repr, OPD_BACKEND_BITS_MASK);
  ck_assert(opd_keyset_is_empty(opd_keyset_after(OPD_KEY_Undefined)));

  opd_keyset a = opd_keyset_after(OPD_KEY_AutogradCPU);
  ck_assert(opd_keyset_equal(a, opd_keyset_after(OPD_KEY_AutogradMeta)));
  ck_assert(opd_keyset_has(a, OPD_KEY_CPU));
  ck_assert(opd_keyset_has(a, OPD_KEY_Meta));
  ck_assert(opd_keyset_has(a, OPD_KEY_SparseCPU));
  ck_assert(opd_keyset_has(a, OPD_KEY_BackendSelect));
  ck_assert(opd_keyset_has(a, OPD_KEY_ADInplaceOrView));
  ck_assert(opd_keyset_has(a, OPD_KEY_AutogradOther));
  ck_assert(!opd_keyset_has(a, OPD_KEY_AutogradCPU));
  ck_assert(!opd_keyset_has(a, OPD_KEY_AutogradMeta));
  ck_assert(!opd_keyset_has(a, OPD_KEY_AutogradNestedTensor));
  ck_assert(!opd_keyset_has(a, OPD_KEY_Tracer));

  opd_keyset t = opd_keyset_after(OPD_KEY_Tracer);
  ck_assert(opd_keyset_has(t, OPD_KEY_AutogradCUDA));
  ck_assert(opd_keyset_has(t, OPD_KEY_AutogradNestedTensor));
  ck_assert(!opd_keyset_has(t, OPD_KEY_Tracer));
  ck_assert(!opd_keyset_has(t, OPD_KEY_AutocastCPU));

  /* each functionality's after-set holds exactly the functionalities below it */
  for (int f = 1; f <= 40; f++) {
    opd_keyset s = opd_keyset_after((opd_dispatch_key)f);
    for (int g = 1; g <= 40; g++)
      ck_assert_msg(opd_keyset_has(s, (opd_dispatch_key)g) == (g < f), "after(%d) has %d", f, g);
    ck_assert_uint_eq(s.repr & OPD_BACKEND_BITS_MASK, OPD_BACKEND_BITS_MASK);
  }
  /* a tensor's set redispatched below AutogradCPU ends at CPU */
  opd_keyset cpu = opd_tensor_keyset_for(OPD_KEY_CPU);
  opd_keyset below = opd_keyset_intersect(cpu, opd_keyset_after(OPD_KEY_AutogradCPU));
  ck_assert_int_eq(opd_keyset_highest_key(below), OPD_KEY_ADInplaceOrView);
}
END_TEST

/* c10's FULL_AFTER maps a Start...Backends placeholder to its functionality
 * (toFunctionalityKey: StartOfDenseBackends -> Dense), so the set below the placeholder
 * that opd_keyset_highest_key returns for a backend-less per-backend functionality is the
 * set below that functionality (and no out-of-range shift for the later placeholders). */
START_TEST(test_keyset_after_placeholder) {
  for (int j = 0; j < 5; j++) {
    opd_dispatch_key f = (opd_dispatch_key)c10_per_backend[j].functionality;
    opd_dispatch_key placeholder = opd_keyset_highest_key(opd_keyset_of(f));
    ck_assert_int_eq(placeholder, 42 + 15 * j);
    ck_assert_msg(opd_keyset_after(placeholder).repr == opd_keyset_after(f).repr,
                  "after(%d) = %#llx, want after(%s) = %#llx", (int)placeholder,
                  (unsigned long long)opd_keyset_after(placeholder).repr, opd_key_name(f),
                  (unsigned long long)opd_keyset_after(f).repr);
  }
}
END_TEST

/* ---- alias sets ---- */

START_TEST(test_alias_covers) {
  const opd_dispatch_key CEANF = OPD_KEY_CompositeExplicitAutogradNonFunctional;
  const opd_dispatch_key CEA = OPD_KEY_CompositeExplicitAutograd;
  const opd_dispatch_key CIA = OPD_KEY_CompositeImplicitAutograd;
  const opd_dispatch_key AG = OPD_KEY_Autograd;

  ck_assert(opd_alias_covers(CEANF, OPD_KEY_CPU));
  ck_assert(opd_alias_covers(CEANF, OPD_KEY_Meta));
  ck_assert(opd_alias_covers(CEANF, OPD_KEY_QuantizedCPU));
  ck_assert(opd_alias_covers(CEANF, OPD_KEY_MkldnnCPU));
  ck_assert(opd_alias_covers(CEANF, OPD_KEY_SparseCsrCPU));
  ck_assert(!opd_alias_covers(CEANF, OPD_KEY_XLA));
  ck_assert(!opd_alias_covers(CEANF, OPD_KEY_Lazy));
  ck_assert(!opd_alias_covers(CEANF, OPD_KEY_QuantizedXLA));
  ck_assert(!opd_alias_covers(CEANF, OPD_KEY_SparseCPU));
  ck_assert(!opd_alias_covers(CEANF, OPD_KEY_SparseMeta));
  ck_assert(!opd_alias_covers(CEANF, OPD_KEY_AutogradCPU));
  ck_assert(opd_alias_covers(CEANF, OPD_KEY_Undefined));

  ck_assert(opd_alias_covers(CEA, OPD_KEY_XLA));
  ck_assert(opd_alias_covers(CEA, OPD_KEY_Lazy));
  ck_assert(opd_alias_covers(CEA, OPD_KEY_SparseCPU));
  ck_assert(!opd_alias_covers(CEA, OPD_KEY_AutogradCPU));
  ck_assert(!opd_alias_covers(CEA, OPD_KEY_AutogradOther));
  ck_assert(!opd_alias_covers(CEA, OPD_KEY_NestedTensorCPU));
  ck_assert(opd_alias_covers(CEA, OPD_KEY_Undefined));

  ck_assert(opd_alias_covers(CIA, OPD_KEY_CPU));
  ck_assert(opd_alias_covers(CIA, OPD_KEY_AutogradCPU));
  ck_assert(opd_alias_covers(CIA, OPD_KEY_AutogradOther));
  ck_assert(opd_alias_covers(CIA, OPD_KEY_AutogradNestedTensor));
  ck_assert(opd_alias_covers(CIA, OPD_KEY_NestedTensorCPU));
  ck_assert(opd_alias_covers(CIA, OPD_KEY_Undefined));
  ck_assert(!opd_alias_covers(CIA, OPD_KEY_BackendSelect));
  ck_assert(!opd_alias_covers(CIA, OPD_KEY_ADInplaceOrView));
  ck_assert(!opd_alias_covers(CIA, OPD_KEY_Tracer));
  ck_assert(!opd_alias_covers(CIA, OPD_KEY_Python));

  ck_assert(opd_alias_covers(AG, OPD_KEY_AutogradCPU));
  ck_assert(opd_alias_covers(AG, OPD_KEY_AutogradPrivateUse3));
  ck_assert(opd_alias_covers(AG, OPD_KEY_AutogradOther));
  ck_assert(opd_alias_covers(AG, OPD_KEY_AutogradNestedTensor));
  ck_assert(!opd_alias_covers(AG, OPD_KEY_CPU));
  ck_assert(!opd_alias_covers(AG, OPD_KEY_Undefined));

  /* a non-alias covers nothing */
  ck_assert(!opd_alias_covers(OPD_KEY_CPU, OPD_KEY_CPU));
  ck_assert(!opd_alias_covers(OPD_KEY_Undefined, OPD_KEY_Undefined));
  ck_assert(opd_keyset_is_empty(opd_alias_keyset(OPD_KEY_CPU)));
}
END_TEST

START_TEST(test_alias_sets_match_oracle) {
  json_t *root = load_oracle();
  json_t *sets = json_object_get(root, "alias_sets");
  opd_dispatch_key runtime[128];
  int n = c10_runtime_keys(runtime);
  const char *alias_name;
  json_t *members;
  int aliases = 0;
  json_object_foreach(sets, alias_name, members) {
    opd_dispatch_key alias = key_named(alias_name);
    bool listed[OPD_NUM_KEYS] = {false};
    size_t i;
    json_t *v;
    json_array_foreach(members, i, v) {
      listed[key_named(json_string_value(v))] = true;
    }
    for (int r = 1; r < n; r++) { /* Undefined is never listed, see test_alias_covers */
      ck_assert_msg(opd_alias_covers(alias, runtime[r]) == listed[runtime[r]], "%s covers %s",
                    alias_name, opd_key_name(runtime[r]));
      ck_assert(opd_keyset_has(opd_alias_keyset(alias), runtime[r]) == listed[runtime[r]]);
    }
    aliases++;
  }
  ck_assert_int_eq(aliases, 4);
  json_decref(root);
}
END_TEST

START_TEST(test_autograd_backend_keyset) {
  ck_assert(opd_keyset_is_empty(opd_autograd_backend_keyset(OPD_KEY_AutogradHIP)));
  ck_assert(opd_keyset_is_empty(opd_autograd_backend_keyset(OPD_KEY_AutogradVE)));
  ck_assert(opd_keyset_equal(opd_autograd_backend_keyset(OPD_KEY_AutogradCPU),
                             opd_keyset_of(OPD_KEY_CPU)));
  ck_assert(opd_keyset_equal(opd_autograd_backend_keyset(OPD_KEY_AutogradMeta),
                             opd_keyset_of(OPD_KEY_Meta)));
  ck_assert(opd_keyset_is_empty(opd_autograd_backend_keyset(OPD_KEY_CPU)));
  ck_assert(opd_keyset_is_empty(opd_autograd_backend_keyset(OPD_KEY_Tracer)));
  ck_assert(opd_keyset_is_empty(opd_autograd_backend_keyset(OPD_KEY_Undefined)));

  opd_keyset other = opd_autograd_backend_keyset(OPD_KEY_AutogradOther);
  ck_assert(opd_keyset_equal(other, opd_autogradother_backends()));
  ck_assert(opd_keyset_has(other, OPD_KEY_SparseCPU));
  ck_assert(opd_keyset_has(other, OPD_KEY_QuantizedMeta));
  ck_assert(opd_keyset_has(other, OPD_KEY_MkldnnCPU));
  ck_assert(opd_keyset_has(other, OPD_KEY_SparseCsrCUDA));
  ck_assert(opd_keyset_has(other, OPD_KEY_FPGA));
  ck_assert(!opd_keyset_has(other, OPD_KEY_CPU));
  ck_assert(!opd_keyset_has(other, OPD_KEY_NestedTensorCPU));

  opd_keyset nested = opd_autograd_backend_keyset(OPD_KEY_AutogradNestedTensor);
  ck_assert(opd_keyset_has(nested, OPD_KEY_NestedTensorCPU));
  ck_assert(!opd_keyset_has(nested, OPD_KEY_CPU));

  json_t *root = load_oracle();
  json_t *all = json_object_get(root, "autograd_backend_keys");
  opd_dispatch_key runtime[128];
  int n = c10_runtime_keys(runtime);
  const char *name;
  json_t *members;
  int checked = 0;
  json_object_foreach(all, name, members) {
    opd_keyset s = opd_autograd_backend_keyset(key_named(name));
    bool listed[OPD_NUM_KEYS] = {false};
    size_t i;
    json_t *v;
    json_array_foreach(members, i, v) {
      listed[key_named(json_string_value(v))] = true;
    }
    for (int r = 1; r < n; r++)
      ck_assert_msg(opd_keyset_has(s, runtime[r]) == listed[runtime[r]], "%s: %s", name,
                    opd_key_name(runtime[r]));
    checked++;
  }
  ck_assert_int_eq(checked, 16);
  json_decref(root);
}
END_TEST

/* ---- tensors ---- */

START_TEST(test_tensor_keysets) {
  ck_assert_str_eq(listing(opd_tensor_keyset_for(OPD_KEY_CPU)),
                   "CPU, ADInplaceOrView, AutogradCPU, AutocastCPU");
  ck_assert_str_eq(listing(opd_tensor_keyset_for(OPD_KEY_Meta)),
                   "Meta, ADInplaceOrView, AutogradMeta");
  ck_assert_str_eq(listing(opd_tensor_keyset_for(OPD_KEY_CUDA)),
                   "CUDA, ADInplaceOrView, AutogradCUDA, AutocastCUDA");
  ck_assert_str_eq(listing(opd_tensor_keyset_for(OPD_KEY_XPU)),
                   "XPU, ADInplaceOrView, AutogradXPU, AutocastXPU");
  ck_assert_str_eq(listing(opd_tensor_keyset_for(OPD_KEY_SparseCPU)),
                   "SparseCPU, ADInplaceOrView, AutogradCPU, AutocastCPU");
  ck_assert_str_eq(listing(opd_tensor_keyset_for(OPD_KEY_SparseCsrCPU)),
                   "SparseCsrCPU, ADInplaceOrView, AutogradOther");
  ck_assert_str_eq(listing(opd_tensor_keyset_for(OPD_KEY_MkldnnCPU)),
                   "MkldnnCPU, ADInplaceOrView, AutogradOther");

  /* the same as the sets PyTorch reports */
  json_t *root = load_oracle();
  const char *kind;
  json_t *info;
  json_object_foreach(json_object_get(root, "tensor_keysets"), kind, info) {
    json_t *keys = json_object_get(info, "keys");
    opd_dispatch_key backend = key_named(json_string_value(json_array_get(keys, 0)));
    opd_keyset want = ks_of_names(keys);
    ck_assert_msg(opd_keyset_equal(opd_tensor_keyset_for(backend), want), "%s: [%s]", kind,
                  listing(opd_tensor_keyset_for(backend)));
    opd_tensor *t = opd_tensor_new(backend, json_is_true(json_object_get(info, "requires_grad")));
    ck_assert_ptr_nonnull(t);
    ck_assert(opd_keyset_equal(opd_tensor_key_set(t), want));
    opd_tensor_release(t);
  }
  json_decref(root);
}
END_TEST

START_TEST(test_tensor_new) {
  const opd_dispatch_key ok[] = {OPD_KEY_CPU,       OPD_KEY_Meta,         OPD_KEY_CUDA,
                                 OPD_KEY_SparseCPU, OPD_KEY_SparseCsrCPU, OPD_KEY_QuantizedCPU,
                                 OPD_KEY_MkldnnCPU, OPD_KEY_PrivateUse1};
  for (size_t i = 0; i < sizeof ok / sizeof *ok; i++) {
    for (int rg = 0; rg < 2; rg++) {
      opd_tensor *t = opd_tensor_new(ok[i], rg);
      ck_assert_ptr_nonnull(t);
      ck_assert_uint_eq(atomic_load(&t->refcount), 1);
      ck_assert(t->requires_grad == (rg != 0));
      /* requires_grad does not change the key set */
      ck_assert(opd_keyset_equal(opd_tensor_key_set(t), opd_tensor_keyset_for(ok[i])));
      ck_assert(opd_keyset_has(opd_tensor_key_set(t), ok[i]));
      opd_tensor_retain(t);
      ck_assert_uint_eq(atomic_load(&t->refcount), 2);
      opd_tensor_release(t);
      ck_assert_uint_eq(atomic_load(&t->refcount), 1);
      opd_tensor_release(t);
    }
  }
  const int bad[] = {OPD_KEY_AutogradCPU,
                     OPD_KEY_BackendSelect,
                     OPD_KEY_Undefined,
                     OPD_KEY_Tracer,
                     OPD_KEY_ADInplaceOrView,
                     OPD_KEY_AutogradOther,
                     OPD_KEY_Dense,
                     OPD_KEY_CompositeImplicitAutograd,
                     42,
                     -1,
                     500};
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    opd_clear_error();
    ck_assert_ptr_null(opd_tensor_new((opd_dispatch_key)bad[i], false));
    ck_assert_msg(opd_last_error_code() == OPD_EINVAL, "key %d: code %d", bad[i],
                  opd_last_error_code());
    ck_assert_str_ne(opd_last_error(), "");
  }
}
END_TEST

/* ---- thread-local dispatch state ---- */

static void *read_tls(void *arg) {
  *(opd_local_dispatch_state *)arg = opd_tls_get();
  return NULL;
}

START_TEST(test_tls_defaults_and_round_trip) {
  opd_local_dispatch_state want_include_exclude = {
      KS(OPD_KEY_BackendSelect, OPD_KEY_ADInplaceOrView),
      KS(OPD_KEY_AutocastCPU, OPD_KEY_AutocastXPU, OPD_KEY_AutocastCUDA)};
  ck_assert(opd_keyset_equal(opd_default_dispatch_state.included, want_include_exclude.included));
  ck_assert(opd_keyset_equal(opd_default_dispatch_state.excluded, want_include_exclude.excluded));

  /* this thread changes its state; a fresh thread still has the defaults */
  opd_local_dispatch_state mine = {KS(OPD_KEY_Meta, OPD_KEY_Tracer),
                                   KS(OPD_KEY_AutogradFunctionality)};
  opd_tls_set(mine);
  opd_local_dispatch_state got = opd_tls_get();
  ck_assert(opd_keyset_equal(got.included, mine.included));
  ck_assert(opd_keyset_equal(got.excluded, mine.excluded));

  opd_local_dispatch_state fresh;
  pthread_t th;
  ck_assert_int_eq(pthread_create(&th, NULL, read_tls, &fresh), 0);
  ck_assert_int_eq(pthread_join(th, NULL), 0);
  ck_assert(opd_keyset_equal(fresh.included, want_include_exclude.included));
  ck_assert(opd_keyset_equal(fresh.excluded, want_include_exclude.excluded));
  ck_assert_str_eq(listing(fresh.included), "BackendSelect, ADInplaceOrView");
  ck_assert_str_eq(listing(fresh.excluded), "AutocastCPU, AutocastXPU, AutocastCUDA");
  ck_assert(!opd_keyset_has(fresh.included, OPD_KEY_Tracer));

  /* empty sets round-trip too */
  opd_tls_set((opd_local_dispatch_state){opd_keyset_empty(), opd_keyset_empty()});
  got = opd_tls_get();
  ck_assert(opd_keyset_is_empty(got.included));
  ck_assert(opd_keyset_is_empty(got.excluded));

  /* the defaults again */
  opd_tls_set(opd_default_dispatch_state);
  got = opd_tls_get();
  ck_assert(opd_keyset_equal(got.included, want_include_exclude.included));
  ck_assert(opd_keyset_equal(got.excluded, want_include_exclude.excluded));
}
END_TEST

START_TEST(test_default_tls_matches_oracle) {
  json_t *root = load_oracle();
  json_t *tls = json_object_get(root, "default_tls");
  opd_local_dispatch_state fresh;
  pthread_t th;
  ck_assert_int_eq(pthread_create(&th, NULL, read_tls, &fresh), 0);
  ck_assert_int_eq(pthread_join(th, NULL), 0);
  ck_assert(opd_keyset_equal(fresh.included, ks_of_names(json_object_get(tls, "include"))));
  ck_assert(opd_keyset_equal(fresh.excluded, ks_of_names(json_object_get(tls, "exclude"))));
  json_decref(root);
}
END_TEST

/* ---- IValues and the stack ---- */

static uint32_t refs(opd_tensor *t) {
  return (uint32_t)atomic_load(&t->refcount);
}

START_TEST(test_ivalue_scalars) {
  opd_ivalue v = opd_iv_none();
  ck_assert_uint_eq(v.tag, OPD_IV_NONE);
  v = opd_iv_bool(true);
  ck_assert_uint_eq(v.tag, OPD_IV_BOOL);
  ck_assert(v.u.b);
  v = opd_iv_int(-42);
  ck_assert_uint_eq(v.tag, OPD_IV_INT);
  ck_assert_int_eq(v.u.i, -42);
  v = opd_iv_double(2.5);
  ck_assert_uint_eq(v.tag, OPD_IV_DOUBLE);
  ck_assert_double_eq(v.u.d, 2.5);
  v = opd_iv_dtype(6);
  ck_assert_uint_eq(v.tag, OPD_IV_DTYPE);
  ck_assert_int_eq(v.u.dtype, 6);
  v = opd_iv_device((opd_device){OPD_BACKEND_CUDA, 1});
  ck_assert_uint_eq(v.tag, OPD_IV_DEVICE);
  ck_assert_int_eq(v.u.device.type, OPD_BACKEND_CUDA);
  ck_assert_int_eq(v.u.device.index, 1);
  opd_iv_destroy(&v);
  ck_assert_uint_eq(v.tag, OPD_IV_NONE);

  /* Scalars travel as int, double or bool, and keep their kind */
  opd_scalar s = {.tag = OPD_IV_DOUBLE, .u.d = 0.5};
  opd_ivalue sv = opd_iv_scalar(s);
  ck_assert_uint_eq(sv.tag, OPD_IV_DOUBLE);
  ck_assert(opd_iv_is_scalar(&sv));
  ck_assert_double_eq(opd_iv_to_scalar(&sv).u.d, 0.5);
  sv = opd_iv_scalar((opd_scalar){.tag = OPD_IV_INT, .u.i = 7});
  ck_assert_uint_eq(sv.tag, OPD_IV_INT);
  ck_assert_int_eq(opd_iv_to_scalar(&sv).u.i, 7);
  ck_assert_uint_eq(opd_iv_to_scalar(&sv).tag, OPD_IV_INT);
  sv = opd_iv_scalar((opd_scalar){.tag = OPD_IV_BOOL, .u.b = true});
  ck_assert_uint_eq(sv.tag, OPD_IV_BOOL);
  ck_assert(opd_iv_to_scalar(&sv).u.b);
  opd_ivalue none = opd_iv_none(), dt = opd_iv_dtype(1);
  ck_assert(!opd_iv_is_scalar(&none));
  ck_assert(!opd_iv_is_scalar(&dt));

  /* equality */
  opd_ivalue a = opd_iv_int(3), b = opd_iv_int(3), c = opd_iv_double(3.0);
  ck_assert(opd_iv_equal(&a, &b));
  ck_assert(!opd_iv_equal(&a, &c)); /* different tags */
  opd_ivalue n1 = opd_iv_double(NAN), n2 = opd_iv_double(NAN);
  ck_assert(opd_iv_equal(&n1, &n2));
  opd_ivalue z = opd_iv_double(0.0), nz = opd_iv_double(-0.0);
  ck_assert(!opd_iv_equal(&z, &nz)); /* bitwise */
  opd_ivalue d1 = opd_iv_device((opd_device){OPD_BACKEND_CUDA, 0});
  opd_ivalue d2 = opd_iv_device((opd_device){OPD_BACKEND_CUDA, 1});
  ck_assert(!opd_iv_equal(&d1, &d2));
  ck_assert(opd_iv_equal(&none, &(opd_ivalue){.tag = OPD_IV_NONE}));

  ck_assert_str_eq(opd_iv_tag_name(OPD_IV_INT), "int");
  ck_assert_str_eq(opd_iv_tag_name(OPD_IV_DOUBLE), "float");
  ck_assert_str_eq(opd_iv_tag_name(OPD_IV_TENSOR_LIST), "Tensor[]");
  ck_assert_str_eq(opd_iv_tag_name(OPD_IV_OPT_TENSOR_LIST), "Tensor?[]");
  ck_assert_str_eq(opd_iv_tag_name(OPD_IV_DTYPE), "ScalarType");
  ck_assert_str_eq(opd_iv_tag_name(OPD_IV_NONE), "None");
}
END_TEST

START_TEST(test_ivalue_owned) {
  /* strings: copied, length kept, embedded NUL allowed */
  opd_ivalue s, s2;
  ck_assert_int_eq(opd_iv_make_string(&s, "ab\0cd", 5), 0);
  ck_assert_uint_eq(s.tag, OPD_IV_STRING);
  ck_assert_uint_eq(s.len, 5);
  ck_assert_int_eq(memcmp(s.u.s, "ab\0cd", 6), 0);
  ck_assert_int_eq(opd_iv_copy(&s2, &s), 0);
  ck_assert_ptr_ne(s2.u.s, s.u.s);
  ck_assert(opd_iv_equal(&s, &s2));
  s2.u.s[4] = 'x';
  ck_assert(!opd_iv_equal(&s, &s2));
  opd_iv_destroy(&s);
  opd_iv_destroy(&s2);
  ck_assert_uint_eq(s.tag, OPD_IV_NONE);

  /* lists */
  const int64_t ints[] = {1, -2, 3};
  const double doubles[] = {0.5, NAN};
  const bool bools[] = {true, false, true};
  opd_ivalue il, dl, bl, il2, dl2, bl2, empty;
  ck_assert_int_eq(opd_iv_make_int_list(&il, ints, 3), 0);
  ck_assert_int_eq(opd_iv_make_double_list(&dl, doubles, 2), 0);
  ck_assert_int_eq(opd_iv_make_bool_list(&bl, bools, 3), 0);
  ck_assert_int_eq(opd_iv_make_int_list(&empty, NULL, 0), 0);
  ck_assert_uint_eq(empty.len, 0);
  ck_assert_uint_eq(il.tag, OPD_IV_INT_LIST);
  ck_assert_uint_eq(il.len, 3);
  ck_assert_int_eq(il.u.ints[1], -2);
  ck_assert_uint_eq(dl.tag, OPD_IV_DOUBLE_LIST);
  ck_assert_uint_eq(bl.tag, OPD_IV_BOOL_LIST);
  ck_assert(!bl.u.bools[1]);
  ck_assert_int_eq(opd_iv_copy(&il2, &il), 0);
  ck_assert_int_eq(opd_iv_copy(&dl2, &dl), 0);
  ck_assert_int_eq(opd_iv_copy(&bl2, &bl), 0);
  ck_assert_ptr_ne(il2.u.ints, il.u.ints);
  ck_assert(opd_iv_equal(&il, &il2));
  ck_assert(opd_iv_equal(&dl, &dl2)); /* NaN elements equal */
  ck_assert(opd_iv_equal(&bl, &bl2));
  ck_assert(!opd_iv_equal(&il, &empty));
  il2.u.ints[2] = 4;
  ck_assert(!opd_iv_equal(&il, &il2));
  /* lengths beyond a uint32_t are refused before anything is read */
  opd_ivalue too_long = opd_iv_none();
  ck_assert_int_eq(opd_iv_make_string(&too_long, "x", (size_t)UINT32_MAX), OPD_EINVAL);
  ck_assert_int_eq(opd_iv_make_int_list(&too_long, ints, (size_t)UINT32_MAX + 1), OPD_EINVAL);
  ck_assert_int_eq(opd_iv_make_bool_list(&too_long, bools, (size_t)UINT32_MAX + 1), OPD_EINVAL);
  opd_ivalue *all[] = {&il, &dl, &bl, &il2, &dl2, &bl2, &empty};
  for (size_t i = 0; i < sizeof all / sizeof *all; i++) {
    opd_iv_destroy(all[i]);
    ck_assert_uint_eq(all[i]->tag, OPD_IV_NONE);
  }
}
END_TEST

START_TEST(test_ivalue_tensors) {
  opd_tensor *a = opd_tensor_new(OPD_KEY_CPU, false);
  opd_tensor *b = opd_tensor_new(OPD_KEY_Meta, true);
  ck_assert_ptr_nonnull(a);
  ck_assert_ptr_nonnull(b);

  opd_ivalue ta = opd_iv_tensor(a);
  ck_assert_uint_eq(ta.tag, OPD_IV_TENSOR);
  ck_assert_ptr_eq(ta.u.t, a);
  ck_assert_uint_eq(refs(a), 2);
  opd_ivalue ta2;
  ck_assert_int_eq(opd_iv_copy(&ta2, &ta), 0);
  ck_assert_uint_eq(refs(a), 3);
  ck_assert(opd_iv_equal(&ta, &ta2)); /* by identity */
  opd_ivalue tb = opd_iv_tensor(b);
  ck_assert(!opd_iv_equal(&ta, &tb));
  opd_iv_destroy(&ta2);
  opd_iv_destroy(&tb);
  ck_assert_uint_eq(refs(a), 2);
  ck_assert_uint_eq(refs(b), 1);
  opd_iv_destroy(&ta);
  ck_assert_uint_eq(refs(a), 1);

  /* steal takes over the caller's reference */
  opd_tensor_retain(a);
  opd_ivalue st = opd_iv_tensor_steal(a);
  ck_assert_uint_eq(refs(a), 2);
  opd_iv_destroy(&st);
  ck_assert_uint_eq(refs(a), 1);

  /* tensor lists retain each element */
  opd_tensor *elems[] = {a, b, a};
  opd_ivalue tl, tl2;
  ck_assert_int_eq(opd_iv_make_tensor_list(&tl, elems, 3, false), 0);
  ck_assert_uint_eq(tl.tag, OPD_IV_TENSOR_LIST);
  ck_assert_uint_eq(tl.len, 3);
  ck_assert_uint_eq(refs(a), 3);
  ck_assert_uint_eq(refs(b), 2);
  ck_assert_int_eq(opd_iv_copy(&tl2, &tl), 0);
  ck_assert_uint_eq(refs(a), 5);
  ck_assert(opd_iv_equal(&tl, &tl2));
  opd_iv_destroy(&tl2);
  opd_iv_destroy(&tl);
  ck_assert_uint_eq(refs(a), 1);
  ck_assert_uint_eq(refs(b), 1);

  /* Tensor?[] may hold None; Tensor[] may not */
  opd_tensor *opt[] = {NULL, b};
  opd_ivalue ol, ol2, bad;
  ck_assert_int_eq(opd_iv_make_tensor_list(&ol, opt, 2, true), 0);
  ck_assert_uint_eq(ol.tag, OPD_IV_OPT_TENSOR_LIST);
  ck_assert_ptr_null(ol.u.tensors[0]);
  ck_assert_uint_eq(refs(b), 2);
  ck_assert_int_eq(opd_iv_copy(&ol2, &ol), 0);
  ck_assert_uint_eq(ol2.tag, OPD_IV_OPT_TENSOR_LIST);
  ck_assert(opd_iv_equal(&ol, &ol2));
  opd_iv_destroy(&ol2);
  opd_iv_destroy(&ol);
  ck_assert_uint_eq(refs(b), 1);
  ck_assert_int_eq(opd_iv_make_tensor_list(&bad, opt, 2, false), OPD_EINVAL);
  ck_assert_uint_eq(refs(b), 1); /* nothing retained on failure */

  opd_tensor_release(a);
  opd_tensor_release(b);
}
END_TEST

START_TEST(test_stack) {
  opd_tensor *t = opd_tensor_new(OPD_KEY_CPU, false);
  ck_assert_ptr_nonnull(t);
  opd_stack s;
  opd_stack_init(&s);
  ck_assert_uint_eq(s.size, 0);
  ck_assert_uint_eq(s.capacity, OPD_STACK_INLINE);
  ck_assert_ptr_eq(s.items, s.inline_items);

  /* grow well past the inline storage, alternating tensors and ints */
  const uint32_t n = 3 * OPD_STACK_INLINE + 5;
  for (uint32_t i = 0; i < n; i++) {
    ck_assert_int_eq(opd_stack_push(&s, i % 2 ? opd_iv_int(i) : opd_iv_tensor(t)), 0);
    ck_assert_uint_eq(s.size, i + 1);
    ck_assert_uint_ge(s.capacity, s.size);
  }
  ck_assert_ptr_ne(s.items, s.inline_items);
  ck_assert_uint_eq(refs(t), 1 + (n + 1) / 2);
  /* order survived the moves */
  for (uint32_t i = 0; i < n; i++) {
    if (i % 2) {
      ck_assert_uint_eq(s.items[i].tag, OPD_IV_INT);
      ck_assert_int_eq(s.items[i].u.i, i);
    } else {
      ck_assert_ptr_eq(s.items[i].u.t, t);
    }
  }
  ck_assert_int_eq(opd_stack_peek(&s, 1)->u.i, n - 2);
  ck_assert_ptr_eq(opd_stack_last(&s, 3), &s.items[n - 3]);

  /* pop hands over ownership */
  opd_ivalue top = opd_stack_pop(&s);
  ck_assert_uint_eq(s.size, n - 1);
  ck_assert_uint_eq(top.tag, OPD_IV_TENSOR);
  ck_assert_uint_eq(refs(t), 1 + (n + 1) / 2);
  opd_iv_destroy(&top);
  ck_assert_uint_eq(refs(t), (n + 1) / 2);

  opd_stack_drop(&s, 4);
  ck_assert_uint_eq(s.size, n - 5);
  ck_assert_uint_eq(refs(t), (n + 1) / 2 - 2);
  opd_stack_clear(&s);
  ck_assert_uint_eq(s.size, 0);
  ck_assert_uint_eq(refs(t), 1);
  /* clear keeps the storage; destroy frees it */
  ck_assert_ptr_ne(s.items, s.inline_items);
  ck_assert_int_eq(opd_stack_push(&s, opd_iv_tensor(t)), 0);
  opd_ivalue str;
  ck_assert_int_eq(opd_iv_make_string(&str, "x", 1), 0);
  ck_assert_int_eq(opd_stack_push(&s, str), 0);
  opd_stack_destroy(&s);
  ck_assert_uint_eq(s.size, 0);
  ck_assert_ptr_eq(s.items, s.inline_items);
  ck_assert_uint_eq(refs(t), 1);

  /* a destroyed stack is reusable */
  ck_assert_int_eq(opd_stack_push(&s, opd_iv_tensor(t)), 0);
  ck_assert_uint_eq(refs(t), 2);
  opd_stack_destroy(&s);
  ck_assert_uint_eq(refs(t), 1);
  opd_tensor_release(t);
}
END_TEST

/* ---- errors ---- */

static void *read_error(void *arg) {
  *(int *)arg = opd_last_error_code() == 0 && opd_last_error()[0] == '\0';
  return NULL;
}

START_TEST(test_errors) {
  static const struct {
    int code;
    const char *name, *message;
  } errs[] = {
      {OPD_EINVAL, "EINVAL", "invalid argument"},
      {OPD_ENOENT, "ENOENT", "not found"},
      {OPD_EEXIST, "EEXIST", "already exists"},
      {OPD_ENOTIMPL, "ENOTIMPL", "no kernel for this dispatch key"},
      {OPD_EAMBIGUOUS, "EAMBIGUOUS", "ambiguous autograd kernel"},
      {OPD_EFALLTHROUGH, "EFALLTHROUGH", "fallthrough kernel executed"},
      {OPD_ENOMEM, "ENOMEM", "out of memory"},
      {OPD_ERESOURCE, "ERESOURCE", "resource exhausted"},
      {OPD_ECANCELED, "ECANCELED", "cancelled"},
      {OPD_EINTERNAL, "EINTERNAL", "internal error"},
      {OPD_ESCHEMA, "ESCHEMA", "bad operator schema"},
      {OPD_EBUSY, "EBUSY", "busy"},
  };
  for (size_t i = 0; i < sizeof errs / sizeof *errs; i++) {
    ck_assert_int_lt(errs[i].code, 0);
    ck_assert_str_eq(opd_err_name(errs[i].code), errs[i].name);
    ck_assert_str_eq(opd_strerror(errs[i].code), errs[i].message);
    for (size_t j = 0; j < i; j++) ck_assert_int_ne(errs[i].code, errs[j].code);
  }
  ck_assert_str_eq(opd_err_name(0), "UNKNOWN");
  ck_assert_str_eq(opd_err_name(-1000), "UNKNOWN");
  ck_assert_str_eq(opd_err_name(5), "UNKNOWN");
  ck_assert_str_eq(opd_strerror(-1000), "unknown error");

  opd_clear_error();
  ck_assert_str_eq(opd_last_error(), "");
  ck_assert_int_eq(opd_last_error_code(), 0);
  ck_assert_int_eq(opd_error(OPD_ENOTIMPL, "no kernel for %s at %d", "op", 7), OPD_ENOTIMPL);
  ck_assert_str_eq(opd_last_error(), "no kernel for op at 7");
  ck_assert_int_eq(opd_last_error_code(), OPD_ENOTIMPL);
  /* the next error replaces it */
  ck_assert_int_eq(opd_error(OPD_EINVAL, "second"), OPD_EINVAL);
  ck_assert_str_eq(opd_last_error(), "second");
  ck_assert_int_eq(opd_last_error_code(), OPD_EINVAL);

  /* a long message is truncated, never overflows */
  char big[4000];
  memset(big, 'y', sizeof big - 1);
  big[sizeof big - 1] = '\0';
  ck_assert_int_eq(opd_error(OPD_EINTERNAL, "%s", big), OPD_EINTERNAL);
  size_t len = strlen(opd_last_error());
  ck_assert_uint_gt(len, 100);
  ck_assert_uint_lt(len, sizeof big - 1);
  ck_assert_int_eq(strncmp(opd_last_error(), big, len), 0);

  /* the message is per thread */
  int clean = 0;
  pthread_t th;
  ck_assert_int_eq(pthread_create(&th, NULL, read_error, &clean), 0);
  ck_assert_int_eq(pthread_join(th, NULL), 0);
  ck_assert_int_eq(clean, 1);
  ck_assert_int_eq(opd_last_error_code(), OPD_EINTERNAL);

  opd_clear_error();
  ck_assert_str_eq(opd_last_error(), "");
  ck_assert_int_eq(opd_last_error_code(), 0);
}
END_TEST

Suite *opd_test_keys_suite(void) {
  Suite *s = suite_create("keys");
  TCase *tc = tcase_create("universe");
  tcase_add_test(tc, test_key_values);
  tcase_add_test(tc, test_key_names_round_trip);
  tcase_add_test(tc, test_key_values_match_oracle);
  tcase_add_test(tc, test_key_kinds);
  tcase_add_test(tc, test_key_decomposition);
  suite_add_tcase(s, tc);

  tc = tcase_create("keysets");
  tcase_add_test(tc, test_keyset_bits);
  tcase_add_test(tc, test_keyset_cross_product);
  tcase_add_test(tc, test_keyset_minus);
  tcase_add_test(tc, test_highest_key);
  tcase_add_test(tc, test_listing_order);
  tcase_add_test(tc, test_priority_cases_match_oracle);
  tcase_add_test(tc, test_slots_distinct_and_inverse);
  tcase_add_test(tc, test_keyset_slot_agrees);
  tcase_add_test(tc, test_keyset_after);
  tcase_add_test(tc, test_keyset_after_placeholder); /* fails: library bug, see the test */
  suite_add_tcase(s, tc);

  tc = tcase_create("aliases");
  tcase_add_test(tc, test_alias_covers);
  tcase_add_test(tc, test_alias_sets_match_oracle);
  tcase_add_test(tc, test_autograd_backend_keyset);
  suite_add_tcase(s, tc);

  tc = tcase_create("tensors_tls");
  tcase_add_test(tc, test_tensor_keysets);
  tcase_add_test(tc, test_tensor_new);
  tcase_add_test(tc, test_tls_defaults_and_round_trip);
  tcase_add_test(tc, test_default_tls_matches_oracle);
  suite_add_tcase(s, tc);

  tc = tcase_create("values_errors");
  tcase_add_test(tc, test_ivalue_scalars);
  tcase_add_test(tc, test_ivalue_owned);
  tcase_add_test(tc, test_ivalue_tensors);
  tcase_add_test(tc, test_stack);
  tcase_add_test(tc, test_errors);
  suite_add_tcase(s, tc);
  return s;
}

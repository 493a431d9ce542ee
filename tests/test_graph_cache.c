/* test_graph_cache.c: the compiled-graph cache ([Note: The compiled-graph cache] in
 * graph/src/exec/cache.c) and its key ([Note: The cache key]): hits, misses, LRU eviction,
 * invalidation by a hot registration, and what does and does not change the key. */
#include <check.h>
#include <string.h>

#include "exec/compiled.h"
#include "opd/memory.h"
#include "test_graph_util.h"

/* exp(x) * k on a [rows, 8] input. */
static opd_graph *graph_of(int rows, double k) {
  opd_graph *g = gnew();
  int x = IN(g, rows, 8);
  int e = NODE(g, "aten::exp", R(x));
  OUT(g, NODE(g, "aten::mul.Tensor", R(e), V(D(k))));
  return g;
}

static opd_compiled_graph *define(opd_graph_cache *c, opd_graph *g, bool *hit) {
  opd_compiled_graph *cg = NULL;
  ck_assert_msg(opd_graph_compile(g, NULL, c, &cg, hit) == 0, "%s", opd_last_error());
  return cg;
}

START_TEST(test_hits_and_misses) {
  opd_graph_cache *c;
  ck_assert_int_eq(opd_graph_cache_new(0, &c), OPD_EINVAL);
  ck_assert_int_eq(opd_graph_cache_new(4, &c), 0);
  bool hit;
  opd_compiled_graph *a = define(c, graph_of(4, 2.0), &hit);
  ck_assert(!hit);
  opd_compiled_graph *b = define(c, graph_of(4, 2.0), &hit); /* the same graph: a hit */
  ck_assert(hit);
  ck_assert_ptr_eq(a, b);
  opd_compiled_graph *d = define(c, graph_of(5, 2.0), &hit); /* another input spec */
  ck_assert(!hit);
  opd_compiled_graph *e = define(c, graph_of(4, 3.0), &hit); /* another constant */
  ck_assert(!hit);
  opd_graph_cache_stats s;
  opd_graph_cache_stats_get(c, &s);
  ck_assert_uint_eq(s.hits, 1);
  ck_assert_uint_eq(s.misses, 3);
  ck_assert_uint_eq(s.size, 3);
  opd_graph_stats st;
  opd_compiled_graph_stats(a, &st);
  ck_assert_uint_eq(st.cache_hits, 1);
  json_t *j = opd_graph_cache_json(c);
  ck_assert_uint_eq(json_array_size(json_object_get(j, "graphs")), 3);
  ck_assert_int_eq(json_integer_value(json_object_get(j, "hits")), 1);
  /* most recently used first: e, d, then a (whose hit came before d was defined) */
  json_t *first = json_array_get(json_object_get(j, "graphs"), 0);
  ck_assert_int_eq(json_integer_value(json_object_get(first, "id")), (json_int_t)e->id);
  ck_assert_int_eq(
      json_integer_value(json_object_get(json_array_get(json_object_get(j, "graphs"), 2), "id")),
      (json_int_t)a->id);
  json_decref(j);
  /* by id, as GET /v1/graphs/{id} finds one */
  opd_compiled_graph *found = opd_graph_cache_lookup_id(c, d->id);
  ck_assert_ptr_eq(found, d);
  opd_compiled_graph_release(found);
  ck_assert_ptr_null(opd_graph_cache_lookup_id(c, UINT64_MAX));
  /* the process's pass totals count these compilations */
  json_t *totals = opd_graph_pass_totals_json();
  json_t *lower = json_object_get(totals, "lower");
  ck_assert_int_ge(json_integer_value(json_object_get(lower, "runs")), 3);
  ck_assert_int_ge(json_integer_value(json_object_get(lower, "hits")), 3); /* a step each */
  json_decref(totals);
  opd_compiled_graph_release(a);
  opd_compiled_graph_release(b);
  opd_compiled_graph_release(d);
  opd_compiled_graph_release(e);
  opd_graph_cache_free(c);
}
END_TEST

START_TEST(test_eviction) {
  opd_graph_cache *c;
  ck_assert_int_eq(opd_graph_cache_new(2, &c), 0);
  bool hit;
  opd_compiled_graph *g1 = define(c, graph_of(1, 1.5), &hit);
  opd_compiled_graph *g2 = define(c, graph_of(2, 1.5), &hit);
  opd_compiled_graph_release(define(c, graph_of(1, 1.5), &hit)); /* g1 used: g2 is the LRU */
  ck_assert(hit);
  opd_compiled_graph *g3 = define(c, graph_of(3, 1.5), &hit);
  opd_graph_cache_stats s;
  opd_graph_cache_stats_get(c, &s);
  ck_assert_uint_eq(s.evictions, 1);
  ck_assert_uint_eq(s.size, 2);
  opd_compiled_graph_release(define(c, graph_of(2, 1.5), &hit)); /* evicted: compiled again */
  ck_assert(!hit);
  opd_compiled_graph_release(define(c, graph_of(3, 1.5), &hit));
  ck_assert(hit);
  /* an evicted graph still runs for whoever holds it */
  opd_tensor *x = mk(OPD_FLOAT32, SHAPE(2, 8), NULL), *out;
  grun(g2, &x, 1, &out, 1);
  ck_assert_float_eq(at(out, 0), 1.5);
  opd_tensor_release(out);
  opd_tensor_release(x);
  opd_compiled_graph_release(g1);
  opd_compiled_graph_release(g2);
  opd_compiled_graph_release(g3);
  opd_graph_cache_free(c);
}
END_TEST

static int tripled_exp(const opd_kernel_ctx *ctx, opd_stack *st) {
  (void)ctx;
  opd_ivalue self = opd_stack_pop(st);
  opd_tensor *r = NULL;
  int rc = opd_tensor_empty(opd_tensor_sizes(self.u.t), self.u.t->ndim, OPD_FLOAT32,
                            (opd_device){OPD_DEVICE_CPU, -1}, &r);
  for (int64_t i = 0; rc == 0 && i < r->numel; i++) ((float *)opd_tensor_data(r))[i] = 3;
  opd_iv_destroy(&self);
  return rc ? rc : opd_stack_push(st, opd_iv_tensor_steal(r));
}

/* A hot registration of an operator the graph calls gives it another key: the next define
 * compiles again (with the new kernel: exp no longer fuses), and the stale entry goes. */
START_TEST(test_invalidation_by_registration) {
  opd_graph_cache *c;
  ck_assert_int_eq(opd_graph_cache_new(8, &c), 0);
  bool hit;
  opd_compiled_graph *before = define(c, graph_of(4, 2.0), &hit);
  ck_assert_uint_eq(before->plan->ngroups, 1);
  opd_kernel k = {.boxed = tripled_exp, .name = "tripled_exp"};
  opd_reg_id id = opd_impl("aten::exp", OPD_KEY_CPU, &k, OPD_HERE);
  ck_assert_int_gt(id, 0);
  opd_compiled_graph *after = define(c, graph_of(4, 2.0), &hit);
  ck_assert(!hit);
  ck_assert_ptr_ne(before, after);
  ck_assert_uint_eq(after->plan->ngroups, 0);
  opd_graph_cache_stats s;
  opd_graph_cache_stats_get(c, &s);
  ck_assert_uint_eq(s.invalidations, 1);
  ck_assert_uint_eq(s.size, 1);
  opd_tensor *x = mk(OPD_FLOAT32, SHAPE(4, 8), NULL), *out;
  grun(after, &x, 1, &out, 1);
  ck_assert_float_eq(at(out, 5), 6); /* 2 * the plugin's 3 */
  opd_tensor_release(out);
  /* and deregistering it does so again */
  ck_assert_int_eq(opd_deregister(id), 0);
  opd_compiled_graph *again = define(c, graph_of(4, 2.0), &hit);
  ck_assert(!hit);
  grun(again, &x, 1, &out, 1);
  ck_assert_float_eq(at(out, 5), 2);
  opd_tensor_release(out);
  opd_tensor_release(x);
  opd_compiled_graph_release(before);
  opd_compiled_graph_release(after);
  opd_compiled_graph_release(again);
  opd_graph_cache_free(c);
}
END_TEST

START_TEST(test_key) {
  opd_graph_cache *c;
  ck_assert_int_eq(opd_graph_cache_new(8, &c), 0);
  opd_graph_options o;
  opd_graph_options_default(&o);
  const char *off[] = {"cse"};
  o.disabled_passes = off;
  o.ndisabled = 1;
  bool hit;
  opd_compiled_graph *plain = define(c, graph_of(4, 2.0), &hit), *other;
  ck_assert_int_eq(opd_graph_compile(graph_of(4, 2.0), &o, c, &other, &hit), 0);
  ck_assert(!hit); /* a disabled pass changes the key */
  ck_assert_ptr_nonnull(strstr(other->key, " cse@1:off"));
  ck_assert_ptr_nonnull(strstr(plain->key, " cse@1 "));
  o.ndisabled = 0;
  o.verify = false; /* debug options do not */
  opd_compiled_graph *unverified;
  ck_assert_int_eq(opd_graph_compile(graph_of(4, 2.0), &o, c, &unverified, &hit), 0);
  ck_assert(hit);
  /* the key holds the canonical graph, every pass, the operators' generations and the code
   * generator, and no address */
  ck_assert_ptr_nonnull(
      strstr(plain->key, "graph(%0: float32[4, 8]):\n  %1: float32[4, 8] = aten::exp(%0)\n"));
  ck_assert_ptr_nonnull(strstr(plain->key, "passes: view_canonicalize@1 remove_noops@1 dce@1"));
  ck_assert_ptr_nonnull(strstr(plain->key, "operators: aten::exp#"));
  ck_assert_ptr_nonnull(strstr(plain->key, opd_graph_codegen_id()));
  ck_assert_ptr_null(strstr(plain->key, "0x"));
  /* the code generator: the CPU interpreter, the CUDA source generator's version, and the
   * NVRTC that compiles it (or that this build has none), computed once */
  ck_assert_ptr_nonnull(strstr(plain->key, "codegen: opd-fused-interpreter/"));
  ck_assert_ptr_nonnull(strstr(opd_graph_cuda_codegen_id(), "opd-fused-cuda/"));
  ck_assert_ptr_nonnull(strstr(plain->key, opd_graph_cuda_codegen_id()));
#ifdef OPD_HAVE_CUDA
  ck_assert_ptr_nonnull(strstr(plain->key, " nvrtc="));
  ck_assert_ptr_null(strstr(plain->key, "nvrtc=none"));
#else
  ck_assert_ptr_nonnull(strstr(plain->key, " nvrtc=none (built without CUDA)\n"));
#endif
  ck_assert_ptr_eq(opd_graph_codegen_id(), opd_graph_codegen_id());
  opd_compiled_graph_release(plain);
  opd_compiled_graph_release(other);
  opd_compiled_graph_release(unverified);
  opd_graph_cache_free(c);
}
END_TEST

/* Constant tensors are told apart by their data. */
START_TEST(test_key_constant_data) {
  opd_graph_cache *c;
  ck_assert_int_eq(opd_graph_cache_new(8, &c), 0);
  bool hit[3];
  opd_compiled_graph *cg[3];
  for (int i = 0; i < 3; i++) {
    opd_graph *g = gnew();
    int x = IN(g, 3);
    opd_tensor *k = mk(OPD_FLOAT32, SHAPE(3), i == 1 ? VALS(1, 2, 4) : VALS(1, 2, 3));
    OUT(g, NODE(g, "aten::add.Tensor", R(x), V(T(k))));
    opd_tensor_release(k);
    cg[i] = define(c, g, &hit[i]);
  }
  ck_assert(!hit[0] && !hit[1] && hit[2]);
  ck_assert_ptr_nonnull(strstr(cg[0]->key, "tensor(float32[3]<0000803f0000004000004040>)"));
  for (int i = 0; i < 3; i++) opd_compiled_graph_release(cg[i]);
  opd_graph_cache_free(c);
}
END_TEST

Suite *opd_test_graph_cache_suite(void) {
  Suite *s = suite_create("graph_cache");
  TCase *tc = tcase_create("cache");
  tcase_add_test(tc, test_hits_and_misses);
  tcase_add_test(tc, test_eviction);
  tcase_add_test(tc, test_invalidation_by_registration);
  tcase_add_test(tc, test_key);
  tcase_add_test(tc, test_key_constant_data);
  suite_add_tcase(s, tc);
  return s;
}

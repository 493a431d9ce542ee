/* test_graph_isolation.c: a compiled graph shared by several callers (the cache) never hands
 * one of them its own memory ([Note: A compiled graph's memory never reaches a caller] in
 * graph/src/outputs.c): outputs that the run makes as views of a planned buffer or of a
 * constant are copies, so another caller's run never changes them and writing them never
 * changes another caller's results or the graph's constants; planned buffers are checked
 * against every use ([Note: Buffer planning]); a wrapped number its dtype cannot hold is
 * refused at its node. The daemon's side (two sessions, the charge of graph definitions)
 * is in test_graph_server.c. */
#include <check.h>
#include <malloc.h>
#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "compiled.h"
#include "opd/allocator.h"
#include "opd/memory.h"
#include "test_graph_util.h"

static void fill(opd_tensor *t, double v) {
  opd_stack st;
  opd_stack_init(&st);
  opd_stack_push(&st, T(t));
  opd_stack_push(&st, D(v));
  ck_assert_msg(opd_call_boxed(opd_find_op("aten::fill_.Scalar"), &st) == 0, "fill_: %s",
                opd_last_error());
  opd_stack_destroy(&st);
}

/* Two callers of one compiled graph, as two sessions defining the same graph are: the
 * second definition is a cache hit. */
static opd_compiled_graph *define(opd_graph_cache *cache, opd_graph *g, bool want_hit) {
  opd_graph_options o;
  opd_graph_options_default(&o);
  o.benefit_runs = 0;
  o.check_numerics = false; /* every run fused, the first one too */
  opd_compiled_graph *cg = NULL;
  bool hit = false;
  ck_assert_msg(opd_graph_compile(g, &o, cache, &cg, &hit) == 0, "compile: %s", opd_last_error());
  ck_assert(hit == want_hit);
  return cg;
}

/* t(x) -> add(., .) -> mul(., .) -> `last`: the product is a planned intermediate whose
 * define-time layout is the transpose's, so `contiguous` and `reshape` copy it at define
 * time, while at run time its planned buffer is contiguous and they return a view of it. */
static opd_graph *planned_graph(const char *last) {
  opd_graph *g = gnew();
  int x = IN(g, 3, 4);
  int t = NODE(g, "aten::t", R(x));
  int a = NODE(g, "aten::add.Tensor", R(t), R(t), DEF);
  int m = NODE(g, "aten::mul.Tensor", R(a), R(a));
  if (strcmp(last, "aten::contiguous") == 0)
    OUT(g, NODE(g, last, R(m), DEF));
  else
    OUT(g, NODE(g, last, R(m), INTS(12)));
  return g;
}

/* (2 x[j][i])^2, element k of the [4, 3] result (or of its [12] reshape). */
static double planned_expected(const opd_tensor *x, int64_t k) {
  int64_t i = k / 3, j = k % 3;
  double s = 2.0 * at(x, j * 4 + i);
  return s * s;
}

static void check_planned(const opd_tensor *out, const opd_tensor *x, const char *who) {
  ck_assert_int_eq(out->numel, 12);
  for (int64_t k = 0; k < 12; k++)
    ck_assert_msg(at(out, k) == planned_expected(x, k), "%s: element %lld: %g, expected %g", who,
                  (long long)k, at(out, k), planned_expected(x, k));
}

static void check_planned_buffer_isolated(const char *last) {
  opd_graph_cache *cache;
  ck_assert_int_eq(opd_graph_cache_new(4, &cache), 0);
  opd_compiled_graph *ga = define(cache, planned_graph(last), false);
  opd_tensor *xa = mk(OPD_FLOAT32, SHAPE(3, 4), VALS(1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12));
  opd_tensor *xb = mk(OPD_FLOAT32, SHAPE(3, 4), VALS(-1, -2, -3, -4, -5, -6, -7, -8, 0, 1, 2, 3));
  opd_tensor *ra, *rb;
  grun(ga, &xa, 1, &ra, 1);
  ck_assert_uint_gt(ga->plan->nbuffers, 0); /* the product is planned */
  check_planned(ra, xa, "A");
  opd_compiled_graph *gb = define(cache, planned_graph(last), true);
  ck_assert_ptr_eq(ga, gb);
  grun(gb, &xb, 1, &rb, 1);
  check_planned(rb, xb, "B");
  check_planned(ra, xa, "A after B's run"); /* B's run wrote the buffer, not A's result */
  ck_assert(!opd_tensor_shares_storage(ra, rb));
  fill(ra, 42.0);
  check_planned(rb, xb, "B after A wrote its result");
  opd_tensor *rb2;
  grun(gb, &xb, 1, &rb2, 1); /* and the graph's next run computes from scratch */
  check_planned(rb2, xb, "B's second run");
  opd_tensor_release(rb2);
  opd_tensor_release(ra);
  opd_tensor_release(rb);
  opd_tensor_release(xa);
  opd_tensor_release(xb);
  opd_compiled_graph_release(ga);
  opd_compiled_graph_release(gb);
  opd_graph_cache_free(cache);
}

START_TEST(test_contiguous_of_planned_buffer_is_a_copy) {
  check_planned_buffer_isolated("aten::contiguous");
}
END_TEST

START_TEST(test_reshape_of_planned_buffer_is_a_copy) {
  check_planned_buffer_isolated("aten::reshape");
}
END_TEST

/* An output that is the graph's constant (a literal's alias, a wrapped number unsqueezed):
 * writing it changes neither later runs nor a later definition with the same literal. */
static opd_graph *literal_graph(const opd_tensor *lit) {
  opd_graph *g = gnew();
  IN(g, 2);
  OUT(g, NODE(g, "aten::alias", V(T((opd_tensor *)lit))));
  return g;
}

static opd_graph *wrapped_graph(void) {
  opd_graph *g = gnew();
  IN(g, 2);
  OUT(g, NODE(g, "aten::unsqueeze", V(D(3.0)), V(I(0))));
  return g;
}

START_TEST(test_constants_are_read_only) {
  opd_graph_cache *cache;
  ck_assert_int_eq(opd_graph_cache_new(4, &cache), 0);
  opd_tensor *lit = mk(OPD_FLOAT32, SHAPE(2), VALS(5, 6));
  opd_tensor *x = mk(OPD_FLOAT32, SHAPE(2), VALS(0, 0));
  for (int which = 0; which < 2; which++) {
    opd_compiled_graph *ga = define(cache, which ? wrapped_graph() : literal_graph(lit), false);
    opd_tensor *ra;
    grun(ga, &x, 1, &ra, 1);
    ck_assert_uint_eq(ga->out_checked[0], 1);
    double first = at(ra, 0);
    ck_assert(first == (which ? 3.0 : 5.0));
    fill(ra, -1.0); /* A writes its result */
    opd_compiled_graph *gb = define(cache, which ? wrapped_graph() : literal_graph(lit), true);
    opd_tensor *rb;
    grun(gb, &x, 1, &rb, 1);
    ck_assert_msg(at(rb, 0) == first, "B reads %g, the constant is %g", at(rb, 0), first);
    ck_assert(!opd_tensor_shares_storage(ra, rb));
    opd_tensor_release(ra);
    opd_tensor_release(rb);
    opd_compiled_graph_release(ga);
    opd_compiled_graph_release(gb);
  }
  /* the caller's literal is its own: writing it after the definition changes nothing */
  opd_compiled_graph *gc = define(cache, literal_graph(lit), true);
  fill(lit, 9.0);
  opd_tensor *rc;
  grun(gc, &x, 1, &rc, 1);
  ck_assert(at(rc, 0) == 5.0 && at(rc, 1) == 6.0);
  opd_tensor_release(rc);
  opd_compiled_graph_release(gc);
  opd_tensor_release(lit);
  opd_tensor_release(x);
  opd_graph_cache_free(cache);
}
END_TEST

/* What a run pays: an output that reads no constant and no planned buffer is handed over as
 * the kernel made it, and a view of an input stays a view of the caller's input. */
START_TEST(test_outputs_without_graph_memory_are_not_copied) {
  opd_graph *g = gnew();
  int x = IN(g, 2, 3);
  int e = NODE(g, "aten::exp", R(x));
  int v = NODE(g, "aten::t", R(x));
  int s = NODE(g, "aten::add.Tensor", R(x), V(D(1.0)), DEF); /* reads a wrapped number */
  OUT(g, e, v, s);
  opd_compiled_graph *cg = gcompile_with(g, NULL, 0, NULL);
  ck_assert_uint_eq(cg->out_checked[0], 0);
  ck_assert_uint_eq(cg->out_checked[1], 0);
  ck_assert_uint_eq(cg->out_checked[2], 1);
  opd_tensor *in = mk(OPD_FLOAT32, SHAPE(2, 3), VALS(0, 1, 2, 3, 4, 5)), *out[3];
  grun(cg, &in, 1, out, 3);
  ck_assert(opd_tensor_shares_storage(out[1], in));
  for (int64_t k = 0; k < 6; k++) ck_assert(at(out[2], k) == at(in, k) + 1.0);
  for (int i = 0; i < 3; i++) opd_tensor_release(out[i]);
  opd_tensor_release(in);
  opd_compiled_graph_release(cg);
}
END_TEST

/* add(x, y) -> gt(., y) -> sum: the comparison is a bool intermediate of a fused group, in a
 * buffer of bools of its own; the result is the unfused graph's. */
static opd_graph *bool_graph(void) {
  opd_graph *g = gnew();
  int x = IN(g, 4, 4), y = IN(g, 4, 4);
  int a = NODE(g, "aten::add.Tensor", R(x), R(y), DEF);
  int c = NODE(g, "aten::gt.Tensor", R(a), R(y));
  OUT(g, NODE(g, "aten::sum", R(c), V(NONE)));
  return g;
}

START_TEST(test_bool_intermediate_has_a_bool_buffer) {
  opd_compiled_graph *fused = gcompile_with(bool_graph(), NULL, 0, NULL);
  opd_compiled_graph *plain = GCOMPILE(bool_graph(), "dce");
  const opd__plan *p = fused->plan;
  bool bool_buffer = false;
  for (uint32_t v = 0; v < fused->g->nvalues; v++) {
    if (p->buffer_of[v] < 0) continue;
    ck_assert_int_eq(p->buffer_dtype[p->buffer_of[v]], opd__gvalue_dtype(fused->g, v));
    bool_buffer = bool_buffer || p->buffer_dtype[p->buffer_of[v]] == OPD_BOOL;
  }
  ck_assert(bool_buffer);
  opd_tensor *in[2];
  in[0] = mk(OPD_FLOAT32, SHAPE(4, 4), NULL);
  in[1] = mk(OPD_FLOAT32, SHAPE(4, 4), NULL);
  for (int64_t k = 0; k < 16; k++) {
    ((float *)opd_tensor_data(in[0]))[k] = (float)(k % 3) - 1.0f;
    ((float *)opd_tensor_data(in[1]))[k] = (float)k * 0.25f;
  }
  for (int rep = 0; rep < 2; rep++) {
    opd_tensor *a, *b;
    grun(fused, in, 2, &a, 1);
    grun(plain, in, 2, &b, 1);
    ck_assert_int_eq(opd_tensor_dtype(a), opd_tensor_dtype(b));
    ck_assert(at(a, 0) == at(b, 0));
    opd_tensor_release(a);
    opd_tensor_release(b);
  }
  opd_tensor_release(in[0]);
  opd_tensor_release(in[1]);
  opd_compiled_graph_release(fused);
  opd_compiled_graph_release(plain);
}
END_TEST

/* A float32 and a bool intermediate of one length, each used once and one after the other,
 * would share one buffer if buffers had no dtype; the check after planning holds for every
 * planned value (random pointwise chains mixing both dtypes). */
START_TEST(test_planned_buffers_fit_every_use) {
  static const char *const ops[] = {"aten::mul.Tensor", "aten::gt.Tensor", "aten::where.self",
                                    "aten::add.Tensor"};
  uint64_t rng = 7;
  for (int trial = 0; trial < 40; trial++) {
    opd_graph *g = gnew();
    int x = IN(g, 8, 5), y = IN(g, 8, 5);
    int f = x, b = -1;
    for (int k = 0; k < 8; k++) {
      rng = rng * 6364136223846793005u + 1442695040888963407u;
      int op = (int)((rng >> 33) % 4);
      if (op == 0) f = NODE(g, ops[0], R(f), R(y));
      if (op == 1) b = NODE(g, ops[1], R(f), R(y));
      if (op == 2 && b >= 0) f = NODE(g, ops[2], R(b), R(f), R(y));
      if (op == 3) f = NODE(g, "aten::sum.dim_IntList", R(f), INTS(1), V(B(true)), V(NONE));
      if (op == 3) f = NODE(g, ops[3], R(f), R(y), DEF);
    }
    OUT(g, NODE(g, "aten::sum", R(f), V(NONE)));
    opd_compiled_graph *cg = gcompile_with(g, NULL, 0, NULL);
    const opd__plan *p = cg->plan;
    for (uint32_t v = 0; v < cg->g->nvalues; v++) {
      if (p->buffer_of[v] < 0) continue;
      opd_dtype dt = opd__gvalue_dtype(cg->g, v);
      ck_assert_int_eq(p->buffer_dtype[p->buffer_of[v]], dt);
      ck_assert_uint_ge(p->buffer_bytes[p->buffer_of[v]],
                        (uint64_t)cg->g->values[v].meta->numel * opd_dtype_size(dt));
    }
    opd_compiled_graph_release(cg);
  }
}
END_TEST

/* A Python number a float32 tensor cannot hold is refused when the node is added, naming
 * the node and the argument. */
START_TEST(test_wrapped_number_out_of_range_names_node) {
  opd_graph *g = gnew();
  int x = IN(g, 3);
  int y = NODE(g, "aten::exp", R(x));
  ck_assert_int_eq(TRY(g, "aten::add.Tensor", R(y), V(D(1e308)), DEF), OPD_EINVAL);
  ck_assert_str_eq(opd_last_error(),
                   "graph node 1 (aten::add.Tensor), argument 'other': a number for a float32 "
                   "tensor: value cannot be converted to type float without overflow");
  ck_assert_int_ge(TRY(g, "aten::add.Tensor", R(y), V(D(3e38)), DEF), 0); /* within float */
  opd_graph_free(g);
}
END_TEST

/* ---- the charge of a graph ([Note: The charge of a graph] in graph/src/footprint.c) ---- */

/* libc's allocator, counting the usable bytes of the blocks live (blocks made before it
 * was installed and freed while it is are counted off too: a measurement takes a delta
 * over work that frees nothing older). */
static _Atomic int64_t live_bytes;
static void *count_malloc(size_t n) {
  void *p = malloc(n);
  if (p) atomic_fetch_add(&live_bytes, (int64_t)malloc_usable_size(p));
  return p;
}
static void *count_calloc(size_t n, size_t size) {
  void *p = calloc(n, size);
  if (p) atomic_fetch_add(&live_bytes, (int64_t)malloc_usable_size(p));
  return p;
}
static void *count_realloc(void *p, size_t n) {
  int64_t old = p ? (int64_t)malloc_usable_size(p) : 0;
  void *q = realloc(p, n);
  if (q) atomic_fetch_add(&live_bytes, (int64_t)malloc_usable_size(q) - old);
  return q;
}
static void count_free(void *p) {
  if (p) atomic_fetch_sub(&live_bytes, (int64_t)malloc_usable_size(p));
  free(p);
}

/* A chain of n pointwise nodes with distinct constants, a literal and a fused group whose
 * intermediates are planned: what a hostile define that is all graph and no tensor makes. */
static opd_graph *chain_graph(int n) {
  opd_graph *g = gnew();
  opd_tensor *lit = mk(OPD_FLOAT32, SHAPE(4, 16), NULL);
  int x = IN(g, 4, 16);
  int v = NODE(g, "aten::add.Tensor", R(x), V(T(lit)), DEF);
  opd_tensor_release(lit);
  for (int i = 0; i < n; i++)
    v = i % 7 == 3 ? NODE(g, "aten::sum.dim_IntList", R(v), INTS(1), V(B(true)), V(NONE))
        : i % 2    ? NODE(g, "aten::mul.Tensor", R(v), R(x))
                   : NODE(g, "aten::add.Scalar", R(v), V(D(0.5 + i)), V(I(1)));
  OUT(g, v);
  return g;
}

START_TEST(test_charge_covers_what_a_graph_holds) {
  static const int sizes[] = {1, 40, 1500};
  for (int k = 0; k < 3; k++) {
    opd_graph *g = chain_graph(sizes[k]);
    opd_tensor *in = mk(OPD_FLOAT32, SHAPE(4, 16), NULL), *out;
    uint64_t estimate = opd_graph_define_estimate(g);
    opd_cpu_allocator_empty_cache();
    ck_assert_int_eq(opd_replace_allocator(count_malloc, count_realloc, count_calloc, count_free),
                     0);
    int64_t before = atomic_load(&live_bytes);
    opd_compiled_graph *cg = gcompile_with(g, NULL, 0, NULL);
    grun(cg, &in, 1, &out, 1); /* the run context it keeps */
    opd_tensor_release(out);
    opd_tensor_slab_flush_thread();
    opd_cpu_allocator_empty_cache();
    int64_t held = atomic_load(&live_bytes) - before;
    ck_assert_int_eq(opd_replace_allocator(NULL, NULL, NULL, NULL), 0);
    uint64_t charged = opd_compiled_graph_bytes(cg);
    ck_assert_msg(charged <= 4 * (uint64_t)held + 65536, "%d nodes: %llu bytes charged, %lld held",
                  sizes[k], (unsigned long long)charged, (long long)held);
    ck_assert_msg(estimate >= cg->host_bytes, "%d nodes: estimate %llu < %llu", sizes[k],
                  (unsigned long long)estimate, (unsigned long long)cg->host_bytes);
    opd_compiled_graph_release(cg);
    opd_tensor_release(in);
  }
}
END_TEST

/* The host bytes count as CPU memory in use while the compiled graph lives, within the CPU
 * allocator's limit (max_bytes_total in the daemon). */
START_TEST(test_graph_counts_in_cpu_memory) {
  opd_memory_stats st;
  opd_memory_stats_get(OPD_DEVICE_CPU, &st);
  uint64_t before = st.in_use;
  opd_compiled_graph *cg = gcompile_with(chain_graph(200), NULL, 0, NULL);
  opd_memory_stats_get(OPD_DEVICE_CPU, &st);
  ck_assert_uint_ge(st.in_use, before + cg->host_bytes);
  opd_compiled_graph_release(cg);
  opd_memory_stats_get(OPD_DEVICE_CPU, &st);
  uint64_t after = st.in_use, limit = st.limit;
  opd_cpu_allocator_set_limit(after + 4096);
  opd_graph *g = chain_graph(200);
  opd_compiled_graph *none = NULL;
  ck_assert_int_eq(opd_graph_compile(g, NULL, NULL, &none, NULL), OPD_ERESOURCE);
  ck_assert_msg(strstr(opd_last_error(), "max_bytes_total"), "%s", opd_last_error());
  opd_cpu_allocator_set_limit(limit);
  opd_memory_stats_get(OPD_DEVICE_CPU, &st);
  ck_assert_uint_eq(st.in_use, after);
}
END_TEST

Suite *opd_test_graph_isolation_suite(void) {
  Suite *s = suite_create("graph_isolation");
  TCase *tc = tcase_create("core");
  tcase_add_test(tc, test_contiguous_of_planned_buffer_is_a_copy);
  tcase_add_test(tc, test_reshape_of_planned_buffer_is_a_copy);
  tcase_add_test(tc, test_constants_are_read_only);
  tcase_add_test(tc, test_outputs_without_graph_memory_are_not_copied);
  tcase_add_test(tc, test_bool_intermediate_has_a_bool_buffer);
  tcase_add_test(tc, test_planned_buffers_fit_every_use);
  tcase_add_test(tc, test_wrapped_number_out_of_range_names_node);
  tcase_add_test(tc, test_charge_covers_what_a_graph_holds);
  tcase_add_test(tc, test_graph_counts_in_cpu_memory);
  suite_add_tcase(s, tc);
  return s;
}

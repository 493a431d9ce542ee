/* test_graph_isolation.c: a compiled graph shared by several callers (the cache) never hands
 * one of them its own memory ([Note: A compiled graph's memory never reaches a caller] in
 * graph/src/exec/outputs.c): outputs that the run makes as views of a planned buffer or of a
 * constant are copies, so another caller's run never changes them and writing them never
 * changes another caller's results or the graph's constants; planned buffers are checked
 * against every use ([Note: Buffer planning]); a wrapped number its dtype cannot hold is
 * refused at its node; planned buffers are cleared when another owner's run takes them, and
 * a fused group's tiles stop when its owner is cancelled; what a graph holds is charged,
 * its fused programs and a concurrent run's context included. The daemon's side (two
 * sessions, the charge of graph definitions) is in test_graph_server.c. */
#include <check.h>
#include <malloc.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "plan/c_compiler.h"
#include "exec/compiled.h"
#include "opd/allocator.h"
#include "opd/memory.h"
#include "test_files.h"
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

/* ---- owners of a compiled graph's memory ([Note: Memory cleared between owners] in
 * opd/allocator.h, [Note: Cancelling long work] in opd/cancel.h) ---- */

typedef struct owner {
  _Atomic uint64_t held;
  opd_mem_budget budget;
} owner;

static void owner_init(owner *o) {
  atomic_init(&o->held, 0);
  o->budget = (opd_mem_budget){.held = &o->held,
                               .limit = UINT64_MAX,
                               .limit_name = "limit",
                               .owner = "owner",
                               .owner_id = opd_mem_owner_new()};
}

/* exp(mul(add(x, x), x)) of an [n] x: one fused group, its result the graph's, made by the
 * group's run. */
static opd_compiled_graph *exp_chain(int64_t n) {
  opd_graph *g = gnew();
  int x = IN(g, n);
  int a = NODE(g, "aten::add.Tensor", R(x), R(x), DEF);
  int m = NODE(g, "aten::mul.Tensor", R(a), R(x));
  OUT(g, NODE(g, "aten::exp", R(m)));
  opd_compiled_graph *cg = gcompile_with(g, NULL, 0, NULL);
  ck_assert_uint_eq(cg->plan->ngroups, 1);
  return cg;
}

/* m = mul(add(x, x), x) of an [n] x, then m + sum(m): m is the fused group's result, used
 * by the reduction and the last add, in a planned buffer. */
static opd_compiled_graph *planned_chain(int64_t n) {
  opd_graph *g = gnew();
  int x = IN(g, n);
  int a = NODE(g, "aten::add.Tensor", R(x), R(x), DEF);
  int m = NODE(g, "aten::mul.Tensor", R(a), R(x));
  int s = NODE(g, "aten::sum.dim_IntList", R(m), INTS(0), V(B(true)), V(NONE));
  OUT(g, NODE(g, "aten::add.Tensor", R(m), R(s), DEF));
  opd_compiled_graph *cg = gcompile_with(g, NULL, 0, NULL);
  ck_assert_uint_gt(cg->plan->nbuffers, 0);
  return cg;
}

/* Nonzero floats in the planned buffers of the graph's spare run context. */
static int64_t planned_nonzero(opd_compiled_graph *cg) {
  ck_assert_ptr_nonnull(cg->spare);
  int64_t k = 0;
  for (uint32_t b = 0; b < cg->plan->nbuffers; b++) {
    const opd_tensor *t = cg->spare->buffers[b];
    const float *f = opd_tensor_data(t);
    for (uint64_t i = 0; i < t->storage->nbytes / sizeof(float); i++) k += f[i] != 0;
  }
  return k;
}

/* A run context that another owner's run takes has its planned buffers zeroed before the
 * run's steps; one its own owner takes back is not (the hot path pays nothing). A run that
 * stops before its first step (cancelled) leaves the context as it took it, which shows what
 * the next run would have found there. */
START_TEST(test_planned_buffers_cleared_between_owners) {
  owner x, y;
  owner_init(&x);
  owner_init(&y);
  opd_compiled_graph *cg = planned_chain(1000);
  opd_tensor *in = mk(OPD_FLOAT32, SHAPE(1000), NULL), *out;
  for (int64_t k = 0; k < 1000; k++) ((float *)opd_tensor_data(in))[k] = 1.0f + (float)(k % 5);
  opd_mem_budget_install(&x.budget);
  grun(cg, &in, 1, &out, 1); /* x's values in the buffers */
  opd_tensor_release(out);
  int64_t written = planned_nonzero(cg);
  ck_assert_int_ge(written, 1000);
  atomic_store(&x.budget.cancelled, true); /* x again: the buffers as x left them */
  ck_assert_int_eq(opd_compiled_graph_run(cg, &in, 1, &out, 1), OPD_ECANCELED);
  ck_assert_int_eq(planned_nonzero(cg), written);
  opd_mem_budget_uninstall();
  opd_mem_budget_install(&y.budget);
  atomic_store(&y.budget.cancelled, true); /* y: zeroed before y's first step */
  ck_assert_int_eq(opd_compiled_graph_run(cg, &in, 1, &out, 1), OPD_ECANCELED);
  ck_assert_msg(planned_nonzero(cg) == 0, "another owner's values were left in a planned buffer");
  atomic_store(&y.budget.cancelled, false);
  grun(cg, &in, 1, &out, 1); /* and y's run computes from the cleared buffers */
  double sum = 0;
  for (int64_t k = 0; k < 1000; k++) sum += 2 * at(in, k) * at(in, k);
  for (int64_t k = 0; k < 1000; k++) {
    double want = 2 * at(in, k) * at(in, k) + sum;
    ck_assert_msg(fabs(at(out, k) - want) <= 1e-5 * want, "element %lld: %g, expected %g",
                  (long long)k, at(out, k), want);
  }
  opd_tensor_release(out);
  opd_mem_budget_uninstall();
  opd_tensor_release(in);
  opd_compiled_graph_release(cg);
}
END_TEST

/* The allocator of the fused-tile test: a fresh block of at least `watch` bytes sets the
 * owner's cancel flag as it is handed out (the fused group's result, made after the graph's
 * step looked at the flag and before its tiles run); freeing that block counts its nonzero
 * floats, the elements the tiles wrote. */
static struct {
  size_t watch;
  _Atomic bool *flag;
  void *block;
  size_t bytes;
  int64_t written;
} tile_watch;

static void *watch_malloc(size_t n) {
  return malloc(n);
}
static void *watch_realloc(void *p, size_t n) {
  return realloc(p, n);
}
static void *watch_calloc(size_t n, size_t size) {
  void *p = calloc(n, size);
  if (p && n * size >= tile_watch.watch && !tile_watch.block) {
    tile_watch.block = p;
    tile_watch.bytes = n * size;
    if (tile_watch.flag) atomic_store(tile_watch.flag, true);
  }
  return p;
}
static void watch_free(void *p) {
  if (p && p == tile_watch.block) {
    const float *f = p;
    for (size_t i = 0; i < tile_watch.bytes / sizeof(float); i++) tile_watch.written += f[i] != 0;
    tile_watch.block = NULL;
  }
  free(p);
}

/* Runs exp_chain(n) on in with the watching allocator: the run's result code, and the
 * elements of the fused group's result that its tiles wrote. */
static int watched_run(opd_compiled_graph *cg, opd_tensor *in, owner *o, bool cancel,
                       int64_t *written, char *msg, size_t cap) {
  opd_tensor *out = NULL;
  opd_cpu_allocator_empty_cache();
  tile_watch.watch = (size_t)in->numel * sizeof(float);
  tile_watch.flag = cancel ? &o->budget.cancelled : NULL;
  tile_watch.block = NULL;
  tile_watch.written = 0;
  ck_assert_int_eq(opd_replace_allocator(watch_malloc, watch_realloc, watch_calloc, watch_free), 0);
  opd_mem_budget_install(&o->budget);
  int rc = opd_compiled_graph_run(cg, &in, 1, &out, 1);
  snprintf(msg, cap, "%s", rc ? opd_last_error() : "");
  if (rc == 0) opd_tensor_release(out);
  opd_mem_budget_uninstall();
  opd_cpu_allocator_empty_cache(); /* the result's block: counted as it is freed */
  ck_assert_int_eq(opd_replace_allocator(NULL, NULL, NULL, NULL), 0);
  ck_assert_ptr_null(tile_watch.block);
  *written = tile_watch.written;
  return rc;
}

/* A fused group's tiles look at the cancel flag: cancelled as its result is allocated (after
 * the graph's step looked), the run fails "cancelled" with the tiles stopped at their first
 * look, most of the result unwritten; uncancelled, the same run writes every element. */
START_TEST(test_fused_tiles_stop_when_cancelled) {
  const int64_t n = (int64_t)1 << 22;
  owner o;
  owner_init(&o);
  opd_compiled_graph *cg = exp_chain(n);
  opd_tensor *in = mk(OPD_FLOAT32, SHAPE(n), NULL);
  for (int64_t k = 0; k < n; k++) ((float *)opd_tensor_data(in))[k] = (float)(k % 3) * 0.25f;
  opd_tensor *out;
  grun(cg, &in, 1, &out, 1); /* the run context and its planned buffers, kept */
  opd_tensor_release(out);
  int64_t written;
  char msg[300];
  ck_assert_int_eq(watched_run(cg, in, &o, false, &written, msg, sizeof msg), 0);
  ck_assert_int_ge(written, n); /* exp: no element is 0 */
  ck_assert_int_eq(watched_run(cg, in, &o, true, &written, msg, sizeof msg), OPD_ECANCELED);
  ck_assert_str_eq(msg, "a graph run: cancelled (its session closed, or the daemon is stopping)");
  ck_assert_msg(written < n / 4, "%lld of %lld elements written after the cancel",
                (long long)written, (long long)n);
  opd_tensor_release(in);
  opd_compiled_graph_release(cg);
}
END_TEST

/* ---- the charge of a graph ([Note: The charge of a graph] in graph/src/exec/footprint.c) ---- */

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
    /* [Note: The estimate of a graph's charge]: above the count, not far */
    ck_assert_msg(estimate >= cg->host_bytes && estimate <= 2 * cg->host_bytes,
                  "%d nodes: estimate %llu, charged %llu", sizes[k], (unsigned long long)estimate,
                  (unsigned long long)cg->host_bytes);
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

/* A run that finds the graph's one context taken (by a concurrent run: taken away here)
 * makes one of its own, charged to the budget installed before it is made: past the limit the
 * run is refused naming it, within it the run succeeds, and the context is freed with its
 * charge when the run ends, the graph keeping only its own. */
START_TEST(test_concurrent_run_context_charged) {
  opd_compiled_graph *cg = planned_chain(4096);
  opd_tensor *in = mk(OPD_FLOAT32, SHAPE(4096), NULL), *out;
  grun(cg, &in, 1, &out, 1);
  opd_tensor_release(out);
  ck_assert_uint_eq(cg->contexts, 1);
  opd__run_ctx *busy = cg->spare; /* as if a concurrent run held it */
  cg->spare = NULL;
  uint64_t host = opd__run_ctx_host_bytes(cg);
  owner small, room;
  owner_init(&small);
  owner_init(&room);
  small.budget.limit = host / 2;
  small.budget.limit_name = "max_bytes_held";
  opd_mem_budget_install(&small.budget);
  ck_assert_int_eq(opd_compiled_graph_run(cg, &in, 1, &out, 1), OPD_ERESOURCE);
  ck_assert_msg(strstr(opd_last_error(), "max_bytes_held") &&
                    strstr(opd_last_error(), "a run context of its own"),
                "%s", opd_last_error());
  opd_mem_budget_uninstall();
  ck_assert_uint_eq(atomic_load(&small.held), 0);
  opd_memory_stats st;
  opd_memory_stats_get(OPD_DEVICE_CPU, &st);
  uint64_t in_use = st.in_use;
  opd_mem_budget_install(&room.budget);
  grun(cg, &in, 1, &out, 1);
  opd_mem_budget_uninstall();
  ck_assert_ptr_null(cg->spare); /* freed, not kept */
  ck_assert_uint_eq(cg->contexts, 1);
  ck_assert_uint_eq(atomic_load(&room.held), 0); /* the result's charge taken by no one */
  opd_tensor_release(out);
  opd_tensor_slab_flush_thread();
  opd_memory_stats_get(OPD_DEVICE_CPU, &st);
  ck_assert_uint_le(st.in_use, in_use);
  cg->spare = busy;
  opd_tensor_release(in);
  opd_compiled_graph_release(cg);
}
END_TEST

/* ---- the C tier's modules ([Note: The programs of fused groups are charged] in
 * graph/src/exec/footprint.c) ---- */

static const char *compiler(void) {
  const char *cc = getenv("CC");
  return cc && cc[0] ? cc : "cc";
}

/* Starts the tier with `cc` in a new private directory (dir: 64 bytes). */
static void start_tier(char *dir, const char *cc) {
  snprintf(dir, 64, "/tmp/opd-iso-tier-XXXXXX");
  ck_assert_ptr_nonnull(mkdtemp(dir));
  opd_graph_c_tier_options o = {.cc = cc, .dir = dir, .timeout_ms = 60000};
  ck_assert_msg(opd_graph_c_tier_start(&o) == 0, "start: %s", opd_last_error());
}

static void stop_tier(const char *dir) {
  opd_graph_c_tier_stop();
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
  ck_assert_int_eq(system(cmd), 0);
}

/* Runs exp_chain(n)'s graph until its group's module is loaded or refused; its state. */
static opd__c_state run_until_compiled(opd_compiled_graph *cg, int64_t n) {
  opd_tensor *in = mk(OPD_FLOAT32, SHAPE(n), NULL), *out;
  grun(cg, &in, 1, &out, 1); /* submits the program */
  opd_tensor_release(out);
  opd_graph_c_tier_drain();
  grun(cg, &in, 1, &out, 1);
  opd_tensor_release(out);
  opd_tensor_release(in);
  pthread_mutex_lock(&cg->lock);
  opd__c_state st = (opd__c_state)cg->states[0].c_state;
  pthread_mutex_unlock(&cg->lock);
  return st;
}

/* A graph compiled while the tier runs is charged its group's module before it is compiled;
 * the module loaded holds no more than that; a graph compiled while the tier is off is not
 * charged one and never submits its groups. */
START_TEST(test_c_tier_module_charged) {
  if (opd_test_no_compiler(compiler(), "test_c_tier_module_charged")) return;
  opd_compiled_graph *off = exp_chain(4096);
  ck_assert(!off->c_tier);
  ck_assert_uint_eq(opd__group_program_bytes(off, 0), 0);
  char dir[64];
  start_tier(dir, compiler());
  opd_compiled_graph *on = exp_chain(4096);
  ck_assert(on->c_tier);
  uint64_t charged = opd__group_program_bytes(on, 0);
  ck_assert_uint_ge(charged, 16 << 10); /* a module maps four pages at least */
  ck_assert_uint_eq(opd_compiled_graph_bytes(on), opd_compiled_graph_bytes(off) + charged);
  ck_assert_int_eq(run_until_compiled(on, 4096), OPD__C_READY);
  uint64_t held = opd__cc_module_bytes(on->states[0].c_module);
  ck_assert_msg(held >= 16 << 10 && held <= charged, "the module holds %llu bytes, charged %llu",
                (unsigned long long)held, (unsigned long long)charged);
  ck_assert_int_eq(run_until_compiled(off, 4096), OPD__C_INELIGIBLE);
  opd_compiled_graph_release(on);
  opd_compiled_graph_release(off);
  stop_tier(dir);
}
END_TEST

/* A module that maps more than its group was charged (a compiler that adds a megabyte of
 * zeroed data) is not used: the group stays with the interpreter, saying why. */
START_TEST(test_c_tier_module_past_its_charge_refused) {
  if (opd_test_no_compiler(compiler(), "test_c_tier_module_past_its_charge_refused")) return;
  char dir[64], cc[128];
  start_tier(dir, compiler()); /* for its directory */
  opd_graph_c_tier_stop();
  snprintf(cc, sizeof cc, "%s/padding-cc", dir);
  FILE *f = fopen(cc, "w");
  ck_assert_ptr_nonnull(f);
  fprintf(f,
          "#!/bin/sh\n"
          "case \"$1\" in -dump*) exec %s \"$@\";; esac\n"
          "printf 'char opd_padding[1 << 20];\\n' > padding.c\n"
          "exec %s \"$@\" padding.c\n",
          compiler(), compiler());
  ck_assert_int_eq(fclose(f), 0);
  ck_assert_int_eq(chmod(cc, 0700), 0);
  opd_graph_c_tier_options o = {.cc = cc, .dir = dir, .timeout_ms = 60000};
  ck_assert_msg(opd_graph_c_tier_start(&o) == 0, "%s", opd_last_error());
  opd_compiled_graph *cg = exp_chain(4096);
  ck_assert_int_eq(run_until_compiled(cg, 4096), OPD__C_FAILED);
  ck_assert_ptr_null(cg->states[0].c_module);
  ck_assert_msg(strstr(cg->states[0].c_why, "charged for it"), "%s", cg->states[0].c_why);
  opd_compiled_graph_release(cg);
  stop_tier(dir);
}
END_TEST

Suite *opd_test_graph_isolation_suite(void) {
  Suite *s = suite_create("graph_isolation");
  TCase *tc = tcase_create("core");
  tcase_set_timeout(tc, 120); /* the C tier's compiles */
  tcase_add_test(tc, test_contiguous_of_planned_buffer_is_a_copy);
  tcase_add_test(tc, test_reshape_of_planned_buffer_is_a_copy);
  tcase_add_test(tc, test_constants_are_read_only);
  tcase_add_test(tc, test_outputs_without_graph_memory_are_not_copied);
  tcase_add_test(tc, test_bool_intermediate_has_a_bool_buffer);
  tcase_add_test(tc, test_planned_buffers_fit_every_use);
  tcase_add_test(tc, test_wrapped_number_out_of_range_names_node);
  tcase_add_test(tc, test_planned_buffers_cleared_between_owners);
  tcase_add_test(tc, test_fused_tiles_stop_when_cancelled);
  tcase_add_test(tc, test_concurrent_run_context_charged);
  tcase_add_test(tc, test_c_tier_module_charged);
  tcase_add_test(tc, test_c_tier_module_past_its_charge_refused);
  tcase_add_test(tc, test_charge_covers_what_a_graph_holds);
  tcase_add_test(tc, test_graph_counts_in_cpu_memory);
  suite_add_tcase(s, tc);
  return s;
}

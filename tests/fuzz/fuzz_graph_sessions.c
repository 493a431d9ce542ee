/* fuzz_graph_sessions.c: two sessions sharing one compiled graph never see each other's
 * values ([Note: A compiled graph's memory never reaches a caller] in graph/src/exec/outputs.c).
 *
 * The input is the bytes of a DefineGraph message, as fuzz_graph.c's (its seeds are that
 * driver's). Two sessions of one graph context (one cache) define it, the second a cache
 * hit on the first's compiled graph; each runs it on inputs of its own (other values in
 * each session), through opd__execute as the workers run requests, when its inputs are CPU
 * tensors of at most MAX_NUMEL elements and its estimated cost is at most MAX_COST:
 *  - A runs twice (its second run past the numerics check: the fused programs and planned
 *    buffers in use) and keeps its results; B runs and keeps its own;
 *  - A's results are what they were before B ran; no result of A shares a storage with one
 *    of B's;
 *  - A writes every result it holds (fill_); B's results are what they were, and B's next
 *    run gives the same values as its first (the graph's constants unchanged);
 *  - A defines the graph again (a cache hit) and runs it: the values of A's second run.
 * Values are compared bit for bit (a steady graph computes the same bits from the same
 * inputs); the graph runs with the benefit check off, so its decisions do not change
 * between the runs compared. Once both sessions are destroyed and the graph context
 * stopped, the CPU allocator holds what it held before the input.
 *
 * Seeds: corpus/graph_sessions/, a copy of corpus/graph/ (make_graph_corpus.c).
 */
#include <string.h>

#include "arena.h"
#include "execute.h"
#include "fuzz_common.h"
#include "fuzz_execute.h"
#include "graphs.h"
#include "opd/allocator.h"
#include "opd/dispatcher.h"
#include "opd/error.h"
#include "opd/graph_exec.h"
#include "opd/memory.h"
#include "opd/tensor.h"
#include "opd_wire.h"
#include "session.h"

#define MAX_NUMEL        4096
#define MAX_COST         (1u << 20)
#define MAX_DEFINE_BYTES (1u << 20)
#define MAX_OUTPUTS      8
#define MAX_COMPARED     4096 /* elements of a result compared (an expand can be huge) */

static opd_server_config cfg;

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc, (void)argv;
  fuzz_execute_init(&cfg);
  cfg.max_literal_bytes = 1024;
  cfg.max_handles = 64;
  cfg.max_bytes_held = 8u << 20;
  cfg.max_graph_nodes = 64;
  cfg.max_graph_inputs = 8;
  cfg.max_graph_outputs = MAX_OUTPUTS;
  cfg.max_graph_arg_bytes = 4096;
  cfg.max_graphs = 4;
  cfg.graph_cache_size = 4;
  cfg.graph_benefit_runs = 0;
  return 0;
}

static Opd__V1__Response *request(opd__session *s, opd__job_kind kind, Opd__V1__Request *req,
                                  Opd__V1__Response__BodyCase success) {
  opd__job *j = fuzz_job_new(s, 64, kind);
  j->req = req;
  j->id = req->id;
  Opd__V1__Response *r = fuzz_execute(j, success);
  fuzz_job_free(j);
  return r;
}

/* A CPU tensor to the spec held by session s, its values from `seed` (0 and 1 for bool):
 * its handle, or 0 when the spec is not one to run on. */
static uint64_t input_for(opd__session *s, const Opd__V1__ValueSpec *spec, unsigned seed) {
  if ((spec->device && spec->device->type != OPD_DEVICE_CPU) || !opd_dtype_valid(spec->dtype) ||
      spec->n_shape > OPD_MAX_DIMS)
    return 0;
  int64_t numel = 1;
  for (size_t d = 0; d < spec->n_shape; d++) {
    if (spec->shape[d] < 0 || spec->shape[d] > MAX_NUMEL) return 0;
    numel *= spec->shape[d];
    if (numel > MAX_NUMEL) return 0;
  }
  opd_tensor *t = NULL;
  if (opd_tensor_empty(spec->shape, (int)spec->n_shape, (opd_dtype)spec->dtype,
                       (opd_device){OPD_DEVICE_CPU, -1}, &t) < 0)
    return 0;
  uint8_t *p = opd_tensor_data(t);
  size_t esize = opd_dtype_size((opd_dtype)spec->dtype), n = (size_t)numel * esize;
  for (size_t i = 0; i < n; i++) /* the low byte of each element: small, positive values */
    p[i] = i % esize == 0 ? (uint8_t)(spec->dtype == OPD__V1__DTYPE__BOOL ? (i + seed) & 1
                                                                          : (i * seed + 1) % 7)
                          : 0;
  uint64_t reserved = 0, handle = 0;
  int rc = opd__session_hold(s, t, &reserved, &handle);
  if (rc) opd_tensor_release(t);
  return rc == 0 ? handle : 0;
}

/* The first MAX_COMPARED elements of a result, in order, as bytes. */
typedef struct snapshot {
  size_t n;
  uint8_t bytes[MAX_COMPARED * 8];
} snapshot;

static void take_snapshot(const opd_tensor *t, snapshot *out) {
  size_t esize = opd_dtype_size(opd_tensor_dtype(t));
  int64_t n = t->numel < MAX_COMPARED ? t->numel : MAX_COMPARED;
  const uint8_t *base = opd_tensor_data(t);
  for (int64_t i = 0; i < n; i++) {
    int64_t off = 0, rest = i; /* opd_tensor_data is at the storage offset */
    for (int d = t->ndim - 1; d >= 0; d--) {
      int64_t size = opd_tensor_sizes(t)[d];
      off += (rest % size) * opd_tensor_strides(t)[d];
      rest /= size;
    }
    memcpy(out->bytes + (size_t)i * esize, base + (size_t)off * esize, esize);
  }
  out->n = (size_t)n * esize;
}

static bool same_snapshot(const snapshot *a, const snapshot *b) {
  return a->n == b->n && memcmp(a->bytes, b->bytes, a->n) == 0;
}

/* One run of graph g in session s on `inputs`: the results' tensors (borrowed from the
 * session's handles), or false when the run was refused (a kernel's error, a limit). */
static bool run_graph(opd__session *s, uint64_t g, uint64_t *inputs, size_t ninputs,
                      size_t noutputs, opd_tensor **results) {
  Opd__V1__RunGraph rg = OPD__V1__RUN_GRAPH__INIT;
  rg.graph = g;
  rg.inputs = inputs;
  rg.n_inputs = ninputs;
  Opd__V1__Request req = OPD__V1__REQUEST__INIT;
  req.id = 100;
  req.body_case = OPD__V1__REQUEST__BODY_RUN_GRAPH;
  req.run_graph = &rg;
  Opd__V1__Response *r = request(s, OPD__JOB_RUN_GRAPH, &req, OPD__V1__RESPONSE__BODY_CALL);
  bool ok = r->body_case == OPD__V1__RESPONSE__BODY_CALL;
  if (ok) {
    fuzz_check(r->call->n_results == noutputs, "a run of %zu outputs gave %zu results", noutputs,
               r->call->n_results);
    for (size_t i = 0; i < noutputs; i++) {
      fuzz_check(r->call->results[i]->value_case == OPD__V1__IVALUE__VALUE_TENSOR,
                 "a run's result %zu is not a tensor", i);
      results[i] = opd__session_lookup(s, r->call->results[i]->tensor);
      fuzz_check(results[i] != NULL, "a run's result %zu has no handle", i);
    }
  }
  fuzz_response_free(r);
  return ok;
}

static bool define(opd__session *s, const Opd__V1__DefineGraph *d, uint64_t id, bool *hit) {
  Opd__V1__DefineGraph copy = *d;
  copy.graph = id;
  Opd__V1__Request req = OPD__V1__REQUEST__INIT;
  req.id = 50;
  req.body_case = OPD__V1__REQUEST__BODY_DEFINE_GRAPH;
  req.define_graph = &copy;
  Opd__V1__Response *r =
      request(s, OPD__JOB_DEFINE_GRAPH, &req, OPD__V1__RESPONSE__BODY_DEFINE_GRAPH);
  bool ok = r->body_case == OPD__V1__RESPONSE__BODY_DEFINE_GRAPH;
  if (ok) *hit = r->define_graph->cache_hit;
  fuzz_response_free(r);
  return ok;
}

static void fill_all(opd_tensor *t) {
  opd_stack st;
  opd_stack_init(&st);
  opd_stack_push(&st, opd_iv_tensor_borrow(t));
  opd_stack_push(&st, opd_iv_int(opd_tensor_dtype(t) == OPD_BOOL ? 1 : 3));
  if (opd_call_boxed(opd_find_op("aten::fill_.Scalar"), &st)) opd_clear_error();
  opd_stack_destroy(&st);
}

/* Whether the graph calls an operator whose values are not a function of its inputs
 * (random numbers, uninitialised memory): its runs are not compared. */
static bool deterministic(const Opd__V1__DefineGraph *d) {
  static const char *const words[] = {"rand",    "normal",      "dropout",     "bernoulli",
                                      "uniform", "multinomial", "exponential", "poisson",
                                      "empty",   "cauchy",      "geometric",   "random"};
  for (size_t j = 0; j < d->n_nodes; j++)
    for (size_t w = 0; w < sizeof words / sizeof *words; w++)
      if (d->nodes[j]->op && strstr(d->nodes[j]->op, words[w])) return false;
  return true;
}

/* The sessions' exchange on a graph both defined (A as graph 1, B as graph 2). */
static void exchange(opd__session *a, opd__session *b, const Opd__V1__DefineGraph *d) {
  opd_compiled_graph *cg = opd__session_graph(a, 1);
  if (!cg || opd_compiled_graph_cost(cg) > MAX_COST || d->n_outputs > MAX_OUTPUTS ||
      !deterministic(d))
    return;
  uint64_t ia[8], ib[8];
  for (size_t i = 0; i < d->n_inputs; i++)
    if (!(ia[i] = input_for(a, d->inputs[i], 3)) || !(ib[i] = input_for(b, d->inputs[i], 5)))
      return;
  size_t n = d->n_outputs;
  opd_tensor *ra[MAX_OUTPUTS], *rb[MAX_OUTPUTS], *again[MAX_OUTPUTS];
  static snapshot sa[MAX_OUTPUTS], sb[MAX_OUTPUTS], now;
  if (!run_graph(a, 1, ia, d->n_inputs, n, ra) || !run_graph(a, 1, ia, d->n_inputs, n, ra)) return;
  for (size_t i = 0; i < n; i++) take_snapshot(ra[i], &sa[i]);
  if (!run_graph(b, 2, ib, d->n_inputs, n, rb)) return;
  for (size_t i = 0; i < n; i++) take_snapshot(rb[i], &sb[i]);
  for (size_t i = 0; i < n; i++) {
    take_snapshot(ra[i], &now);
    fuzz_check(same_snapshot(&now, &sa[i]), "A's result %zu changed when B ran the graph", i);
    for (size_t k = 0; k < n; k++)
      fuzz_check(!opd_tensor_shares_storage(ra[i], rb[k]),
                 "A's result %zu shares a storage with B's result %zu", i, k);
  }
  for (size_t i = 0; i < n; i++) fill_all(ra[i]);
  for (size_t i = 0; i < n; i++) {
    take_snapshot(rb[i], &now);
    fuzz_check(same_snapshot(&now, &sb[i]), "B's result %zu changed when A wrote its results", i);
  }
  if (run_graph(b, 2, ib, d->n_inputs, n, again))
    for (size_t i = 0; i < n; i++) {
      take_snapshot(again[i], &now);
      fuzz_check(same_snapshot(&now, &sb[i]), "B's run after A wrote its results: result %zu", i);
    }
  /* A's inputs again (a result that is a view of one was written) */
  for (size_t i = 0; i < d->n_inputs; i++)
    if (!(ia[i] = input_for(a, d->inputs[i], 3))) return;
  bool hit = false;
  if (define(a, d, 3, &hit) && run_graph(a, 3, ia, d->n_inputs, n, again)) {
    fuzz_check(hit, "the same graph defined again was not a cache hit");
    for (size_t i = 0; i < n; i++) {
      take_snapshot(again[i], &now);
      fuzz_check(same_snapshot(&now, &sa[i]), "A's run of its new definition: result %zu", i);
    }
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size > MAX_DEFINE_BYTES) return 0;
  opd_memory_stats m;
  opd_memory_stats_get(OPD_DEVICE_CPU, &m);
  uint64_t cpu_bytes = m.in_use;
  opd__graphs *graphs = NULL;
  fuzz_check(opd__graphs_start(&cfg, &graphs) == 0, "the graph context: %s", opd_last_error());
  opd__session a, b;
  opd__session_init(&a, 1, &cfg);
  opd__session_init(&b, 2, &cfg);
  a.graph_ctx = b.graph_ctx = graphs;

  /* the DefineGraph as the connection reads it (fuzz_graph.c) */
  uint8_t *frame = opd__malloc(size + 16), *p = frame;
  fuzz_check(frame != NULL, "out of memory");
  *p++ = 0x08, *p++ = 7, *p++ = 10 << 3 | 2;
  for (size_t v = size;; v >>= 7) {
    *p++ = (uint8_t)((v & 0x7f) | (v >= 0x80 ? 0x80 : 0));
    if (v < 0x80) break;
  }
  memcpy(p, data, size);
  size_t len = (size_t)(p - frame) + size;
  uint64_t id, count;
  char bad[512];
  Opd__V1__Request *req = NULL;
  opd__arena arena;
  opd__arena_init(&arena);
  opd__arena_reset(&arena, 8 * len + 16384);
  if (!opd__wire_graph_nodes_over(frame, len, cfg.max_graph_nodes, &id, &count) &&
      (req = opd__v1__request__unpack(&arena.pb, len, frame)) != NULL &&
      req->body_case == OPD__V1__REQUEST__BODY_DEFINE_GRAPH &&
      opd__wire_strings_valid(&opd__v1__request__descriptor, frame, len, opd_utf8_valid,
                              opd_utf8_escape, bad, sizeof bad) &&
      req->define_graph->n_inputs <= 8) {
    bool hit_a = false, hit_b = false;
    if (define(&a, req->define_graph, 1, &hit_a)) {
      fuzz_check(define(&b, req->define_graph, 2, &hit_b), "B's define of A's graph failed: %s",
                 opd_last_error());
      fuzz_check(hit_b, "B's define of A's graph was not a cache hit");
      exchange(&a, &b, req->define_graph);
    }
  }
  opd__arena_destroy(&arena);
  opd__free(frame);
  for (uint64_t h = 1; h < a.next_handle; h++) opd__session_drop(&a, h);
  for (uint64_t h = 1; h < b.next_handle; h++) opd__session_drop(&b, h);
  opd__session_destroy(&a);
  opd__session_destroy(&b);
  opd__graphs_stop(graphs);
  opd_memory_stats_get(OPD_DEVICE_CPU, &m);
  fuzz_check(m.in_use == cpu_bytes, "the CPU allocator holds %llu bytes, %llu before the input",
             (unsigned long long)m.in_use, (unsigned long long)cpu_bytes);
  return 0;
}

/* opd/graph_exec.h: compiling a finished graph (the pass pipeline, lowering to a plan),
 * running it on tensors, its cache, and introspection. docs/GRAPHS.md explains the design.
 *
 * How the daemon serves a graph (the protocol side is the daemon's; this is all it calls):
 *   define, on a worker:   build and finish the graph (opd/graph.h), then
 *                          opd_graph_compile(g, &options, cache, &cg, &hit)  (takes g)
 *                          and keep cg in the session under the client's graph id;
 *   run, on a worker:      opd_compiled_graph_run(cg, inputs, n, outputs)  (inputs: the handles'
 *                          tensors, borrowed; outputs: new references for new handles);
 *   release:               opd_compiled_graph_release(cg);
 *   introspection:         opd_compiled_graph_json(cg) for GET /v1/graphs/{id},
 *                          opd_graph_cache_json(cache) for GET /v1/graphs and counters.
 * A compiled graph is reference counted and safe to run from several threads at once (the
 * cache hands the same one to every session that defines the same graph).
 */
#ifndef OPD_GRAPH_EXEC_H
#define OPD_GRAPH_EXEC_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "opd/graph.h"
#include "opd/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct opd_compiled_graph opd_compiled_graph;
typedef struct opd_graph_cache opd_graph_cache;

/* Hooks for tests: they change what the checks of fused groups see ([Note: Numerics and
 * benefit of fused groups] in graph/src/exec/decisions.c). */
typedef struct opd_graph_test_hooks {
  /* Called on a fused group's outputs before they are compared with the unfused ones. */
  void (*after_fused)(uint32_t group, opd_tensor *const *outputs, uint32_t n, void *data);
  /* Replaces a measured time (nanoseconds) of a group run fused or unfused. */
  int64_t (*measured)(uint32_t group, bool fused, int64_t ns, void *data);
  /* Replaces a measured time of the interpreter, run beside a group's compiled C. */
  int64_t (*measured_interpreter)(uint32_t group, int64_t ns, void *data);
  void *data;
} opd_graph_test_hooks;

/* opd_graph_options.benefit_runs by default (the daemon's graph_benefit_runs too), and the
 * most that the daemon's config and opd-graph-conformance accept */
#define OPD_GRAPH_BENEFIT_RUNS_DEFAULT 5
#define OPD_GRAPH_BENEFIT_RUNS_MAX     1000

typedef struct opd_graph_options {
  /* Passes to skip, by name (the admin sets them to bisect a miscompile; they are part of
   * the cache key). "lower" cannot be skipped. */
  const char *const *disabled_passes;
  uint32_t ndisabled;
  /* Runs the verifier after every pass: the default (the daemon keeps it), and always in
   * builds without NDEBUG; false verifies only the graph as it was built. */
  bool verify;
  /* The first run of a fused group also runs it unfused and compares (a group that
   * disagrees is pinned unfused). */
  bool check_numerics;
  /* The first `benefit_runs` runs (OPD_GRAPH_BENEFIT_RUNS_DEFAULT) time each fused group fused and
   * unfused; a group that is not faster fused stays unfused. 0: keep every group fused. */
  uint32_t benefit_runs;
  const opd_graph_test_hooks *test_hooks;
} opd_graph_options;
void opd_graph_options_default(opd_graph_options *options);

/* Runs the pass pipeline on g and lowers it to a plan, or finds the same graph compiled
 * before in `cache` (NULL: no cache): *hit says which. Takes g in every case (it is freed,
 * or kept by the compiled graph). *out is a new reference. */
int opd_graph_compile(opd_graph *g, const opd_graph_options *options, opd_graph_cache *cache,
                      opd_compiled_graph **out, bool *hit);

/* Runs the plan: inputs[i] for input i (borrowed; dtype, sizes and device, its index
 * included, must be the spec's), outputs[0..num_outputs) receive new references. Errors name the
 * node. */
int opd_compiled_graph_run(opd_compiled_graph *cg, opd_tensor *const *inputs, uint32_t ninputs,
                           opd_tensor **outputs, uint32_t noutputs);

uint32_t opd_compiled_graph_num_inputs(const opd_compiled_graph *cg);
uint32_t opd_compiled_graph_num_outputs(const opd_compiled_graph *cg);
/* The device of input i (as its spec gave it). */
opd_device opd_compiled_graph_input_device(const opd_compiled_graph *cg, uint32_t i);
/* The CUDA devices a run touches, as a mask (bit d: cuda:d; index -1 is 0; devices past 63
 * are left out): those of its inputs and of every value its nodes make (a _to_copy to a
 * device, a factory on one), so that a graph whose inputs are all on the CPU but which
 * computes on a GPU is routed to it too. */
uint64_t opd_compiled_graph_cuda_devices(const opd_compiled_graph *cg);
/* [Note: The charge of a graph] (graph/src/exec/footprint.c): at most what compiling the finished
 * graph g will hold (reserve it before compiling), and what a compiled graph holds, fixed
 * when it was compiled: its IR, texts, plan and run context, its constants' storage and
 * its planned buffers, in bytes. */
uint64_t opd_graph_define_estimate(const opd_graph *g);
uint64_t opd_compiled_graph_bytes(const opd_compiled_graph *cg);
/* opd_graph_stats.cost, without the lock opd_compiled_graph_stats takes. */
uint64_t opd_compiled_graph_cost(const opd_compiled_graph *cg);

void opd_compiled_graph_retain(opd_compiled_graph *cg);
void opd_compiled_graph_release(opd_compiled_graph *cg);

/* What a compiled graph is and did. */
typedef struct opd_graph_stats {
  uint64_t id;               /* unique in the process */
  uint32_t nodes_before;     /* nodes of the graph as defined */
  uint32_t nodes_after;      /* nodes left by the passes (views included) */
  uint32_t kernels;          /* kernels a run launches with the groups' current decisions */
  uint32_t kernels_last_run; /* kernels the last run launched */
  uint32_t softmax_patterns; /* softmax patterns replaced */
  uint32_t groups;           /* fused pointwise groups */
  uint64_t runs, cache_hits;
  uint64_t compile_ns;
  /* An estimate of what a run costs, for a scheduler that shares workers fairly: the
   * elements every kernel of the optimised graph writes (views write none), summed. */
  uint64_t cost;
  char key[17]; /* the cache key's hash, hex */
} opd_graph_stats;
void opd_compiled_graph_stats(const opd_compiled_graph *cg, opd_graph_stats *out);

/* The introspection document of GET /v1/graphs/{id}: {"id", "key", "nodes_before",
 * "nodes_after", "kernels", "runs", "cache_hits", "compile_us", "patterns": {"softmax": N},
 * "passes": [{"name", "version", "enabled", "hits", "ir"}], "groups": [{"id", "ops",
 * "numerics", "benefit", "fused_ns", "unfused_ns", ...}], "buffers": {...}}. NULL when out
 * of memory. */
json_t *opd_compiled_graph_json(const opd_compiled_graph *cg);

/* ---- the cache of compiled graphs (graph/src/exec/cache.c) ---- */

/* A bounded LRU of compiled graphs shared by all threads: capacity graphs at most. */
int opd_graph_cache_new(uint32_t capacity, opd_graph_cache **out);
/* Drops the cache's references (graphs in use live on). */
void opd_graph_cache_free(opd_graph_cache *c);

typedef struct opd_graph_cache_stats {
  uint64_t hits, misses, evictions, invalidations;
  uint32_t size, capacity;
} opd_graph_cache_stats;
void opd_graph_cache_stats_get(opd_graph_cache *c, opd_graph_cache_stats *out);
/* {"graphs": [{"id", "key", "nodes_before", "nodes_after", "kernels", "runs", "cache_hits",
 * "compile_us"}], "hits", "misses", "evictions", "invalidations", "size", "capacity"}. */
json_t *opd_graph_cache_json(opd_graph_cache *c);
/* The cached graph with that id (opd_graph_stats.id), retained, or NULL (GET /v1/graphs/{id}). */
opd_compiled_graph *opd_graph_cache_lookup_id(opd_graph_cache *c, uint64_t id);

/* Every pass's totals over all compilations in the process, for /metrics:
 * {"view_canonicalize": {"runs": N, "hits": M}, ...}. NULL when out of memory. */
json_t *opd_graph_pass_totals_json(void);

/* Fused groups the numerics check pinned unfused, in the whole process ([Note: Numerics and
 * benefit of fused groups] in graph/src/exec/decisions.c). */
uint64_t opd_graph_numerics_mismatches(void);

/* ---- the C tier of fused programs (graph/src/plan/c_tier.c) ---- */

/* [Note: The C tier of fused programs]: CPU groups' programs compiled by the system compiler
 * off the request path and swapped in for the interpreter when loaded. */
typedef struct opd_graph_c_tier_options {
  const char *cc;             /* the compiler: a path, or a name looked up in PATH ("cc") */
  const char *dir;            /* its private cache directory: created 0700, refused unless the
                                 process's user owns it and no one else may enter it */
  uint32_t timeout_ms;        /* one compiler run's wall-clock limit, killed past it (0: 30 s) */
  uint32_t queue_max;         /* most programs waiting to compile, more stay interpreted (0: 256) */
  uint32_t session_queue_max; /* most of one session's (the budget installed on the thread
                                 that runs the graph) waiting; more stay interpreted (0: 16) */
  uint64_t max_bytes;         /* of the directory's modules; the least recently used unloaded ones
                                 are removed past it (0: no bound) */
} opd_graph_c_tier_options;
/* Starts the process's C tier: 0, OPD_EINVAL when the directory is not private or the
 * compiler cannot be run (the reason in opd_last_error()), OPD_EEXIST when started. */
int opd_graph_c_tier_start(const opd_graph_c_tier_options *options);
/* Stops it: queued programs are cancelled; groups keep the programs loaded before. */
void opd_graph_c_tier_stop(void);
/* Waits until no program is queued or compiling (tests, benchmarks, the conformance runner). */
void opd_graph_c_tier_drain(void);
typedef struct opd_graph_c_tier_stats {
  bool enabled;
  uint64_t compiles;   /* compiler runs that made a module */
  uint64_t disk_hits;  /* modules found built in the directory */
  uint64_t failures;   /* compiler runs that failed, timeouts included */
  uint64_t timeouts;   /* compiler runs killed at timeout_ms */
  uint64_t rejected;   /* programs left interpreted: the queue was full */
  uint64_t mismatches; /* compiled programs dropped: results unlike the unfused nodes' */
  uint64_t evicted;    /* modules removed from the directory past max_bytes */
  uint32_t queued;     /* programs waiting now */
} opd_graph_c_tier_stats;
/* The counts of the tier started now (zeros but mismatches when it is off). */
void opd_graph_c_tier_stats_get(opd_graph_c_tier_stats *out);
/* {"enabled", "mismatches", and when enabled "compiler" (its identity), "dir", "compiles",
 * "disk_hits", "failures", "timeouts", "rejected", "queued"}; NULL when out of memory
 * (introspect.c). */
json_t *opd_graph_c_tier_json(void);

/* The identity of the code generators (part of every cache key), computed once: the CPU
 * interpreter's, the CUDA source generator's (opd_graph_cuda_codegen_id) and the NVRTC
 * version that compiles its source ("nvrtc=none (built without CUDA)" in a build without
 * CUDA). */
const char *opd_graph_codegen_id(void);
/* The CUDA source generator's identity (graph/src/plan/fused_cuda.c): its version and limits. */
const char *opd_graph_cuda_codegen_id(void);

#ifdef __cplusplus
}
#endif
#endif

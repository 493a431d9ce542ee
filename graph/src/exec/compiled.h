/* compiled.h: a compiled graph (internal to the graph library): the optimised IR, its plan,
 * the record of its passes, the decisions about its fused groups, and the run contexts it
 * reuses. Shared by every session that defined the same graph ([Note: Runs of a compiled
 * graph] in exec.c). */
#ifndef OPD_GRAPH_COMPILED_H
#define OPD_GRAPH_COMPILED_H

#include <pthread.h>
#include <stdatomic.h>

#include "opd/allocator.h"
#include "opd/graph_exec.h"
#include "passes/pass_manager.h"
#include "plan/plan.h"

typedef enum opd__decision {
  OPD__PENDING, /* still being checked (the first runs) */
  OPD__FUSED,   /* numerics: agrees; benefit: fused is faster */
  OPD__UNFUSED, /* numerics: disagrees, pinned unfused; benefit: not faster */
} opd__decision;

/* What the checks found out about one group (the compiled graph's lock). */
typedef struct opd__group_state {
  uint8_t numerics, benefit;    /* opd__decision */
  uint32_t timed;               /* runs timed both ways */
  int64_t fused_ns, unfused_ns; /* the fastest of each */
  /* while the fused program is the C tier's, the interpreter timed beside it: runs, fastest */
  uint32_t interpreter_timed;
  int64_t interpreter_ns;
  double max_abs_diff; /* fused against unfused, at the numerics check */
  uint64_t fused_runs, unfused_runs;
  char why[160]; /* why it does not run fused (a mismatch, a layout) */
  /* a CUDA group's compiled program, made by its first fused run ([Note: Fused programs on
   * CUDA]), and whether making it failed */
  struct opd_nvrtc_function *cuda_fn;
  bool cuda_failed;
  /* a new fused program (the C tier's) restarts the checks; a check run of an older one
   * counts for nothing */
  uint32_t generation;
  /* the C tier ([Note: The C tier of fused programs] in c_tier.c): its state, the module
   * loaded and its function (kept until the graph is freed: a run may be in it), why not */
  uint8_t c_state; /* opd__c_state */
  struct opd__cc_module *c_module;
  opd__pw_tile_fn c_fn; /* while c_state is OPD__C_READY */
  char c_why[160];
} opd__group_state;

typedef enum opd__c_state {
  OPD__C_UNTRIED,    /* not submitted yet: the tier is off, or the group has not run fused */
  OPD__C_COMPILING,  /* submitted, not compiled yet */
  OPD__C_READY,      /* compiled and loaded: the group's fused program */
  OPD__C_FAILED,     /* the compiler failed (c_why) */
  OPD__C_DROPPED,    /* compiled, not used: its numerics disagreed, or the group is pinned */
  OPD__C_INELIGIBLE, /* a CUDA group, or too many operands */
} opd__c_state;

/* The per-run state: one per concurrent run, kept for the next ([Note: Runs of a compiled
 * graph]). */
typedef struct opd__run_ctx {
  struct opd__run_ctx *next;
  opd_tensor **vals;    /* per value: its tensor in this run (a reference), or NULL */
  opd_tensor **buffers; /* per planned buffer */
  opd_tensor **planned; /* per value: its view of a planned buffer, or NULL */
  uint64_t owner;       /* whose run last wrote the buffers (opd_mem_owner_current) */
  /* the storages the graph keeps (its constants', these buffers'), sorted by address
   * ([Note: A compiled graph's memory never reaches a caller] in outputs.c) */
  const opd_storage **kept;
  uint32_t nkept;
  /* a context beyond the one the graph's charge counts (a concurrent run's): the host bytes
   * charged for it, to the budget installed when it was made ([Note: Run contexts of
   * concurrent runs] in exec.c); 0 for the counted one */
  uint64_t extra_bytes;
  opd_mem_budget *budget;
} opd__run_ctx;

struct opd_compiled_graph {
  atomic_uint refcount;
  uint64_t id;
  opd_graph *g; /* after the passes */
  opd__plan *plan;
  opd__pipeline passes;
  char *ir_before;
  char *key; /* the cache key's text */
  uint64_t key_hash;
  uint32_t nodes_before, nodes_after, softmax_patterns;
  uint64_t compile_ns;
  uint64_t cost;             /* opd_graph_stats.cost */
  uint64_t cuda_devices;     /* opd_compiled_graph_cuda_devices */
  opd_graph_options options; /* disabled_passes not kept */
  opd_graph_test_hooks hooks;
  bool has_hooks;
  atomic_uint_fast64_t runs, cache_hits;
  atomic_uint kernels_last_run;
  pthread_mutex_t lock; /* states, contexts */
  opd__group_state *states;
  opd__run_ctx *spare;
  uint32_t contexts; /* run contexts made and not freed, spare or in a run */
  /* the C tier ran when it was compiled: its CPU groups' modules are in its charge and may be
   * compiled ([Note: The programs of fused groups are charged] in footprint.c) */
  bool c_tier;
  /* [Note: A compiled graph's memory never reaches a caller] (outputs.c): the storages of
   * its constants, and per output whether it may share them or a planned buffer */
  const opd_storage **constants;
  uint32_t nconstants;
  uint8_t *out_checked;
  /* [Note: The charge of a graph] (footprint.c): what it holds, counted when compiled; the
   * host bytes are counted as CPU memory in use until it is freed */
  uint64_t host_bytes, tensor_bytes;
};

/* Starts the checks of a group again for a new fused program (decisions.c; the graph's
 * lock held). */
void opd__group_checks_restart(opd__group_state *st);
/* The C tier (c_tier.c): whether it runs, and submitting group gi's program to it once
 * (a CPU group's first fused run does). */
bool opd__c_tier_running(void);
void opd__c_tier_submit(opd_compiled_graph *cg, uint32_t gi);
/* The started tier's compiler identity and directory, copied (false: the tier is off). */
bool opd__c_tier_describe(char *identity, size_t identity_size, char *dir, size_t dir_size);
/* Counts a compiled program dropped by its numerics check (opd_graph_c_tier_stats.mismatches). */
void opd__c_tier_count_mismatch(void);
/* The name of a state, for introspection. */
const char *opd__c_state_name(opd__c_state s);

/* Runs group `gi` of a run (decisions.c): fused or unfused as its state says, checking it
 * while the checks last. *kernels receives the kernels it launched. */
int opd__run_group(opd_compiled_graph *cg, opd__run_ctx *ctx, uint32_t gi, uint32_t *kernels);
/* Runs node n of the graph through the dispatcher, its results into ctx->vals (exec.c). */
int opd__run_node(opd_compiled_graph *cg, opd__run_ctx *ctx, uint32_t n);
/* [Note: A compiled graph's memory never reaches a caller] (outputs.c): when compiled, the
 * constants' storages and the outputs a run checks; a new run context's sorted list of the
 * storages the graph keeps; a run's outputs into `outputs` (references: the value's, or a
 * copy of one the graph keeps). */
int opd__outputs_plan(opd_compiled_graph *cg);
int opd__outputs_ctx_init(const opd_compiled_graph *cg, opd__run_ctx *ctx);
int opd__outputs_hand_over(const opd_compiled_graph *cg, const opd__run_ctx *ctx,
                           opd_tensor **outputs);
/* Counts what a compiled graph holds into host_bytes and tensor_bytes (footprint.c). */
void opd__compiled_footprint(opd_compiled_graph *cg);
/* The host bytes of one run context, its planned buffers apart (footprint.c). */
uint64_t opd__run_ctx_host_bytes(const opd_compiled_graph *cg);
/* The bytes charged for group gi's compiled program: the C tier's module, a CUDA group's
 * NVRTC program; 0 for a group that has none (footprint.c). */
uint64_t opd__group_program_bytes(const opd_compiled_graph *cg, uint32_t gi);
/* Frees the spare run contexts (exec.c). */
void opd__compiled_free_contexts(opd_compiled_graph *cg);
/* Kernels a run launches with the current decisions. */
uint32_t opd__compiled_kernels(opd_compiled_graph *cg);

/* The cache key of a finished graph compiled with a pass list (cache_key.c). */
int opd__graph_key(const opd_graph *g, const opd__pipeline *p, const opd_graph_options *o,
                   char **key, uint64_t *hash);
/* The cache's side (cache.c): a compiled graph equal to `key`, retained, or NULL; and
 * adding one (the cache keeps a reference; *out is the one to use, perhaps another thread's
 * equal graph). */
opd_compiled_graph *opd__cache_find(opd_graph_cache *c, const char *key, uint64_t hash);
void opd__cache_add(opd_graph_cache *c, opd_compiled_graph *cg, opd_compiled_graph **out);
/* Calls visit(cg, arg) for every cached graph, most recently used first, under the cache's
 * lock (introspect.c lists them so; the cache knows nothing of what a visit makes). */
void opd__cache_each(opd_graph_cache *c, void (*visit)(opd_compiled_graph *cg, void *arg),
                     void *arg);

#endif

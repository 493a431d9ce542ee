/* compile.c: compiling a finished graph (opd_graph_compile): the cache first, then the
 * pass pipeline ([Note: The pass pipeline] in pass_manager.c); a compiled graph's counters
 * (its references are compiled.c's). */
#include <stdio.h>
#include <string.h>

#include "exec/compiled.h"
#include "ir/graph_print.h"
#include "opd/clock.h"
#include "opd/allocator.h"
#include "opd/error.h"
#include "opd/memory.h"

void opd_graph_options_default(opd_graph_options *o) {
  *o = (opd_graph_options){
      .verify = true, .check_numerics = true, .benefit_runs = OPD_GRAPH_BENEFIT_RUNS_DEFAULT};
}

static _Atomic uint64_t next_id = 1;

static int reserve_host(uint64_t bytes, uint64_t *counted) {
  int rc = opd_cpu_allocator_reserve(bytes);
  if (rc) {
    char msg[300];
    snprintf(msg, sizeof msg, "%s", opd_last_error());
    return opd_error(rc,
                     "graph: compiling it holds about %llu bytes, past the CPU memory limit "
                     "(max_bytes_total in the daemon): %s",
                     (unsigned long long)bytes, msg);
  }
  *counted += bytes;
  return 0;
}

/* Runs the pipeline on g (taken) into a new compiled graph. */
static int build(opd_graph *g, const opd_graph_options *o, opd__pipeline *passes, char *key,
                 uint64_t hash, opd_compiled_graph **out) {
  opd_compiled_graph *cg = opd__calloc(1, sizeof *cg);
  if (!cg) {
    opd_graph_free(g);
    opd__pipeline_free(passes);
    opd__free(key);
    return opd_error(OPD_ENOMEM, "out of memory for a compiled graph");
  }
  atomic_init(&cg->refcount, 1);
  pthread_mutex_init(&cg->lock, NULL);
  cg->id = atomic_fetch_add(&next_id, 1);
  cg->g = g;
  cg->passes = *passes;
  cg->key = key;
  cg->key_hash = hash;
  cg->options = *o;
  cg->options.disabled_passes = NULL;
  cg->options.ndisabled = 0;
  cg->options.test_hooks = NULL;
  if (o->test_hooks) {
    cg->hooks = *o->test_hooks;
    cg->has_hooks = true;
  }
  cg->nodes_before = opd_graph_num_nodes(g);
  uint64_t t0 = opd_monotonic_ns();
  /* [Note: The charge of a graph] (footprint.c): counted as CPU memory before it is made */
  int rc = reserve_host(opd_graph_define_estimate(g), &cg->host_bytes);
  if (rc == 0) rc = opd_graph_print(g, &cg->ir_before);
  opd__compile c = {.g = g, .opts = o};
  if (rc == 0) rc = opd__pipeline_run(&cg->passes, &c);
  opd__pipeline_detach(&cg->passes);
  cg->plan = c.plan;
  cg->softmax_patterns = (uint32_t)c.softmax_patterns;
  cg->nodes_after = opd_graph_num_nodes(g);
  if (rc == 0 && cg->plan->ngroups &&
      !(cg->states = opd__calloc(cg->plan->ngroups, sizeof *cg->states)))
    rc = opd_error(OPD_ENOMEM, "out of memory for a compiled graph");
  if (rc == 0) rc = opd__outputs_plan(cg);
  cg->c_tier = opd__c_tier_running(); /* [Note: The programs of fused groups are charged] */
  if (rc == 0) {                      /* the estimate trued up to what it holds */
    uint64_t reserved = cg->host_bytes;
    opd__compiled_footprint(cg);
    uint64_t held = cg->host_bytes;
    cg->host_bytes = reserved;
    if (held > reserved)
      rc = reserve_host(held - reserved, &cg->host_bytes);
    else
      opd_cpu_allocator_unreserve(reserved - held);
    if (rc == 0) cg->host_bytes = held;
  }
  cg->compile_ns = opd_monotonic_ns() - t0;
  for (uint32_t n = 0; rc == 0 && n < g->nnodes; n++) {
    const opd__gnode *node = &g->nodes[n];
    for (uint32_t k = 0; !node->dead && !node->is_view && k < node->nouts; k++)
      cg->cost += (uint64_t)g->values[node->first_out + k].meta->numel;
  }
  for (uint32_t v = 0; v < g->nvalues; v++)
    cg->cuda_devices |= opd_device_cuda_bit(g->values[v].device);
  if (rc) {
    char msg[400];
    snprintf(msg, sizeof msg, "%s", opd_last_error());
    opd_compiled_graph_release(cg); /* the only reference: frees it */
    return opd_error(rc, "%s", msg);
  }
  *out = cg;
  return 0;
}

int opd_graph_compile(opd_graph *g, const opd_graph_options *options, opd_graph_cache *cache,
                      opd_compiled_graph **out, bool *hit) {
  opd_graph_options defaults;
  if (!options) {
    opd_graph_options_default(&defaults);
    options = &defaults;
  }
  if (hit) *hit = false;
  if (!g->finished) {
    opd_graph_free(g);
    return opd_error(OPD_EINVAL, "graph: compile a finished graph (opd_graph_finish)");
  }
  for (uint32_t i = 0; i < g->nops; i++) g->ops[i].generation = opd_op_generation(g->ops[i].op);
  opd__pipeline passes;
  char *key = NULL;
  uint64_t hash = 0;
  int rc = opd__pipeline_snapshot(options, &passes);
  if (rc) {
    opd_graph_free(g);
    return rc;
  }
  if ((rc = opd__graph_key(g, &passes, options, &key, &hash))) {
    opd__pipeline_free(&passes);
    opd_graph_free(g);
    return rc;
  }
  opd_compiled_graph *cg = cache ? opd__cache_find(cache, key, hash) : NULL;
  if (cg) {
    opd__free(key);
    opd__pipeline_free(&passes);
    opd_graph_free(g);
    atomic_fetch_add_explicit(&cg->cache_hits, 1, memory_order_relaxed);
    if (hit) *hit = true;
    *out = cg;
    return 0;
  }
  /* the passes run Meta kernels: with the default dispatch state, as inference does */
  opd_local_dispatch_state saved = opd_tls_get();
  opd_tls_set(opd_default_dispatch_state);
  rc = build(g, options, &passes, key, hash, &cg);
  opd_tls_set(saved);
  if (rc) return rc;
  if (cache) {
    opd_compiled_graph *kept;
    opd__cache_add(cache, cg, &kept);
    if (kept != cg) {
      opd_compiled_graph_release(cg);
      cg = kept;
    }
  }
  *out = cg;
  return 0;
}

uint32_t opd_compiled_graph_num_inputs(const opd_compiled_graph *cg) {
  return cg->g->ninputs;
}

uint32_t opd_compiled_graph_num_outputs(const opd_compiled_graph *cg) {
  return cg->g->noutputs;
}

opd_device opd_compiled_graph_input_device(const opd_compiled_graph *cg, uint32_t i) {
  return i < cg->g->ninputs ? cg->g->values[i].device : (opd_device){OPD_DEVICE_CPU, -1};
}

uint64_t opd_compiled_graph_cuda_devices(const opd_compiled_graph *cg) {
  return cg->cuda_devices;
}

uint64_t opd_compiled_graph_cost(const opd_compiled_graph *cg) {
  return cg->cost;
}

uint32_t opd__compiled_kernels(opd_compiled_graph *cg) {
  const opd__plan *p = cg->plan;
  uint32_t k = 0;
  pthread_mutex_lock(&cg->lock);
  for (uint32_t s = 0; s < p->nsteps; s++) {
    const opd__step *st = &p->steps[s];
    if (st->kind != OPD__STEP_GROUP) {
      k += st->kernel;
      continue;
    }
    const opd__group_state *gs = &cg->states[st->index];
    bool fused = gs->numerics != OPD__UNFUSED && gs->benefit != OPD__UNFUSED;
    k += fused ? 1 : p->groups[st->index].ncompute;
  }
  pthread_mutex_unlock(&cg->lock);
  return k;
}

void opd_compiled_graph_stats(const opd_compiled_graph *cg_const, opd_graph_stats *out) {
  opd_compiled_graph *cg = (opd_compiled_graph *)cg_const; /* the lock only */
  *out = (opd_graph_stats){.id = cg->id,
                           .nodes_before = cg->nodes_before,
                           .nodes_after = cg->nodes_after,
                           .kernels = opd__compiled_kernels(cg),
                           .kernels_last_run = atomic_load(&cg->kernels_last_run),
                           .softmax_patterns = cg->softmax_patterns,
                           .groups = cg->plan->ngroups,
                           .runs = atomic_load(&cg->runs),
                           .cache_hits = atomic_load(&cg->cache_hits),
                           .compile_ns = cg->compile_ns,
                           .cost = cg->cost};
  snprintf(out->key, sizeof out->key, "%016llx", (unsigned long long)cg->key_hash);
}

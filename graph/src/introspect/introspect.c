/* introspect.c: what a compiled graph is and did, as JSON (jansson) for the status endpoint
 * (GET /v1/graphs/{id}: opd_compiled_graph_json; GET /v1/graphs: opd_graph_cache_json).
 * Strings the IR holds are the printer's (ASCII but for constant strings, which are UTF-8:
 * the builder checks them), so every string is valid JSON text. */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>

#include "plan/c_compiler.h"
#include "exec/compiled.h"

static const char *decision_name(uint8_t d, bool checked) {
  if (!checked && d == OPD__PENDING) return "unchecked";
  return d == OPD__FUSED ? "fused" : d == OPD__UNFUSED ? "unfused" : "pending";
}

/* Adds a value to an object; false when out of memory (the value is consumed). */
static bool set(json_t *obj, const char *key, json_t *v) {
  return v && json_object_set_new(obj, key, v) == 0;
}

static json_t *summary(opd_compiled_graph *cg) {
  opd_graph_stats s;
  opd_compiled_graph_stats(cg, &s);
  json_t *o = json_object();
  bool ok = o && set(o, "id", json_integer((json_int_t)s.id)) &&
            set(o, "key", json_string(s.key)) &&
            set(o, "nodes_before", json_integer(s.nodes_before)) &&
            set(o, "nodes_after", json_integer(s.nodes_after)) &&
            set(o, "kernels", json_integer(s.kernels)) &&
            set(o, "kernels_last_run", json_integer(s.kernels_last_run)) &&
            set(o, "runs", json_integer((json_int_t)s.runs)) &&
            set(o, "cache_hits", json_integer((json_int_t)s.cache_hits)) &&
            set(o, "compile_us", json_integer((json_int_t)(s.compile_ns / 1000)));
  json_t *patterns = ok ? json_object() : NULL;
  ok = ok && set(o, "patterns", patterns) &&
       set(patterns, "softmax", json_integer(s.softmax_patterns));
  if (!ok) {
    json_decref(o);
    return NULL;
  }
  return o;
}

static json_t *passes_json(const opd_compiled_graph *cg) {
  json_t *a = json_array();
  for (uint32_t i = 0; a && i < cg->passes.n; i++) {
    const opd__pass_entry *e = &cg->passes.passes[i];
    json_t *p = json_object();
    bool ok =
        p && set(p, "name", json_string(e->name)) && set(p, "version", json_integer(e->version)) &&
        set(p, "enabled", json_boolean(e->enabled)) &&
        set(p, "hits", json_integer((json_int_t)e->hits)) &&
        set(p, "us", json_integer((json_int_t)(e->ns / 1000))) &&
        set(p, "ir", e->ir ? json_string(e->ir) : json_null()) && json_array_append_new(a, p) == 0;
    if (!ok) {
      json_decref(p);
      json_decref(a);
      return NULL;
    }
  }
  return a;
}

/* A group's "device", the "tier" its fused program runs on ("cuda", "c" or "interpreter")
 * and its "source": on CUDA the program as NVRTC compiles it ([Note: Fused programs on
 * CUDA]), on the CPU as the C tier compiles it ([Note: The C tier of fused programs]; the
 * interpreter's program is in the IR after lower), null when it has none; the C tier's
 * "c_tier" state, "c_module" and "c_why" (the lock held). */
static bool set_source(const opd_compiled_graph *cg, const opd__group *grp,
                       const opd__group_state *st, json_t *g) {
  opd_device dev = cg->g->values[grp->prog.stores[0].value].device;
  bool cuda = dev.type == OPD_DEVICE_CUDA;
  const char *tier = cuda ? "cuda" : st->c_fn ? "c" : "interpreter";
  if (!set(g, "device", json_string(cuda ? "cuda" : "cpu")) || !set(g, "tier", json_string(tier)) ||
      !set(g, "c_tier", json_string(opd__c_state_name((opd__c_state)st->c_state))) ||
      !set(g, "c_module",
           st->c_module ? json_string(opd__cc_module_name(st->c_module)) : json_null()) ||
      !set(g, "c_why", st->c_why[0] ? json_string(st->c_why) : json_null()))
    return false;
  opd__sbuf src = {0};
  int rc = cuda ? opd__pw_cuda_source(&grp->prog, &src) : opd__pw_c_source(&grp->prog, &src);
  bool ok = rc == 0 ? set(g, "source", json_string(src.data)) : set(g, "source", json_null());
  opd_clear_error();
  opd__sbuf_free(&src);
  return ok;
}

static json_t *groups_json(opd_compiled_graph *cg) {
  const opd__plan *plan = cg->plan;
  json_t *a = json_array();
  pthread_mutex_lock(&cg->lock);
  for (uint32_t i = 0; a && i < plan->ngroups; i++) {
    const opd__group *grp = &plan->groups[i];
    const opd__group_state *st = &cg->states[i];
    json_t *g = json_object(), *ops = json_array();
    bool ok = g && ops && set(g, "id", json_integer(i)) && set(g, "ops", ops);
    if (!ok) json_decref(ops);
    for (uint32_t k = 0; ok && k < grp->nmembers; k++)
      ok = json_array_append_new(
               ops, json_string(cg->g->ops[cg->g->nodes[grp->members[k]].opi].name)) == 0;
    ok = ok &&
         set(g, "numerics", json_string(decision_name(st->numerics, cg->options.check_numerics))) &&
         set(g, "benefit", json_string(decision_name(st->benefit, cg->options.benefit_runs > 0))) &&
         set(g, "fused_ns", json_integer(st->fused_ns)) &&
         set(g, "unfused_ns", json_integer(st->unfused_ns)) &&
         set(g, "timed_runs", json_integer(st->timed)) &&
         set(g, "interpreter_ns",
             st->interpreter_timed ? json_integer(st->interpreter_ns) : json_null()) &&
         set(g, "max_abs_diff",
             isfinite(st->max_abs_diff) ? json_real(st->max_abs_diff) : json_null()) &&
         set(g, "fused_runs", json_integer((json_int_t)st->fused_runs)) &&
         set(g, "unfused_runs", json_integer((json_int_t)st->unfused_runs)) &&
         set(g, "elements", json_integer(grp->prog.numel)) &&
         set(g, "registers", json_integer(grp->prog.nregs)) &&
         set(g, "why_unfused", st->why[0] ? json_string(st->why) : json_null()) &&
         set_source(cg, grp, st, g) && json_array_append_new(a, g) == 0;
    if (!ok) {
      json_decref(g);
      json_decref(a);
      a = NULL;
    }
  }
  pthread_mutex_unlock(&cg->lock);
  return a;
}

json_t *opd_compiled_graph_json(const opd_compiled_graph *cg_const) {
  opd_compiled_graph *cg = (opd_compiled_graph *)cg_const; /* the lock only */
  const opd__plan *p = cg->plan;
  json_t *o = summary(cg), *buffers = json_object();
  bool ok = o && buffers && set(o, "buffers", buffers) &&
            set(buffers, "count", json_integer(p->nbuffers)) &&
            set(buffers, "bytes", json_integer((json_int_t)p->planned_bytes)) &&
            set(buffers, "intermediate_bytes", json_integer((json_int_t)p->unplanned_bytes)) &&
            set(o, "codegen", json_string(opd_graph_codegen_id())) &&
            set(o, "ir_before", json_string(cg->ir_before)) && set(o, "passes", passes_json(cg)) &&
            set(o, "groups", groups_json(cg));
  if (!ok) {
    if (!o) json_decref(buffers);
    json_decref(o);
    return NULL;
  }
  return o;
}

/* Appends a cached graph's summary to a listing (opd__cache_each's visit). */
typedef struct summaries {
  json_t *graphs;
  bool ok; /* false once out of memory */
} summaries;

static void append_summary(opd_compiled_graph *cg, void *arg) {
  summaries *list = arg;
  if (list->ok) list->ok = json_array_append_new(list->graphs, summary(cg)) == 0;
}

json_t *opd_graph_cache_json(opd_graph_cache *c) {
  opd_graph_cache_stats s;
  opd_graph_cache_stats_get(c, &s);
  json_t *o = json_object(), *graphs = json_array();
  bool ok = o && graphs && set(o, "graphs", graphs);
  if (!ok) json_decref(graphs);
  summaries list = {graphs, ok};
  opd__cache_each(c, append_summary, &list);
  ok = list.ok;
  ok = ok && set(o, "hits", json_integer((json_int_t)s.hits)) &&
       set(o, "misses", json_integer((json_int_t)s.misses)) &&
       set(o, "evictions", json_integer((json_int_t)s.evictions)) &&
       set(o, "invalidations", json_integer((json_int_t)s.invalidations)) &&
       set(o, "size", json_integer(s.size)) && set(o, "capacity", json_integer(s.capacity));
  if (!ok) {
    json_decref(o);
    return NULL;
  }
  return o;
}

json_t *opd_graph_c_tier_json(void) {
  opd_graph_c_tier_stats st;
  opd_graph_c_tier_stats_get(&st);
  char identity[1024], dir[4096];
  bool on = st.enabled && opd__c_tier_describe(identity, sizeof identity, dir, sizeof dir);
  json_t *o = json_object();
  bool ok = o && set(o, "enabled", json_boolean(on)) &&
            set(o, "mismatches", json_integer((json_int_t)st.mismatches));
  if (ok && on)
    ok = set(o, "compiler", json_string(identity)) && set(o, "dir", json_string(dir)) &&
         set(o, "compiles", json_integer((json_int_t)st.compiles)) &&
         set(o, "disk_hits", json_integer((json_int_t)st.disk_hits)) &&
         set(o, "failures", json_integer((json_int_t)st.failures)) &&
         set(o, "timeouts", json_integer((json_int_t)st.timeouts)) &&
         set(o, "rejected", json_integer((json_int_t)st.rejected)) &&
         set(o, "queued", json_integer(st.queued));
  if (!ok) {
    json_decref(o);
    return NULL;
  }
  return o;
}

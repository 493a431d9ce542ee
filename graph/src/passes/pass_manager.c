/* pass_manager.c: the pass pipeline: its order, plugin passes, disabling passes by name,
 * the verifier between passes and the record of each pass (hits, the IR after it).
 *
 * [Note: The pass pipeline]
 * A compilation runs these passes in this order (PyTorch's post_grad_passes, with the
 * scheduling Inductor does after them):
 *   (plugin passes registered OPD_GRAPH_PASS_PRE, in registration order)
 *   1. view_canonicalize  reshape spellings and chains of views become one aten::view
 *                          ([Note: View canonicalisation])
 *   2. remove_noops       copies, identity views and x*1, x+0, ... removed without new
 *                          input/output aliasing ([Note: No-op removal])
 *   3. dce                nodes nothing uses removed
 *   4. softmax_pattern    exp / sum(exp, -1, keepdim) (and its max-subtracted form) becomes
 *                          one _softmax ([Note: The softmax pattern]); after dce, so that a
 *                          dead user does not hide a pattern, and before cse, so that patterns
 *                          are counted as written
 *   5. cse                equal nodes merged
 *   (plugin passes registered OPD_GRAPH_PASS_POST)
 *   6. pointwise_groups   maximal groups of elementwise nodes, connected directly or through
 *                          views, that run as one fused kernel ([Note: Pointwise groups])
 *   7. buffer_plan        intermediates of fused kernels share buffers by liveness
 *                          ([Note: Buffer planning])
 *   8. lower              the plan: one step per kernel, view and fused group, and when each
 *                          value can be released ([Note: The lowered plan])
 * Each pass has a name, a version (bumped when what it does changes: both go into the cache
 * key with whether it ran) and a hit counter. Any pass but lower can be disabled by name
 * (opd_graph_options.disabled_passes): the graph then runs without it, e.g. unfused without
 * pointwise_groups. After each pass that ran, the verifier checks the IR when the options ask
 * (always in builds without NDEBUG), and the IR's text is kept for introspection.
 */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "passes/compile.h"
#include "ir/graph_print.h"
#include "opd/clock.h"
#include "opd/error.h"
#include "opd/graph_exec.h"
#include "opd/graph_pass.h"
#include "opd/memory.h"
#include "opd/utf8.h"
#include "passes/pass_manager.h"
#include "plan/plan.h"

typedef struct builtin_pass {
  const char *name;
  uint32_t version;
  opd__pass_fn fn;
} builtin_pass;

/* The rewrites (before the plugin POST passes) and the scheduling passes (after them). */
static const builtin_pass rewrites[] = {
    {"view_canonicalize", 1, opd__pass_view_canonicalize},
    {"remove_noops", 1, opd__pass_remove_noops},
    {"dce", 1, opd__pass_dce},
    {"softmax_pattern", 1, opd__pass_softmax},
    {"cse", 1, opd__pass_cse},
};
static const builtin_pass scheduling[] = {
    {"pointwise_groups", 1, opd__pass_pointwise_groups},
    {"buffer_plan", 1, opd__pass_buffer_plan},
    {"lower", 1, opd__pass_lower},
};

/* [Note: Removing a plugin pass under compilation]
 * A plugin's pass is code in the plugin's shared object, which its unload unmaps. A
 * compilation copies the pass list when it starts (opd__pipeline_snapshot) and runs the
 * passes after the lock is released, so removing a pass from the list is not enough: each
 * compilation holds a use of every plugin pass it took (`users`), dropped as soon as its
 * passes have run (opd__pipeline_detach, before the compiled graph is kept: its record of the
 * passes outlives the plugin), and opd_graph_pass_unregister takes the pass off the list and
 * then waits until no compilation uses it. When it returns, no thread can be in, or about to
 * enter, the pass's code: the plugin loader unmaps the plugin after it (server/src/plugins.c).
 * Compiled graphs that ran the pass stay valid (they keep its results, not its code) and stay
 * in the cache under keys that name it, which no later compilation produces. */
typedef struct plugin_pass {
  int64_t id;
  char name[64];
  uint32_t version;
  opd_graph_pass_place place;
  opd_graph_pass_fn fn;
  void *data;
  uint32_t users; /* compilations that took it and have not finished running it */
} plugin_pass;

static pthread_mutex_t plugins_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t plugin_unused = PTHREAD_COND_INITIALIZER;
static plugin_pass **plugins; /* registered, in registration order; each its own allocation */
static uint32_t nplugins, cap_plugins;
static int64_t next_plugin_id = 1;

static bool name_ok(const char *name) {
  size_t n = name ? strlen(name) : 0;
  if (n == 0 || n > 63) return false;
  for (size_t i = 0; i < n; i++) {
    char c = name[i];
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
          strchr("_.:-", c)))
      return false;
  }
  return true;
}

static bool builtin_name(const char *name) {
  for (size_t i = 0; i < sizeof rewrites / sizeof *rewrites; i++)
    if (strcmp(rewrites[i].name, name) == 0) return true;
  for (size_t i = 0; i < sizeof scheduling / sizeof *scheduling; i++)
    if (strcmp(scheduling[i].name, name) == 0) return true;
  return false;
}

int64_t opd_graph_pass_register(const char *name, uint32_t version, opd_graph_pass_place place,
                                opd_graph_pass_fn fn, void *data) {
  if (!name_ok(name))
    return opd_error(OPD_EINVAL, "a graph pass name is 1 to 63 characters of [A-Za-z0-9_.:-]");
  if (!fn || (place != OPD_GRAPH_PASS_PRE && place != OPD_GRAPH_PASS_POST))
    return opd_error(OPD_EINVAL, "graph pass %s: needs a function and a place (pre or post)", name);
  if (builtin_name(name))
    return opd_error(OPD_EINVAL, "graph pass %s: a built-in pass has that name", name);
  plugin_pass *p = opd__calloc(1, sizeof *p);
  if (!p) return opd_error(OPD_ENOMEM, "out of memory registering graph pass %s", name);
  *p = (plugin_pass){.version = version, .place = place, .fn = fn, .data = data};
  snprintf(p->name, sizeof p->name, "%s", name);
  pthread_mutex_lock(&plugins_lock);
  int64_t rc = 0;
  for (uint32_t i = 0; i < nplugins && rc == 0; i++)
    if (strcmp(plugins[i]->name, name) == 0)
      rc = opd_error(OPD_EINVAL, "graph pass %s: already registered", name);
  if (rc == 0 && nplugins == cap_plugins) {
    uint32_t cap = cap_plugins ? cap_plugins * 2 : 8;
    plugin_pass **grown = opd__realloc(plugins, cap * sizeof *grown);
    if (!grown)
      rc = opd_error(OPD_ENOMEM, "out of memory registering graph pass %s", name);
    else
      plugins = grown, cap_plugins = cap;
  }
  if (rc == 0) {
    p->id = next_plugin_id++;
    plugins[nplugins++] = p;
    rc = p->id;
  }
  pthread_mutex_unlock(&plugins_lock);
  if (rc < 0) opd__free(p);
  return rc;
}

/* [Note: Removing a plugin pass under compilation] */
int opd_graph_pass_unregister(int64_t id) {
  pthread_mutex_lock(&plugins_lock);
  plugin_pass *p = NULL;
  for (uint32_t i = 0; i < nplugins && !p; i++)
    if (plugins[i]->id == id) {
      p = plugins[i];
      memmove(&plugins[i], &plugins[i + 1], (nplugins - i - 1) * sizeof *plugins);
      nplugins--;
    }
  while (p && p->users) pthread_cond_wait(&plugin_unused, &plugins_lock);
  pthread_mutex_unlock(&plugins_lock);
  if (!p) return opd_error(OPD_ENOENT, "no graph pass with id %lld", (long long)id);
  opd__free(p);
  return 0;
}

int opd_graph_pass_check_name(const char *name) {
  if (name && strcmp(name, "lower") == 0)
    return opd_error(OPD_EINVAL, "graph pass lower cannot be disabled: it makes the plan");
  if (name && builtin_name(name)) return 0;
  char known[512];
  size_t n = 0;
  known[0] = '\0';
  for (size_t i = 0; i < sizeof rewrites / sizeof *rewrites && n < sizeof known; i++)
    n += (size_t)snprintf(known + n, sizeof known - n, "%s, ", rewrites[i].name);
  for (size_t i = 0; i + 1 < sizeof scheduling / sizeof *scheduling && n < sizeof known; i++)
    n += (size_t)snprintf(known + n, sizeof known - n, "%s, ", scheduling[i].name);
  pthread_mutex_lock(&plugins_lock);
  bool found = false;
  for (uint32_t i = 0; i < nplugins; i++) {
    if (name && strcmp(plugins[i]->name, name) == 0) found = true;
    if (n < sizeof known)
      n += (size_t)snprintf(known + n, sizeof known - n, "%s, ", plugins[i]->name);
  }
  pthread_mutex_unlock(&plugins_lock);
  if (found) return 0;
  if (n >= 2 && n < sizeof known) known[n - 2] = '\0';
  char shown[80];
  opd_utf8_escape(shown, sizeof shown, name ? name : "", name ? strnlen(name, 64) : 0);
  return opd_error(OPD_ENOENT, "no graph pass '%s' (the passes that can be disabled: %s)", shown,
                   known);
}

/* Totals per pass name over the process (opd_graph_pass_totals_json). */
typedef struct pass_total {
  char name[64];
  uint64_t runs, hits;
} pass_total;
static pthread_mutex_t totals_lock = PTHREAD_MUTEX_INITIALIZER;
static pass_total *totals;
static uint32_t ntotals, cap_totals;

static void count_pass(const opd__pass_entry *e) {
  pthread_mutex_lock(&totals_lock);
  pass_total *t = NULL;
  for (uint32_t i = 0; i < ntotals && !t; i++)
    if (strcmp(totals[i].name, e->name) == 0) t = &totals[i];
  if (!t && ntotals == cap_totals) {
    uint32_t cap = cap_totals ? cap_totals * 2 : 16;
    pass_total *p = opd__realloc(totals, cap * sizeof *p);
    if (p) totals = p, cap_totals = cap;
  }
  if (!t && ntotals < cap_totals) {
    t = &totals[ntotals++];
    *t = (pass_total){0};
    snprintf(t->name, sizeof t->name, "%s", e->name);
  }
  if (t) {
    t->runs++;
    t->hits += e->hits;
  }
  pthread_mutex_unlock(&totals_lock);
}

json_t *opd_graph_pass_totals_json(void) {
  json_t *o = json_object();
  pthread_mutex_lock(&totals_lock);
  for (uint32_t i = 0; o && i < ntotals; i++) {
    json_t *t = json_pack("{s:I, s:I}", "runs", (json_int_t)totals[i].runs, "hits",
                          (json_int_t)totals[i].hits);
    if (!t || json_object_set_new(o, totals[i].name, t)) {
      json_decref(o);
      o = NULL;
    }
  }
  pthread_mutex_unlock(&totals_lock);
  return o;
}

static bool disabled(const opd_graph_options *o, const char *name) {
  for (uint32_t i = 0; i < o->ndisabled; i++)
    if (o->disabled_passes[i] && strcmp(o->disabled_passes[i], name) == 0) return true;
  return false;
}

static void add_builtin(opd__pipeline *p, const builtin_pass *b, const opd_graph_options *o) {
  opd__pass_entry *e = &p->passes[p->n++];
  *e = (opd__pass_entry){.version = b->version, .builtin = b->fn};
  snprintf(e->name, sizeof e->name, "%s", b->name);
  e->enabled = strcmp(b->name, "lower") == 0 || !disabled(o, b->name);
}

/* plugins_lock held. Takes a use of each pass it adds ([Note: Removing a plugin pass under
 * compilation]). */
static void add_plugins(opd__pipeline *p, opd_graph_pass_place place, const opd_graph_options *o) {
  for (uint32_t i = 0; i < nplugins; i++) {
    plugin_pass *pp = plugins[i];
    if (pp->place != place) continue;
    opd__pass_entry *e = &p->passes[p->n++];
    *e = (opd__pass_entry){
        .version = pp->version, .plugin = pp->fn, .data = pp->data, .registered = pp};
    snprintf(e->name, sizeof e->name, "%s", pp->name);
    e->enabled = !disabled(o, e->name);
    pp->users++;
  }
}

int opd__pipeline_snapshot(const opd_graph_options *o, opd__pipeline *p) {
  for (uint32_t i = 0; i < o->ndisabled; i++)
    if (o->disabled_passes[i] && strcmp(o->disabled_passes[i], "lower") == 0)
      return opd_error(OPD_EINVAL, "graph pass lower cannot be disabled: it makes the plan");
  pthread_mutex_lock(&plugins_lock);
  uint32_t n = nplugins + (uint32_t)(sizeof rewrites / sizeof *rewrites +
                                     sizeof scheduling / sizeof *scheduling);
  *p = (opd__pipeline){.passes = opd__calloc(n, sizeof *p->passes)};
  if (!p->passes) {
    pthread_mutex_unlock(&plugins_lock);
    return opd_error(OPD_ENOMEM, "out of memory for a graph's pass list");
  }
  add_plugins(p, OPD_GRAPH_PASS_PRE, o);
  for (size_t i = 0; i < sizeof rewrites / sizeof *rewrites; i++) add_builtin(p, &rewrites[i], o);
  add_plugins(p, OPD_GRAPH_PASS_POST, o);
  for (size_t i = 0; i < sizeof scheduling / sizeof *scheduling; i++)
    add_builtin(p, &scheduling[i], o);
  pthread_mutex_unlock(&plugins_lock);
  return 0;
}

void opd__pipeline_detach(opd__pipeline *p) {
  bool any = false;
  for (uint32_t i = 0; i < p->n; i++) any |= p->passes[i].registered != NULL;
  if (!any) return;
  pthread_mutex_lock(&plugins_lock);
  for (uint32_t i = 0; i < p->n; i++) {
    opd__pass_entry *e = &p->passes[i];
    if (!e->registered) continue;
    if (--((plugin_pass *)e->registered)->users == 0) pthread_cond_broadcast(&plugin_unused);
    e->registered = NULL;
    e->plugin = NULL;
    e->data = NULL;
  }
  pthread_mutex_unlock(&plugins_lock);
}

void opd__pipeline_free(opd__pipeline *p) {
  opd__pipeline_detach(p);
  for (uint32_t i = 0; i < p->n; i++) opd__free(p->passes[i].ir);
  opd__free(p->passes);
  *p = (opd__pipeline){0};
}

/* The IR after a pass, with the plan once there is one. */
static int record_ir(opd__compile *c, opd__pass_entry *e) {
  opd__sbuf sb = {0};
  int rc = opd__graph_print_to(c->g, true, false, &sb);
  if (rc == 0 && c->plan) opd__plan_print(c->plan, c->g, &sb);
  if (rc) {
    opd__sbuf_free(&sb);
    return rc;
  }
  return opd__sbuf_take(&sb, &e->ir);
}

int opd__pipeline_run(opd__pipeline *p, opd__compile *c) {
#ifdef NDEBUG
  bool verify = c->opts->verify;
#else
  bool verify = true;
#endif
  for (uint32_t i = 0; i < p->n; i++) {
    opd__pass_entry *e = &p->passes[i];
    if (!e->enabled) continue;
    uint64_t t0 = opd_monotonic_ns();
    int rc = e->builtin ? e->builtin(c, &e->hits) : e->plugin(c->g, e->data, &e->hits);
    e->ns = opd_monotonic_ns() - t0;
    if (rc == 0 && verify) rc = opd_graph_verify(c->g);
    if (rc) {
      char msg[400];
      snprintf(msg, sizeof msg, "%s", opd_last_error());
      return opd_error(rc, "graph pass %s: %s", e->name, msg);
    }
    count_pass(e);
    if ((rc = record_ir(c, e))) return rc;
  }
  return 0;
}

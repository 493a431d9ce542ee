/* graphs.c: the daemon's side of graphs (graphs.h): define, run, release and describe on the
 * workers, the shared cache, the disabled passes, the IR dumps, the counters.
 *
 * [Note: Graphs in the daemon]
 * A define is validated whole before anything runs, on a worker of the session: the limits
 * of the configuration first (max_graphs, max_graph_nodes, ...; a define with too many
 * nodes is refused by the loop before it is even decoded, opd__request_decode in
 * conn_requests.c), then every input spec, then every node in order: its operator, its
 * arguments through the decoder of calls (decode.c, references for tensors), and the
 * graph builder (opd/graph.h), which checks the values against the schema, the references
 * (backwards only), the limits, and infers the node's outputs through its Meta kernel; an
 * error names the node and its operator. The finished graph is compiled through the
 * daemon's cache (opd_graph_compile): the same graph defined again, by any session, is a
 * hit; a hot registration of an operator it calls gives another key ([Note: Operator
 * generations]), as does a pass the admin disabled ([Note: Disabling a pass from the
 * admin]). The session keeps a reference under the client's id; release_graph and the end
 * of the session drop it, and the cache keeps its own until it evicts the graph.
 *
 * A run is routed, like a call, before it runs: the worker that takes it finds the graph
 * and sends it to the pool of its inputs' device (a CUDA input spec's; else the first CUDA
 * device its nodes compute on; the CPU otherwise), where it runs on the session's stream of
 * every CUDA device it touches, and records the graph's estimated cost on the job for the
 * scheduler. Then each input handle is looked up and checked against its spec (the count,
 * dtype, sizes, device; any layout), and the plan runs with the session's memory budget
 * installed, as a call's kernels do ([Note: Memory reserved before it is allocated]): its
 * intermediates and outputs are charged to the session before they are allocated, the
 * outputs' charge becomes their handles' bytes, and a run that would pass max_bytes_held
 * fails with RESOURCE_EXHAUSTED having kept nothing. The planned buffers of fused groups
 * belong to the compiled graph, which is shared, and count in the daemon's
 * max_bytes_total; a define is charged for them and the rest the graph holds ([Note: The
 * charge of a graph definition]), and a run never hands a session the graph's memory
 * ([Note: A compiled graph's memory never reaches a caller] in graph/src/exec/outputs.c). A graph
 * runs with the default dispatch state, the one its nodes were inferred and compiled with.
 *
 * The C tier: with graph_cc_dir, the daemon starts the process's C tier of fused programs
 * ([Note: The C tier of fused programs] in graph/src/plan/c_tier.c), whose compiler runs on the
 * tier's own thread; a directory that is not private, or a compiler that cannot be run,
 * stops the daemon from starting, with the reason.
 *
 * Dumps: with graph_dump_dir, each graph the cache did not hold is written to
 * graph-KEY.txt there (mode 0600): the IR as defined and after every pass, with the pass's
 * version and hits. What all dumps write is bounded by graph_dump_max_bytes: the dump that
 * reaches it is cut short, with a line saying so, and later ones are skipped.
 */
#include "graphs.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "connection.h"
#include "decode.h"
#include "gpu.h"
#include "metrics.h"
#include "opd/error.h"
#include "opd/graph_pass.h"
#include "opd/log.h"
#include "opd/memory.h"
#include "opd/utf8.h"
#include "session.h"

#define MAX_DISABLED 64

struct opd__graphs {
  opd_graph_cache *cache;
  char dump_dir[256];
  uint64_t dump_max;
  _Atomic uint64_t dump_bytes;
  _Atomic bool dump_full_logged;
  _Atomic uint64_t defines, define_errors, cache_hits, runs, run_errors, run_ns;
  bool c_tier; /* this daemon started the process's C tier (and stops it) */
};

/* ---- the disabled passes ([Note: Disabling a pass from the admin]) ---- */

static pthread_mutex_t disabled_lock = PTHREAD_MUTEX_INITIALIZER;
static char disabled[MAX_DISABLED][64];
static uint32_t ndisabled;

int opd__graph_pass_set_enabled(const char *name, bool enabled) {
  int rc = opd_graph_pass_check_name(name);
  if (rc < 0) return rc;
  pthread_mutex_lock(&disabled_lock);
  uint32_t i = 0;
  while (i < ndisabled && strcmp(disabled[i], name) != 0) i++;
  if (enabled && i < ndisabled) {
    memmove(disabled[i], disabled[i + 1], (ndisabled - i - 1) * sizeof *disabled);
    ndisabled--;
  } else if (!enabled && i == ndisabled) {
    if (ndisabled == MAX_DISABLED)
      rc = opd_error(OPD_ERESOURCE, "graph_pass: %d passes are disabled already", MAX_DISABLED);
    else
      snprintf(disabled[ndisabled++], sizeof *disabled, "%s", name);
  }
  pthread_mutex_unlock(&disabled_lock);
  return rc;
}

json_t *opd__graph_passes_disabled_json(void) {
  json_t *a = json_array();
  pthread_mutex_lock(&disabled_lock);
  for (uint32_t i = 0; a && i < ndisabled; i++)
    if (json_array_append_new(a, json_string(disabled[i])) < 0) {
      json_decref(a);
      a = NULL;
    }
  pthread_mutex_unlock(&disabled_lock);
  return a;
}

/* A copy of the set, for one compilation. */
static uint32_t disabled_snapshot(char names[][64], const char **ptrs) {
  pthread_mutex_lock(&disabled_lock);
  uint32_t n = ndisabled;
  memcpy(names, disabled, n * sizeof *disabled);
  pthread_mutex_unlock(&disabled_lock);
  for (uint32_t i = 0; i < n; i++) ptrs[i] = names[i];
  return n;
}

/* ---- start and stop ---- */

int opd__graphs_start(const opd_server_config *cfg, opd__graphs **out) {
  opd__graphs *g = opd__calloc(1, sizeof *g);
  if (!g) return opd_error(OPD_ENOMEM, "out of memory starting the graphs");
  int rc = opd_graph_cache_new(cfg->graph_cache_size, &g->cache);
  if (rc < 0) {
    opd__free(g);
    return rc;
  }
  snprintf(g->dump_dir, sizeof g->dump_dir, "%s", cfg->graph_dump_dir);
  g->dump_max = cfg->graph_dump_max_bytes;
  if (g->dump_dir[0]) {
    struct stat st;
    if (mkdir(g->dump_dir, 0700) < 0 && errno != EEXIST)
      rc = opd_error(OPD_EINVAL, "graph_dump_dir %s: cannot create it: %s", g->dump_dir,
                     strerror(errno));
    else if (stat(g->dump_dir, &st) < 0 || !S_ISDIR(st.st_mode))
      rc = opd_error(OPD_EINVAL, "graph_dump_dir %s: not a directory", g->dump_dir);
    else if (access(g->dump_dir, W_OK | X_OK) < 0)
      rc = opd_error(OPD_EINVAL, "graph_dump_dir %s: cannot write there: %s", g->dump_dir,
                     strerror(errno));
  }
  if (rc == 0 && cfg->graph_cc_dir[0]) {
    opd_graph_c_tier_options co = {.cc = cfg->graph_cc,
                                   .dir = cfg->graph_cc_dir,
                                   .timeout_ms = cfg->graph_cc_timeout_ms,
                                   .session_queue_max = cfg->graph_cc_session_queue,
                                   .max_bytes = cfg->graph_cc_max_bytes};
    rc = opd_graph_c_tier_start(&co);
    if (rc == OPD_EEXIST) { /* another daemon in this process started it: shared */
      opd_clear_error();
      rc = 0;
    } else if (rc == 0) {
      g->c_tier = true;
      opd_log(OPD_LOG_INFO, "graphs: C tier on (cache %s)", cfg->graph_cc_dir);
    } else {
      rc = opd_error(rc, "graph_cc_dir: %s", opd_last_error());
    }
  }
  if (rc < 0) {
    opd__graphs_stop(g);
    return rc;
  }
  *out = g;
  return 0;
}

void opd__graphs_stop(opd__graphs *g) {
  if (!g) return;
  if (g->c_tier) opd_graph_c_tier_stop();
  opd_graph_cache_free(g->cache);
  opd__free(g);
}

opd_graph_cache *opd__graphs_cache(opd__graphs *g) {
  return g->cache;
}

void opd__graphs_counters_get(opd__graphs *g, opd__graphs_counters *out) {
  *out = (opd__graphs_counters){
      .defines = atomic_load_explicit(&g->defines, memory_order_relaxed),
      .define_errors = atomic_load_explicit(&g->define_errors, memory_order_relaxed),
      .cache_hits = atomic_load_explicit(&g->cache_hits, memory_order_relaxed),
      .runs = atomic_load_explicit(&g->runs, memory_order_relaxed),
      .run_errors = atomic_load_explicit(&g->run_errors, memory_order_relaxed),
      .run_ns = atomic_load_explicit(&g->run_ns, memory_order_relaxed),
      .dump_bytes = atomic_load_explicit(&g->dump_bytes, memory_order_relaxed)};
}

static opd__graphs *graphs_of(const opd__job *job) {
  return job->session->graph_ctx;
}

/* ---- dumps ---- */

/* Takes up to `want` bytes of the dump budget: how many were granted. */
static size_t dump_grant(opd__graphs *g, size_t want) {
  uint64_t used = atomic_load_explicit(&g->dump_bytes, memory_order_relaxed), take;
  do {
    take = used >= g->dump_max ? 0 : g->dump_max - used < want ? g->dump_max - used : want;
    if (!take) return 0;
  } while (!atomic_compare_exchange_weak_explicit(&g->dump_bytes, &used, used + take,
                                                  memory_order_relaxed, memory_order_relaxed));
  return (size_t)take;
}

static bool dump_write(opd__graphs *g, int fd, const char *text, bool *cut) {
  if (*cut) return false;
  size_t n = strlen(text), granted = dump_grant(g, n);
  for (size_t off = 0; off < granted;) {
    ssize_t w = write(fd, text + off, granted - off);
    if (w <= 0) return false;
    off += (size_t)w;
  }
  if (granted < n) *cut = true;
  return granted == n;
}

/* Writes a newly compiled graph's IR, as defined and after each pass. */
static void dump_graph(opd__graphs *g, opd_compiled_graph *cg) {
  if (!g->dump_dir[0]) return;
  if (atomic_load_explicit(&g->dump_bytes, memory_order_relaxed) >= g->dump_max) {
    if (!atomic_exchange(&g->dump_full_logged, true))
      opd_log(OPD_LOG_WARN,
              "graph_dump_dir: graph_dump_max_bytes (%" PRIu64 ") reached: no more "
              "graph dumps",
              g->dump_max);
    return;
  }
  json_t *doc = opd_compiled_graph_json(cg);
  const char *key = json_string_value(json_object_get(doc, "key"));
  char path[sizeof g->dump_dir + 64];
  snprintf(path, sizeof path, "%s/graph-%s.txt", g->dump_dir, key ? key : "unknown");
  int fd = doc ? open(path, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600) : -1;
  if (fd < 0) {
    if (doc) opd_log(OPD_LOG_WARN, "graph dump %s: %s", path, strerror(errno));
    json_decref(doc);
    return;
  }
  bool cut = false;
  char line[256];
  snprintf(line, sizeof line,
           "# compiled graph %" PRId64 ", key %s, nodes %" PRId64 " -> %" PRId64 "\n# as defined\n",
           (int64_t)json_integer_value(json_object_get(doc, "id")), key ? key : "",
           (int64_t)json_integer_value(json_object_get(doc, "nodes_before")),
           (int64_t)json_integer_value(json_object_get(doc, "nodes_after")));
  bool ok = dump_write(g, fd, line, &cut);
  const char *before = json_string_value(json_object_get(doc, "ir_before"));
  ok = ok && dump_write(g, fd, before ? before : "", &cut);
  json_t *passes = json_object_get(doc, "passes"), *p;
  size_t i;
  json_array_foreach(passes, i, p) {
    const char *ir = json_string_value(json_object_get(p, "ir"));
    snprintf(line, sizeof line, "\n# after pass %s (version %" PRId64 ", hits %" PRId64 ")%s\n",
             json_string_value(json_object_get(p, "name")),
             (int64_t)json_integer_value(json_object_get(p, "version")),
             (int64_t)json_integer_value(json_object_get(p, "hits")), ir ? "" : ": disabled");
    ok = ok && dump_write(g, fd, line, &cut) && (!ir || dump_write(g, fd, ir, &cut));
  }
  if (cut) {
    static const char note[] = "\n# ... cut: graph_dump_max_bytes reached\n";
    if (write(fd, note, sizeof note - 1) < 0) ok = false;
  }
  if (!ok && !cut) opd_log(OPD_LOG_WARN, "graph dump %s: %s", path, strerror(errno));
  close(fd);
  json_decref(doc);
}

/* ---- define ---- */

static int input_spec(const Opd__V1__ValueSpec *w, uint32_t i, opd_graph_input_spec *spec) {
  if (w->n_shape > OPD_MAX_DIMS)
    return opd_error(OPD_EINVAL, "graph input %u: %zu dimensions (at most %d)", i, w->n_shape,
                     OPD_MAX_DIMS);
  if (w->kind != OPD__V1__VALUE_SPEC__KIND__INPUT &&
      w->kind != OPD__V1__VALUE_SPEC__KIND__PARAMETER)
    return opd_error(OPD_EINVAL, "graph input %u: kind %d is neither INPUT nor PARAMETER", i,
                     (int)w->kind);
  opd_device dev = {OPD_DEVICE_CPU, -1};
  if (w->device && w->device->type == OPD_DEVICE_CUDA) {
    int rc = opd__gpu_upload_device(w->device->index, &dev);
    if (rc < 0) {
      char msg[300];
      snprintf(msg, sizeof msg, "%s", opd_last_error());
      return opd_error(rc, "graph input %u: %s", i, msg);
    }
  } else if (w->device &&
             (w->device->type != OPD_DEVICE_CPU || w->device->index < -1 || w->device->index > 0)) {
    return opd_error(OPD_EINVAL,
                     "graph input %u: inputs are on the CPU (device type 0) or a CUDA device "
                     "(type 1), not device type %d index %d",
                     i, (int)w->device->type, (int)w->device->index);
  }
  *spec = (opd_graph_input_spec){
      (opd_dtype)w->dtype, w->shape, (uint32_t)w->n_shape, dev,
      w->kind == OPD__V1__VALUE_SPEC__KIND__PARAMETER ? OPD_GRAPH_PARAMETER : OPD_GRAPH_INPUT};
  return 0;
}

static void destroy_args(opd_graph_arg *args, uint32_t n) {
  for (uint32_t i = 0; i < n; i++)
    if (args[i].kind == OPD_GRAPH_ARG_VALUE) opd_iv_destroy(&args[i].value);
}

/* Node j: its operator, its arguments decoded as a call's, the builder's checks. */
static int add_node(opd__job *job, opd_graph *g, uint32_t j, const Opd__V1__GraphNode *n) {
  const opd_operator *op = n->op ? opd_find_schema(n->op) : NULL;
  const opd_schema *schema = op ? opd_op_schema(op) : NULL;
  if (!schema) /* the builder words it, naming the node */
    return opd_graph_add_node(g, n->op ? n->op : "", NULL, 0);
  char where[200];
  snprintf(where, sizeof where, "graph node %u (%s)", j, opd_op_name(op));
  if (n->n_args > schema->num_args)
    return opd_error(OPD_EINVAL, "%s expected at most %u argument(s) but received %zu argument(s)",
                     where, schema->num_args, n->n_args);
  opd_graph_arg args[OPD_SCHEMA_MAX_ARGS];
  uint32_t nargs = 0;
  int rc = 0;
  for (; nargs < n->n_args && rc == 0; nargs++)
    rc = opd__decode_graph_arg(job, where, &schema->args[nargs], n->args[nargs], &args[nargs]);
  if (rc == 0) rc = opd_graph_add_node(g, opd_op_name(op), args, nargs);
  destroy_args(args, nargs);
  return rc < 0 ? rc : 0;
}

/* The graph of a define, built and finished: 0 and *out, or an error (`*op` the operator of
 * the node it is about). */
static int build_graph(opd__job *job, const Opd__V1__DefineGraph *d, opd_graph **out,
                       const char **op) {
  const opd_server_config *cfg = job->session->cfg;
  if (d->n_nodes > cfg->max_graph_nodes)
    return opd_error(OPD_EINVAL,
                     "graph node %u: the graph has %zu nodes, more than "
                     "max_graph_nodes (%u)",
                     cfg->max_graph_nodes, d->n_nodes, cfg->max_graph_nodes);
  if (d->n_inputs > cfg->max_graph_inputs)
    return opd_error(OPD_EINVAL,
                     "graph input %u: the graph has %zu inputs, more than "
                     "max_graph_inputs (%u)",
                     cfg->max_graph_inputs, d->n_inputs, cfg->max_graph_inputs);
  opd_graph_limits limits = {cfg->max_graph_nodes, cfg->max_graph_inputs, cfg->max_graph_outputs,
                             cfg->max_graph_arg_bytes};
  opd_graph *g;
  int rc = opd_graph_new(&limits, &g);
  for (size_t i = 0; i < d->n_inputs && rc >= 0; i++) {
    opd_graph_input_spec spec;
    if ((rc = input_spec(d->inputs[i], (uint32_t)i, &spec)) == 0)
      rc = opd_graph_add_input(g, &spec);
  }
  for (size_t j = 0; j < d->n_nodes && rc >= 0; j++) {
    rc = add_node(job, g, (uint32_t)j, d->nodes[j]);
    if (rc < 0) *op = d->nodes[j]->op;
  }
  opd_graph_ref *outs = NULL;
  if (rc >= 0 && d->n_outputs > cfg->max_graph_outputs)
    rc = opd_error(OPD_EINVAL, "graph: %zu outputs, more than max_graph_outputs (%u)", d->n_outputs,
                   cfg->max_graph_outputs);
  else if (rc >= 0 && !(outs = opd__arena_alloc(&job->arena,
                                                (d->n_outputs ? d->n_outputs : 1) * sizeof *outs)))
    rc = opd_error(OPD_ENOMEM, "out of memory for a graph's outputs");
  for (size_t i = 0; i < d->n_outputs && rc >= 0; i++) {
    const Opd__V1__ValueRef *r = d->outputs[i];
    if (r->all)
      rc = opd_error(OPD_EINVAL,
                     "graph output %zu: a whole list is not an output; name each "
                     "tensor of it (ValueRef.output)",
                     i);
    outs[i] = (opd_graph_ref){r->position, r->output};
  }
  if (rc >= 0) rc = opd_graph_set_outputs(g, outs, (uint32_t)d->n_outputs);
  if (rc >= 0) rc = opd_graph_finish(g);
  if (rc < 0) {
    opd_graph_free(g);
    return rc;
  }
  *out = g;
  return 0;
}

static void fill_info(Opd__V1__GraphInfo *info, uint64_t id, opd_compiled_graph *cg, bool hit,
                      char *key) {
  opd_graph_stats s;
  opd_compiled_graph_stats(cg, &s);
  memcpy(key, s.key, sizeof s.key);
  opd__v1__graph_info__init(info);
  info->graph = id;
  info->compiled = s.id;
  info->cache_hit = hit;
  info->nodes_before = s.nodes_before;
  info->nodes_after = s.nodes_after;
  info->kernels = s.kernels;
  info->kernels_last_run = s.kernels_last_run;
  info->softmax_patterns = s.softmax_patterns;
  info->groups = s.groups;
  info->runs = s.runs;
  info->compile_us = s.compile_ns / 1000;
  info->key = key;
}

/* [Note: The charge of a graph definition]
 * A graph holds memory for as long as the session keeps it: its IR, texts, plan, run
 * context, constants and planned buffers ([Note: The charge of a graph] in
 * graph/src/exec/footprint.c). A session is charged, against max_bytes_held, for every graph it
 * defines, before the graph is compiled: the library's estimate from the finished graph is
 * reserved first (past the limit, the define fails with RESOURCE_EXHAUSTED naming
 * max_bytes_held, and nothing is compiled), then trued up to what the compiled graph holds.
 * The estimate is 1.3x to 1.4x of that on graphs of 40 to 1,500 nodes ([Note: The estimate
 * of a graph's charge] in graph/src/exec/footprint.c), so a define near the limit is refused only
 * when it would not fit. What the compiled graph holds includes the programs its fused groups
 * may compile later (a C tier module, a CUDA group's program: [Note: The programs of fused
 * groups are charged] there); a run context made for a run concurrent with another is
 * charged to that run instead ([Note: Run contexts of concurrent runs] in graph/src/exec/exec.c).
 * A cache hit shares one compiled graph between sessions, yet each session is charged what
 * its define would have cost alone (the compiled graph's bytes): a session's limit then
 * never depends on what other sessions defined or released, and no session can hold a
 * graph for free by defining it after another. The charge is given back when the session
 * releases the graph; a session's end drops its budget with it. The daemon-wide limit
 * (max_bytes_total) is charged once per compiled graph by the library, which counts it as
 * CPU memory in use while it exists (the cache's copy included). Building the graph before
 * the estimate holds at most what the configured graph limits allow (max_graph_nodes,
 * max_graph_arg_bytes, ...), as decoding a request does. */
static int charge(opd__session *s, uint64_t id, uint64_t bytes, uint64_t *charged) {
  int rc = opd_mem_budget_reserve(&s->budget, bytes);
  if (rc < 0) {
    char msg[300];
    snprintf(msg, sizeof msg, "%s", opd_last_error());
    return opd_error(rc, "define_graph %" PRIu64 ": the graph holds about %" PRIu64 " bytes: %s",
                     id, *charged + bytes, msg);
  }
  *charged += bytes;
  return 0;
}

static void uncharge(opd__session *s, uint64_t bytes, uint64_t *charged) {
  if (bytes) opd_mem_budget_release(&s->budget, bytes);
  *charged -= bytes;
}

int opd__graph_define(opd__job *job, Opd__V1__Response *resp, const char **op) {
  const Opd__V1__DefineGraph *d = job->req->define_graph;
  opd__session *s = job->session;
  opd__graphs *gs = graphs_of(job);
  atomic_fetch_add_explicit(&gs->defines, 1, memory_order_relaxed);
  int rc = 0;
  if (d->graph == 0)
    rc = opd_error(OPD_EINVAL, "define_graph: graph id 0 is never valid; choose a nonzero id");
  else if (opd__session_graph(s, d->graph))
    rc = opd_error(OPD_EINVAL,
                   "define_graph: graph %" PRIu64 " is already defined in this session "
                   "(release_graph it first, or choose another id)",
                   d->graph);
  else if (s->graphs.count >= s->cfg->max_graphs)
    rc = opd_error(OPD_ERESOURCE,
                   "session limit reached: the session holds %zu graphs (max_graphs); "
                   "release_graph some first",
                   s->graphs.count);
  opd_graph *g = NULL;
  opd_compiled_graph *cg = NULL;
  bool hit = false;
  uint64_t charged = 0; /* [Note: The charge of a graph definition] */
  /* literals the nodes carry are charged to the session while they are made */
  opd_mem_budget_install(&s->budget);
  if (rc == 0) rc = build_graph(job, d, &g, op);
  if (rc == 0 && (rc = charge(s, d->graph, opd_graph_define_estimate(g), &charged)) < 0)
    opd_graph_free(g);
  if (rc == 0) {
    char names[MAX_DISABLED][64];
    const char *ptrs[MAX_DISABLED];
    opd_graph_options options;
    opd_graph_options_default(&options);
    options.benefit_runs = job->session->cfg->graph_benefit_runs;
    options.ndisabled = disabled_snapshot(names, ptrs);
    options.disabled_passes = ptrs;
    *op = NULL;
    rc = opd_graph_compile(g, &options, gs->cache, &cg, &hit);
  }
  opd_mem_budget_uninstall();
  if (rc == 0) { /* the estimate trued up to what the graph holds */
    uint64_t bytes = opd_compiled_graph_bytes(cg);
    if (bytes > charged)
      rc = charge(s, d->graph, bytes - charged, &charged);
    else
      uncharge(s, charged - bytes, &charged);
    if (rc == 0) rc = opd__session_add_graph(s, d->graph, cg);
    if (rc < 0) opd_compiled_graph_release(cg);
  }
  if (rc < 0) {
    uncharge(s, charged, &charged);
    atomic_fetch_add_explicit(&gs->define_errors, 1, memory_order_relaxed);
    return rc;
  }
  if (hit)
    atomic_fetch_add_explicit(&gs->cache_hits, 1, memory_order_relaxed);
  else
    dump_graph(gs, cg);
  Opd__V1__GraphInfo info;
  char key[17];
  fill_info(&info, d->graph, cg, hit, key);
  resp->body_case = OPD__V1__RESPONSE__BODY_DEFINE_GRAPH;
  resp->define_graph = &info;
  return opd__job_pack(job, resp);
}

/* ---- run ---- */

static opd_compiled_graph *find_graph(opd__session *s, uint64_t id, const char *what) {
  opd_compiled_graph *cg = opd__session_graph(s, id);
  if (!cg)
    opd_error(OPD_ENOENT,
              "%s: graph %" PRIu64 " is not defined in this session (never defined here, its "
              "define failed, or it was released)",
              what, id);
  return cg;
}

int opd__graph_route(opd__job *job, opd_device *device) {
  opd_compiled_graph *cg = find_graph(job->session, job->req->run_graph->graph, "run_graph");
  if (!cg) return opd_last_error_code();
  job->graph = cg;
  *device = (opd_device){OPD_DEVICE_CPU, -1};
  for (uint32_t i = 0; i < opd_compiled_graph_num_inputs(cg); i++) {
    opd_device d = opd_compiled_graph_input_device(cg, i);
    if (d.type == OPD_DEVICE_CUDA) {
      *device = d;
      return 0;
    }
  }
  /* no CUDA input, but CUDA work (a _to_copy to a GPU, a factory on one): on a CPU worker
   * it would run on the per-thread default stream, not ordered with the session's stream
   * that later calls on its outputs use ([Note: A session's streams on every device a job
   * touches] in gpu.c) */
  uint64_t cuda = opd_compiled_graph_cuda_devices(cg);
  if (cuda) *device = (opd_device){OPD_DEVICE_CUDA, (int16_t)__builtin_ctzll(cuda)};
  return 0;
}

int opd__graph_run(opd__job *job) {
  const Opd__V1__RunGraph *r = job->req->run_graph;
  opd__session *s = job->session;
  opd__graphs *gs = graphs_of(job);
  opd_compiled_graph *cg = job->graph ? job->graph : find_graph(s, r->graph, "run_graph");
  job->graph = NULL;
  if (!cg) return opd_last_error_code();
  uint32_t nin = opd_compiled_graph_num_inputs(cg), nout = opd_compiled_graph_num_outputs(cg);
  if (r->n_inputs != nin)
    return opd_error(OPD_EINVAL,
                     "run_graph %" PRIu64 ": %zu input handles given, the graph takes %u", r->graph,
                     r->n_inputs, nin);
  opd_tensor **in = opd__arena_alloc(&job->arena, (nin ? nin : 1) * sizeof *in);
  opd_tensor **out = opd__arena_alloc(&job->arena, (nout ? nout : 1) * sizeof *out);
  if (!in || !out) return opd_error(OPD_ENOMEM, "out of memory for a graph run");
  for (uint32_t i = 0; i < nin; i++)
    if (!(in[i] = opd__session_lookup(s, r->inputs[i])))
      return opd_error(OPD_ENOENT,
                       "run_graph %" PRIu64 ": input %u: unknown tensor handle %" PRIu64
                       " (never issued to this session, or released)",
                       r->graph, i, r->inputs[i]);
  opd_mem_budget_install(&s->budget); /* [Note: Graphs in the daemon] */
  uint64_t t0 = opd__metrics_ticks();
  int rc = opd_compiled_graph_run(cg, in, nin, out, nout);
  job->kernel_ns = opd__metrics_ticks_ns(t0, opd__metrics_ticks());
  atomic_fetch_add_explicit(&gs->runs, 1, memory_order_relaxed);
  atomic_fetch_add_explicit(&gs->run_ns, job->kernel_ns, memory_order_relaxed);
  opd__count(&s->calls, 1); /* a run is one call ([Note: Counters with one writer at a time]) */
  if (rc == 0) {
    rc = opd__job_reply_tensors(job, out, nout); /* takes the outputs' references */
  } else {
    char msg[600];
    snprintf(msg, sizeof msg, "%s", opd_last_error());
    rc = opd_error(rc, "run_graph %" PRIu64 ": %s", r->graph, msg);
  }
  opd_mem_budget_uninstall();
  if (rc < 0) atomic_fetch_add_explicit(&gs->run_errors, 1, memory_order_relaxed);
  return rc;
}

/* ---- release, describe ---- */

int opd__graph_release(opd__job *job) {
  const Opd__V1__ReleaseGraph *r = job->req->release_graph;
  for (size_t i = 0; i < r->n_graphs; i++)
    if (!find_graph(job->session, r->graphs[i], "release_graph")) {
      char msg[300];
      snprintf(msg, sizeof msg, "%s", opd_last_error());
      return opd_error(OPD_ENOENT, "%s; nothing was released", msg);
    }
  for (size_t i = 0; i < r->n_graphs; i++) { /* a repeated id goes once */
    opd_compiled_graph *cg = opd__session_take_graph(job->session, r->graphs[i]);
    if (!cg) continue;
    /* [Note: The charge of a graph definition] */
    opd_mem_budget_release(&job->session->budget, opd_compiled_graph_bytes(cg));
    opd_compiled_graph_release(cg);
  }
  return 0;
}

int opd__graph_describe(opd__job *job, Opd__V1__Response *resp) {
  const Opd__V1__DescribeGraph *d = job->req->describe_graph;
  opd_compiled_graph *cg = find_graph(job->session, d->graph, "describe_graph");
  if (!cg) return opd_last_error_code();
  Opd__V1__DescribeGraphReply reply = OPD__V1__DESCRIBE_GRAPH_REPLY__INIT;
  Opd__V1__GraphInfo info;
  char key[17];
  fill_info(&info, d->graph, cg, false, key);
  reply.info = &info;
  char *text = NULL;
  if (d->introspection) {
    json_t *doc = opd_compiled_graph_json(cg);
    text = doc ? json_dumps(doc, JSON_COMPACT) : NULL;
    json_decref(doc);
    if (!text) return opd_error(OPD_ENOMEM, "describe_graph: out of memory");
    reply.introspection = text;
  }
  resp->body_case = OPD__V1__RESPONSE__BODY_DESCRIBE_GRAPH;
  resp->describe_graph = &reply;
  int rc = opd__job_pack(job, resp);
  opd__free(text); /* jansson allocates with opd__malloc (loop.c) */
  if (rc < 0) {
    char msg[300];
    snprintf(msg, sizeof msg, "%s", opd_last_error());
    return opd_error(rc,
                     "describe_graph %" PRIu64 ": %s (ask without introspection, or read "
                     "GET /v1/graphs/{id} of the status endpoint)",
                     d->graph, msg);
  }
  return 0;
}

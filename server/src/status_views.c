/* status_views.c: the JSON views of the status endpoint (docs/STATUS.md): /v1/info, the key
 * universe, the operators and their dispatch tables, the fallbacks, the sessions, memory,
 * the graphs. Each builds its document from the dispatcher's introspection and what the
 * server shows through server_view.h; the HTTP side (status.c) sends it. They run on the
 * status thread ([Note: The status thread] in status.c).
 */
#include "status_views.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gpu.h"
#include "graphs.h"
#include "opd/introspect.h"
#include "opd/memory.h"
#include "server_view.h"
#include "session.h"

/* bytes of a name or id echoed in an error message */
#define MAX_ECHO_BYTES 300

static json_t *keyset_names(opd_keyset s) {
  json_t *a = json_array();
  opd_keyset_iter it = opd_keyset_iter_begin(s);
  opd_dispatch_key k;
  while (a && opd_keyset_iter_next(&it, &k)) json_array_append_new(a, json_string(opd_key_name(k)));
  return a;
}

/* ---- endpoints ---- */

json_t *opd__status_info_json(opd_server *srv, uint64_t up, const char *address) {
  json_t *listen = json_array();
  for (size_t i = 0; i < opd_server_num_listeners(srv); i++)
    json_array_append_new(listen, opd_json_text(opd_server_listener_url(srv, i)));
#ifdef NDEBUG
  const bool assertions = false;
#else
  const bool assertions = true;
#endif
  json_t *j = json_pack("{s:s, s:{s:s, s:b}, s:[s, s], s:[{s:s, s:i, s:I}, {s:s, s:i}], s:f, s:o, "
                        "s:o, s:I}",
                        "version", OPD_VERSION, "build", "compiler", "gcc " __VERSION__,
                        "assertions", assertions, "backends", "CPU", "Meta", "devices", "type",
                        "cpu", "index", 0, "workers", (json_int_t)opd__server_cpu_workers(srv),
                        "type", "meta", "index", 0, "uptime_s", (double)up / 1e9, "listen", listen,
                        "status", opd_json_text(address), "pid", (json_int_t)getpid());
  if (j) json_object_set_new(j, "draining", json_boolean(opd_server_draining(srv)));
  if (j) opd__gpu_status(srv, j); /* "cuda", and the GPUs in "devices" */
  return j;
}

static const char *key_category(opd_dispatch_key k) {
  switch (opd_key_kind_of(k)) {
  case OPD_KEY_KIND_UNDEFINED: return "undefined";
  case OPD_KEY_KIND_FUNCTIONALITY:
    return k < OPD_KEY_BackendSelect ? "non_customizable_backend"
                                     : "non_customizable_functionality";
  case OPD_KEY_KIND_PER_BACKEND: return "per_backend_functionality";
  case OPD_KEY_KIND_RUNTIME_BACKEND: return "per_backend_runtime";
  case OPD_KEY_KIND_ALIAS: return "alias";
  case OPD_KEY_KIND_INVALID: break;
  }
  return NULL;
}

static json_t *bits_json(uint64_t repr) {
  json_t *a = json_array();
  for (int b = 0; a && b < 64; b++)
    if (repr >> b & 1) json_array_append_new(a, json_integer(b));
  return a;
}

json_t *opd__status_keys_json(void) {
  json_t *backends = json_array(), *keys = json_array(), *slots = json_array();
  for (int b = 0; b < OPD_NUM_BACKENDS; b++)
    json_array_append_new(
        backends, json_pack("{s:s, s:i}", "name", opd_backend_name((opd_backend)b), "bit", b));
  for (int i = 0; i < OPD_NUM_KEYS; i++) {
    opd_dispatch_key k = (opd_dispatch_key)i;
    const char *name = opd_key_name(k), *cat = name ? key_category(k) : NULL;
    if (!cat) continue;
    json_t *j = json_pack("{s:s, s:i, s:s}", "name", name, "value", i, "category", cat);
    if (opd_key_is_alias(k)) {
      json_object_set_new(j, "covers", keyset_names(opd_alias_keyset(k)));
    } else {
      json_object_set_new(j, "bits", bits_json(opd_keyset_of(k).repr));
      json_object_set_new(j, "repr", json_sprintf("0x%016" PRIx64, opd_keyset_of(k).repr));
    }
    if (opd_key_kind_of(k) == OPD_KEY_KIND_RUNTIME_BACKEND) {
      json_object_set_new(j, "functionality", json_string(opd_key_name(opd_key_functionality(k))));
      json_object_set_new(j, "backend", json_string(opd_backend_name(opd_key_backend(k))));
    }
    json_object_set_new(j, "slot",
                        opd_key_is_runtime(k) ? json_integer(opd_key_slot(k)) : json_null());
    json_array_append_new(keys, j);
  }
  for (unsigned s = 0; s < OPD_NUM_RUNTIME_SLOTS; s++)
    json_array_append_new(slots, json_string(opd_key_name(opd_slot_key(s))));
  return json_pack("{s:i, s:i, s:i, s:o, s:o, s:o}", "num_backends", OPD_NUM_BACKENDS,
                   "num_functionalities", OPD_NUM_FUNCTIONALITIES, "num_slots",
                   OPD_NUM_RUNTIME_SLOTS, "backends", backends, "keys", keys, "slots", slots);
}

static json_t *schema_json(const opd_operator *op) {
  const opd_schema *s = opd_op_schema(op);
  if (!s) return json_null();
  int n = opd_schema_format(s, NULL, 0);
  char *buf = n >= 0 ? opd__malloc((size_t)n + 1) : NULL;
  if (!buf) return json_null();
  opd_schema_format(s, buf, (size_t)n + 1);
  json_t *j = opd_json_text(buf);
  opd__free(buf);
  return j;
}

/* [Note: The status thread]: the schema stays alive while the thread is online */
static void add_op(const opd_operator *op, void *arg) {
  json_array_append_new(arg, json_pack("{s:o, s:o}", "name", opd_json_text(opd_op_name(op)),
                                       "schema", schema_json(op)));
}

json_t *opd__status_ops_json(void) {
  json_t *a = json_array();
  opd_for_each_op(add_op, a);
  return json_pack("{s:I, s:o}", "count", (json_int_t)json_array_size(a), "ops", a);
}

typedef struct fallback_scan {
  json_t *found[OPD_NUM_RUNTIME_SLOTS];
} fallback_scan;

static void scan_fallbacks(const opd_operator *op, void *arg) {
  fallback_scan *f = arg;
  for (unsigned s = 0; s < OPD_NUM_RUNTIME_SLOTS; s++) {
    if (f->found[s]) continue;
    json_t *j = opd_op_slot_json(op, opd_slot_key(s));
    const char *src = json_string_value(json_object_get(j, "source"));
    const char *scope = json_string_value(json_object_get(j, "scope"));
    if (src && (strcmp(src, "fallback") == 0 ||
                (strcmp(src, "fallthrough") == 0 && scope && strcmp(scope, "global") == 0)))
      f->found[s] = j;
    else
      json_decref(j);
  }
}

json_t *opd__status_fallbacks_json(void) {
  fallback_scan f = {{0}};
  opd_for_each_op(scan_fallbacks, &f);
  json_t *a = json_array();
  for (unsigned s = 0; s < OPD_NUM_RUNTIME_SLOTS; s++) {
    if (!f.found[s]) continue;
    json_object_set_new(f.found[s], "key", json_string(opd_key_name(opd_slot_key(s))));
    json_array_append_new(a, f.found[s]);
  }
  return json_pack("{s:o}", "fallbacks", a);
}

json_t *opd__status_sessions_json(opd_server *srv) {
  json_t *a = json_array();
  opd__session_registry *r = opd__server_sessions(srv);
  pthread_mutex_lock(&r->mu);
  for (opd__session *s = r->head; s; s = s->reg_next) {
    const opd__sched_entry *e = &s->sched; /* [Note: Fair sharing of workers] */
    const char *priority =
        opd__priority_name((opd_priority)atomic_load_explicit(&e->priority, memory_order_relaxed));
    json_t *j = json_pack(
        "{s:I, s:o, s:I, s:I, s:I, s:I, s:I, s:o, s:o, s:s, s:I, s:f}", "id", (json_int_t)s->id,
        "peer", opd_json_text(s->peer ? s->peer : ""), "calls",
        (json_int_t)atomic_load_explicit(&s->calls, memory_order_relaxed), "errors",
        (json_int_t)atomic_load_explicit(&s->errors, memory_order_relaxed), "handles",
        (json_int_t)atomic_load_explicit(&s->num_handles, memory_order_relaxed), "bytes_held",
        (json_int_t)atomic_load_explicit(&s->bytes_held, memory_order_relaxed), "graphs",
        (json_int_t)atomic_load_explicit(&s->num_graphs, memory_order_relaxed), "include",
        keyset_names(
            opd_keyset_from_repr(atomic_load_explicit(&s->included_repr, memory_order_relaxed))),
        "exclude",
        keyset_names(
            opd_keyset_from_repr(atomic_load_explicit(&s->excluded_repr, memory_order_relaxed))),
        "priority", priority ? priority : "normal", "jobs",
        (json_int_t)atomic_load_explicit(&e->jobs, memory_order_relaxed), "cost_ms",
        (double)atomic_load_explicit(&e->cost_ns, memory_order_relaxed) / 1e6);
    json_array_append_new(a, j);
  }
  pthread_mutex_unlock(&r->mu);
  return json_pack("{s:I, s:o}", "count", (json_int_t)json_array_size(a), "sessions", a);
}

static json_t *memory_device_json(const char *name, int type) {
  opd_memory_stats m;
  opd_memory_stats_get(type, &m);
  return json_pack("{s:s, s:i, s:I, s:I, s:I, s:I}", "device", name, "index", 0, "in_use",
                   (json_int_t)m.in_use, "peak", (json_int_t)m.peak, "cached", (json_int_t)m.cached,
                   "limit", (json_int_t)m.limit);
}

json_t *opd__status_memory_json(void) {
  return json_pack("{s:[o, o], s:I}", "devices", memory_device_json("cpu", OPD_DEVICE_CPU),
                   memory_device_json("meta", OPD_DEVICE_META), "tensor_slab_bytes",
                   (json_int_t)opd_tensor_slab_bytes());
}

static json_t *dispatch_json(const opd_operator *op, const opd__status_target *t) {
  /* the call path reads the thread's dispatch state: install the asked-for one */
  opd_local_dispatch_state saved = opd_tls_get();
  opd_tls_set((opd_local_dispatch_state){
      opd_keyset_union(opd_default_dispatch_state.included, t->include),
      opd_keyset_union(opd_default_dispatch_state.excluded, t->exclude)});
  opd_local_dispatch_state used = opd_tls_get();
  opd_keyset ks;
  json_t *where = opd_op_dispatch_json(op, t->keys, &ks); /* key, kernel, entry: one state */
  opd_tls_set(saved);
  json_t *j =
      where ? json_pack("{s:o, s:o, s:o, s:o, s:o}", "op", opd_json_text(opd_op_name(op)), "keys",
                        keyset_names(t->keys), "include", keyset_names(used.included), "exclude",
                        keyset_names(used.excluded), "dispatch_keyset", keyset_names(ks))
            : NULL;
  if (j && json_object_update(j, where) < 0) {
    json_decref(j);
    j = NULL;
  }
  json_decref(where);
  return j;
}

int opd__status_op_answer(opd__status_target *t, json_t **out) {
  *out = NULL;
  const opd_operator *op = t->name[0] ? opd_find_op(t->name) : NULL;
  if (!op) {
    char shown[MAX_ECHO_BYTES + 1];
    return opd__status_target_error(t, 404, "unknown operator '%s'",
                                    opd__status_echo(shown, sizeof shown, t->name));
  }
  *out = t->route == OPD__STATUS_OP_DISPATCH ? dispatch_json(op, t) : opd_op_json(op);
  return 200;
}

/* ---- /v1/graphs ---- */

/* The cache's compiled graphs and counters, the daemon's graph counters, the passes the
 * admin disabled ([Note: Graphs in the daemon] in graphs.c). */
json_t *opd__status_graphs_json(opd_server *srv) {
  json_t *j = opd_graph_cache_json(opd__graphs_cache(opd__server_graphs(srv)));
  opd__graphs_counters n;
  opd__graphs_counters_get(opd__server_graphs(srv), &n);
  if (!j || json_object_set_new(j, "disabled_passes", opd__graph_passes_disabled_json()) < 0 ||
      json_object_set_new(j, "defines", json_integer((json_int_t)n.defines)) < 0 ||
      json_object_set_new(j, "define_errors", json_integer((json_int_t)n.define_errors)) < 0 ||
      json_object_set_new(j, "runs", json_integer((json_int_t)n.runs)) < 0 ||
      json_object_set_new(j, "run_errors", json_integer((json_int_t)n.run_errors)) < 0 ||
      json_object_set_new(j, "c_tier", opd_graph_c_tier_json()) < 0) {
    json_decref(j);
    return NULL;
  }
  return j;
}

int opd__status_graph_answer(opd_server *srv, opd__status_target *t, json_t **out) {
  *out = NULL;
  const char *id_text = t->name;
  char *end = NULL, shown[MAX_ECHO_BYTES + 1];
  errno = 0;
  unsigned long long id = id_text[0] >= '1' && id_text[0] <= '9' ? strtoull(id_text, &end, 10) : 0;
  if (!id || errno || *end)
    return opd__status_target_error(t, 404,
                                    "no graph '%s': an id is a positive decimal number (GET "
                                    "/v1/graphs lists them)",
                                    opd__status_echo(shown, sizeof shown, id_text));
  opd_compiled_graph *cg =
      opd_graph_cache_lookup_id(opd__graphs_cache(opd__server_graphs(srv)), id);
  if (!cg)
    return opd__status_target_error(t, 404,
                                    "no graph %llu in the cache (GET /v1/graphs lists them)", id);
  *out = opd_compiled_graph_json(cg);
  opd_compiled_graph_release(cg);
  return 200;
}

/* status_metrics.c: GET /metrics of the status endpoint, the Prometheus text exposition
 * (docs/STATUS.md lists the metrics): the operators' call, error and latency counters
 * (metrics.h), the error responses, the loop's own requests, memory, the sessions, the
 * graphs and the registrations, written into a growable text buffer. It runs on the status
 * thread ([Note: The status thread] in status.c).
 */
#include "status_views.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "graphs.h"
#include "metrics.h"
#include "opd.pb-c.h"
#include "opd/introspect.h"
#include "opd/memory.h"
#include "opd/utf8.h"
#include "server_view.h"
#include "session.h"

/* ---- a growable text buffer ---- */

typedef struct sbuf {
  char *p;
  size_t len, cap;
  bool failed;
} sbuf;

static void sb_printf(sbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void sb_printf(sbuf *b, const char *fmt, ...) {
  if (b->failed) return;
  for (;;) {
    va_list ap;
    va_start(ap, fmt);
    size_t room = b->cap - b->len;
    int n = vsnprintf(b->p ? b->p + b->len : NULL, room, fmt, ap);
    va_end(ap);
    if (n < 0) {
      b->failed = true;
      return;
    }
    if ((size_t)n < room) {
      b->len += (size_t)n;
      return;
    }
    size_t cap = b->cap ? b->cap * 2 : 4096;
    while (cap - b->len <= (size_t)n) cap *= 2;
    char *p = opd__realloc(b->p, cap);
    if (!p) {
      b->failed = true;
      return;
    }
    b->p = p;
    b->cap = cap;
  }
}

/* ---- /metrics ---- */

static void prom_label(sbuf *b, const char *name) {
  char text[4 * 512]; /* operator names are shorter than 512 bytes; each byte escapes to 4 */
  opd_utf8_escape(text, sizeof text, name, strlen(name));
  for (const char *v = text; *v; v++) {
    if (*v == '\\' || *v == '"')
      sb_printf(b, "\\%c", *v);
    else if (*v == '\n')
      sb_printf(b, "\\n");
    else
      sb_printf(b, "%c", *v);
  }
}

typedef struct metrics_pass {
  sbuf *b;
  int which; /* 0 calls, 1 errors by code, 2 latency, 3 errors by key */
} metrics_pass;

static void emit_op_metrics(const opd__op_metrics_snapshot *m, void *arg) {
  metrics_pass *p = arg;
  sbuf *b = p->b;
  const char *name = opd_op_name(m->op);
  if (p->which == 0) {
    for (unsigned s = 0; s < OPD_NUM_RUNTIME_SLOTS; s++) {
      if (!m->calls_by_slot[s]) continue;
      sb_printf(b, "opd_calls_total{op=\"");
      prom_label(b, name);
      sb_printf(b, "\",key=\"%s\"} %" PRIu64 "\n", opd_key_name(opd_slot_key(s)),
                m->calls_by_slot[s]);
    }
  } else if (p->which == 3) {
    for (unsigned s = 0; s < OPD_NUM_RUNTIME_SLOTS; s++) {
      if (!m->errors_by_slot[s]) continue;
      sb_printf(b, "opd_call_errors_by_key_total{op=\"");
      prom_label(b, name);
      sb_printf(b, "\",key=\"%s\"} %" PRIu64 "\n", opd_key_name(opd_slot_key(s)),
                m->errors_by_slot[s]);
    }
  } else if (p->which == 1) {
    for (int e = 0; e < OPD__METRICS_CODES; e++) {
      if (!m->errors_by_code[e]) continue;
      sb_printf(b, "opd_call_errors_total{op=\"");
      prom_label(b, name);
      sb_printf(b, "\",code=\"%s\"} %" PRIu64 "\n", opd_err_name(-e), m->errors_by_code[e]);
    }
  } else {
    uint64_t cum = 0;
    for (int i = 0; i < OPD__METRICS_BUCKETS; i++) {
      cum += m->buckets[i];
      sb_printf(b, "opd_call_duration_seconds_bucket{op=\"");
      prom_label(b, name);
      if (i < OPD__METRICS_BUCKETS - 1)
        sb_printf(b, "\",le=\"%.9g\"} %" PRIu64 "\n", opd__metrics_bucket_bound(i), cum);
      else
        sb_printf(b, "\",le=\"+Inf\"} %" PRIu64 "\n", cum);
    }
    sb_printf(b, "opd_call_duration_seconds_sum{op=\"");
    prom_label(b, name);
    sb_printf(b, "\"} %.9f\n", (double)m->sum_ns / 1e9);
    sb_printf(b, "opd_call_duration_seconds_count{op=\"");
    prom_label(b, name);
    sb_printf(b, "\"} %" PRIu64 "\n", cum);
  }
}

typedef struct reg_count {
  uint64_t ops;
  uint64_t by_kind[5];
} reg_count;

static const char *const reg_kinds[5] = {"def", "impl", "fallthrough", "fallback",
                                         "fallback_fallthrough"};

static void count_regs(const opd_operator *op, void *arg) {
  reg_count *r = arg;
  r->ops++;
  json_t *j = opd_op_json(op);
  json_t *regs = json_object_get(j, "registrations"), *e;
  size_t i;
  json_array_foreach(regs, i, e) {
    const char *kind = json_string_value(json_object_get(e, "kind"));
    for (int k = 0; kind && k < 5; k++)
      if (strcmp(kind, reg_kinds[k]) == 0) r->by_kind[k]++;
  }
  json_decref(j);
}

/* The graphs' counters: the daemon's, the cache's, each pass's hits. */
static void graph_metrics(sbuf *b, opd_server *srv) {
  opd__graphs_counters n;
  opd__graphs_counters_get(opd__server_graphs(srv), &n);
  opd_graph_cache_stats cs;
  opd_graph_cache_stats_get(opd__graphs_cache(opd__server_graphs(srv)), &cs);
  opd_graph_c_tier_stats ct;
  opd_graph_c_tier_stats_get(&ct);
  const struct {
    const char *name, *help;
    uint64_t v;
  } counters[] = {
      {"graph_defines_total", "Graph definitions received.", n.defines},
      {"graph_define_errors_total", "Graph definitions refused.", n.define_errors},
      {"graph_runs_total", "Graph runs.", n.runs},
      {"graph_run_errors_total", "Graph runs that failed.", n.run_errors},
      {"graph_cache_hits_total", "Definitions the compiled-graph cache held.", cs.hits},
      {"graph_cache_misses_total", "Definitions compiled anew.", cs.misses},
      {"graph_cache_evictions_total", "Compiled graphs evicted by the LRU.", cs.evictions},
      {"graph_cache_invalidations_total",
       "Compiled graphs dropped by a registration of an operator they call.", cs.invalidations},
      {"graph_dump_bytes_total", "Bytes the per-pass IR dumps wrote.", n.dump_bytes},
      {"graph_numerics_mismatches_total",
       "Fused groups pinned unfused because their results differed from the unfused ones.",
       opd_graph_numerics_mismatches()},
      {"graph_c_compiles_total", "Fused programs the C tier compiled.", ct.compiles},
      {"graph_c_disk_hits_total", "Fused programs the C tier found compiled in its directory.",
       ct.disk_hits},
      {"graph_c_failures_total", "Compiles of the C tier that failed (timeouts included).",
       ct.failures},
      {"graph_c_timeouts_total", "Compiles of the C tier killed at graph_cc_timeout_ms.",
       ct.timeouts},
      {"graph_c_mismatches_total",
       "Compiled fused programs dropped because their results differed from the unfused ones.",
       ct.mismatches},
  };
  for (size_t i = 0; i < sizeof counters / sizeof *counters; i++)
    sb_printf(b, "# HELP opd_%s %s\n# TYPE opd_%s counter\nopd_%s %" PRIu64 "\n", counters[i].name,
              counters[i].help, counters[i].name, counters[i].name, counters[i].v);
  sb_printf(b,
            "# HELP opd_graph_cache_graphs Compiled graphs in the cache.\n# TYPE "
            "opd_graph_cache_graphs gauge\nopd_graph_cache_graphs %u\n",
            cs.size);
  json_t *passes = opd_graph_pass_totals_json(), *p;
  const char *name;
  for (int which = 0; which < 2; which++) {
    const char *field = which ? "runs" : "hits";
    sb_printf(b,
              "# HELP opd_graph_pass_%s_total %s, by pass.\n# TYPE opd_graph_pass_%s_total "
              "counter\n",
              field, which ? "Compilations each pass ran in" : "Rewrites each pass made", field);
    json_object_foreach(passes, name, p) {
      sb_printf(b, "opd_graph_pass_%s_total{pass=\"", field);
      prom_label(b, name);
      sb_printf(b, "\"} %" PRId64 "\n", (int64_t)json_integer_value(json_object_get(p, field)));
    }
  }
  json_decref(passes);
}

char *opd__status_metrics_text(opd_server *srv, uint64_t up, size_t *len) {
  sbuf b = {0};
  metrics_pass p = {&b, 0};
  sb_printf(&b, "# HELP opd_calls_total Operator calls run, by operator and the dispatch key "
                "they reached.\n# TYPE opd_calls_total counter\n");
  opd__metrics_for_each(emit_op_metrics, &p);
  sb_printf(&b, "# HELP opd_call_errors_total Operator calls that failed, by operator and "
                "error code.\n# TYPE opd_call_errors_total counter\n");
  p.which = 1;
  opd__metrics_for_each(emit_op_metrics, &p);
  sb_printf(&b, "# HELP opd_call_errors_by_key_total Operator calls that failed, by operator "
                "and the dispatch key they reached.\n# TYPE opd_call_errors_by_key_total "
                "counter\n");
  p.which = 3;
  opd__metrics_for_each(emit_op_metrics, &p);
  sb_printf(&b, "# HELP opd_response_errors_total Error responses to any request, by protocol "
                "error code.\n# TYPE opd_response_errors_total counter\n");
  for (int code = 0; code < OPD__METRICS_RESPONSE_CODES; code++) {
    const ProtobufCEnumValue *v =
        protobuf_c_enum_descriptor_get_value(&opd__v1__error_code__descriptor, code);
    if (v)
      sb_printf(&b, "opd_response_errors_total{code=\"%s\"} %" PRIu64 "\n", v->name,
                opd__metrics_response_errors(code));
  }
  sb_printf(&b, "# HELP opd_call_duration_seconds Operator call latency (the kernel's time).\n"
                "# TYPE opd_call_duration_seconds histogram\n");
  p.which = 2;
  opd__metrics_for_each(emit_op_metrics, &p);
  sb_printf(&b,
            "# HELP opd_calls_unrecorded_total Calls of operators beyond the metrics "
            "table.\n# TYPE opd_calls_unrecorded_total counter\nopd_calls_unrecorded_total "
            "%" PRIu64 "\n",
            opd__metrics_overflow());
  sb_printf(&b,
            "# HELP opd_loop_requests_total Calls and releases the event loop ran itself "
            "(loop_call_ns).\n# TYPE opd_loop_requests_total counter\nopd_loop_requests_total "
            "%" PRIu64 "\n",
            opd__server_loop_requests(srv));
  static const struct {
    const char *name;
    int type;
  } devs[] = {{"cpu", OPD_DEVICE_CPU}, {"meta", OPD_DEVICE_META}};
  static const char *const mem_names[] = {"in_use", "peak", "limit"};
  for (int f = 0; f < 3; f++) {
    sb_printf(&b,
              "# HELP opd_memory_bytes_%s Allocator bytes (%s) per device.\n"
              "# TYPE opd_memory_bytes_%s gauge\n",
              mem_names[f], mem_names[f], mem_names[f]);
    for (size_t d = 0; d < 2; d++) {
      opd_memory_stats m;
      opd_memory_stats_get(devs[d].type, &m);
      uint64_t v = f == 0 ? m.in_use : f == 1 ? m.peak : m.limit;
      sb_printf(&b, "opd_memory_bytes_%s{device=\"%s\"} %" PRIu64 "\n", mem_names[f], devs[d].name,
                v);
    }
  }
  uint64_t nsess = 0, handles = 0, held = 0;
  opd__session_registry *r = opd__server_sessions(srv);
  pthread_mutex_lock(&r->mu);
  for (opd__session *s = r->head; s; s = s->reg_next) {
    nsess++;
    handles += atomic_load_explicit(&s->num_handles, memory_order_relaxed);
    held += atomic_load_explicit(&s->bytes_held, memory_order_relaxed);
  }
  pthread_mutex_unlock(&r->mu);
  sb_printf(&b,
            "# HELP opd_sessions Open sessions.\n# TYPE opd_sessions gauge\nopd_sessions %" PRIu64
            "\n# HELP opd_handles Tensor handles held by all sessions.\n# TYPE opd_handles "
            "gauge\nopd_handles %" PRIu64 "\n# HELP opd_session_bytes_held Tensor bytes held "
            "by all sessions.\n# TYPE opd_session_bytes_held gauge\nopd_session_bytes_held "
            "%" PRIu64 "\n# HELP opd_draining 1 while the daemon drains its sessions (new "
            "ones refused), else 0.\n# TYPE opd_draining gauge\nopd_draining %d\n",
            nsess, handles, held, opd_server_draining(srv) ? 1 : 0);
  graph_metrics(&b, srv);
  reg_count rc = {0};
  opd_for_each_op(count_regs, &rc);
  sb_printf(&b,
            "# HELP opd_operators Operators with a schema or a registration.\n"
            "# TYPE opd_operators gauge\nopd_operators %" PRIu64 "\n"
            "# HELP opd_registrations Live operator registrations by kind.\n"
            "# TYPE opd_registrations gauge\n",
            rc.ops);
  for (int k = 0; k < 3; k++)
    sb_printf(&b, "opd_registrations{kind=\"%s\"} %" PRIu64 "\n", reg_kinds[k], rc.by_kind[k]);
  sb_printf(&b,
            "# HELP opd_uptime_seconds Seconds since the server started.\n"
            "# TYPE opd_uptime_seconds gauge\nopd_uptime_seconds %.3f\n",
            (double)up / 1e9);
  if (b.failed) {
    opd__free(b.p);
    return NULL;
  }
  *len = b.len;
  return b.p;
}

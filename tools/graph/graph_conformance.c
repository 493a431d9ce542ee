/* graph_conformance.c: opd-graph-conformance, the replay runner for graph fixtures
 * (tests/fixtures/graphs/FORMAT.md).
 *
 *   opd-graph-conformance FIXTURE.json [--server URL] [--device cpu|cuda] [--report FILE]
 *                         [--dump FILE] [--runs N] [--benefit-runs N] [--only ID]
 *                         [--c-tier DIR] [-v]
 *
 * For each graph: its parameters are uploaded once, it is defined twice (the second
 * definition must be a cache hit), run N times (default 6: past the runs that check its
 * fused groups) with its inputs uploaded each time, and every output of every run is
 * downloaded and compared as FORMAT.md §6 says (dtype and shape exactly, values within the
 * recorded rtol and atol, NaN equal to NaN, infinities exactly). A graph passes when its
 * outputs match, it replaced exactly expect.patterns.softmax softmax patterns, and its last
 * run launched at most expect.max_kernels kernels. --report writes, per graph, {"id",
 * "outputs_ok", "patterns": {"softmax": N}, "kernels": K, "nodes_before": N, "nodes_after":
 * N, "cache": "hit"|"miss", "max_abs_err": x}, where K is the number of kernels the last run
 * of the optimised graph actually launched (views and removed nodes launch none; counted by
 * the run, not derived from the groups' decisions); --dump writes each graph's
 * introspection document (its passes with the IR after each, its fused groups and their
 * decisions). The last line printed is "N passed, M failed"; the exit status is 0 only
 * when M is 0. The replay goes through a backend ([Note: Graph backends] in graph_runner.h):
 * in process, or with --server URL through the daemon there (the same report). --device cuda puts
 * the inputs and parameters on cuda:0: through the daemon at --server, or without it through a
 * daemon this program starts in process on a free port; without a usable CUDA device the run prints
 * why and exits with status 77 (skipped). --benefit-runs N (default 5, the daemon's) sets how many
 * first runs time each fused group both ways before a group not faster fused is left unfused
 * ([Note: Numerics and benefit of fused groups]) in process and in the daemon this program starts;
 * a daemon at --server has its own (graph_benefit_runs). The tests pass 0: a decision taken
 * on timings changes the kernel count from run to run on a loaded machine, and the count is
 * what they check. --c-tier DIR (in process, on the CPU) starts the C tier of fused programs
 * with the system compiler ("cc", or $CC) and DIR as its cache ([Note: The C tier of fused
 * programs]), and waits after each graph's first run until its programs are compiled: the
 * later runs go through them, and a graph passes only if each of its fused groups then runs
 * its compiled C (its numerics check against the unfused nodes included).
 */
#include <errno.h>
#include <jansson.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../conformance/conformance.h"
#include "graph_runner.h"
#include "opd/error.h"
#include "opd/graph_exec.h"
#include "opd/kernels.h"
#include "opd/log.h"
#include "opd/server.h"

typedef struct options {
  const char *fixture, *report, *dump, *only, *server, *c_tier;
  bool cuda;
  int runs;
  int benefit_runs;
  bool verbose;
} options;

/* The largest |actual - expected| over an output's finite expected values. */
static double max_abs_err(const opd_tensor *t, const json_t *expect) {
  const json_t *data = json_object_get(expect, "data");
  if (!opd_dtype_is_floating(opd_tensor_dtype(t)) || (int64_t)json_array_size(data) != t->numel)
    return 0;
  double worst = 0;
  int64_t idx[OPD_MAX_DIMS] = {0};
  size_t esize = opd_dtype_size(opd_tensor_dtype(t));
  for (int64_t i = 0; i < t->numel; i++) {
    int64_t off = 0;
    for (int d = 0; d < t->ndim; d++) off += idx[d] * opd_tensor_strides(t)[d];
    double want, got = read_double((const char *)opd_tensor_data(t) + off * (int64_t)esize,
                                   opd_tensor_dtype(t));
    if (parse_float(json_array_get(data, (size_t)i), &want) == 0 && isfinite(want) &&
        fabs(got - want) > worst)
      worst = isfinite(got) ? fabs(got - want) : INFINITY;
    for (int d = t->ndim - 1; d >= 0 && ++idx[d] == opd_tensor_sizes(t)[d]; d--) idx[d] = 0;
  }
  return worst;
}

/* Compares the downloaded outputs of one run; false with why. */
static bool check_outputs(graph_backend *b, const uint64_t *outs, const json_t *expect, double *err,
                          char *why, size_t wlen) {
  for (size_t i = 0; i < json_array_size(expect); i++) {
    const json_t *e = json_array_get(expect, i);
    opd_tensor *t = NULL;
    if (b->download(b, outs[i], &t)) {
      snprintf(why, wlen, "output %zu: download failed: %s", i, opd_last_error());
      return false;
    }
    char detail[300];
    bool ok = judge_geometry(e, opd_tensor_dtype(t), opd_tensor_sizes(t), t->ndim, detail,
                             sizeof detail) &&
              compare_buffer(opd_tensor_data(t), opd_tensor_dtype(t), opd_tensor_sizes(t),
                             opd_tensor_strides(t), t->ndim, t->numel, e, detail, sizeof detail);
    double d = ok ? max_abs_err(t, e) : 0;
    if (d > *err) *err = d;
    opd_tensor_release(t);
    if (!ok) {
      snprintf(why, wlen, "output %zu: %s", i, detail);
      return false;
    }
  }
  return true;
}

typedef struct outcome {
  bool outputs_ok, cache_hit;
  double max_abs_err;
  graph_backend_stats stats;
  json_t *introspection;
  char why[400];
} outcome;

/* With --c-tier: whether every fused group of a graph's introspection ran its compiled C
 * last; false with why (the first group that did not, and the C tier's reason). */
static bool all_groups_compiled(const json_t *introspection, char *why, size_t wlen) {
  const json_t *groups = json_object_get(introspection, "groups");
  if (!groups) return snprintf(why, wlen, "no introspection of its groups"), false;
  for (size_t i = 0; i < json_array_size(groups); i++) {
    const json_t *g = json_array_get(groups, i);
    if (strcmp(str(g, "tier"), "c") != 0) {
      const char *c_why = str(g, "c_why");
      snprintf(why, wlen, "group %zu runs on the %s tier (C tier %s%s%s)", i, str(g, "tier"),
               str(g, "c_tier"), c_why[0] ? ": " : "", c_why);
      return false;
    }
  }
  return true;
}

/* Replays one graph; false (with o->why) when it could not even be run. */
static bool replay(graph_backend *b, const json_t *graph, const json_t *schemas, int runs,
                   bool c_tier, outcome *o) {
  graph_desc d;
  opd_tensor **host = NULL;
  if (graph_desc_read(graph, schemas, &d, &host, o->why, sizeof o->why)) return false;
  uint32_t ni = d.ninputs, no = d.noutputs;
  uint64_t *in = calloc(ni ? ni : 1, sizeof *in), *out = calloc(no ? no : 1, sizeof *out);
  uint64_t g1 = 0, g2 = 0;
  bool hit1 = false, ok = in && out;
  for (uint32_t i = 0; ok && i < ni; i++) /* parameters once */
    if (d.inputs[i].kind == OPD_GRAPH_PARAMETER && b->upload(b, host[i], &in[i])) ok = false;
  if (ok && (b->define(b, &d, &g1, &hit1) || b->define(b, &d, &g2, &o->cache_hit))) {
    snprintf(o->why, sizeof o->why, "define: %s", opd_last_error());
    ok = false;
  }
  const json_t *expect = json_object_get(json_object_get(graph, "expect"), "outputs");
  o->outputs_ok = ok && json_array_size(expect) == no;
  for (int r = 0; ok && r < runs; r++) {
    for (uint32_t i = 0; ok && i < ni; i++)
      if (d.inputs[i].kind == OPD_GRAPH_INPUT && b->upload(b, host[i], &in[i])) ok = false;
    if (ok && b->run(b, g2, in, ni, out, no)) {
      snprintf(o->why, sizeof o->why, "run %d: %s", r, opd_last_error());
      ok = false;
      o->outputs_ok = false;
      break;
    }
    if (o->outputs_ok && !check_outputs(b, out, expect, &o->max_abs_err, o->why, sizeof o->why))
      o->outputs_ok = false;
    for (uint32_t i = 0; ok && i < no; i++) b->release(b, out[i]);
    for (uint32_t i = 0; ok && i < ni; i++)
      if (d.inputs[i].kind == OPD_GRAPH_INPUT) b->release(b, in[i]);
    if (c_tier && r == 0) opd_graph_c_tier_drain(); /* the next runs go through the C */
  }
  if (ok && b->stats(b, g2, &o->stats)) ok = false;
  if (ok) o->introspection = b->introspect(b, g2);
  for (uint32_t i = 0; i < ni; i++)
    if (d.inputs[i].kind == OPD_GRAPH_PARAMETER && in && in[i]) b->release(b, in[i]);
  if (g1) b->release_graph(b, g1);
  if (g2) b->release_graph(b, g2);
  for (uint32_t i = 0; i < ni; i++) opd_tensor_release(host[i]);
  free(host);
  free(in);
  free(out);
  graph_desc_free(&d);
  return ok;
}

static int usage(void) {
  fprintf(stderr,
          "usage: opd-graph-conformance FIXTURE.json [--server URL] [--device cpu|cuda] "
          "[--report FILE] [--dump FILE] [--runs N] [--benefit-runs N] [--only ID] [--c-tier DIR] "
          "[-v]\n");
  return 2;
}

/* A count from the command line: digits only, at least min and at most max. */
static bool parse_count(const char *s, long min, long max, int *out) {
  char *end;
  errno = 0;
  long v = strtol(s, &end, 10);
  if (errno || end == s || *end || v < min || v > max) return false;
  *out = (int)v;
  return true;
}

static int parse_args(int argc, char **argv, options *o) {
  *o = (options){.runs = 6, .benefit_runs = OPD_GRAPH_BENEFIT_RUNS_DEFAULT};
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--report") == 0 && i + 1 < argc)
      o->report = argv[++i];
    else if (strcmp(argv[i], "--dump") == 0 && i + 1 < argc)
      o->dump = argv[++i];
    else if (strcmp(argv[i], "--only") == 0 && i + 1 < argc)
      o->only = argv[++i];
    else if (strcmp(argv[i], "--server") == 0 && i + 1 < argc)
      o->server = argv[++i];
    else if (strcmp(argv[i], "--device") == 0 && i + 1 < argc &&
             (strcmp(argv[i + 1], "cpu") == 0 || strcmp(argv[i + 1], "cuda") == 0))
      o->cuda = strcmp(argv[++i], "cuda") == 0;
    else if (strcmp(argv[i], "--runs") == 0 && i + 1 < argc &&
             parse_count(argv[i + 1], 1, INT_MAX, &o->runs))
      i++;
    else if (strcmp(argv[i], "--benefit-runs") == 0 && i + 1 < argc &&
             parse_count(argv[i + 1], 0, OPD_GRAPH_BENEFIT_RUNS_MAX, &o->benefit_runs))
      i++;
    else if (strcmp(argv[i], "--c-tier") == 0 && i + 1 < argc)
      o->c_tier = argv[++i];
    else if (strcmp(argv[i], "-v") == 0)
      o->verbose = true;
    else if (argv[i][0] != '-' && !o->fixture)
      o->fixture = argv[i];
    else
      return -1;
  }
  return o->fixture ? 0 : -1;
}

/* A daemon in this process, on a free loopback port (--device cuda without --server). */
static int start_embedded(uint32_t benefit_runs, opd_server **out) {
  opd_server_config cfg;
  opd_server_config_init(&cfg);
  cfg.graph_benefit_runs = benefit_runs;
  opd_server_config_clear_listen(&cfg);
  int rc = opd_server_config_add_listen(&cfg, "tcp://127.0.0.1:0");
  cfg.log_level = OPD_LOG_ERROR;
  if (rc == 0) rc = opd_server_start(&cfg, out);
  opd_server_config_destroy(&cfg);
  return rc;
}

/* Whether the daemon can put a tensor on cuda:0: 0, or OPD_EUNAVAILABLE with its reason. */
static int check_cuda(graph_backend *b) {
  opd_tensor *probe;
  uint64_t h = 0;
  int rc = opd_tensor_empty((const int64_t[]){1}, 1, OPD_FLOAT32, (opd_device){OPD_DEVICE_CPU, -1},
                            &probe);
  if (rc) return rc;
  rc = b->upload(b, probe, &h);
  opd_tensor_release(probe);
  if (h) b->release(b, h);
  return rc;
}

int main(int argc, char **argv) {
  options opt;
  if (parse_args(argc, argv, &opt)) return usage();
  opd_log_set_level(OPD_LOG_ERROR);
  json_error_t jerr;
  json_t *doc = json_load_file(opt.fixture, 0, &jerr);
  if (!doc || strcmp(str(doc, "format"), "opd-graph-conformance/1") != 0) {
    fprintf(stderr, "%s: not a graph fixture (%s)\n", opt.fixture, doc ? "format" : jerr.text);
    json_decref(doc);
    return 2;
  }
  graph_backend *b = NULL;
  opd_server *embedded = NULL;
  const char *url = opt.server;
  int rc = opd_kernels_register();
  if (rc == 0 && opt.cuda && !url &&
      (rc = start_embedded((uint32_t)opt.benefit_runs, &embedded)) == 0)
    url = opd_server_listener_url(embedded, 0);
  if (rc == 0 && opt.c_tier) {
    const char *cc = getenv("CC");
    opd_graph_c_tier_options co = {.cc = cc && cc[0] ? cc : "cc", .dir = opt.c_tier};
    rc = url || opt.cuda ? opd_error(OPD_EINVAL, "--c-tier runs in process, on the CPU")
                         : opd_graph_c_tier_start(&co);
  }
  if (rc == 0)
    rc = url ? graph_backend_daemon_open(url, opt.cuda, &b)
             : graph_backend_local_open(64, (uint32_t)opt.benefit_runs, &b);
  if (rc == 0 && opt.cuda) rc = check_cuda(b);
  if (rc != 0) {
    bool skip = rc == OPD_EUNAVAILABLE;
    fprintf(stderr, "%s: %s\n", skip ? "SKIP (no usable CUDA device)" : "cannot start",
            opd_last_error());
    if (b) b->close(b);
    if (embedded) opd_server_stop(embedded);
    opd_graph_c_tier_stop();
    json_decref(doc);
    return skip ? 77 : 2;
  }
  json_t *report = json_array(), *dump = json_array();
  const json_t *graphs = json_object_get(doc, "graphs"), *schemas = json_object_get(doc, "schemas");
  long passed = 0, failed = 0;
  for (size_t i = 0; i < json_array_size(graphs); i++) {
    const json_t *g = json_array_get(graphs, i);
    const char *id = str(g, "id");
    if (opt.only && strcmp(opt.only, id) != 0) continue;
    outcome o = {0};
    bool ran = replay(b, g, schemas, opt.runs, opt.c_tier != NULL, &o);
    const json_t *expect = json_object_get(g, "expect");
    json_int_t want_sm =
        json_integer_value(json_object_get(json_object_get(expect, "patterns"), "softmax"));
    json_int_t max_k = json_integer_value(json_object_get(expect, "max_kernels"));
    bool ok = ran && o.outputs_ok && o.cache_hit && o.stats.softmax_patterns == want_sm &&
              o.stats.kernels <= max_k;
    if (ran && o.outputs_ok && !ok)
      snprintf(o.why, sizeof o.why,
               "softmax patterns %u (expected %lld), kernels %u (at most %lld), second define %s",
               o.stats.softmax_patterns, (long long)want_sm, o.stats.kernels, (long long)max_k,
               o.cache_hit ? "a cache hit" : "not a cache hit");
    if (ok && opt.c_tier && !all_groups_compiled(o.introspection, o.why, sizeof o.why)) ok = false;
    if (ok) {
      passed++;
      if (opt.verbose)
        printf("ok   %s: kernels %u (at most %lld), nodes %u -> %u, softmax %u, max error %.3g\n",
               id, o.stats.kernels, (long long)max_k, o.stats.nodes_before, o.stats.nodes_after,
               o.stats.softmax_patterns, o.max_abs_err);
    } else {
      failed++;
      printf("FAIL %s: %s\n", id, o.why);
    }
    json_t *r =
        json_pack("{s:s, s:b, s:{s:i}, s:i, s:i, s:i, s:s, s:f}", "id", id, "outputs_ok",
                  o.outputs_ok, "patterns", "softmax", (int)o.stats.softmax_patterns, "kernels",
                  (int)o.stats.kernels, "nodes_before", (int)o.stats.nodes_before, "nodes_after",
                  (int)o.stats.nodes_after, "cache", o.cache_hit ? "hit" : "miss", "max_abs_err",
                  isfinite(o.max_abs_err) ? o.max_abs_err : -1.0);
    if (r) json_array_append_new(report, r);
    if (o.introspection)
      json_array_append_new(dump, json_pack("{s:s, s:o}", "id", id, "graph", o.introspection));
  }
  if (opt.dump && json_dump_file(dump, opt.dump, JSON_INDENT(1)) != 0) {
    fprintf(stderr, "cannot write %s\n", opt.dump);
    failed++;
  }
  json_decref(dump);
  int status = failed ? 1 : 0;
  if (opt.report) {
    json_t *top = json_pack("{s:o}", "graphs", report);
    report = NULL;
    if (!top || json_dump_file(top, opt.report, JSON_INDENT(1)) != 0) {
      fprintf(stderr, "cannot write %s\n", opt.report);
      status = 2;
    }
    json_decref(top);
  }
  json_decref(report);
  b->close(b);
  if (embedded) opd_server_stop(embedded);
  opd_graph_c_tier_stop();
  json_decref(doc);
  printf("%ld passed, %ld failed\n", passed, failed);
  return status;
}

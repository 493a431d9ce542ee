/* graph_backend_local.c: the in-process backend of opd-graph-conformance ([Note: Graph
 * backends] in graph_runner.h): handles index a table of tensors, graphs one of compiled
 * graphs, defined through opd's graph library (opd/graph.h, opd/graph_exec.h) with one cache,
 * as the daemon does per process. */
#include <stdlib.h>
#include <string.h>

#include "graph_runner.h"
#include "opd/error.h"
#include "opd/graph_exec.h"

typedef struct local {
  graph_backend base;
  opd_graph_cache *cache;
  opd_tensor **tensors;
  size_t ntensors;
  opd_compiled_graph **graphs;
  size_t ngraphs;
  uint32_t benefit_runs; /* opd_graph_options.benefit_runs of every graph compiled */
} local;

static int grow(void **p, size_t n, size_t esize) {
  void *q = realloc(*p, n * esize);
  if (!q) return opd_error(OPD_ENOMEM, "out of memory");
  *p = q;
  return 0;
}

/* A new handle (index + 1) for t, whose reference it takes. */
static int hold(local *l, opd_tensor *t, uint64_t *handle) {
  for (size_t i = 0; i < l->ntensors; i++)
    if (!l->tensors[i]) {
      l->tensors[i] = t;
      *handle = i + 1;
      return 0;
    }
  int rc = grow((void **)&l->tensors, l->ntensors + 1, sizeof *l->tensors);
  if (rc) return rc;
  l->tensors[l->ntensors++] = t;
  *handle = l->ntensors;
  return 0;
}

static opd_tensor *tensor_of(local *l, uint64_t h) {
  return h >= 1 && h <= l->ntensors ? l->tensors[h - 1] : NULL;
}

static int upload(graph_backend *b, opd_tensor *host, uint64_t *handle) {
  opd_tensor_retain(host);
  return hold((local *)b, host, handle);
}

static int define(graph_backend *b, const graph_desc *d, uint64_t *graph, bool *cache_hit) {
  local *l = (local *)b;
  opd_graph *g;
  int rc = graph_desc_build(d, (opd_device){OPD_DEVICE_CPU, -1}, &g);
  if (rc) return rc;
  opd_graph_options options;
  opd_graph_options_default(&options);
  options.benefit_runs = l->benefit_runs;
  opd_compiled_graph *cg;
  if ((rc = opd_graph_compile(g, &options, l->cache, &cg, cache_hit))) return rc;
  if ((rc = grow((void **)&l->graphs, l->ngraphs + 1, sizeof *l->graphs))) {
    opd_compiled_graph_release(cg);
    return rc;
  }
  l->graphs[l->ngraphs++] = cg;
  *graph = l->ngraphs;
  return 0;
}

static opd_compiled_graph *graph_of(local *l, uint64_t g) {
  return g >= 1 && g <= l->ngraphs ? l->graphs[g - 1] : NULL;
}

static int run(graph_backend *b, uint64_t graph, const uint64_t *inputs, uint32_t n,
               uint64_t *outputs, uint32_t nout) {
  local *l = (local *)b;
  opd_compiled_graph *cg = graph_of(l, graph);
  if (!cg) return opd_error(OPD_ENOENT, "no graph %llu", (unsigned long long)graph);
  opd_tensor **in = calloc(n ? n : 1, sizeof *in), **out = calloc(nout ? nout : 1, sizeof *out);
  int rc = in && out ? 0 : opd_error(OPD_ENOMEM, "out of memory");
  for (uint32_t i = 0; i < n && rc == 0; i++)
    if (!(in[i] = tensor_of(l, inputs[i])))
      rc = opd_error(OPD_ENOENT, "no tensor %llu", (unsigned long long)inputs[i]);
  if (rc == 0) rc = opd_compiled_graph_run(cg, in, n, out, nout);
  for (uint32_t i = 0; i < nout && rc == 0; i++) {
    rc = hold(l, out[i], &outputs[i]);
    if (rc == 0) out[i] = NULL;
  }
  for (uint32_t i = 0; out && i < nout; i++)
    if (out[i]) opd_tensor_release(out[i]);
  free(in);
  free(out);
  return rc;
}

static int download(graph_backend *b, uint64_t handle, opd_tensor **host) {
  opd_tensor *t = tensor_of((local *)b, handle);
  if (!t) return opd_error(OPD_ENOENT, "no tensor %llu", (unsigned long long)handle);
  opd_tensor_retain(t);
  *host = t;
  return 0;
}

static int stats(graph_backend *b, uint64_t graph, graph_backend_stats *out) {
  opd_compiled_graph *cg = graph_of((local *)b, graph);
  if (!cg) return opd_error(OPD_ENOENT, "no graph %llu", (unsigned long long)graph);
  opd_graph_stats s;
  opd_compiled_graph_stats(cg, &s);
  *out =
      (graph_backend_stats){s.nodes_before, s.nodes_after, s.kernels_last_run, s.softmax_patterns};
  return 0;
}

static json_t *introspect(graph_backend *b, uint64_t graph) {
  opd_compiled_graph *cg = graph_of((local *)b, graph);
  return cg ? opd_compiled_graph_json(cg) : NULL;
}

static void release(graph_backend *b, uint64_t handle) {
  local *l = (local *)b;
  opd_tensor *t = tensor_of(l, handle);
  if (!t) return;
  opd_tensor_release(t);
  l->tensors[handle - 1] = NULL;
}

static void release_graph(graph_backend *b, uint64_t graph) {
  local *l = (local *)b;
  opd_compiled_graph *cg = graph_of(l, graph);
  if (!cg) return;
  opd_compiled_graph_release(cg);
  l->graphs[graph - 1] = NULL;
}

static void close_local(graph_backend *b) {
  local *l = (local *)b;
  for (size_t i = 0; i < l->ntensors; i++)
    if (l->tensors[i]) opd_tensor_release(l->tensors[i]);
  for (size_t i = 0; i < l->ngraphs; i++)
    if (l->graphs[i]) opd_compiled_graph_release(l->graphs[i]);
  opd_graph_cache_free(l->cache);
  free(l->tensors);
  free(l->graphs);
  free(l);
}

int graph_backend_local_open(uint32_t capacity, uint32_t benefit_runs, graph_backend **out) {
  local *l = calloc(1, sizeof *l);
  if (!l) return opd_error(OPD_ENOMEM, "out of memory");
  l->benefit_runs = benefit_runs;
  int rc = opd_graph_cache_new(capacity, &l->cache);
  if (rc) {
    free(l);
    return rc;
  }
  l->base = (graph_backend){"in-process", upload,     define,  run,           download,
                            stats,        introspect, release, release_graph, close_local};
  *out = &l->base;
  return 0;
}

/* graph_runner.h: shared by the parts of opd-graph-conformance: the graph description read
 * from a fixture (graph_fixture.c), and the backend interface a replay runs through
 * (graph_backend_local.c in process; a daemon backend plugs in the same way).
 *
 * [Note: Graph backends]
 * A backend is a vtable over handles, as a client of the daemon sees it: upload a host tensor
 * (a handle), define a graph from its description (a graph id, and whether the definition
 * was a cache hit), run a graph on input handles (output handles), download a handle into a
 * host tensor, read a graph's statistics (after its runs: the kernels its last run
 * launched), release handles and graphs. The runner never touches a backend's tensors, so
 * the in-process backend and the one that talks to a daemon (`--server URL`, with the
 * protocol's graph messages: graph_backend_daemon.c) are interchangeable.
 */
#ifndef OPD_TOOLS_GRAPH_RUNNER_H
#define OPD_TOOLS_GRAPH_RUNNER_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "opd/graph.h"
#include "opd/tensor.h"

/* A graph as the runner sends it: inputs by spec, nodes as an operator and arguments in
 * schema order (references by position), outputs. Owns its constants. */
typedef struct graph_desc_input {
  opd_dtype dtype;
  int64_t sizes[OPD_MAX_DIMS];
  uint32_t ndim;
  opd_graph_input_kind kind;
} graph_desc_input;

typedef struct graph_desc_node {
  char *op;
  opd_graph_arg *args;
  uint32_t nargs;
} graph_desc_node;

typedef struct graph_desc {
  graph_desc_input *inputs;
  uint32_t ninputs;
  graph_desc_node *nodes;
  uint32_t nnodes;
  opd_graph_ref *outputs;
  uint32_t noutputs;
} graph_desc;

/* Reads a fixture graph (tests/fixtures/graphs/FORMAT.md) into d and its input tensors (CPU,
 * inputs[i] for input i, new references): 0, or -1 with why. */
int graph_desc_read(const json_t *graph, const json_t *schemas, graph_desc *d, opd_tensor ***inputs,
                    char *why, size_t wlen);
void graph_desc_free(graph_desc *d);
/* The graph d describes, its inputs on `device`, finished: 0 with *out (opd_graph_compile
 * takes it), or the builder's error. */
int graph_desc_build(const graph_desc *d, opd_device device, opd_graph **out);

/* kernels: the kernels the graph's last run launched (views and removed nodes launch none;
 * opd_graph_stats.kernels_last_run), not those the groups' current decisions would. */
typedef struct graph_backend_stats {
  uint32_t nodes_before, nodes_after, kernels, softmax_patterns;
} graph_backend_stats;

typedef struct graph_backend graph_backend;
struct graph_backend {
  const char *name;
  int (*upload)(graph_backend *b, opd_tensor *host, uint64_t *handle);
  int (*define)(graph_backend *b, const graph_desc *d, uint64_t *graph, bool *cache_hit);
  int (*run)(graph_backend *b, uint64_t graph, const uint64_t *inputs, uint32_t n,
             uint64_t *outputs, uint32_t nout);
  int (*download)(graph_backend *b, uint64_t handle, opd_tensor **host);
  int (*stats)(graph_backend *b, uint64_t graph, graph_backend_stats *out);
  /* The graph's introspection document (opd_compiled_graph_json; GET /v1/graphs/{id}). */
  json_t *(*introspect)(graph_backend *b, uint64_t graph);
  void (*release)(graph_backend *b, uint64_t handle);
  void (*release_graph)(graph_backend *b, uint64_t graph);
  void (*close)(graph_backend *b);
};

/* The in-process backend: opd's graph library with a cache of `capacity` graphs, compiled with
 * opd_graph_options.benefit_runs = `benefit_runs`. */
int graph_backend_local_open(uint32_t capacity, uint32_t benefit_runs, graph_backend **out);
/* The daemon backend: a client of the daemon at `url` (graph_backend_daemon.c), its
 * tensors on the CPU or, with `cuda`, on cuda:0. */
int graph_backend_daemon_open(const char *url, bool cuda, graph_backend **out);

#endif

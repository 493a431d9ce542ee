/* fuzz_graph.c: the graph decoder and validator (server/src/graphs.c, decode.c; the core's
 * builder, passes and compiler, graph/), run as the daemon runs a define_graph, then the
 * graph's runs.
 *
 * The input is the bytes of a DefineGraph message (proto/opd.proto, "Graphs"): the driver
 * frames it as Request{id: 7, define_graph: INPUT} and reads the frame as the connection
 * does for a request the hand reader does not take (server/src/conn_requests.c,
 * opd__conn_handle_frame): the node count checked from the bytes (opd__wire_graph_nodes_over),
 * protobuf-c into the job's arena, the strings checked ([Note: Strings in requests]); then the
 * define runs through opd__execute on a session of its own with a graph context of its own (a small
 * cache), so every node's arguments go through the call decoder and the core's builder
 * (the Meta kernels at each node), and a valid graph is optimised and compiled. A graph
 * that was defined is run twice (past the first run's numerics and benefit checks) on
 * tensors made to its input specs, when its inputs are CPU tensors of at most MAX_NUMEL
 * elements and its estimated cost (opd_compiled_graph_cost) is at most MAX_COST, then run
 * with one handle too few, described and released.
 *
 * Checked: every response decodes, answers its request's id with the body its kind takes
 * (GraphInfo for a define, a CallReply of one handle per output for a run, an Ack for a
 * release) or an error whose strings are UTF-8 and whose code is not INTERNAL; a refused
 * define leaves the session without graphs; no budget or dispatch state is left
 * installed; once the session is destroyed and the graph context stopped, the CPU allocator
 * holds what it held before the input (the cache's planned buffers included).
 *
 * Seeds: corpus/graph/, written by make_graph_corpus.c
 * (build-fuzz/tests/fuzz/fuzz_make_graph_corpus tests/fuzz/corpus).
 */
#include "arena.h"
#include "execute.h"
#include "fuzz_common.h"
#include "fuzz_execute.h"
#include "graphs.h"
#include "opd/allocator.h"
#include "opd/dispatcher.h"
#include "opd/error.h"
#include "opd/graph_exec.h"
#include "opd/kernels.h"
#include "opd/log.h"
#include "opd/memory.h"
#include "opd/server.h"
#include "opd/tensor.h"
#include "opd_wire.h"
#include "session.h"

#define MAX_NUMEL        4096
#define MAX_COST         (1u << 20)
#define MAX_DEFINE_BYTES (1u << 20) /* bytes of one DefineGraph */

static opd_server_config cfg;

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc, (void)argv;
  fuzz_execute_init(&cfg);
  cfg.max_literal_bytes = 1024;
  cfg.max_handles = 64;
  cfg.max_bytes_held = 8u << 20;
  cfg.max_graph_nodes = 64;
  cfg.max_graph_inputs = 8;
  cfg.max_graph_outputs = 8;
  cfg.max_graph_arg_bytes = 4096;
  cfg.max_graphs = 4;
  cfg.graph_cache_size = 4;
  return 0;
}

static Opd__V1__Response__BodyCase reply_of(opd__job_kind kind) {
  switch (kind) {
  case OPD__JOB_DEFINE_GRAPH: return OPD__V1__RESPONSE__BODY_DEFINE_GRAPH;
  case OPD__JOB_RUN_GRAPH: return OPD__V1__RESPONSE__BODY_CALL;
  case OPD__JOB_DESCRIBE_GRAPH: return OPD__V1__RESPONSE__BODY_DESCRIBE_GRAPH;
  default: return OPD__V1__RESPONSE__BODY_ACK;
  }
}

/* Runs a worker's request and checks its response; returns it. */
static Opd__V1__Response *run(opd__job *j) {
  Opd__V1__Response *r = fuzz_execute(j, reply_of(j->kind));
  if (r->body_case == OPD__V1__RESPONSE__BODY_DESCRIBE_GRAPH)
    json_decref(fuzz_check_json_object("an introspection document",
                                       r->describe_graph->introspection,
                                       strlen(r->describe_graph->introspection)));
  return r;
}

/* A request of the session made here (run, describe, release of graph `g`). */
static Opd__V1__Response *request(opd__session *s, opd__job_kind kind, Opd__V1__Request *req) {
  opd__job *j = fuzz_job_new(s, 64, kind);
  j->req = req;
  j->id = req->id;
  Opd__V1__Response *r = run(j);
  fuzz_job_free(j);
  return r;
}

/* A CPU tensor to the spec, with small values (0 and 1 for bool), held by the session:
 * its handle, or 0 when the spec is not one to run on. */
static uint64_t input_for(opd__session *s, const Opd__V1__ValueSpec *spec) {
  if ((spec->device && spec->device->type != OPD_DEVICE_CPU) || !opd_dtype_valid(spec->dtype) ||
      spec->n_shape > OPD_MAX_DIMS)
    return 0;
  int64_t numel = 1;
  for (size_t d = 0; d < spec->n_shape; d++) {
    if (spec->shape[d] < 0 || spec->shape[d] > MAX_NUMEL) return 0;
    numel *= spec->shape[d];
    if (numel > MAX_NUMEL) return 0;
  }
  opd_tensor *t = NULL;
  if (opd_tensor_empty(spec->shape, (int)spec->n_shape, (opd_dtype)spec->dtype,
                       (opd_device){OPD_DEVICE_CPU, -1}, &t) < 0)
    return 0;
  uint8_t *p = opd_tensor_data(t);
  size_t esize = opd_dtype_size((opd_dtype)spec->dtype), n = (size_t)numel * esize;
  for (size_t i = 0; i < n; i++) /* the low byte of each element: small, positive values */
    p[i] = i % esize == 0 ? (uint8_t)(spec->dtype == OPD__V1__DTYPE__BOOL ? i & 1 : i % 5) : 0;
  uint64_t reserved = 0, handle = 0;
  int rc = opd__session_hold(s, t, &reserved, &handle); /* takes t's reference if it holds it */
  if (rc) opd_tensor_release(t);
  return rc == 0 ? handle : 0;
}

static void run_graph(opd__session *s, const Opd__V1__DefineGraph *d, uint64_t g) {
  opd_compiled_graph *cg = opd__session_graph(s, g);
  fuzz_check(cg != NULL, "a defined graph the session does not hold");
  if (opd_compiled_graph_cost(cg) > MAX_COST) return;
  uint64_t handles[8];
  for (size_t i = 0; i < d->n_inputs; i++)
    if (!(handles[i] = input_for(s, d->inputs[i]))) return;
  Opd__V1__RunGraph rg = OPD__V1__RUN_GRAPH__INIT;
  rg.graph = g;
  rg.inputs = handles;
  rg.n_inputs = d->n_inputs;
  Opd__V1__Request req = OPD__V1__REQUEST__INIT;
  req.body_case = OPD__V1__REQUEST__BODY_RUN_GRAPH;
  req.run_graph = &rg;
  for (int k = 0; k < 2; k++) {
    req.id = 100 + (uint64_t)k;
    Opd__V1__Response *r = request(s, OPD__JOB_RUN_GRAPH, &req);
    if (r->body_case == OPD__V1__RESPONSE__BODY_CALL) {
      fuzz_check(r->call->n_results == d->n_outputs, "a run of %zu outputs gave %zu results",
                 d->n_outputs, r->call->n_results);
      for (size_t i = 0; i < r->call->n_results; i++) {
        fuzz_check(r->call->results[i]->value_case == OPD__V1__IVALUE__VALUE_TENSOR,
                   "a run's result %zu is not a tensor", i);
        opd__session_drop(s, r->call->results[i]->tensor);
      }
    }
    fuzz_response_free(r);
  }
  if (d->n_inputs) { /* one handle too few */
    rg.n_inputs = d->n_inputs - 1;
    req.id = 102;
    Opd__V1__Response *r = request(s, OPD__JOB_RUN_GRAPH, &req);
    fuzz_check(r->body_case == OPD__V1__RESPONSE__BODY_ERROR &&
                   r->error->code == OPD__V1__ERROR_CODE__INVALID_ARGUMENT,
               "a run with a handle too few was not refused");
    fuzz_response_free(r);
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size > MAX_DEFINE_BYTES) return 0;
  opd_memory_stats m;
  opd_memory_stats_get(OPD_DEVICE_CPU, &m);
  uint64_t cpu_bytes = m.in_use;
  opd__graphs *graphs = NULL;
  fuzz_check(opd__graphs_start(&cfg, &graphs) == 0, "the graph context: %s", opd_last_error());
  opd__session s;
  opd__session_init(&s, 1, &cfg);
  s.graph_ctx = graphs;

  /* Request{id: 7, define_graph: data} */
  uint8_t *frame = opd__malloc(size + 16), *p = frame;
  fuzz_check(frame != NULL, "out of memory");
  *p++ = 0x08, *p++ = 7, *p++ = 10 << 3 | 2;
  for (size_t v = size;; v >>= 7) {
    *p++ = (uint8_t)((v & 0x7f) | (v >= 0x80 ? 0x80 : 0));
    if (v < 0x80) break;
  }
  memcpy(p, data, size);
  size_t len = (size_t)(p - frame) + size;
  uint64_t id, count;
  opd__job *j = fuzz_job_new(&s, len, OPD__JOB_DEFINE_GRAPH);
  char bad[512];
  if (opd__wire_graph_nodes_over(frame, len, cfg.max_graph_nodes, &id, &count)) {
    fuzz_check(id == 7 && count > cfg.max_graph_nodes, "a graph of %llu nodes refused",
               (unsigned long long)count);
  } else if ((j->req = opd__v1__request__unpack(&j->arena.pb, len, frame)) != NULL &&
             j->req->body_case == OPD__V1__REQUEST__BODY_DEFINE_GRAPH &&
             opd__wire_strings_valid(&opd__v1__request__descriptor, frame, len, opd_utf8_valid,
                                     opd_utf8_escape, bad, sizeof bad)) {
    j->id = j->req->id;
    const Opd__V1__DefineGraph *d = j->req->define_graph;
    Opd__V1__Response *r = run(j);
    if (r->body_case == OPD__V1__RESPONSE__BODY_DEFINE_GRAPH) {
      fuzz_check(r->define_graph->graph == d->graph, "a define answered for another graph");
      run_graph(&s, d, d->graph);
      Opd__V1__DescribeGraph dg = OPD__V1__DESCRIBE_GRAPH__INIT;
      dg.graph = d->graph;
      dg.introspection = true;
      Opd__V1__Request req = OPD__V1__REQUEST__INIT;
      req.id = 200;
      req.body_case = OPD__V1__REQUEST__BODY_DESCRIBE_GRAPH;
      req.describe_graph = &dg;
      fuzz_response_free(request(&s, OPD__JOB_DESCRIBE_GRAPH, &req));
      Opd__V1__ReleaseGraph rel = OPD__V1__RELEASE_GRAPH__INIT;
      uint64_t ids[1] = {d->graph};
      rel.graphs = ids;
      rel.n_graphs = 1;
      req.id = 201;
      req.body_case = OPD__V1__REQUEST__BODY_RELEASE_GRAPH;
      req.release_graph = &rel;
      Opd__V1__Response *ack = request(&s, OPD__JOB_RELEASE_GRAPH, &req);
      fuzz_check(ack->body_case == OPD__V1__RESPONSE__BODY_ACK, "a release of a defined graph");
      fuzz_response_free(ack);
    } else {
      fuzz_check(s.graphs.count == 0, "a refused define left a graph");
    }
    fuzz_response_free(r);
  }
  fuzz_job_free(j);
  opd__free(frame);
  fuzz_check(s.graphs.count == 0, "graphs left after their release");
  for (uint64_t h = 1; h < s.next_handle; h++) opd__session_drop(&s, h);
  opd__session_destroy(&s);
  opd__graphs_stop(graphs);
  opd_memory_stats_get(OPD_DEVICE_CPU, &m);
  fuzz_check(m.in_use == cpu_bytes, "the CPU allocator holds %llu bytes, %llu before the input",
             (unsigned long long)m.in_use, (unsigned long long)cpu_bytes);
  return 0;
}

/* graph_backend_daemon.c: the daemon backend of opd-graph-conformance ([Note: Graph
 * backends] in graph_runner.h): the replay through a running opd (--server URL) with the
 * client library's graph API (opd/client.h, [Note: Graphs in the client]): inputs are
 * uploaded to the chosen device, each graph is sent with the boxed builder (its constants as
 * values and literals, its tensors as graph values), defined, run on handles, and outputs
 * downloaded; statistics (the kernels the last run launched: GraphInfo.kernels_last_run)
 * and the introspection document come from describe_graph. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph_runner.h"
#include "opd/client.h"
#include "opd/dispatcher.h"
#include "opd/error.h"

typedef struct daemon_backend {
  graph_backend base;
  opd_client *c;
  opd_client_device device;
} daemon_backend;

/* Records the client's last error as this process's (the runner prints opd_last_error). */
static int client_failed(int rc, const char *what) {
  return opd_error(rc < 0 ? rc : OPD_EINTERNAL, "%s: %s", what, opd_client_last_error());
}

static int upload(graph_backend *b, opd_tensor *host, uint64_t *handle) {
  daemon_backend *d = (daemon_backend *)b;
  size_t nbytes = (size_t)host->numel * opd_dtype_size(opd_tensor_dtype(host));
  int rc = opd_client_upload(d->c, opd_tensor_dtype(host), opd_tensor_sizes(host), host->ndim,
                             opd_tensor_data(host), nbytes, &d->device, handle);
  return rc ? client_failed(rc, "upload") : 0;
}

/* The client values of one node: constants converted, references as graph values, an
 * absent argument before a given one as its schema's default. `lits` holds the literals
 * the values point to. */
typedef struct node_values {
  opd_client_value v[OPD_SCHEMA_MAX_ARGS];
  opd_client_literal lits[OPD_SCHEMA_MAX_ARGS];
  opd_client_tensor *lists[OPD_SCHEMA_MAX_ARGS];
  uint32_t n;
} node_values;

static opd_client_tensor graph_value(const opd_client_tensor *inputs,
                                     const opd_client_tensor *nodes, uint32_t ninputs,
                                     opd_graph_ref r) {
  opd_client_tensor v = r.position < ninputs ? inputs[r.position] : nodes[r.position - ninputs];
  return opd_graph_output(v, r.output == OPD_GRAPH_ALL_OUTPUTS ? OPD_CLIENT_GRAPH_ALL_OUTPUTS
                                                               : r.output);
}

static int constant(const opd_ivalue *iv, opd_client_value *out, opd_client_literal *lit) {
  switch ((opd_iv_tag)iv->tag) {
  case OPD_IV_NONE: *out = opd_cv_none(); return 0;
  case OPD_IV_BOOL: *out = opd_cv_bool(iv->u.b); return 0;
  case OPD_IV_INT: *out = opd_cv_int(iv->u.i); return 0;
  case OPD_IV_DOUBLE: *out = opd_cv_double(iv->u.d); return 0;
  case OPD_IV_STRING: *out = opd_cv_str(iv->u.s); return 0;
  case OPD_IV_INT_LIST: *out = opd_cv_ints(iv->u.ints, iv->len); return 0;
  case OPD_IV_DOUBLE_LIST: *out = opd_cv_doubles(iv->u.doubles, iv->len); return 0;
  case OPD_IV_BOOL_LIST: *out = opd_cv_bools(iv->u.bools, iv->len); return 0;
  case OPD_IV_DTYPE: *out = opd_cv_dtype(iv->u.dtype); return 0;
  case OPD_IV_DEVICE: *out = opd_cv_device(iv->u.device.type, iv->u.device.index); return 0;
  case OPD_IV_TENSOR: { /* the fixture's constants are contiguous CPU tensors */
    const opd_tensor *t = iv->u.t;
    *lit =
        (opd_client_literal){opd_tensor_dtype(t), t->ndim, opd_tensor_sizes(t), opd_tensor_data(t),
                             (size_t)t->numel * opd_dtype_size(opd_tensor_dtype(t))};
    *out = opd_cv_literal(lit);
    return 0;
  }
  default: return opd_error(OPD_EINVAL, "a constant of IValue tag %d", (int)iv->tag);
  }
}

static int node_args(const graph_desc_node *n, const opd_client_tensor *inputs,
                     const opd_client_tensor *nodes, uint32_t ninputs, node_values *nv) {
  const opd_operator *op = opd_find_schema(n->op);
  const opd_schema *s = op ? opd_op_schema(op) : NULL;
  if (!s || n->nargs > s->num_args) return opd_error(OPD_EINVAL, "node %s: no such schema", n->op);
  memset(nv->lists, 0, sizeof nv->lists);
  nv->n = n->nargs;
  for (uint32_t i = 0; i < n->nargs; i++) {
    const opd_graph_arg *a = &n->args[i];
    int rc = 0;
    switch (a->kind) {
    case OPD_GRAPH_ARG_DEFAULT:
      if (!s->args[i].has_default)
        return opd_error(OPD_EINVAL, "%s: argument '%s' has no default", n->op, s->args[i].name);
      rc = constant(&s->args[i].default_value, &nv->v[i], &nv->lits[i]);
      break;
    case OPD_GRAPH_ARG_VALUE: rc = constant(&a->value, &nv->v[i], &nv->lits[i]); break;
    case OPD_GRAPH_ARG_REF:
      nv->v[i] = opd_cv_tensor(graph_value(inputs, nodes, ninputs, a->ref));
      break;
    case OPD_GRAPH_ARG_REFS:
      if (!(nv->lists[i] = calloc(a->nrefs ? a->nrefs : 1, sizeof *nv->lists[i])))
        return opd_error(OPD_ENOMEM, "out of memory");
      for (uint32_t k = 0; k < a->nrefs; k++)
        nv->lists[i][k] = graph_value(inputs, nodes, ninputs, a->refs[k]);
      nv->v[i] = opd_cv_tensors(nv->lists[i], a->nrefs);
      break;
    }
    if (rc) return rc;
  }
  return 0;
}

static void node_values_free(node_values *nv) {
  for (uint32_t i = 0; i < OPD_SCHEMA_MAX_ARGS; i++) free(nv->lists[i]);
}

static int define(graph_backend *b, const graph_desc *desc, uint64_t *graph, bool *cache_hit) {
  daemon_backend *d = (daemon_backend *)b;
  opd_graph_builder *gb;
  int rc = opd_graph_builder_new(d->c, &gb);
  if (rc) return client_failed(rc, "graph builder");
  opd_client_tensor *in = calloc(desc->ninputs + 1, sizeof *in);
  opd_client_tensor *nodes = calloc(desc->nnodes + 1, sizeof *nodes);
  opd_client_tensor *outs = calloc(desc->noutputs + 1, sizeof *outs);
  node_values *nv = calloc(1, sizeof *nv);
  if (!in || !nodes || !outs || !nv) rc = opd_error(OPD_ENOMEM, "out of memory");
  for (uint32_t i = 0; rc == 0 && i < desc->ninputs; i++) {
    const graph_desc_input *di = &desc->inputs[i];
    if ((rc = opd_graph_input(gb, di->dtype, di->sizes, (int)di->ndim, &d->device,
                              di->kind == OPD_GRAPH_PARAMETER, &in[i])))
      rc = client_failed(rc, "graph input");
  }
  for (uint32_t j = 0; rc == 0 && j < desc->nnodes; j++) {
    if ((rc = node_args(&desc->nodes[j], in, nodes, desc->ninputs, nv)) == 0 &&
        (rc = opd_graph_node(gb, desc->nodes[j].op, nv->v, nv->n, &nodes[j])))
      rc = client_failed(rc, "graph node");
    node_values_free(nv);
  }
  for (uint32_t i = 0; rc == 0 && i < desc->noutputs; i++)
    outs[i] = graph_value(in, nodes, desc->ninputs, desc->outputs[i]);
  opd_client_graph_info info;
  if (rc == 0 && (rc = opd_graph_define(gb, outs, desc->noutputs, graph, &info)))
    rc = client_failed(rc, "define_graph");
  if (rc == 0) *cache_hit = info.cache_hit;
  opd_graph_builder_free(gb);
  free(in);
  free(nodes);
  free(outs);
  free(nv);
  return rc;
}

static int run(graph_backend *b, uint64_t graph, const uint64_t *inputs, uint32_t n,
               uint64_t *outputs, uint32_t nout) {
  daemon_backend *d = (daemon_backend *)b;
  size_t got = 0;
  int rc = opd_graph_run(d->c, graph, inputs, n, outputs, nout, &got);
  if (rc == 0 && got != nout) rc = opd_error(OPD_EINTERNAL, "run_graph: %zu outputs", got);
  return rc ? client_failed(rc, "run_graph") : 0;
}

static int download(graph_backend *b, uint64_t handle, opd_tensor **host) {
  daemon_backend *d = (daemon_backend *)b;
  opd_client_tensor_info info;
  void *data = NULL;
  int rc = opd_client_download_alloc(d->c, handle, &info, &data);
  if (rc) return client_failed(rc, "download");
  rc = opd_tensor_empty(info.shape, info.ndim, (opd_dtype)info.dtype,
                        (opd_device){OPD_DEVICE_CPU, -1}, host);
  if (rc == 0 && info.nbytes) memcpy(opd_tensor_data(*host), data, info.nbytes);
  free(data);
  return rc;
}

static int stats(graph_backend *b, uint64_t graph, graph_backend_stats *out) {
  daemon_backend *d = (daemon_backend *)b;
  opd_client_graph_info info;
  int rc = opd_graph_describe(d->c, graph, &info, NULL);
  if (rc) return client_failed(rc, "describe_graph");
  *out = (graph_backend_stats){info.nodes_before, info.nodes_after, info.kernels_last_run,
                               info.softmax_patterns};
  return 0;
}

static json_t *introspect(graph_backend *b, uint64_t graph) {
  daemon_backend *d = (daemon_backend *)b;
  char *text = NULL;
  if (opd_graph_describe(d->c, graph, NULL, &text)) return NULL;
  json_t *doc = json_loads(text, 0, NULL);
  free(text);
  return doc;
}

static void release(graph_backend *b, uint64_t handle) {
  opd_client_release_async(((daemon_backend *)b)->c, &handle, 1, NULL, NULL, NULL);
}

static void release_graph(graph_backend *b, uint64_t graph) {
  opd_graph_release_async(((daemon_backend *)b)->c, graph, NULL, NULL, NULL);
}

static void close_daemon(graph_backend *b) {
  daemon_backend *d = (daemon_backend *)b;
  opd_client_wait_all(d->c);
  opd_client_close(d->c);
  free(d);
}

int graph_backend_daemon_open(const char *url, bool cuda, graph_backend **out) {
  daemon_backend *d = calloc(1, sizeof *d);
  if (!d) return opd_error(OPD_ENOMEM, "out of memory");
  int rc = opd_client_connect(url, NULL, &d->c);
  if (rc) {
    free(d);
    return client_failed(rc, url);
  }
  d->device = cuda ? (opd_client_device){OPD_CLIENT_DEVICE_CUDA, 0}
                   : (opd_client_device){OPD_CLIENT_DEVICE_CPU, -1};
  d->base = (graph_backend){"daemon", upload,     define,  run,           download,
                            stats,    introspect, release, release_graph, close_daemon};
  *out = &d->base;
  return 0;
}

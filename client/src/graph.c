/* graph.c: graphs in the client ([Note: Graphs in the client] in opd/client.h): the builder
 * and its capture of calls, and the define_graph, run_graph, release_graph and
 * describe_graph requests. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client_internal.h"

/* A node as built: its operator and its arguments, deep copies the builder owns. */
typedef struct graph_node {
  char *op;
  opd_client_value *args;
  size_t nargs;
} graph_node;

typedef struct graph_input {
  int dtype;
  int ndim;
  int64_t shape[OPD_CLIENT_MAX_DIMS];
  opd_client_device device;
  bool parameter;
} graph_input;

struct opd_graph_builder {
  opd_client *c;
  graph_input *inputs;
  size_t ninputs, cap_inputs;
  graph_node *nodes;
  size_t nnodes, cap_nodes;
};

/* The builder this thread records its calls into, if any. */
static _Thread_local opd_graph_builder *capture;

/* Positions are 31 bits ([Note: Graph values]); the daemon's limits are far lower. */
#define MAX_POSITIONS (UINT32_C(1) << 31)

static opd_client_tensor value_of(size_t position, uint32_t output) {
  return OPD_CLIENT_GRAPH_VALUE_BIT | (opd_client_tensor)position << 32 | output;
}

static int grow(void **p, size_t *cap, size_t need, size_t esize) {
  if (need <= *cap) return 0;
  size_t c = *cap ? *cap * 2 : 16;
  void *q = realloc(*p, c * esize);
  if (!q) return opd__client_error(OPD_ENOMEM, "out of memory building a graph");
  *p = q;
  *cap = c;
  return 0;
}

int opd_graph_builder_new(opd_client *c, opd_graph_builder **out) {
  *out = NULL;
  if (!c) return opd__client_error(OPD_EINVAL, "graph builder: NULL client");
  opd_graph_builder *b = calloc(1, sizeof *b);
  if (!b) return opd__client_error(OPD_ENOMEM, "out of memory");
  b->c = c;
  *out = b;
  return 0;
}

void opd_graph_builder_free(opd_graph_builder *b) {
  if (!b) return;
  if (capture == b) capture = NULL;
  for (size_t j = 0; j < b->nnodes; j++) {
    opd__client_free_values(b->nodes[j].args, b->nodes[j].nargs);
    free(b->nodes[j].args);
    free(b->nodes[j].op);
  }
  free(b->nodes);
  free(b->inputs);
  free(b);
}

int opd_graph_input(opd_graph_builder *b, int dtype, const int64_t *shape, int ndim,
                    const opd_client_device *device, bool parameter, opd_client_tensor *value) {
  *value = 0;
  if (b->nnodes) return opd__client_error(OPD_EINVAL, "graph input: inputs come before the nodes");
  if (opd_client_dtype_size(dtype) == 0)
    return opd__client_error(OPD_EINVAL, "graph input %zu: invalid dtype %d", b->ninputs, dtype);
  if (ndim < 0 || ndim > OPD_CLIENT_MAX_DIMS || (ndim && !shape))
    return opd__client_error(OPD_EINVAL, "graph input %zu: bad rank %d", b->ninputs, ndim);
  int rc = grow((void **)&b->inputs, &b->cap_inputs, b->ninputs + 1, sizeof *b->inputs);
  if (rc) return rc;
  graph_input *in = &b->inputs[b->ninputs];
  *in = (graph_input){.dtype = dtype, .ndim = ndim, .parameter = parameter};
  if (ndim) memcpy(in->shape, shape, (size_t)ndim * sizeof *shape);
  in->device = device ? *device : (opd_client_device){OPD_CLIENT_DEVICE_CPU, -1};
  *value = value_of(b->ninputs++, 0);
  return 0;
}

/* A deep copy of a value (what opd__client_free_values frees). */
static int copy_value(const opd_client_value *in, opd_client_value *out) {
  *out = *in;
  size_t esize = 0;
  const void *src = NULL;
  switch (in->kind) {
  case OPD_CV_STR:
    if (!in->u.s) return opd__client_error(OPD_EINVAL, "a NULL string");
    if (!(out->u.s = strdup(in->u.s))) return opd__client_error(OPD_ENOMEM, "out of memory");
    out->len = strlen(out->u.s);
    return 0;
  case OPD_CV_INTS: esize = sizeof(int64_t), src = in->u.ints; break;
  case OPD_CV_DOUBLES: esize = sizeof(double), src = in->u.doubles; break;
  case OPD_CV_BOOLS: esize = sizeof(bool), src = in->u.bools; break;
  case OPD_CV_TENSORS:
  case OPD_CV_OPT_TENSORS: esize = sizeof(opd_client_tensor), src = in->u.tensors; break;
  case OPD_CV_LITERAL: {
    const opd_client_literal *l = in->u.literal;
    if (!l || l->ndim < 0 || l->ndim > OPD_CLIENT_MAX_DIMS || (l->nbytes && !l->data) ||
        (l->ndim && !l->shape))
      return opd__client_error(OPD_EINVAL, "a malformed literal");
    size_t shape_bytes = (size_t)l->ndim * sizeof(int64_t);
    opd_client_literal *lit = malloc(sizeof *lit + shape_bytes + l->nbytes);
    if (!lit) return opd__client_error(OPD_ENOMEM, "out of memory");
    int64_t *shape = (int64_t *)(lit + 1);
    if (shape_bytes) memcpy(shape, l->shape, shape_bytes);
    if (l->nbytes) memcpy((uint8_t *)shape + shape_bytes, l->data, l->nbytes);
    *lit =
        (opd_client_literal){l->dtype, l->ndim, shape, (uint8_t *)shape + shape_bytes, l->nbytes};
    out->u.literal = lit;
    return 0;
  }
  default: return 0;
  }
  if (in->len && !src) return opd__client_error(OPD_EINVAL, "a NULL list with a nonzero length");
  void *p = malloc(in->len ? in->len * esize : 1);
  if (!p) return opd__client_error(OPD_ENOMEM, "out of memory");
  if (in->len) memcpy(p, src, in->len * esize);
  out->u.ints = p; /* every list member of the union is a pointer */
  return 0;
}

/* The values of the builder's next node, checked as far as the client can. */
static int check_values(const opd_graph_builder *b, const opd_client_value *args, size_t nargs) {
  size_t next = b->ninputs + b->nnodes;
  for (size_t i = 0; i < nargs; i++) {
    const opd_client_tensor *ts = &args[i].u.tensor;
    size_t n = 1;
    if (args[i].kind == OPD_CV_TENSORS) {
      ts = args[i].u.tensors;
      n = ts ? args[i].len : 0;
    } else if (args[i].kind != OPD_CV_TENSOR) {
      continue;
    }
    for (size_t k = 0; k < n; k++) {
      if (!opd_graph_is_value(ts[k]))
        return opd__client_error(
            OPD_EINVAL,
            "graph node %zu: argument %zu: tensor handle %llu: a graph holds no "
            "handle (make the tensor an input, opd_graph_input)",
            b->nnodes, i, (unsigned long long)ts[k]);
      if (opd_graph_value_position(ts[k]) >= next)
        return opd__client_error(OPD_EINVAL,
                                 "graph node %zu: argument %zu: a value at position %u, not one of "
                                 "this builder's values before it",
                                 b->nnodes, i, opd_graph_value_position(ts[k]));
    }
  }
  return 0;
}

int opd_graph_node(opd_graph_builder *b, const char *op, const opd_client_value *args, size_t nargs,
                   opd_client_tensor *value) {
  *value = 0;
  if (!op || !*op) return opd__client_error(OPD_EINVAL, "graph node %zu: no operator", b->nnodes);
  if (nargs && !args)
    return opd__client_error(OPD_EINVAL, "graph node %zu: NULL arguments", b->nnodes);
  if (nargs > OPD__CLIENT_MAX_ARGS)
    return opd__client_error(OPD_EINVAL, "graph node %zu: %zu arguments", b->nnodes, nargs);
  if (b->ninputs + b->nnodes + 1 >= MAX_POSITIONS)
    return opd__client_error(OPD_EINVAL, "graph node %zu: too many nodes", b->nnodes);
  int rc = check_values(b, args, nargs);
  if (rc == 0) rc = grow((void **)&b->nodes, &b->cap_nodes, b->nnodes + 1, sizeof *b->nodes);
  if (rc) return rc;
  graph_node *n = &b->nodes[b->nnodes];
  *n = (graph_node){.op = strdup(op), .args = calloc(nargs ? nargs : 1, sizeof *n->args)};
  if (!n->op || !n->args) rc = opd__client_error(OPD_ENOMEM, "out of memory");
  for (; rc == 0 && n->nargs < nargs; n->nargs++)
    if ((rc = copy_value(&args[n->nargs], &n->args[n->nargs])) != 0) break;
  if (rc) {
    opd__client_free_values(n->args, n->nargs);
    free(n->args);
    free(n->op);
    return rc;
  }
  *value = value_of(b->ninputs + b->nnodes++, 0);
  return 0;
}

/* ---- capture ---- */

int opd_graph_capture_begin(opd_client *c, opd_graph_builder **out) {
  *out = NULL;
  if (capture)
    return opd__client_error(OPD_EBUSY, "graph capture: this thread captures into a graph already");
  int rc = opd_graph_builder_new(c, out);
  if (rc == 0) capture = *out;
  return rc;
}

int opd_graph_capture_end(opd_graph_builder *b) {
  if (capture != b)
    return opd__client_error(OPD_EINVAL, "graph capture: this thread does not capture into it");
  capture = NULL;
  return 0;
}

bool opd__client_capturing(const opd_client *c) {
  return capture && capture->c == c;
}

int opd__client_capture_call(const char *op, const opd_client_value *args, size_t nargs,
                             opd_client_tensor *results, size_t nresults) {
  opd_client_tensor v;
  int rc = opd_graph_node(capture, op, args, nargs, &v);
  for (size_t i = 0; rc == 0 && i < nresults; i++) results[i] = opd_graph_output(v, (uint32_t)i);
  return rc;
}

/* ---- define ---- */

/* The DefineGraph request of a builder, in storage it frees with define_free. */
typedef struct define_msg {
  Opd__V1__DefineGraph d;
  Opd__V1__ValueSpec *specs, **spec_ptrs;
  Opd__V1__Device *devices;
  Opd__V1__GraphNode *nodes, **node_ptrs;
  opd__client_args *args; /* per node */
  size_t nargs_built;
  Opd__V1__ValueRef *outs, **out_ptrs;
} define_msg;

static void define_free(define_msg *m) {
  for (size_t j = 0; j < m->nargs_built; j++) opd__client_args_free(&m->args[j]);
  free(m->specs);
  free(m->spec_ptrs);
  free(m->devices);
  free(m->nodes);
  free(m->node_ptrs);
  free(m->args);
  free(m->outs);
  free(m->out_ptrs);
}

static int define_build(const opd_graph_builder *b, const opd_client_tensor *outputs, size_t n,
                        define_msg *m) {
  memset(m, 0, sizeof *m);
  size_t ni = b->ninputs ? b->ninputs : 1, nn = b->nnodes ? b->nnodes : 1, no = n ? n : 1;
  m->specs = calloc(ni, sizeof *m->specs);
  m->spec_ptrs = calloc(ni, sizeof *m->spec_ptrs);
  m->devices = calloc(ni, sizeof *m->devices);
  m->nodes = calloc(nn, sizeof *m->nodes);
  m->node_ptrs = calloc(nn, sizeof *m->node_ptrs);
  m->args = calloc(nn, sizeof *m->args);
  m->outs = calloc(no, sizeof *m->outs);
  m->out_ptrs = calloc(no, sizeof *m->out_ptrs);
  if (!m->specs || !m->spec_ptrs || !m->devices || !m->nodes || !m->node_ptrs || !m->args ||
      !m->outs || !m->out_ptrs)
    return opd__client_error(OPD_ENOMEM, "out of memory");
  for (size_t i = 0; i < b->ninputs; i++) {
    const graph_input *in = &b->inputs[i];
    Opd__V1__ValueSpec *s = &m->specs[i];
    opd__v1__value_spec__init(s);
    s->dtype = (Opd__V1__DType)in->dtype;
    s->n_shape = (size_t)in->ndim;
    s->shape = (int64_t *)in->shape;
    opd__v1__device__init(&m->devices[i]);
    m->devices[i].type = in->device.type;
    m->devices[i].index = in->device.index;
    s->device = &m->devices[i];
    s->kind =
        in->parameter ? OPD__V1__VALUE_SPEC__KIND__PARAMETER : OPD__V1__VALUE_SPEC__KIND__INPUT;
    m->spec_ptrs[i] = s;
  }
  for (size_t j = 0; j < b->nnodes; j++) {
    const graph_node *g = &b->nodes[j];
    int rc = opd__client_args_build(g->args, g->nargs, true, &m->args[j]);
    if (rc) {
      char msg[OPD__CLIENT_MSG_MAX];
      snprintf(msg, sizeof msg, "%s", opd_client_last_error());
      return opd__client_error(rc, "graph node %zu (%s): %s", j, g->op, msg);
    }
    m->nargs_built = j + 1;
    Opd__V1__GraphNode *gn = &m->nodes[j];
    opd__v1__graph_node__init(gn);
    gn->op = g->op;
    gn->n_args = g->nargs;
    gn->args = m->args[j].pointers;
    m->node_ptrs[j] = gn;
  }
  for (size_t i = 0; i < n; i++) {
    if (!opd_graph_is_value(outputs[i]) || (uint32_t)outputs[i] == OPD_CLIENT_GRAPH_ALL_OUTPUTS)
      return opd__client_error(OPD_EINVAL, "graph output %zu: not a graph value of one tensor", i);
    opd__v1__value_ref__init(&m->outs[i]);
    m->outs[i].position = opd_graph_value_position(outputs[i]);
    m->outs[i].output = (uint32_t)outputs[i];
    m->out_ptrs[i] = &m->outs[i];
  }
  opd__v1__define_graph__init(&m->d);
  m->d.n_inputs = b->ninputs;
  m->d.inputs = m->spec_ptrs;
  m->d.n_nodes = b->nnodes;
  m->d.nodes = m->node_ptrs;
  m->d.n_outputs = n;
  m->d.outputs = m->out_ptrs;
  return 0;
}

int opd_graph_define_async(opd_graph_builder *b, const opd_client_tensor *outputs, size_t noutputs,
                           opd_client_graph *graph, opd_future_cb cb, void *user,
                           opd_future **out) {
  if (out) *out = NULL;
  *graph = 0;
  if (noutputs && !outputs) return opd__client_error(OPD_EINVAL, "define_graph: NULL outputs");
  define_msg m;
  int rc = define_build(b, outputs, noutputs, &m);
  if (rc == 0) {
    opd_client *c = b->c;
    pthread_mutex_lock(&c->mu);
    m.d.graph = ++c->next_graph; /* the client chooses (proto/opd.proto, "Graphs") */
    pthread_mutex_unlock(&c->mu);
    Opd__V1__Request req = OPD__V1__REQUEST__INIT;
    req.body_case = OPD__V1__REQUEST__BODY_DEFINE_GRAPH;
    req.define_graph = &m.d;
    rc = opd__client_submit_request(c, OPD__REQ_DEFINE_GRAPH, &req, NULL, NULL, 0, cb, user, out);
    if (rc == 0) *graph = m.d.graph;
  }
  define_free(&m);
  return rc;
}

int opd_graph_define(opd_graph_builder *b, const opd_client_tensor *outputs, size_t noutputs,
                     opd_client_graph *graph, opd_client_graph_info *info) {
  *graph = 0;
  opd_future *f = NULL;
  int rc = opd__client_may_block(b->c);
  opd_client_graph id = 0;
  if (rc == 0) rc = opd_graph_define_async(b, outputs, noutputs, &id, NULL, NULL, &f);
  if (rc) return rc;
  rc = opd__future_wait_sync(f);
  if (rc == 0) {
    *graph = id;
    if (info) *info = *f->graph_info;
  }
  opd_future_free(f);
  return rc;
}

int opd__client_graph_reply(const Opd__V1__GraphInfo *in, const char *introspection,
                            opd_future *f) {
  opd_client_graph_info *info = calloc(1, sizeof *info);
  if (!info) return OPD_ENOMEM;
  *info = (opd_client_graph_info){.graph = in->graph,
                                  .compiled = in->compiled,
                                  .cache_hit = in->cache_hit,
                                  .nodes_before = in->nodes_before,
                                  .nodes_after = in->nodes_after,
                                  .kernels = in->kernels,
                                  .kernels_last_run = in->kernels_last_run,
                                  .softmax_patterns = in->softmax_patterns,
                                  .groups = in->groups,
                                  .runs = in->runs,
                                  .compile_us = in->compile_us};
  snprintf(info->key, sizeof info->key, "%s", in->key ? in->key : "");
  if (introspection && *introspection && !(f->introspection = strdup(introspection))) {
    free(info);
    return OPD_ENOMEM;
  }
  f->graph_info = info;
  return 0;
}

const opd_client_graph_info *opd_future_graph_info(const opd_future *f) {
  return f->finished && f->rc == 0 ? f->graph_info : NULL;
}

/* ---- run, release, describe ---- */

int opd_graph_run_async(opd_client *c, opd_client_graph g, const opd_client_tensor *inputs,
                        size_t ninputs, opd_future_cb cb, void *user, opd_future **out) {
  if (out) *out = NULL;
  if (ninputs && !inputs) return opd__client_error(OPD_EINVAL, "run_graph: NULL inputs");
  for (size_t i = 0; i < ninputs; i++)
    if (!inputs[i] || opd_graph_is_value(inputs[i]))
      return opd__client_error(OPD_EINVAL, "run_graph: input %zu is not a tensor handle", i);
  Opd__V1__RunGraph run = OPD__V1__RUN_GRAPH__INIT;
  run.graph = g;
  run.n_inputs = ninputs;
  run.inputs = (uint64_t *)inputs;
  Opd__V1__Request req = OPD__V1__REQUEST__INIT;
  req.body_case = OPD__V1__REQUEST__BODY_RUN_GRAPH;
  req.run_graph = &run;
  return opd__client_submit_request(c, OPD__REQ_RUN_GRAPH, &req, "run_graph", NULL, 0, cb, user,
                                    out);
}

int opd_graph_run(opd_client *c, opd_client_graph g, const opd_client_tensor *inputs,
                  size_t ninputs, opd_client_tensor *outs, size_t max_outs, size_t *num_outs) {
  if (num_outs) *num_outs = 0;
  if (max_outs && !outs) return opd__client_error(OPD_EINVAL, "run_graph: NULL result array");
  int rc = opd__client_may_block(c);
  opd_future *f = NULL;
  if (rc == 0) rc = opd_graph_run_async(c, g, inputs, ninputs, NULL, NULL, &f);
  if (rc) return rc;
  rc = opd__future_wait_sync(f);
  if (rc == 0) rc = opd__client_take_tensors(c, f, outs, max_outs, num_outs, false);
  opd_future_free(f);
  return rc;
}

int opd_graph_release_async(opd_client *c, opd_client_graph g, opd_future_cb cb, void *user,
                            opd_future **out) {
  Opd__V1__ReleaseGraph rel = OPD__V1__RELEASE_GRAPH__INIT;
  rel.n_graphs = 1;
  rel.graphs = &g;
  Opd__V1__Request req = OPD__V1__REQUEST__INIT;
  req.body_case = OPD__V1__REQUEST__BODY_RELEASE_GRAPH;
  req.release_graph = &rel;
  return opd__client_submit_request(c, OPD__REQ_RELEASE_GRAPH, &req, NULL, NULL, 0, cb, user, out);
}

int opd_graph_release(opd_client *c, opd_client_graph g) {
  opd_future *f = NULL;
  int rc = opd__client_may_block(c);
  if (rc == 0) rc = opd_graph_release_async(c, g, NULL, NULL, &f);
  return opd__client_wait_and_free(rc, f);
}

int opd_graph_describe(opd_client *c, opd_client_graph g, opd_client_graph_info *info,
                       char **introspection) {
  if (introspection) *introspection = NULL;
  int rc = opd__client_may_block(c);
  if (rc) return rc;
  Opd__V1__DescribeGraph d = OPD__V1__DESCRIBE_GRAPH__INIT;
  d.graph = g;
  d.introspection = introspection != NULL;
  Opd__V1__Request req = OPD__V1__REQUEST__INIT;
  req.body_case = OPD__V1__REQUEST__BODY_DESCRIBE_GRAPH;
  req.describe_graph = &d;
  opd_future *f = NULL;
  rc = opd__client_submit_request(c, OPD__REQ_DESCRIBE_GRAPH, &req, NULL, NULL, 0, NULL, NULL, &f);
  if (rc) return rc;
  rc = opd__future_wait_sync(f);
  if (rc == 0) {
    if (info) *info = *f->graph_info;
    if (introspection) {
      *introspection = f->introspection;
      f->introspection = NULL;
    }
  }
  opd_future_free(f);
  return rc;
}

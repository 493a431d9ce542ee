/* graph_fixture.c: reading a graph of a fixture (tests/fixtures/graphs/FORMAT.md) into a graph
 * description: inputs and parameters by spec with their values, nodes with their arguments
 * bound by schema name (missing ones take the schema's default), references by position
 * (input i is position i, node j position k + j), outputs. The fixture's schema of every
 * operator must be opd's, so that arguments bind as PyTorch bound them. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../conformance/conformance.h"
#include "graph_runner.h"
#include "opd/dispatcher.h"

typedef struct names {
  const char **name;
  uint32_t *position;
  uint32_t n;
} names;

static int position_of(const names *nm, const char *name, uint32_t *pos) {
  for (uint32_t i = 0; i < nm->n; i++)
    if (strcmp(nm->name[i], name) == 0) {
      *pos = nm->position[i];
      return 0;
    }
  return -1;
}

/* A fixture tensor (contiguous) on the CPU. */
static opd_tensor *read_tensor(const json_t *v, char *why, size_t wlen) {
  opd_dtype dtype;
  int64_t shape[OPD_MAX_DIMS];
  int nd = int_array(json_object_get(v, "shape"), shape, OPD_MAX_DIMS);
  const json_t *data = json_object_get(v, "data");
  opd_tensor *t = NULL;
  if (opd_dtype_from_name(str(v, "dtype"), &dtype) != 0 || nd < 0 || !json_is_array(data) ||
      opd_tensor_empty(shape, nd, dtype, (opd_device){OPD_DEVICE_CPU, -1}, &t) != 0) {
    snprintf(why, wlen, "a malformed tensor");
    return NULL;
  }
  if ((int64_t)json_array_size(data) != t->numel) {
    snprintf(why, wlen, "a tensor with %zu values for %lld elements", json_array_size(data),
             (long long)t->numel);
    opd_tensor_release(t);
    return NULL;
  }
  for (int64_t i = 0; i < t->numel; i++)
    if (write_element(opd_tensor_data(t), i, dtype, json_array_get(data, (size_t)i)) != 0) {
      snprintf(why, wlen, "a bad tensor element %lld", (long long)i);
      opd_tensor_release(t);
      return NULL;
    }
  return t;
}

static int read_ref(const json_t *v, const names *nm, opd_graph_ref *r, char *why, size_t wlen) {
  if (strcmp(str(v, "type"), "Node") != 0 || position_of(nm, str(v, "ref"), &r->position)) {
    snprintf(why, wlen, "a reference to unknown value '%s'", str(v, "ref"));
    return -1;
  }
  const json_t *o = json_object_get(v, "output");
  r->output = o ? (uint32_t)json_integer_value(o) : 0;
  return 0;
}

static int named(const char *name, const char *const *table, int n) {
  for (int i = 0; i < n; i++)
    if (strcmp(name, table[i]) == 0) return i;
  return -1;
}

/* One argument value of the fixture as a graph argument. */
static int read_arg(const json_t *v, const names *nm, opd_graph_arg *a, char *why, size_t wlen) {
  const char *type = str(v, "type");
  const json_t *val = json_object_get(v, "value");
  static const char *const layouts[] = {"strided", "sparse_coo"};
  static const char *const formats[] = {"contiguous_format", "preserve_format", "channels_last",
                                        "channels_last_3d"};
  *a = (opd_graph_arg){.kind = OPD_GRAPH_ARG_VALUE};
  int rc = 0;
  if (strcmp(type, "Node") == 0) {
    a->kind = OPD_GRAPH_ARG_REF;
    return read_ref(v, nm, &a->ref, why, wlen);
  }
  if (strcmp(type, "Tensor[]") == 0) {
    size_t n = json_array_size(val);
    opd_graph_ref *refs = calloc(n ? n : 1, sizeof *refs);
    if (!refs) return -1;
    for (size_t i = 0; i < n && rc == 0; i++)
      rc = read_ref(json_array_get(val, i), nm, &refs[i], why, wlen);
    *a = (opd_graph_arg){.kind = OPD_GRAPH_ARG_REFS, .refs = refs, .nrefs = (uint32_t)n};
    return rc;
  }
  if (strcmp(type, "Tensor") == 0) {
    opd_tensor *t = read_tensor(v, why, wlen);
    if (!t) return -1;
    a->value = opd_iv_tensor_steal(t);
  } else if (strcmp(type, "int") == 0 && json_is_integer(val)) {
    a->value = opd_iv_int(json_integer_value(val));
  } else if (strcmp(type, "float") == 0) {
    double d;
    if (parse_float(val, &d)) rc = -1;
    a->value = opd_iv_double(d);
  } else if (strcmp(type, "bool") == 0 && json_is_boolean(val)) {
    a->value = opd_iv_bool(json_is_true(val));
  } else if (strcmp(type, "None") == 0) {
    a->value = opd_iv_none();
  } else if (strcmp(type, "str") == 0 && json_is_string(val)) {
    rc = opd_iv_make_string(&a->value, json_string_value(val), json_string_length(val));
  } else if (strcmp(type, "int[]") == 0 || strcmp(type, "float[]") == 0 ||
             strcmp(type, "bool[]") == 0) {
    size_t n = json_array_size(val);
    int64_t *ints = calloc(n ? n : 1, sizeof *ints);
    double *dbls = calloc(n ? n : 1, sizeof *dbls);
    bool *bools = calloc(n ? n : 1, sizeof *bools);
    for (size_t i = 0; rc == 0 && ints && dbls && bools && i < n; i++) {
      const json_t *e = json_array_get(val, i);
      ints[i] = json_integer_value(e);
      bools[i] = json_is_true(e);
      if (type[0] == 'f' && parse_float(e, &dbls[i])) rc = -1;
    }
    if (!ints || !dbls || !bools) rc = -1;
    if (rc == 0)
      rc = type[0] == 'i'   ? opd_iv_make_int_list(&a->value, ints, n)
           : type[0] == 'f' ? opd_iv_make_double_list(&a->value, dbls, n)
                            : opd_iv_make_bool_list(&a->value, bools, n);
    free(ints);
    free(dbls);
    free(bools);
  } else if (strcmp(type, "ScalarType") == 0) {
    opd_dtype dt;
    rc = opd_dtype_from_name(json_string_value(val) ? json_string_value(val) : "", &dt);
    a->value = opd_iv_dtype(dt);
  } else if (strcmp(type, "Device") == 0) {
    const char *s = json_string_value(val) ? json_string_value(val) : "";
    if (strncmp(s, "cpu", 3) == 0)
      a->value = opd_iv_device((opd_device){OPD_DEVICE_CPU, -1});
    else if (strncmp(s, "cuda", 4) == 0)
      a->value =
          opd_iv_device((opd_device){OPD_DEVICE_CUDA, (int16_t)(s[4] == ':' ? atoi(s + 5) : -1)});
    else
      rc = -1;
  } else if (strcmp(type, "Layout") == 0 || strcmp(type, "MemoryFormat") == 0) {
    const char *s = json_string_value(val) ? json_string_value(val) : "";
    int i = type[0] == 'L' ? named(s, layouts, 2) : named(s, formats, 4);
    rc = i < 0 ? -1 : 0;
    a->value = opd_iv_int(i);
  } else {
    rc = -1;
  }
  if (rc) snprintf(why, wlen, "an argument of type '%s' that cannot be read", type);
  return rc ? -1 : 0;
}

static void free_arg(opd_graph_arg *a) {
  if (a->kind == OPD_GRAPH_ARG_VALUE) opd_iv_destroy(&a->value);
  free((void *)a->refs);
}

/* Node j's arguments, bound by name in the order of opd's schema. */
static int read_node(const json_t *node, const json_t *schemas, const names *nm,
                     graph_desc_node *out, char *why, size_t wlen) {
  const char *op = str(node, "op");
  const opd_operator *o = opd_find_schema(op);
  const opd_schema *s = o ? opd_op_schema(o) : NULL;
  if (!s) {
    snprintf(why, wlen, "opd has no operator %s", op);
    return -1;
  }
  opd_schema *theirs = NULL;
  const char *text = json_string_value(json_object_get(schemas, op));
  bool same = text && opd_schema_parse(text, &theirs) == 0 && opd_schema_equal(theirs, s);
  opd_schema_free(theirs);
  if (!same) {
    snprintf(why, wlen, "the fixture's schema of %s is not opd's", op);
    return -1;
  }
  out->op = strdup(op);
  out->args = calloc(s->num_args ? s->num_args : 1, sizeof *out->args);
  if (!out->op || !out->args) return -1;
  const json_t *args = json_object_get(node, "args");
  for (size_t i = 0; i < json_array_size(args); i++) {
    const json_t *a = json_array_get(args, i);
    uint32_t k = 0;
    while (k < s->num_args && strcmp(s->args[k].name, str(a, "name")) != 0) k++;
    if (k == s->num_args) {
      snprintf(why, wlen, "%s has no argument '%s'", op, str(a, "name"));
      return -1;
    }
    if (k + 1 > out->nargs) out->nargs = k + 1;
    if (read_arg(json_object_get(a, "value"), nm, &out->args[k], why, wlen)) return -1;
  }
  return 0;
}

void graph_desc_free(graph_desc *d) {
  for (uint32_t j = 0; j < d->nnodes; j++) {
    for (uint32_t i = 0; i < d->nodes[j].nargs; i++) free_arg(&d->nodes[j].args[i]);
    free(d->nodes[j].args);
    free(d->nodes[j].op);
  }
  free(d->inputs);
  free(d->nodes);
  free(d->outputs);
  *d = (graph_desc){0};
}

int graph_desc_read(const json_t *graph, const json_t *schemas, graph_desc *d,
                    opd_tensor ***inputs_out, char *why, size_t wlen) {
  const json_t *inputs = json_object_get(graph, "inputs"), *nodes = json_object_get(graph, "nodes");
  const json_t *outputs = json_object_get(graph, "outputs");
  size_t ni = json_array_size(inputs), nn = json_array_size(nodes), no = json_array_size(outputs);
  *d = (graph_desc){.inputs = calloc(ni ? ni : 1, sizeof *d->inputs),
                    .nodes = calloc(nn ? nn : 1, sizeof *d->nodes),
                    .outputs = calloc(no ? no : 1, sizeof *d->outputs)};
  opd_tensor **ts = calloc(ni ? ni : 1, sizeof *ts);
  names nm = {calloc(ni + nn + 1, sizeof *nm.name), calloc(ni + nn + 1, sizeof *nm.position), 0};
  int rc = d->inputs && d->nodes && d->outputs && ts && nm.name && nm.position ? 0 : -1;
  if (rc) snprintf(why, wlen, "out of memory");
  for (size_t i = 0; i < ni && rc == 0; i++) {
    const json_t *in = json_array_get(inputs, i);
    if (!(ts[i] = read_tensor(json_object_get(in, "value"), why, wlen))) rc = -1;
    if (rc) break;
    graph_desc_input *di = &d->inputs[d->ninputs++];
    di->dtype = opd_tensor_dtype(ts[i]);
    di->ndim = ts[i]->ndim;
    memcpy(di->sizes, opd_tensor_sizes(ts[i]), di->ndim * sizeof *di->sizes);
    di->kind = strcmp(str(in, "kind"), "parameter") == 0 ? OPD_GRAPH_PARAMETER : OPD_GRAPH_INPUT;
    nm.name[nm.n] = str(in, "name");
    nm.position[nm.n++] = (uint32_t)i;
  }
  for (size_t j = 0; j < nn && rc == 0; j++) {
    const json_t *node = json_array_get(nodes, j);
    d->nnodes++;
    if ((rc = read_node(node, schemas, &nm, &d->nodes[j], why, wlen))) break;
    nm.name[nm.n] = str(node, "name");
    nm.position[nm.n++] = (uint32_t)(ni + j);
  }
  for (size_t i = 0; i < no && rc == 0; i++) {
    rc = read_ref(json_array_get(outputs, i), &nm, &d->outputs[i], why, wlen);
    d->noutputs++;
  }
  free(nm.name);
  free(nm.position);
  if (rc) {
    for (size_t i = 0; ts && i < ni; i++)
      if (ts[i]) opd_tensor_release(ts[i]);
    free(ts);
    graph_desc_free(d);
    return -1;
  }
  *inputs_out = ts;
  return 0;
}

int graph_desc_build(const graph_desc *d, opd_device device, opd_graph **out) {
  opd_graph *g;
  int rc = opd_graph_new(NULL, &g);
  if (rc) return rc;
  for (uint32_t i = 0; i < d->ninputs && rc >= 0; i++)
    rc = opd_graph_add_input(g,
                             &(opd_graph_input_spec){d->inputs[i].dtype, d->inputs[i].sizes,
                                                     d->inputs[i].ndim, device, d->inputs[i].kind});
  for (uint32_t j = 0; j < d->nnodes && rc >= 0; j++)
    rc = opd_graph_add_node(g, d->nodes[j].op, d->nodes[j].args, d->nodes[j].nargs);
  if (rc >= 0) rc = opd_graph_set_outputs(g, d->outputs, d->noutputs);
  if (rc >= 0) rc = opd_graph_finish(g);
  if (rc < 0) {
    opd_graph_free(g);
    return rc;
  }
  *out = g;
  return 0;
}

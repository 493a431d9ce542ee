/* builder.c: building a graph (opd/graph.h): inputs by spec, nodes with their arguments
 * checked against the schema and their outputs inferred at once (infer.c), outputs, limits.
 *
 * [Note: Graph limits]
 * A graph arrives from a client, so everything it makes the builder hold is bounded by
 * opd_graph_limits, each bound a clear error naming the input or node that passed it:
 * max_inputs inputs; max_nodes nodes, where a node counts once per value it defines (an
 * unbind of 1000 rows counts 1000), so the values too are bounded; max_outputs outputs;
 * max_arg_bytes bytes of constant arguments (strings, lists, tensors, and 4 bytes per
 * reference of a Tensor[]). Shapes go through checked arithmetic ([Note: Checked
 * arithmetic] in opd/checked.h); a node returns at most OPD__MAX_NODE_OUTPUTS tensors.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir/graph_internal.h"
#include "opd/checked.h"
#include "opd/error.h"
#include "opd/memory.h"
#include "opd/utf8.h"
#include "src/loops.h"

#define OPD__MAX_NODE_OUTPUTS 1024

void opd_graph_limits_default(opd_graph_limits *limits) {
  *limits = (opd_graph_limits){OPD_GRAPH_DEFAULT_MAX_NODES, OPD_GRAPH_DEFAULT_MAX_INPUTS,
                               OPD_GRAPH_DEFAULT_MAX_OUTPUTS, OPD_GRAPH_DEFAULT_MAX_ARG_BYTES};
}

int opd_graph_new(const opd_graph_limits *limits, opd_graph **out) {
  opd_graph *g = opd__calloc(1, sizeof *g);
  if (!g) return opd_error(OPD_ENOMEM, "out of memory for a graph");
  opd_graph_limits_default(&g->limits);
  if (limits) g->limits = *limits;
  *out = g;
  return 0;
}

/* Grows an array to hold `need` elements. */
static int grow(void **p, uint32_t *cap, uint32_t need, size_t esize) {
  if (need <= *cap) return 0;
  uint32_t c = *cap ? *cap : 16;
  while (c < need) c = c > UINT32_MAX / 2 ? need : c * 2;
  void *q = opd__realloc(*p, (size_t)c * esize);
  if (!q) return opd_error(OPD_ENOMEM, "out of memory growing a graph");
  *p = q;
  *cap = c;
  return 0;
}

static int check_open(const opd_graph *g) {
  if (g->finished) return opd_error(OPD_EINVAL, "graph: already finished");
  if (g->has_outputs) return opd_error(OPD_EINVAL, "graph: its outputs are already set");
  return 0;
}

/* Appends a value; the caller fills it in. */
static int new_value(opd_graph *g, uint32_t *v) {
  int rc = grow((void **)&g->values, &g->cap_values, g->nvalues + 1, sizeof *g->values);
  if (rc) return rc;
  *v = g->nvalues++;
  g->values[*v] = (opd__gvalue){0};
  return 0;
}

static bool device_valid(opd_device d) {
  return d.type >= 0 && d.type < OPD_NUM_BACKENDS && d.type != OPD_DEVICE_META && d.index >= -1;
}

int opd_graph_add_input(opd_graph *g, const opd_graph_input_spec *spec) {
  int rc = check_open(g);
  if (rc) return rc;
  uint32_t i = g->ninputs;
  if (g->nnodes)
    return opd_error(OPD_EINVAL, "graph input %u: inputs come before the first node", i);
  if (i >= g->limits.max_inputs)
    return opd_error(OPD_EINVAL, "graph input %u: more than max_inputs (%u) inputs", i,
                     g->limits.max_inputs);
  if (!opd_dtype_valid(spec->dtype))
    return opd_error(OPD_EINVAL, "graph input %u: invalid dtype %d", i, (int)spec->dtype);
  if (!device_valid(spec->device))
    return opd_error(OPD_EINVAL, "graph input %u: invalid device (type %d, index %d)", i,
                     (int)spec->device.type, (int)spec->device.index);
  if (spec->kind != OPD_GRAPH_INPUT && spec->kind != OPD_GRAPH_PARAMETER)
    return opd_error(OPD_EINVAL, "graph input %u: kind %d is neither input nor parameter", i,
                     (int)spec->kind);
  char what[48];
  snprintf(what, sizeof what, "graph input %u", i);
  int64_t nbytes; /* [Note: Checked arithmetic] */
  if ((rc = opd_ckd_shape_nbytes(spec->sizes, spec->ndim, opd_dtype_size(spec->dtype), &nbytes,
                                 what)))
    return rc;
  if ((rc = grow((void **)&g->inputs, &g->cap_inputs, i + 1, sizeof *g->inputs))) return rc;
  opd_tensor *meta;
  if ((rc = opd_tensor_empty(spec->sizes, (int)spec->ndim, spec->dtype,
                             (opd_device){OPD_DEVICE_META, -1}, &meta)))
    return rc;
  uint32_t v;
  if ((rc = new_value(g, &v))) {
    opd_tensor_release(meta);
    return rc;
  }
  g->values[v] = (opd__gvalue){
      .node = OPD__NO_NODE, .output = i, .root = v, .device = spec->device, .meta = meta};
  g->inputs[i].kind = spec->kind;
  g->ninputs++;
  return (int)v;
}

/* The value a reference names, seen from position `self` (the one being defined). */
static int resolve(const opd_graph *g, uint32_t self, opd_graph_ref r, const char *where,
                   uint32_t *value) {
  if (r.position == self) return opd_error(OPD_EINVAL, "%s refers to the node itself", where);
  if (r.position > self) {
    if (self == 0)
      return opd_error(OPD_EINVAL, "%s refers to position %u, but no value is defined before it",
                       where, r.position);
    return opd_error(OPD_EINVAL,
                     "%s refers to position %u, but only positions 0..%u are defined before it "
                     "(a graph refers only to earlier values)",
                     where, r.position, self - 1);
  }
  uint32_t first = r.position, n = 1;
  if (r.position >= g->ninputs) {
    const opd__gnode *node = &g->nodes[r.position - g->ninputs];
    if (node->dead) return opd_error(OPD_EINVAL, "%s refers to removed node %u", where, r.position);
    first = node->first_out;
    n = node->nouts;
  }
  if (r.output >= n)
    return opd_error(OPD_EINVAL, "%s refers to output %u of position %u, which has %u output(s)",
                     where, r.output, r.position, n);
  *value = first + r.output;
  return 0;
}

/* The constant bytes an IValue holds ([Note: Graph limits]). */
static uint64_t value_bytes(const opd_ivalue *v) {
  switch ((opd_iv_tag)v->tag) {
  case OPD_IV_STRING:
  case OPD_IV_BOOL_LIST: return v->len;
  case OPD_IV_INT_LIST:
  case OPD_IV_DOUBLE_LIST:
  case OPD_IV_TENSOR_LIST:
  case OPD_IV_OPT_TENSOR_LIST: return (uint64_t)v->len * 8;
  case OPD_IV_TENSOR: return v->u.t->storage ? v->u.t->storage->nbytes : 0;
  default: return 0;
  }
}

/* A literal tensor copied into a storage of the graph's own (aten::clone, its layout kept). */
static int copy_literal(const opd_argument *sa, opd_tensor *t, opd_ivalue *out) {
  const opd_operator *clone = opd__graph_find_op("aten::clone");
  if (!clone) return opd_error(OPD_ENOENT, "aten::clone is not defined");
  opd_stack st;
  opd_stack_init(&st);
  opd_stack_push(&st, opd_iv_tensor_borrow(t));
  opd_stack_push(&st, opd_iv_none());
  int rc = opd_call_boxed(clone, &st);
  if (rc == 0 && (st.size != 1 || st.items[0].tag != OPD_IV_TENSOR))
    rc = opd_error(OPD_EINTERNAL, "aten::clone returned no tensor");
  if (rc) {
    char msg[300];
    snprintf(msg, sizeof msg, "%s", opd_last_error());
    opd_stack_destroy(&st);
    return opd_error(rc, "argument '%s': copying the literal tensor: %s", sa->name, msg);
  }
  opd_tensor_retain(st.items[0].u.t);
  *out = opd_iv_tensor_steal(st.items[0].u.t);
  opd_stack_destroy(&st);
  return 0;
}

/* A constant argument, converted to what the schema's type takes. */
static int constant_arg(const opd_argument *sa, const opd_ivalue *in, opd__garg *out) {
  const opd_type *t = &sa->type;
  int rc = 0;
  if (!t->is_list && t->kind == OPD_TYPE_TENSOR && opd_iv_is_scalar(in)) {
    out->kind = OPD__GA_WRAPPED;
    out->value = *in;
    return 0;
  }
  out->kind = OPD__GA_CONST;
  if (!t->is_list && t->kind == OPD_TYPE_FLOAT && in->tag == OPD_IV_INT) {
    out->value = opd_iv_double((double)in->u.i);
  } else if (t->is_list && in->tag == OPD_IV_INT) { /* int[N] from one int */
    int64_t rep[OPD_SCHEMA_MAX_FIXED_SIZE];
    for (int i = 0; i < t->fixed_size; i++) rep[i] = in->u.i;
    rc = opd_iv_make_int_list(&out->value, rep, (size_t)t->fixed_size);
  } else if (in->tag == OPD_IV_TENSOR) {
    /* the graph's own copy: the caller may write its tensor later, and a compiled graph's
     * constants are read-only ([Note: A compiled graph's memory never reaches a caller] in
     * outputs.c) */
    rc = copy_literal(sa, in->u.t, &out->value);
  } else {
    rc = opd_iv_copy(&out->value, in);
  }
  if (rc == 0 && out->value.tag == OPD_IV_TENSOR) {
    opd_tensor *c = out->value.u.t;
    rc = opd_tensor_empty_strided(opd_tensor_sizes(c), opd_tensor_strides(c), c->ndim,
                                  opd_tensor_dtype(c), (opd_device){OPD_DEVICE_META, -1},
                                  &out->meta);
  }
  if (rc == 0 && (out->value.tag == OPD_IV_TENSOR_LIST || out->value.tag == OPD_IV_OPT_TENSOR_LIST))
    rc = opd_error(OPD_EINVAL, "argument '%s': a constant tensor list; refer to values instead",
                   sa->name);
  return rc;
}

/* One argument of a node. `where` names the node and the argument. */
static int build_arg(opd_graph *g, uint32_t self, const char *label, const opd_argument *sa,
                     const opd_graph_arg *ga, opd__garg *out, uint64_t *bytes) {
  char where[300];
  snprintf(where, sizeof where, "%s, argument '%s',", label, sa->name);
  const opd_type *t = &sa->type;
  bool tensor_list = t->is_list && t->kind == OPD_TYPE_TENSOR && !t->elem_optional;
  int rc = 0;
  switch (ga ? ga->kind : OPD_GRAPH_ARG_DEFAULT) {
  case OPD_GRAPH_ARG_DEFAULT:
    if (!sa->has_default)
      return opd_error(OPD_EINVAL, "%s is missing value for %sargument '%s'", label,
                       sa->kwarg_only ? "keyword-only " : "", sa->name);
    out->kind = OPD__GA_CONST;
    return opd_iv_copy(&out->value, &sa->default_value);
  case OPD_GRAPH_ARG_VALUE:
    if ((rc = opd_graph_check_value(sa, &ga->value))) {
      char msg[300];
      snprintf(msg, sizeof msg, "%s", opd_last_error());
      return opd_error(rc, "%s: %s", label, msg);
    }
    *bytes += value_bytes(&ga->value);
    return constant_arg(sa, &ga->value, out);
  case OPD_GRAPH_ARG_REF:
    if (!t->is_list && t->kind == OPD_TYPE_TENSOR) {
      out->kind = OPD__GA_REF;
      return resolve(g, self, ga->ref, where, &out->ref);
    }
    if (tensor_list && ga->ref.output == OPD_GRAPH_ALL_OUTPUTS) {
      uint32_t first;
      if ((rc = resolve(g, self, (opd_graph_ref){ga->ref.position, 0}, where, &first))) return rc;
      uint32_t n =
          ga->ref.position < g->ninputs ? 1 : g->nodes[ga->ref.position - g->ninputs].nouts;
      out->kind = OPD__GA_REFS;
      if (!(out->refs = opd__malloc((n ? n : 1) * sizeof *out->refs)))
        return opd_error(OPD_ENOMEM, "out of memory for a Tensor[] argument");
      for (uint32_t i = 0; i < n; i++) out->refs[i] = first + i;
      out->nrefs = n;
      *bytes += 4 * (uint64_t)n;
      return 0;
    }
    break;
  case OPD_GRAPH_ARG_REFS:
    if (!tensor_list) break;
    *bytes += 4 * (uint64_t)ga->nrefs;
    if (*bytes > g->limits.max_arg_bytes) return 0; /* reported by the caller */
    out->kind = OPD__GA_REFS;
    if (!(out->refs = opd__malloc((ga->nrefs ? ga->nrefs : 1) * sizeof *out->refs)))
      return opd_error(OPD_ENOMEM, "out of memory for a Tensor[] argument");
    out->nrefs = ga->nrefs;
    for (uint32_t i = 0; i < ga->nrefs && rc == 0; i++) {
      char elem[340];
      snprintf(elem, sizeof elem, "%s element %u", where, i);
      rc = resolve(g, self, ga->refs[i], elem, &out->refs[i]);
    }
    return rc;
  default: return opd_error(OPD_EINVAL, "%s: argument kind %d is not valid", where, (int)ga->kind);
  }
  char tn[64];
  snprintf(tn, sizeof tn, "%s%s", opd_type_kind_name((opd_type_kind)t->kind),
           t->is_list ? "[]" : "");
  return opd_error(OPD_EINVAL, "%s of type '%s', cannot be a reference%s", where, tn,
                   ga->kind == OPD_GRAPH_ARG_REF && tensor_list
                       ? " to one tensor (give a list of references)"
                       : "");
}

/* Gives every wrapped number the dtype of the 0-d tensor PyTorch would make of it in this
 * call (the result type of the call's tensors and that number) and its Meta twin. A number
 * that dtype cannot hold (1e308 for float32) is refused here, naming the node and the
 * argument, as the fill that makes its tensor when the graph is lowered would refuse it. */
static int wrap_numbers(opd_graph *g, const char *label, const opd_schema *schema, opd__garg *args,
                        uint32_t nargs) {
  opd_result_type_state st = opd_result_type_init();
  bool any_tensor = false;
  for (uint32_t i = 0; i < nargs; i++) {
    const opd__garg *a = &args[i];
    if (a->kind == OPD__GA_REF) {
      opd_result_type_add_tensor(&st, opd__gvalue_dtype(g, a->ref), opd__gvalue_ndim(g, a->ref));
      any_tensor = true;
    } else if (a->kind == OPD__GA_REFS) {
      for (uint32_t j = 0; j < a->nrefs; j++)
        opd_result_type_add_tensor(&st, opd__gvalue_dtype(g, a->refs[j]),
                                   opd__gvalue_ndim(g, a->refs[j]));
      any_tensor = any_tensor || a->nrefs;
    } else if (a->kind == OPD__GA_CONST && a->value.tag == OPD_IV_TENSOR) {
      opd_result_type_add_tensor(&st, opd_tensor_dtype(a->value.u.t), a->value.u.t->ndim);
      any_tensor = true;
    }
  }
  for (uint32_t i = 0; i < nargs; i++) {
    opd__garg *a = &args[i];
    if (a->kind != OPD__GA_WRAPPED) continue;
    opd_dtype kind = a->value.tag == OPD_IV_DOUBLE ? OPD_FLOAT64
                     : a->value.tag == OPD_IV_INT  ? OPD_INT64
                                                   : OPD_BOOL;
    opd_dtype dt = kind == OPD_FLOAT64 ? OPD_DEFAULT_DTYPE : kind;
    if (any_tensor) {
      opd_result_type_state s = st;
      opd_result_type_add_scalar(&s, kind);
      dt = opd_result_type(&s);
    }
    opd__value converted;
    if (opd__scalar_to(opd_iv_to_scalar(&a->value), dt, &converted)) {
      char msg[200];
      snprintf(msg, sizeof msg, "%s", opd_last_error());
      return opd_error(OPD_EINVAL, "%s, argument '%s': a number for a %s tensor: %s", label,
                       schema->args[i].name, opd_dtype_name(dt), msg);
    }
    a->wrapped_dtype = (int8_t)dt;
    int rc = opd_tensor_empty(NULL, 0, dt, (opd_device){OPD_DEVICE_META, -1}, &a->meta);
    if (rc) return rc;
  }
  return 0;
}

/* The device a node's outputs live on: its Device argument's when it has one (not None),
 * else its first tensor argument's, else the CPU. [Note: The device of a node's outputs]
 * The operators with a Device argument are the factories and _to_copy, whose result is on
 * that device whatever their tensor argument's: `_to_copy(x, device=cuda)` of a CPU x is a
 * CUDA tensor. Taking x's device instead would record it as a CPU value, and the pointwise
 * nodes after it would be fused into a CPU program reading CUDA memory on the host (and the
 * other way round, a CUDA program reading host memory on the device). */
static opd_device node_device(const opd_graph *g, const opd__garg *args, uint32_t nargs) {
  for (uint32_t i = 0; i < nargs; i++)
    if (args[i].kind == OPD__GA_CONST && args[i].value.tag == OPD_IV_DEVICE)
      return args[i].value.u.device;
  for (uint32_t i = 0; i < nargs; i++) {
    if (args[i].kind == OPD__GA_REF) return g->values[args[i].ref].device;
    if (args[i].kind == OPD__GA_REFS && args[i].nrefs) return g->values[args[i].refs[0]].device;
  }
  return (opd_device){OPD_DEVICE_CPU, -1};
}

/* The root of a result: the root of the value whose storage it shares; `aliases` says
 * whether it shares any argument's (a value's or a constant's). */
static uint32_t result_root(const opd_graph *g, const opd__garg *args, uint32_t nargs,
                            const opd_tensor *t, uint32_t self, bool *aliases) {
  *aliases = false;
  for (uint32_t i = 0; i < nargs; i++) {
    const opd__garg *a = &args[i];
    if (a->kind == OPD__GA_REF && opd_tensor_shares_storage(t, g->values[a->ref].meta)) {
      *aliases = true;
      return g->values[a->ref].root;
    }
    for (uint32_t j = 0; a->kind == OPD__GA_REFS && j < a->nrefs; j++)
      if (opd_tensor_shares_storage(t, g->values[a->refs[j]].meta)) {
        *aliases = true;
        return g->values[a->refs[j]].root;
      }
    if (a->kind == OPD__GA_CONST && a->meta && opd_tensor_shares_storage(t, a->meta))
      *aliases = true;
  }
  return self;
}

/* Whether any argument of the schema is written (`Tensor(a!)`): graphs are functional. */
static const opd_argument *written_arg(const opd_schema *s) {
  for (uint32_t i = 0; i < s->num_args; i++)
    if (s->args[i].alias.is_write) return &s->args[i];
  return NULL;
}

/* Counts of the graph's nodes ([Note: Graph limits]): a node once per value it defines. */
static uint32_t node_count(const opd_graph *g) {
  return g->nvalues - g->ninputs;
}

int opd_graph_add_node(opd_graph *g, const char *name, const opd_graph_arg *args, uint32_t nargs) {
  int rc = check_open(g);
  if (rc) return rc;
  uint32_t n = g->nnodes, self = g->ninputs + n;
  if (node_count(g) >= g->limits.max_nodes)
    return opd_error(OPD_EINVAL, "graph node %u: more than max_nodes (%u) nodes in the graph", n,
                     g->limits.max_nodes);
  const opd_operator *op = name ? opd_find_schema(name) : NULL;
  if (!op) {
    char shown[130];
    size_t len = name ? strnlen(name, 120) : 0;
    opd_utf8_escape(shown, sizeof shown, name ? name : "", len);
    return opd_error(OPD_ENOENT, "graph node %u: unknown operator '%s%s'", n, shown,
                     name && name[len] ? "..." : "");
  }
  uint32_t opi;
  if ((rc = opd__graph_op_index(g, op, &opi))) return rc;
  const opd_schema *schema = g->ops[opi].schema;
  char label[160];
  snprintf(label, sizeof label, "graph node %u (%s)", n, g->ops[opi].name);
  const opd_argument *written = written_arg(schema);
  if (written)
    return opd_error(OPD_EINVAL,
                     "%s writes its argument '%s'; graph nodes must be functional (no in-place or "
                     "out= operators)",
                     label, written->name);
  if (nargs > schema->num_args)
    return opd_error(OPD_EINVAL, "%s expected at most %u argument(s) but received %u argument(s)",
                     label, schema->num_args, nargs);
  if ((rc = grow((void **)&g->nodes, &g->cap_nodes, n + 1, sizeof *g->nodes))) return rc;
  opd__garg *gargs = opd__calloc(schema->num_args ? schema->num_args : 1, sizeof *gargs);
  if (!gargs) return opd_error(OPD_ENOMEM, "out of memory for the arguments of %s", label);
  uint64_t bytes = 0;
  for (uint32_t i = 0; i < schema->num_args && rc == 0; i++)
    rc =
        build_arg(g, self, label, &schema->args[i], i < nargs ? &args[i] : NULL, &gargs[i], &bytes);
  if (rc == 0 &&
      (bytes > g->limits.max_arg_bytes || g->arg_bytes > g->limits.max_arg_bytes - bytes))
    rc = opd_error(OPD_EINVAL,
                   "%s: its constant arguments take the graph past max_arg_bytes (%llu bytes)",
                   label, (unsigned long long)g->limits.max_arg_bytes);
  if (rc == 0) rc = wrap_numbers(g, label, schema, gargs, schema->num_args);
  if (rc) {
    opd__gargs_destroy(gargs, schema->num_args);
    return rc;
  }
  g->nodes[n] = (opd__gnode){.opi = opi, .nargs = schema->num_args, .args = gargs, .group = -1};
  opd_tensor *res[OPD__MAX_NODE_OUTPUTS];
  uint32_t nres = 0;
  rc = opd__graph_infer(g, n, res, OPD__MAX_NODE_OUTPUTS, &nres);
  if (rc == 0 && nres > g->limits.max_nodes - node_count(g))
    rc = opd_error(OPD_EINVAL, "%s defines %u values, past max_nodes (%u) nodes in the graph",
                   label, nres, g->limits.max_nodes);
  if (rc == 0) rc = grow((void **)&g->values, &g->cap_values, g->nvalues + nres, sizeof *g->values);
  if (rc) {
    for (uint32_t i = 0; i < nres; i++) opd_tensor_release(res[i]);
    opd__gargs_destroy(gargs, schema->num_args);
    return rc;
  }
  opd__gnode *node = &g->nodes[n];
  node->first_out = g->nvalues;
  node->nouts = nres;
  opd_device device = node_device(g, gargs, node->nargs);
  bool all_alias = nres > 0;
  for (uint32_t i = 0; i < nres; i++) {
    uint32_t v = g->nvalues++;
    bool aliases;
    uint32_t root = result_root(g, gargs, node->nargs, res[i], v, &aliases);
    all_alias = all_alias && aliases;
    g->values[v] =
        (opd__gvalue){.node = n, .output = i, .root = root, .device = device, .meta = res[i]};
  }
  node->is_view = all_alias;
  g->nnodes++;
  g->arg_bytes += bytes;
  if ((rc = opd__gnode_add_uses(g, n))) return rc;
  return (int)self;
}

int opd_graph_num_outputs(const opd_graph *g, uint32_t position) {
  if (position < g->ninputs) return 1;
  if (position - g->ninputs >= g->nnodes)
    return opd_error(OPD_EINVAL, "graph: no position %u", position);
  return (int)g->nodes[position - g->ninputs].nouts;
}

int opd_graph_set_outputs(opd_graph *g, const opd_graph_ref *refs, uint32_t n) {
  int rc = check_open(g);
  if (rc) return rc;
  if (n > g->limits.max_outputs)
    return opd_error(OPD_EINVAL, "graph: %u outputs, more than max_outputs (%u)", n,
                     g->limits.max_outputs);
  uint32_t *outs = opd__malloc((n ? n : 1) * sizeof *outs);
  if (!outs) return opd_error(OPD_ENOMEM, "out of memory for a graph's outputs");
  for (uint32_t i = 0; i < n && rc == 0; i++) {
    char where[48];
    snprintf(where, sizeof where, "graph output %u", i);
    rc = resolve(g, g->ninputs + g->nnodes, refs[i], where, &outs[i]);
  }
  if (rc) {
    opd__free(outs);
    return rc;
  }
  for (uint32_t i = 0; i < n; i++) g->values[outs[i]].output_uses++;
  g->outputs = outs;
  g->noutputs = n;
  g->has_outputs = true;
  return 0;
}

int opd_graph_finish(opd_graph *g) {
  if (g->finished) return opd_error(OPD_EINVAL, "graph: already finished");
  if (!g->has_outputs) return opd_error(OPD_EINVAL, "graph: its outputs were never set");
  int rc = opd_graph_verify(g);
  if (rc) return rc;
  g->finished = true;
  return 0;
}

uint32_t opd_graph_num_inputs(const opd_graph *g) {
  return g->ninputs;
}

uint32_t opd_graph_num_nodes(const opd_graph *g) {
  uint32_t live = 0;
  for (uint32_t n = 0; n < g->nnodes; n++) live += !g->nodes[n].dead;
  return live;
}

/* pass_api.c: what a plugin pass may read and change in a graph (opd/graph_pass.h), on top
 * of the IR's own mutations (ir.c). Positions are translated to values and back, and every
 * change is checked, so a plugin cannot break the IR's invariants ([Note: The graph IR]). */
#include <string.h>

#include "passes/compile.h"
#include "opd/error.h"
#include "opd/graph_pass.h"

uint32_t opd_graph_node_slots(const opd_graph *g) {
  return g->nnodes;
}

int opd_graph_node_info_get(const opd_graph *g, uint32_t node, opd_graph_node_info *out) {
  if (node >= g->nnodes) return opd_error(OPD_EINVAL, "graph: no node %u", node);
  const opd__gnode *n = &g->nodes[node];
  *out = (opd_graph_node_info){opd__gnode_op(g, n)->name, opd__gnode_op(g, n)->schema->num_args,
                               n->nouts, !n->dead};
  return 0;
}

/* The position and output of value v. */
static opd_graph_ref ref_of_value(const opd_graph *g, uint32_t v) {
  const opd__gvalue *val = &g->values[v];
  if (val->node == OPD__NO_NODE) return (opd_graph_ref){v, 0};
  return (opd_graph_ref){g->ninputs + val->node, val->output};
}

/* The value a reference names (any live value). */
static int value_of_ref(const opd_graph *g, opd_graph_ref r, uint32_t *v) {
  if (r.position < g->ninputs && r.output == 0) {
    *v = r.position;
    return 0;
  }
  uint32_t n = r.position - g->ninputs;
  if (r.position < g->ninputs || n >= g->nnodes || g->nodes[n].dead ||
      r.output >= g->nodes[n].nouts)
    return opd_error(OPD_EINVAL, "graph: position %u output %u is not a live value", r.position,
                     r.output);
  *v = g->nodes[n].first_out + r.output;
  return 0;
}

int opd_graph_node_arg(const opd_graph *g, uint32_t node, uint32_t i, opd_graph_arg *out) {
  if (node >= g->nnodes || i >= g->nodes[node].nargs)
    return opd_error(OPD_EINVAL, "graph: no argument %u of node %u", i, node);
  const opd__garg *a = &g->nodes[node].args[i];
  switch ((opd__garg_kind)a->kind) {
  case OPD__GA_REF:
    *out = (opd_graph_arg){.kind = OPD_GRAPH_ARG_REF, .ref = ref_of_value(g, a->ref)};
    break;
  case OPD__GA_REFS: *out = (opd_graph_arg){.kind = OPD_GRAPH_ARG_REFS, .nrefs = a->nrefs}; break;
  default: *out = (opd_graph_arg){.kind = OPD_GRAPH_ARG_VALUE, .value = a->value}; break;
  }
  return 0;
}

int opd_graph_node_arg_element(const opd_graph *g, uint32_t node, uint32_t i, uint32_t j,
                               opd_graph_ref *out) {
  if (node >= g->nnodes || i >= g->nodes[node].nargs ||
      g->nodes[node].args[i].kind != OPD__GA_REFS || j >= g->nodes[node].args[i].nrefs)
    return opd_error(OPD_EINVAL, "graph: no element %u of argument %u of node %u", j, i, node);
  *out = ref_of_value(g, g->nodes[node].args[i].refs[j]);
  return 0;
}

int opd_graph_replace_uses(opd_graph *g, opd_graph_ref from, opd_graph_ref to) {
  uint32_t f = 0, t = 0;
  int rc = value_of_ref(g, from, &f);
  if (rc || (rc = value_of_ref(g, to, &t))) return rc;
  const opd_tensor *a = g->values[f].meta, *b = g->values[t].meta;
  if (a->dtype != b->dtype || a->ndim != b->ndim ||
      memcmp(opd_tensor_sizes(a), opd_tensor_sizes(b), a->ndim * sizeof(int64_t)))
    return opd_error(OPD_EINVAL,
                     "graph: a value can only be replaced by one of its dtype and shape");
  for (uint32_t i = 0; i < g->values[f].nusers; i++)
    if (t >= g->nodes[g->values[f].users[i]].first_out)
      return opd_error(OPD_EINVAL, "graph: the replacement is not defined before node %u uses it",
                       g->values[f].users[i]);
  if ((rc = opd__graph_replace_uses(g, f, t))) return rc;
  opd__graph_reroot(g, f, t);
  return 0;
}

int opd_graph_remove_node(opd_graph *g, uint32_t node) {
  if (node >= g->nnodes || g->nodes[node].dead)
    return opd_error(OPD_EINVAL, "graph: no live node %u", node);
  const opd__gnode *n = &g->nodes[node];
  for (uint32_t o = 0; o < n->nouts; o++)
    if (opd__gvalue_num_users(g, n->first_out + o))
      return opd_error(OPD_EINVAL, "graph: node %u is still used", node);
  opd__graph_erase_node(g, node);
  return 0;
}

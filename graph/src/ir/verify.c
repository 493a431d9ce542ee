/* verify.c: the graph verifier (opd_graph_verify), run when a graph is finished and after
 * every pass when the options ask ([Note: The pass pipeline] in pass_manager.c). It checks
 * the invariants of [Note: The graph IR]: every live node has one argument per schema
 * argument, of that argument's kind and type; references point to earlier values of live
 * nodes; each value's users list holds exactly the live nodes that reference it; the
 * outputs name live values, counted in output_uses; and each node, run again through its
 * Meta kernel, gives the dtypes and sizes its values record (strides may differ after a
 * rewrite: only values are promised). */
#include <stdio.h>
#include <string.h>

#include "ir/graph_internal.h"
#include "opd/error.h"
#include "opd/memory.h"

/* `what` may be opd_last_error() itself: copied before the message is written. */
static int broken(const opd_graph *g, uint32_t n, const char *what) {
  char label[160], text[400];
  snprintf(text, sizeof text, "%s", what);
  if (n == OPD__NO_NODE) return opd_error(OPD_EINTERNAL, "graph verifier: %s", text);
  return opd_error(OPD_EINTERNAL, "graph verifier: %s: %s",
                   opd__gnode_label(g, n, label, sizeof label), text);
}

/* A reference from node n to value v is to an earlier, live value. */
static bool ref_ok(const opd_graph *g, uint32_t n, uint32_t v) {
  if (v >= g->nvalues || v >= g->nodes[n].first_out) return false;
  const opd__gnode *def = opd__gvalue_node(g, v);
  return !def || (!def->dead && g->values[v].node < n);
}

static int check_args(const opd_graph *g, uint32_t n) {
  const opd__gnode *node = &g->nodes[n];
  const opd_schema *s = opd__gnode_op(g, node)->schema;
  if (node->nargs != s->num_args) return broken(g, n, "its argument count is not its schema's");
  for (uint32_t i = 0; i < node->nargs; i++) {
    const opd__garg *a = &node->args[i];
    const opd_type *t = &s->args[i].type;
    bool tensor = !t->is_list && t->kind == OPD_TYPE_TENSOR;
    bool tensors = t->is_list && t->kind == OPD_TYPE_TENSOR;
    switch ((opd__garg_kind)a->kind) {
    case OPD__GA_CONST:
      if (opd_graph_check_value(&s->args[i], &a->value)) return broken(g, n, opd_last_error());
      if (a->value.tag == OPD_IV_TENSOR && !a->meta)
        return broken(g, n, "a constant tensor has no Meta twin");
      break;
    case OPD__GA_WRAPPED:
      if (!tensor || !opd_iv_is_scalar(&a->value) || !a->meta)
        return broken(g, n, "a wrapped number stands for something other than a Tensor");
      break;
    case OPD__GA_REF:
      if (!tensor) return broken(g, n, "a reference for an argument that is not a Tensor");
      if (!ref_ok(g, n, a->ref)) return broken(g, n, "a reference to a later or removed value");
      break;
    case OPD__GA_REFS:
      if (!tensors) return broken(g, n, "a reference list for an argument that is not a Tensor[]");
      for (uint32_t j = 0; j < a->nrefs; j++)
        if (!ref_ok(g, n, a->refs[j]))
          return broken(g, n, "a reference list to a later or removed value");
      break;
    default: return broken(g, n, "an argument of no known kind");
    }
  }
  return 0;
}

static int check_users(const opd_graph *g) {
  for (uint32_t v = 0; v < g->nvalues; v++) {
    const opd__gvalue *val = &g->values[v];
    const opd__gnode *def = opd__gvalue_node(g, v);
    if (def && def->dead && (val->nusers || val->output_uses))
      return broken(g, val->node, "a removed node's value still has users");
    for (uint32_t i = 0; i < val->nusers; i++) {
      uint32_t u = val->users[i];
      if (u >= g->nnodes || g->nodes[u].dead || !opd__gnode_uses(g, &g->nodes[u], v))
        return broken(g, u < g->nnodes ? u : OPD__NO_NODE,
                      "a users list names a node that does not use the value");
      for (uint32_t j = 0; j < i; j++)
        if (val->users[j] == u) return broken(g, u, "a users list names a node twice");
    }
  }
  for (uint32_t n = 0; n < g->nnodes; n++) {
    const opd__gnode *node = &g->nodes[n];
    if (node->dead) continue;
    opd__ref_iter it = {node, 0, 0};
    uint32_t v;
    while (opd__next_ref(&it, &v)) {
      const opd__gvalue *val = &g->values[v];
      bool listed = false;
      for (uint32_t k = 0; k < val->nusers && !listed; k++) listed = val->users[k] == n;
      if (!listed) return broken(g, n, "a value it uses does not list it as a user");
    }
  }
  return 0;
}

static int check_outputs(const opd_graph *g) {
  uint32_t *uses = opd__calloc(g->nvalues ? g->nvalues : 1, sizeof *uses);
  if (!uses) return opd_error(OPD_ENOMEM, "out of memory verifying a graph");
  int rc = 0;
  for (uint32_t i = 0; i < g->noutputs && rc == 0; i++) {
    uint32_t v = g->outputs[i];
    const opd__gnode *def = v < g->nvalues ? opd__gvalue_node(g, v) : NULL;
    if (v >= g->nvalues || (def && def->dead))
      rc = broken(g, OPD__NO_NODE, "an output names a removed or unknown value");
    else
      uses[v]++;
  }
  for (uint32_t v = 0; v < g->nvalues && rc == 0; v++)
    if (uses[v] != g->values[v].output_uses)
      rc = broken(g, OPD__NO_NODE, "a value's output count does not match the outputs");
  opd__free(uses);
  return rc;
}

static int check_inference(const opd_graph *g, uint32_t n) {
  const opd__gnode *node = &g->nodes[n];
  opd_tensor *res[64];
  uint32_t nres = 0;
  if (node->nouts > 64) return 0; /* long lists: inferred when built */
  int rc = opd__graph_infer(g, n, res, 64, &nres);
  if (rc == OPD_ENOMEM || rc == OPD_ERESOURCE) return rc; /* no memory is no broken invariant */
  if (rc) {
    char msg[400];
    snprintf(msg, sizeof msg, "inference fails again: %s", opd_last_error());
    return broken(g, OPD__NO_NODE, msg);
  }
  if (nres != node->nouts) rc = broken(g, n, "it now infers another number of outputs");
  for (uint32_t i = 0; i < nres && rc == 0; i++) {
    const opd_tensor *want = g->values[node->first_out + i].meta, *got = res[i];
    if (want->dtype != got->dtype || want->ndim != got->ndim ||
        memcmp(opd_tensor_sizes(want), opd_tensor_sizes(got), want->ndim * sizeof(int64_t)))
      rc = broken(g, n, "an output's dtype or shape is not what its Meta kernel infers");
  }
  for (uint32_t i = 0; i < nres; i++) opd_tensor_release(res[i]);
  return rc;
}

int opd_graph_verify(const opd_graph *g) {
  for (uint32_t v = 0; v < g->nvalues; v++) {
    const opd__gvalue *val = &g->values[v];
    if (!val->meta) return broken(g, OPD__NO_NODE, "a value without metadata");
    if (val->node == OPD__NO_NODE
            ? v >= g->ninputs
            : val->node >= g->nnodes || g->nodes[val->node].first_out + val->output != v)
      return broken(g, OPD__NO_NODE, "a value whose defining node does not define it");
    if (val->root > v || g->values[val->root].root != val->root)
      return broken(g, OPD__NO_NODE, "a value whose storage root is not a root before it");
  }
  for (uint32_t n = 0; n < g->nnodes; n++) {
    if (g->nodes[n].dead) continue;
    int rc = check_args(g, n);
    if (rc) return rc;
  }
  int rc = check_users(g);
  if (rc == 0) rc = check_outputs(g);
  for (uint32_t n = 0; n < g->nnodes && rc == 0; n++)
    if (!g->nodes[n].dead) rc = check_inference(g, n);
  return rc;
}

/* pass_noops.c: no-op removal ([Note: The pass pipeline] in pass_manager.c).
 *
 * [Note: No-op removal]
 * A node whose value equals one of its inputs, with the same metadata (dtype, sizes,
 * strides, storage offset, device: Inductor's same_meta), is replaced by that input:
 *   - copies: clone, contiguous, _to_copy that changes nothing;
 *   - views whose geometry is that of a value they (transitively) view: a view or expand to
 *     the same shape, t of t, a permute undone by another, a view back to the original;
 *   - arithmetic identities with a wrapped number: x * 1, 1 * x, x + 0, x - 0, x / 1,
 *     pow(x, 1) (the Scalar overloads too).
 * As in PyTorch's remove_noop_ops, a removal must not create aliasing between the graph's
 * inputs and outputs (torch/_inductor/fx_passes/README.md: `return x.clone()` stays a
 * copy): a node that owns its storage, when that storage reaches an output, is kept if
 * its input's storage is an input's or another output's; a view that is itself an output
 * is kept if its input is an input or an output. Values that shared the removed node's
 * storage now share its input's (their roots move). Hits: nodes removed.
 */
#include "passes/compile.h"

/* A wrapped number (or an int / float constant) equal to `want`. */
static bool number_is(const opd__gnode *n, uint32_t i, double want) {
  double v;
  return i < n->nargs && n->args[i].kind != OPD__GA_REF && opd__garg_number(&n->args[i], &v) &&
         v == want && n->args[i].value.tag != OPD_IV_BOOL;
}

static uint32_t ref_of(const opd__gnode *n, uint32_t i) {
  return opd__garg_is_ref(n, i) ? n->args[i].ref : UINT32_MAX;
}

/* _to_copy(x) with every option None (or the same dtype): a plain copy. */
static bool plain_copy(const opd_graph *g, const opd__gnode *n) {
  for (uint32_t i = 1; i < n->nargs; i++) {
    const opd_ivalue *v = &n->args[i].value;
    const char *name = opd__gnode_op(g, n)->schema->args[i].name;
    if (n->args[i].kind != OPD__GA_CONST) return false;
    if (v->tag == OPD_IV_NONE || (v->tag == OPD_IV_BOOL && strcmp(name, "non_blocking") == 0))
      continue;
    if (v->tag == OPD_IV_DTYPE && v->u.dtype == opd__gvalue_dtype(g, n->args[0].ref)) continue;
    return false;
  }
  return true;
}

/* The value node n equals, or UINT32_MAX. */
static uint32_t noop_source(const opd_graph *g, const opd__gnode *n) {
  if (n->nouts != 1) return UINT32_MAX;
  uint32_t out = n->first_out, a = ref_of(n, 0), b = ref_of(n, 1);
  if (opd__gnode_is(g, n, "aten::clone") || opd__gnode_is(g, n, "aten::contiguous")) return a;
  if (opd__gnode_is(g, n, "aten::_to_copy"))
    return a != UINT32_MAX && plain_copy(g, n) ? a : UINT32_MAX;
  if (n->is_view) {
    for (uint32_t v = a; v != UINT32_MAX;) {
      if (opd__gvalue_same_meta(g, out, v)) return v;
      const opd__gnode *def = opd__gvalue_node(g, v);
      v = def && def->is_view && def->nouts == 1 ? ref_of(def, 0) : UINT32_MAX;
    }
    return UINT32_MAX;
  }
  if (opd__gnode_is(g, n, "aten::mul.Tensor"))
    return number_is(n, 1, 1) ? a : number_is(n, 0, 1) ? b : UINT32_MAX;
  if (opd__gnode_is(g, n, "aten::mul.Scalar") || opd__gnode_is(g, n, "aten::div.Tensor"))
    return number_is(n, 1, 1) ? a : UINT32_MAX;
  if (opd__gnode_is(g, n, "aten::add.Tensor") || opd__gnode_is(g, n, "aten::sub.Tensor") ||
      opd__gnode_is(g, n, "aten::add.Scalar"))
    return number_is(n, 1, 0) ? a : UINT32_MAX;
  if (opd__gnode_is(g, n, "aten::pow.Tensor_Scalar")) return number_is(n, 1, 1) ? a : UINT32_MAX;
  return UINT32_MAX;
}

static bool root_is_output(const opd_graph *g, uint32_t root) {
  for (uint32_t i = 0; i < g->noutputs; i++)
    if (g->values[g->outputs[i]].root == root) return true;
  return false;
}

/* [Note: No-op removal]: no new aliasing between inputs and outputs. */
static bool removal_aliases(const opd_graph *g, uint32_t out, uint32_t src) {
  uint32_t node_root = g->values[out].root, src_root = g->values[src].root;
  if (node_root != src_root)
    return root_is_output(g, node_root) &&
           (opd__gvalue_is_input(g, src_root) || root_is_output(g, src_root));
  return g->values[out].output_uses && (opd__gvalue_is_input(g, src) || g->values[src].output_uses);
}

void opd__graph_reroot(opd_graph *g, uint32_t from, uint32_t to) {
  uint32_t root = g->values[to].root;
  for (uint32_t v = 0; v < g->nvalues; v++)
    if (g->values[v].root == from) g->values[v].root = root;
}

int opd__pass_remove_noops(opd__compile *c, uint64_t *hits) {
  opd_graph *g = c->g;
  for (uint32_t n = 0; n < g->nnodes; n++) {
    opd__gnode *node = &g->nodes[n];
    if (node->dead) continue;
    uint32_t src = noop_source(g, node), out = node->first_out;
    if (src == UINT32_MAX || !opd__gvalue_same_meta(g, out, src) || removal_aliases(g, out, src))
      continue;
    int rc = opd__graph_replace_uses(g, out, src);
    if (rc) return rc;
    opd__graph_reroot(g, out, src);
    opd__graph_erase_node(g, n);
    (*hits)++;
  }
  return 0;
}

/* pass_softmax.c: the softmax pattern ([Note: The pass pipeline] in pass_manager.c).
 *
 * [Note: The softmax pattern]
 * As tests/fixtures/graphs/FORMAT.md defines it, and checked exactly:
 *   d = div.Tensor(e, s)       with e = exp(x), s = sum.dim_IntList(e, dim, keepdim, dtype)
 *   - d's `self` is e and its `other` is s;
 *   - e has exactly two users, s and d (a graph output counts as a user), s exactly one, d;
 *   - s sums e over one dimension, written [-1] or [last dim], with keepdim=True and
 *     dtype=None;
 *   - x, e and d have one floating dtype, e has at least one dimension.
 * Its safe form has x = sub.Tensor(z, m) with alpha 1, m = amax(z, [-1] or [last dim],
 * keepdim=True), z of x's dtype, and x used only by e: then z is the softmax's input and
 * sub and amax are folded in as well. d becomes aten::_softmax(input, -1, False) in place
 * (one kernel that reads each row once: kernels/cpu/softmax.c), and the nodes it replaced
 * are removed when nothing else uses them (amax may be). Anything else, the negatives of
 * the fixtures included (exp used elsewhere, a sum over another dimension or without
 * keepdim, of another tensor, no division), is left alone. The max-subtracting kernel
 * agrees with exp / sum(exp) wherever exp does not overflow; past exp's range it is finite
 * where the pattern as written gives NaN (the graph notes on softmax), the one change
 * of values this pass makes. Hits: patterns replaced.
 */
#include "passes/compile.h"
#include "opd/error.h"
#include "opd/memory.h"

/* Argument i is a one-element int list naming the last of ndim dimensions. */
static bool last_dim(const opd__gnode *n, uint32_t i, int ndim) {
  const int64_t *dims;
  uint32_t len;
  return i < n->nargs && opd__garg_int_list(&n->args[i], &dims, &len) && len == 1 &&
         (dims[0] == -1 || dims[0] == ndim - 1);
}

static bool is_true(const opd__gnode *n, uint32_t i) {
  bool b;
  return i < n->nargs && opd__garg_bool(&n->args[i], &b) && b;
}

static bool is_none(const opd__gnode *n, uint32_t i) {
  return i < n->nargs && n->args[i].kind == OPD__GA_CONST && n->args[i].value.tag == OPD_IV_NONE;
}

/* The node defining v, if it is a live call of `op` with one output. */
static const opd__gnode *def_of(const opd_graph *g, uint32_t v, const char *op) {
  const opd__gnode *d = opd__gvalue_node(g, v);
  return d && d->nouts == 1 && opd__gnode_is(g, d, op) && opd__garg_is_ref(d, 0) ? d : NULL;
}

/* Exactly the users `a` (and `b`, when not UINT32_MAX), and no output. */
static bool used_only_by(const opd_graph *g, uint32_t v, uint32_t a, uint32_t b) {
  const opd__gvalue *val = &g->values[v];
  if (val->output_uses) return false;
  if (b == UINT32_MAX) return val->nusers == 1 && val->users[0] == a;
  return val->nusers == 2 &&
         ((val->users[0] == a && val->users[1] == b) || (val->users[0] == b && val->users[1] == a));
}

static bool alpha_is_one(const opd__gnode *n) {
  double v;
  return n->nargs == 3 && opd__garg_number(&n->args[2], &v) && v == 1 &&
         n->args[2].value.tag != OPD_IV_BOOL;
}

/* The safe form's z for x, or x itself. */
static uint32_t safe_input(const opd_graph *g, uint32_t x, uint32_t exp_node) {
  const opd__gnode *sub = def_of(g, x, "aten::sub.Tensor");
  if (!sub || !opd__garg_is_ref(sub, 1) || !alpha_is_one(sub) ||
      !used_only_by(g, x, exp_node, UINT32_MAX))
    return x;
  uint32_t z = sub->args[0].ref, m = sub->args[1].ref;
  const opd__gnode *amax = def_of(g, m, "aten::amax");
  int ndim = opd__gvalue_ndim(g, z);
  if (!amax || amax->args[0].ref != z || !last_dim(amax, 1, ndim) || !is_true(amax, 2) ||
      opd__gvalue_dtype(g, z) != opd__gvalue_dtype(g, x))
    return x;
  return z;
}

/* Removes the node defining v (and then its inputs') when nothing uses it any more. */
static void erase_if_unused(opd_graph *g, uint32_t v) {
  opd__gnode *d = opd__gvalue_node(g, v);
  if (!d || d->dead || d->nouts != 1 || opd__gvalue_num_users(g, v)) return;
  uint32_t n = g->values[v].node, in[2] = {UINT32_MAX, UINT32_MAX};
  for (uint32_t i = 0; i < 2 && i < d->nargs; i++)
    if (opd__garg_is_ref(d, i)) in[i] = d->args[i].ref;
  opd__graph_erase_node(g, n);
  for (uint32_t i = 0; i < 2; i++)
    if (in[i] != UINT32_MAX) erase_if_unused(g, in[i]);
}

/* Matches the pattern at div node n: the softmax input, or UINT32_MAX. */
/* *sum_out: the sum, from which the replaced nodes are removed. */
static uint32_t match(const opd_graph *g, uint32_t n, uint32_t *sum_out) {
  const opd__gnode *div = &g->nodes[n];
  if (div->nouts != 1 || !opd__gnode_is(g, div, "aten::div.Tensor") || !opd__garg_is_ref(div, 0) ||
      !opd__garg_is_ref(div, 1))
    return UINT32_MAX;
  uint32_t e = div->args[0].ref, s = div->args[1].ref;
  const opd__gnode *exp = def_of(g, e, "aten::exp"), *sum = def_of(g, s, "aten::sum.dim_IntList");
  if (!exp || !sum || sum->args[0].ref != e) return UINT32_MAX;
  uint32_t exp_node = g->values[e].node, sum_node = g->values[s].node, x = exp->args[0].ref;
  int ndim = opd__gvalue_ndim(g, e);
  opd_dtype dt = opd__gvalue_dtype(g, e);
  if (ndim < 1 || !opd_dtype_is_floating(dt) || opd__gvalue_dtype(g, x) != dt ||
      opd__gvalue_dtype(g, div->first_out) != dt || !last_dim(sum, 1, ndim) || !is_true(sum, 2) ||
      !is_none(sum, 3) || !used_only_by(g, e, sum_node, n) || !used_only_by(g, s, n, UINT32_MAX))
    return UINT32_MAX;
  *sum_out = s;
  return safe_input(g, x, exp_node);
}

int opd__pass_softmax(opd__compile *c, uint64_t *hits) {
  opd_graph *g = c->g;
  const opd_operator *softmax = opd__graph_find_op("aten::_softmax");
  if (!softmax) return 0;
  for (uint32_t n = 0; n < g->nnodes; n++) {
    if (g->nodes[n].dead) continue;
    uint32_t sum = 0, input = match(g, n, &sum);
    if (input == UINT32_MAX) continue;
    opd__garg *args = opd__calloc(3, sizeof *args);
    if (!args) return opd_error(OPD_ENOMEM, "out of memory replacing a softmax pattern");
    args[0] = (opd__garg){.kind = OPD__GA_REF, .ref = input};
    args[1] = (opd__garg){.kind = OPD__GA_CONST, .value = opd_iv_int(-1)};
    args[2] = (opd__garg){.kind = OPD__GA_CONST, .value = opd_iv_bool(false)};
    int rc = opd__graph_rewrite_node(g, n, softmax, args, 3, OPD__ORIGIN_SOFTMAX);
    if (rc) return rc;
    erase_if_unused(g, sum);
    (*hits)++;
    c->softmax_patterns++;
  }
  return 0;
}

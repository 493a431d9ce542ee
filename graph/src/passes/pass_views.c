/* pass_views.c: view canonicalisation ([Note: The pass pipeline] in pass_manager.c).
 *
 * [Note: View canonicalisation]
 * Traced graphs spell one reshape several ways: view, _unsafe_view, _reshape_alias (reshape
 * that could view), reshape, unsqueeze, squeeze.dim, and chains of them (view of a view of
 * an addmm). A node of these operators that views its input becomes aten::view(base,
 * sizes), where base is the input with the views chained before it skipped, whenever that
 * view gives exactly the node's geometry (sizes, strides and storage offset, checked by
 * running aten::view's Meta kernel): later passes see one form (a view to the same shape is
 * then a no-op, remove_noops) and the skipped views lose users (dce). Hits: nodes rewritten.
 */
#include <string.h>

#include "passes/compile.h"
#include "opd/error.h"
#include "opd/memory.h"

static const char *const reshape_like[] = {"aten::view",           "aten::_unsafe_view",
                                           "aten::_reshape_alias", "aten::reshape",
                                           "aten::unsqueeze",      "aten::squeeze.dim"};

static bool is_reshape_like(const opd_graph *g, const opd__gnode *n) {
  for (size_t i = 0; i < sizeof reshape_like / sizeof *reshape_like; i++)
    if (opd__gnode_is(g, n, reshape_like[i])) return true;
  return false;
}

/* aten::view(base, sizes of want) on Meta gives want's geometry exactly. */
static bool view_gives(const opd_operator *view_op, opd_tensor *base, const opd_tensor *want) {
  opd_stack st;
  opd_stack_init(&st);
  opd_ivalue size;
  if (opd_iv_make_int_list(&size, opd_tensor_sizes(want), want->ndim)) return false;
  opd_stack_push(&st, opd_iv_tensor_borrow(base));
  opd_stack_push(&st, size);
  bool same = false;
  if (opd_call_boxed(view_op, &st) == 0 && st.size == 1 && st.items[0].tag == OPD_IV_TENSOR) {
    const opd_tensor *got = st.items[0].u.t;
    same = opd_tensor_shares_storage(got, want) && got->ndim == want->ndim &&
           got->storage_offset == want->storage_offset &&
           memcmp(got->dims, want->dims, 2 * (size_t)want->ndim * sizeof *got->dims) == 0;
  }
  opd_stack_destroy(&st);
  opd_clear_error();
  return same;
}

int opd__pass_view_canonicalize(opd__compile *c, uint64_t *hits) {
  opd_graph *g = c->g;
  const opd_operator *view_op = opd__graph_find_op("aten::view");
  if (!view_op) return 0;
  for (uint32_t n = 0; n < g->nnodes; n++) {
    opd__gnode *node = &g->nodes[n];
    if (node->dead || !node->is_view || node->nouts != 1 || !is_reshape_like(g, node) ||
        !opd__garg_is_ref(node, 0))
      continue;
    uint32_t src = node->args[0].ref, base = src;
    for (;;) {
      const opd__gnode *def = opd__gvalue_node(g, base);
      if (!def || !opd__gnode_is(g, def, "aten::view") || !opd__garg_is_ref(def, 0)) break;
      base = def->args[0].ref;
    }
    bool canonical = opd__gnode_is(g, node, "aten::view");
    uint32_t out = node->first_out;
    if (canonical && base == src) continue;
    if (!view_gives(view_op, g->values[base].meta, g->values[out].meta)) {
      if (canonical || base == src ||
          !view_gives(view_op, g->values[src].meta, g->values[out].meta))
        continue;
      base = src;
    }
    opd__garg *args = opd__calloc(2, sizeof *args);
    if (!args) return opd_error(OPD_ENOMEM, "out of memory canonicalising a view");
    args[0] = (opd__garg){.kind = OPD__GA_REF, .ref = base};
    args[1].kind = OPD__GA_CONST;
    const opd_tensor *m = g->values[out].meta;
    int rc = opd_iv_make_int_list(&args[1].value, opd_tensor_sizes(m), m->ndim);
    if (rc) {
      opd__gargs_destroy(args, 2);
      return rc;
    }
    if ((rc = opd__graph_rewrite_node(g, n, view_op, args, 2, node->origin))) return rc;
    (*hits)++;
  }
  return 0;
}

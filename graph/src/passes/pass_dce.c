/* pass_dce.c: dead code elimination ([Note: The pass pipeline] in pass_manager.c): a node
 * none of whose values is used (by a live node or a graph output) is removed, last node
 * first, so whole dead chains go in one pass. Graph nodes are functional (the builder
 * refuses operators that write their arguments), so nothing unused has an effect. Hits:
 * nodes removed. */
#include "passes/compile.h"

int opd__pass_dce(opd__compile *c, uint64_t *hits) {
  opd_graph *g = c->g;
  for (uint32_t n = g->nnodes; n-- > 0;) {
    const opd__gnode *node = &g->nodes[n];
    if (node->dead) continue;
    bool used = false;
    for (uint32_t o = 0; o < node->nouts && !used; o++)
      used = opd__gvalue_num_users(g, node->first_out + o) > 0;
    if (used) continue;
    opd__graph_erase_node(g, n);
    (*hits)++;
  }
  return 0;
}

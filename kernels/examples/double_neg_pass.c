/* double_neg_pass.c: an example plugin that adds a graph pass (opd/graph_pass.h): neg(neg(x))
 * becomes x, after the built-in rewrites and before fusion. Load it with
 * `opctl load-plugin double_neg_pass.so`; unloading it removes the pass. */
#include <string.h>

#include <opd/graph_pass.h>

/* The input of node n when it is an aten::neg of a value; false otherwise. */
static bool neg_of(const opd_graph *g, uint32_t n, opd_graph_ref *input) {
  opd_graph_node_info info;
  opd_graph_arg a;
  if (opd_graph_node_info_get(g, n, &info) || !info.live || strcmp(info.op, "aten::neg") != 0 ||
      opd_graph_node_arg(g, n, 0, &a) || a.kind != OPD_GRAPH_ARG_REF)
    return false;
  *input = a.ref;
  return true;
}

static int fold_double_neg(opd_graph *g, void *data, uint64_t *hits) {
  (void)data;
  uint32_t ninputs = opd_graph_num_inputs(g);
  for (uint32_t n = 0; n < opd_graph_node_slots(g); n++) {
    opd_graph_ref inner, x;
    if (!neg_of(g, n, &inner) || inner.position < ninputs ||
        !neg_of(g, inner.position - ninputs, &x))
      continue;
    int rc = opd_graph_replace_uses(g, (opd_graph_ref){ninputs + n, 0}, x);
    if (rc == 0) rc = opd_graph_remove_node(g, n);
    if (rc) return rc;
    (*hits)++;
    /* the inner neg too, unless something else uses it (dce ran before this pass) */
    if (opd_graph_remove_node(g, inner.position - ninputs) != 0) opd_clear_error();
  }
  return 0;
}

OPD_GRAPH_PASSES(m) {
  opd_graph_plugin_pass(m, "fold_double_neg", 1, OPD_GRAPH_PASS_POST, fold_double_neg, NULL);
}

OPD_PLUGIN_INIT()

/* opd/graph_pass.h: passes from plugins, and what a pass may read and change in a graph.
 *
 * A plugin adds a pass before the built-in ones (OPD_GRAPH_PASS_PRE, like torch.compile's
 * post_grad_custom_pre_pass) or after the graph rewrites and before scheduling
 * (OPD_GRAPH_PASS_POST: after cse, before pointwise_groups; like post_grad_custom_post_pass);
 * [Note: The pass pipeline] in graph/src/passes/pass_manager.c gives the whole order. A pass has a
 * name and a version: both are part of every compiled graph's cache key, so registering,
 * changing (a new version) or removing a pass never serves a graph compiled without it. A
 * pass can be disabled by name like a built-in one (opd_graph_options.disabled_passes).
 *
 * A plugin adds its passes in an OPD_GRAPH_PASSES block (opd/library.h's plugin API):
 *
 *   #include <opd/graph_pass.h>
 *   OPD_GRAPH_PASSES(m) {
 *     opd_graph_plugin_pass(m, "fold_double_neg", 1, OPD_GRAPH_PASS_POST, fold, NULL);
 *   }
 *   OPD_PLUGIN_INIT()
 *
 * and the daemon removes them when it unloads the plugin. In process, the functions below
 * register and remove passes directly; they are safe from any thread, a compilation uses the
 * passes registered when it starts, and removing a pass waits for the compilations running it
 * ([Note: Removing a plugin pass under compilation] in graph/src/passes/pass_manager.c).
 */
#ifndef OPD_GRAPH_PASS_H
#define OPD_GRAPH_PASS_H

#include <stdbool.h>
#include <stdint.h>

#include "opd/graph.h"
#include "opd/library.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum opd_graph_pass_place {
  OPD_GRAPH_PASS_PRE,  /* before view_canonicalize */
  OPD_GRAPH_PASS_POST, /* after cse, before pointwise_groups */
} opd_graph_pass_place;

/* A pass: changes g through the functions below, adds the number of changes it made to
 * *hits; 0 or a negative opd error (the compilation then fails with it). */
typedef int (*opd_graph_pass_fn)(opd_graph *g, void *data, uint64_t *hits);

/* Registers a pass: its id (> 0), or OPD_EINVAL (a name that is not 1..63 bytes of
 * [A-Za-z0-9_.:-], or one a built-in or registered pass has), OPD_ENOMEM. */
int64_t opd_graph_pass_register(const char *name, uint32_t version, opd_graph_pass_place place,
                                opd_graph_pass_fn fn, void *data);
/* Removes a registered pass, once no compilation is running it (then its code may be
 * unmapped): 0 or OPD_ENOENT. Not from inside a pass. */
int opd_graph_pass_unregister(int64_t id);

/* Whether `name` is a pass that opd_graph_options.disabled_passes can name: 0 for a
 * built-in pass other than lower or a registered plugin pass; OPD_EINVAL for lower (it
 * makes the plan), OPD_ENOENT naming the passes there are otherwise (the admin's check). */
int opd_graph_pass_check_name(const char *name);

/* A plugin's block of graph passes (see above). */
#define OPD_GRAPH_PASSES(m) OPD__LIB_BLOCK(OPD__LIB_EXTENSION, _, OPD_NO_KEY, m, __COUNTER__)

/* In an OPD_GRAPH_PASSES block: registers a pass that the plugin's unload removes. 0 or the
 * error, which fails the plugin's load (later registrations are skipped). */
static inline int opd_graph_plugin_pass(opd_library *m, const char *name, uint32_t version,
                                        opd_graph_pass_place place, opd_graph_pass_fn fn,
                                        void *data) {
  if (m->rc) return m->rc;
  int64_t id = opd_graph_pass_register(name, version, place, fn, data);
  if (id < 0) return m->rc = (int)id;
  return opd_lib_record_undo(m, opd_graph_pass_unregister, id);
}

/* ---- what a pass sees ---- */

/* Nodes are numbered 0..opd_graph_node_slots() - 1 in order, removed ones included; node j
 * is position opd_graph_num_inputs() + j. */
uint32_t opd_graph_node_slots(const opd_graph *g);

typedef struct opd_graph_node_info {
  const char *op; /* "aten::exp" */
  uint32_t nargs; /* the schema's argument count */
  uint32_t nouts;
  bool live;
} opd_graph_node_info;
int opd_graph_node_info_get(const opd_graph *g, uint32_t node, opd_graph_node_info *out);

/* Argument i of a node: VALUE (the constant, borrowed from the graph), REF (a position and
 * output), or REFS with nrefs (elements from opd_graph_node_arg_element). */
int opd_graph_node_arg(const opd_graph *g, uint32_t node, uint32_t i, opd_graph_arg *out);
int opd_graph_node_arg_element(const opd_graph *g, uint32_t node, uint32_t i, uint32_t j,
                               opd_graph_ref *out);

/* Every use of `from` (node arguments and graph outputs) becomes a use of `to`, which must
 * have from's dtype and sizes and be defined before every node that uses from: 0 or
 * OPD_EINVAL. */
int opd_graph_replace_uses(opd_graph *g, opd_graph_ref from, opd_graph_ref to);
/* Removes a node none of whose values is used: 0, or OPD_EINVAL (used, or already removed). */
int opd_graph_remove_node(opd_graph *g, uint32_t node);

#ifdef __cplusplus
}
#endif
#endif

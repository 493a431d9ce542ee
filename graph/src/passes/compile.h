/* compile.h: what the passes of the pipeline share (internal to the graph library): the
 * compilation in progress and the built-in passes ([Note: The pass pipeline] in
 * pass_manager.c). */
#ifndef OPD_GRAPH_COMPILE_H
#define OPD_GRAPH_COMPILE_H

#include <stdint.h>
#include <string.h>

#include "ir/graph_internal.h"
#include "opd/graph_exec.h"

typedef struct opd__plan opd__plan;

typedef struct opd__compile {
  opd_graph *g;
  const opd_graph_options *opts;
  opd__plan *plan;           /* made by pointwise_groups, filled by buffer_plan and lower */
  uint64_t softmax_patterns; /* replaced by softmax_pattern */
} opd__compile;

/* A built-in pass: rewrites c->g (or builds c->plan), adding what it did to *hits. */
typedef int (*opd__pass_fn)(opd__compile *c, uint64_t *hits);

int opd__pass_view_canonicalize(opd__compile *c, uint64_t *hits);
int opd__pass_remove_noops(opd__compile *c, uint64_t *hits);
int opd__pass_dce(opd__compile *c, uint64_t *hits);
int opd__pass_softmax(opd__compile *c, uint64_t *hits);
int opd__pass_cse(opd__compile *c, uint64_t *hits);
int opd__pass_pointwise_groups(opd__compile *c, uint64_t *hits);
int opd__pass_buffer_plan(opd__compile *c, uint64_t *hits);
int opd__pass_lower(opd__compile *c, uint64_t *hits);

/* Roots: after value `from` was replaced by `to`, every value that shared from's storage
 * shares to's (its root becomes to's root). */
void opd__graph_reroot(opd_graph *g, uint32_t from, uint32_t to);

/* Whether node n is a call of the operator named `name`. */
static inline bool opd__gnode_is(const opd_graph *g, const opd__gnode *n, const char *name) {
  return !n->dead && strcmp(opd__gnode_op(g, n)->name, name) == 0;
}

#endif

/* plan.c: the plan's life (made by pointwise_groups, scheduled, freed), its schedule and
 * value lifetimes, and its text for the pass dumps. */
#include <inttypes.h>
#include <string.h>

#include "passes/compile.h"
#include "opd/error.h"
#include "opd/memory.h"
#include "plan/plan.h"

int opd__plan_new(opd__compile *c) {
  if (c->plan) return 0;
  opd__plan *p = opd__calloc(1, sizeof *p);
  uint32_t nn = c->g->nnodes ? c->g->nnodes : 1, nv = c->g->nvalues ? c->g->nvalues : 1;
  if (p) p->group_of = opd__malloc(nn * sizeof *p->group_of);
  if (p && p->group_of) p->buffer_of = opd__malloc(nv * sizeof *p->buffer_of);
  if (!p || !p->group_of || !p->buffer_of) {
    opd__plan_free(p);
    return opd_error(OPD_ENOMEM, "out of memory for a graph's plan");
  }
  for (uint32_t i = 0; i < nn; i++) p->group_of[i] = -1;
  for (uint32_t i = 0; i < nv; i++) p->buffer_of[i] = -1;
  c->plan = p;
  return 0;
}

void opd__plan_free(opd__plan *p) {
  if (!p) return;
  for (uint32_t i = 0; i < p->ngroups; i++) {
    opd__free(p->groups[i].members);
    opd__free(p->groups[i].nodes);
    opd__free(p->groups[i].after);
    opd__pw_program_free(&p->groups[i].prog);
  }
  opd__free(p->groups);
  opd__free(p->group_of);
  opd__free(p->order);
  opd__free(p->last_use);
  opd__free(p->steps);
  opd__free(p->frees);
  opd__free(p->buffer_of);
  opd__free(p->buffer_bytes);
  opd__free(p->buffer_dtype);
  opd__free(p);
}

/* The unit node n runs in. */
static opd__unit unit_of(const opd__plan *p, uint32_t n) {
  return p->group_of[n] >= 0 ? (opd__unit){OPD__STEP_GROUP, (uint32_t)p->group_of[n]}
                             : (opd__unit){OPD__STEP_NODE, n};
}

/* A dense number for every unit: nodes first, then groups. */
static uint32_t unit_id(const opd_graph *g, opd__unit u) {
  return u.kind == OPD__STEP_NODE ? u.index : g->nnodes + u.index;
}

/* The nodes a unit runs: a group's, or the node itself (*one). */
static const uint32_t *unit_nodes(const opd__plan *p, const opd__unit *u, uint32_t *n) {
  if (u->kind == OPD__STEP_GROUP) {
    *n = p->groups[u->index].nnodes;
    return p->groups[u->index].nodes;
  }
  *n = 1;
  return &u->index;
}

/* [Note: The lowered plan]: a stable topological order of the units, each placed as early
 * as its inputs allow and, among those ready, the one whose first node comes first. */
int opd__plan_schedule(opd__compile *c) {
  opd__plan *p = c->plan;
  opd_graph *g = c->g;
  if (p->order) return 0;
  uint32_t nunits = g->nnodes + p->ngroups;
  uint32_t *pos = opd__malloc((nunits ? nunits : 1) * sizeof *pos); /* first node */
  bool *live = opd__calloc(nunits ? nunits : 1, sizeof *live);
  p->order = opd__malloc((nunits ? nunits : 1) * sizeof *p->order);
  p->last_use = opd__malloc((g->nvalues ? g->nvalues : 1) * sizeof *p->last_use);
  if (!pos || !live || !p->order || !p->last_use) {
    opd__free(pos);
    opd__free(live);
    return opd_error(OPD_ENOMEM, "out of memory scheduling a graph");
  }
  for (uint32_t u = 0; u < nunits; u++) pos[u] = UINT32_MAX;
  for (uint32_t n = 0; n < g->nnodes; n++) {
    const opd__gnode *node = &g->nodes[n];
    if (node->dead) continue;
    uint32_t id = unit_id(g, unit_of(p, n));
    live[id] = true;
    if (pos[id] == UINT32_MAX) pos[id] = n;
  }
  /* the schedule, by repeated selection (graphs are at most a few thousand nodes) */
  bool *done = opd__calloc(nunits ? nunits : 1, sizeof *done);
  if (!done) {
    opd__free(pos);
    opd__free(live);
    return opd_error(OPD_ENOMEM, "out of memory scheduling a graph");
  }
  /* a unit is ready when every value its nodes read from other units is defined by a
   * scheduled unit (or is an input) */
  p->norder = 0;
  for (;;) {
    uint32_t best = UINT32_MAX;
    for (uint32_t id = 0; id < nunits; id++) {
      if (!live[id] || done[id] || (best != UINT32_MAX && pos[id] >= pos[best])) continue;
      opd__unit u = id < g->nnodes ? (opd__unit){OPD__STEP_NODE, id}
                                   : (opd__unit){OPD__STEP_GROUP, id - g->nnodes};
      uint32_t nn;
      const uint32_t *nodes = unit_nodes(p, &u, &nn);
      bool ready = true;
      for (uint32_t k = 0; k < nn && ready; k++) {
        opd__ref_iter it = {&g->nodes[nodes[k]], 0, 0};
        uint32_t v;
        while (ready && opd__next_ref(&it, &v)) {
          if (opd__gvalue_is_input(g, v)) continue;
          uint32_t def = unit_id(g, unit_of(p, g->values[v].node));
          ready = def == id || done[def];
        }
      }
      if (ready) best = id;
    }
    if (best == UINT32_MAX) break;
    done[best] = true;
    p->order[p->norder++] = best < g->nnodes ? (opd__unit){OPD__STEP_NODE, best}
                                             : (opd__unit){OPD__STEP_GROUP, best - g->nnodes};
  }
  /* lifetimes: the last unit reading each value */
  for (uint32_t v = 0; v < g->nvalues; v++) p->last_use[v] = UINT32_MAX;
  for (uint32_t s = 0; s < p->norder; s++) {
    uint32_t nn;
    const uint32_t *nodes = unit_nodes(p, &p->order[s], &nn);
    for (uint32_t k = 0; k < nn; k++) {
      opd__ref_iter it = {&g->nodes[nodes[k]], 0, 0};
      uint32_t v;
      while (opd__next_ref(&it, &v)) p->last_use[v] = s;
    }
  }
  bool complete = true;
  for (uint32_t id = 0; id < nunits; id++) complete = complete && (!live[id] || done[id]);
  opd__free(pos);
  opd__free(live);
  opd__free(done);
  if (!complete)
    return opd_error(OPD_EINTERNAL, "graph schedule: the kernels depend on each other in a circle");
  return 0;
}

void opd__plan_print(const opd__plan *p, const opd_graph *g, opd__sbuf *sb) {
  for (uint32_t i = 0; i < p->ngroups; i++) {
    const opd__group *grp = &p->groups[i];
    const opd__pw_program *pr = &grp->prog;
    opd__sbuf_printf(sb, "group %u: %u nodes, %u registers, iteration [", i, grp->nmembers,
                     pr->nregs);
    for (int d = 0; d < pr->ndim; d++)
      opd__sbuf_printf(sb, "%s%" PRId64, d ? ", " : "", pr->sizes[d]);
    opd__sbuf_printf(sb, "]:");
    for (uint32_t k = 0; k < pr->ncode; k++) {
      const opd__pw_instr *ins = &pr->code[k];
      opd__sbuf_printf(sb, " %s", opd__pw_opcode_name((opd__pw_opcode)ins->op));
    }
    opd__sbuf_printf(sb, "\n");
  }
  if (p->nbuffers) {
    opd__sbuf_printf(sb, "buffers: %u (%" PRIu64 " bytes for %" PRIu64 " bytes of intermediates):",
                     p->nbuffers, p->planned_bytes, p->unplanned_bytes);
    for (uint32_t v = 0; v < g->nvalues; v++)
      if (p->buffer_of[v] >= 0) opd__sbuf_printf(sb, " v%u->b%d", v, (int)p->buffer_of[v]);
    opd__sbuf_printf(sb, "\n");
  }
  if (p->nsteps) {
    opd__sbuf_printf(sb, "steps: %u, %u kernels:", p->nsteps, p->kernels);
    for (uint32_t s = 0; s < p->nsteps; s++) {
      const opd__step *st = &p->steps[s];
      if (st->kind == OPD__STEP_GROUP)
        opd__sbuf_printf(sb, " group%u", st->index);
      else
        opd__sbuf_printf(sb, " %s%s", g->ops[g->nodes[st->index].opi].name,
                         st->kernel ? "" : "(view)");
    }
    opd__sbuf_printf(sb, "\n");
  }
}

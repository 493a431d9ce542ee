/* pass_fuse.c: pointwise grouping ([Note: The pass pipeline] in pass_manager.c).
 *
 * [Note: Pointwise groups]
 * Kernels are the units a run launches: each node that is not a view, with the pointwise
 * nodes gathered into groups that run as one fused program (fused_codegen.c). The rule is
 * tests/fixtures/graphs/FORMAT.md's: in graph order, a pointwise node that is still alone joins
 * the group of each pointwise producer of its inputs (found through views), one producer at
 * a time, unless that would make the kernels depend on each other in a circle (a group's
 * value feeding a reduction or a matmul whose result the group then needs), which a check
 * of the kernel graph for cycles rejects; joining a second producer's group merges the
 * two. Two more conditions keep every group one that a program can compute: its members
 * fuse (pointwise.c: float32 and bool on the CPU, opd's own kernels) and the program can be
 * built (views it can follow, registers, at most OPD__PW_MAX_MEMBERS members). A group of
 * one node runs as that node's kernel. Hits: nodes placed in groups of two or more.
 */
#include <string.h>

#include "passes/compile.h"
#include "opd/error.h"
#include "opd/memory.h"
#include "plan/plan.h"

typedef struct grouping {
  opd_graph *g;
  bool *pointwise;
  uint32_t *unit; /* per node: its kernel (a node index), UINT32_MAX for views and dead nodes */
  /* scratch for the cycle check */
  uint32_t *edge_from, *edge_to, *first, *next;
  uint8_t *state;
  uint32_t *stack;
  uint32_t cap_edges;
} grouping;

/* The node computing v's data, through views; OPD__NO_NODE for an input. */
static uint32_t producer(const opd_graph *g, uint32_t v) {
  for (;;) {
    const opd__gnode *d = opd__gvalue_node(g, v);
    if (!d) return OPD__NO_NODE;
    if (!d->is_view || !opd__garg_is_ref(d, 0)) return g->values[v].node;
    v = d->args[0].ref;
  }
}

static int add_edge(grouping *s, uint32_t *m, uint32_t from, uint32_t to) {
  if (*m == s->cap_edges) {
    uint32_t cap = s->cap_edges ? s->cap_edges * 2 : 64;
    uint32_t *f = opd__realloc(s->edge_from, cap * sizeof *f);
    if (f) s->edge_from = f;
    uint32_t *t = f ? opd__realloc(s->edge_to, cap * sizeof *t) : NULL;
    if (t) s->edge_to = t;
    uint32_t *x = t ? opd__realloc(s->next, cap * sizeof *x) : NULL;
    if (!x) return opd_error(OPD_ENOMEM, "out of memory grouping pointwise nodes");
    s->next = x;
    s->cap_edges = cap;
  }
  s->edge_from[*m] = from;
  s->edge_to[*m] = to;
  (*m)++;
  return 0;
}

/* Whether the kernels (units) depend on each other without a circle. */
static int acyclic(grouping *s, bool *ok) {
  opd_graph *g = s->g;
  uint32_t m = 0;
  for (uint32_t n = 0; n < g->nnodes; n++) {
    if (s->unit[n] == UINT32_MAX) continue;
    opd__ref_iter it = {&g->nodes[n], 0, 0};
    uint32_t v;
    while (opd__next_ref(&it, &v)) {
      uint32_t p = producer(g, v);
      if (p != OPD__NO_NODE && s->unit[p] != UINT32_MAX && s->unit[p] != s->unit[n]) {
        int rc = add_edge(s, &m, s->unit[p], s->unit[n]);
        if (rc) return rc;
      }
    }
  }
  for (uint32_t n = 0; n < g->nnodes; n++) s->first[n] = UINT32_MAX, s->state[n] = 0;
  for (uint32_t e = 0; e < m; e++) {
    s->next[e] = s->first[s->edge_from[e]];
    s->first[s->edge_from[e]] = e;
  }
  *ok = true;
  /* iterative depth-first search: state 1 on the stack, 2 done; stack holds edge cursors */
  for (uint32_t root = 0; root < g->nnodes && *ok; root++) {
    if (s->unit[root] != root || s->state[root]) continue;
    uint32_t depth = 0;
    s->stack[depth++] = root;
    s->state[root] = 1;
    uint32_t *cursor = s->first; /* reused: first[u] advances as u's edges are explored */
    while (depth && *ok) {
      uint32_t u = s->stack[depth - 1], e = cursor[u];
      if (e == UINT32_MAX) {
        s->state[u] = 2;
        depth--;
        continue;
      }
      cursor[u] = s->next[e];
      uint32_t w = s->edge_to[e];
      if (s->state[w] == 1) *ok = false;
      if (s->state[w] == 0) {
        s->state[w] = 1;
        s->stack[depth++] = w;
      }
    }
  }
  return 0;
}

/* The members of unit u, in graph order, into out: their count. */
static uint32_t members_of(const grouping *s, uint32_t u, uint32_t *out) {
  uint32_t k = 0;
  for (uint32_t n = 0; n < s->g->nnodes; n++)
    if (s->unit[n] == u) out[k++] = n;
  return k;
}

/* Whether unit u can run as one program (or is a single node). */
static bool feasible(const grouping *s, uint32_t u, uint32_t *scratch) {
  uint32_t k = members_of(s, u, scratch);
  if (k < 2) return true;
  if (k > OPD__PW_MAX_MEMBERS) return false;
  opd__pw_program p;
  bool ok = opd__pw_compile(s->g, scratch, k, true, &p) == 0;
  opd_clear_error();
  return ok;
}

/* Node n (alone in its unit, or grown) tries to join the group of each pointwise producer. */
static int join_producers(grouping *s, uint32_t n, uint32_t *scratch, uint32_t *saved) {
  opd_graph *g = s->g;
  opd__ref_iter it = {&g->nodes[n], 0, 0};
  uint32_t v;
  while (opd__next_ref(&it, &v)) {
    uint32_t p = producer(g, v);
    if (p == OPD__NO_NODE || !s->pointwise[p]) continue;
    uint32_t target = s->unit[p], mine = s->unit[n];
    if (target == mine) continue;
    uint32_t k = members_of(s, mine, saved);
    for (uint32_t i = 0; i < k; i++) s->unit[saved[i]] = target;
    bool ok = false;
    int rc = acyclic(s, &ok);
    if (rc) return rc;
    if (!ok || !feasible(s, target, scratch))
      for (uint32_t i = 0; i < k; i++) s->unit[saved[i]] = mine;
  }
  return 0;
}

/* The nodes of a group's unfused run: members and the views between them, in order. */
static int group_nodes(const opd_graph *g, const bool *in_group, opd__group *grp) {
  uint32_t count = 0;
  for (uint32_t n = 0; n < g->nnodes; n++) count += in_group[n];
  if (!(grp->nodes = opd__malloc(count * sizeof *grp->nodes)))
    return opd_error(OPD_ENOMEM, "out of memory for a pointwise group");
  for (uint32_t n = 0; n < g->nnodes; n++)
    if (in_group[n]) grp->nodes[grp->nnodes++] = n;
  return 0;
}

/* The group's views whose values something outside it uses (directly, or through a view
 * of the group that is so used). */
static int group_after_views(const opd_graph *g, const bool *in_group, opd__group *grp) {
  bool *needed = opd__calloc(g->nnodes, sizeof *needed);
  if (!needed) return opd_error(OPD_ENOMEM, "out of memory for a pointwise group");
  uint32_t count = 0;
  for (uint32_t k = grp->nnodes; k-- > 0;) {
    uint32_t n = grp->nodes[k];
    if (!g->nodes[n].is_view) continue;
    const opd__gvalue *out = &g->values[g->nodes[n].first_out];
    bool need = out->output_uses > 0;
    for (uint32_t i = 0; i < out->nusers && !need; i++)
      need = !in_group[out->users[i]] || needed[out->users[i]];
    needed[n] = need;
    count += need;
  }
  grp->after = opd__malloc((count ? count : 1) * sizeof *grp->after);
  if (!grp->after) {
    opd__free(needed);
    return opd_error(OPD_ENOMEM, "out of memory for a pointwise group");
  }
  for (uint32_t k = 0; k < grp->nnodes; k++)
    if (needed[grp->nodes[k]]) grp->after[grp->nafter++] = grp->nodes[k];
  opd__free(needed);
  return 0;
}

/* The views between members belong to the group: those reading a member's value through
 * views (forward, in graph order) from which a member is reached through views (backward). */
static int mark_views(const opd_graph *g, bool *in_group) {
  bool *fwd = opd__calloc(g->nnodes ? g->nnodes : 1, sizeof *fwd);
  if (!fwd) return opd_error(OPD_ENOMEM, "out of memory for a pointwise group");
  for (uint32_t n = 0; n < g->nnodes; n++) {
    const opd__gnode *d = &g->nodes[n];
    if (in_group[n] || d->dead || !d->is_view || d->nouts != 1 || !opd__garg_is_ref(d, 0) ||
        opd__gvalue_is_input(g, d->args[0].ref))
      continue;
    uint32_t src = g->values[d->args[0].ref].node;
    fwd[n] = in_group[src] || fwd[src];
  }
  for (uint32_t n = g->nnodes; n-- > 0;) {
    if (!fwd[n]) continue;
    const opd__gvalue *out = &g->values[g->nodes[n].first_out];
    for (uint32_t i = 0; i < out->nusers && !in_group[n]; i++)
      in_group[n] = in_group[out->users[i]];
  }
  opd__free(fwd);
  return 0;
}

static int make_groups(grouping *s, opd__plan *plan, uint32_t *scratch, uint64_t *hits) {
  opd_graph *g = s->g;
  bool *in_group = opd__calloc(g->nnodes ? g->nnodes : 1, sizeof *in_group);
  if (!in_group) return opd_error(OPD_ENOMEM, "out of memory for pointwise groups");
  int rc = 0;
  for (uint32_t u = 0; u < g->nnodes && rc == 0; u++) {
    if (s->unit[u] != u || !s->pointwise[u]) continue;
    uint32_t k = members_of(s, u, scratch);
    if (k < 2) continue;
    opd__group grp = {0};
    if (opd__pw_compile(g, scratch, k, false, &grp.prog)) {
      opd_clear_error();
      continue;
    }
    if (!(grp.members = opd__malloc(k * sizeof *grp.members))) {
      opd__pw_program_free(&grp.prog);
      rc = opd_error(OPD_ENOMEM, "out of memory for a pointwise group");
      break;
    }
    memcpy(grp.members, scratch, k * sizeof *scratch);
    grp.nmembers = grp.ncompute = k;
    memset(in_group, 0, g->nnodes * sizeof *in_group);
    for (uint32_t i = 0; i < k; i++) in_group[scratch[i]] = true;
    rc = mark_views(g, in_group);
    if (rc == 0) rc = group_nodes(g, in_group, &grp);
    if (rc == 0) rc = group_after_views(g, in_group, &grp);
    opd__group *p = rc ? NULL : opd__realloc(plan->groups, (plan->ngroups + 1) * sizeof *p);
    if (!p) {
      if (!rc) rc = opd_error(OPD_ENOMEM, "out of memory for a pointwise group");
      opd__free(grp.members);
      opd__free(grp.nodes);
      opd__free(grp.after);
      opd__pw_program_free(&grp.prog);
      break;
    }
    plan->groups = p;
    uint32_t id = plan->ngroups++;
    plan->groups[id] = grp;
    for (uint32_t i = 0; i < grp.nnodes; i++) {
      plan->group_of[grp.nodes[i]] = (int32_t)id;
      g->nodes[grp.nodes[i]].group = (int32_t)id;
    }
    *hits += k;
  }
  opd__free(in_group);
  return rc;
}

static void grouping_free(grouping *s) {
  opd__free(s->pointwise);
  opd__free(s->unit);
  opd__free(s->edge_from);
  opd__free(s->edge_to);
  opd__free(s->first);
  opd__free(s->next);
  opd__free(s->state);
  opd__free(s->stack);
}

int opd__pass_pointwise_groups(opd__compile *c, uint64_t *hits) {
  int rc = opd__plan_new(c);
  if (rc) return rc;
  opd_graph *g = c->g;
  uint32_t n = g->nnodes ? g->nnodes : 1;
  grouping s = {.g = g,
                .pointwise = opd__calloc(n, sizeof *s.pointwise),
                .unit = opd__malloc(n * sizeof *s.unit),
                .first = opd__malloc(n * sizeof *s.first),
                .state = opd__malloc(n),
                .stack = opd__malloc(n * sizeof *s.stack)};
  uint32_t *scratch = opd__malloc(2 * n * sizeof *scratch);
  if (!s.pointwise || !s.unit || !s.first || !s.state || !s.stack || !scratch) {
    grouping_free(&s);
    opd__free(scratch);
    return opd_error(OPD_ENOMEM, "out of memory grouping pointwise nodes");
  }
  for (uint32_t i = 0; i < g->nnodes; i++) {
    const opd__gnode *node = &g->nodes[i];
    s.unit[i] = node->dead || node->is_view ? UINT32_MAX : i;
    opd__pw_instr ins;
    uint32_t ops[3], nops;
    s.pointwise[i] = s.unit[i] != UINT32_MAX && opd__pw_encode(g, node, &ins, ops, &nops);
  }
  for (uint32_t i = 0; i < g->nnodes && rc == 0; i++)
    if (s.pointwise[i] && s.unit[i] == i) rc = join_producers(&s, i, scratch, scratch + n);
  if (rc == 0) rc = make_groups(&s, c->plan, scratch, hits);
  grouping_free(&s);
  opd__free(scratch);
  return rc;
}

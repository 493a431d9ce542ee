/* fused_codegen.c: the program of a fused pointwise group (opd__pw_compile).
 *
 * [Note: Fused pointwise programs]
 * A group runs as one loop over its iteration space, OPD__PW_TILE elements at a time: each
 * tile is loaded from the group's inputs, computed through the group's operations in
 * registers (float32 tiles that stay in L1) and stored to the values the group must
 * materialise; nothing in between touches memory. The program is built backwards from the
 * stored values:
 *   - A member's value is *stored* when something outside the group uses it: a graph
 *     output, a node that is not a member, or a view leading to one. The stored value with
 *     the most elements is the *root*: its shape is the iteration space.
 *   - Generating value v "at" a chain of steps (how v's index space is reached from the
 *     iteration space) emits v's operation with each operand generated at the chain
 *     extended by the operand's broadcast to v's shape; views between members (view and the
 *     reshapes view_canonicalize made of them, expand, t, transpose, permute) extend the
 *     chain too. A member can so be computed at other indices than its own, e.g. a [3, 5, 1]
 *     rsqrt at every element of a [3, 5, 12] product (recomputing a cheap producer rather
 *     than storing it). Instances are shared by (value, probe): the probe is v's contiguous
 *     layout carried along the chain, which names each element it reads uniquely.
 *   - A value from outside the group is a *load*: at run time its tensor's actual geometry
 *     is carried along the chain to the iteration space (geometry.c), so inputs of any layout
 *     are read in place; a chain that a layout does not admit makes that run unfused.
 *   - Every stored value must be reached at a probe that covers its elements exactly once
 *     (a permutation of a dense layout): that is where the tile is written. Other stored
 *     values of the root's shape are generated at the identity.
 * The operations of members are those of pointwise.c, in float32 with the kernels' own
 * formulas, so a fused group computes what its nodes compute (the numerics check confirms
 * it per group). Registers are allocated by liveness, at most OPD__PW_MAX_REGS; a group
 * that needs more, has more than OPD__PW_MAX_MEMBERS members, a rank above OPD__PW_MAX_DIMS
 * or a view the chain cannot follow is not fused (opd__pw_compile says why, and the
 * grouping pass keeps such nodes apart).
 */
#include <stdio.h>
#include <string.h>

#include "opd/error.h"
#include "opd/memory.h"
#include "plan/plan.h"

/* A chain of steps, applied head first, built on the C stack as generation descends. */
typedef struct chain {
  const opd__geo_step *step;
  const struct chain *next;
} chain;

typedef struct instance {
  uint32_t value;
  opd__geo probe;
  uint32_t vreg;
} instance;

typedef struct cg {
  const opd_graph *g;
  const bool *member; /* per node */
  opd__pw_program *p;
  uint32_t cap_code, cap_loads, cap_stores, cap_steps;
  instance *inst;
  uint32_t ninst, cap_inst;
  uint32_t nvregs;
  int depth;
} cg;

static int fail(const char *why) {
  return opd_error(OPD_EINVAL, "not fused: %s", why);
}

static int grow(void **p, uint32_t *cap, uint32_t need, size_t esize) {
  if (need <= *cap) return 0;
  uint32_t c = *cap ? *cap * 2 : 16;
  while (c < need) c *= 2;
  void *q = opd__realloc(*p, (size_t)c * esize);
  if (!q) return opd_error(OPD_ENOMEM, "out of memory building a fused program");
  *p = q;
  *cap = c;
  return 0;
}

static void contiguous_geo(const opd_tensor *t, opd__geo *geo) {
  geo->ndim = t->ndim;
  geo->offset = 0;
  int64_t s = 1;
  for (int d = t->ndim - 1; d >= 0; d--) {
    geo->sizes[d] = opd_tensor_sizes(t)[d];
    geo->strides[d] = s;
    s *= geo->sizes[d] > 1 ? geo->sizes[d] : 1;
  }
}

static int apply_chain(opd__geo *geo, const chain *c) {
  for (; c; c = c->next)
    if (opd__geo_apply(geo, c->step, 1)) return -1;
  return 0;
}

static bool same_probe(const opd__geo *a, const opd__geo *b) {
  return a->ndim == b->ndim && a->offset == b->offset &&
         memcmp(a->strides, b->strides, (size_t)a->ndim * sizeof *a->strides) == 0;
}

/* Appends an instruction; its index. */
static int emit(cg *c, const opd__pw_instr *ins) {
  int rc = grow((void **)&c->p->code, &c->cap_code, c->p->ncode + 1, sizeof *c->p->code);
  if (rc) return rc;
  c->p->code[c->p->ncode] = *ins;
  return (int)c->p->ncode++;
}

/* A broadcast of a value to `sizes` (the step a consumer's shape adds). */
static opd__geo_step broadcast_step(const opd_tensor *to) {
  opd__geo_step s = {.kind = OPD__GEO_BROADCAST, .ndim = (uint8_t)to->ndim};
  memcpy(s.sizes, opd_tensor_sizes(to), (size_t)to->ndim * sizeof *s.sizes);
  return s;
}

/* The step a view node is, or false when the chain cannot follow it. */
static bool view_step(const opd_graph *g, const opd__gnode *n, opd__geo_step *s) {
  const opd_tensor *out = g->values[n->first_out].meta;
  const opd_tensor *in = g->values[n->args[0].ref].meta;
  if (n->nouts != 1 || !opd__garg_is_ref(n, 0) || out->ndim > OPD__PW_MAX_DIMS) return false;
  *s = (opd__geo_step){.ndim = (uint8_t)out->ndim};
  memcpy(s->sizes, opd_tensor_sizes(out), (size_t)out->ndim * sizeof *s->sizes);
  const char *op = opd__gnode_op(g, n)->name;
  if (!strcmp(op, "aten::view") || !strcmp(op, "aten::_unsafe_view") ||
      !strcmp(op, "aten::reshape") || !strcmp(op, "aten::unsqueeze") ||
      !strcmp(op, "aten::squeeze.dim")) {
    s->kind = OPD__GEO_VIEW;
    return true;
  }
  if (!strcmp(op, "aten::expand")) {
    s->kind = OPD__GEO_BROADCAST;
    return true;
  }
  s->kind = OPD__GEO_PERMUTE;
  int nd = in->ndim;
  for (int i = 0; i < nd; i++) s->perm[i] = (uint8_t)i;
  int64_t d0, d1;
  if (!strcmp(op, "aten::t")) {
    if (nd == 2) s->perm[0] = 1, s->perm[1] = 0;
    return true;
  }
  if (!strcmp(op, "aten::transpose.int") && opd__garg_int(&n->args[1], &d0) &&
      opd__garg_int(&n->args[2], &d1)) {
    d0 = d0 < 0 ? d0 + nd : d0;
    d1 = d1 < 0 ? d1 + nd : d1;
    if (nd == 0) return true;
    if (d0 < 0 || d0 >= nd || d1 < 0 || d1 >= nd) return false;
    s->perm[d0] = (uint8_t)d1;
    s->perm[d1] = (uint8_t)d0;
    return true;
  }
  const int64_t *dims;
  uint32_t len;
  if (!strcmp(op, "aten::permute") && opd__garg_int_list(&n->args[1], &dims, &len) &&
      len == (uint32_t)nd) {
    for (int i = 0; i < nd; i++) s->perm[i] = (uint8_t)(dims[i] < 0 ? dims[i] + nd : dims[i]);
    return true;
  }
  return false;
}

/* Whether v is a member's value seen through views (then it cannot be a load). */
static bool from_member(const cg *c, uint32_t v) {
  for (;;) {
    const opd__gnode *d = opd__gvalue_node(c->g, v);
    if (!d) return false;
    if (c->member[c->g->values[v].node]) return true;
    if (!d->is_view || !opd__garg_is_ref(d, 0)) return false;
    v = d->args[0].ref;
  }
}

/* A load of a value (or a constant) at chain `ch`: its vreg. */
static int gen_load(cg *c, uint32_t value, opd_tensor *constant, const chain *ch, uint32_t *vreg) {
  opd__pw_program *p = c->p;
  opd__geo_step flat[64];
  uint32_t n = 0;
  for (const chain *k = ch; k; k = k->next) {
    if (n == 64) return fail("a chain of more than 64 views");
    flat[n++] = *k->step;
  }
  for (uint32_t i = 0; i < p->ncode; i++) { /* the same load already made */
    const opd__pw_instr *ins = &p->code[i];
    if (ins->op != OPD__PW_LOAD) continue;
    const opd__pw_load *l = &p->loads[ins->aux];
    if (l->value == value && l->constant == constant && l->nsteps == n &&
        memcmp(&p->steps[l->first_step], flat, n * sizeof *flat) == 0) {
      *vreg = ins->dst;
      return 0;
    }
  }
  const opd_tensor *t = constant ? constant : c->g->values[value].meta;
  if (t->ndim > OPD__PW_MAX_DIMS)
    return fail("an operand of more dimensions than fused programs take");
  opd__geo geo = {.ndim = t->ndim, .offset = 0};
  memcpy(geo.sizes, opd_tensor_sizes(t), (size_t)t->ndim * sizeof *geo.sizes);
  memcpy(geo.strides, opd_tensor_strides(t), (size_t)t->ndim * sizeof *geo.strides);
  if (opd__geo_apply(&geo, flat, n)) return fail("an operand whose layout the views cannot carry");
  int rc = grow((void **)&p->steps, &c->cap_steps, p->nsteps + n, sizeof *p->steps);
  if (!rc) rc = grow((void **)&p->loads, &c->cap_loads, p->nloads + 1, sizeof *p->loads);
  if (rc) return rc;
  memcpy(&p->steps[p->nsteps], flat, n * sizeof *flat);
  p->loads[p->nloads] = (opd__pw_load){value, constant, p->nsteps, n};
  p->nsteps += n;
  *vreg = c->nvregs++;
  rc = emit(c, &(opd__pw_instr){.op = OPD__PW_LOAD, .dst = (uint8_t)*vreg, .aux = p->nloads});
  p->nloads++;
  return rc < 0 ? rc : 0;
}

static int gen(cg *c, uint32_t v, const chain *ch, uint32_t *vreg);

/* A member's value at chain ch. */
static int gen_member(cg *c, uint32_t v, const chain *ch, uint32_t *vreg) {
  const opd_graph *g = c->g;
  const opd__gnode *n = opd__gvalue_node(g, v);
  opd__geo probe;
  contiguous_geo(g->values[v].meta, &probe);
  if (apply_chain(&probe, ch))
    return fail("a member the views cannot carry to the iteration space");
  for (uint32_t i = 0; i < c->ninst; i++)
    if (c->inst[i].value == v && same_probe(&c->inst[i].probe, &probe)) {
      *vreg = c->inst[i].vreg;
      return 0;
    }
  opd__pw_instr ins;
  uint32_t operands[3], nops = 0;
  if (!opd__pw_encode(g, n, &ins, operands, &nops)) return fail("an operation that does not fuse");
  opd__geo_step bc = broadcast_step(g->values[v].meta);
  chain ext = {&bc, ch};
  for (uint32_t i = 0; i < nops; i++) {
    if (operands[i] == UINT32_MAX || (ins.imm_mask >> i & 1)) continue; /* an immediate */
    const opd__garg *a = &n->args[operands[i]];
    uint32_t r = 0;
    int rc = a->kind == OPD__GA_REF     ? gen(c, a->ref, &ext, &r)
             : a->kind == OPD__GA_CONST ? gen_load(c, UINT32_MAX, a->value.u.t, &ext, &r)
                                        : fail("an operand of no known kind");
    if (rc) return rc;
    ins.src[i] = (uint8_t)r;
  }
  ins.dst = (uint8_t)c->nvregs++;
  int rc = emit(c, &ins);
  if (rc < 0) return rc;
  if ((rc = grow((void **)&c->inst, &c->cap_inst, c->ninst + 1, sizeof *c->inst))) return rc;
  c->inst[c->ninst++] = (instance){v, probe, ins.dst};
  *vreg = ins.dst;
  return 0;
}

static int gen(cg *c, uint32_t v, const chain *ch, uint32_t *vreg) {
  if (++c->depth > 512) return fail("a group too deep");
  const opd_graph *g = c->g;
  const opd__gnode *n = opd__gvalue_node(g, v);
  int rc;
  if (n && c->member[g->values[v].node]) {
    rc = gen_member(c, v, ch, vreg);
  } else if (n && n->is_view && opd__garg_is_ref(n, 0) && from_member(c, n->args[0].ref)) {
    opd__geo_step s;
    if (!view_step(g, n, &s)) return fail("a view between members that the program cannot follow");
    chain ext = {&s, ch};
    rc = gen(c, n->args[0].ref, &ext, vreg);
  } else {
    rc = gen_load(c, v, NULL, ch, vreg);
  }
  c->depth--;
  return rc;
}

/* Whether a member's value must be written: something outside the group uses it. */
static bool needs_store(const cg *c, uint32_t v) {
  const opd__gvalue *val = &c->g->values[v];
  if (val->output_uses) return true;
  for (uint32_t i = 0; i < val->nusers; i++) {
    const opd__gnode *u = &c->g->nodes[val->users[i]];
    if (c->member[val->users[i]]) continue;
    if (!u->is_view || u->nouts != 1) return true;
    if (needs_store(c, u->first_out)) return true;
  }
  return false;
}

/* A probe that covers a value of `numel` elements exactly once, from offset 0. */
static bool bijective(const opd__geo *probe, int64_t numel) {
  if (probe->offset != 0) return false;
  int64_t total = 1, expect = 1;
  bool used[OPD__PW_MAX_DIMS] = {false};
  for (int d = 0; d < probe->ndim; d++) total *= probe->sizes[d];
  if (total != numel) return false;
  for (int k = 0; k < probe->ndim; k++) { /* strides, smallest first, must be dense */
    int best = -1;
    for (int d = 0; d < probe->ndim; d++)
      if (!used[d] && probe->sizes[d] > 1 && (best < 0 || probe->strides[d] < probe->strides[best]))
        best = d;
    if (best < 0) break;
    used[best] = true;
    if (probe->strides[best] != expect) return false;
    expect *= probe->sizes[best];
  }
  return true;
}

/* The register allocation: virtual registers to at most OPD__PW_MAX_REGS tiles. An
 * instruction's destination never shares a tile with its sources. */
static int allocate_registers(opd__pw_program *p, uint32_t nvregs) {
  uint32_t *last = opd__malloc((nvregs ? nvregs : 1) * sizeof *last);
  uint8_t *phys = opd__malloc(nvregs ? nvregs : 1);
  if (!last || !phys) {
    opd__free(last);
    opd__free(phys);
    return opd_error(OPD_ENOMEM, "out of memory allocating registers");
  }
  if (nvregs > 255) {
    opd__free(last);
    opd__free(phys);
    return fail("more values than a program numbers");
  }
  for (uint32_t v = 0; v < nvregs; v++) last[v] = UINT32_MAX;
  for (uint32_t i = 0; i < p->ncode; i++)
    for (uint32_t s = 0; s < p->code[i].nsrc && s < 3; s++)
      if (!(p->code[i].imm_mask >> s & 1)) last[p->code[i].src[s]] = i;
  uint32_t free_mask = (1u << OPD__PW_MAX_REGS) - 1, used = 0;
  int rc = 0;
  for (uint32_t i = 0; i < p->ncode && rc == 0; i++) {
    opd__pw_instr *ins = &p->code[i];
    uint8_t src_phys[3] = {0, 0, 0};
    for (uint32_t s = 0; s < ins->nsrc && s < 3; s++)
      if (!(ins->imm_mask >> s & 1)) src_phys[s] = phys[ins->src[s]];
    if (ins->op != OPD__PW_STORE) {
      if (!free_mask) {
        rc = fail("more live values than registers");
        break;
      }
      uint8_t r = (uint8_t)__builtin_ctz(free_mask);
      free_mask &= ~(1u << r);
      phys[ins->dst] = r;
      if (r + 1u > used) used = r + 1u;
      if (last[ins->dst] == UINT32_MAX) free_mask |= 1u << r; /* never read */
      ins->dst = r;
    }
    for (uint32_t s = 0; s < ins->nsrc && s < 3; s++) {
      if (ins->imm_mask >> s & 1) continue;
      uint32_t v = ins->src[s];
      ins->src[s] = src_phys[s];
      if (last[v] == i) free_mask |= 1u << src_phys[s];
    }
  }
  p->nregs = used;
  opd__free(last);
  opd__free(phys);
  return rc;
}

static int store(cg *c, uint32_t v, uint32_t vreg, const opd__geo *probe) {
  opd__pw_program *p = c->p;
  int rc = grow((void **)&p->stores, &c->cap_stores, p->nstores + 1, sizeof *p->stores);
  if (rc) return rc;
  opd__pw_store *s = &p->stores[p->nstores];
  *s = (opd__pw_store){.value = v};
  memcpy(s->strides, probe->strides, (size_t)probe->ndim * sizeof *s->strides);
  rc = emit(c, &(opd__pw_instr){
                   .op = OPD__PW_STORE, .nsrc = 1, .src = {(uint8_t)vreg}, .aux = p->nstores});
  p->nstores++;
  return rc < 0 ? rc : 0;
}

static int build(cg *c, const uint32_t *members, uint32_t n) {
  const opd_graph *g = c->g;
  if (n > OPD__PW_MAX_MEMBERS) return fail("more members than a fused program takes");
  uint32_t stored[OPD__PW_MAX_MEMBERS], nstored = 0, root = UINT32_MAX;
  for (uint32_t i = 0; i < n; i++) {
    uint32_t v = g->nodes[members[i]].first_out;
    if (!needs_store(c, v)) continue;
    stored[nstored++] = v;
    if (root == UINT32_MAX || g->values[v].meta->numel >= g->values[root].meta->numel) root = v;
  }
  if (root == UINT32_MAX) return fail("a group whose values nothing uses");
  const opd_tensor *rt = g->values[root].meta;
  if (rt->ndim > OPD__PW_MAX_DIMS) return fail("an iteration space of too many dimensions");
  opd__pw_program *p = c->p;
  p->ndim = rt->ndim;
  memcpy(p->sizes, opd_tensor_sizes(rt), (size_t)rt->ndim * sizeof *p->sizes);
  p->numel = rt->numel;
  uint32_t vreg;
  int rc = gen(c, root, NULL, &vreg);
  for (uint32_t i = 0; i < nstored && rc == 0; i++) {
    uint32_t v = stored[i];
    const instance *found = NULL;
    for (uint32_t k = 0; k < c->ninst && !found; k++)
      if (c->inst[k].value == v && bijective(&c->inst[k].probe, g->values[v].meta->numel))
        found = &c->inst[k];
    if (!found) {
      const opd_tensor *t = g->values[v].meta;
      if (t->ndim != rt->ndim ||
          memcmp(opd_tensor_sizes(t), opd_tensor_sizes(rt), t->ndim * sizeof(int64_t)))
        return fail("a value to store that the iteration space does not cover once");
      if ((rc = gen(c, v, NULL, &vreg))) return rc;
      for (uint32_t k = 0; k < c->ninst && !found; k++)
        if (c->inst[k].value == v && bijective(&c->inst[k].probe, t->numel)) found = &c->inst[k];
      if (!found) return fail("a value to store that the iteration space does not cover once");
    }
    opd__geo probe = found->probe;
    rc = store(c, v, found->vreg, &probe);
  }
  if (rc == 0) rc = allocate_registers(p, c->nvregs);
  return rc;
}

int opd__pw_compile(const opd_graph *g, const uint32_t *members, uint32_t n, bool dry,
                    opd__pw_program *out) {
  bool *member = opd__calloc(g->nnodes ? g->nnodes : 1, sizeof *member);
  if (!member) return opd_error(OPD_ENOMEM, "out of memory building a fused program");
  for (uint32_t i = 0; i < n; i++) member[members[i]] = true;
  *out = (opd__pw_program){0};
  cg c = {.g = g, .member = member, .p = out};
  int rc = build(&c, members, n);
  opd__free(c.inst);
  opd__free(member);
  if (rc || dry) opd__pw_program_free(out);
  return rc;
}

void opd__pw_program_free(opd__pw_program *p) {
  opd__free(p->code);
  opd__free(p->loads);
  opd__free(p->stores);
  opd__free(p->steps);
  *p = (opd__pw_program){0};
}

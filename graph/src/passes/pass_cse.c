/* pass_cse.c: common subexpression elimination ([Note: The pass pipeline] in
 * pass_manager.c). Graph nodes are functional (the builder refuses operators that write
 * their arguments), so two live nodes of the same operator with equal arguments (the same
 * references, constants equal as opd_iv_equal says: tensors by identity, floats bit for bit)
 * compute the same values: the later one's uses move to the earlier one and it is removed.
 * Nodes are visited in order, so arguments already merged compare equal, and a chain of
 * duplicates folds in one pass. Two graph outputs are never merged into one tensor. Hits:
 * nodes removed. */
#include <string.h>

#include "passes/compile.h"
#include "opd/error.h"
#include "opd/memory.h"

static uint64_t mix(uint64_t h, uint64_t v) {
  h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
  return h;
}

static uint64_t hash_bytes(uint64_t h, const void *p, size_t n) {
  const unsigned char *b = p;
  for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * 0x100000001b3ull;
  return h;
}

static uint64_t hash_value(uint64_t h, const opd_ivalue *v) {
  h = mix(h, v->tag);
  switch ((opd_iv_tag)v->tag) {
  case OPD_IV_STRING: return hash_bytes(h, v->u.s, v->len);
  case OPD_IV_INT_LIST: return hash_bytes(h, v->u.ints, v->len * sizeof *v->u.ints);
  case OPD_IV_DOUBLE_LIST: return hash_bytes(h, v->u.doubles, v->len * sizeof *v->u.doubles);
  case OPD_IV_BOOL_LIST: return hash_bytes(h, v->u.bools, v->len * sizeof *v->u.bools);
  case OPD_IV_TENSOR_LIST:
  case OPD_IV_OPT_TENSOR_LIST: return hash_bytes(h, v->u.tensors, v->len * sizeof *v->u.tensors);
  case OPD_IV_NONE: return h;
  case OPD_IV_BOOL: return mix(h, v->u.b);
  case OPD_IV_DEVICE: return mix(mix(h, (uint64_t)v->u.device.type), (uint64_t)v->u.device.index);
  default: return mix(h, (uint64_t)v->u.i); /* int, double bits, dtype, tensor pointer */
  }
}

static uint64_t hash_node(const opd__gnode *n) {
  uint64_t h = mix(0, n->opi);
  for (uint32_t i = 0; i < n->nargs; i++) {
    const opd__garg *a = &n->args[i];
    h = mix(h, a->kind);
    if (a->kind == OPD__GA_REF) h = mix(h, a->ref);
    if (a->kind == OPD__GA_REFS) h = hash_bytes(h, a->refs, a->nrefs * sizeof *a->refs);
    if (a->kind == OPD__GA_CONST || a->kind == OPD__GA_WRAPPED) h = hash_value(h, &a->value);
  }
  return h;
}

static bool same_node(const opd__gnode *a, const opd__gnode *b) {
  if (a->opi != b->opi || a->nargs != b->nargs || a->nouts != b->nouts) return false;
  for (uint32_t i = 0; i < a->nargs; i++) {
    const opd__garg *x = &a->args[i], *y = &b->args[i];
    if (x->kind != y->kind) return false;
    switch ((opd__garg_kind)x->kind) {
    case OPD__GA_REF:
      if (x->ref != y->ref) return false;
      break;
    case OPD__GA_REFS:
      if (x->nrefs != y->nrefs || memcmp(x->refs, y->refs, x->nrefs * sizeof *x->refs))
        return false;
      break;
    case OPD__GA_WRAPPED:
      if (x->wrapped_dtype != y->wrapped_dtype) return false;
      /* fall through */
    case OPD__GA_CONST:
      if (!opd_iv_equal(&x->value, &y->value)) return false;
      break;
    }
  }
  return true;
}

/* Merging dup into orig would make two graph outputs one tensor. */
static bool merges_outputs(const opd_graph *g, const opd__gnode *orig, const opd__gnode *dup) {
  for (uint32_t o = 0; o < dup->nouts; o++)
    if (g->values[dup->first_out + o].output_uses && g->values[orig->first_out + o].output_uses)
      return true;
  return false;
}

int opd__pass_cse(opd__compile *c, uint64_t *hits) {
  opd_graph *g = c->g;
  uint32_t cap = 16;
  while (cap < 2 * g->nnodes) cap *= 2;
  uint32_t *table = opd__malloc(cap * sizeof *table);
  uint64_t *hashes = opd__malloc(cap * sizeof *hashes);
  if (!table || !hashes) {
    opd__free(table);
    opd__free(hashes);
    return opd_error(OPD_ENOMEM, "out of memory for common subexpression elimination");
  }
  memset(table, 0xff, cap * sizeof *table);
  int rc = 0;
  for (uint32_t n = 0; n < g->nnodes && rc == 0; n++) {
    opd__gnode *node = &g->nodes[n];
    if (node->dead) continue;
    uint64_t h = hash_node(node);
    uint32_t slot = (uint32_t)h & (cap - 1), found = UINT32_MAX;
    for (; table[slot] != UINT32_MAX; slot = (slot + 1) & (cap - 1))
      if (hashes[slot] == h && same_node(&g->nodes[table[slot]], node)) {
        found = table[slot];
        break;
      }
    if (found == UINT32_MAX) {
      table[slot] = n;
      hashes[slot] = h;
      continue;
    }
    const opd__gnode *orig = &g->nodes[found];
    if (merges_outputs(g, orig, node)) continue;
    for (uint32_t o = 0; o < node->nouts && rc == 0; o++) {
      rc = opd__graph_replace_uses(g, node->first_out + o, orig->first_out + o);
      if (rc == 0) opd__graph_reroot(g, node->first_out + o, orig->first_out + o);
    }
    if (rc == 0) {
      opd__graph_erase_node(g, n);
      (*hits)++;
    }
  }
  opd__free(table);
  opd__free(hashes);
  return rc;
}

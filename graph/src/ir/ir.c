/* ir.c: the graph IR's users lists and the mutations passes make ([Note: The graph IR] in
 * graph_internal.h), the table of a graph's operators, and freeing a graph. */
#include <stdio.h>
#include <string.h>

#include "ir/graph_internal.h"
#include "opd/error.h"
#include "opd/memory.h"

int opd__gvalue_add_user(opd_graph *g, uint32_t v, uint32_t n) {
  opd__gvalue *val = &g->values[v];
  for (uint32_t i = 0; i < val->nusers; i++)
    if (val->users[i] == n) return 0;
  if (val->nusers == val->cap_users) {
    uint32_t cap = val->cap_users ? val->cap_users * 2 : 4;
    uint32_t *p = opd__realloc(val->users, cap * sizeof *p);
    if (!p) return opd_error(OPD_ENOMEM, "out of memory for a graph value's users");
    val->users = p;
    val->cap_users = cap;
  }
  val->users[val->nusers++] = n;
  return 0;
}

void opd__gvalue_remove_user(opd_graph *g, uint32_t v, uint32_t n) {
  opd__gvalue *val = &g->values[v];
  for (uint32_t i = 0; i < val->nusers; i++)
    if (val->users[i] == n) {
      memmove(&val->users[i], &val->users[i + 1], (val->nusers - i - 1) * sizeof *val->users);
      val->nusers--;
      return;
    }
}

bool opd__gnode_uses(const opd_graph *g, const opd__gnode *n, uint32_t v) {
  (void)g;
  opd__ref_iter it = {n, 0, 0};
  uint32_t w;
  while (opd__next_ref(&it, &w))
    if (w == v) return true;
  return false;
}

int opd__graph_replace_uses(opd_graph *g, uint32_t from, uint32_t to) {
  if (from == to) return 0;
  opd__gvalue *src = &g->values[from];
  /* users first gain `to`, so that a failure leaves every list consistent */
  for (uint32_t i = 0; i < src->nusers; i++) {
    int rc = opd__gvalue_add_user(g, to, src->users[i]);
    if (rc) return rc;
  }
  for (uint32_t i = 0; i < src->nusers; i++) {
    opd__gnode *n = &g->nodes[src->users[i]];
    for (uint32_t a = 0; a < n->nargs; a++) {
      opd__garg *arg = &n->args[a];
      if (arg->kind == OPD__GA_REF && arg->ref == from) arg->ref = to;
      if (arg->kind == OPD__GA_REFS)
        for (uint32_t j = 0; j < arg->nrefs; j++)
          if (arg->refs[j] == from) arg->refs[j] = to;
    }
  }
  src->nusers = 0;
  for (uint32_t i = 0; i < g->noutputs; i++)
    if (g->outputs[i] == from) g->outputs[i] = to;
  g->values[to].output_uses += src->output_uses;
  src->output_uses = 0;
  return 0;
}

/* Removes node n from the users of every value it references. */
static void drop_uses(opd_graph *g, uint32_t n) {
  opd__ref_iter it = {&g->nodes[n], 0, 0};
  uint32_t v;
  while (opd__next_ref(&it, &v)) opd__gvalue_remove_user(g, v, n);
}

void opd__gargs_destroy(opd__garg *args, uint32_t n) {
  for (uint32_t i = 0; i < n; i++) opd__garg_destroy(&args[i]);
  opd__free(args);
}

void opd__graph_erase_node(opd_graph *g, uint32_t n) {
  opd__gnode *node = &g->nodes[n];
  drop_uses(g, n);
  opd__gargs_destroy(node->args, node->nargs);
  node->args = NULL;
  node->nargs = 0;
  node->dead = true;
}

int opd__gnode_add_uses(opd_graph *g, uint32_t n) {
  opd__ref_iter it = {&g->nodes[n], 0, 0};
  uint32_t v;
  int rc = 0;
  while (rc == 0 && opd__next_ref(&it, &v)) rc = opd__gvalue_add_user(g, v, n);
  return rc;
}

int opd__graph_rewrite_node(opd_graph *g, uint32_t n, const opd_operator *op, opd__garg *args,
                            uint32_t nargs, uint8_t origin) {
  uint32_t opi;
  int rc = opd__graph_op_index(g, op, &opi);
  if (rc) {
    opd__gargs_destroy(args, nargs);
    return rc;
  }
  opd__gnode *node = &g->nodes[n], saved = *node;
  node->opi = opi;
  node->args = args;
  node->nargs = nargs;
  opd_tensor *res[4];
  uint32_t nres = 0;
  rc = opd__graph_infer(g, n, res, 4, &nres);
  if (rc == 0 && nres != saved.nouts) {
    char label[160];
    rc = opd_error(OPD_EINTERNAL, "%s: a rewrite changed its number of outputs",
                   opd__gnode_label(g, n, label, sizeof label));
  }
  if (rc) {
    for (uint32_t i = 0; i < nres; i++) opd_tensor_release(res[i]);
    *node = saved;
    opd__gargs_destroy(args, nargs);
    return rc;
  }
  node->args = saved.args;
  node->nargs = saved.nargs;
  drop_uses(g, n);
  opd__gargs_destroy(saved.args, saved.nargs);
  node->args = args;
  node->nargs = nargs;
  node->origin = origin;
  for (uint32_t i = 0; i < nres; i++) {
    opd__gvalue *v = &g->values[node->first_out + i];
    opd_tensor_release(v->meta);
    v->meta = res[i];
  }
  return opd__gnode_add_uses(g, n);
}

const opd_operator *opd__graph_find_op(const char *name) {
  const opd_operator *op = opd_find_op(name);
  return op && opd_op_schema(op) ? op : NULL;
}

int opd__graph_op_index(opd_graph *g, const opd_operator *op, uint32_t *index) {
  for (uint32_t i = 0; i < g->nops; i++)
    if (g->ops[i].op == op) {
      *index = i;
      return 0;
    }
  const opd_schema *s = opd_op_schema(op);
  if (!s) return opd_error(OPD_ENOENT, "operator %s has no schema (deregistered)", opd_op_name(op));
  if (g->nops == g->cap_ops) {
    uint32_t cap = g->cap_ops ? g->cap_ops * 2 : 8;
    opd__gop *p = opd__realloc(g->ops, cap * sizeof *p);
    if (!p) return opd_error(OPD_ENOMEM, "out of memory for a graph's operator table");
    g->ops = p;
    g->cap_ops = cap;
  }
  char text[OPD_SCHEMA_MAX_LEN + 1];
  opd_schema *copy = NULL;
  int rc = opd_schema_format(s, text, sizeof text) >= (int)sizeof text
               ? opd_error(OPD_EINVAL, "the schema of %s is too long", opd_op_name(op))
               : opd_schema_parse(text, &copy);
  if (rc) return rc;
  g->ops[g->nops] = (opd__gop){op, copy, opd_op_generation(op), opd_op_name(op)};
  *index = g->nops++;
  return 0;
}

void opd__garg_destroy(opd__garg *a) {
  opd_iv_destroy(&a->value);
  opd__free(a->refs);
  if (a->meta) opd_tensor_release(a->meta);
  if (a->cpu) opd_tensor_release(a->cpu);
  *a = (opd__garg){0};
}

const char *opd__gnode_label(const opd_graph *g, uint32_t n, char *buf, size_t len) {
  snprintf(buf, len, "graph node %u (%s)", n, g->ops[g->nodes[n].opi].name);
  return buf;
}

bool opd__garg_int(const opd__garg *a, int64_t *out) {
  if (a->kind != OPD__GA_CONST || a->value.tag != OPD_IV_INT) return false;
  *out = a->value.u.i;
  return true;
}

bool opd__garg_bool(const opd__garg *a, bool *out) {
  if (a->kind != OPD__GA_CONST || a->value.tag != OPD_IV_BOOL) return false;
  *out = a->value.u.b;
  return true;
}

bool opd__garg_int_list(const opd__garg *a, const int64_t **data, uint32_t *len) {
  if (a->kind != OPD__GA_CONST || a->value.tag != OPD_IV_INT_LIST) return false;
  *data = a->value.u.ints;
  *len = a->value.len;
  return true;
}

bool opd__garg_number(const opd__garg *a, double *out) {
  if (a->kind != OPD__GA_WRAPPED && a->kind != OPD__GA_CONST) return false;
  const opd_ivalue *v = &a->value;
  if (v->tag == OPD_IV_DOUBLE)
    *out = v->u.d;
  else if (v->tag == OPD_IV_INT)
    *out = (double)v->u.i;
  else if (v->tag == OPD_IV_BOOL)
    *out = v->u.b;
  else
    return false;
  return true;
}

bool opd__gvalue_same_meta(const opd_graph *g, uint32_t a, uint32_t b) {
  const opd_tensor *x = g->values[a].meta, *y = g->values[b].meta;
  return x->dtype == y->dtype && x->ndim == y->ndim && x->storage_offset == y->storage_offset &&
         g->values[a].device.type == g->values[b].device.type &&
         g->values[a].device.index == g->values[b].device.index &&
         memcmp(x->dims, y->dims, 2 * (size_t)x->ndim * sizeof *x->dims) == 0;
}

void opd_graph_free(opd_graph *g) {
  if (!g) return;
  for (uint32_t n = 0; n < g->nnodes; n++) opd__gargs_destroy(g->nodes[n].args, g->nodes[n].nargs);
  for (uint32_t v = 0; v < g->nvalues; v++) {
    if (g->values[v].meta) opd_tensor_release(g->values[v].meta);
    opd__free(g->values[v].users);
  }
  for (uint32_t i = 0; i < g->nops; i++) opd_schema_free(g->ops[i].schema);
  opd__free(g->inputs);
  opd__free(g->values);
  opd__free(g->nodes);
  opd__free(g->ops);
  opd__free(g->outputs);
  opd__free(g);
}

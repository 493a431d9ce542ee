/* outputs.c: what a run of a compiled graph hands its caller: the outputs that may share
 * the graph's own memory (found when it is compiled), and their copies at run time.
 *
 * [Note: A compiled graph's memory never reaches a caller]
 * A compiled graph is shared by every caller that defined the same graph (the cache), so
 * the memory it keeps must never reach one of them: a caller holding it could read what
 * another caller's later run wrote there, or write what every later run reads. It keeps
 * two kinds: its constants (literal tensors and the 0-d tensors of wrapped numbers, read by
 * every run) and each run context's planned buffers (reused by the next run). A run's
 * outputs are therefore fresh tensors, views of the caller's own inputs, or copies: an
 * output whose storage is one the graph keeps is cloned before it is handed over.
 *
 * Which storage an output has is known only at run time: the define-time root of a value
 * (its Meta storage) misses aliases that only the run makes (`contiguous` and `reshape`
 * return their argument, or a view of it, when its run-time layout allows, and a planned
 * value's run-time layout is not its Meta layout), and a plugin's kernel may return a view
 * of any argument. So compiling decides, conservatively, which outputs may share the
 * graph's memory (a value is *tainted* when it is planned, when its node reads a constant
 * or a wrapped number, or when it reads a tainted value), and a run looks only those up in
 * its context's sorted list of the storages the graph keeps: an output that depends on no
 * constant and no planned buffer costs nothing, one that does a binary search, and only an
 * output that does share the graph's memory is copied.
 */
#include <stdio.h>
#include <stdlib.h>

#include "exec/compiled.h"
#include "opd/error.h"
#include "opd/memory.h"

/* Appends the storage of a constant tensor to cg->constants: an empty one too, which holds no
 * bytes but is still one storage, shared by every caller of the graph. */
static int add_constant(opd_compiled_graph *cg, uint32_t *cap, const opd_tensor *t) {
  if (!t || !t->storage) return 0;
  if (cg->nconstants == *cap) {
    uint32_t c = *cap ? *cap * 2 : 16;
    const opd_storage **s = opd__realloc(cg->constants, c * sizeof *s);
    if (!s) return opd_error(OPD_ENOMEM, "out of memory compiling a graph's outputs");
    cg->constants = s;
    *cap = c;
  }
  cg->constants[cg->nconstants++] = t->storage;
  return 0;
}

/* Constant tensor lists are refused by the builder: a constant tensor is one tensor. */
static bool reads_constant(const opd__garg *a) {
  return a->kind == OPD__GA_WRAPPED || (a->kind == OPD__GA_CONST && a->value.tag == OPD_IV_TENSOR);
}

int opd__outputs_plan(opd_compiled_graph *cg) {
  const opd_graph *g = cg->g;
  const opd__plan *p = cg->plan;
  uint8_t *tainted = opd__calloc(g->nvalues ? g->nvalues : 1, 1);
  cg->out_checked = opd__calloc(g->noutputs ? g->noutputs : 1, 1);
  if (!tainted || !cg->out_checked) {
    opd__free(tainted);
    return opd_error(OPD_ENOMEM, "out of memory compiling a graph's outputs");
  }
  uint32_t cap = 0;
  int rc = 0;
  for (uint32_t n = 0; n < g->nnodes && rc == 0; n++) { /* node order is topological */
    const opd__gnode *node = &g->nodes[n];
    if (node->dead) continue;
    bool t = false;
    for (uint32_t i = 0; i < node->nargs && rc == 0; i++) {
      const opd__garg *a = &node->args[i];
      if (reads_constant(a)) t = true;
      if (a->kind == OPD__GA_REF) t = t || tainted[a->ref];
      for (uint32_t j = 0; a->kind == OPD__GA_REFS && j < a->nrefs; j++)
        t = t || tainted[a->refs[j]];
      if (a->kind == OPD__GA_WRAPPED) rc = add_constant(cg, &cap, a->cpu);
      if (a->kind == OPD__GA_CONST && a->value.tag == OPD_IV_TENSOR)
        rc = add_constant(cg, &cap, a->value.u.t);
    }
    for (uint32_t k = 0; k < node->nouts; k++) {
      uint32_t v = node->first_out + k;
      tainted[v] = t || p->buffer_of[v] >= 0;
    }
  }
  for (uint32_t i = 0; i < g->noutputs; i++) cg->out_checked[i] = tainted[g->outputs[i]];
  opd__free(tainted);
  return rc;
}

static int storage_order(const void *a, const void *b) {
  uintptr_t x = (uintptr_t) * (const opd_storage *const *)a,
            y = (uintptr_t) * (const opd_storage *const *)b;
  return x < y ? -1 : x > y;
}

int opd__outputs_ctx_init(const opd_compiled_graph *cg, opd__run_ctx *ctx) {
  uint32_t nb = cg->plan->nbuffers, n = cg->nconstants + nb;
  ctx->kept = opd__malloc((n ? n : 1) * sizeof *ctx->kept);
  if (!ctx->kept) return opd_error(OPD_ENOMEM, "out of memory for a graph run");
  for (uint32_t i = 0; i < cg->nconstants; i++) ctx->kept[i] = cg->constants[i];
  for (uint32_t b = 0; b < nb; b++) ctx->kept[cg->nconstants + b] = ctx->buffers[b]->storage;
  qsort(ctx->kept, n, sizeof *ctx->kept, storage_order);
  ctx->nkept = n;
  return 0;
}

static bool kept_by_graph(const opd__run_ctx *ctx, const opd_storage *s) {
  uint32_t lo = 0, hi = ctx->nkept;
  while (lo < hi) {
    uint32_t mid = lo + (hi - lo) / 2;
    if (ctx->kept[mid] == s) return true;
    if ((uintptr_t)ctx->kept[mid] < (uintptr_t)s)
      lo = mid + 1;
    else
      hi = mid;
  }
  return false;
}

/* A copy of t in a storage of its own (aten::clone, preserving its layout). */
static int copy_out(const opd_tensor *t, opd_tensor **out) {
  const opd_operator *clone = opd__graph_find_op("aten::clone");
  if (!clone) return opd_error(OPD_ENOENT, "aten::clone is not defined");
  opd_stack st;
  opd_stack_init(&st);
  opd_stack_push(&st, opd_iv_tensor_borrow((opd_tensor *)t));
  opd_stack_push(&st, opd_iv_none());
  int rc = opd_call_boxed(clone, &st);
  if (rc == 0 && (st.size != 1 || st.items[0].tag != OPD_IV_TENSOR))
    rc = opd_error(OPD_EINTERNAL, "aten::clone returned no tensor");
  if (rc == 0) opd_tensor_retain(*out = st.items[0].u.t);
  opd_stack_destroy(&st);
  return rc;
}

int opd__outputs_hand_over(const opd_compiled_graph *cg, const opd__run_ctx *ctx,
                           opd_tensor **outputs) {
  const opd_graph *g = cg->g;
  int rc = 0;
  uint32_t i = 0;
  for (; i < g->noutputs && rc == 0; i++) {
    opd_tensor *t = ctx->vals[g->outputs[i]];
    if (cg->out_checked[i] && t->storage && kept_by_graph(ctx, t->storage))
      rc = copy_out(t, &outputs[i]);
    else
      opd_tensor_retain(outputs[i] = t);
  }
  if (rc) {
    char msg[300];
    snprintf(msg, sizeof msg, "%s", opd_last_error());
    for (uint32_t k = 0; k + 1 < i; k++) opd_tensor_release(outputs[k]);
    return opd_error(rc, "graph %llu: copying output %u: %s", (unsigned long long)cg->id, i - 1,
                     msg);
  }
  return 0;
}

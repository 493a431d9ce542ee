/* exec.c: running a compiled graph's plan (opd_compiled_graph_run).
 *
 * [Note: Runs of a compiled graph]
 * A run checks its inputs against the graph's input specs (count, dtype, sizes, device;
 * any layout is accepted: kernels, views and fused programs read strides), then takes the
 * plan's steps in order ([Note: The lowered plan] in lower.c) with a run context: the
 * tensor of every value of this run, the planned buffers of fused groups and a view of them
 * for each planned value. The compiled graph keeps one context and reuses it for the next
 * run, so a run allocates only what the kernels it calls make (their outputs and the
 * argument lists a boxed call consumes) and the outputs fused groups give the caller:
 * planned buffers are allocated once, by the first run. Runs of one graph from several
 * threads are independent: a run that finds the kept context taken makes one of its own,
 * charged to it and freed when it ends ([Note: Run contexts of concurrent runs]). Nothing is
 * validated or inferred
 * again. Errors name the node (and its operator) whose kernel failed.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "exec/compiled.h"
#include "opd/cancel.h"
#include "opd/allocator.h"
#include "opd/error.h"
#include "opd/memory.h"

/* [Note: Run contexts of concurrent runs]
 * A compiled graph's charge counts one run context ([Note: The charge of a graph] in
 * footprint.c), which it keeps for the next run. A run that finds it taken by a concurrent
 * run (another worker's, of this session or of another sharing the graph) makes one of its
 * own, which is charged to the run that makes it before it is made: its host bytes are
 * reserved against the budget installed on the thread (the session's max_bytes_held in the
 * daemon) and counted as CPU memory in use (max_bytes_total), and its planned buffers are
 * tensors, charged like every other while the budget is installed. Over a limit the run
 * fails with RESOURCE_EXHAUSTED naming it. Such a context is freed when its run ends, and
 * its charges given back: the graph keeps only the context its charge counts, so what it
 * holds between runs does not grow with the runs that once overlapped. */
static int ctx_charge_extra(opd_compiled_graph *cg, uint64_t *bytes, opd_mem_budget **budget) {
  *bytes = opd__run_ctx_host_bytes(cg);
  *budget = opd_mem_budget_current();
  int rc = *budget ? opd_mem_budget_reserve(*budget, *bytes) : 0;
  if (rc == 0 && (rc = opd_cpu_allocator_reserve(*bytes)) != 0 && *budget)
    opd_mem_budget_release(*budget, *bytes);
  if (rc) {
    char msg[400];
    snprintf(msg, sizeof msg, "%s", opd_last_error());
    return opd_error(rc,
                     "graph %" PRIu64 ": a run concurrent with another needs a run context of "
                     "its own, %" PRIu64 " bytes and its planned buffers: %s",
                     cg->id, *bytes, msg);
  }
  return 0;
}

static void ctx_uncharge_extra(opd__run_ctx *ctx) {
  if (!ctx->extra_bytes) return;
  if (ctx->budget) opd_mem_budget_release(ctx->budget, ctx->extra_bytes);
  opd_cpu_allocator_unreserve(ctx->extra_bytes);
  ctx->extra_bytes = 0;
}

static void ctx_free(const opd_compiled_graph *cg, opd__run_ctx *ctx) {
  if (!ctx) return;
  ctx_uncharge_extra(ctx);
  const opd__plan *p = cg->plan;
  for (uint32_t v = 0; v < cg->g->nvalues; v++) {
    if (ctx->vals && ctx->vals[v]) opd_tensor_release(ctx->vals[v]);
    if (ctx->planned && ctx->planned[v]) opd_tensor_release(ctx->planned[v]);
  }
  for (uint32_t b = 0; ctx->buffers && b < p->nbuffers; b++)
    if (ctx->buffers[b]) opd_tensor_release(ctx->buffers[b]);
  opd__free(ctx->vals);
  opd__free(ctx->buffers);
  opd__free(ctx->planned);
  opd__free(ctx->kept);
  opd__free(ctx);
}

/* A new context with its planned buffers: tensors of their values' dtype ([Note: Buffer
 * planning] in pass_buffers.c), viewed by the values planned in them. */
static int ctx_new(const opd_compiled_graph *cg, opd__run_ctx **out) {
  const opd__plan *p = cg->plan;
  const opd_graph *g = cg->g;
  opd__run_ctx *ctx = opd__calloc(1, sizeof *ctx);
  uint32_t nv = g->nvalues ? g->nvalues : 1;
  if (ctx) {
    ctx->vals = opd__calloc(nv, sizeof *ctx->vals);
    ctx->planned = opd__calloc(nv, sizeof *ctx->planned);
    ctx->buffers = opd__calloc(p->nbuffers ? p->nbuffers : 1, sizeof *ctx->buffers);
  }
  if (!ctx || !ctx->vals || !ctx->planned || !ctx->buffers) {
    ctx_free(cg, ctx);
    return opd_error(OPD_ENOMEM, "out of memory for a graph run");
  }
  int rc = 0;
  for (uint32_t b = 0; b < p->nbuffers && rc == 0; b++) {
    opd_dtype dt = (opd_dtype)p->buffer_dtype[b];
    int64_t n = (int64_t)(p->buffer_bytes[b] / opd_dtype_size(dt));
    rc = opd_tensor_empty(&n, 1, dt, (opd_device){OPD_DEVICE_CPU, -1}, &ctx->buffers[b]);
  }
  for (uint32_t v = 0; v < g->nvalues && rc == 0; v++) {
    if (p->buffer_of[v] < 0) continue;
    const opd_tensor *m = g->values[v].meta;
    int64_t strides[OPD_MAX_DIMS];
    opd_contiguous_strides(opd_tensor_sizes(m), m->ndim, strides);
    rc = opd_tensor_view_of(ctx->buffers[p->buffer_of[v]], opd_tensor_sizes(m), strides, m->ndim, 0,
                            &ctx->planned[v]);
  }
  if (rc == 0) rc = opd__outputs_ctx_init(cg, ctx);
  if (rc) {
    ctx_free(cg, ctx);
    return rc;
  }
  *out = ctx;
  return 0;
}

static int ctx_get(opd_compiled_graph *cg, opd__run_ctx **out) {
  pthread_mutex_lock(&cg->lock);
  opd__run_ctx *ctx = cg->spare;
  if (ctx) cg->spare = ctx->next;
  bool extra = !ctx && cg->contexts > 0;
  if (!ctx) cg->contexts++; /* counted before it is made: a concurrent run sees it */
  pthread_mutex_unlock(&cg->lock);
  uint64_t owner = opd_mem_owner_current();
  if (ctx) {
    /* another session's last run left its values in the planned buffers ([Note: Memory
     * cleared between owners] in opd/allocator.h) */
    for (uint32_t b = 0; ctx->owner != owner && b < cg->plan->nbuffers; b++)
      memset(opd_tensor_data(ctx->buffers[b]), 0, ctx->buffers[b]->storage->nbytes);
    ctx->owner = owner;
    *out = ctx;
    return 0;
  }
  uint64_t bytes = 0;
  opd_mem_budget *budget = NULL;
  int rc = extra ? ctx_charge_extra(cg, &bytes, &budget) : 0;
  if (rc == 0 && (rc = ctx_new(cg, out)) != 0 && extra) {
    if (budget) opd_mem_budget_release(budget, bytes);
    opd_cpu_allocator_unreserve(bytes);
  }
  if (rc) {
    pthread_mutex_lock(&cg->lock);
    cg->contexts--;
    pthread_mutex_unlock(&cg->lock);
    return rc;
  }
  (*out)->owner = owner;
  (*out)->extra_bytes = bytes;
  (*out)->budget = budget;
  return 0;
}

static void ctx_put(opd_compiled_graph *cg, opd__run_ctx *ctx) {
  for (uint32_t v = 0; v < cg->g->nvalues; v++)
    if (ctx->vals[v]) {
      opd_tensor_release(ctx->vals[v]);
      ctx->vals[v] = NULL;
    }
  if (ctx->extra_bytes) { /* [Note: Run contexts of concurrent runs] */
    ctx_free(cg, ctx);
    pthread_mutex_lock(&cg->lock);
    cg->contexts--;
    pthread_mutex_unlock(&cg->lock);
    return;
  }
  pthread_mutex_lock(&cg->lock);
  ctx->next = cg->spare;
  cg->spare = ctx;
  pthread_mutex_unlock(&cg->lock);
}

void opd__compiled_free_contexts(opd_compiled_graph *cg) {
  while (cg->spare) {
    opd__run_ctx *next = cg->spare->next;
    ctx_free(cg, cg->spare);
    cg->spare = next;
    cg->contexts--;
  }
}

/* Pushes argument a of a node for a run. */
static int push_arg(const opd__run_ctx *ctx, const opd__garg *a, opd_stack *st) {
  opd_ivalue v;
  int rc = 0;
  switch ((opd__garg_kind)a->kind) {
  case OPD__GA_REF:
    if (!ctx->vals[a->ref])
      return opd_error(OPD_EINTERNAL, "a graph value is used before it is computed");
    v = opd_iv_tensor_borrow(ctx->vals[a->ref]);
    break;
  case OPD__GA_WRAPPED: v = opd_iv_tensor_borrow(a->cpu); break;
  case OPD__GA_CONST:
    if (a->value.tag == OPD_IV_TENSOR)
      v = opd_iv_tensor_borrow(a->value.u.t);
    else
      rc = opd_iv_copy(&v, &a->value);
    break;
  case OPD__GA_REFS: {
    opd_tensor **ts = opd__malloc((a->nrefs ? a->nrefs : 1) * sizeof *ts);
    if (!ts) return opd_error(OPD_ENOMEM, "out of memory for a Tensor[] argument");
    for (uint32_t j = 0; j < a->nrefs && rc == 0; j++)
      if (!(ts[j] = ctx->vals[a->refs[j]]))
        rc = opd_error(OPD_EINTERNAL, "a graph value is used before it is computed");
    if (rc == 0) rc = opd_iv_make_tensor_list(&v, ts, a->nrefs, false);
    opd__free(ts);
    break;
  }
  }
  return rc ? rc : opd_stack_push(st, v);
}

/* The tensors of a result into vals[first..first+cap): how many. */
static int take(const opd_ivalue *r, opd_tensor **vals, uint32_t cap, uint32_t *k) {
  opd_tensor *const *ts = r->tag == OPD_IV_TENSOR ? &r->u.t : r->u.tensors;
  uint32_t n = r->tag == OPD_IV_TENSOR ? 1 : r->tag == OPD_IV_TENSOR_LIST ? r->len : UINT32_MAX;
  if (n == UINT32_MAX || n > cap - *k) return -1;
  for (uint32_t i = 0; i < n; i++) {
    opd_tensor_retain(ts[i]);
    vals[(*k)++] = ts[i];
  }
  return 0;
}

int opd__run_node(opd_compiled_graph *cg, opd__run_ctx *ctx, uint32_t n) {
  const opd_graph *g = cg->g;
  const opd__gnode *node = &g->nodes[n];
  opd_stack st;
  opd_stack_init(&st);
  int rc = 0;
  for (uint32_t i = 0; i < node->nargs && rc == 0; i++) rc = push_arg(ctx, &node->args[i], &st);
  if (rc == 0) rc = opd_call_boxed(g->ops[node->opi].op, &st);
  char label[160];
  if (rc) {
    char msg[400];
    snprintf(msg, sizeof msg, "%s", opd_last_error());
    opd_stack_destroy(&st);
    return opd_error(rc, "%s: %s", opd__gnode_label(g, n, label, sizeof label), msg);
  }
  uint32_t k = 0;
  opd_tensor **vals = &ctx->vals[node->first_out];
  for (uint32_t i = 0; i < st.size && rc == 0; i++)
    if (take(&st.items[i], vals, node->nouts, &k)) rc = -1;
  opd_stack_destroy(&st);
  if (rc || k != node->nouts) {
    for (uint32_t i = 0; i < k; i++) {
      opd_tensor_release(vals[i]);
      vals[i] = NULL;
    }
    return opd_error(OPD_EINTERNAL, "%s: its kernel returned other results than inference found",
                     opd__gnode_label(g, n, label, sizeof label));
  }
  return 0;
}

static void describe(const opd_tensor *t, char *buf, size_t len) {
  size_t used = (size_t)snprintf(buf, len, "%s[", opd_dtype_name(opd_tensor_dtype(t)));
  for (int d = 0; d < t->ndim && used < len; d++)
    used += (size_t)snprintf(buf + used, len - used, "%s%" PRId64, d ? ", " : "",
                             opd_tensor_sizes(t)[d]);
  if (used < len) snprintf(buf + used, len - used, "]");
}

/* A CUDA device's index matters (index -1 is device 0); the CPU has one. */
static bool same_device(opd_device got, opd_device want) {
  if (got.type != want.type) return false;
  return got.type != OPD_DEVICE_CUDA ||
         (got.index < 0 ? 0 : got.index) == (want.index < 0 ? 0 : want.index);
}

static const char *device_name(opd_device d, char *buf, size_t len) {
  if (d.type == OPD_DEVICE_CUDA)
    snprintf(buf, len, "CUDA:%d", d.index < 0 ? 0 : d.index);
  else
    snprintf(buf, len, "%s", opd_backend_name((opd_backend)d.type));
  return buf;
}

static int check_inputs(const opd_compiled_graph *cg, opd_tensor *const *inputs, uint32_t n) {
  const opd_graph *g = cg->g;
  if (n != g->ninputs)
    return opd_error(OPD_EINVAL, "graph %" PRIu64 ": %u inputs given, it takes %u", cg->id, n,
                     g->ninputs);
  for (uint32_t i = 0; i < n; i++) {
    const opd_tensor *want = g->values[i].meta, *got = inputs[i];
    if (!got) return opd_error(OPD_EINVAL, "graph input %u: no tensor", i);
    bool ok =
        got->dtype == want->dtype && got->ndim == want->ndim &&
        !memcmp(opd_tensor_sizes(got), opd_tensor_sizes(want), want->ndim * sizeof(int64_t)) &&
        same_device(opd_tensor_device(got), g->values[i].device);
    if (!ok) {
      char a[200], b[200], da[48], db[48];
      describe(want, a, sizeof a);
      describe(got, b, sizeof b);
      return opd_error(OPD_EINVAL, "graph input %u: expected %s on %s, got %s on %s", i, a,
                       device_name(g->values[i].device, da, sizeof da), b,
                       device_name(opd_tensor_device(got), db, sizeof db));
    }
  }
  return 0;
}

int opd_compiled_graph_run(opd_compiled_graph *cg, opd_tensor *const *inputs, uint32_t ninputs,
                           opd_tensor **outputs, uint32_t noutputs) {
  const opd_graph *g = cg->g;
  const opd__plan *p = cg->plan;
  int rc = check_inputs(cg, inputs, ninputs);
  if (rc) return rc;
  if (noutputs != g->noutputs)
    return opd_error(OPD_EINVAL, "graph %" PRIu64 ": room for %u outputs, it returns %u", cg->id,
                     noutputs, g->noutputs);
  opd__run_ctx *ctx;
  if ((rc = ctx_get(cg, &ctx))) return rc;
  for (uint32_t i = 0; i < ninputs; i++) {
    opd_tensor_retain(inputs[i]);
    ctx->vals[i] = inputs[i];
  }
  uint32_t kernels = 0;
  for (uint32_t s = 0; s < p->nsteps && rc == 0; s++) {
    const opd__step *st = &p->steps[s];
    if (opd_cancelled()) { /* [Note: Cancelling long work] in opd/cancel.h */
      rc = opd_cancelled_error("a graph run");
      break;
    }
    if (st->kind == OPD__STEP_GROUP) {
      uint32_t k = 0;
      rc = opd__run_group(cg, ctx, st->index, &k);
      kernels += k;
    } else {
      rc = opd__run_node(cg, ctx, st->index);
      kernels += st->kernel;
    }
    for (uint32_t f = 0; f < st->nfree; f++) {
      uint32_t v = p->frees[st->first_free + f];
      if (ctx->vals[v]) opd_tensor_release(ctx->vals[v]);
      ctx->vals[v] = NULL;
    }
  }
  if (rc == 0 && opd_cancelled()) rc = opd_cancelled_error("a graph run"); /* its last step's */
  for (uint32_t i = 0; i < noutputs && rc == 0; i++) {
    opd_tensor *t = ctx->vals[g->outputs[i]];
    if (!t)
      rc = opd_error(OPD_EINTERNAL, "graph %" PRIu64 ": output %u was not computed", cg->id, i);
  }
  if (rc == 0) rc = opd__outputs_hand_over(cg, ctx, outputs);
  ctx_put(cg, ctx);
  if (rc == 0) {
    atomic_fetch_add_explicit(&cg->runs, 1, memory_order_relaxed);
    atomic_store_explicit(&cg->kernels_last_run, kernels, memory_order_relaxed);
  }
  return rc;
}

/* lower.c: lowering ([Note: The pass pipeline] in pass_manager.c).
 *
 * [Note: The lowered plan]
 * A plan is the steps a run takes, made once when the graph is compiled, so that a run
 * neither validates nor infers anything again:
 *   - the schedule orders the units: each node in no group and each fused group, stably
 *     (among the units whose inputs are computed, the one whose first node comes first);
 *     a group's members and the views between them run together, where the last of the
 *     values it reads is ready, so values other kernels need from it are there before them;
 *   - a node step calls its operator through the dispatcher (a boxed call with its
 *     arguments: references to values of the run, constants, wrapped numbers as 0-d CPU
 *     tensors made here); a view's step makes the view the same way and launches no kernel;
 *   - a group step runs its program, or its nodes one by one when its decisions say so
 *     ([Note: Numerics and benefit of fused groups]);
 *   - after each step the values nothing later reads are released (graph outputs are kept),
 *     so a run holds each intermediate only while it is needed.
 * kernels counts what a run launches with every group fused: views and removed nodes
 * launch none, a group one.
 */
#include <stdio.h>
#include <string.h>

#include "passes/compile.h"
#include "opd/cuda.h"
#include "opd/error.h"
#include "opd/memory.h"
#include "plan/plan.h"

/* The 0-d tensors of wrapped numbers, on the node's device, holding the number converted to
 * the wrapped dtype (aten::fill_, as ATen's wrapped_scalar_tensor). */
static int make_wrapped(opd_graph *g) {
  const opd_operator *fill = opd__graph_find_op("aten::fill_.Scalar");
  for (uint32_t n = 0; n < g->nnodes; n++) {
    opd__gnode *node = &g->nodes[n];
    if (node->dead) continue;
    for (uint32_t i = 0; i < node->nargs; i++) {
      opd__garg *a = &node->args[i];
      if (a->kind != OPD__GA_WRAPPED || a->cpu) continue;
      opd_device dev = g->values[node->first_out].device;
      int rc = fill ? opd_tensor_empty(NULL, 0, (opd_dtype)a->wrapped_dtype, dev, &a->cpu)
                    : opd_error(OPD_ENOENT, "aten::fill_.Scalar is not defined");
      if (rc) return rc;
      opd_stack st;
      opd_stack_init(&st);
      opd_stack_push(&st, opd_iv_tensor_borrow(a->cpu));
      opd_stack_push(&st, a->value);
      rc = opd_call_boxed(fill, &st);
      opd_stack_destroy(&st);
      /* [Note: Wrapped numbers on CUDA] The fill is queued on this thread's current stream
       * (a define runs on a CPU worker: its per-thread default stream), but every run reads
       * the tensor from its own session's stream, which does not wait for this one: the
       * compilation waits for the fill, so the tensor holds its number before any run. */
      if (rc == 0 && dev.type == OPD_DEVICE_CUDA)
        rc = opd_cuda_stream_synchronize(dev.index < 0 ? 0 : dev.index, NULL);
      if (rc) { /* the builder checked the number: a device error, named by its node */
        char label[160], msg[400];
        snprintf(msg, sizeof msg, "%s", opd_last_error());
        return opd_error(rc, "%s, argument '%s': making its number's tensor: %s",
                         opd__gnode_label(g, n, label, sizeof label),
                         g->ops[node->opi].schema->args[i].name, msg);
      }
    }
  }
  return 0;
}

static int add_free(opd__plan *p, uint32_t *cap, uint32_t v) {
  if (p->nfrees == *cap) {
    uint32_t c = *cap ? *cap * 2 : 64;
    uint32_t *f = opd__realloc(p->frees, c * sizeof *f);
    if (!f) return opd_error(OPD_ENOMEM, "out of memory lowering a graph");
    p->frees = f;
    *cap = c;
  }
  p->frees[p->nfrees++] = v;
  return 0;
}

int opd__pass_lower(opd__compile *c, uint64_t *hits) {
  int rc = opd__plan_new(c);
  if (rc || (rc = opd__plan_schedule(c)) || (rc = make_wrapped(c->g))) return rc;
  opd__plan *p = c->plan;
  const opd_graph *g = c->g;
  p->steps = opd__calloc(p->norder ? p->norder : 1, sizeof *p->steps);
  if (!p->steps) return opd_error(OPD_ENOMEM, "out of memory lowering a graph");
  uint32_t cap = 0;
  for (uint32_t s = 0; s < p->norder && rc == 0; s++) {
    opd__unit u = p->order[s];
    opd__step *st = &p->steps[p->nsteps++];
    *st = (opd__step){.kind = u.kind, .index = u.index, .first_free = p->nfrees};
    st->kernel = u.kind == OPD__STEP_GROUP || !g->nodes[u.index].is_view;
    p->kernels += st->kernel;
    /* values last read here, and values made here that nothing reads */
    const uint32_t *nodes = &u.index;
    uint32_t nn = 1;
    if (u.kind == OPD__STEP_GROUP) {
      nodes = p->groups[u.index].nodes;
      nn = p->groups[u.index].nnodes;
    }
    for (uint32_t k = 0; k < nn && rc == 0; k++) {
      const opd__gnode *node = &g->nodes[nodes[k]];
      for (uint32_t o = 0; o < node->nouts && rc == 0; o++) {
        uint32_t v = node->first_out + o;
        if (p->last_use[v] == UINT32_MAX && !g->values[v].output_uses) rc = add_free(p, &cap, v);
      }
    }
    for (uint32_t v = 0; v < g->nvalues && rc == 0; v++)
      if (p->last_use[v] == s && !g->values[v].output_uses) rc = add_free(p, &cap, v);
    st->nfree = p->nfrees - st->first_free;
  }
  *hits += p->nsteps;
  return rc;
}

/* pass_buffers.c: buffer planning ([Note: The pass pipeline] in pass_manager.c).
 *
 * [Note: Buffer planning]
 * The values fused groups write are intermediates the plan owns: each gets a planned buffer
 * that a run's context allocates once and every later run reuses (the plan's buffers are
 * the only memory a fused group needs). Values whose storage reaches a graph output are not
 * planned (the caller keeps them). A value's buffer is busy from the schedule position of
 * its group to the last use of any value sharing its storage (its views); buffers are
 * handed out greedily in schedule order, the smallest free one that fits (or the largest,
 * grown), and one is free for a value only after the position where its last reader ran,
 * so a group never writes a buffer it reads. Kernels called through the dispatcher make
 * their own outputs, which a run releases after their last use (the CPU allocator keeps
 * large blocks for reuse). Hits: values placed in buffers.
 */
#include <string.h>

#include "compile.h"
#include "opd/error.h"
#include "opd/memory.h"
#include "plan.h"

static bool root_escapes(const opd_graph *g, uint32_t root) {
  for (uint32_t i = 0; i < g->noutputs; i++)
    if (g->values[g->outputs[i]].root == root) return true;
  return false;
}

/* The last schedule position using v or a value sharing its storage. */
static uint32_t busy_until(const opd_graph *g, const opd__plan *p, uint32_t v, uint32_t start) {
  uint32_t end = start;
  for (uint32_t w = v; w < g->nvalues; w++)
    if (g->values[w].root == v && p->last_use[w] != UINT32_MAX && p->last_use[w] > end)
      end = p->last_use[w];
  return end;
}

int opd__pass_buffer_plan(opd__compile *c, uint64_t *hits) {
  int rc = opd__plan_new(c);
  if (rc || (rc = opd__plan_schedule(c))) return rc;
  opd__plan *p = c->plan;
  const opd_graph *g = c->g;
  uint32_t *free_after = NULL; /* per buffer: the last position its current value is used */
  for (uint32_t s = 0; s < p->norder; s++) {
    if (p->order[s].kind != OPD__STEP_GROUP) continue;
    const opd__pw_program *prog = &p->groups[p->order[s].index].prog;
    for (uint32_t k = 0; k < prog->nstores; k++) {
      uint32_t v = prog->stores[k].value;
      /* CUDA values are not planned: the CUDA caching allocator reuses their blocks */
      if (g->values[v].root != v || root_escapes(g, v) ||
          g->values[v].device.type != OPD_DEVICE_CPU)
        continue;
      uint64_t bytes = (uint64_t)g->values[v].meta->numel * opd_dtype_size(opd__gvalue_dtype(g, v));
      uint32_t end = busy_until(g, p, v, s);
      int32_t fit = -1, big = -1; /* the smallest free buffer that fits, the largest free one */
      for (uint32_t b = 0; b < p->nbuffers; b++) {
        if (free_after[b] >= s) continue;
        if (p->buffer_bytes[b] >= bytes && (fit < 0 || p->buffer_bytes[b] < p->buffer_bytes[fit]))
          fit = (int32_t)b;
        if (big < 0 || p->buffer_bytes[b] > p->buffer_bytes[big]) big = (int32_t)b;
      }
      int32_t best = fit >= 0 ? fit : big;
      if (best < 0) {
        uint32_t n = p->nbuffers + 1;
        uint64_t *bb = opd__realloc(p->buffer_bytes, n * sizeof *bb);
        if (bb) p->buffer_bytes = bb;
        uint32_t *fa = bb ? opd__realloc(free_after, n * sizeof *fa) : NULL;
        if (!fa) {
          opd__free(free_after);
          return opd_error(OPD_ENOMEM, "out of memory planning buffers");
        }
        free_after = fa;
        best = (int32_t)p->nbuffers++;
        p->buffer_bytes[best] = 0;
      }
      if (p->buffer_bytes[best] < bytes) p->buffer_bytes[best] = bytes;
      free_after[best] = end;
      p->buffer_of[v] = best;
      p->unplanned_bytes += bytes;
      (*hits)++;
    }
  }
  for (uint32_t b = 0; b < p->nbuffers; b++) p->planned_bytes += p->buffer_bytes[b];
  opd__free(free_after);
  return 0;
}

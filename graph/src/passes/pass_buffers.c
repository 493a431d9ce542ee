/* pass_buffers.c: buffer planning ([Note: The pass pipeline] in pass_manager.c).
 *
 * [Note: Buffer planning]
 * The values fused groups write are intermediates the plan owns: each gets a planned buffer
 * that a run's context allocates once and every later run reuses (the plan's buffers are
 * the only memory a fused group needs). Values whose storage reaches a graph output are not
 * planned (the caller keeps them). A buffer is a tensor of one dtype, and only values of
 * that dtype are planned in it (a run views each value's buffer as the value's dtype: a
 * bool value sized in bool bytes must never be viewed as float32). A value's buffer is busy
 * from the schedule position of its group to the last use of any value sharing its storage
 * (its views); buffers are handed out greedily in schedule order, the smallest free one of
 * the value's dtype that fits (or the largest, grown), and one is free for a value only
 * after the position where its last reader ran, so a group never writes a buffer it reads.
 * The finished plan is checked against every use before the pass returns
 * (check_buffers): each planned value's dtype is its buffer's, its bytes fit the buffer,
 * and values sharing a buffer are never busy at the same time. A plan that fails the
 * check is a bug of the planner: the compilation fails with an internal error rather than
 * letting a run compute with a buffer too small or of another type. Kernels called through the
 * dispatcher make their own outputs, which a run releases after their last use (the CPU allocator
 * keeps large blocks for reuse). Hits: values placed in buffers.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "passes/compile.h"
#include "opd/checked.h"
#include "opd/error.h"
#include "opd/memory.h"
#include "plan/plan.h"

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

/* A planned value's lifetime in the schedule, for the check. */
typedef struct busy {
  uint32_t value, from, to;
} busy;

static int busy_order(const void *a, const void *b) {
  const busy *x = a, *y = b;
  return x->from < y->from ? -1 : x->from > y->from;
}

/* [Note: Buffer planning]'s invariants, checked against every planned value. */
static int check_buffers(const opd_graph *g, const opd__plan *p, const busy *lives, uint32_t n) {
  busy *by_start = opd__malloc((n ? n : 1) * sizeof *by_start);
  busy *last = opd__malloc((p->nbuffers ? p->nbuffers : 1) * sizeof *last); /* per buffer */
  int rc = !by_start || !last ? opd_error(OPD_ENOMEM, "out of memory checking planned buffers") : 0;
  for (uint32_t i = 0; i < n && rc == 0; i++) {
    uint32_t v = lives[i].value;
    int32_t b = p->buffer_of[v];
    opd_dtype dt = opd__gvalue_dtype(g, v);
    uint64_t bytes;
    if (b < 0 || (uint32_t)b >= p->nbuffers || p->buffer_dtype[b] != (int8_t)dt ||
        opd_ckd_mul(&bytes, (uint64_t)g->values[v].meta->numel, (uint64_t)opd_dtype_size(dt)) ||
        bytes > p->buffer_bytes[b])
      rc = opd_error(OPD_EINTERNAL,
                     "buffer_plan: value %%%u (%s, %" PRId64 " elements) does not fit its "
                     "planned buffer %d",
                     v, opd_dtype_name(dt), g->values[v].meta->numel, (int)b);
  }
  /* the values of one buffer, by start: each starts after the previous one's last use */
  for (uint32_t b = 0; b < p->nbuffers && rc == 0; b++) last[b].value = UINT32_MAX;
  if (rc == 0 && n) {
    memcpy(by_start, lives, n * sizeof *lives);
    qsort(by_start, n, sizeof *by_start, busy_order);
  }
  for (uint32_t i = 0; i < n && rc == 0; i++) {
    uint32_t b = (uint32_t)p->buffer_of[by_start[i].value];
    if (last[b].value != UINT32_MAX && by_start[i].from <= last[b].to)
      rc = opd_error(OPD_EINTERNAL,
                     "buffer_plan: values %%%u and %%%u share planned buffer %u while both "
                     "are in use",
                     last[b].value, by_start[i].value, b);
    last[b] = by_start[i];
  }
  opd__free(by_start);
  opd__free(last);
  return rc;
}

int opd__pass_buffer_plan(opd__compile *c, uint64_t *hits) {
  int rc = opd__plan_new(c);
  if (rc || (rc = opd__plan_schedule(c))) return rc;
  opd__plan *p = c->plan;
  const opd_graph *g = c->g;
  uint32_t *free_after = NULL; /* per buffer: the last position its current value is used */
  busy *lives = NULL;          /* per planned value, in the order they were planned */
  uint32_t nlives = 0;
  for (uint32_t s = 0; s < p->norder && rc == 0; s++) {
    if (p->order[s].kind != OPD__STEP_GROUP) continue;
    const opd__pw_program *prog = &p->groups[p->order[s].index].prog;
    for (uint32_t k = 0; k < prog->nstores && rc == 0; k++) {
      uint32_t v = prog->stores[k].value;
      /* CUDA values are not planned: the CUDA caching allocator reuses their blocks */
      if (g->values[v].root != v || root_escapes(g, v) ||
          g->values[v].device.type != OPD_DEVICE_CPU)
        continue;
      opd_dtype dt = opd__gvalue_dtype(g, v);
      uint64_t bytes;
      if (opd_ckd_mul(&bytes, (uint64_t)g->values[v].meta->numel, (uint64_t)opd_dtype_size(dt))) {
        rc = opd_error(OPD_EINVAL, "buffer_plan: value %%%u: its size overflows", v);
        break;
      }
      uint32_t end = busy_until(g, p, v, s);
      int32_t fit = -1, big = -1; /* the smallest free buffer that fits, the largest free one */
      for (uint32_t b = 0; b < p->nbuffers; b++) {
        if (free_after[b] >= s || p->buffer_dtype[b] != (int8_t)dt) continue;
        if (p->buffer_bytes[b] >= bytes && (fit < 0 || p->buffer_bytes[b] < p->buffer_bytes[fit]))
          fit = (int32_t)b;
        if (big < 0 || p->buffer_bytes[b] > p->buffer_bytes[big]) big = (int32_t)b;
      }
      int32_t best = fit >= 0 ? fit : big;
      if (best < 0) {
        uint32_t n = p->nbuffers + 1;
        uint64_t *bb = opd__realloc(p->buffer_bytes, n * sizeof *bb);
        if (bb) p->buffer_bytes = bb;
        int8_t *bd = bb ? opd__realloc(p->buffer_dtype, n * sizeof *bd) : NULL;
        if (bd) p->buffer_dtype = bd;
        uint32_t *fa = bd ? opd__realloc(free_after, n * sizeof *fa) : NULL;
        if (!fa) {
          rc = opd_error(OPD_ENOMEM, "out of memory planning buffers");
          break;
        }
        free_after = fa;
        best = (int32_t)p->nbuffers++;
        p->buffer_bytes[best] = 0;
        p->buffer_dtype[best] = (int8_t)dt;
      }
      busy *l = opd__realloc(lives, (nlives + 1) * sizeof *l);
      if (!l) {
        rc = opd_error(OPD_ENOMEM, "out of memory planning buffers");
        break;
      }
      lives = l;
      lives[nlives++] = (busy){v, s, end};
      if (p->buffer_bytes[best] < bytes) p->buffer_bytes[best] = bytes;
      free_after[best] = end;
      p->buffer_of[v] = best;
      p->unplanned_bytes += bytes;
      (*hits)++;
    }
  }
  for (uint32_t b = 0; b < p->nbuffers; b++) p->planned_bytes += p->buffer_bytes[b];
  if (rc == 0) rc = check_buffers(g, p, lives, nlives);
  opd__free(free_after);
  opd__free(lives);
  return rc;
}

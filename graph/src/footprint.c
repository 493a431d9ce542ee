/* footprint.c: the memory a graph holds, counted so that it is charged like tensors are
 * (opd_graph_define_estimate, opd_compiled_graph_bytes).
 *
 * [Note: The charge of a graph]
 * A graph is memory a client makes the daemon hold: its IR (values with their Meta
 * tensors, nodes, arguments, users, operators' schemas), the text of the IR before and
 * after every pass (kept for introspection), its cache key, its plan (schedule, groups and
 * their programs), the run context a run keeps, its constants' storage and its planned
 * buffers. A graph of 4,095 nodes holds megabytes; so graphs count against the same limits
 * as tensors, before their memory is taken:
 *  - opd_graph_define_estimate(g) bounds what compiling a finished graph will hold, from
 *    the graph itself (its IR, counted here, and its printed text, one pass's worth per
 *    pass); a caller reserves it before compiling;
 *  - opd_compiled_graph_bytes(cg) is what the compiled graph holds, counted when it is
 *    compiled and fixed from then on: its own allocations (each counted with the
 *    allocator's per-block overhead) plus its constants' storage and one run context's
 *    planned buffers. The caller then trues its reservation up (or down) to it.
 * The counts follow the structures below; tests/test_graph_isolation.c checks them against
 * what an allocator that counts every block sees, so a structure added without its count
 * fails there.
 *
 * Not counted: what later runs add, the contexts of runs in flight beside the first (one per
 * concurrent run, at most the workers'; their buffers are CPU storage, which max_bytes_total
 * counts), the C tier's modules (shared by content, loaded once per program) and a CUDA
 * group's compiled program.
 *
 * The daemon-wide limit (the CPU allocator's, max_bytes_total in the daemon) is charged once
 * per compiled graph, by compiling it (compile.c: its host bytes, reserved with the
 * estimate before the passes run, trued up after, released when it is freed; its tensors
 * are CPU storage the allocator counts itself). A session is charged per definition
 * (server/src/graphs.c).
 */
#include <string.h>

#include "compiled.h"

/* What one block of the allocator costs beyond its bytes (glibc's header, rounded). */
#define BLOCK_OVERHEAD 16

/* What every compiled graph holds beyond the structures counted: the blocks the pipeline's
 * record and the cache's entry take, rounded up. */
#define FIXED_BYTES 1024

static uint64_t block(uint64_t bytes) {
  return bytes + BLOCK_OVERHEAD;
}

static uint64_t ivalue_bytes(const opd_ivalue *v) {
  switch ((opd_iv_tag)v->tag) {
  case OPD_IV_STRING:
  case OPD_IV_BOOL_LIST: return block(v->len + 1);
  case OPD_IV_INT_LIST:
  case OPD_IV_DOUBLE_LIST:
  case OPD_IV_TENSOR_LIST:
  case OPD_IV_OPT_TENSOR_LIST: return block((uint64_t)v->len * 8);
  default: return 0;
  }
}

/* A tensor's header and dims, and its storage's header (its data is counted apart). */
static uint64_t tensor_header_bytes(const opd_tensor *t) {
  return t ? block(sizeof *t + 2 * sizeof(int64_t) * t->ndim) + block(sizeof(opd_storage)) : 0;
}

static uint64_t schema_bytes(const opd_schema *s) {
  uint64_t b = block(sizeof *s) + 3 * block(32);
  b += block((uint64_t)(s->num_args + s->num_returns) * sizeof(opd_argument));
  b += (uint64_t)(s->num_args + s->num_returns) * block(32); /* names, defaults */
  return b;
}

static uint64_t ir_bytes(const opd_graph *g) {
  uint64_t b = block(sizeof *g) + block((uint64_t)g->cap_inputs * sizeof *g->inputs) +
               block((uint64_t)g->cap_values * sizeof *g->values) +
               block((uint64_t)g->cap_nodes * sizeof *g->nodes) +
               block((uint64_t)g->cap_ops * sizeof *g->ops) +
               block((uint64_t)g->noutputs * sizeof *g->outputs);
  for (uint32_t v = 0; v < g->nvalues; v++)
    b += tensor_header_bytes(g->values[v].meta) +
         (g->values[v].cap_users ? block((uint64_t)g->values[v].cap_users * 4) : 0);
  for (uint32_t n = 0; n < g->nnodes; n++) {
    const opd__gnode *node = &g->nodes[n];
    b += block((uint64_t)node->nargs * sizeof *node->args);
    for (uint32_t i = 0; i < node->nargs; i++) {
      const opd__garg *a = &node->args[i];
      b += (a->kind == OPD__GA_REFS ? block((uint64_t)a->nrefs * 4) : 0) +
           tensor_header_bytes(a->meta) + tensor_header_bytes(a->cpu);
      if (a->kind == OPD__GA_CONST)
        b += a->value.tag == OPD_IV_TENSOR ? tensor_header_bytes(a->value.u.t)
                                           : ivalue_bytes(&a->value);
    }
  }
  for (uint32_t i = 0; i < g->nops; i++) b += schema_bytes(g->ops[i].schema);
  return b;
}

/* The bytes of graph text the printer writes per value, at most: a line of the value's
 * name, dtype, shape and strides, its operator and arguments (constants' text counted
 * apart) and a comment. */
#define TEXT_PER_VALUE 256

uint64_t opd_graph_define_estimate(const opd_graph *g) {
  uint32_t texts = 14; /* before the passes, after each (the built-in ones and plugins'), key */
  uint64_t text = (uint64_t)g->nvalues * TEXT_PER_VALUE + 2 * g->arg_bytes + 512;
  /* the IR (and what the passes add to it), the texts, the plan and the run context */
  return 2 * ir_bytes(g) + texts * block(text) + (uint64_t)g->nvalues * 256 + g->arg_bytes;
}

static uint64_t program_bytes(const opd__pw_program *p) {
  return block((uint64_t)p->ncode * sizeof *p->code) +
         block((uint64_t)p->nloads * sizeof *p->loads) +
         block((uint64_t)p->nstores * sizeof *p->stores) +
         block((uint64_t)p->nsteps * sizeof *p->steps);
}

static uint64_t plan_bytes(const opd__plan *p, const opd_graph *g) {
  uint64_t b = block(sizeof *p) + block((uint64_t)p->norder * sizeof *p->order) +
               block((uint64_t)g->nvalues * sizeof *p->last_use) +
               block((uint64_t)p->ngroups * sizeof *p->groups) +
               block((uint64_t)g->nnodes * sizeof *p->group_of) +
               block((uint64_t)p->nsteps * sizeof *p->steps) +
               block((uint64_t)p->nfrees * 2 * sizeof *p->frees) +
               block((uint64_t)g->nvalues * sizeof *p->buffer_of) +
               block((uint64_t)p->nbuffers * (sizeof *p->buffer_bytes + 1));
  for (uint32_t i = 0; i < p->ngroups; i++) {
    const opd__group *gr = &p->groups[i];
    b += block((uint64_t)gr->nmembers * 4) + block((uint64_t)gr->nnodes * 4) +
         block((uint64_t)gr->nafter * 4) + program_bytes(&gr->prog);
  }
  return b;
}

/* A text the printer wrote: its buffer grew by doubling from 256 bytes (sbuf.c). */
static uint64_t text_bytes(const char *s) {
  if (!s) return 0;
  uint64_t len = strlen(s) + 1, cap = 256;
  while (cap < len) cap *= 2;
  return block(cap);
}

void opd__compiled_footprint(opd_compiled_graph *cg) {
  const opd_graph *g = cg->g;
  const opd__plan *p = cg->plan;
  uint64_t host = FIXED_BYTES + block(sizeof *cg) + ir_bytes(g) + text_bytes(cg->ir_before) +
                  text_bytes(cg->key) + block((uint64_t)cg->passes.n * sizeof *cg->passes.passes);
  for (uint32_t i = 0; i < cg->passes.n; i++) host += text_bytes(cg->passes.passes[i].ir);
  if (p) host += plan_bytes(p, g) + block((uint64_t)p->ngroups * sizeof *cg->states);
  host += block((uint64_t)cg->nconstants * sizeof *cg->constants) + block(g->noutputs);
  /* one run context: per value its tensor and planned view, the buffers and kept storages,
   * and the views' headers */
  uint64_t nbuffers = p ? p->nbuffers : 0, views = 0;
  for (uint32_t v = 0; p && v < g->nvalues; v++)
    if (p->buffer_of[v] >= 0) views += tensor_header_bytes(g->values[v].meta);
  host += block(sizeof(opd__run_ctx)) + 2 * block((uint64_t)g->nvalues * sizeof(void *)) +
          block(nbuffers * sizeof(void *)) + block((nbuffers + cg->nconstants) * sizeof(void *)) +
          views +
          nbuffers * (block(sizeof(opd_tensor) + 2 * sizeof(int64_t)) + block(sizeof(opd_storage)));
  uint64_t tensors = p ? p->planned_bytes : 0;
  for (uint32_t n = 0; n < g->nnodes; n++)
    for (uint32_t i = 0; i < g->nodes[n].nargs; i++) {
      const opd__garg *a = &g->nodes[n].args[i];
      const opd_tensor *t = a->kind == OPD__GA_WRAPPED ? a->cpu
                            : a->kind == OPD__GA_CONST && a->value.tag == OPD_IV_TENSOR
                                ? a->value.u.t
                                : NULL;
      if (t && t->storage) tensors += t->storage->nbytes;
    }
  cg->host_bytes = host;
  cg->tensor_bytes = tensors;
}

uint64_t opd_compiled_graph_bytes(const opd_compiled_graph *cg) {
  return cg->host_bytes + cg->tensor_bytes;
}

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
 *  - opd_graph_define_estimate(g) estimates what compiling a finished graph will hold, from
 *    the graph itself ([Note: The estimate of a graph's charge]); a caller reserves it
 *    before compiling;
 *  - opd_compiled_graph_bytes(cg) is what the compiled graph holds, counted when it is
 *    compiled and fixed from then on: its own allocations (each counted with the
 *    allocator's per-block overhead) plus its constants' storage and one run context's
 *    planned buffers. The caller then trues its reservation up (or down) to it.
 * The counts follow the structures below; tests/test_graph_isolation.c checks them against
 * what an allocator that counts every block sees, so a structure added without its count
 * fails there.
 *
 * It also counts what the graph's fused programs will hold once compiled ([Note: The programs
 * of fused groups are charged]). A run context beyond the first, made for a run concurrent
 * with another, is charged to the run that makes it and freed when that run ends ([Note: Run
 * contexts of concurrent runs] in exec.c).
 *
 * The daemon-wide limit (the CPU allocator's, max_bytes_total in the daemon) is charged once
 * per compiled graph, by compiling it (compile.c: its host bytes, reserved with the
 * estimate before the passes run, trued up after, released when it is freed; its tensors
 * are CPU storage the allocator counts itself). A session is charged per definition
 * (server/src/graphs.c).
 */
#include <string.h>

#include "exec/compiled.h"

/* What one block of the allocator costs beyond its bytes (glibc's header, rounded). */
#define BLOCK_OVERHEAD 16

/* What every compiled graph holds beyond the structures counted: the blocks the pipeline's
 * record and the cache's entry take, rounded up. */
#define FIXED_BYTES 1024

/* [Note: The programs of fused groups are charged]
 * A fused group's program may be compiled after the graph is: by the C tier (a shared object
 * loaded into the daemon: its mapped segments, the loader's records and the registry's copy
 * of its source) or, for a CUDA group, by NVRTC (the loaded image, host and device). Both are
 * memory a client makes the daemon hold, so both are in the graph's charge from the start, a
 * bound per group from its program's length, charged with the rest before compiling:
 *  - a CPU group's module: C_MODULE_BYTES plus C_MODULE_BYTES_PER_INSTRUCTION an
 *    instruction, for the groups the C tier may compile (it ran when the graph was compiled,
 *    and the program has at most OPD__PW_C_MAX_OPERANDS operands). A small module maps 20 KiB
 *    (four segments in 4 KiB pages) and holds 32 to 34 KiB with the loader's records and the
 *    source (the graph fixture's groups of 3 to 12 instructions, on x86-64 with AVX-512),
 *    at most 0.6 of its bound; a module that holds more than its group's bound is not used
 *    (the group stays with the interpreter, c_tier "failed": c_tier.c), so the bound holds. A graph
 *    compiled while the tier was off never submits its groups: they were not charged.
 *  - a CUDA group's program: CUDA_PROGRAM_BYTES plus CUDA_PROGRAM_BYTES_PER_INSTRUCTION an
 *    instruction, an estimate (the runtime does not say what a loaded library holds).
 * A module shared by several groups (the same program) is counted once per group. */
#define C_MODULE_BYTES                     (48 * 1024)
#define C_MODULE_BYTES_PER_INSTRUCTION     1024
#define CUDA_PROGRAM_BYTES                 (128 * 1024)
#define CUDA_PROGRAM_BYTES_PER_INSTRUCTION 1024

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

/* [Note: The estimate of a graph's charge]
 * opd_graph_define_estimate is reserved before the passes run, then trued up to what the
 * compiled graph holds, so an estimate far above it refuses definitions that would fit (it
 * was 2.6x the count on chains of 40 to 1,500 nodes, from 256 bytes of text a value in 14
 * texts and twice the IR). Measured on those chains: the IR after the passes is about what
 * it was before, each text is about 60 bytes a value (its buffer up to twice that, grown by
 * doubling), there are 10 texts (before the passes, after each of the 8 built-in ones, the
 * key), the plan and a run context about 390 bytes a value. The estimate takes each with a
 * margin: the IR and half again, 12 texts (room for plugin passes) of TEXT_PER_VALUE a value
 * plus the constants' text, PLAN_PER_VALUE a value; it is 1.3x to 1.4x the count there (1.9x
 * for one node, where fixed costs weigh most) and still above it (tests/test_graph_isolation.c
 * checks both). A graph whose texts or plan outgrow it is charged the difference when the passes
 * are done, before it is used; so are its fused programs ([Note: The programs of fused groups are
 * charged]), which exist only once the groups do. */
#define TEXT_PER_VALUE 96
#define TEXTS          12
#define PLAN_PER_VALUE 512

uint64_t opd_graph_define_estimate(const opd_graph *g) {
  uint64_t text = (uint64_t)g->nvalues * TEXT_PER_VALUE + 2 * g->arg_bytes + 512;
  return ir_bytes(g) * 3 / 2 + TEXTS * block(text) + (uint64_t)g->nvalues * PLAN_PER_VALUE +
         g->arg_bytes;
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

uint64_t opd__run_ctx_host_bytes(const opd_compiled_graph *cg) {
  /* per value its tensor and planned view, the buffers and kept storages, and the views'
   * headers */
  const opd_graph *g = cg->g;
  const opd__plan *p = cg->plan;
  uint64_t nbuffers = p ? p->nbuffers : 0, views = 0;
  for (uint32_t v = 0; p && v < g->nvalues; v++)
    if (p->buffer_of[v] >= 0) views += tensor_header_bytes(g->values[v].meta);
  return block(sizeof(opd__run_ctx)) + 2 * block((uint64_t)g->nvalues * sizeof(void *)) +
         block(nbuffers * sizeof(void *)) + block((nbuffers + cg->nconstants) * sizeof(void *)) +
         views +
         nbuffers * (block(sizeof(opd_tensor) + 2 * sizeof(int64_t)) + block(sizeof(opd_storage)));
}

/* [Note: The programs of fused groups are charged] */
uint64_t opd__group_program_bytes(const opd_compiled_graph *cg, uint32_t gi) {
  const opd__group *grp = &cg->plan->groups[gi];
  const opd__pw_program *p = &grp->prog;
  if (cg->g->values[p->stores[0].value].device.type == OPD_DEVICE_CUDA)
    return CUDA_PROGRAM_BYTES + (uint64_t)p->ncode * CUDA_PROGRAM_BYTES_PER_INSTRUCTION;
  if (!cg->c_tier || p->nloads + p->nstores > OPD__PW_C_MAX_OPERANDS) return 0;
  return C_MODULE_BYTES + (uint64_t)p->ncode * C_MODULE_BYTES_PER_INSTRUCTION;
}

static uint64_t program_reserve(const opd_compiled_graph *cg) {
  uint64_t b = 0;
  for (uint32_t i = 0; cg->plan && i < cg->plan->ngroups; i++) b += opd__group_program_bytes(cg, i);
  return b;
}

void opd__compiled_footprint(opd_compiled_graph *cg) {
  const opd_graph *g = cg->g;
  const opd__plan *p = cg->plan;
  uint64_t host = FIXED_BYTES + block(sizeof *cg) + ir_bytes(g) + text_bytes(cg->ir_before) +
                  text_bytes(cg->key) + block((uint64_t)cg->passes.n * sizeof *cg->passes.passes);
  for (uint32_t i = 0; i < cg->passes.n; i++) host += text_bytes(cg->passes.passes[i].ir);
  if (p) host += plan_bytes(p, g) + block((uint64_t)p->ngroups * sizeof *cg->states);
  host += block((uint64_t)cg->nconstants * sizeof *cg->constants) + block(g->noutputs);
  host += opd__run_ctx_host_bytes(cg) + program_reserve(cg);
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

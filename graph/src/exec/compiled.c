/* compiled.c: a compiled graph's references (opd_compiled_graph_retain and _release) and
 * freeing it with the last one. The cache, the C tier's queue and every session hold
 * references; none of them needs compiling for that. */
#include "exec/compiled.h"
#include "opd/allocator.h"
#include "opd/cuda_nvrtc.h"
#include "opd/memory.h"
#include "plan/c_compiler.h"

static void compiled_free(opd_compiled_graph *cg) {
  opd_cpu_allocator_unreserve(cg->host_bytes);
  opd__compiled_free_contexts(cg);
  for (uint32_t i = 0; cg->states && i < cg->plan->ngroups; i++) {
    opd_nvrtc_function_free(cg->states[i].cuda_fn);
    if (cg->states[i].c_module) opd__cc_module_release(cg->states[i].c_module);
  }
  opd__plan_free(cg->plan);
  opd_graph_free(cg->g);
  opd__pipeline_free(&cg->passes);
  opd__free(cg->ir_before);
  opd__free(cg->key);
  opd__free(cg->states);
  opd__free(cg->constants);
  opd__free(cg->out_checked);
  pthread_mutex_destroy(&cg->lock);
  opd__free(cg);
}

void opd_compiled_graph_retain(opd_compiled_graph *cg) {
  atomic_fetch_add_explicit(&cg->refcount, 1, memory_order_relaxed);
}

void opd_compiled_graph_release(opd_compiled_graph *cg) {
  if (cg && atomic_fetch_sub_explicit(&cg->refcount, 1, memory_order_acq_rel) == 1)
    compiled_free(cg);
}

/* Counts `bytes` more as CPU memory in use, into *counted: 0 or OPD_ERESOURCE. */

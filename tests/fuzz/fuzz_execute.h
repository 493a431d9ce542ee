/* fuzz_execute.h: running a worker's request in the drivers that feed the worker
 * (fuzz_session.c, fuzz_graph.c): their common start-up, jobs made and freed as the
 * connection makes and frees them, and the checks every request's run must pass. */
#ifndef OPD_FUZZ_EXECUTE_H
#define OPD_FUZZ_EXECUTE_H

#include "arena.h"
#include "execute.h"
#include "fuzz_common.h"
#include "gather.h"
#include "opd/allocator.h"
#include "opd/dispatcher.h"
#include "opd/error.h"
#include "opd/kernels.h"
#include "opd/log.h"
#include "opd/memory.h"
#include "opd/server.h"
#include "opd/tensor.h"
#include "session.h"

/* LLVMFuzzerInitialize's common part: the kernels registered, a CPU allocator limit of 256
 * MiB, and cfg at its defaults for the driver to narrow. */
static inline void fuzz_execute_init(opd_server_config *cfg) {
  opd_log_set_level(OPD_LOG_ERROR);
  fuzz_check(opd_kernels_register() == 0, "registering the kernels: %s", opd_last_error());
  opd_cpu_allocator_set_limit(256u << 20);
  opd_server_config_init(cfg);
}

/* A job of session s for a frame of frame_len bytes, as the connection makes one. */
static inline opd__job *fuzz_job_new(opd__session *s, size_t frame_len, opd__job_kind kind) {
  opd__job *j = opd__calloc(1, sizeof *j);
  fuzz_check(j != NULL, "out of memory");
  j->out = opd__malloc(OPD__JOB_OUT_MIN);
  fuzz_check(j->out != NULL, "out of memory");
  j->out_cap = OPD__JOB_OUT_MIN;
  opd__arena_init(&j->arena);
  opd__arena_reset(&j->arena, 8 * frame_len + 16384);
  j->session = s;
  j->kind = kind;
  j->device = (opd_device){OPD_DEVICE_CPU, -1};
  return j;
}

/* Frees a job and what it still holds, as the connection does. */
static inline void fuzz_job_free(opd__job *j) {
  opd__gather_free(j->gather);
  if (j->tensor) opd_tensor_release(j->tensor);
  if (j->reserved) opd__session_unreserve(j->session, j->reserved);
  opd__job_uncharge(j); /* [Note: Answers charged before they are held] */
  opd__arena_destroy(&j->arena);
  opd__free(j->out);
  opd__free(j);
}

/* Runs j (opd__execute) and checks what it left: no memory budget installed, the default
 * dispatch state, and one well-formed response to j's id whose body is an error or
 * `success` (the body a success of j's kind has). Returns the response. */
static inline Opd__V1__Response *fuzz_execute(opd__job *j, Opd__V1__Response__BodyCase success) {
  opd__execute(j);
  fuzz_check(opd_mem_budget_current() == NULL, "a budget left installed");
  opd_local_dispatch_state tls = opd_tls_get();
  fuzz_check(tls.included.repr == opd_default_dispatch_state.included.repr &&
                 tls.excluded.repr == opd_default_dispatch_state.excluded.repr,
             "a dispatch state left installed");
  Opd__V1__Response *r = fuzz_check_response(j->out, j->out_len, j->id);
  fuzz_check(r->body_case == OPD__V1__RESPONSE__BODY_ERROR || r->body_case == success,
             "a request of kind %d answered with body %d", (int)j->kind, (int)r->body_case);
  return r;
}

#endif

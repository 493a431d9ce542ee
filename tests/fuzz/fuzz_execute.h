/* fuzz_execute.h: running a worker's request in the drivers that feed the worker
 * (fuzz_session.c, fuzz_graph.c), with the checks every request's run must pass. */
#ifndef OPD_FUZZ_EXECUTE_H
#define OPD_FUZZ_EXECUTE_H

#include "execute.h"
#include "fuzz_common.h"
#include "opd/allocator.h"
#include "opd/dispatcher.h"

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

/* prepared.h: a call decoded once (internal to the server).
 *
 * [Note: Prepared calls]
 * A Call request is decoded once, on the worker that owns its session, into a prepared
 * call: the operator, its argument stack in schema order (defaults filled in, tensors
 * borrowed from the session's handle table, literals owned), the union of the key sets of
 * its tensor arguments (every Tensor, and every element of a Tensor[] or Tensor?[], as the
 * dispatcher's own key extraction reads them: [Note: The call path] in
 * dispatcher/src/call.c), and the CUDA devices among its tensors and Device arguments.
 * Everything after reads it, and nothing looks a handle up again: the route to a worker
 * pool is the first CUDA device (gpu.c), the call dispatches on the key set without
 * extracting it again (opd_call_boxed_keys), which reports the table slot of the runtime
 * key it dispatched to, and the call metrics count that key (metrics.c), so they see the
 * tensors inside a Tensor[] (aten::cat) as the dispatcher does. The decoder (decode.c) is
 * the one a graph's nodes go through too, with value references in place of handles.
 * While it is READY the session's memory budget is installed on the worker ([Note: Memory
 * reserved before it is allocated] in opd/allocator.h): literals made by the decoding are
 * charged with the call's outputs and intermediates; a job that must move to another pool
 * is unprepared (the budget uninstalled) and prepared again there.
 */
#ifndef OPD_SERVER_PREPARED_H
#define OPD_SERVER_PREPARED_H

#include <stdint.h>

#include "opd/dispatcher.h"
#include "opd/tensor.h"

typedef enum opd__prepared_state {
  OPD__CALL_NONE,   /* not decoded (yet, or again after a move) */
  OPD__CALL_READY,  /* decoded: the stack holds the arguments */
  OPD__CALL_FAILED, /* decoding failed: the job's error response is packed */
} opd__prepared_state;

typedef struct opd__prepared_call {
  const opd_operator *op;
  opd_stack stack;
  opd_keyset keys;       /* the union of the tensor arguments' key sets */
  opd_device device;     /* the first CUDA device among tensors and Device arguments, else CPU */
  uint64_t cuda_devices; /* bit d: the call touches cuda:d (d < 64) */
  uint8_t state;         /* opd__prepared_state */
} opd__prepared_call;

#endif

/* cost.h: what a job will cost, estimated before it runs from the shapes of its tensors
 * (internal to the server).
 *
 * [Note: The cost of a job]
 * The scheduler ([Note: Fair sharing of workers] in worker.h) needs a job's cost before the
 * job runs: to keep cheap work from queueing behind expensive work, and to bound the work a
 * session has in flight. A worker that owns the session (its running job's worker, which
 * alone may read the handle table) estimates each queued job once; nothing runs and nothing
 * is allocated. The job about to run is prepared first where it can be and estimated from
 * what its preparing found ([Note: Prepared calls] in prepared.h: the loop judging a call
 * it may run itself, [Note: Tiny calls on the loop] in conn_loop_calls.c; a worker taking a
 * session whose next job nobody estimated yet, [Note: Estimates of prepared jobs] in
 * worker.c): one lookup of each handle and of the operator. A job queued behind others is
 * estimated from its request and the tensors its handles name now, since the jobs before it
 * may make or release them. The estimate is a
 * count of bytes touched and of arithmetic operations (multiply-adds count two), turned
 * into nanoseconds of one thread of the device the job's tensors are on, at a rate
 * measured on this project's 2-core machine (4 bytes/ns, 32 flop/ns: a 1024^3 float32 mm
 * on one core) or a GPU's (1,000 bytes/ns, 30,000 flop/ns). It is a scale, not a promise:
 * within a small factor for the built-in operators, which is what separating microseconds
 * from milliseconds needs. Per operator:
 *  - matrix products (mm, bmm, addmm, matmul, linear): 2 x m x k x n per batch element,
 *    and their operands and output;
 *  - views (every return aliases an argument and none is written): nothing; except
 *    contiguous and reshape of a non-contiguous tensor, which copy it;
 *  - index_select, embedding: the rows gathered, index count x row size;
 *  - factories (no tensor argument): the elements of their size list (arange: of its
 *    range), at 4 bytes;
 *  - anything else, plugins' operators included: the bytes of its tensor arguments plus an
 *    output of their broadcast shape, and one operation per output element (the shape
 *    rules of elementwise operators and reductions, which are most of ATen).
 * A tensor counts numel x element size (an expanded view by its logical elements, which
 * are what a kernel walks); a handle that does not exist counts nothing (the call fails
 * fast). Arithmetic saturates: hostile shapes give a huge cost, never a wrapped one.
 * A graph run counts each element its kernels write (opd_compiled_graph_cost, the sum of
 * its nodes' output sizes) as one output of the last rule: 8 bytes and one operation.
 * Requests other than calls and graph runs cost nothing on the CPU (an upload's bytes were read by
 * the loop, a download's are written by it); on a GPU uploads and downloads cost their copy. The
 * hand reader's calls (proto/opd_wire.h) and protobuf-c's are read the same way.
 */
#ifndef OPD_SERVER_COST_H
#define OPD_SERVER_COST_H

#include <stdint.h>

#include "job.h"

/* The estimate of a job, in nanoseconds of one thread of its device ([Note: The cost of a
 * job]), by the ESTIMATE column of requests.def. On the loop or on a worker that owns the
 * job's session, as a dispatcher reader online (a call's schema is read). A prepared call
 * ([Note: Prepared calls] in prepared.h) or a routed graph run is estimated from what was
 * found then, nothing looked up again; a call's operator found here is kept for its
 * prepare. */
uint64_t opd__job_estimate(opd__job *job);

#endif

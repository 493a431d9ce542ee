/* decode.h: the wire decoder of IValues (decode.c): a call's arguments into its prepared
 * call ([Note: Prepared calls] in prepared.h), a graph node's into the graph builder's
 * arguments ([Note: Checking a call against its schema] in decode.c). */
#ifndef OPD_SERVER_DECODE_H
#define OPD_SERVER_DECODE_H

#include "job.h"
#include "opd/graph.h"

/* The bytes a request's decoding may take per byte of its frame (its job's arena's limit, with
 * 16 KiB more: opd__conn_job_get in connection.c says why). */
#define OPD__DECODE_BYTES_PER_FRAME_BYTE 16

/* Decodes job's Call into job->call (NONE before): 0 with it READY and the session's
 * budget installed on this thread, or the error, with job->call FAILED and the error
 * response packed into the job. */
int opd__call_prepare(opd__job *job);
/* READY back to NONE (the stack destroyed, the budget uninstalled); anything else stays. */
void opd__call_unprepare(opd__job *job);

/* One argument of a graph node, the schema's `arg`, as a call's would be decoded, tensors
 * as references (opd_graph_arg REF or REFS: their lists are in the job's arena) or constants
 * (VALUE: the caller destroys the value once the builder took it). Errors begin with
 * `where` ("graph node 3 (aten::add.Tensor)"). */
int opd__decode_graph_arg(opd__job *job, const char *where, const opd_argument *arg,
                          const Opd__V1__IValue *w, opd_graph_arg *out);

#endif

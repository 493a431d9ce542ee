/* execute.h: what a worker does with a request: the RUN column of requests.def (calls,
 * uploads, downloads, releases, dispatch state, synchronize here; the graph requests in
 * graphs.c). A job's response is packed through job.h. */
#ifndef OPD_SERVER_EXECUTE_H
#define OPD_SERVER_EXECUTE_H

#include <stdbool.h>

#include "job.h"

/* Runs a worker job and leaves its response in job->out; returns true when the session
 * must stay held until the job's raw bytes are written (opd__run_fn). */
bool opd__execute(opd__job *job);

#endif

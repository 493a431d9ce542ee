/* execute.h: what a worker does with a request (calls, uploads, downloads, releases,
 * dispatch state), and packing responses and errors into a job. */
#ifndef OPD_SERVER_EXECUTE_H
#define OPD_SERVER_EXECUTE_H

#include <stdbool.h>

#include "job.h"

/* Room every job's output buffer has from the start: an error response always fits. */
#define OPD__JOB_OUT_MIN 2048

/* Runs a worker job and leaves its response in job->out; returns true when the session
 * must stay held until the job's raw bytes are written (opd__run_fn). */
bool opd__execute(opd__job *job);

/* Starts a response frame of n bytes in job->out (its length prefix written) and returns
 * where the n bytes go; NULL with OPD_ERESOURCE when n exceeds max_frame_bytes, OPD_ENOMEM. */
uint8_t *opd__job_frame(opd__job *job, size_t n);
/* Gives back what the job's response was charged ([Note: Answers charged before they are
 * held] in execute.c), as the job is recycled. */
void opd__job_uncharge(opd__job *job);
/* Packs a response frame into job->out: 0, or OPD_ERESOURCE when it exceeds
 * max_frame_bytes, OPD_ENOMEM. */
int opd__job_pack(opd__job *job, const Opd__V1__Response *resp);
/* Makes job's response an error (never fails) and counts it in the session's errors. `op`
 * may be NULL. */
void opd__job_error(opd__job *job, Opd__V1__ErrorCode code, const char *op, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* The byte size of a dtype and shape from the wire, every factor checked (dtype valid, at
 * most OPD_MAX_DIMS dimensions, none negative, no overflow): 0, or OPD_EINVAL with a message
 * beginning with `what`. */
int opd__checked_nbytes(opd_dtype dtype, const int64_t *shape, size_t ndim, uint64_t *nbytes,
                        const char *what);
/* Gives each tensor of ts a new handle (all or none: [Note: Memory reserved before it is
 * allocated], a result's charge becomes its handle's bytes) and packs the CallReply of
 * them: 0 or an error (no handle made). Takes over the references of ts either way. */
int opd__job_reply_tensors(opd__job *job, opd_tensor *const *ts, size_t n);
/* The protocol's code for an opd error code. */
Opd__V1__ErrorCode opd__error_code(int err);

#endif

/* conn.h: what the files of a connection share (internal to connection.c, conn_read.c,
 * conn_requests.c, conn_upload.c, conn_loop_calls.c and conn_write.c; the rest of the server
 * uses connection.h). All of it runs on the loop thread but opd__conn_send_from_worker's
 * part of writing ([Note: Responses written by workers] in conn_write.c). */
#ifndef OPD_SERVER_CONN_H
#define OPD_SERVER_CONN_H

#include "connection.h"

static inline const opd_server_config *opd__conn_cfg(const opd__conn *c) {
  return &c->server->cfg;
}

/* ---- the jobs and the response order (connection.c) ---- */

/* A fresh job for a frame of frame_len bytes ([Note: Requests when memory runs out] in
 * connection.c); NULL when none is free and none can be made. */
opd__job *opd__conn_job_get(opd__conn *c, size_t frame_len);
/* Gives a job's resources back and returns it to the pool (or frees it). */
void opd__conn_job_free(opd__job *j);
/* Adds a job to the response order. */
void opd__conn_append(opd__conn *c, opd__job *j);
/* Adds a job answered on the loop (its response packed) to the response order. */
void opd__conn_answered(opd__conn *c, opd__job *j);
/* Answers a job with an error and adds it to the response order. */
void opd__conn_refuse(opd__conn *c, opd__job *j, Opd__V1__ErrorCode code, const char *op,
                      const char *msg);
/* Answers a fatal protocol error (j may be NULL), then closes once it is written. */
void opd__conn_fatal(opd__conn *c, opd__job *j, Opd__V1__ErrorCode code, const char *msg);
/* Hands a job to the workers with the others decoded from the same read; submit_pending
 * hands them over together. */
void opd__conn_to_worker(opd__conn *c, opd__job *j);
void opd__conn_submit_pending(opd__conn *c);
/* Frees the connection once it is closed and nothing of it is out. */
void opd__conn_finalize(opd__conn *c);
/* Closes once everything answered is written, if that is what the connection waits for. */
void opd__conn_maybe_close_quiet(opd__conn *c);
/* [Note: Quiet completions] in connection.c */
void opd__conn_set_recycle_lazily(opd__conn *c, bool lazy);

/* ---- reading (conn_read.c) ---- */

/* Starts or stops reading as the connection's state asks, processing buffered frames a
 * pause left behind. */
void opd__conn_update_reading(opd__conn *c);
/* Queues the connection's responses for opd__conn_flush_queued ([Note: Responses written
 * after the poll] in conn_read.c). */
void opd__conn_queue_flush(opd__conn *c);

/* ---- the requests (conn_requests.c, conn_upload.c, conn_loop_calls.c) ---- */

/* Handles one frame; false when it must be handled again later (nothing consumed). */
bool opd__conn_handle_frame(opd__conn *c, const uint8_t *data, size_t len);
/* Requests in flight whose response the client does not have yet. */
uint32_t opd__conn_unanswered(opd__conn *c);
/* Refuses j with RESOURCE_EXHAUSTED when the session has max_in_flight requests
 * unanswered: true when it did. */
bool opd__conn_over_in_flight(opd__conn *c, opd__job *j);
/* Starts an upload; false when it must wait for the session's requests in flight. */
bool opd__conn_begin_upload(opd__conn *c, opd__job *j);
/* The upload's raw bytes are in: its job goes to a worker. */
void opd__conn_upload_received(opd__conn *c);
/* Runs a counted job of the response order on the loop if [Note: Tiny calls on the loop] in
 * conn_loop_calls.c (conn_loop_calls.c) allows, answering it; false when it must go to a worker. */
bool opd__conn_run_on_loop(opd__conn *c, opd__job *j);

/* ---- writing (conn_write.c) ---- */

/* Writes the done responses at the head of the response order. */
void opd__conn_flush(opd__conn *c);
/* Frees the connection's spare writes (as it is freed). */
void opd__conn_free_writes(opd__conn *c);

#endif

/* job.h: one request of a session on its way through the server.
 *
 * [Note: A request's journey]
 * The loop thread reads a frame and decodes it into the arena of a job taken from the
 * connection's pool (by hand for the common requests: [Note: Hand-packed messages] in
 * proto/opd_wire.h). The job joins the connection's response order (`next`), which is the
 * request order. Requests that need no session state (hello, ping) and requests refused
 * before they run (malformed, over a limit) are answered at once: their response is packed
 * into `out` and the job is `done`; so are tiny calls and releases of a session with nothing
 * on workers, run by the loop itself ([Note: Tiny calls on the loop] in conn_loop_calls.c). Every
 * other request is submitted to the session's run
 * queue (`qnext`, worker.c) and a worker executes it (execute.c), packs the response,
 * usually sends it ([Note: Responses written by workers] in conn_write.c) and hands the
 * job back to the loop (loop.c), which marks it done. The loop writes responses
 * from the head of the response order while they are done, batching several jobs into one
 * write; a download's raw bytes follow its frame, written straight from the tensor the job
 * holds. A job is owned by exactly one party at a time: the loop, a worker (`at_worker`),
 * or a write in progress; when its write completes it goes back to the pool.
 */
#ifndef OPD_SERVER_JOB_H
#define OPD_SERVER_JOB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "arena.h"
#include "opd.pb-c.h"
#include "opd/dispatcher.h"
#include "opd/tensor.h"
#include "prepared.h"

typedef struct opd__conn opd__conn;
typedef struct opd__session opd__session;

typedef enum opd__job_kind {
  OPD__JOB_LOCAL, /* a frame refused by the loop, answered at once */
#define OPD__REQUEST(kind, ...) OPD__JOB_##kind,
#include "requests.def"
#undef OPD__REQUEST
  OPD__NUM_JOB_KINDS
} opd__job_kind;

/* The kind of a request's body; OPD__JOB_LOCAL for a body no row of requests.def names (an
 * unknown or missing request type). */
static inline opd__job_kind opd__job_kind_of(Opd__V1__Request__BodyCase body) {
  switch (body) {
#define OPD__REQUEST(kind, body, ...) \
  case OPD__V1__REQUEST__BODY_##body: \
    return OPD__JOB_##kind;
#include "requests.def"
#undef OPD__REQUEST
  default: return OPD__JOB_LOCAL;
  }
}

struct opd_compiled_graph;

typedef struct opd__job {
  struct opd__job *next;  /* the connection's response order (loop thread) */
  struct opd__job *qnext; /* the session's run queue, or the completion list */
  opd__conn *conn;
  opd__session *session;
  opd_device device;     /* where it runs: selects the worker pool */
  uint64_t id;           /* the request's id, echoed in its response */
  Opd__V1__Request *req; /* decoded into `arena`; NULL for a refused frame */
  opd__arena arena;
  size_t decoded;     /* arena bytes of the request while it is on a worker */
  opd_tensor *tensor; /* an owned reference: the upload's target, the download's source */
  uint64_t reserved;  /* bytes an upload reserved against max_bytes_held */
  const void *raw;    /* a download's bytes, sent after the frame (NULL with `gather`) */
  size_t raw_len;
  struct opd__gather *gather; /* a strided download's bytes, gathered as they are written */
  uint8_t *out;               /* the encoded response frame, length prefix included */
  size_t out_len, out_cap;
  /* its response's bytes past OPD__JOB_OUT_MIN, charged to the session and the daemon until
   * the job is recycled ([Note: Answers charged before they are held] in job.c) */
  uint64_t out_charged;
  uint64_t kernel_ns; /* how long a call's kernel (or a graph's run) ran (0 for others) */
  /* [Note: Fair sharing of workers] in worker.h: what its session's owner estimated */
  uint64_t cost_ns; /* [Note: The cost of a job] in cost.h, once `costed` */
  /* a call's decoded form ([Note: Prepared calls]); its operator, once found (by the loop,
   * the estimate or the prepare), whatever its state */
  opd__prepared_call call;
  struct opd_compiled_graph *graph; /* a graph run's graph, found when it is routed (the
                                       session's reference) */
  size_t sent; /* bytes of `out` its worker already sent ([Note: Responses written by workers]) */
  opd__job_kind kind;
  bool at_worker;     /* queued or running on a worker, which owns it meanwhile */
  bool counted;       /* counts in the connection's requests in flight */
  bool done;          /* `out` holds the response */
  bool holds_session; /* the session runs nothing else until `raw` is written */
  bool costed;        /* cost_ns and waits are set */
  bool waits;         /* it waits for a device (a long job whatever its cost) */
  bool on_loop;       /* it runs on the loop thread ([Note: Tiny calls on the loop]) */
} opd__job;

/* ---- a job's response (job.c) ---- */

/* Room every job's output buffer has from the start: an error response always fits. */
#define OPD__JOB_OUT_MIN 2048

/* Starts a response frame of n bytes in job->out (its length prefix written) and returns
 * where the n bytes go; NULL with OPD_ERESOURCE when n exceeds max_frame_bytes, OPD_ENOMEM. */
uint8_t *opd__job_frame(opd__job *job, size_t n);
/* Gives back what the job's response was charged ([Note: Answers charged before they are
 * held] in job.c), as the job is recycled. */
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

/* Turns the returns on a call's stack into its reply: tensors become new handles (all or
 * none), other values IValues; packs Response{call}. 0, or an error (no handle made). */
int opd__job_reply_results(opd__job *job, opd_stack *st, Opd__V1__Response *resp);

#endif

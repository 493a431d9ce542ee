/* worker.h: the worker threads and the per-session FIFO scheduling of requests.
 *
 * [Note: Sessions on workers]
 * A session's requests run in the order sent, one at a time; different sessions run in
 * parallel. Each session has a run queue of jobs; a session with queued work and nothing
 * running is *ready* and sits, once, in the ready list of the pool its first job runs on.
 * A worker takes the first ready session, runs its first job, and then puts the session
 * back at the end of a ready list if more jobs are queued (so sessions take turns), or
 * leaves it idle. A job may keep its session *held* after it ran (a download whose bytes
 * are written from the tensor: nothing of the session may run until they are out, or a
 * later in-place write could change what the client receives); the loop resumes it.
 *
 * Pools: one per device. The CPU pool (its workers also run Meta work) and, when CUDA
 * devices are present, one pool per GPU whose threads run that device's work on the
 * sessions' streams (server/src/gpu.h). A job's `device` selects the pool. Only the loop
 * knows an upload's device; a call's device is that of its tensors, which only the
 * session's running job may look up, so a job is queued on the pool of the device its
 * session last ran on (a guess), and the worker that takes it asks `route` for the real
 * one: a job on the wrong pool goes back to the head of its session's queue, ready on the
 * right pool, and the session's order holds. One lock
 * guards every run queue, state and ready list: the critical sections are a few pointer
 * moves.
 */
#ifndef OPD_SERVER_WORKER_H
#define OPD_SERVER_WORKER_H

#include <pthread.h>
#include <stdbool.h>

#include "job.h"

typedef struct opd__pool opd__pool;
typedef struct opd__sched opd__sched;

typedef enum opd__sched_state {
  OPD__SESSION_IDLE,    /* nothing queued, nothing running */
  OPD__SESSION_READY,   /* in a pool's ready list */
  OPD__SESSION_RUNNING, /* a worker runs its first job */
  OPD__SESSION_HELD,    /* waits for opd__sched_resume */
} opd__sched_state;

/* A session's scheduling state (in opd__session), guarded by the scheduler's lock. */
typedef struct opd__sched_entry {
  opd__job *head, *tail; /* the run queue */
  opd__session *prev, *next;
  opd__pool *pool; /* the ready list the session is in; NULL when none */
  opd__sched_state state;
  bool closed;     /* the connection is gone: nothing more is queued */
  opd_device last; /* the device its last job ran on: where the next is queued */
} opd__sched_entry;

struct opd__pool {
  opd_device device;
  opd__sched *sched;
  pthread_cond_t cv;
  opd__session *ready_head, *ready_tail;
  pthread_t *threads;
  unsigned nthreads;
};

/* Runs a job on a worker; returns true to keep its session held. */
typedef bool (*opd__run_fn)(opd__job *job);
/* On a worker, online as a dispatcher reader, before a job runs (its session is the
 * worker's): the device it runs on. It may prepare the job for running ([Note: Prepared
 * calls] in prepared.h), which it then undoes when the device is another pool's. */
typedef opd_device (*opd__route_fn)(opd__job *job);
/* Hands jobs that ran back to the loop: a list linked by qnext, oldest first ([Note:
 * Handing jobs back in batches] in worker.c). */
typedef void (*opd__done_fn)(opd__job *jobs, void *arg);

struct opd__sched {
  pthread_mutex_t mu;
  bool stopping;
  opd__pool cpu;
  opd__pool *gpu; /* one per CUDA device; NULL when none */
  unsigned ngpu;
  opd__route_fn route; /* NULL without GPU pools */
  opd__run_fn run;
  opd__done_fn done;
  opd__done_fn send; /* sends a batch's responses before it is done (optional) */
  void *done_arg;
};

/* Starts the CPU pool (cpu_workers threads; 0: one per online CPU) with every signal
 * blocked in its threads: 0, or an error with a message. */
int opd__sched_start(opd__sched *s, unsigned cpu_workers, opd__run_fn run, opd__done_fn done,
                     void *done_arg);
/* Adds one pool of `per_device` threads per CUDA device (0 to ndev - 1), before any job is
 * submitted, and routes jobs with `route`: 0, or an error with a message (the pools started
 * so far stay, and opd__sched_stop joins them). */
int opd__sched_start_gpu(opd__sched *s, unsigned ndev, unsigned per_device, opd__route_fn route);
/* Joins the workers; every job must be back (no session queued or running). */
void opd__sched_stop(opd__sched *s);
/* Queues the job on its session (job->session), taking it over; false (job not taken)
 * when the session is closed. */
bool opd__sched_submit(opd__sched *s, opd__job *job);
/* The same for jobs first..last of one session, linked by qnext, in one critical section
 * with at most one wake-up. */
bool opd__sched_submit_list(opd__sched *s, opd__job *first, opd__job *last);
/* Closes the session for scheduling and returns its queued jobs, linked by qnext, in order;
 * a running job finishes and comes back through `done`. */
opd__job *opd__sched_cancel(opd__sched *s, opd__session *session);
/* The pool a device's work runs on (its GPU's, else the CPU pool). */
opd__pool *opd__sched_pool_of(opd__sched *s, opd_device device);
/* Ends a hold: the session's next job may run. */
void opd__sched_resume(opd__sched *s, opd__session *session);

#endif

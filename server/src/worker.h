/* worker.h: the worker threads and the scheduling of the sessions' requests on them.
 *
 * [Note: Sessions on workers]
 * A session's requests run in the order sent, one at a time; different sessions run in
 * parallel. Each session has a run queue of jobs; a session with queued work and nothing
 * running is *ready* and sits, once, in a ready list of the pool its first job runs on
 * (which list: [Note: Fair sharing of workers]). A worker takes the session whose turn is
 * next, runs its first job, and then puts the session back at the end of a ready list if
 * more jobs are queued (so sessions take turns), or leaves it idle. A job may keep its
 * session *held* after it ran (a download whose bytes are written from the tensor: nothing
 * of the session may run until they are out, or a later in-place write could change what
 * the client receives); the loop resumes it.
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
 *
 * [Note: Fair sharing of workers]
 * Many clients share the workers, and one client's expensive work must not stall another's
 * cheap work: a session calling a 1-element add while two others keep matrix products of
 * a second each queued waited for a whole product on every worker. The policy:
 *  - Costs are known before a job runs. A worker that owns a session (it took it from a
 *    ready list, or just ran its job) estimates each of its queued jobs once ([Note: The
 *    cost of a job] in cost.h), outside the lock, at most ESTIMATE_MAX per pass, unless the
 *    loop estimated it already ([Note: Tiny calls on the loop] in conn_loop_calls.c); the job it
 *    is about to run, if nobody estimated it yet, it routes first and estimates from what
 *    routing prepared ([Note: Estimates of prepared jobs] in worker.c). The estimates of a
 *    session's jobs on workers add up to its cost in flight as they are made.
 *  - Lanes. A job is *long* when its estimate passes short_job_us on the CPU, or when it
 *    waits for a device (a CUDA download, upload or synchronize, a copy to the host); the
 *    rest are *short*. Every pool has, beside its workers (`workers`,
 *    cuda_workers_per_device), one *lane* thread kept for short work: it takes a session
 *    whose next job is short when long jobs run and no worker is free, and never a long
 *    job (the session then waits, in its place, for a worker). So a short job never waits
 *    behind a long one, whatever the other sessions queue; with no long job the lane
 *    sleeps and the workers run everything, as before.
 *  - Turns. Ready sessions wait in FIFO lists, one per priority class and lane; a worker
 *    takes the oldest session among the heads it may run (the lane: short lists only),
 *    unless priorities say otherwise (below). A session whose job was cheap may keep its
 *    turn for its next short job ([Note: Handing jobs back in batches] in worker.c) up to
 *    BATCH_MAX jobs or TURN_NS of kernel time, whichever comes first; a long job always
 *    ends the turn. So a session with a thousand jobs queued and one with a single job:
 *    the single job runs at the next turn, after at most one turn of the other.
 *  - Priorities. A session is in class high, normal (the default) or low, asked for at
 *    hello (Hello.priority in proto/opd.proto; at most max_priority) or set by the admin
 *    at any time (set_priority in docs/ADMIN.md: any class, and it stands against a later
 *    hello). Classes share a pool
 *    by stride scheduling on the kernel time their jobs take: each class has a pass that
 *    advances by a job's kernel time (plus 1 us) divided by its weight (4, 2, 1), and the
 *    class with the lowest pass goes next; a class that had nothing ready catches up to
 *    the pass last picked, so it cannot bank idle time. High sessions get about twice the
 *    worker time of normal ones, normal twice that of low ones, and every class makes
 *    progress; within a class, turns are FIFO.
 *  - Limits. A session with max_session_jobs jobs on workers, or whose cost in flight
 *    reaches max_session_cost_ms, is not read from until that drops ([Note: Back-pressure]
 *    in conn_read.c): back-pressure, not an error. The jobs decoded from one read before a
 *    worker estimated them may pass the cost limit (they were already queued); the jobs
 *    limit is exact. max_in_flight still answers RESOURCE_EXHAUSTED.
 *  - [Note: Nicer workers] With worker_nice N, the CPU pool's workers (not its lane
 *    thread, not the GPU pools, whose work is launches) raise their nice value by N before
 *    their first job, so the event loop, the lane and the clients sharing the CPUs with
 *    them preempt their long jobs at once instead of waiting for the end of a time slice.
 *    The default is 6 (0: off); on a machine shared with other programs it also gives the
 *    daemon's compute less of the CPUs than theirs when they compete. docs/PERFORMANCE.md
 *    measures it.
 *  - Threads. The CPU pool reports how many of its threads run a job to the kernels, whose
 *    large loops split over the CPUs the others leave ([Note: Kernel threads and the load]
 *    in kernels/src/parallel.h): the workers and the kernels' threads do not oversubscribe
 *    the CPUs. The lane threads and the event loop, which run briefly and must run soon,
 *    ask the kernel for a short time slice (100 us; sched_attr.sched_runtime, which Linux's
 *    EEVDF scheduler takes since 6.12 as a request to preempt longer-slice threads sooner;
 *    older kernels ignore it): a tiny call then does not wait for a CPU-bound kernel's slice
 *    to end.
 * Calls cheaper than this bookkeeping do not come here: the loop runs them itself while
 * their session has nothing on workers ([Note: Tiny calls on the loop] in conn_loop_calls.c).
 * The GPU pools follow the same policy: a session's downloads and synchronizes, which wait
 * for its stream, hold a worker of the device and never its lane, so another session's
 * launches go on while one session's queued kernels drain.
 */
#ifndef OPD_SERVER_WORKER_H
#define OPD_SERVER_WORKER_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>

#include "job.h"
#include "opd/server.h"

typedef struct opd__pool opd__pool;
typedef struct opd__sched opd__sched;

typedef enum opd__sched_state {
  OPD__SESSION_IDLE,    /* nothing queued, nothing running */
  OPD__SESSION_READY,   /* in a pool's ready list */
  OPD__SESSION_RUNNING, /* a worker owns it: runs its first job, or estimates its queue */
  OPD__SESSION_HELD,    /* waits for opd__sched_resume */
} opd__sched_state;

/* The priority classes (opd_priority, opd/server.h). */
#define OPD__NUM_PRIORITIES 3

/* "normal", "low", "high"; NULL for a value that is not a class. */
const char *opd__priority_name(opd_priority p);

typedef enum opd__lane { OPD__LANE_SHORT, OPD__LANE_LONG, OPD__NUM_LANES } opd__lane;

typedef struct opd__ready_list {
  opd__session *head, *tail;
} opd__ready_list;

/* A session's scheduling state (in opd__session), guarded by the scheduler's lock. */
typedef struct opd__sched_entry {
  opd__job *head, *tail; /* the run queue */
  opd__job *unestimated; /* the first queued job not estimated yet; NULL: none */
  opd__session *prev, *next;
  opd__ready_list *list; /* the ready list the session is in; NULL when none */
  opd__pool *pool;       /* that list's pool */
  uint64_t seq;          /* when it became ready: its place among the ready sessions */
  opd__sched_state state;
  bool closed;            /* the connection is gone: nothing more is queued */
  bool estimating;        /* its owner estimates queued jobs outside the lock */
  bool priority_by_admin; /* the admin set its class: a hello no longer does */
  opd_device last;        /* the device its last job ran on: where the next is queued */
  /* read without the lock: by the loop (back-pressure) and the status endpoint */
  _Atomic int priority;     /* opd_priority */
  _Atomic uint32_t jobs;    /* queued or running on workers */
  _Atomic uint64_t cost_ns; /* the estimates of those of them estimated */
} opd__sched_entry;

struct opd__pool {
  opd_device device;
  opd__sched *sched;
  pthread_cond_t cv;      /* its workers wait here */
  pthread_cond_t lane_cv; /* its lane thread waits here */
  opd__ready_list ready[OPD__NUM_PRIORITIES][OPD__NUM_LANES];
  uint64_t pass[OPD__NUM_PRIORITIES]; /* the classes' stride-scheduling passes */
  uint64_t vtime;                     /* the pass of the class picked last */
  uint64_t seq;                       /* ready order */
  unsigned running, running_long;     /* its threads running a job, a long one */
  unsigned idle;                      /* its workers waiting for work */
  unsigned reported_busy;             /* what the kernels were told last (the CPU pool) */
  bool lane_idle;                     /* its lane thread waits for work */
  bool lane_estimating;               /* it estimates a session's jobs, outside the lock */
  unsigned waiting_lane;              /* workers waiting for that ([Note: Waiting for the
                                       * lane's estimate] in worker.c) */
  bool lane_started;
  pthread_t *threads; /* the workers, then the lane thread */
  unsigned nthreads;  /* workers (the lane thread not counted) */
};

/* Runs a job on a worker; returns true to keep its session held. */
typedef bool (*opd__run_fn)(opd__job *job);
/* On a worker, online as a dispatcher reader, before a job runs (its session is the
 * worker's): the device it runs on. It may prepare the job for running ([Note: Prepared
 * calls] in prepared.h), which it then undoes when the device is another pool's. */
typedef opd_device (*opd__route_fn)(opd__job *job);
/* The scheduler's one question about a job's cost, asked once per job before it runs, on a
 * worker that owns the job's session, online as a dispatcher reader (so it may read the
 * session's handle table and operators' schemas, and must not block): the job's estimated
 * kernel time in ns of one thread of its device (saturating, never wrapping), and in
 * job->waits whether it waits for a device (then it is long whatever its cost). Nothing
 * else of the job may change (a call's operator, once found, stays for its prepare). It may
 * be asked right after `route` prepared the job ([Note: Estimates of prepared jobs] in
 * worker.c). The daemon's is opd__job_estimate ([Note: The cost of a job] in cost.h), which
 * answers per job kind by the ESTIMATE column of requests.def (a graph run: from its
 * compiled graph's cost); a new kind of job gets its estimator there, and the scheduler
 * needs nothing more. */
typedef uint64_t (*opd__estimate_fn)(opd__job *job);
/* Hands jobs that ran back to the loop: a list linked by qnext, oldest first ([Note:
 * Handing jobs back in batches] in worker.c). */
typedef void (*opd__done_fn)(opd__job *jobs, void *arg);

struct opd__sched {
  pthread_mutex_t mu;
  pthread_cond_t estimated; /* cancel waits here for an estimation pass to end */
  bool stopping;
  opd__pool cpu;
  opd__pool *gpu; /* one per CUDA device; NULL when none */
  unsigned ngpu;
  opd__route_fn route; /* NULL without GPU pools */
  opd__run_fn run;
  opd__done_fn done;
  opd__done_fn send; /* sends a batch's responses before it is done (optional) */
  void *done_arg;
  /* set after start, before the first job is submitted: */
  opd__estimate_fn estimate; /* NULL: every job is short and costs nothing */
  uint64_t short_ns;         /* CPU jobs estimated above this are long */
  int worker_nice;           /* the CPU workers' nice increment ([Note: Nicer workers]) */
};

/* Starts the CPU pool (cpu_workers threads; 0: one per online CPU) and its lane thread
 * with every signal blocked in its threads: 0, or an error with a message. */
int opd__sched_start(opd__sched *s, unsigned cpu_workers, opd__run_fn run, opd__done_fn done,
                     void *done_arg);
/* Adds one pool of `per_device` threads, and a lane thread, per CUDA device (0 to ndev - 1),
 * before any job is submitted, and routes jobs with `route`: 0, or an error with a message
 * (the pools started so far stay, and opd__sched_stop joins them). */
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
/* Marks the calling thread latency-sensitive: a short time slice ([Note: Fair sharing of
 * workers]; the event loop's thread and the lane threads). */
void opd__sched_latency_thread(void);
/* Puts the session in a priority class, from its hello or from the admin; the admin's
 * choice stands against a hello that comes after it. A ready session moves to its new
 * class's list, keeping its place in the ready order. Returns the session's class. */
opd_priority opd__sched_set_priority(opd__sched *s, opd__session *session, opd_priority p,
                                     bool by_admin);

#endif

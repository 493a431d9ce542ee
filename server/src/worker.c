/* worker.c: worker pools and the scheduler of the sessions' requests (see [Note: Sessions on
 * workers] and [Note: Fair sharing of workers] in worker.h). */
#define _DEFAULT_SOURCE /* syscall */
#include "worker.h"

#include <assert.h>
#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "opd/dispatcher.h"
#include "opd/error.h"
#include "opd/kernels.h"
#include "opd/memory.h"
#include "session.h"

/* [Note: Handing jobs back in batches]
 * A worker hands finished jobs back to the loop in batches: while it has more work ready
 * (clients pipelining tiny requests), a job whose kernel ran for less than BATCH_CHEAP_NS
 * (job->kernel_ns, measured for the metrics anyway) waits, up to BATCH_MAX jobs, to go back
 * with the next ones, so that a connection's responses leave in a few sends and the loop is
 * woken once for them, if at all, rather than once per job (on a CPU shared with the loop,
 * each wake-up preempts the worker). Anything else ends the batch first: a job that ran
 * longer, a hold, nothing left to run. For the same reason a session whose job was cheap
 * keeps its turn for its next queued job, if that is short, within the batch, instead of
 * going to the end of the ready list: one batch then holds a run of each connection's
 * responses, not one of every connection's. A turn ends after TURN_NS of kernel time, so a
 * session waits for at most BATCH_MAX cheap jobs, or TURN_NS of them, of each session
 * ahead of it ([Note: Fair sharing of workers] in worker.h). The batch's responses leave
 * from the worker ([Note: Responses written by workers] in conn_write.c) when it goes back
 * and, while no other session is ready, every SEND_EVERY jobs: a lone pipelining client
 * then refills its pipeline while the rest of its batch runs, instead of the two taking
 * turns to idle (with other sessions ready, the worker has their work meanwhile, and
 * fewer, larger sends cost less). */
#define BATCH_MAX      64
#define SEND_EVERY     32
#define BATCH_CHEAP_NS 20000
#define TURN_NS        50000

/* [Note: Waiting for the lane's estimate]
 * The lane thread learns whether a session's next job is short by estimating it, which it
 * does outside the lock with the session taken out of its ready list. A light session's
 * single job, which the lane took and found long, could then wait for one more job of a
 * heavy session in two ways (seen as test_single_job_next_turn_long running one extra job
 * under ASan, about one run in nine): a worker picking meanwhile does not see the light
 * session, and a heavy session requeued meanwhile is ahead of it in the long list when the
 * lane puts it back. So while the lane estimates, a worker about to pick waits for it (a few
 * microseconds: at most ESTIMATE_MAX estimates), and a session put back in its place goes
 * into its list in ready order (ready_push), not at the end. */
/* jobs estimated per pass of a session's owner ([Note: Fair sharing of workers]) */
#define ESTIMATE_MAX 64

static const unsigned class_weight[OPD__NUM_PRIORITIES] = {
    [OPD_PRIORITY_HIGH] = 4, [OPD_PRIORITY_NORMAL] = 2, [OPD_PRIORITY_LOW] = 1};

const char *opd__priority_name(opd_priority p) {
  switch (p) {
  case OPD_PRIORITY_NORMAL: return "normal";
  case OPD_PRIORITY_LOW: return "low";
  case OPD_PRIORITY_HIGH: return "high";
  }
  return NULL;
}

/* The pool a device's work runs on: its GPU's pool, else the CPU pool (Meta work needs no
 * device; a CUDA device without a pool fails on the CPU pool, in execute.c). */
static opd__pool *pool_for(opd__sched *s, opd_device device) {
  if (device.type == OPD_DEVICE_CUDA) {
    unsigned i = device.index < 0 ? 0 : (unsigned)device.index;
    if (i < s->ngpu) return &s->gpu[i];
  }
  return &s->cpu;
}

/* A job's lane on pool p: long when it waits for a device, or when a CPU job's estimate
 * passes short_ns; an unestimated job counts as short. */
static opd__lane lane_of(const opd__sched *s, const opd__pool *p, const opd__job *job) {
  if (job->waits) return OPD__LANE_LONG;
  return p->device.type != OPD_DEVICE_CUDA && job->costed && job->cost_ns > s->short_ns
             ? OPD__LANE_LONG
             : OPD__LANE_SHORT;
}

static bool any_ready(const opd__pool *p, int lanes) {
  for (int c = 0; c < OPD__NUM_PRIORITIES; c++)
    for (int l = 0; l < lanes; l++)
      if (p->ready[c][l].head) return true;
  return false;
}

/* The thread to wake for p's ready sessions (lock held): a waiting worker when any is
 * ready, else the lane thread when a short session is ready while long jobs hold the
 * workers; NULL when none is needed. The caller signals it after unlocking, where it can
 * (a thread woken while the lock is still held would only block on it). */
static pthread_cond_t *wake_target(opd__pool *p) {
  if (p->idle && any_ready(p, OPD__NUM_LANES)) return &p->cv;
  if (p->lane_idle && !p->idle && p->running_long && any_ready(p, 1)) return &p->lane_cv;
  return NULL;
}

static void wake(pthread_cond_t *cv) {
  if (cv) pthread_cond_signal(cv);
}

/* Puts a session in the ready list of its first job's pool, class and lane (a new place in
 * the ready order unless `keep_place`), and returns the thread to wake. A list is in ready
 * order: a session keeping its place goes before those that became ready after it (the
 * lane puts back a session it found long behind others requeued meanwhile: [Note: Waiting
 * for the lane's estimate]). */
static pthread_cond_t *ready_push(opd__sched *s, opd__session *session, bool keep_place) {
  opd__sched_entry *e = &session->sched;
  assert(e->head && !e->list);
  opd__pool *p = pool_for(s, e->head->device);
  int c = atomic_load_explicit(&e->priority, memory_order_relaxed);
  opd__ready_list *l = &p->ready[c][lane_of(s, p, e->head)];
  if (!p->ready[c][OPD__LANE_SHORT].head && !p->ready[c][OPD__LANE_LONG].head &&
      p->pass[c] < p->vtime)
    p->pass[c] = p->vtime; /* idle time is not banked */
  if (!keep_place) e->seq = p->seq++;
  e->list = l;
  e->pool = p;
  opd__session *after = l->tail; /* the last session ready before it */
  while (after && after->sched.seq > e->seq) after = after->sched.prev;
  e->prev = after;
  e->next = after ? after->sched.next : l->head;
  if (e->next)
    e->next->sched.prev = session;
  else
    l->tail = session;
  if (after)
    after->sched.next = session;
  else
    l->head = session;
  e->state = OPD__SESSION_READY;
  return wake_target(p);
}

opd__pool *opd__sched_pool_of(opd__sched *s, opd_device device) {
  return pool_for(s, device);
}

static void ready_unlink(opd__session *session) {
  opd__sched_entry *e = &session->sched;
  opd__ready_list *l = e->list;
  if (e->prev)
    e->prev->sched.next = e->next;
  else
    l->head = e->next;
  if (e->next)
    e->next->sched.prev = e->prev;
  else
    l->tail = e->prev;
  e->list = NULL;
  e->pool = NULL;
  e->prev = e->next = NULL;
}

/* The session whose turn is next on p for a worker (or, `lane`, the lane thread, which runs
 * only short work and only while long jobs hold every worker), taken out of its list and
 * RUNNING; NULL when there is none. Lock held. */
static opd__session *pick(opd__pool *p, bool lane) {
  if (lane && (!p->running_long || p->idle)) return NULL;
  opd__ready_list *best = NULL;
  int bc = 0;
  for (int c = 0; c < OPD__NUM_PRIORITIES; c++)
    for (int l = 0; l < (lane ? 1 : OPD__NUM_LANES); l++) {
      opd__session *h = p->ready[c][l].head;
      if (h && (!best || p->pass[c] < p->pass[bc] ||
                (p->pass[c] == p->pass[bc] && h->sched.seq < best->head->sched.seq))) {
        best = &p->ready[c][l];
        bc = c;
      }
    }
  if (!best) return NULL;
  opd__session *session = best->head;
  p->vtime = p->pass[bc];
  ready_unlink(session);
  session->sched.state = OPD__SESSION_RUNNING;
  return session;
}

/* After a job ran (or a hold ended): next turn or idle; the thread to wake. Lock held. */
static pthread_cond_t *requeue_or_idle(opd__sched *s, opd__session *session) {
  if (session->sched.head) return ready_push(s, session, false);
  session->sched.state = OPD__SESSION_IDLE;
  return NULL;
}

static void add_cost(opd__sched_entry *e, uint64_t add, uint64_t sub) {
  uint64_t c = atomic_load_explicit(&e->cost_ns, memory_order_relaxed);
  c = c - sub + add < c - sub ? UINT64_MAX : c - sub + add;
  atomic_store_explicit(&e->cost_ns, c, memory_order_relaxed);
}

static void add_jobs(opd__sched_entry *e, int delta) {
  uint32_t n = atomic_load_explicit(&e->jobs, memory_order_relaxed);
  atomic_store_explicit(&e->jobs, n + (uint32_t)delta, memory_order_relaxed);
}

/* [Note: Estimates of prepared jobs]
 * A worker that takes a session whose next job nobody estimated yet (one request to an
 * idle session, the common case) routes that job first, which prepares a call ([Note:
 * Prepared calls] in prepared.h) and finds a graph run's graph, and then estimates it from
 * what was found: its handles, operator and graph are looked up once. The jobs queued
 * behind it are estimated from their requests ([Note: The cost of a job] in cost.h), since
 * the jobs before them may make or release what they name. The lane thread, which must know
 * that a job is short before it takes it, estimates the next job from its request, as does
 * a worker whose session's turn goes on (the next job's estimate decides whether it may);
 * a job routed to another pool goes back unestimated, to be estimated by whoever takes it
 * there. */

/* Estimates up to ESTIMATE_MAX of the session's queued jobs not estimated yet, outside the
 * lock (taken on entry and exit), and its first job if it went back unestimated, unless
 * `skip_head` (the caller prepares it first: [Note: Estimates of prepared jobs]); the caller
 * owns the session (RUNNING) and is, or here becomes, an online dispatcher reader
 * (*online). Cancel waits for the pass: the jobs stay the scheduler's meanwhile. */
static void estimate_queued(opd__sched *s, opd__session *session, bool *online, bool skip_head) {
  opd__sched_entry *e = &session->sched;
  opd__job *head = e->head, *j = e->unestimated, *last = e->tail;
  bool head_too = !skip_head && head && !head->costed && head != j;
  if (skip_head && j && j == head) j = j->qnext;
  if ((!j && !head_too) || !s->estimate || e->closed) return;
  e->estimating = true;
  pthread_mutex_unlock(&s->mu);
  if (!*online) { /* estimates read schemas */
    opd_reader_online();
    *online = true;
  }
  uint64_t sum = 0;
  if (head_too) {
    head->cost_ns = s->estimate(head);
    head->costed = true;
    sum = head->cost_ns;
  }
  for (unsigned n = 1; j; n++, j = j->qnext) { /* jobs up to `last` keep their links */
    if (!j->costed) { /* the loop may have estimated it already ([Note: Tiny calls on the loop]) */
      j->cost_ns = s->estimate(j);
      j->costed = true;
    }
    sum = sum + j->cost_ns < sum ? UINT64_MAX : sum + j->cost_ns;
    if (j == last || n == ESTIMATE_MAX) break;
  }
  pthread_mutex_lock(&s->mu);
  e->estimating = false;
  if (j) e->unestimated = j->qnext;
  add_cost(e, sum, 0);
  if (e->closed) pthread_cond_broadcast(&s->estimated);
}

/* The CPU pool's busy threads, for the kernels ([Note: Kernel threads and the load]); 0 and
 * 1 give a kernel the same threads, so a lone worker going busy and idle writes nothing. */
static void report_busy(opd__pool *p) {
  unsigned busy = p->running > 1 ? p->running : 1;
  if (p->device.type != OPD_DEVICE_CPU || busy == p->reported_busy) return;
  p->reported_busy = busy;
  opd_kernels_set_busy_threads(busy);
}

/* What a worker thread carries from one job to the next. */
typedef struct worker {
  opd__pool *p;
  opd__sched *s;
  bool lane;                    /* the pool's lane thread */
  opd__job *batch, *batch_tail; /* ran, not handed back yet (by qnext) */
  unsigned nbatch;
  opd__session *turn; /* a session whose turn goes on: RUNNING, with jobs queued */
  uint64_t turn_ns;   /* kernel time of the turn so far */
  bool online;        /* a dispatcher reader online */
  bool niced;         /* [Note: Nicer workers] done, or not wanted */
} worker;

/* Wakes cv (NULL: none) outside the lock, which is held again on return. */
static void wake_outside(opd__sched *s, pthread_cond_t *cv) {
  pthread_mutex_unlock(&s->mu);
  wake(cv);
  pthread_mutex_lock(&s->mu);
}

/* Hands the batch back to the loop, offline first (lock not held). */
static void hand_back(worker *w) {
  opd_reader_offline();
  w->online = false;
  w->s->done(w->batch, w->s->done_arg);
  w->batch = w->batch_tail = NULL;
  w->nbatch = 0;
}

/* The session whose job the worker runs next, RUNNING: its turn going on, or one picked from
 * the ready lists; meanwhile the batch goes back, the worker goes offline, or it waits. NULL
 * when the server stops. Lock held. */
static opd__session *next_session(worker *w) {
  opd__sched *s = w->s;
  opd__pool *p = w->p;
  for (;;) {
    if (w->turn && (s->stopping || !w->turn->sched.head)) { /* cancelled meanwhile */
      pthread_cond_t *cv = requeue_or_idle(s, w->turn);
      w->turn = NULL;
      wake_outside(s, cv);
    }
    opd__session *session = w->turn;
    w->turn = NULL;
    if (session) return session; /* its turn goes on */
    if (!w->lane && p->lane_estimating && !s->stopping) {
      p->waiting_lane++; /* [Note: Waiting for the lane's estimate] */
      pthread_cond_wait(&p->cv, &s->mu);
      p->waiting_lane--;
    } else if (!s->stopping && (session = pick(p, w->lane))) {
      w->turn_ns = 0;
      return session;
    } else if (w->batch) {
      pthread_mutex_unlock(&s->mu);
      hand_back(w);
      pthread_mutex_lock(&s->mu);
    } else if (w->online) { /* it estimated a session it could not run (the lane) */
      pthread_mutex_unlock(&s->mu);
      opd_reader_offline();
      w->online = false;
      pthread_mutex_lock(&s->mu);
    } else if (s->stopping) {
      return NULL;
    } else if (w->lane) {
      p->lane_idle = true;
      pthread_cond_wait(&p->lane_cv, &s->mu);
      p->lane_idle = false;
    } else {
      p->idle++;
      pthread_cond_wait(&p->cv, &s->mu);
      p->idle--;
    }
  }
}

/* Estimates the session's queue and takes its first job off it; NULL when there is none for
 * this thread to run (a cancel took the queue; the lane found the job long and put the
 * session back in its place, for a worker). *prepare_first: the job is estimated once it is
 * routed ([Note: Estimates of prepared jobs]). Lock held. */
static opd__job *take_job(worker *w, opd__session *session, bool *prepare_first) {
  opd__sched *s = w->s;
  opd__pool *p = w->p;
  opd__sched_entry *e = &session->sched;
  assert(e->state == OPD__SESSION_RUNNING && e->head);
  bool lane_estimates = w->lane && e->unestimated;
  *prepare_first = !w->lane && s->route && s->estimate && !e->head->costed;
  p->lane_estimating |= lane_estimates;
  estimate_queued(s, session, &w->online, *prepare_first);
  if (lane_estimates) {
    p->lane_estimating = false;
    if (p->waiting_lane) pthread_cond_broadcast(&p->cv);
  }
  if (e->closed) { /* a cancel waited for the estimate: the queue is its to take */
    e->state = OPD__SESSION_IDLE;
    return NULL;
  }
  opd__job *job = e->head;
  if (w->lane && lane_of(s, p, job) == OPD__LANE_LONG) { /* back in its place, for a worker */
    wake_outside(s, ready_push(s, session, true));
    return NULL;
  }
  if (!(e->head = job->qnext)) e->tail = NULL;
  if (e->unestimated == job) e->unestimated = job->qnext; /* prepared first */
  job->qnext = NULL;
  return job;
}

/* [Note: Sessions on workers]: asks `route` for the job's device (estimating it then if
 * prepare_first); false when the job moves to another pool: it goes back to the head of its
 * session's queue, ready on that pool. Lock held. */
static bool route_job(worker *w, opd__session *session, opd__job *job, bool prepare_first) {
  opd__sched *s = w->s;
  if (!s->route) return true;
  opd__sched_entry *e = &session->sched;
  pthread_mutex_unlock(&s->mu);
  if (!w->online) { /* route reads the session's handles and operators */
    opd_reader_online();
    w->online = true;
  }
  job->device = s->route(job);
  bool moves = pool_for(s, job->device) != w->p;
  bool estimated = !moves && prepare_first;
  if (estimated) {
    job->cost_ns = s->estimate(job);
    job->costed = true;
  }
  pthread_mutex_lock(&s->mu);
  if (estimated) add_cost(e, job->cost_ns, 0);
  if (!moves) return true;
  if (!(job->qnext = e->head)) e->tail = job;
  e->head = job;
  wake_outside(s, ready_push(s, session, false));
  return false;
}

/* Runs the job, online and, for a CPU worker, nicer ([Note: Nicer workers]): true when its
 * session stays held. Lock not held. */
static bool run_job(worker *w, opd__job *job) {
  opd__sched *s = w->s;
  if (!w->online) {
    opd_reader_online();
    w->online = true;
  }
  if (!w->niced) { /* a hint: where refused, nothing changes */
    w->niced = true;
    int tid = (int)syscall(SYS_gettid);
    errno = 0;
    int now = getpriority(PRIO_PROCESS, (id_t)tid);
    if (s->worker_nice > 0 && errno == 0)
      (void)setpriority(PRIO_PROCESS, (id_t)tid, now + s->worker_nice);
  }
  return s->run(job);
}

/* After the job ran: updates the pool's and session's accounts and decides where the session
 * goes next: kept by this worker for its next short job ([Note: Handing jobs back in
 * batches]), requeued, or idle. Returns the thread to wake. Lock held. */
static pthread_cond_t *end_job(worker *w, opd__session *session, opd__job *job, bool is_long,
                               bool hold) {
  opd__sched *s = w->s;
  opd__pool *p = w->p;
  opd__sched_entry *e = &session->sched;
  p->running--;
  p->running_long -= is_long;
  report_busy(p);
  int c = atomic_load_explicit(&e->priority, memory_order_relaxed);
  p->pass[c] += (job->kernel_ns + 1000) * (class_weight[OPD_PRIORITY_HIGH] / class_weight[c]);
  add_cost(e, 0, job->costed ? job->cost_ns : 0);
  add_jobs(e, -1);
  e->last = job->device;
  w->turn_ns += job->kernel_ns;
  if (hold) {
    e->state = OPD__SESSION_HELD;
    return NULL;
  }
  if (e->closed) { /* cancelled: what is left is the cancel's */
    e->state = OPD__SESSION_IDLE;
    return NULL;
  }
  if (!s->stopping) estimate_queued(s, session, &w->online, false);
  if (job->kernel_ns < BATCH_CHEAP_NS && e->head && !s->stopping && w->nbatch + 1 < BATCH_MAX &&
      w->turn_ns < TURN_NS && pool_for(s, e->head->device) == p &&
      lane_of(s, p, e->head) == OPD__LANE_SHORT) {
    w->turn = session;
    return NULL;
  }
  return requeue_or_idle(s, session);
}

/* Adds the job to the batch, and hands the batch back unless more cheap work follows
 * (`more`), sending its responses early while no other session is ready (`others`). Lock not
 * held. */
static void batch_job(worker *w, opd__job *job, bool more, bool others) {
  opd__sched *s = w->s;
  if (w->batch_tail)
    w->batch_tail->qnext = job;
  else
    w->batch = job;
  w->batch_tail = job;
  if (!more || ++w->nbatch >= BATCH_MAX) {
    assert(!w->turn);
    hand_back(w);
    return;
  }
  if (s->send && !others && w->nbatch % SEND_EVERY == 0) s->send(w->batch, s->done_arg);
  opd_reader_quiescent(); /* between two calls: a registration waits for no more */
}

/* A worker is a dispatcher reader that is online only while it runs requests or estimates
 * them (passing a quiescent state between two of a batch), so that registration changes
 * wait for the requests in flight and never for idle workers ([Note: Registration under
 * traffic] in dispatcher/src/registry.c). `lane`: the pool's lane thread. Each round: the
 * next session, its next job, its route, the run, the accounts, the batch. */
static void worker_loop(opd__pool *p, bool lane) {
  opd__sched *s = p->sched;
  worker w = {.p = p, .s = s, .lane = lane, .niced = lane || p->device.type != OPD_DEVICE_CPU};
  opd_reader_register();
  opd_reader_offline();
  pthread_mutex_lock(&s->mu);
  opd__session *session;
  while ((session = next_session(&w))) {
    bool prepare_first;
    opd__job *job = take_job(&w, session, &prepare_first);
    if (!job || !route_job(&w, session, job, prepare_first)) continue;
    bool is_long = lane_of(s, p, job) == OPD__LANE_LONG;
    p->running++;
    p->running_long += is_long;
    report_busy(p);
    pthread_cond_t *cv = is_long ? wake_target(p) : NULL; /* short work may need the lane */
    pthread_mutex_unlock(&s->mu);
    wake(cv);

    bool hold = run_job(&w, job);

    pthread_mutex_lock(&s->mu);
    cv = end_job(&w, session, job, is_long, hold);
    bool others = any_ready(p, OPD__NUM_LANES);
    bool more = !hold && job->kernel_ns < BATCH_CHEAP_NS && (w.turn || others);
    pthread_mutex_unlock(&s->mu);
    wake(cv);
    /* the session may be freed once the loop has the job back: touch it no more (a
     * session whose turn goes on has jobs in this batch, not back yet) */
    batch_job(&w, job, more, others);
    pthread_mutex_lock(&s->mu);
  }
  pthread_mutex_unlock(&s->mu);
  assert(!w.batch && !w.turn);
  if (w.online) opd_reader_offline();
  opd_reader_unregister();
}

/* sched_setattr(2)'s argument (glibc wraps neither; linux/sched/types.h clashes with
 * sched.h) */
struct latency_attr {
  uint32_t size, sched_policy;
  uint64_t sched_flags;
  int32_t sched_nice;
  uint32_t sched_priority;
  uint64_t sched_runtime, sched_deadline, sched_period;
};
#define LATENCY_SLICE_NS 100000

void opd__sched_latency_thread(void) {
  struct latency_attr a;
  /* the thread's own policy and nice value stay; only the slice changes, and only for a
   * thread of the ordinary policy. A hint: where refused, nothing changes. */
  if (syscall(SYS_sched_getattr, 0, &a, sizeof a, 0) != 0 || a.sched_policy != SCHED_OTHER) return;
  a.size = sizeof a;
  a.sched_flags = 0;
  a.sched_runtime = LATENCY_SLICE_NS;
  (void)syscall(SYS_sched_setattr, 0, &a, 0);
}

static void *worker_main(void *arg) {
  worker_loop(arg, false);
  return NULL;
}

static void *lane_main(void *arg) {
  opd__sched_latency_thread();
  worker_loop(arg, true);
  return NULL;
}

/* Starts n workers and the lane thread in p (threads has room for n + 1) with every signal
 * blocked: 0 or pthread_create's error. */
static int start_threads(opd__pool *p, unsigned n) {
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  int rc = 0;
  for (; p->nthreads < n; p->nthreads++)
    if ((rc = pthread_create(&p->threads[p->nthreads], NULL, worker_main, p)) != 0) break;
  if (rc == 0 && (rc = pthread_create(&p->threads[n], NULL, lane_main, p)) == 0)
    p->lane_started = true;
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  return rc;
}

static void init_pool(opd__pool *p, opd__sched *s, opd_device device) {
  p->device = device;
  p->sched = s;
  pthread_cond_init(&p->cv, NULL);
  pthread_cond_init(&p->lane_cv, NULL);
}

int opd__sched_start(opd__sched *s, unsigned cpu_workers, opd__run_fn run, opd__done_fn done,
                     void *done_arg) {
  memset(s, 0, sizeof *s);
  s->run = run;
  s->done = done;
  s->done_arg = done_arg;
  if (cpu_workers == 0) {
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    cpu_workers = n > 0 ? (unsigned)n : 1;
  }
  opd__pool *p = &s->cpu;
  if (!(p->threads = opd__calloc(cpu_workers + 1, sizeof *p->threads)))
    return opd_error(OPD_ENOMEM, "out of memory starting %u workers", cpu_workers);
  pthread_mutex_init(&s->mu, NULL);
  pthread_cond_init(&s->estimated, NULL);
  init_pool(p, s, (opd_device){OPD_DEVICE_CPU, -1});
  /* workers never take signals: the daemon's signals go to its main thread */
  int rc = start_threads(p, cpu_workers);
  if (rc != 0) {
    unsigned started = p->nthreads + p->lane_started;
    opd__sched_stop(s);
    return opd_error(OPD_ERESOURCE, "cannot start worker thread %u of %u: %s", started + 1,
                     cpu_workers + 1, strerror(rc));
  }
  return 0;
}

int opd__sched_start_gpu(opd__sched *s, unsigned ndev, unsigned per_device, opd__route_fn route) {
  assert(!s->gpu && ndev > 0 && per_device > 0);
  if (!(s->gpu = opd__calloc(ndev, sizeof *s->gpu)))
    return opd_error(OPD_ENOMEM, "out of memory starting %u GPU pools", ndev);
  s->route = route;
  for (unsigned d = 0; d < ndev; d++) {
    opd__pool *p = &s->gpu[d];
    if (!(p->threads = opd__calloc(per_device + 1, sizeof *p->threads)))
      return opd_error(OPD_ENOMEM, "out of memory starting the workers of cuda:%u", d);
    init_pool(p, s, (opd_device){OPD_DEVICE_CUDA, (int16_t)d});
    s->ngpu = d + 1; /* stop joins this pool from now on */
    int rc = start_threads(p, per_device);
    if (rc != 0)
      return opd_error(OPD_ERESOURCE, "cannot start worker thread %u of cuda:%u: %s",
                       p->nthreads + p->lane_started + 1, d, strerror(rc));
  }
  return 0;
}

static void stop_pool(opd__pool *p) {
  for (unsigned i = 0; i < p->nthreads + p->lane_started; i++) pthread_join(p->threads[i], NULL);
  opd__free(p->threads);
  pthread_cond_destroy(&p->cv);
  pthread_cond_destroy(&p->lane_cv);
}

static void stop_signal(opd__pool *p) {
  assert(!any_ready(p, OPD__NUM_LANES));
  pthread_cond_broadcast(&p->cv);
  pthread_cond_broadcast(&p->lane_cv);
}

void opd__sched_stop(opd__sched *s) {
  pthread_mutex_lock(&s->mu);
  s->stopping = true;
  stop_signal(&s->cpu);
  for (unsigned d = 0; d < s->ngpu; d++) stop_signal(&s->gpu[d]);
  pthread_mutex_unlock(&s->mu);
  stop_pool(&s->cpu);
  for (unsigned d = 0; d < s->ngpu; d++) stop_pool(&s->gpu[d]);
  opd__free(s->gpu);
  pthread_cond_destroy(&s->estimated);
  pthread_mutex_destroy(&s->mu);
}

bool opd__sched_submit_list(opd__sched *s, opd__job *first, opd__job *last) {
  opd__sched_entry *e = &first->session->sched;
  pthread_mutex_lock(&s->mu);
  if (e->closed) {
    pthread_mutex_unlock(&s->mu);
    return false;
  }
  int n = 0;
  for (opd__job *job = first;; job = job->qnext) {
    assert(job->session == first->session);
    job->at_worker = true;
    if (s->route && job->kind != OPD__JOB_UPLOAD) job->device = e->last; /* a guess */
    n++;
    if (job == last) break;
  }
  last->qnext = NULL;
  if (e->tail)
    e->tail->qnext = first;
  else
    e->head = first;
  e->tail = last;
  if (!e->unestimated) e->unestimated = first;
  add_jobs(e, n);
  pthread_cond_t *w = e->state == OPD__SESSION_IDLE ? ready_push(s, first->session, false) : NULL;
  pthread_mutex_unlock(&s->mu);
  wake(w);
  return true;
}

bool opd__sched_submit(opd__sched *s, opd__job *job) {
  return opd__sched_submit_list(s, job, job);
}

opd__job *opd__sched_cancel(opd__sched *s, opd__session *session) {
  opd__sched_entry *e = &session->sched;
  pthread_mutex_lock(&s->mu);
  e->closed = true;
  while (e->estimating) pthread_cond_wait(&s->estimated, &s->mu);
  opd__job *jobs = e->head, *unestimated = e->unestimated;
  e->head = e->tail = e->unestimated = NULL;
  int n = 0;
  uint64_t cost = 0;
  bool counted = true; /* the jobs before `unestimated` are in cost_ns (the loop may have
                          costed later ones, whose cost is not added yet) */
  for (opd__job *j = jobs; j; j = j->qnext) {
    n++;
    counted = counted && j != unestimated;
    cost += counted ? j->cost_ns : 0;
  }
  add_jobs(e, -n);
  add_cost(e, 0, cost);
  if (e->state == OPD__SESSION_READY) {
    ready_unlink(session);
    e->state = OPD__SESSION_IDLE;
  }
  pthread_mutex_unlock(&s->mu);
  for (opd__job *j = jobs; j; j = j->qnext) j->at_worker = false;
  return jobs;
}

void opd__sched_resume(opd__sched *s, opd__session *session) {
  pthread_mutex_lock(&s->mu);
  assert(session->sched.state == OPD__SESSION_HELD);
  pthread_cond_t *w = requeue_or_idle(s, session);
  pthread_mutex_unlock(&s->mu);
  wake(w);
}

opd_priority opd__sched_set_priority(opd__sched *s, opd__session *session, opd_priority p,
                                     bool by_admin) {
  opd__sched_entry *e = &session->sched;
  pthread_cond_t *w = NULL;
  pthread_mutex_lock(&s->mu);
  if (by_admin || !e->priority_by_admin) {
    e->priority_by_admin |= by_admin;
    bool ready = e->list != NULL;
    if (ready) ready_unlink(session);
    atomic_store_explicit(&e->priority, (int)p, memory_order_relaxed);
    if (ready) w = ready_push(s, session, true);
  }
  opd_priority now = (opd_priority)atomic_load_explicit(&e->priority, memory_order_relaxed);
  pthread_mutex_unlock(&s->mu);
  wake(w);
  return now;
}

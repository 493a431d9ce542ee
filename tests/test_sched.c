/* test_sched.c: fair sharing of the workers ([Note: Fair sharing of workers] in
 * server/src/worker.h, [Note: The cost of a job] in server/src/cost.h, [Note: Kernel threads
 * and the load] in kernels/src/parallel.h). The scheduler with fake jobs, which block where
 * a case needs them to (no timings): a single job runs at the next turn beside a session
 * with a thousand queued; a short job runs on the lane while long ones hold every worker,
 * on the CPU and on a GPU pool, and the lane never runs a long one; priority classes share
 * a worker 4:2:1; a session's jobs are estimated once, before they reach the head, and add
 * up to its cost in flight; cancel waits for an estimation in progress; kernels run inline
 * while every worker is busy. The estimates of real requests. And through a daemon in this
 * process: the back-pressure limits, the priority granted at hello, a tiny call that
 * completes while another session's long product still runs on the only worker, and tiny
 * calls on the event loop (which ones, in order, and an operator that turns slow). */
#include <check.h>
#include <errno.h>
#include <jansson.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "../kernels/src/parallel.h"
#include "admin.h"
#include "cost.h"
#include "decode.h"
#include "loop.h"
#include "metrics.h"
#include "opd/client.h"
#include "opd/graph.h"
#include "opd/graph_exec.h"
#include "opd/kernels.h"
#include "opd/memory.h"
#include "opd/server.h"
#include "session.h"
#include "worker.h"

Suite *opd_test_sched_suite(void);

/* ---- fake jobs ---- */

enum { NSESS = 4, MAXJOBS = 1100 };

typedef struct tjob {
  opd__job job; /* first: the scheduler's */
  int session, index;
  uint64_t cost;      /* what the fake estimate says */
  uint64_t kernel_ns; /* what the fake run reports */
  bool waits;
  bool gated;         /* its run blocks until the gate opens */
  bool gate_estimate; /* its estimate blocks until the gate opens */
  _Atomic int estimates;
  pthread_t ran_on;
  int nice; /* its thread's nice value, where a body records it */
} tjob;

typedef struct run {
  opd__sched sched;
  opd_server_config cfg;
  opd__session sessions[NSESS];
  tjob jobs[NSESS][MAXJOBS];
  pthread_mutex_t mu;
  pthread_cond_t cv;
  bool gate_open;
  int running_gated, estimating_gated;
  int order[NSESS * MAXJOBS]; /* session * MAXJOBS + index, as jobs start */
  int norder;
  _Atomic int done;
  _Atomic int long_on_lane;
  void (*body)(tjob *t); /* what a run does beside recording, if anything */
} run;

static run *R;

static bool on_lane(const opd__pool *p) {
  return p->lane_started && pthread_equal(p->threads[p->nthreads], pthread_self());
}

static bool fake_run(opd__job *job) {
  tjob *t = (tjob *)job;
  t->ran_on = pthread_self();
  pthread_mutex_lock(&R->mu);
  R->order[R->norder++] = t->session * MAXJOBS + t->index;
  if (t->gated) {
    R->running_gated++;
    pthread_cond_broadcast(&R->cv);
    while (!R->gate_open) pthread_cond_wait(&R->cv, &R->mu);
  }
  pthread_mutex_unlock(&R->mu);
  if ((t->cost > R->sched.short_ns || t->waits) &&
      (on_lane(&R->sched.cpu) || (R->sched.ngpu && on_lane(&R->sched.gpu[0]))))
    atomic_fetch_add(&R->long_on_lane, 1);
  if (R->body) R->body(t);
  job->kernel_ns = t->kernel_ns;
  return false;
}

static uint64_t fake_estimate(opd__job *job) {
  tjob *t = (tjob *)job;
  atomic_fetch_add(&t->estimates, 1);
  if (t->gate_estimate) {
    pthread_mutex_lock(&R->mu);
    R->estimating_gated++;
    pthread_cond_broadcast(&R->cv);
    while (!R->gate_open) pthread_cond_wait(&R->cv, &R->mu);
    pthread_mutex_unlock(&R->mu);
  }
  job->waits = t->waits;
  return t->cost;
}

static void fake_done(opd__job *jobs, void *arg) {
  (void)arg;
  for (opd__job *j = jobs; j; j = j->qnext) atomic_fetch_add(&R->done, 1);
}

#define LONG_NS  (1000 * 1000 * 1000) /* estimated: a second */
#define SHORT_NS 100000               /* the scheduler's short_ns in these cases */

/* A scheduler of `workers` CPU workers running fake jobs, and NSESS sessions. */
static void start_run(unsigned workers) {
  R = calloc(1, sizeof *R);
  ck_assert_ptr_nonnull(R);
  pthread_mutex_init(&R->mu, NULL);
  pthread_cond_init(&R->cv, NULL);
  opd_server_config_init(&R->cfg);
  ck_assert_int_eq(opd__sched_start(&R->sched, workers, fake_run, fake_done, NULL), 0);
  R->sched.estimate = fake_estimate; /* before the first job, as loop.c sets them */
  R->sched.short_ns = SHORT_NS;
  for (int i = 0; i < NSESS; i++) {
    opd__session_init(&R->sessions[i], (uint64_t)i + 1, &R->cfg);
    for (int k = 0; k < MAXJOBS; k++) {
      tjob *t = &R->jobs[i][k];
      t->job.session = &R->sessions[i];
      t->job.kind = OPD__JOB_CALL;
      t->job.device = (opd_device){OPD_DEVICE_CPU, -1};
      t->job.id = (uint64_t)k + 1;
      t->session = i;
      t->index = k;
    }
  }
}

static tjob *J(int session, int index) {
  return &R->jobs[session][index];
}

static void submit(int session, int index) {
  ck_assert(opd__sched_submit(&R->sched, &J(session, index)->job));
}

/* Waits (at most 10 s) until `pred` holds under R->mu; false if it never did. */
static bool wait_for(bool (*pred)(void *), void *arg) {
  struct timespec until;
  clock_gettime(CLOCK_REALTIME, &until);
  until.tv_sec += 10;
  pthread_mutex_lock(&R->mu);
  bool ok;
  while (!(ok = pred(arg)))
    if (pthread_cond_timedwait(&R->cv, &R->mu, &until) != 0 && !(ok = pred(arg))) break;
  pthread_mutex_unlock(&R->mu);
  return ok;
}

static bool gated_running(void *n) {
  return R->running_gated >= *(int *)n;
}

static bool estimating(void *n) {
  return R->estimating_gated >= *(int *)n;
}

static void wait_gated(int n) {
  ck_assert_msg(wait_for(gated_running, &n), "%d gated jobs never ran", n);
}

static void open_gate(void) {
  pthread_mutex_lock(&R->mu);
  R->gate_open = true;
  pthread_cond_broadcast(&R->cv);
  pthread_mutex_unlock(&R->mu);
}

static void wait_done(int n) {
  for (int t = 0; t < 2000 && atomic_load(&R->done) < n; t++)
    nanosleep(&(struct timespec){0, 5000000}, NULL);
  ck_assert_int_eq(atomic_load(&R->done), n);
}

static void stop_run(void) {
  opd__sched_stop(&R->sched);
  for (int i = 0; i < NSESS; i++) opd__session_destroy(&R->sessions[i]);
  opd_server_config_destroy(&R->cfg);
  free(R);
  R = NULL;
}

/* Where job (session, index) started in the order of runs, or -1. */
static int position(int session, int index) {
  for (int i = 0; i < R->norder; i++)
    if (R->order[i] == session * MAXJOBS + index) return i;
  return -1;
}

/* ---- turns ---- */

/* One worker; session 0 has a thousand jobs queued behind a running one, session 1 one job:
 * that job runs after at most one turn of session 0 (BATCH_MAX = 64 cheap jobs, or
 * TURN_NS = 50 us of kernel time: 5 jobs of 10 us), and a long job right after the running
 * one. Checks session 0's order and returns how many of its jobs ran before that job. */
static int single_job_after(uint64_t cost, uint64_t kernel_ns) {
  start_run(1);
  for (int k = 0; k < 1000; k++) {
    J(0, k)->cost = cost;
    J(0, k)->kernel_ns = kernel_ns;
  }
  J(1, 0)->cost = cost;
  J(1, 0)->kernel_ns = kernel_ns;
  J(0, 0)->gated = true;
  submit(0, 0);
  wait_gated(1);
  for (int k = 1; k < 1000; k++) submit(0, k);
  submit(1, 0);
  open_gate();
  wait_done(1001);
  int before = position(1, 0) - 1; /* session 0's jobs after the running one */
  for (int k = 1; k < 1000; k++) ck_assert_int_lt(position(0, k - 1), position(0, k));
  ck_assert_int_eq(atomic_load(&R->long_on_lane), 0);
  stop_run();
  return before;
}

START_TEST(test_single_job_next_turn_tiny) {
  int before = single_job_after(0, 0);
  ck_assert_int_ge(before, 0);
  ck_assert_int_le(before, 64);
}
END_TEST

START_TEST(test_single_job_next_turn_cheap) {
  int before = single_job_after(0, 10000);
  ck_assert_int_ge(before, 0);
  ck_assert_int_le(before, 5);
}
END_TEST

START_TEST(test_single_job_next_turn_long) {
  /* right after the running job ([Note: Waiting for the lane's estimate] in worker.c) */
  int before = single_job_after(LONG_NS, 2000000);
  ck_assert_int_eq(before, 0);
}
END_TEST

/* ---- the lane ---- */

static bool done_at_least(void *n) {
  return atomic_load(&R->done) >= *(int *)n;
}

/* Two workers, both running a long job that blocks: a third session's short job still runs
 * (on the lane), and the long jobs queued behind stay for the workers. */
START_TEST(test_short_job_beside_long_ones) {
  start_run(2);
  for (int i = 0; i < 2; i++) {
    J(i, 0)->cost = J(i, 1)->cost = LONG_NS;
    J(i, 0)->gated = true;
    submit(i, 0);
  }
  wait_gated(2);
  submit(0, 1);
  submit(1, 1);
  submit(2, 0); /* short */
  int one = 1;
  ck_assert_msg(wait_for(done_at_least, &one), "the short job waited for the long ones");
  ck_assert_int_eq(position(2, 0), 2);
  ck_assert(pthread_equal(J(2, 0)->ran_on, R->sched.cpu.threads[R->sched.cpu.nthreads]));
  ck_assert_int_eq(position(0, 1), -1); /* long: not on the lane */
  open_gate();
  wait_done(5);
  ck_assert_int_eq(atomic_load(&R->long_on_lane), 0);
  stop_run();
}
END_TEST

/* With no long job running, the lane runs nothing: the workers do all the work, as before. */
START_TEST(test_lane_idle_without_long_jobs) {
  start_run(1);
  J(0, 0)->gated = true; /* short, blocking the only worker */
  submit(0, 0);
  wait_gated(1);
  submit(1, 0);
  nanosleep(&(struct timespec){0, 50000000}, NULL);
  ck_assert_int_eq(atomic_load(&R->done), 0); /* waits for the worker */
  open_gate();
  wait_done(2);
  ck_assert(!pthread_equal(J(1, 0)->ran_on, R->sched.cpu.threads[R->sched.cpu.nthreads]));
  stop_run();
}
END_TEST

/* The same on a GPU pool: a job that waits for the device (a download) holds the pool's
 * only worker; another session's launch runs on the pool's lane meanwhile. */
static opd_device on_cuda0(opd__job *job) {
  (void)job;
  return (opd_device){OPD_DEVICE_CUDA, 0};
}

START_TEST(test_gpu_pool_lane) {
  start_run(1);
  ck_assert_int_eq(opd__sched_start_gpu(&R->sched, 1, 1, on_cuda0), 0);
  for (int i = 0; i < 3; i++)
    for (int k = 0; k < 2; k++) J(i, k)->job.device = (opd_device){OPD_DEVICE_CUDA, 0};
  J(0, 0)->waits = J(0, 1)->waits = true;
  J(0, 0)->gated = true;
  submit(0, 0);
  wait_gated(1);
  submit(0, 1);
  submit(1, 0); /* a launch: short */
  int one = 1;
  ck_assert_msg(wait_for(done_at_least, &one), "the launch waited for the other stream");
  ck_assert(pthread_equal(J(1, 0)->ran_on, R->sched.gpu[0].threads[R->sched.gpu[0].nthreads]));
  ck_assert_int_eq(position(0, 1), -1);
  open_gate();
  wait_done(3);
  ck_assert_int_eq(atomic_load(&R->long_on_lane), 0);
  stop_run();
}
END_TEST

/* ---- priorities ---- */

/* One worker, sessions high, normal and low with 300 jobs of 1 ms each: the worker's time
 * goes 4:2:1, and low is not starved. */
START_TEST(test_priorities_share_4_2_1) {
  start_run(1);
  opd__sched_set_priority(&R->sched, &R->sessions[0], OPD_PRIORITY_HIGH, false);
  opd__sched_set_priority(&R->sched, &R->sessions[1], OPD_PRIORITY_NORMAL, false);
  opd__sched_set_priority(&R->sched, &R->sessions[2], OPD_PRIORITY_LOW, false);
  J(3, 0)->gated = true;
  submit(3, 0);
  wait_gated(1);
  for (int k = 0; k < 300; k++)
    for (int i = 0; i < 3; i++) {
      J(i, k)->kernel_ns = 1000000;
      submit(i, k);
    }
  open_gate();
  wait_done(901);
  int count[3] = {0}, first_low = -1;
  for (int n = 1; n <= 140; n++) {
    int si = R->order[n] / MAXJOBS;
    ck_assert_int_lt(si, 3);
    count[si]++;
    if (si == 2 && first_low < 0) first_low = n;
  }
  ck_assert_msg(abs(count[0] - 80) <= 3 && abs(count[1] - 40) <= 3 && abs(count[2] - 20) <= 3,
                "high %d, normal %d, low %d of 140 (80, 40, 20)", count[0], count[1], count[2]);
  ck_assert_int_le(first_low, 8);
  stop_run();
}
END_TEST

/* The admin's class moves a ready session to that class's list (its jobs all run), and
 * stands against a hello that comes after it. */
START_TEST(test_priority_set_by_admin) {
  start_run(1);
  J(3, 0)->gated = true;
  submit(3, 0);
  wait_gated(1);
  for (int k = 0; k < 5; k++) submit(0, k);
  opd__pool *p = &R->sched.cpu;
  ck_assert_ptr_eq(R->sessions[0].sched.list, &p->ready[OPD_PRIORITY_NORMAL][OPD__LANE_SHORT]);
  ck_assert_int_eq(opd__sched_set_priority(&R->sched, &R->sessions[0], OPD_PRIORITY_HIGH, true),
                   OPD_PRIORITY_HIGH);
  ck_assert_ptr_eq(R->sessions[0].sched.list, &p->ready[OPD_PRIORITY_HIGH][OPD__LANE_SHORT]);
  ck_assert_ptr_null(p->ready[OPD_PRIORITY_NORMAL][OPD__LANE_SHORT].head);
  /* a hello after the admin's choice changes nothing */
  ck_assert_int_eq(opd__sched_set_priority(&R->sched, &R->sessions[0], OPD_PRIORITY_LOW, false),
                   OPD_PRIORITY_HIGH);
  ck_assert_int_eq(atomic_load(&R->sessions[0].sched.priority), OPD_PRIORITY_HIGH);
  open_gate();
  wait_done(6);
  for (int k = 0; k < 5; k++) ck_assert_int_ge(position(0, k), 0);
  stop_run();
}
END_TEST

/* [Note: Nicer workers]: with worker_nice 3, a job on a CPU worker runs 3 nicer than the
 * thread that started the scheduler; a short job on the lane does not. */
static void record_nice(tjob *t) {
  errno = 0;
  t->nice = getpriority(PRIO_PROCESS, 0); /* Linux: the calling thread's */
  ck_assert_int_eq(errno, 0);
}

START_TEST(test_worker_nice) {
  errno = 0;
  int base = getpriority(PRIO_PROCESS, 0);
  ck_assert_int_eq(errno, 0);
  if (base + 3 > 19) return; /* already as nice as can be */
  start_run(1);
  R->sched.worker_nice = 3;
  R->body = record_nice;
  J(0, 0)->cost = LONG_NS;
  J(0, 0)->gated = true;
  submit(0, 0);
  wait_gated(1);
  submit(1, 0); /* short, while the long job holds the only worker: the lane runs it */
  for (int i = 0; i < 2000 && atomic_load(&R->done) < 1; i++)
    nanosleep(&(struct timespec){0, 5000000}, NULL);
  open_gate();
  wait_done(2);
  ck_assert(pthread_equal(J(1, 0)->ran_on, R->sched.cpu.threads[R->sched.cpu.nthreads]));
  ck_assert_int_eq(J(0, 0)->nice, base + 3);
  ck_assert_int_eq(J(1, 0)->nice, base);
  stop_run();
}
END_TEST

/* ---- estimates and the cost in flight ---- */

static uint64_t cost_of(int session) {
  return atomic_load(&R->sessions[session].sched.cost_ns);
}

static uint32_t jobs_of(int session) {
  return atomic_load(&R->sessions[session].sched.jobs);
}

/* A session's jobs are estimated once each, the queued ones as soon as a worker owns the
 * session, and their estimates add up to its cost in flight, down to 0 when they are done. */
START_TEST(test_cost_in_flight) {
  start_run(1);
  for (int k = 0; k < 10; k++) J(0, k)->cost = 1000;
  J(0, 0)->gated = true;
  submit(0, 0);
  wait_gated(1);
  for (int k = 1; k < 10; k++) submit(0, k);
  ck_assert_uint_eq(jobs_of(0), 10);
  ck_assert_uint_eq(cost_of(0), 1000); /* the running job: the rest came after */
  open_gate();
  wait_done(10);
  ck_assert_uint_eq(jobs_of(0), 0);
  ck_assert_uint_eq(cost_of(0), 0);
  for (int k = 0; k < 10; k++) ck_assert_int_eq(atomic_load(&J(0, k)->estimates), 1);
  stop_run();
}
END_TEST

/* The queued jobs were estimated before they reached the head: while the second job runs,
 * the cost in flight is that of the nine jobs left, not of the running one only. */
static uint64_t cost_seen;

static void record_cost(tjob *t) {
  if (t->session == 0 && t->index == 1) cost_seen = atomic_load(&R->sessions[0].sched.cost_ns);
}

START_TEST(test_queued_jobs_estimated_early) {
  start_run(1);
  R->body = record_cost;
  for (int k = 0; k < 10; k++) J(0, k)->cost = 1000;
  J(0, 0)->gated = true;
  submit(0, 0);
  wait_gated(1);
  for (int k = 1; k < 10; k++) submit(0, k);
  open_gate();
  wait_done(10);
  ck_assert_uint_eq(cost_seen, 9000);
  for (int k = 0; k < 10; k++) ck_assert_int_eq(atomic_load(&J(0, k)->estimates), 1);
  ck_assert_uint_eq(cost_of(0), 0);
  stop_run();
}
END_TEST

/* Cancelling a session returns its queued jobs and takes their jobs and cost off it. */
START_TEST(test_cancel_clears_jobs_and_cost) {
  start_run(1);
  J(1, 0)->gated = true;
  submit(1, 0);
  wait_gated(1);
  for (int k = 0; k < 10; k++) {
    J(0, k)->cost = 5000;
    submit(0, k);
  }
  ck_assert_uint_eq(jobs_of(0), 10);
  opd__job *back = opd__sched_cancel(&R->sched, &R->sessions[0]);
  int n = 0;
  for (opd__job *j = back; j; j = j->qnext) ck_assert_ptr_eq(j, &J(0, n++)->job);
  ck_assert_int_eq(n, 10);
  ck_assert_uint_eq(jobs_of(0), 0);
  ck_assert_uint_eq(cost_of(0), 0);
  ck_assert(!opd__sched_submit(&R->sched, &J(0, 10)->job)); /* closed */
  open_gate();
  wait_done(1);
  stop_run();
}
END_TEST

typedef struct cancel_call {
  opd__job *back;
  _Atomic bool returned;
} cancel_call;

static void *cancel_thread(void *arg) {
  cancel_call *cc = arg;
  cc->back = opd__sched_cancel(&R->sched, &R->sessions[0]);
  atomic_store(&cc->returned, true);
  return NULL;
}

/* A cancel while the session's owner estimates its queue outside the lock waits for the
 * estimate (the loop would free the jobs it reads), and then gets every job: the owner
 * runs none of a closed session's. */
START_TEST(test_cancel_waits_for_estimation) {
  start_run(1);
  J(0, 0)->gate_estimate = true;
  for (int k = 0; k < 5; k++) J(0, k)->job.qnext = k < 4 ? &J(0, k + 1)->job : NULL;
  ck_assert(opd__sched_submit_list(&R->sched, &J(0, 0)->job, &J(0, 4)->job));
  int one = 1;
  ck_assert(wait_for(estimating, &one));
  cancel_call cc = {0};
  pthread_t t;
  ck_assert_int_eq(pthread_create(&t, NULL, cancel_thread, &cc), 0);
  nanosleep(&(struct timespec){0, 100000000}, NULL);
  ck_assert(!atomic_load(&cc.returned));
  open_gate();
  pthread_join(t, NULL);
  int n = 0;
  for (opd__job *j = cc.back; j; j = j->qnext) ck_assert_ptr_eq(j, &J(0, n++)->job);
  ck_assert_int_eq(n, 5);
  for (int k = 0; k < 5; k++) ck_assert_int_eq(atomic_load(&J(0, k)->estimates), 1);
  ck_assert_uint_eq(jobs_of(0), 0);
  ck_assert_uint_eq(cost_of(0), 0);
  nanosleep(&(struct timespec){0, 20000000}, NULL);
  ck_assert_int_eq(atomic_load(&R->done), 0);
  stop_run();
}
END_TEST

/* ---- kernel threads ---- */

START_TEST(test_parallel_share_rule) {
  ck_assert_int_eq(opd__parallel_share(2, 0), 2); /* nobody reports: the whole pool */
  ck_assert_int_eq(opd__parallel_share(2, 1), 2);
  ck_assert_int_eq(opd__parallel_share(2, 2), 1);
  ck_assert_int_eq(opd__parallel_share(2, 3), 1);
  ck_assert_int_eq(opd__parallel_share(8, 3), 6);
  ck_assert_int_eq(opd__parallel_share(8, 8), 1);
  ck_assert_int_eq(opd__parallel_share(8, 1000), 1);
}
END_TEST

typedef struct chunk_threads {
  pthread_mutex_t mu;
  pthread_t seen[8];
  int nseen;
} chunk_threads;

static chunk_threads threads_of[NSESS];
static pthread_barrier_t both_running;

static void record_chunk(void *ctx, int64_t begin, int64_t end) {
  (void)begin, (void)end;
  chunk_threads *c = ctx;
  pthread_mutex_lock(&c->mu);
  bool known = false;
  for (int i = 0; i < c->nseen; i++) known = known || pthread_equal(c->seen[i], pthread_self());
  if (!known && c->nseen < 8) c->seen[c->nseen++] = pthread_self();
  pthread_mutex_unlock(&c->mu);
  nanosleep(&(struct timespec){0, 2000000}, NULL); /* long enough for the pool to join in */
}

static void parallel_body(tjob *t) {
  if (t->session < 2) pthread_barrier_wait(&both_running);
  opd__parallel_for(0, 1 << 20, 1 << 10, record_chunk, &threads_of[t->session]);
  if (t->session < 2) pthread_barrier_wait(&both_running);
}

/* Two workers on a pool of 2 kernel threads: while both run a job, each job's loop runs on
 * its own thread; a job alone splits over both. */
START_TEST(test_kernels_inline_while_workers_busy) {
  opd__parallel_set_threads(2);
  for (int i = 0; i < NSESS; i++) pthread_mutex_init(&threads_of[i].mu, NULL);
  pthread_barrier_init(&both_running, NULL, 2);
  start_run(2);
  R->body = parallel_body;
  submit(0, 0);
  submit(1, 0);
  wait_done(2);
  for (int i = 0; i < 2; i++) {
    ck_assert_int_eq(threads_of[i].nseen, 1);
    ck_assert(pthread_equal(threads_of[i].seen[0], J(i, 0)->ran_on));
  }
  submit(2, 0);
  wait_done(3);
  ck_assert_int_eq(threads_of[2].nseen, 2);
  stop_run();
  opd_kernels_set_busy_threads(0);
  pthread_barrier_destroy(&both_running);
  opd__parallel_set_threads(0);
}
END_TEST

/* ---- estimates of real requests ([Note: The cost of a job]) ---- */

typedef struct est {
  opd_server_config cfg;
  opd__session s;
  opd__job job;
  Opd__V1__Request req;
  Opd__V1__Call call;
  Opd__V1__IValue vals[6];
  Opd__V1__IValue *args[6];
  Opd__V1__IntList ints;
  Opd__V1__TensorLiteral lit;
} est;

static uint64_t hold(est *e, const int64_t *sizes, int ndim) {
  opd_tensor *t;
  ck_assert_int_eq(opd_tensor_empty(sizes, ndim, OPD_FLOAT32, (opd_device){OPD_DEVICE_CPU, -1}, &t),
                   0);
  uint64_t reserved = 0, h;
  ck_assert_int_eq(opd__session_hold(&e->s, t, &reserved, &h), 0); /* takes t's reference */
  return h;
}

/* A view of tensor h transposed, held as a new handle. */
static uint64_t hold_transposed(est *e, uint64_t h) {
  opd_tensor *t = opd__session_lookup(&e->s, h), *v;
  const int64_t *sz = opd_tensor_sizes(t), *st = opd_tensor_strides(t);
  int64_t sizes[2] = {sz[1], sz[0]}, strides[2] = {st[1], st[0]};
  ck_assert_int_eq(opd_tensor_view_of(t, sizes, strides, 2, 0, &v), 0);
  uint64_t reserved = 0, out;
  ck_assert_int_eq(opd__session_hold(&e->s, v, &reserved, &out), 0); /* takes v's reference */
  return out;
}

static void est_call(est *e, const char *op, int nargs) {
  opd__v1__request__init(&e->req);
  opd__v1__call__init(&e->call);
  e->call.op = (char *)op;
  e->call.n_args = (size_t)nargs;
  e->call.args = e->args;
  e->req.body_case = OPD__V1__REQUEST__BODY_CALL;
  e->req.call = &e->call;
  memset(&e->job, 0, sizeof e->job);
  e->job.kind = OPD__JOB_CALL;
  e->job.req = &e->req;
  e->job.session = &e->s;
  e->job.device = (opd_device){OPD_DEVICE_CPU, -1};
}

static void arg_tensor(est *e, int i, uint64_t h) {
  opd__v1__ivalue__init(&e->vals[i]);
  e->vals[i].value_case = OPD__V1__IVALUE__VALUE_TENSOR;
  e->vals[i].tensor = h;
  e->args[i] = &e->vals[i];
}

/* The estimate of e's call once it is prepared, as the loop and a worker that routed it read
 * it: from the prepared stack, nothing looked up again. */
static uint64_t prepared_estimate(est *e) {
  opd__arena_init(&e->job.arena);
  opd__arena_reset(&e->job.arena, SIZE_MAX);
  ck_assert_int_eq(opd__call_prepare(&e->job), 0);
  uint64_t c = opd__job_estimate(&e->job);
  opd__call_unprepare(&e->job);
  opd__arena_destroy(&e->job.arena);
  return c;
}

static void arg_int(est *e, int i, int64_t v) {
  opd__v1__ivalue__init(&e->vals[i]);
  e->vals[i].value_case = OPD__V1__IVALUE__VALUE_I;
  e->vals[i].i = v;
  e->args[i] = &e->vals[i];
}

static void arg_double(est *e, int i, double v) {
  opd__v1__ivalue__init(&e->vals[i]);
  e->vals[i].value_case = OPD__V1__IVALUE__VALUE_D;
  e->vals[i].d = v;
  e->args[i] = &e->vals[i];
}

static void arg_ints(est *e, int i, int64_t *v, size_t n) {
  opd__v1__int_list__init(&e->ints);
  e->ints.values = v;
  e->ints.n_values = n;
  opd__v1__ivalue__init(&e->vals[i]);
  e->vals[i].value_case = OPD__V1__IVALUE__VALUE_INTS;
  e->vals[i].ints = &e->ints;
  e->args[i] = &e->vals[i];
}

#define US (1000ull)
#define MS (1000000ull)

START_TEST(test_estimates) {
  ck_assert_int_eq(opd_kernels_register(), 0);
  est *e = calloc(1, sizeof *e);
  opd_server_config_init(&e->cfg);
  opd__session_init(&e->s, 1, &e->cfg);
  int64_t one[] = {1}, big[] = {1024, 1024}, vec[] = {1 << 22}, idx[] = {10};
  uint64_t a1 = hold(e, one, 1), b1 = hold(e, one, 1), m = hold(e, big, 2), n = hold(e, big, 2);
  uint64_t v = hold(e, vec, 1), w = hold(e, vec, 1), index = hold(e, idx, 1);
  uint64_t mt = hold_transposed(e, m);

  est_call(e, "aten::add.Tensor", 2); /* the tiny operator */
  arg_tensor(e, 0, a1);
  arg_tensor(e, 1, b1);
  uint64_t c = opd__job_estimate(&e->job);
  ck_assert_uint_lt(c, 1 * US);
  ck_assert_ptr_eq(e->job.call.op, opd_find_op("aten::add.Tensor"));
  ck_assert(!e->job.waits);

  est_call(e, "aten::mm", 2); /* 2 x 1024^3 flops: about 67 ms of one thread */
  arg_tensor(e, 0, m);
  arg_tensor(e, 1, n);
  c = opd__job_estimate(&e->job);
  ck_assert_msg(c > 50 * MS && c < 100 * MS, "mm 1024^3: %llu ns", (unsigned long long)c);
  ck_assert_uint_eq(prepared_estimate(e), c); /* one estimator, whichever form it reads */

  est_call(e, "aten::add.Tensor", 2); /* 3 x 16 MiB touched: about 12.6 ms */
  arg_tensor(e, 0, v);
  arg_tensor(e, 1, w);
  c = opd__job_estimate(&e->job);
  ck_assert_msg(c > 10 * MS && c < 15 * MS, "add 2^22: %llu ns", (unsigned long long)c);
  ck_assert_uint_eq(prepared_estimate(e), c);

  est_call(e, "aten::t", 1); /* a view: nothing */
  arg_tensor(e, 0, m);
  ck_assert_uint_eq(opd__job_estimate(&e->job), 0);
  est_call(e, "aten::contiguous", 1); /* of a contiguous tensor: a view */
  arg_tensor(e, 0, m);
  ck_assert_uint_eq(opd__job_estimate(&e->job), 0);
  est_call(e, "aten::contiguous", 1); /* of a transposed one: a copy of 4 MiB */
  arg_tensor(e, 0, mt);
  c = opd__job_estimate(&e->job);
  ck_assert_msg(c > 1 * MS && c < 10 * MS, "contiguous: %llu ns", (unsigned long long)c);
  ck_assert_uint_eq(prepared_estimate(e), c);

  int64_t size[] = {1 << 28};
  est_call(e, "aten::zeros", 1); /* a factory: 2^28 elements */
  arg_ints(e, 0, size, 1);
  c = opd__job_estimate(&e->job);
  ck_assert_msg(c > 200 * MS, "zeros 2^28: %llu ns", (unsigned long long)c);

  est_call(e, "aten::arange.start_step", 3);
  arg_double(e, 0, 0);
  arg_double(e, 1, 1e9);
  arg_double(e, 2, 1);
  c = opd__job_estimate(&e->job);
  ck_assert_msg(c > 500 * MS, "arange 1e9: %llu ns", (unsigned long long)c);
  arg_double(e, 2, 0); /* a step of 0 fails in the kernel: nothing */
  ck_assert_uint_eq(opd__job_estimate(&e->job), 0);
  est_call(e, "aten::arange.start_step", 2); /* the step left out: its default, 1 */
  arg_double(e, 0, 0);
  arg_double(e, 1, 1e9);
  ck_assert_uint_eq(opd__job_estimate(&e->job), c);
  est_call(e, "aten::arange.start", 3); /* the number after start and end is a layout */
  arg_double(e, 0, 0);
  arg_double(e, 1, 1e9);
  arg_int(e, 2, 0);
  ck_assert_uint_eq(opd__job_estimate(&e->job), c);
  est_call(e, "aten::arange", 1);
  arg_double(e, 0, 1e9);
  ck_assert_uint_eq(opd__job_estimate(&e->job), c);

  est_call(e, "aten::index_select", 3); /* 10 rows of 1024 of the 1024 x 1024 */
  arg_tensor(e, 0, m);
  arg_int(e, 1, 0);
  arg_tensor(e, 2, index);
  c = opd__job_estimate(&e->job);
  ck_assert_msg(c > 10 * US && c < 100 * US, "index_select: %llu ns", (unsigned long long)c);
  arg_int(e, 1, 1); /* 10 columns of the 1024 rows: the same count */
  ck_assert_uint_eq(opd__job_estimate(&e->job), c);

  est_call(e, "aten::linear", 2); /* [1024, 1024] x [1024, 1024]^T: as mm */
  arg_tensor(e, 0, m);
  arg_tensor(e, 1, n);
  c = opd__job_estimate(&e->job);
  ck_assert_msg(c > 50 * MS && c < 100 * MS, "linear: %llu ns", (unsigned long long)c);

  est_call(e, "aten::add.Tensor", 2); /* an unknown handle counts nothing */
  arg_tensor(e, 0, 999);
  arg_tensor(e, 1, b1);
  ck_assert_uint_lt(opd__job_estimate(&e->job), 1 * US);
  est_call(e, "aten::no_such_op", 0); /* an unknown operator: nothing, and no op */
  ck_assert_uint_eq(opd__job_estimate(&e->job), 0);
  ck_assert_ptr_null(e->job.call.op);

  /* a hostile literal's shape saturates, never wraps (UBSan checks the arithmetic) */
  int64_t shape[] = {INT64_MAX, INT64_MAX, -3, INT64_MAX};
  est_call(e, "aten::add.Tensor", 2);
  arg_tensor(e, 0, a1);
  opd__v1__tensor_literal__init(&e->lit);
  e->lit.dtype = OPD__V1__DTYPE__FLOAT32;
  e->lit.shape = shape;
  e->lit.n_shape = 2;
  opd__v1__ivalue__init(&e->vals[1]);
  e->vals[1].value_case = OPD__V1__IVALUE__VALUE_LITERAL;
  e->vals[1].literal = &e->lit;
  e->args[1] = &e->vals[1];
  ck_assert_uint_gt(opd__job_estimate(&e->job), 1000 * MS);
  e->lit.n_shape = 4; /* a negative size: no elements */
  ck_assert_uint_lt(opd__job_estimate(&e->job), 1 * US);

  /* a graph run: its compiled graph's elements written, here exp of 2^22 elements: about 8 ms
   * (long); a graph the session does not hold costs nothing */
  opd_graph *g;
  ck_assert_int_eq(opd_graph_new(NULL, &g), 0);
  int x = opd_graph_add_input(
      g, &(opd_graph_input_spec){OPD_FLOAT32, vec, 1, {OPD_DEVICE_CPU, -1}, OPD_GRAPH_INPUT});
  ck_assert_int_ge(x, 0);
  opd_graph_arg arg = opd_graph_arg_ref((uint32_t)x, 0);
  int node = opd_graph_add_node(g, "aten::exp", &arg, 1);
  ck_assert_int_ge(node, 0);
  ck_assert_int_eq(opd_graph_set_outputs(g, &(opd_graph_ref){(uint32_t)node, 0}, 1), 0);
  ck_assert_int_eq(opd_graph_finish(g), 0);
  opd_compiled_graph *cg;
  ck_assert_int_eq(opd_graph_compile(g, NULL, NULL, &cg, NULL), 0);
  ck_assert_uint_eq(opd_compiled_graph_cost(cg), 1 << 22);
  ck_assert_int_eq(opd__session_add_graph(&e->s, 7, cg), 0);
  Opd__V1__RunGraph run = OPD__V1__RUN_GRAPH__INIT;
  run.graph = 7;
  opd__v1__request__init(&e->req);
  e->req.body_case = OPD__V1__REQUEST__BODY_RUN_GRAPH;
  e->req.run_graph = &run;
  memset(&e->job, 0, sizeof e->job);
  e->job.kind = OPD__JOB_RUN_GRAPH;
  e->job.req = &e->req;
  e->job.session = &e->s;
  c = opd__job_estimate(&e->job);
  ck_assert_msg(c > 5 * MS && c < 15 * MS, "graph of exp 2^22: %llu ns", (unsigned long long)c);
  ck_assert(!e->job.waits);
  run.graph = 8;
  ck_assert_uint_eq(opd__job_estimate(&e->job), 0);

  /* other requests cost nothing on the CPU; a synchronize without streams waits for none */
  memset(&e->job, 0, sizeof e->job);
  e->job.kind = OPD__JOB_SYNCHRONIZE;
  e->job.session = &e->s;
  ck_assert_uint_eq(opd__job_estimate(&e->job), 0);
  ck_assert(!e->job.waits);

  opd__session_destroy(&e->s);
  opd_server_config_destroy(&e->cfg);
  free(e);
}
END_TEST

/* ---- through a daemon ---- */

static opd_server *start_server(uint32_t workers, uint32_t max_jobs, uint32_t max_cost_ms,
                                opd_priority max_priority) {
  opd_server_config cfg;
  opd_server_config_init(&cfg);
  opd_server_config_clear_listen(&cfg);
  ck_assert_int_eq(opd_server_config_add_listen(&cfg, "tcp://127.0.0.1:0"), 0);
  cfg.workers = workers;
  if (max_jobs) cfg.max_session_jobs = max_jobs;
  if (max_cost_ms) cfg.max_session_cost_ms = max_cost_ms;
  cfg.max_priority = max_priority;
  opd_server *s;
  ck_assert_msg(opd_server_start(&cfg, &s) == 0, "%s", opd_last_error());
  opd_server_config_destroy(&cfg);
  return s;
}

static opd_client *connect_with(opd_server *s, opd_client_priority prio) {
  opd_client *c;
  ck_assert_msg(opd_client_connect(opd_server_listener_url(s, 0),
                                   &(opd_client_options){.priority = prio}, &c) == 0,
                "%s", opd_client_last_error());
  return c;
}

/* The scheduling state of the server's session `id` (sessions are numbered from 1 as
 * they connect). */
typedef struct sampled {
  uint32_t jobs;
  uint64_t cost_ns;
  int priority;
} sampled;

static sampled sample_session(opd_server *s, uint64_t id) {
  sampled out = {0};
  pthread_mutex_lock(&s->sessions.mu);
  for (opd__session *sess = s->sessions.head; sess; sess = sess->reg_next)
    if (sess->id == id) {
      out.jobs = atomic_load(&sess->sched.jobs);
      out.cost_ns = atomic_load(&sess->sched.cost_ns);
      out.priority = atomic_load(&sess->sched.priority);
    }
  pthread_mutex_unlock(&s->sessions.mu);
  return out;
}

static opd_client_tensor upload_square(opd_client *c, int64_t n) {
  int64_t shape[] = {n, n};
  float *data = calloc((size_t)(n * n), sizeof *data);
  opd_client_tensor t;
  ck_assert_int_eq(opd_client_upload(c, OPD_FLOAT32, shape, 2, data, (size_t)(n * n) * 4, NULL, &t),
                   0);
  free(data);
  return t;
}

/* Runs c's I/O until f completes, sampling session 1 of s meanwhile: the most jobs it had
 * on workers among the samples whose cost in flight was at least min_cost_ns, and (in
 * *samples) how many those were. */
static uint32_t most_jobs_until(opd_server *s, opd_client *c, opd_future *f, uint64_t min_cost_ns,
                                int *samples) {
  uint32_t most = 0;
  *samples = 0;
  while (!opd_future_done(f)) {
    opd_client_poll(c, 0);
    sampled x = sample_session(s, 1);
    if (x.cost_ns < min_cost_ns) continue;
    if (x.jobs > most) most = x.jobs;
    ++*samples;
  }
  return most;
}

static void free_all(opd_future **f, int n) {
  for (int i = 0; i < n; i++) {
    ck_assert_msg(opd_future_wait(f[i]) == 0, "%s", opd_future_error(f[i]));
    opd_future_free(f[i]);
  }
}

/* max_session_jobs: 20 products pipelined by a session with a limit of 2 on one worker
 * all succeed, and the session never has more than 2 jobs on workers. */
START_TEST(test_max_session_jobs_back_pressure) {
  opd_server *s = start_server(1, 2, 0, OPD_PRIORITY_NORMAL);
  opd_client *c = connect_with(s, OPD_CLIENT_PRIORITY_NORMAL);
  opd_client_tensor a = upload_square(c, 256);
  opd_future *f[20];
  for (int i = 0; i < 20; i++) ck_assert_int_eq(opd_mm_async(c, a, a, NULL, NULL, &f[i]), 0);
  int samples;
  uint32_t most = most_jobs_until(s, c, f[19], 0, &samples);
  ck_assert_uint_le(most, 2);
  ck_assert_uint_ge(most, 1);
  free_all(f, 20);
  opd_client_close(c);
  opd_server_stop(s);
}
END_TEST

/* max_session_cost_ms: once a worker has estimated the session's running product (about
 * 67 ms against a limit of 1 ms), the daemon reads nothing more of it until the product is
 * done: the session keeps one job on workers meanwhile; everything then succeeds. */
START_TEST(test_max_session_cost_back_pressure) {
  opd_server *s = start_server(1, 0, 1, OPD_PRIORITY_NORMAL);
  opd_client *c = connect_with(s, OPD_CLIENT_PRIORITY_NORMAL);
  opd_client_tensor big = upload_square(c, 1024), small = upload_square(c, 64);
  opd_future *first, *f[10];
  ck_assert_int_eq(opd_mm_async(c, big, big, NULL, NULL, &first), 0);
  while (sample_session(s, 1).cost_ns == 0 && !opd_future_done(first)) opd_client_poll(c, 0);
  for (int i = 0; i < 10; i++)
    ck_assert_int_eq(opd_mm_async(c, small, small, NULL, NULL, &f[i]), 0);
  /* while the product is in flight (its estimate, about 70 ms, is in the cost), nothing
   * more of the session is decoded: it has the one job on workers */
  int samples;
  uint32_t most = most_jobs_until(s, c, first, 50 * MS, &samples);
  ck_assert_msg(most == 1, "%u jobs on workers behind a session over its cost limit", most);
  ck_assert_int_gt(samples, 0);
  ck_assert_int_eq(opd_future_wait(first), 0);
  opd_future_free(first);
  free_all(f, 10);
  opd_client_close(c);
  opd_server_stop(s);
}
END_TEST

/* A hello's priority is granted up to max_priority, shown in the session, and refused when
 * it is no class at all. */
START_TEST(test_priority_at_hello) {
  opd_server *s = start_server(1, 0, 0, OPD_PRIORITY_NORMAL);
  opd_client *c = connect_with(s, OPD_CLIENT_PRIORITY_HIGH);
  ck_assert_int_eq(opd_client_server(c)->priority, OPD_CLIENT_PRIORITY_NORMAL); /* capped */
  ck_assert_int_eq(sample_session(s, 1).priority, OPD_PRIORITY_NORMAL);
  opd_client_close(c);
  c = connect_with(s, OPD_CLIENT_PRIORITY_LOW);
  ck_assert_int_eq(opd_client_server(c)->priority, OPD_CLIENT_PRIORITY_LOW);
  ck_assert_int_eq(sample_session(s, 2).priority, OPD_PRIORITY_LOW);
  opd_client_close(c);
  opd_client *bad;
  ck_assert_int_lt(
      opd_client_connect(opd_server_listener_url(s, 0), &(opd_client_options){.priority = 7}, &bad),
      0);
  ck_assert_msg(strstr(opd_client_last_error(), "priority"), "%s", opd_client_last_error());
  opd_server_stop(s);
  s = start_server(1, 0, 0, OPD_PRIORITY_HIGH);
  c = connect_with(s, OPD_CLIENT_PRIORITY_HIGH);
  ck_assert_int_eq(opd_client_server(c)->priority, OPD_CLIENT_PRIORITY_HIGH);
  ck_assert_int_eq(sample_session(s, 1).priority, OPD_PRIORITY_HIGH);
  opd_client_close(c);
  opd_server_stop(s);
}
END_TEST

/* The admin's answer to one request (the daemon's own admin, without its socket). */
static json_t *admin_request(opd_server *s, const char *req) {
  char *reply;
  size_t len;
  ck_assert_int_ge(opd__admin_handle(s->admin, req, strlen(req), false, &reply, &len), 0);
  json_t *j = json_loadb(reply, len, 0, NULL);
  ck_assert_ptr_nonnull(j);
  opd__free(reply);
  return j;
}

static void expect_admin_error(opd_server *s, const char *req, const char *code,
                               const char *message) {
  json_t *j = admin_request(s, req);
  ck_assert(json_is_false(json_object_get(j, "ok")));
  ck_assert_str_eq(json_string_value(json_object_get(j, "code")), code);
  const char *error = json_string_value(json_object_get(j, "error"));
  ck_assert_msg(strstr(error, message), "%s", error);
  json_decref(j);
}

/* set_priority from the admin: any class (max_priority bounds hellos only), shown in the
 * session at once; an unknown session, class or id is a clear error. */
START_TEST(test_priority_from_admin) {
  opd_server_config cfg;
  opd_server_config_init(&cfg);
  opd_server_config_clear_listen(&cfg);
  ck_assert_int_eq(opd_server_config_add_listen(&cfg, "tcp://127.0.0.1:0"), 0);
  snprintf(cfg.admin, sizeof cfg.admin, "/tmp/opd-test-sched-%d.sock", (int)getpid());
  cfg.workers = 1;
  opd_server *s;
  ck_assert_msg(opd_server_start(&cfg, &s) == 0, "%s", opd_last_error());
  opd_server_config_destroy(&cfg);
  ck_assert_ptr_nonnull(s->admin);
  opd_client *c = connect_with(s, OPD_CLIENT_PRIORITY_NORMAL);
  ck_assert_int_eq(sample_session(s, 1).priority, OPD_PRIORITY_NORMAL);
  json_t *j =
      admin_request(s, "{\"op\": \"set_priority\", \"session\": 1, \"priority\": \"high\"}");
  ck_assert(json_is_true(json_object_get(j, "ok")));
  ck_assert_str_eq(json_string_value(json_object_get(j, "priority")), "high");
  json_decref(j);
  ck_assert_int_eq(sample_session(s, 1).priority, OPD_PRIORITY_HIGH);
  /* the session works on in its new class */
  opd_client_tensor a = upload_square(c, 8), r;
  ck_assert_int_eq(opd_mm(c, a, a, &r), 0);
  j = admin_request(s, "{\"op\": \"set_priority\", \"session\": 1, \"priority\": \"low\"}");
  ck_assert(json_is_true(json_object_get(j, "ok")));
  json_decref(j);
  ck_assert_int_eq(sample_session(s, 1).priority, OPD_PRIORITY_LOW);
  expect_admin_error(s, "{\"op\": \"set_priority\", \"session\": 9, \"priority\": \"low\"}",
                     "ENOENT", "no open session 9");
  expect_admin_error(s, "{\"op\": \"set_priority\", \"session\": 1, \"priority\": \"urgent\"}",
                     "EINVAL", "low, normal or high");
  expect_admin_error(s, "{\"op\": \"set_priority\", \"session\": 0, \"priority\": \"low\"}",
                     "EINVAL", "a session id");
  expect_admin_error(s, "{\"op\": \"set_priority\", \"session\": 1}", "EINVAL", "\"priority\"");
  ck_assert_int_eq(sample_session(s, 1).priority, OPD_PRIORITY_LOW);
  opd_client_close(c);
  opd_server_stop(s);
}
END_TEST

/* One worker: a session's 2048^3 product (about half a second) runs on it; another
 * session's tiny add completes meanwhile, on the lane. */
START_TEST(test_tiny_call_beside_long_product) {
  opd_server *s = start_server(1, 0, 0, OPD_PRIORITY_NORMAL);
  opd_client *heavy = connect_with(s, OPD_CLIENT_PRIORITY_NORMAL);
  opd_client *light = connect_with(s, OPD_CLIENT_PRIORITY_NORMAL);
  int64_t one = 1;
  float x = 1, y = 2, got = 0;
  opd_client_tensor a, b, r;
  ck_assert_int_eq(opd_client_upload(light, OPD_FLOAT32, &one, 1, &x, 4, NULL, &a), 0);
  ck_assert_int_eq(opd_client_upload(light, OPD_FLOAT32, &one, 1, &y, 4, NULL, &b), 0);
  opd_client_tensor big = upload_square(heavy, 2048);
  opd_future *product;
  ck_assert_int_eq(opd_mm_async(heavy, big, big, NULL, NULL, &product), 0);
  while (sample_session(s, 1).cost_ns == 0) opd_client_poll(heavy, 0); /* on the worker */
  ck_assert_int_eq(opd_add(light, a, b, NULL, &r), 0);
  ck_assert_int_eq(opd_client_download(light, r, &got, 4, NULL), 0);
  ck_assert(got == 3);
  ck_assert_msg(sample_session(s, 1).jobs == 1, "the tiny call waited for the product");
  ck_assert_int_eq(opd_future_wait(product), 0);
  opd_future_free(product);
  opd_client_close(light);
  opd_client_close(heavy);
  opd_server_stop(s);
}
END_TEST

/* ---- tiny calls on the loop ([Note: Tiny calls on the loop] in server/src/conn_loop_calls.c) ----
 */

static uint64_t loop_requests(opd_server *s) {
  return atomic_load(&s->loop_calls);
}

static opd_client_tensor upload_floats(opd_client *c, int64_t n, float v) {
  float *data = malloc((size_t)n * sizeof *data);
  ck_assert_ptr_nonnull(data);
  for (int64_t i = 0; i < n; i++) data[i] = v;
  opd_client_tensor t;
  ck_assert_int_eq(opd_client_upload(c, OPD_FLOAT32, &n, 1, data, (size_t)n * 4, NULL, &t), 0);
  free(data);
  return t;
}

/* Lets a job that ran on the worker come back before the next request: the worker sends the
 * response before it hands the job back, so a client's next request may otherwise find it
 * still out (and go to a worker too), call after call, on a slow (sanitized) build. */
static void settle(void) {
  nanosleep(&(struct timespec){0, 2 * 1000 * 1000}, NULL);
}

static float first_float(opd_client *c, opd_client_tensor t) {
  float v = 0;
  ck_assert_int_eq(opd_client_download(c, t, &v, 4, NULL), 0);
  return v;
}

/* One worker listening at `listen`, and calls estimated at most loop_ns on the loop. The cases
 * below take 50 us, not the default 2 us: an operator shows itself fit for the loop by a call on a
 * worker within four times the bound, which a loaded machine (sanitizers, a parallel build) may
 * deny a worker whose thread waits for a CPU, however fast the kernel. */
/* max_bytes_held, short_job_us: 0 for the defaults */
static opd_server *start_loop_server_held(uint32_t loop_ns, const char *listen,
                                          uint64_t max_bytes_held, uint32_t short_job_us) {
  opd_server_config cfg;
  opd_server_config_init(&cfg);
  opd_server_config_clear_listen(&cfg);
  ck_assert_int_eq(opd_server_config_add_listen(&cfg, listen), 0);
  cfg.workers = 1;
  cfg.loop_call_ns = loop_ns;
  if (max_bytes_held) cfg.max_bytes_held = max_bytes_held;
  if (short_job_us) cfg.short_job_us = short_job_us;
  opd_server *s;
  ck_assert_msg(opd_server_start(&cfg, &s) == 0, "%s", opd_last_error());
  opd_server_config_destroy(&cfg);
  return s;
}
static opd_server *start_loop_server(uint32_t loop_ns, const char *listen) {
  return start_loop_server_held(loop_ns, listen, 0, 0);
}
#define LOOP_NS 50000

/* x = x + 2, 100 times, each result released as the next is made: the first add runs on a
 * worker (add has not shown its speed yet), then, once its job is back, the adds and
 * releases run on the loop, and the sum is right. */
START_TEST(test_tiny_calls_run_on_the_loop) {
  opd_server *s = start_loop_server(LOOP_NS, "tcp://127.0.0.1:0");
  opd_client *c = connect_with(s, OPD_CLIENT_PRIORITY_NORMAL);
  opd_client_tensor x = upload_floats(c, 1, 1), two = upload_floats(c, 1, 2), next;
  ck_assert_uint_eq(loop_requests(s), 0);
  ck_assert_int_eq(opd_add(c, x, two, NULL, &next), 0);
  ck_assert_uint_eq(loop_requests(s), 0); /* learnt on a worker */
  settle();
  ck_assert_int_eq(opd_client_release(c, &x, 1), 0);
  x = next;
  for (int i = 1; i < 100; i++) {
    ck_assert_int_eq(opd_add(c, x, two, NULL, &next), 0);
    ck_assert_int_eq(opd_client_release(c, &x, 1), 0);
    x = next;
  }
  ck_assert(first_float(c, x) == 201);
  ck_assert_uint_ge(loop_requests(s), 100); /* of 99 adds and 100 releases */
  opd_client_close(c);
  opd_server_stop(s);
}
END_TEST

/* loop_call_ns 0: every call goes to a worker. */
START_TEST(test_loop_calls_off) {
  opd_server *s = start_loop_server(0, "tcp://127.0.0.1:0");
  opd_client *c = connect_with(s, OPD_CLIENT_PRIORITY_NORMAL);
  opd_client_tensor x = upload_floats(c, 1, 1), two = upload_floats(c, 1, 2), next;
  for (int i = 0; i < 50; i++) {
    ck_assert_int_eq(opd_add(c, x, two, NULL, &next), 0);
    ck_assert_int_eq(opd_client_release(c, &x, 1), 0);
    x = next;
  }
  ck_assert(first_float(c, x) == 101);
  ck_assert_uint_eq(loop_requests(s), 0);
  opd_client_close(c);
  opd_server_stop(s);
}
END_TEST

/* Once adds run on the loop: an add of 65536 elements (estimated at about 200 us, over
 * LOOP_NS) goes to a worker, and so do the tiny adds pipelined behind a matrix product on a
 * worker (the session has work there: they follow it in order); their results are right. */
START_TEST(test_loop_calls_only_tiny_and_in_order) {
  opd_server *s = start_loop_server(LOOP_NS, "tcp://127.0.0.1:0");
  opd_client *c = connect_with(s, OPD_CLIENT_PRIORITY_NORMAL);
  opd_client_tensor one = upload_floats(c, 1, 1), r;
  for (int i = 0; i < 100 && loop_requests(s) == 0; i++) {
    ck_assert_int_eq(opd_add(c, one, one, NULL, &r), 0);
    settle();
    ck_assert_int_eq(opd_client_release(c, &r, 1), 0);
  }
  ck_assert_uint_gt(loop_requests(s), 0);
  opd_client_tensor big = upload_floats(c, 65536, 1), rs[10];
  uint64_t before = loop_requests(s);
  for (int i = 0; i < 10; i++) ck_assert_int_eq(opd_add(c, big, big, NULL, &rs[i]), 0);
  ck_assert_uint_eq(loop_requests(s), before);
  float *sum = malloc(65536 * sizeof *sum);
  ck_assert_ptr_nonnull(sum);
  ck_assert_int_eq(opd_client_download(c, rs[9], sum, 65536 * sizeof *sum, NULL), 0);
  ck_assert(sum[0] == 2 && sum[65535] == 2);
  free(sum);
  opd_client_tensor square = upload_square(c, 512);
  opd_future *product, *adds[8];
  before = loop_requests(s);
  ck_assert_int_eq(opd_mm_async(c, square, square, NULL, NULL, &product), 0);
  for (int i = 0; i < 8; i++)
    ck_assert_int_eq(opd_add_async(c, one, one, NULL, NULL, NULL, &adds[i]), 0);
  ck_assert_int_eq(opd_future_wait(product), 0);
  for (int i = 0; i < 8; i++) {
    ck_assert_int_eq(opd_future_wait(adds[i]), 0);
    ck_assert_uint_ne(opd_future_tensor(adds[i], 0), 0);
    ck_assert(first_float(c, opd_future_tensor(adds[i], 0)) == 2);
  }
  ck_assert_uint_eq(loop_requests(s), before);
  opd_future_free(product);
  for (int i = 0; i < 8; i++) opd_future_free(adds[i]);
  opd_client_close(c);
  opd_server_stop(s);
}
END_TEST

/* Calls on the loop charge the session's budget as calls on workers do ([Note: A budget with
 * one writer] in opd/allocator.h): with max_bytes_held 64 and a 4-byte input held, fifteen
 * 4-byte results fit and the sixteenth is refused; a release makes room for one more, and
 * after releasing them all the same fifteen fit again. */
START_TEST(test_loop_calls_charge_the_session) {
  /* short_job_us at 1 s: three adds on the loop slower than it would send add to the
   * workers for good ([Note: Tiny calls on the loop] in conn_loop_calls.c), which a loaded
   * machine under ThreadSanitizer did at the default 100 us */
  opd_server *s = start_loop_server_held(LOOP_NS, "tcp://127.0.0.1:0", 64, 1000000);
  opd_client *c = connect_with(s, OPD_CLIENT_PRIORITY_NORMAL);
  opd_client_tensor one = upload_floats(c, 1, 1), r[16];
  for (int i = 0; i < 100 && loop_requests(s) == 0; i++) {
    ck_assert_int_eq(opd_add(c, one, one, NULL, &r[0]), 0);
    settle();
    ck_assert_int_eq(opd_client_release(c, &r[0], 1), 0);
  }
  ck_assert_uint_gt(loop_requests(s), 0);
  /* each call after a pause: a call that went to a worker answers before its job is back
   * ([Note: Quiet completions] in connection.c), and a call read meanwhile follows it there,
   * which under ThreadSanitizer once kept a whole round off the loop */
  for (int round = 0; round < 2; round++) {
    uint64_t before = loop_requests(s);
    for (int i = 0; i < 15; i++) {
      settle();
      ck_assert_int_eq(opd_add(c, one, one, NULL, &r[i]), 0);
    }
    settle();
    ck_assert_int_eq(opd_add(c, one, one, NULL, &r[15]), OPD_ERESOURCE);
    ck_assert_ptr_nonnull(strstr(opd_client_last_error(), "max_bytes_held"));
    ck_assert_int_eq(opd_client_release(c, &r[14], 1), 0);
    settle();
    ck_assert_int_eq(opd_add(c, one, one, NULL, &r[14]), 0);
    ck_assert_int_eq(opd_add(c, one, one, NULL, &r[15]), OPD_ERESOURCE);
    /* on the loop */
    ck_assert_uint_gt(loop_requests(s), before);
    ck_assert(first_float(c, r[14]) == 2);
    ck_assert_int_eq(opd_client_release(c, r, 15), 0);
  }
  opd_client_close(c);
  opd_server_stop(s);
}
END_TEST

/* x[-1].fill_(5) sent while x's download is still being written (the client reads nothing
 * meanwhile): the session is held by the download, so the fill, tiny as it is, waits
 * for the bytes to be out and the client receives x as it was. */
START_TEST(test_loop_call_waits_for_a_download) {
  char url[128];
  snprintf(url, sizeof url, "unix:///tmp/opd-test-loop-%d.sock", (int)getpid());
  opd_server *s = start_loop_server(LOOP_NS, url);
  opd_client *c;
  ck_assert_msg(opd_client_connect(url, NULL, &c) == 0, "%s", opd_client_last_error());
  /* 3 MiB: more than a Unix socket buffers, less than the write queue at which the daemon
   * stops reading (four frames: [Note: Back-pressure] in conn_read.c) */
  enum { N = 3 << 18 };
  opd_client_tensor x = upload_floats(c, N, 1), warm = upload_floats(c, 4, 1), v;
  /* select and fill_ show their speed on a worker first */
  bool fill_on_loop = false;
  for (int i = 0; i < 100 && !fill_on_loop; i++) {
    opd_client_value sel[] = {opd_cv_tensor(warm), opd_cv_int(0), opd_cv_int(1)};
    ck_assert_int_eq(opd_client_call(c, "aten::select.int", sel, 3, &v, 1, NULL), 0);
    opd_client_value fill[] = {opd_cv_tensor(v), opd_cv_double(2)};
    opd_client_tensor same;
    uint64_t before = loop_requests(s);
    ck_assert_int_eq(opd_client_call(c, "aten::fill_.Scalar", fill, 2, &same, 1, NULL), 0);
    fill_on_loop = loop_requests(s) == before + 1;
    ck_assert_int_eq(opd_client_release(c, (opd_client_tensor[]){v, same}, 2), 0);
    settle();
  }
  ck_assert(fill_on_loop);
  opd_client_value sel[] = {opd_cv_tensor(x), opd_cv_int(0), opd_cv_int(N - 1)};
  ck_assert_int_eq(opd_client_call(c, "aten::select.int", sel, 3, &v, 1, NULL), 0);
  float *got = malloc((size_t)N * sizeof *got);
  ck_assert_ptr_nonnull(got);
  opd_future *download, *fill;
  ck_assert_int_eq(
      opd_client_download_async(c, x, got, (size_t)N * sizeof *got, NULL, NULL, &download), 0);
  nanosleep(&(struct timespec){0, 50 * 1000 * 1000}, NULL); /* its bytes fill the socket */
  opd_client_value args[] = {opd_cv_tensor(v), opd_cv_double(5)};
  ck_assert_int_eq(opd_client_call_async(c, "aten::fill_.Scalar", args, 2, NULL, NULL, &fill), 0);
  nanosleep(&(struct timespec){0, 50 * 1000 * 1000}, NULL);
  ck_assert_int_eq(opd_future_wait(download), 0);
  ck_assert_int_eq(opd_future_wait(fill), 0);
  ck_assert_msg(got[0] == 1 && got[N - 1] == 1, "the download saw x[-1] = %g", (double)got[N - 1]);
  ck_assert(first_float(c, v) == 5); /* and the fill was done after it */
  free(got);
  opd_future_free(download);
  opd_future_free(fill);
  opd_client_close(c);
  opd_server_stop(s);
}
END_TEST

static _Atomic bool slow_now;

/* t_loop::slow(Tensor self) -> Tensor: self, after 300 us once slow_now is set (beyond
 * short_job_us, 100 us) */
static int slow_kernel(const opd_kernel_ctx *ctx, opd_stack *st) {
  (void)ctx;
  if (atomic_load(&slow_now)) nanosleep(&(struct timespec){0, 300 * 1000}, NULL);
  opd_ivalue self;
  ck_assert_int_eq(opd_iv_copy(&self, opd_stack_last(st, 1)), 0);
  opd_stack_drop(st, 1);
  ck_assert_int_eq(opd_stack_push(st, self), 0);
  return 0;
}

/* Calls t_loop::slow(x) until a call runs on the loop (at most 200 calls): whether one did. */
static bool slow_until_on_loop(opd_server *s, opd_client *c, opd_client_value *arg,
                               opd_client_tensor *r) {
  for (int i = 0; i < 200; i++) {
    uint64_t before = loop_requests(s);
    ck_assert_int_eq(opd_client_call(c, "t_loop::slow", arg, 1, r, 1, NULL), 0);
    settle();
    if (loop_requests(s) == before + 1) return true;
  }
  return false;
}

/* An operator as fast as its estimates says runs on the loop; once it turns slow, three of its
 * calls in a row overrun there and it runs on workers from then on, until a new kernel of it
 * is registered and shows itself fast again; every call answers. */
START_TEST(test_slow_operator_leaves_the_loop) {
  ck_assert_int_gt(opd_def("t_loop", "slow(Tensor self) -> Tensor", OPD_HERE), 0);
  static const opd_kernel k = {.boxed = slow_kernel, .name = "slow_kernel"};
  ck_assert_int_gt(opd_impl("t_loop::slow", OPD_KEY_CPU, &k, OPD_HERE), 0);
  const opd_operator *op = opd_find_op("t_loop::slow");
  ck_assert_ptr_nonnull(op);
  opd_server *s = start_loop_server(LOOP_NS, "tcp://127.0.0.1:0");
  opd_client *c = connect_with(s, OPD_CLIENT_PRIORITY_NORMAL);
  opd_client_tensor x = upload_floats(c, 1, 5), r;
  opd_client_value arg = opd_cv_tensor(x);
  /* the last call ran there: so will the next (nothing on workers) */
  ck_assert(slow_until_on_loop(s, c, &arg, &r));
  ck_assert(opd__metrics_loop_fits(op));
  atomic_store(&slow_now, true);
  uint64_t before = loop_requests(s);
  for (int i = 0; i < 10; i++) {
    ck_assert_int_eq(opd_client_call(c, "t_loop::slow", &arg, 1, &r, 1, NULL), 0);
    settle();
  }
  /* at most three overruns on the loop (fewer when a fast call before them overran, as a
   * preempted one may on a loaded machine), then none */
  ck_assert_uint_ge(loop_requests(s), before + 1);
  ck_assert_uint_le(loop_requests(s), before + OPD__LOOP_STRIKES);
  ck_assert(!opd__metrics_loop_fits(op));
  ck_assert(first_float(c, r) == 5);
  /* a new kernel (a hot registration) voids the verdict: its calls show their speed on a
   * worker again and come back to the loop */
  static const opd_kernel fast = {.boxed = slow_kernel, .name = "fast_again_kernel"};
  atomic_store(&slow_now, false);
  ck_assert_int_gt(opd_impl("t_loop::slow", OPD_KEY_CPU, &fast, OPD_HERE), 0);
  ck_assert(slow_until_on_loop(s, c, &arg, &r));
  ck_assert(opd__metrics_loop_fits(op));
  opd_client_close(c);
  opd_server_stop(s);
}
END_TEST

Suite *opd_test_sched_suite(void) {
  Suite *s = suite_create("sched");
  TCase *t = tcase_create("scheduler");
  tcase_set_timeout(t, 120);
  tcase_add_test(t, test_single_job_next_turn_tiny);
  tcase_add_test(t, test_single_job_next_turn_cheap);
  tcase_add_test(t, test_single_job_next_turn_long);
  tcase_add_test(t, test_short_job_beside_long_ones);
  tcase_add_test(t, test_lane_idle_without_long_jobs);
  tcase_add_test(t, test_gpu_pool_lane);
  tcase_add_test(t, test_priorities_share_4_2_1);
  tcase_add_test(t, test_priority_set_by_admin);
  tcase_add_test(t, test_worker_nice);
  tcase_add_test(t, test_cost_in_flight);
  tcase_add_test(t, test_queued_jobs_estimated_early);
  tcase_add_test(t, test_cancel_clears_jobs_and_cost);
  tcase_add_test(t, test_cancel_waits_for_estimation);
  tcase_add_test(t, test_parallel_share_rule);
  tcase_add_test(t, test_kernels_inline_while_workers_busy);
  suite_add_tcase(s, t);
  TCase *e = tcase_create("estimates");
  tcase_add_test(e, test_estimates);
  suite_add_tcase(s, e);
  TCase *d = tcase_create("daemon");
  tcase_set_timeout(d, 120);
  tcase_add_test(d, test_max_session_jobs_back_pressure);
  tcase_add_test(d, test_max_session_cost_back_pressure);
  tcase_add_test(d, test_priority_at_hello);
  tcase_add_test(d, test_priority_from_admin);
  tcase_add_test(d, test_tiny_call_beside_long_product);
  suite_add_tcase(s, d);
  TCase *l = tcase_create("loop");
  tcase_set_timeout(l, 120);
  tcase_add_test(l, test_tiny_calls_run_on_the_loop);
  tcase_add_test(l, test_loop_calls_off);
  tcase_add_test(l, test_loop_calls_only_tiny_and_in_order);
  tcase_add_test(l, test_loop_call_waits_for_a_download);
  tcase_add_test(l, test_loop_calls_charge_the_session);
  tcase_add_test(l, test_slow_operator_leaves_the_loop);
  suite_add_tcase(s, l);
  return s;
}

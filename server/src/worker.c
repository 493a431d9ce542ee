/* worker.c: worker pools and the per-session FIFO scheduler (see [Note: Sessions on
 * workers] in worker.h). */
#include "worker.h"

#include <assert.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "opd/dispatcher.h"
#include "opd/error.h"
#include "opd/memory.h"
#include "session.h"

/* The pool a device's work runs on: its GPU's pool, else the CPU pool (Meta work needs no
 * device; a CUDA device without a pool fails on the CPU pool, in execute.c). */
static opd__pool *pool_for(opd__sched *s, opd_device device) {
  if (device.type == OPD_DEVICE_CUDA) {
    unsigned i = device.index < 0 ? 0 : (unsigned)device.index;
    if (i < s->ngpu) return &s->gpu[i];
  }
  return &s->cpu;
}

/* Puts a session in its pool's ready list and returns the pool, whose condition variable
 * the caller signals (after unlocking, where it can: a worker woken while the lock is
 * still held would only block on it). */
static opd__pool *ready_push(opd__sched *s, opd__session *session) {
  opd__sched_entry *e = &session->sched;
  assert(e->head && !e->pool);
  opd__pool *p = pool_for(s, e->head->device);
  e->pool = p;
  e->next = NULL;
  e->prev = p->ready_tail;
  if (p->ready_tail)
    p->ready_tail->sched.next = session;
  else
    p->ready_head = session;
  p->ready_tail = session;
  e->state = OPD__SESSION_READY;
  return p;
}

opd__pool *opd__sched_pool_of(opd__sched *s, opd_device device) {
  return pool_for(s, device);
}

static void ready_unlink(opd__session *session) {
  opd__sched_entry *e = &session->sched;
  opd__pool *p = e->pool;
  if (e->prev)
    e->prev->sched.next = e->next;
  else
    p->ready_head = e->next;
  if (e->next)
    e->next->sched.prev = e->prev;
  else
    p->ready_tail = e->prev;
  e->pool = NULL;
  e->prev = e->next = NULL;
}

/* After a job ran (or a hold ended): next turn or idle. Lock held. */
static void requeue_or_idle(opd__sched *s, opd__session *session) {
  if (session->sched.head)
    pthread_cond_signal(&ready_push(s, session)->cv);
  else
    session->sched.state = OPD__SESSION_IDLE;
}

/* [Note: Handing jobs back in batches]
 * A worker hands finished jobs back to the loop in batches: while it has more work ready
 * (clients pipelining tiny requests), a job whose kernel ran for less than BATCH_CHEAP_NS
 * (job->kernel_ns, measured for the metrics anyway) waits, up to BATCH_MAX jobs, to go back
 * with the next ones, so that a connection's responses leave in a few sends and the loop is
 * woken once for them, if at all, rather than once per job (on a CPU shared with the loop,
 * each wake-up preempts the worker). Anything else ends the batch first: a job that ran
 * longer, a hold, nothing left to run. For the same reason a session whose job was cheap
 * keeps its turn for its next queued job, within the batch, instead of going to the end of
 * the ready list: one batch then holds a run of each connection's responses, not one of
 * every connection's. A session waits for at most BATCH_MAX cheap jobs of each session
 * ahead of it. The batch's responses leave from the worker ([Note: Responses written by
 * workers] in connection.c) when it goes back and, while no other session is ready, every
 * SEND_EVERY jobs: a lone pipelining client then refills its pipeline while the rest of
 * its batch runs, instead of the two taking turns to idle (with other sessions ready, the
 * worker has their work meanwhile, and fewer, larger sends cost less). */
#define BATCH_MAX      64
#define SEND_EVERY     32
#define BATCH_CHEAP_NS 20000

/* A worker is a dispatcher reader that is online only while it runs requests (passing a
 * quiescent state between two of a batch), so that registration changes wait for the
 * requests in flight and never for idle workers ([Note: Registration under traffic] in
 * dispatcher/src/registry.c). */
static void *worker_main(void *arg) {
  opd__pool *p = arg;
  opd__sched *s = p->sched;
  opd__job *batch = NULL, *batch_tail = NULL; /* ran, not handed back yet (by qnext) */
  unsigned nbatch = 0;
  opd__session *turn = NULL; /* a session whose turn goes on: RUNNING, with jobs queued */
  opd_reader_register();
  opd_reader_offline();
  pthread_mutex_lock(&s->mu);
  for (;;) {
    if (turn && (s->stopping || !turn->sched.head)) { /* cancelled meanwhile */
      requeue_or_idle(s, turn);
      turn = NULL;
    }
    if (batch && !turn && (s->stopping || !p->ready_head)) {
      pthread_mutex_unlock(&s->mu);
      opd_reader_offline();
      s->done(batch, s->done_arg);
      batch = batch_tail = NULL;
      nbatch = 0;
      pthread_mutex_lock(&s->mu);
      continue;
    }
    opd__session *session = turn;
    turn = NULL;
    if (!session) {
      while (!s->stopping && !p->ready_head) pthread_cond_wait(&p->cv, &s->mu);
      if (s->stopping) break;
      session = p->ready_head;
      ready_unlink(session);
    }
    opd__sched_entry *e = &session->sched;
    opd__job *job = e->head;
    assert(job && (e->state == OPD__SESSION_READY || e->state == OPD__SESSION_RUNNING));
    if (!(e->head = job->qnext)) e->tail = NULL;
    job->qnext = NULL;
    e->state = OPD__SESSION_RUNNING;
    pthread_mutex_unlock(&s->mu);

    if (!batch) opd_reader_online(); /* within a batch the worker stayed online */
    if (s->route) { /* [Note: Sessions on workers]: on the wrong pool, the job moves */
      job->device = s->route(job);
      if (pool_for(s, job->device) != p) {
        if (!batch) opd_reader_offline();
        pthread_mutex_lock(&s->mu);
        if (!(job->qnext = e->head)) e->tail = job;
        e->head = job;
        pthread_cond_signal(&ready_push(s, session)->cv);
        continue;
      }
    }
    bool hold = s->run(job);
    bool cheap = job->kernel_ns < BATCH_CHEAP_NS;

    pthread_mutex_lock(&s->mu);
    e->last = job->device;
    if (hold)
      e->state = OPD__SESSION_HELD;
    else if (cheap && e->head && !s->stopping && nbatch + 1 < BATCH_MAX)
      turn = session;
    else
      requeue_or_idle(s, session);
    bool others = p->ready_head != NULL;
    bool batch_more = !hold && cheap && (turn || others);
    pthread_mutex_unlock(&s->mu);
    /* the session may be freed once the loop has the job back: touch it no more (a
     * session whose turn goes on has jobs in this batch, not back yet) */
    if (batch_tail)
      batch_tail->qnext = job;
    else
      batch = job;
    batch_tail = job;
    if (!batch_more || ++nbatch >= BATCH_MAX) {
      assert(!turn);
      opd_reader_offline();
      s->done(batch, s->done_arg);
      batch = batch_tail = NULL;
      nbatch = 0;
    } else {
      if (s->send && !others && nbatch % SEND_EVERY == 0) s->send(batch, s->done_arg);
      opd_reader_quiescent(); /* between two calls: a registration waits for no more */
    }
    pthread_mutex_lock(&s->mu);
  }
  pthread_mutex_unlock(&s->mu);
  assert(!batch && !turn);
  opd_reader_unregister();
  return NULL;
}

/* Starts n threads in p with every signal blocked: 0 or pthread_create's error. */
static int start_threads(opd__pool *p, unsigned n) {
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  int rc = 0;
  for (; p->nthreads < n; p->nthreads++)
    if ((rc = pthread_create(&p->threads[p->nthreads], NULL, worker_main, p)) != 0) break;
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  return rc;
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
  p->device = (opd_device){OPD_DEVICE_CPU, -1};
  p->sched = s;
  if (!(p->threads = opd__calloc(cpu_workers, sizeof *p->threads)))
    return opd_error(OPD_ENOMEM, "out of memory starting %u workers", cpu_workers);
  pthread_mutex_init(&s->mu, NULL);
  pthread_cond_init(&p->cv, NULL);
  /* workers never take signals: the daemon's signals go to its main thread */
  int rc = start_threads(p, cpu_workers);
  if (rc != 0) {
    opd__sched_stop(s);
    return opd_error(OPD_ERESOURCE, "cannot start worker thread %u of %u: %s", p->nthreads + 1,
                     cpu_workers, strerror(rc));
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
    p->device = (opd_device){OPD_DEVICE_CUDA, (int16_t)d};
    p->sched = s;
    if (!(p->threads = opd__calloc(per_device, sizeof *p->threads)))
      return opd_error(OPD_ENOMEM, "out of memory starting the workers of cuda:%u", d);
    pthread_cond_init(&p->cv, NULL);
    s->ngpu = d + 1; /* stop joins this pool from now on */
    int rc = start_threads(p, per_device);
    if (rc != 0)
      return opd_error(OPD_ERESOURCE, "cannot start worker thread %u of cuda:%u: %s",
                       p->nthreads + 1, d, strerror(rc));
  }
  return 0;
}

static void stop_pool(opd__pool *p) {
  for (unsigned i = 0; i < p->nthreads; i++) pthread_join(p->threads[i], NULL);
  opd__free(p->threads);
  pthread_cond_destroy(&p->cv);
}

void opd__sched_stop(opd__sched *s) {
  pthread_mutex_lock(&s->mu);
  assert(!s->cpu.ready_head);
  s->stopping = true;
  pthread_cond_broadcast(&s->cpu.cv);
  for (unsigned d = 0; d < s->ngpu; d++) pthread_cond_broadcast(&s->gpu[d].cv);
  pthread_mutex_unlock(&s->mu);
  stop_pool(&s->cpu);
  for (unsigned d = 0; d < s->ngpu; d++) stop_pool(&s->gpu[d]);
  opd__free(s->gpu);
  pthread_mutex_destroy(&s->mu);
}

bool opd__sched_submit_list(opd__sched *s, opd__job *first, opd__job *last) {
  opd__sched_entry *e = &first->session->sched;
  pthread_mutex_lock(&s->mu);
  if (e->closed) {
    pthread_mutex_unlock(&s->mu);
    return false;
  }
  for (opd__job *job = first;; job = job->qnext) {
    assert(job->session == first->session);
    job->at_worker = true;
    if (s->route && job->kind != OPD__JOB_UPLOAD) job->device = e->last; /* a guess */
    if (job == last) break;
  }
  last->qnext = NULL;
  if (e->tail)
    e->tail->qnext = first;
  else
    e->head = first;
  e->tail = last;
  opd__pool *wake = e->state == OPD__SESSION_IDLE ? ready_push(s, first->session) : NULL;
  pthread_mutex_unlock(&s->mu);
  if (wake) pthread_cond_signal(&wake->cv);
  return true;
}

bool opd__sched_submit(opd__sched *s, opd__job *job) {
  return opd__sched_submit_list(s, job, job);
}

opd__job *opd__sched_cancel(opd__sched *s, opd__session *session) {
  opd__sched_entry *e = &session->sched;
  pthread_mutex_lock(&s->mu);
  e->closed = true;
  opd__job *jobs = e->head;
  e->head = e->tail = NULL;
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
  requeue_or_idle(s, session);
  pthread_mutex_unlock(&s->mu);
}

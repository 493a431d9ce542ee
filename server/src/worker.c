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
#include "session.h"

/* The pool a device's work runs on: the CPU pool for now (Meta work needs no device). */
static opd__pool *pool_for(opd__sched *s, opd_device device) {
  (void)device;
  return &s->cpu;
}

static void ready_push(opd__sched *s, opd__session *session) {
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
  pthread_cond_signal(&p->cv);
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
    ready_push(s, session);
  else
    session->sched.state = OPD__SESSION_IDLE;
}

/* A worker is a dispatcher reader that is online only while it runs a request, so that
 * registration changes wait for the requests in flight and never for idle workers
 * ([Note: Registration under traffic] in dispatcher/src/registry.c). */
static void *worker_main(void *arg) {
  opd__pool *p = arg;
  opd__sched *s = p->sched;
  opd_reader_register();
  opd_reader_offline();
  pthread_mutex_lock(&s->mu);
  for (;;) {
    while (!s->stopping && !p->ready_head) pthread_cond_wait(&p->cv, &s->mu);
    if (s->stopping) break;
    opd__session *session = p->ready_head;
    ready_unlink(session);
    opd__sched_entry *e = &session->sched;
    opd__job *job = e->head;
    assert(job && e->state == OPD__SESSION_READY);
    if (!(e->head = job->qnext)) e->tail = NULL;
    job->qnext = NULL;
    e->state = OPD__SESSION_RUNNING;
    pthread_mutex_unlock(&s->mu);

    opd_reader_online();
    bool hold = s->run(job);
    opd_reader_offline();

    pthread_mutex_lock(&s->mu);
    if (hold)
      e->state = OPD__SESSION_HELD;
    else
      requeue_or_idle(s, session);
    pthread_mutex_unlock(&s->mu);
    /* the session may be freed once the loop has the job back: touch it no more */
    s->done(job, s->done_arg);
    pthread_mutex_lock(&s->mu);
  }
  pthread_mutex_unlock(&s->mu);
  opd_reader_unregister();
  return NULL;
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
  if (!(p->threads = calloc(cpu_workers, sizeof *p->threads)))
    return opd_error(OPD_ENOMEM, "out of memory starting %u workers", cpu_workers);
  pthread_mutex_init(&s->mu, NULL);
  pthread_cond_init(&p->cv, NULL);
  /* workers never take signals: the daemon's signals go to its main thread */
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  int rc = 0;
  for (; p->nthreads < cpu_workers; p->nthreads++)
    if ((rc = pthread_create(&p->threads[p->nthreads], NULL, worker_main, p)) != 0) break;
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  if (rc != 0) {
    opd__sched_stop(s);
    return opd_error(OPD_ERESOURCE, "cannot start worker thread %u of %u: %s", p->nthreads + 1,
                     cpu_workers, strerror(rc));
  }
  return 0;
}

void opd__sched_stop(opd__sched *s) {
  opd__pool *p = &s->cpu;
  pthread_mutex_lock(&s->mu);
  assert(!p->ready_head);
  s->stopping = true;
  pthread_cond_broadcast(&p->cv);
  pthread_mutex_unlock(&s->mu);
  for (unsigned i = 0; i < p->nthreads; i++) pthread_join(p->threads[i], NULL);
  free(p->threads);
  pthread_cond_destroy(&p->cv);
  pthread_mutex_destroy(&s->mu);
}

bool opd__sched_submit(opd__sched *s, opd__job *job) {
  opd__sched_entry *e = &job->session->sched;
  pthread_mutex_lock(&s->mu);
  if (e->closed) {
    pthread_mutex_unlock(&s->mu);
    return false;
  }
  job->qnext = NULL;
  job->at_worker = true;
  if (e->tail)
    e->tail->qnext = job;
  else
    e->head = job;
  e->tail = job;
  if (e->state == OPD__SESSION_IDLE) ready_push(s, job->session);
  pthread_mutex_unlock(&s->mu);
  return true;
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

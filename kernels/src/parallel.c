/* parallel.c: the intra-op thread pool (see [Note: Intra-op parallelism] and [Note: Kernel
 * threads and the load] in parallel.h). */
#include "parallel.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <unistd.h>

#include "opd/kernels.h"

#define MAX_THREADS 64

static struct {
  pthread_mutex_t lock; /* one parallel region at a time */
  pthread_mutex_t mu;   /* guards the fields below */
  pthread_cond_t work, done;
  pthread_once_t once;
  int threads;         /* including the caller */
  int started;         /* pool threads running */
  int active;          /* chunks of the current region; worker i runs chunk i */
  uint64_t generation; /* bumped per region */
  int pending;         /* chunks not finished */
  opd__range_fn fn;
  void *ctx;
  int64_t begin, end, chunk;
} pool = {.lock = PTHREAD_MUTEX_INITIALIZER,
          .mu = PTHREAD_MUTEX_INITIALIZER,
          .work = PTHREAD_COND_INITIALIZER,
          .done = PTHREAD_COND_INITIALIZER,
          .once = PTHREAD_ONCE_INIT};

static _Thread_local bool in_region;

/* B of [Note: Kernel threads and the load], as the scheduler last reported it */
static _Atomic unsigned busy_threads;

void opd_kernels_set_busy_threads(unsigned n) {
  atomic_store_explicit(&busy_threads, n, memory_order_relaxed);
}

int opd__parallel_share(int pool, unsigned busy) {
  if (busy <= 1) return pool;
  return busy - 1 >= (unsigned)pool ? 1 : pool - (int)(busy - 1);
}

static void run_chunk(int index) {
  int64_t b = pool.begin + (int64_t)index * pool.chunk;
  int64_t e = b + pool.chunk < pool.end ? b + pool.chunk : pool.end;
  if (b < e) pool.fn(pool.ctx, b, e);
}

static void *worker(void *arg) {
  int index = (int)(intptr_t)arg;
  uint64_t seen = 0;
  in_region = true;
  pthread_mutex_lock(&pool.mu);
  for (;;) {
    while (pool.generation == seen) pthread_cond_wait(&pool.work, &pool.mu);
    seen = pool.generation;
    /* a worker that slept through a region it was not part of wakes with index >= active */
    bool mine = index < pool.active;
    pthread_mutex_unlock(&pool.mu);
    if (mine) run_chunk(index);
    pthread_mutex_lock(&pool.mu);
    if (mine && --pool.pending == 0) pthread_cond_signal(&pool.done);
  }
  return NULL;
}

static void init_threads(void) {
  if (pool.threads > 0) return;
  const char *env = getenv("OPD_NUM_THREADS");
  int n = env ? atoi(env) : 0;
  if (n < 1) n = (int)sysconf(_SC_NPROCESSORS_ONLN);
  pool.threads = n < 1 ? 1 : n > MAX_THREADS ? MAX_THREADS : n;
}

int opd__parallel_threads(void) {
  pthread_once(&pool.once, init_threads);
  return pool.threads;
}

void opd__parallel_set_threads(int n) {
  pthread_once(&pool.once, init_threads);
  pthread_mutex_lock(&pool.lock);
  if (n < 1) n = (int)sysconf(_SC_NPROCESSORS_ONLN);
  pool.threads = n < 1 ? 1 : n > MAX_THREADS ? MAX_THREADS : n;
  pthread_mutex_unlock(&pool.lock);
}

void opd__parallel_for(int64_t begin, int64_t end, int64_t grain, opd__range_fn fn, void *ctx) {
  if (begin >= end) return;
  int threads = opd__parallel_threads();
  int64_t n = end - begin;
  if (grain < 1) grain = 1;
  if (threads == 1 || in_region || n < 2 * grain) {
    fn(ctx, begin, end);
    return;
  }
  threads = opd__parallel_share(threads, atomic_load_explicit(&busy_threads, memory_order_relaxed));
  /* another kernel's region holds the pool: this one runs on its own thread */
  if (threads == 1 || pthread_mutex_trylock(&pool.lock) != 0) {
    fn(ctx, begin, end);
    return;
  }
  int64_t chunks = n / grain < threads ? n / grain : threads;
  pthread_mutex_lock(&pool.mu);
  while (pool.started < (int)chunks - 1) { /* pool threads 1 .. chunks-1 */
    pthread_t t;
    if (pthread_create(&t, NULL, worker, (void *)(intptr_t)(pool.started + 1)) != 0) break;
    pthread_detach(t);
    pool.started++;
  }
  if (chunks > pool.started + 1) chunks = pool.started + 1;
  pool.fn = fn;
  pool.ctx = ctx;
  pool.begin = begin;
  pool.end = end;
  pool.chunk = (n + chunks - 1) / chunks;
  pool.pending = (int)chunks - 1;
  pool.active = (int)chunks;
  pool.generation++;
  pthread_cond_broadcast(&pool.work);
  pthread_mutex_unlock(&pool.mu);
  in_region = true;
  run_chunk(0);
  in_region = false;
  pthread_mutex_lock(&pool.mu);
  while (pool.pending > 0) pthread_cond_wait(&pool.done, &pool.mu);
  pthread_mutex_unlock(&pool.mu);
  pthread_mutex_unlock(&pool.lock);
}

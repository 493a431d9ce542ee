/* parallel.c: the intra-op thread pool (see [Note: Intra-op parallelism] and [Note: Kernel
 * threads and the load] in parallel.h). */
#include "parallel.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <unistd.h>

#include "opd/cancel.h"
#include "opd/clock.h"
#include "opd/kernels.h"

#define MAX_THREADS 64

static struct {
  pthread_mutex_t lock; /* one parallel region at a time */
  pthread_mutex_t mu;   /* guards the fields below */
  pthread_cond_t work, done;
  pthread_once_t once;
  int threads;         /* including the caller */
  int started;         /* pool threads running */
  uint64_t generation; /* bumped per region */
  _Atomic int pending; /* chunks not finished */
  opd__range_fn fn;
  void *ctx;
  const _Atomic bool *cancel; /* the caller's ([Note: Cancelling long work] in opd/cancel.h) */
  int64_t begin, end, chunk;
} pool = {.lock = PTHREAD_MUTEX_INITIALIZER,
          .mu = PTHREAD_MUTEX_INITIALIZER,
          .work = PTHREAD_COND_INITIALIZER,
          .done = PTHREAD_COND_INITIALIZER,
          .once = PTHREAD_ONCE_INIT};

/* ticket[i]: the generation of the last region whose chunk i pool thread i is to run; set after
 * the region's fields, so a thread that sees its ticket change reads them whole (and they stay
 * until that thread has finished: the next region waits for pending to reach 0) */
static struct { _Alignas(64) _Atomic uint64_t value; } ticket[MAX_THREADS];

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

/* [Note: Spinning before sleeping]
 * A thread that sleeps on a condition variable here wakes 10 us after the broadcast when the
 * regions come back to back, and 45 us when its CPU has been idle for a millisecond (measured on
 * the 2-CPU VMs: a halted virtual CPU waits for the hypervisor's interrupt). A region of a
 * 100 us kernel split in two paid that twice: once for the pool's thread to start its half, once
 * for the caller to learn it had finished. So both sides first watch the atomic they wait for,
 * for at most SPIN_NS, and only then sleep: a pool thread after its chunk (the next region of a
 * stream of kernels finds it awake), the caller after its own chunk (the other halves end within
 * microseconds of it). The cost is at most SPIN_NS of a CPU per region and thread, and none when
 * every worker of the daemon is busy: such kernels run on their own thread, with no region
 * ([Note: Kernel threads and the load]). */
#define SPIN_NS 50000

static void cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

/* Spins until done(arg) (true), or SPIN_NS pass (false). */
static bool spin_until(bool (*done)(const void *), const void *arg) {
  uint64_t deadline = 0;
  for (unsigned i = 1;; i++) {
    if (done(arg)) return true;
    cpu_relax();
    if (i % 64 == 0) {
      uint64_t t = opd_monotonic_ns();
      if (!deadline)
        deadline = t + SPIN_NS;
      else if (t >= deadline)
        return false;
    }
  }
}

typedef struct ticket_wait {
  int index;
  uint64_t seen;
} ticket_wait;

static bool ticket_changed(const void *arg) {
  const ticket_wait *w = arg;
  return atomic_load_explicit(&ticket[w->index].value, memory_order_acquire) != w->seen;
}

static bool chunks_done(const void *arg) {
  (void)arg;
  return atomic_load_explicit(&pool.pending, memory_order_acquire) == 0;
}

static void *worker(void *arg) {
  int index = (int)(intptr_t)arg;
  uint64_t seen = 0;
  in_region = true;
  for (;;) {
    if (!spin_until(ticket_changed, &(ticket_wait){index, seen})) {
      pthread_mutex_lock(&pool.mu);
      while (atomic_load_explicit(&ticket[index].value, memory_order_relaxed) == seen)
        pthread_cond_wait(&pool.work, &pool.mu);
      pthread_mutex_unlock(&pool.mu);
    }
    seen = atomic_load_explicit(&ticket[index].value, memory_order_acquire);
    opd_cancel_adopt(pool.cancel);
    run_chunk(index);
    opd_cancel_adopt(NULL);
    if (atomic_fetch_sub_explicit(&pool.pending, 1, memory_order_acq_rel) == 1) {
      pthread_mutex_lock(&pool.mu); /* the caller may sleep on done */
      pthread_cond_signal(&pool.done);
      pthread_mutex_unlock(&pool.mu);
    }
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

int opd__parallel_threads_now(void) {
  if (in_region) return 1;
  return opd__parallel_share(opd__parallel_threads(),
                             atomic_load_explicit(&busy_threads, memory_order_relaxed));
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
  pool.cancel = opd_cancel_flag();
  pool.begin = begin;
  pool.end = end;
  pool.chunk = (n + chunks - 1) / chunks;
  atomic_store_explicit(&pool.pending, (int)chunks - 1, memory_order_relaxed);
  pool.generation++;
  for (int i = 1; i < (int)chunks; i++)
    atomic_store_explicit(&ticket[i].value, pool.generation, memory_order_release);
  pthread_cond_broadcast(&pool.work);
  pthread_mutex_unlock(&pool.mu);
  in_region = true;
  run_chunk(0);
  in_region = false;
  if (!spin_until(chunks_done, NULL)) {
    pthread_mutex_lock(&pool.mu);
    while (atomic_load_explicit(&pool.pending, memory_order_acquire) > 0)
      pthread_cond_wait(&pool.done, &pool.mu);
    pthread_mutex_unlock(&pool.mu);
  }
  pthread_mutex_unlock(&pool.lock);
}

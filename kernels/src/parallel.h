/* parallel.h: the intra-op thread pool (internal to the kernels library).
 *
 * [Note: Intra-op parallelism]
 * opd__parallel_for splits [begin, end) into at most one chunk per thread it may use (the
 * calling thread takes the first) when the range holds at least 2 * grain items; smaller
 * work runs inline on the caller, with no synchronisation. The pool has OPD_NUM_THREADS
 * (environment) or nproc threads, started on first use. A parallel_for inside a
 * parallel_for runs inline, and so does one that finds the pool running another region:
 * a kernel never waits for another kernel's threads. How many threads a region may use
 * follows [Note: Kernel threads and the load]; how its threads wait for it and for each other,
 * [Note: Spinning before sleeping] in parallel.c.
 *
 * [Note: Kernel threads and the load]
 * The one rule for the threads of a kernel: a parallel region that starts while B threads
 * of the caller's worker pool run kernels (the caller among them; the daemon's scheduler
 * reports B with opd_kernels_set_busy_threads, [Note: Fair sharing of workers] in
 * server/src/worker.h) uses at most
 *
 *     T = max(1, P - (B - 1))    threads, itself included (and at most P),
 *
 * where P is the pool's size (OPD_NUM_THREADS or the online CPUs): the CPUs the other
 * busy workers leave. With every worker busy each kernel runs on its own thread; a lone
 * large kernel takes the machine. Nobody reporting (a program calling kernels itself)
 * means B = 0: the whole pool. OpenBLAS is set to one thread ([Note: Matrix products on
 * the CPU] in kernels/cpu/linalg.c) and a product is split over this pool by rows like any
 * other loop, so no library brings threads of its own: the threads running kernels are
 * never more than the workers plus what T grants, which is at most P in all.
 */
#ifndef OPD_KERNELS_PARALLEL_H
#define OPD_KERNELS_PARALLEL_H

#include <stdint.h>

typedef void (*opd__range_fn)(void *ctx, int64_t begin, int64_t end);

/* Calls fn over disjoint sub-ranges covering [begin, end), possibly on several threads, and
 * returns when all are done. */
void opd__parallel_for(int64_t begin, int64_t end, int64_t grain, opd__range_fn fn, void *ctx);
/* The pool's size P: the most threads work is split over (1 means inline). */
int opd__parallel_threads(void);
/* The threads a region starting now on this thread may use (T of [Note: Kernel threads and
 * the load]; 1 inside a region): what a library with its own pool (oneDNN's OpenMP) is
 * given. */
int opd__parallel_threads_now(void);
/* Sets it (before first use, or between calls); n < 1 means nproc. */
void opd__parallel_set_threads(int n);
/* T of [Note: Kernel threads and the load] for a pool of `pool` threads while `busy`
 * threads run kernels. */
int opd__parallel_share(int pool, unsigned busy);

/* Items per chunk below which elementwise work stays on one thread. */
#define OPD_GRAIN_ELEMENTWISE 32768

#endif

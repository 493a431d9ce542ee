/* parallel.h: the intra-op thread pool (internal to the kernels library).
 *
 * [Note: Intra-op parallelism]
 * opd_parallel_for splits [begin, end) into at most one chunk per pool thread (the calling
 * thread takes the first) when the range holds at least 2 * grain items; smaller work runs
 * inline on the caller, with no synchronisation. The pool has OPD_NUM_THREADS (environment)
 * or nproc threads, started on first use. A parallel_for inside a parallel_for runs inline.
 */
#ifndef OPD_KERNELS_PARALLEL_H
#define OPD_KERNELS_PARALLEL_H

#include <stdint.h>

typedef void (*opd__range_fn)(void *ctx, int64_t begin, int64_t end);

/* Calls fn over disjoint sub-ranges covering [begin, end), possibly on several threads, and
 * returns when all are done. */
void opd__parallel_for(int64_t begin, int64_t end, int64_t grain, opd__range_fn fn, void *ctx);
/* The number of threads work is split over (1 means inline). */
int opd__parallel_threads(void);
/* Sets it (before first use, or between calls); n < 1 means nproc. */
void opd__parallel_set_threads(int n);

/* Items per chunk below which elementwise work stays on one thread. */
#define OPD_GRAIN_ELEMENTWISE 32768

#endif

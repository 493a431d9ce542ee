/* metrics.h: per-operator call counters and latency histograms for the status endpoint's
 * /metrics (internal to the server).
 *
 * [Note: Call metrics]
 * Workers record every dispatched call with opd__metrics_call: one relaxed atomic add for
 * the (operator, dispatch key) counter, one for the latency bucket, one for the latency sum
 * and, on error, one each for the (operator, error code) and (operator, dispatch key)
 * error counters. The first three have a second copy that one thread at a time may claim
 * (opd__metrics_claim_counters: the event loop, which runs the tiny calls) and add to
 * without a locked instruction ([Note: Counters with one writer at a time]); a scrape adds
 * the two copies. Every error response (of any request) also counts by its protocol code. An
 * operator's counters live in a fixed, process-wide open-addressing table keyed by the operator
 * pointer (operators are never freed); a slot is claimed once with a compare-and-swap, so the call
 * path takes no lock and allocates nothing. When the table is full, calls of further operators are
 * counted only in a global overflow counter. The status thread reads the atomics when it
 * is scraped; counts are cumulative over the process's life, as Prometheus expects.
 */
#ifndef OPD_SERVER_METRICS_H
#define OPD_SERVER_METRICS_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#if defined(__x86_64__)
#include <x86intrin.h>
#endif

#include "opd/clock.h"
#include "opd/dispatcher.h"

#define OPD__METRICS_BUCKETS 13 /* upper bounds 1 us * 4^i for i < 12, then +Inf */
#define OPD__METRICS_CODES   32 /* opd error codes are -1..-31 */

/* [Note: Counters with one writer at a time]
 * A counter that one thread at a time writes, each writer's writes ordered before the
 * next writer's (a session's calls run one at a time and pass from thread to thread under
 * the scheduler's lock; the loop's own counters have the loop alone), is added to by a
 * relaxed load and store: a reader on another thread sees a recent value, never a torn
 * one, and the writer spends no locked instruction (an atomic add is one, and the tiny
 * call's path had sixteen, an eighth of the daemon's CPU: docs/PERFORMANCE.md). */
static inline void opd__count(_Atomic uint64_t *counter, uint64_t n) {
  atomic_store_explicit(counter, atomic_load_explicit(counter, memory_order_relaxed) + n,
                        memory_order_relaxed);
}

/* [Note: The duration clock]
 * Every call's duration is read twice (its metrics, the loop's verdicts on it, the fair
 * scheduler's pass). Under a hypervisor's kvm-clock one clock_gettime(CLOCK_MONOTONIC)
 * costs 25-30 ns, two of them 8% of the daemon's CPU for a tiny call; the CPU's time-stamp
 * counter reads in 11 ns. So where the CPU says its TSC is invariant (x86-64, CPUID
 * 0x80000007 EDX bit 8: one rate, counting in every sleep state), durations are TSC
 * ticks, converted to nanoseconds by a factor that opd__metrics_clock_init measures
 * against CLOCK_MONOTONIC over 2 ms when the server starts (each end the tightest of 16
 * paired readings, so a preemption does not skew it); elsewhere (another CPU, an old one,
 * or before that measurement) the ticks are CLOCK_MONOTONIC's nanoseconds. A duration that
 * starts on one core and ends on another trusts their counters to agree, as the kernel's
 * TSC clocksource does; one that would read negative reads 0. Only durations come from
 * this clock: points in time (the status endpoint's uptime) come from opd_monotonic_ns
 * (opd/clock.h). */
/* Measures the TSC's rate, once per process (later calls return at once); before it has
 * run, durations come from CLOCK_MONOTONIC. */
void opd__metrics_clock_init(void);
#if defined(__x86_64__)
static inline uint64_t opd__tsc(void) {
  return __rdtsc();
}
#else
static inline uint64_t opd__tsc(void) {
  return 0;
}
#endif
/* Set once by opd__metrics_clock_init: nanoseconds per TSC tick in 32.32 fixed point, 0
 * while durations come from CLOCK_MONOTONIC. Read by the inline functions below. */
extern _Atomic uint64_t opd__metrics_ns_per_tick;
/* A reading of the duration clock: the start or the end of a duration. */
static inline uint64_t opd__metrics_ticks(void) {
  return atomic_load_explicit(&opd__metrics_ns_per_tick, memory_order_relaxed) ? opd__tsc()
                                                                               : opd_monotonic_ns();
}
/* Nanoseconds from reading `from` to reading `to` (0 when `to` is earlier). */
static inline uint64_t opd__metrics_ticks_ns(uint64_t from, uint64_t to) {
  if (to <= from) return 0;
  uint64_t f = atomic_load_explicit(&opd__metrics_ns_per_tick, memory_order_relaxed);
  return f ? (uint64_t)(((unsigned __int128)(to - from) * f) >> 32) : to - from;
}
/* What one call showed about running its operator on the event-loop thread ([Note: Tiny
 * calls on the loop] in conn_loop_calls.c); the verdict is kept beside the operator's counters. */
typedef enum opd__loop_lesson {
  OPD__LOOP_NOTHING, /* nothing */
  OPD__LOOP_FITS,    /* on a worker, estimated small enough for the loop and as fast */
  OPD__LOOP_IN_TIME, /* on the loop, within short_job_us */
  OPD__LOOP_OVERRAN, /* on the loop, longer than short_job_us */
} opd__loop_lesson;
/* Overruns in a row after which an operator runs on workers for good (one alone may be a
 * preemption). */
#define OPD__LOOP_STRIKES 3

/* Claims the single-writer copy of the call counters for this thread ([Note: Call metrics]):
 * false when another thread has it (this one then adds atomically). Unclaiming gives it
 * back, this thread's additions ordered before the next owner's. */
bool opd__metrics_claim_counters(void);
void opd__metrics_unclaim_counters(void);

/* Records one call: `slot` is the dispatch-table slot of the runtime key it dispatched to
 * (opd_call_boxed_keys reports it: [Note: Prepared calls] in prepared.h), rc its result (0
 * or a negative opd error), ns its duration, `lesson` what it showed of the operator's fit
 * for the loop. */
void opd__metrics_call(const opd_operator *op, unsigned slot, int rc, uint64_t ns,
                       opd__loop_lesson lesson);
/* Whether the operator may run on the loop: a call of it FITS under its current generation
 * ([Note: Operator generations] in opd/dispatcher.h: a hot registration voids the verdict,
 * which its next calls on workers learn again), and it has not OVERRAN OPD__LOOP_STRIKES
 * times in a row since (false when its counters found the table full). */
bool opd__metrics_loop_fits(const opd_operator *op);

#define OPD__METRICS_RESPONSE_CODES 16 /* protocol ErrorCode values (proto/opd.proto) */
/* Records an error response of protocol error code `code` (any request kind). */
void opd__metrics_response_error(int code);
uint64_t opd__metrics_response_errors(int code);

/* A snapshot of one operator's counters (non-cumulative buckets). */
typedef struct opd__op_metrics_snapshot {
  const opd_operator *op;
  uint64_t calls_by_slot[OPD_NUM_RUNTIME_SLOTS];
  uint64_t errors_by_slot[OPD_NUM_RUNTIME_SLOTS];
  uint64_t errors_by_code[OPD__METRICS_CODES];
  uint64_t buckets[OPD__METRICS_BUCKETS];
  uint64_t sum_ns;
} opd__op_metrics_snapshot;

/* Calls fn for every operator with recorded calls. */
void opd__metrics_for_each(void (*fn)(const opd__op_metrics_snapshot *m, void *arg), void *arg);
/* Calls of operators that found the table full. */
uint64_t opd__metrics_overflow(void);
/* The upper bound of bucket i in seconds (i < OPD__METRICS_BUCKETS - 1). */
double opd__metrics_bucket_bound(int i);

#endif

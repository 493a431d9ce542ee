/* metrics.c: per-operator call counters and latency histograms (see [Note: Call metrics]
 * in metrics.h). */
#include "metrics.h"

#include <assert.h>
#include <pthread.h>
#include <stdatomic.h>
#if defined(__x86_64__)
#include <cpuid.h>
#endif

#include "opd/clock.h"

#define TABLE_SIZE 1024 /* a power of two; opd defines a few hundred operators */

/* The counters every call adds to: one set for the thread that owns the single-writer
 * counters, one for the others ([Note: Call metrics] in metrics.h). */
typedef struct call_counts {
  _Atomic uint64_t calls_by_slot[OPD_NUM_RUNTIME_SLOTS];
  _Atomic uint64_t buckets[OPD__METRICS_BUCKETS];
  _Atomic uint64_t sum_ns;
} call_counts;

typedef struct op_metrics {
  _Atomic(const opd_operator *) op; /* NULL: free */
  call_counts shared, owned;
  _Atomic uint64_t errors_by_slot[OPD_NUM_RUNTIME_SLOTS];
  _Atomic uint64_t errors_by_code[OPD__METRICS_CODES];
  /* [Note: Tiny calls on the loop] in conn_loop_calls.c: 1 + the operator's generation when a call
   * of it FITS (0: none yet; a registration since voids it), and its overruns on the loop in
   * a row since (OPD__LOOP_STRIKES: not under this generation) */
  _Atomic uint64_t loop_fit_generation;
  _Atomic int loop_strikes;
} op_metrics;

static op_metrics table[TABLE_SIZE];
static _Atomic uint64_t overflow;
static _Atomic uint64_t response_errors[OPD__METRICS_RESPONSE_CODES];
/* the single-writer counters are claimed by a thread; this one has them */
static atomic_bool owned_claimed;
static _Thread_local bool owns_counters;

bool opd__metrics_claim_counters(void) {
  bool expected = false;
  owns_counters = atomic_compare_exchange_strong_explicit(
      &owned_claimed, &expected, true, memory_order_acquire, memory_order_relaxed);
  return owns_counters;
}

void opd__metrics_unclaim_counters(void) {
  if (!owns_counters) return;
  owns_counters = false;
  atomic_store_explicit(&owned_claimed, false, memory_order_release); /* after its writes */
}

void opd__metrics_response_error(int code) {
  if (code < 0 || code >= OPD__METRICS_RESPONSE_CODES) code = 0;
  atomic_fetch_add_explicit(&response_errors[code], 1, memory_order_relaxed);
}

uint64_t opd__metrics_response_errors(int code) {
  assert(code >= 0 && code < OPD__METRICS_RESPONSE_CODES);
  return atomic_load_explicit(&response_errors[code], memory_order_relaxed);
}

/* ---- [Note: The duration clock] in metrics.h ---- */

#define CALIBRATION_NS   2000000
/* TSC rates believed: anything outside is a broken reading, and CLOCK_MONOTONIC stays */
#define MIN_TICKS_PER_US 100    /* 100 MHz */
#define MAX_TICKS_PER_US 100000 /* 100 GHz */

/* Written once, by clock_measure: pthread_once orders it before the reads of every thread
 * that called opd__metrics_clock_init or was started after such a call (only a duration
 * that a thread began before the measurement and ends after it would mix the clocks). At
 * 32.32 fixed point, a tick of a 100 GHz counter (MAX_TICKS_PER_US) keeps 6 digits. */
_Atomic uint64_t opd__metrics_ns_per_tick;
static pthread_once_t clock_once = PTHREAD_ONCE_INIT;

#if defined(__x86_64__)
static bool tsc_invariant(void) {
  unsigned a, b, c, d;
  if (!__get_cpuid(0x80000000u, &a, &b, &c, &d) || a < 0x80000007u) return false;
  __get_cpuid(0x80000007u, &a, &b, &c, &d);
  return d & (1u << 8);
}
#else
static bool tsc_invariant(void) {
  return false;
}
#endif

/* A CLOCK_MONOTONIC reading and the TSC at the same moment: of PAIR_TRIES readings, the one
 * the TSC brackets most tightly, with the bracket's midpoint (a preemption inside one
 * bracket, which would skew the rate for the process's life, loses to the others). */
#define PAIR_TRIES 16
static void paired_reading(uint64_t *mono, uint64_t *ticks) {
  uint64_t tightest = UINT64_MAX;
  for (int i = 0; i < PAIR_TRIES; i++) {
    uint64_t before = opd__tsc(), m = opd_monotonic_ns(), after = opd__tsc();
    if (after >= before && after - before < tightest) {
      tightest = after - before;
      *mono = m;
      *ticks = before + (after - before) / 2;
    }
  }
}

static void clock_measure(void) {
  if (!tsc_invariant()) return;
  uint64_t m0 = 0, t0 = 0, m1 = 0, t1 = 0;
  paired_reading(&m0, &t0);
  while (opd_monotonic_ns() - m0 < CALIBRATION_NS) continue;
  paired_reading(&m1, &t1);
  if (t1 <= t0 || m1 <= m0) return;
  uint64_t ticks = t1 - t0, us = (m1 - m0) / 1000;
  if (ticks / us < MIN_TICKS_PER_US || ticks / us > MAX_TICKS_PER_US) return;
  uint64_t fixed = (uint64_t)((double)(m1 - m0) / (double)ticks * 0x1p32);
  atomic_store_explicit(&opd__metrics_ns_per_tick, fixed ? fixed : 1, memory_order_release);
}

void opd__metrics_clock_init(void) {
  pthread_once(&clock_once, clock_measure);
}

static op_metrics *find(const opd_operator *op) {
  size_t h = (size_t)(((uint64_t)(uintptr_t)op * UINT64_C(0x9E3779B97F4A7C15)) >> 54);
  for (size_t n = 0; n < TABLE_SIZE; n++, h = (h + 1) & (TABLE_SIZE - 1)) {
    const opd_operator *cur = atomic_load_explicit(&table[h].op, memory_order_acquire);
    if (cur == op) return &table[h];
    if (!cur) {
      const opd_operator *expected = NULL;
      if (atomic_compare_exchange_strong_explicit(&table[h].op, &expected, op, memory_order_acq_rel,
                                                  memory_order_acquire) ||
          expected == op)
        return &table[h];
    }
  }
  return NULL;
}

static int bucket_of(uint64_t ns) {
  int i = 0;
  for (uint64_t bound = 1000; i < OPD__METRICS_BUCKETS - 1 && ns > bound; bound *= 4) i++;
  return i;
}

double opd__metrics_bucket_bound(int i) {
  assert(i >= 0 && i < OPD__METRICS_BUCKETS - 1);
  double b = 1e-6;
  while (i-- > 0) b *= 4;
  return b;
}

void opd__metrics_call(const opd_operator *op, unsigned slot, int rc, uint64_t ns,
                       opd__loop_lesson lesson) {
  _Static_assert((TABLE_SIZE & (TABLE_SIZE - 1)) == 0 && TABLE_SIZE == 1 << 10,
                 "the hash takes the top 10 bits");
  op_metrics *m = find(op);
  if (!m) {
    atomic_fetch_add_explicit(&overflow, 1, memory_order_relaxed);
    return;
  }
  assert(slot < OPD_NUM_RUNTIME_SLOTS);
  if (owns_counters) {
    opd__count(&m->owned.calls_by_slot[slot], 1);
    opd__count(&m->owned.buckets[bucket_of(ns)], 1);
    opd__count(&m->owned.sum_ns, ns);
  } else {
    atomic_fetch_add_explicit(&m->shared.calls_by_slot[slot], 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&m->shared.buckets[bucket_of(ns)], 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&m->shared.sum_ns, ns, memory_order_relaxed);
  }
  if (rc < 0) {
    atomic_fetch_add_explicit(&m->errors_by_code[-rc < OPD__METRICS_CODES ? -rc : 0], 1,
                              memory_order_relaxed);
    atomic_fetch_add_explicit(&m->errors_by_slot[slot], 1, memory_order_relaxed);
  }
  switch (lesson) {
  case OPD__LOOP_NOTHING: break;
  case OPD__LOOP_FITS: { /* a verdict of an older generation starts over */
    uint64_t gen = opd_op_generation(op) + 1;
    if (atomic_load_explicit(&m->loop_fit_generation, memory_order_relaxed) != gen) {
      atomic_store_explicit(&m->loop_strikes, 0, memory_order_relaxed);
      atomic_store_explicit(&m->loop_fit_generation, gen, memory_order_relaxed);
    }
    break;
  }
  case OPD__LOOP_IN_TIME: { /* the row of overruns ends, unless it is complete */
    int strikes = atomic_load_explicit(&m->loop_strikes, memory_order_relaxed);
    if (strikes > 0 && strikes < OPD__LOOP_STRIKES)
      atomic_store_explicit(&m->loop_strikes, 0, memory_order_relaxed);
    break;
  }
  case OPD__LOOP_OVERRAN:
    atomic_fetch_add_explicit(&m->loop_strikes, 1, memory_order_relaxed);
    break;
  }
}

bool opd__metrics_loop_fits(const opd_operator *op) {
  op_metrics *m = find(op);
  return m &&
         atomic_load_explicit(&m->loop_fit_generation, memory_order_relaxed) ==
             opd_op_generation(op) + 1 &&
         atomic_load_explicit(&m->loop_strikes, memory_order_relaxed) < OPD__LOOP_STRIKES;
}

static uint64_t sum_of(_Atomic uint64_t *shared, _Atomic uint64_t *owned) {
  return atomic_load_explicit(shared, memory_order_relaxed) +
         atomic_load_explicit(owned, memory_order_relaxed);
}

void opd__metrics_for_each(void (*fn)(const opd__op_metrics_snapshot *m, void *arg), void *arg) {
  static _Thread_local opd__op_metrics_snapshot snap;
  for (size_t i = 0; i < TABLE_SIZE; i++) {
    op_metrics *m = &table[i];
    if (!(snap.op = atomic_load_explicit(&m->op, memory_order_acquire))) continue;
    for (int s = 0; s < OPD_NUM_RUNTIME_SLOTS; s++) {
      snap.calls_by_slot[s] = sum_of(&m->shared.calls_by_slot[s], &m->owned.calls_by_slot[s]);
      snap.errors_by_slot[s] = atomic_load_explicit(&m->errors_by_slot[s], memory_order_relaxed);
    }
    for (int c = 0; c < OPD__METRICS_CODES; c++)
      snap.errors_by_code[c] = atomic_load_explicit(&m->errors_by_code[c], memory_order_relaxed);
    for (int b = 0; b < OPD__METRICS_BUCKETS; b++)
      snap.buckets[b] = sum_of(&m->shared.buckets[b], &m->owned.buckets[b]);
    snap.sum_ns = sum_of(&m->shared.sum_ns, &m->owned.sum_ns);
    fn(&snap, arg);
  }
}

uint64_t opd__metrics_overflow(void) {
  return atomic_load_explicit(&overflow, memory_order_relaxed);
}

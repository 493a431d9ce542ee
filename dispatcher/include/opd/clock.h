/* opd/clock.h: monotonic time, for the durations and deadlines of opd's libraries and the
 * daemon (the pool's spin, a graph's compile and pass times, the benefit check's timings, the
 * status endpoint's uptime, the admin's deadlines). A call's duration on the request path
 * uses the cheaper duration clock of server/src/metrics.h ([Note: The duration clock]). */
#ifndef OPD_CLOCK_H
#define OPD_CLOCK_H

#include <stdint.h>
#include <time.h>

/* CLOCK_MONOTONIC, in nanoseconds. */
static inline uint64_t opd_monotonic_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

#endif

/* bench_util.h: what the daemon's load generators (opd_bench.c, fair_bench.c) share: the
 * clock, fatal errors, latency samples and their quantiles, and option parsing. Each
 * program defines BENCH_NAME (its name in messages) before including it. */
#ifndef OPD_BENCH_UTIL_H
#define OPD_BENCH_UTIL_H

#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static inline uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static inline _Noreturn void die(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static inline _Noreturn void die(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, BENCH_NAME ": ");
  vfprintf(stderr, fmt, ap);
  fprintf(stderr, "\n");
  va_end(ap);
  exit(2);
}

/* ---- latency samples ---- */

typedef struct samples {
  uint32_t *v; /* nanoseconds, saturated */
  size_t n, cap;
} samples;

static inline void samples_add(samples *s, uint64_t ns) {
  if (s->n == s->cap) {
    s->cap = s->cap ? s->cap * 2 : 1 << 16;
    s->v = realloc(s->v, s->cap * sizeof *s->v);
    if (!s->v) die("%s", "out of memory");
  }
  s->v[s->n++] = ns > UINT32_MAX ? UINT32_MAX : (uint32_t)ns;
}

static inline int cmp_u32(const void *a, const void *b) {
  uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
  return (x > y) - (x < y);
}

static inline void samples_sort(samples *s) {
  if (s->n) qsort(s->v, s->n, sizeof *s->v, cmp_u32);
}

/* The q-quantile (nearest rank) of sorted samples, in microseconds. */
static inline double quantile_us(const samples *s, double q) {
  if (s->n == 0) return 0;
  size_t i = (size_t)(q * (double)(s->n - 1) + 0.5);
  return s->v[i] / 1000.0;
}

/* ---- options ---- */

static inline long parse_long(const char *s, const char *what, long lo, long hi) {
  char *end;
  errno = 0;
  long v = strtol(s, &end, 10);
  if (errno || *end || v < lo || v > hi) die("bad %s", what);
  return v;
}

/* The index of s among the n names; dies naming them (what: the option) if it is none. */
static inline int parse_name(const char *s, const char *what, const char *const *names, int n) {
  for (int k = 0; k < n; k++)
    if (strcmp(s, names[k]) == 0) return k;
  fprintf(stderr, BENCH_NAME ": unknown %s '%s' (", what, s);
  for (int k = 0; k < n; k++) fprintf(stderr, "%s%s", k ? ", " : "", names[k]);
  fprintf(stderr, ")\n");
  exit(2);
}

static inline double parse_seconds(const char *s, const char *what) {
  char *end;
  double v = strtod(s, &end);
  if (*end || !(v >= 0 && v <= 86400)) die("bad %s", what);
  return v;
}

#endif

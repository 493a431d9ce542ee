/* run.c: the soak's shared state: random streams ([Note: Seeds of the soak] in soak.h), the
 * counters, the clock, and the first failure, which stops every client. */
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "soak.h"

soak_stats soak_totals;

static pthread_mutex_t failure_mu = PTHREAD_MUTEX_INITIALIZER;
static char failure[2048], failure_steps[SOAK_LOG_BYTES + 1];
static atomic_bool stopped;

static uint64_t splitmix64(uint64_t *x) {
  uint64_t z = (*x += UINT64_C(0x9E3779B97F4A7C15));
  z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
  z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
  return z ^ (z >> 31);
}

void soak_rng_seed(soak_rng *r, uint64_t seed) {
  for (int i = 0; i < 4; i++) r->s[i] = splitmix64(&seed);
}

static uint64_t rotl(uint64_t x, int k) {
  return (x << k) | (x >> (64 - k));
}

uint64_t soak_rng_next(soak_rng *r) {
  uint64_t *s = r->s, out = rotl(s[1] * 5, 7) * 9, t = s[1] << 17;
  s[2] ^= s[0];
  s[3] ^= s[1];
  s[1] ^= s[2];
  s[0] ^= s[3];
  s[2] ^= t;
  s[3] = rotl(s[3], 45);
  return out;
}

int64_t soak_rng_range(soak_rng *r, int64_t lo, int64_t hi) {
  uint64_t span = (uint64_t)(hi - lo) + 1;
  return span ? lo + (int64_t)(soak_rng_next(r) % span) : (int64_t)soak_rng_next(r);
}

bool soak_rng_chance(soak_rng *r, int percent) {
  return soak_rng_range(r, 0, 99) < percent;
}

uint64_t soak_mix(uint64_t a, uint64_t b, uint64_t c) {
  uint64_t x = a;
  x = splitmix64(&x) ^ b;
  x = splitmix64(&x) ^ c;
  return splitmix64(&x);
}

double soak_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

void soak_sleep_ms(long ms) {
  struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
  while (nanosleep(&ts, &ts) != 0) {
  }
}

void soak_fail(soak_client *cl, const char *fmt, ...) {
  char msg[1536];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  pthread_mutex_lock(&failure_mu);
  if (!failure[0] && cl) {
    snprintf(failure, sizeof failure,
             "round %d, client %d, episode %llu (%s, episode seed 0x%016llx): %s", cl->round,
             cl->index, (unsigned long long)cl->episode, cl->episode_kind,
             (unsigned long long)cl->episode_seed, msg);
    memcpy(failure_steps, cl->log, cl->log_len);
    failure_steps[cl->log_len] = '\0';
  } else if (!failure[0]) {
    snprintf(failure, sizeof failure, "%s", msg);
  }
  pthread_mutex_unlock(&failure_mu);
  atomic_store(&stopped, true);
}

const char *soak_failure(void) {
  pthread_mutex_lock(&failure_mu);
  const char *f = failure[0] ? failure : NULL;
  pthread_mutex_unlock(&failure_mu);
  return f;
}

bool soak_stopped(void) {
  return atomic_load_explicit(&stopped, memory_order_relaxed);
}

bool soak_client_done(const soak_client *cl) {
  return soak_stopped() || soak_now() >= cl->deadline;
}

const char *soak_failure_steps(void) {
  return failure_steps;
}

void soak_note(soak_client *cl, const char *fmt, ...) {
  char line[512];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(line, sizeof line - 1, fmt, ap);
  va_end(ap);
  size_t len = n < 0 ? 0 : (size_t)n < sizeof line - 1 ? (size_t)n : sizeof line - 2;
  line[len++] = '\n';
  if (cl->log_len + len > sizeof cl->log) { /* drop the oldest lines */
    size_t drop = cl->log_len + len - sizeof cl->log;
    const char *nl = memchr(cl->log + drop, '\n', cl->log_len - drop);
    drop = nl ? (size_t)(nl - cl->log) + 1 : cl->log_len;
    memmove(cl->log, cl->log + drop, cl->log_len - drop);
    cl->log_len -= drop;
  }
  memcpy(cl->log + cl->log_len, line, len);
  cl->log_len += len;
}

char *soak_read_all(int fd) {
  size_t cap = 1 << 16, len = 0;
  char *buf = malloc(cap);
  ssize_t k = 0;
  while (buf && (k = read(fd, buf + len, cap - len - 1)) != 0) {
    if (k < 0 && errno == EINTR) continue;
    if (k < 0) break;
    len += (size_t)k;
    if (cap - len - 1 == 0) {
      char *bigger = realloc(buf, cap * 2);
      if (!bigger) break;
      buf = bigger;
      cap *= 2;
    }
  }
  if (buf && k != 0) { /* an error, or out of memory */
    free(buf);
    return NULL;
  }
  if (buf) buf[len] = '\0';
  return buf;
}

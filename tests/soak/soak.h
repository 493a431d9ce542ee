/* soak.h: what the parts of the soak driver (tests/soak/, README.md there) share: the
 * daemon under test and its addresses, the clients' threads with their seeded random
 * streams, the counters, and the first failure that stops the run.
 *
 * [Note: Seeds of the soak]
 * One --seed drives everything random: client i of round r seeds its stream from (seed, r,
 * i), and each episode (one connection, start to end) from a number drawn from that stream,
 * printed with any failure it finds, with the episode's last steps. The same seed replays
 * the same episodes in each client with the same shapes, values, operators and cut points
 * (an episode still running when its round ends stops early, so the same --seconds, --rounds
 * and a similar speed replay it whole); the interleaving of the clients, and so of the
 * daemon's threads, is the scheduler's and differs from run to run.
 */
#ifndef OPD_SOAK_H
#define OPD_SOAK_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* ---- random numbers: splitmix64 seeding xoshiro256** ---- */

typedef struct soak_rng {
  uint64_t s[4];
} soak_rng;

void soak_rng_seed(soak_rng *r, uint64_t seed);
uint64_t soak_rng_next(soak_rng *r);
/* Uniform in [lo, hi]. */
int64_t soak_rng_range(soak_rng *r, int64_t lo, int64_t hi);
/* True with probability percent / 100. */
bool soak_rng_chance(soak_rng *r, int percent);
/* A seed mixed from several numbers. */
uint64_t soak_mix(uint64_t a, uint64_t b, uint64_t c);

/* ---- the daemon under test ---- */

typedef struct soak_daemon {
  pid_t pid;
  char dir[32];       /* the run's temporary directory */
  char log_path[48];  /* the daemon's stderr */
  char unix_path[48]; /* its Unix socket */
  char unix_url[64];  /* unix:///... */
  char tcp_url[64];   /* tcp://127.0.0.1:PORT */
  int tcp_port;       /* the RPC port */
  int status_port;    /* the status endpoint's port */
  bool exited;        /* waitpid saw it end */
  int exit_status;    /* its wait status, once exited */
} soak_daemon;

/* Starts `opd` (the path) with its listeners on a temporary Unix socket and free TCP ports
 * and waits until it logged them: 0, or -1 with the reason printed. */
int soak_daemon_start(soak_daemon *d, const char *opd, unsigned workers);
/* True while the process runs (reaps it once it ended). */
bool soak_daemon_alive(soak_daemon *d);
/* VmRSS of the process in bytes (0 if unreadable). */
uint64_t soak_daemon_rss(const soak_daemon *d);
/* SIGTERM, then waits up to timeout_s for the exit: its wait status, or -1 on timeout (the
 * process is then SIGKILLed). */
int soak_daemon_stop(soak_daemon *d, int timeout_s);
/* Prints the last lines of the daemon's log to stderr. */
void soak_daemon_print_log(const soak_daemon *d, int lines);
/* Whether the log holds a sanitizer's report (AddressSanitizer, LeakSanitizer, UBSan). */
bool soak_daemon_log_has_sanitizer_report(const soak_daemon *d);
/* Removes the temporary directory. */
void soak_daemon_cleanup(soak_daemon *d);

/* ---- its status endpoint (docs/STATUS.md), over plain HTTP ---- */

typedef struct soak_memory {
  uint64_t in_use, cached, peak;
} soak_memory;

/* Open sessions (GET /v1/sessions "count"): >= 0, or -1 with *why set. */
long soak_status_sessions(const soak_daemon *d, char *why, size_t whylen);
/* The CPU's line of GET /v1/memory: 0, or -1 with *why set. */
int soak_status_cpu_memory(const soak_daemon *d, soak_memory *m, char *why, size_t whylen);
/* GET /v1/health answers {"status": "ok"}. */
bool soak_status_healthy(const soak_daemon *d, char *why, size_t whylen);

/* ---- clients ---- */

/* Counters of a run (updated with relaxed atomics by every client). */
typedef struct soak_stats {
  _Atomic uint64_t episodes, lib_sessions, raw_episodes, killed_children;
  _Atomic uint64_t calls, uploads, downloads, releases, pings, pipelined;
  _Atomic uint64_t expected_errors, values_checked, bytes_up, bytes_down;
  _Atomic uint64_t closed_with_work, closed_mid_upload, closed_mid_frame, closed_mid_download;
  _Atomic uint64_t never_read, back_pressure_seen;
} soak_stats;

extern soak_stats soak_totals;
#define SOAK_COUNT(field, n) \
  atomic_fetch_add_explicit(&soak_totals.field, (n), memory_order_relaxed)

#define SOAK_LOG_BYTES 6144

/* One client thread: its addresses, random stream, deadline and what it is doing (for the
 * report of a hang). */
typedef struct soak_client {
  int index, round;
  const soak_daemon *daemon;
  uint64_t episode;      /* episodes begun */
  uint64_t episode_seed; /* [Note: Seeds of the soak] */
  const char *episode_kind;
  soak_rng rng; /* the episode's stream */
  double deadline;
  _Atomic(const char *) doing;
  char log[SOAK_LOG_BYTES]; /* the episode's last steps (soak_note) */
  size_t log_len;
} soak_client;

/* The episodes (one connection each). Each returns at the end of its connection; a wrong
 * answer or an unexpected error calls soak_fail and ends it. */
void soak_lib_episode(soak_client *cl);
void soak_raw_episode(soak_client *cl);

/* Everything fd gives until its end, NUL-terminated (malloc'd), or NULL on an error (errno)
 * or out of memory. */
char *soak_read_all(int fd);
/* Seconds since an arbitrary start (CLOCK_MONOTONIC). */
double soak_now(void);
void soak_sleep_ms(long ms);
/* Records the run's first failure, naming the client and episode, and stops every client. */
void soak_fail(soak_client *cl, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The first failure's report, or NULL; and the last steps of the episode that found it
 * ("" if none). */
const char *soak_failure(void);
const char *soak_failure_steps(void);
/* True once a failure was recorded. */
bool soak_stopped(void);
/* True when the client should stop (its deadline passed, or the run stopped). */
bool soak_client_done(const soak_client *cl);
/* Notes a step of the episode: its last SOAK_LOG_BYTES bytes of notes are reported with a
 * failure it finds. */
void soak_note(soak_client *cl, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* What the client is doing now (also noted). */
static inline void soak_doing(soak_client *cl, const char *what) {
  atomic_store_explicit(&cl->doing, what, memory_order_relaxed);
  soak_note(cl, "%s", what);
}

#endif

/* fair_bench.c: opd-bench-fair, the fairness benchmark of a running daemon ([Note: Fair
 * sharing of workers] in server/src/worker.h; docs/PERFORMANCE.md, "Fair sharing"): how a
 * light session's tiny calls fare while heavy sessions keep the machine busy, and how
 * heavy sessions share it, measured side by side in one run.
 *
 *   opd-bench-fair [--url URL] [--heavy-op mm|add|softmax] [--heavy N] [--depth D]
 *                  [--fair-sessions M] [--interval-us U] [--duration S] [--warmup S]
 *
 * Sessions:
 *   light  aten::add.Tensor on two 1-element float32 tensors, one call at a time, one every
 *          U microseconds (default 1000: an interactive client, not a flood); each result
 *          is released (not timed). Latency: the call's round trip.
 *   heavy  keeps D calls in flight (default 16), each result released as it arrives:
 *          mm      aten::mm of two 1024 x 1024 float32 matrices
 *          add     aten::add.Tensor of two 2^22-element float32 tensors (16 MiB each)
 *          softmax aten::softmax.int of a 1024 x 4096 float32 tensor along its last dim
 * Phases, each with fresh sessions, a warm-up of S_w seconds (default 1) and S seconds
 * measured (default 3):
 *   alone  the light session by itself
 *   heavy  N heavy sessions (default 2) by themselves
 *   mixed  the N heavy sessions and the light one
 *   fair   M heavy sessions (default 5), for each session's share
 * Output, one line per phase, key=value (share: a session's calls per second over the fair
 * share, the total's 1/M):
 *   opd-bench-fair phase=alone op=mm light_calls=2990 light_p50_us=90.1 light_p99_us=310.0
 *   opd-bench-fair phase=heavy op=mm sessions=2 heavy_calls_per_s=30.10
 *   opd-bench-fair phase=mixed op=mm sessions=2 light_calls=2990 light_p50_us=80.2
 *     light_p99_us=700.5 heavy_calls_per_s=29.80
 *   opd-bench-fair phase=fair op=mm sessions=5 heavy_calls_per_s=30.00 min_share=0.91
 *     max_share=1.08
 * (the mixed and fair lines are one line each). The exit status is 1 when a request failed.
 * Threads: one per session, each with its own client. */
#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "opd/client.h"

#define BENCH_NAME "opd-bench-fair"
#include "bench_util.h"

enum heavy_op { OP_MM, OP_ADD, OP_SOFTMAX };
static const char *const op_names[] = {"mm", "add", "softmax"};

enum { MAX_SESSIONS = 64, MAX_DEPTH = 256, RELEASE_BATCH = 64 };

static struct {
  const char *url;
  enum heavy_op op;
  int heavy, depth, fair_sessions;
  long interval_us;
  double duration, warmup;
} opt = {
    .url = OPD_CLIENT_DEFAULT_URL,
    .op = OP_MM,
    .heavy = 2,
    .depth = 16,
    .fair_sessions = 5,
    .interval_us = 1000,
    .duration = 3,
    .warmup = 1,
};

/* Phases of a run: warming up, measuring, stopping (no new submissions). */
enum { WARMUP, MEASURE, STOP };
static atomic_int phase;
static atomic_long failures;

static void failed(const char *what, const char *msg) {
  if (atomic_fetch_add(&failures, 1) == 0) fprintf(stderr, "opd-bench-fair: %s: %s\n", what, msg);
}

static opd_client *open_client(const char *name) {
  opd_client *c;
  if (opd_client_connect(opt.url, &(opd_client_options){.client_name = name}, &c) != 0)
    die("connect to %s: %s", opt.url, opd_client_last_error());
  return c;
}

static opd_client_tensor upload(opd_client *c, const int64_t *shape, int ndim) {
  size_t n = 1;
  for (int d = 0; d < ndim; d++) n *= (size_t)shape[d];
  float *data = malloc(n * sizeof *data);
  if (!data) die("%s", "out of memory");
  uint32_t x = 12345;
  for (size_t i = 0; i < n; i++) {
    x = x * 1664525u + 1013904223u;
    data[i] = (float)(x >> 8) / 16777216.0f - 0.5f;
  }
  opd_client_tensor t;
  if (opd_client_upload(c, OPD_FLOAT32, shape, ndim, data, n * sizeof *data, NULL, &t) != 0)
    die("upload: %s", opd_client_last_error());
  free(data);
  return t;
}

/* ---- the light session ---- */

typedef struct light {
  pthread_t thread;
  samples lat; /* the measured calls' */
} light;

static void *light_main(void *arg) {
  light *l = arg;
  opd_client *c = open_client("opd-bench-fair light");
  int64_t one = 1;
  opd_client_tensor a = upload(c, &one, 1), b = upload(c, &one, 1);
  opd_client_tensor batch[RELEASE_BATCH];
  size_t nbatch = 0;
  uint64_t next = now_ns();
  while (atomic_load(&phase) != STOP) {
    next += (uint64_t)opt.interval_us * 1000;
    struct timespec ts = {(time_t)(next / 1000000000u), (long)(next % 1000000000u)};
    clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL);
    uint64_t t0 = now_ns();
    if (t0 > next + 100 * (uint64_t)opt.interval_us * 1000) next = t0; /* fell far behind */
    opd_client_tensor r;
    if (opd_add(c, a, b, NULL, &r) != 0) {
      failed("light add", opd_client_last_error());
      break;
    }
    uint64_t dt = now_ns() - t0;
    if (atomic_load(&phase) == MEASURE) samples_add(&l->lat, dt);
    batch[nbatch++] = r;
    if (nbatch == RELEASE_BATCH) { /* untimed, between two ticks */
      if (opd_client_release(c, batch, nbatch) != 0)
        failed("light release", opd_client_last_error());
      nbatch = 0;
    }
  }
  opd_client_close(c);
  return NULL;
}

/* ---- heavy sessions ---- */

typedef struct heavy {
  pthread_t thread;
  opd_client *c;
  opd_client_tensor a, b;
  long in_flight;
  long calls; /* completed while measuring */
} heavy;

static void heavy_submit(heavy *h);

static void heavy_done(opd_future *f, void *user) {
  heavy *h = user;
  h->in_flight--;
  if (opd_future_status(f) != 0) {
    failed(op_names[opt.op], opd_future_error(f));
    return;
  }
  if (atomic_load(&phase) == MEASURE) h->calls++;
  opd_client_tensor r = opd_future_tensor(f, 0);
  if (opd_client_release_async(h->c, &r, 1, NULL, NULL, NULL) != 0)
    failed("release", opd_client_last_error());
  if (atomic_load(&phase) != STOP) heavy_submit(h);
}

static void heavy_submit(heavy *h) {
  int rc = 0;
  switch (opt.op) {
  case OP_MM: rc = opd_mm_async(h->c, h->a, h->b, heavy_done, h, NULL); break;
  case OP_ADD: rc = opd_add_async(h->c, h->a, h->b, NULL, heavy_done, h, NULL); break;
  case OP_SOFTMAX: rc = opd_softmax_async(h->c, h->a, -1, NULL, heavy_done, h, NULL); break;
  }
  if (rc != 0) {
    failed("submit", opd_client_last_error());
    return;
  }
  h->in_flight++;
}

static void heavy_open(heavy *h) {
  h->c = open_client("opd-bench-fair heavy");
  static const int64_t square[] = {1024, 1024}, vec[] = {1 << 22}, rows[] = {1024, 4096};
  switch (opt.op) {
  case OP_MM:
    h->a = upload(h->c, square, 2);
    h->b = upload(h->c, square, 2);
    break;
  case OP_ADD:
    h->a = upload(h->c, vec, 1);
    h->b = upload(h->c, vec, 1);
    break;
  case OP_SOFTMAX: h->a = upload(h->c, rows, 2); break;
  }
}

static void *heavy_main(void *arg) {
  heavy *h = arg;
  for (int i = 0; i < opt.depth; i++) heavy_submit(h);
  while (h->in_flight > 0 && atomic_load(&failures) == 0)
    if (opd_client_poll(h->c, 100) < 0) {
      failed("connection", opd_client_last_error());
      break;
    }
  opd_client_close(h->c);
  return NULL;
}

/* ---- phases ---- */

static void sleep_s(double s) {
  struct timespec ts = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
  }
}

typedef struct result {
  light light;
  double heavy_per_s;          /* every heavy session's calls together */
  double min_share, max_share; /* of a session's rate over the fair share */
} result;

/* Runs nheavy heavy sessions and, with `with_light`, the light one. */
static void run_phase(int nheavy, bool with_light, result *r) {
  memset(r, 0, sizeof *r);
  heavy *hs = calloc((size_t)(nheavy ? nheavy : 1), sizeof *hs);
  if (!hs) die("%s", "out of memory");
  for (int i = 0; i < nheavy; i++) heavy_open(&hs[i]); /* operands uploaded before the clock */
  atomic_store(&phase, WARMUP);
  for (int i = 0; i < nheavy; i++)
    if (pthread_create(&hs[i].thread, NULL, heavy_main, &hs[i]) != 0)
      die("%s", "cannot start a thread");
  if (with_light && pthread_create(&r->light.thread, NULL, light_main, &r->light) != 0)
    die("%s", "cannot start a thread");
  sleep_s(opt.warmup);
  uint64_t t1 = now_ns();
  atomic_store(&phase, MEASURE);
  sleep_s(opt.duration);
  atomic_store(&phase, STOP);
  double secs = (double)(now_ns() - t1) * 1e-9;
  for (int i = 0; i < nheavy; i++) pthread_join(hs[i].thread, NULL);
  if (with_light) pthread_join(r->light.thread, NULL);
  long total = 0;
  for (int i = 0; i < nheavy; i++) total += hs[i].calls;
  r->heavy_per_s = (double)total / secs;
  r->min_share = r->max_share = nheavy ? 1 : 0;
  for (int i = 0; i < nheavy && total; i++) {
    double share = (double)hs[i].calls * nheavy / (double)total;
    if (share < r->min_share) r->min_share = share;
    if (share > r->max_share) r->max_share = share;
  }
  samples_sort(&r->light.lat);
  free(hs);
}

static void print_light(const result *r) {
  printf(" light_calls=%zu light_p50_us=%.1f light_p99_us=%.1f", r->light.lat.n,
         quantile_us(&r->light.lat, 0.50), quantile_us(&r->light.lat, 0.99));
}

/* ---- main ---- */

static void usage(FILE *f) {
  fprintf(f, "usage: opd-bench-fair [--url URL] [--heavy-op mm|add|softmax] [--heavy N] "
             "[--depth D]\n"
             "                      [--fair-sessions M] [--interval-us U] [--duration S] "
             "[--warmup S]\n");
}

int main(int argc, char **argv) {
  static const struct option longopts[] = {
      {"url", required_argument, NULL, 'u'},
      {"heavy-op", required_argument, NULL, 'o'},
      {"heavy", required_argument, NULL, 'n'},
      {"depth", required_argument, NULL, 'D'},
      {"fair-sessions", required_argument, NULL, 'm'},
      {"interval-us", required_argument, NULL, 'i'},
      {"duration", required_argument, NULL, 'd'},
      {"warmup", required_argument, NULL, 'w'},
      {"help", no_argument, NULL, 'h'},
      {0},
  };
  int ch;
  while ((ch = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
    switch (ch) {
    case 'u': opt.url = optarg; break;
    case 'o': opt.op = (enum heavy_op)parse_name(optarg, "heavy op", op_names, 3); break;
    case 'n': opt.heavy = (int)parse_long(optarg, "--heavy", 1, MAX_SESSIONS); break;
    case 'D': opt.depth = (int)parse_long(optarg, "--depth", 1, MAX_DEPTH); break;
    case 'm':
      opt.fair_sessions = (int)parse_long(optarg, "--fair-sessions", 1, MAX_SESSIONS);
      break;
    case 'i': opt.interval_us = parse_long(optarg, "--interval-us", 1, 1000000); break;
    case 'd': opt.duration = parse_seconds(optarg, "--duration"); break;
    case 'w': opt.warmup = parse_seconds(optarg, "--warmup"); break;
    case 'h': usage(stdout); return 0;
    default: usage(stderr); return 2;
    }
  }
  if (optind < argc) {
    usage(stderr);
    return 2;
  }
  result alone, heavy_only, mixed, fair;
  run_phase(0, true, &alone);
  printf("opd-bench-fair phase=alone op=%s", op_names[opt.op]);
  print_light(&alone);
  printf("\n");
  fflush(stdout);
  run_phase(opt.heavy, false, &heavy_only);
  printf("opd-bench-fair phase=heavy op=%s sessions=%d heavy_calls_per_s=%.2f\n", op_names[opt.op],
         opt.heavy, heavy_only.heavy_per_s);
  fflush(stdout);
  run_phase(opt.heavy, true, &mixed);
  printf("opd-bench-fair phase=mixed op=%s sessions=%d", op_names[opt.op], opt.heavy);
  print_light(&mixed);
  printf(" heavy_calls_per_s=%.2f\n", mixed.heavy_per_s);
  fflush(stdout);
  run_phase(opt.fair_sessions, false, &fair);
  printf("opd-bench-fair phase=fair op=%s sessions=%d heavy_calls_per_s=%.2f min_share=%.2f "
         "max_share=%.2f\n",
         op_names[opt.op], opt.fair_sessions, fair.heavy_per_s, fair.min_share, fair.max_share);
  free(alone.light.lat.v);
  free(mixed.light.lat.v);
  return atomic_load(&failures) ? 1 : 0;
}

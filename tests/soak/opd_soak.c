/* opd_soak.c: the soak test of the daemon (tests/soak/README.md).
 *
 *   opd_soak --opd PATH [--seconds N] [--clients N] [--rounds N] [--workers N] [--seed S]
 *            [--rss-slack-mib M] [--keep-log]
 *
 * Starts the `opd` at PATH as a process of its own (daemon.c), then runs --rounds rounds of
 * --seconds / --rounds seconds each in which --clients threads open connection after
 * connection, each an episode: a library session (lib_client.c) or an abrupt raw client
 * (raw_client.c). After every round, with every client gone, it requires that the daemon
 * has no session left and that its CPU bytes in use are exactly what they were before the
 * load, and it reads the daemon's resident memory. At the end it requires that the resident
 * memory did not grow past the first round's by more than the slack ([Note: The soak's
 * memory bound]), that a fresh client is served (ping, upload, call, download of the right
 * values), and that SIGTERM makes the daemon exit with status 0, its log free of sanitizer
 * reports: under ASan (CI's ASAN_OPTIONS=detect_leaks=1 reaches the daemon) LeakSanitizer
 * then checks that nothing leaked. Exit status 0 when all of that holds, 1 with the first
 * failure (and the daemon's log) otherwise, 2 for bad options.
 *
 * [Note: The soak's memory bound]
 * Resident memory is not a leak detector by itself: allocators keep what they freed. The
 * daemon's CPU allocator caches freed tensor blocks of 64 KiB and more, at most 1 GiB
 * (dispatcher/src/cpu_allocator.c), and reports them as `cached` in /v1/memory, so the soak
 * compares VmRSS minus that cache. What remains is malloc's (or ASan's) heap: arenas per
 * thread, free lists, and under ASan a quarantine of freed blocks that fills during the first
 * round and then stays full: 256 MiB by default, which a first round did not always fill on a
 * fast machine (the growth after it read 22 to 67 MiB in seven runs), so ctest runs the soak
 * with 64 MiB (tests/CMakeLists.txt; 9 to 41 MiB). So the first round warms everything up,
 * and the bound is on growth after it: VmRSS - cached after the last round may exceed its
 * value after the first by at most --rss-slack-mib (default 64 MiB). A cache stops growing
 * once warm; a leak grows with the work done, so a longer run (more rounds) makes it show
 * above any fixed slack, and LeakSanitizer reports whatever is unreachable at exit. The
 * rounds' figures are printed so a run by hand shows the trend.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "opd/client.h"
#include "soak.h"

typedef struct soak_options {
  const char *opd;
  double seconds;
  unsigned clients, rounds, workers;
  uint64_t seed;
  uint64_t rss_slack;
  bool keep_log;
} soak_options;

#define MIB          (1024.0 * 1024.0)
#define HANG_GRACE_S 120 /* past a round's end, a client still busy is hung */

static atomic_uint running;

typedef struct client_thread {
  pthread_t thread;
  soak_client cl;
  uint64_t stream_seed;
} client_thread;

static void *client_main(void *arg) {
  client_thread *ct = arg;
  soak_client *cl = &ct->cl;
  soak_rng stream;
  soak_rng_seed(&stream, ct->stream_seed);
  while (!soak_client_done(cl)) { /* [Note: Seeds of the soak] */
    cl->episode++;
    cl->episode_seed = soak_rng_next(&stream);
    cl->log_len = 0;
    soak_rng_seed(&cl->rng, cl->episode_seed);
    if (soak_rng_chance(&cl->rng, 65))
      soak_lib_episode(cl);
    else
      soak_raw_episode(cl);
    SOAK_COUNT(episodes, 1);
  }
  soak_doing(cl, "finished");
  atomic_fetch_sub(&running, 1);
  return NULL;
}

/* Runs one round; false when it could not (a failure is then recorded). */
static bool run_round(const soak_options *o, soak_daemon *d, unsigned round) {
  client_thread *ct = calloc(o->clients, sizeof *ct);
  if (!ct) {
    soak_fail(NULL, "out of memory");
    return false;
  }
  double deadline = soak_now() + o->seconds / o->rounds;
  unsigned started = 0;
  atomic_store(&running, 0);
  for (unsigned i = 0; i < o->clients; i++) {
    ct[i].cl = (soak_client){.index = (int)i,
                             .round = (int)round,
                             .daemon = d,
                             .episode_kind = "none",
                             .deadline = deadline};
    atomic_init(&ct[i].cl.doing, "starting");
    ct[i].stream_seed = soak_mix(o->seed, round, i);
    atomic_fetch_add(&running, 1);
    if (pthread_create(&ct[i].thread, NULL, client_main, &ct[i]) != 0) {
      atomic_fetch_sub(&running, 1);
      soak_fail(NULL, "pthread_create: %s", strerror(errno));
      break;
    }
    started++;
  }
  bool hung = false, died = false;
  while (atomic_load(&running) > 0) {
    soak_sleep_ms(100);
    if (!died && !soak_daemon_alive(d)) {
      died = true;
      int st = d->exit_status;
      soak_fail(NULL, "the daemon died during round %u: %s %d", round,
                WIFSIGNALED(st) ? "signal" : "exit status",
                WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st));
    }
    if (!hung && soak_now() > deadline + HANG_GRACE_S) {
      hung = true;
      char what[1024];
      size_t at = 0;
      for (unsigned i = 0; i < started && at < sizeof what - 100; i++) {
        const char *doing = atomic_load(&ct[i].cl.doing);
        if (strcmp(doing, "finished") != 0)
          at += (size_t)snprintf(what + at, sizeof what - at,
                                 " [client %u, episode %" PRIu64 " seed 0x%016" PRIx64 " (%s): %s]",
                                 i, ct[i].cl.episode, ct[i].cl.episode_seed, ct[i].cl.episode_kind,
                                 doing);
      }
      soak_fail(NULL, "hang: clients still busy %d s after round %u ended:%s", HANG_GRACE_S, round,
                what);
      soak_daemon_print_log(d, 40);
      kill(d->pid, SIGKILL); /* their connections end, and so their waits */
    }
    if (hung && soak_now() > deadline + 2 * HANG_GRACE_S) {
      fprintf(stderr, "opd_soak: FAIL: %s\n(clients did not return after the daemon was killed)\n",
              soak_failure());
      _exit(1);
    }
  }
  for (unsigned i = 0; i < started; i++) pthread_join(ct[i].thread, NULL);
  free(ct);
  return !soak_stopped();
}

/* Waits until the daemon has no session and its CPU bytes in use are `baseline` (sessions
 * end, and release their tensors, as the daemon notices their connections closed). */
static bool quiesce(soak_daemon *d, uint64_t baseline, soak_memory *m, const char *when) {
  char why[256] = "";
  long sessions = -1;
  double until = soak_now() + 60;
  while ((sessions = soak_status_sessions(d, why, sizeof why)) != 0 && soak_now() < until)
    soak_sleep_ms(50);
  if (sessions != 0) {
    if (sessions < 0)
      soak_fail(NULL, "%s: %s", when, why);
    else
      soak_fail(NULL, "%s: %ld sessions still open 60 s after every client closed", when, sessions);
    return false;
  }
  until = soak_now() + 10;
  int rc;
  while ((rc = soak_status_cpu_memory(d, m, why, sizeof why)) == 0 && m->in_use != baseline &&
         soak_now() < until)
    soak_sleep_ms(50);
  if (rc < 0) {
    soak_fail(NULL, "%s: %s", when, why);
    return false;
  }
  if (m->in_use != baseline) {
    soak_fail(NULL,
              "%s: the daemon's CPU bytes in use are %" PRIu64 ", not the %" PRIu64
              " before the load: %" PRId64 " bytes of tensors outlived their sessions",
              when, m->in_use, baseline, (int64_t)(m->in_use - baseline));
    return false;
  }
  return true;
}

/* VmRSS less the allocator's cache, in MiB: what malloc's heap holds. Signed: cached blocks
 * need not be resident (pages never touched, or reclaimed), so the cache can exceed RSS. */
static double heap_mib(uint64_t rss, const soak_memory *m) {
  return ((double)rss - (double)m->cached) / MIB;
}

static void print_round(unsigned round, double seconds, uint64_t rss, const soak_memory *m) {
  soak_stats *t = &soak_totals;
  printf("round %u (%.1f s), totals so far: %" PRIu64 " episodes (%" PRIu64
         " library sessions, %" PRIu64 " raw, %" PRIu64 " clients SIGKILLed), %" PRIu64
         " calls, %" PRIu64 " requests pipelined, %" PRIu64 " uploads, %" PRIu64
         " downloads, %" PRIu64 " expected errors, %" PRIu64
         " values checked; daemon RSS %.1f MiB, CPU cache %.1f MiB, RSS - cache %.1f MiB\n",
         round, seconds, t->episodes, t->lib_sessions, t->raw_episodes, t->killed_children,
         t->calls, t->pipelined, t->uploads, t->downloads, t->expected_errors, t->values_checked,
         (double)rss / MIB, (double)m->cached / MIB, heap_mib(rss, m));
  printf("  cut: %" PRIu64 " mid-frame, %" PRIu64 " mid-upload, %" PRIu64 " mid-download, %" PRIu64
         " with work queued; %" PRIu64 " never-reading clients (%" PRIu64
         " saw the daemon stop reading); %.1f MiB up, %.1f MiB down\n",
         t->closed_mid_frame, t->closed_mid_upload, t->closed_mid_download, t->closed_with_work,
         t->never_read, t->back_pressure_seen, (double)t->bytes_up / MIB,
         (double)t->bytes_down / MIB);
  fflush(stdout);
}

/* A fresh client after the load: ping, two uploads, add and mm, downloads of the right
 * values, release. */
static bool fresh_client(const soak_daemon *d) {
  opd_client *c = NULL;
  int rc = opd_client_connect(d->tcp_url, NULL, &c);
  if (rc < 0) {
    soak_fail(NULL, "a fresh client after the load: connect: %s", opd_client_last_error());
    return false;
  }
  int64_t shape[] = {2, 2};
  float xa[] = {1, 2, 3, 4}, xb[] = {10, 20, 30, 40}, sum[4], prod[4];
  const float want_sum[] = {11, 22, 33, 44}, want_prod[] = {70, 100, 150, 220};
  opd_client_tensor a = 0, b = 0, s = 0, p = 0;
  const char *step = "ping";
  if ((rc = opd_client_ping(c, "after the soak", 14)) == 0 && (step = "upload") &&
      (rc = opd_client_upload(c, OPD_FLOAT32, shape, 2, xa, sizeof xa, NULL, &a)) == 0 &&
      (rc = opd_client_upload(c, OPD_FLOAT32, shape, 2, xb, sizeof xb, NULL, &b)) == 0 &&
      (step = "aten::add.Tensor") && (rc = opd_add(c, a, b, NULL, &s)) == 0 &&
      (step = "aten::mm") && (rc = opd_mm(c, a, b, &p)) == 0 && (step = "download") &&
      (rc = opd_client_download(c, s, sum, sizeof sum, NULL)) == 0 &&
      (rc = opd_client_download(c, p, prod, sizeof prod, NULL)) == 0 && (step = "release"))
    rc = opd_client_release(c, (opd_client_tensor[]){a, b, s, p}, 4);
  bool ok = rc == 0;
  if (!ok)
    soak_fail(NULL, "a fresh client after the load: %s: %s", step, opd_client_last_error());
  else if (memcmp(sum, want_sum, sizeof sum) != 0 || memcmp(prod, want_prod, sizeof prod) != 0) {
    soak_fail(NULL,
              "a fresh client after the load: wrong values: add gave %g %g %g %g, mm %g %g %g %g",
              sum[0], sum[1], sum[2], sum[3], prod[0], prod[1], prod[2], prod[3]);
    ok = false;
  }
  opd_client_close(c);
  return ok;
}

static void usage(FILE *f) {
  fprintf(f, "usage: opd_soak --opd PATH [--seconds N] [--clients N] [--rounds N] [--workers N]\n"
             "                [--seed S] [--rss-slack-mib M] [--keep-log]\n"
             "  --opd PATH          the daemon to soak (build-*/server/opd)\n"
             "  --seconds N         the load's duration, all rounds together (default 20)\n"
             "  --clients N         client threads (default 16)\n"
             "  --rounds N          rounds, at least 2; the first warms up (default 3)\n"
             "  --workers N         the daemon's CPU workers (default 4)\n"
             "  --seed S            replays a run's episodes (default: from the clock)\n"
             "  --rss-slack-mib M   allowed growth of RSS - cache after round 1 (default 64)\n"
             "  --keep-log          keep the daemon's log and directory after a pass\n");
}

static bool parse_options(int argc, char **argv, soak_options *o) {
  *o = (soak_options){
      .seconds = 20, .clients = 16, .rounds = 3, .workers = 4, .rss_slack = (uint64_t)64 << 20};
  o->seed = soak_mix((uint64_t)time(NULL), (uint64_t)getpid(), (uint64_t)clock());
  static const struct option longopts[] = {
      {"opd", required_argument, NULL, 'o'},
      {"seconds", required_argument, NULL, 's'},
      {"clients", required_argument, NULL, 'c'},
      {"rounds", required_argument, NULL, 'r'},
      {"workers", required_argument, NULL, 'w'},
      {"seed", required_argument, NULL, 'S'},
      {"rss-slack-mib", required_argument, NULL, 'm'},
      {"keep-log", no_argument, NULL, 'k'},
      {"help", no_argument, NULL, 'h'},
      {0},
  };
  int ch;
  while ((ch = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
    char *end = NULL;
    errno = 0;
    switch (ch) {
    case 'o': o->opd = optarg; continue;
    case 'k': o->keep_log = true; continue;
    case 'h': usage(stdout); exit(0);
    case 's': o->seconds = strtod(optarg, &end); break;
    case 'c': o->clients = (unsigned)strtoul(optarg, &end, 10); break;
    case 'r': o->rounds = (unsigned)strtoul(optarg, &end, 10); break;
    case 'w': o->workers = (unsigned)strtoul(optarg, &end, 10); break;
    case 'S': o->seed = strtoull(optarg, &end, 0); break;
    case 'm': o->rss_slack = strtoull(optarg, &end, 10) << 20; break;
    default: usage(stderr); return false;
    }
    if (errno || !end || *end || end == optarg) {
      fprintf(stderr, "opd_soak: bad value '%s'\n", optarg);
      return false;
    }
  }
  if (!o->opd || optind < argc || o->seconds <= 0 || o->clients < 1 || o->clients > 1024 ||
      o->rounds < 2 || o->workers < 1) {
    usage(stderr);
    return false;
  }
  return true;
}

int main(int argc, char **argv) {
  soak_options o;
  if (!parse_options(argc, argv, &o)) return 2;
  signal(SIGPIPE, SIG_IGN);
  printf("opd_soak: seed 0x%016" PRIx64 " (--seed 0x%016" PRIx64
         " replays the episodes), %u clients, "
         "%u rounds of %.1f s, daemon %s with %u workers\n",
         o.seed, o.seed, o.clients, o.rounds, o.seconds / o.rounds, o.opd, o.workers);
  fflush(stdout);
  soak_daemon d;
  if (soak_daemon_start(&d, o.opd, o.workers) < 0) {
    soak_daemon_stop(&d, 10);
    soak_daemon_cleanup(&d);
    return 1;
  }
  char why[256];
  soak_memory base = {0}, m = {0}, warm = {0};
  uint64_t warm_rss = 0, rss = 0;
  if (soak_status_cpu_memory(&d, &base, why, sizeof why) < 0)
    soak_fail(NULL, "before the load: %s", why);
  for (unsigned round = 1; round <= o.rounds && !soak_stopped(); round++) {
    double start = soak_now();
    if (!run_round(&o, &d, round)) break;
    char when[64];
    snprintf(when, sizeof when, "after round %u", round);
    if (!quiesce(&d, base.in_use, &m, when)) break;
    rss = soak_daemon_rss(&d);
    print_round(round, soak_now() - start, rss, &m);
    if (round == 1) warm_rss = rss, warm = m;
  }
  if (!soak_stopped() && heap_mib(rss, &m) > heap_mib(warm_rss, &warm) + (double)o.rss_slack / MIB)
    soak_fail(NULL,
              "the daemon's RSS - cache grew from %.1f MiB after round 1 to %.1f MiB after "
              "round %u, more than the %.0f MiB slack ([Note: The soak's memory bound])",
              heap_mib(warm_rss, &warm), heap_mib(rss, &m), o.rounds, (double)o.rss_slack / MIB);
  if (!soak_stopped() && !soak_status_healthy(&d, why, sizeof why))
    soak_fail(NULL, "after the load: %s", why);
  if (!soak_stopped() && fresh_client(&d)) quiesce(&d, base.in_use, &m, "after the fresh client");
  int status = soak_daemon_stop(&d, 120);
  if (status == -1)
    soak_fail(NULL, "the daemon did not exit within 120 s of SIGTERM");
  else if (!soak_stopped() && (!WIFEXITED(status) || WEXITSTATUS(status) != 0))
    soak_fail(NULL,
              "the daemon's exit after SIGTERM: %s %d (under ASan, LeakSanitizer's report "
              "is in its log)",
              WIFSIGNALED(status) ? "signal" : "exit status",
              WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status));
  if (!soak_stopped() && soak_daemon_log_has_sanitizer_report(&d))
    soak_fail(NULL, "the daemon's log holds a sanitizer report");
  const char *failure = soak_failure();
  if (failure) {
    fprintf(stderr, "opd_soak: FAIL (seed 0x%016" PRIx64 "): %s\n", o.seed, failure);
    if (status == -1)
      fprintf(stderr, "opd_soak: the daemon was killed: it did not exit on SIGTERM\n");
    else if (WIFSIGNALED(status) || WEXITSTATUS(status) != 0)
      fprintf(stderr, "opd_soak: the daemon ended with %s %d\n",
              WIFSIGNALED(status) ? "signal" : "exit status",
              WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status));
    if (soak_failure_steps()[0])
      fprintf(stderr, "--- the episode's last steps ---\n%s--- end of steps ---\n",
              soak_failure_steps());
    soak_daemon_print_log(&d, 60);
    fprintf(stderr, "opd_soak: the daemon's log is kept in %s\n", d.log_path);
    return 1;
  }
  printf("opd_soak: PASS: no session left, CPU bytes in use back to %" PRIu64
         ", RSS - cache %.1f MiB after round 1 and %.1f MiB at the end (slack %.0f MiB), a fresh "
         "client served, exit status 0 after SIGTERM\n",
         base.in_use, heap_mib(warm_rss, &warm), heap_mib(rss, &m), (double)o.rss_slack / MIB);
  if (o.keep_log)
    printf("opd_soak: the daemon's log is in %s\n", d.log_path);
  else
    soak_daemon_cleanup(&d);
  return 0;
}

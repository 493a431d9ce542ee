/* daemon.c: the daemon under test as a process of its own: started from the build's `opd`
 * on a temporary Unix socket and free TCP ports (read back from its log), its resident
 * memory read from /proc, its log searched for sanitizer reports, and its exit on SIGTERM. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "soak.h"

/* What the daemon is started with beyond its addresses: small enough that the soak's
 * deliberate excesses are answered cheaply (the over-budget call asks for 512 MiB; the
 * client that never reads passes max_in_flight), large enough for its ordinary work. */
#define SOAK_MAX_BYTES_HELD "268435456"
#define SOAK_MAX_IN_FLIGHT  "256"

/* The whole log (NUL-terminated, malloc'd), or NULL. */
static char *read_log(const soak_daemon *d) {
  int fd = open(d->log_path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return NULL;
  char *log = soak_read_all(fd);
  close(fd);
  return log;
}

/* The port of the first "KEY://127.0.0.1:PORT" after `marker` in the log, or 0. */
static int port_after(const char *log, const char *marker) {
  const char *p = strstr(log, marker);
  if (!p) return 0;
  p = strstr(p, "127.0.0.1:");
  return p ? atoi(p + strlen("127.0.0.1:")) : 0;
}

int soak_daemon_start(soak_daemon *d, const char *opd, unsigned workers) {
  *d = (soak_daemon){.pid = -1};
  snprintf(d->dir, sizeof d->dir, "/tmp/opd-soak.XXXXXX");
  if (!mkdtemp(d->dir)) {
    fprintf(stderr, "soak: mkdtemp: %s\n", strerror(errno));
    return -1;
  }
  snprintf(d->log_path, sizeof d->log_path, "%s/opd.log", d->dir);
  snprintf(d->unix_path, sizeof d->unix_path, "%s/opd.sock", d->dir);
  snprintf(d->unix_url, sizeof d->unix_url, "unix://%s", d->unix_path);
  char workers_arg[16];
  snprintf(workers_arg, sizeof workers_arg, "%u", workers);
  char *argv[] = {(char *)opd,
                  "--listen",
                  d->unix_url,
                  "--listen",
                  "tcp://127.0.0.1:0",
                  "--status",
                  "http://127.0.0.1:0",
                  "--admin",
                  "",
                  "--workers",
                  workers_arg,
                  "--max-bytes-held",
                  SOAK_MAX_BYTES_HELD,
                  "--max-in-flight",
                  SOAK_MAX_IN_FLIGHT,
                  "--log-level",
                  "info",
                  NULL};
  int log_fd = open(d->log_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (log_fd < 0) {
    fprintf(stderr, "soak: %s: %s\n", d->log_path, strerror(errno));
    return -1;
  }
  pid_t pid = fork();
  if (pid < 0) {
    fprintf(stderr, "soak: fork: %s\n", strerror(errno));
    close(log_fd);
    return -1;
  }
  if (pid == 0) {
    int null_fd = open("/dev/null", O_RDONLY);
    if (null_fd >= 0) dup2(null_fd, 0);
    dup2(log_fd, 1);
    dup2(log_fd, 2);
    execv(opd, argv);
    dprintf(2, "soak: exec %s: %s\n", opd, strerror(errno));
    _exit(127);
  }
  close(log_fd);
  d->pid = pid;
  for (int i = 0; i < 1200; i++) { /* 60 s: a sanitized build starts slowly on a busy machine */
    char *log = read_log(d);
    bool ready = log && strstr(log, " ready");
    if (ready) {
      d->tcp_port = port_after(log, "listening on tcp://");
      d->status_port = port_after(log, "status endpoint on http://");
    }
    free(log);
    if (ready) break;
    if (!soak_daemon_alive(d)) break;
    soak_sleep_ms(50);
  }
  if (!d->tcp_port || !d->status_port) {
    fprintf(stderr, "soak: the daemon did not start (its log follows)\n");
    soak_daemon_print_log(d, 40);
    return -1;
  }
  snprintf(d->tcp_url, sizeof d->tcp_url, "tcp://127.0.0.1:%d", d->tcp_port);
  return 0;
}

bool soak_daemon_alive(soak_daemon *d) {
  if (d->exited || d->pid <= 0) return false;
  int status;
  pid_t r = waitpid(d->pid, &status, WNOHANG);
  if (r == d->pid) {
    d->exited = true;
    d->exit_status = status;
    return false;
  }
  return true;
}

uint64_t soak_daemon_rss(const soak_daemon *d) {
  char path[64], line[256];
  snprintf(path, sizeof path, "/proc/%d/status", (int)d->pid);
  FILE *f = fopen(path, "r");
  if (!f) return 0;
  uint64_t kib = 0;
  while (fgets(line, sizeof line, f))
    if (strncmp(line, "VmRSS:", 6) == 0) kib = strtoull(line + 6, NULL, 10);
  fclose(f);
  return kib * 1024;
}

int soak_daemon_stop(soak_daemon *d, int timeout_s) {
  if (!soak_daemon_alive(d)) return d->exited ? d->exit_status : -1;
  kill(d->pid, SIGTERM);
  for (int i = 0; i < timeout_s * 20; i++) {
    if (!soak_daemon_alive(d)) return d->exit_status;
    soak_sleep_ms(50);
  }
  kill(d->pid, SIGKILL);
  waitpid(d->pid, &d->exit_status, 0);
  d->exited = true;
  return -1;
}

void soak_daemon_print_log(const soak_daemon *d, int lines) {
  char *log = read_log(d);
  if (!log) return;
  const char *start = log + strlen(log);
  for (int n = 0; start > log && n <= lines; start--)
    if (start[-1] == '\n') n++;
  if (*start == '\n') start++;
  fprintf(stderr, "--- the daemon's log (%s), its last %d lines ---\n%s--- end of log ---\n",
          d->log_path, lines, start);
  free(log);
}

bool soak_daemon_log_has_sanitizer_report(const soak_daemon *d) {
  char *log = read_log(d);
  bool found =
      log && (strstr(log, "ERROR: AddressSanitizer") || strstr(log, "ERROR: LeakSanitizer") ||
              strstr(log, "WARNING: ThreadSanitizer") || strstr(log, "runtime error:"));
  free(log);
  return found;
}

void soak_daemon_cleanup(soak_daemon *d) {
  if (!d->dir[0]) return;
  unlink(d->log_path);
  unlink(d->unix_path);
  rmdir(d->dir);
}

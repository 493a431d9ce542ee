/* c_compiler.c: the C compiler service of c_compiler.h: content addressing, the private cache
 * directory and its files, the compiler's subprocess, the process's registry of loaded
 * modules, and the thread that compiles queued sources.
 *
 * [Note: The C compiler service]
 * The second CPU tier of fused pointwise groups runs C that the daemon generates, compiled by
 * the system's C compiler into shared objects and loaded with dlopen. This file owns the way
 * from a source text to a function pointer:
 *
 * - Content addressing. A module's name is the hex of FNV-1a-128 (then mixed) over the
 *   compiler's identity (its version and target, the flags, and the CPU's cpuid: -march=native
 *   code is only valid on such a CPU), the entry's name and the source. The directory keeps
 *   `<name>.c` (the source), `<name>.so` and `<name>.log` (the compiler's output). A hash is no
 *   proof: a module on disk is used only when `<name>.c` holds exactly the source's bytes
 *   (read at most one byte past them), and a loaded module only when its entry and source are
 *   equal; a collision is an error, never the other source's code.
 * - The directory is private: a directory of the effective user (not a symlink) with no
 *   group or other permission bit, opened once. Every file is named through that descriptor
 *   (openat, renameat; the compiler runs in it after fchdir; dlopen goes through
 *   /proc/self/fd/N), so the directory checked is the one used even if its path is swapped
 *   later. Files are created O_EXCL|O_NOFOLLOW, mode 0600, under names unique to the build
 *   (pid and a serial), and published with rename, which is atomic: neither a crash nor a
 *   concurrent build of the same name leaves half a source or object under a final name.
 * - The compiler is a subprocess, fork and execvpe without a shell: stdin /dev/null, stdout
 *   and stderr to the log, every other descriptor closed (the daemon's sockets), its own
 *   process group, no signal blocked, an environment of PATH (TMPDIR when set) and LC_ALL=C
 *   (plain ASCII diagnostics), and limits on its memory, CPU time, file size and core dumps
 *   (where a seccomp filter denies setrlimit, the daemon's own limits and the timeout).
 *   An exec failure comes back as errno over a close-on-exec pipe. The parent polls waitpid
 *   every 2 ms up to timeout_ms, then kills the process group (the driver's cc1 and as too).
 *   A failure's reason is the log from its first line that mentions "error", about 150 bytes.
 * - Loaded modules are registered process-wide by name and reference counted under one mutex:
 *   they outlive the service that built them. dlopen and dlclose run under it, so the
 *   registry and the dynamic loader agree on what is loaded. The entry must be defined in
 *   the module itself: dlsym also searches the module's dependencies (libc), so the object
 *   defining the symbol is checked.
 * - The compiler runs at nice COMPILER_NICE (or the daemon's, if that is higher), below the
 *   daemon's workers: a compile uses a CPU the workers leave idle.
 * - The queue holds at most queue_max compiles, and at most owner_queue_max of one owner
 *   (opd_mem_owner_current: a daemon's session), so that one session's hundreds of programs
 *   never make another's wait behind them; a refused program stays interpreted and is
 *   submitted again by a later run.
 * - The service's thread takes queued compiles in order, one at a time, and runs their
 *   callbacks without the service's lock; opd__cc_stop lets the running one finish and then
 *   cancels the queued ones on that thread. opd__cc_build runs in any thread, several at
 *   once.
 */
#define _GNU_SOURCE /* closefrom, dladdr1, dlinfo, dl_iterate_phdr, execvpe, pipe2 */
#include "plan/c_compiler.h"

#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <link.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

#include "opd/allocator.h"
#include "opd/error.h"
#include "opd/log.h"
#include "opd/memory.h"
#include "ir/sbuf.h"

/* The compiler's flags, in its argv and in the identity. */
#define CC_FLAGS \
  "-std=c17", "-O3", "-march=native", "-ffp-contract=off", "-fno-math-errno", "-fPIC", "-shared"

#define COMPILER_NICE    10  /* the compiler's nice value, at least */
#define NAME_SIZE        33  /* 32 hex digits of the content address */
#define FILE_SIZE        96  /* a file name in the directory: the name and a suffix */
#define WHY_SIZE         512 /* a failure's reason */
#define WHY_EXCERPT      150 /* bytes of the compiler's output in a reason */
#define PROBE_SIZE       128 /* bytes of a probe's output kept */
#define POLL_NS          (2 * 1000 * 1000)
#define LIMIT_AS_BYTES   ((rlim_t)2 << 30)
#define LIMIT_FILE_BYTES ((rlim_t)64 << 20)

typedef struct job {
  struct job *next;
  opd__cc_done_fn done;
  void *arg;
  uint64_t owner;             /* who asked for it: opd_mem_owner_current() (a daemon's session) */
  const char *entry, *source; /* in this allocation, after the struct */
} job;

struct opd__cc {
  char *cc;       /* the compiler as execvpe takes it: a name, or an absolute path */
  char *dir;      /* the directory as given, for messages */
  int dirfd;      /* the directory checked at start: every file is named through it */
  char *identity; /* hashed into every name */
  char *env_path, *env_tmpdir;
  char *env[4]; /* the compiler's environment: PATH and TMPDIR when set, LC_ALL=C */
  uint32_t timeout_ms, queue_max, owner_queue_max;
  uint64_t max_bytes; /* of the directory's modules (0: no bound) */
  pthread_t thread;
  pthread_mutex_t lock; /* the queue, busy, stopping and counts */
  pthread_cond_t work;  /* a compile was queued, or stopping */
  pthread_cond_t idle;  /* nothing queued and nothing running */
  job *head, *tail;
  bool busy, stopping;
  opd_graph_c_tier_stats counts; /* the compiler's counts; counts.queued: the queue's length */
};

struct opd__cc_module {
  opd__cc_module *next; /* in the registry */
  uint64_t refs;        /* under loaded.lock */
  uint64_t bytes;       /* opd__cc_module_bytes */
  void *handle, *fn;
  char name[NAME_SIZE];
  const char *entry, *source; /* in this allocation, after the struct */
  size_t source_len;
};

/* The process's loaded modules. */
static struct {
  pthread_mutex_t lock;
  opd__cc_module *head;
} loaded = {PTHREAD_MUTEX_INITIALIZER, NULL};

/* Makes temp file names unique within the process (the pid makes them unique across). */
static atomic_uint_fast64_t temp_serial;

/* Records the formatted reason as the thread's error and in why (when why_size > 0). */
__attribute__((format(printf, 4, 5))) static int fail(int err, char *why, size_t why_size,
                                                      const char *fmt, ...) {
  char msg[WHY_SIZE];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  if (why_size > 0) snprintf(why, why_size, "%s", msg);
  return opd_error(err, "%s", msg);
}

/* ---- content addressing ---- */

typedef unsigned __int128 hash128;

static hash128 fnv1a_128(hash128 h, const char *bytes, size_t n) {
  const hash128 prime = ((hash128)1 << 88) | 0x13b;
  for (size_t i = 0; i < n; i++) h = (h ^ (unsigned char)bytes[i]) * prime;
  return h;
}

/* MurmurHash3's 64-bit finalizer: a bijection in which every input bit flips about half of
 * the output bits. */
static uint64_t avalanche64(uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdu;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53u;
  return x ^ (x >> 33);
}

/* The identity and the entry are hashed with their NULs, so that no two splits of the same
 * bytes hash alike. FNV-1a's last bytes reach only some of its state's bits (sources that
 * differ near their end would get names sharing most digits): a bijective finalizer spreads
 * them over the whole name without adding collisions. */
static void content_name(const char *identity, const char *entry, const char *source, size_t len,
                         char name[NAME_SIZE]) {
  hash128 h = ((hash128)0x6c62272e07bb0142u << 64) | 0x62b821756295c58du;
  h = fnv1a_128(h, identity, strlen(identity) + 1);
  h = fnv1a_128(h, entry, strlen(entry) + 1);
  h = fnv1a_128(h, source, len);
  uint64_t low = avalanche64((uint64_t)h);
  uint64_t high = avalanche64((uint64_t)(h >> 64) ^ low);
  low ^= high;
  snprintf(name, NAME_SIZE, "%016" PRIx64 "%016" PRIx64, high, low);
}

/* ---- the compiler's subprocess ---- */

typedef enum child_end {
  CHILD_EXITED,          /* the status is its wait status */
  CHILD_KILLED_AT_LIMIT, /* it ran past timeout_ms */
  CHILD_LOST,            /* waitpid failed (errno): SIGCHLD ignored, or reaped elsewhere */
} child_end;

/* In the forked child: async-signal-safe calls only, then execvpe. Any failure is written as
 * errno to the report pipe. The descriptors to keep are first copied above 10, so that
 * moving them to 0..3 never overwrites one not moved yet. */
static _Noreturn void exec_compiler(const opd__cc *cc, char *const argv[], int null_fd, int log_fd,
                                    int report_fd, const struct rlimit limits[4]) {
  static const int resources[4] = {RLIMIT_AS, RLIMIT_CPU, RLIMIT_FSIZE, RLIMIT_CORE};
  int report = report_fd;
  sigset_t none;
  sigemptyset(&none);
  struct sigaction default_action = {.sa_handler = SIG_DFL};
  int in, out, rep;
  if (setpgid(0, 0) != 0 || sigprocmask(SIG_SETMASK, &none, NULL) != 0 ||
      sigaction(SIGPIPE, &default_action, NULL) != 0 || fchdir(cc->dirfd) != 0 ||
      (in = fcntl(null_fd, F_DUPFD, 10)) < 0 || (out = fcntl(log_fd, F_DUPFD, 10)) < 0 ||
      (rep = fcntl(report_fd, F_DUPFD, 10)) < 0 || dup2(in, 0) < 0 || dup2(out, 1) < 0 ||
      dup2(out, 2) < 0 || dup2(rep, 3) < 0)
    goto failed;
  report = 3;
  if (fcntl(3, F_SETFD, FD_CLOEXEC) != 0) goto failed;
  closefrom(4);
  /* A seccomp filter that denies setrlimit (EPERM: the shipped systemd unit filters
   * @resources) leaves the compiler under the daemon's own limits and the timeout. */
  for (int i = 0; i < 4; i++)
    if (setrlimit(resources[i], &limits[i]) != 0 && errno != EPERM) goto failed;
  /* below the daemon's threads, its workers included: a compile takes only a CPU they leave
   * idle (the same filter may deny this too) */
  errno = 0;
  int nice_now = getpriority(PRIO_PROCESS, 0);
  if (errno == 0 && nice_now < COMPILER_NICE) (void)setpriority(PRIO_PROCESS, 0, COMPILER_NICE);
  execvpe(argv[0], argv, cc->env);
failed:;
  int err = errno;
  ssize_t written = write(report, &err, sizeof err);
  _exit(written == (ssize_t)sizeof err ? 127 : 126);
}

static int64_t elapsed_ms(const struct timespec *from) {
  struct timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  return (int64_t)(now.tv_sec - from->tv_sec) * 1000 + (now.tv_nsec - from->tv_nsec) / 1000000;
}

static child_end wait_or_kill(pid_t pid, uint32_t timeout_ms, int *status) {
  struct timespec start, pause = {0, POLL_NS};
  clock_gettime(CLOCK_MONOTONIC, &start);
  for (;;) {
    pid_t r = waitpid(pid, status, WNOHANG);
    if (r == pid) return CHILD_EXITED;
    if (r < 0 && errno != EINTR) return CHILD_LOST;
    if (elapsed_ms(&start) >= (int64_t)timeout_ms) break;
    nanosleep(&pause, NULL);
  }
  kill(-pid, SIGKILL); /* its process group: the driver and what it started */
  while (waitpid(pid, status, 0) < 0)
    if (errno != EINTR) return CHILD_LOST;
  return CHILD_KILLED_AT_LIMIT;
}

/* The compiler's output for a reason: from the first line that mentions "error" (else from
 * the start), at most WHY_EXCERPT bytes, control characters as spaces. */
static void log_excerpt(int log_fd, char out[WHY_EXCERPT + 1]) {
  char text[4096];
  ssize_t n = pread(log_fd, text, sizeof text - 1, 0);
  text[n > 0 ? n : 0] = '\0';
  const char *from = strstr(text, "error");
  if (from)
    while (from > text && from[-1] != '\n') from--;
  else
    from = text;
  size_t len = strnlen(from, WHY_EXCERPT);
  for (size_t i = 0; i < len; i++)
    out[i] = (unsigned char)from[i] < 0x20 || from[i] == 0x7f ? ' ' : from[i];
  while (len > 0 && out[len - 1] == ' ') len--;
  out[len] = '\0';
  if (len == 0) snprintf(out, WHY_EXCERPT + 1, "(no output)");
}

/* Runs argv (argv[0] the compiler) with its output to log_fd: 0 when it exited with status 0,
 * or the error with its reason in why. *timed_out says whether it was killed at timeout_ms. */
static int run_compiler(const opd__cc *cc, char *const argv[], int log_fd, bool *timed_out,
                        char *why, size_t why_size) {
  *timed_out = false;
  int null_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
  if (null_fd < 0)
    return fail(OPD_EINTERNAL, why, why_size, "cannot open /dev/null: %s", strerror(errno));
  int report[2];
  if (pipe2(report, O_CLOEXEC) != 0) {
    int err = errno;
    close(null_fd);
    return fail(OPD_EINTERNAL, why, why_size, "cannot make a pipe: %s", strerror(err));
  }
  rlim_t cpu_seconds = ((rlim_t)cc->timeout_ms + 999) / 1000 + 1;
  const struct rlimit limits[4] = {{LIMIT_AS_BYTES, LIMIT_AS_BYTES},
                                   {cpu_seconds, cpu_seconds},
                                   {LIMIT_FILE_BYTES, LIMIT_FILE_BYTES},
                                   {0, 0}};
  pid_t pid = fork();
  if (pid == 0) exec_compiler(cc, argv, null_fd, log_fd, report[1], limits);
  int fork_errno = errno;
  close(null_fd);
  close(report[1]);
  if (pid < 0) {
    close(report[0]);
    return fail(OPD_EINTERNAL, why, why_size, "cannot fork the compiler: %s", strerror(fork_errno));
  }
  setpgid(pid, pid); /* as the child does: whichever comes first (the other fails) */
  /* Until the child execs (or fails to): the pipe's only writer is the child's. */
  int child_errno = 0;
  ssize_t n;
  do n = read(report[0], &child_errno, sizeof child_errno);
  while (n < 0 && errno == EINTR);
  close(report[0]);
  int status = 0;
  child_end end = wait_or_kill(pid, cc->timeout_ms, &status);
  if (n == (ssize_t)sizeof child_errno)
    return fail(OPD_EINTERNAL, why, why_size, "cannot run the compiler '%s': %s", argv[0],
                strerror(child_errno));
  if (end == CHILD_LOST)
    return fail(OPD_EINTERNAL, why, why_size, "lost the exit status of the compiler '%s': %s",
                argv[0], strerror(errno));
  if (end == CHILD_KILLED_AT_LIMIT) {
    *timed_out = true;
    return fail(OPD_ERESOURCE, why, why_size, "%s ran past its timeout of %u ms and was killed",
                argv[0], cc->timeout_ms);
  }
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return 0;
  char excerpt[WHY_EXCERPT + 1];
  log_excerpt(log_fd, excerpt);
  if (WIFEXITED(status))
    return fail(OPD_EINTERNAL, why, why_size, "%s exited with status %d: %s", argv[0],
                WEXITSTATUS(status), excerpt);
  return fail(OPD_EINTERNAL, why, why_size, "%s was killed by signal %d: %s", argv[0],
              WTERMSIG(status), excerpt);
}

/* ---- files of the directory ---- */

static bool owned_regular_file(const struct stat *st) {
  return S_ISREG(st->st_mode) && st->st_uid == geteuid();
}

/* Whether fd's content is exactly data[0..len), reading at most len + 1 bytes. */
static bool content_equals(int fd, const char *data, size_t len) {
  char chunk[4096];
  size_t at = 0;
  for (;;) {
    size_t want = len + 1 - at < sizeof chunk ? len + 1 - at : sizeof chunk;
    ssize_t n = read(fd, chunk, want);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return n == 0 && at == len;
    if ((size_t)n > len - at || memcmp(chunk, data + at, (size_t)n) != 0) return false;
    at += (size_t)n;
  }
}

/* Whether `<name>.c` holds exactly the source and `<name>.so` is there: both regular files of
 * the effective user, neither a symlink (O_NONBLOCK: opening a FIFO must not block). */
static bool built_on_disk(const opd__cc *cc, const char *name, const char *source, size_t len) {
  char file[FILE_SIZE];
  struct stat st;
  snprintf(file, sizeof file, "%s.so", name);
  if (fstatat(cc->dirfd, file, &st, AT_SYMLINK_NOFOLLOW) != 0 || !owned_regular_file(&st))
    return false;
  snprintf(file, sizeof file, "%s.c", name);
  int fd = openat(cc->dirfd, file, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return false;
  bool same = fstat(fd, &st) == 0 && owned_regular_file(&st) && (size_t)st.st_size == len &&
              content_equals(fd, source, len);
  close(fd);
  return same;
}

/* A new file of the directory (O_EXCL, never through a symlink, mode 0600). */
static int create_file(const opd__cc *cc, const char *file, int access) {
  return openat(cc->dirfd, file, access | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
}

/* Writes data to a new file: 0, or -1 with errno (the file may be left: the caller removes
 * it). */
static int write_new_file(const opd__cc *cc, const char *file, const char *data, size_t len) {
  int fd = create_file(cc, file, O_WRONLY);
  if (fd < 0) return -1;
  for (size_t done = 0; done < len;) {
    ssize_t n = write(fd, data + done, len - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      int err = errno;
      close(fd);
      errno = err;
      return -1;
    }
    done += (size_t)n;
  }
  return close(fd);
}

static void temp_name(char file[FILE_SIZE], const char *name, const char *suffix, uint64_t serial) {
  snprintf(file, FILE_SIZE, "%s.%s.%ld-%" PRIu64 ".tmp", name, suffix, (long)getpid(), serial);
}

/* Publishes the source as `<name>.c`, compiles it into a temp object and publishes that as
 * `<name>.so`, with the compiler's output as `<name>.log`; counts the run. */
static int compile(opd__cc *cc, const char *name, const char *source, size_t len, char *why,
                   size_t why_size) {
  uint64_t serial = atomic_fetch_add(&temp_serial, 1);
  char src[FILE_SIZE], so[FILE_SIZE], log[FILE_SIZE];
  char temp_src[FILE_SIZE], temp_so[FILE_SIZE], temp_log[FILE_SIZE];
  snprintf(src, sizeof src, "%s.c", name);
  snprintf(so, sizeof so, "%s.so", name);
  snprintf(log, sizeof log, "%s.log", name);
  temp_name(temp_src, name, "c", serial);
  temp_name(temp_so, name, "so", serial);
  temp_name(temp_log, name, "log", serial);
  if (write_new_file(cc, temp_src, source, len) != 0 ||
      renameat(cc->dirfd, temp_src, cc->dirfd, src) != 0) {
    int err = errno;
    unlinkat(cc->dirfd, temp_src, 0);
    return fail(OPD_EINTERNAL, why, why_size, "cannot write %s/%s: %s", cc->dir, src,
                strerror(err));
  }
  int log_fd = create_file(cc, temp_log, O_RDWR);
  if (log_fd < 0)
    return fail(OPD_EINTERNAL, why, why_size, "cannot create %s/%s: %s", cc->dir, temp_log,
                strerror(errno));
  char *argv[] = {cc->cc, CC_FLAGS, "-o", temp_so, src, NULL};
  bool timed_out;
  int rc = run_compiler(cc, argv, log_fd, &timed_out, why, why_size);
  bool compiled = rc == 0;
  close(log_fd);
  if (renameat(cc->dirfd, temp_log, cc->dirfd, log) != 0) unlinkat(cc->dirfd, temp_log, 0);
  if (compiled && renameat(cc->dirfd, temp_so, cc->dirfd, so) != 0)
    rc = fail(OPD_EINTERNAL, why, why_size, "cannot publish %s/%s: %s", cc->dir, so,
              strerror(errno));
  if (rc != 0) unlinkat(cc->dirfd, temp_so, 0);
  pthread_mutex_lock(&cc->lock);
  if (rc == 0) cc->counts.compiles++;
  if (!compiled) cc->counts.failures++;
  if (timed_out) cc->counts.timeouts++;
  pthread_mutex_unlock(&cc->lock);
  return rc;
}

/* ---- the registry of loaded modules ---- */

/* The module named `name`, retained, or NULL; a module of that name with another entry or
 * source is a collision. Holding loaded.lock. */
static int find_locked(const char *name, const char *entry, const char *source, size_t len,
                       opd__cc_module **out, char *why, size_t why_size) {
  *out = NULL;
  for (opd__cc_module *m = loaded.head; m; m = m->next) {
    if (strcmp(m->name, name) != 0) continue;
    if (strcmp(m->entry, entry) != 0 || m->source_len != len || memcmp(m->source, source, len) != 0)
      return fail(OPD_EINTERNAL, why, why_size,
                  "content address %s is taken by another source (a hash collision)", name);
    m->refs++;
    *out = m;
    return 0;
  }
  return 0;
}

/* Whether `address` lies in the object loaded as `handle` (not in one of its dependencies). */
static bool defined_in(void *handle, void *address) {
  void *object = NULL, *owner = NULL;
  Dl_info info;
  return dlinfo(handle, RTLD_DI_LINKMAP, &object) == 0 &&
         dladdr1(address, &info, &owner, RTLD_DL_LINKMAP) != 0 && owner == object;
}

/* What the dynamic loader keeps for an object beside its segments (its link map, scope and
 * name), rounded up. */
#define LOADER_BYTES 4096

typedef struct mapping {
  uintptr_t base;
  uint64_t bytes;
} mapping;

static int add_segments(struct dl_phdr_info *info, size_t size, void *arg) {
  (void)size;
  mapping *m = arg;
  if (info->dlpi_addr != m->base) return 0;
  uintptr_t lo = UINTPTR_MAX, hi = 0, page = (uintptr_t)sysconf(_SC_PAGESIZE);
  for (int i = 0; i < info->dlpi_phnum; i++) {
    const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
    if (ph->p_type != PT_LOAD) continue;
    if (ph->p_vaddr < lo) lo = ph->p_vaddr;
    if (ph->p_vaddr + ph->p_memsz > hi) hi = ph->p_vaddr + ph->p_memsz;
  }
  if (hi > lo) m->bytes = ((hi + page - 1) & ~(page - 1)) - (lo & ~(page - 1));
  return 1;
}

/* The span the object loaded as `handle` maps (what mmap reserved for its segments). */
static uint64_t mapped_bytes(void *handle) {
  struct link_map *lm = NULL;
  if (dlinfo(handle, RTLD_DI_LINKMAP, &lm) != 0 || !lm) return 0;
  mapping m = {(uintptr_t)lm->l_addr, 0};
  dl_iterate_phdr(add_segments, &m);
  return m.bytes;
}

/* dlopens `<name>.so` and registers it with one reference. Holding loaded.lock. */
static int open_locked(const opd__cc *cc, const char *name, const char *entry, const char *source,
                       size_t len, opd__cc_module **out, char *why, size_t why_size) {
  size_t entry_size = strlen(entry) + 1;
  opd__cc_module *m = opd__malloc(sizeof *m + entry_size + len + 1);
  if (!m) return fail(OPD_ENOMEM, why, why_size, "out of memory for a compiled module");
  char path[FILE_SIZE];
  snprintf(path, sizeof path, "/proc/self/fd/%d/%s.so", cc->dirfd, name);
  void *handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    opd__free(m);
    return fail(OPD_EINTERNAL, why, why_size, "cannot load %s/%s.so: %s", cc->dir, name, dlerror());
  }
  void *fn = dlsym(handle, entry);
  if (!fn || !defined_in(handle, fn)) {
    dlclose(handle);
    opd__free(m);
    return fail(OPD_ENOENT, why, why_size, "%s/%s.so does not define '%s'", cc->dir, name, entry);
  }
  char *text = (char *)(m + 1);
  memcpy(text, entry, entry_size);
  memcpy(text + entry_size, source, len + 1);
  *m = (opd__cc_module){.next = loaded.head,
                        .refs = 1,
                        .bytes =
                            mapped_bytes(handle) + LOADER_BYTES + sizeof *m + entry_size + len + 1,
                        .handle = handle,
                        .fn = fn,
                        .entry = text,
                        .source = text + entry_size,
                        .source_len = len};
  memcpy(m->name, name, NAME_SIZE);
  loaded.head = m;
  *out = m;
  return 0;
}

void opd__cc_module_release(opd__cc_module *m) {
  if (!m) return;
  pthread_mutex_lock(&loaded.lock);
  if (--m->refs == 0) {
    opd__cc_module **link = &loaded.head;
    while (*link != m) link = &(*link)->next;
    *link = m->next;
    if (dlclose(m->handle) != 0)
      opd_log(OPD_LOG_WARN, "unloading compiled module %s: %s", m->name, dlerror());
    opd__free(m);
  }
  pthread_mutex_unlock(&loaded.lock);
}

const char *opd__cc_module_name(const opd__cc_module *m) {
  return m->name;
}

uint64_t opd__cc_module_bytes(const opd__cc_module *m) {
  return m->bytes;
}

/* ---- building ---- */

/* ---- the directory's size ---- */

typedef struct stored {
  char name[NAME_SIZE];
  uint64_t bytes;  /* its .c, .so and .log */
  int64_t used_ns; /* its .so's modification time: when it was built or last loaded */
} stored;

static bool is_content_name(const char *s, size_t n) {
  if (n != NAME_SIZE - 1) return false;
  for (size_t i = 0; i < n; i++)
    if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f'))) return false;
  return true;
}

static bool loaded_by_name(const char *name) {
  pthread_mutex_lock(&loaded.lock);
  const opd__cc_module *m = loaded.head;
  while (m && strcmp(m->name, name) != 0) m = m->next;
  pthread_mutex_unlock(&loaded.lock);
  return m != NULL;
}

static int by_use(const void *a, const void *b) {
  int64_t x = ((const stored *)a)->used_ns, y = ((const stored *)b)->used_ns;
  return x < y ? -1 : x > y;
}

/* [Note: The C tier's directory is bounded]
 * Every distinct program leaves a source, an object and a log (about 19 KB) in the directory.
 * After each compile the directory's modules are summed (their .c, .so and .log), and while
 * they take more than max_bytes the least recently used are removed: the oldest .so
 * modification time, which a build sets and a load from disk renews. A module loaded in this
 * process (in use by a group) is never removed, nor the one just built; temporary files of
 * builds in flight have other names and are left alone. A removed module is compiled again
 * when a program needs it. */
static void trim_directory(opd__cc *cc, const char *keep) {
  if (!cc->max_bytes) return;
  int fd = dup(cc->dirfd);
  DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
  if (!d) {
    if (fd >= 0) close(fd);
    return;
  }
  rewinddir(d); /* the offset is the directory descriptor's, shared with the dup */
  stored *all = NULL;
  size_t n = 0, cap = 0;
  uint64_t total = 0;
  for (struct dirent *e; (e = readdir(d));) {
    const char *dot = strrchr(e->d_name, '.');
    struct stat st;
    if (!dot || !is_content_name(e->d_name, (size_t)(dot - e->d_name)) ||
        (strcmp(dot, ".c") && strcmp(dot, ".so") && strcmp(dot, ".log")) ||
        fstatat(cc->dirfd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(st.st_mode))
      continue;
    size_t i = 0;
    while (i < n && strncmp(all[i].name, e->d_name, NAME_SIZE - 1) != 0) i++;
    if (i == n) {
      if (n == cap) {
        stored *more = opd__realloc(all, (cap = cap ? 2 * cap : 64) * sizeof *all);
        if (!more) break;
        all = more;
      }
      all[n] = (stored){.bytes = 0, .used_ns = INT64_MIN};
      memcpy(all[n].name, e->d_name, NAME_SIZE - 1);
      all[n++].name[NAME_SIZE - 1] = '\0';
    }
    all[i].bytes += (uint64_t)st.st_size;
    total += (uint64_t)st.st_size;
    if (!strcmp(dot, ".so"))
      all[i].used_ns = (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec;
  }
  closedir(d);
  qsort(all, n, sizeof *all, by_use);
  for (size_t i = 0; i < n && total > cc->max_bytes; i++) {
    if (!strcmp(all[i].name, keep) || loaded_by_name(all[i].name)) continue;
    static const char *const suffixes[] = {".so", ".c", ".log"};
    for (int k = 0; k < 3; k++) {
      char file[FILE_SIZE];
      snprintf(file, sizeof file, "%s%s", all[i].name, suffixes[k]);
      unlinkat(cc->dirfd, file, 0);
    }
    total -= all[i].bytes;
    pthread_mutex_lock(&cc->lock);
    cc->counts.evicted++;
    pthread_mutex_unlock(&cc->lock);
  }
  opd__free(all);
}

int opd__cc_build(opd__cc *cc, const char *source, const char *entry, opd__cc_module **mod,
                  void **fn, char *why, size_t why_size) {
  *mod = NULL;
  *fn = NULL;
  if (why_size > 0) why[0] = '\0';
  size_t len = strlen(source);
  char name[NAME_SIZE];
  content_name(cc->identity, entry, source, len, name);
  opd__cc_module *m;
  pthread_mutex_lock(&loaded.lock);
  int rc = find_locked(name, entry, source, len, &m, why, why_size);
  pthread_mutex_unlock(&loaded.lock);
  if (rc != 0) return rc;
  if (!m) {
    bool on_disk = built_on_disk(cc, name, source, len);
    if (!on_disk && (rc = compile(cc, name, source, len, why, why_size)) != 0) return rc;
    if (on_disk) { /* used now ([Note: The C tier's directory is bounded]) */
      char so[FILE_SIZE];
      snprintf(so, sizeof so, "%s.so", name);
      (void)utimensat(cc->dirfd, so, NULL, AT_SYMLINK_NOFOLLOW);
    }
    pthread_mutex_lock(&loaded.lock);
    rc = find_locked(name, entry, source, len, &m, why, why_size); /* loaded meanwhile? */
    if (rc == 0 && !m) rc = open_locked(cc, name, entry, source, len, &m, why, why_size);
    pthread_mutex_unlock(&loaded.lock);
    if (rc != 0) return rc;
    if (on_disk) {
      pthread_mutex_lock(&cc->lock);
      cc->counts.disk_hits++;
      pthread_mutex_unlock(&cc->lock);
    } else {
      trim_directory(cc, name);
    }
  }
  *mod = m;
  *fn = m->fn;
  return 0;
}

/* ---- the service ---- */

/* Opens the directory (created 0700 when missing) and checks that it is private. */
static int open_private_dir(const char *dir, int *out) {
  const int flags = O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC;
  int fd = open(dir, flags);
  if (fd < 0 && errno == ENOENT) {
    if (mkdir(dir, 0700) != 0 && errno != EEXIST)
      return opd_error(OPD_EINVAL, "cannot create the compiler cache directory '%s': %s", dir,
                       strerror(errno));
    fd = open(dir, flags);
  }
  struct stat st;
  if (fd < 0) {
    int err = errno; /* ENOTDIR or ELOOP for a symlink: lstat says which it is */
    bool symlink = lstat(dir, &st) == 0 && S_ISLNK(st.st_mode);
    return opd_error(OPD_EINVAL, "the compiler cache directory '%s' is not private: %s", dir,
                     symlink ? "it is a symbolic link" : strerror(err));
  }
  const char *problem = fstat(fd, &st) != 0       ? strerror(errno)
                        : !S_ISDIR(st.st_mode)    ? "it is not a directory"
                        : st.st_uid != geteuid()  ? "it is not owned by the effective user"
                        : (st.st_mode & 077) != 0 ? "its group or others have permissions"
                                                  : NULL;
  if (problem) {
    close(fd);
    return opd_error(OPD_EINVAL, "the compiler cache directory '%s' is not private: %s", dir,
                     problem);
  }
  *out = fd;
  return 0;
}

/* The compiler as the child runs it from the directory: a relative path made absolute. */
static int set_compiler(opd__cc *cc, const char *compiler) {
  char absolute[PATH_MAX];
  if (strchr(compiler, '/') && compiler[0] != '/') {
    if (!realpath(compiler, absolute))
      return opd_error(OPD_EINVAL, "cannot run the compiler '%s': %s", compiler, strerror(errno));
    compiler = absolute;
  }
  cc->cc = opd__strdup(compiler);
  return cc->cc ? 0 : opd_error(OPD_ENOMEM, "out of memory for the compiler service");
}

/* "NAME=value", or NULL when out of memory. */
static char *env_entry(const char *name, const char *value) {
  size_t size = strlen(name) + 1 + strlen(value) + 1;
  char *entry = opd__malloc(size);
  if (entry) snprintf(entry, size, "%s=%s", name, value);
  return entry;
}

/* PATH (the driver finds as and ld) and TMPDIR (its temporary files) as the daemon has them,
 * and LC_ALL=C. */
static int set_environment(opd__cc *cc) {
  const char *path = getenv("PATH"), *tmpdir = getenv("TMPDIR");
  size_t n = 0;
  if (path && !(cc->env[n++] = cc->env_path = env_entry("PATH", path)))
    return opd_error(OPD_ENOMEM, "out of memory for the compiler's environment");
  if (tmpdir && !(cc->env[n++] = cc->env_tmpdir = env_entry("TMPDIR", tmpdir)))
    return opd_error(OPD_ENOMEM, "out of memory for the compiler's environment");
  cc->env[n++] = "LC_ALL=C";
  cc->env[n] = NULL;
  return 0;
}

/* Runs `cc flag` and keeps the first line of its output, which must be printable and without
 * spaces (at most PROBE_SIZE - 1 bytes). The output goes to a file unlinked at once. */
static int probe(opd__cc *cc, const char *flag, char out[PROBE_SIZE]) {
  char file[FILE_SIZE];
  temp_name(file, "probe", flag + 1, atomic_fetch_add(&temp_serial, 1));
  int fd = create_file(cc, file, O_RDWR);
  if (fd < 0)
    return opd_error(OPD_EINVAL, "cannot create a file in the compiler cache directory '%s': %s",
                     cc->dir, strerror(errno));
  unlinkat(cc->dirfd, file, 0);
  char *argv[] = {cc->cc, (char *)flag, NULL};
  char why[WHY_SIZE];
  bool timed_out;
  int rc = run_compiler(cc, argv, fd, &timed_out, why, sizeof why);
  ssize_t n = rc == 0 ? pread(fd, out, PROBE_SIZE - 1, 0) : 0;
  close(fd);
  if (rc != 0)
    return opd_error(OPD_EINVAL, "the compiler probe '%s %s' failed: %s", cc->cc, flag, why);
  out[n > 0 ? n : 0] = '\0';
  out[strcspn(out, "\r\n")] = '\0';
  bool usable = out[0] != '\0';
  for (const char *c = out; *c; c++) usable = usable && *c > ' ' && *c < 0x7f;
  if (!usable)
    return opd_error(OPD_EINVAL, "the compiler probe '%s %s' printed nothing usable", cc->cc, flag);
  return 0;
}

/* "cpu=VENDOR/FAMILY/MODEL/FEATURES": cpuid's vendor, family and model, and the feature words
 * of leaves 1 and 7 (a hypervisor may hide features of a model). */
static void cpu_identity(char *out, size_t size) {
#if defined(__x86_64__) || defined(__i386__)
  unsigned max_leaf, b, c, d;
  if (__get_cpuid(0, &max_leaf, &b, &c, &d) && max_leaf >= 1) {
    char vendor[13];
    memcpy(vendor, &b, 4);
    memcpy(vendor + 4, &d, 4);
    memcpy(vendor + 8, &c, 4);
    vendor[12] = '\0';
    unsigned signature, ebx, f1c, f1d, eax, f7b = 0, f7c = 0, f7d = 0;
    __cpuid(1, signature, ebx, f1c, f1d);
    if (max_leaf >= 7) __cpuid_count(7, 0, eax, f7b, f7c, f7d);
    unsigned family = (signature >> 8) & 0xf, model = (signature >> 4) & 0xf;
    if (family == 0xf) family += (signature >> 20) & 0xff;
    if (family == 0x6 || family >= 0xf) model |= ((signature >> 16) & 0xf) << 4;
    snprintf(out, size, "cpu=%s/%u/%u/%08x.%08x.%08x.%08x.%08x", vendor, family, model, f1c, f1d,
             f7b, f7c, f7d);
    return;
  }
#endif
  snprintf(out, size, "cpu=unknown");
}

static int set_identity(opd__cc *cc) {
  static const char *const flags[] = {CC_FLAGS};
  char version[PROBE_SIZE], machine[PROBE_SIZE], cpu[128];
  int rc = probe(cc, "-dumpfullversion", version);
  if (rc == 0) rc = probe(cc, "-dumpmachine", machine);
  if (rc != 0) return rc;
  cpu_identity(cpu, sizeof cpu);
  opd__sbuf sb = {0};
  opd__sbuf_printf(&sb, "%s %s %s", cc->cc, version, machine);
  for (size_t i = 0; i < sizeof flags / sizeof *flags; i++) opd__sbuf_printf(&sb, " %s", flags[i]);
  opd__sbuf_printf(&sb, " %s", cpu);
  return opd__sbuf_take(&sb, &cc->identity);
}

/* Takes queued compiles in order; once stopping, cancels the ones left. */
static void *service_main(void *arg) {
  opd__cc *cc = arg;
  char why[WHY_SIZE];
  pthread_mutex_lock(&cc->lock);
  for (;;) {
    while (!cc->head && !cc->stopping) pthread_cond_wait(&cc->work, &cc->lock);
    if (cc->stopping) break;
    job *j = cc->head;
    cc->head = j->next;
    if (!cc->head) cc->tail = NULL;
    cc->counts.queued--;
    cc->busy = true;
    pthread_mutex_unlock(&cc->lock);
    opd__cc_module *m;
    void *fn;
    int rc = opd__cc_build(cc, j->source, j->entry, &m, &fn, why, sizeof why);
    j->done(j->arg, rc, m, fn, rc == 0 ? "" : why);
    opd__free(j);
    pthread_mutex_lock(&cc->lock);
    cc->busy = false;
    if (!cc->head) pthread_cond_broadcast(&cc->idle);
  }
  job *cancelled = cc->head;
  cc->head = cc->tail = NULL;
  cc->counts.queued = 0;
  pthread_mutex_unlock(&cc->lock);
  while (cancelled) {
    job *next = cancelled->next;
    cancelled->done(cancelled->arg, OPD_ECANCELED, NULL, NULL, "the compiler service stopped");
    opd__free(cancelled);
    cancelled = next;
  }
  return NULL;
}

/* With every signal blocked, as the daemon's other threads. */
static int start_thread(opd__cc *cc) {
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  int rc = pthread_create(&cc->thread, NULL, service_main, cc);
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  if (rc != 0)
    return opd_error(OPD_ERESOURCE, "cannot start the compiler service's thread: %s", strerror(rc));
  return 0;
}

static void free_service(opd__cc *cc) {
  if (cc->dirfd >= 0) close(cc->dirfd);
  opd__free(cc->cc);
  opd__free(cc->dir);
  opd__free(cc->identity);
  opd__free(cc->env_path);
  opd__free(cc->env_tmpdir);
  pthread_cond_destroy(&cc->work);
  pthread_cond_destroy(&cc->idle);
  pthread_mutex_destroy(&cc->lock);
  opd__free(cc);
}

int opd__cc_start(const opd__cc_options *o, opd__cc **out) {
  *out = NULL;
  if (!o->cc || !o->cc[0] || !o->dir || !o->dir[0])
    return opd_error(OPD_EINVAL, "the compiler service needs a compiler and a directory");
  if (o->timeout_ms == 0 || o->queue_max == 0)
    return opd_error(OPD_EINVAL, "the compiler service's timeout_ms and queue_max must be at "
                                 "least 1");
  opd__cc *cc = opd__calloc(1, sizeof *cc);
  if (!cc) return opd_error(OPD_ENOMEM, "out of memory for the compiler service");
  cc->dirfd = -1;
  cc->timeout_ms = o->timeout_ms;
  cc->queue_max = o->queue_max;
  cc->max_bytes = o->max_bytes;
  cc->owner_queue_max = o->owner_queue_max ? o->owner_queue_max : o->queue_max;
  pthread_mutex_init(&cc->lock, NULL);
  pthread_cond_init(&cc->work, NULL);
  pthread_cond_init(&cc->idle, NULL);
  int rc = (cc->dir = opd__strdup(o->dir))
               ? 0
               : opd_error(OPD_ENOMEM, "out of memory for the compiler service");
  if (rc == 0) rc = open_private_dir(o->dir, &cc->dirfd);
  if (rc == 0) rc = set_compiler(cc, o->cc);
  if (rc == 0) rc = set_environment(cc);
  if (rc == 0) rc = set_identity(cc);
  if (rc == 0) rc = start_thread(cc);
  if (rc != 0) {
    free_service(cc);
    return rc;
  }
  *out = cc;
  return 0;
}

void opd__cc_stop(opd__cc *cc) {
  if (!cc) return;
  pthread_mutex_lock(&cc->lock);
  cc->stopping = true;
  pthread_cond_signal(&cc->work);
  pthread_mutex_unlock(&cc->lock);
  pthread_join(cc->thread, NULL);
  free_service(cc);
}

const char *opd__cc_identity(const opd__cc *cc) {
  return cc->identity;
}

int opd__cc_submit(opd__cc *cc, const char *source, const char *entry, opd__cc_done_fn done,
                   void *arg) {
  size_t entry_size = strlen(entry) + 1, source_size = strlen(source) + 1;
  job *j = opd__malloc(sizeof *j + entry_size + source_size);
  if (!j) return opd_error(OPD_ENOMEM, "out of memory for a compile");
  char *text = (char *)(j + 1);
  memcpy(text, entry, entry_size);
  memcpy(text + entry_size, source, source_size);
  uint64_t owner = opd_mem_owner_current();
  *j = (job){.done = done, .arg = arg, .owner = owner, .entry = text, .source = text + entry_size};
  int rc = 0;
  pthread_mutex_lock(&cc->lock);
  uint32_t mine = 0; /* the owner's compiles waiting: at most queue_max to count */
  for (const job *q = cc->head; q && mine < cc->owner_queue_max; q = q->next)
    mine += q->owner == owner;
  if (cc->stopping) {
    rc = opd_error(OPD_ECANCELED, "the compiler service is stopping");
  } else if (cc->counts.queued >= cc->queue_max) {
    cc->counts.rejected++;
    rc = opd_error(OPD_EBUSY, "the compiler queue is full (%" PRIu32 " compiles wait)",
                   cc->counts.queued);
  } else if (mine >= cc->owner_queue_max) {
    cc->counts.rejected++;
    rc = opd_error(OPD_EBUSY,
                   "%" PRIu32 " compiles of this session wait already (graph_cc_session_queue)",
                   mine);
  } else {
    if (cc->tail)
      cc->tail->next = j;
    else
      cc->head = j;
    cc->tail = j;
    cc->counts.queued++;
    pthread_cond_signal(&cc->work);
  }
  pthread_mutex_unlock(&cc->lock);
  if (rc != 0) opd__free(j);
  return rc;
}

void opd__cc_drain(opd__cc *cc) {
  pthread_mutex_lock(&cc->lock);
  while (cc->head || cc->busy) pthread_cond_wait(&cc->idle, &cc->lock);
  pthread_mutex_unlock(&cc->lock);
}

void opd__cc_stats_get(opd__cc *cc, opd_graph_c_tier_stats *out) {
  pthread_mutex_lock(&cc->lock);
  *out = cc->counts;
  pthread_mutex_unlock(&cc->lock);
}

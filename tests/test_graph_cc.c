/* test_graph_cc.c: the C compiler service ([Note: The C compiler service] in
 * graph/src/plan/c_compiler.c): building and loading, the content-addressed directory and what it
 * refuses to trust, compiler failures and timeouts, the private directory, the queue, builds
 * racing for one name, and allocation failures. Each test makes its own directory under /tmp
 * and removes it. Tests that compile for real need `cc` in PATH (without it they print
 * "SKIP: ..." and pass); the others run a shell script as the compiler. */
#define _XOPEN_SOURCE 700 /* nftw */
#include <check.h>
#include <dirent.h>
#include <ftw.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "plan/c_compiler.h"
#include "fault_alloc.h"
#include "opd/allocator.h"
#include "opd/error.h"
#include "opd/memory.h"
#include "test_files.h"

typedef int (*int_fn)(int);

static const char triple_source[] = "int opd_entry(int x) { return x * 3 + 1; }\n";

/* ---- helpers ---- */

static void temp_dir(char dir[64]) {
  snprintf(dir, 64, "/tmp/opd-graph-cc-XXXXXX");
  ck_assert_ptr_nonnull(mkdtemp(dir));
}

static int remove_entry(const char *path, const struct stat *st, int type, struct FTW *ftw) {
  (void)st, (void)type, (void)ftw;
  return remove(path);
}

static void remove_tree(const char *dir) {
  ck_assert_int_eq(nftw(dir, remove_entry, 8, FTW_DEPTH | FTW_PHYS), 0);
}

/* dir/file, or dir/name + suffix */
static const char *path_of(char out[256], const char *dir, const char *name, const char *suffix) {
  snprintf(out, 256, "%s/%s%s", dir, name, suffix);
  return out;
}

static void write_text(const char *path, const char *text, mode_t mode) {
  FILE *f = fopen(path, "w");
  ck_assert_ptr_nonnull(f);
  ck_assert_int_ge(fputs(text, f), 0);
  ck_assert_int_eq(fclose(f), 0);
  ck_assert_int_eq(chmod(path, mode), 0);
}

/* The file's bytes (at most size - 1), NUL-terminated. */
static void read_text(const char *path, char *out, size_t size) {
  FILE *f = fopen(path, "r");
  ck_assert_ptr_nonnull(f);
  out[fread(out, 1, size - 1, f)] = '\0';
  fclose(f);
}

/* How many entries of dir end with suffix ("": all of them). */
static int count_files(const char *dir, const char *suffix) {
  DIR *d = opendir(dir);
  ck_assert_ptr_nonnull(d);
  int n = 0;
  for (struct dirent *e; (e = readdir(d));) {
    size_t len = strlen(e->d_name), slen = strlen(suffix);
    if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
    if (len >= slen && strcmp(e->d_name + len - slen, suffix) == 0) n++;
  }
  closedir(d);
  return n;
}

static mode_t mode_of(const char *path) {
  struct stat st;
  ck_assert_int_eq(lstat(path, &st), 0);
  return st.st_mode;
}

static opd__cc *start(const char *dir, const char *compiler, uint32_t timeout_ms,
                      uint32_t queue_max) {
  opd__cc_options o = {
      .cc = compiler, .dir = dir, .timeout_ms = timeout_ms, .queue_max = queue_max};
  opd__cc *cc;
  ck_assert_msg(opd__cc_start(&o, &cc) == 0, "%s", opd_last_error());
  return cc;
}

static int try_start(const char *dir, const char *compiler) {
  opd__cc_options o = {.cc = compiler, .dir = dir, .timeout_ms = 5000, .queue_max = 4};
  opd__cc *cc = NULL;
  int rc = opd__cc_start(&o, &cc);
  ck_assert(rc == 0 ? cc != NULL : cc == NULL);
  opd__cc_stop(cc);
  return rc;
}

/* A shell script as the compiler, at dir/fake-cc: it answers the identity probe, and runs
 * `body` for a compile. */
static const char *fake_cc(char out[256], const char *dir, const char *body) {
  char script[1024];
  snprintf(script, sizeof script,
           "#!/bin/sh\n"
           "case \"$1\" in\n"
           "-dumpfullversion) echo 9.9.9 ;;\n"
           "-dumpmachine) echo opd-test-machine ;;\n"
           "*) %s ;;\n"
           "esac\n",
           body);
  path_of(out, dir, "fake-cc", "");
  write_text(out, script, 0700);
  return out;
}

/* Whether a file of dir is mapped into the process: a module loaded from it. */
static bool mapped(const char *dir) {
  char real[4096], line[4096];
  ck_assert_ptr_nonnull(realpath(dir, real));
  FILE *f = fopen("/proc/self/maps", "r");
  ck_assert_ptr_nonnull(f);
  bool found = false;
  while (!found && fgets(line, sizeof line, f)) found = strstr(line, real) != NULL;
  fclose(f);
  return found;
}

static opd_graph_c_tier_stats stats_of(opd__cc *cc) {
  opd_graph_c_tier_stats s;
  opd__cc_stats_get(cc, &s);
  return s;
}

static double seconds_since(const struct timespec *t0) {
  struct timespec t1;
  clock_gettime(CLOCK_MONOTONIC, &t1);
  return (double)(t1.tv_sec - t0->tv_sec) + (double)(t1.tv_nsec - t0->tv_nsec) / 1e9;
}

/* ---- building ---- */

START_TEST(test_build_and_reuse) {
  if (opd_test_no_compiler("cc", "test_build_and_reuse")) return;
  char dir[64], path[256], text[256];
  temp_dir(dir);
  opd__cc *cc = start(dir, "cc", 30000, 4);
  const char *identity = opd__cc_identity(cc);
  ck_assert_msg(strncmp(identity, "cc ", 3) == 0 &&
                    strstr(identity, " -std=c17 -O3 -march=native -ffp-contract=off "
                                     "-fno-math-errno -fPIC -shared cpu="),
                "%s", identity);
  opd__cc_module *m, *again;
  void *fn, *fn_again;
  char why[256];
  ck_assert_msg(opd__cc_build(cc, triple_source, "opd_entry", &m, &fn, why, sizeof why) == 0, "%s",
                why);
  ck_assert_int_eq(((int_fn)fn)(5), 16);
  ck_assert(mapped(dir));
  char name[64];
  snprintf(name, sizeof name, "%s", opd__cc_module_name(m));
  ck_assert_uint_eq(strlen(name), 32);
  ck_assert_uint_eq(strspn(name, "0123456789abcdef"), 32);
  /* the source, the object and the log, and nothing else (no temp or probe file left) */
  read_text(path_of(path, dir, name, ".c"), text, sizeof text);
  ck_assert_str_eq(text, triple_source);
  ck_assert_uint_eq(mode_of(path) & 07777, 0600);
  ck_assert(S_ISREG(mode_of(path_of(path, dir, name, ".so"))));
  ck_assert_uint_eq(mode_of(path_of(path, dir, name, ".log")) & 07777, 0600);
  ck_assert_int_eq(count_files(dir, ""), 3);
  opd_graph_c_tier_stats s = stats_of(cc);
  ck_assert_uint_eq(s.compiles, 1);
  ck_assert_uint_eq(s.disk_hits + s.failures + s.timeouts + s.rejected + s.queued, 0);
  /* again: the loaded module, no compile */
  ck_assert_int_eq(
      opd__cc_build(cc, triple_source, "opd_entry", &again, &fn_again, why, sizeof why), 0);
  ck_assert_ptr_eq(again, m);
  ck_assert_ptr_eq(fn_again, fn);
  ck_assert_uint_eq(stats_of(cc).compiles, 1);
  ck_assert_uint_eq(stats_of(cc).disk_hits, 0);
  /* another entry of the same source is another module */
  opd__cc_module *other;
  void *fn_other;
  ck_assert_int_eq(opd__cc_build(cc,
                                 "int opd_entry(int x) { return x * 3 + 1; }\n"
                                 "int opd_other(int x) { return -x; }\n",
                                 "opd_other", &other, &fn_other, why, sizeof why),
                   0);
  ck_assert_str_ne(opd__cc_module_name(other), name);
  ck_assert_int_eq(((int_fn)fn_other)(5), -5);
  opd__cc_module_release(other);
  opd__cc_module_release(again);
  opd__cc_module_release(m);
  opd__cc_stop(cc);
  /* a new service on the directory: found on disk, loaded without a compile */
  cc = start(dir, "cc", 30000, 4);
  ck_assert_int_eq(opd__cc_build(cc, triple_source, "opd_entry", &m, &fn, why, sizeof why), 0);
  ck_assert_str_eq(opd__cc_module_name(m), name);
  ck_assert_int_eq(((int_fn)fn)(-2), -5);
  s = stats_of(cc);
  ck_assert_uint_eq(s.disk_hits, 1);
  ck_assert_uint_eq(s.compiles, 0);
  opd__cc_module_release(m);
  ck_assert(!mapped(dir)); /* unloaded at the last release */
  opd__cc_stop(cc);
  remove_tree(dir);
}
END_TEST

/* A `<name>.c` that is not the source (other bytes of the same length, with the object they
 * compile to; or a symlink to the right bytes) is no hit: the source is compiled again and its
 * module is loaded. */
START_TEST(test_tampered_source_is_recompiled) {
  if (opd_test_no_compiler("cc", "test_tampered_source_is_recompiled")) return;
  char dir[64], path[256], copy[256], name[64], why[256], text[256];
  temp_dir(dir);
  /* the same length, another program: its source and object under the name of triple_source */
  char tampered[sizeof triple_source];
  snprintf(tampered, sizeof tampered, "%s", triple_source);
  *strchr(tampered, '3') = '4';
  opd__cc *cc = start(dir, "cc", 30000, 4);
  opd__cc_module *m, *wrong;
  void *fn, *wrong_fn;
  ck_assert_int_eq(opd__cc_build(cc, triple_source, "opd_entry", &m, &fn, why, sizeof why), 0);
  ck_assert_int_eq(opd__cc_build(cc, tampered, "opd_entry", &wrong, &wrong_fn, why, sizeof why), 0);
  ck_assert_int_eq(((int_fn)wrong_fn)(5), 21);
  snprintf(name, sizeof name, "%s", opd__cc_module_name(m));
  path_of(copy, dir, opd__cc_module_name(wrong), ".so");
  opd__cc_module_release(wrong);
  opd__cc_module_release(m);
  opd__cc_stop(cc);
  opd_test_copy_file(copy, path_of(path, dir, name, ".so")); /* unloaded: not written under it */
  write_text(path_of(path, dir, name, ".c"), tampered, 0600);
  cc = start(dir, "cc", 30000, 4);
  ck_assert_int_eq(opd__cc_build(cc, triple_source, "opd_entry", &m, &fn, why, sizeof why), 0);
  ck_assert_int_eq(((int_fn)fn)(5), 16);
  ck_assert_uint_eq(stats_of(cc).compiles, 1);
  ck_assert_uint_eq(stats_of(cc).disk_hits, 0);
  read_text(path, text, sizeof text);
  ck_assert_str_eq(text, triple_source);
  opd__cc_module_release(m);
  /* a symlink to the right bytes is not followed */
  write_text(path_of(copy, dir, "copy", ".txt"), triple_source, 0600);
  ck_assert_int_eq(unlink(path), 0);
  ck_assert_int_eq(symlink(copy, path), 0);
  ck_assert_int_eq(opd__cc_build(cc, triple_source, "opd_entry", &m, &fn, why, sizeof why), 0);
  ck_assert_int_eq(((int_fn)fn)(0), 1);
  ck_assert_uint_eq(stats_of(cc).compiles, 2);
  ck_assert_uint_eq(stats_of(cc).disk_hits, 0);
  ck_assert(S_ISREG(mode_of(path)));
  opd__cc_module_release(m);
  opd__cc_stop(cc);
  ck_assert(!mapped(dir));
  remove_tree(dir);
}
END_TEST

START_TEST(test_syntax_error) {
  if (opd_test_no_compiler("cc", "test_syntax_error")) return;
  char dir[64], why[256];
  temp_dir(dir);
  opd__cc *cc = start(dir, "cc", 30000, 4);
  opd__cc_module *m;
  void *fn;
  int rc = opd__cc_build(cc, "int opd_entry(int x) { return x * ; }\n", "opd_entry", &m, &fn, why,
                         sizeof why);
  ck_assert_int_eq(rc, OPD_EINTERNAL);
  ck_assert_ptr_null(m);
  ck_assert_ptr_null(fn);
  /* the compiler's error line, on one line */
  ck_assert_msg(strncmp(why, "cc exited with status 1: ", 25) == 0 && strstr(why, "error:") &&
                    !strchr(why, '\n'),
                "%s", why);
  ck_assert_str_eq(opd_last_error(), why);
  opd_graph_c_tier_stats s = stats_of(cc);
  ck_assert_uint_eq(s.failures, 1);
  ck_assert_uint_eq(s.compiles, 0);
  ck_assert_uint_eq(s.timeouts, 0);
  /* the source and its log stay; no object, no temp file */
  ck_assert_int_eq(count_files(dir, ".so"), 0);
  ck_assert_int_eq(count_files(dir, ".c"), 1);
  ck_assert_int_eq(count_files(dir, ".log"), 1);
  ck_assert_int_eq(count_files(dir, ""), 2);
  opd__cc_stop(cc);
  remove_tree(dir);
}
END_TEST

/* An entry the module does not define is an error naming it, also when a library the module
 * depends on defines it (dlsym would find libc's strlen). */
START_TEST(test_missing_entry) {
  if (opd_test_no_compiler("cc", "test_missing_entry")) return;
  char dir[64], why[256];
  temp_dir(dir);
  opd__cc *cc = start(dir, "cc", 30000, 4);
  opd__cc_module *m;
  void *fn;
  ck_assert_int_eq(opd__cc_build(cc, triple_source, "opd_absent", &m, &fn, why, sizeof why),
                   OPD_ENOENT);
  ck_assert_ptr_null(m);
  ck_assert_msg(strstr(why, "does not define 'opd_absent'"), "%s", why);
  const char *length_source =
      "#include <string.h>\nint opd_length(const char *s) { return (int)strlen(s); }\n";
  ck_assert_int_eq(opd__cc_build(cc, length_source, "strlen", &m, &fn, why, sizeof why),
                   OPD_ENOENT);
  ck_assert_msg(strstr(why, "does not define 'strlen'"), "%s", why);
  ck_assert(!mapped(dir)); /* unloaded again */
  ck_assert_int_eq(opd__cc_build(cc, length_source, "opd_length", &m, &fn, why, sizeof why), 0);
  ck_assert_int_eq(((int (*)(const char *))fn)("four"), 4);
  opd__cc_module_release(m);
  ck_assert_uint_eq(stats_of(cc).compiles, 3); /* the compiler did its part each time */
  ck_assert_uint_eq(stats_of(cc).failures, 0);
  opd__cc_stop(cc);
  ck_assert(!mapped(dir));
  remove_tree(dir);
}
END_TEST

/* A compiler past timeout_ms is killed with the processes it started. */
START_TEST(test_timeout) {
  char dir[64], cache[256], compiler[256], pid_file[256], body[512], why[256], text[64];
  temp_dir(dir);
  path_of(cache, dir, "cache", "");
  path_of(pid_file, dir, "sleep", ".pid");
  snprintf(body, sizeof body, "sleep 10 & echo $! > %s; wait", pid_file);
  opd__cc *cc = start(cache, fake_cc(compiler, dir, body), 300, 4);
  ck_assert_msg(strstr(opd__cc_identity(cc), " 9.9.9 opd-test-machine -std=c17 "), "%s",
                opd__cc_identity(cc));
  struct timespec t0;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  opd__cc_module *m;
  void *fn;
  ck_assert_int_eq(opd__cc_build(cc, triple_source, "opd_entry", &m, &fn, why, sizeof why),
                   OPD_ERESOURCE);
  double took = seconds_since(&t0);
  ck_assert_msg(took >= 0.29 && took < 2.0, "%.3f s", took);
  ck_assert_ptr_null(m);
  ck_assert_msg(strstr(why, "ran past its timeout of 300 ms and was killed"), "%s", why);
  opd_graph_c_tier_stats s = stats_of(cc);
  ck_assert_uint_eq(s.timeouts, 1);
  ck_assert_uint_eq(s.failures, 1);
  ck_assert_uint_eq(s.compiles, 0);
  ck_assert_int_eq(count_files(cache, ".so"), 0);
  /* the script's sleep went with it: gone, or a zombie waiting for its reaper */
  read_text(pid_file, text, sizeof text);
  char stat_path[64], stat_text[512];
  snprintf(stat_path, sizeof stat_path, "/proc/%d/stat", atoi(text));
  bool dead = false;
  for (int i = 0; i < 200 && !dead; i++) {
    FILE *f = fopen(stat_path, "r");
    stat_text[0] = '\0';
    if (f) {
      stat_text[fread(stat_text, 1, sizeof stat_text - 1, f)] = '\0';
      fclose(f);
    }
    const char *state = strrchr(stat_text, ')');
    dead = !f || (state && (state[2] == 'Z' || state[2] == 'X'));
    if (!dead) nanosleep(&(struct timespec){0, 5000000}, NULL);
  }
  ck_assert_msg(dead, "the compiler's child %s is still running", text);
  opd__cc_stop(cc);
  remove_tree(dir);
}
END_TEST

/* ---- the service ---- */

START_TEST(test_private_directory) {
  char dir[64], compiler[256], path[256], target[256];
  temp_dir(dir);
  fake_cc(compiler, dir, "exit 1");
  /* open to its group or others */
  path_of(path, dir, "open", "");
  ck_assert_int_eq(mkdir(path, 0700), 0);
  const mode_t open_modes[] = {0777, 0750, 0701};
  for (size_t i = 0; i < sizeof open_modes / sizeof *open_modes; i++) {
    ck_assert_int_eq(chmod(path, open_modes[i]), 0);
    ck_assert_int_eq(try_start(path, compiler), OPD_EINVAL);
    ck_assert_msg(strstr(opd_last_error(), "is not private: its group or others have permissions"),
                  "%s", opd_last_error());
  }
  /* a symlink to a private directory */
  path_of(target, dir, "private", "");
  ck_assert_int_eq(mkdir(target, 0700), 0);
  path_of(path, dir, "link", "");
  ck_assert_int_eq(symlink(target, path), 0);
  ck_assert_int_eq(try_start(path, compiler), OPD_EINVAL);
  ck_assert_msg(strstr(opd_last_error(), "is not private: it is a symbolic link"), "%s",
                opd_last_error());
  ck_assert_int_eq(try_start(target, compiler), 0); /* the directory itself is fine */
  /* a regular file */
  path_of(path, dir, "file", "");
  write_text(path, "", 0600);
  ck_assert_int_eq(try_start(path, compiler), OPD_EINVAL);
  ck_assert_msg(strstr(opd_last_error(), "is not private: Not a directory"), "%s",
                opd_last_error());
  /* another user's (when the test can give it away) */
  if (geteuid() == 0) {
    path_of(path, dir, "theirs", "");
    ck_assert_int_eq(mkdir(path, 0700), 0);
    ck_assert_int_eq(chown(path, 65534, 65534), 0);
    ck_assert_int_eq(try_start(path, compiler), OPD_EINVAL);
    ck_assert_msg(strstr(opd_last_error(), "is not private: it is not owned by the effective user"),
                  "%s", opd_last_error());
  }
  /* missing: created 0700 (not its parents) */
  path_of(path, dir, "new", "");
  ck_assert_int_eq(try_start(path, compiler), 0);
  ck_assert(S_ISDIR(mode_of(path)));
  ck_assert_uint_eq(mode_of(path) & 07777, 0700);
  ck_assert_int_eq(count_files(path, ""), 0); /* the probes' output files are gone */
  path_of(path, dir, "missing/new", "");
  ck_assert_int_eq(try_start(path, compiler), OPD_EINVAL);
  ck_assert_msg(strstr(opd_last_error(), "cannot create the compiler cache directory"), "%s",
                opd_last_error());
  /* options out of range */
  opd__cc *cc;
  opd__cc_options o = {.cc = compiler, .dir = target, .timeout_ms = 0, .queue_max = 4};
  ck_assert_int_eq(opd__cc_start(&o, &cc), OPD_EINVAL);
  o = (opd__cc_options){.cc = compiler, .dir = target, .timeout_ms = 100, .queue_max = 0};
  ck_assert_int_eq(opd__cc_start(&o, &cc), OPD_EINVAL);
  remove_tree(dir);
}
END_TEST

START_TEST(test_compiler_cannot_run) {
  char dir[64], cache[256], compiler[256];
  temp_dir(dir);
  path_of(cache, dir, "cache", "");
  ck_assert_int_eq(try_start(cache, "/nonexistent/cc"), OPD_EINVAL);
  ck_assert_msg(strstr(opd_last_error(), "the compiler probe '/nonexistent/cc -dumpfullversion' "
                                         "failed: cannot run the compiler '/nonexistent/cc': "
                                         "No such file or directory"),
                "%s", opd_last_error());
  ck_assert_int_eq(try_start(cache, "opd-no-such-compiler"), OPD_EINVAL);
  ck_assert_msg(strstr(opd_last_error(), "cannot run the compiler 'opd-no-such-compiler'"), "%s",
                opd_last_error());
  ck_assert_int_eq(try_start(cache, "./opd-no-such-compiler"), OPD_EINVAL);
  ck_assert_msg(strstr(opd_last_error(), "cannot run the compiler './opd-no-such-compiler'"), "%s",
                opd_last_error());
  /* not executable */
  path_of(compiler, dir, "not-executable", "");
  write_text(compiler, "#!/bin/sh\necho 1\n", 0600);
  ck_assert_int_eq(try_start(cache, compiler), OPD_EINVAL);
  ck_assert_msg(strstr(opd_last_error(), "Permission denied"), "%s", opd_last_error());
  /* a probe that fails, or prints nothing usable */
  path_of(compiler, dir, "failing", "");
  write_text(compiler, "#!/bin/sh\necho 'no such option' >&2\nexit 3\n", 0700);
  ck_assert_int_eq(try_start(cache, compiler), OPD_EINVAL);
  ck_assert_msg(strstr(opd_last_error(), "failing exited with status 3: no such option"), "%s",
                opd_last_error());
  path_of(compiler, dir, "silent", "");
  write_text(compiler, "#!/bin/sh\nexit 0\n", 0700);
  ck_assert_int_eq(try_start(cache, compiler), OPD_EINVAL);
  ck_assert_msg(strstr(opd_last_error(), "-dumpfullversion' printed nothing usable"), "%s",
                opd_last_error());
  ck_assert_int_eq(count_files(cache, ""), 0);
  remove_tree(dir);
}
END_TEST

/* What the done callbacks saw, read once the service is drained or stopped. */
typedef struct outcome {
  int calls, rc;
  opd__cc_module *mod;
  void *fn;
  char why[256];
} outcome;

static void record(void *arg, int rc, opd__cc_module *mod, void *fn, const char *why) {
  outcome *o = arg;
  o->calls++;
  o->rc = rc;
  o->mod = mod;
  o->fn = fn;
  snprintf(o->why, sizeof o->why, "%s", why);
}

START_TEST(test_submit_and_drain) {
  if (opd_test_no_compiler("cc", "test_submit_and_drain")) return;
  char dir[64];
  temp_dir(dir);
  opd__cc *cc = start(dir, "cc", 30000, 4);
  char sources[3][64];
  outcome seen[3] = {0};
  for (int i = 0; i < 3; i++) {
    snprintf(sources[i], sizeof sources[i], "int opd_entry(int x) { return x * %d; }\n", i + 2);
    ck_assert_int_eq(opd__cc_submit(cc, sources[i], "opd_entry", record, &seen[i]), 0);
    sources[i][0] = 'X'; /* submit copied it */
  }
  opd__cc_drain(cc);
  opd_graph_c_tier_stats s = stats_of(cc);
  ck_assert_uint_eq(s.compiles, 3);
  ck_assert_uint_eq(s.queued, 0);
  for (int i = 0; i < 3; i++) {
    ck_assert_int_eq(seen[i].calls, 1);
    ck_assert_msg(seen[i].rc == 0, "%s", seen[i].why);
    ck_assert_str_eq(seen[i].why, "");
    ck_assert_int_eq(((int_fn)seen[i].fn)(10), 10 * (i + 2));
    opd__cc_module_release(seen[i].mod);
  }
  opd__cc_drain(cc); /* nothing to wait for */
  opd__cc_stop(cc);
  ck_assert(!mapped(dir));
  remove_tree(dir);
}
END_TEST

/* queue_max 1 with the thread busy: the second waiting compile is refused; stop lets the
 * running one finish and cancels the one waiting. */
START_TEST(test_queue_full_and_stop) {
  char dir[64], cache[256], compiler[256];
  temp_dir(dir);
  path_of(cache, dir, "cache", "");
  fake_cc(compiler, dir, "sleep 0.5; echo 'slow: error: refused' >&2; exit 1");
  opd__cc *cc = start(cache, compiler, 5000, 1);
  outcome running = {0}, waiting = {0}, refused = {0};
  ck_assert_int_eq(opd__cc_submit(cc, "int a;", "a", record, &running), 0);
  for (int i = 0; i < 2000 && stats_of(cc).queued > 0; i++)
    nanosleep(&(struct timespec){0, 1000000}, NULL);
  ck_assert_uint_eq(stats_of(cc).queued, 0); /* the thread took it */
  ck_assert_int_eq(opd__cc_submit(cc, "int b;", "b", record, &waiting), 0);
  ck_assert_int_eq(opd__cc_submit(cc, "int c;", "c", record, &refused), OPD_EBUSY);
  ck_assert_msg(strstr(opd_last_error(), "queue is full"), "%s", opd_last_error());
  opd_graph_c_tier_stats s = stats_of(cc);
  ck_assert_uint_eq(s.rejected, 1);
  ck_assert_uint_eq(s.queued, 1);
  opd__cc_stop(cc);
  ck_assert_int_eq(running.calls, 1);
  ck_assert_int_eq(running.rc, OPD_EINTERNAL);
  ck_assert_ptr_null(running.mod);
  ck_assert_msg(strstr(running.why, "fake-cc exited with status 1: slow: error: refused"), "%s",
                running.why);
  ck_assert_int_eq(waiting.calls, 1);
  ck_assert_int_eq(waiting.rc, OPD_ECANCELED);
  ck_assert_ptr_null(waiting.mod);
  ck_assert_int_eq(refused.calls, 0);
  remove_tree(dir);
}
END_TEST

/* One owner (a daemon's session: the budget installed on the thread) has at most
 * owner_queue_max compiles waiting, while another's still queue; the compiler runs at nice 10
 * or more. */
START_TEST(test_queue_per_owner_and_nice) {
  char dir[64], cache[256], compiler[256], nice_file[256], body[512];
  temp_dir(dir);
  path_of(cache, dir, "cache", "");
  path_of(nice_file, dir, "nice", "");
  snprintf(body, sizeof body, "awk '{print $19}' /proc/$$/stat > %s; sleep 0.3; exit 1", nice_file);
  fake_cc(compiler, dir, body);
  opd__cc_options o = {
      .cc = compiler, .dir = cache, .timeout_ms = 5000, .queue_max = 8, .owner_queue_max = 2};
  opd__cc *cc;
  ck_assert_msg(opd__cc_start(&o, &cc) == 0, "%s", opd_last_error());
  _Atomic uint64_t held_a = 0, held_b = 0;
  opd_mem_budget a = {.held = &held_a, .limit = UINT64_MAX, .owner_id = opd_mem_owner_new()};
  opd_mem_budget b = {.held = &held_b, .limit = UINT64_MAX, .owner_id = opd_mem_owner_new()};
  outcome out[6] = {0};
  opd_mem_budget_install(&a);
  ck_assert_int_eq(opd__cc_submit(cc, "int a0;", "a0", record, &out[0]), 0);
  for (int i = 0; i < 2000 && stats_of(cc).queued > 0; i++)
    nanosleep(&(struct timespec){0, 1000000}, NULL);
  ck_assert_int_eq(opd__cc_submit(cc, "int a1;", "a1", record, &out[1]), 0);
  ck_assert_int_eq(opd__cc_submit(cc, "int a2;", "a2", record, &out[2]), 0);
  ck_assert_int_eq(opd__cc_submit(cc, "int a3;", "a3", record, &out[3]), OPD_EBUSY);
  ck_assert_msg(strstr(opd_last_error(), "graph_cc_session_queue"), "%s", opd_last_error());
  opd_mem_budget_uninstall();
  opd_mem_budget_install(&b); /* another session's go on queueing */
  ck_assert_int_eq(opd__cc_submit(cc, "int b0;", "b0", record, &out[4]), 0);
  ck_assert_int_eq(opd__cc_submit(cc, "int b1;", "b1", record, &out[5]), 0);
  opd_mem_budget_uninstall();
  ck_assert_uint_eq(stats_of(cc).rejected, 1);
  opd__cc_drain(cc);
  opd__cc_stop(cc);
  ck_assert_int_eq(out[3].calls, 0);
  ck_assert_int_eq(out[5].calls, 1);
  FILE *f = fopen(nice_file, "r");
  ck_assert_ptr_nonnull(f);
  int nice_value = -100;
  ck_assert_int_eq(fscanf(f, "%d", &nice_value), 1);
  fclose(f);
  ck_assert_int_ge(nice_value, 10);
  remove_tree(dir);
}
END_TEST

/* [Note: The C tier's directory is bounded]: past max_bytes a compile removes the least
 * recently used modules, never one loaded nor the one just built. */
START_TEST(test_directory_bounded) {
  if (opd_test_no_compiler("cc", "test_directory_bounded")) return;
  char dir[64];
  temp_dir(dir);
  opd__cc_options o = {.cc = "cc", .dir = dir, .timeout_ms = 30000, .queue_max = 4, .max_bytes = 1};
  opd__cc *cc;
  ck_assert_msg(opd__cc_start(&o, &cc) == 0, "%s", opd_last_error());
  opd__cc_module *mod[3];
  void *fn;
  char why[256], source[3][64];
  for (int i = 0; i < 3; i++) {
    snprintf(source[i], sizeof source[i], "int opd_entry(int x) { return x * %d; }\n", i + 5);
    ck_assert_msg(opd__cc_build(cc, source[i], "opd_entry", &mod[i], &fn, why, sizeof why) == 0,
                  "%s", why);
    ck_assert_int_eq(((int (*)(int))fn)(2), 2 * (i + 5));
    if (i == 0) opd__cc_module_release(mod[0]); /* the first is not in use when the others build */
  }
  /* the first was removed when the second was built; the second (loaded) and third stay */
  ck_assert_int_eq(count_files(dir, ".so"), 2);
  ck_assert_int_eq(count_files(dir, ".c"), 2);
  ck_assert_uint_eq(stats_of(cc).evicted, 1);
  ck_assert_uint_eq(stats_of(cc).compiles, 3);
  /* the removed one is compiled again when asked for */
  ck_assert_msg(opd__cc_build(cc, source[0], "opd_entry", &mod[0], &fn, why, sizeof why) == 0, "%s",
                why);
  ck_assert_uint_eq(stats_of(cc).compiles, 4);
  for (int i = 0; i < 3; i++) opd__cc_module_release(mod[i]);
  opd__cc_stop(cc);
  remove_tree(dir);
}
END_TEST

typedef struct racer {
  opd__cc *cc;
  int rc;
  opd__cc_module *mod;
  void *fn;
  char why[256];
} racer;

static void *race_build(void *arg) {
  racer *r = arg;
  r->rc = opd__cc_build(r->cc, triple_source, "opd_entry", &r->mod, &r->fn, r->why, sizeof r->why);
  return NULL;
}

/* Threads building one new source at once all get the one module, and the directory holds its
 * three files and nothing else. */
START_TEST(test_concurrent_builds) {
  if (opd_test_no_compiler("cc", "test_concurrent_builds")) return;
  char dir[64];
  temp_dir(dir);
  opd__cc *cc = start(dir, "cc", 30000, 4);
  racer racers[4];
  pthread_t threads[4];
  for (int i = 0; i < 4; i++) {
    racers[i] = (racer){.cc = cc};
    ck_assert_int_eq(pthread_create(&threads[i], NULL, race_build, &racers[i]), 0);
  }
  for (int i = 0; i < 4; i++) ck_assert_int_eq(pthread_join(threads[i], NULL), 0);
  for (int i = 0; i < 4; i++) {
    ck_assert_msg(racers[i].rc == 0, "%s", racers[i].why);
    ck_assert_ptr_eq(racers[i].mod, racers[0].mod);
    ck_assert_int_eq(((int_fn)racers[i].fn)(2), 7);
  }
  opd_graph_c_tier_stats s = stats_of(cc);
  ck_assert_uint_ge(s.compiles, 1);
  ck_assert_uint_le(s.compiles + s.disk_hits, 4);
  ck_assert_uint_eq(s.failures, 0);
  ck_assert_int_eq(count_files(dir, ""), 3);
  for (int i = 0; i < 4; i++) opd__cc_module_release(racers[i].mod);
  opd__cc_stop(cc);
  ck_assert(!mapped(dir));
  remove_tree(dir);
}
END_TEST

/* ---- allocation failures (fault_alloc.h) ---- */

static void never_called(void *arg, int rc, opd__cc_module *mod, void *fn, const char *why) {
  (void)rc, (void)mod, (void)fn, (void)why;
  (*(int *)arg)++;
}

/* The Nth allocation of a start, a build (a disk hit) and a submit fails, for every N each
 * makes: OPD_ENOMEM, never a crash, and nothing leaks (the sanitizer build checks). */
START_TEST(test_allocation_failures) {
  char dir[64], cache[256], compiler[256], why[256];
  temp_dir(dir);
  path_of(cache, dir, "cache", "");
  ck_assert_int_eq(opd_replace_allocator(fault_malloc, fault_realloc, fault_calloc, free), 0);
  const char *tmpdir = getenv("TMPDIR");
  if (!tmpdir) setenv("TMPDIR", "/tmp", 1); /* so that every environment entry is made */
  bool real = !opd_test_no_compiler("cc", "test_allocation_failures (a build)");
  fake_cc(compiler, dir, "exit 1");
  opd__cc *cc = NULL;
  long n = 1;
  for (;; n++) {
    opd__cc_options o = {
        .cc = real ? "cc" : compiler, .dir = cache, .timeout_ms = 30000, .queue_max = 4};
    arm(n);
    int rc = opd__cc_start(&o, &cc);
    if (!disarm()) {
      ck_assert_msg(rc == 0, "%s", opd_last_error());
      break;
    }
    ck_assert_msg(rc == OPD_ENOMEM, "allocation %ld: %s", n, opd_last_error());
    ck_assert_ptr_null(cc);
  }
  ck_assert_int_ge(n, 7); /* the service, its directory, compiler, PATH, TMPDIR, identity */
  if (!tmpdir) unsetenv("TMPDIR");
  int calls = 0;
  arm(1);
  ck_assert_int_eq(opd__cc_submit(cc, triple_source, "opd_entry", never_called, &calls),
                   OPD_ENOMEM);
  ck_assert(disarm());
  if (real) {
    opd__cc_module *m;
    void *fn;
    ck_assert_int_eq(opd__cc_build(cc, triple_source, "opd_entry", &m, &fn, why, sizeof why), 0);
    opd__cc_module_release(m);
    for (n = 1;; n++) {
      arm(n);
      int rc = opd__cc_build(cc, triple_source, "opd_entry", &m, &fn, why, sizeof why);
      if (!disarm()) {
        ck_assert_int_eq(rc, 0);
        break;
      }
      ck_assert_int_eq(rc, OPD_ENOMEM);
      ck_assert_ptr_null(m);
      ck_assert_msg(strstr(why, "out of memory"), "%s", why);
    }
    ck_assert_int_eq(((int_fn)fn)(1), 4);
    opd__cc_module_release(m);
    ck_assert_uint_eq(stats_of(cc).disk_hits, 1);
  }
  opd__cc_stop(cc);
  ck_assert(!mapped(dir));
  ck_assert_int_eq(calls, 0);
  ck_assert_int_eq(opd_replace_allocator(NULL, NULL, NULL, NULL), 0);
  remove_tree(dir);
}
END_TEST

Suite *opd_test_graph_cc_suite(void) {
  Suite *s = suite_create("graph_cc");
  TCase *tc = tcase_create("cc");
  tcase_set_timeout(tc, 30);
  tcase_add_test(tc, test_build_and_reuse);
  tcase_add_test(tc, test_tampered_source_is_recompiled);
  tcase_add_test(tc, test_syntax_error);
  tcase_add_test(tc, test_missing_entry);
  tcase_add_test(tc, test_timeout);
  tcase_add_test(tc, test_private_directory);
  tcase_add_test(tc, test_compiler_cannot_run);
  tcase_add_test(tc, test_submit_and_drain);
  tcase_add_test(tc, test_queue_full_and_stop);
  tcase_add_test(tc, test_queue_per_owner_and_nice);
  tcase_add_test(tc, test_directory_bounded);
  tcase_add_test(tc, test_concurrent_builds);
  tcase_add_test(tc, test_allocation_failures);
  suite_add_tcase(s, tc);
  return s;
}

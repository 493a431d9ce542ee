/* test_files.h: files in tests (shared by the suites that stage plugins in a directory,
 * those that need a C compiler, and those that read the fixtures of tests/fixtures). */
#ifndef OPD_TESTS_TEST_FILES_H
#define OPD_TESTS_TEST_FILES_H

#include <check.h>
#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Copies file `from` to `to` (created or truncated). */
static inline void opd_test_copy_file(const char *from, const char *to) {
  FILE *in = fopen(from, "rb"), *out = fopen(to, "wb");
  ck_assert_msg(in && out, "copying %s to %s", from, to);
  char buf[65536];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, in)) > 0) ck_assert_uint_eq(fwrite(buf, 1, n, out), n);
  fclose(in);
  fclose(out);
}

/* True (after printing SKIP) when the compiler `cc` (a path, or a name looked up in PATH)
 * cannot be run: `test` then checks nothing. */
static inline bool opd_test_no_compiler(const char *cc, const char *test) {
  if (strchr(cc, '/')) {
    if (access(cc, X_OK) == 0) return false;
  } else {
    const char *path = getenv("PATH");
    char dirs[4096], file[4200];
    snprintf(dirs, sizeof dirs, "%s", path ? path : "");
    for (char *save, *d = strtok_r(dirs, ":", &save); d; d = strtok_r(NULL, ":", &save)) {
      snprintf(file, sizeof file, "%s/%s", d, cc);
      if (access(file, X_OK) == 0) return false;
    }
  }
  printf("SKIP: %s: no C compiler %s\n", test, cc);
  return true;
}

#ifndef OPD_FIXTURES_DIR_DEFAULT
#define OPD_FIXTURES_DIR_DEFAULT OPD_SOURCE_DIR "/tests/fixtures"
#endif

/* The JSON document at `relative` (e.g. "oracle/public.json") under $OPD_FIXTURES_DIR, or the
 * build's shared directory beside the checkout (a new reference; the test fails without it). */
static inline json_t *opd_test_load_shared(const char *relative) {
  const char *dir = getenv("OPD_FIXTURES_DIR");
  char path[4096];
  snprintf(path, sizeof path, "%s/%s", dir ? dir : OPD_FIXTURES_DIR_DEFAULT, relative);
  json_error_t jerr;
  json_t *root = json_load_file(path, 0, &jerr);
  ck_assert_msg(root != NULL, "cannot load %s: %s", path, jerr.text);
  return root;
}

#endif

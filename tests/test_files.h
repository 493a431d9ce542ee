/* test_files.h: files in tests (shared by the suites that stage plugins in a directory). */
#ifndef OPD_TESTS_TEST_FILES_H
#define OPD_TESTS_TEST_FILES_H

#include <check.h>
#include <stdio.h>

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

#endif

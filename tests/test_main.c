/* test_main.c: runs the unit test suites of tests/suites.def (the one table of them).
 * `opd_tests` runs them all, `opd_tests NAME` one of them (ctest runs each suite as its own
 * test). Check forks each test case, so a crash fails only that case. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "opd/log.h"

#define X(name) Suite *opd_test_##name##_suite(void);
#include "suites.def"
#undef X

static const struct {
  const char *name;
  Suite *(*make)(void);
} suites[] = {
#define X(name) {#name, opd_test_##name##_suite},
#include "suites.def"
#undef X
};

int main(int argc, char **argv) {
  SRunner *runner = NULL;
  opd_log_set_level(OPD_LOG_ERROR);
  for (size_t i = 0; i < sizeof suites / sizeof *suites; i++) {
    if (argc > 1 && strcmp(argv[1], suites[i].name) != 0) continue;
    if (!runner)
      runner = srunner_create(suites[i].make());
    else
      srunner_add_suite(runner, suites[i].make());
  }
  if (!runner) {
    fprintf(stderr, "unknown suite '%s'\n", argc > 1 ? argv[1] : "");
    return 2;
  }
  srunner_run_all(runner, CK_NORMAL);
  int failed = srunner_ntests_failed(runner);
  srunner_free(runner);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

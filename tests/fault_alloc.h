/* fault_alloc.h: failing the Nth allocation from now, for the suites that sweep every
 * allocation of an operation ([Note: The replaceable allocator] in opd/memory.h): install
 * fault_malloc, fault_realloc and fault_calloc with opd_replace_allocator, arm(n), run the
 * operation, and disarm() says whether the armed failure happened. */
#ifndef OPD_TESTS_FAULT_ALLOC_H
#define OPD_TESTS_FAULT_ALLOC_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>

/* Allocations left before the one that fails; 0: none fails; FAIL_ALL: every one fails. */
enum { FAIL_ALL = -1 };
static atomic_long countdown;
static atomic_bool fired;

static bool should_fail(void) {
  long n = atomic_load(&countdown);
  if (n == FAIL_ALL) {
    atomic_store(&fired, true);
    return true;
  }
  while (n > 0)
    if (atomic_compare_exchange_weak(&countdown, &n, n - 1)) {
      if (n == 1) atomic_store(&fired, true);
      return n == 1;
    }
  return false;
}
static void *fault_malloc(size_t n) {
  return should_fail() ? NULL : malloc(n);
}
static void *fault_realloc(void *p, size_t n) {
  return should_fail() ? NULL : realloc(p, n);
}
static void *fault_calloc(size_t n, size_t size) {
  return should_fail() ? NULL : calloc(n, size);
}

/* Arms the failure of the nth allocation from now (FAIL_ALL: of every one). */
static void arm(long n) {
  atomic_store(&fired, false);
  atomic_store(&countdown, n);
}

/* Disarms; whether the armed failure happened. */
static bool disarm(void) {
  atomic_store(&countdown, 0);
  return atomic_load(&fired);
}

#endif

/* test_parallel.c: the intra-op pool (kernels/src/parallel.c, [Note: Intra-op parallelism],
 * [Note: Spinning before sleeping]): every item of a range is run exactly once, by the caller
 * and the pool's threads, over thousands of regions back to back (the threads spinning between
 * them), with chunk counts that change from region to region (so some pool threads sit some
 * regions out and must not run theirs), after pauses long enough for every thread to go to
 * sleep, and with two callers at once (one of them runs its region inline). Under TSan (the
 * unit suites run there in CI) the same tests check the region's hand-over for races. */
#include <check.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#include "src/parallel.h"

Suite *opd_test_parallel_suite(void);

enum { MAX_ITEMS = 4096 };

/* per item: how many times a chunk covered it (nothing is asserted on the pool's threads:
 * what they saw is counted here and checked by the test's own thread) */
typedef struct coverage {
  _Atomic int hits[MAX_ITEMS];
  _Atomic int64_t chunks, outside; /* chunks run; chunks not inside [0, MAX_ITEMS) */
} coverage;

static void cover(void *ctx, int64_t begin, int64_t end) {
  coverage *c = ctx;
  atomic_fetch_add(&c->chunks, 1);
  if (begin < 0 || begin >= end || end > MAX_ITEMS) {
    atomic_fetch_add(&c->outside, 1);
    return;
  }
  for (int64_t i = begin; i < end; i++) atomic_fetch_add(&c->hits[i], 1);
}

/* One region over [begin, end) with `grain`; true when every item in it was covered once, none
 * outside it, by no more chunks than the pool has threads. */
static bool region_ok(coverage *c, int64_t begin, int64_t end, int64_t grain) {
  memset(c, 0, sizeof *c);
  opd__parallel_for(begin, end, grain, cover, c);
  if (atomic_load(&c->outside) != 0 || atomic_load(&c->chunks) > opd__parallel_threads())
    return false;
  for (int64_t i = 0; i < MAX_ITEMS; i++)
    if (atomic_load(&c->hits[i]) != (i >= begin && i < end)) return false;
  return true;
}

static void check_region(coverage *c, int64_t begin, int64_t end, int64_t grain) {
  ck_assert_msg(region_ok(c, begin, end, grain),
                "[%lld, %lld) grain %lld: %lld chunks, %lld outside the range, or an item not "
                "covered exactly once",
                (long long)begin, (long long)end, (long long)grain,
                (long long)atomic_load(&c->chunks), (long long)atomic_load(&c->outside));
}

static coverage shared_coverage;

START_TEST(every_item_once_back_to_back) {
  opd__parallel_set_threads(4);
  uint32_t x = 12345;
  for (int r = 0; r < 3000; r++) {
    x = x * 1664525u + 1013904223u;
    int64_t begin = x % 100, end = begin + 1 + (x >> 8) % (MAX_ITEMS - 100);
    /* grains from 1 (a chunk per thread) to the whole range (inline): 1 to 4 chunks */
    int64_t grain = 1 + (int64_t)((x >> 20) % (uint32_t)(end - begin));
    check_region(&shared_coverage, begin, end, grain);
  }
  opd__parallel_set_threads(0);
}
END_TEST

START_TEST(regions_after_the_threads_sleep) {
  opd__parallel_set_threads(3);
  for (int r = 0; r < 20; r++) {
    /* longer than the spin ([Note: Spinning before sleeping]): the threads wait asleep */
    nanosleep(&(struct timespec){0, 2000000}, NULL);
    check_region(&shared_coverage, 0, MAX_ITEMS, r % 2 ? 1 : MAX_ITEMS / 2);
  }
  opd__parallel_set_threads(0);
}
END_TEST

static coverage two_callers[2];

static void *caller(void *arg) {
  coverage *c = arg;
  for (int r = 0; r < 500; r++)
    if (!region_ok(c, 0, MAX_ITEMS, 64)) return "a region lost or repeated an item";
  return NULL;
}

/* Two threads call at once: a region that finds the pool busy runs inline, and neither loses
 * or repeats an item. */
START_TEST(two_callers_at_once) {
  opd__parallel_set_threads(2);
  pthread_t t[2];
  for (int i = 0; i < 2; i++)
    ck_assert_int_eq(pthread_create(&t[i], NULL, caller, &two_callers[i]), 0);
  for (int i = 0; i < 2; i++) {
    void *failure = "not joined";
    ck_assert_int_eq(pthread_join(t[i], &failure), 0);
    ck_assert_ptr_null(failure);
  }
  opd__parallel_set_threads(0);
}
END_TEST

Suite *opd_test_parallel_suite(void) {
  Suite *s = suite_create("parallel");
  TCase *tc = tcase_create("core");
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, every_item_once_back_to_back);
  tcase_add_test(tc, regions_after_the_threads_sleep);
  tcase_add_test(tc, two_callers_at_once);
  suite_add_tcase(s, tc);
  return s;
}

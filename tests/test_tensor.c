/* test_tensor.c: tensors, storage and the CPU allocator: geometry, views sharing storage,
 * reference counts, the version counter, the allocator's limit, accounting and cache, dtype
 * promotion and half-precision conversions. */
#include <check.h>
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "opd/allocator.h"
#include "opd/dtype.h"
#include "opd/error.h"
#include "opd/tensor.h"

static const opd_device cpu = {OPD_DEVICE_CPU, -1};
static const opd_device meta = {OPD_DEVICE_META, -1};

START_TEST(test_empty_contiguous) {
  int64_t sizes[] = {2, 3, 4};
  opd_tensor *t;
  ck_assert_int_eq(opd_tensor_empty(sizes, 3, OPD_FLOAT32, cpu, &t), 0);
  ck_assert_int_eq(t->numel, 24);
  ck_assert_int_eq(opd_tensor_strides(t)[0], 12);
  ck_assert_int_eq(opd_tensor_strides(t)[1], 4);
  ck_assert_int_eq(opd_tensor_strides(t)[2], 1);
  ck_assert(opd_tensor_is_contiguous(t));
  ck_assert_uint_eq((uintptr_t)opd_tensor_data(t) % OPD_CPU_ALIGNMENT, 0);
  ck_assert_uint_eq(t->storage->nbytes, 24 * 4);
  ck_assert(opd_keyset_has(opd_tensor_key_set(t), OPD_KEY_CPU));
  ck_assert(opd_keyset_has(opd_tensor_key_set(t), OPD_KEY_AutogradCPU));
  opd_tensor_release(t);
}
END_TEST

START_TEST(test_empty_rejects_bad_geometry) {
  int64_t negative[] = {2, -1};
  opd_tensor *t = NULL;
  ck_assert_int_eq(opd_tensor_empty(negative, 2, OPD_FLOAT32, cpu, &t), OPD_EINVAL);
  ck_assert_ptr_null(t);
  ck_assert_ptr_nonnull(strstr(opd_last_error(), "negative dimension"));
  int64_t huge[] = {INT64_MAX / 2, 4};
  ck_assert_int_eq(opd_tensor_empty(huge, 2, OPD_FLOAT32, cpu, &t), OPD_EINVAL);
  ck_assert_int_eq(opd_tensor_empty(huge, 65, OPD_FLOAT32, cpu, &t), OPD_EINVAL);
  int64_t ok[] = {2};
  ck_assert_int_eq(opd_tensor_empty(ok, 1, (opd_dtype)42, cpu, &t), OPD_EINVAL);
}
END_TEST

START_TEST(test_many_dims) {
  int64_t sizes[7] = {1, 2, 1, 3, 1, 2, 2};
  opd_tensor *t, *v;
  ck_assert_int_eq(opd_tensor_empty(sizes, 7, OPD_INT64, cpu, &t), 0);
  ck_assert_int_eq(t->ndim, 7);
  ck_assert_int_eq(t->numel, 24);
  for (int d = 0; d < 7; d++) ck_assert_int_eq(opd_tensor_sizes(t)[d], sizes[d]);
  ck_assert_int_eq(opd_tensor_strides(t)[6], 1);
  ck_assert_int_eq(opd_tensor_strides(t)[3], 4);
  int64_t vs[6] = {2, 3, 1, 2, 2, 1}, st[6] = {12, 4, 4, 2, 1, 1};
  ck_assert_int_eq(opd_tensor_view_of(t, vs, st, 6, 0, &v), 0);
  ck_assert_int_eq(opd_tensor_sizes(v)[4], 2);
  opd_tensor_release(t);
  opd_tensor_release(v);
}
END_TEST

START_TEST(test_view_shares_storage_and_outlives_base) {
  int64_t sizes[] = {2, 3};
  opd_tensor *base, *tv;
  ck_assert_int_eq(opd_tensor_empty(sizes, 2, OPD_FLOAT32, cpu, &base), 0);
  float *p = opd_tensor_data(base);
  for (int i = 0; i < 6; i++) p[i] = (float)i;
  int64_t tsizes[] = {3, 2}, tstrides[] = {1, 3};
  ck_assert_int_eq(opd_tensor_view_of(base, tsizes, tstrides, 2, 0, &tv), 0);
  ck_assert(opd_tensor_shares_storage(base, tv));
  ck_assert(!opd_tensor_is_contiguous(tv));
  ck_assert_uint_eq(atomic_load(&base->storage->refcount), 2);
  opd_tensor_release(base);
  /* element (2, 1) of the transpose is element (1, 2) of the base: 5 */
  const float *q = opd_tensor_data(tv);
  ck_assert_float_eq(q[2 * opd_tensor_strides(tv)[0] + 1 * opd_tensor_strides(tv)[1]], 5.0f);
  ck_assert_uint_eq(atomic_load(&tv->storage->refcount), 1);
  opd_tensor_release(tv);
}
END_TEST

START_TEST(test_view_bounds_checked) {
  int64_t sizes[] = {4};
  opd_tensor *base, *v = NULL;
  ck_assert_int_eq(opd_tensor_empty(sizes, 1, OPD_FLOAT64, cpu, &base), 0);
  int64_t vs[] = {3}, st[] = {1};
  ck_assert_int_eq(opd_tensor_view_of(base, vs, st, 1, 2, &v), OPD_EINVAL);
  ck_assert_ptr_null(v);
  ck_assert_int_eq(opd_tensor_view_of(base, vs, st, 1, -1, &v), OPD_EINVAL);
  ck_assert_int_eq(opd_tensor_view_of(base, vs, st, 1, 1, &v), 0);
  ck_assert_int_eq(v->storage_offset, 1);
  ck_assert_ptr_eq(opd_tensor_data(v), (double *)opd_tensor_data(base) + 1);
  int64_t zero[] = {0};
  opd_tensor *empty;
  ck_assert_int_eq(opd_tensor_view_of(base, zero, st, 1, 4, &empty), 0); /* empty: no reach */
  opd_tensor_release(empty);
  opd_tensor_release(v);
  opd_tensor_release(base);
}
END_TEST

/* Issue 12: geometry whose byte range wraps in uint64, or whose element offsets overflow int64,
 * is refused on every device ([Note: Checked arithmetic]); an empty view may sit anywhere. */
START_TEST(test_view_of_hostile_geometry) {
  const opd_device devices[] = {cpu, meta};
  int64_t three[] = {3}, s19[] = {19}, one[] = {1}, two[] = {2}, zero[] = {0};
  int64_t far[] = {(INT64_C(1) << 62) - 1}, max[] = {INT64_MAX};
  for (int k = 0; k < 2; k++) {
    opd_tensor *base, *v = NULL;
    ck_assert_int_eq(opd_tensor_empty(three, 1, OPD_FLOAT32, devices[k], &base), 0);
    /* (2^62 - 16 + 19) * 4 is 12 modulo 2^64 */
    ck_assert_int_eq(opd_tensor_view_of(base, s19, one, 1, (INT64_C(1) << 62) - 16, &v),
                     OPD_EINVAL);
    ck_assert_ptr_null(v);
    ck_assert_ptr_nonnull(strstr(opd_last_error(), "out of bounds"));
    ck_assert_int_eq(opd_tensor_view_of(base, two, far, 1, 0, &v), OPD_EINVAL);
    ck_assert_int_eq(opd_tensor_view_of(base, two, max, 1, 0, &v), OPD_EINVAL);
    ck_assert_int_eq(opd_tensor_view_of(base, one, one, 1, INT64_MAX, &v), OPD_EINVAL);
    ck_assert_ptr_null(v);
    ck_assert_int_eq(opd_tensor_view_of(base, zero, one, 1, INT64_MAX, &v), 0);
    ck_assert_int_eq(v->numel, 0);
    ck_assert_ptr_eq(opd_tensor_data(v), base->storage->data);
    opd_tensor_release(v);
    opd_tensor_release(base);
  }
}
END_TEST

START_TEST(test_version_counter_shared_by_views) {
  int64_t sizes[] = {3};
  opd_tensor *base, *v;
  ck_assert_int_eq(opd_tensor_empty(sizes, 1, OPD_INT32, cpu, &base), 0);
  int64_t vs[] = {2}, st[] = {1};
  ck_assert_int_eq(opd_tensor_view_of(base, vs, st, 1, 1, &v), 0);
  ck_assert_uint_eq(opd_tensor_version(base), 0);
  opd_tensor_bump_version(v);
  opd_tensor_bump_version(v);
  ck_assert_uint_eq(opd_tensor_version(base), 2);
  ck_assert_uint_eq(opd_tensor_version(v), 2);
  opd_tensor_release(v);
  opd_tensor_release(base);
}
END_TEST

START_TEST(test_contiguity_ignores_size_one_dims) {
  int64_t sizes[] = {1, 4};
  opd_tensor *base, *v;
  ck_assert_int_eq(opd_tensor_empty(sizes, 2, OPD_FLOAT32, cpu, &base), 0);
  int64_t odd[] = {99, 1};
  ck_assert_int_eq(opd_tensor_view_of(base, sizes, odd, 2, 0, &v), 0);
  ck_assert(opd_tensor_is_contiguous(v));
  opd_tensor_release(v);
  int64_t st2[] = {4, 2}, sz2[] = {1, 2};
  ck_assert_int_eq(opd_tensor_view_of(base, sz2, st2, 2, 0, &v), 0);
  ck_assert(!opd_tensor_is_contiguous(v));
  opd_tensor_release(v);
  opd_tensor_release(base);
}
END_TEST

START_TEST(test_meta_tensors_have_no_data) {
  int64_t sizes[] = {1000, 1000};
  opd_memory_stats before, after;
  opd_memory_stats_get(OPD_DEVICE_CPU, &before);
  opd_tensor *t;
  ck_assert_int_eq(opd_tensor_empty(sizes, 2, OPD_FLOAT64, meta, &t), 0);
  opd_memory_stats_get(OPD_DEVICE_CPU, &after);
  ck_assert_ptr_null(opd_tensor_data(t));
  ck_assert(opd_tensor_is_meta(t));
  ck_assert_uint_eq(after.in_use, before.in_use);
  ck_assert(opd_keyset_has(opd_tensor_key_set(t), OPD_KEY_Meta));
  ck_assert(opd_keyset_has(opd_tensor_key_set(t), OPD_KEY_AutogradMeta));
  ck_assert(!opd_keyset_has(opd_tensor_key_set(t), OPD_KEY_AutocastCPU));
  opd_tensor_release(t);
}
END_TEST

/* [Note: The memory of a tensor]: 0-d and 1-d CPU tensors of at most 8 bytes live in slab
 * slots; their data is 64-byte aligned at either parity of slot, distinct and writable. */
START_TEST(test_tiny_tensors_in_slab_slots) {
  enum { N = 40 };
  opd_tensor *t[N];
  int64_t one[] = {1}, two[] = {2};
  for (int i = 0; i < N; i++) {
    int rc = i % 3 == 0   ? opd_tensor_empty(NULL, 0, OPD_FLOAT64, cpu, &t[i])
             : i % 3 == 1 ? opd_tensor_empty(one, 1, OPD_FLOAT32, cpu, &t[i])
                          : opd_tensor_empty(two, 1, OPD_INT32, cpu, &t[i]);
    ck_assert_int_eq(rc, 0);
    ck_assert(t[i]->in_storage_block);
    ck_assert(t[i]->storage->in_slab);
    ck_assert_uint_eq((uintptr_t)opd_tensor_data(t[i]) % OPD_CPU_ALIGNMENT, 0);
    memset(opd_tensor_data(t[i]), i, t[i]->storage->nbytes);
  }
  for (int i = 0; i < N; i++) {
    const unsigned char *d = opd_tensor_data(t[i]);
    for (size_t b = 0; b < t[i]->storage->nbytes; b++) ck_assert_uint_eq(d[b], (unsigned)i);
    ck_assert_int_eq(t[i]->numel, i % 3 == 2 ? 2 : 1);
    ck_assert_int_eq(t[i]->ndim, i % 3 == 0 ? 0 : 1);
    opd_tensor_release(t[i]);
  }
  /* larger or higher-rank tensors are one block with their storage, data apart */
  int64_t nine[] = {9}, one_one[] = {1, 1};
  opd_tensor *big, *two_d;
  ck_assert_int_eq(opd_tensor_empty(nine, 1, OPD_UINT8, cpu, &big), 0);
  ck_assert_int_eq(opd_tensor_empty(one_one, 2, OPD_UINT8, cpu, &two_d), 0);
  ck_assert(big->in_storage_block && !big->storage->in_slab);
  ck_assert(two_d->in_storage_block && !two_d->storage->in_slab);
  ck_assert_uint_eq((uintptr_t)opd_tensor_data(big) % OPD_CPU_ALIGNMENT, 0);
  opd_tensor_release(big);
  opd_tensor_release(two_d);
}
END_TEST

START_TEST(test_tiny_tensor_limit_and_accounting) {
  opd_memory_stats s0, s1;
  opd_memory_stats_get(OPD_DEVICE_CPU, &s0);
  opd_tensor *t, *u = NULL;
  ck_assert_int_eq(opd_tensor_empty(NULL, 0, OPD_FLOAT64, cpu, &t), 0);
  opd_memory_stats_get(OPD_DEVICE_CPU, &s1);
  ck_assert_uint_eq(s1.in_use - s0.in_use, 8);
  opd_cpu_allocator_set_limit(s1.in_use + 4);
  ck_assert_int_eq(opd_tensor_empty(NULL, 0, OPD_FLOAT64, cpu, &u), OPD_ERESOURCE);
  ck_assert_ptr_null(u);
  ck_assert_int_eq(opd_tensor_empty(NULL, 0, OPD_FLOAT32, cpu, &u), 0); /* 4 bytes fit */
  opd_cpu_allocator_set_limit(0);
  opd_tensor_release(u);
  opd_tensor_release(t);
  opd_memory_stats_get(OPD_DEVICE_CPU, &s1);
  ck_assert_uint_eq(s1.in_use, s0.in_use);
}
END_TEST

/* A tensor made with its storage gives its memory back only with the storage: views read
 * the data after the base is gone (ASan checks the accesses). */
START_TEST(test_views_keep_tiny_storage_alive) {
  int64_t two[] = {2}, big[] = {3, 5};
  for (int k = 0; k < 2; k++) {
    opd_tensor *base, *view;
    ck_assert_int_eq(opd_tensor_empty(k ? big : two, k ? 2 : 1, OPD_INT32, cpu, &base), 0);
    int32_t *d = opd_tensor_data(base);
    d[1] = 41;
    int64_t none[1] = {0};
    ck_assert_int_eq(opd_tensor_view_of(base, none, none, 0, 1, &view), 0);
    opd_tensor_release(base);
    ck_assert_int_eq(*(int32_t *)opd_tensor_data(view), 41);
    opd_tensor_bump_version(view);
    ck_assert_uint_eq(opd_tensor_version(view), 1);
    opd_tensor_release(view);
  }
}
END_TEST

/* Makes tiny tensors on this thread and frees them on it, half of them after the other
 * thread made its own; the cache of free slots it keeps is given back when it ends. */
enum { PER_THREAD = 3000 };
typedef struct slab_worker {
  opd_tensor **mine;
  pthread_barrier_t *made;
} slab_worker;

static void *make_and_free(void *arg) {
  slab_worker *w = arg;
  for (int i = 0; i < PER_THREAD; i++)
    ck_assert_int_eq(opd_tensor_empty(NULL, 0, OPD_INT32, cpu, &w->mine[i]), 0);
  for (int i = 0; i < PER_THREAD / 2; i++) opd_tensor_release(w->mine[i]);
  pthread_barrier_wait(w->made);
  for (int i = PER_THREAD / 2; i < PER_THREAD; i++) {
    *(int32_t *)opd_tensor_data(w->mine[i]) = i; /* each slot its own */
    ck_assert_int_eq(*(int32_t *)opd_tensor_data(w->mine[i]), i);
    opd_tensor_release(w->mine[i]);
  }
  return NULL;
}

/* [Note: The slab's thread caches]: the slots two threads kept are back when they end. */
START_TEST(test_slab_thread_caches_go_back) {
  static opd_tensor *made[2][PER_THREAD];
  uint64_t before = opd_tensor_slab_bytes();
  pthread_barrier_t barrier;
  ck_assert_int_eq(pthread_barrier_init(&barrier, NULL, 2), 0);
  slab_worker w[2] = {{made[0], &barrier}, {made[1], &barrier}};
  pthread_t th[2];
  for (int k = 0; k < 2; k++)
    ck_assert_int_eq(pthread_create(&th[k], NULL, make_and_free, &w[k]), 0);
  for (int k = 0; k < 2; k++) ck_assert_int_eq(pthread_join(th[k], NULL), 0);
  pthread_barrier_destroy(&barrier);
  ck_assert_uint_le(opd_tensor_slab_bytes(), before + 65536); /* at most the kept page */
}
END_TEST

/* Makes PER_THREAD 8-byte tiny tensors, frees the first half and leaves the rest to the
 * main thread. */
static void *make_and_leave_half(void *arg) {
  opd_tensor **mine = arg;
  for (int i = 0; i < PER_THREAD; i++)
    ck_assert_int_eq(opd_tensor_empty(NULL, 0, OPD_FLOAT64, cpu, &mine[i]), 0);
  for (int i = 0; i < PER_THREAD / 2; i++) opd_tensor_release(mine[i]);
  return NULL;
}

/* [Note: The threads' credit for tiny tensors]: tensors made on two threads and freed on
 * them or on another count exactly, and the credits of the threads are back when they end:
 * a limit 8 bytes over the bytes in use then fits one more 8-byte tensor, and no second. */
START_TEST(test_tiny_credits_go_back) {
  static opd_tensor *made[2][PER_THREAD];
  opd_memory_stats s0, s;
  opd_memory_stats_get(OPD_DEVICE_CPU, &s0);
  pthread_t th[2];
  for (int k = 0; k < 2; k++)
    ck_assert_int_eq(pthread_create(&th[k], NULL, make_and_leave_half, made[k]), 0);
  for (int k = 0; k < 2; k++) ck_assert_int_eq(pthread_join(th[k], NULL), 0);
  opd_memory_stats_get(OPD_DEVICE_CPU, &s);
  ck_assert_uint_eq(s.in_use - s0.in_use, 2 * (PER_THREAD - PER_THREAD / 2) * 8);
  for (int k = 0; k < 2; k++)
    for (int i = PER_THREAD / 2; i < PER_THREAD; i++) opd_tensor_release(made[k][i]);
  opd_memory_stats_get(OPD_DEVICE_CPU, &s);
  ck_assert_uint_eq(s.in_use, s0.in_use);
  opd_cpu_allocator_set_limit(s0.in_use + 8);
  opd_tensor *one, *two = NULL;
  ck_assert_int_eq(opd_tensor_empty(NULL, 0, OPD_FLOAT64, cpu, &one), 0);
  ck_assert_int_eq(opd_tensor_empty(NULL, 0, OPD_FLOAT64, cpu, &two), OPD_ERESOURCE);
  ck_assert_ptr_null(two);
  opd_cpu_allocator_set_limit(0);
  opd_tensor_release(one);
  opd_memory_stats_get(OPD_DEVICE_CPU, &s);
  ck_assert_uint_eq(s.in_use, s0.in_use);
}
END_TEST

START_TEST(test_slab_pages_go_back) {
  enum { N = 5000 }; /* several pages of slots */
  static opd_tensor *t[N];
  uint64_t before = opd_tensor_slab_bytes();
  for (int i = 0; i < N; i++) ck_assert_int_eq(opd_tensor_empty(NULL, 0, OPD_INT8, cpu, &t[i]), 0);
  ck_assert_uint_ge(opd_tensor_slab_bytes(), before + (uint64_t)N * 96 - 65536);
  for (int i = 0; i < N; i += 2) opd_tensor_release(t[i]); /* every page keeps some */
  for (int i = 1; i < N; i += 2) opd_tensor_release(t[i]);
  opd_tensor_slab_flush_thread(); /* the slots this thread keeps to itself */
  /* at most one empty page is kept */
  ck_assert_uint_le(opd_tensor_slab_bytes(), before + 65536);
}
END_TEST

START_TEST(test_allocator_accounting_and_limit) {
  opd_cpu_allocator_empty_cache();
  opd_memory_stats s0, s1, s2;
  opd_memory_stats_get(OPD_DEVICE_CPU, &s0);
  int64_t mb[] = {1 << 20};
  opd_tensor *t, *u = NULL;
  ck_assert_int_eq(opd_tensor_empty(mb, 1, OPD_UINT8, cpu, &t), 0);
  opd_memory_stats_get(OPD_DEVICE_CPU, &s1);
  ck_assert_uint_eq(s1.in_use - s0.in_use, 1 << 20);
  ck_assert_uint_ge(s1.peak, s1.in_use);
  opd_cpu_allocator_set_limit(s1.in_use + (1 << 19));
  ck_assert_int_eq(opd_tensor_empty(mb, 1, OPD_UINT8, cpu, &u), OPD_ERESOURCE);
  ck_assert_ptr_null(u);
  ck_assert_ptr_nonnull(strstr(opd_last_error(), "exceed the limit"));
  opd_cpu_allocator_set_limit(0);
  ck_assert_int_eq(opd_tensor_empty(mb, 1, OPD_UINT8, cpu, &u), 0);
  opd_tensor_release(u);
  opd_tensor_release(t);
  opd_memory_stats_get(OPD_DEVICE_CPU, &s2);
  ck_assert_uint_eq(s2.in_use, s0.in_use);
}
END_TEST

START_TEST(test_allocator_cache_reuses_blocks) {
  opd_cpu_allocator_empty_cache();
  const opd_allocator *a = opd_cpu_allocator();
  void *p = a->alloc(a, cpu, 3 << 20);
  ck_assert_ptr_nonnull(p);
  memset(p, 1, 3 << 20);
  a->free(a, cpu, p, 3 << 20);
  opd_memory_stats s;
  opd_memory_stats_get(OPD_DEVICE_CPU, &s);
  ck_assert_uint_ge(s.cached, 3 << 20);
  /* a size in the same class gets the same block back */
  void *q = a->alloc(a, cpu, (3 << 20) - 100);
  ck_assert_ptr_eq(q, p);
  a->free(a, cpu, q, (3 << 20) - 100);
  opd_cpu_allocator_empty_cache();
  opd_memory_stats_get(OPD_DEVICE_CPU, &s);
  ck_assert_uint_eq(s.cached, 0);
  /* small blocks are aligned too */
  void *small = a->alloc(a, cpu, 3);
  ck_assert_uint_eq((uintptr_t)small % OPD_CPU_ALIGNMENT, 0);
  a->free(a, cpu, small, 3);
}
END_TEST

/* Whether transparent huge pages serve memory advised for them (mode "always" or
 * "madvise"). */
static bool thp_on_advice(void) {
  FILE *f = fopen("/sys/kernel/mm/transparent_hugepage/enabled", "r");
  char mode[128] = "";
  if (!f) return false;
  bool ok = fgets(mode, sizeof mode, f) && (strstr(mode, "[always]") || strstr(mode, "[madvise]"));
  fclose(f);
  return ok;
}

/* The THPeligible flag of the mapping that holds p in /proc/self/smaps (-1: not found). */
static int thp_eligible(const void *p) {
  FILE *f = fopen("/proc/self/smaps", "r");
  ck_assert_ptr_nonnull(f);
  char line[512];
  bool inside = false;
  int eligible = -1;
  while (eligible < 0 && fgets(line, sizeof line, f)) {
    unsigned long lo, hi;
    if (sscanf(line, "%lx-%lx ", &lo, &hi) == 2) /* a mapping's first line */
      inside = (uintptr_t)p >= lo && (uintptr_t)p < hi;
    else if (inside && strncmp(line, "THPeligible:", 12) == 0)
      eligible = atoi(line + 12);
  }
  fclose(f);
  return eligible;
}

/* [Note: The CPU allocator]: a block of OPD_CPU_HUGE_MIN bytes or more starts on a 2 MiB
 * boundary and is advised for huge pages; a smaller one is not moved there. */
START_TEST(test_large_blocks_on_huge_pages) {
  opd_cpu_allocator_empty_cache();
  const opd_allocator *a = opd_cpu_allocator();
  size_t big = OPD_CPU_HUGE_MIN + 4096;
  char *p = a->alloc(a, cpu, big);
  ck_assert_ptr_nonnull(p);
  ck_assert_uint_eq((uintptr_t)p % ((size_t)2 << 20), 0);
  memset(p, 7, big); /* all of it is the caller's */
  ck_assert_int_eq(p[big - 1], 7);
  if (thp_on_advice()) ck_assert_int_eq(thp_eligible(p), 1);
  a->free(a, cpu, p, big);
  char *q = a->alloc(a, cpu, OPD_CPU_HUGE_MIN / 2);
  ck_assert_ptr_nonnull(q);
  ck_assert_uint_eq((uintptr_t)q % OPD_CPU_ALIGNMENT, 0);
  a->free(a, cpu, q, OPD_CPU_HUGE_MIN / 2);
  opd_cpu_allocator_empty_cache();
  opd_memory_stats st;
  opd_memory_stats_get(OPD_DEVICE_CPU, &st);
  ck_assert_uint_eq(st.cached, 0);
}
END_TEST

START_TEST(test_promote_types) {
  ck_assert_int_eq(opd_promote_types(OPD_UINT8, OPD_INT8), OPD_INT16);
  ck_assert_int_eq(opd_promote_types(OPD_BOOL, OPD_INT32), OPD_INT32);
  ck_assert_int_eq(opd_promote_types(OPD_INT64, OPD_FLOAT16), OPD_FLOAT16);
  ck_assert_int_eq(opd_promote_types(OPD_FLOAT16, OPD_BFLOAT16), OPD_FLOAT32);
  ck_assert_int_eq(opd_promote_types(OPD_FLOAT32, OPD_FLOAT64), OPD_FLOAT64);
  ck_assert_int_eq(opd_promote_types(OPD_BOOL, OPD_BOOL), OPD_BOOL);
  for (int a = 0; a < 16; a++)
    for (int b = 0; b < 16; b++)
      if (opd_dtype_valid(a) && opd_dtype_valid(b))
        ck_assert_int_eq(opd_promote_types(a, b), opd_promote_types(b, a));
}
END_TEST

static opd_dtype result_of(opd_dtype t1, int nd1, opd_dtype t2, int nd2) {
  opd_result_type_state s = opd_result_type_init();
  opd_result_type_add_tensor(&s, t1, nd1);
  opd_result_type_add_tensor(&s, t2, nd2);
  return opd_result_type(&s);
}

START_TEST(test_result_type_categories) {
  /* FORMAT.md section 9 */
  ck_assert_int_eq(result_of(OPD_FLOAT32, 2, OPD_FLOAT64, 0), OPD_FLOAT32);
  ck_assert_int_eq(result_of(OPD_INT32, 2, OPD_FLOAT64, 0), OPD_FLOAT64);
  ck_assert_int_eq(result_of(OPD_INT32, 0, OPD_INT64, 0), OPD_INT64);
  ck_assert_int_eq(result_of(OPD_INT32, 1, OPD_INT64, 0), OPD_INT32);
  ck_assert_int_eq(result_of(OPD_BOOL, 1, OPD_INT64, 0), OPD_INT64);
  opd_result_type_state s = opd_result_type_init();
  opd_result_type_add_tensor(&s, OPD_INT32, 1);
  opd_result_type_add_scalar(&s, OPD_FLOAT64);
  ck_assert_int_eq(opd_result_type(&s), OPD_FLOAT32); /* int32 tensor + float: default dtype */
  s = opd_result_type_init();
  opd_result_type_add_tensor(&s, OPD_INT64, 1);
  opd_result_type_add_scalar(&s, OPD_INT64);
  ck_assert_int_eq(opd_result_type(&s), OPD_INT64);
  s = opd_result_type_init();
  opd_result_type_add_tensor(&s, OPD_UINT8, 1);
  opd_result_type_add_scalar(&s, OPD_INT64);
  ck_assert_int_eq(opd_result_type(&s), OPD_UINT8);
}
END_TEST

START_TEST(test_half_and_bfloat16_conversions) {
  const float exact[] = {
      0.0f, -0.0f, 1.0f, -2.5f, 65504.0f, 6.103515625e-05f, 5.960464477539063e-08f};
  for (size_t i = 0; i < sizeof exact / sizeof *exact; i++)
    ck_assert_float_eq(opd_half_to_float(opd_float_to_half(exact[i])), exact[i]);
  ck_assert(isinf(opd_half_to_float(opd_float_to_half(70000.0f))));
  ck_assert(isnan(opd_half_to_float(opd_float_to_half(NAN))));
  /* 1 + 2^-11 is halfway between two halves: ties to even gives 1 */
  ck_assert_float_eq(opd_half_to_float(opd_float_to_half(1.0f + 0x1p-11f)), 1.0f);
  ck_assert_float_eq(opd_bf16_to_float(opd_float_to_bf16(3.0f)), 3.0f);
  ck_assert_float_eq(opd_bf16_to_float(opd_float_to_bf16(1.0f + 0x1p-8f)), 1.0f);
  ck_assert(isnan(opd_bf16_to_float(opd_float_to_bf16(NAN))));
  opd_dtype t;
  ck_assert_int_eq(opd_dtype_from_name("Float", &t), 0);
  ck_assert_int_eq(t, OPD_FLOAT32);
  ck_assert_int_eq(opd_dtype_from_name("bfloat16", &t), 0);
  ck_assert_int_eq(t, OPD_BFLOAT16);
  ck_assert_int_eq(opd_dtype_from_name("complex64", &t), OPD_EINVAL);
  ck_assert_str_eq(opd_dtype_name(OPD_INT16), "int16");
  ck_assert_uint_eq(opd_dtype_size(OPD_BFLOAT16), 2);
}
END_TEST

Suite *opd_test_tensor_suite(void) {
  Suite *s = suite_create("tensor");
  TCase *tc = tcase_create("tensor");
  tcase_add_test(tc, test_empty_contiguous);
  tcase_add_test(tc, test_empty_rejects_bad_geometry);
  tcase_add_test(tc, test_many_dims);
  tcase_add_test(tc, test_tiny_tensors_in_slab_slots);
  tcase_add_test(tc, test_tiny_tensor_limit_and_accounting);
  tcase_add_test(tc, test_views_keep_tiny_storage_alive);
  tcase_add_test(tc, test_slab_pages_go_back);
  tcase_add_test(tc, test_slab_thread_caches_go_back);
  tcase_add_test(tc, test_tiny_credits_go_back);
  tcase_add_test(tc, test_view_shares_storage_and_outlives_base);
  tcase_add_test(tc, test_view_bounds_checked);
  tcase_add_test(tc, test_view_of_hostile_geometry);
  tcase_add_test(tc, test_version_counter_shared_by_views);
  tcase_add_test(tc, test_contiguity_ignores_size_one_dims);
  tcase_add_test(tc, test_meta_tensors_have_no_data);
  tcase_add_test(tc, test_allocator_accounting_and_limit);
  tcase_add_test(tc, test_allocator_cache_reuses_blocks);
  tcase_add_test(tc, test_large_blocks_on_huge_pages);
  tcase_add_test(tc, test_promote_types);
  tcase_add_test(tc, test_result_type_categories);
  tcase_add_test(tc, test_half_and_bfloat16_conversions);
  suite_add_tcase(s, tc);
  return s;
}

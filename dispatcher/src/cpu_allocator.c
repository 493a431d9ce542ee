/* cpu_allocator.c: the CPU allocator (see [Note: The CPU allocator] in opd/allocator.h). */
#define _DEFAULT_SOURCE /* madvise, MADV_HUGEPAGE */
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "opd/allocator.h"
#include "opd/error.h"
#include "opd/memory.h"
#include "tensor_internal.h"

/* Size classes above OPD_CPU_CACHE_MIN: four per power of two, up to 2^47 bytes. */
#define CLASSES_PER_POW2 4
#define MAX_POW2         47
#define NUM_CLASSES      ((MAX_POW2 - 16 + 1) * CLASSES_PER_POW2)
/* The cache holds at most this many bytes. */
#define CACHE_MAX        ((uint64_t)1 << 30)

typedef struct free_block {
  struct free_block *next;
} free_block;

static struct {
  pthread_mutex_t lock;
  free_block *lists[NUM_CLASSES];
  uint64_t cached;
} cache = {.lock = PTHREAD_MUTEX_INITIALIZER};

static _Atomic uint64_t in_use, peak, limit;

static size_t align_up(size_t n, size_t a) {
  return (n + a - 1) & ~(a - 1);
}

/* The class of a size that is cached, with its rounded size; -1 for sizes that are not. */
static int size_class(size_t n, size_t *rounded) {
  int p = n ? 63 - __builtin_clzll((unsigned long long)n) : 0; /* 2^p <= n < 2^(p+1) */
  if (n < OPD_CPU_CACHE_MIN || p > MAX_POW2) {
    *rounded = align_up(n ? n : 1, OPD_CPU_ALIGNMENT);
    return -1;
  }
  size_t r = align_up(n, (size_t)1 << (p - 2));         /* quarters of 2^p */
  int p2 = 63 - __builtin_clzll((unsigned long long)r); /* p, or p + 1 when r = 2^(p+1) */
  int c = (p2 - 16) * CLASSES_PER_POW2 + (int)((r - ((size_t)1 << p2)) >> (p2 - 2));
  *rounded = r;
  return c < NUM_CLASSES ? c : -1;
}

static void free_cached_locked(void) {
  for (int c = 0; c < NUM_CLASSES; c++) {
    while (cache.lists[c]) {
      free_block *b = cache.lists[c];
      cache.lists[c] = b->next;
      opd__aligned_free(b);
    }
  }
  cache.cached = 0;
}

void opd_cpu_allocator_empty_cache(void) {
  pthread_mutex_lock(&cache.lock);
  free_cached_locked();
  pthread_mutex_unlock(&cache.lock);
}

static bool reserve(uint64_t n) {
  uint64_t lim = atomic_load(&limit);
  /* a request's byte count can be up to INT64_MAX: one over the limit is refused before it is
   * counted, so that concurrent huge ones cannot wrap in_use past other allocations' checks */
  if (lim && n > lim) return false;
  uint64_t now = atomic_fetch_add(&in_use, n) + n;
  if (lim && now > lim) {
    atomic_fetch_sub(&in_use, n);
    return false;
  }
  uint64_t p = atomic_load(&peak);
  while (now > p && !atomic_compare_exchange_weak(&peak, &p, now)) {
  }
  return true;
}

/* Counts `rounded` bytes (for a request of `nbytes`) as in use: 0, or OPD_ERESOURCE when the
 * limit refuses them even with the cache emptied. */
static int account(size_t nbytes, size_t rounded) {
  if (reserve(rounded)) return 0;
  opd_cpu_allocator_empty_cache();
  uint64_t lim = atomic_load(&limit), used = atomic_load(&in_use);
  if (reserve(rounded)) return 0;
  return opd_error(OPD_ERESOURCE,
                   "CPU out of memory: allocating %zu bytes would exceed the limit of %llu bytes "
                   "(%llu in use)",
                   nbytes, (unsigned long long)lim, (unsigned long long)used);
}

/* [Note: The threads' credit for tiny tensors]
 * A tiny call makes one slab tensor and frees one, and counting their bytes into in_use took
 * a locked instruction each way, 2.3% of the daemon's CPU at 16 connections x 64. So a thread
 * counts tiny tensors against a credit of its own, read and written without a locked
 * instruction: it takes CREDIT_BYTES at a time from in_use (so the limit and the peak count
 * them as in use) and gives back what passes twice that. Near the limit, where the credit
 * cannot be taken, the tensor's own bytes are counted as before, and a limit lowered under
 * the bytes counted makes the thread give its credit back first. So the limit refuses at
 * most 2 * CREDIT_BYTES per other thread early. The bytes in use that cpu_stats reports are
 * in_use less every thread's credit (the credits are listed for it), so they are the bytes
 * tensors use, exact when no thread is allocating; the peak may hold a credit. A thread's
 * credit goes back when it ends (a pthread key's destructor); a free after that, by a later
 * destructor, is counted off in_use directly. */
#define CREDIT_BYTES 1024

typedef struct credit {
  _Atomic uint64_t bytes; /* written by its thread only (a relaxed load and store) */
  struct credit *prev, *next;
  bool keyed; /* listed, and the thread's end gives it back */
} credit;
static _Thread_local credit my_credit;
static struct {
  pthread_mutex_t lock;
  credit *head;
} credits = {.lock = PTHREAD_MUTEX_INITIALIZER};
static pthread_key_t credit_key;
static pthread_once_t credit_key_once = PTHREAD_ONCE_INIT;

static void credit_at_thread_end(void *arg) {
  credit *c = arg;
  pthread_mutex_lock(&credits.lock);
  if (c->prev)
    c->prev->next = c->next;
  else
    credits.head = c->next;
  if (c->next) c->next->prev = c->prev;
  atomic_fetch_sub(&in_use, atomic_load_explicit(&c->bytes, memory_order_relaxed));
  atomic_store_explicit(&c->bytes, 0, memory_order_relaxed);
  c->keyed = false;
  pthread_mutex_unlock(&credits.lock);
}

static void make_credit_key(void) {
  if (pthread_key_create(&credit_key, credit_at_thread_end) != 0) abort();
}

/* Lists the thread's credit, so that the stats see it and its end gives it back. */
static bool credit_list(credit *c) {
  pthread_once(&credit_key_once, make_credit_key);
  if (pthread_setspecific(credit_key, c) != 0) return false;
  pthread_mutex_lock(&credits.lock);
  c->prev = NULL;
  c->next = credits.head;
  if (credits.head) credits.head->prev = c;
  credits.head = c;
  c->keyed = true;
  pthread_mutex_unlock(&credits.lock);
  return true;
}

int opd__cpu_account_tiny(size_t nbytes) {
  credit *c = &my_credit;
  uint64_t have = atomic_load_explicit(&c->bytes, memory_order_relaxed);
  uint64_t lim = atomic_load_explicit(&limit, memory_order_relaxed);
  /* the credit was counted within the limit, unless the limit was lowered since */
  if (have >= nbytes && (!lim || atomic_load_explicit(&in_use, memory_order_relaxed) <= lim)) {
    atomic_store_explicit(&c->bytes, have - nbytes, memory_order_relaxed);
    return 0;
  }
  if (have) { /* used up, or over a lowered limit: given back before the bytes are counted */
    atomic_fetch_sub(&in_use, have);
    atomic_store_explicit(&c->bytes, 0, memory_order_relaxed);
  }
  if ((c->keyed || credit_list(c)) && reserve(nbytes + CREDIT_BYTES)) {
    atomic_store_explicit(&c->bytes, CREDIT_BYTES, memory_order_relaxed);
    return 0;
  }
  return account(nbytes, nbytes);
}

void opd__cpu_unaccount_tiny(size_t nbytes) {
  credit *c = &my_credit;
  if (!c->keyed) {
    atomic_fetch_sub(&in_use, nbytes);
    return;
  }
  uint64_t have = atomic_load_explicit(&c->bytes, memory_order_relaxed) + nbytes;
  if (have > 2 * CREDIT_BYTES) {
    atomic_fetch_sub(&in_use, have - CREDIT_BYTES);
    have = CREDIT_BYTES;
  }
  atomic_store_explicit(&c->bytes, have, memory_order_relaxed);
}

/* A zeroed block of OPD_CPU_HUGE_MIN bytes or more, backed by huge pages where the kernel has
 * them (see [Note: The CPU allocator]). */
static void *huge_alloc(size_t rounded, size_t with_tag) {
  void *p = opd__aligned_calloc(OPD__HUGE_PAGE, with_tag);
  /* advice only: without transparent huge pages the block keeps small pages */
  if (p) (void)madvise(p, rounded & ~(OPD__HUGE_PAGE - 1), MADV_HUGEPAGE);
  return p;
}

/* The owner of a cached size class's block ([Note: Memory cleared between owners] in
 * opd/allocator.h): a word after its `rounded` bytes (a multiple of the alignment). */
static uint64_t *owner_tag(void *block, size_t rounded) {
  return (uint64_t *)((char *)block + rounded);
}

static void *cpu_alloc(const opd_allocator *a, opd_device device, size_t nbytes) {
  (void)a, (void)device;
  size_t rounded;
  int c = size_class(nbytes, &rounded);
  if (account(nbytes, rounded)) return NULL;
  uint64_t owner = opd_mem_owner_current();
  if (c >= 0) {
    pthread_mutex_lock(&cache.lock);
    free_block *b = cache.lists[c];
    if (b) {
      cache.lists[c] = b->next;
      cache.cached -= rounded;
    }
    pthread_mutex_unlock(&cache.lock);
    if (b) {
      uint64_t *tag = owner_tag(b, rounded);
      if (*tag != owner) { /* what another owner left: zeroed whole, as a fresh block */
        memset(b, 0, rounded);
        *tag = owner;
      } else {
        b->next = NULL; /* the list's link, not the owner's data */
      }
      return b;
    }
  }
  /* zeroed: malloc recycles what its last user, maybe another owner, left in a block */
  size_t with_tag = c >= 0 ? rounded + sizeof(uint64_t) : rounded;
  void *p = rounded >= OPD_CPU_HUGE_MIN ? huge_alloc(rounded, with_tag)
                                        : opd__aligned_calloc(OPD_CPU_ALIGNMENT, with_tag);
  if (!p) {
    atomic_fetch_sub(&in_use, rounded);
    opd_error(OPD_ENOMEM, "CPU out of memory: the system refused %zu bytes", nbytes);
    return NULL;
  }
  if (c >= 0) *owner_tag(p, rounded) = owner;
  return p;
}

static void cpu_free(const opd_allocator *a, opd_device device, void *p, size_t nbytes) {
  (void)a, (void)device;
  if (!p) return;
  size_t rounded;
  int c = size_class(nbytes, &rounded);
  atomic_fetch_sub(&in_use, rounded);
  if (c >= 0) {
    pthread_mutex_lock(&cache.lock);
    if (cache.cached + rounded <= CACHE_MAX) {
      free_block *b = p;
      b->next = cache.lists[c];
      cache.lists[c] = b;
      cache.cached += rounded;
      p = NULL;
    }
    pthread_mutex_unlock(&cache.lock);
  }
  opd__aligned_free(p);
}

static void cpu_stats(const opd_allocator *a, int device_index, opd_memory_stats *out) {
  (void)a, (void)device_index;
  *out = (opd_memory_stats){0};
  pthread_mutex_lock(&credits.lock); /* [Note: The threads' credit for tiny tensors] */
  uint64_t credited = 0;
  for (const credit *c = credits.head; c; c = c->next)
    credited += atomic_load_explicit(&c->bytes, memory_order_relaxed);
  uint64_t used = atomic_load(&in_use);
  pthread_mutex_unlock(&credits.lock);
  out->in_use = used > credited ? used - credited : 0; /* a thread between its two writes */
  out->peak = atomic_load(&peak);
  out->limit = atomic_load(&limit);
  pthread_mutex_lock(&cache.lock);
  out->cached = cache.cached;
  pthread_mutex_unlock(&cache.lock);
}

static void cpu_empty_cache(const opd_allocator *a) {
  (void)a;
  opd_cpu_allocator_empty_cache();
}

static const opd_allocator cpu_allocator = {cpu_alloc, cpu_free, cpu_stats, cpu_empty_cache};

const opd_allocator *opd_cpu_allocator(void) {
  return &cpu_allocator;
}

void opd_cpu_allocator_set_limit(uint64_t bytes) {
  atomic_store(&limit, bytes);
}

void opd_memory_stats_reset_peak(int device_type) {
  if (device_type == OPD_DEVICE_CPU) atomic_store(&peak, atomic_load(&in_use));
}

int opd_cpu_allocator_reserve(uint64_t bytes) {
  return bytes ? account(bytes, bytes) : 0;
}

void opd_cpu_allocator_unreserve(uint64_t bytes) {
  atomic_fetch_sub(&in_use, bytes);
}

/* tensor_slab.c: the tensor slab, 96-byte slots for small CPU tensors with their storage and
 * data (see [Note: The memory of a tensor] in opd/tensor.h).
 *
 * Slots are carved from 64 KiB pages aligned to 64 KiB, so the page of a slot is its address
 * with the low bits cleared; the page's bookkeeping sits in the 64 bytes after its last
 * slot. Pages are mapped from the system directly. Pages with a free slot are on a list; a page
 * whose slots are all free is returned to the system, except one that is kept for the next
 * allocation. One lock guards it all: the critical sections are a few pointer moves.
 *
 * [Note: The slab's thread caches]
 * A tiny call makes one tensor and frees one, and the lock's two locked instructions each
 * way were 3% of the daemon's CPU. So each thread keeps up to CACHE_SLOTS free slots of its
 * own, taken and given without the lock: a free goes to the freeing thread's cache, an
 * allocation takes the cache's newest slot (the warmest); a full cache gives half of itself
 * back, an empty one takes CACHE_SLOTS / 2 under one lock. The pages count cached slots as
 * handed out, so a page stays mapped while a cache holds one of its slots: at most
 * CACHE_SLOTS per thread, given back when the thread ends (a pthread key's destructor) or
 * calls opd_tensor_slab_flush_thread. */
#define _DEFAULT_SOURCE /* MAP_ANONYMOUS */
#include <assert.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>

#include "opd/tensor.h"
#include "tensor_internal.h"
#include "opd/error.h"

#define PAGE_BYTES     ((size_t)64 * 1024)
#define SLOTS_PER_PAGE ((PAGE_BYTES - sizeof(page)) / OPD__TENSOR_SLOT_BYTES)

typedef struct page page;
struct page {
  page *prev, *next; /* the list of pages with a free slot */
  void *free;        /* freed slots, linked through their first word */
  uint32_t used;     /* slots handed out */
  uint32_t fresh;    /* slots below this index have been handed out at least once */
};
_Static_assert(OPD__TENSOR_SLOT_BYTES % 32 == 0 && OPD__TENSOR_SLOT_BYTES % 64 != 0,
               "every slot has one 64-byte aligned point, at offset 0 or 32");

static struct {
  pthread_mutex_t lock;
  page *partial;  /* pages with a free slot */
  page *spare;    /* an empty page kept for reuse */
  uint64_t pages; /* mapped */
} slab = {.lock = PTHREAD_MUTEX_INITIALIZER};

#define CACHE_SLOTS 128 /* a pipeline of 64 tiny calls, and their release, without the lock */
typedef struct thread_cache {
  void *slots[CACHE_SLOTS];
  unsigned n;
  bool keyed; /* the thread's key is set, so its end flushes the cache */
} thread_cache;
static _Thread_local thread_cache cache;
static pthread_key_t cache_key;
static pthread_once_t cache_key_once = PTHREAD_ONCE_INIT;

static char *page_base(const page *p) {
  return (char *)p - SLOTS_PER_PAGE * OPD__TENSOR_SLOT_BYTES;
}

static page *page_of(const void *slot) {
  char *base = (char *)((uintptr_t)slot & ~(uintptr_t)(PAGE_BYTES - 1));
  return (page *)(base + SLOTS_PER_PAGE * OPD__TENSOR_SLOT_BYTES);
}

static void unlink_partial(page *p) {
  if (p->prev)
    p->prev->next = p->next;
  else
    slab.partial = p->next;
  if (p->next) p->next->prev = p->prev;
  p->prev = p->next = NULL;
}

static void push_partial(page *p) {
  p->prev = NULL;
  p->next = slab.partial;
  if (slab.partial) slab.partial->prev = p;
  slab.partial = p;
}

/* A page from the system: mapped twice its size, the unaligned ends given back (the C
 * library's aligned_alloc would leave a header and fragments beside every page). */
static page *new_page(void) {
  char *map =
      mmap(NULL, 2 * PAGE_BYTES, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (map == MAP_FAILED) return NULL;
  char *base = (char *)(((uintptr_t)map + PAGE_BYTES - 1) & ~(uintptr_t)(PAGE_BYTES - 1));
  if (base > map) munmap(map, (size_t)(base - map));
  munmap(base + PAGE_BYTES, (size_t)(map + 2 * PAGE_BYTES - (base + PAGE_BYTES)));
  page *p = (page *)(base + SLOTS_PER_PAGE * OPD__TENSOR_SLOT_BYTES);
  *p = (page){0};
  return p;
}

/* A slot off the pages (the lock held), or NULL. */
static void *take_locked(void) {
  page *p = slab.partial;
  if (!p) {
    if (!(p = slab.spare) && (p = new_page())) slab.pages++;
    slab.spare = NULL;
    if (!p) return NULL;
    push_partial(p);
  }
  void *slot = p->free;
  if (slot)
    p->free = *(void **)slot;
  else
    slot = page_base(p) + (size_t)p->fresh++ * OPD__TENSOR_SLOT_BYTES;
  if (++p->used == SLOTS_PER_PAGE) unlink_partial(p);
  return slot;
}

/* A slot back to its page (the lock held). */
static void give_locked(void *slot) {
  page *p = page_of(slot);
  assert(p->used > 0);
  *(void **)slot = p->free;
  p->free = slot;
  if (p->used-- == SLOTS_PER_PAGE) push_partial(p);
  if (p->used == 0) {
    unlink_partial(p);
    if (slab.spare) {
      munmap(page_base(p), PAGE_BYTES);
      slab.pages--;
    } else {
      *p = (page){0};
      slab.spare = p;
    }
  }
}

/* Gives the cache's slots past the first `keep` back to the pages. */
static void cache_trim(thread_cache *c, unsigned keep) {
  pthread_mutex_lock(&slab.lock);
  while (c->n > keep) give_locked(c->slots[--c->n]);
  pthread_mutex_unlock(&slab.lock);
}

static void cache_at_thread_end(void *arg) {
  thread_cache *c = arg;
  cache_trim(c, 0);
  c->keyed = false; /* frees by later destructors go to the pages */
}

static void make_cache_key(void) {
  if (pthread_key_create(&cache_key, cache_at_thread_end) != 0) abort();
}

/* Fills an empty cache to half its capacity: false when no slot could be had. */
static bool cache_refill(thread_cache *c) {
  if (!c->keyed) { /* the thread's end must give its slots back */
    pthread_once(&cache_key_once, make_cache_key);
    if (pthread_setspecific(cache_key, c) != 0) return false;
    c->keyed = true;
  }
  pthread_mutex_lock(&slab.lock);
  for (void *slot; c->n < CACHE_SLOTS / 2 && (slot = take_locked());) c->slots[c->n++] = slot;
  pthread_mutex_unlock(&slab.lock);
  return c->n > 0;
}

void *opd__tensor_slab_alloc(void) {
  thread_cache *c = &cache;
  if (!c->n && !cache_refill(c)) {
    opd_error(OPD_ENOMEM, "out of memory allocating a tensor");
    return NULL;
  }
  return c->slots[--c->n];
}

void opd__tensor_slab_free(void *slot) {
  thread_cache *c = &cache;
  if (!c->keyed) { /* a thread that never allocated has no cache its end would give back */
    pthread_mutex_lock(&slab.lock);
    give_locked(slot);
    pthread_mutex_unlock(&slab.lock);
    return;
  }
  if (c->n == CACHE_SLOTS) cache_trim(c, CACHE_SLOTS / 2);
  c->slots[c->n++] = slot;
}

void opd_tensor_slab_flush_thread(void) {
  cache_trim(&cache, 0);
}

void *opd__tensor_slab_slot_of(const void *inside) {
  char *base = (char *)((uintptr_t)inside & ~(uintptr_t)(PAGE_BYTES - 1));
  size_t index = (size_t)((const char *)inside - base) / OPD__TENSOR_SLOT_BYTES;
  return base + index * OPD__TENSOR_SLOT_BYTES;
}

uint64_t opd_tensor_slab_bytes(void) {
  pthread_mutex_lock(&slab.lock);
  uint64_t bytes = slab.pages * PAGE_BYTES;
  pthread_mutex_unlock(&slab.lock);
  return bytes;
}

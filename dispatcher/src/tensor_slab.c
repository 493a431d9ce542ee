/* tensor_slab.c: the tensor slab, 96-byte slots for small CPU tensors with their storage and
 * data (see [Note: The memory of a tensor] in opd/tensor.h).
 *
 * Slots are carved from 64 KiB pages aligned to 64 KiB, so the page of a slot is its address
 * with the low bits cleared; the page's bookkeeping sits in the 64 bytes after its last
 * slot. Pages are mapped from the system directly. Pages with a free slot are on a list; a page
 * whose slots are all free is returned to the system, except one that is kept for the next
 * allocation. One lock guards it all: the critical sections are a few pointer moves. */
#define _DEFAULT_SOURCE /* MAP_ANONYMOUS */
#include <assert.h>
#include <pthread.h>
#include <stdint.h>
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

void *opd__tensor_slab_alloc(void) {
  pthread_mutex_lock(&slab.lock);
  page *p = slab.partial;
  if (!p) {
    if (!(p = slab.spare) && (p = new_page())) slab.pages++;
    slab.spare = NULL;
    if (!p) {
      pthread_mutex_unlock(&slab.lock);
      opd_error(OPD_ENOMEM, "out of memory allocating a tensor");
      return NULL;
    }
    push_partial(p);
  }
  void *slot = p->free;
  if (slot)
    p->free = *(void **)slot;
  else
    slot = page_base(p) + (size_t)p->fresh++ * OPD__TENSOR_SLOT_BYTES;
  if (++p->used == SLOTS_PER_PAGE) unlink_partial(p);
  pthread_mutex_unlock(&slab.lock);
  return slot;
}

void opd__tensor_slab_free(void *slot) {
  page *p = page_of(slot);
  pthread_mutex_lock(&slab.lock);
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
  pthread_mutex_unlock(&slab.lock);
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

/* arena.c: the bounded per-request bump allocator (see arena.h). */
#include "arena.h"

#include <assert.h>
#include <stdint.h>
#include <stdlib.h>

#include "opd/error.h"
#include "opd/memory.h"

#define ALIGN 16

struct opd__arena_chunk {
  opd__arena_chunk *next;
  size_t cap, used;
  _Alignas(ALIGN) char data[];
};

static void *pb_alloc(void *data, size_t n) {
  return opd__arena_alloc(data, n);
}

static void pb_free(void *data, void *p) {
  (void)data;
  (void)p; /* everything goes at the reset */
}

void opd__arena_init(opd__arena *a) {
  *a = (opd__arena){.pb = {pb_alloc, pb_free, a}};
}

int opd__arena_reserve_first(opd__arena *a, size_t n) {
  assert(a->total == 0 && !a->extra);
  if (a->cap >= n) return 0;
  char *p = opd__malloc(n);
  if (!p) return OPD_ENOMEM;
  opd__free(a->base);
  a->base = p;
  a->cap = n;
  return 0;
}

static void free_extra(opd__arena *a) {
  while (a->extra) {
    opd__arena_chunk *c = a->extra;
    a->extra = c->next;
    opd__free(c);
  }
}

void opd__arena_reset(opd__arena *a, size_t limit) {
  /* Grow the first block to what the last request needed, so the next one of that size
   * fits it; a request that needed more than OPD__ARENA_KEEP keeps using extra blocks. */
  if (a->extra && a->total > a->cap && a->total <= OPD__ARENA_KEEP) {
    char *p = opd__malloc(a->total);
    if (p) {
      opd__free(a->base);
      a->base = p;
      a->cap = a->total;
    }
  }
  free_extra(a);
  a->used = 0;
  a->total = 0;
  a->limit = limit;
  a->exceeded = false;
  a->out_of_memory = false;
}

static size_t round_up(size_t n) {
  return (n + ALIGN - 1) & ~(size_t)(ALIGN - 1);
}

void *opd__arena_alloc(opd__arena *a, size_t n) {
  if (n > SIZE_MAX / 2) return NULL;
  n = round_up(n ? n : 1);
  if (n > a->limit || a->total > a->limit - n) {
    a->exceeded = true;
    return NULL;
  }
  if (a->cap - a->used >= n) {
    void *p = a->base + a->used;
    a->used += n;
    a->total += n;
    return p;
  }
  opd__arena_chunk *c = a->extra;
  if (!c || c->cap - c->used < n) {
    size_t cap = n > 16384 ? n : 16384;
    c = opd__malloc(sizeof *c + cap);
    if (!c) {
      a->out_of_memory = true;
      return NULL;
    }
    c->cap = cap;
    c->used = 0;
    c->next = a->extra;
    a->extra = c;
  }
  void *p = c->data + c->used;
  c->used += n;
  a->total += n;
  return p;
}

void opd__arena_destroy(opd__arena *a) {
  free_extra(a);
  opd__free(a->base);
  *a = (opd__arena){0};
}

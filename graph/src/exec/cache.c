/* cache.c: the cache of compiled graphs: a bounded LRU shared by every worker.
 *
 * [Note: The compiled-graph cache]
 * Entries are compiled graphs under their key ([Note: The cache key] in cache_key.c), most
 * recently used first, at most `capacity` of them; the least recently used is evicted (the
 * cache drops its reference: a session still holding the graph goes on running it). A
 * lookup compares hashes, then the whole key. Each lookup also drops entries that a
 * registration made stale (an operator they call has another generation now): new defines
 * of such a graph get another key anyway, so the entry could only take room. Hits, misses,
 * evictions and invalidations are counted. One mutex guards it: lookups happen when a graph
 * is defined, never when it runs.
 */
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "exec/compiled.h"
#include "opd/error.h"
#include "opd/memory.h"

typedef struct entry {
  struct entry *prev, *next;
  opd_compiled_graph *cg;
} entry;

struct opd_graph_cache {
  pthread_mutex_t lock;
  entry *head, *tail;
  uint32_t size, capacity;
  uint64_t hits, misses, evictions, invalidations;
};

int opd_graph_cache_new(uint32_t capacity, opd_graph_cache **out) {
  if (capacity == 0) return opd_error(OPD_EINVAL, "a graph cache holds at least one graph");
  opd_graph_cache *c = opd__calloc(1, sizeof *c);
  if (!c) return opd_error(OPD_ENOMEM, "out of memory for a graph cache");
  pthread_mutex_init(&c->lock, NULL);
  c->capacity = capacity;
  *out = c;
  return 0;
}

static void unlink_entry(opd_graph_cache *c, entry *e) {
  if (e->prev)
    e->prev->next = e->next;
  else
    c->head = e->next;
  if (e->next)
    e->next->prev = e->prev;
  else
    c->tail = e->prev;
  e->prev = e->next = NULL;
  c->size--;
}

static void push_front(opd_graph_cache *c, entry *e) {
  e->prev = NULL;
  e->next = c->head;
  if (c->head) c->head->prev = e;
  c->head = e;
  if (!c->tail) c->tail = e;
  c->size++;
}

static void drop(opd_graph_cache *c, entry *e) {
  unlink_entry(c, e);
  opd_compiled_graph_release(e->cg);
  opd__free(e);
}

void opd_graph_cache_free(opd_graph_cache *c) {
  if (!c) return;
  while (c->head) drop(c, c->head);
  pthread_mutex_destroy(&c->lock);
  opd__free(c);
}

/* An operator of the graph was registered or deregistered since it was compiled. */
static bool stale(const opd_compiled_graph *cg) {
  for (uint32_t i = 0; i < cg->g->nops; i++)
    if (opd_op_generation(cg->g->ops[i].op) != cg->g->ops[i].generation) return true;
  return false;
}

opd_compiled_graph *opd__cache_find(opd_graph_cache *c, const char *key, uint64_t hash) {
  pthread_mutex_lock(&c->lock);
  opd_compiled_graph *found = NULL;
  for (entry *e = c->head, *next; e; e = next) {
    next = e->next;
    if (stale(e->cg)) {
      drop(c, e);
      c->invalidations++;
      continue;
    }
    if (!found && e->cg->key_hash == hash && strcmp(e->cg->key, key) == 0) {
      found = e->cg;
      unlink_entry(c, e);
      push_front(c, e);
    }
  }
  if (found) {
    opd_compiled_graph_retain(found);
    c->hits++;
  } else {
    c->misses++;
  }
  pthread_mutex_unlock(&c->lock);
  return found;
}

void opd__cache_add(opd_graph_cache *c, opd_compiled_graph *cg, opd_compiled_graph **out) {
  *out = cg;
  entry *e = opd__calloc(1, sizeof *e);
  pthread_mutex_lock(&c->lock);
  for (entry *x = c->head; x; x = x->next)
    if (x->cg->key_hash == cg->key_hash && strcmp(x->cg->key, cg->key) == 0) {
      *out = x->cg; /* another thread compiled it first */
      opd_compiled_graph_retain(x->cg);
      break;
    }
  if (*out == cg && e) {
    while (c->size >= c->capacity) {
      drop(c, c->tail);
      c->evictions++;
    }
    e->cg = cg;
    opd_compiled_graph_retain(cg);
    push_front(c, e);
    e = NULL;
  }
  pthread_mutex_unlock(&c->lock);
  opd__free(e);
}

void opd_graph_cache_stats_get(opd_graph_cache *c, opd_graph_cache_stats *out) {
  pthread_mutex_lock(&c->lock);
  *out = (opd_graph_cache_stats){c->hits,          c->misses, c->evictions,
                                 c->invalidations, c->size,   c->capacity};
  pthread_mutex_unlock(&c->lock);
}

void opd__cache_each(opd_graph_cache *c, void (*visit)(opd_compiled_graph *cg, void *arg),
                     void *arg) {
  pthread_mutex_lock(&c->lock);
  for (entry *e = c->head; e; e = e->next) visit(e->cg, arg);
  pthread_mutex_unlock(&c->lock);
}

opd_compiled_graph *opd_graph_cache_lookup_id(opd_graph_cache *c, uint64_t id) {
  opd_compiled_graph *found = NULL;
  pthread_mutex_lock(&c->lock);
  for (entry *e = c->head; e && !found; e = e->next)
    if (e->cg->id == id) found = e->cg;
  if (found) opd_compiled_graph_retain(found);
  pthread_mutex_unlock(&c->lock);
  return found;
}

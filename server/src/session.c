/* session.c: a session's handle table, storage accounting and limits (see
 * [Note: Sessions and handles] in session.h). */
#include "session.h"

#include <assert.h>
#include <stdlib.h>

#include "gpu.h"
#include "opd/graph_exec.h"
#include "opd/error.h"
#include "opd/memory.h"

/* ---- the map: linear probing, Fibonacci hashing, backward-shift deletion ---- */

static size_t map_slot(const opd__map *m, uint64_t key) {
  return (size_t)((key * UINT64_C(0x9E3779B97F4A7C15)) >> m->shift);
}

static uint64_t *map_get(const opd__map *m, uint64_t key) {
  if (!m->cap) return NULL;
  for (size_t i = map_slot(m, key);; i = (i + 1) & (m->cap - 1)) {
    if (m->keys[i] == key) return &m->vals[i];
    if (m->keys[i] == 0) return NULL;
  }
}

static void map_insert_fresh(opd__map *m, uint64_t key, uint64_t val) {
  size_t i = map_slot(m, key);
  while (m->keys[i]) i = (i + 1) & (m->cap - 1);
  m->keys[i] = key;
  m->vals[i] = val;
  m->count++;
}

/* Doubles the map (64 entries at first): 0 or OPD_ENOMEM. */
static int map_grow(opd__map *m) {
  size_t cap = m->cap ? m->cap * 2 : 64;
  unsigned shift = 64;
  for (size_t c = cap; c > 1; c >>= 1) shift--;
  opd__map bigger = {opd__calloc(cap, sizeof(uint64_t)), opd__malloc(cap * sizeof(uint64_t)), cap,
                     0, shift};
  if (!bigger.keys || !bigger.vals) {
    opd__free(bigger.keys);
    opd__free(bigger.vals);
    return opd_error(OPD_ENOMEM, "out of memory growing a session's handle table");
  }
  for (size_t i = 0; i < m->cap; i++)
    if (m->keys[i]) map_insert_fresh(&bigger, m->keys[i], m->vals[i]);
  opd__free(m->keys);
  opd__free(m->vals);
  *m = bigger;
  return 0;
}

/* Makes room for one more entry (load at most 3/4): 0 or OPD_ENOMEM. */
static inline int map_reserve(opd__map *m) {
  return (m->count + 1) * 4 <= m->cap * 3 ? 0 : map_grow(m);
}

static void map_delete(opd__map *m, uint64_t *val) {
  size_t i = (size_t)(val - m->vals), mask = m->cap - 1;
  for (size_t j = (i + 1) & mask; m->keys[j]; j = (j + 1) & mask) {
    size_t home = map_slot(m, m->keys[j]);
    /* move j back to the hole at i unless its home lies in (i, j] (cyclically) */
    if (((j - home) & mask) >= ((j - i) & mask)) {
      m->keys[i] = m->keys[j];
      m->vals[i] = m->vals[j];
      i = j;
    }
  }
  m->keys[i] = 0;
  m->count--;
}

static void map_free(opd__map *m) {
  opd__free(m->keys);
  opd__free(m->vals);
  *m = (opd__map){0};
}

/* ---- sessions ---- */

void opd__session_init(opd__session *s, uint64_t id, const opd_server_config *cfg) {
  *s = (opd__session){.id = id, .cfg = cfg, .next_handle = 1};
  s->budget = (opd_mem_budget){.held = &s->bytes_held,
                               .limit = cfg->max_bytes_held,
                               .limit_name = "max_bytes_held",
                               .owner = "session",
                               .owner_id = opd_mem_owner_new()};
  s->dispatch = opd_default_dispatch_state;
  opd_generator_init(&s->rng, OPD_DEFAULT_SEED);
  opd__session_publish_dispatch(s);
}

void opd__session_publish_dispatch(opd__session *s) {
  atomic_store_explicit(&s->included_repr, s->dispatch.included.repr, memory_order_relaxed);
  atomic_store_explicit(&s->excluded_repr, s->dispatch.excluded.repr, memory_order_relaxed);
}

void opd__session_registry_init(opd__session_registry *r) {
  pthread_mutex_init(&r->mu, NULL);
  r->head = NULL;
}

void opd__session_registry_destroy(opd__session_registry *r) {
  assert(!r->head);
  pthread_mutex_destroy(&r->mu);
}

void opd__session_register(opd__session_registry *r, opd__session *s) {
  pthread_mutex_lock(&r->mu);
  s->reg_prev = NULL;
  s->reg_next = r->head;
  if (r->head) r->head->reg_prev = s;
  r->head = s;
  pthread_mutex_unlock(&r->mu);
}

void opd__session_unregister(opd__session_registry *r, opd__session *s) {
  pthread_mutex_lock(&r->mu);
  if (!s->reg_prev && r->head != s) { /* never registered (its accept failed) */
    pthread_mutex_unlock(&r->mu);
    return;
  }
  if (s->reg_prev)
    s->reg_prev->reg_next = s->reg_next;
  else
    r->head = s->reg_next;
  if (s->reg_next) s->reg_next->reg_prev = s->reg_prev;
  s->reg_prev = s->reg_next = NULL;
  pthread_mutex_unlock(&r->mu);
}

static uint64_t storage_bytes(const opd_tensor *t) {
  return t->storage && t->storage->data ? t->storage->nbytes : 0;
}

void opd__session_destroy(opd__session *s) {
  opd__gpu_session_end(s); /* CUDA tensors and streams go to the reaper, off the loop */
  for (size_t i = 0; i < s->handles.cap; i++)
    if (s->handles.keys[i]) opd_tensor_release((opd_tensor *)(uintptr_t)s->handles.vals[i]);
  map_free(&s->handles);
  map_free(&s->storages);
  for (size_t i = 0; i < s->graphs.cap; i++)
    if (s->graphs.keys[i])
      opd_compiled_graph_release((opd_compiled_graph *)(uintptr_t)s->graphs.vals[i]);
  map_free(&s->graphs);
}

opd_compiled_graph *opd__session_graph(opd__session *s, uint64_t id) {
  uint64_t *v = id ? map_get(&s->graphs, id) : NULL;
  return v ? (opd_compiled_graph *)(uintptr_t)*v : NULL;
}

int opd__session_add_graph(opd__session *s, uint64_t id, opd_compiled_graph *cg) {
  assert(id && !opd__session_graph(s, id));
  int rc = map_reserve(&s->graphs);
  if (rc < 0) return rc;
  map_insert_fresh(&s->graphs, id, (uint64_t)(uintptr_t)cg);
  atomic_store_explicit(&s->num_graphs, s->graphs.count, memory_order_relaxed);
  return 0;
}

opd_compiled_graph *opd__session_take_graph(opd__session *s, uint64_t id) {
  uint64_t *v = id ? map_get(&s->graphs, id) : NULL;
  if (!v) return NULL;
  opd_compiled_graph *cg = (opd_compiled_graph *)(uintptr_t)*v;
  map_delete(&s->graphs, v);
  atomic_store_explicit(&s->num_graphs, s->graphs.count, memory_order_relaxed);
  return cg;
}

opd_tensor *opd__session_lookup(opd__session *s, uint64_t handle) {
  if (handle == 0) return NULL;
  uint64_t *v = map_get(&s->handles, handle);
  return v ? (opd_tensor *)(uintptr_t)*v : NULL;
}

int opd__session_reserve(opd__session *s, uint64_t bytes) {
  return opd_mem_budget_reserve(&s->budget, bytes);
}

void opd__session_unreserve(opd__session *s, uint64_t bytes) {
  opd_mem_budget_release(&s->budget, bytes);
}

int opd__session_hold(opd__session *s, opd_tensor *t, uint64_t *reserved, uint64_t *handle) {
  if (s->handles.count >= s->cfg->max_handles)
    return opd_error(OPD_ERESOURCE,
                     "session limit reached: the session holds %zu tensor handles (max_handles); "
                     "release some first",
                     s->handles.count);
  uint64_t skey = (uint64_t)(uintptr_t)t->storage;
  uint64_t *count = skey ? map_get(&s->storages, skey) : NULL;
  uint64_t add = count ? 0 : storage_bytes(t);
  int rc;
  if (add > *reserved && (rc = opd__session_reserve(s, add - *reserved)) < 0) return rc;
  if ((rc = map_reserve(&s->handles)) < 0 ||
      (skey && !count && (rc = map_reserve(&s->storages)) < 0)) {
    if (add > *reserved) opd__session_unreserve(s, add - *reserved);
    return rc;
  }
  if (add < *reserved) opd__session_unreserve(s, *reserved - add);
  *reserved = 0;
  if (count)
    ++*count;
  else if (skey)
    map_insert_fresh(&s->storages, skey, 1);
  *handle = s->next_handle++; /* the caller's reference is the table's now */
  map_insert_fresh(&s->handles, *handle, (uint64_t)(uintptr_t)t);
  atomic_store_explicit(&s->num_handles, s->handles.count, memory_order_relaxed);
  return 0;
}

int opd__session_drop(opd__session *s, uint64_t handle) {
  uint64_t *v = handle ? map_get(&s->handles, handle) : NULL;
  if (!v) return OPD_ENOENT;
  opd_tensor *t = (opd_tensor *)(uintptr_t)*v;
  map_delete(&s->handles, v);
  atomic_store_explicit(&s->num_handles, s->handles.count, memory_order_relaxed);
  uint64_t skey = (uint64_t)(uintptr_t)t->storage;
  if (skey) {
    uint64_t *count = map_get(&s->storages, skey);
    assert(count && *count > 0);
    if (--*count == 0) {
      opd__session_unreserve(s, storage_bytes(t));
      map_delete(&s->storages, count);
    }
  }
  opd_tensor_release(t);
  return 0;
}

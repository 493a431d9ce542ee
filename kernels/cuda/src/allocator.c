/* allocator.c: the CUDA caching allocator (one per process, serving every device) and the
 * statistics and limit behind opd_cuda_set_memory_limit and opd_cuda_empty_cache.
 *
 * [Note: The CUDA caching allocator]
 * cudaMalloc and cudaFree are slow (cudaFree synchronizes the device), so released blocks
 * are cached and reused, as PyTorch's CUDACachingAllocator does, in a simpler form:
 *  - a request is rounded up to a size class: multiples of 512 bytes up to 1 MiB, then four
 *    classes per power of two; a block serves only requests of its class (no splitting);
 *  - a block remembers the stream it was allocated on (opd__cuda_stream_key: the current
 *    stream, or the calling thread's per-thread default stream). A released block is reused
 *    only for a request on that same stream: work queued on a stream runs in order, so the
 *    next user of the block cannot overtake the last one. A tensor used on another stream
 *    than the one it was allocated on must be synchronized by its user before release;
 *  - when a stream is destroyed (opd_cuda_stream_destroy, e.g. as a daemon session ends),
 *    it is synchronized first, so no work of it can still touch its blocks: its cached blocks,
 *    and its live ones once released, then belong to no stream and serve a request on any
 *    stream (which then owns the block). Without this every ended session would leave its
 *    cached blocks behind, unusable, and the cache would grow per session;
 *  - a block remembers its owner (the budget installed on the thread: a daemon's session), and
 *    one taken by another owner, or fresh from cudaMalloc, is zeroed on the taker's stream
 *    before it is handed out ([Note: Memory cleared between owners] in opd/allocator.h); a
 *    block reused by its owner is not;
 *  - after warm-up an allocation is a bucket lookup under the device's mutex: no cudaMalloc
 *    and no host malloc (block records move between the live table and the free lists);
 *  - bytes in use, cached and the peak are counted per device. A configured limit
 *    (opd_cuda_set_memory_limit) caps in use + cached: the cache is emptied before a
 *    request is refused. When cudaMalloc runs out of memory the device's cache is freed and
 *    the call retried once; then the request fails with OPD_ERESOURCE naming the sizes.
 * Memory is only ever cudaMalloc'ed (never managed memory).
 */
#include <assert.h>
#include <pthread.h>
#include <stdlib.h>

#include "cuda_internal.h"
#include "opd/allocator.h"
#include "opd/cuda.h"
#include "opd/error.h"
#include "opd/memory.h"

#define SMALL_LIMIT   ((size_t)1 << 20)
#define SMALL_QUANTUM 512
/* classes: 2048 small ones (512 B .. 1 MiB), then 4 per power of two up to 2^63 */
#define NCLASSES      ((int)(SMALL_LIMIT / SMALL_QUANTUM) + 4 * 44)
/* the owner of memory fresh from cudaMalloc: whatever the process freed there before */
#define UNKNOWN_OWNER UINT64_MAX

typedef struct block {
  void *ptr;
  size_t size;        /* the class size */
  const void *stream; /* opd__cuda_stream_key; NULL: any stream (its stream was destroyed) */
  uint64_t owner;     /* whose data it holds: an opd_mem_budget owner id, or UNKNOWN_OWNER */
  struct block *next;
} block;

typedef struct device_pool {
  pthread_mutex_t lock;
  block *free_lists[NCLASSES];
  block **live; /* open hash by pointer, chained through next */
  size_t live_buckets, live_count;
  block *spare; /* unused records */
  uint64_t in_use, cached, peak, limit;
} device_pool;

static device_pool pools[OPD_CUDA_MAX_DEVICES];
static pthread_once_t pools_once = PTHREAD_ONCE_INIT;

/* The device memory the pools draw from: the CUDA runtime's, or a test's. */
static const opd__cuda_raw_ops runtime_ops = {.use_device = opd__cuda_use_device,
                                              .malloc = opd__cuda_raw_malloc,
                                              .free = opd__cuda_raw_free,
                                              .stream_key = opd__cuda_stream_key,
                                              .memset0 = opd__cuda_memset0};
static const opd__cuda_raw_ops *raw = &runtime_ops;

void opd__cuda_allocator_set_raw_ops(const opd__cuda_raw_ops *ops) {
  raw = ops ? ops : &runtime_ops;
}

static void pools_init(void) {
  for (int d = 0; d < OPD_CUDA_MAX_DEVICES; d++) pthread_mutex_init(&pools[d].lock, NULL);
}

/* The class of a request and its size; -1 when the size has no class (too large). */
static int size_class(size_t n, size_t *class_size) {
  if (n == 0) n = 1;
  if (n <= SMALL_LIMIT) {
    size_t q = (n + SMALL_QUANTUM - 1) / SMALL_QUANTUM;
    *class_size = q * SMALL_QUANTUM;
    return (int)q - 1;
  }
  int lg = 63 - __builtin_clzll((unsigned long long)n - 1); /* 2^lg < n <= 2^(lg+1) */
  if (lg >= 62) return -1;
  size_t base = (size_t)1 << lg, step = base / 4;
  size_t k = (n - base + step - 1) / step; /* 1..4 */
  *class_size = base + k * step;
  return (int)(SMALL_LIMIT / SMALL_QUANTUM) + 4 * (lg - 20) + (int)k - 1;
}

static size_t hash_ptr(const void *p, size_t buckets) {
  return (size_t)(((uintptr_t)p >> 9) * 0x9E3779B97F4A7C15ull) & (buckets - 1);
}

static int live_grow(device_pool *pool) {
  size_t nb = pool->live_buckets ? pool->live_buckets * 2 : 256;
  block **t = opd__calloc(nb, sizeof *t);
  if (!t) return opd_error(OPD_ENOMEM, "CUDA allocator: out of host memory");
  for (size_t i = 0; i < pool->live_buckets; i++)
    for (block *b = pool->live[i], *next; b; b = next) {
      next = b->next;
      size_t h = hash_ptr(b->ptr, nb);
      b->next = t[h];
      t[h] = b;
    }
  opd__free(pool->live);
  pool->live = t;
  pool->live_buckets = nb;
  return 0;
}

/* Frees every cached block of the pool (lock held). */
static void release_cache(int device, device_pool *pool) {
  for (int c = 0; c < NCLASSES; c++) {
    for (block *b = pool->free_lists[c], *next; b; b = next) {
      next = b->next;
      raw->free(device, b->ptr);
      pool->cached -= b->size;
      b->next = pool->spare;
      pool->spare = b;
    }
    pool->free_lists[c] = NULL;
  }
  assert(pool->cached == 0);
}

static int format_error(int device, size_t want, const device_pool *pool, const char *why) {
  return opd_error(OPD_ERESOURCE,
                   "CUDA out of memory on device %d: tried to allocate %zu bytes (%s; %llu bytes "
                   "in use, %llu cached, limit %llu)",
                   device, want, why, (unsigned long long)pool->in_use,
                   (unsigned long long)pool->cached, (unsigned long long)pool->limit);
}

void *opd__cuda_alloc(int device, size_t nbytes) {
  if (raw->use_device(device)) return NULL;
  pthread_once(&pools_once, pools_init);
  size_t size;
  int c = size_class(nbytes, &size);
  if (c < 0) {
    opd_error(OPD_ERESOURCE, "CUDA allocation of %zu bytes is too large", nbytes);
    return NULL;
  }
  device_pool *pool = &pools[device];
  const void *stream = raw->stream_key(device);
  uint64_t owner = opd_mem_owner_current();
  pthread_mutex_lock(&pool->lock);
  if (pool->limit && pool->in_use + size > pool->limit) {
    format_error(device, nbytes, pool, "over the configured limit");
    goto fail;
  }
  block **link = &pool->free_lists[c], *b = NULL;
  for (; *link; link = &(*link)->next)
    if ((*link)->stream == stream || !(*link)->stream) {
      b = *link;
      *link = b->next;
      pool->cached -= b->size;
      b->stream = stream;
      break;
    }
  if (!b) {
    if (pool->limit && pool->in_use + pool->cached + size > pool->limit)
      release_cache(device, pool);
    if (!(b = pool->spare) && !(b = opd__malloc(sizeof *b))) {
      opd_error(OPD_ENOMEM, "CUDA allocator: out of host memory");
      goto fail;
    }
    if (b == pool->spare) pool->spare = b->next;
    int rc = raw->malloc(device, size, &b->ptr);
    if (rc == OPD_ERESOURCE) { /* free the cache, retry once */
      release_cache(device, pool);
      rc = raw->malloc(device, size, &b->ptr);
      if (rc == OPD_ERESOURCE) format_error(device, nbytes, pool, "cudaMalloc failed");
    }
    if (rc) {
      b->next = pool->spare;
      pool->spare = b;
      goto fail;
    }
    b->size = size;
    b->stream = stream;
    b->owner = UNKNOWN_OWNER;
  }
  if (pool->live_count >= pool->live_buckets && live_grow(pool)) {
    b->next = pool->free_lists[c];
    pool->free_lists[c] = b;
    pool->cached += b->size;
    goto fail;
  }
  size_t h = hash_ptr(b->ptr, pool->live_buckets);
  b->next = pool->live[h];
  pool->live[h] = b;
  pool->live_count++;
  pool->in_use += b->size;
  if (pool->in_use > pool->peak) pool->peak = pool->in_use;
  void *p = b->ptr;
  bool clear = b->owner != owner;
  pthread_mutex_unlock(&pool->lock);
  if (clear) { /* on the stream the taker's work is queued on, so before any of it */
    if (raw->memset0(device, p, size)) {
      opd__cuda_free(device, p, nbytes); /* still the last owner's */
      return NULL;
    }
    b->owner = owner; /* a live block: only its holder touches it */
  }
  return p;
fail:
  pthread_mutex_unlock(&pool->lock);
  return NULL;
}

void opd__cuda_free(int device, void *p, size_t nbytes) {
  (void)nbytes;
  if (!p) return;
  assert(device >= 0 && device < OPD_CUDA_MAX_DEVICES);
  device_pool *pool = &pools[device];
  pthread_mutex_lock(&pool->lock);
  block **link = pool->live_buckets ? &pool->live[hash_ptr(p, pool->live_buckets)] : NULL;
  while (link && *link && (*link)->ptr != p) link = &(*link)->next;
  assert(link && *link && "freeing a block the CUDA allocator did not hand out");
  if (link && *link) {
    block *b = *link;
    *link = b->next;
    pool->live_count--;
    pool->in_use -= b->size;
    size_t size;
    int c = size_class(b->size, &size);
    assert(c >= 0 && size == b->size);
    b->next = pool->free_lists[c];
    pool->free_lists[c] = b;
    pool->cached += b->size;
  }
  pthread_mutex_unlock(&pool->lock);
}

void opd__cuda_allocator_stream_destroyed(int device, const void *stream) {
  assert(device >= 0 && device < OPD_CUDA_MAX_DEVICES && stream);
  pthread_once(&pools_once, pools_init);
  device_pool *pool = &pools[device];
  pthread_mutex_lock(&pool->lock);
  for (int c = 0; c < NCLASSES; c++)
    for (block *b = pool->free_lists[c]; b; b = b->next)
      if (b->stream == stream) b->stream = NULL;
  for (size_t i = 0; i < pool->live_buckets; i++)
    for (block *b = pool->live[i]; b; b = b->next)
      if (b->stream == stream) b->stream = NULL;
  pthread_mutex_unlock(&pool->lock);
}

void opd__cuda_allocator_empty(int device) {
  assert(device >= 0 && device < OPD_CUDA_MAX_DEVICES);
  pthread_once(&pools_once, pools_init);
  pthread_mutex_lock(&pools[device].lock);
  release_cache(device, &pools[device]);
  pthread_mutex_unlock(&pools[device].lock);
}

int opd_cuda_set_memory_limit(int device, uint64_t bytes) {
  if (opd_cuda_device_count() == 0)
    return opd_error(OPD_EUNAVAILABLE, "CUDA unavailable: %s",
                     opd_cuda_unavailable_reason() ? opd_cuda_unavailable_reason() : "unknown");
  if (device < 0 || device >= opd_cuda_device_count())
    return opd_error(OPD_EINVAL, "CUDA device %d does not exist", device);
  pthread_once(&pools_once, pools_init);
  pthread_mutex_lock(&pools[device].lock);
  pools[device].limit = bytes;
  pthread_mutex_unlock(&pools[device].lock);
  return 0;
}

void opd_cuda_empty_cache(void) {
  for (int d = 0; d < opd_cuda_device_count(); d++) opd__cuda_allocator_empty(d);
}

/* ---- the registered allocators ---- */

/* A CUDA device index: -1 ("the current device") is device 0. */
static int device_index(opd_device device) {
  return device.index < 0 ? 0 : device.index;
}

static void *cuda_alloc(const opd_allocator *a, opd_device device, size_t nbytes) {
  (void)a;
  return opd__cuda_alloc(device_index(device), nbytes);
}

static void cuda_free(const opd_allocator *a, opd_device device, void *p, size_t nbytes) {
  (void)a;
  opd__cuda_free(device_index(device), p, nbytes);
}

static void cuda_stats(const opd_allocator *a, int device_index, opd_memory_stats *out) {
  (void)a;
  *out = (opd_memory_stats){0};
  if (device_index < 0) device_index = 0;
  if (device_index >= opd_cuda_device_count()) return;
  device_pool *pool = &pools[device_index];
  pthread_mutex_lock(&pool->lock);
  *out = (opd_memory_stats){
      .in_use = pool->in_use, .peak = pool->peak, .cached = pool->cached, .limit = pool->limit};
  pthread_mutex_unlock(&pool->lock);
}

static void cuda_empty_cache(const opd_allocator *a) {
  (void)a;
  opd_cuda_empty_cache();
}

static const opd_allocator cuda_allocator = {
    .alloc = cuda_alloc, .free = cuda_free, .stats = cuda_stats, .empty_cache = cuda_empty_cache};

int opd__cuda_allocator_register(bool available) {
  pthread_once(&pools_once, pools_init);
  return available ? opd_allocator_register(OPD_DEVICE_CUDA, &cuda_allocator)
                   : opd__cuda_register_unavailable();
}

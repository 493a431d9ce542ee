/* opd/allocator.h: device memory allocators and their accounting.
 *
 * [Note: The CPU allocator]
 * All CPU tensor storage comes from one allocator. Blocks are 64-byte aligned. It counts
 * bytes in use and the peak, and refuses an allocation that would take the bytes in use
 * past the configured limit (OPD_ERESOURCE, with a message that names the sizes). Blocks of
 * OPD_CPU_CACHE_MIN bytes or more are rounded up to a size class (four classes per power of
 * two) and kept on a free list when released, so that a fresh output of a size seen before
 * reuses warm pages instead of paying page faults; the cache is bounded and is emptied
 * before an allocation fails for the limit.
 */
#ifndef OPD_ALLOCATOR_H
#define OPD_ALLOCATOR_H

#include <stddef.h>
#include <stdint.h>

#include "opd/dispatch_key.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Device types are backend components. */
#define OPD_DEVICE_CPU  OPD_BACKEND_CPU
#define OPD_DEVICE_CUDA OPD_BACKEND_CUDA
#define OPD_DEVICE_META OPD_BACKEND_Meta

#define OPD_CPU_ALIGNMENT 64
#define OPD_CPU_CACHE_MIN (64 * 1024)

typedef struct opd_allocator opd_allocator;
struct opd_allocator {
  /* Returns the block, or NULL with an opd error recorded. */
  void *(*alloc)(const opd_allocator *a, size_t nbytes);
  void (*free)(const opd_allocator *a, void *p, size_t nbytes);
};

typedef struct opd_memory_stats {
  uint64_t in_use; /* bytes of live storage */
  uint64_t peak;   /* highest in_use since start (or the last reset) */
  uint64_t cached; /* bytes held by the cache for reuse */
  uint64_t limit;  /* 0: none */
} opd_memory_stats;

const opd_allocator *opd_cpu_allocator(void);
/* Sets the CPU limit in bytes (0: none). */
void opd_cpu_allocator_set_limit(uint64_t bytes);
/* Returns the cached blocks to the system. */
void opd_cpu_allocator_empty_cache(void);
/* Statistics of a device type (zeros for a device type without an allocator). */
void opd_memory_stats_get(int device_type, opd_memory_stats *out);
void opd_memory_stats_reset_peak(int device_type);

#ifdef __cplusplus
}
#endif
#endif

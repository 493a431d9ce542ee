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

/* A device: its type (a backend component: OPD_DEVICE_*) and its index (-1: the CPU, or
 * "the current device"). */
typedef struct opd_device {
  int16_t type;
  int16_t index;
} opd_device;

typedef struct opd_memory_stats {
  uint64_t in_use; /* bytes of live storage */
  uint64_t peak;   /* highest in_use since start (or the last reset) */
  uint64_t cached; /* bytes held by the cache for reuse */
  uint64_t limit;  /* 0: none */
} opd_memory_stats;

/* [Note: Allocators per device type]
 * Storage of a device type comes from the allocator registered for it: the CPU allocator is
 * built in, the CUDA backend registers its own when it starts (one allocator serves every
 * device of the type; `device.index` selects the device). Meta has none: its storage has
 * no data. The functions are called from any thread. */
typedef struct opd_allocator opd_allocator;
struct opd_allocator {
  /* Returns the block, or NULL with an opd error recorded. */
  void *(*alloc)(const opd_allocator *a, opd_device device, size_t nbytes);
  void (*free)(const opd_allocator *a, opd_device device, void *p, size_t nbytes);
  /* The statistics of one device of the type (NULL: none kept). */
  void (*stats)(const opd_allocator *a, int device_index, opd_memory_stats *out);
  /* Returns cached blocks to the system (NULL: no cache). */
  void (*empty_cache)(const opd_allocator *a);
};

/* Installs the allocator of a device type (replacing the previous one, which must have no
 * live blocks): 0, or OPD_EINVAL for a device type that is not a backend or for Meta. */
int opd_allocator_register(int device_type, const opd_allocator *a);
/* The allocator of a device type; NULL when none is registered. */
const opd_allocator *opd_allocator_for(int device_type);

const opd_allocator *opd_cpu_allocator(void);
/* Sets the CPU limit in bytes (0: none). */
void opd_cpu_allocator_set_limit(uint64_t bytes);
/* Returns the cached blocks to the system. */
void opd_cpu_allocator_empty_cache(void);
/* Statistics of a device type's device 0 (of the CPU for OPD_DEVICE_CPU); zeros for a
 * device type without an allocator or statistics. */
void opd_memory_stats_get(int device_type, opd_memory_stats *out);
/* Statistics of one device. */
void opd_memory_stats_get_device(opd_device device, opd_memory_stats *out);
void opd_memory_stats_reset_peak(int device_type);

#ifdef __cplusplus
}
#endif
#endif

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
 * Blocks of OPD_CPU_HUGE_MIN bytes or more are aligned to 2 MiB and advised for transparent
 * huge pages (madvise MADV_HUGEPAGE, which the kernel's default "madvise" mode honours), as
 * numpy does for its arrays: a kernel that gathers rows from a large table (an embedding's
 * 3 KiB rows of a 150 MiB table) misses the TLB on every row with 4 KiB pages, and one with
 * 2 MiB pages keeps the whole table in the TLB; streaming kernels take a fault per 2 MiB
 * instead of per 4 KiB on fresh memory. The costs: the last huge page of a block may hold up
 * to 2 MiB the tensor does not use (under 50% of a 4 MiB block, less for larger ones); and
 * with the kernel's default defrag mode ("madvise"), a first touch of such a block may compact
 * memory to find a huge page. A machine set to transparent_hugepage "never" keeps small pages
 * (the advice is then ignored), and the allocator is otherwise unchanged.
 */
#ifndef OPD_ALLOCATOR_H
#define OPD_ALLOCATOR_H

#include <stdatomic.h>
#include <stdbool.h>
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
#define OPD_CPU_HUGE_MIN  ((size_t)4 << 20)

/* A device: its type (a backend component: OPD_DEVICE_*) and its index (-1: the CPU, or
 * "the current device"). */
typedef struct opd_device {
  int16_t type;
  int16_t index;
} opd_device;

/* A CUDA device's bit in a mask of devices (bit d: cuda:d, index -1 being device 0); 0 for
 * another type, and for devices past 63. */
static inline uint64_t opd_device_cuda_bit(opd_device d) {
  int index = d.index < 0 ? 0 : d.index;
  return d.type == OPD_DEVICE_CUDA && index < 64 ? (uint64_t)1 << index : 0;
}

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
/* Counts `bytes` held outside tensors (a compiled graph's IR and plan, [Note: The charge of
 * a graph] in graph/src/exec/footprint.c; a daemon's responses waiting to be read, [Note: Answers
 * charged before they are held] in server/src/execute.c) as CPU memory in use, within the
 * limit: 0, or OPD_ERESOURCE with nothing counted; and stops counting them. */
int opd_cpu_allocator_reserve(uint64_t bytes);
void opd_cpu_allocator_unreserve(uint64_t bytes);
/* Statistics of a device type's device 0 (of the CPU for OPD_DEVICE_CPU); zeros for a
 * device type without an allocator or statistics. */
void opd_memory_stats_get(int device_type, opd_memory_stats *out);
/* Statistics of one device. */
void opd_memory_stats_get_device(opd_device device, opd_memory_stats *out);
void opd_memory_stats_reset_peak(int device_type);

/* [Note: Memory cleared between owners]
 * A daemon's sessions share the allocators, and a cached block holds what its last owner
 * wrote: handed as is to another session's aten::empty (or an out= buffer, a resize, a
 * planned graph buffer), it would show that session another's tensors. So memory that held
 * one owner's data is never given to another uncleared, at no cost while a block stays with
 * one owner. The owner of an allocation is the budget installed on the thread
 * (opd_mem_budget.owner_id, a session; 0 with none installed):
 *  - the CPU allocator's cached blocks (OPD_CPU_CACHE_MIN bytes or more) carry their owner's
 *    id in a word after the block; one taken from the cache by another owner is zeroed
 *    whole (its size class, not only the bytes asked for), one taken by the same owner is
 *    not. Fresh blocks, and the smaller ones that malloc recycles with whatever its last user
 *    left there, are zeroed as malloc gives them (calloc, which skips the pages the kernel
 *    has just mapped, and so zeroed); a tensor slab slot's data is zeroed as it is taken;
 *  - the CUDA caching allocator's blocks remember their owner; one reused by another owner
 *    (a block whose stream was destroyed) is zeroed on the new owner's stream before it is
 *    handed out (cudaMemsetAsync, ordered before any work the new owner queues there);
 *  - a compiled graph's run contexts remember the owner of their last run; a context taken
 *    by another owner has its planned buffers zeroed (graph/src/exec/exec.c).
 * Memory made with no budget installed belongs to owner 0 (the process itself: the library
 * used in a program, the daemon's own work); the daemon runs every session's work under the
 * session's budget.
 *
 * [Note: Memory reserved before it is allocated]
 * A limit checked after an allocation comes too late: the memory is already taken (a 64 MiB
 * session asking for aten::full([3 << 28]) would hold gigabytes before being refused). So
 * every limit on tensor memory is checked, and the bytes reserved, before the allocator is
 * asked for them, at the one place all storage is made (tensor.c):
 *  - daemon-wide, the CPU allocator's limit (max_bytes_total in the daemon) refuses an
 *    allocation that would take the CPU bytes in use past it ([Note: The CPU allocator]);
 *  - per owner, a budget installed on the thread (opd_mem_budget_install) is charged with
 *    every storage with data made while it is installed, whatever the device, and refuses one
 *    that would take the owner past its limit. The daemon installs the session's budget while
 *    a call runs (server/src/execute.c), so a kernel's outputs and intermediates count against
 *    max_bytes_held as they are made, before their memory exists.
 * A storage made under a budget is marked charged; freed while the budget is still installed
 * (an intermediate), its bytes are refunded at once. When the call ends, the caller takes the
 * charge of the storages it keeps (opd_mem_budget_take: a call's results, which then count as
 * held by their handles) and refunds the rest (opd_mem_budget_uninstall). Over either limit:
 * OPD_ERESOURCE, and nothing was allocated. */
typedef struct opd_mem_budget {
  _Atomic uint64_t *held; /* the owner's bytes reserved or in use (shared with its other users) */
  uint64_t limit;
  const char *limit_name; /* for messages: "max_bytes_held" */
  const char *owner;      /* for messages: "session" */
  /* tags the memory made while installed, so that it is cleared before another owner gets it
   * ([Note: Memory cleared between owners]); from opd_mem_owner_new, 0: none */
  uint64_t owner_id;
  /* set when the owner is gone: its running work is to stop ([Note: Cancelling long work] in
   * opd/cancel.h) */
  _Atomic bool cancelled;
  uint64_t charged; /* bytes charged to storages made while installed, not refunded */
  /* [Note: A budget with one writer]
   * Set by an owner that knows every change of *held comes from the thread that set it,
   * until it clears it (the daemon's event loop while it runs a session's call itself, the
   * session having nothing on a worker: [Note: Tiny calls on the loop] in
   * server/src/conn_loop_calls.c). Reserving and releasing are then a relaxed load and store
   * instead of a locked instruction each (1.9% of the daemon's CPU for a tiny call);
   * readers elsewhere (the status endpoint) still read whole values. */
  bool one_writer;
} opd_mem_budget;

/* Reserves `bytes` against the budget's limit: 0, or OPD_ERESOURCE with a message that names
 * the owner, the sizes and the limit. */
int opd_mem_budget_reserve(opd_mem_budget *b, uint64_t bytes);
void opd_mem_budget_release(opd_mem_budget *b, uint64_t bytes);
/* Installs b on this thread (charged from 0). */
void opd_mem_budget_install(opd_mem_budget *b);
/* Uninstalls this thread's budget, refunding what its storages still hold of the charge. */
void opd_mem_budget_uninstall(void);
/* The budget installed on this thread, or NULL. */
opd_mem_budget *opd_mem_budget_current(void);
/* A new owner id for opd_mem_budget.owner_id, unique in the process (never 0). */
uint64_t opd_mem_owner_new(void);
/* The owner id of the budget installed on this thread; 0 when none is. */
uint64_t opd_mem_owner_current(void);

#ifdef __cplusplus
}
#endif
#endif

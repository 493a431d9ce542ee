/* opd/tensor.h: tensors and their storage (the c10 TensorImpl / StorageImpl equivalent).
 *
 * [Note: A tensor's key set]
 * Every tensor carries the dispatch key set that its calls start from, computed once when
 * it is made, as c10's TensorImpl does: its backend key (CPU, Meta, SparseCPU, ...), the
 * autocast key of its backend (AutocastCPU for CPU, AutocastCUDA for CUDA, AutocastXPU for
 * XPU), ADInplaceOrView, and the autograd key of its backend (AutogradCPU, ...; a backend
 * key without a backend bit, such as SparseCsrCPU or MkldnnCPU, gets AutogradOther; a
 * nested tensor gets AutogradNestedTensor and no autocast key).
 * requires_grad does not change the set: AutogradCPU is always present and falls through
 * when there is nothing to record.
 *
 * [Note: Tensors, storage and views]
 * A tensor is a view of a storage: element (i0, ..., in) lives at
 *   storage->data + (storage_offset + sum_k i_k * strides[k]) * element size.
 * The storage is reference counted and shared by every view of it; it holds the data
 * pointer, its byte size, its device (whose allocator frees the data, [Note: Allocators
 * per device type]) and the version counter that in-place writes bump (shared by views, as
 * PyTorch's is). The key set is the first field so that key extraction on the call path is
 * one load per tensor argument. Meta tensors have a storage with no data.
 *
 * [Note: The memory of a tensor]
 * A daemon may hold millions of small tensors, so their metadata is kept small:
 *  - sizes and strides live inline at the end of the tensor, sized to its rank (a 1-d
 *    tensor is 56 bytes, a 4-d one 104), with no heap allocation at any rank;
 *  - a new tensor and its new storage are one allocation, storage first: the block is
 *    freed with the storage, so a tensor's own memory outlives it while a view keeps the
 *    storage alive (tensor->in_storage_block says so);
 *  - a CPU tensor of at most one dimension and at most OPD_TINY_TENSOR_BYTES of data takes a
 *    96-byte slot of the tensor slab (tensor_slab.c) that holds storage, tensor and the
 *    data itself, 64-byte aligned like every CPU storage (the data sits at offset 0 or 32 of
 *    the slot, whichever is 64-byte aligned, and the storage fills the other 32 bytes):
 *    96 bytes in all, no allocator header, no separate data block.
 * Nothing else is allocated per tensor.
 */
#ifndef OPD_TENSOR_H
#define OPD_TENSOR_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "opd/allocator.h"
#include "opd/dtype.h"
#include "opd/ivalue.h"
#include "opd/keyset.h"

#ifdef __cplusplus
extern "C" {
#endif

/* PyTorch's limit on dimensions. */
#define OPD_MAX_DIMS          64
/* The most data bytes a tensor slab slot holds ([Note: The memory of a tensor]). */
#define OPD_TINY_TENSOR_BYTES 8

typedef struct opd_storage {
  atomic_uint refcount;
  atomic_uint version;
  opd_device device;
  bool in_slab; /* the block holding it is a tensor slab slot (data inline) */
  bool charged; /* its bytes were charged to the budget of the thread that made it
                 * ([Note: Memory reserved before it is allocated] in opd/allocator.h) */
  size_t nbytes;
  void *data; /* NULL for Meta storage and for zero bytes */
} opd_storage;
_Static_assert(sizeof(opd_storage) == 32, "a storage fills half of a tensor slab slot's header");

struct opd_tensor {
  opd_keyset key_set; /* read-only after creation */
  atomic_uint refcount;
  int8_t dtype; /* opd_dtype */
  uint8_t ndim;
  bool requires_grad;
  bool in_storage_block; /* allocated with its storage, freed with it */
  opd_storage *storage;  /* NULL only for key-set-only tensors (opd_tensor_new) */
  int64_t storage_offset;
  int64_t numel;
  int64_t dims[]; /* sizes[ndim], then strides[ndim] */
};
typedef struct opd_tensor opd_tensor;
_Static_assert(sizeof(opd_tensor) == 40, "a tensor's header is 40 bytes, its dims follow");

/* The full key set of a tensor whose backend key is `backend_key`, per
 * [Note: A tensor's key set]. */
opd_keyset opd_tensor_keyset_for(opd_dispatch_key backend_key);
/* The backend key of a device type: CPU, CUDA, Meta. */
opd_dispatch_key opd_device_key(opd_device device);

/* A 0-d float32 tensor with no storage whose key set is built from `backend_key` (CPU,
 * Meta, SparseCPU, QuantizedCPU, SparseCsrCPU, MkldnnCPU, ...): what dispatch decisions
 * need and nothing else, for tensor layouts opd dispatches but does not compute with.
 * NULL with OPD_EINVAL (not a backend key) or OPD_ENOMEM recorded. */
opd_tensor *opd_tensor_new(opd_dispatch_key backend_key, bool requires_grad);

/* A new contiguous tensor on `device` with uninitialized data. 0, OPD_EINVAL (bad sizes,
 * dtype or device), OPD_ERESOURCE (allocator limit) or OPD_ENOMEM. */
int opd_tensor_empty(const int64_t *sizes, int ndim, opd_dtype dtype, opd_device device,
                     opd_tensor **out);
/* The same with explicit strides (the storage covers the largest reachable element). */
int opd_tensor_empty_strided(const int64_t *sizes, const int64_t *strides, int ndim,
                             opd_dtype dtype, opd_device device, opd_tensor **out);
/* A view of `base`'s storage with new geometry (no bounds check beyond the storage's
 * size: OPD_EINVAL if the view reaches past it). */
int opd_tensor_view_of(opd_tensor *base, const int64_t *sizes, const int64_t *strides, int ndim,
                       int64_t storage_offset, opd_tensor **out);

static inline const int64_t *opd_tensor_sizes(const opd_tensor *t) {
  return t->dims;
}
static inline const int64_t *opd_tensor_strides(const opd_tensor *t) {
  return t->dims + t->ndim;
}
static inline opd_dtype opd_tensor_dtype(const opd_tensor *t) {
  return (opd_dtype)t->dtype;
}
static inline opd_device opd_tensor_device(const opd_tensor *t) {
  return t->storage ? t->storage->device : (opd_device){OPD_DEVICE_META, -1};
}
static inline bool opd_tensor_is_meta(const opd_tensor *t) {
  return opd_tensor_device(t).type == OPD_DEVICE_META;
}
/* The address of element 0 (NULL for Meta tensors and empty storage). A tensor with
 * elements lies inside its storage ([Note: Checked arithmetic] in opd/checked.h), so the
 * offset's byte count cannot overflow; an empty one may sit at any offset (as in PyTorch)
 * and reads nothing: its address is the storage's. */
static inline void *opd_tensor_data(const opd_tensor *t) {
  if (!t->storage || !t->storage->data) return NULL;
  if (t->numel == 0) return t->storage->data;
  return (char *)t->storage->data + (size_t)t->storage_offset * opd_dtype_size(opd_tensor_dtype(t));
}
static inline opd_keyset opd_tensor_key_set(const opd_tensor *t) {
  return t->key_set;
}
/* Row-major contiguity, ignoring the strides of size-1 dimensions (as c10 does); inline for
 * the 0-d and 1-d tensors of the tiny calls. */
bool opd__tensor_is_contiguous_nd(const opd_tensor *t);
static inline bool opd_tensor_is_contiguous(const opd_tensor *t) {
  if (t->ndim == 0) return true;
  if (t->ndim == 1) return t->dims[0] <= 1 || t->dims[1] == 1; /* size 0 or 1, or stride 1 */
  return opd__tensor_is_contiguous_nd(t);
}
/* Fills strides for a contiguous row-major tensor of these sizes (a size of 0 strides as 1,
 * as in c10); returns numel (0 when a size is 0, whatever the others multiply to), or -1
 * when a stride or a nonzero numel overflows int64. */
int64_t opd_contiguous_strides(const int64_t *sizes, int ndim, int64_t *strides);

/* Takes the charge of t's storage off this thread's budget ([Note: Memory reserved before it
 * is allocated] in opd/allocator.h): returns the bytes the caller now accounts for, 0 when the
 * storage was not charged (or was taken before). */
uint64_t opd_tensor_take_charge(opd_tensor *t);

/* Bytes of memory the tensor slab holds from the system (its pages, in use or kept). */
uint64_t opd_tensor_slab_bytes(void);
/* Gives this thread's cache of free slab slots back to the slab's pages ([Note: The slab's
 * thread caches] in tensor_slab.c); a thread's end does it too. */
void opd_tensor_slab_flush_thread(void);

static inline void opd_tensor_bump_version(opd_tensor *t) {
  if (t->storage) atomic_fetch_add_explicit(&t->storage->version, 1, memory_order_relaxed);
}
static inline unsigned opd_tensor_version(const opd_tensor *t) {
  return t->storage ? atomic_load_explicit(&t->storage->version, memory_order_relaxed) : 0;
}
static inline bool opd_tensor_shares_storage(const opd_tensor *a, const opd_tensor *b) {
  return a->storage && a->storage == b->storage;
}

/* [Note: The last reference]
 * A reference count that reads 1 to the holder of a reference is the holder's alone: no
 * other thread holds one, so none can take one, and the count can only be dropped by the
 * holder. Releasing it frees the object without the atomic decrement, the one locked
 * instruction of the common case (a result made, handed out, released). The load acquires,
 * as the decrement does, so the frees that others' releases published are seen. Nothing in
 * opd takes a reference from a pointer it holds no reference through (no weak references). */
static inline bool opd__last_reference(atomic_uint *refcount) {
  return atomic_load_explicit(refcount, memory_order_acquire) == 1 ||
         atomic_fetch_sub_explicit(refcount, 1, memory_order_acq_rel) == 1;
}

static inline void opd_tensor_retain(opd_tensor *t) {
  atomic_fetch_add_explicit(&t->refcount, 1, memory_order_relaxed);
}
void opd__tensor_free(opd_tensor *t);
static inline void opd_tensor_release(opd_tensor *t) {
  if (opd__last_reference(&t->refcount)) opd__tensor_free(t);
}

#ifdef __cplusplus
}
#endif
#endif

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
 * pointer, its byte size, its device and the allocator that frees it, and the version
 * counter that in-place writes bump (shared by views, as PyTorch's is). Sizes and strides
 * live inline in the tensor for up to OPD_INLINE_DIMS dimensions, on the heap beyond.
 * Meta tensors have a storage with no data. The key set is the first field so that key
 * extraction on the call path is one load per tensor argument.
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

#define OPD_INLINE_DIMS 5
/* PyTorch's limit on dimensions. */
#define OPD_MAX_DIMS    64

typedef struct opd_storage {
  atomic_uint refcount;
  opd_device device;
  atomic_uint version;
  size_t nbytes;
  void *data; /* NULL for Meta storage and for zero bytes */
  const opd_allocator *allocator;
} opd_storage;

struct opd_tensor {
  opd_keyset key_set; /* read-only after creation */
  atomic_uint refcount;
  int8_t dtype; /* opd_dtype */
  uint8_t ndim;
  bool requires_grad;
  opd_storage *storage; /* NULL only for key-set-only tensors (opd_tensor_new) */
  int64_t storage_offset;
  int64_t numel;
  union {
    struct {
      int64_t sizes[OPD_INLINE_DIMS];
      int64_t strides[OPD_INLINE_DIMS];
    } in;
    int64_t *heap; /* ndim > OPD_INLINE_DIMS: sizes then strides */
  } dims;
};
typedef struct opd_tensor opd_tensor;

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
  return t->ndim <= OPD_INLINE_DIMS ? t->dims.in.sizes : t->dims.heap;
}
static inline const int64_t *opd_tensor_strides(const opd_tensor *t) {
  return t->ndim <= OPD_INLINE_DIMS ? t->dims.in.strides : t->dims.heap + t->ndim;
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
/* The address of element 0 (NULL for Meta tensors and empty storage). */
static inline void *opd_tensor_data(const opd_tensor *t) {
  if (!t->storage || !t->storage->data) return NULL;
  return (char *)t->storage->data +
         t->storage_offset * (int64_t)opd_dtype_size(opd_tensor_dtype(t));
}
static inline opd_keyset opd_tensor_key_set(const opd_tensor *t) {
  return t->key_set;
}
/* Row-major contiguity, ignoring the strides of size-1 dimensions (as c10 does). */
bool opd_tensor_is_contiguous(const opd_tensor *t);
/* Fills strides for a contiguous row-major tensor of these sizes; returns numel, or -1
 * on int64 overflow. */
int64_t opd_contiguous_strides(const int64_t *sizes, int ndim, int64_t *strides);

static inline void opd_tensor_bump_version(opd_tensor *t) {
  if (t->storage) atomic_fetch_add_explicit(&t->storage->version, 1, memory_order_relaxed);
}
static inline unsigned opd_tensor_version(const opd_tensor *t) {
  return t->storage ? atomic_load_explicit(&t->storage->version, memory_order_relaxed) : 0;
}
static inline bool opd_tensor_shares_storage(const opd_tensor *a, const opd_tensor *b) {
  return a->storage && a->storage == b->storage;
}

static inline void opd_tensor_retain(opd_tensor *t) {
  atomic_fetch_add_explicit(&t->refcount, 1, memory_order_relaxed);
}
void opd__tensor_free(opd_tensor *t);
static inline void opd_tensor_release(opd_tensor *t) {
  if (atomic_fetch_sub_explicit(&t->refcount, 1, memory_order_acq_rel) == 1) opd__tensor_free(t);
}

#ifdef __cplusplus
}
#endif
#endif

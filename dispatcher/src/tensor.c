/* tensor.c: tensors and storage: creation, key sets, views, reference counting
 * (see [Note: Tensors, storage and views] in opd/tensor.h). */
#include "opd/tensor.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "opd/checked.h"
#include "opd/error.h"
#include "opd/memory.h"
#include "tensor_internal.h"

opd_keyset opd_tensor_keyset_for(opd_dispatch_key backend_key) {
  opd_keyset ks = opd_keyset_of(backend_key);
  opd_backend b = opd_keyset_highest_backend(ks);
  opd_dispatch_key autograd = OPD_KEY_AutogradOther;
  if (opd_key_functionality(backend_key) == OPD_KEY_NestedTensor) {
    autograd = OPD_KEY_AutogradNestedTensor; /* c10's generate_nested_key_set */
  } else if (b != OPD_NUM_BACKENDS) {
    autograd = opd_autograd_key_of_backend(b);
    if (b == OPD_BACKEND_CPU) ks = opd_keyset_union(ks, opd_keyset_of(OPD_KEY_AutocastCPU));
    if (b == OPD_BACKEND_CUDA) ks = opd_keyset_union(ks, opd_keyset_of(OPD_KEY_AutocastCUDA));
    if (b == OPD_BACKEND_XPU) ks = opd_keyset_union(ks, opd_keyset_of(OPD_KEY_AutocastXPU));
  }
  ks = opd_keyset_union(ks, opd_keyset_of(OPD_KEY_ADInplaceOrView));
  return opd_keyset_union(ks, opd_keyset_of(autograd));
}

opd_dispatch_key opd_device_key(opd_device device) {
  if (device.type < 0 || device.type >= OPD_NUM_BACKENDS) return OPD_KEY_Undefined;
  return opd_key_for_backend(OPD_KEY_Dense, (opd_backend)device.type);
}

/* Keys that name what a tensor is: CompositeExplicitAutograd's backends and the nested
 * tensor keys (c10's backend_dispatch_keyset plus NestedTensor). */
static bool is_tensor_backend_key(opd_dispatch_key k) {
  if (k == OPD_KEY_Undefined || !opd_key_is_runtime(k)) return false;
  opd_keyset backends = opd_alias_keyset(OPD_KEY_CompositeExplicitAutograd);
  backends.repr |= opd_keyset_of(OPD_KEY_NestedTensor).repr | OPD_BACKEND_BITS_MASK;
  return opd_keyset_has(backends, k);
}

static void tensor_init(opd_tensor *t, int ndim, opd_storage *storage) {
  t->key_set = opd_keyset_empty();
  atomic_init(&t->refcount, 1);
  t->dtype = OPD_FLOAT32;
  t->ndim = (uint8_t)ndim;
  t->requires_grad = false;
  t->in_storage_block = storage != NULL;
  t->storage = storage;
  t->storage_offset = 0;
  t->numel = 0;
}

static size_t tensor_bytes(int ndim) {
  return sizeof(opd_tensor) + 2 * (size_t)ndim * sizeof(int64_t);
}

/* A tensor with no storage yet, in an allocation of its own. */
static opd_tensor *tensor_alloc(int ndim) {
  opd_tensor *t = opd__malloc(tensor_bytes(ndim));
  if (!t) {
    opd_error(OPD_ENOMEM, "out of memory allocating a %d-d tensor", ndim);
    return NULL;
  }
  tensor_init(t, ndim, NULL);
  return t;
}

opd_tensor *opd_tensor_new(opd_dispatch_key backend_key, bool requires_grad) {
  if (!is_tensor_backend_key(backend_key)) {
    opd_error(OPD_EINVAL, "%s is not a backend key a tensor can have",
              opd_key_name(backend_key) ? opd_key_name(backend_key) : "(invalid key)");
    return NULL;
  }
  opd_tensor *t = tensor_alloc(0);
  if (!t) return NULL;
  t->key_set = opd_tensor_keyset_for(backend_key);
  t->dtype = OPD_FLOAT32;
  t->numel = 1;
  t->requires_grad = requires_grad;
  return t;
}

int64_t opd_contiguous_strides(const int64_t *sizes, int ndim, int64_t *strides) {
  int64_t n = 1;
  bool empty = false;
  for (int d = ndim - 1; d >= 0; d--) {
    strides[d] = n;
    if (sizes[d] == 0)
      empty = true; /* a size of 0 strides as 1 (c10's max(size, 1)) */
    else if (opd_ckd_mul(&n, n, sizes[d]) && (d > 0 || !empty))
      return -1; /* a stride, or the element count of a tensor with elements, overflows */
  }
  return empty ? 0 : n;
}

static int check_geometry(const int64_t *sizes, const int64_t *strides, int ndim,
                          size_t element_size, int64_t *numel, int64_t *extent) {
  if (ndim < 0 || ndim > OPD_MAX_DIMS)
    return opd_error(OPD_EINVAL, "tensors have at most %d dimensions, got %d", OPD_MAX_DIMS, ndim);
  return opd_ckd_geometry(sizes, strides, (size_t)ndim, element_size, numel, extent, "tensor");
}

static void set_geometry(opd_tensor *t, const int64_t *sizes, const int64_t *strides,
                         int64_t numel) {
  /* element by element: most tensors have one or two dimensions, and a memcpy of a length
   * known only here starts up slower than it copies them */
  for (int d = 0, n = t->ndim; d < n; d++) {
    t->dims[d] = sizes[d];
    t->dims[n + d] = strides[d];
  }
  t->numel = numel;
}

/* A slot of the tensor slab: the storage and the data share its first 40 bytes, the data at
 * whichever of offsets 0 and 32 is 64-byte aligned, and the tensor takes the rest. */
_Static_assert(sizeof(opd_storage) + OPD_TINY_TENSOR_BYTES + sizeof(opd_tensor) +
                       2 * sizeof(int64_t) ==
                   OPD__TENSOR_SLOT_BYTES,
               "a tensor slab slot holds a storage, its data and a 1-d tensor");

static int tiny_tensor_new(int ndim, size_t nbytes, opd_tensor **out) {
  int rc = opd__cpu_account_tiny(nbytes);
  if (rc) return rc;
  char *slot = opd__tensor_slab_alloc();
  if (!slot) {
    opd__cpu_unaccount_tiny(nbytes);
    return OPD_ENOMEM;
  }
  bool data_first = (uintptr_t)slot % OPD_CPU_ALIGNMENT == 0;
  opd_storage *s = (opd_storage *)(slot + (data_first ? OPD_TINY_TENSOR_BYTES : 0));
  char *data = slot + (data_first ? 0 : sizeof(opd_storage));
  assert((uintptr_t)data % OPD_CPU_ALIGNMENT == 0);
  s->in_slab = true;
  s->data = nbytes ? data : NULL;
  /* the slot's last tensor may have been another session's ([Note: Memory cleared between
   * owners] in opd/allocator.h): one store */
  memset(data, 0, OPD_TINY_TENSOR_BYTES);
  *out = (opd_tensor *)(slot + sizeof(opd_storage) + OPD_TINY_TENSOR_BYTES);
  tensor_init(*out, ndim, s);
  return 0;
}

/* The block of a tensor and its storage (a slab slot, or a malloc block and the device
 * allocator's data): the storage's data and in_slab set, nothing else. */
static int storage_block_new(int ndim, size_t nbytes, opd_device device, opd_tensor **out) {
  int rc;
  if (device.type == OPD_DEVICE_CPU && ndim <= 1 && nbytes <= OPD_TINY_TENSOR_BYTES) {
    rc = tiny_tensor_new(ndim, nbytes, out);
  } else {
    const opd_allocator *alloc = NULL;
    if (device.type != OPD_DEVICE_META && !(alloc = opd_allocator_for(device.type))) {
      const char *name = opd_backend_name((opd_backend)device.type);
      return opd_error(OPD_EUNAVAILABLE, "no allocator for device type %s",
                       name ? name : "(invalid)");
    }
    char *block = opd__malloc(sizeof(opd_storage) + tensor_bytes(ndim));
    if (!block) return opd_error(OPD_ENOMEM, "out of memory allocating a tensor");
    opd_storage *s = (opd_storage *)block;
    s->in_slab = false;
    s->data = NULL;
    if (alloc && nbytes && !(s->data = alloc->alloc(alloc, device, nbytes))) {
      opd__free(block);
      return opd_last_error_code();
    }
    *out = (opd_tensor *)(block + sizeof(opd_storage));
    tensor_init(*out, ndim, s);
    rc = 0;
  }
  return rc;
}

/* A tensor and a new storage of `nbytes` on `device`, in one block (see [Note: The memory
 * of a tensor]); the caller sets key set, dtype and geometry. The bytes are charged to the
 * thread's budget before anything is allocated ([Note: Memory reserved before it is
 * allocated] in opd/allocator.h). */
static int tensor_with_storage(int ndim, size_t nbytes, opd_device device, opd_tensor **out) {
  bool charged = false;
  int rc = device.type == OPD_DEVICE_META ? 0 : opd__budget_charge(nbytes, &charged);
  if (rc) return rc;
  if ((rc = storage_block_new(ndim, nbytes, device, out))) {
    if (charged) opd__budget_refund(nbytes);
    return rc;
  }
  opd_storage *s = (*out)->storage;
  atomic_init(&s->refcount, 1);
  atomic_init(&s->version, 0);
  s->device = device;
  s->nbytes = nbytes;
  s->charged = charged;
  return 0;
}

static void storage_release(opd_storage *s) {
  if (!opd__last_reference(&s->refcount)) return;
  if (s->charged) opd__budget_refund(s->nbytes); /* an intermediate of the running call */
  if (s->in_slab) {
    opd__cpu_unaccount_tiny(s->nbytes);
    opd__tensor_slab_free(opd__tensor_slab_slot_of(s));
    return;
  }
  if (s->data) {
    const opd_allocator *alloc = opd_allocator_for(s->device.type);
    alloc->free(alloc, s->device, s->data, s->nbytes);
  }
  opd__free(s); /* and the tensor made with it */
}

/* The key set of a new dense tensor on a device of this type (opd_tensor_keyset_for of its
 * backend key), 0 for an invalid type. A pure function of a few values, computed once each:
 * a racing thread computes and stores the same repr. */
static opd_keyset dense_keyset_of_device(int type) {
  static _Atomic uint64_t reprs[OPD_NUM_BACKENDS]; /* 0: not computed (a tensor's never is) */
  if (type < 0 || type >= OPD_NUM_BACKENDS) return opd_keyset_empty();
  uint64_t repr = atomic_load_explicit(&reprs[type], memory_order_relaxed);
  if (!repr) {
    opd_dispatch_key key = opd_device_key((opd_device){(int16_t)type, -1});
    if (key == OPD_KEY_Undefined) return opd_keyset_empty();
    repr = opd_tensor_keyset_for(key).repr;
    atomic_store_explicit(&reprs[type], repr, memory_order_relaxed);
  }
  return (opd_keyset){repr};
}

/* A tensor of geometry already checked (numel, and extent: the elements its storage holds),
 * with a new storage: the rest of opd_tensor_empty and opd_tensor_empty_strided. */
static int tensor_of_geometry(const int64_t *sizes, const int64_t *strides, int ndim, int64_t numel,
                              int64_t extent, opd_dtype dtype, opd_device device,
                              opd_tensor **out) {
  int64_t nbytes;
  int rc = opd_ckd_nbytes(extent, opd_dtype_size(dtype), &nbytes, "tensor");
  if (rc) return rc;
  opd_keyset ks = dense_keyset_of_device(device.type);
  if (opd_keyset_is_empty(ks)) return opd_error(OPD_EINVAL, "invalid device type %d", device.type);
  opd_tensor *t = NULL;
  if ((rc = tensor_with_storage(ndim, (size_t)nbytes, device, &t))) return rc;
  t->key_set = ks;
  t->dtype = (int8_t)dtype;
  set_geometry(t, sizes, strides, numel);
  *out = t;
  return 0;
}

int opd_tensor_empty_strided(const int64_t *sizes, const int64_t *strides, int ndim,
                             opd_dtype dtype, opd_device device, opd_tensor **out) {
  if (!opd_dtype_valid(dtype)) return opd_error(OPD_EINVAL, "invalid dtype %d", (int)dtype);
  int64_t numel, extent;
  int rc = check_geometry(sizes, strides, ndim, opd_dtype_size(dtype), &numel, &extent);
  if (rc) return rc;
  return tensor_of_geometry(sizes, strides, ndim, numel, extent, dtype, device, out);
}

int opd_tensor_empty(const int64_t *sizes, int ndim, opd_dtype dtype, opd_device device,
                     opd_tensor **out) {
  int64_t strides[OPD_MAX_DIMS];
  if (ndim < 0 || ndim > OPD_MAX_DIMS)
    return opd_error(OPD_EINVAL, "tensors have at most %d dimensions, got %d", OPD_MAX_DIMS, ndim);
  for (int d = 0; d < ndim; d++)
    if (sizes[d] < 0)
      return opd_error(OPD_EINVAL, "Trying to create tensor with negative dimension %lld",
                       (long long)sizes[d]);
  /* contiguous: the storage holds exactly its elements, so the geometry needs no other check */
  int64_t numel = opd_contiguous_strides(sizes, ndim, strides);
  if (numel < 0) return opd_error(OPD_EINVAL, "tensor sizes overflow int64");
  if (!opd_dtype_valid(dtype)) return opd_error(OPD_EINVAL, "invalid dtype %d", (int)dtype);
  return tensor_of_geometry(sizes, strides, ndim, numel, numel, dtype, device, out);
}

int opd_tensor_view_of(opd_tensor *base, const int64_t *sizes, const int64_t *strides, int ndim,
                       int64_t storage_offset, opd_tensor **out) {
  int64_t numel, extent;
  size_t esize = opd_dtype_size(opd_tensor_dtype(base));
  int rc = check_geometry(sizes, strides, ndim, esize, &numel, &extent);
  if (rc) return rc;
  if (!base->storage) return opd_error(OPD_EINVAL, "this tensor has no storage to view");
  /* [Note: Checked arithmetic]: the view's bytes lie inside the storage */
  if ((rc = opd_ckd_view_bounds(storage_offset, extent, esize, base->storage->nbytes, "view")))
    return rc;
  opd_tensor *t = tensor_alloc(ndim);
  if (!t) return OPD_ENOMEM;
  t->key_set = base->key_set;
  t->dtype = base->dtype;
  t->requires_grad = base->requires_grad;
  t->storage = base->storage;
  atomic_fetch_add_explicit(&t->storage->refcount, 1, memory_order_relaxed);
  t->storage_offset = storage_offset;
  set_geometry(t, sizes, strides, numel);
  *out = t;
  return 0;
}

uint64_t opd_tensor_take_charge(opd_tensor *t) {
  opd_storage *s = t->storage;
  if (!s || !s->charged) return 0;
  s->charged = false;
  return opd__budget_take(s->nbytes);
}

bool opd__tensor_is_contiguous_nd(const opd_tensor *t) {
  if (t->numel == 0) return true;
  const int64_t *sizes = opd_tensor_sizes(t), *strides = opd_tensor_strides(t);
  int64_t expected = 1;
  for (int d = t->ndim - 1; d >= 0; d--) {
    if (sizes[d] == 1) continue;
    if (strides[d] != expected) return false;
    expected *= sizes[d];
  }
  return true;
}

void opd__tensor_free(opd_tensor *t) {
  opd_storage *s = t->storage;
  if (!t->in_storage_block) opd__free(t);
  if (s) storage_release(s);
}

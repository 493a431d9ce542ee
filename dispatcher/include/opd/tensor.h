/* opd/tensor.h: the tensor object as the dispatcher sees it.
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
 * The key set is the first field so that key extraction on the call path is one load
 * per tensor argument.
 */
#ifndef OPD_TENSOR_H
#define OPD_TENSOR_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "opd/keyset.h"

#ifdef __cplusplus
extern "C" {
#endif

struct opd_tensor {
  opd_keyset key_set; /* read-only after creation */
  atomic_uint_fast32_t refcount;
  bool requires_grad;
};
typedef struct opd_tensor opd_tensor;

/* The full key set of a tensor whose backend key is `backend_key` (CPU, Meta, SparseCPU,
 * QuantizedCPU, SparseCsrCPU, MkldnnCPU, ...), per [Note: A tensor's key set]. */
opd_keyset opd_tensor_keyset_for(opd_dispatch_key backend_key);

/* A new tensor (refcount 1) with that backend key; NULL with OPD_ENOMEM recorded, or
 * OPD_EINVAL if backend_key is not a runtime backend key. */
opd_tensor *opd_tensor_new(opd_dispatch_key backend_key, bool requires_grad);

static inline opd_keyset opd_tensor_key_set(const opd_tensor *t) {
  return t->key_set;
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

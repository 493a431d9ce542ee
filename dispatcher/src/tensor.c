/* tensor.c: creation, key sets and reference counting of tensors. */
#include "opd/tensor.h"

#include <stdlib.h>

#include "opd/error.h"

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

/* Keys that name what a tensor is: CompositeExplicitAutograd's backends and the nested
 * tensor keys (c10's backend_dispatch_keyset plus NestedTensor). */
static bool is_tensor_backend_key(opd_dispatch_key k) {
  if (k == OPD_KEY_Undefined || !opd_key_is_runtime(k)) return false;
  opd_keyset backends = opd_alias_keyset(OPD_KEY_CompositeExplicitAutograd);
  backends.repr |= opd_keyset_of(OPD_KEY_NestedTensor).repr | OPD_BACKEND_BITS_MASK;
  return opd_keyset_has(backends, k);
}

opd_tensor *opd_tensor_new(opd_dispatch_key backend_key, bool requires_grad) {
  if (!is_tensor_backend_key(backend_key)) {
    opd_error(OPD_EINVAL, "%s is not a backend key a tensor can have",
              opd_key_name(backend_key) ? opd_key_name(backend_key) : "(invalid key)");
    return NULL;
  }
  opd_tensor *t = malloc(sizeof *t);
  if (!t) {
    opd_error(OPD_ENOMEM, "out of memory allocating a tensor");
    return NULL;
  }
  t->key_set = opd_tensor_keyset_for(backend_key);
  atomic_init(&t->refcount, 1);
  t->requires_grad = requires_grad;
  return t;
}

void opd__tensor_free(opd_tensor *t) {
  free(t);
}

/* keyset.c: the key-set representation tables and the operations on sets that are not
 * inline (see [Note: Key sets] and [Note: Dispatch-table slots] in opd/keyset.h). */
#include "opd/keyset.h"

#include <stdio.h>

#define OPD__FBIT(f) OPD_FUNCTIONALITY_BIT(f)
#define OPD__BBIT(b) (UINT64_C(1) << (b))

const uint64_t opd__key_repr[OPD_NUM_KEYS] = {
#define OPD__FUNC_REPR(name, per_backend) [OPD_KEY_##name] = OPD__FBIT(OPD_KEY_##name),
    OPD_FUNCTIONALITY_KEYS(OPD__FUNC_REPR)
#undef OPD__FUNC_REPR
#define OPD__RUNTIME_REPR(func, prefix, backend) \
  [OPD_KEY_##prefix##backend] = OPD__FBIT(OPD_KEY_##func) | OPD__BBIT(OPD_BACKEND_##backend),
#define OPD__PER_BACKEND_REPR(func, prefix) \
  OPD_BACKEND_COMPONENTS_FP(OPD__RUNTIME_REPR, func, prefix)
        OPD_PER_BACKEND_FUNCTIONALITIES(OPD__PER_BACKEND_REPR)
#undef OPD__PER_BACKEND_REPR
#undef OPD__RUNTIME_REPR
};

/* The first slot of each functionality, counted by the compiler: each enumerator follows
 * the last slot of the functionality before it. */
enum opd__first_slot {
  OPD__SLOT_Undefined = 0,
#define OPD__SLOT_ENUM(name, per_backend) \
  OPD__SLOT_##name,                       \
      OPD__LAST_SLOT_##name = OPD__SLOT_##name + (per_backend) * (OPD_NUM_BACKENDS - 1),
  OPD_FUNCTIONALITY_KEYS(OPD__SLOT_ENUM)
#undef OPD__SLOT_ENUM
      OPD__SLOT_COUNT
};
_Static_assert(OPD__SLOT_COUNT == OPD_NUM_RUNTIME_SLOTS, "slot count");

const opd__offset_and_mask opd__offsets_and_masks[OPD_NUM_FUNCTIONALITIES + 1] = {
    [OPD_KEY_Undefined] = {0, OPD__SLOT_Undefined},
#define OPD__OFFSET_MASK(name, per_backend) \
  [OPD_KEY_##name] = {(per_backend) ? OPD_BACKEND_BITS_MASK : 0, OPD__SLOT_##name},
    OPD_FUNCTIONALITY_KEYS(OPD__OFFSET_MASK)
#undef OPD__OFFSET_MASK
};

opd_dispatch_key opd_keyset_highest_key(opd_keyset s) {
  unsigned f = opd__bit_index_plus1(s.repr >> OPD_NUM_BACKENDS);
  if (f == 0) return OPD_KEY_Undefined;
  if (!opd__offsets_and_masks[f].mask) return (opd_dispatch_key)f;
  opd_backend b = opd_keyset_highest_backend(s);
  if (b == OPD_NUM_BACKENDS) /* the StartOf...Backends placeholder, as in c10 */
    return (opd_dispatch_key)(opd_key_for_backend((opd_dispatch_key)f, OPD_BACKEND_CPU) - 1);
  return opd_key_for_backend((opd_dispatch_key)f, b);
}

opd_keyset opd_keyset_after(opd_dispatch_key k) {
  opd_dispatch_key f = opd_key_functionality(k);
  if (f == OPD_KEY_Undefined) return opd_keyset_empty();
  return (opd_keyset){(OPD__FBIT(f) - 1) | OPD_BACKEND_BITS_MASK};
}

unsigned opd_key_slot(opd_dispatch_key k) {
  assert(opd_key_is_runtime(k));
  opd_dispatch_key f = opd_key_functionality(k);
  unsigned slot = opd__offsets_and_masks[f].offset;
  if (f != k) slot += (unsigned)opd_key_backend(k);
  return slot;
}

opd_dispatch_key opd_slot_key(unsigned slot) {
  assert(slot < OPD_NUM_RUNTIME_SLOTS);
  for (int f = OPD_NUM_FUNCTIONALITIES; f >= 0; f--) {
    const opd__offset_and_mask *om = &opd__offsets_and_masks[f];
    if (om->offset > slot) continue;
    if (!om->mask) return (opd_dispatch_key)f;
    return opd_key_for_backend((opd_dispatch_key)f, (opd_backend)(slot - om->offset));
  }
  return OPD_KEY_Undefined;
}

bool opd_keyset_iter_next(opd_keyset_iter *it, opd_dispatch_key *out) {
  for (; it->functionality <= OPD_NUM_FUNCTIONALITIES; it->functionality++, it->backend = 0) {
    if (!(it->set.repr & OPD__FBIT(it->functionality))) continue;
    if (!opd__offsets_and_masks[it->functionality].mask) {
      *out = (opd_dispatch_key)it->functionality++;
      return true;
    }
    for (; it->backend < OPD_NUM_BACKENDS; it->backend++) {
      if (opd_keyset_has_backend(it->set, (opd_backend)it->backend)) {
        *out = opd_key_for_backend((opd_dispatch_key)it->functionality, (opd_backend)it->backend++);
        return true;
      }
    }
  }
  return false;
}

int opd_keyset_format(opd_keyset s, char *buf, size_t len) {
  size_t used = 0;
  opd_keyset_iter it = opd_keyset_iter_begin(s);
  opd_dispatch_key k;
  if (len) buf[0] = '\0';
  while (opd_keyset_iter_next(&it, &k)) {
    int n = snprintf(used < len ? buf + used : NULL, used < len ? len - used : 0, "%s%s",
                     used ? ", " : "", opd_key_name(k));
    used += (size_t)n;
  }
  return (int)used;
}

#define OPD__FBITS1(a) OPD__FBIT(OPD_KEY_##a)

opd_keyset opd_autogradother_backends(void) {
  return (opd_keyset){OPD__FBITS1(FPGA) | OPD__FBITS1(ORT) | OPD__FBITS1(Vulkan) |
                      OPD__FBITS1(Metal) | OPD__FBITS1(SparseCsrCPU) | OPD__FBITS1(SparseCsrCUDA) |
                      OPD__FBITS1(CustomRNGKeyId) | OPD__FBITS1(MkldnnCPU) | OPD__FBITS1(Sparse) |
                      OPD__FBITS1(Quantized) | OPD_BACKEND_BITS_MASK};
}

/* c10's backend_dispatch_keyset: what CompositeExplicitAutograd covers. */
static uint64_t backend_keys(void) {
  return opd_autogradother_backends().repr | OPD__FBITS1(Dense);
}

static uint64_t autograd_keys(void) {
  return OPD__FBITS1(AutogradFunctionality) | OPD__FBITS1(AutogradOther) |
         OPD__FBITS1(AutogradNestedTensor) | OPD_BACKEND_BITS_MASK;
}

opd_keyset opd_alias_keyset(opd_dispatch_key alias) {
  switch (alias) {
  case OPD_KEY_Autograd: return (opd_keyset){autograd_keys()};
  case OPD_KEY_CompositeImplicitAutograd:
    return (opd_keyset){backend_keys() | autograd_keys() | OPD__FBITS1(NestedTensor)};
  case OPD_KEY_CompositeExplicitAutograd: return (opd_keyset){backend_keys()};
  case OPD_KEY_CompositeExplicitAutogradNonFunctional:
    /* no sparse kernels, and no XLA or Lazy backends (they functionalize) */
    return (opd_keyset){backend_keys() & ~OPD__FBITS1(Sparse) & ~OPD__BBIT(OPD_BACKEND_XLA) &
                        ~OPD__BBIT(OPD_BACKEND_Lazy)};
  default: return opd_keyset_empty();
  }
}

bool opd_alias_covers(opd_dispatch_key alias, opd_dispatch_key k) {
  if (!opd_key_is_alias(alias)) return false;
  if (k == OPD_KEY_Undefined) return alias != OPD_KEY_Autograd;
  return opd_keyset_has(opd_alias_keyset(alias), k);
}

opd_keyset opd_autograd_backend_keyset(opd_dispatch_key k) {
  if (k == OPD_KEY_AutogradOther) return opd_autogradother_backends();
  if (k == OPD_KEY_AutogradNestedTensor)
    return (opd_keyset){OPD__FBITS1(NestedTensor) | OPD_BACKEND_BITS_MASK};
  if (opd_key_functionality(k) != OPD_KEY_AutogradFunctionality ||
      k == OPD_KEY_AutogradFunctionality)
    return opd_keyset_empty();
  opd_backend b = opd_key_backend(k);
  /* c10 1.13 lists no backend kernels for AutogradHIP and AutogradVE. */
  if (b == OPD_BACKEND_HIP || b == OPD_BACKEND_VE) return opd_keyset_empty();
  return opd_keyset_of(opd_key_for_backend(OPD_KEY_Dense, b));
}

opd_dispatch_key opd_autograd_key_of_backend(opd_backend b) {
  return opd_key_for_backend(OPD_KEY_AutogradFunctionality, b);
}

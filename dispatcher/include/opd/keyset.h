/* opd/keyset.h: dispatch key sets (a 64-bit value) and dispatch-table slots.
 *
 * [Note: Key sets]
 * A key set is a set of functionality bits plus a separate set of backend bits:
 *
 *    bit 63 ...                 14 13 ...      0
 *        [ functionality 40..1   ][ backends    ]
 *
 * Backend component b has bit b; functionality key f (1..40) has bit OPD_NUM_BACKENDS+f-1.
 * A per-backend runtime key sets one bit of each part (CPU = Dense + CPU bit), any other
 * runtime key a functionality bit only, Undefined nothing. Because the two parts are
 * independent, a set is a cross product: {CPU, AutogradCUDA} == {CUDA, AutogradCPU}.
 * This is PyTorch 1.13's DispatchKeySet, and the oracle's `bitset_quirk` calls are the
 * consequences of it; opd keeps them on purpose.
 *
 *  - union ORs both parts;
 *  - difference removes the other set's *functionality* bits only (never backend bits);
 *  - has(k) means every bit of k is present;
 *  - the highest-priority key is the highest functionality bit, combined, when that
 *    functionality is per-backend, with the highest backend bit of the whole set.
 *
 * [Note: Dispatch-table slots]
 * Each runtime key owns one slot of an operator's dispatch table: Undefined is slot 0,
 * each non-per-backend functionality one slot, each per-backend functionality
 * OPD_NUM_BACKENDS slots. opd_keyset_slot() computes the slot of a set's highest key
 * with two count-leading-zeros and two table reads, and no branch on the kind of key:
 *
 *    f    = index of the highest functionality bit (0 when there is none)
 *    slot = offset[f] + index of the highest bit of (set & mask[f]), 0 when there is none
 *
 * where mask[f] is the backend mask for per-backend functionalities and 0 otherwise.
 */
#ifndef OPD_KEYSET_H
#define OPD_KEYSET_H

#include <assert.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "opd/dispatch_key.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct opd_keyset {
  uint64_t repr;
} opd_keyset;

#define OPD__COUNT_ONE2(a, b)               +1
#define OPD_NUM_PER_BACKEND_FUNCTIONALITIES (0 OPD_PER_BACKEND_FUNCTIONALITIES(OPD__COUNT_ONE2))
/* Slots of a dispatch table: Undefined + every functionality + the extra backends. */
#define OPD_NUM_RUNTIME_SLOTS \
  (1 + OPD_NUM_FUNCTIONALITIES + OPD_NUM_PER_BACKEND_FUNCTIONALITIES * (OPD_NUM_BACKENDS - 1))
#define OPD_BACKEND_BITS_MASK    ((UINT64_C(1) << OPD_NUM_BACKENDS) - 1)
/* The bit of functionality key f (a constant expression). */
#define OPD_FUNCTIONALITY_BIT(f) (UINT64_C(1) << (OPD_NUM_BACKENDS + (int)(f)-1))

_Static_assert(OPD_NUM_BACKENDS + OPD_NUM_FUNCTIONALITIES <= 64, "key set does not fit 64 bits");
_Static_assert(OPD_NUM_BACKENDS == 14 && OPD_NUM_FUNCTIONALITIES == 40,
               "the universe is PyTorch 1.13's: 14 backends, 40 functionalities");
_Static_assert(OPD_NUM_RUNTIME_SLOTS == 106, "1 + 40 + 5 * 13 runtime slots");
_Static_assert(OPD_KEY_CPU == 43 && OPD_KEY_AutogradPrivateUse3 == 116,
               "per-backend runtime key values follow c10");

/* Per-functionality offset and backend mask (see [Note: Dispatch-table slots]). */
typedef struct opd__offset_and_mask {
  uint64_t mask;
  uint32_t offset;
} opd__offset_and_mask;
extern const opd__offset_and_mask opd__offsets_and_masks[OPD_NUM_FUNCTIONALITIES + 1];
extern const uint64_t opd__key_repr[OPD_NUM_KEYS];

static inline opd_keyset opd_keyset_empty(void) {
  return (opd_keyset){0};
}
static inline opd_keyset opd_keyset_from_repr(uint64_t repr) {
  return (opd_keyset){repr};
}
/* The set of one runtime or functionality key (Undefined and alias keys give the empty
 * set; use opd_alias_keyset() for what an alias covers). */
static inline opd_keyset opd_keyset_of(opd_dispatch_key k) {
  assert((unsigned)k < OPD_NUM_KEYS);
  return (opd_keyset){opd__key_repr[k]};
}
static inline opd_keyset opd_keyset_of_backend(opd_backend b) {
  return (opd_keyset){UINT64_C(1) << b};
}
static inline opd_keyset opd_keyset_union(opd_keyset a, opd_keyset b) {
  return (opd_keyset){a.repr | b.repr};
}
/* a - b: removes b's functionality bits from a; backend bits are never removed. */
static inline opd_keyset opd_keyset_minus(opd_keyset a, opd_keyset b) {
  return (opd_keyset){a.repr & ~(b.repr & ~OPD_BACKEND_BITS_MASK)};
}
static inline opd_keyset opd_keyset_intersect(opd_keyset a, opd_keyset b) {
  return (opd_keyset){a.repr & b.repr};
}
static inline bool opd_keyset_equal(opd_keyset a, opd_keyset b) {
  return a.repr == b.repr;
}
static inline bool opd_keyset_is_empty(opd_keyset a) {
  return a.repr == 0;
}
/* Every bit of k is in s. */
static inline bool opd_keyset_has(opd_keyset s, opd_dispatch_key k) {
  uint64_t r = opd__key_repr[k];
  return (s.repr & r) == r;
}
static inline bool opd_keyset_has_backend(opd_keyset s, opd_backend b) {
  return (s.repr >> b) & 1;
}
/* Index of the highest set bit of x plus one, 0 for x == 0; branch-free. */
static inline unsigned opd__bit_index_plus1(uint64_t x) {
  /* clz ^ 63 rather than 63 - clz: compilers emit a bare bsr for the former only */
  return (unsigned)__builtin_clzll((x << 1) | 1) ^ 63u;
}
/* The dispatch-table slot of the highest-priority key of s: the functionality's offset,
 * plus for a per-backend functionality the index of s's highest backend (0, CPU's, when s
 * has none); the index is computed beside the functionality's table load, not after it. */
static inline unsigned opd_keyset_slot(opd_keyset s) {
  unsigned f = opd__bit_index_plus1(s.repr >> OPD_NUM_BACKENDS);
  unsigned b = (unsigned)__builtin_clzll((s.repr & OPD_BACKEND_BITS_MASK) | 1) ^ 63u;
  const opd__offset_and_mask om = opd__offsets_and_masks[f];
  return om.offset + (b & (unsigned)om.mask);
}
/* The highest-priority runtime key of s (Undefined for a set without functionality bits;
 * a per-backend functionality without any backend bit gives its Start...Backends
 * placeholder, as PyTorch's does). */
opd_dispatch_key opd_keyset_highest_key(opd_keyset s);
/* The highest backend of s, or OPD_NUM_BACKENDS when s has none. */
static inline opd_backend opd_keyset_highest_backend(opd_keyset s) {
  unsigned i = opd__bit_index_plus1(s.repr & OPD_BACKEND_BITS_MASK);
  return i ? (opd_backend)(i - 1) : OPD_NUM_BACKENDS;
}
/* The functionality bits strictly below k's functionality, plus every backend bit:
 * what a kernel at k redispatches to (c10's FULL_AFTER). */
opd_keyset opd_keyset_after(opd_dispatch_key k);
/* s less its highest functionality and everything above it: s & opd_keyset_after(
 * opd_keyset_highest_key(s)), as a redispatch from s's kernel reads it, from one bit scan. */
static inline opd_keyset opd_keyset_below_highest(opd_keyset s) {
  unsigned f = opd__bit_index_plus1(s.repr >> OPD_NUM_BACKENDS);
  return (opd_keyset){f ? s.repr & (OPD_FUNCTIONALITY_BIT(f) - 1) : 0};
}

/* Runtime key <-> slot. */
unsigned opd_key_slot(opd_dispatch_key runtime_key);
opd_dispatch_key opd_slot_key(unsigned slot);

/* Iteration over the runtime keys of a set in listing order: functionalities from low to
 * high priority, each per-backend one expanded over the set's backends (ascending).
 *   opd_keyset_iter it = opd_keyset_iter_begin(s); opd_dispatch_key k;
 *   while (opd_keyset_iter_next(&it, &k)) ...                                         */
typedef struct opd_keyset_iter {
  opd_keyset set;
  int functionality; /* current functionality index */
  int backend;       /* next backend to try within a per-backend functionality */
} opd_keyset_iter;
static inline opd_keyset_iter opd_keyset_iter_begin(opd_keyset s) {
  return (opd_keyset_iter){s, 1, 0};
}
bool opd_keyset_iter_next(opd_keyset_iter *it, opd_dispatch_key *out);

/* Writes "CPU, ADInplaceOrView, AutogradCPU" (listing order) into buf; returns the length
 * the full string needs, as snprintf does. */
int opd_keyset_format(opd_keyset s, char *buf, size_t len);

/* The runtime keys an alias key covers, as a key set with has() semantics. Undefined is
 * additionally covered by every alias except Autograd (see opd_alias_covers). */
opd_keyset opd_alias_keyset(opd_dispatch_key alias);
bool opd_alias_covers(opd_dispatch_key alias, opd_dispatch_key runtime_key);
/* Backend keys whose kernels block the CompositeImplicitAutograd kernel at an autograd
 * key (c10's getBackendKeySetFromAutograd; empty for non-autograd keys). */
opd_keyset opd_autograd_backend_keyset(opd_dispatch_key autograd_key);
/* The backends of PyTorch's "AutogradOther" group (sparse, quantized, ...). */
opd_keyset opd_autogradother_backends(void);
/* The autograd runtime key of a backend: AutogradCPU for CPU. */
opd_dispatch_key opd_autograd_key_of_backend(opd_backend b);

#ifdef __cplusplus
}
#endif
#endif

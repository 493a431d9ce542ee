/* table.c: computes an operator's dispatch table and fallthrough masks from its
 * registrations and the backend fallbacks.
 *
 * [Note: Filling the dispatch table]
 * For runtime key K, with "has X" meaning a live kernel or fallthrough registration of
 * this operator at key X, the first rule that applies fills K's slot (PyTorch 1.13's
 * OperatorEntry::computeDispatchTableEntryWithDebug):
 *   1. a registration at K itself (the newest one wins);
 *   2. CompositeExplicitAutogradNonFunctional, if it covers K (or K is Undefined);
 *   3. CompositeExplicitAutograd, likewise;
 *   4. CompositeImplicitAutograd, likewise, except that
 *      a. at AutogradOther, when the operator has a registration at any key of the
 *         AutogradOther group (sparse, quantized, ...), the slot gets the ambiguity kernel;
 *      b. at an autograd key whose backend keys (opd_autograd_backend_keyset) have a
 *         registration, or at any key when CompositeExplicitAutograd has one, the math
 *         kernel is not used and the rules go on;
 *   5. Autograd, if it covers K (autograd keys only);
 *   6. the backend fallback of K (a fallthrough or a real kernel);
 *   7. nothing: the missing kernel, which raises NotImplemented.
 * Alias-key fallthroughs spread like kernels. A fallthrough in a slot puts its
 * functionality in the operator's fallthrough mask for that backend, which removes it
 * from call key sets before the lookup (see [Note: The call path]).
 *
 * A registration change at key X recomputes exactly the slots whose rule can read X:
 * X itself, the autograd keys whose backend set contains X (rule 4b) for a runtime X, and
 * for an alias X every key it covers, plus everything CompositeImplicitAutograd covers
 * when X is CompositeExplicitAutograd (rule 4b again). PyTorch 1.13 forgets the last two
 * and can keep stale slots (the oracle's `stale_in_1_13`); opd does not.
 */
#include <assert.h>

#include "dispatcher_internal.h"

static bool has_any_registration(const opd_operator *op, opd_keyset keys) {
  opd_keyset_iter it = opd_keyset_iter_begin(keys);
  opd_dispatch_key k;
  while (opd_keyset_iter_next(&it, &k))
    if (op->regs[k]) return true;
  return false;
}

static opd__slot_info from_registration(const opd__registration *r) {
  return (opd__slot_info){
      r->kind == OPD__REG_FALLTHROUGH ? OPD__SRC_FALLTHROUGH_OP : OPD__SRC_KERNEL, r->key, r};
}

opd__slot_info opd__table_compute(const opd_operator *op, opd_dispatch_key k) {
  const opd__registration *const *regs = (const opd__registration *const *)op->regs;
  if (regs[k]) return from_registration(regs[k]);
  static const opd_dispatch_key explicit_aliases[] = {
      OPD_KEY_CompositeExplicitAutogradNonFunctional, OPD_KEY_CompositeExplicitAutograd};
  for (int i = 0; i < 2; i++) {
    opd_dispatch_key alias = explicit_aliases[i];
    if (regs[alias] && opd_alias_covers(alias, k)) return from_registration(regs[alias]);
  }
  const opd__registration *math = regs[OPD_KEY_CompositeImplicitAutograd];
  if (math && opd_alias_covers(OPD_KEY_CompositeImplicitAutograd, k)) {
    if (k == OPD_KEY_AutogradOther && has_any_registration(op, opd_autogradother_backends()))
      return (opd__slot_info){OPD__SRC_AMBIGUOUS, OPD_KEY_CompositeImplicitAutograd, NULL};
    bool blocked = regs[OPD_KEY_CompositeExplicitAutograd] ||
                   has_any_registration(op, opd_autograd_backend_keyset(k));
    if (!blocked) return from_registration(math);
  }
  if (regs[OPD_KEY_Autograd] && opd_alias_covers(OPD_KEY_Autograd, k))
    return from_registration(regs[OPD_KEY_Autograd]);
  const opd__registration *fb = opd__fallbacks[opd_key_slot(k)];
  if (fb)
    return (opd__slot_info){
        fb->kind == OPD__REG_FALLBACK ? OPD__SRC_FALLBACK : OPD__SRC_FALLTHROUGH_GLOBAL, k, fb};
  return (opd__slot_info){OPD__SRC_MISSING, k, NULL};
}

static const opd_kernel *kernel_of(const opd__slot_info *info) {
  switch (info->source) {
  case OPD__SRC_KERNEL:
  case OPD__SRC_FALLBACK: return &info->reg->kernel;
  case OPD__SRC_FALLTHROUGH_OP:
  case OPD__SRC_FALLTHROUGH_GLOBAL: return &opd__fallthrough_kernel;
  case OPD__SRC_AMBIGUOUS: return &opd__ambiguous_kernel;
  case OPD__SRC_MISSING: break;
  }
  return &opd__missing_kernel;
}

bool opd__fallthrough_pending;

/* Slots are stored before the masks. A slot that turns into a fallthrough gets the
 * pending-fallthrough kernel first: a call that read the old mask (which still has the
 * slot's functionality) and then reaches the slot falls through, as the new mask makes
 * later calls do ([Note: Registration under traffic] in registry.c). */
static void update_slot(opd_operator *op, opd_dispatch_key k) {
  unsigned slot = opd_key_slot(k);
  op->slots[slot] = opd__table_compute(op, k);
  const opd_kernel *kernel = kernel_of(&op->slots[slot]);
  const opd_kernel *old = atomic_load_explicit(&op->hot.table[slot], memory_order_relaxed);
  if (kernel == &opd__fallthrough_kernel && old && old != kernel) {
    kernel = &opd__pending_fallthrough_kernel;
    opd__fallthrough_pending = true;
  }
  atomic_store_explicit(&op->hot.table[slot], kernel, memory_order_release);
}

void opd__table_settle(opd_operator *op) {
  for (unsigned s = 0; s < OPD_NUM_RUNTIME_SLOTS; s++)
    if (atomic_load_explicit(&op->hot.table[s], memory_order_relaxed) ==
        &opd__pending_fallthrough_kernel) {
      assert(kernel_of(&op->slots[s]) == &opd__fallthrough_kernel);
      atomic_store_explicit(&op->hot.table[s], &opd__fallthrough_kernel, memory_order_release);
    }
}

static bool is_fallthrough(const opd_operator *op, opd_dispatch_key k) {
  opd__slot_source s = op->slots[opd_key_slot(k)].source;
  return s == OPD__SRC_FALLTHROUGH_OP || s == OPD__SRC_FALLTHROUGH_GLOBAL;
}

static void update_masks(opd_operator *op) {
  uint64_t masks[1 + OPD_NUM_BACKENDS];
  for (int b = 0; b <= OPD_NUM_BACKENDS; b++) masks[b] = ~UINT64_C(0);
  for (int f = 1; f <= OPD_NUM_FUNCTIONALITIES; f++) {
    uint64_t bit = opd_keyset_of((opd_dispatch_key)f).repr;
    bool per_backend = opd_key_kind_of((opd_dispatch_key)f) == OPD_KEY_KIND_PER_BACKEND;
    for (int b = 0; b < OPD_NUM_BACKENDS; b++) {
      opd_dispatch_key k = per_backend ? opd_key_for_backend((opd_dispatch_key)f, (opd_backend)b)
                                       : (opd_dispatch_key)f;
      if (is_fallthrough(op, k)) masks[1 + b] &= ~bit;
    }
  }
  masks[0] = masks[1 + OPD_BACKEND_CPU]; /* no backend in the arguments: CPU */
  for (int b = 0; b <= OPD_NUM_BACKENDS; b++) {
    /* a call's key set keeps its backends (opd_keyset_slot) */
    assert((masks[b] & OPD_BACKEND_BITS_MASK) == OPD_BACKEND_BITS_MASK);
    atomic_store_explicit(&op->hot.non_fallthrough[b], masks[b], memory_order_release);
  }
}

static void update_slots_in(opd_operator *op, opd_dispatch_key alias) {
  for (unsigned s = 0; s < OPD_NUM_RUNTIME_SLOTS; s++) {
    opd_dispatch_key k = opd_slot_key(s);
    if (opd_alias_covers(alias, k)) update_slot(op, k);
  }
}

void opd__table_update(opd_operator *op, opd_dispatch_key key) {
  if (opd_key_is_alias(key)) {
    update_slots_in(op, key);
    if (key == OPD_KEY_CompositeExplicitAutograd)
      update_slots_in(op, OPD_KEY_CompositeImplicitAutograd);
  } else {
    update_slot(op, key);
    /* the autograd keys whose math-kernel rule reads this key (rules 4a and 4b) */
    opd_backend b = opd_key_backend(key);
    opd_dispatch_key readers[] = {OPD_KEY_AutogradOther, OPD_KEY_AutogradNestedTensor,
                                  b == OPD_NUM_BACKENDS ? OPD_KEY_Undefined
                                                        : opd_autograd_key_of_backend(b)};
    for (int i = 0; i < 3 && key != OPD_KEY_Undefined; i++)
      if (readers[i] != OPD_KEY_Undefined &&
          opd_keyset_has(opd_autograd_backend_keyset(readers[i]), key))
        update_slot(op, readers[i]);
  }
  update_masks(op);
}

void opd__table_update_slot(opd_operator *op, opd_dispatch_key k) {
  update_slot(op, k);
  update_masks(op);
}

void opd__table_update_all(opd_operator *op) {
  for (unsigned s = 0; s < OPD_NUM_RUNTIME_SLOTS; s++) update_slot(op, opd_slot_key(s));
  update_masks(op);
}

/* tensor_internal.h: private to the dispatcher library: the tensor slab (tensor_slab.c) and
 * the CPU allocator's accounting of the data it holds (cpu_allocator.c), which tensor.c
 * uses (see [Note: The memory of a tensor] in opd/tensor.h). */
#ifndef OPD_TENSOR_INTERNAL_H
#define OPD_TENSOR_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define OPD__TENSOR_SLOT_BYTES 96

/* A 96-byte slot, or NULL with OPD_ENOMEM recorded. */
void *opd__tensor_slab_alloc(void);
void opd__tensor_slab_free(void *slot);
/* The slot an address inside a slot belongs to. */
void *opd__tensor_slab_slot_of(const void *inside);

/* Counts the bytes of a slab tensor's data (held outside the allocator's blocks) as in use,
 * against the thread's credit ([Note: The threads' credit for tiny tensors] in
 * cpu_allocator.c): 0, or OPD_ERESOURCE past the limit. */
int opd__cpu_account_tiny(size_t nbytes);
void opd__cpu_unaccount_tiny(size_t nbytes);

/* [Note: Memory reserved before it is allocated] (budget.c): charges a new storage's bytes
 * to this thread's budget, if one is installed (*charged says whether it was): 0, or
 * OPD_ERESOURCE past its limit. */
int opd__budget_charge(uint64_t bytes, bool *charged);
/* Refunds a charged storage freed while its budget is installed; false (nothing done) when
 * the installed budget's charge cannot include it (another thread's, or none). */
bool opd__budget_refund(uint64_t bytes);
/* Takes a charged storage's bytes off the installed budget, for its caller to account:
 * `bytes`, or 0 when the budget's charge cannot include them. */
uint64_t opd__budget_take(uint64_t bytes);

#endif

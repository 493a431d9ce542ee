/* budget.c: memory budgets charged before allocation (see [Note: Memory reserved before it
 * is allocated] in opd/allocator.h). */
#include <assert.h>
#include <inttypes.h>
#include <stdatomic.h>

#include "opd/allocator.h"
#include "opd/cancel.h"
#include "opd/error.h"
#include "tensor_internal.h"

static _Thread_local opd_mem_budget *installed;
static _Thread_local const _Atomic bool *adopted; /* [Note: Cancelling long work] */

static int over_limit(const opd_mem_budget *b, uint64_t bytes, uint64_t cur) {
  return opd_error(OPD_ERESOURCE,
                   "%s limit reached: %" PRIu64 " more tensor bytes would take the %s past %s "
                   "(%" PRIu64 " held, limit %" PRIu64 ")",
                   b->owner, bytes, b->owner, b->limit_name, cur, b->limit);
}

int opd_mem_budget_reserve(opd_mem_budget *b, uint64_t bytes) {
  uint64_t cur = atomic_load_explicit(b->held, memory_order_relaxed);
  if (b->one_writer) { /* [Note: A budget with one writer] */
    if (bytes > b->limit || cur > b->limit - bytes) return over_limit(b, bytes, cur);
    atomic_store_explicit(b->held, cur + bytes, memory_order_relaxed);
    return 0;
  }
  do {
    if (bytes > b->limit || cur > b->limit - bytes) return over_limit(b, bytes, cur);
  } while (!atomic_compare_exchange_weak_explicit(b->held, &cur, cur + bytes, memory_order_relaxed,
                                                  memory_order_relaxed));
  return 0;
}

void opd_mem_budget_release(opd_mem_budget *b, uint64_t bytes) {
  if (b->one_writer) { /* [Note: A budget with one writer] */
    uint64_t cur = atomic_load_explicit(b->held, memory_order_relaxed);
    assert(cur >= bytes);
    atomic_store_explicit(b->held, cur - bytes, memory_order_relaxed);
    return;
  }
  uint64_t old = atomic_fetch_sub_explicit(b->held, bytes, memory_order_relaxed);
  assert(old >= bytes);
  (void)old;
}

void opd_mem_budget_install(opd_mem_budget *b) {
  b->charged = 0;
  installed = b;
}

void opd_mem_budget_uninstall(void) {
  opd_mem_budget *b = installed;
  installed = NULL;
  if (b && b->charged) opd_mem_budget_release(b, b->charged);
  if (b) b->charged = 0;
}

opd_mem_budget *opd_mem_budget_current(void) {
  return installed;
}

uint64_t opd_mem_owner_new(void) {
  static _Atomic uint64_t last_owner;
  return atomic_fetch_add_explicit(&last_owner, 1, memory_order_relaxed) + 1;
}

uint64_t opd_mem_owner_current(void) {
  const opd_mem_budget *b = installed;
  return b ? b->owner_id : 0;
}

int opd__budget_charge(uint64_t bytes, bool *charged) {
  opd_mem_budget *b = installed;
  *charged = false;
  if (!b || bytes == 0) return 0;
  int rc = opd_mem_budget_reserve(b, bytes);
  if (rc) return rc;
  b->charged += bytes;
  *charged = true;
  return 0;
}

bool opd__budget_refund(uint64_t bytes) {
  opd_mem_budget *b = installed;
  if (!b || b->charged < bytes) return false;
  b->charged -= bytes;
  opd_mem_budget_release(b, bytes);
  return true;
}

uint64_t opd__budget_take(uint64_t bytes) {
  opd_mem_budget *b = installed;
  if (!b || b->charged < bytes) return 0;
  b->charged -= bytes;
  return bytes;
}

/* ---- [Note: Cancelling long work] in opd/cancel.h ---- */

const _Atomic bool *opd_cancel_flag(void) {
  const opd_mem_budget *b = installed;
  return b ? &b->cancelled : adopted;
}

void opd_cancel_adopt(const _Atomic bool *flag) {
  adopted = flag;
}

bool opd_cancelled(void) {
  const _Atomic bool *f = opd_cancel_flag();
  return f && atomic_load_explicit(f, memory_order_relaxed);
}

int opd_cancelled_error(const char *what) {
  return opd_error(OPD_ECANCELED, "%s: cancelled (its session closed, or the daemon is stopping)",
                   what);
}

/* dispatcher_internal.h: private to the dispatcher library. The operator entry, the
 * registration record, and the functions that registry.c, table.c, call.c and
 * introspect.c share. */
#ifndef OPD_DISPATCHER_INTERNAL_H
#define OPD_DISPATCHER_INTERNAL_H

#include <pthread.h>

#include "opd/dispatcher.h"

typedef enum opd__reg_kind {
  OPD__REG_DEF,
  OPD__REG_IMPL,
  OPD__REG_FALLTHROUGH,
  OPD__REG_FALLBACK,
  OPD__REG_FALLBACK_FALLTHROUGH,
} opd__reg_kind;

typedef struct opd__registration opd__registration;
struct opd__registration {
  opd_kernel kernel; /* first: table slots point here */
  opd_reg_id id;
  opd__reg_kind kind;
  opd_dispatch_key key; /* impl, fallthrough and fallback registrations */
  opd_operator *op;     /* NULL for fallbacks */
  opd_provenance prov;
  opd__registration *older;               /* the next older one at the same key */
  opd__registration *all_prev, *all_next; /* every live registration */
};

/* Where a table slot's entry comes from; the names are the oracle's `source` words. */
typedef enum opd__slot_source {
  OPD__SRC_KERNEL,             /* a kernel at the slot's key or at an alias (`via`) */
  OPD__SRC_FALLTHROUGH_OP,     /* this operator's fallthrough at `via` */
  OPD__SRC_FALLTHROUGH_GLOBAL, /* a fallthrough backend fallback */
  OPD__SRC_FALLBACK,           /* a real backend fallback kernel */
  OPD__SRC_AMBIGUOUS,          /* ambiguous_autogradother */
  OPD__SRC_MISSING,
} opd__slot_source;

typedef struct opd__slot_info {
  opd__slot_source source;
  opd_dispatch_key via;         /* the key the registration sits at */
  const opd__registration *reg; /* NULL for ambiguous and missing */
} opd__slot_info;

struct opd_operator {
  struct opd__operator_hot hot; /* first: the inline call path casts to it */
  /* key extractor: bit i set when argument i is a Tensor, Tensor?, Tensor[] or Tensor?[] */
  uint64_t tensor_args;
  uint32_t num_args;
  uint32_t hash;
  char *name;
  opd_schema *schema;
  opd__registration *def;
  opd__registration *regs[OPD_NUM_KEYS]; /* impls and fallthroughs, newest first */
  opd__slot_info slots[OPD_NUM_RUNTIME_SLOTS];
};

/* Kernels that stand in table slots without a registration of their own. */
extern const opd_kernel opd__missing_kernel;
extern const opd_kernel opd__ambiguous_kernel;
extern const opd_kernel opd__fallthrough_kernel;
/* Stands in a slot that has just become a fallthrough until a grace period has passed:
 * it falls through (redispatches below its key), as the new mask would have made the call
 * do. See [Note: Registration under traffic] in registry.c. */
extern const opd_kernel opd__pending_fallthrough_kernel;

/* The registry lock, held by every registration and by introspection. */
extern pthread_mutex_t opd__registry_lock;
/* Live backend fallbacks per slot (NULL: none). Guarded by the registry lock. */
extern opd__registration *opd__fallbacks[OPD_NUM_RUNTIME_SLOTS];

/* table.c: recomputes the slots of `op` that a registration change at `key` can affect,
 * then the fallthrough masks. */
void opd__table_update(opd_operator *op, opd_dispatch_key key);
/* Set (lock held) when a slot received the pending-fallthrough kernel. */
extern bool opd__fallthrough_pending;
/* After a grace period: the fallthrough kernel replaces the pending one in every slot. */
void opd__table_settle(opd_operator *op);
/* Recomputes every slot and mask. */
void opd__table_update_all(opd_operator *op);
/* What rule 1..7 gives for one slot (no side effects). */
opd__slot_info opd__table_compute(const opd_operator *op, opd_dispatch_key k);
/* Recomputes one slot's kernel and the masks, for a backend fallback change. */
void opd__table_update_slot(opd_operator *op, opd_dispatch_key k);

/* registry.c: every operator (lock held). */
void opd__for_each_op_locked(void (*fn)(opd_operator *op, void *arg), void *arg);
/* Makes sure the singleton is initialized (default fallbacks registered). */
void opd__dispatcher_init(void);
/* The schema's signature code ("T:TTs"), or NULL if it has types unboxed calls lack. */
int opd__schema_signature(const opd_schema *s, char *buf, size_t len);

#endif

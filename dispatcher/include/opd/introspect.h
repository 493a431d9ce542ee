/* opd/introspect.h: what the dispatcher will do, for people and for the status endpoint:
 * an operator's registrations and computed dispatch table as JSON or text. */
#ifndef OPD_INTROSPECT_H
#define OPD_INTROSPECT_H

#include <jansson.h>

#include "opd/dispatcher.h"

#ifdef __cplusplus
extern "C" {
#endif

/* One table slot as the oracle's fixtures spell it: {"source": "CPU"} for a kernel at the
 * key itself, {"source": "CompositeImplicitAutograd"} (or another alias) for an alias
 * kernel, {"source": "fallthrough", "scope": "op", "via": K}, {"source": "fallthrough",
 * "scope": "global"}, {"source": "fallback"}, {"source": "ambiguous_autogradother"},
 * {"source": "missing"}; kernel entries add "kernel" (its name) and "registration" (id).
 * NULL for a key that is not a runtime key. A new reference. */
json_t *opd_op_slot_json(const opd_operator *op, opd_dispatch_key runtime_key);
/* {"name", "schema" (null until defined), "registrations": [...], "table": {key: slot}}
 * with every runtime key in the table. A new reference, NULL on allocation failure. */
json_t *opd_op_json(const opd_operator *op);
/* The id of the registration that fills the slot (0: none). */
opd_reg_id opd_op_slot_registration(const opd_operator *op, opd_dispatch_key runtime_key);
/* The invariant behind incremental table updates: recomputes every slot and mask from
 * scratch and returns how many differ from the stored ones (0 when none is stale). */
int opd_op_count_stale_slots(const opd_operator *op);
/* A text dump of the computed table like PyTorch's _dispatch_dump_table: one line per
 * runtime key that has an entry. malloc'd; NULL on allocation failure. */
char *opd_op_dump_table(const opd_operator *op);

#ifdef __cplusplus
}
#endif
#endif

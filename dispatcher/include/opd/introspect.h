/* opd/introspect.h: what the dispatcher will do, for people and for the status endpoint:
 * an operator's registrations and computed dispatch table as JSON or text. Each function
 * reads under the registry lock, so what it renders is one state of the registry, and
 * every string it renders is valid UTF-8 ([Note: Strings on the wire are UTF-8]): names
 * and provenance from plugins are escaped where they are not. */
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
/* Where a call of `op` whose tensor arguments have the key set `args` goes under the
 * calling thread's dispatch state, read in one state of the registry (the kernel and its
 * slot's entry always agree, however registrations change meanwhile): {"key": the runtime
 * key, "kernel": the name of the kernel its slot holds, "entry": the slot as
 * opd_op_slot_json gives it (null when the key is not a runtime key)}, and the key set the
 * call dispatches with in *dispatch_keyset. A new reference, NULL on allocation failure. */
json_t *opd_op_dispatch_json(const opd_operator *op, opd_keyset args, opd_keyset *dispatch_keyset);
/* A JSON string of s, whatever its bytes (a plugin's kernel name, a file name, an
 * operator name): s itself when it is valid UTF-8, else s with each byte that is not part
 * of a character escaped as \xNN (opd_utf8_escape), as jansson takes only UTF-8. A new
 * reference, NULL on allocation failure. */
json_t *opd_json_text(const char *s);
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

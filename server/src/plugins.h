/* plugins.h: the daemon's plugins (opd/library.h): loading from the plugin directory by file
 * name only, the registrations each plugin owns, unloading once none remains, and the
 * admin-made registrations (internal to the server; used by admin.c). Thread-safe.
 */
#ifndef OPD_SERVER_PLUGINS_H
#define OPD_SERVER_PLUGINS_H

#include <jansson.h>

#include "opd/dispatcher.h"

typedef struct opd__plugins opd__plugins;

/* A plugin set for directory `dir` (NULL or "": loading is refused). */
int opd__plugins_new(const char *dir, opd__plugins **out);
/* Deregisters everything left (admin registrations, then each plugin's), unloads the
 * plugins and frees the set. */
void opd__plugins_free(opd__plugins *p);

/* Loads `file` (a plain file name in the directory: no '/', no leading '.', ending in
 * ".so"; a symlink or anything but a regular file is refused) and runs its init; on
 * error nothing of it stays. The JSON result: {"plugin": file, "registrations": [ids]}. */
int opd__plugins_load(opd__plugins *p, const char *file, json_t **result);
/* OPD_EBUSY while any registration of the plugin remains (OPD_ENOENT: not loaded);
 * otherwise waits for a grace period and unmaps it. */
int opd__plugins_unload(opd__plugins *p, const char *file);
/* Removes every registration of the plugin, then unloads it: undoes a load_plugin whose
 * answer could not be made ([Note: A change the admin cannot report is undone] in admin.c). */
int opd__plugins_discard(opd__plugins *p, const char *file);
#define OPD__PLUGINS_MAX_DATA 256
/* A registration made by an operator of the daemon: an impl of operator `op` at `key` with
 * the kernel of registration `kernel_of` (> 0: a loaded plugin's registration; the new one
 * then belongs to the same plugin, so the plugin stays loaded while it exists). `data`
 * (NULL, or 1 to OPD__PLUGINS_MAX_DATA bytes) becomes the kernel's data as a string the set
 * owns until the registration is removed; refused for a kernel that has data of its own. */
opd_reg_id opd__plugins_register(opd__plugins *p, const char *op, const char *key,
                                 opd_reg_id kernel_of, const char *data);
/* An admin-owned fallthrough of operator `op` at `key`. */
opd_reg_id opd__plugins_register_fallthrough(opd__plugins *p, const char *op, const char *key);
/* Admin-owned registrations: the definition of an operator from `schema` in namespace `ns`
 * (parsed as any schema: hostile input is refused), and a fallthrough backend fallback at
 * runtime key `key`. */
opd_reg_id opd__plugins_def(opd__plugins *p, const char *ns, const char *schema);
opd_reg_id opd__plugins_fallback_fallthrough(opd__plugins *p, const char *key);
/* Removes any registration by id (a plugin's or not); the owner forgets it. */
int opd__plugins_deregister(opd__plugins *p, opd_reg_id id);
/* Whether registration `id` is a plugin's or the admin's (made through this set). */
bool opd__plugins_owns(opd__plugins *p, opd_reg_id id);
/* The plugin directory ("": none). */
const char *opd__plugins_dir(const opd__plugins *p);
/* {"plugins": [{"plugin", "registrations": [ids]}], "admin_registrations": [ids]} */
json_t *opd__plugins_list(opd__plugins *p);

#endif

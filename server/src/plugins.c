/* plugins.c: loading and unloading plugins, and the registrations they and the admin own
 * (see plugins.h and docs/ADMIN.md).
 *
 * [Note: Loading a plugin safely]
 * Only a plain file name is accepted ([A-Za-z0-9_.+-], no leading '.', ending in ".so"),
 * opened with openat() relative to the plugin directory's descriptor with O_NOFOLLOW, and
 * checked to be a regular file; dlopen() then maps that very descriptor through
 * /proc/self/fd, so nothing can swap the file between the check and the load (the
 * descriptor stays open while the plugin is loaded: the loader knows objects by that name,
 * which must not be reused by another plugin). Symlinks
 * are refused outright, wherever they point. The plugin's init function (opd/library.h)
 * reports every registration's id; they are the plugin's, and unloading is refused while
 * any remains. Unloading waits for a grace period ([Note: Registration under traffic] in
 * dispatcher/src/registry.c) before dlclose(): by then no call can still be running the
 * plugin's code, since each deregistration already waited for the calls in flight. What the
 * plugin's extension blocks registered (graph passes) is undone by the unload itself, newest
 * first, before the grace period; each undo returns once nothing runs that code ([Note:
 * Removing a plugin pass under compilation] in graph/src/passes/pass_manager.c).
 */
#include "plugins.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "opd/error.h"
#include "opd/library.h"
#include "opd/log.h"
#include "opd/memory.h"

typedef struct id_list {
  opd_reg_id *ids;
  char **data; /* per id: the kernel data string the admin gave it (owned), or NULL */
  size_t n, cap;
} id_list;

/* What a plugin's extension blocks registered, and how to remove it (opd/library.h). */
typedef struct undo_entry {
  int (*undo)(int64_t handle);
  int64_t handle;
} undo_entry;

typedef struct plugin {
  char *file;
  char *origin; /* "plugin FILE": the provenance origin of its registrations */
  void *handle;
  int fd; /* the file, open while it is mapped */
  id_list regs;
  undo_entry *undos;
  size_t nundos, cap_undos;
  struct plugin *next;
} plugin;

struct opd__plugins {
  pthread_mutex_t mu;
  char *dir;
  plugin *plugins;
  id_list admin_regs; /* defs, fallthroughs and fallback fallthroughs made by the admin */
};

/* Records id with `data` (may be NULL; owned from now on and freed with the entry, but not
 * on failure). */
static int ids_add(id_list *l, opd_reg_id id, char *data) {
  if (l->n == l->cap) {
    size_t cap = l->cap ? 2 * l->cap : 8;
    opd_reg_id *ids = opd__realloc(l->ids, cap * sizeof *ids);
    if (ids) l->ids = ids;
    char **d = ids ? opd__realloc(l->data, cap * sizeof *d) : NULL;
    if (!d) return opd_error(OPD_ENOMEM, "out of memory recording a registration");
    l->data = d;
    l->cap = cap;
  }
  l->data[l->n] = data;
  l->ids[l->n++] = id;
  return 0;
}

/* Forgets a deregistered id (its grace period is over: its data can go). */
static bool ids_remove(id_list *l, opd_reg_id id) {
  for (size_t i = 0; i < l->n; i++)
    if (l->ids[i] == id) {
      opd__free(l->data[i]);
      l->n--;
      l->ids[i] = l->ids[l->n];
      l->data[i] = l->data[l->n];
      return true;
    }
  return false;
}

/* Newest first: what a registration shadowed comes back in order. */
static void ids_deregister_all(id_list *l) {
  while (l->n > 0) {
    l->n--;
    opd_deregister(l->ids[l->n]);
    opd__free(l->data[l->n]);
  }
}

static void ids_free(id_list *l) {
  opd__free(l->ids);
  opd__free(l->data);
}

static json_t *ids_json(const id_list *l) {
  json_t *a = json_array();
  for (size_t i = 0; i < l->n; i++) json_array_append_new(a, json_integer(l->ids[i]));
  return a;
}

int opd__plugins_new(const char *dir, opd__plugins **out) {
  opd__plugins *p = opd__calloc(1, sizeof *p);
  if (!p || !(p->dir = opd__strdup(dir ? dir : ""))) {
    opd__free(p);
    return opd_error(OPD_ENOMEM, "out of memory");
  }
  pthread_mutex_init(&p->mu, NULL);
  *out = p;
  return 0;
}

/* Undoes what the plugin's extension blocks registered, newest first. */
static void undo_all(plugin *pl) {
  while (pl->nundos) {
    undo_entry *u = &pl->undos[--pl->nundos];
    u->undo(u->handle);
  }
}

static void plugin_free(plugin *pl) {
  undo_all(pl);
  opd__free(pl->undos);
  if (pl->handle) dlclose(pl->handle);
  if (pl->fd >= 0) close(pl->fd);
  ids_free(&pl->regs);
  opd__free(pl->origin);
  opd__free(pl->file);
  opd__free(pl);
}

void opd__plugins_free(opd__plugins *p) {
  if (!p) return;
  ids_deregister_all(&p->admin_regs);
  ids_free(&p->admin_regs);
  /* admin registrations may use plugin kernels: they went first */
  for (plugin *pl = p->plugins; pl; pl = pl->next) {
    ids_deregister_all(&pl->regs);
    undo_all(pl);
  }
  opd_synchronize_readers();
  while (p->plugins) {
    plugin *next = p->plugins->next;
    plugin_free(p->plugins);
    p->plugins = next;
  }
  pthread_mutex_destroy(&p->mu);
  opd__free(p->dir);
  opd__free(p);
}

static int check_file_name(const char *file) {
  size_t n = strlen(file);
  if (n == 0 || n > 255 || file[0] == '.' || n < 4 || strcmp(file + n - 3, ".so") != 0)
    return opd_error(OPD_EINVAL,
                     "plugin '%.300s' refused: give the file name of a .so file in the plugin "
                     "directory (no path, no leading '.')",
                     file);
  for (const char *c = file; *c; c++)
    if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') ||
          *c == '_' || *c == '-' || *c == '.' || *c == '+'))
      return opd_error(OPD_EINVAL,
                       "plugin '%.300s' refused: a plugin is named by its file name only "
                       "(letters, digits, '_', '-', '.', '+')",
                       file);
  return 0;
}

static plugin *find_plugin(opd__plugins *p, const char *file) {
  for (plugin *pl = p->plugins; pl; pl = pl->next)
    if (strcmp(pl->file, file) == 0) return pl;
  return NULL;
}

static plugin *owner_of(opd__plugins *p, opd_reg_id id) {
  for (plugin *pl = p->plugins; pl; pl = pl->next)
    for (size_t i = 0; i < pl->regs.n; i++)
      if (pl->regs.ids[i] == id) return pl;
  return NULL;
}

static void record(void *arg, opd_reg_id id) {
  plugin *pl = arg;
  if (ids_add(&pl->regs, id, NULL) != 0) opd_deregister(id); /* out of memory: do not leak it */
}

static int record_undo(void *arg, int (*undo)(int64_t handle), int64_t handle) {
  plugin *pl = arg;
  if (pl->nundos == pl->cap_undos) {
    size_t cap = pl->cap_undos ? 2 * pl->cap_undos : 4;
    undo_entry *u = opd__realloc(pl->undos, cap * sizeof *u);
    if (!u) {
      undo(handle);
      return opd_error(OPD_ENOMEM, "out of memory recording a registration of %s", pl->origin);
    }
    pl->undos = u;
    pl->cap_undos = cap;
  }
  pl->undos[pl->nundos++] = (undo_entry){undo, handle};
  return 0;
}

/* Mutex held. Opens the file safely ([Note: Loading a plugin safely]) and maps it. */
static void *map_plugin(const opd__plugins *p, const char *file, int *fd_out) {
  int dirfd = open(p->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dirfd < 0) {
    opd_error(OPD_ENOENT, "plugin directory '%.300s': %s", p->dir, strerror(errno));
    return NULL;
  }
  int fd = openat(dirfd, file, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  int err = errno;
  close(dirfd);
  if (fd < 0) {
    opd_error(err == ELOOP ? OPD_EINVAL : OPD_ENOENT, "plugin '%s' in '%.300s': %s", file, p->dir,
              err == ELOOP ? "a symlink (refused)" : strerror(err));
    return NULL;
  }
  struct stat st;
  void *handle = NULL;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    opd_error(OPD_EINVAL, "plugin '%s' refused: not a regular file", file);
  } else {
    char path[64];
    snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    if (!(handle = dlopen(path, RTLD_NOW | RTLD_LOCAL)))
      opd_error(OPD_EINVAL, "plugin '%s': %s", file, dlerror());
  }
  if (handle)
    *fd_out = fd;
  else
    close(fd);
  return handle;
}

int opd__plugins_load(opd__plugins *p, const char *file, json_t **result) {
  int rc = check_file_name(file);
  if (rc) return rc;
  if (!p->dir[0]) return opd_error(OPD_EINVAL, "no plugin directory is configured (plugin_dir)");
  pthread_mutex_lock(&p->mu);
  plugin *pl = NULL;
  if (find_plugin(p, file)) {
    rc = opd_error(OPD_EEXIST, "plugin '%s' is already loaded", file);
  } else if (!(pl = opd__calloc(1, sizeof *pl)) || (pl->fd = -1, !(pl->file = opd__strdup(file))) ||
             !(pl->origin = opd__malloc(strlen(file) + 8))) {
    rc = opd_error(OPD_ENOMEM, "out of memory loading plugin '%s'", file);
  } else {
    sprintf(pl->origin, "plugin %s", file);
    if (!(pl->handle = map_plugin(p, file, &pl->fd))) {
      rc = opd_last_error_code();
    } else {
      opd_plugin_init_fn init = (opd_plugin_init_fn)dlsym(pl->handle, OPD_PLUGIN_INIT_SYMBOL);
      opd_plugin_host host = {pl->origin, record, pl, record_undo};
      if (!init)
        rc = opd_error(OPD_EINVAL, "plugin '%s' has no %s function (see opd/library.h)", file,
                       OPD_PLUGIN_INIT_SYMBOL);
      else if ((rc = init(&host)) != 0)
        rc = opd_error(rc, "plugin '%s' failed to register: %s", file, opd_last_error());
    }
  }
  /* [Note: A change the admin cannot report is undone] (admin.c): the answer first */
  if (rc == 0 && !(*result = json_pack("{s:s, s:o, s:I}", "plugin", file, "registrations",
                                       ids_json(&pl->regs), "extensions", (json_int_t)pl->nundos)))
    rc = opd_error(OPD_ENOMEM, "out of memory answering load_plugin '%s': it was not loaded", file);
  if (rc == 0) {
    pl->next = p->plugins;
    p->plugins = pl;
    opd_log(OPD_LOG_INFO, "loaded plugin %s (%zu registrations, %zu extensions)", file, pl->regs.n,
            pl->nundos);
  } else if (pl) {
    ids_deregister_all(&pl->regs);
    undo_all(pl);
    opd_synchronize_readers();
    plugin_free(pl);
  }
  pthread_mutex_unlock(&p->mu);
  return rc;
}

static int unload(opd__plugins *p, const char *file, bool with_registrations) {
  pthread_mutex_lock(&p->mu);
  plugin **link = &p->plugins;
  while (*link && strcmp((*link)->file, file) != 0) link = &(*link)->next;
  plugin *pl = *link;
  int rc = 0;
  if (pl && with_registrations) ids_deregister_all(&pl->regs);
  if (!pl)
    rc = opd_error(OPD_ENOENT, "plugin '%.300s' is not loaded", file);
  else if (pl->regs.n)
    rc = opd_error(OPD_EBUSY,
                   "plugin '%s' still has %zu registrations (the first: id %lld); deregister "
                   "them first",
                   file, pl->regs.n, (long long)pl->regs.ids[0]);
  else
    *link = pl->next;
  pthread_mutex_unlock(&p->mu);
  if (rc) return rc;
  undo_all(pl);
  opd_synchronize_readers();
  plugin_free(pl);
  opd_log(OPD_LOG_INFO, "unloaded plugin %s", file);
  return 0;
}

int opd__plugins_unload(opd__plugins *p, const char *file) {
  return unload(p, file, false);
}

int opd__plugins_discard(opd__plugins *p, const char *file) {
  return unload(p, file, true);
}

/* Records a new registration (or the error of a failed one) under the mutex: the owner's
 * list takes it with `data`, which is freed if it cannot. */
static opd_reg_id keep(id_list *owner, opd_reg_id id, char *data) {
  if (id < 0) {
    opd__free(data);
  } else if (ids_add(owner, id, data) != 0) {
    opd_deregister(id); /* after its grace period: the kernel no longer reads data */
    opd__free(data);
    id = OPD_ENOMEM;
  }
  return id;
}

opd_reg_id opd__plugins_register(opd__plugins *p, const char *op, const char *key_name,
                                 opd_reg_id kernel_of, const char *data) {
  opd_dispatch_key key;
  if (kernel_of <= 0)
    return opd_error(OPD_EINVAL, "kernel_of %lld: a registration id is a positive integer",
                     (long long)kernel_of);
  if (opd_key_from_name(key_name, &key) != 0)
    return opd_error(OPD_EINVAL, "unknown dispatch key '%.100s'", key_name);
  if (data && (strlen(data) == 0 || strlen(data) > OPD__PLUGINS_MAX_DATA))
    return opd_error(OPD_EINVAL, "kernel data: 1 to %d bytes", OPD__PLUGINS_MAX_DATA);
  char *copy = data ? opd__strdup(data) : NULL;
  if (data && !copy) return opd_error(OPD_ENOMEM, "out of memory");
  pthread_mutex_lock(&p->mu);
  opd_reg_id id;
  opd_kernel kernel;
  opd_provenance prov;
  plugin *owner = owner_of(p, kernel_of);
  if (!owner)
    id = opd_error(OPD_EINVAL, "registration %lld is not a loaded plugin's", (long long)kernel_of);
  else if ((id = opd_registration_kernel(kernel_of, &kernel, &prov)) == 0) {
    if (copy && kernel.data)
      id = opd_error(OPD_EINVAL,
                     "registration %lld's kernel has data of its own: it takes no \"data\"",
                     (long long)kernel_of);
    else {
      if (copy) kernel.data = copy;
      id = opd_impl(op, key, &kernel, (opd_provenance){owner->origin, "admin", 0});
    }
  }
  id = keep(owner ? &owner->regs : &p->admin_regs, id, copy); /* no owner: id is an error */
  pthread_mutex_unlock(&p->mu);
  return id;
}

opd_reg_id opd__plugins_register_fallthrough(opd__plugins *p, const char *op,
                                             const char *key_name) {
  opd_dispatch_key key;
  if (opd_key_from_name(key_name, &key) != 0)
    return opd_error(OPD_EINVAL, "unknown dispatch key '%.100s'", key_name);
  pthread_mutex_lock(&p->mu);
  opd_reg_id id = keep(&p->admin_regs,
                       opd_impl_fallthrough(op, key, (opd_provenance){"admin", "admin", 0}), NULL);
  pthread_mutex_unlock(&p->mu);
  return id;
}

opd_reg_id opd__plugins_def(opd__plugins *p, const char *ns, const char *schema) {
  pthread_mutex_lock(&p->mu);
  opd_reg_id id =
      keep(&p->admin_regs, opd_def(ns, schema, (opd_provenance){"admin", "admin", 0}), NULL);
  pthread_mutex_unlock(&p->mu);
  return id;
}

opd_reg_id opd__plugins_fallback_fallthrough(opd__plugins *p, const char *key_name) {
  opd_dispatch_key key;
  if (opd_key_from_name(key_name, &key) != 0)
    return opd_error(OPD_EINVAL, "unknown dispatch key '%.100s'", key_name);
  pthread_mutex_lock(&p->mu);
  opd_reg_id id = keep(&p->admin_regs,
                       opd_fallback_fallthrough(key, (opd_provenance){"admin", "admin", 0}), NULL);
  pthread_mutex_unlock(&p->mu);
  return id;
}

int opd__plugins_deregister(opd__plugins *p, opd_reg_id id) {
  pthread_mutex_lock(&p->mu);
  int rc = opd_deregister(id);
  if (rc == 0 && !ids_remove(&p->admin_regs, id))
    for (plugin *pl = p->plugins; pl && !ids_remove(&pl->regs, id); pl = pl->next) {
    }
  pthread_mutex_unlock(&p->mu);
  return rc;
}

bool opd__plugins_owns(opd__plugins *p, opd_reg_id id) {
  pthread_mutex_lock(&p->mu);
  bool owned = owner_of(p, id) != NULL;
  for (size_t i = 0; !owned && i < p->admin_regs.n; i++) owned = p->admin_regs.ids[i] == id;
  pthread_mutex_unlock(&p->mu);
  return owned;
}

const char *opd__plugins_dir(const opd__plugins *p) {
  return p->dir;
}

json_t *opd__plugins_list(opd__plugins *p) {
  pthread_mutex_lock(&p->mu);
  json_t *plugins = json_array();
  for (plugin *pl = p->plugins; pl; pl = pl->next) /* file names are ASCII: check_file_name */
    json_array_append_new(
        plugins, json_pack("{s:s, s:o}", "plugin", pl->file, "registrations", ids_json(&pl->regs)));
  json_t *j =
      json_pack("{s:o, s:o}", "plugins", plugins, "admin_registrations", ids_json(&p->admin_regs));
  pthread_mutex_unlock(&p->mu);
  return j;
}

/* opd/library.h: the plugin API, in the spirit of PyTorch's TORCH_LIBRARY,
 * TORCH_LIBRARY_IMPL and TORCH_LIBRARY_FRAGMENT.
 *
 *   #include <opd/library.h>
 *
 *   OPD_LIBRARY(myops, m) {                       // defines the namespace's operators
 *     opd_lib_def(m, "scaled_add(Tensor a, Tensor b, float alpha) -> Tensor");
 *     opd_lib_impl(m, "scaled_add", &math_kernel);     // no key: CompositeImplicitAutograd
 *   }
 *   OPD_LIBRARY_FRAGMENT(myops, m) { ... }        // more definitions for the namespace
 *   OPD_LIBRARY_IMPL(myops, CPU, m) {             // kernels at one key
 *     opd_lib_impl(m, "scaled_add", &cpu_kernel);
 *     opd_lib_fallthrough(m, "other_op");
 *   }
 *   OPD_LIBRARY_IMPL(_, Meta, m) {                // backend fallbacks for every operator
 *     opd_lib_fallback(m, &boxed_kernel);         // or opd_lib_fallback_fallthrough(m)
 *   }
 *   OPD_PLUGIN_INIT()                             // once per plugin: its exported entry
 *
 * Keys are dispatch key names without the prefix: CPU, CUDA, Meta, AutogradCPU, Autograd,
 * CompositeImplicitAutograd, CompositeExplicitAutograd, ... The rules are those of
 * in-process registration (opd/dispatcher.h): a second def of an operator fails, a second
 * kernel at a key overrides the first until it is removed, a second backend fallback at a
 * key fails, unboxed kernels are checked against the schema. Operator names in
 * opd_lib_impl / opd_lib_fallthrough may omit the namespace; a qualified name must name the
 * block's namespace.
 *
 * Nothing registers when the plugin is mapped: the blocks are collected, and the daemon
 * calls the plugin's one exported function, opd_plugin_init(host), which runs the
 * definition blocks (OPD_LIBRARY, OPD_LIBRARY_FRAGMENT) and then the others, giving every
 * registration the provenance host->origin ("plugin libmyops.so") and reporting its id
 * through host->record, so that the daemon knows which registrations are the plugin's
 * (to list them, and to refuse unloading while any remains). On the first error it stops
 * and returns it; the daemon then removes what the plugin registered.
 *
 * Other components extend a plugin through blocks of their own, run last, after every
 * kernel block: graph passes (OPD_GRAPH_PASSES in opd/graph_pass.h). What such a block
 * registers is reported through host->record_undo with the function that removes it; the
 * daemon calls those when the plugin is unloaded (or fails to load), newest first and before
 * the plugin's code is unmapped, so they need no deregistration by the admin.
 *
 * Build a plugin against the installed headers: cc -shared -fPIC $(pkg-config --cflags
 * opd-plugin) myops.c -o myops.so. Its undefined opd_* symbols resolve against the daemon.
 */
#ifndef OPD_LIBRARY_H
#define OPD_LIBRARY_H

#include <stdio.h>
#include <string.h>

#include "opd/dispatcher.h"
#include "opd/error.h"
#include "opd/unboxed.h"

#ifdef __cplusplus
extern "C" {
#endif

/* What the loader gives a plugin's init function. */
typedef struct opd_plugin_host {
  const char *origin; /* provenance origin; must outlive the plugin's registrations */
  void (*record)(void *arg, opd_reg_id id);
  void *arg;
  /* Something else the plugin registered, removed by undo(handle) at unload: 0, or a
   * negative error after undoing it at once (it could not be recorded). NULL: the host
   * cannot unload such things, and extension blocks fail. */
  int (*record_undo)(void *arg, int (*undo)(int64_t handle), int64_t handle);
} opd_plugin_host;

typedef enum opd__lib_kind {
  OPD__LIB_DEF,
  OPD__LIB_FRAGMENT,
  OPD__LIB_IMPL,
  OPD__LIB_EXTENSION, /* another component's block (graph passes), run after the kernels */
} opd__lib_kind;

typedef struct opd_library opd_library;
typedef struct opd__lib_block {
  opd__lib_kind kind;
  const char *ns; /* "_" for backend fallbacks */
  opd_dispatch_key key;
  void (*body)(opd_library *m);
  const char *file;
  int line;
  struct opd__lib_block *next;
} opd__lib_block;

/* The `m` of a block. */
struct opd_library {
  const opd__lib_block *block;
  const opd_plugin_host *host;
  int rc; /* the first error (later registrations are skipped) */
};

/* The blocks of this plugin (hidden: one list per shared object). */
__attribute__((weak, visibility("hidden"))) opd__lib_block *opd__lib_blocks;

static inline int opd__lib_done(opd_library *m, opd_reg_id id) {
  if (id < 0) {
    if (m->rc == 0) m->rc = (int)id;
    return (int)id;
  }
  if (m->host->record) m->host->record(m->host->arg, id);
  return 0;
}

static inline opd_provenance opd__lib_prov(const opd_library *m, const char *file, int line) {
  return (opd_provenance){m->host->origin, file, line};
}

/* "ns::name" for a name without a namespace; the name itself if it names m's namespace. */
static inline int opd__lib_name(opd_library *m, const char *name, char *buf, size_t len) {
  const char *sep = strstr(name, "::");
  size_t nslen = strlen(m->block->ns);
  if (sep && ((size_t)(sep - name) != nslen || strncmp(name, m->block->ns, nslen) != 0))
    return opd__lib_done(m, opd_error(OPD_EINVAL,
                                      "%s: registration of '%s' in a block for namespace '%s' "
                                      "(%s:%d)",
                                      m->host->origin, name, m->block->ns, m->block->file,
                                      m->block->line));
  int n = sep ? snprintf(buf, len, "%s", name) : snprintf(buf, len, "%s::%s", m->block->ns, name);
  if (n < 0 || (size_t)n >= len)
    return opd__lib_done(m, opd_error(OPD_EINVAL, "operator name '%s' too long", name));
  return 0;
}

static inline int opd__lib_def(opd_library *m, const char *schema, const char *file, int line) {
  if (m->rc) return m->rc;
  if (m->block->kind == OPD__LIB_IMPL)
    return opd__lib_done(m, opd_error(OPD_EINVAL,
                                      "%s: def('%s') in an OPD_LIBRARY_IMPL block (%s:%d); "
                                      "define operators in OPD_LIBRARY or OPD_LIBRARY_FRAGMENT",
                                      m->host->origin, schema, file, line));
  return opd__lib_done(m, opd_def(m->block->ns, schema, opd__lib_prov(m, file, line)));
}

static inline int opd__lib_impl(opd_library *m, const char *name, opd_dispatch_key key,
                                const opd_kernel *kernel, const char *file, int line) {
  char full[512];
  if (m->rc || opd__lib_name(m, name, full, sizeof full)) return m->rc;
  opd_provenance prov = opd__lib_prov(m, file, line);
  return opd__lib_done(m, kernel ? opd_impl(full, key, kernel, prov)
                                 : opd_impl_fallthrough(full, key, prov));
}

static inline int opd__lib_fallback(opd_library *m, const opd_kernel *kernel, const char *file,
                                    int line) {
  if (m->rc) return m->rc;
  if (m->block->kind != OPD__LIB_IMPL || strcmp(m->block->ns, "_") != 0)
    return opd__lib_done(m, opd_error(OPD_EINVAL,
                                      "%s: a backend fallback belongs in OPD_LIBRARY_IMPL(_, "
                                      "key, m) (%s:%d)",
                                      m->host->origin, file, line));
  opd_provenance prov = opd__lib_prov(m, file, line);
  return opd__lib_done(m, kernel ? opd_fallback(m->block->key, kernel, prov)
                                 : opd_fallback_fallthrough(m->block->key, prov));
}

/* The registration calls of a block. Each returns 0 or the (first) error. */
#define opd_lib_def(m, schema) opd__lib_def(m, schema, __FILE__, __LINE__)
/* At the block's key (OPD_LIBRARY_IMPL), or CompositeImplicitAutograd elsewhere. */
#define opd_lib_impl(m, name, kernel) \
  opd__lib_impl(m, name, (m)->block->key, kernel, __FILE__, __LINE__)
#define opd_lib_impl_at(m, name, KEY, kernel) \
  opd__lib_impl(m, name, OPD_KEY_##KEY, kernel, __FILE__, __LINE__)
#define opd_lib_fallthrough(m, name) \
  opd__lib_impl(m, name, (m)->block->key, NULL, __FILE__, __LINE__)
#define opd_lib_fallback(m, kernel)     opd__lib_fallback(m, kernel, __FILE__, __LINE__)
#define opd_lib_fallback_fallthrough(m) opd__lib_fallback(m, NULL, __FILE__, __LINE__)

#define OPD__LIB_BLOCK(kind, ns, key, m, id)                                       \
  static void OPD__CAT(opd__lib_body_, id)(opd_library * m);                       \
  static opd__lib_block OPD__CAT(opd__lib_block_, id) = {                          \
      kind, #ns, key, OPD__CAT(opd__lib_body_, id), __FILE__, __LINE__, NULL};     \
  __attribute__((constructor)) static void OPD__CAT(opd__lib_collect_, id)(void) { \
    OPD__CAT(opd__lib_block_, id).next = opd__lib_blocks;                          \
    opd__lib_blocks = &OPD__CAT(opd__lib_block_, id);                              \
  }                                                                                \
  static void OPD__CAT(opd__lib_body_, id)(opd_library * m)

#define OPD_LIBRARY(ns, m) OPD__LIB_BLOCK(OPD__LIB_DEF, ns, OPD_NO_KEY, m, __COUNTER__)
#define OPD_LIBRARY_FRAGMENT(ns, m) \
  OPD__LIB_BLOCK(OPD__LIB_FRAGMENT, ns, OPD_NO_KEY, m, __COUNTER__)
#define OPD_LIBRARY_IMPL(ns, KEY, m) \
  OPD__LIB_BLOCK(OPD__LIB_IMPL, ns, OPD_KEY_##KEY, m, __COUNTER__)

/* Records what an extension block registered, to be undone at unload (record_undo). */
static inline int opd_lib_record_undo(opd_library *m, int (*undo)(int64_t handle), int64_t handle) {
  if (!m->host->record_undo) {
    undo(handle);
    if (m->rc == 0)
      m->rc = opd_error(OPD_EINVAL, "%s: this host cannot unload what %s:%d registers",
                        m->host->origin, m->block->file, m->block->line);
    return m->rc;
  }
  int rc = m->host->record_undo(m->host->arg, undo, handle);
  if (rc && m->rc == 0) m->rc = rc;
  return rc;
}

/* Runs this shared object's blocks: definitions first, then the kernels, then the
 * extensions. 0 or the first error. */
static inline int opd_library_run(const opd_plugin_host *host) {
  for (int pass = 0; pass < 3; pass++)
    for (opd__lib_block *b = opd__lib_blocks; b; b = b->next) {
      int block_pass = b->kind == OPD__LIB_IMPL ? 1 : b->kind == OPD__LIB_EXTENSION ? 2 : 0;
      if (block_pass != pass) continue;
      opd_library m = {b, host, 0};
      b->body(&m);
      if (m.rc) return m.rc;
    }
  return 0;
}

/* The plugin's entry point, which the daemon looks up by this name. */
typedef int (*opd_plugin_init_fn)(const opd_plugin_host *host);
#define OPD_PLUGIN_INIT_SYMBOL "opd_plugin_init"
#define OPD_PLUGIN_INIT()                                                                   \
  __attribute__((visibility("default"))) int opd_plugin_init(const opd_plugin_host *host);  \
  __attribute__((visibility("default"))) int opd_plugin_init(const opd_plugin_host *host) { \
    return opd_library_run(host);                                                           \
  }

#ifdef __cplusplus
}
#endif
#endif

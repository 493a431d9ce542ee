/* registry.c: the operator registry and registration (def, impl, fallthrough, backend
 * fallback, deregistration), and the default backend fallbacks.
 *
 * [Note: The operator map]
 * Operators are found by name on every call that arrives by name, so lookups take no
 * lock: the map is an open-addressing table of atomic pointers, and operator entries are
 * never freed while the process runs (an operator whose registrations are all gone stays,
 * empty, as c10's do while a handle may still point at them). Growing the map publishes a
 * new bucket array; the old arrays stay allocated (and readable by lookups that started
 * before) for the life of the process: doubling bounds them to less than the newest one.
 * Writers serialize on opd__registry_lock.
 *
 * [Note: Registration under traffic]
 * Kernels, fallthroughs and definitions can be registered and removed while other threads
 * call operators (the daemon's workers; plugins load and unload under traffic). A call in
 * flight must run either the old or the new kernel, never a freed or half-made one, and
 * the call path must take no lock. The scheme is read-copy-update, with liburcu's QSBR
 * flavour (src/rcu.c):
 *   - Readers: a thread that calls while registrations may change registers as a reader
 *     (opd_reader_register) and reports a quiescent state between calls, or goes offline
 *     while idle; the daemon's workers are online only while they run a request. Reading
 *     costs nothing on the call path: no lock, no counter, no fence beyond the acquire
 *     loads of the mask and the slot.
 *   - Publication: a registration is filled in completely before the release store of
 *     its kernel's address into a slot; a kernel struct is never written after that, so
 *     a reader sees all of it or the previous pointer.
 *   - Reclamation: opd_deregister unlinks the registration and recomputes the slots under
 *     the registry lock, then (lock released) waits for a grace period
 *     (opd_synchronize_readers: every registered reader has passed a quiescent state, so
 *     none can still hold the old slot value) and only then frees the registration, or a
 *     removed definition's schema. A plugin's code can be unmapped after the same wait.
 *   - Slot and mask together: a call reads the fallthrough mask, then the slot its key
 *     set selects; both may change between the two loads. Slots are stored before masks.
 *     A slot that stops being a fallthrough gets its kernel before the mask admits it, so
 *     a call with the old mask skips the slot and one with the new mask finds the kernel.
 *     A slot that becomes a fallthrough first gets opd__pending_fallthrough_kernel, which
 *     redispatches below its key: a call that read the old mask and reaches the slot does
 *     what the new mask makes it do. After the grace period no call holds the old mask,
 *     and the slot gets the ordinary fallthrough kernel (which reports a misdirected call:
 *     [Note: The call path]).
 *   - Writers: one writer lock serializes whole changes, grace period included, so a
 *     change never settles another's pending slots early. The registry lock (taken by
 *     readers for error messages and introspection) is never held across the wait, so a
 *     reader blocked on it cannot stall a grace period. A change that frees nothing and
 *     leaves no pending slot does not wait.
 *   - Readers off the call path: whatever reads dispatcher state to show it (a kernel, its
 *     name, a schema, a provenance string, all of which a change frees or a plugin's unload
 *     unmaps) either holds the registry lock for the whole read or is a registered reader,
 *     online for the whole read; a read that needs several pieces to agree (a kernel and
 *     the table entry naming its registration) takes them under one hold of the lock.
 *     Operator entries and their names are never freed, so their pointers need neither.
 *       introspection (src/introspect.c: opd_op_json, opd_op_slot_json,
 *         opd_op_dispatch_json, opd_op_dump_table, opd_op_slot_registration): hold the
 *         registry lock; opd_for_each_op collects the operators under it and then calls
 *         out without it, so its callbacks follow these rules themselves;
 *       the status endpoint (server/src/status.c, [Note: The status thread]): a reader,
 *         online while it answers a request (/v1/ops formats schemas without the lock), and
 *         its dispatch answer is opd_op_dispatch_json's, under the lock;
 *       admin list (server/src/admin.c): holds the registry lock;
 *       the call metrics (server/src/metrics.c): keep operator pointers and read only
 *         their names; the call's key is computed on the worker, a reader;
 *       opctl (tools/opctl): reads only what admin list renders.
 * Threads that never register (tests, tools, start-up) are not waited for; they are
 * correct whenever no registration they use changes while they call.
 */
#include <stdlib.h>
#include <string.h>

#include "dispatcher_internal.h"
#include "opd/log.h"
#include "opd/memory.h"
#include "opd/unboxed.h"

pthread_mutex_t opd__registry_lock = PTHREAD_MUTEX_INITIALIZER;
/* Serializes registration changes from start to grace period ([Note: Registration under
 * traffic]); taken before opd__registry_lock. */
static pthread_mutex_t writer_lock = PTHREAD_MUTEX_INITIALIZER;
opd__registration *opd__fallbacks[OPD_NUM_RUNTIME_SLOTS];

static opd__registration *all_registrations; /* newest first */
static opd_reg_id next_reg_id = 1;

typedef struct op_map {
  size_t capacity; /* a power of two */
  size_t count;
  _Atomic(opd_operator *) *buckets;
  struct op_map *retired; /* older arrays, still readable by lock-free lookups */
} op_map;

static _Atomic(op_map *) ops;

static uint32_t hash_name(const char *s) {
  uint32_t h = 2166136261u; /* FNV-1a */
  for (; *s; s++) h = (h ^ (unsigned char)*s) * 16777619u;
  return h;
}

static op_map *op_map_new(size_t capacity, op_map *retired) {
  op_map *m = opd__calloc(1, sizeof *m);
  if (!m) return NULL;
  m->buckets = opd__calloc(capacity, sizeof *m->buckets);
  if (!m->buckets) {
    opd__free(m);
    return NULL;
  }
  m->capacity = capacity;
  m->retired = retired;
  return m;
}

static void op_map_place(op_map *m, opd_operator *op) {
  for (size_t i = op->hash & (m->capacity - 1);; i = (i + 1) & (m->capacity - 1)) {
    if (!atomic_load_explicit(&m->buckets[i], memory_order_relaxed)) {
      atomic_store_explicit(&m->buckets[i], op, memory_order_release);
      m->count++;
      return;
    }
  }
}

static opd_operator *op_map_find(const char *name) {
  op_map *m = atomic_load_explicit(&ops, memory_order_acquire);
  if (!m) return NULL;
  uint32_t h = hash_name(name);
  for (size_t i = h & (m->capacity - 1);; i = (i + 1) & (m->capacity - 1)) {
    opd_operator *op = atomic_load_explicit(&m->buckets[i], memory_order_acquire);
    if (!op) return NULL;
    if (op->hash == h && strcmp(op->name, name) == 0) return op;
  }
}

/* Lock held. Keeps the load factor at most one half. */
static int op_map_insert(opd_operator *op) {
  op_map *m = atomic_load_explicit(&ops, memory_order_relaxed);
  if (!m || 2 * (m->count + 1) > m->capacity) {
    op_map *bigger = op_map_new(m ? 2 * m->capacity : 256, m);
    if (!bigger) return opd_error(OPD_ENOMEM, "out of memory growing the operator map");
    for (size_t i = 0; m && i < m->capacity; i++) {
      opd_operator *old = atomic_load_explicit(&m->buckets[i], memory_order_relaxed);
      if (old) op_map_place(bigger, old);
    }
    atomic_store_explicit(&ops, bigger, memory_order_release);
    m = bigger;
  }
  op_map_place(m, op);
  return 0;
}

/* Lock held. A registration change touched op ([Note: Operator generations] in
 * opd/dispatcher.h). */
static void bump_generation(opd_operator *op) {
  atomic_fetch_add_explicit(&op->hot.generation, 1, memory_order_release);
}

/* Lock held. */
static opd_operator *find_or_create_op(const char *name) {
  opd_operator *op = op_map_find(name);
  if (op) return op;
  op = opd__calloc(1, sizeof *op);
  if (!op || !(op->name = opd__strdup(name))) {
    opd__free(op);
    opd_error(OPD_ENOMEM, "out of memory creating operator %s", name);
    return NULL;
  }
  op->hash = hash_name(name);
  opd__table_update_all(op);
  if (op_map_insert(op) != 0) {
    opd__free(op->name);
    opd__free(op);
    return NULL;
  }
  return op;
}

static char signature_code(const opd_type *t) {
  bool opt = t->optional, list = t->is_list;
  switch ((opd_type_kind)t->kind) {
  case OPD_TYPE_TENSOR:
    if (list) return t->elem_optional ? 'l' : (opt ? '?' : 'L');
    return opt ? 't' : 'T';
  case OPD_TYPE_INT:
    if (list) return opt ? 'J' : 'I';
    return opt ? 'j' : 'i';
  case OPD_TYPE_FLOAT: return opt || list ? '?' : 'f';
  case OPD_TYPE_BOOL: return list ? '?' : (opt ? 'o' : 'b');
  case OPD_TYPE_SCALAR: return list ? '?' : (opt ? 'z' : 's');
  case OPD_TYPE_STR: return list ? '?' : (opt ? 'R' : 'S');
  case OPD_TYPE_SCALAR_TYPE: return list ? '?' : (opt ? 'e' : 'd');
  case OPD_TYPE_LAYOUT: return opt && !list ? 'y' : '?';
  case OPD_TYPE_DEVICE: return opt && !list ? 'x' : '?';
  case OPD_TYPE_MEMORY_FORMAT: return list ? '?' : (opt ? 'm' : 'M');
  default: return '?';
  }
}

int opd__schema_signature(const opd_schema *s, char *buf, size_t len) {
  size_t n = 0;
  char ret = 'v';
  if (s->num_returns > 1) return opd_error(OPD_EINVAL, "unboxed calls return at most one value");
  if (s->num_returns == 1) {
    const opd_type *t = &s->returns[0].type;
    if (t->kind != OPD_TYPE_TENSOR || t->is_list || t->optional)
      return opd_error(OPD_EINVAL, "unboxed calls return a Tensor or nothing");
    ret = 'T';
  }
  if (len < s->num_args + 3) return opd_error(OPD_EINVAL, "signature buffer too small");
  buf[n++] = ret;
  buf[n++] = ':';
  for (uint32_t i = 0; i < s->num_args; i++) {
    char c = signature_code(&s->args[i].type);
    if (c == '?')
      return opd_error(OPD_EINVAL, "argument '%s' has a type unboxed calls do not support",
                       s->args[i].name);
    buf[n++] = c;
  }
  buf[n] = '\0';
  return 0;
}

/* Lock held. OPD_EINVAL unless an unboxed kernel's signature matches the schema. */
static int check_kernel_signature(const opd_operator *op, const opd_kernel *k) {
  if (!op->schema || !k->unboxed) return 0;
  char sig[72];
  if (opd__schema_signature(op->schema, sig, sizeof sig) != 0 || strcmp(sig, k->signature) != 0)
    return opd_error(OPD_EINVAL,
                     "kernel %s has unboxed signature %s, which does not match the schema of %s",
                     k->name ? k->name : "(unnamed)", k->signature, op->name);
  return 0;
}

static void set_key_extractor(opd_operator *op) {
  op->tensor_args = 0;
  op->num_args = op->schema ? op->schema->num_args : 0;
  for (uint32_t i = 0; i < op->num_args; i++)
    if (op->schema->args[i].type.kind == OPD_TYPE_TENSOR) op->tensor_args |= UINT64_C(1) << i;
}

/* Lock held. A new registration linked into the list of all registrations. */
static opd__registration *new_registration(opd__reg_kind kind, opd_dispatch_key key,
                                           opd_operator *op, const opd_kernel *kernel,
                                           opd_provenance prov) {
  opd__registration *r = opd__calloc(1, sizeof *r);
  if (!r) {
    opd_error(OPD_ENOMEM, "out of memory for a registration");
    return NULL;
  }
  if (kernel)
    r->kernel = *kernel;
  else if (kind == OPD__REG_FALLTHROUGH || kind == OPD__REG_FALLBACK_FALLTHROUGH)
    r->kernel = opd__fallthrough_kernel;
  r->id = next_reg_id++;
  r->kind = kind;
  r->key = key;
  r->op = op;
  r->prov = prov;
  r->all_next = all_registrations;
  if (all_registrations) all_registrations->all_prev = r;
  all_registrations = r;
  return r;
}

static void unlink_registration(opd__registration *r) {
  if (r->all_prev)
    r->all_prev->all_next = r->all_next;
  else
    all_registrations = r->all_next;
  if (r->all_next) r->all_next->all_prev = r->all_prev;
}

static void settle_op(opd_operator *op, void *arg) {
  (void)arg;
  opd__table_settle(op);
}

/* Writer lock held, registry lock not. Ends a change: waits for a grace period if slots
 * are pending or something was removed, settles pending slots, frees what was removed. */
static void finish_change(opd__registration *dead, opd_schema *dead_schema) {
  pthread_mutex_lock(&opd__registry_lock);
  bool pending = opd__fallthrough_pending;
  pthread_mutex_unlock(&opd__registry_lock);
  if (!pending && !dead && !dead_schema) return;
  opd_synchronize_readers();
  if (pending) {
    pthread_mutex_lock(&opd__registry_lock);
    opd__for_each_op_locked(settle_op, NULL);
    opd__fallthrough_pending = false;
    pthread_mutex_unlock(&opd__registry_lock);
  }
  opd_schema_free(dead_schema);
  opd__free(dead);
}

static int check_kernel(const opd_kernel *k) {
  if (!k || !k->boxed) return opd_error(OPD_EINVAL, "a kernel needs a boxed entry point");
  if (k->unboxed && !k->signature)
    return opd_error(OPD_EINVAL, "an unboxed kernel needs its signature");
  return 0;
}

static int check_impl_key(const char *name, opd_dispatch_key key) {
  if (key == OPD_NO_KEY || opd_key_is_alias(key) || opd_key_is_runtime(key)) return 0;
  const char *key_name = opd_key_name(key);
  return opd_error(OPD_EINVAL,
                   "cannot register a kernel for %s at %s: not a runtime or alias dispatch key",
                   name, key_name ? key_name : "(invalid key)");
}

static void register_default_fallbacks(void);

static pthread_once_t init_once = PTHREAD_ONCE_INIT;
void opd__dispatcher_init(void) {
  pthread_once(&init_once, register_default_fallbacks);
}

opd_reg_id opd_def(const char *ns, const char *schema_text, opd_provenance prov) {
  opd__dispatcher_init();
  opd_schema *schema;
  int rc = opd_schema_parse(schema_text, &schema);
  if (rc) return rc;
  if (ns && (rc = opd_schema_set_namespace(schema, ns)) != 0) {
    opd_schema_free(schema);
    return rc;
  }
  if (!schema->ns || !schema->ns[0]) {
    opd_schema_free(schema);
    return opd_error(OPD_ESCHEMA, "operator '%s' needs a namespace", schema_text);
  }
  if (schema->num_args > 64) {
    opd_schema_free(schema);
    return opd_error(OPD_ESCHEMA, "operators take at most 64 arguments");
  }
  char name[512];
  if (opd_schema_qualified_name(schema, name, sizeof name) >= (int)sizeof name) {
    opd_schema_free(schema);
    return opd_error(OPD_ESCHEMA, "operator name too long");
  }
  pthread_mutex_lock(&writer_lock);
  pthread_mutex_lock(&opd__registry_lock);
  opd_operator *op = find_or_create_op(name);
  opd__registration *r = NULL;
  opd_schema *withdrawn = NULL; /* published, then taken back: calls may have seen it */
  if (!op) {
    rc = opd_last_error_code();
  } else if (op->schema) {
    rc = opd_error(OPD_EEXIST,
                   "operator %s is already defined (with schema registered at %s:%d); a second "
                   "def of the same name and overload is not allowed",
                   name, op->def->prov.file, op->def->prov.line);
  } else {
    __atomic_store_n(&op->schema, schema, __ATOMIC_RELEASE);
    for (int k = 0; k < OPD_NUM_KEYS && rc == 0; k++)
      for (opd__registration *i = op->regs[k]; i && rc == 0; i = i->older)
        rc = check_kernel_signature(op, &i->kernel);
    if (rc == 0 && (r = new_registration(OPD__REG_DEF, OPD_KEY_Undefined, op, NULL, prov))) {
      op->def = r;
      set_key_extractor(op);
      bump_generation(op);
    } else {
      if (rc == 0) rc = OPD_ENOMEM;
      __atomic_store_n(&op->schema, NULL, __ATOMIC_RELEASE);
      withdrawn = schema;
    }
  }
  pthread_mutex_unlock(&opd__registry_lock);
  finish_change(NULL, withdrawn);
  pthread_mutex_unlock(&writer_lock);
  if (rc) {
    if (!withdrawn) opd_schema_free(schema);
    return rc;
  }
  return r->id;
}

static opd_reg_id add_impl(const char *name, opd_dispatch_key key, const opd_kernel *kernel,
                           opd__reg_kind kind, opd_provenance prov) {
  opd__dispatcher_init();
  int rc = check_impl_key(name, key);
  if (rc) return rc;
  if (key == OPD_NO_KEY) key = OPD_KEY_CompositeImplicitAutograd;
  if (!name || !strstr(name, "::") || strlen(name) >= 512)
    return opd_error(OPD_EINVAL, "'%s' is not a qualified operator name (ns::name.overload)",
                     name ? name : "(null)");
  pthread_mutex_lock(&writer_lock);
  pthread_mutex_lock(&opd__registry_lock);
  opd_operator *op = find_or_create_op(name);
  opd__registration *r = NULL;
  if (!op)
    rc = opd_last_error_code();
  else if (kernel)
    rc = check_kernel_signature(op, kernel);
  if (rc == 0 && !(r = new_registration(kind, key, op, kernel, prov))) rc = OPD_ENOMEM;
  if (r) {
    if (op->regs[key])
      opd_log(OPD_LOG_WARN,
              "overriding a previously registered kernel for %s at %s (registered at %s:%d) "
              "with one registered at %s:%d",
              name, opd_key_name(key), op->regs[key]->prov.file, op->regs[key]->prov.line,
              prov.file, prov.line);
    r->older = op->regs[key];
    op->regs[key] = r;
    opd__table_update(op, key);
    bump_generation(op);
  }
  pthread_mutex_unlock(&opd__registry_lock);
  finish_change(NULL, NULL);
  pthread_mutex_unlock(&writer_lock);
  return rc ? rc : r->id;
}

opd_reg_id opd_impl(const char *name, opd_dispatch_key key, const opd_kernel *kernel,
                    opd_provenance prov) {
  int rc = check_kernel(kernel);
  return rc ? rc : add_impl(name, key, kernel, OPD__REG_IMPL, prov);
}

opd_reg_id opd_impl_fallthrough(const char *name, opd_dispatch_key key, opd_provenance prov) {
  return add_impl(name, key, NULL, OPD__REG_FALLTHROUGH, prov);
}

static void update_slot_of_op(opd_operator *op, void *key) {
  opd__table_update_slot(op, *(opd_dispatch_key *)key);
  bump_generation(op);
}

/* Lock held. */
static opd_reg_id add_fallback_locked(opd_dispatch_key key, const opd_kernel *kernel,
                                      opd_provenance prov) {
  if (!opd_key_is_runtime(key))
    return opd_error(OPD_EINVAL, "a backend fallback needs a runtime dispatch key, not %s",
                     opd_key_name(key) ? opd_key_name(key) : "(invalid key)");
  unsigned slot = opd_key_slot(key);
  if (opd__fallbacks[slot])
    return opd_error(OPD_EEXIST,
                     "a backend fallback for %s is already registered (at %s:%d); remove it "
                     "first",
                     opd_key_name(key), opd__fallbacks[slot]->prov.file,
                     opd__fallbacks[slot]->prov.line);
  opd__registration *r = new_registration(
      kernel ? OPD__REG_FALLBACK : OPD__REG_FALLBACK_FALLTHROUGH, key, NULL, kernel, prov);
  if (!r) return OPD_ENOMEM;
  opd__fallbacks[slot] = r;
  opd__for_each_op_locked(update_slot_of_op, &key);
  return r->id;
}

static opd_reg_id add_fallback(opd_dispatch_key key, const opd_kernel *kernel,
                               opd_provenance prov) {
  opd__dispatcher_init();
  pthread_mutex_lock(&writer_lock);
  pthread_mutex_lock(&opd__registry_lock);
  opd_reg_id id = add_fallback_locked(key, kernel, prov);
  pthread_mutex_unlock(&opd__registry_lock);
  finish_change(NULL, NULL);
  pthread_mutex_unlock(&writer_lock);
  return id;
}

opd_reg_id opd_fallback(opd_dispatch_key key, const opd_kernel *kernel, opd_provenance prov) {
  int rc = check_kernel(kernel);
  return rc ? rc : add_fallback(key, kernel, prov);
}

opd_reg_id opd_fallback_fallthrough(opd_dispatch_key key, opd_provenance prov) {
  return add_fallback(key, NULL, prov);
}

int opd_deregister(opd_reg_id id) {
  opd__dispatcher_init();
  pthread_mutex_lock(&writer_lock);
  pthread_mutex_lock(&opd__registry_lock);
  opd__registration *r = all_registrations;
  while (r && r->id != id) r = r->all_next;
  if (!r) {
    pthread_mutex_unlock(&opd__registry_lock);
    pthread_mutex_unlock(&writer_lock);
    return opd_error(OPD_ENOENT, "no registration with id %lld", (long long)id);
  }
  unlink_registration(r);
  opd_operator *op = r->op;
  opd_schema *dead_schema = NULL;
  if (op) bump_generation(op);
  switch (r->kind) {
  case OPD__REG_DEF:
    dead_schema = op->schema;
    __atomic_store_n(&op->schema, NULL, __ATOMIC_RELEASE);
    op->def = NULL;
    set_key_extractor(op);
    break;
  case OPD__REG_IMPL:
  case OPD__REG_FALLTHROUGH: {
    opd__registration **p = &op->regs[r->key];
    while (*p != r) p = &(*p)->older;
    *p = r->older;
    opd__table_update(op, r->key);
    break;
  }
  case OPD__REG_FALLBACK:
  case OPD__REG_FALLBACK_FALLTHROUGH:
    opd__fallbacks[opd_key_slot(r->key)] = NULL;
    opd__for_each_op_locked(update_slot_of_op, &r->key);
    break;
  }
  pthread_mutex_unlock(&opd__registry_lock);
  finish_change(r, dead_schema);
  pthread_mutex_unlock(&writer_lock);
  return 0;
}

int opd_registration_kernel(opd_reg_id id, opd_kernel *kernel, opd_provenance *prov) {
  pthread_mutex_lock(&opd__registry_lock);
  const opd__registration *r = all_registrations;
  while (r && r->id != id) r = r->all_next;
  int rc = 0;
  if (!r)
    rc = opd_error(OPD_ENOENT, "no registration with id %lld", (long long)id);
  else if (r->kind != OPD__REG_IMPL && r->kind != OPD__REG_FALLBACK)
    rc = opd_error(OPD_EINVAL, "registration %lld has no kernel", (long long)id);
  else {
    *kernel = r->kernel;
    *prov = r->prov;
  }
  pthread_mutex_unlock(&opd__registry_lock);
  return rc;
}

/* [Note: The last operator found]
 * A pipelining client calls one operator many times in a row, and each call names it. So
 * a thread keeps the last name it found with its entry (an entry is never freed, and a
 * name's entry never changes: [Note: The operator map]), and the repeat costs one string
 * comparison instead of a hash of the name and a probe. A longer name is not kept. */
#define LAST_FOUND_NAME 96
static _Thread_local struct {
  opd_operator *op; /* NULL: nothing kept */
  char name[LAST_FOUND_NAME];
} last_found;

const opd_operator *opd_find_op(const char *name) {
  if (last_found.op && strcmp(name, last_found.name) == 0) return last_found.op;
  opd_operator *op = op_map_find(name);
  size_t len = op ? strlen(name) : sizeof last_found.name;
  if (len < sizeof last_found.name) {
    memcpy(last_found.name, name, len + 1);
    last_found.op = op;
  }
  return op;
}

const opd_operator *opd_find_schema(const char *name) {
  const opd_operator *op = op_map_find(name);
  if (!op) {
    opd_error(OPD_ENOENT, "unknown operator '%s'", name);
    return NULL;
  }
  if (!opd_op_schema(op)) {
    opd_error(OPD_ENOENT, "operator '%s' has kernels but no schema (it was never defined)", name);
    return NULL;
  }
  return op;
}

const opd_operator *opd_find_typed(const char *name, const char *signature) {
  const opd_operator *op = opd_find_schema(name);
  if (!op) return NULL;
  char sig[72];
  pthread_mutex_lock(&opd__registry_lock);
  int rc = op->schema ? opd__schema_signature(op->schema, sig, sizeof sig) : OPD_ENOENT;
  pthread_mutex_unlock(&opd__registry_lock);
  if (rc == 0 && strcmp(sig, signature) != 0)
    rc = opd_error(OPD_EINVAL, "typed call signature %s does not match %s's schema (%s)", signature,
                   name, sig);
  return rc ? NULL : op;
}

const char *opd_op_name(const opd_operator *op) {
  return op->name;
}

const opd_schema *opd_op_schema(const opd_operator *op) {
  return __atomic_load_n(&op->schema, __ATOMIC_ACQUIRE);
}

void opd__for_each_op_locked(void (*fn)(opd_operator *op, void *arg), void *arg) {
  op_map *m = atomic_load_explicit(&ops, memory_order_relaxed);
  for (size_t i = 0; m && i < m->capacity; i++) {
    opd_operator *op = atomic_load_explicit(&m->buckets[i], memory_order_relaxed);
    if (op) fn(op, arg);
  }
}

static bool op_is_live(const opd_operator *op) {
  if (op->schema) return true;
  for (int k = 0; k < OPD_NUM_KEYS; k++)
    if (op->regs[k]) return true;
  return false;
}

typedef struct op_list {
  const opd_operator **items;
  size_t count;
} op_list;

static void collect_live(opd_operator *op, void *arg) {
  op_list *l = arg;
  if (op_is_live(op)) l->items[l->count++] = op;
}

static int by_name(const void *a, const void *b) {
  return strcmp((*(const opd_operator *const *)a)->name, (*(const opd_operator *const *)b)->name);
}

void opd_for_each_op(void (*fn)(const opd_operator *op, void *arg), void *arg) {
  opd__dispatcher_init();
  pthread_mutex_lock(&opd__registry_lock);
  op_map *m = atomic_load_explicit(&ops, memory_order_relaxed);
  op_list l = {m ? opd__calloc(m->count ? m->count : 1, sizeof *l.items) : NULL, 0};
  if (l.items) opd__for_each_op_locked(collect_live, &l);
  pthread_mutex_unlock(&opd__registry_lock);
  qsort(l.items, l.count, sizeof *l.items, by_name);
  for (size_t i = 0; i < l.count; i++) fn(l.items[i], arg);
  opd__free(l.items);
}

/* The Tracer key's fallback. PyTorch's records the call into the active trace and then
 * redispatches; opd's graph capture will record here, and until a capture is active the
 * call goes on to the next key, as PyTorch's does when it is not tracing. */
static int tracer_fallback(const opd_kernel_ctx *ctx, opd_stack *stack) {
  return opd_redispatch_boxed(ctx, stack);
}

/* The backend fallbacks PyTorch 1.13 registers by default, where opd has the same
 * semantics: the fallthroughs, and the Tracer kernel. */
static void register_default_fallbacks(void) {
  static const opd_dispatch_key fallthrough_keys[] = {
      OPD_KEY_BackendSelect,     OPD_KEY_ADInplaceOrView, OPD_KEY_AutogradOther,
      OPD_KEY_AutogradCPU,       OPD_KEY_AutogradCUDA,    OPD_KEY_AutogradXLA,
      OPD_KEY_AutogradMPS,       OPD_KEY_AutogradXPU,     OPD_KEY_AutogradHPU,
      OPD_KEY_AutogradLazy,      OPD_KEY_AutocastCPU,     OPD_KEY_AutocastCUDA,
      OPD_KEY_FuncTorchVmapMode, OPD_KEY_VmapMode,
  };
  static const opd_kernel tracer = {.boxed = tracer_fallback, .name = "tracer_fallback"};
  pthread_mutex_lock(&opd__registry_lock);
  for (size_t i = 0; i < sizeof fallthrough_keys / sizeof *fallthrough_keys; i++)
    add_fallback_locked(fallthrough_keys[i], NULL, OPD_HERE);
  add_fallback_locked(OPD_KEY_Tracer, &tracer, OPD_HERE);
  pthread_mutex_unlock(&opd__registry_lock);
}

/* opd/dispatcher.h: operators, registration, thread-local dispatch state and calls.
 *
 * The dispatcher is a process-wide registry of operators by qualified name
 * ("ns::name.overload"), as c10::Dispatcher::singleton() is. Registration follows
 * TORCH_LIBRARY / TORCH_LIBRARY_IMPL / fallback:
 *
 *   opd_def(ns, "op(Tensor a) -> Tensor", prov)     define an operator (once)
 *   opd_impl(name, key, &kernel, prov)              a kernel at a runtime or alias key
 *   opd_impl_fallthrough(name, key, prov)           this operator falls through at key
 *   opd_fallback(key, &kernel, prov)                a backend fallback for every operator
 *   opd_fallback_fallthrough(key, prov)             ... that falls through
 *   opd_deregister(id)                              undo any one of the above
 *
 * Each returns a registration id (> 0) or a negative error. See [Note: Filling the
 * dispatch table] in src/table.c for how registrations become table slots, and
 * [Note: The call path] in src/call.c for how a call finds its slot.
 *
 * Thread safety: registration functions serialize on one registry lock; calls never take
 * a lock (they read the table slots and masks with atomic loads). A registration change
 * returns only after every registered reader thread has passed a quiescent state, and
 * frees what it removed only then (see [Note: Registration under traffic] in
 * src/registry.c and the reader functions below).
 */
#ifndef OPD_DISPATCHER_H
#define OPD_DISPATCHER_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "opd/dispatch_key.h"
#include "opd/error.h"
#include "opd/ivalue.h"
#include "opd/keyset.h"
#include "opd/schema.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct opd_operator opd_operator;

/* What a kernel receives besides its arguments: the operator, the key set it was
 * dispatched with (for redispatch), and the data pointer it was registered with. */
typedef struct opd_kernel_ctx {
  const opd_operator *op;
  opd_keyset ks;
  void *data;
} opd_kernel_ctx;

/* A boxed kernel pops its arguments (all of them, in schema order, last on top) and
 * pushes its returns. It returns 0 or a negative opd error (with opd_error()); on error
 * the arguments are still popped and nothing is pushed. */
typedef int (*opd_boxed_fn)(const opd_kernel_ctx *ctx, opd_stack *stack);
/* An unboxed kernel: int fn(const opd_kernel_ctx *, typed args..., typed *out). The
 * real type is given by its signature string (see opd/unboxed.h). */
typedef void (*opd_unboxed_fn)(void);

/* A kernel: a boxed entry point and optionally an unboxed one with the same behaviour
 * (opd/unboxed.h produces the boxed wrapper of an unboxed function). */
typedef struct opd_kernel {
  opd_boxed_fn boxed;
  opd_unboxed_fn unboxed;
  const char *signature; /* of `unboxed`; NULL when there is none */
  void *data;
  const char *name; /* for introspection: "add_cpu" */
} opd_kernel;

/* Who registered something: "builtin" with file:line for opd's own registrations,
 * a plugin name later. */
typedef struct opd_provenance {
  const char *origin;
  const char *file;
  int line;
} opd_provenance;
#define OPD_HERE ((opd_provenance){"builtin", __FILE__, __LINE__})

typedef int64_t opd_reg_id;

/* A key argument meaning "no key": opd_impl() then registers at
 * CompositeImplicitAutograd, as m.impl() without a key does in PyTorch. */
#define OPD_NO_KEY ((opd_dispatch_key)-1)

/* Defines an operator from its schema. `ns` is the library namespace: the schema may omit
 * it ("op(Tensor a) -> Tensor") or must name the same one. Defining an operator twice is
 * OPD_EEXIST. Kernels registered before the def are kept, and unboxed ones are checked
 * against the schema now (a mismatch fails the def with OPD_EINVAL). */
opd_reg_id opd_def(const char *ns, const char *schema, opd_provenance prov);
/* A kernel for operator `name` ("ns::op.overload") at `key` (runtime or alias key, or
 * OPD_NO_KEY). A second kernel at the same key overrides the first until it is removed
 * (a warning is logged). The kernel struct is copied; `name` and `signature` must outlive
 * the registration. */
opd_reg_id opd_impl(const char *name, opd_dispatch_key key, const opd_kernel *kernel,
                    opd_provenance prov);
opd_reg_id opd_impl_fallthrough(const char *name, opd_dispatch_key key, opd_provenance prov);
/* A backend fallback for every operator at runtime key `key`. A second live one at the
 * same key is OPD_EEXIST. */
opd_reg_id opd_fallback(opd_dispatch_key key, const opd_kernel *kernel, opd_provenance prov);
opd_reg_id opd_fallback_fallthrough(opd_dispatch_key key, opd_provenance prov);
/* Removes one registration; what it shadowed comes back. OPD_ENOENT for an unknown id. */
int opd_deregister(opd_reg_id id);
/* The kernel of live impl or fallback registration `id` (copied: its name and signature
 * point into the registrant's memory) and its provenance: 0, or OPD_ENOENT, or OPD_EINVAL
 * for a registration without a kernel (a def or a fallthrough). */
int opd_registration_kernel(opd_reg_id id, opd_kernel *kernel, opd_provenance *prov);

/* Reader threads (see [Note: Registration under traffic] in src/registry.c). A thread
 * that calls operators while other threads may change registrations registers as a
 * reader; it is then "online" (inside a read-side section: nothing it can reach through
 * the dispatcher is freed or turned) until it reports a quiescent state (it holds no
 * kernel, schema or table entry it got from the dispatcher) or goes offline (idle: while
 * blocked, a registered thread must be offline or registration changes wait for it).
 * Threads that never register are not waited for: they are correct as long as no
 * registration they use changes while they call. The functions are liburcu QSBR's. */
void opd_reader_register(void);   /* the thread becomes a reader, online */
void opd_reader_unregister(void); /* before the thread exits */
void opd_reader_quiescent(void);  /* between two calls */
void opd_reader_offline(void);
void opd_reader_online(void);
/* Waits until every registered reader has passed a quiescent state or been offline. From
 * a registered online thread it goes offline for the wait. Never call it from a kernel or
 * with the registry lock held. */
void opd_synchronize_readers(void);

/* The operator of that qualified name, defined or not yet defined but with kernels;
 * NULL if there is none. Operators are never freed, so the pointer stays valid. */
const opd_operator *opd_find_op(const char *name);
/* The same, only for defined operators: NULL with OPD_ENOENT ("unknown operator") or
 * OPD_ENOENT ("has kernels but no schema") recorded otherwise. */
const opd_operator *opd_find_schema(const char *name);
const char *opd_op_name(const opd_operator *op);
/* NULL until the operator is defined. */
const opd_schema *opd_op_schema(const opd_operator *op);
/* Calls `fn` for every operator that has a schema or a registration, in name order. */
void opd_for_each_op(void (*fn)(const opd_operator *op, void *arg), void *arg);

/* [Note: Thread-local dispatch state]
 * Each thread has an include set and an exclude set, added to / removed from every call's
 * key set. By default the include set is {BackendSelect, ADInplaceOrView} and the exclude
 * set {AutocastCPU, AutocastXPU, AutocastCUDA}, as in PyTorch. They are stored XORed
 * with those defaults so that a zero-initialized thread has the default state. The server
 * installs a session's sets on the worker thread for the duration of its calls. */
typedef struct opd_local_dispatch_state {
  opd_keyset included;
  opd_keyset excluded;
} opd_local_dispatch_state;

typedef struct opd__raw_tls {
  uint64_t included_xor_default;
  uint64_t excluded_xor_default;
} opd__raw_tls;
extern _Thread_local opd__raw_tls opd__tls;
extern const opd_local_dispatch_state opd_default_dispatch_state;

static inline opd_local_dispatch_state opd_tls_get(void) {
  return (opd_local_dispatch_state){
      {opd__tls.included_xor_default ^ opd_default_dispatch_state.included.repr},
      {opd__tls.excluded_xor_default ^ opd_default_dispatch_state.excluded.repr}};
}
static inline void opd_tls_set(opd_local_dispatch_state s) {
  opd__tls.included_xor_default = s.included.repr ^ opd_default_dispatch_state.included.repr;
  opd__tls.excluded_xor_default = s.excluded.repr ^ opd_default_dispatch_state.excluded.repr;
}

/* The key set a call of `op` dispatches with when its tensor arguments have the key set
 * `args`: ((args | TLS include) - TLS exclude), masked by the operator's fallthrough keys
 * for the highest backend of `args` (CPU when there is none). See [Note: The call path]. */
static inline opd_keyset opd__call_keyset(const opd_operator *op, opd_keyset args);
static inline opd_keyset opd_call_keyset(const opd_operator *op, opd_keyset args) {
  return opd__call_keyset(op, args);
}

/* Calls the operator with its arguments on `stack` (every argument present, in schema
 * order; defaults already filled in; tensors owned or borrowed). On success the returns
 * replace them, always owned; on error the arguments are gone, nothing is pushed, and
 * opd_last_error() says why. */
int opd_call_boxed(const opd_operator *op, opd_stack *stack);
/* opd_call_boxed for a caller that extracted the key set of the tensor arguments itself
 * (`args`: the union of the key sets of every Tensor and every element of a Tensor[] or
 * Tensor?[] argument, as opd_call_boxed computes it; the server's prepared calls do, as
 * they decode): the same call, and *dispatched_slot receives the dispatch-table slot whose
 * kernel it ran (that of the highest key of the call's key set, the slot the table lookup
 * read; opd_slot_key names its runtime key, and slot 0 is Undefined's). */
int opd_call_boxed_keys(const opd_operator *op, opd_keyset args, opd_stack *stack,
                        unsigned *dispatched_slot);
/* From inside a kernel: calls the next kernel below the current key. */
int opd_redispatch_boxed(const opd_kernel_ctx *ctx, opd_stack *stack);
/* Calls the kernel that key set `ks` selects, as is (no TLS, no masking). */
int opd_call_boxed_with_keyset(const opd_operator *op, opd_keyset ks, opd_stack *stack);

/* [Note: Operator generations]
 * Every operator counts the registration changes that touch it: its def, an impl or
 * fallthrough at any key, their deregistration, and every backend fallback added or removed
 * (those touch all operators). The count only grows. Something compiled from an operator's
 * registrations (a compiled graph, graph/src/exec/cache.c) records the generations it saw and is
 * stale once one differs: a hot registration invalidates it. */
static inline uint64_t opd_op_generation(const opd_operator *op);

/* The kernel a key set selects, and the runtime key it sits at. */
const opd_kernel *opd_op_lookup(const opd_operator *op, opd_keyset ks);

/* ---- internals used by the inline call path (opd/unboxed.h) ---- */
/* Makes the operator's results on top of the stack owned (see [Note: IValues and
 * ownership]). */
void opd__own_results(const opd_operator *op, opd_stack *stack);
struct opd__operator_hot {
  _Atomic(const opd_kernel *) table[OPD_NUM_RUNTIME_SLOTS];
  /* per mask backend (index 0: no backend, i.e. CPU; i: backend i - 1): every bit but
   * the functionalities whose slot for that backend is a fallthrough */
  _Atomic uint64_t non_fallthrough[1 + OPD_NUM_BACKENDS];
  /* [Note: Operator generations] */
  _Atomic uint64_t generation;
};

static inline opd_keyset opd__call_keyset(const opd_operator *op, opd_keyset args) {
  const struct opd__operator_hot *hot = (const struct opd__operator_hot *)op;
  unsigned mask_backend = opd__bit_index_plus1(args.repr & OPD_BACKEND_BITS_MASK);
  uint64_t ks =
      (args.repr | (opd__tls.included_xor_default ^ opd_default_dispatch_state.included.repr)) &
      ~((opd__tls.excluded_xor_default ^ opd_default_dispatch_state.excluded.repr) &
        ~OPD_BACKEND_BITS_MASK);
  return (opd_keyset){
      ks & atomic_load_explicit(&hot->non_fallthrough[mask_backend], memory_order_acquire)};
}

static inline uint64_t opd_op_generation(const opd_operator *op) {
  return atomic_load_explicit(&((const struct opd__operator_hot *)op)->generation,
                              memory_order_acquire);
}

static inline const opd_kernel *opd__lookup(const opd_operator *op, opd_keyset ks) {
  const struct opd__operator_hot *hot = (const struct opd__operator_hot *)op;
  return atomic_load_explicit(&hot->table[opd_keyset_slot(ks)], memory_order_acquire);
}

#ifdef __cplusplus
}
#endif
#endif

/* call.c: the boxed call path, redispatch, the thread-local dispatch state, and the
 * kernels that stand in missing, ambiguous and fallthrough slots.
 *
 * [Note: The call path]
 * A call's key set is computed from its tensor arguments, in four steps:
 *   1. A = the union of the key sets of every Tensor, non-None Tensor?, and every element
 *      of Tensor[] / Tensor?[] argument (the operator's key extractor knows which
 *      argument positions those are);
 *   2. S = (A | TLS include) - TLS exclude (a difference that removes functionality bits
 *      only, see [Note: Key sets]);
 *   3. S &= the operator's non-fallthrough mask for the highest backend of A (CPU when A
 *      has none): every functionality whose slot for that backend is a fallthrough is
 *      dropped, as PyTorch 1.13 does with nonFallthroughKeysPerBackend_;
 *   4. the slot of S's highest key (opd_keyset_slot) gives the kernel.
 * Step 4 uses the highest backend of S, which may come from the TLS include set and
 * differ from the one step 3 used: then a fallthrough slot can be selected, and its
 * kernel reports the error, as PyTorch's internal assert does.
 * The path takes no lock and allocates nothing: the table slots and masks are atomics,
 * and what they point to stays valid for the call ([Note: Registration under traffic] in
 * registry.c).
 */
#include <stdio.h>
#include <string.h>

#include "dispatcher_internal.h"
#include "opd/tensor.h"

_Thread_local opd__raw_tls opd__tls;

const opd_local_dispatch_state opd_default_dispatch_state = {
    {OPD_FUNCTIONALITY_BIT(OPD_KEY_BackendSelect) | OPD_FUNCTIONALITY_BIT(OPD_KEY_ADInplaceOrView)},
    {OPD_FUNCTIONALITY_BIT(OPD_KEY_AutocastCPU) | OPD_FUNCTIONALITY_BIT(OPD_KEY_AutocastXPU) |
     OPD_FUNCTIONALITY_BIT(OPD_KEY_AutocastCUDA)}};

/* Drops a failed call's arguments, as a kernel would have. */
static void drop_args(const opd_kernel_ctx *ctx, opd_stack *stack) {
  uint32_t n = ctx->op->num_args < stack->size ? ctx->op->num_args : stack->size;
  opd_stack_drop(stack, n);
}

/* "CPU, Meta, CompositeImplicitAutograd": the keys the operator has registrations at. */
static void registered_keys(const opd_operator *op, char *buf, size_t len) {
  size_t used = 0;
  buf[0] = '\0';
  pthread_mutex_lock(&opd__registry_lock);
  for (int k = 0; k < OPD_NUM_KEYS && used < len; k++)
    if (op->regs[k])
      used += (size_t)snprintf(buf + used, len - used, "%s%s", used ? ", " : "",
                               opd_key_name((opd_dispatch_key)k));
  pthread_mutex_unlock(&opd__registry_lock);
}

static int missing_kernel(const opd_kernel_ctx *ctx, opd_stack *stack) {
  drop_args(ctx, stack);
  opd_dispatch_key k = opd_keyset_highest_key(ctx->ks);
  char keys[512];
  registered_keys(ctx->op, keys, sizeof keys);
  if (k == OPD_KEY_Undefined)
    return opd_error(OPD_ENOTIMPL,
                     "There were no tensor arguments to this function (e.g., you passed an empty "
                     "list of Tensors), but no fallback function is registered for schema %s. "
                     "'%s' is only available for these backends: [%s].",
                     ctx->op->name, ctx->op->name, keys);
  return opd_error(OPD_ENOTIMPL,
                   "Could not run '%s' with arguments from the '%s' backend. '%s' is only "
                   "available for these backends: [%s].",
                   ctx->op->name, opd_key_name(k) ? opd_key_name(k) : "Undefined", ctx->op->name,
                   keys);
}

static int ambiguous_kernel(const opd_kernel_ctx *ctx, opd_stack *stack) {
  drop_args(ctx, stack);
  return opd_error(OPD_EAMBIGUOUS,
                   "%s has kernels registered to both CompositeImplicitAutograd and a backend "
                   "mapped to AutogradOther. This makes the backend kernel unreachable: the "
                   "dispatcher would always prefer the CompositeImplicitAutograd lowering. "
                   "Register a kernel at AutogradOther (or the backend's own autograd key) to "
                   "resolve it.",
                   ctx->op->name);
}

static int fallthrough_kernel(const opd_kernel_ctx *ctx, opd_stack *stack) {
  drop_args(ctx, stack);
  opd_dispatch_key k = opd_keyset_highest_key(ctx->ks);
  return opd_error(OPD_EFALLTHROUGH,
                   "%s: the call selected the fallthrough kernel at %s, which cannot run (its key "
                   "set's highest backend differs from its arguments', or nothing is below it)",
                   ctx->op->name, opd_key_name(k) ? opd_key_name(k) : "Undefined");
}

static int pending_fallthrough_kernel(const opd_kernel_ctx *ctx, opd_stack *stack) {
  return opd_redispatch_boxed(ctx, stack);
}

const opd_kernel opd__pending_fallthrough_kernel = {.boxed = pending_fallthrough_kernel,
                                                    .name = "fallthrough"};
const opd_kernel opd__missing_kernel = {.boxed = missing_kernel, .name = "missing"};
const opd_kernel opd__ambiguous_kernel = {.boxed = ambiguous_kernel,
                                          .name = "ambiguous_autogradother"};
const opd_kernel opd__fallthrough_kernel = {.boxed = fallthrough_kernel, .name = "fallthrough"};

static inline opd_keyset boxed_argument_keys(const opd_operator *op, const opd_stack *stack) {
  const opd_ivalue *args = stack->items + stack->size - op->num_args;
  uint64_t ks = 0;
  for (uint64_t bits = op->tensor_args; bits; bits &= bits - 1) {
    const opd_ivalue *v = &args[__builtin_ctzll(bits)];
    if (v->tag == OPD_IV_TENSOR) {
      ks |= v->u.t->key_set.repr;
    } else if (v->tag == OPD_IV_TENSOR_LIST || v->tag == OPD_IV_OPT_TENSOR_LIST) {
      for (uint32_t i = 0; i < v->len; i++)
        if (v->u.tensors[i]) ks |= v->u.tensors[i]->key_set.repr;
    }
  }
  return (opd_keyset){ks};
}

/* opd_op_schema, inline on the call path */
static inline const opd_schema *schema_of(const opd_operator *op) {
  return __atomic_load_n(&op->schema, __ATOMIC_ACQUIRE);
}

void opd__own_results(const opd_operator *op, opd_stack *stack) {
  /* the def may have been removed during the call: then own everything */
  const opd_schema *schema = schema_of(op);
  uint32_t n = schema && schema->num_returns < stack->size ? schema->num_returns : stack->size;
  for (uint32_t i = 0; i < n; i++) {
    opd_ivalue *v = opd_stack_peek(stack, i);
    if (v->tag == OPD_IV_TENSOR && v->len == OPD_IV_BORROWED) opd_iv_own(v);
  }
}

int opd_call_boxed_with_keyset(const opd_operator *op, opd_keyset ks, opd_stack *stack) {
  const opd_kernel *k = opd__lookup(op, ks);
  opd_kernel_ctx ctx = {op, ks, k->data};
  return k->boxed(&ctx, stack);
}

/* A boxed call on the keys of its arguments (`args`, or NULL: those of the stack's tensors),
 * reporting the table slot it dispatched to when asked; inlined into both entry points. */
static inline int call_checked(const opd_operator *op, const opd_keyset *args, opd_stack *stack,
                               unsigned *dispatched_slot) {
  if (__builtin_expect(!schema_of(op), 0)) {
    opd_stack_clear(stack);
    return opd_error(OPD_ENOENT, "operator '%s' has kernels but no schema (it was never defined)",
                     op->name);
  }
  if (__builtin_expect(stack->size < op->num_args, 0)) {
    uint32_t have = stack->size;
    opd_stack_clear(stack);
    return opd_error(OPD_EINVAL, "%s expects %u arguments, the stack holds %u", op->name,
                     op->num_args, have);
  }
  opd_keyset ks = opd__call_keyset(op, args ? *args : boxed_argument_keys(op, stack));
  if (dispatched_slot) *dispatched_slot = opd_keyset_slot(ks);
  int rc = opd_call_boxed_with_keyset(op, ks, stack);
  if (rc == 0) opd__own_results(op, stack);
  return rc;
}

int opd_call_boxed(const opd_operator *op, opd_stack *stack) {
  return call_checked(op, NULL, stack, NULL);
}

int opd_call_boxed_keys(const opd_operator *op, opd_keyset args, opd_stack *stack,
                        unsigned *dispatched_slot) {
  *dispatched_slot = 0;
  return call_checked(op, &args, stack, dispatched_slot);
}

int opd_redispatch_boxed(const opd_kernel_ctx *ctx, opd_stack *stack) {
  return opd_call_boxed_with_keyset(ctx->op, opd_keyset_below_highest(ctx->ks), stack);
}

const opd_kernel *opd_op_lookup(const opd_operator *op, opd_keyset ks) {
  return opd__lookup(op, ks);
}

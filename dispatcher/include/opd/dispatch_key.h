/* opd/dispatch_key.h: the dispatch-key universe, written once as data.
 *
 * [Note: The key universe]
 * opd's keys are PyTorch 1.13's c10 DispatchKeys, with the same names, the same
 * priority order and the same numeric values (checked against the oracle's `key_enum`).
 * There are four kinds of key:
 *
 *  - backend components (CPU, CUDA, ..., Meta, PrivateUse1..3): one bit each in the low
 *    OPD_NUM_BACKENDS bits of a key set. They are not dispatch keys by themselves.
 *  - functionality keys (Dense, BackendSelect, AutogradFunctionality, ...): one bit each
 *    above the backend bits, lowest priority first. Five of them are *per-backend*
 *    (Dense, Quantized, Sparse, NestedTensor, AutogradFunctionality): they take one bit
 *    but own one runtime slot per backend, so the key set {Dense, CPU} means the runtime
 *    key CPU and {AutogradFunctionality, CUDA} means AutogradCUDA. The others own one
 *    runtime slot each.
 *  - per-backend runtime keys (CPU, AutogradCUDA, SparseMeta, ...): a functionality bit
 *    plus a backend bit. Their enum values follow PyTorch: after EndOfFunctionalityKeys
 *    comes, for each per-backend functionality, a placeholder "Start...Backends" value
 *    and then one value per backend.
 *  - alias keys (Autograd, CompositeImplicitAutograd, CompositeExplicitAutograd,
 *    CompositeExplicitAutogradNonFunctional): registration targets only; they expand to
 *    sets of runtime keys (see keyset.h) and never appear in a key set.
 *
 * Undefined (value 0) is the empty set. Everything else (names, bits, table slots) is
 * derived from the X-macro lists below, so adding a key is one line.
 */
#ifndef OPD_DISPATCH_KEY_H
#define OPD_DISPATCH_KEY_H

#include <stdbool.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Backend components, lowest priority first: X(name). */
// clang-format off
#define OPD_BACKEND_COMPONENTS(X) \
  X(CPU) \
  X(CUDA) \
  X(HIP) \
  X(XLA) \
  X(MPS) \
  X(IPU) \
  X(XPU) \
  X(HPU) \
  X(VE) \
  X(Lazy) \
  X(Meta) \
  X(PrivateUse1) \
  X(PrivateUse2) \
  X(PrivateUse3)
// clang-format on

/* The same list with a functionality and prefix argument, to spell the per-backend runtime
 * keys of functionality F (prefix P: CPU, QuantizedCPU, AutogradCPU): X(F, P, name). */
// clang-format off
#define OPD_BACKEND_COMPONENTS_FP(X, F, P) \
  X(F, P, CPU) \
  X(F, P, CUDA) \
  X(F, P, HIP) \
  X(F, P, XLA) \
  X(F, P, MPS) \
  X(F, P, IPU) \
  X(F, P, XPU) \
  X(F, P, HPU) \
  X(F, P, VE) \
  X(F, P, Lazy) \
  X(F, P, Meta) \
  X(F, P, PrivateUse1) \
  X(F, P, PrivateUse2) \
  X(F, P, PrivateUse3)
// clang-format on

/* Functionality keys, lowest priority first: X(name, per_backend). */
#define OPD_FUNCTIONALITY_KEYS(X)      \
  X(Dense, 1)                          \
  X(FPGA, 0)                           \
  X(ORT, 0)                            \
  X(Vulkan, 0)                         \
  X(Metal, 0)                          \
  X(Quantized, 1)                      \
  X(CustomRNGKeyId, 0)                 \
  X(MkldnnCPU, 0)                      \
  X(Sparse, 1)                         \
  X(SparseCsrCPU, 0)                   \
  X(SparseCsrCUDA, 0)                  \
  X(NestedTensor, 1)                   \
  X(BackendSelect, 0)                  \
  X(Python, 0)                         \
  X(Fake, 0)                           \
  X(FuncTorchDynamicLayerBackMode, 0)  \
  X(Functionalize, 0)                  \
  X(Named, 0)                          \
  X(Conjugate, 0)                      \
  X(Negative, 0)                       \
  X(ZeroTensor, 0)                     \
  X(ADInplaceOrView, 0)                \
  X(AutogradOther, 0)                  \
  X(AutogradFunctionality, 1)          \
  X(AutogradNestedTensor, 0)           \
  X(Tracer, 0)                         \
  X(AutocastCPU, 0)                    \
  X(AutocastXPU, 0)                    \
  X(AutocastCUDA, 0)                   \
  X(FuncTorchBatched, 0)               \
  X(FuncTorchVmapMode, 0)              \
  X(Batched, 0)                        \
  X(VmapMode, 0)                       \
  X(FuncTorchGradWrapper, 0)           \
  X(DeferredInit, 0)                   \
  X(PythonTLSSnapshot, 0)              \
  X(FuncTorchDynamicLayerFrontMode, 0) \
  X(TESTING_ONLY_GenericWrapper, 0)    \
  X(TESTING_ONLY_GenericMode, 0)       \
  X(PythonDispatcher, 0)

/* Per-backend functionalities in functionality order, with the prefix of their runtime
 * keys (Dense's is empty: CPU, not DenseCPU): X(functionality, prefix). */
#define OPD_PER_BACKEND_FUNCTIONALITIES(X) \
  X(Dense, )                               \
  X(Quantized, Quantized)                  \
  X(Sparse, Sparse)                        \
  X(NestedTensor, NestedTensor)            \
  X(AutogradFunctionality, Autograd)

/* Alias keys with their c10 values (119 is CompositeImplicitAutogradNestedTensor in
 * PyTorch, which opd does not have): X(name, value). */
#define OPD_ALIAS_KEYS(X)           \
  X(Autograd, 117)                  \
  X(CompositeImplicitAutograd, 118) \
  X(CompositeExplicitAutograd, 120) \
  X(CompositeExplicitAutogradNonFunctional, 121)

typedef enum opd_backend {
#define OPD__BACKEND_ENUM(name) OPD_BACKEND_##name,
  OPD_BACKEND_COMPONENTS(OPD__BACKEND_ENUM)
#undef OPD__BACKEND_ENUM
      OPD_NUM_BACKENDS
} opd_backend;

#define OPD__RUNTIME_ENUM(func, prefix, backend) OPD_KEY_##prefix##backend,
#define OPD__PER_BACKEND_ENUM(func, prefix) \
  OPD_KEY_StartOf##func##Backends, OPD_BACKEND_COMPONENTS_FP(OPD__RUNTIME_ENUM, func, prefix)

typedef enum opd_dispatch_key {
  OPD_KEY_Undefined = 0,
#define OPD__FUNC_ENUM(name, per_backend) OPD_KEY_##name,
  OPD_FUNCTIONALITY_KEYS(OPD__FUNC_ENUM)
#undef OPD__FUNC_ENUM
      OPD_KEY_EndOfFunctionalityKeys,
  OPD_PER_BACKEND_FUNCTIONALITIES(OPD__PER_BACKEND_ENUM)
#define OPD__ALIAS_ENUM(name, value) OPD_KEY_##name = value,
      OPD_ALIAS_KEYS(OPD__ALIAS_ENUM)
#undef OPD__ALIAS_ENUM
          OPD_NUM_KEYS
} opd_dispatch_key;

#undef OPD__RUNTIME_ENUM
#undef OPD__PER_BACKEND_ENUM

/* One past the last per-backend runtime key (AutogradPrivateUse3). */
#define OPD_KEY_EndOfRuntimeKeys ((int)OPD_KEY_AutogradPrivateUse3 + 1)

/* Functionality keys are 1..OPD_NUM_FUNCTIONALITIES (0 is Undefined). */
#define OPD_NUM_FUNCTIONALITIES ((int)OPD_KEY_EndOfFunctionalityKeys - 1)

/* What a key is. */
typedef enum opd_key_kind {
  OPD_KEY_KIND_UNDEFINED,
  OPD_KEY_KIND_FUNCTIONALITY,   /* a non-customizable functionality: one runtime slot */
  OPD_KEY_KIND_PER_BACKEND,     /* a per-backend functionality bit (Dense, ...): no slot */
  OPD_KEY_KIND_RUNTIME_BACKEND, /* a per-backend runtime instance (CPU, AutogradCUDA, ...) */
  OPD_KEY_KIND_ALIAS,
  OPD_KEY_KIND_INVALID, /* placeholders and gaps in the numbering */
} opd_key_kind;

opd_key_kind opd_key_kind_of(opd_dispatch_key k);
/* PyTorch's name of the key ("AutogradCPU"), or NULL for a value that is not a key. */
const char *opd_key_name(opd_dispatch_key k);
/* Parses a PyTorch key name; returns 0 and sets *out, or OPD_ENOENT. */
int opd_key_from_name(const char *name, opd_dispatch_key *out);
/* Name of a backend component ("CPU"). */
const char *opd_backend_name(opd_backend b);
int opd_backend_from_name(const char *name, opd_backend *out);
/* True for keys that fill a dispatch-table slot (Undefined included). */
bool opd_key_is_runtime(opd_dispatch_key k);
bool opd_key_is_alias(opd_dispatch_key k);
/* For a per-backend runtime key, its functionality and backend; for a functionality key,
 * itself and OPD_NUM_BACKENDS; for a Start...Backends placeholder, its functionality and
 * OPD_NUM_BACKENDS. */
opd_dispatch_key opd_key_functionality(opd_dispatch_key k);
opd_backend opd_key_backend(opd_dispatch_key k);
/* The runtime key of (per-backend functionality, backend): (Dense, CUDA) -> CUDA. */
opd_dispatch_key opd_key_for_backend(opd_dispatch_key functionality, opd_backend b);

#ifdef __cplusplus
}
#endif
#endif

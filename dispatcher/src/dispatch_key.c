/* dispatch_key.c: names, kinds and decomposition of dispatch keys (see
 * [Note: The key universe] in opd/dispatch_key.h). */
#include "opd/dispatch_key.h"

#include <string.h>

#include "opd/error.h"
#include "opd/keyset.h"

static const char *const opd__key_names[OPD_NUM_KEYS] = {
    [OPD_KEY_Undefined] = "Undefined",
#define OPD__FUNC_NAME(name, per_backend) [OPD_KEY_##name] = #name,
    OPD_FUNCTIONALITY_KEYS(OPD__FUNC_NAME)
#undef OPD__FUNC_NAME
#define OPD__RUNTIME_NAME(func, prefix, backend) [OPD_KEY_##prefix##backend] = #prefix #backend,
#define OPD__PER_BACKEND_NAMES(func, prefix) \
  OPD_BACKEND_COMPONENTS_FP(OPD__RUNTIME_NAME, func, prefix)
        OPD_PER_BACKEND_FUNCTIONALITIES(OPD__PER_BACKEND_NAMES)
#undef OPD__PER_BACKEND_NAMES
#undef OPD__RUNTIME_NAME
#define OPD__ALIAS_NAME(name, value) [OPD_KEY_##name] = #name,
            OPD_ALIAS_KEYS(OPD__ALIAS_NAME)
#undef OPD__ALIAS_NAME
};

static const char *const opd__backend_names[OPD_NUM_BACKENDS] = {
#define OPD__BACKEND_NAME(name) #name,
    OPD_BACKEND_COMPONENTS(OPD__BACKEND_NAME)
#undef OPD__BACKEND_NAME
};

/* The functionality a per-backend runtime key belongs to, indexed by block. */
static const opd_dispatch_key opd__per_backend_functionality[] = {
#define OPD__PB_FUNC(func, prefix) OPD_KEY_##func,
    OPD_PER_BACKEND_FUNCTIONALITIES(OPD__PB_FUNC)
#undef OPD__PB_FUNC
};

/* Per-backend runtime keys come in blocks of 1 + OPD_NUM_BACKENDS values (a placeholder,
 * then one per backend), one block per per-backend functionality. */
#define OPD__BLOCK_SIZE        (1 + OPD_NUM_BACKENDS)
#define OPD__FIRST_BLOCK_VALUE ((int)OPD_KEY_EndOfFunctionalityKeys + 1)

const char *opd_key_name(opd_dispatch_key k) {
  return (unsigned)k < OPD_NUM_KEYS ? opd__key_names[k] : NULL;
}

const char *opd_backend_name(opd_backend b) {
  return (unsigned)b < OPD_NUM_BACKENDS ? opd__backend_names[b] : NULL;
}

int opd_key_from_name(const char *name, opd_dispatch_key *out) {
  for (int k = 0; k < OPD_NUM_KEYS; k++) {
    if (opd__key_names[k] && strcmp(opd__key_names[k], name) == 0) {
      *out = (opd_dispatch_key)k;
      return 0;
    }
  }
  return opd_error(OPD_ENOENT, "unknown dispatch key '%s'", name);
}

int opd_backend_from_name(const char *name, opd_backend *out) {
  for (int b = 0; b < OPD_NUM_BACKENDS; b++) {
    if (strcmp(opd__backend_names[b], name) == 0) {
      *out = (opd_backend)b;
      return 0;
    }
  }
  return opd_error(OPD_ENOENT, "unknown backend '%s'", name);
}

opd_key_kind opd_key_kind_of(opd_dispatch_key k) {
  if (k == OPD_KEY_Undefined) return OPD_KEY_KIND_UNDEFINED;
  if ((unsigned)k >= OPD_NUM_KEYS || !opd__key_names[k]) return OPD_KEY_KIND_INVALID;
  if (k < OPD_KEY_EndOfFunctionalityKeys)
    return opd__offsets_and_masks[k].mask ? OPD_KEY_KIND_PER_BACKEND : OPD_KEY_KIND_FUNCTIONALITY;
  if (k < OPD_KEY_EndOfRuntimeKeys) return OPD_KEY_KIND_RUNTIME_BACKEND;
  return OPD_KEY_KIND_ALIAS;
}

bool opd_key_is_runtime(opd_dispatch_key k) {
  opd_key_kind kind = opd_key_kind_of(k);
  return kind == OPD_KEY_KIND_UNDEFINED || kind == OPD_KEY_KIND_FUNCTIONALITY ||
         kind == OPD_KEY_KIND_RUNTIME_BACKEND;
}

bool opd_key_is_alias(opd_dispatch_key k) {
  return opd_key_kind_of(k) == OPD_KEY_KIND_ALIAS;
}

/* True for per-backend runtime keys and the Start...Backends placeholder before each
 * block (c10's toFunctionalityKey maps both to the block's functionality). */
static bool in_per_backend_block(opd_dispatch_key k) {
  return (int)k >= OPD__FIRST_BLOCK_VALUE && (int)k < OPD_KEY_EndOfRuntimeKeys;
}

opd_dispatch_key opd_key_functionality(opd_dispatch_key k) {
  if (!in_per_backend_block(k)) return k;
  return opd__per_backend_functionality[(k - OPD__FIRST_BLOCK_VALUE) / OPD__BLOCK_SIZE];
}

opd_backend opd_key_backend(opd_dispatch_key k) {
  if (opd_key_kind_of(k) != OPD_KEY_KIND_RUNTIME_BACKEND) return OPD_NUM_BACKENDS;
  return (opd_backend)((k - OPD__FIRST_BLOCK_VALUE) % OPD__BLOCK_SIZE - 1);
}

opd_dispatch_key opd_key_for_backend(opd_dispatch_key functionality, opd_backend b) {
  for (size_t i = 0; i < sizeof opd__per_backend_functionality / sizeof(opd_dispatch_key); i++)
    if (opd__per_backend_functionality[i] == functionality)
      return (opd_dispatch_key)(OPD__FIRST_BLOCK_VALUE + (int)i * OPD__BLOCK_SIZE + 1 + (int)b);
  return OPD_KEY_Undefined;
}

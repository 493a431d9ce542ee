/* introspect.c: renders operators' registrations and computed tables as JSON (jansson) and
 * as text. Reads under the registry lock, so a dump is one consistent state, and what it
 * reads stays alive while it renders (a registration is unlinked under the lock before it
 * is freed; a plugin's names are unmapped only after that). Names and provenance come from
 * plugins, so they are rendered as valid UTF-8 ([Note: Strings on the wire are UTF-8]). */
#include "opd/introspect.h"
#include "opd/checked.h"
#include "opd/memory.h"
#include "opd/utf8.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dispatcher_internal.h"

/* s as valid UTF-8: s itself when it is, else a copy in *copy (to free) with every byte
 * that is not part of a character escaped. NULL on allocation failure. */
static const char *as_text(const char *s, char **copy) {
  size_t len = strlen(s), cap;
  *copy = NULL;
  if (opd_utf8_valid(s, len)) return s;
  if (opd_ckd_mul(&cap, len, (size_t)4) || opd_ckd_add(&cap, cap, (size_t)1) ||
      !(*copy = opd__malloc(cap)))
    return NULL;
  opd_utf8_escape(*copy, cap, s, len);
  return *copy;
}

json_t *opd_json_text(const char *s) {
  char *copy;
  const char *text = as_text(s, &copy);
  json_t *j = text ? json_string(text) : NULL;
  opd__free(copy);
  return j;
}

/* Writes s to f as valid UTF-8; false on allocation failure. */
static bool put_text(FILE *f, const char *s) {
  char *copy;
  const char *text = as_text(s, &copy);
  if (text) fputs(text, f);
  opd__free(copy);
  return text != NULL;
}

static json_t *kernel_name_json(const opd_kernel *k) {
  return opd_json_text(k->name ? k->name : "(unnamed)");
}

static const char *const reg_kind_names[] = {
    [OPD__REG_DEF] = "def",
    [OPD__REG_IMPL] = "impl",
    [OPD__REG_FALLTHROUGH] = "fallthrough",
    [OPD__REG_FALLBACK] = "fallback",
    [OPD__REG_FALLBACK_FALLTHROUGH] = "fallback_fallthrough",
};

static json_t *provenance_json(const opd_provenance *p) {
  return json_pack("{s:o, s:o, s:i}", "origin", opd_json_text(p->origin ? p->origin : ""), "file",
                   opd_json_text(p->file ? p->file : ""), "line", p->line);
}

/* Lock held. */
static json_t *slot_json_locked(const opd_operator *op, opd_dispatch_key k) {
  const opd__slot_info *s = &op->slots[opd_key_slot(k)];
  json_t *j = NULL;
  switch (s->source) {
  case OPD__SRC_KERNEL: j = json_pack("{s:s}", "source", opd_key_name(s->via)); break;
  case OPD__SRC_FALLTHROUGH_OP:
    j = json_pack("{s:s, s:s, s:s}", "source", "fallthrough", "scope", "op", "via",
                  opd_key_name(s->via));
    break;
  case OPD__SRC_FALLTHROUGH_GLOBAL:
    j = json_pack("{s:s, s:s}", "source", "fallthrough", "scope", "global");
    break;
  case OPD__SRC_FALLBACK: j = json_pack("{s:s}", "source", "fallback"); break;
  case OPD__SRC_AMBIGUOUS: j = json_pack("{s:s}", "source", "ambiguous_autogradother"); break;
  case OPD__SRC_MISSING: j = json_pack("{s:s}", "source", "missing"); break;
  }
  if (j && s->reg) {
    json_object_set_new(j, "registration", json_integer(s->reg->id));
    if (s->source == OPD__SRC_KERNEL || s->source == OPD__SRC_FALLBACK)
      json_object_set_new(j, "kernel", kernel_name_json(&s->reg->kernel));
    json_object_set_new(j, "provenance", provenance_json(&s->reg->prov));
  }
  return j;
}

json_t *opd_op_slot_json(const opd_operator *op, opd_dispatch_key k) {
  if (!opd_key_is_runtime(k)) return NULL;
  pthread_mutex_lock(&opd__registry_lock);
  json_t *j = slot_json_locked(op, k);
  pthread_mutex_unlock(&opd__registry_lock);
  return j;
}

json_t *opd_op_dispatch_json(const opd_operator *op, opd_keyset args, opd_keyset *dispatch_keyset) {
  pthread_mutex_lock(&opd__registry_lock);
  /* the slots and masks change under this lock only: the key set, the kernel and the
   * entry below are of one state, and the kernel's registration is alive */
  opd_keyset ks = opd_call_keyset(op, args);
  opd_dispatch_key key = opd_keyset_highest_key(ks);
  const opd_kernel *k = opd_op_lookup(op, ks);
  json_t *entry = opd_key_is_runtime(key) ? slot_json_locked(op, key) : json_null();
  json_t *j = json_pack("{s:s?, s:o, s:o}", "key", opd_key_name(key), "kernel",
                        k ? kernel_name_json(k) : json_null(), "entry", entry);
  pthread_mutex_unlock(&opd__registry_lock);
  *dispatch_keyset = ks;
  return j;
}

opd_reg_id opd_op_slot_registration(const opd_operator *op, opd_dispatch_key k) {
  if (!opd_key_is_runtime(k)) return 0;
  pthread_mutex_lock(&opd__registry_lock);
  const opd__registration *r = op->slots[opd_key_slot(k)].reg;
  opd_reg_id id = r ? r->id : 0;
  pthread_mutex_unlock(&opd__registry_lock);
  return id;
}

static json_t *registration_json(const opd__registration *r) {
  json_t *j = json_pack("{s:I, s:s}", "id", (json_int_t)r->id, "kind", reg_kind_names[r->kind]);
  if (!j) return NULL;
  if (r->kind != OPD__REG_DEF) json_object_set_new(j, "key", json_string(opd_key_name(r->key)));
  if (r->kind == OPD__REG_IMPL || r->kind == OPD__REG_FALLBACK) {
    json_object_set_new(j, "kernel", kernel_name_json(&r->kernel));
    json_object_set_new(j, "unboxed", json_boolean(r->kernel.unboxed != NULL));
  }
  json_object_set_new(j, "provenance", provenance_json(&r->prov));
  return j;
}

json_t *opd_op_json(const opd_operator *op) {
  json_t *root = json_object(), *regs = json_array(), *table = json_object();
  if (!root || !regs || !table) {
    json_decref(root);
    json_decref(regs);
    json_decref(table);
    return NULL;
  }
  pthread_mutex_lock(&opd__registry_lock);
  json_object_set_new(root, "name", opd_json_text(op->name));
  if (op->schema) {
    char buf[OPD_SCHEMA_MAX_LEN + 1];
    opd_schema_format(op->schema, buf, sizeof buf);
    json_object_set_new(root, "schema", opd_json_text(buf));
  } else {
    json_object_set_new(root, "schema", json_null());
  }
  if (op->def) json_array_append_new(regs, registration_json(op->def));
  for (int k = 0; k < OPD_NUM_KEYS; k++)
    for (const opd__registration *r = op->regs[k]; r; r = r->older)
      json_array_append_new(regs, registration_json(r));
  for (unsigned s = 0; s < OPD_NUM_RUNTIME_SLOTS; s++) {
    opd_dispatch_key k = opd_slot_key(s);
    if (opd_key_name(k)) json_object_set_new(table, opd_key_name(k), slot_json_locked(op, k));
  }
  pthread_mutex_unlock(&opd__registry_lock);
  json_object_set_new(root, "registrations", regs);
  json_object_set_new(root, "table", table);
  return root;
}

/* PyTorch's tags in _dispatch_dump_table. */
static const char *dump_tag(const opd__slot_info *s) {
  switch (s->source) {
  case OPD__SRC_KERNEL:
    if (s->via == OPD_KEY_CompositeImplicitAutograd) return "math kernel";
    if (s->via == OPD_KEY_CompositeExplicitAutograd ||
        s->via == OPD_KEY_CompositeExplicitAutogradNonFunctional)
      return "default backend kernel";
    if (s->via == OPD_KEY_Autograd) return "autograd kernel";
    return "kernel";
  case OPD__SRC_FALLTHROUGH_OP: return "fallthrough";
  case OPD__SRC_FALLTHROUGH_GLOBAL:
  case OPD__SRC_FALLBACK: return "backend fallback";
  case OPD__SRC_AMBIGUOUS: return "ambiguous autogradother";
  case OPD__SRC_MISSING: break;
  }
  return NULL;
}

char *opd_op_dump_table(const opd_operator *op) {
  char *out = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&out, &len);
  if (!f) return NULL;
  pthread_mutex_lock(&opd__registry_lock);
  fputs("name: ", f);
  bool ok = put_text(f, op->name);
  if (op->schema) {
    char buf[OPD_SCHEMA_MAX_LEN + 1];
    opd_schema_format(op->schema, buf, sizeof buf);
    fputs("\nschema: ", f);
    ok = put_text(f, buf) && ok;
    fputs("\n", f);
  } else {
    fputs("\nschema: (none)\n", f);
  }
  for (unsigned s = 0; s < OPD_NUM_RUNTIME_SLOTS; s++) {
    const opd__slot_info *info = &op->slots[s];
    const char *tag = dump_tag(info);
    if (!tag) continue;
    const char *kernel = info->reg && info->reg->kernel.name ? info->reg->kernel.name : "";
    if (info->source != OPD__SRC_KERNEL && info->source != OPD__SRC_FALLBACK)
      kernel = info->source == OPD__SRC_AMBIGUOUS ? "ambiguous_autogradother" : "fallthrough";
    fprintf(f, "%s: ", opd_key_name(opd_slot_key(s)));
    ok = put_text(f, kernel) && ok;
    fprintf(f, " [%s]\n", tag);
  }
  pthread_mutex_unlock(&opd__registry_lock);
  if (fclose(f) != 0 || !ok) {
    opd__free(out);
    return NULL;
  }
  return out;
}

int opd_op_count_stale_slots(const opd_operator *op) {
  int stale = 0;
  pthread_mutex_lock(&opd__registry_lock);
  for (unsigned s = 0; s < OPD_NUM_RUNTIME_SLOTS; s++) {
    opd__slot_info fresh = opd__table_compute(op, opd_slot_key(s));
    const opd__slot_info *stored = &op->slots[s];
    if (fresh.source != stored->source || fresh.via != stored->via || fresh.reg != stored->reg)
      stale++;
  }
  pthread_mutex_unlock(&opd__registry_lock);
  return stale;
}

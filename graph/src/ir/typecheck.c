/* typecheck.c: constants against schema argument types (opd_graph_check_value), the one
 * checker every graph node's constant arguments go through. The rules are those of a call's
 * arguments ([Note: Checking a call against its schema] in server/src/execute.c), on
 * IValues instead of wire values: None only for optional types; int (SymInt, Layout,
 * MemoryFormat) from an int; float from a float or an int; Scalar from an int, float or
 * bool; ScalarType from a valid dtype; Device from a backend component and an index >= -1;
 * str from UTF-8 text; lists by their element type (int[N] also takes one int); a Tensor
 * from a tensor or, as a wrapped number, from an int, float or bool. */
#include <stdio.h>

#include "ir/graph_internal.h"
#include "opd/dtype.h"
#include "opd/error.h"
#include "opd/utf8.h"

/* The schema's spelling of a type: "SymInt[]", "int[2]", "Tensor?[]", "float?". */
static void type_spelling(const opd_type *t, char *buf, size_t len) {
  const char *base = t->symint ? "SymInt" : opd_type_kind_name((opd_type_kind)t->kind);
  if (!t->is_list)
    snprintf(buf, len, "%s%s", base, t->optional ? "?" : "");
  else if (t->fixed_size)
    snprintf(buf, len, "%s%s[%d]%s", base, t->elem_optional ? "?" : "", (int)t->fixed_size,
             t->optional ? "?" : "");
  else
    snprintf(buf, len, "%s%s[]%s", base, t->elem_optional ? "?" : "", t->optional ? "?" : "");
}

static int mismatch(const opd_argument *arg, const opd_ivalue *v) {
  char tn[64];
  type_spelling(&arg->type, tn, sizeof tn);
  return opd_error(OPD_EINVAL, "expected a value of type '%s' for argument '%s' but found '%s'", tn,
                   arg->name, opd_iv_tag_name((opd_iv_tag)v->tag));
}

static bool list_matches(const opd_type *t, const opd_ivalue *v) {
  switch ((opd_type_kind)t->kind) {
  case OPD_TYPE_INT: return v->tag == OPD_IV_INT_LIST || (v->tag == OPD_IV_INT && t->fixed_size);
  case OPD_TYPE_FLOAT: return v->tag == OPD_IV_DOUBLE_LIST;
  case OPD_TYPE_BOOL: return v->tag == OPD_IV_BOOL_LIST;
  case OPD_TYPE_SCALAR: return v->tag == OPD_IV_INT_LIST || v->tag == OPD_IV_DOUBLE_LIST;
  case OPD_TYPE_TENSOR:
    return v->tag == (t->elem_optional ? OPD_IV_OPT_TENSOR_LIST : OPD_IV_TENSOR_LIST);
  default: return false;
  }
}

int opd_graph_check_value(const opd_argument *arg, const opd_ivalue *v) {
  const opd_type *t = &arg->type;
  if (v->tag >= OPD_IV_NUM_TAGS)
    return opd_error(OPD_EINVAL, "argument '%s': not a valid value (tag %u)", arg->name,
                     (unsigned)v->tag);
  if (v->tag == OPD_IV_NONE) return t->optional ? 0 : mismatch(arg, v);
  if (t->is_list) return list_matches(t, v) ? 0 : mismatch(arg, v);
  switch ((opd_type_kind)t->kind) {
  case OPD_TYPE_TENSOR:
    return v->tag == OPD_IV_TENSOR || opd_iv_is_scalar(v) ? 0 : mismatch(arg, v);
  case OPD_TYPE_INT:
  case OPD_TYPE_LAYOUT:
  case OPD_TYPE_MEMORY_FORMAT: return v->tag == OPD_IV_INT ? 0 : mismatch(arg, v);
  case OPD_TYPE_FLOAT:
    return v->tag == OPD_IV_DOUBLE || v->tag == OPD_IV_INT ? 0 : mismatch(arg, v);
  case OPD_TYPE_BOOL: return v->tag == OPD_IV_BOOL ? 0 : mismatch(arg, v);
  case OPD_TYPE_STR:
    if (v->tag != OPD_IV_STRING) return mismatch(arg, v);
    if (!opd_utf8_valid_text(v->u.s, v->len))
      return opd_error(OPD_EINVAL, "argument '%s': the string is not UTF-8 text", arg->name);
    return 0;
  case OPD_TYPE_SCALAR: return opd_iv_is_scalar(v) ? 0 : mismatch(arg, v);
  case OPD_TYPE_SCALAR_TYPE:
    if (v->tag != OPD_IV_DTYPE) return mismatch(arg, v);
    if (!opd_dtype_valid((int)v->u.dtype))
      return opd_error(OPD_EINVAL, "argument '%s': invalid dtype %lld", arg->name,
                       (long long)v->u.dtype);
    return 0;
  case OPD_TYPE_DEVICE:
    if (v->tag != OPD_IV_DEVICE) return mismatch(arg, v);
    if (v->u.device.type < 0 || v->u.device.type >= OPD_NUM_BACKENDS || v->u.device.index < -1)
      return opd_error(OPD_EINVAL, "argument '%s': invalid device (type %d, index %d)", arg->name,
                       (int)v->u.device.type, (int)v->u.device.index);
    return 0;
  case OPD_TYPE_GENERATOR:
    return opd_error(OPD_EINVAL, "argument '%s': a graph cannot hold a generator; pass None",
                     arg->name);
  case OPD_TYPE_NUM_KINDS: break;
  }
  return mismatch(arg, v);
}

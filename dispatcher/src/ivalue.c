/* ivalue.c: IValue construction, copying and destruction, and the stack's storage. */
#include "opd/ivalue.h"

#include <assert.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "opd/checked.h"
#include "opd/error.h"
#include "opd/memory.h"
#include "opd/tensor.h"

static const char *const opd__iv_tag_names[] = {
#define OPD__IV_TAG_NAME(name, text) text,
    OPD_IVALUE_TAGS(OPD__IV_TAG_NAME)
#undef OPD__IV_TAG_NAME
};

const char *opd_iv_tag_name(opd_iv_tag tag) {
  return (unsigned)tag < OPD_IV_NUM_TAGS ? opd__iv_tag_names[tag] : "invalid";
}

opd_ivalue opd_iv_tensor(opd_tensor *t) {
  opd_tensor_retain(t);
  return opd_iv_tensor_steal(t);
}

/* Allocates n elements of `size` bytes (at least one byte) with a length check. */
static void *alloc_array(size_t n, size_t size, int *err) {
  size_t nbytes;
  if (n > UINT32_MAX || opd_ckd_mul(&nbytes, n, size)) {
    *err = opd_error(OPD_EINVAL, "list of %zu elements is too long", n);
    return NULL;
  }
  void *p = opd__malloc(n ? nbytes : 1);
  if (!p) *err = opd_error(OPD_ENOMEM, "out of memory allocating a list of %zu elements", n);
  return p;
}

int opd_iv_make_string(opd_ivalue *out, const char *s, size_t len) {
  int err = 0;
  if (len >= UINT32_MAX) return opd_error(OPD_EINVAL, "string of %zu bytes is too long", len);
  char *copy = alloc_array(len + 1, 1, &err);
  if (!copy) return err;
  memcpy(copy, s, len);
  copy[len] = '\0';
  *out = (opd_ivalue){.tag = OPD_IV_STRING, .len = (uint32_t)len, .u.s = copy};
  return 0;
}

#define OPD__DEFINE_MAKE_LIST(fn, ctype, TAG, field)                      \
  int fn(opd_ivalue *out, const ctype *v, size_t n) {                     \
    int err = 0;                                                          \
    ctype *copy = alloc_array(n, sizeof(ctype), &err);                    \
    if (!copy) return err;                                                \
    if (n) memcpy(copy, v, n * sizeof(ctype));                            \
    *out = (opd_ivalue){.tag = TAG, .len = (uint32_t)n, .u.field = copy}; \
    return 0;                                                             \
  }
OPD__DEFINE_MAKE_LIST(opd_iv_make_int_list, int64_t, OPD_IV_INT_LIST, ints)
OPD__DEFINE_MAKE_LIST(opd_iv_make_double_list, double, OPD_IV_DOUBLE_LIST, doubles)
OPD__DEFINE_MAKE_LIST(opd_iv_make_bool_list, bool, OPD_IV_BOOL_LIST, bools)
#undef OPD__DEFINE_MAKE_LIST

int opd_iv_make_tensor_list(opd_ivalue *out, opd_tensor *const *v, size_t n, bool optional) {
  int err = 0;
  for (size_t i = 0; i < n && !optional; i++)
    if (!v[i]) return opd_error(OPD_EINVAL, "element %zu of a Tensor[] is None", i);
  opd_tensor **copy = alloc_array(n, sizeof *copy, &err);
  if (!copy) return err;
  for (size_t i = 0; i < n; i++) {
    copy[i] = v[i];
    if (v[i]) opd_tensor_retain(v[i]);
  }
  *out = (opd_ivalue){.tag = optional ? OPD_IV_OPT_TENSOR_LIST : OPD_IV_TENSOR_LIST,
                      .len = (uint32_t)n,
                      .u.tensors = copy};
  return 0;
}

void opd_iv_own(opd_ivalue *v) {
  if (v->tag == OPD_IV_TENSOR && v->len == OPD_IV_BORROWED) {
    opd_tensor_retain(v->u.t);
    v->len = 0;
  }
}

void opd_iv_destroy(opd_ivalue *v) {
  switch ((opd_iv_tag)v->tag) {
  case OPD_IV_TENSOR:
    if (v->len != OPD_IV_BORROWED) opd_tensor_release(v->u.t);
    break;
  case OPD_IV_TENSOR_LIST:
  case OPD_IV_OPT_TENSOR_LIST:
    for (uint32_t i = 0; i < v->len; i++)
      if (v->u.tensors[i]) opd_tensor_release(v->u.tensors[i]);
    opd__free(v->u.tensors);
    break;
  case OPD_IV_STRING: opd__free(v->u.s); break;
  case OPD_IV_INT_LIST: opd__free(v->u.ints); break;
  case OPD_IV_DOUBLE_LIST: opd__free(v->u.doubles); break;
  case OPD_IV_BOOL_LIST: opd__free(v->u.bools); break;
  default: break;
  }
  *v = opd_iv_none();
}

int opd_iv_copy(opd_ivalue *dst, const opd_ivalue *src) {
  switch ((opd_iv_tag)src->tag) {
  case OPD_IV_TENSOR: *dst = opd_iv_tensor(src->u.t); return 0;
  case OPD_IV_STRING: return opd_iv_make_string(dst, src->u.s, src->len);
  case OPD_IV_INT_LIST: return opd_iv_make_int_list(dst, src->u.ints, src->len);
  case OPD_IV_DOUBLE_LIST: return opd_iv_make_double_list(dst, src->u.doubles, src->len);
  case OPD_IV_BOOL_LIST: return opd_iv_make_bool_list(dst, src->u.bools, src->len);
  case OPD_IV_TENSOR_LIST:
  case OPD_IV_OPT_TENSOR_LIST:
    return opd_iv_make_tensor_list(dst, src->u.tensors, src->len,
                                   src->tag == OPD_IV_OPT_TENSOR_LIST);
  default: *dst = *src; return 0;
  }
}

static bool same_double(double a, double b) {
  return (isnan(a) && isnan(b)) || memcmp(&a, &b, sizeof a) == 0;
}

bool opd_iv_equal(const opd_ivalue *a, const opd_ivalue *b) {
  if (a->tag != b->tag) return false;
  switch ((opd_iv_tag)a->tag) {
  case OPD_IV_NONE: return true;
  case OPD_IV_BOOL: return a->u.b == b->u.b;
  case OPD_IV_INT: return a->u.i == b->u.i;
  case OPD_IV_DOUBLE: return same_double(a->u.d, b->u.d);
  case OPD_IV_DTYPE: return a->u.dtype == b->u.dtype;
  case OPD_IV_DEVICE:
    return a->u.device.type == b->u.device.type && a->u.device.index == b->u.device.index;
  case OPD_IV_TENSOR: return a->u.t == b->u.t;
  case OPD_IV_STRING: return a->len == b->len && memcmp(a->u.s, b->u.s, a->len) == 0;
  case OPD_IV_INT_LIST:
    return a->len == b->len && (!a->len || !memcmp(a->u.ints, b->u.ints, a->len * 8ul));
  case OPD_IV_BOOL_LIST:
    return a->len == b->len && (!a->len || !memcmp(a->u.bools, b->u.bools, a->len));
  case OPD_IV_DOUBLE_LIST:
    if (a->len != b->len) return false;
    for (uint32_t i = 0; i < a->len; i++)
      if (!same_double(a->u.doubles[i], b->u.doubles[i])) return false;
    return true;
  case OPD_IV_TENSOR_LIST:
  case OPD_IV_OPT_TENSOR_LIST:
    return a->len == b->len &&
           (!a->len || !memcmp(a->u.tensors, b->u.tensors, a->len * sizeof(opd_tensor *)));
  default: return false;
  }
}

void opd_stack_init(opd_stack *s) {
  s->items = s->inline_items;
  s->size = 0;
  s->capacity = OPD_STACK_INLINE;
}

int opd__stack_grow(opd_stack *s) {
  if (s->capacity > UINT32_MAX / 2) return opd_error(OPD_ENOMEM, "stack too large");
  uint32_t cap = s->capacity * 2;
  opd_ivalue *items = opd__malloc(cap * sizeof *items);
  if (!items) return opd_error(OPD_ENOMEM, "out of memory growing a stack to %u values", cap);
  memcpy(items, s->items, s->size * sizeof *items);
  if (s->items != s->inline_items) opd__free(s->items);
  s->items = items;
  s->capacity = cap;
  return 0;
}

void opd_stack_clear(opd_stack *s) {
  opd_stack_drop(s, s->size);
}

void opd_stack_destroy(opd_stack *s) {
  opd_stack_clear(s);
  if (s->items != s->inline_items) opd__free(s->items);
  opd_stack_init(s);
}

/* opd/ivalue.h: boxed values (IValue) and the call stack.
 *
 * [Note: IValues and ownership]
 * An IValue is a tagged value of 16 bytes: a tag, a length and an 8-byte payload. It owns what it
 * points to: a tensor reference (retained), or a heap array for strings and lists. Moving
 * an IValue (a struct copy followed by forgetting the source) transfers ownership; use
 * opd_iv_copy() for a second owner. A tensor IValue may instead *borrow* its tensor
 * (opd_iv_tensor_borrow, c10's MaybeOwned): the caller guarantees the tensor outlives the
 * call, and no reference count changes. Arguments are borrowed from a caller's handles
 * for the duration of a call; results are always owned (opd_call_boxed makes borrowed
 * results owned), so nothing borrowed escapes a call. A Scalar travels as an int, double or bool
 * IValue, as in c10, and its kind matters for type promotion. ScalarType, Device have tags of their
 * own (the protocol names them); Layout and MemoryFormat are ints, as in c10.
 *
 * The stack owns its IValues. Boxed kernels pop their arguments and push their results;
 * it keeps OPD_STACK_INLINE values inline, so a call with few arguments never allocates
 * (and so an opd_stack must not be copied by value: it points into itself).
 */
#ifndef OPD_IVALUE_H
#define OPD_IVALUE_H

#include <assert.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "opd/allocator.h" /* opd_device */
#include "opd/error.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct opd_tensor opd_tensor;

#define OPD_IVALUE_TAGS(X)        \
  X(NONE, "None")                 \
  X(BOOL, "bool")                 \
  X(INT, "int")                   \
  X(DOUBLE, "float")              \
  X(STRING, "str")                \
  X(TENSOR, "Tensor")             \
  X(INT_LIST, "int[]")            \
  X(DOUBLE_LIST, "float[]")       \
  X(BOOL_LIST, "bool[]")          \
  X(TENSOR_LIST, "Tensor[]")      \
  X(OPT_TENSOR_LIST, "Tensor?[]") \
  X(DTYPE, "ScalarType")          \
  X(DEVICE, "Device")

typedef enum opd_iv_tag {
#define OPD__IV_TAG_ENUM(name, text) OPD_IV_##name,
  OPD_IVALUE_TAGS(OPD__IV_TAG_ENUM)
#undef OPD__IV_TAG_ENUM
      OPD_IV_NUM_TAGS
} opd_iv_tag;

typedef struct opd_ivalue {
  uint32_t tag; /* opd_iv_tag */
  uint32_t len; /* element count of a list, byte length of a string; for a tensor,
                   OPD_IV_BORROWED when the value does not own its reference */
  union {
    bool b;
    int64_t i;
    double d;
    char *s;              /* NUL-terminated, len bytes before the NUL */
    opd_tensor *t;        /* TENSOR: never NULL */
    int64_t *ints;        /* INT_LIST */
    double *doubles;      /* DOUBLE_LIST */
    bool *bools;          /* BOOL_LIST */
    opd_tensor **tensors; /* TENSOR_LIST: no NULL; OPT_TENSOR_LIST: NULL is None */
    int64_t dtype;        /* DTYPE */
    opd_device device;    /* DEVICE */
  } u;
} opd_ivalue;

_Static_assert(sizeof(opd_ivalue) == 16, "an IValue is a tag, a length and 8 bytes");

/* A Scalar, as unboxed kernels receive it. */
typedef struct opd_scalar {
  uint8_t tag; /* OPD_IV_BOOL, OPD_IV_INT or OPD_IV_DOUBLE */
  union {
    bool b;
    int64_t i;
    double d;
  } u;
} opd_scalar;

/* "int", "Tensor[]", ... */
const char *opd_iv_tag_name(opd_iv_tag tag);

static inline opd_ivalue opd_iv_none(void) {
  return (opd_ivalue){.tag = OPD_IV_NONE};
}
static inline opd_ivalue opd_iv_bool(bool v) {
  return (opd_ivalue){.tag = OPD_IV_BOOL, .u.b = v};
}
static inline opd_ivalue opd_iv_int(int64_t v) {
  return (opd_ivalue){.tag = OPD_IV_INT, .u.i = v};
}
static inline opd_ivalue opd_iv_double(double v) {
  return (opd_ivalue){.tag = OPD_IV_DOUBLE, .u.d = v};
}
static inline opd_ivalue opd_iv_dtype(int64_t dtype) {
  return (opd_ivalue){.tag = OPD_IV_DTYPE, .u.dtype = dtype};
}
static inline opd_ivalue opd_iv_device(opd_device d) {
  return (opd_ivalue){.tag = OPD_IV_DEVICE, .u.device = d};
}
/* A tensor IValue holding a new reference to t (t retained). */
opd_ivalue opd_iv_tensor(opd_tensor *t);
#define OPD_IV_BORROWED 1u
/* A tensor IValue that borrows t: no reference is taken or dropped. */
static inline opd_ivalue opd_iv_tensor_borrow(opd_tensor *t) {
  return (opd_ivalue){.tag = OPD_IV_TENSOR, .len = OPD_IV_BORROWED, .u.t = t};
}
/* Makes a borrowed tensor IValue own its tensor (takes a reference); else does nothing. */
void opd_iv_own(opd_ivalue *v);
/* A tensor IValue that takes over the caller's reference to t. */
static inline opd_ivalue opd_iv_tensor_steal(opd_tensor *t) {
  return (opd_ivalue){.tag = OPD_IV_TENSOR, .u.t = t};
}
static inline opd_ivalue opd_iv_scalar(opd_scalar s) {
  opd_ivalue v = {.tag = s.tag};
  if (s.tag == OPD_IV_BOOL)
    v.u.b = s.u.b;
  else if (s.tag == OPD_IV_INT)
    v.u.i = s.u.i;
  else
    v.u.d = s.u.d;
  return v;
}
/* The Scalar held by an int, double or bool IValue. */
static inline opd_scalar opd_iv_to_scalar(const opd_ivalue *v) {
  opd_scalar s = {.tag = (uint8_t)v->tag};
  if (v->tag == OPD_IV_BOOL)
    s.u.b = v->u.b;
  else if (v->tag == OPD_IV_INT)
    s.u.i = v->u.i;
  else
    s.u.d = v->u.d;
  return s;
}
static inline bool opd_iv_is_scalar(const opd_ivalue *v) {
  return v->tag == OPD_IV_BOOL || v->tag == OPD_IV_INT || v->tag == OPD_IV_DOUBLE;
}

/* Allocating constructors: 0 or OPD_ENOMEM / OPD_EINVAL (length over UINT32_MAX). */
int opd_iv_make_string(opd_ivalue *out, const char *s, size_t len);
int opd_iv_make_int_list(opd_ivalue *out, const int64_t *v, size_t n);
int opd_iv_make_double_list(opd_ivalue *out, const double *v, size_t n);
int opd_iv_make_bool_list(opd_ivalue *out, const bool *v, size_t n);
/* Retains each tensor; for a TENSOR_LIST every element must be non-NULL. */
int opd_iv_make_tensor_list(opd_ivalue *out, opd_tensor *const *v, size_t n, bool optional);

/* Releases what v owns and makes it None. */
void opd_iv_destroy(opd_ivalue *v);
/* A deep copy (tensors retained): 0 or OPD_ENOMEM. */
int opd_iv_copy(opd_ivalue *dst, const opd_ivalue *src);
/* Structural equality (tensors by identity, doubles bitwise-equal or both NaN). */
bool opd_iv_equal(const opd_ivalue *a, const opd_ivalue *b);

#define OPD_STACK_INLINE 12

typedef struct opd_stack {
  opd_ivalue *items;
  uint32_t size;
  uint32_t capacity;
  opd_ivalue inline_items[OPD_STACK_INLINE];
} opd_stack;

void opd_stack_init(opd_stack *s);
/* Destroys every value and frees any heap storage. */
void opd_stack_destroy(opd_stack *s);
/* Destroys every value, keeps the storage. */
void opd_stack_clear(opd_stack *s);
int opd__stack_grow(opd_stack *s);
/* Pushes v, taking ownership: 0, or OPD_ENOMEM (then v is destroyed). */
static inline int opd_stack_push(opd_stack *s, opd_ivalue v) {
  if (s->size == s->capacity && opd__stack_grow(s) != 0) {
    opd_iv_destroy(&v);
    return OPD_ENOMEM;
  }
  /* field by field: a 16-byte struct copy from two 8-byte halves just written stalls
   * store forwarding on the call path */
  opd_ivalue *dst = &s->items[s->size++];
  dst->tag = v.tag;
  dst->len = v.len;
  dst->u = v.u;
  return 0;
}
/* Removes the top value and hands it (and its ownership) to the caller. */
static inline opd_ivalue opd_stack_pop(opd_stack *s) {
  /* field by field, as opd_stack_push writes it: one 16-byte load of a value its kernel
   * just wrote in parts cannot take the stores' data forward and waits for them */
  const opd_ivalue *src = &s->items[--s->size];
  opd_ivalue v;
  v.tag = src->tag;
  v.len = src->len;
  v.u = src->u;
  return v;
}
/* The value `depth` below the top (0 is the top). */
static inline opd_ivalue *opd_stack_peek(opd_stack *s, uint32_t depth) {
  return &s->items[s->size - 1 - depth];
}
/* The first of the top n values: opd_stack_last(s, n)[0 .. n-1] in push order. */
static inline opd_ivalue *opd_stack_last(opd_stack *s, uint32_t n) {
  return &s->items[s->size - n];
}
/* Scalars and borrowed tensors (the common arguments of a call) have nothing to release. */
static inline bool opd__iv_owns_nothing(const opd_ivalue *v) {
  return v->tag <= OPD_IV_DOUBLE || v->tag == OPD_IV_DTYPE || v->tag == OPD_IV_DEVICE ||
         (v->tag == OPD_IV_TENSOR && v->len == OPD_IV_BORROWED);
}
/* Destroys the top n values (inline: every boxed kernel drops its arguments). */
static inline void opd_stack_drop(opd_stack *s, uint32_t n) {
  assert(n <= s->size);
  while (n--) {
    opd_ivalue *v = &s->items[--s->size];
    if (!opd__iv_owns_nothing(v)) opd_iv_destroy(v);
  }
}

#ifdef __cplusplus
}
#endif
#endif

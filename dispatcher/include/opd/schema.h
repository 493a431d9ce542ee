/* opd/schema.h: ATen function schemas, parsed from and printed to c10's text form.
 *
 * [Note: Schema strings]
 * A schema is what c10's FunctionSchema prints, e.g.
 *
 *   aten::add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor
 *
 * The namespace (`aten::`) and the overload (`.Tensor`) are optional; an operator
 * defined inside a library gets its namespace from the library
 * (opd_schema_set_namespace). Arguments after `*` are keyword-only. Returns are one
 * type, or a parenthesised list of types, each optionally named: `-> (Tensor values,
 * Tensor indices)`, `-> ()`.
 *
 * Types: Tensor int SymInt float bool str Scalar ScalarType Device Layout MemoryFormat
 * Generator, optionally followed by `?` (optional). A list is `T[]` or `T[N]` (fixed
 * size, 1..OPD_SCHEMA_MAX_FIXED_SIZE), optionally followed by `?`; list elements may be
 * Tensor, int, SymInt, float, bool or Scalar, and only Tensor elements may be optional
 * (`Tensor?[]`). A Tensor (or the Tensor elements of a list) may carry an alias
 * annotation: `Tensor(a)`, `Tensor(a!)`, `Tensor(a -> *)`, `Tensor(a!)[]`,
 * `Tensor(a)?`. SymInt is an int that remembers its spelling, so it prints back as SymInt;
 * like c10, opd_schema_equal treats SymInt and int as the same type.
 *
 * Defaults are held as IValues, checked against the argument's type, as c10's schema
 * parser builds them: `None` (optional types only) is NONE; int, SymInt, Layout and
 * MemoryFormat take an integer (INT); ScalarType an integer (DTYPE); float an integer or
 * float literal, `inf`, `-inf`, `nan` (DOUBLE); bool `True`/`False` (BOOL); str a
 * quoted string (STRING); Scalar an integer (INT), a float (DOUBLE) or a bool (BOOL).
 * c10's named constants `Mean` (1), `contiguous_format` (0), `strided` (0), `long` (4),
 * `float` (6) and `complex` (9) are integers. Lists of int/SymInt, float and bool take
 * `[a, b, ...]`, and a fixed-size one also takes a single element that is repeated N
 * times (`int[2] stride=1` is [1, 1]). Tensor, Generator, Device and the other lists
 * (Tensor[], Scalar[]) take only `None`.
 *
 * Limits (the text can be hostile): at most OPD_SCHEMA_MAX_LEN bytes, given and printed
 * (opd_schema_format: escapes and floats can print longer than they were written), at most
 * OPD_SCHEMA_MAX_ARGS arguments and as many returns. Bad text fails with OPD_ESCHEMA and a
 * message "schema: at N: reason" (N: 0-based byte offset) in opd_last_error().
 */
#ifndef OPD_SCHEMA_H
#define OPD_SCHEMA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "opd/ivalue.h"

#ifdef __cplusplus
extern "C" {
#endif

#define OPD_SCHEMA_MAX_LEN        4096
#define OPD_SCHEMA_MAX_ARGS       64
#define OPD_SCHEMA_MAX_FIXED_SIZE 64

typedef enum opd_type_kind {
  OPD_TYPE_TENSOR,
  OPD_TYPE_INT,
  OPD_TYPE_FLOAT,
  OPD_TYPE_BOOL,
  OPD_TYPE_STR,
  OPD_TYPE_SCALAR,
  OPD_TYPE_SCALAR_TYPE,
  OPD_TYPE_DEVICE,
  OPD_TYPE_LAYOUT,
  OPD_TYPE_MEMORY_FORMAT,
  OPD_TYPE_GENERATOR,
  OPD_TYPE_NUM_KINDS
} opd_type_kind;

/* An argument's type. For a list, `kind` and `symint` describe the elements. */
typedef struct opd_type {
  uint8_t kind;       /* opd_type_kind */
  bool optional;      /* `T?`, or for a list `T[]?` */
  bool is_list;       /* `T[]` or `T[N]` */
  bool elem_optional; /* `Tensor?[]` */
  bool symint;        /* kind is OPD_TYPE_INT, written SymInt */
  int32_t fixed_size; /* N of `T[N]`; 0: none */
} opd_type;

/* An alias annotation on a Tensor (or on a list's Tensors): `(set)`, `(set!)`, `(set ->
 * *)`. set[0] == 0: no annotation. */
typedef struct opd_alias_info {
  char set[8];
  bool is_write;
  bool to_wildcard;
} opd_alias_info;

typedef struct opd_argument {
  char *name; /* never NULL; "" for an unnamed return */
  opd_type type;
  opd_alias_info alias;
  bool kwarg_only;
  bool has_default;
  opd_ivalue default_value; /* NONE unless has_default */
} opd_argument;

typedef struct opd_schema {
  char *ns;       /* never NULL; "" when the text names no namespace */
  char *name;     /* never NULL */
  char *overload; /* never NULL; "" when none */
  opd_argument *args;
  uint32_t num_args;
  opd_argument *returns;
  uint32_t num_returns;
} opd_schema;

/* Parses `text` into a new schema (free it with opd_schema_free): 0, OPD_ESCHEMA (bad
 * text), OPD_ENOMEM, or OPD_EINVAL (NULL text or out). *out is NULL on failure. */
int opd_schema_parse(const char *text, opd_schema **out);

/* Prints s in c10's FunctionSchema format into buf (at most len bytes, NUL-terminated
 * when len > 0). Returns the full length, not counting the NUL, like snprintf. Values
 * print as c10 prints them: bools True/False, None, strings double-quoted with c10's
 * escapes, lists `[0, 1]`, a float that is integral and below 1e10 as `2.`, any other
 * float with 17 significant digits (`1.0000000000000001e-05`), `inf`, `-inf`, `nan`.
 * Two departures keep every printed schema parsing back to an equal one: an integral
 * float from 1e10 to 1e17 gets a trailing '.' (c10 prints `10000000000`), and an int list
 * prints as its single repeated element (`int[2] stride=1`) only when its length is the
 * list's fixed size N > 1 (c10 does so for any int list of equal elements). */
int opd_schema_format(const opd_schema *s, char *buf, size_t len);

/* "ns::name.overload", "name.overload" or "name", as opd_schema_format. */
int opd_schema_qualified_name(const opd_schema *s, char *buf, size_t len);

/* Gives a schema that names no namespace the namespace `ns` (an identifier): 0, or
 * OPD_ESCHEMA (s names another namespace, or would print longer than OPD_SCHEMA_MAX_LEN
 * bytes), OPD_EINVAL (ns is not an identifier), OPD_ENOMEM. Setting the namespace s
 * already has is a no-op. */
int opd_schema_set_namespace(opd_schema *s, const char *ns);

/* Frees s and everything it owns; NULL is a no-op. */
void opd_schema_free(opd_schema *s);

/* Same namespace, name, overload, arguments (names, types, alias annotations, kwarg-only,
 * defaults) and returns. SymInt and int compare equal, as in c10. */
bool opd_schema_equal(const opd_schema *a, const opd_schema *b);

/* "Tensor", "int", "float", ... ("?" for an out-of-range kind). */
const char *opd_type_kind_name(opd_type_kind k);

#ifdef __cplusplus
}
#endif
#endif

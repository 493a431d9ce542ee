/* schema.c: the ATen function-schema parser, printer and comparison (see opd/schema.h).
 *
 * The parser is a recursive descent over the bytes of the text, mirroring c10's
 * SchemaParser; every error names the byte offset where it was detected. The printer
 * mirrors c10's operator<< for FunctionSchema, Argument and IValue.
 */
#include "opd/schema.h"

#include <assert.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "opd/error.h"
#include "opd/memory.h"

/* ---- type names ---- */

static const char *const type_names[OPD_TYPE_NUM_KINDS] = {
    [OPD_TYPE_TENSOR] = "Tensor",
    [OPD_TYPE_INT] = "int",
    [OPD_TYPE_FLOAT] = "float",
    [OPD_TYPE_BOOL] = "bool",
    [OPD_TYPE_STR] = "str",
    [OPD_TYPE_SCALAR] = "Scalar",
    [OPD_TYPE_SCALAR_TYPE] = "ScalarType",
    [OPD_TYPE_DEVICE] = "Device",
    [OPD_TYPE_LAYOUT] = "Layout",
    [OPD_TYPE_MEMORY_FORMAT] = "MemoryFormat",
    [OPD_TYPE_GENERATOR] = "Generator",
};

const char *opd_type_kind_name(opd_type_kind k) {
  return (unsigned)k < OPD_TYPE_NUM_KINDS ? type_names[k] : "?";
}

static const char *type_base_name(const opd_type *t) {
  return t->symint ? "SymInt" : opd_type_kind_name((opd_type_kind)t->kind);
}

/* c10's named numeric constants (SchemaParser::parseSingleConstant). */
static const struct {
  const char *name;
  int64_t value;
} named_ints[] = {
    {"Mean", 1},  {"contiguous_format", 0}, {"strided", 0}, {"long", 4},
    {"float", 6}, {"complex", 9},
};

/* ---- parser state and errors ---- */

typedef struct parser {
  const char *s; /* the text, NUL-terminated */
  size_t pos;    /* byte offset of the next unread byte */
  opd_schema *out;
  uint32_t args_cap, returns_cap;
} parser;

static int fail(size_t pos, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int fail(size_t pos, const char *fmt, ...) {
  char reason[160];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(reason, sizeof reason, fmt, ap);
  va_end(ap);
  return opd_error(OPD_ESCHEMA, "schema: at %zu: %s", pos, reason);
}

static int no_memory(void) {
  return opd_error(OPD_ENOMEM, "schema: out of memory");
}

/* Describes the byte at p->pos for a "got ..." message. */
static const char *got(const parser *p, char buf[24]) {
  unsigned char c = (unsigned char)p->s[p->pos];
  if (c == 0) return "end of input";
  if (c >= 0x20 && c < 0x7f)
    snprintf(buf, 24, "'%c'", c);
  else
    snprintf(buf, 24, "byte 0x%02x", c);
  return buf;
}

static int fail_expected(const parser *p, const char *what) {
  char buf[24];
  return fail(p->pos, "expected %s, got %s", what, got(p, buf));
}

static bool is_space(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}
static bool is_digit(char c) {
  return c >= '0' && c <= '9';
}
static bool is_ident_start(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}
static bool is_ident_char(char c) {
  return is_ident_start(c) || is_digit(c);
}

static void skip_space(parser *p) {
  while (is_space(p->s[p->pos])) p->pos++;
}

/* Skips white space, then consumes c if it is next. */
static bool accept(parser *p, char c) {
  skip_space(p);
  if (p->s[p->pos] != c) return false;
  p->pos++;
  return true;
}

static int expect(parser *p, char c, const char *what) {
  return accept(p, c) ? 0 : fail_expected(p, what);
}

/* Scans an identifier at p->pos (no white space skipped): its length, 0 if none. */
static size_t ident_len(const parser *p) {
  size_t n = 0;
  if (!is_ident_start(p->s[p->pos])) return 0;
  while (is_ident_char(p->s[p->pos + n])) n++;
  return n;
}

static bool ident_is(const char *s, size_t n, const char *word) {
  return strlen(word) == n && memcmp(s, word, n) == 0;
}

static char *dup_range(const char *s, size_t n) {
  char *d = opd__malloc(n + 1);
  if (!d) return NULL;
  memcpy(d, s, n);
  d[n] = '\0';
  return d;
}

/* Parses an identifier into a new string; `what` names it in the error. */
static int parse_ident(parser *p, const char *what, char **out) {
  size_t n = ident_len(p);
  if (n == 0) return fail_expected(p, what);
  *out = dup_range(p->s + p->pos, n);
  if (!*out) return no_memory();
  p->pos += n;
  return 0;
}

/* ---- types ---- */

/* Parses `(set)`, `(set!)`, `(set -> *)` or `(set! -> *)`; p->pos is at '('. */
static int parse_alias(parser *p, opd_alias_info *alias) {
  p->pos++;
  skip_space(p);
  size_t start = p->pos, n = ident_len(p);
  if (n == 0) return fail_expected(p, "alias set name");
  if (n >= sizeof alias->set) {
    return fail(start, "alias set name longer than %zu bytes", sizeof alias->set - 1);
  }
  memcpy(alias->set, p->s + start, n);
  alias->set[n] = '\0';
  p->pos += n;
  alias->is_write = accept(p, '!');
  skip_space(p);
  if (p->s[p->pos] == '-' && p->s[p->pos + 1] == '>') {
    p->pos += 2;
    if (!accept(p, '*')) return fail_expected(p, "'*' after '->' in alias annotation");
    alias->to_wildcard = true;
  }
  return expect(p, ')', "')' to close alias annotation");
}

static bool can_be_list_element(opd_type_kind k) {
  return k == OPD_TYPE_TENSOR || k == OPD_TYPE_INT || k == OPD_TYPE_FLOAT || k == OPD_TYPE_BOOL ||
         k == OPD_TYPE_SCALAR;
}

/* type := NAME [alias] ['?'] ['[' [N] ']' ['?']], no white space inside except within
 * the alias annotation's parentheses. */
static int parse_type(parser *p, opd_type *type, opd_alias_info *alias) {
  skip_space(p);
  size_t start = p->pos, n = ident_len(p);
  if (n == 0) return fail_expected(p, "a type");
  const char *name = p->s + start;
  *type = (opd_type){0};
  *alias = (opd_alias_info){.is_write = false};
  if (ident_is(name, n, "SymInt")) {
    type->kind = OPD_TYPE_INT;
    type->symint = true;
  } else {
    int k = 0;
    while (k < OPD_TYPE_NUM_KINDS && !ident_is(name, n, type_names[k])) k++;
    if (k == OPD_TYPE_NUM_KINDS) {
      return fail(start, "unknown type '%.*s'", n > 40 ? 40 : (int)n, name);
    }
    type->kind = (uint8_t)k;
  }
  p->pos += n;
  int err;
  if (type->kind == OPD_TYPE_TENSOR && p->s[p->pos] == '(' && (err = parse_alias(p, alias))) {
    return err;
  }
  bool first_q = p->s[p->pos] == '?';
  if (first_q) p->pos++;
  if (p->s[p->pos] != '[') {
    type->optional = first_q;
    return 0;
  }
  size_t list_pos = p->pos++;
  if (!can_be_list_element((opd_type_kind)type->kind)) {
    return fail(list_pos, "a list of '%s' is not supported", type_base_name(type));
  }
  if (first_q && type->kind != OPD_TYPE_TENSOR) {
    return fail(list_pos, "only Tensor list elements can be optional");
  }
  type->is_list = true;
  type->elem_optional = first_q;
  if (is_digit(p->s[p->pos])) {
    size_t size_pos = p->pos;
    int32_t size = 0;
    while (is_digit(p->s[p->pos])) {
      if (size <= OPD_SCHEMA_MAX_FIXED_SIZE) size = size * 10 + (p->s[p->pos] - '0');
      p->pos++;
    }
    if (size < 1 || size > OPD_SCHEMA_MAX_FIXED_SIZE) {
      return fail(size_pos, "list size must be 1 to %d", OPD_SCHEMA_MAX_FIXED_SIZE);
    }
    type->fixed_size = size;
  }
  if (p->s[p->pos] != ']') return fail_expected(p, "']'");
  p->pos++;
  if (p->s[p->pos] == '?') {
    p->pos++;
    type->optional = true;
  }
  return 0;
}

/* ---- default values ---- */

typedef enum const_kind { C_INT, C_FLOAT, C_BOOL, C_NONE, C_STR, C_NAMED_INT } const_kind;

/* A lexed constant; C_STR owns `str`. */
typedef struct constant {
  const_kind kind;
  size_t pos;
  char text[48]; /* C_INT, C_FLOAT: the literal, sign included */
  double d;      /* C_FLOAT from inf/nan (text empty) */
  bool b;        /* C_BOOL */
  int64_t i;     /* C_NAMED_INT */
  char *str;     /* C_STR: decoded bytes, NUL-terminated */
  size_t len;    /* C_STR */
} constant;

/* The byte that c10's escape `\\letter` stands for; -1 for an unknown escape. */
static int unescape(char letter) {
  switch (letter) {
  case '\\': return '\\';
  case '\'': return '\'';
  case '"': return '"';
  case 'a': return '\a';
  case 'b': return '\b';
  case 'f': return '\f';
  case 'n': return '\n';
  case 'r': return '\r';
  case 't': return '\t';
  case 'v': return '\v';
  default: return -1;
  }
}

static bool is_octal(char c) {
  return c >= '0' && c <= '7';
}

/* Lexes a quoted string with c10's escapes (\\ \' \" \a \b \f \n \r \t \v, and three
 * octal digits for a byte other than NUL); p->pos is at the opening quote. */
static int lex_string(parser *p, constant *c) {
  const char *s = p->s;
  char quote = s[p->pos];
  size_t start = p->pos++, end = p->pos;
  while (s[end] && s[end] != quote) end += s[end] == '\\' && s[end + 1] ? 2 : 1;
  if (!s[end]) return fail(start, "unterminated string");
  char *buf = opd__malloc(end - p->pos + 1);
  if (!buf) return no_memory();
  size_t n = 0;
  while (p->pos < end) {
    size_t at = p->pos++;
    int u = (unsigned char)s[at];
    if (u == '\\') {
      u = unescape(s[p->pos]);
      if (u >= 0) {
        p->pos++;
      } else if (s[p->pos] <= '3' && is_octal(s[p->pos]) && is_octal(s[p->pos + 1]) &&
                 is_octal(s[p->pos + 2])) {
        u = (s[p->pos] - '0') * 64 + (s[p->pos + 1] - '0') * 8 + (s[p->pos + 2] - '0');
        p->pos += 3;
      }
    }
    if (u <= 0) {
      opd__free(buf);
      return fail(at, "bad escape sequence in string");
    }
    buf[n++] = (char)u;
  }
  p->pos = end + 1;
  buf[n] = '\0';
  c->kind = C_STR;
  c->str = buf;
  c->len = n;
  return 0;
}

/* Lexes a decimal number: '-'? digits ('.' digits*)? ([eE] [+-]? digits)?, or '.' digits. */
static int lex_number(parser *p, constant *c) {
  size_t start = p->pos, i = p->pos;
  bool floaty = false;
  if (p->s[i] == '-') i++;
  size_t digits = 0;
  while (is_digit(p->s[i])) i++, digits++;
  if (p->s[i] == '.') {
    floaty = true;
    i++;
    while (is_digit(p->s[i])) i++, digits++;
  }
  if (digits == 0) return fail(start, "expected a number");
  if (p->s[i] == 'e' || p->s[i] == 'E') {
    size_t j = i + 1;
    if (p->s[j] == '+' || p->s[j] == '-') j++;
    if (is_digit(p->s[j])) {
      floaty = true;
      while (is_digit(p->s[j])) j++;
      i = j;
    }
  }
  if (i - start >= sizeof c->text) return fail(start, "number literal too long");
  memcpy(c->text, p->s + start, i - start);
  c->text[i - start] = '\0';
  c->kind = floaty ? C_FLOAT : C_INT;
  p->pos = i;
  return 0;
}

/* Lexes one constant: a number, True/False/None, inf/-inf/nan, a named int, a string. */
static int lex_constant(parser *p, constant *c) {
  skip_space(p);
  *c = (constant){.pos = p->pos};
  char ch = p->s[p->pos];
  if (ch == '"' || ch == '\'') return lex_string(p, c);
  bool neg = ch == '-';
  if (neg && is_ident_start(p->s[p->pos + 1])) p->pos++;
  size_t n = ident_len(p);
  if (n == 0) {
    if (is_digit(ch) || ch == '-' || (ch == '.' && is_digit(p->s[p->pos + 1]))) {
      return lex_number(p, c);
    }
    return fail_expected(p, "a default value");
  }
  const char *w = p->s + p->pos;
  if (ident_is(w, n, "inf")) {
    c->kind = C_FLOAT;
    c->d = neg ? -INFINITY : INFINITY;
  } else if (neg) {
    return fail(c->pos, "expected a number after '-'");
  } else if (ident_is(w, n, "nan")) {
    c->kind = C_FLOAT;
    c->d = NAN;
  } else if (ident_is(w, n, "True") || ident_is(w, n, "False")) {
    c->kind = C_BOOL;
    c->b = w[0] == 'T';
  } else if (ident_is(w, n, "None")) {
    c->kind = C_NONE;
  } else {
    size_t k = 0, count = sizeof named_ints / sizeof named_ints[0];
    while (k < count && !ident_is(w, n, named_ints[k].name)) k++;
    if (k == count) return fail(c->pos, "unknown constant '%.*s'", n > 40 ? 40 : (int)n, w);
    c->kind = C_NAMED_INT;
    c->i = named_ints[k].value;
  }
  p->pos += n;
  return 0;
}

static int const_to_int(const constant *c, int64_t *out) {
  if (c->kind == C_NAMED_INT) {
    *out = c->i;
    return 0;
  }
  assert(c->kind == C_INT);
  errno = 0;
  char *end;
  long long v = strtoll(c->text, &end, 10);
  assert(*end == '\0');
  if (errno == ERANGE) return fail(c->pos, "integer %s out of range", c->text);
  *out = v;
  return 0;
}

static int const_to_double(const constant *c, double *out) {
  assert(c->kind == C_INT || c->kind == C_FLOAT);
  if (!c->text[0]) {
    *out = c->d;
    return 0;
  }
  errno = 0;
  char *end;
  double v = strtod(c->text, &end);
  assert(*end == '\0');
  if (errno == ERANGE && isinf(v)) return fail(c->pos, "float %s out of range", c->text);
  *out = v;
  return 0;
}

static const char *const_kind_name(const constant *c) {
  switch (c->kind) {
  case C_INT: return "an integer";
  case C_FLOAT: return "a float";
  case C_BOOL: return "a bool";
  case C_NONE: return "None";
  case C_STR: return "a string";
  case C_NAMED_INT: return "a named integer";
  }
  return "?";
}

static bool is_int_kind(opd_type_kind k) {
  return k == OPD_TYPE_INT || k == OPD_TYPE_LAYOUT || k == OPD_TYPE_MEMORY_FORMAT ||
         k == OPD_TYPE_SCALAR_TYPE;
}

/* Converts a lexed constant (not None) to a value of the non-list kind k, as c10 does: a
 * Scalar keeps the literal's kind, a float accepts an integer literal. */
static int const_to_value(const constant *c, opd_type_kind k, bool symint, opd_ivalue *out) {
  bool scalar = k == OPD_TYPE_SCALAR;
  if (c->kind == C_BOOL && (k == OPD_TYPE_BOOL || scalar)) {
    *out = opd_iv_bool(c->b);
    return 0;
  }
  if ((c->kind == C_INT || c->kind == C_NAMED_INT) && (is_int_kind(k) || scalar)) {
    int64_t i = 0;
    int err = const_to_int(c, &i);
    if (!err) *out = k == OPD_TYPE_SCALAR_TYPE ? opd_iv_dtype(i) : opd_iv_int(i);
    return err;
  }
  if ((c->kind == C_INT || c->kind == C_FLOAT) && (k == OPD_TYPE_FLOAT || scalar)) {
    double d = 0;
    int err = const_to_double(c, &d);
    if (!err) *out = opd_iv_double(d);
    return err;
  }
  if (c->kind == C_STR && k == OPD_TYPE_STR) return opd_iv_make_string(out, c->str, c->len);
  return fail(c->pos, "%s is not a valid default for type '%s'", const_kind_name(c),
              symint ? "SymInt" : type_names[k]);
}

/* Parses one constant of the non-list kind k (a default, or an element of a list one). */
static int parse_value(parser *p, opd_type_kind k, bool symint, opd_ivalue *out) {
  constant c;
  int err = lex_constant(p, &c);
  if (err) return err;
  /* A top-level None was handled by parse_default. */
  if (c.kind == C_NONE)
    err = fail(c.pos, "a list element cannot be None");
  else
    err = const_to_value(&c, k, symint, out);
  opd__free(c.str);
  return err;
}

/* Appends the element value v (of an int, float or bool list) to a growing array. */
typedef struct elem_list {
  void *items;
  size_t n, cap, size;
} elem_list;

static int elem_push(elem_list *l, const opd_ivalue *v) {
  if (l->n == l->cap) {
    size_t cap = l->cap ? 2 * l->cap : 8;
    void *items = opd__realloc(l->items, cap * l->size);
    if (!items) return no_memory();
    l->items = items;
    l->cap = cap;
  }
  char *slot = (char *)l->items + l->n++ * l->size;
  if (v->tag == OPD_IV_INT)
    memcpy(slot, &v->u.i, sizeof(int64_t));
  else if (v->tag == OPD_IV_DOUBLE)
    memcpy(slot, &v->u.d, sizeof(double));
  else
    memcpy(slot, &v->u.b, sizeof(bool));
  return 0;
}

/* Parses a list default: `[a, b, ...]`, or for a fixed-size list one element repeated. */
static int parse_list_default(parser *p, const opd_type *t, opd_ivalue *out) {
  opd_type_kind k = (opd_type_kind)t->kind;
  if (k != OPD_TYPE_INT && k != OPD_TYPE_FLOAT && k != OPD_TYPE_BOOL) {
    return fail(p->pos, "a '%s' list can only default to None", type_base_name(t));
  }
  elem_list l = {.size = k == OPD_TYPE_INT     ? sizeof(int64_t)
                         : k == OPD_TYPE_FLOAT ? sizeof(double)
                                               : sizeof(bool)};
  bool bracketed = accept(p, '[');
  if (!bracketed && !t->fixed_size) return fail_expected(p, "'[' to start a list default");
  int err = 0;
  if (!bracketed || !accept(p, ']')) {
    do {
      opd_ivalue v;
      if ((err = parse_value(p, k, t->symint, &v)) || (err = elem_push(&l, &v))) break;
      for (int32_t r = 1; !bracketed && r < t->fixed_size && !err; r++) err = elem_push(&l, &v);
    } while (!err && bracketed && accept(p, ','));
    if (!err && bracketed) err = expect(p, ']', "',' or ']' in list default");
  }
  if (!err) {
    if (k == OPD_TYPE_INT)
      err = opd_iv_make_int_list(out, l.items, l.n);
    else if (k == OPD_TYPE_FLOAT)
      err = opd_iv_make_double_list(out, l.items, l.n);
    else
      err = opd_iv_make_bool_list(out, l.items, l.n);
  }
  opd__free(l.items);
  return err;
}

/* Parses the default value after '=' for an argument of type t. */
static int parse_default(parser *p, const opd_type *t, opd_ivalue *out) {
  skip_space(p);
  size_t start = p->pos, n = ident_len(p);
  if (ident_is(p->s + start, n, "None")) {
    if (!t->optional) return fail(start, "None is not a valid default for a non-optional type");
    p->pos += n;
    *out = opd_iv_none();
    return 0;
  }
  if (t->is_list) return parse_list_default(p, t, out);
  opd_type_kind k = (opd_type_kind)t->kind;
  if (k == OPD_TYPE_TENSOR || k == OPD_TYPE_GENERATOR || k == OPD_TYPE_DEVICE) {
    return fail(start, "type '%s' can only default to None", type_names[k]);
  }
  return parse_value(p, k, t->symint, out);
}

/* ---- arguments and the schema ---- */

static void argument_destroy(opd_argument *a) {
  opd__free(a->name);
  opd_iv_destroy(&a->default_value);
}

/* Appends a zeroed argument to args (growing it) and returns it, or NULL. */
static opd_argument *push_argument(opd_argument **args, uint32_t *n, uint32_t *cap) {
  if (*n == *cap) {
    uint32_t new_cap = *cap ? 2 * *cap : 4;
    opd_argument *grown = opd__realloc(*args, new_cap * sizeof **args);
    if (!grown) return NULL;
    *args = grown;
    *cap = new_cap;
  }
  opd_argument *a = &(*args)[(*n)++];
  *a = (opd_argument){.default_value = opd_iv_none()};
  return a;
}

static int check_unique(const opd_argument *args, uint32_t n, size_t pos) {
  const opd_argument *last = &args[n - 1];
  for (uint32_t i = 0; i + 1 < n; i++) {
    if (last->name[0] && strcmp(args[i].name, last->name) == 0) {
      return fail(pos, "duplicate name '%.40s'", last->name);
    }
  }
  return 0;
}

/* argument := type NAME ['=' default]; return := type [NAME]. */
static int parse_argument(parser *p, bool is_return, bool kwarg_only) {
  opd_schema *s = p->out;
  uint32_t *n = is_return ? &s->num_returns : &s->num_args;
  skip_space(p);
  if (*n == OPD_SCHEMA_MAX_ARGS) {
    return fail(p->pos, "more than %d %s", OPD_SCHEMA_MAX_ARGS,
                is_return ? "returns" : "arguments");
  }
  opd_argument *a = is_return ? push_argument(&s->returns, n, &p->returns_cap)
                              : push_argument(&s->args, n, &p->args_cap);
  if (!a) return no_memory();
  a->kwarg_only = kwarg_only;
  int err = parse_type(p, &a->type, &a->alias);
  if (err) return err;
  skip_space(p);
  size_t name_pos = p->pos;
  if (is_return && !ident_len(p))
    a->name = dup_range("", 0);
  else if ((err = parse_ident(p, "argument name", &a->name)))
    return err;
  if (!a->name) return no_memory();
  if ((err = check_unique(is_return ? s->returns : s->args, *n, name_pos))) return err;
  if (!is_return && accept(p, '=')) {
    a->has_default = true;
    return parse_default(p, &a->type, &a->default_value);
  }
  return 0;
}

/* name := IDENT ['::' IDENT] ['.' IDENT], no white space inside. */
static int parse_name(parser *p) {
  opd_schema *s = p->out;
  skip_space(p);
  if (!p->s[p->pos]) return fail(p->pos, "empty schema");
  int err = parse_ident(p, "operator name", &s->name);
  if (!err && p->s[p->pos] == ':' && p->s[p->pos + 1] == ':') {
    s->ns = s->name;
    s->name = NULL;
    p->pos += 2;
    err = parse_ident(p, "operator name after '::'", &s->name);
  }
  if (!err && p->s[p->pos] == '.') {
    p->pos++;
    err = parse_ident(p, "overload name after '.'", &s->overload);
  }
  if (err) return err;
  if (!s->ns) s->ns = dup_range("", 0);
  if (!s->overload) s->overload = dup_range("", 0);
  return s->ns && s->overload ? 0 : no_memory();
}

static int parse_arguments(parser *p) {
  int err = expect(p, '(', "'(' after operator name");
  if (err || accept(p, ')')) return err;
  bool kwarg_only = false;
  for (;;) {
    skip_space(p);
    if (p->s[p->pos] == '*') {
      if (kwarg_only) return fail(p->pos, "second '*' in argument list");
      kwarg_only = true;
      p->pos++;
      if ((err = expect(p, ',', "',' after '*'"))) return err;
    }
    if ((err = parse_argument(p, false, kwarg_only))) return err;
    if (accept(p, ')')) return 0;
    if (!accept(p, ',')) return fail_expected(p, "')' or ',' after argument");
  }
}

/* returns := '(' [return (',' return)*] ')' | return */
static int parse_returns(parser *p) {
  skip_space(p);
  if (p->s[p->pos] != '-' || p->s[p->pos + 1] != '>') return fail_expected(p, "'->'");
  p->pos += 2;
  if (!accept(p, '(')) return parse_argument(p, true, false);
  if (accept(p, ')')) return 0;
  for (;;) {
    int err = parse_argument(p, true, false);
    if (err) return err;
    if (accept(p, ')')) return 0;
    if (!accept(p, ',')) return fail_expected(p, "')' or ',' after return");
  }
}

void opd_schema_free(opd_schema *s) {
  if (!s) return;
  opd__free(s->ns);
  opd__free(s->name);
  opd__free(s->overload);
  for (uint32_t i = 0; i < s->num_args; i++) argument_destroy(&s->args[i]);
  for (uint32_t i = 0; i < s->num_returns; i++) argument_destroy(&s->returns[i]);
  opd__free(s->args);
  opd__free(s->returns);
  opd__free(s);
}

int opd_schema_parse(const char *text, opd_schema **out) {
  if (!out) return opd_error(OPD_EINVAL, "schema: no output pointer");
  *out = NULL;
  if (!text) return opd_error(OPD_EINVAL, "schema: no text");
  size_t len = 0;
  while (len <= OPD_SCHEMA_MAX_LEN && text[len]) len++;
  if (len > OPD_SCHEMA_MAX_LEN) {
    return fail(OPD_SCHEMA_MAX_LEN, "schema longer than %d bytes", OPD_SCHEMA_MAX_LEN);
  }
  parser p = {.s = text, .out = opd__calloc(1, sizeof(opd_schema))};
  if (!p.out) return no_memory();
  int err = parse_name(&p);
  if (!err) err = parse_arguments(&p);
  if (!err) err = parse_returns(&p);
  if (!err) {
    skip_space(&p);
    if (text[p.pos]) err = fail_expected(&p, "end of schema");
  }
  /* printing can be longer than the text (escapes, 17-digit floats): a schema taken must
   * print within the limit too, or what the daemon prints of it could not be read back */
  if (!err && opd_schema_format(p.out, NULL, 0) > OPD_SCHEMA_MAX_LEN)
    err = fail(0, "schema prints longer than %d bytes", OPD_SCHEMA_MAX_LEN);
  if (err) {
    opd_schema_free(p.out);
    return err;
  }
  *out = p.out;
  return 0;
}

/* ---- printing ---- */

/* An snprintf-style output: writes what fits into buf[0 .. cap), counts everything. */
typedef struct out_buf {
  char *buf;
  size_t cap;
  size_t len;
} out_buf;

static void put(out_buf *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(out_buf *o, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(o->len < o->cap ? o->buf + o->len : NULL, o->len < o->cap ? o->cap - o->len : 0,
                    fmt, ap);
  va_end(ap);
  assert(n >= 0);
  o->len += (size_t)n;
}

/* As c10 prints a double IValue: an integral value below 1e10 as "2.", else with 17
 * significant digits. opd adds a '.' where c10's output would read back as an integer
 * (integral values from 1e10 to 1e17), so that a Scalar default keeps its kind. */
static void put_double(out_buf *o, double d) {
  if (isnan(d)) {
    put(o, "nan");
  } else if (isinf(d)) {
    put(o, d < 0 ? "-inf" : "inf");
  } else if ((fpclassify(d) == FP_NORMAL || d == 0) && fabs(d) < 1e10 && (double)(int64_t)d == d) {
    put(o, "%s%lld.", d == 0 && signbit(d) ? "-" : "", (long long)d);
  } else {
    char tmp[32];
    snprintf(tmp, sizeof tmp, "%.17g", d);
    put(o, "%s%s", tmp, strpbrk(tmp, ".e") ? "" : ".");
  }
}

/* The letter of c10's escape for byte c (`n` for a newline), 0 if it has none. */
static char escape_letter(unsigned char c) {
  switch (c) {
  case '\\': return '\\';
  case '\'': return '\'';
  case '"': return '"';
  case '\a': return 'a';
  case '\b': return 'b';
  case '\f': return 'f';
  case '\n': return 'n';
  case '\r': return 'r';
  case '\t': return 't';
  case '\v': return 'v';
  default: return 0;
  }
}

/* As c10's printQuotedString (which unescape() and lex_string() read back). */
static void put_quoted(out_buf *o, const char *s, size_t n) {
  put(o, "\"");
  for (size_t i = 0; i < n; i++) {
    unsigned char c = (unsigned char)s[i];
    if (escape_letter(c))
      put(o, "\\%c", escape_letter(c));
    else if (c >= 0x20 && c < 0x7f)
      put(o, "%c", c);
    else
      put(o, "\\%03o", c);
  }
  put(o, "\"");
}

static void put_default(out_buf *o, const opd_argument *a) {
  const opd_ivalue *v = &a->default_value;
  switch ((opd_iv_tag)v->tag) {
  case OPD_IV_NONE: put(o, "None"); return;
  case OPD_IV_BOOL: put(o, v->u.b ? "True" : "False"); return;
  case OPD_IV_INT: put(o, "%lld", (long long)v->u.i); return;
  case OPD_IV_DTYPE: put(o, "%lld", (long long)v->u.dtype); return;
  case OPD_IV_DOUBLE: put_double(o, v->u.d); return;
  case OPD_IV_STRING: put_quoted(o, v->u.s, v->len); return;
  case OPD_IV_INT_LIST: {
    /* c10 prints `int[2] stride=1` for [1, 1]; opd only where that reads back the same. */
    bool same = v->len > 1 && (int32_t)v->len == a->type.fixed_size;
    for (uint32_t i = 1; same && i < v->len; i++) same = v->u.ints[i] == v->u.ints[0];
    if (same) {
      put(o, "%lld", (long long)v->u.ints[0]);
      return;
    }
    break;
  }
  case OPD_IV_DOUBLE_LIST:
  case OPD_IV_BOOL_LIST: break;
  default: assert(!"default value of an unsupported kind"); return;
  }
  put(o, "[");
  for (uint32_t i = 0; i < v->len; i++) {
    if (i) put(o, ", ");
    if (v->tag == OPD_IV_INT_LIST)
      put(o, "%lld", (long long)v->u.ints[i]);
    else if (v->tag == OPD_IV_DOUBLE_LIST)
      put_double(o, v->u.doubles[i]);
    else
      put(o, v->u.bools[i] ? "True" : "False");
  }
  put(o, "]");
}

/* As c10's operator<<(Argument): Type(alias)?[N]? name=default. */
static void put_argument(out_buf *o, const opd_argument *a) {
  const opd_type *t = &a->type;
  put(o, "%s", type_base_name(t));
  if (a->alias.set[0]) {
    put(o, "(%s%s%s)", a->alias.set, a->alias.is_write ? "!" : "",
        a->alias.to_wildcard ? " -> *" : "");
  }
  if (t->is_list) {
    put(o, "%s[", t->elem_optional ? "?" : "");
    if (t->fixed_size) put(o, "%d", (int)t->fixed_size);
    put(o, "]");
  }
  if (t->optional) put(o, "?");
  if (a->name[0]) put(o, " %s", a->name);
  if (a->has_default) {
    put(o, "=");
    put_default(o, a);
  }
}

static void put_qualified_name(out_buf *o, const opd_schema *s) {
  put(o, "%s%s%s%s%s", s->ns, s->ns[0] ? "::" : "", s->name, s->overload[0] ? "." : "",
      s->overload);
}

static int finish(const out_buf *o) {
  assert(o->len <= INT_MAX);
  return (int)o->len;
}

int opd_schema_qualified_name(const opd_schema *s, char *buf, size_t len) {
  out_buf o = {buf, len, 0};
  put_qualified_name(&o, s);
  return finish(&o);
}

int opd_schema_format(const opd_schema *s, char *buf, size_t len) {
  out_buf o = {buf, len, 0};
  put_qualified_name(&o, s);
  put(&o, "(");
  bool seen_kwarg_only = false;
  for (uint32_t i = 0; i < s->num_args; i++) {
    if (i) put(&o, ", ");
    if (s->args[i].kwarg_only && !seen_kwarg_only) {
      put(&o, "*, ");
      seen_kwarg_only = true;
    }
    put_argument(&o, &s->args[i]);
  }
  put(&o, ") -> ");
  bool paren = s->num_returns != 1;
  if (paren) put(&o, "(");
  for (uint32_t i = 0; i < s->num_returns; i++) {
    if (i) put(&o, ", ");
    put_argument(&o, &s->returns[i]);
  }
  if (paren) put(&o, ")");
  return finish(&o);
}

/* ---- namespace and comparison ---- */

int opd_schema_set_namespace(opd_schema *s, const char *ns) {
  parser p = {.s = ns ? ns : ""};
  size_t n = ident_len(&p);
  if (n == 0 || ns[n])
    return opd_error(OPD_EINVAL, "schema: namespace '%.40s' is not an identifier", p.s);
  if (s->ns[0]) {
    if (strcmp(s->ns, ns) == 0) return 0;
    return opd_error(OPD_ESCHEMA, "schema: %s::%s names namespace '%s', not '%s'", s->ns, s->name,
                     s->ns, ns);
  }
  if (opd_schema_format(s, NULL, 0) + n + 2 > OPD_SCHEMA_MAX_LEN)
    return opd_error(OPD_ESCHEMA, "schema: %.40s::%.40s prints longer than %d bytes", ns, s->name,
                     OPD_SCHEMA_MAX_LEN);
  char *copy = dup_range(ns, n);
  if (!copy) return no_memory();
  opd__free(s->ns);
  s->ns = copy;
  return 0;
}

static bool argument_equal(const opd_argument *a, const opd_argument *b) {
  const opd_type *x = &a->type, *y = &b->type;
  return strcmp(a->name, b->name) == 0 && x->kind == y->kind && x->optional == y->optional &&
         x->is_list == y->is_list && x->elem_optional == y->elem_optional &&
         x->fixed_size == y->fixed_size && strcmp(a->alias.set, b->alias.set) == 0 &&
         a->alias.is_write == b->alias.is_write && a->alias.to_wildcard == b->alias.to_wildcard &&
         a->kwarg_only == b->kwarg_only && a->has_default == b->has_default &&
         opd_iv_equal(&a->default_value, &b->default_value);
}

bool opd_schema_equal(const opd_schema *a, const opd_schema *b) {
  if (strcmp(a->ns, b->ns) || strcmp(a->name, b->name) || strcmp(a->overload, b->overload) ||
      a->num_args != b->num_args || a->num_returns != b->num_returns) {
    return false;
  }
  for (uint32_t i = 0; i < a->num_args; i++)
    if (!argument_equal(&a->args[i], &b->args[i])) return false;
  for (uint32_t i = 0; i < a->num_returns; i++)
    if (!argument_equal(&a->returns[i], &b->returns[i])) return false;
  return true;
}

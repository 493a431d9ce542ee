/* test_schema.c: tests of the ATen schema parser and printer (dispatcher/src/schema.c).
 *
 * Round-trips every schema of the shared conformance fixture and a list of ATen schemas,
 * checks the parsed structure, equality and namespaces, rejects a table of bad schemas,
 * and fuzzes the parser with mutations of valid schemas.
 */
#include <check.h>
#include <jansson.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "opd/error.h"
#include "opd/schema.h"
#include "test_files.h"

#ifndef OPD_SOURCE_DIR
#error "OPD_SOURCE_DIR must be defined as the repository root"
#endif

Suite *opd_test_schema_suite(void);

/* ATen schemas as c10 prints them: each must print back identically. */
static const char *const listed[] = {
    "aten::max.dim(Tensor self, int dim, bool keepdim=False) -> (Tensor values, Tensor indices)",
    "aten::add_.Tensor(Tensor(a!) self, Tensor other, *, Scalar alpha=1) -> Tensor(a!)",
    "aten::split.Tensor(Tensor(a -> *) self, SymInt split_size, int dim=0) -> Tensor(a)[]",
    "aten::conv2d(Tensor input, Tensor weight, Tensor? bias=None, int[2] stride=1, int[2] "
    "padding=0, int[2] dilation=1, int groups=1) -> Tensor",
    "aten::index.Tensor(Tensor self, Tensor?[] indices) -> Tensor",
    "aten::_foreach_add.Scalar(Tensor[] self, Scalar scalar) -> Tensor[]",
    "aten::bernoulli(Tensor self, *, Generator? generator=None) -> Tensor",
    "aten::_cudnn_rnn_flatten_weight(Tensor[] weight_arr, int weight_stride0, SymInt input_size, "
    "int mode, SymInt hidden_size, SymInt proj_size, int num_layers, bool batch_first, bool "
    "bidirectional) -> Tensor",
    "aten::to.device(Tensor(a) self, Device device, ScalarType dtype, bool non_blocking=False, "
    "bool copy=False, MemoryFormat? memory_format=None) -> Tensor(a)",
    "aten::_assert_async(Tensor self) -> ()",
    "aten::nll_loss(Tensor self, Tensor target, Tensor? weight=None, int reduction=1, SymInt "
    "ignore_index=-100) -> Tensor",
    "aten::sort.stable(Tensor self, *, bool? stable, int dim=-1, bool descending=False) -> "
    "(Tensor values, Tensor indices)",
    "aten::div.Scalar_mode(Tensor self, Scalar other, *, str? rounding_mode) -> Tensor",
    "op(Tensor a, Tensor b) -> Tensor",
    "op(int n) -> Tensor",
    "op(Tensor[] xs) -> Tensor",
    "op(Tensor a, Tensor? b) -> Tensor",
};
#define NUM_LISTED (sizeof listed / sizeof listed[0])

/* Schemas with every kind of default, in printed form (they round-trip too). */
static const char *const rich[] = {
    "aten::layer_norm(Tensor input, int[] normalized_shape, Tensor? weight=None, Tensor? "
    "bias=None, float eps=1.0000000000000001e-05, bool cudnn_enable=True) -> Tensor",
    "x::f(float a=1., float b=-0., float c=inf, float d=-inf, float e=nan, Scalar s=1.5, Scalar "
    "t=True, Scalar u=-3) -> ()",
    "f(int[2] a=1, int[] b=[1, 1], int[3] c=[1, 2, 3], bool[3] m=[True, True, True], float[] "
    "g=[0.5, 1., 0.002], SymInt[2] k=3, int[1] dim=[]) -> (Tensor a, Tensor b)",
    "f.o(str a=\"a\\\"b\\\\c\\n\\001\\377\", str? c=None, ScalarType d=6, ScalarType? e=None, "
    "Layout l=0, MemoryFormat m=0, int? n=None, int[1]? dim=None) -> Tensor(a) out",
    "f(Tensor(a!)[] self, Tensor(a)? x, Tensor(b! -> *) y, Tensor?[]? z, *, Scalar? min=None, "
    "SymInt? end=None, Device? device=None, bool? pin_memory=None) -> (Tensor(a!), Tensor)",
    "aten::slice.Tensor(Tensor(a) self, int dim=0, SymInt? start=None, SymInt? "
    "end=9223372036854775807, SymInt step=1) -> Tensor(a)",
};
#define NUM_RICH (sizeof rich / sizeof rich[0])

/* Parses text, failing the test with opd's message if it does not parse. */
static opd_schema *parse_ok(const char *text) {
  opd_schema *s = NULL;
  int rc = opd_schema_parse(text, &s);
  ck_assert_msg(rc == 0, "parse failed (%d): %s\n  for: %s", rc, opd_last_error(), text);
  ck_assert_ptr_nonnull(s);
  return s;
}

/* Formats s into a new string, checking that the returned length is exact. */
static char *format_new(const opd_schema *s) {
  int n = opd_schema_format(s, NULL, 0);
  ck_assert_int_ge(n, 0);
  char *buf = malloc((size_t)n + 1);
  ck_assert_ptr_nonnull(buf);
  ck_assert_int_eq(opd_schema_format(s, buf, (size_t)n + 1), n);
  ck_assert_uint_eq(strlen(buf), (size_t)n);
  return buf;
}

static void check_round_trip(const char *text) {
  opd_schema *s = parse_ok(text);
  char *printed = format_new(s);
  ck_assert_str_eq(printed, text);
  opd_schema *again = parse_ok(printed);
  ck_assert(opd_schema_equal(s, again));
  free(printed);
  opd_schema_free(again);
  opd_schema_free(s);
}

START_TEST(test_conformance_round_trip) {
  json_t *root = opd_test_load_shared("conformance/public.json");
  json_t *schemas = json_object_get(root, "schemas");
  ck_assert(json_is_object(schemas));
  ck_assert_uint_ge(json_object_size(schemas), 1);
  const char *key;
  json_t *value;
  size_t count = 0;
  json_object_foreach(schemas, key, value) {
    const char *text = json_string_value(value);
    ck_assert_msg(text != NULL, "schema of %s is not a string", key);
    check_round_trip(text);
    /* The fixture's key is the schema's qualified name. */
    opd_schema *s = parse_ok(text);
    char name[256];
    ck_assert_int_eq(opd_schema_qualified_name(s, name, sizeof name), (int)strlen(key));
    ck_assert_str_eq(name, key);
    opd_schema_free(s);
    count++;
  }
  ck_assert_uint_eq(count, json_object_size(schemas));
  json_decref(root);
}
END_TEST

START_TEST(test_listed_round_trip) {
  for (size_t i = 0; i < NUM_LISTED; i++) check_round_trip(listed[i]);
  for (size_t i = 0; i < NUM_RICH; i++) check_round_trip(rich[i]);
}
END_TEST

START_TEST(test_format_truncates_like_snprintf) {
  opd_schema *s = parse_ok(listed[1]);
  int full = (int)strlen(listed[1]);
  char buf[16];
  memset(buf, 'x', sizeof buf);
  ck_assert_int_eq(opd_schema_format(s, buf, sizeof buf), full);
  ck_assert_uint_eq(strlen(buf), sizeof buf - 1);
  ck_assert(strncmp(buf, listed[1], sizeof buf - 1) == 0);
  ck_assert_int_eq(opd_schema_format(s, buf, 1), full);
  ck_assert_str_eq(buf, "");
  ck_assert_int_eq(opd_schema_format(s, NULL, 0), full);
  opd_schema_free(s);
}
END_TEST

/* Parsing is not bound to c10's spacing or quoting; printing normalises them. */
START_TEST(test_normalised_print) {
  static const char *const pairs[][2] = {
      {"  aten::f ( Tensor a ,  int b = 2 , * , str c = 'mean' )  ->  ( Tensor , Tensor )  ",
       "aten::f(Tensor a, int b=2, *, str c=\"mean\") -> (Tensor, Tensor)"},
      {"f(float x=1, float y=.5, float z=1E5, float w=0.1) -> ()",
       "f(float x=1., float y=0.5, float z=100000., float w=0.10000000000000001) -> ()"},
      {"f(int r=Mean, MemoryFormat m=contiguous_format, ScalarType d=long, Layout l=strided) -> ()",
       "f(int r=1, MemoryFormat m=0, ScalarType d=4, Layout l=0) -> ()"},
      {"f(int[2] x=[7, 7], bool[2] b=False, float[2] f=2) -> ()",
       "f(int[2] x=7, bool[2] b=[False, False], float[2] f=[2., 2.]) -> ()"},
      {"f(float a=1e10, float b=12345678901, float c=1e17, Scalar d=-0) -> ()",
       "f(float a=10000000000., float b=12345678901., float c=1e+17, Scalar d=0) -> ()"},
      {"f(str s=\"\\a\\b\\f\\r\\t\\v\\'\t\") -> ()", "f(str s=\"\\a\\b\\f\\r\\t\\v\\'\\t\") -> ()"},
  };
  for (size_t i = 0; i < sizeof pairs / sizeof pairs[0]; i++) {
    opd_schema *s = parse_ok(pairs[i][0]);
    char *printed = format_new(s);
    ck_assert_str_eq(printed, pairs[i][1]);
    free(printed);
    opd_schema_free(s);
    check_round_trip(pairs[i][1]);
  }
}
END_TEST

static const opd_argument *arg(const opd_schema *s, uint32_t i) {
  ck_assert_uint_lt(i, s->num_args);
  return &s->args[i];
}

static void check_type(const opd_type *t, opd_type_kind kind, bool optional, bool is_list,
                       bool elem_optional, bool symint, int32_t fixed_size) {
  ck_assert_int_eq(t->kind, kind);
  ck_assert_int_eq(t->optional, optional);
  ck_assert_int_eq(t->is_list, is_list);
  ck_assert_int_eq(t->elem_optional, elem_optional);
  ck_assert_int_eq(t->symint, symint);
  ck_assert_int_eq(t->fixed_size, fixed_size);
}

START_TEST(test_structure_add_) {
  opd_schema *s = parse_ok(listed[1]);
  ck_assert_str_eq(s->ns, "aten");
  ck_assert_str_eq(s->name, "add_");
  ck_assert_str_eq(s->overload, "Tensor");
  ck_assert_uint_eq(s->num_args, 3);
  ck_assert_str_eq(arg(s, 0)->name, "self");
  check_type(&arg(s, 0)->type, OPD_TYPE_TENSOR, false, false, false, false, 0);
  ck_assert_str_eq(arg(s, 0)->alias.set, "a");
  ck_assert(arg(s, 0)->alias.is_write);
  ck_assert(!arg(s, 0)->alias.to_wildcard);
  ck_assert(!arg(s, 0)->kwarg_only && !arg(s, 0)->has_default);
  ck_assert_int_eq(arg(s, 0)->default_value.tag, OPD_IV_NONE);
  ck_assert_str_eq(arg(s, 1)->alias.set, "");
  ck_assert(!arg(s, 1)->kwarg_only);
  const opd_argument *alpha = arg(s, 2);
  ck_assert_str_eq(alpha->name, "alpha");
  check_type(&alpha->type, OPD_TYPE_SCALAR, false, false, false, false, 0);
  ck_assert(alpha->kwarg_only && alpha->has_default);
  ck_assert_int_eq(alpha->default_value.tag, OPD_IV_INT);
  ck_assert_int_eq(alpha->default_value.u.i, 1);
  ck_assert_uint_eq(s->num_returns, 1);
  ck_assert_str_eq(s->returns[0].name, "");
  ck_assert_str_eq(s->returns[0].alias.set, "a");
  ck_assert(s->returns[0].alias.is_write);
  opd_schema_free(s);
}
END_TEST

START_TEST(test_structure_returns_and_aliases) {
  opd_schema *s = parse_ok(listed[0]); /* max.dim */
  ck_assert_uint_eq(s->num_returns, 2);
  ck_assert_str_eq(s->returns[0].name, "values");
  ck_assert_str_eq(s->returns[1].name, "indices");
  check_type(&s->returns[1].type, OPD_TYPE_TENSOR, false, false, false, false, 0);
  ck_assert_int_eq(arg(s, 2)->default_value.tag, OPD_IV_BOOL);
  ck_assert(!arg(s, 2)->default_value.u.b);
  opd_schema_free(s);

  s = parse_ok(listed[2]); /* split.Tensor */
  ck_assert_str_eq(arg(s, 0)->alias.set, "a");
  ck_assert(arg(s, 0)->alias.to_wildcard && !arg(s, 0)->alias.is_write);
  check_type(&arg(s, 1)->type, OPD_TYPE_INT, false, false, false, true, 0);
  check_type(&arg(s, 2)->type, OPD_TYPE_INT, false, false, false, false, 0);
  ck_assert_int_eq(arg(s, 2)->default_value.tag, OPD_IV_INT);
  ck_assert_int_eq(arg(s, 2)->default_value.u.i, 0);
  ck_assert_uint_eq(s->num_returns, 1);
  check_type(&s->returns[0].type, OPD_TYPE_TENSOR, false, true, false, false, 0);
  ck_assert_str_eq(s->returns[0].alias.set, "a");
  opd_schema_free(s);

  s = parse_ok(listed[9]); /* _assert_async */
  ck_assert_uint_eq(s->num_returns, 0);
  ck_assert_ptr_null(s->returns);
  opd_schema_free(s);

  s = parse_ok("f(Tensor(a!)[] self, Tensor(b)? x) -> ()");
  check_type(&arg(s, 0)->type, OPD_TYPE_TENSOR, false, true, false, false, 0);
  ck_assert_str_eq(arg(s, 0)->alias.set, "a");
  ck_assert(arg(s, 0)->alias.is_write);
  check_type(&arg(s, 1)->type, OPD_TYPE_TENSOR, true, false, false, false, 0);
  ck_assert_str_eq(arg(s, 1)->alias.set, "b");
  opd_schema_free(s);
}
END_TEST

START_TEST(test_structure_conv2d_broadcast) {
  opd_schema *s = parse_ok(listed[3]);
  ck_assert_uint_eq(s->num_args, 7);
  const opd_argument *bias = arg(s, 2);
  check_type(&bias->type, OPD_TYPE_TENSOR, true, false, false, false, 0);
  ck_assert(bias->has_default);
  ck_assert_int_eq(bias->default_value.tag, OPD_IV_NONE);
  static const int64_t expect[3] = {1, 0, 1}; /* stride, padding, dilation */
  for (uint32_t i = 0; i < 3; i++) {
    const opd_argument *a = arg(s, 3 + i);
    check_type(&a->type, OPD_TYPE_INT, false, true, false, false, 2);
    ck_assert_int_eq(a->default_value.tag, OPD_IV_INT_LIST);
    ck_assert_uint_eq(a->default_value.len, 2);
    ck_assert_int_eq(a->default_value.u.ints[0], expect[i]);
    ck_assert_int_eq(a->default_value.u.ints[1], expect[i]);
  }
  ck_assert_int_eq(arg(s, 6)->default_value.tag, OPD_IV_INT);
  ck_assert_int_eq(arg(s, 6)->default_value.u.i, 1);
  opd_schema_free(s);

  /* An explicit list of the fixed size equals the broadcast form. */
  opd_schema *a = parse_ok("f(int[2] stride=1) -> ()");
  opd_schema *b = parse_ok("f(int[2] stride=[1, 1]) -> ()");
  ck_assert(opd_schema_equal(a, b));
  opd_schema_free(a);
  opd_schema_free(b);
}
END_TEST

START_TEST(test_structure_types) {
  opd_schema *s = parse_ok(listed[4]); /* index.Tensor */
  check_type(&arg(s, 1)->type, OPD_TYPE_TENSOR, false, true, true, false, 0);
  opd_schema_free(s);

  s = parse_ok(listed[5]); /* _foreach_add.Scalar */
  check_type(&arg(s, 0)->type, OPD_TYPE_TENSOR, false, true, false, false, 0);
  check_type(&s->returns[0].type, OPD_TYPE_TENSOR, false, true, false, false, 0);
  opd_schema_free(s);

  s = parse_ok(listed[6]); /* bernoulli */
  check_type(&arg(s, 1)->type, OPD_TYPE_GENERATOR, true, false, false, false, 0);
  ck_assert(arg(s, 1)->kwarg_only && arg(s, 1)->has_default);
  opd_schema_free(s);

  s = parse_ok(listed[8]); /* to.device */
  check_type(&arg(s, 1)->type, OPD_TYPE_DEVICE, false, false, false, false, 0);
  check_type(&arg(s, 2)->type, OPD_TYPE_SCALAR_TYPE, false, false, false, false, 0);
  check_type(&arg(s, 5)->type, OPD_TYPE_MEMORY_FORMAT, true, false, false, false, 0);
  ck_assert(!arg(s, 5)->kwarg_only);
  opd_schema_free(s);

  s = parse_ok(listed[10]); /* nll_loss */
  check_type(&arg(s, 4)->type, OPD_TYPE_INT, false, false, false, true, 0);
  ck_assert_int_eq(arg(s, 4)->default_value.u.i, -100);
  opd_schema_free(s);

  s = parse_ok(listed[11]); /* sort.stable */
  check_type(&arg(s, 1)->type, OPD_TYPE_BOOL, true, false, false, false, 0);
  ck_assert(arg(s, 1)->kwarg_only && !arg(s, 1)->has_default);
  ck_assert_int_eq(arg(s, 2)->default_value.u.i, -1);
  ck_assert(arg(s, 3)->kwarg_only);
  opd_schema_free(s);

  s = parse_ok(listed[12]); /* div.Scalar_mode */
  check_type(&arg(s, 2)->type, OPD_TYPE_STR, true, false, false, false, 0);
  ck_assert(!arg(s, 2)->has_default);
  opd_schema_free(s);

  s = parse_ok("aten::sum.dim_IntList(Tensor self, int[1]? dim, bool keepdim=False, *, "
               "ScalarType? dtype=None) -> Tensor");
  check_type(&arg(s, 1)->type, OPD_TYPE_INT, true, true, false, false, 1);
  check_type(&arg(s, 3)->type, OPD_TYPE_SCALAR_TYPE, true, false, false, false, 0);
  opd_schema_free(s);

  s = parse_ok("op(SymInt[] size, SymInt? n, Layout? layout=None, float[] f, bool[] b) -> Scalar");
  check_type(&arg(s, 0)->type, OPD_TYPE_INT, false, true, false, true, 0);
  check_type(&arg(s, 1)->type, OPD_TYPE_INT, true, false, false, true, 0);
  check_type(&arg(s, 2)->type, OPD_TYPE_LAYOUT, true, false, false, false, 0);
  check_type(&arg(s, 3)->type, OPD_TYPE_FLOAT, false, true, false, false, 0);
  check_type(&arg(s, 4)->type, OPD_TYPE_BOOL, false, true, false, false, 0);
  check_type(&s->returns[0].type, OPD_TYPE_SCALAR, false, false, false, false, 0);
  ck_assert_str_eq(s->ns, "");
  ck_assert_str_eq(s->overload, "");
  opd_schema_free(s);
}
END_TEST

START_TEST(test_default_values) {
  opd_schema *s = parse_ok(
      "f(float a=1, Scalar b=1.5, Scalar c=True, ScalarType d=6, Layout e=0, MemoryFormat g=1, "
      "int h=9223372036854775807, int i=-9223372036854775808, str j='mean', float k=-inf, "
      "float l=nan, float eps=1.0000000000000001e-05, int m=Mean, float[] n=[0.5, 1], "
      "bool[2] o=True, int[1] p=[], str q=\"\") -> ()");
  const opd_ivalue *v = &arg(s, 0)->default_value;
  ck_assert_int_eq(v->tag, OPD_IV_DOUBLE);
  ck_assert_double_eq(v->u.d, 1.0);
  v = &arg(s, 1)->default_value;
  ck_assert_int_eq(v->tag, OPD_IV_DOUBLE);
  ck_assert_double_eq(v->u.d, 1.5);
  v = &arg(s, 2)->default_value;
  ck_assert_int_eq(v->tag, OPD_IV_BOOL);
  ck_assert(v->u.b);
  v = &arg(s, 3)->default_value;
  ck_assert_int_eq(v->tag, OPD_IV_DTYPE);
  ck_assert_int_eq(v->u.dtype, 6);
  ck_assert_int_eq(arg(s, 4)->default_value.tag, OPD_IV_INT);
  ck_assert_int_eq(arg(s, 5)->default_value.tag, OPD_IV_INT);
  ck_assert_int_eq(arg(s, 5)->default_value.u.i, 1);
  ck_assert_int_eq(arg(s, 6)->default_value.u.i, INT64_MAX);
  ck_assert_int_eq(arg(s, 7)->default_value.u.i, INT64_MIN);
  v = &arg(s, 8)->default_value;
  ck_assert_int_eq(v->tag, OPD_IV_STRING);
  ck_assert_uint_eq(v->len, 4);
  ck_assert_str_eq(v->u.s, "mean");
  ck_assert(isinf(arg(s, 9)->default_value.u.d) && arg(s, 9)->default_value.u.d < 0);
  ck_assert(isnan(arg(s, 10)->default_value.u.d));
  ck_assert_double_eq(arg(s, 11)->default_value.u.d, 1e-05);
  ck_assert_int_eq(arg(s, 12)->default_value.u.i, 1);
  v = &arg(s, 13)->default_value;
  ck_assert_int_eq(v->tag, OPD_IV_DOUBLE_LIST);
  ck_assert_uint_eq(v->len, 2);
  ck_assert_double_eq(v->u.doubles[0], 0.5);
  ck_assert_double_eq(v->u.doubles[1], 1.0);
  v = &arg(s, 14)->default_value;
  ck_assert_int_eq(v->tag, OPD_IV_BOOL_LIST);
  ck_assert_uint_eq(v->len, 2);
  ck_assert(v->u.bools[0] && v->u.bools[1]);
  v = &arg(s, 15)->default_value;
  ck_assert_int_eq(v->tag, OPD_IV_INT_LIST);
  ck_assert_uint_eq(v->len, 0);
  v = &arg(s, 16)->default_value;
  ck_assert_int_eq(v->tag, OPD_IV_STRING);
  ck_assert_uint_eq(v->len, 0);
  opd_schema_free(s);

  s = parse_ok("f(str s=\"a\\n\\\"\\101\\377\") -> ()");
  v = &arg(s, 0)->default_value;
  ck_assert_uint_eq(v->len, 5);
  ck_assert_mem_eq(v->u.s, "a\n\"A\377", 5);
  opd_schema_free(s);
}
END_TEST

START_TEST(test_equal) {
  for (size_t i = 0; i < NUM_LISTED; i++) {
    opd_schema *a = parse_ok(listed[i]);
    for (size_t j = 0; j < NUM_LISTED; j++) {
      opd_schema *b = parse_ok(listed[j]);
      ck_assert_int_eq(opd_schema_equal(a, b), i == j);
      opd_schema_free(b);
    }
    opd_schema_free(a);
  }
  static const char *const differ[][2] = {
      {"f(int x=1) -> ()", "f(int x=2) -> ()"},
      {"f(int x=1) -> ()", "f(int x) -> ()"},
      {"f(int x) -> ()", "f(int y) -> ()"},
      {"f(int x) -> ()", "f(int? x) -> ()"},
      {"f(int[] x) -> ()", "f(int[2] x) -> ()"},
      {"f(Tensor x) -> ()", "f(Tensor(a) x) -> ()"},
      {"f(Tensor(a) x) -> ()", "f(Tensor(a!) x) -> ()"},
      {"f(Tensor(a) x) -> ()", "f(Tensor(a -> *) x) -> ()"},
      {"f(Tensor[] x) -> ()", "f(Tensor?[] x) -> ()"},
      {"f(int a, int b) -> ()", "f(int a, *, int b) -> ()"},
      {"f(Scalar x=1) -> ()", "f(Scalar x=1.) -> ()"},
      {"f.a() -> ()", "f.b() -> ()"},
      {"a::f() -> ()", "f() -> ()"},
      {"f() -> Tensor", "f() -> Tensor[]"},
      {"f() -> (Tensor a, Tensor b)", "f() -> (Tensor a, Tensor c)"},
      {"f() -> Tensor", "f() -> (Tensor, Tensor)"},
  };
  for (size_t i = 0; i < sizeof differ / sizeof differ[0]; i++) {
    opd_schema *a = parse_ok(differ[i][0]), *b = parse_ok(differ[i][1]);
    ck_assert_msg(!opd_schema_equal(a, b), "%s == %s", differ[i][0], differ[i][1]);
    ck_assert_msg(!opd_schema_equal(b, a), "%s == %s", differ[i][1], differ[i][0]);
    opd_schema_free(a);
    opd_schema_free(b);
  }
  /* As in c10, SymInt is int for equality; it still prints as written. */
  opd_schema *a = parse_ok("f(SymInt n) -> ()"), *b = parse_ok("f(int n) -> ()");
  ck_assert(opd_schema_equal(a, b));
  char buf[64];
  opd_schema_format(a, buf, sizeof buf);
  ck_assert_str_eq(buf, "f(SymInt n) -> ()");
  opd_schema_free(a);
  opd_schema_free(b);
}
END_TEST

START_TEST(test_namespace) {
  opd_schema *s = parse_ok("op.out(Tensor a) -> Tensor");
  char buf[128];
  ck_assert_int_eq(opd_schema_qualified_name(s, buf, sizeof buf), 6);
  ck_assert_str_eq(buf, "op.out");
  ck_assert_int_eq(opd_schema_set_namespace(s, "my_lib2"), 0);
  ck_assert_str_eq(s->ns, "my_lib2");
  ck_assert_int_eq(opd_schema_qualified_name(s, buf, sizeof buf), 15);
  ck_assert_str_eq(buf, "my_lib2::op.out");
  opd_schema_format(s, buf, sizeof buf);
  ck_assert_str_eq(buf, "my_lib2::op.out(Tensor a) -> Tensor");
  ck_assert_int_eq(opd_schema_set_namespace(s, "my_lib2"), 0);
  ck_assert_int_eq(opd_schema_set_namespace(s, "other"), OPD_ESCHEMA);
  ck_assert_int_eq(opd_last_error_code(), OPD_ESCHEMA);
  ck_assert_str_eq(s->ns, "my_lib2");
  opd_schema *full = parse_ok("my_lib2::op.out(Tensor a) -> Tensor");
  ck_assert(opd_schema_equal(s, full));
  opd_schema_free(full);
  opd_schema_free(s);

  s = parse_ok("op(Tensor a) -> Tensor");
  ck_assert_int_eq(opd_schema_set_namespace(s, "a::b"), OPD_EINVAL);
  ck_assert_int_eq(opd_schema_set_namespace(s, ""), OPD_EINVAL);
  ck_assert_int_eq(opd_schema_set_namespace(s, NULL), OPD_EINVAL);
  ck_assert_int_eq(opd_schema_set_namespace(s, "9lib"), OPD_EINVAL);
  ck_assert_str_eq(s->ns, "");
  ck_assert_int_eq(opd_schema_qualified_name(s, buf, 3), 2);
  ck_assert_str_eq(buf, "op");
  opd_schema_free(s);

  s = parse_ok(listed[0]);
  ck_assert_int_eq(opd_schema_set_namespace(s, "aten"), 0);
  ck_assert_int_eq(opd_schema_set_namespace(s, "prims"), OPD_ESCHEMA);
  ck_assert_int_eq(opd_schema_qualified_name(s, buf, 5), 13);
  ck_assert_str_eq(buf, "aten");
  opd_schema_free(s);
}
END_TEST

START_TEST(test_type_kind_names) {
  static const char *const names[OPD_TYPE_NUM_KINDS] = {
      "Tensor",     "int",    "float",  "bool",         "str",       "Scalar",
      "ScalarType", "Device", "Layout", "MemoryFormat", "Generator",
  };
  for (int k = 0; k < OPD_TYPE_NUM_KINDS; k++) {
    ck_assert_str_eq(opd_type_kind_name((opd_type_kind)k), names[k]);
  }
  ck_assert_str_eq(opd_type_kind_name(OPD_TYPE_NUM_KINDS), "?");
}
END_TEST

/* Expects text to fail with OPD_ESCHEMA and a message "schema: at <pos>: ...". */
static void check_rejected(const char *text, int pos) {
  opd_schema *s = (opd_schema *)&s;
  opd_clear_error();
  int rc = opd_schema_parse(text, &s);
  ck_assert_msg(rc == OPD_ESCHEMA, "accepted (%d): %.200s", rc, text);
  ck_assert_ptr_null(s);
  ck_assert_int_eq(opd_last_error_code(), OPD_ESCHEMA);
  char prefix[48];
  snprintf(prefix, sizeof prefix, "schema: at %d: ", pos);
  ck_assert_msg(strncmp(opd_last_error(), prefix, strlen(prefix)) == 0,
                "message \"%s\" lacks \"%s\" for: %.200s", opd_last_error(), prefix, text);
}

START_TEST(test_bad_schemas) {
  static const struct {
    const char *text;
    int pos;
  } bad[] = {
      {"", 0},                                             /* empty */
      {"   ", 3},                                          /* blank */
      {"aten::f(Foo x) -> ()", 8},                         /* unknown type */
      {"f(Tensor) -> ()", 8},                              /* missing name */
      {"f(Tensor a, Tensor a) -> ()", 19},                 /* duplicate name */
      {"f(Tensor a) -> (Tensor x, Tensor x)", 33},         /* duplicate return name */
      {"f(bool b=3) -> ()", 9},                            /* default of the wrong type */
      {"f(int x=None) -> ()", 8},                          /* None, not optional */
      {"f(int x=1.5) -> ()", 8},                           /* float for an int */
      {"f(Scalar x=\"s\") -> ()", 11},                     /* string for a Scalar */
      {"f(str s=1) -> ()", 8},                             /* int for a str */
      {"f(Tensor a=1) -> ()", 11},                         /* Tensor default not None */
      {"f(Device d=\"cpu\") -> ()", 11},                   /* Device default not None */
      {"f(str s=\"abc) -> ()", 8},                         /* unterminated string */
      {"f(str s='abc\\') -> ()", 8},                       /* unterminated (escaped quote) */
      {"f(str x=\"\\q\") -> ()", 9},                       /* bad escape */
      {"f(str x=\"\\000\") -> ()", 9},                     /* NUL escape */
      {"f(Tensor a) Tensor", 12},                          /* missing -> */
      {"f(Tensor a)", 11},                                 /* missing -> at the end */
      {"f(Tensor a) -> Tensor out garbage", 26},           /* trailing garbage */
      {"f(Tensor a) -> Tensor, Tensor", 21},               /* unparenthesised returns */
      {"f(Tensor a, *, Tensor b, *, Tensor c) -> ()", 25}, /* two '*' */
      {"f(*, *, Tensor a) -> ()", 5},                      /* two '*' in a row */
      {"f(Tensor a, *) -> ()", 13},                        /* '*' without argument */
      {"f(int x=9223372036854775808) -> ()", 8},           /* int overflow */
      {"f(int x=-9223372036854775809) -> ()", 8},          /* int underflow */
      {"f(float x=1e999) -> ()", 10},                      /* float overflow */
      {"(Tensor a) -> ()", 0},                             /* missing operator name */
      {"aten:f(Tensor a) -> ()", 4},                       /* single ':' */
      {"aten::(Tensor a) -> ()", 6},                       /* missing name after :: */
      {"aten::f.(Tensor a) -> ()", 8},                     /* missing overload */
      {"f(Tensor a", 10},                                  /* unterminated argument list */
      {"f(Tensor a b) -> ()", 11},                         /* two names */
      {"f(Tensor a) -> (Tensor x=1)", 24},                 /* default on a return */
      {"f(Tensor a) ->", 14},                              /* missing return */
      {"f(int[0] a) -> ()", 6},                            /* zero list size */
      {"f(int[65] a) -> ()", 6},                           /* list size too large */
      {"f(int[99999999999999999999] a) -> ()", 6},         /* list size overflow */
      {"f(int[2 a) -> ()", 7},                             /* unclosed list */
      {"f(str[] a) -> ()", 5},                             /* unsupported list */
      {"f(int?[] a) -> ()", 6},                            /* optional non-Tensor element */
      {"f(Tensor?? x) -> ()", 9},                          /* double optional */
      {"f(Tensor(abcdefgh) a) -> ()", 9},                  /* alias set name too long */
      {"f(Tensor(a -> b) a) -> ()", 14},                   /* alias to a named set */
      {"f(Tensor(a a) -> ()", 11},                         /* unclosed alias */
      {"f(Tensor() a) -> ()", 9},                          /* empty alias */
      {"f(int[] x=1) -> ()", 10},                          /* scalar default for int[] */
      {"f(int[] x=[1,]) -> ()", 13},                       /* trailing comma */
      {"f(int[] x=[1 2]) -> ()", 13},                      /* missing comma */
      {"f(int[] x=[None]) -> ()", 11},                     /* None element */
      {"f(Tensor[] x=[]) -> ()", 13},                      /* Tensor list default */
      {"f(int x=foo) -> ()", 8},                           /* unknown constant */
      {"f(int x=-) -> ()", 8},                             /* lone minus */
      {"f(int x=-nan) -> ()", 8},                          /* minus nan */
      {"f(int x=) -> ()", 8},                              /* missing default */
      {"f(int x=0x10) -> ()", 9},                          /* hex */
      {"f(float x=inf) -> () junk", 21},                   /* trailing after returns */
      {"f(Tensor a\x01) -> ()", 10},                       /* control byte */
      {"f(Tensor a\xff) -> ()", 10},                       /* high byte */
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) check_rejected(bad[i].text, bad[i].pos);

  /* The example message, in full. */
  check_rejected("aten::f(Tensor a b=1) -> ()", 17);
  ck_assert_str_eq(opd_last_error(), "schema: at 17: expected ')' or ',' after argument, got 'b'");
  check_rejected("f(bool b=3) -> ()", 9);
  ck_assert_str_eq(opd_last_error(),
                   "schema: at 9: an integer is not a valid default for type 'bool'");
}
END_TEST

/* Writes "f(int a0, int a1, ...) -> ()" with n arguments into buf. */
static void many_args(char *buf, size_t len, int n) {
  size_t at = (size_t)snprintf(buf, len, "f(");
  for (int i = 0; i < n; i++)
    at += (size_t)snprintf(buf + at, len - at, "%sint a%d", i ? ", " : "", i);
  snprintf(buf + at, len - at, ") -> ()");
}

START_TEST(test_limits) {
  char buf[8192];
  many_args(buf, sizeof buf, OPD_SCHEMA_MAX_ARGS);
  opd_schema *s = parse_ok(buf);
  ck_assert_uint_eq(s->num_args, OPD_SCHEMA_MAX_ARGS);
  opd_schema_free(s);
  many_args(buf, sizeof buf, OPD_SCHEMA_MAX_ARGS + 1);
  check_rejected(buf, (int)(strstr(buf, "int a64") - buf));

  char returns[1024] = "f() -> (";
  for (int i = 0; i <= OPD_SCHEMA_MAX_ARGS; i++) strcat(returns, i ? ", int" : "int");
  strcat(returns, ")");
  check_rejected(returns, (int)strlen(returns) - 4);

  /* Exactly OPD_SCHEMA_MAX_LEN bytes parse; one more does not. */
  static const char head[] = "f(Tensor a) -> Tensor ";
  memset(buf, ' ', sizeof buf);
  memcpy(buf, head, sizeof head - 1);
  buf[OPD_SCHEMA_MAX_LEN] = '\0';
  s = parse_ok(buf);
  opd_schema_free(s);
  buf[OPD_SCHEMA_MAX_LEN] = ' ';
  buf[OPD_SCHEMA_MAX_LEN + 1] = '\0';
  check_rejected(buf, OPD_SCHEMA_MAX_LEN);
  buf[OPD_SCHEMA_MAX_LEN + 1] = ' ';
  buf[sizeof buf - 1] = '\0';
  check_rejected(buf, OPD_SCHEMA_MAX_LEN);

  /* ... and must print within the limit: a byte that is not printable ASCII prints as an
   * octal escape, four bytes (found by tests/fuzz/fuzz_schema: the admin's list printed such
   * a schema cut short, and the text it printed did not parse) */
  static const char head_str[] = "f(str s=\"", tail_str[] = "\") -> ()";
  size_t n_str = 1100;
  memcpy(buf, head_str, sizeof head_str - 1);
  memset(buf + sizeof head_str - 1, 0xe9, n_str);
  memcpy(buf + sizeof head_str - 1 + n_str, tail_str, sizeof tail_str);
  check_rejected(buf, 0);
  ck_assert_ptr_nonnull(strstr(opd_last_error(), "prints longer than 4096 bytes"));
  n_str = (OPD_SCHEMA_MAX_LEN - (sizeof head_str - 1) - (sizeof tail_str - 1)) / 4;
  memcpy(buf + sizeof head_str - 1 + n_str, tail_str, sizeof tail_str);
  s = parse_ok(buf);
  ck_assert_int_le(opd_schema_format(s, NULL, 0), OPD_SCHEMA_MAX_LEN);
  /* a namespace given later counts too */
  ck_assert_int_eq(opd_schema_set_namespace(s, "a_namespace"), OPD_ESCHEMA);
  ck_assert_str_eq(s->ns, "");
  opd_schema_free(s);

  ck_assert_int_eq(opd_schema_parse(NULL, &s), OPD_EINVAL);
  ck_assert_ptr_null(s);
  ck_assert_int_eq(opd_schema_parse("f() -> ()", NULL), OPD_EINVAL);
}
END_TEST

static uint64_t rng_state;
static uint32_t rng(void) {
  rng_state ^= rng_state << 13;
  rng_state ^= rng_state >> 7;
  rng_state ^= rng_state << 17;
  return (uint32_t)(rng_state >> 32);
}

/* Mutates the NUL-terminated text in buf (capacity cap) in place. */
static void mutate(char *buf, size_t cap) {
  static const char punctuation[] = "()[]?,*=-> !.:'\"\\eaTNFx_";
  static const char digits[] = "0123456789", letters[] = "abcdefghijklmnopqrstuvwxyzAITSF_";
  size_t n = strlen(buf);
  if (!n) return;
  size_t at = rng() % n, len = 1 + rng() % (n - at);
  switch (rng() % 6) {
  case 0: /* flip a bit */
    buf[at] = (char)(buf[at] ^ (1u << (rng() % 8)));
    if (!buf[at]) buf[at] = '\x80';
    break;
  case 1: /* replace a byte with schema punctuation */
    buf[at] = punctuation[rng() % (sizeof punctuation - 1)];
    break;
  case 2: /* replace a digit or a letter with another one */
    if (strchr(digits, buf[at]))
      buf[at] = digits[rng() % (sizeof digits - 1)];
    else if (strchr(letters, buf[at]))
      buf[at] = letters[rng() % (sizeof letters - 1)];
    break;
  case 3: /* truncate */ buf[at] = '\0'; break;
  case 4: /* delete a range */ memmove(buf + at, buf + at + len, n - at - len + 1); break;
  default: /* duplicate a range */
    if (n + len < cap) memmove(buf + at + len, buf + at, n - at + 1);
    break;
  }
}

START_TEST(test_fuzz) {
  rng_state = 0x9e3779b97f4a7c15u;
  const char *seeds[NUM_LISTED + NUM_RICH];
  for (size_t i = 0; i < NUM_LISTED; i++) seeds[i] = listed[i];
  for (size_t i = 0; i < NUM_RICH; i++) seeds[NUM_LISTED + i] = rich[i];
  unsigned parsed = 0, rejected = 0;
  for (int iter = 0; iter < 10000; iter++) {
    char buf[1024];
    snprintf(buf, sizeof buf, "%s", seeds[rng() % (sizeof seeds / sizeof seeds[0])]);
    for (uint32_t k = rng() % 4 ? 1 : 2 + rng() % 3; k--;) mutate(buf, sizeof buf);
    opd_schema *s = NULL;
    int rc = opd_schema_parse(buf, &s);
    if (rc) {
      ck_assert_msg(rc == OPD_ESCHEMA, "rc %d for: %s", rc, buf);
      ck_assert_ptr_null(s);
      ck_assert(strncmp(opd_last_error(), "schema: at ", 11) == 0);
      rejected++;
      continue;
    }
    parsed++;
    char *printed = format_new(s);
    opd_schema *again = NULL;
    ck_assert_msg(opd_schema_parse(printed, &again) == 0, "%s\n  printed as %s\n  fails: %s", buf,
                  printed, opd_last_error());
    ck_assert_msg(opd_schema_equal(s, again), "%s\n  printed as %s\n  reads back differently", buf,
                  printed);
    char *reprinted = format_new(again);
    ck_assert_str_eq(reprinted, printed);
    free(reprinted);
    free(printed);
    opd_schema_free(again);
    opd_schema_free(s);
  }
  /* Both outcomes are exercised. */
  ck_assert_uint_gt(parsed, 100);
  ck_assert_uint_gt(rejected, 100);
}
END_TEST

Suite *opd_test_schema_suite(void) {
  Suite *s = suite_create("schema");
  TCase *tc = tcase_create("round_trip");
  tcase_add_test(tc, test_conformance_round_trip);
  tcase_add_test(tc, test_listed_round_trip);
  tcase_add_test(tc, test_format_truncates_like_snprintf);
  tcase_add_test(tc, test_normalised_print);
  suite_add_tcase(s, tc);

  tc = tcase_create("structure");
  tcase_add_test(tc, test_structure_add_);
  tcase_add_test(tc, test_structure_returns_and_aliases);
  tcase_add_test(tc, test_structure_conv2d_broadcast);
  tcase_add_test(tc, test_structure_types);
  tcase_add_test(tc, test_default_values);
  tcase_add_test(tc, test_equal);
  tcase_add_test(tc, test_namespace);
  tcase_add_test(tc, test_type_kind_names);
  suite_add_tcase(s, tc);

  tc = tcase_create("errors");
  tcase_add_test(tc, test_bad_schemas);
  tcase_add_test(tc, test_limits);
  tcase_set_timeout(tc, 30);
  tcase_add_test(tc, test_fuzz);
  suite_add_tcase(s, tc);
  return s;
}

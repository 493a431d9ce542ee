/* test_graph_ir.c: the graph IR (opd/graph.h): building, inference at each node, the
 * printer, the verifier, and every validation error naming its node. */
#include <check.h>
#include <string.h>

#include "ir/graph_internal.h"
#include "opd/memory.h"
#include "test_graph_util.h"

/* exp(x) / sum(exp(x), -1, keepdim): the seed's softmax. */
static opd_graph *softmax_graph(void) {
  opd_graph *g = gnew();
  int x = IN(g, 4, 8);
  int e = NODE(g, "aten::exp", R(x));
  int s = NODE(g, "aten::sum.dim_IntList", R(e), INTS(-1), V(B(true)));
  int d = NODE(g, "aten::div.Tensor", R(e), R(s));
  OUT(g, d);
  return g;
}

START_TEST(test_build_and_print) {
  opd_graph *g = softmax_graph();
  ck_assert_uint_eq(opd_graph_num_inputs(g), 1);
  ck_assert_uint_eq(opd_graph_num_nodes(g), 3);
  char *text = gtext(g);
  ck_assert_str_eq(text, "graph(%0: float32[4, 8]):\n"
                         "  %1: float32[4, 8] = aten::exp(%0)\n"
                         "  %2: float32[4, 1] = aten::sum.dim_IntList(%1, [-1], True, dtype=None)\n"
                         "  %3: float32[4, 8] = aten::div.Tensor(%1, %2)\n"
                         "  return (%3)\n");
  opd__free(text);
  /* users: exp has sum and div */
  ck_assert_uint_eq(opd__gvalue_num_users(g, 1), 2);
  ck_assert_uint_eq(opd__gvalue_num_users(g, 3), 1); /* the output */
  opd_graph_free(g);
}
END_TEST

START_TEST(test_print_views_scalars_and_parameters) {
  opd_graph *g = gnew();
  int x = IN(g, 2, 3);
  int w = PARAM(g, 2);
  int t = NODE(g, "aten::t", R(x));
  int m = NODE(g, "aten::mul.Tensor", R(t), V(D(0.5)));
  int a = NODE(g, "aten::add.Tensor", R(w), R(m), V(I(2)));
  int gl = NODE(g, "aten::gelu", R(a), STR("tanh"));
  OUT(g, gl);
  char *text = gtext(g);
  ck_assert_str_eq(text, "graph(%0: float32[2, 3], %1: float32[2] parameter):\n"
                         "  %2: float32[3, 2]{1, 3} = aten::t(%0)  # view\n"
                         "  %3: float32[3, 2]{1, 3} = aten::mul.Tensor(%2, 0.5)\n"
                         "  %4: float32[3, 2]{1, 3} = aten::add.Tensor(%1, %3, alpha=2)\n"
                         "  %5: float32[3, 2]{1, 3} = aten::gelu(%4, approximate=\"tanh\")\n"
                         "  return (%5)\n");
  opd__free(text);
  /* the transpose shares its input's storage: a view whose root is input 0 */
  ck_assert(g->nodes[0].is_view);
  ck_assert_uint_eq(g->values[2].root, 0);
  ck_assert(!g->nodes[1].is_view);
  ck_assert_uint_eq(g->values[3].root, 3);
  /* the wrapped 0.5 is a 0-d float32 tensor, as PyTorch wraps it next to a float32 tensor */
  ck_assert_int_eq(g->nodes[1].args[1].kind, OPD__GA_WRAPPED);
  ck_assert_int_eq(g->nodes[1].args[1].wrapped_dtype, OPD_FLOAT32);
  opd_graph_free(g);
}
END_TEST

START_TEST(test_multiple_outputs) {
  opd_graph *g = gnew();
  int x = IN(g, 2, 3, 4);
  int w = PARAM(g, 4);
  int ln = NODE(g, "aten::native_layer_norm", R(x), INTS(4), R(w), R(w), V(D(1e-5)));
  ck_assert_int_eq(opd_graph_num_outputs(g, (uint32_t)ln), 3);
  int ub = NODE(g, "aten::unbind.int", RO(ln, 0), V(I(1)));
  ck_assert_int_eq(opd_graph_num_outputs(g, (uint32_t)ub), 3);
  /* the whole list as a Tensor[], and one element of it */
  opd_graph_arg all = {.kind = OPD_GRAPH_ARG_REF, .ref = {(uint32_t)ub, OPD_GRAPH_ALL_OUTPUTS}};
  int c = NODE(g, "aten::cat", all, V(I(0)));
  opd_graph_ref refs[] = {{(uint32_t)c, 0}, {(uint32_t)ub, 2}, {(uint32_t)ln, 2}};
  ck_assert_int_eq(opd_graph_set_outputs(g, refs, 3), 0);
  ck_assert_int_eq(opd_graph_finish(g), 0);
  char *text = gtext(g);
  ck_assert_ptr_nonnull(
      strstr(text, "  %2: float32[2, 3, 4], %3: float32[2, 3, 1], %4: float32[2, "
                   "3, 1] = aten::native_layer_norm(%0, [4], %1, %1, 1.0000000000000001e-05)\n"));
  ck_assert_ptr_nonnull(strstr(text, "%5: float32[2, 4]{12, 1}, %6: float32[2, 4]{12, 1}+4, %7: "
                                     "float32[2, 4]{12, 1}+8 = aten::unbind.int(%2, 1)  # view\n"));
  ck_assert_ptr_nonnull(strstr(text, "%8: float32[6, 4] = aten::cat([%5, %6, %7], 0)\n"));
  ck_assert_ptr_nonnull(strstr(text, "return (%8, %7, %4)"));
  opd__free(text);
  /* the unbind rows are views of the layer norm's output */
  ck_assert_uint_eq(g->values[5].root, 2);
  opd_graph_free(g);
}
END_TEST

/* Each bad node is an error naming the node, its operator and the argument; the graph is
 * unchanged and can still be finished. */
START_TEST(test_validation_errors) {
  opd_graph *g = gnew();
  int x = IN(g, 4, 8);
  int e = NODE(g, "aten::exp", R(x));
  ck_assert_int_eq(TRY(g, "aten::exp", R(2)), OPD_EINVAL); /* itself */
  ck_assert_str_eq(opd_last_error(),
                   "graph node 1 (aten::exp), argument 'self', refers to the node itself");
  ck_assert_int_eq(TRY(g, "aten::exp", R(3)), OPD_EINVAL); /* forward */
  ck_assert_str_eq(opd_last_error(),
                   "graph node 1 (aten::exp), argument 'self', refers to position 3, but only "
                   "positions 0..1 are defined before it (a graph refers only to earlier values)");
  ck_assert_int_eq(TRY(g, "aten::exp", R(4000000000u)), OPD_EINVAL); /* out of range */
  ck_assert_ptr_nonnull(strstr(opd_last_error(), "refers to position 4000000000"));
  ck_assert_int_eq(TRY(g, "aten::exp", RO(e, 1)), OPD_EINVAL); /* no such output */
  ck_assert_str_eq(opd_last_error(),
                   "graph node 1 (aten::exp), argument 'self', refers to output 1 "
                   "of position 1, which has 1 output(s)");
  ck_assert_int_eq(TRY(g, "aten::nope", R(x)), OPD_ENOENT);
  ck_assert_str_eq(opd_last_error(), "graph node 1: unknown operator 'aten::nope'");
  ck_assert_int_eq(TRY(g, "aten::add.Tensor", R(x), R(e), STR("two")), OPD_EINVAL);
  ck_assert_str_eq(opd_last_error(), "graph node 1 (aten::add.Tensor): expected a value of type "
                                     "'Scalar' for argument 'alpha' but found 'str'");
  ck_assert_int_eq(TRY(g, "aten::sum.dim_IntList", R(x), V(D(1.5))), OPD_EINVAL);
  ck_assert_str_eq(opd_last_error(), "graph node 1 (aten::sum.dim_IntList): expected a value of "
                                     "type 'int[1]?' for argument 'dim' but found 'float'");
  ck_assert_int_eq(TRY(g, "aten::sum.dim_IntList", INTS(0), INTS(0)), OPD_EINVAL);
  ck_assert_ptr_nonnull(
      strstr(opd_last_error(), "expected a value of type 'Tensor' for argument 'self'"));
  ck_assert_int_eq(TRY(g, "aten::exp", V(I(1)), V(I(2))), OPD_EINVAL);
  ck_assert_str_eq(opd_last_error(), "graph node 1 (aten::exp) expected at most 1 argument(s) but "
                                     "received 2 argument(s)");
  ck_assert_int_eq(TRY(g, "aten::transpose.int", R(x), V(I(0))), OPD_EINVAL);
  ck_assert_str_eq(opd_last_error(),
                   "graph node 1 (aten::transpose.int) is missing value for argument 'dim1'");
  ck_assert_int_eq(TRY(g, "aten::sum.dim_IntList", R(x), INTS(-1), V(B(true)), V(I(3))),
                   OPD_EINVAL);
  ck_assert_ptr_nonnull(
      strstr(opd_last_error(), "type 'ScalarType?' for argument 'dtype' but found 'int'"));
  ck_assert_int_eq(TRY(g, "aten::copy_", R(x), R(e)), OPD_EINVAL);
  ck_assert_str_eq(opd_last_error(), "graph node 1 (aten::copy_) writes its argument 'self'; graph "
                                     "nodes must be functional (no in-place or out= operators)");
  /* shapes are inferred at the node: [4, 8] and [3] do not broadcast */
  int64_t three = 3;
  ck_assert_int_eq(
      opd_graph_add_input(
          g,
          &(opd_graph_input_spec){OPD_FLOAT32, &three, 1, {OPD_DEVICE_CPU, -1}, OPD_GRAPH_INPUT}),
      OPD_EINVAL);
  ck_assert_str_eq(opd_last_error(), "graph input 1: inputs come before the first node");
  ck_assert_int_eq(TRY(g, "aten::t", R(x), DEF), OPD_EINVAL);
  ck_assert_int_eq(TRY(g, "aten::mul.Tensor", R(x), R(e)), 2);
  ck_assert_int_eq(opd_graph_num_nodes(g), 2);
  OUT(g, 2);
  opd_graph_free(g);
}
END_TEST

START_TEST(test_shape_errors_at_define_time) {
  opd_graph *g = gnew();
  int x = IN(g, 4, 8);
  int y = IN(g, 3);
  ck_assert_int_eq(TRY(g, "aten::add.Tensor", R(x), R(y)), OPD_EINVAL);
  ck_assert_str_eq(opd_last_error(),
                   "graph node 0 (aten::add.Tensor): The size of tensor a (8) "
                   "must match the size of tensor b (3) at non-singleton dimension 1");
  /* an element count that overflows: at the input, and at a node */
  int64_t huge[] = {INT64_C(1) << 32, INT64_C(1) << 32};
  opd_graph *h = gnew();
  ck_assert_int_eq(
      opd_graph_add_input(
          h, &(opd_graph_input_spec){OPD_FLOAT32, huge, 2, {OPD_DEVICE_CPU, -1}, OPD_GRAPH_INPUT}),
      OPD_EINVAL);
  ck_assert_str_eq(opd_last_error(), "graph input 0: the shape's element count overflows int64");
  opd_graph_free(h);
  int u = NODE(g, "aten::unsqueeze", R(x), V(I(0)));
  ck_assert_int_eq(TRY(g, "aten::expand", R(u), INTS(INT64_C(1) << 62, 4, 8)), OPD_EINVAL);
  ck_assert_ptr_nonnull(strstr(opd_last_error(), "graph node 1 (aten::expand): "));
  ck_assert_int_eq(TRY(g, "aten::zeros", INTS(INT64_C(1) << 40, INT64_C(1) << 40)), OPD_EINVAL);
  ck_assert_ptr_nonnull(strstr(opd_last_error(), "graph node 1 (aten::zeros): "));
  ck_assert_ptr_nonnull(strstr(opd_last_error(), "overflow"));
  OUT(g, u);
  opd_graph_free(g);
}
END_TEST

START_TEST(test_limits) {
  opd_graph_limits lim;
  opd_graph_limits_default(&lim);
  ck_assert_uint_eq(lim.max_nodes, 4096);
  opd_graph *g = gnew();
  int x = IN(g, 2);
  /* a million nodes against the default limit of 4096 (no assertion inside the loop: each
   * would be a message to Check's parent process) */
  int last = x, added = 0, refused = 0;
  for (int i = 0; i < 1000000; i++) {
    int p = TRY(g, "aten::neg", R(last));
    if (p == OPD_EINVAL) refused++;
    if (p < 0) continue;
    last = p;
    added++;
  }
  ck_assert_int_eq(refused, 1000000 - 4096);
  ck_assert_str_eq(opd_last_error(),
                   "graph node 4096: more than max_nodes (4096) nodes in the graph");
  ck_assert_int_eq(added, 4096);
  OUT(g, last);
  opd_graph_free(g);

  lim = (opd_graph_limits){.max_nodes = 4, .max_inputs = 1, .max_outputs = 1, .max_arg_bytes = 16};
  ck_assert_int_eq(opd_graph_new(&lim, &g), 0);
  x = IN(g, 6);
  ck_assert_int_eq(
      opd_graph_add_input(
          g, &(opd_graph_input_spec){OPD_FLOAT32, NULL, 0, {OPD_DEVICE_CPU, -1}, OPD_GRAPH_INPUT}),
      OPD_EINVAL);
  ck_assert_str_eq(opd_last_error(), "graph input 1: more than max_inputs (1) inputs");
  int v = NODE(g, "aten::view", R(x), INTS(2, 3)); /* 16 bytes */
  ck_assert_int_eq(TRY(g, "aten::view", R(x), INTS(3, 2)), OPD_EINVAL);
  ck_assert_str_eq(opd_last_error(), "graph node 1 (aten::view): its constant arguments take the "
                                     "graph past max_arg_bytes (16 bytes)");
  /* unbind defines 2 values: with the view that is 3 of 4 */
  int ub = NODE(g, "aten::unbind.int", R(v), V(I(0)));
  ck_assert_int_eq(TRY(g, "aten::unbind.int", R(v), V(I(1))), OPD_EINVAL);
  ck_assert_str_eq(opd_last_error(), "graph node 2 (aten::unbind.int) defines 3 values, past "
                                     "max_nodes (4) nodes in the graph");
  opd_graph_ref two[] = {{(uint32_t)ub, 0}, {(uint32_t)ub, 1}};
  ck_assert_int_eq(opd_graph_set_outputs(g, two, 2), OPD_EINVAL);
  ck_assert_str_eq(opd_last_error(), "graph: 2 outputs, more than max_outputs (1)");
  opd_graph_ref bad = {9, 0};
  ck_assert_int_eq(opd_graph_set_outputs(g, &bad, 1), OPD_EINVAL);
  ck_assert_int_eq(opd_graph_finish(g), OPD_EINVAL); /* no outputs yet */
  ck_assert_int_eq(opd_graph_set_outputs(g, two, 1), 0);
  ck_assert_int_eq(opd_graph_finish(g), 0);
  ck_assert_int_eq(TRY(g, "aten::neg", R(x)), OPD_EINVAL); /* finished */
  opd_graph_free(g);
}
END_TEST

/* The verifier finds what a buggy pass would leave behind. */
START_TEST(test_verifier) {
  opd_graph *g = softmax_graph();
  ck_assert_int_eq(opd_graph_verify(g), 0);
  /* a users list that misses a user */
  g->values[1].nusers = 1;
  ck_assert_int_eq(opd_graph_verify(g), OPD_EINTERNAL);
  ck_assert_ptr_nonnull(strstr(opd_last_error(), "does not list it as a user"));
  g->values[1].nusers = 2;
  /* a reference to a later value */
  g->nodes[1].args[0].ref = 3;
  ck_assert_int_eq(opd_graph_verify(g), OPD_EINTERNAL);
  ck_assert_str_eq(opd_last_error(), "graph verifier: graph node 1 (aten::sum.dim_IntList): a "
                                     "reference to a later or removed value");
  g->nodes[1].args[0].ref = 1;
  /* a constant of the wrong type */
  opd_ivalue saved = g->nodes[1].args[2].value;
  g->nodes[1].args[2].value = opd_iv_int(1);
  ck_assert_int_eq(opd_graph_verify(g), OPD_EINTERNAL);
  ck_assert_ptr_nonnull(strstr(opd_last_error(), "for argument 'keepdim' but found 'int'"));
  g->nodes[1].args[2].value = saved;
  /* a value whose recorded shape is not what its node infers */
  opd_tensor *wrong = mk_meta(OPD_FLOAT32, SHAPE(4, 2));
  opd_tensor *kept = g->values[2].meta;
  g->values[2].meta = wrong;
  ck_assert_int_eq(opd_graph_verify(g), OPD_EINTERNAL);
  ck_assert_ptr_nonnull(strstr(opd_last_error(), "not what its Meta kernel infers"));
  g->values[2].meta = kept;
  opd_tensor_release(wrong);
  /* a removed node whose value is still used */
  g->nodes[0].dead = true;
  ck_assert_int_eq(opd_graph_verify(g), OPD_EINTERNAL);
  g->nodes[0].dead = false;
  ck_assert_int_eq(opd_graph_verify(g), 0);
  opd_graph_free(g);
}
END_TEST

START_TEST(test_check_value) {
  opd_schema *s = NULL;
  ck_assert_int_eq(opd_schema_parse("f(Tensor a, int[2] k, float x, Scalar s, str m, ScalarType? "
                                    "d, Device? dev, Tensor[] l, Generator? gen) -> Tensor",
                                    &s),
                   0);
  opd_ivalue one = opd_iv_int(1), dbl = opd_iv_double(1.5), none = opd_iv_none();
  ck_assert_int_eq(opd_graph_check_value(&s->args[0], &dbl), 0); /* a wrapped number */
  ck_assert_int_eq(opd_graph_check_value(&s->args[1], &one), 0); /* int[2] from one int */
  ck_assert_int_eq(opd_graph_check_value(&s->args[2], &one), 0); /* float from an int */
  ck_assert_int_eq(opd_graph_check_value(&s->args[2], &none), OPD_EINVAL);
  ck_assert_int_eq(opd_graph_check_value(&s->args[3], &dbl), 0);
  ck_assert_int_eq(opd_graph_check_value(&s->args[5], &none), 0);
  opd_ivalue bad_dtype = opd_iv_dtype(99), bad_dev = opd_iv_device((opd_device){99, 0});
  ck_assert_int_eq(opd_graph_check_value(&s->args[5], &bad_dtype), OPD_EINVAL);
  ck_assert_str_eq(opd_last_error(), "argument 'd': invalid dtype 99");
  ck_assert_int_eq(opd_graph_check_value(&s->args[6], &bad_dev), OPD_EINVAL);
  char bytes[] = {'a', (char)0xff};
  opd_ivalue not_utf8 = {.tag = OPD_IV_STRING, .len = 2, .u.s = bytes};
  ck_assert_int_eq(opd_graph_check_value(&s->args[4], &not_utf8), OPD_EINVAL);
  ck_assert_int_eq(opd_graph_check_value(&s->args[7], &one), OPD_EINVAL);
  ck_assert_str_eq(opd_last_error(),
                   "expected a value of type 'Tensor[]' for argument 'l' but found 'int'");
  ck_assert_int_eq(opd_graph_check_value(&s->args[8], &one), OPD_EINVAL);
  opd_schema_free(s);
}
END_TEST

Suite *opd_test_graph_ir_suite(void) {
  Suite *s = suite_create("graph_ir");
  TCase *tc = tcase_create("ir");
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, test_build_and_print);
  tcase_add_test(tc, test_print_views_scalars_and_parameters);
  tcase_add_test(tc, test_multiple_outputs);
  tcase_add_test(tc, test_validation_errors);
  tcase_add_test(tc, test_shape_errors_at_define_time);
  tcase_add_test(tc, test_limits);
  tcase_add_test(tc, test_verifier);
  tcase_add_test(tc, test_check_value);
  suite_add_tcase(s, tc);
  return s;
}

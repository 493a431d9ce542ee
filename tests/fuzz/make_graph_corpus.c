/* make_graph_corpus.c: writes the seed corpus of fuzz_graph and fuzz_graph_sessions
 * (DefineGraph messages, the same for both) into DIR/graph/ and DIR/graph_sessions/: graphs that
 * define and run (the softmax written as exp/sum/div, a matmul with a parameter and a relu, a
 * pointwise chain with Python numbers and a literal, a cat of references and a split whose results
 * are named by ValueRef.output, a view chain), one on a shape too large to run (defined through the
 * Meta kernels only), and refused ones (a forward reference, a self reference, an unknown operator,
 * a handle in a node, a string for a Tensor), and those whose outputs a run once made views of the
 * compiled graph's own memory (`contiguous` and `reshape` of a planned buffer, a literal's alias,
 * an unsqueezed wrapped number) or whose bool intermediate was planned as float32.
 *   fuzz_make_graph_corpus DIR
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "opd.pb-c.h"

enum { MAX_NODES = 8, MAX_ARGS = 4 };

typedef struct seed {
  Opd__V1__DefineGraph d;
  Opd__V1__ValueSpec specs[2], *spec_ptrs[2];
  int64_t shapes[2][4];
  Opd__V1__GraphNode nodes[MAX_NODES], *node_ptrs[MAX_NODES];
  Opd__V1__IValue args[MAX_NODES][MAX_ARGS], *arg_ptrs[MAX_NODES][MAX_ARGS];
  Opd__V1__ValueRef refs[MAX_NODES][MAX_ARGS], lists[MAX_NODES][2], *list_ptrs[MAX_NODES][2];
  Opd__V1__ValueRefList ref_lists[MAX_NODES];
  Opd__V1__IntList ints[MAX_NODES];
  Opd__V1__TensorLiteral literal;
  Opd__V1__ValueRef outs[2], *out_ptrs[2];
} seed;

static seed s;

/* Inputs of these shapes (float32), graph id 1. */
static void begin(int ninputs, const int64_t *shape, size_t ndim) {
  memset(&s, 0, sizeof s);
  opd__v1__define_graph__init(&s.d);
  s.d.graph = 1;
  for (int i = 0; i < ninputs; i++) {
    opd__v1__value_spec__init(&s.specs[i]);
    memcpy(s.shapes[i], shape, ndim * sizeof *shape);
    s.specs[i].dtype = OPD__V1__DTYPE__FLOAT32;
    s.specs[i].shape = s.shapes[i];
    s.specs[i].n_shape = ndim;
    s.spec_ptrs[i] = &s.specs[i];
  }
  s.d.inputs = s.spec_ptrs;
  s.d.n_inputs = (size_t)ninputs;
  s.d.nodes = s.node_ptrs;
  s.d.outputs = s.out_ptrs;
}

static void parameter(int i, const int64_t *shape, size_t ndim) {
  memcpy(s.shapes[i], shape, ndim * sizeof *shape);
  s.specs[i].n_shape = ndim;
  s.specs[i].kind = OPD__V1__VALUE_SPEC__KIND__PARAMETER;
}

/* Node j = the next: op with nargs arguments to fill in. */
static Opd__V1__IValue *node(const char *op, size_t nargs) {
  size_t j = s.d.n_nodes++;
  opd__v1__graph_node__init(&s.nodes[j]);
  s.nodes[j].op = (char *)op;
  s.nodes[j].args = s.arg_ptrs[j];
  s.nodes[j].n_args = nargs;
  for (size_t i = 0; i < nargs; i++) {
    opd__v1__ivalue__init(&s.args[j][i]);
    s.arg_ptrs[j][i] = &s.args[j][i];
  }
  s.node_ptrs[j] = &s.nodes[j];
  return s.args[j];
}

static void ref(Opd__V1__IValue *v, uint32_t position, uint32_t output) {
  size_t j = s.d.n_nodes - 1, i = (size_t)(v - s.args[j]);
  opd__v1__value_ref__init(&s.refs[j][i]);
  s.refs[j][i].position = position;
  s.refs[j][i].output = output;
  v->value_case = OPD__V1__IVALUE__VALUE_REF;
  v->ref = &s.refs[j][i];
}

static void refs2(Opd__V1__IValue *v, uint32_t a, uint32_t b) {
  size_t j = s.d.n_nodes - 1;
  uint32_t p[2] = {a, b};
  for (int k = 0; k < 2; k++) {
    opd__v1__value_ref__init(&s.lists[j][k]);
    s.lists[j][k].position = p[k];
    s.list_ptrs[j][k] = &s.lists[j][k];
  }
  opd__v1__value_ref_list__init(&s.ref_lists[j]);
  s.ref_lists[j].refs = s.list_ptrs[j];
  s.ref_lists[j].n_refs = 2;
  v->value_case = OPD__V1__IVALUE__VALUE_REFS;
  v->refs = &s.ref_lists[j];
}

static void ints(Opd__V1__IValue *v, int64_t *vals, size_t n) {
  size_t j = s.d.n_nodes - 1;
  opd__v1__int_list__init(&s.ints[j]);
  s.ints[j].values = vals;
  s.ints[j].n_values = n;
  v->value_case = OPD__V1__IVALUE__VALUE_INTS;
  v->ints = &s.ints[j];
}

static void num(Opd__V1__IValue *v, double d) {
  v->value_case = OPD__V1__IVALUE__VALUE_D;
  v->d = d;
}

static void integer(Opd__V1__IValue *v, int64_t i) {
  v->value_case = OPD__V1__IVALUE__VALUE_I;
  v->i = i;
}

static void output(uint32_t position, uint32_t out) {
  size_t i = s.d.n_outputs++;
  opd__v1__value_ref__init(&s.outs[i]);
  s.outs[i].position = position;
  s.outs[i].output = out;
  s.out_ptrs[i] = &s.outs[i];
}

static const char *dir;

static const char *const drivers[] = {"graph", "graph_sessions"};

static void write_seed(const char *name) {
  size_t n = opd__v1__define_graph__get_packed_size(&s.d);
  uint8_t *buf = malloc(n ? n : 1);
  opd__v1__define_graph__pack(&s.d, buf);
  for (size_t i = 0; i < sizeof drivers / sizeof *drivers; i++) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s/%s", dir, drivers[i], name);
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(buf, 1, n, f) != n || fclose(f) != 0) {
      fprintf(stderr, "make_graph_corpus: %s: %s\n", path, strerror(errno));
      exit(1);
    }
  }
  free(buf);
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: fuzz_make_graph_corpus DIR\n");
    return 2;
  }
  dir = argv[1];
  for (size_t i = 0; i < sizeof drivers / sizeof *drivers; i++) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, drivers[i]);
    if (mkdir(path, 0755) < 0 && errno != EEXIST) {
      fprintf(stderr, "make_graph_corpus: %s: %s\n", path, strerror(errno));
      return 1;
    }
  }
  static int64_t minus1[] = {-1}, two_three[] = {2, 3}, six[] = {6}, three[] = {3};
  Opd__V1__IValue *a;

  /* exp(x) / sum(exp(x), -1, keepdim) */
  begin(1, (int64_t[]){4, 8}, 2);
  a = node("aten::exp", 1), ref(&a[0], 0, 0);
  a = node("aten::sum.dim_IntList", 3), ref(&a[0], 1, 0), ints(&a[1], minus1, 1);
  a[2].value_case = OPD__V1__IVALUE__VALUE_B, a[2].b = true;
  a = node("aten::div.Tensor", 2), ref(&a[0], 1, 0), ref(&a[1], 2, 0);
  output(3, 0);
  write_seed("softmax_exp_sum_div");

  /* relu(x @ w), w a parameter */
  begin(2, (int64_t[]){4, 8}, 2);
  parameter(1, (int64_t[]){8, 3}, 2);
  a = node("aten::mm", 2), ref(&a[0], 0, 0), ref(&a[1], 1, 0);
  a = node("aten::relu", 1), ref(&a[0], 2, 0);
  output(3, 0);
  write_seed("mm_relu_parameter");

  /* tanh-GELU's pointwise chain, Python numbers at Tensor arguments, and a literal */
  begin(1, (int64_t[]){16}, 1);
  a = node("aten::mul.Tensor", 2), ref(&a[0], 0, 0), num(&a[1], 0.5);
  a = node("aten::pow.Tensor_Scalar", 2), ref(&a[0], 0, 0), integer(&a[1], 3);
  a = node("aten::mul.Tensor", 2), ref(&a[0], 2, 0), num(&a[1], 0.044715);
  a = node("aten::add.Tensor", 2), ref(&a[0], 0, 0), ref(&a[1], 3, 0);
  a = node("aten::tanh", 1), ref(&a[0], 4, 0);
  static const float one = 1.0f;
  opd__v1__tensor_literal__init(&s.literal);
  s.literal.dtype = OPD__V1__DTYPE__FLOAT32;
  s.literal.data.data = (uint8_t *)&one;
  s.literal.data.len = sizeof one;
  a = node("aten::add.Tensor", 2), ref(&a[0], 5, 0);
  a[1].value_case = OPD__V1__IVALUE__VALUE_LITERAL, a[1].literal = &s.literal;
  a = node("aten::mul.Tensor", 2), ref(&a[0], 1, 0), ref(&a[1], 6, 0);
  output(7, 0);
  write_seed("gelu_chain_numbers_literal");

  /* contiguous and reshape of a planned product whose Meta layout is the transpose's */
  static int64_t twelve[] = {12};
  for (int k = 0; k < 2; k++) {
    begin(1, (int64_t[]){3, 4}, 2);
    a = node("aten::t", 1), ref(&a[0], 0, 0);
    a = node("aten::add.Tensor", 2), ref(&a[0], 1, 0), ref(&a[1], 1, 0);
    a = node("aten::mul.Tensor", 2), ref(&a[0], 2, 0), ref(&a[1], 2, 0);
    if (k == 0) {
      a = node("aten::contiguous", 1), ref(&a[0], 3, 0);
    } else {
      a = node("aten::reshape", 2), ref(&a[0], 3, 0), ints(&a[1], twelve, 1);
    }
    output(4, 0);
    write_seed(k == 0 ? "planned_contiguous" : "planned_reshape");
  }

  /* a literal's alias and an unsqueezed wrapped number: the graph's constants as outputs */
  static const float five_six[] = {5.0f, 6.0f};
  static int64_t two[] = {2};
  begin(1, (int64_t[]){2}, 1);
  opd__v1__tensor_literal__init(&s.literal);
  s.literal.dtype = OPD__V1__DTYPE__FLOAT32;
  s.literal.shape = two;
  s.literal.n_shape = 1;
  s.literal.data.data = (uint8_t *)five_six;
  s.literal.data.len = sizeof five_six;
  a = node("aten::alias", 1);
  a[0].value_case = OPD__V1__IVALUE__VALUE_LITERAL, a[0].literal = &s.literal;
  a = node("aten::unsqueeze", 2), num(&a[0], 3.0), integer(&a[1], 0);
  output(1, 0);
  output(2, 0);
  write_seed("constants_as_outputs");

  /* add(x, y) > y, summed: a bool intermediate of a fused group */
  begin(2, (int64_t[]){4, 4}, 2);
  a = node("aten::add.Tensor", 2), ref(&a[0], 0, 0), ref(&a[1], 1, 0);
  a = node("aten::gt.Tensor", 2), ref(&a[0], 2, 0), ref(&a[1], 1, 0);
  a = node("aten::sum", 1), ref(&a[0], 3, 0);
  output(4, 0);
  write_seed("bool_intermediate_sum");

  /* cat of two references, split in two, both halves out */
  begin(2, (int64_t[]){2, 3}, 2);
  a = node("aten::cat", 2), refs2(&a[0], 0, 1), integer(&a[1], 0);
  a = node("aten::split.Tensor", 3), ref(&a[0], 2, 0), integer(&a[1], 2), integer(&a[2], 0);
  output(3, 0);
  output(3, 1);
  write_seed("cat_split_outputs");

  /* views: view, t, contiguous, clone */
  begin(1, two_three, 2);
  a = node("aten::view", 2), ref(&a[0], 0, 0), ints(&a[1], six, 1);
  a = node("aten::view", 2), ref(&a[0], 1, 0), ints(&a[1], (int64_t[]){3, 2}, 2);
  a = node("aten::t", 1), ref(&a[0], 2, 0);
  a = node("aten::contiguous", 1), ref(&a[0], 3, 0);
  a = node("aten::clone", 1), ref(&a[0], 4, 0);
  output(5, 0);
  write_seed("views");

  /* too large to run: defined through the Meta kernels */
  begin(1, (int64_t[]){INT64_C(1) << 30, INT64_C(1) << 20}, 2);
  a = node("aten::neg", 1), ref(&a[0], 0, 0);
  a = node("aten::sum", 1), ref(&a[0], 1, 0);
  output(2, 0);
  write_seed("meta_only_large");

  /* refused */
  begin(1, three, 1);
  a = node("aten::neg", 1), ref(&a[0], 2, 0);
  a = node("aten::neg", 1), ref(&a[0], 0, 0);
  output(2, 0);
  write_seed("bad_forward_reference");
  begin(1, three, 1);
  a = node("aten::neg", 1), ref(&a[0], 1, 0);
  output(1, 0);
  write_seed("bad_self_reference");
  begin(1, three, 1);
  a = node("aten::no_such_op", 1), ref(&a[0], 0, 0);
  output(1, 0);
  write_seed("bad_unknown_operator");
  begin(1, three, 1);
  a = node("aten::neg", 1);
  a[0].value_case = OPD__V1__IVALUE__VALUE_TENSOR, a[0].tensor = 1;
  output(1, 0);
  write_seed("bad_handle_in_node");
  begin(1, three, 1);
  a = node("aten::add.Tensor", 2), ref(&a[0], 0, 0);
  a[1].value_case = OPD__V1__IVALUE__VALUE_S, a[1].s = "two";
  output(1, 0);
  write_seed("bad_string_for_tensor");
  return 0;
}

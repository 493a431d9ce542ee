/* test_graph_util.h: building small graphs in the graph suites (test_graph_*.c): inputs,
 * nodes with literal arguments, outputs, and running a compiled graph on CPU tensors. */
#ifndef OPD_TESTS_TEST_GRAPH_UTIL_H
#define OPD_TESTS_TEST_GRAPH_UTIL_H

#include <check.h>
#include <string.h>

#include "opd/graph.h"
#include "opd/kernels.h"
#include "tensor_helpers.h"

static inline opd_graph *gnew(void) {
  ck_assert_int_eq(opd_kernels_register(), 0);
  opd_graph *g = NULL;
  ck_assert_int_eq(opd_graph_new(NULL, &g), 0);
  return g;
}

static inline int gin_kind(opd_graph *g, opd_dtype dt, int nd, const int64_t *shape,
                           opd_graph_input_kind kind) {
  int p = opd_graph_add_input(
      g, &(opd_graph_input_spec){dt, shape, (uint32_t)nd, {OPD_DEVICE_CPU, -1}, kind});
  ck_assert_msg(p >= 0, "input: %s", opd_last_error());
  return p;
}
/* IN(g, 4, 8): a float32 input of shape [4, 8]. */
#define IN(g, ...)    gin_kind(g, OPD_FLOAT32, SHAPE(__VA_ARGS__), OPD_GRAPH_INPUT)
#define PARAM(g, ...) gin_kind(g, OPD_FLOAT32, SHAPE(__VA_ARGS__), OPD_GRAPH_PARAMETER)

/* Arguments: a reference, output o of a reference, a default, constants (borrowed: the
 * builder copies them). */
#define R(p)     opd_graph_arg_ref((uint32_t)(p), 0)
#define RO(p, o) opd_graph_arg_ref((uint32_t)(p), (uint32_t)(o))
#define DEF      opd_graph_arg_default()
#define V(iv)    opd_graph_arg_value(iv) /* V(I(2)), V(D(0.5)), V(B(true)), V(NONE) */
#define INTS(...)                                                               \
  opd_graph_arg_value((opd_ivalue){.tag = OPD_IV_INT_LIST,                      \
                                   .len = sizeof((int64_t[]){__VA_ARGS__}) / 8, \
                                   .u.ints = (int64_t[]){__VA_ARGS__}})
#define STR(text)      \
  opd_graph_arg_value( \
      (opd_ivalue){.tag = OPD_IV_STRING, .len = sizeof(text) - 1, .u.s = (char *)(text)})

#define NARGS(...)       (uint32_t)(sizeof((opd_graph_arg[]){__VA_ARGS__}) / sizeof(opd_graph_arg))
/* NODE(g, "aten::exp", R(x)): adds a node that must succeed; its position. */
#define NODE(g, op, ...) gnode(g, op, (opd_graph_arg[]){__VA_ARGS__}, NARGS(__VA_ARGS__))
/* TRY(g, "aten::exp", R(x)): adds a node and returns what opd_graph_add_node returned. */
#define TRY(g, op, ...) \
  opd_graph_add_node(g, op, (opd_graph_arg[]){__VA_ARGS__}, NARGS(__VA_ARGS__))

static inline int gnode(opd_graph *g, const char *op, const opd_graph_arg *args, uint32_t n) {
  int p = opd_graph_add_node(g, op, args, n);
  ck_assert_msg(p >= 0, "%s: %s", op, opd_last_error());
  return p;
}

/* OUT(g, a, b): sets the outputs to positions a, b (output 0 of each) and finishes. */
#define OUT(g, ...) gout(g, (int[]){__VA_ARGS__}, sizeof((int[]){__VA_ARGS__}) / sizeof(int))
static inline void gout(opd_graph *g, const int *pos, size_t n) {
  opd_graph_ref refs[16];
  for (size_t i = 0; i < n; i++) refs[i] = (opd_graph_ref){(uint32_t)pos[i], 0};
  ck_assert_int_eq(opd_graph_set_outputs(g, refs, (uint32_t)n), 0);
  ck_assert_msg(opd_graph_finish(g) == 0, "finish: %s", opd_last_error());
}

/* The graph's text (freed by the caller with opd__free). */
static inline char *gtext(const opd_graph *g) {
  char *t = NULL;
  ck_assert_int_eq(opd_graph_print(g, &t), 0);
  return t;
}

/* ---- compiling (opd/graph_exec.h) ---- */

#include "opd/graph_exec.h"

static const char *const opd_test_passes[] = {
    "view_canonicalize", "remove_noops", "dce", "softmax_pattern", "cse",
    "pointwise_groups",  "buffer_plan"};

/* Compiles g (taken) with only the named built-in passes enabled (NULL: all), the checks
 * off unless asked, the verifier on. */
static inline opd_compiled_graph *gcompile_with(opd_graph *g, const char *const *only, size_t n,
                                                const opd_graph_options *base) {
  opd_graph_options o;
  if (base)
    o = *base;
  else {
    opd_graph_options_default(&o);
    o.check_numerics = false;
    o.benefit_runs = 0;
  }
  o.verify = true;
  const char *off[8];
  uint32_t noff = 0;
  for (size_t i = 0; only && i < sizeof opd_test_passes / sizeof *opd_test_passes; i++) {
    bool keep = false;
    for (size_t k = 0; k < n; k++) keep = keep || strcmp(only[k], opd_test_passes[i]) == 0;
    if (!keep) off[noff++] = opd_test_passes[i];
  }
  if (only) {
    o.disabled_passes = off;
    o.ndisabled = noff;
  }
  opd_compiled_graph *cg = NULL;
  ck_assert_msg(opd_graph_compile(g, &o, NULL, &cg, NULL) == 0, "compile: %s", opd_last_error());
  return cg;
}
#define GCOMPILE(g, ...)                               \
  gcompile_with(g, (const char *const[]){__VA_ARGS__}, \
                sizeof((const char *const[]){__VA_ARGS__}) / sizeof(const char *), NULL)

/* Runs cg on inputs; its outputs in out (new references). */
static inline void grun(opd_compiled_graph *cg, opd_tensor *const *in, uint32_t nin,
                        opd_tensor **out, uint32_t nout) {
  ck_assert_msg(opd_compiled_graph_run(cg, in, nin, out, nout) == 0, "run: %s", opd_last_error());
}

#endif

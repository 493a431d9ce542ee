/* test_graph_passes.c: each pass of the pipeline on its own ([Note: The pass pipeline] in
 * graph/src/passes/pass_manager.c): what it rewrites, what it must leave alone, its hit counter and
 * the IR after it; disabling passes by name; plugin passes. */
#include <check.h>
#include <string.h>

#include "exec/compiled.h"
#include "opd/graph_pass.h"
#include "opd/memory.h"
#include "test_graph_util.h"

static const opd__pass_entry *pass_of(const opd_compiled_graph *cg, const char *name) {
  for (uint32_t i = 0; i < cg->passes.n; i++)
    if (strcmp(cg->passes.passes[i].name, name) == 0) return &cg->passes.passes[i];
  ck_abort_msg("no pass %s", name);
  return NULL;
}

static uint64_t hits(const opd_compiled_graph *cg, const char *name) {
  return pass_of(cg, name)->hits;
}

/* The IR after a pass, without the plan lines that lower appends. */
static const char *ir_after(const opd_compiled_graph *cg, const char *name) {
  const char *ir = pass_of(cg, name)->ir;
  ck_assert_ptr_nonnull(ir);
  return ir;
}

START_TEST(test_view_canonicalize) {
  opd_graph *g = gnew();
  int x = IN(g, 2, 3, 4);
  int a = NODE(g, "aten::_unsafe_view", R(x), INTS(6, 4));
  int b = NODE(g, "aten::view", R(a), INTS(24)); /* view of a view */
  int c = NODE(g, "aten::_reshape_alias", R(b), INTS(4, 6), INTS(6, 1));
  int t = NODE(g, "aten::t", R(c));                                 /* not a reshape: left alone */
  int r = NODE(g, "aten::_reshape_alias", R(t), INTS(24), INTS(1)); /* not a view of t */
  (void)r;
  int u = NODE(g, "aten::unsqueeze", R(c), V(I(0)));
  int e = NODE(g, "aten::exp", R(u));
  OUT(g, e, t);
  opd_compiled_graph *cg = GCOMPILE(g, "view_canonicalize");
  ck_assert_uint_eq(hits(cg, "view_canonicalize"), 4);
  ck_assert_str_eq(ir_after(cg, "view_canonicalize"),
                   "graph(%0: float32[2, 3, 4]):\n"
                   "  %1: float32[6, 4] = aten::view(%0, [6, 4])  # view\n"
                   "  %2: float32[24] = aten::view(%0, [24])  # view\n"
                   "  %3: float32[4, 6] = aten::view(%0, [4, 6])  # view\n"
                   "  %4: float32[6, 4]{1, 6} = aten::t(%3)  # view\n"
                   "  %5: float32[24] = aten::_reshape_alias(%4, [24], [1])  # view\n"
                   "  %6: float32[1, 4, 6] = aten::view(%0, [1, 4, 6])  # view\n"
                   "  %7: float32[1, 4, 6] = aten::exp(%6)\n"
                   "  return (%7, %4)\n");
  opd_compiled_graph_release(cg);
}
END_TEST

START_TEST(test_remove_noops) {
  opd_graph *g = gnew();
  int x = IN(g, 5, 5);
  int v = NODE(g, "aten::view", R(x), INTS(5, 5));
  int c = NODE(g, "aten::clone", R(v), DEF);
  int t1 = NODE(g, "aten::t", R(c));
  int t2 = NODE(g, "aten::t", R(t1));
  int r = NODE(g, "aten::relu", R(t2));
  int m = NODE(g, "aten::mul.Tensor", R(r), V(I(1)));
  int d = NODE(g, "aten::div.Tensor", R(m), V(D(1.0)));
  int a = NODE(g, "aten::add.Tensor", R(d), V(D(0.0)), V(I(3))); /* x + 3 * 0 */
  int p = NODE(g, "aten::pow.Tensor_Scalar", R(a), V(I(1)));
  int s = NODE(g, "aten::mul.Tensor", R(p), V(D(2.0))); /* not a no-op */
  OUT(g, s);
  opd_compiled_graph *cg = GCOMPILE(g, "remove_noops", "dce");
  ck_assert_uint_eq(hits(cg, "remove_noops"), 7);
  ck_assert_uint_eq(hits(cg, "dce"), 1); /* the first t, unused once t of t is gone */
  ck_assert_str_eq(ir_after(cg, "dce"), "graph(%0: float32[5, 5]):\n"
                                        "  %1: float32[5, 5] = aten::relu(%0)\n"
                                        "  %2: float32[5, 5] = aten::mul.Tensor(%1, 2.)\n"
                                        "  return (%2)\n");
  opd_compiled_graph_release(cg);

  /* x * 1 with another dtype (an int tensor times 1.5 is float), or a broadcast, stays */
  g = gnew();
  int i = gin_kind(g, OPD_INT64, SHAPE(3), OPD_GRAPH_INPUT);
  int y = IN(g, 2, 3);
  int k = NODE(g, "aten::mul.Tensor", R(i), V(D(1.0)));
  int b = NODE(g, "aten::add.Tensor", R(i), R(y), V(I(1)));
  OUT(g, k, b);
  cg = GCOMPILE(g, "remove_noops");
  ck_assert_uint_eq(hits(cg, "remove_noops"), 0);
  opd_compiled_graph_release(cg);
}
END_TEST

/* [Note: No-op removal]: no new aliasing between the graph's inputs and outputs. */
START_TEST(test_noops_keep_output_copies) {
  opd_graph *g = gnew();
  int x = IN(g, 4);
  int c = NODE(g, "aten::clone", R(x), DEF);                   /* return x.clone(): stays a copy */
  int z = NODE(g, "aten::add.Tensor", R(x), V(I(0)), V(I(1))); /* return x + 0: stays */
  int v = NODE(g, "aten::view", R(x), INTS(4)); /* a view of an input, an output: stays */
  int e = NODE(g, "aten::exp", R(x));
  int c2 = NODE(g, "aten::clone", R(e), DEF); /* a copy of another output: stays */
  int c3 = NODE(g, "aten::clone", R(e), DEF); /* a copy only used inside: goes */
  int n = NODE(g, "aten::neg", R(c3));
  OUT(g, c, z, v, e, c2, n);
  opd_compiled_graph *cg = GCOMPILE(g, "remove_noops");
  ck_assert_uint_eq(hits(cg, "remove_noops"), 1);
  const char *ir = ir_after(cg, "remove_noops");
  ck_assert_ptr_nonnull(strstr(ir, "%6: float32[4] = aten::neg(%4)"));
  /* the run returns copies, not the input */
  opd_tensor *in = mk(OPD_FLOAT32, SHAPE(4), VALS(1, 2, 3, 4)), *out[6];
  grun(cg, &in, 1, out, 6);
  ck_assert(!opd_tensor_shares_storage(out[0], in));
  ck_assert(!opd_tensor_shares_storage(out[1], in));
  ck_assert(opd_tensor_shares_storage(out[2], in)); /* a view stays a view */
  ck_assert(!opd_tensor_shares_storage(out[4], out[3]));
  for (int k = 0; k < 4; k++) ck_assert_float_eq(at(out[1], k), k + 1);
  for (int k = 0; k < 6; k++) opd_tensor_release(out[k]);
  opd_tensor_release(in);
  opd_compiled_graph_release(cg);
}
END_TEST

START_TEST(test_dce) {
  opd_graph *g = gnew();
  int x = IN(g, 3, 16);
  int e = NODE(g, "aten::exp", R(x));
  int m = NODE(g, "aten::mul.Tensor", R(e), V(D(3.0)));
  int ln = NODE(g, "aten::native_layer_norm", R(x), INTS(16), V(NONE), V(NONE), V(D(1e-5)));
  int t = NODE(g, "aten::tanh", RO(ln, 0)); /* outputs 1 and 2 of the norm unused: it stays */
  (void)m;
  OUT(g, t);
  opd_compiled_graph *cg = GCOMPILE(g, "dce");
  ck_assert_uint_eq(hits(cg, "dce"), 2);
  ck_assert_uint_eq(opd_graph_num_nodes(cg->g), 2);
  opd_compiled_graph_release(cg);
}
END_TEST

/* exp(x) / sum(exp(x), dims, keepdim, dtype), the variations a careful pass must tell apart. */
typedef struct softmax_case {
  const char *name;
  int dim, keepdim, dtype_arg, exp_escapes, sum_other, safe, want;
} softmax_case;

static opd_compiled_graph *softmax_variant(const softmax_case *c) {
  opd_graph *g = gnew();
  int x = IN(g, 4, 8), z = IN(g, 4, 8);
  int src = x;
  if (c->safe) {
    int m = NODE(g, "aten::amax", R(x), INTS(-1), V(B(true)));
    src = NODE(g, "aten::sub.Tensor", R(x), R(m), V(I(c->safe == 2 ? 2 : 1)));
  }
  int e = NODE(g, "aten::exp", R(src));
  int other = c->sum_other ? NODE(g, "aten::exp", R(z)) : e;
  opd_graph_arg dtype = c->dtype_arg ? V(opd_iv_dtype(OPD_FLOAT32)) : V(NONE);
  int s = NODE(g, "aten::sum.dim_IntList", R(other), INTS(c->dim), V(B(c->keepdim)), dtype);
  if (!c->keepdim) s = NODE(g, "aten::unsqueeze", R(s), V(I(-1)));
  int d = NODE(g, "aten::div.Tensor", R(e), R(s));
  if (c->exp_escapes)
    OUT(g, d, e);
  else
    OUT(g, d);
  return GCOMPILE(g, "softmax_pattern", "dce");
}

START_TEST(test_softmax_pattern) {
  static const softmax_case cases[] = {
      {"seed", -1, 1, 0, 0, 0, 0, 1},
      {"last dim written out", 1, 1, 0, 0, 0, 0, 1},
      {"safe form", -1, 1, 0, 0, 0, 1, 1},
      {"safe form, alpha 2 (plain form only)", -1, 1, 0, 0, 0, 2, 1},
      {"exp escapes", -1, 1, 0, 1, 0, 0, 0},
      {"wrong dim", 0, 1, 0, 0, 0, 0, 0},
      {"no keepdim", -1, 0, 0, 0, 0, 0, 0},
      {"sum of another exp", -1, 1, 0, 0, 1, 0, 0},
      {"a dtype given", -1, 1, 1, 0, 0, 0, 0},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    opd_compiled_graph *cg = softmax_variant(&cases[i]);
    ck_assert_msg(hits(cg, "softmax_pattern") == (uint64_t)cases[i].want, "%s", cases[i].name);
    ck_assert_uint_eq(cg->softmax_patterns, cases[i].want);
    const char *ir = ir_after(cg, "softmax_pattern");
    if (cases[i].want) {
      ck_assert_msg(strstr(ir, "= aten::_softmax(%0, -1, False)  # softmax pattern") ||
                        strstr(ir, "= aten::_softmax(%"),
                    "%s: %s", cases[i].name, ir);
      ck_assert_ptr_null(strstr(ir, "aten::exp"));
      ck_assert_ptr_null(strstr(ir, "aten::div.Tensor"));
      if (cases[i].safe == 1) ck_assert_ptr_null(strstr(ir, "aten::amax")); /* folded in */
    } else {
      ck_assert_msg(!strstr(ir, "_softmax"), "%s: %s", cases[i].name, ir);
    }
    /* values: the replacement agrees with the pattern as written */
    opd_tensor *x = mk(OPD_FLOAT32, SHAPE(4, 8), NULL), *z = mk(OPD_FLOAT32, SHAPE(4, 8), NULL);
    for (int k = 0; k < 32; k++) ((float *)opd_tensor_data(x))[k] = (float)(k % 7) * 0.3f - 1;
    opd_tensor *in[] = {x, z}, *out[2] = {NULL, NULL};
    grun(cg, in, 2, out, cases[i].exp_escapes ? 2 : 1);
    if (cases[i].want)
      for (int r = 0; r < 4; r++) {
        double sum = 0;
        for (int k = 0; k < 8; k++) sum += at(out[0], r * 8 + k);
        ck_assert_double_eq_tol(sum, 1.0, 1e-6);
      }
    for (int k = 0; k < 2; k++)
      if (out[k]) opd_tensor_release(out[k]);
    opd_tensor_release(x);
    opd_tensor_release(z);
    opd_compiled_graph_release(cg);
  }
}
END_TEST

START_TEST(test_softmax_dtypes) {
  /* an int tensor's exp is float32, but softmax of the int tensor is not defined: no match */
  opd_graph *g = gnew();
  int x = gin_kind(g, OPD_INT64, SHAPE(2, 3), OPD_GRAPH_INPUT);
  int e = NODE(g, "aten::exp", R(x));
  int s = NODE(g, "aten::sum.dim_IntList", R(e), INTS(-1), V(B(true)));
  OUT(g, NODE(g, "aten::div.Tensor", R(e), R(s)));
  opd_compiled_graph *cg = GCOMPILE(g, "softmax_pattern");
  ck_assert_uint_eq(hits(cg, "softmax_pattern"), 0);
  opd_compiled_graph_release(cg);
  /* float64 matches */
  g = gnew();
  x = gin_kind(g, OPD_FLOAT64, SHAPE(2, 3), OPD_GRAPH_INPUT);
  e = NODE(g, "aten::exp", R(x));
  s = NODE(g, "aten::sum.dim_IntList", R(e), INTS(1), V(B(true)));
  OUT(g, NODE(g, "aten::div.Tensor", R(e), R(s)));
  cg = GCOMPILE(g, "softmax_pattern");
  ck_assert_uint_eq(hits(cg, "softmax_pattern"), 1);
  opd_compiled_graph_release(cg);
}
END_TEST

START_TEST(test_cse) {
  opd_graph *g = gnew();
  int x = IN(g, 4);
  int a = NODE(g, "aten::exp", R(x));
  int b = NODE(g, "aten::exp", R(x));
  int c = NODE(g, "aten::mul.Tensor", R(a), V(D(2.0)));
  int d = NODE(g, "aten::mul.Tensor", R(b), V(D(2.0))); /* equal once b is a */
  int e = NODE(g, "aten::mul.Tensor", R(b), V(D(3.0))); /* another constant */
  int s = NODE(g, "aten::add.Tensor", R(c), R(d), V(I(1)));
  int o1 = NODE(g, "aten::neg", R(x));
  int o2 = NODE(g, "aten::neg", R(x)); /* both graph outputs: not merged into one tensor */
  OUT(g, s, e, o1, o2);
  opd_compiled_graph *cg = GCOMPILE(g, "cse");
  ck_assert_uint_eq(hits(cg, "cse"), 2);
  ck_assert_str_eq(ir_after(cg, "cse"), "graph(%0: float32[4]):\n"
                                        "  %1: float32[4] = aten::exp(%0)\n"
                                        "  %2: float32[4] = aten::mul.Tensor(%1, 2.)\n"
                                        "  %3: float32[4] = aten::mul.Tensor(%1, 3.)\n"
                                        "  %4: float32[4] = aten::add.Tensor(%2, %2, alpha=1)\n"
                                        "  %5: float32[4] = aten::neg(%0)\n"
                                        "  %6: float32[4] = aten::neg(%0)\n"
                                        "  return (%4, %3, %5, %6)\n");
  opd_compiled_graph_release(cg);
}
END_TEST

START_TEST(test_pointwise_groups) {
  /* rms norm: the square feeds a reduction the rest of the chain needs, so it is a group of
   * its own (the fixture's rule), and add/rsqrt/mul/mul form one group through broadcasts */
  opd_graph *g = gnew();
  int x = IN(g, 3, 5, 12), w = PARAM(g, 12);
  int sq = NODE(g, "aten::mul.Tensor", R(x), R(x));
  int mean = NODE(g, "aten::mean.dim", R(sq), INTS(-1), V(B(true)));
  int add = NODE(g, "aten::add.Tensor", R(mean), V(D(1e-6)));
  int rs = NODE(g, "aten::rsqrt", R(add));
  int m1 = NODE(g, "aten::mul.Tensor", R(x), R(rs));
  int m2 = NODE(g, "aten::mul.Tensor", R(m1), R(w));
  OUT(g, m2);
  opd_compiled_graph *cg = GCOMPILE(g, "pointwise_groups");
  ck_assert_uint_eq(hits(cg, "pointwise_groups"), 4);
  ck_assert_uint_eq(cg->plan->ngroups, 1);
  ck_assert_uint_eq(cg->plan->groups[0].nmembers, 4);
  ck_assert_uint_eq(cg->plan->kernels, 3); /* mul, mean, the group */
  ck_assert_ptr_nonnull(strstr(ir_after(cg, "pointwise_groups"), "aten::rsqrt(%4)  # group 0"));
  opd_compiled_graph_release(cg);
}
END_TEST

START_TEST(test_pointwise_views_and_dtypes) {
  opd_graph *g = gnew();
  int x = IN(g, 4, 6);
  int d = gin_kind(g, OPD_FLOAT64, SHAPE(6), OPD_GRAPH_INPUT);
  int e = NODE(g, "aten::exp", R(x));
  int t = NODE(g, "aten::t", R(e));
  int u = NODE(g, "aten::unsqueeze", R(t), V(I(0)));
  int ex = NODE(g, "aten::expand", R(u), INTS(2, 6, 4));
  int n = NODE(g, "aten::neg", R(ex));
  int f = NODE(g, "aten::mul.Tensor", R(d), V(D(2.0)));
  int f2 = NODE(g, "aten::add.Tensor", R(f), V(D(1.0)));
  OUT(g, n, f2);
  opd_compiled_graph *cg = GCOMPILE(g, "pointwise_groups");
  ck_assert_uint_eq(cg->plan->ngroups, 1); /* exp and neg through t, unsqueeze, expand */
  ck_assert_uint_eq(cg->plan->groups[0].nmembers, 2);
  ck_assert_uint_eq(cg->plan->groups[0].nnodes, 5);
  ck_assert_uint_eq(cg->plan->kernels, 3); /* the group, and the float64 mul and add */
  /* the fused program computes what the nodes do */
  opd_tensor *xi = mk(OPD_FLOAT32, SHAPE(4, 6), NULL), *di = mk(OPD_FLOAT64, SHAPE(6), NULL);
  for (int k = 0; k < 24; k++) ((float *)opd_tensor_data(xi))[k] = (float)k / 10;
  opd_tensor *in[] = {xi, di}, *out[2];
  grun(cg, in, 2, out, 2);
  ck_assert_int_eq(out[0]->ndim, 3);
  for (int b = 0; b < 2; b++)
    for (int i = 0; i < 6; i++)
      for (int j = 0; j < 4; j++)
        ck_assert_float_eq_tol(at(out[0], (b * 6 + i) * 4 + j), -expf((float)(j * 6 + i) / 10),
                               1e-5);
  opd_tensor_release(out[0]);
  opd_tensor_release(out[1]);
  opd_tensor_release(xi);
  opd_tensor_release(di);
  opd_compiled_graph_release(cg);
}
END_TEST

/* The values after a _to_copy to another device are on that device ([Note: The device of a
 * node's outputs] in graph/src/ir/builder.c): relu and mul of a CUDA copy of a CPU input are
 * not fused into a CPU program (which would read CUDA memory on the host), nor is a copy
 * back to the CPU fused into a CUDA one. Only compiled: no device is needed. */
START_TEST(test_pointwise_follows_to_copy_device) {
  opd_graph *g = gnew();
  int x = IN(g, 4);
  opd_ivalue cuda = opd_iv_device((opd_device){OPD_DEVICE_CUDA, 0});
  opd_ivalue cpu = opd_iv_device((opd_device){OPD_DEVICE_CPU, -1});
  int y = NODE(g, "aten::_to_copy", R(x), DEF, DEF, V(cuda));
  int r = NODE(g, "aten::relu", R(y));
  int m = NODE(g, "aten::mul.Tensor", R(r), R(r));
  int back = NODE(g, "aten::_to_copy", R(m), DEF, DEF, V(cpu));
  int n = NODE(g, "aten::neg", R(back));
  OUT(g, n);
  opd_compiled_graph *cg = GCOMPILE(g, "pointwise_groups");
  ck_assert_int_eq(cg->g->values[y].device.type, OPD_DEVICE_CUDA);
  ck_assert_int_eq(cg->g->values[m].device.type, OPD_DEVICE_CUDA);
  ck_assert_int_eq(cg->g->values[back].device.type, OPD_DEVICE_CPU);
  for (uint32_t i = 0; i < cg->plan->ngroups; i++) {
    const opd__group *grp = &cg->plan->groups[i];
    opd_device dev = cg->g->values[grp->prog.stores[0].value].device;
    for (uint32_t k = 0; k < grp->nmembers; k++) {
      const opd__gnode *node = &cg->g->nodes[grp->members[k]];
      ck_assert_int_eq(cg->g->values[node->first_out].device.type, dev.type);
      for (uint32_t a = 0; a < node->nargs; a++)
        if (node->args[a].kind == OPD__GA_REF)
          ck_assert_int_eq(cg->g->values[node->args[a].ref].device.type, dev.type);
    }
  }
  opd_compiled_graph_release(cg);
}
END_TEST

/* A pointwise node whose CPU kernel a plugin replaced does not fuse: its kernel runs. */
static int doubled_neg(const opd_kernel_ctx *ctx, opd_stack *st) {
  (void)ctx;
  opd_ivalue self = opd_stack_pop(st);
  opd_tensor *r = NULL;
  int rc = opd_tensor_empty(opd_tensor_sizes(self.u.t), self.u.t->ndim, OPD_FLOAT32,
                            (opd_device){OPD_DEVICE_CPU, -1}, &r);
  for (int64_t i = 0; rc == 0 && i < r->numel; i++)
    ((float *)opd_tensor_data(r))[i] = -2 * ((float *)opd_tensor_data(self.u.t))[i];
  opd_iv_destroy(&self);
  return rc ? rc : opd_stack_push(st, opd_iv_tensor_steal(r));
}

START_TEST(test_replaced_kernel_not_fused) {
  opd_graph *g = gnew();
  int x = IN(g, 4);
  int e = NODE(g, "aten::exp", R(x));
  int n = NODE(g, "aten::neg", R(e));
  OUT(g, n);
  opd_kernel k = {.boxed = doubled_neg, .name = "doubled_neg"};
  opd_reg_id id = opd_impl("aten::neg", OPD_KEY_CPU, &k, OPD_HERE);
  ck_assert_int_gt(id, 0);
  opd_compiled_graph *cg = GCOMPILE(g, "pointwise_groups");
  ck_assert_uint_eq(cg->plan->ngroups, 0);
  opd_tensor *in = mk(OPD_FLOAT32, SHAPE(4), VALS(0, 0, 0, 0)), *out;
  grun(cg, &in, 1, &out, 1);
  ck_assert_float_eq(at(out, 0), -2); /* the plugin's kernel ran */
  opd_tensor_release(out);
  opd_tensor_release(in);
  opd_compiled_graph_release(cg);
  ck_assert_int_eq(opd_deregister(id), 0);
}
END_TEST

START_TEST(test_buffer_plan) {
  /* three groups in a row, each feeding a reduction: their values live one after the other
   * and share buffers */
  opd_graph *g = gnew();
  int x = IN(g, 64, 64);
  int cur = x;
  for (int i = 0; i < 3; i++) {
    int e = NODE(g, "aten::exp", R(cur));
    int n = NODE(g, "aten::neg", R(e));
    int s = NODE(g, "aten::sum.dim_IntList", R(n), INTS(-1), V(B(true)));
    cur = NODE(g, "aten::sub.Tensor", R(x), R(s), V(I(1)));
  }
  OUT(g, cur);
  opd_compiled_graph *cg = GCOMPILE(g, "pointwise_groups", "buffer_plan");
  const opd__plan *p = cg->plan;
  ck_assert_uint_eq(p->ngroups, 3);
  ck_assert_uint_eq(hits(cg, "buffer_plan"), 3);
  ck_assert_uint_eq(p->nbuffers, 1);
  ck_assert_uint_eq(p->planned_bytes, 64 * 64 * 4);
  ck_assert_uint_eq(p->unplanned_bytes, 3 * 64 * 64 * 4);
  ck_assert_ptr_nonnull(strstr(ir_after(cg, "buffer_plan"), "buffers: 1 (16384 bytes for 49152"));
  opd_tensor *in = mk(OPD_FLOAT32, SHAPE(64, 64), NULL), *out, *out2;
  grun(cg, &in, 1, &out, 1);
  grun(cg, &in, 1, &out2, 1); /* the second run reuses the context and its buffer */
  for (int k = 0; k < 64 * 64; k += 97) ck_assert_float_eq(at(out, k), at(out2, k));
  opd_tensor_release(out);
  opd_tensor_release(out2);
  opd_tensor_release(in);
  opd_compiled_graph_release(cg);
}
END_TEST

START_TEST(test_lower_and_disabled_passes) {
  opd_graph *g = gnew();
  int x = IN(g, 4, 8);
  int v = NODE(g, "aten::view", R(x), INTS(32));
  int e = NODE(g, "aten::exp", R(v));
  int n = NODE(g, "aten::neg", R(e));
  OUT(g, n);
  opd_compiled_graph *cg = GCOMPILE(g, "pointwise_groups");
  ck_assert_uint_eq(hits(cg, "lower"), 2); /* the view, the group */
  ck_assert_uint_eq(cg->plan->kernels, 1);
  ck_assert(!pass_of(cg, "cse")->enabled);
  ck_assert_ptr_null(pass_of(cg, "cse")->ir);
  ck_assert_ptr_nonnull(
      strstr(ir_after(cg, "lower"), "steps: 2, 1 kernels: aten::view(view) group0"));
  opd_compiled_graph_release(cg);
  /* lower cannot be disabled */
  g = gnew();
  x = IN(g, 4);
  OUT(g, NODE(g, "aten::neg", R(x)));
  opd_graph_options o;
  opd_graph_options_default(&o);
  const char *off[] = {"lower"};
  o.disabled_passes = off;
  o.ndisabled = 1;
  ck_assert_int_eq(opd_graph_compile(g, &o, NULL, &cg, NULL), OPD_EINVAL);
  ck_assert_str_eq(opd_last_error(), "graph pass lower cannot be disabled: it makes the plan");
}
END_TEST

/* A plugin pass that folds neg(neg(x)) into x. */
static int fold_double_neg(opd_graph *g, void *data, uint64_t *hits) {
  (*(int *)data)++;
  for (uint32_t n = 0; n < opd_graph_node_slots(g); n++) {
    opd_graph_node_info info;
    ck_assert_int_eq(opd_graph_node_info_get(g, n, &info), 0);
    if (!info.live || strcmp(info.op, "aten::neg") != 0) continue;
    opd_graph_arg a;
    ck_assert_int_eq(opd_graph_node_arg(g, n, 0, &a), 0);
    if (a.kind != OPD_GRAPH_ARG_REF || a.ref.position < opd_graph_num_inputs(g)) continue;
    uint32_t inner = a.ref.position - opd_graph_num_inputs(g);
    opd_graph_node_info in;
    opd_graph_arg b;
    ck_assert_int_eq(opd_graph_node_info_get(g, inner, &in), 0);
    if (!in.live || strcmp(in.op, "aten::neg") != 0) continue;
    ck_assert_int_eq(opd_graph_node_arg(g, inner, 0, &b), 0);
    uint32_t pos = opd_graph_num_inputs(g) + n;
    ck_assert_int_eq(opd_graph_replace_uses(g, (opd_graph_ref){pos, 0}, b.ref), 0);
    ck_assert_int_eq(opd_graph_remove_node(g, n), 0);
    (*hits)++;
  }
  return 0;
}

START_TEST(test_plugin_passes) {
  int calls = 0;
  ck_assert_int_eq(
      opd_graph_pass_register("bad name!", 1, OPD_GRAPH_PASS_PRE, fold_double_neg, &calls),
      OPD_EINVAL);
  ck_assert_int_eq(opd_graph_pass_register("cse", 1, OPD_GRAPH_PASS_PRE, fold_double_neg, &calls),
                   OPD_EINVAL);
  int64_t id =
      opd_graph_pass_register("fold_double_neg", 3, OPD_GRAPH_PASS_POST, fold_double_neg, &calls);
  ck_assert_int_gt(id, 0);
  ck_assert_int_eq(
      opd_graph_pass_register("fold_double_neg", 4, OPD_GRAPH_PASS_PRE, fold_double_neg, &calls),
      OPD_EINVAL);
  opd_graph *g = gnew();
  int x = IN(g, 4);
  int a = NODE(g, "aten::neg", R(x));
  int b = NODE(g, "aten::neg", R(a));
  OUT(g, NODE(g, "aten::exp", R(b)));
  opd_compiled_graph *cg = GCOMPILE(g, "dce");
  ck_assert_int_eq(calls, 1);
  ck_assert_uint_eq(hits(cg, "fold_double_neg"), 1);
  /* after cse, before pointwise_groups */
  uint32_t at_plugin = 0, at_cse = 0, at_groups = 0;
  for (uint32_t i = 0; i < cg->passes.n; i++) {
    if (!strcmp(cg->passes.passes[i].name, "fold_double_neg")) at_plugin = i;
    if (!strcmp(cg->passes.passes[i].name, "cse")) at_cse = i;
    if (!strcmp(cg->passes.passes[i].name, "pointwise_groups")) at_groups = i;
  }
  ck_assert(at_cse < at_plugin && at_plugin < at_groups);
  ck_assert_ptr_nonnull(strstr(cg->key, " fold_double_neg@3"));
  ck_assert_ptr_nonnull(strstr(ir_after(cg, "fold_double_neg"), "aten::exp(%0)"));
  opd_compiled_graph_release(cg);
  ck_assert_int_eq(opd_graph_pass_unregister(id), 0);
  ck_assert_int_eq(opd_graph_pass_unregister(id), OPD_ENOENT);
}
END_TEST

Suite *opd_test_graph_passes_suite(void) {
  Suite *s = suite_create("graph_passes");
  TCase *tc = tcase_create("passes");
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, test_view_canonicalize);
  tcase_add_test(tc, test_remove_noops);
  tcase_add_test(tc, test_noops_keep_output_copies);
  tcase_add_test(tc, test_dce);
  tcase_add_test(tc, test_softmax_pattern);
  tcase_add_test(tc, test_softmax_dtypes);
  tcase_add_test(tc, test_cse);
  tcase_add_test(tc, test_pointwise_groups);
  tcase_add_test(tc, test_pointwise_views_and_dtypes);
  tcase_add_test(tc, test_pointwise_follows_to_copy_device);
  tcase_add_test(tc, test_replaced_kernel_not_fused);
  tcase_add_test(tc, test_buffer_plan);
  tcase_add_test(tc, test_lower_and_disabled_passes);
  tcase_add_test(tc, test_plugin_passes);
  suite_add_tcase(s, tc);
  return s;
}

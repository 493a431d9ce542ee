/* test_graph_programs.h: graphs of pointwise operations for the suites of fused programs
 * (test_graph_exec.c, test_graph_c_tier.c, test_graph_cuda.c): random ones with their inputs,
 * and a chain through every fusable operator. */
#ifndef OPD_TESTS_TEST_GRAPH_PROGRAMS_H
#define OPD_TESTS_TEST_GRAPH_PROGRAMS_H

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "test_graph_util.h"

/* A small deterministic generator. */
static uint64_t rng_state; /* seeded by each test */
static inline uint32_t rnd(uint32_t n) {
  rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
  return (uint32_t)(rng_state >> 33) % n;
}

/* Builds a random graph of pointwise operations (and an occasional reduction or view) on
 * inputs x [4, 6], y [6], z [4, 1], m [4, 6] bool, appending nodes to both graphs. */
static inline void random_graph(opd_graph *g[2], uint32_t *noutputs) {
  int64_t s46[] = {4, 6}, s6[] = {6}, s41[] = {4, 1};
  for (int k = 0; k < 2; k++) {
    gin_kind(g[k], OPD_FLOAT32, 2, s46, OPD_GRAPH_INPUT);
    gin_kind(g[k], OPD_FLOAT32, 1, s6, OPD_GRAPH_INPUT);
    gin_kind(g[k], OPD_FLOAT32, 2, s41, OPD_GRAPH_PARAMETER);
    gin_kind(g[k], OPD_BOOL, 2, s46, OPD_GRAPH_INPUT);
  }
  int vals[64] = {0, 1, 2}, nvals = 3;
  static int64_t minus_one[] = {-1};
  const opd_graph_arg last_dim =
      V(((opd_ivalue){.tag = OPD_IV_INT_LIST, .len = 1, .u.ints = minus_one}));
  static const char *const unary[] = {"aten::exp",     "aten::neg",   "aten::tanh",
                                      "aten::sigmoid", "aten::relu",  "aten::abs",
                                      "aten::sin",     "aten::rsqrt", "aten::clone"};
  static const char *const binary[] = {"aten::add.Tensor", "aten::sub.Tensor", "aten::mul.Tensor",
                                       "aten::div.Tensor", "aten::maximum",    "aten::minimum"};
  for (int step = 0; step < 14; step++) {
    int a = vals[rnd((uint32_t)nvals)], b = vals[rnd((uint32_t)nvals)];
    opd_graph_arg args[4];
    uint32_t nargs = 1;
    const char *op;
    switch (rnd(10)) {
    case 0:
    case 1:
    case 2:
      op = unary[rnd(9)];
      args[0] = R(a);
      if (!strcmp(op, "aten::clone")) args[nargs++] = DEF;
      break;
    case 3:
    case 4:
    case 5:
      op = binary[rnd(6)];
      args[0] = R(a);
      args[1] = rnd(3) ? R(b) : V(D((double)rnd(5) - 1.5));
      nargs = 2;
      if (op[6] == 'a' || op[6] == 's') args[nargs++] = V(I((int64_t)rnd(3) - 1)); /* alpha */
      break;
    case 6:
      op = rnd(2) ? "aten::where.self" : "aten::masked_fill.Scalar";
      if (op[6] == 'w') {
        args[0] = R(3), args[1] = R(a), args[2] = R(b);
        nargs = 3;
      } else {
        args[0] = R(a), args[1] = R(3), args[2] = V(D(-0.25));
        nargs = 3;
      }
      break;
    case 7:
      op = rnd(2) ? "aten::pow.Tensor_Scalar" : "aten::clamp";
      args[0] = R(a);
      if (op[6] == 'p') {
        args[1] = rnd(2) ? V(I(rnd(2) ? 2 : 3)) : V(D(0.5));
        nargs = 2;
      } else {
        args[1] = V(D(-0.5)), args[2] = V(D(0.75));
        nargs = 3;
      }
      break;
    case 8:
      op = rnd(2) ? "aten::t" : "aten::unsqueeze";
      args[0] = R(a);
      if (op[6] == 'u') args[nargs++] = V(I(0));
      break;
    default:
      op = "aten::sum.dim_IntList";
      args[0] = R(a), args[1] = last_dim, args[2] = V(B(true));
      nargs = 3;
      break;
    }
    int p0 = opd_graph_add_node(g[0], op, args, nargs);
    if (p0 < 0) continue; /* shapes that do not fit together */
    ck_assert_int_eq(opd_graph_add_node(g[1], op, args, nargs), p0);
    if (nvals < 64) vals[nvals++] = p0;
  }
  opd_graph_ref outs[2] = {{(uint32_t)vals[nvals - 1], 0}, {(uint32_t)vals[nvals / 2], 0}};
  *noutputs = 2;
  for (int k = 0; k < 2; k++) {
    ck_assert_int_eq(opd_graph_set_outputs(g[k], outs, 2), 0);
    ck_assert_int_eq(opd_graph_finish(g[k]), 0);
  }
}

/* The inputs of random_graph: x [4, 6], y [6], z [4, 1], m [4, 6] bool, and x's values in a
 * transposed buffer too (xt, a view of xt_base), to read in place. */
typedef struct random_inputs {
  opd_tensor *x, *y, *z, *m, *xt_base, *xt;
} random_inputs;

static inline void random_inputs_make(random_inputs *r) {
  r->x = mk(OPD_FLOAT32, SHAPE(4, 6), NULL), r->y = mk(OPD_FLOAT32, SHAPE(6), NULL);
  r->z = mk(OPD_FLOAT32, SHAPE(4, 1), NULL), r->m = mk(OPD_BOOL, SHAPE(4, 6), NULL);
  for (int k = 0; k < 24; k++) {
    ((float *)opd_tensor_data(r->x))[k] = (float)(k % 5) * 0.37f - 0.6f;
    ((bool *)opd_tensor_data(r->m))[k] = k % 3 == 0;
  }
  for (int k = 0; k < 6; k++) ((float *)opd_tensor_data(r->y))[k] = 0.2f * (float)k - 0.3f;
  for (int k = 0; k < 4; k++) ((float *)opd_tensor_data(r->z))[k] = 1.5f - 0.5f * (float)k;
  r->xt_base = mk(OPD_FLOAT32, SHAPE(6, 4), NULL);
  for (int i = 0; i < 4; i++)
    for (int j = 0; j < 6; j++)
      ((float *)opd_tensor_data(r->xt_base))[j * 4 + i] =
          ((float *)opd_tensor_data(r->x))[i * 6 + j];
  r->xt = view(r->xt_base, SHAPE(4, 6), (int64_t[]){1, 4}, 0);
}

static inline void random_inputs_release(random_inputs *r) {
  opd_tensor *all[] = {r->xt, r->xt_base, r->x, r->y, r->z, r->m};
  for (size_t i = 0; i < sizeof all / sizeof *all; i++) opd_tensor_release(all[i]);
}

/* A chain through every fusable operator, on x [4, 8], a broadcast row b [8] and a mask. */
static inline opd_graph *every_operator_graph(void) {
  opd_graph *g = gnew();
  int x = IN(g, 4, 8), b = IN(g, 8);
  int a = NODE(g, "aten::add.Tensor", R(x), R(b), V(D(2.5)));
  a = NODE(g, "aten::sub.Tensor", R(a), R(x));
  a = NODE(g, "aten::mul.Tensor", R(a), V(D(INFINITY)));
  a = NODE(g, "aten::div.Tensor", R(a), R(b));
  a = NODE(g, "aten::add.Scalar", R(a), V(D(-0.0)));
  a = NODE(g, "aten::mul.Scalar", R(a), V(D(NAN)));
  a = NODE(g, "aten::neg", R(a));
  int e = NODE(g, "aten::exp", R(x));
  e = NODE(g, "aten::log", R(e));
  e = NODE(g, "aten::sqrt", R(e));
  e = NODE(g, "aten::rsqrt", R(e));
  e = NODE(g, "aten::abs", R(e));
  e = NODE(g, "aten::relu", R(e));
  e = NODE(g, "aten::sigmoid", R(e));
  e = NODE(g, "aten::tanh", R(e));
  e = NODE(g, "aten::sin", R(e));
  e = NODE(g, "aten::cos", R(e));
  e = NODE(g, "aten::gelu", R(e));
  e = NODE(g, "aten::gelu", R(e), STR("tanh"));
  int p2 = NODE(g, "aten::pow.Tensor_Scalar", R(e), V(I(2)));
  int p3 = NODE(g, "aten::pow.Tensor_Scalar", R(e), V(I(3)));
  int pm2 = NODE(g, "aten::pow.Tensor_Scalar", R(e), V(D(-2.0)));
  int pm1 = NODE(g, "aten::pow.Tensor_Scalar", R(e), V(D(-1.0)));
  int ph = NODE(g, "aten::pow.Tensor_Scalar", R(e), V(D(1.7)));
  int m = NODE(g, "aten::maximum", R(p2), R(p3));
  m = NODE(g, "aten::minimum", R(m), R(pm2));
  m = NODE(g, "aten::add.Tensor", R(m), R(pm1));
  m = NODE(g, "aten::add.Tensor", R(m), R(ph));
  int gt = NODE(g, "aten::gt.Tensor", R(m), R(a));
  int eq = NODE(g, "aten::eq.Tensor", R(m), R(x));
  int lt = NODE(g, "aten::lt.Scalar", R(m), V(D(0.25)));
  int w = NODE(g, "aten::where.self", R(gt), R(m), R(a));
  w = NODE(g, "aten::masked_fill.Scalar", R(w), R(eq), V(D(-1.5)));
  w = NODE(g, "aten::clamp", R(w), V(D(-3.0)), V(D(3.0)));
  w = NODE(g, "aten::clamp", R(w), V(D(-2.0)), V(NONE));
  w = NODE(g, "aten::clamp", R(w), V(NONE), V(D(2.0)));
  w = NODE(g, "aten::clone", R(w));
  int f = NODE(g, "aten::_to_copy", R(lt), V(opd_iv_dtype(OPD_FLOAT32)));
  int o = NODE(g, "aten::mul.Tensor", R(w), R(f));
  int nonzero = NODE(g, "aten::_to_copy", R(o), V(opd_iv_dtype(OPD_BOOL)));
  /* the pointwise family's operators: the unary ones on -x folded with fmax (which skips
   * NaN), the binary ones chained with -b, the comparisons picking between the two (-x and -b
   * are registers: each use of x itself would be a load, and the C tier takes programs of at
   * most 24 loads and stores) */
  static const char *const unary[] = {
      "aten::acos",  "aten::asin",  "aten::atan",  "aten::acosh", "aten::asinh", "aten::atanh",
      "aten::sinh",  "aten::cosh",  "aten::tan",   "aten::erf",   "aten::erfc",  "aten::log1p",
      "aten::expm1", "aten::log2",  "aten::log10", "aten::exp2",  "aten::floor", "aten::ceil",
      "aten::round", "aten::trunc", "aten::frac",  "aten::sign"};
  int xr = NODE(g, "aten::neg", R(x));
  int br = NODE(g, "aten::neg", R(b));
  int u = NODE(g, "aten::atan2", R(xr), R(br));
  for (size_t k = 0; k < sizeof unary / sizeof *unary; k++)
    u = NODE(g, "aten::fmax", R(u), R(NODE(g, unary[k], R(xr))));
  static const char *const binary[] = {
      "aten::fmod.Tensor", "aten::remainder.Tensor", "aten::hypot",     "aten::copysign.Tensor",
      "aten::fmin",        "aten::xlogy.Tensor",     "aten::logaddexp", "aten::pow.Tensor_Tensor"};
  int v = xr;
  for (size_t k = 0; k < sizeof binary / sizeof *binary; k++) v = NODE(g, binary[k], R(v), R(br));
  static const char *const compare[] = {"aten::ne.Tensor", "aten::le.Tensor", "aten::ge.Tensor",
                                        "aten::lt.Tensor"};
  for (size_t k = 0; k < sizeof compare / sizeof *compare; k++)
    v = NODE(g, "aten::where.self", R(NODE(g, compare[k], R(v), R(u))), R(v), R(u));
  OUT(g, o, lt, nonzero, v);
  return g;
}

/* Inputs of every_operator_graph with NaN, infinities, signed zeros, subnormals and large
 * values: x [4, 8] and the row b [8] (new references). */
static inline void every_operator_inputs(opd_tensor **x, opd_tensor **b) {
  static const float specials[] = {NAN,     INFINITY, -INFINITY, 0.0f,  -0.0f,  1e-40f,
                                   -1e-40f, 88.0f,    -104.5f,   1e30f, -1e30f, 0.625f,
                                   -0.5f,   3.0f,     9.2f,      -9.2f};
  *x = mk(OPD_FLOAT32, SHAPE(4, 8), NULL), *b = mk(OPD_FLOAT32, SHAPE(8), NULL);
  for (int k = 0; k < 32; k++)
    ((float *)opd_tensor_data(*x))[k] = k < 16 ? specials[k] : (float)(k - 24) * 0.37f;
  for (int k = 0; k < 8; k++) ((float *)opd_tensor_data(*b))[k] = specials[(k * 5) % 16];
}

#endif

/* test_graph_c_tier.c: the C tier of fused programs ([Note: The C tier of fused programs] in
 * graph/src/plan/c_tier.c): a group's compiled C computes what its interpreted program computes,
 * to the bit, on random pointwise graphs, inputs of other layouts and a program split over
 * the thread pool; a compiler that fails, and one that miscompiles, leave the group on the
 * interpreter with the reason; the tier refuses a directory that is not private. The tests
 * need a C compiler ("cc", or $CC) and pass without one, saying so. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "exec/compiled.h"
#include "test_files.h"
#include "test_graph_programs.h"
#include "test_graph_util.h"

static char tier_dir[64];

static const char *compiler(void) {
  const char *cc = getenv("CC");
  return cc && cc[0] ? cc : "cc";
}

static bool have_compiler(void) {
  return !opd_test_no_compiler(compiler(), "test_graph_c_tier");
}

/* Compiled programs the tier dropped for their results, in the process. */
static uint64_t c_mismatches(void) {
  opd_graph_c_tier_stats s;
  opd_graph_c_tier_stats_get(&s);
  return s.mismatches;
}

/* Starts the tier with compiler cc in a new private directory. */
static void start_tier(const char *cc) {
  snprintf(tier_dir, sizeof tier_dir, "/tmp/opd-c-tier-test-XXXXXX");
  ck_assert_ptr_nonnull(mkdtemp(tier_dir));
  opd_graph_c_tier_options o = {.cc = cc, .dir = tier_dir, .timeout_ms = 60000};
  ck_assert_msg(opd_graph_c_tier_start(&o) == 0, "start: %s", opd_last_error());
}

static void stop_tier(void) {
  opd_graph_c_tier_stop();
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf %s", tier_dir);
  ck_assert_int_eq(system(cmd), 0);
}

/* A script standing in for the compiler, written to path (tier_dir/name): it answers the
 * tier's probe of its version like a compiler and runs `body` for a compile ("$@" the
 * compiler's arguments). */
static void script_compiler(char path[256], const char *name, const char *body) {
  snprintf(path, 256, "%s/%s", tier_dir, name);
  FILE *f = fopen(path, "w");
  ck_assert_ptr_nonnull(f);
  fprintf(f,
          "#!/bin/sh\n"
          "case \"$1\" in -dump*) exec %s \"$@\";; esac\n"
          "%s\n",
          compiler(), body);
  ck_assert_int_eq(fclose(f), 0);
  ck_assert_int_eq(chmod(path, 0700), 0);
}

/* The compiled graph's groups' field `key`, each compared with `want`; how many matched. */
static uint32_t groups_with(const opd_compiled_graph *cg, const char *key, const char *want) {
  json_t *j = opd_compiled_graph_json(cg);
  ck_assert_ptr_nonnull(j);
  json_t *groups = json_object_get(j, "groups"), *g;
  size_t i;
  uint32_t n = 0;
  json_array_foreach(groups, i, g) {
    const char *v = json_string_value(json_object_get(g, key));
    n += v && strcmp(v, want) == 0;
  }
  json_decref(j);
  return n;
}

/* Compiles g with the numerics check on or off; no benefit check, so that the tier, not
 * the timer, decides what runs. Without the check, a group's first run is its interpreted
 * program, and its first run after the compile its C. */
static opd_compiled_graph *compile_with_numerics(opd_graph *g, bool numerics) {
  opd_graph_options o;
  opd_graph_options_default(&o);
  o.check_numerics = numerics;
  o.benefit_runs = 0;
  return gcompile_with(g, NULL, 0, &o);
}

/* a and b hold the same values exactly (a float widened to double is exact), NaN where NaN. */
static void assert_bitwise(const opd_tensor *a, const opd_tensor *b) {
  ck_assert_int_eq(a->dtype, b->dtype);
  ck_assert_int_eq(a->numel, b->numel);
  for (int64_t i = 0; i < a->numel; i++) {
    double x = at(a, i), y = at(b, i);
    ck_assert_msg(x == y || (isnan(x) && isnan(y)), "element %lld: %.9g against %.9g", (long long)i,
                  x, y);
  }
}

/* Random graphs: the first run interprets each fused group and submits its program; once
 * compiled, runs go through the C, with the same bits. Inputs in place and transposed. */
START_TEST(test_compiled_equals_interpreted) {
  if (!have_compiler()) return;
  start_tier(compiler());
  rng_state = 777;
  random_inputs r;
  random_inputs_make(&r);
  uint32_t compiled_groups = 0;
  for (int trial = 0; trial < 10; trial++) {
    opd_graph *g[2] = {gnew(), gnew()}; /* the same graph twice: one per layout of x */
    uint32_t nout;
    random_graph(g, &nout);
    for (int layout = 0; layout < 2; layout++) {
      opd_compiled_graph *cg = compile_with_numerics(g[layout], false);
      uint32_t ngroups = cg->plan->ngroups;
      opd_tensor *in[] = {layout ? r.xt : r.x, r.y, r.z, r.m}, *a[2], *b[2];
      grun(cg, in, 4, a, nout); /* interpreted: a group reads its program before submitting it */
      opd_graph_c_tier_drain();
      grun(cg, in, 4, b, nout);
      ck_assert_uint_eq(groups_with(cg, "tier", "c"), ngroups);
      for (uint32_t k = 0; k < nout; k++) {
        assert_bitwise(a[k], b[k]);
        opd_tensor_release(a[k]);
        opd_tensor_release(b[k]);
      }
      compiled_groups += ngroups;
      opd_compiled_graph_release(cg);
    }
  }
  ck_assert_uint_gt(compiled_groups, 5);
  ck_assert_uint_eq(c_mismatches(), 0);
  json_t *j = opd_graph_c_tier_json();
  ck_assert(json_is_true(json_object_get(j, "enabled")));
  ck_assert_int_ge(json_integer_value(json_object_get(j, "compiles")) +
                       json_integer_value(json_object_get(j, "disk_hits")),
                   1);
  ck_assert_int_eq(json_integer_value(json_object_get(j, "failures")), 0);
  json_decref(j);
  random_inputs_release(&r);
  stop_tier();
}
END_TEST

/* The tanh-GELU of the graph benchmarks on 1M + 77 elements, split over the thread pool and
 * not a whole number of tiles: the same bits through the C. */
START_TEST(test_compiled_gelu_splits_over_the_pool) {
  if (!have_compiler()) return;
  start_tier(compiler());
  const int64_t n = (1 << 20) + 77;
  opd_graph *g = gnew();
  int x = IN(g, n);
  int cube = NODE(g, "aten::pow.Tensor_Scalar", R(x), V(I(3)));
  int inner = NODE(g, "aten::mul.Tensor", R(cube), V(D(0.044715)));
  int sum = NODE(g, "aten::add.Tensor", R(x), R(inner), DEF);
  int scaled = NODE(g, "aten::mul.Tensor", R(sum), V(D(0.7978845608028654)));
  int th = NODE(g, "aten::tanh", R(scaled));
  int one = NODE(g, "aten::add.Tensor", R(th), V(D(1.0)), DEF);
  int half = NODE(g, "aten::mul.Tensor", R(x), V(D(0.5)));
  OUT(g, NODE(g, "aten::mul.Tensor", R(half), R(one)));
  opd_compiled_graph *cg = compile_with_numerics(g, false);
  ck_assert_uint_eq(cg->plan->ngroups, 1);
  opd_tensor *in = mk(OPD_FLOAT32, SHAPE(n), NULL), *a, *b;
  for (int64_t i = 0; i < n; i++)
    ((float *)opd_tensor_data(in))[i] = (float)(i % 2001) * 0.01f - 10;
  grun(cg, &in, 1, &a, 1);
  opd_graph_c_tier_drain();
  grun(cg, &in, 1, &b, 1);
  ck_assert_uint_eq(groups_with(cg, "tier", "c"), 1);
  assert_bitwise(a, b);
  opd_tensor_release(a);
  opd_tensor_release(b);
  opd_tensor_release(in);
  opd_compiled_graph_release(cg);
  stop_tier();
}
END_TEST

/* Every instruction the programs have (the chain of test_graph_programs.h) on inputs with
 * NaN, infinities, signed zeros, subnormals and large values: the compiled C gives the
 * interpreter's bits for every output, the float ones and the bool ones. */
START_TEST(test_every_instruction_compiled) {
  if (!have_compiler()) return;
  start_tier(compiler());
  opd_compiled_graph *cg = compile_with_numerics(every_operator_graph(), false);
  ck_assert_uint_gt(cg->plan->ngroups, 0);
  opd_tensor *x, *b;
  every_operator_inputs(&x, &b);
  opd_tensor *in[] = {x, b}, *a[4], *c[4];
  grun(cg, in, 2, a, 4);
  opd_graph_c_tier_drain();
  grun(cg, in, 2, c, 4);
  ck_assert_uint_eq(groups_with(cg, "tier", "c"), cg->plan->ngroups);
  for (int k = 0; k < 4; k++) {
    assert_bitwise(a[k], c[k]);
    opd_tensor_release(a[k]);
    opd_tensor_release(c[k]);
  }
  opd_tensor_release(x);
  opd_tensor_release(b);
  opd_compiled_graph_release(cg);
  stop_tier();
}
END_TEST

/* exp(x) * 2 + y on [3, 5]. */
static opd_graph *small_graph(void) {
  opd_graph *g = gnew();
  int x = IN(g, 3, 5), y = IN(g, 3, 5);
  int e = NODE(g, "aten::exp", R(x));
  int twice = NODE(g, "aten::mul.Tensor", R(e), V(D(2.0)));
  OUT(g, NODE(g, "aten::add.Tensor", R(twice), R(y), DEF));
  return g;
}

/* Runs small_graph's compiled cg after the tier's compile, against the formula. */
static void run_small(opd_compiled_graph *cg) {
  opd_tensor *x = mk(OPD_FLOAT32, SHAPE(3, 5), NULL), *y = mk(OPD_FLOAT32, SHAPE(3, 5), NULL);
  for (int k = 0; k < 15; k++) {
    ((float *)opd_tensor_data(x))[k] = 0.1f * (float)k - 0.7f;
    ((float *)opd_tensor_data(y))[k] = 1.0f - 0.2f * (float)k;
  }
  opd_tensor *in[] = {x, y}, *out;
  for (int r = 0; r < 3; r++) {
    grun(cg, in, 2, &out, 1);
    for (int k = 0; k < 15; k++) {
      double want = exp(0.1 * k - 0.7) * 2 + (1.0 - 0.2 * k);
      ck_assert_double_eq_tol(at(out, k), want, 1e-5);
    }
    opd_tensor_release(out);
    if (r == 0) opd_graph_c_tier_drain();
  }
  opd_tensor_release(x);
  opd_tensor_release(y);
}

/* A compiler that fails: the group stays on the interpreter, the compiler's words as why. */
START_TEST(test_failing_compiler_keeps_the_interpreter) {
  if (!have_compiler()) return;
  start_tier(compiler()); /* for its directory */
  opd_graph_c_tier_stop();
  char cc[256];
  script_compiler(cc, "failing-cc", "echo 'fatal: out of licences' >&2; exit 3");
  opd_graph_c_tier_options o = {.cc = cc, .dir = tier_dir, .timeout_ms = 60000};
  ck_assert_msg(opd_graph_c_tier_start(&o) == 0, "%s", opd_last_error());
  opd_compiled_graph *cg = compile_with_numerics(small_graph(), true);
  run_small(cg);
  ck_assert_uint_eq(groups_with(cg, "tier", "interpreter"), 1);
  ck_assert_uint_eq(groups_with(cg, "c_tier", "failed"), 1);
  json_t *j = opd_compiled_graph_json(cg);
  const char *why =
      json_string_value(json_object_get(json_array_get(json_object_get(j, "groups"), 0), "c_why"));
  ck_assert_msg(why && strstr(why, "out of licences"), "why: %s", why ? why : "(none)");
  json_decref(j);
  j = opd_graph_c_tier_json();
  ck_assert_int_eq(json_integer_value(json_object_get(j, "failures")), 1);
  json_decref(j);
  opd_compiled_graph_release(cg);
  stop_tier();
}
END_TEST

/* A compiler that miscompiles (its + made a -): the numerics check catches the compiled
 * program, drops it and checks the interpreter's again; results stay right. */
START_TEST(test_miscompiled_program_is_dropped) {
  if (!have_compiler()) return;
  start_tier(compiler());
  opd_graph_c_tier_stop();
  char body[512];
  snprintf(body, sizeof body,
           "for a; do src=$a; done\n"
           "sed -i '/^      r[0-9]* = x + /s/ + / - /' \"$src\"\n"
           "exec %s \"$@\"",
           compiler());
  char cc[256];
  script_compiler(cc, "miscompiling-cc", body);
  opd_graph_c_tier_options o = {.cc = cc, .dir = tier_dir, .timeout_ms = 60000};
  ck_assert_msg(opd_graph_c_tier_start(&o) == 0, "%s", opd_last_error());
  uint64_t mismatches = c_mismatches();
  opd_compiled_graph *cg = compile_with_numerics(small_graph(), true);
  run_small(cg); /* interpreted, then the C checked and dropped, then interpreted again */
  ck_assert_uint_eq(c_mismatches(), mismatches + 1);
  ck_assert_uint_eq(groups_with(cg, "c_tier", "dropped"), 1);
  ck_assert_uint_eq(groups_with(cg, "tier", "interpreter"), 1);
  ck_assert_uint_eq(groups_with(cg, "numerics", "fused"), 1);
  opd_compiled_graph_release(cg);
  stop_tier();
}
END_TEST

/* The times the benefit check sees, forced: the compiled C's (fused) and the unfused nodes'
 * from `measured`, the interpreter's beside the C from `measured_interpreter`. */
typedef struct forced {
  int64_t c_ns, interpreter_ns;
} forced;

static int64_t forced_time(uint32_t group, bool fused, int64_t ns, void *data) {
  (void)group, (void)ns;
  return fused ? ((const forced *)data)->c_ns : 5000000;
}

static int64_t forced_interpreter(uint32_t group, int64_t ns, void *data) {
  (void)group, (void)ns;
  return ((const forced *)data)->interpreter_ns;
}

/* The tiers' benefit check: compiled C that is not faster than the interpreter beside it is
 * dropped for the interpreter, which is then judged against the unfused nodes; C that is
 * faster stays. */
START_TEST(test_slower_c_gives_way_to_the_interpreter) {
  if (!have_compiler()) return;
  start_tier(compiler());
  static const forced cases[] = {{1000000, 1000}, {1000, 1000000}};
  for (int k = 0; k < 2; k++) {
    opd_graph_test_hooks hooks = {.measured = forced_time,
                                  .measured_interpreter = forced_interpreter,
                                  .data = (void *)&cases[k]};
    opd_graph_options o;
    opd_graph_options_default(&o);
    o.benefit_runs = 3;
    o.test_hooks = &hooks;
    opd_compiled_graph *cg = gcompile_with(small_graph(), NULL, 0, &o);
    run_small(cg); /* interpreted, then the C checked: numerics, then timed */
    run_small(cg);
    bool c_slower = k == 0;
    ck_assert_uint_eq(groups_with(cg, "tier", c_slower ? "interpreter" : "c"), 1);
    ck_assert_uint_eq(groups_with(cg, "c_tier", c_slower ? "dropped" : "ready"), 1);
    ck_assert_uint_eq(groups_with(cg, "benefit", "fused"), 1); /* either beats 5 ms unfused */
    json_t *j = opd_compiled_graph_json(cg);
    json_t *g = json_array_get(json_object_get(j, "groups"), 0);
    const char *why = json_string_value(json_object_get(g, "c_why"));
    if (c_slower) {
      ck_assert_msg(why && strstr(why, "slower than the interpreter"), "%s", why ? why : "-");
      ck_assert_int_eq(json_integer_value(json_object_get(g, "fused_ns")), 1000);
    } else {
      ck_assert_ptr_null(why);
      ck_assert_int_eq(json_integer_value(json_object_get(g, "fused_ns")), 1000);
    }
    ck_assert_int_eq(json_integer_value(json_object_get(g, "interpreter_ns")),
                     cases[k].interpreter_ns);
    json_decref(j);
    opd_compiled_graph_release(cg);
  }
  stop_tier();
}
END_TEST

/* The directory must be private; one tier at a time. */
START_TEST(test_start_refusals) {
  if (!have_compiler()) return;
  start_tier(compiler());
  opd_graph_c_tier_options o = {.cc = compiler(), .dir = tier_dir};
  ck_assert_int_eq(opd_graph_c_tier_start(&o), OPD_EEXIST);
  opd_graph_c_tier_stop();
  ck_assert_int_eq(chmod(tier_dir, 0777), 0);
  ck_assert_int_eq(opd_graph_c_tier_start(&o), OPD_EINVAL);
  ck_assert_int_eq(chmod(tier_dir, 0700), 0);
  o.cc = "/nonexistent/cc";
  ck_assert_int_eq(opd_graph_c_tier_start(&o), OPD_EINVAL);
  o.cc = NULL;
  ck_assert_int_eq(opd_graph_c_tier_start(&o), OPD_EINVAL);
  json_t *j = opd_graph_c_tier_json();
  ck_assert(json_is_false(json_object_get(j, "enabled")));
  json_decref(j);
  stop_tier();
}
END_TEST

Suite *opd_test_graph_c_tier_suite(void) {
  Suite *s = suite_create("graph_c_tier");
  TCase *tc = tcase_create("c_tier");
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, test_compiled_equals_interpreted);
  tcase_add_test(tc, test_compiled_gelu_splits_over_the_pool);
  tcase_add_test(tc, test_every_instruction_compiled);
  tcase_add_test(tc, test_failing_compiler_keeps_the_interpreter);
  tcase_add_test(tc, test_miscompiled_program_is_dropped);
  tcase_add_test(tc, test_slower_c_gives_way_to_the_interpreter);
  tcase_add_test(tc, test_start_refusals);
  suite_add_tcase(s, tc);
  return s;
}

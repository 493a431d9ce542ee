/* test_graph_exec.c: running compiled graphs: fused groups against the same graph run
 * unfused (random pointwise programs with broadcasts, views and masks, inputs of other
 * layouts), the numerics and benefit decisions ([Note: Numerics and benefit of fused
 * groups], forced with the test hooks), run-time errors, runs from several threads, and the
 * introspection document. */
#include <check.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "exec/compiled.h"
#include "fault_alloc.h"
#include "opd/memory.h"
#include "test_graph_programs.h"
#include "test_graph_util.h"

/* a and b hold the same values: equal within 1e-5 relative (1e-6 absolute), NaN where NaN,
 * infinities exactly. */
static void assert_same(const opd_tensor *a, const opd_tensor *b, const char *what) {
  ck_assert_int_eq(a->dtype, b->dtype);
  ck_assert_int_eq(a->ndim, b->ndim);
  ck_assert_mem_eq(opd_tensor_sizes(a), opd_tensor_sizes(b), a->ndim * sizeof(int64_t));
  for (int64_t i = 0; i < a->numel; i++) {
    double x = at(a, i), y = at(b, i);
    bool ok = isnan(y) ? isnan(x) : isinf(y) ? x == y : fabs(x - y) <= 1e-6 + 1e-5 * fabs(y);
    ck_assert_msg(ok, "%s: element %lld: %.9g, expected %.9g", what, (long long)i, x, y);
  }
}

START_TEST(test_fused_equals_unfused) {
  rng_state = 12345;
  random_inputs r;
  random_inputs_make(&r);
  uint32_t fused_groups = 0;
  for (int trial = 0; trial < 150; trial++) {
    opd_graph *g[2] = {gnew(), gnew()};
    uint32_t nout;
    random_graph(g, &nout);
    opd_compiled_graph *opt = gcompile_with(g[0], NULL, 0, NULL);
    opd_compiled_graph *ref = GCOMPILE(g[1], "dce"); /* every node its own kernel */
    fused_groups += opt->plan->ngroups;
    for (int layout = 0; layout < 2; layout++) {
      opd_tensor *in[] = {layout ? r.xt : r.x, r.y, r.z, r.m}, *a[2], *b[2];
      for (int rep = 0; rep < 2; rep++) { /* the second run reuses the run context */
        grun(opt, in, 4, a, nout);
        grun(ref, in, 4, b, nout);
        for (uint32_t k = 0; k < nout; k++) {
          assert_same(a[k], b[k], "fused against unfused");
          opd_tensor_release(a[k]);
          opd_tensor_release(b[k]);
        }
      }
    }
    opd_compiled_graph_release(opt);
    opd_compiled_graph_release(ref);
  }
  ck_assert_uint_gt(fused_groups, 100); /* the programs did fuse */
  random_inputs_release(&r);
}
END_TEST

/* (x * 0.5 + 1, x * 0.5) on n elements: two stores. */
static opd_graph *affine_graph(int64_t n) {
  opd_graph *g = gnew();
  int x = IN(g, n);
  int half = NODE(g, "aten::mul.Tensor", R(x), V(D(0.5)));
  OUT(g, NODE(g, "aten::add.Tensor", R(half), V(D(1.0)), V(I(1))), half);
  return g;
}

/* A program large enough to stream its stores, that is not a whole number of tiles, read
 * from an input at an odd offset ([Note: Streaming the stores of large programs] and the
 * next tile's prefetch in fused_run.c): the same values as unfused, bit for bit. */
START_TEST(test_large_program_streams_its_stores) {
  const int64_t n = OPD__PW_STREAM_ELEMENTS + 3 * OPD__PW_TILE / 2 + 3;
  opd_tensor *base = mk(OPD_FLOAT32, SHAPE(n + 1), NULL);
  float *v = opd_tensor_data(base);
  for (int64_t k = 0; k <= n; k++) v[k] = (float)(k % 4001) * 0.004f - 8.0f;
  opd_tensor *x = view(base, SHAPE(n), (int64_t[]){1}, 1); /* 4 bytes past an aligned start */
  opd_compiled_graph *opt = gcompile_with(affine_graph(n), NULL, 0, NULL);
  opd_compiled_graph *ref = GCOMPILE(affine_graph(n), "dce");
  ck_assert_uint_eq(opt->plan->ngroups, 1);
  opd_tensor *in[] = {x}, *a[2], *b[2];
  grun(opt, in, 1, a, 2);
  grun(ref, in, 1, b, 2);
  opd_graph_stats st;
  opd_compiled_graph_stats(opt, &st);
  ck_assert_uint_eq(st.kernels_last_run, 1);
  for (int k = 0; k < 2; k++) {
    ck_assert_int_eq(a[k]->numel, n);
    const float *fa = opd_tensor_data(a[k]), *fb = opd_tensor_data(b[k]);
    int64_t first = -1;
    for (int64_t i = 0; i < n && first < 0; i++)
      if (memcmp(&fa[i], &fb[i], sizeof *fa)) first = i;
    ck_assert_msg(first < 0, "output %d, element %lld: %.9g fused, %.9g unfused", k,
                  (long long)first, first < 0 ? 0.0 : fa[first], first < 0 ? 0.0 : fb[first]);
    opd_tensor_release(a[k]);
    opd_tensor_release(b[k]);
  }
  opd_compiled_graph_release(opt);
  opd_compiled_graph_release(ref);
  opd_tensor_release(x);
  opd_tensor_release(base);
}
END_TEST

/* silu(x + b): one group of three nodes. */
static opd_graph *silu_graph(void) {
  opd_graph *g = gnew();
  int x = IN(g, 64, 64), b = PARAM(g, 64);
  int a = NODE(g, "aten::add.Tensor", R(x), R(b));
  int s = NODE(g, "aten::sigmoid", R(a));
  OUT(g, NODE(g, "aten::mul.Tensor", R(a), R(s)));
  return g;
}

static void silu_inputs(opd_tensor **x, opd_tensor **b) {
  *x = mk(OPD_FLOAT32, SHAPE(64, 64), NULL);
  *b = mk(OPD_FLOAT32, SHAPE(64), NULL);
  for (int k = 0; k < 64 * 64; k++) ((float *)opd_tensor_data(*x))[k] = (float)(k % 13) / 6 - 1;
}

static void check_silu(const opd_tensor *out, const opd_tensor *x) {
  for (int k = 0; k < 64 * 64; k += 31) {
    float v = ((const float *)opd_tensor_data(x))[k];
    ck_assert_float_eq_tol(at(out, k), v / (1 + expf(-v)), 1e-6);
  }
}

static void perturb(uint32_t group, opd_tensor *const *outputs, uint32_t n, void *data) {
  (void)group;
  (void)n;
  (*(int *)data)++;
  ((float *)opd_tensor_data(outputs[0]))[7] += 1.0f;
}

START_TEST(test_numerics_mismatch_pins_unfused) {
  uint64_t mismatches = opd_graph_numerics_mismatches();
  int calls = 0;
  opd_graph_test_hooks hooks = {.after_fused = perturb, .data = &calls};
  opd_graph_options o;
  opd_graph_options_default(&o);
  o.benefit_runs = 0;
  o.test_hooks = &hooks;
  opd_compiled_graph *cg = gcompile_with(silu_graph(), NULL, 0, &o);
  opd_tensor *x, *b, *out;
  silu_inputs(&x, &b);
  opd_tensor *in[] = {x, b};
  for (int run = 0; run < 3; run++) {
    grun(cg, in, 2, &out, 1);
    check_silu(out, x); /* the unfused results were delivered */
    opd_tensor_release(out);
  }
  ck_assert_int_eq(calls, 1); /* compared once, then pinned */
  ck_assert_uint_eq(opd_graph_numerics_mismatches(), mismatches + 1); /* and counted */
  opd_graph_stats st;
  opd_compiled_graph_stats(cg, &st);
  ck_assert_uint_eq(st.kernels, 3);
  ck_assert_uint_eq(st.kernels_last_run, 3);
  json_t *j = opd_compiled_graph_json(cg);
  json_t *grp = json_array_get(json_object_get(j, "groups"), 0);
  ck_assert_str_eq(json_string_value(json_object_get(grp, "numerics")), "unfused");
  ck_assert_ptr_nonnull(strstr(json_string_value(json_object_get(grp, "why_unfused")), "differ"));
  ck_assert_int_eq(json_integer_value(json_object_get(grp, "unfused_runs")), 3);
  json_decref(j);
  opd_compiled_graph_release(cg);
  opd_tensor_release(x);
  opd_tensor_release(b);
}
END_TEST

/* The times the benefit check sees: {fused, unfused} nanoseconds. */
static int64_t forced_times(uint32_t group, bool fused, int64_t ns, void *data) {
  (void)group;
  (void)ns;
  return ((const int64_t *)data)[fused ? 0 : 1];
}

START_TEST(test_benefit_decisions) {
  static const struct {
    int64_t ns[2]; /* fused, unfused */
    uint32_t benefit_runs;
    const char *benefit; /* the decision */
    uint32_t timed;      /* runs timed both ways */
  } cases[] = {
      {{900000, 1000000}, 2, "fused", 2},    /* faster */
      {{1200000, 1000000}, 2, "unfused", 2}, /* 20% and 200 us slower */
      {{1050000, 1000000}, 2, "fused", 2},   /* within the 10% noise */
      {{2000, 1000}, 2, "fused", 2},         /* twice as slow, but by 1 us: within the 5 us floor */
      {{16000, 10000}, 2, "unfused", 2},     /* 60% and 6 us slower */
      /* no benefit check: the numerics check's one run is timed, and decides nothing */
      {{16000, 10000}, 0, "unchecked", 1},
  };
  for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
    bool fused = strcmp(cases[c].benefit, "unfused") != 0;
    opd_graph_test_hooks hooks = {.measured = forced_times, .data = (void *)cases[c].ns};
    opd_graph_options o;
    opd_graph_options_default(&o);
    o.benefit_runs = cases[c].benefit_runs;
    o.test_hooks = &hooks;
    opd_compiled_graph *cg = gcompile_with(silu_graph(), NULL, 0, &o);
    opd_tensor *x, *b, *out;
    silu_inputs(&x, &b);
    opd_tensor *in[] = {x, b};
    for (int run = 0; run < 4; run++) {
      grun(cg, in, 2, &out, 1);
      check_silu(out, x);
      opd_tensor_release(out);
    }
    opd_graph_stats st;
    opd_compiled_graph_stats(cg, &st);
    ck_assert_uint_eq(st.kernels, fused ? 1 : 3);
    ck_assert_uint_eq(st.kernels_last_run, fused ? 1 : 3);
    json_t *j = opd_compiled_graph_json(cg);
    json_t *grp = json_array_get(json_object_get(j, "groups"), 0);
    ck_assert_str_eq(json_string_value(json_object_get(grp, "numerics")), "fused");
    ck_assert_str_eq(json_string_value(json_object_get(grp, "benefit")), cases[c].benefit);
    ck_assert_int_eq(json_integer_value(json_object_get(grp, "fused_ns")), cases[c].ns[0]);
    ck_assert_int_eq(json_integer_value(json_object_get(grp, "unfused_ns")), cases[c].ns[1]);
    ck_assert_int_eq(json_integer_value(json_object_get(grp, "timed_runs")), cases[c].timed);
    json_decref(j);
    opd_compiled_graph_release(cg);
    opd_tensor_release(x);
    opd_tensor_release(b);
  }
}
END_TEST

START_TEST(test_run_errors) {
  opd_compiled_graph *cg = gcompile_with(silu_graph(), NULL, 0, NULL);
  opd_tensor *x, *b, *out;
  silu_inputs(&x, &b);
  ck_assert_int_eq(opd_compiled_graph_run(cg, &x, 1, &out, 1), OPD_EINVAL);
  ck_assert_ptr_nonnull(strstr(opd_last_error(), ": 1 inputs given, it takes 2"));
  opd_tensor *in[] = {b, x};
  ck_assert_int_eq(opd_compiled_graph_run(cg, in, 2, &out, 1), OPD_EINVAL);
  ck_assert_str_eq(opd_last_error(),
                   "graph input 0: expected float32[64, 64] on CPU, got float32[64] on CPU");
  opd_tensor *wrong = mk(OPD_FLOAT64, SHAPE(64), NULL);
  opd_tensor *in2[] = {x, wrong};
  ck_assert_int_eq(opd_compiled_graph_run(cg, in2, 2, &out, 1), OPD_EINVAL);
  ck_assert_str_eq(opd_last_error(),
                   "graph input 1: expected float32[64] on CPU, got float64[64] on CPU");
  opd_tensor *in3[] = {x, b};
  ck_assert_int_eq(opd_compiled_graph_run(cg, in3, 2, &out, 2), OPD_EINVAL);
  ck_assert_ptr_nonnull(strstr(opd_last_error(), "room for 2 outputs, it returns 1"));
  opd_tensor_release(wrong);
  opd_tensor_release(x);
  opd_tensor_release(b);
  opd_compiled_graph_release(cg);
}
END_TEST

/* A kernel error at run time names its node. */
START_TEST(test_kernel_error_names_node) {
  opd_graph *g = gnew();
  int x = gin_kind(g, OPD_INT64, SHAPE(3), OPD_GRAPH_INPUT);
  int y = gin_kind(g, OPD_INT64, SHAPE(3), OPD_GRAPH_INPUT);
  OUT(g, NODE(g, "aten::div.Tensor_mode", R(x), R(y), STR("floor")));
  opd_compiled_graph *cg = gcompile_with(g, NULL, 0, NULL);
  opd_tensor *a = mk(OPD_INT64, SHAPE(3), VALS(1, 2, 3)),
             *b = mk(OPD_INT64, SHAPE(3), VALS(1, 0, 1));
  opd_tensor *in[] = {a, b}, *out;
  ck_assert_int_eq(opd_compiled_graph_run(cg, in, 2, &out, 1), OPD_EINVAL);
  ck_assert_str_eq(opd_last_error(), "graph node 0 (aten::div.Tensor_mode): ZeroDivisionError");
  opd_tensor_release(a);
  opd_tensor_release(b);
  opd_compiled_graph_release(cg);
}
END_TEST

typedef struct runner_arg {
  opd_compiled_graph *cg;
  opd_tensor *x, *b;
  int failures;
} runner_arg;

static void *run_many(void *p) {
  runner_arg *a = p;
  opd_tensor *in[] = {a->x, a->b}, *out;
  for (int i = 0; i < 50; i++) {
    if (opd_compiled_graph_run(a->cg, in, 2, &out, 1)) {
      a->failures++;
      continue;
    }
    for (int k = 0; k < 64 * 64; k += 61) {
      float v = ((const float *)opd_tensor_data(a->x))[k];
      if (fabsf((float)at(out, k) - v / (1 + expf(-v))) > 1e-6f) a->failures++;
    }
    opd_tensor_release(out);
  }
  return NULL;
}

START_TEST(test_concurrent_runs) {
  opd_compiled_graph *cg = gcompile_with(silu_graph(), NULL, 0, NULL);
  runner_arg args[4];
  pthread_t th[4];
  for (int i = 0; i < 4; i++) {
    args[i] = (runner_arg){.cg = cg};
    silu_inputs(&args[i].x, &args[i].b);
    ck_assert_int_eq(pthread_create(&th[i], NULL, run_many, &args[i]), 0);
  }
  for (int i = 0; i < 4; i++) {
    pthread_join(th[i], NULL);
    ck_assert_int_eq(args[i].failures, 0);
    opd_tensor_release(args[i].x);
    opd_tensor_release(args[i].b);
  }
  opd_graph_stats st;
  opd_compiled_graph_stats(cg, &st);
  ck_assert_uint_eq(st.runs, 200);
  opd_compiled_graph_release(cg);
}
END_TEST

START_TEST(test_introspection) {
  opd_graph *g = gnew();
  int x = IN(g, 4, 8);
  int e = NODE(g, "aten::exp", R(x));
  int s = NODE(g, "aten::sum.dim_IntList", R(e), INTS(-1), V(B(true)));
  int d = NODE(g, "aten::div.Tensor", R(e), R(s));
  OUT(g, NODE(g, "aten::mul.Tensor", R(d), V(D(2.0))));
  opd_compiled_graph *cg = gcompile_with(g, NULL, 0, NULL);
  json_t *j = opd_compiled_graph_json(cg);
  ck_assert_ptr_nonnull(j);
  ck_assert_int_eq(json_integer_value(json_object_get(j, "nodes_before")), 4);
  ck_assert_int_eq(json_integer_value(json_object_get(j, "nodes_after")), 2);
  ck_assert_int_eq(json_integer_value(json_object_get(j, "kernels")), 2);
  ck_assert_int_eq(json_integer_value(json_object_get(json_object_get(j, "patterns"), "softmax")),
                   1);
  ck_assert_str_eq(json_string_value(json_object_get(j, "codegen")), opd_graph_codegen_id());
  json_t *passes = json_object_get(j, "passes");
  ck_assert_uint_eq(json_array_size(passes), 8);
  json_t *sm = json_array_get(passes, 3);
  ck_assert_str_eq(json_string_value(json_object_get(sm, "name")), "softmax_pattern");
  ck_assert_int_eq(json_integer_value(json_object_get(sm, "version")), 1);
  ck_assert_int_eq(json_integer_value(json_object_get(sm, "hits")), 1);
  ck_assert_ptr_nonnull(strstr(json_string_value(json_object_get(sm, "ir")), "# softmax pattern"));
  ck_assert_ptr_nonnull(
      strstr(json_string_value(json_object_get(j, "ir_before")), "aten::exp(%0)"));
  ck_assert_uint_eq(json_array_size(json_object_get(j, "groups")), 0); /* mul alone */
  char *text = json_dumps(j, 0);
  ck_assert_ptr_nonnull(text);
  free(text);
  json_decref(j);
  opd_compiled_graph_release(cg);
}
END_TEST

/* ---- allocation failures ([Note: The replaceable allocator] in opd/memory.h) ---- */

/* Builds, compiles and runs a graph with a softmax, a fused group, a layer norm, an unbind
 * and a list argument: 0, or the first error. */
static int build_compile_run(opd_graph_cache *cache) {
  opd_graph *g;
  int rc = opd_graph_new(NULL, &g);
  if (rc) return rc;
  int64_t sx[] = {4, 8}, sw[] = {8};
  int x = opd_graph_add_input(
      g, &(opd_graph_input_spec){OPD_FLOAT32, sx, 2, {OPD_DEVICE_CPU, -1}, OPD_GRAPH_INPUT});
  int w = opd_graph_add_input(
      g, &(opd_graph_input_spec){OPD_FLOAT32, sw, 1, {OPD_DEVICE_CPU, -1}, OPD_GRAPH_PARAMETER});
  int p[8] = {0};
  opd_graph_arg all = {.kind = OPD_GRAPH_ARG_REF, .ref = {0, OPD_GRAPH_ALL_OUTPUTS}};
  if (x >= 0 && w >= 0 && (p[0] = TRY(g, "aten::exp", R(x))) >= 0 &&
      (p[1] = TRY(g, "aten::sum.dim_IntList", R(p[0]), INTS(-1), V(B(true)))) >= 0 &&
      (p[2] = TRY(g, "aten::div.Tensor", R(p[0]), R(p[1]))) >= 0 &&
      (p[3] = TRY(g, "aten::mul.Tensor", R(p[2]), R(w))) >= 0 &&
      (p[4] = TRY(g, "aten::add.Tensor", R(p[3]), V(D(1.0)))) >= 0 &&
      (p[5] = TRY(g, "aten::native_layer_norm", R(p[4]), INTS(8), R(w), R(w), V(D(1e-5)))) >= 0 &&
      (p[6] = TRY(g, "aten::unbind.int", RO(p[5], 0), V(I(0)))) >= 0) {
    all.ref.position = (uint32_t)p[6];
    p[7] = TRY(g, "aten::cat", all, V(I(0)));
  } else {
    p[7] = -1;
  }
  opd_graph_ref outs[] = {{(uint32_t)p[7], 0}, {(uint32_t)p[4], 0}};
  rc = p[7] < 0 ? opd_last_error_code() : opd_graph_set_outputs(g, outs, 2);
  if (rc == 0) rc = opd_graph_finish(g);
  if (rc) {
    opd_graph_free(g);
    return rc;
  }
  opd_compiled_graph *cg;
  if ((rc = opd_graph_compile(g, NULL, cache, &cg, NULL))) return rc;
  opd_tensor *in[2] = {NULL, NULL}, *out[2] = {NULL, NULL};
  rc = opd_tensor_empty(sx, 2, OPD_FLOAT32, (opd_device){OPD_DEVICE_CPU, -1}, &in[0]);
  if (rc == 0) rc = opd_tensor_empty(sw, 1, OPD_FLOAT32, (opd_device){OPD_DEVICE_CPU, -1}, &in[1]);
  for (int i = 0; rc == 0 && i < 2; i++) {
    memset(opd_tensor_data(in[0]), 0, 32 * sizeof(float));
    memset(opd_tensor_data(in[1]), 0, 8 * sizeof(float));
    rc = opd_compiled_graph_run(cg, in, 2, out, 2);
    for (int k = 0; rc == 0 && k < 2; k++) opd_tensor_release(out[k]);
  }
  for (int k = 0; k < 2; k++)
    if (in[k]) opd_tensor_release(in[k]);
  opd_compiled_graph_release(cg);
  return rc;
}

/* The Nth allocation fails, for every N the whole sequence makes: each is an error, never a
 * crash, and nothing leaks (the sanitizer build checks). */
START_TEST(test_allocation_failures) {
  ck_assert_int_eq(opd_kernels_register(), 0);
  opd_graph_cache *cache;
  ck_assert_int_eq(opd_graph_cache_new(4, &cache), 0);
  ck_assert_int_eq(build_compile_run(cache), 0); /* warm: the pool and the caches exist */
  opd_graph_cache_free(cache);
  ck_assert_int_eq(opd_replace_allocator(fault_malloc, fault_realloc, fault_calloc, free), 0);
  long n = 1;
  for (;; n++) {
    ck_assert_int_eq(opd_graph_cache_new(4, &cache), 0);
    arm(n);
    int rc = build_compile_run(cache);
    bool fired = disarm();
    opd_graph_cache_free(cache);
    if (!fired) {
      ck_assert_int_eq(rc, 0);
      break;
    }
    /* out of memory, said so; or absorbed (a group left unfused when its check could not
     * allocate is still a correct plan) */
    ck_assert_msg(rc == 0 || (rc == OPD_ENOMEM && opd_last_error()[0]), "allocation %ld: %s (%s)",
                  n, opd_err_name(rc), opd_last_error());
  }
  ck_assert_int_gt(n, 200); /* the sequence allocates that much, each failure was met */
}
END_TEST

Suite *opd_test_graph_exec_suite(void) {
  Suite *s = suite_create("graph_exec");
  TCase *tc = tcase_create("exec");
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, test_fused_equals_unfused);
  tcase_add_test(tc, test_large_program_streams_its_stores);
  tcase_add_test(tc, test_numerics_mismatch_pins_unfused);
  tcase_add_test(tc, test_benefit_decisions);
  tcase_add_test(tc, test_run_errors);
  tcase_add_test(tc, test_kernel_error_names_node);
  tcase_add_test(tc, test_concurrent_runs);
  tcase_add_test(tc, test_introspection);
  tcase_add_test(tc, test_allocation_failures);
  suite_add_tcase(s, tc);
  return s;
}

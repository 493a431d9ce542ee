/* c_tier_bench.c: opd-bench-c-tier, the C tier of fused programs against the interpreter
 * and the unfused nodes, in process ([Note: The C tier of fused programs] in
 * graph/src/plan/c_tier.c; docs/PERFORMANCE.md "The C tier").
 *
 *   opd-bench-c-tier [ROUNDS] [CACHE_DIR]
 *
 * Two pointwise chains: the hand-written tanh-GELU of the graph benchmarks (8 operations)
 * and relu((x * 1.5 + 0.5) * x - 0.25) (a pointwise chain of five operators), each on 4 Ki,
 * 64 Ki, 1 Mi and 16 Mi float32 elements. For each, three compiled graphs of the same
 * program: unfused (no pointwise_groups pass: one kernel a node), fused and interpreted,
 * fused and compiled to C (the tier started, the program compiled and loaded, the tier
 * stopped again so that the interpreted graph is never submitted; "to C ms" is the time from
 * the first run, which interprets and submits the program, until its C is loaded: a compile
 * for a chain's first size; for the others, whose program is the same, a module found built
 * in the directory). Every round times each graph in turn (the median of repeated runs, about
 * 50 ms of them); the table has the medians of the rounds, in microseconds a run, and the
 * ratios. The intra-op pool is the process's (OPD_NUM_THREADS; pin with taskset for one CPU).
 * The compiler is $CC or "cc"; CACHE_DIR (default a new directory under /tmp, removed after)
 * is the tier's.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define BENCH_NAME "opd-bench-c-tier"
#include "bench_util.h"
#include "opd/error.h"
#include "opd/graph.h"
#include "opd/graph_exec.h"
#include "opd/kernels.h"
#include "opd/tensor.h"

/* A failed step, with the library's reason. */
#define fail(what) die("%s: %s", what, opd_last_error())

static int node(opd_graph *g, const char *op, const opd_graph_arg *args, uint32_t n) {
  int p = opd_graph_add_node(g, op, args, n);
  if (p < 0) fail(op);
  return p;
}
#define REF(p) opd_graph_arg_ref((uint32_t)(p), 0)
#define DBL(v) opd_graph_arg_value(opd_iv_double(v))
#define INT(v) opd_graph_arg_value(opd_iv_int(v))

/* The chains, on an input of n elements. */
static void gelu_tanh(opd_graph *g, int x) {
  opd_graph_arg a1[] = {REF(x), INT(3)};
  int cube = node(g, "aten::pow.Tensor_Scalar", a1, 2);
  opd_graph_arg a2[] = {REF(cube), DBL(0.044715)};
  int inner = node(g, "aten::mul.Tensor", a2, 2);
  opd_graph_arg a3[] = {REF(x), REF(inner), opd_graph_arg_default()};
  int sum = node(g, "aten::add.Tensor", a3, 3);
  opd_graph_arg a4[] = {REF(sum), DBL(0.7978845608028654)};
  int scaled = node(g, "aten::mul.Tensor", a4, 2);
  opd_graph_arg a5[] = {REF(scaled)};
  int th = node(g, "aten::tanh", a5, 1);
  opd_graph_arg a6[] = {REF(th), DBL(1.0), opd_graph_arg_default()};
  int one = node(g, "aten::add.Tensor", a6, 3);
  opd_graph_arg a7[] = {REF(x), DBL(0.5)};
  int half = node(g, "aten::mul.Tensor", a7, 2);
  opd_graph_arg a8[] = {REF(half), REF(one)};
  opd_graph_ref out = {(uint32_t)node(g, "aten::mul.Tensor", a8, 2), 0};
  if (opd_graph_set_outputs(g, &out, 1)) fail("outputs");
}

static void relu_chain(opd_graph *g, int x) {
  opd_graph_arg a1[] = {REF(x), DBL(1.5)};
  int m = node(g, "aten::mul.Tensor", a1, 2);
  opd_graph_arg a2[] = {REF(m), DBL(0.5), opd_graph_arg_default()};
  int p = node(g, "aten::add.Tensor", a2, 3);
  opd_graph_arg a3[] = {REF(p), REF(x)};
  int q = node(g, "aten::mul.Tensor", a3, 2);
  opd_graph_arg a4[] = {REF(q), DBL(0.25), opd_graph_arg_default()};
  int r = node(g, "aten::sub.Tensor", a4, 3);
  opd_graph_arg a5[] = {REF(r)};
  opd_graph_ref out = {(uint32_t)node(g, "aten::relu", a5, 1), 0};
  if (opd_graph_set_outputs(g, &out, 1)) fail("outputs");
}

typedef void (*chain_fn)(opd_graph *g, int x);

static opd_compiled_graph *compile(chain_fn chain, int64_t n, bool fused) {
  opd_graph *g = NULL;
  if (opd_graph_new(NULL, &g)) fail("graph");
  int x = opd_graph_add_input(
      g, &(opd_graph_input_spec){OPD_FLOAT32, &n, 1, {OPD_DEVICE_CPU, -1}, OPD_GRAPH_INPUT});
  if (x < 0) fail("input");
  chain(g, x);
  if (opd_graph_finish(g)) fail("finish");
  opd_graph_options o;
  opd_graph_options_default(&o);
  o.check_numerics = false; /* the tests check them; here every group runs fused */
  o.benefit_runs = 0;
  const char *off[] = {"pointwise_groups"};
  if (!fused) o.disabled_passes = off, o.ndisabled = 1;
  opd_compiled_graph *cg = NULL;
  if (opd_graph_compile(g, &o, NULL, &cg, NULL)) fail("compile");
  return cg;
}

static void run(opd_compiled_graph *cg, opd_tensor *in) {
  opd_tensor *out = NULL;
  if (opd_compiled_graph_run(cg, &in, 1, &out, 1)) fail("run");
  opd_tensor_release(out);
}

/* The tier its group runs on ("c", "interpreter"), or "unfused". */
static const char *tier_of(opd_compiled_graph *cg) {
  static char tier[32];
  json_t *j = opd_compiled_graph_json(cg);
  json_t *g0 = json_array_get(json_object_get(j, "groups"), 0);
  snprintf(tier, sizeof tier, "%s",
           g0 ? json_string_value(json_object_get(g0, "tier")) : "unfused");
  json_decref(j);
  return tier;
}

/* The median of `reps` runs, in nanoseconds (added to a round's samples). */
static void time_runs(opd_compiled_graph *cg, opd_tensor *in, int reps, samples *rounds) {
  samples runs = {0};
  for (int r = 0; r < reps; r++) {
    uint64_t t0 = now_ns();
    run(cg, in);
    samples_add(&runs, now_ns() - t0);
  }
  samples_sort(&runs);
  samples_add(rounds, (uint64_t)(quantile_us(&runs, 0.5) * 1000));
  free(runs.v);
}

/* The median of the rounds, in microseconds. */
static double median_us(samples *rounds) {
  samples_sort(rounds);
  double us = quantile_us(rounds, 0.5);
  free(rounds->v);
  *rounds = (samples){0};
  return us;
}

int main(int argc, char **argv) {
  int rounds = argc > 1 ? atoi(argv[1]) : 5;
  if (rounds < 1 || rounds > 64) rounds = 5;
  char dir[256];
  bool own_dir = argc <= 2;
  if (own_dir) {
    snprintf(dir, sizeof dir, "/tmp/opd-c-tier-bench-XXXXXX");
    if (!mkdtemp(dir)) fail("mkdtemp");
  } else {
    snprintf(dir, sizeof dir, "%s", argv[2]);
  }
  if (opd_kernels_register()) fail("kernels");
  const char *cc = getenv("CC");
  opd_graph_c_tier_options co = {.cc = cc && cc[0] ? cc : "cc", .dir = dir};
  static const struct {
    const char *name;
    chain_fn chain;
  } chains[] = {{"gelu_tanh", gelu_tanh}, {"relu_chain", relu_chain}};
  static const int64_t sizes[] = {4096, 65536, 1 << 20, 16 << 20};
  printf("%-11s %9s %11s %11s %11s %9s %9s %9s\n", "chain", "elements", "unfused us", "interp us",
         "c us", "interp/c", "unfused/c", "to C ms");
  for (size_t c = 0; c < sizeof chains / sizeof *chains; c++) {
    for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++) {
      int64_t n = sizes[s];
      opd_tensor *in = NULL;
      if (opd_tensor_empty(&n, 1, OPD_FLOAT32, (opd_device){OPD_DEVICE_CPU, -1}, &in))
        fail("input");
      float *x = opd_tensor_data(in);
      for (int64_t i = 0; i < n; i++) x[i] = (float)(i % 2001) * 0.01f - 10;
      opd_compiled_graph *g[3] = {compile(chains[c].chain, n, false),
                                  compile(chains[c].chain, n, true),
                                  compile(chains[c].chain, n, true)};
      if (opd_graph_c_tier_start(&co)) fail("the C tier");
      uint64_t t0 = now_ns();
      run(g[2], in); /* submits its program */
      opd_graph_c_tier_drain();
      double to_c_ms = (double)(now_ns() - t0) / 1e6;
      opd_graph_c_tier_stop();
      run(g[1], in); /* the tier is stopped: interpreted for good */
      if (strcmp(tier_of(g[1]), "interpreter") || strcmp(tier_of(g[2]), "c"))
        die("%s", "the tiers are not the interpreter's and the C's");
      /* about 50 ms of runs a measurement, at ~1 ns an element of each of ~6 operations */
      int reps = (int)(50e6 / (6.0 * (double)n));
      reps = reps < 3 ? 3 : reps > 63 ? 63 : reps;
      samples by[3] = {{0}};           /* each graph's medians, one a round */
      for (int r = 0; r < rounds; r++) /* the order of the graphs rotates with the round */
        for (int k = 0; k < 3; k++) time_runs(g[(k + r) % 3], in, reps, &by[(k + r) % 3]);
      double u = median_us(&by[0]), i = median_us(&by[1]), cc_us = median_us(&by[2]);
      printf("%-11s %9lld %11.1f %11.1f %11.1f %8.2fx %8.2fx %9.1f\n", chains[c].name, (long long)n,
             u, i, cc_us, i / cc_us, u / cc_us, to_c_ms);
      fflush(stdout);
      for (int k = 0; k < 3; k++) opd_compiled_graph_release(g[k]);
      opd_tensor_release(in);
    }
  }
  if (own_dir) {
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0) fprintf(stderr, "opd-bench-c-tier: could not remove %s\n", dir);
  }
  return 0;
}

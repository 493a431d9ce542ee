/* test_graph_cuda_host.c: the CUDA source of fused programs run on the host.
 *
 * [Note: The CUDA source run on the host]
 * No GPU runs in CI, and NVRTC only says that a program compiles (test_graph_cuda.c). To
 * check what the source computes, the suite compiles it as C++ with the host compiler ("c++",
 * or $CXX) behind a few lines that stand in for CUDA's built-ins (__global__, __device__,
 * blockIdx and the rest, __int_as_float, __longlong_as_double), loads it, and runs every
 * thread of a grid in turn on CPU tensors. The parameters are the launch's own: the bytes
 * opd__pw_cuda_params writes, checked against the size of the struct the source declares.
 * So this covers the index arithmetic of the grid-stride loop (its three paths: one
 * dimension, 32-bit and, forced by INDEX64, 64-bit), the offsets of broadcast and
 * transposed operands, bool loads and stores, immediates' bits, the parameters' layout
 * against the host's struct, and the formulas, compared with the CPU interpreter within the
 * numerics check's tolerance ([Note: Numerics and benefit of fused groups] in
 * decisions.c), which is what a GPU's first run compares. What it cannot cover is CUDA's
 * own: its math library, its fused multiply-adds, the launch; tests/gpu/run_device_checks.sh
 * runs the graph fixture on a device where one is lent. The suite passes, saying SKIP,
 * where no C++ compiler runs. */
#include <check.h>
#include <dlfcn.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "exec/compiled.h"
#include "ir/graph_internal.h"
#include "graph_runner.h"
#include "opd/cuda_nvrtc.h"
#include "opd/error.h"
#include "opd/graph_exec.h"
#include "opd/memory.h"
#include "plan/plan.h"
#include "ir/sbuf.h"
#include "test_files.h"
#include "test_graph_programs.h"
#include "test_graph_util.h"

Suite *opd_test_graph_cuda_host_suite(void);

/* What every translation unit starts with: CUDA's built-ins as the host has them. */
static const char shim[] =
    "#include <math.h>\n"
    "#include <string.h>\n"
    "struct opd_host_dim3 { unsigned x, y, z; };\n"
    "static opd_host_dim3 gridDim, blockDim, blockIdx, threadIdx;\n"
    "#define __global__\n"
    "#define __device__\n"
    "#define __forceinline__ inline\n"
    "static inline float __int_as_float(int i) { float f; memcpy(&f, &i, sizeof f); return f; }\n"
    "static inline double __longlong_as_double(long long i) {\n"
    "  double d;\n"
    "  memcpy(&d, &i, sizeof d);\n"
    "  return d;\n"
    "}\n";

/* Program k of a unit: its source in namespace pK with its entry renamed, and two functions
 * with C linkage, the size of its parameters and the launch of a grid. */
static void append_program(opd__sbuf *unit, uint32_t k, const opd__pw_program *p) {
  opd__sbuf src = {0};
  ck_assert_int_eq(opd__pw_cuda_source(p, &src), 0);
  ck_assert(!src.failed);
  opd__sbuf_printf(
      unit,
      "namespace p%u {\n#define " OPD__PW_CUDA_ENTRY " entry_%u\n%s#undef " OPD__PW_CUDA_ENTRY "\n"
      "extern \"C\" unsigned long params_size_%u(void) { return sizeof(opd_params); }\n"
      "extern \"C\" void launch_%u(const void *params, unsigned grid, unsigned block) {\n"
      "  opd_params a;\n"
      "  memcpy(&a, params, sizeof a);\n"
      "  gridDim.x = grid, blockDim.x = block;\n"
      "  for (unsigned b = 0; b < grid; b++)\n"
      "    for (unsigned t = 0; t < block; t++) {\n"
      "      blockIdx.x = b, threadIdx.x = t;\n"
      "      entry_%u(a);\n"
      "    }\n"
      "}\n"
      "}\n",
      k, k, src.data, k, k, k);
  opd__sbuf_free(&src);
}

static const char *cxx(void) {
  const char *c = getenv("CXX");
  return c && c[0] ? c : "c++";
}

/* Compiles a unit into a shared object, with the compiler's `flags`, and loads it: its
 * handle. */
static void *load_unit(const opd__sbuf *unit, const char *flags) {
  char dir[] = "/tmp/opd-cuda-host-XXXXXX", src[64], lib[64], cmd[512];
  ck_assert_ptr_nonnull(mkdtemp(dir));
  snprintf(src, sizeof src, "%s/programs.cpp", dir);
  snprintf(lib, sizeof lib, "%s/programs.so", dir);
  FILE *f = fopen(src, "w");
  ck_assert_ptr_nonnull(f);
  ck_assert_uint_eq(fwrite(unit->data, 1, unit->len, f), unit->len);
  ck_assert_int_eq(fclose(f), 0);
  snprintf(cmd, sizeof cmd, "%s -std=c++17 -O1 -fPIC -shared %s -o %s %s", cxx(), flags, lib, src);
  ck_assert_msg(system(cmd) == 0, "%s failed on:\n%s", cmd, unit->data);
  void *h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
  ck_assert_msg(h != NULL, "%s", dlerror());
  unlink(src);
  unlink(lib);
  rmdir(dir);
  return h;
}

typedef unsigned long (*params_size_fn)(void);
typedef void (*launch_fn)(const void *params, unsigned grid, unsigned block);

static void *symbol(void *h, const char *what, uint32_t k) {
  char name[64];
  snprintf(name, sizeof name, "%s_%u", what, k);
  void *s = dlsym(h, name);
  ck_assert_msg(s != NULL, "%s", name);
  return s;
}

/* Whether a and b (of one shape) agree as the numerics check asks: within rtol 1e-5 and atol
 * 1e-6, NaN where NaN, infinities exactly, bools exactly. */
static void assert_agree(const opd_tensor *a, const opd_tensor *b, const char *what) {
  ck_assert_int_eq(a->dtype, b->dtype);
  ck_assert_int_eq(a->numel, b->numel);
  for (int64_t i = 0; i < a->numel; i++) {
    double x = at(a, i), y = at(b, i);
    bool ok = isnan(y) || isinf(y) ? (isnan(x) && isnan(y)) || x == y
                                   : fabs(x - y) <= 1e-6 + 1e-5 * fabs(y);
    ck_assert_msg(ok, "%s, element %lld: %.9g on the host's CUDA against %.9g", what, (long long)i,
                  x, y);
  }
}

/* A group of a compiled graph and its operands: the run's inputs (through views or not),
 * the graph's constants, and for values other kernels compute (which the suite does not
 * run), tensors of their inferred geometry and dtype with values of their own. */
typedef struct host_case {
  const opd__pw_program *p;
  opd_tensor *ins[OPD__PW_CUDA_MAX_OPERANDS];
  bool made[OPD__PW_CUDA_MAX_OPERANDS]; /* ins[i] is the case's own reference */
} host_case;

static void host_case_free(host_case *c) {
  for (uint32_t i = 0; i < OPD__PW_CUDA_MAX_OPERANDS; i++)
    if (c->made[i]) opd_tensor_release(c->ins[i]);
}

/* A tensor of a value's metadata (sizes, strides, dtype) with values in [-2, 2), or bools. */
static opd_tensor *stand_in(const opd_tensor *meta, uint32_t seed) {
  opd_tensor *t = NULL;
  ck_assert_int_eq(opd_tensor_empty_strided(opd_tensor_sizes(meta), opd_tensor_strides(meta),
                                            meta->ndim, opd_tensor_dtype(meta),
                                            (opd_device){OPD_DEVICE_CPU, -1}, &t),
                   0);
  size_t n = t->storage->nbytes / opd_dtype_size(opd_tensor_dtype(t));
  for (size_t i = 0; i < n; i++) {
    uint32_t h = (uint32_t)(i * 2654435761u) ^ seed;
    if (opd_tensor_dtype(t) == OPD_BOOL)
      ((bool *)opd_tensor_data(t))[i] = h >> 7 & 1;
    else
      ((float *)opd_tensor_data(t))[i] = (float)(h % 4096) / 1024.0f - 2.0f;
  }
  return t;
}

/* The groups of cg, appended to cases (at most cap in all) with their operands: how many. */
static uint32_t cases_of(const opd_compiled_graph *cg, opd_tensor *const *inputs, host_case *cases,
                         uint32_t ncases, uint32_t cap) {
  uint32_t added = 0;
  for (uint32_t gi = 0; gi < cg->plan->ngroups && ncases + added < cap; gi++) {
    const opd__pw_program *p = &cg->plan->groups[gi].prog;
    if (p->nloads + p->nstores > OPD__PW_CUDA_MAX_OPERANDS) continue; /* runs unfused on CUDA */
    host_case *c = &cases[ncases + added];
    *c = (host_case){.p = p};
    for (uint32_t i = 0; i < p->nloads; i++) {
      const opd__pw_load *l = &p->loads[i];
      if (l->constant)
        c->ins[i] = l->constant;
      else if (opd__gvalue_is_input(cg->g, l->value))
        c->ins[i] = inputs[cg->g->values[l->value].output];
      else
        c->made[i] = true, c->ins[i] = stand_in(cg->g->values[l->value].meta, gi * 31 + i);
    }
    added++;
  }
  return added;
}

/* New contiguous tensors for the program's stores, as a fused run makes them. */
static void make_outputs(const opd_compiled_graph *cg, const opd__pw_program *p,
                         opd_tensor **outs) {
  for (uint32_t k = 0; k < p->nstores; k++) {
    const opd_tensor *m = cg->g->values[p->stores[k].value].meta;
    ck_assert_int_eq(opd_tensor_empty(opd_tensor_sizes(m), m->ndim, opd_tensor_dtype(m),
                                      (opd_device){OPD_DEVICE_CPU, -1}, &outs[k]),
                     0);
  }
}

/* Each case's program run by the interpreter and by its CUDA source on the host, on grids of
 * `grid` blocks of `block` threads (0 blocks: as opd_nvrtc_function_launch sizes it, 256
 * threads a block and enough blocks for one element a thread). INDEX64 as `flags` sends
 * every program of more than one dimension through its 64-bit index arithmetic, which
 * otherwise only iteration spaces past 2^32 elements take. */
#define INDEX64 "-DOPD_INDEX32_MAX=0"
static void run_cases(const opd_compiled_graph *const *cgs, const host_case *cases, uint32_t n,
                      unsigned grid, unsigned block, const char *flags) {
  opd__sbuf unit = {0};
  opd__sbuf_printf(&unit, "%s", shim);
  for (uint32_t k = 0; k < n; k++) append_program(&unit, k, cases[k].p);
  ck_assert(!unit.failed);
  void *h = load_unit(&unit, flags);
  opd__sbuf_free(&unit);
  for (uint32_t k = 0; k < n; k++) {
    const opd__pw_program *p = cases[k].p;
    opd_tensor *want[OPD__PW_CUDA_MAX_OPERANDS], *got[OPD__PW_CUDA_MAX_OPERANDS];
    make_outputs(cgs[k], p, want);
    make_outputs(cgs[k], p, got);
    ck_assert_msg(opd__pw_run(p, NULL, cases[k].ins, want) == 0, "%s", opd_last_error());
    uint64_t params[OPD__PW_CUDA_PARAMS_SIZE / 8];
    size_t size = 0;
    ck_assert_msg(opd__pw_cuda_params(p, cases[k].ins, got, params, &size) == 0, "%s",
                  opd_last_error());
    ck_assert_uint_eq(size, ((params_size_fn)symbol(h, "params_size", k))());
    unsigned g = grid ? grid : (unsigned)((p->numel + 255) / 256), b = grid ? block : 256;
    ((launch_fn)symbol(h, "launch", k))(params, g, b);
    char what[64];
    for (uint32_t s = 0; s < p->nstores; s++) {
      snprintf(what, sizeof what, "program %u, store %u", k, s);
      assert_agree(got[s], want[s], what);
      opd_tensor_release(got[s]);
      opd_tensor_release(want[s]);
    }
  }
  dlclose(h);
}

static bool have_cxx(void) {
  return !opd_test_no_compiler(cxx(), "test_graph_cuda_host");
}

/* Random pointwise graphs (test_graph_programs.h) on inputs in place and transposed, with
 * broadcasts and bool masks: the source's stores agree with the interpreter's, on a grid of
 * fewer threads than elements (each thread loops) and on the launch's own grid. */
START_TEST(test_random_programs_on_the_host) {
  if (!have_cxx()) return;
  rng_state = 4242;
  random_inputs r;
  random_inputs_make(&r);
  enum { TRIALS = 12, CAP = 8 * TRIALS * 2 };
  opd_compiled_graph *owned[TRIALS * 2];
  const opd_compiled_graph *cgs[CAP];
  host_case cases[CAP];
  uint32_t n = 0, ngroups = 0;
  for (int trial = 0; trial < TRIALS; trial++) {
    opd_graph *g[2] = {gnew(), gnew()};
    uint32_t nout;
    random_graph(g, &nout);
    for (int layout = 0; layout < 2; layout++) {
      opd_compiled_graph *cg = owned[trial * 2 + layout] = gcompile_with(g[layout], NULL, 0, NULL);
      opd_tensor *in[] = {layout ? r.xt : r.x, r.y, r.z, r.m};
      uint32_t added = cases_of(cg, in, cases, n, CAP);
      for (uint32_t k = n; k < n + added; k++) cgs[k] = cg;
      n += added;
      ngroups += cg->plan->ngroups;
    }
  }
  ck_assert_uint_eq(n, ngroups);
  ck_assert_uint_ge(n, 12);
  run_cases(cgs, cases, n, 2, 3, "");
  run_cases(cgs, cases, n, 0, 0, INDEX64);
  for (uint32_t k = 0; k < n; k++) host_case_free(&cases[k]);
  for (int k = 0; k < TRIALS * 2; k++) opd_compiled_graph_release(owned[k]);
  random_inputs_release(&r);
}
END_TEST

/* Every instruction the programs have, on NaN, infinities, signed zeros, subnormals and large
 * values, with a broadcast row: the float and the bool stores agree with the interpreter's. */
START_TEST(test_every_instruction_on_the_host) {
  if (!have_cxx()) return;
  opd_compiled_graph *cg = gcompile_with(every_operator_graph(), NULL, 0, NULL);
  opd_tensor *x, *b;
  every_operator_inputs(&x, &b);
  opd_tensor *in[] = {x, b};
  host_case cases[8];
  const opd_compiled_graph *cgs[8];
  uint32_t n = cases_of(cg, in, cases, 0, 8);
  ck_assert_uint_eq(n, cg->plan->ngroups);
  ck_assert_uint_gt(n, 0);
  bool seen[OPD__PW_NUM_OPS] = {false};
  for (uint32_t k = 0; k < n; k++) {
    cgs[k] = cg;
    for (uint32_t i = 0; i < cases[k].p->ncode; i++) seen[cases[k].p->code[i].op] = true;
  }
  for (int op = 0; op < OPD__PW_NUM_OPS; op++)
    if (op != OPD__PW_FILL)
      ck_assert_msg(seen[op], "no program has instruction %s", opd__pw_opcode_name(op));
  run_cases(cgs, cases, n, 3, 5, "");
  run_cases(cgs, cases, n, 0, 0, INDEX64);
  opd_tensor_release(x);
  opd_tensor_release(b);
  opd_compiled_graph_release(cg);
}
END_TEST

/* A program over more elements than one block, not a whole number of blocks, on the launch's
 * grid and on a grid of two blocks whose threads each loop over hundreds of elements. */
START_TEST(test_long_program_on_the_host) {
  if (!have_cxx()) return;
  const int64_t rows = 7, cols = 769; /* 5,383 elements: 21 blocks and part of one */
  opd_graph *g = gnew();
  int x = IN(g, rows, cols), y = IN(g, cols);
  int s = NODE(g, "aten::mul.Tensor", R(x), R(y));
  int t = NODE(g, "aten::tanh", R(s));
  OUT(g, NODE(g, "aten::add.Tensor", R(t), R(x), V(D(0.5))));
  opd_compiled_graph *cg = gcompile_with(g, NULL, 0, NULL);
  opd_tensor *xs = mk(OPD_FLOAT32, SHAPE(rows, cols), NULL),
             *ys = mk(OPD_FLOAT32, SHAPE(cols), NULL);
  for (int64_t i = 0; i < xs->numel; i++)
    ((float *)opd_tensor_data(xs))[i] = (float)(i % 97) * 0.03f - 1.4f;
  for (int64_t i = 0; i < ys->numel; i++)
    ((float *)opd_tensor_data(ys))[i] = (float)(i % 13) * 0.2f - 1.1f;
  opd_tensor *in[] = {xs, ys};
  host_case cases[1];
  const opd_compiled_graph *cgs[] = {cg};
  ck_assert_uint_eq(cases_of(cg, in, cases, 0, 1), 1);
  ck_assert_int_eq(cases[0].p->numel, xs->numel);
  run_cases(cgs, cases, 1, 0, 0, "");
  run_cases(cgs, cases, 1, 2, 5, INDEX64);
  opd_tensor_release(xs);
  opd_tensor_release(ys);
  opd_compiled_graph_release(cg);
}
END_TEST

/* Whether a program's source compiles for sm_90 (true in a build without CUDA, which has no
 * NVRTC to ask). */
static bool compiles_for_sm90(const opd__pw_program *p, char **log) {
  opd__sbuf src = {0};
  ck_assert_int_eq(opd__pw_cuda_source(p, &src), 0);
  void *image = NULL;
  size_t size = 0;
  *log = NULL;
  int rc = opd_nvrtc_compile_cubin(src.data, OPD__PW_CUDA_ENTRY, 90, &image, &size, log);
  opd__sbuf_free(&src);
  opd__free(image);
  return rc == 0 || rc == OPD_EUNAVAILABLE;
}

/* The graphs of the fixture (tests/fixtures/graphs/public.json: traced GPT-2 block, attention,
 * RMSNorm, softmax forms, ...), compiled on the CPU as opd-graph-conformance compiles them:
 * every fused group's source compiles for sm_90 and computes on the host what the
 * interpreter computes, on the fixture's inputs and stand-ins for the values other kernels
 * compute. A group's program is the same on every device, so these are the programs
 * `--device cuda` runs. */
START_TEST(test_fixture_programs_on_the_host) {
  if (!have_cxx()) return;
  json_t *doc = opd_test_load_shared("graphs/public.json");
  const json_t *graphs = json_object_get(doc, "graphs"), *schemas = json_object_get(doc, "schemas");
  enum { GRAPHS = 64, CAP = 256 };
  size_t ngraphs = json_array_size(graphs);
  ck_assert_uint_gt(ngraphs, 0);
  ck_assert_uint_le(ngraphs, GRAPHS);
  opd_compiled_graph *owned[GRAPHS];
  opd_tensor **inputs[GRAPHS];
  uint32_t ninputs[GRAPHS];
  const opd_compiled_graph *cgs[CAP];
  host_case cases[CAP];
  uint32_t n = 0, ngroups = 0;
  for (size_t i = 0; i < ngraphs; i++) {
    graph_desc d;
    char why[256];
    ck_assert_msg(
        graph_desc_read(json_array_get(graphs, i), schemas, &d, &inputs[i], why, sizeof why) == 0,
        "graph %zu: %s", i, why);
    ninputs[i] = d.ninputs;
    opd_graph *g = NULL;
    ck_assert_msg(graph_desc_build(&d, (opd_device){OPD_DEVICE_CPU, -1}, &g) == 0, "graph %zu: %s",
                  i, opd_last_error());
    graph_desc_free(&d);
    owned[i] = gcompile_with(g, NULL, 0, NULL);
    ngroups += owned[i]->plan->ngroups;
    uint32_t added = cases_of(owned[i], inputs[i], cases, n, CAP);
    for (uint32_t k = n; k < n + added; k++) cgs[k] = owned[i];
    n += added;
  }
  ck_assert_uint_eq(n, ngroups); /* none past the operand limit */
  ck_assert_uint_gt(n, 0);
  for (uint32_t k = 0; k < n; k++) {
    char *log;
    ck_assert_msg(compiles_for_sm90(cases[k].p, &log), "program %u: %s", k, log ? log : "");
    opd__free(log);
  }
  run_cases(cgs, cases, n, 0, 0, "");
  for (uint32_t k = 0; k < n; k++) host_case_free(&cases[k]);
  for (size_t i = 0; i < ngraphs; i++) {
    opd_compiled_graph_release(owned[i]);
    for (uint32_t k = 0; k < ninputs[i]; k++) opd_tensor_release(inputs[i][k]);
    free(inputs[i]);
  }
  json_decref(doc);
}
END_TEST

static void setup(void) {
  ck_assert_int_eq(opd_kernels_register(), 0);
}

Suite *opd_test_graph_cuda_host_suite(void) {
  Suite *s = suite_create("graph_cuda_host");
  TCase *tc = tcase_create("core");
  tcase_set_timeout(tc, 120);
  tcase_add_checked_fixture(tc, setup, NULL);
  tcase_add_test(tc, test_random_programs_on_the_host);
  tcase_add_test(tc, test_every_instruction_on_the_host);
  tcase_add_test(tc, test_long_program_on_the_host);
  tcase_add_test(tc, test_fixture_programs_on_the_host);
  suite_add_tcase(s, tc);
  return s;
}

/* test_graph_cuda.c: fused programs written as CUDA source ([Note: Fused programs on CUDA] in
 * graph/src/plan/fused_cuda.c), compiled by NVRTC for sm_90 where no device is needed: every
 * instruction the programs have, immediates of every kind (NaN and infinities included),
 * broadcasts and bool loads and stores. A program has the same instructions on every
 * device, so the graphs are built on the CPU. The programs run on a device only where one
 * is lent (tests/gpu/run_device_checks.sh: the graph fixture with --device cuda). */
#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "exec/compiled.h"
#include "opd/cuda_nvrtc.h"
#include "opd/error.h"
#include "opd/graph_exec.h"
#include "opd/memory.h"
#include "plan/plan.h"
#include "test_graph_programs.h"
#include "test_graph_util.h"

Suite *opd_test_graph_cuda_suite(void);

START_TEST(test_sources_compile_for_sm90) {
  opd_compiled_graph *cg = gcompile_with(every_operator_graph(), NULL, 0, NULL);
  ck_assert_uint_gt(cg->plan->ngroups, 0);
  bool seen[OPD__PW_NUM_OPS] = {false};
  for (uint32_t gi = 0; gi < cg->plan->ngroups; gi++) {
    const opd__pw_program *p = &cg->plan->groups[gi].prog;
    for (uint32_t k = 0; k < p->ncode; k++) seen[p->code[k].op] = true;
    opd__sbuf src = {0};
    ck_assert_int_eq(opd__pw_cuda_source(p, &src), 0);
    void *image = NULL;
    size_t size = 0;
    char *log = NULL;
    int rc = opd_nvrtc_compile_cubin(src.data, OPD__PW_CUDA_ENTRY, 90, &image, &size, &log);
    if (rc == OPD_EUNAVAILABLE) { /* a build without CUDA */
      opd__sbuf_free(&src);
      opd_compiled_graph_release(cg);
      return;
    }
    ck_assert_msg(rc == 0, "group %u: %s\n%s\n%s", gi, opd_last_error(), log ? log : "", src.data);
    ck_assert_uint_gt(size, 0);
    opd__free(image);
    opd__free(log);
    opd__sbuf_free(&src);
  }
  /* the chain reached every instruction but the fill (no operator in the table makes it) */
  for (int op = 0; op < OPD__PW_NUM_OPS; op++)
    if (op != OPD__PW_FILL)
      ck_assert_msg(seen[op], "no program has instruction %s", opd__pw_opcode_name(op));
  opd_compiled_graph_release(cg);
}
END_TEST

START_TEST(test_source_of_too_many_operands) {
  opd__pw_load loads[60] = {{0}};
  opd__pw_program p = {.ndim = 1, .sizes = {4}, .numel = 4, .loads = loads, .nloads = 60};
  opd__sbuf src = {0};
  ck_assert_int_eq(opd__pw_cuda_source(&p, &src), OPD_EINVAL);
  ck_assert_ptr_nonnull(strstr(opd_last_error(), "60 tensors"));
  opd__sbuf_free(&src);
}
END_TEST

START_TEST(test_compile_errors_come_back) {
  void *image = NULL;
  size_t size = 0;
  char *log = NULL;
  int rc = opd_nvrtc_compile_cubin("extern \"C\" __global__ void f() { undeclared(); }", "f", 90,
                                   &image, &size, &log);
  if (rc == OPD_EUNAVAILABLE) return;
  ck_assert_int_eq(rc, OPD_EINVAL);
  ck_assert_ptr_null(image);
  ck_assert_ptr_nonnull(log);
  ck_assert_ptr_nonnull(strstr(log, "undeclared"));
  opd__free(log);
  ck_assert_int_eq(opd_nvrtc_compile_cubin("", "f", 7, &image, &size, &log), OPD_EINVAL);
}
END_TEST

/* A graph on a CUDA device compiles where none is (its shapes come from the Meta kernels)
 * and fuses when the CUDA kernels are registered; the introspection carries the source. */
START_TEST(test_cuda_groups_show_their_source) {
  opd_graph *g = gnew();
  int64_t sizes[] = {16, 4};
  opd_graph_input_spec in = {OPD_FLOAT32, sizes, 2, {OPD_DEVICE_CUDA, 0}, OPD_GRAPH_INPUT};
  int x = opd_graph_add_input(g, &in);
  ck_assert_int_ge(x, 0);
  int e = NODE(g, "aten::exp", R(x));
  int t = NODE(g, "aten::tanh", R(e));
  OUT(g, NODE(g, "aten::mul.Tensor", R(t), R(x)));
  opd_compiled_graph *cg = gcompile_with(g, NULL, 0, NULL);
  json_t *doc = opd_compiled_graph_json(cg);
  ck_assert_ptr_nonnull(doc);
  json_t *groups = json_object_get(doc, "groups");
  const opd_kernel *k = opd_op_lookup(opd_find_schema("aten::exp"), opd_keyset_of(OPD_KEY_CUDA));
  if (k && k->name && strncmp(k->name, "opd__cuda_", 10) == 0) {
    ck_assert_uint_eq(json_array_size(groups), 1);
    json_t *grp = json_array_get(groups, 0);
    ck_assert_str_eq(json_string_value(json_object_get(grp, "device")), "cuda");
    const char *src = json_string_value(json_object_get(grp, "source"));
    ck_assert_ptr_nonnull(src);
    ck_assert_ptr_nonnull(strstr(src, "tanhf(x)"));
    ck_assert_ptr_nonnull(strstr(src, OPD__PW_CUDA_ENTRY));
  } else { /* no device: the CUDA key holds the kernel that says so, and nothing fuses */
    ck_assert_uint_eq(json_array_size(groups), 0);
  }
  json_decref(doc);
  opd_compiled_graph_release(cg);
}
END_TEST

static void setup(void) {
  ck_assert_int_eq(opd_kernels_register(), 0);
}

Suite *opd_test_graph_cuda_suite(void) {
  Suite *s = suite_create("graph_cuda");
  TCase *tc = tcase_create("core");
  tcase_set_timeout(tc, 120);
  tcase_add_checked_fixture(tc, setup, NULL);
  tcase_add_test(tc, test_sources_compile_for_sm90);
  tcase_add_test(tc, test_source_of_too_many_operands);
  tcase_add_test(tc, test_compile_errors_come_back);
  tcase_add_test(tc, test_cuda_groups_show_their_source);
  suite_add_tcase(s, tc);
  return s;
}

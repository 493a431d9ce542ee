/* test_main.c: the one table of test suites. `opd_tests` runs them all, `opd_tests NAME`
 * one of them (ctest runs each suite as its own test). Check forks each test case, so a
 * crash fails only that case. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "opd/log.h"

Suite *opd_test_keys_suite(void);
Suite *opd_test_schema_suite(void);
Suite *opd_test_registry_suite(void);
Suite *opd_test_calls_suite(void);
Suite *opd_test_tensor_suite(void);
Suite *opd_test_elementwise_suite(void);
Suite *opd_test_reduce_suite(void);
Suite *opd_test_linalg_suite(void);
Suite *opd_test_server_suite(void);
Suite *opd_test_client_suite(void);
Suite *opd_test_rcu_suite(void);
Suite *opd_test_plugin_suite(void);
Suite *opd_test_admin_suite(void);
Suite *opd_test_status_suite(void);
Suite *opd_test_rpc_suite(void);
Suite *opd_test_gpu_server_suite(void);
Suite *opd_test_cuda_suite(void);
Suite *opd_test_wire_suite(void);
Suite *opd_test_limits_suite(void);
Suite *opd_test_fault_suite(void);
Suite *opd_test_checked_suite(void);
Suite *opd_test_vec_math_suite(void);
Suite *opd_test_graph_plugin_suite(void);
Suite *opd_test_graph_cuda_suite(void);
Suite *opd_test_graph_cuda_host_suite(void);
Suite *opd_test_graph_ir_suite(void);
Suite *opd_test_graph_ops_suite(void);
Suite *opd_test_graph_passes_suite(void);
Suite *opd_test_graph_exec_suite(void);
Suite *opd_test_graph_cache_suite(void);
Suite *opd_test_graph_cc_suite(void);
Suite *opd_test_graph_c_tier_suite(void);
Suite *opd_test_graph_server_suite(void);
Suite *opd_test_nn_ops_suite(void);
Suite *opd_test_sched_suite(void);
Suite *opd_test_reduce_span_suite(void);
Suite *opd_test_parallel_suite(void);

/* Two suites a line (clang-format gives a list this long one a line). */
/* clang-format off */
static const struct {
  const char *name;
  Suite *(*make)(void);
} suites[] = {
    {"keys", opd_test_keys_suite},         {"schema", opd_test_schema_suite},
    {"registry", opd_test_registry_suite}, {"calls", opd_test_calls_suite},
    {"tensor", opd_test_tensor_suite},     {"elementwise", opd_test_elementwise_suite},
    {"reduce", opd_test_reduce_suite},     {"linalg", opd_test_linalg_suite},
    {"server", opd_test_server_suite},     {"client", opd_test_client_suite},
    {"rcu", opd_test_rcu_suite},           {"plugin", opd_test_plugin_suite},
    {"admin", opd_test_admin_suite},       {"status", opd_test_status_suite},
    {"rpc", opd_test_rpc_suite},           {"gpu_server", opd_test_gpu_server_suite},
    {"cuda", opd_test_cuda_suite},         {"wire", opd_test_wire_suite},
    {"limits", opd_test_limits_suite},     {"fault", opd_test_fault_suite},
    {"checked", opd_test_checked_suite},   {"graph_ir", opd_test_graph_ir_suite},
    {"graph_ops", opd_test_graph_ops_suite}, {"graph_passes", opd_test_graph_passes_suite},
    {"graph_exec", opd_test_graph_exec_suite}, {"graph_cache", opd_test_graph_cache_suite},
    {"graph_server", opd_test_graph_server_suite}, {"nn_ops", opd_test_nn_ops_suite},
    {"vec_math", opd_test_vec_math_suite}, {"graph_plugin", opd_test_graph_plugin_suite},
    {"graph_cuda", opd_test_graph_cuda_suite},
    {"graph_cuda_host", opd_test_graph_cuda_host_suite}, {"reduce_span", opd_test_reduce_span_suite},
    {"sched", opd_test_sched_suite},       {"parallel", opd_test_parallel_suite},
    {"graph_cc", opd_test_graph_cc_suite}, {"graph_c_tier", opd_test_graph_c_tier_suite},
};
/* clang-format on */

int main(int argc, char **argv) {
  SRunner *runner = NULL;
  opd_log_set_level(OPD_LOG_ERROR);
  for (size_t i = 0; i < sizeof suites / sizeof *suites; i++) {
    if (argc > 1 && strcmp(argv[1], suites[i].name) != 0) continue;
    if (!runner)
      runner = srunner_create(suites[i].make());
    else
      srunner_add_suite(runner, suites[i].make());
  }
  if (!runner) {
    fprintf(stderr, "unknown suite '%s'\n", argc > 1 ? argv[1] : "");
    return 2;
  }
  srunner_run_all(runner, CK_NORMAL);
  int failed = srunner_ntests_failed(runner);
  srunner_free(runner);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

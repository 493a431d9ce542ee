/* test_graph_plugin.c: graph passes from plugins (opd/graph_pass.h's OPD_GRAPH_PASSES),
 * loaded and unloaded by the daemon's plugin loader (server/src/plugins.c) with the example
 * kernels/examples/double_neg_pass.c: the pass runs while the plugin is loaded and is gone
 * after its unload, a load that fails leaves none of its passes, and removing a pass waits for
 * the compilations running it ([Note: Removing a plugin pass under compilation]). */
#include <check.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "opd/error.h"
#include "opd/graph.h"
#include "opd/graph_exec.h"
#include "opd/graph_pass.h"
#include "opd/kernels.h"
#include "opd/tensor.h"
#include "plugins.h"
#include "test_files.h"

#ifndef OPD_EXAMPLE_PASS_PLUGIN
#error "OPD_EXAMPLE_PASS_PLUGIN (double_neg_pass.so)"
#endif

Suite *opd_test_graph_plugin_suite(void);

static const opd_device cpu = {OPD_DEVICE_CPU, -1};

/* exp(neg(neg(x))) on a [4] float tensor. */
static opd_graph *double_neg_graph(void) {
  opd_graph *g;
  ck_assert_int_eq(opd_graph_new(NULL, &g), 0);
  int64_t sizes[] = {4};
  opd_graph_input_spec in = {OPD_FLOAT32, sizes, 1, cpu, OPD_GRAPH_INPUT};
  int x = opd_graph_add_input(g, &in);
  opd_graph_arg a = opd_graph_arg_ref((uint32_t)x, 0);
  int n1 = opd_graph_add_node(g, "aten::neg", &a, 1);
  a = opd_graph_arg_ref((uint32_t)n1, 0);
  int n2 = opd_graph_add_node(g, "aten::neg", &a, 1);
  a = opd_graph_arg_ref((uint32_t)n2, 0);
  int e = opd_graph_add_node(g, "aten::exp", &a, 1);
  ck_assert_int_ge(e, 0);
  opd_graph_ref out = {(uint32_t)e, 0};
  ck_assert_int_eq(opd_graph_set_outputs(g, &out, 1), 0);
  ck_assert_int_eq(opd_graph_finish(g), 0);
  return g;
}

/* Compiles the graph and runs it once on x; the number of nodes the passes left. The
 * output must be exp(x) either way. */
static uint32_t compile_and_run(opd_graph_cache *cache, bool *hit) {
  opd_compiled_graph *cg;
  ck_assert_int_eq(opd_graph_compile(double_neg_graph(), NULL, cache, &cg, hit), 0);
  opd_tensor *x, *y;
  ck_assert_int_eq(opd_tensor_empty((int64_t[]){4}, 1, OPD_FLOAT32, cpu, &x), 0);
  float *xd = opd_tensor_data(x);
  for (int i = 0; i < 4; i++) xd[i] = 0.5f * (float)i - 1.0f;
  ck_assert_int_eq(opd_compiled_graph_run(cg, &x, 1, &y, 1), 0);
  for (int i = 0; i < 4; i++)
    ck_assert_float_eq_tol(((float *)opd_tensor_data(y))[i], expf(xd[i]), 1e-6f);
  opd_graph_stats st;
  opd_compiled_graph_stats(cg, &st);
  opd_tensor_release(x);
  opd_tensor_release(y);
  opd_compiled_graph_release(cg);
  return st.nodes_after;
}

static char dir[64];

static opd__plugins *plugins_with_copies(void) {
  snprintf(dir, sizeof dir, "/tmp/opd-graph-plugin-XXXXXX");
  ck_assert_ptr_nonnull(mkdtemp(dir));
  char path[128];
  snprintf(path, sizeof path, "%s/double_neg_pass.so", dir);
  opd_test_copy_file(OPD_EXAMPLE_PASS_PLUGIN, path);
  snprintf(path, sizeof path, "%s/double_neg_again.so", dir);
  opd_test_copy_file(OPD_EXAMPLE_PASS_PLUGIN, path);
  opd__plugins *p;
  ck_assert_int_eq(opd__plugins_new(dir, &p), 0);
  return p;
}

static void remove_copies(void) {
  char path[128];
  snprintf(path, sizeof path, "%s/double_neg_pass.so", dir);
  unlink(path);
  snprintf(path, sizeof path, "%s/double_neg_again.so", dir);
  unlink(path);
  rmdir(dir);
}

START_TEST(test_pass_lives_with_its_plugin) {
  opd__plugins *p = plugins_with_copies();
  opd_graph_cache *cache;
  ck_assert_int_eq(opd_graph_cache_new(8, &cache), 0);
  bool hit;
  uint32_t without = compile_and_run(cache, &hit);
  ck_assert(!hit);
  json_t *answer = NULL;
  ck_assert_int_eq(opd__plugins_load(p, "double_neg_pass.so", &answer), 0);
  ck_assert_int_eq(json_integer_value(json_object_get(answer, "extensions")), 1);
  ck_assert_uint_eq(json_array_size(json_object_get(answer, "registrations")), 0);
  json_decref(answer);
  /* the pass folds the negations away (dce then removes the inner one), and the graph is
   * not served from the cache entry compiled without it */
  ck_assert_uint_eq(compile_and_run(cache, &hit), without - 2);
  ck_assert(!hit);
  ck_assert_uint_eq(compile_and_run(cache, &hit), without - 2);
  ck_assert(hit);
  /* a second copy registers the same pass name: its load fails, and undoes what it did */
  answer = NULL;
  ck_assert_int_eq(opd__plugins_load(p, "double_neg_again.so", &answer), OPD_EINVAL);
  ck_assert_msg(strstr(opd_last_error(), "fold_double_neg"), "%s", opd_last_error());
  ck_assert_ptr_null(answer);
  ck_assert_uint_eq(compile_and_run(cache, &hit), without - 2); /* the first one's pass runs */
  /* unloading removes the pass: the graph compiles as without it (the first entry again) */
  ck_assert_int_eq(opd__plugins_unload(p, "double_neg_pass.so"), 0);
  ck_assert_uint_eq(compile_and_run(cache, &hit), without);
  ck_assert(hit);
  /* and the name is free: the copy that failed loads now */
  ck_assert_int_eq(opd__plugins_load(p, "double_neg_again.so", &answer), 0);
  json_decref(answer);
  ck_assert_uint_eq(compile_and_run(cache, &hit), without - 2);
  /* freeing the loader (the daemon's stop) removes it too */
  opd__plugins_free(p);
  ck_assert_uint_eq(compile_and_run(cache, &hit), without);
  opd_graph_cache_free(cache);
  remove_copies();
}
END_TEST

/* A pass that waits inside until told to go on. */
typedef struct gate {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  bool entered, open;
  atomic_bool unregistered;
  int64_t id;
} gate;

static int waiting_pass(opd_graph *g, void *data, uint64_t *hits) {
  (void)g;
  (void)hits;
  gate *gt = data;
  pthread_mutex_lock(&gt->mu);
  gt->entered = true;
  pthread_cond_broadcast(&gt->cv);
  while (!gt->open) pthread_cond_wait(&gt->cv, &gt->mu);
  pthread_mutex_unlock(&gt->mu);
  return 0;
}

static void *compile_thread(void *arg) {
  (void)arg;
  bool hit;
  compile_and_run(NULL, &hit);
  return NULL;
}

static void *unregister_thread(void *arg) {
  gate *gt = arg;
  ck_assert_int_eq(opd_graph_pass_unregister(gt->id), 0);
  atomic_store(&gt->unregistered, true);
  return NULL;
}

START_TEST(test_unregister_waits_for_compilations) {
  gate gt = {.mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER};
  atomic_init(&gt.unregistered, false);
  gt.id = opd_graph_pass_register("waiting_pass", 1, OPD_GRAPH_PASS_PRE, waiting_pass, &gt);
  ck_assert_int_gt(gt.id, 0);
  pthread_t compiler, remover;
  ck_assert_int_eq(pthread_create(&compiler, NULL, compile_thread, NULL), 0);
  pthread_mutex_lock(&gt.mu);
  while (!gt.entered) pthread_cond_wait(&gt.cv, &gt.mu);
  pthread_mutex_unlock(&gt.mu);
  ck_assert_int_eq(pthread_create(&remover, NULL, unregister_thread, &gt), 0);
  /* the removal cannot finish while the compilation is inside the pass */
  nanosleep(&(struct timespec){0, 100 * 1000 * 1000}, NULL);
  ck_assert(!atomic_load(&gt.unregistered));
  pthread_mutex_lock(&gt.mu);
  gt.open = true;
  pthread_cond_broadcast(&gt.cv);
  pthread_mutex_unlock(&gt.mu);
  pthread_join(compiler, NULL);
  pthread_join(remover, NULL);
  ck_assert(atomic_load(&gt.unregistered));
  /* a compilation that starts now does not take the pass */
  gt.entered = false;
  bool hit;
  compile_and_run(NULL, &hit);
  ck_assert(!gt.entered);
  ck_assert_int_eq(opd_graph_pass_unregister(gt.id), OPD_ENOENT);
}
END_TEST

START_TEST(test_pass_without_an_unloading_host) {
  /* a host without record_undo (an old loader) refuses extension blocks, leaving nothing */
  opd_plugin_host host = {"plugin test", NULL, NULL, NULL};
  opd__lib_block block = {OPD__LIB_EXTENSION, "_", OPD_NO_KEY, NULL, __FILE__, __LINE__, NULL};
  opd_library m = {&block, &host, 0};
  ck_assert_int_eq(
      opd_graph_plugin_pass(&m, "orphan_pass", 1, OPD_GRAPH_PASS_PRE, waiting_pass, NULL),
      OPD_EINVAL);
  int64_t id = opd_graph_pass_register("orphan_pass", 1, OPD_GRAPH_PASS_PRE, waiting_pass, NULL);
  ck_assert_int_gt(id, 0); /* the name was given back */
  ck_assert_int_eq(opd_graph_pass_unregister(id), 0);
}
END_TEST

static void setup(void) {
  ck_assert_int_eq(opd_kernels_register(), 0);
}

Suite *opd_test_graph_plugin_suite(void) {
  Suite *s = suite_create("graph_plugin");
  TCase *tc = tcase_create("core");
  tcase_set_timeout(tc, 60);
  tcase_add_checked_fixture(tc, setup, NULL);
  tcase_add_test(tc, test_pass_lives_with_its_plugin);
  tcase_add_test(tc, test_unregister_waits_for_compilations);
  tcase_add_test(tc, test_pass_without_an_unloading_host);
  suite_add_tcase(s, tc);
  return s;
}

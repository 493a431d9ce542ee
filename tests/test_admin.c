/* test_admin.c: the admin listener (server/src/admin.c, plugins.c; docs/ADMIN.md) over
 * its Unix socket and TCP: the socket's mode, plugin loading by file name only (paths,
 * "..", symlinks and missing files refused), listing, registering a plugin kernel at
 * another key and a fallthrough, unloading refused while registrations remain, the TCP
 * token (missing and wrong refused), drain, and a stress run: 16 threads call
 * myops::scaled_add while the admin side registers and removes a kernel of it 1,000 times
 * and loads, empties and unloads a plugin overriding its kernels 100 times: no call fails,
 * every result is right, and under ASan nothing freed or unmapped is run. The same again
 * in a running daemon: 16 client-library connections call it over the protocol while an
 * admin connection makes the same changes.
 */
#include <arpa/inet.h>
#include <check.h>
#include <jansson.h>
#include <netinet/in.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "admin.h"
#include "opd/client.h"
#include "opd/server.h"
#include "opd/allocator.h"
#include "opd/introspect.h"
#include "opd/kernels.h"
#include "opd/tensor.h"
#include "opd/unboxed.h"

Suite *opd_test_admin_suite(void);

#if !defined(OPD_EXAMPLE_PLUGIN) || !defined(OPD_EXAMPLE_PLUGIN_IMPL)
#error "OPD_EXAMPLE_PLUGIN and OPD_EXAMPLE_PLUGIN_IMPL (scaled_add.so, scaled_add_impl.so)"
#endif

static char dir[32], sock_path[100], plugin_dir[64], token_path[64];

static void copy_file(const char *from, const char *to) {
  FILE *in = fopen(from, "rb"), *out = fopen(to, "wb");
  ck_assert(in && out);
  char buf[65536];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, in)) > 0) ck_assert_uint_eq(fwrite(buf, 1, n, out), n);
  fclose(in);
  fclose(out);
}

/* A temporary directory with plugins/scaled_add.so, plugins/second.so (scaled_add_impl.so:
 * the kernels without the def),
 * plugins/link.so (a symlink to it) and a token file. */
static void make_dirs(void) {
  snprintf(dir, sizeof dir, "/tmp/opd-admin-XXXXXX");
  ck_assert_ptr_nonnull(mkdtemp(dir));
  snprintf(sock_path, sizeof sock_path, "%s/admin.sock", dir);
  snprintf(plugin_dir, sizeof plugin_dir, "%s/plugins", dir);
  snprintf(token_path, sizeof token_path, "%s/token", dir);
  ck_assert_int_eq(mkdir(plugin_dir, 0700), 0);
  char path[256];
  snprintf(path, sizeof path, "%s/scaled_add.so", plugin_dir);
  copy_file(OPD_EXAMPLE_PLUGIN, path);
  snprintf(path, sizeof path, "%s/second.so", plugin_dir);
  copy_file(OPD_EXAMPLE_PLUGIN_IMPL, path);
  snprintf(path, sizeof path, "%s/link.so", plugin_dir);
  ck_assert_int_eq(symlink(OPD_EXAMPLE_PLUGIN, path), 0);
  FILE *f = fopen(token_path, "w");
  fputs("s3cret-token\n", f);
  fclose(f);
}

static void remove_dirs(void) {
  const char *files[] = {"plugins/scaled_add.so", "plugins/second.so", "plugins/link.so", "token",
                         "plugins"};
  char path[256];
  for (size_t i = 0; i < sizeof files / sizeof *files; i++) {
    snprintf(path, sizeof path, "%s/%s", dir, files[i]);
    remove(path);
  }
  rmdir(dir);
}

static int connect_unix(void) {
  struct sockaddr_un sa = {.sun_family = AF_UNIX};
  snprintf(sa.sun_path, sizeof sa.sun_path, "%s", sock_path);
  int fd = socket(AF_UNIX, SOCK_STREAM, 0);
  ck_assert_int_eq(connect(fd, (struct sockaddr *)&sa, sizeof sa), 0);
  return fd;
}

static int connect_tcp(int port) {
  struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  ck_assert_int_eq(connect(fd, (struct sockaddr *)&sa, sizeof sa), 0);
  return fd;
}

/* Sends one request (a JSON text) and returns the response. */
static json_t *request(int fd, const char *text) {
  uint32_t n = htonl((uint32_t)strlen(text));
  ck_assert_int_eq(write(fd, &n, 4), 4);
  ck_assert_int_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
  ck_assert_int_eq(read(fd, &n, 4), 4);
  n = ntohl(n);
  char *buf = malloc(n);
  size_t got = 0;
  while (got < n) {
    ssize_t r = read(fd, buf + got, n - got);
    ck_assert_int_gt(r, 0);
    got += (size_t)r;
  }
  json_t *j = json_loadb(buf, n, 0, NULL);
  free(buf);
  ck_assert_ptr_nonnull(j);
  return j;
}

static bool ok(json_t *j) {
  return json_is_true(json_object_get(j, "ok"));
}

static const char *code(json_t *j) {
  return json_string_value(json_object_get(j, "code"));
}

static atomic_int shutdowns;
static void on_shutdown(void *arg, bool drain) {
  (void)arg;
  atomic_fetch_add(&shutdowns, drain ? 10 : 1);
}

static opd__admin *start(bool tcp) {
  opd__admin_config c = {
      sock_path, tcp ? "127.0.0.1:0" : "", tcp ? token_path : NULL, plugin_dir, on_shutdown, NULL};
  opd__admin *a = NULL;
  ck_assert_int_eq(opd__admin_start(&c, &a), 0);
  return a;
}

START_TEST(test_admin_plugins) {
  ck_assert_int_eq(opd_kernels_register(), 0);
  make_dirs();
  opd__admin *a = start(false);
  struct stat st;
  ck_assert_int_eq(stat(sock_path, &st), 0);
  ck_assert_int_eq(st.st_mode & 0777, 0600);
  int fd = connect_unix();

  /* refused: paths, "..", absolute paths, symlinks, missing files, other names */
  const char *bad[] = {"../scaled_add.so",
                       "/tmp/x.so",
                       "plugins/scaled_add.so",
                       "link.so",
                       "missing.so",
                       ".hidden.so",
                       "scaled_add",
                       ""};
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    char req[256];
    snprintf(req, sizeof req, "{\"op\":\"load_plugin\",\"file\":\"%s\"}", bad[i]);
    json_t *r = request(fd, req);
    ck_assert_msg(!ok(r), "%s was loaded", bad[i]);
    json_decref(r);
  }

  json_t *r = request(fd, "{\"op\":\"load_plugin\",\"file\":\"scaled_add.so\"}");
  ck_assert(ok(r));
  ck_assert_uint_eq(json_array_size(json_object_get(r, "registrations")), 3);
  json_decref(r);
  r = request(fd, "{\"op\":\"load_plugin\",\"file\":\"scaled_add.so\"}");
  ck_assert_str_eq(code(r), "EEXIST");
  json_decref(r);

  const opd_operator *op = opd_find_schema("myops::scaled_add");
  ck_assert_ptr_nonnull(op);
  opd_reg_id cpu = opd_op_slot_registration(op, OPD_KEY_CPU);
  ck_assert_int_gt(cpu, 0);

  r = request(fd, "{\"op\":\"list\"}");
  ck_assert(ok(r));
  json_t *plugins = json_object_get(r, "plugins");
  ck_assert_uint_eq(json_array_size(plugins), 1);
  ck_assert_str_eq(json_string_value(json_object_get(json_array_get(plugins, 0), "plugin")),
                   "scaled_add.so");
  ck_assert_uint_gt(json_array_size(json_object_get(r, "operators")), 10);
  json_decref(r);
  r = request(fd, "{\"op\":\"list\",\"name\":\"myops::scaled_add\"}");
  ck_assert(ok(r));
  ck_assert_str_eq(json_string_value(json_object_get(json_object_get(r, "operator"), "name")),
                   "myops::scaled_add");
  json_decref(r);

  /* the CPU kernel registered at Meta too: it belongs to the plugin */
  char req[256];
  snprintf(req, sizeof req,
           "{\"op\":\"register\",\"name\":\"myops::scaled_add\",\"key\":\"Meta\","
           "\"kernel_of\":%lld}",
           (long long)cpu);
  r = request(fd, req);
  ck_assert(ok(r));
  opd_reg_id meta_id = json_integer_value(json_object_get(r, "id"));
  json_decref(r);
  ck_assert_int_eq(opd_op_slot_registration(op, OPD_KEY_Meta), meta_id);
  r = request(fd, "{\"op\":\"register\",\"name\":\"myops::scaled_add\",\"key\":\"AutogradCPU\","
                  "\"fallthrough\":true}");
  ck_assert(ok(r));
  opd_reg_id ft = json_integer_value(json_object_get(r, "id"));
  json_decref(r);
  r = request(fd, "{\"op\":\"register\",\"name\":\"myops::scaled_add\",\"key\":\"NoSuchKey\","
                  "\"fallthrough\":true}");
  ck_assert_str_eq(code(r), "EINVAL");
  json_decref(r);

  /* unloading is refused while any registration of the plugin remains */
  r = request(fd, "{\"op\":\"unload_plugin\",\"file\":\"scaled_add.so\"}");
  ck_assert_str_eq(code(r), "EBUSY");
  json_decref(r);
  snprintf(req, sizeof req, "{\"op\":\"deregister\",\"id\":%lld}", (long long)ft);
  r = request(fd, req);
  ck_assert(ok(r));
  json_decref(r);
  r = request(fd, req);
  ck_assert_str_eq(code(r), "ENOENT");
  json_decref(r);
  json_t *ids = NULL;
  r = request(fd, "{\"op\":\"list\"}");
  ids = json_incref(
      json_object_get(json_array_get(json_object_get(r, "plugins"), 0), "registrations"));
  json_decref(r);
  ck_assert_uint_eq(json_array_size(ids), 4);
  for (size_t i = json_array_size(ids); i-- > 0;) {
    snprintf(req, sizeof req, "{\"op\":\"deregister\",\"id\":%lld}",
             (long long)json_integer_value(json_array_get(ids, i)));
    r = request(fd, req);
    ck_assert(ok(r));
    json_decref(r);
  }
  json_decref(ids);
  ck_assert_ptr_null(opd_op_schema(op));
  r = request(fd, "{\"op\":\"unload_plugin\",\"file\":\"scaled_add.so\"}");
  ck_assert(ok(r));
  json_decref(r);
  r = request(fd, "{\"op\":\"unload_plugin\",\"file\":\"scaled_add.so\"}");
  ck_assert_str_eq(code(r), "ENOENT");
  json_decref(r);

  /* loaded again, and left for stop to remove */
  r = request(fd, "{\"op\":\"load_plugin\",\"file\":\"scaled_add.so\"}");
  ck_assert(ok(r));
  json_decref(r);
  r = request(fd, "{\"op\":\"nonsense\"}");
  ck_assert_str_eq(code(r), "EINVAL");
  json_decref(r);
  atomic_store(&shutdowns, 0);
  r = request(fd, "{\"op\":\"drain\"}");
  ck_assert(ok(r));
  json_decref(r);
  close(fd);
  opd__admin_stop(a);
  ck_assert_int_eq(atomic_load(&shutdowns), 10);
  ck_assert_ptr_null(opd_op_schema(op));
  ck_assert_int_ne(access(sock_path, F_OK), 0);
  remove_dirs();
}
END_TEST

START_TEST(test_admin_tcp_token) {
  make_dirs();
  opd__admin_config c = {"", "127.0.0.1:0", NULL, plugin_dir, NULL, NULL};
  opd__admin *a = NULL;
  ck_assert_int_eq(opd__admin_start(&c, &a), OPD_EINVAL); /* TCP without a token */
  a = start(true);
  int port = opd__admin_tcp_port(a);
  ck_assert_int_gt(port, 0);
  const char *reqs[] = {"{\"op\":\"status\"}", "{\"op\":\"status\",\"token\":\"wrong\"}",
                        "{\"op\":\"status\",\"token\":\"s3cret-token-longer\"}",
                        "{\"op\":\"status\",\"token\":\"s3cret-toke\"}"};
  for (size_t i = 0; i < sizeof reqs / sizeof *reqs; i++) {
    int fd = connect_tcp(port);
    json_t *r = request(fd, reqs[i]);
    ck_assert_str_eq(code(r), "UNAUTHORIZED");
    json_decref(r);
    close(fd);
  }
  int fd = connect_tcp(port);
  json_t *r = request(fd, "{\"op\":\"status\",\"token\":\"s3cret-token\"}");
  ck_assert(ok(r));
  json_decref(r);
  close(fd);
  /* the Unix socket needs no token */
  fd = connect_unix();
  r = request(fd, "{\"op\":\"status\"}");
  ck_assert(ok(r));
  json_decref(r);
  close(fd);
  opd__admin_stop(a);
  remove_dirs();
}
END_TEST

/* ---- under traffic ---- */

enum { CALLERS = 16, ADMIN_CHANGES = 1000, PLUGIN_CYCLES = 100 };

OPD_DEFINE_TYPED_CALL(call_scaled_add, Tensor, Tensor, Tensor, Double)

static const opd_operator *stress_op;
static opd_tensor *in_a, *in_b;
static atomic_bool stop;
static atomic_long calls, failures;

static void *caller(void *arg) {
  (void)arg;
  opd_reader_register();
  while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
    opd_tensor *out = NULL;
    int rc = call_scaled_add(stress_op, in_a, in_b, 2.0, &out);
    /* both kernels (CPU, and the composite one through aten::add) give 1 + 2 * 3 */
    if (rc != 0 || out->numel != 4 || ((const float *)opd_tensor_data(out))[3] != 7.0f)
      atomic_fetch_add(&failures, 1);
    if (out) opd_tensor_release(out);
    atomic_fetch_add_explicit(&calls, 1, memory_order_relaxed);
    opd_reader_quiescent();
    sched_yield();
  }
  opd_reader_unregister();
  return NULL;
}

static opd_tensor *filled(float v) {
  int64_t n = 4;
  opd_tensor *t = NULL;
  ck_assert_int_eq(opd_tensor_empty(&n, 1, OPD_FLOAT32, (opd_device){OPD_DEVICE_CPU, -1}, &t), 0);
  for (int i = 0; i < 4; i++) ((float *)opd_tensor_data(t))[i] = v;
  return t;
}

START_TEST(test_admin_under_traffic) {
  ck_assert_int_eq(opd_kernels_register(), 0);
  make_dirs();
  opd__admin *a = start(false);
  int fd = connect_unix();
  json_t *r = request(fd, "{\"op\":\"load_plugin\",\"file\":\"scaled_add.so\"}");
  ck_assert(ok(r));
  json_decref(r);
  stress_op = opd_find_typed("myops::scaled_add", OPD_SIGNATURE(Tensor, Tensor, Tensor, Double));
  ck_assert_ptr_nonnull(stress_op);
  opd_reg_id cpu = opd_op_slot_registration(stress_op, OPD_KEY_CPU);
  in_a = filled(1);
  in_b = filled(3);
  atomic_store(&stop, false);
  pthread_t threads[CALLERS];
  for (int i = 0; i < CALLERS; i++)
    ck_assert_int_eq(pthread_create(&threads[i], NULL, caller, NULL), 0);

  char req[256];
  for (int i = 0; i < ADMIN_CHANGES; i++) {
    /* the CPU kernel registered again at CPU (overriding), then removed */
    snprintf(req, sizeof req,
             "{\"op\":\"register\",\"name\":\"myops::scaled_add\",\"key\":\"CPU\","
             "\"kernel_of\":%lld}",
             (long long)cpu);
    r = request(fd, req);
    ck_assert(ok(r));
    opd_reg_id id = json_integer_value(json_object_get(r, "id"));
    json_decref(r);
    snprintf(req, sizeof req, "{\"op\":\"deregister\",\"id\":%lld}", (long long)id);
    r = request(fd, req);
    ck_assert(ok(r));
    json_decref(r);
    if (i % (ADMIN_CHANGES / PLUGIN_CYCLES) == 0) {
      /* a plugin overriding both kernels: loaded, its registrations removed, unloaded */
      r = request(fd, "{\"op\":\"load_plugin\",\"file\":\"second.so\"}");
      ck_assert(ok(r));
      json_t *ids = json_incref(json_object_get(r, "registrations"));
      json_decref(r);
      ck_assert_uint_eq(json_array_size(ids), 2);
      sched_yield(); /* let calls run its kernels */
      for (size_t k = json_array_size(ids); k-- > 0;) {
        snprintf(req, sizeof req, "{\"op\":\"deregister\",\"id\":%lld}",
                 (long long)json_integer_value(json_array_get(ids, k)));
        r = request(fd, req);
        ck_assert(ok(r));
        json_decref(r);
      }
      json_decref(ids);
      r = request(fd, "{\"op\":\"unload_plugin\",\"file\":\"second.so\"}");
      ck_assert(ok(r));
      json_decref(r);
    }
  }
  atomic_store(&stop, true);
  for (int i = 0; i < CALLERS; i++) pthread_join(threads[i], NULL);
  long n = atomic_load(&calls), failed = atomic_load(&failures);
  ck_assert_int_gt(n, 0);
  ck_assert_int_eq(failed, 0);
  opd_tensor_release(in_a);
  opd_tensor_release(in_b);
  close(fd);
  opd__admin_stop(a);
  remove_dirs();
}
END_TEST

/* ---- in a daemon, over the protocol ---- */

static const char *server_url;
static atomic_long client_calls, client_failures;

static void *client_caller(void *arg) {
  (void)arg;
  opd_client *c = NULL;
  if (opd_client_connect(server_url, NULL, &c) != 0) {
    atomic_fetch_add(&client_failures, 1);
    return NULL;
  }
  const float one[4] = {1, 1, 1, 1}, three[4] = {3, 3, 3, 3};
  int64_t shape = 4;
  opd_client_tensor a = 0, b = 0;
  if (opd_client_upload(c, OPD_FLOAT32, &shape, 1, one, sizeof one, NULL, &a) != 0 ||
      opd_client_upload(c, OPD_FLOAT32, &shape, 1, three, sizeof three, NULL, &b) != 0)
    atomic_fetch_add(&client_failures, 1);
  while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
    opd_client_value args[3] = {opd_cv_tensor(a), opd_cv_tensor(b), opd_cv_double(2.0)};
    opd_client_tensor out = 0;
    float r[4] = {0};
    if (opd_client_call(c, "myops::scaled_add", args, 3, &out, 1, NULL) != 0 ||
        opd_client_download(c, out, r, sizeof r, NULL) != 0 || r[0] != 7.0f || r[3] != 7.0f)
      atomic_fetch_add(&client_failures, 1);
    if (out) opd_client_release(c, &out, 1);
    atomic_fetch_add(&client_calls, 1);
  }
  opd_client_close(c);
  return NULL;
}

START_TEST(test_daemon_under_traffic) {
  make_dirs();
  opd_server_config cfg;
  opd_server_config_init(&cfg);
  opd_server_config_clear_listen(&cfg);
  ck_assert_int_eq(opd_server_config_add_listen(&cfg, "tcp://127.0.0.1:0"), 0);
  ck_assert_int_eq(opd_server_config_set(&cfg, "admin", sock_path), 0);
  ck_assert_int_eq(opd_server_config_set(&cfg, "plugin_dir", plugin_dir), 0);
  ck_assert_int_eq(opd_server_config_set(&cfg, "log_level", "error"), 0);
  opd_server *srv = NULL;
  ck_assert_int_eq(opd_server_start(&cfg, &srv), 0);
  opd_server_config_destroy(&cfg);
  server_url = opd_server_listener_url(srv, 0);
  int fd = connect_unix();
  json_t *r = request(fd, "{\"op\":\"load_plugin\",\"file\":\"scaled_add.so\"}");
  ck_assert(ok(r));
  json_decref(r);
  opd_reg_id cpu = opd_op_slot_registration(opd_find_op("myops::scaled_add"), OPD_KEY_CPU);
  atomic_store(&stop, false);
  atomic_store(&client_calls, 0);
  atomic_store(&client_failures, 0);
  pthread_t threads[CALLERS];
  for (int i = 0; i < CALLERS; i++)
    ck_assert_int_eq(pthread_create(&threads[i], NULL, client_caller, NULL), 0);
  char req[256];
  for (int i = 0; i < ADMIN_CHANGES; i++) {
    snprintf(req, sizeof req,
             "{\"op\":\"register\",\"name\":\"myops::scaled_add\",\"key\":\"CPU\","
             "\"kernel_of\":%lld}",
             (long long)cpu);
    r = request(fd, req);
    ck_assert(ok(r));
    snprintf(req, sizeof req, "{\"op\":\"deregister\",\"id\":%lld}",
             (long long)json_integer_value(json_object_get(r, "id")));
    json_decref(r);
    r = request(fd, req);
    ck_assert(ok(r));
    json_decref(r);
    if (i % (ADMIN_CHANGES / PLUGIN_CYCLES) == 0) {
      r = request(fd, "{\"op\":\"load_plugin\",\"file\":\"second.so\"}");
      ck_assert(ok(r));
      json_t *ids = json_incref(json_object_get(r, "registrations"));
      json_decref(r);
      for (size_t k = json_array_size(ids); k-- > 0;) {
        snprintf(req, sizeof req, "{\"op\":\"deregister\",\"id\":%lld}",
                 (long long)json_integer_value(json_array_get(ids, k)));
        r = request(fd, req);
        ck_assert(ok(r));
        json_decref(r);
      }
      json_decref(ids);
      r = request(fd, "{\"op\":\"unload_plugin\",\"file\":\"second.so\"}");
      ck_assert(ok(r));
      json_decref(r);
    }
  }
  atomic_store(&stop, true);
  for (int i = 0; i < CALLERS; i++) pthread_join(threads[i], NULL);
  long n = atomic_load(&client_calls), failed = atomic_load(&client_failures);
  ck_assert_int_gt(n, 0);
  ck_assert_int_eq(failed, 0);
  close(fd);
  opd_server_stop(srv); /* removes the plugin's registrations and unloads it */
  ck_assert_ptr_null(opd_op_schema(opd_find_op("myops::scaled_add")));
  remove_dirs();
}
END_TEST

Suite *opd_test_admin_suite(void) {
  Suite *s = suite_create("admin");
  TCase *tc = tcase_create("admin");
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, test_admin_plugins);
  tcase_add_test(tc, test_admin_tcp_token);
  tcase_add_test(tc, test_admin_under_traffic);
  tcase_add_test(tc, test_daemon_under_traffic);
  suite_add_tcase(s, tc);
  return s;
}

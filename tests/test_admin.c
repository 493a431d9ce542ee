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
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "admin.h"
#include "opd/client.h"
#include "opd/server.h"
#include "opd/allocator.h"
#include "opd/introspect.h"
#include "opd/kernels.h"
#include "opd/memory.h"
#include "opd/tensor.h"
#include "opd/unboxed.h"
#include "opd/utf8.h"
#include "test_files.h"

Suite *opd_test_admin_suite(void);

#if !defined(OPD_EXAMPLE_PLUGIN) || !defined(OPD_EXAMPLE_PLUGIN_IMPL)
#error "OPD_EXAMPLE_PLUGIN and OPD_EXAMPLE_PLUGIN_IMPL (scaled_add.so, scaled_add_impl.so)"
#endif

static char dir[32], sock_path[100], plugin_dir[64], token_path[64];

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
  opd_test_copy_file(OPD_EXAMPLE_PLUGIN, path);
  snprintf(path, sizeof path, "%s/second.so", plugin_dir);
  opd_test_copy_file(OPD_EXAMPLE_PLUGIN_IMPL, path);
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

/* Reads one answer: a JSON object (of valid UTF-8, since jansson refuses anything else). */
static json_t *read_answer(int fd) {
  uint32_t be;
  ck_assert_int_eq(read(fd, &be, 4), 4);
  be = ntohl(be);
  char *buf = malloc(be);
  size_t got = 0;
  while (got < be) {
    ssize_t r = read(fd, buf + got, be - got);
    ck_assert_int_gt(r, 0);
    got += (size_t)r;
  }
  json_t *j = json_loadb(buf, be, 0, NULL);
  free(buf);
  ck_assert_ptr_nonnull(j);
  ck_assert(json_is_object(j));
  return j;
}

/* Sends one frame of n bytes and returns the answer. */
static json_t *request_bytes(int fd, const char *bytes, size_t n) {
  uint32_t be = htonl((uint32_t)n);
  ck_assert_int_eq(write(fd, &be, 4), 4);
  for (size_t put = 0; put < n;) {
    ssize_t w = write(fd, bytes + put, n - put);
    ck_assert_int_gt(w, 0);
    put += (size_t)w;
  }
  return read_answer(fd);
}

/* Sends one request (a JSON text) and returns the response. */
static json_t *request(int fd, const char *text) {
  return request_bytes(fd, text, strlen(text));
}

static bool ok(json_t *j) {
  return json_is_true(json_object_get(j, "ok"));
}

/* A new connection to the Unix socket is served. */
static void served_on_new_connection(void) {
  int fd = connect_unix();
  json_t *r = request(fd, "{\"op\":\"status\"}");
  ck_assert(ok(r));
  json_decref(r);
  close(fd);
}

static const char *code(json_t *j) {
  return json_string_value(json_object_get(j, "code"));
}

static atomic_int shutdowns;
static void on_shutdown(void *arg) {
  (void)arg;
  atomic_fetch_add(&shutdowns, 1);
}

/* drain adds 10, undrain 100 */
static void on_set_draining(void *arg, bool draining) {
  (void)arg;
  atomic_fetch_add(&shutdowns, draining ? 10 : 100);
}

static opd__admin *start(bool tcp) {
  opd__admin_config c = {sock_path,
                         tcp ? "127.0.0.1:0" : "",
                         tcp ? token_path : NULL,
                         plugin_dir,
                         on_shutdown,
                         NULL,
                         on_set_draining,
                         NULL};
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
  ck_assert(json_is_true(json_object_get(r, "draining")));
  json_decref(r);
  ck_assert_int_eq(atomic_load(&shutdowns), 10); /* answered after it is done */
  r = request(fd, "{\"op\":\"undrain\"}");
  ck_assert(ok(r));
  ck_assert(json_is_false(json_object_get(r, "draining")));
  json_decref(r);
  ck_assert_int_eq(atomic_load(&shutdowns), 110);
  r = request(fd, "{\"op\":\"shutdown\"}");
  ck_assert(ok(r));
  json_decref(r);
  close(fd);
  opd__admin_stop(a);
  ck_assert_int_eq(atomic_load(&shutdowns), 111);
  ck_assert_ptr_null(opd_op_schema(op));
  ck_assert_int_ne(access(sock_path, F_OK), 0);
  remove_dirs();
}
END_TEST

START_TEST(test_admin_tcp_token) {
  make_dirs();
  opd__admin_config c = {"", "127.0.0.1:0", NULL, plugin_dir, NULL, NULL, NULL, NULL};
  opd__admin *a = NULL;
  ck_assert_int_eq(opd__admin_start(&c, &a), OPD_EINVAL); /* TCP without a token */
  a = start(true);
  int port = opd__admin_tcp_port(a);
  ck_assert_int_gt(port, 0);
  const char *reqs[] = {"{\"op\":\"status\"}", "{\"op\":\"status\",\"token\":\"wrong\"}",
                        "{\"op\":\"status\",\"token\":\"s3cret-token-longer\"}",
                        "{\"op\":\"status\",\"token\":\"s3cret-toke\"}"};
  char byte;
  for (size_t i = 0; i < sizeof reqs / sizeof *reqs; i++) {
    int fd = connect_tcp(port);
    json_t *r = request(fd, reqs[i]);
    ck_assert_str_eq(code(r), "UNAUTHORIZED");
    json_decref(r);
    ck_assert_int_eq(read(fd, &byte, 1), 0); /* and closed */
    close(fd);
  }
  /* a request that fails before its token is read closes the connection too */
  int fd = connect_tcp(port);
  json_t *r = request(fd, "not json");
  ck_assert_str_eq(code(r), "EINVAL");
  json_decref(r);
  ck_assert_int_eq(read(fd, &byte, 1), 0);
  close(fd);
  fd = connect_tcp(port);
  r = request(fd, "{\"op\":\"status\",\"token\":\"s3cret-token\"}");
  ck_assert(ok(r));
  json_decref(r);
  r = request(fd, "{\"op\":\"nonsense\",\"token\":\"s3cret-token\"}"); /* kept open */
  ck_assert_str_eq(code(r), "EINVAL");
  json_decref(r);
  r = request(fd, "{\"op\":\"status\",\"token\":\"s3cret-token\"}");
  ck_assert(ok(r));
  json_decref(r);
  close(fd);
  served_on_new_connection(); /* the Unix socket needs no token */
  opd__admin_stop(a);
  /* an IPv6 address in the configuration's [HOST]:PORT form binds (the brackets are the
   * form's, not the address's) */
  opd__admin_config v6 = {"", "[::1]:0", token_path, plugin_dir, NULL, NULL, NULL, NULL};
  ck_assert_msg(opd__admin_start(&v6, &a) == 0, "%s", opd_last_error());
  ck_assert_int_gt(opd__admin_tcp_port(a), 0);
  opd__admin_stop(a);
  remove_dirs();
}
END_TEST

/* ---- requests: the fixture of the cases below ---- */

/* The kernels, the directories, an admin on its Unix socket, and one connection to it. */
static opd__admin *admin;
static int admin_fd;

static void admin_up(void) {
  ck_assert_int_eq(opd_kernels_register(), 0);
  make_dirs();
  admin = start(false);
  admin_fd = connect_unix();
}

static void admin_down(void) {
  close(admin_fd);
  opd__admin_stop(admin);
  remove_dirs();
}

/* ---- hostile requests ---- */

/* The response to `text` is a refusal with `want` as its code and a message. */
static void expect_refusal(int fd, const char *text, size_t len, const char *want) {
  json_t *r = request_bytes(fd, text, len);
  ck_assert_msg(json_is_false(json_object_get(r, "ok")), "accepted: %.200s", text);
  ck_assert_msg(code(r) && strcmp(code(r), want) == 0, "%.200s: %s instead of %s", text,
                code(r) ? code(r) : "(no code)", want);
  const char *error = json_string_value(json_object_get(r, "error"));
  ck_assert_ptr_nonnull(error);
  ck_assert_uint_gt(strlen(error), 0);
  json_decref(r);
}

static const char *error_text(json_t *r) {
  const char *e = json_string_value(json_object_get(r, "error"));
  ck_assert_ptr_nonnull(e);
  return e;
}

/* Every admin command refuses bad fields with EINVAL and a message, the connection goes on
 * answering, and nothing is registered or shut down: a second "op" key was once taken as
 * the request's (a "status" that shut the daemon down), and list took a "name" that is not
 * a string for "list everything". */
START_TEST(test_admin_hostile_requests) {
  atomic_store(&shutdowns, 0);
  const opd_operator *add = opd_find_op("aten::add.Tensor");
  opd_reg_id add_cpu = opd_op_slot_registration(add, OPD_KEY_CPU);
  ck_assert_int_gt(add_cpu, 0);
  static char long_name[1100], deep[200001], long_data[400];
  memset(long_name, 'n', sizeof long_name - 1);
  memset(deep, '[', sizeof deep - 1);
  snprintf(long_data, sizeof long_data,
           "{\"op\":\"register\",\"name\":\"myops::x\",\"key\":\"CPU\",\"kernel_of\":%lld,"
           "\"data\":\"%0300d\"}",
           (long long)add_cpu, 0);
  const char *einval[] = {
      "[1, 2]",
      "\"status\"",
      "{\"op\":5}",
      "{}",
      "{\"op\":\"status\",\"op\":\"shutdown\"}",
      "{\"op\":\"list\",\"name\":5}",
      "{\"op\":\"list\",\"name\":\"a\\u0000b\"}",
      "{\"op\":\"list\",\"name\":\"x\",\"name\":\"y\"}",
      "{\"op\":\"register\",\"name\":\"aten::add.Tensor\",\"key\":\"CPU\",\"fallthrough\":1}",
      "{\"op\":\"register\",\"name\":\"aten::add.Tensor\",\"key\":\"CPU\",\"fallthrough\":\"yes\"}",
      "{\"op\":\"register\",\"name\":\"aten::add.Tensor\",\"key\":\"CPU\",\"fallthrough\":false}",
      "{\"op\":\"register\",\"name\":\"aten::add.Tensor\",\"key\":\"CPU\",\"fallthrough\":true,"
      "\"kernel_of\":1}",
      "{\"op\":\"register\",\"name\":\"aten::add.Tensor\",\"key\":\"CPU\",\"fallthrough\":true,"
      "\"data\":\"x\"}",
      "{\"op\":\"register\",\"name\":\"aten::add.Tensor\",\"key\":7,\"fallthrough\":true}",
      "{\"op\":\"register\",\"name\":[],\"key\":\"CPU\",\"fallthrough\":true}",
      "{\"op\":\"register\",\"name\":\"nocolons\",\"key\":\"CPU\",\"fallthrough\":true}",
      long_data,
      "{\"op\":\"deregister\",\"id\":0}",
      "{\"op\":\"deregister\",\"id\":-1}",
      "{\"op\":\"deregister\",\"id\":\"1\"}",
      "{\"op\":\"deregister\",\"id\":1,\"force\":\"yes\"}",
      "{\"op\":\"deregister\"}",
      "{\"op\":\"def\",\"namespace\":\"x\",\"schema\":5}",
      "{\"op\":\"def\",\"namespace\":\"a b\",\"schema\":\"f(Tensor a) -> Tensor\"}",
      "{\"op\":\"register_fallback\",\"key\":\"CPU\"}",
      "{\"op\":\"register_fallback\",\"key\":\"NoSuchKey\",\"fallthrough\":true}",
      "{\"op\":\"load_plugin\",\"file\":\"\\u00e9.so\"}",
      "{\"op\":\"load_plugin\",\"file\":{}}",
      "{\"op\":\"cuda_register\",\"source\":1,\"entry\":\"f\",\"schema\":\"x::f(Tensor a) -> "
      "Tensor\",\"launch\":\"rows\"}",
      "{\"op\":\"cuda_register\",\"source\":\"x\",\"entry\":\"f\",\"schema\":\"x::f(Tensor a) "
      "-> Tensor\",\"launch\":\"columns\"}",
      /* dtypes: not a string; two for one Tensor argument (judged before CUDA is needed) */
      "{\"op\":\"cuda_register\",\"source\":\"x\",\"entry\":\"f\",\"schema\":\"x::f(Tensor a) "
      "-> Tensor\",\"launch\":\"rows\",\"dtypes\":16}",
      "{\"op\":\"cuda_register\",\"source\":\"x\",\"entry\":\"f\",\"schema\":\"x::f(Tensor a) "
      "-> Tensor\",\"launch\":\"rows\",\"dtypes\":\"float16, int8 -> bool\"}",
      deep,
  };
  for (size_t i = 0; i < sizeof einval / sizeof *einval; i++)
    expect_refusal(admin_fd, einval[i], strlen(einval[i]), "EINVAL");
  const char *enoent[] = {"{\"op\":\"deregister\",\"id\":9223372036854775807}",
                          "{\"op\":\"unload_plugin\",\"file\":\"none.so\"}"};
  for (size_t i = 0; i < sizeof enoent / sizeof *enoent; i++)
    expect_refusal(admin_fd, enoent[i], strlen(enoent[i]), "ENOENT");
  char req[1300];
  snprintf(req, sizeof req, "{\"op\":\"%s\"}", long_name);
  expect_refusal(admin_fd, req, strlen(req), "EINVAL");
  snprintf(req, sizeof req, "{\"op\":\"list\",\"name\":\"%s\"}", long_name);
  expect_refusal(admin_fd, req, strlen(req), "ENOENT");
  /* nothing was registered, nothing shut down */
  ck_assert_int_eq(opd_op_slot_registration(add, OPD_KEY_CPU), add_cpu);
  ck_assert_ptr_null(opd_find_op("myops::x"));
  ck_assert_int_eq(atomic_load(&shutdowns), 0);
  json_t *r = request(admin_fd, "{\"op\":\"list\"}");
  ck_assert(ok(r));
  ck_assert_uint_eq(json_array_size(json_object_get(r, "admin_registrations")), 0);
  json_decref(r);

  /* frames: empty or over 1 MiB are answered, then the connection is closed */
  expect_refusal(admin_fd, "", 0, "EINVAL");
  char byte;
  ck_assert_int_eq(read(admin_fd, &byte, 1), 0);
  close(admin_fd);
  admin_fd = connect_unix();
  uint32_t be = htonl(2u << 20);
  ck_assert_int_eq(write(admin_fd, &be, 4), 4);
  ck_assert_int_eq(read(admin_fd, &be, 4), 4);
}
END_TEST

/* Issue 12, item 6: register with a kernel_of that is not a registration id (0 and -1 once
 * installed a fallthrough, and every client's add failed) is refused. */
START_TEST(test_admin_kernel_of) {
  const opd_operator *add = opd_find_op("aten::add.Tensor");
  opd_reg_id add_cpu = opd_op_slot_registration(add, OPD_KEY_CPU);
  const char *values[] = {"0", "-1", "1.5", "\"7\"", "true", "null", "[]"};
  for (size_t i = 0; i < sizeof values / sizeof *values; i++) {
    char req[200];
    snprintf(req, sizeof req,
             "{\"op\":\"register\",\"name\":\"aten::add.Tensor\",\"key\":\"CPU\","
             "\"kernel_of\":%s}",
             values[i]);
    expect_refusal(admin_fd, req, strlen(req), "EINVAL");
    ck_assert_int_eq(opd_op_slot_registration(add, OPD_KEY_CPU), add_cpu);
  }
  json_t *slot = opd_op_slot_json(add, OPD_KEY_CPU);
  ck_assert_str_eq(json_string_value(json_object_get(slot, "source")), "CPU");
  json_decref(slot);
}
END_TEST

/* cuda_register of an operator that has a kernel but no def defines it (with a device) or
 * is refused (without one); it once dereferenced the missing schema. */
START_TEST(test_admin_cuda_register_undefined) {
  json_t *r;
  /* cuda_register of an operator that has a kernel but no def: defined then (with a
   * device) or refused (without one); it once dereferenced the missing schema */
  r = request(admin_fd, "{\"op\":\"register\",\"name\":\"admintest::undefined\",\"key\":\"CPU\","
                        "\"fallthrough\":true}");
  ck_assert(ok(r));
  json_decref(r);
  r = request(admin_fd, "{\"op\":\"cuda_register\",\"source\":\"extern \\\"C\\\" __global__ void "
                        "f(float *o, const float *x, long long n) {}\",\"entry\":\"f\",\"schema\":"
                        "\"admintest::undefined(Tensor x) -> Tensor\",\"launch\":\"elementwise\"}");
  ck_assert_msg(ok(r) || strcmp(code(r), "EUNAVAILABLE") == 0, "%s", error_text(r));
  json_decref(r);
}
END_TEST

/* [Note: Strings on the wire are UTF-8] in admin answers: request bytes that are not UTF-8
 * are escaped where the refusal quotes them, an operator whose name is not UTF-8 (a plugin's
 * or an embedding program's registrations are not checked) is listed with its name escaped
 * instead of being dropped, and a message cut in the middle of a character stays valid. */
START_TEST(test_admin_utf8_requests) {
  json_t *r = request(admin_fd, "{\"op\":\"list\",\"name\":\"aten::\xff\xfe\"}");
  ck_assert_str_eq(code(r), "EINVAL");
  ck_assert_ptr_nonnull(strstr(error_text(r), "\\xff\\xfe"));
  json_decref(r);

  char req[1400] = "{\"op\":\"list\",\"name\":\"";
  for (int k = 0; k < 300; k++) strcat(req, "\xc3\xa9"); /* é */
  strcat(req, "\"}");
  r = request(admin_fd, req); /* the message quotes 200 bytes of it: cut inside a character */
  ck_assert_str_eq(code(r), "ENOENT");
  json_decref(r);
}
END_TEST

START_TEST(test_admin_utf8_names) {
  opd_reg_id bad = opd_impl_fallthrough("admintest::na\xffme", OPD_KEY_CPU, OPD_HERE);
  ck_assert_int_gt(bad, 0);
  json_t *r = request(admin_fd, "{\"op\":\"list\"}");
  ck_assert(ok(r));
  size_t i;
  json_t *o;
  bool listed = false;
  json_array_foreach(json_object_get(r, "operators"), i, o) {
    const char *name = json_string_value(json_object_get(o, "name"));
    listed |= name && strcmp(name, "admintest::na\\xffme") == 0;
  }
  ck_assert(listed);
  json_decref(r);
  ck_assert_int_eq(opd_deregister(bad), 0);
}
END_TEST

/* [Note: What the admin may remove]: a built-in registration's id is refused without
 * "force": true (docs/ADMIN.md once said `opctl deregister 270`, aten::mul.Tensor's CUDA
 * kernel), and removed with it. */
START_TEST(test_admin_builtin_needs_force) {
  const opd_operator *mul = opd_find_op("aten::mul.Tensor");
  opd_reg_id cpu = opd_op_slot_registration(mul, OPD_KEY_CPU);
  ck_assert_int_gt(cpu, 0);
  char req[128];
  snprintf(req, sizeof req, "{\"op\":\"deregister\",\"id\":%lld}", (long long)cpu);
  json_t *r = request(admin_fd, req);
  ck_assert_str_eq(code(r), "EINVAL");
  ck_assert_ptr_nonnull(strstr(error_text(r), "built in"));
  ck_assert_ptr_nonnull(strstr(error_text(r), "\"force\": true"));
  json_decref(r);
  ck_assert_int_eq(opd_op_slot_registration(mul, OPD_KEY_CPU), cpu);
  /* a definition too */
  opd_reg_id def = 0;
  json_t *op = opd_op_json(mul);
  size_t i;
  json_t *reg;
  json_array_foreach(json_object_get(op, "registrations"), i, reg) {
    if (strcmp(json_string_value(json_object_get(reg, "kind")), "def") == 0)
      def = json_integer_value(json_object_get(reg, "id"));
  }
  json_decref(op);
  ck_assert_int_gt(def, 0);
  snprintf(req, sizeof req, "{\"op\":\"deregister\",\"id\":%lld,\"force\":false}", (long long)def);
  r = request(admin_fd, req);
  ck_assert_str_eq(code(r), "EINVAL");
  json_decref(r);
  ck_assert_ptr_nonnull(opd_op_schema(mul));

  snprintf(req, sizeof req, "{\"op\":\"deregister\",\"id\":%lld,\"force\":true}", (long long)cpu);
  r = request(admin_fd, req);
  ck_assert(ok(r));
  json_decref(r);
  ck_assert_int_ne(opd_op_slot_registration(mul, OPD_KEY_CPU), cpu);
  r = request(admin_fd, req);
  ck_assert_str_eq(code(r), "ENOENT");
  json_decref(r);
}
END_TEST

/* ---- slow and idle clients ---- */

/* Issue 12, item 7: one admin connection that has sent part of a request, or nothing, does
 * not hold up another's requests, and is still served when it goes on. */
START_TEST(test_admin_slow_client) {
  const char *status = "{\"op\":\"status\"}";
  int slow = connect_unix(); /* and admin_fd, idle */
  uint32_t be = htonl((uint32_t)strlen(status));
  ck_assert_int_eq(write(slow, &be, 4), 4);
  ck_assert_int_eq(write(slow, status, 3), 3);
  for (int i = 0; i < 3; i++) served_on_new_connection(); /* while the others wait */
  ck_assert_int_eq(write(slow, status + 3, strlen(status) - 3), (ssize_t)strlen(status) - 3);
  json_t *r = read_answer(slow);
  ck_assert(ok(r));
  json_decref(r);
  r = request(admin_fd, status); /* the idle one too */
  ck_assert(ok(r));
  json_decref(r);
  close(slow);
}
END_TEST

/* [Note: Admin connections]: time is bounded per connection, not per read. With short
 * limits: a request trickled a byte at a time is answered ETIMEDOUT and closed once its
 * deadline passes (it once kept the admin thread as long as each byte came within the read
 * timeout), an idle connection is closed, and one connection over the cap is answered
 * EBUSY. */
START_TEST(test_admin_deadlines) {
  make_dirs();
  opd__admin_config c = {sock_path, "", NULL, plugin_dir, NULL, NULL, NULL, NULL};
  const opd__admin_limits limits = {.idle_ms = 500, .request_ms = 300, .max_connections = 3};
  opd__admin *a = NULL;
  ck_assert_int_eq(opd__admin_start_limited(&c, &limits, &a), 0);
  int trickle = connect_unix(), idle = connect_unix(), third = connect_unix();
  json_t *r = request(third, "{\"op\":\"status\"}"); /* all three slots are taken now */
  ck_assert(ok(r));
  json_decref(r);
  int over = connect_unix();
  r = read_answer(over);
  ck_assert_str_eq(code(r), "EBUSY");
  json_decref(r);
  close(over);

  const char *status = "{\"op\":\"status\"}";
  uint32_t be = htonl(1000);
  ck_assert_int_eq(write(trickle, &be, 4), 4);
  struct pollfd p = {trickle, POLLIN, 0};
  int sent = 0;
  while (sent < 1000 && poll(&p, 1, 0) == 0) { /* a byte every 20 ms: 20 s in all */
    ck_assert_int_eq(send(trickle, status, 1, MSG_NOSIGNAL), 1);
    sent++;
    nanosleep(&(struct timespec){0, 20 * 1000 * 1000}, NULL);
  }
  ck_assert_int_lt(sent, 1000);
  r = read_answer(trickle);
  ck_assert_str_eq(code(r), "ETIMEDOUT");
  json_decref(r);
  char byte;
  ck_assert_int_eq(read(trickle, &byte, 1), 0);
  close(trickle);
  ck_assert_int_eq(read(idle, &byte, 1), 0); /* closed for idling meanwhile */
  close(idle);
  close(third);
  served_on_new_connection(); /* the slots were freed */
  opd__admin_stop(a);
  remove_dirs();
}
END_TEST

/* opd__admin_handle without a socket, as a fuzzing driver calls it: the requests of a small
 * corpus and 5,000 mutations of them (bytes replaced, inserted and removed; a fixed seed),
 * over the Unix socket's rules and TCP's, each get one JSON object of valid UTF-8 with "ok"
 * and, when refused, "code" and "error"; under ASan nothing leaks. */
START_TEST(test_admin_handle_without_socket) {
  ck_assert_int_eq(opd_kernels_register(), 0);
  opd__admin_config c = {"", "", NULL, "", NULL, NULL, NULL, NULL};
  opd__admin *a = NULL;
  ck_assert_int_eq(opd__admin_start(&c, &a), 0);
  static const struct {
    const char *request;
    bool tcp;
    opd__admin_after after;
  } cases[] = {
      {"{\"op\":\"status\"}", false, OPD__ADMIN_KEEP},
      {"{\"op\":\"status\"}", true, OPD__ADMIN_CLOSE}, /* no token is configured */
      {"{\"op\":\"status\",\"token\":\"\"}", true, OPD__ADMIN_CLOSE},
      {"not json", false, OPD__ADMIN_KEEP},
      {"not json", true, OPD__ADMIN_CLOSE},
      {"{\"op\":\"drain\"}", false, OPD__ADMIN_KEEP}, /* refused: no set_draining */
      {"{\"op\":\"shutdown\"}", false, OPD__ADMIN_SHUTDOWN},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    char *reply = NULL;
    size_t len = 0;
    int after = opd__admin_handle(a, cases[i].request, strlen(cases[i].request), cases[i].tcp,
                                  &reply, &len);
    ck_assert_msg(after == (int)cases[i].after, "%s: %d", cases[i].request, after);
    ck_assert_uint_eq(strlen(reply), len);
    opd__free(reply);
  }
  const char *corpus[] = {
      "{\"op\":\"status\"}",
      "{\"op\":\"list\",\"name\":\"aten::add.Tensor\"}",
      "{\"op\":\"def\",\"namespace\":\"fuzz\",\"schema\":\"f(Tensor a, int[2] b=[1,2]) -> "
      "Tensor\"}",
      "{\"op\":\"register\",\"name\":\"fuzz::f\",\"key\":\"CPU\",\"fallthrough\":true}",
      "{\"op\":\"register\",\"name\":\"fuzz::f\",\"key\":\"CPU\",\"kernel_of\":3,"
      "\"data\":\"\\u00e9x\"}",
      "{\"op\":\"register_fallback\",\"key\":\"PrivateUse1\",\"fallthrough\":true}",
      "{\"op\":\"deregister\",\"id\":1}",
      "{\"op\":\"load_plugin\",\"file\":\"x.so\"}",
      "{\"op\":\"unload_plugin\",\"file\":\"x.so\"}",
      "[{\"op\":[\"\\ud800\", -0.0e+1, null, true, false]}]",
  };
  const size_t n_corpus = sizeof corpus / sizeof *corpus;
  uint32_t seed = 12345;
#define NEXT() (seed = seed * 1103515245u + 12345u, seed >> 8)
  for (int i = 0; i < 5000; i++) {
    char buf[256];
    size_t n = strlen(corpus[(size_t)i % n_corpus]);
    memcpy(buf, corpus[(size_t)i % n_corpus], n);
    for (uint32_t m = 1 + NEXT() % 4; m > 0; m--) {
      size_t at = n ? NEXT() % n : 0;
      switch (NEXT() % 3) {
      case 0:
        if (n) buf[at] = (char)NEXT();
        break;
      case 1:
        if (n < sizeof buf) {
          memmove(buf + at + 1, buf + at, n - at);
          buf[at] = (char)NEXT();
          n++;
        }
        break;
      default:
        if (n) memmove(buf + at, buf + at + 1, n - at - 1), n--;
      }
    }
    char *reply = NULL;
    size_t len = 0;
    int after = opd__admin_handle(a, buf, n, i % 7 == 0, &reply, &len);
    ck_assert_int_ge(after, 0);
    ck_assert(opd_utf8_valid(reply, len));
    json_t *j = json_loadb(reply, len, 0, NULL);
    ck_assert_msg(json_is_object(j), "%s", reply);
    ck_assert(json_is_boolean(json_object_get(j, "ok")));
    if (json_is_false(json_object_get(j, "ok")))
      ck_assert(json_is_string(json_object_get(j, "code")) &&
                json_is_string(json_object_get(j, "error")));
    json_decref(j);
    opd__free(reply);
  }
#undef NEXT
  opd__admin_stop(a);
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

/* The plugins option: its plugins are registered once opd_server_start returns, without an
 * admin listener, and gone after stop; a plugin that does not load stops the start, naming
 * it; names that are not plain .so file names, and a JSON value of the wrong type, are
 * refused by the configuration. */
START_TEST(test_plugins_option) {
  make_dirs();
  opd_server_config cfg;
  opd_server_config_init(&cfg);
  opd_server_config_clear_listen(&cfg);
  ck_assert_int_eq(opd_server_config_add_listen(&cfg, "tcp://127.0.0.1:0"), 0);
  ck_assert_int_eq(opd_server_config_set(&cfg, "plugin_dir", plugin_dir), 0);
  ck_assert_int_eq(opd_server_config_set(&cfg, "plugins", "scaled_add.so"), 0);
  ck_assert_int_eq(opd_server_config_set(&cfg, "plugins", "scaled_add.so"), OPD_EINVAL); /* twice */
  ck_assert_int_eq(opd_server_config_set(&cfg, "plugins", "../scaled_add.so"), OPD_EINVAL);
  ck_assert_int_eq(opd_server_config_set(&cfg, "plugins", ".hidden.so"), OPD_EINVAL);
  ck_assert_int_eq(opd_server_config_set(&cfg, "plugins", "scaled_add"), OPD_EINVAL);
  ck_assert_uint_eq(cfg.num_plugins, 1);
  cfg.workers = 1;
  cfg.log_level = OPD_LOG_ERROR;
  ck_assert_ptr_null(opd_find_schema("myops::scaled_add"));
  opd_server *s = NULL;
  ck_assert_msg(opd_server_start(&cfg, &s) == 0, "%s", opd_last_error());
  ck_assert_ptr_nonnull(opd_find_schema("myops::scaled_add"));
  opd_server_stop(s);
  ck_assert_ptr_null(opd_find_schema("myops::scaled_add"));

  /* a file the directory lacks: the start fails, and what loaded before is unloaded */
  ck_assert_int_eq(opd_server_config_set(&cfg, "plugins", "missing.so"), 0);
  s = NULL;
  ck_assert_int_lt(opd_server_start(&cfg, &s), 0);
  ck_assert_ptr_null(s);
  ck_assert_msg(strstr(opd_last_error(), "plugin missing.so"), "%s", opd_last_error());
  ck_assert_ptr_null(opd_find_schema("myops::scaled_add"));

  /* in a file: an array of names, which replaces the list */
  char path[256];
  snprintf(path, sizeof path, "%s/opd.json", dir);
  FILE *f = fopen(path, "w");
  fputs("{\"plugins\": \"scaled_add.so\"}", f);
  fclose(f);
  ck_assert_int_eq(opd_server_config_load(&cfg, path), OPD_EINVAL);
  f = fopen(path, "w");
  fputs("{\"plugins\": [\"second.so\"]}", f);
  fclose(f);
  ck_assert_int_eq(opd_server_config_load(&cfg, path), 0);
  ck_assert_uint_eq(cfg.num_plugins, 1);
  ck_assert_str_eq(cfg.plugins[0], "second.so");
  unlink(path);
  opd_server_config_destroy(&cfg);
  remove_dirs();
}
END_TEST

Suite *opd_test_admin_suite(void) {
  Suite *s = suite_create("admin");
  TCase *tc = tcase_create("admin");
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, test_admin_plugins);
  tcase_add_test(tc, test_plugins_option);
  tcase_add_test(tc, test_admin_tcp_token);
  tcase_add_test(tc, test_admin_deadlines);
  tcase_add_test(tc, test_admin_handle_without_socket);
  tcase_add_test(tc, test_admin_under_traffic);
  tcase_add_test(tc, test_daemon_under_traffic);
  suite_add_tcase(s, tc);
  TCase *requests = tcase_create("requests");
  /* each test starts a daemon's admin side, which registers every kernel (hundreds): seconds
   * under the sanitizers on a loaded machine, past Check's default of 4 s */
  tcase_set_timeout(requests, 60);
  tcase_add_checked_fixture(requests, admin_up, admin_down);
  tcase_add_test(requests, test_admin_hostile_requests);
  tcase_add_test(requests, test_admin_kernel_of);
  tcase_add_test(requests, test_admin_cuda_register_undefined);
  tcase_add_test(requests, test_admin_utf8_requests);
  tcase_add_test(requests, test_admin_utf8_names);
  tcase_add_test(requests, test_admin_builtin_needs_force);
  tcase_add_test(requests, test_admin_slow_client);
  suite_add_tcase(s, requests);
  return s;
}

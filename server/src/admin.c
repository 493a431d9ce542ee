/* admin.c: the admin listener and its requests (see admin.h and docs/ADMIN.md).
 *
 * [Note: Admin connections]
 * One thread owns the listeners and every admin connection. Its I/O is non-blocking and
 * multiplexed with poll(): it reads each connection's frames (a 4-byte big-endian length
 * and that many bytes of JSON, at most 1 MiB: room for the CUDA source of cuda_register, at
 * most OPD_NVRTC_MAX_SOURCE bytes) as their bytes arrive, and writes each answer as the
 * peer takes it, so a connection that is idle, sends a byte every few seconds, or does not
 * read its answers never holds up another. Requests run one at a time, in the order they
 * arrived whole, on that thread (they are rare and each runs to completion: a plugin load,
 * a registration change and its grace period), so admin connections never race each other.
 * Time is bounded per connection, not per read (opd__admin_limits): a connection with no
 * request under way is closed after idle_ms; a request must arrive whole within request_ms
 * of its first byte (else it is answered ETIMEDOUT and the connection closed), and its
 * answer must leave within request_ms. At most max_connections are open; one more is
 * answered EBUSY and closed. On TCP, a request that fails before its token is checked (not
 * UTF-8, not a JSON object) or carries a wrong token is answered and the connection closed,
 * so a peer without the token cannot keep a connection. opd__admin_handle parses and runs
 * one request without a socket.
 *
 * cuda_register compiles CUDA C source with NVRTC ([Note: NVRTC kernels] in
 * opd/cuda_nvrtc.h) and registers it at the CUDA key of an operator, defining the operator
 * first when it is new; all or nothing, as a plugin's load. The compiled kernel lives as
 * long as its registration: deregistering it (which waits for the calls in flight) frees
 * it, and so does the admin's stop.
 */
#include "admin.h"

#include <arpa/inet.h>
#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "opd/checked.h"
#include "opd/clock.h"
#include "opd/cuda_nvrtc.h"
#include "opd/error.h"
#include "opd/introspect.h"
#include "opd/log.h"
#include "opd/memory.h"
#include "opd/utf8.h"
#include "config.h"
#include "graphs.h"
#include "plugins.h"
#include "worker.h"

#define MAX_FRAME (1024 * 1024)
#define MAX_REPLY (64 * 1024 * 1024)
#define MAX_TOKEN 512

const opd__admin_limits opd__admin_default_limits = {10000, 10000, 16};

/* A kernel registered by cuda_register. */
typedef struct cuda_reg {
  opd_reg_id id;
  opd_nvrtc_kernel *kernel;
  char *op;
  char origin[OPD_NVRTC_MAX_ENTRY + 8]; /* "nvrtc ENTRY": its provenance */
  struct cuda_reg *next;
} cuda_reg;

/* One admin connection ([Note: Admin connections]). */
typedef struct conn {
  int fd; /* -1: a free slot */
  bool tcp;
  bool writing;          /* sending `reply` (and reading nothing meanwhile) */
  unsigned char head[4]; /* the request's length while reading, the answer's while writing */
  uint32_t len;          /* the request's length, once head is read */
  size_t got;            /* bytes of head and body received */
  char *body;
  char *reply;
  size_t reply_len, put; /* put: bytes of head and reply sent */
  opd__admin_after after;
  int64_t deadline; /* ms of CLOCK_MONOTONIC */
} conn;

struct opd__admin {
  opd__admin_config cfg;
  opd__admin_limits limits;
  cuda_reg *cuda_regs; /* newest first */
  char *unix_path;
  int unix_fd, tcp_fd, tcp_port;
  int stop_pipe[2];
  char token[MAX_TOKEN];
  size_t token_len;
  opd__plugins *plugins;
  conn *conns;        /* limits.max_connections slots */
  struct pollfd *fds; /* the stop pipe, the two listeners, then one per slot */
  pthread_t thread;
  bool started;
};

/* ---- listeners ---- */

static int bind_unix(opd__admin *a, const char *path) {
  struct sockaddr_un sa = {.sun_family = AF_UNIX};
  if (strlen(path) >= sizeof sa.sun_path)
    return opd_error(OPD_EINVAL, "admin socket path '%.200s' is too long", path);
  strcpy(sa.sun_path, path);
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return opd_error(OPD_ERESOURCE, "admin socket: %s", strerror(errno));
  struct stat st;
  if (lstat(path, &st) == 0) {
    /* a live daemon answers on it; a stale socket file is replaced; anything else stays */
    if (!S_ISSOCK(st.st_mode)) {
      close(fd);
      return opd_error(OPD_EEXIST, "admin socket path '%s' exists and is not a socket", path);
    }
    if (connect(fd, (struct sockaddr *)&sa, sizeof sa) == 0) {
      close(fd);
      return opd_error(OPD_EEXIST, "admin socket '%s' is in use by a running daemon", path);
    }
    unlink(path);
  }
  /* created 0600 from the start: no window in which others could connect */
  mode_t old = umask(0177);
  int rc = bind(fd, (struct sockaddr *)&sa, sizeof sa);
  int err = errno;
  umask(old);
  if (rc != 0 || chmod(path, 0600) != 0 || listen(fd, 8) != 0) {
    close(fd);
    return opd_error(OPD_ERESOURCE, "admin socket '%s': %s", path, strerror(err));
  }
  a->unix_fd = fd;
  return 0;
}

static int bind_tcp(opd__admin *a, const char *hostport) {
  opd__listen_addr addr; /* the configuration's HOST:PORT form: [IPv6] in brackets */
  if (opd__parse_host_port(hostport, &addr) < 0)
    return opd_error(OPD_EINVAL, "admin_tcp '%.100s': expected HOST:PORT", hostport);
  char port[8];
  snprintf(port, sizeof port, "%d", addr.port);
  struct addrinfo hints = {.ai_family = AF_UNSPEC,
                           .ai_socktype = SOCK_STREAM,
                           .ai_flags = AI_NUMERICSERV | AI_PASSIVE},
                  *res;
  if (getaddrinfo(addr.host, port, &hints, &res) != 0)
    return opd_error(OPD_EINVAL, "admin_tcp '%.100s': bad address", hostport);
  int fd = socket(res->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0), one = 1;
  int rc = fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) != 0 ||
           bind(fd, res->ai_addr, res->ai_addrlen) != 0 || listen(fd, 8) != 0;
  int err = errno;
  freeaddrinfo(res);
  if (rc) {
    if (fd >= 0) close(fd);
    return opd_error(OPD_ERESOURCE, "admin_tcp '%.100s': %s", hostport, strerror(err));
  }
  struct sockaddr_storage ss;
  socklen_t len = sizeof ss;
  getsockname(fd, (struct sockaddr *)&ss, &len);
  a->tcp_port = ntohs(ss.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port
                                               : ((struct sockaddr_in *)&ss)->sin_port);
  a->tcp_fd = fd;
  return 0;
}

static int read_token(opd__admin *a, const char *path) {
  FILE *f = fopen(path, "r");
  if (!f) return opd_error(OPD_EINVAL, "admin_token_file '%.200s': %s", path, strerror(errno));
  size_t n = fread(a->token, 1, sizeof a->token - 1, f);
  bool more = fgetc(f) != EOF;
  fclose(f);
  while (n > 0 && (a->token[n - 1] == '\n' || a->token[n - 1] == '\r')) n--;
  a->token[n] = '\0';
  if (more || n == 0 || strlen(a->token) != n)
    return opd_error(OPD_EINVAL, "admin_token_file '%.200s': expected one line of 1 to %d bytes",
                     path, MAX_TOKEN - 2);
  a->token_len = n;
  return 0;
}

/* Compares in time that depends on the configured token's length only. Nothing matches
 * when no token is configured. */
static bool token_matches(const opd__admin *a, const char *got) {
  size_t glen = got ? strnlen(got, MAX_TOKEN) : 0;
  volatile unsigned char diff = (unsigned char)(glen != a->token_len);
  for (size_t i = 0; i < a->token_len; i++)
    diff |= (unsigned char)(a->token[i] ^ (i < glen ? got[i] : 0));
  return got && a->token_len > 0 && diff == 0;
}

/* ---- answers ---- */

/* s as a JSON string of valid UTF-8 ([Note: Strings on the wire are UTF-8]): itself, or a
 * copy with each byte that is not valid UTF-8 written as \xNN (names registered in process
 * or by plugins, a compiler's log and the plugin directory are not checked anywhere else).
 * NULL only when out of memory. */
static json_t *text_json(const char *s) {
  size_t len = strlen(s), cap;
  if (opd_utf8_valid(s, len)) return json_stringn(s, len);
  if (opd_ckd_mul(&cap, len, (size_t)4) || opd_ckd_add(&cap, cap, (size_t)1)) return NULL;
  char *buf = opd__malloc(cap);
  json_t *j = buf ? json_stringn(buf, opd_utf8_escape(buf, cap, s, len)) : NULL;
  opd__free(buf);
  return j;
}

/* A refusal: {"ok": false, "code": code, "error": the last error's message}. */
static json_t *refusal_json(const char *code) {
  return json_pack("{s:b, s:s, s:s}", "ok", 0, "code", code, "error", opd_last_error());
}

static json_t *error_json(int rc) {
  return refusal_json(opd_err_name(rc));
}

/* The JSON text of j (taken), opd__malloc'ed; NULL when out of memory. */
static char *dump(json_t *j, size_t *len) {
  char *text = j ? json_dumps(j, JSON_COMPACT) : NULL;
  json_decref(j);
  *len = text ? strlen(text) : 0;
  return text;
}

/* ---- request fields ---- */

/* The string field `key`: 0 with *out (NULL when it is absent and not required), or
 * OPD_EINVAL naming the op and the field. */
static int string_field(json_t *req, const char *op, const char *key, bool required,
                        const char **out) {
  json_t *v = json_object_get(req, key);
  *out = json_string_value(v);
  if (*out || (!v && !required)) return 0;
  return opd_error(OPD_EINVAL, "%s needs \"%s\" (a string)", op, key);
}

/* A boolean field (absent: false). */
static int bool_field(json_t *req, const char *op, const char *key, bool *out) {
  json_t *v = json_object_get(req, key);
  *out = json_is_true(v);
  if (!v || json_is_boolean(v)) return 0;
  return opd_error(OPD_EINVAL, "%s: \"%s\" is true or false", op, key);
}

/* A registration id: a positive integer. */
static int id_field(json_t *req, const char *op, const char *key, opd_reg_id *out) {
  json_t *v = json_object_get(req, key);
  *out = json_is_integer(v) ? json_integer_value(v) : 0;
  if (*out > 0) return 0;
  return opd_error(OPD_EINVAL, "%s needs \"%s\": a registration id (a positive integer)", op, key);
}

/* ---- NVRTC kernels ---- */

static void cuda_reg_free(cuda_reg *r) {
  opd_nvrtc_kernel_free(r->kernel);
  opd__free(r->op);
  opd__free(r);
}

static int op_cuda_register(opd__admin *a, json_t *req, json_t **out) {
  const char *source, *entry, *text, *rule, *dtypes;
  int rc;
  if ((rc = string_field(req, "cuda_register", "source", true, &source)) ||
      (rc = string_field(req, "cuda_register", "entry", true, &entry)) ||
      (rc = string_field(req, "cuda_register", "schema", true, &text)) ||
      (rc = string_field(req, "cuda_register", "launch", true, &rule)) ||
      (rc = string_field(req, "cuda_register", "dtypes", false, &dtypes)))
    return rc;
  opd_nvrtc_launch launch;
  if (strcmp(rule, "elementwise") == 0)
    launch = OPD_NVRTC_ELEMENTWISE;
  else if (strcmp(rule, "rows") == 0)
    launch = OPD_NVRTC_ROWS;
  else
    return opd_error(OPD_EINVAL, "launch '%.50s': expected \"elementwise\" or \"rows\"", rule);
  opd_schema *schema;
  if ((rc = opd_schema_parse(text, &schema)) < 0) return rc;
  char name[512];
  bool fits = opd_schema_qualified_name(schema, name, sizeof name) < (int)sizeof name;
  const opd_operator *op = fits ? opd_find_op(name) : NULL;
  /* NULL for an operator that has kernels but no def: it is defined here */
  const opd_schema *existing = op ? opd_op_schema(op) : NULL;
  opd_nvrtc_kernel *k = NULL;
  char *log = NULL;
  if (!fits)
    rc = opd_error(OPD_EINVAL, "the operator's name is longer than %zu bytes", sizeof name - 1);
  else if (!schema->ns[0])
    rc = opd_error(OPD_EINVAL, "the schema names the operator's namespace: ns::%s(...)", name);
  else if (existing && !opd_schema_equal(schema, existing))
    rc = opd_error(OPD_EEXIST, "operator %s exists with another schema", name);
  else if ((rc = opd_nvrtc_kernel_create(source, json_string_length(json_object_get(req, "source")),
                                         entry, schema, launch, dtypes, &k, &log)) < 0 &&
           log) {
    *out = json_pack("{s:o}", "log", text_json(log)); /* the compiler's words */
    opd__free(log);
  }
  opd_reg_id def = 0, id = 0;
  cuda_reg *r = NULL;
  if (rc == 0 && !existing && (def = opd__plugins_def(a->plugins, schema->ns, text)) < 0)
    rc = (int)def;
  if (rc == 0 && (!(r = opd__calloc(1, sizeof *r)) || !(r->op = opd__strdup(name))))
    rc = opd_error(OPD_ENOMEM, "out of memory registering %s", name);
  if (rc == 0) {
    snprintf(r->origin, sizeof r->origin, "nvrtc %s", entry);
    opd_kernel kernel = opd_nvrtc_kernel_boxed(k);
    opd_dispatch_key key;
    rc = opd_key_from_name("CUDA", &key);
    assert(rc == 0);
    if ((id = opd_impl(name, key, &kernel, (opd_provenance){r->origin, "admin", 0})) < 0)
      rc = (int)id;
  }
  if (rc == 0 && !(*out = json_pack("{s:I, s:o, s:s, s:s}", "id", (json_int_t)id, "def",
                                    def > 0 ? json_integer(def) : json_null(), "operator", name,
                                    "entry", entry))) {
    opd_deregister(id); /* [Note: A change the admin cannot report is undone] */
    rc = opd_error(OPD_ENOMEM, "out of memory answering cuda_register: nothing was registered");
  }
  if (rc < 0) { /* nothing stays */
    if (r) opd__free(r->op);
    opd__free(r);
    opd_nvrtc_kernel_free(k);
    if (def > 0) opd__plugins_deregister(a->plugins, def);
  } else {
    r->id = id;
    r->kernel = k;
    r->next = a->cuda_regs;
    a->cuda_regs = r;
    opd_log(OPD_LOG_INFO, "cuda_register: %s at CUDA (entry %s, %s): id %lld", name, entry, rule,
            (long long)id);
  }
  opd_schema_free(schema);
  return rc;
}

static json_t *cuda_regs_json(const opd__admin *a) {
  json_t *l = json_array();
  for (const cuda_reg *r = a->cuda_regs; r; r = r->next)
    json_array_append_new(l, json_pack("{s:I, s:s, s:s}", "id", (json_int_t)r->id, "operator",
                                       r->op, "origin", r->origin));
  return l;
}

/* ---- requests ---- */

static int op_status(opd__admin *a, json_t *req, json_t **out) {
  (void)a, (void)req;
  *out = json_pack("{s:s}", "server", "opd " OPD_VERSION);
  return 0;
}

static void add_op(const opd_operator *op, void *arg) {
  json_t *j = opd_op_json(op); /* read under the registry lock */
  json_t *regs = json_incref(json_object_get(j, "registrations"));
  json_decref(j);
  json_array_append_new(arg, json_pack("{s:o, s:o}", "name", text_json(opd_op_name(op)),
                                       "registrations", regs ? regs : json_array()));
}

static int op_list(opd__admin *a, json_t *req, json_t **out) {
  const char *name;
  int rc = string_field(req, "list", "name", false, &name);
  if (rc) return rc;
  if (name) {
    const opd_operator *o = opd_find_op(name);
    if (!o) return opd_error(OPD_ENOENT, "unknown operator '%.200s'", name);
    *out = json_pack("{s:o}", "operator", opd_op_json(o)); /* read under the registry lock */
  } else {
    json_t *ops = json_array();
    opd_for_each_op(add_op, ops);
    if ((*out = opd__plugins_list(a->plugins))) {
      json_object_set_new(*out, "plugin_dir", text_json(opd__plugins_dir(a->plugins)));
      json_object_set_new(*out, "operators", ops);
      json_object_set_new(*out, "cuda_registrations", cuda_regs_json(a));
    } else {
      json_decref(ops);
    }
  }
  return *out ? 0 : opd_error(OPD_ENOMEM, "out of memory listing the registrations");
}

static int op_load_plugin(opd__admin *a, json_t *req, json_t **out) {
  const char *file;
  int rc = string_field(req, "load_plugin", "file", true, &file);
  return rc ? rc : opd__plugins_load(a->plugins, file, out);
}

static int op_unload_plugin(opd__admin *a, json_t *req, json_t **out) {
  (void)out;
  const char *file;
  int rc = string_field(req, "unload_plugin", "file", true, &file);
  return rc ? rc : opd__plugins_unload(a->plugins, file);
}

static int deregister(opd__admin *a, opd_reg_id id, bool force);

/* {"id": id}, or the error id is; a registration that cannot be answered is removed ([Note:
 * A change the admin cannot report is undone]). */
static int id_answer(opd__admin *a, opd_reg_id id, json_t **out) {
  if (id < 0) return (int)id;
  if ((*out = json_pack("{s:I}", "id", (json_int_t)id))) return 0;
  deregister(a, id, true);
  return opd_error(OPD_ENOMEM, "out of memory answering: the registration was removed");
}

static int op_register(opd__admin *a, json_t *req, json_t **out) {
  const char *name, *key, *data;
  bool fallthrough;
  opd_reg_id kernel_of = 0;
  int rc;
  if ((rc = string_field(req, "register", "name", true, &name)) ||
      (rc = string_field(req, "register", "key", true, &key)) ||
      (rc = string_field(req, "register", "data", false, &data)) ||
      (rc = bool_field(req, "register", "fallthrough", &fallthrough)))
    return rc;
  bool has_kernel = json_object_get(req, "kernel_of") != NULL;
  if (fallthrough == has_kernel)
    return opd_error(OPD_EINVAL, "register needs one of \"kernel_of\" (a registration id) and "
                                 "\"fallthrough\": true");
  if (fallthrough)
    return data ? opd_error(OPD_EINVAL, "a fallthrough takes no kernel data")
                : id_answer(a, opd__plugins_register_fallthrough(a->plugins, name, key), out);
  if ((rc = id_field(req, "register", "kernel_of", &kernel_of))) return rc;
  return id_answer(a, opd__plugins_register(a->plugins, name, key, kernel_of, data), out);
}

static int op_def(opd__admin *a, json_t *req, json_t **out) {
  const char *ns, *schema;
  int rc;
  if ((rc = string_field(req, "def", "namespace", true, &ns)) ||
      (rc = string_field(req, "def", "schema", true, &schema)))
    return rc;
  return id_answer(a, opd__plugins_def(a->plugins, ns, schema), out);
}

static int op_register_fallback(opd__admin *a, json_t *req, json_t **out) {
  const char *key;
  bool fallthrough;
  int rc;
  if ((rc = string_field(req, "register_fallback", "key", true, &key)) ||
      (rc = bool_field(req, "register_fallback", "fallthrough", &fallthrough)))
    return rc;
  if (!fallthrough)
    return opd_error(OPD_EINVAL, "register_fallback needs \"fallthrough\": true (fallback "
                                 "kernels come from plugins)");
  return id_answer(a, opd__plugins_fallback_fallthrough(a->plugins, key), out);
}

/* [Note: What the admin may remove]
 * deregister removes by id alone what the admin interface made: a plugin's registrations
 * (its own and those register made from its kernels), the admin's defs, fallthroughs and
 * fallback fallthroughs, and cuda_register's kernels. Any other registration is built in
 * (opd's kernels and definitions, or an embedding program's), and ids are easy to mistype
 * or to copy from another daemon's output (docs/ADMIN.md once said `opctl deregister 270`,
 * which removed aten::mul.Tensor's CUDA kernel): removing one needs "force": true, and the
 * refusal says so. An id that names no registration is ENOENT either way. */
static int refuse_builtin(opd_reg_id id) {
  opd_kernel kernel;
  opd_provenance prov;
  int rc = opd_registration_kernel(id, &kernel, &prov);
  if (rc == OPD_ENOENT) return rc;
  if (rc == 0)
    return opd_error(OPD_EINVAL,
                     "registration %lld (kernel %.100s, %.20s %.200s:%d) is built in: removing it "
                     "needs \"force\": true (opctl deregister --force %lld)",
                     (long long)id, kernel.name ? kernel.name : "(unnamed)",
                     prov.origin ? prov.origin : "", prov.file ? prov.file : "", prov.line,
                     (long long)id);
  return opd_error(OPD_EINVAL,
                   "registration %lld (a definition or a fallthrough) is built in: removing it "
                   "needs \"force\": true (opctl deregister --force %lld)",
                   (long long)id, (long long)id);
}

/* Deregisters any registration; an NVRTC kernel's code goes with its registration. */
static int deregister(opd__admin *a, opd_reg_id id, bool force) {
  cuda_reg **link = &a->cuda_regs;
  while (*link && (*link)->id != id) link = &(*link)->next;
  if (!*link && !force && !opd__plugins_owns(a->plugins, id)) return refuse_builtin(id);
  int rc = opd__plugins_deregister(a->plugins, id);
  if (rc == 0 && *link) {
    cuda_reg *r = *link;
    *link = r->next;
    cuda_reg_free(r); /* the deregistration waited for the calls in flight */
  }
  return rc;
}

static int op_deregister(opd__admin *a, json_t *req, json_t **out) {
  (void)out;
  opd_reg_id id;
  bool force;
  int rc;
  if ((rc = id_field(req, "deregister", "id", &id)) ||
      (rc = bool_field(req, "deregister", "force", &force)))
    return rc;
  return deregister(a, id, force);
}

/* [Note: A change the admin cannot report is undone]
 * A request that changed the registrations must not be answered "out of memory" while the
 * change stays: the operator would retry, or give up, on a daemon that did what it was told.
 * So each op builds its answer right after its change and undoes the change when that
 * fails (id_answer, cuda_register, opd__plugins_load), and when the answer made cannot be
 * completed or written out, undo_answer removes what it names: its "id" and "def", or the
 * plugin it loaded with all its registrations. jansson does not always report a failed
 * allocation (an array append that fails leaves the array short), so any allocation that
 * failed while a request was answered (opd__alloc_failures) makes the answer "out of
 * memory", and a change it reported is undone. */
static void undo_answer(opd__admin *a, json_t *out) {
  const char *keys[] = {"id", "def"};
  for (size_t i = 0; i < sizeof keys / sizeof *keys; i++) {
    json_t *v = json_object_get(out, keys[i]);
    if (json_is_integer(v)) deregister(a, json_integer_value(v), true);
  }
  const char *plugin = json_string_value(json_object_get(out, "plugin"));
  if (plugin) opd__plugins_discard(a->plugins, plugin); /* its list may be incomplete */
}

/* graph_pass {name, enabled}: [Note: Disabling a pass from the admin] in graphs.h. */
static int op_graph_pass(opd__admin *a, json_t *req, json_t **out) {
  (void)a;
  const char *name;
  json_t *enabled = json_object_get(req, "enabled");
  int rc = string_field(req, "graph_pass", "name", true, &name);
  if (rc) return rc;
  if (!json_is_boolean(enabled))
    return opd_error(OPD_EINVAL, "graph_pass needs \"enabled\": true or false");
  if ((rc = opd__graph_pass_set_enabled(name, json_is_true(enabled))) < 0) return rc;
  *out = json_pack("{s:o}", "disabled_passes", opd__graph_passes_disabled_json());
  return *out ? 0 : opd_error(OPD_ENOMEM, "out of memory answering graph_pass");
}

/* set_priority {session, priority}: [Note: Fair sharing of workers] in worker.h. */
static int op_set_priority(opd__admin *a, json_t *req, json_t **out) {
  json_t *id = json_object_get(req, "session");
  const char *name;
  int rc = string_field(req, "set_priority", "priority", true, &name);
  if (rc) return rc;
  if (!json_is_integer(id) || json_integer_value(id) <= 0)
    return opd_error(OPD_EINVAL,
                     "set_priority needs \"session\": a session id (a positive integer, as in "
                     "/v1/sessions)");
  int p = 0;
  while (p < OPD__NUM_PRIORITIES && strcmp(opd__priority_name((opd_priority)p), name) != 0) p++;
  if (p == OPD__NUM_PRIORITIES)
    return opd_error(OPD_EINVAL,
                     "set_priority: \"priority\" is low, normal or high, not \"%.100s\"", name);
  if (!a->cfg.set_priority)
    return opd_error(OPD_EINVAL, "set_priority: this admin serves no sessions");
  if ((rc = a->cfg.set_priority(a->cfg.arg, (uint64_t)json_integer_value(id), (opd_priority)p)) < 0)
    return rc;
  *out = json_pack("{s:I, s:s}", "session", json_integer_value(id), "priority", name);
  return *out ? 0 : opd_error(OPD_ENOMEM, "out of memory answering set_priority");
}

/* shutdown: answered, then the connection's `after` does the work. */
static int op_stop(opd__admin *a, json_t *req, json_t **out) {
  (void)a, (void)req, (void)out;
  return 0;
}

int opd__admin_load_plugin(opd__admin *a, const char *file) {
  json_t *result = NULL;
  int rc = opd__plugins_load(a->plugins, file, &result);
  json_decref(result);
  return rc;
}

/* drain and undrain: the server's session drain ([Note: Session drain] in loop.c). */
static int set_draining(opd__admin *a, bool draining, json_t **out) {
  if (!a->cfg.set_draining)
    return opd_error(OPD_EINVAL, "%s: this admin serves no sessions",
                     draining ? "drain" : "undrain");
  a->cfg.set_draining(a->cfg.arg, draining);
  *out = json_pack("{s:b}", "draining", draining);
  return *out ? 0 : opd_error(OPD_ENOMEM, "out of memory answering a drain");
}

static int op_drain(opd__admin *a, json_t *req, json_t **out) {
  (void)req;
  return set_draining(a, true, out);
}

static int op_undrain(opd__admin *a, json_t *req, json_t **out) {
  (void)req;
  return set_draining(a, false, out);
}

static const struct admin_op {
  const char *name;
  int (*run)(opd__admin *a, json_t *req, json_t **out);
  opd__admin_after after;
} admin_ops[] = {
    {"status", op_status, OPD__ADMIN_KEEP},
    {"list", op_list, OPD__ADMIN_KEEP},
    {"load_plugin", op_load_plugin, OPD__ADMIN_KEEP},
    {"unload_plugin", op_unload_plugin, OPD__ADMIN_KEEP},
    {"register", op_register, OPD__ADMIN_KEEP},
    {"def", op_def, OPD__ADMIN_KEEP},
    {"register_fallback", op_register_fallback, OPD__ADMIN_KEEP},
    {"deregister", op_deregister, OPD__ADMIN_KEEP},
    {"cuda_register", op_cuda_register, OPD__ADMIN_KEEP},
    {"graph_pass", op_graph_pass, OPD__ADMIN_KEEP},
    {"set_priority", op_set_priority, OPD__ADMIN_KEEP},
    {"drain", op_drain, OPD__ADMIN_KEEP},
    {"undrain", op_undrain, OPD__ADMIN_KEEP},
    {"shutdown", op_stop, OPD__ADMIN_SHUTDOWN},
};

/* The offset of the first byte of s that is not part of valid UTF-8 (len: none). */
static size_t first_invalid_utf8(const char *s, size_t len) {
  for (size_t i = 0; i < len;) {
    size_t n = 1; /* the length of the sequence at i: the shortest valid prefix */
    while (n <= 4 && n <= len - i && !opd_utf8_valid(s + i, n)) n++;
    if (n > 4 || n > len - i) return i;
    i += n;
  }
  return len;
}

/* The answer to one request; *after: what the connection does once it is sent. */
static json_t *answer(opd__admin *a, const char *request, size_t len, bool tcp,
                      opd__admin_after *after) {
  *after = tcp ? OPD__ADMIN_CLOSE : OPD__ADMIN_KEEP; /* until the token is checked */
  size_t bad = first_invalid_utf8(request, len);
  if (bad < len) {
    size_t from = bad > 16 ? bad - 16 : 0, n = len - from < 48 ? len - from : 48;
    char shown[4 * 48 + 1]; /* the bytes around it, escaped */
    opd_utf8_escape(shown, sizeof shown, request + from, n);
    opd_error(OPD_EINVAL, "admin request is not valid UTF-8 at byte %zu (near '%s')", bad, shown);
    return error_json(OPD_EINVAL);
  }
  json_error_t jerr;
  /* jansson 2.14 may report a failed allocation as bad syntax, or even drop a byte of a
   * string and succeed: any failure while it parses means the request was not read */
  unsigned failures = opd__alloc_failures();
  json_t *req = json_loadb(request, len, JSON_REJECT_DUPLICATES, &jerr);
  if (opd__alloc_failures() != failures) {
    json_decref(req);
    opd_error(OPD_ENOMEM, "out of memory reading an admin request of %zu bytes", len);
    return error_json(OPD_ENOMEM);
  }
  if (!json_is_object(req)) {
    opd_error(OPD_EINVAL, "admin request is not a JSON object%s%s", req ? "" : ": ",
              req ? "" : jerr.text);
    json_decref(req);
    return error_json(OPD_EINVAL);
  }
  if (tcp && !token_matches(a, json_string_value(json_object_get(req, "token")))) {
    json_decref(req);
    opd_error(OPD_EINVAL, "unauthorized: missing or wrong admin token");
    return refusal_json("UNAUTHORIZED");
  }
  *after = OPD__ADMIN_KEEP;
  const char *name = json_string_value(json_object_get(req, "op"));
  const struct admin_op *op = NULL;
  for (size_t i = 0; name && !op && i < sizeof admin_ops / sizeof *admin_ops; i++)
    if (strcmp(admin_ops[i].name, name) == 0) op = &admin_ops[i];
  json_t *out = NULL;
  int rc = !name ? opd_error(OPD_EINVAL, "a request is a JSON object with an \"op\" string")
           : !op ? opd_error(OPD_EINVAL, "unknown admin op '%.100s'", name)
                 : op->run(a, req, &out);
  json_decref(req);
  if (rc) {
    json_t *err = error_json(rc);
    json_t *log = json_object_get(out, "log"); /* a compile error's log */
    if (log) json_object_set(err, "log", log);
    json_decref(out);
    return err;
  }
  *after = op->after;
  if (!out) out = json_object();
  if (!out || json_object_set_new(out, "ok", json_true()) < 0) {
    undo_answer(a, out); /* [Note: A change the admin cannot report is undone] */
    json_decref(out);
    *after = OPD__ADMIN_KEEP;
    opd_error(OPD_ENOMEM, "out of memory answering the admin request: it was undone");
    return error_json(OPD_ENOMEM);
  }
  return out;
}

int opd__admin_handle(opd__admin *a, const char *request, size_t len, bool tcp, char **reply,
                      size_t *reply_len) {
  opd__admin_after after;
  unsigned failures = opd__alloc_failures();
  json_t *ans = answer(a, request, len, tcp, &after);
  json_incref(ans);
  *reply = dump(ans, reply_len);
  if (opd__alloc_failures() != failures) { /* the answer may be short of something */
    if (json_is_true(json_object_get(ans, "ok")))
      undo_answer(a, ans); /* [Note: A change the admin cannot report is undone] */
    opd__free(*reply);
    *reply = NULL;
    after = OPD__ADMIN_KEEP;
  }
  json_decref(ans);
  if (*reply && *reply_len > MAX_REPLY) {
    opd__free(*reply);
    opd_error(OPD_ERESOURCE, "the answer (%zu bytes) is larger than %d bytes", *reply_len,
              MAX_REPLY);
    *reply = dump(error_json(OPD_ERESOURCE), reply_len);
  }
  if (!*reply) {
    /* [Note: Strings on the wire are UTF-8]: answers are built of checked strings, so only a
     * lack of memory gets here; the peer is told, if even that copy can be made */
    *reply = opd__strdup("{\"ok\":false,\"code\":\"ENOMEM\",\"error\":\"out of memory "
                         "answering the admin request\"}");
    if (!*reply) return OPD_ENOMEM;
    *reply_len = strlen(*reply);
    return OPD__ADMIN_CLOSE;
  }
  return (int)after;
}

/* ---- connections ([Note: Admin connections]) ---- */

/* A socket (or -1) made non-blocking: the admin thread never waits on one (a listener
 * whose connection went away between poll and accept included). */
static int set_nonblocking(int fd) {
  if (fd < 0) return 0;
  int flags = fcntl(fd, F_GETFL);
  if (flags >= 0 && fcntl(fd, F_SETFL, flags | O_NONBLOCK) == 0) return 0;
  return opd_error(OPD_ERESOURCE, "admin socket: %s", strerror(errno));
}

static int64_t now_ms(void) {
  return (int64_t)(opd_monotonic_ns() / 1000000);
}

static void put_be32(unsigned char *b, size_t n) {
  uint32_t be = htonl((uint32_t)n);
  memcpy(b, &be, 4);
}

/* Sends a short answer at once, as far as the socket takes it: to a connection about to be
 * closed. */
static void send_now(int fd, json_t *j) {
  size_t n;
  char *text = dump(j, &n);
  if (!text) return;
  unsigned char head[4];
  put_be32(head, n);
  struct iovec iov[2] = {{head, 4}, {text, n}};
  struct msghdr m = {.msg_iov = iov, .msg_iovlen = 2};
  ssize_t sent = sendmsg(fd, &m, MSG_NOSIGNAL | MSG_DONTWAIT);
  (void)sent; /* the connection closes whatever happened */
  opd__free(text);
}

static void conn_close(conn *c) {
  close(c->fd);
  opd__free(c->body);
  opd__free(c->reply);
  *c = (conn){.fd = -1};
}

/* Writes what the socket takes of the answer; once it is all sent, does what follows it. */
static void conn_write(opd__admin *a, conn *c) {
  while (c->put < 4 + c->reply_len) {
    struct iovec iov[2];
    int n = 0;
    if (c->put < 4) iov[n++] = (struct iovec){c->head + c->put, 4 - c->put};
    size_t off = c->put < 4 ? 0 : c->put - 4;
    iov[n++] = (struct iovec){c->reply + off, c->reply_len - off};
    struct msghdr m = {.msg_iov = iov, .msg_iovlen = (size_t)n};
    ssize_t w = sendmsg(c->fd, &m, MSG_NOSIGNAL);
    if (w < 0 && errno == EINTR) continue;
    if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return; /* the rest on POLLOUT */
    if (w <= 0) {
      conn_close(c);
      return;
    }
    c->put += (size_t)w;
  }
  opd__free(c->reply);
  c->reply = NULL;
  c->writing = false;
  opd__admin_after after = c->after;
  if (after == OPD__ADMIN_KEEP) {
    c->got = 0;
    c->deadline = now_ms() + a->limits.idle_ms;
    return;
  }
  conn_close(c);
  if (after == OPD__ADMIN_SHUTDOWN && a->cfg.on_shutdown) a->cfg.on_shutdown(a->cfg.arg);
}

static void conn_reply(opd__admin *a, conn *c, char *reply, size_t len, opd__admin_after after) {
  put_be32(c->head, len);
  c->reply = reply;
  c->reply_len = len;
  c->put = 0;
  c->after = after;
  c->writing = true;
  c->deadline = now_ms() + a->limits.request_ms;
  conn_write(a, c);
}

/* The request is whole: runs it and starts its answer. */
static void conn_run(opd__admin *a, conn *c) {
  char *reply;
  size_t len;
  int after = opd__admin_handle(a, c->body, c->len, c->tcp, &reply, &len);
  opd__free(c->body);
  c->body = NULL;
  if (after < 0)
    conn_close(c);
  else
    conn_reply(a, c, reply, len, (opd__admin_after)after);
}

static void conn_expire(opd__admin *a, conn *c) {
  if (!c->writing && c->got > 0) {
    opd_error(OPD_ECANCELED,
              "the admin request did not arrive whole within %d ms: the connection is closed",
              a->limits.request_ms);
    send_now(c->fd, refusal_json("ETIMEDOUT"));
  }
  conn_close(c);
}

/* Reads what has arrived of the request; runs it once it is whole. */
static void conn_read(opd__admin *a, conn *c) {
  for (;;) {
    bool in_head = c->got < 4;
    char *dst = in_head ? (char *)c->head + c->got : c->body + (c->got - 4);
    size_t want = in_head ? 4 - c->got : c->len - (c->got - 4);
    ssize_t r = read(c->fd, dst, want);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      /* all that came is read and the request is still not whole: a peer that keeps a
       * byte coming for every poll does not outlive its deadline either */
      if (c->got > 0 && now_ms() >= c->deadline) conn_expire(a, c);
      return;
    }
    if (r <= 0) {
      conn_close(c);
      return;
    }
    if (c->got == 0) c->deadline = now_ms() + a->limits.request_ms; /* its first byte */
    c->got += (size_t)r;
    if (c->got == 4) {
      uint32_t be;
      memcpy(&be, c->head, 4);
      c->len = ntohl(be);
      if (c->len == 0 || c->len > MAX_FRAME) {
        opd_error(OPD_EINVAL, "admin frame of %u bytes (1 to %d)", c->len, MAX_FRAME);
        size_t n;
        char *reply = dump(error_json(OPD_EINVAL), &n);
        if (reply)
          conn_reply(a, c, reply, n, OPD__ADMIN_CLOSE);
        else
          conn_close(c);
        return;
      }
      if (!(c->body = opd__malloc(c->len))) {
        opd_error(OPD_ENOMEM, "out of memory for an admin request of %u bytes", c->len);
        send_now(c->fd, error_json(OPD_ENOMEM));
        conn_close(c);
        return;
      }
    } else if (c->got == 4 + (size_t)c->len) {
      conn_run(a, c);
      return;
    }
  }
}

static void accept_conn(opd__admin *a, int listener, bool tcp) {
  int fd = accept(listener, NULL, NULL);
  if (fd < 0) return;
  if (fcntl(fd, F_SETFD, FD_CLOEXEC) != 0 || set_nonblocking(fd) != 0) {
    close(fd);
    return;
  }
  for (int i = 0; i < a->limits.max_connections; i++)
    if (a->conns[i].fd < 0) {
      a->conns[i] = (conn){.fd = fd, .tcp = tcp, .deadline = now_ms() + a->limits.idle_ms};
      return;
    }
  opd_error(OPD_EBUSY, "too many admin connections (%d are open): try again later",
            a->limits.max_connections);
  send_now(fd, error_json(OPD_EBUSY));
  close(fd);
}

static void *admin_main(void *arg) {
  opd__admin *a = arg;
  int slots = a->limits.max_connections;
  struct pollfd *fds = a->fds;
  for (;;) {
    int64_t now = now_ms(), wait = -1;
    fds[0] = (struct pollfd){a->stop_pipe[0], POLLIN, 0};
    fds[1] = (struct pollfd){a->unix_fd, POLLIN, 0};
    fds[2] = (struct pollfd){a->tcp_fd, POLLIN, 0};
    for (int i = 0; i < slots; i++) {
      const conn *c = &a->conns[i];
      fds[3 + i] = (struct pollfd){c->fd, c->writing ? POLLOUT : POLLIN, 0};
      int64_t left = c->deadline > now ? c->deadline - now : 0;
      if (c->fd >= 0 && (wait < 0 || left < wait)) wait = left;
    }
    if (poll(fds, (nfds_t)(3 + slots), wait > INT_MAX ? INT_MAX : (int)wait) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    if (fds[0].revents) break;
    /* the deadlines first, against what this poll saw: a request that runs long below does
     * not expire a connection whose bytes arrived meanwhile */
    now = now_ms();
    for (int i = 0; i < slots; i++)
      if (a->conns[i].fd >= 0 && !fds[3 + i].revents && a->conns[i].deadline <= now)
        conn_expire(a, &a->conns[i]);
    for (int i = 0; i < slots; i++) {
      conn *c = &a->conns[i];
      if (c->fd < 0 || !fds[3 + i].revents) continue;
      if (c->writing)
        conn_write(a, c);
      else
        conn_read(a, c);
    }
    for (int i = 1; i < 3; i++)
      if (fds[i].revents & POLLIN) accept_conn(a, fds[i].fd, i == 2);
  }
  for (int i = 0; i < slots; i++)
    if (a->conns[i].fd >= 0) conn_close(&a->conns[i]);
  return NULL;
}

/* ---- start and stop ---- */

int opd__admin_start(const opd__admin_config *c, opd__admin **out) {
  return opd__admin_start_limited(c, &opd__admin_default_limits, out);
}

int opd__admin_start_limited(const opd__admin_config *c, const opd__admin_limits *limits,
                             opd__admin **out) {
  if (limits->idle_ms <= 0 || limits->request_ms <= 0 || limits->max_connections <= 0 ||
      limits->max_connections > 1024)
    return opd_error(OPD_EINVAL, "admin limits: positive times and 1 to 1024 connections");
  opd__admin *a = opd__calloc(1, sizeof *a);
  if (!a) return opd_error(OPD_ENOMEM, "out of memory");
  a->cfg = *c;
  a->limits = *limits;
  a->unix_fd = a->tcp_fd = a->tcp_port = -1;
  a->stop_pipe[0] = a->stop_pipe[1] = -1;
  int rc = 0;
  if (!(a->conns = opd__calloc((size_t)limits->max_connections, sizeof *a->conns)) ||
      !(a->fds = opd__calloc(3 + (size_t)limits->max_connections, sizeof *a->fds)))
    rc = opd_error(OPD_ENOMEM, "out of memory");
  for (int i = 0; rc == 0 && i < limits->max_connections; i++) a->conns[i].fd = -1;
  bool tcp = c->tcp && c->tcp[0];
  if (rc == 0 && tcp && !(c->token_file && c->token_file[0]))
    rc = opd_error(OPD_EINVAL, "admin_tcp needs admin_token_file: a TCP admin listener always "
                               "requires a token");
  if (rc == 0 && tcp) rc = read_token(a, c->token_file);
  if (rc == 0) rc = opd__plugins_new(c->plugin_dir, &a->plugins);
  if (rc == 0 && c->unix_path && c->unix_path[0]) {
    if (!(a->unix_path = opd__strdup(c->unix_path)))
      rc = opd_error(OPD_ENOMEM, "out of memory");
    else if ((rc = bind_unix(a, c->unix_path)) != 0) {
      opd__free(a->unix_path);
      a->unix_path = NULL;
    }
  }
  if (rc == 0 && tcp) rc = bind_tcp(a, c->tcp);
  if (rc == 0 && (rc = set_nonblocking(a->unix_fd)) == 0) rc = set_nonblocking(a->tcp_fd);
  if (rc == 0 && pipe(a->stop_pipe) != 0)
    rc = opd_error(OPD_ERESOURCE, "admin: pipe: %s", strerror(errno));
  if (rc == 0) {
    int err = pthread_create(&a->thread, NULL, admin_main, a);
    if (err) rc = opd_error(OPD_ERESOURCE, "admin thread: %s", strerror(err));
    a->started = err == 0;
  }
  if (rc) {
    opd__admin_stop(a);
    return rc;
  }
  *out = a;
  return 0;
}

int opd__admin_tcp_port(const opd__admin *a) {
  return a->tcp_port;
}

void opd__admin_stop(opd__admin *a) {
  if (!a) return;
  if (a->started) {
    char b = 0;
    while (write(a->stop_pipe[1], &b, 1) < 0 && errno == EINTR) {
    }
    pthread_join(a->thread, NULL);
  }
  for (int i = 0; i < 2; i++)
    if (a->stop_pipe[i] >= 0) close(a->stop_pipe[i]);
  if (a->unix_fd >= 0) {
    close(a->unix_fd);
    unlink(a->unix_path);
  }
  opd__free(a->unix_path);
  if (a->tcp_fd >= 0) close(a->tcp_fd);
  while (a->cuda_regs) { /* before the admin's defs they may use */
    cuda_reg *r = a->cuda_regs;
    a->cuda_regs = r->next;
    opd_deregister(r->id);
    cuda_reg_free(r);
  }
  opd__plugins_free(a->plugins);
  opd__free(a->conns);
  opd__free(a->fds);
  opd__free(a);
}

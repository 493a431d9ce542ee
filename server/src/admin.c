/* admin.c: the admin listener and its requests (see admin.h and docs/ADMIN.md).
 *
 * One thread polls the listeners and serves one admin connection at a time (admin
 * requests are rare and each runs to completion: a plugin load, a registration change and
 * its grace period). A connection that sends nothing for ten seconds is closed. Frames
 * are a 4-byte big-endian length and that many bytes of JSON (at most 1 MiB: room for
 * the CUDA source of cuda_register, at most OPD_NVRTC_MAX_SOURCE bytes).
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
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#include "opd/cuda_nvrtc.h"
#include "opd/error.h"
#include "opd/introspect.h"
#include "opd/log.h"
#include "opd/memory.h"
#include "plugins.h"

#define MAX_FRAME    (1024 * 1024)
#define MAX_TOKEN    512
#define IO_TIMEOUT_S 10

/* A kernel registered by cuda_register. */
typedef struct cuda_reg {
  opd_reg_id id;
  opd_nvrtc_kernel *kernel;
  char *op;
  char origin[OPD_NVRTC_MAX_ENTRY + 8]; /* "nvrtc ENTRY": its provenance */
  struct cuda_reg *next;
} cuda_reg;

struct opd__admin {
  opd__admin_config cfg;
  cuda_reg *cuda_regs; /* newest first */
  char *unix_path;
  int unix_fd, tcp_fd, tcp_port;
  int stop_pipe[2];
  char token[MAX_TOKEN];
  size_t token_len;
  opd__plugins *plugins;
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
  char host[80];
  const char *colon = strrchr(hostport, ':');
  if (!colon || (size_t)(colon - hostport) >= sizeof host)
    return opd_error(OPD_EINVAL, "admin_tcp '%.100s': expected HOST:PORT", hostport);
  memcpy(host, hostport, (size_t)(colon - hostport));
  host[colon - hostport] = '\0';
  struct addrinfo hints = {.ai_family = AF_UNSPEC,
                           .ai_socktype = SOCK_STREAM,
                           .ai_flags = AI_NUMERICSERV | AI_PASSIVE},
                  *res;
  if (getaddrinfo(host, colon + 1, &hints, &res) != 0)
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

/* Compares in time that depends on the configured token's length only. */
static bool token_matches(const opd__admin *a, const char *got) {
  size_t glen = got ? strnlen(got, MAX_TOKEN) : 0;
  volatile unsigned char diff = (unsigned char)(glen != a->token_len);
  for (size_t i = 0; i < a->token_len; i++)
    diff |= (unsigned char)(a->token[i] ^ (i < glen ? got[i] : 0));
  return got && diff == 0;
}

/* ---- frames ---- */

static int read_full(int fd, void *buf, size_t n) {
  for (size_t got = 0; got < n;) {
    ssize_t r = read(fd, (char *)buf + got, n - got);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return -1;
    got += (size_t)r;
  }
  return 0;
}

static int write_full(int fd, const void *buf, size_t n) {
  for (size_t put = 0; put < n;) {
    ssize_t w = send(fd, (const char *)buf + put, n - put, MSG_NOSIGNAL);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return -1;
    put += (size_t)w;
  }
  return 0;
}

static int send_json(int fd, json_t *j) {
  char *text = json_dumps(j, JSON_COMPACT);
  json_decref(j);
  if (!text) return -1;
  size_t n = strlen(text);
  uint32_t be = htonl((uint32_t)n);
  int rc = n > MAX_FRAME * 64 || write_full(fd, &be, 4) || write_full(fd, text, n) ? -1 : 0;
  opd__free(text);
  return rc;
}

static json_t *error_json(int rc) {
  return json_pack("{s:b, s:s, s:s}", "ok", 0, "code", opd_err_name(rc), "error", opd_last_error());
}

/* ---- requests ---- */

static void add_op(const opd_operator *op, void *arg) {
  json_t *j = opd_op_json(op);
  json_array_append_new(arg, json_pack("{s:s, s:O}", "name", opd_op_name(op), "registrations",
                                       json_object_get(j, "registrations")));
  json_decref(j);
}

/* ---- NVRTC kernels ---- */

static void cuda_reg_free(cuda_reg *r) {
  opd_nvrtc_kernel_free(r->kernel);
  opd__free(r->op);
  opd__free(r);
}

static int cuda_register(opd__admin *a, json_t *req, json_t **out) {
  json_t *src = json_object_get(req, "source");
  const char *source = json_string_value(src),
             *entry = json_string_value(json_object_get(req, "entry")),
             *text = json_string_value(json_object_get(req, "schema")),
             *rule = json_string_value(json_object_get(req, "launch"));
  if (!source || !entry || !text || !rule)
    return opd_error(OPD_EINVAL, "cuda_register needs \"source\", \"entry\", \"schema\" and "
                                 "\"launch\" (\"elementwise\" or \"rows\")");
  opd_nvrtc_launch launch;
  if (strcmp(rule, "elementwise") == 0)
    launch = OPD_NVRTC_ELEMENTWISE;
  else if (strcmp(rule, "rows") == 0)
    launch = OPD_NVRTC_ROWS;
  else
    return opd_error(OPD_EINVAL, "launch '%.50s': expected \"elementwise\" or \"rows\"", rule);
  opd_schema *schema;
  int rc = opd_schema_parse(text, &schema);
  if (rc < 0) return rc;
  char name[512];
  opd_schema_qualified_name(schema, name, sizeof name);
  const opd_operator *existing = opd_find_op(name);
  opd_nvrtc_kernel *k = NULL;
  char *log = NULL;
  if (!schema->ns[0])
    rc = opd_error(OPD_EINVAL, "the schema names the operator's namespace: ns::%s(...)", name);
  else if (existing && !opd_schema_equal(schema, opd_op_schema(existing)))
    rc = opd_error(OPD_EEXIST, "operator %s exists with another schema", name);
  else if ((rc = opd_nvrtc_kernel_create(source, json_string_length(src), entry, schema, launch, &k,
                                         &log)) < 0 &&
           log) {
    *out = json_pack("{s:s}", "log", log); /* the compiler's words, verbatim */
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
    *out = json_pack("{s:I, s:o, s:s, s:s}", "id", (json_int_t)id, "def",
                     def > 0 ? json_integer(def) : json_null(), "operator", name, "entry", entry);
    opd_log(OPD_LOG_INFO, "cuda_register: %s at CUDA (entry %s, %s): id %lld", name, entry, rule,
            (long long)id);
  }
  opd_schema_free(schema);
  return rc;
}

/* Deregisters any registration; an NVRTC kernel's code goes with its registration. */
static int deregister(opd__admin *a, opd_reg_id id) {
  cuda_reg **link = &a->cuda_regs;
  while (*link && (*link)->id != id) link = &(*link)->next;
  int rc = opd__plugins_deregister(a->plugins, id);
  if (rc == 0 && *link) {
    cuda_reg *r = *link;
    *link = r->next;
    cuda_reg_free(r); /* the deregistration waited for the calls in flight */
  }
  return rc;
}

static json_t *cuda_regs_json(const opd__admin *a) {
  json_t *l = json_array();
  for (const cuda_reg *r = a->cuda_regs; r; r = r->next)
    json_array_append_new(l, json_pack("{s:I, s:s, s:s}", "id", (json_int_t)r->id, "operator",
                                       r->op, "origin", r->origin));
  return l;
}

/* The answer to one request; *shutdown set for drain and shutdown. */
static json_t *handle(opd__admin *a, json_t *req, int *shutdown) {
  const char *op = json_string_value(json_object_get(req, "op"));
  int rc = 0;
  json_t *out = NULL;
  if (!op) {
    rc = opd_error(OPD_EINVAL, "a request is a JSON object with an \"op\" string");
  } else if (strcmp(op, "status") == 0) {
    out = json_pack("{s:s}", "server", "opd " OPD_VERSION);
  } else if (strcmp(op, "list") == 0) {
    const char *name = json_string_value(json_object_get(req, "name"));
    if (name) {
      const opd_operator *o = opd_find_op(name);
      if (!o)
        rc = opd_error(OPD_ENOENT, "unknown operator '%.200s'", name);
      else
        out = json_pack("{s:o}", "operator", opd_op_json(o));
    } else {
      json_t *ops = json_array();
      opd_for_each_op(add_op, ops);
      out = opd__plugins_list(a->plugins);
      json_object_set_new(out, "operators", ops);
      json_object_set_new(out, "cuda_registrations", cuda_regs_json(a));
    }
  } else if (strcmp(op, "load_plugin") == 0) {
    const char *file = json_string_value(json_object_get(req, "file"));
    rc = file ? opd__plugins_load(a->plugins, file, &out)
              : opd_error(OPD_EINVAL, "load_plugin needs \"file\"");
  } else if (strcmp(op, "unload_plugin") == 0) {
    const char *file = json_string_value(json_object_get(req, "file"));
    rc = file ? opd__plugins_unload(a->plugins, file)
              : opd_error(OPD_EINVAL, "unload_plugin needs \"file\"");
  } else if (strcmp(op, "register") == 0) {
    const char *name = json_string_value(json_object_get(req, "name"));
    const char *key = json_string_value(json_object_get(req, "key"));
    json_t *of = json_object_get(req, "kernel_of"), *data = json_object_get(req, "data");
    bool ft = json_is_true(json_object_get(req, "fallthrough"));
    if (!name || !key || (ft == json_is_integer(of)) || (of && !json_is_integer(of)) ||
        (data && !json_is_string(data)))
      rc = opd_error(OPD_EINVAL, "register needs \"name\", \"key\" and one of \"kernel_of\" (a "
                                 "registration id) or \"fallthrough\": true; \"data\" is a string");
    else {
      opd_reg_id id = opd__plugins_register(a->plugins, name, key, ft ? 0 : json_integer_value(of),
                                            json_string_value(data));
      if (id < 0)
        rc = (int)id;
      else
        out = json_pack("{s:I}", "id", (json_int_t)id);
    }
  } else if (strcmp(op, "def") == 0) {
    const char *ns = json_string_value(json_object_get(req, "namespace"));
    const char *schema = json_string_value(json_object_get(req, "schema"));
    opd_reg_id id = ns && schema ? opd__plugins_def(a->plugins, ns, schema)
                                 : opd_error(OPD_EINVAL, "def needs \"namespace\" and \"schema\"");
    if (id < 0)
      rc = (int)id;
    else
      out = json_pack("{s:I}", "id", (json_int_t)id);
  } else if (strcmp(op, "register_fallback") == 0) {
    const char *key = json_string_value(json_object_get(req, "key"));
    opd_reg_id id =
        key && json_is_true(json_object_get(req, "fallthrough"))
            ? opd__plugins_fallback_fallthrough(a->plugins, key)
            : opd_error(OPD_EINVAL, "register_fallback needs \"key\" and \"fallthrough\": true "
                                    "(fallback kernels come from plugins)");
    if (id < 0)
      rc = (int)id;
    else
      out = json_pack("{s:I}", "id", (json_int_t)id);
  } else if (strcmp(op, "deregister") == 0) {
    json_t *id = json_object_get(req, "id");
    rc = json_is_integer(id) ? deregister(a, json_integer_value(id))
                             : opd_error(OPD_EINVAL, "deregister needs an integer \"id\"");
  } else if (strcmp(op, "cuda_register") == 0) {
    rc = cuda_register(a, req, &out);
  } else if (strcmp(op, "drain") == 0 || strcmp(op, "shutdown") == 0) {
    *shutdown = strcmp(op, "drain") == 0 ? 2 : 1;
  } else {
    rc = opd_error(OPD_EINVAL, "unknown admin op '%.100s'", op);
  }
  if (rc) {
    json_t *err = error_json(rc);
    json_t *log = json_object_get(out, "log"); /* a compile error's log */
    if (log) json_object_set(err, "log", log);
    json_decref(out);
    return err;
  }
  if (!out) out = json_object();
  json_object_set_new(out, "ok", json_true());
  return out;
}

static void serve(opd__admin *a, int fd, bool needs_token) {
  struct timeval tv = {IO_TIMEOUT_S, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  for (;;) {
    uint32_t be;
    if (read_full(fd, &be, 4) != 0) return;
    uint32_t n = ntohl(be);
    if (n == 0 || n > MAX_FRAME) {
      opd_error(OPD_EINVAL, "admin frame of %u bytes (1 to %d)", n, MAX_FRAME);
      send_json(fd, error_json(OPD_EINVAL));
      return;
    }
    char *buf = opd__malloc(n);
    if (!buf || read_full(fd, buf, n) != 0) {
      opd__free(buf);
      return;
    }
    json_error_t jerr;
    json_t *req = json_loadb(buf, n, 0, &jerr);
    opd__free(buf);
    int shutdown = 0;
    json_t *resp;
    if (!json_is_object(req)) {
      opd_error(OPD_EINVAL, "admin request is not a JSON object: %s", jerr.text);
      resp = error_json(OPD_EINVAL);
    } else if (needs_token && !token_matches(a, json_string_value(json_object_get(req, "token")))) {
      opd_error(OPD_EINVAL, "unauthorized: missing or wrong admin token");
      resp =
          json_pack("{s:b, s:s, s:s}", "ok", 0, "code", "UNAUTHORIZED", "error", opd_last_error());
      json_decref(req);
      send_json(fd, resp);
      return;
    } else {
      resp = handle(a, req, &shutdown);
    }
    json_decref(req);
    if (send_json(fd, resp) != 0) return;
    if (shutdown) {
      if (a->cfg.on_shutdown) a->cfg.on_shutdown(a->cfg.arg, shutdown == 2);
      return;
    }
  }
}

static void *admin_main(void *arg) {
  opd__admin *a = arg;
  for (;;) {
    struct pollfd fds[3] = {
        {a->stop_pipe[0], POLLIN, 0}, {a->unix_fd, POLLIN, 0}, {a->tcp_fd, POLLIN, 0}};
    if (poll(fds, 3, -1) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    if (fds[0].revents) break;
    for (int i = 1; i < 3; i++) {
      if (!(fds[i].revents & POLLIN)) continue;
      int c = accept(fds[i].fd, NULL, NULL);
      if (c < 0) continue;
      fcntl(c, F_SETFD, FD_CLOEXEC);
      serve(a, c, i == 2);
      close(c);
    }
  }
  return NULL;
}

int opd__admin_start(const opd__admin_config *c, opd__admin **out) {
  opd__admin *a = opd__calloc(1, sizeof *a);
  if (!a) return opd_error(OPD_ENOMEM, "out of memory");
  a->cfg = *c;
  a->unix_fd = a->tcp_fd = a->tcp_port = -1;
  a->stop_pipe[0] = a->stop_pipe[1] = -1;
  int rc = 0;
  bool tcp = c->tcp && c->tcp[0];
  if (tcp && !(c->token_file && c->token_file[0]))
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
  opd__free(a);
}

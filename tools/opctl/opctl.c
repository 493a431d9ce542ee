/* opctl.c: the command-line tool for people operating an opd daemon (docs/ADMIN.md).
 *
 *   opctl [OPTIONS] status | ops | op NAME | sessions | load-plugin FILE |
 *         unload-plugin FILE | register NAME KEY (--kernel-of ID | --fallthrough) |
 *         deregister ID [--force] | plugins | drain | graphs | graph ID |
 *         graph-pass NAME on|off | set-priority SESSION low|normal|high |
 *         cuda-register --source FILE --entry NAME --schema SCHEMA --launch RULE
 *
 * Reading commands (status, ops, op, sessions, graphs, graph) use the HTTP status endpoint
 * (--status http://HOST:PORT or HOST:PORT, default 127.0.0.1:7471) and fall back to the
 * admin listener when it does not answer (sessions and graphs need the endpoint); the others use
 * the admin listener: --admin unix:///PATH (or a bare PATH; default as the daemon's) or --admin
 * tcp://HOST:PORT with --token-file FILE (--admin-tcp HOST:PORT is the same). --json prints
 * the raw JSON. Exit status: 0 done, 1 the daemon refused the request, 2 usage, 3 the
 * daemon cannot be reached.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <jansson.h>
#include <netdb.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

enum { EXIT_REFUSED = 1, EXIT_USAGE = 2, EXIT_UNREACHABLE = 3 };

/* Where the admin listener or the status endpoint is: a Unix socket path, or a TCP host
 * and port. `text` is what the user wrote, for messages. */
typedef struct address {
  bool tcp;
  char path[108];
  char host[256], port[8];
  const char *text;
} address;

static struct {
  address admin, status; /* status.text "": none */
  const char *token_file;
  bool json;
  char token[512];
} opt;
static void usage(FILE *f) {
  fprintf(
      f, "usage: opctl [OPTIONS] COMMAND [ARGS]\n"
         "\n"
         "commands:\n"
         "  status                      the daemon's version, listeners and uptime\n"
         "  ops                         every operator, with its schema\n"
         "  op NAME                     an operator's registrations and dispatch table\n"
         "  sessions                    open client sessions (status endpoint only)\n"
         "  plugins                     loaded plugins and their registrations\n"
         "  load-plugin FILE            load FILE from the daemon's plugin directory\n"
         "  unload-plugin FILE          unload a plugin that has no registrations left\n"
         "  register NAME KEY (--kernel-of ID | --fallthrough)\n"
         "                              register a plugin's kernel (or a fallthrough) at KEY\n"
         "  deregister ID [--force]     remove registration ID (one not made through the admin,\n"
         "                              a built-in, only with --force)\n"
         "  cuda-register --source FILE --entry NAME --schema SCHEMA --launch RULE\n"
         "                [--dtypes DECL]\n"
         "                              compile CUDA C source with NVRTC and register its\n"
         "                              __global__ NAME at the CUDA key of the operator\n"
         "                              SCHEMA (\"ns::op(Tensor x) -> Tensor\", defined if\n"
         "                              new); RULE: elementwise or rows; DECL: the tensors'\n"
         "                              dtypes, \"float16\" or \"float16, int8 -> bool\"\n"
         "                              (default float32; docs/ADMIN.md)\n"
         "  drain                       let the daemon finish its requests and exit\n"
         "  graphs                      compiled graphs in the daemon's cache, its counters\n"
         "                              and the disabled passes (status endpoint only)\n"
         "  graph ID                    a compiled graph: the IR after every pass, its fused\n"
         "                              groups and their numerics and benefit decisions\n"
         "  graph-pass NAME on|off      enable or disable a graph pass for later definitions\n"
         "  set-priority SESSION CLASS  put an open session (opctl sessions) in priority class\n"
         "                              low, normal or high\n"
         "\n"
         "options:\n"
         "  --admin URL                 admin listener: unix:///PATH or a bare PATH (default: the\n"
         "                              daemon's socket), or tcp://HOST:PORT (needs --token-file)\n"
         "  --admin-tcp HOST:PORT       the same as --admin tcp://HOST:PORT\n"
         "  --token-file FILE           the admin token (one line)\n"
         "  --status URL                HTTP status endpoint: http://HOST:PORT or HOST:PORT\n"
         "                              (default 127.0.0.1:7471; \"\": none)\n"
         "  --force                     deregister a built-in registration\n"
         "  --json                      print the raw JSON\n");
}

static int fail(int status, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int fail(int status, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fputs("opctl: ", stderr);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
  return status;
}

/* ---- addresses and connections ---- */

/* HOST:PORT (an IPv6 host in brackets; a '/' may follow, as in http://HOST:PORT/) into a. */
static bool parse_hostport(const char *s, address *a) {
  const char *host = s, *end, *colon;
  if (*s == '[') {
    end = strchr(s, ']');
    if (!end || end[1] != ':') return false;
    host = s + 1;
    colon = end + 1;
  } else {
    colon = strrchr(s, ':');
    if (!colon) return false;
    end = colon;
  }
  const char *port = colon + 1;
  size_t hlen = (size_t)(end - host), plen = strlen(port);
  if (plen > 0 && port[plen - 1] == '/') plen--;
  if (hlen == 0 || hlen >= sizeof a->host || plen == 0 || plen >= sizeof a->port ||
      strspn(port, "0123456789") != plen || atoi(port) < 1 || atoi(port) > 65535)
    return false;
  memcpy(a->host, host, hlen);
  a->host[hlen] = '\0';
  memcpy(a->port, port, plen);
  a->port[plen] = '\0';
  a->tcp = true;
  return true;
}

static bool has_scheme(const char *s, const char *scheme) {
  return strncmp(s, scheme, strlen(scheme)) == 0;
}

/* The address of option `flag`: --admin takes unix:///PATH, tcp://HOST:PORT or a bare path;
 * --admin-tcp tcp://HOST:PORT or a bare HOST:PORT; --status http://HOST:PORT or a bare
 * HOST:PORT. 0, or the usage error printed. */
static int parse_address(const char *flag, const char *text, address *a) {
  bool admin = strcmp(flag, "--admin") == 0, http = strcmp(flag, "--status") == 0;
  *a = (address){.text = text};
  const char *rest = text;
  if (admin && has_scheme(text, "unix://")) {
    rest = text + strlen("unix://");
    if (!*rest || strlen(rest) >= sizeof a->path)
      return fail(EXIT_USAGE, "--admin '%s': expected unix:///PATH (a path of 1 to %zu bytes)",
                  text, sizeof a->path - 1);
    memcpy(a->path, rest, strlen(rest) + 1);
    return 0;
  }
  if (http ? has_scheme(text, "http://") : has_scheme(text, "tcp://")) {
    rest = strstr(text, "://") + 3;
  } else if (strstr(text, "://")) {
    return fail(EXIT_USAGE, "%s '%s': expected %s", flag, text,
                http    ? "http://HOST:PORT or HOST:PORT"
                : admin ? "unix:///PATH, tcp://HOST:PORT or a socket path"
                        : "tcp://HOST:PORT or HOST:PORT");
  } else if (admin) { /* a bare path */
    if (!*text || strlen(text) >= sizeof a->path)
      return fail(EXIT_USAGE, "--admin '%s': a socket path is 1 to %zu bytes", text,
                  sizeof a->path - 1);
    memcpy(a->path, text, strlen(text) + 1);
    return 0;
  }
  if (!parse_hostport(rest, a))
    return fail(EXIT_USAGE, "%s '%s': expected %sHOST:PORT (a port from 1 to 65535)", flag, text,
                http ? "http://" : "tcp://");
  return 0;
}

static int connect_address(const address *a) {
  if (!a->tcp) {
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    memcpy(sa.sun_path, a->path, sizeof a->path);
    int fd = socket(AF_UNIX, SOCK_STREAM, 0);
    if (fd >= 0 && connect(fd, (struct sockaddr *)&sa, sizeof sa) != 0) {
      int err = errno;
      close(fd);
      errno = err;
      return -1;
    }
    return fd;
  }
  struct addrinfo hints = {.ai_socktype = SOCK_STREAM}, *res;
  if (getaddrinfo(a->host, a->port, &hints, &res) != 0) {
    errno = EHOSTUNREACH;
    return -1;
  }
  int fd = socket(res->ai_family, SOCK_STREAM, 0);
  if (fd >= 0 && connect(fd, res->ai_addr, res->ai_addrlen) != 0) {
    int err = errno;
    close(fd);
    errno = err;
    fd = -1;
  }
  freeaddrinfo(res);
  if (fd >= 0) {
    struct timeval tv = {30, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  }
  return fd;
}

static int connect_admin(void) {
  int fd = connect_address(&opt.admin);
  if (fd >= 0) return fd;
  if (opt.admin.tcp)
    fprintf(stderr,
            "opctl: cannot reach the admin listener at %s: %s (is opd running with "
            "admin_tcp?)\n",
            opt.admin.text, strerror(errno));
  else
    fprintf(stderr,
            "opctl: cannot connect to the daemon's admin socket %s: %s (is opd running? "
            "--admin URL names another socket)\n",
            opt.admin.path, strerror(errno));
  return -1;
}

static int io_full(int fd, void *buf, size_t n, bool writing) {
  for (size_t done = 0; done < n;) {
    ssize_t r =
        writing ? write(fd, (char *)buf + done, n - done) : read(fd, (char *)buf + done, n - done);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return -1;
    done += (size_t)r;
  }
  return 0;
}

/* One admin request; the response, or NULL (reported) when the daemon cannot be reached. */
static json_t *admin_request(json_t *req) {
  if (opt.admin.tcp) json_object_set_new(req, "token", json_string(opt.token));
  char *text = json_dumps(req, JSON_COMPACT);
  json_decref(req);
  int fd = connect_admin();
  if (fd < 0) {
    free(text);
    return NULL;
  }
  uint32_t n = htonl((uint32_t)strlen(text));
  json_t *resp = NULL;
  if (io_full(fd, &n, 4, true) == 0 && io_full(fd, text, strlen(text), true) == 0 &&
      io_full(fd, &n, 4, false) == 0 && (n = ntohl(n)) > 0 && n < (64u << 20)) {
    char *buf = malloc(n);
    if (buf && io_full(fd, buf, n, false) == 0) resp = json_loadb(buf, n, 0, NULL);
    free(buf);
  }
  close(fd);
  free(text);
  if (!resp) fprintf(stderr, "opctl: the daemon closed the admin connection without an answer\n");
  return resp;
}

/* GET path on the status endpoint: the JSON body, NULL when it is not reachable (*status 0)
 * or answered an error (*status: the HTTP status). */
static json_t *http_get(const char *path, int *status) {
  *status = 0;
  if (!opt.status.text[0]) return NULL;
  int fd = connect_address(&opt.status);
  if (fd < 0) return NULL;
  char req[1024];
  bool v6 = strchr(opt.status.host, ':') != NULL;
  int len = snprintf(req, sizeof req,
                     "GET %s HTTP/1.1\r\nHost: %s%s%s:%s\r\nAccept: application/json\r\n"
                     "Connection: close\r\n\r\n",
                     path, v6 ? "[" : "", opt.status.host, v6 ? "]" : "", opt.status.port);
  if (len < 0 || (size_t)len >= sizeof req || io_full(fd, req, (size_t)len, true) != 0) {
    close(fd);
    return NULL;
  }
  size_t cap = 1 << 16, used = 0;
  char *buf = malloc(cap);
  for (ssize_t r; buf && (r = read(fd, buf + used, cap - used - 1)) > 0;) {
    used += (size_t)r;
    if (used + 1 == cap) {
      char *bigger = cap < (64u << 20) ? realloc(buf, cap *= 2) : NULL;
      if (!bigger) {
        free(buf);
        buf = NULL;
      } else {
        buf = bigger;
      }
    }
  }
  close(fd);
  if (!buf) return NULL;
  buf[used] = '\0';
  json_t *body = NULL;
  char *sep = strstr(buf, "\r\n\r\n");
  if (sscanf(buf, "HTTP/1.%*d %d", status) == 1 && sep) {
    if (strstr(buf, "Transfer-Encoding: chunked") &&
        strstr(buf, "Transfer-Encoding: chunked") < sep)
      *status = 0; /* not expected from opd; treated as unreachable */
    else if (*status == 200)
      body = json_loads(sep + 4, 0, NULL);
  }
  free(buf);
  return body;
}

/* ---- output ---- */

static void print_json(json_t *j) {
  char *s = json_dumps(j, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
  puts(s ? s : "null");
  free(s);
}

/* The answer to an admin request: 0 when ok, else the error printed. */
static int admin_ok(json_t *resp) {
  if (json_is_true(json_object_get(resp, "ok"))) return 0;
  const char *code = json_string_value(json_object_get(resp, "code"));
  const char *error = json_string_value(json_object_get(resp, "error"));
  if (code && strcmp(code, "UNAUTHORIZED") == 0)
    return fail(EXIT_REFUSED, "the daemon refused the admin token (check --token-file)");
  return fail(EXIT_REFUSED, "%s (%s)", error ? error : "request failed", code ? code : "?");
}

static const char *str(json_t *o, const char *key) {
  const char *s = json_string_value(json_object_get(o, key));
  return s ? s : "";
}

static void print_op(json_t *op) {
  printf("%s\n  %s\n\nregistrations:\n", str(op, "name"),
         json_is_string(json_object_get(op, "schema")) ? str(op, "schema") : "(no schema)");
  size_t i;
  json_t *r;
  json_array_foreach(json_object_get(op, "registrations"), i, r) {
    json_t *prov = json_object_get(r, "provenance");
    printf("  %6lld  %-11s %-28s %-32s %s %s:%lld\n",
           (long long)json_integer_value(json_object_get(r, "id")), str(r, "kind"), str(r, "key"),
           str(r, "kernel"), str(prov, "origin"), str(prov, "file"),
           (long long)json_integer_value(json_object_get(prov, "line")));
  }
  printf("\ndispatch table (runtime key: source, kernel, registration):\n");
  const char *key;
  json_t *slot;
  json_object_foreach(json_object_get(op, "table"), key, slot) {
    const char *source = str(slot, "source");
    if (strcmp(source, "missing") == 0) continue;
    char via[96] = "";
    if (json_object_get(slot, "via"))
      snprintf(via, sizeof via, " (%s, via %s)", str(slot, "scope"), str(slot, "via"));
    else if (json_object_get(slot, "scope"))
      snprintf(via, sizeof via, " (%s)", str(slot, "scope"));
    json_t *reg = json_object_get(slot, "registration");
    printf("  %-38s %-26s%s %s", key, source, via, str(slot, "kernel"));
    if (reg) printf(" [%lld]", (long long)json_integer_value(reg));
    putchar('\n');
  }
  printf("  (every other key: missing)\n");
}

/* ---- commands ---- */

static int cmd_read(const char *cmd, const char *name) {
  char path[600];
  if (strcmp(cmd, "status") == 0)
    snprintf(path, sizeof path, "/v1/info");
  else if (strcmp(cmd, "ops") == 0)
    snprintf(path, sizeof path, "/v1/ops");
  else if (strcmp(cmd, "sessions") == 0)
    snprintf(path, sizeof path, "/v1/sessions");
  else
    snprintf(path, sizeof path, "/v1/ops/%s", name);
  int status;
  json_t *j = http_get(path, &status);
  if (!j && status == 404) return fail(EXIT_REFUSED, "unknown operator '%s'", name);
  if (!j && strcmp(cmd, "sessions") == 0)
    return fail(EXIT_UNREACHABLE,
                "cannot read sessions: the status endpoint at %s does not answer (--status "
                "http://HOST:PORT)",
                opt.status.text[0] ? opt.status.text : "(none)");
  bool from_admin = false;
  if (!j) { /* the admin socket instead */
    json_t *req = json_pack("{s:s}", "op", strcmp(cmd, "status") == 0 ? "status" : "list");
    if (strcmp(cmd, "op") == 0) json_object_set_new(req, "name", json_string(name));
    json_t *resp = admin_request(req);
    if (!resp) return EXIT_UNREACHABLE;
    int rc = admin_ok(resp);
    if (rc) {
      json_decref(resp);
      return rc;
    }
    j = resp;
    from_admin = true;
  }
  if (opt.json) {
    print_json(j);
  } else if (strcmp(cmd, "status") == 0) {
    if (from_admin)
      printf("%s (admin listener %s)\n", str(j, "server"), opt.admin.text);
    else
      printf("opd %s, up %.1f s, pid %lld\n", str(j, "version"),
             json_real_value(json_object_get(j, "uptime_s")),
             (long long)json_integer_value(json_object_get(j, "pid")));
  } else if (strcmp(cmd, "ops") == 0) {
    size_t i;
    json_t *o;
    json_array_foreach(json_object_get(j, from_admin ? "operators" : "ops"), i, o) {
      printf("%s\n", str(o, "name"));
    }
  } else if (strcmp(cmd, "op") == 0) {
    print_op(from_admin ? json_object_get(j, "operator") : j);
  } else {
    size_t i;
    json_t *s;
    printf("%6s  %-22s %8s %8s %8s %12s\n", "id", "peer", "calls", "errors", "handles", "bytes");
    json_array_foreach(json_object_get(j, "sessions"), i, s) {
      printf("%6lld  %-22s %8lld %8lld %8lld %12lld\n",
             (long long)json_integer_value(json_object_get(s, "id")), str(s, "peer"),
             (long long)json_integer_value(json_object_get(s, "calls")),
             (long long)json_integer_value(json_object_get(s, "errors")),
             (long long)json_integer_value(json_object_get(s, "handles")),
             (long long)json_integer_value(json_object_get(s, "bytes_held")));
    }
  }
  json_decref(j);
  return 0;
}

/* graphs, graph ID: GET /v1/graphs and /v1/graphs/{id} (docs/STATUS.md), for people. */
static int cmd_graphs(const char *id) {
  char path[64];
  snprintf(path, sizeof path, id ? "/v1/graphs/%s" : "/v1/graphs", id ? id : "");
  int status;
  json_t *j = http_get(path, &status);
  if (!j && status == 404) return fail(EXIT_REFUSED, "no graph %s in the daemon's cache", id);
  if (!j)
    return fail(EXIT_UNREACHABLE,
                "cannot read graphs: the status endpoint at %s does not answer (--status "
                "http://HOST:PORT)",
                opt.status.text[0] ? opt.status.text : "(none)");
  size_t i;
  json_t *g;
  if (opt.json) {
    print_json(j);
  } else if (!id) {
    printf("%6s  %-16s %7s %6s %8s %10s %10s %11s\n", "id", "key", "nodes", "after", "kernels",
           "runs", "hits", "compile_us");
    json_array_foreach(json_object_get(j, "graphs"), i, g) {
      printf("%6lld  %-16s %7lld %6lld %8lld %10lld %10lld %11lld\n",
             (long long)json_integer_value(json_object_get(g, "id")), str(g, "key"),
             (long long)json_integer_value(json_object_get(g, "nodes_before")),
             (long long)json_integer_value(json_object_get(g, "nodes_after")),
             (long long)json_integer_value(json_object_get(g, "kernels")),
             (long long)json_integer_value(json_object_get(g, "runs")),
             (long long)json_integer_value(json_object_get(g, "cache_hits")),
             (long long)json_integer_value(json_object_get(g, "compile_us")));
    }
    char *disabled = json_dumps(json_object_get(j, "disabled_passes"), JSON_COMPACT);
    printf("cache: %lld of %lld graphs, %lld hits, %lld misses, %lld evictions, %lld "
           "invalidations; disabled passes %s\n",
           (long long)json_integer_value(json_object_get(j, "size")),
           (long long)json_integer_value(json_object_get(j, "capacity")),
           (long long)json_integer_value(json_object_get(j, "hits")),
           (long long)json_integer_value(json_object_get(j, "misses")),
           (long long)json_integer_value(json_object_get(j, "evictions")),
           (long long)json_integer_value(json_object_get(j, "invalidations")),
           disabled ? disabled : "[]");
    free(disabled);
    json_t *tier = json_object_get(j, "c_tier");
    if (json_is_true(json_object_get(tier, "enabled")))
      printf("C tier: %s in %s; %lld compiles, %lld found built, %lld failures (%lld timeouts), "
             "%lld mismatches, %lld queued\n",
             str(tier, "compiler"), str(tier, "dir"),
             (long long)json_integer_value(json_object_get(tier, "compiles")),
             (long long)json_integer_value(json_object_get(tier, "disk_hits")),
             (long long)json_integer_value(json_object_get(tier, "failures")),
             (long long)json_integer_value(json_object_get(tier, "timeouts")),
             (long long)json_integer_value(json_object_get(tier, "mismatches")),
             (long long)json_integer_value(json_object_get(tier, "queued")));
    else
      printf("C tier: off (graph_cc_dir)\n");
  } else {
    printf("graph %lld, key %s: %lld nodes, %lld after the passes, %lld kernels, %lld runs\n",
           (long long)json_integer_value(json_object_get(j, "id")), str(j, "key"),
           (long long)json_integer_value(json_object_get(j, "nodes_before")),
           (long long)json_integer_value(json_object_get(j, "nodes_after")),
           (long long)json_integer_value(json_object_get(j, "kernels")),
           (long long)json_integer_value(json_object_get(j, "runs")));
    json_array_foreach(json_object_get(j, "passes"), i, g) {
      json_t *ir = json_object_get(g, "ir");
      printf("\n--- after %s (version %lld, %lld hits)%s\n%s", str(g, "name"),
             (long long)json_integer_value(json_object_get(g, "version")),
             (long long)json_integer_value(json_object_get(g, "hits")), ir ? "" : ": disabled",
             ir ? json_string_value(ir) : "");
    }
    printf("\ngroups (their generated source: opctl --json graph ID):\n");
    json_array_foreach(json_object_get(j, "groups"), i, g) {
      json_object_del(g, "source");
      char *d = json_dumps(g, JSON_COMPACT);
      printf("  %s\n", d ? d : "?");
      free(d);
    }
  }
  json_decref(j);
  return 0;
}

static int cmd_admin(json_t *req, const char *done_fmt) {
  json_t *resp = admin_request(req);
  if (!resp) return EXIT_UNREACHABLE;
  int rc = admin_ok(resp);
  if (rc == 0) {
    if (opt.json) {
      print_json(resp);
    } else if (strstr(done_fmt, "%lld")) {
      printf(done_fmt, (long long)json_integer_value(json_object_get(resp, "id")));
    } else if (strstr(done_fmt, "%s")) {
      char *ids = json_dumps(json_object_get(resp, "registrations"), JSON_COMPACT);
      printf(done_fmt, ids ? ids : "[]");
      free(ids);
    } else {
      fputs(done_fmt, stdout);
    }
  }
  json_decref(resp);
  return rc;
}

/* Reads a source file of at most `max` bytes into a new NUL-terminated buffer. */
static char *read_source(const char *path, size_t max, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (!f) {
    fail(EXIT_USAGE, "--source %s: %s", path, strerror(errno));
    return NULL;
  }
  char *buf = malloc(max + 2);
  size_t n = buf ? fread(buf, 1, max + 1, f) : 0;
  bool err = ferror(f);
  fclose(f);
  if (!buf || err || n > max) {
    free(buf);
    fail(EXIT_USAGE, "--source %s: %s", path,
         !buf  ? "out of memory"
         : err ? "read error"
               : "larger than 256 KiB");
    return NULL;
  }
  buf[n] = '\0';
  *len = n;
  return buf;
}

static int cmd_cuda_register(const char *source, const char *entry, const char *schema,
                             const char *launch, const char *dtypes) {
  if (!source || !entry || !schema || !launch)
    return fail(EXIT_USAGE, "cuda-register needs --source FILE, --entry NAME, --schema SCHEMA and "
                            "--launch elementwise|rows");
  size_t len;
  char *text = read_source(source, 256 * 1024, &len);
  if (!text) return EXIT_USAGE;
  json_t *src = json_stringn(text, len);
  free(text);
  if (!src) return fail(EXIT_USAGE, "--source %s: not UTF-8 text", source);
  json_t *req = json_pack("{s:s, s:o, s:s, s:s, s:s}", "op", "cuda_register", "source", src,
                          "entry", entry, "schema", schema, "launch", launch);
  if (req && dtypes) json_object_set_new(req, "dtypes", json_string(dtypes));
  json_t *resp = admin_request(req);
  if (!resp) return EXIT_UNREACHABLE;
  int rc = admin_ok(resp);
  const char *log = json_string_value(json_object_get(resp, "log"));
  if (rc != 0 && log) fprintf(stderr, "%s", log); /* the compiler's log, verbatim */
  if (rc == 0 && opt.json)
    print_json(resp);
  else if (rc == 0)
    printf("registered %s at CUDA: id %lld\n", str(resp, "operator"),
           (long long)json_integer_value(json_object_get(resp, "id")));
  json_decref(resp);
  return rc;
}

static bool parse_id(const char *s, long long *out) {
  char *end;
  errno = 0;
  *out = strtoll(s, &end, 10);
  return *s && !*end && !errno && *out > 0;
}

/* The token: the file's one line (1 to 510 bytes), as the daemon reads its own. */
static int read_token(const char *path) {
  FILE *f = fopen(path, "r");
  if (!f) return fail(EXIT_USAGE, "--token-file %s: %s", path, strerror(errno));
  size_t n = fread(opt.token, 1, sizeof opt.token - 1, f);
  bool more = fgetc(f) != EOF;
  fclose(f);
  while (n > 0 && (opt.token[n - 1] == '\n' || opt.token[n - 1] == '\r')) n--;
  opt.token[n] = '\0';
  if (more || n == 0 || strlen(opt.token) != n)
    return fail(EXIT_USAGE, "--token-file %s: expected one line of 1 to %zu bytes", path,
                sizeof opt.token - 2);
  return 0;
}

int main(int argc, char **argv) {
  const char *runtime = getenv("XDG_RUNTIME_DIR");
  static char default_admin[sizeof opt.admin.path];
  if (runtime && runtime[0] == '/' && strlen(runtime) < sizeof default_admin - 16)
    snprintf(default_admin, sizeof default_admin, "%s/opd-admin.sock", runtime);
  else
    snprintf(default_admin, sizeof default_admin, "/tmp/opd-admin-%u.sock", (unsigned)getuid());
  if (parse_address("--admin", default_admin, &opt.admin) ||
      parse_address("--status", "127.0.0.1:7471", &opt.status))
    return EXIT_USAGE;
  const char *args[8];
  int nargs = 0;
  long long kernel_of = 0;
  bool fallthrough = false, force = false;
  const char *source = NULL, *entry = NULL, *schema = NULL, *launch = NULL, *dtypes = NULL;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    bool has_value = i + 1 < argc;
    if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
      usage(stdout);
      return 0;
    } else if (strcmp(a, "--json") == 0) {
      opt.json = true;
    } else if (strcmp(a, "--fallthrough") == 0) {
      fallthrough = true;
    } else if (strcmp(a, "--force") == 0) {
      force = true;
    } else if ((strcmp(a, "--admin") == 0 || strcmp(a, "--admin-tcp") == 0) && has_value) {
      if (parse_address(a, argv[++i], &opt.admin)) return EXIT_USAGE;
    } else if (strcmp(a, "--token-file") == 0 && has_value) {
      opt.token_file = argv[++i];
    } else if (strcmp(a, "--status") == 0 && has_value) {
      const char *url = argv[++i];
      if (!url[0])
        opt.status = (address){.text = ""}; /* none */
      else if (parse_address(a, url, &opt.status))
        return EXIT_USAGE;
    } else if (strcmp(a, "--source") == 0 && has_value) {
      source = argv[++i];
    } else if (strcmp(a, "--entry") == 0 && has_value) {
      entry = argv[++i];
    } else if (strcmp(a, "--schema") == 0 && has_value) {
      schema = argv[++i];
    } else if (strcmp(a, "--launch") == 0 && has_value) {
      launch = argv[++i];
    } else if (strcmp(a, "--dtypes") == 0 && has_value) {
      dtypes = argv[++i];
    } else if (strcmp(a, "--kernel-of") == 0 && has_value) {
      if (!parse_id(argv[++i], &kernel_of))
        return fail(EXIT_USAGE, "--kernel-of needs a registration id");
    } else if (a[0] == '-' && a[1] == '-') {
      usage(stderr);
      return fail(EXIT_USAGE, "unknown option or missing value: %s", a);
    } else if (nargs < 8) {
      args[nargs++] = a;
    } else {
      return fail(EXIT_USAGE, "too many arguments");
    }
  }
  if (opt.admin.tcp && !opt.token_file)
    return fail(EXIT_USAGE, "--admin %s needs --token-file: a TCP admin listener takes a token",
                opt.admin.text);
  if (opt.admin.tcp && read_token(opt.token_file)) return EXIT_USAGE;
  if (nargs == 0) {
    usage(stderr);
    return EXIT_USAGE;
  }
  if (force && strcmp(args[0], "deregister") != 0)
    return fail(EXIT_USAGE, "--force applies to deregister only");
  const char *cmd = args[0];
  bool one = nargs == 2;
  if ((strcmp(cmd, "status") == 0 || strcmp(cmd, "ops") == 0 || strcmp(cmd, "sessions") == 0) &&
      nargs == 1)
    return cmd_read(cmd, NULL);
  if (strcmp(cmd, "op") == 0 && one) return cmd_read(cmd, args[1]);
  if (strcmp(cmd, "plugins") == 0 && nargs == 1) {
    json_t *resp = admin_request(json_pack("{s:s}", "op", "list"));
    if (!resp) return EXIT_UNREACHABLE;
    int rc = admin_ok(resp);
    if (rc == 0 && opt.json) {
      print_json(json_object_get(resp, "plugins"));
    } else if (rc == 0) {
      printf("plugin directory: %s\n", str(resp, "plugin_dir"));
      size_t i;
      json_t *p;
      json_array_foreach(json_object_get(resp, "plugins"), i, p) {
        char *ids = json_dumps(json_object_get(p, "registrations"), JSON_COMPACT);
        printf("  %-32s registrations %s\n", str(p, "plugin"), ids ? ids : "[]");
        free(ids);
      }
    }
    json_decref(resp);
    return rc;
  }
  if (strcmp(cmd, "load-plugin") == 0 && one)
    return cmd_admin(json_pack("{s:s, s:s}", "op", "load_plugin", "file", args[1]),
                     "loaded; registrations %s\n");
  if (strcmp(cmd, "unload-plugin") == 0 && one)
    return cmd_admin(json_pack("{s:s, s:s}", "op", "unload_plugin", "file", args[1]), "unloaded\n");
  if (strcmp(cmd, "register") == 0 && nargs == 3) {
    if (fallthrough == (kernel_of > 0))
      return fail(EXIT_USAGE, "register needs --kernel-of ID or --fallthrough");
    json_t *req = json_pack("{s:s, s:s, s:s}", "op", "register", "name", args[1], "key", args[2]);
    if (fallthrough)
      json_object_set_new(req, "fallthrough", json_true());
    else
      json_object_set_new(req, "kernel_of", json_integer(kernel_of));
    return cmd_admin(req, "registered: id %lld\n");
  }
  if (strcmp(cmd, "deregister") == 0 && one) {
    long long id;
    if (!parse_id(args[1], &id)) return fail(EXIT_USAGE, "deregister needs a registration id");
    return cmd_admin(
        json_pack("{s:s, s:I, s:b}", "op", "deregister", "id", (json_int_t)id, "force", force),
        "deregistered\n");
  }
  if (strcmp(cmd, "cuda-register") == 0 && nargs == 1)
    return cmd_cuda_register(source, entry, schema, launch, dtypes);
  if (strcmp(cmd, "drain") == 0 && nargs == 1)
    return cmd_admin(json_pack("{s:s}", "op", "drain"), "draining\n");
  if (strcmp(cmd, "graphs") == 0 && nargs == 1) return cmd_graphs(NULL);
  if (strcmp(cmd, "graph") == 0 && one) {
    long long id;
    if (!parse_id(args[1], &id)) return fail(EXIT_USAGE, "graph needs a graph id (opctl graphs)");
    return cmd_graphs(args[1]);
  }
  if (strcmp(cmd, "graph-pass") == 0 && nargs == 3) {
    bool on = strcmp(args[2], "on") == 0;
    if (!on && strcmp(args[2], "off") != 0) return fail(EXIT_USAGE, "graph-pass NAME on|off");
    return cmd_admin(
        json_pack("{s:s, s:s, s:b}", "op", "graph_pass", "name", args[1], "enabled", on),
        on ? "enabled\n" : "disabled\n");
  }
  if (strcmp(cmd, "set-priority") == 0 && nargs == 3) {
    long long id;
    if (!parse_id(args[1], &id))
      return fail(EXIT_USAGE, "set-priority needs a session id (opctl sessions) and a class");
    if (strcmp(args[2], "low") != 0 && strcmp(args[2], "normal") != 0 &&
        strcmp(args[2], "high") != 0)
      return fail(EXIT_USAGE, "set-priority: the class is low, normal or high");
    char done[96]; /* no '%': printed as it is */
    snprintf(done, sizeof done, "session %lld: priority %.16s\n", id, args[2]);
    return cmd_admin(json_pack("{s:s, s:I, s:s}", "op", "set_priority", "session", (json_int_t)id,
                               "priority", args[2]),
                     done);
  }
  usage(stderr);
  return fail(EXIT_USAGE, "unknown command or wrong arguments: %s", cmd);
}

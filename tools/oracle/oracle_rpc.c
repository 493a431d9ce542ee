/* oracle_rpc.c: the daemon replay of opd-oracle-dispatch (--server URL --admin URL --status
 * URL: tcp:// or unix:// for the RPC, unix:///PATH or a path for the admin socket,
 * http://HOST:PORT or HOST:PORT for the status endpoint). Per scenario it makes the registrations
 * over the admin socket (defs, marker kernels of the plugin oracle_markers.so with the marker as
 * kernel data, fallthroughs, fallback fallthroughs, removals; docs/ADMIN.md), reads the operator's
 * table from the status endpoint (GET /v1/ops/{name}; registration ids mapped to markers), replays
 * every call over the client RPC with the recorded dispatch state (the marker kernel returns its
 * marker's number; errors are told apart by the dispatcher's messages, dispatcher/src/call.c), and
 * deregisters what it registered. Tensors: one-element float32 CPU tensors (upload), Meta tensors
 * (aten::empty.memory_format on the meta device), and data-less sparse, quantized and mkldnn
 * tensors (the plugin's oracle_markers::tensor_of); requires_grad does not change key sets. Calls
 * that the RPC cannot express are skipped (opd__oracle_rpc_call).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#include "opd/client.h"
#include "opd/dispatcher.h"
#include "oracle.h"

#define MAX_REPLY  (64u << 20)
#define MAX_REGS   128
#define MAX_KINDS  16
#define MAX_INPUTS 16

/* ---- which calls the daemon replay makes ---- */

/* The backend key of a tensor kind: the first of its listed keys. */
static const char *kind_backend(const json_t *fx, const char *kind) {
  const json_t *keys =
      json_object_get(json_object_get(json_object_get(fx, "tensor_keysets"), kind), "keys");
  return json_string_value(json_array_get(keys, 0));
}

bool opd__oracle_rpc_kind(const json_t *fx, const char *kind) {
  const char *first = kind_backend(fx, kind);
  opd_dispatch_key k;
  return first && opd_key_from_name(first, &k) == 0;
}

bool opd__oracle_rpc_call(const json_t *fx, const json_t *call) {
  size_t i, j;
  json_t *in, *t;
  json_array_foreach(json_object_get(call, "inputs"), i, in) {
    if (json_object_get(in, "tensor") && !opd__oracle_rpc_kind(fx, opd__oracle_str(in, "tensor")))
      return false;
    json_array_foreach(json_object_get(in, "tensors"), j, t) {
      const char *kind = json_string_value(t);
      if (!kind || !opd__oracle_rpc_kind(fx, kind)) return false;
    }
  }
  return true;
}

/* ---- sockets ---- */

static bool write_all(int fd, const void *buf, size_t n) {
  for (size_t put = 0; put < n;) {
    ssize_t w = send(fd, (const char *)buf + put, n - put, MSG_NOSIGNAL);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    put += (size_t)w;
  }
  return true;
}

static bool read_all(int fd, void *buf, size_t n) {
  for (size_t got = 0; got < n;) {
    ssize_t r = read(fd, (char *)buf + got, n - got);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return false;
    got += (size_t)r;
  }
  return true;
}

static void set_timeouts(int fd) {
  struct timeval tv = {30, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
}

static int connect_unix(const char *path) {
  struct sockaddr_un sa = {.sun_family = AF_UNIX};
  if (strncmp(path, "unix://", 7) == 0) path += 7;
  if (strlen(path) >= sizeof sa.sun_path) return -1;
  strcpy(sa.sun_path, path);
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd >= 0 && connect(fd, (struct sockaddr *)&sa, sizeof sa) != 0) {
    close(fd);
    fd = -1;
  }
  if (fd >= 0) set_timeouts(fd);
  return fd;
}

/* ---- the admin socket: 4-byte big-endian length + JSON, both ways ---- */

typedef struct daemon {
  const char *admin_path;
  int admin_fd;
  char host[256], port[16];
  opd_client *client;
} daemon;

/* Sends `req` (taken) and returns the response object, or NULL (message printed) when the
 * socket fails; a refusal ("ok": false) is returned for the caller to judge. The admin closes
 * idle connections, so a failed send reconnects once. */
static json_t *admin_request(daemon *d, json_t *req) {
  char *text = json_dumps(req, JSON_COMPACT);
  json_decref(req);
  if (!text) return NULL;
  size_t n = strlen(text);
  uint32_t be = htonl((uint32_t)n), rlen;
  json_t *resp = NULL;
  for (int attempt = 0; attempt < 2 && !resp; attempt++) {
    if (d->admin_fd < 0 && (d->admin_fd = connect_unix(d->admin_path)) < 0) break;
    char *buf = NULL;
    if (write_all(d->admin_fd, &be, 4) && write_all(d->admin_fd, text, n) &&
        read_all(d->admin_fd, &rlen, 4) && (rlen = ntohl(rlen)) > 0 && rlen <= MAX_REPLY &&
        (buf = malloc(rlen)) && read_all(d->admin_fd, buf, rlen))
      resp = json_loadb(buf, rlen, 0, NULL);
    free(buf);
    if (!resp) {
      close(d->admin_fd);
      d->admin_fd = -1;
    }
  }
  if (!resp) fprintf(stderr, "opd-oracle-dispatch: admin socket %s: no answer\n", d->admin_path);
  free(text);
  return resp;
}

/* The id an admin request made (0 for a request that makes none), or -1 (a refusal is
 * printed under `what`). */
static json_int_t admin_id(daemon *d, json_t *req, const char *what) {
  json_t *resp = admin_request(d, req);
  json_int_t id = -1;
  if (resp && json_is_true(json_object_get(resp, "ok")))
    id = json_integer_value(json_object_get(resp, "id"));
  else if (resp)
    printf("FAIL %s: admin refused: %s %s\n", what, opd__oracle_str(resp, "code"),
           opd__oracle_str(resp, "error"));
  json_decref(resp);
  return id >= 0 ? id : -1;
}

/* ---- the status endpoint: GET over HTTP/1.1 ---- */

/* http://HOST:PORT (a trailing / allowed) or HOST:PORT; HOST may be an [IPv6] address. */
static bool parse_status_url(daemon *d, const char *url) {
  if (strncmp(url, "http://", 7) == 0)
    url += 7;
  else if (strstr(url, "://"))
    return false; /* another scheme */
  const char *colon = strrchr(url, ':');
  if (!colon || (size_t)(colon - url) >= sizeof d->host || strlen(colon + 1) >= sizeof d->port ||
      !colon[1])
    return false;
  const char *host = url;
  int host_len = (int)(colon - url);
  if (host_len >= 2 && host[0] == '[' && host[host_len - 1] == ']') host++, host_len -= 2;
  snprintf(d->host, sizeof d->host, "%.*s", host_len, host);
  snprintf(d->port, sizeof d->port, "%s", colon + 1);
  size_t n = strlen(d->port);
  if (n && d->port[n - 1] == '/') d->port[n - 1] = '\0';
  return true;
}

/* The JSON body of a 200 answer to GET `path`, or NULL. */
static json_t *http_get(const daemon *d, const char *path) {
  struct addrinfo hints = {.ai_socktype = SOCK_STREAM}, *res;
  if (getaddrinfo(d->host, d->port, &hints, &res) != 0) return NULL;
  int fd = socket(res->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd >= 0 && connect(fd, res->ai_addr, res->ai_addrlen) != 0) {
    close(fd);
    fd = -1;
  }
  freeaddrinfo(res);
  if (fd < 0) return NULL;
  set_timeouts(fd);
  char req[1024];
  int n = snprintf(req, sizeof req, "GET %s HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n",
                   path, d->host);
  json_t *body = NULL;
  size_t len = 0, cap = 1 << 16;
  char *buf = malloc(cap);
  if (buf && n > 0 && (size_t)n < sizeof req && write_all(fd, req, (size_t)n)) {
    for (;;) {
      if (len + 1 == cap) {
        char *b = cap < MAX_REPLY ? realloc(buf, cap * 2) : NULL;
        if (!b) break;
        buf = b;
        cap *= 2;
      }
      ssize_t r = read(fd, buf + len, cap - 1 - len);
      if (r < 0 && errno == EINTR) continue;
      if (r <= 0) break;
      len += (size_t)r;
    }
    buf[len] = '\0';
    const char *start = strstr(buf, "\r\n\r\n");
    if (start && strncmp(buf, "HTTP/1.1 200", 12) == 0)
      body = json_loadb(start + 4, len - (size_t)(start + 4 - buf), 0, NULL);
  }
  free(buf);
  close(fd);
  return body;
}

/* ---- scenarios ---- */

typedef struct scenario {
  const char *id, *op;
  json_int_t ids[MAX_REGS];
  const char *markers[MAX_REGS];
  int count;
} scenario;

typedef struct kinds {
  const char *names[MAX_KINDS];
  opd_client_tensor handles[MAX_KINDS];
  int count;
} kinds;

static const char *marker_of(const scenario *sc, json_int_t id) {
  for (int i = 0; i < sc->count; i++)
    if (sc->ids[i] == id) return sc->markers[i];
  return NULL;
}

static bool perform_registrations(daemon *d, scenario *sc, json_int_t marker_kernel,
                                  const json_t *regs) {
  size_t i;
  json_t *r;
  const char *sep = strstr(sc->op, "::");
  char ns[256], what[300];
  snprintf(ns, sizeof ns, "%.*s", (int)(sep - sc->op), sc->op);
  json_array_foreach(regs, i, r) {
    const char *kind = opd__oracle_str(r, "kind"), *key = opd__oracle_str(r, "key");
    const char *marker = json_string_value(json_object_get(r, "marker"));
    snprintf(what, sizeof what, "%s registration %zu (%s)", sc->id, i, kind);
    json_int_t id;
    if (strcmp(kind, "def") == 0) {
      id = admin_id(d,
                    json_pack("{s:s, s:s, s:s}", "op", "def", "namespace", ns, "schema",
                              opd__oracle_str(r, "schema")),
                    what);
    } else if (strcmp(kind, "impl") == 0) {
      id = admin_id(d,
                    json_pack("{s:s, s:s, s:s, s:I, s:s}", "op", "register", "name", sc->op, "key",
                              key, "kernel_of", marker_kernel, "data", marker ? marker : "?"),
                    what);
    } else if (strcmp(kind, "fallthrough") == 0) {
      id = admin_id(d,
                    json_pack("{s:s, s:s, s:s, s:b}", "op", "register", "name", sc->op, "key", key,
                              "fallthrough", 1),
                    what);
    } else if (strcmp(kind, "global_fallthrough") == 0) {
      id = admin_id(
          d, json_pack("{s:s, s:s, s:b}", "op", "register_fallback", "key", key, "fallthrough", 1),
          what);
    } else if (strcmp(kind, "remove") == 0) {
      const char *target = opd__oracle_str(r, "target");
      int j = 0;
      while (j < sc->count && !(sc->markers[j] && strcmp(sc->markers[j], target) == 0)) j++;
      if (j == sc->count || sc->ids[j] <= 0 ||
          admin_id(d, json_pack("{s:s, s:I}", "op", "deregister", "id", sc->ids[j]), what) != 0)
        return false;
      sc->ids[j] = 0;
      continue;
    } else {
      printf("FAIL %s\n", what);
      return false;
    }
    if (id <= 0 || sc->count == MAX_REGS) return false;
    sc->ids[sc->count] = id;
    sc->markers[sc->count++] = marker;
  }
  return true;
}

static void remove_registrations(daemon *d, const scenario *sc) {
  for (int i = sc->count - 1; i >= 0; i--)
    if (sc->ids[i] > 0)
      json_decref(admin_request(d, json_pack("{s:s, s:I}", "op", "deregister", "id", sc->ids[i])));
}

static void check_table(const daemon *d, const scenario *sc, const json_t *fx, const json_t *table,
                        opd__oracle_counts *cells) {
  char path[512];
  snprintf(path, sizeof path, "/v1/ops/%s", sc->op);
  json_t *op = http_get(d, path);
  const json_t *got_table = json_object_get(op, "table");
  size_t i;
  json_t *col;
  json_array_foreach(json_object_get(fx, "columns"), i, col) {
    const char *name = json_string_value(col);
    const json_t *want = json_object_get(table, name);
    json_t *got = json_deep_copy(json_object_get(got_table, name));
    opd_dispatch_key k;
    if (!name || opd_key_from_name(name, &k) != 0) {
      cells->skipped++;
      json_decref(got);
      continue;
    }
    if (!got) got = json_pack("{s:s}", "source", "(no table from the status endpoint)");
    json_int_t id = json_integer_value(json_object_get(got, "registration"));
    const char *marker = id > 0 ? marker_of(sc, id) : NULL; /* removed ones are 0 in sc */
    json_object_del(got, "registration");
    json_object_del(got, "kernel");
    json_object_del(got, "provenance");
    if (marker) json_object_set_new(got, "marker", json_string(marker));
    const char *want_src = json_string_value(json_object_get(want, "source"));
    if (want_src && strcmp(want_src, "fallback") == 0 &&
        strcmp(opd__oracle_str(got, "source"), "missing") == 0) {
      cells->skipped++;
    } else if (json_equal(want, got)) {
      cells->passed++;
    } else {
      char *w = opd__oracle_dump(want), *g = opd__oracle_dump(got);
      opd__oracle_fail(cells, "%s table[%s] (over HTTP): fixture %s, opd %s", sc->id, name, w, g);
      free(w);
      free(g);
    }
    json_decref(got);
  }
  json_decref(op);
}

static opd_client_tensor handle_of(const kinds *tk, const char *name) {
  for (int i = 0; i < tk->count; i++)
    if (name && strcmp(tk->names[i], name) == 0) return tk->handles[i];
  return 0;
}

/* The names of a key list that opd knows; false if one in a list that must be whole is not. */
static bool in_list(const json_t *list, const char *name) {
  size_t i;
  json_t *v;
  json_array_foreach(list, i, v) {
    if (json_string_value(v) && strcmp(json_string_value(v), name) == 0) return true;
  }
  return false;
}

/* The change from the default set `defaults` to the call's effective set `effective`: the
 * names to add and the names to remove. With `whole`, a name opd does not know makes the
 * call unreplayable (false); otherwise it is ignored (a key opd lacks in an exclude set
 * changes nothing). */
static bool change_of(const json_t *effective, const json_t *defaults, const char **add,
                      size_t *nadd, const char **remove, size_t *nremove, bool whole) {
  size_t i;
  json_t *v;
  *nadd = *nremove = 0;
  json_array_foreach(effective, i, v) {
    opd_dispatch_key k;
    const char *name = json_string_value(v);
    if (!name || opd_key_from_name(name, &k) != 0) {
      if (whole) return false;
      continue;
    }
    if (!in_list(defaults, name) && *nadd < 64) add[(*nadd)++] = name;
  }
  json_array_foreach(defaults, i, v) {
    const char *name = json_string_value(v);
    opd_dispatch_key k;
    if (name && !in_list(effective, name) && opd_key_from_name(name, &k) == 0 && *nremove < 64)
      remove[(*nremove)++] = name;
  }
  return true;
}

/* The outcome in the fixture's vocabulary, from the daemon's answer. */
static json_t *outcome(opd_client *c, int rc, opd_client_tensor result) {
  if (rc == 0) {
    int64_t number = -1;
    opd_client_tensor_info info;
    int drc = opd_client_download(c, result, &number, sizeof number, &info);
    opd_client_release(c, &result, 1);
    char ran[32];
    if (drc == 0 && info.dtype == OPD_INT64 && info.nbytes == sizeof number && number >= 0)
      snprintf(ran, sizeof ran, "k%lld", (long long)number);
    else
      snprintf(ran, sizeof ran, "(no marker)");
    return json_pack("{s:s}", "ran", ran);
  }
  const char *msg = opd_client_last_error();
  const char *from = strstr(msg, "with arguments from the '"), *at = strstr(msg, "kernel at ");
  char key[64];
  if (rc == OPD_ENOTIMPL && strstr(msg, "There were no tensor arguments"))
    return json_pack("{s:s, s:s}", "error", "NotImplemented", "error_key", "Undefined");
  if (rc == OPD_ENOTIMPL && from && sscanf(from + 25, "%63[^']", key) == 1)
    return json_pack("{s:s, s:s}", "error", "NotImplemented", "error_key", key);
  if (rc == OPD_ENOTIMPL && strstr(msg, "registered to both CompositeImplicitAutograd"))
    /* the ambiguity kernel is only ever at AutogradOther */
    return json_pack("{s:s, s:s}", "error", "AmbiguousAutogradOther", "error_key", "AutogradOther");
  if (rc == OPD_ENOTIMPL && at && sscanf(at + 10, "%63[^,]", key) == 1)
    return json_pack("{s:s, s:s}", "error", "FallthroughExecuted", "dispatch_key", key);
  return json_pack("{s:s, s:s}", "error", opd_client_err_name(rc), "message", msg);
}

static void check_call(daemon *d, const json_t *fx, const scenario *sc, const kinds *tk,
                       size_t index, const json_t *call, opd__oracle_counts *calls) {
  const char *inc[64], *exc[64], *rinc[64], *rexc[64];
  opd_client_dispatch_change change = {inc, 0, exc, 0, rinc, 0, rexc, 0};
  const json_t *tls = json_object_get(fx, "default_tls");
  if (!change_of(json_object_get(call, "tls_include"), json_object_get(tls, "include"), inc,
                 &change.num_include, rinc, &change.num_remove_include, true) ||
      !opd__oracle_rpc_call(fx, call)) {
    calls->skipped++;
    return;
  }
  change_of(json_object_get(call, "tls_exclude"), json_object_get(tls, "exclude"), exc,
            &change.num_exclude, rexc, &change.num_remove_exclude, false);
  opd_client_value args[MAX_INPUTS];
  opd_client_tensor lists[MAX_INPUTS][MAX_INPUTS];
  size_t nargs = 0, i, j;
  json_t *in, *t;
  json_array_foreach(json_object_get(call, "inputs"), i, in) {
    const char *type = opd__oracle_str(in, "type");
    if (nargs == MAX_INPUTS) break;
    if (strcmp(type, "Tensor") == 0) {
      args[nargs++] = opd_cv_tensor(handle_of(tk, opd__oracle_str(in, "tensor")));
    } else if (strcmp(type, "TensorList") == 0) {
      size_t n = 0;
      json_array_foreach(json_object_get(in, "tensors"), j, t) {
        if (n < MAX_INPUTS) lists[nargs][n++] = handle_of(tk, json_string_value(t));
      }
      args[nargs] = opd_cv_tensors(lists[nargs], n);
      nargs++;
    } else if (strcmp(type, "int") == 0) {
      args[nargs++] = opd_cv_int(json_integer_value(json_object_get(in, "value")));
    } else {
      args[nargs++] = opd_cv_none();
    }
  }
  json_t *got;
  if (opd_client_change_dispatch_state(d->client, &change) != 0) {
    got =
        json_pack("{s:s, s:s}", "error", "set_dispatch_state", "message", opd_client_last_error());
  } else {
    opd_client_tensor result = 0;
    int rc = opd_client_call(d->client, sc->op, args, nargs, &result, 1, NULL);
    got = outcome(d->client, rc, result);
  }
  json_t *want = json_object();
  const char *fields[] = {"ran", "error", "error_key"};
  for (int f = 0; f < 3; f++) {
    json_t *v = json_object_get(call, fields[f]);
    if (v) json_object_set(want, fields[f], v);
  }
  /* a fallthrough's error names the key it selected, which is the fixture's dispatch_key */
  if (json_object_get(got, "dispatch_key"))
    json_object_set(want, "dispatch_key", json_object_get(call, "dispatch_key"));
  if (json_equal(want, got)) {
    calls->passed++;
  } else {
    char *w = opd__oracle_dump(want), *g = opd__oracle_dump(got);
    opd__oracle_fail(calls, "%s call %zu (%s, over RPC): fixture %s, opd %s", sc->id, index,
                     opd__oracle_str(call, "tls"), w, g);
    free(w);
    free(g);
  }
  json_decref(got);
  json_decref(want);
}

/* ---- setup ---- */

/* The id of the marker plugin's kernel (its impl of oracle_markers::marker), loading the
 * plugin unless it is loaded; *loaded says whether this run loaded it. */
static json_int_t marker_kernel_id(daemon *d, const char *plugin, bool *loaded) {
  json_t *resp = admin_request(d, json_pack("{s:s, s:s}", "op", "load_plugin", "file", plugin));
  if (!resp) return -1;
  *loaded = json_is_true(json_object_get(resp, "ok"));
  if (!*loaded && strcmp(opd__oracle_str(resp, "code"), "EEXIST") != 0) {
    fprintf(stderr, "opd-oracle-dispatch: load_plugin %s: %s\n", plugin,
            opd__oracle_str(resp, "error"));
    json_decref(resp);
    return -1;
  }
  json_decref(resp);
  json_t *op = http_get(d, "/v1/ops/oracle_markers::marker");
  json_int_t id = -1;
  size_t i;
  json_t *r;
  json_array_foreach(json_object_get(op, "registrations"), i, r) {
    if (strcmp(opd__oracle_str(r, "kind"), "impl") == 0 &&
        strcmp(opd__oracle_str(r, "key"), "CPU") == 0)
      id = json_integer_value(json_object_get(r, "id"));
  }
  json_decref(op);
  if (id < 0) fprintf(stderr, "opd-oracle-dispatch: no oracle_markers::marker CPU kernel\n");
  return id;
}

/* One tensor per kind the RPC can make: a float32 [1] upload, or an empty Meta tensor. */
static bool make_tensors(daemon *d, const json_t *fx, kinds *tk) {
  const char *name;
  json_t *v;
  json_object_foreach((json_t *)json_object_get(fx, "tensor_keysets"), name, v) {
    if (!opd__oracle_rpc_kind(fx, name) || tk->count == MAX_KINDS) continue;
    opd_client_tensor h = 0;
    int64_t shape[1] = {1};
    float zero = 0;
    int rc;
    const char *backend = kind_backend(fx, name);
    if (strcmp(backend, "Meta") == 0) {
      opd_client_value args[] = {opd_cv_ints(shape, 1), opd_cv_dtype(OPD_FLOAT32),
                                 opd_cv_none(),         opd_cv_device(OPD_CLIENT_DEVICE_META, -1),
                                 opd_cv_none(),         opd_cv_none()};
      rc = opd_client_call(d->client, "aten::empty.memory_format", args, 6, &h, 1, NULL);
    } else if (strcmp(backend, "CPU") == 0) {
      rc = opd_client_upload(d->client, OPD_FLOAT32, shape, 1, &zero, sizeof zero, NULL, &h);
    } else { /* sparse, quantized, mkldnn: a data-less tensor from the marker plugin */
      opd_client_value key = opd_cv_str(backend);
      rc = opd_client_call(d->client, "oracle_markers::tensor_of", &key, 1, &h, 1, NULL);
    }
    if (rc != 0) {
      fprintf(stderr, "opd-oracle-dispatch: making a %s tensor: %s\n", name,
              opd_client_last_error());
      return false;
    }
    tk->names[tk->count] = name;
    tk->handles[tk->count++] = h;
  }
  return true;
}

bool opd__oracle_rpc_run(const json_t *fx, const char *server, const char *admin,
                         const char *status, const char *plugin, opd__oracle_counts *cells,
                         opd__oracle_counts *calls) {
  daemon d = {.admin_path = admin, .admin_fd = -1};
  if (!parse_status_url(&d, status)) {
    fprintf(stderr, "opd-oracle-dispatch: --status '%s': expected http://HOST:PORT or HOST:PORT\n",
            status);
    return false;
  }
  if (strstr(admin, "://") && strncmp(admin, "unix://", 7) != 0) {
    fprintf(stderr,
            "opd-oracle-dispatch: --admin '%s': expected unix:///PATH or a path (the replay "
            "uses the admin Unix socket)\n",
            admin);
    return false;
  }
  if (opd_client_connect(server, NULL, &d.client) != 0) {
    fprintf(stderr, "opd-oracle-dispatch: %s: %s\n", server, opd_client_last_error());
    return false;
  }
  bool loaded = false, ok = false;
  kinds tk = {.count = 0};
  json_int_t kernel = marker_kernel_id(&d, plugin, &loaded);
  if (kernel > 0 && make_tensors(&d, fx, &tk)) {
    ok = true;
    size_t i, j;
    json_t *js, *call;
    json_array_foreach(json_object_get(fx, "scenarios"), i, js) {
      scenario sc = {.id = opd__oracle_str(js, "id"), .op = opd__oracle_str(js, "op")};
      const json_t *table = json_object_get(js, "table"), *call_list = json_object_get(js, "calls");
      if (!strstr(sc.op, "::") ||
          !perform_registrations(&d, &sc, kernel, json_object_get(js, "registrations"))) {
        opd__oracle_fail(cells, "%s: registrations over the admin socket failed", sc.id);
        cells->failed += (long)json_object_size(table) - 1;
        calls->failed += (long)json_array_size(call_list);
      } else {
        check_table(&d, &sc, fx, table, cells);
        json_array_foreach(call_list, j, call) check_call(&d, fx, &sc, &tk, j, call, calls);
      }
      remove_registrations(&d, &sc);
    }
  }
  opd_client_close(d.client); /* the session's tensors go with it */
  if (loaded)
    json_decref(admin_request(&d, json_pack("{s:s, s:s}", "op", "unload_plugin", "file", plugin)));
  if (d.admin_fd >= 0) close(d.admin_fd);
  return ok;
}

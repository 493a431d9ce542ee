/* status.c: the read-only HTTP/1.1 status endpoint (docs/STATUS.md): JSON views of the
 * key universe, the operators and their dispatch tables, the sessions and memory, the
 * Prometheus metrics, and the status page.
 *
 * [Note: The status thread]
 * The endpoint has its own thread and its own libuv loop, so nothing it does (rendering an
 * operator's table takes the registry lock, /metrics walks every operator) can delay the
 * daemon's event loop, and a slow or hostile HTTP client costs the RPC clients nothing. It
 * reads only thread-safe state: the dispatcher's introspection (under the registry lock),
 * the session registry (under its lock; counters are atomics), the allocator's statistics
 * and the call metrics (atomics). The thread is also a reader of the dispatcher ([Note:
 * Registration under traffic], dispatcher/src/registry.c), online while it answers a
 * request and offline while its loop waits: what it reads without the registry lock (a
 * schema for /v1/ops, an operator's kernel and names) is not freed, nor a plugin's code
 * and strings unmapped, until the answer is built. A dispatch answer reads its key set,
 * kernel and table entry under one lock (opd_op_dispatch_json), so they always agree.
 *
 * Requests are parsed by http-parser; only GET is served (405 otherwise). The request
 * target is parsed by opd__status_parse_target, a pure function (the entry point of a
 * fuzzer): the path and the query parameters are percent-decoded and must then be UTF-8
 * text (400 otherwise), unknown paths get 404; every error has a JSON body, and every string
 * the endpoint sends is valid UTF-8 ([Note: Strings on the wire are UTF-8]): names echoed in
 * errors are cut at a character boundary, and bytes from registrations (kernel and operator
 * names, provenance) or from the configuration (listener URLs, peers) are escaped where
 * they are not UTF-8 (opd_json_text).
 *
 * Limits: MAX_HEADER_BYTES of request line and headers (431), MAX_URL_BYTES of URL (414),
 * REQUEST_TIMEOUT_MS from accept to the end of the headers (408), WRITE_TIMEOUT_MS for a
 * response to leave. At most MAX_CONNS connections are open at once, and a new one past
 * that closes the oldest (unanswered): idle or slow clients cannot lock out a health check,
 * which an endpoint that refused new connections when full (as this one did, with 503) let
 * 64 idle connections do for as long as they stayed. Every response closes its connection
 * (Connection: close): the clients are people, scrapers and the status page, and this keeps
 * the state machine trivial. The connection lingers after the response (see on_shutdown) so
 * that a client still sending gets its answer.
 */
#include "status.h"

#include <assert.h>
#include <http_parser.h>
#include <inttypes.h>
#include <jansson.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <uv.h>

#include "config.h"
#include "loop.h"
#include "gpu.h"
#include "graphs.h"
#include "metrics.h"
#include "opd.pb-c.h"
#include "opd/allocator.h"
#include "opd/clock.h"
#include "opd/error.h"
#include "opd/memory.h"
#include "opd/tensor.h"
#include "opd/introspect.h"
#include "opd/log.h"
#include "opd/utf8.h"

#define MAX_HEADER_BYTES   8192
#define MAX_URL_BYTES      OPD__STATUS_MAX_URL
#define REQUEST_TIMEOUT_MS 5000
#define WRITE_TIMEOUT_MS   10000
#define MAX_CONNS          64
#define LINGER_MS          1000
#define MAX_ECHO_BYTES     300 /* of a name or path echoed in an error message */

extern const unsigned char opd__status_page[];
extern const unsigned long opd__status_page_len;

typedef struct sconn sconn;

struct opd__status {
  opd_server *srv;
  uv_loop_t loop;
  uv_tcp_t listener;
  uv_async_t stop_async;
  pthread_t thread;
  char address[96];
  int port;
  uint64_t start_ns;
  sconn *conns, *conns_tail; /* oldest first */
  size_t nconns;             /* allocated */
  size_t nclosing;           /* of which closing */
};

struct sconn {
  uv_tcp_t tcp;
  uv_timer_t timer;
  opd__status_request req;
  opd__status *st;
  sconn *prev, *next;
  bool responded, closing;
  int open_handles; /* tcp and timer: freed when both are closed */
  uv_write_t wreq;
  uv_shutdown_t sreq;
  char head[256];
  char *body;
  char rbuf[4096];
};

/* ---- a growable text buffer ---- */

typedef struct sbuf {
  char *p;
  size_t len, cap;
  bool failed;
} sbuf;

static void sb_printf(sbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void sb_printf(sbuf *b, const char *fmt, ...) {
  if (b->failed) return;
  for (;;) {
    va_list ap;
    va_start(ap, fmt);
    size_t room = b->cap - b->len;
    int n = vsnprintf(b->p ? b->p + b->len : NULL, room, fmt, ap);
    va_end(ap);
    if (n < 0) {
      b->failed = true;
      return;
    }
    if ((size_t)n < room) {
      b->len += (size_t)n;
      return;
    }
    size_t cap = b->cap ? b->cap * 2 : 4096;
    while (cap - b->len <= (size_t)n) cap *= 2;
    char *p = opd__realloc(b->p, cap);
    if (!p) {
      b->failed = true;
      return;
    }
    b->p = p;
    b->cap = cap;
  }
}

/* ---- connections ---- */

static void conn_handle_closed(uv_handle_t *h) {
  sconn *c = h->data;
  if (--c->open_handles) return;
  opd__status *st = c->st;
  if (c->prev)
    c->prev->next = c->next;
  else
    st->conns = c->next;
  if (c->next)
    c->next->prev = c->prev;
  else
    st->conns_tail = c->prev;
  st->nconns--;
  st->nclosing--;
  opd__free(c->body);
  opd__free(c);
}

static void conn_close(sconn *c) {
  if (c->closing) return;
  c->closing = true;
  c->st->nclosing++;
  uv_close((uv_handle_t *)&c->timer, conn_handle_closed);
  uv_close((uv_handle_t *)&c->tcp, conn_handle_closed);
}

static void on_written(uv_write_t *w, int status);

static void on_close_timeout(uv_timer_t *t) {
  conn_close(t->data);
}

static const char *reason(int code) {
  switch (code) {
  case 200: return "OK";
  case 400: return "Bad Request";
  case 404: return "Not Found";
  case 405: return "Method Not Allowed";
  case 408: return "Request Timeout";
  case 414: return "URI Too Long";
  case 431: return "Request Header Fields Too Large";
  case 500: return "Internal Server Error";
  }
  return "Error";
}

/* Sends the response and closes; takes body (malloc'd; NULL with len 0 for none). */
static void respond(sconn *c, int code, const char *ctype, char *body, size_t len) {
  assert(!c->responded);
  c->responded = true;
  uv_read_stop((uv_stream_t *)&c->tcp);
  uv_timer_start(&c->timer, on_close_timeout, WRITE_TIMEOUT_MS, 0);
  c->body = body;
  int n = snprintf(c->head, sizeof c->head,
                   "HTTP/1.1 %d %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n"
                   "Cache-Control: no-store\r\n%sConnection: close\r\n\r\n",
                   code, reason(code), ctype, len, code == 405 ? "Allow: GET\r\n" : "");
  assert(n > 0 && (size_t)n < sizeof c->head);
  uv_buf_t bufs[2] = {uv_buf_init(c->head, (unsigned)n),
                      uv_buf_init(body ? body : "", (unsigned)len)};
  c->wreq.data = c;
  if (uv_write(&c->wreq, (uv_stream_t *)&c->tcp, bufs, len ? 2 : 1, on_written) < 0) conn_close(c);
}

static void respond_json(sconn *c, int code, json_t *j) {
  char *s = j ? json_dumps(j, JSON_COMPACT) : NULL;
  json_decref(j);
  if (!s) {
    static const char oom[] = "{\"error\":{\"code\":500,\"message\":\"out of memory\"}}";
    s = opd__strdup(oom);
    code = 500;
    if (!s) {
      conn_close(c);
      return;
    }
  }
  respond(c, code, "application/json", s, strlen(s));
}

static void respond_error(sconn *c, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void respond_error(sconn *c, int code, const char *fmt, ...) {
  char msg[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  opd_utf8_repair(msg); /* the end of a message cut to fit */
  respond_json(c, code, json_pack("{s:{s:i, s:s}}", "error", "code", code, "message", msg));
}

/* ---- helpers ---- */

static json_t *keyset_names(opd_keyset s) {
  json_t *a = json_array();
  opd_keyset_iter it = opd_keyset_iter_begin(s);
  opd_dispatch_key k;
  while (a && opd_keyset_iter_next(&it, &k)) json_array_append_new(a, json_string(opd_key_name(k)));
  return a;
}

/* s, valid UTF-8 here, cut at a character boundary to fit buf (for an error message;
 * anything else would be escaped). */
static const char *echo(char *buf, size_t cap, const char *s) {
  opd_utf8_escape(buf, cap, s, strlen(s));
  return buf;
}

/* ---- the request target ---- */

static int hexval(char ch) {
  if (ch >= '0' && ch <= '9') return ch - '0';
  if (ch >= 'a' && ch <= 'f') return ch - 'a' + 10;
  if (ch >= 'A' && ch <= 'F') return ch - 'A' + 10;
  return -1;
}

/* Percent-decodes src[0..len) into dst (at least len + 1 bytes): false, and *why, for a
 * malformed escape or decoded bytes that are not UTF-8 text (a NUL among them). */
static bool decode_text(const char *src, size_t len, char *dst, const char **why) {
  size_t o = 0;
  for (size_t i = 0; i < len; i++) {
    if (src[i] != '%') {
      dst[o++] = src[i];
      continue;
    }
    int hi = i + 2 < len ? hexval(src[i + 1]) : -1, lo = i + 2 < len ? hexval(src[i + 2]) : -1;
    if (hi < 0 || lo < 0) {
      *why = "malformed percent-encoding";
      return false;
    }
    dst[o++] = (char)(hi * 16 + lo);
    i += 2;
  }
  dst[o] = '\0';
  if (!opd_utf8_valid_text(dst, o)) {
    *why = "percent-decoded bytes that are not UTF-8 text";
    return false;
  }
  return true;
}

/* The value of query parameter `name`, decoded into out (outlen bytes): 1, 0 when absent,
 * -1 (and *why) when it is malformed or too long. */
static int query_param(const char *q, size_t qlen, const char *name, char *out, size_t outlen,
                       const char **why) {
  size_t nlen = strlen(name);
  const char *end = q + qlen;
  while (q < end) {
    const char *amp = memchr(q, '&', (size_t)(end - q));
    const char *pe = amp ? amp : end;
    if ((size_t)(pe - q) > nlen && memcmp(q, name, nlen) == 0 && q[nlen] == '=') {
      size_t vlen = (size_t)(pe - q) - nlen - 1;
      if (vlen >= outlen) {
        *why = "too long";
        return -1;
      }
      return decode_text(q + nlen + 1, vlen, out, why) ? 1 : -1;
    }
    q = amp ? amp + 1 : end;
  }
  return 0;
}

/* Parses "CPU,AutogradCPU" into a key set; false (and the bad name in *bad_name) when a
 * name is not a runtime or functionality key. */
static bool parse_keys(char *list, opd_keyset *out, const char **bad_name) {
  *out = opd_keyset_empty();
  for (char *save = NULL, *tok = strtok_r(list, ",", &save); tok;
       tok = strtok_r(NULL, ",", &save)) {
    while (*tok == ' ') tok++;
    opd_dispatch_key k;
    if (!*tok) continue;
    if (opd_key_from_name(tok, &k) < 0 || opd_key_is_alias(k) ||
        opd_key_kind_of(k) == OPD_KEY_KIND_INVALID) {
      *bad_name = tok;
      return false;
    }
    *out = opd_keyset_union(*out, opd_keyset_of(k));
  }
  return true;
}

static int target_error(opd__status_target *t, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int target_error(opd__status_target *t, int code, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(t->error, sizeof t->error, fmt, ap);
  va_end(ap);
  opd_utf8_repair(t->error);
  return code;
}

/* keys, include and exclude of a dispatch query */
static int parse_dispatch_query(const char *q, size_t qlen, opd__status_target *t) {
  static const char *const params[3] = {"keys", "include", "exclude"};
  opd_keyset *sets[3] = {&t->keys, &t->include, &t->exclude};
  for (int i = 0; i < 3; i++) {
    char value[1024] = "", shown[101];
    const char *why = NULL, *bad_name = NULL;
    if (query_param(q, qlen, params[i], value, sizeof value, &why) < 0)
      return target_error(t, 400, "query parameter '%s': %s", params[i], why);
    if (!parse_keys(value, sets[i], &bad_name))
      return target_error(t, 400, "'%s' is not a runtime or functionality dispatch key",
                          echo(shown, sizeof shown, bad_name));
  }
  return 0;
}

static const struct {
  const char *path;
  opd__status_route route;
} fixed_routes[] = {
    {"/", OPD__STATUS_PAGE},
    {"/index.html", OPD__STATUS_PAGE},
    {"/v1/health", OPD__STATUS_HEALTH},
    {"/v1/info", OPD__STATUS_INFO},
    {"/v1/keys", OPD__STATUS_KEYS},
    {"/v1/ops", OPD__STATUS_OPS},
    {"/v1/fallbacks", OPD__STATUS_FALLBACKS},
    {"/v1/sessions", OPD__STATUS_SESSIONS},
    {"/v1/memory", OPD__STATUS_MEMORY},
    {"/v1/graphs", OPD__STATUS_GRAPHS},
    {"/metrics", OPD__STATUS_METRICS},
};

int opd__status_parse_target(const char *target, size_t len, opd__status_target *t) {
  t->name[0] = t->error[0] = '\0';
  t->keys = t->include = t->exclude = opd_keyset_empty();
  if (len > MAX_URL_BYTES)
    return target_error(t, 414, "the request target is longer than %d bytes", MAX_URL_BYTES);
  struct http_parser_url u;
  http_parser_url_init(&u);
  if (http_parser_parse_url(target, len, 0, &u) != 0 || !(u.field_set & (1 << UF_PATH)))
    return target_error(t, 400, "malformed request target");
  char path[MAX_URL_BYTES + 1];
  const char *why = NULL;
  if (!decode_text(target + u.field_data[UF_PATH].off, u.field_data[UF_PATH].len, path, &why))
    return target_error(t, 400, "%s in the path", why);
  for (size_t i = 0; i < sizeof fixed_routes / sizeof *fixed_routes; i++)
    if (strcmp(path, fixed_routes[i].path) == 0) {
      t->route = fixed_routes[i].route;
      return 0;
    }
  if (strncmp(path, "/v1/graphs/", 11) == 0) {
    snprintf(t->name, sizeof t->name, "%s", path + 11);
    t->route = OPD__STATUS_GRAPH;
    return 0;
  }
  if (strncmp(path, "/v1/ops/", 8) == 0) {
    const char *name = path + 8;
    size_t n = strlen(name);
    bool dispatch = n > 9 && strcmp(name + n - 9, "/dispatch") == 0;
    if (dispatch) n -= 9;
    memcpy(t->name, name, n);
    t->name[n] = '\0';
    t->route = dispatch ? OPD__STATUS_OP_DISPATCH : OPD__STATUS_OP;
    if (!dispatch) return 0;
    bool has_query = u.field_set & (1 << UF_QUERY);
    return parse_dispatch_query(has_query ? target + u.field_data[UF_QUERY].off : "",
                                has_query ? u.field_data[UF_QUERY].len : 0, t);
  }
  char shown[MAX_ECHO_BYTES + 1];
  return target_error(t, 404, "no such endpoint: %s (see docs/STATUS.md)",
                      echo(shown, sizeof shown, path));
}

/* ---- endpoints ---- */

static unsigned num_workers(const opd__status *st) {
  return st->srv->sched.cpu.nthreads;
}

static json_t *info_json(opd__status *st) {
  json_t *listen = json_array();
  for (size_t i = 0; i < opd_server_num_listeners(st->srv); i++)
    json_array_append_new(listen, opd_json_text(opd_server_listener_url(st->srv, i)));
  uint64_t up = opd_monotonic_ns() - st->start_ns;
#ifdef NDEBUG
  const bool assertions = false;
#else
  const bool assertions = true;
#endif
  json_t *j = json_pack("{s:s, s:{s:s, s:b}, s:[s, s], s:[{s:s, s:i, s:I}, {s:s, s:i}], s:f, s:o, "
                        "s:o, s:I}",
                        "version", OPD_VERSION, "build", "compiler", "gcc " __VERSION__,
                        "assertions", assertions, "backends", "CPU", "Meta", "devices", "type",
                        "cpu", "index", 0, "workers", (json_int_t)num_workers(st), "type", "meta",
                        "index", 0, "uptime_s", (double)up / 1e9, "listen", listen, "status",
                        opd_json_text(st->address), "pid", (json_int_t)getpid());
  if (j) opd__gpu_status(st->srv, j); /* "cuda", and the GPUs in "devices" */
  return j;
}

static const char *key_category(opd_dispatch_key k) {
  switch (opd_key_kind_of(k)) {
  case OPD_KEY_KIND_UNDEFINED: return "undefined";
  case OPD_KEY_KIND_FUNCTIONALITY:
    return k < OPD_KEY_BackendSelect ? "non_customizable_backend"
                                     : "non_customizable_functionality";
  case OPD_KEY_KIND_PER_BACKEND: return "per_backend_functionality";
  case OPD_KEY_KIND_RUNTIME_BACKEND: return "per_backend_runtime";
  case OPD_KEY_KIND_ALIAS: return "alias";
  case OPD_KEY_KIND_INVALID: break;
  }
  return NULL;
}

static json_t *bits_json(uint64_t repr) {
  json_t *a = json_array();
  for (int b = 0; a && b < 64; b++)
    if (repr >> b & 1) json_array_append_new(a, json_integer(b));
  return a;
}

static json_t *keys_json(void) {
  json_t *backends = json_array(), *keys = json_array(), *slots = json_array();
  for (int b = 0; b < OPD_NUM_BACKENDS; b++)
    json_array_append_new(
        backends, json_pack("{s:s, s:i}", "name", opd_backend_name((opd_backend)b), "bit", b));
  for (int i = 0; i < OPD_NUM_KEYS; i++) {
    opd_dispatch_key k = (opd_dispatch_key)i;
    const char *name = opd_key_name(k), *cat = name ? key_category(k) : NULL;
    if (!cat) continue;
    json_t *j = json_pack("{s:s, s:i, s:s}", "name", name, "value", i, "category", cat);
    if (opd_key_is_alias(k)) {
      json_object_set_new(j, "covers", keyset_names(opd_alias_keyset(k)));
    } else {
      json_object_set_new(j, "bits", bits_json(opd_keyset_of(k).repr));
      json_object_set_new(j, "repr", json_sprintf("0x%016" PRIx64, opd_keyset_of(k).repr));
    }
    if (opd_key_kind_of(k) == OPD_KEY_KIND_RUNTIME_BACKEND) {
      json_object_set_new(j, "functionality", json_string(opd_key_name(opd_key_functionality(k))));
      json_object_set_new(j, "backend", json_string(opd_backend_name(opd_key_backend(k))));
    }
    json_object_set_new(j, "slot",
                        opd_key_is_runtime(k) ? json_integer(opd_key_slot(k)) : json_null());
    json_array_append_new(keys, j);
  }
  for (unsigned s = 0; s < OPD_NUM_RUNTIME_SLOTS; s++)
    json_array_append_new(slots, json_string(opd_key_name(opd_slot_key(s))));
  return json_pack("{s:i, s:i, s:i, s:o, s:o, s:o}", "num_backends", OPD_NUM_BACKENDS,
                   "num_functionalities", OPD_NUM_FUNCTIONALITIES, "num_slots",
                   OPD_NUM_RUNTIME_SLOTS, "backends", backends, "keys", keys, "slots", slots);
}

static json_t *schema_json(const opd_operator *op) {
  const opd_schema *s = opd_op_schema(op);
  if (!s) return json_null();
  int n = opd_schema_format(s, NULL, 0);
  char *buf = n >= 0 ? opd__malloc((size_t)n + 1) : NULL;
  if (!buf) return json_null();
  opd_schema_format(s, buf, (size_t)n + 1);
  json_t *j = opd_json_text(buf);
  opd__free(buf);
  return j;
}

/* [Note: The status thread]: the schema stays alive while the thread is online */
static void add_op(const opd_operator *op, void *arg) {
  json_array_append_new(arg, json_pack("{s:o, s:o}", "name", opd_json_text(opd_op_name(op)),
                                       "schema", schema_json(op)));
}

static json_t *ops_json(void) {
  json_t *a = json_array();
  opd_for_each_op(add_op, a);
  return json_pack("{s:I, s:o}", "count", (json_int_t)json_array_size(a), "ops", a);
}

typedef struct fallback_scan {
  json_t *found[OPD_NUM_RUNTIME_SLOTS];
} fallback_scan;

static void scan_fallbacks(const opd_operator *op, void *arg) {
  fallback_scan *f = arg;
  for (unsigned s = 0; s < OPD_NUM_RUNTIME_SLOTS; s++) {
    if (f->found[s]) continue;
    json_t *j = opd_op_slot_json(op, opd_slot_key(s));
    const char *src = json_string_value(json_object_get(j, "source"));
    const char *scope = json_string_value(json_object_get(j, "scope"));
    if (src && (strcmp(src, "fallback") == 0 ||
                (strcmp(src, "fallthrough") == 0 && scope && strcmp(scope, "global") == 0)))
      f->found[s] = j;
    else
      json_decref(j);
  }
}

static json_t *fallbacks_json(void) {
  fallback_scan f = {{0}};
  opd_for_each_op(scan_fallbacks, &f);
  json_t *a = json_array();
  for (unsigned s = 0; s < OPD_NUM_RUNTIME_SLOTS; s++) {
    if (!f.found[s]) continue;
    json_object_set_new(f.found[s], "key", json_string(opd_key_name(opd_slot_key(s))));
    json_array_append_new(a, f.found[s]);
  }
  return json_pack("{s:o}", "fallbacks", a);
}

static json_t *sessions_json(opd__status *st) {
  json_t *a = json_array();
  opd__session_registry *r = &st->srv->sessions;
  pthread_mutex_lock(&r->mu);
  for (opd__session *s = r->head; s; s = s->reg_next) {
    const opd__sched_entry *e = &s->sched; /* [Note: Fair sharing of workers] */
    const char *priority =
        opd__priority_name((opd_priority)atomic_load_explicit(&e->priority, memory_order_relaxed));
    json_t *j = json_pack(
        "{s:I, s:o, s:I, s:I, s:I, s:I, s:I, s:o, s:o, s:s, s:I, s:f}", "id", (json_int_t)s->id,
        "peer", opd_json_text(s->peer ? s->peer : ""), "calls",
        (json_int_t)atomic_load_explicit(&s->calls, memory_order_relaxed), "errors",
        (json_int_t)atomic_load_explicit(&s->errors, memory_order_relaxed), "handles",
        (json_int_t)atomic_load_explicit(&s->num_handles, memory_order_relaxed), "bytes_held",
        (json_int_t)atomic_load_explicit(&s->bytes_held, memory_order_relaxed), "graphs",
        (json_int_t)atomic_load_explicit(&s->num_graphs, memory_order_relaxed), "include",
        keyset_names(
            opd_keyset_from_repr(atomic_load_explicit(&s->included_repr, memory_order_relaxed))),
        "exclude",
        keyset_names(
            opd_keyset_from_repr(atomic_load_explicit(&s->excluded_repr, memory_order_relaxed))),
        "priority", priority ? priority : "normal", "jobs",
        (json_int_t)atomic_load_explicit(&e->jobs, memory_order_relaxed), "cost_ms",
        (double)atomic_load_explicit(&e->cost_ns, memory_order_relaxed) / 1e6);
    json_array_append_new(a, j);
  }
  pthread_mutex_unlock(&r->mu);
  return json_pack("{s:I, s:o}", "count", (json_int_t)json_array_size(a), "sessions", a);
}

static json_t *memory_device_json(const char *name, int type) {
  opd_memory_stats m;
  opd_memory_stats_get(type, &m);
  return json_pack("{s:s, s:i, s:I, s:I, s:I, s:I}", "device", name, "index", 0, "in_use",
                   (json_int_t)m.in_use, "peak", (json_int_t)m.peak, "cached", (json_int_t)m.cached,
                   "limit", (json_int_t)m.limit);
}

static json_t *memory_json(void) {
  return json_pack("{s:[o, o], s:I}", "devices", memory_device_json("cpu", OPD_DEVICE_CPU),
                   memory_device_json("meta", OPD_DEVICE_META), "tensor_slab_bytes",
                   (json_int_t)opd_tensor_slab_bytes());
}

static json_t *dispatch_json(const opd_operator *op, const opd__status_target *t) {
  /* the call path reads the thread's dispatch state: install the asked-for one */
  opd_local_dispatch_state saved = opd_tls_get();
  opd_tls_set((opd_local_dispatch_state){
      opd_keyset_union(opd_default_dispatch_state.included, t->include),
      opd_keyset_union(opd_default_dispatch_state.excluded, t->exclude)});
  opd_local_dispatch_state used = opd_tls_get();
  opd_keyset ks;
  json_t *where = opd_op_dispatch_json(op, t->keys, &ks); /* key, kernel, entry: one state */
  opd_tls_set(saved);
  json_t *j =
      where ? json_pack("{s:o, s:o, s:o, s:o, s:o}", "op", opd_json_text(opd_op_name(op)), "keys",
                        keyset_names(t->keys), "include", keyset_names(used.included), "exclude",
                        keyset_names(used.excluded), "dispatch_keyset", keyset_names(ks))
            : NULL;
  if (j && json_object_update(j, where) < 0) {
    json_decref(j);
    j = NULL;
  }
  json_decref(where);
  return j;
}

int opd__status_op_answer(opd__status_target *t, json_t **out) {
  *out = NULL;
  const opd_operator *op = t->name[0] ? opd_find_op(t->name) : NULL;
  if (!op) {
    char shown[MAX_ECHO_BYTES + 1];
    return target_error(t, 404, "unknown operator '%s'", echo(shown, sizeof shown, t->name));
  }
  *out = t->route == OPD__STATUS_OP_DISPATCH ? dispatch_json(op, t) : opd_op_json(op);
  return 200;
}

/* ---- /v1/graphs ---- */

/* The cache's compiled graphs and counters, the daemon's graph counters, the passes the
 * admin disabled ([Note: Graphs in the daemon] in graphs.c). */
static json_t *graphs_json(opd__status *st) {
  json_t *j = opd_graph_cache_json(opd__graphs_cache(st->srv->graphs));
  opd__graphs_counters n;
  opd__graphs_counters_get(st->srv->graphs, &n);
  if (!j || json_object_set_new(j, "disabled_passes", opd__graph_passes_disabled_json()) < 0 ||
      json_object_set_new(j, "defines", json_integer((json_int_t)n.defines)) < 0 ||
      json_object_set_new(j, "define_errors", json_integer((json_int_t)n.define_errors)) < 0 ||
      json_object_set_new(j, "runs", json_integer((json_int_t)n.runs)) < 0 ||
      json_object_set_new(j, "run_errors", json_integer((json_int_t)n.run_errors)) < 0 ||
      json_object_set_new(j, "c_tier", opd_graph_c_tier_json()) < 0) {
    json_decref(j);
    return NULL;
  }
  return j;
}

/* GET /v1/graphs/{id}: the core's introspection document of a cached graph. */
static void graph(sconn *c, const char *id_text) {
  char *end = NULL, shown[MAX_ECHO_BYTES + 1];
  errno = 0;
  unsigned long long id = id_text[0] >= '1' && id_text[0] <= '9' ? strtoull(id_text, &end, 10) : 0;
  if (!id || errno || *end)
    return respond_error(c, 404,
                         "no graph '%s': an id is a positive decimal number (GET "
                         "/v1/graphs lists them)",
                         echo(shown, sizeof shown, id_text));
  opd_compiled_graph *cg = opd_graph_cache_lookup_id(opd__graphs_cache(c->st->srv->graphs), id);
  if (!cg)
    return respond_error(c, 404, "no graph %llu in the cache (GET /v1/graphs lists them)", id);
  json_t *j = opd_compiled_graph_json(cg);
  opd_compiled_graph_release(cg);
  respond_json(c, 200, j);
}

/* ---- /metrics ---- */

static void prom_label(sbuf *b, const char *name) {
  char text[4 * 512]; /* operator names are shorter than 512 bytes; each byte escapes to 4 */
  opd_utf8_escape(text, sizeof text, name, strlen(name));
  for (const char *v = text; *v; v++) {
    if (*v == '\\' || *v == '"')
      sb_printf(b, "\\%c", *v);
    else if (*v == '\n')
      sb_printf(b, "\\n");
    else
      sb_printf(b, "%c", *v);
  }
}

typedef struct metrics_pass {
  sbuf *b;
  int which; /* 0 calls, 1 errors by code, 2 latency, 3 errors by key */
} metrics_pass;

static void emit_op_metrics(const opd__op_metrics_snapshot *m, void *arg) {
  metrics_pass *p = arg;
  sbuf *b = p->b;
  const char *name = opd_op_name(m->op);
  if (p->which == 0) {
    for (unsigned s = 0; s < OPD_NUM_RUNTIME_SLOTS; s++) {
      if (!m->calls_by_slot[s]) continue;
      sb_printf(b, "opd_calls_total{op=\"");
      prom_label(b, name);
      sb_printf(b, "\",key=\"%s\"} %" PRIu64 "\n", opd_key_name(opd_slot_key(s)),
                m->calls_by_slot[s]);
    }
  } else if (p->which == 3) {
    for (unsigned s = 0; s < OPD_NUM_RUNTIME_SLOTS; s++) {
      if (!m->errors_by_slot[s]) continue;
      sb_printf(b, "opd_call_errors_by_key_total{op=\"");
      prom_label(b, name);
      sb_printf(b, "\",key=\"%s\"} %" PRIu64 "\n", opd_key_name(opd_slot_key(s)),
                m->errors_by_slot[s]);
    }
  } else if (p->which == 1) {
    for (int e = 0; e < OPD__METRICS_CODES; e++) {
      if (!m->errors_by_code[e]) continue;
      sb_printf(b, "opd_call_errors_total{op=\"");
      prom_label(b, name);
      sb_printf(b, "\",code=\"%s\"} %" PRIu64 "\n", opd_err_name(-e), m->errors_by_code[e]);
    }
  } else {
    uint64_t cum = 0;
    for (int i = 0; i < OPD__METRICS_BUCKETS; i++) {
      cum += m->buckets[i];
      sb_printf(b, "opd_call_duration_seconds_bucket{op=\"");
      prom_label(b, name);
      if (i < OPD__METRICS_BUCKETS - 1)
        sb_printf(b, "\",le=\"%.9g\"} %" PRIu64 "\n", opd__metrics_bucket_bound(i), cum);
      else
        sb_printf(b, "\",le=\"+Inf\"} %" PRIu64 "\n", cum);
    }
    sb_printf(b, "opd_call_duration_seconds_sum{op=\"");
    prom_label(b, name);
    sb_printf(b, "\"} %.9f\n", (double)m->sum_ns / 1e9);
    sb_printf(b, "opd_call_duration_seconds_count{op=\"");
    prom_label(b, name);
    sb_printf(b, "\"} %" PRIu64 "\n", cum);
  }
}

typedef struct reg_count {
  uint64_t ops;
  uint64_t by_kind[5];
} reg_count;

static const char *const reg_kinds[5] = {"def", "impl", "fallthrough", "fallback",
                                         "fallback_fallthrough"};

static void count_regs(const opd_operator *op, void *arg) {
  reg_count *r = arg;
  r->ops++;
  json_t *j = opd_op_json(op);
  json_t *regs = json_object_get(j, "registrations"), *e;
  size_t i;
  json_array_foreach(regs, i, e) {
    const char *kind = json_string_value(json_object_get(e, "kind"));
    for (int k = 0; kind && k < 5; k++)
      if (strcmp(kind, reg_kinds[k]) == 0) r->by_kind[k]++;
  }
  json_decref(j);
}

/* The graphs' counters: the daemon's, the cache's, each pass's hits. */
static void graph_metrics(sbuf *b, opd__status *st) {
  opd__graphs_counters n;
  opd__graphs_counters_get(st->srv->graphs, &n);
  opd_graph_cache_stats cs;
  opd_graph_cache_stats_get(opd__graphs_cache(st->srv->graphs), &cs);
  opd_graph_c_tier_stats ct;
  opd_graph_c_tier_stats_get(&ct);
  const struct {
    const char *name, *help;
    uint64_t v;
  } counters[] = {
      {"graph_defines_total", "Graph definitions received.", n.defines},
      {"graph_define_errors_total", "Graph definitions refused.", n.define_errors},
      {"graph_runs_total", "Graph runs.", n.runs},
      {"graph_run_errors_total", "Graph runs that failed.", n.run_errors},
      {"graph_cache_hits_total", "Definitions the compiled-graph cache held.", cs.hits},
      {"graph_cache_misses_total", "Definitions compiled anew.", cs.misses},
      {"graph_cache_evictions_total", "Compiled graphs evicted by the LRU.", cs.evictions},
      {"graph_cache_invalidations_total",
       "Compiled graphs dropped by a registration of an operator they call.", cs.invalidations},
      {"graph_dump_bytes_total", "Bytes the per-pass IR dumps wrote.", n.dump_bytes},
      {"graph_numerics_mismatches_total",
       "Fused groups pinned unfused because their results differed from the unfused ones.",
       opd_graph_numerics_mismatches()},
      {"graph_c_compiles_total", "Fused programs the C tier compiled.", ct.compiles},
      {"graph_c_disk_hits_total", "Fused programs the C tier found compiled in its directory.",
       ct.disk_hits},
      {"graph_c_failures_total", "Compiles of the C tier that failed (timeouts included).",
       ct.failures},
      {"graph_c_timeouts_total", "Compiles of the C tier killed at graph_cc_timeout_ms.",
       ct.timeouts},
      {"graph_c_mismatches_total",
       "Compiled fused programs dropped because their results differed from the unfused ones.",
       ct.mismatches},
  };
  for (size_t i = 0; i < sizeof counters / sizeof *counters; i++)
    sb_printf(b, "# HELP opd_%s %s\n# TYPE opd_%s counter\nopd_%s %" PRIu64 "\n", counters[i].name,
              counters[i].help, counters[i].name, counters[i].name, counters[i].v);
  sb_printf(b,
            "# HELP opd_graph_cache_graphs Compiled graphs in the cache.\n# TYPE "
            "opd_graph_cache_graphs gauge\nopd_graph_cache_graphs %u\n",
            cs.size);
  json_t *passes = opd_graph_pass_totals_json(), *p;
  const char *name;
  for (int which = 0; which < 2; which++) {
    const char *field = which ? "runs" : "hits";
    sb_printf(b,
              "# HELP opd_graph_pass_%s_total %s, by pass.\n# TYPE opd_graph_pass_%s_total "
              "counter\n",
              field, which ? "Compilations each pass ran in" : "Rewrites each pass made", field);
    json_object_foreach(passes, name, p) {
      sb_printf(b, "opd_graph_pass_%s_total{pass=\"", field);
      prom_label(b, name);
      sb_printf(b, "\"} %" PRId64 "\n", (int64_t)json_integer_value(json_object_get(p, field)));
    }
  }
  json_decref(passes);
}

static void metrics(sconn *c) {
  opd__status *st = c->st;
  sbuf b = {0};
  metrics_pass p = {&b, 0};
  sb_printf(&b, "# HELP opd_calls_total Operator calls run, by operator and the dispatch key "
                "they reached.\n# TYPE opd_calls_total counter\n");
  opd__metrics_for_each(emit_op_metrics, &p);
  sb_printf(&b, "# HELP opd_call_errors_total Operator calls that failed, by operator and "
                "error code.\n# TYPE opd_call_errors_total counter\n");
  p.which = 1;
  opd__metrics_for_each(emit_op_metrics, &p);
  sb_printf(&b, "# HELP opd_call_errors_by_key_total Operator calls that failed, by operator "
                "and the dispatch key they reached.\n# TYPE opd_call_errors_by_key_total "
                "counter\n");
  p.which = 3;
  opd__metrics_for_each(emit_op_metrics, &p);
  sb_printf(&b, "# HELP opd_response_errors_total Error responses to any request, by protocol "
                "error code.\n# TYPE opd_response_errors_total counter\n");
  for (int code = 0; code < OPD__METRICS_RESPONSE_CODES; code++) {
    const ProtobufCEnumValue *v =
        protobuf_c_enum_descriptor_get_value(&opd__v1__error_code__descriptor, code);
    if (v)
      sb_printf(&b, "opd_response_errors_total{code=\"%s\"} %" PRIu64 "\n", v->name,
                opd__metrics_response_errors(code));
  }
  sb_printf(&b, "# HELP opd_call_duration_seconds Operator call latency (the kernel's time).\n"
                "# TYPE opd_call_duration_seconds histogram\n");
  p.which = 2;
  opd__metrics_for_each(emit_op_metrics, &p);
  sb_printf(&b,
            "# HELP opd_calls_unrecorded_total Calls of operators beyond the metrics "
            "table.\n# TYPE opd_calls_unrecorded_total counter\nopd_calls_unrecorded_total "
            "%" PRIu64 "\n",
            opd__metrics_overflow());
  sb_printf(&b,
            "# HELP opd_loop_requests_total Calls and releases the event loop ran itself "
            "(loop_call_ns).\n# TYPE opd_loop_requests_total counter\nopd_loop_requests_total "
            "%" PRIu64 "\n",
            atomic_load_explicit(&st->srv->loop_calls, memory_order_relaxed));
  static const struct {
    const char *name;
    int type;
  } devs[] = {{"cpu", OPD_DEVICE_CPU}, {"meta", OPD_DEVICE_META}};
  static const char *const mem_names[] = {"in_use", "peak", "limit"};
  for (int f = 0; f < 3; f++) {
    sb_printf(&b,
              "# HELP opd_memory_bytes_%s Allocator bytes (%s) per device.\n"
              "# TYPE opd_memory_bytes_%s gauge\n",
              mem_names[f], mem_names[f], mem_names[f]);
    for (size_t d = 0; d < 2; d++) {
      opd_memory_stats m;
      opd_memory_stats_get(devs[d].type, &m);
      uint64_t v = f == 0 ? m.in_use : f == 1 ? m.peak : m.limit;
      sb_printf(&b, "opd_memory_bytes_%s{device=\"%s\"} %" PRIu64 "\n", mem_names[f], devs[d].name,
                v);
    }
  }
  uint64_t nsess = 0, handles = 0, held = 0;
  opd__session_registry *r = &st->srv->sessions;
  pthread_mutex_lock(&r->mu);
  for (opd__session *s = r->head; s; s = s->reg_next) {
    nsess++;
    handles += atomic_load_explicit(&s->num_handles, memory_order_relaxed);
    held += atomic_load_explicit(&s->bytes_held, memory_order_relaxed);
  }
  pthread_mutex_unlock(&r->mu);
  sb_printf(&b,
            "# HELP opd_sessions Open sessions.\n# TYPE opd_sessions gauge\nopd_sessions %" PRIu64
            "\n# HELP opd_handles Tensor handles held by all sessions.\n# TYPE opd_handles "
            "gauge\nopd_handles %" PRIu64 "\n# HELP opd_session_bytes_held Tensor bytes held "
            "by all sessions.\n# TYPE opd_session_bytes_held gauge\nopd_session_bytes_held "
            "%" PRIu64 "\n",
            nsess, handles, held);
  graph_metrics(&b, st);
  reg_count rc = {0};
  opd_for_each_op(count_regs, &rc);
  sb_printf(&b,
            "# HELP opd_operators Operators with a schema or a registration.\n"
            "# TYPE opd_operators gauge\nopd_operators %" PRIu64 "\n"
            "# HELP opd_registrations Live operator registrations by kind.\n"
            "# TYPE opd_registrations gauge\n",
            rc.ops);
  for (int k = 0; k < 3; k++)
    sb_printf(&b, "opd_registrations{kind=\"%s\"} %" PRIu64 "\n", reg_kinds[k], rc.by_kind[k]);
  sb_printf(&b,
            "# HELP opd_uptime_seconds Seconds since the server started.\n"
            "# TYPE opd_uptime_seconds gauge\nopd_uptime_seconds %.3f\n",
            (double)(opd_monotonic_ns() - st->start_ns) / 1e9);
  if (b.failed) {
    opd__free(b.p);
    return respond_error(c, 500, "out of memory");
  }
  respond(c, 200, "text/plain; version=0.0.4; charset=utf-8", b.p, b.len);
}

/* ---- routing ---- */

static void route(sconn *c) {
  opd__status_target t;
  int code = opd__status_request_target(&c->req, &t);
  if (code) return respond_error(c, code, "%s", t.error);
  opd__status *st = c->st;
  switch (t.route) {
  case OPD__STATUS_PAGE: {
    char *page = opd__malloc(opd__status_page_len + 1);
    if (!page) return respond_error(c, 500, "out of memory");
    memcpy(page, opd__status_page, opd__status_page_len);
    return respond(c, 200, "text/html; charset=utf-8", page, opd__status_page_len);
  }
  case OPD__STATUS_HEALTH: return respond_json(c, 200, json_pack("{s:s}", "status", "ok"));
  case OPD__STATUS_INFO: return respond_json(c, 200, info_json(st));
  case OPD__STATUS_KEYS: return respond_json(c, 200, keys_json());
  case OPD__STATUS_OPS: return respond_json(c, 200, ops_json());
  case OPD__STATUS_FALLBACKS: return respond_json(c, 200, fallbacks_json());
  case OPD__STATUS_SESSIONS: return respond_json(c, 200, sessions_json(st));
  case OPD__STATUS_MEMORY: return respond_json(c, 200, memory_json());
  case OPD__STATUS_METRICS: return metrics(c);
  case OPD__STATUS_GRAPHS: return respond_json(c, 200, graphs_json(st));
  case OPD__STATUS_GRAPH: return graph(c, t.name);
  case OPD__STATUS_OP:
  case OPD__STATUS_OP_DISPATCH: break;
  }
  json_t *j;
  if ((code = opd__status_op_answer(&t, &j)) != 200) return respond_error(c, code, "%s", t.error);
  respond_json(c, 200, j);
}

/* ---- reading a request ---- */

static int on_url(http_parser *p, const char *at, size_t len) {
  opd__status_request *r = p->data;
  if (len > MAX_URL_BYTES - r->url_len) {
    r->url_too_long = true;
    return 1;
  }
  memcpy(r->url + r->url_len, at, len);
  r->url_len += len;
  r->url[r->url_len] = '\0';
  return 0;
}

static int on_headers_complete(http_parser *p) {
  opd__status_request *r = p->data;
  r->headers_done = true;
  http_parser_pause(p, 1);
  return 0;
}

static const http_parser_settings settings = {
    .on_url = on_url,
    .on_headers_complete = on_headers_complete,
};

void opd__status_request_init(opd__status_request *r) {
  http_parser_init(&r->parser, HTTP_REQUEST);
  r->parser.data = r;
  r->header_bytes = 0;
  r->url[0] = '\0';
  r->url_len = 0;
  r->url_too_long = r->headers_done = false;
}

int opd__status_request_feed(opd__status_request *r, const char *data, size_t len, char *error,
                             size_t cap) {
  size_t parsed = http_parser_execute(&r->parser, &settings, data, len);
  r->header_bytes += parsed;
  enum http_errno err = HTTP_PARSER_ERRNO(&r->parser);
  if (r->url_too_long) {
    snprintf(error, cap, "the request target is longer than %d bytes", MAX_URL_BYTES);
    return 414;
  }
  if (r->header_bytes > MAX_HEADER_BYTES) {
    snprintf(error, cap, "the request line and headers exceed %d bytes", MAX_HEADER_BYTES);
    return 431;
  }
  if (err != HPE_OK && err != HPE_PAUSED) {
    snprintf(error, cap, "malformed HTTP request: %s", http_errno_description(err));
    return 400;
  }
  return r->headers_done ? 1 : 0;
}

int opd__status_request_target(const opd__status_request *r, opd__status_target *t) {
  if (r->parser.method != HTTP_GET) {
    t->name[0] = '\0';
    return target_error(t, 405, "only GET is served (got %s)",
                        http_method_str((enum http_method)r->parser.method));
  }
  return opd__status_parse_target(r->url, r->url_len, t);
}

static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf) {
  (void)suggested;
  sconn *c = h->data;
  *buf = uv_buf_init(c->rbuf, sizeof c->rbuf);
}

/* After the response: shut down our side and read (and drop) what the client still sends
 * until it closes or LINGER_MS pass. Closing at once with unread bytes (an oversized
 * header) would reset the connection, and the client could lose the response. */
static void on_discard(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf) {
  (void)buf;
  if (nread < 0) conn_close(s->data);
}

static void on_shutdown(uv_shutdown_t *req, int status) {
  sconn *c = req->data;
  if (status < 0 || c->closing || uv_read_start((uv_stream_t *)&c->tcp, on_alloc, on_discard) < 0)
    return conn_close(c);
  uv_timer_start(&c->timer, on_close_timeout, LINGER_MS, 0);
}

static void on_written(uv_write_t *w, int status) {
  sconn *c = w->data;
  if (status < 0 || c->closing) return conn_close(c);
  c->sreq.data = c;
  if (uv_shutdown(&c->sreq, (uv_stream_t *)&c->tcp, on_shutdown) < 0) conn_close(c);
}

static void on_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf) {
  sconn *c = s->data;
  if (nread < 0) return conn_close(c);
  if (nread == 0 || c->responded) return;
  char error[160];
  int code = opd__status_request_feed(&c->req, buf->base, (size_t)nread, error, sizeof error);
  if (code > 1) return respond_error(c, code, "%s", error);
  if (code == 0) return;
  opd_reader_online(); /* [Note: The status thread] */
  route(c);
  opd_reader_offline();
}

static void on_timeout(uv_timer_t *t) {
  sconn *c = t->data;
  respond_error(c, 408, "the request did not arrive within %d ms", REQUEST_TIMEOUT_MS);
}

static void on_connection(uv_stream_t *server, int status) {
  opd__status *st = server->data;
  if (status < 0) return;
  sconn *c = opd__calloc(1, sizeof *c);
  if (!c) return;
  c->st = st;
  uv_tcp_init(&st->loop, &c->tcp);
  uv_timer_init(&st->loop, &c->timer);
  c->tcp.data = c->timer.data = c;
  c->open_handles = 2;
  /* [Note: The status thread]: past the limit, the oldest open connection makes room */
  if (st->nconns - st->nclosing >= MAX_CONNS)
    for (sconn *old = st->conns; old; old = old->next)
      if (!old->closing) {
        conn_close(old);
        break;
      }
  c->prev = st->conns_tail;
  if (st->conns_tail)
    st->conns_tail->next = c;
  else
    st->conns = c;
  st->conns_tail = c;
  st->nconns++;
  if (uv_accept(server, (uv_stream_t *)&c->tcp) < 0) return conn_close(c);
  opd__status_request_init(&c->req);
  uv_timer_start(&c->timer, on_timeout, REQUEST_TIMEOUT_MS, 0);
  if (uv_read_start((uv_stream_t *)&c->tcp, on_alloc, on_read) < 0) conn_close(c);
}

/* ---- the thread ---- */

static void close_walk(uv_handle_t *h, void *arg) {
  (void)arg;
  if (!uv_is_closing(h)) uv_close(h, NULL);
}

static void on_stop(uv_async_t *a) {
  opd__status *st = a->data;
  for (sconn *c = st->conns, *next; c; c = next) {
    next = c->next;
    conn_close(c);
  }
  uv_walk(&st->loop, close_walk, NULL);
}

static void *status_main(void *arg) {
  opd__status *st = arg;
  opd_reader_register(); /* online only while it answers a request (on_read) */
  opd_reader_offline();
  uv_run(&st->loop, UV_RUN_DEFAULT);
  opd_reader_unregister();
  return NULL;
}

int opd__status_start(opd_server *srv, const char *address, opd__status **out) {
  *out = NULL;
  char url[128];
  snprintf(url, sizeof url, "tcp://%s", address);
  opd__listen_addr addr;
  int rc = opd__parse_listen_url(url, &addr);
  if (rc < 0) return rc;
  opd__status *st = opd__calloc(1, sizeof *st);
  if (!st) return opd_error(OPD_ENOMEM, "out of memory starting the status endpoint");
  st->srv = srv;
  st->start_ns = opd_monotonic_ns();
  if ((rc = uv_loop_init(&st->loop)) < 0) {
    opd__free(st);
    return opd_error(OPD_ERESOURCE, "cannot start the status loop: %s", uv_strerror(rc));
  }
  st->loop.data = st;
  uv_async_init(&st->loop, &st->stop_async, on_stop);
  st->stop_async.data = st;
  uv_tcp_init(&st->loop, &st->listener);
  st->listener.data = st;
  struct sockaddr_storage ss;
  bool v6 = strchr(addr.host, ':') != NULL;
  rc = v6 ? uv_ip6_addr(addr.host, addr.port, (struct sockaddr_in6 *)&ss)
          : uv_ip4_addr(addr.host, addr.port, (struct sockaddr_in *)&ss);
  if (rc >= 0) rc = uv_tcp_bind(&st->listener, (struct sockaddr *)&ss, 0);
  if (rc >= 0) rc = uv_listen((uv_stream_t *)&st->listener, SOMAXCONN, on_connection);
  int len = sizeof ss;
  if (rc >= 0) rc = uv_tcp_getsockname(&st->listener, (struct sockaddr *)&ss, &len);
  if (rc >= 0) {
    st->port =
        ntohs(v6 ? ((struct sockaddr_in6 *)&ss)->sin6_port : ((struct sockaddr_in *)&ss)->sin_port);
    snprintf(st->address, sizeof st->address, v6 ? "[%s]:%d" : "%s:%d", addr.host, st->port);
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    int prc = pthread_create(&st->thread, NULL, status_main, st);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (prc != 0) rc = UV_EAGAIN;
  }
  if (rc < 0) {
    uv_close((uv_handle_t *)&st->listener, NULL);
    uv_close((uv_handle_t *)&st->stop_async, NULL);
    uv_run(&st->loop, UV_RUN_DEFAULT);
    uv_loop_close(&st->loop);
    opd__free(st);
    return opd_error(OPD_EINVAL, "cannot serve the status endpoint on %s: %s", address,
                     uv_strerror(rc));
  }
  *out = st;
  return 0;
}

void opd__status_stop(opd__status *st) {
  uv_async_send(&st->stop_async);
  pthread_join(st->thread, NULL);
  int rc = uv_loop_close(&st->loop);
  assert(rc == 0);
  (void)rc;
  opd__free(st);
}

const char *opd__status_address(const opd__status *st) {
  return st->address;
}

int opd__status_port(const opd__status *st) {
  return st->port;
}

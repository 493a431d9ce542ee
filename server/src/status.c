/* status.c: the read-only HTTP/1.1 status endpoint (docs/STATUS.md), its HTTP side: the
 * thread and its loop, the connections, reading and parsing requests, routing them and
 * sending the answers, and the status page. What it answers is built elsewhere: the JSON
 * views in status_views.c, the Prometheus metrics in status_metrics.c (status_views.h).
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
#include "opd/clock.h"
#include "opd/error.h"
#include "opd/memory.h"
#include "opd/introspect.h"
#include "opd/utf8.h"
#include "status_views.h"
#include "server_view.h"

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
  case 503: return "Service Unavailable";
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
/* s, valid UTF-8 here, cut at a character boundary to fit buf (for an error message;
 * anything else would be escaped). */
const char *opd__status_echo(char *buf, size_t cap, const char *s) {
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

int opd__status_target_error(opd__status_target *t, int code, const char *fmt, ...) {
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
      return opd__status_target_error(t, 400, "query parameter '%s': %s", params[i], why);
    if (!parse_keys(value, sets[i], &bad_name))
      return opd__status_target_error(t, 400, "'%s' is not a runtime or functionality dispatch key",
                                      opd__status_echo(shown, sizeof shown, bad_name));
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
    {"/v1/ready", OPD__STATUS_READY},
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
    return opd__status_target_error(t, 414, "the request target is longer than %d bytes",
                                    MAX_URL_BYTES);
  struct http_parser_url u;
  http_parser_url_init(&u);
  if (http_parser_parse_url(target, len, 0, &u) != 0 || !(u.field_set & (1 << UF_PATH)))
    return opd__status_target_error(t, 400, "malformed request target");
  char path[MAX_URL_BYTES + 1];
  const char *why = NULL;
  if (!decode_text(target + u.field_data[UF_PATH].off, u.field_data[UF_PATH].len, path, &why))
    return opd__status_target_error(t, 400, "%s in the path", why);
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
  return opd__status_target_error(t, 404, "no such endpoint: %s (see docs/STATUS.md)",
                                  opd__status_echo(shown, sizeof shown, path));
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
  case OPD__STATUS_READY: { /* [Note: Session drain] in loop.c */
    const char *why = opd__server_unready_reason(st->srv);
    return respond_json(c, why ? 503 : 200,
                        why ? json_pack("{s:s, s:s}", "status", "unavailable", "reason", why)
                            : json_pack("{s:s}", "status", "ready"));
  }
  case OPD__STATUS_INFO:
    return respond_json(
        c, 200, opd__status_info_json(st->srv, opd_monotonic_ns() - st->start_ns, st->address));
  case OPD__STATUS_KEYS: return respond_json(c, 200, opd__status_keys_json());
  case OPD__STATUS_OPS: return respond_json(c, 200, opd__status_ops_json());
  case OPD__STATUS_FALLBACKS: return respond_json(c, 200, opd__status_fallbacks_json());
  case OPD__STATUS_SESSIONS: return respond_json(c, 200, opd__status_sessions_json(st->srv));
  case OPD__STATUS_MEMORY: return respond_json(c, 200, opd__status_memory_json());
  case OPD__STATUS_METRICS: {
    size_t len;
    char *text = opd__status_metrics_text(st->srv, opd_monotonic_ns() - st->start_ns, &len);
    if (!text) return respond_error(c, 500, "out of memory");
    return respond(c, 200, "text/plain; version=0.0.4; charset=utf-8", text, len);
  }
  case OPD__STATUS_GRAPHS: return respond_json(c, 200, opd__status_graphs_json(st->srv));
  case OPD__STATUS_GRAPH:
  case OPD__STATUS_OP:
  case OPD__STATUS_OP_DISPATCH: break;
  }
  json_t *j;
  code = t.route == OPD__STATUS_GRAPH ? opd__status_graph_answer(st->srv, &t, &j)
                                      : opd__status_op_answer(&t, &j);
  if (code != 200) return respond_error(c, code, "%s", t.error);
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
    return opd__status_target_error(t, 405, "only GET is served (got %s)",
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

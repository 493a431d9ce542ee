/* status.h: the read-only HTTP status endpoint (docs/STATUS.md), on its own thread
 * (internal to the server). */
#ifndef OPD_SERVER_STATUS_H
#define OPD_SERVER_STATUS_H

#include <http_parser.h>
#include <jansson.h>
#include <stdbool.h>

#include "opd/keyset.h"
#include "opd/server.h"

typedef struct opd__status opd__status;

/* The endpoints (docs/STATUS.md). */
typedef enum opd__status_route {
  OPD__STATUS_PAGE, /* / and /index.html */
  OPD__STATUS_HEALTH,
  OPD__STATUS_READY, /* /v1/ready: 200, or 503 while starting or draining */
  OPD__STATUS_INFO,
  OPD__STATUS_KEYS,
  OPD__STATUS_OPS,
  OPD__STATUS_FALLBACKS,
  OPD__STATUS_SESSIONS,
  OPD__STATUS_MEMORY,
  OPD__STATUS_METRICS,
  OPD__STATUS_OP,          /* /v1/ops/{name} */
  OPD__STATUS_OP_DISPATCH, /* /v1/ops/{name}/dispatch?keys=...&include=...&exclude=... */
  OPD__STATUS_GRAPHS,      /* /v1/graphs */
  OPD__STATUS_GRAPH,       /* /v1/graphs/{id} (the id's text in name) */
} opd__status_route;

#define OPD__STATUS_MAX_URL 2048 /* bytes of request target (414 past it) */

/* A request target, parsed ([Note: The status thread] in status.c). */
typedef struct opd__status_target {
  opd__status_route route;
  /* OP, OP_DISPATCH: the operator name, percent-decoded, UTF-8 without NUL (not looked up:
   * an unknown one is the caller's 404) */
  char name[OPD__STATUS_MAX_URL + 1];
  opd_keyset keys, include, exclude; /* OP_DISPATCH: the query's key sets */
  char error[512];                   /* when parsing fails: the message (UTF-8) */
} opd__status_target;

/* Parses one request target (the request line's path and optional query, len bytes, not
 * NUL-terminated): 0 and *t, or the HTTP status that answers it with t->error: 400 for a
 * malformed target, malformed percent-encoding, percent-decoded bytes that are not UTF-8
 * text, or a bad dispatch key name; 404 for no such endpoint; 414 past OPD__STATUS_MAX_URL
 * bytes. Pure: no socket, no server, no dispatcher state, so a fuzzer can call it alone. */
int opd__status_parse_target(const char *target, size_t len, opd__status_target *t);

/* Sets t->error from fmt (repaired to UTF-8) and returns code: the answer of a target that
 * fails. */
int opd__status_target_error(opd__status_target *t, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* s, valid UTF-8, cut at a character boundary to fit buf (for an error message). */
const char *opd__status_echo(char *buf, size_t cap, const char *s);

/* The head of one HTTP request (request line and headers) read by http-parser as its bytes
 * arrive, in pieces of any size; bytes after the head are not read. With the two functions
 * below, everything the endpoint does with a request's bytes before it renders an answer,
 * callable without a socket (a fuzzer's entry points). */
typedef struct opd__status_request {
  http_parser parser;
  size_t header_bytes; /* request line and headers received so far */
  char url[OPD__STATUS_MAX_URL + 1];
  size_t url_len;
  bool url_too_long, headers_done;
} opd__status_request;

void opd__status_request_init(opd__status_request *r);
/* Reads the next len bytes of the request: 0 while its head is incomplete, 1 once it is
 * whole (the method in r->parser.method, the target in r->url), or the HTTP status that
 * refuses it, with the message in error (cap bytes): 414 for a target over
 * OPD__STATUS_MAX_URL bytes, 431 for a head over 8 KiB, 400 for malformed HTTP. */
int opd__status_request_feed(opd__status_request *r, const char *data, size_t len, char *error,
                             size_t cap);
/* The target of a whole request: 0 and *t, or the HTTP status that answers it with t->error:
 * 405 for a method other than GET, else opd__status_parse_target's. */
int opd__status_request_target(const opd__status_request *r, opd__status_target *t);
/* The answer to a target of route OPD__STATUS_OP or OPD__STATUS_OP_DISPATCH: 200 with *out
 * (the operator's registrations and table, or where t's key sets dispatch it; NULL when out
 * of memory), or 404 for an operator that does not exist, with t->error. It reads the
 * dispatcher's introspection: call it as an online reader, or from a thread that no
 * registration change races ([Note: Registration under traffic]). */
int opd__status_op_answer(opd__status_target *t, json_t **out);

/* Binds HOST:PORT (before it returns: an address in use fails here) and starts the status
 * thread. 0 or a negative opd error with a message. */
int opd__status_start(opd_server *srv, const char *address, opd__status **out);
/* Closes every status connection, joins the thread and frees everything. */
void opd__status_stop(opd__status *st);
const char *opd__status_address(const opd__status *st);
int opd__status_port(const opd__status *st);

#endif

/* status.h: the read-only HTTP status endpoint (docs/STATUS.md), on its own thread
 * (internal to the server). */
#ifndef OPD_SERVER_STATUS_H
#define OPD_SERVER_STATUS_H

#include "opd/keyset.h"
#include "opd/server.h"

typedef struct opd__status opd__status;

/* The endpoints (docs/STATUS.md). */
typedef enum opd__status_route {
  OPD__STATUS_PAGE, /* / and /index.html */
  OPD__STATUS_HEALTH,
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

/* Binds HOST:PORT (before it returns: an address in use fails here) and starts the status
 * thread. 0 or a negative opd error with a message. */
int opd__status_start(opd_server *srv, const char *address, opd__status **out);
/* Closes every status connection, joins the thread and frees everything. */
void opd__status_stop(opd__status *st);
const char *opd__status_address(const opd__status *st);
int opd__status_port(const opd__status *st);

#endif

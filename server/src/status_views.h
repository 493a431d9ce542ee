/* status_views.h: what the status endpoint answers, apart from HTTP (internal to the
 * server): the JSON views (status_views.c) and the Prometheus text (status_metrics.c). The
 * HTTP side (status.c) routes a request to one of these and sends what it returns; each runs
 * on the status thread as an online dispatcher reader ([Note: The status thread] in
 * status.c). A NULL answer means out of memory. */
#ifndef OPD_SERVER_STATUS_VIEWS_H
#define OPD_SERVER_STATUS_VIEWS_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "opd/server.h"
#include "status.h"

/* /v1/info: the build, the devices and workers, uptime (ns), the listeners and the status
 * address. */
json_t *opd__status_info_json(opd_server *srv, uint64_t uptime_ns, const char *address);
json_t *opd__status_keys_json(void);                /* /v1/keys */
json_t *opd__status_ops_json(void);                 /* /v1/ops */
json_t *opd__status_fallbacks_json(void);           /* /v1/fallbacks */
json_t *opd__status_sessions_json(opd_server *srv); /* /v1/sessions */
json_t *opd__status_memory_json(void);              /* /v1/memory */
json_t *opd__status_graphs_json(opd_server *srv);   /* /v1/graphs */
/* /v1/graphs/{id} (the id's text in t->name): 200 with *out, the cached graph's
 * introspection document, or 404 with t->error. */
int opd__status_graph_answer(opd_server *srv, opd__status_target *t, json_t **out);
/* /metrics: the text (opd__malloc'd) and its length *len; uptime_ns since start. */
char *opd__status_metrics_text(opd_server *srv, uint64_t uptime_ns, size_t *len);

#endif

/* server_view.h: what the status endpoint reads of a running server, implemented by loop.c
 * beside struct opd_server, so that status.c depends on these few questions and not on the
 * server's layout (internal to the server). Each is safe from any thread while the server
 * runs: the answers are fixed at start, locked (the session registry) or atomic. */
#ifndef OPD_SERVER_SERVER_VIEW_H
#define OPD_SERVER_SERVER_VIEW_H

#include <stdint.h>

#include "opd/server.h"
#include "session.h"

struct opd__graphs;

/* The CPU pool's workers (the lane thread not counted). */
unsigned opd__server_cpu_workers(const opd_server *s);
/* Every open session, under the registry's lock. */
opd__session_registry *opd__server_sessions(opd_server *s);
/* The graphs' cache and counters (graphs.h). */
struct opd__graphs *opd__server_graphs(opd_server *s);
/* The calls and releases the event loop ran itself ([Note: Tiny calls on the loop] in
 * conn_loop_calls.c). */
uint64_t opd__server_loop_requests(const opd_server *s);
/* Why the server takes no new sessions now: "starting", "draining" ([Note: Session drain]
 * in loop.c), or NULL when it does. */
const char *opd__server_unready_reason(const opd_server *s);

#endif

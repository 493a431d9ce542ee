/* status.h: the read-only HTTP status endpoint (docs/STATUS.md), on its own thread
 * (internal to the server). */
#ifndef OPD_SERVER_STATUS_H
#define OPD_SERVER_STATUS_H

#include "opd/server.h"

typedef struct opd__status opd__status;

/* Binds HOST:PORT (before it returns: an address in use fails here) and starts the status
 * thread. 0 or a negative opd error with a message. */
int opd__status_start(opd_server *srv, const char *address, opd__status **out);
/* Closes every status connection, joins the thread and frees everything. */
void opd__status_stop(opd__status *st);
const char *opd__status_address(const opd__status *st);
int opd__status_port(const opd__status *st);

#endif

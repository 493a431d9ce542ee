/* load_report.h: the daemon's load as the hello reply carries it (HelloReply.load in
 * proto/opd.proto), for clients that place their sessions (internal to the server). */
#ifndef OPD_SERVER_LOAD_REPORT_H
#define OPD_SERVER_LOAD_REPORT_H

#include "loop.h"
#include "opd.pb-c.h"
#include "session.h"

/* Fills r->load with the daemon's load now: its sessions other than `asking`, the jobs of
 * every session queued or running, whether it drains, and the allocator's bytes in use and
 * limit per device type. The sub-messages live in this thread's storage until its next call,
 * so r must be packed before then. Called on the event loop. */
void opd__load_report_hello(opd_server *s, const opd__session *asking, Opd__V1__HelloReply *r);

#endif

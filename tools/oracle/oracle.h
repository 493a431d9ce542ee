/* oracle.h: what the two replays of opd-oracle-dispatch share: the in-process one
 * (oracle_dispatch.c, which owns main, the key universe and the priority cases) and the
 * one through a running daemon (oracle_rpc.c: admin RPC, HTTP status endpoint, client RPC).
 */
#ifndef OPD_TOOLS_ORACLE_H
#define OPD_TOOLS_ORACLE_H

#include <jansson.h>
#include <stdbool.h>

typedef struct opd__oracle_counts {
  long passed, failed, skipped;
} opd__oracle_counts;

/* Counts a failure and prints it (the first 40 unless verbose). */
void opd__oracle_fail(opd__oracle_counts *c, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* A string member, or "" when it is missing or not a string (fixtures are input too). */
const char *opd__oracle_str(const json_t *obj, const char *key);
/* Compact sorted JSON text (free() it). */
char *opd__oracle_dump(const json_t *j);

/* Whether the daemon replay can make this call: every tensor kind it uses can be made over
 * the client RPC (opd__oracle_rpc_kind: CPU tensors are uploaded, Meta ones made with
 * aten::empty.memory_format, the others by the marker plugin's tensor_of). Its dispatch
 * state is sent as a change of the defaults (DispatchState's add and remove lists). The
 * in-process replay counts these calls apart, for the comparison. */
bool opd__oracle_rpc_call(const json_t *fx, const json_t *call);
bool opd__oracle_rpc_kind(const json_t *fx, const char *kind);

/* Replays the fixture's scenarios through the daemon: registrations over the admin socket
 * `admin` (unix:///PATH or a path) with the marker plugin `plugin` (a file name in the
 * daemon's plugin directory), tables from the status endpoint `status`
 * (http://HOST:PORT or HOST:PORT), calls over the client RPC at `server` (a URL). Counts into cells
 * and calls; false (with a message) if the daemon cannot be reached or set up. */
bool opd__oracle_rpc_run(const json_t *fx, const char *server, const char *admin,
                         const char *status, const char *plugin, opd__oracle_counts *cells,
                         opd__oracle_counts *calls);

#endif

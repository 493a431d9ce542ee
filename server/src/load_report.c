/* load_report.c: the daemon's load in the hello reply.
 *
 * [Note: Load in the hello reply]
 * A client that places a session among several daemons (client/src/placement.c) compares
 * their loads; the hello reply says it on the RPC port itself, so a client needs no access
 * to the status port and reads a figure as fresh as the session it starts. The figures are
 * the ones /metrics shows (opd_sessions, opd_memory_bytes_in_use and _limit) plus the jobs
 * queued or running on workers, read with relaxed loads: a snapshot, not a transaction.
 * Sessions count the others only, so a client comparing two daemons it has just greeted
 * compares like with like. `draining` is the session drain's flag ([Note: Session drain] in
 * loop.c); a draining daemon refuses the hello itself, so a client reads it true only when
 * the drain began between its hello and the reply. */
#include "load_report.h"

#include <stdatomic.h>

#include "opd/allocator.h"

/* CPU and the CUDA devices together: the device types whose allocators the daemon has. */
#define LOAD_DEVICE_TYPES 2

typedef struct load_storage {
  Opd__V1__Load load;
  Opd__V1__DeviceLoad devices[LOAD_DEVICE_TYPES];
  Opd__V1__DeviceLoad *device_ptrs[LOAD_DEVICE_TYPES];
  Opd__V1__Device device_ids[LOAD_DEVICE_TYPES];
} load_storage;

static _Thread_local load_storage tls_load;

void opd__load_report_hello(opd_server *s, const opd__session *asking, Opd__V1__HelloReply *r) {
  load_storage *st = &tls_load;
  Opd__V1__Load load = OPD__V1__LOAD__INIT;
  opd__session_registry *reg = &s->sessions;
  pthread_mutex_lock(&reg->mu);
  for (const opd__session *x = reg->head; x; x = x->reg_next) {
    if (x != asking) load.sessions++;
    load.jobs_queued += atomic_load_explicit(&x->sched.jobs, memory_order_relaxed);
  }
  pthread_mutex_unlock(&reg->mu);
  static const int types[LOAD_DEVICE_TYPES] = {OPD_DEVICE_CPU, OPD_DEVICE_CUDA};
  for (int i = 0; i < LOAD_DEVICE_TYPES; i++) {
    opd_memory_stats m;
    opd_memory_stats_get(types[i], &m);
    /* a device type with nothing allocated and no limit says nothing: left out */
    if (types[i] != OPD_DEVICE_CPU && m.in_use == 0 && m.limit == 0) continue;
    Opd__V1__Device *id = &st->device_ids[load.n_devices];
    *id = (Opd__V1__Device)OPD__V1__DEVICE__INIT;
    id->type = types[i];
    id->index = -1;
    Opd__V1__DeviceLoad *d = &st->devices[load.n_devices];
    *d = (Opd__V1__DeviceLoad)OPD__V1__DEVICE_LOAD__INIT;
    d->device = id;
    d->bytes_held = m.in_use;
    d->bytes_limit = m.limit;
    st->device_ptrs[load.n_devices++] = d;
  }
  load.devices = st->device_ptrs;
  load.draining = opd_server_draining(s);
  st->load = load;
  r->load = &st->load;
}

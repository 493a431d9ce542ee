/* session.h: a session: the state one connection's requests share.
 *
 * [Note: Sessions and handles]
 * Tensors live in the daemon; a client names them by handle, a number that means something
 * only in its own session: the handle table maps handles to owned tensor references, and a
 * handle never crosses sessions (nor is a pointer ever on the wire). Handles are issued in
 * order from 1. The table and the session's dispatch state belong to the job of the session
 * that runs (one at a time, see [Note: Sessions on workers]); the loop touches them only
 * after the last job came back: to run a tiny call or a release itself ([Note: Tiny calls
 * on the loop] in conn_loop_calls.c), or to release everything.
 *
 * Limits: at most max_handles handles; at most max_bytes_held bytes of storage kept alive by
 * the handles, each storage counted once however many handles view it (a second map counts
 * the handles per storage), Meta storage counting nothing. An upload reserves its bytes
 * when its header arrives, before its data is read, so bytes_held includes the uploads being
 * received; a call's outputs and intermediates are charged to it as they are made, before
 * their memory is allocated (the session's budget, [Note: Memory reserved before it is
 * allocated] in opd/allocator.h), and its results keep their charge as they get handles.
 * The session's graphs (define_graph, graphs.c) are a third map, from the client's graph ids
 * to compiled graphs, at most max_graphs of them; the session's ends release them with
 * its handles. Counters (calls, errors, bytes held, handles, graphs) are atomics for the
 * status endpoint.
 */
#ifndef OPD_SERVER_SESSION_H
#define OPD_SERVER_SESSION_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "opd/dispatcher.h"
#include "opd/random.h"
#include "opd/server.h"
#include "opd/tensor.h"
#include "worker.h"

/* An open-addressing map from nonzero 64-bit keys to 64-bit values. */
typedef struct opd__map {
  uint64_t *keys; /* 0: empty slot */
  uint64_t *vals;
  size_t cap; /* a power of two, or 0 */
  size_t count;
  unsigned shift; /* 64 - log2(cap) */
} opd__map;

struct opd__session {
  uint64_t id;
  const opd_server_config *cfg;
  opd__map handles;              /* handle -> opd_tensor * */
  opd__map storages;             /* opd_storage * -> number of handles using it */
  opd__map graphs;               /* the client's graph id -> opd_compiled_graph * (a reference) */
  struct opd__graphs *graph_ctx; /* the server's (graphs.h): its cache, counters, dumps */
  uint64_t next_handle;
  opd_local_dispatch_state dispatch;
  /* the random operators' generator, installed while the session's calls run ([Note: Random
   * generators] in opd/random.h) */
  opd_generator rng;
  _Atomic uint64_t calls, errors, bytes_held;
  /* bytes_held against max_bytes_held; installed while the session's calls run ([Note:
   * Memory reserved before it is allocated] in opd/allocator.h) */
  opd_mem_budget budget;
  /* for the status endpoint: the handle count and the dispatch sets' key-set bits, written
   * by the session's jobs, read by the status thread */
  _Atomic uint64_t num_handles, num_graphs, included_repr, excluded_repr;
  opd__sched_entry sched;
  struct opd__gpu_session *gpu;      /* its streams (gpu.h); NULL until it used a GPU */
  const char *peer;                  /* "127.0.0.1:40122" (the connection's) */
  opd__session *reg_prev, *reg_next; /* in the registry while registered */
};

/* Every open session, for the status endpoint: the loop thread adds and removes them, the
 * status thread reads them under the lock (only the atomics and the fixed fields). */
typedef struct opd__session_registry {
  pthread_mutex_t mu;
  opd__session *head;
} opd__session_registry;

void opd__session_registry_init(opd__session_registry *r);
void opd__session_registry_destroy(opd__session_registry *r);
void opd__session_register(opd__session_registry *r, opd__session *s);
void opd__session_unregister(opd__session_registry *r, opd__session *s);
/* Records the session's dispatch state for readers on other threads. */
void opd__session_publish_dispatch(opd__session *s);

void opd__session_init(opd__session *s, uint64_t id, const opd_server_config *cfg);
/* Releases every handle's tensor and frees the tables. */
void opd__session_destroy(opd__session *s);
/* The tensor of a handle (borrowed), or NULL. */
opd_tensor *opd__session_lookup(opd__session *s, uint64_t handle);
/* Gives t a new handle, which takes over the caller's reference on success (the caller's
 * stays the caller's on failure). `*reserved` bytes reserved by an upload count towards
 * t's storage and are consumed (zeroed) on success. 0, OPD_ERESOURCE (a limit) or
 * OPD_ENOMEM, with a message. */
int opd__session_hold(opd__session *s, opd_tensor *t, uint64_t *reserved, uint64_t *handle);
/* Drops a handle: 0 or OPD_ENOENT. */
int opd__session_drop(opd__session *s, uint64_t handle);
/* The session's graphs (graphs.c), by the client's id: the compiled graph (borrowed) or
 * NULL; adding one takes the caller's reference (0 or OPD_ENOMEM); taking one off returns
 * its reference (the caller releases it), or NULL. Session ends release them all. */
struct opd_compiled_graph *opd__session_graph(opd__session *s, uint64_t id);
int opd__session_add_graph(opd__session *s, uint64_t id, struct opd_compiled_graph *cg);
struct opd_compiled_graph *opd__session_take_graph(opd__session *s, uint64_t id);
/* Reserves bytes against max_bytes_held: 0 or OPD_ERESOURCE with a message. */
int opd__session_reserve(opd__session *s, uint64_t bytes);
void opd__session_unreserve(opd__session *s, uint64_t bytes);

#endif

/* conn_requests.c: what the loop does with a decoded frame: the ACCEPT column of
 * requests.def ([Note: The request table]): hello, ping, a job of the session (counted
 * against max_in_flight), the refusals; and the decoding of a frame, common to every kind.
 * Uploads are conn_upload.c's.
 */
#include "conn.h"

#include <inttypes.h>

#include "decode.h"
#include "load_report.h"
#include "opd/error.h"
#include "opd/log.h"
#include "opd/utf8.h"
#include "opd_wire.h"

#define PROTOCOL_VERSION 1
/* requests with more arguments are read by protobuf-c (schemas have far fewer) */
#define WIRE_MAX_ARGS    64

/* ---- requests ---- */

static void reply_hello(opd__conn *c, opd__job *j) {
  const Opd__V1__Hello *h = j->req->hello;
  if (h->protocol_version != PROTOCOL_VERSION) {
    char msg[160];
    snprintf(msg, sizeof msg,
             "unsupported protocol version %u: this server speaks version %d; closing the "
             "connection",
             h->protocol_version, PROTOCOL_VERSION);
    opd__conn_fatal(c, j, OPD__V1__ERROR_CODE__FAILED_PRECONDITION, msg);
    return;
  }
  if (opd_server_draining(c->server)) { /* [Note: Session drain] in loop.c */
    opd__conn_fatal(c, j, OPD__V1__ERROR_CODE__UNAVAILABLE,
                    "this daemon is draining: it serves its open sessions until they close and "
                    "takes no new ones; connect to another daemon; closing the connection");
    return;
  }
  const opd_server_config *k = opd__conn_cfg(c);
  /* [Note: Fair sharing of workers]: the class asked for, at most max_priority */
  static const int rank[OPD__NUM_PRIORITIES] = {
      [OPD_PRIORITY_LOW] = 0, [OPD_PRIORITY_NORMAL] = 1, [OPD_PRIORITY_HIGH] = 2};
  opd_priority prio = (opd_priority)h->priority;
  if (!opd__priority_name(prio)) {
    char msg[160];
    snprintf(msg, sizeof msg,
             "unknown priority %d in hello (0 normal, 1 low, 2 high); closing the connection",
             (int)h->priority);
    opd__conn_fatal(c, j, OPD__V1__ERROR_CODE__INVALID_ARGUMENT, msg);
    return;
  }
  if (rank[prio] > rank[k->max_priority]) prio = k->max_priority;
  prio = opd__sched_set_priority(&c->server->sched, &c->session, prio, false);
  Opd__V1__HelloReply r = OPD__V1__HELLO_REPLY__INIT;
  r.protocol_version = PROTOCOL_VERSION;
  r.server = "opd " OPD_VERSION;
  r.max_frame_bytes = k->max_frame_bytes;
  r.max_literal_bytes = k->max_literal_bytes;
  r.max_handles = k->max_handles;
  r.max_bytes_held = k->max_bytes_held;
  r.max_in_flight = k->max_in_flight;
  r.priority = (Opd__V1__Priority)prio;
  opd__load_report_hello(c->server, &c->session, &r); /* [Note: Load in the hello reply] */
  Opd__V1__Response resp = OPD__V1__RESPONSE__INIT;
  resp.id = j->id;
  resp.body_case = OPD__V1__RESPONSE__BODY_HELLO;
  resp.hello = &r;
  int rc = opd__job_pack(j, &resp);
  assert(rc == 0);
  (void)rc;
  c->hello_done = true;
  opd_log(OPD_LOG_DEBUG, "session %" PRIu64 " (%s): hello from '%.100s', priority %s",
          c->session.id, c->peer, h->client_name, opd__priority_name(prio));
  opd__conn_answered(c, j);
}

static void reply_pong(opd__conn *c, opd__job *j) {
  const ProtobufCBinaryData *payload = &j->req->ping->payload; /* [Note: Hand-packed messages] */
  uint8_t *body = opd__job_frame(j, opd__wire_pong_size(j->id, payload->len));
  if (!body) {
    opd__conn_refuse(c, j, opd__error_code(opd_last_error_code()), NULL, opd_last_error());
    return;
  }
  opd__wire_pong(body, j->id, payload->data, payload->len);
  opd__conn_answered(c, j);
}

/* Requests in flight whose response the client does not have yet: a response a worker sent
 * counts no more, though its job is not back ([Note: Responses written by workers] in
 * conn_write.c). */
uint32_t opd__conn_unanswered(opd__conn *c) {
  return c->in_flight - atomic_load_explicit(&c->sent_early, memory_order_relaxed);
}

bool opd__conn_over_in_flight(opd__conn *c, opd__job *j) {
  if (opd__conn_unanswered(c) < opd__conn_cfg(c)->max_in_flight) return false;
  char msg[200];
  snprintf(msg, sizeof msg,
           "session limit reached: %u requests in flight (max_in_flight); wait for responses "
           "before sending more",
           c->in_flight);
  opd__conn_refuse(c, j, OPD__V1__ERROR_CODE__RESOURCE_EXHAUSTED, NULL, msg);
  return true;
}

static bool accept_hello(opd__conn *c, opd__job *j) {
  reply_hello(c, j);
  return true;
}

static bool accept_ping(opd__conn *c, opd__job *j) {
  reply_pong(c, j);
  return true;
}

/* A job of the session: counted against max_in_flight, in the response order, then run on
 * the loop ([Note: Tiny calls on the loop] in conn_loop_calls.c) or handed to the workers. */
static bool accept_job(opd__conn *c, opd__job *j) {
  if (opd__conn_over_in_flight(c, j)) return true;
  j->counted = true;
  c->in_flight++;
  opd__conn_append(c, j);
  if (!opd__conn_run_on_loop(c, j)) opd__conn_to_worker(c, j);
  return true;
}

/* What the loop does with each kind of request ([Note: The request table] in requests.def). */
static const struct {
  bool (*accept)(opd__conn *c, opd__job *j); /* false: the frame waits (nothing consumed) */
  bool session;                              /* it needs the session hello opens */
} loop_requests[OPD__NUM_JOB_KINDS] = {
#define OPD__REQUEST(kind, body, session, accept, ...) [OPD__JOB_##kind] = {accept, session},
#include "requests.def"
#undef OPD__REQUEST
};

int opd__request_decode(opd__arena *arena, const uint8_t *data, size_t len,
                        uint64_t max_graph_nodes, Opd__V1__Request **out, uint64_t *id) {
  /* [Note: Hand-packed messages]: the common requests are read by hand */
  Opd__V1__Request *req = NULL;
  bool by_hand = opd__wire_parse_request(data, len, &arena->pb, WIRE_MAX_ARGS, &req) > 0;
  uint64_t gid, nodes;
  *out = NULL;
  *id = 0;
  if (!by_hand && opd__wire_graph_nodes_over(data, len, max_graph_nodes, &gid, &nodes)) {
    *id = gid; /* [Note: Graphs in the daemon]: refused before it is decoded */
    return opd_error(OPD_EINVAL,
                     "graph node %" PRIu64 ": the graph has %" PRIu64
                     " nodes, more than max_graph_nodes (%" PRIu64 ")",
                     max_graph_nodes, nodes, max_graph_nodes);
  }
  if (!by_hand) {
    opd__arena_reset(arena, arena->limit);
    req = opd__v1__request__unpack(&arena->pb, len, data);
  }
  *out = req;
  if (req) *id = req->id;
  if (!req && arena->out_of_memory)
    return opd_error(OPD_ENOMEM, "out of memory decoding a request of %zu bytes", len);
  if (!req && arena->exceeded)
    return opd_error(OPD_EINVAL,
                     "malformed request: a %zu-byte frame that decodes to more than %zu bytes "
                     "(%d per byte of frame, plus 16 KiB)",
                     len, arena->limit, OPD__DECODE_BYTES_PER_FRAME_BYTE);
  if (!req)
    return opd_error(OPD_EINVAL,
                     "malformed request: the %zu-byte frame is not an opd.v1.Request (protobuf "
                     "decoding failed)",
                     len);
  /* [Note: Strings in requests]: the hand reader took a plain name; check the others */
  char bad[512];
  if (!by_hand && !opd__wire_strings_valid(&opd__v1__request__descriptor, data, len, opd_utf8_valid,
                                           opd_utf8_escape, bad, sizeof bad))
    return opd_error(OPD_EINVAL, "%s", bad);
  return 0;
}

/* Handles one frame; false when it must be handled again later (nothing consumed). */
bool opd__conn_handle_frame(opd__conn *c, const uint8_t *data, size_t len) {
  opd__job *j = opd__conn_job_get(c, len);
  if (!j && c->norder > 0) { /* [Note: Requests when memory runs out] in connection.c */
    c->wait_job = true;
    return false;
  }
  if (!j) {
    opd_log(OPD_LOG_ERROR, "out of memory reading a request; closing %s", c->peer);
    opd__conn_close(c);
    return true;
  }
  Opd__V1__Request *req;
  uint64_t id;
  int rc = opd__request_decode(&j->arena, data, len,
                               c->hello_done ? opd__conn_cfg(c)->max_graph_nodes : UINT64_MAX, &req,
                               &id);
  j->req = req;
  j->id = id;
  if (rc < 0) { /* the frame was read whole: the stream is still in step */
    Opd__V1__ErrorCode code = rc == OPD_ENOMEM ? OPD__V1__ERROR_CODE__RESOURCE_EXHAUSTED
                                               : OPD__V1__ERROR_CODE__INVALID_ARGUMENT;
    if (c->hello_done)
      opd__conn_refuse(c, j, code, NULL, opd_last_error());
    else
      opd__conn_fatal(c, j, code, opd_last_error());
    return true;
  }
  opd__job_kind kind = opd__job_kind_of(req->body_case);
  bool known = kind != OPD__JOB_LOCAL;
  if (!c->hello_done) {
    if (known && !loop_requests[kind].session) {
      j->kind = kind;
      return loop_requests[kind].accept(c, j);
    }
    opd__conn_fatal(c, j, OPD__V1__ERROR_CODE__FAILED_PRECONDITION,
                    "the first request of a connection must be hello; closing the connection");
    return true;
  }
  if (!known) {
    char msg[160];
    snprintf(msg, sizeof msg,
             "request %" PRIu64 " has no body: an unknown or missing request type (this server "
             "speaks protocol version %d)",
             req->id, PROTOCOL_VERSION);
    opd__conn_refuse(c, j, OPD__V1__ERROR_CODE__INVALID_ARGUMENT, NULL, msg);
    return true;
  }
  if (!loop_requests[kind].session) {
    opd__conn_refuse(c, j, OPD__V1__ERROR_CODE__FAILED_PRECONDITION, NULL,
                     "hello was already sent on this connection");
    return true;
  }
  j->kind = kind;
  bool consumed = loop_requests[kind].accept(c, j);
  if (!consumed) opd__conn_job_free(j);
  return consumed;
}

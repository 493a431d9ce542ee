/* fuzz_request.c: one request frame, read the three ways the daemon reads frames: the hand
 * reader of the common requests (opd__wire_parse_request), protobuf-c's unpack into the
 * bounded arena, and the check of every string field (opd__wire_strings_valid); then
 * opd__request_decode, which is how the daemon combines them (server/src/conn_requests.c).
 *
 * It is differential ([Note: Hand-packed messages] in proto/opd_wire.h): a frame the hand
 * reader takes must decode with protobuf-c to the same values, be exactly what the hand
 * writer and protobuf-c's packer write for them (the canonical form), and pass the string
 * check; a frame protobuf-c decodes and the string check passes must hold only UTF-8
 * strings; the daemon's decision must be the one these parts make.
 */
#include <math.h>

#include "arena.h"
#include "connection.h"
#include "fuzz_common.h"
#include "opd/error.h"
#include "opd_wire.h"

/* as the daemon: at most 64 arguments by hand, an arena of 8x the frame plus 16 KiB */
#define WIRE_MAX_ARGS   64
#define MAX_GRAPH_NODES 4 /* small, so that graphs over it are common */
static size_t arena_limit(size_t len) {
  return 8 * len + 16384;
}

static bool same_value(const Opd__V1__IValue *a, const Opd__V1__IValue *b) {
  if (a->value_case != b->value_case) return false;
  switch (a->value_case) {
  case OPD__V1__IVALUE__VALUE_NONE: return a->none == b->none;
  case OPD__V1__IVALUE__VALUE_B: return a->b == b->b;
  case OPD__V1__IVALUE__VALUE_I: return a->i == b->i;
  case OPD__V1__IVALUE__VALUE_D: return memcmp(&a->d, &b->d, sizeof a->d) == 0;
  case OPD__V1__IVALUE__VALUE_TENSOR: return a->tensor == b->tensor;
  default: return false; /* the hand reader reads no other kind */
  }
}

static void check_same_request(const Opd__V1__Request *hand, const Opd__V1__Request *pb) {
  fuzz_check(hand->id == pb->id, "ids differ: %llu by hand, %llu by protobuf-c",
             (unsigned long long)hand->id, (unsigned long long)pb->id);
  fuzz_check(hand->body_case == pb->body_case, "bodies differ: %d by hand, %d by protobuf-c",
             (int)hand->body_case, (int)pb->body_case);
  if (hand->body_case == OPD__V1__REQUEST__BODY_PING) {
    const ProtobufCBinaryData *a = &hand->ping->payload, *b = &pb->ping->payload;
    fuzz_check(a->len == b->len && (a->len == 0 || memcmp(a->data, b->data, a->len) == 0),
               "ping payloads differ");
    return;
  }
  if (hand->body_case == OPD__V1__REQUEST__BODY_RELEASE) {
    const Opd__V1__Release *a = hand->release, *b = pb->release;
    fuzz_check(a->n_handles == b->n_handles,
               "release counts differ: %zu by hand, %zu by protobuf-c", a->n_handles, b->n_handles);
    for (size_t i = 0; i < a->n_handles; i++)
      fuzz_check(a->handles[i] == b->handles[i], "released handle %zu differs", i);
    return;
  }
  fuzz_check(hand->body_case == OPD__V1__REQUEST__BODY_CALL, "the hand reader read a body %d",
             (int)hand->body_case);
  const Opd__V1__Call *a = hand->call, *b = pb->call;
  fuzz_check(strcmp(a->op, b->op) == 0, "ops differ: '%s' by hand, '%s' by protobuf-c", a->op,
             b->op);
  fuzz_check(a->n_args == b->n_args, "argument counts differ: %zu by hand, %zu by protobuf-c",
             a->n_args, b->n_args);
  for (size_t i = 0; i < a->n_args; i++)
    fuzz_check(same_value(a->args[i], b->args[i]), "argument %zu differs", i);
}

/* Every string protobuf-c decoded (at any depth) is UTF-8; ends at a NUL it cannot show. */
static void check_strings(const ProtobufCMessage *m) {
  const ProtobufCMessageDescriptor *d = m->descriptor;
  for (unsigned i = 0; i < d->n_fields; i++) {
    const ProtobufCFieldDescriptor *f = &d->fields[i];
    if (f->type != PROTOBUF_C_TYPE_STRING && f->type != PROTOBUF_C_TYPE_MESSAGE) continue;
    const char *base = (const char *)m;
    if (f->flags & PROTOBUF_C_FIELD_FLAG_ONEOF &&
        *(const uint32_t *)(base + f->quantifier_offset) != f->id)
      continue;
    size_t n = 1;
    const void *const *values = (const void *const *)(base + f->offset);
    if (f->label == PROTOBUF_C_LABEL_REPEATED) {
      n = *(const size_t *)(base + f->quantifier_offset);
      values = *(const void *const *const *)(base + f->offset);
    }
    for (size_t k = 0; k < n; k++) {
      if (!values[k]) continue;
      if (f->type == PROTOBUF_C_TYPE_STRING)
        fuzz_check_text(f->name, values[k]);
      else
        check_strings(values[k]);
    }
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  opd__arena hand_arena, pb_arena, daemon_arena;
  opd__arena_init(&hand_arena);
  opd__arena_init(&pb_arena);
  opd__arena_init(&daemon_arena);
  opd__arena_reset(&hand_arena, arena_limit(size));
  opd__arena_reset(&pb_arena, arena_limit(size));
  opd__arena_reset(&daemon_arena, arena_limit(size));

  Opd__V1__Request *hand = NULL;
  int by_hand = opd__wire_parse_request(data, size, &hand_arena.pb, WIRE_MAX_ARGS, &hand);
  fuzz_check(by_hand >= 0, "the hand reader ran out of memory on %zu bytes", size);
  Opd__V1__Request *pb = opd__v1__request__unpack(&pb_arena.pb, size, data);
  char msg[512];
  bool strings_ok = opd__wire_strings_valid(&opd__v1__request__descriptor, data, size,
                                            opd_utf8_valid, opd_utf8_escape, msg, sizeof msg);
  if (!strings_ok) fuzz_check_text("the string check's message", msg);

  if (by_hand) {
    fuzz_check(pb != NULL, "a frame the hand reader takes that protobuf-c refuses");
    check_same_request(hand, pb);
    fuzz_check(strings_ok, "a frame the hand reader takes that the string check refuses: %s", msg);
    /* the canonical form: both writers give back the frame's bytes */
    size_t n = opd__wire_request_size(hand);
    fuzz_check(n == size, "the hand writer sizes the request at %zu bytes, read from %zu", n, size);
    uint8_t *out = malloc(size ? size : 1);
    opd__wire_request_pack(hand, out);
    fuzz_check(memcmp(out, data, size) == 0, "the hand writer writes other bytes");
    fuzz_check(opd__v1__request__get_packed_size(pb) == size, "protobuf-c packs another size");
    opd__v1__request__pack(pb, out);
    fuzz_check(memcmp(out, data, size) == 0, "protobuf-c packs other bytes");
    free(out);
  }
  if (pb && strings_ok) check_strings(&pb->base);

  /* a graph's nodes counted from its bytes: never fewer than protobuf-c decodes (a frame
   * that repeats define_graph may count more), with the id protobuf-c reads */
  uint64_t gid = 0, nodes = 0, pb_gid = 0, pb_nodes = 0;
  bool over = !by_hand && opd__wire_graph_nodes_over(data, size, MAX_GRAPH_NODES, &gid, &nodes);
  if (pb && pb->body_case == OPD__V1__REQUEST__BODY_DEFINE_GRAPH) {
    opd__wire_graph_nodes_over(data, size, UINT64_MAX, &pb_gid, &pb_nodes);
    fuzz_check(pb_nodes >= pb->define_graph->n_nodes && pb_gid == pb->id,
               "a graph of %zu nodes (request %llu) counted as %llu (request %llu)",
               pb->define_graph->n_nodes, (unsigned long long)pb->id, (unsigned long long)pb_nodes,
               (unsigned long long)pb_gid);
    fuzz_check(over == (pb_nodes > MAX_GRAPH_NODES), "a graph of %llu nodes %s the limit",
               (unsigned long long)pb_nodes, over ? "over" : "within");
  }

  Opd__V1__Request *req = NULL;
  uint64_t id;
  int rc = opd__request_decode(&daemon_arena, data, size, MAX_GRAPH_NODES, &req, &id);
  fuzz_check(rc == 0 || rc == OPD_EINVAL, "opd__request_decode answered %d", rc);
  fuzz_check((rc == 0) == ((by_hand || pb) && strings_ok && !over),
             "the daemon decodes (%d) what its parts %s", rc,
             (by_hand || pb) && strings_ok && !over ? "take" : "refuse");
  fuzz_check((req != NULL) == ((by_hand || pb) && !over), "the daemon's request is %s",
             req ? "decoded" : "missing");
  fuzz_check(id == (req    ? req->id
                    : over ? gid
                           : 0),
             "the daemon answers request %llu", (unsigned long long)id);
  if (rc < 0) fuzz_check_text("the decoding error", opd_last_error());
  if (req && by_hand)
    check_same_request(req, pb);
  else if (req && pb)
    fuzz_check(req->id == pb->id && req->body_case == pb->body_case,
               "the daemon's protobuf-c decoding differs");

  opd__arena_destroy(&hand_arena);
  opd__arena_destroy(&pb_arena);
  opd__arena_destroy(&daemon_arena);
  return 0;
}

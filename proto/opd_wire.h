/* opd_wire.h: hand-packed and hand-parsed forms of the messages sent most often (internal
 * to the daemon and the client library).
 *
 * [Note: Hand-packed messages]
 * A tiny pipelined call costs the daemon and the client a few microseconds each, and
 * protobuf-c's generic code took a third of that: it packs a message by walking its
 * descriptors twice (once for the size, once for the bytes) and unpacks it into freshly
 * allocated structures. The messages of the hot path have a fixed, simple shape, so this
 * file writes and reads them directly:
 *   - a Request whose body is a Call of plain arguments (None, bool, int, float, tensor
 *     handle), a Release or a Ping (client);
 *   - a Response whose body is a CallReply of tensor handles only, or a Pong (daemon);
 *   - the same two Responses, read by the client, and the same Requests, read by the
 *     daemon.
 * The writers produce exactly the bytes protobuf-c produces for the same message (fields in
 * number order, proto3 defaults left out, a set oneof member always written), so nothing
 * on the wire tells them apart. The readers accept only that canonical form and answer
 * false for anything else, which then goes to protobuf-c: they are fast paths, never a
 * second decoder of the protocol. The wire suite checks all of it against protobuf-c, byte
 * for byte and on mutated frames.
 */
#ifndef OPD_WIRE_H
#define OPD_WIRE_H

/* [Note: Raw reads over TCP]
 * The raw bytes of an upload (read by the daemon) or a download (read by the client) go
 * straight into their final buffer, and over TCP in reads of at most OPD__WIRE_TCP_RAW_READ
 * bytes. The receiver's kernel opens the TCP window again (sends the window update) when a
 * read returns, so one read that drains the whole receive queue (a megabyte or two) keeps
 * the window shut while it copies, and the sender, blocked on a full window, waits; the
 * two sides then take turns instead of overlapping. Reads of 128 KiB (iperf3's size) keep
 * the sender writing while the receiver copies: a 64 MiB download on loopback went from
 * about 2.9 to 3.5 GB/s, an upload from 2.8 to 3.2 GB/s (docs/PERFORMANCE.md). A Unix
 * socket has no window (the sender is freed as each buffer is consumed), and reads there
 * take everything queued. */
#define OPD__WIRE_TCP_RAW_READ ((size_t)128 * 1024)

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "opd.pb-c.h"

/* A call's argument of a plain kind, as the hand packer takes it: kind is NONE (u.b: the
 * none flag, 1 as clients send it), B, I, D or TENSOR. */
typedef struct opd__wire_arg {
  Opd__V1__IValue__ValueCase kind;
  union {
    bool b;
    int64_t i;
    double d;
    uint64_t tensor;
  } u;
} opd__wire_arg;

/* A Call{op (oplen bytes), args} of plain arguments: the size of the message, then the size
 * of the Request{id, call} that carries it, and that Request's bytes written to out. The
 * client's typed calls pack their frames so, with no protobuf-c structures in between. */
size_t opd__wire_call_size(size_t oplen, const opd__wire_arg *args, size_t n);
size_t opd__wire_call_request_size(uint64_t id, size_t call_size);
void opd__wire_call_request_pack(uint8_t *out, uint64_t id, size_t call_size, const char *op,
                                 size_t oplen, const opd__wire_arg *args, size_t n);

/* The packed size of a Request of the hand-packed kinds, or 0 for any other request. */
size_t opd__wire_request_size(const Opd__V1__Request *r);
/* Writes a request for which opd__wire_request_size gave n > 0 into out[0, n). */
void opd__wire_request_pack(const Opd__V1__Request *r, uint8_t *out);

/* Response{id, call: CallReply{results: [IValue{tensor: handles[i]}...]}}: its size, and
 * its bytes written to out (room for that size). */
size_t opd__wire_call_handles_size(uint64_t id, const uint64_t *handles, size_t n);
void opd__wire_call_handles(uint8_t *out, uint64_t id, const uint64_t *handles, size_t n);

/* The same Response as protobuf-c structures, over the caller's storage (at most
 * OPD__WIRE_VIEW_HANDLES handles): a reply read by hand, handed on to code that takes
 * protobuf-c's messages. */
#define OPD__WIRE_VIEW_HANDLES 8
typedef struct opd__wire_handles_view {
  Opd__V1__Response response;
  Opd__V1__CallReply reply;
  Opd__V1__IValue values[OPD__WIRE_VIEW_HANDLES];
  Opd__V1__IValue *ptrs[OPD__WIRE_VIEW_HANDLES];
} opd__wire_handles_view;
const Opd__V1__Response *opd__wire_handles_view_init(opd__wire_handles_view *v, uint64_t id,
                                                     const uint64_t *handles, size_t n);

/* Response{id, pong: Pong{payload}}: its size, and its bytes written to out. */
size_t opd__wire_pong_size(uint64_t id, size_t payload_len);
void opd__wire_pong(uint8_t *out, uint64_t id, const uint8_t *payload, size_t payload_len);

/* Reads a Request in the canonical form opd__wire_request_pack writes (a Call of plain
 * arguments, a Release or a Ping), allocating its structures, as protobuf-c's unpack would, from
 * `alloc` (nothing is freed on failure: meant for an arena). 1 and *out, 0 for anything
 * else (left to protobuf-c), -1 if an allocation failed. At most `max_args` arguments. */
int opd__wire_parse_request(const uint8_t *p, size_t len, ProtobufCAllocator *alloc,
                            size_t max_args, Opd__V1__Request **out);
/* [Note: Strings in requests]
 * protobuf-c reads a `string` field into a NUL-terminated copy without looking at its
 * bytes: a NUL inside ends the C string early (Call.op "aten::add.Tensor\0junk" would name
 * aten::add.Tensor) and bytes that are not UTF-8 pass, to be echoed later in errors that
 * conformant clients then cannot decode ([Note: Strings on the wire are UTF-8], opd/utf8.h).
 * The decoded message has lost the length that shows the NUL, so the check reads the
 * frame's bytes again, guided by the message's descriptors: every field of type string at
 * any depth (Call.op, IValue.s, the names of DispatchState, Hello.client_name, and any
 * added later) must hold UTF-8 without NUL bytes. The hand reader of calls takes only
 * ASCII operator names without NUL (a byte loop over a short name) and leaves any other
 * to protobuf-c and this check, so every frame is checked once. The UTF-8 functions are
 * parameters because this library, which the client links too, does not link the
 * dispatcher's.
 *
 * opd__wire_strings_valid: true when every string field of the message of type `desc` in
 * p[0, len) is accepted by `valid` and holds no NUL; false otherwise, with a message in
 * msg (cap bytes, 512 are enough) naming the field by its type and path ("the string field
 * Call.op (call.op) holds a NUL byte: \"aten::add.Tensor\x00junk\"", the bytes quoted with
 * `escape`), or saying where the bytes are not a message. */
bool opd__wire_strings_valid(const ProtobufCMessageDescriptor *desc, const uint8_t *p, size_t len,
                             bool (*valid)(const char *s, size_t len),
                             size_t (*escape)(char *dst, size_t cap, const char *s, size_t len),
                             char *msg, size_t cap);

/* Whether p[0, len) is a Request whose DefineGraph holds more than `max` nodes, counted
 * from its bytes without decoding them (the daemon refuses it so, before protobuf-c would
 * build the nodes): true with the request's id and the count; false for any other frame,
 * or one that is not well formed (left to protobuf-c). Fields are read as protobuf-c reads
 * them, in any order and repeated: the last id counts, and the nodes of every define_graph
 * since the last other body, so the count is never below what protobuf-c builds. */
bool opd__wire_graph_nodes_over(const uint8_t *p, size_t len, uint64_t max, uint64_t *id,
                                uint64_t *count);

/* Reads a Response in the canonical form opd__wire_call_handles writes, with at most
 * `max` handles: true and the values, or false (anything else, left to protobuf-c). */
bool opd__wire_parse_call_handles(const uint8_t *p, size_t len, uint64_t *id, uint64_t *handles,
                                  size_t max, size_t *n);
/* Reads a Response in the form opd__wire_pong writes: the payload points into p. */
bool opd__wire_parse_pong(const uint8_t *p, size_t len, uint64_t *id, const uint8_t **payload,
                          size_t *payload_len);

#endif

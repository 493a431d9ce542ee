/* wire.h: hand-packed encodings of the responses sent most often (internal).
 *
 * [Note: Hand-packed responses]
 * A call whose results are all tensors (nearly every call) and a pong are answered many
 * thousands of times a second, and protobuf-c packs a message by walking its descriptors
 * twice (once for the size, once for the bytes): for a tiny pipelined call that was 7% of
 * the daemon's CPU. These functions write the bytes protobuf-c writes for those two
 * shapes (fields in number order, proto3 defaults left out, a set oneof member always
 * written), so a client cannot tell them apart; the wire suite checks them byte for byte
 * against protobuf-c. Every other response is packed by protobuf-c.
 */
#ifndef OPD_SERVER_WIRE_H
#define OPD_SERVER_WIRE_H

#include <stddef.h>
#include <stdint.h>

/* Response{id, call: CallReply{results: [IValue{tensor: handles[i]}...]}}: its size, and
 * the bytes written to out (which has room for that size). */
size_t opd__wire_call_handles_size(uint64_t id, const uint64_t *handles, size_t n);
void opd__wire_call_handles(uint8_t *out, uint64_t id, const uint64_t *handles, size_t n);

/* Response{id, pong: Pong{payload}}: its size, and the bytes written to out. */
size_t opd__wire_pong_size(uint64_t id, size_t payload_len);
void opd__wire_pong(uint8_t *out, uint64_t id, const uint8_t *payload, size_t payload_len);

#endif

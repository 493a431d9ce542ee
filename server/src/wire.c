/* wire.c: hand-packed encodings of the hot responses ([Note: Hand-packed responses] in
 * wire.h). */
#include "wire.h"

#include <string.h>

/* field numbers of proto/opd.proto, with their wire types */
enum {
  TAG_RESPONSE_ID = 1 << 3 | 0,       /* Response.id: varint */
  TAG_RESPONSE_CALL = 4 << 3 | 2,     /* Response.call: length-delimited */
  TAG_RESPONSE_PONG = 8 << 3 | 2,     /* Response.pong */
  TAG_CALL_REPLY_RESULT = 1 << 3 | 2, /* CallReply.results */
  TAG_IVALUE_TENSOR = 6 << 3 | 0,     /* IValue.tensor: varint */
  TAG_PONG_PAYLOAD = 1 << 3 | 2,      /* Pong.payload */
};

static size_t varint_size(uint64_t v) {
  size_t n = 1;
  while (v >= 0x80) {
    v >>= 7;
    n++;
  }
  return n;
}

static uint8_t *put_varint(uint8_t *p, uint64_t v) {
  while (v >= 0x80) {
    *p++ = (uint8_t)(v | 0x80);
    v >>= 7;
  }
  *p++ = (uint8_t)v;
  return p;
}

static size_t id_size(uint64_t id) {
  return id ? 1 + varint_size(id) : 0; /* proto3: a zero id is not written */
}

static uint8_t *put_id(uint8_t *p, uint64_t id) {
  if (!id) return p;
  *p++ = TAG_RESPONSE_ID;
  return put_varint(p, id);
}

static size_t call_reply_size(const uint64_t *handles, size_t n) {
  size_t size = 0;
  for (size_t i = 0; i < n; i++) {
    size_t value = 1 + varint_size(handles[i]); /* a oneof member is written even if 0 */
    size += 1 + varint_size(value) + value;
  }
  return size;
}

size_t opd__wire_call_handles_size(uint64_t id, const uint64_t *handles, size_t n) {
  size_t reply = call_reply_size(handles, n);
  return id_size(id) + 1 + varint_size(reply) + reply;
}

void opd__wire_call_handles(uint8_t *out, uint64_t id, const uint64_t *handles, size_t n) {
  uint8_t *p = put_id(out, id);
  *p++ = TAG_RESPONSE_CALL;
  p = put_varint(p, call_reply_size(handles, n));
  for (size_t i = 0; i < n; i++) {
    *p++ = TAG_CALL_REPLY_RESULT;
    p = put_varint(p, 1 + varint_size(handles[i]));
    *p++ = TAG_IVALUE_TENSOR;
    p = put_varint(p, handles[i]);
  }
}

static size_t pong_body_size(size_t payload_len) {
  return payload_len ? 1 + varint_size(payload_len) + payload_len : 0;
}

size_t opd__wire_pong_size(uint64_t id, size_t payload_len) {
  size_t body = pong_body_size(payload_len);
  return id_size(id) + 1 + varint_size(body) + body;
}

void opd__wire_pong(uint8_t *out, uint64_t id, const uint8_t *payload, size_t payload_len) {
  uint8_t *p = put_id(out, id);
  *p++ = TAG_RESPONSE_PONG;
  p = put_varint(p, pong_body_size(payload_len));
  if (!payload_len) return;
  *p++ = TAG_PONG_PAYLOAD;
  p = put_varint(p, payload_len);
  memcpy(p, payload, payload_len);
}

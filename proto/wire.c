/* wire.c: hand-packed and hand-parsed forms of the hottest messages ([Note: Hand-packed
 * messages] in opd_wire.h). */
#include "opd_wire.h"

#include <assert.h>
#include <stdio.h>
#include <string.h>

#include "opd/checked.h"

/* field numbers of proto/opd.proto, with their wire types */
enum {
  VARINT = 0,
  FIXED64 = 1,
  LEN = 2,
  TAG_REQUEST_ID = 1 << 3 | VARINT,
  TAG_REQUEST_CALL = 3 << 3 | LEN,
  TAG_REQUEST_RELEASE = 6 << 3 | LEN,
  TAG_REQUEST_PING = 9 << 3 | LEN,
  TAG_CALL_OP = 1 << 3 | LEN,
  TAG_CALL_ARG = 2 << 3 | LEN,
  TAG_PING_PAYLOAD = 1 << 3 | LEN,
  TAG_RELEASE_HANDLES = 1 << 3 | LEN, /* packed, as proto3's repeated scalars are */
  TAG_RESPONSE_ID = 1 << 3 | VARINT,
  TAG_RESPONSE_CALL = 4 << 3 | LEN,
  TAG_RESPONSE_PONG = 8 << 3 | LEN,
  TAG_CALL_REPLY_RESULT = 1 << 3 | LEN,
  TAG_PONG_PAYLOAD = 1 << 3 | LEN,
  TAG_IVALUE_NONE = 1 << 3 | VARINT,
  TAG_IVALUE_B = 2 << 3 | VARINT,
  TAG_IVALUE_I = 3 << 3 | VARINT,
  TAG_IVALUE_D = 4 << 3 | FIXED64,
  TAG_IVALUE_TENSOR = 6 << 3 | VARINT,
};

/* ---- writing ---- */

/* 7 bits a byte: the bits of v (at least 1), rounded up to sevens */
static size_t varint_size(uint64_t v) {
  unsigned bits = 64 - (unsigned)__builtin_clzll(v | 1);
  return (bits + 6) / 7;
}

static uint8_t *put_varint(uint8_t *p, uint64_t v) {
  while (v >= 0x80) {
    *p++ = (uint8_t)(v | 0x80);
    v >>= 7;
  }
  *p++ = (uint8_t)v;
  return p;
}

/* a length-delimited field: tag, length, then the caller writes the bytes */
static size_t field_size(size_t len) {
  return 1 + varint_size(len) + len;
}

static uint8_t *put_len(uint8_t *p, uint8_t tag, size_t len) {
  *p++ = tag;
  return put_varint(p, len);
}

static size_t id_size(uint64_t id) {
  return id ? 1 + varint_size(id) : 0; /* proto3: a zero id is not written */
}

static uint8_t *put_id(uint8_t *p, uint8_t tag, uint64_t id) {
  if (!id) return p;
  *p++ = tag;
  return put_varint(p, id);
}

/* An IValue of a plain kind as an opd__wire_arg: false for the other kinds. */
static bool plain_arg(const Opd__V1__IValue *v, opd__wire_arg *a) {
  a->kind = v->value_case;
  switch (v->value_case) {
  case OPD__V1__IVALUE__VALUE_NONE: a->u.b = v->none != 0; return true;
  case OPD__V1__IVALUE__VALUE_B: a->u.b = v->b != 0; return true;
  case OPD__V1__IVALUE__VALUE_I: a->u.i = v->i; return true;
  case OPD__V1__IVALUE__VALUE_D: a->u.d = v->d; return true;
  case OPD__V1__IVALUE__VALUE_TENSOR: a->u.tensor = v->tensor; return true;
  default: return false;
  }
}

/* The IValue of a plain argument (a oneof member is written even when 0): its size */
static size_t arg_size(const opd__wire_arg *a) {
  switch (a->kind) {
  case OPD__V1__IVALUE__VALUE_NONE:
  case OPD__V1__IVALUE__VALUE_B: return 2; /* tag, and a varint of 0 or 1 */
  case OPD__V1__IVALUE__VALUE_I: return 1 + varint_size((uint64_t)a->u.i);
  case OPD__V1__IVALUE__VALUE_D: return 1 + 8;
  default: return 1 + varint_size(a->u.tensor);
  }
}

static uint8_t *put_arg(uint8_t *p, const opd__wire_arg *a) {
  switch (a->kind) {
  case OPD__V1__IVALUE__VALUE_NONE: *p++ = TAG_IVALUE_NONE; return put_varint(p, a->u.b);
  case OPD__V1__IVALUE__VALUE_B: *p++ = TAG_IVALUE_B; return put_varint(p, a->u.b);
  case OPD__V1__IVALUE__VALUE_I: *p++ = TAG_IVALUE_I; return put_varint(p, (uint64_t)a->u.i);
  case OPD__V1__IVALUE__VALUE_D: {
    uint64_t bits;
    memcpy(&bits, &a->u.d, sizeof bits);
    *p++ = TAG_IVALUE_D;
    for (int i = 0; i < 8; i++) *p++ = (uint8_t)(bits >> (8 * i)); /* little-endian */
    return p;
  }
  default: *p++ = TAG_IVALUE_TENSOR; return put_varint(p, a->u.tensor);
  }
}

static uint8_t *put_call_head(uint8_t *p, uint64_t id, size_t call_size, const char *op,
                              size_t oplen) {
  p = put_id(p, TAG_REQUEST_ID, id);
  p = put_len(p, TAG_REQUEST_CALL, call_size);
  if (oplen) {
    p = put_len(p, TAG_CALL_OP, oplen);
    memcpy(p, op, oplen);
    p += oplen;
  }
  return p;
}

size_t opd__wire_call_size(size_t oplen, const opd__wire_arg *args, size_t n) {
  size_t size = oplen ? field_size(oplen) : 0;
  for (size_t i = 0; i < n; i++) size += field_size(arg_size(&args[i]));
  return size;
}

size_t opd__wire_call_request_size(uint64_t id, size_t call_size) {
  return id_size(id) + field_size(call_size);
}

void opd__wire_call_request_pack(uint8_t *out, uint64_t id, size_t call_size, const char *op,
                                 size_t oplen, const opd__wire_arg *args, size_t n) {
  uint8_t *p = put_call_head(out, id, call_size, op, oplen);
  for (size_t i = 0; i < n; i++) {
    p = put_len(p, TAG_CALL_ARG, arg_size(&args[i]));
    p = put_arg(p, &args[i]);
  }
}

/* A Call of plain arguments: its size, or 0 when an argument is of another kind. */
static size_t call_size(const Opd__V1__Call *c) {
  size_t oplen = c->op ? strlen(c->op) : 0;
  size_t size = oplen ? field_size(oplen) : 0;
  for (size_t i = 0; i < c->n_args; i++) {
    opd__wire_arg a;
    if (!plain_arg(c->args[i], &a)) return 0;
    size += field_size(arg_size(&a));
  }
  return size;
}

/* The packed list of a Release's handles: its bytes (0: no handles, and no field). */
static size_t handles_size(const Opd__V1__Release *r) {
  size_t size = 0;
  for (size_t i = 0; i < r->n_handles; i++) size += varint_size(r->handles[i]);
  return size;
}

size_t opd__wire_request_size(const Opd__V1__Request *r) {
  size_t body;
  switch (r->body_case) {
  case OPD__V1__REQUEST__BODY_RELEASE: {
    size_t list = handles_size(r->release);
    body = list ? field_size(list) : 0;
    break;
  }
  case OPD__V1__REQUEST__BODY_CALL:
    body = call_size(r->call);
    if (!body && r->call->n_args) return 0; /* an argument of another kind */
    break;
  case OPD__V1__REQUEST__BODY_PING:
    body = r->ping->payload.len ? field_size(r->ping->payload.len) : 0;
    break;
  default: return 0;
  }
  return id_size(r->id) + field_size(body);
}

void opd__wire_request_pack(const Opd__V1__Request *r, uint8_t *out) {
  if (r->body_case == OPD__V1__REQUEST__BODY_RELEASE) {
    const Opd__V1__Release *rel = r->release;
    size_t list = handles_size(rel);
    uint8_t *p = put_id(out, TAG_REQUEST_ID, r->id);
    p = put_len(p, TAG_REQUEST_RELEASE, list ? field_size(list) : 0);
    if (list) p = put_len(p, TAG_RELEASE_HANDLES, list);
    for (size_t i = 0; i < rel->n_handles; i++) p = put_varint(p, rel->handles[i]);
    return;
  }
  if (r->body_case == OPD__V1__REQUEST__BODY_PING) {
    uint8_t *p = put_id(out, TAG_REQUEST_ID, r->id);
    size_t len = r->ping->payload.len;
    p = put_len(p, TAG_REQUEST_PING, len ? field_size(len) : 0);
    if (len) {
      p = put_len(p, TAG_PING_PAYLOAD, len);
      memcpy(p, r->ping->payload.data, len);
    }
    return;
  }
  const Opd__V1__Call *c = r->call;
  size_t oplen = c->op ? strlen(c->op) : 0;
  uint8_t *p = put_call_head(out, r->id, call_size(c), c->op, oplen);
  for (size_t i = 0; i < c->n_args; i++) {
    opd__wire_arg a;
    plain_arg(c->args[i], &a); /* (opd__wire_request_size said they all are) */
    p = put_len(p, TAG_CALL_ARG, arg_size(&a));
    p = put_arg(p, &a);
  }
}

static size_t call_reply_size(const uint64_t *handles, size_t n) {
  size_t size = 0;
  for (size_t i = 0; i < n; i++) size += field_size(1 + varint_size(handles[i]));
  return size;
}

const Opd__V1__Response *opd__wire_handles_view_init(opd__wire_handles_view *v, uint64_t id,
                                                     const uint64_t *handles, size_t n) {
  assert(n <= OPD__WIRE_VIEW_HANDLES);
  for (size_t i = 0; i < n; i++) {
    opd__v1__ivalue__init(&v->values[i]);
    v->values[i].value_case = OPD__V1__IVALUE__VALUE_TENSOR;
    v->values[i].tensor = handles[i];
    v->ptrs[i] = &v->values[i];
  }
  opd__v1__call_reply__init(&v->reply);
  v->reply.n_results = n;
  v->reply.results = v->ptrs;
  opd__v1__response__init(&v->response);
  v->response.id = id;
  v->response.body_case = OPD__V1__RESPONSE__BODY_CALL;
  v->response.call = &v->reply;
  return &v->response;
}

size_t opd__wire_call_handles_size(uint64_t id, const uint64_t *handles, size_t n) {
  return id_size(id) + field_size(call_reply_size(handles, n));
}

void opd__wire_call_handles(uint8_t *out, uint64_t id, const uint64_t *handles, size_t n) {
  uint8_t *p = put_id(out, TAG_RESPONSE_ID, id);
  p = put_len(p, TAG_RESPONSE_CALL, call_reply_size(handles, n));
  for (size_t i = 0; i < n; i++) {
    p = put_len(p, TAG_CALL_REPLY_RESULT, 1 + varint_size(handles[i]));
    *p++ = TAG_IVALUE_TENSOR;
    p = put_varint(p, handles[i]);
  }
}

static size_t pong_body_size(size_t payload_len) {
  return payload_len ? field_size(payload_len) : 0;
}

size_t opd__wire_pong_size(uint64_t id, size_t payload_len) {
  return id_size(id) + field_size(pong_body_size(payload_len));
}

void opd__wire_pong(uint8_t *out, uint64_t id, const uint8_t *payload, size_t payload_len) {
  uint8_t *p = put_id(out, TAG_RESPONSE_ID, id);
  p = put_len(p, TAG_RESPONSE_PONG, pong_body_size(payload_len));
  if (!payload_len) return;
  p = put_len(p, TAG_PONG_PAYLOAD, payload_len);
  memcpy(p, payload, payload_len);
}

/* ---- reading (the canonical form only) ---- */

typedef struct reader {
  const uint8_t *p, *end;
} reader;

/* A varint in its shortest form (as written above), at most 10 bytes. */
static bool get_varint(reader *r, uint64_t *v) {
  uint64_t x = 0;
  for (int shift = 0; shift < 70 && r->p < r->end; shift += 7) {
    uint8_t b = *r->p++;
    if (shift == 63 && b > 1) return false; /* past 64 bits */
    x |= (uint64_t)(b & 0x7f) << shift;
    if (!(b & 0x80)) {
      if (shift && !b) return false; /* not the shortest form */
      *v = x;
      return true;
    }
  }
  return false;
}

/* A length-delimited field with this tag: its contents as a sub-reader. */
static bool get_len(reader *r, uint8_t tag, reader *sub) {
  uint64_t len;
  if (r->p >= r->end || *r->p != tag) return false;
  r->p++;
  if (!get_varint(r, &len) || len > (uint64_t)(r->end - r->p)) return false;
  sub->p = r->p;
  sub->end = r->p + len;
  r->p += len;
  return true;
}

/* The id of a Request or Response (field 1 of both), 0 when absent. */
static bool get_id(reader *r, uint64_t *id) {
  *id = 0;
  if (r->p < r->end && *r->p == TAG_RESPONSE_ID) {
    r->p++;
    return get_varint(r, id) && *id != 0; /* a zero id is never written */
  }
  return true;
}

/* An IValue of a plain kind, whole: false for anything else. */
static bool get_plain_value(reader *r, Opd__V1__IValue *v) {
  uint64_t x;
  if (r->p >= r->end) return false;
  uint8_t tag = *r->p++;
  if (tag == TAG_IVALUE_D) {
    if (r->end - r->p != 8) return false;
    uint64_t bits = 0;
    for (int i = 0; i < 8; i++) bits |= (uint64_t)r->p[i] << (8 * i);
    memcpy(&v->d, &bits, sizeof bits);
    v->value_case = OPD__V1__IVALUE__VALUE_D;
    r->p += 8;
    return true;
  }
  if (!get_varint(r, &x) || r->p != r->end) return false;
  switch (tag) {
  case TAG_IVALUE_NONE:
  case TAG_IVALUE_B:
    if (x > 1) return false; /* a bool is written as 0 or 1 */
    if (tag == TAG_IVALUE_NONE)
      v->value_case = OPD__V1__IVALUE__VALUE_NONE, v->none = (protobuf_c_boolean)x;
    else
      v->value_case = OPD__V1__IVALUE__VALUE_B, v->b = (protobuf_c_boolean)x;
    return true;
  case TAG_IVALUE_I: v->value_case = OPD__V1__IVALUE__VALUE_I, v->i = (int64_t)x; return true;
  case TAG_IVALUE_TENSOR: v->value_case = OPD__V1__IVALUE__VALUE_TENSOR, v->tensor = x; return true;
  default: return false;
  }
}

/* Whether the hand reader takes this operator name: ASCII without NUL, as every operator
 * name of a schema is. Anything else (a NUL, other characters, bytes that are not UTF-8)
 * goes to protobuf-c and the check of every request string (opd__wire_strings_valid). */
static bool plain_name(const reader *r) {
  /* byte b is 0 or >= 0x80 exactly when b | (b - 1) has its high bit set; over eight bytes
   * at once a borrow crosses into a byte only from a 0 below it, itself flagged */
  const uint64_t ones = 0x0101010101010101u;
  uint64_t bad = 0;
  const uint8_t *p = r->p;
  for (; r->end - p >= 8; p += 8) {
    uint64_t w;
    memcpy(&w, p, sizeof w);
    bad |= w | (w - ones);
  }
  for (; p < r->end; p++) bad |= (uint8_t)(*p | (uint8_t)(*p - 1));
  return !(bad & 0x8080808080808080u);
}

/* A Call body's operator name and argument count, its arguments' framing checked (their
 * values are read as they are stored): false for a body left to protobuf-c. */
static bool scan_call(reader r, size_t max_args, reader *op, size_t *nargs) {
  *op = (reader){r.p, r.p};
  if (r.p < r.end && *r.p == TAG_CALL_OP &&
      (!get_len(&r, TAG_CALL_OP, op) || op->p == op->end || !plain_name(op)))
    return false; /* an empty op is never written */
  size_t n = 0;
  for (reader arg; r.p < r.end; n++)
    if (n == max_args || !get_len(&r, TAG_CALL_ARG, &arg)) return false;
  *nargs = n;
  return true;
}

/* A call request's messages in one allocation, as protobuf-c's unpack would lay them out in
 * several: the Request, its Call, the arguments' values and pointers, the operator's name. */
typedef struct call_block {
  Opd__V1__Request req;
  Opd__V1__Call call;
  Opd__V1__IValue values[];
} call_block;
_Static_assert(sizeof(Opd__V1__IValue) % sizeof(void *) == 0, "the pointers follow the values");

static Opd__V1__Request *read_call(reader body, reader op, size_t n, ProtobufCAllocator *alloc,
                                   bool *nomem) {
  size_t name_len = (size_t)(op.end - op.p), size;
  /* n is at most the caller's max_args, and the name is inside the frame: checked all the
   * same, since both come from the request */
  bool wraps = opd_ckd_mul(&size, n, sizeof(Opd__V1__IValue) + sizeof(Opd__V1__IValue *)) ||
               opd_ckd_add(&size, size, sizeof(call_block) + 1) ||
               opd_ckd_add(&size, size, name_len);
  call_block *b = wraps ? NULL : alloc->alloc(alloc->allocator_data, size);
  if (!b) {
    *nomem = true;
    return NULL;
  }
  Opd__V1__IValue **args = (Opd__V1__IValue **)(b->values + n);
  char *name = (char *)(args + n);
  memcpy(name, op.p, name_len);
  name[name_len] = '\0';
  b->req = (Opd__V1__Request)OPD__V1__REQUEST__INIT;
  b->req.body_case = OPD__V1__REQUEST__BODY_CALL;
  b->req.call = &b->call;
  b->call = (Opd__V1__Call)OPD__V1__CALL__INIT;
  b->call.op = name;
  b->call.n_args = n;
  b->call.args = n ? args : NULL;
  body.p = op.end > body.p ? op.end : body.p; /* past the op field, when there is one */
  for (size_t i = 0; i < n; i++) {
    reader arg = {body.p, body.p};
    get_len(&body, TAG_CALL_ARG, &arg); /* checked by the scan */
    b->values[i] = (Opd__V1__IValue)OPD__V1__IVALUE__INIT;
    if (!get_plain_value(&arg, &b->values[i])) return NULL;
    args[i] = &b->values[i];
  }
  return &b->req;
}

/* A release request's messages in one allocation: the Request, its Release, the handles. */
typedef struct release_block {
  Opd__V1__Request req;
  Opd__V1__Release release;
  uint64_t handles[];
} release_block;

/* The body of a Release request (its handles, packed): 1 and *out, 0, or -1 (memory). */
static int read_release(reader body, uint64_t id, ProtobufCAllocator *alloc,
                        Opd__V1__Request **out) {
  reader list = {body.p, body.p};
  if (body.p < body.end && (!get_len(&body, TAG_RELEASE_HANDLES, &list) || body.p != body.end ||
                            list.p == list.end)) /* an empty list is never written */
    return 0;
  size_t n = 0, size;
  for (reader scan = list; scan.p < scan.end; n++) {
    uint64_t handle;
    if (!get_varint(&scan, &handle)) return 0;
  }
  /* n is at most the list's bytes: checked all the same, since it comes from the request */
  if (opd_ckd_mul(&size, n, sizeof(uint64_t)) || opd_ckd_add(&size, size, sizeof(release_block)))
    return -1;
  release_block *b = alloc->alloc(alloc->allocator_data, size);
  if (!b) return -1;
  b->req = (Opd__V1__Request)OPD__V1__REQUEST__INIT;
  b->req.id = id;
  b->req.body_case = OPD__V1__REQUEST__BODY_RELEASE;
  b->req.release = &b->release;
  b->release = (Opd__V1__Release)OPD__V1__RELEASE__INIT;
  b->release.n_handles = n;
  b->release.handles = n ? b->handles : NULL;
  for (size_t i = 0; i < n; i++) get_varint(&list, &b->handles[i]); /* checked by the scan */
  *out = &b->req;
  return 1;
}

int opd__wire_parse_request(const uint8_t *p, size_t len, ProtobufCAllocator *alloc,
                            size_t max_args, Opd__V1__Request **out) {
  reader r = {p, p + len}, body, data = {NULL, NULL};
  uint64_t id;
  _Static_assert(TAG_REQUEST_ID == TAG_RESPONSE_ID, "both ids are field 1");
  if (!get_id(&r, &id)) return 0;
  uint8_t tag = r.p < r.end ? *r.p : 0;
  if (tag != TAG_REQUEST_CALL && tag != TAG_REQUEST_RELEASE && tag != TAG_REQUEST_PING) return 0;
  if (!get_len(&r, tag, &body) || r.p != r.end) return 0;
  if (tag == TAG_REQUEST_RELEASE) return read_release(body, id, alloc, out);
  if (tag == TAG_REQUEST_CALL) {
    reader op;
    size_t n;
    bool nomem = false;
    if (!scan_call(body, max_args, &op, &n)) return 0;
    Opd__V1__Request *req = read_call(body, op, n, alloc, &nomem);
    if (!req) return nomem ? -1 : 0;
    req->id = id;
    *out = req;
    return 1;
  }
  Opd__V1__Request *req = alloc->alloc(alloc->allocator_data, sizeof *req);
  Opd__V1__Ping *ping = req ? alloc->alloc(alloc->allocator_data, sizeof *ping) : NULL;
  if (!ping) return -1;
  *req = (Opd__V1__Request)OPD__V1__REQUEST__INIT;
  req->id = id;
  *ping = (Opd__V1__Ping)OPD__V1__PING__INIT;
  req->body_case = OPD__V1__REQUEST__BODY_PING;
  req->ping = ping;
  if (body.p < body.end &&
      (!get_len(&body, TAG_PING_PAYLOAD, &data) || body.p != body.end || data.p == data.end))
    return 0;
  size_t n = (size_t)(data.end - data.p);
  if (n) {
    if (!(ping->payload.data = alloc->alloc(alloc->allocator_data, n))) return -1;
    memcpy(ping->payload.data, data.p, n);
    ping->payload.len = n;
  }
  *out = req;
  return 1;
}

bool opd__wire_parse_call_handles(const uint8_t *p, size_t len, uint64_t *id, uint64_t *handles,
                                  size_t max, size_t *n) {
  reader r = {p, p + len}, reply, value;
  if (!get_id(&r, id) || !get_len(&r, TAG_RESPONSE_CALL, &reply) || r.p != r.end) return false;
  size_t count = 0;
  while (reply.p < reply.end) {
    if (count == max || !get_len(&reply, TAG_CALL_REPLY_RESULT, &value)) return false;
    if (value.p >= value.end || *value.p++ != TAG_IVALUE_TENSOR ||
        !get_varint(&value, &handles[count]) || value.p != value.end)
      return false;
    count++;
  }
  *n = count;
  return true;
}

bool opd__wire_parse_pong(const uint8_t *p, size_t len, uint64_t *id, const uint8_t **payload,
                          size_t *payload_len) {
  reader r = {p, p + len}, pong, data = {NULL, NULL};
  if (!get_id(&r, id) || !get_len(&r, TAG_RESPONSE_PONG, &pong) || r.p != r.end) return false;
  if (pong.p < pong.end &&
      (!get_len(&pong, TAG_PONG_PAYLOAD, &data) || pong.p != pong.end || data.p == data.end))
    return false; /* an empty payload is never written */
  *payload = data.p;
  *payload_len = (size_t)(data.end - data.p);
  return true;
}

/* ---- the size of a graph ---- */

static bool get_any_varint(reader *r, uint64_t *v);

/* Reads the next field of r: its key, and its value (a varint) or its bytes (LEN); false
 * when it is not well formed. */
static bool next_field(reader *r, uint64_t *key, uint64_t *v, reader *bytes) {
  if (!get_any_varint(r, key)) return false;
  switch (*key & 7) {
  case VARINT: return get_any_varint(r, v);
  case FIXED64:
  case 5: /* fixed32 */ *v = (*key & 7) == FIXED64 ? 8 : 4; break;
  case LEN:
    if (!get_any_varint(r, v)) return false;
    break;
  default: return false;
  }
  if (*v > (uint64_t)(r->end - r->p)) return false;
  bytes->p = r->p;
  bytes->end = r->p + *v;
  r->p += *v;
  return true;
}

bool opd__wire_graph_nodes_over(const uint8_t *p, size_t len, uint64_t max, uint64_t *id,
                                uint64_t *count) {
  enum { FIELD_ID = 1, FIELD_FIRST_BODY = 2, FIELD_DEFINE_GRAPH = 10, FIELD_LAST_BODY = 13 };
  enum { FIELD_DEFINE_NODES = 3 };
  reader r = {p, p + len}, body = {NULL, NULL};
  uint64_t n = 0, key, v;
  bool define = false;
  *id = 0;
  *count = 0;
  /* every field, as protobuf-c reads them: the last id counts; a body that comes again is
   * merged or replaces the first, so the nodes of every define_graph since another body are
   * counted (never fewer than protobuf-c would build) */
  while (r.p < r.end) {
    if (!next_field(&r, &key, &v, &body)) return false;
    uint64_t field = key >> 3;
    if (key == (FIELD_ID << 3 | VARINT)) {
      *id = v;
    } else if (field == FIELD_DEFINE_GRAPH && (key & 7) == LEN) {
      if (!define) n = 0;
      define = true;
      while (body.p < body.end) {
        reader node = {NULL, NULL};
        if (!next_field(&body, &key, &v, &node)) return false;
        if (key == (FIELD_DEFINE_NODES << 3 | LEN)) n++;
      }
    } else if (field >= FIELD_FIRST_BODY && field <= FIELD_LAST_BODY) {
      define = false;
    }
  }
  if (!define) return false; /* not a define */
  *count = n;
  return n > max;
}

/* ---- strings in requests ---- */

/* A varint in any form protobuf-c reads (at most 10 bytes). */
static bool get_any_varint(reader *r, uint64_t *v) {
  uint64_t x = 0;
  for (int shift = 0; shift < 70 && r->p < r->end; shift += 7) {
    uint8_t b = *r->p++;
    x |= (uint64_t)(b & 0x7f) << shift;
    if (!(b & 0x80)) {
      *v = x;
      return true;
    }
  }
  return false;
}

enum {
  FIXED32 = 5,
  MAX_DEPTH = 8,   /* opd.proto nests three deep (Request, Call, IValue, TensorLiteral) */
  MAX_COUNTED = 32 /* fields per message whose repetitions are numbered in paths */
};

/* One field on the way from the message to the string being read. */
typedef struct path_step {
  const ProtobufCFieldDescriptor *field;
  int index; /* of a repeated field's value; -1 for a field that is not repeated */
} path_step;

typedef struct string_walk {
  bool (*valid)(const char *s, size_t len);
  size_t (*escape)(char *dst, size_t cap, const char *s, size_t len);
  char *msg;
  size_t cap;
  path_step path[MAX_DEPTH + 1]; /* written out only for a message: "call.args[1].s" */
} string_walk;

static const char *format_path(const string_walk *w, int depth, char *buf, size_t cap) {
  size_t at = 0;
  buf[0] = '\0';
  for (int i = 0; i < depth && at < cap; i++) {
    const path_step *st = &w->path[i];
    int n = st->index < 0 ? snprintf(buf + at, cap - at, "%s%s", i ? "." : "", st->field->name)
                          : snprintf(buf + at, cap - at, "%s%s[%d]", i ? "." : "", st->field->name,
                                     st->index);
    at = n < 0 ? cap : at + (size_t)n;
  }
  return buf;
}

static bool walk_fails(string_walk *w, int depth, const char *why) {
  char path[128];
  snprintf(w->msg, w->cap, "malformed request: %s at %s", why,
           depth ? format_path(w, depth, path, sizeof path) : "the top");
  return false;
}

static bool refuse_string(string_walk *w, int depth, const ProtobufCMessageDescriptor *d,
                          const reader *s, bool nul) {
  char shown[160], path[128], text[512];
  w->escape(shown, sizeof shown, (const char *)s->p, (size_t)(s->end - s->p));
  snprintf(text, sizeof text,
           "the string field %s.%s (%s) %s: \"%s\"; request strings must be UTF-8 text without "
           "NUL bytes",
           d->short_name, w->path[depth - 1].field->name, format_path(w, depth, path, sizeof path),
           nul ? "holds a NUL byte" : "is not valid UTF-8", shown);
  w->escape(w->msg, w->cap, text, strlen(text)); /* cut at a character to fit */
  return false;
}

static bool walk_strings(string_walk *w, const ProtobufCMessageDescriptor *d, reader r, int depth) {
  int seen[MAX_COUNTED] = {0}; /* repetitions so far, by field index */
  while (r.p < r.end) {
    uint64_t key, n;
    if (!get_any_varint(&r, &key)) return walk_fails(w, depth, "a truncated field key");
    switch (key & 7) {
    case VARINT:
      if (!get_any_varint(&r, &n)) return walk_fails(w, depth, "a truncated varint");
      continue;
    case FIXED64:
    case FIXED32:
      n = (key & 7) == FIXED64 ? 8 : 4;
      if (n > (uint64_t)(r.end - r.p)) return walk_fails(w, depth, "a truncated fixed-size field");
      r.p += n;
      continue;
    case LEN: break;
    default: return walk_fails(w, depth, "an unknown wire type");
    }
    if (!get_any_varint(&r, &n) || n > (uint64_t)(r.end - r.p))
      return walk_fails(w, depth, "a field longer than its message");
    reader field = {r.p, r.p + n};
    r.p += n;
    const ProtobufCFieldDescriptor *f =
        key >> 3 <= UINT32_MAX ? protobuf_c_message_descriptor_get_field(d, (unsigned)(key >> 3))
                               : NULL;
    if (!f || (f->type != PROTOBUF_C_TYPE_STRING && f->type != PROTOBUF_C_TYPE_MESSAGE))
      continue; /* bytes, packed numbers, unknown fields */
    size_t index = (size_t)(f - d->fields);
    w->path[depth] = (path_step){f, f->label != PROTOBUF_C_LABEL_REPEATED ? -1
                                    : index < MAX_COUNTED                 ? seen[index]++
                                                                          : 0};
    if (f->type == PROTOBUF_C_TYPE_MESSAGE) {
      if (depth == MAX_DEPTH) return walk_fails(w, depth + 1, "messages nested too deep");
      if (!walk_strings(w, f->descriptor, field, depth + 1)) return false;
    } else {
      bool nul = memchr(field.p, '\0', n) != NULL;
      if (nul || !w->valid((const char *)field.p, n))
        return refuse_string(w, depth + 1, d, &field, nul);
    }
  }
  return true;
}

bool opd__wire_strings_valid(const ProtobufCMessageDescriptor *desc, const uint8_t *p, size_t len,
                             bool (*valid)(const char *s, size_t len),
                             size_t (*escape)(char *dst, size_t cap, const char *s, size_t len),
                             char *msg, size_t cap) {
  string_walk w = {valid, escape, msg, cap, {{NULL, 0}}};
  return walk_strings(&w, desc, (reader){p, p + len}, 0);
}

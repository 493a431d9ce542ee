/* test_wire.c: the hand-packed messages ([Note: Hand-packed messages] in proto/opd_wire.h)
 * are byte for byte what protobuf-c packs for the same message, over edge values (0, each
 * varint length, UINT64_MAX, negative ints, NaN) and random ones; the hand readers give
 * back the values written; and on frames with random bytes changed, cut or added, a hand
 * reader either declines or agrees with protobuf-c. Strings on the wire ([Note: Strings on
 * the wire are UTF-8]): through a real daemon, over both decode paths, a request string
 * with a NUL or invalid UTF-8 (Call.op, IValue.s, DispatchState names, Hello.client_name)
 * is refused naming its field, "aten::add.Tensor\0junk" does not run add, and every string
 * of every response is valid UTF-8, long multi-byte names cut included. A burst of pipelined
 * requests is answered whole and in order however the daemon groups its responses into
 * writes. */
#include <check.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "opd.pb-c.h"
#include "opd/error.h"
#include "opd/server.h"
#include "opd/utf8.h"
#include "opd_wire.h"

Suite *opd_test_wire_suite(void);

/* ids and handles of every varint length, and the extremes */
static const uint64_t edge[] = {
    0,        1,          127,        128,        16383,     16384, (1u << 21) - 1,
    1u << 21, UINT32_MAX, 1ull << 35, 1ull << 63, UINT64_MAX};
#define NEDGE (sizeof edge / sizeof *edge)

static uint64_t rnd(unsigned *seed) {
  uint64_t v = 0;
  for (int i = 0; i < 4; i++) v = v << 16 | (uint64_t)(rand_r(seed) & 0xffff);
  return v >> (rand_r(seed) % 64); /* every magnitude, not only 64-bit values */
}

/* Packs Response{id, call{results: handles as tensors}} with protobuf-c and by hand, and
 * compares; then unpacks the hand-packed bytes and compares the values. */
/* protobuf-c reads p[0, len) as Response{id, call: handles as tensors}. */
static void expect_handles_response(const uint8_t *p, size_t len, uint64_t id,
                                    const uint64_t *handles, size_t n) {
  Opd__V1__Response *r = opd__v1__response__unpack(NULL, len, p);
  ck_assert_ptr_nonnull(r);
  ck_assert_uint_eq(r->id, id);
  ck_assert_int_eq(r->body_case, OPD__V1__RESPONSE__BODY_CALL);
  ck_assert_uint_eq(r->call->n_results, n);
  for (size_t i = 0; i < n; i++) {
    ck_assert_int_eq(r->call->results[i]->value_case, OPD__V1__IVALUE__VALUE_TENSOR);
    ck_assert_uint_eq(r->call->results[i]->tensor, handles[i]);
  }
  opd__v1__response__free_unpacked(r, NULL);
}

/* protobuf-c reads p[0, len) as Response{id, pong: payload}. */
static void expect_pong_response(const uint8_t *p, size_t len, uint64_t id, const uint8_t *payload,
                                 size_t plen) {
  Opd__V1__Response *r = opd__v1__response__unpack(NULL, len, p);
  ck_assert_ptr_nonnull(r);
  ck_assert_uint_eq(r->id, id);
  ck_assert_int_eq(r->body_case, OPD__V1__RESPONSE__BODY_PONG);
  ck_assert_uint_eq(r->pong->payload.len, plen);
  if (plen) ck_assert_mem_eq(r->pong->payload.data, payload, plen);
  opd__v1__response__free_unpacked(r, NULL);
}

static void check_call(uint64_t id, const uint64_t *handles, size_t n) {
  ck_assert_uint_le(n, OPD__WIRE_VIEW_HANDLES);
  opd__wire_handles_view view;
  const Opd__V1__Response *resp = opd__wire_handles_view_init(&view, id, handles, n);
  uint8_t want[256], got[256];
  size_t want_n = opd__v1__response__pack(resp, want);
  size_t got_n = opd__wire_call_handles_size(id, handles, n);
  ck_assert_uint_eq(got_n, want_n);
  ck_assert_uint_eq(got_n, opd__v1__response__get_packed_size(resp));
  memset(got, 0xa5, sizeof got);
  opd__wire_call_handles(got, id, handles, n);
  ck_assert_mem_eq(got, want, want_n);
  ck_assert_uint_eq(got[got_n], 0xa5); /* nothing written past its size */

  uint64_t id2, h2[8];
  size_t n2;
  ck_assert(opd__wire_parse_call_handles(got, got_n, &id2, h2, 8, &n2));
  ck_assert_uint_eq(id2, id);
  ck_assert_uint_eq(n2, n);
  if (n) ck_assert_mem_eq(h2, handles, n * sizeof *handles);
  if (n) ck_assert(!opd__wire_parse_call_handles(got, got_n, &id2, h2, n - 1, &n2)); /* max */
  expect_handles_response(got, got_n, id, handles, n);
}

static void check_pong(uint64_t id, const uint8_t *payload, size_t len) {
  Opd__V1__Pong pong = OPD__V1__PONG__INIT;
  pong.payload.data = (uint8_t *)payload;
  pong.payload.len = len;
  Opd__V1__Response resp = OPD__V1__RESPONSE__INIT;
  resp.id = id;
  resp.body_case = OPD__V1__RESPONSE__BODY_PONG;
  resp.pong = &pong;
  static uint8_t want[70000], got[70000];
  size_t want_n = opd__v1__response__pack(&resp, want);
  size_t got_n = opd__wire_pong_size(id, len);
  ck_assert_uint_eq(got_n, want_n);
  memset(got, 0xa5, got_n + 1);
  opd__wire_pong(got, id, payload, len);
  ck_assert_mem_eq(got, want, want_n);
  ck_assert_uint_eq(got[got_n], 0xa5);

  uint64_t id2;
  const uint8_t *p2;
  size_t len2;
  ck_assert(opd__wire_parse_pong(got, got_n, &id2, &p2, &len2));
  ck_assert_uint_eq(id2, id);
  ck_assert_uint_eq(len2, len);
  if (len) ck_assert_mem_eq(p2, payload, len);
  expect_pong_response(got, got_n, id, payload, len);
}

START_TEST(call_reply_edges) {
  check_call(7, NULL, 0); /* no results: an empty CallReply is still written */
  for (size_t i = 0; i < NEDGE; i++)
    for (size_t j = 0; j < NEDGE; j++) {
      check_call(edge[i], &edge[j], 1);
      uint64_t two[2] = {edge[j], edge[i]};
      check_call(edge[i], two, 2);
    }
}
END_TEST

START_TEST(call_reply_random) {
  unsigned seed = 12345;
  for (int round = 0; round < 20000; round++) {
    uint64_t handles[8];
    size_t n = (size_t)(rand_r(&seed) % 9);
    for (size_t i = 0; i < n; i++) handles[i] = rnd(&seed);
    check_call(rnd(&seed), handles, n);
  }
}
END_TEST

START_TEST(pong_edges_and_random) {
  static uint8_t payload[65600];
  unsigned seed = 777;
  for (size_t i = 0; i < sizeof payload; i++) payload[i] = (uint8_t)rand_r(&seed);
  /* payload lengths around each varint length change, the empty one included */
  static const size_t lens[] = {0, 1, 2, 126, 127, 128, 129, 16383, 16384, 65536, 65599};
  for (size_t i = 0; i < NEDGE; i++)
    for (size_t k = 0; k < sizeof lens / sizeof *lens; k++) check_pong(edge[i], payload, lens[k]);
  for (int round = 0; round < 2000; round++)
    check_pong(rnd(&seed), payload, (size_t)(rand_r(&seed) % 300));
}
END_TEST

/* Damages a frame of len bytes (room for cap): one to three bytes replaced or flipped, the
 * end cut off or a byte appended. Returns the new length. */
static size_t mutate(uint8_t *frame, size_t len, size_t cap, unsigned *seed) {
  int edits = 1 + rand_r(seed) % 3;
  for (int e = 0; e < edits && len; e++) {
    switch (rand_r(seed) % 4) {
    case 0: frame[rand_r(seed) % len] = (uint8_t)rand_r(seed); break;
    case 1: frame[rand_r(seed) % len] ^= (uint8_t)(1u << (rand_r(seed) % 8)); break;
    case 2: len -= (size_t)(rand_r(seed) % (len + 1)) / 2; break;
    default:
      if (len < cap) frame[len++] = (uint8_t)rand_r(seed);
    }
  }
  return len;
}

/* ---- requests ---- */

/* A random plain argument (the kinds hand-packed), edge values often. */
static void random_plain(unsigned *seed, Opd__V1__IValue *v) {
  static const double doubles[] = {0.0, -0.0, 1.5, -2.25e300, 1e-310};
  opd__v1__ivalue__init(v);
  switch (rand_r(seed) % 5) {
  case 0:
    v->value_case = OPD__V1__IVALUE__VALUE_NONE;
    v->none = rand_r(seed) % 2;
    break;
  case 1:
    v->value_case = OPD__V1__IVALUE__VALUE_B;
    v->b = rand_r(seed) % 2;
    break;
  case 2:
    v->value_case = OPD__V1__IVALUE__VALUE_I;
    v->i = rand_r(seed) % 3 ? (int64_t)rnd(seed) : -(int64_t)(rnd(seed) >> 1);
    break;
  case 3: {
    v->value_case = OPD__V1__IVALUE__VALUE_D;
    uint64_t bits = rnd(seed);
    if (rand_r(seed) % 2)
      v->d = doubles[rand_r(seed) % 5];
    else
      memcpy(&v->d, &bits, sizeof bits); /* any bit pattern, NaNs included */
    break;
  }
  default: v->value_case = OPD__V1__IVALUE__VALUE_TENSOR; v->tensor = rnd(seed);
  }
}

/* n random plain arguments in values, pointed to by ptrs. */
static void random_args(unsigned *seed, Opd__V1__IValue *values, Opd__V1__IValue **ptrs, size_t n) {
  for (size_t i = 0; i < n; i++) {
    random_plain(seed, &values[i]);
    ptrs[i] = &values[i];
  }
}

/* Makes req (its id left as it is) a Call of op on args, built in *call. */
static void set_call(Opd__V1__Request *req, Opd__V1__Call *call, const char *op,
                     Opd__V1__IValue **args, size_t n) {
  opd__v1__call__init(call);
  call->op = (char *)op;
  call->n_args = n;
  call->args = args;
  req->body_case = OPD__V1__REQUEST__BODY_CALL;
  req->call = call;
}

static void check_request(const Opd__V1__Request *req) {
  static uint8_t want[4096], got[4096];
  size_t want_n = opd__v1__request__pack(req, want);
  size_t got_n = opd__wire_request_size(req);
  ck_assert_uint_eq(got_n, want_n);
  memset(got, 0xa5, got_n + 1);
  opd__wire_request_pack(req, got);
  ck_assert_mem_eq(got, want, want_n);
  ck_assert_uint_eq(got[got_n], 0xa5);
}

/* The plain argument v as the typed calls' packer takes it. */
static opd__wire_arg wire_arg_of(const Opd__V1__IValue *v) {
  opd__wire_arg a = {.kind = v->value_case};
  switch (v->value_case) {
  case OPD__V1__IVALUE__VALUE_NONE: a.u.b = v->none; break;
  case OPD__V1__IVALUE__VALUE_B: a.u.b = v->b; break;
  case OPD__V1__IVALUE__VALUE_I: a.u.i = v->i; break;
  case OPD__V1__IVALUE__VALUE_D: a.u.d = v->d; break;
  default: a.u.tensor = v->tensor;
  }
  return a;
}

/* opd__wire_call_request_* write the bytes protobuf-c writes for the same call. */
static void check_call_request(const Opd__V1__Request *req, const opd__wire_arg *args, size_t n) {
  static uint8_t want[4096], got[4096];
  size_t want_n = opd__v1__request__pack(req, want);
  const char *op = req->call->op;
  size_t call_size = opd__wire_call_size(strlen(op), args, n);
  size_t got_n = opd__wire_call_request_size(req->id, call_size);
  ck_assert_uint_eq(got_n, want_n);
  memset(got, 0xa5, got_n + 1);
  opd__wire_call_request_pack(got, req->id, call_size, op, strlen(op), args, n);
  ck_assert_mem_eq(got, want, want_n);
  ck_assert_uint_eq(got[got_n], 0xa5);
}

START_TEST(request_call_random) {
  unsigned seed = 4242;
  static const char *ops[] = {"aten::add.Tensor", "", "x", "aten::_softmax"};
  for (int round = 0; round < 20000; round++) {
    Opd__V1__IValue values[16], *ptrs[16];
    size_t n = (size_t)(rand_r(&seed) % 17);
    random_args(&seed, values, ptrs, n);
    Opd__V1__Call call;
    Opd__V1__Request req = OPD__V1__REQUEST__INIT;
    set_call(&req, &call, ops[rand_r(&seed) % 4], ptrs, n);
    req.id = round % 7 ? rnd(&seed) : 0;
    check_request(&req);
    opd__wire_arg wire_args[16];
    for (size_t i = 0; i < n; i++) wire_args[i] = wire_arg_of(&values[i]);
    check_call_request(&req, wire_args, n);
  }
}
END_TEST

START_TEST(request_ping_release_and_declined) {
  uint8_t payload[300];
  for (size_t i = 0; i < sizeof payload; i++) payload[i] = (uint8_t)(i * 7);
  for (size_t i = 0; i < NEDGE; i++)
    for (size_t len = 0; len < sizeof payload; len += 37) {
      Opd__V1__Ping ping = OPD__V1__PING__INIT;
      ping.payload.data = payload;
      ping.payload.len = len;
      Opd__V1__Request req = OPD__V1__REQUEST__INIT;
      req.id = edge[i];
      req.body_case = OPD__V1__REQUEST__BODY_PING;
      req.ping = &ping;
      check_request(&req);
    }
  /* releases of 0 to NEDGE handles, every edge value among them */
  for (size_t i = 0; i < NEDGE; i++)
    for (size_t n = 0; n <= NEDGE; n++) {
      uint64_t handles[NEDGE];
      for (size_t k = 0; k < n; k++) handles[k] = edge[(i + k) % NEDGE];
      Opd__V1__Release release = OPD__V1__RELEASE__INIT;
      release.n_handles = n;
      release.handles = n ? handles : NULL;
      Opd__V1__Request req = OPD__V1__REQUEST__INIT;
      req.id = edge[i];
      req.body_case = OPD__V1__REQUEST__BODY_RELEASE;
      req.release = &release;
      check_request(&req);
    }
  /* a call with one argument of another kind, and other requests: left to protobuf-c */
  Opd__V1__IValue plain, list;
  opd__v1__ivalue__init(&plain);
  plain.value_case = OPD__V1__IVALUE__VALUE_TENSOR;
  opd__v1__ivalue__init(&list);
  Opd__V1__IntList ints = OPD__V1__INT_LIST__INIT;
  list.value_case = OPD__V1__IVALUE__VALUE_INTS;
  list.ints = &ints;
  Opd__V1__IValue *args[] = {&plain, &list};
  Opd__V1__Call call;
  Opd__V1__Request req = OPD__V1__REQUEST__INIT;
  set_call(&req, &call, "aten::sum.dim_IntList", args, 2);
  ck_assert_uint_eq(opd__wire_request_size(&req), 0);
  Opd__V1__Download dl = OPD__V1__DOWNLOAD__INIT;
  req.body_case = OPD__V1__REQUEST__BODY_DOWNLOAD;
  req.download = &dl;
  ck_assert_uint_eq(opd__wire_request_size(&req), 0);
}
END_TEST

/* ---- the daemon's reader of requests ---- */

/* a bump allocator over a static buffer, reset per request */
static uint8_t bump_buf[1 << 16];
static size_t bump_pos;
static void *bump_alloc(void *data, size_t n) {
  (void)data;
  n = (n + 15) & ~(size_t)15;
  if (n > sizeof bump_buf - bump_pos) return NULL;
  bump_pos += n;
  return bump_buf + bump_pos - n;
}
static void bump_free(void *data, void *p) {
  (void)data, (void)p;
}
static ProtobufCAllocator bump = {bump_alloc, bump_free, NULL};

static void assert_same_value(const Opd__V1__IValue *a, const Opd__V1__IValue *b) {
  ck_assert_int_eq(a->value_case, b->value_case);
  switch (a->value_case) {
  case OPD__V1__IVALUE__VALUE_NONE: ck_assert_int_eq(a->none, b->none); break;
  case OPD__V1__IVALUE__VALUE_B: ck_assert_int_eq(a->b, b->b); break;
  case OPD__V1__IVALUE__VALUE_I: ck_assert_int_eq(a->i, b->i); break;
  case OPD__V1__IVALUE__VALUE_D: ck_assert_mem_eq(&a->d, &b->d, sizeof a->d); break;
  case OPD__V1__IVALUE__VALUE_TENSOR: ck_assert_uint_eq(a->tensor, b->tensor); break;
  default: ck_abort_msg("a value of kind %d from the hand reader", (int)a->value_case);
  }
}

static void assert_same_request(const Opd__V1__Request *a, const Opd__V1__Request *b) {
  ck_assert_uint_eq(a->id, b->id);
  ck_assert_int_eq(a->body_case, b->body_case);
  if (a->body_case == OPD__V1__REQUEST__BODY_PING) {
    ck_assert_uint_eq(a->ping->payload.len, b->ping->payload.len);
    if (a->ping->payload.len)
      ck_assert_mem_eq(a->ping->payload.data, b->ping->payload.data, a->ping->payload.len);
    return;
  }
  if (a->body_case == OPD__V1__REQUEST__BODY_RELEASE) {
    ck_assert_uint_eq(a->release->n_handles, b->release->n_handles);
    ck_assert(a->release->n_handles ? a->release->handles != NULL : a->release->handles == NULL);
    for (size_t i = 0; i < a->release->n_handles; i++)
      ck_assert_uint_eq(a->release->handles[i], b->release->handles[i]);
    return;
  }
  ck_assert_int_eq(a->body_case, OPD__V1__REQUEST__BODY_CALL);
  ck_assert_str_eq(a->call->op, b->call->op);
  ck_assert_uint_eq(a->call->n_args, b->call->n_args);
  for (size_t i = 0; i < a->call->n_args; i++)
    assert_same_value(a->call->args[i], b->call->args[i]);
}

/* Whatever the bytes, the hand reader either declines them or reads what protobuf-c reads. */
static void check_request_reader(const uint8_t *p, size_t len, const Opd__V1__Request *sent) {
  bump_pos = 0;
  Opd__V1__Request *mine = NULL;
  int rc = opd__wire_parse_request(p, len, &bump, 64, &mine);
  ck_assert_int_ge(rc, 0);
  if (sent) ck_assert_int_eq(rc, 1); /* a message written by hand is read by hand */
  if (rc == 0) return;
  Opd__V1__Request *ref = opd__v1__request__unpack(NULL, len, p);
  ck_assert_ptr_nonnull(ref);
  assert_same_request(mine, ref);
  /* what it reads by hand needs no check of its strings: it has none but a plain name */
  char msg[512];
  ck_assert_msg(opd__wire_strings_valid(&opd__v1__request__descriptor, p, len, opd_utf8_valid,
                                        opd_utf8_escape, msg, sizeof msg),
                "%s", msg);
  if (sent) assert_same_request(mine, sent);
  opd__v1__request__free_unpacked(ref, NULL);
}

START_TEST(request_reader) {
  unsigned seed = 2024;
  static uint8_t frame[4096];
  uint8_t payload[64];
  for (size_t i = 0; i < sizeof payload; i++) payload[i] = (uint8_t)rand_r(&seed);
  for (int round = 0; round < 50000; round++) {
    Opd__V1__IValue values[12], *ptrs[12];
    Opd__V1__Call call;
    Opd__V1__Ping ping = OPD__V1__PING__INIT;
    Opd__V1__Release release = OPD__V1__RELEASE__INIT;
    uint64_t handles[20];
    Opd__V1__Request req = OPD__V1__REQUEST__INIT;
    req.id = round % 5 ? rnd(&seed) : 0;
    if (round % 4 == 3) {
      release.n_handles = (size_t)(rand_r(&seed) % 21);
      for (size_t i = 0; i < release.n_handles; i++) handles[i] = rnd(&seed);
      release.handles = release.n_handles ? handles : NULL;
      req.body_case = OPD__V1__REQUEST__BODY_RELEASE;
      req.release = &release;
    } else if (round % 3) {
      size_t n = (size_t)(rand_r(&seed) % 13);
      random_args(&seed, values, ptrs, n);
      set_call(&req, &call, round % 7 ? "aten::add.Tensor" : "", ptrs, n);
    } else {
      ping.payload.data = payload;
      ping.payload.len = (size_t)(rand_r(&seed) % sizeof payload);
      req.body_case = OPD__V1__REQUEST__BODY_PING;
      req.ping = &ping;
    }
    size_t len = opd__wire_request_size(&req);
    ck_assert_uint_gt(len, 0);
    opd__wire_request_pack(&req, frame);
    check_request_reader(frame, len, &req);
    len = mutate(frame, len, sizeof frame, &seed);
    check_request_reader(frame, len, NULL);
  }
  /* more arguments than the reader takes: declined */
  Opd__V1__IValue values[65], *ptrs[65];
  random_args(&seed, values, ptrs, 65);
  Opd__V1__Call call;
  Opd__V1__Request req = OPD__V1__REQUEST__INIT;
  set_call(&req, &call, "f", ptrs, 65);
  opd__wire_request_pack(&req, frame);
  bump_pos = 0;
  Opd__V1__Request *out = NULL;
  ck_assert_int_eq(opd__wire_parse_request(frame, opd__wire_request_size(&req), &bump, 64, &out),
                   0);
  /* an allocation that fails is told apart from a decline */
  call.n_args = 3;
  opd__wire_request_pack(&req, frame);
  bump_pos = sizeof bump_buf - 16;
  ck_assert_int_eq(opd__wire_parse_request(frame, opd__wire_request_size(&req), &bump, 64, &out),
                   -1);
}
END_TEST

/* ---- the readers on damaged frames ---- */

/* Whatever the bytes, a hand reader that accepts them agrees with protobuf-c. */
static void check_reader_agrees(const uint8_t *p, size_t len) {
  uint64_t id, handles[8];
  size_t n;
  bool call = opd__wire_parse_call_handles(p, len, &id, handles, 8, &n);
  const uint8_t *payload;
  size_t plen;
  uint64_t pid;
  bool pong = opd__wire_parse_pong(p, len, &pid, &payload, &plen);
  ck_assert(!(call && pong));
  if (call) expect_handles_response(p, len, id, handles, n);
  if (pong) expect_pong_response(p, len, pid, payload, plen);
}

START_TEST(readers_on_mutated_frames) {
  unsigned seed = 99;
  uint8_t frame[256], payload[40];
  for (size_t i = 0; i < sizeof payload; i++) payload[i] = (uint8_t)rand_r(&seed);
  for (int round = 0; round < 100000; round++) {
    size_t len;
    uint64_t id = rnd(&seed);
    if (round % 2) {
      uint64_t handles[4];
      size_t n = (size_t)(rand_r(&seed) % 5);
      for (size_t i = 0; i < n; i++) handles[i] = rnd(&seed);
      len = opd__wire_call_handles_size(id, handles, n);
      opd__wire_call_handles(frame, id, handles, n);
    } else {
      size_t plen = (size_t)(rand_r(&seed) % sizeof payload);
      len = opd__wire_pong_size(id, plen);
      opd__wire_pong(frame, id, payload, plen);
    }
    check_reader_agrees(frame, len); /* intact */
    len = mutate(frame, len, sizeof frame, &seed);
    check_reader_agrees(frame, len);
  }
}
END_TEST

/* ---- strings through a real daemon ---- */

static opd_server *start_daemon(void) {
  opd_server_config cfg;
  opd_server_config_init(&cfg);
  opd_server_config_clear_listen(&cfg);
  ck_assert_int_eq(opd_server_config_add_listen(&cfg, "tcp://127.0.0.1:0"), 0);
  cfg.workers = 2;
  cfg.log_level = OPD_LOG_ERROR;
  opd_server *s = NULL;
  int rc = opd_server_start(&cfg, &s);
  opd_server_config_destroy(&cfg);
  ck_assert_msg(rc == 0, "server start: %s", opd_last_error());
  return s;
}

static int dial(opd_server *s) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  ck_assert_int_ge(fd, 0);
  struct sockaddr_in a = {.sin_family = AF_INET,
                          .sin_port = htons((uint16_t)opd_server_listener_port(s, 0))};
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ck_assert_int_eq(connect(fd, (struct sockaddr *)&a, sizeof a), 0);
  struct timeval tv = {10, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  return fd;
}

/* A packed request with room for its 4-byte length in front. */
typedef struct frame {
  uint8_t *bytes; /* length, then the message */
  size_t len;     /* of the message */
} frame;

static frame pack_request(const Opd__V1__Request *r) {
  frame f = {NULL, opd__v1__request__get_packed_size(r)};
  f.bytes = malloc(4 + f.len);
  ck_assert_ptr_nonnull(f.bytes);
  for (int i = 0; i < 4; i++) f.bytes[i] = (uint8_t)(f.len >> (8 * i));
  opd__v1__request__pack(r, f.bytes + 4);
  return f;
}

/* protobuf-c packs a string up to its first NUL: the NUL is put into the bytes afterwards,
 * in place of each '#' of `text` (which the message holds once). */
static void put_nuls(frame *f, const char *text) {
  size_t n = strlen(text);
  uint8_t *at = f->bytes + 4;
  while (at + n <= f->bytes + 4 + f->len && memcmp(at, text, n) != 0) at++;
  ck_assert_msg(at + n <= f->bytes + 4 + f->len, "'%s' is not in the message", text);
  for (size_t i = 0; i < n; i++)
    if (at[i] == '#') at[i] = 0;
}

static void send_frame(int fd, frame *f) {
  for (size_t off = 0; off < 4 + f->len;) {
    ssize_t n = send(fd, f->bytes + off, 4 + f->len - off, MSG_NOSIGNAL);
    ck_assert_msg(n > 0, "send: %s", strerror(errno));
    off += (size_t)n;
  }
  free(f->bytes);
  f->bytes = NULL;
}

static bool recv_all(int fd, uint8_t *p, size_t n) {
  while (n) {
    ssize_t k = recv(fd, p, n, 0);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) return false;
    p += k;
    n -= (size_t)k;
  }
  return true;
}

static void expect_utf8(const char *s, const char *what) {
  ck_assert_msg(opd_utf8_valid(s, strlen(s)), "%s is not valid UTF-8: %s", what, s);
}

/* The next response (NULL when the daemon closed the connection); every string in it is
 * checked to be valid UTF-8. */
static Opd__V1__Response *next_response(int fd) {
  uint8_t head[4];
  if (!recv_all(fd, head, 4)) return NULL;
  size_t n = (size_t)head[0] | (size_t)head[1] << 8 | (size_t)head[2] << 16 | (size_t)head[3] << 24;
  uint8_t *buf = malloc(n ? n : 1);
  ck_assert(recv_all(fd, buf, n));
  Opd__V1__Response *r = opd__v1__response__unpack(NULL, n, buf);
  free(buf);
  ck_assert_msg(r, "undecodable response");
  if (r->body_case == OPD__V1__RESPONSE__BODY_ERROR) {
    expect_utf8(r->error->message, "Error.message");
    expect_utf8(r->error->op, "Error.op");
  } else if (r->body_case == OPD__V1__RESPONSE__BODY_HELLO) {
    expect_utf8(r->hello->server, "HelloReply.server");
  }
  return r;
}

/* An error response to request `id` with this code and every needle in its message. */
static void expect_refusal(int fd, uint64_t id, Opd__V1__ErrorCode code, const char *needle1,
                           const char *needle2) {
  Opd__V1__Response *r = next_response(fd);
  ck_assert_ptr_nonnull(r);
  ck_assert_uint_eq(r->id, id);
  ck_assert_msg(r->body_case == OPD__V1__RESPONSE__BODY_ERROR,
                "request %llu: expected an error, got response kind %d", (unsigned long long)id,
                (int)r->body_case);
  ck_assert_msg(r->error->code == code, "request %llu: code %d, expected %d: %s",
                (unsigned long long)id, (int)r->error->code, (int)code, r->error->message);
  const char *needles[] = {needle1, needle2};
  for (int i = 0; i < 2; i++)
    ck_assert_msg(!needles[i] || strstr(r->error->message, needles[i]), "'%s' lacks '%s'",
                  r->error->message, needles[i]);
  opd__v1__response__free_unpacked(r, NULL);
}

static frame hello_frame(const char *client_name) {
  Opd__V1__Hello h = OPD__V1__HELLO__INIT;
  h.protocol_version = 1;
  h.client_name = (char *)client_name;
  Opd__V1__Request r = OPD__V1__REQUEST__INIT;
  r.id = 1;
  r.body_case = OPD__V1__REQUEST__BODY_HELLO;
  r.hello = &h;
  return pack_request(&r);
}

static int say_hello(opd_server *s) {
  int fd = dial(s);
  frame f = hello_frame("test_wire");
  send_frame(fd, &f);
  Opd__V1__Response *r = next_response(fd);
  ck_assert_ptr_nonnull(r);
  ck_assert_int_eq(r->body_case, OPD__V1__RESPONSE__BODY_HELLO);
  opd__v1__response__free_unpacked(r, NULL);
  return fd;
}

/* Call{op, args} with two tensor arguments: the handles (the hand-read form) when given,
 * else two float32 literals of [1, 2] (a form left to protobuf-c). */
static frame call_frame(uint64_t id, const char *op, const uint64_t *handles) {
  static float data[2] = {1, 2};
  static int64_t shape[1] = {2};
  Opd__V1__TensorLiteral lit = OPD__V1__TENSOR_LITERAL__INIT;
  lit.dtype = OPD__V1__DTYPE__FLOAT32;
  lit.n_shape = 1;
  lit.shape = shape;
  lit.data.data = (uint8_t *)data;
  lit.data.len = sizeof data;
  Opd__V1__IValue v[2], *args[2] = {&v[0], &v[1]};
  for (int i = 0; i < 2; i++) {
    opd__v1__ivalue__init(&v[i]);
    if (handles) {
      v[i].value_case = OPD__V1__IVALUE__VALUE_TENSOR;
      v[i].tensor = handles[i];
    } else {
      v[i].value_case = OPD__V1__IVALUE__VALUE_LITERAL;
      v[i].literal = &lit;
    }
  }
  Opd__V1__Call call = OPD__V1__CALL__INIT;
  call.op = (char *)op;
  call.n_args = 2;
  call.args = args;
  Opd__V1__Request r = OPD__V1__REQUEST__INIT;
  r.id = id;
  r.body_case = OPD__V1__REQUEST__BODY_CALL;
  r.call = &call;
  frame f = pack_request(&r);
  /* the frame takes the path it is meant to: read by hand when it has handles and an ASCII
   * name (put_nuls comes later), else left to protobuf-c */
  bool ascii = true;
  for (const char *c = op; *c; c++) ascii = ascii && (unsigned char)*c < 0x80;
  bump_pos = 0;
  Opd__V1__Request *out = NULL;
  ck_assert_int_eq(opd__wire_parse_request(f.bytes + 4, f.len, &bump, 64, &out),
                   handles && ascii ? 1 : 0);
  return f;
}

/* A call of aten::add.Tensor that succeeds: its result's handle. */
static uint64_t add_ok(int fd, uint64_t id, const uint64_t *handles) {
  frame f = call_frame(id, "aten::add.Tensor", handles);
  send_frame(fd, &f);
  Opd__V1__Response *r = next_response(fd);
  ck_assert_ptr_nonnull(r);
  ck_assert_uint_eq(r->id, id);
  ck_assert_msg(r->body_case == OPD__V1__RESPONSE__BODY_CALL, "add failed: %s",
                r->body_case == OPD__V1__RESPONSE__BODY_ERROR ? r->error->message : "?");
  ck_assert_uint_eq(r->call->n_results, 1);
  uint64_t h = r->call->results[0]->tensor;
  opd__v1__response__free_unpacked(r, NULL);
  return h;
}

/* ---- the check of request strings ([Note: Strings in requests]) ---- */

/* Whether the check accepts the request; its message otherwise, which must be UTF-8. */
static bool strings_ok(const frame *f, char *msg, size_t cap) {
  bool ok = opd__wire_strings_valid(&opd__v1__request__descriptor, f->bytes + 4, f->len,
                                    opd_utf8_valid, opd_utf8_escape, msg, cap);
  if (!ok) ck_assert(opd_utf8_valid(msg, strlen(msg)));
  return ok;
}

static void expect_string_refused(frame f, const char *needle) {
  char msg[512];
  ck_assert(!strings_ok(&f, msg, sizeof msg));
  ck_assert_msg(strstr(msg, needle), "'%s' lacks '%s'", msg, needle);
  free(f.bytes);
}

START_TEST(request_strings_checked) {
  char msg[512];
  /* every kind of string, valid: accepted (non-ASCII text included) */
  Opd__V1__IValue v[3], *args[3] = {&v[0], &v[1], &v[2]};
  for (int i = 0; i < 3; i++) opd__v1__ivalue__init(&v[i]);
  v[0].value_case = OPD__V1__IVALUE__VALUE_TENSOR;
  v[0].tensor = 1;
  v[1].value_case = OPD__V1__IVALUE__VALUE_S;
  v[1].s = "caf\xc3\xa9 \xf0\x9f\x98\x80";
  v[2].value_case = OPD__V1__IVALUE__VALUE_INTS;
  Opd__V1__IntList ints = OPD__V1__INT_LIST__INIT;
  int64_t values[2] = {-1, 1 << 20};
  ints.n_values = 2;
  ints.values = values;
  v[2].ints = &ints;
  Opd__V1__Call call = OPD__V1__CALL__INIT;
  call.op = "aten::\xc3\xa9";
  call.n_args = 3;
  call.args = args;
  Opd__V1__Request r = OPD__V1__REQUEST__INIT;
  r.id = 300;
  r.body_case = OPD__V1__REQUEST__BODY_CALL;
  r.call = &call;
  frame f = pack_request(&r);
  ck_assert(strings_ok(&f, msg, sizeof msg));
  free(f.bytes);
  f = hello_frame("client \xe2\x82\xac");
  ck_assert(strings_ok(&f, msg, sizeof msg));
  free(f.bytes);

  /* each field refused by name, with the path to it and the bytes escaped */
  call.op = "aten::add#x";
  f = pack_request(&r);
  put_nuls(&f, "aten::add#x");
  expect_string_refused(f, "Call.op (call.op) holds a NUL byte: \"aten::add\\x00x\"");
  call.op = "aten::add";
  v[1].s = "ok\xe2\x82";
  expect_string_refused(pack_request(&r),
                        "IValue.s (call.args[1].s) is not valid UTF-8: \"ok\\xe2\\x82\"");
  f = hello_frame("\xff");
  expect_string_refused(f, "Hello.client_name (hello.client_name) is not valid UTF-8: \"\\xff\"");
  char *names[3] = {"Tracer", "Meta", "\xc0\x80"};
  Opd__V1__DispatchState ds = OPD__V1__DISPATCH_STATE__INIT;
  ds.n_remove_exclude = 3;
  ds.remove_exclude = names;
  r.body_case = OPD__V1__REQUEST__BODY_SET_DISPATCH_STATE;
  r.set_dispatch_state = &ds;
  expect_string_refused(pack_request(&r),
                        "DispatchState.remove_exclude (set_dispatch_state.remove_exclude[2])");
  /* the quoted bytes are cut, at a character, to fit the message */
  static char long_name[4000];
  for (int i = 0; i < 1000; i++) memcpy(long_name + 3 * i, "\xe2\x82\xac", 3);
  strcpy(long_name + 3000, "\xff");
  call.op = long_name;
  r.body_case = OPD__V1__REQUEST__BODY_CALL;
  r.call = &call; /* the oneof's members share their storage */
  f = pack_request(&r);
  ck_assert(!strings_ok(&f, msg, 512));
  ck_assert(!strings_ok(&f, msg, 100)); /* a short buffer: still UTF-8 */
  free(f.bytes);
  /* bytes that are not a message: refused, saying so */
  static const uint8_t truncated[] = {0x1a, 0x05, 0x0a, 0x03, 'a'};
  ck_assert(!opd__wire_strings_valid(&opd__v1__request__descriptor, truncated, sizeof truncated,
                                     opd_utf8_valid, opd_utf8_escape, msg, sizeof msg));
  ck_assert_ptr_nonnull(strstr(msg, "malformed request"));

  /* the hand reader declines a name with a NUL, other characters or bytes not UTF-8
   * (call_frame checks the path each frame takes) */
  static const char *const declined[] = {"caf\xc3\xa9", "\xff", "\x80"};
  for (size_t i = 0; i < sizeof declined / sizeof *declined; i++) {
    f = call_frame(9, declined[i], (uint64_t[]){5, 6});
    free(f.bytes);
  }
  f = call_frame(9, "a#b", (uint64_t[]){5, 6});
  put_nuls(&f, "a#b");
  bump_pos = 0;
  Opd__V1__Request *out = NULL;
  ck_assert_int_eq(opd__wire_parse_request(f.bytes + 4, f.len, &bump, 64, &out), 0);
  free(f.bytes);
}
END_TEST

START_TEST(op_with_nul_does_not_run) {
  opd_server *s = start_daemon();
  int fd = say_hello(s);
  uint64_t h = add_ok(fd, 2, NULL);
  uint64_t hh[2] = {h, h};
  /* both decode paths: by hand (handles) and protobuf-c (literals) */
  for (int path = 0; path < 2; path++) {
    uint64_t id = 10 + (uint64_t)path;
    frame f = call_frame(id, "aten::add.Tensor#junk", path ? NULL : hh);
    put_nuls(&f, "aten::add.Tensor#junk");
    send_frame(fd, &f);
    expect_refusal(fd, id, OPD__V1__ERROR_CODE__INVALID_ARGUMENT, "Call.op",
                   "aten::add.Tensor\\x00junk");
  }
  /* the session goes on */
  ck_assert_uint_ne(add_ok(fd, 20, hh), 0);
  close(fd);
  opd_server_stop(s);
}
END_TEST

START_TEST(op_not_utf8_refused) {
  opd_server *s = start_daemon();
  int fd = say_hello(s);
  uint64_t h = add_ok(fd, 2, NULL), hh[2] = {h, h};
  static const char *const bad[] = {"aten::add.Tensor\xff", "aten::\xc3(", "\xed\xa0\x80::x",
                                    "aten::\xc0\xaf", "aten::add\xe2\x82"};
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
    for (int path = 0; path < 2; path++) {
      uint64_t id = 10 + 2 * i + (uint64_t)path;
      frame f = call_frame(id, bad[i], path ? NULL : hh);
      send_frame(fd, &f);
      expect_refusal(fd, id, OPD__V1__ERROR_CODE__INVALID_ARGUMENT, "Call.op", "not valid UTF-8");
    }
  ck_assert_uint_ne(add_ok(fd, 30, hh), 0);
  close(fd);
  opd_server_stop(s);
}
END_TEST

/* An unknown operator's long name, of 2-, 3- and 4-byte characters: the error's message
 * and op are cut to fit at character boundaries (next_response checks them). */
START_TEST(long_multibyte_op_cut_at_characters) {
  opd_server *s = start_daemon();
  int fd = say_hello(s);
  static const char *const chars[] = {"\xc3\xa9", "\xe2\x82\xac", "\xf0\x9f\x98\x80"};
  for (size_t c = 0; c < 3; c++)
    for (int lead = 0; lead < 4; lead++) { /* each cut position within a character */
      char op[2000] = "x::";
      memset(op + 3, 'y', (size_t)lead);
      for (int i = 0; i < 300; i++) strcat(op, chars[c]);
      uint64_t id = 10 + 4 * c + (uint64_t)lead;
      frame f = call_frame(id, op, (uint64_t[]){1, 1});
      send_frame(fd, &f);
      Opd__V1__Response *r = next_response(fd);
      ck_assert_ptr_nonnull(r);
      ck_assert_int_eq(r->body_case, OPD__V1__RESPONSE__BODY_ERROR);
      ck_assert_int_eq(r->error->code, OPD__V1__ERROR_CODE__NOT_FOUND);
      /* what the op field keeps is a prefix of the name */
      ck_assert_uint_gt(strlen(r->error->op), 100);
      ck_assert(strncmp(r->error->op, op, strlen(r->error->op)) == 0);
      opd__v1__response__free_unpacked(r, NULL);
    }
  close(fd);
  opd_server_stop(s);
}
END_TEST

START_TEST(other_request_strings_refused) {
  opd_server *s = start_daemon();
  /* Hello.client_name: the connection is refused and closed */
  int fd = dial(s);
  frame f = hello_frame("client#name");
  put_nuls(&f, "client#name");
  send_frame(fd, &f);
  expect_refusal(fd, 1, OPD__V1__ERROR_CODE__INVALID_ARGUMENT, "Hello.client_name",
                 "client\\x00name");
  ck_assert_ptr_null(next_response(fd));
  close(fd);
  fd = dial(s);
  f = hello_frame("caf\xc3");
  send_frame(fd, &f);
  expect_refusal(fd, 1, OPD__V1__ERROR_CODE__INVALID_ARGUMENT, "Hello.client_name", "caf\\xc3");
  close(fd);

  fd = say_hello(s);
  uint64_t h = add_ok(fd, 2, NULL);
  /* IValue.s, as a third argument */
  Opd__V1__IValue v[3], *args[3] = {&v[0], &v[1], &v[2]};
  for (int i = 0; i < 2; i++) {
    opd__v1__ivalue__init(&v[i]);
    v[i].value_case = OPD__V1__IVALUE__VALUE_TENSOR;
    v[i].tensor = h;
  }
  opd__v1__ivalue__init(&v[2]);
  v[2].value_case = OPD__V1__IVALUE__VALUE_S;
  v[2].s = "\xfe\xff";
  Opd__V1__Call call = OPD__V1__CALL__INIT;
  call.op = "aten::add.Tensor";
  call.n_args = 3;
  call.args = args;
  Opd__V1__Request r = OPD__V1__REQUEST__INIT;
  r.id = 3;
  r.body_case = OPD__V1__REQUEST__BODY_CALL;
  r.call = &call;
  f = pack_request(&r);
  send_frame(fd, &f);
  expect_refusal(fd, 3, OPD__V1__ERROR_CODE__INVALID_ARGUMENT, "IValue.s", "\\xfe\\xff");
  /* each list of DispatchState */
  for (int field = 0; field < 4; field++) {
    char *names[2] = {"Tracer", "Tracer#x"};
    Opd__V1__DispatchState ds = OPD__V1__DISPATCH_STATE__INIT;
    size_t *counts[] = {&ds.n_include, &ds.n_exclude, &ds.n_remove_include, &ds.n_remove_exclude};
    char ***lists[] = {&ds.include, &ds.exclude, &ds.remove_include, &ds.remove_exclude};
    *counts[field] = 2;
    *lists[field] = names;
    r.id = 4 + (uint64_t)field;
    r.body_case = OPD__V1__REQUEST__BODY_SET_DISPATCH_STATE;
    r.set_dispatch_state = &ds;
    f = pack_request(&r);
    put_nuls(&f, "Tracer#x");
    send_frame(fd, &f);
    static const char *const field_names[] = {"DispatchState.include", "DispatchState.exclude",
                                              "DispatchState.remove_include",
                                              "DispatchState.remove_exclude"};
    expect_refusal(fd, r.id, OPD__V1__ERROR_CODE__INVALID_ARGUMENT, field_names[field],
                   "Tracer\\x00x");
  }
  /* still served, with the default state */
  uint64_t hh[2] = {h, h};
  ck_assert_uint_ne(add_ok(fd, 20, hh), 0);
  close(fd);
  opd_server_stop(s);
}
END_TEST

/* The node count read from a define_graph's bytes, as protobuf-c reads the frame: fields in
 * any order, a body repeated (found by tests/fuzz/fuzz_request: the count read only the first
 * define_graph, so an empty one before a large one passed the daemon's check). */
START_TEST(graph_nodes_counted_as_protobuf_c_reads) {
  static const uint8_t twice[] = {0x08, 7, 0x52, 0, 0x52, 10, 0x1a, 0,
                                  0x1a, 0, 0x1a, 0, 0x1a, 0,  0x1a, 0},
                       id_after[] = {0x52, 4, 0x1a, 0, 0x1a, 0, 0x08, 9},
                       other_body_last[] = {0x08, 3, 0x52, 2, 0x1a, 0, 0x4a, 0},
                       one_after_another_body[] = {0x52, 2, 0x1a, 0, 0x4a, 0, 0x52, 2, 0x1a, 0};
  uint64_t id, n;
  Opd__V1__Request *r = opd__v1__request__unpack(NULL, sizeof twice, twice);
  ck_assert_ptr_nonnull(r);
  ck_assert_uint_eq(r->define_graph->n_nodes, 5);
  opd__v1__request__free_unpacked(r, NULL);
  ck_assert(opd__wire_graph_nodes_over(twice, sizeof twice, 4, &id, &n));
  ck_assert_uint_eq(id, 7);
  ck_assert_uint_eq(n, 5);
  ck_assert(!opd__wire_graph_nodes_over(twice, sizeof twice, 5, &id, &n));
  ck_assert(opd__wire_graph_nodes_over(id_after, sizeof id_after, 1, &id, &n));
  ck_assert_uint_eq(id, 9);
  ck_assert_uint_eq(n, 2);
  ck_assert(!opd__wire_graph_nodes_over(other_body_last, sizeof other_body_last, 0, &id, &n));
  ck_assert(opd__wire_graph_nodes_over(one_after_another_body, sizeof one_after_another_body, 0,
                                       &id, &n));
  ck_assert_uint_eq(n, 1);
}
END_TEST

/* ---- the responses to a burst ---- */

enum { BURST = 700 };

typedef struct burst {
  int fd;
  uint8_t *bytes;
  size_t len;
} burst;

/* Payload i of the burst: small pings (whose responses a write joins into one buffer), and
 * in the second half every 50th one of 20 KiB (more than a write joins: its write goes as
 * it is). */
static size_t burst_payload(size_t i, uint8_t *out) {
  size_t n = i >= BURST / 2 && i % 50 == 49 ? 20 * 1024 : (i * 37) % 48;
  for (size_t k = 0; k < n; k++) out[k] = (uint8_t)(i * 7 + k);
  return n;
}

static void *send_burst(void *arg) {
  burst *b = arg;
  for (size_t off = 0; off < b->len;) {
    ssize_t n = send(b->fd, b->bytes + off, b->len - off, MSG_NOSIGNAL);
    if (n <= 0) return (void *)1;
    off += (size_t)n;
  }
  return NULL;
}

/* [Note: Writing responses] in server/src/conn_write.c: the daemon copies the frames of one
 * write into one buffer when they fit, takes up to 256 responses per write, and writes
 * larger ones as they are; each response must still arrive whole, once, in request order. */
START_TEST(burst_answered_whole_and_in_order) {
  opd_server *s = start_daemon();
  int fd = say_hello(s);
  static uint8_t payload[20 * 1024];
  burst b = {fd, malloc((size_t)BURST * (sizeof payload + 32)), 0};
  ck_assert_ptr_nonnull(b.bytes);
  for (size_t i = 0; i < BURST; i++) {
    Opd__V1__Ping ping = OPD__V1__PING__INIT;
    ping.payload.len = burst_payload(i, payload);
    ping.payload.data = payload;
    Opd__V1__Request r = OPD__V1__REQUEST__INIT;
    r.id = 100 + i;
    r.body_case = OPD__V1__REQUEST__BODY_PING;
    r.ping = &ping;
    frame f = pack_request(&r);
    memcpy(b.bytes + b.len, f.bytes, 4 + f.len);
    b.len += 4 + f.len;
    free(f.bytes);
  }
  pthread_t sender; /* sends while this thread reads: neither side's buffers fill up */
  ck_assert_int_eq(pthread_create(&sender, NULL, send_burst, &b), 0);
  size_t wrong = 0, first_wrong = 0;
  for (size_t i = 0; i < BURST; i++) {
    Opd__V1__Response *r = next_response(fd);
    ck_assert_msg(r, "the connection closed after %zu responses", i);
    size_t n = burst_payload(i, payload);
    bool ok = r->id == 100 + i && r->body_case == OPD__V1__RESPONSE__BODY_PONG &&
              r->pong->payload.len == n &&
              (n == 0 || memcmp(r->pong->payload.data, payload, n) == 0);
    if (!ok && !wrong++) first_wrong = i;
    opd__v1__response__free_unpacked(r, NULL);
  }
  void *sent;
  ck_assert_int_eq(pthread_join(sender, &sent), 0);
  ck_assert_ptr_null(sent);
  ck_assert_msg(wrong == 0, "%zu responses wrong, the first at %zu", wrong, first_wrong);
  free(b.bytes);
  close(fd);
  opd_server_stop(s);
}
END_TEST

Suite *opd_test_wire_suite(void) {
  Suite *s = suite_create("wire");
  TCase *tc = tcase_create("hand_packed");
  tcase_set_timeout(tc, 120); /* about 30 s under ASan on 2 cores */
  tcase_add_test(tc, call_reply_edges);
  tcase_add_test(tc, call_reply_random);
  tcase_add_test(tc, pong_edges_and_random);
  tcase_add_test(tc, request_call_random);
  tcase_add_test(tc, request_ping_release_and_declined);
  tcase_add_test(tc, readers_on_mutated_frames);
  tcase_add_test(tc, request_reader);
  tcase_add_test(tc, graph_nodes_counted_as_protobuf_c_reads);
  suite_add_tcase(s, tc);
  TCase *strings = tcase_create("strings");
  tcase_set_timeout(strings, 60);
  tcase_add_test(strings, request_strings_checked);
  tcase_add_test(strings, op_with_nul_does_not_run);
  tcase_add_test(strings, op_not_utf8_refused);
  tcase_add_test(strings, long_multibyte_op_cut_at_characters);
  tcase_add_test(strings, other_request_strings_refused);
  suite_add_tcase(s, strings);
  TCase *responses = tcase_create("responses");
  tcase_set_timeout(responses, 60);
  tcase_add_test(responses, burst_answered_whole_and_in_order);
  suite_add_tcase(s, responses);
  return s;
}

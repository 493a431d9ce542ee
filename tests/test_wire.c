/* test_wire.c: the hand-packed messages ([Note: Hand-packed messages] in proto/opd_wire.h)
 * are byte for byte what protobuf-c packs for the same message, over edge values (0, each
 * varint length, UINT64_MAX, negative ints, NaN) and random ones; the hand readers give
 * back the values written; and on frames with random bytes changed, cut or added, a hand
 * reader either declines or agrees with protobuf-c. */
#include <check.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "opd.pb-c.h"
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
  }
}
END_TEST

START_TEST(request_ping_and_declined) {
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
    Opd__V1__Request req = OPD__V1__REQUEST__INIT;
    req.id = round % 5 ? rnd(&seed) : 0;
    if (round % 3) {
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

Suite *opd_test_wire_suite(void) {
  Suite *s = suite_create("wire");
  TCase *tc = tcase_create("hand_packed");
  tcase_set_timeout(tc, 120); /* about 30 s under ASan on 2 cores */
  tcase_add_test(tc, call_reply_edges);
  tcase_add_test(tc, call_reply_random);
  tcase_add_test(tc, pong_edges_and_random);
  tcase_add_test(tc, request_call_random);
  tcase_add_test(tc, request_ping_and_declined);
  tcase_add_test(tc, readers_on_mutated_frames);
  tcase_add_test(tc, request_reader);
  suite_add_tcase(s, tc);
  return s;
}

/* test_wire.c: the hand-packed responses ([Note: Hand-packed responses] in
 * server/src/wire.h) are byte for byte what protobuf-c packs for the same message, and
 * protobuf-c reads back the values written, over edge values (0, each varint length,
 * UINT64_MAX) and random ones. */
#include <check.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "opd.pb-c.h"
#include "wire.h"

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
static void check_call(uint64_t id, const uint64_t *handles, size_t n) {
  Opd__V1__IValue values[8], *ptrs[8];
  ck_assert_uint_le(n, 8);
  for (size_t i = 0; i < n; i++) {
    opd__v1__ivalue__init(&values[i]);
    values[i].value_case = OPD__V1__IVALUE__VALUE_TENSOR;
    values[i].tensor = handles[i];
    ptrs[i] = &values[i];
  }
  Opd__V1__CallReply reply = OPD__V1__CALL_REPLY__INIT;
  reply.n_results = n;
  reply.results = ptrs;
  Opd__V1__Response resp = OPD__V1__RESPONSE__INIT;
  resp.id = id;
  resp.body_case = OPD__V1__RESPONSE__BODY_CALL;
  resp.call = &reply;
  uint8_t want[256], got[256];
  size_t want_n = opd__v1__response__pack(&resp, want);
  size_t got_n = opd__wire_call_handles_size(id, handles, n);
  ck_assert_uint_eq(got_n, want_n);
  ck_assert_uint_eq(got_n, opd__v1__response__get_packed_size(&resp));
  memset(got, 0xa5, sizeof got);
  opd__wire_call_handles(got, id, handles, n);
  ck_assert_mem_eq(got, want, want_n);
  ck_assert_uint_eq(got[got_n], 0xa5); /* nothing written past its size */

  Opd__V1__Response *back = opd__v1__response__unpack(NULL, got_n, got);
  ck_assert_ptr_nonnull(back);
  ck_assert_uint_eq(back->id, id);
  ck_assert_int_eq(back->body_case, OPD__V1__RESPONSE__BODY_CALL);
  ck_assert_uint_eq(back->call->n_results, n);
  for (size_t i = 0; i < n; i++) {
    ck_assert_int_eq(back->call->results[i]->value_case, OPD__V1__IVALUE__VALUE_TENSOR);
    ck_assert_uint_eq(back->call->results[i]->tensor, handles[i]);
  }
  opd__v1__response__free_unpacked(back, NULL);
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

  Opd__V1__Response *back = opd__v1__response__unpack(NULL, got_n, got);
  ck_assert_ptr_nonnull(back);
  ck_assert_uint_eq(back->id, id);
  ck_assert_int_eq(back->body_case, OPD__V1__RESPONSE__BODY_PONG);
  ck_assert_uint_eq(back->pong->payload.len, len);
  if (len) ck_assert_mem_eq(back->pong->payload.data, payload, len);
  opd__v1__response__free_unpacked(back, NULL);
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

Suite *opd_test_wire_suite(void) {
  Suite *s = suite_create("wire");
  TCase *tc = tcase_create("hand_packed");
  tcase_add_test(tc, call_reply_edges);
  tcase_add_test(tc, call_reply_random);
  tcase_add_test(tc, pong_edges_and_random);
  suite_add_tcase(s, tc);
  return s;
}

/* make_corpus.c: writes the seed corpus of every fuzzer of tests/fuzz into DIR/TARGET/NAME
 * (tests/fuzz/corpus/, committed): requests as clients send them and responses as the daemon
 * sends them, packed by protobuf-c from its structures (the hand-packed forms are byte for
 * byte the same, [Note: Hand-packed messages]), and admin requests, HTTP requests, schemas and
 * configuration files as people write them. Deterministic: run again, it writes the same
 * files. Regression inputs (corpus/TARGET/regress-*) are not written here: each is the input
 * a fuzzer found, kept as it was.
 *
 *   build-fuzz/tests/fuzz/fuzz_make_corpus tests/fuzz/corpus
 */
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "opd.pb-c.h"

static const char *root;

static void put(const char *target, const char *name, const void *data, size_t n) {
  char path[512];
  snprintf(path, sizeof path, "%s/%s", root, target);
  if (mkdir(path, 0755) != 0 && errno != EEXIST) {
    perror(path);
    exit(1);
  }
  snprintf(path, sizeof path, "%s/%s/%s", root, target, name);
  FILE *f = fopen(path, "wb");
  if (!f || fwrite(data, 1, n, f) != n || fclose(f) != 0) {
    perror(path);
    exit(1);
  }
}

static void put_text(const char *target, const char *name, const char *text) {
  put(target, name, text, strlen(text));
}

/* ---- building messages (from a pool: the program frees nothing) ---- */

static _Alignas(16) uint8_t pool[1 << 22];
static size_t pool_used;

static void *take(size_t n) {
  n = (n + 15) & ~(size_t)15;
  if (n > sizeof pool - pool_used) {
    fputs("make_corpus: out of pool\n", stderr);
    exit(1);
  }
  void *p = pool + pool_used;
  pool_used += n;
  memset(p, 0, n);
  return p;
}

#define NEW(T, init)         \
  ({                         \
    T *x_ = take(sizeof(T)); \
    init(x_);                \
    x_;                      \
  })
#define ARRAY(T, ...) (T[]){__VA_ARGS__}, sizeof((T[]){__VA_ARGS__}) / sizeof(T)
#define ARGS(...)     ARRAY(Opd__V1__IValue *, __VA_ARGS__)
#define INTS(...)     ARRAY(int64_t, __VA_ARGS__)
#define HANDS(...)    ARRAY(uint64_t, __VA_ARGS__)

static Opd__V1__IValue *iv(Opd__V1__IValue__ValueCase c) {
  Opd__V1__IValue *v = NEW(Opd__V1__IValue, opd__v1__ivalue__init);
  v->value_case = c;
  return v;
}
static Opd__V1__IValue *iv_none(void) {
  Opd__V1__IValue *v = iv(OPD__V1__IVALUE__VALUE_NONE);
  v->none = 1;
  return v;
}
static Opd__V1__IValue *iv_b(bool b) {
  Opd__V1__IValue *v = iv(OPD__V1__IVALUE__VALUE_B);
  v->b = b;
  return v;
}
static Opd__V1__IValue *iv_i(int64_t i) {
  Opd__V1__IValue *v = iv(OPD__V1__IVALUE__VALUE_I);
  v->i = i;
  return v;
}
static Opd__V1__IValue *iv_d(double d) {
  Opd__V1__IValue *v = iv(OPD__V1__IVALUE__VALUE_D);
  v->d = d;
  return v;
}
static Opd__V1__IValue *iv_s(const char *s) {
  Opd__V1__IValue *v = iv(OPD__V1__IVALUE__VALUE_S);
  v->s = (char *)s;
  return v;
}
static Opd__V1__IValue *iv_t(uint64_t h) {
  Opd__V1__IValue *v = iv(OPD__V1__IVALUE__VALUE_TENSOR);
  v->tensor = h;
  return v;
}
static int64_t *copy_ints(const int64_t *x, size_t n) {
  int64_t *p = take(n * sizeof *p + 1);
  if (n) memcpy(p, x, n * sizeof *p);
  return p;
}
static Opd__V1__IValue *iv_ints(const int64_t *x, size_t n) {
  Opd__V1__IValue *v = iv(OPD__V1__IVALUE__VALUE_INTS);
  v->ints = NEW(Opd__V1__IntList, opd__v1__int_list__init);
  v->ints->n_values = n;
  v->ints->values = copy_ints(x, n);
  return v;
}
static Opd__V1__IValue *iv_doubles(double a, double b) {
  Opd__V1__IValue *v = iv(OPD__V1__IVALUE__VALUE_DOUBLES);
  v->doubles = NEW(Opd__V1__DoubleList, opd__v1__double_list__init);
  v->doubles->n_values = 2;
  v->doubles->values = take(2 * sizeof(double));
  v->doubles->values[0] = a;
  v->doubles->values[1] = b;
  return v;
}
static Opd__V1__IValue *iv_bools(bool a, bool b) {
  Opd__V1__IValue *v = iv(OPD__V1__IVALUE__VALUE_BOOLS);
  v->bools = NEW(Opd__V1__BoolList, opd__v1__bool_list__init);
  v->bools->n_values = 2;
  v->bools->values = take(2 * sizeof(protobuf_c_boolean));
  v->bools->values[0] = a;
  v->bools->values[1] = b;
  return v;
}
static Opd__V1__IValue *iv_tensors(bool optional, const uint64_t *h, size_t n) {
  uint64_t *copy = take(n * sizeof *copy + 1);
  memcpy(copy, h, n * sizeof *copy);
  if (optional) {
    Opd__V1__IValue *v = iv(OPD__V1__IVALUE__VALUE_OPTIONAL_TENSORS);
    v->optional_tensors = NEW(Opd__V1__OptionalHandleList, opd__v1__optional_handle_list__init);
    v->optional_tensors->n_handles = n;
    v->optional_tensors->handles = copy;
    return v;
  }
  Opd__V1__IValue *v = iv(OPD__V1__IVALUE__VALUE_TENSORS);
  v->tensors = NEW(Opd__V1__HandleList, opd__v1__handle_list__init);
  v->tensors->n_handles = n;
  v->tensors->handles = copy;
  return v;
}
static Opd__V1__IValue *iv_dtype(int dtype) {
  Opd__V1__IValue *v = iv(OPD__V1__IVALUE__VALUE_DTYPE);
  v->dtype = (Opd__V1__DType)dtype;
  return v;
}
static Opd__V1__Device *device(int type, int index) {
  Opd__V1__Device *d = NEW(Opd__V1__Device, opd__v1__device__init);
  d->type = type;
  d->index = index;
  return d;
}
static Opd__V1__IValue *iv_device(int type, int index) {
  Opd__V1__IValue *v = iv(OPD__V1__IVALUE__VALUE_DEVICE);
  v->device = device(type, index);
  return v;
}
/* a literal of dtype with the shape, its bytes 0, 1, 2, ... (n of them) */
static Opd__V1__IValue *iv_literal(int dtype, const int64_t *shape, size_t ndim, size_t n) {
  Opd__V1__IValue *v = iv(OPD__V1__IVALUE__VALUE_LITERAL);
  v->literal = NEW(Opd__V1__TensorLiteral, opd__v1__tensor_literal__init);
  v->literal->dtype = (Opd__V1__DType)dtype;
  v->literal->n_shape = ndim;
  v->literal->shape = copy_ints(shape, ndim);
  v->literal->data.len = n;
  v->literal->data.data = take(n + 1);
  for (size_t i = 0; i < n; i++) v->literal->data.data[i] = (uint8_t)(dtype == 11 ? i & 1 : i);
  return v;
}

enum { U8 = 0, I64 = 4, F16 = 5, F32 = 6, F64 = 7, BOOL = 11, BF16 = 15 };
enum { CPU = 0, CUDA = 1, META = 10 };

static Opd__V1__Request *request(uint64_t id, Opd__V1__Request__BodyCase body) {
  Opd__V1__Request *r = NEW(Opd__V1__Request, opd__v1__request__init);
  r->id = id;
  r->body_case = body;
  return r;
}
static Opd__V1__Request *call(uint64_t id, const char *op, Opd__V1__IValue **args, size_t n) {
  Opd__V1__Request *r = request(id, OPD__V1__REQUEST__BODY_CALL);
  r->call = NEW(Opd__V1__Call, opd__v1__call__init);
  r->call->op = (char *)op;
  r->call->n_args = n;
  r->call->args = take(n * sizeof *args + 1);
  if (n) memcpy(r->call->args, args, n * sizeof *args);
  return r;
}
static Opd__V1__Request *call0(uint64_t id, const char *op) {
  return call(id, op, NULL, 0);
}
static Opd__V1__Request *upload(uint64_t id, int dtype, const int64_t *shape, size_t ndim,
                                Opd__V1__Device *dev, uint64_t nbytes) {
  Opd__V1__Request *r = request(id, OPD__V1__REQUEST__BODY_UPLOAD);
  r->upload = NEW(Opd__V1__Upload, opd__v1__upload__init);
  r->upload->dtype = (Opd__V1__DType)dtype;
  r->upload->n_shape = ndim;
  r->upload->shape = copy_ints(shape, ndim);
  r->upload->device = dev;
  r->upload->nbytes = nbytes;
  return r;
}
static Opd__V1__Request *download(uint64_t id, uint64_t handle) {
  Opd__V1__Request *r = request(id, OPD__V1__REQUEST__BODY_DOWNLOAD);
  r->download = NEW(Opd__V1__Download, opd__v1__download__init);
  r->download->handle = handle;
  return r;
}
static Opd__V1__Request *release(uint64_t id, const uint64_t *h, size_t n) {
  Opd__V1__Request *r = request(id, OPD__V1__REQUEST__BODY_RELEASE);
  r->release = NEW(Opd__V1__Release, opd__v1__release__init);
  r->release->n_handles = n;
  r->release->handles = take(n * sizeof *h + 1);
  memcpy(r->release->handles, h, n * sizeof *h);
  return r;
}
static Opd__V1__Request *dispatch_state(uint64_t id, const char *include, const char *exclude,
                                        const char *remove_exclude) {
  Opd__V1__Request *r = request(id, OPD__V1__REQUEST__BODY_SET_DISPATCH_STATE);
  Opd__V1__DispatchState *d = r->set_dispatch_state =
      NEW(Opd__V1__DispatchState, opd__v1__dispatch_state__init);
  const char *names[3] = {include, exclude, remove_exclude};
  char ***lists[3] = {&d->include, &d->exclude, &d->remove_exclude};
  size_t *counts[3] = {&d->n_include, &d->n_exclude, &d->n_remove_exclude};
  for (int i = 0; i < 3; i++) {
    if (!names[i]) continue;
    *lists[i] = take(sizeof(char *));
    (*lists[i])[0] = (char *)names[i];
    *counts[i] = 1;
  }
  return r;
}
static Opd__V1__Request *ping(uint64_t id, const char *payload) {
  Opd__V1__Request *r = request(id, OPD__V1__REQUEST__BODY_PING);
  r->ping = NEW(Opd__V1__Ping, opd__v1__ping__init);
  r->ping->payload.len = strlen(payload);
  r->ping->payload.data = (uint8_t *)payload;
  return r;
}
static Opd__V1__Request *hello(uint64_t id, uint32_t version, const char *name) {
  Opd__V1__Request *r = request(id, OPD__V1__REQUEST__BODY_HELLO);
  r->hello = NEW(Opd__V1__Hello, opd__v1__hello__init);
  r->hello->protocol_version = version;
  r->hello->client_name = (char *)name;
  return r;
}
static Opd__V1__Request *synchronize(uint64_t id) {
  Opd__V1__Request *r = request(id, OPD__V1__REQUEST__BODY_SYNCHRONIZE);
  r->synchronize = NEW(Opd__V1__Synchronize, opd__v1__synchronize__init);
  return r;
}

/* ---- streams: frames (a 4-byte little-endian length, then the message) and raw bytes ---- */

typedef struct stream {
  uint8_t buf[1 << 18];
  size_t len;
} stream;

static stream st;

static void raw(const void *p, size_t n) {
  if (n > sizeof st.buf - st.len) {
    fputs("make_corpus: stream too long\n", stderr);
    exit(1);
  }
  memcpy(st.buf + st.len, p, n);
  st.len += n;
}

static void frame_of(const ProtobufCMessage *m) {
  size_t n = protobuf_c_message_get_packed_size(m);
  uint8_t head[4] = {(uint8_t)n, (uint8_t)(n >> 8), (uint8_t)(n >> 16), (uint8_t)(n >> 24)};
  raw(head, 4);
  uint8_t *body = take(n + 1);
  protobuf_c_message_pack(m, body);
  raw(body, n);
}

static void frame(const Opd__V1__Request *r) {
  frame_of(&r->base);
}

static void bytes(size_t n, uint8_t first) {
  for (size_t i = 0; i < n; i++) {
    uint8_t b = (uint8_t)(first + i);
    raw(&b, 1);
  }
}

static void put_stream(const char *target, const char *name) {
  put(target, name, st.buf, st.len);
  st.len = 0;
}

static void put_message(const char *target, const char *name, const ProtobufCMessage *m) {
  size_t n = protobuf_c_message_get_packed_size(m);
  uint8_t *body = take(n + 1);
  protobuf_c_message_pack(m, body);
  put(target, name, body, n);
}

/* ---- request: single Request messages ---- */

static void request_corpus(void) {
  const char *t = "request";
  struct {
    const char *name;
    Opd__V1__Request *r;
  } seeds[] = {
      {"hello", hello(1, 1, "opd-client")},
      {"hello_v2", hello(1, 2, "")},
      {"ping_empty", ping(7, "")},
      {"ping_payload", ping(8, "0123456789abcdef")},
      {"ping_id0", ping(0, "x")},
      {"call_add_handles", call(2, "aten::add.Tensor", ARGS(iv_t(1), iv_t(2)))},
      {"call_add_alpha", call(3, "aten::add.Tensor", ARGS(iv_t(1), iv_t(2), iv_d(0.5)))},
      {"call_plain_kinds",
       call(4, "aten::clamp", ARGS(iv_t(1), iv_i(-3), iv_i(INT64_MAX), iv_none(), iv_b(true)))},
      {"call_no_args", call0(5, "aten::zeros")},
      {"call_no_op", call0(6, "")},
      {"call_ints", call(9, "aten::view", ARGS(iv_t(1), iv_ints(INTS(-1, 3))))},
      {"call_lists", call(10, "x::y", ARGS(iv_doubles(1.5, -0.0), iv_bools(true, false)))},
      {"call_tensor_lists",
       call(11, "aten::cat", ARGS(iv_tensors(false, HANDS(1, 2, 3)), iv_i(0)))},
      {"call_optional_tensors",
       call(12, "x::y", ARGS(iv_tensors(true, HANDS(0, 1)), iv_dtype(F32), iv_device(META, -1)))},
      {"call_literal", call(13, "aten::mul.Tensor", ARGS(iv_t(1), iv_literal(F32, INTS(2), 8)))},
      {"call_string", call(14, "aten::gelu", ARGS(iv_t(1), iv_s("tanh")))},
      {"call_string_utf8", call(15, "aten::gelu", ARGS(iv_t(1), iv_s("\xc3\xa9t\xc3\xa9")))},
      {"call_string_bad_utf8", call(16, "aten::gelu", ARGS(iv_t(1), iv_s("\xff\xfe")))},
      {"call_op_utf8", call(17, "aten::add.Tensor\xc3\xa9", ARGS(iv_t(1)))},
      {"upload_f32", upload(18, F32, INTS(2, 3), NULL, 24)},
      {"upload_cuda", upload(19, F32, INTS(4), device(CUDA, 0), 16)},
      {"download", download(20, 1)},
      {"release", release(21, HANDS(1, 2, 2))},
      {"dispatch_state", dispatch_state(22, "Meta", "AutogradCPU", "AutocastCPU")},
      {"dispatch_state_bad", dispatch_state(23, "NoSuchKey", NULL, NULL)},
      {"synchronize", synchronize(24)},
      {"empty", request(25, OPD__V1__REQUEST__BODY__NOT_SET)},
  };
  for (size_t i = 0; i < sizeof seeds / sizeof *seeds; i++)
    put_message(t, seeds[i].name, &seeds[i].r->base);
  /* a NUL inside the op: protobuf-c would cut the name at it */
  static const uint8_t nul_op[] = {0x08, 0x1a, 0x1a, 0x17, 0x0a, 0x15, 'a', 't', 'e',
                                   'n',  ':',  ':',  'a',  'd',  'd',  '.', 'T', 'e',
                                   'n',  's',  'o',  'r',  0,    'j',  'u', 'n', 'k'};
  put(t, "call_op_nul", nul_op, sizeof nul_op);
  /* a varint in a longer form than the shortest: protobuf-c reads it, the hand reader not */
  static const uint8_t long_id[] = {0x08, 0x81, 0x00, 0x4a, 0x00};
  put(t, "ping_long_varint", long_id, sizeof long_id);
}

/* ---- upload: Upload messages ---- */

static void upload_corpus(void) {
  const char *t = "upload";
  struct {
    const char *name;
    Opd__V1__Request *r;
  } seeds[] = {
      {"f32_2x3", upload(1, F32, INTS(2, 3), NULL, 24)},
      {"u8_scalar", upload(1, U8, NULL, 0, NULL, 1)},
      {"bool_4", upload(1, BOOL, INTS(4), device(CPU, -1), 4)},
      {"f16_empty", upload(1, F16, INTS(0, 1000000), device(CPU, 0), 0)},
      {"bf16_big", upload(1, BF16, INTS(1 << 20, 1 << 10), NULL, (uint64_t)1 << 31)},
      {"i64_nbytes_mismatch", upload(1, I64, INTS(3), NULL, 16)},
      {"negative_dim", upload(1, F32, INTS(-1, 4), NULL, 16)},
      {"overflow", upload(1, F64, INTS(INT64_MAX, 2), NULL, 0)},
      {"zero_then_huge", upload(1, F32, INTS(0, INT64_MAX, INT64_MAX), NULL, 0)},
      {"bad_dtype", upload(1, 3 + 20, INTS(1), NULL, 4)},
      {"cuda", upload(1, F32, INTS(2), device(CUDA, 0), 8)},
      {"cuda_bad_index", upload(1, F32, INTS(2), device(CUDA, 70000), 8)},
      {"meta", upload(1, F32, INTS(2), device(META, -1), 8)},
      {"cpu_index_1", upload(1, F32, INTS(2), device(CPU, 1), 8)},
      {"many_dims", upload(1, U8,
                           INTS(1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
                                1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
                                1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1),
                           NULL, 1)},
  };
  for (size_t i = 0; i < sizeof seeds / sizeof *seeds; i++)
    put_message(t, seeds[i].name, &seeds[i].r->upload->base);
}

/* ---- session: request streams after hello ----
 * The session holds, as handles 1 to 9 (tests/fuzz/fuzz_session.c): 1 a Meta float32 [2, 3],
 * 2 a Meta float32 [2^40, 2^20], 3 a Meta int64 [5], 4 a CPU float32 [2, 3], 5 a CPU int64
 * [3] holding 0, 1, 2, 6 the transpose of 4, 7 a CPU float32 [1] expanded to [64, 1024], 8 a
 * CPU bool [4], 9 a CPU float64 0-d; new handles start at 10. */

static void session_corpus(void) {
  const char *t = "session";
  frame(call(1, "aten::add.Tensor", ARGS(iv_t(1), iv_t(1))));
  frame(call(2, "aten::add.Tensor", ARGS(iv_t(1), iv_t(2))));
  put_stream(t, "add_meta");
  frame(call(1, "aten::add.Tensor", ARGS(iv_t(4), iv_t(4), iv_i(2))));
  frame(download(2, 10));
  put_stream(t, "add_cpu_download");
  frame(call(1, "aten::mm", ARGS(iv_t(4), iv_t(6))));
  frame(call(2, "aten::matmul", ARGS(iv_t(6), iv_t(4))));
  frame(download(3, 10));
  frame(download(4, 11));
  put_stream(t, "mm_matmul");
  frame(call(1, "aten::sum.dim_IntList", ARGS(iv_t(7), iv_ints(INTS(1)), iv_b(true))));
  frame(call(2, "aten::sum", ARGS(iv_t(2), iv_dtype(F64))));
  frame(download(3, 10));
  put_stream(t, "sum");
  for (uint64_t h = 1; h <= 9; h++) frame(download(h, h));
  put_stream(t, "download_every_start_tensor");
  frame(upload(1, F32, INTS(2, 2), NULL, 16));
  bytes(16, 0x3f);
  frame(call(2, "aten::add.Tensor", ARGS(iv_t(10), iv_t(10))));
  frame(download(3, 11));
  put_stream(t, "upload_add_download");
  frame(upload(1, BOOL, INTS(4), NULL, 4));
  raw("\x00\x02\xff\x01", 4);
  frame(download(2, 10));
  put_stream(t, "upload_bool");
  frame(upload(1, F32, INTS(3), NULL, 8));
  bytes(8, 0);
  frame(ping(2, "ignored"));
  frame(download(3, 4));
  put_stream(t, "upload_refused_skipped");
  frame(upload(1, F32, INTS(1 << 20, 4), NULL, (uint64_t)16 << 20));
  frame(upload(2, U8, INTS(0), NULL, 0));
  frame(download(3, 10));
  put_stream(t, "upload_over_budget_and_empty");
  frame(call(1, "aten::expand", ARGS(iv_t(4), iv_ints(INTS(1 << 30, 2, 3)))));
  frame(call(2, "aten::sum", ARGS(iv_t(10))));
  frame(call(3, "aten::expand", ARGS(iv_t(1), iv_ints(INTS(1 << 30, -1, -1)))));
  frame(call(4, "aten::sum", ARGS(iv_t(11))));
  put_stream(t, "expand_then_sum");
  frame(call(1, "aten::as_strided",
             ARGS(iv_t(1), iv_ints(INTS((int64_t)1 << 40)), iv_ints(INTS(0)), iv_i(3))));
  frame(call(2, "aten::as_strided",
             ARGS(iv_t(4), iv_ints(INTS(2, 2)), iv_ints(INTS(1, 2)), iv_i(1))));
  frame(download(3, 11));
  frame(call(4, "aten::as_strided", ARGS(iv_t(4), iv_ints(INTS(4)), iv_ints(INTS(INT64_MAX)))));
  put_stream(t, "as_strided");
  frame(call(1, "aten::view", ARGS(iv_t(2), iv_ints(INTS(-1)))));
  frame(call(2, "aten::reshape", ARGS(iv_t(6), iv_ints(INTS(6)))));
  frame(call(3, "aten::view", ARGS(iv_t(6), iv_ints(INTS(6)))));
  frame(download(4, 11));
  put_stream(t, "view_reshape");
  frame(call(1, "aten::cat", ARGS(iv_tensors(false, HANDS(4, 6, 4)), iv_i(0))));
  frame(call(2, "aten::cat", ARGS(iv_tensors(false, HANDS(4, 4)), iv_i(1))));
  frame(download(3, 11));
  put_stream(t, "cat");
  frame(call(1, "aten::index_select", ARGS(iv_t(4), iv_i(1), iv_t(5))));
  frame(call(2, "aten::embedding", ARGS(iv_t(6), iv_t(5))));
  frame(call(3, "aten::index_select", ARGS(iv_t(1), iv_i(0), iv_t(3))));
  frame(download(4, 10));
  put_stream(t, "index_select_embedding");
  frame(call(1, "aten::empty.memory_format",
             ARGS(iv_ints(INTS(2, 3)), iv_dtype(F32), iv_none(), iv_device(META, -1))));
  frame(call(2, "aten::zeros", ARGS(iv_ints(INTS(3)), iv_dtype(I64))));
  frame(call(3, "aten::arange.start_step", ARGS(iv_i(0), iv_i(10), iv_i(3))));
  frame(call(4, "aten::full", ARGS(iv_ints(INTS(2, 2)), iv_d(3.5))));
  frame(call(5, "aten::ones", ARGS(iv_ints(INTS(4)), iv_dtype(BOOL))));
  frame(call(6, "aten::empty_strided", ARGS(iv_ints(INTS(2, 3)), iv_ints(INTS(1, 2)))));
  frame(download(7, 12));
  put_stream(t, "factories");
  frame(call(1, "aten::layer_norm", ARGS(iv_t(4), iv_ints(INTS(3)))));
  frame(call(2, "aten::native_layer_norm",
             ARGS(iv_t(4), iv_ints(INTS(3)), iv_none(), iv_none(), iv_d(1e-5))));
  frame(download(3, 12));
  put_stream(t, "layer_norm");
  frame(call(1, "aten::softmax.int", ARGS(iv_t(4), iv_i(1))));
  frame(call(2, "aten::_softmax", ARGS(iv_t(1), iv_i(0), iv_b(false))));
  frame(call(3, "aten::_log_softmax", ARGS(iv_t(6), iv_i(-1), iv_b(false))));
  put_stream(t, "softmax");
  frame(call(1, "aten::transpose.int", ARGS(iv_t(4), iv_i(0), iv_i(1))));
  frame(call(2, "aten::permute", ARGS(iv_t(2), iv_ints(INTS(1, 0)))));
  frame(call(3, "aten::t", ARGS(iv_t(4))));
  frame(call(4, "aten::contiguous", ARGS(iv_t(6))));
  frame(call(5, "aten::clone", ARGS(iv_t(7))));
  frame(download(6, 10));
  put_stream(t, "views");
  frame(call(1, "aten::slice.Tensor", ARGS(iv_t(4), iv_i(1), iv_i(0), iv_i(3), iv_i(2))));
  frame(call(2, "aten::select.int", ARGS(iv_t(4), iv_i(0), iv_i(-1))));
  frame(call(3, "aten::unsqueeze", ARGS(iv_t(9), iv_i(0))));
  frame(call(4, "aten::squeeze.dim", ARGS(iv_t(12), iv_i(0))));
  frame(download(5, 10));
  put_stream(t, "slice_select_unsqueeze");
  frame(dispatch_state(1, "Meta", NULL, NULL));
  frame(call(2, "aten::add.Tensor", ARGS(iv_t(4), iv_t(4))));
  frame(download(3, 10));
  frame(dispatch_state(4, NULL, "AutogradCPU", "AutocastCPU"));
  frame(call(5, "aten::add.Tensor", ARGS(iv_t(4), iv_t(4))));
  put_stream(t, "dispatch_state");
  frame(release(1, HANDS(4)));
  frame(call(2, "aten::add.Tensor", ARGS(iv_t(4), iv_t(4))));
  frame(release(3, HANDS(99)));
  frame(synchronize(4));
  put_stream(t, "release");
  frame(call(1, "aten::add.Tensor", ARGS(iv_t(4), iv_literal(F32, INTS(3), 12))));
  frame(call(2, "aten::where.self", ARGS(iv_literal(BOOL, INTS(2, 3), 6), iv_t(4), iv_t(6))));
  frame(
      call(3, "aten::masked_fill.Scalar", ARGS(iv_t(4), iv_literal(BOOL, INTS(3), 3), iv_d(0.5))));
  frame(download(4, 11));
  put_stream(t, "literals");
  frame(call(1, "aten::div.Tensor_mode", ARGS(iv_t(4), iv_t(4), iv_s("floor"))));
  frame(call(2, "aten::gelu", ARGS(iv_t(4), iv_s("tanh"))));
  frame(call(3, "aten::gelu", ARGS(iv_t(4), iv_s("bogus"))));
  put_stream(t, "strings");
  frame(call(1, "aten::bmm", ARGS(iv_t(2), iv_t(1))));
  frame(call(2, "aten::addmm", ARGS(iv_literal(F32, INTS(2), 8), iv_t(4), iv_t(6), iv_i(2))));
  frame(call(3, "aten::linear", ARGS(iv_t(4), iv_t(4), iv_none())));
  put_stream(t, "linalg");
  frame(call(1, "aten::_to_copy", ARGS(iv_t(4), iv_dtype(F64))));
  frame(call(2, "aten::argmax", ARGS(iv_t(4), iv_i(1))));
  frame(call(3, "aten::amax", ARGS(iv_t(7), iv_ints(INTS(0, 1)))));
  frame(call(4, "aten::mean.dim", ARGS(iv_t(4), iv_none(), iv_b(true), iv_dtype(F64))));
  frame(download(5, 13));
  put_stream(t, "reductions");
  frame(call(1, "aten::clamp", ARGS(iv_t(4), iv_d(-1.0), iv_d(1.0))));
  frame(call(2, "aten::pow.Tensor_Scalar", ARGS(iv_t(4), iv_i(2))));
  frame(call(3, "aten::lt.Scalar", ARGS(iv_t(4), iv_b(true))));
  frame(call(4, "aten::eq.Tensor", ARGS(iv_t(4), iv_t(6))));
  put_stream(t, "elementwise");
  frame(call(1, "aten::clone", ARGS(iv_t(4))));
  frame(call(2, "aten::fill_.Scalar", ARGS(iv_t(10), iv_d(7.0))));
  frame(call(3, "aten::copy_", ARGS(iv_t(10), iv_t(6))));
  frame(call(4, "aten::add.out", ARGS(iv_t(4), iv_t(4), iv_i(1), iv_t(10))));
  frame(call(5, "aten::masked_fill_.Scalar", ARGS(iv_t(10), iv_t(8), iv_i(1))));
  frame(download(6, 10));
  put_stream(t, "in_place");
  frame(call(1, "aten::nope", ARGS(iv_t(4))));
  frame(call(2, "aten::add.Tensor", ARGS(iv_t(4))));
  frame(call(3, "aten::add.Tensor", ARGS(iv_t(4), iv_i(1), iv_i(1), iv_i(1))));
  frame(call(4, "aten::add.Tensor", ARGS(iv_t(0), iv_t(4))));
  frame(call(5, "aten::view", ARGS(iv_t(4), iv_d(2.0))));
  frame(call(6, "aten::add.Tensor", ARGS(iv_t(4), iv_t(123456))));
  put_stream(t, "bad_calls");
  frame(hello(1, 1, "again"));
  frame(request(2, OPD__V1__REQUEST__BODY__NOT_SET));
  raw("\x05\x00\x00\x00\xff\xff\xff\xff\xff", 9);
  frame(call(3, "aten::neg", ARGS(iv_t(4))));
  put_stream(t, "malformed_then_call");
}

/* ---- client: what a server sends: the hello reply (id 1), then answers to ids 2 to 13 ---- */

static Opd__V1__Response *response(uint64_t id, Opd__V1__Response__BodyCase body) {
  Opd__V1__Response *r = NEW(Opd__V1__Response, opd__v1__response__init);
  r->id = id;
  r->body_case = body;
  return r;
}
static void hello_reply(uint32_t version, uint32_t max_in_flight) {
  Opd__V1__Response *r = response(1, OPD__V1__RESPONSE__BODY_HELLO);
  r->hello = NEW(Opd__V1__HelloReply, opd__v1__hello_reply__init);
  r->hello->protocol_version = version;
  r->hello->server = "opd 0.1.0";
  r->hello->max_frame_bytes = 1 << 20;
  r->hello->max_literal_bytes = 65536;
  r->hello->max_handles = 65536;
  r->hello->max_bytes_held = (uint64_t)8 << 30;
  r->hello->max_in_flight = max_in_flight;
  frame_of(&r->base);
}
static void call_reply(uint64_t id, Opd__V1__IValue **values, size_t n) {
  Opd__V1__Response *r = response(id, OPD__V1__RESPONSE__BODY_CALL);
  r->call = NEW(Opd__V1__CallReply, opd__v1__call_reply__init);
  r->call->n_results = n;
  r->call->results = take(n * sizeof *values + 1);
  memcpy(r->call->results, values, n * sizeof *values);
  frame_of(&r->base);
}
static void upload_reply(uint64_t id, uint64_t handle) {
  Opd__V1__Response *r = response(id, OPD__V1__RESPONSE__BODY_UPLOAD);
  r->upload = NEW(Opd__V1__UploadReply, opd__v1__upload_reply__init);
  r->upload->handle = handle;
  frame_of(&r->base);
}
static void download_reply(uint64_t id, int dtype, const int64_t *shape, size_t ndim,
                           uint64_t nbytes) {
  Opd__V1__Response *r = response(id, OPD__V1__RESPONSE__BODY_DOWNLOAD);
  Opd__V1__DownloadReply *d = r->download =
      NEW(Opd__V1__DownloadReply, opd__v1__download_reply__init);
  d->dtype = (Opd__V1__DType)dtype;
  d->n_shape = d->n_strides = ndim;
  d->shape = copy_ints(shape, ndim);
  d->strides = take(ndim * sizeof(int64_t) + 1);
  for (size_t i = ndim, s = 1; i-- > 0; s *= (size_t)shape[i]) d->strides[i] = (int64_t)s;
  d->nbytes = nbytes;
  frame_of(&r->base);
}
static void pong(uint64_t id, const char *payload) {
  Opd__V1__Response *r = response(id, OPD__V1__RESPONSE__BODY_PONG);
  r->pong = NEW(Opd__V1__Pong, opd__v1__pong__init);
  r->pong->payload.len = strlen(payload);
  r->pong->payload.data = (uint8_t *)payload;
  frame_of(&r->base);
}
static void ack(uint64_t id) {
  Opd__V1__Response *r = response(id, OPD__V1__RESPONSE__BODY_ACK);
  r->ack = NEW(Opd__V1__Ack, opd__v1__ack__init);
  frame_of(&r->base);
}
static void error(uint64_t id, Opd__V1__ErrorCode code, const char *message, const char *op) {
  Opd__V1__Response *r = response(id, OPD__V1__RESPONSE__BODY_ERROR);
  r->error = NEW(Opd__V1__Error, opd__v1__error__init);
  r->error->code = code;
  r->error->message = (char *)message;
  r->error->op = (char *)op;
  frame_of(&r->base);
}

/* the answers of a server that does everything asked */
static void all_answers(void) {
  call_reply(2, ARGS(iv_t(3)));
  upload_reply(3, 4);
  download_reply(4, F32, INTS(2, 3), 24);
  bytes(24, 0);
  download_reply(5, F32, INTS(2), 8);
  bytes(8, 0x40);
  pong(6, "fuzz");
  ack(7);
  ack(8);
  call_reply(9, ARGS(iv_tensors(false, HANDS(5, 6))));
  call_reply(10, ARGS(iv_t(7)));
  call_reply(11, ARGS(iv_t(8)));
  call_reply(12, ARGS(iv_t(9)));
  call_reply(13, ARGS(iv_t(10)));
}

static void client_corpus(void) {
  const char *t = "client";
  hello_reply(1, 1024);
  all_answers();
  put_stream(t, "every_answer");
  hello_reply(1, 1024);
  put_stream(t, "hello_only");
  hello_reply(2, 1024);
  put_stream(t, "hello_wrong_version");
  hello_reply(1, 2);
  call_reply(2, ARGS(iv_t(3)));
  upload_reply(3, 4);
  put_stream(t, "max_in_flight_2");
  error(1, OPD__V1__ERROR_CODE__FAILED_PRECONDITION, "no", "");
  put_stream(t, "hello_refused");
  error(0, OPD__V1__ERROR_CODE__RESOURCE_EXHAUSTED, "closing", "");
  put_stream(t, "session_closed");
  raw("HTTP/1.1 400 Bad Request\r\n\r\n", 28);
  put_stream(t, "http_server");
  raw("SSH-2.0-OpenSSH_9.2p1\r\n", 23);
  put_stream(t, "ssh_server");
  hello_reply(1, 1024);
  error(2, OPD__V1__ERROR_CODE__NOT_FOUND, "unknown operator 'aten::add.Tensor'",
        "aten::add.Tensor");
  error(3, OPD__V1__ERROR_CODE__RESOURCE_EXHAUSTED, "max_bytes_held", "");
  error(4, OPD__V1__ERROR_CODE__NOT_FOUND, "unknown tensor handle 1", "");
  download_reply(5, F32, INTS(1 << 20), 4 << 20);
  bytes(100, 0);
  put_stream(t, "errors_and_a_short_download");
  hello_reply(1, 1024);
  call_reply(2, ARGS(iv_t(3), iv_i(-1), iv_d(2.5), iv_b(true), iv_none(), iv_s("text"),
                     iv_ints(INTS(1, 2)), iv_doubles(0.5, 1.5), iv_bools(false, true),
                     iv_tensors(true, HANDS(0, 9)), iv_dtype(F16), iv_device(CUDA, 0)));
  upload_reply(3, 0);
  put_stream(t, "results_of_every_kind");
  hello_reply(1, 1024);
  call_reply(2, ARGS(iv_t(3)));
  download_reply(4, F32, INTS(100), 400);
  put_stream(t, "answer_out_of_order");
  hello_reply(1, 1024);
  call_reply(2, ARGS(iv_t(3)));
  upload_reply(3, 4);
  download_reply(4, F32, INTS(64), 256);
  bytes(256, 1);
  download_reply(5, 99, INTS(2), 8);
  put_stream(t, "download_too_big_then_bad_dtype");
  hello_reply(1, 1024);
  call_reply(2, ARGS(iv_t(3)));
  upload_reply(3, 4);
  download_reply(4, F32, INTS(2, 3), 24);
  bytes(24, 0);
  download_reply(5, F32, INTS(2), 8);
  bytes(8, 0x40);
  pong(6, "fuzx");
  put_stream(t, "pong_differs");
  hello_reply(1, 1024);
  call_reply(2, ARGS(iv_t(3)));
  upload_reply(3, 4);
  download_reply(4, F32, INTS(2), 8);
  bytes(8, 0);
  download_reply(5, F32, INTS((int64_t)1 << 31), (uint64_t)1 << 33); /* an 8 GiB buffer */
  bytes(64, 0);
  put_stream(t, "download_alloc_huge");
  /* the three adds (every_answer has them in one run of result-handle replies) in another
   * order, and with a reply to a request that does not exist among them ([Note: Replies
   * taken in a batch]) */
  hello_reply(1, 1024);
  call_reply(2, ARGS(iv_t(3)));
  call_reply(13, ARGS(iv_t(10)));
  call_reply(11, ARGS(iv_t(8), iv_t(11)));
  call_reply(12, ARGS(iv_t(9)));
  put_stream(t, "adds_out_of_order");
  hello_reply(1, 1024);
  call_reply(11, ARGS(iv_t(8)));
  call_reply(99, ARGS(iv_t(9)));
  call_reply(12, ARGS(iv_t(10)));
  put_stream(t, "reply_to_no_request_in_a_run");
}

/* ---- admin: one request per line ---- */

static void admin_corpus(void) {
  const char *t = "admin";
  put_text(t, "status", "{\"op\": \"status\"}\n");
  put_text(t, "list", "{\"op\": \"list\"}\n");
  put_text(t, "list_name", "{\"op\": \"list\", \"name\": \"aten::add.Tensor\"}\n");
  put_text(t, "list_unknown", "{\"op\": \"list\", \"name\": \"fuzz::a\"}\n");
  put_text(
      t, "def",
      "{\"op\": \"def\", \"namespace\": \"fuzz\", \"schema\": \"a(Tensor x, int n=2) -> Tensor\"}\n"
      "{\"op\": \"list\", \"name\": \"fuzz::a\"}\n");
  put_text(t, "def_twice",
           "{\"op\": \"def\", \"namespace\": \"fuzz\", \"schema\": \"b.x(Tensor x) -> Tensor\"}\n"
           "{\"op\": \"def\", \"namespace\": \"fuzz\", \"schema\": \"b.x(Tensor x) -> Tensor\"}\n");
  put_text(t, "def_then_deregister",
           "{\"op\": \"def\", \"namespace\": \"fuzz\", \"schema\": \"c(Tensor x) -> Tensor\"}\n"
           "{\"op\": \"deregister\", \"id\": 1}\n"
           "{\"op\": \"list\"}\n");
  put_text(t, "def_bad_schema",
           "{\"op\": \"def\", \"namespace\": \"fuzz\", \"schema\": \"d(Tensor x -> Tensor\"}\n");
  put_text(
      t, "def_other_namespace",
      "{\"op\": \"def\", \"namespace\": \"fuzz\", \"schema\": \"aten::e(Tensor x) -> Tensor\"}\n");
  put_text(t, "register_fallthrough",
           "{\"op\": \"register\", \"name\": \"aten::add.Tensor\", \"key\": \"AutogradCPU\", "
           "\"fallthrough\": true}\n"
           "{\"op\": \"list\", \"name\": \"aten::add.Tensor\"}\n");
  put_text(t, "register_kernel_of",
           "{\"op\": \"register\", \"name\": \"fuzz::f\", \"key\": \"CPU\", \"kernel_of\": 5, "
           "\"data\": \"x\"}\n");
  put_text(t, "register_both",
           "{\"op\": \"register\", \"name\": \"fuzz::g\", \"key\": \"CPU\", \"kernel_of\": 5, "
           "\"fallthrough\": true}\n");
  put_text(t, "register_fallback",
           "{\"op\": \"register_fallback\", \"key\": \"Meta\", \"fallthrough\": true}\n"
           "{\"op\": \"register_fallback\", \"key\": \"Meta\", \"fallthrough\": true}\n");
  put_text(t, "register_fallback_kernel",
           "{\"op\": \"register_fallback\", \"key\": \"CPU\", \"fallthrough\": false}\n");
  put_text(t, "deregister_builtin", "{\"op\": \"deregister\", \"id\": 3}\n");
  put_text(t, "set_priority",
           "{\"op\": \"set_priority\", \"session\": 1, \"priority\": \"high\"}\n"
           "{\"op\": \"set_priority\", \"session\": 2, \"priority\": \"low\"}\n"
           "{\"op\": \"set_priority\", \"session\": 1, \"priority\": \"urgent\"}\n");
  put_text(t, "deregister_bad_id", "{\"op\": \"deregister\", \"id\": -4}\n");
  put_text(t, "load_plugin", "{\"op\": \"load_plugin\", \"file\": \"scaled_add.so\"}\n");
  put_text(t, "unload_plugin", "{\"op\": \"unload_plugin\", \"file\": \"../x.so\"}\n");
  put_text(t, "cuda_register",
           "{\"op\": \"cuda_register\", \"source\": \"extern \\\"C\\\" __global__ void k(float *o, "
           "const float *x, long n) {}\", \"entry\": \"k\", \"schema\": \"fuzz::h(Tensor x) -> "
           "Tensor\", \"launch\": \"elementwise\", \"dtypes\": \"float32\"}\n");
  put_text(t, "drain", "{\"op\": \"drain\"}\n");
  put_text(t, "shutdown", "{\"op\": \"shutdown\"}\n");
  put_text(t, "token", "{\"op\": \"status\", \"token\": \"secret\"}\n");
  put_text(t, "unknown_op", "{\"op\": \"nope\"}\n");
  put_text(t, "no_op", "{\"name\": \"x\"}\n");
  put_text(t, "duplicate_key", "{\"op\": \"status\", \"op\": \"shutdown\"}\n");
  put_text(t, "not_object", "[1, 2, 3]\n\"op\"\n");
  put_text(t, "not_utf8", "{\"op\": \"list\", \"name\": \"\xff\xfe\"}\n");
  put_text(t, "escaped_nul", "{\"op\": \"list\", \"name\": \"aten::add\\u0000x\"}\n");
  put_text(t, "wrong_types", "{\"op\": \"deregister\", \"id\": \"7\", \"force\": 1}\n");
}

/* ---- status: HTTP requests ---- */

static void status_corpus(void) {
  const char *t = "status";
  static const char *const targets[][2] = {
      {"page", "/"},
      {"index", "/index.html"},
      {"health", "/v1/health"},
      {"info", "/v1/info"},
      {"keys", "/v1/keys"},
      {"ops", "/v1/ops"},
      {"fallbacks", "/v1/fallbacks"},
      {"sessions", "/v1/sessions"},
      {"memory", "/v1/memory"},
      {"metrics", "/metrics"},
      {"op", "/v1/ops/aten::add.Tensor"},
      {"op_percent", "/v1/ops/aten%3A%3Amul.Tensor"},
      {"op_unknown", "/v1/ops/fuzz::nope"},
      {"dispatch", "/v1/ops/aten::add.Tensor/dispatch?keys=CPU,AutogradCPU"},
      {"dispatch_tls",
       "/v1/ops/aten::mm/dispatch?keys=Meta&include=AutocastCPU&exclude=ADInplaceOrView"},
      {"dispatch_bad_key", "/v1/ops/aten::mm/dispatch?keys=Autograd"},
      {"dispatch_utf8", "/v1/ops/aten::mm/dispatch?keys=%C3%A9"},
      {"bad_percent", "/v1/ops/%zz"},
      {"percent_nul", "/v1/ops/a%00b"},
      {"no_such", "/v2/nothing?x=1#frag"},
      {"absolute", "http://127.0.0.1:7471/v1/health"},
  };
  char req[4096];
  for (size_t i = 0; i < sizeof targets / sizeof *targets; i++) {
    snprintf(req, sizeof req, "GET %s HTTP/1.1\r\nHost: 127.0.0.1:7471\r\n\r\n", targets[i][1]);
    put_text(t, targets[i][0], req);
  }
  put_text(t, "post", "POST /v1/health HTTP/1.1\r\nContent-Length: 2\r\n\r\n{}");
  put_text(t, "head_http10", "HEAD / HTTP/1.0\r\n\r\n");
  put_text(t, "headers",
           "GET /v1/keys HTTP/1.1\r\nHost: x\r\nUser-Agent: fuzz\r\nAccept: */*\r\n"
           "Connection: keep-alive\r\n\r\n");
  put_text(t, "incomplete", "GET /v1/ops/aten::add.Tensor HTTP/1.1\r\nHost: x\r\n");
  put_text(t, "malformed", "GET\x01/ HTTP/1.1\r\n\r\n");
  put_text(t, "bare_target", "/v1/ops/aten::add.Tensor/dispatch?keys=CPU&include=&exclude=");
}

/* ---- schema: ATen schema text ---- */

static void schema_corpus(void) {
  const char *t = "schema";
  static const char *const schemas[][2] = {
      {"add", "aten::add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor"},
      {"gelu", "aten::gelu(Tensor self, *, str approximate=\"none\") -> Tensor"},
      {"sum", "aten::sum.dim_IntList(Tensor self, int[1]? dim, bool keepdim=False, *, ScalarType? "
              "dtype=None) -> Tensor"},
      {"amax", "aten::amax(Tensor self, int[1] dim=[], bool keepdim=False) -> Tensor"},
      {"view", "aten::view(Tensor(a) self, SymInt[] size) -> Tensor(a)"},
      {"slice", "aten::slice.Tensor(Tensor(a) self, int dim=0, SymInt? start=None, SymInt? "
                "end=None, SymInt step=1) -> Tensor(a)"},
      {"cat", "aten::cat(Tensor[] tensors, int dim=0) -> Tensor"},
      {"layer_norm", "aten::layer_norm(Tensor input, int[] normalized_shape, Tensor? weight=None, "
                     "Tensor? bias=None, float eps=1.0000000000000001e-05, bool cudnn_enable=True) "
                     "-> Tensor"},
      {"zeros", "aten::zeros(SymInt[] size, *, ScalarType? dtype=None, Layout? layout=None, "
                "Device? device=None, bool? pin_memory=None) -> Tensor"},
      {"add_out", "aten::add.out(Tensor self, Tensor other, *, Scalar alpha=1, Tensor(a!) out) -> "
                  "Tensor(a!)"},
      {"native_layer_norm", "aten::native_layer_norm(Tensor input, SymInt[] normalized_shape, "
                            "Tensor? weight, Tensor? bias, float eps) -> (Tensor, Tensor, Tensor)"},
      {"named_returns", "aten::max.dim(Tensor self, int dim, bool keepdim=False) -> (Tensor "
                        "values, Tensor indices)"},
      {"index", "aten::index.Tensor(Tensor self, Tensor?[] indices) -> Tensor"},
      {"generator", "aten::rand(int[] size, *, Generator? generator) -> Tensor"},
      {"memory_format",
       "aten::contiguous(Tensor(a) self, *, MemoryFormat memory_format=0) -> Tensor(a)"},
      {"fixed_list", "myops::pool(Tensor x, int[2] stride=1, float[] w=[1., 2.5]) -> Tensor"},
      {"defaults",
       "myops::d(float a=inf, float b=-inf, float c=nan, str s='it\\'s', int i=-3, bool "
       "b2=True) -> ()"},
      {"alias_set", "myops::a(Tensor(a -> *) x, Tensor(b!) y) -> Tensor(b!)"},
      {"no_namespace", "scaled_add(Tensor self, Tensor other, float scale=1.) -> Tensor"},
      {"no_returns", "myops::f(Tensor x) -> ()"},
      {"list_return", "myops::split(Tensor x, int n) -> Tensor[]"},
      {"unbalanced", "aten::bad(Tensor x -> Tensor"},
      {"bad_type", "aten::bad(Tensr x) -> Tensor"},
      {"empty", ""},
  };
  for (size_t i = 0; i < sizeof schemas / sizeof *schemas; i++)
    put_text(t, schemas[i][0], schemas[i][1]);
}

/* ---- config: configuration files ---- */

static void config_corpus(void) {
  const char *t = "config";
  put_text(t, "defaults",
           "{\n  \"listen\": [\"tcp://127.0.0.1:7470\"],\n  \"workers\": 0,\n"
           "  \"cuda_workers_per_device\": 1,\n  \"max_frame_bytes\": 1048576,\n"
           "  \"max_literal_bytes\": 65536,\n  \"max_handles\": 65536,\n"
           "  \"max_bytes_held\": 8589934592,\n  \"max_bytes_total\": 0,\n"
           "  \"max_in_flight\": 1024,\n  \"drain_timeout_ms\": 5000,\n"
           "  \"unix_socket_mode\": \"0600\",\n  \"log_level\": \"info\",\n"
           "  \"status\": \"http://127.0.0.1:7471\",\n  \"admin\": null,\n  \"admin_tcp\": \"\",\n"
           "  \"admin_token_file\": \"\",\n  \"plugin_dir\": \"\"\n}\n");
  put_text(t, "listen_many",
           "{\"listen\": [\"tcp://0.0.0.0:1\", \"tcp://[::1]:0\", \"unix:///run/opd.sock\", "
           "\"tcp://localhost:80\"]}");
  put_text(t, "addresses",
           "{\"status\": \"127.0.0.1:0\", \"admin\": \"unix:///tmp/a.sock\", \"admin_tcp\": "
           "\"tcp://[::1]:9000\", \"admin_token_file\": \"/etc/opd/token\", \"plugin_dir\": "
           "\"/usr/lib/opd\"}");
  put_text(t, "limits",
           "{\"max_frame_bytes\": 4096, \"max_handles\": 4294967296, "
           "\"max_bytes_total\": 4611686018427387904, \"max_in_flight\": 1}");
  put_text(t, "out_of_range", "{\"max_frame_bytes\": 4095}");
  put_text(t, "negative", "{\"workers\": -1}");
  put_text(t, "float", "{\"workers\": 1.5}");
  put_text(t, "mode", "{\"unix_socket_mode\": \"0777\", \"log_level\": \"debug\"}");
  put_text(t, "bad_mode", "{\"unix_socket_mode\": \"999\"}");
  put_text(t, "unknown_key", "{\"max_frames\": 1}");
  put_text(t, "duplicate_key", "{\"workers\": 1, \"workers\": 2}");
  put_text(t, "wrong_scheme", "{\"status\": \"unix:///x\", \"listen\": [\"http://x:1\"]}");
  put_text(t, "not_object", "[\"listen\"]");
  put_text(t, "empty_listen", "{\"listen\": []}");
  put_text(t, "long_path",
           "{\"admin\": "
           "\"/"
           "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
           "aaaaaaaaaaaaaaaaaaaaaaaaa\"}");
  put_text(t, "nul_escape", "{\"plugin_dir\": \"/a\\u0000b\"}");
  put_text(t, "not_json", "listen = tcp://127.0.0.1:7470\n");
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s DIR (tests/fuzz/corpus)\n", argv[0]);
    return 2;
  }
  root = argv[1];
  if (mkdir(root, 0755) != 0 && errno != EEXIST) {
    perror(root);
    return 1;
  }
  request_corpus();
  upload_corpus();
  session_corpus();
  client_corpus();
  admin_corpus();
  status_corpus();
  schema_corpus();
  config_corpus();
  return 0;
}

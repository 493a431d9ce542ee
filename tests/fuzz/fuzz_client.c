/* fuzz_client.c: the client library (client/src) against a hostile server. The input is
 * everything the server sends on the connection: its first frame answers the hello of
 * opd_client_connect_fd, the rest answers a fixed script of pipelined requests (a call, an
 * upload, a download into a buffer and one the library allocates, a ping, a release, a
 * dispatch state, a call with results of any kind, a call with a literal and a string,
 * then three adds in a row: request ids 2 to 13, in that order). The client reads these
 * frames by hand (several result-handle replies at once: [Note: Replies taken in a batch])
 * or through protobuf-c ([Note: Hand-packed messages], [Note: Decoding responses]) and raw
 * download bytes straight into the caller's buffer.
 *
 * The driver is one thread over a socketpair: it writes the first frame, connects, submits
 * as many requests as the server's max_in_flight lets it without waiting (a request over
 * the limit would wait for an answer not yet written), then writes the rest in pieces of
 * changing sizes, letting the client read after each, and closes its side: the client sees
 * the same bytes, cut the same way, on every run. Every
 * future must complete (with its results, or an error with a message) before
 * opd_client_wait_all returns; then everything is freed (ASan and LeakSanitizer check the
 * rest).
 *
 * A download the library allocates gets a buffer of the size the server declares, which may be
 * anything (an expanded view of one element downloads as gigabytes; only the pages its bytes
 * fill are touched). Under ASan a huge block costs its shadow memory, so here an allocation
 * over 1 GiB fails (NULL, as malloc may answer anywhere): the future then fails with "cannot
 * allocate the download buffer" and the bytes that follow are read and dropped.
 */
#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "client_internal.h"
#include "fuzz_common.h"
#include "opd/client.h"

#define NREQ 12

static const int64_t shape2[] = {2};
static const float upload_data[2] = {1.0f, 2.0f};
static uint8_t download_buf[64];
static const char *const meta[] = {"Meta"};
static const opd_client_tensor release_handles[] = {1};

const char *__asan_default_options(void);
const char *__asan_default_options(void) {
  return "allocator_may_return_null=1:max_allocation_size_mb=1024";
}

static int submit(opd_client *c, int i, opd_future **f) {
  static const opd_client_literal literal = {6 /* float32 */, 1, shape2, upload_data, 8};
  opd_client_value add[2] = {opd_cv_tensor(1), opd_cv_tensor(2)};
  opd_client_value split[2] = {opd_cv_tensor(1), opd_cv_int(1)};
  opd_client_value div[3] = {opd_cv_tensor(1), opd_cv_literal(&literal), opd_cv_str("floor")};
  switch (i) {
  case 0: return opd_client_call_async(c, "aten::add.Tensor", add, 2, NULL, NULL, f);
  case 1: return opd_client_upload_async(c, 6, shape2, 1, upload_data, 8, NULL, NULL, NULL, f);
  case 2: return opd_client_download_async(c, 1, download_buf, sizeof download_buf, NULL, NULL, f);
  case 3: return opd_client_download_async(c, 2, NULL, 0, NULL, NULL, f);
  case 4: return opd_client_ping_async(c, "fuzz", 4, NULL, NULL, f);
  case 5: return opd_client_release_async(c, release_handles, 1, NULL, NULL, f);
  case 6: return opd_client_set_dispatch_state_async(c, meta, 1, NULL, 0, NULL, NULL, f);
  case 7: return opd_client_call_async(c, "aten::split.Tensor", split, 2, NULL, NULL, f);
  case 8: return opd_client_call_async(c, "aten::div.Tensor_mode", div, 3, NULL, NULL, f);
  default: return opd_client_call_async(c, "aten::add.Tensor", add, 2, NULL, NULL, f);
  }
}

static volatile uint8_t sink; /* what was read, so that the reads happen */

/* Reads every byte a call's results hold (ASan checks the pointers). */
static void check_results(const opd_future *f) {
  size_t n = 0;
  const opd_client_value *v = opd_future_results(f, &n);
  fuzz_check(n == 0 || v != NULL, "%zu results and no array", n);
  uint8_t sum = 0;
  for (size_t i = 0; i < n; i++) {
    switch (v[i].kind) {
    case OPD_CV_STR: sum += (uint8_t)strlen(v[i].u.s); break;
    case OPD_CV_INTS:
      for (size_t k = 0; k < v[i].len; k++) sum += (uint8_t)v[i].u.ints[k];
      break;
    case OPD_CV_DOUBLES:
      for (size_t k = 0; k < v[i].len; k++) sum += (uint8_t)(v[i].u.doubles[k] != 0);
      break;
    case OPD_CV_BOOLS:
      for (size_t k = 0; k < v[i].len; k++) sum += v[i].u.bools[k];
      break;
    case OPD_CV_TENSORS:
    case OPD_CV_OPT_TENSORS:
      for (size_t k = 0; k < v[i].len; k++) sum += (uint8_t)v[i].u.tensors[k];
      break;
    case OPD_CV_LITERAL: {
      const opd_client_literal *l = v[i].u.literal;
      fuzz_check(l->ndim >= 0 && l->ndim <= OPD_CLIENT_MAX_DIMS, "a literal of %d dims", l->ndim);
      for (int k = 0; k < l->ndim; k++) sum += (uint8_t)l->shape[k];
      for (size_t k = 0; k < l->nbytes; k++) sum += ((const uint8_t *)l->data)[k];
      break;
    }
    default: fuzz_check(v[i].kind <= OPD_CV_DEVICE, "a result of kind %d", (int)v[i].kind);
    }
  }
  sink = sum;
}

static void check_future(opd_future *f, int i) {
  fuzz_check(opd_future_done(f), "request %d not done after wait_all", i + 2);
  int rc = opd_future_status(f);
  const char *msg = opd_future_error(f), *op = opd_future_error_op(f);
  fuzz_check(msg && op, "a future without a message or op");
  (void)strlen(msg), (void)strlen(op); /* (a server's error may say nothing) */
  fuzz_check(rc <= 0, "request %d completed with %d", i + 2, rc);
  if (rc != 0) return;
  const opd_client_tensor_info *info = opd_future_tensor_info(f);
  if (i == 0 || i >= 7) check_results(f);
  if (i == 1) fuzz_check(opd_future_handle(f) != 0, "an upload without a handle");
  if (i == 2 || i == 3) {
    fuzz_check(info && info->ndim >= 0 && info->ndim <= OPD_CLIENT_MAX_DIMS, "a download's rank");
    if (i == 2) fuzz_check(info->nbytes <= sizeof download_buf, "a download past its buffer");
    uint8_t *data = opd_future_take_data(f);
    if (i == 3 && info->nbytes) {
      fuzz_check(data != NULL, "a download of %llu bytes without its data",
                 (unsigned long long)info->nbytes);
      sink = data[info->nbytes - 1];
    }
    free(data);
  }
}

static void write_all(int fd, const uint8_t *p, size_t n) {
  while (n) { /* what the socket takes; the rest is lost as if the server died */
    ssize_t w = write(fd, p, n);
    if (w <= 0) return;
    p += w;
    n -= (size_t)w;
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  int sv[2];
  fuzz_check(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == 0, "socketpair");
  int server = sv[1], big = 4 << 20;
  setsockopt(server, SOL_SOCKET, SO_SNDBUF, &big, sizeof big);
  fcntl(server, F_SETFL, fcntl(server, F_GETFL) | O_NONBLOCK);
  size_t first = size;
  if (size >= 4) {
    uint64_t len = (uint64_t)data[0] | (uint64_t)data[1] << 8 | (uint64_t)data[2] << 16 |
                   (uint64_t)data[3] << 24;
    if (4 + len < size) first = (size_t)(4 + len);
  }
  write_all(server, data, first);
  if (first == size) shutdown(server, SHUT_WR);
  opd_client_options o = {.client_name = "fuzz", .connect_timeout_ms = 2000};
  opd_client *c = NULL;
  if (opd_client_connect_fd(sv[0], &o, &c) != 0) {
    fuzz_check(c == NULL, "a failed connect with a client");
    (void)strlen(opd_client_last_error());
    close(server);
    return 0;
  }
  opd_future *f[NREQ] = {NULL};
  for (int i = 0; i < NREQ && c->pending < c->max_in_flight; i++) submit(c, i, &f[i]);
  /* the rest in pieces of 1, 3, 8, 64 and 4096 bytes, the client reading between them: frames
   * and raw bytes arrive cut anywhere, or several in one read */
  static const size_t pieces[] = {1, 3, 8, 64, 4096};
  for (size_t at = first, k = 0; at < size; k = (k + 1) % 5) {
    size_t n = size - at < pieces[k] ? size - at : pieces[k];
    write_all(server, data + at, n);
    at += n;
    opd_client_poll(c, 0);
  }
  shutdown(server, SHUT_WR);
  opd_client_wait_all(c);
  for (int i = 0; i < NREQ; i++)
    if (f[i]) check_future(f[i], i);
  for (int i = 0; i < NREQ; i++) opd_future_free(f[i]);
  opd_client_close(c);
  close(server);
  return 0;
}

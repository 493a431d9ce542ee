/* fuzz_session.c: a session's request stream, run as the daemon runs it, without a socket.
 *
 * The input is what a client writes on its connection after hello: frames (a 4-byte
 * little-endian length, then a Request), an Upload's raw bytes right after its frame. Each
 * frame is decoded by opd__request_decode; an Upload header is checked by opd__upload_check
 * and its bytes reserved and read into a new tensor as opd__conn_begin_upload does
 * (server/src/conn_upload.c); every request a worker runs (calls, uploads, downloads,
 * releases, dispatch states, synchronize) goes through opd__execute (server/src/execute.c)
 * on one session, so a call's arguments are decoded against its operator's schema and the
 * call runs through the dispatcher with the session's memory budget installed.
 *
 * The session starts with a few tensors (made afresh for each input): Meta tensors (any shape
 * function runs on them with hostile sizes, strides and dims, and computes nothing) and small CPU
 * tensors, among them a transpose and an expand (downloads of strided views are gathered). Later
 * requests use the handles earlier ones made. A CPU kernel's work grows with its operands' elements
 * and an expand makes many from few ([Note: Checked arithmetic], "Not bounded", in
 * docs/SECURITY.md), so a CPU result of more than MAX_CPU_NUMEL elements is released at once,
 * as a client would, before a later call can loop over it.
 *
 * Checked: every call that runs on the CPU gives results of the sizes, strides and dtypes its
 * Meta kernels give (check_meta_agrees); every response decodes, answers its request's id with the
 * body its kind takes or an error whose strings are UTF-8 and whose code is not INTERNAL; the
 * budget and the dispatch state are uninstalled after each request; a download's bytes (its
 * gathered chunks, or its storage) are the tensor's elements in row-major order; once every handle
 * is dropped the session holds no bytes, and once it is destroyed the CPU allocator holds only the
 * starting tensors.
 */
#include "arena.h"
#include "connection.h"
#include "execute.h"
#include "fuzz_common.h"
#include "fuzz_execute.h"
#include "gather.h"
#include "opd/allocator.h"
#include "opd/dispatcher.h"
#include "opd/error.h"
#include "opd/kernels.h"
#include "opd/memory.h"
#include "opd/server.h"
#include "opd/tensor.h"
#include "session.h"

#define MAX_CPU_NUMEL 65536

static opd_server_config cfg;

static opd_tensor *make(const int64_t *sizes, int ndim, opd_dtype dtype, int device) {
  opd_tensor *t = NULL;
  int rc = opd_tensor_empty(sizes, ndim, dtype, (opd_device){(int16_t)device, -1}, &t);
  fuzz_check(rc == 0, "a starting tensor: %s", opd_last_error());
  if (device == OPD_DEVICE_CPU && t->numel) {
    uint8_t *p = opd_tensor_data(t);
    size_t n = (size_t)t->numel * opd_dtype_size(dtype);
    for (size_t i = 0; i < n; i++) p[i] = dtype == OPD_BOOL ? (uint8_t)(i & 1) : (uint8_t)(i * 7);
  }
  return t;
}

static opd_tensor *view(opd_tensor *base, const int64_t *sizes, const int64_t *strides, int ndim) {
  opd_tensor *t = NULL;
  int rc = opd_tensor_view_of(base, sizes, strides, ndim, 0, &t);
  fuzz_check(rc == 0, "a starting view: %s", opd_last_error());
  return t;
}

/* Gives the session its starting tensors, handles 1 to 9 in this order (made afresh for each
 * input: calls may write into them; tests/fuzz/make_corpus.c names them). */
static void hold_start(opd__session *s) {
  const int64_t s23[] = {2, 3}, s32[] = {3, 2}, t32[] = {1, 3}, s5[] = {5}, s3[] = {3}, s1[] = {1},
                s4[] = {4}, wide[] = {64, 1024}, zero2[] = {0, 0},
                huge[] = {(int64_t)1 << 40, (int64_t)1 << 20};
  opd_tensor *t[9], *one = make(s1, 1, OPD_FLOAT32, OPD_DEVICE_CPU);
  t[0] = make(s23, 2, OPD_FLOAT32, OPD_DEVICE_META);
  t[1] = make(huge, 2, OPD_FLOAT32, OPD_DEVICE_META);
  t[2] = make(s5, 1, OPD_INT64, OPD_DEVICE_META);
  t[3] = make(s23, 2, OPD_FLOAT32, OPD_DEVICE_CPU);
  t[4] = make(s3, 1, OPD_INT64, OPD_DEVICE_CPU);
  for (int i = 0; i < 3; i++) ((int64_t *)opd_tensor_data(t[4]))[i] = i;
  t[5] = view(t[3], s32, t32, 2);   /* the transpose of handle 4 */
  t[6] = view(one, wide, zero2, 2); /* [1] expanded to [64, 1024] */
  t[7] = make(s4, 1, OPD_BOOL, OPD_DEVICE_CPU);
  t[8] = make(NULL, 0, OPD_FLOAT64, OPD_DEVICE_CPU);
  opd_tensor_release(one);
  for (int i = 0; i < 9; i++) {
    uint64_t reserved = 0, handle;
    fuzz_check(opd__session_hold(s, t[i], &reserved, &handle) == 0 && handle == (uint64_t)i + 1,
               "holding a starting tensor: %s", opd_last_error()); /* it takes t[i] */
  }
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc, (void)argv;
  fuzz_execute_init(&cfg);
  cfg.max_literal_bytes = 4096;
  cfg.max_handles = 64;
  cfg.max_bytes_held = 8u << 20;
  return 0;
}

/* ---- checks of what a request left ---- */

/* t's elements in row-major order, walked by its strides. */
static uint8_t *row_major(const opd_tensor *t, size_t esize) {
  size_t n = (size_t)t->numel;
  uint8_t *out = malloc(n * esize + 1);
  const uint8_t *base = opd_tensor_data(t);
  int64_t idx[OPD_MAX_DIMS] = {0};
  for (size_t e = 0; e < n; e++) {
    int64_t off = 0;
    for (int d = 0; d < t->ndim; d++) off += idx[d] * opd_tensor_strides(t)[d];
    memcpy(out + e * esize, base + off * (int64_t)esize, esize);
    for (int d = t->ndim - 1; d >= 0 && ++idx[d] == opd_tensor_sizes(t)[d]; d--) idx[d] = 0;
  }
  return out;
}

static void check_download(opd__session *s, opd__job *j, const Opd__V1__DownloadReply *d) {
  opd_tensor *t = opd__session_lookup(s, j->req->download->handle);
  fuzz_check(t != NULL && j->tensor == t, "a download of a tensor its handle does not name");
  size_t esize = opd_dtype_size(opd_tensor_dtype(t));
  fuzz_check(d->nbytes == j->raw_len && d->nbytes == (uint64_t)t->numel * esize,
             "a download of %llu bytes sends %zu", (unsigned long long)d->nbytes, j->raw_len);
  fuzz_check(d->n_shape == (size_t)t->ndim && d->n_strides == (size_t)t->ndim, "a download's rank");
  for (int i = 0; i < t->ndim; i++)
    fuzz_check(d->shape[i] == opd_tensor_sizes(t)[i], "a download's shape");
  if (!j->raw_len) return;
  uint8_t *sent = malloc(j->raw_len);
  if (j->gather) { /* [Note: Downloads of strided views] */
    size_t at = 0;
    while (opd__gather_left(j->gather)) {
      const void *chunk;
      size_t n = opd__gather_next(j->gather, &chunk);
      fuzz_check(n > 0 && n <= OPD__GATHER_CHUNK && n <= j->raw_len - at, "a chunk of %zu bytes",
                 n);
      memcpy(sent + at, chunk, n);
      at += n;
    }
    fuzz_check(at == j->raw_len, "the chunks hold %zu of %zu bytes", at, j->raw_len);
  } else {
    fuzz_check(j->raw != NULL && opd_tensor_is_contiguous(t), "a download sent from storage");
    memcpy(sent, j->raw, j->raw_len);
  }
  uint8_t *want = row_major(t, esize);
  fuzz_check(memcmp(sent, want, j->raw_len) == 0, "a download's bytes are not its elements");
  free(want);
  free(sent);
}

/* [the file's comment]: a CPU result past MAX_CPU_NUMEL elements is released at once */
static void bound_result(opd__session *s, uint64_t handle) {
  opd_tensor *t = handle ? opd__session_lookup(s, handle) : NULL;
  if (t && opd_tensor_device(t).type == OPD_DEVICE_CPU && t->numel > MAX_CPU_NUMEL)
    opd__session_drop(s, handle);
}

static void bound_results(opd__session *s, const Opd__V1__CallReply *r) {
  for (size_t i = 0; i < r->n_results; i++) {
    const Opd__V1__IValue *v = r->results[i];
    if (v->value_case == OPD__V1__IVALUE__VALUE_TENSOR) bound_result(s, v->tensor);
    if (v->value_case == OPD__V1__IVALUE__VALUE_TENSORS)
      for (size_t k = 0; k < v->tensors->n_handles; k++) bound_result(s, v->tensors->handles[k]);
    if (v->value_case == OPD__V1__IVALUE__VALUE_OPTIONAL_TENSORS)
      for (size_t k = 0; k < v->optional_tensors->n_handles; k++)
        bound_result(s, v->optional_tensors->handles[k]);
  }
}

static Opd__V1__Response__BodyCase reply_of(opd__job_kind kind) {
  switch (kind) {
  case OPD__JOB_CALL: return OPD__V1__RESPONSE__BODY_CALL;
  case OPD__JOB_UPLOAD: return OPD__V1__RESPONSE__BODY_UPLOAD;
  case OPD__JOB_DOWNLOAD: return OPD__V1__RESPONSE__BODY_DOWNLOAD;
  default: return OPD__V1__RESPONSE__BODY_ACK;
  }
}

/* Runs a worker's request, checks its response and what it left; returns the response. */
static Opd__V1__Response *run(opd__session *s, opd__job *j) {
  Opd__V1__Response *r = fuzz_execute(j, reply_of(j->kind));
  if (r->body_case == OPD__V1__RESPONSE__BODY_ERROR)
    fuzz_check(!j->tensor && !j->gather && !j->raw_len, "an error that sends a tensor");
  if (r->body_case == OPD__V1__RESPONSE__BODY_DOWNLOAD) check_download(s, j, r->download);
  if (r->body_case == OPD__V1__RESPONSE__BODY_CALL) bound_results(s, r->call);
  if (r->body_case == OPD__V1__RESPONSE__BODY_UPLOAD) bound_result(s, r->upload->handle);
  return r;
}

/* The tensor handles of a call's results, in order (at most max). */
static size_t result_handles(const Opd__V1__CallReply *r, uint64_t *h, size_t max) {
  size_t n = 0;
  for (size_t i = 0; i < r->n_results; i++) {
    const Opd__V1__IValue *v = r->results[i];
    if (v->value_case == OPD__V1__IVALUE__VALUE_TENSOR && n < max) h[n++] = v->tensor;
    for (size_t k = 0; v->value_case == OPD__V1__IVALUE__VALUE_TENSORS && k < v->tensors->n_handles;
         k++)
      if (n < max) h[n++] = v->tensors->handles[k];
  }
  return n;
}

/* [Note: How a kernel is written] (kernels/src/kernel_util.h): an operator's Meta kernel is
 * its shape function, which its CPU kernel calls too, so a call that ran on the CPU runs again
 * with Meta in the session's include set (every kernel it reaches is then the Meta one, on the
 * same operands) and, where that succeeds, must give results of the same sizes, strides and
 * dtypes. The Meta results are released. */
static void check_meta_agrees(opd__session *s, const uint8_t *frame, size_t len,
                              const Opd__V1__CallReply *cpu) {
  uint64_t hc[16], hm[16];
  size_t nc = result_handles(cpu, hc, 16);
  if (!nc) return;
  opd__job *j = fuzz_job_new(s, len, OPD__JOB_CALL);
  fuzz_check(opd__request_decode(&j->arena, frame, len, cfg.max_graph_nodes, &j->req, &j->id) == 0,
             "a frame decoded twice");
  opd_dispatch_key meta;
  fuzz_check(opd_key_from_name("Meta", &meta) == 0, "the Meta key");
  opd_local_dispatch_state saved = s->dispatch;
  s->dispatch.included = opd_keyset_union(saved.included, opd_keyset_of(meta));
  Opd__V1__Response *r = run(s, j);
  s->dispatch = saved;
  if (r->body_case == OPD__V1__RESPONSE__BODY_CALL) {
    size_t nm = result_handles(r->call, hm, 16);
    fuzz_check(nm == nc, "%s: %zu tensors on the CPU, %zu on Meta", j->req->call->op, nc, nm);
    for (size_t i = 0; i < nc; i++) {
      const opd_tensor *a = opd__session_lookup(s, hc[i]), *b = opd__session_lookup(s, hm[i]);
      if (!a || !b) continue; /* released as too large, or the session's limit */
      bool same = a->ndim == b->ndim && a->dtype == b->dtype;
      for (int d = 0; same && d < a->ndim; d++)
        same = opd_tensor_sizes(a)[d] == opd_tensor_sizes(b)[d] &&
               opd_tensor_strides(a)[d] == opd_tensor_strides(b)[d];
      fuzz_check(same, "%s: result %zu differs between the CPU and Meta", j->req->call->op, i);
    }
    for (size_t i = 0; i < nm; i++) opd__session_drop(s, hm[i]);
  }
  fuzz_response_free(r);
  fuzz_job_free(j);
}

/* An upload's header, then its raw bytes from the stream, as begin_upload and the reads
 * after it. False when the stream ends first (the daemon would wait, then close). */
static bool upload(opd__session *s, opd__job *j, const uint8_t **p, const uint8_t *end) {
  const Opd__V1__Upload *u = j->req->upload;
  uint64_t nbytes = 0;
  opd_device dev;
  int rc = opd__upload_check(u, &nbytes, &dev);
  if (rc == 0 && (rc = opd__session_reserve(s, nbytes)) == 0) {
    j->reserved = nbytes;
    rc = opd_tensor_empty(u->shape, (int)u->n_shape, (opd_dtype)u->dtype,
                          (opd_device){OPD_DEVICE_CPU, -1}, &j->tensor);
  }
  uint64_t left = (uint64_t)(end - *p);
  if (rc < 0) { /* refused: its declared bytes are skipped */
    opd__job_error(j, opd__error_code(rc), NULL, "%s", opd_last_error());
    fuzz_response_free(fuzz_check_response(j->out, j->out_len, j->id));
    if (u->nbytes > left) return false;
    *p += u->nbytes;
    return true;
  }
  if (nbytes > left) return false;
  if (nbytes) memcpy(opd_tensor_data(j->tensor), *p, nbytes);
  *p += nbytes;
  j->kind = OPD__JOB_UPLOAD;
  j->device = dev;
  fuzz_response_free(run(s, j));
  return true;
}

static opd__job_kind worker_kind(Opd__V1__Request__BodyCase body) {
  switch (body) {
  case OPD__V1__REQUEST__BODY_CALL: return OPD__JOB_CALL;
  case OPD__V1__REQUEST__BODY_DOWNLOAD: return OPD__JOB_DOWNLOAD;
  case OPD__V1__REQUEST__BODY_RELEASE: return OPD__JOB_RELEASE;
  case OPD__V1__REQUEST__BODY_SET_DISPATCH_STATE: return OPD__JOB_DISPATCH_STATE;
  case OPD__V1__REQUEST__BODY_SYNCHRONIZE: return OPD__JOB_SYNCHRONIZE;
  default: return OPD__JOB_LOCAL; /* hello and ping are answered by the loop */
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  opd_memory_stats m;
  opd_memory_stats_get(OPD_DEVICE_CPU, &m);
  uint64_t cpu_bytes = m.in_use;
  opd__session s;
  opd__session_init(&s, 1, &cfg);
  hold_start(&s);
  const uint8_t *p = data, *end = data + size;
  bool more = true;
  while (more && end - p >= 4) {
    size_t len = (size_t)p[0] | (size_t)p[1] << 8 | (size_t)p[2] << 16 | (size_t)p[3] << 24;
    p += 4;
    if (len > cfg.max_frame_bytes || len > (size_t)(end - p)) break;
    opd__job *j = fuzz_job_new(&s, len, OPD__JOB_LOCAL);
    Opd__V1__Request *req;
    int rc = opd__request_decode(&j->arena, p, len, cfg.max_graph_nodes, &req, &j->id);
    p += len;
    j->req = req;
    if (rc < 0) { /* refused; the session goes on */
      opd__job_error(j, opd__error_code(rc), NULL, "%s", opd_last_error());
      fuzz_response_free(fuzz_check_response(j->out, j->out_len, j->id));
    } else if (req->body_case == OPD__V1__REQUEST__BODY_UPLOAD) {
      more = upload(&s, j, &p, end);
    } else if ((j->kind = worker_kind(req->body_case)) != OPD__JOB_LOCAL) {
      Opd__V1__Response *r = run(&s, j);
      if (j->kind == OPD__JOB_CALL && r->body_case == OPD__V1__RESPONSE__BODY_CALL)
        check_meta_agrees(&s, p - len, len, r->call);
      fuzz_response_free(r);
    }
    fuzz_job_free(j);
  }
  for (uint64_t h = 1; h < s.next_handle; h++) opd__session_drop(&s, h);
  fuzz_check(atomic_load(&s.bytes_held) == 0, "a session without handles holds %llu bytes",
             (unsigned long long)atomic_load(&s.bytes_held));
  opd__session_destroy(&s);
  opd_memory_stats_get(OPD_DEVICE_CPU, &m);
  fuzz_check(m.in_use == cpu_bytes, "the CPU allocator holds %llu bytes, %llu before the input",
             (unsigned long long)m.in_use, (unsigned long long)cpu_bytes);
  return 0;
}

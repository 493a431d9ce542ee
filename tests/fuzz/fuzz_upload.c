/* fuzz_upload.c: an Upload header (the message's bytes) checked as the daemon checks it
 * before it reads the raw bytes (opd__upload_check, server/src/conn_upload.c), then the
 * tensor those bytes would go into made as begin_upload makes it (under a small CPU limit).
 *
 * The check must agree with the protocol (proto/opd.proto: nbytes = product(shape) x element
 * size, dtype one of DType, device the CPU or CUDA), worked out here with 128-bit
 * arithmetic: a header it takes is right, and a right header whose products fit in int64 is
 * taken; the tensor made has exactly the shape and bytes the header declares.
 */
#include "arena.h"
#include "connection.h"
#include "fuzz_common.h"
#include "opd/allocator.h"
#include "opd/error.h"
#include "opd/tensor.h"

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc, (void)argv;
  opd_cpu_allocator_set_limit(64u << 20);
  return 0;
}

/* What the protocol says of the header, with every product exact: -1 when it is wrong, 0
 * when it is right but a partial product passes int64 (the daemon may refuse it: the element
 * count as it multiplies, or a contiguous stride, the product of the trailing sizes, a 0 taken
 * as 1, as in [0, 2^62, 2^62]), 1 when it is right and fits. */
static int expected(const Opd__V1__Upload *u) {
  if (u->device && u->device->type != OPD_DEVICE_CPU) return -1; /* no CUDA in this build */
  if (u->device && (u->device->index < -1 || u->device->index > 0)) return -1;
  if (!opd_dtype_valid((int)u->dtype) || u->n_shape > OPD_MAX_DIMS) return -1;
  unsigned __int128 numel = 1;
  bool fits = true;
  for (size_t i = 0; i < u->n_shape; i++) {
    if (u->shape[i] < 0) return -1;
    numel *= (unsigned __int128)u->shape[i];
    if (numel > INT64_MAX) { /* saturated: a later 0 still brings it back */
      fits = false;
      numel = (unsigned __int128)INT64_MAX + 1;
    }
  }
  unsigned __int128 stride = 1;
  for (size_t i = u->n_shape; i-- > 1 && fits;) {
    stride *= (unsigned __int128)(u->shape[i] ? u->shape[i] : 1); /* c10: max(size, 1) */
    fits = stride <= INT64_MAX;
  }
  unsigned __int128 bytes = numel * opd_dtype_size((opd_dtype)u->dtype);
  if (bytes > INT64_MAX) fits = false;
  if (bytes != u->nbytes) return -1;
  return fits ? 1 : 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  opd__arena arena;
  opd__arena_init(&arena);
  opd__arena_reset(&arena, 8 * size + 16384);
  Opd__V1__Upload *u = opd__v1__upload__unpack(&arena.pb, size, data);
  if (u) {
    uint64_t nbytes = 1;
    opd_device dev = {-1, -1};
    int rc = opd__upload_check(u, &nbytes, &dev);
    int want = expected(u);
    if (rc < 0) {
      fuzz_check(rc == OPD_EINVAL || rc == OPD_EUNAVAILABLE, "the check answered %d: %s", rc,
                 opd_last_error());
      fuzz_check_text("the check's message", opd_last_error());
      fuzz_check(want <= 0, "a right header refused: %s", opd_last_error());
    } else {
      fuzz_check(rc == 0, "the check answered %d", rc);
      fuzz_check(want != -1, "a wrong header taken (%llu bytes)", (unsigned long long)nbytes);
      fuzz_check(nbytes == u->nbytes, "the check found %llu bytes, the header says %llu",
                 (unsigned long long)nbytes, (unsigned long long)u->nbytes);
      fuzz_check(dev.type == OPD_DEVICE_CPU && dev.index == -1, "an upload to device %d:%d",
                 dev.type, dev.index);
      opd_tensor *t = NULL;
      rc = opd_tensor_empty(u->shape, (int)u->n_shape, (opd_dtype)u->dtype, dev, &t);
      fuzz_check(rc == 0 || rc == OPD_ERESOURCE || (rc == OPD_EINVAL && want == 0),
                 "the tensor of a checked header: %d: %s", rc, opd_last_error());
      if (t) {
        fuzz_check(t->ndim == (int)u->n_shape, "a tensor of %d dims for %zu", t->ndim, u->n_shape);
        fuzz_check((uint64_t)t->numel * opd_dtype_size(opd_tensor_dtype(t)) == nbytes,
                   "a tensor of other bytes");
        if (nbytes) memset(opd_tensor_data(t), 0xa5, nbytes); /* where the raw bytes go */
        opd_tensor_release(t);
      }
    }
  }
  opd__arena_destroy(&arena);
  return 0;
}

/* index_shape.c: the CPU kernels of flip, roll, tril and triu (checks in
 * kernels/meta/index_shape_meta.c). Each walks its contiguous output and reads self where
 * the operator maps the position, whatever self's strides. */
#include <string.h>

#include "index_walk.h"
#include "meta/index_shape_meta.h"
#include "src/parallel.h"

static const opd_device cpu_device = {OPD_DEVICE_CPU, -1};

static int alloc_like(opd_tensor *self, opd_tensor **out) {
  opd_out_spec spec = {.ndim = self->ndim, .dtype = opd_tensor_dtype(self)};
  memcpy(spec.sizes, opd_tensor_sizes(self), (size_t)self->ndim * sizeof(int64_t));
  return opd__alloc_output(&spec, cpu_device, out);
}

typedef enum shape_kind { KIND_COPY, KIND_ROLL, KIND_ROLL_FLAT, KIND_TRIL, KIND_TRIU } shape_kind;

typedef struct shape_job {
  opd__walk w; /* out (op 0, contiguous) and self (op 1) */
  shape_kind kind;
  const char *src;
  char *dst;
  size_t es;
  int64_t base;                   /* KIND_COPY: self's offset of out's first element */
  int64_t shift[OPD_MAX_DIMS];    /* KIND_ROLL(_FLAT) */
  const int64_t *sizes, *strides; /* self's */
  int ndim;
  int64_t numel, diagonal;
} shape_job;

/* self's element offset of the element that the flattened roll brings to position p */
static int64_t flat_source(const shape_job *j, int64_t p) {
  int64_t q = p - j->shift[0];
  if (q < 0) q += j->numel;
  int64_t off = 0;
  for (int d = j->ndim - 1; d >= 0; d--) {
    off += (q % j->sizes[d]) * j->strides[d];
    q /= j->sizes[d];
  }
  return off;
}

static void shape_range(void *ctx, int64_t begin, int64_t end) {
  const shape_job *j = ctx;
  opd__walk w = j->w;
  opd__walk_seek(&w, begin);
  for (int64_t p = begin; p < end; p++, opd__walk_next(&w)) {
    char *dst = j->dst + w.off[0] * (int64_t)j->es;
    int64_t src;
    switch (j->kind) {
    case KIND_COPY: src = j->base + w.off[1]; break;
    case KIND_ROLL_FLAT: src = flat_source(j, p); break;
    case KIND_ROLL:
      src = 0;
      for (int d = 0; d < j->ndim; d++) {
        int64_t i = w.idx[d] - j->shift[d];
        src += (i < 0 ? i + j->sizes[d] : i) * j->strides[d];
      }
      break;
    default: {
      int64_t col = w.idx[j->ndim - 1], row = w.idx[j->ndim - 2];
      bool keep = j->kind == KIND_TRIL ? col - row <= j->diagonal : col - row >= j->diagonal;
      if (!keep) {
        memset(dst, 0, j->es);
        continue;
      }
      src = w.off[1];
    }
    }
    memcpy(dst, j->src + src * (int64_t)j->es, j->es);
  }
}

/* Runs the job over a new output like self; strides: self's as the walk reads them. */
static int run_shape(shape_job *j, opd_tensor *self, const int64_t *strides, opd_tensor **out) {
  opd_tensor *r = NULL;
  int rc = alloc_like(self, &r);
  if (rc) return rc;
  if (r->numel > 0) {
    opd__walk_init(&j->w, opd_tensor_sizes(self), self->ndim, 2);
    opd__walk_set_strides(&j->w, 0, opd_tensor_strides(r));
    opd__walk_set_strides(&j->w, 1, strides);
    j->src = opd_tensor_data(self);
    j->dst = opd_tensor_data(r);
    j->es = opd_dtype_size(opd_tensor_dtype(self));
    j->sizes = opd_tensor_sizes(self);
    j->strides = opd_tensor_strides(self);
    j->ndim = self->ndim;
    j->numel = self->numel;
    opd__parallel_for(0, r->numel, OPD_GRAIN_ELEMENTWISE, shape_range, j);
  }
  *out = r;
  return 0;
}

int opd__cpu_flip(const opd_kernel_ctx *ctx, opd_tensor *self, opd_int_list dims,
                  opd_tensor **out) {
  (void)ctx;
  bool flipped[OPD_MAX_DIMS];
  int rc = opd__flip_meta(self, dims, flipped);
  if (rc) return rc;
  /* self read backwards along flipped dims: from their last element, with negated strides */
  shape_job j = {.kind = KIND_COPY};
  int64_t strides[OPD_MAX_DIMS];
  for (int d = 0; d < self->ndim; d++) {
    int64_t size = opd_tensor_sizes(self)[d], st = opd_tensor_strides(self)[d];
    strides[d] = flipped[d] ? -st : st;
    if (flipped[d] && size > 0) j.base += (size - 1) * st; /* inside self's storage */
  }
  return run_shape(&j, self, strides, out);
}

int opd__cpu_roll(const opd_kernel_ctx *ctx, opd_tensor *self, opd_int_list shifts,
                  opd_int_list dims, opd_tensor **out) {
  (void)ctx;
  shape_job j = {.kind = KIND_ROLL};
  bool flat;
  int rc = opd__roll_meta(self, shifts, dims, j.shift, &flat);
  if (rc) return rc;
  if (flat) j.kind = KIND_ROLL_FLAT;
  return run_shape(&j, self, opd_tensor_strides(self), out);
}

int opd__cpu_tril(const opd_kernel_ctx *ctx, opd_tensor *self, int64_t diagonal, opd_tensor **out) {
  (void)ctx;
  int rc = opd__tril_meta(self);
  shape_job j = {.kind = KIND_TRIL, .diagonal = diagonal};
  return rc ? rc : run_shape(&j, self, opd_tensor_strides(self), out);
}

int opd__cpu_triu(const opd_kernel_ctx *ctx, opd_tensor *self, int64_t diagonal, opd_tensor **out) {
  (void)ctx;
  int rc = opd__tril_meta(self);
  shape_job j = {.kind = KIND_TRIU, .diagonal = diagonal};
  return rc ? rc : run_shape(&j, self, opd_tensor_strides(self), out);
}

/* index_scatter.c: the CPU kernels of gather, scatter (src, value, reduce), scatter_, scatter_add,
 * scatter_add_, scatter_reduce.two, index_add, index_copy and index_fill_ (checks and shapes in
 * kernels/meta/index_scatter_meta.c). Out-of-place operators copy self into a new contiguous
 * output and scatter into it.
 *
 * [Note: The order of scatter's writes]
 * ATen's CPU kernels walk every position of index but the scattered dimension (in parallel:
 * those write disjoint elements of self) and, within one, along the dimension in order, so
 * that duplicate indices combine (or, without a reduction, the last write wins) in index
 * order. These kernels walk the same way, so their results are PyTorch's bit for bit, floats
 * included. Each index is checked before its element is touched; a bad one stops the walk and
 * the kernel fails with PyTorch's error ("index 5 is out of bounds for dimension 1 with size
 * 3"; an in-place operator may have written the elements before it, as in PyTorch). */
#include <stdatomic.h>
#include <string.h>

#include "index_walk.h"
#include "meta/index_scatter_meta.h"
#include "opd/allocator.h"
#include "opd/checked.h"
#include "src/parallel.h"

static const opd_device cpu_device = {OPD_DEVICE_CPU, -1};

/* The first bad index met by any thread. */
typedef struct bad_index {
  atomic_int seen;
  int64_t value;
} bad_index;

static void bad_index_set(bad_index *b, int64_t v) {
  int expected = 0;
  if (atomic_compare_exchange_strong(&b->seen, &expected, 1)) b->value = v;
}

/* ---- gather and scatter: one walk over index ---- */

typedef struct scatter_job {
  opd__walk outer;  /* index's positions with dim held at 0: ops index, src (or out), self */
  int64_t dim, len; /* the dimension and index's size along it */
  int64_t limit;    /* self's size along dim */
  int64_t istride, sstride, tstride; /* along dim: index, src (or out), self */
  const char *index;
  char *self;        /* the tensor indexed through index (gather: read; scatter: written) */
  char *other;       /* gather: out (written); scatter: src (read), or NULL */
  const char *value; /* scatter with a value: the element */
  opd_dtype dtype;
  bool gather;
  opd__reduce_op op;
  int64_t *counts; /* scatter_reduce's mean: scatters per element of (contiguous) self */
  bad_index bad;
} scatter_job;

static void scatter_range(void *ctx, int64_t begin, int64_t end) {
  scatter_job *j = ctx;
  opd__walk w = j->outer;
  size_t es = opd_dtype_size(j->dtype);
  opd__walk_seek(&w, begin);
  for (int64_t p = begin; p < end; p++, opd__walk_next(&w)) {
    for (int64_t k = 0; k < j->len; k++) {
      if (atomic_load_explicit(&j->bad.seen, memory_order_relaxed)) return;
      int64_t i = opd__index_at(j->index, OPD_INT64, w.off[0] + k * j->istride);
      if (i < 0 || i >= j->limit) {
        bad_index_set(&j->bad, i);
        return;
      }
      int64_t t = w.off[2] + i * j->tstride;
      char *other = j->other ? j->other + (w.off[1] + k * j->sstride) * (int64_t)es : NULL;
      if (j->gather) {
        memcpy(other, j->self + t * (int64_t)es, es);
      } else {
        opd__elem_reduce(j->self + t * (int64_t)es, other ? other : j->value, j->dtype, j->op);
        if (j->counts) j->counts[t]++;
      }
    }
  }
}

/* Runs a gather (out, self) or a scatter (self, src or value) job; dim is wrapped. */
static int run_scatter(bool gather, opd_tensor *self, int64_t dim, opd_tensor *index,
                       opd_tensor *other, const char *value, opd__reduce_op op, int64_t *counts) {
  if (index->numel == 0) return 0;
  scatter_job j = {.dim = dim,
                   .gather = gather,
                   .op = op,
                   .counts = counts,
                   .dtype = opd_tensor_dtype(self),
                   .index = opd_tensor_data(index),
                   .self = opd_tensor_data(self),
                   .other = other ? opd_tensor_data(other) : NULL,
                   .value = value};
  atomic_init(&j.bad.seen, 0);
  int nd = index->ndim > 0 ? index->ndim : 1;
  int64_t one = 1, zero = 0;
  const int64_t *isz = index->ndim ? opd_tensor_sizes(index) : &one;
  int64_t sizes[OPD_MAX_DIMS];
  memcpy(sizes, isz, (size_t)nd * sizeof *sizes);
  j.len = sizes[dim];
  j.limit = self->ndim ? opd_tensor_sizes(self)[dim] : 1;
  sizes[dim] = 1;
  opd__walk_init(&j.outer, sizes, nd, 3);
  opd_tensor *ops[3] = {index, other, self};
  const int64_t *strides[3];
  for (int k = 0; k < 3; k++) strides[k] = !ops[k] || ops[k]->ndim == 0 ? &zero : NULL;
  int64_t zeros[OPD_MAX_DIMS] = {0};
  for (int k = 0; k < 3; k++) {
    const int64_t *s = strides[k] ? zeros : opd_tensor_strides(ops[k]);
    opd__walk_set_strides(&j.outer, k, s);
  }
  j.istride = index->ndim ? opd_tensor_strides(index)[dim] : 0;
  j.sstride = other && other->ndim ? opd_tensor_strides(other)[dim] : 0;
  j.tstride = self->ndim ? opd_tensor_strides(self)[dim] : 0;
  int64_t outer = index->numel / j.len, grain = OPD_GRAIN_ELEMENTWISE / j.len;
  opd__parallel_for(0, outer, grain > 0 ? grain : 1, scatter_range, &j);
  if (atomic_load(&j.bad.seen))
    return opd_error(OPD_EINVAL, "index %lld is out of bounds for dimension %lld with size %lld",
                     (long long)j.bad.value, (long long)dim, (long long)j.limit);
  return 0;
}

/* The CPU's walk of gather and the scatters without a mean's counts ([Note: A scatter's wrapper
 * and its device's walk] in kernels/meta/index_scatter_meta.h). */
static int scatter_walk(bool gather, opd_tensor *self, int64_t dim, opd_tensor *index,
                        opd_tensor *other, const char *value, opd__reduce_op op) {
  return run_scatter(gather, self, dim, index, other, value, op, NULL);
}

int opd__cpu_gather(const opd_kernel_ctx *ctx, opd_tensor *self, int64_t dim, opd_tensor *index,
                    bool sparse_grad, opd_tensor **out) {
  (void)ctx;
  (void)sparse_grad;
  return opd__gather_run(scatter_walk, self, dim, index, out);
}

int opd__cpu_scatter_src(const opd_kernel_ctx *ctx, opd_tensor *self, int64_t dim,
                         opd_tensor *index, opd_tensor *src, opd_tensor **out) {
  (void)ctx;
  return opd__scatter_run(scatter_walk, self, dim, index, src, NULL, OPD__REDUCE_NONE, out);
}

int opd__cpu_scatter_value(const opd_kernel_ctx *ctx, opd_tensor *self, int64_t dim,
                           opd_tensor *index, opd_scalar value, opd_tensor **out) {
  (void)ctx;
  return opd__scatter_run(scatter_walk, self, dim, index, NULL, &value, OPD__REDUCE_NONE, out);
}

int opd__cpu_scatter_reduce(const opd_kernel_ctx *ctx, opd_tensor *self, int64_t dim,
                            opd_tensor *index, opd_tensor *src, const char *reduce,
                            opd_tensor **out) {
  (void)ctx;
  return opd__scatter_reduce_run(scatter_walk, self, dim, index, src, NULL, reduce, out);
}

int opd__cpu_scatter_value_reduce(const opd_kernel_ctx *ctx, opd_tensor *self, int64_t dim,
                                  opd_tensor *index, opd_scalar value, const char *reduce,
                                  opd_tensor **out) {
  (void)ctx;
  return opd__scatter_reduce_run(scatter_walk, self, dim, index, NULL, &value, reduce, out);
}

int opd__cpu_scatter_add(const opd_kernel_ctx *ctx, opd_tensor *self, int64_t dim,
                         opd_tensor *index, opd_tensor *src, opd_tensor **out) {
  (void)ctx;
  return opd__scatter_run(scatter_walk, self, dim, index, src, NULL, OPD__REDUCE_SUM, out);
}

int opd__cpu_scatter__src(const opd_kernel_ctx *ctx, opd_tensor *self, int64_t dim,
                          opd_tensor *index, opd_tensor *src, opd_tensor **out) {
  (void)ctx;
  return opd__scatter_inplace_run(scatter_walk, self, dim, index, src, OPD__REDUCE_NONE, out);
}

int opd__cpu_scatter_add_(const opd_kernel_ctx *ctx, opd_tensor *self, int64_t dim,
                          opd_tensor *index, opd_tensor *src, opd_tensor **out) {
  (void)ctx;
  return opd__scatter_inplace_run(scatter_walk, self, dim, index, src, OPD__REDUCE_SUM, out);
}

/* ATen's identity of each reduction, written where include_self=False scatters. */
static void reduce_identity(opd__reduce_op op, opd_dtype t, char *buf) {
  if (opd_dtype_is_floating(t)) {
    double v = op == OPD__REDUCE_PROD  ? 1.0
               : op == OPD__REDUCE_MAX ? -INFINITY
               : op == OPD__REDUCE_MIN ? INFINITY
                                       : 0.0;
    opd__elem_put_f(buf, t, v);
    return;
  }
  int64_t lo, hi;
  switch (t) {
  case OPD_BOOL: lo = 0, hi = 1; break;
  case OPD_UINT8: lo = 0, hi = UINT8_MAX; break;
  case OPD_INT8: lo = INT8_MIN, hi = INT8_MAX; break;
  case OPD_INT16: lo = INT16_MIN, hi = INT16_MAX; break;
  case OPD_INT32: lo = INT32_MIN, hi = INT32_MAX; break;
  default: lo = INT64_MIN, hi = INT64_MAX; break;
  }
  int64_t v = op == OPD__REDUCE_PROD  ? 1
              : op == OPD__REDUCE_MAX ? lo
              : op == OPD__REDUCE_MIN ? hi
                                      : 0;
  opd__elem_put_i(buf, t, v);
}

int opd__cpu_scatter_reduce_two(const opd_kernel_ctx *ctx, opd_tensor *self, int64_t dim,
                                opd_tensor *index, opd_tensor *src, const char *reduce,
                                bool include_self, opd_tensor **out) {
  (void)ctx;
  opd__reduce_op op;
  bool mean;
  int64_t d;
  int rc = opd__scatter_meta(self, dim, index, src, &d);
  if (rc == 0) rc = opd__scatter_reduce_arg(reduce, true, &op, &mean);
  opd_dtype t = opd_tensor_dtype(self);
  if (rc == 0 && mean && t == OPD_BOOL)
    rc = opd_error(OPD_EINVAL,
                   "\"scatter_gather_tensor_cpu_reduce_mean\" not implemented for 'Bool'");
  opd_tensor *r = NULL;
  if (rc == 0) rc = opd__scatter_copy_of(self, &r);
  if (rc) return rc;
  char init[8];
  if (!include_self) {
    reduce_identity(op, t, init);
    rc = run_scatter(false, r, d, index, NULL, init, OPD__REDUCE_NONE, NULL);
  }
  int64_t *counts = NULL, nbytes = 0;
  if (rc == 0 && mean && r->numel > 0) {
    rc = opd_ckd_nbytes(r->numel, sizeof *counts, &nbytes, "scatter_reduce(): the counts");
    const opd_allocator *cpu = opd_cpu_allocator();
    if (rc == 0 && !(counts = cpu->alloc(cpu, cpu_device, (size_t)nbytes)))
      rc = opd_last_error_code();
    for (int64_t i = 0; rc == 0 && i < r->numel; i++) counts[i] = include_self;
  }
  if (rc == 0) rc = run_scatter(false, r, d, index, src, NULL, op, counts);
  if (rc == 0 && counts) { /* r is contiguous: an element's offset is its position */
    char *p = opd_tensor_data(r);
    size_t es = opd_dtype_size(t);
    for (int64_t i = 0; i < r->numel; i++, p += es) {
      int64_t c = counts[i] > 0 ? counts[i] : 1;
      if (opd_dtype_is_floating(t)) {
        opd__elem_put_f(p, t, opd__elem_get_f(p, t) / (double)c);
      } else { /* floor division, as ATen's div_(count, "floor") */
        int64_t v = opd__elem_get_i(p, t), q = v / c;
        if ((v % c != 0) && ((v < 0) != (c < 0))) q--;
        opd__elem_put_i(p, t, q);
      }
    }
  }
  if (counts) {
    const opd_allocator *cpu = opd_cpu_allocator();
    cpu->free(cpu, cpu_device, counts, (size_t)nbytes);
  }
  return opd__scatter_finish(rc, r, out);
}

/* ---- index_add, index_copy, index_fill_: whole slices of dim chosen by a 1-d index ---- */

typedef struct slice_job {
  opd__walk slice; /* one slice: self (op 0) and source (op 1) without dim */
  const int64_t *indices;
  int64_t n;
  int64_t self_step, source_step; /* elements per index along dim */
  char *self;
  const char *source; /* NULL: fill with value */
  const char *value;
  double alpha_f; /* index_add's alpha */
  int64_t alpha_i;
  bool add;
  opd_dtype dtype;
} slice_job;

/* Walks the slice positions [begin, end) of every index in order (the indices may repeat:
 * a slice position's updates stay in index order on one thread). */
static void slice_range(void *ctx, int64_t begin, int64_t end) {
  const slice_job *j = ctx;
  opd__walk w = j->slice;
  size_t es = opd_dtype_size(j->dtype);
  opd_dtype t = j->dtype;
  opd__walk_seek(&w, begin);
  for (int64_t p = begin; p < end; p++, opd__walk_next(&w)) {
    for (int64_t k = 0; k < j->n; k++) {
      char *dst = j->self + (w.off[0] + j->indices[k] * j->self_step) * (int64_t)es;
      const char *src =
          j->source ? j->source + (w.off[1] + k * j->source_step) * (int64_t)es : j->value;
      if (!j->add) {
        memcpy(dst, src, es);
      } else if (opd_dtype_is_floating(t)) {
        opd__elem_put_f(dst, t, opd__elem_get_f(dst, t) + j->alpha_f * opd__elem_get_f(src, t));
      } else if (t == OPD_BOOL) {
        *(uint8_t *)dst = (*(uint8_t *)dst != 0) | (j->alpha_i != 0 && *(const uint8_t *)src != 0);
      } else {
        int64_t v = OPD__WRAP_MUL(int64_t, j->alpha_i, opd__elem_get_i(src, t));
        opd__elem_put_i(dst, t, OPD__WRAP_ADD(int64_t, opd__elem_get_i(dst, t), v));
      }
    }
  }
}

/* Reads index (1-d or 0-d, int64 or int32) into a buffer from the CPU allocator, each checked
 * against [lo, limit) and wrapped when negative indices are allowed (lo < 0). */
typedef struct index_buf {
  int64_t *v;
  int64_t nbytes;
} index_buf;

static void index_buf_free(index_buf *b) {
  if (b->v) {
    const opd_allocator *cpu = opd_cpu_allocator();
    cpu->free(cpu, cpu_device, b->v, (size_t)b->nbytes);
  }
}

typedef enum index_error { ERR_IN_SELF, ERR_COPY, ERR_FILL } index_error;

static int read_indices(const opd_tensor *index, int64_t limit, bool negative, index_error kind,
                        int64_t dim, index_buf *b) {
  b->v = NULL;
  int64_t n = index->numel;
  int rc = opd_ckd_nbytes(n > 0 ? n : 1, sizeof(int64_t), &b->nbytes, "the index buffer");
  if (rc) return rc;
  const opd_allocator *cpu = opd_cpu_allocator();
  if (!(b->v = cpu->alloc(cpu, cpu_device, (size_t)b->nbytes))) return opd_last_error_code();
  const char *data = opd_tensor_data(index);
  int64_t stride = index->ndim ? opd_tensor_strides(index)[0] : 0;
  for (int64_t k = 0; k < n; k++) {
    int64_t i = opd__index_at(data, opd_tensor_dtype(index), k * stride);
    bool ok = negative ? i >= -limit && i < limit : i >= 0 && i < limit;
    if (!ok) {
      index_buf_free(b);
      b->v = NULL;
      if (kind == ERR_IN_SELF) return opd_error(OPD_EINDEX, "index out of range in self");
      return opd_error(OPD_EINDEX,
                       "%sindex %lld is out of bounds for dimension %lld with size %lld",
                       kind == ERR_COPY ? "index_copy_(): " : "", (long long)i, (long long)dim,
                       (long long)limit);
    }
    b->v[k] = i < 0 ? i + limit : i;
  }
  return 0;
}

/* Applies a slice job to self (dim wrapped) with the checked indices. */
static void run_slices(slice_job *j, opd_tensor *self, int64_t dim, opd_tensor *source) {
  if (j->n == 0 || self->numel == 0) return;
  int64_t sizes[OPD_MAX_DIMS], st_self[OPD_MAX_DIMS], st_src[OPD_MAX_DIMS];
  int nd = 0;
  for (int d = 0; d < self->ndim; d++) {
    if (d == dim) continue;
    sizes[nd] = opd_tensor_sizes(self)[d];
    st_self[nd] = opd_tensor_strides(self)[d];
    /* source has self's dimensions, or is 0-d (one element per index) */
    st_src[nd++] = source && source->ndim ? opd_tensor_strides(source)[d] : 0;
  }
  opd__walk_init(&j->slice, sizes, nd, 2);
  opd__walk_set_strides(&j->slice, 0, st_self);
  opd__walk_set_strides(&j->slice, 1, st_src);
  j->self = opd_tensor_data(self);
  j->source = source ? opd_tensor_data(source) : NULL;
  j->self_step = self->ndim ? opd_tensor_strides(self)[dim] : 0;
  j->source_step = source && source->ndim ? opd_tensor_strides(source)[dim] : 0;
  j->dtype = opd_tensor_dtype(self);
  int64_t per = self->ndim ? self->numel / opd_tensor_sizes(self)[dim] : 1;
  int64_t grain = OPD_GRAIN_ELEMENTWISE / (j->n > 0 ? j->n : 1);
  opd__parallel_for(0, per, grain > 0 ? grain : 1, slice_range, j);
}

/* index_add into target (self, or its copy), whose dim d was wrapped by the meta function */
static int index_add_into(opd_tensor *target, int64_t d, opd_tensor *index, opd_tensor *source,
                          opd__value alpha) {
  index_buf b;
  opd_dtype t = opd_tensor_dtype(target);
  int64_t limit = target->ndim ? opd_tensor_sizes(target)[d] : 1;
  int rc = read_indices(index, limit, false, ERR_IN_SELF, d, &b);
  if (rc) return rc;
  slice_job j = {.indices = b.v, .n = index->numel, .add = true};
  opd_scalar as = opd__value_scalar(alpha, t);
  j.alpha_f = opd__scalar_to_double(as);
  j.alpha_i = as.tag == OPD_IV_BOOL ? as.u.b : as.tag == OPD_IV_INT ? as.u.i : 0;
  run_slices(&j, target, d, source);
  index_buf_free(&b);
  return 0;
}

/* index_copy into target (self, or its copy) */
static int index_copy_into(opd_tensor *target, int64_t d, opd_tensor *index, opd_tensor *source) {
  index_buf b;
  int64_t limit = target->ndim ? opd_tensor_sizes(target)[d] : 1;
  int rc = read_indices(index, limit, false, ERR_COPY, d, &b);
  if (rc) return rc;
  slice_job j = {.indices = b.v, .n = index->numel};
  run_slices(&j, target, d, source);
  index_buf_free(&b);
  return 0;
}

int opd__cpu_index_add(const opd_kernel_ctx *ctx, opd_tensor *self, int64_t dim, opd_tensor *index,
                       opd_tensor *source, opd_scalar alpha, opd_tensor **out) {
  (void)ctx;
  int64_t d;
  opd__value a = {0};
  int rc = opd__index_add_meta(self, dim, index, source, &d);
  if (rc == 0) rc = opd__scalar_to(alpha, opd_tensor_dtype(self), &a);
  opd_tensor *r = NULL;
  if (rc == 0) rc = opd__scatter_copy_of(self, &r);
  return rc ? rc : opd__scatter_finish(index_add_into(r, d, index, source, a), r, out);
}

int opd__cpu_index_add_(const opd_kernel_ctx *ctx, opd_tensor *self, int64_t dim, opd_tensor *index,
                        opd_tensor *source, opd_scalar alpha, opd_tensor **out) {
  (void)ctx;
  int64_t d;
  opd__value a = {0};
  int rc = opd__index_add_meta(self, dim, index, source, &d);
  if (rc == 0) rc = opd__scalar_to(alpha, opd_tensor_dtype(self), &a);
  if (rc == 0) rc = opd__assert_no_internal_overlap(self);
  if (rc == 0) rc = opd__assert_no_partial_overlap(self, source);
  if (rc == 0) rc = index_add_into(self, d, index, source, a);
  return opd__scatter_finish_inplace(rc, self, out);
}

int opd__cpu_index_copy(const opd_kernel_ctx *ctx, opd_tensor *self, int64_t dim, opd_tensor *index,
                        opd_tensor *source, opd_tensor **out) {
  (void)ctx;
  int64_t d;
  int rc = opd__index_copy_meta(self, dim, index, source, &d);
  opd_tensor *r = NULL;
  if (rc == 0) rc = opd__scatter_copy_of(self, &r);
  return rc ? rc : opd__scatter_finish(index_copy_into(r, d, index, source), r, out);
}

int opd__cpu_index_copy_(const opd_kernel_ctx *ctx, opd_tensor *self, int64_t dim,
                         opd_tensor *index, opd_tensor *source, opd_tensor **out) {
  (void)ctx;
  int64_t d;
  int rc = opd__index_copy_meta(self, dim, index, source, &d);
  if (rc == 0) rc = opd__assert_no_internal_overlap(self);
  if (rc == 0) rc = opd__assert_no_partial_overlap(self, source);
  if (rc == 0) rc = index_copy_into(self, d, index, source);
  return opd__scatter_finish_inplace(rc, self, out);
}

static int index_fill(opd_tensor *self, int64_t dim, opd_tensor *index, opd_tensor *value_t,
                      opd_scalar value, opd_tensor **out) {
  int64_t d;
  int rc = opd__index_fill_meta(self, dim, index, value_t, &d);
  if (rc == 0) rc = opd__assert_no_internal_overlap(self);
  if (rc == 0) rc = opd__assert_no_partial_overlap(self, index);
  if (rc == 0 && value_t) {
    const char *p = opd_tensor_data(value_t);
    opd_dtype vt = opd_tensor_dtype(value_t);
    value = opd_dtype_is_floating(vt) ? opd__scalar_double(opd__elem_get_f(p, vt))
            : vt == OPD_BOOL ? (opd_scalar){.tag = OPD_IV_BOOL, .u.b = *(const uint8_t *)p != 0}
                             : opd__scalar_int(opd__elem_get_i(p, vt));
  }
  char v[8];
  if (rc == 0) rc = opd__elem_from_scalar(value, opd_tensor_dtype(self), v);
  if (rc) return rc;
  index_buf b;
  int64_t limit = self->ndim ? opd_tensor_sizes(self)[d] : 1;
  if ((rc = read_indices(index, limit, true, ERR_FILL, d, &b))) return rc;
  slice_job j = {.indices = b.v, .n = index->numel, .value = v};
  run_slices(&j, self, d, NULL);
  index_buf_free(&b);
  return opd__scatter_finish_inplace(0, self, out);
}

int opd__cpu_index_fill__int_scalar(const opd_kernel_ctx *ctx, opd_tensor *self, int64_t dim,
                                    opd_tensor *index, opd_scalar value, opd_tensor **out) {
  (void)ctx;
  return index_fill(self, dim, index, NULL, value, out);
}

int opd__cpu_index_fill__int_tensor(const opd_kernel_ctx *ctx, opd_tensor *self, int64_t dim,
                                    opd_tensor *index, opd_tensor *value, opd_tensor **out) {
  (void)ctx;
  return index_fill(self, dim, index, value, (opd_scalar){0}, out);
}

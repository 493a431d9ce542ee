/* reduce_walk.h: what the CPU kernels of the reductions, softmax and layer norm share
 * (internal): strided walks over a tensor's dims, element conversions (defined in reduce.c),
 * and the attribute that compiles their hot loops for AVX2 and AVX-512 too. */
#ifndef OPD_KERNELS_REDUCE_WALK_H
#define OPD_KERNELS_REDUCE_WALK_H

#include <assert.h>
#include <stdint.h>

#include "opd/checked.h"
#include "opd/dtype.h"
#include "opd/tensor.h"

/* The hot loops also get AVX2 (x86-64-v3) and AVX-512 (x86-64-v4) clones, one chosen once at load
 * time; the results do not depend on the clone (no FMA contraction in ISO C mode, explicit
 * accumulation lanes). */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && \
    !defined(__SANITIZE_THREAD__) /* (ThreadSanitizer's instrumented resolvers crash) */
#define OPD__SIMD_CLONES \
  __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define OPD__SIMD_CLONES
#endif

/* Dims of a strided walk: sizes and strides in elements, innermost last. */
typedef struct opd__dims {
  int n;
  int64_t size[OPD_MAX_DIMS], stride[OPD_MAX_DIMS];
} opd__dims;

/* A position in a walk: the index along each dim and the element offset. */
typedef struct opd__iter {
  const opd__dims *d;
  int64_t idx[OPD_MAX_DIMS];
  int64_t off;
} opd__iter;

static inline void opd__dims_push(opd__dims *d, int64_t size, int64_t stride) {
  assert(d->n < OPD_MAX_DIMS);
  d->size[d->n] = size;
  d->stride[d->n] = stride;
  d->n++;
}

/* Merges neighbours i, i+1 with stride[i] == size[i+1] * stride[i+1] (the walk's order is
 * kept; an empty tensor's product may overflow, and then does not match); an empty walk
 * becomes one element. */
static inline void opd__dims_coalesce(opd__dims *d) {
  int m = 0;
  for (int i = 0; i < d->n; i++) {
    int64_t span;
    if (m > 0 && !opd_ckd_mul(&span, d->size[i], d->stride[i]) && d->stride[m - 1] == span) {
      d->size[m - 1] *= d->size[i];
      d->stride[m - 1] = d->stride[i];
    } else {
      d->size[m] = d->size[i];
      d->stride[m] = d->stride[i];
      m++;
    }
  }
  d->n = m;
  if (m == 0) opd__dims_push(d, 1, 0);
}

/* The walk of t's dims [begin, end), size-1 dims dropped, coalesced. */
static inline void opd__dims_of(const opd_tensor *t, int begin, int end, opd__dims *d) {
  d->n = 0;
  for (int k = begin; k < end; k++)
    if (opd_tensor_sizes(t)[k] != 1)
      opd__dims_push(d, opd_tensor_sizes(t)[k], opd_tensor_strides(t)[k]);
  opd__dims_coalesce(d);
}

/* Positions the walk at row-major index lin. */
static inline void opd__iter_seek(opd__iter *it, const opd__dims *d, int64_t lin) {
  it->d = d;
  it->off = 0;
  for (int k = d->n - 1; k >= 0; k--) {
    it->idx[k] = lin % d->size[k];
    lin /= d->size[k];
    it->off += it->idx[k] * d->stride[k];
  }
}

/* Elements left in the current run along the innermost dim. */
static inline int64_t opd__iter_run_left(const opd__iter *it) {
  int k = it->d->n - 1;
  return it->d->size[k] - it->idx[k];
}

/* Moves n elements on, n <= opd__iter_run_left(); not past the walk's last element. */
static inline void opd__iter_step(opd__iter *it, int64_t n) {
  const opd__dims *d = it->d;
  int k = d->n - 1;
  assert(n <= opd__iter_run_left(it));
  it->idx[k] += n;
  it->off += n * d->stride[k];
  while (k > 0 && it->idx[k] == d->size[k]) {
    it->off -= d->size[k] * d->stride[k];
    it->idx[k] = 0;
    k--;
    it->idx[k]++;
    it->off += d->stride[k];
  }
}

/* Convert n elements of dtype dt at p, p + stride, ... (stride in elements) into d. */
void opd__load_f32(const char *p, int64_t stride, opd_dtype dt, int64_t n, float *d);
void opd__load_f64(const char *p, int64_t stride, opd_dtype dt, int64_t n, double *d);
/* Stores v into a float32, float64, float16 or bfloat16 element. */
void opd__store_float(char *p, opd_dtype dt, double v);

#endif

/* reduce_order.c: the CPU kernels of the order statistics median, nanmedian (of every element
 * and along a dim) and mode (shapes in kernels/meta/reduce_order_meta.c).
 *
 * [Note: Order statistics of a line]
 * Each line (along dim, or every element of self in row-major order) is copied as (key,
 * position) pairs and sorted by key, NaN after every number, ties by position: a total order,
 * so the result does not depend on the sort. From it:
 * - median: the lower median, the element of rank (n - 1) / 2; a line holding a NaN gives
 *   its first NaN (ATen's median kernels);
 * - nanmedian: the lower median of the line's numbers, rank (n - nans - 1) / 2 in C's
 *   division (rank 0, a NaN, when all are NaN);
 * - mode: the value of the longest run of equal keys, the smallest of those as long (ATen
 *   scans the sorted line and keeps a run only when it is strictly longer), with the position
 *   of the last element of its run: the line's last occurrence of that value, which is what
 *   ATen's sort of the line gives.
 * ATen picks the median's position with std::nth_element, which leaves ties unordered; the
 * lowest position of the tied ranks' order here is one of its valid answers. The value is
 * copied from the input element, bit for bit. */
#include <stdlib.h>

#include "index_walk.h"
#include "meta/index_sort_meta.h"
#include "meta/reduce_meta.h"
#include "meta/reduce_order_meta.h"
#include "opd/allocator.h"
#include "opd/checked.h"

static const opd_device cpu_device = {OPD_DEVICE_CPU, -1};

typedef struct entry {
  double f;  /* the key of a floating tensor */
  int64_t i; /* of an integral one */
  int64_t pos;
} entry;

static int by_float_key(const void *pa, const void *pb) {
  const entry *a = pa, *b = pb;
  bool an = isnan(a->f), bn = isnan(b->f);
  if (an != bn) return an ? 1 : -1;
  if (!an && a->f != b->f) return a->f < b->f ? -1 : 1;
  return (a->pos > b->pos) - (a->pos < b->pos);
}

static int by_int_key(const void *pa, const void *pb) {
  const entry *a = pa, *b = pb;
  if (a->i != b->i) return a->i < b->i ? -1 : 1;
  return (a->pos > b->pos) - (a->pos < b->pos);
}

typedef enum statistic { MEDIAN, NANMEDIAN, MODE } statistic;

/* The position (in the line) of `stat` of the n entries of buf, read from the line; sorts buf. */
static int64_t line_statistic(entry *buf, int64_t n, bool floating, statistic stat) {
  if (floating && stat == MEDIAN)
    for (int64_t j = 0; j < n; j++)
      if (isnan(buf[j].f)) return buf[j].pos;
  qsort(buf, (size_t)n, sizeof *buf, floating ? by_float_key : by_int_key);
  if (stat == MEDIAN) return buf[(n - 1) / 2].pos;
  if (stat == NANMEDIAN) {
    int64_t nans = 0;
    for (int64_t j = 0; floating && j < n; j++) nans += isnan(buf[j].f) != 0;
    return buf[(n - nans - 1) / 2].pos;
  }
  int64_t best = 0, best_len = 0, run = 0;
  for (int64_t j = 0; j < n; j++) {
    run++;
    bool ends = j == n - 1 || (floating ? buf[j].f != buf[j + 1].f : buf[j].i != buf[j + 1].i);
    if (ends) {
      if (run > best_len) best = buf[j].pos, best_len = run;
      run = 0;
    }
  }
  return n ? best : 0;
}

static int alloc_buffer(int64_t n, entry **buf, int64_t *nbytes) {
  int rc = opd_ckd_nbytes(n > 0 ? n : 1, sizeof(entry), nbytes, "median: the line buffer");
  if (rc) return rc;
  const opd_allocator *cpu = opd_cpu_allocator();
  *buf = cpu->alloc(cpu, cpu_device, (size_t)*nbytes);
  return *buf ? 0 : opd_last_error_code();
}

static void free_buffer(entry *buf, int64_t nbytes) {
  const opd_allocator *cpu = opd_cpu_allocator();
  cpu->free(cpu, cpu_device, buf, (size_t)nbytes);
}

static void load(entry *e, const char *p, opd_dtype t, bool floating, int64_t pos) {
  e->pos = pos;
  if (floating)
    e->f = opd__elem_get_f(p, t);
  else
    e->i = opd__elem_get_i(p, t);
}

/* median and nanmedian of every element. An empty input gives NaN, as ATen's full({}, NAN)
 * (which converts NaN to an integral dtype with C++'s undefined conversion: 0 here). */
static int median_all(opd_tensor *self, statistic stat, opd_tensor **out) {
  opd_out_spec spec;
  int rc = opd__median_all_meta(self, &spec);
  opd_tensor *r = NULL;
  if (rc || (rc = opd__alloc_output(&spec, cpu_device, &r))) return rc;
  opd_dtype t = opd_tensor_dtype(self);
  bool floating = opd_dtype_is_floating(t);
  size_t es = opd_dtype_size(t);
  int64_t n = self->numel, nbytes = 0;
  if (n == 0) {
    if (floating)
      opd__elem_put_f(opd_tensor_data(r), t, NAN);
    else
      opd__elem_put_i(opd_tensor_data(r), t, 0);
    *out = r;
    return 0;
  }
  entry *buf = NULL;
  if ((rc = alloc_buffer(n, &buf, &nbytes))) {
    opd_tensor_release(r);
    return rc;
  }
  opd__walk w;
  opd__walk_init(&w, opd_tensor_sizes(self), self->ndim, 1);
  opd__walk_set_strides(&w, 0, opd_tensor_strides(self));
  opd__walk_seek(&w, 0);
  const char *src = opd_tensor_data(self);
  for (int64_t k = 0; k < n; k++, opd__walk_next(&w))
    load(&buf[k], src + w.off[0] * (int64_t)es, t, floating, w.off[0]);
  /* the position is the element's offset here: the result is copied from it */
  int64_t off = line_statistic(buf, n, floating, stat);
  memcpy(opd_tensor_data(r), src + off * (int64_t)es, es);
  free_buffer(buf, nbytes);
  *out = r;
  return 0;
}

int opd__cpu_median(const opd_kernel_ctx *ctx, opd_tensor *self, opd_tensor **out) {
  (void)ctx;
  return median_all(self, MEDIAN, out);
}

int opd__cpu_nanmedian(const opd_kernel_ctx *ctx, opd_tensor *self, opd_tensor **out) {
  (void)ctx;
  return median_all(self, NANMEDIAN, out);
}

/* Each line of self along d into values and indices (of the reduced shape, keepdim or not). */
static int lines_statistic(opd_tensor *self, int64_t d, statistic stat, opd_tensor *values,
                           opd_tensor *indices) {
  int64_t sizes[OPD_MAX_DIMS], vstrides[OPD_MAX_DIMS], istrides[OPD_MAX_DIMS];
  int nd = self->ndim;
  int64_t len = nd ? opd_tensor_sizes(self)[d] : 1;
  if (self->numel == 0) return 0;
  /* the results' strides in self's dims: 0 along d */
  for (int k = 0, o = 0; k < nd; k++) {
    sizes[k] = opd_tensor_sizes(self)[k];
    bool kept = values->ndim == nd;
    if (k == d) {
      vstrides[k] = istrides[k] = 0;
      o += kept;
    } else {
      vstrides[k] = opd_tensor_strides(values)[o];
      istrides[k] = opd_tensor_strides(indices)[o];
      o++;
    }
  }
  if (nd) sizes[d] = 1;
  opd__walk w; /* self (op 0), values (op 1), indices (op 2) with d held at 0 */
  opd__walk_init(&w, sizes, nd, 3);
  opd__walk_set_strides(&w, 0, opd_tensor_strides(self));
  opd__walk_set_strides(&w, 1, vstrides);
  opd__walk_set_strides(&w, 2, istrides);
  opd__walk_seek(&w, 0);
  int64_t step = nd ? opd_tensor_strides(self)[d] : 0, nbytes = 0;
  entry *buf = NULL;
  int rc = alloc_buffer(len, &buf, &nbytes);
  if (rc) return rc;
  opd_dtype t = opd_tensor_dtype(self);
  bool floating = opd_dtype_is_floating(t);
  size_t es = opd_dtype_size(t);
  const char *src = opd_tensor_data(self);
  char *vdst = opd_tensor_data(values);
  int64_t *idst = opd_tensor_data(indices);
  for (int64_t line = 0; line < self->numel / len; line++, opd__walk_next(&w)) {
    for (int64_t j = 0; j < len; j++)
      load(&buf[j], src + (w.off[0] + j * step) * (int64_t)es, t, floating, j);
    int64_t j = line_statistic(buf, len, floating, stat);
    memcpy(vdst + w.off[1] * (int64_t)es, src + (w.off[0] + j * step) * (int64_t)es, es);
    idst[w.off[2]] = j;
  }
  free_buffer(buf, nbytes);
  return 0;
}

/* median.dim, nanmedian.dim (self, int dim, bool keepdim=False), mode (self, int dim=-1,
 * bool keepdim=False) */
static int order_dim(opd_stack *stack, statistic stat) {
  opd_ivalue *args = opd_stack_last(stack, 3);
  opd_tensor *self = args[0].u.t, *res[2] = {NULL, NULL};
  int64_t d;
  opd_out_spec spec;
  int rc = opd__order_dim_meta(stat == MODE, self, args[1].u.i, args[2].u.b, &d, &spec);
  if (rc == 0) rc = opd__alloc_values_indices(&spec, cpu_device, res);
  if (rc == 0) rc = lines_statistic(self, d, stat, res[0], res[1]);
  opd_stack_drop(stack, 3);
  return opd__push_results(stack, res, 2, rc);
}

int opd__cpu_median_dim(const opd_kernel_ctx *ctx, opd_stack *stack) {
  (void)ctx;
  return order_dim(stack, MEDIAN);
}

int opd__cpu_nanmedian_dim(const opd_kernel_ctx *ctx, opd_stack *stack) {
  (void)ctx;
  return order_dim(stack, NANMEDIAN);
}

int opd__cpu_mode(const opd_kernel_ctx *ctx, opd_stack *stack) {
  (void)ctx;
  return order_dim(stack, MODE);
}

/* index_sort.c: the CPU kernels of sort.stable, topk, cummax, cummin, _unique2, unique_dim,
 * searchsorted and bucketize (shapes in kernels/meta/index_sort_meta.c).
 *
 * [Note: Sorting lines]
 * sort and topk sort each line along dim (every position of the other dimensions) with a
 * stable merge sort of (key, index) pairs, NaN after every number (before, descending), as
 * ATen orders them; a stable sort is a valid answer for stable=False too, whose order of ties
 * PyTorch leaves unspecified. topk takes the first k of the line sorted largest- or
 * smallest-first (with sorted=False PyTorch leaves their order unspecified). Lines are sorted
 * one after another with one buffer from the CPU allocator, so the limit on memory applies.
 * searchsorted.Scalar, bucketize.Tensor and bucketize.Scalar are searchsorted.Tensor's search
 * (a scalar read as a 0-d tensor, the boundaries of bucketize 1-D). */
#include <math.h>
#include <string.h>

#include "index_walk.h"
#include "meta/index_sort_meta.h"
#include "meta/reduce_meta.h"
#include "opd/allocator.h"
#include "opd/checked.h"

static const opd_device cpu_device = {OPD_DEVICE_CPU, -1};

typedef struct entry {
  double f;  /* the key of a floating tensor */
  int64_t i; /* of an integral one */
  int64_t index;
} entry;

/* a comes strictly before b */
static bool before(const entry *a, const entry *b, bool floating, bool descending) {
  if (floating) {
    bool an = isnan(a->f), bn = isnan(b->f);
    if (descending) return (an && !bn) || a->f > b->f;
    return (!an && bn) || a->f < b->f;
  }
  return descending ? a->i > b->i : a->i < b->i;
}

/* Stable merge sort of v[0..n) using tmp[0..n). */
static void merge_sort(entry *v, entry *tmp, int64_t n, bool floating, bool descending) {
  for (int64_t width = 1; width < n; width *= 2) {
    for (int64_t lo = 0; lo < n; lo += 2 * width) {
      int64_t mid = lo + width < n ? lo + width : n, hi = lo + 2 * width < n ? lo + 2 * width : n;
      int64_t a = lo, b = mid, o = lo;
      while (a < mid && b < hi)
        tmp[o++] = before(&v[b], &v[a], floating, descending) ? v[b++] : v[a++];
      while (a < mid) tmp[o++] = v[a++];
      while (b < hi) tmp[o++] = v[b++];
    }
    memcpy(v, tmp, (size_t)n * sizeof *v);
  }
}

typedef struct lines {
  opd__walk outer; /* self (op 0), values (op 1), indices (op 2) with dim held at 0 */
  int64_t len, self_step, values_step, indices_step;
} lines;

static void lines_init(lines *l, opd_tensor *self, int64_t d, opd_tensor *values,
                       opd_tensor *indices) {
  int64_t sizes[OPD_MAX_DIMS], one = 1, zero[OPD_MAX_DIMS] = {0};
  int nd = self->ndim ? self->ndim : 1;
  memcpy(sizes, self->ndim ? opd_tensor_sizes(self) : &one, (size_t)nd * sizeof *sizes);
  l->len = sizes[d];
  sizes[d] = 1;
  opd__walk_init(&l->outer, sizes, nd, 3);
  opd__walk_set_strides(&l->outer, 0, self->ndim ? opd_tensor_strides(self) : zero);
  opd__walk_set_strides(&l->outer, 1, self->ndim ? opd_tensor_strides(values) : zero);
  opd__walk_set_strides(&l->outer, 2, self->ndim ? opd_tensor_strides(indices) : zero);
  l->self_step = self->ndim ? opd_tensor_strides(self)[d] : 0;
  l->values_step = self->ndim ? opd_tensor_strides(values)[d] : 0;
  l->indices_step = self->ndim ? opd_tensor_strides(indices)[d] : 0;
  opd__walk_seek(&l->outer, 0);
}

/* Sorts every line of self along d into values and indices (their first `k` along d). */
static int sort_lines(opd_tensor *self, int64_t d, bool descending, int64_t k, opd_tensor *values,
                      opd_tensor *indices) {
  lines l;
  lines_init(&l, self, d, values, indices);
  if (self->numel == 0 || k == 0) return 0;
  int64_t nbytes;
  int rc = opd_ckd_nbytes(2 * l.len, sizeof(entry), &nbytes, "sort: the line buffer");
  if (rc) return rc;
  const opd_allocator *cpu = opd_cpu_allocator();
  entry *buf = cpu->alloc(cpu, cpu_device, (size_t)nbytes);
  if (!buf) return opd_last_error_code();
  opd_dtype t = opd_tensor_dtype(self);
  bool floating = opd_dtype_is_floating(t);
  size_t es = opd_dtype_size(t);
  const char *src = opd_tensor_data(self);
  char *vdst = opd_tensor_data(values);
  int64_t *idst = opd_tensor_data(indices);
  for (int64_t line = 0; line < self->numel / l.len; line++, opd__walk_next(&l.outer)) {
    for (int64_t j = 0; j < l.len; j++) {
      const char *p = src + (l.outer.off[0] + j * l.self_step) * (int64_t)es;
      buf[j].index = j;
      if (floating)
        buf[j].f = opd__elem_get_f(p, t);
      else
        buf[j].i = opd__elem_get_i(p, t);
    }
    merge_sort(buf, buf + l.len, l.len, floating, descending);
    for (int64_t j = 0; j < k; j++) {
      memcpy(vdst + (l.outer.off[1] + j * l.values_step) * (int64_t)es,
             src + (l.outer.off[0] + buf[j].index * l.self_step) * (int64_t)es, es);
      idst[l.outer.off[2] + j * l.indices_step] = buf[j].index;
    }
  }
  cpu->free(cpu, cpu_device, buf, (size_t)nbytes);
  return 0;
}

/* sort.stable(self, *, bool? stable, int dim=-1, bool descending=False) */
int opd__cpu_sort_stable(const opd_kernel_ctx *ctx, opd_stack *stack) {
  (void)ctx;
  opd_ivalue *args = opd_stack_last(stack, 4);
  opd_tensor *self = args[0].u.t, *res[2] = {NULL, NULL};
  bool descending = args[3].u.b;
  int64_t d;
  opd_out_spec spec;
  int rc = opd__sort_meta(self, args[2].u.i, &d, &spec);
  if (rc == 0) rc = opd__alloc_values_indices(&spec, cpu_device, res);
  if (rc == 0) rc = sort_lines(self, d, descending, self->ndim ? spec.sizes[d] : 1, res[0], res[1]);
  opd_stack_drop(stack, 4);
  return opd__push_results(stack, res, 2, rc);
}

/* topk(self, k, dim=-1, largest=True, sorted=True) */
int opd__cpu_topk(const opd_kernel_ctx *ctx, opd_stack *stack) {
  (void)ctx;
  opd_ivalue *args = opd_stack_last(stack, 5);
  opd_tensor *self = args[0].u.t, *res[2] = {NULL, NULL};
  int64_t k = args[1].u.i, d;
  bool largest = args[3].u.b;
  opd_out_spec spec;
  int rc = opd__topk_meta(self, k, args[2].u.i, &d, &spec);
  if (rc == 0 && opd_tensor_dtype(self) == OPD_BOOL)
    rc = opd_error(OPD_EINVAL, "\"topk_cpu\" not implemented for 'Bool'");
  if (rc == 0) rc = opd__alloc_values_indices(&spec, cpu_device, res);
  if (rc == 0) rc = sort_lines(self, d, largest, k, res[0], res[1]);
  opd_stack_drop(stack, 5);
  return opd__push_results(stack, res, 2, rc);
}

/* ATen's cummax_cummin_helper: a NaN, or an element at least (cummax) / at most (cummin) the
 * running one, becomes the running one (ties take the later index). */
static void cum_extreme(opd_tensor *self, int64_t d, bool max, opd_tensor *values,
                        opd_tensor *indices) {
  lines l;
  lines_init(&l, self, d, values, indices);
  if (self->numel == 0) return;
  opd_dtype t = opd_tensor_dtype(self);
  bool floating = opd_dtype_is_floating(t);
  size_t es = opd_dtype_size(t);
  const char *src = opd_tensor_data(self);
  char *vdst = opd_tensor_data(values);
  int64_t *idst = opd_tensor_data(indices);
  for (int64_t line = 0; line < self->numel / l.len; line++, opd__walk_next(&l.outer)) {
    const char *best = src + l.outer.off[0] * (int64_t)es;
    int64_t best_index = 0;
    for (int64_t j = 0; j < l.len; j++) {
      const char *p = src + (l.outer.off[0] + j * l.self_step) * (int64_t)es;
      bool take;
      if (floating) {
        double x = opd__elem_get_f(p, t), b = opd__elem_get_f(best, t);
        take = isnan(x) || (!isnan(b) && (max ? x >= b : x <= b));
      } else {
        int64_t x = opd__elem_get_i(p, t), b = opd__elem_get_i(best, t);
        take = max ? x >= b : x <= b;
      }
      if (take) best = p, best_index = j;
      memcpy(vdst + (l.outer.off[1] + j * l.values_step) * (int64_t)es, best, es);
      idst[l.outer.off[2] + j * l.indices_step] = best_index;
    }
  }
}

static int cummax_cummin(opd_stack *stack, bool max) {
  opd_ivalue *args = opd_stack_last(stack, 2);
  opd_tensor *self = args[0].u.t, *res[2] = {NULL, NULL};
  int64_t d;
  opd_out_spec spec;
  int rc = opd__sort_meta(self, args[1].u.i, &d, &spec);
  if (rc == 0) rc = opd__alloc_values_indices(&spec, cpu_device, res);
  if (rc == 0) cum_extreme(self, d, max, res[0], res[1]);
  opd_stack_drop(stack, 2);
  return opd__push_results(stack, res, 2, rc);
}

int opd__cpu_cummax(const opd_kernel_ctx *ctx, opd_stack *stack) {
  (void)ctx;
  return cummax_cummin(stack, true);
}

int opd__cpu_cummin(const opd_kernel_ctx *ctx, opd_stack *stack) {
  (void)ctx;
  return cummax_cummin(stack, false);
}

/* self's element offset of its row-major position k */
static int64_t offset_of(const opd_tensor *self, int64_t k) {
  int64_t off = 0;
  for (int d = self->ndim - 1; d >= 0; d--) {
    int64_t size = opd_tensor_sizes(self)[d];
    off += (k % size) * opd_tensor_strides(self)[d];
    k /= size;
  }
  return off;
}

/* _unique2(self, sorted=True, return_inverse=False, return_counts=False): the distinct values
 * of self in ascending order (a valid order for sorted=False too, which PyTorch leaves
 * unspecified), from self's elements sorted as sort orders them; equal neighbours make one
 * value (NaN equals nothing: every NaN is its own value, last; PyTorch 1.13's own result for
 * NaN is inconsistent). The inverse (self's shape) and the counts are empty unless asked
 * for (as in ATen, asking for the counts gives the inverse too). */
int opd__cpu_unique2(const opd_kernel_ctx *ctx, opd_stack *stack) {
  (void)ctx;
  opd_ivalue *args = opd_stack_last(stack, 4);
  opd_tensor *self = args[0].u.t, *res[3] = {NULL, NULL, NULL};
  /* ATen computes the inverse for the counts too, and returns it */
  bool want_counts = args[3].u.b, want_inverse = args[2].u.b || want_counts;
  opd_dtype t = opd_tensor_dtype(self);
  bool floating = opd_dtype_is_floating(t);
  size_t es = opd_dtype_size(t);
  int64_t n = self->numel, nbytes = 0;
  entry *buf = NULL;
  const opd_allocator *cpu = opd_cpu_allocator();
  int rc = opd_ckd_nbytes(2 * (n > 0 ? n : 1), sizeof(entry), &nbytes, "unique: the buffer");
  if (rc == 0 && !(buf = cpu->alloc(cpu, cpu_device, (size_t)nbytes))) rc = opd_last_error_code();
  opd__walk w;
  opd__walk_init(&w, opd_tensor_sizes(self), self->ndim, 1);
  opd__walk_set_strides(&w, 0, opd_tensor_strides(self));
  opd__walk_seek(&w, 0);
  const char *src = opd_tensor_data(self);
  for (int64_t i = 0; rc == 0 && i < n; i++, opd__walk_next(&w)) {
    const char *p = src + w.off[0] * (int64_t)es;
    buf[i].index = i; /* the element's row-major position */
    if (floating)
      buf[i].f = opd__elem_get_f(p, t);
    else
      buf[i].i = opd__elem_get_i(p, t);
  }
  if (rc == 0) merge_sort(buf, buf + n, n, floating, false);
  int64_t groups = 0;
  for (int64_t i = 0; rc == 0 && i < n; i++)
    groups += i == 0 || (floating ? !(buf[i].f == buf[i - 1].f) : buf[i].i != buf[i - 1].i);
  opd_out_spec vs = {.ndim = 1, .dtype = t, .sizes = {groups}};
  opd_out_spec is = {.ndim = want_inverse ? self->ndim : 1, .dtype = OPD_INT64, .sizes = {0}};
  if (want_inverse) memcpy(is.sizes, opd_tensor_sizes(self), (size_t)self->ndim * sizeof(int64_t));
  opd_out_spec cs = {.ndim = 1, .dtype = OPD_INT64, .sizes = {want_counts ? groups : 0}};
  if (rc == 0) rc = opd__alloc_output(&vs, cpu_device, &res[0]);
  if (rc == 0) rc = opd__alloc_output(&is, cpu_device, &res[1]);
  if (rc == 0) rc = opd__alloc_output(&cs, cpu_device, &res[2]);
  if (rc == 0 && n > 0) {
    char *values = opd_tensor_data(res[0]);
    int64_t *inverse = opd_tensor_data(res[1]), *counts = opd_tensor_data(res[2]);
    for (int64_t i = 0, g = -1; i < n; i++) {
      if (i == 0 || (floating ? !(buf[i].f == buf[i - 1].f) : buf[i].i != buf[i - 1].i)) {
        g++;
        memcpy(values + g * (int64_t)es, src + offset_of(self, buf[i].index) * (int64_t)es, es);
        if (want_counts) counts[g] = 0;
      }
      if (want_counts) counts[g]++;
      if (want_inverse) inverse[buf[i].index] = g;
    }
  }
  if (buf) cpu->free(cpu, cpu_device, buf, (size_t)nbytes);
  opd_stack_drop(stack, 4);
  return opd__push_results(stack, res, 3, rc);
}

/* searchsorted.Tensor: for each element of self, the first position of its row of sorted
 * (read through sorter when given) whose value is >= it (> it with right or side="right"),
 * compared as ATen's binary search compares (NaN is past every number). Every sorter index is
 * checked before it is used (PyTorch 1.13 reads past the sequence on a bad one). */
int opd__cpu_searchsorted_tensor(const opd_kernel_ctx *ctx, opd_tensor *sorted, opd_tensor *self,
                                 bool out_int32, bool right, const char *side, opd_tensor *sorter,
                                 opd_tensor **out) {
  (void)ctx;
  opd_out_spec spec;
  int rc = opd__searchsorted_meta(sorted, self, out_int32, right, side, sorter, &spec);
  if (rc) return rc;
  int64_t len = opd_tensor_sizes(sorted)[sorted->ndim - 1];
  const int64_t *sorter_data = sorter ? opd_tensor_data(sorter) : NULL;
  if (sorter) { /* sorter has sorted's shape: check each index against the row's length */
    opd__walk w;
    opd__walk_init(&w, opd_tensor_sizes(sorter), sorter->ndim, 1);
    opd__walk_set_strides(&w, 0, opd_tensor_strides(sorter));
    opd__walk_seek(&w, 0);
    for (int64_t i = 0; i < sorter->numel; i++, opd__walk_next(&w))
      if (sorter_data[w.off[0]] < 0 || sorter_data[w.off[0]] >= len)
        return opd_error(OPD_EINDEX, "torch.searchsorted(): sorter index out of range");
  }
  opd_tensor *r = NULL;
  if ((rc = opd__alloc_output(&spec, cpu_device, &r))) return rc;
  bool upper = right || (side && strcmp(side, "right") == 0);
  opd_dtype st = opd_tensor_dtype(sorted), vt = opd_tensor_dtype(self);
  bool ints = !opd_dtype_is_floating(st) && !opd_dtype_is_floating(vt);
  size_t ses = opd_dtype_size(st), ves = opd_dtype_size(vt);
  const char *sdata = opd_tensor_data(sorted), *vdata = opd_tensor_data(self);
  int64_t sstep = opd_tensor_strides(sorted)[sorted->ndim - 1];
  int64_t ostep = sorter ? opd_tensor_strides(sorter)[sorter->ndim - 1] : 0;
  opd__walk w; /* self (op 0) and out (op 1) */
  opd__walk_init(&w, opd_tensor_sizes(self), self->ndim, 2);
  opd__walk_set_strides(&w, 0, opd_tensor_strides(self));
  opd__walk_set_strides(&w, 1, opd_tensor_strides(r));
  opd__walk_seek(&w, 0);
  for (int64_t i = 0; i < self->numel; i++, opd__walk_next(&w)) {
    int64_t row = 0, srow = 0; /* the row of sorted (and sorter): self's leading coordinates */
    for (int d = 0; sorted->ndim > 1 && d < self->ndim - 1; d++) {
      row += w.idx[d] * opd_tensor_strides(sorted)[d];
      if (sorter) srow += w.idx[d] * opd_tensor_strides(sorter)[d];
    }
    const char *vp = vdata + w.off[0] * (int64_t)ves;
    double vf = ints                        ? 0
                : opd_dtype_is_floating(vt) ? opd__elem_get_f(vp, vt)
                                            : (double)opd__elem_get_i(vp, vt);
    int64_t vi = ints ? opd__elem_get_i(vp, vt) : 0, lo = 0, hi = len;
    while (lo < hi) {
      int64_t mid = lo + ((hi - lo) >> 1);
      int64_t k = sorter ? sorter_data[srow + mid * ostep] : mid;
      const char *mp = sdata + (row + k * sstep) * (int64_t)ses;
      bool go_right;
      if (ints) {
        int64_t m = opd__elem_get_i(mp, st);
        go_right = upper ? !(m > vi) : !(m >= vi);
      } else {
        double m =
            opd_dtype_is_floating(st) ? opd__elem_get_f(mp, st) : (double)opd__elem_get_i(mp, st);
        go_right = upper ? !(m > vf) : !(m >= vf);
      }
      if (go_right)
        lo = mid + 1;
      else
        hi = mid;
    }
    char *op = (char *)opd_tensor_data(r) + w.off[1] * (int64_t)opd_dtype_size(spec.dtype);
    opd__elem_put_i(op, spec.dtype, lo);
  }
  *out = r;
  return 0;
}

/* searchsorted.Scalar: searchsorted.Tensor of the scalar as a 0-d tensor */
int opd__cpu_searchsorted_scalar(const opd_kernel_ctx *ctx, opd_tensor *sorted, opd_scalar self,
                                 bool out_int32, bool right, const char *side, opd_tensor *sorter,
                                 opd_tensor **out) {
  opd_tensor *value = NULL;
  int rc = opd__scalar_as_tensor(self, cpu_device, &value);
  if (rc) return rc;
  rc = opd__cpu_searchsorted_tensor(ctx, sorted, value, out_int32, right, side, sorter, out);
  opd_tensor_release(value);
  return rc;
}

/* bucketize.Tensor and bucketize.Scalar: searchsorted in a 1-D boundaries tensor */
int opd__cpu_bucketize_tensor(const opd_kernel_ctx *ctx, opd_tensor *self, opd_tensor *boundaries,
                              bool out_int32, bool right, opd_tensor **out) {
  int rc = opd__bucketize_check(boundaries);
  return rc ? rc
            : opd__cpu_searchsorted_tensor(ctx, boundaries, self, out_int32, right, NULL, NULL,
                                           out);
}

int opd__cpu_bucketize_scalar(const opd_kernel_ctx *ctx, opd_scalar self, opd_tensor *boundaries,
                              bool out_int32, bool right, opd_tensor **out) {
  int rc = opd__bucketize_check(boundaries);
  return rc ? rc
            : opd__cpu_searchsorted_scalar(ctx, boundaries, self, out_int32, right, NULL, NULL,
                                           out);
}

/* ---- unique_dim ---- */

typedef struct slices {
  const char *data;
  opd_dtype t;
  bool floating;
  int64_t m, step;    /* elements per slice, the stride along dim */
  const int64_t *off; /* each element's offset within a slice */
} slices;

/* <0, 0, >0 as slice a is before, equal to (element for element), after slice b: the first
 * element that differs decides, compared with < and > as ATen's sort of the slices. */
static int slice_cmp(const slices *s, int64_t a, int64_t b) {
  size_t es = opd_dtype_size(s->t);
  for (int64_t p = 0; p < s->m; p++) {
    const char *pa = s->data + (a * s->step + s->off[p]) * (int64_t)es;
    const char *pb = s->data + (b * s->step + s->off[p]) * (int64_t)es;
    if (s->floating) {
      double x = opd__elem_get_f(pa, s->t), y = opd__elem_get_f(pb, s->t);
      if (x < y) return -1;
      if (x > y) return 1;
    } else {
      int64_t x = opd__elem_get_i(pa, s->t), y = opd__elem_get_i(pb, s->t);
      if (x != y) return x < y ? -1 : 1;
    }
  }
  return 0;
}

static bool slice_equal(const slices *s, int64_t a, int64_t b) {
  size_t es = opd_dtype_size(s->t);
  for (int64_t p = 0; p < s->m; p++) {
    const char *pa = s->data + (a * s->step + s->off[p]) * (int64_t)es;
    const char *pb = s->data + (b * s->step + s->off[p]) * (int64_t)es;
    if (s->floating ? !(opd__elem_get_f(pa, s->t) == opd__elem_get_f(pb, s->t))
                    : opd__elem_get_i(pa, s->t) != opd__elem_get_i(pb, s->t))
      return false;
  }
  return true;
}

/* Stable merge sort of the slice numbers v[0..n) using tmp. */
static void sort_slices(const slices *s, int64_t *v, int64_t *tmp, int64_t n) {
  for (int64_t width = 1; width < n; width *= 2) {
    for (int64_t lo = 0; lo < n; lo += 2 * width) {
      int64_t mid = lo + width < n ? lo + width : n, hi = lo + 2 * width < n ? lo + 2 * width : n;
      int64_t a = lo, b = mid, o = lo;
      while (a < mid && b < hi) tmp[o++] = slice_cmp(s, v[b], v[a]) < 0 ? v[b++] : v[a++];
      while (a < mid) tmp[o++] = v[a++];
      while (b < hi) tmp[o++] = v[b++];
    }
    memcpy(v, tmp, (size_t)n * sizeof *v);
  }
}

/* unique_dim(self, dim, sorted=True, return_inverse=False, return_counts=False): the distinct
 * slices of self along dim in ascending (lexicographic) order, the slice each of self's maps
 * to, and how many map to each; as ATen's kernel, the inverse and the counts are computed
 * whatever the flags ask, and the unique slices are laid out as moveaxis(dim, 0) of a
 * contiguous tensor leaves them. An empty self must have one size-0 dim, the one reduced. */
int opd__cpu_unique_dim(const opd_kernel_ctx *ctx, opd_stack *stack) {
  (void)ctx;
  opd_ivalue *args = opd_stack_last(stack, 5);
  opd_tensor *self = args[0].u.t, *res[3] = {NULL, NULL, NULL};
  int64_t d = 0, nbytes = 0;
  int64_t *buf = NULL;
  const opd_allocator *cpu = opd_cpu_allocator();
  int rc = opd__wrap_dim(args[1].u.i, self->ndim, &d);
  const int64_t *sizes = opd_tensor_sizes(self);
  int nd = self->ndim;
  if (rc == 0 && self->numel == 0) {
    int zeros = 0;
    for (int k = 0; k < nd; k++) zeros += sizes[k] == 0;
    if (zeros != 1)
      rc = opd_error(OPD_EINVAL,
                     "Number of zero sized dimensions is more than one, so unique cannot be "
                     "applied ");
    else if (sizes[d] != 0)
      rc = opd_error(OPD_EINVAL, "There are 0 sized dimensions, and they aren't selected, so "
                                 "unique cannot be applied");
  }
  int64_t n = rc == 0 && nd ? sizes[d] : 1, m = n ? self->numel / n : 0;
  /* buf: the sorted slice numbers, a merge buffer, each slice element's offset */
  if (rc == 0)
    rc = opd_ckd_nbytes(2 * n + m + 1, sizeof(int64_t), &nbytes, "unique_dim: the buffer");
  if (rc == 0 && !(buf = cpu->alloc(cpu, cpu_device, (size_t)nbytes))) rc = opd_last_error_code();
  int64_t groups = 0, *order = buf, *tmp = buf + n, *off = buf + 2 * n;
  slices s = {0};
  if (rc == 0) {
    int64_t rest[OPD_MAX_DIMS], one = 1;
    for (int k = 0; k < nd; k++) rest[k] = k == d ? 1 : sizes[k];
    opd__walk w;
    opd__walk_init(&w, nd ? rest : &one, nd, 1);
    opd__walk_set_strides(&w, 0, opd_tensor_strides(self));
    opd__walk_seek(&w, 0);
    for (int64_t p = 0; p < m; p++, opd__walk_next(&w)) off[p] = w.off[0];
    opd_dtype t = opd_tensor_dtype(self);
    s = (slices){.data = opd_tensor_data(self),
                 .t = t,
                 .floating = opd_dtype_is_floating(t),
                 .m = m,
                 .step = nd ? opd_tensor_strides(self)[d] : 0,
                 .off = off};
    for (int64_t j = 0; j < n; j++) order[j] = j;
    if (self->numel > 0) sort_slices(&s, order, tmp, n);
    for (int64_t j = 0; j < n && self->numel > 0; j++)
      groups += j == 0 || !slice_equal(&s, order[j - 1], order[j]);
  }
  /* the unique slices: (groups, the other dims in order) contiguous, moved back to dim */
  int64_t osizes[OPD_MAX_DIMS], ostrides[OPD_MAX_DIMS];
  if (rc == 0) {
    int64_t st = 1;
    for (int k = nd - 1; k >= 0; k--) {
      if (k == d) continue;
      osizes[k] = sizes[k];
      ostrides[k] = st;
      st *= sizes[k] > 1 ? sizes[k] : 1;
    }
    if (nd) osizes[d] = self->numel > 0 ? groups : 0, ostrides[d] = st;
    if (self->numel == 0)
      for (int k = nd - 1, c = 1; k >= 0; k--) /* an empty self's shape, contiguous */
        osizes[k] = sizes[k], ostrides[k] = c, c *= sizes[k] > 1 ? sizes[k] : 1;
    rc =
        opd__call_empty_strided((opd_int_list){osizes, nd}, (opd_int_list){ostrides, nd},
                                opd_tensor_dtype(self), -1, cpu_device, (opd_opt_bool){0}, &res[0]);
  }
  opd_out_spec is = {.ndim = 1, .dtype = OPD_INT64, .sizes = {self->numel > 0 ? n : 0}};
  opd_out_spec cs = {.ndim = 1, .dtype = OPD_INT64, .sizes = {groups}};
  if (rc == 0) rc = opd__alloc_output(&is, cpu_device, &res[1]);
  if (rc == 0) rc = opd__alloc_output(&cs, cpu_device, &res[2]);
  if (rc == 0 && self->numel > 0) {
    size_t es = opd_dtype_size(s.t);
    int64_t *inverse = opd_tensor_data(res[1]), *counts = opd_tensor_data(res[2]);
    char *out = opd_tensor_data(res[0]);
    /* out's offset of each slice element: the walk of `off`, over out's strides */
    int64_t rest[OPD_MAX_DIMS], one = 1;
    for (int k = 0; k < nd; k++) rest[k] = k == d ? 1 : sizes[k];
    opd__walk w;
    opd__walk_init(&w, nd ? rest : &one, nd, 1);
    opd__walk_set_strides(&w, 0, ostrides);
    for (int64_t j = 0, g = -1; j < n; j++) {
      if (j == 0 || !slice_equal(&s, order[j - 1], order[j])) {
        g++;
        counts[g] = 0;
        opd__walk_seek(&w, 0);
        for (int64_t p = 0; p < m; p++, opd__walk_next(&w))
          memcpy(out + (g * (nd ? ostrides[d] : 0) + w.off[0]) * (int64_t)es,
                 s.data + (order[j] * s.step + off[p]) * (int64_t)es, es);
      }
      counts[g]++;
      inverse[order[j]] = g;
    }
  }
  if (buf) cpu->free(cpu, cpu_device, buf, (size_t)nbytes);
  opd_stack_drop(stack, 5);
  return opd__push_results(stack, res, 3, rc);
}

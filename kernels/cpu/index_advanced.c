/* index_advanced.c: the CPU kernels of index.Tensor and _index_put_impl_ ([Note: Advanced
 * indexing]; the plan and its checks in kernels/meta/index_advanced_meta.c). Every index is
 * checked while the plan is made, before any element moves. index.Tensor walks its result in
 * parallel; _index_put_impl_ walks serially, in the result's row-major order, so that
 * duplicate indices accumulate (or, without accumulate, the last write wins) in that order. */
#include <string.h>

#include "index_walk.h"
#include "opd/checked.h"
#include "meta/index_advanced_meta.h"
#include "src/parallel.h"

typedef struct adv_job {
  const opd__adv_plan *p;
  opd__walk w; /* the result's positions: op 0 the result (index) or values (put) */
  const int64_t *self_strides, *self_sizes;
  char *self;
  char *other; /* index: the result (written); put: values (read) */
  size_t es;
  opd_dtype dtype;
  bool put, accumulate;
} adv_job;

/* self's element offset of the result position w is at */
static int64_t self_offset(const adv_job *j, const opd__walk *w) {
  const opd__adv_plan *p = j->p;
  int64_t bcoord[OPD_MAX_DIMS], off = 0;
  for (int r = 0; r < p->ndim; r++) {
    if (p->map[r] >= 0)
      off += w->idx[r] * j->self_strides[p->map[r]];
    else
      bcoord[-1 - p->map[r]] = w->idx[r];
  }
  for (int k = 0; k < p->nidx; k++) {
    const opd__adv_index *x = &p->idx[k];
    int64_t io = 0;
    for (int b = 0; b < p->nb; b++) io += bcoord[b] * x->strides[b];
    int64_t v = x->data[io], size = j->self_sizes[x->dim];
    off += (v < 0 ? v + size : v) * j->self_strides[x->dim]; /* checked by the plan */
  }
  return off;
}

static void adv_range(void *ctx, int64_t begin, int64_t end) {
  const adv_job *j = ctx;
  opd__walk w = j->w;
  opd__walk_seek(&w, begin);
  for (int64_t i = begin; i < end; i++, opd__walk_next(&w)) {
    char *s = j->self + self_offset(j, &w) * (int64_t)j->es;
    char *o = j->other + w.off[0] * (int64_t)j->es;
    if (!j->put)
      memcpy(o, s, j->es);
    else
      opd__elem_reduce(s, o, j->dtype, j->accumulate ? OPD__REDUCE_SUM : OPD__REDUCE_NONE);
  }
}

static void adv_init(adv_job *j, const opd__adv_plan *p, opd_tensor *self) {
  j->p = p;
  j->self = opd_tensor_data(self);
  j->self_strides = opd_tensor_strides(self);
  j->self_sizes = opd_tensor_sizes(self);
  j->dtype = opd_tensor_dtype(self);
  j->es = opd_dtype_size(j->dtype);
  opd__walk_init(&j->w, p->sizes, p->ndim, 1);
}

int opd__cpu_index_tensor(const opd_kernel_ctx *ctx, opd_tensor *self, opd_tensor_list indices,
                          opd_tensor **out) {
  (void)ctx;
  opd__adv_plan p;
  opd_tensor *r = NULL;
  int rc = opd__adv_plan_make(self, indices, true, &p);
  opd_out_spec spec = {.ndim = p.ndim, .dtype = opd_tensor_dtype(self)};
  memcpy(spec.sizes, p.sizes, (size_t)p.ndim * sizeof(int64_t));
  if (rc == 0) rc = opd__alloc_output(&spec, (opd_device){OPD_DEVICE_CPU, -1}, &r);
  if (rc == 0 && r->numel > 0) {
    adv_job j = {.put = false};
    adv_init(&j, &p, self);
    opd__walk_set_strides(&j.w, 0, opd_tensor_strides(r));
    j.other = opd_tensor_data(r);
    opd__parallel_for(0, r->numel, OPD_GRAIN_ELEMENTWISE, adv_range, &j);
  }
  opd__adv_plan_free(&p);
  if (rc == 0) *out = r;
  return rc;
}

int opd__cpu_index_put_impl_(const opd_kernel_ctx *ctx, opd_tensor *self, opd_tensor_list indices,
                             opd_tensor *values, bool accumulate, bool unsafe, opd_tensor **out) {
  (void)ctx;
  (void)unsafe;
  opd__adv_plan p;
  int rc = opd__adv_plan_make(self, indices, true, &p);
  if (rc == 0) rc = opd__adv_put_check(self, values, &p);
  if (rc == 0) rc = opd__assert_no_internal_overlap(self);
  if (rc == 0) rc = opd__assert_no_partial_overlap(self, values);
  int64_t numel = 0;
  if (rc == 0) rc = opd_ckd_numel(p.sizes, (size_t)p.ndim, &numel, "index_put");
  if (rc == 0 && numel > 0 && self->numel > 0) {
    adv_job j = {.put = true, .accumulate = accumulate};
    adv_init(&j, &p, self);
    int64_t vs[OPD_MAX_DIMS];
    for (int d = 0; d < p.ndim; d++) { /* values broadcast to the result's shape */
      int k = d - (p.ndim - values->ndim);
      vs[d] =
          k >= 0 && opd_tensor_sizes(values)[k] == p.sizes[d] ? opd_tensor_strides(values)[k] : 0;
    }
    opd__walk_set_strides(&j.w, 0, vs);
    j.other = opd_tensor_data(values);
    adv_range(&j, 0, numel);
  }
  opd__adv_plan_free(&p);
  if (rc) return rc;
  opd_tensor_bump_version(self);
  opd_tensor_retain(self);
  *out = self;
  return 0;
}

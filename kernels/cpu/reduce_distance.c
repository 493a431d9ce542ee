/* reduce_distance.c: the CPU kernels of _cdist_forward and _pdist_forward (shapes in
 * kernels/meta/reduce_distance_meta.c).
 *
 * [Note: p-norm distances]
 * The distance of two rows is ATen's p-norm of their difference: p = 0 counts the elements
 * that differ, p = 1 sums |d|, p = 2 is the square root of the sum of d^2, p = inf the
 * largest |d|, any other p (sum |d|^p)^(1/p); computed in double and rounded to the result's
 * dtype. PyTorch's _cdist_forward computes p = 2 through matrix products instead when
 * compute_mode asks for it (1, or 0 with more than 25 rows on either side): the sqrt of
 * |x|^2 + |y|^2 - 2 x.y clamped at 1e-30; the direct sum here differs from it by that
 * formula's rounding only, and is exact for equal rows where it gives 1e-15. The pairs are
 * split over the intra-op pool. */
#include <math.h>

#include "index_walk.h"
#include "meta/reduce_distance_meta.h"
#include "src/parallel.h"

static const opd_device cpu_device = {OPD_DEVICE_CPU, -1};

/* The distance of the c elements at a and b (element strides as, bs). */
static double distance(const char *a, int64_t as, const char *b, int64_t bs, int64_t c, opd_dtype t,
                       double p) {
  size_t es = opd_dtype_size(t);
  double acc = 0;
  for (int64_t k = 0; k < c; k++) {
    double d = fabs(opd__elem_get_f(a + k * as * (int64_t)es, t) -
                    opd__elem_get_f(b + k * bs * (int64_t)es, t));
    if (p == 0)
      acc += d != 0;
    else if (p == 1)
      acc += d;
    else if (p == 2)
      acc += d * d;
    else if (isinf(p))
      acc = d > acc || isnan(d) ? d : acc;
    else
      acc += pow(d, p);
  }
  if (p == 2) return sqrt(acc);
  if (p == 0 || p == 1 || isinf(p)) return acc;
  return pow(acc, 1 / p);
}

typedef struct cdist_job {
  opd_tensor *x1, *x2, *out;
  const opd_out_spec *spec;
  int64_t r1, r2, c;
  double p;
} cdist_job;

/* The element offset of position `lin` of the result's batch in x (its batch dims align
 * right, size 1 broadcasts). */
static int64_t batch_offset(const opd_out_spec *spec, int64_t lin, const opd_tensor *x) {
  int nb = spec->ndim - 2, xb = x->ndim - 2;
  int64_t off = 0;
  for (int d = nb - 1, t = xb - 1; d >= 0; d--, t--) {
    int64_t i = lin % spec->sizes[d];
    lin /= spec->sizes[d];
    if (t >= 0 && opd_tensor_sizes(x)[t] != 1) off += i * opd_tensor_strides(x)[t];
  }
  return off;
}

static void cdist_range(void *ctx, int64_t begin, int64_t end) {
  const cdist_job *j = ctx;
  opd_dtype t = opd_tensor_dtype(j->out);
  size_t es = opd_dtype_size(t);
  const int64_t *s1 = opd_tensor_strides(j->x1), *s2 = opd_tensor_strides(j->x2);
  int n1 = j->x1->ndim, n2 = j->x2->ndim;
  const char *d1 = opd_tensor_data(j->x1), *d2 = opd_tensor_data(j->x2);
  char *o = opd_tensor_data(j->out);
  for (int64_t q = begin; q < end; q++) { /* q: (batch, i, k) of the contiguous result */
    int64_t k = q % j->r2, i = q / j->r2 % j->r1, b = q / j->r2 / j->r1;
    const char *a = d1 + (batch_offset(j->spec, b, j->x1) + i * s1[n1 - 2]) * (int64_t)es;
    const char *c = d2 + (batch_offset(j->spec, b, j->x2) + k * s2[n2 - 2]) * (int64_t)es;
    opd__elem_put_f(o + q * (int64_t)es, t, distance(a, s1[n1 - 1], c, s2[n2 - 1], j->c, t, j->p));
  }
}

int opd__cpu_cdist_forward(const opd_kernel_ctx *ctx, opd_tensor *x1, opd_tensor *x2, double p,
                           opd_opt_int compute_mode, opd_tensor **out) {
  (void)ctx;
  opd_out_spec spec;
  opd_tensor *r = NULL;
  int rc = opd__cdist_meta(x1, x2, p, compute_mode, &spec);
  if (rc || (rc = opd__alloc_output(&spec, cpu_device, &r))) return rc;
  cdist_job j = {.x1 = x1,
                 .x2 = x2,
                 .out = r,
                 .spec = &spec,
                 .r1 = spec.sizes[spec.ndim - 2],
                 .r2 = spec.sizes[spec.ndim - 1],
                 .c = opd_tensor_sizes(x1)[x1->ndim - 1],
                 .p = p};
  if (r->numel > 0) {
    int64_t grain = OPD_GRAIN_ELEMENTWISE / (j.c > 0 ? j.c : 1);
    opd__parallel_for(0, r->numel, grain > 0 ? grain : 1, cdist_range, &j);
  }
  *out = r;
  return 0;
}

typedef struct pdist_job {
  const char *x;
  char *out;
  opd_dtype t;
  int64_t n, m;
  double p;
} pdist_job;

static void pdist_range(void *ctx, int64_t begin, int64_t end) {
  const pdist_job *j = ctx;
  size_t es = opd_dtype_size(j->t);
  /* the pair (i, k), i < k, of result position `begin`: rows i hold n - 1 - i pairs each */
  int64_t i = 0, first = 0;
  while (first + (j->n - 1 - i) <= begin) first += j->n - 1 - i++;
  int64_t k = i + 1 + (begin - first);
  for (int64_t q = begin; q < end; q++) {
    const char *a = j->x + i * j->m * (int64_t)es, *b = j->x + k * j->m * (int64_t)es;
    opd__elem_put_f(j->out + q * (int64_t)es, j->t, distance(a, 1, b, 1, j->m, j->t, j->p));
    if (++k == j->n) i++, k = i + 1;
  }
}

int opd__cpu_pdist_forward(const opd_kernel_ctx *ctx, opd_tensor *self, double p,
                           opd_tensor **out) {
  (void)ctx;
  opd_out_spec spec;
  opd_tensor *r = NULL;
  int rc = opd__pdist_meta(self, &spec);
  if (rc || (rc = opd__alloc_output(&spec, cpu_device, &r))) return rc;
  pdist_job j = {.x = opd_tensor_data(self),
                 .out = opd_tensor_data(r),
                 .t = spec.dtype,
                 .n = opd_tensor_sizes(self)[0],
                 .m = opd_tensor_sizes(self)[1],
                 .p = p};
  if (r->numel > 0) {
    int64_t grain = OPD_GRAIN_ELEMENTWISE / (j.m > 0 ? j.m : 1);
    opd__parallel_for(0, r->numel, grain > 0 ? grain : 1, pdist_range, &j);
  }
  *out = r;
  return 0;
}

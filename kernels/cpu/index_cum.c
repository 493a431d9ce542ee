/* index_cum.c: the CPU kernels of cumsum, cumprod and _logcumsumexp (output dtype in
 * kernels/meta/index_cum_meta.c). As ATen's CPU kernels: each element of self is converted
 * to the output's dtype, then accumulated along dim in the accumulation type of the CPU
 * (double for floating outputs, int64 for integers, wrapping), and each partial result is
 * converted back to the output's dtype. _logcumsumexp (floating only) keeps its running value
 * in the output's dtype, as ATen's kernel does. */
#include <math.h>
#include <string.h>

#include "index_walk.h"
#include "meta/index_cum_meta.h"
#include "src/parallel.h"

typedef struct cum_job {
  opd__walk outer; /* self (op 0) and out (op 1) with dim held at 0 */
  int64_t len, self_step, out_step;
  const char *self;
  char *out;
  opd_dtype st, ot;
  bool prod, logsumexp;
} cum_job;

/* ATen's log_add_exp of logcumsumexp: x the new element, acc the running value (NaN taken
 * from acc first, as std::min and std::max return their first argument for a NaN second);
 * two equal infinities give x (log1p(exp(inf - inf)) would be NaN). */
static double log_add_exp(double x, double acc) {
  double lo = isnan(acc) ? acc : fmin(x, acc), hi = isnan(acc) ? acc : fmax(x, acc);
  if (isnan(x)) lo = hi = x;
  if (lo != hi || isfinite(lo)) return log1p(exp(lo - hi)) + hi;
  return x;
}

/* An element of dtype st as a value of dtype ot: *f for a floating ot, *i otherwise. */
static void convert(const char *p, opd_dtype st, opd_dtype ot, double *f, int64_t *i) {
  if (opd_dtype_is_floating(ot)) {
    char tmp[8];
    double v = opd_dtype_is_floating(st) ? opd__elem_get_f(p, st) : (double)opd__elem_get_i(p, st);
    opd__elem_put_f(tmp, ot, v); /* rounded to ot, as ATen's self.to(dtype) */
    *f = opd__elem_get_f(tmp, ot);
    return;
  }
  if (!opd_dtype_is_floating(st)) {
    *i = opd__elem_get_i(p, st);
  } else {
    double v = opd__elem_get_f(p, st);
    /* C's conversion is undefined out of int64's range (and for NaN); ATen's too */
    *i = ot == OPD_BOOL ? v != 0 : isnan(v) || fabs(v) >= 9.2e18 ? 0 : (int64_t)v;
  }
  char tmp[8];
  opd__elem_put_i(tmp, ot, *i); /* truncated to ot */
  *i = opd__elem_get_i(tmp, ot);
}

static void cum_range(void *ctx, int64_t begin, int64_t end) {
  const cum_job *j = ctx;
  opd__walk w = j->outer;
  size_t ses = opd_dtype_size(j->st), oes = opd_dtype_size(j->ot);
  bool floating = opd_dtype_is_floating(j->ot);
  opd__walk_seek(&w, begin);
  for (int64_t p = begin; p < end; p++, opd__walk_next(&w)) {
    double facc = j->prod ? 1 : 0;
    int64_t iacc = j->prod ? 1 : 0;
    for (int64_t k = 0; k < j->len; k++) {
      const char *src = j->self + (w.off[0] + k * j->self_step) * (int64_t)ses;
      char *dst = j->out + (w.off[1] + k * j->out_step) * (int64_t)oes;
      double f = 0;
      int64_t i = 0;
      convert(src, j->st, j->ot, &f, &i);
      if (j->logsumexp) {
        /* the running value is held in the output's dtype, as ATen's */
        opd__elem_put_f(dst, j->ot, log_add_exp(f, k == 0 ? -INFINITY : facc));
        facc = opd__elem_get_f(dst, j->ot);
      } else if (floating) {
        facc = j->prod ? facc * f : facc + f;
        opd__elem_put_f(dst, j->ot, facc);
      } else {
        iacc = j->prod ? OPD__WRAP_MUL(int64_t, iacc, i) : OPD__WRAP_ADD(int64_t, iacc, i);
        opd__elem_put_i(dst, j->ot, iacc);
      }
    }
  }
}

static int cum(opd_tensor *self, int64_t dim, opd_dtype dtype, bool prod, bool logsumexp,
               opd_tensor **out) {
  int64_t d;
  opd_out_spec spec;
  opd_tensor *r = NULL;
  int rc = logsumexp ? opd__logcumsumexp_meta(self, dim, &d, &spec)
                     : opd__cum_meta(self, dim, dtype, &d, &spec);
  if (rc == 0) rc = opd__alloc_output(&spec, (opd_device){OPD_DEVICE_CPU, -1}, &r);
  if (rc) return rc;
  if (r->numel > 0) {
    cum_job j = {.self = opd_tensor_data(self),
                 .out = opd_tensor_data(r),
                 .st = opd_tensor_dtype(self),
                 .ot = spec.dtype,
                 .prod = prod,
                 .logsumexp = logsumexp};
    int64_t sizes[OPD_MAX_DIMS], one = 1, zero = 0;
    int nd = self->ndim ? self->ndim : 1;
    memcpy(sizes, self->ndim ? opd_tensor_sizes(self) : &one, (size_t)nd * sizeof *sizes);
    j.len = sizes[d];
    sizes[d] = 1;
    opd__walk_init(&j.outer, sizes, nd, 2);
    opd__walk_set_strides(&j.outer, 0, self->ndim ? opd_tensor_strides(self) : &zero);
    opd__walk_set_strides(&j.outer, 1, self->ndim ? opd_tensor_strides(r) : &zero);
    j.self_step = self->ndim ? opd_tensor_strides(self)[d] : 0;
    j.out_step = self->ndim ? opd_tensor_strides(r)[d] : 0;
    int64_t grain = OPD_GRAIN_ELEMENTWISE / j.len;
    opd__parallel_for(0, r->numel / j.len, grain > 0 ? grain : 1, cum_range, &j);
  }
  *out = r;
  return 0;
}

int opd__cpu_cumsum(const opd_kernel_ctx *ctx, opd_tensor *self, int64_t dim, opd_dtype dtype,
                    opd_tensor **out) {
  (void)ctx;
  return cum(self, dim, dtype, false, false, out);
}

int opd__cpu_cumprod(const opd_kernel_ctx *ctx, opd_tensor *self, int64_t dim, opd_dtype dtype,
                     opd_tensor **out) {
  (void)ctx;
  return cum(self, dim, dtype, true, false, out);
}

int opd__cpu_logcumsumexp_impl(const opd_kernel_ctx *ctx, opd_tensor *self, int64_t dim,
                               opd_tensor **out) {
  (void)ctx;
  return cum(self, dim, OPD_DTYPE_UNDEFINED, false, true, out);
}

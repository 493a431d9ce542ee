/* reduce_moments.c: the CPU kernels of the reductions that read each output's elements more
 * than once or through a function: var / std (var.correction, std.correction and the boxed
 * var_mean.correction, std_mean.correction) and the vector norms (linalg_vector_norm,
 * norm.ScalarOpt_dim, norm.ScalarOpt_dim_dtype).
 *
 * [Note: Moments and norms in double]
 * Each output's reduced elements are walked in the input's own layout (kept and reduced dims as
 * in [Note: The reduction engine], converted to double in chunks of BUF elements), and every
 * value accumulates in double whatever the input's dtype, the result rounded once to the output
 * dtype. var and the mean are Welford's running mean and sum of squared deviations M2, as
 * PyTorch's (an infinity followed by a finite element makes the mean NaN there too);
 * var = M2 / max(0, N - correction) as PyTorch's (N = 1 with correction 1 gives 0 / 0 = NaN, an
 * empty reduction NaN); std = sqrt(var). A norm of order p is sum |x|^p ^ (1 / p), with p = 2
 * as sqrt(sum x^2), p = 1 as sum |x|, p = 0 the count of non-zero elements (NaN counts), inf and
 * -inf the largest and smallest |x| (NaN propagating). Outputs are split over the intra-op pool.
 */
#include <assert.h>
#include <math.h>

#include "meta/reduce_meta.h"
#include "reduce_span.h"
#include "reduce_walk.h"
#include "src/parallel.h"

enum { BUF = 512, GRAIN = 32768 };

typedef enum { M_VAR, M_STD, M_NORM } moment_op;

typedef struct moments {
  moment_op op;
  double correction, ord;
  const char *in;
  opd_dtype in_dtype;
  size_t in_size;
  opd__dims kept, red;
  int64_t nred;
  opd_tensor *out, *mean; /* mean: var_mean / std_mean's second result, or NULL */
} moments;

typedef struct norm_acc {
  double sum, max, min, count;
} norm_acc;

/* Calls fn on the reduced elements of the output at kept offset kofs, as doubles in chunks. */
typedef void (*chunk_fn)(void *st, const double *x, int64_t n);
static void walk(const moments *m, int64_t kofs, chunk_fn fn, void *st) {
  double buf[BUF];
  int64_t is = m->red.stride[m->red.n - 1], lin = 0;
  opd__iter it;
  opd__iter_seek(&it, &m->red, 0);
  while (lin < m->nred) {
    int64_t n = 0;
    while (n < BUF && lin < m->nred) {
      int64_t take = opd__iter_run_left(&it);
      if (take > BUF - n) take = BUF - n;
      opd__load_f64(m->in + (kofs + it.off) * (int64_t)m->in_size, is, m->in_dtype, take, buf + n);
      n += take;
      lin += take;
      if (lin < m->nred) opd__iter_step(&it, take);
    }
    fn(st, buf, n);
  }
}

typedef struct welford {
  double mean, m2, n;
} welford;

static void add_welford(void *st, const double *x, int64_t n) {
  welford *w = st;
  for (int64_t i = 0; i < n; i++) {
    w->n += 1;
    double delta = x[i] - w->mean;
    w->mean += delta / w->n;
    w->m2 += delta * (x[i] - w->mean);
  }
}

static void add_norm(void *st, const double *x, int64_t n, double ord) {
  norm_acc *a = st;
  for (int64_t i = 0; i < n; i++) {
    double v = fabs(x[i]);
    if (ord == 0)
      a->count += x[i] != 0;
    else if (ord == INFINITY)
      a->max = opd__max_nan_d(a->max, v);
    else if (ord == -INFINITY)
      a->min = v < a->min || v != v ? v : a->min;
    else if (ord == 1)
      a->sum += v;
    else if (ord == 2)
      a->sum += v * v;
    else
      a->sum += pow(v, ord);
  }
}

typedef struct norm_walk {
  norm_acc a;
  double ord;
} norm_walk;

static void add_norm_chunk(void *st, const double *x, int64_t n) {
  norm_walk *w = st;
  add_norm(&w->a, x, n, w->ord);
}

static double norm_of(const moments *m, int64_t kofs) {
  if (m->nred == 0) return 0; /* (vector_norm refused the orders without an identity) */
  norm_walk w = {{0, 0, INFINITY, 0}, m->ord};
  walk(m, kofs, add_norm_chunk, &w);
  double p = m->ord;
  if (p == 0) return w.a.count;
  if (p == INFINITY) return w.a.max;
  if (p == -INFINITY) return w.a.min;
  if (p == 1) return w.a.sum;
  if (p == 2) return sqrt(w.a.sum);
  return pow(w.a.sum, 1 / p);
}

static void moments_task(void *ctx, int64_t begin, int64_t end) {
  const moments *m = ctx;
  opd_dtype dt = opd_tensor_dtype(m->out);
  size_t osz = opd_dtype_size(dt);
  opd__iter it;
  opd__iter_seek(&it, &m->kept, begin);
  for (int64_t o = begin; o < end; o++) {
    char *dst = (char *)opd_tensor_data(m->out) + o * (int64_t)osz;
    if (m->op == M_NORM) {
      opd__store_float(dst, dt, norm_of(m, it.off));
    } else {
      welford a = {0, 0, 0};
      if (m->nred > 0) walk(m, it.off, add_welford, &a);
      double div = (double)m->nred - m->correction;
      double var = m->nred > 0 ? a.m2 / (div > 0 ? div : 0) : NAN;
      if (m->nred == 0) a.mean = NAN;
      opd__store_float(dst, dt, m->op == M_STD ? sqrt(var) : var);
      if (m->mean)
        opd__store_float((char *)opd_tensor_data(m->mean) + o * (int64_t)osz, dt, a.mean);
    }
    if (o + 1 < end) opd__iter_step(&it, 1);
  }
}

/* Computes m->out (and m->mean) from self reduced over mask. */
static void run(moments *m, const opd_tensor *self, uint64_t mask) {
  const int64_t *sizes = opd_tensor_sizes(self), *strides = opd_tensor_strides(self);
  m->kept.n = m->red.n = 0;
  m->nred = 1;
  for (int d = 0; d < self->ndim; d++) {
    if (mask >> d & 1) m->nred *= sizes[d];
    opd__dims *x = mask >> d & 1 ? &m->red : &m->kept;
    if (sizes[d] != 1) opd__dims_push(x, sizes[d], strides[d]);
  }
  if (self->numel == 0) m->nred = 0; /* (the product above may hold an empty dim's 0 only) */
  opd__dims_coalesce(&m->kept);
  opd__dims_coalesce(&m->red);
  m->in = opd_tensor_data(self);
  m->in_dtype = opd_tensor_dtype(self);
  m->in_size = opd_dtype_size(m->in_dtype);
  int64_t nout = m->out->numel, work = m->nred > 0 ? m->nred : 1;
  if (nout > 0) opd__parallel_for(0, nout, work >= GRAIN ? 1 : GRAIN / work, moments_task, m);
}

/* The CPU's compute of var, std and the norms ([Note: A reduction's wrapper and its device's
 * compute]): call->op a moment_op. */
static int moments_cpu(const opd__red_call *call, opd_tensor *self, uint64_t mask,
                       const opd_out_spec *spec, opd_tensor **out, opd_tensor **mean) {
  bool with_mean = mean != NULL;
  moments m = {.op = (moment_op)call->op, .correction = call->correction, .ord = call->ord};
  int rc = opd__alloc_output(spec, opd_tensor_device(self), &m.out);
  if (!rc && with_mean) rc = opd__alloc_output(spec, opd_tensor_device(self), &m.mean);
  if (rc) {
    if (m.out) opd_tensor_release(m.out);
    return rc;
  }
  run(&m, self, mask);
  *out = m.out;
  if (with_mean) *mean = m.mean;
  return 0;
}

int opd__cpu_var_correction(const opd_kernel_ctx *ctx, opd_tensor *self, opd_int_list dim,
                            opd_opt_int correction, bool keepdim, opd_tensor **out) {
  (void)ctx;
  return opd__var_run(moments_cpu, M_VAR, self, dim, correction, keepdim, out);
}

int opd__cpu_std_correction(const opd_kernel_ctx *ctx, opd_tensor *self, opd_int_list dim,
                            opd_opt_int correction, bool keepdim, opd_tensor **out) {
  (void)ctx;
  return opd__var_run(moments_cpu, M_STD, self, dim, correction, keepdim, out);
}

int opd__cpu_var_mean_correction(const opd_kernel_ctx *ctx, opd_stack *stack) {
  (void)ctx;
  return opd__var_mean_run(moments_cpu, M_VAR, "var_mean", stack);
}

int opd__cpu_std_mean_correction(const opd_kernel_ctx *ctx, opd_stack *stack) {
  (void)ctx;
  return opd__var_mean_run(moments_cpu, M_STD, "std_mean", stack);
}

int opd__cpu_linalg_vector_norm(const opd_kernel_ctx *ctx, opd_tensor *self, opd_scalar ord,
                                opd_int_list dim, bool keepdim, opd_dtype dtype, opd_tensor **out) {
  (void)ctx;
  return opd__vector_norm_run(moments_cpu, M_NORM, self, ord, dim, keepdim, dtype, out);
}

int opd__cpu_norm_scalaropt_dim(const opd_kernel_ctx *ctx, opd_tensor *self, opd_scalar p,
                                opd_int_list dim, bool keepdim, opd_tensor **out) {
  (void)ctx;
  return opd__norm_run(moments_cpu, M_NORM, self, p, dim, keepdim, OPD_DTYPE_UNDEFINED, out);
}

int opd__cpu_norm_scalaropt_dim_dtype(const opd_kernel_ctx *ctx, opd_tensor *self, opd_scalar p,
                                      opd_int_list dim, bool keepdim, opd_dtype dtype,
                                      opd_tensor **out) {
  (void)ctx;
  return opd__norm_run(moments_cpu, M_NORM, self, p, dim, keepdim, dtype, out);
}

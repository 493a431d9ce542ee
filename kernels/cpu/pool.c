/* pool.c: the CPU kernels of the pooling operators (max, average, adaptive average and
 * adaptive max pooling, their backward operators, max_unpool2d); checks and shapes in
 * kernels/meta/pool_meta.c.
 *
 * [Note: Pooling on the CPU]
 * Inputs are made contiguous; each plane (the flattened batch and channel dims) is
 * independent, so planes are split over the intra-op pool. Windows, their clipping and the
 * divisors follow PyTorch 1.13's CPU kernels exactly: a max window starts at its first
 * position inside the input (stepping by the dilation), its index is that position's until
 * a larger value or a NaN (which then wins, the last NaN of the window) replaces it; an
 * average window's divisor counts the padding it covers when count_include_pad (an int64
 * average, avg_pool3d's, sums and divides as integers, truncating), adaptive
 * windows are [floor(o * in / out), ceil((o + 1) * in / out)). Values are accumulated in
 * double and rounded once (bfloat16 through float). Indices read by backward operators and
 * max_unpool2d come from the caller: each is checked against its plane before it is used.
 */
#include <math.h>
#include <stdatomic.h>
#include <string.h>

#include "conv_impl.h"
#include "meta/pool_meta.h"
#include "src/parallel.h"

/* max_unpool2d takes float32 and float64 (the poolings' dtypes: [Note: A pooling's wrapper and
 * its device's run] in kernels/meta/pool_meta.h). */
static int check_dtype(opd_dtype t, const char *op) {
  if (t == OPD_FLOAT32 || t == OPD_FLOAT64) return 0;
  return opd_error(OPD_EINVAL, "\"%s\" not implemented for '%s'", op, opd_dtype_c10_name(t));
}

static inline int64_t start_index(int64_t a, int64_t b, int64_t c) {
  return (a / b) * c + ((a % b) * c) / b;
}

static inline int64_t end_index(int64_t a, int64_t b, int64_t c) {
  return 1 + ((a + 1) * c - 1) / b;
}

/* One window along a dimension: [lo, hi) stepping by step, and its divisor extent. */
typedef struct window {
  int64_t lo, hi, step, extent;
} window;

static window window_of(const opd__pool_geom *g, int d, int64_t o) {
  window w = {0, 0, 1, 0};
  int64_t in = g->in[d];
  switch (g->kind) {
  case OPD__POOL_MAX:
    w.lo = o * g->stride[d] - g->pad[d];
    w.hi = w.lo + (g->k[d] - 1) * g->dil[d] + 1;
    if (w.hi > in) w.hi = in;
    w.step = g->dil[d];
    while (w.lo < 0) w.lo += w.step;
    break;
  case OPD__POOL_AVG:
    w.lo = o * g->stride[d] - g->pad[d];
    w.hi = w.lo + g->k[d];
    if (w.hi > in + g->pad[d]) w.hi = in + g->pad[d];
    w.extent = w.hi - w.lo; /* with the padding */
    if (w.lo < 0) w.lo = 0;
    if (w.hi > in) w.hi = in;
    break;
  default:
    w.lo = start_index(o, g->out[d], in);
    w.hi = end_index(o, g->out[d], in);
    w.extent = w.hi - w.lo;
    break;
  }
  return w;
}

typedef struct pool_ctx {
  const opd__pool_geom *g;
  opd_dtype dt;
  int64_t es; /* element size */
  bool backward;
  const char *in;      /* forward: the input; backward: grad_output */
  char *out;           /* forward: the output; backward: grad_input */
  int64_t *idx;        /* max forward: the indices written */
  const int64_t *gidx; /* max backward: the indices read */
  atomic_bool bad_index;
} pool_ctx;

static void pool_plane(pool_ctx *c, int64_t p) {
  const opd__pool_geom *g = c->g;
  int64_t in_n = g->in[0] * g->in[1] * g->in[2], out_n = g->out[0] * g->out[1] * g->out[2];
  const char *src = c->in + p * (c->backward ? out_n : in_n) * c->es;
  char *dst = c->out + p * (c->backward ? in_n : out_n) * c->es;
  bool max = g->kind == OPD__POOL_MAX || g->kind == OPD__POOL_ADAPTIVE_MAX;
  if (c->backward) memset(dst, 0, (size_t)(in_n * c->es));
  if (max && c->backward) {
    const int64_t *ix = c->gidx + p * out_n;
    for (int64_t o = 0; o < out_n; o++) {
      if (ix[o] < 0 || ix[o] >= in_n) {
        atomic_store(&c->bad_index, true);
        return;
      }
      opd__cpu_store(dst, c->dt, ix[o],
                     opd__cpu_load(dst, c->dt, ix[o]) + opd__cpu_load(src, c->dt, o));
    }
    return;
  }
  int64_t o = 0;
  for (int64_t od = 0; od < g->out[0]; od++) {
    window wd = window_of(g, 0, od);
    for (int64_t oh = 0; oh < g->out[1]; oh++) {
      window wh = window_of(g, 1, oh);
      for (int64_t ow = 0; ow < g->out[2]; ow++, o++) {
        window ww = window_of(g, 2, ow);
        if (max) {
          int64_t best = (wd.lo * g->in[1] + wh.lo) * g->in[2] + ww.lo;
          double mv = -INFINITY;
          for (int64_t id = wd.lo; id < wd.hi; id += wd.step)
            for (int64_t ih = wh.lo; ih < wh.hi; ih += wh.step)
              for (int64_t iw = ww.lo; iw < ww.hi; iw += ww.step) {
                int64_t i = (id * g->in[1] + ih) * g->in[2] + iw;
                double v = opd__cpu_load(src, c->dt, i);
                if (v > mv || isnan(v)) {
                  mv = v;
                  best = i;
                }
              }
          opd__cpu_store(dst, c->dt, o, mv);
          c->idx[p * out_n + o] = best;
          continue;
        }
        /* average: the divisor as PyTorch computes it */
        int64_t divisor;
        if (g->kind == OPD__POOL_ADAPTIVE_AVG)
          divisor = wd.extent * wh.extent * ww.extent;
        else if (g->has_divisor)
          divisor = g->divisor;
        else if (g->count_include_pad)
          divisor = wd.extent * wh.extent * ww.extent;
        else
          divisor = (wd.hi - wd.lo) * (wh.hi - wh.lo) * (ww.hi - ww.lo);
        bool empty = wd.lo >= wd.hi || wh.lo >= wh.hi || ww.lo >= ww.hi;
        if (c->backward) {
          if (empty) continue;
          double gv = opd__cpu_load(src, c->dt, o) / (double)divisor;
          if (c->dt == OPD_INT64) gv = trunc(gv); /* PyTorch divides the integers first */
          for (int64_t id = wd.lo; id < wd.hi; id++)
            for (int64_t ih = wh.lo; ih < wh.hi; ih++)
              for (int64_t iw = ww.lo; iw < ww.hi; iw++) {
                int64_t i = (id * g->in[1] + ih) * g->in[2] + iw;
                opd__cpu_store(dst, c->dt, i, opd__cpu_load(dst, c->dt, i) + gv);
              }
          continue;
        }
        if (c->dt == OPD_INT64) {
          const int64_t *xs = (const int64_t *)src;
          int64_t isum = 0;
          for (int64_t id = wd.lo; id < wd.hi; id++)
            for (int64_t ih = wh.lo; ih < wh.hi; ih++)
              for (int64_t iw = ww.lo; iw < ww.hi; iw++)
                isum += xs[(id * g->in[1] + ih) * g->in[2] + iw]; /* wraps as PyTorch's does */
          ((int64_t *)dst)[o] = empty ? 0 : isum / divisor;
          continue;
        }
        double sum = 0;
        for (int64_t id = wd.lo; id < wd.hi; id++)
          for (int64_t ih = wh.lo; ih < wh.hi; ih++)
            for (int64_t iw = ww.lo; iw < ww.hi; iw++)
              sum += opd__cpu_load(src, c->dt, (id * g->in[1] + ih) * g->in[2] + iw);
        opd__cpu_store(dst, c->dt, o, empty ? 0.0 : sum / (double)divisor);
      }
    }
  }
}

static void pool_task(void *ctx, int64_t begin, int64_t end) {
  for (int64_t p = begin; p < end; p++) pool_plane(ctx, p);
}

/* The CPU's forward (src the input) or backward (src grad_output) pooling of g into out
 * ([Note: A pooling's wrapper and its device's run] in kernels/meta/pool_meta.h). */
static int pool_run(const opd__pool_geom *g, bool backward, opd_tensor *src, opd_tensor *out,
                    opd_tensor *indices, const char *op) {
  opd_tensor *x = NULL, *ix = NULL;
  int rc = opd__cpu_contiguous(src, &x);
  if (!rc && backward && indices) rc = opd__cpu_contiguous(indices, &ix);
  if (!rc) {
    pool_ctx c = {.g = g,
                  .dt = g->spec.dtype,
                  .es = (int64_t)opd_dtype_size(g->spec.dtype),
                  .backward = backward,
                  .in = opd_tensor_data(x),
                  .out = opd_tensor_data(out),
                  .idx = !backward && indices ? opd_tensor_data(indices) : NULL,
                  .gidx = ix ? opd_tensor_data(ix) : NULL};
    atomic_init(&c.bad_index, false);
    int64_t work = g->out[0] * g->out[1] * g->out[2] + g->in[0] * g->in[1] * g->in[2];
    opd__parallel_for(0, g->planes,
                      work >= OPD_GRAIN_ELEMENTWISE ? 1 : OPD_GRAIN_ELEMENTWISE / (work + 1),
                      pool_task, &c);
    if (atomic_load(&c.bad_index))
      rc = opd_error(OPD_EINVAL, "%s: an index is out of range of its plane", op);
  }
  if (x) opd_tensor_release(x);
  if (ix) opd_tensor_release(ix);
  return rc;
}

/* ---- the kernels: [Note: A pooling's wrapper and its device's run] ---- */

OPD__DEFINE_MAX_POOL_KERNELS(cpu, pool_run, 2)
OPD__DEFINE_MAX_POOL_KERNELS(cpu, pool_run, 3)
/* The dtype errors name PyTorch's CPU loops: avg_pool2d's own, the 3-d ones their frames'. */
OPD__DEFINE_AVG_POOL_KERNELS(cpu, pool_run, 2, "avg_pool2d", "avg_pool2d_backward")
OPD__DEFINE_AVG_POOL_KERNELS(cpu, pool_run, 3, "avg_pool3d_out_frame",
                             "avg_pool3d_backward_out_frame")
OPD__DEFINE_ADAPTIVE_POOL_KERNELS(cpu, pool_run, 2, "adaptive_avg_pool2d",
                                  "adaptive_avg_pool2d_backward", "adaptive_max_pool2d_backward")
OPD__DEFINE_ADAPTIVE_POOL_KERNELS(cpu, pool_run, 3, "adaptive_avg_pool3d_cpu",
                                  "adaptive_avg_pool3d_backward_cpu",
                                  "adaptive_max_pool3d_backward")

/* ---- max_unpool2d ---- */

typedef struct unpool_ctx {
  opd_dtype dt;
  int64_t es;
  const char *in;
  const int64_t *idx;
  char *out;
  int64_t in_n, out_n;
  _Atomic int64_t bad; /* the first invalid index seen, or -1 */
  atomic_bool any_bad;
} unpool_ctx;

static void unpool_task(void *ctx, int64_t begin, int64_t end) {
  unpool_ctx *c = ctx;
  for (int64_t p = begin; p < end; p++) {
    const int64_t *ix = c->idx + p * c->in_n;
    const char *src = c->in + p * c->in_n * c->es;
    char *dst = c->out + p * c->out_n * c->es;
    memset(dst, 0, (size_t)(c->out_n * c->es));
    for (int64_t i = 0; i < c->in_n; i++) {
      if (ix[i] < 0 || ix[i] >= c->out_n) {
        if (!atomic_exchange(&c->any_bad, true)) atomic_store(&c->bad, ix[i]);
        return;
      }
      opd__cpu_store(dst, c->dt, ix[i], opd__cpu_load(src, c->dt, i));
    }
  }
}

int opd__cpu_max_unpool2d(const opd_kernel_ctx *ctx, opd_tensor *self, opd_tensor *indices,
                          opd_int_list output_size, opd_tensor **out) {
  (void)ctx;
  opd__pool_geom g;
  int rc = opd__max_unpool2d_meta(self, indices, output_size, &g);
  if (!rc) rc = check_dtype(g.spec.dtype, "max_unpool2d");
  if (rc) return rc;
  opd_tensor *x = NULL, *ix = NULL, *y = NULL;
  rc = opd__cpu_contiguous(self, &x);
  if (!rc) rc = opd__cpu_contiguous(indices, &ix);
  if (!rc) rc = opd__alloc_output(&g.spec, g.device, &y);
  if (!rc) {
    unpool_ctx c = {.dt = g.spec.dtype,
                    .es = (int64_t)opd_dtype_size(g.spec.dtype),
                    .in = opd_tensor_data(x),
                    .idx = opd_tensor_data(ix),
                    .out = opd_tensor_data(y),
                    .in_n = g.out[1] * g.out[2],
                    .out_n = g.in[1] * g.in[2]};
    atomic_init(&c.bad, -1);
    atomic_init(&c.any_bad, false);
    opd__parallel_for(0, g.planes, 1, unpool_task, &c);
    if (atomic_load(&c.any_bad))
      rc = opd_error(OPD_EINVAL,
                     "Found an invalid max index: %lld (output volumes are of size %lldx%lld",
                     (long long)atomic_load(&c.bad), (long long)g.in[1], (long long)g.in[2]);
  }
  if (x) opd_tensor_release(x);
  if (ix) opd_tensor_release(ix);
  if (rc && y) opd_tensor_release(y);
  if (!rc) *out = y;
  return rc;
}

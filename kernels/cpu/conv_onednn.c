/* conv_onednn.c: the plain convolution's three operations in float32 through oneDNN (Debian's
 * libdnnl, the library PyTorch's CPU convolutions use).
 *
 * [Note: Convolution through oneDNN]
 * The operands stay plain row-major tensors at the boundary (x, w, y of conv_impl.h). The
 * convolution's primitive descriptor is created with format "any" for all three, so oneDNN
 * picks its fastest (blocked) layouts; an operand whose chosen layout differs from the plain
 * one is reordered into a scratch buffer before (inputs) or out of one after (the result),
 * as PyTorch's eager mkldnn path does for plain tensors. Groups are a leading weight
 * dimension [groups, out_c / groups, in_c / groups, k...] over the same bytes. oneDNN's
 * right padding is derived from the sizes: it must make (in + pad_l + pad_r - extent) /
 * stride + 1 the output size, and a negative value (an output padding past the padding of a
 * transposed convolution) is declined to the direct path (conv_direct.c), as are empty
 * operands and every failure to create a primitive. oneDNN keeps created primitives in its
 * own cache, keyed by their descriptors, so a shape seen before costs only the descriptors.
 * The engine is created once per process, a stream per call. oneDNN runs on its OpenMP
 * runtime; each call first sets the calling thread's OpenMP team to the threads
 * [Note: Kernel threads and the load] (parallel.h) grants, so oneDNN brings no more threads
 * than the intra-op pool would use.
 */
#include <omp.h>
#include <oneapi/dnnl/dnnl.h>
#include <pthread.h>
#include <string.h>

#include "conv_impl.h"
#include "opd/memory.h"
#include "src/parallel.h"

static dnnl_engine_t engine;
static dnnl_status_t engine_status = dnnl_runtime_error;
static pthread_once_t engine_once = PTHREAD_ONCE_INIT;

static void engine_init(void) {
  engine_status = dnnl_engine_create(&engine, dnnl_cpu, 0);
}

static int dnnl_failed(dnnl_status_t s, const char *what) {
  if (s == dnnl_out_of_memory) return opd_error(OPD_ENOMEM, "convolution: out of memory");
  return opd_error(OPD_EINTERNAL, "convolution: oneDNN failed to %s (status %d)", what, (int)s);
}

/* One operand: the plain layout the caller holds, the one the primitive wants, and the scratch
 * buffer between them when they differ. */
typedef struct operand {
  dnnl_memory_desc_t user;
  const dnnl_memory_desc_t *want;
  void *data;
  bool written;
  dnnl_memory_t mem; /* what the primitive reads or writes */
  void *scratch;
} operand;

static int reorder(const dnnl_memory_desc_t *from_md, void *from, const dnnl_memory_desc_t *to_md,
                   void *to, dnnl_stream_t stream) {
  dnnl_primitive_desc_t pd = NULL;
  dnnl_primitive_t prim = NULL;
  dnnl_memory_t src = NULL, dst = NULL;
  dnnl_status_t s = dnnl_reorder_primitive_desc_create(&pd, from_md, engine, to_md, engine, NULL);
  if (s == dnnl_success) s = dnnl_primitive_create(&prim, pd);
  if (s == dnnl_success) s = dnnl_memory_create(&src, from_md, engine, from);
  if (s == dnnl_success) s = dnnl_memory_create(&dst, to_md, engine, to);
  if (s == dnnl_success) {
    dnnl_exec_arg_t args[2] = {{DNNL_ARG_FROM, src}, {DNNL_ARG_TO, dst}};
    s = dnnl_primitive_execute(prim, stream, 2, args);
  }
  if (s == dnnl_success) s = dnnl_stream_wait(stream);
  if (dst) dnnl_memory_destroy(dst);
  if (src) dnnl_memory_destroy(src);
  if (prim) dnnl_primitive_destroy(prim);
  if (pd) dnnl_primitive_desc_destroy(pd);
  return s == dnnl_success ? 0 : dnnl_failed(s, "reorder");
}

/* Binds an operand to a memory object: the caller's buffer, or scratch in the wanted layout
 * (filled from the caller's when the operand is read). */
static int operand_bind(operand *o, dnnl_stream_t stream) {
  void *p = o->data;
  if (!dnnl_memory_desc_equal(&o->user, o->want)) {
    size_t bytes = dnnl_memory_desc_get_size(o->want);
    if (!(o->scratch = opd__aligned_alloc(64, bytes > 0 ? bytes : 64)))
      return opd_error(OPD_ENOMEM, "convolution: out of memory");
    p = o->scratch;
    int rc = o->written ? 0 : reorder(&o->user, o->data, o->want, p, stream);
    if (rc) return rc;
  }
  dnnl_status_t s = dnnl_memory_create(&o->mem, o->want, engine, p);
  return s == dnnl_success ? 0 : dnnl_failed(s, "create a memory object");
}

static void operand_release(operand *o) {
  if (o->mem) dnnl_memory_destroy(o->mem);
  if (o->scratch) opd__aligned_free(o->scratch);
}

static dnnl_format_tag_t plain_tag(int ndims) {
  static const dnnl_format_tag_t tags[] = {dnnl_abc, dnnl_abcd, dnnl_abcde, dnnl_abcdef};
  return tags[ndims - 3];
}

/* The descriptors of the operation: the forward one (the hint of the backward ones) and, for
 * a backward operation, its own. */
typedef struct descs {
  dnnl_primitive_desc_t fwd, bwd;
} descs;

static dnnl_status_t create_descs(opd__conv_op op, const opd__conv_geom *g, operand *xo,
                                  operand *wo, operand *yo, descs *d) {
  int nd = g->sdims + 2, wnd = nd + (g->groups > 1);
  dnnl_dims_t xd = {g->n, g->in_c}, yd = {g->n, g->out_c}, wd, strides, dil, pl, pr;
  int w0 = 0;
  if (g->groups > 1) wd[w0++] = g->groups;
  wd[w0++] = g->out_c / g->groups;
  wd[w0++] = g->in_c / g->groups;
  for (int i = 0; i < g->sdims; i++) {
    xd[i + 2] = g->in[i];
    yd[i + 2] = g->out[i];
    wd[w0 + i] = g->k[i];
    strides[i] = g->stride[i];
    dil[i] = g->dil[i] - 1;
    pl[i] = g->pad[i];
    int64_t extent = g->dil[i] * (g->k[i] - 1) + 1;
    pr[i] = (g->out[i] - 1) * g->stride[i] + extent - g->in[i] - g->pad[i];
    if (pr[i] < 0) pr[i] += g->stride[i] - 1;
    if (pr[i] < 0) return dnnl_unimplemented;
  }
  dnnl_memory_desc_t x_any, w_any, y_any;
  dnnl_status_t s = dnnl_memory_desc_init_by_tag(&xo->user, nd, xd, dnnl_f32, plain_tag(nd));
  if (s == dnnl_success)
    s = dnnl_memory_desc_init_by_tag(&wo->user, wnd, wd, dnnl_f32, plain_tag(wnd));
  if (s == dnnl_success)
    s = dnnl_memory_desc_init_by_tag(&yo->user, nd, yd, dnnl_f32, plain_tag(nd));
  if (s == dnnl_success)
    s = dnnl_memory_desc_init_by_tag(&x_any, nd, xd, dnnl_f32, dnnl_format_tag_any);
  if (s == dnnl_success)
    s = dnnl_memory_desc_init_by_tag(&w_any, wnd, wd, dnnl_f32, dnnl_format_tag_any);
  if (s == dnnl_success)
    s = dnnl_memory_desc_init_by_tag(&y_any, nd, yd, dnnl_f32, dnnl_format_tag_any);
  if (s != dnnl_success) return s;
  dnnl_convolution_desc_t cd;
  s = dnnl_dilated_convolution_forward_desc_init(
      &cd, op == OPD__CONV_FWD ? dnnl_forward_inference : dnnl_forward_training,
      dnnl_convolution_direct, &x_any, &w_any, NULL, &y_any, strides, dil, pl, pr);
  if (s == dnnl_success) s = dnnl_primitive_desc_create(&d->fwd, &cd, NULL, engine, NULL);
  if (s != dnnl_success) return s;
  if (op == OPD__CONV_FWD) {
    xo->want = dnnl_primitive_desc_query_md(d->fwd, dnnl_query_src_md, 0);
    wo->want = dnnl_primitive_desc_query_md(d->fwd, dnnl_query_weights_md, 0);
    yo->want = dnnl_primitive_desc_query_md(d->fwd, dnnl_query_dst_md, 0);
    return dnnl_success;
  }
  if (op == OPD__CONV_BWD_DATA)
    s = dnnl_dilated_convolution_backward_data_desc_init(&cd, dnnl_convolution_direct, &x_any,
                                                         &w_any, &y_any, strides, dil, pl, pr);
  else
    s = dnnl_dilated_convolution_backward_weights_desc_init(
        &cd, dnnl_convolution_direct, &x_any, &w_any, NULL, &y_any, strides, dil, pl, pr);
  if (s == dnnl_success) s = dnnl_primitive_desc_create(&d->bwd, &cd, NULL, engine, d->fwd);
  if (s != dnnl_success) return s;
  bool data = op == OPD__CONV_BWD_DATA;
  xo->want =
      dnnl_primitive_desc_query_md(d->bwd, data ? dnnl_query_diff_src_md : dnnl_query_src_md, 0);
  wo->want = dnnl_primitive_desc_query_md(
      d->bwd, data ? dnnl_query_weights_md : dnnl_query_diff_weights_md, 0);
  yo->want = dnnl_primitive_desc_query_md(d->bwd, dnnl_query_diff_dst_md, 0);
  return dnnl_success;
}

int opd__conv_onednn(opd__conv_op op, const opd__conv_geom *g, const opd__conv_bufs *b) {
  if (g->dtype != OPD_FLOAT32 || g->n == 0 || g->in_c == 0 || g->out_c == 0)
    return OPD__CONV_DECLINED;
  for (int i = 0; i < g->sdims; i++)
    if (g->in[i] == 0 || g->out[i] == 0) return OPD__CONV_DECLINED;
  pthread_once(&engine_once, engine_init);
  if (engine_status != dnnl_success) return OPD__CONV_DECLINED;
  operand xo = {.data = b->x, .written = op == OPD__CONV_BWD_DATA},
          wo = {.data = b->w, .written = op == OPD__CONV_BWD_WEIGHTS},
          yo = {.data = b->y, .written = op == OPD__CONV_FWD};
  descs d = {NULL, NULL};
  dnnl_status_t s = create_descs(op, g, &xo, &wo, &yo, &d);
  if (s != dnnl_success) {
    if (d.fwd) dnnl_primitive_desc_destroy(d.fwd);
    return OPD__CONV_DECLINED;
  }
  dnnl_stream_t stream = NULL;
  dnnl_primitive_t prim = NULL;
  omp_set_num_threads(opd__parallel_threads_now());
  s = dnnl_stream_create(&stream, engine, dnnl_stream_default_flags);
  int rc = s == dnnl_success ? 0 : dnnl_failed(s, "create a stream");
  if (!rc) rc = operand_bind(&xo, stream);
  if (!rc) rc = operand_bind(&wo, stream);
  if (!rc) rc = operand_bind(&yo, stream);
  if (!rc && (s = dnnl_primitive_create(&prim, d.bwd ? d.bwd : d.fwd)) != dnnl_success)
    rc = dnnl_failed(s, "create a convolution");
  if (!rc) {
    bool data = op == OPD__CONV_BWD_DATA, weights = op == OPD__CONV_BWD_WEIGHTS;
    dnnl_exec_arg_t args[3] = {
        {data ? DNNL_ARG_DIFF_SRC : DNNL_ARG_SRC, xo.mem},
        {weights ? DNNL_ARG_DIFF_WEIGHTS : DNNL_ARG_WEIGHTS, wo.mem},
        {op == OPD__CONV_FWD ? DNNL_ARG_DST : DNNL_ARG_DIFF_DST, yo.mem},
    };
    s = dnnl_primitive_execute(prim, stream, 3, args);
    if (s == dnnl_success) s = dnnl_stream_wait(stream);
    if (s != dnnl_success) rc = dnnl_failed(s, "run a convolution");
  }
  operand *out = op == OPD__CONV_FWD ? &yo : op == OPD__CONV_BWD_DATA ? &xo : &wo;
  if (!rc && out->scratch) rc = reorder(out->want, out->scratch, &out->user, out->data, stream);
  if (prim) dnnl_primitive_destroy(prim);
  if (stream) dnnl_stream_destroy(stream);
  operand_release(&xo);
  operand_release(&wo);
  operand_release(&yo);
  if (d.bwd) dnnl_primitive_desc_destroy(d.bwd);
  dnnl_primitive_desc_destroy(d.fwd);
  return rc;
}

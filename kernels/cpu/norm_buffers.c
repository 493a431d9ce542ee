/* norm_buffers.c: row-major double buffers of tensors ([Note: Normalization and losses in
 * double] in norm_buffers.h). */
#include "norm_buffers.h"

#include "opd/checked.h"
#include "opd/memory.h"
#include "reduce_walk.h"

int opd__norm_zeros(int64_t n, double **out) {
  size_t bytes;
  if (n < 0 || opd_ckd_mul(&bytes, (size_t)(n > 0 ? n : 1), sizeof(double)))
    return opd_error(OPD_EINVAL, "buffer of %lld elements is too large", (long long)n);
  if (!(*out = opd__calloc(1, bytes))) return opd_error(OPD_ENOMEM, "out of memory");
  return 0;
}

/* Loads the n elements of the walk d from t's data. */
static void load_walk(const opd_tensor *t, opd__dims *d, int64_t n, double *dst) {
  opd__dims_coalesce(d);
  opd_dtype dt = opd_tensor_dtype(t);
  int64_t esz = (int64_t)opd_dtype_size(dt), stride = d->stride[d->n - 1];
  const char *base = opd_tensor_data(t);
  opd__iter it;
  opd__iter_seek(&it, d, 0);
  for (int64_t j = 0; j < n;) {
    int64_t left = opd__iter_run_left(&it), run = left < n - j ? left : n - j;
    opd__load_f64(base + it.off * esz, stride, dt, run, dst + j);
    j += run;
    if (j < n) opd__iter_step(&it, run);
  }
}

int opd__norm_load(const opd_tensor *t, double **out) {
  *out = NULL;
  return t ? opd__norm_load_as(t, opd_tensor_sizes(t), t->ndim, out) : 0;
}

int opd__norm_load_as(const opd_tensor *t, const int64_t *sizes, int ndim, double **out) {
  int64_t n = 1;
  for (int k = 0; k < ndim; k++) n *= sizes[k];
  int rc = opd__norm_zeros(n, out);
  if (rc || n == 0) return rc;
  /* the walk of the broadcast view: stride 0 along dims t lacks or has of size 1 */
  opd__dims d = {.n = 0};
  int lead = ndim - t->ndim;
  for (int k = 0; k < ndim; k++) {
    if (sizes[k] == 1) continue;
    int64_t stride = 0;
    if (k >= lead && opd_tensor_sizes(t)[k - lead] != 1) stride = opd_tensor_strides(t)[k - lead];
    opd__dims_push(&d, sizes[k], stride);
  }
  load_walk(t, &d, n, *out);
  return 0;
}

int opd__norm_load_i64(const opd_tensor *t, int64_t **out) {
  size_t bytes;
  if (opd_ckd_mul(&bytes, (size_t)(t->numel > 0 ? t->numel : 1), sizeof(int64_t)))
    return opd_error(OPD_EINVAL, "buffer of %lld elements is too large", (long long)t->numel);
  if (!(*out = opd__malloc(bytes))) return opd_error(OPD_ENOMEM, "out of memory");
  if (t->numel == 0) return 0;
  opd__dims d;
  opd__dims_of(t, 0, t->ndim, &d);
  const int64_t *base = opd_tensor_data(t);
  opd__iter it;
  opd__iter_seek(&it, &d, 0);
  for (int64_t j = 0; j < t->numel; j++) {
    (*out)[j] = base[it.off];
    if (j + 1 < t->numel) opd__iter_step(&it, 1);
  }
  return 0;
}

int opd__norm_result(const opd_out_spec *spec, opd_tensor **out) {
  return opd__alloc_output(spec, (opd_device){OPD_DEVICE_CPU, -1}, out);
}

void opd__norm_store(opd_tensor *dst, const double *src) {
  opd_dtype dt = opd_tensor_dtype(dst);
  char *p = opd_tensor_data(dst);
  if (dt == OPD_FLOAT32) {
    float *f = (float *)p;
    for (int64_t i = 0; i < dst->numel; i++) f[i] = (float)src[i];
  } else if (dt == OPD_FLOAT64) {
    double *f = (double *)p;
    for (int64_t i = 0; i < dst->numel; i++) f[i] = src[i];
  } else {
    size_t esz = opd_dtype_size(dt);
    for (int64_t i = 0; i < dst->numel; i++) opd__store_float(p + (size_t)i * esz, dt, src[i]);
  }
}

/* norm_embedding.c: the CPU kernels of embedding_dense_backward (the gradient of
 * embedding's weight: each row of grad_output added to the row its index picks, padding_idx
 * skipped, divided by the index's count with scale_grad_by_freq) and embedding_renorm_
 * (embedding's max_norm: each row an index picks scaled down in place to max_norm when its
 * norm_type-norm exceeds it, by max_norm / (norm + 1e-7) as PyTorch). Accumulated in double
 * ([Note: Normalization and losses in double]). */
#include <math.h>
#include <stdlib.h>

#include "meta/norm_meta.h"
#include "norm_buffers.h"
#include "opd/memory.h"
#include "reduce_walk.h"

/* indices as int64 in a new buffer, each checked to be in [0, rows) */
static int load_indices(opd_tensor *indices, int64_t rows, int64_t **out) {
  int rc = 0;
  if (opd_tensor_dtype(indices) == OPD_INT64) {
    rc = opd__norm_load_i64(indices, out);
  } else { /* int32: exact in double */
    double *d = NULL;
    if (!(rc = opd__norm_load(indices, &d))) {
      *out = (int64_t *)d; /* same size; converted in place */
      for (int64_t i = 0; i < indices->numel; i++) (*out)[i] = (int64_t)d[i];
    }
  }
  if (rc) return rc;
  for (int64_t i = 0; i < indices->numel; i++)
    if ((*out)[i] < 0 || (*out)[i] >= rows)
      return opd_error(OPD_EINDEX, "index out of range in self");
  return 0;
}

int opd__cpu_embedding_dense_backward(const opd_kernel_ctx *ctx, opd_tensor *grad_output,
                                      opd_tensor *indices, int64_t num_weights, int64_t padding_idx,
                                      bool scale_grad_by_freq, opd_tensor **out) {
  (void)ctx;
  opd_out_spec spec;
  int rc = opd__embedding_backward_meta(grad_output, indices, num_weights, &spec);
  if (rc) return rc;
  int64_t d = spec.sizes[1], n = indices->numel, *idx = NULL;
  double *g = NULL, *w = NULL, *count = NULL;
  opd_tensor *r = NULL;
  if (!(rc = load_indices(indices, num_weights, &idx)) && !(rc = opd__norm_load(grad_output, &g)) &&
      !(rc = opd__norm_zeros(num_weights * d, &w)) &&
      !(rc = opd__norm_zeros(num_weights, &count)) && !(rc = opd__norm_result(&spec, &r))) {
    for (int64_t i = 0; i < n; i++) count[idx[i]] += 1;
    for (int64_t i = 0; i < n; i++) {
      if (idx[i] == padding_idx) continue;
      double scale = scale_grad_by_freq ? 1 / count[idx[i]] : 1;
      for (int64_t j = 0; j < d; j++) w[idx[i] * d + j] += g[i * d + j] * scale;
    }
    opd__norm_store(r, w);
    *out = r;
  }
  opd__free(idx);
  opd__free(g);
  opd__free(w);
  opd__free(count);
  return rc;
}

static int compare_i64(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return (x > y) - (x < y);
}

int opd__cpu_embedding_renorm_(const opd_kernel_ctx *ctx, opd_tensor *self, opd_tensor *indices,
                               double max_norm, double norm_type, opd_tensor **out) {
  (void)ctx;
  int rc = opd__embedding_renorm_meta(self, indices);
  if (rc) return rc;
  int64_t rows = opd_tensor_sizes(self)[0], d = opd_tensor_sizes(self)[1], *idx = NULL;
  if ((rc = load_indices(indices, rows, &idx))) {
    opd__free(idx);
    return rc;
  }
  qsort(idx, (size_t)indices->numel, sizeof *idx, compare_i64);
  opd_dtype dt = opd_tensor_dtype(self);
  int64_t esz = (int64_t)opd_dtype_size(dt), s0 = opd_tensor_strides(self)[0],
          s1 = opd_tensor_strides(self)[1];
  char *base = opd_tensor_data(self);
  for (int64_t i = 0; i < indices->numel; i++) {
    if (i > 0 && idx[i] == idx[i - 1]) continue; /* each row once */
    char *row = base + idx[i] * s0 * esz;
    double norm = 0;
    for (int64_t j = 0; j < d; j++) {
      double v;
      opd__load_f64(row + j * s1 * esz, 1, dt, 1, &v);
      norm += norm_type == 1 ? fabs(v) : norm_type == 2 ? v * v : pow(fabs(v), norm_type);
    }
    norm = norm_type == 1 ? norm : norm_type == 2 ? sqrt(norm) : pow(norm, 1 / norm_type);
    if (norm > max_norm) {
      double scale = max_norm / (norm + 1e-7);
      for (int64_t j = 0; j < d; j++) {
        double v;
        opd__load_f64(row + j * s1 * esz, 1, dt, 1, &v);
        opd__store_float(row + j * s1 * esz, dt, v * scale);
      }
    }
  }
  opd__free(idx);
  opd_tensor_bump_version(self);
  opd_tensor_retain(self);
  *out = self;
  return 0;
}

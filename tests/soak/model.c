/* model.c: the soak's local tensors and reference operators (model.h, [Note: Exact answers
 * in the soak]). */
#include "model.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "opd/dtype.h"
#include "tensor_helpers.h" /* opd_test_read / opd_test_write: elements by dtype */

size_t soak_numel(const soak_tensor *t) {
  size_t n = 1;
  for (int d = 0; d < t->ndim; d++) n *= (size_t)t->shape[d];
  return n;
}

size_t soak_nbytes(const soak_tensor *t) {
  return soak_numel(t) * opd_client_dtype_size(t->dtype);
}

bool soak_is_contiguous(const soak_tensor *t) {
  int64_t expected = 1;
  for (int d = t->ndim - 1; d >= 0; d--) {
    if (t->shape[d] == 1) continue;
    if (t->shape[d] == 0) return true;
    if (t->stride[d] != expected) return false;
    expected *= t->shape[d];
  }
  return true;
}

bool soak_overlaps(const soak_tensor *t) {
  for (int d = 0; d < t->ndim; d++)
    if (t->shape[d] > 1 && t->stride[d] == 0) return true;
  return false;
}

void soak_describe(const soak_tensor *t, char *out, size_t len) {
  size_t at = (size_t)snprintf(out, len, "tensor %llu, %s [", (unsigned long long)t->handle,
                               opd_dtype_name((opd_dtype)t->dtype));
  for (int d = 0; d < t->ndim && at < len; d++)
    at += (size_t)snprintf(out + at, len - at, "%s%lld", d ? ", " : "", (long long)t->shape[d]);
  for (int d = 0; d < t->ndim && at < len; d++)
    at += (size_t)snprintf(out + at, len - at, "%s%lld", d ? ", " : "] strides [",
                           (long long)t->stride[d]);
  if (at < len) snprintf(out + at, len - at, "] offset %lld", (long long)t->offset);
}

bool soak_is_arithmetic(int dtype) {
  return dtype == OPD_FLOAT32 || dtype == OPD_FLOAT64 || dtype == OPD_INT64;
}

bool soak_exact_in(int dtype, double mag, double res) {
  double digits = dtype == OPD_FLOAT32 ? 16777216.0 : 9007199254740992.0; /* 2^24, 2^53 */
  return soak_is_arithmetic(dtype) && mag / res <= digits;
}

static void contiguous_strides(soak_tensor *t) {
  int64_t s = 1;
  for (int d = t->ndim - 1; d >= 0; d--) {
    t->stride[d] = s;
    s *= t->shape[d] ? t->shape[d] : 1;
  }
}

int soak_new(soak_tensor *t, int dtype, int ndim, const int64_t *shape) {
  *t = (soak_tensor){.dtype = dtype, .ndim = ndim, .same_layout = true};
  memcpy(t->shape, shape, (size_t)ndim * sizeof *shape);
  contiguous_strides(t);
  size_t n = soak_numel(t);
  soak_storage *st = calloc(1, sizeof *st);
  double *v = calloc(n ? n : 1, sizeof *v);
  if (!st || !v) {
    free(st);
    free(v);
    return -1;
  }
  *st = (soak_storage){.refs = 1, .numel = n, .v = v, .mag = 0, .res = 1};
  t->st = st;
  return 0;
}

void soak_randomize(soak_tensor *t, soak_rng *r) {
  soak_storage *st = t->st;
  int64_t lo = -100, hi = 100;
  double scale = 1;
  if (opd_dtype_is_floating((opd_dtype)t->dtype)) lo = -32, hi = 32, scale = 0.25;
  if (t->dtype == OPD_UINT8) lo = 0, hi = 255;
  if (t->dtype == OPD_BOOL) lo = 0, hi = 1;
  for (size_t i = 0; i < st->numel; i++) st->v[i] = (double)soak_rng_range(r, lo, hi) * scale;
  st->mag = fmax(fabs((double)lo), fabs((double)hi)) * scale;
  st->res = scale;
  st->tol = 0;
}

void soak_drop(soak_tensor *t) {
  if (t->st && --t->st->refs == 0) {
    free(t->st->v);
    free(t->st);
  }
  t->st = NULL;
}

static size_t place(const soak_tensor *t, size_t i) {
  int64_t off = t->offset;
  for (int d = t->ndim - 1; d >= 0; d--) {
    off += (int64_t)(i % (size_t)t->shape[d]) * t->stride[d];
    i /= (size_t)t->shape[d];
  }
  return (size_t)off;
}

double soak_at(const soak_tensor *t, size_t i) {
  return t->st->v[place(t, i)];
}

void soak_encode(const soak_tensor *t, void *out) {
  size_t es = opd_client_dtype_size(t->dtype), n = soak_numel(t);
  for (size_t i = 0; i < n; i++)
    opd_test_write((opd_dtype)t->dtype, (char *)out + i * es, soak_at(t, i));
}

long soak_compare(const soak_tensor *t, const void *bytes, double *got, double *want) {
  size_t es = opd_client_dtype_size(t->dtype), n = soak_numel(t);
  double tol = t->st->tol, floor = !tol ? 0 : t->dtype == OPD_FLOAT64 ? 1e-300 : 1e-37;
  for (size_t i = 0; i < n; i++) {
    double g = opd_test_read((opd_dtype)t->dtype, (const char *)bytes + i * es), w = soak_at(t, i);
    if (g == w || fabs(g - w) <= tol * fabs(w) + floor) continue;
    *got = g;
    *want = w;
    return (long)i;
  }
  return -1;
}

/* ---- views ---- */

void soak_view_of(soak_tensor *out, const soak_tensor *base, int ndim, const int64_t *shape,
                  const int64_t *stride, int64_t offset) {
  soak_tensor v = {.dtype = base->dtype,
                   .ndim = ndim,
                   .offset = offset,
                   .st = base->st,
                   .same_layout = base->same_layout};
  memcpy(v.shape, shape, (size_t)ndim * sizeof *shape);
  memcpy(v.stride, stride, (size_t)ndim * sizeof *stride);
  base->st->refs++;
  *out = v;
}

void soak_transpose(soak_tensor *out, const soak_tensor *a, int d0, int d1) {
  int64_t shape[SOAK_MAX_DIMS], stride[SOAK_MAX_DIMS];
  memcpy(shape, a->shape, sizeof shape);
  memcpy(stride, a->stride, sizeof stride);
  shape[d0] = a->shape[d1], shape[d1] = a->shape[d0];
  stride[d0] = a->stride[d1], stride[d1] = a->stride[d0];
  soak_view_of(out, a, a->ndim, shape, stride, a->offset);
}

void soak_permute(soak_tensor *out, const soak_tensor *a, const int64_t *perm) {
  int64_t shape[SOAK_MAX_DIMS], stride[SOAK_MAX_DIMS];
  for (int d = 0; d < a->ndim; d++) shape[d] = a->shape[perm[d]], stride[d] = a->stride[perm[d]];
  soak_view_of(out, a, a->ndim, shape, stride, a->offset);
}

void soak_slice(soak_tensor *out, const soak_tensor *a, int dim, int64_t start, int64_t end,
                int64_t step) {
  int64_t shape[SOAK_MAX_DIMS], stride[SOAK_MAX_DIMS];
  memcpy(shape, a->shape, sizeof shape);
  memcpy(stride, a->stride, sizeof stride);
  shape[dim] = end > start ? (end - start + step - 1) / step : 0;
  stride[dim] = a->stride[dim] * step;
  soak_view_of(out, a, a->ndim, shape, stride, a->offset + start * a->stride[dim]);
}

void soak_select(soak_tensor *out, const soak_tensor *a, int dim, int64_t index) {
  int64_t shape[SOAK_MAX_DIMS], stride[SOAK_MAX_DIMS];
  if (index < 0) index += a->shape[dim];
  for (int d = 0, k = 0; d < a->ndim; d++) {
    if (d == dim) continue;
    shape[k] = a->shape[d], stride[k++] = a->stride[d];
  }
  soak_view_of(out, a, a->ndim - 1, shape, stride, a->offset + index * a->stride[dim]);
}

void soak_expand(soak_tensor *out, const soak_tensor *a, int ndim, const int64_t *sizes) {
  int64_t shape[SOAK_MAX_DIMS], stride[SOAK_MAX_DIMS];
  int lead = ndim - a->ndim;
  for (int d = 0; d < ndim; d++) {
    int ad = d - lead;
    if (ad < 0) {
      shape[d] = sizes[d], stride[d] = 0;
    } else if (sizes[d] == -1 || sizes[d] == a->shape[ad]) {
      shape[d] = a->shape[ad], stride[d] = a->stride[ad];
    } else { /* a size-1 dimension repeated */
      shape[d] = sizes[d], stride[d] = 0;
    }
  }
  soak_view_of(out, a, ndim, shape, stride, a->offset);
}

void soak_unsqueeze(soak_tensor *out, const soak_tensor *a, int dim) {
  int64_t shape[SOAK_MAX_DIMS], stride[SOAK_MAX_DIMS];
  for (int d = 0, k = 0; d <= a->ndim; d++) {
    if (d == dim) {
      shape[d] = 1;
      stride[d] = dim < a->ndim ? a->shape[dim] * a->stride[dim] : 1;
    } else {
      shape[d] = a->shape[k], stride[d] = a->stride[k++];
    }
  }
  soak_view_of(out, a, a->ndim + 1, shape, stride, a->offset);
}

void soak_reshape(soak_tensor *out, const soak_tensor *a, int ndim, const int64_t *shape) {
  soak_tensor v = {.dtype = a->dtype, .ndim = ndim};
  memcpy(v.shape, shape, (size_t)ndim * sizeof *shape);
  contiguous_strides(&v);
  soak_view_of(out, a, ndim, v.shape, v.stride, a->offset);
}

/* ---- computed results ---- */

/* A fresh contiguous result with the given bounds. */
static int result(soak_tensor *out, int dtype, int ndim, const int64_t *shape, double mag,
                  double res, double tol) {
  if (soak_new(out, dtype, ndim, shape) < 0) return -1;
  out->st->mag = mag;
  out->st->res = res;
  out->st->tol = tol;
  return 0;
}

/* Whether a result that takes its layout from input a ([Note: Layouts in the soak]) is known
 * to be contiguous in the daemon, as the model's results are. */
static bool follows_layout(const soak_tensor *a) {
  return a->same_layout && soak_is_contiguous(a);
}

void soak_binary_bounds(soak_binary op, const soak_tensor *a, const soak_tensor *b, int64_t alpha,
                        double *mag, double *res, int *dtype) {
  const soak_storage *x = a->st, *y = b->st;
  if (op == SOAK_MUL) {
    *mag = x->mag * y->mag;
    *res = x->res * y->res;
  } else {
    *mag = x->mag + fabs((double)alpha) * y->mag;
    *res = fmin(x->res, y->res);
  }
  *dtype = opd_promote_types((opd_dtype)a->dtype, (opd_dtype)b->dtype);
}

int soak_ref_binary(soak_tensor *out, soak_binary op, const soak_tensor *a, const soak_tensor *b,
                    int64_t alpha) {
  double mag, res;
  int dtype;
  soak_binary_bounds(op, a, b, alpha, &mag, &res, &dtype);
  if (result(out, dtype, a->ndim, a->shape, mag, res, 0) < 0) return -1;
  out->same_layout = follows_layout(a);
  for (size_t i = 0; i < out->st->numel; i++) {
    double x = soak_at(a, i), y = soak_at(b, i);
    out->st->v[i] = op == SOAK_ADD   ? x + (double)alpha * y
                    : op == SOAK_SUB ? x - (double)alpha * y
                                     : x * y;
  }
  return 0;
}

int soak_ref_unary(soak_tensor *out, soak_unary op, const soak_tensor *a) {
  if (result(out, a->dtype, a->ndim, a->shape, a->st->mag, a->st->res, 0) < 0) return -1;
  out->same_layout = follows_layout(a);
  for (size_t i = 0; i < out->st->numel; i++) {
    double x = soak_at(a, i);
    out->st->v[i] = op == SOAK_NEG ? -x : op == SOAK_ABS ? fabs(x) : x > 0 ? x : 0;
  }
  return 0;
}

int soak_ref_sum(soak_tensor *out, const soak_tensor *a, int dim, bool keepdim) {
  int64_t shape[SOAK_MAX_DIMS];
  int ndim = 0;
  size_t n = soak_numel(a);
  size_t terms = dim < 0 ? n : (size_t)a->shape[dim];
  for (int d = 0; dim >= 0 && d < a->ndim; d++)
    if (d != dim)
      shape[ndim++] = a->shape[d];
    else if (keepdim)
      shape[ndim++] = 1;
  if (result(out, a->dtype, ndim, shape, a->st->mag * (double)(terms ? terms : 1), a->st->res, 0) <
      0)
    return -1;
  /* element i of a adds to the output element with i's coordinates, dim dropped */
  size_t inner = 1;
  for (int d = a->ndim - 1; dim >= 0 && d > dim; d--) inner *= (size_t)a->shape[d];
  for (size_t i = 0; i < n; i++) {
    size_t o = dim < 0 ? 0 : (i / (inner * terms)) * inner + i % inner;
    out->st->v[o] += soak_at(a, i);
  }
  return 0;
}

int soak_ref_mm_transposed(soak_tensor *out, const soak_tensor *a) {
  int64_t m = a->shape[0], k = a->shape[1];
  int64_t shape[2] = {m, m};
  if (result(out, a->dtype, 2, shape, a->st->mag * a->st->mag * (double)(k ? k : 1),
             a->st->res * a->st->res, 0) < 0)
    return -1;
  for (int64_t i = 0; i < m; i++)
    for (int64_t j = 0; j < m; j++) {
      double s = 0;
      for (int64_t l = 0; l < k; l++)
        s += soak_at(a, (size_t)(i * k + l)) * soak_at(a, (size_t)(j * k + l));
      out->st->v[i * m + j] = s;
    }
  return 0;
}

int soak_ref_softmax(soak_tensor *out, const soak_tensor *a, int dim) {
  size_t n = soak_numel(a), len = (size_t)a->shape[dim], inner = 1;
  double ulp = a->dtype == OPD_FLOAT64 ? 0x1p-52 : 0x1p-23;
  if (result(out, a->dtype, a->ndim, a->shape, 1, 0x1p-60, (double)(len + 16) * ulp) < 0) return -1;
  for (int d = a->ndim - 1; d > dim; d--) inner *= (size_t)a->shape[d];
  if (!len) return 0;
  for (size_t o = 0; o < n / len; o++) { /* each line along dim */
    size_t base = (o / inner) * inner * len + o % inner;
    double mx = -INFINITY, sum = 0;
    for (size_t j = 0; j < len; j++) mx = fmax(mx, soak_at(a, base + j * inner));
    for (size_t j = 0; j < len; j++) sum += exp(soak_at(a, base + j * inner) - mx);
    for (size_t j = 0; j < len; j++)
      out->st->v[base + j * inner] = exp(soak_at(a, base + j * inner) - mx) / sum;
  }
  return 0;
}

int soak_ref_cat0(soak_tensor *out, const soak_tensor *const *parts, size_t n) {
  int64_t shape[SOAK_MAX_DIMS];
  memcpy(shape, parts[0]->shape, sizeof shape);
  shape[0] = 0;
  double mag = 0, res = 1;
  double tol = 0;
  for (size_t p = 0; p < n; p++) {
    shape[0] += parts[p]->shape[0];
    mag = fmax(mag, parts[p]->st->mag);
    res = fmin(res, parts[p]->st->res);
    tol = fmax(tol, parts[p]->st->tol);
  }
  if (result(out, parts[0]->dtype, parts[0]->ndim, shape, mag, res, tol) < 0) return -1;
  size_t at = 0;
  for (size_t p = 0; p < n; p++)
    for (size_t i = 0, m = soak_numel(parts[p]); i < m; i++)
      out->st->v[at++] = soak_at(parts[p], i);
  return 0;
}

int soak_ref_clone(soak_tensor *out, const soak_tensor *a) {
  if (result(out, a->dtype, a->ndim, a->shape, a->st->mag, a->st->res, a->st->tol) < 0) return -1;
  out->same_layout = follows_layout(a);
  for (size_t i = 0; i < out->st->numel; i++) out->st->v[i] = soak_at(a, i);
  return 0;
}

void soak_ref_fill(soak_tensor *t, double x) {
  for (size_t i = 0, n = soak_numel(t); i < n; i++) t->st->v[place(t, i)] = x;
  t->st->mag = fmax(t->st->mag, fabs(x));
  while (t->st->res > 0x1p-2 && x != floor(x / t->st->res) * t->st->res) t->st->res /= 2;
}

/* model.h: the soak's local copy of a session's tensors, against which every download is
 * checked: a tensor is a strided view of a storage of values, as in the daemon, so views
 * share their base's values and an in-place write through one is seen through all; and
 * reference versions of the operators the soak calls.
 *
 * [Note: Exact answers in the soak]
 * Uploaded values are multiples of 1/4 in [-8, 8] (integers in range for integral dtypes),
 * and each storage records a bound on its values' magnitude and a power of two dividing
 * them all. An arithmetic result is computed only when those bounds prove it exact in its
 * dtype (magnitude / resolution at most 2^24 for float32, 2^53 for float64 and int64), so
 * the daemon's answer must equal the reference bit for bit whatever order its kernels sum
 * in; a mismatch is a wrong answer, never rounding. Only softmax is inexact: its storage
 * records a relative tolerance, the rounding a float sum of its rows' length may gather
 * ((K + 16) units of the last place for rows of K elements; the kernels sum in several
 * lanes and do better), and is never fed to arithmetic.
 *
 * [Note: Layouts in the soak]
 * The model's strides describe its own storage; what the daemon's tensor holds is checked
 * by value whatever its layout. But view, reshape and contiguous behave by layout (view
 * refuses a tensor whose dimensions span non-contiguous chunks; contiguous returns a
 * contiguous tensor itself, else a copy), so a tensor records whether the daemon's layout is
 * known to be the model's (`same_layout`), and those operators are applied only where it
 * is. Uploads and the results of mm, sum, softmax and cat are contiguous in the daemon as in
 * PyTorch; views keep their base's knowledge (both compute strides as PyTorch does); an
 * elementwise result, or a clone, follows its input's layout (TensorIterator's rule, and
 * clone's preserve_format), which the model knows only when that input is contiguous.
 */
#ifndef OPD_SOAK_MODEL_H
#define OPD_SOAK_MODEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "opd/client.h"
#include "soak.h"

#define SOAK_MAX_DIMS 4

typedef struct soak_storage {
  int refs;
  size_t numel;
  double *v;
  double mag; /* no value's magnitude exceeds this */
  double res; /* a power of two that divides every value */
  double tol; /* relative tolerance of its values (softmax results); 0: exact */
} soak_storage;

/* A tensor's dtype, geometry and storage; same_layout: [Note: Layouts in the soak]. */

typedef struct soak_tensor {
  opd_client_tensor handle;
  int dtype, ndim;
  int64_t shape[SOAK_MAX_DIMS], stride[SOAK_MAX_DIMS], offset;
  soak_storage *st;
  bool same_layout;
} soak_tensor;

size_t soak_numel(const soak_tensor *t);
size_t soak_nbytes(const soak_tensor *t);
bool soak_is_contiguous(const soak_tensor *t);
/* Whether two elements share a place (an expanded dimension). */
bool soak_overlaps(const soak_tensor *t);
/* "tensor 7, float32 [2, 3] strides [1, 2] offset 0" (the handle: 0 before it has one) */
void soak_describe(const soak_tensor *t, char *out, size_t len);
/* Arithmetic (add, mul, sum, mm, softmax) is modelled for float32, float64 and int64. */
bool soak_is_arithmetic(int dtype);
/* [Note: Exact answers in the soak] */
bool soak_exact_in(int dtype, double mag, double res);

/* A contiguous tensor with a storage of its own (zeros): 0, or -1 out of memory. */
int soak_new(soak_tensor *t, int dtype, int ndim, const int64_t *shape);
/* Fills a contiguous tensor with random values of its dtype. */
void soak_randomize(soak_tensor *t, soak_rng *r);
/* Drops t's reference to its storage. */
void soak_drop(soak_tensor *t);
/* Element i in row-major order. */
double soak_at(const soak_tensor *t, size_t i);
/* The elements as contiguous bytes of t's dtype (soak_nbytes(t) of them). */
void soak_encode(const soak_tensor *t, void *out);
/* Compares contiguous bytes with t's elements: -1 when they match, else the index of the
 * first difference, with what came and what was expected. */
long soak_compare(const soak_tensor *t, const void *bytes, double *got, double *want);

/* ---- views: out shares base's storage ---- */

void soak_view_of(soak_tensor *out, const soak_tensor *base, int ndim, const int64_t *shape,
                  const int64_t *stride, int64_t offset);
void soak_transpose(soak_tensor *out, const soak_tensor *a, int d0, int d1);
void soak_permute(soak_tensor *out, const soak_tensor *a, const int64_t *perm);
void soak_slice(soak_tensor *out, const soak_tensor *a, int dim, int64_t start, int64_t end,
                int64_t step);
void soak_select(soak_tensor *out, const soak_tensor *a, int dim, int64_t index);
/* sizes: one per dimension of the result (ndim >= a's), -1 keeps a dimension. */
void soak_expand(soak_tensor *out, const soak_tensor *a, int ndim, const int64_t *sizes);
void soak_unsqueeze(soak_tensor *out, const soak_tensor *a, int dim);
/* a must be contiguous. */
void soak_reshape(soak_tensor *out, const soak_tensor *a, int ndim, const int64_t *shape);

/* ---- computed results: out gets a storage of its own; 0, or -1 out of memory ---- */

typedef enum soak_binary { SOAK_ADD, SOAK_SUB, SOAK_MUL } soak_binary;
typedef enum soak_unary { SOAK_NEG, SOAK_ABS, SOAK_RELU } soak_unary;

/* Bounds of the result of a binary op (for soak_exact_in) and its dtype. */
void soak_binary_bounds(soak_binary op, const soak_tensor *a, const soak_tensor *b, int64_t alpha,
                        double *mag, double *res, int *dtype);
int soak_ref_binary(soak_tensor *out, soak_binary op, const soak_tensor *a, const soak_tensor *b,
                    int64_t alpha);
int soak_ref_unary(soak_tensor *out, soak_unary op, const soak_tensor *a);
/* dim < 0: every element, into a 0-d tensor. */
int soak_ref_sum(soak_tensor *out, const soak_tensor *a, int dim, bool keepdim);
/* a (2-D) times its transpose. */
int soak_ref_mm_transposed(soak_tensor *out, const soak_tensor *a);
int soak_ref_softmax(soak_tensor *out, const soak_tensor *a, int dim);
/* parts agree in everything but dimension 0. */
int soak_ref_cat0(soak_tensor *out, const soak_tensor *const *parts, size_t n);
int soak_ref_clone(soak_tensor *out, const soak_tensor *a);
/* In place: every element of t (and so of the views that share them) becomes x. */
void soak_ref_fill(soak_tensor *t, double x);

#endif

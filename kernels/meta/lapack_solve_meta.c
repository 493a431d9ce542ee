/* lapack_solve_meta.c: _linalg_solve_ex's argument checks and result layouts (PyTorch 1.13's
 * errors), and its Meta kernel. */
#include "lapack_solve_meta.h"

#include <string.h>

#include "lapack_meta.h"
#include "reduce_meta.h" /* opd__push_results */

int opd__linalg_solve_meta(const opd_tensor *a, const opd_tensor *b, bool left,
                           opd__solve_geometry *geo) {
  static const char name[] = "linalg.solve";
  opd_dtype at = opd_tensor_dtype(a), bt = opd_tensor_dtype(b);
  if (!opd_dtype_is_floating(at))
    return opd_error(OPD_EINVAL, "%s: Expected a floating point or complex tensor as input. Got %s",
                     name, opd_dtype_c10_name(at));
  if (at != bt)
    return opd_error(OPD_EINVAL,
                     "%s: Expected A and B to have the same dtype, but found A of type %s and B "
                     "of type %s instead",
                     name, opd_dtype_c10_name(at), opd_dtype_c10_name(bt));
  /* ATen's linalg_solve_is_vector_rhs: B 1-D, or of A's shape less its last dim */
  geo->vector_case = b->ndim == 1 || (a->ndim >= 1 && b->ndim == a->ndim - 1 &&
                                      memcmp(opd_tensor_sizes(a), opd_tensor_sizes(b),
                                             (size_t)b->ndim * sizeof(int64_t)) == 0);
  int rc = opd__linalg_square_check(name, a);
  if (rc) return rc;
  /* B as a batch of matrices: a vector is a column */
  int64_t bsizes[OPD_MAX_DIMS + 1];
  int bnd = b->ndim + geo->vector_case;
  memcpy(bsizes, opd_tensor_sizes(b), (size_t)b->ndim * sizeof(int64_t));
  if (geo->vector_case) bsizes[b->ndim] = 1;
  if (bnd < 2)
    return opd_error(OPD_EINVAL, "%s: The input tensor B must have at least 2 dimensions.", name);
  if (bnd > OPD_MAX_DIMS) return opd_error(OPD_EINVAL, "%s: B has too many dimensions", name);
  const int64_t *as = opd_tensor_sizes(a);
  int64_t an = as[a->ndim - 1], brows = bsizes[bnd - 2], bcols = bsizes[bnd - 1];
  if (left ? an != brows : an != bcols)
    return opd_error(OPD_EINVAL,
                     "%s: Incompatible shapes of A and B for the equation %s (%lldx%lld and "
                     "%lldx%lld)",
                     name, left ? "AX = B" : "XA = B", (long long)an, (long long)an,
                     (long long)brows, (long long)bcols);
  if ((rc = opd__broadcast_shapes(bsizes, bnd - 2, as, a->ndim - 2, geo->batch, &geo->batch_ndim)))
    return rc;
  if (!left && geo->vector_case)
    return opd_error(OPD_EINVAL,
                     "%s: Vector broadcasting of the left hand side is not supported for "
                     "left=False. In this case linalg.solve is equivalent to B / A.squeeze(-1)",
                     name);
  geo->n = an;
  geo->k = left ? bcols : brows;
  return 0;
}

/* A tensor of `sizes` on device: contiguous, or with its last two dims column-major
 * (ATen's batched_matrix_contiguous_strides). */
static int alloc(const int64_t *sizes, int nd, bool colmajor, opd_dtype dtype, opd_device device,
                 opd_tensor **out) {
  int64_t strides[OPD_MAX_DIMS], st = 1;
  for (int d = nd - 1; d >= 0; d--) {
    strides[d] = st;
    st *= sizes[d] > 1 ? sizes[d] : 1;
  }
  if (colmajor && nd >= 2) {
    strides[nd - 1] = sizes[nd - 2] > 1 ? sizes[nd - 2] : 1;
    strides[nd - 2] = 1;
  }
  return opd__call_empty_strided((opd_int_list){sizes, nd}, (opd_int_list){strides, nd}, dtype, -1,
                                 device, (opd_opt_bool){0}, out);
}

int opd__linalg_solve_alloc(const opd_tensor *a, const opd_tensor *b, bool left,
                            const opd__solve_geometry *geo, opd_device device, opd_tensor **res) {
  for (int i = 0; i < 4; i++) res[i] = NULL;
  int64_t sizes[OPD_MAX_DIMS + 2];
  int nd = geo->batch_ndim;
  memcpy(sizes, geo->batch, (size_t)nd * sizeof(int64_t));
  if (geo->vector_case) {
    sizes[nd++] = geo->n;
  } else {
    sizes[nd++] = left ? geo->n : geo->k;
    sizes[nd++] = left ? geo->k : geo->n;
  }
  if (nd > OPD_MAX_DIMS) return opd_error(OPD_EINVAL, "linalg.solve: too many dimensions");
  int rc = alloc(sizes, nd, left, opd_tensor_dtype(b), device, &res[0]);
  if (!rc) rc = alloc(opd_tensor_sizes(a), a->ndim, true, opd_tensor_dtype(a), device, &res[1]);
  if (!rc) rc = alloc(opd_tensor_sizes(a), a->ndim - 1, false, OPD_INT32, device, &res[2]);
  if (!rc) rc = alloc(opd_tensor_sizes(a), a->ndim - 2, false, OPD_INT32, device, &res[3]);
  if (rc)
    for (int i = 0; i < 4; i++)
      if (res[i]) {
        opd_tensor_release(res[i]);
        res[i] = NULL;
      }
  return rc;
}

/* _linalg_solve_ex(A, B, *, bool left=True, bool check_errors=False) (boxed: four results) */
int opd__meta_linalg_solve_ex_impl(const opd_kernel_ctx *ctx, opd_stack *stack) {
  (void)ctx;
  opd_ivalue *args = opd_stack_last(stack, 4);
  opd_tensor *res[4] = {NULL, NULL, NULL, NULL};
  opd__solve_geometry geo;
  int rc = 0;
  if (args[0].tag != OPD_IV_TENSOR || args[1].tag != OPD_IV_TENSOR)
    rc = opd_error(OPD_EINVAL, "linalg.solve: expected Tensors A and B");
  if (!rc) rc = opd__linalg_solve_meta(args[0].u.t, args[1].u.t, args[2].u.b, &geo);
  if (!rc)
    rc = opd__linalg_solve_alloc(args[0].u.t, args[1].u.t, args[2].u.b, &geo,
                                 (opd_device){OPD_DEVICE_META, -1}, res);
  opd_stack_drop(stack, 4);
  return opd__push_results(stack, res, 4, rc);
}

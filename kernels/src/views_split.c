/* views_split.c: split.Tensor, consecutive slices of one dimension (the last one shorter, as
 * ATen's split), one kernel for every backend (it touches no data). */
#include <string.h>

#include "kernel_util.h"
#include "opd/memory.h"
#include "opd/unboxed.h"

/* views.c's slice kernel (its signature is the schema's: kernel_list.h) */
int opd__cea_slice_tensor(const opd_kernel_ctx *ctx, opd_tensor *self, int64_t dim,
                          opd_opt_int start, opd_opt_int end, int64_t step, opd_tensor **out);

/* aten::split.Tensor(Tensor(a -> *) self, SymInt split_size, int dim=0) -> Tensor(a)[] */
int opd__cea_split_tensor(const opd_kernel_ctx *ctx, opd_stack *stack) {
  opd_ivalue *args = opd_stack_last(stack, 3);
  if (args[0].tag != OPD_IV_TENSOR || args[1].tag != OPD_IV_INT || args[2].tag != OPD_IV_INT) {
    opd_stack_drop(stack, 3);
    return opd_error(OPD_EINVAL, "split: expected (Tensor, int, int) arguments");
  }
  opd_tensor *self = args[0].u.t;
  int64_t split_size = args[1].u.i, dim;
  int rc = 0;
  if (self->ndim == 0)
    rc = opd_error(OPD_EINVAL, "split expects at least a 1-dimensional tensor");
  else if (split_size < 0)
    rc = opd_error(OPD_EINVAL, "split expects split_size be non-negative, but got split_size=%lld",
                   (long long)split_size);
  else
    rc = opd__wrap_dim(args[2].u.i, self->ndim, &dim);
  int64_t dim_size = rc ? 0 : opd_tensor_sizes(self)[dim], n = 1;
  if (!rc && split_size == 0 && dim_size != 0)
    rc = opd_error(OPD_EINVAL,
                   "split_size can only be 0 if dimension size is 0, but got dimension size of "
                   "%lld",
                   (long long)dim_size);
  /* ceil(dim_size / split_size), at least 1, written so that it cannot overflow */
  if (!rc && split_size != 0 && dim_size > 0) n = (dim_size - 1) / split_size + 1;
  if (!rc && n > OPD__MAX_VIEWS_RETURNED)
    rc = opd_error(OPD_EINVAL,
                   "split: %lld pieces of size %lld are more than the %d one call may return",
                   (long long)n, (long long)split_size, OPD__MAX_VIEWS_RETURNED);
  opd_tensor **pieces = rc ? NULL : opd__calloc((size_t)n, sizeof *pieces);
  if (!rc && !pieces)
    rc = opd_error(OPD_ENOMEM, "split: out of memory for %lld views", (long long)n);
  for (int64_t i = 0; !rc && i < n; i++) {
    /* i * split_size < dim_size for every piece but the first, so nothing overflows */
    int64_t start = i * split_size, length = i < n - 1 ? split_size : dim_size - start;
    rc = opd__cea_slice_tensor(ctx, self, dim, (opd_opt_int){true, start},
                               (opd_opt_int){true, start + length}, 1, &pieces[i]);
  }
  opd_ivalue list;
  if (!rc) rc = opd_iv_make_tensor_list(&list, pieces, (size_t)n, false); /* retains them */
  for (int64_t i = 0; pieces && i < n; i++)
    if (pieces[i]) opd_tensor_release(pieces[i]);
  opd__free(pieces);
  opd_stack_drop(stack, 3);
  if (rc) return rc;
  return opd_stack_push(stack, list);
}

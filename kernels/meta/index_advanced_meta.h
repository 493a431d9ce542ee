/* index_advanced_meta.h: advanced indexing (aten::index.Tensor, aten::_index_put_impl_): the
 * plan of an indexing (kernels/meta/index_advanced_meta.c), shared by the Meta and CPU kernels
 * (kernels/cpu/index_advanced.c).
 *
 * [Note: Advanced indexing]
 * self[indices] with a Tensor?[] of up to self.dim() entries, as PyTorch 1.13: None keeps a
 * dimension, an int64 tensor indexes one (negative indices count from the end), a bool (or
 * uint8) mask of k dimensions indexes k dimensions at once and stands for the k int64 index
 * tensors of its nonzero coordinates. The index tensors broadcast together to a shape B. When
 * the indexed dimensions are adjacent, the result is self's dimensions before them, then B,
 * then self's dimensions after them; otherwise B comes first, then every dimension not indexed.
 * index_put writes values (broadcast to that result shape) to the same elements of self. A
 * plan records, for each result dimension, the self dimension it walks or the dimension of B,
 * and for each index tensor its data, its strides broadcast over B and the self dimension it
 * indexes. Masks only have index tensors once their data is read, so the Meta kernels refuse
 * them (as PyTorch's do: the shape depends on the data).
 */
#ifndef OPD_KERNELS_INDEX_ADVANCED_META_H
#define OPD_KERNELS_INDEX_ADVANCED_META_H

#include "src/kernel_util.h"

typedef struct opd__adv_index {
  const int64_t *data;
  int64_t strides[OPD_MAX_DIMS]; /* over B, in elements; 0 where broadcast */
  int dim;                       /* the self dimension it indexes */
} opd__adv_index;

typedef struct opd__adv_plan {
  int nidx;
  opd__adv_index idx[OPD_MAX_DIMS];
  int nb;
  int64_t bsizes[OPD_MAX_DIMS];
  int ndim; /* of the result */
  int64_t sizes[OPD_MAX_DIMS];
  int map[OPD_MAX_DIMS]; /* result dim -> self dim (>= 0) or B dim j (-1 - j) */
  int nowned;
  int64_t *owned[OPD_MAX_DIMS]; /* the coordinates of masks (CPU allocator) */
  int64_t owned_bytes[OPD_MAX_DIMS];
} opd__adv_plan;

/* Builds the plan of self[indices]; with_data false (Meta): masks are refused. The plan
 * must be released with opd__adv_plan_free, also after an error. */
int opd__adv_plan_make(opd_tensor *self, opd_tensor_list indices, bool with_data, opd__adv_plan *p);
void opd__adv_plan_free(opd__adv_plan *p);
/* index_put's checks of values against the plan (dtype and broadcast). */
int opd__adv_put_check(opd_tensor *self, opd_tensor *values, const opd__adv_plan *p);

#endif

/* index_sort_meta.h: the meta functions of sort.stable, topk, cummax and cummin
 * (kernels/meta/index_sort_meta.c), shared with their CPU kernels (kernels/cpu/index_sort.c).
 * Each has two results: values (self's dtype) and indices (int64), of the same shape. */
#ifndef OPD_KERNELS_INDEX_SORT_META_H
#define OPD_KERNELS_INDEX_SORT_META_H

#include "src/kernel_util.h"

/* sort and the cumulative operators: self's shape; *wrapped the dim. */
int opd__sort_meta(opd_tensor *self, int64_t dim, int64_t *wrapped, opd_out_spec *spec);
/* topk: self's shape with dim of size k. */
int opd__topk_meta(opd_tensor *self, int64_t k, int64_t dim, int64_t *wrapped, opd_out_spec *spec);
/* searchsorted: self's shape, int64 (int32 with out_int32); side NULL when None. */
int opd__searchsorted_meta(opd_tensor *sorted, opd_tensor *self, bool out_int32, bool right,
                           const char *side, opd_tensor *sorter, opd_out_spec *spec);
/* searchsorted.Scalar and bucketize.Scalar: the scalar as a 0-d tensor on device, of the
 * dtype c10 gives it (int64, float64 or bool), as ATen's scalar_to_tensor. */
int opd__scalar_as_tensor(opd_scalar s, opd_device device, opd_tensor **out);
/* bucketize: boundaries must be 1-D ("boundaries tensor must be 1 dimension, but got dim(2)"). */
int opd__bucketize_check(const opd_tensor *boundaries);
/* The two results of spec on device into res (released on failure). */
int opd__alloc_values_indices(const opd_out_spec *spec, opd_device device, opd_tensor **res);

#endif

/* opd/checked.h: overflow-checked arithmetic for sizes, strides, offsets, element counts
 * and byte counts.
 *
 * [Note: Checked arithmetic]
 * Every integer that arrives from a socket, a file or the admin (a shape, a stride, a
 * storage offset, a step, a byte count) becomes a size or an offset only through these
 * functions: no product or sum of such integers is computed with plain operators. The
 * primitives (opd_ckd_add / opd_ckd_sub / opd_ckd_mul) return true on overflow, as C23's
 * ckd_add does; the geometry functions check a whole shape at once and record an opd error
 * (OPD_EINVAL) naming what overflowed. The invariants they establish, which the rest of
 * the code relies on (tensor.c, the views, the gathers of downloads):
 *  - every size is >= 0 and the element count fits in int64;
 *  - every stride is >= 0 and the offset of the farthest element, times the element size,
 *    fits in int64, so any partial sum of index * stride * element size does too;
 *  - a view's byte range [offset * esize, (offset + extent) * esize) lies inside its
 *    storage's bytes.
 * What they do not bound, so that code deriving new integers from a tensor checks them too:
 *  - an empty tensor (a size of 0) reads nothing, so it may have any non-negative strides, sit
 *    at any offset, and have other sizes that multiply past int64: a stride, offset or
 *    product computed from one (unsqueeze's new stride, slice's offset, a dense copy's
 *    strides, a walk's coalesced dims) can overflow; kernels return before walking one;
 *  - a Meta tensor's storage holds no bytes, so its extent can be anything up to int64 bytes:
 *    size * stride of one of its dimensions (one element past the farthest) can overflow;
 *  - numel * esize of a view can overflow: a stride-0 dimension repeats elements (expand), so
 *    only a non-overlapping dense tensor's numel is bounded by its extent. A buffer sized by
 *    an input's numel (an index list) is sized with opd_ckd_nbytes.
 * Outputs are allocated with their contiguous strides (opd_contiguous_strides), so products
 * of an output's sizes and strides fit.
 * docs/SECURITY.md lists every entry point of a request's integers and the check that
 * guards it.
 */
#ifndef OPD_CHECKED_H
#define OPD_CHECKED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* True on overflow; *r is then unspecified. Any integer types (the compiler's builtins). */
#define opd_ckd_add(r, a, b) __builtin_add_overflow((a), (b), (r))
#define opd_ckd_sub(r, a, b) __builtin_sub_overflow((a), (b), (r))
#define opd_ckd_mul(r, a, b) __builtin_mul_overflow((a), (b), (r))

/* The element count of a shape: 0, or OPD_EINVAL (a negative size, more than 64
 * dimensions, or a count over INT64_MAX), with `what` ("upload", "aten::full") in the
 * message. */
int opd_ckd_numel(const int64_t *sizes, size_t ndim, int64_t *numel, const char *what);

/* numel * element size in bytes: 0, or OPD_EINVAL past INT64_MAX. */
int opd_ckd_nbytes(int64_t numel, size_t element_size, int64_t *nbytes, const char *what);

/* The bytes of a contiguous tensor of this dtype size and shape: opd_ckd_numel then
 * opd_ckd_nbytes. */
int opd_ckd_shape_nbytes(const int64_t *sizes, size_t ndim, size_t element_size, int64_t *nbytes,
                         const char *what);

/* The geometry of a strided view: its element count and its extent, the number of
 * elements from the first to the farthest reachable one (0 when it has none), with every
 * size and stride non-negative and extent * element_size within int64. 0, or OPD_EINVAL. */
int opd_ckd_geometry(const int64_t *sizes, const int64_t *strides, size_t ndim, size_t element_size,
                     int64_t *numel, int64_t *extent, const char *what);

/* Whether a view of `extent` elements at `storage_offset` fits in `storage_nbytes`: 0, or
 * OPD_EINVAL (a negative offset, or past the storage, overflow included). */
int opd_ckd_view_bounds(int64_t storage_offset, int64_t extent, size_t element_size,
                        uint64_t storage_nbytes, const char *what);

#ifdef __cplusplus
}
#endif
#endif

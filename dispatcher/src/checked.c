/* checked.c: overflow-checked geometry (see [Note: Checked arithmetic] in opd/checked.h). */
#include "opd/checked.h"

#include <inttypes.h>

#include "opd/error.h"
#include "opd/tensor.h"

static const char *name(const char *what) {
  return what && *what ? what : "tensor";
}

static int check_rank(size_t ndim, const char *what) {
  if (ndim > OPD_MAX_DIMS)
    return opd_error(OPD_EINVAL, "%s: %zu dimensions, at most %d are allowed", name(what), ndim,
                     OPD_MAX_DIMS);
  return 0;
}

int opd_ckd_numel(const int64_t *sizes, size_t ndim, int64_t *numel, const char *what) {
  int rc = check_rank(ndim, what);
  if (rc) return rc;
  bool empty = false;
  for (size_t d = 0; d < ndim; d++) {
    if (sizes[d] < 0)
      return opd_error(OPD_EINVAL, "%s: negative dimension %" PRId64 " at index %zu", name(what),
                       sizes[d], d);
    empty |= sizes[d] == 0;
  }
  int64_t n = 1;
  for (size_t d = 0; d < ndim && !empty; d++)
    if (opd_ckd_mul(&n, n, sizes[d]))
      return opd_error(OPD_EINVAL, "%s: the shape's element count overflows int64", name(what));
  *numel = empty ? 0 : n;
  return 0;
}

int opd_ckd_nbytes(int64_t numel, size_t element_size, int64_t *nbytes, const char *what) {
  if (numel < 0 || element_size > INT64_MAX || opd_ckd_mul(nbytes, numel, (int64_t)element_size))
    return opd_error(OPD_EINVAL, "%s: %" PRId64 " elements of %zu bytes overflow int64", name(what),
                     numel, element_size);
  return 0;
}

int opd_ckd_shape_nbytes(const int64_t *sizes, size_t ndim, size_t element_size, int64_t *nbytes,
                         const char *what) {
  int64_t numel;
  int rc = opd_ckd_numel(sizes, ndim, &numel, what);
  return rc ? rc : opd_ckd_nbytes(numel, element_size, nbytes, what);
}

int opd_ckd_geometry(const int64_t *sizes, const int64_t *strides, size_t ndim, size_t element_size,
                     int64_t *numel, int64_t *extent, const char *what) {
  int rc = opd_ckd_numel(sizes, ndim, numel, what);
  if (rc) return rc;
  int64_t last = 0; /* the offset of the farthest element, in elements */
  for (size_t d = 0; d < ndim; d++) {
    if (strides[d] < 0)
      return opd_error(OPD_EINVAL, "%s: negative stride %" PRId64 " at index %zu", name(what),
                       strides[d], d);
    int64_t span;
    if (*numel && (opd_ckd_mul(&span, sizes[d] - 1, strides[d]) || opd_ckd_add(&last, last, span)))
      return opd_error(OPD_EINVAL, "%s: the strides reach past int64 elements", name(what));
  }
  /* the farthest element itself must be addressable: extent = last + 1 */
  if (*numel == 0)
    *extent = 0;
  else if (opd_ckd_add(extent, last, 1))
    return opd_error(OPD_EINVAL, "%s: the strides reach past int64 elements", name(what));
  int64_t bytes;
  return opd_ckd_nbytes(*extent, element_size, &bytes, what);
}

int opd_ckd_view_bounds(int64_t storage_offset, int64_t extent, size_t element_size,
                        uint64_t storage_nbytes, const char *what) {
  int64_t end = 0, end_bytes = 0;
  if (storage_offset < 0)
    return opd_error(OPD_EINVAL, "%s: negative storage offset %" PRId64, name(what),
                     storage_offset);
  if (extent == 0) return 0; /* an empty view reads nothing */
  if (extent < 0 || opd_ckd_add(&end, storage_offset, extent) ||
      opd_ckd_nbytes(end, element_size, &end_bytes, what) || (uint64_t)end_bytes > storage_nbytes)
    return opd_error(OPD_EINVAL,
                     "%s: a view of %" PRId64 " elements at offset %" PRId64
                     " is out of bounds for a storage of %" PRIu64 " bytes",
                     name(what), extent, storage_offset, storage_nbytes);
  return 0;
}

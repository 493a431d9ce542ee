/* kernel_util.h: what every kernel of the kernels library uses (internal): output specs,
 * dimension wrapping, broadcasting, device checks, scalars, and calling other operators.
 *
 * [Note: How a kernel is written]
 * An operator that computes on a backend has a *meta function* in kernels/meta/ that checks
 * its arguments (raising PyTorch's errors) and computes the output's shape and dtype into an
 * opd_out_spec, without touching data. Its Meta kernel is the meta function plus
 * opd__alloc_output on the Meta device; its CPU kernel (kernels/cpu/) calls the same meta
 * function, allocates on the CPU and computes. Operators that PyTorch implements as
 * CompositeImplicitAutograd or CompositeExplicitAutograd are written once in terms of other
 * operators (called through the dispatcher with opd__call) or, for views, of tensor
 * metadata, and registered at that alias key. Every kernel and the key it is registered at
 * is listed in kernels/src/kernel_list.h.
 */
#ifndef OPD_KERNELS_KERNEL_UTIL_H
#define OPD_KERNELS_KERNEL_UTIL_H

#include <stdbool.h>
#include <stdint.h>

#include "opd/dispatcher.h"
#include "opd/dtype.h"
#include "opd/error.h"
#include "opd/tensor.h"
#include "opd/unboxed.h"

/* The shape and dtype of an output, as a meta function computes it. */
typedef struct opd_out_spec {
  int ndim;
  opd_dtype dtype;
  int64_t sizes[OPD_MAX_DIMS];
} opd_out_spec;

/* A contiguous tensor of that spec on `device`. */
int opd__alloc_output(const opd_out_spec *spec, opd_device device, opd_tensor **out);

/* Wraps a possibly negative dim into [0, ndim) (a 0-d tensor accepts -1 and 0, as in
 * PyTorch); OPD_EINDEX "Dimension out of range (expected to be in range of [-2, 1], but
 * got 5)" otherwise. */
int opd__wrap_dim(int64_t dim, int64_t ndim, int64_t *out);

/* PyTorch's broadcasting of two shapes into out (ndim = max of both); OPD_EINVAL "The size
 * of tensor a (3) must match the size of tensor b (4) at non-singleton dimension 1". */
int opd__broadcast_shapes(const int64_t *a, int na, const int64_t *b, int nb, int64_t *out,
                          int *nout);

/* OPD_EINVAL unless every non-NULL tensor is on the same device; sets *device to it (CPU
 * when there is none). */
int opd__common_device(opd_tensor *const *tensors, int n, opd_device *device);

/* "[2, 3]" into buf; returns buf. */
const char *opd__format_sizes(const int64_t *sizes, int ndim, char *buf, size_t len);

/* A Scalar's value as a double, and the dtype that stands for its kind in type promotion
 * (OPD_BOOL, OPD_INT64 or OPD_FLOAT64). As an int64 it is c10's checked Scalar::to<int64_t>,
 * opd__scalar_to(s, OPD_INT64, &v) in loops.h: a double out of range (or NaN) converted with a
 * cast would be undefined behaviour. */
static inline double opd__scalar_to_double(opd_scalar s) {
  return s.tag == OPD_IV_DOUBLE ? s.u.d : s.tag == OPD_IV_INT ? (double)s.u.i : (double)s.u.b;
}
static inline opd_dtype opd__scalar_kind(opd_scalar s) {
  return s.tag == OPD_IV_DOUBLE ? OPD_FLOAT64 : s.tag == OPD_IV_INT ? OPD_INT64 : OPD_BOOL;
}
static inline opd_scalar opd__scalar_double(double d) {
  return (opd_scalar){.tag = OPD_IV_DOUBLE, .u.d = d};
}
static inline opd_scalar opd__scalar_int(int64_t i) {
  return (opd_scalar){.tag = OPD_IV_INT, .u.i = i};
}

/* Looks up an aten operator once (cached by the caller in a static) and calls it boxed:
 * `opd__call(&op_cache, "aten::copy_", &stack)`. The stack holds every argument. */
int opd__call(const opd_operator **cache, const char *name, opd_stack *stack);

/* Calls `name` with the arguments pushed on s (rc: the first push error, if any): the Tensor
 * it returns goes to *out (opd__call_tensor) or, for an in-place operator, is dropped
 * (opd__call_inplace). Destroys s. */
int opd__call_tensor(int rc, const opd_operator **cache, const char *name, opd_stack *s,
                     opd_tensor **out);
int opd__call_inplace(int rc, const opd_operator **cache, const char *name, opd_stack *s);

/* The factories and the copy that composite kernels build results with, called through the
 * dispatcher (so BackendSelect picks the device's kernel): aten::empty.memory_format,
 * aten::empty_strided (None arguments: OPD_DTYPE_UNDEFINED, layout/memory_format -1,
 * device type -1, pin_memory without a value) and aten::copy_(self, src, non_blocking). */
int opd__call_empty(opd_int_list size, opd_dtype dtype, int64_t layout, opd_device device,
                    opd_opt_bool pin_memory, int64_t memory_format, opd_tensor **out);
int opd__call_empty_strided(opd_int_list size, opd_int_list stride, opd_dtype dtype, int64_t layout,
                            opd_device device, opd_opt_bool pin_memory, opd_tensor **out);
int opd__call_copy_(opd_tensor *self, opd_tensor *src, bool non_blocking);

/* The most views one call returns (split.Tensor, unbind.int): each becomes a handle, and a
 * call may not make more than a session holds by default (max_handles); a Meta tensor's
 * dimension of 2^40 must not make the daemon build 2^40 views. */
#define OPD__MAX_VIEWS_RETURNED 65536

#endif

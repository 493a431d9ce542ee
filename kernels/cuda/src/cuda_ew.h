/* cuda_ew.h: what the C files of the CUDA kernels share (internal): the elementwise engine of
 * cuda_kernels.c (broadcasting, strides and dtype conversion over elementwise.cu's launcher)
 * and the helpers every kernel uses. See [Note: CUDA kernels as C plus launchers] in
 * cuda_internal.h. */
#ifndef OPD_KERNELS_CUDA_EW_H
#define OPD_KERNELS_CUDA_EW_H

#include <stdbool.h>
#include <stdint.h>

#include "opd/tensor.h"
#include "src/kernel_util.h"
#include "src/loops.h"

/* An elementwise operation: the opcode of elementwise.cu and its operands' treatment. */
typedef struct opd__cuda_ewop {
  int op;               /* opd__cuda_ew_op */
  opd_dtype compute;    /* the operation's dtype (its compute type reads the inputs) */
  bool narrow;          /* integer inputs are first converted to `compute` (not for copies) */
  double c0d, c1d, c2d; /* scalars, as opd__cuda_value_to gives them (c2d: floating only) */
  int64_t c0i, c1i;
  int *error; /* a device flag for integer division by zero, or NULL */
} opd__cuda_ewop;

/* The GPU ordinal of a CUDA tensor (index -1, "the current device", is device 0). */
int opd__cuda_dev_of(const opd_tensor *t);
/* The launchers' compute / accumulate code of a dtype: 0 float, 1 double, 2 int64. */
int opd__cuda_compute_of(opd_dtype t);
/* A value of dtype t's compute type (loops.h) as the launchers' double / int64 scalars. */
void opd__cuda_value_to(opd__value v, opd_dtype t, double *d, int64_t *i);
/* OPD_EINVAL "\"name\" not implemented for 'T'". */
int opd__cuda_not_implemented(const char *name, opd_dtype t);
/* In-place kernels return self, with its version bumped. */
int opd__cuda_inplace_done(opd_tensor *self, opd_tensor **out);
/* A device int for a kernel to flag bad data in (zeroed), and reading it back (waits). */
int opd__cuda_flag_new(int device, int **flag);
int opd__cuda_flag_take(int device, int *flag, int *value);

/* out[...] = op(in[0][...], ...) with broadcasting into an existing tensor. */
int opd__cuda_ew_run(const opd__cuda_ewop *o, opd_tensor *out, opd_tensor *const *in, int nin);
/* The same into a new output of spec laid out for `in` (as the CPU kernels lay it out). */
int opd__cuda_ew_new(const opd__cuda_ewop *o, const opd_out_spec *spec, opd_tensor *const *in,
                     int nin, opd_tensor **out);
/* opd__cuda_ew_new for operations that can meet integer division by zero (o->error is set
 * here; "ZeroDivisionError" when it is flagged). */
int opd__cuda_ew_new_checked(opd__cuda_ewop *o, const opd_out_spec *spec, opd_tensor *const *in,
                             int nin, opd_tensor **out);
/* A contiguous copy of t on its device (a new reference to t when it is contiguous). */
int opd__cuda_contiguous(opd_tensor *t, opd_tensor **out);
/* [Note: CPU scalars in CUDA kernels]: replaces the 0-dim CPU tensors of in[] by copies on the
 * device of `into` (or of the first CUDA operand); held[i] is the copy or NULL, released by
 * opd__cuda_release_held (also after an error). */
int opd__cuda_cpu_scalars(const opd_tensor *into, opd_tensor **in, int n, opd_tensor **held);
void opd__cuda_release_held(opd_tensor **held, int n);
/* A comparison of self with a Scalar (op: an opd__cuda_ew_op with c0 the Scalar), a bool
 * result: the Scalar is a wrapped number converted to the common dtype. */
int opd__cuda_compare_scalar(opd_tensor *self, opd_scalar other, int op, opd_tensor **out);
/* A new output of spec, the reduction `op` (opd__cuda_red_op) of self over the dims of mask
 * (kept dims in order, reduced ones row-major), as the CPU reduction engine computes it. */
int opd__cuda_reduce(int op, opd_tensor *self, uint64_t mask, const opd_out_spec *spec,
                     opd_tensor **out);
/* The same with how->op and its parameters (var / std: correction; norm: ord; nonzero: the
 * elements read as 0 or 1, as count_nonzero's sum) and, for var / std, a second result `mean`
 * (NULL: none) of the same spec. */
struct opd__cuda_red;
int opd__cuda_reduce_with(const struct opd__cuda_red *how, opd_tensor *self, uint64_t mask,
                          const opd_out_spec *spec, opd_tensor **out, opd_tensor **mean);
/* The one element of t (a CPU or CUDA tensor; copied back from the device) as a Scalar of its
 * dtype's kind. */
int opd__cuda_item(const opd_tensor *t, opd_scalar *out);
/* The compute dtype of a conversion from `from` to `to`. */
opd_dtype opd__cuda_copy_compute(opd_dtype from, opd_dtype to);

#endif

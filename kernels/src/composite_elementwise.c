/* composite_elementwise.c: the CompositeExplicitAutograd elementwise kernels, written with
 * other operators called through the dispatcher so that they work on every backend:
 * add.Scalar, mul.Scalar (on a 0-d tensor holding the scalar), masked_fill.Scalar (clone,
 * then masked_fill_) and _to_copy (an empty tensor of the target dtype and device, then
 * copy_). */
#include <string.h>

#include "kernel_util.h"
#include "loops.h"

/* MemoryFormat values (c10's enum). */
#define MEMORY_FORMAT_CONTIGUOUS 0
#define MEMORY_FORMAT_PRESERVE   1

/* A 0-d tensor of dtype `dtype` on like's device holding `value`, which stands for a Python
 * number in an operation with `like` (ATen's wrapped_scalar_tensor). opd tensors carry no
 * wrapped-number flag, so the tensor gets the dtype the operation results in: a 0-d
 * operand of that dtype promotes with `like` exactly as the wrapped number would. The value
 * is converted to it as TensorIterator converts a wrapped number. */
static int wrapped_scalar(opd_tensor *like, opd_scalar value, opd_dtype dtype, opd_tensor **out) {
  static const opd_operator *fill_op;
  opd_tensor *t = NULL;
  int rc = opd__call_empty((opd_int_list){NULL, 0}, dtype, -1, opd_tensor_device(like),
                           (opd_opt_bool){false, false}, -1, &t);
  if (rc) return rc;
  opd_stack s;
  opd_stack_init(&s);
  rc = OPD__PUSH_Tensor(&s, t);
  if (rc == 0) rc = OPD__PUSH_Scalar(&s, opd__value_scalar(opd__scalar_cast(value, dtype), dtype));
  if ((rc = opd__call_inplace(rc, &fill_op, "aten::fill_.Scalar", &s))) {
    opd_tensor_release(t);
    return rc;
  }
  *out = t;
  return 0;
}

static opd_dtype scalar_result_type(opd_tensor *self, opd_scalar other) {
  opd_result_type_state st = opd_result_type_init();
  opd_result_type_add_tensor(&st, opd_tensor_dtype(self), self->ndim);
  opd_result_type_add_scalar(&st, opd__scalar_kind(other));
  return opd_result_type(&st);
}

int opd__cea_add_scalar(const opd_kernel_ctx *ctx, opd_tensor *self, opd_scalar other,
                        opd_scalar alpha, opd_tensor **out) {
  (void)ctx;
  static const opd_operator *op;
  opd_tensor *t = NULL;
  int rc = wrapped_scalar(self, other, scalar_result_type(self, other), &t);
  if (rc) return rc;
  opd_stack s;
  opd_stack_init(&s);
  rc = OPD__PUSH_Tensor(&s, self);
  if (rc == 0) rc = OPD__PUSH_Tensor(&s, t);
  if (rc == 0) rc = OPD__PUSH_Scalar(&s, alpha);
  rc = opd__call_tensor(rc, &op, "aten::add.Tensor", &s, out);
  opd_tensor_release(t);
  return rc;
}

int opd__cea_mul_scalar(const opd_kernel_ctx *ctx, opd_tensor *self, opd_scalar other,
                        opd_tensor **out) {
  (void)ctx;
  static const opd_operator *op;
  opd_tensor *t = NULL;
  int rc = wrapped_scalar(self, other, scalar_result_type(self, other), &t);
  if (rc) return rc;
  opd_stack s;
  opd_stack_init(&s);
  rc = OPD__PUSH_Tensor(&s, self);
  if (rc == 0) rc = OPD__PUSH_Tensor(&s, t);
  rc = opd__call_tensor(rc, &op, "aten::mul.Tensor", &s, out);
  opd_tensor_release(t);
  return rc;
}

/* ATen: expand_outplace(mask, self), clone the expanded self (contiguous), masked_fill_ it
 * with the original mask. */
int opd__cea_masked_fill_scalar(const opd_kernel_ctx *ctx, opd_tensor *self, opd_tensor *mask,
                                opd_scalar value, opd_tensor **out) {
  (void)ctx;
  static const opd_operator *expand_op, *clone_op, *fill_op;
  int64_t shape[OPD_MAX_DIMS];
  int nd;
  int rc = opd__broadcast_shapes(opd_tensor_sizes(mask), mask->ndim, opd_tensor_sizes(self),
                                 self->ndim, shape, &nd);
  if (rc) return rc;
  opd_tensor *src = self, *r = NULL;
  opd_stack s;
  if (nd != self->ndim || memcmp(shape, opd_tensor_sizes(self), (size_t)nd * sizeof *shape)) {
    opd_stack_init(&s);
    rc = OPD__PUSH_Tensor(&s, self);
    if (rc == 0) rc = OPD__PUSH_IntList(&s, ((opd_int_list){shape, nd}));
    if (rc == 0) rc = OPD__PUSH_Bool(&s, false);
    if ((rc = opd__call_tensor(rc, &expand_op, "aten::expand", &s, &src))) return rc;
  }
  opd_stack_init(&s);
  rc = OPD__PUSH_Tensor(&s, src);
  if (rc == 0) rc = OPD__PUSH_OptMemoryFormat(&s, MEMORY_FORMAT_CONTIGUOUS);
  rc = opd__call_tensor(rc, &clone_op, "aten::clone", &s, &r);
  if (src != self) opd_tensor_release(src);
  if (rc) return rc;
  opd_stack_init(&s);
  rc = OPD__PUSH_Tensor(&s, r);
  if (rc == 0) rc = OPD__PUSH_Tensor(&s, mask);
  if (rc == 0) rc = OPD__PUSH_Scalar(&s, value);
  if ((rc = opd__call_inplace(rc, &fill_op, "aten::masked_fill_.Scalar", &s))) {
    opd_tensor_release(r);
    return rc;
  }
  *out = r;
  return 0;
}

static const char *layout_name(int64_t layout) {
  static const char *const names[] = {"Strided",   "Sparse",    "SparseCsr", "Mkldnn",
                                      "SparseCsc", "SparseBsr", "SparseBsc"};
  return layout >= 0 && layout < (int64_t)(sizeof names / sizeof *names) ? names[layout]
                                                                         : "Unknown";
}

int opd__cea_to_copy(const opd_kernel_ctx *ctx, opd_tensor *self, opd_dtype dtype, int64_t layout,
                     opd_device device, opd_opt_bool pin_memory, bool non_blocking,
                     int64_t memory_format, opd_tensor **out) {
  (void)ctx;
  if (layout > 0)
    return opd_error(OPD_EINVAL,
                     "to(options) doesn't support converting to a different layout, but got "
                     "self.layout being Strided and options.layout set as %s",
                     layout_name(layout));
  if (dtype == OPD_DTYPE_UNDEFINED) dtype = opd_tensor_dtype(self);
  if (device.type < 0) device = opd_tensor_device(self);
  if (memory_format < 0) memory_format = MEMORY_FORMAT_PRESERVE;
  opd_int_list size = {opd_tensor_sizes(self), self->ndim};
  opd_tensor *r = NULL;
  int rc;
  if (memory_format == MEMORY_FORMAT_PRESERVE) {
    /* keep a dense input's layout (strides), as ATen does */
    int64_t strides[OPD_MAX_DIMS];
    rc = 0;
    if (opd__is_non_overlapping_and_dense(self))
      memcpy(strides, opd_tensor_strides(self), (size_t)self->ndim * sizeof *strides);
    else
      rc = opd__infer_dense_strides(opd_tensor_sizes(self), opd_tensor_strides(self), self->ndim,
                                    strides);
    if (rc == 0)
      rc = opd__call_empty_strided(size, (opd_int_list){strides, self->ndim}, dtype, layout, device,
                                   pin_memory, &r);
  } else {
    rc = opd__call_empty(size, dtype, layout, device, pin_memory, memory_format, &r);
  }
  if (rc) return rc;
  if ((rc = opd__call_copy_(r, self, non_blocking))) {
    opd_tensor_release(r);
    return rc;
  }
  *out = r;
  return 0;
}

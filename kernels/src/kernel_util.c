/* kernel_util.c: helpers shared by all kernels (see kernel_util.h). */
#include "kernel_util.h"

#include <stdio.h>

int opd__alloc_output(const opd_out_spec *spec, opd_device device, opd_tensor **out) {
  return opd_tensor_empty(spec->sizes, spec->ndim, spec->dtype, device, out);
}

int opd__wrap_dim(int64_t dim, int64_t ndim, int64_t *out) {
  int64_t n = ndim > 0 ? ndim : 1;
  if (dim < -n || dim >= n)
    return opd_error(OPD_EINDEX,
                     "Dimension out of range (expected to be in range of [%lld, %lld], but got "
                     "%lld)",
                     (long long)-n, (long long)(n - 1), (long long)dim);
  *out = dim < 0 ? dim + n : dim;
  return 0;
}

int opd__broadcast_shapes(const int64_t *a, int na, const int64_t *b, int nb, int64_t *out,
                          int *nout) {
  int n = na > nb ? na : nb;
  for (int i = 0; i < n; i++) {
    int ia = na - n + i, ib = nb - n + i;
    int64_t sa = ia >= 0 ? a[ia] : 1, sb = ib >= 0 ? b[ib] : 1;
    if (sa != sb && sa != 1 && sb != 1)
      return opd_error(OPD_EINVAL,
                       "The size of tensor a (%lld) must match the size of tensor b (%lld) at "
                       "non-singleton dimension %d",
                       (long long)sa, (long long)sb, i);
    out[i] = sa == 1 ? sb : sa;
  }
  *nout = n;
  return 0;
}

/* c10's Device printed: "cpu", "meta", "cuda:0" (a CUDA device with an index). */
static const char *device_name(opd_device d, char *buf, size_t len) {
  const char *type = d.type == OPD_DEVICE_CPU    ? "cpu"
                     : d.type == OPD_DEVICE_META ? "meta"
                     : d.type == OPD_DEVICE_CUDA ? "cuda"
                                                 : "unknown";
  if (d.type == OPD_DEVICE_CUDA && d.index >= 0)
    snprintf(buf, len, "%s:%d", type, d.index);
  else
    snprintf(buf, len, "%s", type);
  return buf;
}

int opd__common_device(opd_tensor *const *tensors, int n, opd_device *device) {
  bool found = false;
  *device = (opd_device){OPD_DEVICE_CPU, -1};
  for (int i = 0; i < n; i++) {
    if (!tensors[i]) continue;
    opd_device d = opd_tensor_device(tensors[i]);
    if (!found) {
      *device = d;
      found = true;
    } else if (d.type != device->type || d.index != device->index) {
      char a[16], b[16];
      return opd_error(OPD_EINVAL,
                       "Expected all tensors to be on the same device, but found at least two "
                       "devices, %s and %s!",
                       device_name(*device, a, sizeof a), device_name(d, b, sizeof b));
    }
  }
  return 0;
}

const char *opd__format_sizes(const int64_t *sizes, int ndim, char *buf, size_t len) {
  size_t used = 0;
  used += (size_t)snprintf(buf, len, "[");
  for (int i = 0; i < ndim && used < len; i++)
    used += (size_t)snprintf(buf + used, len - used, "%s%lld", i ? ", " : "", (long long)sizes[i]);
  if (used < len) snprintf(buf + used, len - used, "]");
  return buf;
}

int opd__call(const opd_operator **cache, const char *name, opd_stack *stack) {
  const opd_operator *op = __atomic_load_n(cache, __ATOMIC_ACQUIRE);
  if (!op) {
    op = opd_find_schema(name);
    if (!op) {
      opd_stack_clear(stack);
      return opd_error(OPD_EINTERNAL, "built-in operator %s is not defined", name);
    }
    __atomic_store_n(cache, op, __ATOMIC_RELEASE);
  }
  return opd_call_boxed(op, stack);
}

/* Calls `name` with the arguments pushed on s (rc: the first push error, if any); the
 * Tensor it returns goes to *out. Destroys s. */
int opd__call_tensor(int rc, const opd_operator **cache, const char *name, opd_stack *s,
                     opd_tensor **out) {
  if (rc == 0) rc = opd__call(cache, name, s);
  if (rc == 0) rc = opd__pop_tensor_return(s, out);
  opd_stack_destroy(s);
  return rc;
}

/* The same for an in-place operator, whose result (its first argument) is dropped. */
int opd__call_inplace(int rc, const opd_operator **cache, const char *name, opd_stack *s) {
  opd_tensor *r = NULL;
  rc = opd__call_tensor(rc, cache, name, s, &r);
  if (r) opd_tensor_release(r);
  return rc;
}

/* aten::empty.memory_format(size, dtype, layout, device, pin_memory, memory_format) */
int opd__call_empty(opd_int_list size, opd_dtype dtype, int64_t layout, opd_device device,
                    opd_opt_bool pin_memory, int64_t memory_format, opd_tensor **out) {
  static const opd_operator *op;
  opd_stack s;
  opd_stack_init(&s);
  int rc = OPD__PUSH_IntList(&s, size);
  if (rc == 0) rc = OPD__PUSH_OptDType(&s, dtype);
  if (rc == 0) rc = OPD__PUSH_OptLayout(&s, layout);
  if (rc == 0) rc = OPD__PUSH_OptDevice(&s, device);
  if (rc == 0) rc = OPD__PUSH_OptBool(&s, pin_memory);
  if (rc == 0) rc = OPD__PUSH_OptMemoryFormat(&s, memory_format);
  return opd__call_tensor(rc, &op, "aten::empty.memory_format", &s, out);
}

/* aten::empty_strided(size, stride, dtype, layout, device, pin_memory) */
int opd__call_empty_strided(opd_int_list size, opd_int_list stride, opd_dtype dtype, int64_t layout,
                            opd_device device, opd_opt_bool pin_memory, opd_tensor **out) {
  static const opd_operator *op;
  opd_stack s;
  opd_stack_init(&s);
  int rc = OPD__PUSH_IntList(&s, size);
  if (rc == 0) rc = OPD__PUSH_IntList(&s, stride);
  if (rc == 0) rc = OPD__PUSH_OptDType(&s, dtype);
  if (rc == 0) rc = OPD__PUSH_OptLayout(&s, layout);
  if (rc == 0) rc = OPD__PUSH_OptDevice(&s, device);
  if (rc == 0) rc = OPD__PUSH_OptBool(&s, pin_memory);
  return opd__call_tensor(rc, &op, "aten::empty_strided", &s, out);
}

/* aten::copy_(self, src, non_blocking) */
int opd__call_copy_(opd_tensor *self, opd_tensor *src, bool non_blocking) {
  static const opd_operator *op;
  opd_stack s;
  opd_stack_init(&s);
  int rc = OPD__PUSH_Tensor(&s, self);
  if (rc == 0) rc = OPD__PUSH_Tensor(&s, src);
  if (rc == 0) rc = OPD__PUSH_Bool(&s, non_blocking);
  return opd__call_inplace(rc, &op, "aten::copy_", &s);
}

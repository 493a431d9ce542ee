/* scaled_add.c: an example plugin (built as a shared module, loaded by the daemon or by
 * tests with dlopen). It defines myops::scaled_add(Tensor self, Tensor other, float alpha)
 * = self + alpha * other, with a CPU kernel (float32, equal shapes, any strides) and a
 * CompositeImplicitAutograd kernel written with aten::add.Tensor, so that every backend
 * with an add (Meta included) runs it. See opd/library.h.
 *
 * Built a second time with OPD_EXAMPLE_IMPL_ONLY (scaled_add_impl.so): the same kernels
 * without the def, a plugin that overrides another's kernels (the tests load and unload it
 * under traffic).
 */
#include <opd/library.h>
#include <opd/tensor.h>

/* The CPU kernel: a strided walk over both inputs into a new contiguous output. */
static int scaled_add_cpu(const opd_kernel_ctx *ctx, opd_tensor *self, opd_tensor *other,
                          double alpha, opd_tensor **out) {
  (void)ctx;
  if (opd_tensor_dtype(self) != OPD_FLOAT32 || opd_tensor_dtype(other) != OPD_FLOAT32)
    return opd_error(OPD_EINVAL, "myops::scaled_add: the CPU kernel takes float32 tensors");
  if (self->ndim != other->ndim || memcmp(opd_tensor_sizes(self), opd_tensor_sizes(other),
                                          (size_t)self->ndim * sizeof(int64_t)) != 0)
    return opd_error(OPD_EINVAL, "myops::scaled_add: the tensors must have the same shape");
  int ndim = self->ndim;
  if (ndim > 64) return opd_error(OPD_EINVAL, "myops::scaled_add: at most 64 dimensions");
  const int64_t *sizes = opd_tensor_sizes(self);
  int rc = opd_tensor_empty(sizes, ndim, OPD_FLOAT32, opd_tensor_device(self), out);
  if (rc) return rc;
  float *o = opd_tensor_data(*out);
  const float *a = opd_tensor_data(self), *b = opd_tensor_data(other);
  const int64_t *sa = opd_tensor_strides(self), *sb = opd_tensor_strides(other);
  int64_t index[64] = {0};
  for (int64_t n = 0; n < (*out)->numel; n++) {
    int64_t ia = 0, ib = 0;
    for (int d = 0; d < ndim; d++) {
      ia += index[d] * sa[d];
      ib += index[d] * sb[d];
    }
    o[n] = (float)((double)a[ia] + alpha * (double)b[ib]);
    for (int d = ndim - 1; d >= 0 && ++index[d] == sizes[d]; d--) index[d] = 0;
  }
  return 0;
}
OPD_BOXED_WRAPPER(scaled_add_cpu, Tensor, Tensor, Tensor, Double)

OPD_DEFINE_TYPED_CALL(call_add, Tensor, Tensor, Tensor, Scalar)

/* The composite kernel: aten::add.Tensor(self, other, alpha=alpha), dispatched again. */
static int scaled_add_math(const opd_kernel_ctx *ctx, opd_tensor *self, opd_tensor *other,
                           double alpha, opd_tensor **out) {
  (void)ctx;
  static _Atomic(const opd_operator *) add;
  const opd_operator *op = atomic_load_explicit(&add, memory_order_acquire);
  if (!op) {
    op = opd_find_typed("aten::add.Tensor", OPD_SIGNATURE(Tensor, Tensor, Tensor, Scalar));
    if (!op) return opd_last_error_code();
    atomic_store_explicit(&add, op, memory_order_release);
  }
  return call_add(op, self, other, (opd_scalar){.tag = OPD_IV_DOUBLE, .u.d = alpha}, out);
}
OPD_BOXED_WRAPPER(scaled_add_math, Tensor, Tensor, Tensor, Double)

static const opd_kernel cpu_kernel =
    OPD_UNBOXED_KERNEL(scaled_add_cpu, Tensor, Tensor, Tensor, Double);
static const opd_kernel math_kernel =
    OPD_UNBOXED_KERNEL(scaled_add_math, Tensor, Tensor, Tensor, Double);

#ifndef OPD_EXAMPLE_IMPL_ONLY
OPD_LIBRARY(myops, m) {
  opd_lib_def(m, "scaled_add(Tensor self, Tensor other, float alpha) -> Tensor");
}
#endif

OPD_LIBRARY_IMPL(myops, CPU, m) {
  opd_lib_impl(m, "scaled_add", &cpu_kernel);
}

OPD_LIBRARY_IMPL(myops, CompositeImplicitAutograd, m) {
  opd_lib_impl(m, "scaled_add", &math_kernel);
}

OPD_PLUGIN_INIT()

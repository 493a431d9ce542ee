/* linalg_meta.c: the matrix products aten::mm, aten::bmm and aten::addmm: their argument
 * checks and output shapes and dtypes (the meta functions, shared with the CPU kernels of
 * kernels/cpu/linalg.c) and their Meta kernels.
 *
 * PyTorch 1.13 checks shapes in the structured meta functions and dtypes only when the
 * CPU kernel reads the data (Tensor::data_ptr<T>, "expected scalar type Float but found
 * Double"), after returning early for an empty output or an empty contraction: so does
 * opd, and its Meta kernels raise the same errors as the CPU ones.
 */
#include <stdio.h>

#include "linalg_meta.h"
#include "opd/checked.h"
int opd__bmm_meta(opd_tensor *self, opd_tensor *mat2, opd_out_spec *spec, opd_device *device);
int opd__addmm_meta(opd_tensor *self, opd_tensor *mat1, opd_tensor *mat2, opd_out_spec *spec,
                    opd_device *device);

static int shapes_error(const int64_t *a, const int64_t *b) {
  return opd_error(OPD_EINVAL,
                   "mat1 and mat2 shapes cannot be multiplied (%lldx%lld and %lldx%lld)",
                   (long long)a[0], (long long)a[1], (long long)b[0], (long long)b[1]);
}

/* The dtype checks of the CPU gemm, made only when it would run: `op` names the kernel
 * PyTorch dispatches on `dispatch` (which has no Bool kernel); every operand must have
 * dtype `expected`, the first one that does not is reported. */
static int check_gemm_dtypes(const char *op, opd_dtype dispatch, opd_dtype expected,
                             opd_dtype first, opd_dtype second) {
  if (dispatch == OPD_BOOL) return opd_error(OPD_EINVAL, "\"%s\" not implemented for 'Bool'", op);
  opd_dtype bad = first != expected ? first : second;
  if (bad != expected)
    return opd_error(OPD_EINVAL, "expected scalar type %s but found %s",
                     opd_dtype_c10_name(expected), opd_dtype_c10_name(bad));
  return 0;
}

static void matrix_spec(opd_out_spec *spec, int64_t m, int64_t n, opd_dtype dtype) {
  spec->ndim = 2;
  spec->sizes[0] = m;
  spec->sizes[1] = n;
  spec->dtype = dtype;
}

/* self must expand to the output's sizes (at::expand_size's errors) */
static int check_expand(const opd_tensor *self, const opd_out_spec *spec) {
  const int64_t *s = opd_tensor_sizes(self);
  int nd = spec->ndim;
  char target[64], sizes[64 * 24];
  if (self->ndim > nd)
    return opd_error(OPD_EINVAL,
                     "expand(torch.%sTensor{%s}, size=%s): the number of sizes provided (%d) must "
                     "be greater or equal to the number of dimensions in the tensor (%d)",
                     opd_dtype_c10_name(spec->dtype),
                     opd__format_sizes(s, self->ndim, sizes, sizeof sizes),
                     opd__format_sizes(spec->sizes, nd, target, sizeof target), nd, self->ndim);
  for (int d = self->ndim - 1; d >= 0; d--) { /* the last dims first, as expand checks */
    int64_t want = spec->sizes[nd - self->ndim + d];
    if (s[d] != want && s[d] != 1)
      return opd_error(OPD_EINVAL,
                       "The expanded size of the tensor (%lld) must match the existing size (%lld) "
                       "at non-singleton dimension %d.  Target sizes: %s.  Tensor sizes: %s",
                       (long long)want, (long long)s[d], nd - self->ndim + d,
                       opd__format_sizes(spec->sizes, nd, target, sizeof target),
                       opd__format_sizes(s, self->ndim, sizes, sizeof sizes));
  }
  return 0;
}

int opd__mm_meta(opd_tensor *self, opd_tensor *mat2, opd_out_spec *spec, opd_device *device) {
  opd_tensor *args[] = {self, mat2};
  int rc = opd__common_device(args, 2, device);
  if (rc) return rc;
  if (self->ndim != 2) return opd_error(OPD_EINVAL, "self must be a matrix");
  if (mat2->ndim != 2) return opd_error(OPD_EINVAL, "mat2 must be a matrix");
  const int64_t *a = opd_tensor_sizes(self), *b = opd_tensor_sizes(mat2);
  if (a[1] != b[0]) return shapes_error(a, b);
  matrix_spec(spec, a[0], b[1], opd_tensor_dtype(self));
  if (a[0] == 0 || b[1] == 0 || a[1] == 0) return 0;
  return check_gemm_dtypes("addmm_impl_cpu_", spec->dtype, spec->dtype, opd_tensor_dtype(mat2),
                           opd_tensor_dtype(self));
}

int opd__bmm_meta(opd_tensor *self, opd_tensor *mat2, opd_out_spec *spec, opd_device *device) {
  opd_tensor *args[] = {self, mat2};
  int rc = opd__common_device(args, 2, device);
  if (rc) return rc;
  if (self->ndim != 3) return opd_error(OPD_EINVAL, "batch1 must be a 3D tensor");
  if (mat2->ndim != 3) return opd_error(OPD_EINVAL, "batch2 must be a 3D tensor");
  const int64_t *a = opd_tensor_sizes(self), *b = opd_tensor_sizes(mat2);
  if (b[0] != a[0] || b[1] != a[2])
    return opd_error(OPD_EINVAL,
                     "Expected size for first two dimensions of batch2 tensor to be: [%lld, %lld] "
                     "but got: [%lld, %lld].",
                     (long long)a[0], (long long)a[2], (long long)b[0], (long long)b[1]);
  /* the output takes batch2's dtype */
  opd_dtype t1 = opd_tensor_dtype(self), t2 = opd_tensor_dtype(mat2);
  spec->ndim = 3;
  spec->sizes[0] = a[0];
  spec->sizes[1] = a[1];
  spec->sizes[2] = b[2];
  spec->dtype = t2;
  if (a[0] == 0 || a[1] == 0 || b[2] == 0 || a[2] == 0) return 0;
  /* PyTorch runs a loop dispatched on batch1's dtype for small products (m * n * k < 400),
   * else gemm dispatched on the output's */
  int64_t mn, mnk;
  bool small = !opd_ckd_mul(&mn, a[1], b[2]) && !opd_ckd_mul(&mnk, mn, a[2]) && mnk < 400;
  return small ? check_gemm_dtypes("bmm", t1, t1, t2, t2)
               : check_gemm_dtypes("addmm_impl_cpu_", t2, t2, t1, t1);
}

int opd__addmm_meta(opd_tensor *self, opd_tensor *mat1, opd_tensor *mat2, opd_out_spec *spec,
                    opd_device *device) {
  opd_tensor *args[] = {self, mat1, mat2};
  int rc = opd__common_device(args, 3, device);
  if (rc) return rc;
  if (mat1->ndim != 2)
    return opd_error(OPD_EINVAL, "mat1 must be a matrix, got %d-D tensor", mat1->ndim);
  if (mat2->ndim != 2)
    return opd_error(OPD_EINVAL, "mat2 must be a matrix, got %d-D tensor", mat2->ndim);
  const int64_t *a = opd_tensor_sizes(mat1), *b = opd_tensor_sizes(mat2);
  if (a[1] != b[0]) return shapes_error(a, b);
  matrix_spec(spec, a[0], b[1], opd_tensor_dtype(self));
  rc = check_expand(self, spec);
  if (rc) return rc;
  if (a[0] == 0 || b[1] == 0 || a[1] == 0) return 0;
  return check_gemm_dtypes("addmm_impl_cpu_", spec->dtype, spec->dtype, opd_tensor_dtype(mat2),
                           opd_tensor_dtype(mat1));
}

int opd__mm_alloc(opd_tensor *self, opd_tensor *mat2, opd_tensor **out) {
  opd_out_spec spec;
  opd_device device;
  int rc = opd__mm_meta(self, mat2, &spec, &device);
  return rc ? rc : opd__alloc_output(&spec, device, out);
}

int opd__bmm_alloc(opd_tensor *self, opd_tensor *mat2, opd_tensor **out) {
  opd_out_spec spec;
  opd_device device;
  int rc = opd__bmm_meta(self, mat2, &spec, &device);
  return rc ? rc : opd__alloc_output(&spec, device, out);
}

int opd__addmm_alloc(opd_tensor *self, opd_tensor *mat1, opd_tensor *mat2, opd_tensor **out) {
  opd_out_spec spec;
  opd_device device;
  int rc = opd__addmm_meta(self, mat1, mat2, &spec, &device);
  return rc ? rc : opd__alloc_output(&spec, device, out);
}

int opd__meta_mm(const opd_kernel_ctx *ctx, opd_tensor *self, opd_tensor *mat2, opd_tensor **out) {
  (void)ctx;
  return opd__mm_alloc(self, mat2, out);
}

int opd__meta_bmm(const opd_kernel_ctx *ctx, opd_tensor *self, opd_tensor *mat2, opd_tensor **out) {
  (void)ctx;
  return opd__bmm_alloc(self, mat2, out);
}

int opd__meta_addmm(const opd_kernel_ctx *ctx, opd_tensor *self, opd_tensor *mat1, opd_tensor *mat2,
                    opd_scalar beta, opd_scalar alpha, opd_tensor **out) {
  (void)ctx;
  (void)beta;
  (void)alpha;
  return opd__addmm_alloc(self, mat1, mat2, out);
}

/* ---- dot, vdot, addmv ---- */

int opd__dot_meta(const char *name, opd_tensor *self, opd_tensor *other, opd_out_spec *spec,
                  opd_device *device) {
  opd_tensor *args[] = {self, other};
  int rc = opd__common_device(args, 2, device);
  if (rc) return rc;
  if (self->ndim != 1 || other->ndim != 1)
    return opd_error(OPD_EINVAL, "1D tensors expected, but got %dD and %dD tensors", self->ndim,
                     other->ndim);
  opd_dtype a = opd_tensor_dtype(self), b = opd_tensor_dtype(other);
  if (a != b)
    return opd_error(OPD_EINVAL,
                     "dot : expected both vectors to have same dtype, but found %s and %s",
                     opd_dtype_c10_name(a), opd_dtype_c10_name(b));
  int64_t n = self->numel, m = other->numel;
  if (n != m)
    return opd_error(OPD_EINVAL,
                     "inconsistent tensor size, expected tensor [%lld] and src [%lld] to have the "
                     "same number of elements, but got %lld and %lld elements respectively",
                     (long long)n, (long long)m, (long long)n, (long long)m);
  if (a == OPD_BOOL) return opd_error(OPD_EINVAL, "\"%s\" not implemented for 'Bool'", name);
  spec->ndim = 0;
  spec->dtype = a;
  return 0;
}

int opd__addmv_meta(opd_tensor *self, opd_tensor *mat, opd_tensor *vec, opd_out_spec *spec,
                    opd_device *device) {
  opd_tensor *args[] = {self, mat, vec};
  int rc = opd__common_device(args, 3, device);
  if (rc) return rc;
  if (mat->ndim != 2 || vec->ndim != 1 || self->ndim > 1)
    return opd_error(OPD_EINVAL, "vector + matrix @ vector expected, got %d, %d, %d", self->ndim,
                     mat->ndim, vec->ndim);
  const int64_t *ms = opd_tensor_sizes(mat);
  int64_t k = opd_tensor_sizes(vec)[0];
  if (ms[1] != k || (ms[0] != self->numel && self->numel != 1))
    return opd_error(OPD_EINVAL, "size mismatch, got %lld, %lldx%lld,%lld",
                     (long long)(self->ndim ? opd_tensor_sizes(self)[0] : self->numel),
                     (long long)ms[0], (long long)ms[1], (long long)k);
  spec->ndim = 1;
  spec->sizes[0] = ms[0];
  spec->dtype = opd_tensor_dtype(mat);
  if (mat->numel == 0) return 0;
  return check_gemm_dtypes("addmv_impl_cpu", spec->dtype, spec->dtype, opd_tensor_dtype(vec),
                           spec->dtype);
}

int opd__dot_output(const char *name, opd_tensor *self, opd_tensor *other, opd_out_spec *spec,
                    opd_tensor **out) {
  opd_device device;
  int rc = opd__dot_meta(name, self, other, spec, &device);
  return rc ? rc : opd__alloc_output(spec, device, out);
}

int opd__addmv_output(opd_tensor *self, opd_tensor *mat, opd_tensor *vec, opd_out_spec *spec,
                      opd_tensor **out) {
  opd_device device;
  int rc = opd__addmv_meta(self, mat, vec, spec, &device);
  return rc ? rc : opd__alloc_output(spec, device, out);
}

static int meta_dot(const char *name, opd_tensor *self, opd_tensor *other, opd_tensor **out) {
  opd_out_spec spec;
  return opd__dot_output(name, self, other, &spec, out);
}

OPD__DEFINE_DOT_KERNELS(meta, meta_dot)

int opd__meta_addmv(const opd_kernel_ctx *ctx, opd_tensor *self, opd_tensor *mat, opd_tensor *vec,
                    opd_scalar beta, opd_scalar alpha, opd_tensor **out) {
  (void)ctx;
  (void)beta;
  (void)alpha;
  opd_out_spec spec;
  return opd__addmv_output(self, mat, vec, &spec, out);
}

/* ---- baddbmm, addbmm ---- */

/* The batch checks of baddbmm ("Expected size for first two dimensions of batch2 ...") or
 * addbmm (the batch counts, then the matrices' sizes) and the output spec. */
static int batched_meta(bool sum, opd_tensor *self, opd_tensor *b1, opd_tensor *b2,
                        opd_out_spec *spec, opd_device *device) {
  opd_tensor *args[] = {self, b1, b2};
  int rc = opd__common_device(args, 3, device);
  if (rc) return rc;
  if (b1->ndim != 3) return opd_error(OPD_EINVAL, "batch1 must be a 3D tensor");
  if (b2->ndim != 3) return opd_error(OPD_EINVAL, "batch2 must be a 3D tensor");
  const int64_t *a = opd_tensor_sizes(b1), *b = opd_tensor_sizes(b2);
  if (sum && a[0] != b[0])
    return opd_error(OPD_EINVAL,
                     "batch1 and batch2 must have same number of batches, got %lld and %lld",
                     (long long)a[0], (long long)b[0]);
  if (sum && a[2] != b[1])
    return opd_error(OPD_EINVAL, "Incompatible matrix sizes for bmm (%lldx%lld and %lldx%lld)",
                     (long long)a[1], (long long)a[2], (long long)b[1], (long long)b[2]);
  if (!sum && (b[0] != a[0] || b[1] != a[2]))
    return opd_error(OPD_EINVAL,
                     "Expected size for first two dimensions of batch2 tensor to be: [%lld, %lld] "
                     "but got: [%lld, %lld].",
                     (long long)a[0], (long long)a[2], (long long)b[0], (long long)b[1]);
  opd_dtype dt = opd_tensor_dtype(b1);
  if (sum) {
    matrix_spec(spec, a[1], b[2], dt);
  } else {
    spec->ndim = 3;
    spec->sizes[0] = a[0];
    spec->sizes[1] = a[1];
    spec->sizes[2] = b[2];
    spec->dtype = dt;
  }
  rc = check_expand(self, spec);
  if (rc) return rc;
  if (sum && opd_tensor_dtype(self) != dt)
    return opd_error(OPD_EINVAL, "self and mat2 must have the same dtype");
  if (a[0] == 0 || a[1] == 0 || b[2] == 0 || a[2] == 0) return 0;
  return check_gemm_dtypes(sum ? "addmm_impl_cpu_" : "baddbmm", dt, dt, opd_tensor_dtype(b2), dt);
}

int opd__baddbmm_meta(opd_tensor *self, opd_tensor *batch1, opd_tensor *batch2, opd_out_spec *spec,
                      opd_device *device) {
  return batched_meta(false, self, batch1, batch2, spec, device);
}

int opd__addbmm_meta(opd_tensor *self, opd_tensor *batch1, opd_tensor *batch2, opd_out_spec *spec,
                     opd_device *device) {
  return batched_meta(true, self, batch1, batch2, spec, device);
}

int opd__meta_baddbmm(const opd_kernel_ctx *ctx, opd_tensor *self, opd_tensor *batch1,
                      opd_tensor *batch2, opd_scalar beta, opd_scalar alpha, opd_tensor **out) {
  (void)ctx;
  (void)beta;
  (void)alpha;
  opd_out_spec spec;
  opd_device device;
  int rc = opd__baddbmm_meta(self, batch1, batch2, &spec, &device);
  return rc ? rc : opd__alloc_output(&spec, device, out);
}

int opd__meta_addbmm(const opd_kernel_ctx *ctx, opd_tensor *self, opd_tensor *batch1,
                     opd_tensor *batch2, opd_scalar beta, opd_scalar alpha, opd_tensor **out) {
  (void)ctx;
  (void)beta;
  (void)alpha;
  opd_out_spec spec;
  opd_device device;
  int rc = opd__addbmm_meta(self, batch1, batch2, &spec, &device);
  return rc ? rc : opd__alloc_output(&spec, device, out);
}

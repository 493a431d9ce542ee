/* elementwise_misc.c: CPU kernels of where.self, clamp, and the in-place writers
 * masked_fill_.Scalar, copy_ (with broadcasting and dtype conversion) and fill_.Scalar.
 * Shapes, dtypes and checks come from kernels/meta/elementwise_meta.c. */
#include <math.h>
#include <string.h>

#include "meta/elementwise_meta.h"
#include "src/loops.h"

static const opd_device cpu_device = {OPD_DEVICE_CPU, -1};

/* where: out = cond ? a : b */
#define WHERE_LOOP(tag, name)                                                            \
  static void name##_##tag(char *out_, char *const *in, int64_t n, opd__loop_ctx *ctx) { \
    typedef OPD__T_##tag T;                                                              \
    (void)ctx;                                                                           \
    T *out = (T *)out_;                                                                  \
    const uint8_t *c = (const uint8_t *)in[0];                                           \
    const T *a = (const T *)in[1], *b = (const T *)in[2];                                \
    for (int64_t i = 0; i < n; i++) out[i] = c[i] ? a[i] : b[i];                         \
  }
/* masked_fill_: out = mask ? c0 : out */
#define MASKED_FILL_LOOP(tag, name)                                                      \
  static void name##_##tag(char *out_, char *const *in, int64_t n, opd__loop_ctx *ctx) { \
    OPD__LOOP_PROLOGUE(tag);                                                             \
    T *out = (T *)out_;                                                                  \
    const uint8_t *m = (const uint8_t *)in[0];                                           \
    for (int64_t i = 0; i < n; i++) out[i] = m[i] ? c0 : out[i];                         \
  }
/* fill_: out = c0 */
#define FILL_LOOP(tag, name)                                                             \
  static void name##_##tag(char *out_, char *const *in, int64_t n, opd__loop_ctx *ctx) { \
    OPD__LOOP_PROLOGUE(tag);                                                             \
    (void)in;                                                                            \
    T *out = (T *)out_;                                                                  \
    for (int64_t i = 0; i < n; i++) out[i] = c0;                                         \
  }
#define ALL_TYPES(M, name) OPD__FLOATS(M, name) OPD__INTS(M, name) OPD__BOOLS(M, name)

ALL_TYPES(WHERE_LOOP, where)
ALL_TYPES(MASKED_FILL_LOOP, masked_fill)
ALL_TYPES(FILL_LOOP, fill)
/* std::min(std::max(x, min), max), as ATen: NaN propagates, min > max gives max */
#define CLAMP(x) (c1 < ((x) < c0 ? c0 : (x)) ? c1 : ((x) < c0 ? c0 : (x)))
OPD__FLOATS(OPD__UNARY_LOOP, clamp, CLAMP(x))
OPD__INTS(OPD__UNARY_LOOP, clamp, CLAMP(x))
OPD__FLOATS(OPD__UNARY_LOOP, clamp_min, x < c0 ? c0 : x)
OPD__INTS(OPD__UNARY_LOOP, clamp_min, x < c0 ? c0 : x)
OPD__FLOATS(OPD__UNARY_LOOP, clamp_max, c1 < x ? c1 : x)
OPD__INTS(OPD__UNARY_LOOP, clamp_max, c1 < x ? c1 : x)

static const opd__loop_fn where_loops[OPD__NC] = {ALL_TYPES(OPD__ENTRY, where)};
static const opd__loop_fn masked_fill_loops[OPD__NC] = {ALL_TYPES(OPD__ENTRY, masked_fill)};
static const opd__loop_fn fill_loops[OPD__NC] = {ALL_TYPES(OPD__ENTRY, fill)};
static const opd__loop_fn clamp_loops[OPD__NC] = {OPD__FLOATS(OPD__ENTRY, clamp)
                                                      OPD__INTS(OPD__ENTRY, clamp)};
static const opd__loop_fn clamp_min_loops[OPD__NC] = {OPD__FLOATS(OPD__ENTRY, clamp_min)
                                                          OPD__INTS(OPD__ENTRY, clamp_min)};
static const opd__loop_fn clamp_max_loops[OPD__NC] = {OPD__FLOATS(OPD__ENTRY, clamp_max)
                                                          OPD__INTS(OPD__ENTRY, clamp_max)};

int opd__cpu_where_self(const opd_kernel_ctx *ctx, opd_tensor *condition, opd_tensor *self,
                        opd_tensor *other, opd_tensor **out) {
  (void)ctx;
  opd_out_spec spec;
  int rc = opd__where_meta(condition, self, other, &spec);
  if (rc) return rc;
  opd_tensor *r = NULL, *inputs[3] = {condition, self, other};
  if ((rc = opd__alloc_elementwise_output(&spec, inputs, 3, cpu_device, &r))) return rc;
  opd_dtype c = opd__compute_dtype(spec.dtype);
  opd__loop loop = {.fn = where_loops[opd__compute_index(spec.dtype)],
                    .ninputs = 3,
                    .in_dtype = {OPD_BOOL, c, c},
                    .out_dtype = c};
  opd__loop_run(r, inputs, &loop);
  *out = r;
  return 0;
}

/* Writes value (c10's Scalar::to<T> of self's dtype) everywhere. */
static int fill(opd_tensor *self, opd_scalar value) {
  opd__loop_ctx lctx = {0};
  int rc = opd__scalar_to(value, opd_tensor_dtype(self), &lctx.c[0]);
  if (rc) return rc;
  opd__loop loop = {.fn = fill_loops[opd__compute_index(opd_tensor_dtype(self))],
                    .out_dtype = opd__compute_dtype(opd_tensor_dtype(self)),
                    .ctx = &lctx};
  opd__loop_run(self, NULL, &loop);
  return 0;
}

int opd__cpu_clamp(const opd_kernel_ctx *ctx, opd_tensor *self, opd_scalar min, opd_scalar max,
                   opd_tensor **out) {
  (void)ctx;
  opd_out_spec spec;
  int rc = opd__clamp_meta(self, min, max, &spec);
  if (rc) return rc;
  bool has_min = min.tag != OPD_IV_NONE, has_max = max.tag != OPD_IV_NONE;
  opd_tensor *r = NULL;
  if ((rc = opd__alloc_elementwise_output(&spec, &self, 1, cpu_device, &r))) return rc;
  if (has_min && has_max &&
      (isnan(opd__scalar_to_double(min)) || isnan(opd__scalar_to_double(max)))) {
    rc = fill(r, opd__scalar_double(NAN)); /* as ATen: a NaN bound makes everything NaN */
  } else {
    opd__loop_ctx lctx = {0};
    const opd__loop_fn *table = has_min && has_max ? clamp_loops
                                : has_min          ? clamp_min_loops
                                                   : clamp_max_loops;
    const char *name = has_min && has_max ? "clamp_scalar_cpu"
                       : has_min          ? "clamp_min_scalar_cpu"
                                          : "clamp_max_scalar_cpu";
    opd__loop_fn fn;
    if (!(rc = opd__loop_select(table, spec.dtype, name, &fn)) &&
        !(has_min && (rc = opd__scalar_to(min, spec.dtype, &lctx.c[0]))) &&
        !(has_max && (rc = opd__scalar_to(max, spec.dtype, &lctx.c[1])))) {
      opd_dtype c = opd__compute_dtype(spec.dtype);
      opd__loop loop = {.fn = fn, .ninputs = 1, .in_dtype = {c}, .out_dtype = c, .ctx = &lctx};
      opd__loop_run(r, &self, &loop);
    }
  }
  if (rc) {
    opd_tensor_release(r);
    return rc;
  }
  *out = r;
  return 0;
}

/* In-place kernels return self, with its version bumped. */
static int inplace_done(opd_tensor *self, opd_tensor **out) {
  opd_tensor_bump_version(self);
  opd_tensor_retain(self);
  *out = self;
  return 0;
}

int opd__cpu_masked_fill__scalar(const opd_kernel_ctx *ctx, opd_tensor *self, opd_tensor *mask,
                                 opd_scalar value, opd_tensor **out) {
  (void)ctx;
  int rc = opd__masked_fill_meta(self, mask);
  opd__loop_ctx lctx = {0};
  if (rc || (rc = opd__scalar_to(value, opd_tensor_dtype(self), &lctx.c[0]))) return rc;
  opd__loop loop = {.fn = masked_fill_loops[opd__compute_index(opd_tensor_dtype(self))],
                    .ninputs = 1,
                    .in_dtype = {OPD_BOOL},
                    .out_dtype = opd__compute_dtype(opd_tensor_dtype(self)),
                    .reads_out = true,
                    .ctx = &lctx};
  opd__loop_run(self, &mask, &loop);
  return inplace_done(self, out);
}

/* copy_ from a tensor that is self's memory, viewed the same way, is a no-op (ATen). */
static bool same_data(const opd_tensor *a, const opd_tensor *b) {
  return a == b ||
         (opd_tensor_shares_storage(a, b) && a->storage_offset == b->storage_offset &&
          a->dtype == b->dtype && a->ndim == b->ndim &&
          !memcmp(opd_tensor_sizes(a), opd_tensor_sizes(b), a->ndim * sizeof(int64_t)) &&
          !memcmp(opd_tensor_strides(a), opd_tensor_strides(b), a->ndim * sizeof(int64_t)));
}

int opd__cpu_copy_(const opd_kernel_ctx *ctx, opd_tensor *self, opd_tensor *src, bool non_blocking,
                   opd_tensor **out) {
  (void)ctx;
  (void)non_blocking;
  if (!same_data(self, src)) {
    int rc = opd__copy_meta(self, src);
    if (rc) return rc;
    opd__loop copy = {.fn = NULL, .ninputs = 1};
    opd__loop_run(self, &src, &copy);
  }
  return inplace_done(self, out);
}

int opd__cpu_fill__scalar(const opd_kernel_ctx *ctx, opd_tensor *self, opd_scalar value,
                          opd_tensor **out) {
  (void)ctx;
  int rc = fill(self, value);
  return rc ? rc : inplace_done(self, out);
}

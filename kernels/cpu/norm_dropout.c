/* norm_dropout.c: the CPU kernels of native_dropout (boxed: output and mask) and
 * native_dropout_backward.
 *
 * [Note: Dropout's random numbers]
 * native_dropout keeps each element with probability 1 - p (PyTorch's Bernoulli draw per
 * element) and scales the kept ones by 1 / (1 - p) (0 when p is 1). The draws come from a
 * xoshiro256** generator per thread, seeded on the thread's first draw from the process's
 * entropy (getrandom) mixed with a counter through splitmix64, so that no two threads share
 * a stream. The numbers are not PyTorch's (its CPU generator is a Mersenne Twister seeded by
 * torch.manual_seed, which opd does not expose): results agree with PyTorch in distribution,
 * not bit for bit. train=False is the identity (a copy, and a mask of ones).
 */
#include <stdatomic.h>
#include <string.h>
#include <sys/random.h>

#include "meta/norm_meta.h"
#include "meta/reduce_meta.h"
#include "reduce_walk.h"
#include "src/loops.h"

static const opd_device cpu_device = {OPD_DEVICE_CPU, -1};

static uint64_t splitmix64(uint64_t *x) {
  uint64_t z = (*x += 0x9e3779b97f4a7c15u);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
  return z ^ (z >> 31);
}

static inline uint64_t rotl(uint64_t x, int k) {
  return (x << k) | (x >> (64 - k));
}

typedef struct rng {
  uint64_t s[4];
  bool seeded;
} rng;

static _Thread_local rng thread_rng;

static void rng_seed(rng *r) {
  static atomic_uint_fast64_t streams;
  uint64_t seed = 0;
  if (getrandom(&seed, sizeof seed, 0) != (ssize_t)sizeof seed) seed = (uint64_t)(uintptr_t)r;
  seed ^= atomic_fetch_add(&streams, 1) * 0xd1b54a32d192ed03u;
  for (int k = 0; k < 4; k++) r->s[k] = splitmix64(&seed);
  r->seeded = true;
}

/* xoshiro256** */
static uint64_t rng_next(rng *r) {
  uint64_t *s = r->s, result = rotl(s[1] * 5, 7) * 9, t = s[1] << 17;
  s[2] ^= s[0];
  s[3] ^= s[1];
  s[1] ^= s[2];
  s[0] ^= s[3];
  s[2] ^= t;
  s[3] = rotl(s[3], 45);
  return result;
}

/* A uniform double in [0, 1). */
static inline double rng_uniform(rng *r) {
  return (double)(rng_next(r) >> 11) * 0x1p-53;
}

/* out (contiguous, floating) *= keep ? scale : 0, mask = keep, with keep drawn with
 * probability p1m. */
#define DROP(T, out, mask, n, p1m, scale, r)                      \
  for (int64_t i = 0; i < (n); i++) {                             \
    bool keep = rng_uniform(r) < (p1m);                           \
    (mask)[i] = keep;                                             \
    ((T *)(out))[i] = keep ? ((T *)(out))[i] * (T)(scale) : (T)0; \
  }

static int dropout(opd_ivalue *args, opd_tensor **res) {
  opd_tensor *input;
  double p;
  bool train;
  opd_out_spec out_spec, mask_spec;
  int rc = opd__dropout_args_read(args, &input, &p, &train, &out_spec, &mask_spec);
  if (rc) return rc;
  if (input->numel == 0) { /* PyTorch returns the input itself and an uninitialized mask */
    opd_tensor_retain(input);
    res[0] = input;
    return opd__alloc_output(&mask_spec, cpu_device, &res[1]);
  }
  if ((rc = opd__alloc_output(&out_spec, cpu_device, &res[0])) ||
      (rc = opd__alloc_output(&mask_spec, cpu_device, &res[1])))
    return rc;
  opd__loop copy = {.fn = NULL, .ninputs = 1};
  opd__loop_run(res[0], &input, &copy);
  uint8_t *mask = opd_tensor_data(res[1]);
  int64_t n = input->numel;
  if (!train) {
    memset(mask, 1, (size_t)n);
    return 0;
  }
  double p1m = 1 - p, scale = p1m == 0 ? 0 : 1 / p1m;
  rng *r = &thread_rng;
  if (!r->seeded) rng_seed(r);
  void *out = opd_tensor_data(res[0]);
  switch (opd_tensor_dtype(input)) {
  case OPD_FLOAT32: DROP(float, out, mask, n, p1m, scale, r); break;
  case OPD_FLOAT64: DROP(double, out, mask, n, p1m, scale, r); break;
  default: { /* float16, bfloat16: through float */
    opd_dtype dt = opd_tensor_dtype(input);
    size_t esz = opd_dtype_size(dt);
    for (int64_t i = 0; i < n; i++) {
      char *e = (char *)out + (size_t)i * esz;
      double v;
      opd__load_f64(e, 1, dt, 1, &v);
      bool keep = rng_uniform(r) < p1m;
      mask[i] = keep;
      opd__store_float(e, dt, keep ? (float)v * (float)scale : 0.0f);
    }
  }
  }
  return 0;
}

int opd__cpu_native_dropout(const opd_kernel_ctx *ctx, opd_stack *stack) {
  (void)ctx;
  return opd__boxed_run(stack, 3, 2, true, dropout);
}

/* grad * mask * scale, the mask read as the gradient's dtype */
#define DROPOUT_BACKWARD_LOOP(tag, name, expr)                                           \
  static void name##_##tag(char *out_, char *const *in, int64_t n, opd__loop_ctx *ctx) { \
    OPD__LOOP_PROLOGUE(tag);                                                             \
    T *out = (T *)out_;                                                                  \
    const T *a = (const T *)in[0], *b = (const T *)in[1];                                \
    for (int64_t i = 0; i < n; i++) out[i] = (expr);                                     \
  }
OPD__FLOATS(DROPOUT_BACKWARD_LOOP, dropout_backward, a[i] * b[i] * c0)
static const opd__loop_fn dropout_backward_loops[OPD__NC] = {
    OPD__FLOATS(OPD__ENTRY, dropout_backward)};

int opd__cpu_native_dropout_backward(const opd_kernel_ctx *ctx, opd_tensor *grad_output,
                                     opd_tensor *mask, double scale, opd_tensor **out) {
  (void)ctx;
  opd_out_spec spec;
  int rc = opd__dropout_backward_meta(grad_output, mask, &spec);
  opd__loop_fn fn;
  if (rc || (rc = opd__loop_select(dropout_backward_loops, spec.dtype, "mul_cpu", &fn))) return rc;
  opd_tensor *in[2] = {grad_output, mask}, *r = NULL;
  if ((rc = opd__alloc_elementwise_output(&spec, in, 2, cpu_device, &r))) return rc;
  opd_dtype cd = opd__compute_dtype(spec.dtype);
  opd__loop_ctx lctx = {0};
  if (cd == OPD_FLOAT64)
    lctx.c[0].f64 = scale;
  else
    lctx.c[0].f32 = (float)scale;
  opd__loop loop = {.fn = fn, .ninputs = 2, .in_dtype = {cd, cd}, .out_dtype = cd, .ctx = &lctx};
  opd__loop_run(r, in, &loop);
  *out = r;
  return 0;
}

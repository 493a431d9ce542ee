/* random.c: the random operators on the CPU and Meta: uniform_, normal_, exponential_,
 * bernoulli_ (float and Tensor p), random_ (to, from, full range), bernoulli, and the
 * factories rand, randn, rand_like, randn_like, randint, randint.low, randperm written with
 * them. Values come from the thread's generator ([Note: Random generators] in opd/random.h);
 * element i of a result takes Philox block offset + i, so the intra-op pool may split the
 * work anywhere. The in-place operators are boxed (their Generator? argument has no unboxed
 * tag; a generator other than None is refused). */
#include <math.h>
#include <string.h>

#include "meta/elementwise_meta.h"
#include "opd/random.h"
#include "src/kernel_util.h"
#include "src/loops.h"
#include "src/parallel.h"
#include "src/philox.h"

typedef enum draw_kind {
  DRAW_UNIFORM,     /* a + u (b - a) */
  DRAW_NORMAL,      /* a + b z (Box-Muller) */
  DRAW_EXPONENTIAL, /* -log(1 - u) / a */
  DRAW_BERNOULLI,   /* u < a, or u < p[i] */
  DRAW_INTEGER,     /* from + x mod range */
} draw_kind;

typedef struct draw {
  draw_kind kind;
  double a, b;
  const double *p; /* bernoulli with a tensor p: one per element */
  int64_t from;
  uint64_t range; /* 0: 2^64 */
  opd_dtype dtype;
  char *data; /* contiguous, of dtype */
  uint64_t seed, base;
} draw;

static void store_double(char *p, opd_dtype t, double v) {
  switch (t) {
  case OPD_FLOAT32: {
    float f = (float)v;
    memcpy(p, &f, sizeof f);
    break;
  }
  case OPD_FLOAT16: {
    uint16_t h = opd_float_to_half((float)v);
    memcpy(p, &h, sizeof h);
    break;
  }
  case OPD_BFLOAT16: {
    uint16_t h = opd_float_to_bf16((float)v);
    memcpy(p, &h, sizeof h);
    break;
  }
  default: memcpy(p, &v, sizeof v);
  }
}

static void store_int(char *p, opd_dtype t, int64_t v) {
  switch (t) {
  case OPD_FLOAT32:
  case OPD_FLOAT64:
  case OPD_FLOAT16:
  case OPD_BFLOAT16: store_double(p, t, (double)v); break;
  case OPD_INT64: memcpy(p, &v, sizeof v); break;
  case OPD_INT32: {
    int32_t x = (int32_t)v;
    memcpy(p, &x, sizeof x);
    break;
  }
  case OPD_INT16: {
    int16_t x = (int16_t)v;
    memcpy(p, &x, sizeof x);
    break;
  }
  case OPD_INT8: *(int8_t *)p = (int8_t)v; break;
  case OPD_BOOL: *(uint8_t *)p = v != 0; break;
  default: *(uint8_t *)p = (uint8_t)v; break;
  }
}

static void draw_range(void *ctx, int64_t begin, int64_t end) {
  const draw *d = ctx;
  size_t size = opd_dtype_size(d->dtype);
  for (int64_t i = begin; i < end; i++) {
    uint32_t w[4];
    opd__philox(d->seed, d->base + (uint64_t)i, w);
    char *out = d->data + (size_t)i * size;
    double u = opd__uniform53(w[0], w[1]);
    switch (d->kind) {
    case DRAW_UNIFORM: store_double(out, d->dtype, d->a + u * (d->b - d->a)); break;
    case DRAW_NORMAL: {
      double z = sqrt(-2 * log(1 - u)) * cos(6.283185307179586477 * opd__uniform53(w[2], w[3]));
      store_double(out, d->dtype, d->a + d->b * z);
      break;
    }
    case DRAW_EXPONENTIAL: store_double(out, d->dtype, -log1p(-u) / d->a); break;
    case DRAW_BERNOULLI: store_int(out, d->dtype, u < (d->p ? d->p[i] : d->a)); break;
    case DRAW_INTEGER: {
      uint64_t x = ((uint64_t)w[0] << 32) | w[1];
      store_int(out, d->dtype, (int64_t)((uint64_t)d->from + (d->range ? x % d->range : x)));
      break;
    }
    }
  }
}

/* Fills self (a CPU tensor) with d's draws: directly when it is contiguous, else through a
 * contiguous tensor copied into it. */
static int draw_into(opd_tensor *self, draw *d) {
  opd_generator *g = opd_generator_current();
  d->dtype = opd_tensor_dtype(self);
  d->seed = g->seed;
  d->base = opd_generator_take(g, (uint64_t)self->numel);
  opd_tensor *t = self;
  int rc = 0;
  if (!opd_tensor_is_contiguous(self))
    rc = opd__call_empty((opd_int_list){opd_tensor_sizes(self), self->ndim}, d->dtype, -1,
                         opd_tensor_device(self), (opd_opt_bool){false, false}, -1, &t);
  if (rc) return rc;
  d->data = opd_tensor_data(t);
  opd__parallel_for(0, self->numel, OPD_GRAIN_ELEMENTWISE / 8, draw_range, d);
  if (t != self) {
    rc = opd__call_copy_(self, t, false);
    opd_tensor_release(t);
  } else {
    opd_tensor_bump_version(self);
  }
  return rc;
}

/* ---- argument checks (shared by the CPU and Meta kernels) ---- */

static int floating_only(opd_tensor *self, const char *name) {
  opd_dtype t = opd_tensor_dtype(self);
  return opd_dtype_is_floating(t) ? 0
                                  : opd_error(OPD_EINVAL, "\"%s\" not implemented for '%s'", name,
                                              opd_dtype_c10_name(t));
}

/* The largest value random_ draws for dtype t without bounds: 2^digits for floats, the
 * maximum for integers. */
static uint64_t full_range_max(opd_dtype t) {
  switch (t) {
  case OPD_FLOAT64: return 1ull << 53;
  case OPD_FLOAT32: return 1ull << 24;
  case OPD_FLOAT16: return 1ull << 11;
  case OPD_BFLOAT16: return 1ull << 8;
  case OPD_INT64: return INT64_MAX;
  case OPD_INT32: return INT32_MAX;
  case OPD_INT16: return INT16_MAX;
  case OPD_INT8: return INT8_MAX;
  case OPD_UINT8: return UINT8_MAX;
  default: return 1;
  }
}

/* ---- boxed kernels: argument reading ---- */

typedef struct random_args {
  opd_tensor *self, *p;
  double a, b;
  int64_t from, to;
  bool has_to;
} random_args;

/* Reads n arguments, self first, the generator (None) last. `layout` names the ones
 * between: 'd' a float (a then b), 'i' an int (from then to), 'j' an optional int (to), 't'
 * a tensor (p). */
static int read_args(opd_stack *stack, const char *layout, random_args *r) {
  int n = (int)strlen(layout) + 2;
  opd_ivalue *v = opd_stack_last(stack, n);
  memset(r, 0, sizeof *r);
  int rc = v[0].tag == OPD_IV_TENSOR ? 0 : OPD_EINVAL;
  int nd = 0, ni = 0;
  for (int k = 0; rc == 0 && layout[k]; k++) {
    const opd_ivalue *x = &v[1 + k];
    switch (layout[k]) {
    case 'd':
      if (x->tag != OPD_IV_DOUBLE && x->tag != OPD_IV_INT)
        rc = OPD_EINVAL;
      else
        *(nd++ ? &r->b : &r->a) = x->tag == OPD_IV_DOUBLE ? x->u.d : (double)x->u.i;
      break;
    case 'i':
      if (x->tag != OPD_IV_INT)
        rc = OPD_EINVAL;
      else if (ni++)
        r->to = x->u.i, r->has_to = true;
      else
        r->from = x->u.i;
      break;
    case 'j':
      if (x->tag == OPD_IV_INT)
        r->to = x->u.i, r->has_to = true;
      else if (x->tag != OPD_IV_NONE)
        rc = OPD_EINVAL;
      break;
    default:
      if (x->tag != OPD_IV_TENSOR)
        rc = OPD_EINVAL;
      else
        r->p = x->u.t;
    }
  }
  if (rc == 0 && v[n - 1].tag != OPD_IV_NONE)
    rc = opd_error(OPD_ENOTIMPL, "random operators take no generator argument here: each "
                                 "session has its own generator");
  else if (rc)
    rc = opd_error(OPD_EINVAL, "random operator: unexpected argument types");
  if (rc == 0) r->self = v[0].u.t;
  if (rc == 0) opd_tensor_retain(r->self); /* the stack's reference goes with the arguments */
  opd_stack_drop(stack, n);
  return rc;
}

/* Pushes self (the stack's arguments are gone) or fails with rc; releases self. */
static int finish(opd_stack *stack, int rc, opd_tensor *self) {
  if (rc) {
    if (self) opd_tensor_release(self);
    return rc;
  }
  return opd_stack_push(stack, opd_iv_tensor_steal(self));
}

/* ---- the operators: check, then (CPU) draw ---- */

static int uniform_check(const random_args *r) {
  int rc = floating_only(r->self, "check_uniform_bounds");
  if (rc == 0 && r->a > r->b)
    rc = opd_error(OPD_EINVAL,
                   "uniform_ expects to return a [from, to) range, but found from=%g > to=%g", r->a,
                   r->b);
  return rc;
}
static int normal_check(const random_args *r) {
  int rc = floating_only(r->self, "normal_kernel_cpu");
  if (rc == 0 && !(r->b >= 0))
    rc = opd_error(OPD_EINVAL, "normal expects std >= 0.0, but found std %g", r->b);
  return rc;
}
static int exponential_check(const random_args *r) {
  int rc = floating_only(r->self, "exponential_cpu");
  if (rc == 0 && !(r->a >= 0))
    rc = opd_error(OPD_EINVAL, "exponential_ expects lambda >= 0.0, but found lambda=%g", r->a);
  return rc;
}
static int bernoulli_check(const random_args *r) {
  if (!(r->a >= 0 && r->a <= 1))
    return opd_error(OPD_EINVAL, "bernoulli_ expects p to be in [0, 1], but got p=%g", r->a);
  return 0;
}
/* random_'s bounds into [from, from + range) (range 0: 2^64) */
static int random_bounds(const random_args *r, bool from_given, int64_t *from, uint64_t *range) {
  opd_dtype t = opd_tensor_dtype(r->self);
  uint64_t max = full_range_max(t);
  *from = from_given ? r->from : 0;
  if (r->has_to) {
    if (*from >= r->to)
      return opd_error(OPD_EINVAL,
                       "random_ expects 'from' to be less than 'to', but got from=%lld >= to=%lld",
                       (long long)*from, (long long)r->to);
    *range = (uint64_t)r->to - (uint64_t)*from;
  } else {
    if (*from > 0 && (uint64_t)*from > max)
      return opd_error(OPD_EINVAL, "random_ expects 'from' to be less than 'to'");
    *range = max - (uint64_t)*from + 1; /* wraps to 0 for 2^64 */
  }
  return 0;
}

/* The four forms of the in-place random operators, for CPU (draw) and Meta (checks). */
#define RANDOM_KERNELS(name, layout, ...)                                               \
  static int name##_impl(random_args *r, bool cpu);                                     \
  int opd__cpu_##name(const opd_kernel_ctx *ctx, opd_stack *stack) {                    \
    (void)ctx;                                                                          \
    random_args r;                                                                      \
    int rc = read_args(stack, layout, &r);                                              \
    return finish(stack, rc ? rc : name##_impl(&r, true), r.self);                      \
  }                                                                                     \
  int opd__meta_##name(const opd_kernel_ctx *ctx, opd_stack *stack) {                   \
    (void)ctx;                                                                          \
    random_args r;                                                                      \
    int rc = read_args(stack, layout, &r);                                              \
    if (rc == 0 && (rc = name##_impl(&r, false)) == 0) opd_tensor_bump_version(r.self); \
    return finish(stack, rc, r.self);                                                   \
  }                                                                                     \
  static int name##_impl(random_args *r, bool cpu) __VA_ARGS__

RANDOM_KERNELS(uniform_, "dd", {
  int rc = uniform_check(r);
  if (rc || !cpu) return rc;
  return draw_into(r->self, &(draw){.kind = DRAW_UNIFORM, .a = r->a, .b = r->b});
})

RANDOM_KERNELS(normal_, "dd", {
  int rc = normal_check(r);
  if (rc || !cpu) return rc;
  return draw_into(r->self, &(draw){.kind = DRAW_NORMAL, .a = r->a, .b = r->b});
})

RANDOM_KERNELS(exponential_, "d", {
  int rc = exponential_check(r);
  if (rc || !cpu) return rc;
  return draw_into(r->self, &(draw){.kind = DRAW_EXPONENTIAL, .a = r->a});
})

RANDOM_KERNELS(bernoulli__float, "d", {
  int rc = bernoulli_check(r);
  if (rc || !cpu) return rc;
  return draw_into(r->self, &(draw){.kind = DRAW_BERNOULLI, .a = r->a});
})

RANDOM_KERNELS(random_, "", {
  int64_t from = 0;
  uint64_t range = 0;
  int rc = random_bounds(r, false, &from, &range);
  if (rc || !cpu) return rc;
  return draw_into(r->self, &(draw){.kind = DRAW_INTEGER, .from = from, .range = range});
})

RANDOM_KERNELS(random__from, "ij", {
  int64_t from = 0;
  uint64_t range = 0;
  int rc = random_bounds(r, true, &from, &range);
  if (rc || !cpu) return rc;
  return draw_into(r->self, &(draw){.kind = DRAW_INTEGER, .from = from, .range = range});
})

RANDOM_KERNELS(random__to, "i", {
  int64_t from = 0;
  uint64_t range = 0;
  r->to = r->from, r->has_to = true; /* the one int read is `to` */
  int rc = random_bounds(r, false, &from, &range);
  if (rc || !cpu) return rc;
  return draw_into(r->self, &(draw){.kind = DRAW_INTEGER, .from = from, .range = range});
})

/* bernoulli_.Tensor: p broadcast to self, read as float64 values in [0, 1] */
RANDOM_KERNELS(bernoulli__tensor, "t", {
  static const opd_operator *expand_op, *copy_op;
  int rc = opd__check_inplace_shape(r->self, r->p);
  if (rc || !cpu) return rc;
  opd_tensor *e = NULL, *p = NULL;
  opd_stack s;
  opd_stack_init(&s);
  rc = OPD__PUSH_Tensor(&s, r->p);
  if (rc == 0)
    rc = OPD__PUSH_IntList(&s, ((opd_int_list){opd_tensor_sizes(r->self), r->self->ndim}));
  if (rc == 0) rc = OPD__PUSH_Bool(&s, false);
  if ((rc = opd__call_tensor(rc, &expand_op, "aten::expand", &s, &e))) return rc;
  opd_stack_init(&s);
  rc = OPD__PUSH_Tensor(&s, e);
  if (rc == 0) rc = OPD__PUSH_OptDType(&s, OPD_FLOAT64);
  if (rc == 0) rc = OPD__PUSH_OptLayout(&s, -1);
  if (rc == 0) rc = OPD__PUSH_OptDevice(&s, ((opd_device){OPD_DEVICE_CPU, -1}));
  if (rc == 0) rc = OPD__PUSH_OptBool(&s, ((opd_opt_bool){false, false}));
  if (rc == 0) rc = OPD__PUSH_Bool(&s, false);
  if (rc == 0) rc = OPD__PUSH_OptMemoryFormat(&s, 0);
  rc = opd__call_tensor(rc, &copy_op, "aten::_to_copy", &s, &p);
  opd_tensor_release(e);
  if (rc) return rc;
  const double *pv = opd_tensor_data(p);
  for (int64_t i = 0; i < p->numel && rc == 0; i++)
    if (!(pv[i] >= 0 && pv[i] <= 1))
      rc = opd_error(OPD_EINVAL, "Expected p_in >= 0 && p_in <= 1 to be true, but got false.");
  if (rc == 0) rc = draw_into(r->self, &(draw){.kind = DRAW_BERNOULLI, .p = pv});
  opd_tensor_release(p);
  return rc;
})

/* ---- factories (CompositeExplicitAutograd): empty, then a random operator ---- */

/* name(t, args..., generator None) in place */
static int call_random(const opd_operator **cache, const char *name, opd_tensor *t,
                       const opd_ivalue *args, int n) {
  opd_stack s;
  opd_stack_init(&s);
  int rc = OPD__PUSH_Tensor(&s, t);
  for (int i = 0; i < n && rc == 0; i++) rc = opd_stack_push(&s, args[i]);
  if (rc == 0) rc = opd_stack_push(&s, opd_iv_none());
  return opd__call_inplace(rc, cache, name, &s);
}

/* *out (just made, or rc its failure) filled by name(args); released on failure */
static int then_random(int rc, const opd_operator **cache, const char *name, const opd_ivalue *args,
                       int n, opd_tensor **out) {
  if (rc == 0 && (rc = call_random(cache, name, *out, args, n))) {
    opd_tensor_release(*out);
    *out = NULL;
  }
  return rc;
}

static int empty(opd_int_list size, opd_dtype dtype, int64_t layout, opd_device device,
                 opd_opt_bool pin_memory, opd_tensor **out) {
  return opd__call_empty(size, dtype, layout, device, pin_memory, -1, out);
}

static const opd_ivalue unit_range[2] = {{.tag = OPD_IV_DOUBLE, .u.d = 0},
                                         {.tag = OPD_IV_DOUBLE, .u.d = 1}};

int opd__cea_rand(const opd_kernel_ctx *ctx, opd_int_list size, opd_dtype dtype, int64_t layout,
                  opd_device device, opd_opt_bool pin_memory, opd_tensor **out) {
  (void)ctx;
  static const opd_operator *op;
  return then_random(empty(size, dtype, layout, device, pin_memory, out), &op, "aten::uniform_",
                     unit_range, 2, out);
}

int opd__cea_randn(const opd_kernel_ctx *ctx, opd_int_list size, opd_dtype dtype, int64_t layout,
                   opd_device device, opd_opt_bool pin_memory, opd_tensor **out) {
  (void)ctx;
  static const opd_operator *op;
  return then_random(empty(size, dtype, layout, device, pin_memory, out), &op, "aten::normal_",
                     unit_range, 2, out);
}

/* empty_like through the dispatcher */
static int empty_like(opd_tensor *self, opd_dtype dtype, int64_t layout, opd_device device,
                      opd_opt_bool pin_memory, int64_t memory_format, opd_tensor **out) {
  static const opd_operator *op;
  opd_stack s;
  opd_stack_init(&s);
  int rc = OPD__PUSH_Tensor(&s, self);
  if (rc == 0) rc = OPD__PUSH_OptDType(&s, dtype);
  if (rc == 0) rc = OPD__PUSH_OptLayout(&s, layout);
  if (rc == 0) rc = OPD__PUSH_OptDevice(&s, device);
  if (rc == 0) rc = OPD__PUSH_OptBool(&s, pin_memory);
  if (rc == 0) rc = OPD__PUSH_OptMemoryFormat(&s, memory_format);
  return opd__call_tensor(rc, &op, "aten::empty_like", &s, out);
}

int opd__cea_rand_like(const opd_kernel_ctx *ctx, opd_tensor *self, opd_dtype dtype, int64_t layout,
                       opd_device device, opd_opt_bool pin_memory, int64_t memory_format,
                       opd_tensor **out) {
  (void)ctx;
  static const opd_operator *op;
  return then_random(empty_like(self, dtype, layout, device, pin_memory, memory_format, out), &op,
                     "aten::uniform_", unit_range, 2, out);
}

int opd__cea_randn_like(const opd_kernel_ctx *ctx, opd_tensor *self, opd_dtype dtype,
                        int64_t layout, opd_device device, opd_opt_bool pin_memory,
                        int64_t memory_format, opd_tensor **out) {
  (void)ctx;
  static const opd_operator *op;
  return then_random(empty_like(self, dtype, layout, device, pin_memory, memory_format, out), &op,
                     "aten::normal_", unit_range, 2, out);
}

/* randint: int64 unless given, values in [low, high) */
int opd__cea_randint_low(const opd_kernel_ctx *ctx, int64_t low, int64_t high, opd_int_list size,
                         opd_dtype dtype, int64_t layout, opd_device device,
                         opd_opt_bool pin_memory, opd_tensor **out) {
  (void)ctx;
  static const opd_operator *op;
  if (dtype == OPD_DTYPE_UNDEFINED) dtype = OPD_INT64;
  opd_ivalue bounds[2] = {opd_iv_int(low), opd_iv_int(high)};
  return then_random(empty(size, dtype, layout, device, pin_memory, out), &op, "aten::random_.from",
                     bounds, 2, out);
}

int opd__cea_randint(const opd_kernel_ctx *ctx, int64_t high, opd_int_list size, opd_dtype dtype,
                     int64_t layout, opd_device device, opd_opt_bool pin_memory, opd_tensor **out) {
  return opd__cea_randint_low(ctx, 0, high, size, dtype, layout, device, pin_memory, out);
}

/* bernoulli(self): a new tensor like self drawn with the probabilities self holds */
int opd__cea_bernoulli(const opd_kernel_ctx *ctx, opd_stack *stack) {
  (void)ctx;
  static const opd_operator *op;
  random_args r;
  int rc = read_args(stack, "", &r);
  if (rc) return rc;
  opd_tensor *out = NULL;
  opd_ivalue p[1] = {opd_iv_tensor_borrow(r.self)};
  rc = then_random(empty_like(r.self, OPD_DTYPE_UNDEFINED, -1, (opd_device){-1, -1},
                              (opd_opt_bool){false, false}, 0, &out),
                   &op, "aten::bernoulli_.Tensor", p, 1, &out);
  opd_tensor_release(r.self);
  return rc ? rc : opd_stack_push(stack, opd_iv_tensor_steal(out));
}

/* randperm: a permutation of 0..n-1 (Fisher-Yates on the CPU, one Philox block per swap),
 * copied to the device asked for */
int opd__cea_randperm(const opd_kernel_ctx *ctx, int64_t n, opd_dtype dtype, int64_t layout,
                      opd_device device, opd_opt_bool pin_memory, opd_tensor **out) {
  (void)ctx;
  if (n < 0) return opd_error(OPD_EINVAL, "n must be non-negative, got%lld", (long long)n);
  if (dtype == OPD_DTYPE_UNDEFINED) dtype = OPD_INT64;
  if (dtype == OPD_BOOL) return opd_error(OPD_EINVAL, "\"randperm\" not implemented for 'Bool'");
  opd_tensor *perm = NULL;
  int rc = empty((opd_int_list){&n, 1}, OPD_INT64, layout, (opd_device){OPD_DEVICE_CPU, -1},
                 pin_memory, &perm);
  if (rc) return rc;
  int64_t *v = opd_tensor_data(perm);
  opd_generator *g = opd_generator_current();
  uint64_t base = opd_generator_take(g, (uint64_t)n);
  for (int64_t i = 0; i < n; i++) v[i] = i;
  for (int64_t i = n - 1; i > 0; i--) {
    uint32_t w[4];
    opd__philox(g->seed, base + (uint64_t)i, w);
    int64_t j = (int64_t)(((((uint64_t)w[0] << 32) | w[1])) % (uint64_t)(i + 1));
    int64_t t = v[i];
    v[i] = v[j];
    v[j] = t;
  }
  if (dtype == OPD_INT64 && (device.type < 0 || device.type == OPD_DEVICE_CPU)) {
    *out = perm;
    return 0;
  }
  rc = empty((opd_int_list){&n, 1}, dtype, layout, device, pin_memory, out);
  if (rc == 0 && (rc = opd__call_copy_(*out, perm, false))) opd_tensor_release(*out);
  opd_tensor_release(perm);
  return rc;
}

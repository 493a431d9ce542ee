/* test_cuda.c: tests of the CUDA backend (kernels/cuda): without a device (every CI machine)
 * opd_cuda_init reports why, creating a CUDA tensor fails with OPD_EUNAVAILABLE naming the
 * reason, the CUDA kernels are registered, the caching allocator's stream rules hold (on
 * fake device memory), the sticky errors are the ones that poison a context, and NVRTC
 * kernels' dtype declarations and call checks judge as they should; with a device, add,
 * softmax, mm (and a few more) on CUDA agree with the CPU kernels, copies round-trip, the
 * caching allocator reuses blocks and honours its limit, NVRTC kernels run with their
 * declared dtypes and refuse others, products take operands with leading dimensions past
 * 2^31 - 1, reductions of few outputs over many elements (split across blocks) agree with
 * the CPU, each stream gets a cuBLAS workspace of its own, freed with the stream, and the
 * view operators of traced graphs (_reshape_alias, _unsafe_view, unbind.int) return views of
 * their CUDA input. Tests that need a device print "SKIP: <reason>". */
#include <check.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "opd/allocator.h"
#include "opd/cuda.h"
#include "opd/cuda_nvrtc.h"
#include "opd/dispatcher.h"
#include "opd/error.h"
#include "opd/introspect.h"
#include "opd/kernels.h"
#include "opd/tensor.h"
#include "cuda/src/cuda_kernels.h"
#include "src/kernel_list.h"
#include "tensor_helpers.h"

Suite *opd_test_cuda_suite(void);

static const opd_device cpu = {OPD_DEVICE_CPU, -1};
static const opd_device cuda0 = {OPD_DEVICE_CUDA, 0};

/* The device count after opd_cuda_init (which must succeed). */
static int init(void) {
  ck_assert_int_eq(opd_kernels_register(), 0);
  int n = opd_cuda_init();
  ck_assert_int_ge(n, 0);
  return n;
}

/* True (after printing SKIP) when there is no device. */
static bool skip_without_device(const char *test) {
  if (init() > 0) return false;
  printf("SKIP: %s: %s\n", test, opd_cuda_unavailable_reason());
  return true;
}

/* Calls `name` boxed with every argument of its schema (tensors borrowed). */
static int call(const char *name, opd_ivalue *args, int n, opd_tensor **out) {
  const opd_operator *op = opd_find_schema(name);
  ck_assert_ptr_nonnull(op);
  opd_stack st;
  opd_stack_init(&st);
  for (int i = 0; i < n; i++) ck_assert_int_eq(opd_stack_push(&st, args[i]), 0);
  int rc = opd_call_boxed(op, &st);
  if (rc == 0) {
    ck_assert_uint_ge(st.size, 1);
    ck_assert_uint_eq(st.items[0].tag, OPD_IV_TENSOR);
    opd_tensor_retain(*out = st.items[0].u.t);
  }
  opd_stack_destroy(&st);
  return rc;
}

/* aten::_to_copy(t, device=device) */
static int to_device(opd_tensor *t, opd_device device, opd_tensor **out) {
  return call("aten::_to_copy",
              (opd_ivalue[]){T(t), opd_iv_none(), opd_iv_none(), opd_iv_device(device),
                             opd_iv_none(), opd_iv_bool(false), opd_iv_none()},
              7, out);
}

/* A CPU float tensor of these sizes holding a deterministic pseudo-random pattern. */
static opd_tensor *cpu_data(const int64_t *sizes, int ndim, opd_dtype dtype, unsigned seed) {
  opd_tensor *t;
  ck_assert_int_eq(opd_tensor_empty(sizes, ndim, dtype, cpu, &t), 0);
  char *p = opd_tensor_data(t);
  for (int64_t i = 0; i < t->numel; i++) {
    seed = seed * 1103515245u + 12345u;
    double v = (double)((seed >> 8) % 2001) / 500.0 - 2.0; /* [-2, 2] */
    switch (dtype) {
    case OPD_FLOAT64: ((double *)p)[i] = v; break;
    case OPD_FLOAT16: ((uint16_t *)p)[i] = opd_float_to_half((float)v); break;
    case OPD_INT64: ((int64_t *)p)[i] = (int64_t)(v * 10); break;
    default: ((float *)p)[i] = (float)v; break;
    }
  }
  return t;
}

/* The CUDA result `dev` equals the CPU result `ref` (shape, dtype, values within tol);
 * returns the number of elements compared. */
static int64_t assert_matches(opd_tensor *dev, opd_tensor *ref, double tol) {
  ck_assert_int_eq(opd_tensor_device(dev).type, OPD_DEVICE_CUDA);
  opd_tensor *back = NULL;
  ck_assert_int_eq(to_device(dev, cpu, &back), 0);
  ck_assert_int_eq(back->dtype, ref->dtype);
  ck_assert_int_eq(back->ndim, ref->ndim);
  for (int d = 0; d < ref->ndim; d++)
    ck_assert_int_eq(opd_tensor_sizes(back)[d], opd_tensor_sizes(ref)[d]);
  for (int64_t i = 0; i < ref->numel; i++) {
    double a = at(back, i), b = at(ref, i);
    if (!(fabs(a - b) <= tol * (1 + fabs(b))))
      ck_abort_msg("element %lld: cuda %.9g, cpu %.9g", (long long)i, a, b);
  }
  opd_tensor_release(back);
  return ref->numel;
}

/* ---- everywhere ---- */

START_TEST(test_init_reports_devices) {
  int n = init();
  ck_assert_int_eq(opd_cuda_init(), n); /* idempotent */
  ck_assert_int_eq(opd_cuda_device_count(), n);
  if (n == 0) {
    const char *why = opd_cuda_unavailable_reason();
    ck_assert_ptr_nonnull(why);
    ck_assert_int_gt((int)strlen(why), 0);
    ck_assert_ptr_null(opd_cuda_device_name(0));
    ck_assert_int_eq(opd_cuda_device_capability(0), -1);
    const char *sticky = "x";
    ck_assert(!opd_cuda_device_healthy(0, &sticky));
    ck_assert_ptr_null(sticky);
    ck_assert_int_eq(opd_cuda_stream_synchronize(0, NULL), OPD_EUNAVAILABLE);
    ck_assert_int_eq(opd_cuda_set_memory_limit(0, 1 << 20), OPD_EUNAVAILABLE);
    ck_assert_ptr_null(opd_cuda_host_alloc(64));
    ck_assert_int_eq(opd_last_error_code(), OPD_EUNAVAILABLE);
  } else {
    ck_assert_ptr_null(opd_cuda_unavailable_reason());
    ck_assert_ptr_nonnull(opd_cuda_device_name(0));
    ck_assert_int_ge(opd_cuda_device_capability(0), 50);
    ck_assert(opd_cuda_device_healthy(0, NULL));
    ck_assert(!opd_cuda_device_healthy(n, NULL));
  }
}
END_TEST

START_TEST(test_cuda_tensor_without_device) {
  if (init() > 0) {
    printf("SKIP: test_cuda_tensor_without_device: a CUDA device is present\n");
    return;
  }
  const char *why = opd_cuda_unavailable_reason();
  int64_t sizes[2] = {2, 3};
  opd_tensor *t = NULL;
  ck_assert_int_eq(opd_tensor_empty(sizes, 2, OPD_FLOAT32, cuda0, &t), OPD_EUNAVAILABLE);
  ck_assert_ptr_null(t);
  ck_assert_ptr_nonnull(strstr(opd_last_error(), why));
  /* through the dispatcher (every build: "built without CUDA" too): a CPU tensor moved to
   * CUDA, and a CUDA tensor made by empty */
  opd_tensor *x = cpu_data(sizes, 2, OPD_FLOAT32, 1), *y = NULL;
  ck_assert_int_eq(to_device(x, cuda0, &y), OPD_EUNAVAILABLE);
  ck_assert_ptr_nonnull(strstr(opd_last_error(), why));
  ck_assert_ptr_null(y);
  opd_ivalue size_iv;
  ck_assert_int_eq(opd_iv_make_int_list(&size_iv, sizes, 2), 0);
  ck_assert_int_eq(call("aten::empty.memory_format",
                        (opd_ivalue[]){size_iv, opd_iv_none(), opd_iv_none(), opd_iv_device(cuda0),
                                       opd_iv_none(), opd_iv_none()},
                        6, &y),
                   OPD_EUNAVAILABLE);
  ck_assert_ptr_nonnull(strstr(opd_last_error(), why));
  ck_assert_ptr_null(y);
  opd_tensor_release(x);
  opd_memory_stats st;
  opd_memory_stats_get_device(cuda0, &st);
  ck_assert_uint_eq(st.in_use, 0);
}
END_TEST

/* The operators of the families whose CUDA kernels are not all written yet (kernel_list.h's
 * family sections): a call of one of them on a CUDA tensor without its kernel is refused
 * with the dispatcher's "Could not run ... from the 'CUDA' backend" error. Every other aten
 * operator with a CPU kernel must have a CUDA one, and so must every operator of the CUDA
 * lists (cuda_kernels.h), family or not. */
/* clang-format off */
static const char *const families_partly_on_cuda[] = {
#define X(op, key, ...) op,
    OPD_CONV_UNBOXED_KERNELS(X) OPD_CONV_BOXED_KERNELS(X)
    OPD_NORM_UNBOXED_KERNELS(X) OPD_NORM_BOXED_KERNELS(X)
    OPD_POINTWISE_UNBOXED_KERNELS(X) OPD_POINTWISE_BOXED_KERNELS(X)
    OPD_INDEX_UNBOXED_KERNELS(X) OPD_INDEX_BOXED_KERNELS(X)
    OPD_REDUCE_UNBOXED_KERNELS(X) OPD_REDUCE_BOXED_KERNELS(X)
#undef X
};
/* clang-format on */

/* The operators of the CUDA lists: each must be registered at the CUDA key by its kernel. */
static const char *const ops_with_cuda_kernels[] = {
#define X(op, ...) op,
    OPD_CUDA_UNBOXED_KERNELS(X) OPD_CUDA_BOXED_KERNELS(X)
#undef X
};

static bool in_family_partly_on_cuda(const char *name) {
  for (size_t i = 0; i < sizeof families_partly_on_cuda / sizeof *families_partly_on_cuda; i++)
    if (strcmp(families_partly_on_cuda[i], name) == 0) return true;
  return false;
}

static void check_cuda_slot(const opd_operator *op, void *arg) {
  int *checked = arg;
  json_t *cpu_slot = opd_op_slot_json(op, OPD_KEY_CPU);
  const char *src = json_string_value(json_object_get(cpu_slot, "source"));
  if (src && strcmp(src, "CPU") == 0 && strncmp(opd_op_name(op), "aten::", 6) == 0) {
    json_t *slot = opd_op_slot_json(op, OPD_KEY_CUDA);
    const char *cuda_src = json_string_value(json_object_get(slot, "source"));
    bool on_cuda = cuda_src && strcmp(cuda_src, "CUDA") == 0;
    if (!on_cuda && in_family_partly_on_cuda(opd_op_name(op))) {
      json_decref(slot);
      json_decref(cpu_slot);
      return;
    }
    ck_assert_msg(on_cuda, "%s has no CUDA kernel", opd_op_name(op));
    ck_assert_int_ne(opd_op_slot_registration(op, OPD_KEY_CUDA), 0);
    json_decref(slot);
    (*checked)++;
  }
  json_decref(cpu_slot);
}

START_TEST(test_cuda_kernels_registered) {
  init();
  const opd_operator *add = opd_find_schema("aten::add.Tensor");
  ck_assert_ptr_nonnull(add);
#ifdef OPD_HAVE_CUDA
  ck_assert_int_ne(opd_op_slot_registration(add, OPD_KEY_CUDA), 0);
  int checked = 0; /* every aten operator with a CPU kernel has a CUDA one */
  opd_for_each_op(check_cuda_slot, &checked);
  ck_assert_int_ge(checked, 40);
  /* every operator of the CUDA lists has its CUDA kernel (those of the families too) */
  size_t n = sizeof ops_with_cuda_kernels / sizeof *ops_with_cuda_kernels;
  ck_assert_uint_ge(n, 240);
  for (size_t i = 0; i < n; i++) {
    const opd_operator *op = opd_find_schema(ops_with_cuda_kernels[i]);
    ck_assert_msg(op != NULL, "%s: no schema", ops_with_cuda_kernels[i]);
    json_t *slot = opd_op_slot_json(op, OPD_KEY_CUDA);
    const char *src = json_string_value(json_object_get(slot, "source"));
    ck_assert_msg(src && strcmp(src, "CUDA") == 0, "%s has no CUDA kernel",
                  ops_with_cuda_kernels[i]);
    ck_assert_int_ne(opd_op_slot_registration(op, OPD_KEY_CUDA), 0);
    json_decref(slot);
  }
#else
  (void)check_cuda_slot;
  (void)ops_with_cuda_kernels;
  printf("SKIP: test_cuda_kernels_registered: %s\n", opd_cuda_unavailable_reason());
  ck_assert_int_eq(opd_op_slot_registration(add, OPD_KEY_CUDA), 0);
#endif
}
END_TEST

/* ---- NVRTC kernels' dtypes, without a device ---- */

static opd_schema *parse_schema(const char *text) {
  opd_schema *s = NULL;
  ck_assert_msg(opd_schema_parse(text, &s) == 0, "%s: %s", text, opd_last_error());
  return s;
}

static const char twice_src[] =
    "extern \"C\" __global__ void twice(float *out, const float *x, long long n) {\n"
    "  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;\n"
    "  if (i < n) out[i] = 2 * x[i];\n"
    "}\n";

/* [Note: NVRTC kernels]: the declaration of a kernel's dtypes, in every build */
START_TEST(test_nvrtc_dtypes_declared) {
  opd_schema *one = parse_schema("gputest::twice(Tensor x) -> Tensor"),
             *two = parse_schema("gputest::mix(Tensor x, Tensor y, float a, int k) -> Tensor");
  opd_nvrtc_dtypes d;
  const size_t len = sizeof twice_src - 1;
  /* nothing declared: float32 everywhere */
  ck_assert_int_eq(opd_nvrtc_check(twice_src, len, "twice", one, NULL, &d), 0);
  ck_assert_uint_eq(d.ntensors, 1);
  ck_assert_int_eq(d.args[0], OPD_FLOAT32);
  ck_assert_int_eq(d.result, OPD_FLOAT32);
  ck_assert_int_eq(opd_nvrtc_check(twice_src, len, "twice", two, "", &d), 0);
  ck_assert_uint_eq(d.ntensors, 2);
  ck_assert(d.args[0] == OPD_FLOAT32 && d.args[1] == OPD_FLOAT32 && d.result == OPD_FLOAT32);
  /* one name for all; c10's names too */
  ck_assert_int_eq(opd_nvrtc_check(twice_src, len, "twice", two, " Half ", &d), 0);
  ck_assert(d.args[0] == OPD_FLOAT16 && d.args[1] == OPD_FLOAT16 && d.result == OPD_FLOAT16);
  /* one per Tensor argument, then the result */
  ck_assert_int_eq(opd_nvrtc_check(twice_src, len, "twice", two, "int8,bfloat16 -> bool", &d), 0);
  ck_assert(d.args[0] == OPD_INT8 && d.args[1] == OPD_BFLOAT16 && d.result == OPD_BOOL);
  ck_assert_int_eq(opd_nvrtc_check(twice_src, len, "twice", one, "float64->int64", &d), 0);
  ck_assert(d.args[0] == OPD_FLOAT64 && d.result == OPD_INT64);
  static const struct {
    const char *dtypes, *says;
  } bad[] = {
      {"float33", "unknown dtype 'float33'"},
      {"float16, float16", "without '->'"},
      {"float16 -> float32", "not one per Tensor argument"},
      {"float16, float16, float16 -> float32", "too many"},
      {"float16, float16 ->", "a dtype name expected at byte 19"},
      {"float16, float16 -> float32, int8", "unexpected ','"},
      {"float16, float16 -> float32 -> int8", "unexpected '-'"},
      {"-> float32", "a dtype name expected at byte 0"},
      {"float16;", "unexpected ';' at byte 7"},
      {"float16float16float16", "a dtype name expected at byte 0"},
      {"float16 \x01", "unexpected byte 0x01 at byte 8"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    int rc = opd_nvrtc_check(twice_src, len, "twice", two, bad[i].dtypes, &d);
    ck_assert_msg(rc == OPD_EINVAL && strstr(opd_last_error(), bad[i].says), "'%s': %d %s",
                  bad[i].dtypes, rc, opd_last_error());
  }
  /* the most Tensor arguments a schema has, and more dtypes than they take */
  char text[2048] = "gputest::wide(", *p = text + strlen(text);
  for (int i = 0; i < OPD_SCHEMA_MAX_ARGS; i++)
    p += snprintf(p, sizeof text - (size_t)(p - text), "%sTensor a%d", i ? ", " : "", i);
  snprintf(p, sizeof text - (size_t)(p - text), ") -> Tensor");
  opd_schema *wide = parse_schema(text);
  char many[1024] = "";
  for (int i = 0; i < OPD_SCHEMA_MAX_ARGS + 2; i++) strcat(many, i ? ",int8" : "int8");
  ck_assert_int_eq(opd_nvrtc_check(twice_src, len, "twice", wide, many, &d), OPD_EINVAL);
  ck_assert_ptr_nonnull(strstr(opd_last_error(), "too many dtypes"));
  opd_schema_free(wide);
  char *big = malloc(OPD_NVRTC_MAX_DTYPES + 2);
  memset(big, ' ', OPD_NVRTC_MAX_DTYPES + 1);
  memcpy(big, "float32", 7);
  big[OPD_NVRTC_MAX_DTYPES + 1] = '\0';
  ck_assert_int_eq(opd_nvrtc_check(twice_src, len, "twice", one, big, &d), OPD_EINVAL);
  ck_assert_ptr_nonnull(strstr(opd_last_error(), "at most"));
  free(big);
  /* the declaration is judged before the device's absence */
  opd_nvrtc_kernel *k = NULL;
  char *log = NULL;
  ck_assert_int_eq(opd_nvrtc_kernel_create(twice_src, len, "twice", one, OPD_NVRTC_ELEMENTWISE,
                                           "float7", &k, &log),
                   OPD_EINVAL);
  ck_assert_ptr_nonnull(strstr(opd_last_error(), "float7"));
  ck_assert(!k && !log);
  opd_schema_free(one);
  opd_schema_free(two);
}
END_TEST

/* A call's tensors against the declared dtypes (CPU tensors: the dtype is judged first). */
START_TEST(test_nvrtc_call_checks_dtypes) {
  opd_schema *two = parse_schema("gputest::mix(Tensor x, Tensor y, float a) -> Tensor");
  opd_nvrtc_dtypes d;
  ck_assert_int_eq(
      opd_nvrtc_check(twice_src, sizeof twice_src - 1, "twice", two, "float32, int8 -> bool", &d),
      0);
  int64_t sizes[1] = {8};
  opd_tensor *f32 = cpu_data(sizes, 1, OPD_FLOAT32, 1), *f16 = cpu_data(sizes, 1, OPD_FLOAT16, 2);
  opd_ivalue args[3] = {T(f16), T(f32), opd_iv_double(1)};
  ck_assert_int_eq(opd_nvrtc_check_call(&d, args, "gputest::mix"), OPD_EINVAL);
  ck_assert_msg(strstr(opd_last_error(), "gputest::mix: argument 0 is a float16 tensor, but the "
                                         "NVRTC kernel was registered to take float32 there"),
                "%s", opd_last_error());
  args[0] = T(f32); /* argument 1 should be int8 */
  ck_assert_int_eq(opd_nvrtc_check_call(&d, args, "gputest::mix"), OPD_EINVAL);
  ck_assert_msg(strstr(opd_last_error(), "argument 1 is a float32 tensor, but the NVRTC kernel "
                                         "was registered to take int8 there"),
                "%s", opd_last_error());
  d.args[1] = OPD_FLOAT32; /* right dtypes: then the device is judged */
  ck_assert_int_eq(opd_nvrtc_check_call(&d, args, "gputest::mix"), OPD_EINVAL);
  ck_assert_msg(strstr(opd_last_error(), "runs on CUDA tensors (argument 0 is not)"), "%s",
                opd_last_error());
  opd_tensor_release(f32);
  opd_tensor_release(f16);
  opd_schema_free(two);
}
END_TEST

#ifdef OPD_HAVE_CUDA
/* ---- the caching allocator's logic, on fake device memory (no device needed) ---- */

#include "../kernels/cuda/src/cuda_internal.h"

enum { FAKE_DEVICE = OPD_CUDA_MAX_DEVICES - 1 }; /* a pool no real device uses here */
static int fake_mallocs, fake_frees;
static const void *fake_stream;
static char stream_a, stream_b; /* their addresses stand for two streams */

static int fake_use_device(int device) {
  ck_assert_int_eq(device, FAKE_DEVICE);
  return 0;
}
static int fake_malloc(int device, size_t nbytes, void **out) {
  (void)device;
  *out = malloc(nbytes);
  ck_assert_ptr_nonnull(*out);
  fake_mallocs++;
  return 0;
}
static void fake_free(int device, void *p) {
  (void)device;
  free(p);
  fake_frees++;
}
static const void *fake_stream_key(int device) {
  (void)device;
  return fake_stream;
}
static int fake_clears;
static int fake_memset0(int device, void *p, size_t nbytes) {
  (void)device;
  memset(p, 0, nbytes);
  fake_clears++;
  return 0;
}

START_TEST(test_allocator_stream_destroyed) {
  static const opd__cuda_raw_ops fake = {.use_device = fake_use_device,
                                         .malloc = fake_malloc,
                                         .free = fake_free,
                                         .stream_key = fake_stream_key,
                                         .memset0 = fake_memset0};
  init();
  opd__cuda_allocator_set_raw_ops(&fake);
  fake_stream = &stream_a;
  void *p = opd__cuda_alloc(FAKE_DEVICE, 3000);
  ck_assert_ptr_nonnull(p);
  opd__cuda_free(FAKE_DEVICE, p, 3000);
  ck_assert_ptr_eq(opd__cuda_alloc(FAKE_DEVICE, 2900), p); /* same class, same stream: reused */
  opd__cuda_free(FAKE_DEVICE, p, 2900);
  fake_stream = &stream_b; /* another stream does not take stream a's block */
  void *q = opd__cuda_alloc(FAKE_DEVICE, 3000);
  ck_assert_ptr_nonnull(q);
  ck_assert_ptr_ne(q, p);
  ck_assert_int_eq(fake_mallocs, 2);
  opd__cuda_free(FAKE_DEVICE, q, 3000);
  /* stream a is destroyed (after synchronizing): stream b may use its block, and owns it */
  opd__cuda_allocator_stream_destroyed(FAKE_DEVICE, &stream_a);
  void *r1 = opd__cuda_alloc(FAKE_DEVICE, 3000), *r2 = opd__cuda_alloc(FAKE_DEVICE, 3000);
  ck_assert((r1 == p && r2 == q) || (r1 == q && r2 == p));
  ck_assert_int_eq(fake_mallocs, 2);
  /* a block live when its stream is destroyed serves any stream once freed */
  fake_stream = &stream_a; /* a new stream at the old address is a different one */
  void *s = opd__cuda_alloc(FAKE_DEVICE, 100);
  ck_assert_int_eq(fake_mallocs, 3);
  opd__cuda_allocator_stream_destroyed(FAKE_DEVICE, &stream_a);
  opd__cuda_free(FAKE_DEVICE, s, 100);
  fake_stream = &stream_b;
  ck_assert_ptr_eq(opd__cuda_alloc(FAKE_DEVICE, 100), s);
  ck_assert_int_eq(fake_mallocs, 3);
  opd__cuda_free(FAKE_DEVICE, s, 100);
  opd__cuda_free(FAKE_DEVICE, r1, 3000);
  opd__cuda_free(FAKE_DEVICE, r2, 3000);
  ck_assert_int_eq(fake_frees, 0); /* all cached */
  opd__cuda_allocator_empty(FAKE_DEVICE);
  ck_assert_int_eq(fake_frees, 3);
  opd__cuda_allocator_set_raw_ops(NULL);
}
END_TEST

/* [Note: Memory cleared between owners]: a block another owner wrote is zeroed before it is
 * handed out, one its own owner reuses is not, and a fresh one always is. */
START_TEST(test_allocator_clears_between_owners) {
  static const opd__cuda_raw_ops fake = {.use_device = fake_use_device,
                                         .malloc = fake_malloc,
                                         .free = fake_free,
                                         .stream_key = fake_stream_key,
                                         .memset0 = fake_memset0};
  init();
  opd__cuda_allocator_set_raw_ops(&fake);
  _Atomic uint64_t held_a = 0, held_b = 0;
  opd_mem_budget a = {.held = &held_a, .limit = UINT64_MAX, .owner_id = opd_mem_owner_new()};
  opd_mem_budget b = {.held = &held_b, .limit = UINT64_MAX, .owner_id = opd_mem_owner_new()};
  fake_stream = &stream_a;
  fake_clears = 0;
  opd_mem_budget_install(&a);
  unsigned char *p = opd__cuda_alloc(FAKE_DEVICE, 4096);
  ck_assert_ptr_nonnull(p);
  ck_assert_int_eq(fake_clears, 1); /* fresh from cudaMalloc */
  memset(p, 0x5a, 4096);            /* a's data */
  opd__cuda_free(FAKE_DEVICE, p, 4096);
  ck_assert_ptr_eq(opd__cuda_alloc(FAKE_DEVICE, 4096), p); /* a again: not cleared */
  ck_assert_int_eq(fake_clears, 1);
  ck_assert_int_eq(p[100], 0x5a);
  opd__cuda_free(FAKE_DEVICE, p, 4096);
  opd_mem_budget_uninstall();
  opd_mem_budget_install(&b); /* b, on the same stream (a worker's default stream) */
  ck_assert_ptr_eq(opd__cuda_alloc(FAKE_DEVICE, 4096), p);
  ck_assert_int_eq(fake_clears, 2);
  for (int i = 0; i < 4096; i++) ck_assert_int_eq(p[i], 0);
  opd__cuda_free(FAKE_DEVICE, p, 4096);
  opd_mem_budget_uninstall();
  opd__cuda_allocator_empty(FAKE_DEVICE);
  opd__cuda_allocator_set_raw_ops(NULL);
}
END_TEST

/* [Note: Sticky errors]: the errors after which a context is unusable mark the device
 * unhealthy (OPD_EUNAVAILABLE); others are ordinary errors. No device needed: the error's
 * handling is judged on a device index no real device uses. */
START_TEST(test_sticky_errors) {
  init();
  static const struct {
    int code;
    const char *name;
  } sticky[] = {
      {700, "cudaErrorIllegalAddress"},
      {719, "cudaErrorLaunchFailure"},
      {214, "cudaErrorECCUncorrectable"},
      {220, "cudaErrorNvlinkUncorrectable"},
      {226, "cudaErrorContained"},
      {721, "cudaErrorTensorMemoryLeak"},
      {810, "cudaErrorMpsClientTerminated"},
      {911, "cudaErrorExternalDevice"},
      {999, "cudaErrorUnknown"},
  };
  /* [Note: Error names of newer toolkits] The message names the error as the CUDA runtime
   * this build links names it: cudaErrorContained is CUDA 12.4's and
   * cudaErrorTensorMemoryLeak CUDA 12.8's, and an older runtime (the device machine builds
   * with its own toolkit, 12.0 or later) calls them "unrecognized error code". What matters
   * is that they count as sticky (runtime.cu lists them by number). */
  for (size_t i = 0; i < sizeof sticky / sizeof *sticky; i++) {
    int rc = opd__cuda_error(FAKE_DEVICE, sticky[i].code, "a test");
    const char *msg = opd_last_error();
    ck_assert_msg(rc == OPD_EUNAVAILABLE &&
                      (strstr(msg, sticky[i].name) || strstr(msg, "unrecognized error code")),
                  "%s: %d %s", sticky[i].name, rc, msg);
  }
  ck_assert_int_eq(opd__cuda_error(FAKE_DEVICE, 1 /* cudaErrorInvalidValue */, "a test"),
                   OPD_EINTERNAL);
  ck_assert_int_eq(opd__cuda_error(FAKE_DEVICE, 2 /* cudaErrorMemoryAllocation */, "a test"),
                   OPD_ERESOURCE);
  ck_assert_int_eq(opd__cuda_error(FAKE_DEVICE, 0, "a test"), 0);
}
END_TEST
#endif

/* ---- with a device ---- */

/* op(inputs on CPU) against op(the same inputs moved to CUDA); each call gets its own copy
 * of the extra arguments (the caller keeps them). */
static int64_t compare_op(const char *name, opd_tensor **inputs, int nin, opd_ivalue *extra,
                          int nextra, double tol) {
  opd_ivalue args[8], dargs[8];
  opd_tensor *dev[4] = {NULL}, *ref = NULL, *res = NULL;
  for (int i = 0; i < nin; i++) {
    ck_assert_int_eq(to_device(inputs[i], cuda0, &dev[i]), 0);
    args[i] = T(inputs[i]);
    dargs[i] = T(dev[i]);
  }
  for (int i = 0; i < nextra; i++) {
    ck_assert_int_eq(opd_iv_copy(&args[nin + i], &extra[i]), 0);
    ck_assert_int_eq(opd_iv_copy(&dargs[nin + i], &extra[i]), 0);
  }
  ck_assert_int_eq(call(name, args, nin + nextra, &ref), 0);
  int rc = call(name, dargs, nin + nextra, &res);
  ck_assert_msg(rc == 0, "%s on CUDA: %s", name, opd_last_error());
  int64_t compared = assert_matches(res, ref, tol);
  opd_tensor_release(ref);
  opd_tensor_release(res);
  for (int i = 0; i < nin; i++) opd_tensor_release(dev[i]);
  return compared;
}

START_TEST(test_copy_round_trip) {
  if (skip_without_device("test_copy_round_trip")) return;
  int64_t sizes[3] = {4, 5, 6};
  opd_tensor *x = cpu_data(sizes, 3, OPD_FLOAT32, 7), *d = NULL;
  ck_assert_int_eq(to_device(x, cuda0, &d), 0);
  assert_matches(d, x, 0);
  float host[120];
  ck_assert_int_eq(opd_cuda_copy_to_host(host, d, 0, sizeof host), 0);
  for (int i = 0; i < 120; i++) ck_assert_float_eq(host[i], (float)at(x, i));
  opd_tensor_release(d);
  opd_tensor_release(x);
}
END_TEST

/* torch.nn's building-block operators on the device against the CPU kernels
 * (tests/test_nn_ops.c checks the CPU ones against PyTorch) */
START_TEST(test_nn_ops_match_cpu) {
  if (skip_without_device("test_nn_ops_match_cpu")) return;
  int64_t shape[2] = {33, 65};
  opd_tensor *f = cpu_data(shape, 2, OPD_FLOAT32, 1), *i64 = cpu_data(shape, 2, OPD_INT64, 3);
  ck_assert_int_gt(compare_op("aten::silu", &f, 1, NULL, 0, 1e-6), 0);
  opd_ivalue two = opd_iv_int(2), half = opd_iv_double(0.5);
  ck_assert_int_gt(compare_op("aten::eq.Scalar", &i64, 1, &two, 1, 0), 0);
  ck_assert_int_gt(compare_op("aten::eq.Scalar", &f, 1, &half, 1, 0), 0);
  opd_tensor_release(f);
  opd_tensor_release(i64);
}
END_TEST

START_TEST(test_add_matches_cpu) {
  if (skip_without_device("test_add_matches_cpu")) return;
  int64_t sa[2] = {37, 129}, sb[1] = {129};
  opd_tensor *a = cpu_data(sa, 2, OPD_FLOAT32, 1), *b = cpu_data(sb, 1, OPD_FLOAT32, 2);
  opd_ivalue alpha = opd_iv_double(0.5);
  ck_assert_int_gt(compare_op("aten::add.Tensor", (opd_tensor *[]){a, b}, 2, &alpha, 1, 1e-6),
                   0); /* broadcast */
  alpha = opd_iv_int(1);
  ck_assert_int_gt(compare_op("aten::add.Tensor", (opd_tensor *[]){a, a}, 2, &alpha, 1, 0),
                   0); /* vector path */
  opd_tensor *i64 = cpu_data(sa, 2, OPD_INT64, 3);
  ck_assert_int_gt(compare_op("aten::add.Tensor", (opd_tensor *[]){i64, i64}, 2, &alpha, 1, 0), 0);
  ck_assert_int_gt(compare_op("aten::mul.Tensor", (opd_tensor *[]){a, b}, 2, NULL, 0, 1e-6), 0);
  ck_assert_int_gt(compare_op("aten::exp", (opd_tensor *[]){a}, 1, NULL, 0, 1e-6), 0);
  ck_assert_int_gt(compare_op("aten::eq.Tensor", (opd_tensor *[]){i64, i64}, 2, NULL, 0, 0), 0);
  opd_tensor_release(i64);
  opd_tensor_release(a);
  opd_tensor_release(b);
}
END_TEST

START_TEST(test_softmax_matches_cpu) {
  if (skip_without_device("test_softmax_matches_cpu")) return;
  int64_t sizes[3] = {3, 70, 2050};
  opd_tensor *x = cpu_data(sizes, 3, OPD_FLOAT32, 4);
  for (int64_t dim = 0; dim < 3; dim++) {
    opd_ivalue extra[2] = {opd_iv_int(dim), opd_iv_bool(false)};
    ck_assert_int_gt(compare_op("aten::_softmax", &x, 1, extra, 2, 1e-5), 0);
    ck_assert_int_gt(compare_op("aten::_log_softmax", &x, 1, extra, 2, 1e-5), 0);
  }
  opd_ivalue sum_args[3] = {opd_iv_none(), opd_iv_bool(false), opd_iv_none()};
  ck_assert_int_gt(compare_op("aten::sum.dim_IntList", &x, 1, sum_args, 3, 1e-4), 0);
  opd_ivalue argmax_args[2] = {opd_iv_int(1), opd_iv_bool(true)};
  ck_assert_int_gt(compare_op("aten::argmax", &x, 1, argmax_args, 2, 0), 0);
  opd_tensor_release(x);
}
END_TEST

START_TEST(test_mm_matches_cpu) {
  if (skip_without_device("test_mm_matches_cpu")) return;
  int64_t sa[2] = {33, 65}, sb[2] = {65, 17}, sbt[2] = {17, 65};
  opd_tensor *a = cpu_data(sa, 2, OPD_FLOAT32, 5), *b = cpu_data(sb, 2, OPD_FLOAT32, 6);
  ck_assert_int_gt(compare_op("aten::mm", (opd_tensor *[]){a, b}, 2, NULL, 0, 1e-5), 0);
  /* a transposed operand (column-major view) */
  opd_tensor *bt = cpu_data(sbt, 2, OPD_FLOAT32, 8), *btv = NULL;
  ck_assert_int_eq(call("aten::t", (opd_ivalue[]){T(bt)}, 1, &btv), 0);
  ck_assert_int_gt(compare_op("aten::mm", (opd_tensor *[]){a, btv}, 2, NULL, 0, 1e-5), 0);
  opd_tensor *a64 = cpu_data(sa, 2, OPD_FLOAT64, 9), *b64 = cpu_data(sb, 2, OPD_FLOAT64, 10);
  ck_assert_int_gt(compare_op("aten::mm", (opd_tensor *[]){a64, b64}, 2, NULL, 0, 1e-12), 0);
  opd_tensor *a16 = cpu_data(sa, 2, OPD_FLOAT16, 11), *b16 = cpu_data(sb, 2, OPD_FLOAT16, 12);
  ck_assert_int_gt(compare_op("aten::mm", (opd_tensor *[]){a16, b16}, 2, NULL, 0, 1e-2), 0);
  opd_tensor *rs[] = {a, b, bt, btv, a64, b64, a16, b16};
  for (size_t i = 0; i < sizeof rs / sizeof *rs; i++) opd_tensor_release(rs[i]);
}
END_TEST

/* [Note: CPU scalars in CUDA kernels]: a 0-dim CPU tensor is an operand of CUDA elementwise
 * operations (either side), and the result is the CPU's; a CPU tensor with dims is not. */
START_TEST(test_cpu_scalar_operands) {
  if (skip_without_device("test_cpu_scalar_operands")) return;
  int64_t sa[2] = {5, 7};
  opd_tensor *a = cpu_data(sa, 2, OPD_FLOAT32, 13), *d = NULL,
             *s = cpu_data(sa, 0, OPD_FLOAT64, 14);
  ck_assert_int_eq(to_device(a, cuda0, &d), 0);
  const char *ops[] = {"aten::mul.Tensor", "aten::div.Tensor", "aten::maximum", "aten::gt.Tensor"};
  for (size_t i = 0; i < sizeof ops / sizeof *ops; i++)
    for (int swap = 0; swap < 2; swap++) {
      opd_tensor *ref = NULL, *res = NULL;
      opd_ivalue cpu_args[2] = {T(swap ? s : a), T(swap ? a : s)};
      opd_ivalue dev_args[2] = {T(swap ? s : d), T(swap ? d : s)};
      ck_assert_int_eq(call(ops[i], cpu_args, 2, &ref), 0);
      int rc = call(ops[i], dev_args, 2, &res);
      ck_assert_msg(rc == 0, "%s with a CPU scalar: %s", ops[i], opd_last_error());
      assert_matches(res, ref, 1e-6);
      opd_tensor_release(ref);
      opd_tensor_release(res);
    }
  opd_ivalue alpha = opd_iv_int(2);
  opd_tensor *ref = NULL, *res = NULL;
  ck_assert_int_eq(call("aten::add.Tensor", (opd_ivalue[]){T(a), T(s), alpha}, 3, &ref), 0);
  ck_assert_int_eq(call("aten::add.Tensor", (opd_ivalue[]){T(d), T(s), alpha}, 3, &res), 0);
  assert_matches(res, ref, 1e-6);
  opd_tensor_release(ref);
  opd_tensor_release(res);
  /* a CPU tensor with dims: PyTorch's error */
  ck_assert_int_eq(call("aten::mul.Tensor", (opd_ivalue[]){T(d), T(a)}, 2, &res), OPD_EINVAL);
  ck_assert_ptr_nonnull(strstr(opd_last_error(),
                               "Expected all tensors to be on the same device, "
                               "but found at least two devices, cuda:0 and cpu!"));
  opd_tensor_release(a);
  opd_tensor_release(d);
  opd_tensor_release(s);
}
END_TEST

START_TEST(test_allocator_caches_and_limits) {
  if (skip_without_device("test_allocator_caches_and_limits")) return;
  int64_t sizes[1] = {1 << 20};
  opd_tensor *t = NULL;
  ck_assert_int_eq(opd_tensor_empty(sizes, 1, OPD_FLOAT32, cuda0, &t), 0);
  opd_memory_stats st;
  opd_memory_stats_get_device(cuda0, &st);
  ck_assert_uint_ge(st.in_use, 4u << 20);
  uint64_t in_use = st.in_use;
  opd_tensor_release(t);
  opd_memory_stats_get_device(cuda0, &st);
  ck_assert_uint_eq(st.in_use, in_use - (4u << 20));
  ck_assert_uint_ge(st.cached, 4u << 20);
  ck_assert_int_eq(opd_tensor_empty(sizes, 1, OPD_FLOAT32, cuda0, &t), 0); /* reused */
  opd_memory_stats s2;
  opd_memory_stats_get_device(cuda0, &s2);
  ck_assert_uint_eq(s2.cached, st.cached - (4u << 20));
  opd_tensor_release(t);
  ck_assert_int_eq(opd_cuda_set_memory_limit(0, 1 << 20), 0);
  ck_assert_int_eq(opd_tensor_empty(sizes, 1, OPD_FLOAT32, cuda0, &t), OPD_ERESOURCE);
  ck_assert_ptr_nonnull(strstr(opd_last_error(), "bytes"));
  ck_assert_int_eq(opd_cuda_set_memory_limit(0, 0), 0);
  opd_cuda_empty_cache();
  opd_memory_stats_get_device(cuda0, &st);
  ck_assert_uint_eq(st.cached, 0);
}
END_TEST

/* Registers an NVRTC kernel at the CUDA key of a new operator `schema` (namespace
 * gputest); *def and *impl get the registration ids. */
static opd_nvrtc_kernel *nvrtc_op(const char *src, const char *entry, const char *schema,
                                  const char *dtypes, opd_reg_id *def, opd_reg_id *impl) {
  char qualified[256];
  snprintf(qualified, sizeof qualified, "gputest::%s", schema);
  opd_schema *sc = parse_schema(qualified);
  opd_nvrtc_kernel *k = NULL;
  char *log = NULL;
  int rc =
      opd_nvrtc_kernel_create(src, strlen(src), entry, sc, OPD_NVRTC_ELEMENTWISE, dtypes, &k, &log);
  ck_assert_msg(rc == 0, "%s: %s %s", entry, opd_last_error(), log ? log : "");
  opd_schema_free(sc);
  ck_assert_int_gt(*def = opd_def("gputest", schema, OPD_HERE), 0);
  opd_kernel kernel = opd_nvrtc_kernel_boxed(k);
  ck_assert_int_gt(*impl = opd_impl(qualified, OPD_KEY_CUDA, &kernel, OPD_HERE), 0);
  return k;
}

static void nvrtc_op_free(opd_nvrtc_kernel *k, opd_reg_id def, opd_reg_id impl) {
  ck_assert_int_eq(opd_deregister(impl), 0);
  ck_assert_int_eq(opd_deregister(def), 0);
  opd_nvrtc_kernel_free(k);
}

/* [Note: NVRTC kernels]: a kernel runs on tensors of its declared dtypes (float32 when
 * nothing is declared) and refuses others, which it would read and write past their end;
 * its result has the declared result dtype. */
START_TEST(test_nvrtc_dtypes_on_device) {
  if (skip_without_device("test_nvrtc_dtypes_on_device")) return;
  opd_reg_id def1, impl1, def2, impl2;
  opd_nvrtc_kernel *k1 =
      nvrtc_op(twice_src, "twice", "twice(Tensor x) -> Tensor", NULL, &def1, &impl1);
  static const char positive_src[] =
      "extern \"C\" __global__ void positive(bool *out, const signed char *x, long long n) {\n"
      "  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;\n"
      "  if (i < n) out[i] = x[i] > 0;\n"
      "}\n";
  opd_nvrtc_kernel *k2 = nvrtc_op(positive_src, "positive", "positive(Tensor x) -> Tensor",
                                  "int8 -> bool", &def2, &impl2);
  int64_t sizes[1] = {1000};
  opd_tensor *x = cpu_data(sizes, 1, OPD_FLOAT32, 31), *dx = NULL, *r = NULL, *back = NULL;
  ck_assert_int_eq(to_device(x, cuda0, &dx), 0);
  ck_assert_msg(call("gputest::twice", (opd_ivalue[]){T(dx)}, 1, &r) == 0, "%s", opd_last_error());
  ck_assert_int_eq(r->dtype, OPD_FLOAT32);
  ck_assert_int_eq(to_device(r, cpu, &back), 0);
  for (int64_t i = 0; i < x->numel; i++) ck_assert_float_eq(at(back, i), 2 * at(x, i));
  opd_tensor_release(back);
  opd_tensor_release(r);
  /* float16, int8, bool tensors for a float kernel: refused, nothing launched */
  const opd_dtype others[] = {OPD_FLOAT16, OPD_INT8, OPD_BOOL};
  for (size_t i = 0; i < sizeof others / sizeof *others; i++) {
    opd_tensor *o = NULL, *h = mk(others[i], SHAPE(4), VALS(1, 0, -1, 2));
    ck_assert_int_eq(to_device(h, cuda0, &o), 0);
    r = NULL;
    ck_assert_int_eq(call("gputest::twice", (opd_ivalue[]){T(o)}, 1, &r), OPD_EINVAL);
    ck_assert_ptr_nonnull(strstr(opd_last_error(), "registered to take float32"));
    ck_assert_ptr_null(r);
    if (others[i] == OPD_INT8) { /* the kernel declared for int8 -> bool takes it */
      ck_assert_msg(call("gputest::positive", (opd_ivalue[]){T(o)}, 1, &r) == 0, "%s",
                    opd_last_error());
      ck_assert_int_eq(r->dtype, OPD_BOOL);
      ck_assert_int_eq(to_device(r, cpu, &back), 0);
      const double want[4] = {1, 0, 0, 1};
      for (int k = 0; k < 4; k++) ck_assert_float_eq(at(back, k), want[k]);
      opd_tensor_release(back);
      opd_tensor_release(r);
    }
    opd_tensor_release(o);
    opd_tensor_release(h);
  }
  ck_assert_int_eq(call("gputest::positive", (opd_ivalue[]){T(dx)}, 1, &r), OPD_EINVAL);
  ck_assert_ptr_nonnull(strstr(opd_last_error(), "argument 0 is a float32 tensor"));
  ck_assert_int_eq(opd_cuda_stream_synchronize(0, NULL), 0);
  ck_assert(opd_cuda_device_healthy(0, NULL));
  nvrtc_op_free(k1, def1, impl1);
  nvrtc_op_free(k2, def2, impl2);
  opd_tensor_release(dx);
  opd_tensor_release(x);
}
END_TEST

/* gemm_operand: an operand whose leading dimension passes 2^31 - 1 (cuBLAS takes an int) is
 * copied contiguous first, as PyTorch does, not refused. Row- and column-major views of a
 * float16 storage of 2^31 + 2 elements (4 GiB). */
START_TEST(test_mm_leading_dimension_past_int32) {
  if (skip_without_device("test_mm_leading_dimension_past_int32")) return;
  const int64_t big = (int64_t)1 << 31, n = big + 2;
  opd_tensor *store = NULL;
  if (opd_tensor_empty(&n, 1, OPD_FLOAT16, cuda0, &store) != 0) {
    printf("SKIP: test_mm_leading_dimension_past_int32: %s\n", opd_last_error());
    return;
  }
  opd_tensor *a = mk(OPD_FLOAT16, SHAPE(2, 2), VALS(1, 2, 3, 4));
  int64_t sb[2] = {2, 3};
  opd_tensor *b = cpu_data(sb, 2, OPD_FLOAT16, 32), *db = NULL, *ref = NULL;
  ck_assert_int_eq(to_device(b, cuda0, &db), 0);
  ck_assert_int_eq(call("aten::mm", (opd_ivalue[]){T(a), T(b)}, 2, &ref), 0);
  const int64_t strides[2][2] = {{big, 1}, {1, big}}; /* row-major, column-major */
  for (int k = 0; k < 2; k++) {
    opd_tensor *v = view(store, SHAPE(2, 2), strides[k], 0), *filled = NULL, *res = NULL;
    ck_assert_int_eq(
        call("aten::copy_", (opd_ivalue[]){T(v), T(a), opd_iv_bool(false)}, 3, &filled), 0);
    int rc = call("aten::mm", (opd_ivalue[]){T(v), T(db)}, 2, &res);
    ck_assert_msg(rc == 0, "strides {%lld, %lld}: %s", (long long)strides[k][0],
                  (long long)strides[k][1], opd_last_error());
    ck_assert_int_eq(assert_matches(res, ref, 1e-2), 6);
    opd_tensor_release(res);
    opd_tensor_release(filled);
    opd_tensor_release(v);
  }
  opd_tensor_release(ref);
  opd_tensor_release(db);
  opd_tensor_release(b);
  opd_tensor_release(a);
  opd_tensor_release(store);
}
END_TEST

/* [Note: CUDA reductions]: few outputs over many elements each (split across blocks, then a
 * second pass) agree with the CPU: sums, means, amax, argmax (the first index of the maximum:
 * the values repeat) over one dim and over everything; int64 sums exactly. */
START_TEST(test_reduce_few_outputs_many_elements) {
  if (skip_without_device("test_reduce_few_outputs_many_elements")) return;
  int64_t sizes[2] = {3, (1 << 22) + 5};
  opd_tensor *x = cpu_data(sizes, 2, OPD_FLOAT32, 33), *x64 = cpu_data(sizes, 2, OPD_INT64, 34);
  const int64_t one = 1;
  opd_ivalue dim1; /* copied into each call */
  ck_assert_int_eq(opd_iv_make_int_list(&dim1, &one, 1), 0);
  opd_ivalue sum_dim[3] = {dim1, opd_iv_bool(false), opd_iv_none()};
  opd_ivalue sum_all[3] = {opd_iv_none(), opd_iv_bool(false), opd_iv_none()};
  opd_ivalue mean_dim[3] = {dim1, opd_iv_bool(true), opd_iv_none()};
  opd_ivalue amax_dim[2] = {dim1, opd_iv_bool(false)};
  opd_ivalue argmax_dim[2] = {opd_iv_int(1), opd_iv_bool(false)};
  opd_ivalue argmax_all[2] = {opd_iv_none(), opd_iv_bool(false)};
  ck_assert_int_eq(compare_op("aten::sum.dim_IntList", &x, 1, sum_dim, 3, 1e-3), 3);
  ck_assert_int_eq(compare_op("aten::sum.dim_IntList", &x, 1, sum_all, 3, 1e-3), 1);
  ck_assert_int_eq(compare_op("aten::mean.dim", &x, 1, mean_dim, 3, 1e-3), 3);
  ck_assert_int_eq(compare_op("aten::amax", &x, 1, amax_dim, 2, 0), 3);
  ck_assert_int_eq(compare_op("aten::argmax", &x, 1, argmax_dim, 2, 0), 3);
  ck_assert_int_eq(compare_op("aten::argmax", &x, 1, argmax_all, 2, 0), 1);
  ck_assert_int_eq(compare_op("aten::sum.dim_IntList", &x64, 1, sum_dim, 3, 0), 3);
  ck_assert_int_eq(compare_op("aten::sum.dim_IntList", &x64, 1, sum_all, 3, 0), 1);
  opd_iv_destroy(&dim1);
  opd_tensor_release(x64);
  opd_tensor_release(x);
}
END_TEST

/* [Note: cuBLAS workspaces]: a product on a new stream gets a workspace of its own (held
 * while the stream lives, reused by its later products) and the stream's destruction frees
 * it. */
START_TEST(test_cublas_workspace_per_stream) {
  if (skip_without_device("test_cublas_workspace_per_stream")) return;
  const uint64_t ws = (uint64_t)(opd_cuda_device_capability(0) >= 90 ? 32 : 4) << 20;
  int64_t sa[2] = {64, 32}, sb[2] = {32, 16};
  opd_tensor *a = cpu_data(sa, 2, OPD_FLOAT32, 35), *b = cpu_data(sb, 2, OPD_FLOAT32, 36);
  opd_tensor *da = NULL, *db = NULL, *ref = NULL;
  ck_assert_int_eq(to_device(a, cuda0, &da), 0);
  ck_assert_int_eq(to_device(b, cuda0, &db), 0);
  ck_assert_int_eq(call("aten::mm", (opd_ivalue[]){T(a), T(b)}, 2, &ref), 0);
  void *s1 = opd_cuda_stream_create(0), *s2 = opd_cuda_stream_create(0);
  ck_assert(s1 && s2);
  opd_memory_stats m;
  opd_memory_stats_get_device(cuda0, &m);
  const uint64_t base = m.in_use;
  void *order[3] = {s1, s2, s1};
  const uint64_t held[3] = {base + ws, base + 2 * ws, base + 2 * ws};
  for (int k = 0; k < 3; k++) {
    opd_cuda_set_current_stream(0, order[k]);
    opd_tensor *res = NULL;
    ck_assert_int_eq(call("aten::mm", (opd_ivalue[]){T(da), T(db)}, 2, &res), 0);
    assert_matches(res, ref, 1e-5);
    opd_tensor_release(res);
    opd_memory_stats_get_device(cuda0, &m);
    ck_assert_msg(m.in_use == held[k], "after product %d: %llu bytes in use, expected %llu", k,
                  (unsigned long long)m.in_use, (unsigned long long)held[k]);
  }
  opd_cuda_set_current_stream(0, NULL);
  opd_cuda_stream_destroy(0, s1);
  opd_memory_stats_get_device(cuda0, &m);
  ck_assert_uint_eq(m.in_use, base + ws);
  opd_cuda_stream_destroy(0, s2);
  opd_memory_stats_get_device(cuda0, &m);
  ck_assert_uint_eq(m.in_use, base);
  opd_tensor_release(ref);
  opd_tensor_release(da);
  opd_tensor_release(db);
  opd_tensor_release(a);
  opd_tensor_release(b);
}
END_TEST

/* Asserts that v is a view of base on the device (its storage, nothing copied) with these
 * sizes, strides and offset, holding the values of the CPU's result ref. */
static void assert_device_view(opd_tensor *v, opd_tensor *base, opd_tensor *ref, int nd,
                               const int64_t *sizes, const int64_t *strides, int64_t offset) {
  ck_assert(opd_tensor_shares_storage(v, base));
  ck_assert_int_eq(v->ndim, nd);
  ck_assert_mem_eq(opd_tensor_sizes(v), sizes, nd * sizeof *sizes);
  ck_assert_mem_eq(opd_tensor_strides(v), strides, nd * sizeof *strides);
  ck_assert_int_eq(v->storage_offset, offset);
  ck_assert_int_eq(assert_matches(v, ref, 0), ref->numel);
}

/* The view operators of traced graphs on a CUDA tensor (one CompositeExplicitAutograd
 * kernel each: [Note: The views of traced graphs] in kernels/src/views.c; test_graph_ops.c
 * checks the CPU and Meta and the dispatch tables): as in PyTorch, _reshape_alias,
 * _unsafe_view and every piece of unbind.int are views of the input, and their values are
 * the CPU's. */
START_TEST(test_graph_views_on_device) {
  if (skip_without_device("test_graph_views_on_device")) return;
  int64_t sizes[3] = {2, 3, 4};
  opd_tensor *x = cpu_data(sizes, 3, OPD_FLOAT32, 13), *xi = cpu_data(sizes, 3, OPD_INT64, 14);
  opd_tensor *d = NULL, *di = NULL, *ref = NULL, *res = NULL;
  ck_assert_int_eq(to_device(x, cuda0, &d), 0);
  ck_assert_int_eq(to_device(xi, cuda0, &di), 0);
  /* _reshape_alias: the sizes and strides given (a transposed [6, 4]), at the input's offset */
  opd_ivalue size, stride;
  for (int dev = 0; dev < 2; dev++) {
    ck_assert_int_eq(opd_iv_make_int_list(&size, (int64_t[]){4, 6}, 2), 0);
    ck_assert_int_eq(opd_iv_make_int_list(&stride, (int64_t[]){1, 4}, 2), 0);
    ck_assert_int_eq(call("aten::_reshape_alias", (opd_ivalue[]){T(dev ? d : x), size, stride}, 3,
                          dev ? &res : &ref),
                     0);
  }
  assert_device_view(res, d, ref, 2, (int64_t[]){4, 6}, (int64_t[]){1, 4}, 0);
  opd_tensor_release(ref);
  opd_tensor_release(res);
  /* _unsafe_view: view's sizes (-1 inferred) and contiguous strides, an int64 input */
  for (int dev = 0; dev < 2; dev++) {
    ck_assert_int_eq(opd_iv_make_int_list(&size, (int64_t[]){-1, 8}, 2), 0);
    ck_assert_int_eq(
        call("aten::_unsafe_view", (opd_ivalue[]){T(dev ? di : xi), size}, 2, dev ? &res : &ref),
        0);
  }
  assert_device_view(res, di, ref, 2, (int64_t[]){3, 8}, (int64_t[]){8, 1}, 0);
  opd_tensor_release(ref);
  opd_tensor_release(res);
  ck_assert_int_eq(opd_iv_make_int_list(&size, (int64_t[]){5, 5}, 2), 0);
  ck_assert_int_eq(call("aten::_unsafe_view", (opd_ivalue[]){T(di), size}, 2, &res), OPD_EINVAL);
  /* unbind.int at dim -2: piece k is x[:, k, :], sizes [2, 4], strides [12, 1], offset 4 k */
  const opd_operator *unbind = opd_find_schema("aten::unbind.int");
  ck_assert_ptr_nonnull(unbind);
  opd_stack st[2];
  for (int dev = 0; dev < 2; dev++) {
    opd_stack_init(&st[dev]);
    ck_assert_int_eq(opd_stack_push(&st[dev], T(dev ? d : x)), 0);
    ck_assert_int_eq(opd_stack_push(&st[dev], opd_iv_int(-2)), 0);
    ck_assert_int_eq(opd_call_boxed(unbind, &st[dev]), 0);
    ck_assert_uint_eq(st[dev].size, 1);
    ck_assert_int_eq(st[dev].items[0].tag, OPD_IV_TENSOR_LIST);
    ck_assert_uint_eq(st[dev].items[0].len, 3);
  }
  for (int k = 0; k < 3; k++)
    assert_device_view(st[1].items[0].u.tensors[k], d, st[0].items[0].u.tensors[k], 2,
                       (int64_t[]){2, 4}, (int64_t[]){12, 1}, 4 * k);
  opd_stack_destroy(&st[0]);
  opd_stack_destroy(&st[1]);
  opd_tensor *rs[] = {x, xi, d, di};
  for (size_t i = 0; i < sizeof rs / sizeof *rs; i++) opd_tensor_release(rs[i]);
}
END_TEST

Suite *opd_test_cuda_suite(void) {
  Suite *s = suite_create("cuda");
  TCase *tc = tcase_create("cuda");
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, test_init_reports_devices);
  tcase_add_test(tc, test_cuda_tensor_without_device);
  tcase_add_test(tc, test_cuda_kernels_registered);
  tcase_add_test(tc, test_nvrtc_dtypes_declared);
  tcase_add_test(tc, test_nvrtc_call_checks_dtypes);
#ifdef OPD_HAVE_CUDA
  tcase_add_test(tc, test_allocator_stream_destroyed);
  tcase_add_test(tc, test_allocator_clears_between_owners);
  tcase_add_test(tc, test_sticky_errors);
#endif
  tcase_add_test(tc, test_copy_round_trip);
  tcase_add_test(tc, test_add_matches_cpu);
  tcase_add_test(tc, test_nn_ops_match_cpu);
  tcase_add_test(tc, test_softmax_matches_cpu);
  tcase_add_test(tc, test_mm_matches_cpu);
  tcase_add_test(tc, test_cpu_scalar_operands);
  tcase_add_test(tc, test_allocator_caches_and_limits);
  tcase_add_test(tc, test_nvrtc_dtypes_on_device);
  tcase_add_test(tc, test_mm_leading_dimension_past_int32);
  tcase_add_test(tc, test_reduce_few_outputs_many_elements);
  tcase_add_test(tc, test_cublas_workspace_per_stream);
  tcase_add_test(tc, test_graph_views_on_device);
  suite_add_tcase(s, tc);
  return s;
}

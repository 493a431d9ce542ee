/* nvrtc_kernel.c: CUDA kernels compiled from source with NVRTC, loaded with the runtime's
 * library API and run as boxed kernels (see [Note: NVRTC kernels] in opd/cuda_nvrtc.h). */
#include <assert.h>
#include <cuda_runtime_api.h>
#include <nvrtc.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_internal.h"
#include "opd/cuda.h"
#include "opd/cuda_nvrtc.h"
#include "opd/error.h"
#include "opd/memory.h"
#include "opd/tensor.h"

#define BLOCK 256

typedef enum param_kind { PARAM_TENSOR, PARAM_FLOAT, PARAM_INT } param_kind;

struct opd_nvrtc_kernel {
  cudaLibrary_t lib;
  cudaKernel_t fn;
  opd_nvrtc_launch launch;
  uint32_t nargs;
  param_kind kinds[OPD_SCHEMA_MAX_ARGS];
  opd_nvrtc_dtypes dtypes;
  char name[OPD_NVRTC_MAX_ENTRY + 1];
};

/* The parameter kinds of a schema opd_nvrtc_check accepted. */
static void param_kinds(const opd_schema *s, opd_nvrtc_kernel *k) {
  for (uint32_t i = 0; i < s->num_args; i++) {
    uint8_t kind = s->args[i].type.kind;
    k->kinds[i] = kind == OPD_TYPE_TENSOR  ? PARAM_TENSOR
                  : kind == OPD_TYPE_FLOAT ? PARAM_FLOAT
                                           : PARAM_INT;
  }
  k->nargs = s->num_args;
}

/* A failed runtime call of the library API, as opd__cuda_error words it: the runtime also
 * records the error as the thread's last one, which the next kernel launch's check
 * (opd__cuda_check_launch: cudaGetLastError) would report as its own failure unless it is
 * taken here; a sticky one marks the current device unhealthy. */
static int cuda_fail(cudaError_t e, const char *what) {
  int dev = 0;
  if (cudaGetDevice(&dev) != cudaSuccess) dev = 0;
  return opd__cuda_error(dev, e, what);
}

/* The options' architecture: the devices' common one as a cubin, else PTX of the lowest. */
static void arch_option(char *buf, size_t len, bool *cubin) {
  int n = opd_cuda_device_count(), lo = opd_cuda_device_capability(0), hi = lo;
  for (int d = 1; d < n; d++) {
    int c = opd_cuda_device_capability(d);
    if (c < lo) lo = c;
    if (c > hi) hi = c;
  }
  *cubin = lo == hi;
  snprintf(buf, len, "--gpu-architecture=%s_%d", *cubin ? "sm" : "compute", lo);
}

/* Compiles for `arch` (an option --gpu-architecture=..., a cubin when *cubin); 0 with the
 * image (malloc'ed, *size bytes) and the entry's lowered name, or an error (and the log
 * verbatim when compilation failed). */
static int compile(const char *source, const char *entry, const char *arch, bool cubin,
                   void **image, size_t *image_size, char *lowered, size_t lowered_len,
                   char **log) {
  nvrtcProgram prog;
  nvrtcResult r = nvrtcCreateProgram(&prog, source, "opd_nvrtc.cu", 0, NULL, NULL);
  if (r != NVRTC_SUCCESS)
    return opd_error(r == NVRTC_ERROR_OUT_OF_MEMORY ? OPD_ENOMEM : OPD_EINVAL, "NVRTC: %s",
                     nvrtcGetErrorString(r));
  const char *opts[] = {arch, "--std=c++17"};
  int rc = 0;
  if ((r = nvrtcAddNameExpression(prog, entry)) != NVRTC_SUCCESS) {
    rc = opd_error(OPD_EINVAL, "NVRTC: %s", nvrtcGetErrorString(r));
  } else if ((r = nvrtcCompileProgram(prog, 2, opts)) != NVRTC_SUCCESS) {
    size_t n = 0;
    char *text = nvrtcGetProgramLogSize(prog, &n) == NVRTC_SUCCESS ? opd__malloc(n + 1) : NULL;
    if (text && nvrtcGetProgramLog(prog, text) == NVRTC_SUCCESS) {
      text[n] = '\0';
      *log = text;
    } else {
      opd__free(text);
    }
    rc = opd_error(OPD_EINVAL, "NVRTC compilation failed (%s, %s): see the log",
                   nvrtcGetErrorString(r), arch);
  } else {
    const char *name = NULL;
    size_t size = 0;
    if ((r = nvrtcGetLoweredName(prog, entry, &name)) != NVRTC_SUCCESS ||
        strlen(name) >= lowered_len)
      rc = opd_error(OPD_EINVAL, "entry '%s': not a __global__ function of the source", entry);
    else
      snprintf(lowered, lowered_len, "%s", name);
    if (rc == 0 && (r = cubin ? nvrtcGetCUBINSize(prog, &size) : nvrtcGetPTXSize(prog, &size)) !=
                       NVRTC_SUCCESS)
      rc = opd_error(OPD_EINTERNAL, "NVRTC: %s", nvrtcGetErrorString(r));
    if (rc == 0 && !(*image = opd__malloc(size)))
      rc = opd_error(OPD_ENOMEM, "out of memory for a compiled kernel of %zu bytes", size);
    if (rc == 0 &&
        (r = cubin ? nvrtcGetCUBIN(prog, *image) : nvrtcGetPTX(prog, *image)) != NVRTC_SUCCESS) {
      opd__free(*image);
      *image = NULL;
      rc = opd_error(OPD_EINTERNAL, "NVRTC: %s", nvrtcGetErrorString(r));
    }
    if (rc == 0) *image_size = size;
  }
  nvrtcDestroyProgram(&prog);
  return rc;
}

/* Compiles for the devices and loads the entry: 0 with *lib and *fn. */
static int compile_and_load(const char *source, const char *entry, cudaLibrary_t *lib,
                            cudaKernel_t *fn, char *lowered, size_t lowered_len, char **log) {
  char arch[64];
  bool cubin;
  arch_option(arch, sizeof arch, &cubin);
  void *image = NULL;
  size_t size = 0;
  int rc = compile(source, entry, arch, cubin, &image, &size, lowered, lowered_len, log);
  cudaError_t e;
  if (rc == 0 && (e = cudaLibraryLoadData(lib, image, NULL, NULL, 0, NULL, NULL, 0)) != cudaSuccess)
    rc = cuda_fail(e, "loading the compiled kernel");
  else if (rc == 0 && (e = cudaLibraryGetKernel(fn, *lib, lowered)) != cudaSuccess) {
    rc = cuda_fail(e, "finding the entry in the compiled kernel");
    cudaLibraryUnload(*lib);
  }
  opd__free(image);
  return rc;
}

int opd_nvrtc_compile_cubin(const char *source, const char *entry, int capability, void **image,
                            size_t *size, char **log) {
  *image = NULL;
  *size = 0;
  *log = NULL;
  if (capability < 10 || capability > 999)
    return opd_error(OPD_EINVAL, "compute capability %d: expected major * 10 + minor", capability);
  char arch[64], lowered[OPD_NVRTC_MAX_ENTRY + 1];
  snprintf(arch, sizeof arch, "--gpu-architecture=sm_%d", capability);
  return compile(source, entry, arch, true, image, size, lowered, sizeof lowered, log);
}

int opd_nvrtc_kernel_create(const char *source, size_t len, const char *entry,
                            const opd_schema *schema, opd_nvrtc_launch launch, const char *dtypes,
                            opd_nvrtc_kernel **out, char **log) {
  *out = NULL;
  *log = NULL;
  opd_nvrtc_dtypes types;
  int rc = opd_nvrtc_check(source, len, entry, schema, dtypes, &types);
  if (rc < 0) return rc;
  if (opd_cuda_init() <= 0) {
    const char *why = opd_cuda_unavailable_reason();
    return opd_error(OPD_EUNAVAILABLE, "CUDA unavailable: %s", why ? why : "no CUDA device");
  }
  opd_nvrtc_kernel *k = opd__calloc(1, sizeof *k);
  char *text = opd__malloc(len + 1);
  if (!k || !text) {
    opd__free(k);
    opd__free(text);
    return opd_error(OPD_ENOMEM, "out of memory for an NVRTC kernel");
  }
  memcpy(text, source, len);
  text[len] = '\0';
  k->launch = launch;
  k->dtypes = types;
  param_kinds(schema, k);
  rc = compile_and_load(text, entry, &k->lib, &k->fn, k->name, sizeof k->name, log);
  opd__free(text);
  if (rc < 0) {
    opd__free(k);
    return rc;
  }
  *out = k;
  return 0;
}

/* A launch may still be queued on some stream: lets the devices finish first. */
static void finish_devices(void) {
  for (int d = 0; d < opd_cuda_device_count(); d++)
    if (cudaSetDevice(d) == cudaSuccess) (void)cudaDeviceSynchronize();
}

void opd_nvrtc_kernel_free(opd_nvrtc_kernel *k) {
  if (!k) return;
  finish_devices();
  cudaLibraryUnload(k->lib);
  opd__free(k);
}

/* ---- generated functions ([Note: Generated functions]) ---- */

/* Launches fn on the device's current stream; a sticky error (the kernel of an earlier
 * launch crashed) marks the device unhealthy. */
static int launch_on(int dev, cudaKernel_t fn, dim3 grid, dim3 block, void **args, const char *kind,
                     const char *name) {
  int rc = opd__cuda_use_device(dev);
  if (rc) return rc;
  char what[OPD_NVRTC_MAX_ENTRY + 64];
  snprintf(what, sizeof what, "launching %s %s", kind, name);
  return opd__cuda_error(dev,
                         cudaLaunchKernel((const void *)fn, grid, block, args, 0,
                                          (cudaStream_t)opd_cuda_current_stream(dev)),
                         what);
}

struct opd_nvrtc_function {
  cudaLibrary_t lib;
  cudaKernel_t fn;
  char name[OPD_NVRTC_MAX_ENTRY + 1];
};

int opd_nvrtc_function_create(const char *source, const char *entry, opd_nvrtc_function **out,
                              char **log) {
  *out = NULL;
  *log = NULL;
  if (opd_cuda_init() <= 0) {
    const char *why = opd_cuda_unavailable_reason();
    return opd_error(OPD_EUNAVAILABLE, "CUDA unavailable: %s", why ? why : "no CUDA device");
  }
  opd_nvrtc_function *f = opd__calloc(1, sizeof *f);
  if (!f) return opd_error(OPD_ENOMEM, "out of memory for a generated CUDA function");
  int rc = compile_and_load(source, entry, &f->lib, &f->fn, f->name, sizeof f->name, log);
  if (rc < 0) {
    opd__free(f);
    return rc;
  }
  *out = f;
  return 0;
}

int opd_nvrtc_function_launch(const opd_nvrtc_function *f, int device, const void *params,
                              size_t size, int64_t n) {
  if (n <= 0) return 0;
  if (size > OPD_NVRTC_MAX_PARAMS)
    return opd_error(OPD_EINVAL, "a generated function's parameters of %zu bytes are past %d", size,
                     OPD_NVRTC_MAX_PARAMS);
  const char *sticky;
  if (!opd_cuda_device_healthy(device, &sticky))
    return opd_error(OPD_EUNAVAILABLE, "device cuda:%d is unhealthy: %s", device,
                     sticky ? sticky : "unknown error");
  int64_t blocks = (n + BLOCK - 1) / BLOCK;
  dim3 grid = {(unsigned)(blocks < 65535 * 8 ? blocks : 65535 * 8), 1, 1}, block = {BLOCK, 1, 1};
  void *args[] = {(void *)params};
  return launch_on(device, f->fn, grid, block, args, "generated function", f->name);
}

void opd_nvrtc_function_free(opd_nvrtc_function *f) {
  if (!f) return;
  finish_devices();
  cudaLibraryUnload(f->lib);
  opd__free(f);
}

/* ---- the boxed kernel ---- */

/* The GPU ordinal of a CUDA tensor (index -1, "the current device", is device 0). */
static int device_of(const opd_tensor *t) {
  int i = opd_tensor_device(t).index;
  return i < 0 ? 0 : i;
}

static int launch(const opd_nvrtc_kernel *k, const opd_ivalue *a, opd_tensor *out, const char *op) {
  int dev = device_of(out);
  int64_t n = out->numel;
  if (n == 0) return 0;
  void *ptrs[OPD_SCHEMA_MAX_ARGS + 1];
  float floats[OPD_SCHEMA_MAX_ARGS];
  long long ints[OPD_SCHEMA_MAX_ARGS + 2];
  void *params[OPD_SCHEMA_MAX_ARGS + 3];
  unsigned np = 0;
  ptrs[0] = opd_tensor_data(out);
  params[np++] = &ptrs[0];
  for (uint32_t i = 0; i < k->nargs; i++) {
    if (k->kinds[i] == PARAM_TENSOR) {
      ptrs[i + 1] = opd_tensor_data(a[i].u.t);
      params[np++] = &ptrs[i + 1];
    } else if (k->kinds[i] == PARAM_FLOAT) {
      floats[i] = (float)a[i].u.d;
      params[np++] = &floats[i];
    } else {
      ints[i] = (long long)a[i].u.i;
      params[np++] = &ints[i];
    }
  }
  dim3 grid = {1, 1, 1}, block = {BLOCK, 1, 1};
  if (k->launch == OPD_NVRTC_ELEMENTWISE) {
    int64_t blocks = (n + BLOCK - 1) / BLOCK;
    if (blocks > INT32_MAX)
      return opd_error(OPD_EINVAL, "%s: %lld elements are too many for one launch", op,
                       (long long)n);
    grid.x = (unsigned)blocks;
    ints[k->nargs] = (long long)n;
    params[np++] = &ints[k->nargs];
  } else {
    int64_t cols = out->ndim ? opd_tensor_sizes(out)[out->ndim - 1] : 1, rows = n / cols;
    if (rows > INT32_MAX)
      return opd_error(OPD_EINVAL, "%s: %lld rows are too many for one launch", op,
                       (long long)rows);
    grid.x = (unsigned)rows;
    ints[k->nargs] = (long long)rows;
    ints[k->nargs + 1] = (long long)cols;
    params[np++] = &ints[k->nargs];
    params[np++] = &ints[k->nargs + 1];
  }
  return launch_on(dev, k->fn, grid, block, params, "NVRTC kernel", k->name);
}

static int boxed(const opd_kernel_ctx *ctx, opd_stack *st) {
  const opd_nvrtc_kernel *k = ctx->data;
  const char *op = opd_op_name(ctx->op);
  assert(st->size >= k->nargs);
  opd_ivalue *a = opd_stack_last(st, k->nargs);
  const char *sticky;
  opd_tensor *out = NULL;
  int rc = opd_nvrtc_check_call(&k->dtypes, a, op);
  int dev = rc == 0 ? device_of(a[0].u.t) : 0;
  if (rc == 0 && !opd_cuda_device_healthy(dev, &sticky))
    rc = opd_error(OPD_EUNAVAILABLE, "%s: device cuda:%d is unhealthy: %s", op, dev,
                   sticky ? sticky : "unknown error");
  if (rc == 0)
    rc = opd_tensor_empty(opd_tensor_sizes(a[0].u.t), a[0].u.t->ndim, (opd_dtype)k->dtypes.result,
                          opd_tensor_device(a[0].u.t), &out);
  if (rc == 0 && (rc = launch(k, a, out, op)) < 0) {
    opd_tensor_release(out);
    out = NULL;
  }
  for (uint32_t i = 0; i < k->nargs; i++) {
    opd_ivalue v = opd_stack_pop(st);
    opd_iv_destroy(&v);
  }
  if (rc < 0) return rc;
  return opd_stack_push(st, opd_iv_tensor_steal(out));
}

opd_kernel opd_nvrtc_kernel_boxed(opd_nvrtc_kernel *k) {
  return (opd_kernel){.boxed = boxed, .data = k, .name = k->name};
}

static char nvrtc_version[32];
static pthread_once_t nvrtc_version_once = PTHREAD_ONCE_INIT;

static void read_nvrtc_version(void) {
  int major = 0, minor = 0;
  if (nvrtcVersion(&major, &minor) == NVRTC_SUCCESS)
    snprintf(nvrtc_version, sizeof nvrtc_version, "nvrtc=%d.%d", major, minor);
  else
    snprintf(nvrtc_version, sizeof nvrtc_version, "nvrtc=unknown");
}

const char *opd_nvrtc_version(void) {
  pthread_once(&nvrtc_version_once, read_nvrtc_version);
  return nvrtc_version;
}

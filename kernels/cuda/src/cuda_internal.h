/* cuda_internal.h: what the CUDA backend's C and CUDA files share (internal): the runtime
 * helpers of runtime.cu (device selection, health, raw device memory, cuBLAS handles) and the
 * plain-data descriptors and launchers of the device kernels (elementwise.cu, reduce.cu,
 * linalg.cu). C and C++ include it: no opd_tensor, no atomics, only POD types.
 *
 * [Note: CUDA kernels as C plus launchers]
 * A CUDA kernel of the kernels library is a C function (cuda_kernels.c) that runs the
 * operator's meta function (kernels/meta/, the same checks and shapes as the CPU kernel),
 * allocates its output through the CUDA allocator and fills a descriptor below, then calls an
 * extern "C" launcher that starts device code on the current stream. The launchers return 0
 * or an opd error (launch failures become opd errors; sticky ones mark the device unhealthy).
 */
#ifndef OPD_KERNELS_CUDA_INTERNAL_H
#define OPD_KERNELS_CUDA_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The most devices opd tracks. */
#define OPD_CUDA_MAX_DEVICES 64
/* The most dimensions a descriptor carries (PyTorch's limit; opd/tensor.h OPD_MAX_DIMS). */
#define OPD_CUDA_MAX_DIMS    64

/* ---- runtime.cu ---- */

/* Counts devices once; 0 with *reason set when unavailable. */
int opd__cuda_runtime_init(const char **reason);
/* 0 when `device` exists and is healthy, and makes it the calling thread's device; else
 * OPD_EUNAVAILABLE (or OPD_EINVAL for a bad index) with a message. */
int opd__cuda_use_device(int device);
/* Turns a CUDA error code (an int: cudaError_t) met while doing `what` on `device` into an
 * opd error with the error's name; sticky errors mark the device unhealthy. 0 for success. */
int opd__cuda_error(int device, int cuda_error, const char *what);
/* Checks cudaGetLastError after a launch. */
int opd__cuda_check_launch(int device, const char *what);
/* cudaMalloc / cudaFree on `device`. Out of memory: OPD_ERESOURCE with no message recorded
 * (the allocator words it); other failures: the opd error of opd__cuda_error. */
int opd__cuda_raw_malloc(int device, size_t nbytes, void **out);
void opd__cuda_raw_free(int device, void *p);
/* The key the allocator records a block's stream under: the current stream, or for the
 * per-thread default stream an address unique to the calling thread. */
const void *opd__cuda_stream_key(int device);
/* Copies on the current stream of `device` (kind: 1 host to device, 2 device to host,
 * 3 device to device) and waits when `wait`. */
int opd__cuda_memcpy(int device, void *dst, const void *src, size_t nbytes, int kind, bool wait);
/* Zeroes nbytes at p on the current stream. */
int opd__cuda_memset0(int device, void *p, size_t nbytes);

/* ---- allocator.c ---- */

/* The CUDA allocator's block of nbytes on `device` (NULL + opd error), and its release. */
void *opd__cuda_alloc(int device, size_t nbytes);
void opd__cuda_free(int device, void *p, size_t nbytes);
/* Registers the CUDA allocator (available: whether devices exist; if not, the allocator of
 * unavailable.c). */
int opd__cuda_allocator_register(bool available);
/* After `stream` (an opd__cuda_stream_key) of `device` was synchronized, as it is destroyed:
 * its cached blocks, and its live ones once freed, serve requests on any stream. */
void opd__cuda_allocator_stream_destroyed(int device, const void *stream);
/* Returns the cached blocks of `device` (any index below OPD_CUDA_MAX_DEVICES) to the raw
 * allocator. */
void opd__cuda_allocator_empty(int device);
/* What the allocator draws on (runtime.cu's functions of the same names by default). Tests
 * replace them to run the allocator's logic without a device; NULL restores the defaults. */
typedef struct opd__cuda_raw_ops {
  int (*use_device)(int device);
  int (*malloc)(int device, size_t nbytes, void **out);
  void (*free)(int device, void *p);
  const void *(*stream_key)(int device);
  int (*memset0)(int device, void *p, size_t nbytes); /* on the current stream */
} opd__cuda_raw_ops;
void opd__cuda_allocator_set_raw_ops(const opd__cuda_raw_ops *ops);

/* ---- linalg.cu ---- */

/* After `stream` of `device` was synchronized, as it is destroyed: frees the cuBLAS
 * workspaces of the (handle, stream) pairs it was in ([Note: cuBLAS workspaces]). */
void opd__cuda_blas_stream_destroyed(int device, void *stream);

/* ---- unavailable.c ---- */

/* Registers, for OPD_DEVICE_CUDA, an allocator whose alloc fails with OPD_EUNAVAILABLE and
 * opd_cuda_unavailable_reason(). */
int opd__cuda_register_unavailable(void);

/* ---- descriptors ---- */

/* dtype codes are opd_dtype values (opd/dtype.h). */

/* An elementwise operation over `numel` elements of an output of `ndim` dims: operand 0 is
 * the output, operands 1..ninputs the inputs, with strides in elements (0: broadcast). */
#define OPD_CUDA_EW_MAX_OPS 4
typedef struct opd__cuda_ew {
  int op;      /* opd__cuda_ew_op */
  int compute; /* 0: float, 1: double, 2: int64 */
  int ninputs;
  int narrow; /* integer compute: the dtype inputs are first narrowed to (-1: none) */
  int ndim;
  int64_t numel;
  int dtype[OPD_CUDA_EW_MAX_OPS];
  void *data[OPD_CUDA_EW_MAX_OPS];
  double c0d, c1d;  /* scalar operands, for float/double compute */
  int64_t c0i, c1i; /* for int64 compute */
  int *error;       /* device flag set by integer division by zero (may be NULL) */
  int64_t sizes[OPD_CUDA_MAX_DIMS];
  int64_t strides[OPD_CUDA_EW_MAX_OPS][OPD_CUDA_MAX_DIMS];
} opd__cuda_ew;

typedef enum opd__cuda_ew_op {
  OPD_CUDA_EW_COPY, /* out = in1 */
  OPD_CUDA_EW_FILL, /* out = c0 */
  OPD_CUDA_EW_ADD,  /* in1 + c0 * in2 */
  OPD_CUDA_EW_ADD1, /* in1 + in2 */
  OPD_CUDA_EW_MUL,
  OPD_CUDA_EW_SCALE, /* c0 * in1 */
  OPD_CUDA_EW_MAXIMUM,
  OPD_CUDA_EW_MINIMUM,
  OPD_CUDA_EW_DIV_TRUE,
  OPD_CUDA_EW_DIV_TRUNC,
  OPD_CUDA_EW_DIV_FLOOR,
  OPD_CUDA_EW_EQ,
  OPD_CUDA_EW_GT,
  OPD_CUDA_EW_LT_SCALAR,   /* in1 < c0 */
  OPD_CUDA_EW_EQ_SCALAR,   /* in1 == c0 */
  OPD_CUDA_EW_WHERE,       /* in1 ? in2 : in3 */
  OPD_CUDA_EW_MASKED_FILL, /* in1 ? c0 : in2 */
  OPD_CUDA_EW_CLAMP,
  OPD_CUDA_EW_CLAMP_MIN,
  OPD_CUDA_EW_CLAMP_MAX,
  OPD_CUDA_EW_NEG,
  OPD_CUDA_EW_ABS,
  OPD_CUDA_EW_RELU,
  OPD_CUDA_EW_EXP,
  OPD_CUDA_EW_LOG,
  OPD_CUDA_EW_SQRT,
  OPD_CUDA_EW_RSQRT,
  OPD_CUDA_EW_SIGMOID,
  OPD_CUDA_EW_SILU, /* in1 / (1 + exp(-in1)) */
  OPD_CUDA_EW_TANH,
  OPD_CUDA_EW_SIN,
  OPD_CUDA_EW_COS,
  OPD_CUDA_EW_GELU,
  OPD_CUDA_EW_GELU_TANH,
  OPD_CUDA_EW_POW_ZERO,
  OPD_CUDA_EW_POW_HALF,
  OPD_CUDA_EW_POW_MHALF,
  OPD_CUDA_EW_POW_M1,
  OPD_CUDA_EW_POW_2,
  OPD_CUDA_EW_POW_3,
  OPD_CUDA_EW_POW_M2,
  OPD_CUDA_EW_POW_ANY, /* pow((double)x, c0d) */
  OPD_CUDA_EW_POW_INT, /* wrapping integer power, exponent c0i >= 0 */
} opd__cuda_ew_op;

int opd__cuda_launch_elementwise(int device, const opd__cuda_ew *d);

/* A reduction: output element o (contiguous, `nkept` kept dims) reduces the elements of the
 * `ndim - nkept` reduced dims (in their order: argmax's index is row-major over them). */
typedef enum opd__cuda_red_op {
  OPD_CUDA_RED_SUM,
  OPD_CUDA_RED_MEAN,
  OPD_CUDA_RED_AMAX,
  OPD_CUDA_RED_ARGMAX
} opd__cuda_red_op;
typedef struct opd__cuda_red {
  int op;
  int acc; /* 0: float, 1: double, 2: int64 */
  int in_dtype, out_dtype;
  int ndim, nkept;
  int64_t nout, nred;
  const void *in;
  void *out;
  int64_t sizes[OPD_CUDA_MAX_DIMS]; /* kept dims, then reduced dims */
  int64_t strides[OPD_CUDA_MAX_DIMS];
} opd__cuda_red;
int opd__cuda_launch_reduce(int device, const opd__cuda_red *d);

/* _softmax / _log_softmax over contiguous [outer, len, inner] (input and output). */
typedef struct opd__cuda_softmax_args {
  bool log;
  bool f64; /* accumulate in double (float64 input), else float */
  int in_dtype, out_dtype;
  int64_t outer, len, inner;
  const void *in;
  void *out;
} opd__cuda_softmax_args;
int opd__cuda_launch_softmax(int device, const opd__cuda_softmax_args *d);

/* native_layer_norm over contiguous rows of `cols`; weight/bias contiguous or NULL. */
typedef struct opd__cuda_layer_norm {
  int dtype;
  int64_t rows, cols;
  double eps;
  const void *in, *weight, *bias;
  void *out, *mean, *rstd;
} opd__cuda_layer_norm;
int opd__cuda_launch_layer_norm(int device, const opd__cuda_layer_norm *d);

/* index_select: out (contiguous, `ndim` dims of `sizes`) gathers self along `dim`. */
typedef struct opd__cuda_gather {
  int ndim, dim, index_dtype;
  int64_t elsize, numel, limit, index_stride;
  const void *self, *index;
  void *out;
  int *error; /* set when an index is out of range */
  int64_t sizes[OPD_CUDA_MAX_DIMS];
  int64_t self_strides[OPD_CUDA_MAX_DIMS];
} opd__cuda_gather;
int opd__cuda_launch_gather(int device, const opd__cuda_gather *d);

/* One matrix product, or a batch of them: C[b] = alpha * A[b] @ B[b] + beta * C[b], row-major
 * C (contiguous), A and B given by row/column strides in elements (for cuBLAS, a layout it
 * takes without copies: one of the strides is 1; cuda_kernels.c makes others contiguous). */
typedef struct opd__cuda_gemm {
  int dtype;
  int64_t batch, m, n, k;
  const void *a, *b;
  void *c;
  int64_t a_rs, a_cs, a_bs, b_rs, b_cs, b_bs; /* row, column, batch strides */
  double alpha, beta;                         /* floating dtypes (cuBLAS) */
  uint64_t alpha_u, beta_u; /* integer and bool dtypes (a plain kernel, wrapping) */
} opd__cuda_gemm;
int opd__cuda_launch_gemm(int device, const opd__cuda_gemm *d);

/* ---- conv.cu ---- */

/* One image's group of the plain convolution ([Note: Convolution as three products] in
 * kernels/meta/conv_meta.h), three spatial dims (the missing leading ones of size 1): im2col
 * (fold 0: col [icg * K, OUT] from x [icg, in...]) or col2im (fold 1: x = the sum of col's
 * entries that read each position), float32 (dtype 6) or float64 (dtype 7). */
typedef struct opd__cuda_im2col {
  int dtype, fold;
  int64_t icg;
  int64_t in[3], out[3], k[3], stride[3], pad[3], dil[3];
  void *x, *col;
} opd__cuda_im2col;
int opd__cuda_launch_im2col(int device, const opd__cuda_im2col *d);

#ifdef __cplusplus
}
#endif
#endif

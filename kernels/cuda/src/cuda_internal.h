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
  double c0d, c1d, c2d; /* scalar operands, for float/double compute */
  int64_t c0i, c1i;     /* for int64 compute */
  int *error;           /* device flag set by integer division by zero (may be NULL) */
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
  /* the pointwise math operators (cuda_pointwise.c): floating unary functions */
  OPD_CUDA_EW_ACOS,
  OPD_CUDA_EW_ASIN,
  OPD_CUDA_EW_ATAN,
  OPD_CUDA_EW_ACOSH,
  OPD_CUDA_EW_ASINH,
  OPD_CUDA_EW_ATANH,
  OPD_CUDA_EW_SINH,
  OPD_CUDA_EW_COSH,
  OPD_CUDA_EW_TAN,
  OPD_CUDA_EW_ERF,
  OPD_CUDA_EW_ERFC,
  OPD_CUDA_EW_ERFINV,
  OPD_CUDA_EW_LGAMMA,
  OPD_CUDA_EW_DIGAMMA,
  OPD_CUDA_EW_LOG1P,
  OPD_CUDA_EW_EXPM1,
  OPD_CUDA_EW_LOG2,
  OPD_CUDA_EW_LOG10,
  OPD_CUDA_EW_EXP2,
  OPD_CUDA_EW_RECIPROCAL,
  OPD_CUDA_EW_FRAC,
  OPD_CUDA_EW_ROUND_SCALED, /* rint(x * c0) / c0 */
  OPD_CUDA_EW_ROUND_COARSE, /* rint(x / c0) * c0 */
  OPD_CUDA_EW_NAN_TO_NUM,   /* NaN: c0, +inf: c1, -inf: c2 */
  /* rounding (integers unchanged), sign, bits, predicates (bool results) */
  OPD_CUDA_EW_FLOOR,
  OPD_CUDA_EW_CEIL,
  OPD_CUDA_EW_ROUND,
  OPD_CUDA_EW_TRUNC,
  OPD_CUDA_EW_SIGN,
  OPD_CUDA_EW_BITWISE_NOT,
  OPD_CUDA_EW_ISNAN,
  OPD_CUDA_EW_SIGNBIT,
  /* binary */
  OPD_CUDA_EW_ATAN2,
  OPD_CUDA_EW_FMOD,
  OPD_CUDA_EW_REMAINDER,
  OPD_CUDA_EW_HYPOT,
  OPD_CUDA_EW_COPYSIGN,
  OPD_CUDA_EW_XLOGY,
  OPD_CUDA_EW_POW_TENSOR, /* pow(in1, in2) (integers: ATen's powi) */
  OPD_CUDA_EW_BITWISE_AND,
  OPD_CUDA_EW_BITWISE_OR,
  OPD_CUDA_EW_BITWISE_XOR,
  OPD_CUDA_EW_FMAX,
  OPD_CUDA_EW_FMIN,
  OPD_CUDA_EW_LOGADDEXP,
  OPD_CUDA_EW_NE,
  OPD_CUDA_EW_LT,
  OPD_CUDA_EW_LE,
  OPD_CUDA_EW_GE,
  OPD_CUDA_EW_GT_SCALAR, /* in1 > c0 */
  OPD_CUDA_EW_LE_SCALAR,
  OPD_CUDA_EW_GE_SCALAR,
  OPD_CUDA_EW_NE_SCALAR,
  OPD_CUDA_EW_CLAMP_LO, /* clamp_min with a Scalar: a NaN on either side gives NaN */
  OPD_CUDA_EW_CLAMP_HI,
  /* ternary */
  OPD_CUDA_EW_ADDCMUL,      /* in1 + c0 * in2 * in3 */
  OPD_CUDA_EW_ADDCDIV,      /* in1 + c0 * in2 / in3 */
  OPD_CUDA_EW_LERP_SCALAR,  /* lerp(in1, in2, c0) */
  OPD_CUDA_EW_LERP_TENSOR,  /* lerp(in1, in2, in3) */
  OPD_CUDA_EW_CLAMP_TENSOR, /* clamp(in1, in2, in3) */
  /* activations (c0, c1, c2: their constants) and their backward operators (in1: the
   * gradient, in2: the forward's input or result) */
  OPD_CUDA_EW_HARDTANH,
  OPD_CUDA_EW_THRESHOLD,
  OPD_CUDA_EW_LEAKY_RELU,
  OPD_CUDA_EW_ELU,
  OPD_CUDA_EW_MISH,
  OPD_CUDA_EW_SOFTPLUS,
  OPD_CUDA_EW_HARDSWISH,
  OPD_CUDA_EW_HARDSIGMOID,
  OPD_CUDA_EW_GLU, /* in1 * sigmoid(in2) */
  OPD_CUDA_EW_THRESHOLD_BACKWARD,
  OPD_CUDA_EW_GELU_BACKWARD,
  OPD_CUDA_EW_GELU_TANH_BACKWARD,
  OPD_CUDA_EW_SILU_BACKWARD,
  OPD_CUDA_EW_SIGMOID_BACKWARD,
  OPD_CUDA_EW_TANH_BACKWARD,
  OPD_CUDA_EW_HARDSWISH_BACKWARD,
  OPD_CUDA_EW_HARDSIGMOID_BACKWARD,
  OPD_CUDA_EW_HARDTANH_BACKWARD,
  OPD_CUDA_EW_LEAKY_RELU_BACKWARD,
  OPD_CUDA_EW_ELU_BACKWARD,
  OPD_CUDA_EW_ELU_RESULT_BACKWARD,
  OPD_CUDA_EW_SOFTPLUS_BACKWARD,
  OPD_CUDA_EW_MISH_BACKWARD,
} opd__cuda_ew_op;

int opd__cuda_launch_elementwise(int device, const opd__cuda_ew *d);

/* A reduction: output element o (contiguous, `nkept` kept dims) reduces the elements of the
 * `ndim - nkept` reduced dims (in their order: argmax's index is row-major over them). */
typedef enum opd__cuda_red_op {
  OPD_CUDA_RED_SUM,
  OPD_CUDA_RED_MEAN,
  OPD_CUDA_RED_AMAX,
  OPD_CUDA_RED_ARGMAX,
  OPD_CUDA_RED_AMIN,
  OPD_CUDA_RED_ARGMIN,
  OPD_CUDA_RED_PROD,
  OPD_CUDA_RED_ANY, /* of elements read as 0 or 1 (nonzero) into int64 */
  OPD_CUDA_RED_ALL,
  OPD_CUDA_RED_NANSUM, /* a sum with NaN read as 0 */
  /* a thread per output, in double, as kernels/cpu/reduce_moments.c: */
  OPD_CUDA_RED_VAR, /* Welford's mean and M2; var = M2 / max(0, N - correction) */
  OPD_CUDA_RED_STD,
  OPD_CUDA_RED_NORM /* the vector norm of order `ord` */
} opd__cuda_red_op;
typedef struct opd__cuda_red {
  int op;
  int acc;      /* 0: float, 1: double, 2: int64 */
  bool nonzero; /* elements are read as 0 or 1 (their being non-zero) */
  int in_dtype, out_dtype;
  int ndim, nkept;
  int64_t nout, nred;
  const void *in;
  void *out;
  void *mean;                       /* var / std: the mean too, of out's dtype (or NULL) */
  double correction, ord;           /* var / std, norm */
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

/* ---- norm.cu ---- */

/* A vector operand: element i at data + i * stride elements of dtype (data NULL: absent). */
typedef struct opd__cuda_vec {
  void *data;
  int dtype;
  int64_t stride;
} opd__cuda_vec;

typedef enum opd__cuda_norm_kind {
  OPD_CUDA_NORM_BATCH,          /* native_batch_norm */
  OPD_CUDA_NORM_BATCH_BACKWARD, /* native_batch_norm_backward */
  OPD_CUDA_NORM_LAYER_BACKWARD, /* native_layer_norm_backward */
  OPD_CUDA_NORM_SOFTMAX_BACKWARD,
  OPD_CUDA_NORM_LOG_SOFTMAX_BACKWARD
} opd__cuda_norm_kind;

/* A normalization (or its backward operator) over contiguous operands of floating dtypes,
 * computed in double as the CPU kernels compute it. Its extents: batch norm (N, C, S); layer
 * norm rows n of c elements; softmax's backward (outer n, len c, inner s). */
typedef struct opd__cuda_norm {
  int kind;
  bool training;
  int64_t n, c, s;
  double momentum, eps;
  opd__cuda_vec x, g;   /* the input (or the forward's output), the incoming gradient */
  opd__cuda_vec weight; /* (batch norm: per channel; layer norm: per column) */
  opd__cuda_vec bias;
  opd__cuda_vec mean; /* running_mean (evaluation), save_mean, layer norm's mean */
  opd__cuda_vec stat; /* running_var (evaluation), save_invstd, layer norm's rstd */
  opd__cuda_vec running_mean, running_var; /* updated in training (batch norm) */
  opd__cuda_vec out[3];                    /* the results (absent: not asked for) */
} opd__cuda_norm;
int opd__cuda_launch_norm(int device, const opd__cuda_norm *d);

/* nll_loss_forward (one thread, the batch in order, as the CPU kernel) and nll_loss_backward
 * (a thread per sample, into a zeroed grad_input) over contiguous operands; targets of any
 * integer dtype, checked against [0, classes) unless ignore_index. */
typedef struct opd__cuda_nll {
  bool backward, per_sample, mean;
  int64_t batch, classes, ignore_index;
  opd__cuda_vec self, target, weight;
  opd__cuda_vec grad, total_weight; /* backward */
  opd__cuda_vec out, out_total;     /* forward: the loss and the total weight; backward: out */
  int *bad;                         /* set (with *bad_value) at a target out of range */
  int64_t *bad_value;
} opd__cuda_nll;
int opd__cuda_launch_nll(int device, const opd__cuda_nll *d);

/* embedding_dense_backward: the rows of grad (n x d, contiguous) added into the rows of the
 * weight's gradient that the n indices pick, in index order per column, in double (w and
 * count: zeroed scratch of num_weights * d and num_weights doubles), then stored to out. */
typedef struct opd__cuda_embedding_backward {
  int64_t n, d, num_weights, padding_idx;
  bool scale_grad_by_freq;
  opd__cuda_vec grad, indices, out;
  double *w, *count;
  int *bad; /* set at an index out of range */
} opd__cuda_embedding_backward;
int opd__cuda_launch_embedding_backward(int device, const opd__cuda_embedding_backward *d);

/* native_dropout in training: out (contiguous, the input's values) keeps each element with
 * probability p1m, scaled by `scale` (float arithmetic for the float dtypes, as the CPU
 * kernel), else 0; mask[i] says which. The draws are a hash of (seed, i): each element its
 * own counter-based stream. */
typedef struct opd__cuda_dropout {
  int dtype;
  int64_t n;
  double p1m, scale;
  uint64_t seed;
  void *out;
  unsigned char *mask;
} opd__cuda_dropout;
int opd__cuda_launch_dropout(int device, const opd__cuda_dropout *d);

/* ---- pool.cu ---- */

/* A pooling (or its backward operator) of `planes` contiguous planes of three spatial dims,
 * the geometry of kernels/meta/pool_meta.h (kind: its opd__pool_kind). */
typedef struct opd__cuda_pool {
  int kind, dtype;
  bool backward; /* src grad_output, dst grad_input (zeroed by the caller) */
  int64_t planes;
  int64_t in[3], out[3], k[3], stride[3], pad[3], dil[3];
  bool count_include_pad, has_divisor;
  int64_t divisor;
  const void *src;
  void *dst;
  int64_t *idx;        /* max forward: the indices written */
  const int64_t *gidx; /* max backward: the indices read */
  int *bad;            /* set when a read index is out of its plane */
} opd__cuda_pool;
int opd__cuda_launch_pool(int device, const opd__cuda_pool *d);

/* ---- index.cu ---- */

/* gather and the scatter operators ([Note: The order of scatter's writes] in
 * kernels/cpu/index_scatter.c): `outer` positions of index with dim held at 0 (sizes, and the
 * strides of index, other and self over them), each walking index's `len` elements along dim.
 * gather copies self's indexed element into other (the output); a scatter combines other's
 * element (src), or `value`, into self's with op (opd__reduce_op: 0 assign, 1 sum, 2 prod, 3
 * max, 4 min). Indices are int64, checked against `limit`. */
typedef struct opd__cuda_scatter {
  bool gather;
  int op, dtype, ndim;
  int64_t outer, len, limit, istride, sstride, tstride;
  const void *index;
  void *self, *other; /* other NULL: value */
  unsigned char value[8];
  int *bad; /* set (with *bad_value) at an out-of-range index */
  int64_t *bad_value;
  int64_t sizes[OPD_CUDA_MAX_DIMS];
  int64_t strides[3][OPD_CUDA_MAX_DIMS]; /* index, other, self */
} opd__cuda_scatter;
int opd__cuda_launch_scatter(int device, const opd__cuda_scatter *d);

/* flip, roll, tril and triu (kernels/cpu/index_shape.c): each element p of a contiguous output
 * of self's `sizes` reads self's element at a position the kind maps p to (kind: 0 a copy from
 * base with `strides`, negated along flipped dims; 1 roll by shift[d] along each dim; 2 roll of
 * the flattened tensor by shift[0]; 3 tril, 4 triu with `diagonal`, zeros elsewhere). */
typedef struct opd__cuda_shape {
  int kind, ndim, elsize;
  int64_t numel, base, diagonal;
  const void *src;
  void *dst;
  int64_t sizes[OPD_CUDA_MAX_DIMS], strides[OPD_CUDA_MAX_DIMS], shift[OPD_CUDA_MAX_DIMS];
} opd__cuda_shape;
int opd__cuda_launch_shape(int device, const opd__cuda_shape *d);

/* cumsum and cumprod (kernels/cpu/index_cum.c): `outer` positions of self with dim held at 0
 * (sizes, and the strides of self and of the output over them), each walking its `len`
 * elements along dim in order: each element converted to the output's dtype, accumulated in
 * double (a floating output) or wrapping int64, and each partial result stored. */
typedef struct opd__cuda_cum {
  bool prod;
  int self_dtype, out_dtype, ndim;
  int64_t outer, len, self_step, out_step;
  const void *self;
  void *out;
  int64_t sizes[OPD_CUDA_MAX_DIMS];
  int64_t strides[2][OPD_CUDA_MAX_DIMS]; /* self, out */
} opd__cuda_cum;
int opd__cuda_launch_cum(int device, const opd__cuda_cum *d);

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

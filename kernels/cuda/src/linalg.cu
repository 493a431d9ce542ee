/* linalg.cu: matrix products through cuBLAS (cublasGemmEx, cublasGemmStridedBatchedEx), with a
 * cuBLAS handle per (thread, device) bound to the current stream at each call, and a cuBLAS
 * workspace per (handle, stream).
 *
 * [Note: Row-major products in cuBLAS]
 * cuBLAS is column-major. A row-major C = A @ B is computed as the column-major
 * C^T = B^T @ A^T, which reads C's memory directly. An operand stored row-major (column
 * stride 1) is, read column-major, its own transpose: op N with ld = its row stride; one
 * stored column-major (row stride 1, e.g. a transposed view) is op T with ld = its column
 * stride. Transposed operands therefore cost no copy; cuda_kernels.c copies only operands
 * with neither stride 1. float16 and bfloat16 multiply on tensor cores with float
 * accumulation; float32 stays in full float32 (no TF32, PyTorch 1.13's default). Integer and
 * bool products, which cuBLAS lacks, take a plain kernel with the CPU kernel's wrapping uint64
 * arithmetic.
 *
 * [Note: cuBLAS workspaces]
 * cuBLAS kernels use a workspace, by default one per handle. A worker's handle is bound to
 * the stream of whichever session's job it runs (cublasSetStream), so products of two
 * sessions launched by one worker, on two streams, could run at once and share it. As
 * PyTorch does (cublasSetWorkspace in getCurrentCUDABlasHandle), each (handle, stream) pair
 * gets a workspace of its own, of the size cuBLAS recommends (32 MiB from sm_90 on, 4 MiB
 * before), from the caching allocator under that stream, and it is set after every
 * cublasSetStream (which resets the handle to its default workspace). The workspaces are
 * kept in one table under a mutex and freed when their stream is destroyed (a session's
 * end: opd__cuda_blas_stream_destroyed) or their handle is (its thread's end). When one
 * cannot be allocated the product runs without a workspace (cuBLAS then picks algorithms
 * that need none) rather than on a shared one.
 */
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <pthread.h>
#include <stdlib.h>

#include "cuda_internal.h"
#include "device_util.cuh"
#include "opd/cuda.h"
#include "opd/error.h"
#include "opd/memory.h"

namespace {

struct handles {
  cublasHandle_t h[OPD_CUDA_MAX_DEVICES];
};

pthread_key_t handles_key;
pthread_once_t handles_once = PTHREAD_ONCE_INIT;

/* ---- [Note: cuBLAS workspaces] ---- */

struct workspace {
  cublasHandle_t handle;
  cudaStream_t stream;
  int device;
  void *ptr;
  size_t size;
  workspace *next;
};

pthread_mutex_t workspaces_lock = PTHREAD_MUTEX_INITIALIZER;
workspace **workspaces; /* open hash by (handle, stream), chained through next */
size_t workspace_buckets, workspace_count;

size_t workspace_hash(cublasHandle_t h, cudaStream_t s, size_t buckets) {
  return (size_t)((((uintptr_t)h >> 4) ^ ((uintptr_t)s * 0x9E3779B97F4A7C15ull)) & (buckets - 1));
}

/* Inserts w (lock held); false when the table cannot grow. */
bool workspace_insert(workspace *w) {
  if (workspace_count >= workspace_buckets) {
    size_t nb = workspace_buckets ? workspace_buckets * 2 : 64;
    workspace **t = (workspace **)opd__calloc(nb, sizeof *t);
    if (!t) return false;
    for (size_t i = 0; i < workspace_buckets; i++)
      for (workspace *e = workspaces[i], *next; e; e = next) {
        next = e->next;
        size_t k = workspace_hash(e->handle, e->stream, nb);
        e->next = t[k];
        t[k] = e;
      }
    opd__free(workspaces);
    workspaces = t;
    workspace_buckets = nb;
  }
  size_t k = workspace_hash(w->handle, w->stream, workspace_buckets);
  w->next = workspaces[k];
  workspaces[k] = w;
  workspace_count++;
  return true;
}

/* The workspace of (h, s) on `device` (the device is current, s its current stream): *ptr
 * and *size, both 0 when none can be had. */
void workspace_for(int device, cublasHandle_t h, cudaStream_t s, void **ptr, size_t *size) {
  pthread_mutex_lock(&workspaces_lock);
  workspace *w = workspace_buckets ? workspaces[workspace_hash(h, s, workspace_buckets)] : nullptr;
  while (w && (w->handle != h || w->stream != s)) w = w->next;
  pthread_mutex_unlock(&workspaces_lock);
  if (!w) { /* only this thread uses h: nobody else adds this pair meanwhile */
    size_t want = (size_t)(opd_cuda_device_capability(device) >= 90 ? 32 : 4) << 20;
    void *p = opd__cuda_alloc(device, want);
    if (p && (w = (workspace *)opd__malloc(sizeof *w))) {
      *w = workspace{h, s, device, p, want, nullptr};
      pthread_mutex_lock(&workspaces_lock);
      bool in = workspace_insert(w);
      pthread_mutex_unlock(&workspaces_lock);
      if (!in) {
        opd__free(w);
        w = nullptr;
      }
    }
    if (!w && p) opd__cuda_free(device, p, want);
  }
  *ptr = w ? w->ptr : nullptr;
  *size = w ? w->size : 0;
}

/* Frees the workspaces of a handle (handle non-NULL) or of a stream. */
void workspaces_drop(cublasHandle_t handle, int device, cudaStream_t stream) {
  workspace *gone = nullptr;
  pthread_mutex_lock(&workspaces_lock);
  for (size_t i = 0; i < workspace_buckets; i++)
    for (workspace **link = &workspaces[i]; *link;) {
      workspace *w = *link;
      if (handle ? w->handle == handle : w->device == device && w->stream == stream) {
        *link = w->next;
        workspace_count--;
        w->next = gone;
        gone = w;
      } else {
        link = &w->next;
      }
    }
  pthread_mutex_unlock(&workspaces_lock);
  for (workspace *w = gone, *next; w; w = next) {
    next = w->next;
    opd__cuda_free(w->device, w->ptr, w->size);
    opd__free(w);
  }
}

void destroy_handles(void *p) {
  handles *hs = (handles *)p;
  for (int d = 0; d < OPD_CUDA_MAX_DEVICES; d++)
    if (hs->h[d]) {
      workspaces_drop(hs->h[d], d, nullptr);
      if (cudaSetDevice(d) == cudaSuccess) cublasDestroy(hs->h[d]);
    }
  opd__free(hs);
}

void make_key(void) {
  pthread_key_create(&handles_key, destroy_handles);
}

int cublas_error(int device, cublasStatus_t st, const char *what) {
  int rc = opd__cuda_check_launch(device, what); /* a sticky CUDA error behind it, if any */
  if (rc) return rc;
  return opd_error(st == CUBLAS_STATUS_ALLOC_FAILED ? OPD_ERESOURCE : OPD_EINTERNAL,
                   "CUDA device %d: %s failed: %s", device, what, cublasGetStatusString(st));
}

/* the calling thread's handle of `device` (the device is current) */
int handle_for(int device, cublasHandle_t *out) {
  pthread_once(&handles_once, make_key);
  handles *hs = (handles *)pthread_getspecific(handles_key);
  if (!hs) {
    if (!(hs = (handles *)opd__calloc(1, sizeof *hs)))
      return opd_error(OPD_ENOMEM, "out of memory for cuBLAS handles");
    if (pthread_setspecific(handles_key, hs)) {
      opd__free(hs);
      return opd_error(OPD_ENOMEM, "out of memory for cuBLAS handles");
    }
  }
  if (!hs->h[device]) {
    cublasStatus_t st = cublasCreate(&hs->h[device]);
    if (st != CUBLAS_STATUS_SUCCESS) {
      hs->h[device] = nullptr;
      return cublas_error(device, st, "cublasCreate");
    }
  }
  *out = hs->h[device];
  return 0;
}

/* op and leading dimension of an operand of `rows` x `cols` read column-major as its
 * transpose ([Note: Row-major products in cuBLAS]) */
void layout(int64_t rows, int64_t cols, int64_t rs, int64_t cs, cublasOperation_t *op,
            int64_t *ld) {
  if (cs == 1 && (rows == 1 || rs >= cols)) {
    *op = CUBLAS_OP_N;
    *ld = rows == 1 ? (cols > 1 ? cols : 1) : rs;
  } else {
    *op = CUBLAS_OP_T;
    *ld = cols == 1 ? (rows > 1 ? rows : 1) : cs;
  }
}

/* one thread per element of C: integers (and bool) as wrapping uint64, as the CPU kernel */
__global__ void gemm_int(opd__cuda_gemm d) {
  const int es = opd_cuda::elsize(d.dtype);
  const int64_t total = d.batch * d.m * d.n;
  for (int64_t e = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; e < total;
       e += (int64_t)gridDim.x * blockDim.x) {
    const int64_t q = e / (d.m * d.n), i = e % (d.m * d.n) / d.n, j = e % d.n;
    const char *a = (const char *)d.a + (q * d.a_bs + i * d.a_rs) * es;
    const char *b = (const char *)d.b + (q * d.b_bs + j * d.b_cs) * es;
    uint64_t acc = 0;
    for (int64_t p = 0; p < d.k; p++)
      acc += (uint64_t)opd_cuda::load<int64_t>(a + p * d.a_cs * es, d.dtype) *
             (uint64_t)opd_cuda::load<int64_t>(b + p * d.b_rs * es, d.dtype);
    char *c = (char *)d.c + e * es;
    uint64_t r = d.alpha_u * acc;
    if (d.beta != 0) r += d.beta_u * (uint64_t)opd_cuda::load<int64_t>(c, d.dtype);
    opd_cuda::store<int64_t>(c, d.dtype, (int64_t)r);
  }
}

} // namespace

extern "C" void opd__cuda_blas_stream_destroyed(int device, void *stream) {
  workspaces_drop(nullptr, device, (cudaStream_t)stream);
}

extern "C" int opd__cuda_launch_gemm(int device, const opd__cuda_gemm *d) {
  int rc = opd__cuda_use_device(device);
  if (rc || d->m == 0 || d->n == 0 || d->batch == 0) return rc;
  if (d->dtype != 5 && d->dtype != 6 && d->dtype != 7 && d->dtype != 15) {
    int64_t n = d->batch * d->m * d->n, blocks = (n + 255) / 256;
    gemm_int<<<(unsigned)(blocks < 65536 ? blocks : 65536), 256, 0,
               (cudaStream_t)opd_cuda_current_stream(device)>>>(*d);
    return opd__cuda_check_launch(device, "an integer matrix product kernel launch");
  }
  cublasHandle_t h;
  if ((rc = handle_for(device, &h))) return rc;
  cudaStream_t stream = (cudaStream_t)opd_cuda_current_stream(device);
  cublasStatus_t st = cublasSetStream(h, stream);
  if (st != CUBLAS_STATUS_SUCCESS) return cublas_error(device, st, "cublasSetStream");
  void *workspace;
  size_t workspace_size;
  workspace_for(device, h, stream, &workspace, &workspace_size);
  st = cublasSetWorkspace(h, workspace, workspace_size);
  if (st != CUBLAS_STATUS_SUCCESS) return cublas_error(device, st, "cublasSetWorkspace");
  cudaDataType_t t;
  cublasComputeType_t compute = CUBLAS_COMPUTE_32F;
  switch (d->dtype) {
  case 5: t = CUDA_R_16F; break;
  case 15: t = CUDA_R_16BF; break;
  case 7:
    t = CUDA_R_64F;
    compute = CUBLAS_COMPUTE_64F;
    break;
  default: t = CUDA_R_32F; break;
  }
  float alpha_f = (float)d->alpha, beta_f = (float)d->beta;
  const void *alpha = compute == CUBLAS_COMPUTE_64F ? (const void *)&d->alpha : &alpha_f;
  const void *beta = compute == CUBLAS_COMPUTE_64F ? (const void *)&d->beta : &beta_f;
  /* C^T (n x m) = B^T (n x k) @ A^T (k x m) */
  cublasOperation_t op_b, op_a;
  int64_t ld_b, ld_a;
  layout(d->k, d->n, d->b_rs, d->b_cs, &op_b, &ld_b);
  layout(d->m, d->k, d->a_rs, d->a_cs, &op_a, &ld_a);
  int m = (int)d->n, n = (int)d->m, k = (int)d->k;
  if (d->batch == 1) {
    st = cublasGemmEx(h, op_b, op_a, m, n, k, alpha, d->b, t, (int)ld_b, d->a, t, (int)ld_a, beta,
                      d->c, t, m, compute, CUBLAS_GEMM_DEFAULT);
  } else {
    st = cublasGemmStridedBatchedEx(h, op_b, op_a, m, n, k, alpha, d->b, t, (int)ld_b, d->b_bs,
                                    d->a, t, (int)ld_a, d->a_bs, beta, d->c, t, m, d->m * d->n,
                                    (int)d->batch, compute, CUBLAS_GEMM_DEFAULT);
  }
  if (st != CUBLAS_STATUS_SUCCESS) return cublas_error(device, st, "cublasGemmEx");
  return opd__cuda_check_launch(device, "cublasGemmEx");
}

/* opd/cuda_nvrtc.h: CUDA kernels compiled at run time from source with NVRTC and
 * registered as boxed kernels (the daemon's cuda_register admin command, docs/ADMIN.md).
 *
 * [Note: NVRTC kernels]
 * An administrator gives CUDA C source, the name of a __global__ entry, an operator schema
 * and a launch rule. The schema takes Tensor arguments (at least one; not optional, not
 * lists), then optionally float and int arguments, and returns one Tensor. The source is
 * compiled with NVRTC for the devices' architecture (--gpu-architecture=sm_XY, or
 * compute_XY PTX of the lowest one when the devices differ), loaded with
 * cudaLibraryLoadData, and its entry found with cudaLibraryGetKernel.
 *
 * The kernel sees raw pointers, so their element types are part of its signature: the admin
 * declares the dtype of each Tensor argument and of the result (opd_nvrtc_dtypes_parse;
 * float32 for all when nothing is declared), and they are recorded with the kernel. A call:
 *   - needs every Tensor argument of its declared dtype (a float16 tensor handed to a
 *     kernel written for float * would be read and written past its allocation), on the
 *     same CUDA device, contiguous, and with the sizes of the first;
 *   - allocates the output with the first Tensor argument's sizes and device and the
 *     declared result dtype;
 *   - launches, on the calling thread's current stream of the device:
 *       elementwise:  entry(out, in0, in1, ..., s0, s1, ..., long long n)
 *                     n = numel; ceil(n / 256) blocks of 256 threads
 *       rows:         entry(out, in0, in1, ..., s0, s1, ..., long long rows, long long cols)
 *                     cols = the last dimension's size (1 for a 0-dim tensor),
 *                     rows = numel / cols; one block of 256 threads per row
 *     where a float argument is passed as `float` and an int as `long long`; nothing is
 *     launched when numel is 0;
 *   - reports a launch error as the call's error (an error the kernel raises while it
 *     runs comes back from the next synchronization, as for any CUDA kernel).
 * Without a CUDA device everything here fails with OPD_EUNAVAILABLE ("CUDA unavailable:
 * <reason>").
 */
#ifndef OPD_CUDA_NVRTC_H
#define OPD_CUDA_NVRTC_H

#include <stddef.h>
#include <stdint.h>

#include "opd/dispatcher.h"
#include "opd/schema.h"

#ifdef __cplusplus
extern "C" {
#endif

#define OPD_NVRTC_MAX_SOURCE (256 * 1024) /* bytes of CUDA C source */
#define OPD_NVRTC_MAX_ENTRY  255          /* bytes of the entry's name */
#define OPD_NVRTC_MAX_DTYPES 1024         /* bytes of a dtype declaration */

typedef enum opd_nvrtc_launch { OPD_NVRTC_ELEMENTWISE, OPD_NVRTC_ROWS } opd_nvrtc_launch;

typedef struct opd_nvrtc_kernel opd_nvrtc_kernel;

/* The dtypes of an NVRTC kernel's pointers: its Tensor arguments' (the first ntensors
 * arguments of its schema) and its result's (opd_dtype values). */
typedef struct opd_nvrtc_dtypes {
  uint32_t ntensors;
  int8_t args[OPD_SCHEMA_MAX_ARGS];
  int8_t result;
} opd_nvrtc_dtypes;

/* The checks of the inputs, in every build: `source` is 1 to OPD_NVRTC_MAX_SOURCE bytes
 * (len) without NUL, `entry` an identifier of at most OPD_NVRTC_MAX_ENTRY characters,
 * `schema` fits the rule above, and `dtypes` (at most OPD_NVRTC_MAX_DTYPES bytes) declares
 * the dtypes of its tensors (names are opd's, "float16", or c10's, "Half"):
 *   NULL or ""                float32 for every Tensor argument and the result;
 *   "float16"                 that dtype for every Tensor argument and the result;
 *   "float16, int64 -> bool"  one per Tensor argument, in order, then "->" and the result's.
 * 0 with *types, or OPD_EINVAL with a message saying what is wrong. */
int opd_nvrtc_check(const char *source, size_t len, const char *entry, const opd_schema *schema,
                    const char *dtypes, opd_nvrtc_dtypes *types);

/* The checks of a call's Tensor arguments a[0 .. d->ntensors) against the declared dtypes
 * and the rules above (dtype, CUDA, one device, contiguous, the first one's sizes), in
 * every build; `op` names the operator in the message. 0, or OPD_EINVAL. */
int opd_nvrtc_check_call(const opd_nvrtc_dtypes *d, const opd_ivalue *a, const char *op);

/* Checks the inputs (opd_nvrtc_check), then compiles
 * `source`, loads it and finds the entry. 0 with *out; or OPD_EINVAL (bad input; a compile
 * error, with the compiler's log verbatim in *log, opd__malloc'ed, which the caller frees with
 * opd__free), OPD_EUNAVAILABLE (no device), OPD_ENOMEM, OPD_EINTERNAL (a CUDA error loading it).
 * *log is NULL unless compiling failed. */
int opd_nvrtc_kernel_create(const char *source, size_t len, const char *entry,
                            const opd_schema *schema, opd_nvrtc_launch launch, const char *dtypes,
                            opd_nvrtc_kernel **out, char **log);
/* The boxed kernel to register at the CUDA key; its data is k (k must outlive the
 * registration). */
opd_kernel opd_nvrtc_kernel_boxed(opd_nvrtc_kernel *k);
/* Waits for the devices' work, unloads the code and frees k: only once no registration
 * uses it (after its deregistration returned). NULL is a no-op. */
void opd_nvrtc_kernel_free(opd_nvrtc_kernel *k);

/* [Note: Generated functions]
 * Code opd writes itself (the graphs' fused pointwise programs, graph/src/plan/fused_cuda.c) is
 * compiled the same way but launched by its writer, not registered: one __global__ entry
 * taking one struct by value (at most OPD_NVRTC_MAX_PARAMS bytes), launched with a 1-D
 * grid of 256-thread blocks (at most 65535 x 8 blocks: the code loops over the elements
 * with the grid's stride) on the device's current stream. */
#define OPD_NVRTC_MAX_PARAMS 4096
typedef struct opd_nvrtc_function opd_nvrtc_function;

/* Compiles `source` (NUL-terminated) to a cubin for compute capability `capability` (90:
 * sm_90) without loading it, so that generated code can be checked where no device is:
 * 0 with the image (*image, *size; opd__malloc'ed, the caller frees), OPD_EINVAL with the
 * compiler's log in *log (opd__malloc'ed: opd__free) when it does not compile, OPD_EUNAVAILABLE in
 * a build without CUDA. */
int opd_nvrtc_compile_cubin(const char *source, const char *entry, int capability, void **image,
                            size_t *size, char **log);
/* Compiles `source` for the devices (as opd_nvrtc_kernel_create does) and loads `entry`:
 * 0 with *out, or the errors of opd_nvrtc_kernel_create. */
int opd_nvrtc_function_create(const char *source, const char *entry, opd_nvrtc_function **out,
                              char **log);
/* Launches f on `device`'s current stream for n elements with the parameter struct
 * params[0 .. size). 0 or the launch error (a sticky one marks the device unhealthy). */
int opd_nvrtc_function_launch(const opd_nvrtc_function *f, int device, const void *params,
                              size_t size, int64_t n);
/* Waits for the devices' work, unloads f and frees it. NULL is a no-op. */
void opd_nvrtc_function_free(opd_nvrtc_function *f);

/* The NVRTC that compiles, for keys of compiled code (a newer one may compile the same
 * source differently): "nvrtc=MAJOR.MINOR", "nvrtc=unknown" when it does not say, or
 * "nvrtc=none (built without CUDA)". A static string. */
const char *opd_nvrtc_version(void);

#ifdef __cplusplus
}
#endif
#endif

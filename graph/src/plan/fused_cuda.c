/* fused_cuda.c: fused pointwise programs on CUDA: the program written as CUDA C++ source
 * (opd__pw_cuda_source), compiled with NVRTC by the group's first fused run (decisions.c),
 * and launched on the bound operands (opd__pw_cuda_run).
 *
 * [Note: Fused programs on CUDA]
 * The program is the CPU interpreter's ([Note: Fused pointwise programs] in
 * fused_codegen.c), written out: one thread per element of the iteration space, in a loop
 * with the grid's stride; each thread finds its offset in every operand from the coalesced
 * sizes and strides (opd__pw_bind, the same binding the CPU run uses), loads into float
 * registers, runs the instructions as straight-line code and stores. The offsets cost no
 * division where the operands coalesce to one dimension (every contiguous group, and one
 * broadcasting a scalar): element i is at i times each stride. Otherwise the index is split
 * dimension by dimension in 32-bit arithmetic while the space has at most 2^32 - 1
 * elements (each size then fits too), and in 64-bit arithmetic past that: a GPU has no
 * 64-bit integer divider, and the compiler's emulation of one costs dozens of instructions
 * per dimension and element, which would make a memory-bound program compute-bound. The
 * branch is uniform across a launch. The operations'
 * formulas are the interpreter's ([Note: One formula per operation] in pw_formulas.h) with
 * the CUDA kernels' functions (kernels/cuda/src/elementwise.cu: expf, tanhf, erff of CUDA's
 * math library; the prelude makes opd__expf and opd__tanhf those), so the numerics check of
 * the first run compares like with like; immediates and constants are written as their exact
 * bits (pw_source.c; __int_as_float, __longlong_as_double). Everything the program needs arrives in
 * one struct passed by value: the element count, the coalesced sizes, and per operand its base
 * address and strides, each an 8-byte field (a layout host and device agree on without
 * padding rules), so a program of at most OPD__PW_CUDA_MAX_OPERANDS operands fits a launch's
 * parameter space ([Note: Generated functions] in opd/cuda_nvrtc.h). A group with more runs
 * unfused. Without a device, CI compiles for sm_90 the source of a chain through every
 * instruction (tests/test_graph_cuda.c) and of every group of the graph fixture, and runs
 * these and random programs on the host against the interpreter, with the launch's own
 * parameters ([Note: The CUDA source run on the host] in tests/test_graph_cuda_host.c).
 */
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "opd/cuda_nvrtc.h"
#include "opd/error.h"
#include "opd/graph_exec.h"
#include "plan/plan.h"

/* The generator's version: bump it with any change to the source it writes (the prelude,
 * the formulas, the parameters' layout, the operand limit), so that graphs compiled and
 * cached with the old source are not found by the new key (opd_graph_codegen_id). */
#define OPD__PW_CUDA_VERSION 4

#define OPD__STR_(x) #x
#define OPD__STR(x)  OPD__STR_(x)

const char *opd_graph_cuda_codegen_id(void) {
  return "opd-fused-cuda/" OPD__STR(OPD__PW_CUDA_VERSION) " operands=" OPD__STR(
      OPD__PW_CUDA_MAX_OPERANDS) " f32";
}

/* The parameters' layout, field by field as the source declares it. */
typedef struct cuda_operand {
  uint64_t base;
  int64_t is_bool; /* bool elements (one byte, 0 or 1), else float32 */
  int64_t strides[OPD__PW_MAX_DIMS];
} cuda_operand;
typedef struct cuda_params {
  int64_t numel, ndim;
  int64_t sizes[OPD__PW_MAX_DIMS];
  cuda_operand ops[OPD__PW_CUDA_MAX_OPERANDS];
} cuda_params;
_Static_assert(sizeof(cuda_params) <= OPD_NVRTC_MAX_PARAMS, "fits one launch");
_Static_assert(sizeof(cuda_params) == OPD__PW_CUDA_PARAMS_SIZE, "plan.h's size is this layout's");

/* What every program declares: the parameters (cuda_params with the program's operand
 * count), what the formulas name that CUDA spells otherwise, and its loads and stores. */
static const char prelude[] =
    "struct opd_operand {\n"
    "  unsigned long long base;\n"
    "  long long is_bool;\n"
    "  long long strides[%d];\n"
    "};\n"
    "struct opd_params {\n"
    "  long long numel, ndim;\n"
    "  long long sizes[%d];\n"
    "  opd_operand ops[%u];\n"
    "};\n"
    "__device__ __forceinline__ float opd_f32(unsigned u) { return __int_as_float((int)u); }\n"
    "__device__ __forceinline__ float opd__expf(float x) { return expf(x); }\n"
    "__device__ __forceinline__ float opd__tanhf(float x) { return tanhf(x); }\n"
    "#ifndef NAN\n"
    "#define NAN __int_as_float(0x7fffffff)\n"
    "#endif\n"
    "__device__ __forceinline__ double opd_f64(unsigned long long u) {\n"
    "  return __longlong_as_double((long long)u);\n"
    "}\n"
    "__device__ __forceinline__ float opd_load(const opd_operand &o, long long off) {\n"
    "  return o.is_bool ? (((const unsigned char *)o.base)[off] ? 1.0f : 0.0f)\n"
    "                   : ((const float *)o.base)[off];\n"
    "}\n"
    "__device__ __forceinline__ void opd_store(const opd_operand &o, long long off, float v) {\n"
    "  if (o.is_bool)\n"
    "    ((unsigned char *)o.base)[off] = v != 0.0f;\n"
    "  else\n"
    "    ((float *)o.base)[off] = v;\n"
    "}\n"
    "/* the offsets of element i in the first n operands, the index split in I's arithmetic */\n"
    "template <typename I>\n"
    "__device__ __forceinline__ void opd_offsets(const opd_params &a, long long i, unsigned n,\n"
    "                                            long long *off) {\n"
    "  I rest = (I)i;\n"
    "  for (unsigned k = 0; k < n; k++) off[k] = 0;\n"
    "  for (int d = (int)a.ndim - 1; d >= 0; d--) {\n"
    "    const I size = (I)a.sizes[d], idx = rest %% size;\n"
    "    rest /= size;\n"
    "    for (unsigned k = 0; k < n; k++) off[k] += (long long)idx * a.ops[k].strides[d];\n"
    "  }\n"
    "}\n"
    "#ifndef OPD_INDEX32_MAX\n"
    "#define OPD_INDEX32_MAX 0xffffffffll\n"
    "#endif\n"
    "extern \"C\" __global__ void " OPD__PW_CUDA_ENTRY "(const opd_params a) {\n"
    "  const long long step = (long long)gridDim.x * blockDim.x;\n"
    "  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < a.numel;\n"
    "       i += step) {\n"
    "    long long off[%u];\n"
    "    if (a.ndim == 1)\n"
    "      for (unsigned k = 0; k < %uu; k++) off[k] = i * a.ops[k].strides[0];\n"
    "    else if (a.numel <= OPD_INDEX32_MAX)\n"
    "      opd_offsets<unsigned>(a, i, %uu, off);\n"
    "    else\n"
    "      opd_offsets<unsigned long long>(a, i, %uu, off);\n";

/* One instruction as a block of straight-line code. */
static int instruction(opd__sbuf *sb, const opd__pw_program *p, const opd__pw_instr *ins) {
  if (ins->op == OPD__PW_LOAD) {
    opd__sbuf_printf(sb, "    r%u = opd_load(a.ops[%u], off[%u]);\n", (unsigned)ins->dst,
                     (unsigned)ins->aux, (unsigned)ins->aux);
    return 0;
  }
  if (ins->op == OPD__PW_STORE) {
    unsigned k = p->nloads + ins->aux;
    opd__sbuf_printf(sb, "    opd_store(a.ops[%u], off[%u], r%u);\n", k, k, (unsigned)ins->src[0]);
    return 0;
  }
  return opd__pw_source_compute(sb, ins);
}

int opd__pw_cuda_source(const opd__pw_program *p, opd__sbuf *sb) {
  uint32_t nops = p->nloads + p->nstores;
  if (nops > OPD__PW_CUDA_MAX_OPERANDS)
    return opd_error(OPD_EINVAL, "a fused CUDA program reads and writes %u tensors, past %d", nops,
                     OPD__PW_CUDA_MAX_OPERANDS);
  uint32_t n = nops ? nops : 1;
  opd__sbuf_printf(sb, prelude, OPD__PW_MAX_DIMS, OPD__PW_MAX_DIMS, n, n, nops, nops, nops);
  for (uint32_t r = 0; r < p->nregs; r++) opd__sbuf_printf(sb, "    float r%u = 0.0f;\n", r);
  int rc = 0;
  for (uint32_t k = 0; k < p->ncode && rc == 0; k++) rc = instruction(sb, p, &p->code[k]);
  opd__sbuf_printf(sb, "  }\n}\n");
  if (rc == 0 && sb->failed) rc = opd_error(OPD_ENOMEM, "out of memory writing a CUDA program");
  return rc;
}

int opd__pw_cuda_params(const opd__pw_program *p, opd_tensor *const *inputs,
                        opd_tensor *const *outputs, void *params, size_t *size) {
  uint32_t nops = p->nloads + p->nstores;
  if (nops > OPD__PW_CUDA_MAX_OPERANDS)
    return opd_error(OPD_EINVAL, "a fused CUDA program reads and writes %u tensors, past %d", nops,
                     OPD__PW_CUDA_MAX_OPERANDS);
  opd__pw_operand ops[nops ? nops : 1];
  opd__pw_binding b = {.ops = ops};
  int rc = opd__pw_bind(p, inputs, outputs, &b);
  if (rc) return rc;
  cuda_params *a = params;
  a->numel = p->numel;
  a->ndim = b.ndim;
  memcpy(a->sizes, b.sizes, sizeof a->sizes);
  for (uint32_t k = 0; k < nops; k++) {
    a->ops[k].base = (uint64_t)(uintptr_t)ops[k].base;
    a->ops[k].is_bool = ops[k].dtype == OPD_BOOL;
    memcpy(a->ops[k].strides, ops[k].strides, sizeof a->ops[k].strides);
  }
  *size = offsetof(cuda_params, ops) + (size_t)nops * sizeof(cuda_operand);
  return 0;
}

int opd__pw_cuda_run(const opd__pw_program *p, const struct opd_nvrtc_function *fn,
                     opd_tensor *const *inputs, opd_tensor *const *outputs) {
  if (p->numel == 0) return 0;
  cuda_params a;
  size_t size = 0;
  int rc = opd__pw_cuda_params(p, inputs, outputs, &a, &size);
  if (rc) return rc;
  int device = opd_tensor_device(p->nstores ? outputs[0] : inputs[0]).index;
  return opd_nvrtc_function_launch(fn, device < 0 ? 0 : device, &a, size, p->numel);
}

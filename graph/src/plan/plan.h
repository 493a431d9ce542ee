/* plan.h: the lowered plan of a compiled graph (internal to the graph library): fused
 * pointwise groups and their programs, planned buffers, and the steps of a run
 * ([Note: The lowered plan] in lower.c). */
#ifndef OPD_GRAPH_PLAN_H
#define OPD_GRAPH_PLAN_H

#include <stdbool.h>
#include <stdint.h>

#include "ir/graph_internal.h"
#include "ir/sbuf.h"
#include "plan/pw_formulas.h"

/* Limits of a fused program ([Note: Fused pointwise programs] in fused_codegen.c). */
#define OPD__PW_TILE            512 /* elements per register: 2 KiB of float32 */
#define OPD__PW_MAX_REGS        24
#define OPD__PW_MAX_DIMS        8
#define OPD__PW_MAX_MEMBERS     64
/* Programs of this many elements store with non-temporal stores ([Note: Streaming the stores
 * of large programs] in fused_run.c): 32 MiB of float32, the L3 of many machines. */
#define OPD__PW_STREAM_ELEMENTS ((int64_t)8 << 20)

/* The instructions of a fused program: registers hold OPD__PW_TILE float32 values (bool
 * values as 0 and 1). Operands are registers or immediates. The computing opcodes are
 * pw_formulas.h's ([Note: One formula per operation]). */
typedef enum opd__pw_opcode {
  OPD__PW_LOAD,  /* dst = loads[aux] */
  OPD__PW_STORE, /* stores[aux] = src0 */
#define OPD__PW_OPCODE(op, name, arity, result, expr) OPD__PW_##op,
  OPD__PW_FORMULAS(OPD__PW_OPCODE)
#undef OPD__PW_OPCODE
      OPD__PW_NUM_OPS
} opd__pw_opcode;

typedef struct opd__pw_instr {
  uint8_t op;
  uint8_t dst;
  uint8_t nsrc;
  uint8_t imm_mask; /* bit i: operand i is imm[i], not register src[i] */
  uint8_t src[3];
  uint32_t aux; /* LOAD / STORE: the load or store */
  float imm[3];
  double c[2]; /* the operation's constants (alpha, exponent, bounds, fill value) */
} opd__pw_instr;

/* How a geometry (sizes, strides, offset) is carried from a value to the iteration space:
 * broadcast to sizes, permuted, viewed as sizes (PyTorch's computeStride). */
typedef enum opd__geo_kind { OPD__GEO_BROADCAST, OPD__GEO_PERMUTE, OPD__GEO_VIEW } opd__geo_kind;
typedef struct opd__geo_step {
  uint8_t kind;
  uint8_t ndim;
  uint8_t perm[OPD__PW_MAX_DIMS];
  int64_t sizes[OPD__PW_MAX_DIMS];
} opd__geo_step;

typedef struct opd__geo {
  int ndim;
  int64_t sizes[OPD__PW_MAX_DIMS], strides[OPD__PW_MAX_DIMS];
  int64_t offset;
} opd__geo;

/* A tensor a fused program reads: a graph value or a constant, carried to the iteration
 * space by steps[first_step .. first_step + nsteps). */
typedef struct opd__pw_load {
  uint32_t value;       /* UINT32_MAX for a constant */
  opd_tensor *constant; /* borrowed from the graph */
  uint32_t first_step, nsteps;
} opd__pw_load;

/* A value a fused program writes: a new contiguous tensor, element i of the iteration space
 * at offset sum(index_k * strides[k]). */
typedef struct opd__pw_store {
  uint32_t value;
  int64_t strides[OPD__PW_MAX_DIMS];
} opd__pw_store;

typedef struct opd__pw_program {
  int ndim; /* the iteration space */
  int64_t sizes[OPD__PW_MAX_DIMS];
  int64_t numel;
  opd__pw_instr *code;
  uint32_t ncode, nregs;
  opd__pw_load *loads;
  uint32_t nloads;
  opd__pw_store *stores;
  uint32_t nstores;
  opd__geo_step *steps;
  uint32_t nsteps;
} opd__pw_program;

/* A program's operands bound to tensors for a run: loads then stores, each with its strides
 * (elements) over the iteration space after coalescing (fused_run.c). */
typedef struct opd__pw_operand {
  char *base;
  int8_t dtype;
  int64_t strides[OPD__PW_MAX_DIMS];
} opd__pw_operand;
typedef struct opd__pw_binding {
  int ndim;
  int64_t sizes[OPD__PW_MAX_DIMS];
  opd__pw_operand *ops; /* nloads + nstores, the caller's */
} opd__pw_binding;

typedef struct opd__group {
  uint32_t *members; /* pointwise nodes, in graph order */
  uint32_t nmembers;
  uint32_t *nodes; /* members and the views between them, in graph order: the unfused run */
  uint32_t nnodes;
  uint32_t *after; /* those views used outside the group: run after the program, on what it
                      stored */
  uint32_t nafter;
  uint32_t ncompute; /* kernels of the unfused run */
  opd__pw_program prog;
} opd__group;

typedef enum opd__step_kind { OPD__STEP_NODE, OPD__STEP_GROUP } opd__step_kind;

typedef struct opd__step {
  uint8_t kind;
  bool kernel;                /* a NODE that launches a kernel (not a view) */
  uint32_t index;             /* node or group */
  uint32_t first_free, nfree; /* values released once the step ran */
} opd__step;

/* A unit of the schedule: a node that is in no group, or a group. */
typedef struct opd__unit {
  uint8_t kind; /* opd__step_kind */
  uint32_t index;
} opd__unit;

typedef struct opd__plan opd__plan;
struct opd__plan {
  opd__unit *order; /* the schedule */
  uint32_t norder;
  uint32_t *last_use; /* per value: the schedule index of its last reader (UINT32_MAX none) */
  opd__group *groups;
  uint32_t ngroups;
  int32_t *group_of; /* per node: its group, -1 */
  opd__step *steps;
  uint32_t nsteps;
  uint32_t *frees;
  uint32_t nfrees;
  int32_t *buffer_of; /* per value: its planned buffer, -1 */
  uint64_t *buffer_bytes;
  int8_t *buffer_dtype; /* per buffer: the dtype of every value planned in it */
  uint32_t nbuffers;
  uint64_t planned_bytes, unplanned_bytes; /* what buffer_plan saved: in buffers, summed */
  uint32_t kernels;                        /* with every group fused */
};

/* The plan of a compilation (c->plan), made empty once. */
struct opd__compile;
int opd__plan_new(struct opd__compile *c);
/* The order units run in (plan->order), made once: a stable topological order of the
 * kernels, groups and views ([Note: The lowered plan] in lower.c). */
int opd__plan_schedule(struct opd__compile *c);
void opd__plan_free(opd__plan *p);
/* Appends the plan (groups, buffers, steps) to the IR text. */
void opd__plan_print(const opd__plan *p, const opd_graph *g, opd__sbuf *sb);

/* ---- fused programs (fused_codegen.c, fused_run.c) ---- */

/* Builds the program of a group (members in graph order): 0, or OPD_EINVAL when it cannot
 * be fused (the reason in opd_last_error()). `dry`: only whether it can. */
int opd__pw_compile(const opd_graph *g, const uint32_t *members, uint32_t n, bool dry,
                    opd__pw_program *out);
void opd__pw_program_free(opd__pw_program *p);
/* A program compiled to C (fused_c.c): computes n elements of a tile, in[k] the tile of
 * load k and out[j] that of store j, none overlapping another. */
typedef void (*opd__pw_tile_fn)(const float *const *in, float *const *out, int64_t n);
/* Runs a program: loads[i] reads inputs[i], stores[i] writes outputs[i] (contiguous, made
 * by the caller), through fn (the program compiled to C) or, when NULL, the interpreter.
 * 0, or OPD_EINVAL when an input's layout cannot be carried to the iteration space (the
 * caller then runs the group unfused). */
int opd__pw_run(const opd__pw_program *p, opd__pw_tile_fn fn, opd_tensor *const *inputs,
                opd_tensor *const *outputs);
/* The operands of a run (b->ops: nloads + nstores of them), shared by the CPU and CUDA
 * runs: 0, or OPD_EINVAL as opd__pw_run. */
int opd__pw_bind(const opd__pw_program *p, opd_tensor *const *inputs, opd_tensor *const *outputs,
                 opd__pw_binding *b);

/* Writes computing instruction ins as a block of source that sets its register to its
 * formula, as text ([Note: One formula per operation]; pw_source.c; the prelude defines
 * opd_f32 and opd_f64): 0, or OPD_EINTERNAL when ins computes nothing. */
int opd__pw_source_compute(opd__sbuf *sb, const opd__pw_instr *ins);

/* ---- fused programs as C (fused_c.c, [Note: The C tier of fused programs] in c_tier.c) ---- */

#define OPD__PW_C_ENTRY        "opd_fused_tile"
/* The most loads and stores of a program compiled to C: each has a tile of the run's
 * registers. */
#define OPD__PW_C_MAX_OPERANDS OPD__PW_MAX_REGS
/* The C source of a program (entry OPD__PW_C_ENTRY, an opd__pw_tile_fn): 0, or OPD_EINVAL
 * when it has more than OPD__PW_C_MAX_OPERANDS loads and stores, OPD_ENOMEM. */
int opd__pw_c_source(const opd__pw_program *p, opd__sbuf *sb);

/* ---- fused programs on CUDA (fused_cuda.c, [Note: Fused programs on CUDA]) ---- */

#define OPD__PW_CUDA_ENTRY "opd_fused"
/* The CUDA C++ source of a program (entry OPD__PW_CUDA_ENTRY): 0, or OPD_EINVAL when the
 * program has more operands than one launch's parameters hold, OPD_ENOMEM. */
int opd__pw_cuda_source(const opd__pw_program *p, opd__sbuf *sb);
/* The most loads and stores of a program on CUDA (a program with more runs unfused), and
 * the bytes of the parameters of a program with that many (fused_cuda.c's cuda_params). */
#define OPD__PW_CUDA_MAX_OPERANDS 48
#define OPD__PW_CUDA_PARAMS_SIZE \
  (16 + 8 * OPD__PW_MAX_DIMS + OPD__PW_CUDA_MAX_OPERANDS * (16 + 8 * OPD__PW_MAX_DIMS))
/* The parameters of a launch of a program on its operands, the struct its source declares
 * with the program's operand count: written to params (OPD__PW_CUDA_PARAMS_SIZE bytes,
 * 8-byte aligned), its first *size bytes the launch's. 0, or OPD_EINVAL as
 * opd__pw_cuda_source and as opd__pw_run. Shared by the launch and the tests that run the
 * source on the host (tests/test_graph_cuda_host.c). */
int opd__pw_cuda_params(const opd__pw_program *p, opd_tensor *const *inputs,
                        opd_tensor *const *outputs, void *params, size_t *size);
/* Runs a program on CUDA tensors with its compiled function (opd_nvrtc_function): the
 * errors of opd__pw_cuda_params and of the launch. */
struct opd_nvrtc_function;
int opd__pw_cuda_run(const opd__pw_program *p, const struct opd_nvrtc_function *fn,
                     opd_tensor *const *inputs, opd_tensor *const *outputs);
/* Applies steps to a geometry: 0 or -1 when a step cannot. */
int opd__geo_apply(opd__geo *geo, const opd__geo_step *steps, uint32_t n);

/* ---- pointwise operators (pointwise.c) ---- */

/* Whether node n can be part of a fused group: an elementwise operator the fused programs
 * compute exactly as its kernel does (the kernel registered at its device's key is opd's
 * own), on float32 and bool tensors of one device, the CPU or a CUDA device. On success ins is its
 * instruction: its immediates set (imm_mask), and operands[0..*noperands) the argument index of
 * each operand (UINT32_MAX for an immediate); the caller gives the others registers. */
bool opd__pw_encode(const opd_graph *g, const opd__gnode *n, opd__pw_instr *ins,
                    uint32_t operands[3], uint32_t *noperands);
const char *opd__pw_opcode_name(opd__pw_opcode op);

#endif

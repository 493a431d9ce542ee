/* fused_run.c: running a fused pointwise program (opd__pw_run): the interpreter of
 * [Note: Fused pointwise programs] (fused_codegen.c).
 *
 * Each operand's geometry is carried to the iteration space once per run, then the
 * dimensions that every operand walks contiguously with its neighbour are merged (as
 * TensorIterator coalesces), so most programs walk one dimension. The iteration space is
 * cut into tiles of OPD__PW_TILE elements, split over the intra-op thread pool when large
 * (as the elementwise kernels split theirs); each tile gathers its loads into float32
 * registers (a contiguous run is a copy, a broadcast one a fill, anything else a strided
 * gather), runs the instructions as flat loops over the tile that the compiler vectorizes,
 * and scatters the stored registers; it asks for the next tile's lines first ([Note: Prefetching
 * the next tile]), and a large program's contiguous stores skip the cache ([Note: Streaming the
 * stores of large programs]). The formulas are the kernels' (kernels/cpu/elementwise_*.c,
 * opd__expf for exp and sigmoid, opd__tanhf for tanh), so results are those of the unfused nodes.
 */
#include <assert.h>
#include <math.h>
#include <string.h>
#if defined(__SSE2__)
#include <immintrin.h>
#endif

#include "opd/cancel.h"
#include "opd/error.h"
#include "plan/plan.h"
#include "plan/pw_formulas.h"
#include "src/loops.h"
#include "src/parallel.h"

typedef opd__pw_operand operand;

typedef struct run_ctx {
  const opd__pw_program *p;
  int ndim;
  int64_t sizes[OPD__PW_MAX_DIMS];
  const operand *loads, *stores;
  opd__pw_tile_fn fn; /* the program's compiled C, or NULL: interpreted */
  bool stream;        /* [Note: Streaming the stores of large programs] */
} run_ctx;

/* Reads n elements from p with stride s (elements) as float32. */
static void read_run(const operand *o, int64_t off, int64_t s, int64_t n, float *restrict dst) {
  if (o->dtype == OPD_FLOAT32) {
    const float *src = (const float *)o->base + off;
    if (s == 1) {
      memcpy(dst, src, (size_t)n * sizeof *dst);
    } else if (s == 0) {
      for (int64_t i = 0; i < n; i++) dst[i] = src[0];
    } else {
      for (int64_t i = 0; i < n; i++) dst[i] = src[i * s];
    }
  } else { /* bool */
    const uint8_t *src = (const uint8_t *)o->base + off;
    for (int64_t i = 0; i < n; i++) dst[i] = src[i * s] ? 1.0f : 0.0f;
  }
}

/* [Note: Streaming the stores of large programs]
 * A store's line is read before it is written (the cache owns it first), so a program whose
 * outputs dwarf the caches moves each output's bytes twice. A contiguous float32 store of a
 * program of at least OPD__PW_STREAM_ELEMENTS (plan.h) elements is written with non-temporal stores
 * instead, which go to memory without the read: a third less traffic for one input and one
 * output, 5-10% off a 16M-element GELU. Smaller programs store through the cache, where the
 * next node will read them (a 16 MiB softmax output streamed this way was slower: it fits
 * this machine's L3). Non-temporal stores are weakly ordered, so every tile run that
 * streamed ends with a store fence, before the thread pool's join publishes the outputs. */
static void stream_run(float *dst, const float *restrict src, int64_t n) {
#if defined(__SSE2__)
  int64_t i = 0;
  for (; i < n && ((uintptr_t)(dst + i) & 15); i++) dst[i] = src[i];
  for (; i + 4 <= n; i += 4) _mm_stream_ps(dst + i, _mm_loadu_ps(src + i));
  for (; i < n; i++) dst[i] = src[i];
#else
  memcpy(dst, src, (size_t)n * sizeof *src);
#endif
}

static void write_run(const run_ctx *c, const operand *o, int64_t off, int64_t s, int64_t n,
                      const float *restrict src) {
  if (o->dtype == OPD_FLOAT32) {
    float *dst = (float *)o->base + off;
    if (s == 1 && c->stream)
      stream_run(dst, src, n);
    else if (s == 1)
      memcpy(dst, src, (size_t)n * sizeof *src);
    else
      for (int64_t i = 0; i < n; i++) dst[i * s] = src[i];
  } else {
    uint8_t *dst = (uint8_t *)o->base + off;
    for (int64_t i = 0; i < n; i++) dst[i * s] = src[i] != 0;
  }
}

/* The element offset of iteration index i0 for operand o, and the index itself. */
static int64_t offset_of(const run_ctx *c, const operand *o, int64_t i0, int64_t *idx) {
  int64_t off = 0;
  for (int d = c->ndim - 1; d >= 0; d--) {
    idx[d] = i0 % c->sizes[d];
    i0 /= c->sizes[d];
    off += idx[d] * o->strides[d];
  }
  return off;
}

/* Walks elements [i0, i0 + n) of the iteration space for operand o, a run of the innermost
 * dimension at a time: loads into (or stores from) reg. */
static void walk(const run_ctx *c, const operand *o, int64_t i0, int64_t n, float *reg,
                 bool store) {
  int nd = c->ndim;
  int64_t idx[OPD__PW_MAX_DIMS], off = offset_of(c, o, i0, idx);
  int64_t inner = c->sizes[nd - 1], s = o->strides[nd - 1];
  while (n > 0) {
    int64_t run = inner - idx[nd - 1] < n ? inner - idx[nd - 1] : n;
    if (store)
      write_run(c, o, off, s, run, reg);
    else
      read_run(o, off, s, run, reg);
    reg += run;
    n -= run;
    off += run * s;
    idx[nd - 1] += run;
    for (int d = nd - 1; d > 0 && idx[d] == c->sizes[d]; d--) {
      off += o->strides[d - 1] - idx[d] * o->strides[d];
      idx[d] = 0;
      idx[d - 1]++;
    }
  }
}

/* A tile of a load: read in place when it is one contiguous float32 run (no copy), else
 * gathered into reg. */
static const float *load_tile(const run_ctx *c, const operand *o, int64_t i0, int64_t n,
                              float *reg) {
  int nd = c->ndim;
  if (o->dtype == OPD_FLOAT32 && o->strides[nd - 1] == 1) {
    int64_t idx[OPD__PW_MAX_DIMS] = {0}, off = offset_of(c, o, i0, idx);
    if (c->sizes[nd - 1] - idx[nd - 1] >= n) return (const float *)o->base + off;
  }
  walk(c, o, i0, n, reg, false);
  return reg;
}

/* The loops of the instructions ([Note: One formula per operation] in pw_formulas.h): the
 * operands x, y and z are registers or immediates, d the destination. */
#define LOOP_0(expr)                \
  for (int64_t i = 0; i < n; i++) { \
    d[i] = (expr);                  \
  }
#define LOOP_1(expr)                \
  for (int64_t i = 0; i < n; i++) { \
    const float x = a[i];           \
    d[i] = (expr);                  \
  }
#define LOOP_2(expr)                  \
  if (!(ins->imm_mask & 3)) {         \
    for (int64_t i = 0; i < n; i++) { \
      const float x = a[i], y = b[i]; \
      d[i] = (expr);                  \
    }                                 \
  } else if (ins->imm_mask & 2) {     \
    const float y = ins->imm[1];      \
    for (int64_t i = 0; i < n; i++) { \
      const float x = a[i];           \
      d[i] = (expr);                  \
    }                                 \
  } else {                            \
    const float x = ins->imm[0];      \
    for (int64_t i = 0; i < n; i++) { \
      const float y = b[i];           \
      d[i] = (expr);                  \
    }                                 \
  }
#define LOOP_3(expr)                                         \
  {                                                          \
    float scratch[3][OPD__PW_TILE];                          \
    const float *xs = operand_of(ins, 0, in, scratch[0], n); \
    const float *ys = operand_of(ins, 1, in, scratch[1], n); \
    const float *zs = operand_of(ins, 2, in, scratch[2], n); \
    for (int64_t i = 0; i < n; i++) {                        \
      const float x = xs[i], y = ys[i], z = zs[i];           \
      d[i] = (expr);                                         \
    }                                                        \
  }
#define COMPUTE_CASE(op, name, arity, result, expr) \
  case OPD__PW_##op: LOOP_##arity(expr) break;

/* An operand register, or an immediate filled into scratch (three-operand forms). */
static const float *operand_of(const opd__pw_instr *ins, int s, const float *const *in,
                               float *scratch, int64_t n) {
  if (!(ins->imm_mask >> s & 1)) return in[ins->src[s]];
  for (int64_t i = 0; i < n; i++) scratch[i] = ins->imm[s];
  return scratch;
}

/* Cloned for AVX2 and AVX-512 (OPD__WIDE_VECTORS), as the compute-bound kernels are. */
/* Registers are read through in[] (a tile a load reads in place, or a register's memory)
 * and written to d. */
OPD__WIDE_VECTORS static void compute(const opd__pw_instr *ins, const float *const *in,
                                      float *restrict d, int64_t n) {
  const float *restrict a = ins->nsrc > 0 && !(ins->imm_mask & 1) ? in[ins->src[0]] : NULL;
  const float *restrict b = ins->nsrc > 1 && !(ins->imm_mask & 2) ? in[ins->src[1]] : NULL;
  const float c0 = (float)ins->c[0], c1 = (float)ins->c[1];
  const double e = ins->c[0];
  (void)c0, (void)c1, (void)e;
  switch ((opd__pw_opcode)ins->op) {
    OPD__PW_FORMULAS(COMPUTE_CASE)
  case OPD__PW_LOAD:
  case OPD__PW_STORE:
  case OPD__PW_NUM_OPS: break;
  }
}

/* [Note: Prefetching the next tile]
 * A tile's loads are read by its first instructions, then the tile computes for thousands of
 * cycles (a tanh-GELU: ~2.5 ns an element) while memory idles, and the hardware prefetcher,
 * which follows the demand stream only a few lines ahead, does not cover the next tile: every
 * tile began with misses all the way to DRAM (a fifth of a 16M-element GELU's time, in perf).
 * So each tile first asks for the next tile's lines of its contiguous float32 operands (the
 * stores' too: a store reads its line first), and memory works while this tile computes: 12%
 * off that GELU. Tiles are 2 KiB an operand, one tile ahead: the prefetches fit the core's
 * outstanding misses, and the lines stay in L1 or L2 until used. Other operands (broadcasts,
 * gathers) are left to the hardware. (A softmax row of 4 KiB, read at once with little work
 * per byte, gained nothing from the same: the hardware keeps up there.) */
static void prefetch_tile(const run_ctx *c, const operand *o, int64_t i0, int64_t n) {
  int nd = c->ndim;
  if (o->dtype != OPD_FLOAT32 || o->strides[nd - 1] != 1) return;
  int64_t idx[OPD__PW_MAX_DIMS], off = offset_of(c, o, i0, idx);
  if (c->sizes[nd - 1] - idx[nd - 1] < n) return;
  const float *base = (const float *)o->base + off;
  for (int64_t i = 0; i < n; i += 64 / (int64_t)sizeof(float)) __builtin_prefetch(base + i);
}

/* A tile through the program's compiled C ([Note: The C tier of fused programs] in
 * c_tier.c): its loads as the interpreter's (in place, or gathered into a register's
 * memory), computed element by element in the function's own registers into the stores'
 * tiles, which are then written as the interpreter writes them. The stores' tiles are this
 * thread's registers, never an input's memory, so the function's restrict pointers hold. */
static void compiled_tile(const run_ctx *c, float (*regs)[OPD__PW_TILE], int64_t i0, int64_t n) {
  const opd__pw_program *p = c->p;
  const float *in[OPD__PW_MAX_REGS];
  float *out[OPD__PW_MAX_REGS];
  for (uint32_t k = 0; k < p->nloads; k++) in[k] = load_tile(c, &c->loads[k], i0, n, regs[k]);
  for (uint32_t k = 0; k < p->nstores; k++) out[k] = regs[p->nloads + k];
  c->fn(in, out, n);
  for (uint32_t k = 0; k < p->nstores; k++) walk(c, &c->stores[k], i0, n, out[k], true);
}

static void run_tiles(void *arg, int64_t begin, int64_t end) {
  const run_ctx *c = arg;
  const opd__pw_program *p = c->p;
  float regs[OPD__PW_MAX_REGS][OPD__PW_TILE];
  const float *in[OPD__PW_MAX_REGS];
  for (int64_t t = begin; t < end; t++) {
    /* [Note: Cancelling long work] in opd/cancel.h */
    if (t % (OPD_CANCEL_CHECK_ELEMENTS / OPD__PW_TILE) == 0 && opd_cancelled()) break;
    int64_t i0 = t * OPD__PW_TILE, n = p->numel - i0 < OPD__PW_TILE ? p->numel - i0 : OPD__PW_TILE;
    if (t + 1 < end) { /* [Note: Prefetching the next tile] */
      int64_t next = i0 + OPD__PW_TILE;
      int64_t nn = p->numel - next < OPD__PW_TILE ? p->numel - next : OPD__PW_TILE;
      for (uint32_t k = 0; k < p->nloads + p->nstores; k++) /* the stores follow the loads */
        prefetch_tile(c, &c->loads[k], next, nn);
    }
    if (c->fn) {
      compiled_tile(c, regs, i0, n);
      continue;
    }
    for (uint32_t k = 0; k < p->ncode; k++) {
      const opd__pw_instr *ins = &p->code[k];
      if (ins->op == OPD__PW_LOAD) {
        in[ins->dst] = load_tile(c, &c->loads[ins->aux], i0, n, regs[ins->dst]);
      } else if (ins->op == OPD__PW_STORE) {
        walk(c, &c->stores[ins->aux], i0, n, (float *)in[ins->src[0]], true);
      } else {
        compute(ins, in, regs[ins->dst], n);
        in[ins->dst] = regs[ins->dst];
      }
    }
  }
#if defined(__SSE2__)
  if (c->stream) _mm_sfence();
#endif
}

/* Merges dimensions that every operand walks contiguously, and drops those of size 1. */
static void coalesce(const opd__pw_program *p, opd__pw_binding *b, uint32_t nops) {
  operand *ops = b->ops;
  int nd = 0;
  for (int d = 0; d < p->ndim; d++) {
    if (p->sizes[d] == 1) continue;
    bool merge = nd > 0;
    for (uint32_t k = 0; k < nops && merge; k++)
      merge = ops[k].strides[nd - 1] == ops[k].strides[d] * p->sizes[d];
    if (merge) {
      b->sizes[nd - 1] *= p->sizes[d];
      for (uint32_t k = 0; k < nops; k++) ops[k].strides[nd - 1] = ops[k].strides[d];
    } else {
      b->sizes[nd] = p->sizes[d];
      for (uint32_t k = 0; k < nops; k++) ops[k].strides[nd] = ops[k].strides[d];
      nd++;
    }
  }
  if (nd == 0) { /* one element */
    b->sizes[0] = 1;
    for (uint32_t k = 0; k < nops; k++) ops[k].strides[0] = 0;
    nd = 1;
  }
  b->ndim = nd;
}

int opd__pw_bind(const opd__pw_program *p, opd_tensor *const *inputs, opd_tensor *const *outputs,
                 opd__pw_binding *b) {
  operand *loads = b->ops, *stores = b->ops + p->nloads;
  for (uint32_t i = 0; i < p->nloads; i++) {
    const opd_tensor *t = inputs[i];
    const opd__pw_load *l = &p->loads[i];
    if (t->ndim > OPD__PW_MAX_DIMS)
      return opd_error(OPD_EINVAL, "a fused operand has more than %d dimensions", OPD__PW_MAX_DIMS);
    opd__geo geo = {.ndim = t->ndim};
    memcpy(geo.sizes, opd_tensor_sizes(t), (size_t)t->ndim * sizeof *geo.sizes);
    memcpy(geo.strides, opd_tensor_strides(t), (size_t)t->ndim * sizeof *geo.strides);
    if (opd__geo_apply(&geo, &p->steps[l->first_step], l->nsteps) || geo.ndim != p->ndim)
      return opd_error(OPD_EINVAL, "a fused operand's layout cannot be read in place");
    loads[i] = (operand){(char *)opd_tensor_data(t), (int8_t)t->dtype, {0}};
    memcpy(loads[i].strides, geo.strides, (size_t)p->ndim * sizeof *geo.strides);
  }
  for (uint32_t i = 0; i < p->nstores; i++) {
    stores[i] = (operand){(char *)opd_tensor_data(outputs[i]), (int8_t)outputs[i]->dtype, {0}};
    memcpy(stores[i].strides, p->stores[i].strides, (size_t)p->ndim * sizeof(int64_t));
  }
  coalesce(p, b, p->nloads + p->nstores);
  return 0;
}

int opd__pw_run(const opd__pw_program *p, opd__pw_tile_fn fn, opd_tensor *const *inputs,
                opd_tensor *const *outputs) {
  if (p->numel == 0) return 0;
  /* opd__pw_c_source writes no program with more (compiled_tile's registers) */
  assert(!fn || p->nloads + p->nstores <= OPD__PW_C_MAX_OPERANDS);
  operand ops[p->nloads + p->nstores];
  opd__pw_binding b = {.ops = ops};
  int rc = opd__pw_bind(p, inputs, outputs, &b);
  if (rc) return rc;
  run_ctx c = {.p = p,
               .ndim = b.ndim,
               .loads = ops,
               .stores = ops + p->nloads,
               .fn = fn,
               .stream = p->numel >= OPD__PW_STREAM_ELEMENTS};
  memcpy(c.sizes, b.sizes, sizeof c.sizes);
  int64_t ntiles = (p->numel + OPD__PW_TILE - 1) / OPD__PW_TILE;
  opd__parallel_for(0, ntiles, OPD_GRAIN_ELEMENTWISE / OPD__PW_TILE, run_tiles, &c);
  return 0;
}

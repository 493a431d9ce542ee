/* fused_c.c: a fused pointwise program written as C (opd__pw_c_source), for the C tier of
 * fused programs ([Note: The C tier of fused programs] in c_tier.c).
 *
 * The source is one function over a tile, OPD__PW_C_ENTRY (an opd__pw_tile_fn): a loop over
 * its elements whose body is the program's instructions as straight-line code on scalars,
 * each the expression of [Note: One formula per operation] (pw_formulas.h) stringified, with
 * the kernels' fast math (kernels/src/fast_math.h) embedded ahead of it. The interpreter
 * computes every instruction over a whole tile in memory; here the compiler keeps the values
 * of an element in vector registers from its loads to its stores and vectorizes the whole
 * body at once. Immediates and constants are written as their exact bits (pw_source.c). The tiles
 * are distinct memory (fused_run.c's compiled_tile), so every pointer is restrict-qualified, which
 * the compiler needs to vectorize a loop of many pointers without runtime overlap checks.
 */

#include "opd/error.h"
#include "plan/plan.h"

/* kernels/src/fast_math.h, embedded at build time (graph/CMakeLists.txt) */
extern const char opd__fast_math_source[];

static const char prelude[] = "\n/* opd: a fused pointwise program (graph/src/plan/fused_c.c) */\n"
                              "static inline float opd_f32(uint32_t u) {\n"
                              "  union { uint32_t u; float f; } v = {u};\n"
                              "  return v.f;\n"
                              "}\n"
                              "static inline double opd_f64(uint64_t u) {\n"
                              "  union { uint64_t u; double f; } v = {u};\n"
                              "  return v.f;\n"
                              "}\n"
                              "__attribute__((visibility(\"default\"))) void " OPD__PW_C_ENTRY
                              "(const float *const *in, float *const *out, int64_t n) {\n";

static int instruction(opd__sbuf *sb, const opd__pw_instr *ins) {
  if (ins->op == OPD__PW_LOAD) {
    opd__sbuf_printf(sb, "    r%u = in%u[i];\n", (unsigned)ins->dst, (unsigned)ins->aux);
    return 0;
  }
  if (ins->op == OPD__PW_STORE) {
    opd__sbuf_printf(sb, "    out%u[i] = r%u;\n", (unsigned)ins->aux, (unsigned)ins->src[0]);
    return 0;
  }
  return opd__pw_source_compute(sb, ins);
}

int opd__pw_c_source(const opd__pw_program *p, opd__sbuf *sb) {
  if (p->nloads + p->nstores > OPD__PW_C_MAX_OPERANDS)
    return opd_error(OPD_EINVAL, "a fused program of %u loads and stores, past the C tier's %d",
                     p->nloads + p->nstores, OPD__PW_C_MAX_OPERANDS);
  opd__sbuf_printf(sb, "%s%s", opd__fast_math_source, prelude);
  for (uint32_t k = 0; k < p->nloads; k++)
    opd__sbuf_printf(sb, "  const float *restrict in%u = in[%u];\n", k, k);
  for (uint32_t k = 0; k < p->nstores; k++)
    opd__sbuf_printf(sb, "  float *restrict out%u = out[%u];\n", k, k);
  opd__sbuf_printf(sb, "  (void)in, (void)out;\n  for (int64_t i = 0; i < n; i++) {\n");
  for (uint32_t r = 0; r < p->nregs; r++) opd__sbuf_printf(sb, "    float r%u;\n", r);
  int rc = 0;
  for (uint32_t k = 0; k < p->ncode && rc == 0; k++) rc = instruction(sb, &p->code[k]);
  opd__sbuf_printf(sb, "  }\n}\n");
  if (rc == 0 && sb->failed) rc = opd_error(OPD_ENOMEM, "out of memory writing a C program");
  return rc;
}

/* pw_source.c: a computing instruction of a fused program written as source, shared by the
 * generators of C (fused_c.c) and CUDA C++ (fused_cuda.c).
 *
 * The instruction becomes a block of straight-line code: its operands x, y and z (registers
 * rN, or immediates), its constants c0 and c1 (as float) and e (the first as double), then
 * rD = the formula. Immediates and constants are written as their exact bits through
 * opd_f32 and opd_f64, which each generator's prelude defines, so that no decimal rounding
 * can differ from the interpreter's values. */
#include <string.h>

#include "opd/error.h"
#include "plan/plan.h"

static uint32_t float_bits(float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  return u;
}

static uint64_t double_bits(double d) {
  uint64_t u;
  memcpy(&u, &d, sizeof u);
  return u;
}

/* The expression of a computing opcode, stringified; NULL for LOAD and STORE. */
static const char *formula_text(opd__pw_opcode op) {
#define FORMULA_TEXT(op, name, arity, result, expr) [OPD__PW_##op] = #expr,
  static const char *const formulas[OPD__PW_NUM_OPS] = {OPD__PW_FORMULAS(FORMULA_TEXT)};
#undef FORMULA_TEXT
  return op < OPD__PW_NUM_OPS ? formulas[op] : NULL;
}

int opd__pw_source_compute(opd__sbuf *sb, const opd__pw_instr *ins) {
  const char *formula = formula_text((opd__pw_opcode)ins->op);
  if (!formula || ins->nsrc > 3)
    return opd_error(OPD_EINTERNAL, "fused program source: no formula for instruction %s",
                     opd__pw_opcode_name((opd__pw_opcode)ins->op));
  opd__sbuf_printf(sb, "    {\n");
  static const char names[3] = {'x', 'y', 'z'};
  for (int s = 0; s < ins->nsrc; s++) {
    if (ins->imm_mask >> s & 1)
      opd__sbuf_printf(sb, "      const float %c = opd_f32(0x%08xu);\n", names[s],
                       (unsigned)float_bits(ins->imm[s]));
    else
      opd__sbuf_printf(sb, "      const float %c = r%u;\n", names[s], (unsigned)ins->src[s]);
  }
  opd__sbuf_printf(sb,
                   "      const float c0 = opd_f32(0x%08xu), c1 = opd_f32(0x%08xu);\n"
                   "      const double e = opd_f64(0x%016llxull);\n"
                   "      (void)c0, (void)c1, (void)e;\n"
                   "      r%u = %s;\n"
                   "    }\n",
                   (unsigned)float_bits((float)ins->c[0]), (unsigned)float_bits((float)ins->c[1]),
                   (unsigned long long)double_bits(ins->c[0]), (unsigned)ins->dst, formula);
  return 0;
}

/* pointwise.c: the elementwise operators fused programs compute, each as one instruction
 * (opd__pw_encode), with the formula, constants and dtype rules of its CPU kernel
 * (kernels/cpu/elementwise_*.c), so that a fused group computes what its nodes would.
 *
 * [Note: What fuses]
 * A node fuses when its operator is in the table below, the kernel at its CPU key is the
 * one named there (a plugin that replaced it gets its own kernel called), it runs on the
 * CPU, and its tensors are float32 or bool: registers hold float32, bool values as 0 and 1,
 * so an operation that promotes bool to float32 reads exactly what its kernel would. On
 * CUDA the same holds with opd's own kernel at the CUDA key, every tensor on the node's
 * device ([Note: Fused programs on CUDA] in fused_cuda.c). As on the CPU,
 * Operators whose result is bool (eq, gt, lt, a conversion to bool) compare or convert in
 * float32; arithmetic must produce float32 (bool + bool, which is logical, does not fuse).
 * A Python number passed for a Tensor is an immediate: the wrapped 0-d tensor's value,
 * rounded to float32 as TensorIterator converts it. Scalars (alpha, an exponent, bounds,
 * a fill value) are converted as the kernels convert them. Everything else runs as its own
 * kernel.
 */
#include <math.h>
#include <string.h>

#include "meta/elementwise_meta.h"
#include "plan/plan.h"
#include "plan/pw_formulas.h"

typedef struct pw_def pw_def;
/* Fills the instruction of node n; false when this use of the operator does not fuse. */
typedef bool (*pw_encode_fn)(const pw_def *d, const opd_graph *g, const opd__gnode *n,
                             opd__pw_instr *ins, uint32_t *operands, uint32_t *noperands);

struct pw_def {
  const char *op;
  const char *cpu_kernel; /* the kernel registered at CPU that the instruction reproduces */
  uint8_t opcode;
  pw_encode_fn encode;
};

static double scalar_of(const opd__garg *a) {
  double v = 0;
  opd__garg_number(a, &v);
  return v;
}

/* Operands: the node's arguments `first`, ..., taken in order. */
static bool operands_from(uint32_t *operands, uint32_t *n, uint32_t first, uint32_t count) {
  for (uint32_t i = 0; i < count; i++) operands[i] = first + i;
  *n = count;
  return true;
}

/* Operands: argument 0 and an immediate `value` (a Scalar argument, as a wrapped number). */
static bool operand_and_immediate(opd__pw_instr *ins, uint32_t *operands, uint32_t *n,
                                  double value) {
  operands[0] = 0;
  operands[1] = UINT32_MAX;
  ins->imm_mask = 2;
  ins->imm[1] = (float)value;
  *n = 2;
  return true;
}

static bool plain(const pw_def *d, const opd_graph *g, const opd__gnode *n, opd__pw_instr *ins,
                  uint32_t *operands, uint32_t *noperands) {
  (void)g;
  (void)n;
  ins->op = d->opcode;
  static const uint8_t arity[OPD__PW_NUM_OPS] = {
#define ARITY(opcode, name, n, result, expr) [OPD__PW_##opcode] = n,
      OPD__PW_FORMULAS(ARITY)
#undef ARITY
  };
  return operands_from(operands, noperands, 0, arity[d->opcode]);
}

/* add.Tensor / sub.Tensor: self + alpha * other (sub negates alpha first, as the kernel). */
static bool add_sub(const pw_def *d, const opd_graph *g, const opd__gnode *n, opd__pw_instr *ins,
                    uint32_t *operands, uint32_t *noperands) {
  (void)g;
  double alpha = scalar_of(&n->args[2]);
  if (d->opcode == OPD__PW_ADD_SCALED) alpha = -alpha;
  ins->op = alpha == 1 ? OPD__PW_ADD : OPD__PW_ADD_SCALED;
  ins->c[0] = (float)alpha;
  return operands_from(operands, noperands, 0, 2);
}

/* add.Scalar / mul.Scalar: a wrapped `other` (argument 1) becomes an immediate operand. */
static bool scalar_overload(const pw_def *d, const opd_graph *g, const opd__gnode *n,
                            opd__pw_instr *ins, uint32_t *operands, uint32_t *noperands) {
  (void)g;
  ins->op = d->opcode;
  double alpha = d->opcode == OPD__PW_ADD_SCALED ? scalar_of(&n->args[2]) : 1;
  if (d->opcode == OPD__PW_ADD_SCALED && alpha == 1) ins->op = OPD__PW_ADD;
  ins->c[0] = (float)alpha;
  return operand_and_immediate(ins, operands, noperands, scalar_of(&n->args[1]));
}

static bool gelu(const pw_def *d, const opd_graph *g, const opd__gnode *n, opd__pw_instr *ins,
                 uint32_t *operands, uint32_t *noperands) {
  (void)d;
  (void)g;
  const opd_ivalue *a = &n->args[1].value;
  if (a->tag != OPD_IV_STRING) return false;
  if (strcmp(a->u.s, "none") == 0)
    ins->op = OPD__PW_GELU;
  else if (strcmp(a->u.s, "tanh") == 0)
    ins->op = OPD__PW_GELU_TANH;
  else
    return false;
  return operands_from(operands, noperands, 0, 1);
}

/* pow.Tensor_Scalar: the cases the kernel computes without pow() (opd__pow_kind_of). */
static bool pow_scalar(const pw_def *d, const opd_graph *g, const opd__gnode *n, opd__pw_instr *ins,
                       uint32_t *operands, uint32_t *noperands) {
  (void)d;
  const opd_ivalue *e = &n->args[1].value;
  if (!opd_iv_is_scalar(e)) return false;
  static const uint8_t ops[] = {
      [OPD__POW_ZERO] = OPD__PW_FILL, [OPD__POW_COPY] = OPD__PW_COPY,
      [OPD__POW_HALF] = OPD__PW_SQRT, [OPD__POW_MHALF] = OPD__PW_RSQRT,
      [OPD__POW_M1] = OPD__PW_RECIP,  [OPD__POW_2] = OPD__PW_SQUARE,
      [OPD__POW_3] = OPD__PW_CUBE,    [OPD__POW_M2] = OPD__PW_RECIP_SQUARE,
      [OPD__POW_FLOAT] = OPD__PW_POW, [OPD__POW_INT] = OPD__PW_NUM_OPS};
  opd__pow_kind kind = opd__pow_kind_of(opd_iv_to_scalar(e), opd__gvalue_dtype(g, n->first_out));
  ins->op = ops[kind];
  ins->c[0] = kind == OPD__POW_ZERO ? 1 : scalar_of(&n->args[1]);
  return ins->op != OPD__PW_NUM_OPS && operands_from(operands, noperands, 0, 1);
}

static bool masked_fill(const pw_def *d, const opd_graph *g, const opd__gnode *n,
                        opd__pw_instr *ins, uint32_t *operands, uint32_t *noperands) {
  (void)d;
  if (opd__gvalue_dtype(g, n->first_out) != OPD_FLOAT32) return false;
  ins->op = OPD__PW_MASKED_FILL;
  ins->c[0] = (float)scalar_of(&n->args[2]);
  return operands_from(operands, noperands, 0, 2);
}

/* lt.Scalar: compared in float32 with the scalar rounded to it. */
static bool lt_scalar(const pw_def *d, const opd_graph *g, const opd__gnode *n, opd__pw_instr *ins,
                      uint32_t *operands, uint32_t *noperands) {
  (void)d;
  if (n->args[0].kind != OPD__GA_REF || opd__gvalue_dtype(g, n->args[0].ref) != OPD_FLOAT32)
    return false;
  ins->op = OPD__PW_LT;
  return operand_and_immediate(ins, operands, noperands, scalar_of(&n->args[1]));
}

static bool clamp(const pw_def *d, const opd_graph *g, const opd__gnode *n, opd__pw_instr *ins,
                  uint32_t *operands, uint32_t *noperands) {
  (void)d;
  (void)g;
  bool has_min = n->args[1].value.tag != OPD_IV_NONE, has_max = n->args[2].value.tag != OPD_IV_NONE;
  double lo = scalar_of(&n->args[1]), hi = scalar_of(&n->args[2]);
  if (!has_min && !has_max) return false;
  ins->op = has_min && has_max ? OPD__PW_CLAMP : has_min ? OPD__PW_CLAMP_MIN : OPD__PW_CLAMP_MAX;
  if (has_min && has_max && (isnan(lo) || isnan(hi))) ins->op = OPD__PW_FILL; /* all NaN */
  ins->c[0] = ins->op == OPD__PW_FILL ? NAN : (float)lo;
  ins->c[1] = (float)hi;
  return operands_from(operands, noperands, 0, 1);
}

/* _to_copy on the CPU, to float32 or bool, strided, with nothing else asked. */
static bool to_copy(const pw_def *d, const opd_graph *g, const opd__gnode *n, opd__pw_instr *ins,
                    uint32_t *operands, uint32_t *noperands) {
  (void)d;
  const opd_ivalue *layout = &n->args[2].value, *device = &n->args[3].value;
  if ((layout->tag != OPD_IV_NONE && layout->u.i != 0) ||
      (device->tag != OPD_IV_NONE && device->u.device.type != OPD_DEVICE_CPU) ||
      n->args[4].value.tag == OPD_IV_BOOL)
    return false;
  bool to_bool = opd__gvalue_dtype(g, n->first_out) == OPD_BOOL;
  bool from_bool = opd__gvalue_dtype(g, n->args[0].ref) == OPD_BOOL;
  ins->op = to_bool && !from_bool ? OPD__PW_TO_BOOL : OPD__PW_COPY;
  return operands_from(operands, noperands, 0, 1);
}

static const pw_def table[] = {
    {"aten::add.Tensor", "opd__cpu_add_tensor", OPD__PW_ADD, add_sub},
    {"aten::sub.Tensor", "opd__cpu_sub_tensor", OPD__PW_ADD_SCALED, add_sub},
    {"aten::mul.Tensor", "opd__cpu_mul_tensor", OPD__PW_MUL, plain},
    {"aten::div.Tensor", "opd__cpu_div_tensor", OPD__PW_DIV, plain},
    {"aten::add.Scalar", "opd__cea_add_scalar", OPD__PW_ADD_SCALED, scalar_overload},
    {"aten::mul.Scalar", "opd__cea_mul_scalar", OPD__PW_MUL, scalar_overload},
    {"aten::neg", "opd__cpu_neg", OPD__PW_NEG, plain},
    {"aten::exp", "opd__cpu_exp", OPD__PW_EXP, plain},
    {"aten::log", "opd__cpu_log", OPD__PW_LOG, plain},
    {"aten::sqrt", "opd__cpu_sqrt", OPD__PW_SQRT, plain},
    {"aten::rsqrt", "opd__cpu_rsqrt", OPD__PW_RSQRT, plain},
    {"aten::abs", "opd__cpu_abs", OPD__PW_ABS, plain},
    {"aten::relu", "opd__cpu_relu", OPD__PW_RELU, plain},
    {"aten::sigmoid", "opd__cpu_sigmoid", OPD__PW_SIGMOID, plain},
    {"aten::tanh", "opd__cpu_tanh", OPD__PW_TANH, plain},
    {"aten::sin", "opd__cpu_sin", OPD__PW_SIN, plain},
    {"aten::cos", "opd__cpu_cos", OPD__PW_COS, plain},
    {"aten::gelu", "opd__cpu_gelu", OPD__PW_GELU, gelu},
    {"aten::pow.Tensor_Scalar", "opd__cpu_pow_tensor_scalar", OPD__PW_POW, pow_scalar},
    {"aten::maximum", "opd__cpu_maximum", OPD__PW_MAXIMUM, plain},
    {"aten::minimum", "opd__cpu_minimum", OPD__PW_MINIMUM, plain},
    {"aten::where.self", "opd__cpu_where_self", OPD__PW_WHERE, plain},
    {"aten::masked_fill.Scalar", "opd__cea_masked_fill_scalar", OPD__PW_MASKED_FILL, masked_fill},
    {"aten::eq.Tensor", "opd__cpu_eq_tensor", OPD__PW_EQ, plain},
    {"aten::gt.Tensor", "opd__cpu_gt_tensor", OPD__PW_GT, plain},
    {"aten::lt.Scalar", "opd__cpu_lt_scalar", OPD__PW_LT, lt_scalar},
    {"aten::clamp", "opd__cpu_clamp", OPD__PW_CLAMP, clamp},
    {"aten::clone", "opd__cea_clone", OPD__PW_COPY, plain},
    {"aten::_to_copy", "opd__cea_to_copy", OPD__PW_COPY, to_copy},
    /* the pointwise family's (kernels/cpu/pointwise_*.c) */
    {"aten::acos", "opd__cpu_acos", OPD__PW_ACOS, plain},
    {"aten::asin", "opd__cpu_asin", OPD__PW_ASIN, plain},
    {"aten::atan", "opd__cpu_atan", OPD__PW_ATAN, plain},
    {"aten::acosh", "opd__cpu_acosh", OPD__PW_ACOSH, plain},
    {"aten::asinh", "opd__cpu_asinh", OPD__PW_ASINH, plain},
    {"aten::atanh", "opd__cpu_atanh", OPD__PW_ATANH, plain},
    {"aten::sinh", "opd__cpu_sinh", OPD__PW_SINH, plain},
    {"aten::cosh", "opd__cpu_cosh", OPD__PW_COSH, plain},
    {"aten::tan", "opd__cpu_tan", OPD__PW_TAN, plain},
    {"aten::erf", "opd__cpu_erf", OPD__PW_ERF, plain},
    {"aten::erfc", "opd__cpu_erfc", OPD__PW_ERFC, plain},
    {"aten::log1p", "opd__cpu_log1p", OPD__PW_LOG1P, plain},
    {"aten::expm1", "opd__cpu_expm1", OPD__PW_EXPM1, plain},
    {"aten::log2", "opd__cpu_log2", OPD__PW_LOG2, plain},
    {"aten::log10", "opd__cpu_log10", OPD__PW_LOG10, plain},
    {"aten::exp2", "opd__cpu_exp2", OPD__PW_EXP2, plain},
    {"aten::floor", "opd__cpu_floor", OPD__PW_FLOOR, plain},
    {"aten::ceil", "opd__cpu_ceil", OPD__PW_CEIL, plain},
    {"aten::round", "opd__cpu_round", OPD__PW_ROUND, plain},
    {"aten::trunc", "opd__cpu_trunc", OPD__PW_TRUNC, plain},
    {"aten::frac", "opd__cpu_frac", OPD__PW_FRAC, plain},
    {"aten::sign", "opd__cpu_sign", OPD__PW_SIGN, plain},
    {"aten::atan2", "opd__cpu_atan2", OPD__PW_ATAN2, plain},
    {"aten::fmod.Tensor", "opd__cpu_fmod_tensor", OPD__PW_FMOD, plain},
    {"aten::remainder.Tensor", "opd__cpu_remainder_tensor", OPD__PW_REMAINDER, plain},
    {"aten::hypot", "opd__cpu_hypot", OPD__PW_HYPOT, plain},
    {"aten::copysign.Tensor", "opd__cpu_copysign_tensor", OPD__PW_COPYSIGN, plain},
    {"aten::fmax", "opd__cpu_fmax", OPD__PW_FMAX, plain},
    {"aten::fmin", "opd__cpu_fmin", OPD__PW_FMIN, plain},
    {"aten::xlogy.Tensor", "opd__cpu_xlogy_tensor", OPD__PW_XLOGY, plain},
    {"aten::logaddexp", "opd__cpu_logaddexp", OPD__PW_LOGADDEXP, plain},
    {"aten::pow.Tensor_Tensor", "opd__cpu_pow_tensor_tensor", OPD__PW_POW_TENSOR, plain},
    {"aten::ne.Tensor", "opd__cpu_ne_tensor", OPD__PW_NE, plain},
    {"aten::le.Tensor", "opd__cpu_le_tensor", OPD__PW_LE, plain},
    {"aten::ge.Tensor", "opd__cpu_ge_tensor", OPD__PW_GE, plain},
    {"aten::lt.Tensor", "opd__cpu_lt_tensor", OPD__PW_LT_TENSOR, plain},
};

static bool fusable_dtype(opd_dtype t) {
  return t == OPD_FLOAT32 || t == OPD_BOOL;
}

/* On the CPU, the op's kernel at the CPU key is the built-in one the table names; on CUDA,
 * the kernel at the CUDA key is opd's (a CUDA kernel, or the table's composite). */
static bool builtin_kernel(const opd__gop *op, const char *name, opd_device dev) {
  if (dev.type != OPD_DEVICE_CPU && dev.type != OPD_DEVICE_CUDA) return false;
  const opd_kernel *k =
      opd_op_lookup(op->op, opd_keyset_of(dev.type == OPD_DEVICE_CPU ? OPD_KEY_CPU : OPD_KEY_CUDA));
  if (!k || !k->name) return false;
  return strcmp(k->name, name) == 0 ||
         (dev.type == OPD_DEVICE_CUDA && strncmp(k->name, "opd__cuda_", 10) == 0);
}

static bool same_device(opd_device a, opd_device b) {
  return a.type == b.type && (a.index < 0 ? 0 : a.index) == (b.index < 0 ? 0 : b.index);
}

bool opd__pw_encode(const opd_graph *g, const opd__gnode *n, opd__pw_instr *ins,
                    uint32_t operands[3], uint32_t *noperands) {
  if (n->dead || n->nouts != 1 || n->is_view) return false;
  const opd__gop *op = opd__gnode_op(g, n);
  const pw_def *d = NULL;
  for (size_t i = 0; i < sizeof table / sizeof *table && !d; i++)
    if (strcmp(table[i].op, op->name) == 0) d = &table[i];
  uint32_t out = n->first_out;
  if (!d) return false;
  opd_device dev = g->values[out].device;
  if (!fusable_dtype(opd__gvalue_dtype(g, out)) || opd__gvalue_ndim(g, out) > OPD__PW_MAX_DIMS ||
      !builtin_kernel(op, d->cpu_kernel, dev))
    return false;
  *ins = (opd__pw_instr){0};
  if (!d->encode(d, g, n, ins, operands, noperands)) return false;
  bool bool_result = opd__gvalue_dtype(g, out) == OPD_BOOL;
  static const bool makes_bool[OPD__PW_NUM_OPS] = {
#define MAKES_BOOL(opcode, name, n, result, expr) [OPD__PW_##opcode] = OPD__PW_RESULT_##result,
      OPD__PW_FORMULAS(MAKES_BOOL)
#undef MAKES_BOOL
  };
  if (bool_result && !makes_bool[ins->op]) return false;
  for (uint32_t i = 0; i < *noperands; i++) {
    if (operands[i] == UINT32_MAX) continue; /* an immediate the encoder set */
    const opd__garg *a = &n->args[operands[i]];
    if (a->kind == OPD__GA_REF) {
      if (!fusable_dtype(opd__gvalue_dtype(g, a->ref)) ||
          !same_device(g->values[a->ref].device, dev))
        return false;
    } else if (a->kind == OPD__GA_CONST && a->value.tag == OPD_IV_TENSOR) {
      if (!fusable_dtype(opd_tensor_dtype(a->value.u.t)) ||
          !same_device(opd_tensor_device(a->value.u.t), dev))
        return false;
    } else if (a->kind == OPD__GA_WRAPPED) {
      if (a->wrapped_dtype != OPD_FLOAT32) return false;
      ins->imm_mask |= (uint8_t)(1u << i);
      ins->imm[i] = (float)scalar_of(a);
    } else {
      return false;
    }
  }
  ins->nsrc = (uint8_t)*noperands;
  return true;
}

const char *opd__pw_opcode_name(opd__pw_opcode op) {
  static const char *const names[OPD__PW_NUM_OPS] = {[OPD__PW_LOAD] = "load",
                                                     [OPD__PW_STORE] = "store",
#define NAME(opcode, name, n, result, expr) [OPD__PW_##opcode] = #name,
                                                     OPD__PW_FORMULAS(NAME)
#undef NAME
  };
  return op < OPD__PW_NUM_OPS ? names[op] : "?";
}

/* registrations.c: defines the ATen operators opd serves and registers every kernel of
 * kernels/src/kernel_list.h at its key, with generated boxed wrappers. */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "opd/kernels.h"
#include "src/kernel_list.h"
#include "src/kernel_util.h"

/* The schemas, as PyTorch 1.13 prints them. */
static const char *const aten_schemas[] = {
    "aten::add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor",
    "aten::sub.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor",
    "aten::mul.Tensor(Tensor self, Tensor other) -> Tensor",
    "aten::div.Tensor(Tensor self, Tensor other) -> Tensor",
    "aten::div.Tensor_mode(Tensor self, Tensor other, *, str? rounding_mode) -> Tensor",
    "aten::add.Scalar(Tensor self, Scalar other, Scalar alpha=1) -> Tensor",
    "aten::mul.Scalar(Tensor self, Scalar other) -> Tensor",
    "aten::neg(Tensor self) -> Tensor",
    "aten::exp(Tensor self) -> Tensor",
    "aten::log(Tensor self) -> Tensor",
    "aten::sqrt(Tensor self) -> Tensor",
    "aten::rsqrt(Tensor self) -> Tensor",
    "aten::abs(Tensor self) -> Tensor",
    "aten::relu(Tensor self) -> Tensor",
    "aten::sigmoid(Tensor self) -> Tensor",
    "aten::tanh(Tensor self) -> Tensor",
    "aten::gelu(Tensor self, *, str approximate=\"none\") -> Tensor",
    "aten::sin(Tensor self) -> Tensor",
    "aten::cos(Tensor self) -> Tensor",
    "aten::pow.Tensor_Scalar(Tensor self, Scalar exponent) -> Tensor",
    "aten::maximum(Tensor self, Tensor other) -> Tensor",
    "aten::minimum(Tensor self, Tensor other) -> Tensor",
    "aten::eq.Tensor(Tensor self, Tensor other) -> Tensor",
    "aten::gt.Tensor(Tensor self, Tensor other) -> Tensor",
    "aten::lt.Scalar(Tensor self, Scalar other) -> Tensor",
    "aten::where.self(Tensor condition, Tensor self, Tensor other) -> Tensor",
    "aten::sum.dim_IntList(Tensor self, int[1]? dim, bool keepdim=False, *, ScalarType? dtype=None) -> Tensor",
    "aten::sum(Tensor self, *, ScalarType? dtype=None) -> Tensor",
    "aten::mean.dim(Tensor self, int[1]? dim, bool keepdim=False, *, ScalarType? dtype=None) -> Tensor",
    "aten::amax(Tensor self, int[1] dim=[], bool keepdim=False) -> Tensor",
    "aten::argmax(Tensor self, int? dim=None, bool keepdim=False) -> Tensor",
    "aten::_softmax(Tensor self, int dim, bool half_to_float) -> Tensor",
    "aten::_log_softmax(Tensor self, int dim, bool half_to_float) -> Tensor",
    "aten::softmax.int(Tensor self, int dim, ScalarType? dtype=None) -> Tensor",
    "aten::mm(Tensor self, Tensor mat2) -> Tensor",
    "aten::bmm(Tensor self, Tensor mat2) -> Tensor",
    "aten::addmm(Tensor self, Tensor mat1, Tensor mat2, *, Scalar beta=1, Scalar alpha=1) -> Tensor",
    "aten::matmul(Tensor self, Tensor other) -> Tensor",
    "aten::linear(Tensor input, Tensor weight, Tensor? bias=None) -> Tensor",
    "aten::transpose.int(Tensor(a) self, int dim0, int dim1) -> Tensor(a)",
    "aten::permute(Tensor(a) self, int[] dims) -> Tensor(a)",
    "aten::view(Tensor(a) self, SymInt[] size) -> Tensor(a)",
    "aten::reshape(Tensor(a) self, SymInt[] shape) -> Tensor(a)",
    "aten::contiguous(Tensor(a) self, *, MemoryFormat memory_format=0) -> Tensor(a)",
    "aten::clone(Tensor self, *, MemoryFormat? memory_format=None) -> Tensor",
    "aten::unsqueeze(Tensor(a) self, int dim) -> Tensor(a)",
    "aten::squeeze.dim(Tensor(a) self, int dim) -> Tensor(a)",
    "aten::expand(Tensor(a) self, SymInt[] size, *, bool implicit=False) -> Tensor(a)",
    "aten::slice.Tensor(Tensor(a) self, int dim=0, SymInt? start=None, SymInt? end=None, SymInt step=1) -> Tensor(a)",
    "aten::select.int(Tensor(a) self, int dim, int index) -> Tensor(a)",
    "aten::cat(Tensor[] tensors, int dim=0) -> Tensor",
    "aten::t(Tensor(a) self) -> Tensor(a)",
    "aten::layer_norm(Tensor input, int[] normalized_shape, Tensor? weight=None, Tensor? bias=None, float eps=1.0000000000000001e-05, bool cudnn_enable=True) -> Tensor",
    "aten::embedding(Tensor weight, Tensor indices, int padding_idx=-1, bool scale_grad_by_freq=False, bool sparse=False) -> Tensor",
    "aten::zeros(SymInt[] size, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor",
    "aten::ones(SymInt[] size, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor",
    "aten::full(SymInt[] size, Scalar fill_value, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor",
    "aten::arange.start_step(Scalar start, Scalar end, Scalar step=1, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor",
    "aten::clamp(Tensor self, Scalar? min=None, Scalar? max=None) -> Tensor",
    "aten::masked_fill.Scalar(Tensor self, Tensor mask, Scalar value) -> Tensor",
    "aten::_to_copy(Tensor self, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None, bool non_blocking=False, MemoryFormat? memory_format=None) -> Tensor",
    "aten::add.out(Tensor self, Tensor other, *, Scalar alpha=1, Tensor(a!) out) -> Tensor(a!)",
    "aten::masked_fill_.Scalar(Tensor(a!) self, Tensor mask, Scalar value) -> Tensor(a!)",
    "aten::copy_(Tensor(a!) self, Tensor src, bool non_blocking=False) -> Tensor(a!)",
    "aten::fill_.Scalar(Tensor(a!) self, Scalar value) -> Tensor(a!)",
    "aten::native_layer_norm(Tensor input, SymInt[] normalized_shape, Tensor? weight, Tensor? bias, float eps) -> (Tensor, Tensor, Tensor)",
    "aten::index_select(Tensor self, int dim, Tensor index) -> Tensor",
    "aten::empty.memory_format(SymInt[] size, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None, MemoryFormat? memory_format=None) -> Tensor",
    "aten::empty_strided(SymInt[] size, SymInt[] stride, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor",
    "aten::as_strided(Tensor(a) self, SymInt[] size, SymInt[] stride, SymInt? storage_offset=None) -> Tensor(a)",
};

#define OPD__DECLARE(op, key, fn, R, ...)                                                          \
  int fn(const opd_kernel_ctx *, OPD__MAP(OPD__M_TYPE, OPD__COMMA, __VA_ARGS__) OPD__RET_PTYPE_##R);
OPD_UNBOXED_KERNELS(OPD__DECLARE)
#undef OPD__DECLARE

#define OPD__DECLARE_BOXED(op, key, fn) int fn(const opd_kernel_ctx *ctx, opd_stack *stack);
OPD_BOXED_KERNELS(OPD__DECLARE_BOXED)
#undef OPD__DECLARE_BOXED

#define OPD__WRAPPER(op, key, fn, R, ...) OPD_BOXED_WRAPPER(fn, R, __VA_ARGS__)
OPD_UNBOXED_KERNELS(OPD__WRAPPER)
#undef OPD__WRAPPER

typedef struct kernel_entry {
  const char *op;
  opd_dispatch_key key;
  opd_kernel kernel;
} kernel_entry;

static const kernel_entry kernels[] = {
#define OPD__ENTRY(op, key, fn, R, ...) {op, OPD_KEY_##key, OPD_UNBOXED_KERNEL(fn, R, __VA_ARGS__)},
    OPD_UNBOXED_KERNELS(OPD__ENTRY)
#undef OPD__ENTRY
#define OPD__BOXED_ENTRY(op, key, fn) {op, OPD_KEY_##key, {.boxed = fn, .name = #fn}},
        OPD_BOXED_KERNELS(OPD__BOXED_ENTRY)
#undef OPD__BOXED_ENTRY
};

/* [Note: Autograd kernels]
 * opd records no gradients. Every built-in operator that PyTorch gives an autograd kernel
 * (all but the CompositeImplicitAutograd ones, whose math kernel fills the autograd slots)
 * gets one at the Autograd alias that passes the call on below autograd, so that calls on
 * tensors whose autograd key has no fallback (AutogradMeta) work as in PyTorch with
 * requires_grad=False. */
static int autograd_passthrough(const opd_kernel_ctx *ctx, opd_stack *stack) {
  return opd_redispatch_boxed(ctx, stack);
}

static bool has_math_kernel(const char *op) {
  for (size_t i = 0; i < sizeof kernels / sizeof *kernels; i++)
    if (kernels[i].key == OPD_KEY_CompositeImplicitAutograd && strcmp(kernels[i].op, op) == 0)
      return true;
  return false;
}

static int status = 1;

static void register_all(void) {
  for (size_t i = 0; i < sizeof aten_schemas / sizeof *aten_schemas; i++) {
    opd_reg_id id = opd_def("aten", aten_schemas[i], OPD_HERE);
    if (id < 0) {
      status = (int)id;
      return;
    }
  }
  for (size_t i = 0; i < sizeof kernels / sizeof *kernels; i++) {
    opd_reg_id id = opd_impl(kernels[i].op, kernels[i].key, &kernels[i].kernel, OPD_HERE);
    if (id < 0) {
      status = (int)id;
      return;
    }
  }
  static const opd_kernel autograd = {.boxed = autograd_passthrough,
                                      .name = "autograd_passthrough"};
  for (size_t i = 0; i < sizeof aten_schemas / sizeof *aten_schemas; i++) {
    char name[128];
    size_t len = strcspn(aten_schemas[i], "(");
    snprintf(name, sizeof name, "%.*s", (int)len, aten_schemas[i]);
    if (has_math_kernel(name)) continue;
    opd_reg_id id = opd_impl(name, OPD_KEY_Autograd, &autograd, OPD_HERE);
    if (id < 0) {
      status = (int)id;
      return;
    }
  }
  status = 0;
}

int opd_kernels_register(void) {
  static pthread_once_t once = PTHREAD_ONCE_INIT;
  pthread_once(&once, register_all);
  return status;
}

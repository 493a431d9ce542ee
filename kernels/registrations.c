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
#define X(schema) schema,
#include "aten_schemas.def"
#undef X
};

#define OPD__DECLARE(op, key, fn, R, ...) \
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

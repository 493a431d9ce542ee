/* register.c: registers the CUDA kernels of cuda_kernels.h at the CUDA key, with generated
 * boxed wrappers (as kernels/registrations.c does for the CPU and Meta kernels). */
#include "cuda_kernels.h"
#include "opd/dispatcher.h"
#include "opd/unboxed.h"

#define OPD__WRAPPER(op, fn, R, ...) OPD_BOXED_WRAPPER(fn, R, __VA_ARGS__)
OPD_CUDA_UNBOXED_KERNELS(OPD__WRAPPER)
#undef OPD__WRAPPER

static const opd__cuda_kernel_entry kernels[] = {
#define OPD__ENTRY(op, fn, R, ...) {op, OPD_UNBOXED_KERNEL(fn, R, __VA_ARGS__)},
    OPD_CUDA_UNBOXED_KERNELS(OPD__ENTRY)
#undef OPD__ENTRY
#define OPD__BOXED_ENTRY(op, fn) {op, {.boxed = fn, .name = #fn}},
        OPD_CUDA_BOXED_KERNELS(OPD__BOXED_ENTRY)
#undef OPD__BOXED_ENTRY
};

int opd__cuda_kernels_register(void) {
  return opd__cuda_register_table(kernels, sizeof kernels / sizeof *kernels, OPD_HERE);
}

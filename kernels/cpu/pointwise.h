/* pointwise.h: what the CPU kernels of the pointwise math operators share (internal). */
#ifndef OPD_KERNELS_CPU_POINTWISE_H
#define OPD_KERNELS_CPU_POINTWISE_H

#include "meta/pointwise_meta.h"
#include "src/loops.h"

/* Runs loop over the inputs into a new CPU tensor of spec (into == NULL) or into `into` (an
 * in-place variant: checked with opd__pointwise_inplace_meta first). A loop that reports bad data
 * (integer division by zero) fails with PyTorch's "ZeroDivisionError". */
int opd__pointwise_run(const opd_out_spec *spec, opd_tensor *const *inputs, const opd__loop *loop,
                       opd_tensor *into, opd_tensor **out);

#endif

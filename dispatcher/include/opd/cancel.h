/* opd/cancel.h: stopping the long work of an owner that is gone.
 *
 * [Note: Cancelling long work]
 * One call can run for hours: a sum over an aten::expand to 2^40 elements holds no memory
 * and a worker the whole time. When its owner goes (a daemon's session closes, or the
 * daemon stops and its drain timeout has passed), such work must end, so that the worker
 * serves other sessions and the daemon can exit. The owner's flag lives in its budget
 * (opd_mem_budget.cancelled, set by the daemon when the session closes), installed on the
 * thread with it; the intra-op pool's threads take the flag of the region they run. Long
 * loops check it once per OPD_CANCEL_CHECK_ELEMENTS elements or so (a relaxed load: nothing
 * measurable next to 64K elements of work) and return early, leaving their outputs partly
 * written; the caller that ran them (the daemon's call, a graph run) then fails with
 * OPD_ECANCELED, "cancelled", so no partial result is ever used. The loops that check: the
 * elementwise engine (kernels/src/loops.c), the reductions (kernels/cpu/reduce.c), a compiled
 * graph's steps and its fused programs' tiles, interpreted or compiled by the C tier
 * (graph/src/exec/exec.c, fused_run.c). So work ends within the time of 64K elements per thread
 * after the flag is set (microseconds), bounded by what one kernel call that does not check
 * takes (a matrix product's BLAS call, a convolution's oneDNN primitive: their sizes are
 * bounded by the memory their operands take).
 */
#ifndef OPD_CANCEL_H
#define OPD_CANCEL_H

#include <stdatomic.h>
#include <stdbool.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Elements a long loop may go through between two looks at the flag. */
#define OPD_CANCEL_CHECK_ELEMENTS 65536

/* The flag of the owner whose work this thread runs (its installed budget's, or the one it
 * adopted), or NULL. */
const _Atomic bool *opd_cancel_flag(void);
/* Makes this thread check `flag` while no budget is installed (an intra-op pool thread
 * running a region for a caller); NULL: none. */
void opd_cancel_adopt(const _Atomic bool *flag);
/* Whether the work this thread runs has been cancelled. */
bool opd_cancelled(void);
/* Records the "cancelled" error (OPD_ECANCELED) with `what` and returns its code. */
int opd_cancelled_error(const char *what);

#ifdef __cplusplus
}
#endif
#endif

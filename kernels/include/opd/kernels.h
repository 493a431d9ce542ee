/* opd/kernels.h: opd's built-in ATen operators and their CPU, Meta and composite kernels. */
#ifndef OPD_KERNELS_H
#define OPD_KERNELS_H

#ifdef __cplusplus
extern "C" {
#endif

/* Defines the built-in ATen operators and registers their kernels (once per process;
 * later calls return the first call's result): 0, or the first registration error. */
int opd_kernels_register(void);

/* Tells the CPU kernels how many threads of the caller's worker pool run kernels now: a
 * large kernel then splits over the CPUs the others leave ([Note: Kernel threads and the
 * load] in kernels/src/parallel.h). The daemon's scheduler calls it as its workers start
 * and finish jobs; nobody calling it means every kernel may use the whole intra-op pool. */
void opd_kernels_set_busy_threads(unsigned n);

/* The instruction set the CPU kernels' reductions run with on this CPU: "avx512f", "avx2" or
 * "baseline" (see [Note: Reductions per instruction set]); for benchmarks and status pages. */
const char *opd_kernels_cpu_isa(void);

#ifdef __cplusplus
}
#endif
#endif

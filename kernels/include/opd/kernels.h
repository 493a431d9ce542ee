/* opd/kernels.h: opd's built-in ATen operators and their CPU, Meta and composite kernels. */
#ifndef OPD_KERNELS_H
#define OPD_KERNELS_H

#ifdef __cplusplus
extern "C" {
#endif

/* Defines the built-in ATen operators and registers their kernels (once per process;
 * later calls return the first call's result): 0, or the first registration error. */
int opd_kernels_register(void);

#ifdef __cplusplus
}
#endif
#endif

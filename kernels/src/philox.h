/* philox.h: Philox4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3"),
 * the block function of opd's generators ([Note: Random generators] in opd/random.h), and the
 * conversions of its words to uniform numbers (internal to the kernels library). */
#ifndef OPD_KERNELS_PHILOX_H
#define OPD_KERNELS_PHILOX_H

#include <stdint.h>

/* The four words of block `counter` under key `seed`. */
static inline void opd__philox(uint64_t seed, uint64_t counter, uint32_t out[4]) {
  uint32_t c0 = (uint32_t)counter, c1 = (uint32_t)(counter >> 32), c2 = 0, c3 = 0;
  uint32_t k0 = (uint32_t)seed, k1 = (uint32_t)(seed >> 32);
  for (int round = 0; round < 10; round++) {
    uint64_t p0 = (uint64_t)0xD2511F53u * c0, p1 = (uint64_t)0xCD9E8D57u * c2;
    uint32_t n0 = (uint32_t)(p1 >> 32) ^ c1 ^ k0, n2 = (uint32_t)(p0 >> 32) ^ c3 ^ k1;
    c1 = (uint32_t)p1;
    c3 = (uint32_t)p0;
    c0 = n0;
    c2 = n2;
    k0 += 0x9E3779B9u;
    k1 += 0xBB67AE85u;
  }
  out[0] = c0;
  out[1] = c1;
  out[2] = c2;
  out[3] = c3;
}

/* A double in [0, 1) from 53 bits of two words. */
static inline double opd__uniform53(uint32_t hi, uint32_t lo) {
  return (double)((((uint64_t)hi << 32) | lo) >> 11) * 0x1p-53;
}

#endif

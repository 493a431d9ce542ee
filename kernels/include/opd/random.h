/* opd/random.h: the random number generators of the random operators (bernoulli_, uniform_,
 * normal_, rand, randperm, ...).
 *
 * [Note: Random generators]
 * A generator is Philox4x32-10 (the counter-based generator of PyTorch's CUDA backend) keyed
 * by a 64-bit seed, with a 64-bit offset: a random operator filling n elements gives element
 * i the Philox block of counter offset + i (four 32-bit words) and advances the offset by n,
 * atomically. So a result depends only on the seed and the calls before it on the same
 * generator, not on how the work is split over threads. Each session of the daemon has its
 * own generator, seeded with PyTorch's default seed when the session opens (so a new
 * session draws the same numbers as a new PyTorch process seeded by default, in
 * distribution, not bit for bit), and the worker running a session's call installs it on
 * its thread (opd_generator_swap) for the call's duration; without one installed, calls
 * draw from the process's default generator. The protocol has no request to seed a
 * session's generator yet (aten::manual_seed is not an ATen operator).
 */
#ifndef OPD_RANDOM_H
#define OPD_RANDOM_H

#include <stdatomic.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* c10's default_rng_seed_val */
#define OPD_DEFAULT_SEED 67280421310721ull

typedef struct opd_generator {
  uint64_t seed;
  _Atomic uint64_t offset; /* Philox blocks used */
} opd_generator;

void opd_generator_init(opd_generator *g, uint64_t seed);
/* Installs g (NULL: the process's default) as this thread's generator; returns the one it
 * replaces. */
opd_generator *opd_generator_swap(opd_generator *g);
/* This thread's generator. */
opd_generator *opd_generator_current(void);
/* Reserves n consecutive Philox blocks of g: the first one's counter. */
uint64_t opd_generator_take(opd_generator *g, uint64_t n);

#ifdef __cplusplus
}
#endif

#endif

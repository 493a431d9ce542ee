/* generator.c: the generators of opd/random.h ([Note: Random generators]): their state, the
 * thread's current one and the process's default. */
#include "opd/random.h"

static opd_generator default_generator = {OPD_DEFAULT_SEED, 0};
static _Thread_local opd_generator *current;

void opd_generator_init(opd_generator *g, uint64_t seed) {
  g->seed = seed;
  atomic_init(&g->offset, 0);
}

opd_generator *opd_generator_swap(opd_generator *g) {
  opd_generator *prev = current;
  current = g;
  return prev;
}

opd_generator *opd_generator_current(void) {
  return current ? current : &default_generator;
}

uint64_t opd_generator_take(opd_generator *g, uint64_t n) {
  return atomic_fetch_add_explicit(&g->offset, n, memory_order_relaxed);
}

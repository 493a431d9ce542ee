/* rcu.c: grace periods for the dispatcher (liburcu, QSBR flavour): the reader registration
 * functions of opd/dispatcher.h and the wait that registration changes use before they
 * settle table slots or free what calls may still be reading. See [Note: Registration
 * under traffic] in registry.c.
 */
#include <urcu-qsbr.h>

#include "dispatcher_internal.h"

/* ThreadSanitizer does not see liburcu's grace periods (the library is not instrumented),
 * so a free after one would read as a race with the reads before it. Each reader's
 * announcement that it holds nothing releases to one sync object, and the end of a grace
 * period acquires from it: the order the grace period guarantees, told to TSan. */
#if defined(__SANITIZE_THREAD__)
void __tsan_acquire(void *addr);
void __tsan_release(void *addr);
static char grace_period;
#define READER_HOLDS_NOTHING() __tsan_release(&grace_period)
#define GRACE_PERIOD_ENDED()   __tsan_acquire(&grace_period)
#else
#define READER_HOLDS_NOTHING() ((void)0)
#define GRACE_PERIOD_ENDED()   ((void)0)
#endif

void opd_reader_register(void) {
  rcu_register_thread();
}

void opd_reader_unregister(void) {
  READER_HOLDS_NOTHING();
  rcu_unregister_thread();
}

void opd_reader_quiescent(void) {
  READER_HOLDS_NOTHING();
  rcu_quiescent_state();
}

void opd_reader_offline(void) {
  READER_HOLDS_NOTHING();
  rcu_thread_offline();
}

void opd_reader_online(void) {
  rcu_thread_online();
}

void opd_synchronize_readers(void) {
  synchronize_rcu();
  GRACE_PERIOD_ENDED();
}

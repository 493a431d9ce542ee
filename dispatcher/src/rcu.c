/* rcu.c: grace periods for the dispatcher (liburcu, QSBR flavour): the reader registration
 * functions of opd/dispatcher.h and the wait that registration changes use before they
 * settle table slots or free what calls may still be reading. See [Note: Registration
 * under traffic] in registry.c.
 */
#include <urcu-qsbr.h>

#include "dispatcher_internal.h"

void opd_reader_register(void) {
  rcu_register_thread();
}

void opd_reader_unregister(void) {
  rcu_unregister_thread();
}

void opd_reader_quiescent(void) {
  rcu_quiescent_state();
}

void opd_reader_offline(void) {
  rcu_thread_offline();
}

void opd_reader_online(void) {
  rcu_thread_online();
}

void opd_synchronize_readers(void) {
  synchronize_rcu();
}

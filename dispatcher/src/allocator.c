/* allocator.c: the allocator of each device type and their statistics (see [Note:
 * Allocators per device type] in opd/allocator.h). */
#include <stdatomic.h>

#include "opd/allocator.h"
#include "opd/error.h"

static _Atomic(const opd_allocator *) allocators[OPD_NUM_BACKENDS];

static bool valid_type(int device_type) {
  return device_type >= 0 && device_type < OPD_NUM_BACKENDS;
}

int opd_allocator_register(int device_type, const opd_allocator *a) {
  if (!valid_type(device_type) || device_type == OPD_DEVICE_META || !a)
    return opd_error(OPD_EINVAL, "cannot register an allocator for device type %d", device_type);
  atomic_store_explicit(&allocators[device_type], a, memory_order_release);
  return 0;
}

const opd_allocator *opd_allocator_for(int device_type) {
  if (!valid_type(device_type)) return NULL;
  if (device_type == OPD_DEVICE_CPU) return opd_cpu_allocator();
  return atomic_load_explicit(&allocators[device_type], memory_order_acquire);
}

void opd_memory_stats_get_device(opd_device device, opd_memory_stats *out) {
  const opd_allocator *a = opd_allocator_for(device.type);
  *out = (opd_memory_stats){0};
  if (a && a->stats) a->stats(a, device.index, out);
}

void opd_memory_stats_get(int device_type, opd_memory_stats *out) {
  opd_memory_stats_get_device((opd_device){(int16_t)device_type, 0}, out);
}

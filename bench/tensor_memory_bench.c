/* tensor_memory_bench.c: opd-bench-tensor-memory, the metadata cost of a live tensor:
 * the resident-memory growth over 1,000,000 live 1-element float32 CPU tensors, minus their
 * 4 data bytes each. The array of pointers that holds them (8 bytes a tensor, as a handle
 * table's slot would be) is touched before the first reading, so it is not counted. Prints
 * "opd bytes_per_tensor <n>"; bench/torch_tensor_memory.cpp prints PyTorch's figure
 * measured the same way. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "opd/tensor.h"

enum { COUNT = 1000000 };

static long resident_bytes(void) {
  long pages = 0, resident = 0;
  FILE *f = fopen("/proc/self/statm", "r");
  if (!f || fscanf(f, "%ld %ld", &pages, &resident) != 2) resident = -1;
  if (f) fclose(f);
  return resident * sysconf(_SC_PAGESIZE);
}

int main(void) {
  opd_tensor **tensors = malloc(COUNT * sizeof *tensors);
  int64_t one[] = {1};
  if (!tensors) return 1;
  /* resident before the first reading (a fill with zeros could become a calloc) */
  memset(tensors, 0xff, COUNT * sizeof *tensors);
  long before = resident_bytes();
  for (int i = 0; i < COUNT; i++) {
    if (opd_tensor_empty(one, 1, OPD_FLOAT32, (opd_device){OPD_DEVICE_CPU, -1}, &tensors[i])) {
      fprintf(stderr, "opd-bench-tensor-memory: %s\n", opd_last_error());
      return 1;
    }
    *(float *)opd_tensor_data(tensors[i]) = (float)i; /* touch the data */
  }
  long after = resident_bytes();
  printf("opd bytes_per_tensor %.1f\n", (double)(after - before) / COUNT - sizeof(float));
  for (int i = 0; i < COUNT; i++) opd_tensor_release(tensors[i]);
  free(tensors);
  return 0;
}

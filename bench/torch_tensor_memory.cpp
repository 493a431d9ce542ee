// torch_tensor_memory.cpp - PyTorch's figure for opd-bench-tensor-memory: the resident-memory
// growth over 1,000,000 live 1-element float32 CPU tensors minus their 4 data bytes each; the
// vector that holds them is filled (with undefined tensors) before the first reading, as
// opd-bench-tensor-memory's array is. Prints "torch bytes_per_tensor <n>".
#include <torch/torch.h>

#include <cstdio>
#include <unistd.h>
#include <vector>

static long resident_bytes() {
  long pages = 0, resident = 0;
  FILE *f = std::fopen("/proc/self/statm", "r");
  if (!f || std::fscanf(f, "%ld %ld", &pages, &resident) != 2) resident = -1;
  if (f) std::fclose(f);
  return resident * sysconf(_SC_PAGESIZE);
}

int main() {
  constexpr int kCount = 1000000;
  std::vector<at::Tensor> tensors(kCount); // resident before the first reading
  torch::empty({1}); // initialise the library outside the measurement
  long before = resident_bytes();
  for (int i = 0; i < kCount; i++) {
    tensors[i] = torch::empty({1});
    tensors[i].data_ptr<float>()[0] = static_cast<float>(i);
  }
  long after = resident_bytes();
  std::printf("torch bytes_per_tensor %.1f\n", double(after - before) / kCount - sizeof(float));
  return 0;
}

// torch_dispatch_bench.cpp - PyTorch reference numbers for opd's dispatcher benchmark.
//
// Measures, in ns/call, the c10 dispatcher of libtorch (Debian libtorch-dev, PyTorch 1.13) on
// a no-op custom operator `opdbench::noop(Tensor a, Tensor b) -> Tensor` whose CPU kernel just
// returns `a` (one refcount bump):
//   lookup      dispatch-key-set -> kernel lookup alone. Not reachable through public API in
//               1.13 (OperatorHandle::operatorDef_ and OperatorEntry::lookup are private), so
//               it is reported as NA.
//   typed_call  unboxed call: TypedOperatorHandle::call(a, b). Key-set extraction from the
//               arguments, table lookup, AutogradCPU fallthrough, CPU kernel.
//   boxed_call  boxed call: OperatorHandle::callBoxed(&stack), pushing both tensors and
//               popping the result each iteration.
// typed_call and boxed_call measure `opdbench::noop_void(Tensor a, Tensor b) -> ()`, a true
// no-op; the *_ret variants measure `noop`, whose returned tensor costs a reference count
// increment and decrement (two atomic operations) in both implementations.
// InferenceMode is off (the default), so the Autograd key is in the set as in a normal call.
//
// Same methodology and output as opd's own dispatch benchmark, so the numbers line up: steady
// clock, a warm-up pass, kReps repetitions of kIters calls, median ns/call, one line per
// measurement `torch <name> <ns_per_call>` (opd's lines carry its own prefix). Run pinned,
// e.g. `taskset -c 1 ./opd-bench-dispatch-torch`. Build: bench/torch_dispatch_bench.cmake.

#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/core/stack.h>
#include <torch/library.h>
#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <vector>

namespace {

constexpr int kIters = 2000000;
constexpr int kWarmup = 200000;
constexpr int kReps = 5;

at::Tensor noop_kernel(const at::Tensor &a, const at::Tensor & /*b*/) {
  return a;
}

void noop_void_kernel(const at::Tensor & /*a*/, const at::Tensor & /*b*/) {}

// Consumes a result so the compiler cannot drop the call.
volatile std::uintptr_t g_sink;

// Runs body(n) kReps times with n = kIters after one warm-up, returns the median ns/call.
template <class Body> double median_ns(Body body) {
  body(kWarmup);
  std::vector<double> ns;
  for (int r = 0; r < kReps; r++) {
    auto t0 = std::chrono::steady_clock::now();
    body(kIters);
    auto t1 = std::chrono::steady_clock::now();
    ns.push_back(std::chrono::duration<double, std::nano>(t1 - t0).count() / kIters);
  }
  std::sort(ns.begin(), ns.end());
  return ns[kReps / 2];
}

} // namespace

TORCH_LIBRARY(opdbench, m) {
  m.def("noop(Tensor a, Tensor b) -> Tensor");
  m.def("noop_void(Tensor a, Tensor b) -> ()");
}

TORCH_LIBRARY_IMPL(opdbench, CPU, m) {
  m.impl("noop", TORCH_FN(noop_kernel));
  m.impl("noop_void", TORCH_FN(noop_void_kernel));
}

int main() {
  at::Tensor a = torch::ones({1});
  at::Tensor b = torch::ones({1});
  auto op = c10::Dispatcher::singleton().findSchemaOrThrow("opdbench::noop", "");
  auto typed = op.typed<at::Tensor(const at::Tensor &, const at::Tensor &)>();

  std::printf("torch lookup NA\n");

  double typed_ns = median_ns([&](int n) {
    std::uintptr_t acc = 0;
    for (int i = 0; i < n; i++) {
      at::Tensor r = typed.call(a, b);
      acc ^= reinterpret_cast<std::uintptr_t>(r.unsafeGetTensorImpl());
    }
    g_sink = acc;
  });
  std::printf("torch typed_call_ret %.1f\n", typed_ns);

  torch::jit::Stack stack;
  stack.reserve(4);
  double boxed_ns = median_ns([&](int n) {
    std::uintptr_t acc = 0;
    for (int i = 0; i < n; i++) {
      torch::jit::push(stack, a, b);
      op.callBoxed(&stack);
      acc ^= reinterpret_cast<std::uintptr_t>(stack.back().unsafeToTensorImpl());
      stack.pop_back();
    }
    g_sink = acc;
  });
  std::printf("torch boxed_call_ret %.1f\n", boxed_ns);

  auto void_op = c10::Dispatcher::singleton().findSchemaOrThrow("opdbench::noop_void", "");
  auto void_typed = void_op.typed<void(const at::Tensor &, const at::Tensor &)>();
  std::printf("torch typed_call %.1f\n", median_ns([&](int n) {
                for (int i = 0; i < n; i++) void_typed.call(a, b);
              }));
  std::printf("torch boxed_call %.1f\n", median_ns([&](int n) {
                for (int i = 0; i < n; i++) {
                  torch::jit::push(stack, a, b);
                  void_op.callBoxed(&stack);
                }
                g_sink = stack.size();
              }));
  return 0;
}

// Per-instruction overhead of the VM: a chain of empty kernels on one stream (each writes the
// same buffer, so each depends on the one before), submitted in batches and synced once per
// chain, against calling the same number of empty functions directly. The VM's overhead per
// instruction is the difference of the two "per_instruction" figures.
//
//   batch:  instructions per physical_run (1: every kernel submitted alone)
//   fuse:   fusion of up to 10 consecutive kernel calls on, or off
//   single: single-thread mode (everything on the caller's thread: the VM's pure CPU cost)
// process_cpu_ns is the CPU time of all the process's threads per instruction.
#include <benchmark/benchmark.h>

#include <time.h>

#include <functional>
#include <vector>

#include "runtime/vm/virtual_machine.h"

namespace {

using namespace kiln;
using namespace kiln::vm;

constexpr int kChain = 20000;

benchmark::Counter per_instruction(const benchmark::State& state) {
  return benchmark::Counter(double(state.iterations()) * kChain,
                            benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}

// CPU time of the whole process (every VM thread, spinning included) per instruction, in ns:
// on a loaded machine wall time mostly measures waiting for a core.
double process_cpu_seconds() {
  timespec now{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &now);
  return double(now.tv_sec) + double(now.tv_nsec) * 1e-9;
}

void BM_DirectCalls(benchmark::State& state) {
  std::vector<std::function<void(int&)>> kernels(kChain, [](int& value) { benchmark::DoNotOptimize(value); });
  int value = 0;
  for (auto _ : state) {
    for (auto& kernel : kernels) kernel(value);
  }
  state.counters["per_instruction"] = per_instruction(state);
}
BENCHMARK(BM_DirectCalls)->Unit(benchmark::kMillisecond);

void BM_VmChain(benchmark::State& state) {
  const int batch = int(state.range(0));
  VmOptions options;
  options.max_fused_kernels = state.range(1) != 0 ? 10 : 1;
  options.single_thread = state.range(2) != 0;
  options.watchdog_timeout = std::chrono::milliseconds(0);
  VirtualMachine vm(options);
  Stream& stream = vm.stream(0);
  BufferPtr x = vm.new_buffer(8, stream);
  vm.sync_write(x, [](Storage&) {});
  const double cpu_start = process_cpu_seconds();
  for (auto _ : state) {
    for (int i = 0; i < kChain; i += batch) {
      vm.physical_run([&](InstructionsBuilder& builder) {
        for (int k = 0; k < batch; ++k) builder.kernel(stream, "empty", {}, {x}, [](CallContext&) {});
      });
    }
    vm.sync();
  }
  const double cpu_seconds = process_cpu_seconds() - cpu_start;
  state.counters["per_instruction"] = per_instruction(state);
  state.counters["process_cpu_ns"] = cpu_seconds * 1e9 / (double(state.iterations()) * kChain);
  const VmStats stats = vm.stats();
  state.counters["fused_share"] = double(stats.fused_kernels) / double(stats.submitted);
}
BENCHMARK(BM_VmChain)
    ->ArgsProduct({{1, 100}, {0, 1}, {0, 1}})
    ->ArgNames({"batch", "fuse", "single"})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

}  // namespace

BENCHMARK_MAIN();

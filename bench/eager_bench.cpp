// Eager mode against the plain interpreter: MLP inference (samples/models/mlp.kiln: 784 -> 128
// -> 10 with softmax, a batch of 64 random inputs) run by ir::Interpreter and by
// compiler::EagerExecutor, whose kernel calls go through the instruction VM. The reference
// kernels do the same work both ways, so the difference is what eager mode costs on top: VM
// instructions, output buffers filled by a copy, the read-back of the outputs.
//
// A second pair runs a chain of 64 cheap ops on 16 values, where kernels cost next to nothing
// and the per-node overhead of each way shows ("per_node": wall time per call_function node).
//
//   single: the VM's single-thread mode (everything on the caller's thread) or its threads
//   spin:   the VM's threads spin (200 us scheduler, 50 us workers) before they sleep, the
//           default, or sleep at once; on a machine with fewer free cores than VM threads
//           spinning takes time from the kernels
// process_cpu_ms: CPU time of every thread of the process per run.
#include <benchmark/benchmark.h>

#include <time.h>

#include <chrono>
#include <map>
#include <random>
#include <string>

#include "compiler/eager_executor.h"
#include "ir/interpreter.h"
#include "ir/model_file.h"

namespace {

using namespace kiln;

constexpr int64_t kBatch = 64;
constexpr int kChainOps = 64;

double process_cpu_seconds() {
  timespec now{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &now);
  return double(now.tv_sec) + double(now.tv_nsec) * 1e-9;
}

Tensor random_tensor(const Sizes& sizes, uint32_t seed) {
  std::mt19937 generator(seed);
  std::uniform_real_distribution<double> uniform(-1.0, 1.0);
  std::vector<double> values(size_t(numel_of(sizes)));
  for (double& value : values) value = uniform(generator);
  return Tensor::from_doubles(sizes, values, DType::f32);
}

struct Workload {
  ir::Graph graph;
  std::map<std::string, Tensor> inputs;
};

size_t call_nodes(const ir::Graph& graph) {
  size_t count = 0;
  for (const ir::Node* node : graph.nodes()) count += node->op() == ir::OpKind::call_function;
  return count;
}

const Workload& mlp() {
  static const Workload workload = [] {
    Workload w;
    w.graph = ir::load_model(std::string(KILN_SOURCE_DIR) + "/samples/models/mlp.kiln");
    w.inputs["x"] = random_tensor({kBatch, 784}, 1);
    return w;
  }();
  return workload;
}

// x -> tanh(x * 0.5 + 0.25) repeated: every op computes a fresh [16] tensor.
const Workload& chain() {
  static const Workload workload = [] {
    Workload w;
    ir::Node* value = w.graph.create_placeholder("x", ir::TensorMeta::contiguous(DType::f32, {ir::SymInt(16)}));
    for (int i = 0; i < kChainOps; i += 2) {
      value = w.graph.create_call("mul", {value, 0.5});
      value = w.graph.create_call("tanh", {value});
    }
    w.graph.create_output({value});
    w.inputs["x"] = random_tensor({16}, 2);
    return w;
  }();
  return workload;
}

void report(benchmark::State& state, double cpu_seconds, size_t nodes) {
  const double runs = double(state.iterations());
  state.counters["process_cpu_ms"] = cpu_seconds * 1e3 / runs;
  state.counters["per_node"] = benchmark::Counter(runs * double(nodes), benchmark::Counter::kIsRate |
                                                                            benchmark::Counter::kInvert);
}

void run_interpreter(benchmark::State& state, const Workload& workload) {
  const double cpu_start = process_cpu_seconds();
  for (auto _ : state) benchmark::DoNotOptimize(ir::interpret(workload.graph, workload.inputs));
  report(state, process_cpu_seconds() - cpu_start, call_nodes(workload.graph));
}

// range(0): 1 for the VM's single-thread mode; range(1): 0 to let the VM's threads sleep at
// once when idle instead of spinning first (the default spins, 200 us and 50 us).
void run_eager(benchmark::State& state, const Workload& workload) {
  compiler::EagerOptions options;
  options.vm.single_thread = state.range(0) != 0;
  if (state.range(1) == 0) {
    options.vm.scheduler_spin = std::chrono::microseconds(0);
    options.vm.worker_spin = std::chrono::microseconds(0);
  }
  options.vm.watchdog_timeout = std::chrono::milliseconds(0);
  compiler::EagerExecutor eager(options);
  const double cpu_start = process_cpu_seconds();
  for (auto _ : state) benchmark::DoNotOptimize(eager.run(workload.graph, workload.inputs));
  report(state, process_cpu_seconds() - cpu_start, call_nodes(workload.graph));
  state.counters["kernel_calls"] = double(eager.last_run().kernel_calls);
}

void BM_MlpInterpreter(benchmark::State& state) { run_interpreter(state, mlp()); }
void BM_MlpEager(benchmark::State& state) { run_eager(state, mlp()); }
void BM_ChainInterpreter(benchmark::State& state) { run_interpreter(state, chain()); }
void BM_ChainEager(benchmark::State& state) { run_eager(state, chain()); }

BENCHMARK(BM_MlpInterpreter)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_MlpEager)
    ->ArgNames({"single", "spin"})
    ->Args({0, 1})
    ->Args({0, 0})
    ->Args({1, 1})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK(BM_ChainInterpreter)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BM_ChainEager)
    ->ArgNames({"single", "spin"})
    ->Args({0, 1})
    ->Args({0, 0})
    ->Args({1, 1})
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();

}  // namespace

BENCHMARK_MAIN();

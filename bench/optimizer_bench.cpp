// The fused Adam step (compiler/training/fused_optimizer.h) over ~1M and ~10M f32 parameters
// (eight parameters of odd sizes in one arena), with 1 and 2 threads. Counters:
//   useful_GB/s  the bytes one Adam step must move (read param, grad, exp_avg, exp_avg_sq;
//                write param, exp_avg, exp_avg_sq: 7 x 4 bytes per parameter) per second; the
//                figure to hold against the STREAM triad (bench/README.md) and against
//                PyTorch's fused/foreach Adam (bench/compare_optimizers.py prints both)
// The update runs in place (fused_optimizer.h): those bytes are all it moves.
// Build: make kiln_optimizer_bench (bench/CMakeLists.txt). Run:
// kiln_optimizer_bench [--benchmark_format=json]; KILN_CACHE_DIR chooses the compile cache.
#include <benchmark/benchmark.h>

#include <random>

#include "compiler/training/fused_optimizer.h"

namespace {

using namespace kiln;
using namespace kiln::training;

std::vector<NamedTensor> parameters_totalling(int64_t total) {
  std::mt19937 random(0);
  std::uniform_real_distribution<double> uniform(-1.0, 1.0);
  std::vector<NamedTensor> parameters;
  const int64_t count = 8;
  for (int64_t i = 0; i < count; ++i) {
    const int64_t size = total / count + (i % 2 == 0 ? 3 : -3);  // odd sizes
    std::vector<double> values(static_cast<size_t>(size));
    for (double& value : values) value = uniform(random);
    parameters.push_back({"p" + std::to_string(i), Tensor::from_doubles({size}, values, DType::f32)});
  }
  return parameters;
}

void fused_adam_step(benchmark::State& state) {
  const int64_t total = state.range(0);
  ParameterArena arena(parameters_totalling(total));
  std::map<std::string, Tensor> gradients;
  for (const std::string& name : arena.names()) gradients[name] = arena.parameter(name).clone();
  arena.accumulate_gradients(gradients, 0.01);
  FusedOptimizerOptions options;
  options.num_threads = int(state.range(1));
  FusedOptimizer adam = FusedOptimizer::adam(arena, AdamOptions{}, options);
  adam.step();  // first touch of the output buffers
  for (auto _ : state) adam.step();
  const double elements = double(arena.groups()[0].parameters.numel()) * double(state.iterations());
  state.counters["useful_GB/s"] = benchmark::Counter(elements * 7 * 4 / 1e9, benchmark::Counter::kIsRate);
  state.counters["params"] = double(arena.groups()[0].parameters.numel());
}

void zero_grad(benchmark::State& state) {
  ParameterArena arena(parameters_totalling(state.range(0)));
  for (auto _ : state) arena.zero_grad();
  state.counters["GB/s"] = benchmark::Counter(double(arena.groups()[0].gradients.nbytes()) * double(state.iterations()) / 1e9,
                                              benchmark::Counter::kIsRate);
}

BENCHMARK(fused_adam_step)
    ->ArgsProduct({{1 << 20, 10 << 20}, {1, 2}})
    ->ArgNames({"params", "threads"})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK(zero_grad)->Arg(10 << 20)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();

// The prelude's vectorizable float math (codegen/cpp/kiln_prelude.h) against libm over 1M
// floats, built with generated code's flags (-O3 -march=native -fno-math-errno -fopenmp-simd;
// no -ffast-math, under which std::exp and std::tanh stay scalar libm calls). Each benchmark
// maps an input array to an output array in one `omp simd` loop, as a generated kernel does;
// items_per_second is elements per second on one thread.
//
//   build/bench/kiln_prelude_math_bench --benchmark_filter='Exp|Tanh'
#include <benchmark/benchmark.h>

#include <cmath>
#include <random>
#include <vector>

#include "codegen/cpp/kiln_prelude.h"

namespace {

constexpr size_t kCount = 1 << 20;

std::vector<float> inputs(float low, float high) {
  std::mt19937 random(42);
  std::uniform_real_distribution<float> value(low, high);
  std::vector<float> data(kCount);
  for (float& x : data) x = value(random);
  return data;
}

template <typename Function>
void run(benchmark::State& state, float low, float high, Function function) {
  std::vector<float> in = inputs(low, high), out(kCount);
  const float* __restrict source = in.data();
  float* __restrict target = out.data();
  for (auto _ : state) {
#pragma omp simd
    for (size_t i = 0; i < kCount; ++i) target[i] = function(source[i]);
    benchmark::DoNotOptimize(target);
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(int64_t(state.iterations()) * int64_t(kCount));
}

void BM_KilnExp(benchmark::State& state) { run(state, -80, 80, [](float x) { return kiln_exp(x); }); }
void BM_StdExp(benchmark::State& state) { run(state, -80, 80, [](float x) { return std::exp(x); }); }
void BM_KilnTanh(benchmark::State& state) { run(state, -10, 10, [](float x) { return kiln_tanh(x); }); }
void BM_StdTanh(benchmark::State& state) { run(state, -10, 10, [](float x) { return std::tanh(x); }); }
void BM_KilnSigmoid(benchmark::State& state) { run(state, -20, 20, [](float x) { return kiln_sigmoid(x); }); }
void BM_StdSigmoid(benchmark::State& state) {
  run(state, -20, 20, [](float x) { return 1.0f / (1.0f + std::exp(-x)); });
}
void BM_KilnErf(benchmark::State& state) { run(state, -5, 5, [](float x) { return kiln_erf(x); }); }
void BM_StdErf(benchmark::State& state) { run(state, -5, 5, [](float x) { return std::erf(x); }); }
void BM_KilnLog(benchmark::State& state) { run(state, 1e-3f, 1e3f, [](float x) { return kiln_log(x); }); }
void BM_StdLog(benchmark::State& state) { run(state, 1e-3f, 1e3f, [](float x) { return std::log(x); }); }
void BM_KilnSin(benchmark::State& state) { run(state, -100, 100, [](float x) { return kiln_sin(x); }); }
void BM_StdSin(benchmark::State& state) { run(state, -100, 100, [](float x) { return std::sin(x); }); }
void BM_Copy(benchmark::State& state) { run(state, -1, 1, [](float x) { return x; }); }

BENCHMARK(BM_KilnExp);
BENCHMARK(BM_StdExp);
BENCHMARK(BM_KilnTanh);
BENCHMARK(BM_StdTanh);
BENCHMARK(BM_KilnSigmoid);
BENCHMARK(BM_StdSigmoid);
BENCHMARK(BM_KilnErf);
BENCHMARK(BM_StdErf);
BENCHMARK(BM_KilnLog);
BENCHMARK(BM_StdLog);
BENCHMARK(BM_KilnSin);
BENCHMARK(BM_StdSin);
BENCHMARK(BM_Copy);

}  // namespace

BENCHMARK_MAIN();

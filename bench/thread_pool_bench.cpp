// What one parallel loop costs to start and finish, with almost no work in it (64 floats): the
// generated modules' thread pool (codegen/cpp/kiln_thread_pool.h, included as modules paste it)
// against an OpenMP parallel region per loop (what generated code did before) and one OpenMP
// region with a worksharing loop (and its barrier) per loop (the "one region per model call"
// design). Run it on the CPUs and load you care about, e.g.
//   OMP_NUM_THREADS=2 taskset -c 0,1 build/bench/kiln_thread_pool_bench
//   (with and without OMP_WAIT_POLICY=passive, with and without busy processes on those CPUs)
#include <benchmark/benchmark.h>
#include <stdint.h>

// The prelude defines KILN_MODULE_STATE (codegen/cpp/kiln_prelude.h); this program is one unit.
#define KILN_MODULE_STATE static
#include "codegen/cpp/kiln_thread_pool.h"

namespace {

float data[64];

void BM_PoolParallelFor(benchmark::State& state) {
  kiln_pool_set_threads(omp_get_max_threads());
  for (auto _ : state) {
    kiln_parallel_for(64, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) data[i] += 1;
    });
  }
  benchmark::DoNotOptimize(data);
}

void BM_OpenMPRegionPerLoop(benchmark::State& state) {
  for (auto _ : state) {
#pragma omp parallel for schedule(static)
    for (int i = 0; i < 64; ++i) data[i] += 1;
  }
  benchmark::DoNotOptimize(data);
}

// Google Benchmark's loop cannot run inside a region: one region runs `loops` worksharing loops.
void BM_OpenMPBarrierPerLoopInOneRegion(benchmark::State& state) {
  const int64_t loops = 1000;
  for (auto _ : state) {
#pragma omp parallel
    for (int64_t r = 0; r < loops; ++r) {
#pragma omp for schedule(static)
      for (int i = 0; i < 64; ++i) data[i] += 1;
    }
  }
  benchmark::DoNotOptimize(data);
  state.SetItemsProcessed(state.iterations() * loops);  // items/s: loops per second
}

BENCHMARK(BM_PoolParallelFor)->UseRealTime();
BENCHMARK(BM_OpenMPRegionPerLoop)->UseRealTime();
BENCHMARK(BM_OpenMPBarrierPerLoopInOneRegion)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();

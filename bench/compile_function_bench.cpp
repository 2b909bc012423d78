// The per-call overhead of kiln::compile(fn) (include/kiln/compile.h): a call of the compiled
// function (guard check, then the compiled model) against CompiledModel::run of the same graph
// with the inputs already in a map, on a tiny graph so that the difference is the overhead.
// Cases: a static variant, a dynamic variant (symbolic batch, against a model compiled with
// the same symbolic placeholders), and the third of three variants
// (two guard lists fail first). And the VM's cost of a compiled graph run as one of its
// instructions (InstructionsBuilder::run_graph, as data-parallel training runs its backward
// stages), submitted and synced once per call, on a VM with its own threads and in its
// single-thread mode, against the same CompiledModel::run called directly.
//   build/bench/kiln_compile_function_bench --benchmark_repetitions=5 --benchmark_report_aggregates_only
#include <benchmark/benchmark.h>

#include <map>

#include "frontends/module/trace_graph.h"
#include "compiler/compile_driver.h"
#include "kiln/compile.h"
#include "kiln/trace.h"
#include "runtime/strides.h"
#include "runtime/vm/virtual_machine.h"

namespace {

using namespace kiln;

std::vector<Var> add_relu(const std::vector<Var>& in) { return {(in[0] + in[1]).relu()}; }

Tensor input(int64_t rows) { return Tensor::full({rows, 4}, 0.5, DType::f32); }

void BM_CompiledModelRun(benchmark::State& state) {
  ir::Graph graph = trace_graph(add_relu, {example_meta(input(8)), example_meta(input(8))});
  compiler::CompiledModel model = compiler::compile(graph);
  std::map<std::string, Tensor> inputs = {{"x0", input(8)}, {"x1", input(8)}};
  for (auto _ : state) benchmark::DoNotOptimize(model.run(inputs));
}

void BM_CompiledModelRunDynamic(benchmark::State& state) {
  ir::TensorMeta type = example_meta(input(8));
  type.shape[0] = ir::SymInt::symbol("s0");
  type.strides = contiguous_strides(type.shape);
  compiler::CompiledModel model = compiler::compile(trace_graph(add_relu, {type, type}));
  std::map<std::string, Tensor> inputs = {{"x0", input(8)}, {"x1", input(8)}};
  for (auto _ : state) benchmark::DoNotOptimize(model.run(inputs));
}

// range(0): 1 for the VM's single-thread mode.
void BM_CompiledModelRunThroughTheVm(benchmark::State& state) {
  ir::Graph graph = trace_graph(add_relu, {example_meta(input(8)), example_meta(input(8))});
  compiler::CompiledModel model = compiler::compile(graph);
  std::map<std::string, Tensor> inputs = {{"x0", input(8)}, {"x1", input(8)}};
  vm::VmOptions options;
  options.single_thread = state.range(0) != 0;
  options.watchdog_timeout = std::chrono::milliseconds(0);
  vm::VirtualMachine machine(options);
  vm::BufferPtr done = machine.new_buffer(8);
  for (auto _ : state) {
    machine.physical_run([&](vm::InstructionsBuilder& b) {
      b.run_graph(machine.stream(0), "add_relu", {}, {done}, {},
                  [&](vm::CallContext&) { benchmark::DoNotOptimize(model.run(inputs)); });
    });
    machine.sync();
  }
}

void BM_CompiledFunctionStatic(benchmark::State& state) {
  CompiledFunction f = compile(add_relu);
  Tensor a = input(8), b = input(8);
  f(a, b);
  for (auto _ : state) benchmark::DoNotOptimize(f(a, b));
}

void BM_CompiledFunctionDynamic(benchmark::State& state) {
  CompiledFunction f = compile(add_relu, {.dynamic = DynamicShapes::always});
  Tensor a = input(8), b = input(8);
  f(a, b);
  for (auto _ : state) benchmark::DoNotOptimize(f(a, b));
}

void BM_CompiledFunctionThirdVariant(benchmark::State& state) {
  CompiledFunction f = compile(add_relu, {.dynamic = DynamicShapes::never});
  f(Tensor::full({8, 4}, 0.5, DType::f64), Tensor::full({8, 4}, 0.5, DType::f64));
  f(input(9), input(9));
  Tensor a = input(8), b = input(8);
  f(a, b);
  for (auto _ : state) benchmark::DoNotOptimize(f(a, b));
}

BENCHMARK(BM_CompiledModelRun);
BENCHMARK(BM_CompiledModelRunDynamic);
BENCHMARK(BM_CompiledModelRunThroughTheVm)->Arg(0)->Arg(1);
BENCHMARK(BM_CompiledFunctionStatic);
BENCHMARK(BM_CompiledFunctionDynamic);
BENCHMARK(BM_CompiledFunctionThirdVariant);

}  // namespace

BENCHMARK_MAIN();

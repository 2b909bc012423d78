// samples/compile_fn: kiln::compile on a C++ function, the first thing to read about it.
//
// The function normalizes each row of x and, when the batch's mean is large, runs an extra
// scaling step: a branch on a value of the data, so kiln::compile breaks the graph there. A
// second function without the branch shows recompiles and automatic dynamic shapes: a batch
// size that changes becomes a symbol, and every later batch size reuses one compiled variant.
//
//   KILN_LOG=recompiles,dynamic,graph_breaks build/samples/compile_fn/compile_fn
#include <cstdio>
#include <vector>

#include "kiln/kiln.h"

namespace {

using kiln::Tensor;
using kiln::Var;

// Rows scaled to unit mean square; halved when the batch's mean is above 1 (a graph break).
std::vector<Var> normalize(const std::vector<Var>& in) {
  const Var& x = in[0];
  Var y = x * (x * x).mean({1}, /*keepdim=*/true).add(1e-6).rsqrt();
  if (x.mean().item() > 1.0) y = y * 0.5;  // needs the data: the graph ends here, runs, and fn goes on
  return {y};
}

// The same without the branch: one graph, guarded, recompiled only when a guard fails.
std::vector<Var> normalize_always(const std::vector<Var>& in) {
  const Var& x = in[0];
  return {x * (x * x).mean({1}, true).add(1e-6).rsqrt()};
}

Tensor batch(int64_t rows, double offset) {
  std::vector<double> values;
  for (int64_t i = 0; i < rows * 4; ++i) values.push_back(offset + double(i % 7) * 0.5);
  return Tensor::from_doubles({rows, 4}, values, kiln::DType::f32);
}

}  // namespace

int main() {
  try {
    std::printf("== kiln::explain(normalize) on a batch of 8 ==\n%s\n",
                kiln::explain(normalize, {batch(8, 0.0)}).to_string().c_str());

    kiln::CompiledFunction f = kiln::compile(normalize, {.name = "normalize"});
    for (double offset : {0.0, 3.0, -1.0}) {
      Tensor out = f(batch(8, offset))[0];
      std::printf("normalize(offset %+.1f)[0, 1] = %.4f\n", offset, out.flat_double(1));
    }
    kiln::CompiledFunctionStats stats = f.stats();
    std::printf("normalize: %zu calls, %zu graph breaks per call, %zu graphs compiled (one per path, plus the mean)\n\n",
                stats.calls, stats.graph_breaks, stats.break_graphs);

    kiln::CompiledFunction g = kiln::compile(normalize_always, {.name = "normalize_always"});
    for (int64_t rows : {8, 16, 3, 32, 1, 64}) g(batch(rows, 0.0));
    stats = g.stats();
    std::printf("normalize_always: %zu calls, %zu traces, %zu variants (static 8, then dynamic s0 >= 2, and 1)\n%s",
                stats.calls, stats.traces, stats.variants, g.guards_report().c_str());
    return 0;
  } catch (const kiln::Error& error) {
    std::fprintf(stderr, "error: %s\n", error.what());
    return 1;
  }
}

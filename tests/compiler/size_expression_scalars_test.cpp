// Size expressions where an op takes a Scalar (mul(x, s0), clamp(x, s0, 7), x > s0 * 2 + 1), as
// torch.export writes them for dynamic shapes: the interpreter, eager mode and the CPU backend
// evaluate them from the sizes the inputs bind, at two sizes of one compiled model, and agree.
#include <gtest/gtest.h>

#include <filesystem>

#include "compiler/compile_driver.h"
#include "compiler/eager_executor.h"
#include "ir/interpreter.h"
#include "ir/parser.h"
#include "tests/support/differential.h"
#include "tests/support/shared_compile_cache.h"
#include "tests/support/test_paths.h"

namespace kiln::compiler {
namespace {

TEST(SizeExpressionScalars, EveryTargetEvaluatesThemFromTheInputSizes) {
  ir::Graph graph = ir::parse_graph(
      "graph():\n"
      "    %x : f32[s0, 3] = placeholder[target=x]\n"
      "    %n : i64[s0] = placeholder[target=n]\n"
      "    %scaled : f32[s0, 3] = call_function[target=mul](args = (%x, s0), kwargs = {})\n"
      "    %shifted : f32[s0, 3] = call_function[target=add](args = (%scaled, s0 * 2 + 1), kwargs = {})\n"
      "    %clamped : f32[s0, 3] = call_function[target=clamp](args = (%shifted, s0, 9), kwargs = {})\n"
      "    %above : bool[s0, 3] = call_function[target=gt](args = (%x, s0 // 2), kwargs = {})\n"
      "    %counted : i64[s0] = call_function[target=sub](args = (%n, s0 % 3), kwargs = {})\n"
      "    return (clamped, above, counted)\n",
      "sizes.kiln");
  CompileOptions options;
  options.cache_dir = test_support::shared_compile_cache(std::filesystem::path(KILN_BINARY_DIR) / "test-compile-cache");
  CompiledModel model = compile(graph, options);
  for (int64_t rows : {2, 5}) {
    std::map<std::string, Tensor> inputs = {{"x", test_support::random_tensor({rows, 3}, DType::f32, 1)},
                                            {"n", test_support::random_tensor({rows}, DType::i64, 2)}};
    std::vector<Tensor> expected = ir::interpret(graph, inputs);
    // x * s0 + 2 s0 + 1, clamped to [s0, 9]: at 2 rows every value lies in [2, 9].
    if (rows == 2) {
      for (int64_t i = 0; i < expected[0].numel(); ++i) EXPECT_GE(expected[0].flat_double(i), 2.0);
    }
    std::vector<Tensor> eager = run_eager(graph, inputs);
    std::vector<Tensor> compiled = model.run(inputs, 2);
    for (size_t i = 0; i < expected.size(); ++i) {
      EXPECT_EQ(test_support::compare_tensors(expected[i], eager[i], 0, 0), "") << "eager, output " << i << ", " << rows << " rows";
      EXPECT_EQ(test_support::compare_tensors(expected[i], compiled[i], 1e-6, 1e-6), "")
          << "cpu, output " << i << ", " << rows << " rows";
    }
  }
}

}  // namespace
}  // namespace kiln::compiler

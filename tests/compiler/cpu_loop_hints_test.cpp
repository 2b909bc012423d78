// What the cpu target's generated C++ tells the compiler about its loops, and that the numbers
// stay the interpreter's: simd loops whose body applies an expensive op (exp, erf, sigmoid, ...)
// are marked KILN_INTERLEAVE_SIMD and cheap ones are not; reduction kernels prefetch the next
// row when a row has up to 16K elements, not when it is longer, and under a run-time test when
// its length is symbolic.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <regex>

#include "compiler/compile_driver.h"
#include "ir/interpreter.h"
#include "ir/parser.h"
#include "tests/support/differential.h"

namespace kiln::compiler {
namespace {

namespace fs = std::filesystem;
using test_support::compare_tensors;
using test_support::random_tensor;
using ::testing::HasSubstr;
using ::testing::Not;

CompileOptions options() {
  CompileOptions o;
  o.cache_dir = fs::path(KILN_BINARY_DIR) / "test-compile-cache";
  return o;
}

// How many simd loops of the generated code carry the interleave hint.
size_t interleaved_loops(const std::string& code) {
  static const std::regex hinted("#pragma omp simd\\n\\s*KILN_INTERLEAVE_SIMD\\n");
  return size_t(std::distance(std::sregex_iterator(code.begin(), code.end(), hinted), std::sregex_iterator()));
}

void expect_interpreters_numbers(const ir::Graph& graph, const std::map<std::string, Tensor>& inputs) {
  std::vector<Tensor> expected = ir::interpret(graph, inputs);
  CompiledModel model = compile(graph, options());
  for (int threads : {1, 2}) {
    std::vector<Tensor> actual = model.run(inputs, threads);
    ASSERT_EQ(actual.size(), expected.size());
    for (size_t i = 0; i < expected.size(); ++i)
      EXPECT_EQ(compare_tensors(expected[i], actual[i], 1e-6, 1e-6), "") << "output " << i << ", " << threads << " threads";
  }
}

TEST(CpuLoopHints, SimdLoopsOfExpensiveMathAreInterleavedAndCheapOnesAreNot) {
  // 4099 elements: a vector body and a remainder.
  ir::Graph gelu_chain = ir::parse_graph(
      "graph():\n"
      "    %x : f32[4099] = placeholder[target=x]\n"
      "    %scaled : f32[4099] = call_function[target=mul](args = (%x, 1.5), kwargs = {})\n"
      "    %gelu : f32[4099] = call_function[target=gelu](args = (%scaled,), kwargs = {})\n"
      "    %sigmoid : f32[4099] = call_function[target=sigmoid](args = (%x,), kwargs = {})\n"
      "    %out : f32[4099] = call_function[target=mul](args = (%gelu, %sigmoid), kwargs = {})\n"
      "    return (out,)\n",
      "gelu_chain.kiln");
  ir::Graph cheap = ir::parse_graph(
      "graph():\n"
      "    %x : f32[4099] = placeholder[target=x]\n"
      "    %scaled : f32[4099] = call_function[target=mul](args = (%x, 1.5), kwargs = {})\n"
      "    %out : f32[4099] = call_function[target=relu](args = (%scaled,), kwargs = {})\n"
      "    return (out,)\n",
      "cheap.kiln");
  EXPECT_EQ(interleaved_loops(dump_codegen_stage(gelu_chain, "cpp")), 1u);
  EXPECT_EQ(interleaved_loops(dump_codegen_stage(cheap, "cpp")), 0u);
  expect_interpreters_numbers(gelu_chain, {{"x", random_tensor({4099}, DType::f32, 1)}});
}

TEST(CpuLoopHints, ARowStepOfExpensiveMathIsInterleaved) {
  // layer_norm's normalizing row step, with the tanh of every element fused into it.
  ir::Graph graph = ir::parse_graph(
      "graph():\n"
      "    %x : f32[6, 70] = placeholder[target=x]\n"
      "    %norm : f32[6, 70] = call_function[target=layer_norm](args = (%x, [70]), kwargs = {})\n"
      "    %out : f32[6, 70] = call_function[target=tanh](args = (%norm,), kwargs = {})\n"
      "    return (out,)\n",
      "row_tanh.kiln");
  EXPECT_GE(interleaved_loops(dump_codegen_stage(graph, "cpp")), 1u);
  expect_interpreters_numbers(graph, {{"x", random_tensor({6, 70}, DType::f32, 2)}});
}

TEST(CpuLoopHints, ReductionsPrefetchTheNextRowOnlyWhenItWaitsInCache) {
  auto softmax = [](const std::string& shape) {
    return ir::parse_graph("graph():\n"
                           "    %x : f32[" + shape + "] = placeholder[target=x]\n"
                           "    %out : f32[" + shape + "] = call_function[target=softmax](args = (%x, -1), kwargs = {})\n"
                           "    return (out,)\n",
                           "softmax.kiln");
  };
  const std::string prefetch = "__builtin_prefetch(";
  // The next row: the same chunk, one row (1030 elements) on.
  std::string rows = dump_codegen_stage(softmax("9, 1030"), "cpp");
  EXPECT_THAT(rows, HasSubstr(prefetch));
  EXPECT_THAT(rows, HasSubstr("1030*x0 + 1030)"));
  EXPECT_THAT(dump_codegen_stage(softmax("2, 16385"), "cpp"), Not(HasSubstr(prefetch)));
  std::string symbolic = dump_codegen_stage(softmax("3, s0"), "cpp");
  EXPECT_THAT(symbolic, HasSubstr(") <= 16384) " + prefetch));

  expect_interpreters_numbers(softmax("9, 1030"), {{"x", random_tensor({9, 1030}, DType::f32, 3)}});
  expect_interpreters_numbers(softmax("3, s0"), {{"x", random_tensor({3, 100}, DType::f32, 4)}});
}

}  // namespace
}  // namespace kiln::compiler

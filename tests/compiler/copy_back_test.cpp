// The cpu target's copy-backs (compiler/compiled_model.h) come from the graph signature
// (ir/graph_signature.h), not from node names: a mutation output at any position is copied
// back into the input tensor or the buffer it names and left out of the returned outputs,
// whatever its node is called; an output merely named like the old convention ("x_mutated")
// is returned like any other.
#include <gtest/gtest.h>

#include <filesystem>

#include "compiler/compile_driver.h"
#include "ir/parser.h"
#include "tests/support/shared_compile_cache.h"
#include "tests/support/test_paths.h"

namespace kiln::compiler {
namespace {

CompileOptions test_options() {
  CompileOptions options;
  options.cache_dir = test_support::shared_compile_cache(std::filesystem::path(KILN_BINARY_DIR) / "test-compile-cache");
  return options;
}

Tensor values(std::vector<double> data) { return Tensor::from_doubles({int64_t(data.size())}, data, DType::f32); }

std::vector<double> doubles(const Tensor& tensor) {
  std::vector<double> result;
  for (int64_t i = 0; i < tensor.numel(); ++i) result.push_back(tensor.flat_double(i));
  return result;
}

TEST(CpuBackendCopyBack, MutationOutputsAreCopiedBackWhereverTheyAre) {
  Tensor running_mean = values({10, 20, 30});
  ir::Graph graph = ir::parse_graph(
      "graph():\n"
      "    %x : f32[3] = placeholder[target=x]\n"
      "    %mean : f32[3] = get_attr[target=bn.running_mean]\n"
      "    %doubled = call_function[target=mul](args = (%x, 2.0), kwargs = {})\n"
      "    %out = call_function[target=add](args = (%x, %mean), kwargs = {})\n"
      "    %blend = call_function[target=add](args = (%mean, %x), kwargs = {})\n"
      "    return (doubled, out, blend)\n"
      "Graph signature:\n"
      "    mean: BUFFER target=bn.running_mean\n"
      "    doubled: USER_INPUT_MUTATION target=x\n"
      "    out: USER_OUTPUT\n"
      "    blend: BUFFER_MUTATION target=bn.running_mean\n",
      "copy_back.kiln", {{"bn.running_mean", running_mean}});
  CompiledModel model = compile(graph, test_options());
  Tensor x = values({1, 2, 3});
  // out = x + mean; then x <- 2 x and mean <- mean + x (the buffer is the graph's tensor).
  std::vector<Tensor> first = model.run({{"x", x}});
  ASSERT_EQ(first.size(), 1u);
  EXPECT_EQ(doubles(first[0]), (std::vector<double>{11, 22, 33}));
  EXPECT_EQ(doubles(x), (std::vector<double>{2, 4, 6}));
  EXPECT_EQ(doubles(running_mean), (std::vector<double>{11, 22, 33}));
  // The next run reads the updated input and buffer.
  std::vector<Tensor> second = model.run({{"x", x}});
  ASSERT_EQ(second.size(), 1u);
  EXPECT_EQ(doubles(second[0]), (std::vector<double>{13, 26, 39}));
  EXPECT_EQ(doubles(x), (std::vector<double>{4, 8, 12}));
  EXPECT_EQ(doubles(running_mean), (std::vector<double>{13, 26, 39}));
}

TEST(CpuBackendCopyBack, AnOutputNamedLikeACopyBackIsJustAnOutput) {
  ir::Graph graph = ir::parse_graph(
      "graph():\n"
      "    %x : f32[3] = placeholder[target=x]\n"
      "    %neg = call_function[target=neg](args = (%x,), kwargs = {})\n"
      "    %x_mutated = call_function[target=mul](args = (%x, 2.0), kwargs = {})\n"
      "    return (neg, x_mutated)\n",
      "named.kiln");
  CompiledModel model = compile(graph, test_options());
  Tensor x = values({1, 2, 3});
  std::vector<Tensor> outputs = model.run({{"x", x}});
  ASSERT_EQ(outputs.size(), 2u);
  EXPECT_EQ(doubles(outputs[0]), (std::vector<double>{-1, -2, -3}));
  EXPECT_EQ(doubles(outputs[1]), (std::vector<double>{2, 4, 6}));
  EXPECT_EQ(doubles(x), (std::vector<double>{1, 2, 3}));
}

}  // namespace
}  // namespace kiln::compiler

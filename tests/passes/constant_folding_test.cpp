// Constant folding (passes/constant_folding.h) as the graph's parameters see it, which the golden
// files do not print: with freeze, a parameter or buffer that no get_attr reads and no mutation
// output writes back leaves the graph; without freeze every parameter stays.
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "ir/interpreter.h"
#include "ir/parser.h"
#include "passes/constant_folding.h"
#include "passes/dead_code_elimination.h"
#include "passes/functionalize.h"
#include "tests/support/differential.h"

namespace kiln::passes {
namespace {

ir::Graph model() {
  std::map<std::string, Tensor, std::less<>> parameters = {
      {"w", Tensor::full({2, 3}, 0.5, DType::f32)},
      {"unused", Tensor::full({4}, 1.0, DType::f32)},
      {"running", Tensor::full({3}, 0.0, DType::f32)}};
  return ir::parse_graph(
      "graph():\n"
      "    %x : f32[2, 3] = placeholder[target=x]\n"
      "    %w : f32[2, 3] = get_attr[target=w]\n"
      "    %running : f32[3] = get_attr[target=running]\n"
      "    %mean = call_function[target=mean](args = (%x, [0]), kwargs = {})\n"
      "    %copy_ = call_function[target=copy_](args = (%running, %mean), kwargs = {})\n"
      "    %t = call_function[target=transpose](args = (%w, 0, 1), kwargs = {})\n"
      "    %mm = call_function[target=matmul](args = (%x, %t), kwargs = {})\n"
      "    return (mm,)\n",
      "model.kiln", parameters);
}

bool has(const ir::Graph& graph, const std::string& name) { return graph.parameter(name) != nullptr; }

TEST(ConstantFolding, WithFreezeParametersNothingReadsOrWritesBackLeave) {
  ir::Graph graph = model();
  functionalize(graph);
  eliminate_dead_code(graph);
  ASSERT_TRUE(fold_constants(graph, /*freeze=*/true));
  EXPECT_FALSE(has(graph, "unused")) << "no get_attr reads it";
  EXPECT_TRUE(has(graph, "w")) << "its get_attr is still there until dead-code elimination";
  EXPECT_TRUE(has(graph, "running")) << "read by no node, but its copy_ writes it back";
  EXPECT_TRUE(has(graph, "_folded_t"));
  eliminate_dead_code(graph);
  fold_constants(graph, /*freeze=*/true);
  EXPECT_FALSE(has(graph, "w")) << "folded into _folded_t, and its get_attr gone";
  EXPECT_TRUE(has(graph, "running"));
  EXPECT_TRUE(has(graph, "_folded_t"));
}

TEST(ConstantFolding, WithoutFreezeEveryParameterStays) {
  ir::Graph graph = model();
  functionalize(graph);
  eliminate_dead_code(graph);
  fold_constants(graph, /*freeze=*/false);
  eliminate_dead_code(graph);
  fold_constants(graph, /*freeze=*/false);
  for (const char* name : {"w", "unused", "running"}) EXPECT_TRUE(has(graph, name)) << name;
}

// With freeze, a get_attr of a parameter equal to one read earlier reads that one, and the twin
// leaves the graph: w_twin (w's values) goes; w_near (one element apart) and zeros (equal to
// `running`, which a copy_ writes back and so is never shared) stay. The graph computes the same.
TEST(ConstantFolding, WithFreezeIdenticalParametersAreOne) {
  Tensor w = test_support::random_tensor({2, 3}, DType::f32, 7);
  Tensor near = w.clone();
  near.data<float>()[4] += 1.0f;
  std::map<std::string, Tensor, std::less<>> parameters = {{"w", w},
                                                           {"w_twin", w.clone()},
                                                           {"w_near", near},
                                                           {"running", Tensor::full({3}, 0.0, DType::f32)},
                                                           {"zeros", Tensor::full({3}, 0.0, DType::f32)}};
  const char* text =
      "graph():\n"
      "    %x : f32[2, 3] = placeholder[target=x]\n"
      "    %w : f32[2, 3] = get_attr[target=w]\n"
      "    %w_twin : f32[2, 3] = get_attr[target=w_twin]\n"
      "    %w_near : f32[2, 3] = get_attr[target=w_near]\n"
      "    %running : f32[3] = get_attr[target=running]\n"
      "    %zeros : f32[3] = get_attr[target=zeros]\n"
      "    %mean = call_function[target=mean](args = (%x, [0]), kwargs = {})\n"
      "    %copy_ = call_function[target=copy_](args = (%running, %mean), kwargs = {})\n"
      "    %a = call_function[target=add](args = (%x, %w), kwargs = {})\n"
      "    %b = call_function[target=mul](args = (%a, %w_twin), kwargs = {})\n"
      "    %c = call_function[target=mul](args = (%b, %w_near), kwargs = {})\n"
      "    %d = call_function[target=add](args = (%c, %zeros), kwargs = {})\n"
      "    return (d,)\n";
  ir::Graph graph = ir::parse_graph(text, "twins.kiln", parameters);
  std::map<std::string, Tensor> inputs = {{"x", test_support::random_tensor({2, 3}, DType::f32, 8)}};
  std::vector<Tensor> expected = ir::interpret(graph, inputs);
  functionalize(graph);
  eliminate_dead_code(graph);
  ASSERT_TRUE(fold_constants(graph, /*freeze=*/true));
  EXPECT_FALSE(has(graph, "w_twin"));
  for (const char* name : {"w", "w_near", "running", "zeros"}) EXPECT_TRUE(has(graph, name)) << name;
  std::vector<Tensor> actual = ir::interpret(graph, inputs);
  EXPECT_EQ(test_support::compare_tensors(expected[0], actual[0], 0, 0), "");
  // Without freeze parameters may change apart: each keeps its own.
  ir::Graph loose = ir::parse_graph(text, "twins.kiln", parameters);
  functionalize(loose);
  fold_constants(loose, /*freeze=*/false);
  EXPECT_TRUE(has(loose, "w_twin"));
}

}  // namespace
}  // namespace kiln::passes

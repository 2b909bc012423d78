// Constant folding (passes/constant_folding.h) as the graph's parameters see it, which the golden
// files do not print: with freeze, a parameter or buffer that no get_attr reads and no mutation
// output writes back leaves the graph; without freeze every parameter stays.
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "ir/parser.h"
#include "passes/constant_folding.h"
#include "passes/dead_code_elimination.h"
#include "passes/functionalize.h"

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

}  // namespace
}  // namespace kiln::passes

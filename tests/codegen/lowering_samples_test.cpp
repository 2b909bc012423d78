// The bundled sample models (samples/models), after the default pipeline, lowered and
// evaluated: the loop program matches the interpreter on the same graph and PyTorch's
// golden outputs; and the lowering's shape for each (no Fallback, the node kinds).
#include <gtest/gtest.h>

#include <filesystem>

#include "ir/model_file.h"
#include "passes/pass_manager.h"
#include "kiln/npy.h"
#include "tests/codegen/lowering_test_support.h"
#include "tests/support/test_paths.h"

namespace kiln::codegen::testing {
namespace {

namespace fs = std::filesystem;

const fs::path kModels = fs::path(KILN_SOURCE_DIR) / "samples" / "models";

ir::Graph simplified(const std::string& name) {
  ir::Graph graph = ir::load_model((kModels / (name + ".kiln")).string());
  passes::run_pipeline(graph, "simplified");
  return graph;
}

Inputs sample_inputs(const ir::Graph& graph, const std::string& name) {
  Inputs inputs;
  for (ir::Node* placeholder : graph.placeholders())
    inputs[placeholder->target()] =
        read_npy((kModels / (name + "_data") / "inputs" / (placeholder->target() + ".npy")).string());
  return inputs;
}

class LoweringSample : public ::testing::TestWithParam<std::string> {};

TEST_P(LoweringSample, MatchesTheInterpreter) {
  ir::Graph graph = simplified(GetParam());
  EXPECT_EQ(check_lowering(graph, sample_inputs(graph, GetParam())), "");
}

TEST_P(LoweringSample, MatchesPyTorch) {
  ir::Graph graph = simplified(GetParam());
  std::vector<Tensor> outputs = evaluate_loop_program(lower(graph), graph, sample_inputs(graph, GetParam()));
  std::vector<std::string> names = graph.output_names();
  ASSERT_EQ(outputs.size(), names.size());
  for (size_t i = 0; i < names.size(); ++i) {
    Tensor expected = read_npy((kModels / (GetParam() + "_data") / "expected" / (names[i] + ".npy")).string());
    ASSERT_EQ(outputs[i].sizes(), expected.sizes()) << names[i];
    for (int64_t k = 0; k < expected.numel(); ++k) {
      double e = expected.flat_double(k), a = outputs[i].flat_double(k);
      ASSERT_LE(std::fabs(a - e), 1e-5 + 1e-4 * std::fabs(e)) << names[i] << " element " << k;
    }
  }
}

TEST_P(LoweringSample, IsLoweredNatively) {
  LoopProgram program = lower(simplified(GetParam()));
  std::map<std::string, int> kinds = node_kinds(program);
  // The inplace sample's index_put nodes are the only ops without a native lowering.
  EXPECT_EQ(kinds["Fallback"], GetParam() == "inplace" ? 4 : 0) << print_loop_program(program);
  EXPECT_GT(kinds["Pointwise"], 0);
  for (int id : program.outputs) EXPECT_EQ(program.buffer(id).kind, BufferKind::Output);
}

INSTANTIATE_TEST_SUITE_P(Models, LoweringSample, ::testing::Values("mlp", "cnn", "attention", "inplace"));

TEST(LoweringSamples, MlpStructure) {
  LoopProgram program = lower(simplified("mlp"));
  // Pointwise: fc1's bias and relu, fc2's bias, softmax's shift, exp, the row sum's reciprocal
  // and the product; Reduction: softmax's max and sum.
  EXPECT_EQ(node_kinds(program), (std::map<std::string, int>{{"Gemm", 2}, {"Pointwise", 7}, {"Reduction", 2}}));
  ASSERT_EQ(program.symbols, (std::vector<std::string>{"s0"}));
  ASSERT_EQ(program.symbol_sources.size(), 1u);
  EXPECT_EQ(program.symbol_sources[0].input, 0);
  EXPECT_EQ(program.symbol_sources[0].dim, 0);
  // Parameters in order of first read; the output is the last product's buffer itself.
  std::vector<std::string> parameters;
  for (int id : program.parameters) parameters.push_back(program.buffer(id).source);
  EXPECT_EQ(parameters, (std::vector<std::string>{"fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias"}));
  ASSERT_EQ(program.outputs.size(), 1u);
  const Buffer& output = program.buffer(program.outputs[0]);
  EXPECT_EQ(output.name, "probs");
  EXPECT_EQ(output.source, "probs");
  EXPECT_EQ(output.position, 0);
  EXPECT_EQ(program.writer(program.outputs[0]), int(program.nodes.size()) - 1);
}

}  // namespace
}  // namespace kiln::codegen::testing

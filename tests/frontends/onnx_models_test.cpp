// Small real models exported from PyTorch (tests/data/onnx/models/: MLP, LeNet, a residual
// CNN with ResNet-18's structure, a MobileNet-v2 block, a transformer encoder layer, a
// GPT-2-style block with embeddings and a causal mask) and a model with external weights,
// imported, run by the interpreter and by the CPU backend, compared with ONNX Runtime.
#include "frontends/model_loader.h"
#include "frontends/onnx/onnx_importer.h"
#include "ir/interpreter.h"
#include "tests/frontends/onnx_test_support.h"

namespace kiln::frontends::testing {
namespace {

class OnnxModel : public ::testing::TestWithParam<std::string> {};

TEST_P(OnnxModel, InterpreterMatchesOnnxRuntime) {
  fs::path folder = kOnnxData / "models" / GetParam();
  ir::Graph graph = import_onnx((folder / "model.onnx").string());
  std::vector<Tensor> actual = ir::interpret(graph, case_inputs(graph, folder));
  expect_outputs_match(read_numbered(folder, "output"), actual, GetParam());
}

TEST_P(OnnxModel, CpuBackendMatchesOnnxRuntime) {
  fs::path folder = kOnnxData / "models" / GetParam();
  ir::Graph graph = import_onnx((folder / "model.onnx").string());
  compiler::CompiledModel model = compiler::compile(graph, onnx_test_compile_options());
  std::vector<Tensor> actual = model.run(case_inputs(graph, folder));
  expect_outputs_match(read_numbered(folder, "output"), actual, GetParam());
}

INSTANTIATE_TEST_SUITE_P(Exported, OnnxModel, ::testing::ValuesIn(onnx_cases("models")),
                         [](const ::testing::TestParamInfo<std::string>& param_info) { return param_info.param; });

TEST(OnnxModels, EveryExportedModelIsPresent) {
  std::vector<std::string> expected = {"gpt_block", "lenet", "mlp", "mobilenet_block", "resnet_tiny",
                                       "transformer_encoder_layer"};
  EXPECT_EQ(onnx_cases("models"), expected);
}

TEST(OnnxModels, ExternalWeightsAreReadFromTheirFile) {
  fs::path folder = kOnnxData / "external";
  ir::Graph graph = load_model((folder / "model.onnx").string());
  ASSERT_NE(graph.parameter("w"), nullptr);
  expect_outputs_match(read_numbered(folder, "output"), ir::interpret(graph, case_inputs(graph, folder)), "external");
  compiler::CompiledModel model = compiler::compile(graph, onnx_test_compile_options());
  expect_outputs_match(read_numbered(folder, "output"), model.run(case_inputs(graph, folder)), "external");
}

}  // namespace
}  // namespace kiln::frontends::testing

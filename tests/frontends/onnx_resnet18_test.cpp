// A real ResNet-18 (random weights, 224x224 input; 47 MB, so generated in the test set-up by
// scripts/make_resnet18_onnx.py rather than committed: tests/frontends/onnx_generated_data.h)
// imported and compiled by the CPU backend, its logits matched against ONNX Runtime's within
// 1e-4 of their magnitude.
#include "frontends/onnx/onnx_importer.h"
#include "tests/frontends/onnx_generated_data.h"
#include "tests/frontends/onnx_test_support.h"

namespace kiln::frontends::testing {
namespace {

TEST(OnnxResNet18, CpuBackendMatchesOnnxRuntime) {
  std::optional<fs::path> data = generated_onnx_test_data();
  if (!data) {
    if (generated_onnx_test_data_required()) FAIL() << missing_generated_onnx_test_data();
    GTEST_SKIP() << missing_generated_onnx_test_data();
  }
  fs::path folder = *data / "resnet18";
  ir::Graph graph = import_onnx((folder / "model.onnx").string());
  EXPECT_EQ(graph.placeholders().size(), 1u);
  compiler::CompiledModel model = compiler::compile(graph, onnx_test_compile_options());
  expect_outputs_match(read_numbered(folder, "output"), model.run(case_inputs(graph, folder)), "ResNet-18");
}

}  // namespace
}  // namespace kiln::frontends::testing

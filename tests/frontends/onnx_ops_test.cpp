// Every single-op ONNX case of tests/data/onnx/ops/ (one op per opset form, built with
// onnx.helper by scripts/make_onnx_test_models.py) imported, run by the interpreter and by
// the CPU backend, and compared with ONNX Runtime's outputs.
#include "frontends/onnx/onnx_importer.h"
#include "ir/interpreter.h"
#include "tests/frontends/onnx_test_support.h"

namespace kiln::frontends::testing {
namespace {

class OnnxOp : public ::testing::TestWithParam<std::string> {};

TEST_P(OnnxOp, InterpreterMatchesOnnxRuntime) {
  fs::path folder = kOnnxData / "ops" / GetParam();
  ir::Graph graph = import_onnx((folder / "model.onnx").string());
  std::vector<Tensor> actual = ir::interpret(graph, case_inputs(graph, folder));
  expect_outputs_match(read_numbered(folder, "output"), actual, GetParam());
}

TEST_P(OnnxOp, CpuBackendMatchesOnnxRuntime) {
  fs::path folder = kOnnxData / "ops" / GetParam();
  ir::Graph graph = import_onnx((folder / "model.onnx").string());
  compiler::CompiledModel model = compiler::compile(graph, onnx_test_compile_options());
  std::vector<Tensor> actual = model.run(case_inputs(graph, folder));
  expect_outputs_match(read_numbered(folder, "output"), actual, GetParam());
}

INSTANTIATE_TEST_SUITE_P(Cases, OnnxOp, ::testing::ValuesIn(onnx_cases("ops")),
                         [](const ::testing::TestParamInfo<std::string>& param_info) { return param_info.param; });

}  // namespace
}  // namespace kiln::frontends::testing

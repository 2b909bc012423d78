// The importer writes Atan, Asin and Acos with Kiln's core ops (a range reduction and a
// polynomial: frontends/onnx/onnx_ops_math.cpp). Over the grids of tests/data/onnx/ops/{atan,
// asin,acos} (the edges +-1, 0, huge values and infinities included) their results through the
// interpreter and the CPU backend are within 4e-6 relative (plus 2e-7 absolute) of the C
// library's, computed in double.
#include <cmath>

#include "frontends/onnx/onnx_importer.h"
#include "ir/interpreter.h"
#include "tests/frontends/onnx_test_support.h"

namespace kiln::frontends::testing {
namespace {

void expect_close_to(const std::string& case_name, double (*exact)(double)) {
  fs::path folder = kOnnxData / "ops" / case_name;
  ir::Graph graph = import_onnx((folder / "model.onnx").string());
  std::map<std::string, Tensor> inputs = case_inputs(graph, folder);
  const Tensor& x = inputs.begin()->second;
  compiler::CompiledModel model = compiler::compile(graph, onnx_test_compile_options());
  for (const Tensor& y : {ir::interpret(graph, inputs)[0], model.run(inputs)[0]}) {
    ASSERT_EQ(y.numel(), x.numel());
    for (int64_t i = 0; i < x.numel(); ++i) {
      double expected = exact(x.flat_double(i)), actual = y.flat_double(i);
      EXPECT_NEAR(actual, expected, 4e-6 * std::fabs(expected) + 2e-7) << case_name << " at x = " << x.flat_double(i);
    }
  }
}

TEST(OnnxInverseTrigonometry, WithinFourMillionthsOfTheCLibrary) {
  expect_close_to("atan", [](double x) { return std::atan(x); });
  expect_close_to("asin", [](double x) { return std::asin(x); });
  expect_close_to("acos", [](double x) { return std::acos(x); });
}

}  // namespace
}  // namespace kiln::frontends::testing

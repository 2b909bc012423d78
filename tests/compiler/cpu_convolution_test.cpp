// Tests of the cpu target's convolutions through oneDNN (codegen/cpp/kiln_dnnl.h, lowered by
// codegen/lowering_convolution.cpp when Kiln was built with oneDNN; without it they check the
// im2col path the same way): the cnn sample compiled with and without frozen parameters, run
// several times and at two batch sizes (each convolution keeps primitives per geometry, and
// with frozen parameters its weights reordered once), against the interpreter and PyTorch.
#include <gtest/gtest.h>

#include <filesystem>

#include "compiler/compile_driver.h"
#include "compiler/target_registry.h"
#include "ir/interpreter.h"
#include "ir/model_file.h"
#include "ir/parser.h"
#include "kiln/npy.h"
#include "tests/support/differential.h"

namespace kiln::compiler {
namespace {

namespace fs = std::filesystem;
using test_support::compare_tensors;

CompileOptions options(bool freeze) {
  CompileOptions o;
  o.cache_dir = fs::path(KILN_BINARY_DIR) / "test-compile-cache";
  o.freeze = freeze;
  return o;
}

bool built_with_onednn() { return find_code_target("cpu").lowering_options().library_convolution; }

fs::path sample_dir() { return fs::path(KILN_SOURCE_DIR) / "samples" / "models"; }

std::map<std::string, Tensor> cnn_inputs() {
  std::map<std::string, Tensor> inputs;
  for (const auto& entry : fs::directory_iterator(sample_dir() / "cnn_data" / "inputs")) {
    inputs[entry.path().stem().string()] = read_npy(entry.path().string());
  }
  return inputs;
}

TEST(CpuConvolution, CnnSampleMatchesWithAndWithoutFrozenParameters) {
  ir::Graph graph = ir::load_model((sample_dir() / "cnn.kiln").string());
  std::map<std::string, Tensor> inputs = cnn_inputs();
  std::vector<Tensor> expected = ir::interpret(graph, inputs);
  std::vector<std::string> names = graph.output_names();
  for (bool freeze : {false, true}) {
    CompiledModel model = compile(graph, options(freeze));
    for (int call = 0; call < 3; ++call) {  // later calls reuse the primitives (and packed weights)
      std::vector<Tensor> actual = model.run(inputs, 2);
      ASSERT_EQ(actual.size(), expected.size());
      for (size_t i = 0; i < expected.size(); ++i) {
        EXPECT_EQ(compare_tensors(expected[i], actual[i], 1e-4, 1e-5), "")
            << names[i] << " freeze=" << freeze << " call " << call;
        fs::path golden = sample_dir() / "cnn_data" / "expected" / (names[i] + ".npy");
        if (fs::exists(golden)) {
          EXPECT_EQ(compare_tensors(read_npy(golden.string()), actual[i], 1e-4, 1e-5), "") << names[i] << " vs PyTorch";
        }
      }
    }
  }
}

TEST(CpuConvolution, GeneratedCodeCallsOneDnnWhenBuiltWithIt) {
  ir::Graph graph = ir::load_model((sample_dir() / "cnn.kiln").string());
  CodegenStageOptions stage;
  std::string source = dump_codegen_stage(graph, "cpp", stage);
  bool calls = source.find("kiln_convolution(&cache") != std::string::npos;
  EXPECT_EQ(calls, built_with_onednn());
  stage.freeze = true;
  std::string frozen = dump_codegen_stage(graph, "cpp", stage);
  if (built_with_onednn()) {
    EXPECT_NE(frozen.find("weights prepacked once"), std::string::npos);
  }
}

TEST(CpuConvolution, SymbolicBatchRemakesThePrimitivesPerGeometry) {
  // One convolution at batch 1, 3, then 1 again: the cache holds an entry per geometry.
  ir::Graph graph = ir::parse_graph(
      "graph():\n"
      "    %x : f32[s0, 3, 9, 9] = placeholder[target=x]\n"
      "    %w : f32[4, 3, 3, 3] = placeholder[target=w]\n"
      "    %b : f32[4] = placeholder[target=b]\n"
      "    %c : f32[s0, 4, 5, 5] = call_function[target=convolution](args = (%x, %w, %b, [2, 2], [1, 1], [1, 1], False, [0, 0], 1), kwargs = {})\n"
      "    %y : f32[s0, 4, 5, 5] = call_function[target=relu](args = (%c,), kwargs = {})\n"
      "    return (y,)\n",
      "test.kiln");
  CompiledModel model = compile(graph, options(false));
  for (int64_t batch : {1, 3, 1}) {
    std::map<std::string, Tensor> inputs = {{"x", test_support::random_tensor({batch, 3, 9, 9}, DType::f32, 1)},
                                            {"w", test_support::random_tensor({4, 3, 3, 3}, DType::f32, 2)},
                                            {"b", test_support::random_tensor({4}, DType::f32, 3)}};
    std::vector<Tensor> expected = ir::interpret(graph, inputs);
    std::vector<Tensor> actual = model.run(inputs, 2);
    EXPECT_EQ(compare_tensors(expected[0], actual[0], 1e-4, 1e-5), "") << "batch " << batch;
  }
}

}  // namespace
}  // namespace kiln::compiler

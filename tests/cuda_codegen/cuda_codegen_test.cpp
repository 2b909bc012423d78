// Differential tests of the CUDA code generator (codegen/cuda/cuda_emitter.h) without a GPU:
// every generated kernel of every core-op case (tests/support/op_coverage_cases.h), of the
// samples and of random graphs is built with the host compiler through the CPU emulation and
// run by the runtime's launch-plan runner as on a GPU (tests/cuda_codegen/emulated_model.h),
// against the reference interpreter. Also: what the generator chooses (128-bit accesses for contiguous
// pointwise kernels, one block per row, split whole-tensor reductions, GEMMs as library calls)
// and an index fault reported, not a wrong number.
#include <gtest/gtest.h>

#include <filesystem>

#include "ir/interpreter.h"
#include "ir/model_file.h"
#include "ir/parser.h"
#include "ir/printer.h"
#include "kiln/npy.h"
#include "tests/cuda_codegen/emulated_model.h"
#include "tests/support/differential.h"
#include "tests/support/op_coverage_cases.h"
#include "tests/support/random_graph.h"
#include "tests/support/test_paths.h"

#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

namespace kiln::codegen::cuda {
namespace {

namespace fs = std::filesystem;
using testing::EmulatedModel;

void expect_matches_interpreter(const ir::Graph& graph, const std::vector<std::map<std::string, Tensor>>& input_sets,
                                double rtol, double atol) {
  EmulatedModel model = EmulatedModel::compile(graph);
  for (const auto& inputs : input_sets) {
    std::vector<Tensor> expected = ir::interpret(graph, inputs);
    std::vector<Tensor> actual = model.run(inputs);
    ASSERT_GE(actual.size(), expected.size());
    std::vector<std::string> names = graph.output_names();
    for (size_t i = 0; i < expected.size(); ++i) {
      EXPECT_EQ(test_support::compare_tensors(expected[i], actual[i], rtol, atol), "")
          << "output " << names[i] << "\n" << ir::print_graph(graph);
    }
  }
}

class CudaCodegenOps : public ::testing::TestWithParam<size_t> {};

TEST_P(CudaCodegenOps, EmulatedKernelsMatchTheInterpreter) {
  std::vector<test_support::OpCoverageCase> cases = test_support::op_coverage_cases();
  test_support::OpCoverageCase& c = cases.at(GetParam());
  SCOPED_TRACE(c.name);
  expect_matches_interpreter(c.graph, c.input_sets, c.rtol, c.atol);
}

INSTANTIATE_TEST_SUITE_P(CoreOps, CudaCodegenOps, ::testing::Range(size_t(0), test_support::op_coverage_cases().size()),
                         [](const ::testing::TestParamInfo<size_t>& case_info) {
                           return test_support::op_coverage_cases().at(case_info.param).name;
                         });

class CudaCodegenSamples : public ::testing::TestWithParam<std::string> {};

TEST_P(CudaCodegenSamples, EmulatedKernelsMatchTheInterpreter) {
  fs::path dir = fs::path(KILN_SOURCE_DIR) / "samples" / "models";
  ir::Graph graph = ir::load_model((dir / (GetParam() + ".kiln")).string());
  std::map<std::string, Tensor> inputs;
  for (const auto& entry : fs::directory_iterator(dir / (GetParam() + "_data") / "inputs")) {
    inputs[entry.path().stem().string()] = read_npy(entry.path().string());
  }
  expect_matches_interpreter(graph, {inputs}, 1e-4, 1e-5);
}

INSTANTIATE_TEST_SUITE_P(Samples, CudaCodegenSamples, ::testing::Values("mlp", "cnn", "attention", "inplace"));

TEST(CudaCodegen, RandomGraphsMatchTheInterpreter) {
  int count = 16;
  if (const char* env = std::getenv("KILN_CUDA_RANDOM_GRAPHS")) count = std::atoi(env);
  for (int seed = 0; seed < count; ++seed) {
    ir::Graph graph = test_support::random_graph(uint64_t(seed));
    std::map<std::string, Tensor> inputs = test_support::random_inputs(graph, uint64_t(seed));
    std::map<std::string, Tensor> inputs_copy;
    for (auto& [k, v] : inputs) inputs_copy[k] = v.clone();
    std::vector<Tensor> expected;
    try {
      expected = ir::interpret(graph, inputs_copy);
    } catch (const Error&) {
      continue;  // the graph is invalid for these inputs (the interpreter refuses it too)
    }
    SCOPED_TRACE("seed " + std::to_string(seed));
    std::vector<Tensor> actual;
    try {
      actual = EmulatedModel::compile(graph).run(inputs);
    } catch (const std::exception& error) {
      ADD_FAILURE() << error.what() << "\n" << ir::print_graph(graph);
      continue;
    }
    ASSERT_GE(actual.size(), expected.size());
    for (size_t i = 0; i < expected.size(); ++i) {
      EXPECT_EQ(test_support::compare_tensors(expected[i], actual[i], 1e-3, 1e-4), "") << "output " << i << "\n"
                                                                                       << ir::print_graph(graph);
    }
  }
}

ir::Node* input(ir::Graph& graph, const std::string& name, const std::vector<ir::SymInt>& shape) {
  return graph.create_placeholder(name, ir::TensorMeta::contiguous(DType::f32, shape));
}

const LaunchStep* find_launch(const CudaModule& module, const std::string& suffix) {
  for (const LaunchStep& step : module.steps) {
    const std::string& name = step.launch.name;
    if (step.kind == LaunchStep::Kind::Kernel && name.size() >= suffix.size() &&
        name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0) {
      return &step;
    }
  }
  return nullptr;
}

TEST(CudaCodegen, ContiguousPointwiseKernelsUse128BitAccessesWithAScalarTail) {
  for (int64_t n : {4096, 4099}) {
    ir::Graph graph;
    ir::Node* x = input(graph, "x", {n});
    ir::Node* y = input(graph, "y", {n});
    graph.create_output({graph.create_call("mul", {graph.create_call("exp", {x}), y})});
    EmulatedModel model = EmulatedModel::compile(graph);
    EXPECT_NE(model.module().source.find("*reinterpret_cast<const float4*>"), std::string::npos);
    EXPECT_NE(model.module().source.find("*reinterpret_cast<float4*>"), std::string::npos);
    // One thread per 4 points, 256 to a block: 4096 points are 4 blocks, 4099 are 5. The
    // misaligned run below covers all points with those threads, in the scalar loop.
    ASSERT_EQ(model.module().steps.size(), 1u);
    EXPECT_EQ(model.module().steps[0].launch.grid, ir::SymInt(n == 4096 ? 4 : 5));
    std::map<std::string, Tensor> inputs = {{"x", test_support::random_tensor({n}, DType::f32, 1)},
                                            {"y", test_support::random_tensor({n}, DType::f32, 2)}};
    // An input that is a view one element in is copied to the device like any other.
    Tensor shifted = test_support::random_tensor({n + 1}, DType::f32, 3).as_strided({n}, {1}, 1);
    expect_matches_interpreter(graph, {inputs, {{"x", shifted}, {"y", inputs.at("y")}}}, 1e-6, 1e-6);
    // Misaligned device memory (every buffer 4 bytes past 16-byte alignment) takes the scalar loop.
    EmulatedModel misaligned = EmulatedModel::compile(graph, {}, /*misalign_bytes=*/4);
    std::vector<Tensor> expected = ir::interpret(graph, inputs);
    EXPECT_EQ(test_support::compare_tensors(expected[0], misaligned.run(inputs)[0], 1e-6, 1e-6), "");
  }
}

TEST(CudaCodegen, SoftmaxIsOneKernelWithOneBlockPerRow) {
  ir::Graph graph;
  ir::Node* x = input(graph, "x", {7, 300});
  graph.create_output({graph.create_call("softmax", {x, -1})});
  EmulatedModel model = EmulatedModel::compile(graph);
  ASSERT_EQ(model.module().steps.size(), 1u);
  const KernelLaunch& launch = model.module().steps[0].launch;
  EXPECT_EQ(launch.grid, ir::SymInt(7));
  EXPECT_EQ(launch.block, 256);
  EXPECT_GT(launch.shared_bytes, 0);
  EXPECT_NE(model.module().source.find("kiln_block_reduce<KilnMaxOp<float>>"), std::string::npos);
}

TEST(CudaCodegen, LongWholeTensorReductionsSplitAcrossBlocks) {
  ir::Graph graph;
  ir::Node* x = input(graph, "x", {200000});
  graph.create_output({graph.create_call("sum", {x})});
  EmulatedModel model = EmulatedModel::compile(graph);
  const LaunchStep* partial = find_launch(model.module(), "_partial");
  ASSERT_NE(partial, nullptr);
  EXPECT_GT(partial->launch.grid.constant(), 1);
  EXPECT_GT(model.module().workspace_bytes.constant(), 0);
  expect_matches_interpreter(graph, {{{"x", test_support::random_tensor({200000}, DType::f32, 4)}}}, 1e-5, 1e-3);
}

TEST(CudaCodegen, GemmsAreLibraryCallsAndTheirEpiloguesKernels) {
  ir::Graph graph;
  ir::Node* a = input(graph, "a", {5, 8});
  ir::Node* b = input(graph, "b", {8, 3});
  graph.create_output({graph.create_call("gelu", {graph.create_call("matmul", {a, b})})});
  EmulatedModel model = EmulatedModel::compile(graph);
  ASSERT_EQ(model.module().steps.size(), 2u);
  EXPECT_EQ(model.module().steps[0].kind, LaunchStep::Kind::Library);
  EXPECT_NE(find_launch(model.module(), "_epilogue"), nullptr);
  EXPECT_EQ(model.module().source.find("cublas"), std::string::npos);
}

// Transposed convolutions lower to a GEMM and a gather of their taps for the cuda target as for the
// cpu one (codegen/lowering_convolution.cpp): a UNet's 2x upsampling (kernel 4, padding 1; each
// phase of the output gathered by a node of its own, then read back in order) and a 1-d one of
// stride 3 with groups, dilation and an output padding, none a fallback.
TEST(CudaCodegen, TransposedConvolutionsAreAGemmAndGathersThatMatchTheInterpreter) {
  ir::Graph graph = ir::parse_graph(
      "graph():\n"
      "    %x : f32[2, 6, 5, 7] = placeholder[target=x]\n"
      "    %w : f32[6, 4, 4, 4] = placeholder[target=w]\n"
      "    %b : f32[4] = placeholder[target=b]\n"
      "    %z : f32[2, 4, 9] = placeholder[target=z]\n"
      "    %v : f32[4, 3, 5] = placeholder[target=v]\n"
      "    %up = call_function[target=convolution](args = (%x, %w, %b, [2, 2], [1, 1], [1, 1], True, [0, 0], 1), kwargs = {})\n"
      "    %wide = call_function[target=convolution](args = (%z, %v, None, [3], [2], [2], True, [1], 2), kwargs = {})\n"
      "    return (up, wide)\n",
      "transposed.kiln");
  EmulatedModel model = EmulatedModel::compile(graph);
  size_t library_steps = 0;
  for (const LaunchStep& step : model.module().steps) library_steps += step.kind == LaunchStep::Kind::Library;
  EXPECT_EQ(library_steps, 2u);  // the two GEMMs
  EXPECT_NE(find_launch(model.module(), "up_phase_0_0"), nullptr);
  expect_matches_interpreter(graph,
                             {{{"x", test_support::random_tensor({2, 6, 5, 7}, DType::f32, 11)},
                               {"w", test_support::random_tensor({6, 4, 4, 4}, DType::f32, 12)},
                               {"b", test_support::random_tensor({4}, DType::f32, 13)},
                               {"z", test_support::random_tensor({2, 4, 9}, DType::f32, 14)},
                               {"v", test_support::random_tensor({4, 3, 5}, DType::f32, 15)}}},
                             1e-5, 1e-5);
}

TEST(CudaCodegen, AnIndexOutOfRangeIsAFaultNotAWrongNumber) {
  ir::Graph graph;
  ir::Node* x = input(graph, "x", {5, 7});
  ir::Node* rows = graph.create_placeholder("rows", ir::TensorMeta::contiguous(DType::i64, {2}));
  graph.create_output({graph.create_call("index_select", {x, 0, rows})});
  EmulatedModel model = EmulatedModel::compile(graph);
  try {
    model.run({{"x", test_support::random_tensor({5, 7}, DType::f32, 1)},
               {"rows", Tensor::from_doubles({2}, std::vector<double>{1, 5}, DType::i64)}});
    ADD_FAILURE() << "no error";
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find("IndexError"), std::string::npos) << error.what();
  }
}

}  // namespace
}  // namespace kiln::codegen::cuda

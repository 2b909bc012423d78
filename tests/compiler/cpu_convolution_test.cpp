// Tests of the cpu target's convolutions through oneDNN (codegen/cpp/kiln_dnnl.h, lowered by
// codegen/lowering_convolution.cpp when Kiln was built with oneDNN; without it they check the
// im2col path the same way): the cnn sample compiled with and without frozen parameters, run
// several times and at two batch sizes (each convolution keeps primitives per geometry, and
// with frozen parameters its weights reordered once), against the interpreter and PyTorch.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <limits>
#include <string_view>

#include "compiler/compile_driver.h"
#include "compiler/target_registry.h"
#include "ir/interpreter.h"
#include "ir/model_file.h"
#include "ir/parser.h"
#include "kiln/npy.h"
#include "runtime/cpu_features.h"
#include "tests/support/differential.h"
#include "tests/support/onednn_log.h"
#include "tests/support/shared_compile_cache.h"
#include "tests/support/test_paths.h"

namespace kiln::compiler {
namespace {

namespace fs = std::filesystem;
using test_support::compare_tensors;
using test_support::onednn_has_avx512;
using test_support::onednn_log_of;

CompileOptions options(bool freeze) {
  CompileOptions o;
  o.cache_dir = test_support::shared_compile_cache(fs::path(KILN_BINARY_DIR) / "test-compile-cache");
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

// A module whose library calls are mostly oneDNN convolutions runs its loops on OpenMP's team
// (the one oneDNN keeps spinning), through the module's own runner (codegen/cpp/
// kiln_openmp_team.h), never a `#pragma omp parallel` the compiler would have to lower; on 1, 2
// and 3 threads, the team of each size, as the interpreter computes.
TEST(CpuConvolution, ConvolutionLedModulesRunTheirLoopsOnOpenMPsTeamThroughTheirRunner) {
  if (!built_with_onednn()) GTEST_SKIP() << "Kiln was built without oneDNN: no convolution-led module";
  // Large enough for a parallel pointwise loop (the product of the two convolutions) and a
  // whole-tensor sum (of another input) split in parts.
  ir::Graph graph = ir::parse_graph(
      "graph():\n"
      "    %x : f32[2, 8, 64, 64] = placeholder[target=x]\n"
      "    %w : f32[16, 8, 3, 3] = placeholder[target=w]\n"
      "    %w2 : f32[16, 8, 3, 3] = placeholder[target=w2]\n"
      "    %a : f32[2, 16, 64, 64] = call_function[target=convolution](args = (%x, %w, None, [1, 1], [1, 1], [1, 1], False, [0, 0], 1), kwargs = {})\n"
      "    %b : f32[2, 16, 64, 64] = call_function[target=convolution](args = (%x, %w2, None, [1, 1], [1, 1], [1, 1], False, [0, 0], 1), kwargs = {})\n"
      "    %p : f32[2, 16, 64, 64] = call_function[target=mul](args = (%a, %b), kwargs = {})\n"
      "    %v : f32[200000] = placeholder[target=v]\n"
      "    %total : f32[] = call_function[target=sum](args = (%v,), kwargs = {})\n"
      "    return (p, total)\n",
      "test.kiln");
  std::string source = dump_codegen_stage(graph, "cpp");
  EXPECT_NE(source.find("kiln_team_for(kiln_n, kiln_chunk"), std::string::npos);
  EXPECT_NE(source.find("kiln_team_for(parts"), std::string::npos);
  EXPECT_EQ(source.find("#pragma omp parallel"), std::string::npos);
  EXPECT_EQ(source.find("kiln_parallel_for(kiln_n"), std::string::npos);
  std::map<std::string, Tensor> inputs = {{"x", test_support::random_tensor({2, 8, 64, 64}, DType::f32, 5)},
                                          {"w", test_support::random_tensor({16, 8, 3, 3}, DType::f32, 6)},
                                          {"w2", test_support::random_tensor({16, 8, 3, 3}, DType::f32, 7)},
                                          {"v", test_support::random_tensor({200000}, DType::f32, 8)}};
  std::vector<Tensor> expected = ir::interpret(graph, inputs);
  CompiledModel model = compile(graph, options(/*freeze=*/false));
  for (int threads : {1, 2, 3}) {
    std::vector<Tensor> actual = model.run(inputs, threads);
    ASSERT_EQ(actual.size(), expected.size());
    for (size_t i = 0; i < expected.size(); ++i)
      EXPECT_EQ(compare_tensors(expected[i], actual[i], 1e-3, 1e-4), "") << i << ", " << threads << " threads";
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

// A tanh of a convolution's output, read by nothing else, runs as oneDNN's post-op
// (codegen/cpp/kiln_dnnl.h): the same values as the interpreter's, NaN staying NaN. A relu (whose
// oneDNN form turns NaN into 0) and the SiLUs (oneDNN's swish post-op is slower than Kiln's loop)
// stay Kiln's loops, in place after the call.
TEST(CpuConvolution, ActivationsThatKeepNaNRunAsOneDnnPostOps) {
  ir::Graph graph = ir::parse_graph(
      "graph():\n"
      "    %x : f32[1, 16, 20, 20] = placeholder[target=x]\n"
      "    %w : f32[32, 16, 1, 1] = placeholder[target=w]\n"
      "    %w2 : f32[32, 32, 1, 1] = placeholder[target=w2]\n"
      "    %b : f32[32] = placeholder[target=b]\n"
      "    %c1 : f32[1, 32, 20, 20] = call_function[target=convolution](args = (%x, %w, %b, [1, 1], [0, 0], [1, 1], False, [0, 0], 1), kwargs = {})\n"
      "    %silu : f32[1, 32, 20, 20] = call_function[target=silu](args = (%c1,), kwargs = {})\n"
      "    %c2 : f32[1, 32, 20, 20] = call_function[target=convolution](args = (%x, %w, None, [1, 1], [0, 0], [1, 1], False, [0, 0], 1), kwargs = {})\n"
      "    %tanh : f32[1, 32, 20, 20] = call_function[target=tanh](args = (%c2,), kwargs = {})\n"
      "    %c3 : f32[1, 32, 22, 22] = call_function[target=convolution](args = (%x, %w, %b, [1, 1], [1, 1], [1, 1], False, [0, 0], 1), kwargs = {})\n"
      "    %relu : f32[1, 32, 22, 22] = call_function[target=relu](args = (%c3,), kwargs = {})\n"
      "    %c4 : f32[1, 32, 20, 20] = call_function[target=convolution](args = (%tanh, %w2, None, [1, 1], [0, 0], [1, 1], False, [0, 0], 1), kwargs = {})\n"
      "    %silu_again : f32[1, 32, 20, 20] = call_function[target=silu](args = (%c4,), kwargs = {})\n"
      "    %pooled : f32[1, 32, 1, 1] = call_function[target=mean](args = (%c4, [2, 3], True), kwargs = {})\n"
      "    %gated : f32[1, 32, 20, 20] = call_function[target=mul](args = (%silu_again, %pooled), kwargs = {})\n"
      // Each read by a convolution, as inside a network (a graph output would be written NCHW by a
      // loop of its own).
      "    %o1 : f32[1, 32, 20, 20] = call_function[target=convolution](args = (%silu, %w2, None, [1, 1], [0, 0], [1, 1], False, [0, 0], 1), kwargs = {})\n"
      "    %o2 : f32[1, 32, 20, 20] = call_function[target=convolution](args = (%tanh, %w2, None, [1, 1], [0, 0], [1, 1], False, [0, 0], 1), kwargs = {})\n"
      "    %o3 : f32[1, 32, 22, 22] = call_function[target=convolution](args = (%relu, %w2, None, [1, 1], [0, 0], [1, 1], False, [0, 0], 1), kwargs = {})\n"
      "    %o4 : f32[1, 32, 20, 20] = call_function[target=convolution](args = (%gated, %w2, None, [1, 1], [0, 0], [1, 1], False, [0, 0], 1), kwargs = {})\n"
      "    return (o1, o2, o3, o4)\n",
      "test.kiln");
  if (built_with_onednn()) {
    std::string source = dump_codegen_stage(graph, "cpp", CodegenStageOptions{});
    size_t fused = 0;
    for (size_t at = 0; (at = source.find("as oneDNN's post-op", at)) != std::string::npos; ++at) ++fused;
    EXPECT_EQ(fused, 1u) << "the tanh of c2; not the relu, nor the SiLUs";
    EXPECT_NE(source.find("// the epilogue (tanh) as oneDNN's post-op"), std::string::npos);
  }
  Tensor x = test_support::random_tensor({1, 16, 20, 20}, DType::f32, 4);
  float* values = x.data<float>();
  values[0] = std::numeric_limits<float>::quiet_NaN();       // pixel (0, 0), channel 0
  values[16 * 57 + 3] = std::numeric_limits<float>::quiet_NaN();
  values[100] = 80.0f;  // large: SiLU near x, tanh near 1
  std::map<std::string, Tensor> inputs = {{"x", x},
                                          {"w", test_support::random_tensor({32, 16, 1, 1}, DType::f32, 5)},
                                          {"w2", test_support::random_tensor({32, 32, 1, 1}, DType::f32, 6)},
                                          {"b", test_support::random_tensor({32}, DType::f32, 7)}};
  // The inputs are NCHW; a NaN at a pixel reaches every output channel of that pixel.
  std::vector<Tensor> expected = ir::interpret(graph, inputs);
  ASSERT_TRUE(std::isnan(expected[0].flat_double(0)) && std::isnan(expected[1].flat_double(0)) &&
              std::isnan(expected[2].flat_double(22 + 1)) && std::isnan(expected[3].flat_double(0)));
  CompiledModel model = compile(graph, options(false));
  std::vector<std::string> names = graph.output_names();
  for (int threads : {1, 2}) {
    std::vector<Tensor> actual = model.run(inputs, threads);
    for (size_t i = 0; i < expected.size(); ++i)
      EXPECT_EQ(compare_tensors(expected[i], actual[i], 1e-5, 1e-5), "") << names[i] << ", " << threads << " threads";
  }
}

// An epilogue oneDNN cannot apply (a clamp: its clip turns NaN into 0; a residual sum) that reads
// only the element it writes runs in place: the convolution writes the epilogue's buffer and the
// epilogue overwrites it. An output also read elsewhere keeps its own buffer. The same values as
// the interpreter's, NaN included.
TEST(CpuConvolution, EpiloguesThatReadOnlyTheElementTheyWriteRunInPlace) {
  ir::Graph graph = ir::parse_graph(
      "graph():\n"
      "    %x : f32[2, 16, 12, 12] = placeholder[target=x]\n"
      "    %w : f32[16, 16, 1, 1] = placeholder[target=w]\n"
      "    %w3 : f32[16, 1, 3, 3] = placeholder[target=w3]\n"
      "    %b : f32[16] = placeholder[target=b]\n"
      "    %c1 : f32[2, 16, 12, 12] = call_function[target=convolution](args = (%x, %w, %b, [1, 1], [0, 0], [1, 1], False, [0, 0], 1), kwargs = {})\n"
      "    %relu6 : f32[2, 16, 12, 12] = call_function[target=clamp](args = (%c1, 0.0, 6.0), kwargs = {})\n"
      "    %c2 : f32[2, 16, 12, 12] = call_function[target=convolution](args = (%relu6, %w3, None, [1, 1], [1, 1], [1, 1], False, [0, 0], 16), kwargs = {})\n"
      "    %residual : f32[2, 16, 12, 12] = call_function[target=add](args = (%c2, %x), kwargs = {})\n"
      "    %c3 : f32[2, 16, 12, 12] = call_function[target=convolution](args = (%residual, %w, None, [1, 1], [0, 0], [1, 1], False, [0, 0], 1), kwargs = {})\n"
      "    %clamped : f32[2, 16, 12, 12] = call_function[target=clamp](args = (%c3, 0.0, 6.0), kwargs = {})\n"
      "    %pooled : f32[2, 16, 1, 1] = call_function[target=mean](args = (%c3, [2, 3], True), kwargs = {})\n"
      "    %gated : f32[2, 16, 12, 12] = call_function[target=mul](args = (%clamped, %pooled), kwargs = {})\n"
      "    %o : f32[2, 16, 12, 12] = call_function[target=convolution](args = (%gated, %w, None, [1, 1], [0, 0], [1, 1], False, [0, 0], 1), kwargs = {})\n"
      "    return (o,)\n",
      "in_place.kiln");
  if (built_with_onednn()) {
    std::string source = dump_codegen_stage(graph, "cpp", CodegenStageOptions{});
    size_t in_place = 0;
    for (size_t at = 0; (at = source.find("// the epilogue in place", at)) != std::string::npos; ++at) ++in_place;
    EXPECT_EQ(in_place, 2u) << "c1's clamp and c2's residual sum; not c3's clamp (c3 is also averaged)";
  }
  Tensor x = test_support::random_tensor({2, 16, 12, 12}, DType::f32, 8);
  x.data<float>()[5] = std::numeric_limits<float>::quiet_NaN();
  x.data<float>()[300] = 40.0f;  // past the clamp
  std::map<std::string, Tensor> inputs = {{"x", x},
                                          {"w", test_support::random_tensor({16, 16, 1, 1}, DType::f32, 9)},
                                          {"w3", test_support::random_tensor({16, 1, 3, 3}, DType::f32, 10)},
                                          {"b", test_support::random_tensor({16}, DType::f32, 11)}};
  std::vector<Tensor> expected = ir::interpret(graph, inputs);
  ASSERT_TRUE(std::isnan(expected[0].flat_double(5)));
  for (bool freeze : {false, true}) {
    CompiledModel model = compile(graph, options(freeze));
    for (int threads : {1, 2}) {
      std::vector<Tensor> actual = model.run(inputs, threads);
      // Sums of up to 16 x 40 after three convolutions: f32 accumulation against the interpreter's.
      EXPECT_EQ(compare_tensors(expected[0], actual[0], 1e-5, 1e-3), "") << threads << " threads, freeze " << freeze;
    }
  }
}

// A cat of convolution outputs (channels-last) is stored channels-last, along the channels or
// any other dim, also beside an NCHW input: the 3x3 max pool over it reduces blocks of channels
// (a column reduction), and no transposing copy precedes the next convolution.
TEST(CpuConvolution, ACatOfChannelsLastValuesStaysChannelsLast) {
  ir::Graph graph = ir::parse_graph(
      "graph():\n"
      "    %x : f32[2, 8, 10, 10] = placeholder[target=x]\n"
      "    %y : f32[2, 3, 10, 10] = placeholder[target=y]\n"
      "    %w : f32[16, 8, 1, 1] = placeholder[target=w]\n"
      "    %w3 : f32[8, 8, 3, 3] = placeholder[target=w3]\n"
      "    %w2 : f32[16, 35, 1, 1] = placeholder[target=w2]\n"
      "    %a : f32[2, 16, 10, 10] = call_function[target=convolution](args = (%x, %w, None, [1, 1], [0, 0], [1, 1], False, [0, 0], 1), kwargs = {})\n"
      "    %b : f32[2, 8, 10, 10] = call_function[target=convolution](args = (%x, %w3, None, [1, 1], [1, 1], [1, 1], False, [0, 0], 1), kwargs = {})\n"
      "    %ra : f32[2, 16, 10, 10] = call_function[target=relu](args = (%a,), kwargs = {})\n"
      "    %cat : f32[2, 35, 10, 10] = call_function[target=cat](args = ([%ra, %b, %x, %y], 1), kwargs = {})\n"
      "    %pool : f32[2, 35, 10, 10] = call_function[target=max_pool](args = (%cat, [3, 3], [1, 1], [1, 1], [1, 1], False), kwargs = {})\n"
      "    %o : f32[2, 16, 10, 10] = call_function[target=convolution](args = (%pool, %w2, None, [1, 1], [0, 0], [1, 1], False, [0, 0], 1), kwargs = {})\n"
      "    %rows : f32[2, 8, 20, 10] = call_function[target=cat](args = ([%b, %b], 2), kwargs = {})\n"
      "    %o2 : f32[2, 8, 20, 10] = call_function[target=convolution](args = (%rows, %w3, None, [1, 1], [1, 1], [1, 1], False, [0, 0], 1), kwargs = {})\n"
      "    return (o, o2)\n",
      "cat.kiln");
  if (built_with_onednn()) {
    std::string source = dump_codegen_stage(graph, "cpp", CodegenStageOptions{});
    EXPECT_NE(source.find("// column reduction"), std::string::npos) << "the pool over the channels-last cat";
    // The convolutions o and o2 read the pool and the cat as they are: no channels-last copy of
    // their inputs (kernels named "<node>_input").
    EXPECT_EQ(source.find("_o_input:"), std::string::npos) << "a copy of the pool to channels-last";
    EXPECT_EQ(source.find("_o2_input:"), std::string::npos) << "a copy of the cat along H to channels-last";
    EXPECT_NE(source.find("_a_input:"), std::string::npos) << "the NCHW input x is copied once";
  }
  std::map<std::string, Tensor> inputs = {{"x", test_support::random_tensor({2, 8, 10, 10}, DType::f32, 12)},
                                          {"y", test_support::random_tensor({2, 3, 10, 10}, DType::f32, 13)},
                                          {"w", test_support::random_tensor({16, 8, 1, 1}, DType::f32, 14)},
                                          {"w3", test_support::random_tensor({8, 8, 3, 3}, DType::f32, 15)},
                                          {"w2", test_support::random_tensor({16, 35, 1, 1}, DType::f32, 16)}};
  std::vector<Tensor> expected = ir::interpret(graph, inputs);
  CompiledModel model = compile(graph, options(false));
  std::vector<std::string> names = graph.output_names();
  for (int threads : {1, 2}) {
    std::vector<Tensor> actual = model.run(inputs, threads);
    for (size_t i = 0; i < expected.size(); ++i)
      // Sums of 35 and 72 products in f32 against the interpreter's.
      EXPECT_EQ(compare_tensors(expected[i], actual[i], 1e-5, 1e-4), "") << names[i] << ", " << threads << " threads";
  }
}

// A hardswish of a convolution's output runs as oneDNN's post-op too: its clip loses a NaN, but
// the product with x brings it back, so the values are the interpreter's, NaN and infinities
// included.
TEST(CpuConvolution, HardswishRunsAsAOneDnnPostOpAndKeepsNaN) {
  ir::Graph graph = ir::parse_graph(
      "graph():\n"
      "    %x : f32[1, 8, 9, 9] = placeholder[target=x]\n"
      "    %w : f32[16, 8, 1, 1] = placeholder[target=w]\n"
      "    %w2 : f32[8, 16, 1, 1] = placeholder[target=w2]\n"
      "    %c : f32[1, 16, 9, 9] = call_function[target=convolution](args = (%x, %w, None, [1, 1], [0, 0], [1, 1], False, [0, 0], 1), kwargs = {})\n"
      "    %h : f32[1, 16, 9, 9] = call_function[target=hardswish](args = (%c,), kwargs = {})\n"
      "    %o : f32[1, 8, 9, 9] = call_function[target=convolution](args = (%h, %w2, None, [1, 1], [0, 0], [1, 1], False, [0, 0], 1), kwargs = {})\n"
      "    return (o,)\n",
      "hardswish.kiln");
  if (built_with_onednn()) {
    std::string source = dump_codegen_stage(graph, "cpp", CodegenStageOptions{});
    EXPECT_NE(source.find("// the epilogue (hardswish) as oneDNN's post-op"), std::string::npos);
  }
  Tensor x = test_support::random_tensor({1, 8, 9, 9}, DType::f32, 17);
  float* v = x.data<float>();
  v[3] = std::numeric_limits<float>::quiet_NaN();
  v[81 + 5] = 30.0f;   // past the clip: hardswish(x) = x
  v[162 + 7] = -30.0f;  // below it: 0
  std::map<std::string, Tensor> inputs = {{"x", x},
                                          {"w", test_support::random_tensor({16, 8, 1, 1}, DType::f32, 18)},
                                          {"w2", test_support::random_tensor({8, 16, 1, 1}, DType::f32, 19)}};
  std::vector<Tensor> expected = ir::interpret(graph, inputs);
  ASSERT_TRUE(std::isnan(expected[0].flat_double(3)));
  for (bool freeze : {false, true}) {
    CompiledModel model = compile(graph, options(freeze));
    for (int threads : {1, 2}) {
      std::vector<Tensor> actual = model.run(inputs, threads);
      EXPECT_EQ(compare_tensors(expected[0], actual[0], 1e-5, 1e-4), "") << threads << " threads, freeze " << freeze;
    }
  }
}

// Runs `model` on input x on `threads` threads, expects the interpreter's output (the first) and
// returns oneDNN's log of the run (empty where it cannot be captured).
std::string run_against_the_interpreter(CompiledModel& model, const ir::Graph& graph, const Tensor& x, int threads,
                                        const std::string& name) {
  std::map<std::string, Tensor> inputs = {{"x", x}};
  std::vector<Tensor> expected = ir::interpret(graph, inputs);
  std::vector<Tensor> actual;
  std::string onednn = onednn_log_of([&] { actual = model.run(inputs, threads); });
  EXPECT_EQ(compare_tensors(expected[0], actual[0], 1e-5, 1e-4), "") << name << ", " << threads << " threads";
  return onednn;
}

// Without AVX-512 in oneDNN every convolution is direct (no f32 Winograd kernels), and a direct one
// with a kernel of several points runs on nChw8c.
bool winograd_available() { return onednn_has_avx512(); }

size_t count_of(const std::string& text, const std::string& what) {
  size_t count = 0;
  for (size_t at = 0; (at = text.find(what, at)) != std::string::npos; at += what.size()) ++count;
  return count;
}

// An inverted-residual block with frozen weights (MobileNet-v2's): 1x1 expansion -> relu6 ->
// depthwise 3x3 -> relu6 -> 1x1 projection + the block's input -> 1x1 -> relu -> 1x1. Every
// convolution's output has a finite bound (passes/value_bounds.h), so its clamp or relu is
// oneDNN's post-op in calls whose inputs are within +-2^50, and Kiln's loop in others.
ir::Graph inverted_residual(int64_t batch) {
  std::map<std::string, Tensor, std::less<>> parameters = {
      {"expand", test_support::random_tensor({16, 8, 1, 1}, DType::f32, 41, -0.5, 0.5)},
      {"expand_bias", test_support::random_tensor({16}, DType::f32, 42)},
      {"depthwise", test_support::random_tensor({16, 1, 3, 3}, DType::f32, 43, -0.5, 0.5)},
      {"project", test_support::random_tensor({8, 16, 1, 1}, DType::f32, 44, -0.5, 0.5)},
      {"widen", test_support::random_tensor({16, 8, 1, 1}, DType::f32, 45, -0.5, 0.5)},
      {"out", test_support::random_tensor({8, 16, 1, 1}, DType::f32, 46, -0.5, 0.5)}};
  const std::string b = std::to_string(batch);
  return ir::parse_graph(
      "graph():\n"
      "    %x : f32[" + b + ", 8, 10, 10] = placeholder[target=x]\n"
      "    %expand : f32[16, 8, 1, 1] = get_attr[target=expand]\n"
      "    %expand_bias : f32[16] = get_attr[target=expand_bias]\n"
      "    %depthwise : f32[16, 1, 3, 3] = get_attr[target=depthwise]\n"
      "    %project : f32[8, 16, 1, 1] = get_attr[target=project]\n"
      "    %widen : f32[16, 8, 1, 1] = get_attr[target=widen]\n"
      "    %out : f32[8, 16, 1, 1] = get_attr[target=out]\n"
      "    %c1 = call_function[target=convolution](args = (%x, %expand, %expand_bias, [1, 1], [0, 0], [1, 1], False, [0, 0], 1), kwargs = {})\n"
      "    %r1 = call_function[target=clamp](args = (%c1, 0.0, 6.0), kwargs = {})\n"
      "    %c2 = call_function[target=convolution](args = (%r1, %depthwise, None, [1, 1], [1, 1], [1, 1], False, [0, 0], 16), kwargs = {})\n"
      "    %r2 = call_function[target=clamp](args = (%c2, 0.0, 6.0), kwargs = {})\n"
      "    %c3 = call_function[target=convolution](args = (%r2, %project, None, [1, 1], [0, 0], [1, 1], False, [0, 0], 1), kwargs = {})\n"
      "    %residual = call_function[target=add](args = (%c3, %x), kwargs = {})\n"
      "    %c4 = call_function[target=convolution](args = (%residual, %widen, None, [1, 1], [0, 0], [1, 1], False, [0, 0], 1), kwargs = {})\n"
      "    %r4 = call_function[target=relu](args = (%c4,), kwargs = {})\n"
      "    %y = call_function[target=convolution](args = (%r4, %out, None, [1, 1], [0, 0], [1, 1], False, [0, 0], 1), kwargs = {})\n"
      "    return (y,)\n",
      "inverted_residual.kiln", parameters);
}

// A convolution's epilogue that walks its channels-last output contiguously (a residual add of
// another channels-last value, a relu) is one loop over all the output's elements, not a simd loop
// over the 24 channels of each pixel; one that reads a per-channel scale keeps the per-pixel
// loop. Both against the interpreter, frozen and not, on 1 and 2 threads.
// LeNet's first layers: a convolution of one channel into six (Kiln's own direct loop, its 25
// weights read once per image and channel before the loop along the padded rows), its relu and a
// 2x2 max pool over the NCHW result (a column reduction: lanes of every other element), then a
// convolution of six channels into sixteen (the library's, or im2col). Compiled with and
// without frozen weights, at batch 5, on 1 and 2 threads, against the interpreter.
TEST(CpuConvolution, FewOutputChannelsRunAsKilnsDirectLoopAndItsPoolAsColumns) {
  std::map<std::string, Tensor, std::less<>> parameters = {
      {"w1", test_support::random_tensor({6, 1, 5, 5}, DType::f32, 91, -0.5, 0.5)},
      {"b1", test_support::random_tensor({6}, DType::f32, 92)},
      {"w2", test_support::random_tensor({16, 6, 5, 5}, DType::f32, 93, -0.3, 0.3)}};
  ir::Graph graph = ir::parse_graph(
      "graph():\n"
      "    %x : f32[5, 1, 28, 28] = placeholder[target=x]\n"
      "    %w1 : f32[6, 1, 5, 5] = get_attr[target=w1]\n"
      "    %b1 : f32[6] = get_attr[target=b1]\n"
      "    %w2 : f32[16, 6, 5, 5] = get_attr[target=w2]\n"
      "    %c1 = call_function[target=convolution](args = (%x, %w1, %b1, [1, 1], [2, 2], [1, 1], False, [0, 0], 1), kwargs = {})\n"
      "    %r1 = call_function[target=relu](args = (%c1,), kwargs = {})\n"
      "    %p1 = call_function[target=max_pool](args = (%r1, [2, 2], [2, 2]), kwargs = {})\n"
      "    %c2 = call_function[target=convolution](args = (%p1, %w2, None, [1, 1], [0, 0], [1, 1], False, [0, 0], 1), kwargs = {})\n"
      "    %y = call_function[target=relu](args = (%c2,), kwargs = {})\n"
      "    return (y,)\n",
      "lenet_layers.kiln", parameters);
  std::map<std::string, Tensor> inputs = {{"x", test_support::random_tensor({5, 1, 28, 28}, DType::f32, 94)}};
  std::vector<Tensor> expected = ir::interpret(graph, inputs);
  for (bool freeze : {false, true}) {
    CodegenStageOptions stage;
    stage.freeze = freeze;
    const std::string source = dump_codegen_stage(graph, "cpp", stage);
    // c1 over the padded rows of 32 columns: 28 rows and the 32 columns of each.
    EXPECT_NE(source.find("for (int64_t x2 = 0; x2 < 896; ++x2)"), std::string::npos) << source;
    EXPECT_EQ(count_of(source, "const float h"), 26u) << source;  // its 25 weights and its bias
    EXPECT_NE(source.find("// column reduction"), std::string::npos) << source;
    EXPECT_EQ(count_of(source, "kiln_convolution(&cache"), built_with_onednn() ? 1u : 0u) << source;
    CompiledModel model = compile(graph, options(freeze));
    for (int threads : {1, 2}) {
      std::vector<Tensor> actual = model.run(inputs, threads);
      EXPECT_EQ(compare_tensors(expected[0], actual[0], 1e-5, 1e-4), "") << "freeze " << freeze << ", " << threads << " threads";
    }
  }
}

TEST(CpuConvolution, EpiloguesThatWalkTheOutputContiguouslyAreOneLoop) {
  std::map<std::string, Tensor, std::less<>> parameters = {
      {"w1", test_support::random_tensor({24, 8, 1, 1}, DType::f32, 81, -0.5, 0.5)},
      {"w2", test_support::random_tensor({24, 24, 1, 1}, DType::f32, 82, -0.5, 0.5)},
      {"w3", test_support::random_tensor({24, 24, 3, 3}, DType::f32, 83, -0.5, 0.5)},
      {"scale", test_support::random_tensor({24, 1, 1}, DType::f32, 84)},
      {"w4", test_support::random_tensor({8, 24, 1, 1}, DType::f32, 86, -0.5, 0.5)}};
  ir::Graph graph = ir::parse_graph(
      "graph():\n"
      "    %x : f32[2, 8, 7, 9] = placeholder[target=x]\n"
      "    %w1 : f32[24, 8, 1, 1] = get_attr[target=w1]\n"
      "    %w2 : f32[24, 24, 1, 1] = get_attr[target=w2]\n"
      "    %w3 : f32[24, 24, 3, 3] = get_attr[target=w3]\n"
      "    %scale : f32[24, 1, 1] = get_attr[target=scale]\n"
      "    %w4 : f32[8, 24, 1, 1] = get_attr[target=w4]\n"
      "    %c1 = call_function[target=convolution](args = (%x, %w1, None, [1, 1], [0, 0], [1, 1], False, [0, 0], 1), kwargs = {})\n"
      "    %r1 = call_function[target=relu](args = (%c1,), kwargs = {})\n"
      "    %c2 = call_function[target=convolution](args = (%r1, %w2, None, [1, 1], [0, 0], [1, 1], False, [0, 0], 1), kwargs = {})\n"
      "    %sum = call_function[target=add](args = (%c2, %r1), kwargs = {})\n"
      "    %c3 = call_function[target=convolution](args = (%sum, %w3, None, [1, 1], [1, 1], [1, 1], False, [0, 0], 1), kwargs = {})\n"
      "    %m = call_function[target=mul](args = (%c3, %scale), kwargs = {})\n"
      "    %y = call_function[target=convolution](args = (%m, %w4, None, [1, 1], [0, 0], [1, 1], False, [0, 0], 1), kwargs = {})\n"
      "    return (y,)\n",
      "contiguous_epilogues.kiln", parameters);
  std::map<std::string, Tensor> inputs = {{"x", test_support::random_tensor({2, 8, 7, 9}, DType::f32, 85)}};
  std::vector<Tensor> expected = ir::interpret(graph, inputs);
  for (bool freeze : {false, true}) {
    CodegenStageOptions stage;
    stage.freeze = freeze;
    const std::string source = dump_codegen_stage(graph, "cpp", stage);
    if (built_with_onednn()) {
      // 2 x 7 x 9 x 24 elements in one loop (too few to share among threads): the relu after c1
      // (in place) and the residual add after c2; c3's per-channel scale (not folded into its
      // weights without --freeze) keeps a loop over the channels of each pixel.
      EXPECT_EQ(count_of(source, "for (int64_t x3 = 0; x3 < 3024; ++x3)"), 2u) << source;
      if (!freeze) {
        EXPECT_EQ(count_of(source, "for (int64_t x3 = 0; x3 < 24; ++x3)"), 1u) << source;
      }
    }
    CompiledModel model = compile(graph, options(freeze));
    for (int threads : {1, 2}) {
      std::vector<Tensor> actual = model.run(inputs, threads);
      EXPECT_EQ(compare_tensors(expected[0], actual[0], 1e-5, 1e-4), "") << "freeze " << freeze << ", " << threads << " threads";
    }
  }
}

// EfficientNet's squeeze-and-excitation: a depthwise convolution, its global average pool, two
// 1x1 convolutions of the pooled [N, C, 1, 1] (fully connected layers: one GEMM each, reading the
// pool's channels-last buffer in place) with silu and sigmoid, the scale of the depthwise
// output and the block's 1x1 projection of it (at batch 1 the scale goes into the projection's
// weights: passes/channel_scale_folding.h); compiled with and without frozen weights, at batch 1
// and 3, on 1 and 2 threads.
TEST(CpuConvolution, SqueezeAndExcitationLayersAreGemmsThatMatchTheInterpreter) {
  for (int64_t batch : {1, 3}) {
    std::map<std::string, Tensor, std::less<>> parameters = {
        {"dw", test_support::random_tensor({24, 1, 3, 3}, DType::f32, 61, -0.5, 0.5)},
        {"fc1", test_support::random_tensor({6, 24, 1, 1}, DType::f32, 62, -0.5, 0.5)},
        {"fc1_bias", test_support::random_tensor({6}, DType::f32, 63)},
        {"fc2", test_support::random_tensor({24, 6, 1, 1}, DType::f32, 64, -0.5, 0.5)},
        {"fc2_bias", test_support::random_tensor({24}, DType::f32, 65)},
        {"project", test_support::random_tensor({8, 24, 1, 1}, DType::f32, 67, -0.5, 0.5)}};
    const std::string b = std::to_string(batch);
    ir::Graph graph = ir::parse_graph(
        "graph():\n"
        "    %x : f32[" + b + ", 24, 9, 9] = placeholder[target=x]\n"
        "    %dw : f32[24, 1, 3, 3] = get_attr[target=dw]\n"
        "    %fc1 : f32[6, 24, 1, 1] = get_attr[target=fc1]\n"
        "    %fc1_bias : f32[6] = get_attr[target=fc1_bias]\n"
        "    %fc2 : f32[24, 6, 1, 1] = get_attr[target=fc2]\n"
        "    %fc2_bias : f32[24] = get_attr[target=fc2_bias]\n"
        "    %d = call_function[target=convolution](args = (%x, %dw, None, [1, 1], [1, 1], [1, 1], False, [0, 0], 24), kwargs = {})\n"
        "    %a = call_function[target=silu](args = (%d,), kwargs = {})\n"
        "    %g = call_function[target=adaptive_avg_pool](args = (%a, [1, 1]), kwargs = {})\n"
        "    %f1 = call_function[target=convolution](args = (%g, %fc1, %fc1_bias, [1, 1], [0, 0], [1, 1], False, [0, 0], 1), kwargs = {})\n"
        "    %s1 = call_function[target=silu](args = (%f1,), kwargs = {})\n"
        "    %f2 = call_function[target=convolution](args = (%s1, %fc2, %fc2_bias, [1, 1], [0, 0], [1, 1], False, [0, 0], 1), kwargs = {})\n"
        "    %s2 = call_function[target=sigmoid](args = (%f2,), kwargs = {})\n"
        "    %y = call_function[target=mul](args = (%a, %s2), kwargs = {})\n"
        "    %project : f32[8, 24, 1, 1] = get_attr[target=project]\n"
        "    %p = call_function[target=convolution](args = (%y, %project, None, [1, 1], [0, 0], [1, 1], False, [0, 0], 1), kwargs = {})\n"
        "    return (p,)\n",
        "squeeze_excitation.kiln", parameters);
    for (bool freeze : {false, true}) {
      CodegenStageOptions stage;
      stage.freeze = freeze;
      const std::string loops = dump_codegen_stage(graph, "loops", stage);
      // Without oneDNN the depthwise convolution and the projection are GEMMs as well (im2col).
      EXPECT_EQ(count_of(loops, ": Extern Gemm"), built_with_onednn() ? 2u : 4u) << loops;
      EXPECT_EQ(count_of(loops, ": Extern Convolution"), built_with_onednn() ? 2u : 0u) << loops;
      // One sample: the projection's weights times the gate, instead of the scaled activation.
      EXPECT_EQ(count_of(loops, "= project["), batch == 1 ? 1u : 0u) << loops;
      EXPECT_EQ(count_of(loops, "node y: Pointwise"), batch == 1 ? 0u : 1u) << loops;
      std::map<std::string, Tensor> inputs = {{"x", test_support::random_tensor({batch, 24, 9, 9}, DType::f32, 66)}};
      std::vector<Tensor> expected = ir::interpret(graph, inputs);
      CompiledModel model = compile(graph, options(freeze));
      for (int threads : {1, 2}) {
        std::vector<Tensor> actual = model.run(inputs, threads);
        EXPECT_EQ(compare_tensors(expected[0], actual[0], 1e-5, 1e-4), "")
            << "batch " << batch << ", freeze " << freeze << ", " << threads << " threads";
      }
    }
  }
}

TEST(CpuConvolution, TransposedConvolutionsAreGemmsAndGathersThatMatchTheInterpreter) {
  // A UNet's upsampling (2x, kernel 4, padding 1) after a convolution and before a residual add,
  // and a 1-d one of stride 3 with an output padding and groups: each one GEMM and the gather of
  // its taps, no fallback to the reference kernel; at a symbolic batch, frozen or not.
  std::map<std::string, Tensor, std::less<>> parameters = {
      {"w1", test_support::random_tensor({16, 3, 3, 3}, DType::f32, 71, -0.5, 0.5)},
      {"up", test_support::random_tensor({16, 8, 4, 4}, DType::f32, 72, -0.5, 0.5)},
      {"up_bias", test_support::random_tensor({8}, DType::f32, 73)},
      {"up1", test_support::random_tensor({4, 3, 5}, DType::f32, 74, -0.5, 0.5)}};
  ir::Graph graph = ir::parse_graph(
      "graph():\n"
      "    %x : f32[s0, 3, 7, 6] = placeholder[target=x]\n"
      "    %skip : f32[s0, 8, 14, 12] = placeholder[target=skip]\n"
      "    %z : f32[s0, 4, 9] = placeholder[target=z]\n"
      "    %w1 : f32[16, 3, 3, 3] = get_attr[target=w1]\n"
      "    %up : f32[16, 8, 4, 4] = get_attr[target=up]\n"
      "    %up_bias : f32[8] = get_attr[target=up_bias]\n"
      "    %up1 : f32[4, 3, 5] = get_attr[target=up1]\n"
      "    %c = call_function[target=convolution](args = (%x, %w1, None, [1, 1], [1, 1], [1, 1], False, [0, 0], 1), kwargs = {})\n"
      "    %r = call_function[target=relu](args = (%c,), kwargs = {})\n"
      "    %u = call_function[target=convolution](args = (%r, %up, %up_bias, [2, 2], [1, 1], [1, 1], True, [0, 0], 1), kwargs = {})\n"
      "    %y = call_function[target=add](args = (%u, %skip), kwargs = {})\n"
      "    %v = call_function[target=convolution](args = (%z, %up1, None, [3], [2], [2], True, [1], 2), kwargs = {})\n"
      "    return (y, v)\n",
      "upsampling.kiln", parameters);
  for (bool freeze : {false, true}) {
    CodegenStageOptions stage;
    stage.freeze = freeze;
    const std::string loops = dump_codegen_stage(graph, "loops", stage);
    EXPECT_EQ(count_of(loops, ": Extern Gemm"), built_with_onednn() ? 2u : 3u) << loops;
    EXPECT_EQ(count_of(loops, ": Extern Fallback"), 0u) << loops;
    CompiledModel model = compile(graph, options(freeze));
    for (int64_t batch : {1, 3}) {
      std::map<std::string, Tensor> inputs = {
          {"x", test_support::random_tensor({batch, 3, 7, 6}, DType::f32, 75)},
          {"skip", test_support::random_tensor({batch, 8, 14, 12}, DType::f32, 76)},
          {"z", test_support::random_tensor({batch, 4, 9}, DType::f32, 77)}};
      std::vector<Tensor> expected = ir::interpret(graph, inputs);
      for (int threads : {1, 2}) {
        std::vector<Tensor> actual = model.run(inputs, threads);
        ASSERT_EQ(actual.size(), 2u);
        for (size_t i = 0; i < 2; ++i)
          EXPECT_EQ(compare_tensors(expected[i], actual[i], 1e-5, 1e-4), "")
              << "output " << i << ", batch " << batch << ", freeze " << freeze << ", " << threads << " threads";
      }
    }
  }
}

// An audio encoder's 1-d convolutions (wav2vec's strided stem from one channel, a grouped strided
// one, a dilated depthwise one with a residual add) run through oneDNN channels-last, as the 2-d
// ones of height 1: each reads the one before's output in place (only the one-channel input
// needs no copy either), the layout flows through the GELU, the relu, the add and a 1-d max pool,
// and the transposed result reads the pool's buffer. At a symbolic batch, frozen and not, on 1
// and 2 threads, against the interpreter.
TEST(CpuConvolution, OneDimensionalConvolutionsRunThroughTheLibraryChannelsLast) {
  std::map<std::string, Tensor, std::less<>> parameters = {
      {"w1", test_support::random_tensor({16, 1, 10}, DType::f32, 81, -0.5, 0.5)},
      {"b1", test_support::random_tensor({16}, DType::f32, 82)},
      {"w2", test_support::random_tensor({16, 8, 3}, DType::f32, 83, -0.5, 0.5)},
      {"w3", test_support::random_tensor({16, 1, 5}, DType::f32, 84, -0.5, 0.5)}};
  ir::Graph graph = ir::parse_graph(
      "graph():\n"
      "    %audio : f32[s0, 1, 400] = placeholder[target=audio]\n"
      "    %w1 : f32[16, 1, 10] = get_attr[target=w1]\n"
      "    %b1 : f32[16] = get_attr[target=b1]\n"
      "    %w2 : f32[16, 8, 3] = get_attr[target=w2]\n"
      "    %w3 : f32[16, 1, 5] = get_attr[target=w3]\n"
      "    %c1 = call_function[target=convolution](args = (%audio, %w1, %b1, [5], [0], [1], False, [0], 1), kwargs = {})\n"
      "    %g1 = call_function[target=gelu](args = (%c1,), kwargs = {})\n"
      "    %c2 = call_function[target=convolution](args = (%g1, %w2, None, [2], [1], [1], False, [0], 2), kwargs = {})\n"
      "    %r2 = call_function[target=relu](args = (%c2,), kwargs = {})\n"
      "    %c3 = call_function[target=convolution](args = (%r2, %w3, None, [1], [4], [2], False, [0], 16), kwargs = {})\n"
      "    %sum = call_function[target=add](args = (%c3, %r2), kwargs = {})\n"
      "    %pool = call_function[target=max_pool](args = (%sum, [2], [2], [0], [1], False), kwargs = {})\n"
      "    %y = call_function[target=transpose](args = (%pool, 1, 2), kwargs = {})\n"
      "    return (y,)\n",
      "audio.kiln", parameters);
  for (bool freeze : {false, true}) {
    if (built_with_onednn()) {
      CodegenStageOptions stage;
      stage.freeze = freeze;
      const std::string loops = dump_codegen_stage(graph, "loops", stage);
      EXPECT_EQ(count_of(loops, ": Extern Convolution"), 3u) << loops;
      EXPECT_EQ(count_of(loops, ": Extern Gemm"), 0u) << "no im2col GEMM:\n" << loops;
      // No copy of any convolution's input to channels-last (a copy is named "<node>_input").
      EXPECT_EQ(count_of(loops, "_input"), 0u) << loops;
    }
    CompiledModel model = compile(graph, options(freeze));
    for (int64_t batch : {1, 3}) {
      std::map<std::string, Tensor> inputs = {{"audio", test_support::random_tensor({batch, 1, 400}, DType::f32, 85)}};
      std::vector<Tensor> expected = ir::interpret(graph, inputs);
      for (int threads : {1, 2}) {
        std::vector<Tensor> actual = model.run(inputs, threads);
        ASSERT_EQ(actual.size(), 1u);
        EXPECT_EQ(actual[0].sizes(), (Sizes{batch, 20, 16}));
        EXPECT_EQ(compare_tensors(expected[0], actual[0], 1e-5, 1e-4), "")
            << "batch " << batch << ", freeze " << freeze << ", " << threads << " threads";
      }
    }
  }
}

TEST(CpuConvolution, ClampsOfBoundedConvolutionsRunAsOneDnnPostOpsInBoundedCalls) {
  if (!built_with_onednn()) GTEST_SKIP() << "Kiln was built without oneDNN";
  ir::Graph graph = inverted_residual(2);
  CodegenStageOptions frozen;
  frozen.freeze = true;
  EXPECT_EQ(count_of(dump_codegen_stage(graph, "cpp", frozen), "post-op in calls whose inputs are within +-2^50"), 3u)
      << "the two relu6 and the relu";
  EXPECT_EQ(count_of(dump_codegen_stage(graph, "cpp", CodegenStageOptions{}), "post-op in calls whose inputs"), 0u)
      << "weights that may change bound nothing";
  // The loop program shows each bound the lowering found: all five convolutions'.
  EXPECT_EQ(count_of(dump_codegen_stage(graph, "loops", frozen), "for inputs within +-2^50"), 5u);
  EXPECT_EQ(count_of(dump_codegen_stage(graph, "loops", CodegenStageOptions{}), "|out| <="), 0u);
  // KILN_LOG=post_ops says which clamps are post-ops, and why the others are not.
  setenv("KILN_LOG", "post_ops", 1);
  testing::internal::CaptureStderr();
  dump_codegen_stage(graph, "cpp", frozen);
  dump_codegen_stage(graph, "cpp", CodegenStageOptions{});
  const std::string log = testing::internal::GetCapturedStderr();
  unsetenv("KILN_LOG");
  EXPECT_EQ(count_of(log, "kiln[post_ops]: "), 6u) << log;
  EXPECT_EQ(count_of(log, "its clamp to [0, 6] is oneDNN's post-op in calls whose inputs are within +-2^50"), 2u) << log;
  EXPECT_EQ(count_of(log, "its relu is oneDNN's post-op"), 1u) << log;
  EXPECT_EQ(count_of(log, "stays Kiln's loop: its weights may change between calls (no --freeze)"), 3u) << log;
  Tensor x = test_support::random_tensor({2, 8, 10, 10}, DType::f32, 47);
  Tensor with_nan = x.clone();
  with_nan.data<float>()[800 + 13] = std::numeric_limits<float>::quiet_NaN();  // sample 1 only
  Tensor with_both_nan = with_nan.clone();
  with_both_nan.data<float>()[5] = std::numeric_limits<float>::quiet_NaN();
  Tensor huge = x.clone();
  huge.data<float>()[42] = 1e20f;   // past 2^50: Kiln's loops, which clamp the same
  huge.data<float>()[900] = -3e38f;
  CompiledModel model = compile(graph, options(true));
  struct Case {
    const char* name;
    Tensor x;
    int bounded_samples;  // samples whose values are all within +-2^50 (sample 0 first)
  };
  for (const Case& c : {Case{"in range", x, 2}, Case{"a NaN in sample 1", with_nan, 1},
                        Case{"a NaN in both samples", with_both_nan, 0}, Case{"huge values in both", huge, 0}}) {
    for (int threads : {1, 2}) {
      const std::string onednn = run_against_the_interpreter(model, graph, c.x, threads, c.name);
      if (onednn.empty()) continue;
      // The three post-ops run in a call, or in each chunk of a batch split (one sample each
      // here), whose inputs are all in range.
      const size_t post_ops = count_of(onednn, "post-ops:eltwise_clip") + count_of(onednn, "post-ops:eltwise_relu");
      const size_t chunks = count_of(onednn, "alg:convolution_direct") / 5;
      ASSERT_TRUE(chunks == 1 || chunks == 2) << onednn;
      const size_t bounded_calls = chunks == 1 ? (c.bounded_samples == 2 ? 1 : 0) : size_t(c.bounded_samples);
      EXPECT_EQ(post_ops, 3 * bounded_calls) << c.name << ", " << threads << " threads, " << chunks << " chunk(s): " << onednn;
    }
  }
}

// An input of at least 32768 floats is checked against the value bounds by the module's threads,
// each a part of it: a NaN or a huge value in the last part alone still keeps the clamp Kiln's
// loop (oneDNN's clip would turn the NaN into 0), and an input in range gets the post-op.
TEST(CpuConvolution, LargeInputsAreCheckedForTheirBoundsInParts) {
  if (!built_with_onednn()) GTEST_SKIP() << "Kiln was built without oneDNN";
  std::map<std::string, Tensor, std::less<>> parameters = {
      {"w", test_support::random_tensor({16, 8, 1, 1}, DType::f32, 91, -0.5, 0.5)},
      {"b", test_support::random_tensor({16}, DType::f32, 92)},
      {"w2", test_support::random_tensor({8, 16, 1, 1}, DType::f32, 93, -0.5, 0.5)}};
  ir::Graph graph = ir::parse_graph(
      "graph():\n"
      "    %x : f32[1, 8, 64, 64] = placeholder[target=x]\n"
      "    %w : f32[16, 8, 1, 1] = get_attr[target=w]\n"
      "    %b : f32[16] = get_attr[target=b]\n"
      "    %w2 : f32[8, 16, 1, 1] = get_attr[target=w2]\n"
      "    %c = call_function[target=convolution](args = (%x, %w, %b, [1, 1], [0, 0], [1, 1], False, [0, 0], 1), kwargs = {})\n"
      "    %r = call_function[target=clamp](args = (%c, 0.0, 6.0), kwargs = {})\n"
      "    %y = call_function[target=convolution](args = (%r, %w2, None, [1, 1], [0, 0], [1, 1], False, [0, 0], 1), kwargs = {})\n"
      "    return (y,)\n",
      "bounds_in_parts.kiln", parameters);
  CodegenStageOptions frozen;
  frozen.freeze = true;
  EXPECT_EQ(count_of(dump_codegen_stage(graph, "cpp", frozen), "(32768, kiln_within, (32768) >= 32768)"), 1u);
  Tensor x = test_support::random_tensor({1, 8, 64, 64}, DType::f32, 94);
  Tensor last_nan = x.clone(), last_huge = x.clone();
  last_nan.data<float>()[32767] = std::numeric_limits<float>::quiet_NaN();
  last_huge.data<float>()[32767] = 1e20f;
  CompiledModel model = compile(graph, options(true));
  struct Case {
    const char* name;
    Tensor x;
    bool bounded;
  };
  for (const Case& c : {Case{"in range", x, true}, Case{"a NaN last", last_nan, false}, Case{"a huge value last", last_huge, false}}) {
    for (int threads : {1, 2}) {
      const std::string onednn = run_against_the_interpreter(model, graph, c.x, threads, c.name);
      if (onednn.empty()) continue;
      EXPECT_EQ(count_of(onednn, "post-ops:eltwise_clip"), c.bounded ? 1u : 0u) << c.name << ", " << threads << " threads: " << onednn;
    }
  }
}

// Four 1x1 convolutions, each followed by a relu, whose weights (uniform in [-100, 2500] over 8
// input channels) sum to ~1e4 per output channel, then a fifth: from inputs within +-2^50 the
// first three outputs stay under 1e30 and the fourth's bound passes it, from inputs within +-2^8
// all stay under. So three relus are oneDNN's post-ops in calls whose inputs are within +-2^50, the
// fourth in calls whose inputs are within +-2^8, and Kiln's loop otherwise; against the
// interpreter each way.
TEST(CpuConvolution, DeepClampsAreOneDnnPostOpsInCallsWhoseInputsAreSmall) {
  if (!built_with_onednn()) GTEST_SKIP() << "Kiln was built without oneDNN";
  std::map<std::string, Tensor, std::less<>> parameters;
  std::string text = "graph():\n    %x : f32[1, 8, 6, 6] = placeholder[target=x]\n";
  std::string value = "x";
  for (int layer = 1; layer <= 4; ++layer) {
    const std::string w = "w" + std::to_string(layer), c = "c" + std::to_string(layer), r = "r" + std::to_string(layer);
    parameters[w] = test_support::random_tensor({8, 8, 1, 1}, DType::f32, 200 + layer, -100.0, 2500.0);
    text += "    %" + w + " : f32[8, 8, 1, 1] = get_attr[target=" + w + "]\n";
    text += "    %" + c + " = call_function[target=convolution](args = (%" + value + ", %" + w +
            ", None, [1, 1], [0, 0], [1, 1], False, [0, 0], 1), kwargs = {})\n";
    text += "    %" + r + " = call_function[target=relu](args = (%" + c + ",), kwargs = {})\n";
    value = r;
  }
  // A last convolution reads the fourth relu, so that it is an epilogue and not the output.
  parameters["w5"] = test_support::random_tensor({8, 8, 1, 1}, DType::f32, 205, -0.5, 0.5);
  text += "    %w5 : f32[8, 8, 1, 1] = get_attr[target=w5]\n";
  text += "    %y = call_function[target=convolution](args = (%r4, %w5, None, [1, 1], [0, 0], [1, 1], False, [0, 0], 1), kwargs = {})\n";
  text += "    return (y,)\n";
  ir::Graph graph = ir::parse_graph(text, "deep_relus.kiln", parameters);
  CodegenStageOptions frozen;
  frozen.freeze = true;
  const std::string source = dump_codegen_stage(graph, "cpp", frozen);
  EXPECT_EQ(count_of(source, "relu post-op in calls whose inputs are within +-2^50"), 3u) << source;
  EXPECT_EQ(count_of(source, "relu post-op in calls whose inputs are within +-2^8"), 1u) << source;
  EXPECT_EQ(count_of(source, "const int clipped = kiln_inputs_small;"), 1u) << source;
  EXPECT_EQ(count_of(source, "kiln_inputs_small = inputs_small;"), 1u) << source;
  const std::string loops = dump_codegen_stage(graph, "loops", frozen);
  EXPECT_EQ(count_of(loops, "for inputs within +-2^50"), 3u) << loops;
  EXPECT_EQ(count_of(loops, "for inputs within +-2^8"), 2u) << loops << "the fourth and the fifth";
  // Inputs and weights mostly positive: no sums that cancel to a few ulps of their terms.
  Tensor x = test_support::random_tensor({1, 8, 6, 6}, DType::f32, 210, 0.0, 1.0);
  Tensor wide = x.clone(), huge = x.clone(), with_nan = x.clone();
  wide.data<float>()[100] = 1000.0f;  // within 2^50, past 2^8
  huge.data<float>()[200] = 1e20f;    // past both
  with_nan.data<float>()[7] = std::numeric_limits<float>::quiet_NaN();
  CompiledModel model = compile(graph, options(true));
  struct Case {
    const char* name;
    Tensor x;
    size_t post_ops;
  };
  for (const Case& c : {Case{"small inputs", x, 4}, Case{"an input of 1000", wide, 3}, Case{"an input of 1e20", huge, 0},
                        Case{"a NaN", with_nan, 0}}) {
    for (int threads : {1, 2}) {
      const std::string onednn = run_against_the_interpreter(model, graph, c.x, threads, c.name);
      if (onednn.empty()) continue;
      EXPECT_EQ(count_of(onednn, "post-ops:eltwise_relu"), c.post_ops) << c.name << ", " << threads << " threads: " << onednn;
    }
  }
}

// Convolutions of one 64-channel value: 3x3 64 -> 64 at stride 1, the shape Winograd wins on;
// 3x3 64 -> 48 at stride 1 with a SiLU (Kiln's loop after it), read by a 1x1 convolution;
// 3x3 64 -> 16 (too few channels) and 3x3 64 -> 64 at stride 2 (no Winograd form). `side` sets
// the spatial size, so that each test compiles its own module.
ir::Graph three_by_three_convolutions(int64_t side) {
  const std::string s = std::to_string(side), half = std::to_string((side + 1) / 2);
  std::map<std::string, Tensor, std::less<>> parameters = {
      {"w1", test_support::random_tensor({64, 64, 3, 3}, DType::f32, 21, -0.1, 0.1)},
      {"b1", test_support::random_tensor({64}, DType::f32, 22)},
      {"w2", test_support::random_tensor({16, 64, 3, 3}, DType::f32, 23, -0.1, 0.1)},
      {"w3", test_support::random_tensor({64, 64, 3, 3}, DType::f32, 24, -0.1, 0.1)},
      {"w4", test_support::random_tensor({48, 64, 3, 3}, DType::f32, 27, -0.1, 0.1)},
      {"w5", test_support::random_tensor({16, 48, 1, 1}, DType::f32, 28)}};
  return ir::parse_graph(
      "graph():\n"
      "    %x : f32[2, 64, " + s + ", " + s + "] = placeholder[target=x]\n"
      "    %w1 : f32[64, 64, 3, 3] = get_attr[target=w1]\n"
      "    %b1 : f32[64] = get_attr[target=b1]\n"
      "    %w2 : f32[16, 64, 3, 3] = get_attr[target=w2]\n"
      "    %w3 : f32[64, 64, 3, 3] = get_attr[target=w3]\n"
      "    %c1 : f32[2, 64, " + s + ", " + s + "] = call_function[target=convolution](args = (%x, %w1, %b1, [1, 1], [1, 1], [1, 1], False, [0, 0], 1), kwargs = {})\n"
      "    %r : f32[2, 64, " + s + ", " + s + "] = call_function[target=relu](args = (%c1,), kwargs = {})\n"
      "    %c2 : f32[2, 16, " + s + ", " + s + "] = call_function[target=convolution](args = (%r, %w2, None, [1, 1], [1, 1], [1, 1], False, [0, 0], 1), kwargs = {})\n"
      "    %c3 : f32[2, 64, " + half + ", " + half + "] = call_function[target=convolution](args = (%r, %w3, None, [2, 2], [1, 1], [1, 1], False, [0, 0], 1), kwargs = {})\n"
      "    %w4 : f32[48, 64, 3, 3] = get_attr[target=w4]\n"
      "    %w5 : f32[16, 48, 1, 1] = get_attr[target=w5]\n"
      "    %c4 : f32[2, 48, " + s + ", " + s + "] = call_function[target=convolution](args = (%r, %w4, None, [1, 1], [1, 1], [1, 1], False, [0, 0], 1), kwargs = {})\n"
      "    %silu : f32[2, 48, " + s + ", " + s + "] = call_function[target=silu](args = (%c4,), kwargs = {})\n"
      "    %c5 : f32[2, 16, " + s + ", " + s + "] = call_function[target=convolution](args = (%silu, %w5, None, [1, 1], [0, 0], [1, 1], False, [0, 0], 1), kwargs = {})\n"
      "    return (c1, c2, c3, c5)\n",
      "winograd.kiln", parameters);
}

// With frozen parameters a wide 3x3 stride-1 convolution runs as oneDNN's Winograd
// (kiln_winograd_suits, codegen/cpp/kiln_dnnl.h), its source and destination reordered between
// nhwc and oneDNN's blocked layout around it; the others stay direct, and without frozen weights
// (reordered on every call, where Winograd's transform would cost more) all do. The values match
// the interpreter's within the rounding Winograd's transforms add.
TEST(CpuConvolution, FrozenWideThreeByThreeConvolutionsRunAsWinograd) {
  if (!built_with_onednn()) GTEST_SKIP() << "Kiln was built without oneDNN";
  ir::Graph graph = three_by_three_convolutions(24);
  std::map<std::string, Tensor> inputs = {{"x", test_support::random_tensor({2, 64, 24, 24}, DType::f32, 25)}};
  std::vector<Tensor> expected = ir::interpret(graph, inputs);
  std::vector<std::string> names = graph.output_names();
  for (bool freeze : {true, false}) {
    CompiledModel model = compile(graph, options(freeze));
    for (int threads : {1, 2}) {
      std::vector<Tensor> actual;
      std::string log = onednn_log_of([&] { actual = model.run(inputs, threads); });
      if (log.empty()) GTEST_SKIP() << "oneDNN's verbose log could not be read";
      const bool winograd = freeze && winograd_available();
      EXPECT_EQ(count_of(log, "alg:convolution_winograd"), winograd ? 2u : 0u) << log;
      EXPECT_EQ(count_of(log, "alg:convolution_direct"), winograd ? 3u : 5u) << log;
      // The SiLU: Kiln's loop after either convolution, never oneDNN's.
      EXPECT_EQ(count_of(log, "eltwise_swish"), 0u) << log;
      if (winograd) {
        EXPECT_NE(log.find("mb2_ic64oc64_ih24oh24kh3sh1"), std::string::npos) << log;
      }
      for (size_t i = 0; i < expected.size(); ++i)
        EXPECT_EQ(compare_tensors(expected[i], actual[i], 1e-4, 1e-4), "")
            << names[i] << ", freeze " << freeze << ", " << threads << " threads";
    }
  }
}

// The choice is per geometry: with a symbolic batch, batch 1 (9.4M multiply-adds) stays direct and
// batch 3 (28M) runs as Winograd, each from its own cache entry, reused when the batch comes back.
TEST(CpuConvolution, WinogradIsChosenPerGeometry) {
  if (!built_with_onednn()) GTEST_SKIP() << "Kiln was built without oneDNN";
  std::map<std::string, Tensor, std::less<>> parameters = {
      {"w", test_support::random_tensor({64, 64, 3, 3}, DType::f32, 31, -0.1, 0.1)}};
  ir::Graph graph = ir::parse_graph(
      "graph():\n"
      "    %x : f32[s0, 64, 16, 16] = placeholder[target=x]\n"
      "    %w : f32[64, 64, 3, 3] = get_attr[target=w]\n"
      "    %c : f32[s0, 64, 16, 16] = call_function[target=convolution](args = (%x, %w, None, [1, 1], [1, 1], [1, 1], False, [0, 0], 1), kwargs = {})\n"
      "    %y : f32[s0, 64, 16, 16] = call_function[target=tanh](args = (%c,), kwargs = {})\n"
      "    return (y,)\n",
      "winograd_batches.kiln", parameters);
  CompiledModel model = compile(graph, options(true));
  for (int64_t batch : {1, 3, 1, 3}) {
    std::map<std::string, Tensor> inputs = {{"x", test_support::random_tensor({batch, 64, 16, 16}, DType::f32, 32 + batch)}};
    std::vector<Tensor> expected = ir::interpret(graph, inputs);
    std::vector<Tensor> actual;
    std::string log = onednn_log_of([&] { actual = model.run(inputs, 2); });
    if (log.empty()) GTEST_SKIP() << "oneDNN's verbose log could not be read";
    const bool winograd = batch == 3 && winograd_available();
    EXPECT_EQ(count_of(log, "alg:convolution_winograd"), winograd ? 1u : 0u) << "batch " << batch << "\n" << log;
    EXPECT_EQ(count_of(log, "alg:convolution_direct"), winograd ? 0u : 1u) << "batch " << batch << "\n" << log;
    EXPECT_EQ(compare_tensors(expected[0], actual[0], 1e-4, 1e-4), "") << "batch " << batch;
  }
}

// Winograd from 64 output points: a 3x3 256 -> 256 convolution at 8 x 8 (64 points) runs as
// Winograd, the same at 7 x 7 (49 points, where its transformed weights, 16/9 the direct ones',
// stream from memory for too few points) stays direct; both match the interpreter.
TEST(CpuConvolution, WinogradNeedsSixtyFourOutputPoints) {
  if (!built_with_onednn()) GTEST_SKIP() << "Kiln was built without oneDNN";
  std::map<std::string, Tensor, std::less<>> parameters = {
      {"w", test_support::random_tensor({256, 256, 3, 3}, DType::f32, 41, -0.05, 0.05)}};
  ir::Graph graph = ir::parse_graph(
      "graph():\n"
      "    %a : f32[1, 256, 8, 8] = placeholder[target=a]\n"
      "    %b : f32[1, 256, 7, 7] = placeholder[target=b]\n"
      "    %w : f32[256, 256, 3, 3] = get_attr[target=w]\n"
      "    %ca : f32[1, 256, 8, 8] = call_function[target=convolution](args = (%a, %w, None, [1, 1], [1, 1], [1, 1], False, [0, 0], 1), kwargs = {})\n"
      "    %cb : f32[1, 256, 7, 7] = call_function[target=convolution](args = (%b, %w, None, [1, 1], [1, 1], [1, 1], False, [0, 0], 1), kwargs = {})\n"
      "    return (ca, cb)\n",
      "winograd_points.kiln", parameters);
  std::map<std::string, Tensor> inputs = {{"a", test_support::random_tensor({1, 256, 8, 8}, DType::f32, 42)},
                                          {"b", test_support::random_tensor({1, 256, 7, 7}, DType::f32, 43)}};
  std::vector<Tensor> expected = ir::interpret(graph, inputs);
  CompiledModel model = compile(graph, options(true));
  std::vector<Tensor> actual;
  std::string log = onednn_log_of([&] { actual = model.run(inputs, 2); });
  if (log.empty()) GTEST_SKIP() << "oneDNN's verbose log could not be read";
  if (winograd_available()) {
    EXPECT_EQ(count_of(log, "alg:convolution_winograd"), 1u) << log;
    EXPECT_NE(log.find("mb1_ic256oc256_ih8oh8kh3sh1"), std::string::npos) << log;
    EXPECT_EQ(count_of(log, "alg:convolution_direct"), 1u) << log;
    EXPECT_NE(log.find("mb1_ic256oc256_ih7oh7kh3sh1"), std::string::npos) << log;
  }
  for (size_t i = 0; i < expected.size(); ++i) EXPECT_EQ(compare_tensors(expected[i], actual[i], 1e-4, 1e-4), "") << i;
}

// Two Winograd convolutions whose channels do not fill nChw16c's blocks of 16: 50 input channels
// (14 lanes of the last block empty) and 56 output channels (the copy back reads 8 lanes of
// the last block), one followed by a relu, the other by a relu6, each read by a 1x1 convolution;
// with `activations` false, the same without them.
ir::Graph winograd_partial_blocks(bool activations) {
  std::map<std::string, Tensor, std::less<>> parameters = {
      {"w1", test_support::random_tensor({56, 50, 3, 3}, DType::f32, 61, -0.1, 0.1)},
      {"b1", test_support::random_tensor({56}, DType::f32, 62)},
      {"w2", test_support::random_tensor({56, 50, 3, 3}, DType::f32, 63, -0.1, 0.1)},
      {"w3", test_support::random_tensor({16, 56, 1, 1}, DType::f32, 64)},
      {"w4", test_support::random_tensor({16, 56, 1, 1}, DType::f32, 65)}};
  const std::string relu = activations ? "call_function[target=relu](args = (%c1,), kwargs = {})"
                                       : "call_function[target=mul](args = (%c1, 1.0), kwargs = {})";
  const std::string relu6 = activations ? "call_function[target=clamp](args = (%c2, 0.0, 6.0), kwargs = {})"
                                        : "call_function[target=mul](args = (%c2, 1.0), kwargs = {})";
  return ir::parse_graph(
      "graph():\n"
      "    %x : f32[2, 50, 28, 28] = placeholder[target=x]\n"
      "    %w1 : f32[56, 50, 3, 3] = get_attr[target=w1]\n"
      "    %b1 : f32[56] = get_attr[target=b1]\n"
      "    %w2 : f32[56, 50, 3, 3] = get_attr[target=w2]\n"
      "    %w3 : f32[16, 56, 1, 1] = get_attr[target=w3]\n"
      "    %w4 : f32[16, 56, 1, 1] = get_attr[target=w4]\n"
      "    %c1 : f32[2, 56, 28, 28] = call_function[target=convolution](args = (%x, %w1, %b1, [1, 1], [1, 1], [1, 1], False, [0, 0], 1), kwargs = {})\n"
      "    %r : f32[2, 56, 28, 28] = " + relu + "\n"
      "    %c2 : f32[2, 56, 28, 28] = call_function[target=convolution](args = (%x, %w2, None, [1, 1], [1, 1], [1, 1], False, [0, 0], 1), kwargs = {})\n"
      "    %r6 : f32[2, 56, 28, 28] = " + relu6 + "\n"
      "    %c3 : f32[2, 16, 28, 28] = call_function[target=convolution](args = (%r, %w3, None, [1, 1], [0, 0], [1, 1], False, [0, 0], 1), kwargs = {})\n"
      "    %c4 : f32[2, 16, 28, 28] = call_function[target=convolution](args = (%r6, %w4, None, [1, 1], [0, 0], [1, 1], False, [0, 0], 1), kwargs = {})\n"
      "    return (c3, c4)\n",
      "winograd_partial_blocks.kiln", parameters);
}

// Winograd's copies to and from nChw16c where the channels leave a block partly empty; the relu
// and the relu6 done by the copy back to nhwc in calls whose inputs are in range (no reorder or
// eltwise primitive of oneDNN runs once the weights are packed).
TEST(CpuConvolution, WinogradCopiesPartialBlocksAndClampsAsItCopiesBack) {
  if (!built_with_onednn()) GTEST_SKIP() << "Kiln was built without oneDNN";
  ir::Graph graph = winograd_partial_blocks(true);
  std::map<std::string, Tensor> inputs = {{"x", test_support::random_tensor({2, 50, 28, 28}, DType::f32, 66, -4, 4)}};
  std::vector<Tensor> expected = ir::interpret(graph, inputs);
  // The relu and the relu6 change both outputs.
  std::vector<Tensor> unclamped = ir::interpret(winograd_partial_blocks(false), inputs);
  for (size_t i = 0; i < expected.size(); ++i) EXPECT_NE(compare_tensors(expected[i], unclamped[i], 1e-2, 1e-2), "") << i;
  CompiledModel model = compile(graph, options(true));
  for (int threads : {1, 2, 3}) {
    std::vector<Tensor> actual;
    model.run(inputs, threads);  // packs the weights
    std::string log = onednn_log_of([&] { actual = model.run(inputs, threads); });
    if (log.empty()) GTEST_SKIP() << "oneDNN's verbose log could not be read";
    if (winograd_available()) {
      // Two convolutions per call, or per chunk of the batch split (one sample each).
      const size_t winograd = count_of(log, "alg:convolution_winograd");
      EXPECT_TRUE(winograd == 2 || winograd == 4) << log;
      EXPECT_EQ(count_of(log, "alg:convolution_direct"), winograd) << log;
      EXPECT_EQ(count_of(log, "exec,cpu,reorder"), 0u) << log;
      EXPECT_EQ(count_of(log, "exec,cpu,eltwise"), 0u) << log;
    }
    for (size_t i = 0; i < expected.size(); ++i)
      EXPECT_EQ(compare_tensors(expected[i], actual[i], 1e-4, 1e-4), "") << i << ", " << threads << " threads";
  }
}

// Residual blocks with frozen weights, `c` channels: a basic block, relu(conv3x3(relu(conv3x3(r)))
// + r) (a Winograd convolution where oneDNN has one and c >= 48), a bottleneck r +
// conv1x1(relu(conv1x1(r))) without a relu, and a residual add whose operand a later convolution
// still reads.
ir::Graph residual_blocks(int64_t c) {
  const std::string n = std::to_string(c), half = std::to_string(c / 2);
  std::map<std::string, Tensor, std::less<>> parameters = {
      {"w1", test_support::random_tensor({c, c, 3, 3}, DType::f32, 81, -0.1, 0.1)},
      {"b1", test_support::random_tensor({c}, DType::f32, 82)},
      {"w2", test_support::random_tensor({c, c, 3, 3}, DType::f32, 83, -0.1, 0.1)},
      {"w3", test_support::random_tensor({c, c, 3, 3}, DType::f32, 84, -0.1, 0.1)},
      {"w4", test_support::random_tensor({c / 2, c, 1, 1}, DType::f32, 85, -0.2, 0.2)},
      {"w5", test_support::random_tensor({c, c / 2, 1, 1}, DType::f32, 86, -0.2, 0.2)},
      {"b5", test_support::random_tensor({c}, DType::f32, 87)},
      {"w6", test_support::random_tensor({c, c, 1, 1}, DType::f32, 88, -0.2, 0.2)},
      {"w7", test_support::random_tensor({16, c, 1, 1}, DType::f32, 89, -0.2, 0.2)}};
  const std::string shape = "f32[2, " + n + ", 16, 16]", narrow = "f32[2, " + half + ", 16, 16]";
  auto conv = [](const std::string& in, const std::string& w, const std::string& bias, int pad) {
    const std::string p = std::to_string(pad);
    return "call_function[target=convolution](args = (%" + in + ", %" + w + ", " + bias + ", [1, 1], [" + p + ", " + p +
           "], [1, 1], False, [0, 0], 1), kwargs = {})";
  };
  return ir::parse_graph(
      "graph():\n"
      "    %x : " + shape + " = placeholder[target=x]\n"
      "    %w1 : f32[" + n + ", " + n + ", 3, 3] = get_attr[target=w1]\n"
      "    %b1 : f32[" + n + "] = get_attr[target=b1]\n"
      "    %w2 : f32[" + n + ", " + n + ", 3, 3] = get_attr[target=w2]\n"
      "    %w3 : f32[" + n + ", " + n + ", 3, 3] = get_attr[target=w3]\n"
      "    %w4 : f32[" + half + ", " + n + ", 1, 1] = get_attr[target=w4]\n"
      "    %w5 : f32[" + n + ", " + half + ", 1, 1] = get_attr[target=w5]\n"
      "    %b5 : f32[" + n + "] = get_attr[target=b5]\n"
      "    %w6 : f32[" + n + ", " + n + ", 1, 1] = get_attr[target=w6]\n"
      "    %w7 : f32[16, " + n + ", 1, 1] = get_attr[target=w7]\n"
      "    %c1 : " + shape + " = " + conv("x", "w1", "%b1", 1) + "\n"
      "    %r : " + shape + " = call_function[target=relu](args = (%c1,), kwargs = {})\n"
      "    %c2 : " + shape + " = " + conv("r", "w2", "None", 1) + "\n"
      "    %h : " + shape + " = call_function[target=relu](args = (%c2,), kwargs = {})\n"
      "    %c3 : " + shape + " = " + conv("h", "w3", "None", 1) + "\n"
      "    %sum : " + shape + " = call_function[target=add](args = (%c3, %r), kwargs = {})\n"
      "    %block : " + shape + " = call_function[target=relu](args = (%sum,), kwargs = {})\n"
      "    %c4 : " + narrow + " = " + conv("block", "w4", "None", 0) + "\n"
      "    %g : " + narrow + " = call_function[target=relu](args = (%c4,), kwargs = {})\n"
      "    %c5 : " + shape + " = " + conv("g", "w5", "%b5", 0) + "\n"
      "    %bottleneck : " + shape + " = call_function[target=add](args = (%block, %c5), kwargs = {})\n"
      "    %c6 : " + shape + " = " + conv("bottleneck", "w6", "None", 0) + "\n"
      "    %y : " + shape + " = call_function[target=add](args = (%c6, %bottleneck), kwargs = {})\n"
      "    %z : f32[2, 16, 16, 16] = " + conv("bottleneck", "w7", "None", 0) + "\n"
      "    return (y, z)\n",
      "residual_blocks.kiln", parameters);
}

// A residual that dies at its add takes the result's bytes (the memory plan's "in place of"), and
// the convolution before the add accumulates into it (oneDNN's sum post-op; Winograd's copy back
// to nhwc adds it), the relu after as the post-op or the copy's clamp in calls whose inputs are in
// range and as Kiln's loop in place in others (a NaN: the interpreter's NaN kept; checked with
// direct convolutions, as Winograd's tiles spread a NaN further). A residual read after its add
// (bottleneck, which a later convolution reads) stays a loop's operand. The same values as the
// interpreter's on 1 and 2 threads (the batch split or not), over repeated calls.
TEST(CpuConvolution, AResidualThatDiesAtItsAddIsAccumulatedIntoByTheConvolution) {
  if (!built_with_onednn()) GTEST_SKIP() << "Kiln was built without oneDNN";
  CodegenStageOptions frozen;
  frozen.freeze = true;
  for (int64_t channels : {64, 32}) {
    ir::Graph graph = residual_blocks(channels);
    const std::string scheduled = dump_codegen_stage(graph, "scheduled", frozen);
    EXPECT_EQ(count_of(scheduled, "(in place of "), 2u) << scheduled;
    EXPECT_EQ(count_of(scheduled, "(in place of r)"), 1u) << scheduled;
    EXPECT_EQ(count_of(scheduled, "(in place of block)"), 1u) << scheduled;
    const std::string source = dump_codegen_stage(graph, "cpp", frozen);
    EXPECT_EQ(count_of(source, "added as oneDNN's sum post-op"), 2u) << source;
    EXPECT_EQ(count_of(source, "the residual r added as oneDNN's sum post-op: block takes its memory"), 1u) << source;
    Tensor x = test_support::random_tensor({2, channels, 16, 16}, DType::f32, 90);
    Tensor with_nan = x.clone();
    with_nan.data<float>()[channels * 256 + 77] = std::numeric_limits<float>::quiet_NaN();  // sample 1
    CompiledModel model = compile(graph, options(true));
    for (const Tensor* input : {&x, &with_nan}) {
      if (input == &with_nan && channels >= 48 && winograd_available()) continue;
      std::map<std::string, Tensor> in = {{"x", *input}};
      std::vector<Tensor> reference = ir::interpret(graph, in);
      for (int threads : {1, 2}) {
        for (int call = 0; call < 2; ++call) {
          std::vector<Tensor> actual;
          const std::string log = onednn_log_of([&] { actual = model.run(in, threads); });
          ASSERT_EQ(actual.size(), reference.size());
          for (size_t i = 0; i < reference.size(); ++i)
            EXPECT_EQ(compare_tensors(reference[i], actual[i], 1e-4, 1e-4), "")
                << channels << " channels, output " << i << ", " << threads << " threads, "
                << (input == &x ? "in range" : "a NaN");
          if (!log.empty()) {
            EXPECT_GE(count_of(log, "post-ops:sum"), 1u) << log;
            // Without AVX-512 the 3x3 convolutions run on nChw8c, the residual copied in first.
            if (!onednn_has_avx512() && channels % 8 == 0) {
              EXPECT_GE(count_of(log, "src_f32::blocked:aBcd8b:f0 wei_f32::blocked:ABcd8b8a"), 2u) << log;
            }
          }
        }
      }
    }
  }
}

// Dilated 3x3 convolutions of 64 channels, frozen: dilation 2 with the padding that keeps the
// size (a bias, then a relu), 3 on a side it does not divide (31: the phases' last rows past the
// image are zeros), (2, 1), 4, 2 without padding, 2 with a residual added and a relu; 2 with a
// padding it does not divide and 12 (phases of 3 x 3 outputs, 44% of the Winograd tiles over
// them filled) have no phase form.
ir::Graph dilated_convolutions() {
  std::map<std::string, Tensor, std::less<>> parameters = {{"b1", test_support::random_tensor({64}, DType::f32, 70)}};
  for (int i = 1; i <= 8; ++i)
    parameters["w" + std::to_string(i)] = test_support::random_tensor({64, 64, 3, 3}, DType::f32, 70 + i, -0.1, 0.1);
  auto conv = [](const std::string& in, int w, const std::string& bias, const std::string& pad, const std::string& dilation) {
    return "call_function[target=convolution](args = (%" + in + ", %w" + std::to_string(w) + ", " + bias + ", [1, 1], " +
           pad + ", " + dilation + ", False, [0, 0], 1), kwargs = {})";
  };
  std::string text = "graph():\n"
                     "    %x : f32[1, 64, 32, 32] = placeholder[target=x]\n"
                     "    %odd : f32[1, 64, 31, 31] = placeholder[target=odd]\n"
                     "    %b1 : f32[64] = get_attr[target=b1]\n";
  for (int i = 1; i <= 8; ++i)
    text += "    %w" + std::to_string(i) + " : f32[64, 64, 3, 3] = get_attr[target=w" + std::to_string(i) + "]\n";
  text += "    %c1 : f32[1, 64, 32, 32] = " + conv("x", 1, "%b1", "[2, 2]", "[2, 2]") + "\n"
          "    %r1 : f32[1, 64, 32, 32] = call_function[target=relu](args = (%c1,), kwargs = {})\n"
          "    %c2 : f32[1, 64, 31, 31] = " + conv("odd", 2, "None", "[3, 3]", "[3, 3]") + "\n"
          "    %c3 : f32[1, 64, 32, 32] = " + conv("x", 3, "None", "[2, 1]", "[2, 1]") + "\n"
          "    %c4 : f32[1, 64, 32, 32] = " + conv("x", 4, "None", "[4, 4]", "[4, 4]") + "\n"
          "    %c5 : f32[1, 64, 28, 28] = " + conv("x", 5, "None", "[0, 0]", "[2, 2]") + "\n"
          "    %c6 : f32[1, 64, 32, 32] = " + conv("x", 6, "None", "[2, 2]", "[2, 2]") + "\n"
          "    %sum : f32[1, 64, 32, 32] = call_function[target=add](args = (%c6, %x), kwargs = {})\n"
          "    %r6 : f32[1, 64, 32, 32] = call_function[target=relu](args = (%sum,), kwargs = {})\n"
          "    %c7 : f32[1, 64, 30, 30] = " + conv("x", 7, "None", "[1, 1]", "[2, 2]") + "\n"
          "    %c8 : f32[1, 64, 32, 32] = " + conv("x", 8, "None", "[12, 12]", "[12, 12]") + "\n"
          "    return (r1, c2, c3, c4, c5, r6, c7, c8)\n";
  return ir::parse_graph(text, "dilated.kiln", parameters);
}

// A frozen dilated convolution runs as the Winograd of its phases (kiln_phase_geometry,
// codegen/cpp/kiln_dnnl.h): the copies to and from nChw16c split the image into phases and join
// the output, with the relu's clamp and the residual's sum; the values match the interpreter's
// within Winograd's rounding. Those without a phase form, and all without frozen weights, stay
// direct and dilated.
TEST(CpuConvolution, FrozenDilatedConvolutionsRunAsTheWinogradOfTheirPhases) {
  if (!built_with_onednn()) GTEST_SKIP() << "Kiln was built without oneDNN";
  ir::Graph graph = dilated_convolutions();
  std::map<std::string, Tensor> inputs = {{"x", test_support::random_tensor({1, 64, 32, 32}, DType::f32, 79, -2, 2)},
                                          {"odd", test_support::random_tensor({1, 64, 31, 31}, DType::f32, 80, -2, 2)}};
  std::vector<Tensor> expected = ir::interpret(graph, inputs);
  std::vector<std::string> names = graph.output_names();
  for (bool freeze : {true, false}) {
    CompiledModel model = compile(graph, options(freeze));
    for (int threads : {1, 2, 3}) {
      std::vector<Tensor> actual;
      std::string log = onednn_log_of([&] { actual = model.run(inputs, threads); });
      if (log.empty()) GTEST_SKIP() << "oneDNN's verbose log could not be read";
      const bool winograd = freeze && winograd_available();
      EXPECT_EQ(count_of(log, "alg:convolution_winograd"), winograd ? 6u : 0u) << log;
      EXPECT_EQ(count_of(log, "alg:convolution_direct"), winograd ? 2u : 8u) << log;
      if (winograd) {
        EXPECT_EQ(count_of(log, "mb4_ic64oc64_ih16oh16kh3sh1dh0ph1_iw16ow16kw3sw1dw0pw1"), 2u) << log;  // c1, c6
        EXPECT_EQ(count_of(log, "mb9_ic64oc64_ih11oh11kh3sh1dh0ph1_iw11ow11kw3sw1dw0pw1"), 1u) << log;  // c2
        EXPECT_EQ(count_of(log, "mb2_ic64oc64_ih16oh16kh3sh1dh0ph1_iw32ow32kw3sw1dw0pw1"), 1u) << log;  // c3
        EXPECT_EQ(count_of(log, "mb16_ic64oc64_ih8oh8kh3sh1dh0ph1_iw8ow8kw3sw1dw0pw1"), 1u) << log;     // c4
        EXPECT_EQ(count_of(log, "mb4_ic64oc64_ih16oh14kh3sh1dh0ph0_iw16ow14kw3sw1dw0pw0"), 1u) << log;  // c5
      }
      for (size_t i = 0; i < expected.size(); ++i)
        EXPECT_EQ(compare_tensors(expected[i], actual[i], 1e-4, 1e-4), "")
            << names[i] << ", freeze " << freeze << ", " << threads << " threads";
    }
  }
}

// 3-d convolutions (a video model's): 3x3x3 with a bias and a relu, a grouped temporal 3x1x1 at
// depth stride 2 ((2+1)-d's), a spatial 1x3x3 at stride 2 with dilation 2, run through oneDNN
// over [N, D, H, W, C] with frozen weights or not, the relu as its post-op where the inputs are
// in range; the values match the interpreter's.
TEST(CpuConvolution, ThreeDimensionalConvolutionsRunThroughTheLibrary) {
  if (!built_with_onednn()) GTEST_SKIP() << "Kiln was built without oneDNN";
  std::map<std::string, Tensor, std::less<>> parameters = {
      {"w1", test_support::random_tensor({16, 8, 3, 3, 3}, DType::f32, 91, -0.2, 0.2)},
      {"b1", test_support::random_tensor({16}, DType::f32, 92)},
      {"w2", test_support::random_tensor({16, 4, 3, 1, 1}, DType::f32, 93, -0.3, 0.3)},
      {"w3", test_support::random_tensor({8, 16, 1, 3, 3}, DType::f32, 94, -0.2, 0.2)}};
  ir::Graph graph = ir::parse_graph(
      "graph():\n"
      "    %x : f32[1, 8, 6, 10, 12] = placeholder[target=x]\n"
      "    %w1 : f32[16, 8, 3, 3, 3] = get_attr[target=w1]\n"
      "    %b1 : f32[16] = get_attr[target=b1]\n"
      "    %w2 : f32[16, 4, 3, 1, 1] = get_attr[target=w2]\n"
      "    %w3 : f32[8, 16, 1, 3, 3] = get_attr[target=w3]\n"
      "    %c1 : f32[1, 16, 6, 10, 12] = call_function[target=convolution](args = (%x, %w1, %b1, [1, 1, 1], [1, 1, 1], [1, 1, 1], False, [0, 0, 0], 1), kwargs = {})\n"
      "    %r1 : f32[1, 16, 6, 10, 12] = call_function[target=relu](args = (%c1,), kwargs = {})\n"
      "    %c2 : f32[1, 16, 3, 10, 12] = call_function[target=convolution](args = (%r1, %w2, None, [2, 1, 1], [1, 0, 0], [1, 1, 1], False, [0, 0, 0], 4), kwargs = {})\n"
      "    %c3 : f32[1, 8, 3, 4, 5] = call_function[target=convolution](args = (%c2, %w3, None, [1, 2, 2], [0, 1, 1], [1, 2, 2], False, [0, 0, 0], 1), kwargs = {})\n"
      "    return (r1, c3)\n",
      "conv3d.kiln", parameters);
  std::map<std::string, Tensor> inputs = {{"x", test_support::random_tensor({1, 8, 6, 10, 12}, DType::f32, 95, -2, 2)}};
  std::vector<Tensor> expected = ir::interpret(graph, inputs);
  for (bool freeze : {true, false}) {
    CompiledModel model = compile(graph, options(freeze));
    for (int threads : {1, 2}) {
      std::vector<Tensor> actual;
      std::string log = onednn_log_of([&] { actual = model.run(inputs, threads); });
      if (log.empty()) GTEST_SKIP() << "oneDNN's verbose log could not be read";
      EXPECT_EQ(count_of(log, "alg:convolution_direct"), 3u) << log;
      EXPECT_EQ(count_of(log, "mb1_ic8oc16_id6od6kd3sd1dd0pd1_ih10oh10kh3sh1dh0ph1_iw12ow12kw3sw1dw0pw1"), 1u) << log;
      EXPECT_EQ(count_of(log, "g4mb1_ic16oc16_id6od3kd3sd2dd0pd1_ih10oh10kh1sh1dh0ph0_iw12ow12kw1sw1dw0pw0"), 1u) << log;
      EXPECT_EQ(count_of(log, "mb1_ic16oc8_id3od3kd1sd1dd0pd0_ih10oh4kh3sh2dh1ph1_iw12ow5kw3sw2dw1pw1"), 1u) << log;
      EXPECT_EQ(count_of(log, "post-ops:eltwise_relu"), freeze ? 1u : 0u) << log;
      for (size_t i = 0; i < expected.size(); ++i)
        EXPECT_EQ(compare_tensors(expected[i], actual[i], 1e-4, 1e-4), "") << i << ", freeze " << freeze << ", " << threads << " threads";
    }
  }
}

// KILN_WINOGRAD=0 keeps every convolution direct.
TEST(CpuConvolution, KilnWinogradZeroKeepsConvolutionsDirect) {
  if (!built_with_onednn()) GTEST_SKIP() << "Kiln was built without oneDNN";
  ir::Graph graph = three_by_three_convolutions(26);  // a module of its own: it reads the variable once
  std::map<std::string, Tensor> inputs = {{"x", test_support::random_tensor({2, 64, 26, 26}, DType::f32, 26)}};
  std::vector<Tensor> expected = ir::interpret(graph, inputs);
  CompiledModel model = compile(graph, options(true));
  setenv("KILN_WINOGRAD", "0", 1);
  std::vector<Tensor> actual;
  std::string log = onednn_log_of([&] { actual = model.run(inputs, 2); });
  unsetenv("KILN_WINOGRAD");
  if (log.empty()) GTEST_SKIP() << "oneDNN's verbose log could not be read";
  EXPECT_EQ(count_of(log, "alg:convolution_winograd"), 0u) << log;
  EXPECT_EQ(count_of(log, "alg:convolution_direct"), 5u) << log;
  for (size_t i = 0; i < expected.size(); ++i) EXPECT_EQ(compare_tensors(expected[i], actual[i], 1e-4, 1e-4), "") << i;
}

}  // namespace
}  // namespace kiln::compiler

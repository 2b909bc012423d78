// The public API as an app sees it (kiln/kiln.h, no internal header): load a model file into a
// kiln::Graph, read its inputs and outputs, compile it for cpu and run it against the reference
// interpreter, save and reload it; trace a module into a Graph; SymSize and TensorType; the
// CompiledTraining handle. (tests/api/public_headers_test.cpp checks that the headers reach
// nothing internal; tests/install builds a real app against an installed Kiln.)
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <string>

#include "kiln/kiln.h"
#include "tests/support/shared_compile_cache.h"
#include "tests/support/test_paths.h"

namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

const std::string kMlp = std::string(KILN_SOURCE_DIR) + "/samples/models/mlp.kiln";

kiln::CompileOptions test_options() {
  kiln::CompileOptions options;
  options.cache_dir = kiln::test_support::shared_compile_cache(fs::path(KILN_BINARY_DIR) / "test-compile-cache");
  return options;
}

double max_difference(const kiln::Tensor& a, const kiln::Tensor& b) {
  EXPECT_EQ(a.sizes(), b.sizes());
  double worst = 0;
  for (int64_t i = 0; i < a.numel(); ++i) worst = std::max(worst, std::abs(a.flat_double(i) - b.flat_double(i)));
  return worst;
}

TEST(PublicApi, LoadsAModelFileAndNamesItsInputsAndOutputs) {
  kiln::Graph graph = kiln::Graph::load(kMlp);
  EXPECT_EQ(graph.input_names(), std::vector<std::string>{"x"});
  ASSERT_EQ(graph.input_types().size(), 1u);
  EXPECT_EQ(graph.input_types()[0].to_string(), "f32[s0, 784]");
  EXPECT_TRUE(graph.input_types()[0].shape[0].is_symbolic());
  EXPECT_EQ(graph.input_types()[0].shape[1].constant(), 784);
  EXPECT_EQ(graph.output_names(), std::vector<std::string>{"probs"});
  EXPECT_EQ(graph.output_types()[0].to_string(), "f32[s0, 10]");
  EXPECT_EQ(graph.parameters().count("fc1.weight"), 1u);
  EXPECT_THAT(graph.to_string(), HasSubstr("placeholder[target=x]"));
}

TEST(PublicApi, CompiledModelMatchesTheInterpreterAndTheCommittedExpectation) {
  kiln::Graph graph = kiln::Graph::load(kMlp);
  kiln::Tensor x = kiln::read_npy(std::string(KILN_SOURCE_DIR) + "/samples/models/mlp_data/inputs/x.npy");
  kiln::Tensor expected = kiln::read_npy(std::string(KILN_SOURCE_DIR) + "/samples/models/mlp_data/expected/probs.npy");
  std::vector<kiln::Tensor> reference = graph.interpret({{"x", x}});
  ASSERT_EQ(reference.size(), 1u);
  EXPECT_LT(max_difference(reference[0], expected), 1e-5);

  kiln::Model model = kiln::compile(graph, test_options());
  EXPECT_EQ(model.target(), "cpu");
  ASSERT_NE(model.compile_result(), nullptr);
  EXPECT_GT(model.compile_result()->kernel_count, 0u);
  EXPECT_EQ(model.input_names(), graph.input_names());
  std::vector<kiln::Tensor> outputs = model.run({{"x", x}}, 2);
  ASSERT_EQ(outputs.size(), 1u);
  EXPECT_LT(max_difference(outputs[0], reference[0]), 1e-5);

  kiln::Model again = kiln::compile(graph, test_options());
  EXPECT_TRUE(again.compile_result()->cache_hit);

  kiln::CompileOptions interp = test_options();
  interp.target = "interp";
  kiln::Model interpreted = kiln::compile(graph, interp);
  EXPECT_EQ(interpreted.compile_result(), nullptr);
  EXPECT_LT(max_difference(interpreted.run({{"x", x}})[0], reference[0]), 1e-6);
}

TEST(PublicApi, BadInputsAreKilnErrorsNamingWhatIsWrong) {
  try {
    kiln::Graph::load("no_such_model.kiln");
    FAIL() << "loading a missing file succeeded";
  } catch (const kiln::Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("no_such_model.kiln"));
  }
  kiln::Graph graph = kiln::Graph::load(kMlp);
  kiln::CompileOptions options = test_options();
  options.target = "tpu";
  try {
    kiln::compile(graph, options);
    FAIL() << "an unknown target compiled";
  } catch (const kiln::Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("tpu"));
  }
  kiln::Model model = kiln::compile(graph, test_options());
  EXPECT_THROW(model.run({{"y", kiln::Tensor::zeros({2, 784}, kiln::DType::f32)}}), kiln::Error);
  EXPECT_THROW(kiln::SymSize::symbol("2bad"), kiln::Error);
}

TEST(PublicApi, SavesAndReloadsAGraph) {
  fs::path dir = fs::temp_directory_path() / ("kiln_public_api_test_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  kiln::Graph graph = kiln::Graph::load(kMlp);
  graph.save((dir / "copy.kiln").string());
  EXPECT_TRUE(fs::exists(dir / "copy.safetensors"));
  EXPECT_THROW(graph.save((dir / "copy.kiln").string()), kiln::Error);  // no overwrite
  kiln::Graph copy = kiln::Graph::load((dir / "copy.kiln").string());
  EXPECT_EQ(copy.to_string(), graph.to_string());
  fs::remove_all(dir);
}

TEST(PublicApi, TraceGivesAGraphWithDynamicSizesKept) {
  kiln::manual_seed(0);
  kiln::nn::Sequential model(kiln::nn::Linear(6, 4), kiln::nn::ReLU());
  kiln::Graph graph = kiln::trace(model, {kiln::TensorType{kiln::DType::f32, {kiln::SymSize::symbol("s0"), 6}}});
  EXPECT_EQ(graph.input_types()[0].to_string(), "f32[s0, 6]");
  EXPECT_EQ(graph.output_types()[0].to_string(), "f32[s0, 4]");

  // A traced function reads symbolic sizes and reshapes with them.
  kiln::Graph flat = kiln::trace(
      [](const std::vector<kiln::Var>& in) {
        kiln::Shape sizes = in[0].sym_sizes();
        EXPECT_EQ(sizes[0].to_string(), "s0");
        EXPECT_EQ((sizes[0] * 2).to_string(), "2*s0");
        return std::vector<kiln::Var>{in[0].reshape({sizes[0] * 2, floordiv(sizes[1], 2)})};
      },
      {kiln::TensorType{kiln::DType::f32, {kiln::SymSize::symbol("s0"), 6}}});
  EXPECT_EQ(flat.output_types()[0].to_string(), "f32[2*s0, 3]");
  kiln::Tensor x = kiln::Tensor::from_vector<float>({2, 6}, std::vector<float>(12, 1.5f), kiln::DType::f32);
  std::vector<kiln::Tensor> out = kiln::compile(flat, test_options()).run({{"x", x}});
  EXPECT_EQ(out[0].sizes(), (kiln::Sizes{4, 3}));
  EXPECT_EQ(out[0].flat_double(11), 1.5);
}

TEST(PublicApi, CompiledTrainingLowersTheLoss) {
  kiln::manual_seed(1);
  kiln::nn::Sequential model(kiln::nn::Linear(2, 16), kiln::nn::ReLU(), kiln::nn::Linear(16, 2));
  kiln::Tensor x = kiln::Tensor::from_vector<float>({4, 2}, {0, 0, 0, 1, 1, 0, 1, 1}, kiln::DType::f32);
  kiln::Tensor y = kiln::Tensor::from_vector<int64_t>({4}, {0, 1, 1, 0}, kiln::DType::i64);
  kiln::TrainingOptions options;
  options.compile = test_options();
  kiln::CompiledTraining training = kiln::compile_training(
      model, [](const kiln::Var& logits, const kiln::Var& labels) { return kiln::nn::functional::cross_entropy(logits, labels); },
      kiln::SgdOptions{.lr = 0.5, .momentum = 0.9}, {{x}, {y}}, options);
  float first = training.step({{x}, {y}});
  float last = first;
  for (int i = 0; i < 100; ++i) last = training.step({{x}, {y}});
  EXPECT_LT(last, first * 0.5f);
  training.set_lr(0);
  float frozen = training.step({{x}, {y}});
  EXPECT_FLOAT_EQ(training.step({{x}, {y}}), frozen);
  EXPECT_THROW(training.set_lr(-1), kiln::Error);
  EXPECT_EQ(training.evaluate({x})[0].sizes(), (kiln::Sizes{4, 2}));
  EXPECT_FALSE(training.parameter_names().empty());
}

}  // namespace

// The module API (kiln/nn/*.h): parameter and buffer names, shapes and counts as PyTorch
// names them (written here by hand from PyTorch's conventions), initialization, the module
// tree, train/eval, forward hooks, state dicts and their errors.
#include <gtest/gtest.h>

#include <cmath>

#include "kiln/kiln.h"
#include "tests/support/test_paths.h"
#include "tests/training/training_test_support.h"

namespace kiln::training_test {
namespace {

using NameShapes = std::vector<std::pair<std::string, Sizes>>;

NameShapes name_shapes(const std::vector<std::pair<std::string, Tensor>>& named) {
  NameShapes out;
  for (const auto& [name, value] : named) out.emplace_back(name, value.sizes());
  return out;
}

int64_t parameter_count(const nn::Module& module) {
  int64_t count = 0;
  for (const Tensor& value : module.parameters()) count += value.numel();
  return count;
}

TEST(ModuleParameters, LinearHasWeightAndBias) {
  nn::Linear linear(4, 3);
  EXPECT_EQ(name_shapes(linear.named_parameters()), (NameShapes{{"weight", {3, 4}}, {"bias", {3}}}));
  EXPECT_EQ(parameter_count(linear), 15);
  nn::Linear no_bias(4, 3, false);
  EXPECT_EQ(name_shapes(no_bias.named_parameters()), (NameShapes{{"weight", {3, 4}}}));
}

TEST(ModuleParameters, Conv2dWeightIsOutInPerGroupKernel) {
  nn::Conv2d conv(3, 8, 3);
  EXPECT_EQ(name_shapes(conv.named_parameters()), (NameShapes{{"weight", {8, 3, 3, 3}}, {"bias", {8}}}));
  nn::Conv2d grouped(4, 6, {3, 5}, 1, 0, 1, 2, false);
  EXPECT_EQ(name_shapes(grouped.named_parameters()), (NameShapes{{"weight", {6, 2, 3, 5}}}));
  EXPECT_THROW(nn::Conv2d(3, 6, 3, 1, 0, 1, 2), Error);
}

TEST(ModuleParameters, BatchNorm2dHasAffineParametersAndRunningStatistics) {
  nn::BatchNorm2d bn(8);
  EXPECT_EQ(name_shapes(bn.named_parameters()), (NameShapes{{"weight", {8}}, {"bias", {8}}}));
  EXPECT_EQ(name_shapes(bn.named_buffers()),
            (NameShapes{{"running_mean", {8}}, {"running_var", {8}}, {"num_batches_tracked", {}}}));
  EXPECT_EQ(bn.buffer("num_batches_tracked").dtype(), DType::i64);
  EXPECT_EQ(bn.buffer("running_var").flat_double(3), 1.0);
  EXPECT_EQ(bn.parameter("weight").flat_double(0), 1.0);
  EXPECT_EQ(bn.parameter("bias").flat_double(0), 0.0);
  EXPECT_EQ(bn.state_dict().size(), 5u);
  nn::BatchNorm2d plain(8, 1e-5, 0.1, false, false);
  EXPECT_TRUE(plain.named_parameters().empty());
  EXPECT_TRUE(plain.named_buffers().empty());
}

TEST(ModuleParameters, LayerNormEmbeddingAndMultiheadAttention) {
  nn::LayerNorm norm({4, 16});
  EXPECT_EQ(name_shapes(norm.named_parameters()), (NameShapes{{"weight", {4, 16}}, {"bias", {4, 16}}}));
  nn::Embedding embedding(20, 16, 0);
  EXPECT_EQ(name_shapes(embedding.named_parameters()), (NameShapes{{"weight", {20, 16}}}));
  for (int64_t j = 0; j < 16; ++j) EXPECT_EQ(embedding.parameter("weight").flat_double(j), 0.0) << "padding row";
  nn::MultiheadAttention attention(16, 4);
  EXPECT_EQ(name_shapes(attention.named_parameters()),
            (NameShapes{{"in_proj_weight", {48, 16}},
                        {"in_proj_bias", {48}},
                        {"out_proj.weight", {16, 16}},
                        {"out_proj.bias", {16}}}));
  EXPECT_EQ(parameter_count(attention), 48 * 16 + 48 + 16 * 16 + 16);
  EXPECT_THROW(nn::MultiheadAttention(16, 5), Error);
}

// A user-defined module with member submodules (borrowed) and a ModuleList.
struct Net : nn::Module {
  nn::Linear fc1{4, 8};
  nn::ModuleList layers{nn::Linear(8, 8), nn::ReLU(), nn::Linear(8, 2)};
  nn::BatchNorm2d bn{3};
  Net() : Module("Net") {
    register_module("fc1", fc1);
    register_module("layers", layers);
    register_module("bn", bn);
  }
};

TEST(ModuleTree, NamesComposeIntoPathsInPyTorchOrder) {
  Net net;
  std::vector<std::string> names;
  for (const auto& [name, value] : net.named_parameters()) names.push_back(name);
  EXPECT_EQ(names, (std::vector<std::string>{"fc1.weight", "fc1.bias", "layers.0.weight", "layers.0.bias",
                                             "layers.2.weight", "layers.2.bias", "bn.weight", "bn.bias"}));
  std::vector<std::string> modules;
  for (const auto& [path, module] : net.named_modules()) modules.push_back(path + ":" + module->type_name());
  EXPECT_EQ(modules, (std::vector<std::string>{":Net", "fc1:Linear", "layers:ModuleList", "layers.0:Linear",
                                               "layers.1:ReLU", "layers.2:Linear", "bn:BatchNorm2d"}));
  EXPECT_EQ(net.children().size(), 3u);
  EXPECT_EQ(net.layers.at<nn::Linear>(2).out_features(), 2);
  EXPECT_THROW(net.layers.at<nn::Linear>(1), Error);
  EXPECT_THROW(net.layers[3], Error);
  EXPECT_EQ(net.state_dict().count("bn.num_batches_tracked"), 1u);
}

TEST(ModuleTree, RegistrationErrorsAndMoves) {
  Net net;
  EXPECT_THROW(net.register_parameter("fc1", Tensor::zeros({1}, DType::f32)), Error);  // taken by a child
  EXPECT_THROW(net.register_buffer("a.b", Tensor::zeros({1}, DType::f32)), Error);
  try {
    Net moved(std::move(net));
    FAIL() << "moving a module with borrowed submodules must fail";
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find("registered by reference"), std::string::npos) << error.what();
  }
  nn::Sequential owned(nn::Linear(2, 3), nn::ReLU());
  nn::Sequential moved(std::move(owned));
  EXPECT_EQ(moved.size(), 2u);
}

TEST(ModuleInit, FollowsPyTorchBoundsAndTheSeed) {
  manual_seed(7);
  nn::Linear a(100, 50);
  manual_seed(7);
  nn::Linear b(100, 50);
  nn::Linear c(100, 50);  // later draws differ
  const Tensor& weight = a.parameter("weight");
  double bound = 1 / std::sqrt(100.0), sum_squares = 0;
  for (int64_t i = 0; i < weight.numel(); ++i) {
    double w = weight.flat_double(i);
    ASSERT_LE(std::fabs(w), bound);
    sum_squares += w * w;
    EXPECT_EQ(w, b.parameter("weight").flat_double(i));
  }
  // U(-bound, bound) has standard deviation bound / sqrt(3).
  EXPECT_NEAR(std::sqrt(sum_squares / double(weight.numel())), bound / std::sqrt(3.0), 0.004);
  EXPECT_EQ(mismatch(a.parameter("weight"), c.parameter("weight")).empty(), false);
  for (int64_t i = 0; i < 50; ++i) EXPECT_LE(std::fabs(a.parameter("bias").flat_double(i)), bound);
  nn::MultiheadAttention attention(16, 4);
  EXPECT_EQ(attention.parameter("in_proj_bias").flat_double(5), 0.0);
  double xavier = std::sqrt(6.0 / (16 + 48));
  for (int64_t i = 0; i < 48 * 16; ++i) ASSERT_LE(std::fabs(attention.parameter("in_proj_weight").flat_double(i)), xavier);
}

TEST(ModuleMode, TrainAndEvalReachEverySubmodule) {
  Net net;
  net.eval();
  for (const auto& [path, module] : net.named_modules()) EXPECT_FALSE(module->is_training()) << path;
  net.train();
  EXPECT_TRUE(net.layers[2].is_training());
}

TEST(StateDict, LoadsFromAMapAndFromSafetensors) {
  nn::Linear linear(2, 2);
  linear.load_state_dict(std::map<std::string, Tensor>{
      {"weight", Tensor::from_vector<double>({2, 2}, {1, 2, 3, 4}, DType::f32)},
      {"bias", Tensor::from_vector<int64_t>({2}, {5, 6}, DType::i64)}});  // converted to f32
  EXPECT_EQ(linear.parameter("weight").flat_double(3), 4.0);
  EXPECT_EQ(linear.parameter("bias").dtype(), DType::f32);
  EXPECT_EQ(linear.parameter("bias").flat_double(1), 6.0);

  std::string path = (std::filesystem::path(KILN_BINARY_DIR) / "module_api_state.safetensors").string();
  write_safetensors(path, linear.state_dict());
  nn::Linear other(2, 2);
  other.load_state_dict(path);
  EXPECT_EQ(mismatch(linear.parameter("weight"), other.parameter("weight"), 0, 0), "");
}

std::string load_error(nn::Module& module, const std::map<std::string, Tensor>& state, bool strict = true) {
  try {
    module.load_state_dict(state, strict);
  } catch (const Error& error) {
    return error.what();
  }
  return "";
}

TEST(StateDict, ReportsMissingUnexpectedAndMismatchedEntriesAndChangesNothing) {
  nn::Linear linear(2, 3);
  Tensor before = linear.parameter("weight").clone();
  std::string message = load_error(linear, {{"weight", Tensor::zeros({3, 2}, DType::f32)},
                                            {"bias", Tensor::zeros({4}, DType::f32)},
                                            {"extra.weight", Tensor::zeros({1}, DType::f32)}});
  EXPECT_NE(message.find("size mismatch for bias: copying a tensor of shape [4] from the state dict, the shape in "
                         "the module is [3]"),
            std::string::npos)
      << message;
  EXPECT_NE(message.find("unexpected keys: extra.weight"), std::string::npos) << message;
  EXPECT_EQ(mismatch(before, linear.parameter("weight"), 0, 0), "") << "nothing may change on error";

  message = load_error(linear, {{"weight", Tensor::zeros({3, 2}, DType::f32)}});
  EXPECT_NE(message.find("missing keys: bias"), std::string::npos) << message;
  EXPECT_EQ(load_error(linear, {{"weight", Tensor::zeros({3, 2}, DType::f32)}}, /*strict=*/false), "");
  EXPECT_EQ(linear.parameter("weight").flat_double(0), 0.0);

  try {
    linear.load_state_dict(data_path("mlp.weights.safetensors"));
    FAIL() << "loading the MLP's weights into one Linear must fail";
  } catch (const Error& error) {
    std::string text = error.what();
    EXPECT_NE(text.find("mlp.weights.safetensors"), std::string::npos) << text;
    EXPECT_NE(text.find("unexpected keys: fc1.bias, fc1.weight"), std::string::npos) << text;
  }
}

TEST(ModuleCall, OutsideATraceIsAnError) {
  nn::ReLU relu;
  try {
    relu(Var());
    FAIL();
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find("outside kiln::trace"), std::string::npos) << error.what();
  }
}

}  // namespace
}  // namespace kiln::training_test

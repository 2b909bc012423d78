// The models and data of the compiled-training tests: the MLP (784-128-10) and the small CNN
// of scripts/make_training_parity.py rebuilt with kiln::nn under the same module paths, the
// loss (mean cross_entropy), PyTorch's reference files in tests/data/training_parity/, and the
// compile options (a per-process cache under the build tree), and the interpreter's gradients
// that compiled steps are checked against.
#pragma once

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "frontends/module/trace_graph.h"
#include "ir/interpreter.h"
#include "kiln/kiln.h"
#include "kiln/npy.h"
#include "passes/autodiff.h"
#include "passes/pass_manager.h"
#include "tests/support/shared_compile_cache.h"
#include "tests/support/test_paths.h"

namespace kiln::training_step_test {

namespace F = nn::functional;

class Mlp : public nn::Module {
 public:
  Mlp() : Module("Mlp") {
    fc1_ = register_module("fc1", std::make_shared<nn::Linear>(784, 128));
    fc2_ = register_module("fc2", std::make_shared<nn::Linear>(128, 10));
  }
  Var forward(const Var& x) override { return (*fc2_)(F::relu((*fc1_)(x))); }

 private:
  std::shared_ptr<nn::Linear> fc1_, fc2_;
};

// conv (1 -> 4 channels, 3x3) -> BatchNorm2d -> relu -> linear to `classes`, on side x side
// images: a training step updates BatchNorm's running statistics.
class ConvBatchNorm : public nn::Module {
 public:
  ConvBatchNorm(int64_t side, int64_t classes) : Module("ConvBatchNorm") {
    conv_ = register_module("conv", std::make_shared<nn::Conv2d>(1, 4, 3, 1, 1));
    bn_ = register_module("bn", std::make_shared<nn::BatchNorm2d>(4));
    fc_ = register_module("fc", std::make_shared<nn::Linear>(4 * side * side, classes));
  }
  Var forward(const Var& x) override { return (*fc_)(F::relu((*bn_)((*conv_)(x))).flatten(1)); }

 private:
  std::shared_ptr<nn::Conv2d> conv_;
  std::shared_ptr<nn::BatchNorm2d> bn_;
  std::shared_ptr<nn::Linear> fc_;
};

class SmallCnn : public nn::Module {
 public:
  SmallCnn() : Module("SmallCnn") {
    conv1_ = register_module("conv1", std::make_shared<nn::Conv2d>(1, 8, 3, 1, 1));
    conv2_ = register_module("conv2", std::make_shared<nn::Conv2d>(8, 16, 3, 1, 1));
    fc_ = register_module("fc", std::make_shared<nn::Linear>(16 * 4 * 4, 10));
  }
  Var forward(const Var& input) override {
    Var x = F::max_pool2d(F::relu((*conv1_)(input)), {2, 2});
    x = F::max_pool2d(F::relu((*conv2_)(x)), {2, 2});
    return (*fc_)(x.flatten(1));
  }

 private:
  std::shared_ptr<nn::Conv2d> conv1_, conv2_;
  std::shared_ptr<nn::Linear> fc_;
};

inline Var cross_entropy_loss(const Var& logits, const Var& labels) { return F::cross_entropy(logits, labels); }

inline std::filesystem::path parity_dir(const std::string& model) {
  return std::filesystem::path(KILN_SOURCE_DIR) / "tests" / "data" / "training_parity" / model;
}

// PyTorch's run of one model: initial weights, batches, each optimizer's losses and final weights.
struct ParityReference {
  std::string model;
  std::map<std::string, Tensor> init;
  Tensor x, y;  // [steps, batch, ...], [steps, batch]
  nlohmann::json report;

  explicit ParityReference(const std::string& name)
      : model(name),
        init(read_safetensors((parity_dir(name) / "init.safetensors").string())),
        x(read_npy((parity_dir(name) / "x.npy").string())),
        y(read_npy((parity_dir(name) / "y.npy").string())) {
    std::ifstream in(parity_dir(name) / "losses.json");
    report = nlohmann::json::parse(in);
  }
  int64_t steps() const { return x.size(0); }
  Batch batch(int64_t step) const { return {{x.select(0, step).contiguous()}, {y.select(0, step).contiguous()}}; }
  std::map<std::string, Tensor> final_weights(const std::string& optimizer) const {
    return read_safetensors((parity_dir(model) / ("final_" + optimizer + ".safetensors")).string());
  }
};

// The optimizer PyTorch used, from losses.json.
inline OptimizerOptions reference_optimizer(const nlohmann::json& settings) {
  if (settings.at("kind") == "sgd") {
    SgdOptions sgd;
    sgd.lr = settings.at("lr");
    sgd.momentum = settings.at("momentum");
    sgd.dampening = settings.at("dampening");
    sgd.nesterov = settings.at("nesterov");
    sgd.weight_decay = settings.at("weight_decay");
    return sgd;
  }
  AdamOptions adam;
  adam.lr = settings.at("lr");
  adam.beta1 = settings.at("betas").at(0);
  adam.beta2 = settings.at("betas").at(1);
  adam.eps = settings.at("eps");
  adam.weight_decay = settings.at("weight_decay");
  return adam;
}

// The joint graph of the module's mean cross_entropy against its parameters, built here from
// the public passes (trace, default pipeline, autodiff), and run by the reference interpreter
// on the module's current parameters: the gradients by parameter name.
inline std::map<std::string, Tensor> interpreted_gradients(nn::Module& module, const Batch& batch) {
  module.assign_paths();
  ir::Graph graph = trace_graph(
      [&](const std::vector<Var>& in) { return std::vector<Var>{cross_entropy_loss(module(in[0]), in[1])}; },
      {example_meta(batch.inputs[0]), example_meta(batch.targets[0])}, {{"x", "y"}});
  passes::run_pipeline(graph, "simplified");
  passes::JointGraph joint = passes::build_joint_graph(graph, passes::AutodiffOptions::for_loss(0));
  std::vector<Tensor> outputs = ir::interpret(joint.graph, {{"x", batch.inputs[0]}, {"y", batch.targets[0]}});
  std::map<std::string, Tensor> gradients;
  for (size_t i = 0; i < joint.wrt.size(); ++i) gradients[joint.wrt[i]] = outputs.at(size_t(joint.num_forward_outputs) + i);
  return gradients;
}

// max |a - e| / (max |e| + 1e-12) over a tensor.
inline double relative_difference(const Tensor& expected, const Tensor& actual) {
  double difference = 0, scale = 0;
  for (int64_t i = 0; i < expected.numel(); ++i) {
    difference = std::max(difference, std::fabs(actual.flat_double(i) - expected.flat_double(i)));
    scale = std::max(scale, std::fabs(expected.flat_double(i)));
  }
  return difference / (scale + 1e-12);
}

// One compile cache for the suite (safe under concurrent processes), so reruns compile no C++.
inline TrainingOptions test_options() {
  TrainingOptions options;
  options.compile.cache_dir = test_support::shared_compile_cache(std::filesystem::path(KILN_BINARY_DIR) / "test-compile-cache");
  return options;
}

}  // namespace kiln::training_step_test

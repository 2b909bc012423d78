// Compiled training, the public face of compiler/training/compiled_training.h:
// kiln::compile_training traces a module and its loss once, compiles the forward, the
// backward and a fused optimizer, and returns an object whose step(batch) trains in place.
//
//   kiln::nn::Sequential model(kiln::nn::Linear(2, 64), kiln::nn::ReLU(), kiln::nn::Linear(64, 3));
//   namespace F = kiln::nn::functional;
//   auto training = kiln::compile_training(
//       model, [](const kiln::Var& logits, const kiln::Var& labels) { return F::cross_entropy(logits, labels); },
//       kiln::SgdOptions{.lr = 0.1, .momentum = 0.9}, {{x}, {y}});
//   for (...) float loss = training.step({{x}, {y}});
//   std::vector<kiln::Tensor> logits = training.evaluate({x});  // eval mode
//
// Gradient accumulation as in PyTorch: training.zero_grad(); training.accumulate(b1, 0.5);
// training.accumulate(b2, 0.5); training.apply();
#pragma once

#include <functional>

#include "compiler/training/compiled_training.h"
#include "runtime/error.h"

namespace kiln {

using training::AdamOptions;
using training::adamw_options;
using training::Batch;
using training::CompiledTraining;
using training::LossFunction;
using training::OptimizerOptions;
using training::SgdOptions;
using training::TrainingOptions;

// The loss of a module with one output against one target.
using SingleLossFunction = std::function<Var(const Var& output, const Var& target)>;

inline CompiledTraining compile_training(nn::Module& module, LossFunction loss_fn, const OptimizerOptions& optimizer,
                                         const Batch& example, const TrainingOptions& options = {}) {
  return CompiledTraining::compile(module, std::move(loss_fn), optimizer, example, options);
}

inline CompiledTraining compile_training(nn::Module& module, SingleLossFunction loss_fn,
                                         const OptimizerOptions& optimizer, const Batch& example,
                                         const TrainingOptions& options = {}) {
  LossFunction loss = [loss_fn = std::move(loss_fn)](const std::vector<Var>& outputs, const std::vector<Var>& targets) {
    if (outputs.size() != 1 || targets.size() != 1)
      fail("compile_training: this loss takes one output and one target; the module returned ", outputs.size(),
           " outputs and the batch has ", targets.size(), " targets (pass a kiln::LossFunction over vectors)");
    return loss_fn(outputs[0], targets[0]);
  };
  return CompiledTraining::compile(module, std::move(loss), optimizer, example, options);
}

}  // namespace kiln

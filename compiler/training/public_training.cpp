// kiln::CompiledTraining and kiln::compile_training (kiln/training.h): the public handle over
// training::CompiledTraining (compiled_training.h), and the one-output loss adapter.
#include <utility>

#include "compiler/training/compiled_training.h"
#include "compiler/training/training_access.h"
#include "kiln/error.h"
#include "kiln/training.h"

namespace kiln {

CompiledTraining::CompiledTraining(std::unique_ptr<training::CompiledTraining> training)
    : training_(std::move(training)) {}
CompiledTraining::~CompiledTraining() = default;
CompiledTraining::CompiledTraining(CompiledTraining&&) noexcept = default;
CompiledTraining& CompiledTraining::operator=(CompiledTraining&&) noexcept = default;

float CompiledTraining::step(const Batch& batch) { return training_->step(batch); }
float CompiledTraining::accumulate(const Batch& batch, double grad_scale) {
  return training_->accumulate(batch, grad_scale);
}
void CompiledTraining::apply() { training_->apply(); }
void CompiledTraining::zero_grad() { training_->zero_grad(); }
void CompiledTraining::set_lr(double lr) { training_->optimizer().set_lr(lr); }
std::vector<Tensor> CompiledTraining::evaluate(const std::vector<Tensor>& inputs) { return training_->evaluate(inputs); }
Tensor CompiledTraining::parameter(const std::string& name) const { return training_->parameter(name); }
Tensor CompiledTraining::gradient(const std::string& name) const { return training_->gradient(name); }
const std::vector<std::string>& CompiledTraining::parameter_names() const { return training_->parameter_names(); }
size_t CompiledTraining::compile_count() const { return training_->compile_count(); }
size_t CompiledTraining::step_variant_count() const { return training_->step_variant_count(); }
size_t CompiledTraining::eval_variant_count() const { return training_->eval_variant_count(); }

CompiledTraining compile_training(nn::Module& module, LossFunction loss_fn, const OptimizerOptions& optimizer,
                                  const Batch& example, const TrainingOptions& options) {
  return CompiledTraining(std::make_unique<training::CompiledTraining>(
      training::CompiledTraining::compile(module, std::move(loss_fn), optimizer, example, options)));
}

CompiledTraining compile_training(nn::Module& module, SingleLossFunction loss_fn, const OptimizerOptions& optimizer,
                                  const Batch& example, const TrainingOptions& options) {
  LossFunction loss = [loss_fn = std::move(loss_fn)](const std::vector<Var>& outputs, const std::vector<Var>& targets) {
    if (outputs.size() != 1 || targets.size() != 1)
      fail("compile_training: this loss takes one output and one target; the module returned ", outputs.size(),
           " outputs and the batch has ", targets.size(), " targets (pass a kiln::LossFunction over vectors)");
    return loss_fn(outputs[0], targets[0]);
  };
  return compile_training(module, std::move(loss), optimizer, example, options);
}

}  // namespace kiln

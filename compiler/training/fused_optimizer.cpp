// FusedOptimizer. See compiler/training/fused_optimizer.h.
#include "compiler/training/fused_optimizer.h"

#include <algorithm>
#include <map>

#include "kiln/error.h"

namespace kiln::training {

FusedOptimizer FusedOptimizer::sgd(ParameterArena& arena, const SgdOptions& options, const FusedOptimizerOptions& run) {
  return FusedOptimizer(arena, make_sgd_rule(options), options.lr, run);
}

FusedOptimizer FusedOptimizer::adam(ParameterArena& arena, const AdamOptions& options, const FusedOptimizerOptions& run) {
  return FusedOptimizer(arena, make_adam_rule(options), options.lr, run);
}

FusedOptimizer FusedOptimizer::adamw(ParameterArena& arena, const AdamOptions& options, const FusedOptimizerOptions& run) {
  AdamOptions decoupled = options;
  decoupled.decoupled_weight_decay = true;
  return FusedOptimizer(arena, make_adam_rule(decoupled), options.lr, run);
}

FusedOptimizer::FusedOptimizer(ParameterArena& arena, std::unique_ptr<UpdateRule> rule, double lr,
                               const FusedOptimizerOptions& run)
    : arena_(&arena), rule_(std::move(rule)), state_names_(rule_->state_names()), run_options_(run), lr_(lr) {
  if (run.num_threads < 0) fail(rule_->name(), ": num_threads must be >= 0 (0: the OpenMP default), got ", run.num_threads);
  // The update is one pointwise loop over the arena, which the pool already spreads over the
  // threads: no batch split (its "batch" would be the arena's elements).
  CompileOptions compile_options = run.compile;
  compile_options.batch_chunks = 1;
  for (const ParameterArena::Group& arena_group : arena.groups()) {
    const int64_t numel = arena_group.parameters.numel();
    Group group;
    group.model = std::make_unique<compiler::CompiledModel>(
        compiler::compile(rule_->build_graph(arena_group.dtype, numel), compile_options));
    ++compile_count_;
    if (InPlaceUpdate::supports(*group.model)) group.in_place = std::make_unique<InPlaceUpdate>(*group.model);
    for (size_t i = 0; i < state_names_.size(); ++i) group.states.push_back(Tensor::zeros({numel}, arena_group.dtype));
    groups_.push_back(std::move(group));
  }
}

void FusedOptimizer::set_lr(double lr) {
  validate_lr(rule_->name(), lr);
  lr_ = lr;
}

void FusedOptimizer::step() {
  const int64_t step = step_count_ + 1;
  const std::map<std::string, double> scalars = rule_->step_scalars(step, lr_);
  for (size_t g = 0; g < groups_.size(); ++g) {
    const ParameterArena::Group& arena_group = arena_->groups()[g];
    Group& group = groups_[g];
    std::map<std::string, Tensor> inputs = {{"param", arena_group.parameters}, {"grad", arena_group.gradients}};
    for (size_t i = 0; i < state_names_.size(); ++i) inputs[state_names_[i]] = group.states[i];
    for (const auto& [name, value] : scalars) inputs[name] = Tensor::scalar(value, update_scalar_dtype(arena_group.dtype));
    if (group.in_place) {
      std::vector<Tensor> outputs = {arena_group.parameters};
      outputs.insert(outputs.end(), group.states.begin(), group.states.end());
      group.in_place->run(inputs, outputs, run_options_.num_threads);
      continue;
    }
    std::vector<Tensor> outputs = group.model->run(inputs, run_options_.num_threads);
    KILN_CHECK(outputs.size() == 1 + state_names_.size(), "the update graph returns the parameters and each state");
    arena_group.parameters.copy_from(outputs[0]);
    for (size_t i = 0; i < state_names_.size(); ++i) group.states[i] = std::move(outputs[1 + i]);
  }
  step_count_ = step;
}

Tensor FusedOptimizer::state(std::string_view parameter, std::string_view key) const {
  auto it = std::find(state_names_.begin(), state_names_.end(), key);
  if (it == state_names_.end()) {
    std::string known;
    for (const std::string& name : state_names_) known += (known.empty() ? "" : ", ") + name;
    fail(rule_->name(), " has no state '", key, "' (it keeps: ", known.empty() ? "none" : known, ")");
  }
  const size_t group = arena_->group_of(parameter);
  return arena_->view_of(parameter, groups_[group].states[size_t(it - state_names_.begin())]);
}

}  // namespace kiln::training

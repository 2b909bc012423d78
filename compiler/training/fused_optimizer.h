// FusedOptimizer: SGD, Adam and AdamW over a ParameterArena, each step one compiled pointwise
// kernel per dtype group over the whole arena (the analogue of PyTorch's fused optimizers).
//
// Construction validates the hyperparameters (PyTorch's checks and messages), builds the rule's
// update graph (compiler/training/update_rule.h) for each dtype group of the arena, and compiles
// each once with the CPU backend (compiler/compile_driver.h; the compile cache makes a second
// optimizer of the same shape and hyperparameters a cache hit). step() then runs those kernels:
// the learning rate, bias corrections and the like are 0-d inputs, so no step, no set_lr and no
// number of steps ever compiles again (compile_count() stays the number of groups).
//
// State. Each group keeps its optimizer state (momentum buffers, exp_avg, exp_avg_sq,
// max_exp_avg_sq) in flat arenas laid out like the parameter arena, zero at the start as
// PyTorch's zeros_like; state(name, key) views one parameter's slice, as optimizer.state[p][key].
//
// Where the results go. Each update is one kernel that reads the parameter, gradient and state
// arenas and writes the new parameters and states back into the same arenas, in place, through
// the artifact's C ABI (compiler/training/in_place_update.h says why that is safe): one read and
// one write of each arena per step, nothing allocated, nothing copied. When the compiled update
// is not one kernel (compile.fuse = false) it runs through CompiledModel::run instead, whose fresh
// outputs become the state arenas and are copied into the parameter arena.
//
// Unlike PyTorch, which skips parameters whose .grad is None, every parameter is updated at
// every step (gradients are never None here: zero_grad keeps them at zero).
//
// The arena must outlive the optimizer.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "compiler/compile_driver.h"
#include "compiler/training/in_place_update.h"
#include "compiler/training/optimizer_options.h"
#include "compiler/training/parameter_arena.h"
#include "compiler/training/update_rule.h"

namespace kiln::training {

struct FusedOptimizerOptions {
  CompileOptions compile;
  int num_threads = 0;  // 0: the OpenMP default
};

class FusedOptimizer {
 public:
  static FusedOptimizer sgd(ParameterArena& arena, const SgdOptions& options, const FusedOptimizerOptions& run = {});
  static FusedOptimizer adam(ParameterArena& arena, const AdamOptions& options, const FusedOptimizerOptions& run = {});
  // AdamW: `options` with decoupled_weight_decay set; start from adamw_options() to keep AdamW's
  // default weight decay (1e-2) rather than Adam's (0).
  static FusedOptimizer adamw(ParameterArena& arena, const AdamOptions& options = adamw_options(),
                              const FusedOptimizerOptions& run = {});
  FusedOptimizer(ParameterArena& arena, std::unique_ptr<UpdateRule> rule, double lr, const FusedOptimizerOptions& run);

  // One update of every parameter from the gradient arena.
  void step();
  // zero_grad(set_to_none=False): zeroes the gradient arena.
  void zero_grad() { arena_->zero_grad(); }

  double lr() const { return lr_; }
  void set_lr(double lr);  // takes effect at the next step; refuses a negative lr
  int64_t step_count() const { return step_count_; }
  const char* name() const { return rule_->name(); }
  const UpdateRule& rule() const { return *rule_; }

  // The state `key` ("momentum_buffer", "exp_avg", "exp_avg_sq", "max_exp_avg_sq") of parameter
  // `parameter`, a view with its shape. Throws kiln::Error for an unknown parameter or key. In
  // place the view follows every later step; an unfused update replaces the state arenas at each
  // step, so there the view keeps the state of the moment it was taken.
  Tensor state(std::string_view parameter, std::string_view key) const;

  // How many graphs this optimizer compiled (one per dtype group, however many steps).
  size_t compile_count() const { return compile_count_; }
  // The compiled update of dtype group `group` (ParameterArena::groups() order).
  const compiler::CompiledModel& compiled(size_t group) const { return *groups_.at(group).model; }
  // Whether dtype group `group`'s update writes into the arenas in place (else: run, then copy).
  bool updates_in_place(size_t group) const { return groups_.at(group).in_place != nullptr; }

 private:
  struct Group {
    std::unique_ptr<compiler::CompiledModel> model;  // at a stable address: in_place points to it
    std::unique_ptr<InPlaceUpdate> in_place;    // null when the update cannot run in place
    std::vector<Tensor> states;                 // flat, in rule_->state_names() order
  };

  ParameterArena* arena_;
  std::unique_ptr<UpdateRule> rule_;
  std::vector<std::string> state_names_;
  FusedOptimizerOptions run_options_;
  double lr_;
  int64_t step_count_ = 0;
  size_t compile_count_ = 0;
  std::vector<Group> groups_;
};

}  // namespace kiln::training

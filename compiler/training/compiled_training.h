// CompiledTraining: a module's whole training step, compiled once (the analogue of
// torch.compile over a training loop, AOTAutograd style).
//
// compile() traces the module and the loss function together in train mode on the example
// batch's shapes, then runs the training pipeline:
//   trace -> functionalize -> decompose -> simplify (passes::run_pipeline "simplified")
//   -> build_joint_graph (the loss, against every trainable parameter the graph reads)
//   -> simplify -> partition_joint_graph (min cut: what the forward saves for the backward)
//   -> compiler::compile(forward), compiler::compile(backward)
// and builds a FusedOptimizer over a ParameterArena of those parameters.
//
// A step runs the compiled forward (the loss, the saved values and, for modules that update
// buffers in train mode such as BatchNorm, the buffers' new values, which are copied back into
// the module's buffers), the compiled backward (the gradients, written into the arena's
// gradient views), and the fused optimizer over the arena.
//
// Parameters. The arena copies the module's trainable parameters in; the compiled forward and
// backward read the arena's views (the CPU backend passes parameter tensors by pointer on every
// run), so each optimizer update is seen by the next forward without recompiling. After each
// update the new values are copied back into the module's own parameter tensors, so the
// module (state_dict, a later trace) always holds the trained weights, as with PyTorch's
// in-place optimizers. Parameters the traced graph never reads are left alone (PyTorch skips
// parameters whose grad is None).
//
// Gradients follow PyTorch: accumulate() adds this batch's gradients (times grad_scale, as
// (loss * grad_scale).backward() would) to the gradient arena, apply() runs the optimizer on
// what has accumulated, zero_grad() clears it (set_to_none=False). step(batch) is
// zero_grad(); accumulate(batch); apply() and returns the loss; with data_parallel, step()
// averages each gradient bucket across the ranks while the rest of the backward runs
// (compiler/distributed/data_parallel.h), and apply() only what accumulate() added.
//
// Compiles, with kiln::compile(fn)'s guards and automatic dynamic shapes
// (compiler/function/guards.h, dynamic_dims.h). Each compiled step is a variant guarded on the
// batch's dtypes, ranks and sizes; a batch that no variant accepts traces and compiles another.
// With TrainingOptions::dynamic automatic (the default), a dim whose size changed since the
// first batch (the batch size, typically) is traced as a symbol, so one variant then serves
// every size (0 and 1 stay static, as in PyTorch); `always` makes every dim symbolic from the
// first batch, `never` compiles each new size. Past options.recompile_limit variants, a batch no
// variant accepts runs interpreted (one warning naming the guard that kept failing).
// compile_count() counts every graph compiled, the optimizer's included. evaluate() traces the
// module alone in eval mode, its variants kept the same way.
//
// Data parallel (TrainingOptions::data_parallel): once the first variant is compiled, the ranks
// check that they agree and take rank 0's parameters and buffers; apply() averages the gradient
// arena across the ranks before the optimizer runs (compiler/distributed/data_parallel.h).
//
// The module must outlive this object and must not change its structure while it lives.
#pragma once

#include <cstddef>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <variant>
#include <vector>

#include "compiler/compile_driver.h"
#include "compiler/distributed/data_parallel.h"
#include "compiler/function/dynamic_dims.h"
#include "compiler/function/guards.h"
#include "compiler/training/fused_optimizer.h"
#include "compiler/training/optimizer_options.h"
#include "kiln/training.h"
#include "compiler/training/parameter_arena.h"
#include "kiln/nn/module.h"
#include "kiln/var.h"
#include "passes/partition.h"

namespace kiln::vm {
class VirtualMachine;
}
#include "kiln/tensor.h"

namespace kiln::training {

class CompiledTraining {
 public:
  // Traces, compiles and builds the optimizer (see above). Throws kiln::Error when the loss
  // is not a floating scalar or the module has no trainable parameter that the loss reads.
  static CompiledTraining compile(nn::Module& module, LossFunction loss, const OptimizerOptions& optimizer,
                                  const Batch& example, const TrainingOptions& options = {});
  ~CompiledTraining();
  CompiledTraining(CompiledTraining&&) noexcept;
  CompiledTraining& operator=(CompiledTraining&&) noexcept;

  // zero_grad(), accumulate(batch), apply(); returns the loss (computed before the update).
  float step(const Batch& batch);
  // Runs forward and backward on `batch` and adds grad_scale times its gradients to the
  // accumulated ones; returns the loss.
  float accumulate(const Batch& batch, double grad_scale = 1.0);
  // One optimizer update from the accumulated gradients (which it leaves as they are).
  void apply();
  void zero_grad();

  // The module's outputs in eval mode (no dropout, BatchNorm's running statistics), with the
  // current parameters. The module's own mode is restored afterwards.
  std::vector<Tensor> evaluate(const std::vector<Tensor>& inputs);

  // The trained parameters by module path (views of the arena), and their gradients.
  Tensor parameter(const std::string& name) const { return arena_->parameter(name); }
  Tensor gradient(const std::string& name) const { return arena_->gradient(name); }
  const std::vector<std::string>& parameter_names() const { return arena_->names(); }
  FusedOptimizer& optimizer() { return *optimizer_; }

  // Graphs compiled so far: forward and backward per step variant, the eval forward per eval
  // variant, and the optimizer's update kernels.
  size_t compile_count() const;
  // Variants compiled so far: of the step, and of evaluate().
  size_t step_variant_count() const { return steps_.compiled.size(); }
  size_t eval_variant_count() const { return evals_.compiled.size(); }
  // The partition of the first (example) batch's variant: saved values, saved bytes.
  const passes::Partition& partition() const;
  // The data-parallel state (its group, its gradient buckets); null without data_parallel.
  const compiler::DataParallel* data_parallel() const { return data_parallel_.get(); }

 private:
  struct StepProgram;
  struct EvalProgram;
  // The variants of one traced callable (the step, or evaluate): each its guards over the
  // placeholders and what it compiled; the dims made dynamic; the placeholders' names.
  template <typename Program>
  struct Variants {
    std::vector<std::pair<std::vector<compiler::Guard>, std::unique_ptr<Program>>> compiled;
    compiler::DynamicDims dims;
    std::vector<std::string> names;
    bool warned_limit = false;
    std::unique_ptr<Program> interpreted;  // past the recompile limit: the latest call's
  };
  CompiledTraining(nn::Module& module, LossFunction loss, const TrainingOptions& options);

  StepProgram& program_for(const Batch& batch);
  EvalProgram& eval_program_for(const std::vector<Tensor>& inputs);
  template <typename Program, typename Make>
  Program& variant_for(Variants<Program>& variants, const std::vector<Tensor>& tensors, const std::string& what,
                       Make make);
  std::unique_ptr<StepProgram> build_program(const std::vector<ir::TensorMeta>& types, size_t num_inputs) const;
  void compile_step(StepProgram& program, const CompileOptions& options);
  void copy_parameters_to_module() const;
  void start_data_parallel(const StepProgram& first, const OptimizerOptions& optimizer);
  float run_forward(StepProgram& program, const Batch& batch, std::map<std::string, Tensor>& saved);
  void stage_backward(StepProgram& program);
  void overlapped_backward(StepProgram& program, const std::map<std::string, Tensor>& saved);
  bool overlaps_communication() const;

  nn::Module* module_;
  LossFunction loss_;
  TrainingOptions options_;
  std::unique_ptr<ParameterArena> arena_;
  std::unique_ptr<FusedOptimizer> optimizer_;
  std::unique_ptr<compiler::DataParallel> data_parallel_;
  // Each trainable parameter's tensor in the module, paired with the arena's view of it.
  std::vector<std::pair<Tensor, Tensor>> module_parameters_;
  Variants<StepProgram> steps_;
  Variants<EvalProgram> evals_;
  size_t batch_inputs_ = 0, batch_targets_ = 0;  // the example batch's counts
  size_t model_compiles_ = 0;
  // Data-parallel step(): the VM whose compute and communication streams overlap the backward's
  // stages with the buckets' averages (made at the first step() that has stages), and whether the
  // accumulated gradients are averaged already (apply() averages them otherwise).
  std::unique_ptr<vm::VirtualMachine> vm_;
  bool gradients_averaged_ = false;
};

}  // namespace kiln::training

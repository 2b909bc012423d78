// Compiled training: kiln::compile_training traces a module and its loss once, compiles the
// forward, the backward and a fused optimizer, and returns a kiln::CompiledTraining whose
// step(batch) trains the module's parameters in place.
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
//
// Data-parallel training across processes (mpirun -np N, or kiln launch -n N): set
// TrainingOptions::data_parallel to kiln::distributed::init_process_group() and give each rank its
// share of every batch (samples/train_ddp).
//
// A batch of a new shape compiles again, as kiln::compile(fn) does: a changed batch size becomes
// a symbolic dim (TrainingOptions::dynamic), up to TrainingOptions::recompile_limit variants.
// What a step runs, how parameters and gradients live, and when it compiles again: see
// compiler/training/compiled_training.h, the object behind this handle (Kiln's own code reaches
// it through compiler/training/training_access.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <variant>
#include <vector>

#include "kiln/compile_options.h"
#include "kiln/distributed.h"
#include "kiln/nn/module.h"
#include "kiln/optimizer_options.h"
#include "kiln/tensor.h"
#include "kiln/var.h"

namespace kiln {

namespace training {

// One batch: the module's inputs and the loss function's targets.
struct Batch {
  std::vector<Tensor> inputs;
  std::vector<Tensor> targets;
};

// The loss of the module's outputs against the targets: a floating scalar Var.
using LossFunction = std::function<Var(const std::vector<Var>& outputs, const std::vector<Var>& targets)>;

// SGD, or Adam (AdamW: AdamOptions with decoupled_weight_decay, see adamw_options()).
using OptimizerOptions = std::variant<SgdOptions, AdamOptions>;

struct TrainingOptions {
  CompileOptions compile;  // for every graph compiled (forward, backward, optimizer, eval)
  int num_threads = 0;     // 0: the OpenMP default
  // Batches of a new shape: a dim that changed becomes symbolic (automatic), every dim is
  // symbolic from the first batch (always), or each new size compiles again (never).
  DynamicShapes dynamic = DynamicShapes::automatic;
  // Compiled variants of the step (and of evaluate) at most; past it, a batch that no variant
  // accepts runs in the interpreter, with one warning naming the guard that kept failing.
  int recompile_limit = 8;
  // Data parallelism across the ranks of a process group (kiln/distributed.h), as PyTorch's
  // DistributedDataParallel: compiling is then a collective that checks every rank builds the
  // same training and gives every rank rank 0's parameters and buffers; each apply() (and so
  // each step()) averages the accumulated gradients across the ranks before the update, in
  // buckets of about gradient_bucket_bytes; accumulate() communicates nothing. Every rank calls
  // compile_training, step/accumulate/apply the same number of times, with batches of the same
  // shapes for the same result as one process on the concatenated batch.
  std::shared_ptr<distributed::ProcessGroup> data_parallel;
  int64_t gradient_bucket_bytes = int64_t(25) << 20;
  // Whether step() averages each bucket on a communication thread while the rest of the backward
  // runs (the backward cut into stages at the buckets' boundaries), as DDP does: automatic does
  // where the process may run on more cores than its compute threads (the thread needs one of its
  // own: with `mpirun --bind-to core` and one thread per rank it would only slow the step), always
  // and never force it. Either way the numbers are the same.
  enum class Overlap { automatic, always, never };
  Overlap overlap_communication = Overlap::automatic;
  // Whether every training forward (step, accumulate) starts from rank 0's buffers (BatchNorm's
  // running statistics), broadcast before it, as DDP's broadcast_buffers (its default too);
  // otherwise each rank keeps its own, updated from its own share of each batch. evaluate() is
  // not a collective: it reads this rank's buffers.
  bool broadcast_buffers = true;
};

class CompiledTraining;  // compiler/training/compiled_training.h

}  // namespace training

using training::AdamOptions;
using training::adamw_options;
using training::Batch;
using training::LossFunction;
using training::OptimizerOptions;
using training::SgdOptions;
using training::TrainingOptions;

// The loss of a module with one output against one target.
using SingleLossFunction = std::function<Var(const Var& output, const Var& target)>;

class CompiledTraining {
 public:
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
  // The optimizer's learning rate from the next update on (a schedule); a negative lr is an error.
  void set_lr(double lr);

  // The module's outputs in eval mode (no dropout, BatchNorm's running statistics), with the
  // current parameters. The module's own mode is restored afterwards.
  std::vector<Tensor> evaluate(const std::vector<Tensor>& inputs);

  // The trained parameters by module path, and their gradients (views: they change with training).
  Tensor parameter(const std::string& name) const;
  Tensor gradient(const std::string& name) const;
  const std::vector<std::string>& parameter_names() const;
  // Graphs compiled so far: forward and backward per step variant, the eval forward per eval
  // variant, and the optimizer's update kernels.
  size_t compile_count() const;
  // Variants compiled so far, of the step and of evaluate(): each guarded on its batch's dtypes
  // and sizes; a changed dim becomes symbolic (TrainingOptions::dynamic), so a new batch size
  // normally adds one variant for all sizes.
  size_t step_variant_count() const;
  size_t eval_variant_count() const;

 private:
  friend struct TrainingAccess;  // compiler/training/training_access.h
  friend CompiledTraining compile_training(nn::Module&, LossFunction, const OptimizerOptions&, const Batch&,
                                           const TrainingOptions&);
  explicit CompiledTraining(std::unique_ptr<training::CompiledTraining> training);
  std::unique_ptr<training::CompiledTraining> training_;
};

// Traces, compiles and builds the optimizer. Throws kiln::Error when the loss is not a floating
// scalar, the module has no trainable parameter that the loss reads, or an option is invalid.
// The module must outlive the result and must not change its structure while it lives.
CompiledTraining compile_training(nn::Module& module, LossFunction loss_fn, const OptimizerOptions& optimizer,
                                  const Batch& example, const TrainingOptions& options = {});
CompiledTraining compile_training(nn::Module& module, SingleLossFunction loss_fn, const OptimizerOptions& optimizer,
                                  const Batch& example, const TrainingOptions& options = {});

}  // namespace kiln

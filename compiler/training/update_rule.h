// UpdateRule: one optimizer's step over one flat arena (compiler/training/parameter_arena.h),
// written as an ir::Graph of pointwise ops that the CPU backend compiles into one fused kernel.
//
// The graph of every rule follows one convention:
//   placeholders  "param" and "grad": the flat parameter and gradient arenas (1-d, `numel`,
//                 the arena's dtype); one per optimizer state, named as PyTorch's state keys
//                 ("momentum_buffer", "exp_avg", ...), of the same shape and dtype; then the
//                 per-step scalars (0-d; f64 for an f64 arena, f32 otherwise, as PyTorch's
//                 opmath): the values that may change from step to step (the learning rate,
//                 Adam's bias corrections, SGD's first-step switch), so one compiled kernel
//                 serves every step.
//   outputs       the new parameters, then each new state in state_names() order.
// Hyperparameters fixed for the optimizer's life (betas, eps, momentum, weight decay) are
// constants in the graph. The ops and their order repeat PyTorch's single-tensor
// implementations (torch/optim/sgd.py, adam.py) op for op, so results agree to rounding.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "compiler/training/optimizer_options.h"
#include "ir/graph.h"

namespace kiln::training {

class UpdateRule {
 public:
  virtual ~UpdateRule() = default;
  virtual const char* name() const = 0;  // "SGD", "Adam", "AdamW"
  virtual std::vector<std::string> state_names() const = 0;
  // The graph of one step over a flat arena of `numel` elements of floating `dtype`.
  virtual ir::Graph build_graph(DType dtype, int64_t numel) const = 0;
  // The per-step scalar placeholders' values for step `step` (1 for the first) at learning rate `lr`.
  virtual std::map<std::string, double> step_scalars(int64_t step, double lr) const = 0;
};

// Validate their options (compiler/training/optimizer_options.h) and throw kiln::Error.
std::unique_ptr<UpdateRule> make_sgd_rule(const SgdOptions& options);
std::unique_ptr<UpdateRule> make_adam_rule(const AdamOptions& options);

// The dtype of the per-step scalars of an arena of `arena_dtype`.
DType update_scalar_dtype(DType arena_dtype);

// Graph building blocks shared by the rules.
namespace update_graph {
ir::Node* flat_input(ir::Graph& graph, const std::string& name, DType dtype, int64_t numel);
ir::Node* scalar_input(ir::Graph& graph, const std::string& name, DType arena_dtype);
ir::Node* call(ir::Graph& graph, const char* op, std::vector<ir::Argument> args);
}  // namespace update_graph

}  // namespace kiln::training

// SGD's update graph: torch.optim.SGD's single-tensor step (torch/optim/sgd.py), op for op.
//   g   = maximize ? -grad : grad
//   g   = g + weight_decay * param                          (weight_decay != 0)
//   buf = buf * momentum_scale + g * grad_scale             (momentum != 0)
//   g   = nesterov ? g + momentum * buf : buf
//   param = param + neg_lr * g
// PyTorch's first step sets buf = g (a clone); here the first step passes momentum_scale 0 and
// grad_scale 1 (buf starts at zero: 0 * 0 + g * 1 is g exactly), later steps momentum and
// 1 - dampening, so one kernel serves both.
#include "compiler/training/update_rule.h"

namespace kiln::training {

namespace {

using update_graph::call;

class SgdRule final : public UpdateRule {
 public:
  explicit SgdRule(const SgdOptions& options) : options_(options) { validate(options_); }

  const char* name() const override { return "SGD"; }

  std::vector<std::string> state_names() const override {
    if (has_momentum()) return {"momentum_buffer"};
    return {};
  }

  ir::Graph build_graph(DType dtype, int64_t numel) const override {
    ir::Graph g;
    ir::Node* param = update_graph::flat_input(g, "param", dtype, numel);
    ir::Node* grad = update_graph::flat_input(g, "grad", dtype, numel);
    ir::Node* buf = has_momentum() ? update_graph::flat_input(g, "momentum_buffer", dtype, numel) : nullptr;
    ir::Node* neg_lr = update_graph::scalar_input(g, "neg_lr", dtype);
    ir::Node* direction = options_.maximize ? call(g, "neg", {grad}) : grad;
    if (options_.weight_decay != 0) direction = call(g, "add", {direction, call(g, "mul", {param, options_.weight_decay})});
    ir::Node* new_buf = nullptr;
    if (has_momentum()) {
      ir::Node* momentum_scale = update_graph::scalar_input(g, "momentum_scale", dtype);
      ir::Node* grad_scale = update_graph::scalar_input(g, "grad_scale", dtype);
      new_buf = call(g, "add", {call(g, "mul", {buf, momentum_scale}), call(g, "mul", {direction, grad_scale})});
      direction = options_.nesterov ? call(g, "add", {direction, call(g, "mul", {new_buf, options_.momentum})}) : new_buf;
    }
    ir::Node* new_param = call(g, "add", {param, call(g, "mul", {direction, neg_lr})});
    std::vector<ir::Node*> outputs = {new_param};
    if (new_buf != nullptr) outputs.push_back(new_buf);
    g.create_output(std::vector<ir::Argument>(outputs.begin(), outputs.end()));
    return g;
  }

  std::map<std::string, double> step_scalars(int64_t step, double lr) const override {
    std::map<std::string, double> scalars = {{"neg_lr", -lr}};
    if (has_momentum()) {
      const bool first = step == 1;
      scalars["momentum_scale"] = first ? 0.0 : options_.momentum;
      scalars["grad_scale"] = first ? 1.0 : 1.0 - options_.dampening;
    }
    return scalars;
  }

 private:
  bool has_momentum() const { return options_.momentum != 0; }
  SgdOptions options_;
};

}  // namespace

std::unique_ptr<UpdateRule> make_sgd_rule(const SgdOptions& options) { return std::make_unique<SgdRule>(options); }

}  // namespace kiln::training

// Adam's and AdamW's update graph: torch.optim.Adam's single-tensor step (torch/optim/adam.py,
// the default on CPU), op for op.
//   g      = maximize ? -grad : grad
//   param  = param * decay                                  (AdamW, weight_decay != 0)
//   g      = g + weight_decay * param                       (Adam, weight_decay != 0)
//   m      = lerp(m, g, 1 - beta1)                           (exp_avg.lerp_: ATen's two-sided form)
//   v      = v * beta2 + ((1 - beta2) * g) * g               (exp_avg_sq.mul_().addcmul_())
//   vmax   = maximum(vmax, v)                                (amsgrad)
//   denom  = sqrt(amsgrad ? vmax : v) / bias_correction2_sqrt + eps
//   param  = param + (neg_step_size * m) / denom             (addcdiv_)
// with the per-step scalars, computed in double on the host as PyTorch does:
//   neg_step_size = -lr / (1 - beta1^step), bias_correction2_sqrt = sqrt(1 - beta2^step),
//   decay = 1 - lr * weight_decay.
#include "compiler/training/update_rule.h"

#include <cmath>

namespace kiln::training {

namespace {

using update_graph::call;

class AdamRule final : public UpdateRule {
 public:
  explicit AdamRule(const AdamOptions& options) : options_(options) { validate(options_); }

  const char* name() const override { return options_.decoupled_weight_decay ? "AdamW" : "Adam"; }

  std::vector<std::string> state_names() const override {
    if (options_.amsgrad) return {"exp_avg", "exp_avg_sq", "max_exp_avg_sq"};
    return {"exp_avg", "exp_avg_sq"};
  }

  ir::Graph build_graph(DType dtype, int64_t numel) const override {
    ir::Graph g;
    ir::Node* param = update_graph::flat_input(g, "param", dtype, numel);
    ir::Node* grad = update_graph::flat_input(g, "grad", dtype, numel);
    ir::Node* exp_avg = update_graph::flat_input(g, "exp_avg", dtype, numel);
    ir::Node* exp_avg_sq = update_graph::flat_input(g, "exp_avg_sq", dtype, numel);
    ir::Node* max_exp_avg_sq = options_.amsgrad ? update_graph::flat_input(g, "max_exp_avg_sq", dtype, numel) : nullptr;
    ir::Node* neg_step_size = update_graph::scalar_input(g, "neg_step_size", dtype);
    ir::Node* bias_correction2_sqrt = update_graph::scalar_input(g, "bias_correction2_sqrt", dtype);

    ir::Node* direction = options_.maximize ? call(g, "neg", {grad}) : grad;
    if (options_.weight_decay != 0) {
      if (options_.decoupled_weight_decay) {
        param = call(g, "mul", {param, update_graph::scalar_input(g, "decay", dtype)});
      } else {
        direction = call(g, "add", {direction, call(g, "mul", {param, options_.weight_decay})});
      }
    }
    ir::Node* new_exp_avg = lerp(g, exp_avg, direction, 1.0 - options_.beta1);
    ir::Node* new_exp_avg_sq = call(g, "add", {call(g, "mul", {exp_avg_sq, options_.beta2}),
                                               call(g, "mul", {call(g, "mul", {direction, 1.0 - options_.beta2}), direction})});
    ir::Node* second_moment = new_exp_avg_sq;
    ir::Node* new_max_exp_avg_sq = nullptr;
    if (options_.amsgrad) second_moment = new_max_exp_avg_sq = call(g, "maximum", {max_exp_avg_sq, new_exp_avg_sq});
    ir::Node* denom = call(g, "add", {call(g, "div", {call(g, "sqrt", {second_moment}), bias_correction2_sqrt}), options_.eps});
    ir::Node* new_param = call(g, "add", {param, call(g, "div", {call(g, "mul", {new_exp_avg, neg_step_size}), denom})});

    std::vector<ir::Node*> outputs = {new_param, new_exp_avg, new_exp_avg_sq};
    if (new_max_exp_avg_sq != nullptr) outputs.push_back(new_max_exp_avg_sq);
    g.create_output(std::vector<ir::Argument>(outputs.begin(), outputs.end()));
    return g;
  }

  std::map<std::string, double> step_scalars(int64_t step, double lr) const override {
    const double bias_correction1 = 1.0 - std::pow(options_.beta1, double(step));
    const double bias_correction2 = 1.0 - std::pow(options_.beta2, double(step));
    std::map<std::string, double> scalars = {{"neg_step_size", -(lr / bias_correction1)},
                                             {"bias_correction2_sqrt", std::sqrt(bias_correction2)}};
    if (options_.decoupled_weight_decay && options_.weight_decay != 0) scalars["decay"] = 1.0 - lr * options_.weight_decay;
    return scalars;
  }

 private:
  // ATen's lerp(start, end, weight): start + weight * (end - start) for |weight| < 0.5, else
  // end - (end - start) * (1 - weight); the weight is fixed, so the branch is chosen here.
  static ir::Node* lerp(ir::Graph& g, ir::Node* start, ir::Node* end, double weight) {
    ir::Node* difference = call(g, "sub", {end, start});
    if (std::abs(weight) < 0.5) return call(g, "add", {start, call(g, "mul", {difference, weight})});
    return call(g, "sub", {end, call(g, "mul", {difference, 1.0 - weight})});
  }

  AdamOptions options_;
};

}  // namespace

std::unique_ptr<UpdateRule> make_adam_rule(const AdamOptions& options) { return std::make_unique<AdamRule>(options); }

}  // namespace kiln::training

// VJPs of the elementwise ops: unary (neg ... relu), binary (add ... remainder) with their
// broadcasting reduced back to each input's shape, where, clamp, cast and clone. The formulas
// are PyTorch's (tools/autograd/derivatives.yaml), including its tie rules: maximum and
// minimum split the gradient evenly between equal inputs, clamp passes it where
// min <= x <= max, relu where the result is positive, pow gives 0 where the exponent is 0
// (for the base) and where the base is 0 with a non-negative exponent (for the exponent).
// Division with a rounding mode is piecewise constant: its gradient is zero, so it has none.
#include <cmath>

#include "passes/derivatives/derivatives.h"

namespace kiln::passes::derivatives {

using ir::Argument;
using ir::Node;

namespace {

// A unary op's gradient: `derivative` of (emit, x, result, grad) is the input's gradient.
using UnaryFormula = Node* (*)(VjpEmitter&, Node* x, Node* result, Node* grad);

Vjp unary(UnaryFormula formula) {
  return [formula](VjpEmitter& emit) -> std::vector<Gradient> {
    if (!emit.needs(0)) return {};
    return {emit.gradient_of(0, formula(emit, emit.input(0), emit.result(), emit.grad()))};
  };
}

Node* neg_grad(VjpEmitter& emit, Node*, Node*, Node* g) { return emit.call("neg", {g}); }
Node* abs_grad(VjpEmitter& emit, Node* x, Node*, Node* g) { return emit.call("mul", {g, emit.call("sign", {x})}); }
Node* exp_grad(VjpEmitter& emit, Node*, Node* y, Node* g) { return emit.call("mul", {g, y}); }
Node* log_grad(VjpEmitter& emit, Node* x, Node*, Node* g) { return emit.call("div", {g, x}); }
Node* log1p_grad(VjpEmitter& emit, Node* x, Node*, Node* g) {
  return emit.call("div", {g, emit.call("add", {x, 1.0})});
}
Node* expm1_grad(VjpEmitter& emit, Node*, Node* y, Node* g) {
  return emit.call("mul", {g, emit.call("add", {y, 1.0})});
}
Node* sqrt_grad(VjpEmitter& emit, Node*, Node* y, Node* g) {
  return emit.call("div", {g, emit.call("mul", {y, 2.0})});
}
Node* rsqrt_grad(VjpEmitter& emit, Node*, Node* y, Node* g) {  // -0.5 * g * y^3
  Node* cube = emit.call("mul", {emit.call("mul", {y, y}), y});
  return emit.call("mul", {emit.call("mul", {g, cube}), -0.5});
}
Node* reciprocal_grad(VjpEmitter& emit, Node*, Node* y, Node* g) {  // -g * y^2
  return emit.call("neg", {emit.call("mul", {g, emit.call("mul", {y, y})})});
}
Node* sin_grad(VjpEmitter& emit, Node* x, Node*, Node* g) { return emit.call("mul", {g, emit.call("cos", {x})}); }
Node* cos_grad(VjpEmitter& emit, Node* x, Node*, Node* g) {
  return emit.call("neg", {emit.call("mul", {g, emit.call("sin", {x})})});
}
Node* tanh_grad(VjpEmitter& emit, Node*, Node* y, Node* g) {  // g * (1 - y^2)
  return emit.call("mul", {g, emit.call("sub", {1.0, emit.call("mul", {y, y})})});
}
Node* sigmoid_grad(VjpEmitter& emit, Node*, Node* y, Node* g) {  // g * y * (1 - y)
  return emit.call("mul", {emit.call("mul", {g, y}), emit.call("sub", {1.0, y})});
}
Node* erf_grad(VjpEmitter& emit, Node* x, Node*, Node* g) {  // g * 2/sqrt(pi) * exp(-x^2)
  Node* gauss = emit.call("exp", {emit.call("neg", {emit.call("mul", {x, x})})});
  return emit.call("mul", {emit.call("mul", {g, gauss}), 2.0 / std::sqrt(M_PI)});
}
Node* erfinv_grad(VjpEmitter& emit, Node*, Node* y, Node* g) {  // g * sqrt(pi)/2 * exp(y^2)
  Node* scale = emit.call("exp", {emit.call("mul", {y, y})});
  return emit.call("mul", {emit.call("mul", {g, scale}), std::sqrt(M_PI) / 2.0});
}
Node* relu_grad(VjpEmitter& emit, Node*, Node* y, Node* g) { return emit.mask(emit.call("gt", {y, 0.0}), g); }
Node* identity_grad(VjpEmitter&, Node*, Node*, Node* g) { return g; }

// clamp(self, min, max): the gradient passes where min <= self <= max.
std::vector<Gradient> clamp_vjp(VjpEmitter& emit) {
  if (!emit.needs(0)) return {};
  Node* x = emit.input(0);
  Node* inside = nullptr;
  if (!emit.call().is_none(1)) inside = emit.call("ge", {x, emit.call().arg(1)}, {}, "above_min");
  if (!emit.call().is_none(2)) {
    Node* below = emit.call("le", {x, emit.call().arg(2)}, {}, "below_max");
    inside = inside ? emit.call("logical_and", {inside, below}, {}, "inside") : below;
  }
  return {emit.gradient_of(0, inside ? emit.mask(inside, emit.grad()) : emit.grad())};
}

// ---- binary ----

// The gradient times `factor` (a tensor or a number); the gradient itself for the number 1.
Node* scaled(VjpEmitter& emit, Node* g, const Argument& factor) {
  if (factor.is_number() && factor.floating() == 1.0) return g;
  return emit.call("mul", {g, factor});
}

std::vector<Gradient> add_sub_vjp(VjpEmitter& emit, double sign) {
  std::vector<Gradient> grads;
  if (emit.needs(0)) grads.push_back(emit.gradient_of(0, emit.grad()));
  if (emit.needs(1)) {
    const Argument& alpha = emit.call().arg(2);
    Node* g = scaled(emit, emit.grad(), alpha.is_number() ? Argument(sign * alpha.floating()) : alpha);
    grads.push_back(emit.gradient_of(1, g));
  }
  return grads;
}

std::vector<Gradient> mul_vjp(VjpEmitter& emit) {
  std::vector<Gradient> grads;
  if (emit.needs(0)) grads.push_back(emit.gradient_of(0, emit.call("mul", {emit.grad(), emit.call().arg(1)})));
  if (emit.needs(1)) grads.push_back(emit.gradient_of(1, emit.call("mul", {emit.grad(), emit.call().arg(0)})));
  return grads;
}

std::vector<Gradient> div_vjp(VjpEmitter& emit) {
  if (!emit.call().is_none(2)) return {};  // rounding: piecewise constant
  const Argument& self = emit.call().arg(0);
  const Argument& other = emit.call().arg(1);
  std::vector<Gradient> grads;
  if (emit.needs(0)) grads.push_back(emit.gradient_of(0, emit.call("div", {emit.grad(), other})));
  if (emit.needs(1)) {  // -g * self / other^2
    Node* numerator = emit.call("mul", {emit.grad(), self});
    Node* quotient = emit.call("div", {numerator, emit.call("mul", {other, other})});
    grads.push_back(emit.gradient_of(1, emit.call("neg", {quotient})));
  }
  return grads;
}

std::vector<Gradient> pow_vjp(VjpEmitter& emit) {
  const Argument& base = emit.call().arg(0);
  const Argument& exponent = emit.call().arg(1);
  Node* g = emit.grad();
  std::vector<Gradient> grads;
  if (emit.needs(0)) {  // g * e * x^(e - 1), 0 where e == 0
    Node* power = emit.call("pow", {base, exponent.is_number() ? Argument(exponent.floating() - 1.0)
                                                              : Argument(emit.call("sub", {exponent, 1.0}))});
    Node* grad = emit.call("mul", {emit.call("mul", {g, exponent}), power});
    if (!exponent.is_number()) grad = emit.call("where", {emit.call("eq", {exponent, 0.0}), 0.0, grad});
    else if (exponent.floating() == 0.0) grad = emit.call("mul", {g, 0.0});
    grads.push_back(emit.gradient_of(0, grad));
  }
  if (emit.needs(1)) {  // g * y * log(x), 0 where x == 0 and e >= 0
    Argument log_base =
        base.is_number() ? Argument(std::log(base.floating())) : Argument(emit.call("log", {base}, {}, "log_base"));
    Node* grad = emit.call("mul", {emit.call("mul", {g, emit.result()}), log_base});
    if (!base.is_number()) {
      Node* zero_base = emit.call("logical_and", {emit.call("eq", {base, 0.0}), emit.call("ge", {exponent, 0.0})});
      grad = emit.call("where", {zero_base, 0.0, grad});
    }
    grads.push_back(emit.gradient_of(1, grad));
  }
  return grads;
}

// maximum/minimum: `wins` is "gt" for maximum, "lt" for minimum. The gradient goes to the
// winner, half to each on a tie.
std::vector<Gradient> pointwise_extremum_vjp(VjpEmitter& emit, const char* wins, const char* loses) {
  const Argument& self = emit.call().arg(0);
  const Argument& other = emit.call().arg(1);
  Node* g = emit.grad();
  Node* tie = emit.call("eq", {self, other}, {}, "tie");
  Node* shared = emit.call("where", {tie, emit.call("mul", {g, 0.5}), g}, {}, "shared");
  std::vector<Gradient> grads;
  if (emit.needs(0))
    grads.push_back(emit.gradient_of(0, emit.call("where", {emit.call(loses, {self, other}), 0.0, shared})));
  if (emit.needs(1))
    grads.push_back(emit.gradient_of(1, emit.call("where", {emit.call(wins, {self, other}), 0.0, shared})));
  return grads;
}

// fmod/remainder: d/dself = 1, d/dother = -(self / other rounded by `rounding`).
std::vector<Gradient> remainder_vjp(VjpEmitter& emit, const char* rounding) {
  std::vector<Gradient> grads;
  if (emit.needs(0)) grads.push_back(emit.gradient_of(0, emit.grad()));
  if (emit.needs(1)) {
    Node* quotient = emit.call("div", {emit.call().arg(0), emit.call().arg(1)}, {{"rounding_mode", rounding}});
    grads.push_back(emit.gradient_of(1, emit.call("neg", {emit.call("mul", {emit.grad(), quotient})})));
  }
  return grads;
}

std::vector<Gradient> where_vjp(VjpEmitter& emit) {
  Node* condition = emit.input(0);
  std::vector<Gradient> grads;
  if (emit.needs(1)) grads.push_back(emit.gradient_of(1, emit.mask(condition, emit.grad())));
  if (emit.needs(2)) grads.push_back(emit.gradient_of(2, emit.call("where", {condition, 0.0, emit.grad()})));
  return grads;
}

}  // namespace

void register_pointwise_derivatives(DerivativeTable& table) {
  table["neg"] = unary(neg_grad);
  table["abs"] = unary(abs_grad);
  table["exp"] = unary(exp_grad);
  table["log"] = unary(log_grad);
  table["log1p"] = unary(log1p_grad);
  table["expm1"] = unary(expm1_grad);
  table["sqrt"] = unary(sqrt_grad);
  table["rsqrt"] = unary(rsqrt_grad);
  table["reciprocal"] = unary(reciprocal_grad);
  table["sin"] = unary(sin_grad);
  table["cos"] = unary(cos_grad);
  table["tanh"] = unary(tanh_grad);
  table["sigmoid"] = unary(sigmoid_grad);
  table["erf"] = unary(erf_grad);
  table["erfinv"] = unary(erfinv_grad);
  table["relu"] = unary(relu_grad);
  table["clone"] = unary(identity_grad);
  table["cast"] = unary(identity_grad);  // to_input casts back to the input's dtype
  table["clamp"] = clamp_vjp;
  table["add"] = [](VjpEmitter& emit) { return add_sub_vjp(emit, 1.0); };
  table["sub"] = [](VjpEmitter& emit) { return add_sub_vjp(emit, -1.0); };
  table["mul"] = mul_vjp;
  table["div"] = div_vjp;
  table["pow"] = pow_vjp;
  table["maximum"] = [](VjpEmitter& emit) { return pointwise_extremum_vjp(emit, "gt", "lt"); };
  table["minimum"] = [](VjpEmitter& emit) { return pointwise_extremum_vjp(emit, "lt", "gt"); };
  table["fmod"] = [](VjpEmitter& emit) { return remainder_vjp(emit, "trunc"); };
  table["remainder"] = [](VjpEmitter& emit) { return remainder_vjp(emit, "floor"); };
  table["where"] = where_vjp;
}

}  // namespace kiln::passes::derivatives

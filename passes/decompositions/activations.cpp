// Decompositions of the pointwise activations:
//   gelu (none)  x * 0.5 * (1 + erf(x / sqrt(2)))
//   gelu (tanh)  x * 0.5 * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 x^3)))
//   silu         x * sigmoid(x)
//   leaky_relu   where(x > 0, x, x * slope)
//   elu          where(x > 0, x, alpha * expm1(x))
//   hardsigmoid  clamp(x + 3, 0, 6) / 6
//   hardswish    x * clamp(x + 3, 0, 6) / 6
//   softplus     where(beta x > threshold, x, log1p(exp(beta x)) / beta): linear above the
//                threshold, where exp would overflow (PyTorch's formula)
// f16/bf16 work runs in f32.
#include "passes/decompositions/decomposition.h"

namespace kiln::passes::decompositions {
namespace {

using ir::Argument;
using ir::Node;
using ir::OpCall;

constexpr double kSqrtHalf = 0.70710678118654752440;     // 1 / sqrt(2)
constexpr double kSqrtTwoOverPi = 0.79788456080286535588;  // sqrt(2 / pi)
constexpr double kGeluTanhCoefficient = 0.044715;

std::vector<Node*> gelu(Emitter& emit, const OpCall& call) {
  Node* x = emit.compute_input(tensor_arg(call, 0));
  const std::string& approximate = call.string_arg(1);
  Node* half_x = emit.call("mul", {x, 0.5}, {}, "half_x");
  Node* inner = nullptr;
  if (approximate == "none") {
    Node* scaled = emit.call("mul", {x, kSqrtHalf}, {}, "scaled");
    inner = emit.call("erf", {scaled});
  } else if (approximate == "tanh") {
    Node* square = emit.call("mul", {x, x}, {}, "square");
    Node* cube = emit.call("mul", {square, x}, {}, "cube");
    Node* cubic_term = emit.call("mul", {cube, kGeluTanhCoefficient}, {}, "cubic_term");
    Node* polynomial = emit.call("add", {x, cubic_term}, {}, "polynomial");
    Node* scaled = emit.call("mul", {polynomial, kSqrtTwoOverPi}, {}, "scaled");
    inner = emit.call("tanh", {scaled});
  } else {
    emit.fail("approximate must be \"none\" or \"tanh\", got \"", approximate, "\"");
  }
  Node* one_plus = emit.call("add", {inner, 1.0}, {}, "one_plus");
  return {emit.finish(emit.call("mul", {half_x, one_plus}))};
}

std::vector<Node*> silu(Emitter& emit, const OpCall& call) {
  Node* x = emit.compute_input(tensor_arg(call, 0));
  Node* sigmoid = emit.call("sigmoid", {x});
  return {emit.finish(emit.call("mul", {x, sigmoid}))};
}

// where(x > 0, x, negative), the form of leaky_relu and elu.
Node* positive_or(Emitter& emit, Node* x, Node* negative) {
  Node* positive = emit.call("gt", {x, 0}, {}, "positive");
  return emit.call("where", {positive, x, negative});
}

std::vector<Node*> leaky_relu(Emitter& emit, const OpCall& call) {
  Node* x = emit.compute_input(tensor_arg(call, 0));
  Node* negative = emit.call("mul", {x, call.arg(1)}, {}, "negative");
  return {emit.finish(positive_or(emit, x, negative))};
}

std::vector<Node*> elu(Emitter& emit, const OpCall& call) {
  Node* x = emit.compute_input(tensor_arg(call, 0));
  Node* expm1 = emit.call("expm1", {x});
  Node* negative = emit.call("mul", {expm1, call.arg(1)}, {}, "negative");
  return {emit.finish(positive_or(emit, x, negative))};
}

// clamp(x + 3, 0, 6).
Node* relu6_shifted(Emitter& emit, Node* x) {
  Node* shifted = emit.call("add", {x, 3.0}, {}, "plus_three");
  return emit.call("clamp", {shifted, 0.0, 6.0}, {}, "clamped");
}

std::vector<Node*> hardsigmoid(Emitter& emit, const OpCall& call) {
  Node* x = emit.compute_input(tensor_arg(call, 0));
  return {emit.finish(emit.call("div", {relu6_shifted(emit, x), 6.0}))};
}

std::vector<Node*> hardswish(Emitter& emit, const OpCall& call) {
  Node* x = emit.compute_input(tensor_arg(call, 0));
  Node* gated = emit.call("mul", {x, relu6_shifted(emit, x)}, {}, "gated");
  return {emit.finish(emit.call("div", {gated, 6.0}))};
}

std::vector<Node*> softplus(Emitter& emit, const OpCall& call) {
  Node* x = emit.compute_input(tensor_arg(call, 0));
  const Argument& beta = call.arg(1);
  const Argument& threshold = call.arg(2);
  bool unit_beta = beta.floating() == 1.0;
  Node* scaled = unit_beta ? x : emit.call("mul", {x, beta}, {}, "scaled");
  Node* exp = emit.call("exp", {scaled});
  Node* soft = emit.call("log1p", {exp}, {}, "soft");
  if (!unit_beta) soft = emit.call("div", {soft, beta}, {}, "soft_scaled");
  Node* linear = emit.call("gt", {scaled, threshold}, {}, "linear");
  return {emit.finish(emit.call("where", {linear, x, soft}))};
}

}  // namespace

void register_activation_decompositions(DecompositionTable& table) {
  table["gelu"] = gelu;
  table["silu"] = silu;
  table["leaky_relu"] = leaky_relu;
  table["elu"] = elu;
  table["hardsigmoid"] = hardsigmoid;
  table["hardswish"] = hardswish;
  table["softplus"] = softplus;
}

}  // namespace kiln::passes::decompositions

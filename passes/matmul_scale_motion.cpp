// Moving a constant factor of a matrix product's operands to the product: see
// passes/matmul_scale_motion.h.
#include "passes/matmul_scale_motion.h"

#include <optional>
#include <string>
#include <string_view>

#include "passes/graph_queries.h"

namespace kiln::passes {

namespace {

using ir::Argument;
using ir::Node;

bool is_product(std::string_view target) { return target == "matmul" || target == "bmm"; }

// A node that does more with its input than compute elementwise or reduce: the factor would be a
// pass of its own there.
bool takes_factor_apart(const Node& user) {
  if (user.op() != ir::OpKind::call_function) return true;
  const std::string& target = user.target();
  return is_product(target) || target == "addmm" || target == "linear" || target == "convolution";
}

// An operand written x * a or a * x, a a number, x of the product's dtype and of its own shape,
// and used by the product alone.
struct ScaledOperand {
  Node* x = nullptr;
  double factor = 1.0;
  Node* mul = nullptr;
};

std::optional<ScaledOperand> scaled_operand(const Argument& operand, DType dtype) {
  if (!operand.is_node()) return std::nullopt;
  Node* mul = operand.node();
  if (mul->op() != ir::OpKind::call_function || mul->target() != "mul" || mul->args().size() != 2 ||
      !mul->kwargs().empty() || mul->users().size() != 1 || !mul->has_single_value() || is_copy_back_output(*mul) ||
      mul->value().dtype != dtype)
    return std::nullopt;
  for (int first = 0; first < 2; ++first) {
    const Argument& x = mul->args()[size_t(first)];
    const Argument& factor = mul->args()[size_t(1 - first)];
    if (!x.is_node() || !(factor.is_float() || factor.is_int())) continue;
    const Node* value = x.node();
    if (!value->has_single_value() || value->value().dtype != dtype || value->value().shape != mul->value().shape)
      continue;
    return ScaledOperand{x.node(), factor.floating(), mul};
  }
  return std::nullopt;
}

// The scaled product replacing `product`, or nullptr where nothing moves.
Node* move_scales(ir::Graph& graph, Node& product) {
  if (product.op() != ir::OpKind::call_function || !is_product(product.target()) || product.args().size() != 2 ||
      !product.kwargs().empty() || !product.has_single_value() || is_copy_back_output(product))
    return nullptr;
  const DType dtype = product.value().dtype;
  if (dtype != DType::f32 && dtype != DType::f64) return nullptr;
  std::optional<ScaledOperand> left = scaled_operand(product.args()[0], dtype);
  std::optional<ScaledOperand> right = scaled_operand(product.args()[1], dtype);
  if (!left && !right) return nullptr;
  if (left && right && left->mul == right->mul) return nullptr;  // x * a squared: one mul, two uses
  bool fusable_users = true;
  for (const Node* user : product.users()) fusable_users &= !takes_factor_apart(*user);
  if (!fusable_users) {
    std::optional<int64_t> out = product.value().numel().maybe_constant();
    int64_t scaled = 0;
    for (const std::optional<ScaledOperand>& side : {left, right}) {
      if (!side) continue;
      std::optional<int64_t> n = side->mul->value().numel().maybe_constant();
      if (!n) return nullptr;
      scaled += *n;
    }
    if (!out || *out > scaled) return nullptr;
  }
  auto guard = graph.inserting_before(&product);
  Node* plain = graph.create_call(product.target(),
                                  {Argument(left ? left->x : product.args()[0].node()),
                                   Argument(right ? right->x : product.args()[1].node())},
                                  {}, product.name() + "_unscaled");
  plain->source = product.source;
  const double factor = (left ? left->factor : 1.0) * (right ? right->factor : 1.0);
  Node* scaled = graph.create_call("mul", {plain, Argument(factor)});
  scaled->source = (left ? left->mul : right->mul)->source;
  return scaled;
}

}  // namespace

bool move_scales_to_matmul_products(ir::Graph& graph) {
  bool changed = false;
  for (Node* product : graph.node_list()) {
    Node* operands[2] = {product->args().size() == 2 && product->args()[0].is_node() ? product->args()[0].node() : nullptr,
                         product->args().size() == 2 && product->args()[1].is_node() ? product->args()[1].node() : nullptr};
    Node* scaled = move_scales(graph, *product);
    if (!scaled) continue;
    const std::string name = product->name();
    product->replace_all_uses_with(scaled);
    graph.erase(product);
    graph.rename(scaled, name);  // the product's value, under its name (dumps, kernel names)
    for (Node* operand : operands)
      if (operand && operand->users().empty()) graph.erase(operand);
    changed = true;
  }
  return changed;
}

}  // namespace kiln::passes

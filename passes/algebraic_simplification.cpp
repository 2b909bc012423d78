// Algebraic simplification: the rule table and its fixed-point driver.
#include "passes/algebraic_simplification.h"

#include <functional>
#include <numeric>

#include "passes/graph_queries.h"

namespace kiln::passes {

namespace {

using ir::Argument;
using ir::Node;

// A rule looks at one node and returns the node that should replace it, or nullptr.
// A rule may create new nodes (inserted before the matched node).
struct Rule {
  const char* name;
  std::function<Node*(Node&)> rewrite;
};

bool is_scalar(const Argument& argument, double value) {
  return argument.is_number() && argument.floating() == value;
}

// The argument named `key`, whether passed positionally at `index` or as a keyword.
const Argument* find_arg(const Node& node, size_t index, const char* key) {
  if (index < node.args().size()) return &node.args()[index];
  return node.kwarg(key);
}

bool alpha_is_one(const Node& node) {
  const Argument* alpha = node.kwarg("alpha");
  return alpha == nullptr || is_scalar(*alpha, 1.0);
}

Node* operand(const Node& node, size_t index) {
  const Argument* argument = index < node.args().size() ? &node.args()[index] : nullptr;
  return argument && argument->is_node() ? argument->node() : nullptr;
}

bool is_call(const Node* node, const char* target) {
  return node && node->op() == ir::OpKind::call_function && node->target() == target;
}

std::vector<int64_t> wrapped_dims(const std::vector<int64_t>& dims, int64_t rank) {
  std::vector<int64_t> result;
  for (int64_t dim : dims) result.push_back(dim < 0 ? dim + rank : dim);
  return result;
}

Node* identity_operand(Node& node) {
  const std::string& target = node.target();
  Node* first = operand(node, 0);
  Node* second = operand(node, 1);
  const Argument* other = find_arg(node, 1, "other");
  if (target == "mul") {
    if (first && other && is_scalar(*other, 1.0)) return first;
    if (second && node.args().size() > 0 && is_scalar(node.args()[0], 1.0)) return second;
  }
  if (target == "div" && first && other && is_scalar(*other, 1.0) && !node.kwarg("rounding_mode")) return first;
  if ((target == "add" || target == "sub") && alpha_is_one(node)) {
    if (first && other && is_scalar(*other, 0.0)) return first;
    if (target == "add" && second && node.args().size() > 0 && is_scalar(node.args()[0], 0.0)) return second;
  }
  if (target == "neg" && is_call(first, "neg")) return operand(*first, 0);
  if (target == "cast" && first) {
    const Argument* dtype = find_arg(node, 1, "dtype");
    if (dtype && dtype->is_dtype() && dtype->dtype() == first->value().dtype) return first;
  }
  if ((target == "reshape" || target == "view" || target == "expand") && first &&
      first->value().shape == node.value().shape)
    return first;
  if (target == "transpose" && is_call(first, "transpose") && node.args().size() == 3 && first->args().size() == 3) {
    int64_t rank = node.value().rank();
    auto outer = wrapped_dims({node.args()[1].integer(), node.args()[2].integer()}, rank);
    auto inner = wrapped_dims({first->args()[1].integer(), first->args()[2].integer()}, rank);
    bool same_pair = (outer[0] == inner[0] && outer[1] == inner[1]) || (outer[0] == inner[1] && outer[1] == inner[0]);
    if (same_pair) return operand(*first, 0);
  }
  if (target == "squeeze" && is_call(first, "unsqueeze") && node.args().size() == 2 && node.args()[1].is_list() &&
      node.args()[1].list().size() == 1 && first->args().size() == 2) {
    int64_t rank = first->value().rank();
    int64_t squeezed = wrapped_dims(node.args()[1].int_list(), rank)[0];
    int64_t inserted = wrapped_dims({first->args()[1].integer()}, rank)[0];
    if (squeezed == inserted) return operand(*first, 0);
  }
  return nullptr;
}

// permute(permute(x, p), q) -> permute(x, p[q]) or x.
Node* merge_permutes(Node& node) {
  Node* inner = operand(node, 0);
  if (node.target() != "permute" || !is_call(inner, "permute") || node.args().size() != 2 || inner->args().size() != 2)
    return nullptr;
  int64_t rank = node.value().rank();
  std::vector<int64_t> p = wrapped_dims(inner->args()[1].int_list(), rank);
  std::vector<int64_t> q = wrapped_dims(node.args()[1].int_list(), rank);
  std::vector<int64_t> composed;
  for (int64_t index : q) composed.push_back(p[size_t(index)]);
  std::vector<int64_t> identity(composed.size());
  std::iota(identity.begin(), identity.end(), 0);
  Node* source = operand(*inner, 0);
  if (composed == identity) return source;
  auto guard = node.graph().inserting_before(&node);
  Node* merged = node.graph().create_call("permute", {source, Argument::ints(composed)});
  merged->source = node.source;
  return merged;
}

// reshape(reshape(x, a), b) -> reshape(x, b); the same for view of view.
Node* merge_reshapes(Node& node) {
  Node* inner = operand(node, 0);
  bool outer_is_reshape = node.target() == "reshape" || node.target() == "view";
  if (!outer_is_reshape || !(is_call(inner, "reshape") || is_call(inner, "view")) || node.args().size() != 2)
    return nullptr;
  // view(reshape(x)) must stay a reshape: the inner reshape may have copied.
  std::string target = node.target() == "view" && inner->target() == "view" ? "view" : "reshape";
  auto guard = node.graph().inserting_before(&node);
  Node* merged = node.graph().create_call(target, {operand(*inner, 0), node.args()[1]});
  merged->source = node.source;
  return merged;
}

// Whether `node` is a relu or a clamp (whose bounds are numbers or None, by its schema):
// functions that never swap the order of two values and keep a NaN a NaN, so that they commute
// with a maximum.
bool is_monotone_clamp(const Node* node) { return is_call(node, "relu") || is_call(node, "clamp"); }

// max_pool(relu(x)) -> relu(max_pool(x)), and the same for a clamp: the
// maximum of clamped values is the clamped maximum (a NaN in the window gives NaN either way), so
// the clamp runs on the pooled output (a quarter of the values for a 2x2-strided pool) instead of
// on every tap of every window. Without dilation every window holds at least one input value
// (max_pool's padding is at most half its kernel, and a window starts before the input's end),
// so no window is left at the pool's -inf, which the clamp would change. Only where the clamp has
// no other user. ResNet's stem (convolution, relu, 3x3 max pool of stride 2): the pool's kernel
// 3x fewer instructions (bench/README.md).
Node* pool_before_clamp(Node& node) {
  Node* clamp = operand(node, 0);
  if ((node.target() != "max_pool" && node.target() != "adaptive_max_pool") || !is_monotone_clamp(clamp) ||
      clamp->users().size() != 1)
    return nullptr;
  if (node.target() == "max_pool") {
    const Argument* dilation = find_arg(node, 4, "dilation");
    if (dilation && !dilation->is_none()) {
      if (!dilation->is_list()) return nullptr;
      for (int64_t d : dilation->int_list())
        if (d != 1) return nullptr;
    }
  }
  auto guard = node.graph().inserting_before(&node);
  std::vector<Argument> pool_args = node.args();
  pool_args[0] = Argument(operand(*clamp, 0));
  Node* pooled = node.graph().create_call(node.target(), std::move(pool_args), node.kwargs());
  pooled->source = node.source;
  std::vector<Argument> clamp_args = clamp->args();
  clamp_args[0] = Argument(pooled);
  Node* clamped = node.graph().create_call(clamp->target(), std::move(clamp_args), clamp->kwargs());
  clamped->source = clamp->source;
  return clamped;
}

const Rule kRules[] = {
    {"identity", identity_operand},
    {"permute_of_permute", merge_permutes},
    {"reshape_of_reshape", merge_reshapes},
    {"pool_before_clamp", pool_before_clamp},
};

bool same_type(const Node& a, const Node& b) {
  return a.has_single_value() && b.has_single_value() && a.value().dtype == b.value().dtype &&
         a.value().shape == b.value().shape;
}

}  // namespace

bool simplify_algebra(ir::Graph& graph) {
  if (!is_functional(graph)) return false;
  bool changed_any = false;
  bool changed = true;
  while (changed) {
    changed = false;
    for (Node* node : graph.node_list()) {
      if (node->op() != ir::OpKind::call_function || !node->has_single_value()) continue;
      if (is_copy_back_output(*node)) continue;
      for (const Rule& rule : kRules) {
        Node* replacement = rule.rewrite(*node);
        if (!replacement) continue;
        if (!same_type(*replacement, *node)) {
          if (replacement->users().empty() && replacement->op() == ir::OpKind::call_function) graph.erase(replacement);
          continue;
        }
        node->replace_all_uses_with(replacement);
        graph.erase(node);
        changed = changed_any = true;
        break;
      }
    }
  }
  return changed_any;
}

}  // namespace kiln::passes

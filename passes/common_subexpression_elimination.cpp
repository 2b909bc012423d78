// Common subexpression elimination by hashing each node's (op, target, args, kwargs) text.
#include "passes/common_subexpression_elimination.h"

#include <unordered_map>

#include "passes/graph_queries.h"

namespace kiln::passes {

namespace {
// A key that is equal for two nodes exactly when they compute the same value: the node
// references print as their (unique) names, every other argument as its exact text.
std::string expression_key(const ir::Node& node) {
  std::string key = std::string(ir::op_kind_name(node.op())) + ":" + node.target() + "(";
  for (const ir::Argument& argument : node.args()) key += argument.to_string() + ",";
  key += "|";
  for (const auto& [name, argument] : node.kwargs()) key += name + "=" + argument.to_string() + ",";
  return key + ")";
}
}  // namespace

bool eliminate_common_subexpressions(ir::Graph& graph) {
  if (!is_functional(graph)) return false;
  bool changed = false;
  std::unordered_map<std::string, ir::Node*> seen;
  for (ir::Node* node : graph.node_list()) {
    if (node->op() != ir::OpKind::call_function && node->op() != ir::OpKind::get_attr) continue;
    auto [found, inserted] = seen.emplace(expression_key(*node), node);
    if (inserted) continue;
    ir::Node* earlier = found->second;
    if (is_copy_back_output(*node)) continue;
    if (!(earlier->meta.type_string() == node->meta.type_string())) continue;
    node->replace_all_uses_with(earlier);
    graph.erase(node);
    changed = true;
  }
  return changed;
}

}  // namespace kiln::passes

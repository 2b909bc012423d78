// Dead code elimination: a reverse sweep that erases unused, non-mutating nodes.
#include "passes/dead_code_elimination.h"

#include "passes/graph_queries.h"

namespace kiln::passes {

namespace {
bool removable(const ir::Node& node) {
  if (!node.users().empty()) return false;
  if (node.op() == ir::OpKind::get_attr) return true;
  return node.op() == ir::OpKind::call_function && !node_mutates(node);
}
}  // namespace

bool eliminate_dead_code(ir::Graph& graph) {
  bool changed = false;
  // In reverse order, so that removing a node frees its inputs within the same sweep.
  std::vector<ir::Node*> nodes = graph.node_list();
  for (auto it = nodes.rbegin(); it != nodes.rend(); ++it) {
    if (!removable(**it)) continue;
    graph.erase(*it);
    changed = true;
  }
  return changed;
}

}  // namespace kiln::passes

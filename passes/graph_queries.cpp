// Facts about nodes and graphs shared by passes.
#include "passes/graph_queries.h"

#include <algorithm>

namespace kiln::passes {

bool op_mutates(const ir::OpInfo& op) {
  return std::any_of(op.schema.params.begin(), op.schema.params.end(),
                     [](const ir::Param& param) { return param.mutated; });
}

bool node_mutates(const ir::Node& node) {
  if (node.op() != ir::OpKind::call_function) return false;
  const ir::OpInfo* op = ir::OpRegistry::global().find(node.target());
  return op != nullptr && op_mutates(*op);
}

bool is_functional(const ir::Graph& graph) {
  for (ir::Node* node : graph.nodes())
    if (node_mutates(*node)) return false;
  return true;
}

bool is_copy_back_output(const ir::Node& node) {
  ir::Node* output = node.graph().output_node();
  if (!output || std::find(node.users().begin(), node.users().end(), output) == node.users().end()) return false;
  const ir::GraphSignature& signature = node.graph().signature();
  for (size_t i = 0; i < output->args().size(); ++i) {
    const ir::Argument& value = output->args()[i];
    if (value.is_node() && value.node() == &node && signature.output(i).is_mutation()) return true;
  }
  return false;
}

}  // namespace kiln::passes

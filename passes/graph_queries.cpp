// Facts about nodes and graphs shared by passes.
#include "passes/graph_queries.h"

#include <algorithm>

#include "passes/functionalize.h"

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
  for (const CopyBack& copy_back : copy_back_outputs(node.graph()))
    if (output->args().at(copy_back.output_index).node() == &node) return true;
  return false;
}

}  // namespace kiln::passes

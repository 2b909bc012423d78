// Graph::create_call: the one Graph member that needs the op registry (binding a call's
// arguments to the op's schema and inferring its meta). It lives apart from ir/graph.cpp so
// that the graph does not depend on ir/op_registry.h, which depends on the graph.
#include "ir/graph.h"
#include "ir/op_registry.h"

namespace kiln::ir {

Node* Graph::create_call(const std::string& target, std::vector<Argument> args, Kwargs kwargs,
                         const std::string& name) {
  const OpInfo& op = OpRegistry::global().get(target);
  Node* node = create_node(OpKind::call_function, op.name(), std::move(args), std::move(kwargs), name, {});
  try {
    node->meta = infer_meta(*node);
  } catch (...) {
    erase(node);  // a node just made has no users
    throw;
  }
  return node;
}

}  // namespace kiln::ir

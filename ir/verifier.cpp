// Graph invariants: structure (membership, order, use lists, output), then per-kind semantics,
// then the graph signature.
#include "ir/verifier.h"

#include <algorithm>
#include <set>

#include "ir/op_registry.h"
#include "ir/printer.h"
#include "ir/signature_specs.h"

namespace kiln::ir {

namespace {

template <typename... Parts>
[[noreturn]] void violation(const Node& node, const Parts&... parts) {
  throw VerifyError(kiln::detail::concat("verify: ", describe(node), ": ", parts...));
}

// Every node reference in an argument, with repeats.
void collect_references(const Argument& argument, std::vector<const Node*>& out) {
  if (argument.is_node()) out.push_back(argument.node());
  if (argument.is_list())
    for (const Argument& item : argument.list()) collect_references(item, out);
}

std::vector<const Node*> references_of(const Node& node) {
  std::vector<const Node*> references;
  for (const Argument& argument : node.args()) collect_references(argument, references);
  for (const auto& [key, argument] : node.kwargs()) collect_references(argument, references);
  return references;
}

// Compares what a value is (dtype, shape, device, arity), not its strides: layout passes may
// legitimately choose strides the shape rule would not.
std::string type_text(const NodeMeta& meta) { return format_node_type(meta); }

void check_meta_shape(const Node& node) {
  if (node.op() == OpKind::output) return;
  if (node.meta.values.empty()) violation(node, "has no meta");
  if (!node.meta.is_tuple && node.meta.values.size() != 1)
    violation(node, "has ", node.meta.values.size(), " values but is not a tuple");
  for (const TensorMeta& value : node.meta.values)
    if (value.strides.size() != value.shape.size())
      violation(node, "meta ", format_tensor_type(value), " has ", value.strides.size(), " strides for rank ",
                value.shape.size());
}

void check_get_attr(const Graph& graph, const Node& node) {
  const Tensor* parameter = graph.parameter(node.target());
  if (!parameter) violation(node, "get_attr target '", node.target(), "' is not a parameter of the graph");
  TensorMeta expected = TensorMeta::contiguous(
      parameter->dtype(), SymShape(parameter->sizes().begin(), parameter->sizes().end()), parameter->device());
  if (node.meta.is_tuple || format_tensor_type(node.meta.values[0]) != format_tensor_type(expected))
    violation(node, "meta says ", type_text(node.meta), " but parameter '", node.target(), "' is ",
              format_tensor_type(expected));
}

void check_call(const Node& node) {
  const OpInfo* op = OpRegistry::global().find(node.target());
  if (!op) violation(node, "target '", node.target(), "' is not a registered op");
  try {
    bind_arguments(op->schema, node.args(), node.kwargs());
  } catch (const Error& error) {
    violation(node, "arguments do not bind to ", op->schema.text, ": ", error.what());
  }
  NodeMeta inferred;
  try {
    inferred = infer_meta(node);
  } catch (const Error& error) {
    // The rule's message already names the node ("node %mm (matmul): ..."); say it once.
    std::string message = error.what();
    std::string prefix = describe(node) + ": ";
    if (message.rfind(prefix, 0) == 0) message.erase(0, prefix.size());
    violation(node, "the shape rule rejects it: ", message);
  }
  if (type_text(inferred) != type_text(node.meta))
    violation(node, "meta says ", type_text(node.meta), " but the op infers ", type_text(inferred));
}

void check_tuple_uses(const Node& node) {
  if (!node.meta.is_tuple) return;
  for (const Node* user : node.users()) {
    bool through_getitem = user->op() == OpKind::call_function && user->target() == "getitem" &&
                           !user->args().empty() && user->args()[0].is_node() && user->args()[0].node() == &node;
    std::vector<const Node*> references = references_of(*user);
    if (!through_getitem || std::count(references.begin(), references.end(), &node) != 1)
      violation(node, "is a tuple but ", describe(*user), " uses it other than as getitem's first argument");
  }
}

// Whether a returned value is a node, None, or a list of those.
bool returns_only_nodes(const Argument& value) {
  if (value.is_list()) {
    for (const Argument& item : value.list())
      if (!returns_only_nodes(item)) return false;
    return true;
  }
  return value.is_node() || value.is_none();
}

}  // namespace

void verify(const Graph& graph) {
  std::set<const Node*> members;
  std::string outputs;
  size_t output_count = 0;
  for (Node* node : graph.nodes()) {
    members.insert(node);
    if (node->op() != OpKind::output) continue;
    outputs += (output_count++ ? ", %" : "%") + node->name();
  }
  if (output_count == 0) throw VerifyError("verify: the graph has no output node");
  if (output_count > 1)
    throw VerifyError(kiln::detail::concat("verify: the graph has ", output_count, " output nodes (", outputs, ")"));

  std::set<const Node*> defined;
  std::set<std::string> names;
  for (Node* node : graph.nodes()) {
    if (&node->graph() != &graph) violation(*node, "belongs to another graph");
    if (!names.insert(node->name()).second) violation(*node, "has a duplicate name");
    if (graph.find(node->name()) != node) violation(*node, "is not what the graph finds by its name");

    for (const Node* input : references_of(*node)) {
      if (!members.count(input)) violation(*node, "uses a node that is not in this graph");
      if (!defined.count(input))
        violation(*node, "uses %", input->name(), " before it is defined (nodes must be in topological order)");
      if (input->op() == OpKind::output) violation(*node, "uses the output node");
      const std::vector<Node*>& users = input->users();
      if (std::find(users.begin(), users.end(), node) == users.end())
        violation(*node, "uses %", input->name(), " but is not among its users");
    }
    std::set<const Node*> distinct_users;
    for (const Node* user : node->users()) {
      if (!distinct_users.insert(user).second) violation(*node, "lists ", describe(*user), " twice as a user");
      if (!members.count(user)) violation(*node, "lists a user that is not in this graph");
      std::vector<const Node*> references = references_of(*user);
      if (std::find(references.begin(), references.end(), node) == references.end())
        violation(*node, "lists ", describe(*user), " as a user, but that node does not use it");
    }

    check_meta_shape(*node);
    switch (node->op()) {
      case OpKind::placeholder:
      case OpKind::get_attr:
        if (!node->args().empty() || !node->kwargs().empty()) violation(*node, "takes no arguments");
        if (node->meta.is_tuple) violation(*node, "cannot produce a tuple");
        if (node->op() == OpKind::get_attr) check_get_attr(graph, *node);
        break;
      case OpKind::call_function: check_call(*node); break;
      case OpKind::output:
        if (node->next()) violation(*node, "is not the last node: ", describe(*node->next()), " follows it");
        for (const Argument& value : node->args())
          if (!returns_only_nodes(value)) violation(*node, "returns ", value.to_string(), ", which is not a node, None or a list of them");
        break;
    }
    check_tuple_uses(*node);
    defined.insert(node);
  }
  std::string problem = signature_problem(graph);
  if (!problem.empty()) throw VerifyError("verify: graph signature: " + problem);
}

}  // namespace kiln::ir

// Copying graphs into one merged graph, node by node, with prefixed names.
#include "tests/pt2_conformance/graph_merge.h"

#include <functional>
#include <map>

namespace kiln::pt2_conformance {

bool mergeable(const ir::Graph& graph) {
  for (ir::Node* node : graph.nodes())
    for (const ir::TensorMeta& value : node->meta.values)
      if (!value.is_static()) return false;
  return true;
}

std::vector<ir::Node*> copy_into(ir::Graph& merged, const ir::Graph& part, const std::string& prefix) {
  std::map<const ir::Node*, ir::Node*> mapping;
  std::function<ir::Argument(const ir::Argument&)> remap = [&](const ir::Argument& argument) -> ir::Argument {
    if (argument.is_node()) return ir::Argument(mapping.at(argument.node()));
    if (argument.is_list()) {
      std::vector<ir::Argument> items;
      for (const ir::Argument& item : argument.list()) items.push_back(remap(item));
      return ir::Argument(std::move(items));
    }
    return argument;
  };
  for (const auto& [name, tensor] : part.parameters()) merged.set_parameter(prefix + name, tensor);
  std::vector<ir::Node*> outputs;
  for (ir::Node* node : part.nodes()) {
    if (node->op() == ir::OpKind::output) {
      for (const ir::Argument& value : node->args()) outputs.push_back(mapping.at(value.node()));
      continue;
    }
    std::vector<ir::Argument> args;
    for (const ir::Argument& argument : node->args()) args.push_back(remap(argument));
    ir::Kwargs kwargs;
    for (const auto& [key, argument] : node->kwargs()) kwargs.emplace_back(key, remap(argument));
    std::string target = node->op() == ir::OpKind::call_function ? node->target() : prefix + node->target();
    ir::Node* made = merged.create_node(node->op(), target, std::move(args), std::move(kwargs), prefix + node->name(), node->meta);
    made->source = node->source;
    mapping[node] = made;
  }
  return outputs;
}

}  // namespace kiln::pt2_conformance

// Graphviz output: node boxes and data-flow edges.
#include "ir/dot_format.h"

#include <map>

#include "ir/printer.h"

namespace kiln::ir {

namespace {

// Escapes text for a double-quoted Graphviz string; "\n" in labels is a line break.
std::string escape(const std::string& text) {
  std::string out;
  for (char c : text) {
    if (c == '"' || c == '\\') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out;
}

std::string style_of(OpKind kind) {
  switch (kind) {
    case OpKind::placeholder: return "shape=box, style=\"rounded,filled\", fillcolor=\"#cfe2ff\"";
    case OpKind::get_attr: return "shape=box, style=\"rounded,filled\", fillcolor=\"#e9ecef\"";
    case OpKind::output: return "shape=box, style=\"bold,filled\", fillcolor=\"#d1e7dd\"";
    case OpKind::call_function: return "shape=box";
  }
  return "shape=box";
}

std::string label_of(const Node& node, const DotOptions& options) {
  std::string label;
  if (node.op() == OpKind::output) {
    label = "output";
  } else {
    label = "%" + node.name() + "\n";
    label += node.op() == OpKind::call_function ? node.target()
                                                : std::string(op_kind_name(node.op())) + " " + node.target();
    std::string type = format_node_type(node.meta);
    if (!type.empty()) label += "\n" + type;
  }
  if (options.show_source && !node.source.empty()) label += "\n" + node.source.to_string();
  return label;
}

}  // namespace

std::string graph_to_dot(const Graph& graph, const DotOptions& options) {
  std::string text = "digraph \"" + escape(options.graph_name) + "\" {\n";
  text += "  rankdir=TB;\n";
  text += "  node [fontname=\"monospace\", fontsize=10];\n";
  text += "  edge [fontname=\"monospace\", fontsize=9];\n";
  // Graphviz ids are n0, n1, ... so that no node name needs quoting as an id.
  std::map<const Node*, std::string> ids;
  for (Node* node : graph.nodes()) {
    std::string id = "n" + std::to_string(ids.size());
    ids[node] = id;
    text += "  " + id + " [label=\"" + escape(label_of(*node, options)) + "\", " + style_of(node->op()) + "];\n";
  }
  for (Node* node : graph.nodes()) {
    std::vector<Node*> inputs = node->input_nodes();
    for (size_t i = 0; i < inputs.size(); ++i) {
      auto found = ids.find(inputs[i]);
      if (found == ids.end()) continue;  // a dangling input: the verifier reports those
      text += "  " + found->second + " -> " + ids[node];
      if (inputs.size() > 1) text += " [label=\"" + std::to_string(i) + "\"]";
      text += ";\n";
    }
  }
  return text + "}\n";
}

}  // namespace kiln::ir

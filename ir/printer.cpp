// The FX-style text printer: one line per node, `return (...)` last.
#include "ir/printer.h"

#include <cstdio>

#include "ir/signature_specs.h"

namespace kiln::ir {

namespace {

// A target prints bare when the parser can read it back as one word.
bool is_plain_target(const std::string& target) {
  if (target.empty()) return false;
  for (char c : target) {
    bool plain = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
                 c == '.' || c == ':' || c == '/' || c == '-';
    if (!plain) return false;
  }
  return true;
}

std::string format_target(const std::string& target) {
  return is_plain_target(target) ? target : quote_string(target);
}

std::string format_sym_list(const SymShape& values) {
  std::string text;
  for (size_t i = 0; i < values.size(); ++i) {
    if (i) text += ", ";
    text += values[i].to_string();
  }
  return text;
}

std::string format_node(const Node& node, const PrintOptions& options) {
  std::string line = "    %" + node.name() + " : ";
  bool with_strides = options.show_strides || node.op() == OpKind::placeholder;
  std::string type = format_node_type(node.meta, with_strides);
  if (!type.empty()) line += type + " ";
  line += "[num_users=" + std::to_string(node.users().size()) + "] = ";
  line += std::string(op_kind_name(node.op())) + "[target=";
  line += format_target(node.target());
  line += "]";
  if (node.op() == OpKind::call_function) {
    line += "(args = (";
    for (size_t i = 0; i < node.args().size(); ++i) {
      if (i) line += ", ";
      line += format_argument(node.args()[i]);
    }
    if (node.args().size() == 1) line += ",";
    line += "), kwargs = {";
    for (size_t i = 0; i < node.kwargs().size(); ++i) {
      if (i) line += ", ";
      line += node.kwargs()[i].first + ": " + format_argument(node.kwargs()[i].second);
    }
    line += "})";
  }
  return line;
}

std::string format_return(const Node& output) {
  std::string line = "    return (";
  for (size_t i = 0; i < output.args().size(); ++i) {
    if (i) line += ", ";
    line += format_argument(output.args()[i], /*bare_nodes=*/true);
  }
  if (output.args().size() == 1) line += ",";
  return line + ")";
}

// The "Graph signature:" block, each spec as torch.export prints it: "name: KIND [target=T]".
std::string format_signature(const Graph& graph) {
  std::string text = "Graph signature:\n    # inputs\n";
  for (const InputSpec& spec : input_specs(graph)) {
    text += "    " + spec.name() + ": " + std::string(input_kind_name(spec.kind));
    if (!spec.target.empty()) text += " target=" + format_target(spec.target);
    text += "\n";
  }
  text += "\n    # outputs\n";
  for (const ReturnedSpec& returned : output_specs(graph)) {
    text += "    " + spec_name(returned.value) + ": " + std::string(output_kind_name(returned.spec.kind));
    if (!returned.spec.target.empty()) text += " target=" + format_target(returned.spec.target);
    text += "\n";
  }
  return text;
}

// "Range constraints: {s77: VR[1, 1024]}", as torch.export prints its range constraints.
std::string format_ranges(const Graph& graph) {
  std::string text = "Range constraints: {";
  bool first = true;
  for (const auto& [symbol, range] : graph.signature().symbol_ranges()) {
    text += (first ? "" : ", ") + symbol + ": VR" + range.to_string();
    first = false;
  }
  return text + "}\n";
}

}  // namespace

std::string quote_string(const std::string& text) {
  std::string out = "\"";
  for (char c : text) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      case '\r': out += "\\r"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) {
          char escape[8];
          std::snprintf(escape, sizeof escape, "\\x%02x", static_cast<unsigned char>(c));
          out += escape;
        } else {
          out += c;
        }
    }
  }
  return out + "\"";
}

std::string format_argument(const Argument& argument, bool bare_nodes) {
  switch (argument.kind()) {
    case Argument::Kind::node: {
      // A bare name that reads as a keyword keeps its '%' so that it parses back as a node.
      const std::string& name = argument.node()->name();
      bool keyword = name == "None" || name == "True" || name == "False";
      return (bare_nodes && !keyword ? "" : "%") + name;
    }
    case Argument::Kind::string: return quote_string(argument.string());
    case Argument::Kind::list: {
      std::string text = "[";
      const std::vector<Argument>& items = argument.list();
      for (size_t i = 0; i < items.size(); ++i) {
        if (i) text += ", ";
        text += format_argument(items[i], bare_nodes);
      }
      return text + "]";
    }
    default: return argument.to_string();
  }
}

std::string format_tensor_type(const TensorMeta& meta, bool with_strides) {
  std::string text = std::string(dtype_name(meta.dtype)) + "[" + format_sym_list(meta.shape) + "]";
  if (with_strides && meta.strides.size() == meta.shape.size() && !meta.is_contiguous())
    text += "{" + format_sym_list(meta.strides) + "}";
  if (!meta.device.is_cpu()) text += "@" + meta.device.to_string();
  return text;
}

std::string format_node_type(const NodeMeta& meta, bool with_strides) {
  if (!meta.is_tuple) return meta.values.empty() ? std::string() : format_tensor_type(meta.values[0], with_strides);
  std::string text = "(";
  for (size_t i = 0; i < meta.values.size(); ++i) {
    if (i) text += ", ";
    text += format_tensor_type(meta.values[i], with_strides);
  }
  if (meta.values.size() == 1) text += ",";
  return text + ")";
}

std::string print_graph(const Graph& graph, const PrintOptions& options) {
  std::string text = "graph():\n";
  for (Node* node : graph.nodes()) {
    std::string line = node->op() == OpKind::output ? format_return(*node) : format_node(*node, options);
    if (options.show_source && !node->source.empty()) line += "  # " + node->source.to_string();
    text += line + "\n";
  }
  if (!signature_is_default(graph)) text += "\n" + format_signature(graph);
  if (!graph.signature().symbol_ranges().empty()) text += "\n" + format_ranges(graph);
  return text;
}

}  // namespace kiln::ir

// A graph as text, JSON or dot. See compiler/graph_formats.h.
#include "compiler/graph_formats.h"

#include "ir/dot_format.h"
#include "ir/json_format.h"
#include "ir/printer.h"
#include "kiln/error.h"

namespace kiln::compiler {

GraphFormat parse_graph_format(std::string_view name) {
  if (name == "text") return GraphFormat::text;
  if (name == "json") return GraphFormat::json;
  if (name == "dot") return GraphFormat::dot;
  fail("unknown graph format '", name, "' (known: text, json, dot)");
}

const char* graph_format_extension(GraphFormat format) {
  switch (format) {
    case GraphFormat::text: return ".kiln";
    case GraphFormat::json: return ".json";
    case GraphFormat::dot: return ".dot";
  }
  return ".kiln";
}

std::string render_graph(const ir::Graph& graph, GraphFormat format, bool show_source) {
  switch (format) {
    case GraphFormat::json: return ir::graph_to_json(graph).dump(2) + "\n";
    case GraphFormat::dot: return ir::graph_to_dot(graph);
    case GraphFormat::text: break;
  }
  ir::PrintOptions print_options;
  print_options.show_source = show_source;
  return ir::print_graph(graph, print_options);
}

}  // namespace kiln::compiler

// A graph written out for people and tools: the text form (as torch.fx prints a graph,
// ir/printer.h), JSON (ir/json_format.h) or Graphviz dot (ir/dot_format.h). What `kiln dump`
// and `kiln opt` print, reached through compiler/ like everything the tools call.
#pragma once

#include <string>
#include <string_view>

#include "ir/graph.h"

namespace kiln::compiler {

enum class GraphFormat { text, json, dot };

// "text", "json", "dot"; kiln::Error naming the known ones for anything else.
GraphFormat parse_graph_format(std::string_view name);
// The file extension of a format: ".kiln", ".json", ".dot".
const char* graph_format_extension(GraphFormat format);

// `show_source` (text only): each node's origin as a trailing comment.
std::string render_graph(const ir::Graph& graph, GraphFormat format, bool show_source = false);

}  // namespace kiln::compiler

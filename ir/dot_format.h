// The IR as a Graphviz picture (`kiln dump --format=dot`, then `dot -Tsvg`): one box per
// node showing its name, target and type, an edge from each input to each user (labelled
// 0, 1, ... in Node::input_nodes() order when a node has more than one input), and a distinct
// style per kind of node: placeholders (graph inputs) blue, get_attr (parameters) grey,
// the output green, call_function nodes plain.
#pragma once

#include <string>

#include "ir/graph.h"

namespace kiln::ir {

struct DotOptions {
  std::string graph_name = "kiln";
  bool show_source = false;  // add the source line to each box
};

std::string graph_to_dot(const Graph& graph, const DotOptions& options = {});

}  // namespace kiln::ir

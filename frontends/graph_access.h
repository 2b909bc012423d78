// The ir::Graph behind a public kiln::Graph (kiln/graph.h), for Kiln's own code and tests: the
// one place that wraps a graph into the handle and reads it back.
#pragma once

#include "ir/graph.h"
#include "kiln/graph.h"

namespace kiln {

struct GraphAccess {
  // The graph, moved into a new handle.
  static Graph wrap(ir::Graph graph);
  static const ir::Graph& graph(const Graph& graph);
};

}  // namespace kiln

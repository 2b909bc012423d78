// Common subexpression elimination.
//
// Guarantees afterwards: no two call_function nodes have the same target, args and kwargs
// (the later one's users now read the earlier one), and no two get_attr nodes read the same
// parameter. Needs a functional graph: on a graph that still mutates, where equal
// expressions can hold different values, it changes nothing (run functionalize first).
// Random ops are merged too: with the same seed and offset they produce the same values.
// A copy-back output (a mutation output of the graph signature, ir/graph_signature.h) is
// never merged away, so that it keeps its readable "<input>_mutated" node.
#pragma once

#include "ir/graph.h"

namespace kiln::passes {

// Returns whether any node was merged away.
bool eliminate_common_subexpressions(ir::Graph& graph);

}  // namespace kiln::passes

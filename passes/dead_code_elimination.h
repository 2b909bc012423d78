// Dead code elimination.
//
// Guarantees afterwards: every call_function and get_attr node that remains is used, directly
// or through a chain, by the output node, or mutates something (in-place ops are kept, and
// so is everything they read). Placeholders are never removed: they are the graph's
// signature. Works on graphs with or without mutation.
#pragma once

#include "ir/graph.h"

namespace kiln::passes {

// Returns whether any node was removed.
bool eliminate_dead_code(ir::Graph& graph);

}  // namespace kiln::passes

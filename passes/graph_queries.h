// Facts about nodes and graphs that several passes ask: does a node mutate one of its
// inputs, is the whole graph free of mutation, does a node carry a copy-back out of the graph.
#pragma once

#include "ir/graph.h"
#include "ir/op_registry.h"

namespace kiln::passes {

// True when the op writes into one of its arguments (a Tensor(a!) parameter: add_, copy_, ...).
bool op_mutates(const ir::OpInfo& op);
// True for a call_function node whose op mutates.
bool node_mutates(const ir::Node& node);
// True when no node of the graph mutates anything.
bool is_functional(const ir::Graph& graph);
// True for a node that the output node returns at a position the graph signature marks as a
// mutation (ir/graph_signature.h): a mutated input's final value, which the caller copies
// back. Cleanup passes keep the node itself, and with it its readable "<input>_mutated"
// name (they may still simplify its inputs).
bool is_copy_back_output(const ir::Node& node);

}  // namespace kiln::passes

// The IR verifier: checks the invariants every pass must keep, and throws VerifyError (an
// InternalError: a broken graph is Kiln's bug, not the user's) naming the first offending
// node. Runs after every pass in tests and debug builds.
//
// Checked, node by node in graph order:
//  - every node belongs to this graph, is found by its name, and its name is unique;
//  - every input is a node of this graph defined earlier (topological order), never the output;
//  - use lists are exact: a node's users are precisely the nodes that reference it, each once;
//  - exactly one output node, and it is the last node;
//  - placeholders and get_attr nodes take no arguments and produce one tensor; a get_attr
//    target is a parameter of the graph whose dtype, shape and device the meta states;
//  - call_function targets are registered ops, their args bind to the op's schema, and the
//    meta (dtype, shape, device, tuple arity) equals the one the op's shape rule infers;
//  - each meta has strides of the shape's rank;
//  - a tuple-valued node is used only as getitem's first argument;
//  - the graph signature fits the graph (ir/signature_specs.h): its attribute kinds name
//    parameters, its output specs name positions the output node has, and each mutation
//    output has the type of the placeholder, parameter or buffer it is copied back into.
#pragma once

#include "ir/graph.h"
#include "kiln/error.h"

namespace kiln::ir {

class VerifyError : public InternalError {
 public:
  using InternalError::InternalError;
};

void verify(const Graph& graph);

}  // namespace kiln::ir

// Decomposition: rewrites every composite op (OpInfo::composite: linear, softmax, layer_norm,
// gelu, dropout, scaled_dot_product_attention, cross_entropy, ...) into core ops, by the
// table in passes/decompositions/.
//
// Guarantees afterwards: no call_function node's op is composite, and the graph computes the
// same values as before (within float rounding: the decompositions use numerically stable
// forms, and run f16/bf16 work in f32 with one rounding at the end). Each node a
// decomposition creates carries the composite node's SourceInfo and is named after it
// (%ln_mean, %ln_rstd, ... for %ln); the node that finally produces the composite's value
// takes over its name, so graph output names do not change. dropout keeps exactly the
// elements the reference kernel keeps (the same Philox draws and comparison).
//
// In-place composites (gelu_, silu_, ...) become the functional op followed by copy_ into
// self, so the pass is correct on graphs that still mutate; the default pipeline runs
// functionalize first, and then no copy_ appears. On a graph that mutates, ops whose
// decomposition would alias an input (flatten becomes reshape, split becomes slices) get a
// clone, since the composite returned fresh memory.
//
// Needs: a graph whose meta is up to date (as every pass leaves it). Does not simplify what
// it emits (a clone for an identity dropout stays): the simplify stage does that.
#pragma once

#include "ir/graph.h"

namespace kiln::passes {

// Returns whether any composite op was rewritten.
bool decompose(ir::Graph& graph);

}  // namespace kiln::passes

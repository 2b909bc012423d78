// Algebraic simplification: a table of (pattern, rewrite) rules applied to a fixed point.
//
// Rules: x*1, 1*x, x/1, x+0, 0+x, x-0 -> x; neg(neg(x)) -> x; cast to x's own dtype -> x;
// transpose(transpose(x, a, b), a, b) -> x; permute of permute -> one permute (or x when
// the composition is the identity); reshape/view of reshape/view -> one reshape; a reshape,
// view or expand to x's own shape -> x; squeeze(unsqueeze(x, d), d) -> x; max_pool(relu(x)) ->
// relu(max_pool(x)) and the same for a clamp (the clamp on the pooled output; not for a dilated
// pool, nor where the clamp has other users).
// A rule fires only when the replacement has exactly the node's dtype and shape (so
// `i64_tensor * 1.0`, which promotes, and `x + zeros` that broadcasts, are left alone): the
// values computed never change. A copy-back output (a mutation output of the graph
// signature, ir/graph_signature.h) is kept as it is.
// Needs a functional graph; otherwise it changes nothing.
#pragma once

#include "ir/graph.h"

namespace kiln::passes {

// Returns whether any rule fired.
bool simplify_algebra(ir::Graph& graph);

}  // namespace kiln::passes

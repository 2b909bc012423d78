// Functionalization (after AOTAutograd's): removes every mutation from a graph.
//
// Guarantees afterwards: no node mutates anything (is_functional(graph)), and the graph
// computes the same values as before, with values in place of aliases:
//  - every in-place op ("add_", "relu_", ... whose OpInfo::inplace_of names the functional
//    op, and index_put_) becomes its functional op; copy_ becomes its source (cast and
//    expanded to the destination when needed), fill_ becomes full_like;
//  - a write through a view (reshape/view, permute, transpose, expand, squeeze, unsqueeze,
//    slice, select, as_strided, and chains of them) is replayed on the view's base through
//    the view's inverse, expressed as an index map: the same chain of views applied to
//    iota(numel(base)) reshaped to the base's shape gives, for every element of the view,
//    its flat position in the base, and
//        base' = reshape(index_put(reshape(base, [numel]), [positions], new_view_value), shape)
//    (the reshapes are left out for a 1-d base; the positions node is named
//    "<view>_positions", the new base value after the base: %x_1, %x_2, ...). The positions
//    depend only on shapes, so constant folding can evaluate them and CSE can share them;
//  - every later read of the base or of any of its aliases (other views of the same base,
//    the in-place node's own result, earlier views) reads the updated value: views read
//    after a mutation of their base are regenerated from the base's current value by
//    replaying their view ops (a `view` is replayed as `reshape`, which gives the same
//    values whatever the layout of the new base);
//  - a mutated graph input becomes an extra graph output, marked in the graph signature
//    (ir/graph_signature.h) as its copy-back: USER_INPUT_MUTATION of the placeholder's
//    target, or PARAMETER_MUTATION / BUFFER_MUTATION of the get_attr target. The extra
//    outputs come after the original ones, one per mutated input in placeholder order (then
//    mutated parameters and buffers, get_attr, in graph order); whoever runs the graph copies
//    each back into its input at the graph boundary (found by the signature, by position).
//    The node is named "<input>_mutated" (the input's node name plus "_mutated", made unique
//    when taken) for the reader's sake: the name is not what marks it.
//
// Aliasing is not preserved: after functionalization every output is a value. Outputs that
// aliased inputs or each other before hold the right values, but may no longer share
// memory (AOTAutograd regenerates output aliases with views at the boundary; Kiln does not
// need that yet).
//
// Errors (kiln::Error naming the in-place node, raised before the graph is changed):
//  - a write into a view in which more than one element refers to one memory location (an
//    expanded, broadcast view: a stride-0 dim of size other than 1), as PyTorch reports it;
//  - a mutated base whose layout is not contiguous and that has an as_strided alias
//    (as_strided reads the base's storage, which a functional value does not reproduce);
//  - a write into a get_attr target the graph signature calls a CONSTANT_TENSOR.
//
// Assumptions: graph inputs start at storage offset 0 (as_strided offsets are relative to
// that); a reshape aliases its input exactly when a view with the same size would succeed
// (as in PyTorch).
//
// Needs: a graph that passes the verifier. Erases the in-place nodes and the nodes only
// they (or reads now redirected to regenerated views) kept alive; other dead code stays
// (dce). Does not decompose anything or merge regenerated views and index maps (cse does).
// A graph without mutation is left untouched.
#pragma once

#include "ir/graph.h"

namespace kiln::passes {

// Returns whether the graph changed (whether it had any mutation).
bool functionalize(ir::Graph& graph);

}  // namespace kiln::passes

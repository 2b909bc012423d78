// Decompositions of the shape composites:
//   tril(x, d)  where(j <= i + d, x, 0) over the last two dims (row i, column j from iota)
//   triu(x, d)  where(j >= i + d, x, 0)
//   flatten     reshape to the merged shape (a 0-d tensor becomes [1])
//   stack       cat of the tensors unsqueezed at dim
//   split       one slice per piece along dim (the sizes are the op's output shapes, which
//               also covers a single chunk size)
// These move data without arithmetic, so they are exact in every dtype. The zero of tril/triu
// is a Python number of the tensor's kind (False, 0 or 0.0), so where keeps the dtype.
#include "passes/decompositions/decomposition.h"

namespace kiln::passes::decompositions {
namespace {

using ir::Argument;
using ir::Node;
using ir::OpCall;
using ir::SymInt;

std::vector<Node*> triangle(Emitter& emit, const OpCall& call, bool lower) {
  Node* self = tensor_arg(call, 0);
  int64_t diagonal = call.int_arg(1);
  const ir::SymShape& shape = shape_of(self);
  // Row i shifted by the diagonal, as a column [R, 1]; column j as a row [1, C].
  ir::Kwargs shifted;
  if (diagonal != 0) shifted.emplace_back("start", diagonal);
  Node* rows = emit.call("iota", {shape[shape.size() - 2]}, std::move(shifted), "row_index");
  Node* columns = emit.call("iota", {shape.back()}, {}, "column_index");
  Node* row_column = emit.call("unsqueeze", {rows, -1}, {}, "row_index_column");
  Node* column_row = emit.call("unsqueeze", {columns, 0}, {}, "column_index_row");
  Node* keep = emit.call(lower ? "le" : "ge", {column_row, row_column}, {}, "keep");
  return {emit.finish(emit.call("where", {keep, self, zero_scalar(dtype_of(self))}))};
}

std::vector<Node*> flatten(Emitter& emit, const OpCall& call) {
  // The shape rule has computed the merged shape; the original's meta holds it.
  Node* self = tensor_arg(call, 0);
  Node* reshaped = emit.call("reshape", {self, Argument::sym_ints(emit.result_meta().shape)});
  return {emit.finish(reshaped)};
}

std::vector<Node*> stack(Emitter& emit, const OpCall& call) {
  const std::vector<Argument>& tensors = call.arg(0).list();
  int64_t dim = wrap_dim(call.int_arg(1), rank_of(tensors.at(0).node()) + 1);
  std::vector<Argument> pieces;
  for (const Argument& tensor : tensors) pieces.push_back(emit.call("unsqueeze", {tensor, dim}));
  return {emit.finish(emit.call("cat", {Argument(std::move(pieces)), dim}))};
}

std::vector<Node*> split(Emitter& emit, const OpCall& call) {
  Node* self = tensor_arg(call, 0);
  int64_t dim = wrap_dim(call.int_arg(2), rank_of(self));
  std::vector<Node*> results;
  SymInt start(0);
  for (const ir::TensorMeta& piece : emit.original().meta.values) {
    SymInt end = start + piece.shape.at(size_t(dim));
    Node* slice = emit.call("slice", {self, dim, start, end}, {}, "piece");
    results.push_back(emit.finish(slice, dtype_of(self)));
    start = end;
  }
  return results;
}

}  // namespace

void register_shape_decompositions(DecompositionTable& table) {
  table["tril"] = [](Emitter& emit, const OpCall& call) { return triangle(emit, call, true); };
  table["triu"] = [](Emitter& emit, const OpCall& call) { return triangle(emit, call, false); };
  table["flatten"] = flatten;
  table["stack"] = stack;
  table["split"] = split;
}

}  // namespace kiln::passes::decompositions

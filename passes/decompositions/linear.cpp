// Decompositions of the matrix-product composites and embedding:
//   linear(x, w, b)            -> matmul(x, transpose(w, 0, 1)) + b   (matmul(x, w) for a 1-d w)
//   addmm(s, a, b, beta, alpha) -> beta * s + alpha * matmul(a, b)    (s dropped when beta == 0,
//                                   as PyTorch does, so NaN/inf in s do not propagate)
//   embedding(w, idx)          -> index_select(w, 0, idx flattened), reshaped to idx.shape + [D]
// matmul accumulates in wide precision already, so these run in the input dtype.
#include "passes/decompositions/decomposition.h"

namespace kiln::passes::decompositions {
namespace {

using ir::Argument;
using ir::Node;
using ir::OpCall;

std::vector<Node*> linear(Emitter& emit, const OpCall& call) {
  Node* input = tensor_arg(call, 0);
  Node* weight = tensor_arg(call, 1);
  Node* bias = tensor_arg(call, 2);
  Node* product = nullptr;
  if (rank_of(weight) == 1) {
    product = emit.call("matmul", {input, weight});
  } else {
    Node* transposed = emit.call("transpose", {weight, 0, 1}, {}, "weight_t");
    product = emit.call("matmul", {input, transposed});
  }
  Node* result = bias ? emit.call("add", {product, bias}) : product;
  return {emit.finish(result)};
}

bool is_one(const Argument& value) { return value.floating() == 1.0; }
bool is_zero(const Argument& value) { return value.floating() == 0.0; }

std::vector<Node*> addmm(Emitter& emit, const OpCall& call) {
  Node* self = tensor_arg(call, 0);
  const Argument& beta = call.arg(3);
  const Argument& alpha = call.arg(4);
  Node* product = emit.call("matmul", {tensor_arg(call, 1), tensor_arg(call, 2)});
  Node* scaled = is_one(alpha) ? product : emit.call("mul", {product, alpha}, {}, "alpha_product");
  if (is_zero(beta)) {
    // The result still has the broadcast shape [n, m], which the product already has.
    return {emit.finish(scaled)};
  }
  Node* term = is_one(beta) ? self : emit.call("mul", {self, beta}, {}, "beta_self");
  return {emit.finish(emit.call("add", {term, scaled}))};
}

std::vector<Node*> embedding(Emitter& emit, const OpCall& call) {
  Node* weight = tensor_arg(call, 0);
  Node* indices = tensor_arg(call, 1);
  // padding_idx only changes the gradient; the forward reads row padding_idx like any other.
  if (rank_of(indices) == 1) return {emit.finish(emit.call("index_select", {weight, 0, indices}, {}, "rows"))};
  Node* flat = emit.call("reshape", {indices, Argument::sym_ints({meta_of(indices).numel()})}, {}, "flat_indices");
  Node* rows = emit.call("index_select", {weight, 0, flat}, {}, "rows");
  ir::SymShape shape = shape_of(indices);
  shape.push_back(shape_of(weight).at(1));
  return {emit.finish(emit.call("reshape", {rows, Argument::sym_ints(shape)}))};
}

}  // namespace

void register_linear_decompositions(DecompositionTable& table) {
  table["linear"] = linear;
  table["addmm"] = addmm;
  table["embedding"] = embedding;
}

}  // namespace kiln::passes::decompositions

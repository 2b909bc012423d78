// VJPs of matmul (NumPy broadcasting of batch dims, 1-d operands) and bmm:
//   grad_a = g @ b^T, grad_b = a^T @ g
// summed over the batch dims that broadcasting stretched. A 1-d operand is first viewed as a
// matrix ([k] -> [1, k] on the left, [k, 1] on the right), as matmul treats it, and the
// gradient is viewed back.
#include "passes/derivatives/derivatives.h"

namespace kiln::passes::derivatives {

using ir::Argument;
using ir::Node;

namespace {

Node* matrix_transpose(VjpEmitter& emit, Node* value) { return emit.call("transpose", {value, -2, -1}); }

// A gradient of the matrix form `matrix` of `operand` as the gradient of `operand`.
Node* back_to_operand(VjpEmitter& emit, Node* grad, const Node* matrix, const Node* operand) {
  grad = emit.sum_to_shape(grad, shape_of(matrix));
  if (rank_of(operand) == 1) grad = emit.call("reshape", {grad, Argument::sym_ints(shape_of(operand))}, {}, "as_vector");
  return emit.to_input(grad, operand);
}

std::vector<Gradient> matmul_vjp(VjpEmitter& emit) {
  Node* a = emit.input(0);
  Node* b = emit.input(1);
  Node* g = emit.grad();
  // The matrix forms of a 1-d operand and of the gradient.
  Node* a2 = rank_of(a) == 1 ? emit.call("unsqueeze", {a, 0}, {}, "as_row") : a;
  Node* b2 = rank_of(b) == 1 ? emit.call("unsqueeze", {b, 1}, {}, "as_column") : b;
  Node* g2 = g;
  if (rank_of(a) == 1) g2 = emit.call("unsqueeze", {g2, rank_of(g2) - (rank_of(b) == 1 ? 0 : 1)}, {}, "grad_row");
  if (rank_of(b) == 1) g2 = emit.call("unsqueeze", {g2, rank_of(g2)}, {}, "grad_column");
  std::vector<Gradient> grads;
  if (emit.needs(0)) {
    Node* grad = emit.call("matmul", {g2, matrix_transpose(emit, b2)}, {}, "grad_self");
    grads.push_back({a, back_to_operand(emit, grad, a2, a)});
  }
  if (emit.needs(1)) {
    Node* grad = emit.call("matmul", {matrix_transpose(emit, a2), g2}, {}, "grad_other");
    grads.push_back({b, back_to_operand(emit, grad, b2, b)});
  }
  return grads;
}

std::vector<Gradient> bmm_vjp(VjpEmitter& emit) {
  std::vector<Gradient> grads;
  if (emit.needs(0))
    grads.push_back(emit.gradient_of(0, emit.call("bmm", {emit.grad(), matrix_transpose(emit, emit.input(1))})));
  if (emit.needs(1))
    grads.push_back(emit.gradient_of(1, emit.call("bmm", {matrix_transpose(emit, emit.input(0)), emit.grad()})));
  return grads;
}

}  // namespace

void register_linear_algebra_derivatives(DerivativeTable& table) {
  table["matmul"] = matmul_vjp;
  table["bmm"] = bmm_vjp;
}

}  // namespace kiln::passes::derivatives

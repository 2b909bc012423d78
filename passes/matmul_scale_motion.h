// Moving a constant factor of a matrix product's operands to the product.
//
// matmul(x * a, y * b) -> matmul(x, y) * (a * b), and the same with one factor, for matmul and
// bmm, where a and b are numbers written in the graph. Attention as PyTorch writes it scales
// its operands: the math form of scaled_dot_product_attention, and nn.MultiheadAttention as
// torch.onnx exports it, multiply q and k each by sqrt(1 / sqrt(head_dim)) before q @ k^T, and
// Swin's attention multiplies q by its scale. Each factor is an elementwise pass over an operand
// that the product would otherwise read where it is (q, k are views of the in-projection's
// output): a copy of each, written and read again. On the product, the factor is one multiply of
// the kernel that reads the scores (the softmax's), where it costs nothing more.
//
// Moved only where that is what happens: where the product has no more elements than the
// scaled operands together, or where every user of the product is a node that computes with it
// elementwise or reduces it (not another product, a convolution, or the graph's output).
//
// Values: x a . y b = (x . y)(a b) up to rounding: each product term is rounded once where it
// was rounded twice. Only for f32 and f64: a low-precision product may overflow where its scaled
// operands, as PyTorch scales them "for stability", would not. A NaN or infinity gives NaN or
// infinity either way.
#pragma once

#include "ir/graph.h"

namespace kiln::passes {

// Returns whether any factor was moved.
bool move_scales_to_matmul_products(ir::Graph& graph);

}  // namespace kiln::passes

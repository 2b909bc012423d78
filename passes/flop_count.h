// FLOP count: the floating-point operations a graph's matrix products and convolutions do in one
// call, 2 per multiply-add, as PyTorch's torch.utils.flop_counter.FlopCounterMode counts them
// (and torchvision's model tables, which list the multiply-adds). Pointwise work, reductions,
// norms and pools are left out: on a CPU or GPU the products are what the FMA peak bounds, so
// flops / seconds / peak says how close a model's run comes to the machine's limit (`kiln bench`
// prints it; bench/compare_suite.py checks the count against FlopCounterMode's).
//
// Counted on a decomposed graph (passes/decompose.h), where every product is matmul, bmm,
// convolution or deform_conv2d: linear, addmm, attention and the other composites have become
// those, so one rule per core op covers them. Per op, with out the output and K the contracted
// length: matmul and bmm 2 * numel(out) * K (NumPy's broadcasting and 1-d operands included);
// convolution 2 * numel(out) * numel(weight) / out_channels (each output element is a dot product
// over its group's input channels times the kernel's taps), and transposed 2 * numel(input) *
// numel(weight) / in_channels (each input element is scattered to its group's output channels
// times the taps); deform_conv2d as a convolution (its bilinear sampling not counted).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "ir/graph.h"

namespace kiln::passes {

struct FlopCount {
  double total = 0;
  std::map<std::string, double> by_op;  // "matmul", "convolution", ... (ops with none are absent)
};

// The FLOPs of one node of a decomposed graph: 0 for any op but the products above; nothing when
// its shapes have a symbol `symbols` does not bind.
std::optional<double> product_flops(const ir::Node& node, const std::map<std::string, int64_t>& symbols);

// The count for one call of `decomposed` with its symbols bound to `symbols` (ir::bind_symbols);
// nothing when a product's shape has a symbol `symbols` does not bind.
std::optional<FlopCount> count_flops(const ir::Graph& decomposed, const std::map<std::string, int64_t>& symbols);

// The same for a graph as loaded (composites included): counts a decomposed copy.
std::optional<FlopCount> count_model_flops(const ir::Graph& graph, const std::map<std::string, int64_t>& symbols);

}  // namespace kiln::passes

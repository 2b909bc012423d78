// Small pieces several ONNX converter families share: ONNX scalars as Kiln op arguments,
// dim lists, flipping a static dim, and the per-axis begin/end padding of convolutions and
// pools (pads, auto_pad).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "frontends/onnx/onnx_node_context.h"

namespace kiln::frontends {

// A Scalar argument of a Kiln op holding `value` as `dtype` does (int for integers, bool for
// bool, double for floats).
ir::Argument scalar_argument(double value, DType dtype);

// Input `index` as an operand of a broadcasting op whose other operands have rank
// `other_rank`: a one-element constant of no greater rank is passed as a Scalar (so it is a
// literal in generated code), anything else as a tensor node.
ir::Argument operand(OnnxNodeContext& context, size_t index, int64_t other_rank);

// Input `index` as a tensor node, or None when the optional input is absent.
ir::Argument optional_tensor(OnnxNodeContext& context, size_t index);

// [first, first + 1, ..., rank - 1].
std::vector<int64_t> dims_from(int64_t first, int64_t rank);

// `x` reversed along `axis`, whose size must be static.
ir::Node* flip(OnnxNodeContext& context, ir::Node* x, int64_t axis);

// The padding of a sliding window op over `spatial` dims (the input's dims 2..), from its
// pads and auto_pad attributes: begin[i], end[i] per spatial dim. SAME_UPPER/SAME_LOWER
// need static input sizes.
struct WindowPadding {
  std::vector<int64_t> begin, end;
  bool symmetric() const { return begin == end; }
};
WindowPadding window_padding(const OnnxNodeContext& context, const ir::SymShape& input_shape,
                             const std::vector<int64_t>& kernel, const std::vector<int64_t>& strides,
                             const std::vector<int64_t>& dilations);

// F.pad's list (last dim first) for begin/end pads of a tensor's trailing dims, given in order.
std::vector<int64_t> torch_pad_list(const std::vector<int64_t>& begin, const std::vector<int64_t>& end);

}  // namespace kiln::frontends

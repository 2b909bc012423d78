// Shared helpers of the ONNX converters.
#include "frontends/onnx/onnx_op_helpers.h"

namespace kiln::frontends {

ir::Argument scalar_argument(double value, DType dtype) {
  if (dtype == DType::boolean) return ir::Argument(value != 0);
  if (is_integral(dtype)) return ir::Argument(int64_t(value));
  return ir::Argument(value);
}

ir::Argument operand(OnnxNodeContext& context, size_t index, int64_t other_rank) {
  const Tensor* value = context.constant(index);
  if (value && value->numel() == 1 && value->dim() <= other_rank) {
    if (is_integral(value->dtype())) return ir::Argument(value->flat_int(0));
    return scalar_argument(value->flat_double(0), value->dtype());
  }
  return context.tensor(index);
}

ir::Argument optional_tensor(OnnxNodeContext& context, size_t index) {
  if (!context.has_input(index)) return ir::Argument();
  return ir::Argument(context.tensor(index));
}

std::vector<int64_t> dims_from(int64_t first, int64_t rank) {
  std::vector<int64_t> dims;
  for (int64_t d = first; d < rank; ++d) dims.push_back(d);
  return dims;
}

ir::Node* flip(OnnxNodeContext& context, ir::Node* x, int64_t axis) {
  const ir::SymInt& size = x->value().shape[size_t(axis)];
  if (!size.is_constant()) context.fail("reversing dim ", axis, " needs its size to be static, but it is ", size);
  std::vector<int64_t> indices;
  for (int64_t i = size.constant() - 1; i >= 0; --i) indices.push_back(i);
  ir::Node* index = context.constant_node(Tensor::from_vector({int64_t(indices.size())}, indices, DType::i64));
  return context.call("index_select", {x, axis, index});
}

WindowPadding window_padding(const OnnxNodeContext& context, const ir::SymShape& input_shape,
                             const std::vector<int64_t>& kernel, const std::vector<int64_t>& strides,
                             const std::vector<int64_t>& dilations) {
  size_t spatial = kernel.size();
  WindowPadding padding;
  std::string auto_pad = context.string_attribute("auto_pad", "NOTSET");
  if (auto_pad == "NOTSET") {
    std::vector<int64_t> pads = context.ints_attribute("pads", std::vector<int64_t>(2 * spatial, 0));
    if (pads.size() != 2 * spatial) context.fail("pads has ", pads.size(), " values; expected ", 2 * spatial);
    for (int64_t pad : pads)
      if (pad < 0) context.fail("negative pads are not supported");
    padding.begin.assign(pads.begin(), pads.begin() + long(spatial));
    padding.end.assign(pads.begin() + long(spatial), pads.end());
    return padding;
  }
  if (auto_pad == "VALID") {
    padding.begin.assign(spatial, 0);
    padding.end.assign(spatial, 0);
    return padding;
  }
  if (auto_pad != "SAME_UPPER" && auto_pad != "SAME_LOWER")
    context.fail("auto_pad '", auto_pad, "' is not one of NOTSET, SAME_UPPER, SAME_LOWER, VALID");
  for (size_t i = 0; i < spatial; ++i) {
    const ir::SymInt& size = input_shape[i + 2];
    if (!size.is_constant()) context.fail("auto_pad ", auto_pad, " needs static spatial sizes, but dim ", i + 2, " is ", size);
    int64_t in = size.constant();
    int64_t out = (in + strides[i] - 1) / strides[i];
    int64_t total = std::max<int64_t>(0, (out - 1) * strides[i] + (kernel[i] - 1) * dilations[i] + 1 - in);
    int64_t small = total / 2, large = total - total / 2;
    padding.begin.push_back(auto_pad == "SAME_UPPER" ? small : large);
    padding.end.push_back(auto_pad == "SAME_UPPER" ? large : small);
  }
  return padding;
}

std::vector<int64_t> torch_pad_list(const std::vector<int64_t>& begin, const std::vector<int64_t>& end) {
  std::vector<int64_t> pads;
  for (size_t i = begin.size(); i-- > 0;) {
    pads.push_back(begin[i]);
    pads.push_back(end[i]);
  }
  return pads;
}

}  // namespace kiln::frontends

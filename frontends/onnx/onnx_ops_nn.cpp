// ONNX neural-network ops: MatMul, Gemm, Det, Conv, ConvTranspose, MaxPool, AveragePool
// (with dilations: window sums by a convolution with ones, divided by the counts), LpPool (the
// same window sums of |x|^p), GlobalAveragePool, GlobalMaxPool, Softmax, LogSoftmax. Windows whose ONNX padding Kiln's
// ops cannot express (asymmetric, or beyond half a pooling kernel) pad the input explicitly.
#include <limits>

#include "frontends/onnx/onnx_op_helpers.h"
#include "frontends/onnx/onnx_op_table.h"

namespace kiln::frontends {

namespace {

void convert_matmul(OnnxNodeContext& context) {
  if (context.rank(0) == 0 || context.rank(1) == 0) context.fail("MatMul inputs must have rank 1 or more");
  context.emit(0, "matmul", {context.tensor(0), context.tensor(1)});
}

void convert_gemm(OnnxNodeContext& context) {
  double alpha = context.float_attribute("alpha", 1.0), beta = context.float_attribute("beta", 1.0);
  bool trans_a = context.int_attribute("transA", 0) != 0, trans_b = context.int_attribute("transB", 0) != 0;
  if (context.rank(0) != 2 || context.rank(1) != 2) context.fail("Gemm inputs A and B must be matrices");
  bool has_c = context.has_input(2);
  if (trans_b && !trans_a && alpha == 1.0 && (!has_c || (beta == 1.0 && context.rank(2) <= 1))) {
    ir::Argument bias = optional_tensor(context, 2);
    context.emit(0, "linear", {context.tensor(0), context.tensor(1), bias});
    return;
  }
  ir::Node* a = context.tensor(0);
  ir::Node* b = context.tensor(1);
  if (trans_a) a = context.call("transpose", {a, int64_t(0), int64_t(1)});
  if (trans_b) b = context.call("transpose", {b, int64_t(0), int64_t(1)});
  bool scaled = alpha != 1.0;
  bool last = !scaled && !has_c;
  ir::Node* product = last ? context.emit(0, "matmul", {a, b}) : context.call("matmul", {a, b});
  if (scaled) product = has_c ? context.call("mul", {product, alpha}) : context.emit(0, "mul", {product, alpha});
  if (!has_c) return;
  ir::Argument c = context.tensor(2);
  if (beta != 1.0) c = context.call("mul", {c.node(), beta});
  context.emit(0, "add", {product, c});
}

struct WindowAttributes {
  std::vector<int64_t> kernel, strides, dilations;
  WindowPadding padding;
};

// kernel_shape (from the weight's dims 2.. when absent and `weight_shape` is given), strides,
// dilations and the padding of a sliding-window op.
WindowAttributes window_attributes(const OnnxNodeContext& context, const ir::SymShape& input_shape,
                                   const ir::SymShape* weight_shape) {
  WindowAttributes window;
  int64_t spatial = int64_t(input_shape.size()) - 2;
  if (spatial < 1) context.fail("the input must have rank 3 or more (N, C, spatial dims), but has rank ", input_shape.size());
  std::optional<std::vector<int64_t>> kernel = context.maybe_ints_attribute("kernel_shape");
  if (kernel) {
    window.kernel = *kernel;
  } else if (weight_shape) {
    for (size_t i = 2; i < weight_shape->size(); ++i) {
      if (!(*weight_shape)[i].is_constant()) context.fail("the weight's kernel dims must be static");
      window.kernel.push_back((*weight_shape)[i].constant());
    }
  } else {
    context.fail("attribute 'kernel_shape' is required");
  }
  if (int64_t(window.kernel.size()) != spatial)
    context.fail("kernel_shape has ", window.kernel.size(), " dims, but the input has ", spatial, " spatial dims");
  window.strides = context.ints_attribute("strides", std::vector<int64_t>(size_t(spatial), 1));
  window.dilations = context.ints_attribute("dilations", std::vector<int64_t>(size_t(spatial), 1));
  if (int64_t(window.strides.size()) != spatial || int64_t(window.dilations.size()) != spatial)
    context.fail("strides and dilations need one value per spatial dim (", spatial, ")");
  window.padding = window_padding(context, input_shape, window.kernel, window.strides, window.dilations);
  return window;
}

// The input padded explicitly (trailing spatial dims) with `value`.
ir::Node* pad_input(OnnxNodeContext& context, ir::Node* x, const WindowPadding& padding, double value) {
  return context.call("pad", {x, ir::Argument::ints(torch_pad_list(padding.begin, padding.end)), "constant", value});
}

void convert_conv(OnnxNodeContext& context) {
  ir::Node* x = context.tensor(0);
  ir::SymShape weight_shape = context.shape(1);
  WindowAttributes window = window_attributes(context, x->value().shape, &weight_shape);
  size_t spatial = window.kernel.size();
  std::vector<int64_t> padding = window.padding.begin;
  if (!window.padding.symmetric()) {
    x = pad_input(context, x, window.padding, 0.0);
    padding.assign(spatial, 0);
  }
  ir::Argument bias = optional_tensor(context, 2);
  int64_t groups = context.int_attribute("group", 1);
  context.emit(0, "convolution",
               {x, context.tensor(1), bias, ir::Argument::ints(window.strides), ir::Argument::ints(padding),
                ir::Argument::ints(window.dilations), false, ir::Argument::ints(std::vector<int64_t>(spatial, 0)), groups});
}

void convert_conv_transpose(OnnxNodeContext& context) {
  ir::Node* x = context.tensor(0);
  ir::SymShape weight_shape = context.shape(1);
  ir::SymShape input_shape = x->value().shape;
  size_t spatial = input_shape.size() - 2;
  std::vector<int64_t> kernel = context.ints_attribute("kernel_shape");
  if (kernel.empty())
    for (size_t i = 2; i < weight_shape.size(); ++i) {
      if (!weight_shape[i].is_constant()) context.fail("the weight's kernel dims must be static");
      kernel.push_back(weight_shape[i].constant());
    }
  std::vector<int64_t> strides = context.ints_attribute("strides", std::vector<int64_t>(spatial, 1));
  std::vector<int64_t> dilations = context.ints_attribute("dilations", std::vector<int64_t>(spatial, 1));
  std::vector<int64_t> output_padding = context.ints_attribute("output_padding", std::vector<int64_t>(spatial, 0));
  std::vector<int64_t> output_shape = context.ints_attribute("output_shape");
  std::string auto_pad = context.string_attribute("auto_pad", "NOTSET");
  if (kernel.size() != spatial || strides.size() != spatial || dilations.size() != spatial || output_padding.size() != spatial)
    context.fail("kernel_shape, strides, dilations and output_padding need one value per spatial dim (", spatial, ")");
  std::vector<int64_t> begin(spatial, 0), end(spatial, 0);
  if (!output_shape.empty() || auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
    if (!output_shape.empty() && output_shape.size() != spatial) context.fail("output_shape needs ", spatial, " values");
    for (size_t i = 0; i < spatial; ++i) {
      if (!input_shape[i + 2].is_constant()) context.fail("output_shape and auto_pad need static spatial sizes");
      int64_t in = input_shape[i + 2].constant();
      int64_t wanted = output_shape.empty() ? in * strides[i] : output_shape[i];
      int64_t total = strides[i] * (in - 1) + output_padding[i] + (kernel[i] - 1) * dilations[i] + 1 - wanted;
      if (total < 0) {  // the output is larger than the transposed convolution: extra output padding at the end
        output_padding[i] -= total;
        total = 0;
      }
      bool lower = auto_pad == "SAME_LOWER";
      begin[i] = lower ? total - total / 2 : total / 2;
      end[i] = total - begin[i];
    }
  } else if (auto_pad == "NOTSET") {
    std::vector<int64_t> pads = context.ints_attribute("pads", std::vector<int64_t>(2 * spatial, 0));
    if (pads.size() != 2 * spatial) context.fail("pads has ", pads.size(), " values; expected ", 2 * spatial);
    begin.assign(pads.begin(), pads.begin() + long(spatial));
    end.assign(pads.begin() + long(spatial), pads.end());
  } else if (auto_pad != "VALID") {
    context.fail("auto_pad '", auto_pad, "' is not one of NOTSET, SAME_UPPER, SAME_LOWER, VALID");
  }
  // Kiln's transposed convolution crops the same amount at both ends: crop the rest after.
  std::vector<int64_t> padding(spatial);
  bool crop = false;
  for (size_t i = 0; i < spatial; ++i) {
    padding[i] = std::min(begin[i], end[i]);
    crop = crop || begin[i] != end[i];
  }
  ir::Argument bias = optional_tensor(context, 2);
  int64_t groups = context.int_attribute("group", 1);
  std::vector<ir::Argument> args = {x, context.tensor(1), bias, ir::Argument::ints(strides), ir::Argument::ints(padding),
                                    ir::Argument::ints(dilations), true, ir::Argument::ints(output_padding), groups};
  if (!crop) {
    context.emit(0, "convolution", args);
    return;
  }
  ir::Node* result = context.call("convolution", args);
  for (size_t i = 0; i < spatial; ++i) {
    int64_t extra_begin = begin[i] - padding[i], extra_end = end[i] - padding[i];
    if (extra_begin == 0 && extra_end == 0) continue;
    ir::SymInt size = result->value().shape[i + 2];
    result = context.call("slice", {result, int64_t(i + 2), extra_begin, size - ir::SymInt(extra_end)});
  }
  context.set_output(0, result);
}

// Whether Kiln's pools take this padding directly (symmetric, at most half the kernel).
bool pool_padding_fits(const WindowAttributes& window) {
  if (!window.padding.symmetric()) return false;
  for (size_t i = 0; i < window.kernel.size(); ++i)
    if (window.padding.begin[i] > window.kernel[i] / 2) return false;
  return true;
}

// The extra padding at the end of each spatial dim that ceil_mode needs (defined below).
std::vector<int64_t> ceil_mode_extra(const OnnxNodeContext& context, const ir::SymShape& shape, const WindowAttributes& window,
                                     bool ceil_mode);

// MaxPool with its Indices output: every window's elements gathered from the input padded
// with -inf (a constant table of positions), their max and the position of the first max,
// mapped back to the flat index in the unpadded input (row-major, or column-major within a
// plane with storage_order 1) plus the plane's offset (n * C + c) * plane.
void convert_max_pool_with_indices(OnnxNodeContext& context, ir::Node* x, const WindowAttributes& window) {
  const ir::TensorMeta& meta = x->value();
  std::optional<Sizes> shape = meta.static_shape();
  if (!shape || !is_floating(meta.dtype)) context.fail("the Indices output needs a floating input of static shape");
  size_t spatial = window.kernel.size();
  bool column_major = context.int_attribute("storage_order", 0) != 0;
  std::vector<int64_t> extra = ceil_mode_extra(context, meta.shape, window, context.int_attribute("ceil_mode", 0) != 0);
  std::vector<int64_t> in(shape->begin() + 2, shape->end()), padded(spatial), out(spatial);
  int64_t plane = 1, padded_plane = 1, outputs = 1, taps = 1;
  for (size_t d = 0; d < spatial; ++d) {
    padded[d] = in[d] + window.padding.begin[d] + window.padding.end[d] + extra[d];
    out[d] = (padded[d] - window.dilations[d] * (window.kernel[d] - 1) - 1) / window.strides[d] + 1;
    plane *= in[d], padded_plane *= padded[d], outputs *= out[d], taps *= window.kernel[d];
  }
  std::vector<int64_t> positions, originals;  // [outputs, taps]: in the padded plane; in the input
  for (int64_t o = 0; o < outputs; ++o)
    for (int64_t t = 0; t < taps; ++t) {
      int64_t rest_o = o, rest_t = t, position = 0, original = 0, stride = 1;
      std::vector<int64_t> at(spatial);
      for (size_t d = spatial; d-- > 0;) {
        at[d] = (rest_o % out[d]) * window.strides[d] + (rest_t % window.kernel[d]) * window.dilations[d];
        rest_o /= out[d], rest_t /= window.kernel[d];
      }
      for (size_t d = 0; d < spatial; ++d) position = position * padded[d] + at[d];
      // The input position (a padding position maps anywhere: -inf is never the max), its
      // flat index row-major (the last dim fastest) or column-major (the first fastest).
      for (size_t k = 0; k < spatial; ++k) {
        size_t d = column_major ? k : spatial - 1 - k;
        original += std::clamp<int64_t>(at[d] - window.padding.begin[d], 0, in[d] - 1) * stride;
        stride *= in[d];
      }
      positions.push_back(position);
      originals.push_back(original);
    }
  WindowPadding padding = window.padding;
  for (size_t d = 0; d < spatial; ++d) padding.end[d] += extra[d];
  ir::Node* xp = pad_input(context, x, padding, -std::numeric_limits<double>::infinity());
  int64_t n = (*shape)[0], c = (*shape)[1];
  xp = context.call("reshape", {xp, ir::Argument::ints({n, c, padded_plane})});
  ir::Node* picked = context.call("index_select", {xp, int64_t(2), context.constant_node(Tensor::from_vector({outputs * taps}, positions, DType::i64))});
  picked = context.call("reshape", {picked, ir::Argument::ints({n, c, outputs, taps})});
  std::vector<int64_t> out_shape = {n, c};
  out_shape.insert(out_shape.end(), out.begin(), out.end());
  context.emit(0, "reshape", {context.call("amax", {picked, ir::Argument::ints({3})}), ir::Argument::ints(out_shape)});
  ir::Node* first = context.call("argmax", {picked, int64_t(3), true});  // [n, c, outputs, 1]
  ir::Node* table = context.call("expand", {context.constant_node(Tensor::from_vector({1, 1, outputs, taps}, originals, DType::i64)),
                                            ir::Argument::ints({n, c, outputs, taps})});
  ir::Node* flat = context.call("squeeze", {context.call("gather", {table, int64_t(3), first}), ir::Argument::ints({3})});
  std::vector<int64_t> offsets;
  for (int64_t i = 0; i < n * c; ++i) offsets.push_back(i * plane);
  ir::Node* global = context.call("add", {flat, context.constant_node(Tensor::from_vector({n, c, 1}, offsets, DType::i64))});
  context.emit(1, "reshape", {global, ir::Argument::ints(out_shape)});
}

void convert_max_pool(OnnxNodeContext& context) {
  ir::Node* x = context.tensor(0);
  WindowAttributes window = window_attributes(context, x->value().shape, nullptr);
  if (context.output_used(1)) return convert_max_pool_with_indices(context, x, window);
  std::vector<int64_t> padding = window.padding.begin;
  if (!pool_padding_fits(window)) {
    double lowest = is_floating(x->value().dtype) ? -std::numeric_limits<double>::infinity()
                                                  : double(std::numeric_limits<int64_t>::min());
    x = pad_input(context, x, window.padding, lowest);
    padding.assign(window.kernel.size(), 0);
  }
  bool ceil_mode = context.int_attribute("ceil_mode", 0) != 0;
  context.emit(0, "max_pool", {x, ir::Argument::ints(window.kernel), ir::Argument::ints(window.strides),
                               ir::Argument::ints(padding), ir::Argument::ints(window.dilations), ceil_mode});
}

// The sum of `x` over each window, per channel: a depthwise convolution with a kernel of ones
// over `x` padded explicitly (pads at the end extended by `extra_end`, for ceil_mode).
ir::Node* window_sum(OnnxNodeContext& context, ir::Node* x, const WindowAttributes& window, const std::vector<int64_t>& extra_end,
                     double pad_value) {
  const ir::TensorMeta& meta = x->value();
  if (!meta.shape[1].is_constant()) context.fail("the channel dim must be static");
  int64_t channels = meta.shape[1].constant();
  size_t spatial = window.kernel.size();
  WindowPadding padding = window.padding;
  for (size_t i = 0; i < spatial; ++i) padding.end[i] += extra_end[i];
  ir::Node* padded = x;
  if (pad_value == 0) {
    padded = pad_input(context, x, padding, 0.0);
  } else {
    padded = pad_input(context, pad_input(context, x, window.padding, pad_value), WindowPadding{std::vector<int64_t>(spatial, 0), extra_end}, 0.0);
  }
  Sizes weight_shape = {channels, 1};
  weight_shape.insert(weight_shape.end(), window.kernel.begin(), window.kernel.end());
  ir::Node* ones = context.constant_node(Tensor::full(weight_shape, 1.0, meta.dtype));
  return context.call("convolution", {padded, ones, ir::Argument(), ir::Argument::ints(window.strides),
                                      ir::Argument::ints(std::vector<int64_t>(spatial, 0)), ir::Argument::ints(window.dilations),
                                      false, ir::Argument::ints(std::vector<int64_t>(spatial, 0)), channels});
}

// The extra padding at the end of each spatial dim that ceil_mode needs (its last window may
// start inside the input or its front padding and run past the end).
std::vector<int64_t> ceil_mode_extra(const OnnxNodeContext& context, const ir::SymShape& shape, const WindowAttributes& window,
                                     bool ceil_mode) {
  size_t spatial = window.kernel.size();
  std::vector<int64_t> extra(spatial, 0);
  if (!ceil_mode) return extra;
  for (size_t i = 0; i < spatial; ++i) {
    if (!shape[i + 2].is_constant()) context.fail("ceil_mode needs static spatial sizes");
    int64_t padded = shape[i + 2].constant() + window.padding.begin[i] + window.padding.end[i];
    int64_t span = window.dilations[i] * (window.kernel[i] - 1) + 1;
    int64_t floor_count = (padded - span) / window.strides[i] + 1;
    int64_t ceil_count = (padded - span + window.strides[i] - 1) / window.strides[i] + 1;
    if ((ceil_count - 1) * window.strides[i] >= shape[i + 2].constant() + window.padding.begin[i]) ceil_count = floor_count;
    extra[i] = std::max<int64_t>(0, (ceil_count - 1) * window.strides[i] + span - padded);
  }
  return extra;
}

// AveragePool with dilations: window sums over the zero-padded input divided by the count of
// the elements each window covers (input only, or input and pads with count_include_pad;
// never the extension ceil_mode adds).
void convert_dilated_average_pool(OnnxNodeContext& context, ir::Node* x, const WindowAttributes& window, bool ceil_mode,
                                  bool count_include_pad) {
  std::vector<int64_t> extra = ceil_mode_extra(context, x->value().shape, window, ceil_mode);
  ir::Node* sums = window_sum(context, x, window, extra, 0.0);
  ir::Node* ones = context.call("full_like", {x, 1.0});
  ir::Node* counts = window_sum(context, ones, window, extra, count_include_pad ? 1.0 : 0.0);
  context.emit(0, "div", {sums, counts});
}

// LpPool: (sum over the window of |x|^p)^(1/p).
void convert_lp_pool(OnnxNodeContext& context) {
  ir::Node* x = context.tensor(0);
  WindowAttributes window = window_attributes(context, x->value().shape, nullptr);
  double p = double(context.int_attribute("p", 2));
  if (p <= 0) context.fail("p must be positive, but it is ", p);
  std::vector<int64_t> extra = ceil_mode_extra(context, x->value().shape, window, context.int_attribute("ceil_mode", 0) != 0);
  ir::Node* powered = p == 2 ? context.call("mul", {x, x}) : context.call("pow", {context.call("abs", {x}), p});
  ir::Node* sums = window_sum(context, powered, window, extra, 0.0);
  if (p == 2) return void(context.emit(0, "sqrt", {sums}));
  context.emit(0, "pow", {sums, 1.0 / p});
}

void convert_det(OnnxNodeContext& context) {
  if (context.rank(0) < 2) context.fail("the input must be [..., M, M]");
  context.emit(0, "det", {context.tensor(0)});
}

void convert_average_pool(OnnxNodeContext& context) {
  ir::Node* x = context.tensor(0);
  WindowAttributes window = window_attributes(context, x->value().shape, nullptr);
  bool ceil_mode = context.int_attribute("ceil_mode", 0) != 0;
  bool count_include_pad = context.int_attribute("count_include_pad", 0) != 0;
  for (int64_t dilation : window.dilations)
    if (dilation != 1) return convert_dilated_average_pool(context, x, window, ceil_mode, count_include_pad);
  auto pool = [&](ir::Node* input, const std::vector<int64_t>& padding, bool include_pad, bool last) {
    std::vector<ir::Argument> args = {input, ir::Argument::ints(window.kernel), ir::Argument::ints(window.strides),
                                      ir::Argument::ints(padding), ceil_mode, include_pad};
    return last ? context.emit(0, "avg_pool", args) : context.call("avg_pool", args);
  };
  if (pool_padding_fits(window)) {
    pool(x, window.padding.begin, count_include_pad, true);
    return;
  }
  std::vector<int64_t> none(window.kernel.size(), 0);
  ir::Node* padded = pad_input(context, x, window.padding, 0.0);
  if (count_include_pad) {
    pool(padded, none, true, true);
    return;
  }
  // Average over the real elements only: the mean of the zero-padded input divided by the
  // mean of a padded mask of ones.
  ir::Node* ones = context.call("full_like", {x, 1.0});
  ir::Node* mask = pad_input(context, ones, window.padding, 0.0);
  context.emit(0, "div", {pool(padded, none, true, false), pool(mask, none, true, false)});
}

void convert_global_pool(OnnxNodeContext& context, const std::string& target) {
  int64_t rank = context.rank(0);
  if (rank < 3) context.fail("the input must have rank 3 or more (N, C, spatial dims)");
  context.emit(0, target, {context.tensor(0), ir::Argument::ints(dims_from(2, rank)), true});
}

// Softmax/LogSoftmax: over one axis from opset 13; before, over the input flattened to 2-d at
// `axis` (default 1).
void convert_softmax(OnnxNodeContext& context, const std::string& target) {
  int64_t rank = context.rank(0);
  bool per_axis = context.opset() >= 13;
  int64_t axis = context.wrap_axis(context.int_attribute("axis", per_axis ? -1 : 1), std::max<int64_t>(rank, 1));
  ir::Node* x = context.tensor(0);
  if (per_axis || axis == rank - 1) {
    context.emit(0, target, {x, per_axis ? axis : rank - 1});
    return;
  }
  ir::SymShape shape = x->value().shape;
  ir::SymInt outer = 1, inner = 1;
  for (int64_t d = 0; d < rank; ++d) (d < axis ? outer : inner) *= shape[size_t(d)];
  ir::Node* flat = context.call("reshape", {x, ir::Argument::sym_ints({outer, inner})});
  context.emit(0, "reshape", {context.call(target, {flat, int64_t(1)}), ir::Argument::sym_ints(shape)});
}

}  // namespace

void register_onnx_nn_ops(OnnxOpTable& table) {
  table.add("MatMul", convert_matmul);
  table.add("Gemm", convert_gemm);
  table.add("Conv", convert_conv);
  table.add("ConvTranspose", convert_conv_transpose);
  table.add("MaxPool", convert_max_pool);
  table.add("AveragePool", convert_average_pool);
  table.add("LpPool", convert_lp_pool);
  table.add("Det", convert_det);
  table.add("GlobalAveragePool", [](OnnxNodeContext& c) { convert_global_pool(c, "mean"); });
  table.add("GlobalMaxPool", [](OnnxNodeContext& c) { convert_global_pool(c, "amax"); });
  table.add("Softmax", [](OnnxNodeContext& c) { convert_softmax(c, "softmax"); });
  table.add("LogSoftmax", [](OnnxNodeContext& c) { convert_softmax(c, "log_softmax"); });
}

}  // namespace kiln::frontends

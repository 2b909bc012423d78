// ONNX's linear quantization on int8/uint8/int16/uint16 tensors, as its reference defines it:
//  - QuantizeLinear: saturate(round_half_even(x / scale) + zero_point) in the zero point's
//    type (uint8 when there is none, or output_dtype); scale and zero point per tensor, per
//    axis or per block (block_size: each value repeated block_size times along the axis);
//  - DequantizeLinear: (x - zero_point) * scale, in the scale's type;
//  - DynamicQuantizeLinear: uint8 with the scale and zero point of x's range widened to 0;
//  - QLinearMatMul, QLinearConv: the integer product of the zero-point-shifted operands (in
//    f64, exact for 8-bit operands), scaled by a_scale * b_scale / y_scale, rounded, shifted by
//    y_zero_point and saturated;
//  - MatMulInteger, ConvInteger: that integer product as int32.
// Scales and zero points may be graph inputs: everything is computed in the graph.
#include "frontends/onnx/onnx_op_helpers.h"
#include "frontends/onnx/onnx_op_table.h"

namespace kiln::frontends {

namespace {

using ir::SymInt;

std::pair<double, double> integer_range(DType dtype) {
  if (dtype == DType::u8) return {0, 255};
  if (dtype == DType::i8) return {-128, 127};
  if (dtype == DType::i16) return {-32768, 32767};
  if (dtype == DType::u16) return {0, 65535};
  if (dtype == DType::i32) return {-2147483648.0, 2147483647.0};
  throw InternalError("no quantized range for this dtype");
}

// Quantization parameter `index` (a scale or zero point) shaped to broadcast against an input
// of `shape`: a one-element value as it is, a vector along `axis`, or a blocked tensor
// repeated block_size times along `axis` (and cut to the input's size).
ir::Node* broadcast_parameter(OnnxNodeContext& context, size_t index, const ir::SymShape& shape, int64_t axis,
                              int64_t block_size) {
  ir::Node* value = context.tensor(index);
  const ir::TensorMeta& meta = value->value();
  int64_t rank = int64_t(shape.size());
  if (meta.rank() == 0 || (meta.rank() == 1 && meta.shape[0] == SymInt(1) && block_size == 0)) {
    return meta.rank() == 0 ? value : context.call("reshape", {value, ir::Argument::ints({})});
  }
  axis = context.wrap_axis(axis, rank);  // only a per-axis or blocked parameter needs it
  if (block_size <= 0) {
    if (meta.rank() != 1) context.fail("input ", index, " must be a scalar or a vector along axis ", axis);
    ir::SymShape target(size_t(rank), SymInt(1));
    target[size_t(axis)] = meta.shape[0];
    return context.call("reshape", {value, ir::Argument::sym_ints(target)});
  }
  if (meta.rank() != rank) context.fail("input ", index, " must have the input's rank for blocked quantization");
  ir::SymShape expanded = meta.shape;
  expanded.insert(expanded.begin() + axis + 1, SymInt(block_size));
  ir::SymShape merged = meta.shape;
  merged[size_t(axis)] = meta.shape[size_t(axis)] * SymInt(block_size);
  ir::Node* repeated = context.call("unsqueeze", {value, axis + 1});
  repeated = context.call("expand", {repeated, ir::Argument::sym_ints(expanded)});
  repeated = context.call("reshape", {repeated, ir::Argument::sym_ints(merged)});
  if (!(merged[size_t(axis)] == shape[size_t(axis)]))
    repeated = context.call("slice", {repeated, axis, int64_t(0), shape[size_t(axis)]});
  return repeated;
}

ir::Node* as(OnnxNodeContext& context, ir::Node* value, DType dtype) {
  return value->value().dtype == dtype ? value : context.call("cast", {value, dtype});
}

// round, shift, saturate and cast: the common tail of the quantizing ops (in `value`'s float type).
ir::Node* quantize(OnnxNodeContext& context, ir::Node* value, ir::Node* zero_point, DType dtype) {
  DType work = value->value().dtype;
  ir::Node* rounded = context.call("round", {value});
  if (zero_point) rounded = context.call("add", {rounded, as(context, zero_point, work)});
  auto [low, high] = integer_range(dtype);
  return context.call("cast", {context.call("clamp", {rounded, low, high}), dtype});
}

void convert_quantize_linear(OnnxNodeContext& context) {
  ir::Node* x = context.tensor(0);
  const ir::SymShape& shape = x->value().shape;
  int64_t axis = context.int_attribute("axis", 1);
  int64_t block_size = context.int_attribute("block_size", 0);
  DType dtype = DType::u8;
  if (context.has_input(2)) {
    dtype = context.dtype(2);
  } else if (const auto* attribute = context.attribute("output_dtype"); attribute && attribute->i() != 0) {
    std::optional<DType> wanted = dtype_from_onnx(int32_t(attribute->i()));
    if (!wanted) context.fail("output_dtype ", onnx_type_name(int32_t(attribute->i())), " is not supported");
    dtype = *wanted;
  }
  if (dtype != DType::u8 && dtype != DType::i8 && dtype != DType::i16 && dtype != DType::u16)
    context.fail("quantizing to ", dtype_name(dtype), " is not supported (int8, uint8, int16, uint16)");
  DType work = is_floating(x->value().dtype) && x->value().dtype != DType::f64 ? DType::f32 : DType::f64;
  ir::Node* scale = as(context, broadcast_parameter(context, 1, shape, axis, block_size), work);
  ir::Node* zero_point = context.has_input(2) ? broadcast_parameter(context, 2, shape, axis, block_size) : nullptr;
  ir::Node* result = quantize(context, context.call("div", {as(context, x, work), scale}), zero_point, dtype);
  context.set_output(0, result);
}

void convert_dequantize_linear(OnnxNodeContext& context) {
  ir::Node* x = context.tensor(0);
  if (!is_integral(x->value().dtype)) context.fail("dequantizing ", dtype_name(x->value().dtype), " is not supported");
  const ir::SymShape& shape = x->value().shape;
  int64_t axis = context.int_attribute("axis", 1);
  int64_t block_size = context.int_attribute("block_size", 0);
  ir::Node* scale = broadcast_parameter(context, 1, shape, axis, block_size);
  DType out = scale->value().dtype;
  ir::Node* value = as(context, x, DType::f32);
  if (context.has_input(2))
    value = context.call("sub", {value, as(context, broadcast_parameter(context, 2, shape, axis, block_size), DType::f32)});
  context.emit(0, "cast", {context.call("mul", {value, as(context, scale, DType::f32)}), out});
}

void convert_dynamic_quantize_linear(OnnxNodeContext& context) {
  ir::Node* x = as(context, context.tensor(0), DType::f32);
  ir::Node* high = context.call("maximum", {context.call("amax", {x}), 0.0});
  ir::Node* low = context.call("minimum", {context.call("amin", {x}), 0.0});
  ir::Node* range = context.call("sub", {high, low});
  ir::Node* spread = context.call("where", {context.call("eq", {high, low}), 1.0, range});
  ir::Node* scale = context.call("div", {spread, 255.0});
  ir::Node* zero = context.call("clamp", {context.call("sub", {0.0, context.call("div", {low, scale})}), 0.0, 255.0});
  ir::Node* zero_rounded = context.call("round", {zero});
  ir::Node* y = quantize(context, context.call("div", {x, scale}), zero_rounded, DType::u8);
  context.set_output(0, y);
  if (context.output_used(1)) context.emit(1, "cast", {scale, context.dtype(0)});
  if (context.output_used(2)) context.emit(2, "cast", {zero_rounded, DType::u8});
}

// Input `index` minus its zero point `zero_index` (absent: 0), as f64; a per-channel zero
// point of a weight broadcasts along `channel_axis` (-1: a per-row/column vector as given).
ir::Node* shifted(OnnxNodeContext& context, size_t index, size_t zero_index, int64_t channel_axis) {
  ir::Node* value = as(context, context.tensor(index), DType::f64);
  if (!context.has_input(zero_index)) return value;
  ir::Node* zero = as(context, context.tensor(zero_index), DType::f64);
  const ir::TensorMeta& meta = zero->value();
  if (meta.rank() == 1 && meta.shape[0] == SymInt(1)) zero = context.call("reshape", {zero, ir::Argument::ints({})});
  else if (meta.rank() == 1 && channel_axis >= 0) {
    ir::SymShape target(size_t(value->value().rank()), SymInt(1));
    target[size_t(channel_axis)] = meta.shape[0];
    zero = context.call("reshape", {zero, ir::Argument::sym_ints(target)});
  }
  return context.call("sub", {value, zero});
}

// MatMulInteger's zero points: a's per row ([M] as [M, 1]), b's per column ([N]).
ir::Node* matmul_operand(OnnxNodeContext& context, size_t index, size_t zero_index, bool rows) {
  ir::Node* value = as(context, context.tensor(index), DType::f64);
  if (!context.has_input(zero_index)) return value;
  ir::Node* zero = as(context, context.tensor(zero_index), DType::f64);
  const ir::TensorMeta& meta = zero->value();
  if (meta.rank() == 1 && !(meta.shape[0] == SymInt(1)) && rows) zero = context.call("unsqueeze", {zero, int64_t(-1)});
  else if (meta.rank() == 1 && meta.shape[0] == SymInt(1)) zero = context.call("reshape", {zero, ir::Argument::ints({})});
  return context.call("sub", {value, zero});
}

// The requantized result: product * (scale_a * scale_b / y_scale), rounded, shifted, saturated.
void requantize(OnnxNodeContext& context, ir::Node* product, size_t a_scale, size_t b_scale, size_t y_scale, size_t y_zero,
                DType fallback_dtype) {
  ir::Node* factor = context.call("div", {context.call("mul", {context.tensor(a_scale), context.tensor(b_scale)}), context.tensor(y_scale)});
  ir::Node* scaled = context.call("mul", {product, as(context, factor, DType::f64)});
  DType dtype = context.has_input(y_zero) ? context.dtype(y_zero) : fallback_dtype;
  ir::Node* zero = context.has_input(y_zero) ? context.tensor(y_zero) : nullptr;
  if (zero && zero->value().rank() == 1 && zero->value().shape[0] == SymInt(1))
    zero = context.call("reshape", {zero, ir::Argument::ints({})});
  context.set_output(0, quantize(context, scaled, zero, dtype));
}

ir::Node* integer_convolution(OnnxNodeContext& context, ir::Node* x, ir::Node* w) {
  const ir::SymShape& shape = x->value().shape;
  size_t spatial = shape.size() - 2;
  std::vector<int64_t> kernel;
  for (size_t i = 2; i < w->value().shape.size(); ++i) {
    if (!w->value().shape[i].is_constant()) context.fail("the weight's kernel dims must be static");
    kernel.push_back(w->value().shape[i].constant());
  }
  std::vector<int64_t> strides = context.ints_attribute("strides", std::vector<int64_t>(spatial, 1));
  std::vector<int64_t> dilations = context.ints_attribute("dilations", std::vector<int64_t>(spatial, 1));
  WindowPadding padding = window_padding(context, shape, kernel, strides, dilations);
  std::vector<int64_t> pads = padding.begin;
  if (!padding.symmetric()) {
    x = context.call("pad", {x, ir::Argument::ints(torch_pad_list(padding.begin, padding.end)), "constant", 0.0});
    pads.assign(spatial, 0);
  }
  return context.call("convolution", {x, w, ir::Argument(), ir::Argument::ints(strides), ir::Argument::ints(pads),
                                      ir::Argument::ints(dilations), false, ir::Argument::ints(std::vector<int64_t>(spatial, 0)),
                                      context.int_attribute("group", 1)});
}

void convert_qlinear_matmul(OnnxNodeContext& context) {
  ir::Node* product = context.call("matmul", {matmul_operand(context, 0, 2, true), matmul_operand(context, 3, 5, false)});
  requantize(context, product, 1, 4, 6, 7, context.dtype(0));
}

void convert_qlinear_conv(OnnxNodeContext& context) {
  ir::Node* product = integer_convolution(context, shifted(context, 0, 2, -1), shifted(context, 3, 5, 0));
  if (context.has_input(8)) {  // the int32 bias, one per output channel
    ir::SymShape target(size_t(product->value().rank()), SymInt(1));
    target[1] = product->value().shape[1];
    product = context.call("add", {product, context.call("reshape", {as(context, context.tensor(8), DType::f64), ir::Argument::sym_ints(target)})});
  }
  requantize(context, product, 1, 4, 6, 7, context.dtype(0));
}

void convert_matmul_integer(OnnxNodeContext& context) {
  ir::Node* product = context.call("matmul", {matmul_operand(context, 0, 2, true), matmul_operand(context, 1, 3, false)});
  context.emit(0, "cast", {product, DType::i32});
}

void convert_conv_integer(OnnxNodeContext& context) {
  ir::Node* product = integer_convolution(context, shifted(context, 0, 2, -1), shifted(context, 1, 3, 0));
  context.emit(0, "cast", {product, DType::i32});
}

}  // namespace

void register_onnx_quantization_ops(OnnxOpTable& table) {
  table.add("QuantizeLinear", convert_quantize_linear);
  table.add("DequantizeLinear", convert_dequantize_linear);
  table.add("DynamicQuantizeLinear", convert_dynamic_quantize_linear);
  table.add("QLinearMatMul", convert_qlinear_matmul);
  table.add("QLinearConv", convert_qlinear_conv);
  table.add("MatMulInteger", convert_matmul_integer);
  table.add("ConvInteger", convert_conv_integer);
}

}  // namespace kiln::frontends

// ONNX ops on shapes and views: Shape, Size, Reshape, Flatten, Transpose, Squeeze,
// Unsqueeze (axes an attribute before opset 13, an input after), Expand, Tile,
// ConstantOfShape, Range. Shape and Size give values known at import time (symbolic where
// dims are); Reshape, Expand, ConstantOfShape, Tile and Range read such values as sizes.
#include "frontends/onnx/onnx_op_helpers.h"
#include "frontends/onnx/onnx_op_table.h"

namespace kiln::frontends {

namespace {

using ir::SymInt;
using ir::SymShape;

void convert_shape(OnnxNodeContext& context) {
  SymShape shape = context.shape(0);
  int64_t rank = int64_t(shape.size());
  auto clamp = [rank](int64_t bound) { return std::clamp<int64_t>(bound < 0 ? bound + rank : bound, 0, rank); };
  int64_t start = clamp(context.int_attribute("start", 0));
  int64_t end = context.attribute("end") ? clamp(context.int_attribute("end", rank)) : rank;
  SymShape selected;
  for (int64_t d = start; d < end; ++d) selected.push_back(shape[size_t(d)]);
  context.set_output(0, OnnxValue::of_ints(selected, false));
}

void convert_size(OnnxNodeContext& context) {
  SymInt count = 1;
  for (const SymInt& dim : context.shape(0)) count *= dim;
  context.set_output(0, OnnxValue::of_ints({count}, true));
}

// The sizes a shape-like input (Reshape's shape, Expand's shape, ...) holds.
SymShape size_list(const OnnxNodeContext& context, size_t index, std::string_view what) {
  return context.known_ints(index, what);
}

void convert_reshape(OnnxNodeContext& context) {
  SymShape requested = size_list(context, 1, "shape");
  SymShape input = context.shape(0);
  bool allow_zero = context.int_attribute("allowzero", 0) != 0;
  const OnnxValue& data = context.input(0);
  SymShape shape;
  for (size_t i = 0; i < requested.size(); ++i) {
    const SymInt& size = requested[i];
    if (!allow_zero && size.is_constant() && size.constant() == 0) {
      if (i >= input.size()) context.fail("shape[", i, "] is 0 (copy the input's dim), but the input has rank ", input.size());
      shape.push_back(input[i]);
    } else {
      shape.push_back(size);
    }
  }
  // Reshaping a value known at import time keeps it known.
  if (data.is_symbolic() && shape.size() <= 1) {
    size_t count = data.symbolic->size();
    bool to_scalar = shape.empty() && count == 1;
    bool to_vector = shape.size() == 1 && shape[0].is_constant() &&
                     (shape[0].constant() == -1 || shape[0].constant() == int64_t(count));
    if (to_scalar || to_vector) return context.set_output(0, OnnxValue::of_ints(*data.symbolic, to_scalar, data.symbolic_dtype));
  }
  context.emit(0, "reshape", {context.tensor(0), ir::Argument::sym_ints(shape)});
}

void convert_flatten(OnnxNodeContext& context) {
  SymShape shape = context.shape(0);
  int64_t rank = int64_t(shape.size());
  int64_t axis = context.int_attribute("axis", 1);
  if (axis < -rank || axis > rank) context.fail("axis ", axis, " is out of range for rank ", rank);
  if (axis < 0) axis += rank;
  SymInt outer = 1, inner = 1;
  for (int64_t d = 0; d < rank; ++d) (d < axis ? outer : inner) *= shape[size_t(d)];
  context.emit(0, "reshape", {context.tensor(0), ir::Argument::sym_ints({outer, inner})});
}

void convert_transpose(OnnxNodeContext& context) {
  int64_t rank = context.rank(0);
  std::vector<int64_t> perm = context.ints_attribute("perm");
  if (perm.empty())
    for (int64_t d = rank - 1; d >= 0; --d) perm.push_back(d);
  if (int64_t(perm.size()) != rank) context.fail("perm has ", perm.size(), " entries for a tensor of rank ", rank);
  context.emit(0, "permute", {context.tensor(0), ir::Argument::ints(perm)});
}

// Squeeze/Unsqueeze axes: attribute before opset 13, optional input from 13.
std::optional<std::vector<int64_t>> axes_of(const OnnxNodeContext& context) {
  if (context.opset() >= 13) {
    if (!context.has_input(1)) return std::nullopt;
    return context.constant_ints(1, "axes");
  }
  return context.maybe_ints_attribute("axes");
}

void convert_squeeze(OnnxNodeContext& context) {
  int64_t rank = context.rank(0);
  std::optional<std::vector<int64_t>> axes = axes_of(context);
  const OnnxValue& data = context.input(0);
  if (data.is_symbolic() && !data.symbolic_scalar && data.symbolic->size() == 1)
    return context.set_output(0, OnnxValue::of_ints(*data.symbolic, true, data.symbolic_dtype));
  if (!axes) {
    context.emit(0, "squeeze", {context.tensor(0)});
    return;
  }
  std::vector<int64_t> dims;
  SymShape shape = context.shape(0);
  for (int64_t axis : *axes) {
    int64_t dim = context.wrap_axis(axis, rank);
    if (!(shape[size_t(dim)] == SymInt(1)))
      context.fail("cannot squeeze dim ", dim, " of size ", shape[size_t(dim)], " (only size-1 dims)");
    dims.push_back(dim);
  }
  context.emit(0, "squeeze", {context.tensor(0), ir::Argument::ints(dims)});
}

void convert_unsqueeze(OnnxNodeContext& context) {
  std::optional<std::vector<int64_t>> axes = axes_of(context);
  if (!axes || axes->empty()) context.fail("axes are required");
  int64_t rank = context.rank(0) + int64_t(axes->size());
  std::vector<int64_t> dims;
  for (int64_t axis : *axes) dims.push_back(context.wrap_axis(axis, rank));
  std::sort(dims.begin(), dims.end());
  if (std::adjacent_find(dims.begin(), dims.end()) != dims.end()) context.fail("axes repeat a dim");
  const OnnxValue& data = context.input(0);
  if (data.is_symbolic() && data.symbolic_scalar && dims == std::vector<int64_t>{0})
    return context.set_output(0, OnnxValue::of_ints(*data.symbolic, false, data.symbolic_dtype));
  ir::Node* result = context.tensor(0);
  for (size_t i = 0; i < dims.size(); ++i)
    result = i + 1 == dims.size() ? context.emit(0, "unsqueeze", {result, dims[i]}) : context.call("unsqueeze", {result, dims[i]});
}

// ONNX's Expand broadcasts both ways: the result has the broadcast of the input's shape and
// the requested one.
void convert_expand(OnnxNodeContext& context) {
  SymShape requested = size_list(context, 1, "shape");
  SymShape input = context.shape(0);
  size_t rank = std::max(requested.size(), input.size());
  SymShape shape(rank);
  for (size_t i = 0; i < rank; ++i) {
    SymInt a = i + input.size() >= rank ? input[i + input.size() - rank] : SymInt(1);
    SymInt b = i + requested.size() >= rank ? requested[i + requested.size() - rank] : SymInt(1);
    if (b == SymInt(1) || a == b) shape[i] = a;
    else if (a == SymInt(1)) shape[i] = b;
    else if (a.is_constant() && b.is_constant()) context.fail("cannot broadcast ", ir::shape_string(input), " to ", ir::shape_string(requested));
    else shape[i] = b.is_constant() ? b : a;
  }
  if (shape == input) return context.set_output(0, context.input(0));
  context.emit(0, "expand", {context.tensor(0), ir::Argument::sym_ints(shape)});
}

void convert_tile(OnnxNodeContext& context) {
  SymShape repeats = size_list(context, 1, "repeats");
  SymShape shape = context.shape(0);
  if (repeats.size() != shape.size()) context.fail("repeats has ", repeats.size(), " values for a tensor of rank ", shape.size());
  // [d0, d1] -> [1, d0, 1, d1] -> expand [r0, d0, r1, d1] -> reshape [r0*d0, r1*d1].
  SymShape interleaved, expanded, result;
  for (size_t i = 0; i < shape.size(); ++i) {
    interleaved.insert(interleaved.end(), {SymInt(1), shape[i]});
    expanded.insert(expanded.end(), {repeats[i], shape[i]});
    result.push_back(repeats[i] * shape[i]);
  }
  ir::Node* x = context.call("reshape", {context.tensor(0), ir::Argument::sym_ints(interleaved)});
  x = context.call("expand", {x, ir::Argument::sym_ints(expanded)});
  context.emit(0, "reshape", {x, ir::Argument::sym_ints(result)});
}

void convert_constant_of_shape(OnnxNodeContext& context) {
  SymShape shape = size_list(context, 0, "shape");
  Tensor value = context.attribute("value") ? context.tensor_attribute("value") : Tensor::scalar(0.0, DType::f32);
  if (value.numel() != 1) context.fail("attribute 'value' must hold one element");
  double fill = value.flat_double(0);
  ir::Argument fill_value = is_integral(value.dtype()) ? ir::Argument(value.flat_int(0)) : scalar_argument(fill, value.dtype());
  context.emit(0, "full", {ir::Argument::sym_ints(shape), fill_value}, {{"dtype", value.dtype()}});
}

void convert_range(OnnxNodeContext& context) {
  DType dtype = context.dtype(0);
  if (!is_integral(dtype))  // a floating range needs all three values
    for (size_t i = 0; i < 3; ++i) context.constant_input(i, i == 0 ? "start" : i == 1 ? "limit" : "delta");
  if (context.constant(0) && context.constant(1) && context.constant(2)) {
    auto value = [&](size_t i) { return scalar_argument(context.constant(i)->flat_double(0), dtype); };
    if (is_integral(dtype)) {
      context.emit(0, "arange", {context.constant(0)->flat_int(0), context.constant(1)->flat_int(0), context.constant(2)->flat_int(0)},
                   {{"dtype", dtype}});
    } else {
      context.emit(0, "arange", {value(0), value(1), value(2)}, {{"dtype", dtype}});
    }
    return;
  }
  // An integer range with a symbolic limit: iota of the element count.
  SymShape start_values = context.known_ints(0, "start"), limit_values = context.known_ints(1, "limit"),
           delta_values = context.known_ints(2, "delta");
  const SymShape *start = &start_values, *limit = &limit_values, *delta = &delta_values;
  if (start->size() != 1 || limit->size() != 1 || delta->size() != 1 ||
      !(*start)[0].is_constant() || !(*delta)[0].is_constant() || (*delta)[0].constant() <= 0)
    context.fail("Range needs inputs known when the model is imported (a symbolic limit needs a constant start and a "
                 "positive constant delta)");
  int64_t first = (*start)[0].constant(), step = (*delta)[0].constant();
  SymInt count = max(floordiv((*limit)[0] - SymInt(first) + SymInt(step - 1), SymInt(step)), SymInt(0));
  context.emit(0, "iota", {count}, {{"start", first}, {"step", step}, {"dtype", dtype}});
}

}  // namespace

void register_onnx_shape_ops(OnnxOpTable& table) {
  table.add("Shape", convert_shape);
  table.add("Size", convert_size);
  table.add("Reshape", convert_reshape);
  table.add("Flatten", convert_flatten);
  table.add("Transpose", convert_transpose);
  table.add("Squeeze", convert_squeeze);
  table.add("Unsqueeze", convert_unsqueeze);
  table.add("Expand", convert_expand);
  table.add("Tile", convert_tile);
  table.add("ConstantOfShape", convert_constant_of_shape);
  table.add("Range", convert_range);
}

}  // namespace kiln::frontends

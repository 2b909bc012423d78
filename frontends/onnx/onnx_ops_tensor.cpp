// ONNX ops that create, select and move tensor data: Constant, Identity (of any value: a
// tensor, a sequence or an optional), Dropout (inference), Concat, Split, Slice, Gather, GatherElements, ScatterElements, Trilu, Pad.
// Selecting from a value known at import time (Gather/Slice/Concat of shape values) keeps it
// known; negative indices count from the end as ONNX says.
#include <algorithm>
#include <limits>
#include <set>

#include "frontends/onnx/onnx_op_helpers.h"
#include "frontends/onnx/onnx_op_table.h"

namespace kiln::frontends {

namespace {

using ir::SymInt;
using ir::SymShape;

void convert_constant(OnnxNodeContext& context) {
  if (context.attribute("value")) return context.set_output(0, OnnxValue::of_constant(context.tensor_attribute("value")));
  if (const auto* attribute = context.attribute("value_float"))
    return context.set_output(0, OnnxValue::of_constant(Tensor::scalar(attribute->f(), DType::f32)));
  if (const auto* attribute = context.attribute("value_int"))
    return context.set_output(0, OnnxValue::of_constant(Tensor::scalar(double(attribute->i()), DType::i64)));
  if (const auto* attribute = context.attribute("value_floats")) {
    std::vector<double> values(attribute->floats().begin(), attribute->floats().end());
    return context.set_output(0, OnnxValue::of_constant(Tensor::from_doubles({int64_t(values.size())}, values, DType::f32)));
  }
  if (const auto* attribute = context.attribute("value_ints")) {
    std::vector<int64_t> values(attribute->ints().begin(), attribute->ints().end());
    Tensor tensor = Tensor::empty({int64_t(values.size())}, DType::i64);
    std::copy(values.begin(), values.end(), tensor.data<int64_t>());
    return context.set_output(0, OnnxValue::of_constant(tensor));
  }
  context.fail("only tensor, float and int values are supported (not sparse or string constants)");
}

void convert_dropout(OnnxNodeContext& context) {
  if (context.has_input(2)) {
    const Tensor& training = context.constant_input(2, "training_mode");
    // Training with ratio 0 drops nothing: the identity, as in inference.
    bool drops = context.has_input(1) ? context.constant_scalar(1, "ratio") != 0 : true;
    if (training.flat_double(0) != 0 && drops)
      context.fail("training_mode=true with a nonzero ratio is not supported (its random mask; inference only)");
  }
  context.set_output(0, context.input(0));
  if (context.output_used(1)) context.emit(1, "full_like", {context.tensor(0), true}, {{"dtype", DType::boolean}});
}

void convert_concat(OnnxNodeContext& context) {
  if (context.input_count() == 0) context.fail("needs at least one input");
  int64_t rank = context.rank(0);
  int64_t axis = context.wrap_axis(context.int_attribute("axis", 0), rank);
  bool any_symbolic = false, all_known = rank == 1;
  SymShape elements;
  for (size_t i = 0; i < context.input_count() && all_known; ++i) {
    std::optional<SymShape> values = context.int_values(i);
    any_symbolic = any_symbolic || context.input(i).is_symbolic();
    all_known = values && context.rank(i) == 1;
    if (all_known) elements.insert(elements.end(), values->begin(), values->end());
  }
  if (any_symbolic && all_known) return context.set_output(0, OnnxValue::of_ints(elements, false, context.dtype(0)));
  std::vector<ir::Argument> parts;
  for (size_t i = 0; i < context.input_count(); ++i) parts.emplace_back(context.tensor(i));
  context.emit(0, "cat", {ir::Argument(parts), axis});
}

void convert_split(OnnxNodeContext& context) {
  int64_t rank = context.rank(0);
  int64_t axis = context.wrap_axis(context.int_attribute("axis", 0), rank);
  SymInt size = context.shape(0)[size_t(axis)];
  size_t count = context.output_count();
  std::vector<SymInt> sizes;
  std::vector<int64_t> given;
  if (context.opset() >= 13) {
    if (context.has_input(1)) given = context.constant_ints(1, "split");
  } else {
    given = context.ints_attribute("split");
  }
  if (!given.empty()) {
    if (given.size() != count) context.fail("split has ", given.size(), " sizes for ", count, " outputs");
    sizes.assign(given.begin(), given.end());
  } else {
    int64_t parts = context.opset() >= 18 && context.attribute("num_outputs") ? context.int_attribute("num_outputs", 1) : int64_t(count);
    if (parts != int64_t(count)) context.fail("num_outputs is ", parts, " but the node has ", count, " outputs");
    if (size.is_constant()) {
      int64_t total = size.constant(), each = (total + parts - 1) / parts;
      for (int64_t i = 0; i < parts; ++i) sizes.emplace_back(std::max<int64_t>(0, std::min(each, total - i * each)));
    } else {
      sizes.assign(size_t(parts), floordiv(size, SymInt(parts)));
    }
  }
  SymInt start = 0;
  for (size_t i = 0; i < count; ++i) {
    if (context.output_used(i)) context.emit(i, "slice", {context.tensor(0), axis, start, start + sizes[i]});
    start += sizes[i];
  }
}

// The indices ONNX's Slice selects along a dim of static size `size`: a negative start or end
// counts from the end (start + size), then start is clamped to [0, size] for a positive step
// and to [0, size - 1] for a negative one, end to [0, size] or [-1, size - 1]; the indices
// run from start by step while before end. Bounds may be anything from INT64_MIN to INT64_MAX
// (exporters write INT64_MAX for "to the end" and INT64_MIN + 1 for "past the beginning").
std::vector<int64_t> slice_indices(int64_t start, int64_t end, int64_t step, int64_t size) {
  auto from_end = [size](int64_t bound) { return bound < 0 ? bound + size : bound; };  // no overflow: size >= 0
  start = from_end(start);
  end = from_end(end);
  if (step > 0) {
    start = std::clamp<int64_t>(start, 0, size);
    end = std::clamp<int64_t>(end, 0, size);
  } else {
    start = std::clamp<int64_t>(start, 0, size - 1);
    end = std::clamp<int64_t>(end, -1, size - 1);
  }
  // Counted in unsigned arithmetic: |step| may be 2^63, start - end fits (both within [-1, size]).
  uint64_t span = step > 0 ? (end > start ? uint64_t(end - start) : 0) : (start > end ? uint64_t(start - end) : 0);
  uint64_t magnitude = step > 0 ? uint64_t(step) : uint64_t(-(step + 1)) + 1;
  uint64_t count = span == 0 ? 0 : (span - 1) / magnitude + 1;
  std::vector<int64_t> indices;
  for (uint64_t k = 0; k < count; ++k) indices.push_back(start + int64_t(k) * step);
  return indices;
}

// A positive-step bound for Kiln's slice (Python clamping) on a symbolic dim or from a
// symbolic value: huge constants mean the end or the beginning.
SymInt python_bound(const SymInt& bound, const SymInt& size) {
  if (!bound.is_constant()) return bound;
  if (bound.constant() >= (int64_t(1) << 62)) return size;
  if (bound.constant() <= -(int64_t(1) << 62)) return SymInt(0);
  return bound;
}

void convert_slice(OnnxNodeContext& context) {
  SymShape starts = context.known_ints(1, "starts"), ends = context.known_ints(2, "ends");
  size_t count = starts.size();
  if (ends.size() != count) context.fail("starts and ends differ in length (", count, " and ", ends.size(), ")");
  int64_t rank = context.rank(0);
  std::vector<int64_t> axes = context.has_input(3) ? context.constant_ints(3, "axes") : dims_from(0, int64_t(count));
  std::vector<int64_t> steps = context.has_input(4) ? context.constant_ints(4, "steps") : std::vector<int64_t>(count, 1);
  if (axes.size() != count || steps.size() != count)
    context.fail("starts, ends, axes and steps differ in length (", count, ", ", count, ", ", axes.size(), ", ", steps.size(), ")");
  std::set<int64_t> seen;
  for (size_t i = 0; i < count; ++i) {
    if (steps[i] == 0) context.fail("steps cannot be 0");
    if (!seen.insert(context.wrap_axis(axes[i], rank)).second) context.fail("axes repeat dim ", context.wrap_axis(axes[i], rank));
  }
  auto constant_bounds = [&](size_t i) { return starts[i].is_constant() && ends[i].is_constant(); };

  const OnnxValue& data = context.input(0);
  if (data.is_symbolic() && !data.symbolic_scalar && count == 1 && constant_bounds(0)) {
    SymShape selected;
    for (int64_t index : slice_indices(starts[0].constant(), ends[0].constant(), steps[0], int64_t(data.symbolic->size())))
      selected.push_back((*data.symbolic)[size_t(index)]);
    return context.set_output(0, OnnxValue::of_ints(selected, false, data.symbolic_dtype));
  }

  ir::Node* result = context.tensor(0);
  for (size_t i = 0; i < count; ++i) {
    int64_t axis = context.wrap_axis(axes[i], rank);
    int64_t step = steps[i];
    SymInt dim = result->value().shape[size_t(axis)];
    // Cut from 0 at a size symbol whose min with this dim an op needed to be the symbol
    // (OnnxImportState::slices_cut_at): exactly that many elements, each index checked at run time.
    if (dim.is_constant() && step == 1 && starts[i] == SymInt(0) && ends[i].is_symbol() &&
        context.slices_cut_at(ends[i].free_symbols().front())) {
      ir::Node* indices = context.call("arange", {int64_t(0), ends[i]}, {{"dtype", DType::i64}});
      result = context.call("index_select", {result, axis, indices});
      continue;
    }
    if (!dim.is_constant() || !constant_bounds(i)) {
      if (step < 0) context.fail("a negative step along dim ", axis, " needs a static size and constant bounds");
      result = context.call("slice", {result, axis, python_bound(starts[i], dim), python_bound(ends[i], dim), step});
      continue;
    }
    std::vector<int64_t> indices = slice_indices(starts[i].constant(), ends[i].constant(), step, dim.constant());
    if (indices.empty()) {
      result = context.call("slice", {result, axis, int64_t(0), int64_t(0)});
    } else if (step > 0) {
      // One element: step 1 (a step as large as INT64_MAX would overflow the shape arithmetic).
      result = context.call("slice", {result, axis, indices.front(), indices.back() + 1, indices.size() == 1 ? int64_t(1) : step});
    } else {
      ir::Node* index = context.constant_node(Tensor::from_vector({int64_t(indices.size())}, indices, DType::i64));
      result = context.call("index_select", {result, axis, index});
    }
  }
  context.set_output(0, result);
}

// Indices known at import time, negatives counted from the end of `size`, range-checked.
Tensor wrapped_indices(const OnnxNodeContext& context, const Tensor& indices, int64_t size) {
  Tensor wrapped = Tensor::empty(indices.sizes(), DType::i64);
  for (int64_t i = 0; i < indices.numel(); ++i) {
    int64_t index = indices.flat_int(i);
    if (index < -size || index >= size) context.fail("index ", index, " is out of range for a dim of size ", size);
    wrapped.data<int64_t>()[i] = index < 0 ? index + size : index;
  }
  return wrapped;
}

// Run-time indices with negatives counted from the end of a static `size`.
ir::Node* wrap_runtime_indices(OnnxNodeContext& context, ir::Node* indices, const SymInt& size) {
  if (!size.is_constant()) return indices;  // a symbolic size: indices are taken as given (non-negative)
  ir::Node* negative = context.call("lt", {indices, int64_t(0)});
  return context.call("where", {negative, context.call("add", {indices, size.constant()}), indices});
}

void convert_gather(OnnxNodeContext& context) {
  int64_t rank = context.rank(0);
  int64_t axis = context.wrap_axis(context.int_attribute("axis", 0), rank);
  const OnnxValue& data = context.input(0);
  const Tensor* constant_indices = context.constant(1);
  if (data.is_symbolic() && !data.symbolic_scalar && constant_indices && constant_indices->dim() <= 1) {
    Tensor indices = wrapped_indices(context, *constant_indices, int64_t(data.symbolic->size()));
    SymShape selected;
    for (int64_t i = 0; i < indices.numel(); ++i) selected.push_back((*data.symbolic)[size_t(indices.flat_int(i))]);
    return context.set_output(0, OnnxValue::of_ints(selected, constant_indices->dim() == 0, data.symbolic_dtype));
  }
  SymShape data_shape = context.shape(0);
  SymInt size = data_shape[size_t(axis)];
  ir::Node* x = context.tensor(0);
  ir::Node* index = nullptr;
  SymShape index_shape = context.shape(1);
  if (constant_indices) {
    if (!size.is_constant()) context.fail("gathering constant indices along a symbolic dim is not supported");
    Tensor indices = wrapped_indices(context, *constant_indices, size.constant());
    if (indices.dim() == 0) {
      context.emit(0, "select", {x, axis, indices.flat_int(0)});
      return;
    }
    index = context.constant_node(indices.reshape({indices.numel()}));
  } else {
    index = wrap_runtime_indices(context, context.tensor(1), size);
    if (index_shape.size() != 1) index = context.call("reshape", {index, ir::Argument::ints({-1})});
  }
  if (index_shape.size() == 1) {
    context.emit(0, "index_select", {x, axis, index});
    return;
  }
  ir::Node* selected = context.call("index_select", {x, axis, index});
  SymShape shape(data_shape.begin(), data_shape.begin() + axis);
  shape.insert(shape.end(), index_shape.begin(), index_shape.end());
  shape.insert(shape.end(), data_shape.begin() + axis + 1, data_shape.end());
  context.emit(0, "reshape", {selected, ir::Argument::sym_ints(shape)});
}

// GatherElements and ScatterElements indices: constants wrapped now, run-time ones in the graph.
ir::Node* element_indices(OnnxNodeContext& context, size_t index, int64_t axis) {
  SymInt size = context.shape(0)[size_t(axis)];
  if (const Tensor* indices = context.constant(index); indices && size.is_constant())
    return context.constant_node(wrapped_indices(context, *indices, size.constant()));
  return wrap_runtime_indices(context, context.tensor(index), size);
}

void convert_gather_elements(OnnxNodeContext& context) {
  int64_t axis = context.wrap_axis(context.int_attribute("axis", 0), context.rank(0));
  context.emit(0, "gather", {context.tensor(0), axis, element_indices(context, 1, axis)});
}

void convert_scatter_elements(OnnxNodeContext& context) {
  int64_t axis = context.wrap_axis(context.int_attribute("axis", 0), context.rank(0));
  std::string reduction = context.string_attribute("reduction", "none");
  static const std::map<std::string, std::string> kReductions = {{"add", "sum"}, {"mul", "prod"}, {"max", "amax"}, {"min", "amin"}};
  ir::Kwargs kwargs;
  if (reduction != "none") {
    auto found = kReductions.find(reduction);
    if (found == kReductions.end()) context.fail("reduction '", reduction, "' is not one of none, add, mul, max, min");
    kwargs.emplace_back("reduce", found->second);
  }
  context.emit(0, "scatter", {context.tensor(0), axis, element_indices(context, 1, axis), context.tensor(2)}, kwargs);
}

void convert_trilu(OnnxNodeContext& context) {
  int64_t k = 0;
  if (context.has_input(1)) {
    std::vector<int64_t> values = context.constant_ints(1, "k");
    if (values.size() != 1) context.fail("k must have one element");
    k = values[0];
  }
  bool upper = context.int_attribute("upper", 1) != 0;
  context.emit(0, upper ? "triu" : "tril", {context.tensor(0), k});
}

void convert_pad(OnnxNodeContext& context) {
  int64_t rank = context.rank(0);
  std::vector<int64_t> pads = context.constant_ints(1, "pads");
  std::vector<int64_t> axes = context.has_input(3) ? context.constant_ints(3, "axes") : dims_from(0, rank);
  if (pads.size() != 2 * axes.size()) context.fail("pads has ", pads.size(), " values for ", axes.size(), " axes");
  std::vector<int64_t> begin(size_t(rank), 0), end(size_t(rank), 0);
  for (size_t i = 0; i < axes.size(); ++i) {
    int64_t dim = context.wrap_axis(axes[i], rank);
    begin[size_t(dim)] = pads[i];
    end[size_t(dim)] = pads[i + axes.size()];
  }
  std::string mode = context.string_attribute("mode", "constant");
  static const std::map<std::string, std::string> kModes = {
      {"constant", "constant"}, {"reflect", "reflect"}, {"edge", "replicate"}, {"wrap", "circular"}};
  auto found = kModes.find(mode);
  if (found == kModes.end()) context.fail("mode '", mode, "' is not one of constant, reflect, edge, wrap");
  // The trailing dims F.pad covers: from the first padded one (at least the last two but one
  // of a batched input for the non-constant modes, which pad 1-3 trailing dims).
  int64_t first = rank;
  for (int64_t d = 0; d < rank; ++d)
    if (begin[size_t(d)] != 0 || end[size_t(d)] != 0) {
      first = d;
      break;
    }
  if (first == rank) return context.set_output(0, context.input(0));
  if (mode != "constant") first = std::min(first, std::max<int64_t>(rank - 2, 1));
  std::vector<int64_t> trailing_begin(begin.begin() + first, begin.end()), trailing_end(end.begin() + first, end.end());
  ir::Argument pad_list = ir::Argument::ints(torch_pad_list(trailing_begin, trailing_end));
  if (mode != "constant") {
    context.emit(0, "pad", {context.tensor(0), pad_list, found->second});
    return;
  }
  double value = context.has_input(2) ? context.constant_scalar(2, "constant_value") : 0.0;
  context.emit(0, "pad", {context.tensor(0), pad_list, "constant", value});
}

}  // namespace

void register_onnx_tensor_ops(OnnxOpTable& table) {
  table.add("Constant", convert_constant);
  table.add("Identity", [](OnnxNodeContext& c) { c.set_output(0, c.input(0)); });
  table.add("Dropout", convert_dropout);
  table.add("Concat", convert_concat);
  table.add("Split", convert_split);
  table.add("Slice", convert_slice);
  table.add("Gather", convert_gather);
  table.add("GatherElements", convert_gather_elements);
  table.add("ScatterElements", convert_scatter_elements);
  table.add("Trilu", convert_trilu);
  table.add("Pad", convert_pad);
}

}  // namespace kiln::frontends

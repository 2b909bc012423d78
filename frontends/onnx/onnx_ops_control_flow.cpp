// ONNX control flow, as guarded specialization and unrolling (Kiln's graphs have no control
// flow of their own):
//  - If: a condition known at import time inlines its branch. A condition computed at run
//    time compiles both branches and selects their results elementwise (where) when they agree
//    in type and shape (sequences: element by element; two empty optionals: none); otherwise
//    the importer asks for the values the condition is computed
//    from (OnnxInputValuesNeeded: the model is specialized on them, one compiled graph per
//    branch taken).
//  - Loop: unrolled. The trip count and the loop condition must be known when the model is
//    imported (constants, or computed from graph inputs whose values the model is specialized
//    on); each iteration converts the body with the iteration number and the carried values;
//    scan outputs are stacked along a new first dim. At most kMaxUnrolledIterations.
//  - Scan: unrolled over the scan axis likewise (forward or reverse per input and output).
#include <algorithm>

#include "frontends/onnx/onnx_op_helpers.h"
#include "frontends/onnx/onnx_op_table.h"

namespace kiln::frontends {

namespace {

constexpr int64_t kMaxUnrolledIterations = 4096;

OnnxValue scalar_constant(double value, DType dtype) { return OnnxValue::of_constant(Tensor::scalar(value, dtype)); }

// A condition value that is a one-element constant, as a bool.
std::optional<bool> constant_condition(const OnnxValue& value) {
  if (!value.constant || value.constant->numel() != 1) return std::nullopt;
  return value.constant->flat_double(0) != 0;
}

// Whether two branch results can be selected elementwise: tensors of one type and shape,
// sequences of one length whose elements can be, or two empty optionals.
bool selectable(const OnnxValue& a, const OnnxValue& b) {
  if (a.is_none || b.is_none) return a.is_none && b.is_none;
  if (a.is_sequence || b.is_sequence) {
    if (!a.is_sequence || !b.is_sequence || a.elements.size() != b.elements.size()) return false;
    for (size_t i = 0; i < a.elements.size(); ++i)
      if (!selectable(a.elements[i], b.elements[i])) return false;
    return true;
  }
  return a.dtype() == b.dtype() && a.shape() == b.shape();
}

// `then_value` where the condition holds, else `else_value` (selectable ones).
OnnxValue select(OnnxNodeContext& context, ir::Node* condition, OnnxValue& then_value, OnnxValue& else_value) {
  if (then_value.is_none) return OnnxValue::none();
  if (then_value.is_sequence) {
    std::vector<OnnxValue> elements;
    for (size_t i = 0; i < then_value.elements.size(); ++i)
      elements.push_back(select(context, condition, then_value.elements[i], else_value.elements[i]));
    return OnnxValue::sequence(std::move(elements), then_value.element_dtype);
  }
  return OnnxValue::of_node(
      context.call("where", {condition, context.node_of(then_value), context.node_of(else_value)}));
}

void convert_if(OnnxNodeContext& context) {
  const onnx::GraphProto& then_branch = context.graph_attribute("then_branch");
  const onnx::GraphProto& else_branch = context.graph_attribute("else_branch");
  if (then_branch.output_size() != int(context.output_count()) || else_branch.output_size() != int(context.output_count()))
    context.fail("each branch must have the node's ", context.output_count(), " outputs");
  if (std::optional<bool> taken = constant_condition(context.input(0))) {
    std::vector<OnnxValue> outputs = context.convert_subgraph(*taken ? then_branch : else_branch, {});
    for (size_t i = 0; i < outputs.size(); ++i) context.set_output(i, outputs[i]);
    return;
  }
  std::vector<OnnxValue> then_outputs = context.convert_subgraph(then_branch, {});
  std::vector<OnnxValue> else_outputs = context.convert_subgraph(else_branch, {});
  for (size_t i = 0; i < then_outputs.size(); ++i)
    if (!selectable(then_outputs[i], else_outputs[i]))
      context.need_known(0, "cond", "the branches' results differ in type or shape, so one must be chosen");
  ir::Node* condition = context.tensor(0);
  if (condition->value().rank() > 0) condition = context.call("reshape", {condition, ir::Argument::ints({})});
  for (size_t i = 0; i < then_outputs.size(); ++i) {
    if (then_outputs[i].is_tensor())
      context.emit(i, "where", {condition, context.node_of(then_outputs[i]), context.node_of(else_outputs[i])});
    else
      context.set_output(i, select(context, condition, then_outputs[i], else_outputs[i]));
  }
}

// The per-iteration values of a scan output stacked along `axis` (a new dim).
OnnxValue stack(OnnxNodeContext& context, std::vector<OnnxValue>& values, int64_t axis) {
  std::vector<ir::Argument> parts;
  for (OnnxValue& value : values) parts.emplace_back(context.call("unsqueeze", {context.node_of(value), axis}));
  return OnnxValue::of_node(context.call("cat", {ir::Argument(parts), axis}));
}

void convert_loop(OnnxNodeContext& context) {
  const onnx::GraphProto& body = context.graph_attribute("body");
  size_t carried = context.input_count() >= 2 ? context.input_count() - 2 : 0;
  if (body.input_size() != int(carried) + 2 || body.output_size() < int(carried) + 1)
    context.fail("the body must take (iteration, condition, ", carried, " carried values) and return the condition, the ",
                 carried, " carried values and the scan outputs");
  size_t scans = size_t(body.output_size()) - 1 - carried;
  std::optional<int64_t> trips;
  if (context.has_input(0)) {
    std::vector<int64_t> count = context.constant_ints(0, "M");
    if (count.size() != 1) context.fail("M must hold one value");
    trips = count[0];
  }
  bool running = true;
  if (context.has_input(1)) {
    std::optional<bool> condition = constant_condition(context.input(1));
    if (!condition) context.need_known(1, "cond", "a loop is unrolled when the model is imported");
    running = *condition;
  }
  if (!trips && !context.has_input(1)) context.fail("a loop without a trip count or a condition never ends");
  std::vector<OnnxValue> values;
  for (size_t i = 0; i < carried; ++i) values.push_back(context.input(i + 2));
  std::vector<std::vector<OnnxValue>> scanned(scans);
  for (int64_t iteration = 0; running && (!trips || iteration < *trips); ++iteration) {
    if (iteration >= kMaxUnrolledIterations)
      context.fail("the loop runs more than ", kMaxUnrolledIterations, " iterations, the most Kiln unrolls");
    std::vector<OnnxValue> inputs = {scalar_constant(double(iteration), DType::i64), scalar_constant(1.0, DType::boolean)};
    inputs.insert(inputs.end(), values.begin(), values.end());
    std::vector<OnnxValue> outputs = context.convert_subgraph(body, inputs);
    std::optional<bool> next = constant_condition(outputs[0]);
    if (!next)
      context.fail("the loop's condition is computed at run time (from the body's data); Kiln unrolls loops whose trip "
                   "count and condition are known when the model is imported");
    running = *next;
    values.assign(outputs.begin() + 1, outputs.begin() + 1 + long(carried));
    for (size_t k = 0; k < scans; ++k) scanned[k].push_back(outputs[1 + carried + k]);
  }
  for (size_t i = 0; i < carried; ++i) context.set_output(i, values[i]);
  for (size_t k = 0; k < scans; ++k) {
    if (!context.output_used(carried + k)) continue;
    if (scanned[k].empty()) context.fail("scan output ", k, " of a loop that ran no iteration has no known shape");
    context.set_output(carried + k, stack(context, scanned[k], 0));
  }
}

void convert_scan(OnnxNodeContext& context) {
  const onnx::GraphProto& body = context.graph_attribute("body");
  int64_t scan_inputs = context.int_attribute("num_scan_inputs", 0);
  int64_t states = int64_t(context.input_count()) - scan_inputs;
  if (scan_inputs < 1 || states < 0 || body.input_size() != int(context.input_count()))
    context.fail("num_scan_inputs ", scan_inputs, " does not fit the node's ", context.input_count(), " inputs");
  int64_t scan_outputs = body.output_size() - states;
  auto per_input = [&](const char* name, int64_t count) {
    std::vector<int64_t> values = context.ints_attribute(name, std::vector<int64_t>(size_t(count), 0));
    if (int64_t(values.size()) != count) context.fail("attribute '", name, "' needs ", count, " values");
    return values;
  };
  std::vector<int64_t> input_axes = per_input("scan_input_axes", scan_inputs);
  std::vector<int64_t> input_reverse = per_input("scan_input_directions", scan_inputs);
  std::vector<int64_t> output_axes = per_input("scan_output_axes", scan_outputs);
  std::vector<int64_t> output_reverse = per_input("scan_output_directions", scan_outputs);
  std::vector<ir::Node*> sequences;
  std::optional<int64_t> length;
  for (int64_t k = 0; k < scan_inputs; ++k) {
    size_t index = size_t(states + k);
    int64_t axis = context.wrap_axis(input_axes[size_t(k)], context.rank(index));
    input_axes[size_t(k)] = axis;
    ir::SymInt size = context.shape(index)[size_t(axis)];
    if (!size.is_constant()) context.fail("scan input ", k, " needs a static length along its scan axis");
    if (length && *length != size.constant()) context.fail("the scan inputs differ in length");
    length = size.constant();
    sequences.push_back(context.tensor(index));
  }
  if (*length > kMaxUnrolledIterations) context.fail("the scan runs ", *length, " steps, more than Kiln unrolls");
  std::vector<OnnxValue> values;
  for (int64_t i = 0; i < states; ++i) values.push_back(context.input(size_t(i)));
  std::vector<std::vector<OnnxValue>> scanned(static_cast<size_t>(scan_outputs));
  for (int64_t step = 0; step < *length; ++step) {
    std::vector<OnnxValue> inputs = values;
    for (int64_t k = 0; k < scan_inputs; ++k) {
      int64_t t = input_reverse[size_t(k)] ? *length - 1 - step : step;
      inputs.push_back(OnnxValue::of_node(context.call("select", {sequences[size_t(k)], input_axes[size_t(k)], t})));
    }
    std::vector<OnnxValue> outputs = context.convert_subgraph(body, inputs);
    values.assign(outputs.begin(), outputs.begin() + states);
    for (int64_t k = 0; k < scan_outputs; ++k) scanned[size_t(k)].push_back(outputs[size_t(states + k)]);
  }
  for (int64_t i = 0; i < states; ++i) context.set_output(size_t(i), values[size_t(i)]);
  for (int64_t k = 0; k < scan_outputs; ++k) {
    std::vector<OnnxValue>& steps = scanned[size_t(k)];
    if (output_reverse[size_t(k)]) std::reverse(steps.begin(), steps.end());
    int64_t rank = steps.empty() ? 1 : int64_t(steps.front().shape().size()) + 1;
    context.set_output(size_t(states + k), stack(context, steps, context.wrap_axis(output_axes[size_t(k)], rank)));
  }
}

}  // namespace

void register_onnx_control_flow_ops(OnnxOpTable& table) {
  table.add("If", convert_if);
  table.add("Loop", convert_loop);
  table.add("Scan", convert_scan);
}

}  // namespace kiln::frontends

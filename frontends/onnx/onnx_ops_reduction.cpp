// ONNX reductions: ReduceSum/Mean/Max/Min/Prod/L1/L2/LogSum/LogSumExp/SumSquare (axes an
// attribute before opset 18 — 13 for ReduceSum — and an optional input after; an empty list
// reduces everything unless noop_with_empty_axes), ArgMax/ArgMin, CumSum.
#include <algorithm>
#include <limits>

#include "frontends/onnx/onnx_op_helpers.h"
#include "frontends/onnx/onnx_op_table.h"

namespace kiln::frontends {

namespace {

// The reduced dims, wrapped and sorted; nullopt when the node is a no-op (empty axes with
// noop_with_empty_axes).
std::optional<std::vector<int64_t>> reduction_dims(const OnnxNodeContext& context, int64_t axes_input_since) {
  int64_t rank = context.rank(0);
  std::vector<int64_t> axes;
  if (context.opset() >= axes_input_since) {
    if (context.has_input(1)) axes = context.constant_ints(1, "axes");
  } else {
    axes = context.ints_attribute("axes");
  }
  if (axes.empty()) {
    if (context.int_attribute("noop_with_empty_axes", 0) != 0) return std::nullopt;
    return dims_from(0, rank);
  }
  std::vector<int64_t> dims;
  for (int64_t axis : axes) dims.push_back(context.wrap_axis(axis, std::max<int64_t>(rank, 1)));
  std::sort(dims.begin(), dims.end());
  if (std::adjacent_find(dims.begin(), dims.end()) != dims.end()) context.fail("axes repeat a dim");
  return dims;
}

enum class Reduce { sum, mean, max, min, prod, l1, l2, log_sum, log_sum_exp, sum_square };

// A reduction over a zero-size dim gives the reduction's identity (ONNX: -inf for the max and
// the log-sums, +inf for the min, 0 for the sums, 1 for the product); true when it emitted one.
bool empty_reduction(OnnxNodeContext& context, Reduce kind, ir::Node* x, const std::vector<int64_t>& dims, bool keepdims) {
  const ir::SymShape& shape = x->value().shape;
  bool empty = std::any_of(dims.begin(), dims.end(), [&](int64_t d) { return shape[size_t(d)] == ir::SymInt(0); });
  if (!empty || kind == Reduce::sum || kind == Reduce::sum_square || kind == Reduce::l1 || kind == Reduce::l2 ||
      kind == Reduce::prod)
    return false;  // Kiln's sum and prod of nothing are already 0 and 1
  DType dtype = x->value().dtype;
  double infinity = std::numeric_limits<double>::infinity();
  double value = kind == Reduce::min ? infinity : kind == Reduce::mean ? std::numeric_limits<double>::quiet_NaN() : -infinity;
  if (!is_floating(dtype)) {
    if (kind == Reduce::log_sum || kind == Reduce::log_sum_exp || kind == Reduce::mean)
      context.fail("an empty reduction of integers has no value here");
    value = kind == Reduce::min ? double(std::numeric_limits<int64_t>::max()) : double(std::numeric_limits<int64_t>::min());
  }
  ir::SymShape out;
  for (size_t d = 0; d < shape.size(); ++d) {
    bool reduced = std::find(dims.begin(), dims.end(), int64_t(d)) != dims.end();
    if (!reduced) out.push_back(shape[d]);
    else if (keepdims) out.push_back(ir::SymInt(1));
  }
  context.emit(0, "full", {ir::Argument::sym_ints(out), scalar_argument(value, dtype)}, {{"dtype", dtype}});
  return true;
}

void convert_reduce(OnnxNodeContext& context, Reduce kind) {
  int64_t axes_input_since = kind == Reduce::sum ? 13 : 18;
  std::optional<std::vector<int64_t>> dims = reduction_dims(context, axes_input_since);
  if (!dims) return context.set_output(0, context.input(0));
  bool keepdims = context.int_attribute("keepdims", 1) != 0;
  ir::Node* x = context.tensor(0);
  DType dtype = x->value().dtype;
  ir::Argument dim_list = ir::Argument::ints(*dims);
  if (empty_reduction(context, kind, x, *dims, keepdims)) return;
  auto sum = [&](ir::Node* input) { return context.call("sum", {input, dim_list, keepdims}); };
  ir::Node* result = nullptr;
  switch (kind) {
    case Reduce::sum: result = sum(x); break;
    case Reduce::mean:
      if (!is_floating(dtype)) context.fail("ReduceMean of ", dtype_name(dtype), " is not supported (floating types only)");
      result = context.call("mean", {x, dim_list, keepdims});
      break;
    case Reduce::max: result = context.call("amax", {x, dim_list, keepdims}); break;
    case Reduce::min: result = context.call("amin", {x, dim_list, keepdims}); break;
    case Reduce::prod: result = context.call("prod", {x, dim_list, keepdims}); break;
    case Reduce::l1: result = sum(context.call("abs", {x})); break;
    case Reduce::l2: result = context.call("sqrt", {sum(context.call("mul", {x, x}))}); break;
    case Reduce::sum_square: result = sum(context.call("mul", {x, x})); break;
    case Reduce::log_sum: result = context.call("log", {sum(x)}); break;
    case Reduce::log_sum_exp: {
      // log(sum(exp(x - max))) + max, with the max kept finite for rows of -inf.
      ir::Node* peak = context.call("amax", {x, dim_list, true});
      peak = context.call("where", {context.call("isnan", {context.call("sub", {peak, peak})}), 0.0, peak});
      ir::Node* shifted = context.call("exp", {context.call("sub", {x, peak})});
      ir::Node* total = context.call("log", {sum(shifted)});
      if (!keepdims) peak = context.call("squeeze", {peak, dim_list});
      result = context.call("add", {total, peak});
      break;
    }
  }
  if (result->value().dtype != dtype) result = context.call("cast", {result, dtype});
  context.set_output(0, result);
}

void convert_arg_reduce(OnnxNodeContext& context, const std::string& target) {
  int64_t rank = context.rank(0);
  int64_t axis = context.wrap_axis(context.int_attribute("axis", 0), std::max<int64_t>(rank, 1));
  bool keepdims = context.int_attribute("keepdims", 1) != 0;
  ir::Node* x = context.tensor(0);
  if (context.int_attribute("select_last_index", 0) == 0) {
    context.emit(0, target, {x, axis, keepdims});
    return;
  }
  // The last extreme is the first one of the reversed tensor, counted from the end.
  ir::Node* reversed_index = context.call(target, {flip(context, x, axis), axis, keepdims});
  int64_t size = x->value().shape[size_t(axis)].constant();
  context.emit(0, "sub", {int64_t(size - 1), reversed_index});
}

void convert_cumsum(OnnxNodeContext& context) {
  std::vector<int64_t> axes = context.constant_ints(1, "axis");
  if (axes.size() != 1) context.fail("axis must have one element");
  int64_t axis = context.wrap_axis(axes[0], context.rank(0));
  bool exclusive = context.int_attribute("exclusive", 0) != 0, reverse = context.int_attribute("reverse", 0) != 0;
  ir::Node* x = context.tensor(0);
  DType dtype = x->value().dtype;
  ir::Node* input = reverse ? flip(context, x, axis) : x;
  ir::Node* result = context.call("cumsum", {input, axis});
  if (result->value().dtype != dtype) result = context.call("cast", {result, dtype});
  if (exclusive) result = context.call("sub", {result, input});
  if (reverse) result = flip(context, result, axis);
  context.set_output(0, result);
}

}  // namespace

void register_onnx_reduction_ops(OnnxOpTable& table) {
  table.add("ReduceSum", [](OnnxNodeContext& c) { convert_reduce(c, Reduce::sum); });
  table.add("ReduceMean", [](OnnxNodeContext& c) { convert_reduce(c, Reduce::mean); });
  table.add("ReduceMax", [](OnnxNodeContext& c) { convert_reduce(c, Reduce::max); });
  table.add("ReduceMin", [](OnnxNodeContext& c) { convert_reduce(c, Reduce::min); });
  table.add("ReduceProd", [](OnnxNodeContext& c) { convert_reduce(c, Reduce::prod); });
  table.add("ReduceL1", [](OnnxNodeContext& c) { convert_reduce(c, Reduce::l1); });
  table.add("ReduceL2", [](OnnxNodeContext& c) { convert_reduce(c, Reduce::l2); });
  table.add("ReduceLogSum", [](OnnxNodeContext& c) { convert_reduce(c, Reduce::log_sum); });
  table.add("ReduceLogSumExp", [](OnnxNodeContext& c) { convert_reduce(c, Reduce::log_sum_exp); });
  table.add("ReduceSumSquare", [](OnnxNodeContext& c) { convert_reduce(c, Reduce::sum_square); });
  table.add("ArgMax", [](OnnxNodeContext& c) { convert_arg_reduce(c, "argmax"); });
  table.add("ArgMin", [](OnnxNodeContext& c) { convert_arg_reduce(c, "argmin"); });
  table.add("CumSum", convert_cumsum);
}

}  // namespace kiln::frontends

// Lowering of pooling over the last 1-3 dims (leading dims are planes) to Reduction nodes
// over the window: the reduction ranges are the kernel sizes (for adaptive pooling the
// largest window), and masked loads skip what lies outside the input (padding, ceil_mode's
// last windows, adaptive windows shorter than the largest). max_pool and adaptive_max_pool
// reduce with Max (masked elements are -inf, NaN propagates); avg_pool and
// adaptive_avg_pool sum into a buffer "<node>_sum" and divide in a Pointwise node by the
// interpreter's divisor (count_include_pad, divisor_override, an empty window giving 0).
// Window reductions reduce no dim of the output, so their reduced_dims is empty.
#include <algorithm>
#include <limits>

#include "codegen/lowering_context.h"
#include "kiln/error.h"

namespace kiln::codegen::lowering {
namespace {

// The value masked-out elements take in a max: -inf, or the dtype's lowest integer.
double lowest(DType dtype) {
  switch (dtype) {
    case DType::i64: return double(std::numeric_limits<int64_t>::min());
    case DType::i32: return double(std::numeric_limits<int32_t>::min());
    case DType::i16: return double(std::numeric_limits<int16_t>::min());
    case DType::i8: return -128;
    case DType::u8:
    case DType::u16:
    case DType::u32:
    case DType::u64:
    case DType::boolean: return 0;
    default: return -std::numeric_limits<double>::infinity();
  }
}

std::vector<int64_t> expanded(const std::vector<int64_t>& values, size_t count) {
  if (values.size() == 1) return std::vector<int64_t>(count, values[0]);
  return values;
}

Expr and_all(Expr a, Expr b) { return a ? binary(LoopOp::logical_and, a, b) : b; }

Expr index_ge(const SymInt& a, const SymInt& b) {
  return binary(LoopOp::ge, index_value(a, DType::i64), index_value(b, DType::i64));
}
Expr index_lt(const SymInt& a, const SymInt& b) {
  return binary(LoopOp::lt, index_value(a, DType::i64), index_value(b, DType::i64));
}

struct Window {
  std::vector<SymInt> index;  // the input's multi-index for output point x and window point r
  Expr mask;                  // null when every window point lies inside the input
  SymShape kernel;            // reduction ranges
};

void add_window_reduction(Lowerer& lowerer, const std::string& name, const SymShape& ranges, const Window& window,
                          ReductionKind kind, Expr body, int buffer) {
  LoopNode node;
  node.kind = NodeKind::Reduction;
  node.name = name;
  node.ranges = ranges;
  node.reduction_ranges = window.kernel;
  node.reduction = kind;
  node.body = std::move(body);
  node.outputs = {buffer};
  lowerer.add_node(std::move(node));
}

// Reduces the window with Max (into the node's value) or Sum (into "<node>_sum", whose accessor
// is returned). A window over all spatial dims of a channels-last input iterates and stores
// channels-last (codegen/lowering_layout.cpp).
Accessor reduce_window(Lowerer& lowerer, const ir::Node& node, const Accessor& input, const Window& window,
                       bool is_max) {
  const ir::TensorMeta& meta = node.value();
  DType accumulation = compute_dtype(meta.dtype);
  Expr value = window.mask ? lowerer.load_masked(input, window.index, window.mask, is_max ? lowest(input.dtype) : 0.0)
                           : lowerer.load(input, window.index);
  bool channels_last = window.kernel.size() + 2 == meta.shape.size() && lowerer.is_channels_last(input);
  SymShape ranges = channels_last ? Lowerer::channels_last_shape(meta.shape) : meta.shape;
  if (channels_last) value = Lowerer::to_channels_last_vars(value, meta.shape.size());
  auto accessor = [&](int buffer) {
    return channels_last ? lowerer.channels_last(buffer, meta.shape) : lowerer.whole(buffer);
  };
  if (is_max) {
    int buffer = lowerer.new_buffer(node.name(), meta.dtype, ranges);
    lowerer.note_bound(buffer, node);
    add_window_reduction(lowerer, node.name(), ranges, window, ReductionKind::Max, upcast(value), buffer);
    lowerer.define(node, accessor(buffer));
    return accessor(buffer);
  }
  int buffer = lowerer.new_buffer(node.name() + "_sum", accumulation, ranges);
  add_window_reduction(lowerer, node.name() + "_sum", ranges, window, ReductionKind::Sum,
                       cast(cast(value, meta.dtype), accumulation), buffer);
  return accessor(buffer);
}

// The strided window of max_pool / avg_pool.
Window strided_window(const Accessor& input, const ir::OpCall& call, const std::vector<int64_t>& dilation,
                      bool ceil_mode) {
  std::vector<int64_t> kernel = call.ints(1);
  size_t spatial = kernel.size();
  std::vector<int64_t> stride = call.ints(2).empty() ? kernel : expanded(call.ints(2), spatial);
  std::vector<int64_t> padding = expanded(call.ints(3), spatial);
  size_t lead = input.shape.size() - spatial;
  Window window;
  for (size_t d = 0; d < lead; ++d) window.index.push_back(loop_var(d));
  for (size_t s = 0; s < spatial; ++s) {
    SymInt position = loop_var(lead + s) * stride[s] - padding[s] + reduction_var(s) * dilation[s];
    window.index.push_back(position);
    window.kernel.push_back(kernel[s]);
    const SymInt& size = input.shape[lead + s];
    if (padding[s] > 0) window.mask = and_all(window.mask, index_ge(position, SymInt(0)));
    if (padding[s] > 0 || ceil_mode) window.mask = and_all(window.mask, index_lt(position, size));
  }
  return window;
}

void lower_max_pool(Lowerer& lowerer, const ir::Node& node, const ir::OpCall& call) {
  const Accessor& input = lowerer.tensor(call, 0);
  std::vector<int64_t> dilation = expanded(call.ints(4), call.ints(1).size());
  reduce_window(lowerer, node, input, strided_window(input, call, dilation, call.bool_arg(5)), true);
}

void lower_avg_pool(Lowerer& lowerer, const ir::Node& node, const ir::OpCall& call) {
  const Accessor& input = lowerer.tensor(call, 0);
  const ir::TensorMeta& meta = node.value();
  std::vector<int64_t> kernel = call.ints(1);
  size_t spatial = kernel.size();
  Window window = strided_window(input, call, std::vector<int64_t>(spatial, 1), call.bool_arg(4));
  Accessor sum = reduce_window(lowerer, node, input, window, false);

  std::vector<int64_t> stride = call.ints(2).empty() ? kernel : expanded(call.ints(2), spatial);
  std::vector<int64_t> padding = expanded(call.ints(3), spatial);
  bool count_include_pad = call.bool_arg(5);
  std::optional<int64_t> divisor_override;
  if (!call.is_none(6)) divisor_override = call.int_arg(6);
  if (divisor_override && *divisor_override == 0) call.fail("avg_pool: divisor must be not zero");
  size_t lead = input.shape.size() - spatial;
  SymInt pool_size = 1, inside = 1;
  for (size_t s = 0; s < spatial; ++s) {
    const SymInt& size = input.shape[lead + s];
    SymInt start = loop_var(lead + s) * stride[s] - padding[s];
    SymInt end = min(start + kernel[s], size + padding[s]);
    pool_size = pool_size * (end - start);
    inside = inside * max(min(end, size) - max(start, SymInt(0)), SymInt(0));
  }
  DType accumulation = compute_dtype(meta.dtype);
  Expr total = lowerer.load(sum, vars_of(meta.shape));
  Expr body;
  if (divisor_override) {
    body = binary(LoopOp::div, total, constant(double(*divisor_override), accumulation));
  } else if (count_include_pad) {
    body = binary(LoopOp::div, total, index_value(pool_size, accumulation));
  } else {
    body = binary(LoopOp::div, total, index_value(inside, accumulation));
  }
  // A window wholly in the padding averages to 0 (the interpreter skips it).
  Expr empty = binary(LoopOp::eq, index_value(inside, DType::i64), constant(0, DType::i64));
  body = where(empty, constant(0, accumulation), body);
  lowerer.define_pointwise(node, body);
}

// Adaptive windows: start = floor(i * in / out), end = ceil((i + 1) * in / out).
void lower_adaptive_pool(Lowerer& lowerer, const ir::Node& node, const ir::OpCall& call) {
  const Accessor& input = lowerer.tensor(call, 0);
  const ir::TensorMeta& meta = node.value();
  std::vector<int64_t> output_size = call.ints(1);
  size_t spatial = output_size.size();
  size_t lead = input.shape.size() - spatial;
  Window window;
  SymInt count = 1;
  for (size_t d = 0; d < lead; ++d) window.index.push_back(loop_var(d));
  for (size_t s = 0; s < spatial; ++s) {
    const SymInt& in = input.shape[lead + s];
    int64_t out = output_size[s];
    SymInt x = loop_var(lead + s);
    SymInt start = out == 0 ? SymInt(0) : floordiv(x * in, SymInt(out));
    SymInt end = out == 0 ? SymInt(0) : floordiv((x + 1) * in + (out - 1), SymInt(out));
    SymInt largest;
    bool uniform = false;
    if (std::optional<int64_t> size = in.maybe_constant()) {
      int64_t widest = 0;
      for (int64_t i = 0; i < out; ++i)
        widest = std::max(widest, ((i + 1) * *size + out - 1) / out - (i * *size) / out);
      largest = widest;
      uniform = out > 0 && *size % out == 0;
    } else {
      largest = out == 0 ? SymInt(0) : floordiv(in + (out - 1), SymInt(out)) + 1;
    }
    window.index.push_back(start + reduction_var(s));
    window.kernel.push_back(largest);
    if (!uniform) window.mask = and_all(window.mask, index_lt(reduction_var(s), end - start));
    count = count * (end - start);
  }
  if (node.target() == "adaptive_max_pool") {
    reduce_window(lowerer, node, input, window, true);
    return;
  }
  Accessor sum = reduce_window(lowerer, node, input, window, false);
  Expr total = lowerer.load(sum, vars_of(meta.shape));
  lowerer.define_pointwise(node, binary(LoopOp::div, total, index_value(count, compute_dtype(meta.dtype))));
}

}  // namespace

void register_pooling_lowerings(LoweringTable& table) {
  table["max_pool"] = lower_max_pool;
  table["avg_pool"] = lower_avg_pool;
  table["adaptive_avg_pool"] = lower_adaptive_pool;
  table["adaptive_max_pool"] = lower_adaptive_pool;
}

}  // namespace kiln::codegen::lowering

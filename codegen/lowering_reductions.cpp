// Lowering of the reductions: sum and prod (Sum/Prod), amax and amin (Max/Min), argmax and
// argmin (ArgMax/ArgMin; dim=None reduces every dim), mean (a Sum node and a Pointwise
// division by the element count), var and var_mean (a Welford node writing {mean, m2} and a
// Pointwise m2 / max(N - correction, 0)). A reduction's ranges have the input's rank with
// the reduced dims set to 1, its reduction ranges are the reduced dims' sizes in order, and
// its buffer has the graph value's shape (keepdim or not: the same row-major order).
// Accumulation dtypes: integers and bool as i64 for sum/prod, f16/bf16 as f32.
#include <algorithm>
#include <cmath>

#include "codegen/lowering_context.h"
#include "kiln/error.h"

namespace kiln::codegen::lowering {
namespace {

struct ReductionShape {
  SymShape ranges;
  SymShape reduction_ranges;
  std::vector<int> reduced_dims;
  std::vector<SymInt> input_index;  // per input dim: x<d> for a kept dim, r<k> for the k-th reduced one
  SymInt count = 1;                 // elements per reduction
};

// `dims` as given (None or empty: every dim), wrapped, sorted, unique.
std::vector<int64_t> normalized_dims(const std::optional<std::vector<int64_t>>& dims, int64_t rank) {
  std::vector<int64_t> result;
  if (!dims || dims->empty()) {
    for (int64_t d = 0; d < rank; ++d) result.push_back(d);
    return result;
  }
  if (rank == 0) return result;  // a 0-d tensor accepts dim 0 / -1 and reduces nothing
  for (int64_t d : *dims) result.push_back(d < 0 ? d + rank : d);
  std::sort(result.begin(), result.end());
  result.erase(std::unique(result.begin(), result.end()), result.end());
  return result;
}

ReductionShape reduction_shape(const SymShape& input, const std::vector<int64_t>& dims) {
  ReductionShape shape;
  for (size_t d = 0; d < input.size(); ++d) {
    bool reduced = std::find(dims.begin(), dims.end(), int64_t(d)) != dims.end();
    if (reduced) {
      shape.input_index.push_back(reduction_var(shape.reduction_ranges.size()));
      shape.reduced_dims.push_back(int(d));
      shape.reduction_ranges.push_back(input[d]);
      shape.ranges.push_back(SymInt(1));
      shape.count = shape.count * input[d];
    } else {
      shape.input_index.push_back(loop_var(d));
      shape.ranges.push_back(input[d]);
    }
  }
  return shape;
}

std::optional<std::vector<int64_t>> dims_argument(const ir::OpCall& call, size_t index) {
  if (call.is_none(index)) return std::nullopt;
  return call.ints(index);
}

// Adds the Reduction node; returns nothing (outputs are given).
void add_reduction(Lowerer& lowerer, const std::string& name, const ReductionShape& shape, ReductionKind kind,
                   Expr body, std::vector<int> outputs) {
  LoopNode node;
  node.kind = NodeKind::Reduction;
  node.name = name;
  node.ranges = shape.ranges;
  node.reduction_ranges = shape.reduction_ranges;
  node.reduced_dims = shape.reduced_dims;
  node.reduction = kind;
  node.body = std::move(body);
  node.outputs = std::move(outputs);
  lowerer.add_node(std::move(node));
}

// One reduction writing the node's value.
void reduce_into_value(Lowerer& lowerer, const ir::Node& node, const ReductionShape& shape, ReductionKind kind,
                       Expr body) {
  const ir::TensorMeta& meta = node.value();
  int buffer = lowerer.new_buffer(node.name(), meta.dtype, meta.shape);
  add_reduction(lowerer, node.name(), shape, kind, std::move(body), {buffer});
  lowerer.define(node, lowerer.whole(buffer));
}

void lower_sum_prod(Lowerer& lowerer, const ir::Node& node, const ir::OpCall& call) {
  const Accessor& input = lowerer.tensor(call, 0);
  ReductionShape shape = reduction_shape(input.shape, normalized_dims(dims_argument(call, 1), int64_t(input.shape.size())));
  DType converted = call.is_none(3) ? input.dtype : call.dtype_arg(3);
  Expr body = cast(cast(lowerer.load(input, shape.input_index), converted), compute_dtype(node.value().dtype));
  reduce_into_value(lowerer, node, shape, node.target() == "sum" ? ReductionKind::Sum : ReductionKind::Prod, body);
}

void lower_mean(Lowerer& lowerer, const ir::Node& node, const ir::OpCall& call) {
  const Accessor& input = lowerer.tensor(call, 0);
  const ir::TensorMeta& meta = node.value();
  if (!is_floating(meta.dtype))
    call.fail("mean(): could not infer output dtype. Input dtype must be a floating point dtype, got ",
              dtype_name(meta.dtype));
  ReductionShape shape = reduction_shape(input.shape, normalized_dims(dims_argument(call, 1), int64_t(input.shape.size())));
  DType accumulation = compute_dtype(meta.dtype);
  Expr body = cast(cast(lowerer.load(input, shape.input_index), meta.dtype), accumulation);
  int sum = lowerer.new_buffer(node.name() + "_sum", accumulation, meta.shape);
  add_reduction(lowerer, node.name() + "_sum", shape, ReductionKind::Sum, body, {sum});
  Expr total = lowerer.load(lowerer.whole(sum), vars_of(meta.shape));
  lowerer.define_pointwise(node, binary(LoopOp::div, total, index_value(shape.count, accumulation)));
}

void lower_extreme(Lowerer& lowerer, const ir::Node& node, const ir::OpCall& call) {
  const bool is_max = node.target() == "amax";
  const std::optional<ir::OpCall> pad = identity_padding(node);
  const Accessor& input = pad ? lowerer.tensor(*pad, 0) : lowerer.tensor(call, 0);
  ReductionShape shape = reduction_shape(input.shape, normalized_dims(call.ints(1), int64_t(input.shape.size())));
  Expr body = upcast(lowerer.load(input, shape.input_index));
  reduce_into_value(lowerer, node, shape, is_max ? ReductionKind::Max : ReductionKind::Min, body);
}

void lower_arg_extreme(Lowerer& lowerer, const ir::Node& node, const ir::OpCall& call) {
  const Accessor& input = lowerer.tensor(call, 0);
  int64_t rank = int64_t(input.shape.size());
  std::optional<std::vector<int64_t>> dims;
  if (!call.is_none(1)) dims = std::vector<int64_t>{call.int_arg(1)};
  ReductionShape shape = reduction_shape(input.shape, normalized_dims(dims, rank));
  Expr body = upcast(lowerer.load(input, shape.input_index));
  reduce_into_value(lowerer, node, shape, node.target() == "argmax" ? ReductionKind::ArgMax : ReductionKind::ArgMin,
                    body);
}

// var / var_mean: Welford {mean, m2}, then var = m2 / max(N - correction, 0).
void lower_variance(Lowerer& lowerer, const ir::Node& node, const ir::OpCall& call) {
  const Accessor& input = lowerer.tensor(call, 0);
  if (!is_floating(input.dtype))
    call.fail("var: only floating point dtypes are supported, got ", dtype_name(input.dtype));
  bool with_mean = node.target() == "var_mean";
  const ir::TensorMeta& meta = node.meta.values[0];
  ReductionShape shape = reduction_shape(input.shape, normalized_dims(dims_argument(call, 1), int64_t(input.shape.size())));
  DType accumulation = compute_dtype(meta.dtype);
  int mean = lowerer.new_buffer(node.name() + "_mean", with_mean ? meta.dtype : accumulation, meta.shape);
  int m2 = lowerer.new_buffer(node.name() + "_m2", accumulation, meta.shape);
  add_reduction(lowerer, node.name(), shape, ReductionKind::Welford, upcast(lowerer.load(input, shape.input_index)),
                {mean, m2});
  Expr count = index_value(shape.count, accumulation);
  Expr divisor = binary(LoopOp::maximum, binary(LoopOp::sub, count, constant(call.float_arg(2), accumulation)),
                        constant(0, accumulation));
  Expr variance = binary(LoopOp::div, lowerer.load(lowerer.whole(m2), vars_of(meta.shape)), divisor);
  if (!with_mean) {
    lowerer.define_pointwise(node, variance);
    return;
  }
  int var = lowerer.emit_pointwise(node.name() + "_var", meta.dtype, meta.shape, variance);
  lowerer.define(node, std::vector<Accessor>{lowerer.whole(var), lowerer.whole(mean)});
}

}  // namespace

// The decompositions pad so (row_max: a softmax over a symbolic dim that may be empty, where amax
// alone would fail); the padded row (seq + 1) kept the max out of the softmax's kernel and stored
// the softmax's input between. The compiled reduction starts from the identity, so it is the
// same reduction without the padding, empty rows included.
std::optional<ir::OpCall> identity_padding(const ir::Node& reduction) {
  if (reduction.target() != "amax" && reduction.target() != "amin") return std::nullopt;
  const ir::OpCall call = ir::OpCall::of(reduction);
  if (!call.arg(0).is_node() || call.arg(0).node()->target() != "pad") return std::nullopt;
  ir::OpCall pad = ir::OpCall::of(*call.arg(0).node());
  const ir::TensorMeta& input = pad.tensor(0);
  if (!is_floating(input.dtype) || pad.string_arg(2) != "constant" || pad.is_none(3)) return std::nullopt;
  const double fill = pad.float_arg(3);
  if (!std::isinf(fill) || (fill < 0) != (reduction.target() == "amax")) return std::nullopt;
  const int64_t rank = int64_t(input.shape.size());
  const std::vector<int64_t> dims = normalized_dims(call.ints(1), rank);
  const std::vector<SymInt> pads = pad.syms(1);
  for (size_t k = 0; k < pads.size() / 2; ++k) {
    const int64_t d = rank - 1 - int64_t(k);
    const bool reduced = std::find(dims.begin(), dims.end(), d) != dims.end();
    const std::optional<int64_t> after = pads[2 * k + 1].maybe_constant();
    if (!(pads[2 * k] == SymInt(0)) || !after || *after < 0 || (!reduced && *after != 0)) return std::nullopt;
  }
  return pad;
}

void register_reduction_lowerings(LoweringTable& table) {
  table["sum"] = lower_sum_prod;
  table["prod"] = lower_sum_prod;
  table["mean"] = lower_mean;
  table["amax"] = lower_extreme;
  table["amin"] = lower_extreme;
  table["argmax"] = lower_arg_extreme;
  table["argmin"] = lower_arg_extreme;
  table["var"] = lower_variance;
  table["var_mean"] = lower_variance;
}

}  // namespace kiln::codegen::lowering

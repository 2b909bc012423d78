// Lowering of the copy ops to one Pointwise node each: cat (a chain of where over the
// concatenated dim, each input read by a masked load; channels-last when an input is), pad (constant: a masked load with the
// pad value; reflect, replicate and circular: index arithmetic with max/min/mod), gather and
// index_select (indirect loads through the index tensor). Zero-dim operands of gather and
// index_select go to the Fallback.
#include <algorithm>

#include "codegen/lowering_context.h"
#include "kiln/error.h"

namespace kiln::codegen::lowering {
namespace {

Expr index_less(const SymInt& a, const SymInt& b) {
  return binary(LoopOp::lt, index_value(a, DType::i64), index_value(b, DType::i64));
}

Expr both(Expr a, Expr b) {
  if (!a) return b;
  if (!b) return a;
  return binary(LoopOp::logical_and, a, b);
}

void lower_cat(Lowerer& lowerer, const ir::Node& node, const ir::OpCall& call) {
  std::vector<Accessor> inputs;
  const ir::Argument& list = call.arg(0);
  if (list.is_node()) {
    for (size_t i = 0; i < list.node()->meta.values.size(); ++i) inputs.push_back(lowerer.value(list.node(), i));
  } else {
    for (const ir::Argument& item : list.list()) inputs.push_back(lowerer.value(item.node()));
  }
  // PyTorch skips legacy empty 1-d tensors (shape [0]).
  std::vector<Accessor> pieces;
  for (const Accessor& input : inputs)
    if (!(input.shape.size() == 1 && input.shape[0] == SymInt(0))) pieces.push_back(input);
  if (pieces.empty()) pieces.push_back(inputs.at(0));
  const ir::TensorMeta& meta = node.value();
  int64_t rank = int64_t(meta.shape.size());
  int64_t dim = call.int_arg(1);
  if (dim < 0) dim += rank;
  SymInt x = loop_var(size_t(dim));
  std::vector<SymInt> begins;
  SymInt offset = 0;
  for (const Accessor& piece : pieces) {
    begins.push_back(offset);
    offset = offset + piece.shape[size_t(dim)];
  }
  Expr body;
  for (size_t i = pieces.size(); i-- > 0;) {
    SymInt begin = begins[i], end = begins[i] + pieces[i].shape[size_t(dim)];
    std::vector<SymInt> index = vars_of(meta.shape);
    index[size_t(dim)] = x - begin;
    bool last = i + 1 == pieces.size();
    Expr below_end = last ? nullptr : index_less(x, end);
    Expr from_begin =
        begin == SymInt(0) ? nullptr : binary(LoopOp::ge, index_value(x, DType::i64), index_value(begin, DType::i64));
    Expr mask = both(from_begin, below_end);
    Expr value = mask ? lowerer.load_masked(pieces[i], index, mask, 0) : lowerer.load(pieces[i], index);
    value = cast(value, meta.dtype);
    body = last ? value : where(below_end, value, body);
  }
  // A cat of channels-last values (the branches of an inception block, a dense block's features)
  // is stored channels-last too, along any dim, so that the pool or convolution that reads it
  // needs no transposing copy (GoogLeNet's 3x3 max pools over the concatenated branches ran as
  // scalar NCHW windows, then were copied back to channels-last).
  const bool channels_last = rank >= 3 && rank <= 5 && std::any_of(pieces.begin(), pieces.end(), [&](const Accessor& piece) {
                               return lowerer.is_channels_last(piece);
                             });
  if (channels_last) {
    int buffer = lowerer.emit_pointwise(node.name(), meta.dtype, Lowerer::channels_last_shape(meta.shape),
                                        Lowerer::to_channels_last_vars(body, meta.shape.size()));
    lowerer.define(node, lowerer.channels_last(buffer, meta.shape));
    return;
  }
  lowerer.define_pointwise(node, body);
}

SymInt absolute(const SymInt& value) { return max(value, -value); }

void lower_pad(Lowerer& lowerer, const ir::Node& node, const ir::OpCall& call) {
  // Read only by reductions that skip the padding (identity_padding): not computed.
  if (!node.users().empty() && std::all_of(node.users().begin(), node.users().end(),
                                           [](const ir::Node* user) { return identity_padding(*user).has_value(); }))
    return;
  const Accessor& input = lowerer.tensor(call, 0);
  std::vector<SymInt> pads = call.syms(1);
  const std::string& mode = call.string_arg(2);
  if (mode != "constant" && mode != "reflect" && mode != "replicate" && mode != "circular")
    call.fail("pad: unknown mode '", mode, "' (expected constant, reflect, replicate or circular)");
  const ir::TensorMeta& meta = node.value();
  size_t rank = input.shape.size();
  std::vector<SymInt> index = vars_of(meta.shape);
  Expr mask;
  for (size_t k = 0; k < pads.size() / 2; ++k) {
    size_t d = rank - 1 - k;
    const SymInt &left = pads[2 * k], &right = pads[2 * k + 1], &size = input.shape[d];
    if (left == SymInt(0) && right == SymInt(0)) continue;
    SymInt position = loop_var(d) - left;
    if (mode == "constant") {
      mask = both(mask, index_within(position, size));
      index[d] = position;
    } else if (mode == "reflect") {
      index[d] = size - 1 - absolute(size - 1 - absolute(position));
    } else if (mode == "replicate") {
      index[d] = min(max(position, SymInt(0)), size - 1);
    } else {
      index[d] = mod(position, size);
    }
  }
  if (!mask) {
    lowerer.define_pointwise(node, lowerer.load(input, index));
    return;
  }
  double fill = call.is_none(3) ? 0.0 : call.float_arg(3);
  lowerer.define_pointwise(node, lowerer.load_masked(input, index, mask, fill));
}

// A 0-d operand of gather or index_select reads as shape [1], as PyTorch treats it: its one
// element, at an index checked against a size of 1 (0 or -1). `vars` of a 0-d result: [0].
Accessor as_rank_one(Accessor value) {
  if (value.shape.empty()) value.shape = {SymInt(1)};
  return value;
}

std::vector<SymInt> result_vars(const SymShape& shape) {
  return shape.empty() ? std::vector<SymInt>{SymInt(0)} : vars_of(shape);
}

void lower_gather(Lowerer& lowerer, const ir::Node& node, const ir::OpCall& call) {
  const Accessor self = as_rank_one(lowerer.tensor(call, 0));
  const Accessor index = as_rank_one(lowerer.tensor(call, 2));
  const std::vector<SymInt> vars = result_vars(node.value().shape);
  size_t dim = size_t(call.int_arg(1) < 0 ? call.int_arg(1) + int64_t(self.shape.size()) : call.int_arg(1));
  Expr position = cast(lowerer.load(index, vars), DType::i64);
  lowerer.define_pointwise(node, lowerer.load_indirect(self, vars, dim, position));
}

void lower_index_select(Lowerer& lowerer, const ir::Node& node, const ir::OpCall& call) {
  const Accessor& given = lowerer.tensor(call, 0);
  const Accessor self = as_rank_one(given);
  const Accessor& index = lowerer.tensor(call, 2);
  const std::vector<SymInt> vars = result_vars(node.value().shape);
  size_t dim = size_t(call.int_arg(1) < 0 ? call.int_arg(1) + int64_t(self.shape.size()) : call.int_arg(1));
  // (A 0-d self's result is 0-d: its one element, picked by the index's one.)
  std::vector<SymInt> at = index.shape.empty() ? std::vector<SymInt>{} : std::vector<SymInt>{given.shape.empty() ? SymInt(0) : loop_var(dim)};
  Expr position = cast(lowerer.load(index, at), DType::i64);
  lowerer.define_pointwise(node, lowerer.load_indirect(self, vars, dim, position));
}

}  // namespace

void register_copy_lowerings(LoweringTable& table) {
  table["cat"] = lower_cat;
  table["pad"] = lower_pad;
  table["gather"] = lower_gather;
  table["index_select"] = lower_index_select;
}

}  // namespace kiln::codegen::lowering

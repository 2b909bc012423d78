// Decompositions of the normalizations. Statistics come from var_mean (one Welford pass,
// correction 0: the biased variance every normalization uses), never from E[x^2] - E[x]^2:
//   layer_norm: over the last len(normalized_shape) dims
//   group_norm: x viewed as [N, G, C/G * spatial], over the last dim, then viewed back; with
//               several channels per group the statistics are each channel's over its
//               spatial points, combined per group (group_moments)
//   batch_norm: over every dim but 1 (training, or running stats absent), else the running
//               stats; the running stats are not updated (the op's contract); f32 batch
//               statistics in f64, as PyTorch's CPU kernel computes them
//   normalized = (x - mean) * rsqrt(var + eps), then * weight + bias (per channel for
//   batch_norm and group_norm, viewed as [C, 1, ...]).
//   rms_norm:   x * rsqrt(mean(x * x) + eps) * weight, eps defaulting to the machine
//               epsilon of the compute dtype (f32's for f16/bf16, as PyTorch's opmath).
// f16/bf16 work runs in f32.
#include <cmath>
#include <numeric>
#include <optional>
#include <utility>

#include "passes/decompositions/decomposition.h"

namespace kiln::passes::decompositions {
namespace {

using ir::Argument;
using ir::Node;
using ir::OpCall;
using ir::SymInt;

struct Moments {
  Node* var;
  Node* mean;
};

Moments var_mean(Emitter& emit, Node* x, const std::vector<int64_t>& dims) {
  Node* both = emit.call("var_mean", {x, Argument::ints(dims)}, {{"correction", 0.0}, {"keepdim", true}});
  return {emit.getitem(both, 0, "var"), emit.getitem(both, 1, "mean")};
}

// (x - mean) * rsqrt(var + eps).
Node* normalize(Emitter& emit, Node* x, Moments moments, double eps) {
  Node* var_eps = emit.call("add", {moments.var, eps}, {}, "var_eps");
  Node* rstd = emit.call("rsqrt", {var_eps}, {}, "rstd");
  Node* centered = emit.call("sub", {x, moments.mean}, {}, "centered");
  return emit.call("mul", {centered, rstd}, {}, "normalized");
}

// value * weight + bias, each optional.
Node* affine(Emitter& emit, Node* value, Node* weight, Node* bias) {
  if (weight) value = emit.call("mul", {value, weight}, {}, "scaled");
  if (bias) value = emit.call("add", {value, bias}, {}, "shifted");
  return value;
}

std::vector<int64_t> last_dims(int64_t count, int64_t rank) {
  std::vector<int64_t> dims(static_cast<size_t>(count));
  std::iota(dims.begin(), dims.end(), rank - count);
  return dims;
}

std::vector<Node*> layer_norm(Emitter& emit, const OpCall& call) {
  Node* input = tensor_arg(call, 0);
  int64_t count = int64_t(call.syms(1).size());
  if (count == 0) emit.fail("layer_norm needs a non-empty normalized_shape");
  Node* x = emit.compute_input(input);
  Node* normalized = normalize(emit, x, var_mean(emit, x, last_dims(count, rank_of(x))), call.float_arg(4));
  return {emit.finish(affine(emit, normalized, tensor_arg(call, 2), tensor_arg(call, 3)))};
}

// The machine epsilon of the dtype the work runs in (PyTorch's opmath type: f32 for f16 and
// bf16), rms_norm's default eps.
double machine_epsilon(DType compute) { return compute == DType::f64 ? std::ldexp(1.0, -52) : std::ldexp(1.0, -23); }

std::vector<Node*> rms_norm(Emitter& emit, const OpCall& call) {
  Node* input = tensor_arg(call, 0);
  int64_t count = int64_t(call.syms(1).size());
  if (count == 0) emit.fail("rms_norm needs a non-empty normalized_shape");
  double eps = call.is_none(3) ? machine_epsilon(compute_dtype(dtype_of(input))) : call.float_arg(3);
  Node* x = emit.compute_input(input);
  Node* square = emit.call("mul", {x, x}, {}, "square");
  Node* mean_square =
      emit.call("mean", {square, Argument::ints(last_dims(count, rank_of(x))), true}, {}, "mean_square");
  Node* plus_eps = emit.call("add", {mean_square, eps}, {}, "mean_square_eps");
  Node* rrms = emit.call("rsqrt", {plus_eps}, {}, "rrms");
  Node* normalized = emit.call("mul", {x, rrms}, {}, "normalized");
  return {emit.finish(affine(emit, normalized, tensor_arg(call, 2), nullptr))};
}

std::vector<Node*> batch_norm(Emitter& emit, const OpCall& call) {
  Node* input = tensor_arg(call, 0);
  Node* running_mean = tensor_arg(call, 3);
  Node* running_var = tensor_arg(call, 4);
  bool training = call.bool_arg(5);
  double eps = call.float_arg(7);
  Node* x = emit.compute_input(input);
  int64_t rank = rank_of(x);
  Node* normalized = nullptr;
  if (training || !running_mean || !running_var) {
    std::vector<int64_t> dims{0};
    for (int64_t dim = 2; dim < rank; ++dim) dims.push_back(dim);
    if (dtype_of(x) == DType::f32) {
      // PyTorch's CPU kernel accumulates f32 batch statistics in double (acc_type<float> on
      // the CPU) and rounds the mean and 1 / sqrt(var + eps) to f32: a channel whose variance
      // overflows f32 still normalizes. The cast fuses into the reduction's loads.
      Moments wide = var_mean(emit, emit.cast(x, DType::f64, "wide"), dims);
      Node* var_eps = emit.call("add", {wide.var, eps}, {}, "var_eps");
      Node* rstd = emit.cast(emit.call("rsqrt", {var_eps}, {}, "rstd_wide"), DType::f32, "rstd");
      Node* centered = emit.call("sub", {x, emit.cast(wide.mean, DType::f32, "mean_f32")}, {}, "centered");
      normalized = emit.call("mul", {centered, rstd}, {}, "normalized");
    } else {
      normalized = normalize(emit, x, var_mean(emit, x, dims), eps);
    }
  } else {
    Node* mean = channel_view(emit, running_mean, rank, "running_mean");
    normalized = normalize(emit, x, {channel_view(emit, running_var, rank, "running_var"), mean}, eps);
  }
  Node* weight = tensor_arg(call, 1);
  Node* bias = tensor_arg(call, 2);
  if (weight) weight = channel_view(emit, weight, rank, "weight");
  if (bias) bias = channel_view(emit, bias, rank, "bias");
  return {emit.finish(affine(emit, normalized, weight, bias))};
}

// The channels a group_norm of `x` [N, G, ...] normalizes together, seen through a reshape: where
// x is a reshape of y [N, C, *spatial] into [N, G, (C/G) * prod(spatial)] (ONNX's export of
// nn.GroupNorm before opset 18: Reshape, InstanceNormalization, Reshape), y and C/G; else x and
// x's own channels per group.
std::pair<Node*, int64_t> grouped_channels(Node* x, int64_t groups) {
  const ir::SymShape& shape = shape_of(x);
  std::optional<int64_t> channels = shape.at(1).maybe_constant();
  if (!channels || *channels % groups != 0) return {x, 1};
  if (*channels != groups || x->op() != ir::OpKind::call_function || x->target() != "reshape" || shape.size() != 3 ||
      x->args().empty() || !x->args()[0].is_node())
    return {x, *channels / groups};
  Node* y = x->args()[0].node();
  const ir::SymShape& source = shape_of(y);
  std::optional<int64_t> source_channels = source.size() >= 3 ? source[1].maybe_constant() : std::nullopt;
  if (!source_channels || *source_channels % groups != 0 || !(source[0] == shape[0])) return {x, 1};
  SymInt points = SymInt(*source_channels / groups);
  for (size_t d = 2; d < source.size(); ++d) points = points * source[d];
  if (!(points == shape[2])) return {x, 1};
  return {y, *source_channels / groups};
}

// The moments of each group of `per_group` channels of y [N, C, *spatial]: each channel's over its
// spatial points (one contiguous row in NCHW; in a channels-last value a column, which the CPU
// target reduces a vector of channels at a time, where a group's values are strided), then each
// group's from its channels', all counts equal: the mean of the means, and the mean of each
// channel's variance plus its mean's squared distance from the group's. [N, G, 1] each.
Moments group_moments(Emitter& emit, Node* y, int64_t per_group) {
  const ir::SymShape& shape = shape_of(y);
  int64_t channels = shape.at(1).constant();
  SymInt points = SymInt(1);
  for (size_t d = 2; d < shape.size(); ++d) points = points * shape[d];
  Node* rows = shape.size() == 3 ? y
                                 : emit.call("reshape", {y, Argument::sym_ints({shape[0], SymInt(channels), points})}, {},
                                             "channel_rows");
  Moments channel = var_mean(emit, rows, {2});
  const std::vector<SymInt> grouped = {shape[0], SymInt(channels / per_group), SymInt(per_group)};
  Node* means = emit.call("reshape", {channel.mean, Argument::sym_ints(grouped)}, {}, "channel_means");
  Node* vars = emit.call("reshape", {channel.var, Argument::sym_ints(grouped)}, {}, "channel_vars");
  Node* mean = emit.call("mean", {means, Argument::ints({2}), true}, {}, "group_mean");
  Node* away = emit.call("sub", {means, mean}, {}, "away");
  Node* spread = emit.call("add", {vars, emit.call("mul", {away, away}, {}, "away_squared")}, {}, "spread");
  return {emit.call("mean", {spread, Argument::ints({2}), true}, {}, "group_var"), mean};
}

std::vector<Node*> group_norm(Emitter& emit, const OpCall& call) {
  Node* input = tensor_arg(call, 0);
  int64_t groups = call.int_arg(1);
  Node* x = emit.compute_input(input);
  const ir::SymShape& shape = shape_of(x);
  int64_t rank = rank_of(x);
  // [N, C, *spatial] -> [N, G, C / G * prod(spatial)], sizes spelled out (no -1), so that
  // symbolic batch sizes need no division.
  SymInt per_group = floordiv(shape.at(1), SymInt(groups));
  for (int64_t dim = 2; dim < rank; ++dim) per_group = per_group * shape[size_t(dim)];
  Node* grouped = emit.call("reshape", {x, Argument::sym_ints({shape.at(0), SymInt(groups), per_group})}, {},
                            "grouped");
  const auto [channels_of, channels_per_group] = grouped_channels(input, groups);
  Moments moments = channels_per_group > 1 ? group_moments(emit, emit.compute_input(channels_of), channels_per_group)
                                           : var_mean(emit, grouped, {2});
  Node* normalized = normalize(emit, grouped, moments, call.float_arg(4));
  Node* ungrouped = emit.call("reshape", {normalized, Argument::sym_ints(shape)}, {}, "ungrouped");
  Node* weight = tensor_arg(call, 2);
  Node* bias = tensor_arg(call, 3);
  if (weight) weight = channel_view(emit, weight, rank, "weight");
  if (bias) bias = channel_view(emit, bias, rank, "bias");
  return {emit.finish(affine(emit, ungrouped, weight, bias))};
}

}  // namespace

void register_normalization_decompositions(DecompositionTable& table) {
  table["layer_norm"] = layer_norm;
  table["rms_norm"] = rms_norm;
  table["batch_norm"] = batch_norm;
  table["group_norm"] = group_norm;
}

}  // namespace kiln::passes::decompositions

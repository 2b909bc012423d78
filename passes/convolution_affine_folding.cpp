// Folding per-channel affine maps into convolutions: see passes/convolution_affine_folding.h.
#include "passes/convolution_affine_folding.h"

#include <cmath>
#include <optional>
#include <type_traits>
#include <vector>

#include "passes/graph_queries.h"

namespace kiln::passes {

namespace {

using ir::Argument;
using ir::Node;

constexpr size_t kConvolutionArgs = 9;  // input, weight, bias, stride, padding, dilation, transposed, output_padding, groups

// The frozen value of a get_attr node.
const Tensor* frozen_value(const ir::Graph& graph, const Node* node) {
  if (!node || node->op() != ir::OpKind::get_attr) return nullptr;
  return graph.parameter(node->target());
}

// A convolution this pass can fold into: not transposed, positional arguments, constant weight and
// bias, one user, a floating dtype with double-precision arithmetic exact enough.
bool foldable_convolution(const ir::Graph& graph, const Node* conv) {
  if (!conv || conv->op() != ir::OpKind::call_function || conv->target() != "convolution" || conv->args().size() != kConvolutionArgs || !conv->kwargs().empty() ||
      conv->users().size() != 1 || !conv->has_single_value() || is_copy_back_output(*conv))
    return false;
  const Argument& transposed = conv->args()[6];
  if (!transposed.is_bool() || transposed.boolean()) return false;
  DType dtype = conv->value().dtype;
  if (dtype != DType::f32 && dtype != DType::f64) return false;
  const Tensor* weight = conv->args()[1].is_node() ? frozen_value(graph, conv->args()[1].node()) : nullptr;
  if (!weight || weight->dtype() != dtype || weight->dim() < 1) return false;
  const Argument& bias = conv->args()[2];
  if (bias.is_none()) return true;
  const Tensor* bias_value = bias.is_node() ? frozen_value(graph, bias.node()) : nullptr;
  return bias_value && bias_value->dtype() == dtype && bias_value->dim() == 1 && bias_value->size(0) == weight->size(0);
}

// The per-output-channel values of `operand` as it broadcasts against the convolution's output
// (rank `rank`, `channels` channels): a number, or a constant varying along the channel dim only.
std::optional<std::vector<double>> per_channel(const ir::Graph& graph, const Argument& operand, int64_t rank,
                                               int64_t channels) {
  if (operand.is_number()) return std::vector<double>(size_t(channels), operand.floating());
  const Tensor* value = operand.is_node() ? frozen_value(graph, operand.node()) : nullptr;
  if (!value || value->dim() > rank) return std::nullopt;
  const int64_t channel_dim = 1 - (rank - value->dim());  // the channel dim's index in `value`
  for (int64_t d = 0; d < value->dim(); ++d)
    if (value->size(d) != 1 && !(d == channel_dim && value->size(d) == channels)) return std::nullopt;
  std::vector<double> values(static_cast<size_t>(channels));
  for (int64_t c = 0; c < channels; ++c) values[size_t(c)] = value->flat_double(value->numel() == 1 ? 0 : c);
  for (double v : values)
    if (!std::isfinite(v)) return std::nullopt;
  return values;
}

Node* frozen_constant(ir::Graph& graph, const std::string& wanted, const Tensor& value) {
  std::string name = wanted;
  for (int suffix = 1; graph.parameter(name); ++suffix) name = wanted + "_" + std::to_string(suffix);
  graph.set_parameter(name, value);
  graph.signature().set_attribute_kind(name, ir::InputKind::constant_tensor);
  return graph.create_get_attr(name);
}

// A get_attr node a fold left unused goes; so does its parameter when an earlier fold made it
// (a chain of folds leaves only the last weight and bias).
void drop_unused_folded(ir::Graph& graph, Node* get_attr) {
  std::string target = get_attr->target();
  graph.erase(get_attr);
  if (!target.starts_with("_folded_") || graph.signature().attribute_kind(target) != ir::InputKind::constant_tensor) return;
  for (const Node* node : graph.nodes())
    if (node->op() == ir::OpKind::get_attr && node->target() == target) return;
  graph.remove_parameter(target);
}

// `weight` (f32 or f64, [channels, ...]) with output channel c's elements multiplied (or divided)
// by scale[c]: each computed in double and rounded once to the weight's dtype. A typed loop over
// the elements: ResNet-50's 25M weights, each scaled twice by its batch norm's folds, took 1.4 s
// through flat_double, on every `kiln run --freeze` (the cache key is the folded graph's).
Tensor scaled_weight(const Tensor& weight, const std::vector<double>& scale, bool multiply) {
  const Tensor w = weight.contiguous();
  Tensor result = Tensor::empty(w.sizes(), w.dtype());
  const int64_t channels = int64_t(scale.size());
  const int64_t per_channel = channels == 0 ? 0 : w.numel() / channels;
  auto scale_all = [&](const auto* in, auto* out) {
    using T = std::remove_cvref_t<decltype(*out)>;
    for (int64_t c = 0; c < channels; ++c) {
      const double s = scale[size_t(c)];
      const int64_t begin = c * per_channel, end = begin + per_channel;
      if (multiply) {
        for (int64_t i = begin; i < end; ++i) out[i] = T(double(in[i]) * s);
      } else {
        for (int64_t i = begin; i < end; ++i) out[i] = T(double(in[i]) / s);
      }
    }
  };
  if (w.dtype() == DType::f32) scale_all(w.data<float>(), result.data<float>());
  else scale_all(w.data<double>(), result.data<double>());
  return result;
}

// Folds `node` (mul, div, add or sub of a foldable convolution and a per-channel constant);
// returns whether it did.
bool fold(ir::Graph& graph, Node* node) {
  const std::string& op = node->target();
  if (op != "mul" && op != "div" && op != "add" && op != "sub") return false;
  if (node->args().size() != 2 || !node->has_single_value()) return false;
  for (const auto& [key, value] : node->kwargs())
    if (!(key == "alpha" && value.is_number() && value.floating() == 1.0)) return false;
  // The convolution: either operand of mul and add, the first of div and sub.
  size_t conv_at = 0;
  if (!(node->args()[0].is_node() && foldable_convolution(graph, node->args()[0].node()))) {
    if ((op != "mul" && op != "add") || !node->args()[1].is_node() || !foldable_convolution(graph, node->args()[1].node()))
      return false;
    conv_at = 1;
  }
  Node* conv = node->args()[conv_at].node();
  const ir::TensorMeta& out = conv->value();
  if (node->value().dtype != out.dtype || !(node->value().shape == out.shape) || out.rank() < 2) return false;
  const Tensor& weight = *frozen_value(graph, conv->args()[1].node());
  const int64_t channels = weight.size(0);
  std::optional<std::vector<double>> k = per_channel(graph, node->args()[1 - conv_at], int64_t(out.rank()), channels);
  if (!k) return false;
  if (op == "div")
    for (double v : *k)
      if (v == 0) return false;

  const bool scales = op == "mul" || op == "div";
  auto scaled = [&](double value, int64_t channel) {
    double s = (*k)[size_t(channel)];
    return op == "mul" ? value * s : value / s;
  };
  const Tensor new_weight = scales ? scaled_weight(weight, *k, op == "mul") : Tensor();
  const Argument& bias = conv->args()[2];
  std::optional<std::vector<double>> new_bias;
  if (!bias.is_none() || !scales) {
    std::vector<double> b(size_t(channels), 0.0);
    if (!bias.is_none()) {
      const Tensor& old = *frozen_value(graph, bias.node());
      for (int64_t c = 0; c < channels; ++c) b[size_t(c)] = old.flat_double(c);
    }
    for (int64_t c = 0; c < channels; ++c) {
      double t = (*k)[size_t(c)];
      b[size_t(c)] = scales ? scaled(b[size_t(c)], c) : op == "add" ? b[size_t(c)] + t : b[size_t(c)] - t;
    }
    new_bias = std::move(b);
  }

  std::vector<Argument> args = conv->args();
  {
    auto guard = graph.inserting_before(node);
    const std::string prefix = "_folded_" + node->name();
    if (scales) args[1] = Argument(frozen_constant(graph, prefix + "_weight", new_weight));
    if (new_bias) args[2] = Argument(frozen_constant(graph, prefix + "_bias", Tensor::from_doubles({channels}, *new_bias, out.dtype)));
    Node* folded = graph.create_call("convolution", std::move(args), {}, graph.unique_name(node->name() + "_convolution"));
    folded->source = conv->source;
    node->replace_all_uses_with(folded);
  }
  Node* old_weight = conv->args()[1].node();
  Node* old_bias = bias.is_none() ? nullptr : bias.node();
  graph.erase(node);
  graph.erase(conv);
  for (Node* replaced : {old_weight, old_bias})
    if (replaced && replaced->users().empty()) drop_unused_folded(graph, replaced);
  return true;
}

}  // namespace

bool fold_affine_into_convolutions(ir::Graph& graph, bool freeze) {
  if (!freeze || !is_functional(graph)) return false;
  // One fold at a time, then a fresh scan: a fold erases nodes a snapshot would still hold, and
  // makes a new convolution that the next op of a chain folds into.
  bool changed = false;
  for (bool folded = true; folded;) {
    folded = false;
    for (Node* node : graph.node_list())
      if (node->op() == ir::OpKind::call_function && fold(graph, node)) {
        folded = changed = true;
        break;
      }
  }
  return changed;
}

}  // namespace kiln::passes

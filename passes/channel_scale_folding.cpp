// Folding a per-input-channel scale into a convolution: see passes/channel_scale_folding.h.
#include "passes/channel_scale_folding.h"

#include <optional>

#include "passes/graph_queries.h"

namespace kiln::passes {

namespace {

using ir::Argument;
using ir::Node;

constexpr size_t kConvolutionArity = 9;  // input, weight, bias, stride, padding, dilation, transposed, output_padding, groups

std::optional<int64_t> constant_numel(const ir::TensorMeta& meta) { return meta.numel().maybe_constant(); }

// Whether `scale` ([1, C, 1, 1] or [C, 1, 1], this dtype) varies along x's channel dim only.
bool is_channel_scale(const Node& scale, const ir::TensorMeta& x) {
  if (!scale.has_single_value() || scale.value().dtype != x.dtype) return false;
  const ir::SymShape& shape = scale.value().shape;
  if (shape.size() != 3 && shape.size() != 4) return false;
  const size_t channel = shape.size() - 3;
  for (size_t d = 0; d < shape.size(); ++d) {
    std::optional<int64_t> size = shape[d].maybe_constant();
    if (!size || *size != (d == channel ? x.shape[1].maybe_constant().value_or(-1) : 1)) return false;
  }
  return true;
}

// The folded convolution replacing `conv`, or nullptr where it does not apply.
Node* fold_scale_into(ir::Graph& graph, Node& conv) {
  if (conv.op() != ir::OpKind::call_function || conv.target() != "convolution" ||
      conv.args().size() != kConvolutionArity || !conv.kwargs().empty() || !conv.has_single_value())
    return nullptr;
  const std::vector<Argument>& args = conv.args();
  Node* product = args[0].is_node() ? args[0].node() : nullptr;
  Node* weight = args[1].is_node() ? args[1].node() : nullptr;
  if (!product || !weight || product->op() != ir::OpKind::call_function || product->target() != "mul" ||
      product->args().size() != 2 || !product->kwargs().empty() || product->users().size() != 1 ||
      is_copy_back_output(*product))
    return nullptr;
  if (!args[6].is_bool() || args[6].boolean() || !args[8].is_int() || args[8].integer() != 1 || !args[4].is_list())
    return nullptr;
  for (int64_t pad : args[4].int_list())
    if (pad != 0) return nullptr;
  const ir::TensorMeta& out = product->value();
  const DType dtype = out.dtype;
  if ((dtype != DType::f32 && dtype != DType::f64) || out.rank() != 4 || out.shape[0].maybe_constant() != 1 ||
      weight->value().dtype != dtype)
    return nullptr;
  // x is the operand of the product's own shape, s the other.
  for (int first = 0; first < 2; ++first) {
    const Argument& x_arg = product->args()[size_t(first)];
    const Argument& s_arg = product->args()[size_t(1 - first)];
    if (!x_arg.is_node() || !s_arg.is_node()) return nullptr;
    Node* x = x_arg.node();
    Node* scale = s_arg.node();
    if (!x->has_single_value() || x->value().shape != out.shape || x->value().dtype != dtype ||
        !is_channel_scale(*scale, out))
      continue;
    std::optional<int64_t> weights = constant_numel(weight->value()), inputs = constant_numel(out);
    if (!weights || !inputs || *weights * 4 > *inputs) return nullptr;
    auto guard = graph.inserting_before(&conv);
    Node* per_channel = scale;
    if (scale->value().rank() == 3)
      per_channel = graph.create_call("unsqueeze", {scale, Argument(int64_t(0))});
    Node* scaled = graph.create_call("mul", {weight, per_channel});
    scaled->source = product->source;
    std::vector<Argument> folded_args = args;
    folded_args[0] = Argument(x);
    folded_args[1] = Argument(scaled);
    Node* folded = graph.create_call("convolution", std::move(folded_args));
    folded->source = conv.source;
    return folded;
  }
  return nullptr;
}

}  // namespace

bool fold_channel_scales_into_convolutions(ir::Graph& graph) {
  bool changed = false;
  for (Node* conv : graph.node_list()) {
    if (is_copy_back_output(*conv)) continue;
    Node* folded = fold_scale_into(graph, *conv);
    if (!folded) continue;
    Node* product = conv->args()[0].node();
    conv->replace_all_uses_with(folded);
    graph.erase(conv);
    graph.erase(product);
    changed = true;
  }
  return changed;
}

}  // namespace kiln::passes

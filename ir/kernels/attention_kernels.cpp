// Reference kernel of scaled_dot_product_attention, from its definition:
//   out = softmax(q @ k^T * scale + mask) @ v
// with q [..., L, E], k [..., S, E], v [..., S, Ev] (batch dims broadcast), scale defaulting
// to 1 / sqrt(E), a bool mask meaning True = attend (False adds -inf), a float mask added,
// is_causal keeping key j <= query i. Like PyTorch's math path (_safe_softmax), a row whose
// scores are all -inf gives zeros rather than NaN. dropout_p must be 0 in the reference.
#include <cmath>
#include <limits>

#include "ir/kernels/kernel_support.h"

namespace kiln::ir::kernels {
namespace {

Tensor attention(const KernelCall& call) {
  const Tensor &query = call.tensor(0), &key = call.tensor(1), &value = call.tensor(2);
  if (query.dim() < 2 || key.dim() < 2 || value.dim() < 2)
    call.fail("expected query, key and value to have at least 2 dims ([..., L, E])");
  if (query.dtype() != key.dtype() || query.dtype() != value.dtype() || !is_floating(query.dtype()))
    call.fail("expected query, key and value of one floating dtype, got ", dtype_name(query.dtype()), ", ",
              dtype_name(key.dtype()), " and ", dtype_name(value.dtype()));
  if (call.float_arg(4) != 0.0)
    call.fail("scaled_dot_product_attention: the reference interpreter needs dropout_p = 0, got ", call.float_arg(4));
  bool causal = call.bool_arg(5);
  int64_t length = query.size(-2), embed = query.size(-1), source = key.size(-2), value_embed = value.size(-1);
  if (key.size(-1) != embed) call.fail("query and key must have the same embedding size (last dim)");
  if (value.size(-2) != source) call.fail("key and value must have the same sequence length (dim -2)");
  Sizes batch = broadcast_shapes(Sizes(query.sizes().begin(), query.sizes().end() - 2),
                                 Sizes(key.sizes().begin(), key.sizes().end() - 2));
  batch = broadcast_shapes(batch, Sizes(value.sizes().begin(), value.sizes().end() - 2));
  auto with = [&batch](int64_t a, int64_t b) {
    Sizes shape = batch;
    shape.insert(shape.end(), {a, b});
    return shape;
  };
  std::vector<double> q = to_doubles(query.expand(with(length, embed)));
  std::vector<double> k = to_doubles(key.expand(with(source, embed)));
  std::vector<double> v = to_doubles(value.expand(with(source, value_embed)));
  std::vector<double> mask;  // additive, [batch..., L, S]
  if (!call.is_none(3)) {
    if (causal) call.fail("scaled_dot_product_attention: an explicit attn_mask should not be set when is_causal=True");
    const Tensor& attn_mask = call.tensor(3);
    Sizes weights_shape = with(length, source);
    if (broadcast_shapes(attn_mask.sizes(), weights_shape) != weights_shape)
      call.fail("attn_mask of shape ", sizes_to_string(attn_mask.sizes()),
                " cannot be broadcast to the attention weights' shape ", sizes_to_string(weights_shape));
    mask = to_doubles(attn_mask.expand(weights_shape));
    if (attn_mask.dtype() == DType::boolean)
      for (double& entry : mask) entry = entry != 0.0 ? 0.0 : -std::numeric_limits<double>::infinity();
  }
  std::optional<double> given_scale = call.optional_float(6);
  double scale = given_scale ? *given_scale : 1.0 / std::sqrt(double(embed));

  int64_t batches = numel_of(batch);
  std::vector<double> out(static_cast<size_t>(batches * length * value_embed), 0.0);
  std::vector<double> scores(static_cast<size_t>(source));
  for (int64_t b = 0; b < batches; ++b)
    for (int64_t i = 0; i < length; ++i) {
      double max = -std::numeric_limits<double>::infinity();
      for (int64_t j = 0; j < source; ++j) {
        double dot = 0;
        for (int64_t e = 0; e < embed; ++e) dot += q[size_t((b * length + i) * embed + e)] * k[size_t((b * source + j) * embed + e)];
        double score = dot * scale;
        if (!mask.empty()) score += mask[size_t((b * length + i) * source + j)];
        if (causal && j > i) score = -std::numeric_limits<double>::infinity();
        scores[size_t(j)] = score;
        max = std::isnan(score) || std::isnan(max) ? std::nan("") : std::max(max, score);
      }
      if (max == -std::numeric_limits<double>::infinity()) continue;  // fully masked row: zeros
      double sum = 0;
      for (double& score : scores) sum += score = std::exp(score - max);
      for (int64_t j = 0; j < source; ++j)
        for (int64_t e = 0; e < value_embed; ++e)
          out[size_t((b * length + i) * value_embed + e)] += scores[size_t(j)] / sum * v[size_t((b * source + j) * value_embed + e)];
    }
  return from_doubles(with(length, value_embed), query.dtype(), out);
}

}  // namespace

void register_attention_kernels(KernelTable& table) { table["scaled_dot_product_attention"] = single(attention); }

}  // namespace kiln::ir::kernels

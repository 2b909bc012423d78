// torch.nn.MultiheadAttention over kiln::Var (attention.h).
#include "kiln/nn/attention.h"

#include <cmath>
#include <limits>

#include "ir/graph.h"
#include "kiln/nn/functional.h"
#include "kiln/nn/init.h"
#include "kiln/error.h"

namespace kiln::nn {

namespace {

constexpr double kMinusInfinity = -std::numeric_limits<double>::infinity();

// A mask to add to attention scores: a float mask as is; a bool one (true = not allowed)
// as -inf where true and 0 elsewhere.
Var additive_mask(const Var& mask) { return mask.dtype() == DType::boolean ? where(mask, kMinusInfinity, 0.0) : mask; }

}  // namespace

MultiheadAttention::MultiheadAttention(int64_t embed_dim, int64_t num_heads, double dropout, bool bias,
                                       bool batch_first)
    : Module("MultiheadAttention"),
      embed_dim_(embed_dim),
      num_heads_(num_heads),
      dropout_(dropout),
      batch_first_(batch_first) {
  if (num_heads <= 0 || embed_dim % num_heads != 0) {
    fail("MultiheadAttention: embed_dim (", embed_dim, ") must be divisible by num_heads (", num_heads, ")");
  }
  Tensor in_proj_weight = Tensor::empty({3 * embed_dim, embed_dim}, DType::f32);
  init::xavier_uniform_(in_proj_weight);
  register_parameter("in_proj_weight", in_proj_weight);
  if (bias) register_parameter("in_proj_bias", Tensor::zeros({3 * embed_dim}, DType::f32));
  out_proj_ = register_module("out_proj", std::make_shared<Linear>(embed_dim, embed_dim, bias));
  if (bias) init::zeros_(out_proj_->parameter("bias"));
}

std::pair<Var, Var> MultiheadAttention::operator()(const Var& query, const Var& key, const Var& value,
                                                   const MultiheadAttentionOptions& options, SourceLocation loc) {
  call_options_ = options;
  std::vector<Var> outputs;
  try {
    outputs = Module::operator()({query, key, value, options.key_padding_mask, options.attn_mask}, loc);
  } catch (...) {
    call_options_ = {};
    throw;
  }
  call_options_ = {};
  return {outputs.at(0), outputs.size() > 1 ? outputs[1] : Var()};
}

Var MultiheadAttention::combined_mask(const Var& key_padding_mask, const Var& attn_mask, bool is_causal,
                                      int64_t batch, int64_t target_length, int64_t source_length) const {
  SourceLocation loc = SourceLocation::current();
  Var mask;
  if (attn_mask.defined()) {
    Var additive = additive_mask(attn_mask);
    if (attn_mask.dim() == 2) {
      mask = additive.view({1, 1, target_length, source_length});
    } else if (attn_mask.dim() == 3) {
      mask = additive.view({batch, num_heads_, target_length, source_length});
    } else {
      fail_in_forward("attn_mask must be 2-d [L, S] or 3-d [B * num_heads, L, S], got " + attn_mask.type_string(), loc);
    }
  } else if (is_causal) {
    // True above the diagonal: key position j > query position i.
    Var above = arange(source_length).unsqueeze(0) > arange(target_length).unsqueeze(1);
    mask = additive_mask(above).view({1, 1, target_length, source_length});
  }
  if (key_padding_mask.defined()) {
    if (key_padding_mask.dim() != 2) {
      fail_in_forward("key_padding_mask must be [B, S], got " + key_padding_mask.type_string(), loc);
    }
    Var padding = additive_mask(key_padding_mask).view({batch, 1, 1, source_length});
    mask = mask.defined() ? mask + padding : padding;
  }
  return mask;
}

std::vector<Var> MultiheadAttention::forward_all(const std::vector<Var>& inputs) {
  SourceLocation loc = SourceLocation::current();
  if (inputs.size() < 3 || inputs.size() > 5) {
    fail_in_forward("takes query, key, value and optionally key_padding_mask and attn_mask, got " +
                        std::to_string(inputs.size()) + " inputs",
                    loc);
  }
  Var query = inputs[0], key = inputs[1], value = inputs[2];
  for (const Var& input : {query, key, value}) {
    if (input.dim() != 3 || input.meta().shape[2] != ir::SymInt(embed_dim_)) {
      fail_in_forward("expected query, key and value of shape " +
                          std::string(batch_first_ ? "[B, L, " : "[L, B, ") + std::to_string(embed_dim_) +
                          "], got " + input.type_string(),
                      loc);
    }
  }
  if (!batch_first_) {
    query = query.transpose(0, 1);
    key = key.transpose(0, 1);
    value = value.transpose(0, 1);
  }
  int64_t batch = query.size(0), target_length = query.size(1), source_length = key.size(1);
  int64_t head_dim = embed_dim_ / num_heads_;
  Var weight = attribute("in_proj_weight");
  Var bias = optional_attribute("in_proj_bias");
  // Projection i of the packed in_proj (0 query, 1 key, 2 value), split into heads: [B, H, length, D].
  auto project = [&](const Var& input, int64_t i, int64_t length) {
    Var part_bias = bias.defined() ? bias.slice(0, i * embed_dim_, (i + 1) * embed_dim_) : Var();
    return functional::linear(input, weight.slice(0, i * embed_dim_, (i + 1) * embed_dim_), part_bias)
        .view({batch, length, num_heads_, head_dim})
        .transpose(1, 2);
  };
  Var q = project(query, 0, target_length);
  Var k = project(key, 1, source_length);
  Var v = project(value, 2, source_length);
  Var key_padding_mask = inputs.size() > 3 ? inputs[3] : Var();
  Var attn_mask = inputs.size() > 4 ? inputs[4] : Var();
  Var mask = combined_mask(key_padding_mask, attn_mask, call_options_.is_causal, batch, target_length, source_length);

  bool explicit_weights = call_options_.need_weights || (is_training() && dropout_ > 0);
  Var attended, weights;
  if (explicit_weights) {
    Var scores = q.matmul(k.transpose(-2, -1)) * (1 / std::sqrt(double(head_dim)));
    if (mask.defined()) scores = scores + mask;
    weights = scores.softmax(-1);
    attended = functional::dropout(weights, dropout_, is_training()).matmul(v);
  } else {
    attended = functional::scaled_dot_product_attention(q, k, v, mask);
  }
  Var output = (*out_proj_)(attended.transpose(1, 2).reshape({batch, target_length, embed_dim_}));
  if (!batch_first_) output = output.transpose(0, 1);
  if (!call_options_.need_weights) return {output};
  return {output, call_options_.average_attn_weights ? weights.mean({1}) : weights};
}

}  // namespace kiln::nn

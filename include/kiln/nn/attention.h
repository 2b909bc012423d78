// torch.nn.MultiheadAttention with PyTorch's parameters (in_proj_weight [3E, E] xavier-uniform,
// in_proj_bias [3E] zeros, out_proj a Linear with a zero bias) and call:
//   auto [output, weights] = attention(query, key, value, {.attn_mask = mask});
// query [B, L, E] when batch_first, else [L, B, E] (key and value likewise with S).
// Masks follow PyTorch's MultiheadAttention: a bool attn_mask ([L, S] or [B * num_heads, L, S])
// or key_padding_mask ([B, S]) is true where attention is NOT allowed; a float mask is added
// to the scores. is_causal without an attn_mask applies the causal mask itself.
// weights (when need_weights) are [B, L, S], averaged over heads unless average_attn_weights
// is false ([B, num_heads, L, S]); without need_weights the call records
// scaled_dot_product_attention and weights is an undefined Var.
#pragma once

#include <cstdint>
#include <memory>
#include <utility>

#include "kiln/nn/linear.h"
#include "kiln/nn/module.h"

namespace kiln::nn {

struct MultiheadAttentionOptions {
  Var key_padding_mask;
  bool need_weights = true;
  Var attn_mask;
  bool average_attn_weights = true;
  bool is_causal = false;
};

class MultiheadAttention : public Module {
 public:
  MultiheadAttention(int64_t embed_dim, int64_t num_heads, double dropout = 0, bool bias = true,
                     bool batch_first = false);

  using Module::operator();
  // (output, attention weights); see above.
  std::pair<Var, Var> operator()(const Var& query, const Var& key, const Var& value,
                                 const MultiheadAttentionOptions& options = {},
                                 SourceLocation loc = SourceLocation::current());
  // Inputs {query, key, value[, key_padding_mask[, attn_mask]]} with the options of the call
  // (need_weights etc. default when called through Module::operator()); outputs {output[, weights]}.
  std::vector<Var> forward_all(const std::vector<Var>& inputs) override;

 private:
  // Float mask [B or 1, H or 1, L, S] to add to the scores, or undefined when none applies.
  Var combined_mask(const Var& key_padding_mask, const Var& attn_mask, bool is_causal, int64_t batch,
                    int64_t target_length, int64_t source_length) const;

  int64_t embed_dim_;
  int64_t num_heads_;
  double dropout_;
  bool batch_first_;
  std::shared_ptr<Linear> out_proj_;
  MultiheadAttentionOptions call_options_;  // of the call in progress
};

}  // namespace kiln::nn

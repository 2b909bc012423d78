// torch.nn.Embedding: a lookup table weight [num_embeddings, embedding_dim], N(0, 1) as
// PyTorch initializes it, with the padding_idx row (when given) zeroed.
#pragma once

#include <cstdint>
#include <optional>

#include "kiln/nn/module.h"

namespace kiln::nn {

class Embedding : public Module {
 public:
  Embedding(int64_t num_embeddings, int64_t embedding_dim, std::optional<int64_t> padding_idx = std::nullopt);
  // Integer indices of any shape -> [..., embedding_dim].
  Var forward(const Var& indices) override;

 private:
  int64_t padding_idx_ = -1;  // -1: none (normalized to non-negative otherwise)
};

}  // namespace kiln::nn
